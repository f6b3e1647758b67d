/*-------------------------------------------------------------------------
 *
 * src/privs.c
 *	  Who may change a shard, and the catalog writes made for them.
 *
 * A superuser may change any shard.  A role that is not one may change a
 * shard only as a member of the role sharded_id_provisioner (which the
 * extension creates and grants the provisioning API), and only a shard
 * whose schema it owns (has the privileges of the schema's owner, as
 * ALTER SCHEMA asks): it retires, drops and raises the floor of the shards
 * that this database's catalog, sharded_id.shards, lists in a schema of
 * its own; it creates shards in schemas of its own or new ones; and it
 * takes back only the shards that it, or a role whose privileges it has,
 * retired in this database, never one a superuser retired or one the
 * server gave away with no record here.
 *
 * The catalogs are written by their owner only, so that no grant on them
 * can undo a retirement.  The SQL functions keep running with the caller's
 * rights (the schemas and tables they make belong to the caller), and each
 * catalog write goes through one of the functions below, which checks the
 * caller (GetUserId(): a SECURITY DEFINER function could not see it) and
 * then writes as the catalog's owner inside a security-restricted
 * operation, with search_path pinned, as core does for VACUUM and
 * CREATE INDEX.
 *
 * Roles and the server's shard states are shared by the databases of a
 * server, catalogs are not.  So a role that is not a superuser changes a
 * shard only if the server keeps no state for it or its state names the
 * current database (MyDatabaseId), the one whose transaction last created,
 * retired or took it back (floors.c): shid_require_state_here, after the
 * catalog checks of a retirement, a floor raise and a creation or
 * take-back, and owner.c again under the lock of the change.  Otherwise
 * 42501, naming the database, whatever this database's catalog says: a
 * provisioner of database b cannot register shard 5, which database a
 * mints for, and then retire it, take it or raise its floor.  A state of a
 * dropped database, or of no known database (kept by an earlier version),
 * is for superusers, until one of them changes the shard.
 *
 * The C primitives that change the server's state check the caller too, at
 * their top: _retire_shard and raise_floor as above, and _own_shard, for a
 * role that is not a superuser, only after _catalog_own checked the same
 * take-back in the same transaction, as the same role.  The internal
 * functions that neither PUBLIC nor sharded_id_provisioner is granted (the
 * moves, the router's administration, remote execution) are for superusers
 * only, whatever the grants: the C ones call shid_require_superuser_internal
 * at their top, the SQL ones _superuser_only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "compat.h"
#include "executor/spi.h"
#include "floors.h"
#include "fmgr.h"
#include "layout.h"
#include "miscadmin.h"
#include "owner_read.h"
#include "parser/parse_func.h"
#include "privs.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* A take-back that _catalog_own allowed: _own_shard may follow. */
typedef struct ShidTakeBack
{
	int32		shard;
	Oid			user;
	char		layout[NAMEDATALEN];
} ShidTakeBack;

static ShidTakeBack *take_backs = NULL;
static int	n_take_backs = 0;
static int	max_take_backs = 0;
static LocalTransactionId take_backs_lxid = InvalidLocalTransactionId;

/* The owner of the shard catalog: the extension's owner. */
static Oid
shid_catalog_owner(void)
{
	Oid			nsp = get_namespace_oid("sharded_id", false);
	Oid			rel = get_relname_relid("shards", nsp);
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(rel))
		elog(ERROR, "relation sharded_id.shards does not exist");
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rel));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", rel);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Run as the catalog's owner, in a security-restricted operation, with
 * search_path pinned, until shid_end_owner (owner_read.h).  An error in
 * between is undone by the (sub)transaction's abort, which restores both.
 */
static void
shid_as_owner_begin(ShidOwnerContext *ctx)
{
	shid_pin_search_path(ctx);
	shid_become_owner(shid_catalog_owner(), ctx);
}

/* Run a statement with parameters under SPI; returns SPI_processed. */
static uint64
shid_spi(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls, int expected)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	return SPI_processed;
}

/* A role's name for a message, or its OID if it is gone. */
static const char *
shid_role_name(Oid role)
{
	char	   *name = GetUserNameFromId(role, true);

	return name ? name : psprintf("%u", role);
}

