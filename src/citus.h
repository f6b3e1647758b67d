/*-------------------------------------------------------------------------
 *
 * src/citus.h
 *	  The node field of ids minted on a Citus node (citus.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_CITUS_H
#define SHARDED_ID_CITUS_H

#include "postgres.h"

#include "compat.h"

/*
 * Width of the node field on a server that preloads Citus and sets
 * sharded_id.stripes to 1 (or not at all): the top 5 bits of the sequence
 * field hold the minter number the node leases from the coordinator, 0 to
 * 31, and each node mints 2 ^ (seq_bits - 5) ids per millisecond and shard
 * (32 in Instagram's layout).  Fixed, so that adding a node never changes
 * the ids of another.
 */
#define SHID_CITUS_NODE_BITS 5

/* This backend's stripe or node number: the top bits of the sequence field. */
extern SHID_INTERNAL int shid_node;

/* Whether shid_node is known; false until shid_citus_learn_node sets it. */
extern SHID_INTERNAL bool shid_node_known;

/* Minting is on and shid_node is known: next_id's one check (generator.c). */
extern SHID_INTERNAL bool shid_mint_open;

/* Whether this backend's ids carry a leased minter number (citus.c). */
extern SHID_INTERNAL bool shid_citus_leasing;

/* sharded_id.citus_lease_time, in ms. */
extern int	shid_citus_lease_ms;

extern Size shid_citus_shmem_size(void);
extern void shid_citus_shmem_init(void);
extern void shid_citus_cover(int64 target_ms);
extern bool shid_citus_init(int stripe, int stripes);
extern void shid_citus_learn_node(void);
extern bool shid_citus_try_node(void);

#endif							/* SHARDED_ID_CITUS_H */
