/*-------------------------------------------------------------------------
 *
 * src/owner.c
 *	  Only the owner mints: which shards this server may mint for, and how
 *	  a change of ownership follows its transaction.
 *
 * The design is in doc/sharded_id-design.md ("Uniqueness across servers":
 * only the owner mints, ownership follows its transaction, the server
 * decides, not a catalog).  In short: the authority is the server's state
 * of the shard (floors.c).  A retirement (retire_shard, drop_shard, a move)
 * or a take-back (create_shard) is WAL-logged with the transaction that
 * made it and kept in the data directory.  Every database of the server, a
 * restart, a crash and a promoted standby honour it; CREATE or DROP
 * EXTENSION forgets nothing.  Once the server has decided a shard's owner,
 * it keeps a state for the shard, and no catalog is read for it again.
 *
 * The catalog table sharded_id.retired_shards records retirements too, per
 * database, and a dump carries it.  It is read only for a shard whose
 * owner this server never decided: a database restored on a new server,
 * or a bare next_id(shard).  A retirement it records then becomes the
 * server's, unconditionally and durably.  So:
 *
 *	 - no snapshot decides: a session whose snapshot predates a take-back
 *	   still sees the retirement row, but reads the server's state, where
 *	   the take-back has committed;
 *	 - no database's catalog decides for a shard this server created,
 *	   retired or took back, in whichever database;
 *	 - no catalog DML un-retires a shard: deleting a row of
 *	   retired_shards changes nothing the server decided.
 *
 * A server that retired nothing mints as before: a bare next_id(shard)
 * keeps working where the shard catalog was never used.
 *
 * Where the rest is: how a change follows its transaction and savepoints,
 * at ShidOwnerChange; the owner state each slot caches, and its locks, at
 * shid_owner_learn; which database may change a shard, at
 * shid_owner_change.  The order of the locks: locks.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "compat.h"
#include "executor/spi.h"
#include "floors.h"
#include "miscadmin.h"
#include "owner.h"
#include "privs.h"
#include "slots.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

/* What a pending change is. */
#define SHID_CHANGE_RETIRE	SHID_OWNER_RETIRED	/* a retirement */
#define SHID_CHANGE_OWN		SHID_OWNER_MINTS	/* a take-back */
#define SHID_CHANGE_NONE	3	/* rolled back: nothing to do at the end */

/*
 * A change of ownership holds once its transaction commits.  The state
 * records the top-level transaction's xid, the latest change and the
 * state before the transaction's first change of the shard, so that the
 * transaction's abort, or a crash before its commit, restores the state
 * before it, whatever it did in between (a retirement and a take-back
 * rolled back together leave the shard minting).  A savepoint that rolls
 * back cannot be told apart by the xid: its changes are undone here, as
 * the subtransaction aborts, by putting back in shared memory the state
 * before them, if no other transaction changed the shard since, and
 * WAL-logging that state before the transaction commits (XACT_EVENT_
 * PRE_COMMIT); a crash before then aborts the whole transaction anyway.
 */

/* A change of a shard's ownership, pending until the transaction ends. */
typedef struct ShidOwnerChange
{
	ShidSlot   *slot;
	uint8		kind;			/* SHID_CHANGE_* */
	int			level;			/* transaction nesting level */
	ShidShardState before;		/* the shard's state before the change */
	ShidShardState after;		/* and after it */
} ShidOwnerChange;

/*
 * The pending changes, oldest first.  Their levels never decrease along the
 * list: a committed subtransaction's changes move to its parent's level.
 */
static ShidOwnerChange *shid_changes = NULL;
static int	shid_nchanges = 0;
static int	shid_maxchanges = 0;

/*
 * Make room for one more change, so that recording it after the shard's
 * state changed cannot fail.
 */
static void
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

/* The shard's state, or an empty one, under the floors lock. */
static void
shid_owner_state_locked(const ShidShardKey *key, ShidShardState *state)
{
	if (!shid_shard_state_locked(key, state))
	{
		memset(state, 0, sizeof(*state));
		state->key = *key;
	}
}

