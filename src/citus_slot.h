/*-------------------------------------------------------------------------
 *
 * src/citus_slot.h
 *	  What Citus keeps in a slot (ShidSlot's win and grant, slots.h), as
 *	  slots.c starts and resets a slot and a node stores the windows it is
 *	  granted (citus_ask.c): Citus's rules, kept apart from the slot
 *	  table's.  Called with the slot's spinlock held, so inline and never
 *	  failing.  Design: doc/sharded_id-design.md, "Citus".
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_CITUS_SLOT_H
#define SHARDED_ID_CITUS_SLOT_H

#include "postgres.h"

#include "slots.h"

/*
 * A new slot: no window yet (citus_ask.c), and none granted in this run.
 * A coordinator grants after where new slots start, which the ceiling it
 * started with covers.
 */
static inline void
shid_citus_slot_init(ShidSlot *slot)
{
	memset(&slot->win, 0, sizeof(slot->win));
	memset(&slot->grant, 0, sizeof(slot->grant));
}

/*
 * Drop the slot's windows, which may lie above a slot moved back
 * (lower_floor, reset_ceiling): the milliseconds between lie in other
 * nodes' windows.  The next windowed claim asks again.
 */
static inline void
shid_citus_window_drop(ShidSlot *slot)
{
	slot->win.start = slot->win.end = slot->win.renew = slot->win.renew_at = 0;
	slot->win.next_start = slot->win.next_end = 0;
	slot->win.lane = slot->win.lane_bits = 0;
	slot->win.next_lane = slot->win.next_lane_bits = 0;
}

/*
 * reset_ceiling() moved the slot, maybe back: its windows are dropped.
 * Returns the end of the last window this server granted for the shard
 * (0 but on a coordinator), which the new ceiling stays above; the
 * generation the reset bumps makes a coordinator ask the nodes what they
 * hold before its next grant (citus_learn.c).
 */
static inline int64
shid_citus_slot_reset(ShidSlot *slot)
{
	shid_citus_window_drop(slot);
	return slot->grant.end;
}

/*
 * A window granted: [start, end) in Unix ms, one lane of 2 ^ lane_bits of
 * the values of each of its milliseconds (0 bits: all of them).
 */
typedef struct ShidGrant
{
	int64		start;
	int64		end;
	int16		lane;
	int16		lane_bits;
} ShidGrant;

/*
 * Where the slot's window is renewed (or left): at.  A claim at or past
 * win.renew takes the slow path (generator.c), which a window of one lane
 * takes for every claim.
 */
static inline void
shid_window_set_renew(ShidSlot *slot, int64 at)
{
	slot->win.renew_at = at;
	slot->win.renew = slot->win.lane_bits != 0 ? Min(at, slot->win.start) : at;
}

/*
 * Make the grant the slot's window (citus_ask.c), moving the slot to its
 * start if it lies before.
 */
static inline void
shid_window_set_locked(ShidSlot *slot, const ShidGrant *grant)
{
	if (slot->ms < grant->start)
	{
		/* The slot never reached start: every value of it is free. */
		shid_slot_reset(slot, grant->start);
	}
	slot->win.start = grant->start;
	slot->win.end = grant->end;
	slot->win.lane = grant->lane;
	slot->win.lane_bits = grant->lane_bits;
	shid_window_set_renew(slot, grant->start + (grant->end - grant->start) / 2);
	slot->win.next_start = 0;
	slot->win.next_end = 0;
}

/*
 * Store a window granted: join it to the one the slot holds, or keep it
 * for next, or make it the slot's.
 */
static inline void
shid_window_store_locked(ShidSlot *slot, const ShidGrant *grant)
{
	if (grant->end <= slot->ms)
		return;					/* the slot left it behind already */
	if ((slot->capacity >> grant->lane_bits) == 0)
		return;					/* a lane of no value: a coordinator that
								 * disagrees; asked again */
	if (slot->ms >= slot->win.start && slot->ms < slot->win.end)
	{
		/*
		 * A window that lasts: join one of its lane that follows on, or
		 * keep it for next.
		 */
		if (grant->start <= slot->win.end && grant->lane == slot->win.lane &&
			grant->lane_bits == slot->win.lane_bits)
		{
			slot->win.end = Max(slot->win.end, grant->end);
			shid_window_set_renew(slot, grant->start + (grant->end - grant->start) / 2);
		}
		else
		{
			slot->win.next_start = grant->start;
			slot->win.next_end = grant->end;
			slot->win.next_lane = grant->lane;
			slot->win.next_lane_bits = grant->lane_bits;
			shid_window_set_renew(slot, slot->win.end);
		}
	}
	else
		shid_window_set_locked(slot, grant);
}

/* The slot's window ended: the next one, granted ahead, if it still serves. */
static inline void
shid_window_next_locked(ShidSlot *slot)
{
	if (slot->ms >= slot->win.end && slot->win.next_end != 0)
	{
		ShidGrant	next = {slot->win.next_start, slot->win.next_end,
		slot->win.next_lane, slot->win.next_lane_bits};

		if (next.end > slot->ms)
			shid_window_set_locked(slot, &next);
		else
			slot->win.next_start = slot->win.next_end = 0;
	}
}

#endif							/* SHARDED_ID_CITUS_SLOT_H */
