/*-------------------------------------------------------------------------
 *
 * src/generator.c
 *	  next_id(): minting sharded ids that never repeat, and the shared state
 *	  that makes that so.
 *
 *	 63 62                                    23 22          10 9          0
 *	+--+----------------------------------------+--------------+------------+
 *	|0 |   milliseconds since the epoch (41)    |  shard (13)  |  seq (10)  |
 *	+--+----------------------------------------+--------------+------------+
 *
 * The seed formula, (ms << 23) | (shard << 10) | (nextval % 1024), repeats
 * an id as soon as one shard is asked for more than 1024 ids in a
 * millisecond, or two sessions with cached sequences meet on the same low
 * bits.  Here every (layout, shard) pair owns a slot in shared memory
 * holding the millisecond it is filling and a bitmap of the sequence-field
 * values already handed out in that millisecond:
 *
 *	 - A call reads the clock and, in seed mode, takes nextval.  If the
 *	   millisecond is new, the bitmap starts empty.  If nextval's low bits
 *	   are free, the id is bit for bit the seed's; otherwise the next free
 *	   value is taken.  In counter mode the value is the slot's count of
 *	   values used, so a shard's ids strictly increase in minting order.
 *	 - When all values of the current millisecond are taken, the caller
 *	   waits (at most the rest of that millisecond) for the clock to tick;
 *	   a clock that does not tick for SHID_MAX_WAIT_MS, by the monotonic
 *	   clock, is an error.
 *	 - When the clock reads earlier than the slot's millisecond (it was
 *	   stepped back), the slot keeps its millisecond and, once that is
 *	   full, moves to the next one without waiting.  Ids thus never go
 *	   back in time and never repeat; their time stays frozen at the
 *	   high-water mark, creeping forward 1 ms per 1024 ids, until the clock
 *	   catches up.
 *
 * Shared memory does not survive a restart, so a durable ceiling
 * (ceiling.c) covers every millisecond handed out, and new slots start at
 * the ceiling the previous run left, or that a standby replayed from WAL:
 * new ids are later than anything minted before a crash, a restart, a clock
 * step or a failover.
 *
 * Each slot also counts what it does (generator_stats), under the same
 * spinlock, unless sharded_id.track_stats is off.
 *
 * Across servers:
 *	 - A shard's floor (raise_floor, floors.c) moves its slot past the
 *	   high-water mark of the server it came from, durably, so every id
 *	   minted here afterwards is greater, whatever this clock reads, after a
 *	   restart and after a failover.  It is the shard's own: a slot starts
 *	   at the later of the ceiling and its floor, and a slot running ahead
 *	   of the clock on its floor raises its floor, not the ceiling.
 *	 - Each slot caches whether this server owns the shard (owner.c), from
 *	   the server's state of the shard and the database's catalog; a
 *	   retired shard is refused before a sequence value is taken, and again
 *	   under the same spinlock as the claim.
 *	 - With sharded_id.stripes = 2^k, the top k bits of the sequence field
 *	   hold sharded_id.stripe, so servers with distinct stripes never mint
 *	   the same id for a shard; each mints 2^(seq_bits - k) ids per ms.
 *	 - sharded_id.minting = off refuses every call, for servers that must
 *	   never mint.
 *
 * Locking rules:
 *	 - The slot table's LWLock guards inserts (exclusive) and scans
 *	   (shared), and the count of slots made outside the reserve; a backend
 *	   caches slot pointers, which stay valid while the server runs, and
 *	   then takes no lock to find a slot.
 *	 - A slot is made from the whole table for the admin functions, and for
 *	   next_id when reserve.c says the shard is the catalog's or the caller
 *	   a superuser; any other next_id makes at most
 *	   sharded_id.max_free_slots slots, so that a role with a temporary
 *	   sequence cannot take the slots the catalog's shards need.
 *	 - A slot's spinlock covers its fields below the key: a claim, which
 *	   takes at most the free run of values that follows the first in its
 *	   word of the bitmap, an owner change, a floor raise, a reset.  Never a
 *	   loop over values, a wait or a call that can fail.
 *	 - reset_ceiling holds the slot table exclusively and the ceiling lock
 *	   (ceiling.c) while it lowers the slots; minters see its generation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/rmgr.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "ceiling.h"
#include "citus.h"
#include "commands/sequence.h"
#include "compat.h"
#include "floors.h"
#include "owner.h"
#include "reserve.h"
#include "privs.h"
#include "fmgr.h"
#include "funcapi.h"
#include "layout.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "port/pg_bitutils.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_MODULE_MAGIC;

#define SHID_BITMAP_WORDS	((1 << SHID_MAX_SEQ_BITS) / 64)

/* ShidSlot.fresh has one bit per word of the bitmap. */
StaticAssertDecl(SHID_BITMAP_WORDS <= 64, "sequence field too wide for the fresh mask");

/* Longest a call waits for the wall clock to leave a full millisecond. */
#define SHID_MAX_WAIT_MS	1000

/* Identifies one generator slot: a layout and a shard within it. */
typedef ShidShardKey ShidSlotKey;

/*
 * One slot per (layout, shard), in a fixed-size shared hash table.  Starting
 * a new millisecond clears only "fresh": a word of "taken" whose bit in
 * "fresh" is clear reads as all zeroes.  So a call touches the slot's first
 * cache line and the one word it needs, not the whole bitmap.
 */
struct ShidSlot
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
	/* Statistics (sharded_id.track_stats), since the last reset. */
	int64		ids;			/* ids minted */
	int64		full_ms_waits;	/* calls that waited for the clock to tick */
	int64		wait_us;		/* time they waited */
	int64		clock_behind;	/* calls that found the clock behind ms */
	int64		max_lag_ms;		/* the most it was behind */
	uint64		taken[SHID_BITMAP_WORDS];	/* sequence-field values taken */
};

typedef struct ShidShared
{
	LWLock	   *slots_lock;		/* guards inserts into the slot table */
	int			free_slots;		/* slots made outside the reserve (reserve.c),
								 * under slots_lock exclusively */
	pg_atomic_uint64 stats_reset;	/* TimestampTz of the last reset_stats */
} ShidShared;

/* GUCs */
static int	shid_max_shards = 16384;
static int	shid_max_free_slots = -1;
static bool shid_track_stats = true;
static int	shid_stripes = 1;
static int	shid_stripe = 0;
static bool shid_minting = true;
static char *shid_move_hold = NULL;

