/*-------------------------------------------------------------------------
 *
 * src/ceiling.c
 *	  The durable clock ceiling of the generator: the file sharded_id.state,
 *	  its WAL records (CEILING, RESET) and their replay.
 *
 * The design is in doc/sharded_id-design.md ("Restarts and crashes",
 * "Replication and recovery", and "Limits" for the files it refuses).
 * In short: the file holds a time that no id has passed.  It is raised
 * SHID_LEASE_MS at a time, half a lease early, before any id beyond it is
 * returned.  After a crash, a restart or a clock step, every slot starts at
 * the ceiling read back from the file (floor_ms).
 *
 * The file, version 4 (shid_state_text, shid_parse_state):
 *
 *	 sharded_id state 4
 *	 lsn 0/1A2B3C4D
 *	 ceiling 1763794945123
 *	 floor 1763794944000
 *	 crc32c 1a2b3c4d
 *
 * The CRC-32C covers the lines before it.  "lsn" is the end of the WAL
 * record whose state the file holds (with the records off: where WAL ended
 * when it was written).  Replay applies only records that end after it, as
 * a page's LSN does for a sequence.  So crash recovery never takes the
 * ceiling back to an older record's (a reset's, say).  "floor" is the
 * server-wide floor that 1.4's raise_floor set; reset_ceiling never goes
 * below it.  The older forms it still reads are listed at shid_read_ceiling.
 * The file sharded_id.minted, written once with the first ceiling, tells a
 * server that never minted from one whose state file was lost.
 *
 * A change follows core's order (the WAL before the data): the record is
 * inserted, the WAL flushed up to it, the file carrying the record's LSN
 * written and renamed into place, and only then the new ceiling published
 * to minters.  (A reset publishes its lower ceiling right after the flush:
 * lowering early only makes minters raise it again, under its lock.)  So
 * the file is never ahead of the WAL on disk.  An injection point
 * (compat.h) stands before and after each step, for the crash tests.
 *
 * The resource manager "sharded_id" (rmgr.c) carries these records and
 * the states of single shards (floors.c).  How the shared state is read
 * and changed is at ShidCeiling below.
 *
 * Locks: the ceiling lock, which guards the file and the fields of
 * ShidCeiling but ceiling_ms and generation; what it is taken with, and in
 * which order, is in locks.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>

#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "ceiling.h"
#include "compat.h"
#include "layout.h"
#include "rmgr.h"
#include "port/pg_crc32c.h"
#include "portability/instr_time.h"
#include "storage/fd.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

/* Files in the data directory. */
#define SHID_STATE_FILE		"sharded_id.state"
#define SHID_STATE_TMPFILE	"sharded_id.state.tmp"
#define SHID_MARKER_FILE	"sharded_id.minted"
#define SHID_STATE_VERSION	4

/*
 * The ceiling's shared state (ceiling.h):
 *	 - ceiling_ms is read without a lock (an atomic read).  It only grows,
 *	   but in reset_ceiling.  It is stored only once the file holding the
 *	   new value is durable: a reader never sees a ceiling the file lacks.
 *	 - A caller whose millisecond is still under the ceiling raises it only
 *	   if it gets the ceiling lock without waiting.  A caller past the
 *	   ceiling waits for the lock, then raises it unless someone else did.
 *	 - shid_ceiling_reset_begin/end bracket the one place the ceiling goes
 *	   down.  They bump the generation before the generator reads the
 *	   clock and lowers any slot.  A minter reads the generation before its
 *	   claim and after covering it, and claims again when it changed: no id
 *	   claimed before the reset is returned after it.  cover_slow does not
 *	   raise the ceiling for an overtaken claim.  The ceiling never goes
 *	   below raised_floor_ms.  lower_floor bumps the generation the same
 *	   way.
 *	 - The file is replaced atomically: written to a temporary file,
 *	   fsync'ed, and renamed into place (durable_rename).
 *	 - A backend that WAL-logs a raise first gives its transaction an xid,
 *	   like nextval() (shid_wal_log).  Its commit then flushes the record
 *	   and, with synchronous replication, waits for the standby: a
 *	   transaction that only mints ids does not report success while the
 *	   record that covers them could still be lost in a failover.
 */
