/* src/sql/router/moves.sql */

--
-- Shard moves, as operations of the router's database: the journal
-- (sharded_id.moves, move_steps and move_cleanup, the view move_progress),
-- route() and route_id(), the remote calls a move drives its nodes with,
-- through dblink (contrib, which must be installed on the router), the
-- steps of a move, one function each, their cleanup and recovery, and the
-- procedures move_shard, recover_moves and rebalance.
--
-- Each step a move takes on a node is one call of a function of the node
-- side of moves (src/sql/api/node.sql), its arguments sent as literals
-- (_node_call), but for transaction control, the dump method's cursor and
-- the check of the nodes' version of sharded_id.  Every step is written
-- to sharded_id.move_steps, and committed, before it is taken; every
-- object a move creates on a node is written to sharded_id.move_cleanup
-- before it is created.  A move that fails, or whose router, source or
-- target crashes, is finished or rolled back by recover_moves(), or by the
-- next move_shard of the same shard, from what the journal and the nodes
-- say.  Unfinished moves of a shard are one at a time: a partial unique
-- index on sharded_id.moves.
--
-- The design is in doc/: the order of the switch (freeze, stop
-- replication, retire on the source, register on the target, switch the
-- map), why every state between is safe and which way recovery goes from
-- each, in doc/sharded_id-scaling-out.md ("Moving a shard"); the waits of
-- the freeze on the route lock and the fence in doc/sharded_id-reference.md.
-- The locks (the router's move and route locks, the source's fence) and
-- the order they are taken in are stated in src/locks.h.
--

-- On the router: the journal (IF NOT EXISTS: a journal that an earlier
-- version kept is adopted with its rows, src/sql/router/adopt.sql).
CREATE TABLE IF NOT EXISTS sharded_id.moves (
    move_id bigserial PRIMARY KEY,
    shard_id integer NOT NULL CHECK (shard_id >= 0),
    source_node text NOT NULL,
    target_node text NOT NULL,
    method text NOT NULL CHECK (method IN ('online', 'dump')),
    cluster name NOT NULL,
    schema_name name,
    state text NOT NULL DEFAULT 'started',
    sub_oid oid,
    high_water bigint,
    freeze_ms double precision,
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamptz,
    outcome text CHECK (outcome IN ('moved', 'rolled back')),
    error text,
    copy_checked_at timestamptz,
    CHECK ((finished_at IS NULL) = (outcome IS NULL))
);

CREATE UNIQUE INDEX IF NOT EXISTS moves_one_unfinished_per_shard ON sharded_id.moves (shard_id) WHERE finished_at IS NULL;

COMMENT ON TABLE sharded_id.moves IS
'on a router: every shard move, its state (the last step begun) and how it ended';

-- @update@
COMMENT ON COLUMN sharded_id.moves.copy_checked_at IS
'when the cleanup of a move that switched its shard found the new copy the same schema as the old one (_move_check_copy), which may then be dropped; NULL: not yet';

COMMENT ON SEQUENCE sharded_id.moves_move_id_seq IS
'numbers of shard moves';

CREATE TABLE IF NOT EXISTS sharded_id.move_steps (
    move_id bigint NOT NULL REFERENCES sharded_id.moves ON DELETE CASCADE,
    step_no integer NOT NULL,
    step text NOT NULL,
    begun_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (move_id, step_no)
);

COMMENT ON TABLE sharded_id.move_steps IS
'on a router: each step of each move, written and committed before the step is taken';

CREATE TABLE IF NOT EXISTS sharded_id.move_cleanup (
    move_id bigint NOT NULL REFERENCES sharded_id.moves ON DELETE CASCADE,
    node_name text NOT NULL,
    object_type text NOT NULL CHECK (object_type IN ('publication', 'slot', 'subscription', 'mark', 'schema')),
    object_name text NOT NULL,
    policy text NOT NULL CHECK (policy IN ('always', 'on_failure', 'on_success')),
    PRIMARY KEY (move_id, node_name, object_type, object_name)
);

COMMENT ON TABLE sharded_id.move_cleanup IS
'on a router: what a move made on a node, recorded before it is made, and whether to drop it always, when the move fails or when it succeeds';

SELECT pg_catalog.pg_extension_config_dump('sharded_id.moves', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.moves_move_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.move_steps', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.move_cleanup', '');

CREATE VIEW sharded_id.move_progress AS
SELECT m.move_id, m.shard_id, m.source_node, m.target_node, m.method, m.state,
       s.begun_at AS state_since,
       coalesce(m.finished_at, clock_timestamp()) - m.started_at AS elapsed,
       (SELECT count(*) FROM sharded_id.move_steps x WHERE x.move_id = m.move_id) AS steps,
       m.outcome, m.high_water, m.freeze_ms, m.error
FROM sharded_id.moves m
LEFT JOIN LATERAL (SELECT x.begun_at FROM sharded_id.move_steps x
                   WHERE x.move_id = m.move_id ORDER BY x.step_no DESC LIMIT 1) s ON true;

COMMENT ON VIEW sharded_id.move_progress IS
'on a router: every move, newest state first in its steps, with its elapsed time; unfinished moves have no outcome';

GRANT SELECT ON sharded_id.moves, sharded_id.move_steps, sharded_id.move_progress TO PUBLIC;

--
-- Routing: the CLUSTER clause of a router's PL/Proxy functions.
--
CREATE OR REPLACE FUNCTION sharded_id.route(shard integer, cluster text DEFAULT 'sharded_id')
RETURNS text
AS 'MODULE_PATHNAME', 'shid_route'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.route(integer, text) IS
'the PL/Proxy cluster for a call on a shard (CLUSTER sharded_id.route(...)), after waiting out a move''s switch of the shard';

CREATE OR REPLACE FUNCTION sharded_id.route_id(id bigint, cluster text DEFAULT 'sharded_id')
RETURNS text
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id.route(sharded_id.shard_id(id), cluster)
$$;

COMMENT ON FUNCTION sharded_id.route_id(bigint, text) IS
'route() for the shard an id carries';

