/*-------------------------------------------------------------------------
 *
 * src/generator.c
 *	  next_id(): minting sharded ids that never repeat.
 *
 *	 63 62                                    23 22          10 9          0
 *	+--+----------------------------------------+--------------+------------+
 *	|0 |   milliseconds since the epoch (41)    |  shard (13)  |  seq (10)  |
 *	+--+----------------------------------------+--------------+------------+
 *
 * Every (layout, shard) pair owns a slot in shared memory (slots.c): the
 * millisecond it fills and a bitmap of the sequence-field values taken in
 * it.  A call takes nextval's value if free, else the next free one (seed
 * mode), or the slot's count of values used (counter mode); a full
 * millisecond waits for the clock to tick, and a slot ahead of the clock
 * moves on one millisecond per millisecond of the monotonic clock.  The
 * durable ceiling (ceiling.c) or the shard's floor (floors.c) covers every
 * millisecond handed out.  The design, with why: doc/sharded_id-design.md,
 * "How uniqueness is guaranteed".
 *
 * Here also: the slot's owner state (owner.c) is checked before a value is
 * taken and again under the claim's spinlock; stripes put
 * sharded_id.stripe in the top bits of the sequence field; on a Citus node
 * a windowed claim compares the slot's millisecond with its window's
 * renewal point first (citus_ask.c); sharded_id.minting = off refuses.
 *
 * Locks: a slot's spinlock covers its fields below the key, for a claim
 * (at most the free run after the first value, in one bitmap word), an
 * owner change, a floor raise or a reset: never a loop over values, a wait
 * or a call that can fail.  reset_ceiling and lower_floor bump the
 * ceiling's generation; a minter they overtook claims again.  The order of
 * every lock: locks.h.
 *
 * next_id's path calls only what is here or static inline in slots.h,
 * ceiling.h and layout.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "ceiling.h"
#include "commands/sequence.h"
#include "compat.h"
#include "floors.h"
#include "fmgr.h"
#include "funcapi.h"
#include "generator.h"
#include "layout.h"
#include "miscadmin.h"
#include "owner.h"
#include "port/atomics.h"
#include "port/pg_bitutils.h"
#include "slots.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

/* Longest a call waits for the wall clock to leave a full millisecond. */
#define SHID_MAX_WAIT_MS	1000

/* GUCs (init.c registers them) */
bool		shid_track_stats = true;
bool		shid_minting = true;

/* The error of a call on a server whose minting is switched off. */
static SHID_NORETURN void pg_noinline
shid_minting_off(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_SHID_MINTING_OFF),
			 errmsg("minting sharded ids is switched off on this server"),
			 errdetail("sharded_id.minting is off."),
			 errhint("Mint ids on a server that mints, such as the coordinator of a distributed engine, or turn sharded_id.minting on and reload.")));
}

/* The error of a call for a shard that this server gave away. */
static SHID_NORETURN void pg_noinline
shid_shard_retired(int32 shard)
{
	ereport(ERROR,
			(errcode(ERRCODE_SHID_SHARD_RETIRED),
			 errmsg("shard %d is not minted on this server", shard),
			 errdetail("This server gave shard %d away, by retire_shard, drop_shard or a move to another server, which may be minting its ids now.",
					   shard),
			 errhint("Mint the shard's ids on the server that holds it, or take the shard back here with sharded_id.create_shard(%d).",
					 shard)));
}

/*
 * Word w of the taken bitmap.  Bits at or beyond capacity read as taken, so
 * the search never offers them.
 */
static inline uint64
shid_slot_word(const ShidSlot *slot, int w, int capacity)
{
	uint64		word = (slot->fresh & (UINT64CONST(1) << w)) ? slot->taken[w] : 0;

	if (capacity < (w + 1) * 64)
		word |= ~UINT64CONST(0) << (capacity - w * 64);
	return word;
}

