/*-------------------------------------------------------------------------
 *
 * src/floors.h
 *	  What this server keeps durably about single shards: each shard's floor
 *	  and whether the server gave the shard away (floors.c; their SQL
 *	  functions are in floors_api.c).  Locks: see locks.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_FLOORS_H
#define SHARDED_ID_FLOORS_H

#include "postgres.h"

#include "access/transam.h"
#include "access/xlogdefs.h"
#include "port/atomics.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "storage/lwlock.h"

/* Identifies one shard of one layout: a generator slot, a shard's state. */
typedef struct ShidShardKey
{
	uint64		layout_key;		/* shid_layout_key() */
	int32		shard;
	int32		pad;			/* always zero, keeps the key a clean blob */
} ShidShardKey;

/*
 * The durable state of one shard on this server.  A shard without one has
 * no floor and was never given away.  The WAL record of a state is this
 * struct as it is: a record of an earlier version, whose database field
 * was padding and always zero, replays as a state of no known database.
 */
typedef struct ShidShardState
{
	ShidShardKey key;			/* hash key, must be first */
	int64		floor_ms;		/* no id of the shard at or before this Unix
								 * ms is minted here; 0: no floor */
	uint8		retired;		/* the latest change gave the shard away */
	uint8		prev_retired;	/* the effective state before that change */
	uint16		flags;			/* in shared memory only (floors.c); zero
								 * in WAL, as the padding it was */
	Oid			database;		/* the database of the latest ownership
								 * change, or of the first floor of a shard
								 * with no state; InvalidOid: not known (a
								 * state of an earlier version) */
	FullTransactionId xid;		/* top-level transaction of the latest
								 * ownership change while it may be
								 * running; SHID_XID_SETTLED once only its
								 * outcome is kept; invalid: the server
								 * never decided who owns the shard */
} ShidShardState;

/*
 * The xid of a state whose ownership change has settled: the frozen xid,
 * which no transaction ever has and which counts as committed, so that
 * "retired" alone holds, and the server keeps the knowledge that it
 * decided the shard's owner (owner.c).
 */
#define SHID_XID_SETTLED	FullTransactionIdFromEpochAndXid(0, FrozenTransactionId)

/* Does the state wait on the outcome of a transaction? */
static inline bool
shid_state_pending(const ShidShardState *state)
{
	return FullTransactionIdIsValid(state->xid) &&
		U64FromFullTransactionId(state->xid) != FrozenTransactionId;
}

/*
 * Did this server decide who owns the shard: retired, taken back or
 * created here?  A state with a floor only says nothing about ownership.
 */
static inline bool
shid_state_owner_known(const ShidShardState *state)
{
	return state->retired || state->prev_retired || FullTransactionIdIsValid(state->xid);
}

/* A claim: a state that names a database and says nothing else (owner.c). */
static inline bool
shid_state_claim(const ShidShardState *state)
{
	return state->floor_ms == 0 && !shid_state_owner_known(state) && OidIsValid(state->database);
}

/* The floors' shared state besides their hash table (floors.c). */
typedef struct ShidFloorsShared
{
	LWLock	   *lock;			/* guards the states and their file */
	int			unsettled_states;	/* states waiting on an xid */
	int			unsynced;		/* states changed since the last sync */
	XLogRecPtr	lsn;			/* the WAL the file holds, up to here */
	pg_atomic_uint64 syncs;		/* syncs done: read without the lock */
} ShidFloorsShared;

extern PGDLLIMPORT ShidFloorsShared *shid_floors_shared;

/* What shid_shard_change does to the retirement. */
#define SHID_KEEP_OWNER		(-1)
#define SHID_OWN			0
#define SHID_RETIRE			1
#define SHID_RETIRE_SETTLED	2	/* retire unconditionally, at once */
#define SHID_CLAIM			3	/* name this database, decide nothing (owner.c) */

extern Size shid_floors_shmem_size(int max_shards);
extern void shid_floors_shmem_init(int max_shards, LWLock *lock);
extern bool shid_shard_state(const ShidShardKey *key, ShidShardState *state);
extern bool shid_shard_state_retired(const ShidShardState *state);
extern long shid_claims_count_locked(void);
extern bool shid_shard_state_locked(const ShidShardKey *key, ShidShardState *state);
extern bool shid_shard_restore_owner_locked(const ShidShardState *expect,
											const ShidShardState *restore);
extern void shid_shard_change_locked(const ShidShardKey *key, int64 floor_ms,
									 bool lower, int owner);
extern void shid_settle_states(void);
extern void shid_states_sync(void);
extern void shid_states_sync_locked(void);
extern void shid_states_sync_xact(bool commit);
extern int	shid_shard_states(ShidShardState **states);
extern int	shid_floors_redo(XLogReaderState *record, ShidShardState **replayed);
extern void shid_floors_desc(StringInfo buf, XLogReaderState *record);

#endif							/* SHARDED_ID_FLOORS_H */
