/*-------------------------------------------------------------------------
 *
 * src/citus_slot.h
 *	  What Citus keeps in a slot (ShidSlot's win and grant, slots.h), as
 *	  slots.c starts and resets a slot: Citus's rules, kept apart from the
 *	  slot table's.  Called with the slot's spinlock held, so inline and
 *	  never failing.  Design: doc/sharded_id-design.md, "Citus".
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
 * reset_ceiling() moved the slot, maybe back: a window may lie below it,
 * so every window is dropped and asked for again.  Returns the end of the
 * last window this server granted for the shard (0 but on a coordinator),
 * which the new ceiling stays above; the generation the reset bumps makes
 * a coordinator ask the nodes what they hold before its next grant
 * (citus_learn.c).
 */
static inline int64
shid_citus_slot_reset(ShidSlot *slot)
{
	slot->win.start = slot->win.end = slot->win.renew = 0;
	slot->win.next_start = slot->win.next_end = 0;
	return slot->grant.end;
}

#endif							/* SHARDED_ID_CITUS_SLOT_H */