ShidCeiling *shid_ceiling = NULL;

/* GUC: seconds the wall clock may run ahead of the monotonic clock. */
int			shid_max_clock_jump = SHID_DEFAULT_MAX_CLOCK_JUMP_S;

/* GUCs: the resource manager id (0: none), and whether raises are logged. */
int			shid_wal_rmgr_id = SHID_DEFAULT_RMGR_ID;
bool		shid_wal_log_ceiling = true;

int64
shid_monotonic_us(void)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	return (int64) INSTR_TIME_GET_MICROSEC(now);
}

int64
shid_monotonic_ms(void)
{
	return shid_monotonic_us() / 1000;
}

/* The text of a state file (version 2, 3 or 4), with its CRC line. */
static void
shid_state_text(int version, XLogRecPtr lsn, int64 ceiling, int64 floor,
				char *buf, size_t size)
{
	pg_crc32c	crc;
	int			len;

	if (version == 2)
		len = snprintf(buf, size, "sharded_id state 2\nceiling %lld\n",
					   (long long) ceiling);
	else if (version == 3)
		len = snprintf(buf, size, "sharded_id state 3\nceiling %lld\nfloor %lld\n",
					   (long long) ceiling, (long long) floor);
	else
		len = snprintf(buf, size, "sharded_id state %d\nlsn %X/%08X\nceiling %lld\nfloor %lld\n",
					   version, LSN_FORMAT_ARGS(lsn), (long long) ceiling,
					   (long long) floor);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf, len);
	FIN_CRC32C(crc);
	snprintf(buf + len, size - len, "crc32c %08x\n", (unsigned int) crc);
}

/*
 * Parse a state file.  Returns NULL and sets *lsn, *ceiling and *floor if
 * the text is a well-formed file, to the byte; otherwise a sentence that
 * says what is wrong with it.  Files before version 4 have LSN 0.
 */
static const char *
shid_parse_state(const char *text, XLogRecPtr *lsn, int64 *ceiling, int64 *floor)
{
	long long	value;
	long long	floor_value = 0;
	unsigned int hi = 0;
	unsigned int lo = 0;
	char		canonical[200];

	*lsn = InvalidXLogRecPtr;
	if (sscanf(text, "sharded_id state 4 lsn %X/%X ceiling %lld floor %lld",
			   &hi, &lo, &value, &floor_value) == 4 ||
		sscanf(text, "sharded_id state 3 ceiling %lld floor %lld", &value, &floor_value) == 2 ||
		sscanf(text, "sharded_id state 2 ceiling %lld", &value) == 1)
	{
		*lsn = ((uint64) hi << 32) | lo;
		shid_state_text(text[17] - '0', *lsn, (int64) value, (int64) floor_value,
						canonical, sizeof(canonical));
		if (strcmp(text, canonical) != 0)
			return "Its checksum does not match its contents, or it is truncated.";
	}
	else if (sscanf(text, "sharded_id clock ceiling %lld", &value) == 1)
	{
		/* The form sharded_id 1.2 wrote: one line, newline included. */
		snprintf(canonical, sizeof(canonical), "sharded_id clock ceiling %lld\n", value);
		if (strcmp(text, canonical) != 0)
			return "It is truncated or holds more than one line.";
	}
	else
		return "It does not start with a known header and a ceiling.";
	*ceiling = (int64) value;
	*floor = (int64) floor_value;
	return NULL;
}

/* Is ceiling within the time range of at least one layout? */
static bool
shid_ceiling_plausible(int64 ceiling)
{
	for (int i = 0; i < shid_num_layouts(); i++)
	{
		const ShidLayout *layout = shid_layout_at(i);

		if (ceiling >= layout->epoch_ms &&
			ceiling <= layout->max_unix_ms + SHID_LEASE_MS)
			return true;
	}
	return false;
}