/*
 * The slot table and the shard states are shared by the databases of a
 * server, while the catalog is per database: the shard catalog belongs in
 * one database of a server.  Each state names the database whose
 * transaction last created, retired or took back the shard (floors.c; the
 * WAL record carries it to standbys).  A change of ownership by a role
 * that is not a superuser is refused (42501) unless the server has no
 * state for the shard or its state names the current database.  privs.c
 * checks it, and shid_owner_change again under the floors lock.  So no
 * database's catalog, nor its provisioner, makes another database's shard
 * refuse.  Superusers may move a shard between databases.  next_id does
 * not read the database.  A shard that a database mints for with no state
 * (a bare next_id(shard), no create_shard) is claimed by that database at
 * its first mint since start-up (shid_owner_claim).  Another database's
 * provisioner cannot then create and retire it.
 */

/*
 * Retire the shard of slot (owner SHID_RETIRE) or take it back (SHID_OWN)
 * in the current transaction, durably (floors.c), and remember the change
 * with the shard's state before and after it, to undo it if a
 * subtransaction rolls back and to follow the transaction's end.  The
 * caller stores a retirement's RETIRED in the slot.
 *
 * A shard whose owner the server never decided first learns it, from the
 * catalog (shid_owner_learn): the state before the change, which its
 * rollback restores, is then the server's, not "unknown".
 *
 * A caller that is not a superuser changes only a shard with no state or
 * one whose state belongs to this database (privs.c checked it before;
 * this checks it again under the lock that the change takes, so that no
 * other database's change slips in between): refused (42501) otherwise,
 * changing nothing.
 *
 * Locks: those of shid_owner_learn, then the floors lock, exclusively.
 */
void
shid_owner_change(ShidSlot *slot, const ShidShardKey *key, const ShidLayout *layout,
				  int owner)
{
	ShidOwnerChange *change;
	bool		here_only = !superuser();

	(void) shid_owner_learn(slot, key, layout);
	shid_owner_prepare();
	change = &shid_changes[shid_nchanges];
	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (here_only && shid_shard_state_locked(key, &change->before) &&
		change->before.database != MyDatabaseId)
	{
		ShidShardState elsewhere = change->before;

		LWLockRelease(shid_floors_shared->lock);
		shid_refuse_state_elsewhere(&elsewhere, owner == SHID_RETIRE ? "retire" : "take");
	}
	shid_owner_state_locked(key, &change->before);
	shid_shard_change_locked(key, 0, false, owner);
	shid_owner_state_locked(key, &change->after);
	LWLockRelease(shid_floors_shared->lock);
	change->slot = slot;
	change->kind = (owner == SHID_RETIRE) ? SHID_CHANGE_RETIRE : SHID_CHANGE_OWN;
	change->level = GetCurrentTransactionNestLevel();
	shid_nchanges++;
}

/*
 * Undo the changes made at nesting level "level" or deeper, newest first,
 * as their (sub)transaction aborts.  Nothing here may fail.
 *
 * The whole transaction aborts (top): every change it made records its
 * xid, and the state before the transaction's first change, which now
 * holds.  A retirement's slot reads its state again on the next mint
 * (UNKNOWN), where the aborted change no longer counts but any other
 * since does.
 *
 * A subtransaction aborts: the durable records still hold its changes
 * under the running transaction's xid.  Each change, if still the latest,
 * gives way to the state before it, in shared memory at once, and stays
 * listed at the parent's level to be WAL-logged before the transaction
 * commits (shid_owner_relog): a crash before then aborts the whole
 * transaction anyway.
 *
 * Locks: the floors lock, shared for the transaction, exclusively for a
 * subtransaction; then a slot's spinlock.  Holding it, no mint can read
 * the state between the change and the slot's.
 */
