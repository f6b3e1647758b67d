/* src/sql/api/citus.sql */

--
-- Shards as Citus distributed schemas.  Citus is not a dependency: these
-- functions are created everywhere and check for the citus extension when
-- they are called (55000 without it), reading Citus's metadata in
-- pg_catalog only then.  Ids need no setting on Citus (src/citus.c), and
-- Citus moves and routes the schemas: floors and ownership are not used
-- there, nor move_shard or the PL/Proxy router.
--

--
-- The open roles of _open_schemas: every role that is not a superuser,
-- and every role that such a role is a member of.
--
CREATE FUNCTION sharded_id._open_roles()
RETURNS SETOF oid
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._open_roles');
    RETURN QUERY
    WITH RECURSIVE member_of(role, member) AS (
        SELECT m.roleid, m.member FROM pg_catalog.pg_auth_members m
        UNION
        SELECT mo.role, m.member FROM member_of mo JOIN pg_catalog.pg_auth_members m ON m.roleid = mo.member
    ),
    open_role(oid) AS (
        SELECT r.oid FROM pg_catalog.pg_roles r WHERE NOT r.rolsuper
        UNION
        SELECT mo.role FROM member_of mo JOIN pg_catalog.pg_roles r ON r.oid = mo.member WHERE NOT r.rolsuper
    )
    SELECT o.oid FROM open_role o;
END
$$;

COMMENT ON FUNCTION sharded_id._open_roles() IS
'internal: the roles that are not superusers, and the roles that they are members of (_open_schemas)';

REVOKE EXECUTE ON FUNCTION sharded_id._open_roles() FROM PUBLIC;

