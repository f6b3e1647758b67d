/*-------------------------------------------------------------------------
 *
 * src/slots.h
 *	  The generator's slot table: one slot per (layout, shard) in shared
 *	  memory, holding the millisecond it fills and the values taken in it
 *	  (slots.c).  Locks: see locks.h.
 *
 * The struct is here, and not private to slots.c, because next_id
 * (generator.c) claims values from a slot with inlined code; the few
 * helpers that path uses are static inline below, so that moving the table
 * to its own file added no call to it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_SLOTS_H
#define SHARDED_ID_SLOTS_H

#include "postgres.h"

#include "citus.h"
#include "compat.h"
#include "floors.h"
#include "layout.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/hsearch.h"

#define SHID_BITMAP_WORDS	((1 << SHID_MAX_SEQ_BITS) / 64)

/* ShidSlot.fresh has one bit per word of the bitmap. */
StaticAssertDecl(SHID_BITMAP_WORDS <= 64, "sequence field too wide for the fresh mask");

/* Identifies one generator slot: a layout and a shard within it. */
typedef ShidShardKey ShidSlotKey;

/*
 * Citus (citus_ask.c): the shard window a node mints in, in Unix ms, and
 * its renewal; the coordinator's own windows too, which it grants itself.
 * A window holds one lane of its milliseconds: lane of 2 ^ lane_bits equal
 * parts of the slot's values (0 bits: all of them).  Covered by the slot's
 * mutex.
 */
typedef struct ShidWindow
{
	int64		start;			/* its first millisecond */
	int64		end;			/* the first after it; 0: no window */
	int64		renew;			/* a windowed claim at or past it goes to
								 * the slow path first (generator.c): to
								 * renew, to leave, or, in a window of one
								 * lane (its start then), to take the lane */
	int64		renew_at;		/* where the window is renewed, or left */
	int64		next_start;		/* a window granted while this one lasts, */
	int64		next_end;		/* not adjacent to it (or in another lane);
								 * 0: none */
	int16		lane;			/* the window's lane */
	int16		lane_bits;		/* log2 of its frame's lanes */
	int16		next_lane;		/* and the next window's */
	int16		next_lane_bits;
	int64		retry_us;		/* monotonic time before which no backend
								 * asks the coordinator again (a back-off) */
	uint32		retry_members;	/* the membership count it was set under
								 * (citus.c): a change of pg_dist_node ends
								 * it */
	int			asker;			/* pid of the backend asking now, 0: none */
} ShidWindow;

/*
 * Citus (citus_grant.c, citus_frames.c), on the coordinator only: the
 * shard's grants.  A frame is a range of the shard's milliseconds whose
 * values are split in lanes, each granted once; a line of time's frames
 * follow one another.  A shard has one line, whose frames hold every value
 * of their milliseconds, until nodes whose clocks lie a second less a
 * window apart (half a second at least) mint it: then it splits, each line
 * in a part of every millisecond's values, outside the milliseconds of the
 * one line's frames (citus_frames.c).  Covered by the slot's mutex.
 */
#define SHID_GRANT_LINE_BITS	2	/* log2 of the lines a shard may split in */
#define SHID_GRANT_LINES		(1 << SHID_GRANT_LINE_BITS)

typedef struct ShidGrantLine
{
	int64		frame_start;	/* its last frame's first ms; 0: none since
								 * the shard last had one line */
	int64		end;			/* where its part's next frame may start:
								 * its last frame's end, raised past the
								 * whole ms at a merge */
	int64		mono;			/* the monotonic ms of its last grant */
	int64		ref;			/* and the clock of its requester */
	uint64		lanes_taken;	/* the frame's lanes granted, one bit each */
	int16		lane_bits;		/* log2 of its lanes */
	bool		overflow;		/* a request found every lane taken */
	bool		in_part;		/* its lanes split the line's part of the
								 * values, not all of them */
} ShidGrantLine;

typedef struct ShidGrantState
{
	int64		end;			/* the end of the last window granted for
								 * the shard: the greatest of its lines' */
	int64		whole_lo;		/* where the frames of every value since */
	int64		whole_hi;		/* the last merge lie: [whole_lo, whole_hi),
								 * whole_hi 0 while the shard has one line */
	bool		split;			/* in SHID_GRANT_LINES lines */
	int64		refused_mono;	/* the monotonic ms of the last refusal */
	ShidGrantLine line[SHID_GRANT_LINES];
	int64		paced;			/* the shard's paced clock at the last grant
								 * (the wall clock, or, after a step back,
								 * the time it read before, moving on one ms
								 * per ms) */
	int64		mono;			/* the monotonic ms of that grant; 0: none */
} ShidGrantState;

/*
 * One slot per (layout, shard), in a fixed-size shared hash table.  Starting
 * a new millisecond clears only "fresh": a word of "taken" whose bit in
 * "fresh" is clear reads as all zeroes.  So a call touches the slot's first
 * cache line and the one word it needs, not the whole bitmap.
 */
