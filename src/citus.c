/*-------------------------------------------------------------------------
 *
 * src/citus.c
 *	  Shard windows on Citus, what both sides share: whether Citus is
 *	  preloaded, the server's Citus state in shared memory, and this
 *	  backend's node (its group, read once and cached).
 *
 * A node mints a shard's ids only in the milliseconds the coordinator
 * granted it: the design is in doc/sharded_id-design.md, "Citus".  The
 * coordinator's side, the grants, is citus_grant.c (where each lies among
 * a shard's frames, citus_frames.c); the node's side,
 * asking for windows over its own connection, is citus_ask.c; what a
 * coordinator learns from the nodes at its start is citus_learn.c.
 * citus_int.h holds what these files share.
 *
 * This file owns:
 *	 - shid_citus_init: at start-up, whether Citus is preloaded.  Without
 *	   it, shid_windowed stays false and the claim skips its compare.
 *	 - The Citus state in shared memory (ShidCitusShared).
 *	 - The relcache callback.  Each backend reads its group once and caches
 *	   it; Citus's trigger on pg_dist_local_group invalidates the table's
 *	   relcache entry when the group changes, and the callback then closes
 *	   next_id's one check (shid_mint_open), so that the next call reads
 *	   the group again (shid_citus_read_node).
 *	 - shid_citus_members: the node's view of pg_dist_node, whose changes
 *	   end a back-off.
 *	 - The checks of this database's sharded_id version.
 *	 - shid_citus_learn_node: whether this backend mints in windows.
 *	 - The settings' variables (init.c registers them).
 *
 * It calls neither citus_ask.c nor citus_grant.c (test/callgraph.sh).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "citus.h"
#include "citus_int.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/timestamp.h"
#include "storage/condition_variable.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/varlena.h"

bool		shid_node_known = true;
bool		shid_mint_open = true;
bool		shid_windowed = false;
int			shid_citus_window_ms = SHID_WINDOW_DEFAULT_MS;

/* Whether Citus is preloaded (set at start-up). */
bool		shid_citus_preload = false;

/* This database's pg_dist_local_group, or InvalidOid: no citus extension. */
Oid			shid_local_group_relid = InvalidOid;

/* And its pg_dist_node, whose changes end the back-offs (shid_citus_members). */
static Oid	shid_dist_node_relid = InvalidOid;

static bool shid_callback_registered = false;

/* Bumped by every invalidation the callback takes: a read it overlapped is read again. */
static uint64 shid_citus_invalidations = 0;

/* This backend's Citus group, once learnt: 0 on the coordinator. */
int32		shid_citus_group = -1;

ShidCitusShared *shid_citus_shared = NULL;

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
		pg_atomic_init_u64(&shid_citus_shared->paced_ahead, 0);
		shid_citus_shared->started = GetCurrentTimestamp();
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
uint32
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

/*
 * The coordinator's address and this node's own name and port, from this
 * database's pg_dist_node (Citus syncs it to every node).  Errors as SPI
 * can.
 *
 * Locks: AccessShareLock on pg_dist_node.
 */
bool
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
ShidNodeRead
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
bool
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
		shid_windowed = true;
	}
	else
		shid_windowed = false;
	shid_node_known = true;
}
