/* src/sql/api/citus.sql */

--
-- Shards as Citus distributed schemas.  Citus is not a dependency: these
-- functions are created everywhere and check for the citus extension when
-- they are called (55000 without it), reading Citus's metadata in
-- pg_catalog only then.  Ids need no setting on Citus (src/citus.c), and
-- Citus moves and routes the schemas: floors and ownership are not used
-- there, nor move_shard or the PL/Proxy router.
--

CREATE FUNCTION sharded_id.citus_distribute_shards(first_shard integer DEFAULT NULL,
                                                  last_shard integer DEFAULT NULL)
RETURNS SETOF name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s record;
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
'on a Citus coordinator: citus_schema_distribute on the schema of every catalog shard (from first_shard to last_shard; NULL: no bound) that is not distributed yet, in one transaction; returns the schemas it distributed';

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
