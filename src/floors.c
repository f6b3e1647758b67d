/*-------------------------------------------------------------------------
 *
 * src/floors.c
 *	  What this server keeps durably about single shards: each shard's
 *	  floor, and whether the server gave the shard away.
 *
 * The design is in doc/sharded_id-design.md ("Uniqueness across servers"
 * for floors and retirements, "Replication and recovery" for their sync).
 * A floor is a millisecond at or before which no id of one (layout, shard)
 * is minted here; a slot starts at the later of it and the ceiling
 * (ceiling.c).  A retirement says that this server gave the shard away and
 * must not mint for it until create_shard takes it back.  Both belong to
 * the server, not to one database.  An ownership change holds only once
 * its transaction has committed (owner.c follows the transaction).
 *
 * A change is made in shared memory, marked unsynced, and made durable by
 * a sync (shid_states_sync_locked says what one is and who waits for it).
 * The file sharded_id.shards holds one line per shard with a state, at
 * most sharded_id.max_shards, and a CRC-32C:
 *
 *	 sharded_id shards 3
 *	 lsn 0/1A2B3C4D
 *	 <layout key> <shard> <floor ms> <retired> <state before> <xid> <database>
 *	 crc32c 1a2b3c4d
 *
 * Files of version 2 have no lsn line, and are read with LSN 0: every
 * record replays.  A file of version 1, written before states knew their
 * database, has no <database> column either and is read with database 0:
 * not known.  A file that does not match this form to the byte stops the
 * server from starting: floors and retirements cannot be guessed, and
 * minting without them could repeat ids.
 *
 * Each state names the database whose transaction last changed the
 * shard's ownership (at shid_state_empty).  A state records the xid of its
 * last ownership change until it is settled (at shid_settle_states_locked).
 *
 * Locks: the states live in a shared hash table guarded by the floors
 * lock, shared to read, exclusive to change and to write the file.  A
 * change and the slot's copy of it (slots.c) are made under one hold of
 * it.  Where it stands in the lock order: locks.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xlogreader.h"
#include "ceiling.h"
#include "compat.h"
#include "floors.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "rmgr.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

#define SHID_SHARDS_FILE	"sharded_id.shards"
#define SHID_SHARDS_TMPFILE	"sharded_id.shards.tmp"
#define SHID_SHARDS_HEADER	"sharded_id shards 3\n"
#define SHID_SHARDS_HEADER_V2	"sharded_id shards 2\n"
#define SHID_SHARDS_HEADER_V1	"sharded_id shards 1\n"

/* ShidShardState.flags, in shared memory only (zero in WAL). */
#define SHID_STATE_UNSYNCED	0x0001	/* changed since the last sync */

/* Did this backend's transaction change a state, to sync before commit? */
static bool shid_states_changed = false;

/* The shards that have a state, in shared memory. */
static HTAB *shid_states = NULL;

/* The lock of the states, and what it guards besides the table. */
ShidFloorsShared *shid_floors_shared = NULL;

Size
shid_floors_shmem_size(int max_shards)
{
	return add_size(MAXALIGN(sizeof(ShidFloorsShared)),
					hash_estimate_size(max_shards, sizeof(ShidShardState)));
}

/*
 * Each state names the database whose transaction last changed the
 * shard's ownership (or, for a shard with no state, raised its first
 * floor): MyDatabaseId of the backend that made the change, carried by its
 * WAL record.  privs.c lets a role that is not a superuser change a
 * shard's state only from that database.  So no database's provisioner
 * retires, takes or moves the floor of another database's shard.  A floor
 * raise keeps the state's database.  An aborted change leaves its database
 * with the state before it (the state has room for one): the shard then
 * belongs to the database that tried, until a superuser changes it.
 *
 * Does a state say anything?  One that does not is not kept.  A shard
 * whose owner this server decided keeps its state, taken back or not, and
 * so does one that a database claimed (a floor, or a first mint with no
 * state: owner.c), which names that database.
 */
static inline bool
shid_state_empty(const ShidShardState *state)
{
	return state->floor_ms == 0 && !shid_state_owner_known(state) &&
		!OidIsValid(state->database);
}

