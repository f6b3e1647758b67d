/* src/sql/api/node_moves.sql */

--
-- The node side of shard moves: what a data node holds and runs when a
-- move (sharded_id_router's move_shard, on the router) drives it through
-- dblink.  Every node has these, routers or not.
--

-- On every node: the marks a move writes on its source and waits for on
-- its target, through the move's publication, to know the target has
-- applied everything the source committed before them.
CREATE TABLE sharded_id.move_marks (
    move_id bigint PRIMARY KEY,
    mark bigint NOT NULL
);

COMMENT ON TABLE sharded_id.move_marks IS
'on a node: catch-up marks of the moves it is the source or target of (replicated with the shard)';

-- On every node: which move retired each shard the node gave away, written
-- in the transaction that retires it.  Recovery rolls a move forward only
-- when its source names it here.
CREATE TABLE sharded_id.move_retirements (
    shard_id integer PRIMARY KEY CHECK (shard_id >= 0),
    move_id bigint NOT NULL,
    retired_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

COMMENT ON TABLE sharded_id.move_retirements IS
'on a node: the move (of the router''s journal) that retired each shard this node gave away';

SELECT pg_catalog.pg_extension_config_dump('sharded_id.move_retirements', '');

-- Per table of a schema, in name order: its name, row count and the sum of
-- a hash of every row's text, in the caller's snapshot.
CREATE FUNCTION sharded_id._schema_fingerprint(schema_name name)
RETURNS text
LANGUAGE plpgsql STABLE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    line text;
    result text := '';
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._schema_fingerprint');
    -- Each table read as its owner (sharded_id._table_fingerprint): the
    -- schema's owner may have planted code in it.
    FOR t IN
        SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = schema_name AND c.relkind = 'r' ORDER BY c.relname
    LOOP
        line := t.relname || ':' || sharded_id._table_fingerprint(t.oid);
        result := result || line || ' ';
    END LOOP;
    RETURN rtrim(result);
END
$$;

COMMENT ON FUNCTION sharded_id._schema_fingerprint(name) IS
'internal: row count and row-hash sum of every table of a schema, to compare two copies';

-- The shard locks of moves (src/route.c).
CREATE FUNCTION sharded_id._lock_shard(shard integer, kind text, wait boolean)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shid_lock_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_shard(integer, text, boolean) IS
'internal: take a shard''s route or move lock in exclusive mode as a session lock, released at the latest when a transaction aborts';

CREATE FUNCTION sharded_id._unlock_shard(shard integer, kind text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shid_unlock_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._unlock_shard(integer, text) IS
'internal: release a shard''s route or move lock taken by _lock_shard';

-- Take a shard lock in exclusive mode for a move's freeze, waiting at most
-- timeout: the route lock on the router (kind 'route', a session lock,
-- _lock_shard) or the fence on a node (kind 'fence', until the transaction
-- ends, _lock_fence).  Writers in flight hold it in share mode (route(),
-- enter_shard) until their transactions end, and the move waits for them;
-- a session that has sat idle in a transaction for 500 ms or more while
-- holding it has no call in flight (PL/Proxy commits each call on its node
-- when it returns), only the lock: this ends it (pg_terminate_backend),
-- with a warning that names why.  Once half the timeout has passed, and
-- unless sharded_id.move_end_blockers is off, it also ends the sessions
-- that hold the lock in one statement still running since before the wait
-- began, as pg_repack ends the sessions that hold the very table it waits
-- for: a reader that entered the shard, or a role that cannot write to it,
-- can then neither fail the move nor hold it beyond its timeout.  A
-- transaction of short statements, even one that began before the wait
-- (an application's writer), is never ended: the freeze waits for it, at
-- most its timeout (2.0 ended every holder whose transaction began before
-- the wait, and so the writers that held the fence beside such a reader).
-- The wait is taken in slices of 100 ms, doubling, so that such a session
-- is found while the writers that queue behind the move wait at most a
-- slice for it; the sessions' states are read afresh at each slice (2.0
-- read them once, so a writer seen idle for a moment was later ended as if
-- it had stayed idle).  Fails with 55P03 naming the sessions that still hold the lock.
CREATE FUNCTION sharded_id._wait_shard_lock(shard integer, kind text, timeout interval, why text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + timeout;
    started timestamptz := clock_timestamp();
    end_after timestamptz := clock_timestamp() + timeout / 2;
    end_all boolean := coalesce(current_setting('sharded_id.move_end_blockers', true), 'on') <> 'off';
    slice_ms bigint := 100;
    wait_ms bigint;
    saved_lock_timeout text := current_setting('lock_timeout');
    class bigint;
    noun text := CASE kind WHEN 'route' THEN 'route lock' WHEN 'fence' THEN 'fence' END;
    h record;
    holders text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._wait_shard_lock');
    class := sharded_id._lock_class(kind);
    IF noun IS NULL THEN
        RAISE EXCEPTION 'a move waits for no lock of kind "%"', kind USING ERRCODE = 'invalid_parameter_value';
    END IF;
    LOOP
        -- pg_stat_activity is read once per transaction, then cached: read
        -- it afresh at each slice, or a writer seen idle once would stay
        -- idle, and a statement seen once would stay running, to the end.
        PERFORM pg_catalog.pg_stat_clear_snapshot();
        FOR h IN
            SELECT a.pid, a.usename, a.application_name, a.state, a.query,
                   clock_timestamp() - a.state_change AS idle_for
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND l.classid = class AND l.objid = _wait_shard_lock.shard AND l.objsubid = 3
              AND l.mode = 'ShareLock' AND l.granted AND l.pid <> pg_backend_pid()
              AND ((a.state IN ('idle in transaction', 'idle in transaction (aborted)')
                    AND a.state_change < clock_timestamp() - interval '500 ms')
                   OR (end_all AND clock_timestamp() >= end_after AND a.state = 'active' AND a.query_start < started))
        LOOP
            BEGIN
                IF pg_terminate_backend(h.pid) THEN
                    IF h.state IN ('idle in transaction', 'idle in transaction (aborted)') THEN
                        RAISE WARNING 'ended session % of role "%", idle in a transaction for % while it held the % of shard %',
                                      h.pid, h.usename, date_trunc('second', h.idle_for), noun, shard
                            USING DETAIL = format('%s; the session''s %s. Application name: "%s".', why,
                                                  CASE kind WHEN 'route' THEN 'routed calls had all returned'
                                                            ELSE 'statements after it entered the shard had all returned' END,
                                                  h.application_name);
                    ELSE
                        RAISE WARNING 'ended session % of role "%", which still held the % of shard % after half of %, in one statement running since before the freeze',
                                      h.pid, h.usename, noun, shard, timeout
                            USING DETAIL = format('%s; the session was %s, running: %s. Application name: "%s".', why,
                                                  h.state, left(h.query, 200), h.application_name),
                                  HINT = 'SET sharded_id.move_end_blockers = off to have the freeze fail instead.';
                    END IF;
                END IF;
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE WARNING 'could not end session % of role "%", idle in a transaction while it held the % of shard %',
                              h.pid, h.usename, noun, shard
                    USING DETAIL = SQLERRM,
                          HINT = 'Run moves as a superuser, or as a member of pg_signal_backend.';
            END;
        END LOOP;
        wait_ms := least(slice_ms, floor(extract(epoch FROM deadline - clock_timestamp()) * 1000)::bigint);
        IF wait_ms < 1 THEN
            holders := (SELECT string_agg(format('%s (role "%s", %s)', a.pid, a.usename, a.state), ', ' ORDER BY a.pid)
                        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                        WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                          AND l.classid = class AND l.objid = _wait_shard_lock.shard AND l.objsubid = 3
                          AND l.granted AND l.pid <> pg_backend_pid());
            RAISE EXCEPTION 'the % of shard % was not free within %', noun, shard, timeout
                USING ERRCODE = 'lock_not_available',
                      DETAIL = format('Sessions that %s held it: %s.',
                                      CASE kind WHEN 'route' THEN 'routed calls to the shard' ELSE 'entered the shard' END,
                                      coalesce(holders, 'none left')),
                      HINT = 'Writers in flight hold it until their transactions end; raise freeze_timeout, or end the sessions that hold it.';
        END IF;
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', wait_ms || 'ms', true);
            IF kind = 'route' THEN
                PERFORM sharded_id._lock_shard(shard, 'route', true);
            ELSE
                PERFORM sharded_id._lock_fence(shard);
            END IF;
            PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
        slice_ms := slice_ms * 2;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._wait_shard_lock(integer, text, interval, text) IS
'internal: take a shard''s route lock or fence for a move''s freeze, within a timeout, ending sessions that hold it idle in a transaction';

-- On the source: schema_ddl's statements as one text for the target, in
-- an order that runs no code of the schema's owner with the mover's rights:
-- the objects made and the sequences linked to their columns (OWNED BY,
-- which needs the sequence and the table to have one owner), then their
-- owners (ALTER ... OWNER TO; a linked sequence follows its table), so that every
-- index is made as its table's owner (CREATE INDEX runs its expressions and
-- predicate as the owner in core) and every function of the schema already
-- has its owner when an index calls it; then the primary keys and unique
-- constraints, then the foreign keys, whose checks plan reads of both
-- tables (the planner folds the index expressions and predicates it finds)
-- while the tables are still empty and hold only those plain indexes; then
-- the rest, in schema_ddl's order.
CREATE FUNCTION sharded_id._move_schema_ddl(schema_name name)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ddl text[];
    first integer;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_schema_ddl');
    ddl := ARRAY(SELECT s FROM sharded_id.schema_ddl(schema_name) s);
    first := (SELECT min(x.n) FROM unnest(ddl) WITH ORDINALITY x(s, n)
              WHERE x.s LIKE 'ALTER TABLE % ADD CONSTRAINT %' OR x.s LIKE 'CREATE INDEX %' OR x.s LIKE 'CREATE UNIQUE INDEX %');
    IF first IS NULL THEN
        RETURN array_to_string(ddl, E';\n');
    END IF;
    RETURN (SELECT string_agg(y.s, E';\n' ORDER BY y.rank, y.n)
            FROM (SELECT x.s, x.n,
                         CASE WHEN x.n < first THEN 0
                              WHEN x.s ~ '^ALTER SEQUENCE \S.* OWNED BY \S' AND x.s !~ E'\n' THEN 0
                              WHEN x.s ~ '^ALTER [A-Z ]+ \S.* OWNER TO ("[^"]*"|[^ ]+)$' AND x.s !~ E'\n' THEN 1
                              WHEN x.s ~ '^ALTER TABLE \S.* ADD CONSTRAINT ("([^"]|"")*"|\S+) (PRIMARY KEY|UNIQUE)[ (]' THEN 2
                              WHEN x.s ~ '^ALTER TABLE \S.* ADD CONSTRAINT ("([^"]|"")*"|\S+) FOREIGN KEY[ (]' THEN 3
                              ELSE 4 END AS rank
                  FROM unnest(ddl) WITH ORDINALITY x(s, n)) y);
END
$$;

COMMENT ON FUNCTION sharded_id._move_schema_ddl(name) IS
'internal: the statements of schema_ddl for a move''s target, ordered so that none runs code of the schema''s owner with the mover''s rights: owners before constraints and indexes, foreign keys before other indexes';

-- On a node: run statement (a format string with one %s) on each table of a
-- schema that is not a partition, in creation order; on a partitioned table
-- it reaches the partitions too.  For a move: LOCK TABLE in the freeze.
CREATE FUNCTION sharded_id._on_schema_tables(schema_name name, statement text)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    n integer := 0;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._on_schema_tables');
    FOR t IN
        SELECT c.oid::regclass AS rel FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname = schema_name AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.oid
    LOOP
        EXECUTE format(statement, t.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sharded_id._on_schema_tables(name, text) IS
'internal: run a statement on every table of a shard schema (a move''s freeze and fence)';

REVOKE EXECUTE ON FUNCTION sharded_id._schema_fingerprint(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._lock_shard(integer, text, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._unlock_shard(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._wait_shard_lock(integer, text, interval, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._on_schema_tables(name, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._move_schema_ddl(name) FROM PUBLIC;
