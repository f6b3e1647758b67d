/*-------------------------------------------------------------------------
 *
 * src/citus_learn.c
 *	  What a Citus coordinator learns from the nodes before it grants a
 *	  shard window: after it started, was promoted, or reset its ceiling,
 *	  its own memory of the windows it granted may be gone (a restart) or
 *	  behind (an asynchronous standby that missed WAL).  The nodes hold the
 *	  truth: every id a node minted lies under its own durable ceiling,
 *	  every window it holds is in its slots, and it keeps how far the
 *	  coordinator's own windows may reach.  Also the node's side of it:
 *	  citus_window_high_water() and shid_citus_note_coordinator.  Design:
 *	  doc/sharded_id-design.md, "Citus".
 *
 * Locks: AccessShareLock on pg_dist_node (SPI); on a node, the slot
 * table's lock, shared, and each slot's spinlock in turn, then the Citus
 * state's spinlock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "ceiling.h"
#include "citus.h"
#include "citus_int.h"
#include "citus_conn.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "layout.h"
#include "libpq/libpq-be-fe-helpers.h"
#include "miscadmin.h"
#include "privs.h"
#include "slots.h"
#include "utils/builtins.h"

/* A bound of the coordinator's own windows a node accepts: within a year. */
#define SHID_MS_PER_YEAR		(INT64CONST(366) * 24 * 3600 * 1000)

/* How long the coordinator waits for all the nodes' answers together. */
#define SHID_LEARN_MS			3000

/* What one node answered, or why it did not. */
typedef struct ShidNodeReport
{
	bool		ok;
	int64		high_water;		/* its ceiling and the windows it holds */
	int64		clock_ms;		/* its clock when it answered */
	int64		coordinator_until;	/* where the windows of the
									 * coordinators before may reach */
	char	   *error;			/* else: why not */
} ShidNodeReport;

/*
 * Ask the node at host:port for its high water and clock, giving up at
 * deadline_us (monotonic), telling it how far this server's own windows
 * may reach (params: own_until and this server's name for itself, as
 * citus_window_high_water takes them).  Never raises for the node's own
 * failure: that is in the report.
 */
static void
shid_ask_node(const char *host, int port, const char *const *params, int64 deadline_us,
			  ShidNodeReport *report)
{
	StringInfoData conninfo;
	PGconn	   *conn;
	PGresult   *volatile res = NULL;
	bool		timed_out = false;

	memset(report, 0, sizeof(*report));
	shid_node_conninfo(&conninfo, host, port);
	appendStringInfoString(&conninfo, " connect_timeout = 2 application_name = sharded_id_learn"
						   " options = '-c statement_timeout=2000 -c role=none'");
	conn = shid_remote_connect(conninfo.data, deadline_us);
	if (conn == NULL)
	{
		report->error = pstrdup("out of memory");
		return;
	}
	PG_TRY();
	{
		if (PQstatus(conn) != CONNECTION_OK)
			report->error = PQstatus(conn) == CONNECTION_BAD ? pstrdup(PQerrorMessage(conn)) :
				pstrdup("it did not complete the connection in time");
		else
		{
			res = shid_remote_exec(conn, "SELECT high_water, clock_ms, coordinator_until"
								   " FROM sharded_id.citus_window_high_water($1::bigint, $2)",
								   2, params, deadline_us, &timed_out);
			if (timed_out)
				report->error = pstrdup("it did not answer in time");
			else if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
					 PQgetisnull(res, 0, 0) || PQgetisnull(res, 0, 1) || PQgetisnull(res, 0, 2))
				report->error = pstrdup(res != NULL && PQresultErrorMessage(res)[0] != '\0' ?
										PQresultErrorMessage(res) : PQerrorMessage(conn));
			else
			{
				report->ok = true;
				report->high_water = pg_strtoint64(PQgetvalue(res, 0, 0));
				report->clock_ms = pg_strtoint64(PQgetvalue(res, 0, 1));
				report->coordinator_until = pg_strtoint64(PQgetvalue(res, 0, 2));
			}
		}
	}
	PG_FINALLY();
	{
		PQclear(res);
		libpqsrv_disconnect(conn);
	}
	PG_END_TRY();
	/* libpq's messages end in a newline: one line in the detail. */
	if (report->error != NULL)
	{
		size_t		len = strlen(report->error);

		while (len > 0 && (report->error[len - 1] == '\n' || report->error[len - 1] == ' '))
			report->error[--len] = '\0';
	}
}

