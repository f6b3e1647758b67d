/*-------------------------------------------------------------------------
 *
 * src/citus.c
 *	  The node field of ids minted on a Citus node, with no setting.
 *
 * Citus evaluates a column default such as next_id(5) on the node that
 * plans the write: the coordinator for an INSERT through it, a worker for
 * an INSERT ... SELECT it pushes down or a write sent to the worker.  Every
 * node has its own generator state, so two nodes minting for one shard in
 * the same millisecond would repeat ids.  On a server that preloads Citus
 * and leaves sharded_id.stripes at 1 (no stripes), the top
 * SHID_CITUS_NODE_BITS bits of the sequence field hold the node's Citus
 * group id (pg_dist_local_group; the coordinator is group 0):
 *
 *	 - The width is fixed, so adding a node never changes another's ids.
 *	 - Citus never gives a group id twice: a node removed and re-added gets
 *	   a new one, and a worker's standby, promoted, keeps its primary's and
 *	   starts above everything it replayed (ceiling.c), like any failover.
 *	 - A group id that does not fit is refused (53400), and so is a node
 *	   whose group Citus has not set yet (55000: group 0 and an empty
 *	   pg_dist_node, a worker the coordinator has not added), never a
 *	   repeat.
 *	 - A database without the citus extension mints with node 0 and the
 *	   same narrower field: the slots are the server's, shared by every
 *	   database.
 *
 * Stripes set by hand (sharded_id.stripes > 1) win, so a cluster that needs
 * more nodes or more ids per millisecond sets them on every node.  A
 * stripes of 1, set or not, means no stripes: the node field applies.
 *
 * Servers without Citus in shared_preload_libraries never get here:
 * shid_citus_init says no at start-up and shid_node is sharded_id.stripe.
 * On Citus, each backend reads its group once and caches it; Citus's
 * trigger on pg_dist_local_group invalidates the table's relcache entry
 * when the group changes, and the callback below then closes next_id's one
 * check (shid_mint_open), so that the next call reads it again.  The read
 * is a scan of two one-page tables, off next_id's path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_namespace.h"
#include "citus.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/varlena.h"

int			shid_node = 0;
bool		shid_node_known = true;
bool		shid_mint_open = true;

/* Whether the node field comes from Citus's group id (set at start-up). */
static bool shid_node_from_citus = false;

/* This database's pg_dist_local_group, or InvalidOid: no citus extension. */
static Oid	shid_local_group_relid = InvalidOid;

static bool shid_callback_registered = false;

/* Bumped by every invalidation the callback takes: a read it overlapped is read again. */
static uint64 shid_citus_invalidations = 0;

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
 * At start-up (_PG_init): whether ids carry the Citus node field, which is
 * when Citus is preloaded and sharded_id.stripes is 1 (striped is false).
 * Otherwise the node is sharded_id.stripe, known from the start.
 */
bool
shid_citus_init(int stripe, bool striped)
{
	shid_node = stripe;
	shid_node_known = true;
	if (striped || !shid_citus_preloaded())
		return false;
	shid_node_from_citus = true;
	shid_node_known = false;
	shid_mint_open = false;
	return true;
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

/* What shid_citus_read_node found. */
typedef enum ShidNodeRead
{
	SHID_NODE_OK,				/* *node is this backend's node */
	SHID_NODE_NO_GROUP,			/* pg_dist_local_group is empty */
	SHID_NODE_NOT_ADDED,		/* group 0 and an empty pg_dist_node */
	SHID_NODE_TOO_BIG,			/* a group id beyond the node field */
	SHID_NODE_CHANGING			/* changed under every read */
} ShidNodeRead;

/*
 * Read this database's node number: its Citus group id, or 0 without the
 * citus extension.  Errors only as a table scan can.
 *
 * Locks: AccessShareLock on pg_dist_local_group and pg_dist_node.
 */
static ShidNodeRead
shid_citus_read_node_once(int32 *node)
{
	Oid			relid;
	Oid			node_relid;
	bool		has_nodes;

	*node = -1;
	relid = OidIsValid(get_extension_oid("citus", true)) ?
		get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE) : InvalidOid;
	node_relid = get_relname_relid("pg_dist_node", PG_CATALOG_NAMESPACE);
	shid_local_group_relid = relid;
	if (!OidIsValid(relid) || !OidIsValid(node_relid))
	{
		/* No Citus cluster in this database. */
		shid_local_group_relid = InvalidOid;
		*node = 0;
		return SHID_NODE_OK;
	}

	/*
	 * pg_dist_node first: a worker's activation gives it its group and its
	 * rows in one transaction, so that an empty pg_dist_node read before a
	 * group is never taken for the coordinator's group 0 read after.
	 */
	has_nodes = shid_first_int4(node_relid, NULL);
	if (!shid_first_int4(relid, node) || *node < 0)
		return SHID_NODE_NO_GROUP;
	if (*node == 0 && !has_nodes)
		return SHID_NODE_NOT_ADDED;
	if (*node >= (1 << SHID_CITUS_NODE_BITS))
		return SHID_NODE_TOO_BIG;
	return SHID_NODE_OK;
}

