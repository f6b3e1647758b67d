/*-------------------------------------------------------------------------
 *
 * src/citus.c
 *	  The node field of ids minted on a Citus node: a minter number leased
 *	  from the coordinator, with no setting.
 *
 * Citus evaluates a column default such as next_id(5) on the node that
 * plans the write: the coordinator for an INSERT through it, a worker for
 * an INSERT ... SELECT it pushes down or a write sent to the worker.  Every
 * node has its own generator state, so two nodes minting for one shard in
 * the same millisecond would repeat ids.  On a server that preloads Citus
 * and leaves sharded_id.stripes at 1 (no stripes), the top
 * SHID_CITUS_NODE_BITS bits of the sequence field hold the node's minter
 * number, which it leases from the coordinator:
 *
 *	 - The number is dense, 0 to 31, and leased per server (the key: its
 *	   system identifier, and the name and port pg_dist_node gives its
 *	   group), not per group id: Citus gives a new group id at every
 *	   citus_add_node, failed ones included, but a node removed and added
 *	   again keeps its number, so no count of add/remove cycles runs out.
 *	   A number goes to another server only once its holder's lease ran
 *	   out and the holder is no active node of the cluster; 32 nodes may
 *	   mint at once.  A new node takes its group id when free (as 1.6
 *	   numbered nodes), else the lowest free number.  A promoted standby
 *	   reads its primary's name and port from the metadata it replayed, so
 *	   it renews its primary's lease; after citus_update_node moves the
 *	   group to its address, the lease follows it there.
 *	 - citus_lease_minter (src/sql/api/citus_minters.sql) grants it on the
 *	   coordinator, in sharded_id.citus_minters, for
 *	   sharded_id.citus_lease_time at a time.  The node asks over a
 *	   connection of its own (libpq, as the extension's owner, with
 *	   citus.node_conninfo), so that the grant commits whatever the
 *	   minting transaction does.  The coordinator itself asks itself the
 *	   same way.
 *	 - No id lies after its lease's end: the durable ceiling (ceiling.c)
 *	   bounds every id that next_id's fast path returns, and the slow path
 *	   that pushes it (generator.c, shid_cover_shard_slow) first makes sure
 *	   that the lease covers the new ceiling, renewing it half a lease
 *	   ahead.  So a number given to another server after its last lease
 *	   ended, with that end as the new holder's floor (its clock must be
 *	   past it), never repeats an id; the server's own earlier ids lie
 *	   below its durable ceiling, which new ones start above.
 *	 - A node removed from the cluster (or disabled) is refused renewal,
 *	   and stops minting once its lease no longer covers the ceiling: at
 *	   most sharded_id.citus_lease_time after its last renewal.
 *	 - A renewal that names another number (the lease ran out, the node
 *	   was removed and its number given away, then it was added again)
 *	   marks the lease lost: the node refuses until it is restarted, since
 *	   backends may still hold the old number.
 *	 - Settings: the coordinator's are the cluster's.  A node whose
 *	   sharded_id.stripes differs is refused, the error naming the setting
 *	   and both values; a node with the coordinator's settings is refused
 *	   while any node with other settings still holds a lease, and starts
 *	   after the last such lease.  So a change rolled out node by node,
 *	   with restarts, in any order, never repeats an id: each node refuses
 *	   while it disagrees.  With stripes set by hand (above 1) the number
 *	   is sharded_id.stripe, and a stripe another live node holds is
 *	   refused.
 *	 - Fail closed: a node whose group Citus has not set (55000: group 0
 *	   and an empty pg_dist_node, a worker the coordinator has not added
 *	   yet), one whose pg_dist_node names no coordinator, or whose
 *	   coordinator cannot be reached with no lease left, refuses; never a
 *	   repeat.
 *	 - A database without the citus extension mints with node 0 (or its
 *	   stripe) and no lease: the slots are the server's, shared by every
 *	   database.  One database with Citus per server leases.
 *
 * Why not Citus's own scheme for sequences, which gives each node the
 * range starting at groupId << 48 of a bigint sequence: it keys the range
 * by the group id, which grows with every add and is never reused, so it
 * needs 15 bits for the node (2^15 groups in a bigint), 48 for the count,
 * and no bit for the time.  Sharded ids keep 41 bits of time, 13 of shard
 * and 10 of sequence; a field keyed by group id runs out after 31 adds at 5
 * bits.  What is bounded is the number of nodes minting at once, not the
 * number ever added: a dense number, reused only after its holder's lease
 * ended and above that end, needs 5 bits for 32 concurrent minters, and
 * keeps ids time-sortable.
 *
 * Servers without Citus in shared_preload_libraries never get here:
 * shid_citus_init says no at start-up and shid_node is sharded_id.stripe;
 * next_id's path is unchanged (shid_citus_leasing is false, and is read
 * only on the slow path that pushes the ceiling).  On Citus, each backend
 * reads its group once and caches it; Citus's trigger on
 * pg_dist_local_group invalidates the table's relcache entry when the group
 * changes, and the callback below then closes next_id's one check
 * (shid_mint_open), so that the next call reads it again and renews the
 * lease with it.  The read is a scan of two one-page tables, off next_id's
 * path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "ceiling.h"
#include "citus.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "layout.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

int			shid_node = 0;
bool		shid_node_known = true;
bool		shid_mint_open = true;

/* Whether the node field holds a number leased on Citus (set at start-up). */
static bool shid_node_from_citus = false;