/* log2(sharded_id.stripes): the top bits of the sequence field it takes. */
static int	shid_stripe_bits = 0;

/* Links to shared memory, set in every process that preloaded us. */
static ShidShared *shid_shared = NULL;
static HTAB *shid_slots = NULL;

/*
 * Backend-local, direct-mapped cache of slot pointers.  Slots never move or
 * go away while the server runs, so a cached pointer stays valid; a miss
 * costs one lookup in the shared table under a shared LWLock.
 *
 * 8192 entries, one per shard of the default layout, so a backend cycling
 * over every shard of one layout never evicts; at 24 bytes an entry that is
 * 192 kB of TopMemoryContext, allocated on the first next_id call.  The
 * index is a mask, so the size must be a power of two.
 */
#define SHID_LOCAL_CACHE_SIZE 8192

StaticAssertDecl((SHID_LOCAL_CACHE_SIZE & (SHID_LOCAL_CACHE_SIZE - 1)) == 0,
				 "SHID_LOCAL_CACHE_SIZE must be a power of two");

typedef struct ShidLocalSlot
{
	ShidSlotKey key;
	ShidSlot   *slot;
} ShidLocalSlot;

static ShidLocalSlot *shid_local_cache = NULL;

static shmem_request_hook_type shid_prev_shmem_request_hook = NULL;
static shmem_startup_hook_type shid_prev_shmem_startup_hook = NULL;

extern PGDLLEXPORT void _PG_init(void);

static Size
shid_shmem_size(void)
{
	return add_size(add_size(add_size(MAXALIGN(sizeof(ShidShared)),
									  shid_ceiling_shmem_size()),
							 shid_floors_shmem_size(shid_max_shards)),
					hash_estimate_size(shid_max_shards, sizeof(ShidSlot)));
}

static void
shid_shmem_request(void)
{
	if (shid_prev_shmem_request_hook)
		shid_prev_shmem_request_hook();
	RequestAddinShmemSpace(shid_shmem_size());
	RequestNamedLWLockTranche("sharded_id", 2);
}

static void
shid_shmem_startup(void)
{
	bool		found;
	HASHCTL		info;
	LWLockPadded *locks;

	if (shid_prev_shmem_startup_hook)
		shid_prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	locks = GetNamedLWLockTranche("sharded_id");
	shid_shared = ShmemInitStruct("sharded_id", sizeof(ShidShared), &found);
	if (!found)
	{
		shid_shared->slots_lock = &locks[0].lock;
		shid_shared->free_slots = 0;
		pg_atomic_init_u64(&shid_shared->stats_reset, (uint64) GetCurrentTimestamp());
	}
	shid_ceiling_shmem_init(&locks[1].lock);
	shid_floors_shmem_init(shid_max_shards);

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(ShidSlotKey);
	info.entrysize = sizeof(ShidSlot);
	shid_slots = ShmemInitHash("sharded_id slots",
							   shid_max_shards, shid_max_shards,
							   &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);

	LWLockRelease(AddinShmemInitLock);
}

/* The resource manager id is 0 (none) or a custom id, 128 to 255. */
static bool
shid_check_rmgr_id(int *newval, void **extra, GucSource source)
{
	if (*newval != 0 && *newval < RM_MIN_CUSTOM_ID)
	{
		GUC_check_errdetail("Custom WAL resource manager ids are between %d and %d; 0 turns WAL logging off.",
							RM_MIN_CUSTOM_ID, RM_MAX_CUSTOM_ID);
		return false;
	}
	return true;
}

/* sharded_id.stripes is a power of two. */
static bool
shid_check_stripes(int *newval, void **extra, GucSource source)
{
	if ((*newval & (*newval - 1)) != 0)
	{
		GUC_check_errdetail("sharded_id.stripes must be a power of two: 1 (no stripes), 2, 4, 8, 16, 32 or 64.");
		return false;
	}
	return true;
}

/* sharded_id.minting: next_id's one check also covers citus.c's node. */
static void
shid_assign_minting(bool newval, void *extra)
{
	shid_mint_open = newval && shid_node_known;
}

