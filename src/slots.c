/*-------------------------------------------------------------------------
 *
 * src/slots.c
 *	  The generator's slot table: one slot per (layout, shard) in shared
 *	  memory, how a slot is found, made and kept in line with its shard's
 *	  state, and the functions that read or lower every slot.
 *
 * A slot holds the millisecond its shard's ids are filling and a bitmap of
 * the sequence-field values taken in it (generator.c claims them), a copy
 * of the shard's durable floor (floors.c) and whether this server mints
 * for the shard (owner.c).  Slots are made on first use and never removed
 * while the server runs, so a backend caches slot pointers and then takes
 * no lock to find a slot.
 *
 *	 - A slot is made from the whole table for the admin functions, and for
 *	   next_id when reserve.c says the shard is the catalog's or the caller
 *	   a superuser; any other next_id makes at most
 *	   sharded_id.max_free_slots slots, so that a role with a temporary
 *	   sequence cannot take the slots the catalog's shards need.
 *	 - A new slot starts full at the later of the ceiling the previous run
 *	   left (ceiling.c) and its shard's floor, so its first value comes
 *	   after both.
 *	 - Each slot counts what it does (generator_stats), under its spinlock,
 *	   unless sharded_id.track_stats is off.
 *
 * Locks: the slot table's LWLock and each slot's spinlock; the order in
 * which they are taken with the others is in locks.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "ceiling.h"
#include "citus_slot.h"
#include "compat.h"
#include "floors.h"
#include "fmgr.h"
#include "funcapi.h"
#include "layout.h"
#include "miscadmin.h"
#include "privs.h"
#include "reserve.h"
#include "slots.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

typedef struct ShidShared
{
	LWLock	   *slots_lock;		/* guards inserts into the slot table */
	int			free_slots;		/* slots made outside the reserve (reserve.c),
								 * under slots_lock exclusively */
	pg_atomic_uint64 stats_reset;	/* TimestampTz of the last reset_stats */
} ShidShared;


/* GUCs (init.c registers them) */
int			shid_max_shards = 16384;
int			shid_max_free_slots = -1;
int			shid_stripes = 1;
int			shid_stripe = 0;

/* log2(sharded_id.stripes): the top bits of the sequence field it takes. */
int			shid_stripe_bits = 0;

/* Links to shared memory, set in every process that preloaded us. */
static ShidShared *shid_shared = NULL;
HTAB	   *shid_slots = NULL;

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

Size
shid_slots_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(ShidShared)),
					hash_estimate_size(shid_max_shards, sizeof(ShidSlot)));
}

/*
 * Attach to (or, first, create) the slot table.  The caller holds
 * AddinShmemInitLock, and has set up the ceiling and the shard states.
 */
void
shid_slots_shmem_init(LWLock *lock)
{
	bool		found;
	HASHCTL		info;

	shid_shared = ShmemInitStruct("sharded_id", sizeof(ShidShared), &found);
	if (!found)
	{
		shid_shared->slots_lock = lock;
		shid_shared->free_slots = 0;
		pg_atomic_init_u64(&shid_shared->stats_reset, (uint64) GetCurrentTimestamp());
	}

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(ShidSlotKey);
	info.entrysize = sizeof(ShidSlot);
	shid_slots = ShmemInitHash("sharded_id slots",
							   shid_max_shards, shid_max_shards,
							   &info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
}

/* The error of a call where sharded_id was not preloaded. */
void
shid_not_preloaded(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("sharded_id must be loaded via \"shared_preload_libraries\""),
			 errdetail("next_id needs shared memory to guarantee that no id repeats."),
			 errhint("Add sharded_id to shared_preload_libraries in postgresql.conf and restart the server.")));
}


/* The error of a call that needs the primary. */
void
shid_refuse_recovery(const char *what)
{
	if (unlikely(RecoveryInProgress()))
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot %s during recovery", what),
				 errhint("Do it on the primary; a standby follows it from WAL.")));
}

/*
 * The error of a call that lowers where ids start (reset_ceiling,
 * lower_floor) inside a transaction block or a subtransaction: its change
 * is made in shared memory and WAL at once, and no ROLLBACK, ROLLBACK TO
 * SAVEPOINT or ROLLBACK PREPARED could undo it, so it refuses to run where
 * one could follow (as VACUUM does, SQLSTATE 25001).  A query string of
 * several statements is an implicit transaction block and is refused too.
 * A SQL-callable function cannot tell whether a function or DO block
 * called it: there it runs, in its statement's own transaction.
 */
void
shid_refuse_transaction_block(const char *call)
{
	if (IsTransactionBlock() || IsSubTransaction())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("%s cannot run inside a transaction block", call),
				 errdetail("It lowers where new ids start at once, and no ROLLBACK could undo that."),
				 errhint("Run it as a statement of its own, outside BEGIN ... COMMIT, a savepoint or an exception block.")));
	PreventInTransactionBlock(true, call);
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
 * Bring a slot in line with a shard state replayed from WAL (rmgr.c), or
 * that owner.c made for a shard it found no slot of: its
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
	if (make == SHID_SLOT_ADMIN)
		reserved = true;
	else if (make == SHID_SLOT_SHARE)
		reserved = shid_catalog_has_shard(key->shard, layout);
	else
		reserved = shid_slot_reserved(key->shard, layout);

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
			slot->last_ms = 0;
			slot->paced_us = 0;
			slot->ids = slot->full_ms_waits = slot->wait_us = 0;
			slot->clock_behind = slot->max_lag_ms = 0;
			shid_citus_slot_init(slot);
			ConditionVariableInit(&slot->win_cv);
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
ShidSlot *
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

