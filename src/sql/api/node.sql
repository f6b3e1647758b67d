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

-- The fence of one table of an old copy: a statement trigger, enabled
-- ALWAYS so that replica mode does not skip it, that refuses every write.
-- Both take SHARE ROW EXCLUSIVE on the table, no stronger: readers of the
-- old copy go on.  Also the update from 1.6 fences that version's old
-- copies with it.
CREATE FUNCTION sharded_id._fence_table(rel regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._fence_table');
    EXECUTE pg_catalog.format('CREATE TRIGGER sharded_id_moved BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s '
                              'FOR EACH STATEMENT EXECUTE FUNCTION sharded_id._refuse_old_copy()', rel);
    EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE ALWAYS TRIGGER sharded_id_moved', rel);
END
$$;

COMMENT ON FUNCTION sharded_id._fence_table(regclass) IS
'internal: on a node, refuse every write to one table of a moved shard''s old copy, DELETE and TRUNCATE included';

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
        PERFORM sharded_id._fence_table(t.rel);
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
REVOKE EXECUTE ON FUNCTION sharded_id._fence_table(regclass) FROM PUBLIC;
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
-- in to the nodes as a superuser; but for the checks before a move starts,
-- which read catalogs with the caller's rights (at the end).
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

-- The freeze, on the source.  Before it: the shard's catalog row read and
-- its tables locked in ACCESS SHARE, in this call's own transaction, so
-- that the freeze finds its catalogs cached and writers wait for neither;
-- the session's lock_timeout back to its default.  Locks: ACCESS SHARE on
-- sharded_id.shards and on the shard's tables, until the call returns.
CREATE FUNCTION sharded_id._node_prepare_freeze(shard_id integer, schema_name name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_prepare_freeze');
    PERFORM FROM sharded_id.shards s WHERE s.shard_id = _node_prepare_freeze.shard_id;
    PERFORM sharded_id._on_schema_tables(schema_name, 'LOCK TABLE %s IN ACCESS SHARE MODE');
    RESET lock_timeout;
END
$$;

COMMENT ON FUNCTION sharded_id._node_prepare_freeze(integer, name) IS
'internal: on a move''s source, read what its freeze will read, before the freeze; superusers only';

-- Before the freeze, on its connection: how long the source lets the
-- session sit idle in a transaction (idle_in_transaction_session_timeout,
-- for the session) before it ends it, and the freeze with it
-- (_move_set_freeze_idle).  Locks: none.
CREATE FUNCTION sharded_id._node_set_idle_limit(idle interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_set_idle_limit');
    PERFORM pg_catalog.set_config('idle_in_transaction_session_timeout',
                                  pg_catalog.ceil(EXTRACT(epoch FROM idle) * 1000)::bigint || 'ms', false);
END
$$;

COMMENT ON FUNCTION sharded_id._node_set_idle_limit(interval) IS
'internal: on a move''s freeze connection, how long the session may sit idle in a transaction before the source ends it; superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id._node_set_idle_limit(interval) FROM PUBLIC;

-- The freeze itself, in the transaction the router opened for it
-- (_node_begin_call), which holds its locks until the router commits the
-- retirement or ends the connection: the shard's fence in exclusive mode
-- (_wait_shard_lock, within lock_timeout, ending the sessions that hold it
-- idle in a transaction, or past half of it), its row of sharded_id.shards
-- FOR UPDATE, and its tables in EXCLUSIVE mode; lock_timeout stays set for
-- the rest of the transaction.  why names the move in the warnings.
CREATE FUNCTION sharded_id._node_freeze(shard_id integer, schema_name name, lock_timeout interval, why text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    timeout_ms text := (EXTRACT(epoch FROM lock_timeout) * 1000)::bigint || 'ms';
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_freeze');
    PERFORM pg_catalog.set_config('lock_timeout', timeout_ms, true);
    PERFORM sharded_id._wait_shard_lock(shard_id, 'fence', lock_timeout, why);
    PERFORM FROM sharded_id.shards s WHERE s.shard_id = _node_freeze.shard_id FOR UPDATE;
    PERFORM sharded_id._on_schema_tables(schema_name, 'LOCK TABLE %s IN EXCLUSIVE MODE');
    PERFORM pg_catalog.set_config('lock_timeout', timeout_ms, true);
END
$$;

COMMENT ON FUNCTION sharded_id._node_freeze(integer, name, interval, text) IS
'internal: on a move''s source, in the freezing transaction: the shard''s fence, catalog row and tables locked against writers; superusers only';

-- In the freezing transaction, on the source: the floor checks of
-- move_shard again (sharded_id._check_floors), where no row of the shard
-- changes any more, and what the target must check in turn: the shard's
-- layout and high-water mark, as {"layout", "high_water"}.  Locks: none
-- beyond the freeze's.
CREATE FUNCTION sharded_id._node_frozen_floors(shard_id integer, schema_name name)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    layout text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_frozen_floors');
    layout := (SELECT s.layout FROM sharded_id.shards s WHERE s.shard_id = _node_frozen_floors.shard_id);
    PERFORM sharded_id._check_floors(shard_id, schema_name, layout);
    RETURN pg_catalog.jsonb_build_object('layout', layout, 'high_water', sharded_id.high_water(shard_id, layout));
END
$$;

COMMENT ON FUNCTION sharded_id._node_frozen_floors(integer, name) IS
'internal: on a move''s source, in its freeze: check the shard''s floors again and return its layout and high-water mark; superusers only';

-- On the target, before the source retires: its copy's rows and the
-- source's high-water mark (when not NULL) must be ids a floor may be
-- raised over.  source names the source in the error.  Locks: ACCESS
-- SHARE on the copy's tables.
CREATE FUNCTION sharded_id._node_check_floors(shard_id integer, schema_name name, layout text, high_water bigint, source text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_check_floors');
    PERFORM sharded_id._check_floors(shard_id, schema_name, layout);
    IF high_water IS NOT NULL THEN
        PERFORM sharded_id._check_floor(shard_id, high_water, layout, source);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._node_check_floors(integer, name, text, bigint, text) IS
'internal: on a move''s target, fail unless the floor may be raised over its copy''s ids and the source''s high-water mark; superusers only';

-- The retirement, in the freezing transaction on the source: the shard
-- retired (retire_shard), the old copy fenced against every write
-- (_fence_old_copy), and the move that retired it recorded
-- (sharded_id.move_retirements); returns the high-water mark.  The router
-- commits it.  Locks: the shard's catalog rows; SHARE ROW EXCLUSIVE on the
-- old copy's tables (CREATE TRIGGER), which the freeze's EXCLUSIVE covers.
CREATE FUNCTION sharded_id._node_retire(shard_id integer, move_id bigint, schema_name name)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    high_water bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_retire');
    high_water := sharded_id.retire_shard(shard_id);
    PERFORM sharded_id._fence_old_copy(schema_name);
    INSERT INTO sharded_id.move_retirements AS r (shard_id, move_id)
    VALUES (_node_retire.shard_id, _node_retire.move_id)
    ON CONFLICT ON CONSTRAINT move_retirements_pkey DO UPDATE SET move_id = excluded.move_id, retired_at = excluded.retired_at;
    RETURN high_water;
END
$$;

COMMENT ON FUNCTION sharded_id._node_retire(integer, bigint, name) IS
'internal: on a move''s source, in its freeze: retire the shard, fence its old copy and record the move that retired it; returns the high-water mark; superusers only';

-- On the source: the positions of a shard schema's sequences, as
-- [{"sequence", "value", "called"}], for the target (nothing mints for a
-- retired copy, so they stay put).  Locks: none.
CREATE FUNCTION sharded_id._node_sequence_positions(schema_name name)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_sequence_positions');
    RETURN coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                'sequence', q.sequencename, 'value', coalesce(q.last_value, q.start_value),
                                'called', q.last_value IS NOT NULL) ORDER BY q.sequencename)
                     FROM pg_catalog.pg_sequences q WHERE q.schemaname = _node_sequence_positions.schema_name),
                    '[]');
END
$$;

COMMENT ON FUNCTION sharded_id._node_sequence_positions(name) IS
'internal: the positions of a shard schema''s sequences, for a move''s target; superusers only';

-- The registration, on the target, in one transaction: the shard's fence
-- (which a rollback of the move waits for, _node_drop_refused_copy), its
-- copy's sequences set to the source's positions, create_shard, and the
-- floor over the source's high-water mark (when not NULL).  Locks: the
-- fence in exclusive mode and create_shard's, until the call returns.
CREATE FUNCTION sharded_id._node_register_shard(shard_id integer, schema_name name, sequences jsonb, high_water bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_register_shard');
    IF shard_id IS NULL OR schema_name IS NULL THEN
        RAISE EXCEPTION 'a shard and its schema are needed to register it' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
    PERFORM sharded_id._lock_fence(shard_id);
    PERFORM pg_catalog.quote_ident(schema_name)::pg_catalog.regnamespace;
    PERFORM pg_catalog.setval(pg_catalog.format('%I.%I', schema_name, q.v ->> 'sequence')::pg_catalog.regclass,
                              (q.v ->> 'value')::bigint, (q.v ->> 'called')::boolean)
    FROM pg_catalog.jsonb_array_elements(coalesce(sequences, '[]')) q(v);
    PERFORM sharded_id.create_shard(shard_id, schema_name);
    PERFORM sharded_id.raise_floor(s.shard_id, _node_register_shard.high_water, s.layout)
    FROM sharded_id.shards s WHERE s.shard_id = _node_register_shard.shard_id AND _node_register_shard.high_water IS NOT NULL;
END
$$;

COMMENT ON FUNCTION sharded_id._node_register_shard(integer, name, jsonb, bigint) IS
'internal: on a move''s target, register the shard: its sequences at the source''s positions, its floor over the source''s high-water mark; superusers only';

-- A move rolled back after its source retired the shard.  On the target
-- first, in one transaction: the shard's fence (so that a registration of
-- the move, which holds it, is waited for), the shard still not registered
-- here, and the move's copy dropped.  Locks: the fence in exclusive mode,
-- ACCESS EXCLUSIVE on the copy's objects.
CREATE FUNCTION sharded_id._node_drop_refused_copy(shard_id integer, schema_name name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_drop_refused_copy');
    PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
    PERFORM sharded_id._lock_fence(shard_id);
    IF EXISTS (SELECT FROM sharded_id.shards s
               WHERE s.shard_id = _node_drop_refused_copy.shard_id OR s.schema_name = _node_drop_refused_copy.schema_name) THEN
        RAISE EXCEPTION 'shard % is registered on the target', shard_id USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    EXECUTE pg_catalog.format('DROP SCHEMA IF EXISTS %I CASCADE', schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id._node_drop_refused_copy(integer, name) IS
'internal: on the target of a move rolled back after its source retired the shard, drop the move''s copy, unless the shard is registered there; superusers only';

-- Then on the source, in one transaction, only if this move retired the
-- shard here: the old copy's fence off, the retirement's record deleted,
-- create_shard's take-back (floors over the rows, which the freeze checked
-- and the fence kept) and the floor over its own high-water mark (when not
-- NULL).  Locks: the fence in exclusive mode, ACCESS EXCLUSIVE on the
-- copy's tables (DROP TRIGGER), create_shard's.
CREATE FUNCTION sharded_id._node_take_back(shard_id integer, move_id bigint, schema_name name, high_water bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_take_back');
    IF shard_id IS NULL OR move_id IS NULL OR schema_name IS NULL THEN
        RAISE EXCEPTION 'a shard, its move and its schema are needed to take it back' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
    PERFORM sharded_id._lock_fence(shard_id);
    IF NOT EXISTS (SELECT FROM sharded_id.move_retirements r
                   WHERE r.shard_id = _node_take_back.shard_id AND r.move_id = _node_take_back.move_id) THEN
        RAISE EXCEPTION 'move % did not retire shard % on the source', move_id, shard_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM sharded_id._unfence_old_copy(schema_name);
    DELETE FROM sharded_id.move_retirements r
    WHERE r.shard_id = _node_take_back.shard_id AND r.move_id = _node_take_back.move_id;
    PERFORM sharded_id.create_shard(shard_id, schema_name);
    PERFORM sharded_id.raise_floor(s.shard_id, _node_take_back.high_water, s.layout)
    FROM sharded_id.shards s WHERE s.shard_id = _node_take_back.shard_id AND _node_take_back.high_water IS NOT NULL;
END
$$;

COMMENT ON FUNCTION sharded_id._node_take_back(integer, bigint, name, bigint) IS
'internal: on the source of a move rolled back after it retired the shard, take the shard back: the old copy''s fence off, the shard registered again above its high-water mark; superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id._node_prepare_freeze(integer, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_freeze(integer, name, interval, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_frozen_floors(integer, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_check_floors(integer, name, text, bigint, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_retire(integer, bigint, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_sequence_positions(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_register_shard(integer, name, jsonb, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_drop_refused_copy(integer, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_take_back(integer, bigint, name, bigint) FROM PUBLIC;

-- An online move's replication, on the source: its publication (the
-- shard's tables and the move's own catch-up marks) and its slot.  Locks:
-- CREATE PUBLICATION's SHARE UPDATE EXCLUSIVE on the shard's tables.
CREATE FUNCTION sharded_id._node_create_publication(publication name, schema_name name, move_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_create_publication');
    EXECUTE pg_catalog.format('CREATE PUBLICATION %I FOR TABLES IN SCHEMA %I, TABLE sharded_id.move_marks WHERE (move_id = %s)',
                              publication, schema_name, move_id);
END
$$;

COMMENT ON FUNCTION sharded_id._node_create_publication(name, name, bigint) IS
'internal: on a move''s source, the publication of the shard''s tables and of the move''s catch-up marks; superusers only';

-- The slot, which waits for every transaction that holds an xid on the
-- server to end (the router watches the call, _node_slot_blockers).
-- Locks: none but the slot's own.
CREATE FUNCTION sharded_id._node_create_slot(slot name)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_create_slot');
    PERFORM pg_catalog.pg_create_logical_replication_slot(slot, 'pgoutput');
    RETURN 1;
END
$$;

COMMENT ON FUNCTION sharded_id._node_create_slot(name) IS
'internal: on a move''s source, the logical replication slot of the move; superusers only';

-- This session's backend, whose call the router watches.  Locks: none.
CREATE FUNCTION sharded_id._node_backend_pid()
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_backend_pid');
    RETURN pg_catalog.pg_backend_pid();
END
$$;

COMMENT ON FUNCTION sharded_id._node_backend_pid() IS
'internal: the backend of a move''s session on a node, whose slot creation the router watches; superusers only';

-- The transactions that hold up the slot that backend slot_pid creates:
-- those of client backends that hold an xid and began before its call, by
-- this server's clock, in any database.  _node_slot_blockers names them,
-- as text (NULL: none): pid, role, database, state and how long their
-- transactions have run.  _node_end_slot_blockers ends them
-- (pg_terminate_backend) and returns them as [{"pid", "role", "since",
-- "ended"}] (NULL: none); a router of 2.1 no longer calls it (a move
-- ends no session that does not hold its shard), one of 2.0 still does.
-- Locks: none.
CREATE FUNCTION sharded_id._node_slot_blockers(slot_pid integer)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_slot_blockers');
    RETURN (SELECT pg_catalog.string_agg(pg_catalog.format('%s (role "%s", database "%s", %s, in a transaction for %s)',
                                                           a.pid, a.usename, a.datname, a.state,
                                                           pg_catalog.date_trunc('second', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) a.xact_start)),
                                         ', ' ORDER BY a.pid)
            FROM pg_catalog.pg_stat_activity a
            WHERE a.backend_xid IS NOT NULL AND a.backend_type = 'client backend'
              AND a.xact_start < (SELECT b.query_start FROM pg_catalog.pg_stat_activity b WHERE b.pid = slot_pid)
              AND a.pid <> slot_pid);
END
$$;

COMMENT ON FUNCTION sharded_id._node_slot_blockers(integer) IS
'internal: on a move''s source, the sessions whose transactions hold up the slot a backend creates; superusers only';

CREATE FUNCTION sharded_id._node_end_slot_blockers(slot_pid integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_end_slot_blockers');
    RETURN (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('pid', a.pid, 'role', a.usename, 'since', a.xact_start,
                                                                      'ended', pg_catalog.pg_terminate_backend(a.pid)))
            FROM pg_catalog.pg_stat_activity a
            WHERE a.backend_xid IS NOT NULL AND a.backend_type = 'client backend'
              AND a.xact_start < (SELECT b.query_start FROM pg_catalog.pg_stat_activity b WHERE b.pid = slot_pid)
              AND a.pid <> slot_pid);
END
$$;

COMMENT ON FUNCTION sharded_id._node_end_slot_blockers(integer) IS
'internal: on a move''s source, end the sessions whose transactions hold up the slot a backend creates, and name them; superusers only';

-- The slot's lag on the source, in bytes (NULL: no such slot).  Locks:
-- none.
CREATE FUNCTION sharded_id._node_slot_lag(slot name)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_slot_lag');
    RETURN (SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), r.confirmed_flush_lsn)::bigint
            FROM pg_catalog.pg_replication_slots r WHERE r.slot_name = slot);