void
_PG_init(void)
{
	/*
	 * Loaded without shared_preload_libraries, the module still provides the
	 * decoders; next_id refuses to run (see shid_require_shared_state).
	 */
	/*
	 * Read by sharded_id.move_shard on a router, which need not preload the
	 * module; defined either way, so that a preloaded router accepts it.
	 */
	DefineCustomStringVariable("sharded_id.move_hold",
							   "Pauses a shard move after it journals this step, for fault-injection tests.",
							   "The move waits while another session holds advisory lock (1936222579, 0). Empty: never pauses.",
							   &shid_move_hold,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("sharded_id.max_shards",
							"Sets how many shards, over all layouts, next_id can keep state for.",
							"Each shard in use takes about 600 bytes of shared memory.",
							&shid_max_shards,
							16384,
							1,
							262144,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("sharded_id.max_free_slots",
							"Sets how many of the generator's slots next_id may make for shards outside the shard catalog, for callers that are not superusers.",
							"The rest of sharded_id.max_shards stays for the shards of a database's shard catalog and for superusers. -1: half of sharded_id.max_shards.",
							&shid_max_free_slots,
							-1,
							-1,
							262144,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("sharded_id.track_stats",
							 "Collects the generator's statistics (sharded_id.generator_stats).",
							 NULL,
							 &shid_track_stats,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("sharded_id.max_clock_jump",
							"Sets how far the wall clock may leap ahead before next_id refuses to mint.",
							"Measured against the monotonic clock since the durable ceiling was last written. 0 turns the check off.",
							&shid_max_clock_jump,
							86400,
							0,
							INT_MAX / 1000,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("sharded_id.wal_rmgr_id",
							"Sets the id of sharded_id's custom WAL resource manager, which replicates the clock ceiling.",
							"The same on a primary and its standbys; 128 replays WAL that sharded_id 1.3 wrote. 0 logs nothing.",
							&shid_wal_rmgr_id,
							SHID_DEFAULT_RMGR_ID,
							0,
							RM_MAX_CUSTOM_ID,
							PGC_POSTMASTER,
							0,
							shid_check_rmgr_id, NULL, NULL);
	DefineCustomBoolVariable("sharded_id.wal_log_ceiling",
							 "WAL-logs each raise of the clock ceiling, so that a promoted standby mints after every id it replayed.",
							 "Turning it off gives up that guarantee; it exists to measure its cost.",
							 &shid_wal_log_ceiling,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("sharded_id.stripes",
							"Sets how many servers may mint for one shard at once, each in its own stripe.",
							"The top log2(stripes) bits of the sequence field hold sharded_id.stripe; 1 means no stripes.",
							&shid_stripes,
							1,
							1,
							SHID_MAX_STRIPES,
							PGC_POSTMASTER,
							0,
							shid_check_stripes, NULL, NULL);
	DefineCustomIntVariable("sharded_id.stripe",
							"Sets this server's stripe, from 0 to sharded_id.stripes - 1.",
							"Every server that mints for the same shards needs a stripe of its own.",
							&shid_stripe,
							0,
							0,
							SHID_MAX_STRIPES - 1,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("sharded_id.minting",
							 "Allows this server to mint sharded ids.",
							 "Turn it off on servers that must never mint, such as the workers of a distributed engine.",
							 &shid_minting,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, shid_assign_minting, NULL);
	MarkGUCPrefixReserved("sharded_id");
	if (shid_stripe >= shid_stripes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sharded_id.stripe %d is out of range", shid_stripe),
				 errdetail("With sharded_id.stripes = %d, the stripes are numbered 0 to %d.",
						   shid_stripes, shid_stripes - 1)));
	shid_stripe_bits = pg_leftmost_one_pos32((uint32) shid_stripes);
	/* On Citus without stripes, the node field holds its group id. */
	if (shid_citus_init(shid_stripe, shid_stripes > 1))
		shid_stripe_bits = SHID_CITUS_NODE_BITS;
	shid_ceiling_register_rmgr();
	shid_owner_init();

	shid_prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shid_shmem_request;
	shid_prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shid_shmem_startup;
}

static void
shid_require_shared_state(void)
{
	if (shid_shared == NULL || shid_slots == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("sharded_id must be loaded via \"shared_preload_libraries\""),
				 errdetail("next_id needs shared memory to guarantee that no id repeats."),
				 errhint("Add sharded_id to shared_preload_libraries in postgresql.conf and restart the server.")));
}

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

/* The error of a call that needs the primary. */
static void
shid_refuse_recovery(const char *what)
{
	if (unlikely(RecoveryInProgress()))
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot %s during recovery", what),
				 errhint("Do it on the primary; a standby follows it from WAL.")));
}

/* Mark every value of the slot free, for a new millisecond. */
static inline void
shid_slot_reset(ShidSlot *slot, int64 ms)
{
	slot->ms = ms;
	slot->used = 0;
	slot->fresh = 0;
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
 * with bit operations on one word.
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
	elog(ERROR, "sharded_id slot has no free value although %d of %d are used",
		 slot->used, capacity);
	return 0;					/* keep compiler quiet */
}

/*
 * Set a slot's owner state, or only store it if the state is still unknown,
 * and return the state before.
 */
uint8
shid_slot_set_owner(ShidSlot *slot, uint8 owner, bool only_if_unknown)
{
	uint8		prev;

	SpinLockAcquire(&slot->mutex);
	prev = slot->owner;
	if (!only_if_unknown || prev == SHID_OWNER_UNKNOWN)
		slot->owner = owner;
	SpinLockRelease(&slot->mutex);
	return prev;
}

/*
 * The first mint of a slot since start-up or promotion, or since an
 * ownership change ended: the server's state of the shard decides, or, for
 * a shard whose owner the server never decided, the shard catalog of this
 * database, which a restore of a whole database brings along (owner.c).
 */
static pg_noinline void
shid_slot_learn_owner(ShidSlot *slot, const ShidLayout *layout)
{
	(void) shid_owner_learn(slot, &slot->key, layout);
}

/*
 * Bring a slot in line with a shard state replayed from WAL (floors.c): its
 * floor, and its owner state read afresh on the first mint after promotion.
 * Nothing to do for a shard without a slot: a new slot reads the state.
 *
 * Locks: the slot table shared, then the slot's spinlock.
 */
void
shid_slot_follow_state(const ShidShardState *state)
{
	ShidSlot   *slot;

	if (shid_shared == NULL)
		return;
	LWLockAcquire(shid_shared->slots_lock, LW_SHARED);
	slot = hash_search(shid_slots, &state->key, HASH_FIND, NULL);
	if (slot != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		slot->floor_ms = state->floor_ms;
		if (slot->ms < state->floor_ms)
		{
			shid_slot_reset(slot, state->floor_ms);
			slot->used = slot->capacity;
		}
		slot->owner = SHID_OWNER_UNKNOWN;
		SpinLockRelease(&slot->mutex);
	}
	LWLockRelease(shid_shared->slots_lock);
}

/* The stripe's or Citus node's bits of the sequence field, for the layout. */
static inline int64
shid_stripe_base(const ShidLayout *layout)
{
	return (int64) shid_node << (layout->seq_bits - shid_stripe_bits);
}

/* What shid_lookup_slot does when the slot of (layout, shard) is not there. */
typedef enum ShidSlotMake
{
	SHID_SLOT_FIND,				/* nothing: returns NULL */
	SHID_SLOT_MINT,				/* next_id: makes it, within the free share
								 * unless reserve.c says the caller may have
								 * it from the whole table */
	SHID_SLOT_ADMIN				/* the shard's admin functions: makes it from
								 * the whole table */
} ShidSlotMake;

/* The slots next_id may make outside the reserve (reserve.c). */
static inline int
shid_free_slot_limit(void)
{
	return shid_max_free_slots >= 0 ? Min(shid_max_free_slots, shid_max_shards) :
		shid_max_shards / 2;
}

/*
 * Make the slot of key, which the caller did not find: from the whole
 * table for an admin function, or for a caller that reserve.c lets have
 * it; from the free share, sharded_id.max_free_slots, for any other.
 * Off next_id's path once the slot exists.
 *
 * Locks: the slot table exclusively; reserve.c reads the shard catalog
 * before.
 */
static pg_noinline ShidSlot *
shid_make_slot(const ShidLayout *layout, const ShidSlotKey *key, ShidSlotMake make)
{
	bool		reserved;
	bool		over_share = false;
	int			limit = shid_free_slot_limit();
	ShidSlot   *slot;
	bool		found;

	if (shid_stripe_bits >= layout->seq_bits)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("layout \"%s\" has too few sequence bits for %d stripes",
						layout->name, 1 << shid_stripe_bits),
				 errdetail("Its sequence field has %d bits, and each stripe needs at least one value per millisecond.",
						   layout->seq_bits),
				 errhint("Lower sharded_id.stripes and restart the server.")));
	reserved = make == SHID_SLOT_ADMIN || shid_slot_reserved(key->shard, layout);

	LWLockAcquire(shid_shared->slots_lock, LW_EXCLUSIVE);
	slot = hash_search(shid_slots, key, HASH_FIND, NULL);
	if (slot == NULL && !reserved && shid_shared->free_slots >= limit)
		over_share = true;
	else if (slot == NULL)
	{
		slot = hash_search(shid_slots, key, HASH_ENTER_NULL, &found);
		if (slot != NULL && !found)
		{
			ShidShardState state;

			SpinLockInit(&slot->mutex);
			/*
			 * Start full at the ceiling of the previous run, or at the
			 * shard's own floor if that is later: the first value comes
			 * after it.
			 */
			slot->floor_ms = shid_shard_state(key, &state) ? state.floor_ms : 0;
			slot->ms = Max(shid_ceiling->floor_ms, slot->floor_ms);
			slot->capacity = (int32) (shid_seq_capacity(layout) >> shid_stripe_bits);
			slot->used = slot->capacity;
			slot->owner = SHID_OWNER_UNKNOWN;
			slot->last_value = -1;
			slot->ids = slot->full_ms_waits = slot->wait_us = 0;
			slot->clock_behind = slot->max_lag_ms = 0;
			if (!reserved)
				shid_shared->free_slots++;
		}
	}
	LWLockRelease(shid_shared->slots_lock);
	if (over_share)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many shards outside the shard catalog in use for next_id"),
				 errdetail("Shard %d of layout \"%s\" is not in this database's sharded_id.shards, and the %d slots that sharded_id.max_free_slots allows for such shards are in use.",
						   key->shard, layout->name, limit),
				 errhint("Register the shard with sharded_id.create_shard, mint as a superuser, or raise sharded_id.max_free_slots and reload.")));
	if (slot == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many shards in use for next_id"),
				 errdetail("State for %d shards is already in shared memory.",
						   shid_max_shards),
				 errhint("Raise sharded_id.max_shards and restart the server.")));
	return slot;
}