/* sharded_id.stripes and sharded_id.stripe, and the node field's width. */
static int	shid_citus_stripes = 1;
static int	shid_citus_stripe = 0;
static int	shid_citus_node_bits = SHID_CITUS_NODE_BITS;

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
 * when Citus is preloaded and sharded_id.stripes is 1.  On Citus with
 * stripes set by hand, the node is sharded_id.stripe, leased all the same,
 * so that the coordinator checks the settings; without Citus it is
 * sharded_id.stripe, known from the start.
 */
bool
shid_citus_init(int stripe, int stripes)
{
	shid_citus_stripes = stripes;
	shid_citus_stripe = stripe;
	shid_citus_node_bits = stripes > 1 ? pg_leftmost_one_pos32((uint32) stripes) : SHID_CITUS_NODE_BITS;
	shid_node = stripe;
	shid_node_known = true;
	if (!shid_citus_preloaded())
		return false;
	shid_node_from_citus = true;
	shid_node_known = false;
	shid_mint_open = false;
	return stripes == 1;
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
 * The minter lease of this server, in shared memory: the number its ids
 * carry and the end of the lease, in Unix ms, past which it mints nothing.
 */
typedef struct ShidCitusLease
{
	slock_t		mutex;			/* protects the fields below */
	bool		held;			/* a number was granted since start-up */
	bool		lost;			/* a renewal gave another number */
	Oid			dboid;			/* the database whose coordinator leased it */
	int32		minter;			/* the number */
	int64		expires_ms;		/* no id of this server lies after it */
	int			renewing_pid;	/* a backend asking the coordinator now */
} ShidCitusLease;

static ShidCitusLease *shid_citus_lease = NULL;

/* sharded_id.citus_lease_time, in ms (init.c registers it). */
int			shid_citus_lease_ms = 10000;

/* Whether this backend's ids carry a leased number (a citus database). */
bool		shid_citus_leasing = false;

/* The group this backend last read, sent with every request. */
static int32 shid_citus_group = -1;

Size
shid_citus_shmem_size(void)
{
	return MAXALIGN(sizeof(ShidCitusLease));
}

void
shid_citus_shmem_init(void)
{
	bool		found;

	shid_citus_lease = ShmemInitStruct("sharded_id citus lease",
									   shid_citus_shmem_size(), &found);
	if (!found)
	{
		memset(shid_citus_lease, 0, sizeof(ShidCitusLease));
		SpinLockInit(&shid_citus_lease->mutex);
		shid_citus_lease->minter = -1;
	}
}

/* The error of a lease asked for where the module was not preloaded. */
static SHID_NORETURN void
shid_citus_not_preloaded(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("sharded_id must be loaded via \"shared_preload_libraries\""),
			 errdetail("A Citus node keeps its minter lease in shared memory."),
			 errhint("Add sharded_id to shared_preload_libraries in postgresql.conf and restart the server.")));
	pg_unreachable();
}

/* What the coordinator answered, or why it could not be asked. */
typedef struct ShidLeaseAnswer
{
	bool		ok;
	int32		minter;
	int64		expires_ms;
	int64		floor_ms;
	char		sqlstate[6];
	char	   *message;
	char	   *detail;
	char	   *hint;
} ShidLeaseAnswer;