/*
 * Take free sequence-field values: the wanted one if free, else the next
 * free one after it, wrapping around; then as many of the free values that
 * follow it in the same word of the bitmap as make up n in all.  Sets
 * *first and returns how many were taken (1 to 64), which are *first,
 * *first + 1, ...  The caller holds the mutex and has made sure a value is
 * free; the search visits each word once at most, and the run is found
 * with bit operations on one word.  Returns 0 if no value was free after
 * all, which cannot happen; the caller reports it once it has released the
 * mutex.
 */
static pg_attribute_always_inline int
shid_slot_take(ShidSlot *slot, int capacity, int64 wanted, int n, int *first)
{
	int			words = (capacity + 63) / 64;
	int			value = (int) ((uint64) wanted & (uint64) (capacity - 1));
	int			w = value / 64;
	uint64		word = shid_slot_word(slot, w, capacity);
	uint64		free_bits = ~word & (~UINT64CONST(0) << (value % 64));

	Assert(slot->used < capacity);

	for (int i = 0; i <= words; i++)
	{
		if (free_bits != 0)
		{
			int			bit = pg_rightmost_one_pos64(free_bits);
			/* The values after it, in its word: a run of free ones, then not. */
			uint64		after = (bit < 63) ? ~word >> (bit + 1) : 0;
			int			count = Min(n, 1 + pg_rightmost_one_pos64(~after));
			uint64		mask = (count == 64) ? ~UINT64CONST(0) :
				((UINT64CONST(1) << count) - 1) << bit;

			slot->taken[w] = word | mask;
			slot->fresh |= UINT64CONST(1) << w;
			slot->used += count;
			*first = w * 64 + bit;
			return count;
		}
		w = (w + 1) % words;
		word = shid_slot_word(slot, w, capacity);
		free_bits = ~word;
	}
	return 0;
}

/*
 * Take free values of the slot's lane (a Citus window shared with other
 * nodes, slots.h): as shid_slot_take, but only among the lane's values,
 * the lowest free one in counter mode, else the wanted one's place in the
 * lane or the next free after it.  Returns 0 if the lane has none free in
 * this millisecond.  Mutex held.  Off next_id's path: only a windowed
 * claim of a lane comes here.
 */
static pg_noinline int
shid_slot_take_lane(ShidSlot *slot, int capacity, bool counter, int64 wanted, int n,
					int *first)
{
	int			size = capacity >> slot->win.lane_bits;
	int			lo = slot->win.lane * size;
	int			start = counter ? lo : lo + (int) ((uint64) wanted & (uint64) (size - 1));

	for (int pass = 0; pass < 2; pass++)
	{
		int			from = pass == 0 ? start : lo;
		int			to = pass == 0 ? lo + size : start;

		while (from < to)
		{
			int			w = from / 64;
			int			stop = Min(to, (w + 1) * 64) - w * 64;
			uint64		word = shid_slot_word(slot, w, capacity);
			uint64		mask = (stop == 64 ? ~UINT64CONST(0) : ((UINT64CONST(1) << stop) - 1)) &
				(~UINT64CONST(0) << (from % 64));
			uint64		free_bits = ~word & mask;

			if (free_bits != 0)
			{
				int			bit = pg_rightmost_one_pos64(free_bits);
				uint64		run = ~(free_bits >> bit);	/* its first 1: the run's end */
				int			count = Min(n, run == 0 ? 64 : pg_rightmost_one_pos64(run));

				slot->taken[w] = word | (((count == 64) ? ~UINT64CONST(0) :
										  ((UINT64CONST(1) << count) - 1)) << bit);
				slot->fresh |= UINT64CONST(1) << w;
				slot->used += count;
				*first = w * 64 + bit;
				return count;
			}
			from = (w + 1) * 64;
		}
	}
	return 0;
}

/* The error of a slot whose bitmap disagrees with its count: a bug. */
static pg_noinline void
shid_slot_corrupt(int used, int capacity)
{
	elog(ERROR, "sharded_id slot has no free value although %d of %d are used",
		 used, capacity);
}