/*
 * This server as a coordinator names itself to the nodes that it asks
 * (citus_window_high_water): its system identifier, which a standby
 * shares, and when its shared memory was made, which a restart, a
 * re-initialisation after a crash and a standby promoted change.
 */
static void
shid_learner_name(char *buf, size_t size)
{
	snprintf(buf, size, UINT64_FORMAT "/" INT64_FORMAT, GetSystemIdentifier(),
			 (int64) shid_citus_shared->started);
}

/*
 * On the coordinator: the time before which no window may be granted, as
 * the nodes report it.  Each primary node of pg_dist_node but this one is
 * asked for the newest millisecond it minted or holds a window of
 * (citus_window_high_water), and where the windows that the coordinators
 * before this one granted themselves may reach, as they told it; the
 * floor lies after each, and a second and a window (window_ms) after each
 * node's clock.  Each node is told own_until, how far this server's own
 * windows may reach (shid_grant_own_until), for the coordinator after it.
 * *max_clock is the latest clock a node answered with (0: none).  An active node that does not answer stops every grant
 * (55000, naming it): its windows are not known.  An inactive one is asked
 * too, and counts if it answers.
 *
 * Locks: AccessShareLock on pg_dist_node.
 */
int64
shid_citus_learn_floor(int window_ms, int64 own_until, int64 *max_clock)
{
	static const char *sql =
		"SELECT n.nodename, n.nodeport, n.groupid, n.isactive FROM pg_catalog.pg_dist_node n"
		" WHERE n.noderole::pg_catalog.text OPERATOR(pg_catalog.=) 'primary'"
		" AND n.groupid OPERATOR(pg_catalog.<>) 0 ORDER BY n.groupid";
	int64		deadline_us = shid_monotonic_us() + SHID_LEARN_MS * INT64CONST(1000);
	int64		floor_ms = 0;
	MemoryContext caller = CurrentMemoryContext;
	int			n;
	char	  **hosts;
	int		   *ports;
	int		   *groups;
	bool	   *active;
	char		until_text[32];
	char		learner[64];
	const char *params[2] = {until_text, learner};

	snprintf(until_text, sizeof(until_text), INT64_FORMAT, own_until);
	shid_learner_name(learner, sizeof(learner));
	*max_clock = 0;
	SPI_connect();
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_dist_node");
	n = (int) SPI_processed;
	hosts = MemoryContextAllocZero(caller, sizeof(char *) * Max(n, 1));
	ports = MemoryContextAllocZero(caller, sizeof(int) * Max(n, 1));
	groups = MemoryContextAllocZero(caller, sizeof(int) * Max(n, 1));
	active = MemoryContextAllocZero(caller, sizeof(bool) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		char	   *name = SPI_getvalue(tuple, desc, 1);

		hosts[i] = name ? MemoryContextStrdup(caller, name) : NULL;
		ports[i] = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
		groups[i] = DatumGetInt32(SPI_getbinval(tuple, desc, 3, &isnull));
		active[i] = DatumGetBool(SPI_getbinval(tuple, desc, 4, &isnull));
	}
	SPI_finish();

	for (int i = 0; i < n; i++)
	{
		ShidNodeReport report;

		if (hosts[i] == NULL)
			continue;
		shid_ask_node(hosts[i], ports[i], params, deadline_us, &report);
		if (report.ok)
		{
			floor_ms = Max(floor_ms, report.high_water);
			floor_ms = Max(floor_ms, report.coordinator_until);
			floor_ms = Max(floor_ms, report.clock_ms + SHID_WINDOW_AHEAD_MS + window_ms);
			*max_clock = Max(*max_clock, report.clock_ms);
		}
		else if (active[i])
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the Citus coordinator grants no shard window until node %s:%d (group %d) reports the windows it holds",
							hosts[i], ports[i], groups[i]),
					 errdetail("After it starts, is promoted or resets its ceiling, the coordinator asks every active node for the newest millisecond it minted in, so that it grants none of them again; that node did not answer: %s",
							   report.error),
					 errhint("Bring the node back, make sure it runs sharded_id 2.1 or later, or, if it is gone for good, disable it with citus_disable_node.")));
	}
	return floor_ms;
}

