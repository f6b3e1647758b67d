/*-------------------------------------------------------------------------
 *
 * src/init.c
 *	  Loading the module: its settings (GUCs), its shared memory and the
 *	  callbacks it registers with the server.
 *
 * Each setting's variable lives in the file that reads it (the minting
 * switches in generator.c, the slot table's in slots.c, the ceiling's and
 * the WAL's in ceiling.c); this file only registers them.  Shared memory is
 * requested and attached through the shmem_request and shmem_startup
 * hooks, each calling the hook it replaced first (and the errors' hints by
 * emit_log_hook, hints.c); the sharded_id tranche
 * has one LWLock per guarded structure: the slot table, the ceiling and
 * the floors (locks.h gives their order).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/rmgr.h"
#include "ceiling.h"
#include "citus.h"
#include "compat.h"
#include "floors.h"
#include "fmgr.h"
#include "generator.h"
#include "hints.h"
#include "miscadmin.h"
#include "owner.h"
#include "port/pg_bitutils.h"
#include "rmgr.h"
#include "slots.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

/* The sharded_id tranche's LWLocks, in this order. */
#define SHID_LOCK_SLOTS		0
#define SHID_LOCK_CEILING	1
#define SHID_LOCK_FLOORS	2
#define SHID_NUM_LOCKS		3

/*
 * The storage of sharded_id.move_hold, which the GUC machinery needs.  No C
 * code reads it: the moves read the setting in SQL, with
 * current_setting('sharded_id.move_hold', true) (_move_hold, moves.sql).
 */
static char *shid_move_hold_setting = NULL;

/*
 * sharded_id.move_end_blockers, read by SQL only (_wait_shard_lock,
 * _move_create_slot, moves.sql): whether a move ends the sessions that
 * still hold it up once half its wait has passed.  Any role may set it: it
 * is read only in the session that moves (a superuser's), and the mover
 * passes it to its node sessions, whatever role they log in as.
 */
static bool shid_move_end_blockers_setting = true;

/*
 * sharded_id.library_version: the version of the extension this library was
 * built for, read only by the install and update scripts.  Their first
 * statement compares it with their own version, so that a server still
 * running an older library (installed files, no restart) refuses the new SQL
 * with a hint to restart instead of the loader's "could not find function".
 * A library without it (1.6 and earlier) is older than any script that reads
 * it.  The test build of test/t/043_library_version.pl overrides it.
 */
#ifndef SHID_LIBRARY_VERSION
#define SHID_LIBRARY_VERSION "2.1"
#endif
static char *shid_library_version_setting = NULL;

static shmem_request_hook_type shid_prev_shmem_request_hook = NULL;
static shmem_startup_hook_type shid_prev_shmem_startup_hook = NULL;

extern PGDLLEXPORT void _PG_init(void);

static Size
shid_shmem_size(void)
{
	return add_size(add_size(add_size(shid_ceiling_shmem_size(),
									  shid_floors_shmem_size(shid_max_shards)),
							 shid_slots_shmem_size()),
					shid_citus_shmem_size());
}

static void
shid_shmem_request(void)
{
	if (shid_prev_shmem_request_hook)
		shid_prev_shmem_request_hook();
	RequestAddinShmemSpace(shid_shmem_size());
	RequestNamedLWLockTranche("sharded_id", SHID_NUM_LOCKS);
}