/*
 * A full slot whose millisecond (full_ms) lies ahead of the clock: move it
 * to the next millisecond once the monotonic clock says a millisecond has
 * passed since it last moved on this way, so that it never outruns real
 * time.  Returns 0 if it moved (or someone else moved it or took a value
 * back), else the microseconds the caller is to sleep before it looks
 * again.
 */
static pg_noinline int64
shid_slot_pace(ShidSlot *slot, int64 full_ms, int capacity)
{
	int64		mono_us = shid_monotonic_us();
	int64		wait_us = 0;

	SpinLockAcquire(&slot->mutex);
	if (slot->ms == full_ms && slot->used >= capacity)
	{
		wait_us = 1000 - (mono_us - slot->paced_us);
		if (wait_us <= 0)
		{
			shid_slot_reset(slot, full_ms + 1);
			slot->paced_us = mono_us;
			wait_us = 0;
		}
	}
	SpinLockRelease(&slot->mutex);
	return Min(wait_us, 1000);
}

/*
 * The first mint of a slot since start-up or promotion, or since an
 * ownership change ended: the server's state of the shard decides, or, for
 * a shard whose owner the server never decided, the shard catalog of this
 * database, which a restore of a whole database brings along (owner.c).
 * A shard that mints here with no state is claimed for this database.
 */
static pg_noinline void
shid_slot_learn_owner(ShidSlot *slot, const ShidLayout *layout)
{
	if (!shid_owner_learn(slot, &slot->key, layout) && slot->owner == SHID_OWNER_MINTS)
		shid_owner_claim(&slot->key);
}

/*
 * The slot's millisecond full_ms is used up: wait until a claim may try
 * again, and read the clock into *now_ms.  Off the claim's path.
 */
static pg_noinline void
shid_slot_wait_tick(ShidSlot *slot, int64 full_ms, int capacity, int64 *now_ms)
{
	int64		wait_start;

	/*
	 * This millisecond is used up.  A slot ahead of the clock as read
	 * now moves on as real time passes (shid_slot_pace); otherwise wait
	 * for the clock to leave the millisecond, for at most
	 * SHID_MAX_WAIT_MS by the monotonic clock.  A wall clock that does
	 * not move cannot time out a statement either.
	 */
	wait_start = shid_monotonic_us();
	*now_ms = shid_clock_ms();
	if (*now_ms < full_ms)
	{
		int64		pace_us;

		while ((pace_us = shid_slot_pace(slot, full_ms, capacity)) > 0)
		{
			CHECK_FOR_INTERRUPTS();
			pg_usleep(pace_us);
		}
		*now_ms = shid_clock_ms();
		return;
	}
	while (*now_ms == full_ms)
	{
		CHECK_FOR_INTERRUPTS();
		SPIN_DELAY();
		*now_ms = shid_clock_ms();
		if (*now_ms == full_ms &&
			shid_monotonic_us() - wait_start > SHID_MAX_WAIT_MS * INT64CONST(1000))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the system clock has not advanced for %d ms", SHID_MAX_WAIT_MS),
					 errdetail("All %d ids of the current millisecond are taken, and next_id waits for the clock to tick.",
							   capacity),
					 errhint("Check the system clock.")));
	}

	if (shid_track_stats)
	{
		int64		waited = shid_monotonic_us() - wait_start;

		SpinLockAcquire(&slot->mutex);
		slot->full_ms_waits++;
		slot->wait_us += waited;
		SpinLockRelease(&slot->mutex);
	}
}

/*
 * After a claim of claimed values from first on: the millisecond and the
 * floor for the caller, the newest value, the count; releases the mutex.
 */
static pg_attribute_always_inline int
shid_slot_claimed(ShidSlot *slot, int claimed, int first, int64 *ms, int64 *floor_ms)
{
	*ms = slot->ms;
	*floor_ms = slot->floor_ms;
	slot->last_value = first + claimed - 1;
	slot->last_ms = slot->ms;
	if (shid_track_stats)
		slot->ids += claimed;
	SpinLockRelease(&slot->mutex);
	return claimed;
}

