/*-------------------------------------------------------------------------
 *
 * src/citus.c
 *	  Shard windows on Citus: a node mints a shard's ids only in the
 *	  milliseconds that the coordinator granted it.
 *
 * Citus evaluates a column default such as next_id(5) on the node that
 * plans the write: the coordinator for an INSERT through it, a worker for
 * an INSERT ... SELECT it pushes down or a write sent to the worker.  Every
 * node has its own generator, so two nodes minting for one shard in the
 * same millisecond would repeat ids.  Instead of a node field in the id,
 * the coordinator hands out time:
 *
 *	 - A window is a range [start, end) of Unix milliseconds of one shard
 *	   (and layout, as slots are keyed), granted to one node.  No other node
 *	   is ever granted a millisecond of it, so inside its window a node uses
 *	   the whole sequence field, 1,024 ids per millisecond in Instagram's
 *	   layout, and no number runs out however often nodes come and go.
 *	 - The coordinator (group 0) is the one authority: each of its slots
 *	   keeps the end of the last window it granted for the shard
 *	   (grant_end).  A grant starts at the latest of the coordinator's
 *	   clock, that end and the requester's minimum start (where its slot
 *	   is), and lasts sharded_id.citus_window ms.  A grant that would start
 *	   more than SHID_WINDOW_AHEAD_MS ahead of the coordinator's clock is
 *	   not given: the requester is told when to come back, and waits, so
 *	   ids are never more than a second ahead of the clock.
 *	 - Every window's end lies under the coordinator's durable ceiling
 *	   (ceiling.c: WAL record, flush, state file, publish) before the grant
 *	   is returned.  A new slot's grant_end is where new slots start: the
 *	   ceiling the previous run left, or that a standby replayed.  So after
 *	   a crash, a restart or a promotion, no millisecond is granted twice;
 *	   with asynchronous replication a promoted standby may lack the last
 *	   records, as for minting itself.  reset_ceiling keeps the ceiling
 *	   above every end granted.
 *	 - The coordinator refuses (55000, naming why): a requester that is not
 *	   an active primary of its pg_dist_node (a removed or disabled node
 *	   stops minting once its window ends: at most a second), a requester
 *	   whose sharded_id.stripes or sharded_id.stripe differ from its own
 *	   (the settings that shape an id; naming the setting and both values),
 *	   and any call where it is not the coordinator.  It grants to itself
 *	   in-process.
 *
 * On a node, the slot of a shard holds its window (slots.h).  next_id's
 * claim (generator.c), in a backend that mints in windows (shid_windowed:
 * a database with the citus extension on a server that preloads Citus),
 * compares the slot's millisecond with win_renew under the slot's
 * spinlock, before it takes a value: one compare.  At or past it the call
 * comes here (shid_window_slow):
 *
 *	 - Past the middle of a window that still lasts, one backend asks for
 *	   the next window while the others go on minting in this one, so that
 *	   a steady minter never waits for the round trip.  A window that
 *	   follows on is joined to this one; another is kept as the next, and
 *	   used when this one ends.
 *	 - Outside every window, one backend per server and shard asks; the
 *	   others wait for it on the slot's condition variable (bounded,
 *	   interruptible).  A worker asks, in the same request, for the windows
 *	   of up to SHID_WINDOW_BATCH other shards that are due and that it
 *	   minted in the last minute (shid_slots_to_renew), so that a worker
 *	   minting many shards in turn asks about once per batch and window.  A
 *	   failed ask (the coordinator refused, or could not be reached; not the
 *	   asker's own cancel or error) backs off server-wide for that shard
 *	   for SHID_WINDOW_BACKOFF_MS, or until pg_dist_node changes here
 *	   (shid_citus_members): meanwhile every caller without a window
 *	   gets the failure's error, and none opens a connection, whatever its
 *	   role or the number of its calls.
 *	 - A worker asks over libpq (libpq-be-fe-helpers.h: non-blocking, latch
 *	   waits, interruptible, a short connect timeout), connecting to the
 *	   coordinator that its pg_dist_node names, with citus.node_conninfo,
 *	   as the owner of the sharded_id extension, as Citus's own connections
 *	   between nodes log in as its extension's owner.  A server has at
 *	   most 8 requests open at once, and keeps at most 8 connections
 *	   between requests, each until its backend's transaction ends (the
 *	   coordinator ends one after a second idle); the others last one
 *	   request.  So roles that are not superusers there cannot hold more
 *	   of the owner's connections to the coordinator.  A node waits 2 s at most to connect
 *	   and 6 s for an answer.  The asker's mark is cleared by PG_FINALLY on
 *	   an error and by a before_shmem_exit callback on a FATAL.
 *	 - A database without the citus extension on a Citus server mints as on
 *	   any server: the slots are the server's, so its ids may move a slot's
 *	   millisecond past the window; a windowed backend then asks for a
 *	   window that starts at the slot's millisecond or later.  Uniqueness
 *	   within the server comes from the shared slot, as always.  One
 *	   database per server mints in windows.
 *	 - A node that restarts, or a worker's standby promoted, has no window:
 *	   it asks again, and the coordinator grants after the last end.
 *
 * Servers without Citus in shared_preload_libraries never get here:
 * shid_citus_init says no at start-up, shid_windowed stays false and the
 * claim's compare is skipped by a test of that backend-local bool.  On
 * Citus, each backend reads its group once and caches it; Citus's trigger
 * on pg_dist_local_group invalidates the table's relcache entry when the
 * group changes, and the callback below then closes next_id's one check
 * (shid_mint_open), so that the next call reads it again.
 *
 * Why not Citus's scheme for sequences (a bigint sequence of each node
 * starts at groupId << 48): it keys a range by group id, which grows with
 * every citus_add_node, failed ones too, and is never reused, and it spends
 * 15 bits on it and none on time.  1.6 put the group id in 5 bits of the
 * sequence field and ran out after 31 additions, with 32 ids per
 * millisecond and shard on each node.  A minter number leased per node
 * would not run out, but still splits the field (a hot shard minted by one
 * node keeps 1/32 of it), needs a table of leases on the coordinator that
 * must be dumped, renewed and moved with a failover, and ties the lease to
 * the ceiling that every database of a server pushes.  Windows split time
 * instead of the field: a node that mints a shard alone gets all of it,
 * nothing is numbered, the only state is one end per shard that the
 * coordinator's ceiling already makes durable, and ids stay time-sorted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "ceiling.h"
#include "citus.h"
#include "citus_conn.h"
#include "commands/dbcommands.h"
#include "common/hashfn.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "layout.h"
#include "libpq-fe.h"
#include "libpq/libpq-be-fe-helpers.h"
#include "reserve.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "miscadmin.h"
#include "slots.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"

/* How long a failed ask stops every backend of the server asking again. */
#define SHID_WINDOW_BACKOFF_MS	1000

/*
 * The requester's clock of a grant (shid_window_grant), where it is not a
 * node's: this server's own minting, or a node too old to send it.
 */
