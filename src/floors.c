/*-------------------------------------------------------------------------
 *
 * src/floors.c
 *	  What this server keeps durably about single shards: each shard's
 *	  floor, and whether the server gave the shard away.
 *
 * A shard's floor is a millisecond at or before which no id of the shard is
 * minted here: raise_floor sets it over the ids that another server minted
 * for a shard that now lives here, and the generator raises it as the
 * shard's ids creep past it while this server's clock is still behind.  It
 * belongs to one (layout, shard): raising it moves no other shard's ids,
 * and the durable clock ceiling (ceiling.c), which every slot starts at
 * after a restart, does not follow it.  A slot starts at the later of the
 * two.
 *
 * A retirement says that this server gave the shard away (drop_shard,
 * retire_shard, a move) and must not mint for it until create_shard takes
 * it back.  It belongs to the server, not to one database: every database
 * of the server honours it, before and after a restart and on a promoted
 * standby, and CREATE or DROP EXTENSION does not touch it.  A change of
 * ownership is made in a transaction: the state records the top-level
 * transaction that made the change and the state before that transaction's
 * first change of the shard, and holds only once the transaction has
 * committed.  While it runs, a retirement already refuses (fail closed); a
 * transaction that aborted, or never committed before a crash, leaves the
 * state before it, whatever it changed in between.  A savepoint rolled
 * back is undone by owner.c, which puts the state before it back and logs
 * it again before the commit.  A shard whose owner the server decided keeps
 * its state, minting or not, so that no catalog decides for it (owner.c);
 * the xid of a settled state is then the frozen xid.
 *
 * Durability: every change is WAL-logged (record SHARD of the "sharded_id"
 * resource manager, with an xid, as in ceiling.c) and written to the file
 * sharded_id.shards before it takes effect, so that it precedes every id it
 * covers and every row a retirement's transaction commits.  Standbys and
 * crash recovery replay it into their own shared state and file.  The file
 * holds one line per shard with a state, at most sharded_id.max_shards
 * (a shard without a slot cannot be minted for), and a CRC-32C:
 *
 *	 sharded_id shards 2
 *	 <layout key> <shard> <floor ms> <retired> <state before> <xid> <database>
 *	 crc32c 1a2b3c4d
 *
 * A file of version 1, written before states knew their database, has no
 * <database> column and is read with database 0: not known.
 *
 * Each state names the database whose transaction last changed the
 * shard's ownership (or, for a shard with no state, raised its first
 * floor): MyDatabaseId of the backend that made the change, carried by its
 * WAL record.  privs.c lets a role that is not a superuser change a
 * shard's state only from that database, so that no database's provisioner
 * retires, takes or moves the floor of another database's shard.  A floor
 * raise keeps the state's database.  An aborted change leaves its database
 * with the state before it (the state has room for one): the shard then
 * belongs to the database that tried, until a superuser changes it.
 *
 * A file that does not match this form to the byte stops the server from
 * starting: floors and retirements cannot be guessed, and minting without
 * them could repeat ids.
 *
 * The states live in a shared hash table guarded by the floors' own
 * LWLock, shared to read, exclusive to change and to write the file; a
 * change and the slot's copy of it (slots.c) are made under one hold of
 * it.  Where it stands in the lock order: locks.h.
 *
 * Settling: a state records the xid of its last ownership change until
 * that transaction has ended; every later change of any state, and every
 * raise of the ceiling while some state waits, keeps only the outcome (with
 * the frozen xid, SHID_XID_SETTLED), so that no state outlives the commit
 * log's memory of its xid.
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
#define SHID_SHARDS_HEADER	"sharded_id shards 2\n"
#define SHID_SHARDS_HEADER_V1	"sharded_id shards 1\n"

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
 * Does a state say anything?  One that does not is not kept.  A shard
 * whose owner this server decided keeps its state, taken back or not.
 */
static inline bool
shid_state_empty(const ShidShardState *state)
{
	return state->floor_ms == 0 && !shid_state_owner_known(state);
}

/* Do two states say the same of the shard's ownership? */
static inline bool
shid_same_owner(const ShidShardState *a, const ShidShardState *b)
{
	return a->retired == b->retired && a->prev_retired == b->prev_retired &&
		a->database == b->database && FullTransactionIdEquals(a->xid, b->xid);
}

