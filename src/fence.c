/*-------------------------------------------------------------------------
 *
 * src/fence.c
 *	  A data node's shard fence: the lock enter_shard takes in share mode
 *	  and a move's freeze in exclusive mode.
 *
 * The fence is the advisory lock tag (database, SHID_FENCE_LOCK_CLASS,
 * shard, SHID_LOCK_KIND) of locks.h, which pg_advisory_lock() and its kin
 * cannot take: a role takes it only through the functions below, and only
 * until its transaction ends (never as a session lock).  A transaction
 * that holds it cannot be prepared, so that it is always held by a session
 * that a move's freeze can end (_wait_shard_lock in moves.sql ends those
 * idle in a transaction).  The exclusive fence is for superusers only.
 *
 * _shard_schema_now() reads the shard's catalog row with the newest
 * snapshot, as a foreign key's check does, so that enter_shard turns away a
 * transaction whose own snapshot is older than a move's retirement of the
 * shard (a REPEATABLE READ or SERIALIZABLE one that began before it).
 *
 * _lock_class() gives SQL the classes of locks.h, to read pg_locks with.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "locks.h"
#include "privs.h"
#include "fmgr.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

/*
 * The shard whose fence this transaction took first, or -1: a transaction
 * that holds a fence cannot be prepared.
 */
static int32 shid_fence_in_xact = -1;
static bool shid_fence_callback_registered = false;

static void
shid_fence_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (shid_fence_in_xact >= 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that entered shard %d", shid_fence_in_xact),
						 errdetail("The shard's fence would stay held until the prepared transaction ends, and hold up every move of the shard.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			shid_fence_in_xact = -1;
			break;
		default:
			break;
	}
}

/* Take shard's fence in mode until the transaction ends. */
static void
shid_fence_take(int32 shard, LOCKMODE mode)
{
	LOCKTAG		tag;

	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard id %d is out of range", shard),
				 errdetail("Shard ids are at least 0.")));
	if (!shid_fence_callback_registered)
	{
		RegisterXactCallback(shid_fence_xact_callback, NULL);
		shid_fence_callback_registered = true;
	}
	SET_LOCKTAG_SHID(tag, SHID_FENCE_LOCK_CLASS, shard);
	(void) LockAcquire(&tag, mode, false, false);
	if (shid_fence_in_xact < 0)
		shid_fence_in_xact = shard;
}

/*
 * _enter_fence(shard integer) RETURNS void
 *
 * Take the shard's fence in share mode until the transaction ends, for
 * enter_shard: a move's freeze waits for it.  Waits as any lock does
 * (lock_timeout, cancels).  The transaction cannot be prepared afterwards.
 *
 * Locks: the shard's fence, share mode, until the transaction ends.
 */
SHID_FUNCTION_INFO(shid_enter_fence);
Datum
shid_enter_fence(PG_FUNCTION_ARGS)
{
	shid_fence_take(PG_GETARG_INT32(0), ShareLock);
	PG_RETURN_VOID();
}

/*
 * _lock_fence(shard integer) RETURNS void
 *
 * Take the shard's fence in exclusive mode until the transaction ends: a
 * move's freeze, registration and take-back on a node.  Superusers only,
 * whatever the grants.  Waits as any lock does (lock_timeout, cancels).
 *
 * Locks: the shard's fence, exclusive, until the transaction ends.
 */
SHID_FUNCTION_INFO(shid_lock_fence);
Datum
shid_lock_fence(PG_FUNCTION_ARGS)
{
	shid_require_superuser_internal("sharded_id._lock_fence");
	shid_fence_take(PG_GETARG_INT32(0), ExclusiveLock);
	PG_RETURN_VOID();
}

/*
 * _shard_schema_now(shard integer) RETURNS name
 *
 * The schema that this database's catalog (sharded_id.shards) names for
 * the shard as of now, read with the newest snapshot rather than the
 * transaction's, or NULL if the shard is not in it: for enter_shard, after
 * it took the fence, which a move's retirement held until it committed.
 * The query qualifies every name it uses.
 *
 * Locks: AccessShareLock on sharded_id.shards, as any read of it.
 */
SHID_FUNCTION_INFO(shid_shard_schema_now);
Datum
shid_shard_schema_now(PG_FUNCTION_ARGS)
{
	Oid			types[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(PG_GETARG_INT32(0))};
	SPIPlanPtr	plan;
	Datum		result = (Datum) 0;
	bool		isnull = true;
	int			rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare("SELECT s.schema_name FROM sharded_id.shards s"
					   " WHERE s.shard_id OPERATOR(pg_catalog.=) $1", 1, types);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	rc = SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(),
							  InvalidSnapshot, true, false, 1);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_snapshot returned %s", SPI_result_code_string(rc));
	if (SPI_processed > 0)
	{
		Datum		schema = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
		{
			Name		copy = SPI_palloc(NAMEDATALEN);

			namestrcpy(copy, NameStr(*DatumGetName(schema)));
			result = NameGetDatum(copy);
		}
	}
	SPI_finish();
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * _lock_class(kind text) RETURNS bigint
 *
 * The class (pg_locks.classid) of the shard locks of a kind: route, move
 * or fence; their objid is the shard and their objsubid 3.  Takes no lock.
 */
SHID_FUNCTION_INFO(shid_lock_class);
Datum
shid_lock_class(PG_FUNCTION_ARGS)
{
	char	   *k = text_to_cstring(PG_GETARG_TEXT_PP(0));

	if (strcmp(k, "route") == 0)
		PG_RETURN_INT64(SHID_ROUTE_LOCK_CLASS);
	if (strcmp(k, "move") == 0)
		PG_RETURN_INT64(SHID_MOVE_LOCK_CLASS);
	if (strcmp(k, "fence") == 0)
		PG_RETURN_INT64(SHID_FENCE_LOCK_CLASS);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("lock kind \"%s\" is not route, move or fence", k)));
	pg_unreachable();
}
