/*-------------------------------------------------------------------------
 *
 * src/citus_ask.c
 *	  Shard windows on Citus, the node's side: asking the coordinator for
 *	  the windows a node mints in.
 *
 * The design is in doc/sharded_id-design.md, "Citus".  A windowed claim
 * (generator.c) that finds its slot at or past slot->win.renew_at comes
 * here (shid_window_slow).  Past the middle of a window one backend renews it
 * while the others mint on; outside every window one backend per server
 * and shard asks and the others wait on the slot's condition variable.  A
 * failed ask backs off server-wide for the shard.
 *
 * This file owns:
 *	 - shid_window_slow, and the ask: the slot's one asker, the other
 *	   slots renewed in the same request (the renewal arrays), storing
 *	   what came back, the back-off and its error.
 *	 - The request: in-process on the coordinator (citus_grant.c), else
 *	   over libpq to the coordinator pg_dist_node names
 *	   (shid_window_grant_remote, shid_citus_addresses).
 *	 - The server's caps on open requests and on connections kept between
 *	   requests, the kept connection, closed at the end of its backend's
 *	   transaction (the xact callback).
 *	 - The exit callback that clears an asker's marks on a FATAL,
 *	   registered on the first slow path, before any mark.
 *
 * It calls citus.c and citus_grant.c; neither calls it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "ceiling.h"
#include "citus.h"
#include "citus_conn.h"
#include "citus_int.h"
#include "citus_slot.h"
#include "layout.h"
#include "libpq-fe.h"
#include "libpq/libpq-be-fe-helpers.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "reserve.h"
#include "slots.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

/* How long a failed ask stops every backend of the server asking again. */
#define SHID_WINDOW_BACKOFF_MS	1000

/* Longest a backend waits for a window that another backend asks for. */
#define SHID_WINDOW_WAIT_MS		15000

/*
 * This backend's connection to the coordinator (kept until its transaction
 * ends if shid_coord_keep allows), the connection string it was opened
 * with, and whether it holds one of the server's open requests and one of
 * its kept connections.
 */
static PGconn *shid_coord_conn = NULL;
static char *shid_coord_conninfo = NULL;
static bool shid_coord_permit = false;	/* one of the server's open requests */
static bool shid_coord_kept = false;	/* one of the server's kept connections */

static bool shid_coord_request_begin(uint32 max, int64 deadline_us);
static void shid_coord_permit_release(void);
static void shid_coord_kept_release(void);
static bool shid_xact_callback_registered = false;

/* The slot whose window this backend is asking for, for shid_window_exit. */
static ShidSlot *shid_asking_slot = NULL;

/*
 * The shards a worker minted in the last minute are renewed with any
 * request, lapsed windows too: its first id of such a shard costs no
 * request of its own.
 */
#define SHID_RENEW_RECENT_MS	60000

/* Those slots, marked as asked for by this backend, and what came back. */
static ShidSlot *shid_renewing[SHID_WINDOW_BATCH];
static int64 shid_renew_min[SHID_WINDOW_BATCH];
static ShidGrant shid_renewed[SHID_WINDOW_BATCH];
static int	shid_renewing_n = 0;
static bool shid_exit_registered = false;

/* What a grant answered, or why there was none. */
typedef struct ShidWindowAnswer
{
	bool		ok;				/* a window, or a time to come back */
	ShidGrant	win;			/* the window; end 0: come back ... */
	int32		retry_after;	/* ... in this many ms */
	char		sqlstate[6];
	char	   *message;
	char	   *detail;
	char	   *hint;
} ShidWindowAnswer;

/*
 * Take one of the max requests for windows this server may have open at
 * the coordinator at once, waiting, interruptibly, until deadline_us
 * (monotonic) at most; false if none came free.
 */
