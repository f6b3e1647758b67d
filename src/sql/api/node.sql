/* src/sql/api/node.sql */

--
-- Data nodes: the fence that keeps writers off a shard that is moving.
--
-- The shard locks of src/locks.h: the fence, taken only here and only
-- until a transaction ends (src/fence.c), and the classes of every kind,
-- to read pg_locks with.
CREATE FUNCTION sharded_id._enter_fence(shard integer)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_enter_fence'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._enter_fence(integer) IS
'internal: take a shard''s fence in share mode until the transaction ends, which then cannot be prepared (enter_shard)';

CREATE FUNCTION sharded_id._lock_fence(shard integer)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_lock_fence'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_fence(integer) IS
'internal: take a shard''s fence in exclusive mode until the transaction ends (a move''s freeze on a node); superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id._lock_fence(integer) FROM PUBLIC;

CREATE FUNCTION sharded_id._lock_class(kind text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_lock_class'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._lock_class(text) IS
'internal: the pg_locks classid of the shard locks of a kind (route, move, fence), whose objsubid is 3';

CREATE FUNCTION sharded_id.enter_shard(shard_id integer)
RETURNS name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name;
BEGIN
    -- A move holds this shard's fence exclusively from its write freeze
    -- until it drops the source copy, so a writer waits here, then finds
    -- the shard gone.  The fence is a lock that only _enter_fence takes in
    -- share mode, until the transaction ends, which then cannot be
    -- prepared; the freeze ends a session that holds it idle in a
    -- transaction.
    PERFORM sharded_id._enter_fence(enter_shard.shard_id);
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