#define SHID_CLOCK_OWN			(-1)
#define SHID_CLOCK_UNKNOWN		(-2)

/*
 * How far a node's clock may lie from the coordinator's for it to get
 * windows: a node whose clock is off by more would lift the shards it
 * mints that far from every other node's time.
 */
#define SHID_WINDOW_MAX_SKEW_MS	60000

/* Longest a backend waits for a window that another backend asks for. */
#define SHID_WINDOW_WAIT_MS		15000

bool		shid_node_known = true;
bool		shid_mint_open = true;
bool		shid_windowed = false;
int			shid_citus_window_ms = SHID_WINDOW_DEFAULT_MS;

/* Whether Citus is preloaded (set at start-up). */
static bool shid_citus_preload = false;

/* This database's pg_dist_local_group, or InvalidOid: no citus extension. */
static Oid	shid_local_group_relid = InvalidOid;

/* And its pg_dist_node, whose changes end the back-offs (shid_citus_members). */
static Oid	shid_dist_node_relid = InvalidOid;

static bool shid_callback_registered = false;

/* Bumped by every invalidation the callback takes: a read it overlapped is read again. */
static uint64 shid_citus_invalidations = 0;

/* This backend's Citus group, once learnt: 0 on the coordinator. */
static int32 shid_citus_group = -1;

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
} ShidCitusShared;

static ShidCitusShared *shid_citus_shared = NULL;

/*
 * This backend's connection to the coordinator (kept until its transaction
 * ends if shid_coord_keep allows), the connection string it was opened
 * with, and whether it holds one of the server's open requests and one of
 * its kept connections.
 */
static PGconn *shid_coord_conn = NULL;
static char *shid_coord_conninfo = NULL;
static bool shid_coord_permit = false;	/* one of the server's open requests */
static bool shid_coord_kept = false;	/* one of the server's kept connections */

static bool shid_coord_request_begin(uint32 max, int64 deadline_us);
static void shid_coord_permit_release(void);
static void shid_coord_kept_release(void);
static bool shid_xact_callback_registered = false;

/* The slot whose window this backend is asking for, for shid_window_exit. */
static ShidSlot *shid_asking_slot = NULL;

/*
 * Most other slots whose windows a node renews in the same request (a
 * worker minting many shards in turn renews them together).
 */
#define SHID_WINDOW_BATCH	1023

/*
 * The shards a worker minted in the last minute are renewed with any
 * request, lapsed windows too: its first id of such a shard costs no
 * request of its own.
 */
#define SHID_RENEW_RECENT_MS	60000

/* Those slots, marked as asked for by this backend, and what came back. */
static ShidSlot *shid_renewing[SHID_WINDOW_BATCH];
static int64 shid_renew_min[SHID_WINDOW_BATCH];
static int64 shid_renew_start[SHID_WINDOW_BATCH];
static int64 shid_renew_end[SHID_WINDOW_BATCH];
static int	shid_renewing_n = 0;
static bool shid_exit_registered = false;

/* What a grant answered, or why there was none. */
typedef struct ShidWindowAnswer
{
	bool		ok;				/* a window, or a time to come back */
	int64		start;			/* the window; end 0: come back ... */
	int64		end;
	int32		retry_after;	/* ... in this many ms */
	char		sqlstate[6];
	char	   *message;
	char	   *detail;
	char	   *hint;
} ShidWindowAnswer;

/* Whether shared_preload_libraries names citus. */
static bool
shid_citus_preloaded(void)
{
	char	   *raw;
	List	   *names;
	ListCell   *lc;
	bool		found = false;

	if (shared_preload_libraries_string == NULL)
		return false;
	raw = pstrdup(shared_preload_libraries_string);
	if (!SplitDirectoriesString(raw, ',', &names))
		return false;
	foreach(lc, names)
	{
		char	   *name = (char *) lfirst(lc);
		char	   *base = last_dir_separator(name);
		size_t		len;

		base = base ? base + 1 : name;
		len = strlen(base);
		if (len > strlen(DLSUFFIX) &&
			strcmp(base + len - strlen(DLSUFFIX), DLSUFFIX) == 0)
			len -= strlen(DLSUFFIX);
		if (len == 5 && strncmp(base, "citus", 5) == 0)
			found = true;
	}
	return found;
}

/*
 * At start-up (_PG_init): whether Citus is preloaded, when backends learn
 * whether they mint in windows on their first call.
 */
bool
shid_citus_init(void)
{
	shid_node_known = true;
	if (!shid_citus_preloaded())
		return false;
	shid_citus_preload = true;
	shid_node_known = false;
	shid_mint_open = false;
	return true;
}

Size
shid_citus_shmem_size(void)
{
	return MAXALIGN(sizeof(ShidCitusShared));
}

/* Attach to (or, first, create) the Citus state.  AddinShmemInitLock held. */
void
shid_citus_shmem_init(void)
{
	bool		found;

	shid_citus_shared = ShmemInitStruct("sharded_id citus", sizeof(ShidCitusShared), &found);
	if (!found)
	{
		memset(shid_citus_shared, 0, sizeof(ShidCitusShared));
		SpinLockInit(&shid_citus_shared->mutex);
		shid_citus_shared->dboid = InvalidOid;
		shid_citus_shared->failed_shard = -1;
		pg_atomic_init_u32(&shid_citus_shared->requests, 0);
		pg_atomic_init_u32(&shid_citus_shared->kept, 0);
		ConditionVariableInit(&shid_citus_shared->requests_cv);
	}
}

/* A change of this database's pg_dist_local_group, or of any relation while it has none. */
static void
shid_citus_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == shid_local_group_relid ||
		shid_local_group_relid == InvalidOid)
	{
		shid_node_known = false;
		shid_mint_open = false;
		shid_citus_invalidations++;
	}
}

/* Whether the table has a row, read without an index or privilege check. */
static bool
shid_first_int4(Oid relid, int32 *value)
{
	Relation	rel = table_open(relid, AccessShareLock);
	SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	HeapTuple	tuple = systable_getnext(scan);
	bool		found = HeapTupleIsValid(tuple);

	if (found && value != NULL)
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, 1, RelationGetDescr(rel), &isnull);

		*value = isnull ? -1 : DatumGetInt32(d);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * What this node knows of the cluster's membership, as a number that
 * changes with it: its group and the versions (xmin) of pg_dist_node's
 * rows, which every add, removal, activation and disabling of a node
 * rewrites here as Citus syncs them.  A back-off set under one membership
 * ends with it (shid_window_slow): a node added again or activated right
 * after a refusal mints at once.  Read without an index or privilege check.
 *
 * Locks: AccessShareLock on pg_dist_node.
 */