/*
 * The slot of (layout, shard), made as make says if there is none yet.
 * Cached in the backend.
 */
static ShidSlot *
shid_lookup_slot(const ShidLayout *layout, int32 shard, ShidSlotMake make)
{
	uint64		layout_key = shid_layout_key(layout);
	ShidSlotKey key;
	ShidLocalSlot *local;
	ShidSlot   *slot;

	if (shid_local_cache == NULL)
		shid_local_cache = MemoryContextAllocZero(TopMemoryContext,
												  SHID_LOCAL_CACHE_SIZE * sizeof(ShidLocalSlot));
	local = &shid_local_cache[(shard ^ (uint32) (layout_key >> 16)) &
							  (SHID_LOCAL_CACHE_SIZE - 1)];
	if (local->slot != NULL && local->key.shard == shard &&
		local->key.layout_key == layout_key)
		return local->slot;

	/* A miss: find or make the slot in shared memory. */
	memset(&key, 0, sizeof(key));
	key.layout_key = layout_key;
	key.shard = shard;

	LWLockAcquire(shid_shared->slots_lock, LW_SHARED);
	slot = hash_search(shid_slots, &key, HASH_FIND, NULL);
	LWLockRelease(shid_shared->slots_lock);

	if (slot == NULL && make == SHID_SLOT_FIND)
		return NULL;
	if (slot == NULL)
		slot = shid_make_slot(layout, &key, make);

	local->key = key;
	local->slot = slot;
	return slot;
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
 * server gave the shard away.  *now_ms is the
 * clock as the caller read it, and is updated if the call had to wait.
 * Inlined into each caller, so that next_id's constant n = 1 drops the
 * run's arithmetic from its path.
 */
static pg_attribute_always_inline int
shid_slot_claim(ShidSlot *slot, bool counter, int64 wanted, int64 *now_ms,
				int n, int *first, int64 *ms, int64 *floor_ms)
{
	int			capacity = slot->capacity;

	for (;;)
	{
		int64		full_ms;
		int64		wait_start;

		SpinLockAcquire(&slot->mutex);
		if (unlikely(slot->owner == SHID_OWNER_RETIRED))
		{
			SpinLockRelease(&slot->mutex);
			return 0;
		}
		if (*now_ms > slot->ms)
			shid_slot_reset(slot, *now_ms);
		else if (*now_ms < slot->ms)
		{
			if (shid_track_stats)
			{
				slot->clock_behind++;
				slot->max_lag_ms = Max(slot->max_lag_ms, slot->ms - *now_ms);
			}
			/* Clock behind the slot: when full, move on without waiting. */
			if (slot->used >= capacity)
				shid_slot_reset(slot, slot->ms + 1);
		}
		if (slot->used < capacity)
		{
			int			claimed = shid_slot_take(slot, capacity,
												 counter ? slot->used : wanted,
												 n, first);

			*ms = slot->ms;
			*floor_ms = slot->floor_ms;
			slot->last_value = *first + claimed - 1;
			slot->last_ms = slot->ms;
			if (shid_track_stats)
				slot->ids += claimed;
			SpinLockRelease(&slot->mutex);
			return claimed;
		}
		full_ms = slot->ms;
		SpinLockRelease(&slot->mutex);

		/*
		 * This millisecond is used up: wait for the clock to leave it, for at
		 * most SHID_MAX_WAIT_MS by the monotonic clock.  A wall clock that
		 * does not move cannot time out a statement either.
		 */
		wait_start = shid_monotonic_us();
		do
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
		} while (*now_ms == full_ms);

		if (shid_track_stats)
		{
			int64		waited = shid_monotonic_us() - wait_start;

			SpinLockAcquire(&slot->mutex);
			slot->full_ms_waits++;
			slot->wait_us += waited;
			SpinLockRelease(&slot->mutex);
		}
	}
}

/*
 * Minting is off, or this backend has yet to learn its Citus node
 * (citus.c): refuse, or learn it.
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
 */
