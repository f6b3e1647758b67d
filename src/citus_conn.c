/*-------------------------------------------------------------------------
 *
 * src/citus_conn.c
 *	  Connections between the nodes of a Citus cluster: a node's to the
 *	  coordinator (citus_ask.c) and the coordinator's to the nodes
 *	  (citus_learn.c), over libpq with the backend helpers, each wait
 *	  bounded and interruptible.  They log in as the owner of the
 *	  sharded_id extension, with citus.node_conninfo, as Citus's own
 *	  connections between nodes do.  Design: doc/sharded_id-design.md,
 *	  "Citus".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_extension.h"
#include "ceiling.h"
#include "citus_conn.h"
#include "commands/dbcommands.h"
#include "layout.h"
#include "libpq-fe.h"
#include "libpq/libpq-be-fe-helpers.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/rel.h"
#include "utils/wait_event.h"

/*
 * Start the connection string of a connection to host:port of this
 * database's cluster: citus.node_conninfo, the address, this database, and
 * the extension's owner as the user.  The caller appends its settings.
 */
void
shid_node_conninfo(StringInfo buf, const char *host, int port)
{
	const char *node_conninfo = GetConfigOption("citus.node_conninfo", true, false);

	initStringInfo(buf);
	if (node_conninfo != NULL)
		appendStringInfoString(buf, node_conninfo);
	shid_conninfo_add(buf, "host", host);
	appendStringInfo(buf, " port = %d", port);
	shid_conninfo_add(buf, "dbname", get_database_name(MyDatabaseId));
	shid_conninfo_add(buf, "user", GetUserNameFromId(shid_extension_owner(), false));
}

/* Append keyword = 'value' to a connection string, quoted as libpq reads it. */
void
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
 * The owner of the sharded_id extension of this database, the role that
 * asks the coordinator for windows (as Citus's own connections between
 * nodes log in as its extension's owner); the bootstrap superuser if there
 * is none.
 */
Oid
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
 * Connect to another node, interruptibly, giving up at deadline_us
 * (monotonic): as libpqsrv_connect, with an end.  An external FD is
 * reserved for the connection, released by libpqsrv_disconnect; NULL only if
 * libpq could not allocate one.  The caller checks PQstatus: a connection
 * still in progress at the deadline is not CONNECTION_OK.
 */
PGconn *
shid_remote_connect(const char *conninfo, int64 deadline_us)
{
	PGconn	   *conn;

	if (!AcquireExternalFD())
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not establish connection"),
				 errdetail("There are too many open files on the local server."),
				 errhint("Raise the server's \"max_files_per_process\" and/or \"ulimit -n\" limits.")));
	conn = PQconnectStart(conninfo);
	if (conn == NULL)
	{
		ReleaseExternalFD();
		return NULL;
	}
	if (PQstatus(conn) == CONNECTION_BAD)
		return conn;
	PG_TRY();
	{
		PostgresPollingStatusType status = PGRES_POLLING_WRITING;

		while (status != PGRES_POLLING_OK && status != PGRES_POLLING_FAILED)
		{
			int64		left_ms = (deadline_us - shid_monotonic_us()) / 1000;
			int			io_flag = status == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
			int			rc;

			if (left_ms <= 0)
				break;
			rc = WaitLatchOrSocket(MyLatch, WL_EXIT_ON_PM_DEATH | WL_LATCH_SET | WL_TIMEOUT | io_flag,
								   PQsocket(conn), (long) left_ms, PG_WAIT_EXTENSION);
			if (rc & WL_LATCH_SET)
			{
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
			if (rc & io_flag)
				status = PQconnectPoll(conn);
		}
	}
	PG_CATCH();
	{
		ReleaseExternalFD();
		PQfinish(conn);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return conn;
}

/*
 * PQexecParams on another node, interruptibly, giving up at deadline_us
 * (monotonic; *timed_out): the last result, or NULL where the query could
 * not be sent, the connection broke, or the deadline passed.
 */
PGresult *
shid_remote_exec(PGconn *conn, const char *sql, int n, const char *const *params,
				int64 deadline_us, bool *timed_out)
{
	PGresult   *volatile last = NULL;

	*timed_out = false;
	if (!PQsendQueryParams(conn, sql, n, NULL, params, NULL, NULL, 0))
		return NULL;
	PG_TRY();
	{
		for (;;)
		{
			PGresult   *res;

			while (PQisBusy(conn))
			{
				int64		left_ms = (deadline_us - shid_monotonic_us()) / 1000;
				int			rc;

				if (left_ms <= 0)
				{
					*timed_out = true;
					break;
				}
				rc = WaitLatchOrSocket(MyLatch, WL_EXIT_ON_PM_DEATH | WL_LATCH_SET | WL_TIMEOUT | WL_SOCKET_READABLE,
									   PQsocket(conn), (long) left_ms, PG_WAIT_EXTENSION);
				if (rc & WL_LATCH_SET)
				{
					ResetLatch(MyLatch);
					CHECK_FOR_INTERRUPTS();
				}
				if (PQconsumeInput(conn) == 0)
					break;
			}
			if (*timed_out)
			{
				PQclear(last);
				last = NULL;
				break;
			}
			res = PQgetResult(conn);
			if (res == NULL)
				break;
			PQclear(last);
			last = res;
			if (PQstatus(conn) == CONNECTION_BAD)
				break;
		}
	}
	PG_CATCH();
	{
		PQclear(last);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return last;
}
