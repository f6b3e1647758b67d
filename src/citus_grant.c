/*-------------------------------------------------------------------------
 *
 * src/citus_grant.c
 *	  Shard windows on Citus, the coordinator's side: granting windows.
 *
 * The design is in doc/sharded_id-design.md, "Citus".  The coordinator
 * (group 0) is the one authority.  Each of its slots keeps the shard's
 * frames (slot->grant).  Every window's end lies
 * under its durable ceiling (ceiling.c), and, with a synchronous standby,
 * on the standby, before the grant is returned.
 *
 * This file owns:
 *	 - shid_window_grant: one grant, for a node's request or, in-process,
 *	   for the coordinator's own minting (citus_ask.c calls it), placed
 *	   among the shard's frames by citus_frames.c;
 *	   shid_grant_learned_floor, what the nodes reported (citus_learn.c);
 *	   shid_grant_own_until, the bound of its own windows it tells them.
 *	 - The wait for synchronous standbys.
 *	 - citus_grant_windows, the SQL function the nodes call, and its
 *	   checks of the requester (shid_check_requester,
 *	   shid_citus_node_active).
 *
 * It calls citus.c, citus_frames.c and citus_learn.c, never citus_ask.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "ceiling.h"
#include "citus.h"
#include "citus_int.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "layout.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "slots.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

/*
 * How far a node's clock may lie from the coordinator's for it to get
 * windows: a node whose clock is off by more would lift the shards it
 * mints that far from every other node's time.
 */
#define SHID_WINDOW_MAX_SKEW_MS	60000

/*
 * On the coordinator: the time no window may start before, as the nodes
 * reported it since this server started, was promoted, or its ceiling's
 * generation last changed (reset_ceiling, lower_floor); asked again first
 * if it is not known (citus_learn.c).  A reset between the read of the
 * generation and the answers makes the next grant ask again.  *cluster_ms
 * is the nodes' time now: the latest clock a node reported, moved on by
 * the monotonic clock since (0: no node answered), for this server's own
 * windows when its clock runs behind theirs.
 *
 * Locks: the Citus state's spinlock, not across the questions.
 */
static int64
shid_grant_learned_floor(int64 *cluster_ms)
{
	uint32		generation = shid_generation();
	int64		floor_ms;
	int64		clock_ms;

	*cluster_ms = 0;
	SpinLockAcquire(&shid_citus_shared->mutex);
	if (shid_citus_shared->learned && shid_citus_shared->learned_generation == generation)
	{
		floor_ms = shid_citus_shared->learned_floor;
		if (shid_citus_shared->learned_clock > 0)
			*cluster_ms = shid_citus_shared->learned_clock +
				(shid_monotonic_ms() - shid_citus_shared->learned_mono);
		SpinLockRelease(&shid_citus_shared->mutex);
		return floor_ms;
	}
	SpinLockRelease(&shid_citus_shared->mutex);

	/*
	 * Until the update to 2.1 has run (Citus runs it on every node), the
	 * nodes have no citus_window_high_water to answer with: grant as 2.0
	 * did, and ask once updated.
	 */
	if (shid_extension_at_2_0())
		return 0;
	floor_ms = shid_citus_learn_floor(shid_citus_window_ms, shid_grant_own_until(), &clock_ms);
	SpinLockAcquire(&shid_citus_shared->mutex);
	if (shid_citus_shared->learned && shid_citus_shared->learned_generation == generation)
		floor_ms = Max(floor_ms, shid_citus_shared->learned_floor);
	shid_citus_shared->learned = true;
	shid_citus_shared->learned_generation = generation;
	shid_citus_shared->learned_floor = floor_ms;
	shid_citus_shared->learned_clock = clock_ms;
	shid_citus_shared->learned_mono = shid_monotonic_ms();
	*cluster_ms = clock_ms;
	SpinLockRelease(&shid_citus_shared->mutex);
	return floor_ms;
}