/* The file's text for every state, with its CRC line. */
static void
shid_states_text(StringInfo buf)
{
	HASH_SEQ_STATUS status;
	ShidShardState *state;
	pg_crc32c	crc;

	appendStringInfoString(buf, SHID_SHARDS_HEADER);
	hash_seq_init(&status, shid_states);
	while ((state = hash_seq_search(&status)) != NULL)
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

/* Write the file from the table.  The caller holds the lock exclusively. */
static void
shid_write_states(void)
{
	StringInfoData buf;

	initStringInfo(&buf);
	shid_states_text(&buf);
	shid_write_durably(SHID_SHARDS_TMPFILE, SHID_SHARDS_FILE, buf.data, buf.len);
	pfree(buf.data);
	shid_floors_shared->states_dirty = false;
}

/*
 * Write the file if a change that alters no shard's minting left it behind
 * shared memory (shid_shard_change_locked), after flushing the WAL that
 * holds the change.  owner.c calls this before a transaction that changed
 * ownership commits.
 */
void
shid_write_states_if_dirty(void)
{
	if (!shid_floors_shared->states_dirty)
		return;
	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (shid_floors_shared->states_dirty)
	{
		if (!XLogRecPtrIsInvalid(XactLastRecEnd))
			XLogFlush(XactLastRecEnd);
		shid_write_states();
	}
	LWLockRelease(shid_floors_shared->lock);
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

/* Read the file into the empty table, at start-up. */
static void
shid_read_states(int max_shards)
{
	FILE	   *file;
	StringInfoData text;
	char		chunk[8192];
	size_t		len;
	char	   *line;
	char	   *crc_line;
	pg_crc32c	crc;
	unsigned int stored_crc;
	int			count = 0;
	bool		v1;

	file = AllocateFile(SHID_SHARDS_FILE, PG_BINARY_R);
	if (file == NULL)
	{
		if (errno == ENOENT)
			return;				/* no shard ever had a state here */
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", SHID_SHARDS_FILE)));
	}
	initStringInfo(&text);
	while ((len = fread(chunk, 1, sizeof(chunk), file)) > 0)
		appendBinaryStringInfo(&text, chunk, len);
	if (ferror(file) || FreeFile(file) != 0)
		ereport(FATAL,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\": %m", SHID_SHARDS_FILE)));

	/* Both headers have the same length. */
	StaticAssertStmt(sizeof(SHID_SHARDS_HEADER) == sizeof(SHID_SHARDS_HEADER_V1),
					 "headers of one length");
	v1 = strncmp(text.data, SHID_SHARDS_HEADER_V1, strlen(SHID_SHARDS_HEADER_V1)) == 0;
	if (!v1 && strncmp(text.data, SHID_SHARDS_HEADER, strlen(SHID_SHARDS_HEADER)) != 0)
		shid_bad_states_file("It does not start with a known header.");
	crc_line = strstr(text.data, "crc32c ");
	if (crc_line == NULL || sscanf(crc_line, "crc32c %08x", &stored_crc) != 1 ||
		strlen(crc_line) != strlen("crc32c 00000000\n") ||
		(crc_line != text.data && crc_line[-1] != '\n'))
		shid_bad_states_file("It has no checksum line, or is truncated.");
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, text.data, crc_line - text.data);
	FIN_CRC32C(crc);
	if (crc != stored_crc)
		shid_bad_states_file("Its checksum does not match its contents.");

	line = text.data + strlen(SHID_SHARDS_HEADER);
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
		state->pad = 0;
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
		shid_floors_shared->states_dirty = false;
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
 * WAL-log a shard's new state and flush the record, before the file that
 * holds it is written: redo then knows the state's xid, so that no other
 * transaction is handed that xid after a crash, and never rewinds the file.
 */
static XLogRecPtr
shid_log_state(const ShidShardState *state, bool flush)
{
	XLogRecPtr	lsn = shid_wal_log(XLOG_SHID_SHARD, (const char *) state, sizeof(*state), true);

	if (flush && !XLogRecPtrIsInvalid(lsn))
		XLogFlush(lsn);
	return lsn;
}

/*
 * Settle every state whose last change has committed or aborted: keep only
 * its outcome, so that no state waits on a transaction whose status the
 * commit log may one day no longer hold.  Each settled state is WAL-logged;
 * the caller writes the file.  Returns how many were settled.  The caller
 * holds the floors lock exclusively.
 */
static int
shid_settle_states_locked(const ShidShardKey *skip)
{
	HASH_SEQ_STATUS status;
	ShidShardState *state;
	int			settled = 0;
	int			unsettled = 0;
	XLogRecPtr	lsn = InvalidXLogRecPtr;

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
		lsn = shid_log_state(state, false);
		settled++;
	}
	/* One flush for them all, before the caller writes the file. */
	if (!XLogRecPtrIsInvalid(lsn))
		XLogFlush(lsn);
	shid_floors_shared->unsettled_states = unsettled;
	return settled;
}