/* Do two states say the same of the shard's ownership? */
static inline bool
shid_same_owner(const ShidShardState *a, const ShidShardState *b)
{
	return a->retired == b->retired && a->prev_retired == b->prev_retired &&
		a->database == b->database && FullTransactionIdEquals(a->xid, b->xid);
}

/* The file's text for every state, as of the WAL up to lsn, with its CRC line. */
static void
shid_states_text(StringInfo buf, XLogRecPtr lsn)
{
	HASH_SEQ_STATUS status;
	ShidShardState *state;
	pg_crc32c	crc;

	appendStringInfoString(buf, SHID_SHARDS_HEADER);
	appendStringInfo(buf, "lsn %X/%08X\n", LSN_FORMAT_ARGS(lsn));
	hash_seq_init(&status, shid_states);
	while ((state = hash_seq_search(&status)) != NULL)
		if (!shid_state_empty(state))
			appendStringInfo(buf, "%llu %d %lld %d %d %llu %u\n",
						 (unsigned long long) state->key.layout_key,
						 state->key.shard, (long long) state->floor_ms,
						 state->retired, state->prev_retired,
						 (unsigned long long) U64FromFullTransactionId(state->xid),
						 state->database);
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, buf->data, buf->len);
	FIN_CRC32C(crc);
	appendStringInfo(buf, "crc32c %08x\n", (unsigned int) crc);
}

/*
 * Write the file from the table, as the state of the WAL up to lsn, which
 * the caller has flushed.  The caller holds the lock exclusively.
 */
static void
shid_write_states(XLogRecPtr lsn)
{
	StringInfoData buf;

	initStringInfo(&buf);
	shid_states_text(&buf, lsn);
	shid_write_durably(SHID_SHARDS_TMPFILE, SHID_SHARDS_FILE, buf.data, buf.len,
					   "sharded-id-states-after-write", "sharded-id-states-after-rename");
	pfree(buf.data);
	shid_floors_shared->lsn = lsn;
}

/* Mark a state changed since the last sync.  Lock held exclusively. */
static inline void
shid_state_mark(ShidShardState *state)
{
	if (!(state->flags & SHID_STATE_UNSYNCED))
	{
		state->flags |= SHID_STATE_UNSYNCED;
		shid_floors_shared->unsynced++;
	}
	shid_states_changed = true;
}

/*
 * The sync: one WAL record (STATES, of the "sharded_id" resource manager)
 * with every unsynced state, the WAL flushed up to it, the file
 * sharded_id.shards written with the record's LSN and renamed into place,
 * the count of syncs bumped.  So a transaction of 1,000 floor changes
 * costs one record and one flush.  The file is never ahead of the WAL on
 * disk, and nothing that a change protects is handed out before both hold
 * it.  An injection point (compat.h) stands before and after each step,
 * for the crash tests.  An error on the way leaves the states unsynced, to
 * be synced by the next one.
 *
 * Everything that relies on a change waits for its sync:
 *	 - the transaction that made it, before it commits (owner.c calls
 *	   shid_states_sync_xact at pre-commit).  So a retirement is durable
 *	   before any row its transaction commits, and a committed floor before
 *	   the mover lets another server mint;
 *	 - the generator's own raise of a floor, which covers the ids it is
 *	   about to hand out, at once (generator.c says why no other id relies
 *	   on a floor before its transaction commits).
 * A crash before the sync loses only changes that nothing relied on yet.
 * Standbys and crash recovery replay a record only if it ends after the
 * LSN of the file (so replay is idempotent, as a page's LSN makes it for a
 * sequence), into their own shared state and file.
 *
 * The caller holds the floors lock exclusively.
 */