static bool
shid_marker_exists(void)
{
	struct stat st;

	return stat(SHID_MARKER_FILE, &st) == 0;
}

/*
 * Read the durable ceiling left by the previous run, and the raised floor
 * into *floor.  No file and no marker means no id was ever minted here.
 * Anything else that leaves no proof of what was minted starts the ids
 * after the current time, with a warning: a file that does not match its
 * form to the byte (truncated, corrupt, another version), or whose ceiling
 * lies outside every layout's time range.  Older forms are still read:
 * versions 3 and 2 (no lsn line) with LSN 0, so that every record replays
 * as before; 1.3's version 2 has no floor line; 1.2's one-line form is
 * "sharded_id clock ceiling N", newline included.
 */
static int64
shid_read_ceiling(int64 *floor, XLogRecPtr *lsn)
{
	FILE	   *file;
	char		text[256];
	size_t		len;
	int64		ceiling = 0;
	int64		now = shid_clock_ms();
	const char *problem;

	file = AllocateFile(SHID_STATE_FILE, PG_BINARY_R);
	if (file == NULL)
	{
		/* ereport may change errno: keep the one that fopen set. */
		int			save_errno = errno;

		if (save_errno == ENOENT && !shid_marker_exists())
			return 0;
		errno = save_errno;
		if (save_errno == ENOENT)
			ereport(WARNING,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("file \"%s\" is missing", SHID_STATE_FILE),
					 errdetail("This server has minted sharded ids before (file \"%s\" exists). New sharded ids start after the current time.",
							   SHID_MARKER_FILE)));
		else
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not open file \"%s\": %m", SHID_STATE_FILE),
					 errdetail("New sharded ids start after the current time.")));
		return now;
	}
	len = fread(text, 1, sizeof(text) - 1, file);
	text[len] = '\0';
	if (ferror(file) || FreeFile(file) != 0)
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", SHID_STATE_FILE),
				 errdetail("New sharded ids start after the current time.")));
		return now;
	}

	problem = shid_parse_state(text, lsn, &ceiling, floor);
	if (problem != NULL)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid contents in file \"%s\"", SHID_STATE_FILE),
				 errdetail("%s New sharded ids start after the current time.", problem)));
		return now;
	}
	if (!shid_ceiling_plausible(ceiling))
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("implausible clock ceiling %lld in file \"%s\"",
						(long long) ceiling, SHID_STATE_FILE),
				 errdetail("No layout holds that time. New sharded ids start after the current time.")));
		return now;
	}
	if (ceiling - now > (int64) (shid_max_clock_jump > 0 ? shid_max_clock_jump : SHID_DEFAULT_MAX_CLOCK_JUMP_S) * 1000)
		ereport(WARNING,
				(errmsg("the clock ceiling in file \"%s\" is %lld s ahead of the clock",
						SHID_STATE_FILE, (long long) ((ceiling - now) / 1000)),
				 errdetail("New sharded ids carry times after it, since ids that late may be stored."),
				 errhint("If no id minted that late was kept, a superuser can run SELECT sharded_id.reset_ceiling().")));
	return ceiling;
}

/* Write text into a new file at path, replacing any; ERROR on failure. */
static void
shid_write_file(const char *path, const char *text, size_t len)
{
	int			fd;

	fd = OpenTransientFile(path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", path)));
	errno = 0;
	if (write(fd, text, len) != (ssize_t) len)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		errno = save_errno ? save_errno : ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", path)));
	}
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", path)));
}

/* Write the marker file once, so that a lost state file is noticed. */
static void
shid_write_marker(void)
{
	static const char text[] = "sharded_id has minted ids in this data directory\n";

	if (shid_ceiling->marker_known || shid_marker_exists())
	{
		shid_ceiling->marker_known = true;
		return;
	}
	shid_write_file(SHID_MARKER_FILE, text, sizeof(text) - 1);
	fsync_fname(SHID_MARKER_FILE, false);
	fsync_fname(".", true);
	shid_ceiling->marker_known = true;
}