/*
 * Claim up to n (millisecond, sequence-field value) pairs of the slot that no
 * other call has claimed, all in one millisecond and consecutive: *first,
 * *first + 1, ...  In seed mode the first is as close to wanted as is free;
 * in counter mode it is the slot's next count (its number of values used),
 * so a slot that only counter mode uses hands out 0, 1, 2, ... in every
 * millisecond.  At most the free run after the first value in its word of
 * the bitmap is claimed at once (64 values), so that the spinlock is held
 * for a bounded time whatever n is.  Returns how many were claimed, and the
 * millisecond in *ms and the shard's durable floor in *floor_ms; 0 if this
 * server gave the shard away; -1, with nothing claimed, if windowed (a
 * backend minting in Citus shard windows) and the slot's millisecond lies
 * at or past the point where its window is to be renewed (citus_ask.c), which
 * also lies at or before the window's end.  *now_ms is the
 * clock as the caller read it, and is updated if the call had to wait.
 * Inlined into each caller, so that next_id's constant n = 1 drops the
 * run's arithmetic from its path.
 */
static pg_attribute_always_inline int
shid_slot_claim(ShidSlot *slot, bool counter, int64 wanted, int64 *now_ms,
				int n, int *first, int64 *ms, int64 *floor_ms, bool windowed)
{
	int			capacity = slot->capacity;

	for (;;)
	{
		int64		full_ms;

		SpinLockAcquire(&slot->mutex);
		if (unlikely(slot->owner == SHID_OWNER_RETIRED))
		{
			SpinLockRelease(&slot->mutex);
			return 0;
		}
		if (*now_ms > slot->ms)
			shid_slot_reset(slot, *now_ms);
		else if (*now_ms < slot->ms && shid_track_stats)
		{
			slot->clock_behind++;
			slot->max_lag_ms = Max(slot->max_lag_ms, slot->ms - *now_ms);
		}

		/*
		 * On Citus, a millisecond outside the shard window this node holds,
		 * or past its middle, goes to citus_ask.c first, before a value is
		 * taken: to get a window, or to renew it ahead; so does every
		 * millisecond of a window of one lane (shid_slot_claim_slow).
		 */
		if (windowed && unlikely(slot->ms >= slot->win.renew))
		{
			SpinLockRelease(&slot->mutex);
			return -1;
		}
		if (slot->used < capacity)
		{
			int			claimed = shid_slot_take(slot, capacity,
												 counter ? slot->used : wanted,
												 n, first);

			if (unlikely(claimed == 0))
			{
				int			used = slot->used;

				SpinLockRelease(&slot->mutex);
				shid_slot_corrupt(used, capacity);
			}
			return shid_slot_claimed(slot, claimed, *first, ms, floor_ms);
		}
		full_ms = slot->ms;
		SpinLockRelease(&slot->mutex);

		shid_slot_wait_tick(slot, full_ms, capacity, now_ms);
	}
}

/*
 * A windowed claim that shid_slot_claim sent here (it returned -1): where
 * the slot's millisecond lies in a window of one lane before its renewal
 * point, take the lane's values, waiting for the clock to tick once they
 * are all taken; else get or renew a window (citus_ask.c) and claim
 * again.  Returns as shid_slot_claim, never -1.  Off next_id's path: only
 * Citus nodes minting a shard in lanes come here for every claim.
 */