/*
 * May the current role claim a shard for this database at its first mint
 * (owner.c, shid_owner_claim)?  A superuser, a member of the provisioner
 * role, or a role that may call counter mode's next_id(integer), which
 * PUBLIC may not: a role an administrator let mint.  Not any role that can
 * call seed mode's next_id with a sequence of its own (a temporary one
 * will do), which could otherwise claim every shard number of the server
 * and stop every other database's provisioner.  Reads the catalogs.
 */
bool
shid_may_claim(void)
{
	Oid			user = GetUserId();
	Oid			provisioner;
	Oid			argtypes[1] = {INT4OID};
	Oid			next_id;

	if (superuser())
		return true;
	provisioner = get_role_oid(SHID_PROVISIONER_ROLE, true);
	if (OidIsValid(provisioner) && has_privs_of_role(user, provisioner))
		return true;
	next_id = LookupFuncName(list_make2(makeString("sharded_id"), makeString("next_id")),
							 1, argtypes, true);
	return OidIsValid(next_id) && shid_proc_aclcheck(next_id, user) == ACLCHECK_OK;
}

/* A role that is not a superuser must have the provisioner role's rights. */
static void
shid_require_provisioner(Oid user, int32 shard, const char *action)
{
	Oid			provisioner = get_role_oid(SHID_PROVISIONER_ROLE, true);

	if (!OidIsValid(provisioner) || !has_privs_of_role(user, provisioner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s shard %d", action, shard),
				 errdetail("Only superusers and members of role \"%s\" change shards.",
						   SHID_PROVISIONER_ROLE)));
}

/*
 * Refuse (42501) a state that belongs to another database than this one,
 * naming it: the error of shid_require_state_here and of owner.c's check
 * under the floors lock.  action completes "permission denied to ...
 * shard n".  Reads pg_database: the caller holds no LWLock.
 */
void
shid_refuse_state_elsewhere(const ShidShardState *state, const char *action)
{
	const ShidLayout *layout = shid_layout_by_key(state->key.layout_key);
	const char *lname = layout ? layout->name : "?";
	char	   *dbname = OidIsValid(state->database) ?
		get_database_name(state->database) : NULL;

	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s shard %d", action, state->key.shard),
			 dbname && shid_state_claim(state) ?
			 errdetail("This server's state of shard %d of layout \"%s\" belongs to database \"%s\", which mints the shard's ids with no shard catalog entry for it.",
					   state->key.shard, lname, dbname) :
			 dbname ? errdetail("This server's state of shard %d of layout \"%s\" belongs to database \"%s\", where it was last created, retired or taken back.",
								state->key.shard, lname, dbname) :
			 OidIsValid(state->database) ?
			 errdetail("This server's state of shard %d of layout \"%s\" belongs to a database that no longer exists (OID %u).",
					   state->key.shard, lname, state->database) :
			 errdetail("This server's state of shard %d of layout \"%s\" was kept by an earlier version of sharded_id, which did not record its database.",
					   state->key.shard, lname),
			 errhint("A role that is not a superuser changes only the shards that this database created, retired or took back; a superuser may move a shard between the databases of a server.")));
}

/*
 * Refuse (42501) a caller that is not a superuser if this server keeps a
 * state of the shard (floors.c) that belongs to another database: one
 * whose transaction last created, retired or took back the shard, or
 * raised the first floor of a shard with no state.  Roles and the server's
 * states are shared by the databases of a server, catalogs are not: so no
 * database's catalog lets its provisioner stop, take or move the floor of
 * another database's shard.  A shard with no state is free to any
 * database; its first mint gives it one that names the minting database
 * (owner.c, shid_owner_claim).  Nothing to check where sharded_id is not
 * preloaded.
 *
 * Locks: the floors lock, shared, while it copies the state.
 */
void
shid_require_state_here(int32 shard, const char *layout_name, const char *action)
{
	const ShidLayout *layout;
	ShidShardKey key;
	ShidShardState state;

	if (superuser() || shid_floors_shared == NULL)
		return;
	layout = shid_layout_by_name(layout_name);
	if (layout == NULL)
		return;					/* refused later, as an unknown layout */
	memset(&key, 0, sizeof(key));
	key.layout_key = shid_layout_key(layout);
	key.shard = shard;
	if (shid_shard_state(&key, &state) && state.database != MyDatabaseId)
		shid_refuse_state_elsewhere(&state, action);
}

/*
 * Refuse (42501) a caller that is not a superuser, unless it is a member of
 * the provisioner role and owns the schema that this database's catalog
 * names for the shard of that layout.  action completes "permission denied
 * to ... shard n".  Reads the catalog as its owner.
 */