/*
 * Replace the file at path with text, durably: write a temporary file, then
 * durable_rename, which fsyncs it, renames it into place and fsyncs the
 * directory.  ERROR on failure, with the old file in place.  The injection
 * points after_write and after_rename, if not NULL, run after each step.
 */
void
shid_write_durably(const char *tmppath, const char *path, const char *text, size_t len,
				   const char *after_write, const char *after_rename)
{
	shid_write_file(tmppath, text, len);
	if (after_write)
		SHID_INJECTION_POINT(after_write);
	(void) durable_rename(tmppath, path, ERROR);
	if (after_rename)
		SHID_INJECTION_POINT(after_rename);
}

/*
 * Make ceiling durable, as the state of the WAL up to lsn.  The caller
 * holds the ceiling lock exclusively, and has flushed the WAL up to lsn.
 * reset says which injection points run: the reset's or a raise's.
 */
static void
shid_write_ceiling(int64 ceiling, XLogRecPtr lsn, bool reset)
{
	char		buf[200];
	int64		start_us = shid_monotonic_us();

	shid_write_marker();
	shid_state_text(SHID_STATE_VERSION, lsn, ceiling, shid_ceiling->raised_floor_ms,
					buf, sizeof(buf));
	if (reset)
		shid_write_durably(SHID_STATE_TMPFILE, SHID_STATE_FILE, buf, strlen(buf),
						   "sharded-id-reset-after-write", "sharded-id-reset-after-rename");
	else
		shid_write_durably(SHID_STATE_TMPFILE, SHID_STATE_FILE, buf, strlen(buf),
						   "sharded-id-ceiling-after-write", "sharded-id-ceiling-after-rename");
	shid_ceiling->lsn = lsn;
	shid_ceiling->ref_wall_ms = shid_clock_ms();
	shid_ceiling->ref_mono_ms = shid_monotonic_ms();
	shid_ceiling->writes++;
	shid_ceiling->write_us += shid_monotonic_us() - start_us;
}

Size
shid_ceiling_shmem_size(void)
{
	return MAXALIGN(sizeof(ShidCeiling));
}

/*
 * Attach to (or, first, create) the ceiling's shared state.  The caller
 * holds AddinShmemInitLock.
 */
void
shid_ceiling_shmem_init(LWLock *lock)
{
	bool		found;

	shid_ceiling = ShmemInitStruct("sharded_id ceiling", sizeof(ShidCeiling), &found);
	if (!found)
	{
		int64		floor = 0;
		XLogRecPtr	lsn = InvalidXLogRecPtr;
		int64		ceiling = shid_read_ceiling(&floor, &lsn);

		shid_ceiling->lock = lock;
		shid_ceiling->lsn = lsn;
		shid_ceiling->floor_ms = ceiling;
		shid_ceiling->raised_floor_ms = floor;
		pg_atomic_init_u64(&shid_ceiling->ceiling_ms, (uint64) ceiling);
		pg_atomic_init_u32(&shid_ceiling->generation, 0);
		shid_ceiling->ref_wall_ms = shid_clock_ms();
		shid_ceiling->ref_mono_ms = shid_monotonic_ms();
		shid_ceiling->marker_known = false;
		shid_ceiling->writes = 0;
		shid_ceiling->write_us = 0;
	}
}

/*
 * WAL-log a record of the "sharded_id" resource manager, unless the settings
 * turn it off (sharded_id.wal_log_ceiling only for ceiling records: with
 * always, as for the states of shards, only a resource manager id of 0).  As in nextval_internal, the transaction gets an xid first,
 * so that its commit flushes the record and waits for a synchronous
 * standby.
 */
XLogRecPtr
shid_wal_log(uint8 info, const char *data, uint32 len, bool always)
{
	if (shid_wal_rmgr_id == 0 || (!always && !shid_wal_log_ceiling))
		return InvalidXLogRecPtr;
	if (IsTransactionState())
		(void) GetTopTransactionId();
	XLogBeginInsert();
	XLogRegisterData(unconstify(char *, data), len);
	return XLogInsert((RmgrId) shid_wal_rmgr_id, info);
}