static pg_noinline int
shid_slot_claim_slow(ShidSlot *slot, bool counter, int64 wanted, int64 *now_ms,
					 int n, int *first, int64 *ms, int64 *floor_ms)
{
	int			capacity = slot->capacity;

	for (;;)
	{
		int			claimed;
		int64		full_ms;

		SpinLockAcquire(&slot->mutex);
		if (slot->owner == SHID_OWNER_RETIRED)
		{
			SpinLockRelease(&slot->mutex);
			return 0;
		}
		if (*now_ms > slot->ms)
			shid_slot_reset(slot, *now_ms);
		/* A window ahead: every value of its start is free (citus_slot.h). */
		if (slot->win.lane_bits != 0 && slot->ms < slot->win.start)
			shid_slot_reset(slot, slot->win.start);
		if (slot->win.lane_bits == 0 || slot->ms >= slot->win.renew_at)
		{
			SpinLockRelease(&slot->mutex);
			shid_window_slow(slot);
			*now_ms = shid_clock_ms();
			claimed = shid_slot_claim(slot, counter, wanted, now_ms, n, first, ms, floor_ms, true);
			if (claimed >= 0)
				return claimed;
			continue;
		}
		if (slot->used < capacity &&
			(claimed = shid_slot_take_lane(slot, capacity, counter, wanted, n, first)) > 0)
			return shid_slot_claimed(slot, claimed, *first, ms, floor_ms);
		/* The lane is full: so is the millisecond, here. */
		slot->used = capacity;
		full_ms = slot->ms;
		SpinLockRelease(&slot->mutex);
		shid_slot_wait_tick(slot, full_ms, capacity, now_ms);
	}
}

/*
 * Minting is off, or this backend has yet to learn whether it mints in
 * Citus shard windows (citus.c): refuse, or learn it.
 */
static pg_noinline void
shid_mint_closed(void)
{
	if (!shid_minting)
		shid_minting_off();
	shid_citus_learn_node();
	shid_mint_open = true;
}

/*
 * Everything a call checks before it takes a sequence value, so that a
 * rejected call consumes none: the shard, the preload, the clock.  Returns
 * the clock reading.
 */
static int64
shid_prepare(const ShidLayout *layout, int32 shard)
{
	int64		now_ms;

	shid_check_shard(layout, shard);
	shid_require_shared_state();
	if (unlikely(!shid_mint_open))
		shid_mint_closed();
	if (unlikely(RecoveryInProgress()))
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot mint sharded ids during recovery"),
				 errhint("Mint ids on the primary; a standby starts minting once promoted.")));
	/* The time of the call, read once, like the seed's clock_timestamp(). */
	now_ms = shid_clock_ms();
	shid_check_unix_ms(layout, now_ms);
	shid_check_clock(now_ms);
	return now_ms;
}

/*
 * Refuse (SI001) a shard this server gave away, before a sequence value is
 * taken, so that a refused call consumes none.  Returns the shard's slot,
 * or NULL if it has none yet: a call that then fails nextval's checks makes
 * no slot, so a role without rights on any sequence cannot fill the slot
 * table.  The claim checks the owner state again under the slot's
 * spinlock, which decides.
 */
static inline ShidSlot *
shid_owned_slot(const ShidLayout *layout, int32 shard)
{
	ShidSlot   *slot = shid_lookup_slot(layout, shard, SHID_SLOT_FIND);

	if (likely(slot != NULL && slot->owner == SHID_OWNER_MINTS))
		return slot;
	if (slot != NULL)
	{
		if (slot->owner == SHID_OWNER_UNKNOWN)
			shid_slot_learn_owner(slot, layout);
		if (slot->owner == SHID_OWNER_RETIRED)
			shid_shard_retired(shard);
	}
	else
	{
		ShidShardKey key;

		memset(&key, 0, sizeof(key));
		key.layout_key = shid_layout_key(layout);
		key.shard = shard;
		if (shid_owner_learn(NULL, &key, layout))
			shid_shard_retired(shard);
	}
	return slot;
}

/*
 * The shard's slot, made if need be, once the caller's checks passed.  A
 * new slot stores what shid_owned_slot learnt, unless a retirement stored
 * its state first; the claim reads that state under the slot's spinlock.
 * A new slot of a shard with no state also claims the shard for this
 * database (shid_owner_claim).
 */
static inline ShidSlot *
shid_mint_slot(const ShidLayout *layout, int32 shard, ShidSlot *slot)
{
	if (unlikely(slot == NULL))
	{
		slot = shid_lookup_slot(layout, shard, SHID_SLOT_MINT);
		(void) shid_slot_set_owner(slot, SHID_OWNER_MINTS, true);
		shid_owner_claim(&slot->key);
	}
	return slot;
}