void
shid_require_shard_owner(int32 shard, const char *layout, const char *action)
{
	Oid			user = GetUserId();
	ShidOwnerContext as;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	char	   *schema = NULL;
	bool		found;
	bool		owner_null = true;
	Oid			nspowner = InvalidOid;

	if (superuser_arg(user))
		return;
	shid_require_provisioner(user, shard, action);

	values[0] = Int32GetDatum(shard);
	values[1] = CStringGetTextDatum(layout);
	shid_as_owner_begin(&as);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	found = shid_spi("SELECT s.schema_name::text, n.nspowner FROM sharded_id.shards s"
					 " LEFT JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) s.schema_name"
					 " WHERE s.shard_id OPERATOR(pg_catalog.=) $1 AND s.layout OPERATOR(pg_catalog.=) $2",
					 2, types, values, NULL, SPI_OK_SELECT) > 0;
	if (found)
	{
		Datum		d;

		schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &owner_null);
		if (!owner_null)
			nspowner = DatumGetObjectId(d);
		schema = MemoryContextStrdup(CurTransactionContext, schema);
	}
	SPI_finish();
	shid_end_owner(&as);

	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s shard %d", action, shard),
				 errdetail("Shard %d of layout \"%s\" is not in this database's catalog, so it has no schema of yours.",
						   shard, layout),
				 errhint("A role that is not a superuser changes only the shards whose schema it owns.")));
	if (owner_null)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s shard %d", action, shard),
				 errdetail("The catalog names schema \"%s\" for shard %d, which does not exist.", schema, shard),
				 errhint("A role that is not a superuser changes only the shards whose schema it owns.")));
	if (!has_privs_of_role(user, nspowner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to %s shard %d", action, shard),
				 errdetail("Schema \"%s\" of shard %d belongs to role \"%s\".", schema, shard,
						   shid_role_name(nspowner)),
				 errhint("A role that is not a superuser changes only the shards whose schema it owns.")));
	shid_require_state_here(shard, layout, action);
}

/* This database's record of a shard's retirement, as take_back reads it. */
typedef struct ShidRetirement
{
	bool		recorded;		/* retired_shards has a row for the shard */
	char	   *layout;			/* its layout */
	char	   *retired_by;		/* who retired it; NULL if unknown */
	bool		by_exists;		/* retired_by names a role that exists */
	bool		by_super;		/* ... which is a superuser */
	Oid			by_oid;			/* ... and has this oid */
} ShidRetirement;

/* Does schema exist, and who owns it?  Inside SPI. */
static bool
shid_schema_owner(const char *schema, Oid *nspowner)
{
	Oid			t[1] = {TEXTOID};
	Datum		v[1] = {CStringGetTextDatum(schema)};
	bool		isnull;

	if (shid_spi("SELECT n.nspowner FROM pg_catalog.pg_namespace n"
				 " WHERE n.nspname OPERATOR(pg_catalog.=) $1::pg_catalog.name",
				 1, t, v, NULL, SPI_OK_SELECT) == 0)
		return false;
	*nspowner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
											   SPI_tuptable->tupdesc, 1, &isnull));
	return true;
}

/*
 * Read this database's record of shard's retirement into *rec, kept in
 * CurTransactionContext past SPI_finish.  values[0] is the shard, of type
 * types[0].  Inside SPI.
 */
static void
shid_read_retirement(Oid *types, Datum *values, ShidRetirement *rec)
{
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		d;

	memset(rec, 0, sizeof(*rec));
	rec->by_oid = InvalidOid;
	rec->recorded = shid_spi("SELECT r.layout, r.retired_by::text, a.oid, a.rolsuper"
							 " FROM sharded_id.retired_shards r"
							 " LEFT JOIN pg_catalog.pg_roles a ON a.rolname OPERATOR(pg_catalog.=) r.retired_by"
							 " WHERE r.shard_id OPERATOR(pg_catalog.=) $1",
							 1, types, values, NULL, SPI_OK_SELECT) > 0;
	if (!rec->recorded)
		return;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	rec->layout = MemoryContextStrdup(CurTransactionContext, SPI_getvalue(tup, desc, 1));
	rec->retired_by = SPI_getvalue(tup, desc, 2);
	if (rec->retired_by)
		rec->retired_by = MemoryContextStrdup(CurTransactionContext, rec->retired_by);
	d = SPI_getbinval(tup, desc, 3, &isnull);
	if (!isnull)
	{
		rec->by_exists = true;
		rec->by_oid = DatumGetObjectId(d);
		rec->by_super = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
	}
}