/*
 * Keep the greatest paced clock of this server's own windows, less the
 * monotonic ms then (shid_grant_own_until): after a step back of the
 * clock it runs ahead of it.  A CAS loop on an atomic, no lock held.
 */
static inline void
shid_grant_note_paced(int64 ahead)
{
	uint64		old = pg_atomic_read_u64(&shid_citus_shared->paced_ahead);

	while ((int64) old < ahead &&
		   !pg_atomic_compare_exchange_u64(&shid_citus_shared->paced_ahead, &old, (uint64) ahead))
		;
}

/*
 * On the coordinator: the Unix ms that the windows it grants itself from
 * now on end before, plus the time since (they move on with the clock).
 * Its own windows start at most a second after the latest of its clock,
 * the nodes' time (shid_grant_learned_floor's cluster_ms) and a paced
 * clock ahead of it (shid_grant_note_paced).  The nodes keep it, from
 * each answer and from the learn, and report it to the next coordinator
 * (citus_learn.c): the windows a coordinator granted itself are known to
 * no other server.
 *
 * Locks: the Citus state's spinlock.
 */
int64
shid_grant_own_until(void)
{
	int64		now = shid_clock_ms();
	int64		mono = shid_monotonic_ms();
	int64		paced_ahead = (int64) pg_atomic_read_u64(&shid_citus_shared->paced_ahead);
	int64		until = now;

	SpinLockAcquire(&shid_citus_shared->mutex);
	if (shid_citus_shared->learned && shid_citus_shared->learned_clock > 0)
		until = Max(until, shid_citus_shared->learned_clock + (mono - shid_citus_shared->learned_mono));
	SpinLockRelease(&shid_citus_shared->mutex);
	if (paced_ahead > 0)
		until = Max(until, mono + paced_ahead);
	return until + SHID_WINDOW_AHEAD_MS + shid_citus_window_ms;
}

/*
 * Grant a window of the slot's shard, here on the coordinator: a lane of
 * the last frame of the requester's line of time, or the first lane of
 * that line's next frame (citus_frames.c), from the latest of the
 * requester's clock, the end of the line's last frame, what the nodes
 * reported (shid_grant_learned_floor) and min_start, for
 * sharded_id.citus_window ms; its end under the durable ceiling before it
 * is returned.  No two grants share a value of a millisecond.  lanes: the
 * requester can mint in a lane (else it gets a frame of every value, after
 * every line's).  Returns false, granting nothing, with *retry_after
 * (ms) when the window would start more than SHID_WINDOW_AHEAD_MS ahead of
 * the requester's clock, or every line that serves it is held by nodes of
 * a clock behind (shid_frames_place).  The requester's clock: node_clock,
 * a node's as it asked; for this
 * server's own minting (node_clock SHID_CLOCK_OWN), or a node too old to
 * send its clock (SHID_CLOCK_UNKNOWN), this server's paced clock (the
 * clock, or, after the clock stepped back behind the windows it granted
 * itself, the time it read at the last such grant plus the monotonic time
 * since, so that its windows move on one ms per ms, as a slot ahead of the
 * clock does), or the nodes' time as they last reported it, moved on
 * since, whichever is later.  Uniqueness does not rest on it: each line's
 * frames only move on, lines hold different parts of the values, frames in
 * a part keep out of the whole milliseconds (citus_frames.c), and every
 * end is covered.
 *
 * Locks: the slot's spinlock, then (released) the ceiling lock; then, with
 * a synchronous standby, SyncRepLock.
 */
static void shid_wait_for_standbys(XLogRecPtr lsn);