static inline ShidSlot *
shid_mint_slot(const ShidLayout *layout, int32 shard, ShidSlot *slot)
{
	if (unlikely(slot == NULL))
	{
		slot = shid_lookup_slot(layout, shard, SHID_SLOT_MINT);
		(void) shid_slot_set_owner(slot, SHID_OWNER_MINTS, true);
	}
	return slot;
}

/*
 * Raise the shard's floor to floor_ms, durably, and the slot's copy of it,
 * under one hold of the ceiling lock, so that no lowering comes between
 * them.  Returns false, changing nothing, if a reset or a lowering bumped
 * the generation since the caller read it (generation NULL: no check).
 * With move, a slot below the floor moves to it, full, so that the next
 * value comes after it.  With here_only (raise_floor by a role that is not
 * a superuser), a shard whose state belongs to another database is
 * refused (42501, privs.c), checked under the lock of the change.
 *
 * Locks: the ceiling lock, then the slot's spinlock.
 */
static bool
shid_set_shard_floor(ShidSlot *slot, int64 floor_ms, bool move,
					 const uint32 *generation, bool here_only)
{
	ShidShardState state;

	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	if (generation != NULL &&
		pg_atomic_read_u32(&shid_ceiling->generation) != *generation)
	{
		LWLockRelease(shid_ceiling->lock);
		return false;
	}
	if (here_only && shid_shard_state_locked(&slot->key, &state) &&
		state.database != MyDatabaseId)
	{
		LWLockRelease(shid_ceiling->lock);
		shid_refuse_state_elsewhere(&state, "raise the floor of");
	}
	shid_shard_change_locked(&slot->key, floor_ms, false, SHID_KEEP_OWNER);
	/* The slot's copy follows under the same hold of the lock. */
	SpinLockAcquire(&slot->mutex);
	slot->floor_ms = Max(slot->floor_ms, floor_ms);
	if (move && slot->ms <= floor_ms)
	{
		shid_slot_reset(slot, floor_ms);
		slot->used = slot->capacity;
	}
	SpinLockRelease(&slot->mutex);
	LWLockRelease(shid_ceiling->lock);
	return true;
}

/*
 * The slow path of shid_cover_shard.  A shard whose slot runs more than a
 * lease ahead of the clock does so on its own floor: its ids raise its
 * floor, a lease at a time, not the ceiling that every slot starts at after
 * a restart.  Any other raises the ceiling (ceiling.c).
 */