void
shid_states_sync_locked(void)
{
	HASH_SEQ_STATUS status;
	ShidShardState *state;
	StringInfoData rec;
	uint32		count = 0;
	XLogRecPtr	lsn;

	Assert(LWLockHeldByMeInMode(shid_floors_shared->lock, LW_EXCLUSIVE));
	initStringInfo(&rec);
	appendBinaryStringInfo(&rec, (const char *) &count, sizeof(count));
	hash_seq_init(&status, shid_states);
	while ((state = hash_seq_search(&status)) != NULL)
	{
		ShidShardState copy;

		if (!(state->flags & SHID_STATE_UNSYNCED))
			continue;
		copy = *state;
		copy.flags = 0;
		appendBinaryStringInfo(&rec, (const char *) &copy, sizeof(copy));
		count++;
	}
	memcpy(rec.data, &count, sizeof(count));

	SHID_INJECTION_POINT("sharded-id-states-before-insert");
	lsn = shid_wal_log(XLOG_SHID_STATES, rec.data, rec.len, true);
	SHID_INJECTION_POINT("sharded-id-states-after-insert");
	pfree(rec.data);
	if (XLogRecPtrIsInvalid(lsn))
		lsn = GetXLogInsertRecPtr();
	else
		XLogFlush(lsn);
	SHID_INJECTION_POINT("sharded-id-states-after-flush");
	shid_write_states(lsn);

	/* Published: an empty state, logged as such, goes. */
	hash_seq_init(&status, shid_states);
	while ((state = hash_seq_search(&status)) != NULL)
	{
		state->flags = 0;
		if (shid_state_empty(state))
			(void) hash_search(shid_states, &state->key, HASH_REMOVE, NULL);
	}
	shid_floors_shared->unsynced = 0;
	pg_atomic_fetch_add_u64(&shid_floors_shared->syncs, 1);
	SHID_INJECTION_POINT("sharded-id-states-after-publish");
}

/*
 * Sync every unsynced state (see shid_states_sync_locked), if any.
 *
 * Locks: the floors lock, exclusively.
 */
void
shid_states_sync(void)
{
	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (shid_floors_shared->unsynced > 0)
		shid_states_sync_locked();
	LWLockRelease(shid_floors_shared->lock);
}

/*
 * At the end of a transaction (owner.c): before it commits or prepares,
 * sync what it changed; when it aborts, nothing (what it changed in
 * shared memory is synced with the next sync, and counts only if its xid
 * committed).
 */
void
shid_states_sync_xact(bool commit)
{
	if (shid_states_changed && commit)
		shid_states_sync();
	shid_states_changed = false;
}

/* Stop the server from starting: the file cannot be trusted. */
static void
shid_bad_states_file(const char *problem)
{
	ereport(FATAL,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("invalid contents in file \"%s\"", SHID_SHARDS_FILE),
			 errdetail("%s The file holds the floors and retirements of single shards.", problem),
			 errhint("Restore the file from a backup of this data directory. If none exists, move it away, start the server with sharded_id.minting = off, run sharded_id.raise_floors() and retire_shard() where needed, then turn minting on.")));
}

/*
 * Read the whole file into text.  False if there is no file: no shard ever
 * had a state here.
 */
static bool
shid_slurp_states_file(StringInfo text)
{
	FILE	   *file;
	char		chunk[8192];
	size_t		len;

	file = AllocateFile(SHID_SHARDS_FILE, PG_BINARY_R);
	if (file == NULL)
	{
		if (errno == ENOENT)
			return false;
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SHID_SHARDS_FILE)));
	}
	initStringInfo(text);
	while ((len = fread(chunk, 1, sizeof(chunk), file)) > 0)
		appendBinaryStringInfo(text, chunk, len);
	if (ferror(file) || FreeFile(file) != 0)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", SHID_SHARDS_FILE)));
	return true;
}

/*
 * Check the file's header and checksum; return its checksum line.  *v1 and
 * *v3 say which header it has (neither: version 2).
 */
static char *
shid_check_states_text(StringInfo text, bool *v1, bool *v3)
{
	char	   *crc_line;
	pg_crc32c	crc;
	unsigned int stored_crc;

	/* Every header has the same length. */
	StaticAssertStmt(sizeof(SHID_SHARDS_HEADER) == sizeof(SHID_SHARDS_HEADER_V1) &&
					 sizeof(SHID_SHARDS_HEADER) == sizeof(SHID_SHARDS_HEADER_V2),
					 "headers of one length");
	*v1 = strncmp(text->data, SHID_SHARDS_HEADER_V1, strlen(SHID_SHARDS_HEADER_V1)) == 0;
	*v3 = strncmp(text->data, SHID_SHARDS_HEADER, strlen(SHID_SHARDS_HEADER)) == 0;
	if (!*v1 && !*v3 && strncmp(text->data, SHID_SHARDS_HEADER_V2, strlen(SHID_SHARDS_HEADER_V2)) != 0)
		shid_bad_states_file("It does not start with a known header.");
	crc_line = strstr(text->data, "crc32c ");
	if (crc_line == NULL || sscanf(crc_line, "crc32c %08x", &stored_crc) != 1 ||
		strlen(crc_line) != strlen("crc32c 00000000\n") ||
		(crc_line != text->data && crc_line[-1] != '\n'))
		shid_bad_states_file("It has no checksum line, or is truncated.");
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, text->data, crc_line - text->data);
	FIN_CRC32C(crc);
	if (crc != stored_crc)
		shid_bad_states_file("Its checksum does not match its contents.");
	return crc_line;
}