static void
shid_owner_undo(int level, bool top)
{
	int			i = shid_nchanges;

	LWLockAcquire(shid_floors_shared->lock, top ? LW_SHARED : LW_EXCLUSIVE);
	while (i > 0 && shid_changes[i - 1].level >= level)
	{
		ShidOwnerChange *change = &shid_changes[--i];
		uint8		kind = change->kind;

		if (!top)
		{
			change->level = level - 1;
			if (kind == SHID_CHANGE_RETIRE || kind == SHID_CHANGE_OWN)
			{
				/* The state before comes back, unless another transaction
				 * changed the shard since; the restore is marked for the
				 * sync before the commit (floors.c). */
				(void) shid_shard_restore_owner_locked(&change->after, &change->before);
				change->kind = SHID_CHANGE_NONE;
			}
		}
		if (kind == SHID_CHANGE_RETIRE)
			(void) shid_slot_set_owner(change->slot, SHID_OWNER_UNKNOWN, false);
	}
	LWLockRelease(shid_floors_shared->lock);
	if (top)
		shid_nchanges = 0;
}

/*
 * Before the transaction commits or prepares: sync every state it changed
 * (floors.c), the states that rolled-back subtransactions restored among
 * them, so that each is durable before the commit.  An error here aborts
 * the transaction, which restores the state before it.
 */
static void
shid_owner_relog(void)
{
	/* Every state the transaction changed, restored ones included. */
	shid_states_sync_xact(true);
}

/*
 * At commit, a take-back leaves the slot's state unknown, and the next mint
 * reads it from the server's state of the shard, where the transaction has
 * now committed, unless a retirement changed the shard after it.  A
 * retirement took effect when it was made and stays.
 *
 * Locks: the floors lock, shared, so that no mint reading the state while
 * the transaction still ran stores its reading after this.
 */
static void
shid_owner_commit(void)
{
	if (shid_nchanges == 0)
		return;
	LWLockAcquire(shid_floors_shared->lock, LW_SHARED);
	for (int i = 0; i < shid_nchanges; i++)
		if (shid_changes[i].kind == SHID_CHANGE_OWN)
			(void) shid_slot_set_owner(shid_changes[i].slot, SHID_OWNER_UNKNOWN, false);
	LWLockRelease(shid_floors_shared->lock);
	shid_nchanges = 0;
}

static void
shid_owner_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			for (int i = 0; i < shid_nchanges; i++)
				if (shid_changes[i].kind == SHID_CHANGE_RETIRE ||
					shid_changes[i].kind == SHID_CHANGE_OWN)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("cannot prepare a transaction that created or retired a shard")));
			/* Changes rolled back to a savepoint: log what they restored. */
			shid_owner_relog();
			break;
		case XACT_EVENT_PREPARE:
			shid_nchanges = 0;
			shid_states_sync_xact(false);
			break;
		case XACT_EVENT_PRE_COMMIT:
			shid_owner_relog();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			shid_owner_commit();
			shid_states_sync_xact(false);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (shid_nchanges > 0)
				shid_owner_undo(0, true);
			shid_states_sync_xact(false);
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
	{
		if (shid_nchanges > 0 && shid_changes[shid_nchanges - 1].level >= level)
			shid_owner_undo(level, false);
	}
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
static bool
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

/*
 * next_id cannot read a table on every call, so each generator slot caches
 * the answer in shared memory (SHID_OWNER_*, owner.h):
 *
 *	 - UNKNOWN after start-up or promotion.  The first call that mints for
 *	   the slot reads the server's state of the shard, or the catalog as
 *	   above (shid_owner_learn), and stores MINTS or RETIRED, unless a
 *	   retirement or a take-back stored a state first.
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
 * A slot's owner state changes only under the slot's spinlock
 * (shid_slot_set_owner, slots.c); the minter reads it under the same
 * spinlock when it claims a value.  A mint that reads the server's state
 * stores its answer in the slot under the same exclusive hold of the
 * floors lock, and a transaction's end makes a slot UNKNOWN holding that
 * lock too: so no answer read while a change's transaction still ran is
 * stored after that transaction ended.  The catalog is read holding no
 * lock.  The list of a transaction's pending changes is backend-local.  A
 * transaction that retired or took back a shard cannot be prepared for
 * two-phase commit, since the change would then take effect, or be undone,
 * in another session; one whose changes all rolled back to savepoints can.
 * The order of the locks: locks.h.
 */

