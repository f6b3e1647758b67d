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
-- A shard schema that a role other than a superuser owns, may create objects
-- in, or has put code in.  Citus copies a distributed schema's rows as the
-- role that distributes or moves it (citus_schema_distribute,
-- citus_schema_move, citus_rebalance_start: COPY into the new shard on the
-- node that receives it), which runs the tables' CHECK constraints and
-- generated columns with that role's rights.  Reads the catalogs only: no
-- row of any table.
--
CREATE FUNCTION sharded_id.citus_open_shards(first_shard integer DEFAULT NULL,
                                            last_shard integer DEFAULT NULL)
RETURNS TABLE (shard_id integer, schema_name name, reason text)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH cand AS (
        SELECT c.shard_id, c.schema_name, n.oid AS nspoid, n.nspowner, n.nspacl
        FROM sharded_id.shards c JOIN pg_catalog.pg_namespace n ON n.nspname = c.schema_name
        WHERE c.shard_id >= coalesce(citus_open_shards.first_shard, 0)
          AND c.shard_id <= coalesce(citus_open_shards.last_shard, 2147483647)
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
    ),
    problem(shard_id, schema_name, k, what) AS (
        SELECT c.shard_id, c.schema_name, 1, pg_catalog.format('role %I owns the schema', r.rolname)
        FROM cand c JOIN pg_catalog.pg_roles r ON r.oid = c.nspowner AND NOT r.rolsuper
        UNION ALL
        SELECT c.shard_id, c.schema_name, 2,
               CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.format('role %I', r.rolname) END
               || ' may create objects in the schema'
        FROM cand c CROSS JOIN LATERAL pg_catalog.aclexplode(c.nspacl) a
        LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
        WHERE a.privilege_type = 'CREATE' AND (a.grantee = 0 OR NOT r.rolsuper)
        UNION ALL
        SELECT c.shard_id, c.schema_name, 3,
               pg_catalog.format('role %I owns %s', r.rolname, pg_catalog.pg_describe_object(o.classid, o.objid, 0))
        FROM cand c JOIN owned o ON o.nspoid = c.nspoid
        JOIN pg_catalog.pg_roles r ON r.oid = o.owner AND NOT r.rolsuper
        UNION ALL
        SELECT c.shard_id, c.schema_name, 4,
               CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.format('role %I', r.rolname) END
               || pg_catalog.format(' may create triggers on %s', pg_catalog.pg_describe_object('pg_catalog.pg_class'::pg_catalog.regclass, k.oid, 0))
        FROM cand c JOIN pg_catalog.pg_class k ON k.relnamespace = c.nspoid
        CROSS JOIN LATERAL pg_catalog.aclexplode(k.relacl) a
        LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
        WHERE a.privilege_type = 'TRIGGER' AND (a.grantee = 0 OR NOT r.rolsuper)
        UNION ALL
        -- Code of the schema (a default, generated column, CHECK,
        -- index, trigger, rule, policy, statistics object, domain)
        -- that calls a function, operator or type of another schema
        -- owned by a role that is not a superuser.
        SELECT c.shard_id, c.schema_name, 5,
               pg_catalog.format('%s uses %s, owned by role %I',
                                 pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid),
                                 pg_catalog.pg_describe_object(d.refclassid, d.refobjid, 0), r.rolname)
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
        JOIN cand c ON c.nspoid = dn.nspoid
        JOIN owned o ON o.classid = d.refclassid AND o.objid = d.refobjid AND o.nspoid <> c.nspoid
        JOIN pg_catalog.pg_roles r ON r.oid = o.owner AND NOT r.rolsuper
        WHERE d.refclassid IN ('pg_catalog.pg_proc'::pg_catalog.regclass, 'pg_catalog.pg_operator'::pg_catalog.regclass,
                               'pg_catalog.pg_type'::pg_catalog.regclass)
    )
    SELECT pr.shard_id, pr.schema_name, pr.what FROM problem pr ORDER BY pr.shard_id, pr.k, pr.what
$$;

COMMENT ON FUNCTION sharded_id.citus_open_shards(integer, integer) IS
'every catalog shard (from first_shard to last_shard; NULL: no bound) whose schema a role that is not a superuser owns, may create objects or triggers in, or has code in (an object of the schema, or a function, operator or type that code of the schema uses), one row per reason; citus_distribute_shards refuses such a shard';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_open_shards(integer, integer) FROM PUBLIC;

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
                  HINT = 'Give the schema and everything in it to a superuser (ALTER SCHEMA ... OWNER TO, REASSIGN OWNED), '
                         'revoke CREATE on it and TRIGGER on its tables from other roles, or keep the shard off Citus.';
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
