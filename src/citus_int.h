/*-------------------------------------------------------------------------
 *
 * src/citus_int.h
 *	  What the Citus files share inside the module (citus.c, citus_grant.c,
 *	  citus_frames.c, citus_ask.c): the server's Citus state in shared memory, this
 *	  backend's node, and the grant a coordinator makes itself in-process.
 *	  Other files use citus.h.  Design: doc/sharded_id-design.md, "Citus".
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_CITUS_INT_H
#define SHARDED_ID_CITUS_INT_H

#include "postgres.h"

#include "citus.h"
#include "citus_slot.h"
#include "compat.h"
#include "datatype/timestamp.h"
#include "layout.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"

/*
 * The requester's clock of a grant (shid_window_grant), where it is not a
 * node's: this server's own minting, or a node too old to send it.
 */
#define SHID_CLOCK_OWN			(-1)
#define SHID_CLOCK_UNKNOWN		(-2)

/*
 * Most other slots whose windows a node renews in the same request (a
 * worker minting many shards in turn renews them together).
 */
#define SHID_WINDOW_BATCH	1023

/*
 * The server's Citus state in shared memory: which database mints in
 * windows, and the last failed ask, which callers that find its back-off
 * report.
 */
typedef struct ShidCitusShared
{
	slock_t		mutex;			/* protects the fields below */
	Oid			dboid;			/* the database whose backends hold this
								 * server's windows; InvalidOid: none yet */
	int32		failed_shard;	/* the shard of the last failed ask */
	char		sqlstate[6];
	char		message[256];
	char		detail[512];
	char		hint[256];
	pg_atomic_uint32 requests;	/* requests for windows open at the
								 * coordinator (shid_coord_request_begin) */
	ConditionVariable requests_cv;	/* signalled as one ends */
	pg_atomic_uint32 kept;		/* connections kept between requests
								 * (shid_coord_keep) */
	/* On the coordinator: what the nodes reported (citus_learn.c). */
	bool		learned;		/* since start-up (a standby grants none,
								 * so none before its promotion) */
	uint32		learned_generation; /* the ceiling's generation then */
	int64		learned_floor;	/* no window starts before it */
	int64		learned_clock;	/* the latest clock a node reported, */
	int64		learned_mono;	/* and the monotonic ms then */
	pg_atomic_uint64 paced_ahead;	/* the greatest paced clock of its own
									 * windows less the monotonic ms then;
									 * 0: none yet */
	TimestampTz started;		/* when this shared memory was made: with
								 * the system identifier, this server's
								 * name as a coordinator (citus_learn.c) */
	/*
	 * On a node: how far the coordinator's own windows may reach
	 * (shid_citus_note_coordinator, citus_learn.c).  own_until is the
	 * greatest bound the coordinator that learned last and its answers
	 * said, less the monotonic ms; own_before bounds the windows of the
	 * coordinators before it, in Unix ms.
	 */
	char		learner[64];	/* the coordinator that learned last */
	int64		own_until;		/* 0: none said */
	int64		own_before;
} ShidCitusShared;

/* What shid_citus_read_node found. */
typedef enum ShidNodeRead
{
	SHID_NODE_OK,				/* *group is this database's group */
	SHID_NODE_NO_GROUP,			/* pg_dist_local_group is empty */
	SHID_NODE_NOT_ADDED,		/* group 0 and an empty pg_dist_node */
	SHID_NODE_CHANGING			/* changed under every read */
} ShidNodeRead;

/* citus.c: set at start-up and as the backend learns its node. */
extern SHID_INTERNAL ShidCitusShared *shid_citus_shared;
extern SHID_INTERNAL bool shid_citus_preload;	/* Citus is preloaded */

/* This database's pg_dist_local_group, or InvalidOid: no citus extension. */
extern SHID_INTERNAL Oid shid_local_group_relid;

/* This backend's Citus group, once learnt: 0 on the coordinator. */
extern SHID_INTERNAL int32 shid_citus_group;

extern uint32 shid_citus_members(void);
extern bool shid_citus_addresses(int32 group, char **coord_host, int *coord_port,
								 char **own_name, int *own_port);
extern ShidNodeRead shid_citus_read_node(int32 *group);
extern bool shid_extension_at_2_0(void);

/*
 * Most lanes a shard's milliseconds are split in, as log2 (ShidGrantLine's
 * lanes_taken has a bit for each), and never more than the slot's values.
 */
#define SHID_MAX_LANE_BITS	6

/*
 * citus_frames.c: where a request's window lies among a shard's frames
 * (ShidGrantState), under the slot's spinlock: for a requester whose clock
 * is ref, whose slot lies at min_start, that can mint in a lane (lanes),
 * above base, at the monotonic ms mono, in at most 2 ^ max_bits lanes.
 */
typedef struct ShidFrameAsk
{
	int64		ref;
	int64		min_start;
	int64		base;
	int64		mono;
	int			max_bits;
	bool		lanes;
} ShidFrameAsk;

extern bool shid_frames_place(ShidGrantState *g, const ShidFrameAsk *ask, ShidGrant *grant,
							  int32 *retry_after);

/* citus_grant.c: a grant, here on the coordinator. */
extern bool shid_window_grant(struct ShidSlot *slot, const ShidLayout *layout, int64 min_start,
							  int64 node_clock, bool lanes, ShidGrant *grant, int32 *retry_after);
extern int64 shid_grant_own_until(void);

#endif							/* SHARDED_ID_CITUS_INT_H */
