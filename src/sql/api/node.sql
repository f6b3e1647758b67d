/* src/sql/api/node.sql */

--
-- Data nodes: the fence that keeps writers off a shard that is moving.
--
CREATE FUNCTION sharded_id.enter_shard(shard_id integer)
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

COMMENT ON FUNCTION sharded_id.enter_shard(integer) IS
'schema of a shard held by this node, locked against a move for the rest of the transaction; a retryable error (40001) otherwise';