static pg_noinline void
shid_cover_shard_slow(ShidSlot *slot, int64 ms, int64 floor_ms, uint32 generation)
{
	if (floor_ms > 0 && ms > shid_clock_ms() + SHID_LEASE_MS)
		(void) shid_set_shard_floor(slot, ms + SHID_LEASE_MS, false, &generation, false);
	else
		shid_cover_slow(ms, generation);
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

	do
	{
		generation = shid_generation();
		if (unlikely(shid_slot_claim(slot, counter, wanted, &now_ms, 1,
									 &value, &ms, &floor_ms) == 0))
			shid_shard_retired(shard);
		/* A slot ahead of the clock may have moved past the layout's end. */
		shid_check_unix_ms(layout, ms);
		shid_cover_shard(slot, ms, floor_ms, generation);
	} while (unlikely(shid_generation() != generation));
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

/*
 * generator_stats(OUT layout text, OUT shard_id integer, OUT ids bigint,
 *				   OUT full_ms_waits bigint, OUT wait_time double precision,
 *				   OUT clock_behind bigint, OUT max_clock_lag double precision,
 *				   OUT current_ms timestamptz, OUT last_id bigint)
 *		RETURNS SETOF record
 *
 * One row per (layout, shard) slot in use: what it minted since the last
 * reset, how often and how long callers waited for the clock (ms), how often
 * the clock read behind the slot and by how much at most (ms), the
 * millisecond it fills and its newest id.
 */
SHID_FUNCTION_INFO(shid_generator_stats);
Datum
shid_generator_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HASH_SEQ_STATUS status;
	ShidSlot   *slot;

	shid_require_shared_state();
	InitMaterializedSRF(fcinfo, 0);
	/* Learnt before the slot table's lock: it reads tables. */
	(void) shid_citus_try_node();

	LWLockAcquire(shid_shared->slots_lock, LW_SHARED);
	hash_seq_init(&status, shid_slots);
	while ((slot = hash_seq_search(&status)) != NULL)
	{
		const ShidLayout *layout = shid_layout_by_key(slot->key.layout_key);
		ShidSlot	copy;
		Datum		values[9];
		bool		nulls[9] = {0};

		SpinLockAcquire(&slot->mutex);
		memcpy(&copy, slot, offsetof(ShidSlot, taken));
		SpinLockRelease(&slot->mutex);

		values[0] = CStringGetTextDatum(layout->name);
		values[1] = Int32GetDatum(copy.key.shard);
		values[2] = Int64GetDatum(copy.ids);
		values[3] = Int64GetDatum(copy.full_ms_waits);
		values[4] = Float8GetDatum(copy.wait_us / 1000.0);
		values[5] = Int64GetDatum(copy.clock_behind);
		values[6] = Float8GetDatum((double) copy.max_lag_ms);
		values[7] = TimestampTzGetDatum(shid_unix_ms_to_timestamptz(copy.ms));
		/* On Citus, the id needs this node's field (citus.c). */
		if (copy.last_value >= 0 && shid_node_known)
			values[8] = Int64GetDatum(shid_pack(layout, copy.last_ms, copy.key.shard,
												shid_stripe_base(layout) | copy.last_value));
		else
			nulls[8] = true;	/* not minted yet, or no Citus group yet */
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	LWLockRelease(shid_shared->slots_lock);
	return (Datum) 0;
}

/*
 * generator_info(OUT slots_used integer, OUT max_shards integer,
 *				  OUT ceiling timestamptz, OUT ceiling_writes bigint,
 *				  OUT ceiling_write_time double precision,
 *				  OUT stats_reset timestamptz) RETURNS record
 *
 * The generator as a whole: slots in use out of sharded_id.max_shards, the
 * durable ceiling, how often it was written and for how long (ms), and
 * when the statistics were last reset.
 */
SHID_FUNCTION_INFO(shid_generator_info);
Datum
shid_generator_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[6];
	bool		nulls[6] = {0};
	int64		writes;
	int64		write_us;

	shid_require_shared_state();
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	LWLockAcquire(shid_shared->slots_lock, LW_SHARED);
	values[0] = Int32GetDatum((int32) hash_get_num_entries(shid_slots));
	LWLockRelease(shid_shared->slots_lock);
	values[1] = Int32GetDatum(shid_max_shards);
	values[2] = TimestampTzGetDatum(shid_unix_ms_to_timestamptz(shid_ceiling_stats(&writes, &write_us)));
	values[3] = Int64GetDatum(writes);
	values[4] = Float8GetDatum(write_us / 1000.0);
	values[5] = TimestampTzGetDatum((TimestampTz) pg_atomic_read_u64(&shid_shared->stats_reset));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * reset_stats() RETURNS void
 *
 * Zero the generator's statistics, in every slot and for the ceiling.
 */
SHID_FUNCTION_INFO(shid_reset_stats);
Datum
shid_reset_stats(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS status;
	ShidSlot   *slot;

	shid_require_shared_state();
	LWLockAcquire(shid_shared->slots_lock, LW_SHARED);
	hash_seq_init(&status, shid_slots);
	while ((slot = hash_seq_search(&status)) != NULL)
	{
		SpinLockAcquire(&slot->mutex);
		slot->ids = 0;
		slot->full_ms_waits = 0;
		slot->wait_us = 0;
		slot->clock_behind = 0;
		slot->max_lag_ms = 0;
		SpinLockRelease(&slot->mutex);
	}
	LWLockRelease(shid_shared->slots_lock);
	shid_ceiling_reset_stats();
	pg_atomic_write_u64(&shid_shared->stats_reset, (uint64) GetCurrentTimestamp());
	PG_RETURN_VOID();
}

/*
 * reset_ceiling() RETURNS timestamptz
 *
 * Superuser only: lower the durable ceiling, and every slot, to the current
 * time, after the clock had leaped ahead and ids were minted with its time.
 * The caller vouches that no id minted here with a time more than a lease
 * (SHID_LEASE_MS) after the clock was kept.  It never repeats an id that
 * runs beside it: the clock is read after the generation is bumped, so every
 * id returned before carries a time the clock has reached, or one a slot
 * took at most a lease ahead under load, and a slot at most a lease ahead of
 * the clock stays exactly as it is (were it marked full, callers whose clock
 * reading is older would move it a millisecond on, and resets in a row
 * would push it ahead without bound).  No slot goes below its shard's floor, nor below
 * a floor that 1.4 raised server-wide.  Returns the time new ids of slots
 * without a floor start after.
 *
 * Locks: the slot table exclusively, then the ceiling lock, then each
 * slot's spinlock in turn.  The generation it bumps makes every minter
 * whose claim it overtook claim again.
 */
SHID_FUNCTION_INFO(shid_reset_ceiling);
Datum
shid_reset_ceiling(PG_FUNCTION_ARGS)
{
	HASH_SEQ_STATUS status;
	ShidSlot   *slot;
	int64		now_ms;
	int64		base;
	int64		top;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to reset the sharded_id clock ceiling")));
	shid_require_shared_state();
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot reset the sharded_id clock ceiling during recovery")));

	LWLockAcquire(shid_shared->slots_lock, LW_EXCLUSIVE);
	base = shid_ceiling_reset_begin();
	now_ms = shid_clock_ms();
	base = Max(base, now_ms);
	top = base;
	hash_seq_init(&status, shid_slots);
	while ((slot = hash_seq_search(&status)) != NULL)
	{
		int64		target;

		SpinLockAcquire(&slot->mutex);
		target = Max(base, slot->floor_ms);
		if (slot->ms >= target && slot->ms <= now_ms + SHID_LEASE_MS)
		{
			/*
			 * At or less than a lease ahead of the clock: ids there may be in
			 * use; the slot stays as it is, values taken and all, so that
			 * resets in a row cannot push it ahead either.
			 */
			target = slot->ms;
		}
		else
		{
			/* Full at the new millisecond: the next value comes after it. */
			shid_slot_reset(slot, target);
			slot->used = slot->capacity;
		}
		/* A slot at its floor is covered by the floor, not the ceiling. */
		if (target > slot->floor_ms)
			top = Max(top, target);
		SpinLockRelease(&slot->mutex);
	}
	shid_ceiling_reset_end(top + SHID_LEASE_MS, top);
	LWLockRelease(shid_shared->slots_lock);
	PG_RETURN_TIMESTAMPTZ(shid_unix_ms_to_timestamptz(top));
}

/*
 * The largest id of the shard that this server may have minted, from the
 * slot's millisecond ms (read under its mutex; the caller has released it):
 * that millisecond with every sequence-field value.  A slot starts at the
 * durable ceiling, or its shard's floor, which covers every millisecond
 * minted before, so this bounds ids from before a restart too.
 */
static int64
shid_high_water_id(const ShidLayout *layout, int32 shard, int64 ms)
{
	ms = Max(ms, layout->epoch_ms);
	shid_check_unix_ms(layout, ms);
	return shid_pack(layout, ms, shard, shid_seq_capacity(layout) - 1);
}

/* Checks common to the functions below; returns the shard's slot. */
static ShidSlot *
shid_admin_slot(const ShidLayout *layout, int32 shard, const char *what)
{
	shid_check_shard(layout, shard);
	shid_require_shared_state();
	shid_refuse_recovery(what);
	return shid_lookup_slot(layout, shard, SHID_SLOT_ADMIN);
}

/*
 * Check an id that a shard's floor would be raised over, and return its
 * millisecond.  source, if not NULL, says where the id was read from ("table
 * s.t").
 * Refused (SI003): an id that does not carry the shard; one whose time
 * leaves the layout no millisecond after it; and, unless force, one more
 * than sharded_id.max_clock_jump ahead of this server's clock (0: no such
 * bound), since every later id of the shard would carry a time past it.
 */
static int64
shid_floor_checked(const ShidLayout *layout, int32 shard, int64 id, bool force,
				   const char *source)
{
	ShidFields	fields;
	int64		ahead;
	char	   *where = source ? psprintf("%s holds id " INT64_FORMAT, source, id) :
		psprintf("id " INT64_FORMAT, id);

	shid_check_shard(layout, shard);
	shid_check_id(layout, id);
	shid_unpack(layout, id, &fields);
	if (fields.shard != shard)
		ereport(ERROR,
				(errcode(ERRCODE_SHID_FLOOR_REFUSED),
				 errmsg("%s, which carries shard %d, not shard %d", where, fields.shard, shard),
				 errdetail("A floor of shard %d is raised over ids of shard %d only.", shard, shard),
				 source ? errhint("Move or delete the row, then try again.") : 0));
	if (fields.unix_ms >= layout->epoch_ms + shid_max_elapsed_ms(layout))
		ereport(ERROR,
				(errcode(ERRCODE_SHID_FLOOR_REFUSED),
				 errmsg("%s, which would leave shard %d no id to mint", where, shard),
				 errdetail("The id carries the last millisecond of layout \"%s\", %s.",
						   layout->name, timestamptz_to_str(shid_unix_ms_to_timestamptz(fields.unix_ms))),
				 source ? errhint("Move or delete the row, then try again.") : 0));
	ahead = fields.unix_ms - shid_clock_ms();
	if (!force && shid_max_clock_jump > 0 && ahead > (int64) shid_max_clock_jump * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_SHID_FLOOR_REFUSED),
				 errmsg("%s, %lld s ahead of this server's clock", where, (long long) (ahead / 1000)),
				 errdetail("The id carries shard %d and the time %s. A floor over it would make every later id of the shard carry a time at least that late; sharded_id.max_clock_jump allows %d s.",
						   shard, timestamptz_to_str(shid_unix_ms_to_timestamptz(fields.unix_ms)),
						   shid_max_clock_jump),
				 source ? errhint("Move or delete the row, or, if ids that late really exist, raise the floor with sharded_id.raise_floor(%d, " INT64_FORMAT ", force => true) first.", shard, id) :
				 errhint("If ids that late really exist, pass force => true.")));
	pfree(where);
	return fields.unix_ms;
}

