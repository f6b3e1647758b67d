/* src/sql/sharded_id--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '1.3'" to load this file. \quit

--
-- Counter mode: ids with no sequence.
--
CREATE FUNCTION sharded_id.next_id(shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer) IS
'new id for the shard in counter mode (no sequence): strictly increasing per shard, never repeats within the cluster';

CREATE FUNCTION sharded_id.next_id_in_layout(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id_in_layout(integer, text) IS
'new id for the shard in counter mode, in the named layout';

CREATE FUNCTION sharded_id.next_ids(shard_id integer, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, integer) IS
'reserve n new ids for the shard in counter mode in one call (at most 1000000), for loaders';

CREATE FUNCTION sharded_id.next_ids_in_layout(shard_id integer, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) IS
'reserve n new ids for the shard in counter mode in the named layout, for loaders';

REVOKE EXECUTE ON FUNCTION sharded_id.next_id(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.next_id_in_layout(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.next_ids(integer, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) FROM PUBLIC;

--
-- The durable clock ceiling, reset by a superuser after a clock leap.
--
CREATE FUNCTION sharded_id.reset_ceiling()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_reset_ceiling'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_ceiling() IS
'superuser only: lower the durable clock ceiling and every shard''s high-water mark to the current time; returns it';

REVOKE EXECUTE ON FUNCTION sharded_id.reset_ceiling() FROM PUBLIC;

--
-- One check, in C, of shards and layout names for the SQL functions.
--
CREATE FUNCTION sharded_id.check_shard(shard_id integer, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_check_shard_sql'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.check_shard(integer, text) IS
'the shard id if the named layout has such a shard; next_id''s error otherwise (unknown layout, shard out of range)';

--
-- Provisioning: the mode of new shards; ranges derived from the layout;
-- foreign keys copied whole.
--
ALTER TABLE sharded_id.settings
    ADD COLUMN mode text NOT NULL DEFAULT 'seed' CHECK (mode IN ('seed', 'counter'));
ALTER TABLE sharded_id.shards
    ADD COLUMN mode text NOT NULL DEFAULT 'seed' CHECK (mode IN ('seed', 'counter'));
-- Names are limited in bytes, not characters.
ALTER TABLE sharded_id.settings
    DROP CONSTRAINT settings_schema_prefix_check,
    ADD CONSTRAINT settings_schema_prefix_check CHECK (schema_prefix <> '' AND octet_length(schema_prefix) <= 50);

COMMENT ON TABLE sharded_id.settings IS
'how shards are provisioned: schema names, layout and mode (no row: shard_0000-style names, layout instagram, seed mode)';

-- Their OUT parameters and arguments change: dropped and made anew.
DROP FUNCTION sharded_id.current_settings();
DROP FUNCTION sharded_id.configure(text, integer, text);

CREATE FUNCTION sharded_id.current_settings(OUT schema_prefix text,
                                            OUT pad_width integer,
                                            OUT layout text,
                                            OUT mode text)
RETURNS record
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.schema_prefix, s.pad_width, s.layout, s.mode
    FROM sharded_id.settings s
    UNION ALL
    SELECT 'shard_', 4, 'instagram', 'seed'
    WHERE NOT EXISTS (SELECT 1 FROM sharded_id.settings)
$$;

COMMENT ON FUNCTION sharded_id.current_settings() IS
'the provisioning settings in force (sharded_id.settings, or the defaults)';

CREATE FUNCTION sharded_id.configure(schema_prefix text DEFAULT NULL,
                                     pad_width integer DEFAULT NULL,
                                     layout text DEFAULT NULL,
                                     mode text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cur record;
BEGIN
    SELECT * INTO cur FROM sharded_id.current_settings();
    -- Names are limited in bytes (63), not characters: leave room for the
    -- shard number.
    IF octet_length(schema_prefix) > 50 OR schema_prefix = '' THEN
        RAISE EXCEPTION 'schema prefix "%" is out of range', schema_prefix
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('Schema prefixes must be between 1 and 50 bytes long; this one is %s bytes.',
                                  octet_length(schema_prefix));
    END IF;
    IF layout IS NOT NULL AND layout IS DISTINCT FROM cur.layout THEN
        -- An unknown layout fails here, with the error next_id gives.
        PERFORM sharded_id.check_shard(0, configure.layout);
        IF EXISTS (SELECT 1 FROM sharded_id.shards) THEN
            RAISE EXCEPTION 'cannot change the layout of existing shards'
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Shards use layout "%s", and their ids and column defaults depend on it.', cur.layout);
        END IF;
    END IF;
    IF mode IS NOT NULL AND mode IS DISTINCT FROM cur.mode THEN
        IF mode NOT IN ('seed', 'counter') THEN
            RAISE EXCEPTION 'unknown id mode "%"', mode
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'The modes are seed and counter.';
        END IF;
        IF EXISTS (SELECT 1 FROM sharded_id.shards) THEN
            RAISE EXCEPTION 'cannot change the mode of existing shards'
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Shards mint ids in %s mode, and their column defaults depend on it.', cur.mode);
        END IF;
    END IF;
    INSERT INTO sharded_id.settings AS s (singleton, schema_prefix, pad_width, layout, mode)
    VALUES (true,
            coalesce(configure.schema_prefix, cur.schema_prefix),
            coalesce(configure.pad_width, cur.pad_width),
            coalesce(configure.layout, cur.layout),
            coalesce(configure.mode, cur.mode))
    ON CONFLICT (singleton) DO UPDATE
        SET schema_prefix = excluded.schema_prefix,
            pad_width = excluded.pad_width,
            layout = excluded.layout,
            mode = excluded.mode;
END
$$;

COMMENT ON FUNCTION sharded_id.configure(text, integer, text, text) IS
'set the schema name prefix, its zero padding, the layout and the mode (seed or counter) of new shards';

REVOKE EXECUTE ON FUNCTION sharded_id.configure(text, integer, text, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.shard_schema(shard_id integer)
RETURNS name
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(
        (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = shard_schema.shard_id),
        (SELECT (c.schema_prefix
                 || lpad(sharded_id.check_shard(shard_schema.shard_id, c.layout)::text,
                         greatest(c.pad_width, length(shard_schema.shard_id::text)), '0'))::name
         FROM sharded_id.current_settings() c))
$$;

CREATE OR REPLACE FUNCTION sharded_id._next_id_call(shard_id integer, seq regclass, layout text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN seq IS NOT NULL THEN
            format('sharded_id.next_id(%s, %L::pg_catalog.regclass%s)', shard_id, seq::text,
                   CASE WHEN layout = 'instagram' THEN '' ELSE format(', %L', layout) END)
        WHEN layout = 'instagram' THEN format('sharded_id.next_id(%s)', shard_id)
        ELSE format('sharded_id.next_id_in_layout(%s, %L)', shard_id, layout)
    END
$$;

COMMENT ON FUNCTION sharded_id._next_id_call(integer, regclass, text) IS
'internal: the SQL text of a shard''s next_id call (seq NULL: counter mode)';

CREATE OR REPLACE FUNCTION sharded_id._copy_table(t sharded_id.shard_tables, shard_id integer,
                                       schema name, seq regclass, layout text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    template regclass;
    target text := format('%I.%I', schema, t.table_name);
BEGIN
    IF to_regclass(target) IS NOT NULL THEN
        -- An adopted copy (restored from a dump, or left behind by DROP
        -- EXTENSION ... CASCADE, which drops the id defaults with next_id)
        -- gets its id default back if it has none.
        IF NOT EXISTS (SELECT 1 FROM pg_attrdef d
                       JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                       WHERE d.adrelid = to_regclass(target) AND a.attname = t.id_column) THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s',
                           target, t.id_column, sharded_id._next_id_call(shard_id, seq, layout));
        END IF;
        RETURN false;
    END IF;
    template := to_regclass(format('%I.%I', t.template_schema, t.template_table));
    IF template IS NULL THEN
        RAISE EXCEPTION 'template table %.% of sharded table "%" does not exist',
                        quote_ident(t.template_schema), quote_ident(t.template_table), t.table_name
            USING ERRCODE = 'undefined_table';
    END IF;
    EXECUTE format('CREATE TABLE %s (LIKE %s INCLUDING ALL)', target, template);
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s',
                   target, t.id_column, sharded_id._next_id_call(shard_id, seq, layout));
    IF obj_description(template, 'pg_class') IS NOT NULL THEN
        EXECUTE format('COMMENT ON TABLE %s IS %L', target, obj_description(template, 'pg_class'));
    END IF;
    RETURN true;
END
$$;

CREATE OR REPLACE FUNCTION sharded_id._copy_foreign_keys(t sharded_id.shard_tables, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    template regclass := to_regclass(format('%I.%I', t.template_schema, t.template_table));
    target regclass := to_regclass(format('%I.%I', schema, t.table_name));
    fk record;
    def text;
BEGIN
    FOR fk IN
        SELECT c.conname, pg_get_constraintdef(c.oid) AS def,
               c.confrelid::regclass::text AS referenced, st.table_name AS ref_sharded
        FROM pg_constraint c
        JOIN pg_class rc ON rc.oid = c.confrelid
        JOIN pg_namespace rn ON rn.oid = rc.relnamespace
        LEFT JOIN sharded_id.shard_tables st
               ON st.template_schema = rn.nspname AND st.template_table = rc.relname
        WHERE c.conrelid = template AND c.contype = 'f'
        ORDER BY c.conname
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_constraint
                              WHERE conrelid = target AND conname = fk.conname);
        def := fk.def;
        IF fk.ref_sharded IS NOT NULL THEN
            -- Both names are printed under this function's search_path.
            def := replace(def, format(') REFERENCES %s(', fk.referenced),
                           format(') REFERENCES %I.%I(', schema, fk.ref_sharded));
        END IF;
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', target, fk.conname, def);
    END LOOP;
END
$$;

CREATE FUNCTION sharded_id._check_adoptable(schema name)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema);
    templates text;
    tables text[];
BEGIN
    IF schema IN ('public', 'sharded_id', 'information_schema') OR schema LIKE 'pg\_%' THEN
        RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'System schemas, public and sharded_id never hold shards.';
    END IF;
    SELECT string_agg(format('%I.%I', st.template_schema, st.template_table), ', ' ORDER BY st.position)
    INTO templates FROM sharded_id.shard_tables st WHERE st.template_schema = schema;
    IF templates IS NOT NULL THEN
        RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('It holds the template tables %s, which a shard only copies.', templates);
    END IF;
    IF nsp IS NULL
       OR EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = nsp AND p.proname = 'next_id' AND p.pronargs = 0)
       OR EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = nsp AND c.relname = 'id_seq' AND c.relkind = 'S') THEN
        RETURN;
    END IF;
    SELECT array_agg(c.relname::text ORDER BY c.relname) INTO tables
    FROM pg_class c WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'v', 'm', 'f');
    IF tables IS NULL AND NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = nsp) THEN
        RETURN;
    END IF;
    IF tables IS NOT NULL AND EXISTS (SELECT 1 FROM sharded_id.shard_tables)
       AND tables <@ (SELECT array_agg(st.table_name::text) FROM sharded_id.shard_tables st) THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = format('It holds %s but neither a next_id() function nor an id_seq sequence, so create_shard did not make it.',
                              coalesce(array_to_string(tables, ', '), 'functions')),
              HINT = 'Adopt a schema made by create_shard or restored from one, or an empty one.';
END
$$;

COMMENT ON FUNCTION sharded_id._check_adoptable(name) IS
'internal: refuse a schema that is not shaped like a shard before a new shard adopts it';

REVOKE EXECUTE ON FUNCTION sharded_id._check_adoptable(name) FROM PUBLIC;

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
BEGIN
    SELECT * INTO cfg FROM sharded_id.current_settings();
    SELECT * INTO shard FROM sharded_id.shards s WHERE s.shard_id = _provision.shard_id;
    IF FOUND AND shard.schema_name <> coalesce(_provision.schema_name, shard.schema_name) THEN
        RAISE EXCEPTION 'shard % already exists in schema "%"', shard_id, shard.schema_name
            USING ERRCODE = 'duplicate_object';
    ELSIF NOT FOUND THEN
        PERFORM sharded_id.check_shard(shard_id, cfg.layout);
        PERFORM sharded_id._check_adoptable(coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)));
        INSERT INTO sharded_id.shards (shard_id, schema_name, layout, mode)
        VALUES (shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)), cfg.layout, cfg.mode)
        RETURNING * INTO shard;
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

    -- The zero-argument next_id() of the seed, bound at creation where the
    -- server supports SQL-standard bodies, so the planner inlines it.
    IF to_regprocedure(format('%I.next_id()', shard.schema_name)) IS NULL THEN
        IF current_setting('server_version_num')::integer >= 140000 THEN
            EXECUTE format('CREATE FUNCTION %I.next_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE '
                           'BEGIN ATOMIC SELECT %s; END',
                           shard.schema_name, sharded_id._next_id_call(shard.shard_id, seq, shard.layout));
        ELSE
            EXECUTE format('CREATE FUNCTION %I.next_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE AS %L',
                           shard.schema_name,
                           'SELECT ' || sharded_id._next_id_call(shard.shard_id, seq, shard.layout));
        END IF;
        EXECUTE format('COMMENT ON FUNCTION %I.next_id() IS %L', shard.schema_name,
                       format('new id for shard %s', shard.shard_id));
    END IF;

    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        PERFORM sharded_id._copy_table(t, shard.shard_id, shard.schema_name, seq, shard.layout);
    END LOOP;
    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        PERFORM sharded_id._copy_foreign_keys(t, shard.schema_name);
    END LOOP;
    RETURN shard.schema_name;
END
$$;

COMMENT ON FUNCTION sharded_id.create_shard(integer, name) IS
'create the schema of a logical shard (named by the settings, or schema_name) with its sequence (seed mode), next_id() and a copy of every template table; creates only what is missing, so it also adopts a schema restored from a dump';

CREATE OR REPLACE FUNCTION sharded_id.add_table(template regclass, id_column name DEFAULT 'id')
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    t sharded_id.shard_tables;
    shard record;
    copies integer := 0;
BEGIN
    SELECT c.relname, n.nspname, c.relkind INTO rel
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = template;
    IF rel.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', template
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_attribute a
                   WHERE a.attrelid = template AND a.attname = id_column
                     AND a.atttypid = 'pg_catalog.int8'::regtype AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of "%" is not a bigint column', id_column, template
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'The id column of a sharded table must be of type bigint.';
    END IF;
    IF EXISTS (SELECT 1 FROM sharded_id.shards s WHERE s.schema_name = rel.nspname) THEN
        RAISE EXCEPTION 'template table "%" is inside a shard schema', template
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT * INTO t FROM sharded_id.shard_tables st WHERE st.table_name = rel.relname;
    IF FOUND AND (t.template_schema, t.template_table) <> (rel.nspname, rel.relname) THEN
        RAISE EXCEPTION 'a sharded table named "%" already exists', rel.relname
            USING ERRCODE = 'duplicate_table',
                  DETAIL = format('Its template is %I.%I.', t.template_schema, t.template_table);
    ELSIF NOT FOUND THEN
        INSERT INTO sharded_id.shard_tables (table_name, template_schema, template_table, id_column)
        VALUES (rel.relname, rel.nspname, rel.relname, id_column)
        RETURNING * INTO t;
    END IF;

    FOR shard IN SELECT * FROM sharded_id.shards ORDER BY shard_id LOOP
        IF sharded_id._copy_table(t, shard.shard_id, shard.schema_name,
                                  CASE WHEN shard.mode = 'seed' THEN format('%I.id_seq', shard.schema_name)::regclass END,
                                  shard.layout) THEN
            copies := copies + 1;
        END IF;
        PERFORM sharded_id._copy_foreign_keys(t, shard.schema_name);
    END LOOP;
    RETURN copies;
END
$$;

CREATE FUNCTION sharded_id.adopt_table(tbl regclass, shard_id integer, id_column name DEFAULT 'id')
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

REVOKE EXECUTE ON FUNCTION sharded_id.adopt_table(regclass, integer, name) FROM PUBLIC;

--
-- Data nodes: the move fence is an advisory lock, which needs no privilege.
--
CREATE OR REPLACE FUNCTION sharded_id.enter_shard(shard_id integer)
RETURNS name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name;
BEGIN
    -- A move holds this shard's advisory lock (class 1936222564, "shid" in
    -- ASCII) exclusively from its write freeze until it drops the source
    -- copy, so a writer waits here, then finds the shard gone.  Advisory
    -- locks need no privileges: any role that may write the shard's tables
    -- may enter it.
    PERFORM pg_advisory_xact_lock_shared(1936222564, enter_shard.shard_id);
    SELECT s.schema_name INTO schema
    FROM sharded_id.shards s
    WHERE s.shard_id = enter_shard.shard_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard % is not on this node', shard_id
            USING ERRCODE = 'serialization_failure',
                  HINT = 'The shard may have moved to another node. Retry the call through the router.';
    END IF;
    RETURN schema;
END
$$;

--
-- Routers: the shard map's range and the ops partitions' names follow the
-- layout and the settings.
--
ALTER TABLE sharded_id.shard_map
    DROP CONSTRAINT shard_map_shard_id_check,
    ADD CONSTRAINT shard_map_shard_id_check CHECK (shard_id >= 0);

COMMENT ON TABLE sharded_id.shard_map IS
'which data node holds each logical shard (apply_shard_map checks the shards against the layout)';

CREATE OR REPLACE FUNCTION sharded_id.apply_shard_map(cluster name DEFAULT 'sharded_id',
                                           connection_lifetime integer DEFAULT NULL,
                                           query_timeout integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    map_layout text := (SELECT c.layout FROM sharded_id.current_settings() c);
    max_count integer := (SELECT l.max_shard + 1 FROM sharded_id.layouts() l WHERE l.name = map_layout);
    shard_count integer;
    options text[];
    node record;
    ops record;
BEGIN
    PERFORM sharded_id.check_shard(m.shard_id, map_layout) FROM sharded_id.shard_map m;
    SELECT count(*) INTO shard_count FROM sharded_id.shard_map;
    IF shard_count = 0 OR shard_count > max_count OR (shard_count & (shard_count - 1)) <> 0 THEN
        RAISE EXCEPTION 'the shard map holds % shards', shard_count
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('PL/Proxy needs a power of two between 1 and %s partitions, one per logical shard of layout "%s".',
                                  max_count, map_layout);
    END IF;
    IF (SELECT max(shard_id) FROM sharded_id.shard_map) <> shard_count - 1 THEN
        RAISE EXCEPTION 'the shard map does not hold shards 0 to %', shard_count - 1
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Partition n of the cluster serves logical shard n, so every shard from 0 up needs a node.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_foreign_data_wrapper WHERE fdwname = 'plproxy') THEN
        RAISE EXCEPTION 'foreign-data wrapper "plproxy" does not exist'
            USING ERRCODE = 'undefined_object',
                  HINT = 'Run CREATE EXTENSION plproxy on the router first.';
    END IF;

    -- The PL/Proxy cluster: partition n is logical shard n.
    SELECT array_agg(format('p%s=%s', m.shard_id, n.connstr) ORDER BY m.shard_id)
    INTO options
    FROM sharded_id.shard_map m JOIN sharded_id.nodes n USING (node_name);
    -- Settings not given keep their value, or start at 1800 s and none.
    SELECT coalesce(apply_shard_map.connection_lifetime,
                    (SELECT split_part(o, '=', 2)::integer
                     FROM pg_foreign_server s, unnest(s.srvoptions) o
                     WHERE s.srvname = cluster AND o LIKE 'connection\_lifetime=%'), 1800),
           coalesce(apply_shard_map.query_timeout,
                    (SELECT split_part(o, '=', 2)::integer
                     FROM pg_foreign_server s, unnest(s.srvoptions) o
                     WHERE s.srvname = cluster AND o LIKE 'query\_timeout=%'), 0)
    INTO connection_lifetime, query_timeout;
    options := options || format('connection_lifetime=%s', connection_lifetime)
                       || format('query_timeout=%s', query_timeout);
    PERFORM sharded_id._set_server_options(cluster, 'plproxy', options);

    -- A postgres_fdw server per node, for ops queries.
    IF EXISTS (SELECT 1 FROM pg_foreign_data_wrapper WHERE fdwname = 'postgres_fdw') THEN
        FOR node IN SELECT * FROM sharded_id.nodes ORDER BY node_name LOOP
            PERFORM sharded_id._set_server_options(
                sharded_id.node_server(node.node_name), 'postgres_fdw',
                sharded_id._connstr_options(node.connstr)
                || ARRAY['extensions=sharded_id', 'async_capable=true']);
        END LOOP;
        FOR ops IN SELECT * FROM sharded_id.ops_tables LOOP
            PERFORM sharded_id._attach_ops_partitions(ops.ops_table);
        END LOOP;
    END IF;
    RETURN shard_count;
END
$$;

CREATE OR REPLACE FUNCTION sharded_id._attach_ops_partitions(ops_table regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part record;
    ops_schema name;
    ops_name name;
    remote_table name;
    pad integer := (SELECT c.pad_width FROM sharded_id.current_settings() c);
BEGIN
    SELECT n.nspname, c.relname INTO ops_schema, ops_name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = ops_table;
    SELECT c.relname INTO remote_table
    FROM sharded_id.ops_tables o JOIN pg_class c ON c.oid = o.template
    WHERE o.ops_table = _attach_ops_partitions.ops_table;
    FOR part IN SELECT i.inhrelid::regclass AS rel FROM pg_inherits i WHERE i.inhparent = ops_table LOOP
        EXECUTE format('DROP FOREIGN TABLE %s', part.rel);
    END LOOP;
    FOR part IN SELECT m.shard_id, m.node_name FROM sharded_id.shard_map m ORDER BY m.shard_id LOOP
        EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES IN (%s) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)',
                       ops_schema, format('%s_%s', ops_name, lpad(part.shard_id::text, greatest(pad, length(part.shard_id::text)), '0')),
                       ops_table, part.shard_id, sharded_id.node_server(part.node_name),
                       sharded_id.shard_schema(part.shard_id), remote_table);
    END LOOP;
END
$$;


--
-- Monitoring the generator.
--
CREATE FUNCTION sharded_id.generator_stats(OUT layout text,
                                           OUT shard_id integer,
                                           OUT ids bigint,
                                           OUT full_ms_waits bigint,
                                           OUT wait_time double precision,
                                           OUT clock_behind bigint,
                                           OUT max_clock_lag double precision,
                                           OUT current_ms timestamptz,
                                           OUT last_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_generator_stats'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED ROWS 100;

COMMENT ON FUNCTION sharded_id.generator_stats() IS
'one row per (layout, shard) slot in use: ids minted, waits for the clock (ms), clock-behind events and the largest lag (ms), the millisecond filled, the newest id';

CREATE VIEW sharded_id.generator_stats AS
SELECT * FROM sharded_id.generator_stats();

COMMENT ON VIEW sharded_id.generator_stats IS
'statistics of the id generator, one row per (layout, shard) slot in use, since the last reset_stats()';

CREATE FUNCTION sharded_id.generator_info(OUT slots_used integer,
                                          OUT max_shards integer,
                                          OUT ceiling timestamptz,
                                          OUT ceiling_writes bigint,
                                          OUT ceiling_write_time double precision,
                                          OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_generator_info'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id.generator_info() IS
'the generator as a whole: slots used of sharded_id.max_shards, the durable ceiling, its writes and their time (ms), when statistics were reset';

CREATE VIEW sharded_id.generator_info AS
SELECT * FROM sharded_id.generator_info();

COMMENT ON VIEW sharded_id.generator_info IS
'the id generator as a whole: slots in use, the durable clock ceiling and its writes';

CREATE FUNCTION sharded_id.reset_stats()
RETURNS void
AS 'MODULE_PATHNAME', 'shid_reset_stats'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_stats() IS
'zero the statistics of the id generator';

REVOKE ALL ON sharded_id.generator_stats, sharded_id.generator_info FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.generator_stats() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.generator_info() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.reset_stats() FROM PUBLIC;
GRANT SELECT ON sharded_id.generator_stats, sharded_id.generator_info TO pg_monitor;
GRANT EXECUTE ON FUNCTION sharded_id.generator_stats() TO pg_monitor;
GRANT EXECUTE ON FUNCTION sharded_id.generator_info() TO pg_monitor;
