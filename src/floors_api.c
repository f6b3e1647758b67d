/*-------------------------------------------------------------------------
 *
 * src/floors_api.c
 *	  The SQL functions of the floors (floors.c): raise_floor, _check_floor,
 *	  lower_floor, floors() and high_water.
 *
 * A floor is raised durably and the shard's slot follows it under one hold
 * of the floors lock (shid_set_shard_floor, slots.c).  Locks: each
 * function's comment names those it takes; their order is in locks.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ceiling.h"
#include "citus_slot.h"
#include "compat.h"
#include "floors.h"
#include "fmgr.h"
#include "funcapi.h"
#include "layout.h"
#include "miscadmin.h"
#include "owner.h"
#include "privs.h"
#include "slots.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

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
	if (fields.unix_ms >= layout->max_unix_ms)
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
 * Runs in a transaction (create_shard, moves and restores raise a floor in
 * theirs), and a ROLLBACK, ROLLBACK TO SAVEPOINT or ROLLBACK PREPARED does
 * not lower the floor again in shared memory: a floor only goes up, so a
 * raise that outlives its transaction can repeat no id, it only keeps the
 * shard's ids later than needed.  A crash before the commit may drop the
 * floor; the ceiling then lies past every id minted above it (generator.c).
 *
 * Locks: the ceiling lock, then the floors lock, then the slot's spinlock
 * (shid_set_shard_floor).
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

	(void) shid_set_shard_floor(slot, floor_ms, true, NULL, !superuser(), false);
	SHID_INJECTION_POINT("sharded-id-raise-floor-changed");
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
 * shard's new ids start after.  Refuses to run inside a transaction block
 * or a subtransaction (SQLSTATE 25001): no ROLLBACK could undo it.
 *
 * Locks: the ceiling lock (to bump the generation, so that no claim above
 * the old floor is returned), then the floors lock, then the slot's
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
	shid_refuse_transaction_block("sharded_id.lower_floor()");

	/*
	 * One hold of the ceiling lock: the generation is bumped first, so that
	 * any claim above the old floor not yet returned is made again, and no
	 * floor raise of an older generation lands after this.
	 */
	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	shid_ceiling_bump_generation();
	now_ms = Max(shid_clock_ms(), Max(shid_ceiling->raised_floor_ms, shid_ceiling->floor_ms));
	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
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

	/*
	 * As in reset_ceiling: drop the slot's Citus shard window, which may
	 * lie above a slot moved back; the milliseconds between belong to other
	 * nodes' windows.  The next claim asks for a window again.
	 */
	shid_citus_window_drop(slot);
	SpinLockRelease(&slot->mutex);
	LWLockRelease(shid_floors_shared->lock);
	LWLockRelease(shid_ceiling->lock);
	SHID_INJECTION_POINT("sharded-id-lower-floor-changed");
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
 * Locks: the floors lock, shared, while it copies the states.
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