END
$$;

COMMENT ON FUNCTION sharded_id._node_slot_lag(name) IS
'internal: how many bytes of WAL a replication slot (a move''s, on its source) has yet to confirm, or NULL; superusers only';

-- On the target: a shard schema made from the source's statements
-- (_move_schema_ddl), its tables empty, in the call's transaction.
-- Locks: those of the statements, on the new objects.
CREATE FUNCTION sharded_id._node_create_schema(ddl text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_create_schema');
    PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
    EXECUTE ddl;
END
$$;

COMMENT ON FUNCTION sharded_id._node_create_schema(text) IS
'internal: on a move''s target, make the shard''s schema, without rows, from the source''s statements; superusers only';

-- An online move's subscribe step, on the target, in one transaction: the
-- schema (_node_create_schema) and the subscription that fills it, from
-- the move's slot, which the source made; returns the subscription's oid.
-- From PostgreSQL 16 on, the apply and the table sync write as each
-- table's owner (run_as_owner = false, the default, said here so that no
-- default changes it); before 16 there is no such option, and move_shard
-- refuses (_move_check_online_owners) a shard whose code a role that is
-- not a superuser controls.  Locks: those of the schema's statements, and
-- of CREATE SUBSCRIPTION.
CREATE FUNCTION sharded_id._node_subscribe(ddl text, subscription name, connstr text, publication name)
RETURNS oid
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_subscribe');
    PERFORM sharded_id._node_create_schema(ddl);
    EXECUTE pg_catalog.format(
        'CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION %I WITH (create_slot = false, slot_name = %L, '
        'copy_data = true, synchronous_commit = on, disable_on_error = true%s)',
        subscription, connstr, publication, subscription,
        CASE WHEN pg_catalog.current_setting('server_version_num')::integer >= 160000 THEN ', run_as_owner = false' ELSE '' END);
    RETURN (SELECT s.oid FROM pg_catalog.pg_subscription s
            WHERE s.subname = _node_subscribe.subscription
              AND s.subdbid = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()));