/*
 * After a raise of the ceiling, which a minting server makes every half
 * second (generator.c): settle what can be settled, if anything waits.
 * The count of waiting states is read without the lock first: one missed
 * is settled at the next raise, or by the next change of any state.
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
	{
		/* Remove what says nothing any more. */
		HASH_SEQ_STATUS status;
		ShidShardState *state;

		hash_seq_init(&status, shid_states);
		while ((state = hash_seq_search(&status)) != NULL)
			if (shid_state_empty(state))
				(void) hash_search(shid_states, &state->key, HASH_REMOVE, NULL);
		shid_write_states();
	}
	LWLockRelease(shid_floors_shared->lock);
}

/* Copy the shard's state into *state; false if it has none.  The caller
 * holds the floors lock. */
bool
shid_shard_state_locked(const ShidShardKey *key, ShidShardState *state)
{
	ShidShardState *found = hash_search(shid_states, key, HASH_FIND, NULL);

	Assert(LWLockHeldByMe(shid_floors_shared->lock));
	if (found != NULL)
		memcpy(state, found, sizeof(*state));
	return found != NULL;
}

/*
 * A subtransaction that changed the shard's ownership rolled back (owner.c):
 * if its change is still the latest, "expect", put back the ownership of
 * "restore", the state before the change, in shared memory only, and
 * return true.  Both belong to the running transaction, whose xid the
 * durable record holds, so a crash before it commits leaves the state
 * before the transaction; owner.c WAL-logs the restored state before the
 * transaction commits (shid_shard_relog_owner).  The floor stays: floors
 * only rise.  Cannot fail: called while a subtransaction aborts.  The
 * caller holds the floors lock exclusively.
 */
bool
shid_shard_restore_owner_locked(const ShidShardState *expect, const ShidShardState *restore)
{
	ShidShardState *state = hash_search(shid_states, &expect->key, HASH_FIND, NULL);

	Assert(LWLockHeldByMeInMode(shid_floors_shared->lock, LW_EXCLUSIVE));
	if (state == NULL || !shid_same_owner(state, expect))
		return false;
	state->retired = restore->retired;
	state->prev_retired = restore->prev_retired;
	state->database = restore->database;
	state->xid = restore->xid;
	if (shid_state_empty(state))
		(void) hash_search(shid_states, &expect->key, HASH_REMOVE, NULL);
	return true;
}

/*
 * Before the transaction commits: WAL-log and write the shard's state if
 * its ownership is still "expect", which a rolled-back subtransaction
 * restored (shid_shard_restore_owner_locked), so that the durable record,
 * which still holds the rolled-back change under this transaction's xid,
 * does not outlive the commit.  A state that went empty is logged empty,
 * which redo removes.
 */
void
shid_shard_relog_owner(const ShidShardState *expect)
{
	ShidShardState state;

	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (!shid_shard_state_locked(&expect->key, &state))
	{
		memset(&state, 0, sizeof(state));
		state.key = expect->key;
	}
	if (shid_same_owner(&state, expect))
	{
		shid_log_state(&state, true);
		shid_write_states();
	}
	LWLockRelease(shid_floors_shared->lock);
}

/*
 * Change a shard's state, durably: floor_ms becomes its floor if it is
 * higher (or, with lower, whatever it is; 0 removes the floor); owner
 * retires it or takes it back in the current transaction, retires it
 * unconditionally (SHID_RETIRE_SETTLED), or SHID_KEEP_OWNER.  An ownership
 * change records the top-level transaction's xid, and as the state before
 * it the state before the first change of that transaction, so that the
 * transaction's abort, or a crash before its commit, restores it whatever
 * the transaction did in between; a subtransaction that rolls back is
 * undone by owner.c.  The entry is reserved first, so that a full table
 * fails before anything is logged; then the state is WAL-logged with an
 * xid and flushed, written to the file with every other state (those that
 * settled, settled), and applied.  An error on the way leaves shared memory
 * as it was.  The caller holds the floors lock exclusively, and updates the
 * shard's slot before it releases it.
 */
