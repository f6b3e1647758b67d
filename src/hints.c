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

/* The functions and procedures of sharded_id (src/sql/api/). */
static const char *const shid_functions[] = {
	"add_table", "adopt_table", "check_shard", "citus_check_moves",
	"citus_distribute_shards", "citus_grant_windows", "citus_id_node",
	"citus_open_shards", "citus_shard_node", "citus_window_high_water",
	"configure", "create_shard", "create_shards", "created_at",
	"current_settings", "decode", "drop_shard", "encode", "enter_shard",
	"floors", "from_shortcode", "generator_info", "generator_stats",
	"high_water", "layouts", "lower_floor", "max_id_at", "min_id_at",
	"next_id", "next_id_in_layout", "next_ids", "next_ids_in_layout",
	"provision_shards", "raise_floor", "raise_floors", "reset_ceiling",
	"reset_stats", "retire_shard", "schema_ddl", "schema_inventory",
	"seq_id", "shard_for", "shard_id", "shard_max_id", "shard_schema",
	"stripe_id", "to_shortcode",
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
	edata->hint = pstrdup("This function belongs to the extension sharded_id_router: "
						  "run CREATE EXTENSION sharded_id_router in this database.");
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
	name = shid_match_name(rest, shid_functions, lengthof(shid_functions), '\0');
	if (name == NULL)
		name = shid_match_name(rest, shid_router_functions, lengthof(shid_router_functions), '\0');
	if (name == NULL)
		return;
	if (shid_match_name(name, shid_provisioning_functions, lengthof(shid_provisioning_functions), '\0'))
		edata->hint = pstrdup("It comes with the provisioning role: a superuser can grant it, "
							  "GRANT sharded_id_provisioner TO <role>;");
	else
		edata->hint = psprintf("An administrator can grant it: GRANT EXECUTE ON %s sharded_id.%s(...) TO <role>; "
							   "\\df sharded_id.%s lists its signatures.",
							   kind, name, name);
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