END
$$;

COMMENT ON FUNCTION sharded_id._node_subscribe(text, name, text, name) IS
'internal: on a move''s target, the empty schema and the subscription that fills it; returns the subscription''s oid; superusers only';

-- The copy's progress on the target: {"enabled", "unready",
-- "finished_copy"} of a subscription (NULL: no such subscription).
-- Locks: none.
CREATE FUNCTION sharded_id._node_copy_progress(sub_oid oid)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_copy_progress');
    RETURN (SELECT pg_catalog.jsonb_build_object('enabled', s.subenabled,
                                                 'unready', count(*) FILTER (WHERE r.srsubstate <> 'r'),
                                                 'finished_copy', count(*) FILTER (WHERE r.srsubstate = 'f'))
            FROM pg_catalog.pg_subscription s LEFT JOIN pg_catalog.pg_subscription_rel r ON r.srsubid = s.oid
            WHERE s.oid = sub_oid GROUP BY s.subenabled);
END
$$;

COMMENT ON FUNCTION sharded_id._node_copy_progress(oid) IS
'internal: on a move''s target, whether its subscription is enabled and how many of its tables are not ready, or have finished their copy only; superusers only';

-- On the target: the tables of a subscription whose copy is done
-- (FINISHEDCOPY), as {slot name prefix: {"table", "alive": a sync worker
-- runs for it}} (NULL: none).  On the source: those of them whose sync
-- slot is gone or lost, as {"missing": how many, "dead": those with no
-- worker alive, by name} (NULL: none missing).  Locks: none.
CREATE FUNCTION sharded_id._node_sync_tables(sub_oid oid)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_sync_tables');
    RETURN (SELECT pg_catalog.jsonb_object_agg(
                       pg_catalog.format('pg_%s_sync_%s_', r.srsubid, r.srrelid),
                       pg_catalog.jsonb_build_object('table', r.srrelid::pg_catalog.regclass::text,
                                                     'alive', EXISTS (SELECT FROM pg_catalog.pg_stat_subscription w
                                                                      WHERE w.subid = r.srsubid AND w.relid = r.srrelid
                                                                        AND w.pid IS NOT NULL)))
            FROM pg_catalog.pg_subscription_rel r WHERE r.srsubid = sub_oid AND r.srsubstate = 'f');