void
shid_shard_change_locked(const ShidShardKey *key, int64 floor_ms, bool lower, int owner)
{
	ShidShardState *state;
	ShidShardState before;
	ShidShardState after;
	bool		found;
	bool		quiet;

	Assert(LWLockHeldByMeInMode(shid_floors_shared->lock, LW_EXCLUSIVE));
	state = hash_search(shid_states, key, HASH_FIND, NULL);
	if (state != NULL)
		memcpy(&before, state, sizeof(before));
	else
	{
		memset(&before, 0, sizeof(before));
		before.key = *key;
		before.xid = InvalidFullTransactionId;
	}
	after = before;
	if (lower || floor_ms > after.floor_ms)
		after.floor_ms = Max(floor_ms, 0);
	/* The first floor of a shard with no state names this database. */
	if (state == NULL)
		after.database = MyDatabaseId;
	if (owner != SHID_KEEP_OWNER)
		after.database = MyDatabaseId;
	if (owner == SHID_RETIRE_SETTLED)
	{
		after.retired = after.prev_retired = 1;
		after.xid = SHID_XID_SETTLED;
	}
	else if (owner != SHID_KEEP_OWNER)
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
	else if (shid_state_pending(&after) &&
			 shid_xid_committed(after.xid) >= 0)
	{
		/* The last change has settled: keep only its outcome. */
		after.retired = shid_shard_state_retired(&before);
		after.prev_retired = after.retired;
		after.xid = SHID_XID_SETTLED;
	}
	/* Nothing changes, or nothing is to be kept of a shard with no state. */
	if (memcmp(&before, &after, sizeof(after)) == 0 ||
		(state == NULL && shid_state_empty(&after)))
		return;

	/* Reserve the entry before anything is logged. */
	state = hash_search(shid_states, key, HASH_ENTER_NULL, &found);
	if (state == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many shards with a state on this server"),
				 errdetail("This server keeps the floor, the retirement or the owner of at most sharded_id.max_shards shards, among them every shard created here."),
				 errhint("Raise sharded_id.max_shards and restart the server.")));
	if (!found)
		memcpy(state, &before, sizeof(before));

	/*
	 * A change that alters no minting, whatever its transaction's outcome (a
	 * shard created here for the first time), keeps the server's knowledge
	 * that it decided the owner: its record is flushed with the commit, and
	 * the file is written once before the transaction commits.  Losing it in
	 * a crash loses only that knowledge.
	 */
	quiet = owner == SHID_OWN && !after.retired && !after.prev_retired &&
		!shid_shard_state_retired(&before) && after.floor_ms == before.floor_ms;

	PG_TRY();
	{
		shid_log_state(&after, !quiet);
		memcpy(state, &after, sizeof(after));
		if (shid_state_pending(&after))
			shid_floors_shared->unsettled_states++;
		(void) shid_settle_states_locked(key);
		if (shid_state_empty(state))
			(void) hash_search(shid_states, key, HASH_REMOVE, NULL);
		if (quiet)
			shid_floors_shared->states_dirty = true;
		else
			shid_write_states();
	}
	PG_CATCH();
	{
		/* Whatever was logged, WAL replay never weakens: floors only
		 * rise, and a retirement holds only once its xid commits. */
		state = hash_search(shid_states, key, HASH_ENTER, &found);
		memcpy(state, &before, sizeof(before));
		if (shid_state_empty(state))
			(void) hash_search(shid_states, key, HASH_REMOVE, NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
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
 * Replay a SHARD record (rmgr.c): on a standby, or in crash recovery.  The
 * record holds the whole state the primary wrote; it replaces this
 * server's and is written to its file.  A copy goes to *replayed, for the
 * shard's slot, if there is one, to follow once the lock is released.
 */
void
shid_floors_redo(XLogReaderState *record, ShidShardState *replayed)
{
	ShidShardState rec;
	ShidShardState *state;
	bool		found;

	if (XLogRecGetDataLen(record) != sizeof(ShidShardState))
		elog(PANIC, "sharded_id redo: shard record of %u bytes", XLogRecGetDataLen(record));
	memcpy(&rec, XLogRecGetData(record), sizeof(rec));

	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	state = hash_search(shid_states, &rec.key, HASH_ENTER_NULL, &found);
	if (state == NULL)
		ereport(FATAL,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("too many shards with a floor or a retirement to replay"),
				 errdetail("The WAL holds the state of shard %d, and this server keeps the state of at most sharded_id.max_shards shards.",
						   rec.key.shard),
				 errhint("Raise sharded_id.max_shards to at least the primary's setting and restart the server.")));
	memcpy(state, &rec, sizeof(rec));
	if (shid_state_pending(&rec))
		shid_floors_shared->unsettled_states++;
	if (shid_state_empty(state))
		(void) hash_search(shid_states, &rec.key, HASH_REMOVE, NULL);
	shid_write_states();
	LWLockRelease(shid_floors_shared->lock);
	*replayed = rec;
}

/* What pg_walinspect shows of a SHARD record. */
void
shid_floors_desc(StringInfo buf, XLogReaderState *record)
{
	ShidShardState rec;

	if (XLogRecGetDataLen(record) != sizeof(ShidShardState))
		return;
	memcpy(&rec, XLogRecGetData(record), sizeof(rec));
	appendStringInfo(buf, "shard %d layout key %llu floor %lld retired %d before %d xid %llu database %u",
					 rec.key.shard, (unsigned long long) rec.key.layout_key,
					 (long long) rec.floor_ms, rec.retired, rec.prev_retired,
					 (unsigned long long) U64FromFullTransactionId(rec.xid), rec.database);
}
