/* src/sql/sharded_id--1.4--1.5.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '1.5'" to load this file. \quit

--
-- 1.5: the guarantees of 1.4 hold off the tested paths, where operators and
-- applications go.
--

-- Issue 27: shard copies that are the same schema (schema_ddl object for
-- object, schema_inventory, moves that check both), provisioning without
-- superuser, and passwords out of server options and statements.
--
-- Privileges as statements: acl of object (e.g. 'TABLE s.t', 'SCHEMA s'),
-- owned by owner, exactly: the defaults revoked, then each grant, made by
-- its grantor.  A NULL acl is the default one, and gives nothing.  With
-- columns, the column privileges of a table (nothing to revoke).
CREATE FUNCTION sharded_id._acl_ddl(object text, acl aclitem[], owner oid, columns text DEFAULT NULL)
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
               CASE WHEN a.grantor <> owner THEN format('SET ROLE %I; ', pg_get_userbyid(a.grantor)) ELSE '' END
               || format('GRANT %s ON %s TO %s%s',
                         string_agg(a.privilege_type || coalesce(' (' || columns || ')', ''), ', ' ORDER BY a.privilege_type),
                         object,
                         CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
                         CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
               || CASE WHEN a.grantor <> owner THEN '; RESET ROLE' ELSE '' END
        FROM aclexplode(acl) a
        GROUP BY a.grantor, a.grantee, a.is_grantable
    ) x
    ORDER BY step, other_grantor, s
$$;

COMMENT ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text) IS
'internal: the REVOKE and GRANT statements that give an object (or columns of a table) exactly this access control list';

REVOKE EXECUTE ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text) FROM PUBLIC;

-- The statements that give relation dst (a qualified name) what src has
-- beyond its columns, constraints and indexes: triggers and their enabled
-- state, row-level security and its policies, owner, privileges (table and
-- column, exactly: defaults revoked first) and comments (of the relation,
-- its columns, triggers and policies).  Names are printed under this
-- function's search_path, so qualified; roles are read from pg_roles, so
-- that a role without superuser can copy a table too.
CREATE OR REPLACE FUNCTION sharded_id._relation_extras_ddl(src regclass, dst text)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    r record;
    keyword text;
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
                                            rel.relacl, rel.relowner);
    FOR r IN
        SELECT att.attname, att.attacl FROM pg_attribute att
        WHERE att.attrelid = src AND att.attnum > 0 AND NOT att.attisdropped AND att.attacl IS NOT NULL
        ORDER BY att.attnum
    LOOP
        RETURN QUERY SELECT sharded_id._acl_ddl('TABLE ' || dst, r.attacl, rel.relowner, quote_ident(r.attname));
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
                                                 WHEN 'd' THEN ' GENERATED BY DEFAULT AS IDENTITY' ELSE '' END,
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
                RETURN NEXT format('CREATE %sTABLE %I.%I (%s)%s%s', CASE WHEN r.relpersistence = 'u' THEN 'UNLOGGED ' ELSE '' END,
                                   schema_name, r.relname, coalesce(r.columns, ''), r.partition_by,
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
        WHERE k.connamespace = nsp
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