END
$$;

COMMENT ON FUNCTION sharded_id._node_sync_tables(oid) IS
'internal: on a move''s target, the tables of its subscription that finished their copy, by the prefix of their sync slot''s name; superusers only';

CREATE FUNCTION sharded_id._node_lost_sync_slots(syncs jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    lost jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_lost_sync_slots');
    lost := (SELECT pg_catalog.jsonb_build_object(
                        'missing', count(*),
                        'dead', pg_catalog.string_agg(j.value ->> 'table', ', ' ORDER BY j.value ->> 'table')
                                FILTER (WHERE NOT (j.value ->> 'alive')::boolean))
             FROM pg_catalog.jsonb_each(syncs) j
             WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_replication_slots s
                               WHERE pg_catalog.starts_with(s.slot_name, j.key) AND s.wal_status IS DISTINCT FROM 'lost'));
    RETURN CASE WHEN (lost ->> 'missing')::bigint > 0 THEN lost END;
END
$$;

COMMENT ON FUNCTION sharded_id._node_lost_sync_slots(jsonb) IS
'internal: on a move''s source, which of the target''s copied tables have lost their sync slot, and which of those no worker syncs; superusers only';

-- A move by dump, on the target: rows of a table, read on the source,
-- written as its owner (_insert_as_owner) with the session in replica mode
-- for the call's transaction, as logical replication and pg_restore
-- --disable-triggers write.  Locks: ROW EXCLUSIVE on the table.
CREATE FUNCTION sharded_id._node_insert_rows(tbl text, batch text[])
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_insert_rows');
    PERFORM pg_catalog.set_config('session_replication_role', 'replica', true);
    PERFORM sharded_id._insert_as_owner(tbl, batch);
    PERFORM pg_catalog.set_config('session_replication_role', 'origin', true);