/* Read the file into the empty table, at start-up. */
static void
shid_read_states(int max_shards)
{
	StringInfoData text;
	char	   *line;
	char	   *crc_line;
	int			count = 0;
	bool		v1;
	bool		v3;

	if (!shid_slurp_states_file(&text))
		return;
	crc_line = shid_check_states_text(&text, &v1, &v3);

	line = text.data + strlen(SHID_SHARDS_HEADER);
	if (v3)
	{
		unsigned int hi;
		unsigned int lo;
		int			end = -1;

		if (sscanf(line, "lsn %X/%X%n", &hi, &lo, &end) != 2 || end < 0 ||
			line[end] != '\n')
			shid_bad_states_file("It has no lsn line.");
		shid_floors_shared->lsn = ((uint64) hi << 32) | lo;
		line += end + 1;
	}
	while (line < crc_line)
	{
		unsigned long long layout_key;
		unsigned long long xid;
		long long	floor_ms;
		int			shard;
		int			retired;
		int			prev;
		unsigned int database = 0;
		int			end = -1;
		int			fields;
		ShidShardState *state;
		ShidShardKey key;
		bool		found;

		/* The line must end where its last field does. */
		if (v1)
			fields = sscanf(line, "%llu %d %lld %d %d %llu%n", &layout_key, &shard, &floor_ms,
							&retired, &prev, &xid, &end) + 1;
		else
			fields = sscanf(line, "%llu %d %lld %d %d %llu %u%n", &layout_key, &shard, &floor_ms,
							&retired, &prev, &xid, &database, &end);
		if (fields != 7 || end < 0 || line[end] != '\n' || shard < 0 ||
			(retired != 0 && retired != 1) || (prev != 0 && prev != 1))
			shid_bad_states_file("A line does not hold a shard's state.");
		if (++count > max_shards)
			ereport(FATAL,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("file \"%s\" holds the state of more than %d shards",
							SHID_SHARDS_FILE, max_shards),
					 errhint("Raise sharded_id.max_shards to at least the number of lines of the file.")));
		memset(&key, 0, sizeof(key));
		key.layout_key = (uint64) layout_key;
		key.shard = shard;
		state = hash_search(shid_states, &key, HASH_ENTER, &found);
		state->floor_ms = (int64) floor_ms;
		state->retired = (uint8) retired;
		state->prev_retired = (uint8) prev;
		state->flags = 0;
		state->database = (Oid) database;
		state->xid = FullTransactionIdFromU64((uint64) xid);
		if (shid_state_pending(state))
			shid_floors_shared->unsettled_states++;
		line = strchr(line, '\n');
		if (line == NULL)
			break;
		line++;
	}
	pfree(text.data);
}

/*
 * Attach to (or, first, create and fill) the shard states, guarded by lock.
 * The caller holds AddinShmemInitLock.
 */