/* Append keyword = 'value' to a connection string, quoted as libpq reads it. */
static void
shid_conninfo_add(StringInfo buf, const char *keyword, const char *value)
{
	appendStringInfo(buf, " %s = '", keyword);
	for (const char *p = value; *p; p++)
	{
		if (*p == '\'' || *p == '\\')
			appendStringInfoChar(buf, '\\');
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '\'');
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
	SPI_execute_with_args(sql, 1, argtypes, values, NULL, true, 0);
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
 * The owner of the sharded_id extension of this database, the role that
 * leases minter numbers (as Citus's own connections between nodes log in
 * as its extension's owner); the bootstrap superuser if there is none.
 */
static Oid
shid_extension_owner(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			owner = BOOTSTRAP_SUPERUSERID;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("sharded_id"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		owner = ((Form_pg_extension) GETSTRUCT(tuple))->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return owner;
}

/*
 * Ask the coordinator for this node's minter number (citus_lease_minter),
 * over a connection of its own, so that the grant commits whatever this
 * transaction does.  Never errors once the connection is open: the answer
 * says what failed.
 */
static void
shid_citus_request(int32 group, ShidLeaseAnswer *answer)
{
	char	   *coord_host = NULL;
	char	   *own_name = NULL;
	int			coord_port = 0;
	int			own_port = 0;
	StringInfoData conninfo;
	StringInfoData key;
	const char *node_conninfo;
	PGconn	   *conn;
	PGresult   *res;
	char		group_text[16];
	char		port_text[16];
	char		stripes_text[16];
	char		stripe_text[16];
	char		bits_text[16];
	char		lease_text[16];
	const char *params[8];

	memset(answer, 0, sizeof(*answer));
	if (!shid_citus_addresses(group, &coord_host, &coord_port, &own_name, &own_port))
	{
		strlcpy(answer->sqlstate, "55000", sizeof(answer->sqlstate));
		answer->message = psprintf("pg_dist_node names no coordinator or no primary of group %d", group);
		answer->detail = pstrdup("A Citus node leases its minter number from the coordinator, which pg_dist_node names as the primary of group 0.");
		answer->hint = pstrdup("Run citus_set_coordinator_host on the coordinator.");
		return;
	}

	initStringInfo(&conninfo);
	node_conninfo = GetConfigOption("citus.node_conninfo", true, false);
	if (node_conninfo != NULL)
		appendStringInfoString(&conninfo, node_conninfo);
	shid_conninfo_add(&conninfo, "host", coord_host);
	appendStringInfo(&conninfo, " port = %d", coord_port);
	shid_conninfo_add(&conninfo, "dbname", get_database_name(MyDatabaseId));
	shid_conninfo_add(&conninfo, "user", GetUserNameFromId(shid_extension_owner(), false));
	appendStringInfoString(&conninfo, " connect_timeout = 10 application_name = sharded_id_lease"
						   " options = '-c statement_timeout=10000'");

	initStringInfo(&key);
	appendStringInfo(&key, UINT64_FORMAT ":%s:%d", GetSystemIdentifier(), own_name, own_port);
	snprintf(group_text, sizeof(group_text), "%d", group);
	snprintf(port_text, sizeof(port_text), "%d", own_port);
	snprintf(stripes_text, sizeof(stripes_text), "%d", shid_citus_stripes);
	snprintf(stripe_text, sizeof(stripe_text), "%d", shid_citus_stripe);
	snprintf(bits_text, sizeof(bits_text), "%d", shid_citus_node_bits);
	snprintf(lease_text, sizeof(lease_text), "%d", shid_citus_lease_ms);
	params[0] = key.data;
	params[1] = group_text;
	params[2] = own_name;
	params[3] = port_text;
	params[4] = stripes_text;
	params[5] = stripe_text;
	params[6] = bits_text;
	params[7] = lease_text;

	conn = PQconnectdb(conninfo.data);
	if (PQstatus(conn) != CONNECTION_OK)
	{
		strlcpy(answer->sqlstate, "08001", sizeof(answer->sqlstate));
		answer->message = psprintf("could not connect to the Citus coordinator %s:%d to lease a minter number",
								   coord_host, coord_port);
		answer->detail = pstrdup(PQerrorMessage(conn));
		answer->hint = pstrdup("A Citus node leases its minter number from the coordinator as the owner of the sharded_id extension, as Citus's own connections between nodes log in as its extension's owner (citus.node_conninfo, a password file).");
		PQfinish(conn);
		return;
	}
	res = PQexecParams(conn,
					   "SELECT minter, expires_ms, floor_ms FROM sharded_id.citus_lease_minter"
					   "($1, $2::integer, $3, $4::integer, $5::integer, $6::integer, $7::integer, $8::integer)",
					   8, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
		!PQgetisnull(res, 0, 0))
	{
		answer->ok = true;
		answer->minter = pg_strtoint32(PQgetvalue(res, 0, 0));
		answer->expires_ms = pg_strtoint64(PQgetvalue(res, 0, 1));
		answer->floor_ms = pg_strtoint64(PQgetvalue(res, 0, 2));
	}
	else
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
		const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

		strlcpy(answer->sqlstate, state ? state : "XX000", sizeof(answer->sqlstate));
		answer->message = pstrdup(msg ? msg : PQerrorMessage(conn));
		answer->detail = detail ? pstrdup(detail) : NULL;
		answer->hint = hint ? pstrdup(hint) : NULL;
	}
	PQclear(res);
	PQfinish(conn);
}

/* The error of a refused lease, with the coordinator's words. */
static SHID_NORETURN void
shid_citus_refused(const ShidLeaseAnswer *answer)
{
	ereport(ERROR,
			(errcode(MAKE_SQLSTATE(answer->sqlstate[0], answer->sqlstate[1], answer->sqlstate[2],
								   answer->sqlstate[3], answer->sqlstate[4])),
			 errmsg("this Citus node may not mint: %s", answer->message),
			 answer->detail ? errdetail_internal("%s", answer->detail) : 0,
			 answer->hint ? errhint("%s", answer->hint) : 0));
	pg_unreachable();
}

/* The error of a node whose number went to another node. */
static SHID_NORETURN void
shid_citus_lost(int32 minter)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("this Citus node lost its minter number %d", minter),
			 errdetail("Its lease ran out and the coordinator gave the number to another node; backends of this server may still hold it."),
			 errhint("Restart the node: it then leases a number afresh.")));
	pg_unreachable();
}

