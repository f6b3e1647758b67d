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


-- Issue 27: shard copies that are the same schema (schema_ddl object for
-- object, schema_inventory, moves that check both), provisioning without
-- superuser, and passwords out of server options and statements.
--
-- Privileges as statements: acl of object (e.g. 'TABLE s.t', 'SCHEMA s'),
-- owned by owner, exactly: the defaults revoked, then each grant, made by
-- its grantor (SET ROLE) with as_grantor, else by the owner.  A NULL acl
-- is the default one, and gives nothing.  With columns, the column
-- privileges of a table (nothing to revoke).
CREATE FUNCTION sharded_id._acl_ddl(object text, acl aclitem[], owner oid, columns text DEFAULT NULL,
                                    as_grantor boolean DEFAULT true)
RETURNS SETOF text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s FROM (
        SELECT 0 AS step, false AS other_grantor, format('REVOKE ALL ON %s FROM PUBLIC', object) AS s
        WHERE acl IS NOT NULL AND columns IS NULL
        UNION ALL
        SELECT 1, false, format('REVOKE ALL ON %s FROM %I', object, pg_get_userbyid(owner))
        WHERE acl IS NOT NULL AND columns IS NULL
        UNION ALL
        SELECT 2, a.grantor <> owner,
               CASE WHEN a.grantor <> owner AND as_grantor THEN format('SET ROLE %I; ', pg_get_userbyid(a.grantor)) ELSE '' END
               || format('GRANT %s ON %s TO %s%s',
                         string_agg(a.privilege_type || coalesce(' (' || columns || ')', ''), ', ' ORDER BY a.privilege_type),
                         object,
                         CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
                         CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
               || CASE WHEN a.grantor <> owner AND as_grantor THEN '; RESET ROLE' ELSE '' END
        FROM aclexplode(acl) a
        GROUP BY a.grantor, a.grantee, a.is_grantable
    ) x
    ORDER BY step, other_grantor, s
$$;

COMMENT ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text, boolean) IS
'internal: the REVOKE and GRANT statements that give an object (or columns of a table) this access control list, each grant made by its grantor or by the owner';

REVOKE EXECUTE ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text, boolean) FROM PUBLIC;

-- The statements that give relation dst (a qualified name) what src has
-- beyond its columns, constraints and indexes: triggers and their enabled
-- state, row-level security and its policies, owner, privileges (table and
-- column, exactly: defaults revoked first) and comments (of the relation,
-- its columns, triggers and policies).  Names are printed under this
-- function's search_path, so qualified; roles are read from pg_roles, so
-- that a role without superuser can copy a table too.
-- What schema_ddl cannot make again, as descriptions: objects of kinds it
-- does not know, members of extensions, and shapes of tables and types it
-- does not rebuild (plain inheritance, typed tables, rules, ranges with a
-- canonical function).
CREATE FUNCTION sharded_id._schema_unsupported(nsp oid)
RETURNS SETOF text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN o.classid = 'pg_proc'::regclass
                THEN (SELECT CASE p.prokind WHEN 'a' THEN 'aggregate ' ELSE 'routine ' END || p.oid::regprocedure::text
                      FROM pg_proc p WHERE p.oid = o.objid)
                ELSE pg_describe_object(o.classid, o.objid, 0) END FROM (
        SELECT 'pg_class'::regclass::oid AS classid, c.oid AS objid FROM pg_class c
        WHERE c.relnamespace = nsp
          AND (c.relkind NOT IN ('r', 'p', 'v', 'm', 'S', 'c', 'i', 'I') OR c.reloftype <> 0
               OR (NOT c.relispartition AND EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.oid)))
        UNION ALL
        SELECT 'pg_rewrite'::regclass, w.oid FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class
        WHERE c.relnamespace = nsp AND w.rulename <> '_RETURN'
        UNION ALL
        SELECT 'pg_proc'::regclass, p.oid FROM pg_proc p WHERE p.pronamespace = nsp AND p.prokind NOT IN ('f', 'p', 'w')
        UNION ALL
        SELECT 'pg_type'::regclass, t.oid FROM pg_type t
        WHERE t.typnamespace = nsp
          AND NOT (t.typisdefined AND (t.typtype IN ('e', 'd', 'r', 'm') OR t.typrelid <> 0
                                       OR EXISTS (SELECT FROM pg_type e WHERE e.typarray = t.oid)))
        UNION ALL
        SELECT 'pg_type'::regclass, r.rngtypid FROM pg_range r JOIN pg_type t ON t.oid = r.rngtypid
        WHERE t.typnamespace = nsp AND r.rngcanonical <> 0
        UNION ALL
        SELECT 'pg_operator'::regclass, x.oid FROM pg_operator x WHERE x.oprnamespace = nsp
        UNION ALL
        SELECT 'pg_opclass'::regclass, x.oid FROM pg_opclass x WHERE x.opcnamespace = nsp
        UNION ALL
        SELECT 'pg_opfamily'::regclass, x.oid FROM pg_opfamily x WHERE x.opfnamespace = nsp
        UNION ALL
        SELECT 'pg_statistic_ext'::regclass, x.oid FROM pg_statistic_ext x WHERE x.stxnamespace = nsp
        UNION ALL
        SELECT 'pg_ts_config'::regclass, x.oid FROM pg_ts_config x WHERE x.cfgnamespace = nsp
        UNION ALL
        SELECT 'pg_ts_dict'::regclass, x.oid FROM pg_ts_dict x WHERE x.dictnamespace = nsp
        UNION ALL
        SELECT 'pg_ts_parser'::regclass, x.oid FROM pg_ts_parser x WHERE x.prsnamespace = nsp
        UNION ALL
        SELECT 'pg_ts_template'::regclass, x.oid FROM pg_ts_template x WHERE x.tmplnamespace = nsp
        UNION ALL
        SELECT 'pg_collation'::regclass, x.oid FROM pg_collation x WHERE x.collnamespace = nsp
        UNION ALL
        SELECT 'pg_conversion'::regclass, x.oid FROM pg_conversion x WHERE x.connamespace = nsp
        UNION ALL
        SELECT 'pg_extension'::regclass, x.oid FROM pg_extension x WHERE x.extnamespace = nsp
        UNION ALL
        SELECT 'pg_default_acl'::regclass, x.oid FROM pg_default_acl x WHERE x.defaclnamespace = nsp
        UNION ALL
        SELECT d.classid, d.objid FROM pg_depend d
        WHERE d.deptype = 'e' AND d.objsubid = 0
          AND ((d.classid = 'pg_class'::regclass AND d.objid IN (SELECT c.oid FROM pg_class c WHERE c.relnamespace = nsp))
               OR (d.classid = 'pg_proc'::regclass AND d.objid IN (SELECT p.oid FROM pg_proc p WHERE p.pronamespace = nsp))
               OR (d.classid = 'pg_type'::regclass AND d.objid IN (SELECT t.oid FROM pg_type t WHERE t.typnamespace = nsp)))
    ) o
    ORDER BY 1
$$;

COMMENT ON FUNCTION sharded_id._schema_unsupported(oid) IS
'internal: the objects of a schema that schema_ddl cannot make again, described';

REVOKE EXECUTE ON FUNCTION sharded_id._schema_unsupported(oid) FROM PUBLIC;

-- The objects of a schema that schema_ddl creates one statement each
-- (types, sequences, functions and procedures, tables and partitions,
-- views, materialized views), with the length of the longest chain of
-- objects of the schema each depends on: made in that order, each finds
-- what it needs.  Defaults, domain constraints and view rules count for
-- the object they belong to; sequence ownership, constraints, indexes,
-- triggers and policies are made after every object, and do not count.
CREATE FUNCTION sharded_id._schema_objects(nsp oid)
RETURNS TABLE (classid oid, objid oid, level integer)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE
    nodes (classid, objid) AS (
        SELECT 'pg_type'::regclass::oid, t.oid FROM pg_type t
        WHERE t.typnamespace = nsp AND t.typtype IN ('e', 'd', 'r')
        UNION ALL
        SELECT 'pg_class'::regclass::oid, c.oid FROM pg_class c
        WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'c')
          -- not the sequences of identity columns, which their columns make
          AND NOT (c.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                                               AND d.objid = c.oid AND d.deptype = 'i'))
        UNION ALL
        SELECT 'pg_proc'::regclass::oid, p.oid FROM pg_proc p
        WHERE p.pronamespace = nsp AND p.prokind IN ('f', 'p', 'w')
          -- not the constructors of range types, which their types make
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                          AND d.objid = p.oid AND d.deptype = 'i')
    ),
    -- Every catalog object of the schema, with the node it belongs to.
    member (classid, objid, node_class, node_obj) AS (
        SELECT n.classid, n.objid, n.classid, n.objid FROM nodes n
        UNION ALL
        SELECT 'pg_type'::regclass::oid, t.oid, 'pg_class'::regclass::oid, t.typrelid FROM pg_type t
        WHERE t.typnamespace = nsp AND t.typrelid <> 0
        UNION ALL
        SELECT 'pg_type'::regclass::oid, t.typarray, 'pg_type'::regclass::oid, t.oid FROM pg_type t
        WHERE t.typnamespace = nsp AND t.typarray <> 0 AND t.typtype IN ('e', 'd', 'r')
        UNION ALL
        SELECT 'pg_type'::regclass::oid, t.typarray, 'pg_class'::regclass::oid, t.typrelid FROM pg_type t
        WHERE t.typnamespace = nsp AND t.typarray <> 0 AND t.typrelid <> 0
        UNION ALL
        SELECT 'pg_type'::regclass::oid, m.oid, 'pg_type'::regclass::oid, r.rngtypid
        FROM pg_range r JOIN pg_type t ON t.oid = r.rngtypid JOIN pg_type m ON m.oid = r.rngmultitypid
        WHERE t.typnamespace = nsp
        UNION ALL
        SELECT 'pg_type'::regclass::oid, m.typarray, 'pg_type'::regclass::oid, r.rngtypid
        FROM pg_range r JOIN pg_type t ON t.oid = r.rngtypid JOIN pg_type m ON m.oid = r.rngmultitypid
        WHERE t.typnamespace = nsp AND m.typarray <> 0
        UNION ALL
        SELECT 'pg_attrdef'::regclass::oid, d.oid, 'pg_class'::regclass::oid, d.adrelid
        FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid WHERE c.relnamespace = nsp
        UNION ALL
        SELECT 'pg_constraint'::regclass::oid, k.oid, 'pg_type'::regclass::oid, k.contypid
        FROM pg_constraint k JOIN pg_type t ON t.oid = k.contypid WHERE t.typnamespace = nsp
        UNION ALL
        SELECT 'pg_rewrite'::regclass::oid, w.oid, 'pg_class'::regclass::oid, w.ev_class
        FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class
        WHERE c.relnamespace = nsp AND w.rulename = '_RETURN'
    ),
    edges (from_class, from_obj, to_class, to_obj) AS (
        SELECT a.node_class, a.node_obj, b.node_class, b.node_obj
        FROM pg_depend d
        JOIN member a ON a.classid = d.classid AND a.objid = d.objid
        JOIN member b ON b.classid = d.refclassid AND b.objid = d.refobjid
        WHERE d.deptype = 'n' AND (a.node_class, a.node_obj) <> (b.node_class, b.node_obj)
        UNION
        SELECT 'pg_class'::regclass::oid, i.inhrelid, 'pg_class'::regclass::oid, i.inhparent
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE c.relnamespace = nsp AND c.relispartition
    ),
    depth (classid, objid, level) AS (
        SELECT n.classid, n.objid, 0 FROM nodes n
        UNION
        SELECT e.from_class, e.from_obj, depth.level + 1
        FROM edges e JOIN depth ON e.to_class = depth.classid AND e.to_obj = depth.objid
        -- a cycle stops one past the number of objects
        WHERE depth.level <= (SELECT count(*) FROM nodes)
    )
    SELECT d.classid, d.objid, max(d.level)::integer FROM depth d GROUP BY d.classid, d.objid
$$;

COMMENT ON FUNCTION sharded_id._schema_objects(oid) IS
'internal: the objects of a schema that schema_ddl makes one statement each, with the depth of their dependencies on each other';

REVOKE EXECUTE ON FUNCTION sharded_id._schema_objects(oid) FROM PUBLIC;

-- A shard schema as the statements that make it again, empty, in another
-- database: what a move runs on its target before the rows arrive.  In the
-- order they must run in: the schema; its types, sequences, functions and
-- procedures, tables and partitions, views and materialized views (these
-- without rows), each after the objects of the schema it depends on; then
-- constraints, indexes, replica identities, sequence ownership; triggers
-- with their enabled state, row security, policies, owners, privileges and
-- comments of every object; foreign keys; the schema's privileges; and a
-- REFRESH of each materialized view that holds rows.  Function bodies are
-- not checked as they are made (check_function_bodies), as in pg_dump: the
-- statements run in one transaction.  An object it cannot make again is an
-- error (0A000) that names it, never left out.  Rows and sequence
-- positions are not part of it.  Names print qualified.
CREATE OR REPLACE FUNCTION sharded_id.schema_ddl(schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema_ddl.schema_name);
    schema_row record;
    unsupported text[];
    objects record;
    r record;
    dc record;
    type_name text;
