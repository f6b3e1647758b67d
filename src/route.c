/*-------------------------------------------------------------------------
 *
 * src/route.c
 *	  The router's shard locks: route(), which a router's PL/Proxy
 *	  functions name in their CLUSTER clause, so that a shard's writers wait
 *	  while a move switches the shard to another node; place_shard's
 *	  _lock_route; and the mover's session locks, _lock_shard and
 *	  _unlock_shard.
 *
 * route() takes the router's route lock on the shard in share mode until
 * its transaction ends; only roles granted EXECUTE on it may call it (not
 * PUBLIC), and the move's freeze ends a session that holds it idle in a
 * transaction (moves.sql), so that no plain role can keep a move from
 * freezing.  place_shard takes it in exclusive mode until its transaction
 * ends (_lock_route).  sharded_id.move_shard holds the same lock in
 * exclusive mode, as a session lock, from the start of its final write
 * freeze until the router's shard map names the new owner, and the shard's
 * move lock, also a session lock, for its whole life.  The mover takes and
 * releases them with _lock_shard() and _unlock_shard() below, which
 * release them too when the top-level transaction aborts (an error or a
 * cancel that escapes the procedure), so that a failed move never keeps a
 * shard's writers waiting.  The tags, their classes and their order: locks.h.
 *
 * Which shard a key belongs to, shard_for(), is in shard_for.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "layout.h"
#include "locks.h"
#include "privs.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "access/xact.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/inval.h"

/*
 * The checks of route()'s arguments: a shard that some layout has (0 to
 * the largest shard of any layout), and a cluster name that can name a
 * PL/Proxy cluster, a foreign server (at most NAMEDATALEN - 1 bytes, not
 * empty).
 */
static void
shid_check_route_args(int32 shard, text *cluster)
{
	int64		max_shard = 0;
	int			len = VARSIZE_ANY_EXHDR(cluster);

	for (int i = 0; i < shid_num_layouts(); i++)
		max_shard = Max(max_shard, shid_max_shard(shid_layout_at(i)));
	if (shard < 0 || shard > max_shard)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("shard id %d is out of range", shard),
				 errdetail("Shard ids of the built-in layouts are between 0 and %lld.",
						   (long long) max_shard)));
	if (len == 0 || len >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("cluster name of %d bytes is not valid", len),
				 errdetail("A PL/Proxy cluster is named like a foreign server: 1 to %d bytes.",
						   NAMEDATALEN - 1)));
}

/* Did this transaction take a route lock with route()? */
static bool shid_route_in_xact = false;
static bool shid_route_callback_registered = false;

/*
 * A transaction that called route() cannot be prepared: its route lock
 * would stay held, by no session that a move's freeze could end, until
 * the prepared transaction is committed or rolled back.
 */
static void
shid_route_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (shid_route_in_xact)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that called route()"),
						 errdetail("The shard's route lock would stay held until the prepared transaction ends, and hold up every move of the shard.")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			shid_route_in_xact = false;
			break;
		default:
			break;
	}
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
 * to the shard's new owner.  Not PUBLIC's to call; a transaction that
 * called it cannot be prepared.
 */
SHID_FUNCTION_INFO(shid_route);
Datum
shid_route(PG_FUNCTION_ARGS)
{
	int32		shard = PG_GETARG_INT32(0);
	text	   *cluster = PG_GETARG_TEXT_PP(1);
	LOCKTAG		tag;

	shid_check_route_args(shard, cluster);
	if (!shid_route_callback_registered)
	{
		RegisterXactCallback(shid_route_xact_callback, NULL);
		shid_route_callback_registered = true;
	}
	SET_LOCKTAG_SHID(tag, SHID_ROUTE_LOCK_CLASS, shard);
	(void) LockAcquire(&tag, ShareLock, false, false);
	shid_route_in_xact = true;
	AcceptInvalidationMessages();

	PG_RETURN_DATUM(PG_GETARG_DATUM(1));
}

/*
 * _lock_route(shard integer) RETURNS void
 *
 * Take the shard's route lock in exclusive mode until the transaction
 * ends: the lock route() waits on.  place_shard holds it while it changes
 * the shard map, so that routed calls reach the new node from the next one
 * on.  Waits as any lock does (lock_timeout, cancels).
 *
 * Locks: the shard's route lock, exclusive, until the transaction ends.
 */
SHID_FUNCTION_INFO(shid_lock_route);
Datum
shid_lock_route(PG_FUNCTION_ARGS)
{
	int32		shard;
	LOCKTAG		tag;

	shid_require_superuser_internal("sharded_id._lock_route");
	shard = PG_GETARG_INT32(0);
	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard id %d is out of range", shard),
				 errdetail("Shard ids are at least 0.")));
	SET_LOCKTAG_SHID(tag, SHID_ROUTE_LOCK_CLASS, shard);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	PG_RETURN_VOID();
}