static bool
shid_coord_request_begin(uint32 max, int64 deadline_us)
{
	for (;;)
	{
		uint32		n = pg_atomic_read_u32(&shid_citus_shared->requests);
		int64		left_ms;

		if (n < max)
		{
			if (pg_atomic_compare_exchange_u32(&shid_citus_shared->requests, &n, n + 1))
				break;
			continue;
		}
		left_ms = (deadline_us - shid_monotonic_us()) / 1000;
		if (left_ms <= 0)
		{
			ConditionVariableCancelSleep();
			return false;
		}
		/* At most 100 ms at a time: a wake-up may come before the sleep. */
		(void) ConditionVariableTimedSleep(&shid_citus_shared->requests_cv, Min(left_ms, 100),
										   PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return true;
}

/* Give back a request taken with shid_coord_request_begin. */
static void
shid_coord_request_end(void)
{
	pg_atomic_fetch_sub_u32(&shid_citus_shared->requests, 1);
	ConditionVariableSignal(&shid_citus_shared->requests_cv);
}

/*
 * At the exit of a backend that was asking for a window (a FATAL in the
 * middle): clear its mark and wake the backends waiting for it.  No
 * back-off: the exit is this backend's own (a role may terminate its own
 * backends), not a failure the coordinator answered.
 */
static void
shid_window_exit(int code, Datum arg)
{
	ShidSlot   *slot = shid_asking_slot;

	shid_asking_slot = NULL;
	/* The server's open request and kept connection this backend held. */
	shid_coord_permit_release();
	shid_coord_kept_release();
	for (int i = -1; i < shid_renewing_n; i++)
	{
		ShidSlot   *s = i < 0 ? slot : shid_renewing[i];

		if (s == NULL)
			continue;
		SpinLockAcquire(&s->mutex);
		if (s->win.asker == MyProcPid)
			s->win.asker = 0;
		SpinLockRelease(&s->mutex);
		ConditionVariableBroadcast(&s->win_cv);
	}
	shid_renewing_n = 0;
}

/*
 * How long a node waits for the coordinator: to connect, and for the
 * answer to a request (the coordinator's statement_timeout, 5 s, and a
 * second more).  libpq's connect_timeout binds only its blocking connect,
 * and the backend helpers' waits have no end, so these are kept here.
 */
#define SHID_COORD_CONNECT_MS	2000
#define SHID_COORD_ANSWER_MS	6000

/*
 * Requests for windows a server has open at the coordinator at most, and
 * connections to it kept between requests.
 */
#define SHID_COORD_MAX_REQUESTS	8
#define SHID_COORD_MAX_KEPT		8

/* Close the connection to the coordinator, if any. */
static void
shid_coord_close(void)
{
	PGconn	   *conn = shid_coord_conn;

	shid_coord_conn = NULL;
	if (shid_coord_conninfo != NULL)
	{
		pfree(shid_coord_conninfo);
		shid_coord_conninfo = NULL;
	}
	libpqsrv_disconnect(conn);
	shid_coord_kept_release();
}

/* Give back this backend's kept connection of the server's, if it has one. */
static void
shid_coord_kept_release(void)
{
	if (shid_coord_kept)
	{
		shid_coord_kept = false;
		pg_atomic_fetch_sub_u32(&shid_citus_shared->kept, 1);
	}
}

/* Give back this backend's open request, if it holds one. */
static void
shid_coord_permit_release(void)
{
	if (shid_coord_permit)
	{
		shid_coord_permit = false;
		shid_coord_request_end();
	}
}

/*
 * May this backend keep its connection to the coordinator after a request?
 * Yes if it keeps one already, or if fewer than SHID_COORD_MAX_KEPT are kept
 * on this server: a worker minting many shards reuses its connection, and
 * sessions left idle in a transaction hold no more than that many (which
 * the coordinator ends after a second idle).
 */
static bool
shid_coord_keep(void)
{
	uint32		n;

	if (shid_coord_kept)
		return true;
	n = pg_atomic_read_u32(&shid_citus_shared->kept);
	while (n < SHID_COORD_MAX_KEPT)
	{
		if (pg_atomic_compare_exchange_u32(&shid_citus_shared->kept, &n, n + 1))
		{
			shid_coord_kept = true;
			return true;
		}
	}
	return false;
}

/* At the end of every transaction: close the connection to the coordinator. */
static void
shid_citus_xact_callback(XactEvent event, void *arg)
{
	if (shid_coord_conn != NULL)
		shid_coord_close();
	shid_coord_permit_release();
}

/* An answer that says why there is no window. */
static void
shid_answer_failed(ShidWindowAnswer *answer, const char *sqlstate, char *message,
				   char *detail, char *hint)
{
	answer->ok = false;
	strlcpy(answer->sqlstate, sqlstate, sizeof(answer->sqlstate));
	answer->message = message;
	answer->detail = detail;
	answer->hint = hint;
}

/*
 * What a request to the coordinator sends: the connection string and the
 * parameters of citus_grant_windows, with the texts they point to.
 */
typedef struct ShidCoordRequest
{
	StringInfoData conninfo;
	const char *label;			/* the coordinator's host:port */
	StringInfoData shard_text;
	StringInfoData min_text;
	char		group_text[16];
	char		port_text[16];
	char		stripes_text[16];
	char		stripe_text[16];
	char		clock_text[32];
	const char *params[10];
	bool		with_clock;		/* not 2.0's form: the node's clock is sent */
	int			capacity;		/* the values of a slot's millisecond */
} ShidCoordRequest;

/*
 * Build the request for a window of the shard, and of the first extras
 * slots of shid_renewing (their ends set to 0: none yet).  False, with the
 * answer saying why, if pg_dist_node names no coordinator or no primary of
 * this node's group.
 *
 * Locks: AccessShareLock on pg_dist_node and pg_extension.
 */
static bool
shid_coord_request_build(ShidCoordRequest *req, const ShidLayout *layout, int32 shard,
						 int64 min_start, int extras, ShidWindowAnswer *answer)
{
	char	   *coord_host = NULL;
	char	   *own_name = NULL;
	int			coord_port = 0;
	int			own_port = 0;

	req->with_clock = !shid_extension_at_2_0();
	req->capacity = (int) (shid_seq_capacity(layout) >> shid_stripe_bits);
	if (!shid_citus_addresses(shid_citus_group, &coord_host, &coord_port, &own_name, &own_port))
	{
		shid_answer_failed(answer, "55000",
						   psprintf("pg_dist_node names no coordinator or no primary of group %d", shid_citus_group),
						   pstrdup("A Citus node asks the coordinator, which pg_dist_node names as the primary of group 0, for the windows its ids are minted in."),
						   pstrdup("Run citus_set_coordinator_host on the coordinator, and add the node with citus_add_node."));
		return false;
	}

	req->label = psprintf("%s:%d", coord_host, coord_port);
	shid_node_conninfo(&req->conninfo, coord_host, coord_port);

	/*
	 * The session's settings come with it, above what the coordinator
	 * database's owner may set for it (ALTER DATABASE SET): no role of
	 * theirs, not read-only, and a grant that waits for synchronous
	 * standbys where there are some.
	 */
	appendStringInfoString(&req->conninfo, " connect_timeout = 2 application_name = sharded_id_window"
						   " options = '-c statement_timeout=5000 -c lock_timeout=2000 -c idle_session_timeout=1000"
						   " -c role=none -c default_transaction_read_only=off -c synchronous_commit=on'");

	/* The shard asked for first, then the others renewed with it. */
	initStringInfo(&req->shard_text);
	initStringInfo(&req->min_text);
	appendStringInfo(&req->shard_text, "{%d", shard);
	appendStringInfo(&req->min_text, "{" INT64_FORMAT, min_start);
	for (int i = 0; i < extras; i++)
	{
		appendStringInfo(&req->shard_text, ",%d", shid_renewing[i]->key.shard);
		appendStringInfo(&req->min_text, "," INT64_FORMAT, shid_renew_min[i]);
		shid_renewed[i].end = 0;
	}
	appendStringInfoChar(&req->shard_text, '}');
	appendStringInfoChar(&req->min_text, '}');
	snprintf(req->group_text, sizeof(req->group_text), "%d", shid_citus_group);
	snprintf(req->port_text, sizeof(req->port_text), "%d", own_port);
	snprintf(req->stripes_text, sizeof(req->stripes_text), "%d", shid_stripes);
	snprintf(req->stripe_text, sizeof(req->stripe_text), "%d", shid_stripe);
	req->params[0] = req->shard_text.data;
	req->params[1] = layout->name;
	req->params[2] = req->group_text;
	req->params[3] = own_name;
	req->params[4] = req->port_text;
	req->params[5] = req->min_text.data;
	req->params[6] = req->stripes_text;
	req->params[7] = req->stripe_text;
	req->params[8] = shid_slot_reserved(shard, layout) ? "true" : "false";
	/* The clock, read again just before each call; 2.0's form has none. */
	req->params[9] = req->clock_text;
	return true;
}

/*
 * Call citus_grant_windows over this backend's connection to the
 * coordinator, opened first if there is none.  A kept connection that
 * broke (the coordinator restarted, or ended it after a second idle) is
 * opened again once.  Returns the result, or NULL; *timed_out if no
 * answer came by deadline_us.  No connection after it (shid_coord_conn
 * NULL or not CONNECTION_OK): it could not connect.
 */
static PGresult *
shid_coord_exec(ShidCoordRequest *req, int64 deadline_us, bool *timed_out)
{
	PGresult   *res = NULL;
	bool		kept = shid_coord_conn != NULL;

	for (int attempt = 0; attempt < 2; attempt++)
	{
		if (shid_coord_conn == NULL)
		{
			shid_coord_conn = shid_remote_connect(req->conninfo.data,
												 Min(deadline_us, shid_monotonic_us() + SHID_COORD_CONNECT_MS * INT64CONST(1000)));
			shid_coord_conninfo = MemoryContextStrdup(TopMemoryContext, req->conninfo.data);
			kept = false;
		}
		if (shid_coord_conn == NULL || PQstatus(shid_coord_conn) != CONNECTION_OK)
			break;
		snprintf(req->clock_text, sizeof(req->clock_text), INT64_FORMAT, shid_clock_ms());
		res = shid_remote_exec(shid_coord_conn, req->with_clock ?
							   "SELECT shard_id, window_start, window_end, retry_after, lane, lanes, own_until FROM sharded_id.citus_grant_windows"
							   "($1::integer[], $2, $3::integer, $4, $5::integer, $6::bigint[], $7::integer, $8::integer, $9::boolean, $10::bigint)" :
							   "SELECT shard_id, window_start, window_end, retry_after FROM sharded_id.citus_grant_windows"
							   "($1::integer[], $2, $3::integer, $4, $5::integer, $6::bigint[], $7::integer, $8::integer, $9::boolean)",
							   req->with_clock ? 10 : 9, req->params, deadline_us, timed_out);
		/* A kept connection that broke (the coordinator ended it idle): once more, anew. */
		if (!*timed_out && kept && PQstatus(shid_coord_conn) == CONNECTION_BAD)
		{
			PQclear(res);
			res = NULL;
			shid_coord_close();
			continue;
		}
		break;
	}
	return res;
}

/*
 * The window of row i of the coordinator's answer into *grant: its start,
 * end and lane (2.0's form has no lane columns: every value, lane 0 of 1).
 * False if the row grants none, or its lane is not one of a power of two
 * lanes, at most one per value of capacity (a coordinator that disagrees).
 */
static bool
shid_coord_read_window(PGresult *res, int i, int capacity, ShidGrant *grant)
{
	int32		lane = 0;
	int32		lanes = 1;

	if (PQgetisnull(res, i, 1) || PQgetisnull(res, i, 2))
		return false;
	if (PQnfields(res) == 7)
	{
		if (PQgetisnull(res, i, 4) || PQgetisnull(res, i, 5))
			return false;
		lane = pg_strtoint32(PQgetvalue(res, i, 4));
		lanes = pg_strtoint32(PQgetvalue(res, i, 5));
	}
	if (lanes < 1 || lanes > Min(1 << SHID_MAX_LANE_BITS, capacity) || (lanes & (lanes - 1)) != 0 ||
		lane < 0 || lane >= lanes)
		return false;
	grant->start = pg_strtoint64(PQgetvalue(res, i, 1));
	grant->end = pg_strtoint64(PQgetvalue(res, i, 2));
	grant->lane = (int16) lane;
	grant->lane_bits = (int16) pg_leftmost_one_pos32((uint32) lanes);
	return true;
}

/*
 * Read the coordinator's answer to a request for the shard and the first
 * extras slots of shid_renewing: one row per shard asked for, in their
 * order, into the answer and shid_renewed; or its error.
 */
static void
shid_coord_read_answer(PGresult *res, int32 shard, int extras, const ShidCoordRequest *req,
					   ShidWindowAnswer *answer)
{
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 + extras &&
		PQnfields(res) == (req->with_clock ? 7 : 4) && !PQgetisnull(res, 0, 0) &&
		pg_strtoint32(PQgetvalue(res, 0, 0)) == shard)
	{
		answer->ok = true;
		/* For the coordinator after this one: how far its own windows reach. */
		if (req->with_clock && !PQgetisnull(res, 0, 6))
			shid_citus_note_coordinator(pg_strtoint64(PQgetvalue(res, 0, 6)));
		if (!shid_coord_read_window(res, 0, req->capacity, &answer->win))
		{
			answer->win.end = 0;
			answer->retry_after = PQgetisnull(res, 0, 3) ? 100 : pg_strtoint32(PQgetvalue(res, 0, 3));
			if (!PQgetisnull(res, 0, 1) && !PQgetisnull(res, 0, 2))
				shid_answer_failed(answer, "55000",
								   psprintf("the Citus coordinator %s granted shard %d a lane this node cannot mint in",
											req->label, shard),
								   psprintf("A window holds one of a power of two lanes of its milliseconds' values, at most %d here; the answer was lane %s of %s.",
											Min(1 << SHID_MAX_LANE_BITS, req->capacity),
											PQnfields(res) == 7 && !PQgetisnull(res, 0, 4) ? PQgetvalue(res, 0, 4) : "?",
											PQnfields(res) == 7 && !PQgetisnull(res, 0, 5) ? PQgetvalue(res, 0, 5) : "?"),
								   pstrdup("Install the same sharded_id library, with the same sharded_id.stripes, on every node of the cluster, and restart them."));
		}
		for (int i = 0; i < extras; i++)
		{
			if (PQgetisnull(res, i + 1, 0) ||
				pg_strtoint32(PQgetvalue(res, i + 1, 0)) != shid_renewing[i]->key.shard ||
				!shid_coord_read_window(res, i + 1, req->capacity, &shid_renewed[i]))
				shid_renewed[i].end = 0;
		}
	}
	else
	{
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
		const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);

		shid_answer_failed(answer, state && strlen(state) == 5 ? state : "XX000",
						   pstrdup(msg ? msg : PQerrorMessage(shid_coord_conn)),
						   detail ? pstrdup(detail) : NULL,
						   hint ? pstrdup(hint) : NULL);
	}
}