/*
 * Make sure the lease covers ids up to target_ms, asking the coordinator
 * if it ends within half a lease of it.  A failed renewal of a lease that
 * still covers the target is left for a later call; otherwise it is the
 * error.  Returns the number.
 *
 * Locks: the lease's spinlock, never across the request.
 */
static int32
shid_citus_ensure(int32 group, int64 target_ms)
{
	ShidCitusLease copy;
	ShidLeaseAnswer answer;
	volatile bool renewing = false;

	if (shid_citus_lease == NULL)
		shid_citus_not_preloaded();
	SpinLockAcquire(&shid_citus_lease->mutex);
	copy = *shid_citus_lease;
	if (copy.held && !copy.lost && copy.dboid == MyDatabaseId &&
		copy.expires_ms - target_ms < shid_citus_lease_ms / 2 &&
		copy.renewing_pid == 0)
	{
		shid_citus_lease->renewing_pid = MyProcPid;
		renewing = true;
	}
	SpinLockRelease(&shid_citus_lease->mutex);

	if (copy.lost)
		shid_citus_lost(copy.minter);
	if (copy.held && copy.dboid != MyDatabaseId)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("another database of this server leased its minter number"),
				 errdetail("A server's ids carry one minter number, leased by the first database with the citus extension that minted on it."),
				 errhint("Mint in that database.")));
	if (copy.held && copy.expires_ms - target_ms >= shid_citus_lease_ms / 2)
		return copy.minter;
	/* Someone else renews a lease that still covers the target. */
	if (copy.held && !renewing && copy.expires_ms >= target_ms)
		return copy.minter;

	PG_TRY();
	{
		shid_citus_request(group, &answer);
	}
	PG_FINALLY();
	{
		if (renewing)
		{
			SpinLockAcquire(&shid_citus_lease->mutex);
			if (shid_citus_lease->renewing_pid == MyProcPid)
				shid_citus_lease->renewing_pid = 0;
			SpinLockRelease(&shid_citus_lease->mutex);
		}
	}
	PG_END_TRY();

	if (!answer.ok)
	{
		if (copy.held && copy.expires_ms >= target_ms)
			return copy.minter;
		shid_citus_refused(&answer);
	}

	/*
	 * A number another node held: its ids lie at or before floor_ms, and
	 * this node's must lie after.  The coordinator's clock passed it, so
	 * only a clock behind the coordinator's waits, a second at most.
	 */
	for (int waited = 0; shid_clock_ms() <= answer.floor_ms; waited++)
	{
		if (waited >= 100)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the clock of this Citus node is behind the floor of its minter number %d", answer.minter),
					 errdetail("Its last holder may have minted ids up to %s, and this clock reads %s.",
							   pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(answer.floor_ms))),
							   pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(shid_clock_ms())))),
					 errhint("Synchronise the clocks of the cluster's nodes.")));
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000);
	}

	SpinLockAcquire(&shid_citus_lease->mutex);
	if (!shid_citus_lease->held)
	{
		shid_citus_lease->held = true;
		shid_citus_lease->dboid = MyDatabaseId;
		shid_citus_lease->minter = answer.minter;
	}
	else if (shid_citus_lease->minter != answer.minter)
		shid_citus_lease->lost = true;
	if (!shid_citus_lease->lost)
		shid_citus_lease->expires_ms = Max(shid_citus_lease->expires_ms, answer.expires_ms);
	copy = *shid_citus_lease;
	SpinLockRelease(&shid_citus_lease->mutex);
	if (copy.lost)
		shid_citus_lost(copy.minter);
	if (copy.expires_ms < target_ms)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the minter lease of this Citus node ends before the ids it would mint"),
				 errdetail("The coordinator leased number %d until %s, and this node would mint up to %s.",
						   copy.minter,
						   pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(copy.expires_ms))),
						   pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(target_ms)))),
				 errhint("Synchronise the clocks of the cluster's nodes: this one runs ahead of the coordinator's by more than sharded_id.citus_lease_time, or its ids ran ahead of the clock.")));
	return copy.minter;
}