void
shid_floors_shmem_init(int max_shards, LWLock *lock)
{
	HASHCTL		info;
	long		entries;
	bool		found;

	shid_floors_shared = ShmemInitStruct("sharded_id floors", sizeof(ShidFloorsShared), &found);
	if (!found)
	{
		shid_floors_shared->lock = lock;
		shid_floors_shared->unsettled_states = 0;
		shid_floors_shared->unsynced = 0;
		shid_floors_shared->lsn = InvalidXLogRecPtr;
		pg_atomic_init_u64(&shid_floors_shared->syncs, 0);
	}
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(ShidShardKey);
	info.entrysize = sizeof(ShidShardState);
	shid_states = ShmemInitHash("sharded_id shard states", max_shards, max_shards,
								&info, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	entries = hash_get_num_entries(shid_states);
	if (entries == 0 && !IsUnderPostmaster)
		shid_read_states(max_shards);
}

/* Copy the shard's state into *state; false if it has none. */
bool
shid_shard_state(const ShidShardKey *key, ShidShardState *state)
{
	ShidShardState *found;

	LWLockAcquire(shid_floors_shared->lock, LW_SHARED);
	found = hash_search(shid_states, key, HASH_FIND, NULL);
	if (found != NULL && shid_state_empty(found))
		found = NULL;
	if (found != NULL)
		memcpy(state, found, sizeof(*state));
	LWLockRelease(shid_floors_shared->lock);
	return found != NULL;
}

/*
 * Has the transaction xid committed: 1 yes, 0 no (aborted, or gone with a
 * crash), -1 not known (still running, or too old for the commit log).
 * The commit log is read as pg_xact_status reads it.
 */
static int
shid_xid_committed(FullTransactionId fxid)
{
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId xid = XidFromFullTransactionId(fxid);
	int			result;

	if (!FullTransactionIdPrecedes(fxid, next))
		return -1;
	if (U64FromFullTransactionId(next) - U64FromFullTransactionId(fxid) >
		(uint64) (MaxTransactionId >> 1))
		return -1;
	if (TransactionIdIsCurrentTransactionId(xid) || TransactionIdIsInProgress(xid))
		return -1;
	LWLockAcquire(XactTruncationLock, LW_SHARED);
	if (TransactionIdPrecedes(xid, SHID_OLDEST_CLOG_XID()))
		result = -1;
	else
		result = TransactionIdDidCommit(xid) ? 1 : 0;
	LWLockRelease(XactTruncationLock);
	return result;
}

/*
 * Is the shard given away, by its state?  A change whose transaction
 * committed holds; one that did not, does not; one still running, or too
 * old to tell, counts as given away if either side says so.  Reads the
 * commit log: not for the startup process or the postmaster.
 */
bool
shid_shard_state_retired(const ShidShardState *state)
{
	if (!shid_state_pending(state))
		return state->retired;
	switch (shid_xid_committed(state->xid))
	{
		case 1:
			return state->retired;
		case 0:
			return state->prev_retired;
		default:
			return state->retired || state->prev_retired;
	}
}

/*
 * A state records the top-level transaction of its last ownership change,
 * and the state before that transaction's first change of the shard.  It
 * holds only once that transaction has committed.  While it runs, a
 * retirement already refuses (fail closed).  A transaction that aborted,
 * or never committed before a crash, leaves the state before it.  A
 * savepoint rolled back is undone by owner.c, which puts the state before
 * it back and logs it again before the commit.  A shard whose owner the
 * server decided keeps its state, minting or not, so that no catalog
 * decides for it (owner.c).  Every later change of any state, and every
 * raise of the ceiling while some state waits, settles the states: keeps
 * only the outcome, with the frozen xid (SHID_XID_SETTLED).
 *
 * Settle every state whose last change has committed or aborted: keep only
 * its outcome, so that no state waits on a transaction whose status the
 * commit log may one day no longer hold.  Each settled state is marked for
 * the next sync.  Returns how many were settled.  The caller holds the
 * floors lock exclusively.
 */
static int
shid_settle_states_locked(const ShidShardKey *skip)
{
	HASH_SEQ_STATUS status;
	ShidShardState *state;
	int			settled = 0;
	int			unsettled = 0;

	hash_seq_init(&status, shid_states);
	while ((state = hash_seq_search(&status)) != NULL)
	{
		if (!shid_state_pending(state) ||
			(skip != NULL && memcmp(&state->key, skip, sizeof(*skip)) == 0))
			continue;
		if (shid_xid_committed(state->xid) < 0)
		{
			unsettled++;
			continue;
		}
		state->retired = shid_shard_state_retired(state);
		state->prev_retired = state->retired;
		state->xid = SHID_XID_SETTLED;
		shid_state_mark(state);
		settled++;
	}
	shid_floors_shared->unsettled_states = unsettled;
	return settled;
}

/*
 * After a raise of the ceiling, which a minting server makes every half
 * second (generator.c): settle what can be settled, if anything waits, and
 * sync it.  The count of waiting states is read without the lock first:
 * one missed is settled at the next raise, or by the next change of any
 * state.
 *
 * Locks: the floors lock, exclusively, if a state waits.
 */
void
shid_settle_states(void)
{
	if (shid_floors_shared->unsettled_states <= 0 || RecoveryInProgress())
		return;
	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (shid_floors_shared->unsettled_states > 0 && shid_settle_states_locked(NULL) > 0)
		shid_states_sync_locked();
	LWLockRelease(shid_floors_shared->lock);
}

/* How many states are claims.  The caller holds the floors lock. */
long
shid_claims_count_locked(void)
{
	HASH_SEQ_STATUS scan;
	ShidShardState *state;
	long		claims = 0;

	Assert(LWLockHeldByMe(shid_floors_shared->lock));
	hash_seq_init(&scan, shid_states);
	while ((state = hash_seq_search(&scan)) != NULL)
		if (shid_state_claim(state))
			claims++;
	return claims;
}

/* Copy the shard's state into *state; false if it has none.  The caller
 * holds the floors lock. */
bool
shid_shard_state_locked(const ShidShardKey *key, ShidShardState *state)
{
	ShidShardState *found = hash_search(shid_states, key, HASH_FIND, NULL);

	Assert(LWLockHeldByMe(shid_floors_shared->lock));
	if (found != NULL && shid_state_empty(found))
		found = NULL;
	if (found != NULL)
		memcpy(state, found, sizeof(*state));
	return found != NULL;
}

/*
 * A subtransaction that changed the shard's ownership rolled back (owner.c):
 * if its change is still the latest, "expect", put back the ownership of
 * "restore", the state before the change, and return true.  The state is
 * marked for the sync before the transaction commits, which makes it
 * durable; a crash before then aborts the whole transaction, whose xid the
 * states it left carry.  The floor stays: floors only rise.  Cannot fail:
 * called while a subtransaction aborts.  The caller holds the floors lock
 * exclusively.
 */
bool
shid_shard_restore_owner_locked(const ShidShardState *expect, const ShidShardState *restore)
{
	ShidShardState *state = hash_search(shid_states, &expect->key, HASH_FIND, NULL);
	ShidShardState empty;

	Assert(LWLockHeldByMeInMode(shid_floors_shared->lock, LW_EXCLUSIVE));
	if (state == NULL)
	{
		memset(&empty, 0, sizeof(empty));
		empty.key = expect->key;
		if (!shid_same_owner(&empty, expect))
			return false;
		/* Nothing was kept of the shard, nor is to be. */
		return true;
	}
	if (!shid_same_owner(state, expect))
		return false;
	state->retired = restore->retired;
	state->prev_retired = restore->prev_retired;
	state->database = restore->database;
	state->xid = restore->xid;
	shid_state_mark(state);
	return true;
}

/*
 * Change a shard's state in shared memory, marked for the next sync:
 * floor_ms becomes its floor if it is higher (or, with lower, whatever it
 * is; 0 removes the floor); owner retires it or takes it back in the
 * current transaction, retires it unconditionally (SHID_RETIRE_SETTLED),
 * or SHID_KEEP_OWNER.  An ownership change records the top-level
 * transaction's xid, and as the state before it the state before the
 * first change of that transaction, so that the transaction's abort, or a
 * crash before its commit, restores it whatever the transaction did in
 * between; a subtransaction that rolls back is undone by owner.c.  A full
 * table fails before anything changes.  The transaction syncs the change
 * before it commits (shid_states_sync_xact); a caller that relies on it
 * at once syncs it itself.  The caller holds the floors lock exclusively,
 * and updates the shard's slot before it releases it.
 */
void
shid_shard_change_locked(const ShidShardKey *key, int64 floor_ms, bool lower, int owner)
{
	ShidShardState *state;
	ShidShardState before;
	ShidShardState after;
	bool		found;

	Assert(LWLockHeldByMeInMode(shid_floors_shared->lock, LW_EXCLUSIVE));
	if (!shid_shard_state_locked(key, &before))
	{
		memset(&before, 0, sizeof(before));
		before.key = *key;
		before.xid = InvalidFullTransactionId;
	}
	before.flags = 0;
	after = before;
	if (lower || floor_ms > after.floor_ms)
		after.floor_ms = Max(floor_ms, 0);
	/* The first floor of a shard with no state names this database. */
	if (shid_state_empty(&before) && after.floor_ms > 0)
		after.database = MyDatabaseId;
	if (owner != SHID_KEEP_OWNER)
		after.database = MyDatabaseId;
	/* A claim (SHID_CLAIM) names the database alone. */
	if (owner == SHID_RETIRE_SETTLED)
	{
		after.retired = after.prev_retired = 1;
		after.xid = SHID_XID_SETTLED;
	}
	else if (owner == SHID_OWN || owner == SHID_RETIRE)
	{
		FullTransactionId top = GetTopFullTransactionId();

		/* A second change in one transaction keeps the state before it. */
		if (shid_state_pending(&before) && FullTransactionIdEquals(before.xid, top))
			after.prev_retired = before.prev_retired;
		else
			after.prev_retired = shid_shard_state_retired(&before);
		after.retired = (owner == SHID_RETIRE);
		after.xid = top;
	}
	else if (owner == SHID_KEEP_OWNER && shid_state_pending(&after) &&
			 shid_xid_committed(after.xid) >= 0)
	{
		/* The last change has settled: keep only its outcome. */
		after.retired = shid_shard_state_retired(&before);
		after.prev_retired = after.retired;
		after.xid = SHID_XID_SETTLED;
	}
	/* Nothing changes, or nothing is to be kept of a shard with no state. */
	if (memcmp(&before, &after, sizeof(after)) == 0 ||
		(shid_state_empty(&before) && shid_state_empty(&after)))
	{
		/*
		 * Nothing changes, but what this transaction relies on may still be
		 * an earlier change that was never synced (one whose transaction
		 * rolled back, or another's still open): sync it before the commit.
		 */
		state = hash_search(shid_states, key, HASH_FIND, NULL);
		if (state != NULL && (state->flags & SHID_STATE_UNSYNCED))
			shid_states_changed = true;
		return;
	}

	state = hash_search(shid_states, key, HASH_ENTER_NULL, &found);
	if (state == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many shards with a state on this server"),
				 errdetail("This server keeps the floor, the retirement or the owner of at most sharded_id.max_shards shards, among them every shard created here."),
				 errhint("Raise sharded_id.max_shards and restart the server.")));
	/* From here on nothing fails. */
	if (found)
		after.flags = state->flags;
	memcpy(state, &after, sizeof(after));
	shid_state_mark(state);
	/* The others settled first: that count leaves this shard out. */
	(void) shid_settle_states_locked(key);
	if (shid_state_pending(&after))
		shid_floors_shared->unsettled_states++;
}

