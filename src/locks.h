/*-------------------------------------------------------------------------
 *
 * src/locks.h
 *	  Every lock sharded_id takes, and the order it takes them in: the one
 *	  place that states the locking rules.  The files say what each lock
 *	  guards there, and each SQL-callable function names the locks it
 *	  takes; the order is here only.  What each lock guards is below, by
 *	  its kind (LWLocks, spinlocks, condition variables, heavyweight
 *	  locks); doc/sharded_id-design.md gives the design they serve.
 *
 * The order.  A lock on the left is never requested while one on its right
 * is held:
 *
 *	 heavyweight locks, catalog reads  ->  slot table lock  ->  ceiling lock
 *		->  floors lock  ->  XactTruncationLock  ->  a slot's spinlock
 *
 * Any subset in this order is fine; one lock at a time is the common case.
 * The nestings that exist:
 *
 *	 - reset_ceiling: the slot table lock, the ceiling lock, then each
 *	   slot's spinlock in turn;
 *	 - a new slot reads its shard's state under the slot table lock (floors
 *	   lock, shared);
 *	 - a floor raise (raise_floor, a slot running ahead on its floor) and
 *	   lower_floor: the ceiling lock, the floors lock, the slot's spinlock;
 *	 - ownership changes, their transaction's end and a mint's first look
 *	   at a shard: the floors lock, then the slot's spinlock;
 *	 - a change of a state may read the commit log under the floors lock;
 *	 - a Citus coordinator's grant: the ceiling lock (shared) to read where
 *	   new slots start, then the slot's spinlock; both released, the
 *	   ceiling lock to cover the window;
 *	 - a Citus worker picks the shards it renews (shid_slots_visit)
 *	   under the slot table lock (shared) and each slot's spinlock in turn.
 *
 * Released first, never nested: replay of a SHARD record (rmgr.c) and
 * owner.c release the floors lock before the slot follows the state (slot
 * table lock, then the slot's spinlock).  A minter releases the ceiling
 * lock before it settles the shards' states (floors lock).  A Citus worker
 * holds no lock across its request.  No LWLock is held while a heavyweight
 * lock is requested or a catalog is read (reserve.c, privs.c, owner.c).
 * An error raised while one is held releases it with the abort, as in
 * core.
 *
 * A move takes its shard's move lock, then, for the switch, the route
 * lock; on the nodes, the fences of their own transactions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_LOCKS_H
#define SHARDED_ID_LOCKS_H

#include "postgres.h"

#include "miscadmin.h"
#include "storage/lock.h"

/*
 * LWLocks, the tranche "sharded_id" (init.c requests one per structure):
 *
 *	 slot table lock (slots.c, ShidShared.slots_lock): inserts into the
 *		slot table (exclusive), scans of it (shared), and the count of
 *		slots made outside the reserve.  A backend caches slot pointers.
 *		They stay valid while the server runs, so finding a slot then
 *		takes no lock.
 *	 ceiling lock (ceiling.c, ShidCeiling.lock): the state file
 *		sharded_id.state, and the ceiling's fields but ceiling_ms and
 *		generation (atomics, read without it).  Only its holder, exclusive,
 *		writes the file, stores ceiling_ms or bumps the generation
 *		(reset_ceiling, lower_floor).  A floor raise holds it, so that no
 *		such lowering comes between its check of the generation and its
 *		change.
 *	 floors lock (floors.c, ShidFloorsShared.lock): the shards' states,
 *		their file sharded_id.shards and the counts beside them; shared to
 *		read, exclusive to change or write.  A state's change and its
 *		slot's copy of it are made under one hold of it.  So are a mint's
 *		reading of a state and the slot's owner answer (owner.c).
 *
 * Spinlocks: each slot's mutex (slots.h) covers the slot's fields below its
 * key.  It is held for a claim (at most one word of the bitmap), an owner
 * change, a floor raise, a reset, a Citus window's change or grant
 * (citus_ask.c, citus_grant.c, citus_frames.c).  Never for a loop over values, a wait, a call that can fail,
 * or another lock.  The Citus state's mutex (citus_int.h) is taken alone, for
 * a few fields: on a node, the bound of the coordinator's own windows it
 * keeps (citus_learn.c).  The greatest paced clock of a coordinator's own
 * windows is an atomic, raised by a CAS loop under no lock (citus_grant.c).
 *
 * Condition variables: each slot's win_cv (citus_ask.c).  Backends wait on it,
 * holding no lock, for the one that asks the coordinator for the shard's
 * window; the asker holds none across its connection either.
 *
 * PostgreSQL's LWLocks that sharded_id takes: AddinShmemInitLock, at
 * start-up only, around the shmem_startup hook (which takes none of ours,
 * only those ShmemInitHash takes); XactTruncationLock, shared, to read the
 * commit log under the floors lock (floors.c, shid_xid_committed).
 */

/*
 * Heavyweight locks: the shard locks below.  Their tags are advisory lock
 * tags (database, class, shard, SHID_LOCK_KIND).  pg_advisory_lock() and
 * its kin never use that fourth field (they use 1 and 2), so no role takes
 * one through those functions: only through the C functions of route.c and
 * fence.c, which say who may call them.  The classes are four ASCII
 * letters:
 *
 *	 route lock ("shir", router): route() in share mode until its
 *		transaction ends; place_shard (_lock_route) in exclusive mode until
 *		its transaction ends; a move's switch in exclusive mode, as a
 *		session lock (_lock_shard) (route.c);
 *	 move lock ("shim", router): one move of a shard at a time, exclusive,
 *		a session lock for the move's whole life (route.c);
 *	 fence ("shid", data node): enter_shard in share mode; a move's freeze,
 *		registration and take-back in exclusive mode, until the
 *		transaction ends (fence.c).
 *
 * The tests' hold points of a move (sharded_id.move_hold) wait on the
 * ordinary advisory lock (1936222579, 0), in SQL (moves.sql).
 * _lock_class(kind) gives SQL the class of each, to read pg_locks.
 */

/* Class of the router's per-shard route locks: "shir" in ASCII. */
#define SHID_ROUTE_LOCK_CLASS	1936222578
/* Class of the router's per-shard move locks: "shim" in ASCII. */
#define SHID_MOVE_LOCK_CLASS	1936222573
/* Class of a data node's per-shard fences: "shid" in ASCII. */
#define SHID_FENCE_LOCK_CLASS	1936222564
/* Fourth field of every tag: pg_advisory_*() use only 1 and 2. */
#define SHID_LOCK_KIND			3

#define SET_LOCKTAG_SHID(tag, class, shard) \
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (class), (uint32) (shard), \
						 SHID_LOCK_KIND)

#endif							/* SHARDED_ID_LOCKS_H */