/*
 * raise_floor(shard_id integer, above_id bigint, layout text,
 *			   force boolean) RETURNS bigint
 *
 * Every id minted on this server for the shard from now on is greater than
 * above_id, whatever this server's clock reads, also after a restart or a
 * failover: the shard's floor is raised past the id's millisecond
 * (WAL-logged, in the caller's transaction's xid, and written to
 * sharded_id.shards), then the shard's slot is moved to that millisecond,
 * full.  No other shard's ids move.  For a shard whose rows come from
 * another server: a move, a restore.  The id must carry the shard, and, but
 * with force (superusers only), lie no more than sharded_id.max_clock_jump
 * ahead of the clock.  Returns the floor: the largest id of the shard in
 * that millisecond.  A caller that is not a superuser must own the shard's
 * schema as a member of sharded_id_provisioner, and the server's state of
 * the shard, if any, must belong to this database (privs.c).
 *
 * Locks: the ceiling lock, then the slot's spinlock.
 */
SHID_FUNCTION_INFO(shid_raise_floor);
Datum
shid_raise_floor(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 2);
	int32		shard = PG_GETARG_INT32(0);
	bool		force = PG_NARGS() > 3 && !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);
	int64		floor_ms;
	ShidSlot   *slot;

	/* Only a superuser may push a shard's ids past the clock's bound. */
	if (force && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to force the floor of a shard"),
				 errdetail("A forced floor may carry the shard's ids years ahead, and only a superuser can lower it again.")));
	shid_require_shard_owner(shard, layout->name, "raise the floor of");
	floor_ms = shid_floor_checked(layout, shard, PG_GETARG_INT64(1), force, NULL);
	slot = shid_admin_slot(layout, shard, "raise the floor of a shard");

	(void) shid_set_shard_floor(slot, floor_ms, true, NULL, !superuser());
	PG_RETURN_INT64(shid_pack(layout, floor_ms, shard, shid_seq_capacity(layout) - 1));
}

/*
 * _check_floor(shard_id integer, above_id bigint, layout text,
 *				source text) RETURNS void
 *
 * Would raise_floor(shard_id, above_id, layout) without force accept the
 * id?  Raises raise_floor's error otherwise, naming source (the table the
 * id was read from).  Paths that take a floor from table data check every
 * candidate with it before they change anything.  Takes no lock.
 */
SHID_FUNCTION_INFO(shid_check_floor);
Datum
shid_check_floor(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 2);

	(void) shid_floor_checked(layout, PG_GETARG_INT32(0), PG_GETARG_INT64(1), false,
							  text_to_cstring(PG_GETARG_TEXT_PP(3)));
	PG_RETURN_VOID();
}

/*
 * lower_floor(shard_id integer, layout text) RETURNS timestamptz
 *
 * Superuser only: the way back from a floor raised too far (a planted row,
 * a wrong id).  Removes the shard's floor, durably, and moves its slot to
 * the current time: ids that this server, or the server the shard came
 * from, minted for the shard with later times may be minted again.  Warns
 * so.  Touches no other shard, and not the ceiling.  Returns the time the
 * shard's new ids start after.
 *
 * Locks: the ceiling lock (to bump the generation, so that no claim above
 * the old floor is returned, and again in floors.c), then the slot's
 * spinlock.
 */
SHID_FUNCTION_INFO(shid_lower_floor);
Datum
shid_lower_floor(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	int32		shard = PG_GETARG_INT32(0);
	ShidSlot   *slot;
	int64		now_ms;
	int64		old_floor;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to lower the floor of a shard")));
	slot = shid_admin_slot(layout, shard, "lower the floor of a shard");

	/*
	 * One hold of the ceiling lock: the generation is bumped first, so that
	 * any claim above the old floor not yet returned is made again, and no
	 * floor raise of an older generation lands after this.
	 */
	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	shid_ceiling_bump_generation();
	now_ms = Max(shid_clock_ms(), Max(shid_ceiling->raised_floor_ms, shid_ceiling->floor_ms));
	shid_shard_change_locked(&slot->key, 0, true, SHID_KEEP_OWNER);
	SpinLockAcquire(&slot->mutex);
	old_floor = slot->floor_ms;
	slot->floor_ms = 0;
	/* As in reset_ceiling: a slot within a lease of the clock stays. */
	if (slot->ms >= now_ms && slot->ms <= now_ms + SHID_LEASE_MS)
		now_ms = slot->ms;
	else
	{
		shid_slot_reset(slot, now_ms);
		slot->used = slot->capacity;
	}
	SpinLockRelease(&slot->mutex);
	LWLockRelease(shid_ceiling->lock);
	ereport(WARNING,
			(errmsg("lowered the floor of shard %d to the clock", shard),
			 errdetail("New ids of the shard start after %s; the floor was %s. Ids of the shard with a time between the two, minted here or on the server the shard came from, may be minted again.",
					   pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(now_ms))),
					   old_floor > 0 ? pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(old_floor))) : "not set"),
			 errhint("Lower a floor only when no stored id of the shard carries a time after the clock.")));
	PG_RETURN_TIMESTAMPTZ(shid_unix_ms_to_timestamptz(now_ms));
}