/*
 * May the caller make shard (of layout) live here, in schema?  Superusers
 * may.  A member of the provisioner role may if the schema is new or its
 * own, and, when the shard was retired (by this database's record, or by
 * the server's state, whichever database retired it), only if this
 * database recorded the retirement as made by a role that is not a
 * superuser and whose privileges the caller has.  Reads as the catalog's
 * owner.
 */
static void
shid_check_take_back(Oid user, int32 shard, const char *layout, const char *schema)
{
	ShidOwnerContext as;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	bool		schema_exists;
	Oid			nspowner = InvalidOid;
	bool		server_retired;
	ShidRetirement rec;

	if (superuser_arg(user))
		return;
	shid_require_provisioner(user, shard, "create");

	values[0] = Int32GetDatum(shard);
	values[1] = CStringGetTextDatum(layout);
	shid_as_owner_begin(&as);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	schema_exists = shid_schema_owner(schema, &nspowner);
	if (shid_spi("SELECT s.schema_name::pg_catalog.text, s.layout FROM sharded_id.shards s"
				 " WHERE s.shard_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_SELECT) > 0)
	{
		char	   *cat_schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		char	   *cat_layout = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);

		if (strcmp(cat_schema, schema) != 0 || strcmp(cat_layout, layout) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to create shard %d in schema \"%s\"", shard, schema),
					 errdetail("The catalog names schema \"%s\" and layout \"%s\" for shard %d.",
							   cat_schema, cat_layout, shard)));
	}
	server_retired = shid_spi("SELECT FROM sharded_id.floors() f"
							  " WHERE f.shard_id OPERATOR(pg_catalog.=) $1 AND f.layout OPERATOR(pg_catalog.=) $2"
							  " AND f.retired",
							  2, types, values, NULL, SPI_OK_SELECT) > 0;
	shid_read_retirement(types, values, &rec);
	SPI_finish();
	shid_end_owner(&as);

	if (schema_exists && !has_privs_of_role(user, nspowner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create shard %d in schema \"%s\"", shard, schema),
				 errdetail("Schema \"%s\" belongs to role \"%s\".", schema, shid_role_name(nspowner)),
				 errhint("A role that is not a superuser makes shards in new schemas or in schemas it owns.")));
	shid_require_state_here(shard, layout, server_retired ? "take back" : "create");
	if (!server_retired && !rec.recorded)
		return;
	if (!rec.recorded || strcmp(rec.layout, layout) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to take back shard %d", shard),
				 errdetail("This server gave shard %d of layout \"%s\" away, and this database has no record of the retirement.",
						   shard, layout),
				 errhint("A superuser takes it back with sharded_id.create_shard(%d).", shard)));
	if (rec.retired_by == NULL || !rec.by_exists || rec.by_super ||
		!has_privs_of_role(user, rec.by_oid))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to take back shard %d", shard),
				 rec.retired_by == NULL ? errdetail("This database does not record who retired shard %d.", shard) :
				 rec.by_super ? errdetail("Superuser \"%s\" retired shard %d.", rec.retired_by, shard) :
				 errdetail("Role \"%s\" retired shard %d.", rec.retired_by, shard),
				 errhint("A role that is not a superuser takes back only the shards that it retired; a superuser takes it back with sharded_id.create_shard(%d).",
						 shard)));
}

/* Remember that user may take the shard back in this transaction. */
static void
shid_allow_take_back(Oid user, int32 shard, const char *layout)
{
	if (take_backs_lxid != SHID_MY_LXID())
	{
		n_take_backs = 0;
		take_backs_lxid = SHID_MY_LXID();
	}
	if (n_take_backs == max_take_backs)
	{
		int			n = Max(16, max_take_backs * 2);

		take_backs = take_backs == NULL ?
			MemoryContextAlloc(TopMemoryContext, n * sizeof(ShidTakeBack)) :
			repalloc(take_backs, n * sizeof(ShidTakeBack));
		max_take_backs = n;
	}
	take_backs[n_take_backs].shard = shard;
	take_backs[n_take_backs].user = user;
	strlcpy(take_backs[n_take_backs].layout, layout, NAMEDATALEN);
	n_take_backs++;
}

/*
 * For _own_shard: refuse (42501) a caller that is not a superuser unless
 * _catalog_own allowed it this take-back in this transaction.
 */