/*
 * The slow path of shid_cover_shard.  A shard whose slot runs more than a
 * lease ahead of the clock does so on its own floor: its ids raise its
 * floor, a lease at a time, not the ceiling that every slot starts at after
 * a restart; that raise is synced (floors.c) before the id is returned.
 * Any other raises the ceiling (ceiling.c).
 *
 * Why no id relies on a floor that raise_floor set in a transaction not yet
 * committed (and so not yet synced): raise_floor moves the slot to its
 * floor, full, so every id after it carries a later millisecond, which the
 * ceiling or a floor raised here covers, both synced before the id is
 * returned.  A crash before the commit may lose the floor, but the ceiling
 * then still lies past every id minted above it.
 */
static pg_noinline void
shid_cover_shard_slow(ShidSlot *slot, int64 ms, int64 floor_ms, uint32 generation)
{
	if (floor_ms > 0 && ms > shid_clock_ms() + SHID_LEASE_MS)
		(void) shid_set_shard_floor(slot, ms + SHID_LEASE_MS, false, &generation, false, true);
	else if (shid_cover_slow(ms, generation))
	{
		/* Every half second of minting: settle the states of shards. */
		shid_settle_states();
	}
}

/*
 * Make sure an id of the slot carrying the millisecond ms is durably
 * covered before it is returned: by the ceiling, or by the shard's own
 * floor (floor_ms, read with the claim).  The common case is one atomic
 * read.
 */
static inline void
shid_cover_shard(ShidSlot *slot, int64 ms, int64 floor_ms, uint32 generation)
{
	if (likely((int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms) >=
			   ms + SHID_LEASE_MS / 2))
		return;
	if (ms <= floor_ms)
		return;
	shid_cover_shard_slow(slot, ms, floor_ms, generation);
}

/*
 * shid_mint for a backend that mints in Citus shard windows: its claims
 * check the window first, and may take the slow path (citus_ask.c, or a
 * lane of the window).  Off next_id's path on a server without Citus.
 */
static pg_noinline int64
shid_mint_windowed(const ShidLayout *layout, ShidSlot *slot, int32 shard, int64 now_ms,
				   bool counter, int64 wanted)
{
	for (;;)
	{
		uint32		generation = shid_generation();
		int64		ms;
		int64		floor_ms;
		int			value;

		int			claimed = shid_slot_claim(slot, counter, wanted, &now_ms, 1,
											  &value, &ms, &floor_ms, true);

		if (claimed < 0)
			claimed = shid_slot_claim_slow(slot, counter, wanted, &now_ms, 1, &value, &ms, &floor_ms);
		if (claimed == 0)
			shid_shard_retired(shard);
		shid_check_unix_ms(layout, ms);
		shid_cover_shard(slot, ms, floor_ms, generation);
		if (shid_generation() == generation)
			return shid_pack(layout, ms, shard, shid_stripe_base(layout) | value);
	}
}

/*
 * Mint one id of the shard from its slot: in counter mode, or in seed mode
 * with wanted (nextval) as the sequence-field value it would like.
 */
static inline int64
shid_mint(const ShidLayout *layout, ShidSlot *slot, int32 shard, int64 now_ms,
		  bool counter, int64 wanted)
{
	int64		ms;
	int64		floor_ms;
	int			value;
	uint32		generation;

	/* On Citus: a window first, or a lane of it. */
	if (unlikely(shid_windowed))
		return shid_mint_windowed(layout, slot, shard, now_ms, counter, wanted);
	for (;;)
	{
		int			claimed;

		generation = shid_generation();
		claimed = shid_slot_claim(slot, counter, wanted, &now_ms, 1,
								  &value, &ms, &floor_ms, false);
		if (unlikely(claimed == 0))
			shid_shard_retired(shard);
		/* A slot ahead of the clock may have moved past the layout's end. */
		shid_check_unix_ms(layout, ms);
		shid_cover_shard(slot, ms, floor_ms, generation);
		if (likely(shid_generation() == generation))
			break;
	}
	return shid_pack(layout, ms, shard, shid_stripe_base(layout) | value);
}