static void
shid_shmem_startup(void)
{
	LWLockPadded *locks;

	if (shid_prev_shmem_startup_hook)
		shid_prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	locks = GetNamedLWLockTranche("sharded_id");
	shid_ceiling_shmem_init(&locks[SHID_LOCK_CEILING].lock);
	shid_floors_shmem_init(shid_max_shards, &locks[SHID_LOCK_FLOORS].lock);
	shid_slots_shmem_init(&locks[SHID_LOCK_SLOTS].lock);
	shid_citus_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

/* The resource manager id is 0 (none) or a custom id, 128 to 255. */
static bool
shid_check_rmgr_id(int *newval, void **extra, GucSource source)
{
	if (*newval != 0 && *newval < RM_MIN_CUSTOM_ID)
	{
		GUC_check_errdetail("Custom WAL resource manager ids are between %d and %d; 0 turns WAL logging off.",
							RM_MIN_CUSTOM_ID, RM_MAX_CUSTOM_ID);
		return false;
	}
	return true;
}

/* sharded_id.stripes is a power of two. */
static bool
shid_check_stripes(int *newval, void **extra, GucSource source)
{
	if ((*newval & (*newval - 1)) != 0)
	{
		GUC_check_errdetail("sharded_id.stripes must be a power of two: 1 (no stripes), 2, 4, 8, 16, 32 or 64.");
		return false;
	}
	return true;
}

/* sharded_id.minting: next_id's one check also covers citus.c's first look. */
static void
shid_assign_minting(bool newval, void *extra)
{
	shid_mint_open = newval && shid_node_known;
}

/* The settings defined whenever the library loads, preloaded or not. */
static void
shid_define_loader_gucs(void)
{
	DefineCustomStringVariable("sharded_id.library_version",
							   "Shows the version of the sharded_id library this server has loaded.",
							   "The install and update scripts refuse to run over an older library: restart the server after installing a new version.",
							   &shid_library_version_setting,
							   SHID_LIBRARY_VERSION,
							   PGC_INTERNAL,
							   GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);

	/*
	 * Read by sharded_id.move_shard on a router, which need not preload the
	 * module; defined either way, so that a preloaded router accepts it.
	 */
	DefineCustomStringVariable("sharded_id.move_hold",
							   "Pauses a shard move after it journals this step, for fault-injection tests.",
							   "The move waits while another session holds advisory lock (1936222579, 0). Empty: never pauses.",
							   &shid_move_hold_setting,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);
	DefineCustomBoolVariable("sharded_id.move_end_blockers",
							 "Lets a move's freeze end the sessions that still hold the shard after half its freeze_timeout.",
							 "As pg_repack does: off makes the freeze wait out its whole timeout and fail instead, ending only sessions idle in a transaction.",
							 &shid_move_end_blockers_setting,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

/* The generator's shared state: its size and its statistics. */
static void
shid_define_memory_gucs(void)
{
	DefineCustomIntVariable("sharded_id.max_shards",
							"Sets how many shards, over all layouts, next_id can keep state for.",
							"Each shard in use takes about 720 bytes of shared memory.",
							&shid_max_shards,
							16384,
							1,
							262144,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("sharded_id.max_free_slots",
							"Sets how many of the generator's slots next_id may make for shards outside the shard catalog, for callers that are not superusers.",
							"The rest of sharded_id.max_shards stays for the shards of a database's shard catalog and for superusers. -1: half of sharded_id.max_shards.",
							&shid_max_free_slots,
							-1,
							-1,
							262144,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("sharded_id.track_stats",
							 "Collects the generator's statistics (sharded_id.generator_stats).",
							 NULL,
							 &shid_track_stats,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
}

/* The clock: how far it may leap, and the WAL that replicates its ceiling. */
static void
shid_define_clock_gucs(void)
{
	DefineCustomIntVariable("sharded_id.max_clock_jump",
							"Sets how far the wall clock may leap ahead before next_id refuses to mint.",
							"Measured against the monotonic clock since the durable ceiling was last written. 0 turns the check off.",
							&shid_max_clock_jump,
							SHID_DEFAULT_MAX_CLOCK_JUMP_S,
							0,
							INT_MAX / 1000,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("sharded_id.wal_rmgr_id",
							"Sets the id of sharded_id's custom WAL resource manager, which replicates the clock ceiling.",
							"The same on a primary and its standbys; 128 replays WAL that sharded_id 1.3 wrote. 0 logs nothing.",
							&shid_wal_rmgr_id,
							SHID_DEFAULT_RMGR_ID,
							0,
							RM_MAX_CUSTOM_ID,
							PGC_POSTMASTER,
							0,
							shid_check_rmgr_id, NULL, NULL);
	DefineCustomBoolVariable("sharded_id.wal_log_ceiling",
							 "WAL-logs each raise of the clock ceiling, so that a promoted standby mints after every id it replayed.",
							 "Turning it off gives up that guarantee; it exists to measure its cost. Set for the whole server, never per session.",
							 &shid_wal_log_ceiling,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}

/* Who mints: the stripes, the minting switch and Citus's windows. */
static void
shid_define_minting_gucs(void)
{
	DefineCustomIntVariable("sharded_id.stripes",
							"Sets how many servers may mint for one shard at once, each in its own stripe.",
							"The top log2(stripes) bits of the sequence field hold sharded_id.stripe; 1 means no stripes.",
							&shid_stripes,
							1,
							1,
							SHID_MAX_STRIPES,
							PGC_POSTMASTER,
							0,
							shid_check_stripes, NULL, NULL);
	DefineCustomIntVariable("sharded_id.stripe",
							"Sets this server's stripe, from 0 to sharded_id.stripes - 1.",
							"Every server that mints for the same shards needs a stripe of its own.",
							&shid_stripe,
							0,
							0,
							SHID_MAX_STRIPES - 1,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("sharded_id.minting",
							 "Allows this server to mint sharded ids.",
							 "Turn it off on servers that must never mint, such as the workers of a distributed engine.",
							 &shid_minting,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, shid_assign_minting, NULL);
	DefineCustomIntVariable("sharded_id.citus_window",
							"Sets how long a shard window lasts that a Citus coordinator grants to a node.",
							"Read on the coordinator only. A node mints a shard's ids in the windows granted to it, and asks for the next once half of one has passed.",
							&shid_citus_window_ms,
							SHID_WINDOW_DEFAULT_MS,
							SHID_WINDOW_MIN_MS,
							SHID_WINDOW_MAX_MS,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

void
_PG_init(void)
{
	/*
	 * Loaded without shared_preload_libraries, the module still provides the
	 * decoders; next_id refuses to run (see shid_require_shared_state).
	 */
	shid_define_loader_gucs();
	if (!process_shared_preload_libraries_in_progress)
		return;

	shid_define_memory_gucs();
	shid_define_clock_gucs();
	shid_define_minting_gucs();
	MarkGUCPrefixReserved("sharded_id");
	if (shid_stripe >= shid_stripes)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sharded_id.stripe %d is out of range", shid_stripe),
				 errdetail("With sharded_id.stripes = %d, the stripes are numbered 0 to %d.",
						   shid_stripes, shid_stripes - 1)));
	shid_stripe_bits = pg_leftmost_one_pos32((uint32) shid_stripes);
	/* On Citus, backends learn on their first call whether they mint in windows. */
	(void) shid_citus_init();
	shid_rmgr_register();
	shid_owner_init();
	shid_hints_init();

	shid_prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shid_shmem_request;
	shid_prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shid_shmem_startup;
}
