/*-------------------------------------------------------------------------
 *
 * src/owner_read.c
 *	  Read, check and write a shard's tables as their owner, never with
 *	  the caller's rights.
 *
 * A shard schema may belong to a tenant or an application role, which can
 * put its own code in it: a view in place of a table, a function in an
 * index expression, a partial index's predicate or expression statistics
 * (which the planner evaluates when it plans a read of the table), a
 * policy, a trigger, a cast from its row type.  The administrator's calls
 * that read a shard's rows (raise_floors, create_shard's take-back and
 * adoption, adopt_table, a move's floor checks, comparison and copy) must
 * not run that code with a superuser's rights.  They read through the
 * functions here, which do what PostgreSQL does for VACUUM, ANALYZE,
 * CREATE INDEX, CLUSTER and REFRESH MATERIALIZED VIEW since CVE-2022-1552:
 * switch to the table's owner inside a security-restricted operation, with
 * search_path pinned to "pg_catalog, pg_temp".  Whatever the owner planted
 * then runs with the owner's rights only, and cannot SET ROLE, create
 * temporary objects or leave anything behind in the session.  An error
 * inside gives the caller's identity and settings back through the
 * (sub)transaction's abort, as in core.
 *
 * A read is parsed as the caller (parsing runs none of the table's code,
 * and the owner need not see the schema the table is in), then planned and
 * run as the owner.  A foreign key's check (_validate_as_owner) runs as the
 * owner of its table, and only when the table it references has the same
 * owner, or one that could act as that owner anyway.
 *
 * A move's dump copy writes the same way (_insert_as_owner): its INSERT is
 * parsed as the caller and planned and run as the table's owner, so the
 * target's index expressions, check constraints, domain checks, generated
 * columns and the triggers that fire run as the owner; constraint triggers
 * it deferred fire before the owner's identity is given back.
 *
 * Only ordinary and partitioned tables are read (42809 otherwise), and a
 * read also ignores FORCE ROW LEVEL SECURITY (SECURITY_NOFORCE_RLS, as the
 * foreign-key checks do): no policy runs, and the largest id is that of
 * every row, as a superuser reading the table would see it.
 *
 * Locks: AccessShareLock on the table, taken before its catalog row is
 * read and held to the end of the transaction, so that the relation read
 * is the one checked; _validate_as_owner takes ALTER TABLE ... VALIDATE
 * CONSTRAINT's locks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xact.h"
#include "access/tupdesc.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_type.h"
#include "commands/tablecmds.h"
#include "commands/trigger.h"
#include "compat.h"
#include "executor/executor.h"
#include "executor/tstoreReceiver.h"
#include "funcapi.h"
#include "nodes/params.h"
#include "miscadmin.h"
#include "owner_read.h"
#include "privs.h"
#include "storage/lmgr.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"


/*
 * Receives the one row of an aggregate: its first column, copied into the
 * memory context of the caller.
 */
typedef struct ShidOneReceiver
{
	DestReceiver pub;
	MemoryContext cxt;
	bool		isnull;
	Datum		value;
	uint64		rows;
} ShidOneReceiver;

static bool
shid_one_receive(TupleTableSlot *slot, DestReceiver *self)
{
	ShidOneReceiver *r = (ShidOneReceiver *) self;
	Datum		value = slot_getattr(slot, 1, &r->isnull);

	if (!r->isnull)
	{
		Form_pg_attribute att = TupleDescAttr(slot->tts_tupleDescriptor, 0);
		MemoryContext old = MemoryContextSwitchTo(r->cxt);

		r->value = datumCopy(value, att->attbyval, att->attlen);
		MemoryContextSwitchTo(old);
	}
	r->rows++;
	return true;
}

static void
shid_one_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
shid_one_shutdown(DestReceiver *self)
{
}

static void
shid_one_destroy(DestReceiver *self)
{
}

/*
 * The relation, locked (AccessShareLock unless lockmode says otherwise) and
 * checked to be an ordinary or partitioned table: its owner, and its name
 * qualified for SQL text.
 */