/* The number for this backend's group, leased if need be. */
static int32
shid_citus_lease_for(int32 group)
{
	shid_citus_group = group;
	return shid_citus_ensure(group, shid_clock_ms() + SHID_LEASE_MS);
}

/*
 * Before the durable ceiling is pushed to target_ms (generator.c's slow
 * path): the lease must cover it, so that no id of this server lies after
 * its lease's end.  The ceiling bounds every id that next_id's fast path
 * returns, so that path needs no look at the lease.
 */
void
shid_citus_cover(int64 target_ms)
{
	int32		minter = shid_citus_ensure(shid_citus_group, target_ms);

	if (minter != shid_node)
		shid_citus_lost(shid_node);
}

/*
 * citus_minter() RETURNS integer
 *
 * The minter number this node's ids carry, leased if need be; NULL on a
 * server that does not preload Citus.  Locks: as next_id's first call.
 */
SHID_FUNCTION_INFO(shid_citus_minter);
Datum
shid_citus_minter(PG_FUNCTION_ARGS)
{
	if (!shid_node_from_citus)
		PG_RETURN_NULL();
	if (shid_citus_lease == NULL)
		shid_citus_not_preloaded();
	shid_citus_learn_node();
	PG_RETURN_INT32(shid_node);
}

/*
 * For a reader such as generator_stats: whether this backend knows its
 * node number, learning it if it can without a lease request and without
 * an error of its own.
 */
bool
shid_citus_try_node(void)
{
	int32		group;
	ShidCitusLease copy;

	if (shid_node_known)
		return true;
	if (shid_citus_read_node(&group) != SHID_NODE_OK)
		return false;
	if (!OidIsValid(shid_local_group_relid))
	{
		shid_node = shid_citus_stripes > 1 ? shid_citus_stripe : 0;
		shid_node_known = true;
		return true;
	}
	if (shid_citus_lease == NULL)
		return false;
	SpinLockAcquire(&shid_citus_lease->mutex);
	copy = *shid_citus_lease;
	SpinLockRelease(&shid_citus_lease->mutex);
	if (!copy.held || copy.lost || copy.dboid != MyDatabaseId)
		return false;
	shid_node = copy.minter;
	shid_citus_group = group;
	shid_citus_leasing = true;
	shid_node_known = true;
	return true;
}

/*
 * Learn this backend's node number for next_id, or refuse: the Citus group,
 * then the minter number leased for it.  Called by next_id when
 * shid_mint_open is false and minting is on; off its path.
 *
 * Locks: AccessShareLock on pg_dist_local_group and pg_dist_node; the
 * lease's spinlock (never across the request).
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
		case SHID_NODE_CHANGING:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the group id of this Citus node is changing"),
					 errdetail("pg_dist_local_group changed while it was read, several times in a row."),
					 errhint("Try again.")));
			break;
	}
	if (OidIsValid(shid_local_group_relid))
	{
		shid_node = shid_citus_lease_for(group);
		shid_citus_leasing = true;
	}
	else
	{
		/* A database without the citus extension: no lease. */
		shid_node = shid_citus_stripes > 1 ? shid_citus_stripe : 0;
		shid_citus_leasing = false;
	}
	shid_node_known = true;
}
