/*-------------------------------------------------------------------------
 *
 * src/ceiling.c
 *	  The durable clock ceiling of the generator.
 *
 * Shared memory does not survive a restart, so a durable ceiling covers
 * every millisecond handed out: the file sharded_id.state in the data
 * directory holds a time that no id has passed.  It is raised before any id
 * beyond it is returned, SHID_LEASE_MS at a time, half a lease early.
 * After a crash, a restart or a clock step, every slot of the generator
 * starts at the ceiling read back from the file (floor_ms), so new ids are
 * later than anything minted before.
 *
 * Locking rules:
 *	 - ceiling_ms is read without a lock (an atomic read).  It only grows,
 *	   and it is stored only after the file holding the new value is
 *	   durable, so a reader never sees a ceiling the file does not have.
 *	 - Only the holder of the ceiling LWLock writes the file or stores
 *	   ceiling_ms.  A caller whose millisecond is still under the ceiling
 *	   raises it only if it gets the lock without waiting; a caller past the
 *	   ceiling waits for the lock, then raises it unless someone else did.
 *	 - floor_ms is set once, when shared memory is initialised, and is
 *	   read-only after that.
 *	 - The file is replaced atomically: written to a temporary file,
 *	   fsync'ed, and renamed into place (durable_rename).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>
#include <fcntl.h>

#include "ceiling.h"
#include "compat.h"
#include "layout.h"
#include "storage/fd.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

/* File in the data directory holding the durable clock ceiling. */
#define SHID_STATE_FILE		"sharded_id.state"
#define SHID_STATE_TMPFILE	"sharded_id.state.tmp"
#define SHID_STATE_HEADER	"sharded_id clock ceiling"

ShidCeiling *shid_ceiling = NULL;

static int64
shid_ceiling_clock_ms(void)
{
	return shid_timestamptz_to_unix_ms(GetCurrentTimestamp());
}

/*
 * Read the durable ceiling left by the previous run.  A missing file means
 * no id was ever minted here.  A file that cannot be read leaves no proof of
 * what was minted; ids then start after the current time, and a warning
 * says so.
 */
static int64
shid_read_ceiling(void)
{
	FILE	   *file;
	long long	ceiling;
	int			matched;

	file = AllocateFile(SHID_STATE_FILE, "r");
	if (file == NULL)
	{
		/* ereport may change errno: keep the one that fopen set. */
		int			save_errno = errno;

		if (save_errno == ENOENT)
			return 0;
		errno = save_errno;
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SHID_STATE_FILE),
				 errdetail("New sharded ids start after the current time.")));
		return shid_ceiling_clock_ms();
	}
	matched = fscanf(file, SHID_STATE_HEADER " %lld", &ceiling);
	FreeFile(file);
	if (matched != 1 || ceiling < 0)
	{
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid contents in file \"%s\"", SHID_STATE_FILE),
				 errdetail("New sharded ids start after the current time.")));
		return shid_ceiling_clock_ms();
	}
	return (int64) ceiling;
}

/* Make ceiling durable: write a temporary file, fsync it, rename it. */
static void
shid_write_ceiling(int64 ceiling)
{
	char		buf[64];
	int			len;
	int			fd;

	len = snprintf(buf, sizeof(buf), SHID_STATE_HEADER " %lld\n",
				   (long long) ceiling);

	fd = OpenTransientFile(SHID_STATE_TMPFILE, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", SHID_STATE_TMPFILE)));
	errno = 0;
	if (write(fd, buf, len) != len)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		errno = save_errno ? save_errno : ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", SHID_STATE_TMPFILE)));
	}
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", SHID_STATE_TMPFILE)));
	(void) durable_rename(SHID_STATE_TMPFILE, SHID_STATE_FILE, ERROR);
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
		int64		ceiling = shid_read_ceiling();

		shid_ceiling->lock = lock;
		shid_ceiling->floor_ms = ceiling;
		pg_atomic_init_u64(&shid_ceiling->ceiling_ms, (uint64) ceiling);
	}
}

/* Push the durable ceiling to at least ms + SHID_LEASE_MS.  Lock held. */
static void
shid_raise_ceiling(int64 ms)
{
	int64		ceiling = (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms);

	if (ceiling >= ms + SHID_LEASE_MS / 2)
		return;
	ceiling = Max(ms + SHID_LEASE_MS, ceiling);
	shid_write_ceiling(ceiling);
	pg_atomic_write_u64(&shid_ceiling->ceiling_ms, (uint64) ceiling);
}

/*
 * The slow path of shid_cover: the ceiling is less than half a lease ahead
 * of ms.  Whoever gets the lock without waiting raises it early, so callers
 * rarely block on the write; a caller past the ceiling must wait.
 */
void
shid_cover_slow(int64 ms)
{
	int64		ceiling = (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms);

	if (ceiling >= ms)
	{
		if (LWLockConditionalAcquire(shid_ceiling->lock, LW_EXCLUSIVE))
		{
			shid_raise_ceiling(ms);
			LWLockRelease(shid_ceiling->lock);
		}
		return;
	}

	LWLockAcquire(shid_ceiling->lock, LW_EXCLUSIVE);
	shid_raise_ceiling(ms);
	LWLockRelease(shid_ceiling->lock);
}
