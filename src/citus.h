/*-------------------------------------------------------------------------
 *
 * src/citus.h
 *	  Shard windows: the milliseconds a Citus node may mint a shard's ids
 *	  in, granted by the coordinator (citus_grant.c) and asked for by the
 *	  node (citus_ask.c); citus.c holds what both sides share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_CITUS_H
#define SHARDED_ID_CITUS_H

#include "postgres.h"

#include "compat.h"
#include "layout.h"

/*
 * How far ahead of the coordinator's clock a window may start, in ms: ids
 * minted on Citus are never more than this ahead of the clock.
 */
#define SHID_WINDOW_AHEAD_MS	1000

/* Bounds and default of sharded_id.citus_window, in ms. */
#define SHID_WINDOW_DEFAULT_MS	100
#define SHID_WINDOW_MIN_MS		10
#define SHID_WINDOW_MAX_MS		1000

/* Whether this backend knows if it mints in windows; false until shid_citus_learn_node. */
extern SHID_INTERNAL bool shid_node_known;

/* Minting is on and shid_node_known: next_id's one check (generator.c). */
extern SHID_INTERNAL bool shid_mint_open;

/*
 * Whether this backend mints in shard windows: a backend of a database
 * with the citus extension, on a server that preloads Citus.  Set once,
 * when the backend learns its node; read on next_id's path.
 */
extern SHID_INTERNAL bool shid_windowed;

/* sharded_id.citus_window, in ms (init.c registers it). */
extern int	shid_citus_window_ms;

struct ShidSlot;

extern bool shid_citus_init(void);
extern void shid_citus_learn_node(void);
extern Size shid_citus_shmem_size(void);
extern void shid_citus_shmem_init(void);
extern void shid_window_slow(struct ShidSlot *slot);
extern int64 shid_citus_learn_floor(int window_ms, int64 own_until, int64 *max_clock);
extern void shid_citus_note_coordinator(int64 own_until);

#endif							/* SHARDED_ID_CITUS_H */
