/* src/sql/sharded_id--1.4--1.5.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '1.5'" to load this file. \quit

--
-- 1.5: the guarantees of 1.4 hold off the tested paths, where operators and
-- applications go.
--

-- Issue 25: reset_ceiling() never repeats an id; a shard's floor belongs to
-- that shard, is bounded, and can be lowered; a retirement belongs to the
-- server, in every database.
DROP FUNCTION sharded_id.raise_floor(integer, bigint, text);

CREATE FUNCTION sharded_id.raise_floor(shard_id integer, above_id bigint, layout text DEFAULT 'instagram',
                                       force boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_raise_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) IS
'every id minted on this server for the shard from now on is greater than above_id, also after a restart or a failover; refuses an id of another shard, and one more than sharded_id.max_clock_jump ahead of the clock unless force; returns the floor';

CREATE FUNCTION sharded_id._check_floor(shard_id integer, above_id bigint, layout text, source text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_check_floor'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) IS
'internal: raise raise_floor''s error, naming source, unless raise_floor without force would accept above_id';

CREATE FUNCTION sharded_id.lower_floor(shard_id integer, layout text DEFAULT 'instagram')
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_lower_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.lower_floor(integer, text) IS
'superuser only, with a warning: remove a shard''s floor and bring its ids back to the clock, as after a floor raised over a wrong id; ids of the shard minted with later times may be minted again';

CREATE FUNCTION sharded_id.floors(OUT layout text, OUT shard_id integer, OUT floor timestamptz, OUT retired boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_floors'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id.floors() IS
'what this server keeps about single shards, for every database: each floor, and whether the server gave the shard away';

REVOKE EXECUTE ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.lower_floor(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.floors() FROM PUBLIC;

COMMENT ON FUNCTION sharded_id.reset_ceiling() IS
'superuser only: lower the durable clock ceiling and every shard''s high-water mark to the current time, never below a shard''s floor nor below an id already handed out at the clock''s pace; returns it';

COMMENT ON FUNCTION sharded_id._retire_shard(integer, text) IS
'internal: stop minting for the shard at once, on this server and in every database of it, durably (undone if the transaction aborts); returns its high-water mark';

CREATE FUNCTION sharded_id._check_floors(shard_id integer, schema_name name, layout text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t sharded_id.shard_tables;
    rel regclass;
    table_top bigint;
BEGIN
    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        rel := to_regclass(format('%I.%I', schema_name, t.table_name));
        CONTINUE WHEN rel IS NULL;
        EXECUTE format('SELECT max(%I) FROM %s', t.id_column, rel) INTO table_top;
        IF table_top >= 0 THEN
            PERFORM sharded_id._check_floor(shard_id, table_top, layout, format('table %s', rel));
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._check_floors(integer, name, text) IS
'internal: raise raise_floor''s error, naming the table, unless the largest id of each of a shard''s tables is one its floor may be raised over';

CREATE OR REPLACE FUNCTION sharded_id.raise_floors()
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard record;
    top_id bigint;
    raised integer := 0;
BEGIN
    FOR shard IN SELECT * FROM sharded_id.shards ORDER BY shard_id LOOP
        PERFORM sharded_id._check_floors(shard.shard_id, shard.schema_name, shard.layout);
    END LOOP;
    FOR shard IN SELECT * FROM sharded_id.shards ORDER BY shard_id LOOP
        top_id := sharded_id.shard_max_id(shard.shard_id);
        IF top_id >= 0 THEN
            PERFORM sharded_id.raise_floor(shard.shard_id, top_id, shard.layout);
            raised := raised + 1;
        END IF;
    END LOOP;
    RETURN raised;
END
$$;

COMMENT ON FUNCTION sharded_id.raise_floors() IS
'raise the floor of every shard of the catalog over the largest id its tables hold, as after a restore on another server, once every shard''s ids pass raise_floor''s checks; returns how many shards hold ids';

CREATE OR REPLACE FUNCTION sharded_id._provision(shard_id integer, schema_name name)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard record;
    cfg record;
    seq regclass;
    t sharded_id.shard_tables;
    adopted boolean := false;
    top_id bigint;
BEGIN
    SELECT * INTO cfg FROM sharded_id.current_settings();
    SELECT * INTO shard FROM sharded_id.shards s WHERE s.shard_id = _provision.shard_id;
    IF FOUND AND shard.schema_name <> coalesce(_provision.schema_name, shard.schema_name) THEN
        RAISE EXCEPTION 'shard % already exists in schema "%"', shard_id, shard.schema_name
            USING ERRCODE = 'duplicate_object';
    ELSIF NOT FOUND THEN
        PERFORM sharded_id.check_shard(shard_id, cfg.layout);
        PERFORM sharded_id._check_adoptable(coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)));
        -- A schema with rows raises the floor over them below: check first.
        PERFORM sharded_id._check_floors(shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)), cfg.layout);
        INSERT INTO sharded_id.shards (shard_id, schema_name, layout, mode)
        VALUES (shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)), cfg.layout, cfg.mode)
        RETURNING * INTO shard;
        -- This server mints for the shard again, from the commit on.
        DELETE FROM sharded_id.retired_shards r WHERE r.shard_id = _provision.shard_id;
        PERFORM sharded_id._own_shard(shard.shard_id, shard.layout);
        adopted := true;
    END IF;

    EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', shard.schema_name);
    -- Seed mode takes the sequence fields from the shard's id_seq; counter
    -- mode needs none.
    IF shard.mode = 'seed' THEN
        EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %I.id_seq', shard.schema_name);
        seq := format('%I.id_seq', shard.schema_name)::regclass;
        IF (SELECT relkind FROM pg_class WHERE oid = seq) <> 'S' THEN
            RAISE EXCEPTION '"%" is not a sequence', seq
                USING ERRCODE = 'wrong_object_type',
                      DETAIL = format('Shard %s takes the sequence fields of its ids from %s.', shard.shard_id, seq);
        END IF;
        EXECUTE format('COMMENT ON SEQUENCE %s IS %L', seq,
                       format('sequence fields of the ids of shard %s', shard.shard_id));
    END IF;

    -- The zero-argument next_id() of the seed, with a SQL-standard body bound
    -- at creation, which the planner inlines.
    IF to_regprocedure(format('%I.next_id()', shard.schema_name)) IS NULL THEN
        EXECUTE format('CREATE FUNCTION %I.next_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE '
                       'BEGIN ATOMIC SELECT %s; END',
                       shard.schema_name, sharded_id._next_id_call(shard.shard_id, seq, shard.layout));
        EXECUTE format('COMMENT ON FUNCTION %I.next_id() IS %L', shard.schema_name,
                       format('new id for shard %s', shard.shard_id));
    END IF;

    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        PERFORM sharded_id._copy_table(t, shard.shard_id, shard.schema_name, seq, shard.layout);
    END LOOP;
    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        PERFORM sharded_id._copy_foreign_keys(t, shard.schema_name);
    END LOOP;

    -- A schema adopted with rows (a move, a restore) holds ids that another
    -- server minted, maybe with a clock ahead of this one: new ids go above
    -- the largest.
    IF adopted THEN
        top_id := sharded_id.shard_max_id(shard.shard_id);
        IF top_id >= 0 THEN
            PERFORM sharded_id.raise_floor(shard.shard_id, top_id, shard.layout);
        END IF;
    END IF;
    RETURN shard.schema_name;
END
$$;

COMMENT ON FUNCTION sharded_id._provision(integer, name) IS
'internal: create whatever a shard schema is missing';

REVOKE EXECUTE ON FUNCTION sharded_id._check_floors(integer, name, text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION sharded_id.adopt_table(tbl regclass, shard_id integer, id_column name DEFAULT 'id')
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cfg record;
    col record;
    old_seq record;
    seq regclass;
    seq_name text;
    max_id bigint;
    first_new bigint;
    call text;
BEGIN
    SELECT * INTO cfg FROM sharded_id.current_settings();
    PERFORM sharded_id.check_shard(shard_id, cfg.layout);
    IF EXISTS (SELECT 1 FROM sharded_id.retired_shards r
               WHERE r.shard_id = adopt_table.shard_id AND r.layout = cfg.layout)
       OR EXISTS (SELECT 1 FROM sharded_id.floors() f
                  WHERE f.shard_id = adopt_table.shard_id AND f.layout = cfg.layout AND f.retired) THEN
        RAISE EXCEPTION 'shard % is not minted on this server', shard_id
            USING ERRCODE = 'SI001',
                  DETAIL = format('This server gave shard %s away, so another server may be minting its ids.', shard_id),
                  HINT = format('Adopt the table on the server that holds shard %s, or take the shard back here with sharded_id.create_shard(%s).',
                                shard_id, shard_id);
    END IF;
    SELECT a.atttypid, a.attidentity, pg_get_serial_sequence(tbl::text, a.attname) AS owned_seq INTO col
    FROM pg_attribute a
    WHERE a.attrelid = tbl AND a.attname = id_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation "%" does not exist', id_column, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    IF col.atttypid <> 'pg_catalog.int8'::regtype THEN
        RAISE EXCEPTION 'column "%" of "%" is of type %, not bigint', id_column, tbl, format_type(col.atttypid, NULL)
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = 'A sharded id needs all 64 bits: milliseconds, the shard and a sequence field.',
                  HINT = format('Widen the column first: ALTER TABLE %s ALTER COLUMN %I TYPE bigint.', tbl, id_column);
    END IF;

    -- No writer may add an id between the check and the switch.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    EXECUTE format('SELECT max(%I) FROM %s', id_column, tbl) INTO max_id;
    first_new := sharded_id.min_id_at(now(), cfg.layout);
    IF max_id >= first_new THEN
        RAISE EXCEPTION 'ids of "%" reach into the range of sharded ids minted now', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its largest id is %s; the lowest sharded id minted now is %s, so an old id could equal a new one.',
                                  max_id, first_new);
    END IF;

    IF col.attidentity <> '' THEN
        EXECUTE format('SELECT last_value, is_called FROM %s', col.owned_seq) INTO old_seq;
        seq_name := col.owned_seq;
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, id_column);
        EXECUTE format('CREATE SEQUENCE %s OWNED BY %s.%I', seq_name, tbl, id_column);
        PERFORM setval(seq_name::regclass, old_seq.last_value, old_seq.is_called);
        seq := seq_name::regclass;
    ELSIF col.owned_seq IS NOT NULL THEN
        seq := col.owned_seq::regclass;
    ELSIF cfg.mode = 'seed' THEN
        RAISE EXCEPTION 'column "%" of "%" has no sequence', id_column, tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'In seed mode the sequence fields of new ids come from the column''s serial or identity sequence.',
                  HINT = format('Give the column a sequence (CREATE SEQUENCE ... OWNED BY %s.%I), or configure counter mode.', tbl, id_column);
    END IF;

    call := sharded_id._next_id_call(shard_id, CASE WHEN cfg.mode = 'seed' THEN seq END, cfg.layout);
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, id_column, call);
    RETURN call;
END
$$;

COMMENT ON FUNCTION sharded_id.adopt_table(regclass, integer, name) IS
'switch an existing bigint key (serial, bigserial or IDENTITY) to a next_id default of one shard, keeping rows and sequence; refuses ids that reach the range minted now';


CREATE OR REPLACE PROCEDURE sharded_id.move_shard(shard_id integer, target_node text,
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
    unfinished bigint;
    source text;
    schema name;
    versions text[];
    wal_level text;
    bad text;
    steps text[];
    step text;
    err text;
    err_state text;
    err_detail text;
    t_freeze timestamptz;
    moved boolean;
    recovery_err text;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF shard_id IS NULL OR target_node IS NULL OR dry_run IS NULL OR cluster IS NULL
       OR max_lag IS NULL OR timeout IS NULL OR freeze_timeout IS NULL THEN
        RAISE EXCEPTION 'arguments of move_shard must not be null, except method'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF method IS NOT NULL AND method NOT IN ('online', 'dump') THEN
        RAISE EXCEPTION 'move method "%" is not online or dump', method
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM sharded_id._dblink_schema();
    -- First, whatever an earlier move of this shard left unfinished.
    unfinished := (SELECT x.move_id FROM sharded_id.moves x
                   WHERE x.shard_id = move_shard.shard_id AND x.finished_at IS NULL);
    IF unfinished IS NOT NULL AND NOT dry_run THEN
        RAISE NOTICE 'finishing move % of shard %, which did not end', unfinished, shard_id;
        PERFORM sharded_id._move_resolve(unfinished);
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END IF;

    source := (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = move_shard.shard_id);
    IF source IS NULL THEN
        RAISE EXCEPTION 'shard % is not in the shard map', shard_id
            USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT EXISTS (SELECT FROM sharded_id.nodes n WHERE n.node_name = target_node) THEN
        RAISE EXCEPTION 'data node "%" does not exist', target_node
            USING ERRCODE = 'undefined_object';
    END IF;
    IF source = target_node THEN
        RAISE NOTICE 'shard % is already on node "%"', shard_id, target_node;
        RETURN;
    END IF;
    PERFORM sharded_id._remote_open('shid_source', source);
    PERFORM sharded_id._remote_open('shid_target', target_node);
    versions := ARRAY[(SELECT e.extversion FROM pg_extension e WHERE e.extname = 'sharded_id'),
                      sharded_id._remote('shid_source', 'SELECT extversion FROM pg_extension WHERE extname = ''sharded_id'''),
                      sharded_id._remote('shid_target', 'SELECT extversion FROM pg_extension WHERE extname = ''sharded_id''')];
    IF versions[2] IS DISTINCT FROM versions[1] OR versions[3] IS DISTINCT FROM versions[1] THEN
        RAISE EXCEPTION 'sharded_id versions differ: router %, source %, target %',
                        versions[1], coalesce(versions[2], 'none'), coalesce(versions[3], 'none')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run ALTER EXTENSION sharded_id UPDATE on every node and on the router.';
    END IF;
    schema := sharded_id._remote('shid_source', format('SELECT schema_name FROM sharded_id.shards WHERE shard_id = %s', shard_id));
    IF schema IS NULL THEN
        RAISE EXCEPTION 'node "%" does not hold shard %', source, shard_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The shard map names the node, but its sharded_id.shards has no such shard.';
    END IF;
    IF sharded_id._remote('shid_target', format(
           'SELECT 1 FROM sharded_id.shards WHERE shard_id = %s OR schema_name = %L UNION SELECT 1 FROM pg_namespace WHERE nspname = %L',
           shard_id, schema, schema)) IS NOT NULL THEN
        RAISE EXCEPTION 'node "%" already holds shard % or a schema "%"', target_node, shard_id, schema
            USING ERRCODE = 'duplicate_object';
    END IF;
    -- The target raises the shard's floor over the source's largest ids and
    -- its high-water mark: both must be ids a floor may be raised over
    -- (sharded_id._check_floor), or the move stops here, before it changes
    -- anything.
    PERFORM sharded_id._remote('shid_source', format(
        'SELECT sharded_id._check_floors(s.shard_id, s.schema_name, s.layout) FROM sharded_id.shards s WHERE s.shard_id = %s',
        shard_id));
    PERFORM sharded_id._remote('shid_target', format(
        'SELECT sharded_id._check_floor(%s, %s, %L, %L)', shard_id,
        sharded_id._remote('shid_source', format(
            'SELECT sharded_id.high_water(s.shard_id, s.layout) FROM sharded_id.shards s WHERE s.shard_id = %s', shard_id)),
        (SELECT sharded_id._remote('shid_source', format('SELECT layout FROM sharded_id.shards WHERE shard_id = %s', shard_id))),
        format('the source, node "%s",', source)));
    wal_level := sharded_id._remote('shid_source', 'SHOW wal_level');
    IF method IS NULL THEN
        method := CASE WHEN wal_level = 'logical' THEN 'online' ELSE 'dump' END;
    ELSIF method = 'online' AND wal_level <> 'logical' THEN
        RAISE EXCEPTION 'an online move needs wal_level = logical on node "%"', source
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Set wal_level = logical there, or move with method => ''dump''.';
    END IF;
    IF method = 'online' THEN
        -- Updates and deletes replicate by replica identity; unlogged
        -- tables do not replicate at all.
        bad := sharded_id._remote('shid_source', format(
            'SELECT string_agg(format(''%%I'', c.relname), '', '' ORDER BY c.relname)
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = %L AND c.relkind = ''r''
               AND (c.relpersistence <> ''p'' OR c.relreplident = ''n''
                    OR (c.relreplident = ''d'' AND NOT EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)))',
            schema));
        IF bad IS NOT NULL THEN
            RAISE EXCEPTION 'an online move needs a primary key or replica identity on every logged table'
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('These tables of schema "%s" lack one: %s.', schema, bad),
                      HINT = 'Move with method => ''dump''.';
        END IF;
        steps := ARRAY['record_objects', 'create_publication', 'subscribe', 'copy', 'catch_up', 'compare', 'catch_up',
                       'freeze', 'stop_replication', 'retire_source', 'register_target', 'switch'];
    ELSE
        steps := ARRAY['record_objects', 'freeze', 'copy_rows', 'retire_source', 'register_target', 'switch'];
    END IF;
    IF dry_run THEN
        RAISE NOTICE 'would move shard % (schema "%") from node "%" to node "%", method %: %',
                     shard_id, schema, source, target_node, method, array_to_string(steps, ', ');
        RETURN;
    END IF;

    INSERT INTO sharded_id.moves (shard_id, source_node, target_node, method, cluster, schema_name)
    VALUES (shard_id, source, target_node, method, cluster, schema)
    RETURNING * INTO m;
    FOREACH step IN ARRAY steps LOOP
        CALL sharded_id._move_journal(m.move_id, step);
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        IF step = 'freeze' THEN
            t_freeze := clock_timestamp();
        END IF;
        BEGIN
            PERFORM sharded_id._move_step(m.move_id, step, max_lag, timeout, freeze_timeout);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE, err_detail = PG_EXCEPTION_DETAIL;
        END;
        IF step = 'switch' OR err IS NOT NULL THEN
            -- The switch commits with the route lock still held; writers
            -- then find the new map.
            UPDATE sharded_id.moves x
            SET freeze_ms = extract(epoch FROM clock_timestamp() - t_freeze) * 1000,
                error = CASE WHEN err IS NOT NULL THEN format('%s: %s', step, err) END
            WHERE x.move_id = m.move_id AND (t_freeze IS NOT NULL OR err IS NOT NULL);
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            PERFORM pg_advisory_unlock(1936222578, m.shard_id)
            FROM pg_locks l WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid()
              AND l.classid = 1936222578 AND l.objid = m.shard_id AND l.mode = 'ExclusiveLock';
        END IF;
        EXIT WHEN err IS NOT NULL;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END LOOP;

    IF err IS NULL THEN
        CALL sharded_id._move_journal(m.move_id, 'cleanup');
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._move_resolve(m.move_id);
        COMMIT;
        SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = m.move_id;
        RAISE NOTICE 'moved shard % (schema "%") from node "%" to node "%" by method %: write freeze % ms, high-water mark %',
                     m.shard_id, m.schema_name, m.source_node, m.target_node, m.method,
                     round(m.freeze_ms::numeric, 1), m.high_water;
        RETURN;
    END IF;

    -- A step failed: finish the move or roll it back, as the nodes allow.
    CALL sharded_id._move_journal(m.move_id, 'recover');
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    BEGIN
        moved := sharded_id._move_resolve(m.move_id);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS recovery_err = MESSAGE_TEXT;
    END;
    COMMIT;
    IF recovery_err IS NOT NULL THEN
        RAISE EXCEPTION 'move % of shard % to node "%" failed at step "%": %', m.move_id, m.shard_id, m.target_node, step, err
            USING ERRCODE = err_state,
                  DETAIL = format('Finishing or rolling back the move failed too: %s', recovery_err),
                  HINT = 'CALL sharded_id.recover_moves() once both nodes answer.';
    END IF;
    IF moved THEN
        RAISE WARNING 'move % of shard % to node "%" finished after step "%" failed: %',
                      m.move_id, m.shard_id, m.target_node, step, err;
        RETURN;
    END IF;
    RAISE EXCEPTION 'move % of shard % to node "%" failed at step "%": %', m.move_id, m.shard_id, m.target_node, step, err
        USING ERRCODE = err_state,
              DETAIL = coalesce(err_detail || ' ', '') || 'The move was rolled back: the shard stays on node "' || m.source_node || '".';
END
$$;

COMMENT ON PROCEDURE sharded_id.move_shard(integer, text, text, boolean, name, bigint, interval, interval) IS
'move a logical shard to another data node, online (logical replication) or by dump, journaled step by step in sharded_id.moves; writers through sharded_id.route wait out the switch; CALL it on the router, outside a transaction block';

