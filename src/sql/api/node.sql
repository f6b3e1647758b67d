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


--
-- The node side of moves.
--
-- A move's router drives its source and target through these functions:
-- each remote step of a move is one call, SELECT sharded_id._node_...(...),
-- its arguments sent as literals (_node_call on the router), the way Citus
-- drives its workers by calling their functions.  The SQL of a step lives
-- here, on the node that runs it, with its search path pinned and its
-- built-ins qualified; the router's code reads as the steps.  A call runs
-- in its own transaction, but for the steps of a move's freeze, which run
-- in the freezing transaction the router opens (_node_freeze) and commits.
-- Superusers only, as the rest of a move's work on a node: the mover logs
-- in to the nodes as a superuser.
--

-- Catch-up marks (sharded_id.move_marks).  On the source: the move's mark
-- one up, written in its own transaction, which replicates to the target
-- through the move's publication.  Locks: the mark's row (ROW EXCLUSIVE on
-- sharded_id.move_marks).
CREATE FUNCTION sharded_id._node_write_mark(move_id bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_write_mark');
    INSERT INTO sharded_id.move_marks AS k VALUES (_node_write_mark.move_id, 1)
    ON CONFLICT ON CONSTRAINT move_marks_pkey DO UPDATE SET mark = k.mark + 1
    RETURNING k.mark INTO result;
    RETURN result;
END
$$;

COMMENT ON FUNCTION sharded_id._node_write_mark(bigint) IS
'internal: on a move''s source, advance the move''s catch-up mark and return it; superusers only';

-- On the target: the mark the move's subscription has applied (NULL: none
-- yet).  Locks: ACCESS SHARE on sharded_id.move_marks.
CREATE FUNCTION sharded_id._node_mark(move_id bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_mark');
    RETURN (SELECT k.mark FROM sharded_id.move_marks k WHERE k.move_id = _node_mark.move_id);
END
$$;

COMMENT ON FUNCTION sharded_id._node_mark(bigint) IS
'internal: on a move''s target, the catch-up mark of the move applied so far, or NULL; superusers only';

-- In a move's cleanup: the move's mark deleted.  Locks: the mark's row
-- (ROW EXCLUSIVE on sharded_id.move_marks).
CREATE FUNCTION sharded_id._node_delete_mark(move_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_delete_mark');
    DELETE FROM sharded_id.move_marks k WHERE k.move_id = _node_delete_mark.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._node_delete_mark(bigint) IS
'internal: delete a move''s catch-up mark on one of its nodes; superusers only';

-- The move's subscription on the target.  Whether this database has one of
-- the name; whether the one of an oid is enabled.  Locks: none (catalog
-- reads).
CREATE FUNCTION sharded_id._node_has_subscription(subscription name)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_has_subscription');
    RETURN EXISTS (SELECT FROM pg_catalog.pg_subscription s
                   WHERE s.subname = _node_has_subscription.subscription
                     AND s.subdbid = (SELECT d.oid FROM pg_catalog.pg_database d
                                      WHERE d.datname = pg_catalog.current_database()));
END
$$;

COMMENT ON FUNCTION sharded_id._node_has_subscription(name) IS
'internal: whether this database has a subscription of a name (a move''s, on its target); superusers only';

CREATE FUNCTION sharded_id._node_subscription_enabled(subscription oid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_subscription_enabled');
    RETURN EXISTS (SELECT FROM pg_catalog.pg_subscription s
                   WHERE s.oid = _node_subscription_enabled.subscription AND s.subenabled);
END
$$;

COMMENT ON FUNCTION sharded_id._node_subscription_enabled(oid) IS
'internal: whether the subscription of an oid (a move''s, on its target) exists and is enabled; superusers only';

-- The move's subscription disabled (stop_replication, recovery, cleanup):
-- nothing the source does reaches the target once it commits.  With
-- if_enabled, a subscription that is missing or disabled already is left
-- alone; returns whether it disabled one.  Locks: ALTER SUBSCRIPTION's
-- ACCESS EXCLUSIVE on the subscription.
CREATE FUNCTION sharded_id._node_disable_subscription(subscription name, if_enabled boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_disable_subscription');
    IF if_enabled AND NOT EXISTS (
           SELECT FROM pg_catalog.pg_subscription s
           WHERE s.subname = _node_disable_subscription.subscription AND s.subenabled
             AND s.subdbid = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())) THEN
        RETURN false;
    END IF;
    EXECUTE pg_catalog.format('ALTER SUBSCRIPTION %I DISABLE', subscription);
    RETURN true;
END
$$;

COMMENT ON FUNCTION sharded_id._node_disable_subscription(name, boolean) IS
'internal: disable a subscription (a move''s, on its target), or only one that is enabled; superusers only';

-- In the cleanup: the subscription detached from its slot on the source
-- (which the slot's own cleanup drops there), then dropped, which then
-- reaches no other server for its slot.  Locks: ACCESS EXCLUSIVE on the
-- subscription.
CREATE FUNCTION sharded_id._node_detach_subscription(subscription name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_detach_subscription');
    EXECUTE pg_catalog.format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', subscription);
END
$$;

COMMENT ON FUNCTION sharded_id._node_detach_subscription(name) IS
'internal: detach a disabled subscription (a move''s, on its target) from its replication slot; superusers only';

CREATE FUNCTION sharded_id._node_drop_subscription(subscription name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_drop_subscription');
    EXECUTE pg_catalog.format('DROP SUBSCRIPTION %I', subscription);
END
$$;

COMMENT ON FUNCTION sharded_id._node_drop_subscription(name) IS
'internal: drop a subscription detached from its slot (a move''s, on its target); superusers only';

-- On the source, in the cleanup: the move's slot, and the table-copy slots
-- of its subscription (pg_<sub_oid>_sync_..., when sub_oid is not 0):
-- the walsenders of active ones ended, the inactive ones dropped.  Returns
-- how many are left, for the router to try again.  Locks: none but the
-- slots' own (ReplicationSlotControlLock, briefly).
CREATE FUNCTION sharded_id._node_drop_slots(slot name, sub_oid oid)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found bigint;
    dropped bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_drop_slots');
    WITH s AS (SELECT * FROM pg_catalog.pg_replication_slots r
               WHERE r.slot_name = _node_drop_slots.slot
                  OR (_node_drop_slots.sub_oid <> 0
                      AND r.slot_name LIKE pg_catalog.format('pg\_%s\_sync\_%%', _node_drop_slots.sub_oid))),
         t AS (SELECT pg_catalog.pg_terminate_backend(s.active_pid) FROM s WHERE s.active_pid IS NOT NULL),
         d AS (SELECT pg_catalog.pg_drop_replication_slot(s.slot_name) FROM s WHERE NOT s.active)
    SELECT (SELECT count(*) FROM s), (SELECT count(*) FROM d) + 0 * (SELECT count(*) FROM t) INTO found, dropped;
    RETURN found - dropped;
END
$$;

COMMENT ON FUNCTION sharded_id._node_drop_slots(name, oid) IS
'internal: on a move''s source, drop its replication slot and its subscription''s table-copy slots, ending their walsenders; returns how many are left; superusers only';

-- On the source, in the cleanup.  Locks: DROP PUBLICATION's ACCESS
-- EXCLUSIVE on the publication.
CREATE FUNCTION sharded_id._node_drop_publication(publication name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_drop_publication');
    EXECUTE pg_catalog.format('DROP PUBLICATION IF EXISTS %I', publication);
END
$$;

COMMENT ON FUNCTION sharded_id._node_drop_publication(name) IS
'internal: drop a publication (a move''s, on its source), if it is there; superusers only';

-- In the cleanup: a copy of a shard's schema that a move left (the old
-- copy on the source, or the partial one on the target of a move rolled
-- back), never a schema this node holds as a shard.  Its locks (ACCESS
-- EXCLUSIVE on every object of the schema) are waited for 10 s at most: a
-- reader that holds the old copy leaves it to the deferred cleanup.
CREATE FUNCTION sharded_id._node_drop_copy(schema_name name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_drop_copy');
    PERFORM pg_catalog.set_config('lock_timeout', '10s', true);
    PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
    IF NOT EXISTS (SELECT FROM sharded_id.shards s WHERE s.schema_name = _node_drop_copy.schema_name) THEN
        EXECUTE pg_catalog.format('DROP SCHEMA IF EXISTS %I CASCADE', schema_name);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._node_drop_copy(name) IS
'internal: drop a copy of a shard''s schema that a move left on this node, unless the node holds it as a shard; superusers only';

-- Recovery's reading of a node: whether it registers a shard, which move
-- retired it here, and the high-water mark it retired with.  Locks: ACCESS
-- SHARE on the catalog tables read.
CREATE FUNCTION sharded_id._node_holds_shard(shard_id integer)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_holds_shard');
    RETURN EXISTS (SELECT FROM sharded_id.shards s WHERE s.shard_id = _node_holds_shard.shard_id);
END
$$;

COMMENT ON FUNCTION sharded_id._node_holds_shard(integer) IS
'internal: whether this node registers a shard (sharded_id.shards); superusers only';

CREATE FUNCTION sharded_id._node_retired_by(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_retired_by');
    RETURN (SELECT r.move_id FROM sharded_id.move_retirements r WHERE r.shard_id = _node_retired_by.shard_id);
END
$$;

COMMENT ON FUNCTION sharded_id._node_retired_by(integer) IS
'internal: the move that retired a shard on this node (sharded_id.move_retirements), or NULL; superusers only';

CREATE FUNCTION sharded_id._node_retired_high_water(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_retired_high_water');
    RETURN (SELECT r.high_water FROM sharded_id.retired_shards r WHERE r.shard_id = _node_retired_high_water.shard_id);
END
$$;

COMMENT ON FUNCTION sharded_id._node_retired_high_water(integer) IS
'internal: the high-water mark a shard retired on this node with (sharded_id.retired_shards), or NULL; superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id._node_write_mark(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_mark(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_delete_mark(bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_has_subscription(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_subscription_enabled(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_disable_subscription(name, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_detach_subscription(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_drop_subscription(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_drop_slots(name, oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_drop_publication(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_drop_copy(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_holds_shard(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_retired_by(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_retired_high_water(integer) FROM PUBLIC;
