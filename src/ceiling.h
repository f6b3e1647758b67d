/*-------------------------------------------------------------------------
 *
 * src/ceiling.h
 *	  The durable clock ceiling: a time that no id minted by this server has
 *	  passed, kept in the file sharded_id.state so that it outlives a crash,
 *	  and the highest floor raised under a shard's ids (raise_floor).
 *
 * The generator calls shid_check_clock(now) before it claims a value, and
 * shid_cover_slow(ms) (through its inline fast path in generator.c) before
 * it returns an id carrying the millisecond ms.  The common case of each, a
 * ceiling already far enough ahead, is one atomic read; everything else is
 * in ceiling.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_CEILING_H
#define SHARDED_ID_CEILING_H

#include "postgres.h"

#include "layout.h"
#include "access/xlogdefs.h"
#include "access/xlogreader.h"
#include "lib/stringinfo.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

/* The wall clock, in Unix milliseconds, as clock_timestamp() reads it. */
static inline int64
shid_clock_ms(void)
{
	return shid_timestamptz_to_unix_ms(GetCurrentTimestamp());
}

/*
 * The default of sharded_id.max_clock_jump, in seconds: how far the wall
 * clock may leap ahead of the monotonic clock before next_id refuses, and
 * how far ahead of the clock a ceiling read at start-up may lie before a
 * warning says so when the check is off.
 */
#define SHID_DEFAULT_MAX_CLOCK_JUMP_S	86400

/* How far ahead of the newest id the durable ceiling is pushed, in ms. */
#define SHID_LEASE_MS		1000

/* The ceiling's state in shared memory. */
typedef struct ShidCeiling
{
	LWLock	   *lock;			/* serialises writes of the state file */
	XLogRecPtr	lsn;			/* the WAL the state file holds, up to here */
	int64		floor_ms;		/* new slots start here */
	pg_atomic_uint64 ceiling_ms;	/* durable bound on every ms handed out */
	pg_atomic_uint32 generation;	/* bumped by every reset_ceiling */
	int64		raised_floor_ms;	/* the server-wide floor 1.4's raise_floor
									 * set; durable, never raised again */
	int64		ref_wall_ms;	/* wall clock at the last write ... */
	int64		ref_mono_ms;	/* ... and the monotonic clock then */
	bool		marker_known;	/* the marker file is known to exist */
	int64		writes;			/* statistics: writes of the state file ... */
	int64		write_us;		/* ... and the time they took */
} ShidCeiling;

extern PGDLLIMPORT ShidCeiling *shid_ceiling;
extern PGDLLIMPORT int shid_max_clock_jump;
extern PGDLLIMPORT int shid_wal_rmgr_id;
extern PGDLLIMPORT bool shid_wal_log_ceiling;

extern Size shid_ceiling_shmem_size(void);
extern void shid_ceiling_shmem_init(LWLock *lock);
extern bool shid_cover_slow(int64 ms, uint32 generation);
extern XLogRecPtr shid_ceiling_cover(int64 ms);
extern void shid_check_clock_slow(int64 now_ms);
extern int64 shid_ceiling_reset_begin(void);
extern void shid_ceiling_reset_end(int64 ceiling, int64 floor_ms);
extern void shid_ceiling_bump_generation(void);
extern XLogRecPtr shid_wal_log(uint8 info, const char *data, uint32 len, bool always);
extern void shid_write_durably(const char *tmppath, const char *path,
							   const char *text, size_t len,
							   const char *after_write, const char *after_rename);
extern int64 shid_monotonic_ms(void);
extern int64 shid_monotonic_us(void);
extern int64 shid_ceiling_stats(int64 *writes, int64 *write_us);
extern void shid_ceiling_reset_stats(void);
extern void shid_ceiling_redo(XLogReaderState *record);
extern void shid_ceiling_desc(StringInfo buf, XLogReaderState *record);

/*
 * Refuse to mint when the wall clock has leaped far past the time the
 * monotonic clock says it should read (sharded_id.max_clock_jump).  Only a
 * clock past the ceiling needs a look.
 */
static inline void
shid_check_clock(int64 now_ms)
{
	if (likely(now_ms <= (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms)))
		return;
	shid_check_clock_slow(now_ms);
}

/*
 * The reset generation.  A minter reads it before it claims a value and
 * again after covering it; if a reset_ceiling ran in between, the value may
 * lie above the lowered ceiling, and the minter claims again.
 */
static inline uint32
shid_generation(void)
{
	uint32		generation;

	pg_read_barrier();
	generation = pg_atomic_read_u32(&shid_ceiling->generation);
	pg_read_barrier();
	return generation;
}

#endif							/* SHARDED_ID_CEILING_H */