/*
 * Read this database's node number: its Citus group id, or 0 without the
 * citus extension.  A read that an invalidation of the group overlapped
 * (the callback ran while a table was opened) is made again, a few times
 * at most.  Errors only as a table scan can.
 *
 * Locks: AccessShareLock on pg_dist_node and pg_dist_local_group.
 */
static ShidNodeRead
shid_citus_read_node(int32 *node)
{
	if (!shid_callback_registered)
	{
		CacheRegisterRelcacheCallback(shid_citus_relcache_callback, (Datum) 0);
		shid_callback_registered = true;
	}
	for (int attempt = 0; attempt < 8; attempt++)
	{
		uint64		before = shid_citus_invalidations;
		ShidNodeRead result = shid_citus_read_node_once(node);

		if (shid_citus_invalidations == before)
			return result;
	}
	return SHID_NODE_CHANGING;
}

/*
 * For a reader such as generator_stats: whether this backend knows its
 * node number, learning it if it can, without an error of its own.
 */
bool
shid_citus_try_node(void)
{
	int32		group;

	if (shid_node_known)
		return true;
	if (shid_citus_read_node(&group) != SHID_NODE_OK)
		return false;
	shid_node = group;
	shid_node_known = true;
	return true;
}

/*
 * Learn this backend's node number for next_id, or refuse.  Called by
 * next_id when shid_mint_open is false and minting is on; off its path.
 *
 * Locks: AccessShareLock on pg_dist_local_group and pg_dist_node.
 */
void
shid_citus_learn_node(void)
{
	int32		group;

	if (!shid_node_from_citus || shid_node_known)
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
					 errdetail("pg_catalog.pg_dist_local_group has no group id, and sharded ids minted here need it to differ from every other node's."),
					 errhint("Add the node from the coordinator with citus_add_node.")));
			break;
		case SHID_NODE_NOT_ADDED:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("this Citus node has not been given its group id"),
					 errdetail("pg_dist_local_group says group 0 and pg_dist_node is empty, as on a worker the coordinator has not added yet; its ids would repeat the coordinator's."),
					 errhint("Add the node from the coordinator with citus_add_node; on a cluster of one node, run citus_set_coordinator_host on it.")));
			break;
		case SHID_NODE_TOO_BIG:
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("group id %d of this Citus node does not fit in the node field of sharded ids", group),
					 errdetail("Sharded ids minted on Citus nodes hold group ids 0 to %d in the top %d bits of their sequence field.",
							   (1 << SHID_CITUS_NODE_BITS) - 1, SHID_CITUS_NODE_BITS),
					 errhint("Set sharded_id.stripes to 64 and sharded_id.stripe to the node's group id on every node of the cluster, and restart them.")));
			break;
		case SHID_NODE_CHANGING:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the group id of this Citus node is changing"),
					 errdetail("pg_dist_local_group changed while it was read, several times in a row."),
					 errhint("Try again.")));
			break;
	}
	shid_node = group;
	shid_node_known = true;
}
