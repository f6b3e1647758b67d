/*-------------------------------------------------------------------------
 *
 * src/ceiling.h
 *	  The durable clock ceiling: a time that no id minted by this server has
 *	  passed, kept in the file sharded_id.state so that it outlives a crash.
 *
 * The generator calls shid_cover(ms) before it returns an id carrying the
 * millisecond ms.  The common case, a ceiling already far enough ahead, is
 * one atomic read, inlined here; everything else is in ceiling.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_CEILING_H
#define SHARDED_ID_CEILING_H

#include "postgres.h"

#include "port/atomics.h"
#include "storage/lwlock.h"

/* How far ahead of the newest id the durable ceiling is pushed, in ms. */
#define SHID_LEASE_MS		1000

/* The ceiling's state in shared memory. */
typedef struct ShidCeiling
{
	LWLock	   *lock;			/* serialises writes of the state file */
	int64		floor_ms;		/* ceiling read at startup */
	pg_atomic_uint64 ceiling_ms;	/* durable bound on every ms handed out */
} ShidCeiling;

extern PGDLLIMPORT ShidCeiling *shid_ceiling;

extern Size shid_ceiling_shmem_size(void);
extern void shid_ceiling_shmem_init(LWLock *lock);
extern void shid_cover_slow(int64 ms);

/*
 * Make sure ms is covered by the durable ceiling before an id carrying it is
 * returned.
 */
static inline void
shid_cover(int64 ms)
{
	if ((int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms) >=
		ms + SHID_LEASE_MS / 2)
		return;
	shid_cover_slow(ms);
}

#endif							/* SHARDED_ID_CEILING_H */