void
shid_require_take_back(int32 shard, const char *layout)
{
	Oid			user = GetUserId();

	if (superuser_arg(user))
		return;
	if (take_backs_lxid == SHID_MY_LXID())
	{
		for (int i = 0; i < n_take_backs; i++)
			if (take_backs[i].shard == shard && take_backs[i].user == user &&
				strcmp(take_backs[i].layout, layout) == 0)
				return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to take back shard %d", shard),
			 errdetail("Only superusers call sharded_id._own_shard directly."),
			 errhint("Take a shard back with sharded_id.create_shard(%d).", shard)));
}

/*
 * _superuser_only(caller text) RETURNS void
 *
 * The one check of the internal functions that only superusers run (the
 * moves, the router's administration, remote execution): the first
 * statement of each is PERFORM sharded_id._superuser_only('its name').
 * Refuses (42501) a caller that is not a superuser (GetUserId(), so also
 * under SET ROLE), whatever the grants on the caller's function: a blanket
 * GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sharded_id does not open them.
 * EXECUTE is PUBLIC's: it tells only whether the caller is a superuser.
 * Locks: none.
 */
SHID_FUNCTION_INFO(shid_superuser_only);

Datum
shid_superuser_only(PG_FUNCTION_ARGS)
{
	shid_require_superuser_internal(PG_ARGISNULL(0) ? "sharded_id._superuser_only" :
									text_to_cstring(PG_GETARG_TEXT_PP(0)));
	PG_RETURN_VOID();
}

/*
 * _catalog_retire(shard_id integer, layout text, high_water bigint)
 *		RETURNS void
 *
 * retire_shard's catalog writes, for a caller that may retire the shard
 * (shid_require_shard_owner): the shard leaves sharded_id.shards, and
 * sharded_id.retired_shards records it with its high-water mark and the
 * role that retired it.  Written as the catalog's owner.  Takes the row
 * locks of the two writes.
 */
SHID_FUNCTION_INFO(shid_catalog_retire);
Datum
shid_catalog_retire(PG_FUNCTION_ARGS)
{
	int32		shard;
	char	   *layout;
	Oid			user = GetUserId();
	ShidOwnerContext as;
	Oid			types[4] = {INT4OID, TEXTOID, INT8OID, NAMEOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	NameData	by;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("shard and layout must not be null")));
	shard = PG_GETARG_INT32(0);
	layout = text_to_cstring(PG_GETARG_TEXT_PP(1));
	shid_require_shard_owner(shard, layout, "retire");
	namestrcpy(&by, GetUserNameFromId(user, false));
	values[0] = Int32GetDatum(shard);
	values[1] = CStringGetTextDatum(layout);
	if (PG_ARGISNULL(2))
		nulls[2] = 'n';
	else
		values[2] = PG_GETARG_DATUM(2);
	values[3] = NameGetDatum(&by);

	shid_as_owner_begin(&as);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (shid_spi("DELETE FROM sharded_id.shards s WHERE s.shard_id OPERATOR(pg_catalog.=) $1",
				 1, types, values, NULL, SPI_OK_DELETE) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("shard %d does not exist", shard)));
	(void) shid_spi("INSERT INTO sharded_id.retired_shards AS r (shard_id, layout, high_water, retired_by)"
					" VALUES ($1, $2, $3, $4)"
					" ON CONFLICT ON CONSTRAINT retired_shards_pkey DO UPDATE"
					" SET layout = excluded.layout, high_water = excluded.high_water,"
					" retired_at = excluded.retired_at, retired_by = excluded.retired_by",
					4, types, values, nulls, SPI_OK_INSERT);
	SPI_finish();
	shid_end_owner(&as);
	PG_RETURN_VOID();
}

/*
 * _catalog_own(shard_id integer, schema_name name, layout text, mode text)
 *		RETURNS void
 *
 * create_shard's catalog writes, for a caller that may make the shard live
 * here in that schema (shid_check_take_back): the shard enters
 * sharded_id.shards, unless it is there.  Lets _own_shard and then
 * _catalog_unretire follow for the caller in this transaction.  Written as the catalog's owner.  Takes the row locks of the
 * two writes.
 */