/*
 * WAL-log a ceiling or reset record and flush the WAL up to it; returns the
 * LSN the file is to carry: the record's end, or, with the records turned
 * off, where WAL ends now, so that replay skips every older record.
 */
static XLogRecPtr
shid_log_ceiling(uint8 info, int64 ceiling)
{
	bool		reset = (info == XLOG_SHID_RESET);
	XLogRecPtr	lsn;

	SHID_INJECTION_POINT(reset ? "sharded-id-reset-before-insert" : "sharded-id-ceiling-before-insert");
	lsn = shid_wal_log(info, (const char *) &ceiling, sizeof(ceiling), false);
	SHID_INJECTION_POINT(reset ? "sharded-id-reset-after-insert" : "sharded-id-ceiling-after-insert");
	if (XLogRecPtrIsInvalid(lsn))
		return GetXLogInsertRecPtr();
	XLogFlush(lsn);
	SHID_INJECTION_POINT(reset ? "sharded-id-reset-after-flush" : "sharded-id-ceiling-after-flush");
	return lsn;
}

/*
 * Push the durable ceiling to at least ms + SHID_LEASE_MS; true if it
 * wrote a new one: the record flushed, then the file, then the new
 * ceiling published.  Lock held.
 */
static bool
shid_raise_ceiling(int64 ms)
{
	int64		ceiling = (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms);
	XLogRecPtr	lsn;

	if (ceiling >= ms + SHID_LEASE_MS / 2)
		return false;
	ceiling = Max(ms + SHID_LEASE_MS, ceiling);
	lsn = shid_log_ceiling(XLOG_SHID_CEILING, ceiling);
	shid_write_ceiling(ceiling, lsn, false);
	pg_atomic_write_u64(&shid_ceiling->ceiling_ms, (uint64) ceiling);
	SHID_INJECTION_POINT("sharded-id-ceiling-after-publish");
	return true;
}

/*
 * The slow path of shid_cover: the ceiling is less than half a lease ahead
 * of ms.  Whoever gets the lock without waiting raises it early, so callers
 * rarely block on the write; a caller past the ceiling must wait.  A claim
 * that a reset overtook (the generation moved) raises nothing: its caller
 * claims again.  Returns true if it wrote a new ceiling: about every half
 * second of minting, when the caller (generator.c) also settles the
 * states of shards (floors.c).
 */
bool
shid_cover_slow(int64 ms, uint32 generation)
{
	int64		ceiling = (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms);
	bool		raised = false;

	if (ceiling >= ms)
	{
		if (LWLockConditionalAcquire(shid_ceiling->lock, LW_EXCLUSIVE))
		{
			if (pg_atomic_read_u32(&shid_ceiling->generation) == generation)
				raised = shid_raise_ceiling(ms);
			LWLockRelease(shid_ceiling->lock);
		}
		return raised;
	}

	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	if (pg_atomic_read_u32(&shid_ceiling->generation) == generation)
		raised = shid_raise_ceiling(ms);
	LWLockRelease(shid_ceiling->lock);
	return raised;
}

/*
 * Make the durable ceiling cover the millisecond ms, waiting for the
 * ceiling lock if need be: the record flushed, then the file, then the new
 * ceiling published, as for an id.  For a shard window the coordinator
 * grants (citus_grant.c): every millisecond of it lies under the ceiling before
 * the grant is returned, so that a coordinator that restarts, or a standby
 * promoted in its place, grants no millisecond twice.
 *
 *
 * The ceiling is read under the lock, shared: a reset_ceiling, which holds
 * it exclusively from its read of every slot's grant.end to the lowered
 * ceiling's publication, either read this grant's end (set before this
 * call) and keeps the ceiling above it, or published its lower ceiling
 * before this read, which then raises it.  Read without the lock, the old,
 * high ceiling could be seen just before a reset that missed the end
 * lowers it under the window.
 *
 * Returns the WAL position of the state that covers ms: the record may be
 * another backend's, flushed here but not yet on a synchronous standby
 * (that backend waits for it at its commit), so the grant waits for it
 * there too before it is returned.
 *
 * Locks: the ceiling lock, shared, then exclusively if the ceiling must be
 * raised.
 */
