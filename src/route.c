/*-------------------------------------------------------------------------
 *
 * src/route.c
 *	  shard_for(): which logical shard owns an application key.
 *
 * Instagram maps a user to a logical shard with user_id % shard_count, and
 * every piece of the system (application, router, data nodes) must agree on
 * that mapping.  These functions are IMMUTABLE and use only arithmetic
 * anyone can reproduce:
 *
 *	 integer keys: the floored remainder, always in [0, shard_count):
 *				   shard_for(5001, 2000) = 1001, shard_for(-1, 2000) = 1999
 *				   (Python's key % n; in C or SQL, ((key % n) + n) % n)
 *	 text keys:    64-bit FNV-1a of the key's bytes, as an unsigned number,
 *				   modulo shard_count
 *
 * And route(), which a router's PL/Proxy functions name in their CLUSTER
 * clause, so that a shard's writers wait while a move switches the shard
 * to another node.
 *
 * Locking: route() takes the router's advisory lock on the shard (class
 * SHID_ROUTE_LOCK_CLASS, "shir" in ASCII, and the shard id) in share mode
 * until its transaction ends.  sharded_id.move_shard holds the same lock in
 * exclusive mode, as a session lock, from the start of its final write
 * freeze until the router's shard map names the new owner.  No other lock
 * is taken here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/inval.h"

#define SHID_FNV64_OFFSET	UINT64CONST(0xcbf29ce484222325)
#define SHID_FNV64_PRIME	UINT64CONST(0x100000001b3)

/* Class of the router's per-shard advisory locks: "shir" in ASCII. */
#define SHID_ROUTE_LOCK_CLASS	1936222578

static void
shid_check_shard_count(int32 shard_count)
{
	if (shard_count <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard count %d is out of range", shard_count),
				 errdetail("The shard count must be at least 1.")));
}

/*
 * shard_for(key bigint, shard_count integer) RETURNS integer
 *
 * The logical shard of an integer key: key modulo shard_count, floored so
 * that negative keys land in [0, shard_count) too.
 */
SHID_FUNCTION_INFO(shid_shard_for_int8);
Datum
shid_shard_for_int8(PG_FUNCTION_ARGS)
{
	int64		key = PG_GETARG_INT64(0);
	int32		shard_count = PG_GETARG_INT32(1);
	int64		r;

	shid_check_shard_count(shard_count);
	r = key % shard_count;
	if (r < 0)
		r += shard_count;
	PG_RETURN_INT32((int32) r);
}

/*
 * shard_for(key text, shard_count integer) RETURNS integer
 *
 * The logical shard of a text key: the 64-bit FNV-1a hash of its bytes
 * (in the database encoding), modulo shard_count.
 */
SHID_FUNCTION_INFO(shid_shard_for_text);
Datum
shid_shard_for_text(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);
	int32		shard_count = PG_GETARG_INT32(1);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(key);
	int			len = VARSIZE_ANY_EXHDR(key);
	uint64		h = SHID_FNV64_OFFSET;

	shid_check_shard_count(shard_count);
	for (int i = 0; i < len; i++)
	{
		h ^= p[i];
		h *= SHID_FNV64_PRIME;
	}
	PG_RETURN_INT32((int32) (h % (uint64) shard_count));
}

/*
 * route(shard integer, cluster text DEFAULT 'sharded_id') RETURNS text
 *
 * The PL/Proxy cluster a router function runs on, for a call on the given
 * logical shard: CLUSTER sharded_id.route(...) in the function's body.
 *
 * Takes the shard's route lock in share mode, until the transaction ends.
 * A move's switch holds it in exclusive mode, so a writer waits here
 * instead of reaching a node whose copy is frozen or retired.  Once it has
 * the lock it processes the catalog invalidations that arrived while it
 * waited: the switch's new PL/Proxy cluster options among them, so that
 * PL/Proxy, which looks the cluster up after this returns, sends the call
 * to the shard's new owner.
 */
SHID_FUNCTION_INFO(shid_route);
Datum
shid_route(PG_FUNCTION_ARGS)
{
	int32		shard = PG_GETARG_INT32(0);
	LOCKTAG		tag;

	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard id %d is out of range", shard),
				 errdetail("Shard ids are at least 0.")));

	/* The tag pg_advisory_xact_lock_shared(int4, int4) would take. */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) SHID_ROUTE_LOCK_CLASS,
						 (uint32) shard, 2);
	(void) LockAcquire(&tag, ShareLock, false, false);
	AcceptInvalidationMessages();

	PG_RETURN_DATUM(PG_GETARG_DATUM(1));
}