END
$$;

COMMENT ON FUNCTION sharded_id._node_insert_rows(text, text[]) IS
'internal: on the target of a move by dump, write a batch of a table''s rows as the table''s owner, in replica mode; superusers only';

-- A move by dump, on the source, in its freeze: the shard's tables (not
-- partitioned ones), by oid, as quoted names.  Locks: none beyond the
-- freeze's.
CREATE FUNCTION sharded_id._node_schema_tables(schema_name name)
RETURNS text[]
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_schema_tables');
    RETURN ARRAY(SELECT c.oid::pg_catalog.regclass::text FROM pg_catalog.pg_class c
                 JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                 WHERE n.nspname = _node_schema_tables.schema_name AND c.relkind = 'r' ORDER BY c.oid);
END
$$;

COMMENT ON FUNCTION sharded_id._node_schema_tables(name) IS
'internal: the tables of a shard schema by oid, as quoted names (a move by dump); superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id._node_create_publication(name, name, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_create_slot(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_backend_pid() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_slot_blockers(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_end_slot_blockers(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_slot_lag(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_create_schema(text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_subscribe(text, name, text, name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_copy_progress(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_sync_tables(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_lost_sync_slots(jsonb) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_insert_rows(text, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_schema_tables(name) FROM PUBLIC;

