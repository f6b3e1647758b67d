/*-------------------------------------------------------------------------
 *
 * src/locks.h
 *	  The lock tags of sharded_id's shard locks, in one place.
 *
 * Every shard lock is an advisory lock tag (database, class, shard,
 * SHID_LOCK_KIND) whose fourth field pg_advisory_lock() and its kin never
 * use (they use 1 and 2), so that no role takes one through those
 * functions: only through the C functions of route.c and fence.c, which
 * say who may call them.  The classes are four ASCII letters:
 *
 *	 route lock ("shir", router): route() in share mode, a move's switch and
 *		place_shard in exclusive mode (route.c);
 *	 move lock ("shim", router): one move of a shard at a time (route.c);
 *	 fence ("shid", data node): enter_shard in share mode, a move's freeze,
 *		registration and take-back in exclusive mode (fence.c).
 *
 * _lock_class(kind) gives SQL the class of each, to read pg_locks.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_LOCKS_H
#define SHARDED_ID_LOCKS_H

#include "postgres.h"

#include "miscadmin.h"
#include "storage/lock.h"

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
