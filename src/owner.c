/*-------------------------------------------------------------------------
 *
 * src/owner.c
 *	  Only the owner mints: which shards this server may mint for, and how
 *	  that follows the shard catalog, transaction by transaction.
 *
 * The durable truth is the server's state of the shard (floors.c): a
 * retirement, by retire_shard, drop_shard or a move, WAL-logged with the (sub)
 * transaction that made it and kept in the data directory, so that every
 * database of the server, a restart, a crash and a promoted standby honour
 * it, and CREATE or DROP EXTENSION forgets nothing.  The catalog table
 * sharded_id.retired_shards records it too, per database, and a dump
 * carries it: a restored database refuses the shards its catalog retired.
 * Either saying so retires the shard.  A server that retired nothing mints
 * as before: a bare next_id(shard) keeps working where the shard catalog
 * was never used.
 *
 * next_id cannot read a table on every call, so each generator slot caches
 * the answer in shared memory (SHID_OWNER_*, owner.h):
 *
 *	 - UNKNOWN after start-up or promotion.  The first call that mints for
 *	   the slot reads the server's state of the shard, then the catalog of
 *	   its database, and stores MINTS or RETIRED, unless a retirement or a
 *	   take-back stored a state first.
 *	 - A retirement (_retire_shard) stores RETIRED at once and reads the
 *	   slot's high-water mark under the same hold of the slot's spinlock, so
 *	   no id above that mark is minted here afterwards.  If its transaction
 *	   or subtransaction aborts, the state becomes UNKNOWN again, and the
 *	   next mint reads the server's state, where the aborted change no
 *	   longer counts but any other since does.  An uncommitted retirement
 *	   already refuses: the fence fails closed.
 *	 - A take-back (_own_shard) makes the state UNKNOWN when its
 *	   transaction commits; until then the shard stays refused.  The next
 *	   mint reads the server's state, where the take-back now holds unless
 *	   a retirement came after it.  A committing retirement stores nothing
 *	   more, so a take-back that committed in between (a move between two
 *	   databases of one server, which share the slot) stands.
 *
 * Locking rules: a slot's owner state changes only under the slot's
 * spinlock (shid_slot_set_owner, generator.c); the minter reads it under
 * the same spinlock when it claims a value.  The list of a transaction's
 * pending changes is backend-local.  A transaction that retired or took
 * back a shard cannot be prepared for two-phase commit, since the change
 * would then take effect, or be undone, in another session.
 *
 * The slot table and the shard states are shared by the databases of a
 * server, while the catalog is per database: the shard catalog belongs in
 * one database of a server.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "owner.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* A change of a slot's owner state, pending until the transaction ends. */
typedef struct ShidOwnerChange
{
	ShidSlot   *slot;
	uint8		at_commit;		/* the state at commit */
	int			level;			/* transaction nesting level */
} ShidOwnerChange;

/*
 * The pending changes, oldest first.  Their levels never decrease along the
 * list: a committed subtransaction's changes move to its parent's level.
 */
static ShidOwnerChange *shid_changes = NULL;
static int	shid_nchanges = 0;
static int	shid_maxchanges = 0;

/*
 * Make room for one more change, so that recording it after the slot's
 * state changed cannot fail.  Call before changing a slot's state.
 */
void
shid_owner_prepare(void)
{
	if (shid_nchanges < shid_maxchanges)
		return;
	if (shid_changes == NULL)
	{
		shid_maxchanges = 16;
		shid_changes = MemoryContextAlloc(TopMemoryContext,
										  shid_maxchanges * sizeof(ShidOwnerChange));
	}
	else
	{
		shid_maxchanges *= 2;
		shid_changes = repalloc(shid_changes,
								shid_maxchanges * sizeof(ShidOwnerChange));
	}
}

/*
 * Record a change of slot's owner state: at_commit is the state it has
 * once the transaction commits.  A retirement (at_commit RETIRED) has
 * already been applied; if the transaction aborts, the slot reads its state
 * again (shid_owner_undo).
 * The caller called shid_owner_prepare() first.
 */
void
shid_owner_remember(ShidSlot *slot, uint8 at_commit)
{
	ShidOwnerChange *change;

	Assert(shid_nchanges < shid_maxchanges);
	change = &shid_changes[shid_nchanges++];
	change->slot = slot;
	change->at_commit = at_commit;
	change->level = GetCurrentTransactionNestLevel();
}

/*
 * Undo the changes made at nesting level "level" or deeper, newest first.
 * A retirement that aborts leaves the slot's state unknown, not the state
 * before it: another transaction may have changed the shard since, and the
 * next mint reads the truth from the server's state of the shard, where
 * this retirement's aborted xid no longer counts.
 */
static void
shid_owner_undo(int level)
{
	while (shid_nchanges > 0 && shid_changes[shid_nchanges - 1].level >= level)
	{
		ShidOwnerChange *change = &shid_changes[--shid_nchanges];

		if (change->at_commit == SHID_OWNER_RETIRED)
			(void) shid_slot_set_owner(change->slot, SHID_OWNER_UNKNOWN, false);
	}
}

/*
 * At commit, a take-back leaves the slot's state unknown, and the next mint
 * reads it from the server's state of the shard, where the take-back's xid
 * has now committed, unless a retirement changed the shard after it.  A
 * retirement took effect when it was made and stays.
 */
static void
shid_owner_commit(void)
{
	for (int i = 0; i < shid_nchanges; i++)
		if (shid_changes[i].at_commit == SHID_OWNER_MINTS)
			(void) shid_slot_set_owner(shid_changes[i].slot, SHID_OWNER_UNKNOWN, false);
	shid_nchanges = 0;
}

static void
shid_owner_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (shid_nchanges > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot prepare a transaction that created or retired a shard")));
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			shid_owner_commit();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			shid_owner_undo(0);
			break;
		default:
			break;
	}
}

static void
shid_owner_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	if (event == SUBXACT_EVENT_ABORT_SUB)
		shid_owner_undo(level);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (int i = shid_nchanges - 1; i >= 0 && shid_changes[i].level >= level; i--)
			shid_changes[i].level = level - 1;
	}
}

/* From _PG_init: follow every transaction's end. */
void
shid_owner_init(void)
{
	RegisterXactCallback(shid_owner_xact_callback, NULL);
	RegisterSubXactCallback(shid_owner_subxact_callback, NULL);
}

/*
 * Does the shard catalog of the current database say that this server gave
 * the shard of this layout away?  No catalog (sharded_id older than 1.4,
 * whose library is already 1.4's) says no.
 */
bool
shid_owner_catalog_retired(int32 shard, const ShidLayout *layout)
{
	Oid			nsp = get_namespace_oid("sharded_id", true);
	Oid			argtypes[2] = {INT4OID, TEXTOID};
	Datum		args[2];
	bool		retired;

	if (!OidIsValid(nsp) || !OidIsValid(get_relname_relid("retired_shards", nsp)))
		return false;
	args[0] = Int32GetDatum(shard);
	args[1] = CStringGetTextDatum(layout->name);
	SPI_connect();
	if (SPI_execute_with_args("SELECT 1 FROM sharded_id.retired_shards r "
							  "WHERE r.shard_id OPERATOR(pg_catalog.=) $1 "
							  "AND r.layout OPERATOR(pg_catalog.=) $2",
							  2, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read sharded_id.retired_shards");
	retired = SPI_processed > 0;
	SPI_finish();
	return retired;
}