/*
 * floors(OUT layout text, OUT shard_id integer, OUT floor timestamptz,
 *		  OUT retired boolean) RETURNS SETOF record
 *
 * What this server keeps durably about single shards (floors.c): the
 * floor, if any, and whether it gave the shard away.  A shard it owns with
 * no floor is not listed.
 *
 * Locks: the ceiling lock, shared, while it copies the states.
 */
SHID_FUNCTION_INFO(shid_floors);
Datum
shid_floors(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ShidShardState *states;
	int			n;

	shid_require_shared_state();
	InitMaterializedSRF(fcinfo, 0);
	n = shid_shard_states(&states);
	for (int i = 0; i < n; i++)
	{
		const ShidLayout *layout = shid_layout_by_key(states[i].key.layout_key);
		Datum		values[4];
		bool		nulls[4] = {0};
		bool		retired = shid_shard_state_retired(&states[i]);

		/* A shard this server owns, with no floor: nothing to show. */
		if (states[i].floor_ms == 0 && !retired)
			continue;

		values[0] = CStringGetTextDatum(layout ? layout->name : "?");
		values[1] = Int32GetDatum(states[i].key.shard);
		if (states[i].floor_ms > 0)
			values[2] = TimestampTzGetDatum(shid_unix_ms_to_timestamptz(states[i].floor_ms));
		else
			nulls[2] = true;
		values[3] = BoolGetDatum(retired);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * high_water(shard_id integer, layout text) RETURNS bigint
 *
 * The largest id of the shard that this server may have minted; raise_floor
 * on the server that takes the shard over makes its ids greater.
 *
 * Locks: the slot's spinlock.
 */
SHID_FUNCTION_INFO(shid_high_water);
Datum
shid_high_water(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	ShidSlot   *slot = shid_admin_slot(layout, PG_GETARG_INT32(0), "read the high-water mark of a shard");
	int64		ms;

	SpinLockAcquire(&slot->mutex);
	ms = slot->ms;
	SpinLockRelease(&slot->mutex);
	PG_RETURN_INT64(shid_high_water_id(layout, slot->key.shard, ms));
}

/*
 * _retire_shard(shard_id integer, layout text) RETURNS bigint
 *
 * This server stops minting for the shard at once, in every database, and
 * returns its high-water mark, read under the same hold of the slot's
 * spinlock: no id above it is minted here afterwards.  The retirement is
 * durable and replicated first (floors.c), and holds once the transaction
 * commits; if it or its savepoint aborts, the shard's state before it holds
 * again (owner.c).  drop_shard and moves also record it in
 * sharded_id.retired_shards, which a dump carries.  NULL where sharded_id
 * is not preloaded: nothing mints there.
 * A caller that is not a superuser must own the shard's schema as a member
 * of sharded_id_provisioner (privs.c, which reads the catalog), and the
 * server's state of the shard, if any, must belong to this database
 * (checked again in owner.c).
 *
 * Locks: the ceiling lock (in owner.c and floors.c), after reading
 * sharded_id.retired_shards for a shard whose owner the server never
 * decided; then the slot's spinlock.
 */
SHID_FUNCTION_INFO(shid_retire_shard);
Datum
shid_retire_shard(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	ShidSlot   *slot;
	int64		ms;

	shid_require_shard_owner(PG_GETARG_INT32(0), layout->name, "retire");
	/* Without the preload nothing mints here, and nothing is known. */
	if (shid_shared == NULL)
		PG_RETURN_NULL();
	slot = shid_admin_slot(layout, PG_GETARG_INT32(0), "retire a shard");
	shid_owner_change(slot, &slot->key, layout, SHID_RETIRE);
	/* A move relies on the commit: flush it, whatever synchronous_commit. */
	ForceSyncCommit();
	SpinLockAcquire(&slot->mutex);
	slot->owner = SHID_OWNER_RETIRED;
	ms = slot->ms;
	SpinLockRelease(&slot->mutex);
	PG_RETURN_INT64(shid_high_water_id(layout, slot->key.shard, ms));
}

/*
 * _own_shard(shard_id integer, layout text) RETURNS void
 *
 * This server mints for the shard again once the transaction commits:
 * create_shard, which also removes the shard from
 * sharded_id.retired_shards.  Durable and replicated first (floors.c); if
 * the transaction or its savepoint aborts, the shard's state before it
 * holds again (owner.c).  Nothing to do where sharded_id is not preloaded.
 * A caller that is not a superuser is refused unless _catalog_own allowed
 * it this take-back in this transaction (privs.c), and if the server's
 * state of the shard belongs to another database (owner.c).
 *
 * Locks: the ceiling lock (in owner.c and floors.c), after reading
 * sharded_id.retired_shards for a shard whose owner the server never
 * decided.
 */
SHID_FUNCTION_INFO(shid_own_shard);
Datum
shid_own_shard(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	ShidSlot   *slot;

	shid_require_take_back(PG_GETARG_INT32(0), layout->name);
	if (shid_shared == NULL)
		PG_RETURN_VOID();
	slot = shid_admin_slot(layout, PG_GETARG_INT32(0), "create a shard");
	shid_owner_change(slot, &slot->key, layout, SHID_OWN);
	ForceSyncCommit();
	PG_RETURN_VOID();
}

/*
 * _forget_owners() RETURNS void
 *
 * Called by the install scripts of 1.4, whose retirements were kept per
 * database.  Since 1.5 a retirement belongs to the server (floors.c), and
 * a new shard catalog in one database forgets none: this does nothing.
 */
SHID_FUNCTION_INFO(shid_forget_owners);
Datum
shid_forget_owners(PG_FUNCTION_ARGS)
{
	PG_RETURN_VOID();
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
								  &first, &ms, &floor_ms);
		if (claimed == 0)
			shid_shard_retired(shard);
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