-- The check of a moved shard's new copy, before the old one is dropped
-- (_move_check_copy): whether the schema is here; its materialized views
-- refreshed (on the target, now that their tables hold every row); its
-- inventory (schema_inventory) as kind|name|owner|privileges|details|
-- definition lines, but for the fence of an old copy (the sharded_id_moved
-- constraint of 1.6, or trigger), and without definitions when the two
-- servers are of different majors, which may print one definition two
-- ways; and this server's major.  Locks: the refresh's, ACCESS EXCLUSIVE
-- on each materialized view; otherwise none.
CREATE FUNCTION sharded_id._node_has_schema(schema_name name)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_has_schema');
    RETURN EXISTS (SELECT FROM pg_catalog.pg_namespace n WHERE n.nspname = _node_has_schema.schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id._node_has_schema(name) IS
'internal: whether this node has a schema of a name (a copy of a moved shard); superusers only';

-- The materialized views of a schema that hold rows (the source's, for
-- the check of a move's new copy).  Locks: none but the catalogs'.
CREATE FUNCTION sharded_id._node_populated_views(schema_name name)
RETURNS text[]
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_populated_views');
    RETURN coalesce((SELECT pg_catalog.array_agg(c.relname::text ORDER BY c.relname)
                     FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                     WHERE n.nspname = _node_populated_views.schema_name AND c.relkind = 'm' AND c.relispopulated), '{}');
END
$$;

COMMENT ON FUNCTION sharded_id._node_populated_views(name) IS
'internal: the materialized views of a schema that hold rows (the source of a move, for the check of its new copy); superusers only';

-- Make a schema's materialized views hold rows as the source's do (views,
-- from _node_populated_views there): refresh those, empty the others that
-- hold rows here (WITH NO DATA).  REFRESH runs each view's query as its
-- owner, security-restricted (PostgreSQL's own rule).  Locks: each view's,
-- ACCESS EXCLUSIVE, while it is refreshed.
CREATE FUNCTION sharded_id._node_refresh_views(schema_name name, views text[])
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    n integer := 0;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_refresh_views');
    FOR r IN
        SELECT c.oid::pg_catalog.regclass AS rel, c.relname = ANY (views) AS wanted, c.relispopulated AS populated
        FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname = _node_refresh_views.schema_name AND c.relkind = 'm'
        ORDER BY c.oid
    LOOP
        IF r.wanted THEN
            EXECUTE pg_catalog.format('REFRESH MATERIALIZED VIEW %s', r.rel);
            n := n + 1;
        ELSIF r.populated THEN
            EXECUTE pg_catalog.format('REFRESH MATERIALIZED VIEW %s WITH NO DATA', r.rel);
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sharded_id._node_refresh_views(name, text[]) IS
'internal: refresh the materialized views of a shard schema (a move''s new copy) that hold rows on the source (views), and empty the others; superusers only';

CREATE FUNCTION sharded_id._node_inventory(schema_name name, definitions boolean)
RETURNS text[]
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_inventory');
    RETURN ARRAY(SELECT pg_catalog.format('%s|%s|%s|%s|%s|%s', i.kind, i.name, i.owner, i.acl, i.details,
                                          CASE WHEN definitions THEN i.definition ELSE '' END)
                 FROM sharded_id.schema_inventory(schema_name) i
                 WHERE NOT (i.kind IN ('constraint', 'trigger') AND i.name LIKE '%.sharded\_id\_moved'));
END
$$;

COMMENT ON FUNCTION sharded_id._node_inventory(name, boolean) IS
'internal: a shard schema''s inventory as lines, but for an old copy''s fence, with or without definitions (a move''s check of its new copy); superusers only';

CREATE FUNCTION sharded_id._node_server_major()
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_server_major');
    RETURN pg_catalog.current_setting('server_version_num')::integer / 10000;
END
$$;

COMMENT ON FUNCTION sharded_id._node_server_major() IS
'internal: the major version of this node''s server; superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id._node_has_schema(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_populated_views(name) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_refresh_views(name, text[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_inventory(name, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._node_server_major() FROM PUBLIC;

-- The checks before a move starts (_move_plan), on the source and the
-- target.  They read catalogs only, with the caller's rights, and are not
-- for superusers only: a mover that logs in to a node as a role that is
-- not a superuser gets through them to the check that refuses it with the
-- reason (row security), or to the first step that needs a superuser.
-- Locks: ACCESS SHARE on the tables read, until the call returns.

-- The schema of a shard this node registers, or NULL.
CREATE FUNCTION sharded_id._node_shard_schema(shard_id integer)
RETURNS name
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = _node_shard_schema.shard_id
$$;

COMMENT ON FUNCTION sharded_id._node_shard_schema(integer) IS
'internal: the schema of a shard this node registers, or NULL (a move''s check of its source)';

-- Whether this node holds a shard, or a shard or schema of a name.
CREATE FUNCTION sharded_id._node_holds_shard_or_schema(shard_id integer, schema_name name)
RETURNS boolean
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM sharded_id.shards s
                   WHERE s.shard_id = _node_holds_shard_or_schema.shard_id
                      OR s.schema_name = _node_holds_shard_or_schema.schema_name)
        OR EXISTS (SELECT FROM pg_catalog.pg_namespace n WHERE n.nspname = _node_holds_shard_or_schema.schema_name)
$$;

COMMENT ON FUNCTION sharded_id._node_holds_shard_or_schema(integer, name) IS
'internal: whether this node holds a shard, or a shard or a schema of a name (a move''s check of its target)';

-- The tables of a schema with row security, quoted, in name order, or
-- NULL; and whether the caller bypasses row security here.
CREATE FUNCTION sharded_id._node_row_security_tables(schema_name name)
RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c.relname), ', ' ORDER BY c.relname)
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace s ON s.oid = c.relnamespace
    WHERE s.nspname = _node_row_security_tables.schema_name AND c.relkind IN ('r', 'p') AND c.relrowsecurity