-- Not for PUBLIC: the share lock route() takes stops a move's freeze while
-- it is held.  Grant both to the roles that call the router's PL/Proxy
-- functions (or make those functions SECURITY DEFINER).
REVOKE EXECUTE ON FUNCTION sharded_id.route(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.route_id(bigint, text) FROM PUBLIC;

--
-- Router side.  (The node side, what a move reads and runs on a shard's
-- copy, is sharded_id's: src/sql/api/node_moves.sql.)
--

-- The schema of dblink on this database.
CREATE FUNCTION sharded_id._dblink_schema()
RETURNS name
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name := (SELECT e.extnamespace::regnamespace::name FROM pg_extension e WHERE e.extname = 'dblink');
BEGIN
    IF schema IS NULL THEN
        RAISE EXCEPTION 'extension "dblink" is not installed'
            USING ERRCODE = 'undefined_object',
                  DETAIL = 'Shard moves reach the data nodes through dblink.',
                  HINT = 'Run CREATE EXTENSION dblink on the router.';
    END IF;
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id._dblink_schema() IS
'internal: the schema of dblink, which moves need on the router';

-- Open dblink connection conn to a node, unless it is open and answers:
-- through the node's postgres_fdw server when apply_shard_map made one, so
-- that the password can come from a user mapping, or else with its
-- connection string (and then a password file or service file of the
-- router's server).  A move names its connections by move, role and node
-- (_move_conn), so that a name is never reused for another node.  Every
-- connection runs with row_security = off: a query that row security would
-- filter fails instead.
CREATE FUNCTION sharded_id._remote_open(conn text, node text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name;
    dsn text;
    open boolean;
    alive boolean;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_open');
    dblink := sharded_id._dblink_schema();
    EXECUTE format('SELECT $1 = ANY (coalesce(%I.dblink_get_connections(), ''{}''))', dblink) INTO open USING conn;
    IF open THEN
        EXECUTE format('SELECT count(*) = 1 FROM %I.dblink($1, ''SELECT 1'', false) AS r(v int)', dblink)
        INTO alive USING conn;
        IF alive THEN
            RETURN;
        END IF;
        EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink) USING conn;
    END IF;
    SELECT CASE WHEN EXISTS (SELECT FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
                             WHERE s.srvname = sharded_id.node_server(n.node_name) AND w.fdwname = 'postgres_fdw')
                THEN sharded_id.node_server(n.node_name)::text ELSE n.connstr END
    INTO dsn FROM sharded_id.nodes n WHERE n.node_name = node;
    IF dsn IS NULL THEN
        RAISE EXCEPTION 'data node "%" does not exist', node
            USING ERRCODE = 'undefined_object';
    END IF;
    EXECUTE format('SELECT %I.dblink_connect($1, $2)', dblink) USING conn, dsn;
    -- The session is the mover's, whoever the node logs it in as: its
    -- search path is pinned, as every function of the extension pins its
    -- own, so that no name the mover sends resolves to a planted object;
    -- and the node notices a router that died or went away (keepalives, and
    -- the check of the client during a query), so that no lock the session
    -- holds outlives the router by more than about 30 s.
    EXECUTE format('SELECT %I.dblink_exec($1, $2)', dblink)
    USING conn, format('SET search_path = pg_catalog, pg_temp; SET row_security = off; '
                       'SET application_name = %L; SET tcp_keepalives_idle = 10; '
                       'SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3; '
                       'SET client_connection_check_interval = ''5s''; SET sharded_id.move_end_blockers = %L',
                       conn, coalesce(current_setting('sharded_id.move_end_blockers', true), 'on'));
END
$$;

COMMENT ON FUNCTION sharded_id._remote_open(text, text) IS
'internal: open a named dblink connection to a data node, with its search path pinned, row_security off and keepalives on, unless it is open and answers';

CREATE FUNCTION sharded_id._remote_close(conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name;
    open boolean;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_close');
    dblink := sharded_id._dblink_schema();
    EXECUTE format('SELECT $1 = ANY (coalesce(%I.dblink_get_connections(), ''{}''))', dblink) INTO open USING conn;
    IF open THEN
        EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink) USING conn;
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_close(text) IS
'internal: close a named dblink connection (a transaction open on it rolls back)';

-- Close every dblink connection of this session whose name starts with
-- prefix: the connections of one move, or of every move (sharded_id_).
CREATE FUNCTION sharded_id._remote_close_all(prefix text)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name;
    conns text[];
    c text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_close_all');
    dblink := sharded_id._dblink_schema();
    EXECUTE format('SELECT coalesce(%I.dblink_get_connections(), ''{}'')', dblink) INTO conns;
    FOREACH c IN ARRAY conns LOOP
        IF left(c, length(prefix)) = prefix THEN
            EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink) USING c;
        END IF;
    END LOOP;
    RETURN cardinality(conns);
END
$$;

COMMENT ON FUNCTION sharded_id._remote_close_all(text) IS
'internal: close every dblink connection of the session whose name starts with a prefix';

-- The name of a move's connection in a role: source, target, freeze,
-- snap_source, snap_target (on the node the role implies) or cleanup (on
-- node).  move_id is NULL for the checks before a move is journaled.
CREATE FUNCTION sharded_id._move_conn(move_id bigint, role text, node text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_conn');
    SELECT format('sharded_id_%s_%s_%s', coalesce(move_id::text, 'new'), role, node)
$$;

COMMENT ON FUNCTION sharded_id._move_conn(bigint, text, text) IS
'internal: the dblink connection name of a move, a role and a node';

-- Open (or check and reuse) a move's connection in a role; returns its name.
CREATE FUNCTION sharded_id._move_open(m sharded_id.moves, role text)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    node text := CASE WHEN role IN ('target', 'snap_target') THEN m.target_node ELSE m.source_node END;
    conn text := sharded_id._move_conn(m.move_id, role, node);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_open');
    PERFORM sharded_id._remote_open(conn, node);
    RETURN conn;
END
$$;

COMMENT ON FUNCTION sharded_id._move_open(sharded_id.moves, text) IS
'internal: open, or check and reuse, the connection of a move in a role, and return its name';

-- Take the move lock of a shard for this session, or fail naming the move
-- and the backend that holds it.
CREATE FUNCTION sharded_id._move_claim(shard_id integer)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    holder integer;
    running bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_claim');
    IF sharded_id._lock_shard(shard_id, 'move', false) THEN
        RETURN;
    END IF;
    holder := (SELECT l.pid FROM pg_locks l
               WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND l.classid = sharded_id._lock_class('move') AND l.objid = _move_claim.shard_id AND l.objsubid = 3 AND l.granted
               LIMIT 1);
    running := (SELECT x.move_id FROM sharded_id.moves x WHERE x.shard_id = _move_claim.shard_id AND x.finished_at IS NULL);
    RAISE EXCEPTION 'move % of shard % is running in backend %', coalesce(running::text, '(not yet journaled)'), shard_id,
                    coalesce(holder::text, '(gone)')
        USING ERRCODE = 'lock_not_available',
              DETAIL = 'A move holds its shard''s move lock from its start to its end, and nothing else may finish or roll it back meanwhile.',
              HINT = 'Wait for that move to end, or cancel it with pg_cancel_backend, then try again.';
END
$$;

COMMENT ON FUNCTION sharded_id._move_claim(integer) IS
'internal: take a shard''s move lock for this session, or fail naming the move and the backend running it';

-- The freeze's route lock on the router (_wait_shard_lock).
CREATE FUNCTION sharded_id._move_lock_route(m sharded_id.moves, freeze_timeout interval)
RETURNS void
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_lock_route');
    SELECT sharded_id._wait_shard_lock(m.shard_id, 'route', freeze_timeout, format('Move %s freezes the shard', m.move_id))
$$;

COMMENT ON FUNCTION sharded_id._move_lock_route(sharded_id.moves, interval) IS
'internal: take the route lock of a move''s shard for its freeze, within freeze_timeout, ending sessions that hold it idle in a transaction';

-- Run sql on connection conn; returns its rows' first column, one line
-- each, or NULL when it returns none.
CREATE FUNCTION sharded_id._remote(conn text, sql text)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote');
    EXECUTE format('SELECT string_agg(r.v, E''\n'') FROM %I.dblink($1, $2) AS r(v text)', sharded_id._dblink_schema())
    INTO result USING conn, sql;
    RETURN result;
END
$$;

COMMENT ON FUNCTION sharded_id._remote(text, text) IS
'internal: run a query on a dblink connection, and return its first column as lines';

CREATE FUNCTION sharded_id._remote_rows(conn text, sql text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result text[];
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_rows');
    EXECUTE format('SELECT array_agg(r.v) FROM %I.dblink($1, $2) AS r(v text)', sharded_id._dblink_schema())
    INTO result USING conn, sql;
    RETURN result;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_rows(text, text) IS
'internal: run a query on a dblink connection, and return its first column as an array';

CREATE FUNCTION sharded_id._remote_exec(conn text, sql text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_exec');
    EXECUTE format('SELECT %I.dblink_exec($1, $2)', sharded_id._dblink_schema()) USING conn, sql;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_exec(text, text) IS
'internal: run statements on a dblink connection';

-- Typed results of remote queries: whether a query returns a row, and the
-- one jsonb value of a query's one row (NULL when it returns none), which
-- callers read by key.
CREATE FUNCTION sharded_id._remote_exists(conn text, sql text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result boolean;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_exists');
    EXECUTE format('SELECT r.v FROM %I.dblink($1, $2) AS r(v boolean)', sharded_id._dblink_schema())
    INTO result USING conn, format('SELECT EXISTS (%s)', sql);
    RETURN result;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_exists(text, text) IS
'internal: whether a query on a dblink connection returns a row';

CREATE FUNCTION sharded_id._remote_json(conn text, sql text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_json');
    EXECUTE format('SELECT r.v FROM %I.dblink($1, $2) AS r(v jsonb)', sharded_id._dblink_schema())
    INTO STRICT result USING conn, sql;
    RETURN result;
EXCEPTION WHEN no_data_found THEN
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_json(text, text) IS
'internal: the one jsonb value that a query on a dblink connection returns, or NULL when it returns no row';

-- A step of a move on a node: one call of a function of the node side of
-- moves (src/sql/api/node.sql), sharded_id.<fn>(args), on connection
-- conn, each argument sent as a literal (format's %L, NULL as NULL) that
-- the node casts to the parameter's type.  Returns the call's result as
-- text.  _node_begin_call opens a transaction on the connection first, in
-- the same round trip, and leaves it open: the freeze.
CREATE FUNCTION sharded_id._node_call(conn text, fn text, VARIADIC args text[])
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_call');
    RETURN sharded_id._remote(conn, sharded_id._node_statement(fn, args));
EXCEPTION WHEN undefined_function THEN
    PERFORM sharded_id._node_call_missing(fn, SQLERRM);
END
$$;

COMMENT ON FUNCTION sharded_id._node_call(text, text, text[]) IS
'internal: call a function of the node side of moves on a dblink connection, its arguments sent as literals, and return its result as text';

CREATE FUNCTION sharded_id._node_begin_call(conn text, fn text, VARIADIC args text[])
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_begin_call');
    RETURN sharded_id._remote(conn, 'BEGIN; ' || sharded_id._node_statement(fn, args));
EXCEPTION WHEN undefined_function THEN
    PERFORM sharded_id._node_call_missing(fn, SQLERRM);
END
$$;

COMMENT ON FUNCTION sharded_id._node_begin_call(text, text, text[]) IS
'internal: open a transaction on a dblink connection and call a function of the node side of moves in it, in one round trip; the transaction stays open';

-- A node call that found no such function: the node's sharded_id is not
-- the router's version (a node not yet updated, or not restarted after
-- its update), which only move_shard checks before it starts; recovery
-- and rebalance_plan call the nodes as they are.
CREATE FUNCTION sharded_id._node_call_missing(fn text, message text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_call_missing');
    RAISE EXCEPTION '%', message
        USING ERRCODE = 'undefined_function',
              DETAIL = format('The node has no function sharded_id.%s that takes these arguments, which this version of sharded_id calls.', fn),
              HINT = 'Run ALTER EXTENSION sharded_id UPDATE on every node and on the router, so that all run one version.';
END
$$;

COMMENT ON FUNCTION sharded_id._node_call_missing(text, text) IS
'internal: report a node call that found no such function on the node, naming the version mismatch';

-- The statement of a node call: SELECT sharded_id.<fn>('arg', ...).  Only
-- functions of the extension are called so: those of the node side of
-- moves (_node_...), and the node's own that a move reads
-- (_move_schema_ddl, _schema_fingerprint, _check_floor).
CREATE FUNCTION sharded_id._node_statement(fn text, args text[])
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_statement');
    IF fn IS NULL OR fn !~ '^(_node_[a-z_]+|_move_schema_ddl|_schema_fingerprint|_check_floor)$' THEN
        RAISE EXCEPTION '"%" is not the name of a function of the node side of moves', fn
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN format('SELECT sharded_id.%s(%s)', fn,
                  coalesce((SELECT string_agg(format('%L', a), ', ' ORDER BY n)
                            FROM unnest(args) WITH ORDINALITY x(a, n)), ''));
END
$$;

COMMENT ON FUNCTION sharded_id._node_statement(text, text[]) IS
'internal: the statement that calls a function of the node side of moves with literal arguments';

-- For fault-injection tests: wait while another session holds advisory
-- lock (1936222579, 0) if sharded_id.move_hold names point: a step, after
-- it is journaled; retired and registered, inside the steps; in recovery,
-- recover_switch (before _move_resolve switches the map), recover_switched
-- (the switch committed) and recover_followed (the ops tables' switch
-- committed, the cleanup next); the cleanup's own (_move_cleanup_hold).
CREATE FUNCTION sharded_id._move_hold(point text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_hold');
    IF current_setting('sharded_id.move_hold', true) = point THEN
        PERFORM pg_advisory_lock_shared(1936222579, 0);
        PERFORM pg_advisory_unlock_shared(1936222579, 0);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_hold(text) IS
'internal: pause a move at a point named by sharded_id.move_hold, for fault-injection tests';

-- Record an object of a move before the move creates it.
CREATE FUNCTION sharded_id._move_will_create(move_id bigint, node text, object_type text,
                                             object_name text, policy text)
RETURNS void
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_will_create');
    INSERT INTO sharded_id.move_cleanup VALUES (move_id, node, object_type, object_name, policy)
    ON CONFLICT DO NOTHING
$$;

COMMENT ON FUNCTION sharded_id._move_will_create(bigint, text, text, text, text) IS
'internal: record what a move is about to create on a node, and when to drop it';

-- Open the move's freeze connection to the source, a new one, before a
-- freeze begins, and read there what the freeze will read: writers then
-- wait for neither its login nor its first look at the catalogs.
CREATE FUNCTION sharded_id._move_open_freeze(m sharded_id.moves)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    frz text := sharded_id._move_conn(m.move_id, 'freeze', m.source_node);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_open_freeze');
    PERFORM sharded_id._remote_close(frz);
    PERFORM sharded_id._remote_open(frz, m.source_node);
    PERFORM sharded_id._node_call(frz, '_node_prepare_freeze', m.shard_id::text, m.schema_name);
    RETURN frz;
END
$$;

COMMENT ON FUNCTION sharded_id._move_open_freeze(sharded_id.moves) IS
'internal: open a new freeze connection of a move to its source';

-- How long the source lets the freeze's transaction sit idle before it
-- ends the session, and with it the freeze: a router that hangs inside the
-- freeze, or whose host vanished, leaves the shard writable on the source
-- again within that, not after TCP gives up.  Online, the router waits
-- inside the freeze only for the catch-up and the route lock, each bounded
-- by freeze_timeout: twice that and 10 s more.  By dump, the copy and the
-- comparison run inside the freeze, the source idle while the target
-- writes a batch or reads its copy: the move's timeout, at least as much.
-- Set on the freeze connection before the freeze (_move_set_freeze_idle).
CREATE FUNCTION sharded_id._move_set_freeze_idle(m sharded_id.moves, timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    online_limit interval := freeze_timeout * 2 + interval '10 s';
    idle interval := CASE WHEN m.method = 'online' THEN online_limit ELSE greatest(timeout, online_limit) END;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_set_freeze_idle');
    PERFORM sharded_id._node_call(sharded_id._move_conn(m.move_id, 'freeze', m.source_node), '_node_set_idle_limit', idle::text);
END
$$;

COMMENT ON FUNCTION sharded_id._move_set_freeze_idle(sharded_id.moves, interval, interval) IS
'internal: on a move''s freeze connection, how long the source lets the freeze sit idle before it ends it: twice freeze_timeout and 10 s online, the move''s timeout (at least that) by dump';

REVOKE EXECUTE ON FUNCTION sharded_id._move_set_freeze_idle(sharded_id.moves, interval, interval) FROM PUBLIC;

-- Freeze writes to the shard on the source, on the move's freeze
-- connection (_move_open_freeze), in one round trip: a transaction holding
-- the fence that enter_shard waits on, the shard's catalog row and its
-- tables.  Closing the connection ends the freeze, and so does the source
-- once the router leaves the transaction idle for longer than the move
-- allows (_move_set_freeze_idle).
CREATE FUNCTION sharded_id._move_freeze_source(m sharded_id.moves, lock_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_freeze_source');
    PERFORM sharded_id._node_begin_call(sharded_id._move_conn(m.move_id, 'freeze', m.source_node), '_node_freeze',
                                        m.shard_id::text, m.schema_name, lock_timeout::text,
                                        format('Move %s freezes the shard', m.move_id));
END
$$;

COMMENT ON FUNCTION sharded_id._move_freeze_source(sharded_id.moves, interval) IS
'internal: open the freezing transaction of a move on its source';

-- Write a catch-up mark on the source and wait, up to timeout, until the
-- target has applied it, and with it everything committed before it, on
-- the move's source and target connections, which the caller opened.  The
-- mark is a counter of the move, one up each time, on the source: the
-- target has caught up when it holds the value the source just wrote, so
-- no clock decides it.  The timeout counts polls of at least 1 ms each, so
-- that a step of the router's clock neither ends the wait early nor
-- stretches it.
CREATE FUNCTION sharded_id._move_catch_up(m sharded_id.moves, timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    mark bigint;
    polls bigint := 0;
    max_polls bigint := greatest(1, (extract(epoch FROM timeout) * 1000)::bigint);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_catch_up');
    mark := sharded_id._node_call(src, '_node_write_mark', m.move_id::text)::bigint;
    WHILE coalesce(sharded_id._node_call(tgt, '_node_mark', m.move_id::text)::bigint, 0) < mark LOOP
        polls := polls + 1;
        IF polls > max_polls THEN
            RAISE EXCEPTION 'the target did not catch up with the source within %', timeout
                USING ERRCODE = 'lock_not_available';
        END IF;
        IF NOT coalesce(sharded_id._node_call(tgt, '_node_subscription_enabled', m.sub_oid::text)::boolean, false) THEN
            RAISE EXCEPTION 'the subscription of move % stopped', m.move_id
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'The target''s server log says why.';
        END IF;
        PERFORM pg_sleep(0.001);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_catch_up(sharded_id.moves, interval) IS
'internal: wait until a move''s target has applied everything its source committed';

-- Compare the rows of the shard's copies seen by two connections; sequences
-- do not replicate, and the switch copies their positions.
CREATE FUNCTION sharded_id._move_compare(m sharded_id.moves, source_conn text, target_conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    f_source text := sharded_id._node_call(source_conn, '_schema_fingerprint', m.schema_name);
    f_target text := sharded_id._node_call(target_conn, '_schema_fingerprint', m.schema_name);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_compare');
    IF f_source IS DISTINCT FROM f_target THEN
        RAISE EXCEPTION 'the copy of shard % differs from the source', m.shard_id
            USING ERRCODE = 'data_corrupted',
                  DETAIL = format('Source: %s. Target: %s.', f_source, f_target);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_compare(sharded_id.moves, text, text) IS
'internal: fail when two copies of a moving shard hold different rows';

-- Register the shard on the target, in one transaction: the sequences'
-- positions, create_shard, and the floor over the source's high-water mark.
-- On the move's source and target connections, which the caller opened.
-- It holds the shard's fence on the target, and needs the move's copy
-- there: a rollback (_move_take_back) waits for it, then drops the copy,
-- so that no registration of this move can follow the rollback.
CREATE FUNCTION sharded_id._move_register_target(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_register_target');
    -- Nothing mints for the retired copy, so its sequences stay put.
    PERFORM sharded_id._node_call(tgt, '_node_register_shard', m.shard_id::text, m.schema_name,
                                  sharded_id._node_call(src, '_node_sequence_positions', m.schema_name), m.high_water::text);
END
$$;

COMMENT ON FUNCTION sharded_id._move_register_target(sharded_id.moves) IS
'internal: make a move''s target the owner of the shard, its ids above the source''s high-water mark';

-- Point the router at the shard's new owner, and journal the switch, in one
-- transaction of the router.  Switches of moves running at once take turns,
-- so that each applies a map that holds the others' switches.  Writers wait
-- for it, so it changes only the moved shard's partition of the PL/Proxy
-- cluster when the target's partition string already serves another shard
-- (its user mapping then holds for this one too), and otherwise applies the
-- whole map; either way the ops tables follow after it (_move_follow_ops).
CREATE FUNCTION sharded_id._move_switch(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text := format('p%s', m.shard_id);
    connstr text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_switch');
    LOCK TABLE sharded_id.shard_map IN EXCLUSIVE MODE;
    UPDATE sharded_id.shard_map SET node_name = m.target_node WHERE shard_id = m.shard_id;
    SELECT sharded_id._partition_connstr(n.connstr) INTO connstr
    FROM sharded_id.nodes n WHERE n.node_name = m.target_node;
    IF EXISTS (SELECT FROM pg_foreign_server s, unnest(s.srvoptions) o
               WHERE s.srvname = m.cluster AND o = format('%s=%s', split_part(o, '=', 1), connstr)
                 AND split_part(o, '=', 1) ~ '^p[0-9]+$')
       AND EXISTS (SELECT FROM pg_foreign_server s, unnest(s.srvoptions) o
                   WHERE s.srvname = m.cluster AND split_part(o, '=', 1) = part) THEN
        EXECUTE format('ALTER SERVER %I OPTIONS (SET %I %L)', m.cluster, part, connstr);
    ELSE
        PERFORM sharded_id._apply_shard_map(m.cluster, NULL, NULL, false);
    END IF;
    UPDATE sharded_id.moves SET state = 'switched', updated_at = clock_timestamp() WHERE move_id = m.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._move_switch(sharded_id.moves) IS
'internal: the router''s switch of a shard to its new node';

-- Point the moved shard's partition of every ops table at its new node,
-- once the router's map names it; no lock is taken when they already do.
CREATE FUNCTION sharded_id._move_follow_ops(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $$
DECLARE
    ops record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_follow_ops');
    IF NOT EXISTS (SELECT FROM pg_foreign_data_wrapper WHERE fdwname = 'postgres_fdw') THEN
        RETURN;
    ELSIF NOT EXISTS (SELECT FROM pg_foreign_server WHERE srvname = sharded_id.node_server(m.target_node)) THEN
        PERFORM sharded_id._apply_shard_map(m.cluster, NULL, NULL, true);
        RETURN;
    END IF;
    FOR ops IN SELECT * FROM sharded_id.ops_tables LOOP
        PERFORM sharded_id._attach_ops_partition(ops.ops_table, m.shard_id);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_follow_ops(sharded_id.moves) IS
'internal: point a moved shard''s partition of every ops table at its new node';

-- Cleanup: one function per kind of object a move makes on a node, each
-- given the move, the object's record of sharded_id.move_cleanup and the
-- move's open cleanup connection to the record's node.  Each drops its
-- object if it is there, so that a cleanup cut short can run again.  Before
-- each remote statement, a hold point for fault-injection tests
-- (_move_hold): '<verb>_<kind>_<source|target>' (_move_cleanup_hold); after
-- the drop of a copy of the schema, which commits on the node at once,
-- 'dropped_schema_<source|target>'.
CREATE FUNCTION sharded_id._move_cleanup_hold(m sharded_id.moves, c sharded_id.move_cleanup, verb text)
RETURNS void
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_cleanup_hold');
    SELECT sharded_id._move_hold(format('%s_%s_%s', verb, c.object_type,
                                        CASE WHEN c.node_name = m.source_node THEN 'source' ELSE 'target' END))
$$;

COMMENT ON FUNCTION sharded_id._move_cleanup_hold(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: the hold point (sharded_id.move_hold) before a remote statement of a move''s cleanup';

-- The move's subscription on the target: disabled, detached from its slot
-- (which the slot's cleanup drops on the source), dropped.
CREATE FUNCTION sharded_id._move_drop_subscription(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_subscription');
    IF NOT sharded_id._node_call(conn, '_node_has_subscription', c.object_name)::boolean THEN
        RETURN;
    END IF;
    PERFORM sharded_id._move_cleanup_hold(m, c, 'disable');
    PERFORM sharded_id._node_call(conn, '_node_disable_subscription', c.object_name);
    PERFORM sharded_id._move_cleanup_hold(m, c, 'detach');
    PERFORM sharded_id._node_call(conn, '_node_detach_subscription', c.object_name);
    PERFORM sharded_id._move_cleanup_hold(m, c, 'drop');
    PERFORM sharded_id._node_call(conn, '_node_drop_subscription', c.object_name);
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_subscription(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: drop a move''s subscription on its target, if it is there';

-- The move's slot on the source, and the table-copy slots of its
-- subscription, whose walsenders are ended first: waits up to 10 s for
-- them to let go.
CREATE FUNCTION sharded_id._move_drop_slot(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '10 s';
    left_slots bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_slot');
    LOOP
        PERFORM sharded_id._move_cleanup_hold(m, c, 'drop');
        left_slots := sharded_id._node_call(conn, '_node_drop_slots', c.object_name, coalesce(m.sub_oid, 0)::text)::bigint;
        EXIT WHEN left_slots = 0;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'could not drop replication slot "%" on node "%"', c.object_name, c.node_name
                USING ERRCODE = 'object_in_use',
                      HINT = 'Something keeps using it. CALL sharded_id.recover_moves() again once it is free.';
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_slot(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: drop a move''s replication slot and its subscription''s table-copy slots on its source, ending their walsenders';

CREATE FUNCTION sharded_id._move_drop_publication(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_publication');
    PERFORM sharded_id._move_cleanup_hold(m, c, 'drop');
    PERFORM sharded_id._node_call(conn, '_node_drop_publication', c.object_name);
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_publication(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: drop a move''s publication on its source, if it is there';

CREATE FUNCTION sharded_id._move_drop_mark(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_mark');
    PERFORM sharded_id._move_cleanup_hold(m, c, 'delete');
    PERFORM sharded_id._node_call(conn, '_node_delete_mark', c.object_name::bigint::text);
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_mark(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: delete a move''s catch-up mark on one of its nodes';

-- A copy of the shard's schema: the old one on the source once the shard
-- moved and the new copy was checked (_move_cleanup_check_copy), or the
-- partial one
-- on the target of a move rolled back.  Never a schema the node holds as a
-- shard.
CREATE FUNCTION sharded_id._move_drop_schema(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_schema');
    PERFORM sharded_id._move_cleanup_hold(m, c, 'drop');
    -- Bounded: a reader that holds the old copy leaves it for the deferred
    -- cleanup instead of holding up the move (the connection is closed on
    -- the error, which rolls the drop back).
    PERFORM sharded_id._node_call(conn, '_node_drop_copy', c.object_name);
    PERFORM sharded_id._move_cleanup_hold(m, c, 'dropped');
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_schema(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: drop a copy of a shard''s schema that a move left on a node, unless the node holds it as a shard; the old copy only once the new one is checked';

-- One record of a move's cleanup: its object dropped on its node, on the
-- move's cleanup connection there, and the record deleted, in a
-- subtransaction of their own.  A failure is returned, not raised, and the
-- connection closed, so that the node's next record tries a new one.
CREATE FUNCTION sharded_id._move_cleanup_drop(m sharded_id.moves, c sharded_id.move_cleanup,
                                              OUT error text, OUT error_state text,
                                              OUT error_detail text, OUT error_hint text)
RETURNS record
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    conn text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_cleanup_drop');
    BEGIN
        conn := sharded_id._move_conn(m.move_id, 'cleanup', c.node_name);
        PERFORM sharded_id._remote_open(conn, c.node_name);
        CASE c.object_type
        WHEN 'subscription' THEN PERFORM sharded_id._move_drop_subscription(m, c, conn);
        WHEN 'slot' THEN PERFORM sharded_id._move_drop_slot(m, c, conn);
        WHEN 'publication' THEN PERFORM sharded_id._move_drop_publication(m, c, conn);
        WHEN 'mark' THEN PERFORM sharded_id._move_drop_mark(m, c, conn);
        WHEN 'schema' THEN PERFORM sharded_id._move_drop_schema(m, c, conn);
        END CASE;
        DELETE FROM sharded_id.move_cleanup x
        WHERE x.move_id = c.move_id AND x.node_name = c.node_name
          AND x.object_type = c.object_type AND x.object_name = c.object_name;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS error = MESSAGE_TEXT, error_state = RETURNED_SQLSTATE,
                                error_detail = PG_EXCEPTION_DETAIL, error_hint = PG_EXCEPTION_HINT;
        BEGIN
            PERFORM sharded_id._remote_close(conn);
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
    END;
END
$$;

COMMENT ON FUNCTION sharded_id._move_cleanup_drop(sharded_id.moves, sharded_id.move_cleanup) IS
'internal: drop one object a move made on a node and delete its cleanup record, returning the error instead of raising it';

-- The end of a move's cleanup, past its failures: the move finished, or
-- 'cleanup pending' while records are left, its outcome journaled; the
-- first failure, if any (of a move that switched its shard), becomes its
-- error and a warning that names what is left.
CREATE FUNCTION sharded_id._move_cleanup_end(m sharded_id.moves, moved boolean, first_err text,
                                             first_detail text, first_hint text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    left_over integer;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_cleanup_end');
    left_over := (SELECT pg_catalog.count(*) FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id);
    UPDATE sharded_id.moves x
    SET state = CASE WHEN left_over = 0 THEN 'finished' ELSE 'cleanup pending' END,
        outcome = CASE WHEN moved THEN 'moved' ELSE 'rolled back' END,
        finished_at = coalesce(x.finished_at, pg_catalog.clock_timestamp()), updated_at = pg_catalog.clock_timestamp(),
        error = CASE WHEN first_err IS NULL THEN x.error ELSE coalesce(x.error, 'cleanup: ' || first_err) END
    WHERE x.move_id = m.move_id;
    IF first_err IS NOT NULL THEN
        RAISE WARNING 'move % of shard % to node "%" is done, but its cleanup is pending: %', m.move_id, m.shard_id, m.target_node, first_err
            USING DETAIL = pg_catalog.format('Node "%s" owns the shard and the shard map names it. %s of what the move made on the nodes is left (sharded_id.move_cleanup)%s.%s',
                                             m.target_node, left_over,
                                             CASE WHEN EXISTS (SELECT FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id AND x.object_type = 'slot')
                                                  THEN pg_catalog.format(', among it replication slot "%s" on node "%s", which keeps the WAL the node writes', 'sharded_id_move_' || m.shard_id, m.source_node)
                                                  ELSE '' END,
                                             coalesce(' ' || first_detail, '')),
                  HINT = coalesce(first_hint, 'CALL sharded_id.recover_moves() once every node answers; the next move of the shard drops it too.');
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_cleanup_end(sharded_id.moves, boolean, text, text, text) IS
'internal: journal the end of a move''s cleanup, finished or pending, with a warning naming what is left after a failure';

-- Whether an ops table's partition of the move's shard still reads another
-- node than the move's target.
CREATE FUNCTION sharded_id._move_ops_stale(m sharded_id.moves)
RETURNS boolean
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_ops_stale');
    SELECT EXISTS (
        SELECT FROM sharded_id.ops_tables o
        JOIN pg_inherits i ON i.inhparent = o.ops_table
        JOIN pg_class c ON c.oid = i.inhrelid
        LEFT JOIN pg_foreign_table f ON f.ftrelid = c.oid
        LEFT JOIN pg_foreign_server s ON s.oid = f.ftserver
        WHERE pg_get_expr(c.relpartbound, c.oid) = format('FOR VALUES IN (%s)', m.shard_id)
          AND s.srvname IS DISTINCT FROM sharded_id.node_server(m.target_node))
$$;

COMMENT ON FUNCTION sharded_id._move_ops_stale(sharded_id.moves) IS
'internal: whether an ops table still reads a moved shard on another node than the move''s target';

-- Drop what a move made, as move_cleanup records it: the objects of every
-- policy but on_failure when it moved the shard, of every policy but
-- on_success when it did not; each kind by its own function, each record
-- deleted once its object is gone.  A node that does not answer keeps its
-- records for the next try, and the other nodes are cleaned meanwhile.
-- A move rolled back stays unfinished, and fails, until every record is
-- gone.  A move that switched the shard is done whatever the cleanup
-- meets, but for a copy that differs from its source (data_corrupted, from
-- _move_check_copy, before the old copy is dropped), which keeps it
-- unfinished and fails: its outcome is moved, with a warning and its state
-- 'cleanup pending' while records are left, which recover_moves, or the
-- next move of the shard, drops (_move_deferred_cleanup).
CREATE FUNCTION sharded_id._move_cleanup(m sharded_id.moves, moved boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c sharded_id.move_cleanup;
    ops_stale boolean := false;
    err text;
    err_state text;
    err_detail text;
    err_hint text;
    first_err text;
    first_detail text;
    first_hint text;
    first_state text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_cleanup');
    -- The ops tables follow the switch before the old copy goes (move_shard
    -- and recover_moves have tried already, and committed).  If they cannot
    -- (a reader holds them), the old copy they read stays, for the deferred
    -- cleanup, which tries again.
    IF moved THEN
        -- Ops tables that still read the old copy are pointed at the new
        -- one here, but the old copy is then kept for the next cleanup: its
        -- drop commits on the node at once, and a crash of the router
        -- before this transaction commits would leave them reading a copy
        -- that is gone.  move_shard and recover_moves commit the ops
        -- tables' switch before they clean up.
        ops_stale := sharded_id._move_ops_stale(m);
        BEGIN
            PERFORM sharded_id._move_follow_ops(m);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE;
            first_err := format('the ops tables of shard %s still read node "%s": %s', m.shard_id, m.source_node, err);
            first_state := err_state;
        END;
    END IF;
    DELETE FROM sharded_id.move_cleanup x
    WHERE x.move_id = m.move_id AND x.policy = CASE WHEN moved THEN 'on_failure' ELSE 'on_success' END;
    FOR c IN
        SELECT * FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id
        ORDER BY CASE x.object_type WHEN 'subscription' THEN 1 WHEN 'slot' THEN 2 WHEN 'publication' THEN 3
                                    WHEN 'mark' THEN 4 ELSE 5 END, x.node_name
    LOOP
        IF moved AND c.object_type = 'schema' THEN
            -- The old copy stays while the ops tables read it, and until the
            -- new copy is found the same schema.
            CONTINUE WHEN first_err LIKE 'the ops tables %' OR ops_stale;
            IF m.copy_checked_at IS NULL THEN
                BEGIN
                    PERFORM sharded_id._move_check_copy(m);
                    UPDATE sharded_id.moves x SET copy_checked_at = clock_timestamp()
                    WHERE x.move_id = m.move_id RETURNING x.copy_checked_at INTO m.copy_checked_at;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE,
                                            err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
                    IF err_state = 'XX001' AND m.state IS DISTINCT FROM 'cleanup pending' THEN
                        -- Right after the switch: the new copy is not what
                        -- the old one was, not a leftover.
                        RAISE;
                    END IF;
                    IF first_err IS NULL THEN
                        first_err := format('the old copy of shard %s on node "%s" is kept: %s', m.shard_id, c.node_name, err);
                        first_state := err_state;
                        first_detail := nullif(err_detail, '');
                        first_hint := CASE WHEN err_state = 'XX001' THEN
                            'The new copy has changed since the switch, or was never the same: compare the two, then drop the old copy by hand and delete its row from sharded_id.move_cleanup.'
                            ELSE nullif(err_hint, '') END;
                    END IF;
                    CONTINUE;
                END;
            END IF;
        END IF;
        SELECT * INTO err, err_state, err_detail, err_hint FROM sharded_id._move_cleanup_drop(m, c);
        IF err IS NOT NULL AND first_err IS NULL THEN
            first_err := format('node "%s", %s %s: %s', c.node_name, c.object_type, c.object_name, err);
            first_state := err_state;
            first_detail := nullif(err_detail, '');
            first_hint := nullif(err_hint, '');
        END IF;
    END LOOP;
    IF first_err IS NOT NULL AND NOT moved THEN
        -- The first failure's own detail and hint say what to do about it.
        RAISE EXCEPTION 'could not drop everything move % made: %', m.move_id, first_err
            USING ERRCODE = first_state, DETAIL = coalesce(first_detail, ''),
                  HINT = coalesce(first_hint, 'CALL sharded_id.recover_moves() again once every node answers.');
    END IF;
    PERFORM sharded_id._move_cleanup_end(m, moved, first_err, first_detail, first_hint);
END
$$;

COMMENT ON FUNCTION sharded_id._move_cleanup(sharded_id.moves, boolean) IS
'internal: drop what a finished or rolled-back move left on its nodes, as its cleanup records say, one function per kind of object; after a switch, what cannot be dropped is left to a deferred cleanup, with a warning';

-- The deferred cleanup of a move that switched its shard but could not
-- drop all it made (state 'cleanup pending'): on fresh connections, what
-- _move_cleanup left.  Returns true when nothing is left.
CREATE FUNCTION sharded_id._move_deferred_cleanup(move_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_deferred_cleanup');
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_deferred_cleanup.move_id FOR UPDATE;
    IF m.finished_at IS NULL THEN
        RAISE EXCEPTION 'move % is unfinished', move_id USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM sharded_id._remote_close_all(format('sharded_id_%s_', m.move_id));
    PERFORM sharded_id._move_cleanup(m, m.outcome = 'moved');
    RETURN NOT EXISTS (SELECT FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id);
END
$$;

-- _move_deferred_cleanup, whose error, if any, is a warning: recover_moves
-- goes on with the other moves' cleanups.
CREATE FUNCTION sharded_id._move_try_deferred_cleanup(move_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_try_deferred_cleanup');
    BEGIN
        RETURN sharded_id._move_deferred_cleanup(move_id);
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'the deferred cleanup of move % failed: %', move_id, SQLERRM
            USING HINT = 'CALL sharded_id.recover_moves() again once the cause is gone.';
        RETURN false;
    END;
END
$$;

COMMENT ON FUNCTION sharded_id._move_try_deferred_cleanup(bigint) IS
'internal: the deferred cleanup of one move, with a warning instead of an error, so that recover_moves goes on with the others';

COMMENT ON FUNCTION sharded_id._move_deferred_cleanup(bigint) IS
'internal: drop what a finished move left on its nodes when its cleanup was cut short (state cleanup pending); true when nothing is left';

-- Roll back a move whose source retired the shard but whose target did
-- not register it: first the target, on a fresh connection, in one
-- transaction: wait for the shard's fence there (which a registration of
-- the move holds, _move_register_target), make sure the shard is still
-- not registered, and drop the move's copy, so that no registration of
-- the move can follow; then the source, in one transaction: only if this
-- move retired the shard there, the fence constraints off the old copy,
-- create_shard's take-back (floors over the rows, which the freeze
-- checked and the fence kept) and the floor over its own high-water mark.
-- The shard is writable on the source when it returns; the caller cleans
-- up the rest.  why says what the target refused, for the error of a
-- rollback that cannot be made.
CREATE FUNCTION sharded_id._move_take_back(m sharded_id.moves, why text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'take_back_source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'take_back_target', m.target_node);
    mark text;
    msg text;
    state text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_take_back');
    PERFORM sharded_id._remote_close(c) FROM unnest(ARRAY[src, tgt]) c;
    PERFORM sharded_id._remote_open(tgt, m.target_node);
    PERFORM sharded_id._node_call(tgt, '_node_drop_refused_copy', m.shard_id::text, m.schema_name);
    PERFORM sharded_id._remote_open(src, m.source_node);
    mark := sharded_id._node_call(src, '_node_retired_high_water', m.shard_id::text);
    PERFORM sharded_id._node_call(src, '_node_take_back', m.shard_id::text, m.move_id::text, m.schema_name, mark);
    PERFORM sharded_id._remote_close(c) FROM unnest(ARRAY[src, tgt]) c;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    PERFORM sharded_id._remote_close(c) FROM unnest(ARRAY[src, tgt]) c;
    RAISE EXCEPTION 'move % of shard % can be neither finished nor rolled back: %', m.move_id, m.shard_id, msg
        USING ERRCODE = state,
              DETAIL = format('Node "%s" retired the shard for the move, and node "%s" did not take it: %s', m.source_node, m.target_node, why),
              HINT = 'Once both nodes answer and the cause is gone, CALL sharded_id.recover_moves() again.';
END
$$;

COMMENT ON FUNCTION sharded_id._move_take_back(sharded_id.moves, text) IS
'internal: roll back a move after its source retired the shard and its target refused it: the copy off the target, the shard back on the source';

-- In recovery, of a move whose source no longer owns the shard: fail,
-- changing nothing, unless the source says this move retired it (its
-- sharded_id.move_retirements), on the move's source connection src.
CREATE FUNCTION sharded_id._move_check_retired_by(m sharded_id.moves, src text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    retired_by bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_retired_by');
    retired_by := sharded_id._node_call(src, '_node_retired_by', m.shard_id::text)::bigint;
    IF retired_by IS DISTINCT FROM m.move_id THEN
        RAISE EXCEPTION 'move % of shard % can be neither finished nor rolled back: node "%" no longer owns the shard, but the move did not retire it',
                        m.move_id, m.shard_id, m.source_node
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = CASE WHEN retired_by IS NULL THEN 'No move retired it there: it was retired or dropped otherwise.'
                                ELSE pg_catalog.format('Move %s retired it there.', retired_by) END || ' Recovery changed nothing.',
                  HINT = 'Find the node that holds the shard''s rows, register the shard there, point the shard map at it, and then recover again.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_retired_by(sharded_id.moves, text) IS
'internal: in recovery, fail unless the move''s source says this move retired the shard';

-- Finish an interrupted move from what the nodes say: forward when the
-- source has retired the shard for this move and the copy matches it, back
-- when the source still owns it; otherwise fail and change nothing.
-- Returns true when the shard moved, false when it rolled back, and NULL
-- when it has just switched the shard map: the caller commits, lets the ops
-- tables follow (_move_follow_ops_after_switch) and commits, then calls it
-- again to clean up, so that no router crash comes between a committed
-- drop of the old copy and an uncommitted switch.
CREATE FUNCTION sharded_id._move_resolve(move_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
    routed_to text;
    src text;
    tgt text;
    source_owns boolean;
    target_owns boolean;
    refused text;
    refused_state text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_resolve');
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_resolve.move_id FOR UPDATE;
    IF m.finished_at IS NOT NULL THEN
        RETURN m.outcome = 'moved';
    END IF;
    -- Fresh connections: the move's own may have died with a node, and
    -- its freeze, if any, ends here.
    PERFORM sharded_id._remote_close_all(format('sharded_id_%s_', m.move_id));
    routed_to := (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = m.shard_id);
    IF routed_to = m.target_node THEN
        PERFORM sharded_id._move_cleanup(m, true);
        RETURN true;
    END IF;
    src := sharded_id._move_open(m, 'source');
    source_owns := sharded_id._node_call(src, '_node_holds_shard', m.shard_id::text)::boolean;
    BEGIN
        tgt := sharded_id._move_open(m, 'target');
        target_owns := sharded_id._node_call(tgt, '_node_holds_shard', m.shard_id::text)::boolean;
    EXCEPTION WHEN connection_exception THEN
        -- A target that does not answer cannot own the shard while the
        -- source does (it registers only after the source retires): roll
        -- back what can be, and keep the rest for the next try.
        IF NOT source_owns THEN
            RAISE;
        END IF;
    END;
    IF source_owns AND target_owns THEN
        RAISE EXCEPTION 'shard % is registered on both "%" and "%"', m.shard_id, m.source_node, m.target_node
            USING ERRCODE = 'data_corrupted',
                  DETAIL = format('Move %s cannot tell which copy to keep.', m.move_id),
                  HINT = 'Retire the copy that is not current with sharded_id.retire_shard, then recover again.';
    ELSIF source_owns THEN
        PERFORM sharded_id._move_cleanup(m, false);
        RETURN false;
    END IF;
    -- Retired on the source: forward only if the source says this move
    -- retired it, and the copy holds what the retired source holds (the
    -- source retires only after the target caught up and replication
    -- stopped).  Otherwise change nothing.
    PERFORM sharded_id._move_check_retired_by(m, src);
    IF target_owns THEN
        PERFORM sharded_id._move_compare(m, src, tgt);
    ELSE
        -- Not registered on the target: forward when the copy holds what
        -- the retired source holds and the target takes it; when the
        -- target answers but differs or refuses (a row planted in its copy
        -- that no floor may be raised over), back, the source taking the
        -- shard back.  A target that does not answer keeps the move for
        -- the next try.
        IF m.method = 'online' THEN
            PERFORM sharded_id._node_call(tgt, '_node_disable_subscription', 'sharded_id_move_' || m.shard_id, 'true');
        END IF;
        BEGIN
            PERFORM sharded_id._move_compare(m, src, tgt);
            m.high_water := sharded_id._node_call(src, '_node_retired_high_water', m.shard_id::text)::bigint;
            UPDATE sharded_id.moves x SET high_water = m.high_water WHERE x.move_id = m.move_id;
            PERFORM sharded_id._move_register_target(m);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS refused = MESSAGE_TEXT, refused_state = RETURNED_SQLSTATE;
            IF refused_state LIKE '08%' OR refused_state IN ('57P01', '57P02', '57P03', '57014') THEN
                RAISE;
            END IF;
            PERFORM sharded_id._move_take_back(m, refused);
            UPDATE sharded_id.moves x SET error = coalesce(x.error || '; ', '') || 'rolled back: ' || refused
            WHERE x.move_id = m.move_id;
            PERFORM sharded_id._move_cleanup(m, false);
            RETURN false;
        END;
    END IF;
    -- Switched: the caller commits the switch, then lets the ops tables
    -- follow and commits that, then calls again to clean up (the routed
    -- path above).  A cleanup in this transaction would drop the old copy
    -- on the node at once, and a crash of the router before the switch
    -- commits would leave the map naming a copy that is gone.
    PERFORM sharded_id._move_hold('recover_switch');
    PERFORM sharded_id._move_switch(m);
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION sharded_id._move_resolve(bigint) IS
'internal: finish or roll back an interrupted move, from its journal and the state of its nodes; NULL when it switched the map, to be committed before it is called again';

--
-- The steps of a move, one function each, in the order move_shard takes
-- them.  An online move: record_objects, create_publication, subscribe,
-- copy, catch_up, compare, catch_up, freeze, stop_replication,
-- retire_source, register_target, switch; a move by dump: record_objects,
-- freeze, copy_rows, retire_source, register_target, switch.  Each runs on
-- the move's source and target connections (_move_conn), which _move_step
-- opens, or, inside the final freeze, checked already by the freeze.
--

-- record_objects: what the move will make on its nodes, recorded (and
-- committed by move_shard) before the next step makes it.
CREATE FUNCTION sharded_id._move_record_objects(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    repl text := 'sharded_id_move_' || m.shard_id;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_record_objects');
    PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'schema', m.schema_name, 'on_failure');
    PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'schema', m.schema_name, 'on_success');
    IF m.method = 'online' THEN
        PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'publication', repl, 'always');
        PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'slot', repl, 'always');
        PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'mark', m.move_id::text, 'always');
        PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'subscription', repl, 'always');
        PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'mark', m.move_id::text, 'always');
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_record_objects(sharded_id.moves) IS
'internal: step record_objects of a move: record what it will make on its nodes, and when to drop it';

-- create_publication: the shard's tables and the move's marks, and the
-- slot the subscription reads, on the source.
-- Create the move's replication slot on the source, on its connection
-- src, within timeout.  A new logical slot waits for every transaction
-- that holds an xid on the source (in any database) to end, so the call is
-- sent without waiting (dblink_send_query) and watched.  Those
-- transactions need not touch the shard (another shard, another database,
-- any role), so the move ends none of them, whatever
-- sharded_id.move_end_blockers says (which concerns the holders of the
-- shard itself, _wait_shard_lock): at the timeout, or when the move is
-- canceled, the call is canceled on the source (the slot, not yet
-- persistent, goes with it) and the move fails (55P03) naming each
-- session that held it up: pid, role, database and the age of its
-- transaction.  A router that dies instead is noticed by the source's
-- check of its client (_remote_open), which ends the call there too.
CREATE FUNCTION sharded_id._move_create_slot(m sharded_id.moves, src text, repl text, timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name;
    watch text := sharded_id._move_conn(m.move_id, 'slot_watch', m.source_node);
    deadline timestamptz := clock_timestamp() + timeout;
    busy boolean := true;
    source_pid integer;
    blockers text;
    result integer;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_create_slot');
    dblink := sharded_id._dblink_schema();
    source_pid := sharded_id._node_call(src, '_node_backend_pid', VARIADIC '{}')::integer;
    -- Sent without waiting: the call is watched.
    EXECUTE format('SELECT %I.dblink_send_query($1, $2)', dblink)
    USING src, sharded_id._node_statement('_node_create_slot', ARRAY[repl]);
    BEGIN
        LOOP
            EXECUTE format('SELECT %I.dblink_is_busy($1) = 1', dblink) INTO busy USING src;
            EXIT WHEN NOT busy;
            IF clock_timestamp() >= deadline THEN
                PERFORM sharded_id._remote_open(watch, m.source_node);
                blockers := sharded_id._node_call(watch, '_node_slot_blockers', source_pid::text);
                RAISE EXCEPTION 'the replication slot of move % was not made on node "%" within %', m.move_id, m.source_node, timeout
                    USING ERRCODE = 'lock_not_available',
                          DETAIL = format('A new logical replication slot waits for every transaction on the server that holds a transaction id, in any database, to end; the move ends none of them. Sessions in such transactions: %s.',
                                          coalesce(blockers, 'none left')),
                          HINT = 'Let those transactions end (or end them, SELECT pg_terminate_backend(pid), if they may be ended), then move again; or raise the move''s timeout.';
            END IF;
            PERFORM pg_catalog.pg_sleep(0.05);
        END LOOP;
    EXCEPTION WHEN query_canceled OR OTHERS THEN
        -- Canceled, timed out or failed: the call ends on the source too.
        BEGIN
            IF busy THEN
                EXECUTE format('SELECT %I.dblink_cancel_query($1)', dblink) USING src;
            END IF;
            PERFORM sharded_id._remote_close(src);
            PERFORM sharded_id._remote_close(watch);
        EXCEPTION WHEN query_canceled OR OTHERS THEN
            NULL;
        END;
        RAISE;
    END;
    PERFORM sharded_id._remote_close(watch);
    -- The result raises the source's error if the call failed; then the
    -- connection is ready for the next query.
    EXECUTE format('SELECT r.v FROM %I.dblink_get_result($1) AS r(v integer)', dblink) INTO result USING src;
    EXECUTE format('SELECT count(*) FROM %I.dblink_get_result($1, false) AS r(v integer)', dblink) INTO result USING src;
END
$$;

COMMENT ON FUNCTION sharded_id._move_create_slot(sharded_id.moves, text, text, interval) IS
'internal: create a move''s replication slot on its source within a timeout, naming the transactions that hold it up if it fails';

CREATE FUNCTION sharded_id._move_create_publication(m sharded_id.moves, timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    repl text := 'sharded_id_move_' || m.shard_id;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_create_publication');
    PERFORM sharded_id._node_call(src, '_node_create_publication', repl, m.schema_name, m.move_id::text);
    PERFORM sharded_id._move_create_slot(m, src, repl, timeout);
END
$$;

COMMENT ON FUNCTION sharded_id._move_create_publication(sharded_id.moves, interval) IS
'internal: step create_publication of an online move: its publication and replication slot on the source';

-- subscribe: the schema without rows, and the subscription that fills it,
-- in one transaction of the target; the subscription's oid journaled.
CREATE FUNCTION sharded_id._move_subscribe(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    repl text := 'sharded_id_move_' || m.shard_id;
    ddl text;
    subscription oid;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_subscribe');
    ddl := sharded_id._node_call(src, '_move_schema_ddl', m.schema_name);
    subscription := sharded_id._node_call(tgt, '_node_subscribe', ddl, repl, sharded_id._move_subscription_connstr(m), repl)::oid;
    UPDATE sharded_id.moves x SET sub_oid = subscription WHERE x.move_id = m.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._move_subscribe(sharded_id.moves) IS
'internal: step subscribe of an online move: the empty schema and the subscription that fills it, on the target';

-- During the copy: the tables whose copy is done (FINISHEDCOPY) but whose
-- synchronization slot is gone from the source or invalidated there, as
-- jsonb: {"missing": how many, "dead": those of them with no sync worker
-- alive on the target, by name, or null}; NULL when every such table has
-- its slot, or when the source does not answer (no evidence).
CREATE FUNCTION sharded_id._move_lost_sync_slots(m sharded_id.moves)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    syncs jsonb;
    lost jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_lost_sync_slots');
    -- {slot name prefix: {"table": name, "alive": worker alive}}
    syncs := sharded_id._node_call(tgt, '_node_sync_tables', m.sub_oid::text)::jsonb;
    IF syncs IS NULL THEN
        RETURN NULL;
    END IF;
    BEGIN
        lost := sharded_id._node_call(sharded_id._move_open(m, 'source'), '_node_lost_sync_slots', syncs::text)::jsonb;
    EXCEPTION WHEN connection_exception OR admin_shutdown OR crash_shutdown OR cannot_connect_now THEN
        RETURN NULL;
    END;
    RETURN lost;
END
$$;

COMMENT ON FUNCTION sharded_id._move_lost_sync_slots(sharded_id.moves) IS
'internal: the copied tables of an online move whose synchronization slot is gone from the source, and which of them no worker still syncs';

-- copy: wait, up to timeout, until the subscription has synchronized every
-- table.
-- A table whose copy is done (FINISHEDCOPY) catches up through its own
-- slot on the source, pg_<subscription>_sync_<table>_<system id>, until
-- its state commits as synchronized.  That slot sits idle through the
-- table's copy; invalidated (max_slot_wal_keep_size,
-- idle_replication_slot_timeout) or dropped, or dropped by the table sync
-- itself just before a stop of the target lost the commit that follows,
-- it leaves the table in FINISHEDCOPY for good, its worker failing again
-- and again.  Such a table seen with no sync worker alive, at 200 polls
-- (10 s at least, whatever the clock does) with nothing but a restarting
-- worker between them, cannot finish: the move fails here and is rolled
-- back.  A sync worker that waits on its commit (for a synchronous standby
-- of the target) stays alive, and a source that does not answer is no
-- evidence: neither fails a move (_move_lost_sync_slots).
CREATE FUNCTION sharded_id._move_copy(m sharded_id.moves, timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    deadline timestamptz := clock_timestamp() + timeout;
    sub jsonb;
    lost jsonb;
    lost_polls integer := 0;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_copy');
    LOOP
        sub := sharded_id._node_call(tgt, '_node_copy_progress', m.sub_oid::text)::jsonb;
        IF sub IS NULL OR NOT (sub->>'enabled')::boolean THEN
            RAISE EXCEPTION 'the subscription of move % stopped during the copy', m.move_id
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'The target''s server log says why.';
        END IF;
        EXIT WHEN (sub->>'unready')::bigint = 0;
        lost := CASE WHEN (sub->>'finished_copy')::bigint > 0 THEN sharded_id._move_lost_sync_slots(m) END;
        lost_polls := CASE WHEN lost IS NULL THEN 0 WHEN lost->>'dead' IS NULL THEN lost_polls ELSE lost_polls + 1 END;
        IF lost_polls >= 200 THEN
            RAISE EXCEPTION 'the copy of shard % cannot finish: the synchronization of % has no usable slot on node "%"',
                            m.shard_id, lost->>'dead', m.source_node
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = 'The target copied the table, but the replication slot its catch-up reads is gone or invalidated on the source; a new move copies the table afresh.';
        END IF;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'the copy of shard % did not finish within %', m.shard_id, timeout
                USING ERRCODE = 'lock_not_available';
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_copy(sharded_id.moves, interval) IS
'internal: step copy of an online move: wait until the subscription has synchronized every table, failing on one that cannot finish';

-- catch_up: wait, up to timeout, until the slot's lag on the source is at
-- most max_lag bytes.
CREATE FUNCTION sharded_id._move_wait_lag(m sharded_id.moves, max_lag bigint, timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    repl text := 'sharded_id_move_' || m.shard_id;
    deadline timestamptz := clock_timestamp() + timeout;
    lag bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_wait_lag');
    LOOP
        lag := sharded_id._node_call(src, '_node_slot_lag', repl)::bigint;
        IF lag IS NULL THEN
            RAISE EXCEPTION 'replication slot "%" is gone from node "%"', repl, m.source_node
                USING ERRCODE = 'undefined_object';
        END IF;
        EXIT WHEN lag <= max_lag;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'the lag of the copy of shard % stayed over % bytes for %', m.shard_id, max_lag, timeout
                USING ERRCODE = 'lock_not_available';
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_wait_lag(sharded_id.moves, bigint, interval) IS
'internal: step catch_up of an online move: wait until its slot''s lag is at most max_lag bytes';

-- compare: a short freeze in which both copies hold the same rows; a
-- snapshot of each keeps that state for the comparison after it.  Writers
-- wait on the source's fence meanwhile.  Every connection it needs is
-- open, and the snapshots' transactions begun (a snapshot is taken by the
-- first query), before writers wait.  A catch-up before it too, so that
-- the frozen one has only the last writes to wait for.
CREATE FUNCTION sharded_id._move_compare_frozen(m sharded_id.moves, timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    snaps text[];
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_compare_frozen');
    PERFORM sharded_id._move_open_freeze(m);
    PERFORM sharded_id._move_set_freeze_idle(m, timeout, freeze_timeout);
    snaps := ARRAY[sharded_id._move_open(m, 'snap_source'), sharded_id._move_open(m, 'snap_target')];
    PERFORM sharded_id._remote_exec(c, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY') FROM unnest(snaps) c;
    PERFORM sharded_id._move_catch_up(m, timeout);
    PERFORM sharded_id._move_freeze_source(m, freeze_timeout);
    PERFORM sharded_id._move_catch_up(m, freeze_timeout);
    PERFORM sharded_id._remote(c, 'SELECT 1') FROM unnest(snaps) c;
    PERFORM sharded_id._remote_close(sharded_id._move_conn(m.move_id, 'freeze', m.source_node));
    PERFORM sharded_id._move_compare(m, snaps[1], snaps[2]);
    PERFORM sharded_id._remote_close(c) FROM unnest(snaps) c;
END
$$;

COMMENT ON FUNCTION sharded_id._move_compare_frozen(sharded_id.moves, interval, interval) IS
'internal: step compare of an online move: compare both copies in snapshots taken in a short freeze of the source';

-- freeze: writers through the router wait from the route lock to the
-- switch; the move waits at most freeze_timeout for the ones in flight.
-- The freeze's connection is opened first, and the target caught up
-- unfrozen, so that the frozen catch-up has only the last writes to wait
-- for.
CREATE FUNCTION sharded_id._move_freeze(m sharded_id.moves, timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_freeze');
    PERFORM sharded_id._move_open_freeze(m);
    PERFORM sharded_id._move_set_freeze_idle(m, timeout, freeze_timeout);
    IF m.method = 'online' THEN
        PERFORM sharded_id._move_catch_up(m, timeout);
    END IF;
    PERFORM sharded_id._move_lock_route(m, freeze_timeout);
    PERFORM sharded_id._move_freeze_source(m, freeze_timeout);
    IF m.method = 'online' THEN
        PERFORM sharded_id._move_catch_up(m, freeze_timeout);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_freeze(sharded_id.moves, interval, interval) IS
'internal: step freeze of a move: the route lock on the router and the freezing transaction on the source, the target caught up';

-- stop_replication: nothing done to the old copy from now on reaches the
-- new one.
CREATE FUNCTION sharded_id._move_stop_replication(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_stop_replication');
    PERFORM sharded_id._node_call(sharded_id._move_conn(m.move_id, 'target', m.target_node),
                                  '_node_disable_subscription', 'sharded_id_move_' || m.shard_id);
END
$$;

COMMENT ON FUNCTION sharded_id._move_stop_replication(sharded_id.moves) IS
'internal: step stop_replication of an online move, in its freeze: disable the subscription on the target';

-- copy_rows, of the dump method: the schema (its tables empty, so that
-- adding their constraints checks no row), then every table's rows through
-- the router, in batches, read in the freeze, and written as they are:
-- with the target in replica mode, as logical replication and pg_restore
-- --disable-triggers do, only triggers enabled ALWAYS or REPLICA fire; and
-- as the table's owner in a security-restricted operation
-- (_insert_as_owner), so that those, the index expressions, check
-- constraints, domain checks and generated columns of the schema's owner
-- never run with the mover's rights.
CREATE FUNCTION sharded_id._move_copy_rows(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    frz text := sharded_id._move_conn(m.move_id, 'freeze', m.source_node);
    ddl text;
    tbl text;
    batch text[];
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_copy_rows');
    ddl := sharded_id._node_call(src, '_move_schema_ddl', m.schema_name);
    PERFORM sharded_id._node_call(tgt, '_node_create_schema', ddl);
    -- Each table by oid, its name quoted on the source.
    FOREACH tbl IN ARRAY sharded_id._node_call(frz, '_node_schema_tables', m.schema_name)::text[]
    LOOP
        PERFORM sharded_id._remote_exec(frz, format(
            'DECLARE shid_rows NO SCROLL CURSOR FOR SELECT r FROM sharded_id._table_rows(%L) r', tbl));
        LOOP
            batch := sharded_id._remote_rows(frz, 'FETCH 10000 FROM shid_rows');
            EXIT WHEN batch IS NULL;
            PERFORM sharded_id._node_call(tgt, '_node_insert_rows', tbl, batch::text);
        END LOOP;
        PERFORM sharded_id._remote_exec(frz, 'CLOSE shid_rows');
    END LOOP;
    PERFORM sharded_id._move_compare(m, frz, tgt);
END
$$;

COMMENT ON FUNCTION sharded_id._move_copy_rows(sharded_id.moves) IS
'internal: step copy_rows of a move by dump, in its freeze: the schema and every row, read on the source, written as each table''s owner on the target';

-- retire_source: move_shard's floor checks again, in the freezing
-- transaction, where no row of the shard changes any more: a row written
-- since they ran (an id planted to stop the shard) fails the move here,
-- before the source retires, and it rolls back with the shard writable on
-- the source.  The target's copy and the source's high-water mark too: the
-- target raises its floor over both.  Then, in the freezing transaction,
-- the retirement and its high-water mark (journaled), and the fence of the
-- old copy, which refuses every write to it, DELETE and TRUNCATE included
-- (_fence_old_copy); then commit.
CREATE FUNCTION sharded_id._move_retire_source(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    frz text := sharded_id._move_conn(m.move_id, 'freeze', m.source_node);
    floors jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_retire_source');
    floors := sharded_id._node_call(frz, '_node_frozen_floors', m.shard_id::text, m.schema_name)::jsonb;
    PERFORM sharded_id._node_call(tgt, '_node_check_floors', m.shard_id::text, m.schema_name, floors ->> 'layout',
                                  floors ->> 'high_water', format('the source, node "%s",', m.source_node));
    UPDATE sharded_id.moves x
    SET high_water = sharded_id._node_call(frz, '_node_retire', m.shard_id::text, m.move_id::text, m.schema_name)::bigint
    WHERE x.move_id = m.move_id;
    PERFORM sharded_id._remote_exec(frz, 'COMMIT');
    PERFORM sharded_id._remote_close(frz);
    PERFORM sharded_id._move_hold('retired');
END
$$;

COMMENT ON FUNCTION sharded_id._move_retire_source(sharded_id.moves) IS
'internal: step retire_source of a move, in its freeze: check the floors again, then retire the shard on the source and fence its old copy, and commit';

-- One step of a move, by its function; no transaction control, so that
-- move_shard can catch its error and commit between steps.  Outside the
-- final freeze, the move's source and target connections are opened, or
-- checked and reused, first; inside it (stop_replication to switch), the
-- connections the freeze step checked are used without a round trip more,
-- and a dead one fails the step.
CREATE FUNCTION sharded_id._move_step(move_id bigint, step text, max_lag bigint,
                                      timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_step');
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_step.move_id;
    IF step NOT IN ('stop_replication', 'retire_source', 'register_target', 'switch') THEN
        PERFORM sharded_id._move_open(m, 'source');
        PERFORM sharded_id._move_open(m, 'target');
    END IF;
    CASE step
    WHEN 'record_objects' THEN PERFORM sharded_id._move_record_objects(m);
    WHEN 'create_publication' THEN PERFORM sharded_id._move_create_publication(m, timeout);
    WHEN 'subscribe' THEN PERFORM sharded_id._move_subscribe(m);
    WHEN 'copy' THEN PERFORM sharded_id._move_copy(m, timeout);
    WHEN 'catch_up' THEN PERFORM sharded_id._move_wait_lag(m, max_lag, timeout);
    WHEN 'compare' THEN PERFORM sharded_id._move_compare_frozen(m, timeout, freeze_timeout);
    WHEN 'freeze' THEN PERFORM sharded_id._move_freeze(m, timeout, freeze_timeout);
    WHEN 'stop_replication' THEN PERFORM sharded_id._move_stop_replication(m);
    WHEN 'copy_rows' THEN PERFORM sharded_id._move_copy_rows(m);
    WHEN 'retire_source' THEN PERFORM sharded_id._move_retire_source(m);
    WHEN 'register_target' THEN
        PERFORM sharded_id._move_register_target(m);
        PERFORM sharded_id._move_hold('registered');
    WHEN 'switch' THEN PERFORM sharded_id._move_switch(m);
    ELSE
        RAISE EXCEPTION 'unknown move step "%"', step USING ERRCODE = 'internal_error';
    END CASE;
END
$$;

COMMENT ON FUNCTION sharded_id._move_step(bigint, text, bigint, interval, interval) IS
'internal: take one step of a move, by the function of that step';

-- The arguments of move_shard and rebalance that are not a shard or a
-- node, checked before anything is read or changed: a method move_shard
-- knows (NULL: chosen per source), a PL/Proxy cluster of this router, a
-- lag of at least 0 bytes and timeouts longer than nothing.
CREATE FUNCTION sharded_id._check_move_arguments(method text, cluster name, max_lag bigint,
                                                 timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._check_move_arguments');
    IF method IS NOT NULL AND method NOT IN ('online', 'dump') THEN
        RAISE EXCEPTION 'move method "%" is not online or dump', method
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cluster IS NULL THEN
        RAISE EXCEPTION 'cluster must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
                   WHERE s.srvname = cluster AND w.fdwname = 'plproxy') THEN
        RAISE EXCEPTION 'PL/Proxy cluster "%" does not exist', cluster
            USING ERRCODE = 'undefined_object',
                  DETAIL = 'A move switches the shard in the cluster that routes its writers.',
                  HINT = 'Name the cluster that sharded_id.apply_shard_map made, or make it with sharded_id.apply_shard_map(cluster).';
    END IF;
    IF max_lag < 0 THEN
        RAISE EXCEPTION 'max_lag % is out of range', max_lag
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The lag a move waits for before its comparison is a number of bytes, 0 or more.';
    END IF;
    IF timeout <= interval '0' OR freeze_timeout <= interval '0' THEN
        RAISE EXCEPTION 'timeout % and freeze_timeout % must be longer than 0', timeout, freeze_timeout
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._check_move_arguments(text, name, bigint, interval, interval) IS
'internal: refuse a bad method, cluster, lag or timeout of move_shard or rebalance before anything is done';


--
-- move_shard's checks, before anything is journaled or changed.  Each
-- fails with its own error; the shard's move lock and the connections are
-- released by the caller (_move_plan) when one does.
--

-- The arguments, dblink, and, unless a dry run, the shard's move lock for
-- this move's whole life: a move of the shard running in another session
-- stops this one here.  Nothing of an earlier call in this session is
-- reused: its connections close.
CREATE FUNCTION sharded_id._move_check_call(shard_id integer, target_node text, method text, dry_run boolean,
                                            cluster name, max_lag bigint, timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_call');
    IF shard_id IS NULL OR target_node IS NULL OR dry_run IS NULL OR cluster IS NULL
       OR max_lag IS NULL OR timeout IS NULL OR freeze_timeout IS NULL THEN
        RAISE EXCEPTION 'arguments of move_shard must not be null, except method'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM sharded_id._check_move_arguments(method, cluster, max_lag, timeout, freeze_timeout);
    PERFORM sharded_id._dblink_schema();
    PERFORM sharded_id._remote_close_all('sharded_id_');
    IF NOT dry_run THEN
        PERFORM sharded_id._move_claim(shard_id);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_call(integer, text, text, boolean, name, bigint, interval, interval) IS
'internal: check move_shard''s arguments and take the shard''s move lock, unless a dry run';

-- The sharded_id of the router, the source and the target, and the
-- router's sharded_id_router, are one version.
CREATE FUNCTION sharded_id._move_check_versions(src text, tgt text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    q text := 'SELECT jsonb_build_object(''version'', extversion) FROM pg_extension WHERE extname = ''sharded_id''';
    router text := (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'sharded_id');
    router_ext text := (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'sharded_id_router');
    source text := sharded_id._remote_json(src, q) ->> 'version';
    target text := sharded_id._remote_json(tgt, q) ->> 'version';
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_versions');
    IF source IS DISTINCT FROM router OR target IS DISTINCT FROM router OR router_ext IS DISTINCT FROM router THEN
        RAISE EXCEPTION 'sharded_id versions differ: router %, sharded_id_router %, source %, target %',
                        router, coalesce(router_ext, 'none'), coalesce(source, 'none'), coalesce(target, 'none')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run ALTER EXTENSION sharded_id UPDATE on every node and on the router, and ALTER EXTENSION sharded_id_router UPDATE on the router.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_versions(text, text) IS
'internal: fail unless the router, the source and the target run the same version of sharded_id';

-- The source registers the shard the map names it for; returns its schema.
CREATE FUNCTION sharded_id._move_check_source_holds(src text, source text, shard_id integer)
RETURNS name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_source_holds');
    schema := sharded_id._node_call(src, '_node_shard_schema', shard_id::text);
    IF schema IS NULL THEN
        RAISE EXCEPTION 'node "%" does not hold shard %', source, shard_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The shard map names the node, but its sharded_id.shards has no such shard.';
    END IF;
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_source_holds(text, text, integer) IS
'internal: fail unless the source registers the shard; return its schema';

-- The target holds neither the shard nor a schema of its name.
CREATE FUNCTION sharded_id._move_check_target_free(tgt text, target_node text, shard_id integer, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_target_free');
    IF sharded_id._node_call(tgt, '_node_holds_shard_or_schema', shard_id::text, schema)::boolean THEN
        RAISE EXCEPTION 'node "%" already holds shard % or a schema "%"', target_node, shard_id, schema
            USING ERRCODE = 'duplicate_object';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_target_free(text, text, integer, name) IS
'internal: fail when the target holds the shard or a schema of its name';

-- Rows are copied and compared with row security off: a mover subject to
-- it would fail half-way, or copy only what it sees.
CREATE FUNCTION sharded_id._move_check_row_security(src text, tgt text, source text, target_node text,
                                                    shard_id integer, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tables text;
    n record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_row_security');
    tables := sharded_id._node_call(src, '_node_row_security_tables', schema);
    IF tables IS NULL THEN
        RETURN;
    END IF;
    FOR n IN SELECT * FROM (VALUES (1, source, src), (2, target_node, tgt)) v(k, node, conn) ORDER BY k LOOP
        IF NOT sharded_id._node_call(n.conn, '_node_bypasses_row_security', VARIADIC '{}')::boolean THEN
            RAISE EXCEPTION 'the role that moves shard % on node "%" cannot bypass row security', shard_id, n.node
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('Tables of schema "%s" have row security: %s. A move copies and compares every row, which row security would filter.', schema, tables),
                      HINT = 'Reach the nodes as a superuser or a role with BYPASSRLS.';
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_row_security(text, text, text, text, integer, name) IS
'internal: fail when the shard has tables with row security and the mover cannot bypass it on the source or the target';

-- The method of the move: the one asked for, which the source must allow,
-- or, when NULL, online if the source has wal_level = logical, else dump,
-- with a warning.
CREATE FUNCTION sharded_id._move_choose_method(src text, source text, shard_id integer, method text)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    wal_level text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_choose_method');
    wal_level := sharded_id._node_call(src, '_node_wal_level', VARIADIC '{}');
    IF method IS NULL THEN
        method := CASE WHEN wal_level = 'logical' THEN 'online' ELSE 'dump' END;
        IF method = 'dump' THEN
            RAISE WARNING 'node "%" has wal_level = %, so shard % moves by the dump method', source, wal_level, shard_id
                USING DETAIL = 'An online move needs wal_level = logical on the source. The dump method freezes the shard''s writes for as long as its copy takes, which grows with the shard.',
                      HINT = 'Set wal_level = logical on that node and restart it before moving, or pass method => ''dump'' to choose the dump method.';
        END IF;
    ELSIF method = 'online' AND wal_level <> 'logical' THEN
        RAISE EXCEPTION 'an online move needs wal_level = logical on node "%"', source
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Set wal_level = logical there, or move with method => ''dump''.';
    END IF;
    RETURN method;
END
$$;

COMMENT ON FUNCTION sharded_id._move_choose_method(text, text, integer, text) IS
'internal: the method of a move: the one asked for, if the source allows it, or online when the source has wal_level = logical, else dump';

-- An online move: updates and deletes replicate by replica identity;
-- unlogged tables do not replicate at all.
CREATE FUNCTION sharded_id._move_check_replica_identity(src text, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tables text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_replica_identity');
    tables := sharded_id._node_call(src, '_node_tables_without_identity', schema);
    IF tables IS NOT NULL THEN
        RAISE EXCEPTION 'an online move needs a primary key or replica identity on every logged table'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('These tables of schema "%s" lack one: %s.', schema, tables),
                  HINT = 'Move with method => ''dump''.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_replica_identity(text, name) IS
'internal: fail an online move of a shard with an unlogged table or a table without a primary key or replica identity';

-- The target raises the shard's floor over the source's largest ids and
-- its high-water mark: both must be ids a floor may be raised over
-- (sharded_id._check_floor), or the move stops here, before it changes
-- anything.
CREATE FUNCTION sharded_id._move_check_floors(src text, tgt text, source text, shard_id integer)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_floors');
    s := sharded_id._node_call(src, '_node_floors', shard_id::text)::jsonb;
    PERFORM sharded_id._node_call(tgt, '_check_floor', shard_id::text, s ->> 'high_water', s ->> 'layout',
                                  format('the source, node "%s",', source));
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_floors(text, text, text, integer) IS
'internal: fail unless the target may raise the shard''s floor over the source''s ids and high-water mark';

-- The steps of a move by a method.
CREATE FUNCTION sharded_id._move_steps(method text)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_steps');
    SELECT CASE method
           WHEN 'online' THEN ARRAY['record_objects', 'create_publication', 'subscribe', 'copy', 'catch_up', 'compare', 'catch_up',
                                    'freeze', 'stop_replication', 'retire_source', 'register_target', 'switch']
           ELSE ARRAY['record_objects', 'freeze', 'copy_rows', 'retire_source', 'register_target', 'switch'] END
$$;

COMMENT ON FUNCTION sharded_id._move_steps(text) IS
'internal: the steps of a move by a method, in order';

-- The plan of a move, checked: its source, the shard's schema, the method
-- and the steps; no steps (NULL) when the shard is on the target already
-- or for a dry run, which prints the plan.  A failed check closes the
-- connections and releases the shard's move lock.
CREATE FUNCTION sharded_id._move_plan(shard_id integer, target_node text, requested_method text, cluster name, dry_run boolean,
                                      OUT source_node text, OUT schema_name name, OUT method text, OUT steps text[])
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text;
    tgt text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_plan');
    source_node := (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = _move_plan.shard_id);
    IF source_node IS NULL THEN
        RAISE EXCEPTION 'shard % is not in the shard map', shard_id
            USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT EXISTS (SELECT FROM sharded_id.nodes x WHERE x.node_name = target_node) THEN
        RAISE EXCEPTION 'data node "%" does not exist', target_node
            USING ERRCODE = 'undefined_object';
    END IF;
    -- The map after the switch must be one the router can apply.
    PERFORM sharded_id._cluster_mapping(cluster, shard_id, target_node);
    IF source_node = target_node THEN
        RAISE NOTICE 'shard % is already on node "%"', shard_id, target_node;
        PERFORM sharded_id._remote_close_all('sharded_id_');
        RETURN;
    END IF;
    src := sharded_id._move_conn(NULL, 'source', source_node);
    tgt := sharded_id._move_conn(NULL, 'target', target_node);
    PERFORM sharded_id._remote_open(src, source_node);
    PERFORM sharded_id._remote_open(tgt, target_node);
    PERFORM sharded_id._move_check_versions(src, tgt);
    schema_name := sharded_id._move_check_source_holds(src, source_node, shard_id);
    PERFORM sharded_id._move_check_target_free(tgt, target_node, shard_id, schema_name);
    PERFORM sharded_id._move_check_row_security(src, tgt, source_node, target_node, shard_id, schema_name);
    method := sharded_id._move_choose_method(src, source_node, shard_id, requested_method);
    IF method = 'online' THEN
        PERFORM sharded_id._move_check_replica_identity(src, schema_name);
        PERFORM sharded_id._move_check_online_owners(src, tgt, shard_id, schema_name, target_node);
    END IF;
    PERFORM sharded_id._move_check_floors(src, tgt, source_node, shard_id);
    PERFORM sharded_id._move_check_schema(src, schema_name);
    PERFORM sharded_id._remote_close_all('sharded_id_');
    IF dry_run THEN
        RAISE NOTICE 'would move shard % (schema "%") from node "%" to node "%", method %: %',
                     shard_id, schema_name, source_node, target_node, method, array_to_string(sharded_id._move_steps(method), ', ');
        RETURN;
    END IF;
    steps := sharded_id._move_steps(method);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    PERFORM sharded_id._remote_close_all('sharded_id_');
    PERFORM sharded_id._unlock_shard(_move_plan.shard_id, 'move');
    RAISE;
END
$$;

COMMENT ON FUNCTION sharded_id._move_plan(integer, text, text, name, boolean) IS
'internal: check a move before anything is journaled, and return its source, schema, method and steps (none when nothing is to move)';

-- The unfinished move of a shard, if any.
CREATE FUNCTION sharded_id._move_unfinished(shard_id integer)
RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_unfinished');
    SELECT x.move_id FROM sharded_id.moves x WHERE x.shard_id = _move_unfinished.shard_id AND x.finished_at IS NULL
$$;

COMMENT ON FUNCTION sharded_id._move_unfinished(integer) IS
'internal: the unfinished move of a shard, or NULL';

-- The finished moves of a shard (of every shard: NULL) whose cleanup is
-- pending, oldest first.
CREATE FUNCTION sharded_id._move_pending_cleanups(shard_id integer)
RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_pending_cleanups');
    SELECT coalesce(array_agg(x.move_id ORDER BY x.move_id), '{}') FROM sharded_id.moves x
    WHERE (_move_pending_cleanups.shard_id IS NULL OR x.shard_id = _move_pending_cleanups.shard_id)
      AND x.finished_at IS NOT NULL
      AND (x.state = 'cleanup pending' OR EXISTS (SELECT FROM sharded_id.move_cleanup c WHERE c.move_id = x.move_id))
$$;

COMMENT ON FUNCTION sharded_id._move_pending_cleanups(integer) IS
'internal: the finished moves of a shard, or of every shard, whose cleanup is pending';

-- Journal a move about to start.
CREATE FUNCTION sharded_id._move_journal_start(shard_id integer, source_node text, target_node text, method text,
                                               cluster name, schema_name name)
RETURNS sharded_id.moves
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_journal_start');
    INSERT INTO sharded_id.moves (shard_id, source_node, target_node, method, cluster, schema_name)
    VALUES (shard_id, source_node, target_node, method, cluster, schema_name)
    RETURNING *
$$;

COMMENT ON FUNCTION sharded_id._move_journal_start(integer, text, text, text, name, name) IS
'internal: journal a move about to start';

-- Take a step of a move: its hold point, then the step; a failure is
-- caught and returned, and the source's freeze ends at once (closing its
-- connection rolls it back, unless the retirement committed).  The freeze
-- step's journal entry begins when it is taken, which the freeze's length
-- counts from (_move_end_freeze).  Returns the error, and whether the
-- router's freeze ends here (the switch, or any failure).
CREATE FUNCTION sharded_id._move_take_step(m sharded_id.moves, step text, max_lag bigint, timeout interval, freeze_timeout interval,
                                           OUT error text, OUT error_state text,
                                           OUT error_detail text, OUT canceled boolean, OUT ends_freeze boolean)
RETURNS record
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_take_step');
    UPDATE sharded_id.move_steps x SET begun_at = clock_timestamp()
    WHERE x.move_id = m.move_id AND x.step = 'freeze' AND _move_take_step.step = 'freeze'
      AND x.step_no = (SELECT max(y.step_no) FROM sharded_id.move_steps y WHERE y.move_id = m.move_id);
    BEGIN
        PERFORM sharded_id._move_hold(step);
        PERFORM sharded_id._move_step(m.move_id, step, max_lag, timeout, freeze_timeout);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        GET STACKED DIAGNOSTICS error = MESSAGE_TEXT, error_state = RETURNED_SQLSTATE, error_detail = PG_EXCEPTION_DETAIL;
        PERFORM sharded_id._remote_close(sharded_id._move_conn(m.move_id, 'freeze', m.source_node));
    END;
    canceled := error_state IS NOT DISTINCT FROM '57014';
    ends_freeze := step = 'switch' OR error IS NOT NULL;
END
$$;

COMMENT ON FUNCTION sharded_id._move_take_step(sharded_id.moves, text, bigint, interval, interval) IS
'internal: take a step of a move, and return its error instead of raising it';

-- A move canceled (a cancel or statement_timeout) at a step: the writers
-- free to go on, the journal saying where, nothing left open; the caller
-- commits, rolls the move back when it can (_move_undo_canceled), commits
-- and fails (_move_report_canceled).  A cancel before the source retires
-- the shard journals the rollback as the step 'recover' here.
CREATE FUNCTION sharded_id._move_stop_canceled(m sharded_id.moves, step text, error text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_stop_canceled');
    PERFORM sharded_id._remote_close_all('sharded_id_');
    PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
    UPDATE sharded_id.moves x SET error = format('%s: %s', step, _move_stop_canceled.error), updated_at = clock_timestamp()
    WHERE x.move_id = m.move_id;
    IF step NOT IN ('retire_source', 'register_target', 'switch') THEN
        PERFORM sharded_id._move_journal_step(m.move_id, 'recover');
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_stop_canceled(sharded_id.moves, text, text) IS
'internal: journal a canceled move''s step and error, and release its connections and route lock';

-- After a cancel (committed by _move_stop_canceled): a move canceled before
-- its source retired the shard is rolled back at once, on fresh
-- connections, as a failed step is (_move_resolve): its publication, slot,
-- subscription, marks and the target's partial copy dropped, as
-- move_cleanup lists them.  Returns NULL when that is done, else why the
-- move is left unfinished: canceled from the retirement on (recovery may
-- have to finish it, which a cancel does not ask for), or a node that did
-- not answer.  A second cancel during the rollback escapes: the caller's
-- transaction aborts, and recover_moves() (or the next move of the shard)
-- drops what is left.
CREATE FUNCTION sharded_id._move_undo_canceled(m sharded_id.moves, step text)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    moved boolean;
    recovery_error text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_undo_canceled');
    IF step IN ('retire_source', 'register_target', 'switch') THEN
        RETURN format('it was canceled at step "%s", after which it may have to be finished', step);
    END IF;
    SELECT * INTO moved, recovery_error FROM sharded_id._move_try_resolve(m.move_id);
    PERFORM sharded_id._remote_close_all('sharded_id_');
    IF moved IS false THEN
        RETURN NULL;
    END IF;
    RETURN coalesce('rolling it back failed: ' || recovery_error, 'recovery found it further on than the cancel');
END
$$;

COMMENT ON FUNCTION sharded_id._move_undo_canceled(sharded_id.moves, text) IS
'internal: roll back a move canceled before its source retired the shard, dropping what it made on the nodes; NULL when done, else why it is left unfinished';

-- The error of a canceled move: rolled back (why_left NULL), or left for
-- recover_moves(), saying why.
CREATE FUNCTION sharded_id._move_report_canceled(m sharded_id.moves, step text, error text, why_left text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_report_canceled');
    IF why_left IS NULL THEN
        RAISE EXCEPTION 'move % of shard % to node "%" was canceled at step "%": %', m.move_id, m.shard_id, m.target_node, step, error
            USING ERRCODE = 'query_canceled',
                  DETAIL = format('The move was rolled back: the shard stays on node "%s", and what the move made on the nodes is dropped.', m.source_node);
    END IF;
    RAISE EXCEPTION 'move % of shard % to node "%" was canceled at step "%": %', m.move_id, m.shard_id, m.target_node, step, error
        USING ERRCODE = 'query_canceled',
              DETAIL = format('The move is unfinished (%s); writers to the shard go on.', why_left),
              HINT = 'CALL sharded_id.recover_moves() to finish it or roll it back.';
END
$$;

COMMENT ON FUNCTION sharded_id._move_report_canceled(sharded_id.moves, text, text, text) IS
'internal: the error of a canceled move: rolled back, or unfinished and why';

-- The end of the router's freeze, at the switch or at a failed step: the
-- freeze's length (from the freeze step's start, if taken) and the step's
-- error journaled, committed by the caller with the route lock still
-- held; writers then find the new map.
CREATE FUNCTION sharded_id._move_end_freeze(m sharded_id.moves, step text, error text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    freeze_began timestamptz;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_end_freeze');
    freeze_began := (SELECT max(x.begun_at) FROM sharded_id.move_steps x WHERE x.move_id = m.move_id AND x.step = 'freeze');
    UPDATE sharded_id.moves x
    SET freeze_ms = extract(epoch FROM clock_timestamp() - freeze_began) * 1000,
        error = CASE WHEN _move_end_freeze.error IS NOT NULL THEN format('%s: %s', step, _move_end_freeze.error) END
    WHERE x.move_id = m.move_id AND (freeze_began IS NOT NULL OR _move_end_freeze.error IS NOT NULL);
END
$$;

COMMENT ON FUNCTION sharded_id._move_end_freeze(sharded_id.moves, text, text) IS
'internal: journal the length of a move''s freeze and its failed step''s error';

-- After the switch committed and the route lock is released: the ops
-- tables follow, committed apart from the cleanup, which drops the old
-- copy they read until now.  Cleanup tries again if this fails.
CREATE FUNCTION sharded_id._move_follow_ops_after_switch(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_follow_ops_after_switch');
    BEGIN
        PERFORM sharded_id._move_follow_ops(m);
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'the ops tables of shard % still read node "%": %', m.shard_id, m.source_node, SQLERRM;
    END;
END
$$;

COMMENT ON FUNCTION sharded_id._move_follow_ops_after_switch(sharded_id.moves) IS
'internal: point a switched shard''s ops tables at its new node, with a warning when they cannot be';

-- Finish or roll back a move whose step failed, as the nodes allow
-- (_move_resolve); returns whether it moved (NULL: switched, to be
-- committed before _move_resolve runs again), and the error of a recovery
-- that failed too.
CREATE FUNCTION sharded_id._move_try_resolve(move_id bigint, OUT moved boolean, OUT recovery_error text)
RETURNS record
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_try_resolve');
    BEGIN
        moved := sharded_id._move_resolve(move_id);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS recovery_error = MESSAGE_TEXT;
    END;
END
$$;

COMMENT ON FUNCTION sharded_id._move_try_resolve(bigint) IS
'internal: finish or roll back a move whose step failed, and return the outcome or the error of that';

-- What move_shard reports at its end: the move done (a notice), or its
-- failed step, after which the move finished (a warning), rolled back or
-- could not be recovered (errors with the step's SQLSTATE).
CREATE FUNCTION sharded_id._move_report(move_id bigint, step text, error text, error_state text, error_detail text,
                                        moved boolean, recovery_error text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_report');
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_report.move_id;
    IF error IS NULL THEN
        RAISE NOTICE 'moved shard % (schema "%") from node "%" to node "%" by method %: write freeze % ms, high-water mark %',
                     m.shard_id, m.schema_name, m.source_node, m.target_node, m.method,
                     round(m.freeze_ms::numeric, 1), m.high_water;
    ELSIF recovery_error IS NOT NULL THEN
        RAISE EXCEPTION 'move % of shard % to node "%" failed at step "%": %', m.move_id, m.shard_id, m.target_node, step, error
            USING ERRCODE = error_state,
                  DETAIL = format('Finishing or rolling back the move failed too: %s', recovery_error),
                  HINT = 'CALL sharded_id.recover_moves() once both nodes answer.';
    ELSIF moved THEN
        RAISE WARNING 'move % of shard % to node "%" finished after step "%" failed: %',
                      m.move_id, m.shard_id, m.target_node, step, error;
    ELSE
        RAISE EXCEPTION 'move % of shard % to node "%" failed at step "%": %', m.move_id, m.shard_id, m.target_node, step, error
            USING ERRCODE = error_state,
                  DETAIL = coalesce(error_detail || ' ', '') || 'The move was rolled back: the shard stays on node "' || m.source_node || '".';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_report(bigint, text, text, text, text, boolean, text) IS
'internal: report how a move ended: a notice when it moved, a warning when it finished after a failed step, else an error';

-- Journal the step a move is about to take; the caller commits it before
-- taking it.
CREATE FUNCTION sharded_id._move_journal_step(move_id bigint, step text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_journal_step');
    INSERT INTO sharded_id.move_steps (move_id, step_no, step)
    SELECT _move_journal_step.move_id, coalesce(max(s.step_no), 0) + 1, _move_journal_step.step
    FROM sharded_id.move_steps s WHERE s.move_id = _move_journal_step.move_id;
    UPDATE sharded_id.moves m SET state = step, updated_at = clock_timestamp()
    WHERE m.move_id = _move_journal_step.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._move_journal_step(bigint, text) IS
'internal: journal the step a move is about to take';

-- Finish or roll back a move from what the nodes say (_move_resolve), and
-- again after each switch of the map it makes: the switch committed, the
-- ops tables followed (_move_follow_ops_after_switch) and committed, then
-- the cleanup, so that no router crash comes between a committed drop of
-- the old copy and an uncommitted switch.  moved: whether the shard moved.
-- With catch_error, an error of the recovery is returned in recovery_error
-- (_move_try_resolve) instead of raised.  Both are outputs, INOUT only so
-- that the procedure's signature lists them, as CALL does (the values
-- passed in are ignored).  The caller commits at the end.  The procedure
-- commits, so it has no SET clause: its search_path is pinned at its start
-- and again after every COMMIT.
CREATE PROCEDURE sharded_id._move_settle(move_id bigint, catch_error boolean,
                                         INOUT moved boolean, INOUT recovery_error text)
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM sharded_id._superuser_only('sharded_id._move_settle');
    moved := NULL;
    recovery_error := NULL;
    LOOP
        IF catch_error THEN
            SELECT * INTO moved, recovery_error FROM sharded_id._move_try_resolve(_move_settle.move_id);
        ELSE
            moved := sharded_id._move_resolve(_move_settle.move_id);
        END IF;
        EXIT WHEN moved IS NOT NULL OR recovery_error IS NOT NULL;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._move_hold('recover_switched');
        PERFORM sharded_id._move_follow_ops_after_switch(x) FROM sharded_id.moves x
        WHERE x.move_id = _move_settle.move_id;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._move_hold('recover_followed');
    END LOOP;
END
$$;

COMMENT ON PROCEDURE sharded_id._move_settle(bigint, boolean, boolean, text) IS
'internal: finish or roll back a move, committing each switch of the map and its ops tables before the cleanup; CALLed by move_shard';

-- Before a new move of a shard: the move of it that did not end, finished
-- or rolled back (_move_settle), then what finished moves of it could not
-- drop, dropped: its objects bear the names the new move makes.  Fails,
-- the shard's move lock released, while they cannot be dropped.  The
-- procedure commits, so it has no SET clause: its search_path is pinned
-- at its start and again after every COMMIT and every CALL.
CREATE PROCEDURE sharded_id._move_finish_earlier(shard_id integer)
LANGUAGE plpgsql
AS $$
DECLARE
    earlier bigint;
    moved boolean;
    recovery_error text;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM sharded_id._superuser_only('sharded_id._move_finish_earlier');
    earlier := sharded_id._move_unfinished(shard_id);
    IF earlier IS NOT NULL THEN
        RAISE NOTICE 'finishing move % of shard %, which did not end', earlier, shard_id;
        CALL sharded_id._move_settle(earlier, false, moved, recovery_error);
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._remote_close_all('sharded_id_');
    END IF;
    FOREACH earlier IN ARRAY sharded_id._move_pending_cleanups(shard_id) LOOP
        RAISE NOTICE 'dropping what move % of shard % left on the nodes', earlier, shard_id;
        PERFORM sharded_id._move_follow_ops_after_switch(x) FROM sharded_id.moves x
        WHERE x.move_id = earlier AND x.outcome = 'moved';
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        IF NOT sharded_id._move_deferred_cleanup(earlier) THEN
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            PERFORM sharded_id._remote_close_all('sharded_id_');
            PERFORM sharded_id._unlock_shard(shard_id, 'move');
            RAISE EXCEPTION 'move % of shard % left objects on the nodes that cannot be dropped yet', earlier, shard_id
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = 'A new move of the shard would make objects of the same names.',
                      HINT = 'CALL sharded_id.recover_moves() once every node answers, then move the shard.';
        END IF;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._remote_close_all('sharded_id_');
    END LOOP;
END
$$;

COMMENT ON PROCEDURE sharded_id._move_finish_earlier(integer) IS
'internal: before a move of a shard, finish or roll back its move that did not end and drop what finished moves of it left on the nodes; CALLed by move_shard';

-- A move, as its checks and steps.  The procedure commits between them,
-- so it has no SET clause: its body only calls functions of the
-- extension, which pin their search_path, and compares nothing itself.
CREATE PROCEDURE sharded_id.move_shard(shard_id integer, target_node text,
                                       method text DEFAULT NULL,
                                       dry_run boolean DEFAULT false,
                                       cluster name DEFAULT 'sharded_id',
                                       max_lag bigint DEFAULT 1048576,
                                       timeout interval DEFAULT '1 hour',
                                       freeze_timeout interval DEFAULT '10 s')
LANGUAGE plpgsql
AS $$
DECLARE
    m sharded_id.moves;
    plan record;
    step text;
    taken record;
    moved boolean;
    recovery_error text;
BEGIN
    -- A procedure cannot SET search_path (it COMMITs): pinned here, and
    -- again after every COMMIT and every CALL, which end the transaction.
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM sharded_id._move_check_call(shard_id, target_node, method, dry_run, cluster, max_lag, timeout, freeze_timeout);
    IF NOT dry_run THEN
        -- First, whatever earlier moves of this shard left.
        CALL sharded_id._move_finish_earlier(shard_id);
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END IF;

    SELECT * INTO plan FROM sharded_id._move_plan(shard_id, target_node, method, cluster, dry_run);
    IF plan.steps IS NULL THEN
        PERFORM sharded_id._unlock_shard(shard_id, 'move');
        RETURN;
    END IF;

    m := sharded_id._move_journal_start(shard_id, plan.source_node, target_node, plan.method, cluster, plan.schema_name);
    FOREACH step IN ARRAY plan.steps LOOP
        PERFORM sharded_id._move_journal_step(m.move_id, step);
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        SELECT * INTO taken FROM sharded_id._move_take_step(m, step, max_lag, timeout, freeze_timeout);
        IF taken.canceled THEN
            PERFORM sharded_id._move_stop_canceled(m, step, taken.error);
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            recovery_error := sharded_id._move_undo_canceled(m, step);
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
            PERFORM sharded_id._move_report_canceled(m, step, taken.error, recovery_error);
        END IF;
        IF taken.ends_freeze THEN
            PERFORM sharded_id._move_end_freeze(m, step, taken.error);
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
            IF taken.error IS NULL THEN
                PERFORM sharded_id._move_follow_ops_after_switch(m);
            END IF;
        END IF;
        EXIT WHEN taken.error IS NOT NULL;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END LOOP;

    IF taken.error IS NULL THEN
        PERFORM sharded_id._move_journal_step(m.move_id, 'cleanup');
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._move_hold('cleanup');
        CALL sharded_id._move_settle(m.move_id, false, moved, recovery_error);
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    ELSE
        -- A step failed: finish the move or roll it back, as the nodes allow.
        PERFORM sharded_id._move_journal_step(m.move_id, 'recover');
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        CALL sharded_id._move_settle(m.move_id, true, moved, recovery_error);
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END IF;
    COMMIT;
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM sharded_id._remote_close_all('sharded_id_');
    PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
    PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
    PERFORM sharded_id._move_report(m.move_id, step, taken.error, taken.error_state, taken.error_detail,
                                    moved, recovery_error);
END
$$;

COMMENT ON PROCEDURE sharded_id.move_shard(integer, text, text, boolean, name, bigint, interval, interval) IS
'move a logical shard to another data node, online (logical replication) or by dump, journaled step by step in sharded_id.moves; writers through sharded_id.route wait out the switch; CALL it on the router, outside a transaction block';

-- A switched move's ops tables follow before it is recovered, committed
-- apart from the cleanup that drops the old copy.
CREATE FUNCTION sharded_id._move_recover_begin(move_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_recover_begin');
    PERFORM sharded_id._move_journal_step(move_id, 'recover');
    PERFORM sharded_id._move_follow_ops_after_switch(x) FROM sharded_id.moves x
    WHERE x.move_id = _move_recover_begin.move_id
      AND x.target_node = (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = x.shard_id);
END
$$;

COMMENT ON FUNCTION sharded_id._move_recover_begin(bigint) IS
'internal: journal the recovery of a move, and point a switched shard''s ops tables at its new node';

-- The unfinished moves, oldest first.
CREATE FUNCTION sharded_id._moves_unfinished()
RETURNS TABLE (move_id bigint, shard_id integer, state text)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._moves_unfinished');
    SELECT x.move_id, x.shard_id, x.state FROM sharded_id.moves x WHERE x.finished_at IS NULL ORDER BY x.move_id
$$;

COMMENT ON FUNCTION sharded_id._moves_unfinished() IS
'internal: the moves that did not end, oldest first';

-- The move lock of a move's shard (_move_claim); returns the shard.
CREATE FUNCTION sharded_id._move_claim_move(move_id bigint)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard integer := (SELECT x.shard_id FROM sharded_id.moves x WHERE x.move_id = _move_claim_move.move_id);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_claim_move');
    PERFORM sharded_id._move_claim(shard);
    RETURN shard;
END
$$;

COMMENT ON FUNCTION sharded_id._move_claim_move(bigint) IS
'internal: take the move lock of a move''s shard for this session, and return the shard';

CREATE PROCEDURE sharded_id.recover_moves()
LANGUAGE plpgsql
AS $$
DECLARE
    m record;
    moved boolean;
    pending bigint;
    shard integer;
    err text;
    err_state text;
    err_detail text;
    err_hint text;
    first_err text;
    first_state text;
    first_detail text;
    first_hint text;
    failures integer := 0;
BEGIN
    -- A procedure cannot SET search_path (it COMMITs): pinned here, and
    -- again after every COMMIT and every CALL, which end the transaction.
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM sharded_id._dblink_schema();
    PERFORM sharded_id._remote_close_all('sharded_id_');
    FOR m IN SELECT * FROM sharded_id._moves_unfinished() LOOP
        -- Never a move that is still running in another session.
        PERFORM sharded_id._move_claim(m.shard_id);
        PERFORM sharded_id._move_recover_begin(m.move_id);
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        -- A move that cannot be recovered yet stays unfinished; the others
        -- go on, and the call fails at its end with the first one's error.
        LOOP
            err := NULL;
            BEGIN
                moved := sharded_id._move_resolve(m.move_id);
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE,
                                        err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
            END;
            -- Switched (NULL): committed, the ops tables follow, committed,
            -- then the cleanup.
            EXIT WHEN err IS NOT NULL OR moved IS NOT NULL;
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            PERFORM sharded_id._move_hold('recover_switched');
            PERFORM sharded_id._move_follow_ops_after_switch(x) FROM sharded_id.moves x WHERE x.move_id = m.move_id;
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            PERFORM sharded_id._move_hold('recover_followed');
        END LOOP;
        IF err IS NULL THEN
            RAISE NOTICE 'move % of shard %, interrupted at step "%": %', m.move_id, m.shard_id, m.state,
                         CASE WHEN moved THEN 'finished' ELSE 'rolled back' END;
        ELSE
            failures := failures + 1;
            IF first_err IS NULL THEN
                first_err := err;
                first_state := err_state;
                first_detail := err_detail;
                first_hint := err_hint;
            ELSE
                RAISE WARNING 'move % of shard % is still unfinished: %', m.move_id, m.shard_id, err;
            END IF;
        END IF;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._remote_close_all('sharded_id_');
        PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
    END LOOP;
    -- Then the deferred cleanups: what finished moves could not drop.
    FOREACH pending IN ARRAY sharded_id._move_pending_cleanups(NULL) LOOP
        shard := sharded_id._move_claim_move(pending);
        -- The ops tables follow first, committed, so that they never read a
        -- copy whose drop committed while their switch did not.
        PERFORM sharded_id._move_follow_ops_after_switch(x) FROM sharded_id.moves x
        WHERE x.move_id = pending AND x.outcome = 'moved';
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        IF sharded_id._move_try_deferred_cleanup(pending) THEN
            RAISE NOTICE 'move % of shard %: its deferred cleanup is done', pending, shard;
        END IF;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._remote_close_all('sharded_id_');
        PERFORM sharded_id._unlock_shard(shard, 'move');
    END LOOP;
    IF first_err IS NOT NULL THEN
        RAISE EXCEPTION '%', first_err
            USING ERRCODE = first_state,
                  DETAIL = pg_catalog.concat_ws(' ', nullif(first_detail, ''),
                                     CASE WHEN failures > 1 THEN pg_catalog.format('%s unfinished moves could not be recovered; the warnings name the others.', failures) END),
                  HINT = coalesce(nullif(first_hint, ''), 'CALL sharded_id.recover_moves() again once the cause is gone.');
    END IF;
END
$$;

COMMENT ON PROCEDURE sharded_id.recover_moves() IS
'finish or roll back every move that did not end (a crash, a failed step, a cancel), from the journal and what the nodes hold, then drop what finished moves left on the nodes (state cleanup pending), and fail on a move still running in another session; CALL it on the router';

-- The moves that even the shards out over the listed nodes (NULL: every
-- node): shards on unlisted nodes go to the listed node with the fewest,
-- then the fullest node gives its highest shard to the emptiest until
-- they differ by at most one.  Ties go to the name that sorts first.
-- method is what move_shard would choose for each move: online when the
-- source node has wal_level = logical, else dump (NULL: the node did not
-- answer).
CREATE FUNCTION sharded_id.rebalance_plan(nodes text[] DEFAULT NULL)
RETURNS TABLE (move_no integer, shard_id integer, source_node text, target_node text, method text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    methods jsonb := '{}';
    listed text[];
    counts jsonb;
    placement jsonb;
    s record;
    fullest text;
    emptiest text;
    moving integer;
BEGIN
    IF array_position(nodes, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the list of data nodes must not hold null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF nodes IS NOT NULL AND EXISTS (SELECT FROM unnest(nodes) n WHERE n NOT IN (SELECT x.node_name FROM sharded_id.nodes x)) THEN
        RAISE EXCEPTION 'data node "%" does not exist',
                        (SELECT n FROM unnest(nodes) n WHERE n NOT IN (SELECT x.node_name FROM sharded_id.nodes x) LIMIT 1)
            USING ERRCODE = 'undefined_object';
    END IF;
    listed := (SELECT array_agg(x.node_name ORDER BY x.node_name) FROM sharded_id.nodes x
               WHERE nodes IS NULL OR x.node_name = ANY (nodes));
    IF listed IS NULL THEN
        RAISE EXCEPTION 'the router knows no data nodes to balance over'
            USING ERRCODE = 'undefined_object';
    END IF;
    counts := (SELECT jsonb_object_agg(n, (SELECT count(*) FROM sharded_id.shard_map m WHERE m.node_name = n))
               FROM unnest(listed) n);
    placement := (SELECT coalesce(jsonb_object_agg(m.shard_id::text, m.node_name), '{}') FROM sharded_id.shard_map m);
    -- What move_shard would choose on each node that holds shards.
    FOR s IN SELECT DISTINCT m.node_name FROM sharded_id.shard_map m ORDER BY 1 LOOP
        BEGIN
            PERFORM sharded_id._remote_open(sharded_id._move_conn(NULL, 'plan', s.node_name), s.node_name);
            methods := methods || jsonb_build_object(s.node_name,
                CASE WHEN sharded_id._node_call(sharded_id._move_conn(NULL, 'plan', s.node_name), '_node_wal_level', VARIADIC '{}') = 'logical'
                     THEN 'online' ELSE 'dump' END);
            PERFORM sharded_id._remote_close(sharded_id._move_conn(NULL, 'plan', s.node_name));
        EXCEPTION WHEN OTHERS THEN
            PERFORM sharded_id._remote_close(sharded_id._move_conn(NULL, 'plan', s.node_name));
        END;
    END LOOP;
    move_no := 0;
    FOR s IN SELECT m.shard_id, m.node_name FROM sharded_id.shard_map m
             WHERE m.node_name <> ALL (listed) ORDER BY m.shard_id LOOP
        emptiest := (SELECT k FROM jsonb_each_text(counts) e(k, v) ORDER BY v::int, k LIMIT 1);
        move_no := move_no + 1;
        shard_id := s.shard_id; source_node := s.node_name; target_node := emptiest;
        method := methods ->> source_node;
        RETURN NEXT;
        counts := jsonb_set(counts, ARRAY[emptiest], to_jsonb((counts ->> emptiest)::int + 1));
        placement := jsonb_set(placement, ARRAY[s.shard_id::text], to_jsonb(emptiest));
    END LOOP;
    LOOP
        fullest := (SELECT k FROM jsonb_each_text(counts) e(k, v) ORDER BY v::int DESC, k LIMIT 1);
        emptiest := (SELECT k FROM jsonb_each_text(counts) e(k, v) ORDER BY v::int, k LIMIT 1);
        EXIT WHEN (counts ->> fullest)::int - (counts ->> emptiest)::int < 2;
        moving := (SELECT max(k::int) FROM jsonb_each_text(placement) e(k, v) WHERE v = fullest);
        move_no := move_no + 1;
        shard_id := moving; source_node := fullest; target_node := emptiest;
        method := methods ->> source_node;
        RETURN NEXT;
        counts := jsonb_set(jsonb_set(counts, ARRAY[fullest], to_jsonb((counts ->> fullest)::int - 1)),
                            ARRAY[emptiest], to_jsonb((counts ->> emptiest)::int + 1));
        placement := jsonb_set(placement, ARRAY[moving::text], to_jsonb(emptiest));
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id.rebalance_plan(text[]) IS
'the moves that rebalance would make: shards off unlisted nodes, then from the fullest node to the emptiest until they differ by at most one, each with the method move_shard would choose (online or dump, from the source''s wal_level)';

-- rebalance's start: every argument checked, whether anything moves or
-- not; then, unless a dry run, the move lock of every shard of the plan,
-- so that a move running in another session stops the rebalance before it
-- moves anything.  Returns the number of moves of the plan, NULL when
-- there is nothing to move.
CREATE FUNCTION sharded_id._rebalance_begin(nodes text[], method text, dry_run boolean, cluster name)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    total integer;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._rebalance_begin');
    IF dry_run IS NULL THEN
        RAISE EXCEPTION 'dry_run must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM sharded_id._check_move_arguments(method, cluster, 0, interval '1 s', interval '1 s');
    total := (SELECT count(*) FROM sharded_id.rebalance_plan(nodes));
    IF total = 0 THEN
        RAISE NOTICE 'the shards are balanced: nothing to move';
        RETURN NULL;
    END IF;
    IF NOT dry_run THEN
        PERFORM sharded_id._dblink_schema();
        PERFORM sharded_id._move_claim(x.shard_id) FROM sharded_id.rebalance_plan(nodes) x ORDER BY x.move_no;
    END IF;
    RETURN total;
END
$$;

COMMENT ON FUNCTION sharded_id._rebalance_begin(text[], text, boolean, name) IS
'internal: check rebalance''s arguments and take the move lock of every shard of its plan; the number of moves, or NULL when none';

-- The moves of rebalance's plan, in order.
CREATE FUNCTION sharded_id._rebalance_moves(nodes text[])
RETURNS TABLE (move_no integer, shard_id integer, source_node text, target_node text, method text)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._rebalance_moves');
    SELECT * FROM sharded_id.rebalance_plan(nodes) p ORDER BY p.move_no
$$;

COMMENT ON FUNCTION sharded_id._rebalance_moves(text[]) IS
'internal: the moves of rebalance''s plan, in order';

CREATE PROCEDURE sharded_id.rebalance(nodes text[] DEFAULT NULL, method text DEFAULT NULL,
                                      dry_run boolean DEFAULT false, cluster name DEFAULT 'sharded_id')
LANGUAGE plpgsql
AS $$
DECLARE
    p record;
    total integer;
BEGIN
    -- A procedure cannot SET search_path (it COMMITs): pinned here, and
    -- again after every COMMIT and every CALL, which end the transaction.
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    total := sharded_id._rebalance_begin(nodes, method, dry_run, cluster);
    IF total IS NULL THEN
        RETURN;
    END IF;
    FOR p IN SELECT * FROM sharded_id._rebalance_moves(nodes) LOOP
        IF dry_run THEN
            RAISE NOTICE 'move %/%: shard % from node "%" to node "%", method %', p.move_no, total, p.shard_id, p.source_node, p.target_node,
                         coalesce(method, p.method, 'unknown (the node did not answer)');
        ELSE
            RAISE NOTICE 'move %/%: shard % from node "%" to node "%"', p.move_no, total, p.shard_id, p.source_node, p.target_node;
            CALL sharded_id.move_shard(p.shard_id, p.target_node, method => method, cluster => cluster);
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        END IF;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE sharded_id.rebalance(text[], text, boolean, name) IS
'even the shards out over the listed data nodes (NULL: all), moving one shard at a time with move_shard; a node left out is drained; CALL it on the router';

REVOKE ALL ON sharded_id.move_cleanup FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._remote_open(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._remote_close(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._remote(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._remote_rows(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._remote_exec(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._remote_close_all(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_conn(bigint, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_open(sharded_id.moves, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_claim(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_lock_route(sharded_id.moves, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_hold(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_will_create(bigint, text, text, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_freeze_source(sharded_id.moves, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_open_freeze(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_catch_up(sharded_id.moves, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_register_target(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_compare(sharded_id.moves, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_switch(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_follow_ops(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_cleanup(sharded_id.moves, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_cleanup_drop(sharded_id.moves, sharded_id.move_cleanup) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_cleanup_end(sharded_id.moves, boolean, text, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_ops_stale(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_cleanup_hold(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_subscription(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_slot(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_publication(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_mark(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_schema(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_deferred_cleanup(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_try_deferred_cleanup(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._remote_exists(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._remote_json(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_call(text, text, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_begin_call(text, text, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_statement(text, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_call_missing(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_resolve(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_retired_by(sharded_id.moves, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_take_back(sharded_id.moves, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_step(bigint, text, bigint, interval, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_record_objects(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_create_publication(sharded_id.moves, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_create_slot(sharded_id.moves, text, text, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_subscribe(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_lost_sync_slots(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_copy(sharded_id.moves, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_wait_lag(sharded_id.moves, bigint, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_compare_frozen(sharded_id.moves, interval, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_freeze(sharded_id.moves, interval, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_stop_replication(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_copy_rows(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_retire_source(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._check_move_arguments(text, name, bigint, interval, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_call(integer, text, text, boolean, name, bigint, interval, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_versions(text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_source_holds(text, text, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_target_free(text, text, integer, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_row_security(text, text, text, text, integer, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_choose_method(text, text, integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_replica_identity(text, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_floors(text, text, text, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_steps(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_plan(integer, text, text, name, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_unfinished(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_pending_cleanups(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_journal_start(integer, text, text, text, name, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_journal_step(bigint, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_take_step(sharded_id.moves, text, bigint, interval, interval) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_stop_canceled(sharded_id.moves, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_undo_canceled(sharded_id.moves, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_report_canceled(sharded_id.moves, text, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_end_freeze(sharded_id.moves, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_follow_ops_after_switch(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_try_resolve(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_report(bigint, text, text, text, text, boolean, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_recover_begin(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._moves_unfinished() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_claim_move(bigint) FROM PUBLIC;
REVOKE EXECUTE ON PROCEDURE sharded_id.move_shard(integer, text, text, boolean, name, bigint, interval, interval) FROM PUBLIC;
REVOKE EXECUTE ON PROCEDURE sharded_id._move_settle(bigint, boolean, boolean, text) FROM PUBLIC;
REVOKE EXECUTE ON PROCEDURE sharded_id._move_finish_earlier(integer) FROM PUBLIC;
REVOKE EXECUTE ON PROCEDURE sharded_id.recover_moves() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.rebalance_plan(text[]) FROM PUBLIC;
REVOKE EXECUTE ON PROCEDURE sharded_id.rebalance(text[], text, boolean, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._rebalance_begin(text[], text, boolean, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._rebalance_moves(text[]) FROM PUBLIC;

--
-- A move copies the whole schema, and drops nothing it did not copy.
--

-- Before a move copies anything: schema_ddl on the source must be able to
-- make the shard's schema again, or the move is refused with its error
-- (0A000, naming the object it cannot make).
CREATE FUNCTION sharded_id._move_check_schema(conn text, schema_name name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_schema');
    PERFORM sharded_id._node_call(conn, '_node_schema_ddl_count', schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_schema(text, name) IS
'internal: fail, with schema_ddl''s error, when a node cannot give a shard schema back as statements';

-- Before the source's copy of a moved shard is dropped: the target's
-- materialized views are refreshed, now that their tables hold every row,
-- and the inventories (schema_inventory) of both copies must be the same,
-- but for the constraint that fences the old copy's tables.  A difference
-- stops the drop, and the move with it: both copies stay.
CREATE FUNCTION sharded_id._move_check_copy(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    definitions boolean;
    on_source text[];
    on_target text[];
    differences text;
    -- Connections of this move, bound to its nodes, closed with the move's.
    src text := sharded_id._move_conn(m.move_id, 'check_source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'check_target', m.target_node);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_copy');
    PERFORM sharded_id._remote_open(src, m.source_node);
    PERFORM sharded_id._remote_open(tgt, m.target_node);
    -- Dropped already, by a cleanup that was cut short before it recorded so.
    IF NOT sharded_id._node_call(src, '_node_has_schema', m.schema_name)::boolean THEN
        RETURN;
    END IF;
    -- The target's materialized views populated as the source's are now
    -- (a view refreshed on the source since the copy's DDL included).
    PERFORM sharded_id._node_call(tgt, '_node_refresh_views', m.schema_name,
                                  sharded_id._node_call(src, '_node_populated_views', m.schema_name));
    -- Servers of two majors may print one definition two ways: then the
    -- objects, owners, privileges and flags are compared, not the hashes.
    definitions := sharded_id._node_call(src, '_node_server_major', VARIADIC '{}')
                   IS NOT DISTINCT FROM sharded_id._node_call(tgt, '_node_server_major', VARIADIC '{}');
    on_source := coalesce(sharded_id._node_call(src, '_node_inventory', m.schema_name, definitions::text)::text[], '{}');
    on_target := coalesce(sharded_id._node_call(tgt, '_node_inventory', m.schema_name, definitions::text)::text[], '{}');
    SELECT string_agg(d, '; ' ORDER BY d) INTO differences FROM (
        (SELECT 'only on the source: ' || x AS d FROM unnest(on_source) x EXCEPT SELECT 'only on the source: ' || x FROM unnest(on_target) x)
        UNION ALL
        (SELECT 'only on the target: ' || x FROM unnest(on_target) x EXCEPT SELECT 'only on the target: ' || x FROM unnest(on_source) x)
    ) diff;
    PERFORM sharded_id._remote_close(c) FROM unnest(ARRAY[src, tgt]) c;
    IF differences IS NOT NULL THEN
        RAISE EXCEPTION 'the copy of shard % on node "%" is not the same schema as its source', m.shard_id, m.target_node
            USING ERRCODE = 'data_corrupted',
                  DETAIL = format('Move %s keeps schema "%s" on node "%s". Differences (kind|name|owner|privileges|details|definition hash): %s.',
                                  m.move_id, m.schema_name, m.source_node, differences),
                  HINT = 'Make the two copies the same (sharded_id.schema_inventory on each node shows them), then CALL sharded_id.recover_moves().';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_copy(sharded_id.moves) IS
'internal: before a moved shard''s old copy is dropped, refresh the new copy''s materialized views and fail unless both copies have the same inventory';

-- The source's connection string for the target's subscription, without
-- its password: the statement is logged, shown in pg_stat_activity, and
-- kept in pg_subscription.subconninfo.  The target's server finds the
-- password in its password file (passfile= in the node's connection
-- string, or ~/.pgpass of its operating-system user) or service file.
CREATE FUNCTION sharded_id._move_subscription_connstr(m sharded_id.moves)
RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_subscription_connstr');
    SELECT sharded_id._connstr_public(n.connstr) FROM sharded_id.nodes n WHERE n.node_name = m.source_node
$$;

COMMENT ON FUNCTION sharded_id._move_subscription_connstr(sharded_id.moves) IS
'internal: the connection string a move''s subscription uses to reach the source, without its secrets';

-- An online move to a node before PostgreSQL 16, whose subscription applies
-- and copies rows as its owner (the mover, a superuser usually): every
-- index expression, constraint, domain check, default, generated column and
-- trigger enabled ALWAYS or REPLICA of the schema runs with those rights.
-- So such a move is refused (42501) when a role that is not a superuser on
-- the source or on the target owns the schema or any object in it, or may
-- create objects in it: the first one found is named.
CREATE FUNCTION sharded_id._move_check_online_owners(src text, tgt text, shard integer, schema_name name, target_node text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found jsonb;
    owners text[];
    bad jsonb;
    first_bad_role text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_online_owners');
    IF sharded_id._node_call(tgt, '_node_server_version', VARIADIC '{}')::integer >= 160000 THEN
        RETURN;
    END IF;
    -- (object, role) of the schema, its relations, types, functions and
    -- operators, and the roles that may create objects in it; then those
    -- of them whose role is not a superuser on the source.
    found := sharded_id._node_call(src, '_node_schema_roles', schema_name)::jsonb;
    SELECT array_agg(DISTINCT f ->> 'role') INTO owners FROM jsonb_array_elements(found) f;
    bad := (SELECT f FROM jsonb_array_elements(found) WITH ORDINALITY x(f, n) WHERE NOT (f ->> 'superuser')::boolean ORDER BY n LIMIT 1);
    IF bad IS NULL THEN
        -- Each role a superuser on the source: on the target too?  (One
        -- call, not one per object.)
        first_bad_role := sharded_id._node_call(tgt, '_node_first_non_superuser', owners::text);
        bad := (SELECT f FROM jsonb_array_elements(found) WITH ORDINALITY x(f, n)
                WHERE f ->> 'role' = first_bad_role
                ORDER BY n LIMIT 1);
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'an online move of shard % to node "%" would run code of role "%" with the subscription''s rights',
                        shard, target_node, bad ->> 'role'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Node "%s" runs PostgreSQL before 16, where logical replication copies and applies rows as the subscription''s owner, not as each table''s owner; %s is owned by or granted to "%s", which is not a superuser on both nodes, so its index expressions, constraints, defaults, generated columns, domain checks or triggers could run with the mover''s rights.',
                                  target_node, bad ->> 'object', bad ->> 'role'),
                  HINT = 'Move the shard to a node on PostgreSQL 16 or later, or move it with method => ''dump'', which writes as each table''s owner, or make a trusted role (a superuser) own the schema and every object in it.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_online_owners(text, text, integer, name, text) IS
'internal: refuses (42501) an online move to a node before PostgreSQL 16 of a shard whose schema, or an object in it, a role that is not a superuser owns, or where such a role may create objects';

REVOKE EXECUTE ON FUNCTION sharded_id._move_subscription_connstr(sharded_id.moves) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_online_owners(text, text, integer, name, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_schema(text, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_check_copy(sharded_id.moves) FROM PUBLIC;