static char *
shid_lock_table(Oid relid, LOCKMODE lockmode, Oid *owner)
{
	HeapTuple	tuple;
	Form_pg_class form;
	char	   *nspname;
	char	   *name;

	LockRelationOid(relid, lockmode);
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	form = (Form_pg_class) GETSTRUCT(tuple);
	nspname = get_namespace_name(form->relnamespace);
	name = pstrdup(quote_qualified_identifier(nspname, NameStr(form->relname)));
	if (form->relkind != RELKIND_RELATION && form->relkind != RELKIND_PARTITIONED_TABLE)
	{
		const char *kind;

		switch (form->relkind)
		{
			case RELKIND_VIEW:
				kind = "a view";
				break;
			case RELKIND_MATVIEW:
				kind = "a materialized view";
				break;
			case RELKIND_FOREIGN_TABLE:
				kind = "a foreign table";
				break;
			case RELKIND_SEQUENCE:
				kind = "a sequence";
				break;
			case RELKIND_INDEX:
			case RELKIND_PARTITIONED_INDEX:
				kind = "an index";
				break;
			case RELKIND_COMPOSITE_TYPE:
				kind = "a composite type";
				break;
			default:
				kind = "a relation of another kind";
				break;
		}
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", name),
				 errdetail("It is %s. A shard's rows are read only from ordinary and partitioned tables.", kind),
				 errhint("Drop it, or make it an ordinary table again, before the shard is read.")));
	}
	*owner = form->relowner;
	ReleaseSysCache(tuple);
	return name;
}

/*
 * Pin search_path, in a GUC nest level of its own, as core's maintenance
 * commands do.  Done before the query is parsed, so that it is parsed and
 * planned under the same one.
 */
void
shid_pin_search_path(ShidOwnerContext *ctx)
{
	GetUserIdAndSecContext(&ctx->save_userid, &ctx->save_sec_context);
	ctx->save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Become the table's owner inside a security-restricted operation, one
 * that ignores FORCE ROW LEVEL SECURITY.
 */
void
shid_become_owner(Oid owner, ShidOwnerContext *ctx)
{
	SetUserIdAndSecContext(owner,
						   ctx->save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION | SECURITY_NOFORCE_RLS);
}

/* And back; on an error, the (sub)transaction's abort does the same. */
void
shid_end_owner(ShidOwnerContext *ctx)
{
	AtEOXact_GUC(false, ctx->save_nestlevel);
	SetUserIdAndSecContext(ctx->save_userid, ctx->save_sec_context);
}

/*
 * The table's owner must be able to read what the read asks for (a column,
 * or every column when attnum is 0): an owner that revoked its own SELECT
 * gets an error here naming the table and its owner, not the executor's
 * unqualified one from inside the owner's context.
 */
static void
shid_require_owner_select(Oid relid, AttrNumber attnum, Oid owner, const char *rel)
{
	if (pg_class_aclcheck(relid, owner, ACL_SELECT) == ACLCHECK_OK)
		return;
	if (attnum > 0 && pg_attribute_aclcheck(relid, attnum, owner, ACL_SELECT) == ACLCHECK_OK)
		return;
	if (attnum == 0 && pg_attribute_aclcheck_all(relid, owner, ACL_SELECT, ACLMASK_ALL) == ACLCHECK_OK)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("owner %s of table %s cannot read it", GetUserNameFromId(owner, false), rel),
			 errdetail("A shard's tables are read as their owner, and the owner has no SELECT privilege on this one."),
			 errhint("As the table's owner, GRANT SELECT ON %s TO %s.", rel,
					 quote_identifier(GetUserNameFromId(owner, false)))));
}

/*
 * Run query, a SELECT from the table named rel, owned by owner: parsed
 * and rewritten as the caller, who may see the table's schema where its
 * owner may not (this runs no code of the table's: the relation is a table,
 * checked and locked, and the query calls pg_catalog's functions by name,
 * never through a cast); planned (index expressions and predicates,
 * statistics) and run as the owner, in the caller's snapshot.  Not through
 * SPI, whose plan cache would parse the query again as the owner.  Its rows
 * go to dest.
 */