/* A copy of every state, for floors(); returns how many. */
int
shid_shard_states(ShidShardState **states)
{
	HASH_SEQ_STATUS status;
	ShidShardState *state;
	int			n = 0;

	LWLockAcquire(shid_floors_shared->lock, LW_SHARED);
	*states = palloc(Max(hash_get_num_entries(shid_states), 1) * sizeof(ShidShardState));
	hash_seq_init(&status, shid_states);
	while ((state = hash_seq_search(&status)) != NULL)
		memcpy(&(*states)[n++], state, sizeof(ShidShardState));
	LWLockRelease(shid_floors_shared->lock);
	return n;
}

/*
 * Replay a STATES record, or 1.6's SHARD record of one state (rmgr.c): on a
 * standby, or in crash recovery.  A record that ends at or before the LSN
 * of the file is in it already and is skipped.  Each state the record
 * holds replaces this server's (an empty one removes it); the file is
 * written once with the record's LSN.  Each state's xid, if it waits on
 * one, is passed to the transaction counter, as the xid of a record's
 * header is, so that no transaction is handed it after a promotion or a
 * crash.  Returns how many states the record holds, their copies in
 * *replayed (palloc'd), for the shards' slots to follow once the lock is
 * released.
 */
int
shid_floors_redo(XLogReaderState *record, ShidShardState **replayed)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	const char *data = XLogRecGetData(record);
	uint32		len = XLogRecGetDataLen(record);
	uint32		count;
	ShidShardState *recs;

	if (info == XLOG_SHID_SHARD)
	{
		if (len != sizeof(ShidShardState))
			elog(PANIC, "sharded_id redo: shard record of %u bytes", len);
		count = 1;
	}
	else
	{
		if (len < sizeof(uint32))
			elog(PANIC, "sharded_id redo: states record of %u bytes", len);
		memcpy(&count, data, sizeof(count));
		data += sizeof(count);
		if (len != sizeof(uint32) + (uint64) count * sizeof(ShidShardState))
			elog(PANIC, "sharded_id redo: states record of %u bytes for %u states",
				 len, count);
	}
	recs = palloc(Max(count, 1) * sizeof(ShidShardState));
	memcpy(recs, data, count * sizeof(ShidShardState));
	*replayed = recs;

	/*
	 * The xids the states wait on pass to the transaction counter whether
	 * or not the file holds the record already: the record's own header
	 * carries only the xid of the backend that synced them.  Only an xid at
	 * or past the counter moves it.
	 */
	for (uint32 i = 0; i < count; i++)
		if (shid_state_pending(&recs[i]) &&
			FullTransactionIdFollowsOrEquals(recs[i].xid, ReadNextFullTransactionId()))
			AdvanceNextFullTransactionIdPastXid(XidFromFullTransactionId(recs[i].xid));

	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (record->EndRecPtr <= shid_floors_shared->lsn)
	{
		LWLockRelease(shid_floors_shared->lock);
		return 0;
	}
	/*
	 * As for a data page written in recovery: the minimum recovery point
	 * moves past the record before the file that holds it is written, so
	 * that no backup of this server, nor this server after a crash, stops
	 * recovery before a record whose effect the file already holds.
	 */
	XLogFlush(record->EndRecPtr);
	for (uint32 i = 0; i < count; i++)
	{
		ShidShardState *rec = &recs[i];
		ShidShardState *state;
		bool		found;

		rec->flags = 0;
		if (shid_state_empty(rec))
		{
			(void) hash_search(shid_states, &rec->key, HASH_REMOVE, NULL);
			continue;
		}
		state = hash_search(shid_states, &rec->key, HASH_ENTER_NULL, &found);
		if (state == NULL)
			ereport(FATAL,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("too many shards with a floor or a retirement to replay"),
					 errdetail("The WAL holds the state of shard %d, and this server keeps the state of at most sharded_id.max_shards shards.",
							   rec->key.shard),
					 errhint("Raise sharded_id.max_shards to at least the primary's setting and restart the server.")));
		if (shid_state_pending(rec) && !(found && shid_state_pending(state)))
			shid_floors_shared->unsettled_states++;
		memcpy(state, rec, sizeof(*rec));
	}
	shid_write_states(record->EndRecPtr);
	LWLockRelease(shid_floors_shared->lock);
	return (int) count;
}