/*
 * next_id(shard_id integer, seq regclass [, layout text]) RETURNS bigint
 *
 * A new id for the shard, in the default layout or the one named, its low
 * bits taken from nextval(seq).  Never returns the same id twice for a
 * shard of a cluster.
 */
SHID_FUNCTION_INFO(shid_next_id);
Datum
shid_next_id(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 2);
	int32		shard = PG_GETARG_INT32(0);
	int64		now_ms = shid_prepare(layout, shard);

	/* A shard given away is refused before nextval consumes a value. */
	ShidSlot   *slot = shid_owned_slot(layout, shard);
	int64		wanted = nextval_internal(PG_GETARG_OID(1), true);

	PG_RETURN_INT64(shid_mint(layout, shid_mint_slot(layout, shard, slot), shard, now_ms,
							  false, wanted));
}

/*
 * next_id(shard_id integer) RETURNS bigint
 * next_id_in_layout(shard_id integer, layout text) RETURNS bigint
 *
 * Counter mode: a new id for the shard with no sequence.  Its sequence
 * field counts up within each millisecond in the order the slot hands
 * values out, so a shard's ids strictly increase in the order they are
 * minted, across every session of the cluster.
 */
SHID_FUNCTION_INFO(shid_next_counter_id);
Datum
shid_next_counter_id(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	int32		shard = PG_GETARG_INT32(0);
	int64		now_ms = shid_prepare(layout, shard);

	ShidSlot   *slot = shid_owned_slot(layout, shard);

	PG_RETURN_INT64(shid_mint(layout, shid_mint_slot(layout, shard, slot), shard, now_ms, true, 0));
}

/* Most ids one next_ids call reserves. */
#define SHID_MAX_BATCH 1000000

/*
 * Reserve n ids of the shard into ids[], a millisecond's worth at a time,
 * from the same slot as single calls, so that they never repeat its ids.
 * In seed mode the sequence fields start at nextval(seqoid), taken once even
 * for n = 0, so that every call checks the sequence.
 */
static void
shid_mint_batch(const ShidLayout *layout, int32 shard, int32 n, bool counter,
				Oid seqoid, int64 *ids)
{
	int64		now_ms;
	int64		wanted = 0;
	int64		stripe_base;
	int			done = 0;
	ShidSlot   *slot;

	if (n < 0 || n > SHID_MAX_BATCH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch size %d is out of range", n),
				 errdetail("Batches must hold between 0 and %d ids.", SHID_MAX_BATCH)));
	now_ms = shid_prepare(layout, shard);
	stripe_base = shid_stripe_base(layout);
	slot = shid_owned_slot(layout, shard);
	if (!counter)
		wanted = nextval_internal(seqoid, true);
	if (n == 0)
		return;
	slot = shid_mint_slot(layout, shard, slot);

	while (done < n)
	{
		int64		ms;
		int64		floor_ms;
		int			first;
		int			claimed;
		uint32		generation = shid_generation();

		claimed = shid_slot_claim(slot, counter, wanted, &now_ms, n - done,
								  &first, &ms, &floor_ms, shid_windowed);
		if (claimed == 0)
			shid_shard_retired(shard);
		if (claimed < 0)
		{
			/* On Citus: a window first, or a lane of it. */
			claimed = shid_slot_claim_slow(slot, counter, wanted, &now_ms, n - done,
										   &first, &ms, &floor_ms);
			if (claimed == 0)
				shid_shard_retired(shard);
		}
		shid_check_unix_ms(layout, ms);
		shid_cover_shard(slot, ms, floor_ms, generation);
		/* A reset overtook the claim: its values are dropped. */
		if (shid_generation() != generation)
			continue;
		for (int i = 0; i < claimed; i++)
			ids[done + i] = shid_pack(layout, ms, shard, stripe_base | (first + i));
		done += claimed;
		wanted += claimed;
		now_ms = shid_clock_ms();
	}
}

/*
 * Return the ids a batch function reserved on its first call, one per call.
 * n, and seqoid in seed mode, are read from the argument positions given.
 */