static uint32
shid_citus_members(void)
{
	uint32		members = hash_bytes_uint32((uint32) shid_citus_group);
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;

	if (!OidIsValid(shid_dist_node_relid))
		return members;
	rel = table_open(shid_dist_node_relid, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
		members = hash_combine(members, HeapTupleHeaderGetXmin(tuple->t_data));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return members;
}

/* What shid_citus_read_node found. */
typedef enum ShidNodeRead
{
	SHID_NODE_OK,				/* *group is this database's group */
	SHID_NODE_NO_GROUP,			/* pg_dist_local_group is empty */
	SHID_NODE_NOT_ADDED,		/* group 0 and an empty pg_dist_node */
	SHID_NODE_CHANGING			/* changed under every read */
} ShidNodeRead;

/*
 * Read this database's Citus group, or 0 without the citus extension
 * (shid_local_group_relid then invalid).  Errors only as a table scan can.
 *
 * Locks: AccessShareLock on pg_dist_node and pg_dist_local_group.
 */
static ShidNodeRead
shid_citus_read_node_once(int32 *group)
{
	Oid			relid;
	Oid			node_relid;
	bool		has_nodes;

	*group = -1;
	relid = OidIsValid(get_extension_oid("citus", true)) ?
		get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE) : InvalidOid;
	node_relid = get_relname_relid("pg_dist_node", PG_CATALOG_NAMESPACE);
	shid_local_group_relid = relid;
	shid_dist_node_relid = OidIsValid(relid) ? node_relid : InvalidOid;
	if (!OidIsValid(relid) || !OidIsValid(node_relid))
	{
		/* No Citus cluster in this database. */
		shid_local_group_relid = InvalidOid;
		shid_dist_node_relid = InvalidOid;
		*group = 0;
		return SHID_NODE_OK;
	}

	/*
	 * pg_dist_node first: a worker's activation gives it its group and its
	 * rows in one transaction, so that an empty pg_dist_node read before a
	 * group is never taken for the coordinator's group 0 read after.
	 */
	has_nodes = shid_first_int4(node_relid, NULL);
	if (!shid_first_int4(relid, group) || *group < 0)
		return SHID_NODE_NO_GROUP;
	if (*group == 0 && !has_nodes)
		return SHID_NODE_NOT_ADDED;
	return SHID_NODE_OK;
}

/*
 * The same, read again if an invalidation of the group overlapped the read
 * (the callback ran while a table was opened), a few times at most.
 *
 * Locks: AccessShareLock on pg_dist_node and pg_dist_local_group.
 */
static ShidNodeRead
shid_citus_read_node(int32 *group)
{
	if (!shid_callback_registered)
	{
		CacheRegisterRelcacheCallback(shid_citus_relcache_callback, (Datum) 0);
		shid_callback_registered = true;
	}
	for (int attempt = 0; attempt < 8; attempt++)
	{
		uint64		before = shid_citus_invalidations;
		ShidNodeRead result = shid_citus_read_node_once(group);

		if (shid_citus_invalidations == before)
			return result;
	}
	return SHID_NODE_CHANGING;
}

/*
 * At the exit of a backend that was asking for a window (a FATAL in the
 * middle): clear its mark and wake the backends waiting for it.  No
 * back-off: the exit is this backend's own (a role may terminate its own
 * backends), not a failure the coordinator answered.
 */
static void
shid_window_exit(int code, Datum arg)
{
	ShidSlot   *slot = shid_asking_slot;

	shid_asking_slot = NULL;
	/* The server's open request and kept connection this backend held. */
	shid_coord_permit_release();
	shid_coord_kept_release();
	for (int i = -1; i < shid_renewing_n; i++)
	{
		ShidSlot   *s = i < 0 ? slot : shid_renewing[i];

		if (s == NULL)
			continue;
		SpinLockAcquire(&s->mutex);
		if (s->win_asker == MyProcPid)
			s->win_asker = 0;
		SpinLockRelease(&s->mutex);
		ConditionVariableBroadcast(&s->win_cv);
	}
	shid_renewing_n = 0;
}

/*
 * This database's sharded_id extversion, or NULL: no such extension.
 *
 * Locks: AccessShareLock on pg_extension.
 */
static char *
shid_extension_version(void)
{
	Oid			extoid = get_extension_oid("sharded_id", true);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;

	if (!OidIsValid(extoid))
		return NULL;
	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_pg_extension_extversion,
									 RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/*
 * Whether this database's sharded_id is still at 2.0, whose SQL has
 * neither citus_window_high_water nor the form of citus_grant_windows that
 * takes the node's clock.  Locks: as shid_extension_version.
 */
static bool
shid_extension_at_2_0(void)
{
	char	   *version = shid_extension_version();

	return version != NULL && strcmp(version, "2.0") == 0;
}

/*
 * Learn whether this backend mints in windows, or refuse.  Called by
 * next_id when shid_mint_open is false and minting is on; off its path.
 *
 * Locks: AccessShareLock on pg_dist_local_group and pg_dist_node; the
 * Citus state's spinlock.
 */
void
shid_citus_learn_node(void)
{
	int32		group;
	Oid			dboid;

	if (!shid_citus_preload || shid_node_known)
	{
		shid_node_known = true;
		return;
	}
	switch (shid_citus_read_node(&group))
	{
		case SHID_NODE_OK:
			break;
		case SHID_NODE_NO_GROUP:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("this Citus node has no group id"),
					 errdetail("pg_catalog.pg_dist_local_group has no group id, and sharded ids minted here need the coordinator, which pg_dist_node names."),
					 errhint("Add the node from the coordinator with citus_add_node.")));
			break;
		case SHID_NODE_NOT_ADDED:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("this Citus node has not been given its group id"),
					 errdetail("pg_dist_local_group says group 0 and pg_dist_node is empty, as on a worker the coordinator has not added yet; it would take itself for the coordinator."),
					 errhint("Add the node from the coordinator with citus_add_node; on a cluster of one node, run citus_set_coordinator_host on it.")));
			break;
		case SHID_NODE_CHANGING:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the group id of this Citus node is changing"),
					 errdetail("pg_dist_local_group changed while it was read, several times in a row."),
					 errhint("Try again.")));
			break;
	}
	shid_citus_group = group;
	if (OidIsValid(shid_local_group_relid) && group == 0)
	{
		/*
		 * A coordinator grants itself windows in-process, with the whole
		 * sequence field, while nodes that still run 1.6's library mint
		 * with their group id in it at any millisecond: the two repeat ids.
		 * Windows start at the coordinator's update to 2.0, which the
		 * upgrade notes put after every node runs 2.0's library; until then
		 * the coordinator refuses, as 2.0 workers do (it has no
		 * citus_grant_windows to ask).  Read at every call until it mints.
		 */
		char	   *version = shid_extension_version();

		if (version != NULL && strtol(version, NULL, 10) < 2)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("this Citus coordinator may not mint until sharded_id is updated to 2.0"),
					 errdetail("Its sharded_id extension is at version %s. From 2.0 on, the nodes of a Citus cluster mint in shard windows, with the whole sequence field, and nodes that still run 1.6's library mint with their group id in it: the two would repeat ids.",
							   version),
					 errhint("Restart every node of the cluster with the 2.0 library, then run ALTER EXTENSION sharded_id UPDATE on the coordinator.")));
	}
	if (OidIsValid(shid_local_group_relid))
	{
		SpinLockAcquire(&shid_citus_shared->mutex);
		if (!OidIsValid(shid_citus_shared->dboid))
			shid_citus_shared->dboid = MyDatabaseId;
		dboid = shid_citus_shared->dboid;
		SpinLockRelease(&shid_citus_shared->mutex);
		if (dboid != MyDatabaseId)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("another database of this server mints sharded ids in Citus shard windows"),
					 errdetail("The shard windows of a server belong to one database with the citus extension, the first that minted (OID %u).",
							   dboid),
					 errhint("Mint in that database, or restart the server.")));
		if (!shid_exit_registered)
		{
			before_shmem_exit(shid_window_exit, (Datum) 0);
			shid_exit_registered = true;
		}
		shid_windowed = true;
	}
	else
		shid_windowed = false;
	shid_node_known = true;
}

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
	floor_ms = shid_citus_learn_floor(shid_citus_window_ms, &clock_ms);
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
 * Grant a window of the slot's shard, here on the coordinator: from the
 * latest of the requester's clock, the end of the last window granted,
 * what the nodes reported (shid_grant_learned_floor) and min_start,
 * for sharded_id.citus_window ms, its end under the durable ceiling before
 * it is returned.  Returns false, granting nothing, with *retry_after (ms)
 * when it would start more than SHID_WINDOW_AHEAD_MS ahead of the
 * requester's clock: node_clock, a node's as it asked; for this server's
 * own minting (node_clock SHID_CLOCK_OWN), or a node too old to send its
 * clock (SHID_CLOCK_UNKNOWN), this server's paced clock (the clock, or,
 * after the clock stepped back behind the windows it granted itself, the
 * time it read at the last such grant plus the monotonic time since, so
 * that its windows move on one ms per ms, as a slot ahead of the clock
 * does), or the nodes' time as they last reported it, moved on since,
 * whichever is later.  Uniqueness does not rest on it: grant_end only grows, and every
 * end is covered.
 *
 * Locks: the slot's spinlock, then (released) the ceiling lock; then, with
 * a synchronous standby, SyncRepLock.
 */