/* What pg_walinspect shows of one state. */
static void
shid_state_desc(StringInfo buf, const ShidShardState *rec)
{
	appendStringInfo(buf, "shard %d layout key %llu floor %lld retired %d before %d xid %llu database %u",
					 rec->key.shard, (unsigned long long) rec->key.layout_key,
					 (long long) rec->floor_ms, rec->retired, rec->prev_retired,
					 (unsigned long long) U64FromFullTransactionId(rec->xid), rec->database);
}

/* What pg_walinspect shows of a STATES or SHARD record. */
void
shid_floors_desc(StringInfo buf, XLogReaderState *record)
{
	const char *data = XLogRecGetData(record);
	uint32		len = XLogRecGetDataLen(record);
	uint32		count;
	ShidShardState rec;

	if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) == XLOG_SHID_SHARD)
	{
		if (len != sizeof(ShidShardState))
			return;
		memcpy(&rec, data, sizeof(rec));
		shid_state_desc(buf, &rec);
		return;
	}
	if (len < sizeof(uint32))
		return;
	memcpy(&count, data, sizeof(count));
	if (len != sizeof(uint32) + (uint64) count * sizeof(ShidShardState))
		return;
	appendStringInfo(buf, "%u states", count);
	for (uint32 i = 0; i < count; i++)
	{
		memcpy(&rec, data + sizeof(uint32) + i * sizeof(rec), sizeof(rec));
		appendStringInfoString(buf, i == 0 ? ": " : "; ");
		shid_state_desc(buf, &rec);
	}
}