bool
shid_window_grant(ShidSlot *slot, const ShidLayout *layout, int64 min_start,
				  int64 node_clock, bool lanes, ShidGrant *grant, int32 *retry_after)
{
	int64		now = shid_clock_ms();
	int64		mono = shid_monotonic_ms();
	int			max_bits = Min(SHID_MAX_LANE_BITS, pg_leftmost_one_pos32((uint32) slot->capacity));
	ShidGrantState *g = &slot->grant;
	int64		paced;
	int64		cluster;
	ShidFrameAsk ask;
	XLogRecPtr	lsn;

	/* Windows of the runs before this one lie under the ceiling it started with. */
	int64		base;

	shid_check_clock(now);
	LWLockAcquire(shid_ceiling->lock, LW_SHARED);
	base = shid_ceiling->floor_ms;
	LWLockRelease(shid_ceiling->lock);
	base = Max(base, shid_grant_learned_floor(&cluster));
	SpinLockAcquire(&slot->mutex);
	/*
	 * Paced only while the windows granted lie ahead of the clock: once the
	 * clock passed them all, the step back is over for this shard.
	 */
	paced = now;
	if (g->mono > 0 && now < g->end)
		paced = Max(now, g->paced + (mono - g->mono));
	/*
	 * This server's own windows follow the nodes' time where its clock
	 * runs behind theirs, as a server restarted with its clock behind its
	 * ceiling mints on from the ceiling, one ms per ms.
	 */
	ask.ref = node_clock >= 0 ? node_clock : Max(paced, cluster);
	ask.min_start = min_start;
	ask.base = base;
	ask.mono = mono;
	ask.max_bits = max_bits;
	ask.lanes = lanes;
	if (!shid_frames_place(g, &ask, grant, retry_after))
	{
		SpinLockRelease(&slot->mutex);
		return false;
	}
	if (node_clock < 0)
	{
		g->paced = paced;
		g->mono = mono;
	}
	SpinLockRelease(&slot->mutex);
	if (node_clock < 0)
		shid_grant_note_paced(paced - mono);

	/*
	 * A window the layout cannot hold is never used: its end is spent.
	 * A lane of a frame granted before is covered already, or is being
	 * covered by the backend that opened the frame: waited for here.
	 */
	shid_check_unix_ms(layout, grant->end);
	SHID_INJECTION_POINT("sharded-id-grant-before-cover");
	lsn = shid_ceiling_cover(grant->end);

	/*
	 * On a synchronous standby before the node mints in it: the record that
	 * covers the end may be another backend's, whose commit still waits for
	 * the standby, and this grant's transaction may write none.
	 */
	if (shid_wal_rmgr_id != 0 && shid_wal_log_ceiling && !XLogRecPtrIsInvalid(lsn))
		shid_wait_for_standbys(lsn);
	SHID_INJECTION_POINT("sharded-id-grant-after-cover");
	return true;
}

/*
 * Whether synchronous standbys are defined, as SyncRepWaitForLSN decides.
 * WalSndCtl's byte for it was a bool until the minor releases 15.13, 16.9
 * and 17.5, and holds flags since (INIT, then DEFINED); the header built
 * against and the server run may differ in that, so the running server's
 * version decides how to read it.  Caller holds SyncRepLock.
 */
static bool
shid_sync_standbys_defined(void)
{
	int			num = pg_strtoint32(GetConfigOption("server_version_num", false, false));
	bool		flags = num >= 180000 || (num >= 170005 && num < 180000) ||
		(num >= 160009 && num < 170000) || (num >= 150013 && num < 160000);
#ifdef SYNC_STANDBY_DEFINED
	uint8		status = (uint8) WalSndCtl->sync_standbys_status;
#else
	uint8		status = (uint8) WalSndCtl->sync_standbys_defined;
#endif

	if (!flags)
		return status != 0;
	/* Flags: INIT (1), DEFINED (2); before INIT, the setting decides. */
	if (status & 1)
		return (status & 2) != 0;
	return SyncRepStandbyNames != NULL && SyncRepStandbyNames[0] != '\0';
}

/*
 * Wait, as a commit does, until the synchronous standbys have flushed the
 * WAL up to lsn, whatever this session's synchronous_commit (set to on for
 * the wait).  SyncRepWaitForLSN ends a wait that a cancel or a statement
 * timeout interrupts with a WARNING only, as a commit must; a grant must
 * not be handed out then, so that is an error here.
 *
 * Locks: SyncRepLock, shared.
 */