static uint64
shid_run_as_owner_params(Oid owner, const char *rel, const char *query,
						 Oid *paramtypes, ParamListInfo params, int nparams,
						 DestReceiver *dest)
{
	ShidOwnerContext ctx;
	List	   *raw;
	List	   *queries;
	List	   *plans;
	QueryDesc  *qd;
	bool		pushed = false;
	bool		writes;
	uint64		processed;

	shid_pin_search_path(&ctx);
	raw = pg_parse_query(query);
	queries = pg_analyze_and_rewrite_fixedparams(linitial_node(RawStmt, raw), query, paramtypes, nparams, NULL);
	shid_become_owner(owner, &ctx);
	plans = pg_plan_queries(queries, query, 0, params);
	if (list_length(plans) != 1)
		elog(ERROR, "could not plan a read of %s", rel);
	writes = linitial_node(PlannedStmt, plans)->commandType != CMD_SELECT;
	if (writes)
	{
		/* As SPI runs a statement that writes: a snapshot of its own. */
		CommandCounterIncrement();
		PushActiveSnapshot(GetTransactionSnapshot());
		UpdateActiveSnapshotCommandId();
		pushed = true;
	}
	else if (!ActiveSnapshotSet())
	{
		PushActiveSnapshot(GetTransactionSnapshot());
		pushed = true;
	}
	qd = CreateQueryDesc(linitial_node(PlannedStmt, plans), query, GetActiveSnapshot(), InvalidSnapshot,
						 dest, params, NULL, 0);
	ExecutorStart(qd, 0);
	SHID_EXECUTOR_RUN(qd, ForwardScanDirection, 0);
	ExecutorFinish(qd);
	processed = qd->estate->es_processed;
	ExecutorEnd(qd);
	FreeQueryDesc(qd);
	if (pushed)
		PopActiveSnapshot();
	if (writes)
	{
		ConstraintsSetStmt *immediate = makeNode(ConstraintsSetStmt);

		/*
		 * Constraint triggers the statement deferred fire now, as the
		 * owner: at commit they would fire as the caller.
		 */
		immediate->constraints = NIL;
		immediate->deferred = false;
		AfterTriggerSetState(immediate);
		CommandCounterIncrement();
	}
	shid_end_owner(&ctx);
	return processed;
}

static void
shid_run_as_owner(Oid owner, const char *rel, const char *query, DestReceiver *dest)
{
	(void) shid_run_as_owner_params(owner, rel, query, NULL, NULL, 0, dest);
}

/* The same, for a query of one aggregate: its value. */
static Datum
shid_read_as_owner(Oid owner, const char *rel, const char *query, bool *isnull)
{
	ShidOneReceiver dest;

	memset(&dest, 0, sizeof(dest));
	dest.pub.receiveSlot = shid_one_receive;
	dest.pub.rStartup = shid_one_startup;
	dest.pub.rShutdown = shid_one_shutdown;
	dest.pub.rDestroy = shid_one_destroy;
	dest.pub.mydest = DestNone;
	dest.cxt = CurrentMemoryContext;
	dest.isnull = true;
	shid_run_as_owner(owner, rel, query, &dest.pub);
	if (dest.rows != 1)
		elog(ERROR, "could not read %s", rel);
	*isnull = dest.isnull;
	return dest.value;
}

/*
 * sharded_id._max_id(rel regclass, id_column name) RETURNS bigint
 *
 * The largest value of bigint column id_column of table rel, read as the
 * table's owner in a security-restricted operation (see the head of this
 * file), or NULL when the table has no rows.  The caller must have SELECT
 * on the column.  Refuses a relation that is not an ordinary or
 * partitioned table (42809) and a column that is not bigint (42804).
 * Locks: AccessShareLock on rel, to the end of the transaction.
 */
SHID_FUNCTION_INFO(shid_max_id);