BEGIN
    IF nsp IS NULL THEN
        RAISE EXCEPTION 'schema "%" does not exist', schema_name
            USING ERRCODE = 'invalid_schema_name';
    END IF;
    unsupported := ARRAY(SELECT sharded_id._schema_unsupported(nsp));
    IF cardinality(unsupported) > 0 THEN
        RAISE EXCEPTION 'schema_ddl cannot rebuild % of schema "%"', unsupported[1], schema_name
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = format('Objects it cannot make again: %s.', array_to_string(unsupported, '; ')),
                  HINT = 'Drop these objects, or move them out of the schema, before the schema is copied.';
    END IF;
    IF EXISTS (SELECT FROM sharded_id._schema_objects(nsp) o
               WHERE o.level > (SELECT count(*) FROM sharded_id._schema_objects(nsp))) THEN
        RAISE EXCEPTION 'objects of schema "%" depend on each other in a cycle', schema_name
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'schema_ddl makes each object after those it depends on, and cannot order these.';
    END IF;
    SELECT n.nspowner, n.nspacl INTO schema_row FROM pg_namespace n WHERE n.oid = nsp;
    RETURN NEXT format('CREATE SCHEMA %I AUTHORIZATION %I', schema_name, pg_get_userbyid(schema_row.nspowner));
    -- The schema's privileges first: grantors that are not the owner of
    -- an object make their grants as themselves, in the schema.
    RETURN QUERY SELECT sharded_id._acl_ddl(format('SCHEMA %I', schema_name), schema_row.nspacl, schema_row.nspowner);
    RETURN NEXT 'SET LOCAL check_function_bodies = off';

    -- The objects, each after those it depends on.
    FOR objects IN
        SELECT o.classid, o.objid FROM sharded_id._schema_objects(nsp) o ORDER BY o.level, o.objid
    LOOP
        IF objects.classid = 'pg_proc'::regclass THEN
            RETURN NEXT rtrim(pg_get_functiondef(objects.objid), E'\n');
        ELSIF objects.classid = 'pg_type'::regclass THEN
            SELECT t.* INTO r FROM pg_type t WHERE t.oid = objects.objid;
            type_name := format('%I.%I', schema_name, r.typname);
            IF r.typtype = 'e' THEN
                RETURN NEXT format('CREATE TYPE %s AS ENUM (%s)', type_name,
                                   (SELECT coalesce(string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder), '')
                                    FROM pg_enum e WHERE e.enumtypid = r.oid));
            ELSIF r.typtype = 'd' THEN
                RETURN NEXT format('CREATE DOMAIN %s AS %s%s%s', type_name, format_type(r.typbasetype, r.typtypmod),
                                   CASE WHEN r.typcollation <> (SELECT b.typcollation FROM pg_type b WHERE b.oid = r.typbasetype)
                                        THEN ' COLLATE ' || r.typcollation::regcollation::text ELSE '' END,
                                   coalesce(' DEFAULT ' || r.typdefault, ''));
                FOR dc IN
                    SELECT c.conname, pg_get_constraintdef(c.oid) AS def, c.contype FROM pg_constraint c
                    WHERE c.contypid = r.oid ORDER BY c.conname
                LOOP
                    RETURN NEXT format('ALTER DOMAIN %s ADD CONSTRAINT %I %s', type_name, dc.conname, dc.def);
                END LOOP;
                IF r.typnotnull AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.contypid = r.oid AND c.contype = 'n') THEN
                    RETURN NEXT format('ALTER DOMAIN %s SET NOT NULL', type_name);
                END IF;
            ELSIF r.typtype = 'r' THEN
                RETURN NEXT (SELECT format('CREATE TYPE %s AS RANGE (SUBTYPE = %s, SUBTYPE_OPCLASS = %I.%I%s%s, MULTIRANGE_TYPE_NAME = %I.%I)',
                                           type_name, format_type(g.rngsubtype, NULL), opn.nspname, opc.opcname,
                                           CASE WHEN g.rngcollation <> 0 AND g.rngcollation <> st.typcollation
                                                THEN ', COLLATION = ' || g.rngcollation::regcollation::text ELSE '' END,
                                           CASE WHEN g.rngsubdiff <> 0 THEN ', SUBTYPE_DIFF = ' || g.rngsubdiff::regproc::text ELSE '' END,
                                           mn.nspname, mt.typname)
                             FROM pg_range g
                             JOIN pg_type st ON st.oid = g.rngsubtype
                             JOIN pg_opclass opc ON opc.oid = g.rngsubopc
                             JOIN pg_namespace opn ON opn.oid = opc.opcnamespace
                             JOIN pg_type mt ON mt.oid = g.rngmultitypid
                             JOIN pg_namespace mn ON mn.oid = mt.typnamespace
                             WHERE g.rngtypid = r.oid);
            END IF;
        ELSE
            SELECT c.oid, c.relname, c.relkind, c.relispartition, c.relpersistence, c.reloptions,
                   (SELECT a.amname FROM pg_am a WHERE a.oid = c.relam) AS am,
                   pg_get_expr(c.relpartbound, c.oid) AS bound,
                   (SELECT i.inhparent::regclass::text FROM pg_inherits i WHERE i.inhrelid = c.oid) AS parent,
                   CASE WHEN c.relkind = 'p' THEN ' PARTITION BY ' || pg_get_partkeydef(c.oid) ELSE '' END AS partition_by,
                   (SELECT string_agg(format('%I %s%s%s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                              CASE WHEN a.attcollation <> t.typcollation
                                   THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END,
                              CASE a.attgenerated WHEN 's' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ') STORED'
                                                  WHEN 'v' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ') VIRTUAL'
                                   ELSE coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '') END,
                              CASE a.attidentity WHEN 'a' THEN ' GENERATED ALWAYS AS IDENTITY'
                                                 WHEN 'd' THEN ' GENERATED BY DEFAULT AS IDENTITY' ELSE '' END
                              -- the identity's sequence, under its name, with its options
                              || coalesce((SELECT format(' (SEQUENCE NAME %I.%I INCREMENT %s MINVALUE %s MAXVALUE %s START %s CACHE %s%s)',
                                                         schema_name, sc.relname, q.seqincrement,
                                                         q.seqmin, q.seqmax, q.seqstart, q.seqcache,
                                                         CASE WHEN q.seqcycle THEN ' CYCLE' ELSE '' END)
                                           FROM pg_depend dep JOIN pg_class sc ON sc.oid = dep.objid
                                           JOIN pg_sequence q ON q.seqrelid = sc.oid
                                           WHERE a.attidentity <> '' AND dep.classid = 'pg_class'::regclass
                                             AND dep.refclassid = 'pg_class'::regclass AND dep.refobjid = a.attrelid
                                             AND dep.refobjsubid = a.attnum AND dep.deptype = 'i' AND sc.relkind = 'S'), ''),
                              CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END), ', ' ORDER BY a.attnum)
                    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
                   (SELECT string_agg(format('%I %s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                              CASE WHEN a.attcollation <> t.typcollation
                                   THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END), ', ' ORDER BY a.attnum)
                    FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS attributes
            INTO r FROM pg_class c WHERE c.oid = objects.objid;
            IF r.relkind = 'S' THEN
                RETURN NEXT (SELECT format('CREATE SEQUENCE %I.%I AS %s INCREMENT %s MINVALUE %s MAXVALUE %s START %s CACHE %s%s',
                                           schema_name, r.relname, format_type(q.seqtypid, NULL), q.seqincrement, q.seqmin,
                                           q.seqmax, q.seqstart, q.seqcache, CASE WHEN q.seqcycle THEN ' CYCLE' ELSE '' END)
                             FROM pg_sequence q WHERE q.seqrelid = r.oid);
            ELSIF r.relkind = 'c' THEN
                RETURN NEXT format('CREATE TYPE %I.%I AS (%s)', schema_name, r.relname, coalesce(r.attributes, ''));
            ELSIF r.relkind = 'v' THEN
                RETURN NEXT format('CREATE VIEW %I.%I%s AS %s', schema_name, r.relname,
                                   coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''),
                                   rtrim(pg_get_viewdef(r.oid), ';'));
            ELSIF r.relkind = 'm' THEN
                RETURN NEXT format('CREATE MATERIALIZED VIEW %I.%I%s%s AS %s WITH NO DATA', schema_name, r.relname,
                                   CASE WHEN r.am <> 'heap' THEN ' USING ' || quote_ident(r.am) ELSE '' END,
                                   coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''),
                                   rtrim(pg_get_viewdef(r.oid), ';'));
            ELSIF r.relispartition THEN
                RETURN NEXT format('CREATE TABLE %I.%I PARTITION OF %s %s%s%s', schema_name, r.relname, r.parent,
                                   r.bound, r.partition_by,
                                   coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''));
            ELSE
                RETURN NEXT format('CREATE %sTABLE %I.%I (%s)%s%s%s', CASE WHEN r.relpersistence = 'u' THEN 'UNLOGGED ' ELSE '' END,
                                   schema_name, r.relname, coalesce(r.columns, ''), r.partition_by,
                                   CASE WHEN r.am IS NOT NULL AND r.am <> 'heap' THEN ' USING ' || quote_ident(r.am) ELSE '' END,
                                   coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''));
            END IF;
        END IF;
    END LOOP;

    -- Constraints and indexes of each table that are its own, not cloned
    -- from a partitioned parent's (those come with the parent's).
    RETURN QUERY
        SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.conrelid::regclass, k.conname, pg_get_constraintdef(k.oid))
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
        WHERE c.relnamespace = nsp AND k.contype IN ('p', 'u', 'x', 'c') AND k.conislocal
        ORDER BY c.relispartition, c.oid, k.contype DESC, k.conname;
    RETURN QUERY
        SELECT replace(pg_get_indexdef(x.indexrelid), ' ON ONLY ', ' ON ')
        FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid
        WHERE c.relnamespace = nsp
          AND NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conindid = x.indexrelid AND k.conrelid = x.indrelid)
          AND NOT EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = x.indexrelid)
        ORDER BY c.relispartition, c.oid, x.indexrelid;
    RETURN QUERY
        SELECT format('ALTER TABLE %s REPLICA IDENTITY %s', c.oid::regclass,
                      CASE c.relreplident WHEN 'f' THEN 'FULL' WHEN 'n' THEN 'NOTHING'
                           ELSE 'USING INDEX ' || (SELECT quote_ident(ic.relname) FROM pg_index x
                                                   JOIN pg_class ic ON ic.oid = x.indexrelid
                                                   WHERE x.indrelid = c.oid AND x.indisreplident) END)
        FROM pg_class c
        WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'm') AND c.relreplident <> 'd'
        ORDER BY c.oid;
    RETURN QUERY
        SELECT format('ALTER SEQUENCE %s OWNED BY %s.%I', d.objid::regclass, d.refobjid::regclass, a.attname)
        FROM pg_depend d JOIN pg_class s ON s.oid = d.objid
        JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
          AND s.relkind = 'S' AND s.relnamespace = nsp AND d.deptype = 'a'
        ORDER BY s.relname;
    -- Storage, compression and statistics targets of columns that are not
    -- the defaults.
    RETURN QUERY
        SELECT format('ALTER TABLE %s ALTER COLUMN %I %s', c.oid::regclass, a.attname, x.setting)
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        JOIN pg_type t ON t.oid = a.atttypid
        CROSS JOIN LATERAL (VALUES
            (1, CASE WHEN a.attstorage <> t.typstorage
                     THEN 'SET STORAGE ' || CASE a.attstorage WHEN 'p' THEN 'PLAIN' WHEN 'e' THEN 'EXTERNAL'
                                                              WHEN 'm' THEN 'MAIN' ELSE 'EXTENDED' END END),
            (2, CASE a.attcompression WHEN 'p' THEN 'SET COMPRESSION pglz' WHEN 'l' THEN 'SET COMPRESSION lz4' END),
            (3, CASE WHEN a.attstattarget >= 0 THEN 'SET STATISTICS ' || a.attstattarget END)) AS x(n, setting)
        WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'm') AND x.setting IS NOT NULL
        ORDER BY c.relispartition, c.oid, a.attnum, x.n;
    -- Defaults of view columns.
    RETURN QUERY
        SELECT format('ALTER VIEW %s ALTER COLUMN %I SET DEFAULT %s', c.oid::regclass, a.attname, pg_get_expr(d.adbin, d.adrelid))
        FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid
        JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        WHERE c.relnamespace = nsp AND c.relkind = 'v'
        ORDER BY c.oid, a.attnum;
    -- Each relation's triggers, row security, policies, owner, privileges
    -- and comments; then those of constraints and indexes.
    FOR r IN
        SELECT o.objid FROM sharded_id._schema_objects(nsp) o JOIN pg_class c ON c.oid = o.objid
        WHERE o.classid = 'pg_class'::regclass AND c.relkind <> 'c'
        ORDER BY o.level, o.objid
    LOOP
        RETURN QUERY SELECT sharded_id._relation_extras_ddl(r.objid, r.objid::regclass::text);
    END LOOP;
    RETURN QUERY
        SELECT format('COMMENT ON CONSTRAINT %I ON %s%s IS %L', k.conname,
                      CASE WHEN k.contypid <> 0 THEN 'DOMAIN ' ELSE '' END,
                      CASE WHEN k.contypid <> 0 THEN k.contypid::regtype::text ELSE k.conrelid::regclass::text END,
                      d.description)
        FROM pg_constraint k
        JOIN pg_description d ON d.classoid = 'pg_constraint'::regclass AND d.objoid = k.oid AND d.objsubid = 0
        WHERE k.connamespace = nsp AND (k.conislocal OR k.contypid <> 0)
        ORDER BY k.conrelid, k.contypid, k.conname;
    RETURN QUERY
        SELECT format('COMMENT ON INDEX %s IS %L', c.oid::regclass, d.description)
        FROM pg_class c JOIN pg_description d ON d.classoid = 'pg_class'::regclass AND d.objoid = c.oid AND d.objsubid = 0
        WHERE c.relnamespace = nsp AND c.relkind IN ('i', 'I')
        ORDER BY c.oid;
    -- Owners, privileges and comments of types, functions and procedures.
    FOR r IN
        SELECT t.oid, t.typowner, t.typacl, t.typrelid, format('%I.%I', schema_name, t.typname) AS type_name,
               CASE WHEN t.typtype = 'd' THEN 'DOMAIN' ELSE 'TYPE' END AS keyword
        FROM sharded_id._schema_objects(nsp) o
        JOIN pg_type t ON (o.classid = 'pg_type'::regclass AND t.oid = o.objid)
                       OR (o.classid = 'pg_class'::regclass AND t.typrelid = o.objid
                           AND (SELECT c.relkind FROM pg_class c WHERE c.oid = o.objid) = 'c')
        ORDER BY o.level, o.objid
    LOOP
        RETURN NEXT format('ALTER %s %s OWNER TO %I', r.keyword, r.type_name, pg_get_userbyid(r.typowner));
        RETURN QUERY SELECT sharded_id._acl_ddl(r.keyword || ' ' || r.type_name, r.typacl, r.typowner);
        RETURN QUERY
            SELECT CASE WHEN d.objsubid = 0 THEN format('COMMENT ON %s %s IS %L', r.keyword, r.type_name, d.description)
                        ELSE format('COMMENT ON COLUMN %s.%I IS %L', r.type_name, a.attname, d.description) END
            FROM pg_description d
            LEFT JOIN pg_attribute a ON a.attrelid = d.objoid AND a.attnum = d.objsubid
            WHERE (d.classoid = 'pg_type'::regclass AND d.objoid = r.oid)
               OR (d.classoid = 'pg_class'::regclass AND d.objoid = r.typrelid AND r.typrelid <> 0)
            ORDER BY d.objsubid;
    END LOOP;
    FOR r IN
        SELECT p.oid, p.proowner, p.proacl, p.oid::regprocedure::text AS signature,
               CASE WHEN p.prokind = 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END AS keyword
        FROM sharded_id._schema_objects(nsp) o JOIN pg_proc p ON p.oid = o.objid
        WHERE o.classid = 'pg_proc'::regclass
        ORDER BY o.level, o.objid
    LOOP
        RETURN NEXT format('ALTER %s %s OWNER TO %I', r.keyword, r.signature, pg_get_userbyid(r.proowner));
        RETURN QUERY SELECT sharded_id._acl_ddl(r.keyword || ' ' || r.signature, r.proacl, r.proowner);
        RETURN QUERY
            SELECT format('COMMENT ON %s %s IS %L', r.keyword, r.signature, d.description)
            FROM pg_description d WHERE d.classoid = 'pg_proc'::regclass AND d.objoid = r.oid AND d.objsubid = 0;
    END LOOP;
    RETURN QUERY
        SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.conrelid::regclass, k.conname, pg_get_constraintdef(k.oid))
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
        WHERE c.relnamespace = nsp AND k.contype = 'f' AND k.conislocal
        ORDER BY c.relispartition, c.oid, k.conname;
    -- The schema's comment.
    RETURN QUERY
        SELECT format('COMMENT ON SCHEMA %I IS %L', schema_name, d.description)
        FROM pg_description d WHERE d.classoid = 'pg_namespace'::regclass AND d.objoid = nsp AND d.objsubid = 0;
    -- Materialized views that hold rows hold them again, as their owners
    -- see them, once the rows of their tables are in.
    RETURN QUERY
        SELECT format('REFRESH MATERIALIZED VIEW %s', c.oid::regclass)
        FROM sharded_id._schema_objects(nsp) o JOIN pg_class c ON c.oid = o.objid
        WHERE o.classid = 'pg_class'::regclass AND c.relkind = 'm' AND c.relispopulated
        ORDER BY o.level, o.objid;