--
-- Reason 5 of _open_schemas: code of the given schemas that uses a
-- function, operator or type of another schema owned by an open role,
-- directly or through the types that it uses (the schema's own objects
-- are reason 3's).
--
CREATE FUNCTION sharded_id._open_schema_code(schemas oid[])
RETURNS TABLE (nspoid oid, k integer, what text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._open_schema_code');
    RETURN QUERY
    WITH RECURSIVE
    -- What the schema's code depends on: (schema, the depending object, the
    -- object it uses).
    uses(nspoid, classid, objid, objsubid, refclassid, refobjid) AS (
        SELECT dn.nspoid, d.classid, d.objid, d.objsubid, d.refclassid, d.refobjid
        FROM pg_catalog.pg_depend d
        CROSS JOIN LATERAL (SELECT CASE d.classid
            WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN
                (SELECT k.relnamespace FROM pg_catalog.pg_class k WHERE k.oid = d.objid)
            WHEN 'pg_catalog.pg_attrdef'::pg_catalog.regclass THEN
                (SELECT k.relnamespace FROM pg_catalog.pg_attrdef a JOIN pg_catalog.pg_class k ON k.oid = a.adrelid WHERE a.oid = d.objid)
            WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN
                (SELECT x.connamespace FROM pg_catalog.pg_constraint x WHERE x.oid = d.objid)
            WHEN 'pg_catalog.pg_trigger'::pg_catalog.regclass THEN
                (SELECT k.relnamespace FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class k ON k.oid = t.tgrelid WHERE t.oid = d.objid)
            WHEN 'pg_catalog.pg_rewrite'::pg_catalog.regclass THEN
                (SELECT k.relnamespace FROM pg_catalog.pg_rewrite w JOIN pg_catalog.pg_class k ON k.oid = w.ev_class WHERE w.oid = d.objid)
            WHEN 'pg_catalog.pg_policy'::pg_catalog.regclass THEN
                (SELECT k.relnamespace FROM pg_catalog.pg_policy y JOIN pg_catalog.pg_class k ON k.oid = y.polrelid WHERE y.oid = d.objid)
            WHEN 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass THEN
                (SELECT x.stxnamespace FROM pg_catalog.pg_statistic_ext x WHERE x.oid = d.objid)
            WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN
                (SELECT x.typnamespace FROM pg_catalog.pg_type x WHERE x.oid = d.objid)
            WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN
                (SELECT x.pronamespace FROM pg_catalog.pg_proc x WHERE x.oid = d.objid)
            END AS nspoid) dn
        WHERE dn.nspoid = ANY (_open_schema_code.schemas)
          AND d.refclassid IN ('pg_catalog.pg_proc'::pg_catalog.regclass, 'pg_catalog.pg_operator'::pg_catalog.regclass,
                               'pg_catalog.pg_type'::pg_catalog.regclass)
    ),
    -- The types that the schema's code uses, and those they are made of:
    -- an array's element, a domain's base type, a composite type's or a
    -- table row type's columns, a range's subtype.
    reached(nspoid, classid, objid, objsubid, typ) AS (
        SELECT u.nspoid, u.classid, u.objid, u.objsubid, u.refobjid FROM uses u
        WHERE u.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass
        UNION
        SELECT r.nspoid, r.classid, r.objid, r.objsubid, x.typ
        FROM reached r JOIN pg_catalog.pg_type t ON t.oid = r.typ
        CROSS JOIN LATERAL (
            SELECT t.typelem AS typ WHERE t.typelem <> 0
            UNION ALL SELECT t.typbasetype WHERE t.typtype = 'd'
            UNION ALL SELECT a.atttypid FROM pg_catalog.pg_attribute a
                WHERE t.typrelid <> 0 AND a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
            UNION ALL SELECT g.rngsubtype FROM pg_catalog.pg_range g WHERE g.rngtypid = t.oid) x
    ),
    -- What runs for those types: the types themselves (their input,
    -- output and check code is their owner's) and the functions that their
    -- domains' checks call.
    runs(nspoid, classid, objid, objsubid, refclassid, refobjid) AS (
        SELECT u.nspoid, u.classid, u.objid, u.objsubid, u.refclassid, u.refobjid FROM uses u
        WHERE u.refclassid <> 'pg_catalog.pg_type'::pg_catalog.regclass
        UNION
        SELECT r.nspoid, r.classid, r.objid, r.objsubid, 'pg_catalog.pg_type'::pg_catalog.regclass, r.typ FROM reached r
        UNION
        SELECT r.nspoid, r.classid, r.objid, r.objsubid, d.refclassid, d.refobjid
        FROM reached r JOIN pg_catalog.pg_constraint x ON x.contypid = r.typ
        JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_constraint'::pg_catalog.regclass AND d.objid = x.oid
                                   AND d.refclassid IN ('pg_catalog.pg_proc'::pg_catalog.regclass,
                                                        'pg_catalog.pg_operator'::pg_catalog.regclass)
    ),
    run_owner(nspoid, classid, objid, objsubid, refclassid, refobjid, owner, refnsp) AS (
        SELECT u.nspoid, u.classid, u.objid, u.objsubid, u.refclassid, u.refobjid, x.owner, x.nsp
        FROM runs u CROSS JOIN LATERAL (
            SELECT p.proowner AS owner, p.pronamespace AS nsp FROM pg_catalog.pg_proc p
            WHERE u.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = u.refobjid
            UNION ALL
            SELECT o.oprowner, o.oprnamespace FROM pg_catalog.pg_operator o
            WHERE u.refclassid = 'pg_catalog.pg_operator'::pg_catalog.regclass AND o.oid = u.refobjid
            UNION ALL
            SELECT t.typowner, t.typnamespace FROM pg_catalog.pg_type t
            WHERE u.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass AND t.oid = u.refobjid) x
    )
    SELECT DISTINCT u.nspoid, 5,
           pg_catalog.format('%s uses %s, owned by role %I',
                             pg_catalog.pg_describe_object(u.classid, u.objid, u.objsubid),
                             pg_catalog.pg_describe_object(u.refclassid, u.refobjid, 0), r.rolname)
    FROM run_owner u JOIN pg_catalog.pg_roles r ON r.oid = u.owner
    WHERE r.oid IN (SELECT o FROM sharded_id._open_roles() o) AND u.refnsp <> u.nspoid;
END
$$;

COMMENT ON FUNCTION sharded_id._open_schema_code(oid[]) IS
'internal: code of the given schemas that uses a function, operator or type owned by an open role, with the reason (_open_schemas)';

REVOKE EXECUTE ON FUNCTION sharded_id._open_schema_code(oid[]) FROM PUBLIC;

--
-- Schemas that a role other than a superuser owns, may create objects in,
-- or has put code in.  Citus copies a distributed schema's rows as the role
-- that distributes or moves it (citus_schema_distribute, citus_schema_move,
-- citus_rebalance_start: COPY into the new shard on the node that receives
-- it), which runs the tables' CHECK constraints, domain checks and
-- generated columns with that role's rights.  A role is open unless it is
-- a superuser that no such role is a member of (a member with INHERIT has
-- its owner's rights: it could replace the superuser's functions).  Code
-- is followed through the catalog's dependencies: the schema's defaults,
-- constraints, indexes, triggers, rules, policies and statistics objects,
-- and the types of its columns, through arrays, domains (their base types
-- and the functions of their checks), composite types and table row types
-- (their columns' types) and ranges, to the functions, operators and types
-- they use.  The body of a function in another language than SQL's
-- standard one records no dependency: a superuser's function that calls
-- another role's by name is not seen.  Reads the catalogs only: no row of
-- any table, no view, no function of the schema is run.
--
CREATE FUNCTION sharded_id._open_schemas(schemas oid[])
RETURNS TABLE (nspoid oid, k integer, what text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._open_schemas');
    RETURN QUERY
    WITH open_role(oid) AS (
        SELECT o FROM sharded_id._open_roles() o
    ),
    cand AS (
        SELECT n.oid AS nspoid, n.nspowner, n.nspacl
        FROM pg_catalog.pg_namespace n WHERE n.oid = ANY (_open_schemas.schemas)
    ),
    -- Objects of the schema and their owners.
    owned(nspoid, classid, objid, owner) AS (
        SELECT relnamespace, 'pg_catalog.pg_class'::pg_catalog.regclass, oid, relowner FROM pg_catalog.pg_class
            WHERE relkind NOT IN ('i', 'I')    -- an index is its table's
        -- Not the row type of a relation nor an array type of the schema's
        -- own: each is its relation's or element's, named with it.
        UNION ALL SELECT typnamespace, 'pg_catalog.pg_type'::pg_catalog.regclass, oid, typowner FROM pg_catalog.pg_type t
            WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class k WHERE k.oid = t.typrelid AND k.relkind <> 'c')
              AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_type e WHERE e.oid = t.typelem AND e.typarray = t.oid)
        UNION ALL SELECT pronamespace, 'pg_catalog.pg_proc'::pg_catalog.regclass, oid, proowner FROM pg_catalog.pg_proc
        UNION ALL SELECT oprnamespace, 'pg_catalog.pg_operator'::pg_catalog.regclass, oid, oprowner FROM pg_catalog.pg_operator
        UNION ALL SELECT collnamespace, 'pg_catalog.pg_collation'::pg_catalog.regclass, oid, collowner FROM pg_catalog.pg_collation
        UNION ALL SELECT connamespace, 'pg_catalog.pg_conversion'::pg_catalog.regclass, oid, conowner FROM pg_catalog.pg_conversion
        UNION ALL SELECT opcnamespace, 'pg_catalog.pg_opclass'::pg_catalog.regclass, oid, opcowner FROM pg_catalog.pg_opclass
        UNION ALL SELECT opfnamespace, 'pg_catalog.pg_opfamily'::pg_catalog.regclass, oid, opfowner FROM pg_catalog.pg_opfamily
        UNION ALL SELECT cfgnamespace, 'pg_catalog.pg_ts_config'::pg_catalog.regclass, oid, cfgowner FROM pg_catalog.pg_ts_config
        UNION ALL SELECT dictnamespace, 'pg_catalog.pg_ts_dict'::pg_catalog.regclass, oid, dictowner FROM pg_catalog.pg_ts_dict
        UNION ALL SELECT stxnamespace, 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass, oid, stxowner FROM pg_catalog.pg_statistic_ext
    )
    SELECT c.nspoid, 1, pg_catalog.format('role %I owns the schema', r.rolname)
    FROM cand c JOIN pg_catalog.pg_roles r ON r.oid = c.nspowner
    WHERE r.oid IN (SELECT o.oid FROM open_role o)
    UNION ALL
    SELECT c.nspoid, 2,
           CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.format('role %I', r.rolname) END
           || ' may create objects in the schema'
    FROM cand c CROSS JOIN LATERAL pg_catalog.aclexplode(c.nspacl) a
    LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
    WHERE a.privilege_type = 'CREATE' AND (a.grantee = 0 OR a.grantee IN (SELECT o.oid FROM open_role o))
    UNION ALL
    SELECT c.nspoid, 3,
           pg_catalog.format('role %I owns %s', r.rolname, pg_catalog.pg_describe_object(o.classid, o.objid, 0))
    FROM cand c JOIN owned o ON o.nspoid = c.nspoid
    JOIN pg_catalog.pg_roles r ON r.oid = o.owner
    WHERE r.oid IN (SELECT x.oid FROM open_role x)
    UNION ALL
    SELECT c.nspoid, 4,
           CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.format('role %I', r.rolname) END
           || pg_catalog.format(' may create triggers on %s', pg_catalog.pg_describe_object('pg_catalog.pg_class'::pg_catalog.regclass, k.oid, 0))
    FROM cand c JOIN pg_catalog.pg_class k ON k.relnamespace = c.nspoid
    CROSS JOIN LATERAL pg_catalog.aclexplode(k.relacl) a
    LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
    WHERE a.privilege_type = 'TRIGGER' AND (a.grantee = 0 OR a.grantee IN (SELECT o.oid FROM open_role o))
    UNION ALL
    -- Code of the schema that uses an open role's objects.
    SELECT x.nspoid, x.k, x.what FROM sharded_id._open_schema_code(_open_schemas.schemas) x;
END
$$;

COMMENT ON FUNCTION sharded_id._open_schemas(oid[]) IS
'internal: of the given schemas, those that a role that is not a superuser (or is a member of a superuser role) owns, may create objects or triggers in, or has code in, with each reason (citus_open_shards, citus_check_moves)';

REVOKE EXECUTE ON FUNCTION sharded_id._open_schemas(oid[]) FROM PUBLIC;

-- Every catalog shard whose schema is open (_open_schemas), and whether
-- Citus has distributed it.
CREATE FUNCTION sharded_id.citus_open_shards(first_shard integer DEFAULT NULL,
                                            last_shard integer DEFAULT NULL)
RETURNS TABLE (shard_id integer, schema_name name, distributed boolean, reason text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dist oid[] := '{}';
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL THEN
        EXECUTE 'SELECT coalesce(pg_catalog.array_agg(d.schemaid::pg_catalog.oid), ''{}'') FROM pg_catalog.pg_dist_schema d'
        INTO dist;
    END IF;
    RETURN QUERY
        SELECT c.shard_id, c.schema_name, n.oid = ANY (dist), o.what
        FROM sharded_id.shards c
        JOIN pg_catalog.pg_namespace n ON n.nspname = c.schema_name
        JOIN sharded_id._open_schemas(ARRAY(
                SELECT x.oid FROM sharded_id.shards y JOIN pg_catalog.pg_namespace x ON x.nspname = y.schema_name
                WHERE y.shard_id >= coalesce(citus_open_shards.first_shard, 0)
                  AND y.shard_id <= coalesce(citus_open_shards.last_shard, 2147483647))) o ON o.nspoid = n.oid
        ORDER BY c.shard_id, o.k, o.what;
END
$$;

COMMENT ON FUNCTION sharded_id.citus_open_shards(integer, integer) IS
'every catalog shard (from first_shard to last_shard; NULL: no bound) whose schema a role that is not a superuser owns, may create objects or triggers in, or has code in (an object of the schema, or a function, operator or type that code of the schema uses, through arrays, domains, composite and row types, ranges), whether Citus distributed it, one row per reason; citus_distribute_shards refuses such a shard';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_open_shards(integer, integer) FROM PUBLIC;

-- Before citus_schema_move or citus_rebalance_start as a superuser: refuse
-- (42501) while any distributed schema, a shard's or not, is open
-- (_open_schemas), naming the first reason; those calls would run that
-- role's code with the superuser's rights.
CREATE FUNCTION sharded_id.citus_check_moves()
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dist oid[];
    bad record;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_schema') IS NULL THEN
        RAISE EXCEPTION 'the citus extension is not installed in this database'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it on a node of a Citus cluster.';
    END IF;
    EXECUTE 'SELECT coalesce(pg_catalog.array_agg(d.schemaid::pg_catalog.oid), ''{}'') FROM pg_catalog.pg_dist_schema d'
    INTO dist;
    SELECT o.nspoid::pg_catalog.regnamespace AS nsp, o.what INTO bad
    FROM sharded_id._open_schemas(dist) o ORDER BY o.nspoid, o.k, o.what LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'distributed schema % is open to a role that is not a superuser', bad.nsp
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = pg_catalog.format('In schema %s, %s. citus_schema_move and citus_rebalance_start copy the schema''s rows '
                                             'as the role that calls them, which would run that role''s code with a superuser''s rights.',
                                             bad.nsp, bad.what),
                  HINT = 'Review and drop that role''s code in the schema, or move the schema as a role that is not a superuser; '
                         'do not give the code to a superuser without reading it.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id.citus_check_moves() IS
'on a Citus coordinator, before citus_schema_move or citus_rebalance_start: refuses (42501) while a distributed schema is open to a role that is not a superuser, naming the first reason';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_check_moves() FROM PUBLIC;

CREATE FUNCTION sharded_id.citus_distribute_shards(first_shard integer DEFAULT NULL,
                                                  last_shard integer DEFAULT NULL)
RETURNS SETOF name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s record;
    refused_schema name;
    refused_what text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'the citus extension is not installed in this database'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it on a node of a Citus cluster.';
    END IF;
    IF first_shard > last_shard THEN
        RAISE EXCEPTION 'first shard % is after last shard %', first_shard, last_shard
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- A schema open to a role that is not a superuser (citus_open_shards)
    -- is refused before anything is distributed: distributing it, and
    -- every later citus_schema_move or citus_rebalance_start, would run
    -- that role's code as the superuser who calls them.  The first reason
    -- of the first such shard not yet distributed is named.
    SELECT o.schema_name, o.reason INTO refused_schema, refused_what
    FROM sharded_id.citus_open_shards(first_shard, last_shard) WITH ORDINALITY o
    WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema d
                      WHERE d.schemaid = (SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname = o.schema_name))
    ORDER BY o.ordinality LIMIT 1;
    IF refused_schema IS NOT NULL THEN
        RAISE EXCEPTION 'shard schema % is open to a role that is not a superuser', pg_catalog.quote_ident(refused_schema)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = pg_catalog.format('In schema %I, %s. Citus copies a distributed schema''s rows as the role that '
                                             'distributes or moves it (citus_schema_distribute, citus_schema_move, '
                                             'citus_rebalance_start), which would run that role''s code with a superuser''s rights.',
                                             refused_schema, refused_what),
                  HINT = 'Review and drop that role''s code in the schema and revoke CREATE on it and TRIGGER on its tables '
                         'from other roles, or keep the shard off Citus; do not give the code to a superuser without reading it.';
    END IF;
    -- By the schema's OID, never its name read as an identifier: a name
    -- such as "Shard7" must not fold to another role's shard7.
    FOR s IN
        SELECT c.shard_id, c.schema_name, n.oid AS nspoid
        FROM sharded_id.shards c JOIN pg_namespace n ON n.nspname = c.schema_name
        WHERE c.shard_id >= coalesce(first_shard, 0)
          AND c.shard_id <= coalesce(last_shard, 2147483647)
        ORDER BY c.shard_id
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema d WHERE d.schemaid = s.nspoid);
        EXECUTE 'SELECT pg_catalog.citus_schema_distribute($1)' USING s.nspoid::regnamespace;
        RETURN NEXT s.schema_name;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id.citus_distribute_shards(integer, integer) IS
'on a Citus coordinator: citus_schema_distribute on the schema of every catalog shard (from first_shard to last_shard; NULL: no bound) that is not distributed yet, in one transaction; returns the schemas it distributed; refuses with 42501, distributing nothing, while one of those schemas is open to a role that is not a superuser (citus_open_shards)';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_distribute_shards(integer, integer) FROM PUBLIC;

CREATE FUNCTION sharded_id.citus_shard_node(shard_id integer,
                                           OUT schema_name name,
                                           OUT group_id integer,
                                           OUT node_name text,
                                           OUT node_port integer)
RETURNS SETOF record
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'the citus extension is not installed in this database'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it on a node of a Citus cluster.';
    END IF;
    schema_name := sharded_id.shard_schema(citus_shard_node.shard_id);
    -- A distributed schema's tables are single-shard and colocated: the
    -- placement of any one of them is the schema's node.
    RETURN QUERY
        SELECT DISTINCT schema_name, pl.groupid, n.nodename, n.nodeport
        FROM pg_catalog.pg_dist_schema d
        JOIN pg_catalog.pg_dist_partition p ON p.colocationid = d.colocationid
        JOIN pg_catalog.pg_dist_shard sh ON sh.logicalrelid = p.logicalrelid
        JOIN pg_catalog.pg_dist_placement pl ON pl.shardid = sh.shardid
        JOIN pg_catalog.pg_dist_node n ON n.groupid = pl.groupid AND n.noderole = 'primary'
        WHERE d.schemaid = (SELECT ns.oid FROM pg_namespace ns WHERE ns.nspname = schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id.citus_shard_node(integer) IS
'on a Citus cluster: the node (group, host, port) that holds the distributed schema of the shard, from Citus''s metadata; no row if the schema is not distributed or has no table';

CREATE FUNCTION sharded_id.citus_id_node(id bigint,
                                        OUT shard_id integer,
                                        OUT schema_name name,
                                        OUT group_id integer,
                                        OUT node_name text,
                                        OUT node_port integer)
RETURNS SETOF record
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.shard_id, n.schema_name, n.group_id, n.node_name, n.node_port
    FROM (SELECT sharded_id.shard_id(citus_id_node.id,
                                     (SELECT c.layout FROM sharded_id.current_settings() c)) AS shard_id) s,
         sharded_id.citus_shard_node(s.shard_id) n
$$;

COMMENT ON FUNCTION sharded_id.citus_id_node(bigint) IS
'on a Citus cluster: routing by id, the shard of the id (in the settings'' layout) and the node that holds its distributed schema';

--
-- Shard windows (src/citus.c).  On a Citus node, an id of a shard carries a
-- millisecond of a window that the coordinator granted to that node alone,
-- so the node uses the whole sequence field.  Nodes ask for windows over
-- their own connection to the coordinator, as the extension's owner, for
-- one shard and the others due for renewal with it; the coordinator
-- grants to itself in-process.  Not for PUBLIC: every call moves the
-- shards' windows on.
--
CREATE FUNCTION sharded_id.citus_grant_windows(shard_ids integer[], layout text, group_id integer,
                                              node_name text, node_port integer, min_starts bigint[],
                                              stripes integer, stripe integer, reserved boolean)
RETURNS TABLE (shard_id integer, window_start bigint, window_end bigint, retry_after integer)
AS 'MODULE_PATHNAME', 'shid_citus_grant_windows'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

COMMENT ON FUNCTION sharded_id.citus_grant_windows(integer[], text, integer, text, integer, bigint[], integer, integer, boolean) IS
'on a Citus coordinator, called by a node over its own connection: for each shard in turn, grant the node a window [window_start, window_end) of Unix ms of it, from its min_starts on, durable before it returns; NULLs and retry_after (ms) where it would start more than a second ahead of the clock; refuses a node that is not an active primary of pg_dist_node or whose sharded_id.stripes or sharded_id.stripe differ from the coordinator''s; reserved: the node''s caller may have the first shard''s slot from the whole slot table (a superuser or a shard of its catalog), else it comes from sharded_id.max_free_slots; renewed shards without a slot get NULLs';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_grant_windows(integer[], text, integer, text, integer, bigint[], integer, integer, boolean) FROM PUBLIC;

CREATE FUNCTION sharded_id.citus_grant_windows(shard_ids integer[], layout text, group_id integer,
                                              node_name text, node_port integer, min_starts bigint[],
                                              stripes integer, stripe integer, reserved boolean,
                                              node_clock bigint)
RETURNS TABLE (shard_id integer, window_start bigint, window_end bigint, retry_after integer,
               lane integer, lanes integer, own_until bigint)
AS 'MODULE_PATHNAME', 'shid_citus_grant_windows_clock'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

COMMENT ON FUNCTION sharded_id.citus_grant_windows(integer[], text, integer, text, integer, bigint[], integer, integer, boolean, bigint) IS
'on a Citus coordinator, called by a node over its own connection: as the form without node_clock, but each window starts at most a second ahead of node_clock, the node''s clock (Unix ms) as it asked, rather than of the coordinator''s, and holds lane number lane (from 0) of lanes equal parts of each of its milliseconds'' values (lanes 1: all of them), so that nodes minting one shard at once share its milliseconds; own_until bounds the windows the coordinator grants itself from now on (Unix ms, moving on with the clock), which the node keeps for the next coordinator; refuses a node whose clock lies more than a minute from the coordinator''s; before its first grant since it started, was promoted or reset its ceiling, the coordinator asks every node for the windows it holds (citus_window_high_water)';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_grant_windows(integer[], text, integer, text, integer, bigint[], integer, integer, boolean, bigint) FROM PUBLIC;

CREATE FUNCTION sharded_id.citus_window_high_water(learner_until bigint, learner text,
                                                  OUT high_water bigint, OUT clock_ms bigint,
                                                  OUT coordinator_until bigint)
AS 'MODULE_PATHNAME', 'shid_citus_window_high_water'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

COMMENT ON FUNCTION sharded_id.citus_window_high_water(bigint, text) IS
'on a node of a Citus cluster, called by the coordinator learner before it grants windows after it started, was promoted or reset its ceiling: one past the newest Unix millisecond this server minted in or holds a shard window of (its durable ceiling and its slots), its clock, and the Unix ms before which end the windows that coordinators other than learner granted themselves, as they said (0: none said); keeps learner_until, how far the windows learner grants itself may reach, with the greater of its earlier ones, for the coordinator after it; superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_window_high_water(bigint, text) FROM PUBLIC;