$$;

COMMENT ON FUNCTION sharded_id._node_row_security_tables(name) IS
'internal: the tables of a schema with row security, or NULL (a move''s check)';

CREATE FUNCTION sharded_id._node_bypasses_row_security()
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM pg_catalog.pg_roles r
                   WHERE r.rolname = CURRENT_USER AND (r.rolsuper OR r.rolbypassrls))
$$;

COMMENT ON FUNCTION sharded_id._node_bypasses_row_security() IS
'internal: whether the caller is a superuser or bypasses row security on this node (a move''s check)';

-- This server's wal_level and version (server_version_num).
CREATE FUNCTION sharded_id._node_wal_level()
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.current_setting('wal_level')
$$;

COMMENT ON FUNCTION sharded_id._node_wal_level() IS
'internal: this node''s wal_level, which decides whether a shard may move online from it';

CREATE FUNCTION sharded_id._node_server_version()
RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.current_setting('server_version_num')::integer
$$;

COMMENT ON FUNCTION sharded_id._node_server_version() IS
'internal: this node''s server_version_num (a move''s checks of what its target supports)';

-- The logged tables of a schema that an online move cannot replicate
-- (unlogged or temporary, or with no replica identity), quoted, in name
-- order, or NULL.
CREATE FUNCTION sharded_id._node_tables_without_identity(schema_name name)
RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(c.relname), ', ' ORDER BY c.relname)
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = _node_tables_without_identity.schema_name AND c.relkind = 'r'
      AND (c.relpersistence <> 'p' OR c.relreplident = 'n'
           OR (c.relreplident = 'd' AND NOT EXISTS (SELECT FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)))
$$;