END
$$;

COMMENT ON FUNCTION sharded_id.schema_ddl(name) IS
'the statements that make a shard schema again, without its rows, in one transaction: types, sequences, functions, procedures, tables and partitions, views and materialized views in dependency order, then constraints, indexes, triggers and their enabled state, row security, policies, owners, privileges and comments of every object and of the schema; refuses (0A000) a schema holding an object it cannot make again';


-- A schema as a list of its objects, to compare two copies of it: one row
-- per object, with its owner, its privileges (each grant as text, sorted;
-- NULL for the default ones), a few flags worth reading (details), and an
-- md5 of everything else that defines it: columns, defaults, bodies, view
-- definitions, enabled states, options, comments.  The schema's own name
-- is replaced by @schema@ in names and definitions, so that copies under
-- two names compare too.
CREATE FUNCTION sharded_id.schema_inventory(schema_name name)
RETURNS TABLE (kind text, name text, owner name, acl text, details text, definition text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema_inventory.schema_name);
    prefix text := quote_ident(schema_name) || '.';
BEGIN
    IF nsp IS NULL THEN
        RAISE EXCEPTION 'schema "%" does not exist', schema_name
            USING ERRCODE = 'invalid_schema_name';
    END IF;
    RETURN QUERY
    WITH objects (kind, name, owner, acl, details, def) AS (
        SELECT 'schema', '', n.nspowner, n.nspacl, NULL::text,
               obj_description(n.oid, 'pg_namespace')
        FROM pg_namespace n WHERE n.oid = nsp
        UNION ALL
        SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view'
                              WHEN 'm' THEN 'materialized view' WHEN 'S' THEN 'sequence' WHEN 'i' THEN 'index'
                              WHEN 'I' THEN 'partitioned index' WHEN 'c' THEN 'composite type'
                              WHEN 'f' THEN 'foreign table' ELSE 'relation ' || c.relkind::text END,
               c.relname::text, c.relowner, c.relacl,
               concat_ws(' ', CASE WHEN c.relkind = 'm' THEN CASE WHEN c.relispopulated THEN 'populated' ELSE 'not populated' END END,
                         CASE WHEN c.relrowsecurity THEN 'row security' END,
                         CASE WHEN c.relforcerowsecurity THEN 'forced' END,
                         CASE WHEN c.relpersistence = 'u' THEN 'unlogged' END,
                         CASE WHEN c.relkind IN ('r', 'p') AND c.relreplident <> 'd' THEN 'replica identity ' || c.relreplident::text END),
               concat_ws(E'\n',
                   c.reloptions::text, (SELECT a.amname FROM pg_am a WHERE a.oid = c.relam),
                   pg_get_partkeydef(c.oid), pg_get_expr(c.relpartbound, c.oid),
                   (SELECT 'parent ' || i.inhparent::regclass::text FROM pg_inherits i WHERE i.inhrelid = c.oid),
                   CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END,
                   CASE WHEN c.relkind IN ('i', 'I') THEN pg_get_indexdef(c.oid) END,
                   (SELECT concat_ws(' ', q.seqtypid::regtype, q.seqstart, q.seqincrement, q.seqmin, q.seqmax, q.seqcache, q.seqcycle)
                    FROM pg_sequence q WHERE q.seqrelid = c.oid),
                   (SELECT 'owned by ' || d.refobjid::regclass::text || '.' || quote_ident(a.attname) || ' ' || d.deptype::text
                    FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass
                      AND d.deptype IN ('a', 'i') AND c.relkind = 'S'),
                   (SELECT string_agg(concat_ws(' ', quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
                                                a.attcollation::regcollation::text, a.attnotnull, a.attidentity, a.attgenerated,
                                                a.attstorage, a.attcompression, a.attstattarget,
                                                pg_get_expr(d.adbin, d.adrelid),
                                                (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(a.attacl) x),
                                                col_description(c.oid, a.attnum)), E'\n' ORDER BY a.attnum)
                    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                   obj_description(c.oid, 'pg_class'))
        FROM pg_class c WHERE c.relnamespace = nsp
        UNION ALL
        SELECT 'constraint', coalesce(c.relname, t.typname)::text || '.' || k.conname, NULL::oid, NULL::aclitem[],
               concat_ws(' ', k.contype, CASE WHEN NOT k.convalidated THEN 'not valid' END),
               concat_ws(E'\n', pg_get_constraintdef(k.oid), obj_description(k.oid, 'pg_constraint'))
        FROM pg_constraint k LEFT JOIN pg_class c ON c.oid = k.conrelid LEFT JOIN pg_type t ON t.oid = k.contypid
        -- NOT NULL is a column's or a domain's flag here: only some majors
        -- keep it as a constraint as well.
        WHERE k.connamespace = nsp AND k.contype <> 'n'
        UNION ALL
        SELECT 'trigger', c.relname::text || '.' || g.tgname, NULL::oid, NULL::aclitem[],
               'enabled ' || g.tgenabled::text,
               concat_ws(E'\n', pg_get_triggerdef(g.oid), obj_description(g.oid, 'pg_trigger'))
        FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
        WHERE c.relnamespace = nsp AND NOT g.tgisinternal
        UNION ALL
        SELECT 'policy', c.relname::text || '.' || p.polname, NULL::oid, NULL::aclitem[],
               concat_ws(' ', p.polcmd, CASE WHEN p.polpermissive THEN 'permissive' ELSE 'restrictive' END),
               concat_ws(E'\n', (SELECT string_agg(CASE WHEN r = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(r)::text END, ',' ORDER BY 1)
                                 FROM unnest(p.polroles) r),
                         pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid),
                         obj_description(p.oid, 'pg_policy'))
        FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
        WHERE c.relnamespace = nsp
        UNION ALL
        SELECT CASE p.prokind WHEN 'f' THEN 'function' WHEN 'p' THEN 'procedure' WHEN 'w' THEN 'window function'
                              WHEN 'a' THEN 'aggregate' ELSE 'routine' END,
               p.proname::text || '(' || pg_get_function_identity_arguments(p.oid) || ')', p.proowner, p.proacl,
               CASE WHEN p.prosecdef THEN 'security definer' END,
               concat_ws(E'\n', CASE WHEN p.prokind <> 'a' THEN pg_get_functiondef(p.oid) END,
                         obj_description(p.oid, 'pg_proc'))
        FROM pg_proc p WHERE p.pronamespace = nsp
        UNION ALL
        SELECT CASE t.typtype WHEN 'e' THEN 'enum' WHEN 'd' THEN 'domain' WHEN 'r' THEN 'range' WHEN 'm' THEN 'multirange'
                              WHEN 'c' THEN 'type' ELSE 'type ' || t.typtype::text END,
               t.typname::text, t.typowner, t.typacl,
               CASE WHEN t.typnotnull THEN 'not null' END,
               concat_ws(E'\n',
                   (SELECT string_agg(e.enumlabel::text, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid),
                   CASE WHEN t.typtype = 'd' THEN concat_ws(' ', format_type(t.typbasetype, t.typtypmod), t.typcollation::regcollation::text, t.typdefault) END,
                   (SELECT concat_ws(' ', g.rngsubtype::regtype, g.rngsubopc, g.rngcollation, g.rngsubdiff::regproc, g.rngmultitypid::regtype)
                    FROM pg_range g WHERE g.rngtypid = t.oid),
                   obj_description(t.oid, 'pg_type'))
        FROM pg_type t
        WHERE t.typnamespace = nsp
          AND (t.typtype IN ('e', 'd', 'r', 'm', 'b', 'p')
               OR (t.typtype = 'c' AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c'))
          AND NOT EXISTS (SELECT FROM pg_type e WHERE e.typarray = t.oid)
        UNION ALL
        SELECT 'unsupported', u, NULL::oid, NULL::aclitem[], NULL::text, NULL::text
        FROM sharded_id._schema_unsupported(nsp) u
    )
    SELECT o.kind, replace(o.name, prefix, '@schema@.'), pg_get_userbyid(o.owner),
           (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(o.acl) x),
           nullif(o.details, ''),
           md5(replace(coalesce(o.def, ''), prefix, '@schema@.'))
    FROM objects o
    ORDER BY 1, 2;
END
$$;

COMMENT ON FUNCTION sharded_id.schema_inventory(name) IS
'every object of a schema with its owner, privileges, flags and a hash of its definition, the schema''s name replaced by @schema@: two copies of a shard are the same schema when their inventories are';

REVOKE EXECUTE ON FUNCTION sharded_id.schema_inventory(name) FROM PUBLIC;

-- Before a move copies anything: schema_ddl on the source must be able to
-- make the shard's schema again, or the move is refused with its error
-- (0A000, naming the object it cannot make).
CREATE FUNCTION sharded_id._move_check_schema(conn text, schema_name name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._remote(conn, format('SELECT count(*) FROM sharded_id.schema_ddl(%L)', schema_name));
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_schema(text, name) IS
'internal: fail, with schema_ddl''s error, when a node cannot give a shard schema back as statements';

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_schema(text, name) FROM PUBLIC;

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
    refresh text;
    inventory text := format(
        'SELECT format(''%%s|%%s|%%s|%%s|%%s|%%s'', kind, name, owner, acl, details, definition) FROM sharded_id.schema_inventory(%L) '
        'WHERE NOT (kind = ''constraint'' AND name LIKE ''%%.sharded_id\_moved'')', m.schema_name);
    on_source text[];
    on_target text[];
    differences text;
    -- Connections of this move, bound to its nodes, closed with the move's.
    src text := sharded_id._move_conn(m.move_id, 'check_source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'check_target', m.target_node);
BEGIN
    PERFORM sharded_id._remote_open(src, m.source_node);
    PERFORM sharded_id._remote_open(tgt, m.target_node);
    -- Dropped already, by a cleanup that was cut short before it recorded so.
    IF sharded_id._remote(src, format('SELECT 1 FROM pg_namespace WHERE nspname = %L', m.schema_name)) IS NULL THEN
        RETURN;
    END IF;
    refresh := sharded_id._remote(src, format(
        'SELECT string_agg(s, ''; '') FROM sharded_id.schema_ddl(%L) s WHERE s LIKE ''REFRESH MATERIALIZED VIEW %%''',
        m.schema_name));
    IF refresh IS NOT NULL THEN
        PERFORM sharded_id._remote_exec(tgt, refresh);
    END IF;
    -- Servers of two majors may print one definition two ways: then the
    -- objects, owners, privileges and flags are compared, not the hashes.
    IF sharded_id._remote(src, 'SELECT current_setting(''server_version_num'')::integer / 10000')
       IS DISTINCT FROM sharded_id._remote(tgt, 'SELECT current_setting(''server_version_num'')::integer / 10000') THEN
        inventory := replace(inventory, ', definition)', ', '''')');
    END IF;
    on_source := coalesce(sharded_id._remote_rows(src, inventory), '{}');
    on_target := coalesce(sharded_id._remote_rows(tgt, inventory), '{}');
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

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_copy(sharded_id.moves) FROM PUBLIC;

-- Drop what a move made, as move_cleanup records it: the objects of every
-- policy but on_failure when it moved the shard, of every policy but
-- on_success when it did not.  Each record goes once its object is gone.
-- The same connection string without its secrets (password, sslpassword),
-- as a keyword/value string parsed and written back by libpq's rules.
CREATE FUNCTION sharded_id._connstr_public(connstr text, with_user boolean DEFAULT true)
RETURNS text
AS 'MODULE_PATHNAME', 'shid_connstr_public'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_public(text, boolean) IS
'internal: a libpq connection string or URI as a keyword/value string without its secrets (and optionally its user), fit for statements, catalogs and logs';


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
    SELECT sharded_id._connstr_public(n.connstr) FROM sharded_id.nodes n WHERE n.node_name = m.source_node
$$;

COMMENT ON FUNCTION sharded_id._move_subscription_connstr(sharded_id.moves) IS
'internal: the connection string a move''s subscription uses to reach the source, without its secrets';

REVOKE EXECUTE ON FUNCTION sharded_id._move_subscription_connstr(sharded_id.moves) FROM PUBLIC;

-- Options of the move's subscription beyond the fixed ones: from
-- PostgreSQL 16 on, the apply runs as the subscription's owner, as on 15,
-- and not as each table's owner, who may not even reach the schema.
CREATE FUNCTION sharded_id._move_subscription_options(m sharded_id.moves)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF sharded_id._remote(sharded_id._move_conn(m.move_id, 'target', m.target_node),
                          'SHOW server_version_num')::integer >= 160000 THEN
        RETURN ', run_as_owner = true';
    END IF;
    RETURN '';
END
$$;


COMMENT ON FUNCTION sharded_id._move_subscription_options(sharded_id.moves) IS
'internal: the options of a move''s subscription that depend on the target''s version';

REVOKE EXECUTE ON FUNCTION sharded_id._move_subscription_options(sharded_id.moves) FROM PUBLIC;

-- One step of a move; no transaction control, so that move_shard can catch
-- its error and commit between steps.
-- The secrets of a connection string (password, sslpassword), and with
-- with_user its user, as 'keyword=value' sorted by keyword: the options of
-- a user mapping, which PostgreSQL shows to no other role.
CREATE FUNCTION sharded_id._connstr_secrets(connstr text, with_user boolean DEFAULT false)
RETURNS text[]
AS 'MODULE_PATHNAME', 'shid_connstr_secrets'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_secrets(text, boolean) IS
'internal: the secrets (and optionally the user) of a libpq connection string, as user mapping options';


-- Give the user mapping for PUBLIC of a server (made if need be) the
-- wanted options, in one statement; its other options stay, since an
-- administrator may have set them.
CREATE FUNCTION sharded_id._set_mapping_options(server name, wanted text[])
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    current text[];
    changes text[] := '{}';
    opt record;
BEGIN
    -- pg_user_mappings shows the options of the mapping for PUBLIC to the
    -- server's owner, who may not read pg_user_mapping.
    SELECT coalesce(u.umoptions, '{}') INTO current
    FROM pg_user_mappings u WHERE u.srvname = server AND u.umuser = 0;
    IF NOT FOUND THEN
        EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I', server);
        current := '{}';
    END IF;
    FOR opt IN
        SELECT w.k, w.v AS wanted, c.v AS current
        FROM (SELECT split_part(o, '=', 1) AS k, substr(o, strpos(o, '=') + 1) AS v FROM unnest(wanted) o) w
        LEFT JOIN (SELECT split_part(o, '=', 1) AS k, substr(o, strpos(o, '=') + 1) AS v FROM unnest(current) o) c
        ON w.k = c.k
    LOOP
        IF opt.current IS NULL THEN
            changes := changes || format('ADD %I %L', opt.k, opt.wanted);
        ELSIF opt.wanted <> opt.current THEN
            changes := changes || format('SET %I %L', opt.k, opt.wanted);
        END IF;
    END LOOP;
    IF cardinality(changes) > 0 THEN
        EXECUTE format('ALTER USER MAPPING FOR PUBLIC SERVER %I OPTIONS (%s)', server, array_to_string(changes, ', '));
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._set_mapping_options(name, text[]) IS
'internal: add or set options of the user mapping for PUBLIC of a foreign server, keeping its others';

REVOKE EXECUTE ON FUNCTION sharded_id._set_mapping_options(name, text[]) FROM PUBLIC;

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
    ELSIF FOUND AND EXISTS (SELECT 1 FROM sharded_id.floors() f
                            WHERE f.shard_id = shard.shard_id AND f.layout = shard.layout AND f.retired) THEN
        -- In this database's catalog, but the server gave it away (from
        -- another database, or before an update to 1.5): take it back here,
        -- with its floor over its rows.
        PERFORM sharded_id._check_floors(shard.shard_id, shard.schema_name, shard.layout);
        DELETE FROM sharded_id.retired_shards r WHERE r.shard_id = _provision.shard_id;
        PERFORM sharded_id._own_shard(shard.shard_id, shard.layout);
        adopted := true;
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


-- Retirements belong to the server from 1.5 on: every shard this database's
-- catalog records as given away is given away by the server, for every
-- database of it (nothing to do where sharded_id is not preloaded).
SELECT count(sharded_id._retire_shard(r.shard_id, r.layout)) FROM sharded_id.retired_shards r;

--
-- Issue 26: moves that lose nothing under concurrency, cancellation,
-- retries and clock steps.  A move holds its shard's move lock for its
-- whole life; the route and move locks are tags pg_advisory_lock() cannot
-- take; connections are named by move, role and node and closed on every
-- way out; a cancel ends the freeze at once; catch-up marks are counters,
-- published only with their own move; the dump copy fires no user trigger
-- or rule; row security is off on every connection of a move.
--
-- The route lock's tag changed (src/route.c): a move running on 1.4 code
-- while the library is replaced holds the old tag, so update with no move
-- running.
--

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

CREATE OR REPLACE FUNCTION sharded_id._remote_open(conn text, node text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name := sharded_id._dblink_schema();
    dsn text;
    open boolean;
    alive boolean;
BEGIN
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
    EXECUTE format('SELECT %I.dblink_exec($1, ''SET row_security = off'')', dblink) USING conn;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_open(text, text) IS
'internal: open a named dblink connection to a data node, with row_security off, unless it is open and answers';


CREATE OR REPLACE FUNCTION sharded_id._remote_close_all(prefix text)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name := sharded_id._dblink_schema();
    conns text[];
    c text;
BEGIN
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

REVOKE EXECUTE ON FUNCTION sharded_id._remote_close_all(text) FROM PUBLIC;


CREATE OR REPLACE FUNCTION sharded_id._move_conn(move_id bigint, role text, node text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('sharded_id_%s_%s_%s', coalesce(move_id::text, 'new'), role, node)
$$;

COMMENT ON FUNCTION sharded_id._move_conn(bigint, text, text) IS
'internal: the dblink connection name of a move, a role and a node';

REVOKE EXECUTE ON FUNCTION sharded_id._move_conn(bigint, text, text) FROM PUBLIC;


CREATE OR REPLACE FUNCTION sharded_id._move_open(m sharded_id.moves, role text)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    node text := CASE WHEN role IN ('target', 'snap_target') THEN m.target_node ELSE m.source_node END;
    conn text := sharded_id._move_conn(m.move_id, role, node);
BEGIN
    PERFORM sharded_id._remote_open(conn, node);
    RETURN conn;
END
$$;

COMMENT ON FUNCTION sharded_id._move_open(sharded_id.moves, text) IS
'internal: open, or check and reuse, the connection of a move in a role, and return its name';

REVOKE EXECUTE ON FUNCTION sharded_id._move_open(sharded_id.moves, text) FROM PUBLIC;


CREATE OR REPLACE FUNCTION sharded_id._move_claim(shard_id integer)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    holder integer;
    running bigint;
BEGIN
    IF sharded_id._lock_shard(shard_id, 'move', false) THEN
        RETURN;
    END IF;
    holder := (SELECT l.pid FROM pg_locks l
               WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND l.classid = 1936222573 AND l.objid = _move_claim.shard_id AND l.objsubid = 3 AND l.granted
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

REVOKE EXECUTE ON FUNCTION sharded_id._move_claim(integer) FROM PUBLIC;


CREATE OR REPLACE FUNCTION sharded_id._lock_shard(shard integer, kind text, wait boolean)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shid_lock_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_shard(integer, text, boolean) IS
'internal: take a shard''s route or move lock in exclusive mode as a session lock, released at the latest when a transaction aborts';

REVOKE EXECUTE ON FUNCTION sharded_id._lock_shard(integer, text, boolean) FROM PUBLIC;


CREATE OR REPLACE FUNCTION sharded_id._unlock_shard(shard integer, kind text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shid_unlock_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._unlock_shard(integer, text) IS
'internal: release a shard''s route or move lock taken by _lock_shard';

REVOKE EXECUTE ON FUNCTION sharded_id._unlock_shard(integer, text) FROM PUBLIC;


CREATE OR REPLACE PROCEDURE sharded_id._move_journal(move_id bigint, step text)
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    INSERT INTO sharded_id.move_steps (move_id, step_no, step)
    SELECT _move_journal.move_id, coalesce(max(s.step_no), 0) + 1, _move_journal.step
    FROM sharded_id.move_steps s WHERE s.move_id = _move_journal.move_id;
    UPDATE sharded_id.moves m SET state = step, updated_at = clock_timestamp()
    WHERE m.move_id = _move_journal.move_id;
    COMMIT;
END
$$;

COMMENT ON PROCEDURE sharded_id._move_journal(bigint, text) IS
'internal: journal and commit the step a move is about to take';


CREATE OR REPLACE FUNCTION sharded_id._move_hold(point text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('sharded_id.move_hold', true) = point THEN
        PERFORM pg_advisory_lock_shared(1936222579, 0);
        PERFORM pg_advisory_unlock_shared(1936222579, 0);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_hold(text) IS
'internal: pause a move at a point named by sharded_id.move_hold, for fault-injection tests';

REVOKE EXECUTE ON FUNCTION sharded_id._move_hold(text) FROM PUBLIC;


CREATE OR REPLACE FUNCTION sharded_id._move_catch_up(m sharded_id.moves, timeout interval)
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
    mark := sharded_id._remote(src, format(
        'INSERT INTO sharded_id.move_marks VALUES (%s, 1) ON CONFLICT (move_id) DO UPDATE SET mark = move_marks.mark + 1 RETURNING mark',
        m.move_id))::bigint;
    WHILE coalesce(sharded_id._remote(tgt, format(
              'SELECT mark FROM sharded_id.move_marks WHERE move_id = %s', m.move_id))::bigint, 0) < mark LOOP
        polls := polls + 1;
        IF polls > max_polls THEN
            RAISE EXCEPTION 'the target did not catch up with the source within %', timeout
                USING ERRCODE = 'lock_not_available';
        END IF;
        IF sharded_id._remote(tgt, format(
               'SELECT subenabled FROM pg_subscription WHERE oid = %s', m.sub_oid)) IS DISTINCT FROM 't' THEN
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


CREATE OR REPLACE FUNCTION sharded_id._move_register_target(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
BEGIN
    -- Nothing mints for the retired copy, so its sequences stay put.
    PERFORM sharded_id._remote_exec(tgt, format(
        'BEGIN; SET LOCAL client_min_messages = warning; %s '
        'SELECT sharded_id.create_shard(%s, %L); '
        'SELECT sharded_id.raise_floor(s.shard_id, %s, s.layout) FROM sharded_id.shards s WHERE s.shard_id = %s AND %s IS NOT NULL; '
        'COMMIT',
        coalesce(sharded_id._move_setvals(src, m.schema_name), ''), m.shard_id, m.schema_name, coalesce(m.high_water::text, 'NULL'), m.shard_id,
        coalesce(m.high_water::text, 'NULL')));
END
$$;

COMMENT ON FUNCTION sharded_id._move_register_target(sharded_id.moves) IS
'internal: make a move''s target the owner of the shard, its ids above the source''s high-water mark';


CREATE OR REPLACE FUNCTION sharded_id._move_resolve(move_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
    routed_to text;
    src text;
    tgt text;
    retired_by bigint;
    source_owns boolean;
    target_owns boolean;
BEGIN
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
    source_owns := sharded_id._remote(src, format(
        'SELECT 1 FROM sharded_id.shards WHERE shard_id = %s', m.shard_id)) IS NOT NULL;
    BEGIN
        tgt := sharded_id._move_open(m, 'target');
        target_owns := sharded_id._remote(tgt, format(
            'SELECT 1 FROM sharded_id.shards WHERE shard_id = %s', m.shard_id)) IS NOT NULL;
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
    retired_by := sharded_id._remote(src, format(
        'SELECT move_id FROM sharded_id.move_retirements WHERE shard_id = %s', m.shard_id))::bigint;
    IF retired_by IS DISTINCT FROM m.move_id THEN
        RAISE EXCEPTION 'move % of shard % can be neither finished nor rolled back: node "%" no longer owns the shard, but the move did not retire it',
                        m.move_id, m.shard_id, m.source_node
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = CASE WHEN retired_by IS NULL THEN 'No move retired it there: it was retired or dropped otherwise.'
                                ELSE format('Move %s retired it there.', retired_by) END || ' Recovery changed nothing.',
                  HINT = 'Find the node that holds the shard''s rows, register the shard there, point the shard map at it, and then recover again.';
    END IF;
    PERFORM sharded_id._move_compare(m, src, tgt);
    IF NOT target_owns THEN
        m.high_water := sharded_id._remote(src, format(
            'SELECT high_water FROM sharded_id.retired_shards WHERE shard_id = %s', m.shard_id))::bigint;
        UPDATE sharded_id.moves x SET high_water = m.high_water WHERE x.move_id = m.move_id;
        IF m.method = 'online' THEN
            PERFORM sharded_id._remote_exec(tgt, format(
                'ALTER SUBSCRIPTION %I DISABLE', 'sharded_id_move_' || m.shard_id))
            WHERE sharded_id._remote(tgt, format(
                'SELECT 1 FROM pg_subscription WHERE subname = %L AND subenabled', 'sharded_id_move_' || m.shard_id)) IS NOT NULL;
        END IF;
        PERFORM sharded_id._move_register_target(m);
    END IF;
    PERFORM sharded_id._move_switch(m);
    PERFORM sharded_id._move_cleanup(m, true);
    RETURN true;
END
$$;

COMMENT ON FUNCTION sharded_id._move_resolve(bigint) IS
'internal: finish or roll back an interrupted move, from its journal and the state of its nodes';


-- End of issue 26.

CREATE OR REPLACE FUNCTION sharded_id._relation_extras_ddl(src regclass, dst text)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    r record;
    keyword text;
    -- The same relation again (schema_ddl), with its grants made by their
    -- grantors; or a shard's copy of a template, whose grantors need not
    -- reach the shard's schema: there the owner makes every grant.
    exact boolean := dst = src::text;
BEGIN
    SELECT c.oid, c.relkind, c.relrowsecurity, c.relforcerowsecurity, c.relowner, c.relacl
    INTO rel FROM pg_class c WHERE c.oid = src;
    keyword := CASE rel.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END;
    FOR r IN
        SELECT g.tgname, g.tgenabled, g.tgparentid, pg_get_triggerdef(g.oid) AS def,
               (SELECT p.tgenabled FROM pg_trigger p WHERE p.oid = g.tgparentid) AS parent_enabled,
               obj_description(g.oid, 'pg_trigger') AS description
        FROM pg_trigger g
        WHERE g.tgrelid = src AND NOT g.tgisinternal
        ORDER BY g.tgname
    LOOP
        -- A partition's clone of its parent's trigger comes with the
        -- parent's; only its state, where it differs, is its own.
        IF r.tgparentid = 0 THEN
            RETURN NEXT regexp_replace(r.def, ' ON (ONLY )?' || regexp_replace(src::text, '([^A-Za-z0-9_])', '\\\1', 'g') || ' ',
                                       ' ON ' || dst || ' ');
        END IF;
        IF (r.tgparentid = 0 AND r.tgenabled <> 'O') OR (r.tgparentid <> 0 AND r.tgenabled <> r.parent_enabled) THEN
            RETURN NEXT format('ALTER TABLE %s %s TRIGGER %I', dst,
                               CASE r.tgenabled WHEN 'D' THEN 'DISABLE' WHEN 'R' THEN 'ENABLE REPLICA'
                                                WHEN 'A' THEN 'ENABLE ALWAYS' ELSE 'ENABLE' END, r.tgname);
        END IF;
        IF r.tgparentid = 0 AND r.description IS NOT NULL THEN
            RETURN NEXT format('COMMENT ON TRIGGER %I ON %s IS %L', r.tgname, dst, r.description);
        END IF;
    END LOOP;
    IF rel.relrowsecurity THEN
        RETURN NEXT format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', dst);
    END IF;
    IF rel.relforcerowsecurity THEN
        RETURN NEXT format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', dst);
    END IF;
    FOR r IN
        SELECT p.polname, p.polpermissive, p.polcmd,
               CASE WHEN p.polroles = '{0}' THEN 'PUBLIC'
                    ELSE (SELECT string_agg(CASE WHEN g = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g)) END, ', '
                                            ORDER BY pg_get_userbyid(g))
                          FROM unnest(p.polroles) g) END AS roles,
               pg_get_expr(p.polqual, p.polrelid) AS qual, pg_get_expr(p.polwithcheck, p.polrelid) AS chk,
               obj_description(p.oid, 'pg_policy') AS description
        FROM pg_policy p WHERE p.polrelid = src ORDER BY p.polname
    LOOP
        RETURN NEXT format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', r.polname, dst,
                           CASE WHEN r.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                           CASE r.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'
                                         WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                           r.roles, ' USING (' || r.qual || ')', ' WITH CHECK (' || r.chk || ')');
        IF r.description IS NOT NULL THEN
            RETURN NEXT format('COMMENT ON POLICY %I ON %s IS %L', r.polname, dst, r.description);
        END IF;
    END LOOP;
    -- A sequence owned by a column has its table's owner, and follows it.
    IF NOT (rel.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = src
                                          AND d.refclassid = 'pg_class'::regclass AND d.deptype = 'a')) THEN
        RETURN NEXT format('ALTER %s %s OWNER TO %I', keyword, dst, pg_get_userbyid(rel.relowner));
    END IF;
    RETURN QUERY SELECT sharded_id._acl_ddl(CASE WHEN rel.relkind = 'S' THEN 'SEQUENCE ' ELSE 'TABLE ' END || dst,
                                            rel.relacl, rel.relowner, as_grantor => exact);
    FOR r IN
        SELECT att.attname, att.attacl FROM pg_attribute att
        WHERE att.attrelid = src AND att.attnum > 0 AND NOT att.attisdropped AND att.attacl IS NOT NULL
        ORDER BY att.attnum
    LOOP
        RETURN QUERY SELECT sharded_id._acl_ddl('TABLE ' || dst, r.attacl, rel.relowner, quote_ident(r.attname), exact);
    END LOOP;
    FOR r IN
        SELECT d.objsubid, d.description, att.attname FROM pg_description d
        LEFT JOIN pg_attribute att ON att.attrelid = d.objoid AND att.attnum = d.objsubid
        WHERE d.classoid = 'pg_class'::regclass AND d.objoid = src ORDER BY d.objsubid
    LOOP
        IF r.objsubid = 0 THEN
            RETURN NEXT format('COMMENT ON %s %s IS %L', keyword, dst, r.description);
        ELSE
            RETURN NEXT format('COMMENT ON COLUMN %s.%I IS %L', dst, r.attname, r.description);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._relation_extras_ddl(regclass, text) IS
'internal: statements giving a copy of a relation its triggers and their state, row security, policies, owner, privileges and comments';

-- Issue 28: the scale-out runbook runs as written: rebalance_plan shows
-- each move's method, a move forced to the dump method by wal_level warns,
-- and place_shard tells the router about a shard restored on another node.
DROP FUNCTION sharded_id.rebalance_plan(text[]);

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
                CASE WHEN sharded_id._remote(sharded_id._move_conn(NULL, 'plan', s.node_name), 'SHOW wal_level') = 'logical'
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

REVOKE EXECUTE ON FUNCTION sharded_id.rebalance_plan(text[]) FROM PUBLIC;

CREATE FUNCTION sharded_id.place_shard(shard integer, node text, cluster name DEFAULT 'sharded_id')
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous text;
    held text;
BEGIN
    IF shard IS NULL OR node IS NULL OR cluster IS NULL THEN
        RAISE EXCEPTION 'arguments of place_shard must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM sharded_id.nodes n WHERE n.node_name = node) THEN
        RAISE EXCEPTION 'data node "%" does not exist', node
            USING ERRCODE = 'undefined_object',
                  HINT = 'Add it to sharded_id.nodes first.';
    END IF;
    -- Calls routed with route() or route_id() wait from here until commit.
    PERFORM pg_advisory_xact_lock(1936222578, shard);
    SELECT m.node_name INTO previous FROM sharded_id.shard_map m WHERE m.shard_id = shard FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard % is not in the shard map', shard
            USING ERRCODE = 'undefined_object',
                  DETAIL = 'place_shard changes where a mapped shard is; the map''s shards are set when the router is set up.';
    END IF;
    IF to_regclass('sharded_id.moves') IS NOT NULL
       AND EXISTS (SELECT FROM sharded_id.moves v WHERE v.shard_id = shard AND v.finished_at IS NULL) THEN
        RAISE EXCEPTION 'shard % has a move that did not end', shard
            USING ERRCODE = 'object_in_use',
                  HINT = 'Run CALL sharded_id.recover_moves() first.';
    END IF;
    -- The node must hold the shard: otherwise every call would fail there.
    BEGIN
        PERFORM sharded_id._remote_open('shid_place', node);
        held := sharded_id._remote('shid_place', format(
            'SELECT count(*) FROM sharded_id.shards WHERE shard_id = %s', shard));
        PERFORM sharded_id._remote_close('shid_place');
    EXCEPTION WHEN OTHERS THEN
        PERFORM sharded_id._remote_close('shid_place');
        RAISE;
    END;
    IF held IS DISTINCT FROM '1' THEN
        RAISE EXCEPTION 'data node "%" does not hold shard %', node, shard
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The shard is not in the node''s sharded_id.shards.',
                  HINT = 'Restore the shard''s schema there and register it with sharded_id.create_shard first.';
    END IF;
    UPDATE sharded_id.shard_map m SET node_name = node WHERE m.shard_id = shard;
    PERFORM sharded_id.apply_shard_map(cluster);
    RETURN previous;
END
$$;

COMMENT ON FUNCTION sharded_id.place_shard(integer, text, name) IS
'after a shard is restored on another data node: point the shard map at that node and apply it, in one transaction under the shard''s route lock; checks that the node holds the shard; returns the node the map named before';

REVOKE EXECUTE ON FUNCTION sharded_id.place_shard(integer, text, name) FROM PUBLIC;
-- End of issue 28.

CREATE OR REPLACE PROCEDURE sharded_id.rebalance(nodes text[] DEFAULT NULL, method text DEFAULT NULL,
                                      dry_run boolean DEFAULT false, cluster name DEFAULT 'sharded_id')
LANGUAGE plpgsql
AS $$
DECLARE
    p record;
    total integer;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    total := (SELECT count(*) FROM sharded_id.rebalance_plan(nodes));
    IF total = 0 THEN
        RAISE NOTICE 'the shards are balanced: nothing to move';
        RETURN;
    END IF;
    -- Every shard of the plan first, so that a move running in another
    -- session stops the rebalance before it moves anything.
    IF NOT dry_run THEN
        PERFORM sharded_id._dblink_schema();
        PERFORM sharded_id._move_claim(x.shard_id) FROM sharded_id.rebalance_plan(nodes) x ORDER BY x.move_no;
    END IF;
    FOR p IN SELECT * FROM sharded_id.rebalance_plan(nodes) ORDER BY move_no LOOP
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

CREATE FUNCTION sharded_id._move_open_freeze(m sharded_id.moves)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    frz text := sharded_id._move_conn(m.move_id, 'freeze', m.source_node);
BEGIN
    PERFORM sharded_id._remote_close(frz);
    PERFORM sharded_id._remote_open(frz, m.source_node);
    PERFORM sharded_id._remote_exec(frz, format(
        'SELECT FROM sharded_id.shards WHERE shard_id = %s; '
        'SELECT FROM sharded_id._on_schema_tables(%L, ''SELECT FROM %%s WHERE false''); '
        'SET lock_timeout = DEFAULT',
        m.shard_id, m.schema_name));
    RETURN frz;
END
$$;


COMMENT ON FUNCTION sharded_id._move_open_freeze(sharded_id.moves) IS
'internal: open a new freeze connection of a move to its source';

REVOKE EXECUTE ON FUNCTION sharded_id._move_open_freeze(sharded_id.moves) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id._move_freeze_source(m sharded_id.moves, lock_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- It ends with a command: dblink_exec takes no rows from the last.
    PERFORM sharded_id._remote_exec(sharded_id._move_conn(m.move_id, 'freeze', m.source_node), format(
        'BEGIN; SET LOCAL lock_timeout = %1$L; '
        'SELECT FROM pg_advisory_xact_lock(1936222564, %2$s), '
        '(SELECT FROM sharded_id.shards WHERE shard_id = %2$s FOR UPDATE) s; '
        'SELECT FROM sharded_id._on_schema_tables(%3$L, ''LOCK TABLE %%s IN EXCLUSIVE MODE''); '
        'SET LOCAL lock_timeout = %1$L',
        (extract(epoch FROM lock_timeout) * 1000)::bigint || 'ms', m.shard_id, m.schema_name));
END
$$;

COMMENT ON FUNCTION sharded_id._move_freeze_source(sharded_id.moves, interval) IS
'internal: open the freezing transaction of a move on its source';

CREATE FUNCTION sharded_id._attach_ops_partition(ops_table regclass, shard_id integer)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ops_schema name;
    ops_name name;
    remote_table name;
    server name;
    cur record;
    pad integer := (SELECT c.pad_width FROM sharded_id.current_settings() c);
BEGIN
    SELECT n.nspname, c.relname INTO ops_schema, ops_name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = ops_table;
    SELECT c.relname INTO remote_table
    FROM sharded_id.ops_tables o JOIN pg_class c ON c.oid = o.template
    WHERE o.ops_table = _attach_ops_partition.ops_table;
    server := (SELECT sharded_id.node_server(m.node_name) FROM sharded_id.shard_map m
               WHERE m.shard_id = _attach_ops_partition.shard_id);
    SELECT c.oid::regclass AS rel, s.srvname INTO cur
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    LEFT JOIN pg_foreign_table f ON f.ftrelid = c.oid LEFT JOIN pg_foreign_server s ON s.oid = f.ftserver
    WHERE i.inhparent = ops_table
      AND pg_get_expr(c.relpartbound, c.oid) = format('FOR VALUES IN (%s)', _attach_ops_partition.shard_id);
    IF cur.srvname IS NOT DISTINCT FROM server AND cur.rel IS NOT NULL THEN
        RETURN;
    ELSIF cur.rel IS NOT NULL THEN
        EXECUTE format('DROP FOREIGN TABLE %s', cur.rel);
    END IF;
    IF server IS NOT NULL THEN
        EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES IN (%s) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)',
                       ops_schema, format('%s_%s', ops_name, lpad(shard_id::text, greatest(pad, length(shard_id::text)), '0')),
                       ops_table, shard_id, server, sharded_id.shard_schema(shard_id), remote_table);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._attach_ops_partition(regclass, integer) IS
'internal: point one shard''s postgres_fdw partition of an ops table at the node the shard map names';

REVOKE EXECUTE ON FUNCTION sharded_id._attach_ops_partition(regclass, integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id._attach_ops_partitions(ops_table regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part record;
BEGIN
    FOR part IN SELECT i.inhrelid::regclass AS rel FROM pg_inherits i WHERE i.inhparent = ops_table LOOP
        EXECUTE format('DROP FOREIGN TABLE %s', part.rel);
    END LOOP;
    PERFORM sharded_id._attach_ops_partition(ops_table, m.shard_id)
    FROM sharded_id.shard_map m ORDER BY m.shard_id;
END
$$;

COMMENT ON FUNCTION sharded_id._attach_ops_partitions(regclass) IS
'internal: one postgres_fdw partition per shard of an ops table';

CREATE OR REPLACE FUNCTION sharded_id._move_step(move_id bigint, step text, max_lag bigint,
                                      timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
    repl text := NULL;
    ddl text;
    state text;
    lag bigint;
    deadline timestamptz := clock_timestamp() + timeout;
    t record;
    tbl text;
    cols text;
    fields text;
    batch text[];
    src text;
    tgt text;
    frz text;
    snaps text[];
    saved_lock_timeout text;
    lost text;
    lost_polls integer := 0;
BEGIN
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_step.move_id;
    repl := 'sharded_id_move_' || m.shard_id;
    IF step IN ('stop_replication', 'retire_source', 'register_target', 'switch') THEN
        -- Inside the final freeze: the connections the freeze step
        -- checked, without a round trip more; a dead one fails the step.
        src := sharded_id._move_conn(m.move_id, 'source', m.source_node);
        tgt := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    ELSE
        src := sharded_id._move_open(m, 'source');
        tgt := sharded_id._move_open(m, 'target');
    END IF;
    frz := sharded_id._move_conn(m.move_id, 'freeze', m.source_node);
    CASE step
    WHEN 'record_objects' THEN
        -- move_shard commits these before the next step creates them.
        PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'schema', m.schema_name, 'on_failure');
        PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'schema', m.schema_name, 'on_success');
        IF m.method = 'online' THEN
            PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'publication', repl, 'always');
            PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'slot', repl, 'always');
            PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'mark', m.move_id::text, 'always');
            PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'subscription', repl, 'always');
            PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'mark', m.move_id::text, 'always');
        END IF;
    WHEN 'create_publication' THEN
        PERFORM sharded_id._remote_exec(src, format(
            'CREATE PUBLICATION %I FOR TABLES IN SCHEMA %I, TABLE sharded_id.move_marks WHERE (move_id = %s)',
            repl, m.schema_name, m.move_id));
        PERFORM sharded_id._remote(src, format(
            'SELECT 1 FROM pg_create_logical_replication_slot(%L, ''pgoutput'')', repl));
    WHEN 'subscribe' THEN
        -- The schema without rows, and the subscription that fills it, in
        -- one transaction of the target.
        ddl := sharded_id._remote(src, format(
            'SELECT string_agg(s, E'';\n'') FROM sharded_id.schema_ddl(%L) s', m.schema_name));
        PERFORM sharded_id._remote_exec(tgt, format(
            'BEGIN; SET LOCAL client_min_messages = warning; %s; '
            'CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION %I WITH (create_slot = false, slot_name = %L, '
            'copy_data = true, synchronous_commit = on, disable_on_error = true%s); COMMIT',
            ddl, repl, sharded_id._move_subscription_connstr(m), repl, repl, sharded_id._move_subscription_options(m)));
        UPDATE sharded_id.moves x SET sub_oid = sharded_id._remote(tgt, format(
            'SELECT oid FROM pg_subscription WHERE subname = %L
             AND subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())', repl))::oid
        WHERE x.move_id = m.move_id;
    WHEN 'copy' THEN
        LOOP
            state := sharded_id._remote(tgt, format(
                'SELECT s.subenabled::text || '':'' || count(*) FILTER (WHERE r.srsubstate <> ''r'')
                 || '':'' || count(*) FILTER (WHERE r.srsubstate = ''f'')
                 FROM pg_subscription s LEFT JOIN pg_subscription_rel r ON r.srsubid = s.oid
                 WHERE s.oid = %s GROUP BY s.subenabled', m.sub_oid));
            EXIT WHEN state LIKE 'true:0:%';
            IF state IS NULL OR state LIKE 'false:%' THEN
                RAISE EXCEPTION 'the subscription of move % stopped during the copy', m.move_id
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          HINT = 'The target''s server log says why.';
            END IF;
            -- A table whose copy is done (FINISHEDCOPY) catches up through
            -- its own slot on the source, pg_<subscription>_sync_<table>_
            -- <system id>, until its state commits as synchronized.  That
            -- slot sits idle through the table's copy; invalidated
            -- (max_slot_wal_keep_size, idle_replication_slot_timeout) or
            -- dropped, or dropped by the table sync itself just before a
            -- stop of the target lost the commit that follows, it leaves
            -- the table in FINISHEDCOPY for good, its worker failing again
            -- and again.
            -- Such a table seen with no sync worker alive, at 200 polls
            -- (10 s at least, whatever the clock does) with nothing but a
            -- restarting worker between them, cannot finish: the move
            -- fails here and is rolled back.  A sync worker that waits on
            -- its commit (for a synchronous standby of the target) stays
            -- alive, and a source that does not answer is no evidence:
            -- neither fails a move.
            lost := NULL;
            IF state NOT LIKE '%:0' THEN
                lost := sharded_id._remote(tgt, format(
                    'SELECT json_object_agg(format(''pg_%%s_sync_%%s_'', r.srsubid, r.srrelid),
                                            json_build_object(''table'', r.srrelid::regclass::text,
                                                              ''alive'', EXISTS (SELECT FROM pg_stat_subscription w
                                                                                 WHERE w.subid = r.srsubid AND w.relid = r.srrelid
                                                                                   AND w.pid IS NOT NULL)))
                     FROM pg_subscription_rel r WHERE r.srsubid = %s AND r.srsubstate = ''f''', m.sub_oid));
                IF lost IS NOT NULL THEN BEGIN
                    -- 'dead:<tables>', 'alive', or NULL when every slot is there.
                    lost := sharded_id._remote(sharded_id._move_open(m, 'source'), format(
                        'SELECT CASE WHEN bool_and((j.value->>''alive'')::boolean) THEN ''alive''
                                     ELSE ''dead:'' || string_agg(j.value->>''table'', '', '' ORDER BY j.value->>''table'')
                                                       FILTER (WHERE NOT (j.value->>''alive'')::boolean) END
                         FROM json_each(%L::json) j
                         WHERE NOT EXISTS (SELECT FROM pg_replication_slots s
                                           WHERE starts_with(s.slot_name, j.key) AND s.wal_status IS DISTINCT FROM ''lost'')',
                        lost));
                EXCEPTION WHEN connection_exception OR admin_shutdown OR crash_shutdown OR cannot_connect_now THEN
                    lost := NULL;
                END; END IF;
            END IF;
            lost_polls := CASE WHEN lost IS NULL THEN 0 WHEN lost = 'alive' THEN lost_polls ELSE lost_polls + 1 END;
            IF lost_polls >= 200 THEN
                RAISE EXCEPTION 'the copy of shard % cannot finish: the synchronization of % has no usable slot on node "%"',
                                m.shard_id, substr(lost, 6), m.source_node
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          DETAIL = 'The target copied the table, but the replication slot its catch-up reads is gone or invalidated on the source; a new move copies the table afresh.';
            END IF;
            IF clock_timestamp() > deadline THEN
                RAISE EXCEPTION 'the copy of shard % did not finish within %', m.shard_id, timeout
                    USING ERRCODE = 'lock_not_available';
            END IF;
            PERFORM pg_sleep(0.05);
        END LOOP;
    WHEN 'catch_up' THEN
        LOOP
            lag := sharded_id._remote(src, format(
                'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = %L',
                repl))::bigint;
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
    WHEN 'compare' THEN
        -- A short freeze in which both copies hold the same rows; a
        -- snapshot of each keeps that state for the comparison after it.
        -- Writers wait on the source's fence meanwhile.
        -- Every connection it needs is open, and the snapshots' transactions
        -- begun (a snapshot is taken by the first query), before writers wait.
        -- A catch-up before it too, so that the frozen one has only the
        -- last writes to wait for.
        PERFORM sharded_id._move_open_freeze(m);
        snaps := ARRAY[sharded_id._move_open(m, 'snap_source'), sharded_id._move_open(m, 'snap_target')];
        PERFORM sharded_id._remote_exec(c, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY') FROM unnest(snaps) c;
        PERFORM sharded_id._move_catch_up(m, timeout);
        PERFORM sharded_id._move_freeze_source(m, freeze_timeout);
        PERFORM sharded_id._move_catch_up(m, freeze_timeout);
        PERFORM sharded_id._remote(c, 'SELECT 1') FROM unnest(snaps) c;
        PERFORM sharded_id._remote_close(frz);
        PERFORM sharded_id._move_compare(m, snaps[1], snaps[2]);
        PERFORM sharded_id._remote_close(c) FROM unnest(snaps) c;
    WHEN 'freeze' THEN
        -- Writers through the router wait from the route lock to the
        -- switch; the move waits at most freeze_timeout for the ones in
        -- flight.  The freeze's connection is opened first, and the target
        -- caught up unfrozen, so that the frozen catch-up has only the last
        -- writes to wait for.
        PERFORM sharded_id._move_open_freeze(m);
        IF m.method = 'online' THEN
            PERFORM sharded_id._move_catch_up(m, timeout);
        END IF;
        saved_lock_timeout := current_setting('lock_timeout');
        PERFORM pg_catalog.set_config('lock_timeout', (extract(epoch FROM freeze_timeout) * 1000)::bigint || 'ms', true);
        PERFORM sharded_id._lock_shard(m.shard_id, 'route', true);
        PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
        PERFORM sharded_id._move_freeze_source(m, freeze_timeout);
        IF m.method = 'online' THEN
            PERFORM sharded_id._move_catch_up(m, freeze_timeout);
        END IF;
    WHEN 'stop_replication' THEN
        -- Nothing done to the old copy from now on reaches the new one.
        PERFORM sharded_id._remote_exec(tgt, format('ALTER SUBSCRIPTION %I DISABLE', repl));
    WHEN 'copy_rows' THEN
        -- The dump method: the schema, then every table's rows through
        -- the router, in batches, read in the freeze, and written as they
        -- are: with the target in replica mode, as logical replication
        -- and pg_restore --disable-triggers do, no user trigger or rule
        -- fires on them.
        ddl := sharded_id._remote(src, format(
            'SELECT string_agg(s, E'';\n'') FROM sharded_id.schema_ddl(%L) s', m.schema_name));
        PERFORM sharded_id._remote_exec(tgt, format(
            'BEGIN; SET LOCAL client_min_messages = warning; %s; COMMIT', ddl));
        -- Each table by oid, then its name, its insertable columns and
        -- the same columns read from a row, each quoted on the source.
        FOR t IN
            SELECT * FROM unnest(sharded_id._remote_rows(frz, format(
                'SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = %L AND c.relkind = ''r'' ORDER BY c.oid', m.schema_name))) AS rel
        LOOP
            tbl := sharded_id._remote(frz, format('SELECT %s::regclass::text', t.rel));
            cols := sharded_id._remote(frz, format(
                'SELECT string_agg(quote_ident(attname), '','' ORDER BY attnum) FROM pg_attribute
                 WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped AND attgenerated = ''''', t.rel));
            fields := sharded_id._remote(frz, format(
                'SELECT string_agg(''(v).'' || quote_ident(attname), '','' ORDER BY attnum) FROM pg_attribute
                 WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped AND attgenerated = ''''', t.rel));
            PERFORM sharded_id._remote_exec(frz, format(
                'DECLARE shid_rows NO SCROLL CURSOR FOR SELECT r::text FROM %s r', tbl));
            LOOP
                batch := sharded_id._remote_rows(frz, 'FETCH 10000 FROM shid_rows');
                EXIT WHEN batch IS NULL;
                PERFORM sharded_id._remote_exec(tgt, format(
                    'SET session_replication_role = replica; '
                    'INSERT INTO %1$s (%2$s) OVERRIDING SYSTEM VALUE SELECT %3$s FROM (SELECT r::%1$s AS v FROM unnest(%4$L::text[]) r) s; '
                    'RESET session_replication_role',
                    tbl, cols, fields, batch));
            END LOOP;
            PERFORM sharded_id._remote_exec(frz, 'CLOSE shid_rows');
        END LOOP;
        PERFORM sharded_id._move_compare(m, frz, tgt);
    WHEN 'retire_source' THEN
        -- In the freezing transaction: the retirement and its high-water
        -- mark, and a constraint that no new row passes on the old copy
        -- (NOT VALID: no scan).  Then commit.
        UPDATE sharded_id.moves x SET high_water = sharded_id._remote(frz, format(
            'SELECT sharded_id.retire_shard(%s)', m.shard_id))::bigint
        WHERE x.move_id = m.move_id;
        PERFORM sharded_id._remote_exec(frz, format(
            'SELECT sharded_id._on_schema_tables(%L, ''ALTER TABLE %%s ADD CONSTRAINT sharded_id_moved CHECK (false) NOT VALID''); '
            'INSERT INTO sharded_id.move_retirements AS r (shard_id, move_id) VALUES (%s, %s) '
            'ON CONFLICT (shard_id) DO UPDATE SET move_id = excluded.move_id, retired_at = excluded.retired_at',
            m.schema_name, m.shard_id, m.move_id));
        PERFORM sharded_id._remote_exec(frz, 'COMMIT');
        PERFORM sharded_id._remote_close(frz);
        PERFORM sharded_id._move_hold('retired');
    WHEN 'register_target' THEN
        PERFORM sharded_id._move_register_target(m);
        PERFORM sharded_id._move_hold('registered');
    WHEN 'switch' THEN
        PERFORM sharded_id._move_switch(m);
    ELSE
        RAISE EXCEPTION 'unknown move step "%"', step USING ERRCODE = 'internal_error';
    END CASE;
END
$$;

COMMENT ON FUNCTION sharded_id._move_step(bigint, text, bigint, interval, interval) IS
'internal: take one step of a move';

-- A node's PL/Proxy partition string: its connection string without its
-- secrets, and without its user when it has a secret, which then goes with
-- the user to the cluster's user mapping (PL/Proxy adds a mapping's options
-- only to a partition string that names no user).  apply_shard_map and a
-- move's switch both write it, and the switch compares it.
CREATE FUNCTION sharded_id._partition_connstr(connstr text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN sharded_id._connstr_public(connstr, sharded_id._connstr_secrets(connstr) = '{}');

COMMENT ON FUNCTION sharded_id._partition_connstr(text) IS
'internal: a node''s PL/Proxy partition string, without its secrets, and without its user when it has one';

REVOKE EXECUTE ON FUNCTION sharded_id._partition_connstr(text) FROM PUBLIC;

CREATE FUNCTION sharded_id._cluster_mapping(cluster name, moved_shard integer DEFAULT NULL, target text DEFAULT NULL)
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    secrets text[];
BEGIN
    WITH conns AS (
        SELECT n.connstr FROM sharded_id.shard_map m
        JOIN sharded_id.nodes n ON n.node_name = CASE WHEN m.shard_id = moved_shard THEN target ELSE m.node_name END
    )
    SELECT array_agg(DISTINCT sharded_id._connstr_secrets(c.connstr, true)::text) INTO secrets
    FROM conns c
    WHERE EXISTS (SELECT FROM conns c2 WHERE sharded_id._connstr_secrets(c2.connstr) <> '{}');
    IF cardinality(secrets) > 1 THEN
        RAISE EXCEPTION 'the data nodes of cluster "%" have different users or passwords', cluster
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'PL/Proxy takes one user mapping per cluster, and passwords stay out of the cluster''s options, which every role can read. A node with a password in its connection string shares it, and its user, with every other node of the map.',
                  HINT = 'Give the nodes one user and password, or keep the passwords in a password file (passfile=) or service file of the router''s server and out of sharded_id.nodes.';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(secrets[1]::text[]) o WHERE split_part(o, '=', 1) NOT IN ('user', 'password')) THEN
        RAISE EXCEPTION 'the data nodes of cluster "%" have a secret PL/Proxy cannot take', cluster
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A PL/Proxy user mapping holds a user and a password, nothing else.',
                  HINT = 'Keep the other secrets (sslpassword) in a service file of the router''s server.';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(secrets[1]::text[]) o WHERE o ~ '[''\\]') THEN
        RAISE EXCEPTION 'the user or password of cluster "%" holds a quote or a backslash', cluster
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'PL/Proxy quotes the options of its user mapping without escaping them.',
                  HINT = 'Choose a password without them, or keep it in a password file (passfile=) of the router''s server.';
    END IF;
    RETURN coalesce(secrets[1]::text[], '{}');
END
$$;

COMMENT ON FUNCTION sharded_id._cluster_mapping(name, integer, text) IS
'internal: the options of a PL/Proxy cluster''s user mapping for PUBLIC, from the shard map''s nodes (optionally with one shard moved), failing on what one mapping cannot carry';

CREATE FUNCTION sharded_id._apply_shard_map(cluster name, connection_lifetime integer,
                                            query_timeout integer, with_ops boolean)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    map_layout text := (SELECT c.layout FROM sharded_id.current_settings() c);
    max_count integer := (SELECT l.max_shard + 1 FROM sharded_id.layouts() l WHERE l.name = map_layout);
    shard_count integer;
    options text[];
    mapping text[];
    stale text;
    node record;
    ops record;
BEGIN
    -- One at a time, and never beside a move's switch, whose map it would
    -- otherwise overwrite with the one it read before.
    LOCK TABLE sharded_id.shard_map IN SHARE ROW EXCLUSIVE MODE;
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

    -- The PL/Proxy cluster: partition n is logical shard n.  Its options
    -- are readable by every role, so they hold no secret: a password goes,
    -- with the user it is for, to the cluster's user mapping for PUBLIC,
    -- which PL/Proxy adds to every partition's connection string that
    -- names no user, and PostgreSQL shows to no other role; or it comes
    -- from a password file or service file.
    SELECT array_agg(format('p%s=%s', m.shard_id,
                            sharded_id._partition_connstr(n.connstr))
                     ORDER BY m.shard_id)
    INTO options
    FROM sharded_id.shard_map m JOIN sharded_id.nodes n USING (node_name);
    mapping := sharded_id._cluster_mapping(cluster);
    -- Settings not given keep their value, or start at 1800 s and none.
    SELECT coalesce(_apply_shard_map.connection_lifetime,
                    (SELECT split_part(o, '=', 2)::integer
                     FROM pg_foreign_server s, unnest(s.srvoptions) o
                     WHERE s.srvname = cluster AND o LIKE 'connection\_lifetime=%'), 1800),
           coalesce(_apply_shard_map.query_timeout,
                    (SELECT split_part(o, '=', 2)::integer
                     FROM pg_foreign_server s, unnest(s.srvoptions) o
                     WHERE s.srvname = cluster AND o LIKE 'query\_timeout=%'), 0)
    INTO connection_lifetime, query_timeout;
    options := options || format('connection_lifetime=%s', connection_lifetime)
                       || format('query_timeout=%s', query_timeout);
    PERFORM sharded_id._set_server_options(cluster, 'plproxy', options);
    IF mapping <> '{}' THEN
        PERFORM sharded_id._set_mapping_options(cluster, mapping);
        -- dblink reaches the nodes with the same mapping.
        IF EXISTS (SELECT FROM pg_proc p
                   JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
                   JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dblink'
                   WHERE p.proname = 'dblink_connect' AND has_function_privilege('public', p.oid, 'EXECUTE')) THEN
            RAISE WARNING 'every role with USAGE on server "%" can log in to the data nodes with its user mapping through dblink', cluster
                USING DETAIL = 'PUBLIC may call dblink_connect, and the mapping for PUBLIC holds the nodes'' user and password.',
                      HINT = 'REVOKE EXECUTE on dblink''s functions FROM PUBLIC, or keep the passwords in a password file of the router''s server.';
        END IF;
    ELSE
        -- No node has a password: one that an earlier map put in the
        -- mapping, with its user, would log every caller in as that user.
        SELECT string_agg(format('DROP %I', split_part(o, '=', 1)), ', ') INTO stale
        FROM pg_user_mappings u, unnest(u.umoptions) o
        WHERE u.srvname = cluster AND u.umuser = 0 AND split_part(o, '=', 1) IN ('user', 'password');
        IF stale IS NOT NULL THEN
            EXECUTE format('ALTER USER MAPPING FOR PUBLIC SERVER %I OPTIONS (%s)', cluster, stale);
        END IF;
    END IF;

    -- A postgres_fdw server per node, for ops queries.
    IF EXISTS (SELECT 1 FROM pg_foreign_data_wrapper WHERE fdwname = 'postgres_fdw') THEN
        FOR node IN SELECT * FROM sharded_id.nodes ORDER BY node_name LOOP
            PERFORM sharded_id._set_server_options(
                sharded_id.node_server(node.node_name), 'postgres_fdw',
                sharded_id._connstr_options(node.connstr)
                || ARRAY['extensions=sharded_id', 'async_capable=true']);
            -- A node's password, with the user it is for, goes to the
            -- server's user mapping; without one, the connections log in as
            -- the calling role, as the mapping says.
            IF sharded_id._connstr_secrets(node.connstr) <> '{}' THEN
                PERFORM sharded_id._set_mapping_options(sharded_id.node_server(node.node_name),
                                                        sharded_id._connstr_secrets(node.connstr, true));
            END IF;
        END LOOP;
        FOR ops IN SELECT * FROM sharded_id.ops_tables WHERE with_ops LOOP
            PERFORM sharded_id._attach_ops_partitions(ops.ops_table);
        END LOOP;
    END IF;
    RETURN shard_count;
END
$$;

COMMENT ON FUNCTION sharded_id._apply_shard_map(name, integer, integer, boolean) IS
'internal: apply_shard_map, optionally without rebuilding the ops tables'' partitions';

REVOKE EXECUTE ON FUNCTION sharded_id._apply_shard_map(name, integer, integer, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._cluster_mapping(name, integer, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.apply_shard_map(cluster name DEFAULT 'sharded_id',
                                           connection_lifetime integer DEFAULT NULL,
                                           query_timeout integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN sharded_id._apply_shard_map(cluster, connection_lifetime, query_timeout, true);
END
$$;

COMMENT ON FUNCTION sharded_id.apply_shard_map(name, integer, integer) IS
'create or update the PL/Proxy cluster (one partition per logical shard), the postgres_fdw server of each node and the ops tables from the shard map';

CREATE OR REPLACE FUNCTION sharded_id._move_switch(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text := format('p%s', m.shard_id);
    connstr text;
BEGIN
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

CREATE OR REPLACE FUNCTION sharded_id._move_cleanup(m sharded_id.moves, moved boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c record;
    conn text;
    left_slots bigint;
    deadline timestamptz;
    first_err text;
    first_detail text;
    first_hint text;
    first_state text;
BEGIN
    -- The ops tables follow the switch before the old copy goes (move_shard
    -- and recover_moves have done it already, and committed).
    IF moved THEN
        PERFORM sharded_id._move_follow_ops(m);
    END IF;
    FOR c IN
        SELECT * FROM sharded_id.move_cleanup x
        WHERE x.move_id = m.move_id AND x.policy <> CASE WHEN moved THEN 'on_failure' ELSE 'on_success' END
        ORDER BY CASE x.object_type WHEN 'subscription' THEN 1 WHEN 'slot' THEN 2 WHEN 'publication' THEN 3
                                    WHEN 'mark' THEN 4 ELSE 5 END, x.node_name
    LOOP
      -- A node that does not answer keeps its records for the next try;
      -- the other nodes are cleaned meanwhile.
      BEGIN
        conn := sharded_id._move_conn(m.move_id, 'cleanup', c.node_name);
        PERFORM sharded_id._remote_open(conn, c.node_name);
        IF c.object_type = 'subscription' THEN
            IF sharded_id._remote(conn, format('SELECT 1 FROM pg_subscription WHERE subname = %L
                   AND subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())', c.object_name)) IS NOT NULL THEN
                PERFORM sharded_id._remote_exec(conn, format('ALTER SUBSCRIPTION %I DISABLE', c.object_name));
                PERFORM sharded_id._remote_exec(conn, format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', c.object_name));
                PERFORM sharded_id._remote_exec(conn, format('DROP SUBSCRIPTION %I', c.object_name));
            END IF;
        ELSIF c.object_type = 'slot' THEN
            -- The move's slot and its table-copy slots, whose walsenders are
            -- ended first.
            deadline := clock_timestamp() + interval '10 s';
            LOOP
                left_slots := sharded_id._remote(conn, format(
                    'WITH s AS (SELECT * FROM pg_replication_slots WHERE slot_name = %L OR (%s <> 0 AND slot_name LIKE %L)), '
                    't AS (SELECT pg_terminate_backend(active_pid) FROM s WHERE active_pid IS NOT NULL), '
                    'd AS (SELECT pg_drop_replication_slot(slot_name) FROM s WHERE NOT active) '
                    'SELECT (SELECT count(*) FROM s) - (SELECT count(*) FROM d) + 0 * (SELECT count(*) FROM t)',
                    c.object_name, coalesce(m.sub_oid, 0), format('pg\_%s\_sync\_%%', coalesce(m.sub_oid, 0))))::bigint;
                EXIT WHEN left_slots = 0;
                IF clock_timestamp() > deadline THEN
                    RAISE EXCEPTION 'could not drop replication slot "%" on node "%"', c.object_name, c.node_name
                        USING ERRCODE = 'object_in_use',
                              HINT = 'Something keeps using it. CALL sharded_id.recover_moves() again once it is free.';
                END IF;
                PERFORM pg_sleep(0.05);
            END LOOP;
        ELSIF c.object_type = 'publication' THEN
            PERFORM sharded_id._remote_exec(conn, format('DROP PUBLICATION IF EXISTS %I', c.object_name));
        ELSIF c.object_type = 'mark' THEN
            PERFORM sharded_id._remote_exec(conn, format('DELETE FROM sharded_id.move_marks WHERE move_id = %s', c.object_name));
        ELSIF c.object_type = 'schema' THEN
            IF moved THEN
                PERFORM sharded_id._move_check_copy(m);
            END IF;
            -- Never a schema the node holds as a shard.
            PERFORM sharded_id._remote_exec(conn, format(
                'SET client_min_messages = warning; DO $do$ BEGIN IF NOT EXISTS (SELECT FROM sharded_id.shards WHERE schema_name = %L) '
                'THEN DROP SCHEMA IF EXISTS %I CASCADE; END IF; END $do$', c.object_name, c.object_name));
        END IF;
        DELETE FROM sharded_id.move_cleanup x
        WHERE x.move_id = c.move_id AND x.node_name = c.node_name
          AND x.object_type = c.object_type AND x.object_name = c.object_name;
      EXCEPTION WHEN OTHERS THEN
        IF first_err IS NULL THEN
            GET STACKED DIAGNOSTICS first_detail = PG_EXCEPTION_DETAIL, first_hint = PG_EXCEPTION_HINT;
            first_err := format('node "%s", %s %s: %s', c.node_name, c.object_type, c.object_name, SQLERRM);
            first_state := SQLSTATE;
        END IF;
      END;
    END LOOP;
    IF first_err IS NOT NULL THEN
        -- The first failure's own detail and hint say what to do about it.
        IF nullif(first_detail, '') IS NOT NULL THEN
            RAISE EXCEPTION 'could not drop everything move % made: %', m.move_id, first_err
                USING ERRCODE = first_state, DETAIL = first_detail,
                      HINT = coalesce(nullif(first_hint, ''), 'CALL sharded_id.recover_moves() again once every node answers.');
        END IF;
        RAISE EXCEPTION 'could not drop everything move % made: %', m.move_id, first_err
            USING ERRCODE = first_state,
                  HINT = coalesce(nullif(first_hint, ''), 'CALL sharded_id.recover_moves() again once every node answers.');
    END IF;
    DELETE FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id;
    UPDATE sharded_id.moves
    SET state = 'finished', outcome = CASE WHEN moved THEN 'moved' ELSE 'rolled back' END,
        finished_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE move_id = m.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._move_cleanup(sharded_id.moves, boolean) IS
'internal: drop what a finished or rolled-back move left on its nodes, as its cleanup records say';

CREATE FUNCTION sharded_id._move_follow_ops(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ops record;
BEGIN
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

REVOKE EXECUTE ON FUNCTION sharded_id._move_follow_ops(sharded_id.moves) FROM PUBLIC;

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
    src text;
    tgt text;
    n text;
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
    -- Nothing of an earlier call in this session is reused: its
    -- connections close.  Then the shard's move lock, for this move's
    -- whole life: a move of the shard running in another session stops
    -- this one here.
    PERFORM sharded_id._remote_close_all('sharded_id_');
    IF NOT dry_run THEN
        PERFORM sharded_id._move_claim(shard_id);
    END IF;
    -- First, whatever an earlier move of this shard left unfinished.
    unfinished := (SELECT x.move_id FROM sharded_id.moves x
                   WHERE x.shard_id = move_shard.shard_id AND x.finished_at IS NULL);
    IF unfinished IS NOT NULL AND NOT dry_run THEN
        RAISE NOTICE 'finishing move % of shard %, which did not end', unfinished, shard_id;
        PERFORM sharded_id._move_resolve(unfinished);
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._remote_close_all('sharded_id_');
    END IF;

    BEGIN
        source := (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = move_shard.shard_id);
        IF source IS NULL THEN
            RAISE EXCEPTION 'shard % is not in the shard map', shard_id
                USING ERRCODE = 'undefined_object';
        END IF;
        IF NOT EXISTS (SELECT FROM sharded_id.nodes x WHERE x.node_name = target_node) THEN
            RAISE EXCEPTION 'data node "%" does not exist', target_node
                USING ERRCODE = 'undefined_object';
        END IF;
        -- The map after the switch must be one the router can apply.
        PERFORM sharded_id._cluster_mapping(cluster, shard_id, target_node);
        IF source = target_node THEN
            RAISE NOTICE 'shard % is already on node "%"', shard_id, target_node;
            steps := '{}';
        ELSE
            src := sharded_id._move_conn(NULL, 'source', source);
            tgt := sharded_id._move_conn(NULL, 'target', target_node);
            PERFORM sharded_id._remote_open(src, source);
            PERFORM sharded_id._remote_open(tgt, target_node);
            versions := ARRAY[(SELECT e.extversion FROM pg_extension e WHERE e.extname = 'sharded_id'),
                              sharded_id._remote(src, 'SELECT extversion FROM pg_extension WHERE extname = ''sharded_id'''),
                              sharded_id._remote(tgt, 'SELECT extversion FROM pg_extension WHERE extname = ''sharded_id''')];
            IF versions[2] IS DISTINCT FROM versions[1] OR versions[3] IS DISTINCT FROM versions[1] THEN
                RAISE EXCEPTION 'sharded_id versions differ: router %, source %, target %',
                                versions[1], coalesce(versions[2], 'none'), coalesce(versions[3], 'none')
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          HINT = 'Run ALTER EXTENSION sharded_id UPDATE on every node and on the router.';
            END IF;
            schema := sharded_id._remote(src, format('SELECT schema_name FROM sharded_id.shards WHERE shard_id = %s', shard_id));
            IF schema IS NULL THEN
                RAISE EXCEPTION 'node "%" does not hold shard %', source, shard_id
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          DETAIL = 'The shard map names the node, but its sharded_id.shards has no such shard.';
            END IF;
            IF sharded_id._remote(tgt, format(
                   'SELECT 1 FROM sharded_id.shards WHERE shard_id = %s OR schema_name = %L UNION SELECT 1 FROM pg_namespace WHERE nspname = %L',
                   shard_id, schema, schema)) IS NOT NULL THEN
                RAISE EXCEPTION 'node "%" already holds shard % or a schema "%"', target_node, shard_id, schema
                    USING ERRCODE = 'duplicate_object';
            END IF;
            -- Rows are copied and compared with row security off: a mover
            -- subject to it would fail half-way, or copy only what it sees.
            bad := sharded_id._remote(src, format(
                'SELECT string_agg(format(''%%I'', c.relname), '', '' ORDER BY c.relname)
                 FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
                 WHERE s.nspname = %L AND c.relkind IN (''r'', ''p'') AND c.relrowsecurity', schema));
            IF bad IS NOT NULL THEN
                FOREACH n IN ARRAY ARRAY[source, target_node] LOOP
                    IF sharded_id._remote(CASE WHEN n = source THEN src ELSE tgt END,
                           'SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user') IS DISTINCT FROM 't' THEN
                        RAISE EXCEPTION 'the role that moves shard % on node "%" cannot bypass row security', shard_id, n
                            USING ERRCODE = 'insufficient_privilege',
                                  DETAIL = format('Tables of schema "%s" have row security: %s. A move copies and compares every row, which row security would filter.', schema, bad),
                                  HINT = 'Reach the nodes as a superuser or a role with BYPASSRLS.';
                    END IF;
                END LOOP;
            END IF;
            wal_level := sharded_id._remote(src, 'SHOW wal_level');
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
            IF method = 'online' THEN
                -- Updates and deletes replicate by replica identity; unlogged
                -- tables do not replicate at all.
                bad := sharded_id._remote(src, format(
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
            -- The target raises the shard's floor over the source's largest
            -- ids and its high-water mark: both must be ids a floor may be
            -- raised over (sharded_id._check_floor), or the move stops here,
            -- before it changes anything.
            PERFORM sharded_id._remote(src, format(
                'SELECT sharded_id._check_floors(s.shard_id, s.schema_name, s.layout) FROM sharded_id.shards s WHERE s.shard_id = %s',
                shard_id));
            PERFORM sharded_id._remote(tgt, format(
                'SELECT sharded_id._check_floor(%s, %s, %L, %L)', shard_id,
                sharded_id._remote(src, format(
                    'SELECT sharded_id.high_water(s.shard_id, s.layout) FROM sharded_id.shards s WHERE s.shard_id = %s', shard_id)),
                sharded_id._remote(src, format('SELECT layout FROM sharded_id.shards WHERE shard_id = %s', shard_id)),
                format('the source, node "%s",', source)));
            PERFORM sharded_id._move_check_schema(src, schema);
            IF dry_run THEN
                RAISE NOTICE 'would move shard % (schema "%") from node "%" to node "%", method %: %',
                             shard_id, schema, source, target_node, method, array_to_string(steps, ', ');
                steps := '{}';
            END IF;
        END IF;
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        PERFORM sharded_id._remote_close_all('sharded_id_');
        PERFORM sharded_id._unlock_shard(move_shard.shard_id, 'move');
        RAISE;
    END;
    PERFORM sharded_id._remote_close_all('sharded_id_');
    IF steps = '{}' THEN
        PERFORM sharded_id._unlock_shard(shard_id, 'move');
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
            PERFORM sharded_id._move_hold(step);
            PERFORM sharded_id._move_step(m.move_id, step, max_lag, timeout, freeze_timeout);
        EXCEPTION WHEN OTHERS OR query_canceled THEN
            GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE, err_detail = PG_EXCEPTION_DETAIL;
            -- At once: the source's freeze ends (closing its connection
            -- rolls it back, unless the retirement committed).
            PERFORM sharded_id._remote_close(sharded_id._move_conn(m.move_id, 'freeze', m.source_node));
        END;
        IF err_state = '57014' THEN
            -- A cancel or statement_timeout: stop here, the writers free
            -- to go on, the journal saying where, and nothing left open.
            -- recover_moves (or the next move_shard of the shard) finishes
            -- the move or rolls it back.
            PERFORM sharded_id._remote_close_all('sharded_id_');
            PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
            UPDATE sharded_id.moves x SET error = format('%s: %s', step, err), updated_at = clock_timestamp()
            WHERE x.move_id = m.move_id;
            COMMIT;
            PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
            RAISE EXCEPTION 'move % of shard % to node "%" was canceled at step "%": %', m.move_id, m.shard_id, m.target_node, step, err
                USING ERRCODE = 'query_canceled',
                      DETAIL = 'The move is unfinished; writers to the shard go on.',
                      HINT = 'CALL sharded_id.recover_moves() to finish it or roll it back.';
        END IF;
        IF step = 'switch' OR err IS NOT NULL THEN
            -- The switch commits with the route lock still held; writers
            -- then find the new map.
            UPDATE sharded_id.moves x
            SET freeze_ms = extract(epoch FROM clock_timestamp() - t_freeze) * 1000,
                error = CASE WHEN err IS NOT NULL THEN format('%s: %s', step, err) END
            WHERE x.move_id = m.move_id AND (t_freeze IS NOT NULL OR err IS NOT NULL);
            COMMIT;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
            PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
            -- Then the ops tables follow, committed apart from the cleanup,
            -- which drops the old copy they read until now.  Cleanup tries
            -- again if this fails.
            IF err IS NULL THEN
                BEGIN
                    PERFORM sharded_id._move_follow_ops(m);
                EXCEPTION WHEN OTHERS THEN
                    RAISE WARNING 'the ops tables of shard % still read node "%": %', m.shard_id, m.source_node, SQLERRM;
                END;
            END IF;
        END IF;
        EXIT WHEN err IS NOT NULL;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    END LOOP;

    IF err IS NULL THEN
        CALL sharded_id._move_journal(m.move_id, 'cleanup');
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._move_hold('cleanup');
        PERFORM sharded_id._move_resolve(m.move_id);
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._remote_close_all('sharded_id_');
        PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
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
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM sharded_id._remote_close_all('sharded_id_');
    PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
    PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
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

CREATE OR REPLACE PROCEDURE sharded_id.recover_moves()
LANGUAGE plpgsql
AS $$
DECLARE
    m record;
    moved boolean;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM sharded_id._dblink_schema();
    PERFORM sharded_id._remote_close_all('sharded_id_');
    FOR m IN SELECT x.move_id, x.shard_id, x.state FROM sharded_id.moves x WHERE x.finished_at IS NULL ORDER BY x.move_id LOOP
        -- Never a move that is still running in another session.
        PERFORM sharded_id._move_claim(m.shard_id);
        CALL sharded_id._move_journal(m.move_id, 'recover');
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        -- A switched move's ops tables follow first, committed apart from
        -- the cleanup that drops the old copy.
        PERFORM sharded_id._move_follow_ops(x) FROM sharded_id.moves x
        WHERE x.move_id = m.move_id
          AND x.target_node = (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = x.shard_id);
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        moved := sharded_id._move_resolve(m.move_id);
        RAISE NOTICE 'move % of shard %, interrupted at step "%": %', m.move_id, m.shard_id, m.state,
                     CASE WHEN moved THEN 'finished' ELSE 'rolled back' END;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        PERFORM sharded_id._remote_close_all('sharded_id_');
        PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
    END LOOP;
END
$$;

COMMENT ON PROCEDURE sharded_id.recover_moves() IS
'finish or roll back every move that did not end (a crash, a failed step, a cancel), from the journal and what the nodes hold, and fail on a move still running in another session; CALL it on the router';