/*
 * Make the request, holding one of the server's open requests, and read
 * its answer; or say why there was none: no answer in time, or no
 * connection.
 */
static void
shid_coord_call(ShidCoordRequest *req, int32 shard, int extras, int64 deadline_us,
				ShidWindowAnswer *answer)
{
	bool		timed_out = false;
	PGresult   *res = shid_coord_exec(req, deadline_us, &timed_out);

	if (timed_out)
		shid_answer_failed(answer, "08006",
						   psprintf("the Citus coordinator %s did not answer within %d s", req->label,
									SHID_COORD_ANSWER_MS / 1000),
						   pstrdup("A Citus node waits that long for the windows its ids are minted in; the coordinator's own statement timeout is 5 s."),
						   pstrdup("Check that the coordinator is up and reachable, and not stopped or overloaded."));
	else if (shid_coord_conn == NULL || PQstatus(shid_coord_conn) != CONNECTION_OK)
	{
		shid_answer_failed(answer, "08001",
						   psprintf("could not connect to the Citus coordinator %s", req->label),
						   pstrdup(shid_coord_conn == NULL ? "out of memory" :
								   PQstatus(shid_coord_conn) != CONNECTION_BAD ?
								   psprintf("It did not complete the connection within %d s.", SHID_COORD_CONNECT_MS / 1000) :
								   PQerrorMessage(shid_coord_conn)),
						   pstrdup("A Citus node asks the coordinator for the windows its ids are minted in, as the owner of the sharded_id extension, as Citus's own connections between nodes log in (citus.node_conninfo, a password file)."));
		PQclear(res);
	}
	else
	{
		shid_coord_read_answer(res, shard, extras, req, answer);
		PQclear(res);
	}
}