COMMENT ON FUNCTION sharded_id._node_tables_without_identity(name) IS
'internal: the tables of a schema that an online move cannot replicate, or NULL (a move''s check)';

-- On the source: the shard's floors checked (sharded_id._check_floors,
-- with the caller's rights), and its layout and high-water mark, as
-- {"layout", "high_water"}, for the target's check; NULL when the node
-- does not register the shard.
CREATE FUNCTION sharded_id._node_floors(shard_id integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT pg_catalog.jsonb_build_object('checked', sharded_id._check_floors(s.shard_id, s.schema_name, s.layout) IS NULL,
                                                 'high_water', sharded_id.high_water(s.shard_id, s.layout), 'layout', s.layout)
            FROM sharded_id.shards s WHERE s.shard_id = _node_floors.shard_id);
END
$$;

COMMENT ON FUNCTION sharded_id._node_floors(integer) IS
'internal: check a shard''s floors on this node and return its layout and high-water mark (a move''s check of its source)';

-- Whether schema_ddl can give a schema back as statements: how many, or
-- its error (0A000, naming the object it cannot make).
CREATE FUNCTION sharded_id._node_schema_ddl_count(schema_name name)
RETURNS bigint
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*) FROM sharded_id.schema_ddl(schema_name)
$$;

COMMENT ON FUNCTION sharded_id._node_schema_ddl_count(name) IS
'internal: how many statements schema_ddl gives a schema back as, or its error (a move''s check)';

-- An online move to a node before PostgreSQL 16 (_move_check_online_owners):
-- on the source, the (object, role) pairs of a schema, its relations,
-- types, functions and operators, and the roles that may create objects
-- in it, as [{"role", "object", "superuser"}]; on the target, the first
-- of some roles that is not a superuser there (or does not exist), or
-- NULL.
CREATE FUNCTION sharded_id._node_schema_roles(schema_name name)
RETURNS jsonb
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH nsp AS (SELECT n.oid, n.nspowner, n.nspacl FROM pg_catalog.pg_namespace n WHERE n.nspname = _node_schema_roles.schema_name),
    o AS (
        SELECT 0 AS k, pg_catalog.format('schema %I', _node_schema_roles.schema_name) AS obj, nsp.nspowner AS owner FROM nsp
        UNION ALL
        SELECT 1, pg_catalog.format('%s %s', CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'i' THEN 'index'
                                                           WHEN 'I' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view'
                                                           WHEN 'm' THEN 'materialized view' ELSE 'relation' END,
                                    c.oid::pg_catalog.regclass),
               c.relowner FROM pg_catalog.pg_class c, nsp WHERE c.relnamespace = nsp.oid
        UNION ALL
        SELECT 2, pg_catalog.format('type %s', t.oid::pg_catalog.regtype), t.typowner FROM pg_catalog.pg_type t, nsp
        WHERE t.typnamespace = nsp.oid AND t.typrelid = 0 AND t.typelem = 0
        UNION ALL
        SELECT 3, pg_catalog.format('function %s', p.oid::pg_catalog.regprocedure), p.proowner FROM pg_catalog.pg_proc p, nsp
        WHERE p.pronamespace = nsp.oid
        UNION ALL
        SELECT 4, pg_catalog.format('operator %s', r.oid::pg_catalog.regoperator), r.oprowner FROM pg_catalog.pg_operator r, nsp
        WHERE r.oprnamespace = nsp.oid
        UNION ALL
        SELECT 5, pg_catalog.format('the CREATE privilege on schema %I', _node_schema_roles.schema_name), a.grantee
        FROM nsp, pg_catalog.aclexplode(nsp.nspacl) a WHERE a.privilege_type = 'CREATE')
    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('role', coalesce(r.rolname, 'PUBLIC'), 'object', o.obj,
                                                                       'superuser', coalesce(r.rolsuper, false)) ORDER BY o.k, o.obj), '[]')
    FROM o LEFT JOIN pg_catalog.pg_roles r ON r.oid = o.owner
$$;

COMMENT ON FUNCTION sharded_id._node_schema_roles(name) IS
'internal: the roles that own a schema or an object in it, or may create in it, and whether each is a superuser here (a move''s check)';

CREATE FUNCTION sharded_id._node_first_non_superuser(roles text[])
RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT min(u.r) FROM pg_catalog.unnest(roles) u(r) LEFT JOIN pg_catalog.pg_roles x ON x.rolname = u.r
    WHERE x.rolsuper IS NOT TRUE
$$;

COMMENT ON FUNCTION sharded_id._node_first_non_superuser(text[]) IS
'internal: the first of some roles that is not a superuser on this node, or NULL (a move''s check)';