static void
shid_wait_for_standbys(XLogRecPtr lsn)
{
	bool		confirmed = true;
	bool		requested;
	int			nest = NewGUCNestLevel();

	(void) set_config_option("synchronous_commit", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	requested = SyncRepRequested();
	if (requested)
	{
		HOLD_INTERRUPTS();
		SyncRepWaitForLSN(lsn, false);
		RESUME_INTERRUPTS();
	}
	AtEOXact_GUC(true, nest);
	if (requested)
	{
		LWLockAcquire(SyncRepLock, LW_SHARED);
		confirmed = !shid_sync_standbys_defined() || WalSndCtl->lsn[SYNC_REP_WAIT_FLUSH] >= lsn;
		LWLockRelease(SyncRepLock);
	}
	if (!confirmed)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("canceling the grant of a shard window while waiting for synchronous replication"),
				 errdetail("The ceiling record that covers the window was not confirmed by the synchronous standbys; a standby promoted now could grant the window again."),
				 errhint("Check the synchronous standbys named in synchronous_standby_names.")));
}

/*
 * Whether the requester (name, port) is an active primary of this
 * database's pg_dist_node.  Its group plays no part: a node added again
 * gets a new one, which reaches the node's pg_dist_local_group after the
 * add, and windows do not depend on it.
 *
 * Locks: AccessShareLock on pg_dist_node.
 */