/*
 * Has this server given the shard away?  For a slot whose owner state is
 * unknown, or a shard with no slot yet (slot NULL).  The server's state of
 * the shard decides if the server ever decided the shard's owner.  If not,
 * the catalog of the current database does, and a retirement it records
 * becomes the server's, unconditionally and durably.  A slot stores the
 * answer unless a change stored a state first.
 *
 * Locks: the floors lock, exclusively, while the state is read and the
 * slot's state stored (then the slot's spinlock), so that no change's
 * commit or abort comes between (shared for a mere reading, without a
 * slot); none while the catalog is read.
 */
bool
shid_owner_learn(ShidSlot *slot, const ShidShardKey *key, const ShidLayout *layout)
{
	ShidShardState state;
	bool		retired;
	bool		made = false;

	/* Without a slot, nothing is stored: reading needs no more. */
	LWLockAcquire(shid_floors_shared->lock, slot != NULL ? LW_EXCLUSIVE : LW_SHARED);
	if (shid_shard_state_locked(key, &state) && shid_state_owner_known(&state))
	{
		retired = shid_shard_state_retired(&state);
		if (slot != NULL)
			(void) shid_slot_set_owner(slot, retired ? SHID_OWNER_RETIRED : SHID_OWNER_MINTS, true);
		LWLockRelease(shid_floors_shared->lock);
		return retired;
	}
	LWLockRelease(shid_floors_shared->lock);

	retired = shid_owner_catalog_retired(key->shard, layout);

	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (shid_shard_state_locked(key, &state) && shid_state_owner_known(&state))
		retired = shid_shard_state_retired(&state);	/* decided meanwhile */
	else if (retired)
	{
		/*
		 * The server retires the shard, whatever a slot said so far, and
		 * keeps that at once: the call that learnt it is refused, and its
		 * transaction never commits to sync it.
		 */
		shid_shard_change_locked(key, 0, false, SHID_RETIRE_SETTLED);
		shid_states_sync_locked();
		if (slot != NULL)
			(void) shid_slot_set_owner(slot, SHID_OWNER_RETIRED, false);
		made = shid_shard_state_locked(key, &state);
	}
	if (slot != NULL)
		(void) shid_slot_set_owner(slot, retired ? SHID_OWNER_RETIRED : SHID_OWNER_MINTS, true);
	LWLockRelease(shid_floors_shared->lock);
	/* A slot made meanwhile, or a caller's without one, reads it again. */
	if (made && slot == NULL)
		shid_slot_follow_state(&state);
	return retired;
}

/*
 * The first mint of a shard since start-up (its new slot, made once the
 * caller's checks passed), where the server keeps no state of the shard: a
 * bare next_id(shard) of a database with no shard catalog entry for it.
 * The server records, durably and at once, a state that names this
 * database and decides nothing else (no floor, no owner: the catalog is
 * still read as before), so that a provisioner of another database cannot
 * create and retire the shard there and stop this database's next_id
 * server-wide (privs.c refuses it, naming this database); a superuser
 * still can.  A shard with a state, whatever it says, keeps it.
 *
 * Only a role that an administrator let mint claims (privs.c,
 * shid_may_claim): a superuser, a provisioner, or a role granted counter
 * mode's next_id(integer); not any role with a temporary sequence.  Claims
 * take at most a quarter of sharded_id.max_shards states, so that the rest
 * stays for the shards that shard catalogs create and retire: past that, a
 * shard mints unclaimed, as before.  Called when a mint makes the shard's
 * slot or learns that the slot's shard mints here, off next_id's fast
 * path: once per shard and start-up, then a shared-lock lookup.
 *
 * Locks: the floors lock, shared to look, then exclusively to decide and
 * sync (floors.c); none while the catalogs are read.
 */
void
shid_owner_claim(const ShidShardKey *key)
{
	ShidShardState state;
	bool		known;

	LWLockAcquire(shid_floors_shared->lock, LW_SHARED);
	known = shid_shard_state_locked(key, &state);
	LWLockRelease(shid_floors_shared->lock);
	if (known || !shid_may_claim())
		return;
	LWLockAcquire(shid_floors_shared->lock, LW_EXCLUSIVE);
	if (!shid_shard_state_locked(key, &state) &&
		shid_claims_count_locked() < shid_max_shards / 4)
	{
		shid_shard_change_locked(key, 0, false, SHID_CLAIM);
		shid_states_sync_locked();
	}
	LWLockRelease(shid_floors_shared->lock);
}

