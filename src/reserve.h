/*-------------------------------------------------------------------------
 *
 * src/reserve.h
 *	  Which callers of next_id may make a generator slot from the part of
 *	  the slot table that is reserved for the shard catalog (reserve.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_RESERVE_H
#define SHARDED_ID_RESERVE_H

#include "postgres.h"

#include "layout.h"

extern bool shid_slot_reserved(int32 shard, const ShidLayout *layout);
extern bool shid_catalog_has_shard(int32 shard, const ShidLayout *layout);

#endif							/* SHARDED_ID_RESERVE_H */