typedef struct ShidSlot
{
	ShidSlotKey key;			/* hash key, must be first */
	slock_t		mutex;			/* protects the fields below */
	uint8		owner;			/* SHID_OWNER_*: may this server mint? */
	int32		used;			/* values taken in ms */
	int32		capacity;		/* values in one ms: 2 ^ (seq_bits - stripe bits) */
	int64		ms;				/* Unix ms being filled */
	int64		floor_ms;		/* the shard's durable floor (floors.c), 0: none */
	uint64		fresh;			/* words of taken[] valid for ms */
	int32		last_value;		/* sequence field of the newest id, or -1 */
	int64		last_ms;		/* and its millisecond */
	int64		paced_us;		/* monotonic clock when a full slot ahead of
								 * the clock last moved on (generator.c) */
	/* Statistics (sharded_id.track_stats), since the last reset. */
	int64		ids;			/* ids minted */
	int64		full_ms_waits;	/* calls that waited for the clock to tick */
	int64		wait_us;		/* time they waited */
	int64		clock_behind;	/* calls that found the clock behind ms */
	int64		max_lag_ms;		/* the most it was behind */
	ShidWindow	win;			/* Citus: the window this node mints in */
	ShidGrantState grant;		/* Citus: on the coordinator only */
	ConditionVariable win_cv;	/* broadcast when an ask ends; not covered
								 * by the mutex */
	uint64		taken[SHID_BITMAP_WORDS];	/* sequence-field values taken */
} ShidSlot;

/* The owner state of a slot (owner.c). */
#define SHID_OWNER_UNKNOWN	0	/* not read yet (owner.c) */
#define SHID_OWNER_MINTS	1	/* this server mints for the shard */
#define SHID_OWNER_RETIRED	2	/* the shard was given away: refuse */

/* What shid_lookup_slot does when the slot of (layout, shard) is not there. */
typedef enum ShidSlotMake
{
	SHID_SLOT_FIND,				/* nothing: returns NULL */
	SHID_SLOT_MINT,				/* next_id: makes it, within the free share
								 * unless reserve.c says the caller may have
								 * it from the whole table */
	SHID_SLOT_ADMIN,			/* the shard's admin functions: makes it from
								 * the whole table */
	SHID_SLOT_SHARE				/* a Citus grant for a node's caller that is
								 * not a superuser: makes it within the free
								 * share unless the shard is in this
								 * database's shard catalog */
} ShidSlotMake;

/*
 * The variables next_id reads on every call, declared hidden so that the
 * compiler addresses them directly, as it did when they were static in
 * generator.c.
 */
extern SHID_INTERNAL HTAB *shid_slots;	/* NULL: not preloaded */
extern SHID_INTERNAL int shid_stripe;	/* sharded_id.stripe */
extern SHID_INTERNAL int shid_stripe_bits;	/* log2(sharded_id.stripes) */

/* GUCs of the slot table, registered by init.c. */
extern int	shid_max_shards;
extern int	shid_max_free_slots;
extern int	shid_stripes;

extern Size shid_slots_shmem_size(void);
extern void shid_slots_shmem_init(LWLock *lock);
extern SHID_NORETURN void shid_not_preloaded(void);
extern ShidSlot *shid_lookup_slot(const ShidLayout *layout, int32 shard, ShidSlotMake make);
extern ShidSlot *shid_admin_slot(const ShidLayout *layout, int32 shard, const char *what);
extern uint8 shid_slot_set_owner(ShidSlot *slot, uint8 owner, bool only_if_unknown);
extern void shid_slot_follow_state(const ShidShardState *state);
extern bool shid_set_shard_floor(ShidSlot *slot, int64 floor_ms, bool move,
								 const uint32 *generation, bool here_only, bool sync);
extern int64 shid_high_water_id(const ShidLayout *layout, int32 shard, int64 ms);
/*
 * A visitor of shid_slots_visit, called with the slot's spinlock held: it
 * must not error, allocate or block.  It returns false to end the scan.
 */
typedef bool (*ShidSlotVisitor) (ShidSlot *slot, void *arg);
extern void shid_slots_visit(ShidSlotVisitor visit, void *arg);
extern void shid_refuse_recovery(const char *what);
extern void shid_refuse_transaction_block(const char *call);

/* Refuse every call where the module was not preloaded. */
static inline void
shid_require_shared_state(void)
{
	if (unlikely(shid_slots == NULL))
		shid_not_preloaded();
}

/* Mark every value of the slot free, for a new millisecond. */
static inline void
shid_slot_reset(ShidSlot *slot, int64 ms)
{
	slot->ms = ms;
	slot->used = 0;
	slot->fresh = 0;
}

/* The stripe's bits of the sequence field, for the layout. */
static inline int64
shid_stripe_base(const ShidLayout *layout)
{
	return (int64) shid_stripe << (layout->seq_bits - shid_stripe_bits);
}

#endif							/* SHARDED_ID_SLOTS_H */