/*
 * _retire_shard(shard_id integer, layout text) RETURNS bigint
 *
 * This server stops minting for the shard at once, in every database, and
 * returns its high-water mark, read under the same hold of the slot's
 * spinlock: no id above it is minted here afterwards.  The retirement is
 * durable and replicated first (floors.c), and holds once the transaction
 * commits; if it or its savepoint aborts, the shard's state before it holds
 * again (owner.c).  drop_shard and moves also record it in
 * sharded_id.retired_shards, which a dump carries.  NULL where sharded_id
 * is not preloaded: nothing mints there.
 * A caller that is not a superuser must own the shard's schema as a member
 * of sharded_id_provisioner (privs.c, which reads the catalog), and the
 * server's state of the shard, if any, must belong to this database
 * (checked again in owner.c).
 *
 * Locks: the floors lock (here and in floors.c), after reading
 * sharded_id.retired_shards for a shard whose owner the server never
 * decided; then the slot's spinlock.
 */
SHID_FUNCTION_INFO(shid_retire_shard);
Datum
shid_retire_shard(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	ShidSlot   *slot;
	int64		ms;

	shid_require_shard_owner(PG_GETARG_INT32(0), layout->name, "retire");
	/* Without the preload nothing mints here, and nothing is known. */
	if (shid_slots == NULL)
		PG_RETURN_NULL();
	slot = shid_admin_slot(layout, PG_GETARG_INT32(0), "retire a shard");
	shid_owner_change(slot, &slot->key, layout, SHID_RETIRE);
	/* A move relies on the commit: flush it, whatever synchronous_commit. */
	ForceSyncCommit();
	SpinLockAcquire(&slot->mutex);
	slot->owner = SHID_OWNER_RETIRED;
	ms = slot->ms;
	SpinLockRelease(&slot->mutex);
	SHID_INJECTION_POINT("sharded-id-retire-changed");
	PG_RETURN_INT64(shid_high_water_id(layout, slot->key.shard, ms));
}

/*
 * _own_shard(shard_id integer, layout text) RETURNS void
 *
 * This server mints for the shard again once the transaction commits:
 * create_shard, which also removes the shard from
 * sharded_id.retired_shards.  Durable and replicated first (floors.c); if
 * the transaction or its savepoint aborts, the shard's state before it
 * holds again (owner.c).  Nothing to do where sharded_id is not preloaded.
 * A caller that is not a superuser is refused unless _catalog_own allowed
 * it this take-back in this transaction (privs.c), and if the server's
 * state of the shard belongs to another database (owner.c).
 *
 * Locks: the floors lock (here and in floors.c), after reading
 * sharded_id.retired_shards for a shard whose owner the server never
 * decided.
 */
SHID_FUNCTION_INFO(shid_own_shard);
Datum
shid_own_shard(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	ShidSlot   *slot;

	shid_require_take_back(PG_GETARG_INT32(0), layout->name);
	if (shid_slots == NULL)
		PG_RETURN_VOID();
	slot = shid_admin_slot(layout, PG_GETARG_INT32(0), "create a shard");
	shid_owner_change(slot, &slot->key, layout, SHID_OWN);
	ForceSyncCommit();
	SHID_INJECTION_POINT("sharded-id-take-back-changed");
	PG_RETURN_VOID();
}

/*
 * _forget_owners() RETURNS void
 *
 * Called by the install scripts of 1.4, whose retirements were kept per
 * database.  Since 1.5 a retirement belongs to the server (floors.c), and
 * a new shard catalog in one database forgets none: this does nothing.
 */
SHID_FUNCTION_INFO(shid_forget_owners);
Datum
shid_forget_owners(PG_FUNCTION_ARGS)
{
	PG_RETURN_VOID();
}
