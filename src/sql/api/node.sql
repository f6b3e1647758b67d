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

CREATE FUNCTION sharded_id._shard_schema_now(shard integer)
RETURNS name
AS 'MODULE_PATHNAME', 'shid_shard_schema_now'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._shard_schema_now(integer) IS
'internal: the schema that sharded_id.shards names for a shard as of now, read with the newest snapshot, not the transaction''s (enter_shard)';

-- A move's old copy, once its source retired the shard: every write is
-- refused, DELETE and TRUNCATE too, until the copy is dropped (or a
-- rollback of the move takes the shard back).  A statement trigger on
-- every table, partitions included, raising 40001, enabled ALWAYS so that
-- it fires with session_replication_role = replica too.  CREATE TRIGGER
-- takes SHARE ROW EXCLUSIVE, which the freeze's EXCLUSIVE lock already
-- covers: no reader of the old copy holds it up (1.6's CHECK (false) NOT
-- VALID constraint took ACCESS EXCLUSIVE, and waited for every reader).
CREATE FUNCTION sharded_id._refuse_old_copy()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'table %.% is the old copy of a shard that moved away', TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'serialization_failure',
              DETAIL = pg_catalog.format('%s on it is refused: the shard''s rows now live on another node.', TG_OP),
              HINT = 'Retry the transaction through the router.';
END
$$;

COMMENT ON FUNCTION sharded_id._refuse_old_copy() IS
'internal: trigger of a moved shard''s old copy that refuses every write (40001)';

CREATE FUNCTION sharded_id._fence_old_copy(schema_name name)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    n integer := 0;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._fence_old_copy');
    FOR t IN
        SELECT c.oid::regclass AS rel FROM pg_class c
        JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname = _fence_old_copy.schema_name AND c.relkind IN ('r', 'p') ORDER BY c.oid
    LOOP
        EXECUTE pg_catalog.format('CREATE TRIGGER sharded_id_moved BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
                                  'FOR EACH STATEMENT EXECUTE FUNCTION sharded_id._refuse_old_copy()', t.rel);
        EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER sharded_id_moved', t.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sharded_id._fence_old_copy(name) IS
'internal: on a node, refuse every write to a shard schema''s tables, DELETE and TRUNCATE included (a move''s old copy)';

CREATE FUNCTION sharded_id._unfence_old_copy(schema_name name)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    n integer := 0;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._unfence_old_copy');
    FOR t IN
        SELECT c.oid::regclass AS rel FROM pg_class c
        JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname = _unfence_old_copy.schema_name AND c.relkind IN ('r', 'p') ORDER BY c.oid
    LOOP
        -- 1.6 fenced with a constraint: dropped too.
        IF EXISTS (SELECT FROM pg_constraint k WHERE k.conrelid = t.rel AND k.conname = 'sharded_id_moved') THEN
            EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT sharded_id_moved', t.rel);
        END IF;
        EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS sharded_id_moved ON %s', t.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sharded_id._unfence_old_copy(name) IS
'internal: on a node, take back a shard schema''s tables from _fence_old_copy (a move rolled back)';

REVOKE EXECUTE ON FUNCTION sharded_id._refuse_old_copy() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._fence_old_copy(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._unfence_old_copy(name) FROM PUBLIC;

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
    -- The catalog as of now, past the fence, decides: a transaction whose
    -- snapshot is older than a move's retirement of the shard (REPEATABLE
    -- READ or SERIALIZABLE, begun before it) would still see the shard
    -- here and write to its old copy.  Both readings must name it.
    schema := sharded_id._shard_schema_now(enter_shard.shard_id);
    IF schema IS NULL OR NOT EXISTS (SELECT FROM sharded_id.shards s
                                     WHERE s.shard_id = enter_shard.shard_id
                                       AND s.schema_name = schema) THEN
        IF schema IS NULL THEN
            RAISE EXCEPTION 'shard % is not on this node', shard_id
                USING ERRCODE = 'serialization_failure',
                      HINT = 'The shard may have moved to another node. Retry the call through the router.';
        END IF;
        RAISE EXCEPTION 'shard % is not on this node for this transaction', shard_id
            USING ERRCODE = 'serialization_failure',
                  DETAIL = 'The shard arrived here after this transaction''s snapshot was taken.',
                  HINT = 'Retry the transaction through the router.';
    END IF;
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id.enter_shard(integer) IS
'schema of a shard held by this node, locked against a move for the rest of the transaction; a retryable error (40001) otherwise';