static void shid_wait_for_standbys(XLogRecPtr lsn);

static bool
shid_window_grant(ShidSlot *slot, const ShidLayout *layout, int64 min_start,
				  int64 node_clock, int64 *start, int64 *end, int32 *retry_after)
{
	int64		now = shid_clock_ms();
	int64		mono = shid_monotonic_ms();
	int64		window = shid_citus_window_ms;
	int64		paced;
	int64		ref;
	int64		cluster;
	int64		s;
	int64		e;
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
	if (slot->grant_mono > 0 && now < slot->grant_end)
		paced = Max(now, slot->grant_paced + (mono - slot->grant_mono));
	/*
	 * This server's own windows follow the nodes' time where its clock
	 * runs behind theirs, as a server restarted with its clock behind its
	 * ceiling mints on from the ceiling, one ms per ms.
	 */
	ref = node_clock >= 0 ? node_clock : Max(paced, cluster);
	s = Max(Max(ref, Max(base, slot->grant_end)), min_start);
	if (s > ref + SHID_WINDOW_AHEAD_MS)
	{
		SpinLockRelease(&slot->mutex);
		*retry_after = (int32) Min(s - ref - SHID_WINDOW_AHEAD_MS, SHID_WINDOW_AHEAD_MS);
		return false;
	}
	e = s + window;
	slot->grant_end = e;
	if (node_clock < 0)
	{
		slot->grant_paced = paced;
		slot->grant_mono = mono;
	}
	SpinLockRelease(&slot->mutex);

	/* A window the layout cannot hold is never used: its end is spent. */
	shid_check_unix_ms(layout, e);
	SHID_INJECTION_POINT("sharded-id-grant-before-cover");
	lsn = shid_ceiling_cover(e);

	/*
	 * On a synchronous standby before the node mints in it: the record that
	 * covers e may be another backend's, whose commit still waits for the
	 * standby, and this grant's transaction may write none.
	 */
	if (shid_wal_rmgr_id != 0 && shid_wal_log_ceiling && !XLogRecPtrIsInvalid(lsn))
		shid_wait_for_standbys(lsn);
	SHID_INJECTION_POINT("sharded-id-grant-after-cover");
	*start = s;
	*end = e;
	return true;
}

/*
 * Take one of the max requests for windows this server may have open at
 * the coordinator at once, waiting, interruptibly, until deadline_us
 * (monotonic) at most; false if none came free.
 */
