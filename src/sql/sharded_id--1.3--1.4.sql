/* src/sql/sharded_id--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '1.4'" to load this file. \quit

--
-- 1.4: ids stay unique across servers.  A shard's floor travels with it
-- (raise_floor, high_water), only its owner mints (retired_shards,
-- retire_shard), and writers that share a shard are told apart by their
-- stripe (stripe_id; the settings sharded_id.stripes and sharded_id.stripe).
--
--
-- Across servers.  A shard's floor: every id minted here for it afterwards
-- is greater than a given id, whatever this server's clock reads, durably
-- (the clock ceiling goes past it, WAL-logged).  Moves and restores raise
-- it from the shard's high-water mark on the server it came from.
--
CREATE FUNCTION sharded_id.raise_floor(shard_id integer, above_id bigint, layout text DEFAULT 'instagram')
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_raise_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.raise_floor(integer, bigint, text) IS
'every id minted on this server for the shard from now on is greater than above_id, also after a restart or a failover; returns the floor';

CREATE FUNCTION sharded_id.high_water(shard_id integer, layout text DEFAULT 'instagram')
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_high_water'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.high_water(integer, text) IS
'the largest id of the shard that this server may have minted: raise_floor on the server that takes the shard over';

CREATE FUNCTION sharded_id._retire_shard(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_retire_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._retire_shard(integer, text) IS
'internal: stop minting for the shard here at once (undone if the transaction aborts); returns its high-water mark';

CREATE FUNCTION sharded_id._own_shard(shard_id integer, layout text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_own_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._own_shard(integer, text) IS
'internal: mint for the shard here again once the transaction commits';

REVOKE EXECUTE ON FUNCTION sharded_id.raise_floor(integer, bigint, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.high_water(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._retire_shard(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._own_shard(integer, text) FROM PUBLIC;

CREATE FUNCTION sharded_id.stripe_id(id bigint, stripes integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_stripe_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.stripe_id(bigint, integer) IS
'stripe of an id minted with sharded_id.stripes = stripes: which writer of the shard minted it';

CREATE FUNCTION sharded_id.stripe_id(id bigint, stripes integer, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_stripe_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.stripe_id(bigint, integer, text) IS
'stripe of an id of the named layout minted with sharded_id.stripes = stripes';

-- Only the owner mints: a shard this server gave away stays here, so that
-- next_id refuses it after a restart or a failover too (owner.c).
CREATE TABLE sharded_id.retired_shards (
    shard_id integer PRIMARY KEY CHECK (shard_id >= 0),
    layout text NOT NULL,
    high_water bigint,
    retired_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE sharded_id.retired_shards IS
'shards this server gave away (drop_shard, moves), with their high-water mark here: next_id refuses them until create_shard takes them back';

SELECT pg_catalog.pg_extension_config_dump('sharded_id.retired_shards', '');
GRANT SELECT ON sharded_id.retired_shards TO PUBLIC;

-- The largest id in a shard's copies of the template tables.  max() of an
-- indexed key reads one index entry.
CREATE FUNCTION sharded_id.shard_max_id(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name := (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = shard_max_id.shard_id);
    t sharded_id.shard_tables;
    table_top bigint;
    top_id bigint;
BEGIN
    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        CONTINUE WHEN to_regclass(format('%I.%I', schema, t.table_name)) IS NULL;
        EXECUTE format('SELECT max(%I) FROM %I.%I', t.id_column, schema, t.table_name)
        INTO table_top;
        top_id := greatest(top_id, table_top);
    END LOOP;
    RETURN top_id;
END
$$;

COMMENT ON FUNCTION sharded_id.shard_max_id(integer) IS
'the largest id in a shard''s copies of the template tables, or NULL';

-- After a restore on new hardware, or before a logical replica mints: raise
-- every shard's floor over the largest id its tables hold.
CREATE FUNCTION sharded_id.raise_floors()
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
'raise the floor of every shard of the catalog over the largest id its tables hold, as after a restore on another server; returns how many shards hold ids';

-- Shards adopted with rows raise their floor; new shards take the shard back.
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

-- Give a shard away: out of the catalog, so that enter_shard turns writers
-- away, and this server stops minting for it at once (for good when the
-- transaction commits).  Returns its high-water mark here, which the
-- server that takes it over passes to raise_floor.  The schema stays.
CREATE FUNCTION sharded_id.retire_shard(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard record;
    mark bigint;
BEGIN
    DELETE FROM sharded_id.shards s WHERE s.shard_id = retire_shard.shard_id
    RETURNING * INTO shard;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard % does not exist', shard_id
            USING ERRCODE = 'undefined_object';
    END IF;
    mark := sharded_id._retire_shard(shard.shard_id, shard.layout);
    INSERT INTO sharded_id.retired_shards AS r (shard_id, layout, high_water)
    VALUES (shard.shard_id, shard.layout, mark)
    ON CONFLICT ON CONSTRAINT retired_shards_pkey DO UPDATE
        SET layout = excluded.layout, high_water = excluded.high_water,
            retired_at = excluded.retired_at;
    RETURN mark;
END
$$;

COMMENT ON FUNCTION sharded_id.retire_shard(integer) IS
'give a logical shard away: out of the catalog, and next_id refuses it here until create_shard takes it back; keeps the schema; returns the shard''s high-water mark for raise_floor on its new server';

CREATE OR REPLACE FUNCTION sharded_id.drop_shard(shard_id integer)
RETURNS name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name := (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = drop_shard.shard_id);
BEGIN
    PERFORM sharded_id.retire_shard(shard_id);
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', schema);
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id.drop_shard(integer) IS
'drop a logical shard: its schema with all its tables and rows, and its catalog entry; next_id refuses it here until create_shard takes it back';

REVOKE EXECUTE ON FUNCTION sharded_id.retire_shard(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.raise_floors() FROM PUBLIC;

-- adopt_table refuses a shard this server gave away.
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
               WHERE r.shard_id = adopt_table.shard_id AND r.layout = cfg.layout) THEN
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

-- Bad input refused up front: a schema prefix PostgreSQL reserves, an empty
-- schema name.
CREATE OR REPLACE FUNCTION sharded_id.configure(schema_prefix text DEFAULT NULL,
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
        RAISE EXCEPTION 'schema prefix "%" is out of range', left(schema_prefix, 64)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('Schema prefixes must be between 1 and 50 bytes long; this one is %s bytes.',
                                  octet_length(schema_prefix));
    END IF;
    IF schema_prefix LIKE 'pg\_%' THEN
        RAISE EXCEPTION 'schema prefix "%" is reserved', schema_prefix
            USING ERRCODE = 'reserved_name',
                  DETAIL = 'PostgreSQL reserves names beginning with "pg_" for system schemas, so no shard schema could be created with it.';
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

CREATE OR REPLACE FUNCTION sharded_id.create_shard(shard_id integer, schema_name name DEFAULT NULL)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF shard_id IS NULL THEN
        RAISE EXCEPTION 'shard id must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF schema_name = '' THEN
        RAISE EXCEPTION 'schema name of shard % must not be empty', shard_id
            USING ERRCODE = 'invalid_name',
                  HINT = 'Pass NULL, or leave the name out, for the name the settings give the shard.';
    END IF;
    RETURN sharded_id._provision(shard_id, schema_name);
END
$$;

-- Connection strings: parsed by libpq itself (URIs too), and sharded_id.nodes,
-- whose strings may hold passwords, no longer readable by PUBLIC.
CREATE OR REPLACE FUNCTION sharded_id._connstr_options(connstr text)
RETURNS text[]
AS 'MODULE_PATHNAME', 'shid_connstr_options'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_options(text) IS
'internal: the options a libpq connection string or URI sets, as libpq parses them, less the user and secrets (they belong in user mappings)';

REVOKE ALL ON sharded_id.nodes FROM PUBLIC;

-- Provision a range of shards in batches of batch_size, one transaction
-- each, so that the lock table stays bounded (a shard holds a few dozen
-- locks until its transaction ends: its schema, sequence, function, tables
-- and indexes) however long the range.  A failure keeps the batches before
-- it, and running the call again resumes, since create_shard creates only
-- what is missing.  Progress shows in a NOTICE per batch, and to other
-- sessions in sharded_id.shards as each batch commits.
--
-- A procedure that commits cannot carry a SET clause, so this one pins its
-- search_path with set_config at the start of each of its transactions.
CREATE PROCEDURE sharded_id.provision_shards(first_shard integer, last_shard integer,
                                             batch_size integer DEFAULT 64)
LANGUAGE plpgsql
AS $$
DECLARE
    batch_start bigint := first_shard;
    batch_end bigint;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF first_shard IS NULL OR last_shard IS NULL OR batch_size IS NULL THEN
        RAISE EXCEPTION 'shard range and batch size must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF first_shard > last_shard THEN
        RAISE EXCEPTION 'first shard % is after last shard %', first_shard, last_shard
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch size % is out of range', batch_size
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A batch holds at least one shard.';
    END IF;
    WHILE batch_start <= last_shard LOOP
        batch_end := least(last_shard, batch_start + batch_size - 1);
        PERFORM sharded_id._provision(s::integer, NULL) FROM generate_series(batch_start, batch_end) s;
        RAISE NOTICE 'shards % to % provisioned (% to %)', batch_start, batch_end, first_shard, last_shard;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        batch_start := batch_end + 1;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE sharded_id.provision_shards(integer, integer, integer) IS
'create_shard for every shard from first_shard to last_shard, committing every batch_size shards so that any number fits a default lock table; resumable; CALL it outside a transaction block';

REVOKE EXECUTE ON PROCEDURE sharded_id.provision_shards(integer, integer, integer) FROM PUBLIC;

COMMENT ON FUNCTION sharded_id.create_shards(integer, integer) IS
'create_shard for every shard from first_shard to last_shard, all or nothing, in one transaction (for thousands, CALL provision_shards)';