/*
 * Ask the coordinator for a window of the shard, and of the first extras
 * slots of shid_renewing (their answers into shid_renewed,
 * end 0: none), over a connection of this backend's own (libpq's
 * non-blocking calls, with latch waits and deadlines: a cancel or a
 * termination interrupts them), kept for the rest of the transaction if
 * shid_coord_keep allows, else closed after the request, and closed at once
 * after any failure or error, so that no call is left half done on it.  A
 * kept connection that broke is opened again once (shid_coord_exec).
 * Never errors but on an interrupt or a lack of file descriptors: the
 * answer says what failed.
 *
 * Locks: AccessShareLock on pg_dist_node and pg_extension; one of the
 * server's open requests (shid_coord_request_begin).
 */
static void
shid_window_grant_remote(const ShidLayout *layout, int32 shard, int64 min_start,
						 int extras, ShidWindowAnswer *answer)
{
	ShidCoordRequest req;

	if (!shid_coord_request_build(&req, layout, shard, min_start, extras, answer))
		return;
	if (!shid_xact_callback_registered)
	{
		RegisterXactCallback(shid_citus_xact_callback, NULL);
		shid_xact_callback_registered = true;
	}
	/*
	 * At most SHID_COORD_MAX_REQUESTS requests are open at once on this
	 * server, and SHID_COORD_MAX_KEPT connections kept between requests:
	 * roles that are not superusers here cannot hold the extension owner's
	 * connections to the coordinator, idle or busy, beyond that.  A kept
	 * connection to another address, or broken, is closed first.
	 */
	if (shid_coord_conn != NULL &&
		(strcmp(shid_coord_conninfo, req.conninfo.data) != 0 || PQstatus(shid_coord_conn) != CONNECTION_OK ||
		 PQtransactionStatus(shid_coord_conn) != PQTRANS_IDLE))
		shid_coord_close();
	PG_TRY();
	{
		int64		answer_deadline = shid_monotonic_us() + SHID_COORD_ANSWER_MS * INT64CONST(1000);

		if (!shid_coord_request_begin(SHID_COORD_MAX_REQUESTS, answer_deadline))
			shid_answer_failed(answer, "53300",
							   psprintf("%d requests for shard windows are open at the Citus coordinator %s already",
										SHID_COORD_MAX_REQUESTS, req.label),
							   psprintf("A Citus node has at most %d requests open at the coordinator at once, and none ended within %d s.",
										SHID_COORD_MAX_REQUESTS, SHID_COORD_ANSWER_MS / 1000),
							   pstrdup("Check that the coordinator answers, and not slowly: a synchronous standby that does not confirm holds every grant."));
		else
		{
			shid_coord_permit = true;
			shid_coord_call(&req, shard, extras, answer_deadline, answer);
			shid_coord_permit_release();
		}
		/* Kept only after a call that answered, and within the cap. */
		if (!answer->ok || !shid_coord_keep())
			shid_coord_close();
	}
	PG_CATCH();
	{
		shid_coord_close();
		shid_coord_permit_release();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * Get a window of the slot's shard that starts at min_start or later: from
 * this server if it is the coordinator, else over libpq.  While the
 * coordinator says to come back (the window would start more than
 * SHID_WINDOW_AHEAD_MS ahead of its clock), wait and ask again, for twice
 * that at most.
 */
static void
shid_window_request(ShidSlot *slot, int64 min_start, ShidWindowAnswer *answer)
{
	const ShidLayout *layout = shid_layout_by_key(slot->key.layout_key);
	int			extras = shid_renewing_n;
	int64		deadline_us = shid_monotonic_us() + 2 * SHID_WINDOW_AHEAD_MS * INT64CONST(1000);

	for (;;)
	{
		memset(answer, 0, sizeof(*answer));
		if (shid_citus_group == 0)
		{
			int32		retry_after = 0;

			answer->ok = true;
			if (!shid_window_grant(slot, layout, min_start, SHID_CLOCK_OWN, true, &answer->win,
								   &retry_after))
				answer->retry_after = retry_after;
		}
		else
		{
			shid_window_grant_remote(layout, slot->key.shard, min_start, extras, answer);
			extras = 0;
		}
		if (!answer->ok)
			return;
		if (answer->win.end > 0)
		{
			int64		now = shid_clock_ms();

			if (answer->win.end > now)
				return;

			/*
			 * This node's clock passed the window already: it runs ahead of
			 * the coordinator's.  Ask again from this clock on, within the
			 * same deadline, rather than mint outside the window and ask
			 * anew without end.
			 */
			min_start = Max(min_start, now);
			answer->retry_after = 0;
		}
		if (shid_monotonic_us() > deadline_us)
		{
			shid_answer_failed(answer, "55000",
							   psprintf("no window of shard %d is granted within %d ms of this node's clock",
										slot->key.shard, SHID_WINDOW_AHEAD_MS),
							   psprintf("Ids of shard %d may not be minted more than %d ms ahead of the clock of the node that mints them, and no window within that reach is free: the windows granted run that far ahead (this node's clock runs more than a second behind nodes that minted the shard before it, or before the coordinator started; the shard is minted faster than the layout's ids per millisecond; or this node's clock was set back), or nodes of four other clocks, each a second apart, hold every line of time of the shard.",
										slot->key.shard, SHID_WINDOW_AHEAD_MS),
							   pstrdup("Synchronise the clocks of the cluster's nodes, or spread the shard's writes over time; the shard mints again here once this node's clock reaches the windows granted."));
			return;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(1, Min(answer->retry_after, 100)), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* The error of a node that may not mint, in the coordinator's words. */
static SHID_NORETURN void
shid_window_refused(const char *sqlstate, const char *message, const char *detail,
					const char *hint)
{
	ereport(ERROR,
			(errcode(MAKE_SQLSTATE(sqlstate[0], sqlstate[1], sqlstate[2],
								   sqlstate[3], sqlstate[4])),
			 errmsg("this Citus node may not mint: %s", message),
			 detail ? errdetail_internal("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

/* The error of a caller that finds the shard's back-off: the last failure. */
static SHID_NORETURN void
shid_window_backed_off(int32 shard)
{
	ShidCitusShared copy;

	SpinLockAcquire(&shid_citus_shared->mutex);
	memcpy(&copy, shid_citus_shared, sizeof(copy));
	SpinLockRelease(&shid_citus_shared->mutex);
	if (copy.failed_shard == shard && copy.message[0] != '\0')
		shid_window_refused(copy.sqlstate, copy.message,
							copy.detail[0] ? copy.detail : NULL,
							copy.hint[0] ? copy.hint : NULL);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("this Citus node has no window to mint shard %d in", shard),
			 errdetail("Its last request for one failed less than %d ms ago, and this server asks again only after that.",
					   SHID_WINDOW_BACKOFF_MS),
			 errhint("Try again.")));
	pg_unreachable();
}

/*
 * After an ask: store the window answered, or, after a failure (the
 * coordinator's refusal, or no connection to it), back off; after this
 * backend's own error (answer NULL) nothing is stored and nobody backs
 * off.  Clear the asker's mark and wake the waiters; the same, without a
 * back-off, for the slots renewed with it.
 *
 * Locks: each slot's spinlock in turn.
 */
static void
shid_window_asked(ShidSlot *slot, const ShidWindowAnswer *answer, uint32 members)
{
	int64		retry_us = shid_monotonic_us() + SHID_WINDOW_BACKOFF_MS * INT64CONST(1000);

	SpinLockAcquire(&slot->mutex);
	if (answer != NULL && answer->ok)
		shid_window_store_locked(slot, &answer->win);
	else if (answer != NULL && strcmp(answer->sqlstate, "53400") != 0 &&
			 strcmp(answer->sqlstate, "53300") != 0)
	{
		/*
		 * Only a failure answered backs off server-wide: the asker's own
		 * error (its statement timeout, a cancel) is its own, and must not
		 * stop other roles' backends minting the shard.  Nor does the
		 * coordinator's refusal of a slot beyond sharded_id.max_free_slots
		 * (53400): a caller that may have one from the whole table gets it;
		 * nor this server's cap on open requests (53300), which a role's
		 * own requests may fill.
		 */
		slot->win.retry_us = retry_us;
		slot->win.retry_members = members;
	}
	if (slot->win.asker == MyProcPid)
		slot->win.asker = 0;
	SpinLockRelease(&slot->mutex);
	shid_asking_slot = NULL;
	ConditionVariableBroadcast(&slot->win_cv);

	/* The others renewed in the same request: what came back, if anything. */
	for (int i = 0; i < shid_renewing_n; i++)
	{
		ShidSlot   *other = shid_renewing[i];

		SpinLockAcquire(&other->mutex);
		if (answer != NULL && answer->ok && shid_renewed[i].end > 0)
			shid_window_store_locked(other, &shid_renewed[i]);
		if (other->win.asker == MyProcPid)
			other->win.asker = 0;
		SpinLockRelease(&other->mutex);
		ConditionVariableBroadcast(&other->win_cv);
	}
	shid_renewing_n = 0;
}

/*
 * Which other slots a worker renews with its request (shid_slots_visit):
 * of the layout, but except, that held a window and minted at or after
 * since_ms, due for renewal by the clock now_ms, with no asker, no next
 * window and no back-off (monotonic mono_us).  Each is marked as asked for
 * by this backend, into shid_renewing, its minimum start into
 * shid_renew_min.  Slot's spinlock held.
 */
typedef struct ShidRenewPick
{
	uint64		layout_key;
	const ShidSlot *except;
	int64		now_ms;
	int64		since_ms;
	int64		mono_us;
} ShidRenewPick;

static bool
shid_renew_pick(ShidSlot *slot, void *arg)
{
	const ShidRenewPick *pick = arg;

	if (slot != pick->except && slot->key.layout_key == pick->layout_key &&
		slot->owner != SHID_OWNER_RETIRED && slot->win.asker == 0 && slot->win.next_end == 0 &&
		pick->mono_us >= slot->win.retry_us && slot->win.end != 0 &&
		slot->last_ms >= pick->since_ms && Max(slot->ms, pick->now_ms) >= slot->win.renew_at)
	{
		slot->win.asker = MyProcPid;
		shid_renewing[shid_renewing_n] = slot;
		/* From the end of a window that lasts: a frame's lane is not granted twice. */
		shid_renew_min[shid_renewing_n++] = Max(Max(slot->ms, pick->now_ms), slot->win.end);
	}
	return shid_renewing_n < SHID_WINDOW_BATCH;
}

/*
 * Ask for the slot's next window, as the slot's one asker (win.asker is
 * this backend), and store it.  On failure, back off; if the slot still
 * has a window (renewing), go on without, else raise the coordinator's
 * error.  The mark is cleared and waiters are woken in every case, an
 * error's too.  members: the node's membership (shid_citus_members), read
 * before the slot was marked, kept with a back-off.
 *
 * Locks: the slot's spinlock, never across the request.
 */
static void
shid_window_ask(ShidSlot *slot, int64 min_start, bool renewing, uint32 members)
{
	ShidWindowAnswer answer;

	memset(&answer, 0, sizeof(answer));
	shid_asking_slot = slot;
	shid_renewing_n = 0;
	/* A worker renews, with it, the other shards it mints now and then. */
	if (shid_citus_group != 0)
	{
		int64		now_ms = shid_clock_ms();

		ShidRenewPick pick = {slot->key.layout_key, slot, now_ms, now_ms - SHID_RENEW_RECENT_MS,
		shid_monotonic_us()};

		shid_slots_visit(shid_renew_pick, &pick);
	}
	PG_TRY();
	{
		shid_window_request(slot, min_start, &answer);
	}
	PG_CATCH();
	{
		shid_window_asked(slot, NULL, members);
		PG_RE_THROW();
	}
	PG_END_TRY();
	shid_window_asked(slot, &answer, members);

	if (!answer.ok)
	{
		SpinLockAcquire(&shid_citus_shared->mutex);
		shid_citus_shared->failed_shard = slot->key.shard;
		strlcpy(shid_citus_shared->sqlstate, answer.sqlstate, sizeof(shid_citus_shared->sqlstate));
		strlcpy(shid_citus_shared->message, answer.message ? answer.message : "", sizeof(shid_citus_shared->message));
		strlcpy(shid_citus_shared->detail, answer.detail ? answer.detail : "", sizeof(shid_citus_shared->detail));
		strlcpy(shid_citus_shared->hint, answer.hint ? answer.hint : "", sizeof(shid_citus_shared->hint));
		SpinLockRelease(&shid_citus_shared->mutex);
		if (!renewing)
			shid_window_refused(answer.sqlstate, answer.message ? answer.message : "no window",
								answer.detail, answer.hint);
		ereport(DEBUG1,
				(errmsg_internal("could not renew the window of shard %d: %s",
								 slot->key.shard, answer.message ? answer.message : "")));
	}
}

/*
 * Register shid_window_exit, once, before this backend first marks a slot
 * as its own (win.asker, the renewal arrays): a FATAL then clears the
 * marks.
 */
static void
shid_window_exit_register(void)
{
	if (!shid_exit_registered)
	{
		before_shmem_exit(shid_window_exit, (Datum) 0);
		shid_exit_registered = true;
	}
}

/*
 * The slow path of a windowed claim (generator.c): the slot's millisecond
 * lies at or past win.renew_at.  Returns once the caller may claim again:
 * the slot has a window that covers its millisecond (or it was moved to a
 * new window's start), or the window lasts and someone else renews it.
 * Errors if no window can be had.
 *
 * Locks: the slot's spinlock, never across a request or a wait.
 */
void
shid_window_slow(ShidSlot *slot)
{
	int64		started_us = shid_monotonic_us();
	bool		slept = false;

	shid_window_exit_register();
	for (;;)
	{
		int64		mono_us = shid_monotonic_us();
		int64		now_ms = shid_clock_ms();
		uint32		members;
		int64		min_start;
		bool		ask = false;
		bool		renewing = false;
		bool		wait = false;
		bool		failed = false;

		/*
		 * The membership a back-off is measured against, read before the
		 * slot is marked as this backend's (the scan may be interrupted):
		 * a worker's only; the coordinator's back-offs end by time alone.
		 */
		members = shid_citus_group != 0 ? shid_citus_members() : 0;
		SpinLockAcquire(&slot->mutex);
		shid_window_next_locked(slot);
		if (slot->ms < slot->win.renew_at)
			;					/* a window, renewed meanwhile: claim again */
		else if (slot->ms < slot->win.end && slot->ms >= slot->win.start)
		{
			/*
			 * Past the middle of a window that lasts: one backend renews it,
			 * unless one does already, the next is granted, or an ask failed
			 * just now; the others claim on until its end.
			 */
			if (slot->win.asker == 0 && slot->win.next_end == 0 && mono_us >= slot->win.retry_us)
			{
				slot->win.asker = MyProcPid;
				ask = renewing = true;
			}
			shid_window_set_renew(slot, slot->win.end);
		}
		else if (slot->win.asker != 0)
			wait = true;
		else if (mono_us < slot->win.retry_us && slot->win.retry_members == members)
			failed = true;		/* a failure of now: its error, no ask */
		else
		{
			slot->win.asker = MyProcPid;
			ask = true;
		}
		/*
		 * A renewal asks from the end of the window it holds: the lane it
		 * holds in the frame there is not another's to join.
		 */
		min_start = Max(Max(slot->ms, now_ms), renewing ? slot->win.end : 0);
		SpinLockRelease(&slot->mutex);

		if (ask)
		{
			if (slept)
				ConditionVariableCancelSleep();
			shid_window_ask(slot, min_start, renewing, members);
			if (renewing)
				return;
			slept = false;
			/* A window the slot left behind already: ask again, or wait, as long as above. */
			wait = true;
			if (shid_monotonic_us() - started_us <= SHID_WINDOW_WAIT_MS * INT64CONST(1000))
				continue;
		}
		if (failed)
		{
			if (slept)
				ConditionVariableCancelSleep();
			shid_window_backed_off(slot->key.shard);
		}
		if (!wait)
			break;
		if (mono_us - started_us > SHID_WINDOW_WAIT_MS * INT64CONST(1000))
		{
			if (slept)
				ConditionVariableCancelSleep();
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("timed out waiting for a window of shard %d", slot->key.shard),
					 errdetail("Backends of this server have been asking the Citus coordinator for one for %d s.",
							   SHID_WINDOW_WAIT_MS / 1000),
					 errhint("Check that the coordinator can be reached from this node.")));
		}
		/* The first call prepares to sleep and returns at once. */
		(void) ConditionVariableTimedSleep(&slot->win_cv, 50, PG_WAIT_EXTENSION);
		slept = true;
	}
	if (slept)
		ConditionVariableCancelSleep();
}