XLogRecPtr
shid_ceiling_cover(int64 ms)
{
	bool		covered;
	XLogRecPtr	lsn;

	LWLockAcquire(shid_ceiling->lock, LW_SHARED);
	covered = (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms) >= ms + SHID_LEASE_MS / 2;
	lsn = shid_ceiling->lsn;
	LWLockRelease(shid_ceiling->lock);
	if (covered)
		return lsn;
	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	(void) shid_raise_ceiling(ms);
	lsn = shid_ceiling->lsn;
	LWLockRelease(shid_ceiling->lock);
	return lsn;
}

/*
 * The slow path of shid_check_clock: the clock reads past the ceiling.
 * Where the wall clock should read is the wall clock at the last write of
 * the ceiling plus the monotonic time since; a wall clock more than
 * sharded_id.max_clock_jump ahead of that has leaped, and minting ids with
 * its time would lift every later id of the shard to it for good.
 */
void
shid_check_clock_slow(int64 now_ms)
{
	int64		expected;
	int			max_jump = shid_max_clock_jump;

	if (max_jump <= 0)
		return;
	LWLockAcquire(shid_ceiling->lock, LW_SHARED);
	expected = shid_ceiling->ref_wall_ms + (shid_monotonic_ms() - shid_ceiling->ref_mono_ms);
	LWLockRelease(shid_ceiling->lock);
	if (now_ms - expected > (int64) max_jump * 1000)
	{
		char	   *now_text = pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(now_ms)));
		char	   *expected_text = pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(expected)));

		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("refusing to mint sharded ids: the system clock leaped %lld s ahead",
						(long long) ((now_ms - expected) / 1000)),
				 errdetail("The clock reads %s, but the monotonic clock puts the time near %s; sharded_id.max_clock_jump allows %d s.",
						   now_text, expected_text, max_jump),
				 errhint("Correct the system clock. If the jump is real, raise sharded_id.max_clock_jump and reload.")));
	}
}

/*
 * Lower the durable ceiling: the caller, a superuser, says that no id
 * minted here with a time after the clock was kept.  The generator holds
 * its slot table locked exclusively.  begin takes the ceiling lock and
 * bumps the generation, so that every claim not yet covered is made again,
 * and returns the lowest the generator may take the slots to: never below
 * a floor that 1.4 raised server-wide.  The generator then reads the clock
 * and moves every slot; end makes the new ceiling durable, sets where new
 * slots start, and releases the lock.
 */
int64
shid_ceiling_reset_begin(void)
{
	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	pg_atomic_fetch_add_u32(&shid_ceiling->generation, 1);
	/* The generation is bumped before the caller reads the clock. */
	pg_memory_barrier();
	return shid_ceiling->raised_floor_ms;
}

void
shid_ceiling_reset_end(int64 ceiling, int64 floor_ms)
{
	XLogRecPtr	lsn = shid_log_ceiling(XLOG_SHID_RESET, ceiling);

	/*
	 * The lowered ceiling is published once the record is flushed, before
	 * the file: a minter past it then waits for this lock, and raises it
	 * again with a record of its own, even if the file write fails (the
	 * file then keeps the higher, older ceiling, which is safe).  Published
	 * after the file, a failed write would leave minters under the old
	 * ceiling logging nothing while standbys and replay hold the reset's.
	 */
	pg_atomic_write_u64(&shid_ceiling->ceiling_ms, (uint64) ceiling);
	shid_ceiling->floor_ms = floor_ms;
	shid_write_ceiling(ceiling, lsn, true);
	SHID_INJECTION_POINT("sharded-id-reset-after-publish");
	LWLockRelease(shid_ceiling->lock);
	ereport(LOG,
			(errmsg("sharded_id clock ceiling reset to %s",
					timestamptz_to_str(shid_unix_ms_to_timestamptz(ceiling)))));
}