static bool
shid_citus_node_active(const char *name, int32 port)
{
	static const char *sql =
		"SELECT 1 FROM pg_catalog.pg_dist_node n"
		" WHERE n.nodename OPERATOR(pg_catalog.=) $1"
		" AND n.nodeport OPERATOR(pg_catalog.=) $2"
		" AND n.isactive"
		" AND n.noderole::pg_catalog.text OPERATOR(pg_catalog.=) 'primary'";
	Oid			argtypes[2] = {TEXTOID, INT4OID};
	Datum		values[2];
	bool		found;

	values[0] = CStringGetTextDatum(name);
	values[1] = Int32GetDatum(port);
	SPI_connect();
	if (SPI_execute_with_args(sql, 2, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_node");
	found = SPI_processed > 0;
	SPI_finish();
	return found;
}

/*
 * One row of citus_grant_windows: the shard's window, or when to come
 * back, or NULLs where it has no slot.  The shard asked for gets its slot
 * as the node's caller would here (make): from the whole table for a
 * superuser or a shard of the catalog, else within the free share, so
 * that roles that are not superusers on the nodes cannot fill this table;
 * a shard renewed with it that has no slot gets no window until it is
 * asked for.
 */
static void
shid_grant_row(ReturnSetInfo *rsinfo, const ShidLayout *layout, int32 shard, int64 min_start,
			   int64 node_clock, ShidSlotMake make)
{
	ShidSlot   *slot = shid_lookup_slot(layout, shard, make);
	bool		lanes = node_clock != SHID_CLOCK_UNKNOWN;
	Datum		values[7];
	bool		nulls[7] = {0};
	ShidGrant	grant;
	int32		retry_after = 0;

	/*
	 * 2.0's form returns the first four columns only: the lane and the
	 * bound of this server's own windows are 2.1's.
	 */
	values[0] = Int32GetDatum(shard);
	if (slot == NULL)
		nulls[1] = nulls[2] = nulls[3] = nulls[4] = nulls[5] = true;
	else if (shid_window_grant(slot, layout, min_start, node_clock, lanes, &grant, &retry_after))
	{
		values[1] = Int64GetDatum(grant.start);
		values[2] = Int64GetDatum(grant.end);
		nulls[3] = true;
		values[4] = Int32GetDatum(grant.lane);
		values[5] = Int32GetDatum(1 << grant.lane_bits);
	}
	else
	{
		nulls[1] = nulls[2] = nulls[4] = nulls[5] = true;
		values[3] = Int32GetDatum(retry_after);
	}
	values[6] = Int64GetDatum(shid_grant_own_until());
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * citus_grant_windows(shard_ids integer[], layout text, group_id integer,
 *					   node_name text, node_port integer, min_starts bigint[],
 *					   stripes integer, stripe integer, reserved boolean,
 *					   node_clock bigint)
 *		RETURNS TABLE (shard_id integer, window_start bigint,
 *					   window_end bigint, retry_after integer,
 *					   lane integer, lanes integer, own_until bigint)
 *
 * On the Citus coordinator, called by a node over its own connection
 * (citus_ask.c): grant the node, for each shard of shard_ids in turn, a window
 * of the shard's milliseconds, [start, end) in Unix ms, from its min_starts
 * on at the earliest, its end durable before it returns, in lane lane of
 * lanes equal parts of each millisecond's values (lanes 1: all of them;
 * shid_window_grant); or, where it would
 * start more than a second ahead of node_clock (the node's clock as it
 * asked), NULLs and the ms to come back after; own_until bounds the windows
 * this server grants itself from now on (shid_grant_own_until), which the
 * node keeps for the next coordinator.  One row per shard, in their
 * order (1,024 at most).  Before its first grant since it started, was
 * promoted or reset its ceiling, it asks every node what it holds
 * (citus_learn.c).  Refuses (55000) where this is not the coordinator, a
 * requester that is not an active primary of pg_dist_node, one whose
 * stripes or stripe differ from this server's, and one whose clock lies
 * more than a minute from this server's.  reserved says whether the
 * node's caller may have a slot of the first shard from the whole slot
 * table (a superuser, or a shard of the node's catalog); the others renew
 * slots made already, and get NULLs where there is none.  The form without
 * node_clock is 2.0's, for nodes still on its library: their windows are
 * measured against this server's clock, hold every value of their
 * milliseconds, and the result has no lane columns.
 *
 * Locks: AccessShareLock on pg_dist_local_group and pg_dist_node; the slot
 * table's lock, and sharded_id.shards, if the first shard has no slot yet;
 * each slot's spinlock in turn; the ceiling lock if the ceiling must be
 * raised; the Citus state's spinlock.
 */
static Datum shid_grant_windows(FunctionCallInfo fcinfo, int64 node_clock);

SHID_FUNCTION_INFO(shid_citus_grant_windows_clock);
Datum
shid_citus_grant_windows_clock(PG_FUNCTION_ARGS)
{
	return shid_grant_windows(fcinfo, PG_GETARG_INT64(9));
}

SHID_FUNCTION_INFO(shid_citus_grant_windows);
Datum
shid_citus_grant_windows(PG_FUNCTION_ARGS)
{
	return shid_grant_windows(fcinfo, SHID_CLOCK_UNKNOWN);
}

/* Refuse a requester whose settings or clock disagree with this server's. */
static void
shid_check_requester(const char *node_name, int32 node_port, int32 stripes, int32 stripe,
					 int64 node_clock)
{
	int64		now = shid_clock_ms();

	if (stripes != shid_stripes)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("settings of Citus node %s:%d disagree with the coordinator's: sharded_id.stripes is %d there and %d on the coordinator",
						node_name, node_port, stripes, shid_stripes),
				 errdetail("Every node of a Citus cluster mints with the coordinator's sharded_id.stripes and sharded_id.stripe, the settings that shape an id; a node that disagrees gets no shard window, so that a change rolled out node by node repeats no id."),
				 errhint("Set sharded_id.stripes and sharded_id.stripe as on the coordinator, and restart the node.")));
	if (stripe != shid_stripe)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("settings of Citus node %s:%d disagree with the coordinator's: sharded_id.stripe is %d there and %d on the coordinator",
						node_name, node_port, stripe, shid_stripe),
				 errdetail("Every node of a Citus cluster mints with the coordinator's sharded_id.stripes and sharded_id.stripe, the settings that shape an id; a node that disagrees gets no shard window, so that a change rolled out node by node repeats no id."),
				 errhint("Set sharded_id.stripes and sharded_id.stripe as on the coordinator, and restart the node.")));
	if (node_clock >= 0 && (node_clock > now + SHID_WINDOW_MAX_SKEW_MS ||
							node_clock < now - SHID_WINDOW_MAX_SKEW_MS))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the clock of Citus node %s:%d lies " INT64_FORMAT " ms from the coordinator's",
						node_name, node_port, node_clock - now),
				 errdetail("A node gets shard windows near its own clock, and its clock may lie at most %d s from the coordinator's; the node's reads " INT64_FORMAT ", the coordinator's " INT64_FORMAT " (Unix ms).",
						   SHID_WINDOW_MAX_SKEW_MS / 1000, node_clock, now),
				 errhint("Synchronise the clocks of the cluster's nodes (NTP).")));
}