/* Checks common to the functions below; returns the shard's slot. */
ShidSlot *
shid_admin_slot(const ShidLayout *layout, int32 shard, const char *what)
{
	shid_check_shard(layout, shard);
	shid_require_shared_state();
	shid_refuse_recovery(what);
	return shid_lookup_slot(layout, shard, SHID_SLOT_ADMIN);
}

/*
 * The largest id of the shard that this server may have minted, from the
 * slot's millisecond ms (read under its mutex; the caller has released it):
 * that millisecond with every sequence-field value.  A slot starts at the
 * durable ceiling, or its shard's floor, which covers every millisecond
 * minted before, so this bounds ids from before a restart too.
 */
int64
shid_high_water_id(const ShidLayout *layout, int32 shard, int64 ms)
{
	ms = Max(ms, layout->epoch_ms);
	shid_check_unix_ms(layout, ms);
	return shid_pack(layout, ms, shard, shid_seq_capacity(layout) - 1);
}

/*
 * Raise the shard's floor to floor_ms, durably, and the slot's copy of it,
 * under one hold of the floors lock, and of the ceiling lock, so that no
 * lowering (reset_ceiling, lower_floor) comes between them.  Returns false,
 * changing nothing, if a reset or a lowering bumped the generation since
 * the caller read it (generation NULL: no check).  With move, a slot below
 * the floor moves to it, full, so that the next value comes after it.
 * With here_only (raise_floor by a role that is not a superuser), a shard
 * whose state belongs to another database is refused (42501, privs.c),
 * checked under the lock of the change.  With sync, the change is made
 * durable (floors.c) before the slot's copy follows, for a caller that
 * hands out ids that only the floor covers; otherwise the transaction
 * syncs it before it commits.
 *
 * Locks: the ceiling lock, then the floors lock, then the slot's spinlock.
 */
bool
shid_set_shard_floor(ShidSlot *slot, int64 floor_ms, bool move,
					 const uint32 *generation, bool here_only, bool sync)
{
	ShidShardState state;

	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	if (generation != NULL &&
		pg_atomic_read_u32(&shid_ceiling->generation) != *generation)
	{
		LWLockRelease(shid_ceiling->lock);
		return false;
	}
	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (here_only && shid_shard_state_locked(&slot->key, &state) &&
		state.database != MyDatabaseId)
	{
		LWLockRelease(shid_floors_shared->lock);
		LWLockRelease(shid_ceiling->lock);
		shid_refuse_state_elsewhere(&state, "raise the floor of");
	}
	shid_shard_change_locked(&slot->key, floor_ms, false, SHID_KEEP_OWNER);
	if (sync)
		shid_states_sync_locked();
	/* The slot's copy follows under the same hold of the locks. */
	SpinLockAcquire(&slot->mutex);
	slot->floor_ms = Max(slot->floor_ms, floor_ms);
	if (move && slot->ms <= floor_ms)
	{
		shid_slot_reset(slot, floor_ms);
		slot->used = slot->capacity;
	}
	SpinLockRelease(&slot->mutex);
	LWLockRelease(shid_floors_shared->lock);
	LWLockRelease(shid_ceiling->lock);
	return true;
}

/*
 * Call visit on every slot, with the slot's spinlock held, until it
 * returns false.  The Citus files read and mark slots through here (the
 * renewal pick in citus_ask.c, the window high water in citus_learn.c).
 *
 * Locks: the slot table's lock, shared; each slot's spinlock in turn.
 */
void
shid_slots_visit(ShidSlotVisitor visit, void *arg)
{
	HASH_SEQ_STATUS status;
	ShidSlot   *slot;

	LWLockAcquire(shid_shared->slots_lock, LW_SHARED);
	hash_seq_init(&status, shid_slots);
	while ((slot = hash_seq_search(&status)) != NULL)
	{
		bool		more;

		SpinLockAcquire(&slot->mutex);
		more = visit(slot, arg);
		SpinLockRelease(&slot->mutex);
		if (!more)
		{
			hash_seq_term(&status);
			break;
		}
	}
	LWLockRelease(shid_shared->slots_lock);
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
		if (copy.last_value >= 0)
			values[8] = Int64GetDatum(shid_pack(layout, copy.last_ms, copy.key.shard,
												shid_stripe_base(layout) | copy.last_value));
		else
			nulls[8] = true;	/* not minted yet */
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
 * Refuses to run inside a transaction block or a subtransaction
 * (SQLSTATE 25001): no ROLLBACK could undo it (shid_refuse_transaction_block).
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
	shid_refuse_transaction_block("sharded_id.reset_ceiling()");

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
		top = Max(top, shid_citus_slot_reset(slot));
		SpinLockRelease(&slot->mutex);
	}
	SHID_INJECTION_POINT("sharded-id-reset-slots-moved");
	shid_ceiling_reset_end(top + SHID_LEASE_MS, top);
	LWLockRelease(shid_shared->slots_lock);
	PG_RETURN_TIMESTAMPTZ(shid_unix_ms_to_timestamptz(top));
}