Datum
shid_max_id(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *column = NameStr(*PG_GETARG_NAME(1));
	Oid			owner;
	char	   *rel;
	AttrNumber	attnum;
	Oid			atttype;
	char	   *query;
	Datum		result;
	bool		isnull;

	rel = shid_lock_table(relid, AccessShareLock, &owner);
	attnum = get_attnum(relid, column);
	if (attnum == InvalidAttrNumber || attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist", column, rel)));
	atttype = get_atttype(relid, attnum);
	if (atttype != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of \"%s\" is of type %s, not bigint", column, rel,
						format_type_be(atttype)),
				 errdetail("The id column of a sharded table must be of type bigint.")));
	/* The caller's right to read it, before the owner's. */
	if (pg_attribute_aclcheck(relid, attnum, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for column \"%s\" of \"%s\"", column, rel)));
	shid_require_owner_select(relid, attnum, owner, rel);

	query = psprintf("SELECT pg_catalog.max(%s) FROM %s", quote_identifier(column), rel);
	result = shid_read_as_owner(owner, rel, query, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * Lock table relid for a read of whole rows and check that both the caller
 * and the table's owner may read it; returns its qualified name and, in
 * *owner, its owner.
 */
static char *
shid_open_whole_table(Oid relid, Oid *owner)
{
	char	   *rel = shid_lock_table(relid, AccessShareLock, owner);

	if (pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", rel)));
	shid_require_owner_select(relid, 0, *owner, rel);
	return rel;
}

/*
 * sharded_id._table_fingerprint(rel regclass) RETURNS text
 *
 * The number of rows of table rel and the sum of a hash of each row's text
 * ('count:sum'), to compare two copies of a table: read as the table's
 * owner in a security-restricted operation, like _max_id.  The row's text
 * is record_out's, called by name: a cast from the table's row type, which
 * its owner may create, is not used.  The caller must have SELECT on the
 * table.  Refuses a relation that is not an ordinary or partitioned table
 * (42809).
 * Locks: AccessShareLock on rel, to the end of the transaction.
 */
SHID_FUNCTION_INFO(shid_table_fingerprint);

Datum
shid_table_fingerprint(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Oid			owner;
	char	   *rel;
	char	   *query;
	Datum		result;
	bool		isnull;

	shid_require_superuser_internal("sharded_id._table_fingerprint");
	rel = shid_open_whole_table(relid, &owner);
	query = psprintf("SELECT pg_catalog.concat(pg_catalog.count(*), ':', "
					 "COALESCE(pg_catalog.sum(pg_catalog.hashtextextended("
					 "pg_catalog.textin(pg_catalog.record_out(r.*)), 0)), 0)) FROM %s r", rel);
	result = shid_read_as_owner(owner, rel, query, &isnull);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * sharded_id._table_rows(rel regclass) RETURNS SETOF text
 *
 * Every row of table rel as text (record_out's, called by name, never a
 * cast), read as the table's owner in a security-restricted operation,
 * like _max_id: what a move copies.  Materialized (spilling to disk past
 * work_mem).  The caller must have SELECT on the table.  Refuses a relation
 * that is not an ordinary or partitioned table (42809).
 * Locks: AccessShareLock on rel, to the end of the transaction.
 */
SHID_FUNCTION_INFO(shid_table_rows);

Datum
shid_table_rows(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			owner;
	char	   *rel;
	char	   *query;
	DestReceiver *dest;

	shid_require_superuser_internal("sharded_id._table_rows");
	rel = shid_open_whole_table(relid, &owner);
	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) || !(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	{
		MemoryContext old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
		TupleDesc	desc = CreateTemplateTupleDesc(1);

		TupleDescInitEntry(desc, (AttrNumber) 1, "r", TEXTOID, -1, 0);
		rsinfo->returnMode = SFRM_Materialize;
		rsinfo->setDesc = desc;
		rsinfo->setResult = tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0,
												  false, work_mem);
		MemoryContextSwitchTo(old);
	}
	query = psprintf("SELECT pg_catalog.textin(pg_catalog.record_out(r.*)) FROM %s r", rel);
	dest = CreateDestReceiver(DestTuplestore);
	SetTuplestoreDestReceiverParams(dest, rsinfo->setResult,
									rsinfo->econtext->ecxt_per_query_memory,
									false, NULL, NULL);
	shid_run_as_owner(owner, rel, query, dest);
	dest->rDestroy(dest);
	return (Datum) 0;
}

/*
 * sharded_id._validate_as_owner(rel regclass, constraint_name name) RETURNS void
 *
 * ALTER TABLE rel VALIDATE CONSTRAINT constraint_name, run as the table's
 * owner in a security-restricted operation: the check of a foreign key
 * that create_shard adds plans a read of both tables, and the planner
 * evaluates their index expressions, which their owners wrote.  So the
 * key's referenced table must belong to the same role, to a superuser, or
 * to a role that has the owner's privileges anyway (42501 otherwise).
 * The caller must have the owner's privileges, as ALTER TABLE requires
 * (42501); the statement is fixed, so running it as the owner gives the
 * caller nothing.  Refuses a relation that is not an ordinary or
 * partitioned table (42809).
 * Locks: ShareUpdateExclusiveLock on rel, and those of VALIDATE CONSTRAINT.
 */
SHID_FUNCTION_INFO(shid_validate_as_owner);

Datum
shid_validate_as_owner(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *conname = NameStr(*PG_GETARG_NAME(1));
	Oid			owner;
	char	   *rel;
	Oid			conoid;
	HeapTuple	tuple;
	Oid			confrelid;
	AlterTableCmd *cmd;
	ShidOwnerContext ctx;

	rel = shid_lock_table(relid, ShareUpdateExclusiveLock, &owner);
	if (!has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", rel)));
	conoid = get_relation_constraint_oid(relid, conname, false);
	tuple = SearchSysCache1(CONSTROID, ObjectIdGetDatum(conoid));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for constraint %u", conoid);
	confrelid = ((Form_pg_constraint) GETSTRUCT(tuple))->confrelid;
	ReleaseSysCache(tuple);
	if (OidIsValid(confrelid) && confrelid != relid)
	{
		Oid			refowner;
		char	   *ref = shid_lock_table(confrelid, AccessShareLock, &refowner);

		if (refowner != owner && !superuser_arg(refowner) && !has_privs_of_role(refowner, owner))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("foreign key \"%s\" of %s references %s, which another role owns", conname, rel, ref),
					 errdetail("Checking the key would run code of %s's owner, %s, as %s's owner, %s.",
							   ref, GetUserNameFromId(refowner, false), rel, GetUserNameFromId(owner, false)),
					 errhint("Give both tables one owner, or add the key as the owner of both.")));
	}

	cmd = makeNode(AlterTableCmd);
	cmd->subtype = AT_ValidateConstraint;
	cmd->name = conname;

	shid_pin_search_path(&ctx);
	shid_become_owner(owner, &ctx);
	AlterTableInternal(relid, list_make1(cmd), true);
	shid_end_owner(&ctx);

	PG_RETURN_VOID();
}

/*
 * sharded_id._insert_as_owner(rel regclass, rows text[]) RETURNS bigint
 *
 * Insert rows, each a row of table rel as record_out writes it (what
 * _table_rows returns on the source), into rel, as the table's owner in a
 * security-restricted operation with search_path pinned (see the head of
 * this file): the INSERT of a move's dump copy.  Every column that is not
 * generated is given, identity columns with OVERRIDING SYSTEM VALUE, so no
 * default runs; the table's index expressions and predicates, check
 * constraints, domain checks, generated columns and the triggers that fire
 * (in the session's session_replication_role) run as the owner, and
 * constraint triggers the insert deferred fire before it returns, as the
 * owner too.  The query is parsed as the caller and planned and run as the
 * owner, like _max_id's.  The caller must have INSERT on the table.
 * Refuses a relation that is not an ordinary or partitioned table (42809).
 * Returns the number of rows inserted.
 * Locks: RowExclusiveLock on rel, to the end of the transaction.
 */
SHID_FUNCTION_INFO(shid_insert_as_owner);

Datum
shid_insert_as_owner(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Datum		rows = PG_GETARG_DATUM(1);
	Oid			owner;
	char	   *rel;
	Relation	r;
	TupleDesc	desc;
	StringInfoData cols;
	StringInfoData fields;
	char	   *query;
	Oid			paramtypes[1] = {TEXTARRAYOID};
	ParamListInfo params;
	uint64		processed;

	shid_require_superuser_internal("sharded_id._insert_as_owner");

	rel = shid_lock_table(relid, RowExclusiveLock, &owner);
	if (pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", rel)));

	/* The columns that are not dropped nor generated, in their order. */
	initStringInfo(&cols);
	initStringInfo(&fields);
	r = relation_open(relid, NoLock);
	desc = RelationGetDescr(r);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const char *col;

		if (att->attisdropped || att->attgenerated != '\0')
			continue;
		col = quote_identifier(NameStr(att->attname));
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "", col);
		appendStringInfo(&fields, "%s(v).%s", fields.len > 0 ? ", " : "", col);
	}
	relation_close(r, NoLock);
	if (cols.len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table %s has no column to insert", rel)));

	query = psprintf("INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE SELECT %s "
					 "FROM (SELECT r::%s AS v FROM pg_catalog.unnest($1) r) s",
					 rel, cols.data, fields.data, rel);
	params = makeParamList(1);
	params->params[0].value = rows;
	params->params[0].isnull = false;
	params->params[0].pflags = PARAM_FLAG_CONST;
	params->params[0].ptype = TEXTARRAYOID;
	processed = shid_run_as_owner_params(owner, rel, query, paramtypes, params, 1, None_Receiver);
	PG_RETURN_INT64((int64) processed);
}