/*
 * Raise *arg (an int64) past the slot's millisecond and every window it
 * holds (shid_slots_visit).  Slot's spinlock held.
 */
static bool
shid_window_high_water(ShidSlot *slot, void *arg)
{
	int64	   *high = arg;

	*high = Max(*high, Max(slot->ms + 1, Max(slot->win.end, slot->win.next_end)));
	return true;
}

/*
 * On a node: an answer of the coordinator said that the windows it grants
 * itself from now on end before own_until plus the time since (its
 * clock runs on).  Kept as the latest such bound less the monotonic ms,
 * for the coordinator's successor (citus_window_high_water).
 *
 * Locks: the Citus state's spinlock.
 */
void
shid_citus_note_coordinator(int64 own_until)
{
	int64		until = own_until - shid_monotonic_ms();

	SpinLockAcquire(&shid_citus_shared->mutex);
	if (shid_citus_shared->own_until == 0 || until > shid_citus_shared->own_until)
		shid_citus_shared->own_until = until;
	SpinLockRelease(&shid_citus_shared->mutex);
}

/*
 * citus_window_high_water(learner_until bigint, learner text,
 *						   OUT high_water bigint, OUT clock_ms bigint,
 *						   OUT coordinator_until bigint)
 *
 * On a node of a Citus cluster, for the coordinator (citus_learn.c): the
 * newest Unix millisecond this server minted in or holds a shard window
 * of, plus one (its durable ceiling covers every id it minted); its clock;
 * and the Unix ms before which the windows that coordinators other than
 * learner granted themselves end, as their answers said (0: none said).
 * learner is the coordinator that asks, learner_until the bound of its own
 * windows, kept from now on with what it said before; the bound of another
 * coordinator, moved on to now, is kept as a time.  Superusers only
 * (42501), whatever the grants: what it keeps holds every later grant.
 * Refuses (22023) a bound below 0 or more than a year ahead of the clock,
 * and a learner's name of 64 bytes or more.
 *
 * Locks: the slot table's lock, shared; each slot's spinlock in turn; the
 * Citus state's spinlock.
 */
SHID_FUNCTION_INFO(shid_citus_window_high_water);
Datum
shid_citus_window_high_water(PG_FUNCTION_ARGS)
{
	int64		learner_until = PG_GETARG_INT64(0);
	char	   *learner = text_to_cstring(PG_GETARG_TEXT_PP(1));
	int64		now = shid_clock_ms();
	ShidCitusShared *cs = shid_citus_shared;
	TupleDesc	desc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};
	int64		high_water;
	int64		mono;
	int64		before;

	shid_require_superuser_internal("sharded_id.citus_window_high_water");
	if (learner_until < 0 || learner_until > now + SHID_MS_PER_YEAR || strlen(learner) >= sizeof(cs->learner))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("citus_window_high_water takes a bound within a year of this node's clock and a name under %d bytes",
						(int) sizeof(cs->learner)),
				 errdetail("It was given the bound " INT64_FORMAT " (Unix ms; the clock reads " INT64_FORMAT ") and a name of %d bytes.",
						   learner_until, now, (int) strlen(learner)),
				 errhint("Only the coordinator calls it, before its first grant.")));
	shid_require_shared_state();
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	high_water = (int64) pg_atomic_read_u64(&shid_ceiling->ceiling_ms);
	shid_slots_visit(shid_window_high_water, &high_water);

	mono = shid_monotonic_ms();
	SpinLockAcquire(&cs->mutex);
	if (strcmp(cs->learner, learner) != 0)
	{
		if (cs->own_until != 0)
			cs->own_before = Max(cs->own_before, cs->own_until + mono);
		strlcpy(cs->learner, learner, sizeof(cs->learner));
		cs->own_until = 0;
	}
	if (cs->own_until == 0 || learner_until - mono > cs->own_until)
		cs->own_until = learner_until - mono;
	before = cs->own_before;
	SpinLockRelease(&cs->mutex);

	values[0] = Int64GetDatum(high_water);
	values[1] = Int64GetDatum(now);
	values[2] = Int64GetDatum(before);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
