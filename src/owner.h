/*-------------------------------------------------------------------------
 *
 * src/owner.h
 *	  Which shards this server mints for: the owner state of a generator
 *	  slot (SHID_OWNER_*, slots.h), kept in step with the shard catalog by
 *	  owner.c, which also holds the SQL functions that retire a shard and
 *	  take it back.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_OWNER_H
#define SHARDED_ID_OWNER_H

#include "postgres.h"

#include "floors.h"
#include "layout.h"
#include "slots.h"

/* SQLSTATEs of sharded_id's own refusals (class SI: sharded id). */
#define ERRCODE_SHID_SHARD_RETIRED	MAKE_SQLSTATE('S','I','0','0','1')
#define ERRCODE_SHID_MINTING_OFF	MAKE_SQLSTATE('S','I','0','0','2')
#define ERRCODE_SHID_FLOOR_REFUSED	MAKE_SQLSTATE('S','I','0','0','3')

extern void shid_owner_init(void);
extern void shid_owner_change(ShidSlot *slot, const ShidShardKey *key,
							  const ShidLayout *layout, int owner);
extern void shid_owner_claim(const ShidShardKey *key);
extern bool shid_owner_learn(ShidSlot *slot, const ShidShardKey *key,
							 const ShidLayout *layout);

#endif							/* SHARDED_ID_OWNER_H */