static Datum
shid_next_ids_srf(FunctionCallInfo fcinfo, bool counter, int n_arg,
				  int layout_arg)
{
	FuncCallContext *funcctx;
	int64	   *ids;

	if (SRF_IS_FIRSTCALL())
	{
		const ShidLayout *layout = shid_layout_arg(fcinfo, layout_arg);
		int32		n = PG_GETARG_INT32(n_arg);
		MemoryContext oldcontext;

		funcctx = SRF_FIRSTCALL_INIT();
		oldcontext = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		ids = palloc(Max(Min(n, SHID_MAX_BATCH), 1) * sizeof(int64));
		MemoryContextSwitchTo(oldcontext);
		shid_mint_batch(layout, PG_GETARG_INT32(0), n, counter,
						counter ? InvalidOid : PG_GETARG_OID(1), ids);
		funcctx->user_fctx = ids;
		funcctx->max_calls = n;
	}

	funcctx = SRF_PERCALL_SETUP();
	ids = (int64 *) funcctx->user_fctx;
	if (funcctx->call_cntr < funcctx->max_calls)
	{
		/* SRF_RETURN_NEXT advances call_cntr before using its argument. */
		Datum		id = Int64GetDatum(ids[funcctx->call_cntr]);

		SRF_RETURN_NEXT(funcctx, id);
	}
	SRF_RETURN_DONE(funcctx);
}

/*
 * next_ids(shard_id integer, seq regclass, n integer [, layout text])
 *		RETURNS SETOF bigint
 *
 * Reserve n ids for the shard in one go, for loaders.  One nextval(seq)
 * picks where the sequence fields start.
 */
SHID_FUNCTION_INFO(shid_next_ids);
Datum
shid_next_ids(PG_FUNCTION_ARGS)
{
	return shid_next_ids_srf(fcinfo, false, 2, 3);
}

/*
 * next_ids(shard_id integer, n integer) RETURNS SETOF bigint
 * next_ids_in_layout(shard_id integer, n integer, layout text)
 *		RETURNS SETOF bigint
 *
 * Counter mode: reserve n ids for the shard in one go, strictly increasing
 * and after every id of the shard minted before.
 */
SHID_FUNCTION_INFO(shid_next_counter_ids);
Datum
shid_next_counter_ids(PG_FUNCTION_ARGS)
{
	return shid_next_ids_srf(fcinfo, true, 1, 2);
}

/*
 * The names 2.1's scripts call next_id, next_ids and their counter forms
 * by.  No library of a version before 2.1 has them: a server that loads one
 * under 2.1's scripts (a node installed back to 1.6's package, or started
 * from an old image, after the update) refuses every call with "could not
 * find function "shid_next_id_v21"", and mints no id of its old layout
 * beside the cluster's.  The names of before stay for 2.0's scripts, which
 * a database keeps until ALTER EXTENSION UPDATE.  Aliases of the same
 * code where the object format has them (ELF): a call costs nothing more.
 * SHID_NO_NAMES_2_1 builds a library without them, as an older one
 * (test/t/043_library_version.pl).
 */
#ifndef SHID_NO_NAMES_2_1
#if defined(__ELF__)
#define SHID_NAME_2_1(name, target) \
extern PGDLLEXPORT Datum name(PG_FUNCTION_ARGS) __attribute__((alias(#target))); \
PG_FUNCTION_INFO_V1(name)
#else
/* No aliases in the object format: a function that calls the other. */
#define SHID_NAME_2_1(name, target) \
SHID_FUNCTION_INFO(name); \
Datum name(PG_FUNCTION_ARGS) { return target(fcinfo); } \
extern int no_such_variable
#endif

SHID_NAME_2_1(shid_next_id_v21, shid_next_id);
SHID_NAME_2_1(shid_next_ids_v21, shid_next_ids);
SHID_NAME_2_1(shid_next_counter_id_v21, shid_next_counter_id);
SHID_NAME_2_1(shid_next_counter_ids_v21, shid_next_counter_ids);
#endif
