/*-------------------------------------------------------------------------
 *
 * src/hints.c
 *	  Hints that give core's errors about the extension's functions a way
 *	  out, added by an emit_log_hook (chained: the hook it replaced runs
 *	  first).  It owns two:
 *	  - "function sharded_id.move_shard(...) does not exist" (42883) for a
 *	    function of sharded_id_router, in a database that has sharded_id
 *	    but not the router: a hint to CREATE EXTENSION sharded_id_router
 *	    (stubs in sharded_id would clash with the router's functions);
 *	  - "permission denied for function next_id" (42501), whose message
 *	    names only the function: a hint naming the GRANT to run and
 *	    \df to list its signatures (for a provisioning function, the
 *	    grant of sharded_id_provisioner), when core gave no hint.
 *
 * The hook runs while the error is reported, perhaps in an aborted
 * transaction: it reads no catalog and only matches the message against
 * the names below, which are the functions that src/sql/router/ and
 * src/sql/api/ create (keep them in step: sql/hints.sql calls each of the
 * router's), and allocates in the current memory context, the error's.  The errcode is
 * tested first, so other errors cost a comparison.  Core calls the hook
 * only for reports that go to the server's log too (log_min_messages at
 * ERROR or below, as by default), and matches only untranslated messages.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "hints.h"
#include "utils/elog.h"

/* The functions and procedures of sharded_id_router (src/sql/router/). */
static const char *const shid_router_functions[] = {
	"apply_shard_map", "create_ops_table", "move_shard", "node_server",
	"place_shard", "rebalance", "rebalance_plan", "recover_moves",
	"route", "route_id",
};

/*
 * The functions of sharded_id (src/sql/api/) that an administrator grants
 * to applications' roles: not those that are superusers' alone, nor the
 * nodes' own (citus_grant_windows, citus_window_high_water), nor the
 * router's (its extension is a superuser's).
 */
static const char *const shid_functions[] = {
	"created_at", "decode", "encode", "enter_shard", "floors",
	"from_shortcode", "generator_info", "generator_stats", "high_water",
	"layouts", "max_id_at", "min_id_at", "next_id", "next_id_in_layout",
	"next_ids", "next_ids_in_layout", "seq_id", "shard_for", "shard_id",
	"shard_max_id", "shard_schema", "stripe_id", "to_shortcode",
};

/*
 * Those that the role sharded_id_provisioner is granted (src/sql/api/), but
 * floors() and high_water(), which readers may be granted alone.
 */
static const char *const shid_provisioning_functions[] = {
	"add_table", "adopt_table", "create_shard", "create_shards", "drop_shard",
	"provision_shards", "raise_floor", "retire_shard", "schema_ddl",
	"schema_inventory",
};

static emit_log_hook_type shid_prev_emit_log_hook = NULL;

/*
 * The name among names[] that s starts with, followed by the character
 * end (or, for end '\0', ending there); NULL if none.
 */
static const char *
shid_match_name(const char *s, const char *const *names, int n, char end)
{
	for (int i = 0; i < n; i++)
	{
		size_t		len = strlen(names[i]);

		if (strncmp(s, names[i], len) == 0 && s[len] == end)
			return names[i];
	}
	return NULL;
}

/* s past prefix, or NULL if s does not start with it. */
static const char *
shid_skip(const char *s, const char *prefix)
{
	size_t		len = strlen(prefix);

	return strncmp(s, prefix, len) == 0 ? s + len : NULL;
}

/* 42883 for a function of the router called where the router is not. */
static void
shid_hint_router_missing(ErrorData *edata)
{
	const char *rest = shid_skip(edata->message, "function sharded_id.");

	if (rest == NULL)
		rest = shid_skip(edata->message, "procedure sharded_id.");
	if (rest == NULL ||
		shid_match_name(rest, shid_router_functions, lengthof(shid_router_functions), '(') == NULL)
		return;
	/* Core's hint stays: in the router's database, the call may be the mistake. */
	edata->hint = psprintf("%s%sIf sharded_id_router is not installed in this database: "
						   "sharded_id.%.*s belongs to it; run CREATE EXTENSION sharded_id_router.",
						   edata->hint ? edata->hint : "", edata->hint ? " " : "",
						   (int) strcspn(rest, "("), rest);
}

/* 42501 on executing a function of sharded_id or the router: the grant to ask for. */
static void
shid_hint_grant(ErrorData *edata)
{
	const char *kind = "FUNCTION";
	const char *rest = shid_skip(edata->message, "permission denied for function ");
	const char *name;

	if (rest == NULL && (rest = shid_skip(edata->message, "permission denied for procedure ")) != NULL)
		kind = "PROCEDURE";
	if (rest == NULL || edata->hint != NULL)
		return;
	/* Core names the function without its schema: say which one is meant. */
	if ((name = shid_match_name(rest, shid_provisioning_functions,
								lengthof(shid_provisioning_functions), '\0')) != NULL)
		edata->hint = psprintf("If it is sharded_id.%s: it comes with the provisioning role, "
							   "which a superuser grants: GRANT sharded_id_provisioner TO <role>;", name);
	else if ((name = shid_match_name(rest, shid_functions, lengthof(shid_functions), '\0')) != NULL)
		edata->hint = psprintf("If it is sharded_id.%s: an administrator can grant it, "
							   "GRANT EXECUTE ON %s sharded_id.%s(...) TO <role>; "
							   "\\df sharded_id.%s lists its signatures.",
							   name, kind, name, name);
}

static void
shid_emit_log_hook(ErrorData *edata)
{
	if (shid_prev_emit_log_hook)
		shid_prev_emit_log_hook(edata);
	if (edata->elevel != ERROR || edata->message == NULL)
		return;
	if (edata->sqlerrcode == ERRCODE_UNDEFINED_FUNCTION)
		shid_hint_router_missing(edata);
	else if (edata->sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE)
		shid_hint_grant(edata);
}

/* Called once, from _PG_init. */
void
shid_hints_init(void)
{
	shid_prev_emit_log_hook = emit_log_hook;
	emit_log_hook = shid_emit_log_hook;
}
