/*-------------------------------------------------------------------------
 *
 * src/owner.h
 *	  Which shards this server mints for: the owner state of a generator
 *	  slot, kept in step with the shard catalog by owner.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_OWNER_H
#define SHARDED_ID_OWNER_H

#include "postgres.h"

#include "floors.h"
#include "layout.h"

/* A generator slot; its layout is private to generator.c. */
typedef struct ShidSlot ShidSlot;

/* The owner state of a slot. */
#define SHID_OWNER_UNKNOWN	0	/* not read yet (owner.c) */
#define SHID_OWNER_MINTS	1	/* this server mints for the shard */
#define SHID_OWNER_RETIRED	2	/* the shard was given away: refuse */

/* SQLSTATEs of sharded_id's own refusals (class SI: sharded id). */
#define ERRCODE_SHID_SHARD_RETIRED	MAKE_SQLSTATE('S','I','0','0','1')
#define ERRCODE_SHID_MINTING_OFF	MAKE_SQLSTATE('S','I','0','0','2')
#define ERRCODE_SHID_FLOOR_REFUSED	MAKE_SQLSTATE('S','I','0','0','3')

extern void shid_owner_init(void);
extern void shid_owner_change(ShidSlot *slot, const ShidShardKey *key,
							  const ShidLayout *layout, int owner);
extern bool shid_owner_learn(ShidSlot *slot, const ShidShardKey *key,
							 const ShidLayout *layout);

/* In generator.c: set a slot's owner state under its spinlock. */
extern uint8 shid_slot_set_owner(ShidSlot *slot, uint8 owner, bool only_if_unknown);

#endif							/* SHARDED_ID_OWNER_H */