SHID_FUNCTION_INFO(shid_catalog_own);
Datum
shid_catalog_own(PG_FUNCTION_ARGS)
{
	int32		shard;
	char	   *schema;
	char	   *layout;
	Oid			user = GetUserId();
	ShidOwnerContext as;
	Oid			types[4] = {INT4OID, NAMEOID, TEXTOID, TEXTOID};
	Datum		values[4];

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("shard, schema, layout and mode must not be null")));
	shard = PG_GETARG_INT32(0);
	schema = NameStr(*PG_GETARG_NAME(1));
	layout = text_to_cstring(PG_GETARG_TEXT_PP(2));
	shid_check_take_back(user, shard, layout, schema);

	values[0] = Int32GetDatum(shard);
	values[1] = PG_GETARG_DATUM(1);
	values[2] = PG_GETARG_DATUM(2);
	values[3] = PG_GETARG_DATUM(3);
	shid_as_owner_begin(&as);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) shid_spi("INSERT INTO sharded_id.shards (shard_id, schema_name, layout, mode)"
					" VALUES ($1, $2, $3, $4) ON CONFLICT (shard_id) DO NOTHING",
					4, types, values, NULL, SPI_OK_INSERT);
	SPI_finish();
	shid_end_owner(&as);
	shid_allow_take_back(user, shard, layout);
	PG_RETURN_VOID();
}

/*
 * _catalog_unretire(shard_id integer, layout text) RETURNS void
 *
 * The last catalog write of create_shard: the shard leaves
 * sharded_id.retired_shards.  It follows _own_shard, which reads a
 * retirement that only the catalog recorded before it takes the shard back,
 * so that a rollback keeps that retirement (owner.c).  For a superuser, or
 * a caller that _catalog_own allowed this take-back in this transaction.
 * Written as the catalog's owner.  Takes the row lock of the delete.
 */
SHID_FUNCTION_INFO(shid_catalog_unretire);
Datum
shid_catalog_unretire(PG_FUNCTION_ARGS)
{
	int32		shard = PG_GETARG_INT32(0);
	char	   *layout = text_to_cstring(PG_GETARG_TEXT_PP(1));
	ShidOwnerContext as;
	Oid			types[1] = {INT4OID};
	Datum		values[1];

	shid_require_take_back(shard, layout);
	values[0] = Int32GetDatum(shard);
	shid_as_owner_begin(&as);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) shid_spi("DELETE FROM sharded_id.retired_shards r WHERE r.shard_id OPERATOR(pg_catalog.=) $1",
					1, types, values, NULL, SPI_OK_DELETE);
	SPI_finish();
	shid_end_owner(&as);
	PG_RETURN_VOID();
}

/*
 * _catalog_add_table(template regclass, table_name name, id_column name)
 *		RETURNS void
 *
 * add_table's catalog write, for a superuser, or a member of the
 * provisioner role that owns the template: the template enters
 * sharded_id.shard_tables, unless its name is there.  Written as the
 * catalog's owner.  Takes the row lock of the write.
 */
SHID_FUNCTION_INFO(shid_catalog_add_table);
Datum
shid_catalog_add_table(PG_FUNCTION_ARGS)
{
	Oid			template = PG_GETARG_OID(0);
	Oid			user = GetUserId();
	ShidOwnerContext as;
	Oid			types[3] = {OIDOID, NAMEOID, NAMEOID};
	Datum		values[3];
	HeapTuple	tup;
	Oid			relowner;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(template));
	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", template)));
	relowner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	if (!superuser_arg(user))
	{
		Oid			provisioner = get_role_oid(SHID_PROVISIONER_ROLE, true);

		if (!OidIsValid(provisioner) || !has_privs_of_role(user, provisioner) ||
			!has_privs_of_role(user, relowner))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to add template table %s", get_rel_name(template)),
					 errdetail("Only superusers, and members of role \"%s\" that own the table, add templates.",
							   SHID_PROVISIONER_ROLE)));
	}
	values[0] = ObjectIdGetDatum(template);
	values[1] = PG_GETARG_DATUM(1);
	values[2] = PG_GETARG_DATUM(2);
	shid_as_owner_begin(&as);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) shid_spi("INSERT INTO sharded_id.shard_tables (table_name, template_schema, template_table, id_column)"
					" SELECT $2, n.nspname, c.relname, $3 FROM pg_catalog.pg_class c"
					" JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace"
					" WHERE c.oid OPERATOR(pg_catalog.=) $1"
					" ON CONFLICT (table_name) DO NOTHING",
					3, types, values, NULL, SPI_OK_INSERT);
	SPI_finish();
	shid_end_owner(&as);
	PG_RETURN_VOID();
}