/*
 * Bump the generation, for a change that lowers one slot (lower_floor).
 * The caller holds the ceiling lock exclusively.
 */
void
shid_ceiling_bump_generation(void)
{
	pg_atomic_fetch_add_u32(&shid_ceiling->generation, 1);
	pg_memory_barrier();
}

/* The durable ceiling, and the statistics of its writes. */
int64
shid_ceiling_stats(int64 *writes, int64 *write_us)
{
	LWLockAcquire(shid_ceiling->lock, LW_SHARED);
	*writes = shid_ceiling->writes;
	*write_us = shid_ceiling->write_us;
	LWLockRelease(shid_ceiling->lock);
	return (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms);
}

void
shid_ceiling_reset_stats(void)
{
	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	shid_ceiling->writes = 0;
	shid_ceiling->write_us = 0;
	LWLockRelease(shid_ceiling->lock);
}

/*
 * Replay a ceiling, reset or floor record (rmgr.c): on a standby, or in
 * crash recovery.  A record that ends at or before the LSN of the state
 * file is already in it, and is skipped: so a reset replayed after a crash
 * never takes the ceiling below what was handed out after it.  A newer
 * raise only ever raises; a reset sets; a floor raises the floor, and the
 * ceiling past it.  The replayed ceiling is made durable in this server's
 * own state file, with the record's LSN, and new slots start after it.
 */
void
shid_ceiling_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	int64		value;
	int64		current;
	int64		ceiling;
	bool		write = false;

	if (XLogRecGetDataLen(record) != sizeof(int64) ||
		(info != XLOG_SHID_CEILING && info != XLOG_SHID_RESET &&
		 info != XLOG_SHID_FLOOR))
		elog(PANIC, "sharded_id redo: unknown record (info %u, %u bytes)",
			 info, XLogRecGetDataLen(record));
	memcpy(&value, XLogRecGetData(record), sizeof(value));
	ceiling = value;

	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	if (record->EndRecPtr <= shid_ceiling->lsn)
	{
		LWLockRelease(shid_ceiling->lock);
		return;
	}
	current = (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms);
	if (info == XLOG_SHID_RESET)
		write = true;
	else
	{
		if (info == XLOG_SHID_FLOOR && value > shid_ceiling->raised_floor_ms)
		{
			shid_ceiling->raised_floor_ms = value;
			write = true;
		}
		ceiling = Max(current, info == XLOG_SHID_FLOOR ? value + SHID_LEASE_MS : value);
		write |= ceiling > current;
	}
	if (write)
	{
		/* The minimum recovery point first, as in floors.c's redo. */
		XLogFlush(record->EndRecPtr);
		shid_write_ceiling(ceiling, record->EndRecPtr, info == XLOG_SHID_RESET);
		pg_atomic_write_u64(&shid_ceiling->ceiling_ms, (uint64) ceiling);
		/*
		 * New slots start at the replayed ceiling, a reset's too.  Live, a
		 * reset starts new slots a lease lower, at the highest slot it kept
		 * (reset_end): those slots go on above it, up to the ceiling,
		 * before any later record.  After a crash or a promotion no slot
		 * is left, so only the ceiling covers what they handed out.
		 */
		if (info == XLOG_SHID_RESET)
			shid_ceiling->floor_ms = ceiling;
		else
			shid_ceiling->floor_ms = Max(shid_ceiling->floor_ms, ceiling);
	}
	LWLockRelease(shid_ceiling->lock);
}

/* What pg_walinspect shows of a ceiling, reset or floor record. */
void
shid_ceiling_desc(StringInfo buf, XLogReaderState *record)
{
	int64		ceiling;

	if (XLogRecGetDataLen(record) != sizeof(int64))
		return;
	memcpy(&ceiling, XLogRecGetData(record), sizeof(ceiling));
	appendStringInfo(buf, "ceiling %lld (%s)", (long long) ceiling,
					 timestamptz_to_str(shid_unix_ms_to_timestamptz(ceiling)));
}