static bool
shid_coord_request_begin(uint32 max, int64 deadline_us)
{
	for (;;)
	{
		uint32		n = pg_atomic_read_u32(&shid_citus_shared->requests);
		int64		left_ms;

		if (n < max)
		{
			if (pg_atomic_compare_exchange_u32(&shid_citus_shared->requests, &n, n + 1))
				break;
			continue;
		}
		left_ms = (deadline_us - shid_monotonic_us()) / 1000;
		if (left_ms <= 0)
		{
			ConditionVariableCancelSleep();
			return false;
		}
		/* At most 100 ms at a time: a wake-up may come before the sleep. */
		(void) ConditionVariableTimedSleep(&shid_citus_shared->requests_cv, Min(left_ms, 100),
										   PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return true;
}

/* Give back a request taken with shid_coord_request_begin. */
static void
shid_coord_request_end(void)
{
	pg_atomic_fetch_sub_u32(&shid_citus_shared->requests, 1);
	ConditionVariableSignal(&shid_citus_shared->requests_cv);
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
 * The coordinator's address and this node's own name and port, from this
 * database's pg_dist_node (Citus syncs it to every node).  Errors as SPI
 * can.
 *
 * Locks: AccessShareLock on pg_dist_node.
 */
static bool
shid_citus_addresses(int32 group, char **coord_host, int *coord_port,
					 char **own_name, int *own_port)
{
	static const char *sql =
		"SELECT n.groupid, n.nodename, n.nodeport FROM pg_catalog.pg_dist_node n"
		" WHERE n.noderole::pg_catalog.text OPERATOR(pg_catalog.=) 'primary'"
		" AND (n.groupid OPERATOR(pg_catalog.=) 0 OR n.groupid OPERATOR(pg_catalog.=) $1)";
	Oid			argtypes[1] = {INT4OID};
	Datum		values[1] = {Int32GetDatum(group)};
	bool		found_coord = false;
	bool		found_own = false;
	MemoryContext caller = CurrentMemoryContext;

	SPI_connect();
	if (SPI_execute_with_args(sql, 1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_node");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int32		g = DatumGetInt32(SPI_getbinval(tuple, desc, 1, &isnull));
		char	   *name = SPI_getvalue(tuple, desc, 2);
		int			port = DatumGetInt32(SPI_getbinval(tuple, desc, 3, &isnull));

		if (name == NULL)
			continue;
		if (g == 0)
		{
			*coord_host = MemoryContextStrdup(caller, name);
			*coord_port = port;
			found_coord = true;
		}
		if (g == group)
		{
			*own_name = MemoryContextStrdup(caller, name);
			*own_port = port;
			found_own = true;
		}
	}
	SPI_finish();
	return found_coord && found_own;
}

/*
 * How long a node waits for the coordinator: to connect, and for the
 * answer to a request (the coordinator's statement_timeout, 5 s, and a
 * second more).  libpq's connect_timeout binds only its blocking connect,
 * and the backend helpers' waits have no end, so these are kept here.
 */
#define SHID_COORD_CONNECT_MS	2000
#define SHID_COORD_ANSWER_MS	6000

/*
 * Requests for windows a server has open at the coordinator at most, and
 * connections to it kept between requests.
 */
#define SHID_COORD_MAX_REQUESTS	8
#define SHID_COORD_MAX_KEPT		8

/* Close the connection to the coordinator, if any. */
static void
shid_coord_close(void)
{
	PGconn	   *conn = shid_coord_conn;

	shid_coord_conn = NULL;
	if (shid_coord_conninfo != NULL)
	{
		pfree(shid_coord_conninfo);
		shid_coord_conninfo = NULL;
	}
	libpqsrv_disconnect(conn);
	shid_coord_kept_release();
}

/* Give back this backend's kept connection of the server's, if it has one. */
static void
shid_coord_kept_release(void)
{
	if (shid_coord_kept)
	{
		shid_coord_kept = false;
		pg_atomic_fetch_sub_u32(&shid_citus_shared->kept, 1);
	}
}

/* Give back this backend's open request, if it holds one. */
static void
shid_coord_permit_release(void)
{
	if (shid_coord_permit)
	{
		shid_coord_permit = false;
		shid_coord_request_end();
	}
}

/*
 * May this backend keep its connection to the coordinator after a request?
 * Yes if it keeps one already, or if fewer than SHID_COORD_MAX_KEPT are kept
 * on this server: a worker minting many shards reuses its connection, and
 * sessions left idle in a transaction hold no more than that many (which
 * the coordinator ends after a second idle).
 */
static bool
shid_coord_keep(void)
{
	uint32		n;

	if (shid_coord_kept)
		return true;
	n = pg_atomic_read_u32(&shid_citus_shared->kept);
	while (n < SHID_COORD_MAX_KEPT)
	{
		if (pg_atomic_compare_exchange_u32(&shid_citus_shared->kept, &n, n + 1))
		{
			shid_coord_kept = true;
			return true;
		}
	}
	return false;
}

/* At the end of every transaction: close the connection to the coordinator. */
static void
shid_citus_xact_callback(XactEvent event, void *arg)
{
	if (shid_coord_conn != NULL)
		shid_coord_close();
	shid_coord_permit_release();
}

/* An answer that says why there is no window. */
static void
shid_answer_failed(ShidWindowAnswer *answer, const char *sqlstate, char *message,
				   char *detail, char *hint)
{
	answer->ok = false;
	strlcpy(answer->sqlstate, sqlstate, sizeof(answer->sqlstate));
	answer->message = message;
	answer->detail = detail;
	answer->hint = hint;
}

/*
 * Ask the coordinator for a window of the shard, and of the first extras
 * slots of shid_renewing (their answers into shid_renew_start and _end,
 * end 0: none), over a connection of this backend's own (libpq's
 * non-blocking calls, with latch waits and deadlines: a cancel or a
 * termination interrupts them), kept for the rest of the transaction if
 * shid_coord_keep allows, else closed after the request, and closed at once
 * after any failure or error, so that no call is left half done on it.  A
 * kept connection that broke (the coordinator restarted, or ended it after
 * a second idle) is opened again once.  Never errors but on an
 * interrupt or a lack of file descriptors: the answer says what failed.
 *
 * Locks: AccessShareLock on pg_dist_node and pg_extension; one of the
 * server's open requests (shid_coord_request_begin).
 */
static void
shid_window_grant_remote(const ShidLayout *layout, int32 shard, int64 min_start,
						 int extras, ShidWindowAnswer *answer)
{
	char	   *coord_host = NULL;
	char	   *own_name = NULL;
	int			coord_port = 0;
	int			own_port = 0;
	StringInfoData conninfo;
	StringInfoData shard_text;
	char		group_text[16];
	char		port_text[16];
	StringInfoData min_text;
	char		stripes_text[16];
	char		stripe_text[16];
	char		clock_text[32];
	const char *params[10];
	bool		with_clock = !shid_extension_at_2_0();
	const char *volatile coord_label;

	if (!shid_citus_addresses(shid_citus_group, &coord_host, &coord_port, &own_name, &own_port))
	{
		shid_answer_failed(answer, "55000",
						   psprintf("pg_dist_node names no coordinator or no primary of group %d", shid_citus_group),
						   pstrdup("A Citus node asks the coordinator, which pg_dist_node names as the primary of group 0, for the windows its ids are minted in."),
						   pstrdup("Run citus_set_coordinator_host on the coordinator, and add the node with citus_add_node."));
		return;
	}

	coord_label = psprintf("%s:%d", coord_host, coord_port);
	shid_node_conninfo(&conninfo, coord_host, coord_port);

	/*
	 * The session's settings come with it, above what the coordinator
	 * database's owner may set for it (ALTER DATABASE SET): no role of
	 * theirs, not read-only, and a grant that waits for synchronous
	 * standbys where there are some.
	 */
	appendStringInfoString(&conninfo, " connect_timeout = 2 application_name = sharded_id_window"
						   " options = '-c statement_timeout=5000 -c lock_timeout=2000 -c idle_session_timeout=1000"
						   " -c role=none -c default_transaction_read_only=off -c synchronous_commit=on'");

	/* The shard asked for first, then the others renewed with it. */
	initStringInfo(&shard_text);
	initStringInfo(&min_text);
	appendStringInfo(&shard_text, "{%d", shard);
	appendStringInfo(&min_text, "{" INT64_FORMAT, min_start);
	for (int i = 0; i < extras; i++)
	{
		appendStringInfo(&shard_text, ",%d", shid_renewing[i]->key.shard);
		appendStringInfo(&min_text, "," INT64_FORMAT, shid_renew_min[i]);
		shid_renew_end[i] = 0;
	}
	appendStringInfoChar(&shard_text, '}');
	appendStringInfoChar(&min_text, '}');
	snprintf(group_text, sizeof(group_text), "%d", shid_citus_group);
	snprintf(port_text, sizeof(port_text), "%d", own_port);
	snprintf(stripes_text, sizeof(stripes_text), "%d", shid_stripes);
	snprintf(stripe_text, sizeof(stripe_text), "%d", shid_stripe);
	params[0] = shard_text.data;
	params[1] = layout->name;
	params[2] = group_text;
	params[3] = own_name;
	params[4] = port_text;
	params[5] = min_text.data;
	params[6] = stripes_text;
	params[7] = stripe_text;
	params[8] = shid_slot_reserved(shard, layout) ? "true" : "false";
	/* The clock, read again just before each call; 2.0's form has none. */
	params[9] = clock_text;

	if (!shid_xact_callback_registered)
	{
		RegisterXactCallback(shid_citus_xact_callback, NULL);
		shid_xact_callback_registered = true;
	}
	/*
	 * At most SHID_COORD_MAX_REQUESTS requests are open at once on this
	 * server, and SHID_COORD_MAX_KEPT connections kept between requests:
	 * roles that are not superusers here cannot hold the extension owner's
	 * connections to the coordinator, idle or busy, beyond that.  A kept
	 * connection to another address, or broken, is closed first.
	 */
	if (shid_coord_conn != NULL &&
		(strcmp(shid_coord_conninfo, conninfo.data) != 0 || PQstatus(shid_coord_conn) != CONNECTION_OK ||
		 PQtransactionStatus(shid_coord_conn) != PQTRANS_IDLE))
		shid_coord_close();
	PG_TRY();
	{
		PGresult   *res = NULL;
		bool		timed_out = false;
		int64		answer_deadline = shid_monotonic_us() + SHID_COORD_ANSWER_MS * INT64CONST(1000);

		if (!shid_coord_request_begin(SHID_COORD_MAX_REQUESTS, answer_deadline))
			shid_answer_failed(answer, "53300",
							   psprintf("%d requests for shard windows are open at the Citus coordinator %s already",
										SHID_COORD_MAX_REQUESTS, coord_label),
							   psprintf("A Citus node has at most %d requests open at the coordinator at once, and none ended within %d s.",
										SHID_COORD_MAX_REQUESTS, SHID_COORD_ANSWER_MS / 1000),
							   pstrdup("Check that the coordinator answers, and not slowly: a synchronous standby that does not confirm holds every grant."));
		else
		{
			bool		kept = shid_coord_conn != NULL;

			shid_coord_permit = true;
			for (int attempt = 0; attempt < 2; attempt++)
			{
				if (shid_coord_conn == NULL)
				{
					shid_coord_conn = shid_remote_connect(conninfo.data,
														 Min(answer_deadline, shid_monotonic_us() + SHID_COORD_CONNECT_MS * INT64CONST(1000)));
					shid_coord_conninfo = MemoryContextStrdup(TopMemoryContext, conninfo.data);
					kept = false;
				}
				if (shid_coord_conn == NULL || PQstatus(shid_coord_conn) != CONNECTION_OK)
					break;
				snprintf(clock_text, sizeof(clock_text), INT64_FORMAT, shid_clock_ms());
				res = shid_remote_exec(shid_coord_conn, with_clock ?
									   "SELECT shard_id, window_start, window_end, retry_after FROM sharded_id.citus_grant_windows"
									   "($1::integer[], $2, $3::integer, $4, $5::integer, $6::bigint[], $7::integer, $8::integer, $9::boolean, $10::bigint)" :
									   "SELECT shard_id, window_start, window_end, retry_after FROM sharded_id.citus_grant_windows"
									   "($1::integer[], $2, $3::integer, $4, $5::integer, $6::bigint[], $7::integer, $8::integer, $9::boolean)",
									   with_clock ? 10 : 9, params, answer_deadline, &timed_out);
				/* A kept connection that broke (the coordinator ended it idle): once more, anew. */
				if (!timed_out && kept && PQstatus(shid_coord_conn) == CONNECTION_BAD)
				{
					PQclear(res);
					res = NULL;
					shid_coord_close();
					continue;
				}
				break;
			}
			if (timed_out)
				shid_answer_failed(answer, "08006",
								   psprintf("the Citus coordinator %s did not answer within %d s", coord_label,
											SHID_COORD_ANSWER_MS / 1000),
								   pstrdup("A Citus node waits that long for the windows its ids are minted in; the coordinator's own statement timeout is 5 s."),
								   pstrdup("Check that the coordinator is up and reachable, and not stopped or overloaded."));
			else if (shid_coord_conn == NULL || PQstatus(shid_coord_conn) != CONNECTION_OK)
			{
				shid_answer_failed(answer, "08001",
								   psprintf("could not connect to the Citus coordinator %s", coord_label),
								   pstrdup(shid_coord_conn == NULL ? "out of memory" :
										   PQstatus(shid_coord_conn) != CONNECTION_BAD ?
										   psprintf("It did not complete the connection within %d s.", SHID_COORD_CONNECT_MS / 1000) :
										   PQerrorMessage(shid_coord_conn)),
								   pstrdup("A Citus node asks the coordinator for the windows its ids are minted in, as the owner of the sharded_id extension, as Citus's own connections between nodes log in (citus.node_conninfo, a password file)."));
				PQclear(res);
			}
			else
			{
				PGconn	   *conn = shid_coord_conn;

				/* One row per shard asked for, in their order. */
				if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 + extras &&
					PQnfields(res) == 4 && !PQgetisnull(res, 0, 0) &&
					pg_strtoint32(PQgetvalue(res, 0, 0)) == shard)
				{
					answer->ok = true;
					if (!PQgetisnull(res, 0, 1) && !PQgetisnull(res, 0, 2))
					{
						answer->start = pg_strtoint64(PQgetvalue(res, 0, 1));
						answer->end = pg_strtoint64(PQgetvalue(res, 0, 2));
					}
					else
						answer->retry_after = PQgetisnull(res, 0, 3) ? 100 : pg_strtoint32(PQgetvalue(res, 0, 3));
					for (int i = 0; i < extras; i++)
					{
						if (PQgetisnull(res, i + 1, 0) || PQgetisnull(res, i + 1, 1) || PQgetisnull(res, i + 1, 2) ||
							pg_strtoint32(PQgetvalue(res, i + 1, 0)) != shid_renewing[i]->key.shard)
							continue;
						shid_renew_start[i] = pg_strtoint64(PQgetvalue(res, i + 1, 1));
						shid_renew_end[i] = pg_strtoint64(PQgetvalue(res, i + 1, 2));
					}
				}
				else
				{
					const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
					const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
					const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
					const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

					shid_answer_failed(answer, state && strlen(state) == 5 ? state : "XX000",
									   pstrdup(msg ? msg : PQerrorMessage(conn)),
									   detail ? pstrdup(detail) : NULL,
									   hint ? pstrdup(hint) : NULL);
				}
				PQclear(res);
			}
			shid_coord_permit_release();
		}
		/* Kept only after a call that answered, and within the cap. */
		if (!answer->ok || !shid_coord_keep())
			shid_coord_close();
	}
	PG_CATCH();
	{
		shid_coord_close();
		shid_coord_permit_release();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * Get a window of the slot's shard that starts at min_start or later: from
 * this server if it is the coordinator, else over libpq.  While the
 * coordinator says to come back (the window would start more than
 * SHID_WINDOW_AHEAD_MS ahead of its clock), wait and ask again, for twice
 * that at most.
 */
static void
shid_window_request(ShidSlot *slot, int64 min_start, ShidWindowAnswer *answer)
{
	const ShidLayout *layout = shid_layout_by_key(slot->key.layout_key);
	int			extras = shid_renewing_n;
	int64		deadline_us = shid_monotonic_us() + 2 * SHID_WINDOW_AHEAD_MS * INT64CONST(1000);

	for (;;)
	{
		memset(answer, 0, sizeof(*answer));
		if (shid_citus_group == 0)
		{
			int32		retry_after = 0;

			answer->ok = true;
			if (!shid_window_grant(slot, layout, min_start, SHID_CLOCK_OWN, &answer->start, &answer->end,
								   &retry_after))
				answer->retry_after = retry_after;
		}
		else
		{
			shid_window_grant_remote(layout, slot->key.shard, min_start, extras, answer);
			extras = 0;
		}
		if (!answer->ok)
			return;
		if (answer->end > 0)
		{
			int64		now = shid_clock_ms();

			if (answer->end > now)
				return;

			/*
			 * This node's clock passed the window already: it runs ahead of
			 * the coordinator's.  Ask again from this clock on, within the
			 * same deadline, rather than mint outside the window and ask
			 * anew without end.
			 */
			min_start = Max(min_start, now);
			answer->retry_after = 0;
		}
		if (shid_monotonic_us() > deadline_us)
		{
			shid_answer_failed(answer, "55000",
							   psprintf("the windows of shard %d run more than %d ms ahead of this node's clock",
										slot->key.shard, SHID_WINDOW_AHEAD_MS),
							   psprintf("Ids of shard %d may not be minted more than %d ms ahead of the clock of the node that mints them, and the windows granted for the shard reach that far: another node whose clock runs ahead of this one's mints the shard, the shard is minted faster than the layout's ids per millisecond, or, where the coordinator mints, its clock was set back.",
										slot->key.shard, SHID_WINDOW_AHEAD_MS),
							   pstrdup("Synchronise the clocks of the cluster's nodes, or spread the shard's writes over time; after a clock set back, the shard mints again once the clock reaches the windows granted."));
			return;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(1, Min(answer->retry_after, 100)), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Make [start, end) the slot's window, moving the slot to its start if it
 * lies before.  Slot's spinlock held; so for shid_window_store_locked,
 * below, which joins a window to the one the slot holds, or keeps it for
 * next, or makes it the slot's.
 */
static inline void
shid_window_set_locked(ShidSlot *slot, int64 start, int64 end)
{
	if (slot->ms < start)
	{
		/* The slot never reached start: every value of it is free. */
		shid_slot_reset(slot, start);
	}
	slot->win_start = start;
	slot->win_end = end;
	slot->win_renew = start + (end - start) / 2;
	slot->next_start = 0;
	slot->next_end = 0;
}

/* The error of a node that may not mint, in the coordinator's words. */
static SHID_NORETURN void
shid_window_refused(const char *sqlstate, const char *message, const char *detail,
					const char *hint)
{
	ereport(ERROR,
			(errcode(MAKE_SQLSTATE(sqlstate[0], sqlstate[1], sqlstate[2],
								   sqlstate[3], sqlstate[4])),
			 errmsg("this Citus node may not mint: %s", message),
			 detail ? errdetail_internal("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

/* The error of a caller that finds the shard's back-off: the last failure. */
static SHID_NORETURN void
shid_window_backed_off(int32 shard)
{
	ShidCitusShared copy;

	SpinLockAcquire(&shid_citus_shared->mutex);
	memcpy(&copy, shid_citus_shared, sizeof(copy));
	SpinLockRelease(&shid_citus_shared->mutex);
	if (copy.failed_shard == shard && copy.message[0] != '\0')
		shid_window_refused(copy.sqlstate, copy.message,
							copy.detail[0] ? copy.detail : NULL,
							copy.hint[0] ? copy.hint : NULL);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("this Citus node has no window to mint shard %d in", shard),
			 errdetail("Its last request for one failed less than %d ms ago, and this server asks again only after that.",
					   SHID_WINDOW_BACKOFF_MS),
			 errhint("Try again.")));
	pg_unreachable();
}

/*
 * After an ask: store the window answered, or, after a failure (the
 * coordinator's refusal, or no connection to it), back off; after this
 * backend's own error (answer NULL) nothing is stored and nobody backs
 * off.  Clear the asker's mark and wake the waiters; the same, without a
 * back-off, for the slots renewed with it.
 *
 * Locks: each slot's spinlock in turn.
 */
static inline void
shid_window_store_locked(ShidSlot *slot, int64 start, int64 end)
{
	if (end <= slot->ms)
		return;					/* the slot left it behind already */
	if (slot->ms >= slot->win_start && slot->ms < slot->win_end)
	{
		/* A window that lasts: join one that follows on, or keep it for next. */
		if (start <= slot->win_end)
		{
			slot->win_end = Max(slot->win_end, end);
			slot->win_renew = start + (end - start) / 2;
		}
		else
		{
			slot->next_start = start;
			slot->next_end = end;
			slot->win_renew = slot->win_end;
		}
	}
	else
		shid_window_set_locked(slot, start, end);
}

static void
shid_window_asked(ShidSlot *slot, const ShidWindowAnswer *answer, uint32 members)
{
	int64		retry_us = shid_monotonic_us() + SHID_WINDOW_BACKOFF_MS * INT64CONST(1000);

	SpinLockAcquire(&slot->mutex);
	if (answer != NULL && answer->ok)
		shid_window_store_locked(slot, answer->start, answer->end);
	else if (answer != NULL && strcmp(answer->sqlstate, "53400") != 0 &&
			 strcmp(answer->sqlstate, "53300") != 0)
	{
		/*
		 * Only a failure answered backs off server-wide: the asker's own
		 * error (its statement timeout, a cancel) is its own, and must not
		 * stop other roles' backends minting the shard.  Nor does the
		 * coordinator's refusal of a slot beyond sharded_id.max_free_slots
		 * (53400): a caller that may have one from the whole table gets it;
		 * nor this server's cap on open requests (53300), which a role's
		 * own requests may fill.
		 */
		slot->win_retry_us = retry_us;
		slot->win_retry_members = members;
	}
	if (slot->win_asker == MyProcPid)
		slot->win_asker = 0;
	SpinLockRelease(&slot->mutex);
	shid_asking_slot = NULL;
	ConditionVariableBroadcast(&slot->win_cv);

	/* The others renewed in the same request: what came back, if anything. */
	for (int i = 0; i < shid_renewing_n; i++)
	{
		ShidSlot   *other = shid_renewing[i];

		SpinLockAcquire(&other->mutex);
		if (answer != NULL && answer->ok && shid_renew_end[i] > 0)
			shid_window_store_locked(other, shid_renew_start[i], shid_renew_end[i]);
		if (other->win_asker == MyProcPid)
			other->win_asker = 0;
		SpinLockRelease(&other->mutex);
		ConditionVariableBroadcast(&other->win_cv);
	}
	shid_renewing_n = 0;
}

/*
 * Ask for the slot's next window, as the slot's one asker (win_asker is
 * this backend), and store it.  On failure, back off; if the slot still
 * has a window (renewing), go on without, else raise the coordinator's
 * error.  The mark is cleared and waiters are woken in every case, an
 * error's too.
 *
 * Locks: the slot's spinlock, never across the request.
 */
static void
shid_window_ask(ShidSlot *slot, int64 min_start, bool renewing)
{
	ShidWindowAnswer answer;
	uint32		members = shid_citus_members();

	memset(&answer, 0, sizeof(answer));
	shid_asking_slot = slot;
	shid_renewing_n = 0;
	/* A worker renews, with it, the other shards it mints now and then. */
	if (shid_citus_group != 0)
	{
		int64		now_ms = shid_clock_ms();

		shid_renewing_n = shid_slots_to_renew(slot->key.layout_key, slot, now_ms,
											  now_ms - SHID_RENEW_RECENT_MS,
											  shid_monotonic_us(), shid_renewing,
											  shid_renew_min, SHID_WINDOW_BATCH);
	}
	PG_TRY();
	{
		shid_window_request(slot, min_start, &answer);
	}
	PG_CATCH();
	{
		shid_window_asked(slot, NULL, members);
		PG_RE_THROW();
	}
	PG_END_TRY();
	shid_window_asked(slot, &answer, members);

	if (!answer.ok)
	{
		SpinLockAcquire(&shid_citus_shared->mutex);
		shid_citus_shared->failed_shard = slot->key.shard;
		strlcpy(shid_citus_shared->sqlstate, answer.sqlstate, sizeof(shid_citus_shared->sqlstate));
		strlcpy(shid_citus_shared->message, answer.message ? answer.message : "", sizeof(shid_citus_shared->message));
		strlcpy(shid_citus_shared->detail, answer.detail ? answer.detail : "", sizeof(shid_citus_shared->detail));
		strlcpy(shid_citus_shared->hint, answer.hint ? answer.hint : "", sizeof(shid_citus_shared->hint));
		SpinLockRelease(&shid_citus_shared->mutex);
		if (!renewing)
			shid_window_refused(answer.sqlstate, answer.message ? answer.message : "no window",
								answer.detail, answer.hint);
		ereport(DEBUG1,
				(errmsg_internal("could not renew the window of shard %d: %s",
								 slot->key.shard, answer.message ? answer.message : "")));
	}
}

/*
 * The slow path of a windowed claim (generator.c): the slot's millisecond
 * lies at or past win_renew.  Returns once the caller may claim again:
 * the slot has a window that covers its millisecond (or it was moved to a
 * new window's start), or the window lasts and someone else renews it.
 * Errors if no window can be had.
 *
 * Locks: the slot's spinlock, never across a request or a wait.
 */
void
shid_window_slow(ShidSlot *slot)
{
	int64		started_us = shid_monotonic_us();
	bool		slept = false;

	for (;;)
	{
		int64		mono_us = shid_monotonic_us();
		int64		now_ms = shid_clock_ms();
		uint32		members = 0;
		int64		min_start;
		bool		ask = false;
		bool		renewing = false;
		bool		wait = false;
		bool		failed = false;

		/* Backed off: under the membership of now? (read off the lock) */
		if (mono_us < slot->win_retry_us)
			members = shid_citus_members();
		SpinLockAcquire(&slot->mutex);
		if (slot->ms >= slot->win_end && slot->next_end != 0)
		{
			/* This window ended: the next one, granted ahead, if it still serves. */
			if (slot->next_end > slot->ms)
				shid_window_set_locked(slot, slot->next_start, slot->next_end);
			else
				slot->next_start = slot->next_end = 0;
		}
		if (slot->ms < slot->win_renew)
			;					/* a window, renewed meanwhile: claim again */
		else if (slot->ms < slot->win_end && slot->ms >= slot->win_start)
		{
			/*
			 * Past the middle of a window that lasts: one backend renews it,
			 * unless one does already, the next is granted, or an ask failed
			 * just now; the others claim on until its end.
			 */
			if (slot->win_asker == 0 && slot->next_end == 0 && mono_us >= slot->win_retry_us)
			{
				slot->win_asker = MyProcPid;
				ask = renewing = true;
			}
			slot->win_renew = slot->win_end;
		}
		else if (slot->win_asker != 0)
			wait = true;
		else if (mono_us < slot->win_retry_us && slot->win_retry_members == members)
			failed = true;		/* a failure of now: its error, no ask */
		else
		{
			slot->win_asker = MyProcPid;
			ask = true;
		}
		min_start = Max(slot->ms, now_ms);
		SpinLockRelease(&slot->mutex);

		if (ask)
		{
			if (slept)
				ConditionVariableCancelSleep();
			shid_window_ask(slot, min_start, renewing);
			if (renewing)
				return;
			slept = false;
			/* A window the slot left behind already: ask again, or wait, as long as above. */
			wait = true;
			if (shid_monotonic_us() - started_us <= SHID_WINDOW_WAIT_MS * INT64CONST(1000))
				continue;
		}
		if (failed)
		{
			if (slept)
				ConditionVariableCancelSleep();
			shid_window_backed_off(slot->key.shard);
		}
		if (!wait)
			break;
		if (mono_us - started_us > SHID_WINDOW_WAIT_MS * INT64CONST(1000))
		{
			if (slept)
				ConditionVariableCancelSleep();
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("timed out waiting for a window of shard %d", slot->key.shard),
					 errdetail("Backends of this server have been asking the Citus coordinator for one for %d s.",
							   SHID_WINDOW_WAIT_MS / 1000),
					 errhint("Check that the coordinator can be reached from this node.")));
		}
		/* The first call prepares to sleep and returns at once. */
		(void) ConditionVariableTimedSleep(&slot->win_cv, 50, PG_WAIT_EXTENSION);
		slept = true;
	}
	if (slept)
		ConditionVariableCancelSleep();
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
	Datum		values[4];
	bool		nulls[4] = {0};
	int64		start = 0;
	int64		end = 0;
	int32		retry_after = 0;

	values[0] = Int32GetDatum(shard);
	if (slot == NULL)
		nulls[1] = nulls[2] = nulls[3] = true;
	else if (shid_window_grant(slot, layout, min_start, node_clock, &start, &end, &retry_after))
	{
		values[1] = Int64GetDatum(start);
		values[2] = Int64GetDatum(end);
		nulls[3] = true;
	}
	else
	{
		nulls[1] = nulls[2] = true;
		values[3] = Int32GetDatum(retry_after);
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * citus_grant_windows(shard_ids integer[], layout text, group_id integer,
 *					   node_name text, node_port integer, min_starts bigint[],
 *					   stripes integer, stripe integer, reserved boolean,
 *					   node_clock bigint)
 *		RETURNS TABLE (shard_id integer, window_start bigint,
 *					   window_end bigint, retry_after integer)
 *
 * On the Citus coordinator, called by a node over its own connection
 * (citus.c): grant the node, for each shard of shard_ids in turn, a window
 * of the shard's milliseconds, [start, end) in Unix ms, from its min_starts
 * on at the earliest, its end durable before it returns; or, where it would
 * start more than a second ahead of node_clock (the node's clock as it
 * asked), NULLs and the ms to come back after.  One row per shard, in their
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
 * measured against this server's clock.
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