/*
 * The mover's session locks that this backend holds: class and shard of
 * each, at most one entry per lock.
 */
typedef struct ShidMoverLock
{
	uint32		class;
	int32		shard;
} ShidMoverLock;

#define SHID_MAX_MOVER_LOCKS	64

static ShidMoverLock shid_mover_locks[SHID_MAX_MOVER_LOCKS];
static int	shid_n_mover_locks = 0;
static bool shid_mover_callback_registered = false;

static int
shid_mover_lock_index(uint32 class, int32 shard)
{
	for (int i = 0; i < shid_n_mover_locks; i++)
		if (shid_mover_locks[i].class == class && shid_mover_locks[i].shard == shard)
			return i;
	return -1;
}

static void
shid_mover_lock_forget(int i)
{
	shid_mover_locks[i] = shid_mover_locks[--shid_n_mover_locks];
}

/*
 * When the top-level transaction aborts, the mover's procedure has lost
 * control: release every route and move lock it holds, so that writers go
 * on and recovery can take the move over.
 */
static void
shid_mover_xact_callback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_ABORT)
		return;
	while (shid_n_mover_locks > 0)
	{
		ShidMoverLock *l = &shid_mover_locks[shid_n_mover_locks - 1];
		LOCKTAG		tag;

		SET_LOCKTAG_SHID(tag, l->class, l->shard);
		(void) LockRelease(&tag, ExclusiveLock, true);
		shid_n_mover_locks--;
	}
}

static uint32
shid_mover_lock_class(text *kind)
{
	char	   *k = text_to_cstring(kind);

	if (strcmp(k, "route") == 0)
		return SHID_ROUTE_LOCK_CLASS;
	if (strcmp(k, "move") == 0)
		return SHID_MOVE_LOCK_CLASS;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("lock kind \"%s\" is not route or move", k)));
	pg_unreachable();
}

/*
 * _lock_shard(shard integer, kind text, wait boolean) RETURNS boolean
 *
 * Take the shard's route or move lock in exclusive mode, as a session lock
 * of this backend.  With wait, it waits as any lock does (lock_timeout and
 * cancels end the wait with an error); without, it returns false when
 * another backend holds the lock.  True when this backend holds it after
 * the call, once however often it was taken.  Superusers only, whatever
 * the grants: the moves run as one, and a lock held by anyone else would
 * stop them.
 */
SHID_FUNCTION_INFO(shid_lock_shard);
Datum
shid_lock_shard(PG_FUNCTION_ARGS)
{
	int32		shard;
	uint32		class;
	bool		wait;
	LOCKTAG		tag;

	shid_require_superuser_internal("sharded_id._lock_shard");
	shard = PG_GETARG_INT32(0);
	class = shid_mover_lock_class(PG_GETARG_TEXT_PP(1));
	wait = PG_GETARG_BOOL(2);
	if (shard < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard id %d is out of range", shard),
				 errdetail("Shard ids are at least 0.")));
	if (shid_mover_lock_index(class, shard) >= 0)
		PG_RETURN_BOOL(true);
	if (shid_n_mover_locks >= SHID_MAX_MOVER_LOCKS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a session may hold at most %d shard locks of moves", SHID_MAX_MOVER_LOCKS)));
	if (!shid_mover_callback_registered)
	{
		RegisterXactCallback(shid_mover_xact_callback, NULL);
		shid_mover_callback_registered = true;
	}
	SET_LOCKTAG_SHID(tag, class, shard);
	if (LockAcquire(&tag, ExclusiveLock, true, !wait) == LOCKACQUIRE_NOT_AVAIL)
		PG_RETURN_BOOL(false);
	shid_mover_locks[shid_n_mover_locks].class = class;
	shid_mover_locks[shid_n_mover_locks].shard = shard;
	shid_n_mover_locks++;
	PG_RETURN_BOOL(true);
}

/*
 * _unlock_shard(shard integer, kind text) RETURNS boolean
 *
 * Release a lock _lock_shard took; false when this backend did not hold it.
 */
SHID_FUNCTION_INFO(shid_unlock_shard);
Datum
shid_unlock_shard(PG_FUNCTION_ARGS)
{
	int32		shard;
	uint32		class;
	int			i;
	LOCKTAG		tag;

	shid_require_superuser_internal("sharded_id._unlock_shard");
	shard = PG_GETARG_INT32(0);
	class = shid_mover_lock_class(PG_GETARG_TEXT_PP(1));
	i = shid_mover_lock_index(class, shard);
	if (i < 0)
		PG_RETURN_BOOL(false);
	SET_LOCKTAG_SHID(tag, class, shard);
	(void) LockRelease(&tag, ExclusiveLock, true);
	shid_mover_lock_forget(i);
	PG_RETURN_BOOL(true);
}