static Datum
shid_grant_windows(FunctionCallInfo fcinfo, int64 node_clock)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *shard_array = PG_GETARG_ARRAYTYPE_P(0);
	const ShidLayout *layout = shid_layout_by_name(text_to_cstring(PG_GETARG_TEXT_PP(1)));
	int32		group = PG_GETARG_INT32(2);
	char	   *node_name = text_to_cstring(PG_GETARG_TEXT_PP(3));
	int32		node_port = PG_GETARG_INT32(4);
	ArrayType  *min_array = PG_GETARG_ARRAYTYPE_P(5);
	bool		reserved = PG_GETARG_BOOL(8);
	int32		own_group = -1;
	Datum	   *shards;
	Datum	   *mins;
	bool	   *shard_nulls;
	bool	   *min_nulls;
	int			n;
	int			n_mins;

	deconstruct_array(shard_array, INT4OID, sizeof(int32), true, TYPALIGN_INT,
					  &shards, &shard_nulls, &n);
	deconstruct_array(min_array, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &mins, &min_nulls, &n_mins);
	if (n != n_mins || n < 1 || n > SHID_WINDOW_BATCH + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("citus_grant_windows takes 1 to %d shards, with one minimum start each",
						SHID_WINDOW_BATCH + 1),
				 errdetail("It was given %d shards and %d minimum starts.", n, n_mins),
				 errhint("Pass as many minimum starts as shards.")));
	for (int i = 0; i < n; i++)
	{
		if (shard_nulls[i] || min_nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("citus_grant_windows takes no NULL shard or minimum start"),
					 errhint("Pass a shard id and a minimum start for each shard.")));
		shid_check_shard(layout, DatumGetInt32(shards[i]));
	}
	shid_require_shared_state();
	shid_refuse_recovery("grant Citus shard windows");

	if (!shid_citus_preload || shid_citus_read_node(&own_group) != SHID_NODE_OK ||
		!OidIsValid(shid_local_group_relid) || own_group != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this server is not the coordinator of a Citus cluster"),
				 errdetail("Shard windows are granted by the coordinator, the node of group 0 of a database with the citus extension, on a server that preloads Citus; this database's group is %d.",
						   own_group),
				 errhint("Name the coordinator in pg_dist_node (citus_set_coordinator_host).")));
	shid_check_requester(node_name, node_port, PG_GETARG_INT32(6), PG_GETARG_INT32(7), node_clock);
	if (!shid_citus_node_active(node_name, node_port))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("node %s:%d (group %d) is not an active node of the Citus cluster",
						node_name, node_port, group),
				 errdetail("The coordinator's pg_dist_node has no active primary of that name and port: the node was removed or disabled, and gets no shard window."),
				 errhint("Add the node again with citus_add_node, or mint on another node.")));

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < n; i++)
		shid_grant_row(rsinfo, layout, DatumGetInt32(shards[i]), DatumGetInt64(mins[i]),
					   node_clock, i == 0 ? (reserved ? SHID_SLOT_ADMIN : SHID_SLOT_SHARE) : SHID_SLOT_FIND);
	return (Datum) 0;
}
