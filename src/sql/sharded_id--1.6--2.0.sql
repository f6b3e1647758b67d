/* src/sql/sharded_id--1.6--2.0.sql: made by make from src/sql/updates/ and src/sql/api/; edit those files instead */

/* src/sql/updates/sharded_id--1.6--2.0.sql: the hand-written part of the
 * update from 1.6 to 2.0.  make puts every function statement of
 * src/sql/api/ in at the "@functions@" line below (src/sql/functions.awk),
 * so that a function's text is written once; this file holds only what a
 * CREATE OR REPLACE cannot do: catalog and data changes, and the functions
 * dropped or whose signature changed. */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '2.0'" to load this file. \quit

-- On a Citus coordinator, 2.0's nodes mint in shard windows that the
-- coordinator grants, with the whole sequence field; a node still on
-- 1.6's library mints with its group id in that field and would repeat
-- their ids.  Nodes on 2.0's library refuse to mint until this update has
-- run here, so it runs only once every node runs 2.0's library: each
-- active primary node is asked for its sharded_id.library_version (1.6's
-- library has none), and a node that is inactive, does not answer or
-- reports an older version stops the update.
DO $citus$
DECLARE
    n record;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_local_group g WHERE g.groupid OPERATOR(pg_catalog.=) 0) THEN
        RETURN;
    END IF;
    FOR n IN
        SELECT d.nodename, d.nodeport, d.groupid, false AS success, 'an inactive node' AS result
        FROM pg_catalog.pg_dist_node d
        WHERE NOT d.isactive AND d.noderole OPERATOR(pg_catalog.=) 'primary'
        UNION ALL
        SELECT d.nodename, d.nodeport, d.groupid, r.success, r.result
        FROM pg_catalog.run_command_on_all_nodes(
                 $$SELECT pg_catalog.current_setting('sharded_id.library_version', true)$$) r
        LEFT JOIN pg_catalog.pg_dist_node d ON d.nodeid OPERATOR(pg_catalog.=) r.nodeid
    LOOP
        IF n.success AND n.result OPERATOR(pg_catalog.~) '^[0-9]+(\.[0-9]+)*'
           AND pg_catalog.string_to_array(pg_catalog.regexp_replace(n.result, '^([0-9]+(\.[0-9]+)*).*$', '\1'), '.')::integer[]
               OPERATOR(pg_catalog.>=) '{2,0}'::integer[] THEN
            CONTINUE;
        END IF;
        RAISE EXCEPTION 'a Citus node does not run the sharded_id library of version 2.0'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('Node %s:%s (group %s): %s. From this update on, nodes mint in shard windows with the whole sequence field; a node on 1.6''s library mints with its group id there and would repeat their ids.',
                                             coalesce(n.nodename, 'the coordinator'), coalesce(n.nodeport::text, pg_catalog.current_setting('port')),
                                             coalesce(n.groupid, 0),
                                             CASE WHEN NOT n.success THEN n.result
                                                  WHEN n.result IS NULL OR n.result OPERATOR(pg_catalog.=) '' THEN 'its library is of version 1.6 or earlier'
                                                  ELSE 'its library is of version ' OPERATOR(pg_catalog.||) n.result END),
                  HINT = 'Install sharded_id 2.0 on every node of the cluster and restart each (or remove the node from the cluster), then run the update on the coordinator again.';
    END LOOP;
END
$citus$;

-- The step that creates a move's publication and slot takes the move's
-- timeout: the slot's creation is watched and bounded.
DROP FUNCTION sharded_id._move_create_publication(sharded_id.moves);

-- The router is an extension of its own from 2.0 on, sharded_id_router.
-- Every router object leaves sharded_id here.  On a router (a database
-- whose nodes, shard map, journal or ops tables hold rows) its tables
-- (the nodes, the shard map, the ops tables and the move journal), the
-- journal's sequence, and route() and route_id() (the application's
-- routing functions may depend on them: BEGIN ATOMIC) stay, with their
-- rows and grants, as objects of no extension, until CREATE EXTENSION
-- sharded_id_router takes them over (src/sql/router/adopt.sql).  Run both
-- in one transaction:
--   BEGIN; ALTER EXTENSION sharded_id UPDATE; CREATE EXTENSION sharded_id_router; COMMIT;
-- Elsewhere (a data node) they are dropped.  The router's other functions
-- and its view are dropped everywhere; sharded_id_router makes them anew.
-- None is dropped with CASCADE: an object that another depends on (a view
-- or a function of any role's; no role's object may stop this update, nor
-- be dropped by it) is kept, of no extension, with a WARNING naming it:
-- the router's tables, route() and route_id() under their names, the
-- others renamed out of sharded_id_router's way with the suffix _1_6.
-- The node side of moves (marks, retirements, fences, fingerprints and
-- the schema DDL of a move) stays here.
DO $router$
DECLARE
    is_router boolean := EXISTS (SELECT FROM sharded_id.nodes) OR EXISTS (SELECT FROM sharded_id.shard_map)
                         OR EXISTS (SELECT FROM sharded_id.moves) OR EXISTS (SELECT FROM sharded_id.ops_tables);
    o record;
    left_over text[] := '{}';
    kept text[];
    dropped integer;
    kind text;
    name text;
    base text;
BEGIN
    FOR o IN
        SELECT pg_catalog.split_part(u.v, ' ', 1) AS kind, pg_catalog.split_part(u.v, ' ', 2) AS name
        FROM pg_catalog.unnest(ARRAY[
            'VIEW sharded_id.move_progress',
            'ROUTINE sharded_id._partition_connstr(text)',
            'ROUTINE sharded_id._apply_shard_map(name,integer,integer,boolean)',
            'ROUTINE sharded_id._attach_ops_partition(regclass,integer)',
            'ROUTINE sharded_id._attach_ops_partitions(regclass)',
            'ROUTINE sharded_id._check_map_arguments(name,integer,integer)',
            'ROUTINE sharded_id._check_move_arguments(text,name,bigint,interval,interval)',
            'ROUTINE sharded_id._cluster_mapping(name,integer,text)',
            'ROUTINE sharded_id._connstr_options(text)',
            'ROUTINE sharded_id._connstr_public(text,boolean)',
            'ROUTINE sharded_id._connstr_secrets(text,boolean)',
            'ROUTINE sharded_id._dblink_schema()',
            'ROUTINE sharded_id._lock_route(integer)',
            'ROUTINE sharded_id._move_catch_up(sharded_id.moves,interval)',
            'ROUTINE sharded_id._move_check_call(integer,text,text,boolean,name,bigint,interval,interval)',
            'ROUTINE sharded_id._move_check_copy(sharded_id.moves)',
            'ROUTINE sharded_id._move_check_floors(text,text,text,integer)',
            'ROUTINE sharded_id._move_check_online_owners(text,text,integer,name,text)',
            'ROUTINE sharded_id._move_check_replica_identity(text,name)',
            'ROUTINE sharded_id._move_check_row_security(text,text,text,text,integer,name)',
            'ROUTINE sharded_id._move_check_schema(text,name)',
            'ROUTINE sharded_id._move_check_source_holds(text,text,integer)',
            'ROUTINE sharded_id._move_check_target_free(text,text,integer,name)',
            'ROUTINE sharded_id._move_check_versions(text,text)',
            'ROUTINE sharded_id._move_choose_method(text,text,integer,text)',
            'ROUTINE sharded_id._move_claim(integer)',
            'ROUTINE sharded_id._move_claim_move(bigint)',
            'ROUTINE sharded_id._move_cleanup(sharded_id.moves,boolean)',
            'ROUTINE sharded_id._move_cleanup_hold(sharded_id.moves,sharded_id.move_cleanup,text)',
            'ROUTINE sharded_id._move_compare(sharded_id.moves,text,text)',
            'ROUTINE sharded_id._move_compare_frozen(sharded_id.moves,interval,interval)',
            'ROUTINE sharded_id._move_conn(bigint,text,text)',
            'ROUTINE sharded_id._move_copy(sharded_id.moves,interval)',
            'ROUTINE sharded_id._move_copy_rows(sharded_id.moves)',
            'ROUTINE sharded_id._move_deferred_cleanup(bigint)',
            'ROUTINE sharded_id._move_drop_mark(sharded_id.moves,sharded_id.move_cleanup,text)',
            'ROUTINE sharded_id._move_drop_publication(sharded_id.moves,sharded_id.move_cleanup,text)',
            'ROUTINE sharded_id._move_drop_schema(sharded_id.moves,sharded_id.move_cleanup,text)',
            'ROUTINE sharded_id._move_drop_slot(sharded_id.moves,sharded_id.move_cleanup,text)',
            'ROUTINE sharded_id._move_drop_subscription(sharded_id.moves,sharded_id.move_cleanup,text)',
            'ROUTINE sharded_id._move_end_freeze(sharded_id.moves,text,text)',
            'ROUTINE sharded_id._move_follow_ops(sharded_id.moves)',
            'ROUTINE sharded_id._move_follow_ops_after_switch(sharded_id.moves)',
            'ROUTINE sharded_id._move_freeze(sharded_id.moves,interval,interval)',
            'ROUTINE sharded_id._move_freeze_source(sharded_id.moves,interval)',
            'ROUTINE sharded_id._move_hold(text)',
            'ROUTINE sharded_id._move_journal_start(integer,text,text,text,name,name)',
            'ROUTINE sharded_id._move_journal_step(bigint,text)',
            'ROUTINE sharded_id._move_lock_route(sharded_id.moves,interval)',
            'ROUTINE sharded_id._move_lost_sync_slots(sharded_id.moves)',
            'ROUTINE sharded_id._move_open(sharded_id.moves,text)',
            'ROUTINE sharded_id._move_open_freeze(sharded_id.moves)',
            'ROUTINE sharded_id._move_pending_cleanups(integer)',
            'ROUTINE sharded_id._move_plan(integer,text,text,name,boolean)',
            'ROUTINE sharded_id._move_record_objects(sharded_id.moves)',
            'ROUTINE sharded_id._move_recover_begin(bigint)',
            'ROUTINE sharded_id._move_register_target(sharded_id.moves)',
            'ROUTINE sharded_id._move_report(bigint,text,text,text,text,boolean,text)',
            'ROUTINE sharded_id._move_resolve(bigint)',
            'ROUTINE sharded_id._move_retire_source(sharded_id.moves)',
            'ROUTINE sharded_id._move_setvals(text,name)',
            'ROUTINE sharded_id._move_step(bigint,text,bigint,interval,interval)',
            'ROUTINE sharded_id._move_steps(text)',
            'ROUTINE sharded_id._move_stop_canceled(sharded_id.moves,text,text)',
            'ROUTINE sharded_id._move_stop_replication(sharded_id.moves)',
            'ROUTINE sharded_id._move_subscribe(sharded_id.moves)',
            'ROUTINE sharded_id._move_subscription_connstr(sharded_id.moves)',
            'ROUTINE sharded_id._move_subscription_options(sharded_id.moves)',
            'ROUTINE sharded_id._move_switch(sharded_id.moves)',
            'ROUTINE sharded_id._move_take_back(sharded_id.moves,text)',
            'ROUTINE sharded_id._move_take_step(sharded_id.moves,text,bigint,interval,interval)',
            'ROUTINE sharded_id._move_try_deferred_cleanup(bigint)',
            'ROUTINE sharded_id._move_try_resolve(bigint)',
            'ROUTINE sharded_id._move_unfinished(integer)',
            'ROUTINE sharded_id._move_wait_lag(sharded_id.moves,bigint,interval)',
            'ROUTINE sharded_id._move_will_create(bigint,text,text,text,text)',
            'ROUTINE sharded_id._moves_unfinished()',
            'ROUTINE sharded_id._rebalance_begin(text[],text,boolean,name)',
            'ROUTINE sharded_id._rebalance_moves(text[])',
            'ROUTINE sharded_id._remote(text,text)',
            'ROUTINE sharded_id._remote_close(text)',
            'ROUTINE sharded_id._remote_close_all(text)',
            'ROUTINE sharded_id._remote_exec(text,text)',
            'ROUTINE sharded_id._remote_exists(text,text)',
            'ROUTINE sharded_id._remote_json(text,text)',
            'ROUTINE sharded_id._remote_open(text,text)',
            'ROUTINE sharded_id._remote_rows(text,text)',
            'ROUTINE sharded_id._set_mapping_options(name,text[])',
            'ROUTINE sharded_id._set_server_options(name,name,text[])',
            'ROUTINE sharded_id.apply_shard_map(name,integer,integer)',
            'ROUTINE sharded_id.create_ops_table(regclass,name,name)',
            'ROUTINE sharded_id.move_shard(integer,text,text,boolean,name,bigint,interval,interval)',
            'ROUTINE sharded_id.node_server(text)',
            'ROUTINE sharded_id.place_shard(integer,text,name)',
            'ROUTINE sharded_id.rebalance(text[],text,boolean,name)',
            'ROUTINE sharded_id.rebalance_plan(text[])',
            'ROUTINE sharded_id.recover_moves()',
            'FUNCTION sharded_id.route(integer,text)',
            'FUNCTION sharded_id.route_id(bigint,text)',
            'TABLE sharded_id.move_cleanup',
            'TABLE sharded_id.move_steps',
            'TABLE sharded_id.moves',
            'SEQUENCE sharded_id.moves_move_id_seq',
            'TABLE sharded_id.ops_tables',
            'TABLE sharded_id.shard_map',
            'TABLE sharded_id.nodes']) WITH ORDINALITY AS u(v, n)
        ORDER BY u.n
    LOOP
        EXECUTE pg_catalog.format('ALTER EXTENSION sharded_id DROP %s %s', o.kind, o.name);
        -- What a router keeps for sharded_id_router.
        CONTINUE WHEN is_router AND o.kind IN ('FUNCTION', 'TABLE', 'SEQUENCE');
        left_over := left_over OPERATOR(pg_catalog.||) (o.kind OPERATOR(pg_catalog.||) ' ' OPERATOR(pg_catalog.||) o.name);
    END LOOP;
    -- Dropped in rounds, each object in a subtransaction of its own, until
    -- a round drops nothing: what depends only on another of these goes
    -- once that one has.
    LOOP
        dropped := 0;
        kept := '{}';
        FOR o IN SELECT u.v FROM pg_catalog.unnest(left_over) WITH ORDINALITY AS u(v, n) ORDER BY u.n LOOP
            BEGIN
                -- IF EXISTS: the journal's sequence goes with its table.
                EXECUTE pg_catalog.format('DROP %s IF EXISTS %s', pg_catalog.split_part(o.v, ' ', 1), pg_catalog.split_part(o.v, ' ', 2));
                dropped := dropped OPERATOR(pg_catalog.+) 1;
            EXCEPTION WHEN dependent_objects_still_exist THEN
                kept := kept OPERATOR(pg_catalog.||) o.v;
            END;
        END LOOP;
        left_over := kept;
        EXIT WHEN dropped OPERATOR(pg_catalog.=) 0 OR pg_catalog.cardinality(left_over) OPERATOR(pg_catalog.=) 0;
    END LOOP;
    FOR o IN SELECT u.v FROM pg_catalog.unnest(left_over) AS u(v) LOOP
        kind := pg_catalog.split_part(o.v, ' ', 1);
        name := pg_catalog.split_part(o.v, ' ', 2);
        base := pg_catalog.regexp_replace(name, '^sharded_id[.]([a-z_0-9]+).*$', '\1');
        IF kind IN ('FUNCTION', 'TABLE', 'SEQUENCE') THEN
            RAISE WARNING '% is kept, of no extension: other objects depend on it', name
                USING DETAIL = 'It was a router object of sharded_id''s; CREATE EXTENSION sharded_id_router takes it over.',
                      HINT = 'Unless this database is to be a router, drop the objects that depend on it, then it.';
        ELSE
            EXECUTE pg_catalog.format('ALTER %s %s RENAME TO %I', kind, name, base OPERATOR(pg_catalog.||) '_1_6');
            RAISE WARNING '% is kept as sharded_id.%, of no extension: other objects depend on it', name, base OPERATOR(pg_catalog.||) '_1_6'
                USING DETAIL = 'It was a router object of sharded_id''s, which sharded_id_router makes anew; what depends on it keeps using 1.6''s.',
                      HINT = 'Point the objects that depend on it at the new one, then drop it.';
        END IF;
    END LOOP;
    IF is_router THEN
        -- A WARNING: an extension's script shows nothing milder.
        RAISE WARNING 'this database is a router: its tables, route() and route_id() are kept for sharded_id_router'
            USING DETAIL = 'Moves, rebalance, recovery and apply_shard_map() are sharded_id_router''s from 2.0 on.',
                  HINT = 'Run CREATE EXTENSION sharded_id_router in the same transaction as this update.';
    END IF;
END
$router$;


DO $check$
DECLARE
    lib text := (SELECT s.setting FROM pg_catalog.pg_settings s
                 WHERE s.name OPERATOR(pg_catalog.=) 'sharded_id.library_version');
    ext text := (SELECT e.extversion FROM pg_catalog.pg_extension e
                 WHERE e.extname OPERATOR(pg_catalog.=) 'sharded_id');
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_settings s WHERE s.name OPERATOR(pg_catalog.~~) 'sharded\_id.%')
       AND (lib IS NULL
            OR pg_catalog.string_to_array(pg_catalog.regexp_replace(lib, '^([0-9]+(\.[0-9]+)*).*$', '\1'), '.')::integer[]
               OPERATOR(pg_catalog.<)
               pg_catalog.string_to_array(pg_catalog.regexp_replace(ext, '^([0-9]+(\.[0-9]+)*).*$', '\1'), '.')::integer[])
    THEN
        RAISE EXCEPTION 'the sharded_id library loaded by this server is older than the extension''s scripts'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('The server runs the sharded_id library of version %s, loaded when it started; the scripts are of version %s.',
                                             coalesce(lib, '1.6 or earlier'), ext),
                  HINT = 'Restart the server after installing a new version of sharded_id (where it is not in shared_preload_libraries, open a new session), then run the command again.';
    END IF;
END
$check$;

CREATE OR REPLACE FUNCTION sharded_id._superuser_only(caller text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_superuser_only'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id._superuser_only(text) IS
'internal: refuse (42501) a caller that is not a superuser, whatever the grants on the internal function named caller';

CREATE OR REPLACE FUNCTION sharded_id.next_id(shard_id integer, seq regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass) IS
'new id for the shard, its low bits from nextval(seq); never repeats within the cluster';

CREATE OR REPLACE FUNCTION sharded_id.next_id(shard_id integer, seq regclass, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass, text) IS
'new id for the shard in the named layout, its low bits from nextval(seq); never repeats within the cluster';

CREATE OR REPLACE FUNCTION sharded_id.next_ids(shard_id integer, seq regclass, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, regclass, integer) IS
'reserve n new ids for the shard in one call (at most 1000000), for loaders';

CREATE OR REPLACE FUNCTION sharded_id.next_ids(shard_id integer, seq regclass, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, regclass, integer, text) IS
'reserve n new ids for the shard in the named layout in one call (at most 1000000), for loaders';

CREATE OR REPLACE FUNCTION sharded_id.next_id(shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer) IS
'new id for the shard in counter mode (no sequence): strictly increasing per shard, never repeats within the cluster';

CREATE OR REPLACE FUNCTION sharded_id.next_id_in_layout(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id_in_layout(integer, text) IS
'new id for the shard in counter mode, in the named layout';

CREATE OR REPLACE FUNCTION sharded_id.next_ids(shard_id integer, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, integer) IS
'reserve n new ids for the shard in counter mode in one call (at most 1000000), for loaders';

CREATE OR REPLACE FUNCTION sharded_id.next_ids_in_layout(shard_id integer, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) IS
'reserve n new ids for the shard in counter mode in the named layout, for loaders';

REVOKE EXECUTE ON FUNCTION sharded_id.next_id(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.next_id_in_layout(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.next_ids(integer, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.reset_ceiling()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_reset_ceiling'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_ceiling() IS
'superuser only: lower the durable clock ceiling and every shard''s high-water mark to the current time, never below a shard''s floor nor below an id already handed out at the clock''s pace; returns it';

REVOKE EXECUTE ON FUNCTION sharded_id.reset_ceiling() FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.raise_floor(shard_id integer, above_id bigint, layout text DEFAULT 'instagram',
                                       force boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_raise_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) IS
'every id minted on this server for the shard from now on is greater than above_id, also after a restart or a failover; refuses an id of another shard, and one more than sharded_id.max_clock_jump ahead of the clock unless force; returns the floor';

CREATE OR REPLACE FUNCTION sharded_id._check_floor(shard_id integer, above_id bigint, layout text, source text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_check_floor'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) IS
'internal: raise raise_floor''s error, naming source, unless raise_floor without force would accept above_id';

CREATE OR REPLACE FUNCTION sharded_id.lower_floor(shard_id integer, layout text DEFAULT 'instagram')
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_lower_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.lower_floor(integer, text) IS
'superuser only, with a warning: remove a shard''s floor and bring its ids back to the clock, as after a floor raised over a wrong id; ids of the shard minted with later times may be minted again';

CREATE OR REPLACE FUNCTION sharded_id.floors(OUT layout text, OUT shard_id integer, OUT floor timestamptz, OUT retired boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_floors'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id.floors() IS
'what this server keeps about single shards, for every database: each floor, and whether the server gave the shard away';

CREATE OR REPLACE FUNCTION sharded_id.high_water(shard_id integer, layout text DEFAULT 'instagram')
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_high_water'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.high_water(integer, text) IS
'the largest id of the shard that this server may have minted: raise_floor on the server that takes the shard over';

CREATE OR REPLACE FUNCTION sharded_id._retire_shard(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_retire_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._retire_shard(integer, text) IS
'internal: stop minting for the shard at once, on this server and in every database of it, durably (undone if the transaction aborts); returns its high-water mark';

CREATE OR REPLACE FUNCTION sharded_id._own_shard(shard_id integer, layout text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_own_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._own_shard(integer, text) IS
'internal: mint for the shard here again once the transaction commits';

REVOKE EXECUTE ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.lower_floor(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.floors() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.high_water(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._retire_shard(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._own_shard(integer, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.decode(id bigint,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.decode(bigint) IS
'creation time, shard and sequence field of an id';

CREATE OR REPLACE FUNCTION sharded_id.decode(id bigint, layout text,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.decode(bigint, text) IS
'creation time, shard and sequence field of an id of the named layout';

CREATE OR REPLACE FUNCTION sharded_id.encode(created_at timestamptz,
                                  shard_id integer,
                                  seq_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_encode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint) IS
'the id with these fields (time floored to the millisecond, seq_id % 1024); reserves nothing';

CREATE OR REPLACE FUNCTION sharded_id.encode(created_at timestamptz,
                                  shard_id integer,
                                  seq_id bigint,
                                  layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_encode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint, text) IS
'the id of the named layout with these fields; reserves nothing';

CREATE OR REPLACE FUNCTION sharded_id.created_at(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_created_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.created_at(bigint) IS
'creation time of an id, to the millisecond';

CREATE OR REPLACE FUNCTION sharded_id.created_at(id bigint, layout text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_created_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.created_at(bigint, text) IS
'creation time of an id of the named layout, to the millisecond';

CREATE OR REPLACE FUNCTION sharded_id.shard_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_id(bigint) IS
'logical shard that owns an id';

CREATE OR REPLACE FUNCTION sharded_id.shard_id(id bigint, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_id(bigint, text) IS
'logical shard that owns an id of the named layout';

CREATE OR REPLACE FUNCTION sharded_id.seq_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_seq_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.seq_id(bigint) IS
'sequence field of an id';

CREATE OR REPLACE FUNCTION sharded_id.seq_id(id bigint, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_seq_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.seq_id(bigint, text) IS
'sequence field of an id of the named layout';

CREATE OR REPLACE FUNCTION sharded_id.stripe_id(id bigint, stripes integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_stripe_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.stripe_id(bigint, integer) IS
'stripe of an id minted with sharded_id.stripes = stripes: which writer of the shard minted it';

CREATE OR REPLACE FUNCTION sharded_id.stripe_id(id bigint, stripes integer, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_stripe_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.stripe_id(bigint, integer, text) IS
'stripe of an id of the named layout minted with sharded_id.stripes = stripes';

CREATE OR REPLACE FUNCTION sharded_id.layouts(OUT name text,
                                   OUT epoch timestamptz,
                                   OUT time_bits integer,
                                   OUT shard_bits integer,
                                   OUT seq_bits integer,
                                   OUT max_shard integer,
                                   OUT ids_per_ms integer,
                                   OUT last_time timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_layouts'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

COMMENT ON FUNCTION sharded_id.layouts() IS
'the built-in id layouts, and the last time each can hold';

CREATE OR REPLACE FUNCTION sharded_id.check_shard(shard_id integer, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_check_shard_sql'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.check_shard(integer, text) IS
'the shard id if the named layout has such a shard; next_id''s error otherwise (unknown layout, shard out of range)';

CREATE OR REPLACE FUNCTION sharded_id.min_id_at(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_min_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.min_id_at(timestamptz) IS
'lowest id any shard can have at the millisecond of ts';

CREATE OR REPLACE FUNCTION sharded_id.min_id_at(ts timestamptz, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_min_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.min_id_at(timestamptz, text) IS
'lowest id of the named layout any shard can have at the millisecond of ts';

CREATE OR REPLACE FUNCTION sharded_id.max_id_at(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_max_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.max_id_at(timestamptz) IS
'highest id any shard can have at the millisecond of ts';

CREATE OR REPLACE FUNCTION sharded_id.max_id_at(ts timestamptz, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_max_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.max_id_at(timestamptz, text) IS
'highest id of the named layout any shard can have at the millisecond of ts';

CREATE OR REPLACE FUNCTION sharded_id.shard_for(key bigint, shard_count integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_for_int8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_for(bigint, integer) IS
'logical shard of an integer key: key modulo shard_count, floored (negative keys too)';

CREATE OR REPLACE FUNCTION sharded_id.shard_for(key text, shard_count integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_for_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_for(text, integer) IS
'logical shard of a text key: 64-bit FNV-1a of its bytes modulo shard_count';

CREATE OR REPLACE FUNCTION sharded_id.to_shortcode(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'shid_to_shortcode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.to_shortcode(bigint) IS
'the id in URL-safe base 64 (digits A-Z a-z 0-9 - _)';

CREATE OR REPLACE FUNCTION sharded_id.from_shortcode(code text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_from_shortcode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.from_shortcode(text) IS
'the id a shortcode stands for';

COMMENT ON COLUMN sharded_id.retired_shards.retired_by IS
'the role that retired the shard: a role that is not a superuser takes back only what it, or a role whose privileges it has, retired';

CREATE OR REPLACE FUNCTION sharded_id._provisioner_role()
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._provisioner_role');
    SELECT * INTO r FROM pg_catalog.pg_roles a WHERE a.rolname = 'sharded_id_provisioner';
    IF NOT FOUND THEN
        CREATE ROLE sharded_id_provisioner NOLOGIN;
    ELSIF r.rolcanlogin OR r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication
          OR r.rolbypassrls OR EXISTS (SELECT FROM pg_catalog.pg_auth_members m WHERE m.member = r.oid) THEN
        RAISE EXCEPTION 'role "sharded_id_provisioner" has more rights than provisioning needs'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'The role exists with LOGIN, SUPERUSER, CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS, or as a member of another role, and sharded_id would grant its members the provisioning functions.',
                  HINT = 'Drop the role, or make it NOLOGIN and a member of no role, then create the extension again.';
    END IF;
    COMMENT ON ROLE sharded_id_provisioner IS
        'sharded_id: its members provision shards, and retire, take back, raise the floor of and drop those whose schema they own';
    EXECUTE pg_catalog.format('GRANT CREATE ON DATABASE %I TO sharded_id_provisioner', pg_catalog.current_database());
END
$$;

COMMENT ON FUNCTION sharded_id._provisioner_role() IS
'internal: make the role sharded_id_provisioner, or take the one there if it has no more rights than provisioning needs, and let it create schemas in this database; run by the install and by every update';

REVOKE EXECUTE ON FUNCTION sharded_id._provisioner_role() FROM PUBLIC;

SELECT sharded_id._provisioner_role();

CREATE OR REPLACE FUNCTION sharded_id._catalog_retire(shard_id integer, layout text, high_water bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_retire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_retire(integer, text, bigint) IS
'internal: retire_shard''s catalog writes, for a superuser or a member of sharded_id_provisioner that owns the shard''s schema: out of shards, into retired_shards with its high-water mark and the role that retired it';

CREATE OR REPLACE FUNCTION sharded_id._catalog_own(shard_id integer, schema_name name, layout text, mode text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_own'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_own(integer, name, text, text) IS
'internal: create_shard''s first catalog write, for a superuser, or a member of sharded_id_provisioner in a new schema or one it owns, taking back only what it retired: into shards';

CREATE OR REPLACE FUNCTION sharded_id._catalog_unretire(shard_id integer, layout text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_unretire'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_unretire(integer, text) IS
'internal: create_shard''s last catalog write, after _own_shard, for a superuser or the caller _catalog_own allowed: out of retired_shards';

CREATE OR REPLACE FUNCTION sharded_id._catalog_add_table(template regclass, table_name name, id_column name)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_add_table'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_add_table(regclass, name, name) IS
'internal: add_table''s catalog write, for a superuser or a member of sharded_id_provisioner that owns the template';

CREATE OR REPLACE FUNCTION sharded_id.current_settings(OUT schema_prefix text,
                                            OUT pad_width integer,
                                            OUT layout text,
                                            OUT mode text)
RETURNS record
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.schema_prefix, s.pad_width, s.layout, s.mode
    FROM sharded_id.settings s
    UNION ALL
    SELECT 'shard_', 4, 'instagram', 'seed'
    WHERE NOT EXISTS (SELECT 1 FROM sharded_id.settings)
$$;

COMMENT ON FUNCTION sharded_id.current_settings() IS
'the provisioning settings in force (sharded_id.settings, or the defaults)';

CREATE OR REPLACE FUNCTION sharded_id.configure(schema_prefix text DEFAULT NULL,
                                     pad_width integer DEFAULT NULL,
                                     layout text DEFAULT NULL,
                                     mode text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cur record;
BEGIN
    SELECT * INTO cur FROM sharded_id.current_settings();
    -- Names are limited in bytes (63), not characters: leave room for the
    -- shard number.
    IF octet_length(schema_prefix) > 50 OR schema_prefix = '' THEN
        RAISE EXCEPTION 'schema prefix "%" is out of range', left(schema_prefix, 64)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('Schema prefixes must be between 1 and 50 bytes long; this one is %s bytes.',
                                  octet_length(schema_prefix));
    END IF;
    IF schema_prefix LIKE 'pg\_%' THEN
        RAISE EXCEPTION 'schema prefix "%" is reserved', schema_prefix
            USING ERRCODE = 'reserved_name',
                  DETAIL = 'PostgreSQL reserves names beginning with "pg_" for system schemas, so no shard schema could be created with it.';
    END IF;
    IF layout IS NOT NULL AND layout IS DISTINCT FROM cur.layout THEN
        -- An unknown layout fails here, with the error next_id gives.
        PERFORM sharded_id.check_shard(0, configure.layout);
        IF EXISTS (SELECT 1 FROM sharded_id.shards) THEN
            RAISE EXCEPTION 'cannot change the layout of existing shards'
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Shards use layout "%s", and their ids and column defaults depend on it.', cur.layout);
        END IF;
    END IF;
    IF mode IS NOT NULL AND mode IS DISTINCT FROM cur.mode THEN
        IF mode NOT IN ('seed', 'counter') THEN
            RAISE EXCEPTION 'unknown id mode "%"', mode
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'The modes are seed and counter.';
        END IF;
        IF EXISTS (SELECT 1 FROM sharded_id.shards) THEN
            RAISE EXCEPTION 'cannot change the mode of existing shards'
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Shards mint ids in %s mode, and their column defaults depend on it.', cur.mode);
        END IF;
    END IF;
    INSERT INTO sharded_id.settings AS s (singleton, schema_prefix, pad_width, layout, mode)
    VALUES (true,
            coalesce(configure.schema_prefix, cur.schema_prefix),
            coalesce(configure.pad_width, cur.pad_width),
            coalesce(configure.layout, cur.layout),
            coalesce(configure.mode, cur.mode))
    ON CONFLICT (singleton) DO UPDATE
        SET schema_prefix = excluded.schema_prefix,
            pad_width = excluded.pad_width,
            layout = excluded.layout,
            mode = excluded.mode;
END
$$;

COMMENT ON FUNCTION sharded_id.configure(text, integer, text, text) IS
'set the schema name prefix, its zero padding, the layout and the mode (seed or counter) of new shards';

CREATE OR REPLACE FUNCTION sharded_id.shard_schema(shard_id integer)
RETURNS name
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(
        (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = shard_schema.shard_id),
        (SELECT (c.schema_prefix
                 || lpad(sharded_id.check_shard(shard_schema.shard_id, c.layout)::text,
                         greatest(c.pad_width, length(shard_schema.shard_id::text)), '0'))::name
         FROM sharded_id.current_settings() c))
$$;

COMMENT ON FUNCTION sharded_id.shard_schema(integer) IS
'schema name of a shard: its catalog entry, or the name the settings give it';

CREATE OR REPLACE FUNCTION sharded_id._next_id_call(shard_id integer, seq regclass, layout text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN seq IS NOT NULL THEN
            format('sharded_id.next_id(%s, %L::pg_catalog.regclass%s)', shard_id, seq::text,
                   CASE WHEN layout = 'instagram' THEN '' ELSE format(', %L', layout) END)
        WHEN layout = 'instagram' THEN format('sharded_id.next_id(%s)', shard_id)
        ELSE format('sharded_id.next_id_in_layout(%s, %L)', shard_id, layout)
    END
$$;

COMMENT ON FUNCTION sharded_id._next_id_call(integer, regclass, text) IS
'internal: the SQL text of a shard''s next_id call (seq NULL: counter mode)';

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

CREATE OR REPLACE FUNCTION sharded_id._copy_table(t sharded_id.shard_tables, shard_id integer,
                                       schema name, seq regclass, layout text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    template regclass;
    target text := format('%I.%I', schema, t.table_name);
    part record;
    stmt text;
BEGIN
    IF to_regclass(target) IS NOT NULL THEN
        IF (SELECT c.relkind FROM pg_class c WHERE c.oid = to_regclass(target)) NOT IN ('r', 'p') THEN
            RAISE EXCEPTION '"%" is not a table', target
                USING ERRCODE = 'wrong_object_type',
                      DETAIL = format('Shard %s''s copy of sharded table "%s" must be an ordinary or partitioned table.',
                                      shard_id, t.table_name),
                      HINT = 'Drop it, or make it an ordinary table again, before the shard is provisioned.';
        END IF;
        -- An adopted copy (restored from a dump, or left behind by DROP
        -- EXTENSION ... CASCADE, which drops the id defaults with next_id)
        -- gets its id default back if it has none.
        IF NOT EXISTS (SELECT 1 FROM pg_attrdef d
                       JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                       WHERE d.adrelid = to_regclass(target) AND a.attname = t.id_column) THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s',
                           target, t.id_column, sharded_id._next_id_call(shard_id, seq, layout));
        END IF;
        RETURN false;
    END IF;
    template := to_regclass(format('%I.%I', t.template_schema, t.template_table));
    IF template IS NULL THEN
        RAISE EXCEPTION 'template table %.% of sharded table "%" does not exist',
                        quote_ident(t.template_schema), quote_ident(t.template_table), t.table_name
            USING ERRCODE = 'undefined_table';
    END IF;
    -- A partitioned template gives a partitioned copy, with a copy of each
    -- of its partitions; one level only, refused before anything is made.
    IF EXISTS (SELECT FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
               WHERE i.inhparent = template AND c.relkind = 'p') THEN
        RAISE EXCEPTION 'template table % has partitions that are partitioned themselves', template
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Shard copies keep one level of partitioning.',
                  HINT = 'Partition the template once, or attach the sub-partitions to each shard''s copy yourself.';
    END IF;
    EXECUTE format('CREATE TABLE %s (LIKE %s INCLUDING ALL)%s', target, template,
                   CASE WHEN (SELECT relkind FROM pg_class WHERE oid = template) = 'p'
                        THEN ' PARTITION BY ' || pg_get_partkeydef(template) ELSE '' END);
    FOR part IN
        SELECT c.oid, c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = template ORDER BY c.relname
    LOOP
        EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s %s', schema, part.relname, target, part.bound);
        FOR stmt IN SELECT sharded_id._relation_extras_ddl(part.oid, format('%I.%I', schema, part.relname)) LOOP
            EXECUTE stmt;
        END LOOP;
    END LOOP;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s',
                   target, t.id_column, sharded_id._next_id_call(shard_id, seq, layout));
    -- Triggers, row security and its policies, grants, owner and comments,
    -- which LIKE leaves behind.
    FOR stmt IN SELECT sharded_id._relation_extras_ddl(template, target) LOOP
        EXECUTE stmt;
    END LOOP;
    RETURN true;
END
$$;

COMMENT ON FUNCTION sharded_id._copy_table(sharded_id.shard_tables, integer, name, regclass, text) IS
'internal: copy one template table into a shard schema';

CREATE OR REPLACE FUNCTION sharded_id._copy_foreign_keys(t sharded_id.shard_tables, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    template regclass := to_regclass(format('%I.%I', t.template_schema, t.template_table));
    target regclass := to_regclass(format('%I.%I', schema, t.table_name));
    fk record;
    def text;
    referenced regclass;
BEGIN
    FOR fk IN
        SELECT c.conname, pg_get_constraintdef(c.oid) AS def, NOT c.convalidated AS not_valid,
               c.confrelid, c.confrelid::regclass::text AS referenced, st.table_name AS ref_sharded
        FROM pg_constraint c
        JOIN pg_class rc ON rc.oid = c.confrelid
        JOIN pg_namespace rn ON rn.oid = rc.relnamespace
        LEFT JOIN sharded_id.shard_tables st
               ON st.template_schema = rn.nspname AND st.template_table = rc.relname
        WHERE c.conrelid = template AND c.contype = 'f'
        ORDER BY c.conname
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_constraint
                              WHERE conrelid = target AND conname = fk.conname);
        def := fk.def;
        IF fk.ref_sharded IS NOT NULL THEN
            -- Both names are printed under this function's search_path.
            def := replace(def, format(') REFERENCES %s(', fk.referenced),
                           format(') REFERENCES %I.%I(', schema, fk.ref_sharded));
        END IF;
        referenced := CASE WHEN fk.ref_sharded IS NOT NULL
                           THEN to_regclass(format('%I.%I', schema, fk.ref_sharded)) ELSE fk.confrelid END;
        -- Checking the key plans a read of both tables, and planning
        -- evaluates their index expressions: with the caller's rights only
        -- when each table's owner could act as the caller anyway, else as
        -- the table's owner (sharded_id._validate_as_owner), since the
        -- table may be one that its schema's owner made.
        IF fk.not_valid OR NOT EXISTS (
               SELECT FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
               WHERE c.oid IN (target, referenced)
                 AND NOT (r.rolsuper OR pg_has_role(r.oid, current_user, 'USAGE'))) THEN
            EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', target, fk.conname, def);
        ELSIF (SELECT c.relkind FROM pg_class c WHERE c.oid = target) = 'p' THEN
            -- A partitioned table takes no NOT VALID foreign key before
            -- PostgreSQL 18.
            RAISE EXCEPTION 'cannot check foreign key "%" of partitioned table % as its owner', fk.conname, target
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('%s belongs to %s, and %s to %s: checking the key runs their code with the rights of whoever adds it.',
                                      target, (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid = target),
                                      referenced, (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid = referenced)),
                      HINT = 'Add the key as the table''s owner, then run create_shard again.';
        ELSE
            EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s NOT VALID', target, fk.conname, def);
            PERFORM sharded_id._validate_as_owner(target, fk.conname);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._copy_foreign_keys(sharded_id.shard_tables, name) IS
'internal: recreate a template table''s foreign keys in a shard schema';

CREATE OR REPLACE FUNCTION sharded_id._check_adoptable(schema name)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema);
    templates text;
    tables text[];
BEGIN
    IF schema IN ('public', 'sharded_id', 'information_schema') OR schema LIKE 'pg\_%' THEN
        RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'System schemas, public and sharded_id never hold shards.';
    END IF;
    SELECT string_agg(format('%I.%I', st.template_schema, st.template_table), ', ' ORDER BY st.position)
    INTO templates FROM sharded_id.shard_tables st WHERE st.template_schema = schema;
    IF templates IS NOT NULL THEN
        RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('It holds the template tables %s, which a shard only copies.', templates);
    END IF;
    -- A schema with no table is adopted only from its owner (or a
    -- superuser's): one that another role made beforehand (a provisioner, planting shard_0031,
    -- maybe with an id_seq or a next_id() of its own, for a superuser's
    -- create_shard) would let that role drop the shard's tables with it,
    -- retire the shard, or run its code as every writer.
    IF nsp IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p'))
       AND (SELECT n.nspowner FROM pg_namespace n WHERE n.oid = nsp)
           IS DISTINCT FROM (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user)
       AND NOT (SELECT r.rolsuper FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner WHERE n.oid = nsp) THEN
        RAISE EXCEPTION 'schema "%" belongs to role "%"', schema,
                        (SELECT pg_get_userbyid(n.nspowner) FROM pg_namespace n WHERE n.oid = nsp)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A schema without tables that another role made is not adopted as a shard: that role could drop the shard''s tables with it.',
                  HINT = pg_catalog.format('Drop the schema, or make %I its owner, then create the shard.', current_user);
    END IF;
    IF nsp IS NULL
       OR EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = nsp AND p.proname = 'next_id' AND p.pronargs = 0)
       OR EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = nsp AND c.relname = 'id_seq' AND c.relkind = 'S') THEN
        RETURN;
    END IF;
    SELECT array_agg(c.relname::text ORDER BY c.relname) INTO tables
    FROM pg_class c WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'v', 'm', 'f');
    IF tables IS NULL AND NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = nsp) THEN
        RETURN;
    END IF;
    IF tables IS NOT NULL AND EXISTS (SELECT 1 FROM sharded_id.shard_tables)
       AND tables <@ (SELECT array_agg(st.table_name::text) FROM sharded_id.shard_tables st) THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = format('It holds %s but neither a next_id() function nor an id_seq sequence, so create_shard did not make it.',
                              coalesce(array_to_string(tables, ', '), 'functions')),
              HINT = 'Adopt a schema made by create_shard or restored from one, or an empty one.';
END
$$;

COMMENT ON FUNCTION sharded_id._check_adoptable(name) IS
'internal: refuse a schema that is not shaped like a shard before a new shard adopts it';

CREATE OR REPLACE FUNCTION sharded_id._max_id(rel regclass, id_column name)
RETURNS bigint
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_max_id';

COMMENT ON FUNCTION sharded_id._max_id(regclass, name) IS
'internal: the largest value of a table''s bigint column, read as the table''s owner in a security-restricted operation with a fixed search_path; refuses what is not a table';

CREATE OR REPLACE FUNCTION sharded_id._table_fingerprint(rel regclass)
RETURNS text
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_table_fingerprint';

COMMENT ON FUNCTION sharded_id._table_fingerprint(regclass) IS
'internal: a table''s row count and the sum of its rows'' hashes, read as the table''s owner in a security-restricted operation, to compare two copies';

CREATE OR REPLACE FUNCTION sharded_id._table_rows(rel regclass)
RETURNS SETOF text
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_table_rows';

COMMENT ON FUNCTION sharded_id._table_rows(regclass) IS
'internal: every row of a table as text, read as the table''s owner in a security-restricted operation, for a move''s copy';

CREATE OR REPLACE FUNCTION sharded_id._insert_as_owner(rel regclass, rows text[])
RETURNS bigint
LANGUAGE c VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_insert_as_owner';

COMMENT ON FUNCTION sharded_id._insert_as_owner(regclass, text[]) IS
'internal: inserts rows given as text into a table as the table''s owner in a security-restricted operation, for a move''s dump copy; returns their number';

CREATE OR REPLACE FUNCTION sharded_id._validate_as_owner(rel regclass, constraint_name name)
RETURNS void
LANGUAGE c VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_validate_as_owner';

COMMENT ON FUNCTION sharded_id._validate_as_owner(regclass, name) IS
'internal: validate a table''s foreign key as the table''s owner in a security-restricted operation with a fixed search_path; refuses a referenced table of another owner';

CREATE OR REPLACE FUNCTION sharded_id._check_schema_shard(shard_id integer, schema name)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema);
    holder integer := (SELECT s.shard_id FROM sharded_id.shards s WHERE s.schema_name = schema);
    other record;
BEGIN
    IF holder IS DISTINCT FROM shard_id AND holder IS NOT NULL THEN
        RAISE EXCEPTION 'schema "%" belongs to shard %', schema, holder
            USING ERRCODE = 'duplicate_schema',
                  DETAIL = format('Shard %s of this database''s catalog is in schema "%s".', holder, schema),
                  HINT = 'Give the new shard a schema of its own.';
    END IF;
    SELECT x.shard, x.what INTO other FROM (
        SELECT (regexp_match(pg_get_functiondef(p.oid), 'sharded_id\.next_id(?:_in_layout)?\((\d+)'))[1]::integer AS shard,
               format('%I.next_id()', schema) AS what
        FROM pg_proc p WHERE p.pronamespace = nsp AND p.proname = 'next_id' AND p.pronargs = 0 AND p.prokind = 'f'
        UNION ALL
        SELECT (regexp_match(pg_get_expr(d.adbin, d.adrelid), 'sharded_id\.next_id(?:_in_layout)?\((\d+)'))[1]::integer,
               format('the default of %s.%I', c.oid::regclass, a.attname)
        FROM pg_attrdef d
        JOIN pg_class c ON c.oid = d.adrelid
        JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        WHERE c.relnamespace = nsp
    ) x
    WHERE x.shard IS DISTINCT FROM shard_id AND x.shard IS NOT NULL
    ORDER BY x.what LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'schema "%" belongs to shard %', schema, other.shard
            USING ERRCODE = 'duplicate_schema',
                  DETAIL = format('%s mints ids of shard %s%s, not of shard %s.', other.what, other.shard,
                                  CASE WHEN EXISTS (SELECT FROM sharded_id.retired_shards r WHERE r.shard_id = other.shard)
                                       THEN ', which this server retired' ELSE '' END, shard_id),
                  HINT = format('Take shard %s back with sharded_id.create_shard(%s, %L), or give the new shard a schema of its own.',
                                other.shard, other.shard, schema);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._check_schema_shard(integer, name) IS
'internal: refuse a schema that belongs to another shard (in the catalog, or minting its ids) before a new shard adopts it';

CREATE OR REPLACE FUNCTION sharded_id.shard_max_id(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql STABLE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name := (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = shard_max_id.shard_id);
    t sharded_id.shard_tables;
    rel regclass;
    top_id bigint;
BEGIN
    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        rel := to_regclass(format('%I.%I', schema, t.table_name));
        CONTINUE WHEN rel IS NULL;
        top_id := greatest(top_id, sharded_id._max_id(rel, t.id_column));
    END LOOP;
    RETURN top_id;
END
$$;

COMMENT ON FUNCTION sharded_id.shard_max_id(integer) IS
'the largest id in a shard''s copies of the template tables, or NULL';

CREATE OR REPLACE FUNCTION sharded_id._check_floors(shard_id integer, schema_name name, layout text)
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
        table_top := sharded_id._max_id(rel, t.id_column);
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
        PERFORM sharded_id._catalog_own(shard.shard_id, shard.schema_name, shard.layout, shard.mode);
        PERFORM sharded_id._own_shard(shard.shard_id, shard.layout);
        PERFORM sharded_id._catalog_unretire(shard.shard_id, shard.layout);
        adopted := true;
    ELSIF NOT FOUND THEN
        PERFORM sharded_id.check_shard(shard_id, cfg.layout);
        PERFORM sharded_id._check_schema_shard(shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)));
        PERFORM sharded_id._check_adoptable(coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)));
        -- A schema with rows raises the floor over them below: check first.
        PERFORM sharded_id._check_floors(shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)), cfg.layout);
        -- Into the catalog, and out of retired_shards: this server mints for
        -- the shard again, from the commit on.  Each step checks the caller.
        -- The take-back reads the catalog's retirement before it leaves
        -- retired_shards, if the server never decided the shard's owner, so
        -- that a rollback keeps it.
        PERFORM sharded_id._catalog_own(shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)),
                                        cfg.layout, cfg.mode);
        SELECT * INTO shard FROM sharded_id.shards s WHERE s.shard_id = _provision.shard_id;
        PERFORM sharded_id._own_shard(shard.shard_id, shard.layout);
        PERFORM sharded_id._catalog_unretire(shard.shard_id, shard.layout);
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

CREATE OR REPLACE FUNCTION sharded_id.create_shard(shard_id integer, schema_name name DEFAULT NULL)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF shard_id IS NULL THEN
        RAISE EXCEPTION 'shard id must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF schema_name = '' THEN
        RAISE EXCEPTION 'schema name of shard % must not be empty', shard_id
            USING ERRCODE = 'invalid_name',
                  HINT = 'Pass NULL, or leave the name out, for the name the settings give the shard.';
    END IF;
    RETURN sharded_id._provision(shard_id, schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id.create_shard(integer, name) IS
'create the schema of a logical shard (named by the settings, or schema_name) with its sequence (seed mode), next_id() and a copy of every template table; creates only what is missing, so it also adopts a schema restored from a dump';

CREATE OR REPLACE FUNCTION sharded_id.create_shards(first_shard integer, last_shard integer)
RETURNS SETOF name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF first_shard > last_shard THEN
        RAISE EXCEPTION 'first shard % is after last shard %', first_shard, last_shard
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR shard IN first_shard .. last_shard LOOP
        RETURN NEXT sharded_id._provision(shard, NULL);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id.create_shards(integer, integer) IS
'create_shard for every shard from first_shard to last_shard, all or nothing, in one transaction (for thousands, CALL provision_shards)';

CREATE OR REPLACE PROCEDURE sharded_id.provision_shards(first_shard integer, last_shard integer,
                                             batch_size integer DEFAULT 64)
LANGUAGE plpgsql
AS $$
DECLARE
    batch_start bigint := first_shard;
    batch_end bigint;
BEGIN
    -- A procedure cannot SET search_path (it COMMITs): pinned here, and
    -- again after every COMMIT and every CALL, which end the transaction.
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF first_shard IS NULL OR last_shard IS NULL OR batch_size IS NULL THEN
        RAISE EXCEPTION 'shard range and batch size must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF first_shard > last_shard THEN
        RAISE EXCEPTION 'first shard % is after last shard %', first_shard, last_shard
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch size % is out of range', batch_size
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A batch holds at least one shard.';
    END IF;
    WHILE batch_start <= last_shard LOOP
        batch_end := least(last_shard, batch_start + batch_size - 1);
        PERFORM sharded_id._provision(s::integer, NULL) FROM generate_series(batch_start, batch_end) s;
        RAISE NOTICE 'shards % to % provisioned (% to %)', batch_start, batch_end, first_shard, last_shard;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        batch_start := batch_end + 1;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE sharded_id.provision_shards(integer, integer, integer) IS
'create_shard for every shard from first_shard to last_shard, committing every batch_size shards so that any number fits a default lock table; resumable; CALL it outside a transaction block';

CREATE OR REPLACE FUNCTION sharded_id.retire_shard(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard record;
    mark bigint;
BEGIN
    SELECT * INTO shard FROM sharded_id.shards s WHERE s.shard_id = retire_shard.shard_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard % does not exist', shard_id
            USING ERRCODE = 'undefined_object';
    END IF;
    -- Both check the caller against the catalog row, before it goes.
    mark := sharded_id._retire_shard(shard.shard_id, shard.layout);
    PERFORM sharded_id._catalog_retire(shard.shard_id, shard.layout, mark);
    RETURN mark;
END
$$;

COMMENT ON FUNCTION sharded_id.retire_shard(integer) IS
'give a logical shard away: out of the catalog, and next_id refuses it here until create_shard takes it back; keeps the schema; returns the shard''s high-water mark for raise_floor on its new server';

CREATE OR REPLACE FUNCTION sharded_id.drop_shard(shard_id integer)
RETURNS name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name := (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = drop_shard.shard_id);
BEGIN
    PERFORM sharded_id.retire_shard(shard_id);
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', schema);
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id.drop_shard(integer) IS
'drop a logical shard: its schema with all its tables and rows, and its catalog entry; next_id refuses it here until create_shard takes it back';

CREATE OR REPLACE FUNCTION sharded_id.add_table(template regclass, id_column name DEFAULT 'id')
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    t sharded_id.shard_tables;
    shard record;
    copies integer := 0;
BEGIN
    SELECT c.relname, n.nspname, c.relkind INTO rel
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = template;
    IF rel.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', template
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_attribute a
                   WHERE a.attrelid = template AND a.attname = id_column
                     AND a.atttypid = 'pg_catalog.int8'::regtype AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of "%" is not a bigint column', id_column, template
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'The id column of a sharded table must be of type bigint.';
    END IF;
    IF EXISTS (SELECT 1 FROM sharded_id.shards s WHERE s.schema_name = rel.nspname) THEN
        RAISE EXCEPTION 'template table "%" is inside a shard schema', template
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT * INTO t FROM sharded_id.shard_tables st WHERE st.table_name = rel.relname;
    IF FOUND AND (t.template_schema, t.template_table) <> (rel.nspname, rel.relname) THEN
        RAISE EXCEPTION 'a sharded table named "%" already exists', rel.relname
            USING ERRCODE = 'duplicate_table',
                  DETAIL = format('Its template is %I.%I.', t.template_schema, t.template_table);
    ELSIF NOT FOUND THEN
        PERFORM sharded_id._catalog_add_table(template, rel.relname, id_column);
        SELECT * INTO t FROM sharded_id.shard_tables st
        WHERE st.table_name = rel.relname;
    END IF;

    FOR shard IN SELECT * FROM sharded_id.shards ORDER BY shard_id LOOP
        IF sharded_id._copy_table(t, shard.shard_id, shard.schema_name,
                                  CASE WHEN shard.mode = 'seed' THEN format('%I.id_seq', shard.schema_name)::regclass END,
                                  shard.layout) THEN
            copies := copies + 1;
        END IF;
        PERFORM sharded_id._copy_foreign_keys(t, shard.schema_name);
    END LOOP;
    RETURN copies;
END
$$;

COMMENT ON FUNCTION sharded_id.add_table(regclass, name) IS
'make a table the template of a sharded table: every shard, existing or new, gets a copy; returns the copies made';

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
    -- The table may be one its schema's owner made: only a table, and its
    -- rows are read as its owner (sharded_id._max_id).
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = tbl) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', tbl
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = 'adopt_table switches the key of an ordinary or partitioned table.';
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
    max_id := sharded_id._max_id(tbl, id_column);
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

CREATE OR REPLACE FUNCTION sharded_id._acl_ddl(object text, acl aclitem[], owner oid, columns text DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION sharded_id._schema_unsupported(nsp oid)
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

CREATE OR REPLACE FUNCTION sharded_id._schema_objects(nsp oid)
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

CREATE OR REPLACE FUNCTION sharded_id._type_ddl(typ oid, schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    dc record;
    type_name text;
BEGIN
    SELECT t.* INTO r FROM pg_type t WHERE t.oid = typ;
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
END
$$;

COMMENT ON FUNCTION sharded_id._type_ddl(oid, name) IS
'internal: the statements that make a type of a schema again (enum, domain and its constraints, range), for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._relation_ddl(rel oid, schema_name name)
RETURNS text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
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
    INTO r FROM pg_class c WHERE c.oid = rel;
    IF r.relkind = 'S' THEN
        RETURN (SELECT format('CREATE SEQUENCE %I.%I AS %s INCREMENT %s MINVALUE %s MAXVALUE %s START %s CACHE %s%s',
                              schema_name, r.relname, format_type(q.seqtypid, NULL), q.seqincrement, q.seqmin,
                              q.seqmax, q.seqstart, q.seqcache, CASE WHEN q.seqcycle THEN ' CYCLE' ELSE '' END)
                FROM pg_sequence q WHERE q.seqrelid = r.oid);
    ELSIF r.relkind = 'c' THEN
        RETURN format('CREATE TYPE %I.%I AS (%s)', schema_name, r.relname, coalesce(r.attributes, ''));
    ELSIF r.relkind = 'v' THEN
        RETURN format('CREATE VIEW %I.%I%s AS %s', schema_name, r.relname,
                      coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''),
                      rtrim(pg_get_viewdef(r.oid), ';'));
    ELSIF r.relkind = 'm' THEN
        RETURN format('CREATE MATERIALIZED VIEW %I.%I%s%s AS %s WITH NO DATA', schema_name, r.relname,
                      CASE WHEN r.am <> 'heap' THEN ' USING ' || quote_ident(r.am) ELSE '' END,
                      coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''),
                      rtrim(pg_get_viewdef(r.oid), ';'));
    ELSIF r.relispartition THEN
        RETURN format('CREATE TABLE %I.%I PARTITION OF %s %s%s%s', schema_name, r.relname, r.parent,
                      r.bound, r.partition_by,
                      coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''));
    END IF;
    RETURN format('CREATE %sTABLE %I.%I (%s)%s%s%s', CASE WHEN r.relpersistence = 'u' THEN 'UNLOGGED ' ELSE '' END,
                  schema_name, r.relname, coalesce(r.columns, ''), r.partition_by,
                  CASE WHEN r.am IS NOT NULL AND r.am <> 'heap' THEN ' USING ' || quote_ident(r.am) ELSE '' END,
                  coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''));
END
$$;

COMMENT ON FUNCTION sharded_id._relation_ddl(oid, name) IS
'internal: the statement that makes a relation of a schema again (sequence, composite type, view, materialized view without rows, partition or table with its columns), for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_head_ddl(nsp oid, schema_name name)
RETURNS SETOF text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s FROM (
        SELECT 1 AS step, 0::bigint AS n, format('CREATE SCHEMA %I AUTHORIZATION %I', schema_name, pg_get_userbyid(n.nspowner)) AS s
        FROM pg_namespace n WHERE n.oid = nsp
        UNION ALL
        SELECT 2, a.ord, a.s FROM pg_namespace n,
            LATERAL sharded_id._acl_ddl(format('SCHEMA %I', schema_name), n.nspacl, n.nspowner) WITH ORDINALITY AS a(s, ord)
        WHERE n.oid = nsp
        UNION ALL
        SELECT 3, 0, 'SET LOCAL check_function_bodies = off'
    ) h
    ORDER BY h.step, h.n
$$;

COMMENT ON FUNCTION sharded_id._schema_head_ddl(oid, name) IS
'internal: the statements that make a schema and give it its privileges, then leave function bodies unchecked, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_objects_ddl(nsp oid, schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    o record;
BEGIN
    FOR o IN
        SELECT x.classid, x.objid FROM sharded_id._schema_objects(nsp) x ORDER BY x.level, x.objid
    LOOP
        IF o.classid = 'pg_proc'::regclass THEN
            RETURN NEXT rtrim(pg_get_functiondef(o.objid), E'\n');
        ELSIF o.classid = 'pg_type'::regclass THEN
            RETURN QUERY SELECT sharded_id._type_ddl(o.objid, schema_name);
        ELSE
            RETURN NEXT sharded_id._relation_ddl(o.objid, schema_name);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_objects_ddl(oid, name) IS
'internal: the statements that make the types, sequences, functions, procedures, tables, views and materialized views of a schema again, in dependency order, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_tables_ddl(nsp oid)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
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
    RETURN QUERY
        SELECT format('ALTER VIEW %s ALTER COLUMN %I SET DEFAULT %s', c.oid::regclass, a.attname, pg_get_expr(d.adbin, d.adrelid))
        FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid
        JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        WHERE c.relnamespace = nsp AND c.relkind = 'v'
        ORDER BY c.oid, a.attnum;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_tables_ddl(oid) IS
'internal: the constraints (but foreign keys), indexes, replica identities, sequence ownership, column settings and view column defaults of a schema as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_relation_extras_ddl(nsp oid)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
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
END
$$;

COMMENT ON FUNCTION sharded_id._schema_relation_extras_ddl(oid) IS
'internal: the triggers, row security, policies, owners, privileges and comments of the relations of a schema, and the comments of its constraints and indexes, as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_type_owners_ddl(nsp oid, schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
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
END
$$;

COMMENT ON FUNCTION sharded_id._schema_type_owners_ddl(oid, name) IS
'internal: the owners, privileges and comments of the types of a schema as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_routine_owners_ddl(nsp oid)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
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
END
$$;

COMMENT ON FUNCTION sharded_id._schema_routine_owners_ddl(oid) IS
'internal: the owners, privileges and comments of the functions and procedures of a schema as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_tail_ddl(nsp oid, schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
        SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.conrelid::regclass, k.conname, pg_get_constraintdef(k.oid))
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
        WHERE c.relnamespace = nsp AND k.contype = 'f' AND k.conislocal
        ORDER BY c.relispartition, c.oid, k.conname;
    RETURN QUERY
        SELECT format('COMMENT ON SCHEMA %I IS %L', schema_name, d.description)
        FROM pg_description d WHERE d.classoid = 'pg_namespace'::regclass AND d.objoid = nsp AND d.objsubid = 0;
    RETURN QUERY
        SELECT format('REFRESH MATERIALIZED VIEW %s', c.oid::regclass)
        FROM sharded_id._schema_objects(nsp) o JOIN pg_class c ON c.oid = o.objid
        WHERE o.classid = 'pg_class'::regclass AND c.relkind = 'm' AND c.relispopulated
        ORDER BY o.level, o.objid;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_tail_ddl(oid, name) IS
'internal: the foreign keys of a schema, its comment and the refreshes of its materialized views that hold rows, as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id.schema_ddl(schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- The schema, and the objects of it that schema_ddl cannot make again
    -- (_schema_unsupported): an error names the first and lists them all.
    -- Then one function per step, each giving its statements in the order
    -- they run in: the schema, its objects, what its tables carry, what
    -- its relations carry, owners of types and routines, and the last.
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema_ddl.schema_name);
    unsupported text[];
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
    RETURN QUERY SELECT sharded_id._schema_head_ddl(nsp, schema_name);
    RETURN QUERY SELECT sharded_id._schema_objects_ddl(nsp, schema_name);
    RETURN QUERY SELECT sharded_id._schema_tables_ddl(nsp);
    RETURN QUERY SELECT sharded_id._schema_relation_extras_ddl(nsp);
    RETURN QUERY SELECT sharded_id._schema_type_owners_ddl(nsp, schema_name);
    RETURN QUERY SELECT sharded_id._schema_routine_owners_ddl(nsp);
    RETURN QUERY SELECT sharded_id._schema_tail_ddl(nsp, schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id.schema_ddl(name) IS
'the statements that make a shard schema again, without its rows, in one transaction: types, sequences, functions, procedures, tables and partitions, views and materialized views in dependency order, then constraints, indexes, triggers and their enabled state, row security, policies, owners, privileges and comments of every object and of the schema; refuses (0A000) a schema holding an object it cannot make again';

CREATE OR REPLACE FUNCTION sharded_id.schema_inventory(schema_name name)
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

REVOKE EXECUTE ON FUNCTION sharded_id.configure(text, integer, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._copy_table(sharded_id.shard_tables, integer, name, regclass, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._copy_foreign_keys(sharded_id.shard_tables, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_adoptable(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_schema_shard(integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._provision(integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.create_shard(integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.create_shards(integer, integer) FROM PUBLIC;

REVOKE EXECUTE ON PROCEDURE sharded_id.provision_shards(integer, integer, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.retire_shard(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.raise_floors() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_floors(integer, name, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._max_id(regclass, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._validate_as_owner(regclass, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._table_fingerprint(regclass) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._table_rows(regclass) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._insert_as_owner(regclass, text[]) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.drop_shard(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.add_table(regclass, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.adopt_table(regclass, integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._relation_extras_ddl(regclass, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.schema_ddl(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text, boolean) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_unsupported(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_objects(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._type_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._relation_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_head_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_objects_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_tables_ddl(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_relation_extras_ddl(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_type_owners_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_routine_owners_ddl(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_tail_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.schema_inventory(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._catalog_retire(integer, text, bigint) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._catalog_own(integer, name, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._catalog_unretire(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._catalog_add_table(regclass, name, name) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION sharded_id.add_table(regclass, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.create_shard(integer, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.create_shards(integer, integer) TO sharded_id_provisioner;

GRANT EXECUTE ON PROCEDURE sharded_id.provision_shards(integer, integer, integer) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.retire_shard(integer) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.drop_shard(integer) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.adopt_table(regclass, integer, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.high_water(integer, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.floors() TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.schema_ddl(name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.schema_inventory(name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._provision(integer, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._copy_table(sharded_id.shard_tables, integer, name, regclass, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._copy_foreign_keys(sharded_id.shard_tables, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._check_adoptable(name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._check_schema_shard(integer, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._check_floors(integer, name, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._max_id(regclass, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._validate_as_owner(regclass, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._relation_extras_ddl(regclass, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text, boolean) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_unsupported(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_objects(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._type_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._relation_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_head_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_objects_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_tables_ddl(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_relation_extras_ddl(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_type_owners_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_routine_owners_ddl(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_tail_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._retire_shard(integer, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._own_shard(integer, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._catalog_retire(integer, text, bigint) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._catalog_own(integer, name, text, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._catalog_unretire(integer, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._catalog_add_table(regclass, name, name) TO sharded_id_provisioner;

CREATE OR REPLACE FUNCTION sharded_id._enter_fence(shard integer)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_enter_fence'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._enter_fence(integer) IS
'internal: take a shard''s fence in share mode until the transaction ends, which then cannot be prepared (enter_shard)';

CREATE OR REPLACE FUNCTION sharded_id._lock_fence(shard integer)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_lock_fence'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_fence(integer) IS
'internal: take a shard''s fence in exclusive mode until the transaction ends (a move''s freeze on a node); superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id._lock_fence(integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id._lock_class(kind text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_lock_class'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._lock_class(text) IS
'internal: the pg_locks classid of the shard locks of a kind (route, move, fence), whose objsubid is 3';

CREATE OR REPLACE FUNCTION sharded_id._shard_schema_now(shard integer)
RETURNS name
AS 'MODULE_PATHNAME', 'shid_shard_schema_now'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._shard_schema_now(integer) IS
'internal: the schema that sharded_id.shards names for a shard as of now, read with the newest snapshot, not the transaction''s (enter_shard)';

CREATE OR REPLACE FUNCTION sharded_id._refuse_old_copy()
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

CREATE OR REPLACE FUNCTION sharded_id._fence_table(rel regclass)
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

CREATE OR REPLACE FUNCTION sharded_id._fence_old_copy(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._unfence_old_copy(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id.enter_shard(shard_id integer)
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

CREATE OR REPLACE FUNCTION sharded_id._node_write_mark(move_id bigint)
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

CREATE OR REPLACE FUNCTION sharded_id._node_mark(move_id bigint)
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

CREATE OR REPLACE FUNCTION sharded_id._node_delete_mark(move_id bigint)
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

CREATE OR REPLACE FUNCTION sharded_id._node_has_subscription(subscription name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_subscription_enabled(subscription oid)
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

CREATE OR REPLACE FUNCTION sharded_id._node_disable_subscription(subscription name, if_enabled boolean DEFAULT false)
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

CREATE OR REPLACE FUNCTION sharded_id._node_detach_subscription(subscription name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_drop_subscription(subscription name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_drop_slots(slot name, sub_oid oid)
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

CREATE OR REPLACE FUNCTION sharded_id._node_drop_publication(publication name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_drop_copy(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_holds_shard(shard_id integer)
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

CREATE OR REPLACE FUNCTION sharded_id._node_retired_by(shard_id integer)
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

CREATE OR REPLACE FUNCTION sharded_id._node_retired_high_water(shard_id integer)
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

CREATE OR REPLACE FUNCTION sharded_id._node_prepare_freeze(shard_id integer, schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_set_idle_limit(idle interval)
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

CREATE OR REPLACE FUNCTION sharded_id._node_freeze(shard_id integer, schema_name name, lock_timeout interval, why text)
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

CREATE OR REPLACE FUNCTION sharded_id._node_frozen_floors(shard_id integer, schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_check_floors(shard_id integer, schema_name name, layout text, high_water bigint, source text)
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

CREATE OR REPLACE FUNCTION sharded_id._node_retire(shard_id integer, move_id bigint, schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_sequence_positions(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_register_shard(shard_id integer, schema_name name, sequences jsonb, high_water bigint)
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

CREATE OR REPLACE FUNCTION sharded_id._node_drop_refused_copy(shard_id integer, schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_take_back(shard_id integer, move_id bigint, schema_name name, high_water bigint)
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

CREATE OR REPLACE FUNCTION sharded_id._node_create_publication(publication name, schema_name name, move_id bigint)
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

CREATE OR REPLACE FUNCTION sharded_id._node_create_slot(slot name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_backend_pid()
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

CREATE OR REPLACE FUNCTION sharded_id._node_slot_blockers(slot_pid integer)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._node_slot_blockers');
    RETURN (SELECT pg_catalog.string_agg(pg_catalog.format('%s (role "%s", %s since %s)', a.pid, a.usename, a.state, a.xact_start), ', ')
            FROM pg_catalog.pg_stat_activity a
            WHERE a.backend_xid IS NOT NULL AND a.backend_type = 'client backend'
              AND a.xact_start < (SELECT b.query_start FROM pg_catalog.pg_stat_activity b WHERE b.pid = slot_pid)
              AND a.pid <> slot_pid);
END
$$;

COMMENT ON FUNCTION sharded_id._node_slot_blockers(integer) IS
'internal: on a move''s source, the sessions whose transactions hold up the slot a backend creates; superusers only';

CREATE OR REPLACE FUNCTION sharded_id._node_end_slot_blockers(slot_pid integer)
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

CREATE OR REPLACE FUNCTION sharded_id._node_slot_lag(slot name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_create_schema(ddl text)
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

CREATE OR REPLACE FUNCTION sharded_id._node_subscribe(ddl text, subscription name, connstr text, publication name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_copy_progress(sub_oid oid)
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

CREATE OR REPLACE FUNCTION sharded_id._node_sync_tables(sub_oid oid)
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

CREATE OR REPLACE FUNCTION sharded_id._node_lost_sync_slots(syncs jsonb)
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

CREATE OR REPLACE FUNCTION sharded_id._node_insert_rows(tbl text, batch text[])
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

CREATE OR REPLACE FUNCTION sharded_id._node_schema_tables(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_has_schema(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_populated_views(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_refresh_views(schema_name name, views text[])
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

CREATE OR REPLACE FUNCTION sharded_id._node_inventory(schema_name name, definitions boolean)
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

CREATE OR REPLACE FUNCTION sharded_id._node_server_major()
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

CREATE OR REPLACE FUNCTION sharded_id._node_shard_schema(shard_id integer)
RETURNS name
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = _node_shard_schema.shard_id
$$;

COMMENT ON FUNCTION sharded_id._node_shard_schema(integer) IS
'internal: the schema of a shard this node registers, or NULL (a move''s check of its source)';

CREATE OR REPLACE FUNCTION sharded_id._node_holds_shard_or_schema(shard_id integer, schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_row_security_tables(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_bypasses_row_security()
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM pg_catalog.pg_roles r
                   WHERE r.rolname = CURRENT_USER AND (r.rolsuper OR r.rolbypassrls))
$$;

COMMENT ON FUNCTION sharded_id._node_bypasses_row_security() IS
'internal: whether the caller is a superuser or bypasses row security on this node (a move''s check)';

CREATE OR REPLACE FUNCTION sharded_id._node_wal_level()
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.current_setting('wal_level')
$$;

COMMENT ON FUNCTION sharded_id._node_wal_level() IS
'internal: this node''s wal_level, which decides whether a shard may move online from it';

CREATE OR REPLACE FUNCTION sharded_id._node_server_version()
RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.current_setting('server_version_num')::integer
$$;

COMMENT ON FUNCTION sharded_id._node_server_version() IS
'internal: this node''s server_version_num (a move''s checks of what its target supports)';

CREATE OR REPLACE FUNCTION sharded_id._node_tables_without_identity(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_floors(shard_id integer)
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

CREATE OR REPLACE FUNCTION sharded_id._node_schema_ddl_count(schema_name name)
RETURNS bigint
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT count(*) FROM sharded_id.schema_ddl(schema_name)
$$;

COMMENT ON FUNCTION sharded_id._node_schema_ddl_count(name) IS
'internal: how many statements schema_ddl gives a schema back as, or its error (a move''s check)';

CREATE OR REPLACE FUNCTION sharded_id._node_schema_roles(schema_name name)
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

CREATE OR REPLACE FUNCTION sharded_id._node_first_non_superuser(roles text[])
RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT min(u.r) FROM pg_catalog.unnest(roles) u(r) LEFT JOIN pg_catalog.pg_roles x ON x.rolname = u.r
    WHERE x.rolsuper IS NOT TRUE
$$;

COMMENT ON FUNCTION sharded_id._node_first_non_superuser(text[]) IS
'internal: the first of some roles that is not a superuser on this node, or NULL (a move''s check)';

CREATE OR REPLACE FUNCTION sharded_id._schema_fingerprint(schema_name name)
RETURNS text
LANGUAGE plpgsql STABLE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    line text;
    result text := '';
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._schema_fingerprint');
    -- Each table read as its owner (sharded_id._table_fingerprint): the
    -- schema's owner may have planted code in it.
    FOR t IN
        SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = schema_name AND c.relkind = 'r' ORDER BY c.relname
    LOOP
        line := t.relname || ':' || sharded_id._table_fingerprint(t.oid);
        result := result || line || ' ';
    END LOOP;
    RETURN rtrim(result);
END
$$;

COMMENT ON FUNCTION sharded_id._schema_fingerprint(name) IS
'internal: row count and row-hash sum of every table of a schema, to compare two copies';

CREATE OR REPLACE FUNCTION sharded_id._lock_shard(shard integer, kind text, wait boolean)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shid_lock_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_shard(integer, text, boolean) IS
'internal: take a shard''s route or move lock in exclusive mode as a session lock, released at the latest when a transaction aborts';

CREATE OR REPLACE FUNCTION sharded_id._unlock_shard(shard integer, kind text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shid_unlock_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._unlock_shard(integer, text) IS
'internal: release a shard''s route or move lock taken by _lock_shard';

CREATE OR REPLACE FUNCTION sharded_id._wait_shard_lock(shard integer, kind text, timeout interval, why text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + timeout;
    started timestamptz := clock_timestamp();
    end_after timestamptz := clock_timestamp() + timeout / 2;
    end_all boolean := coalesce(current_setting('sharded_id.move_end_blockers', true), 'on') <> 'off';
    slice_ms bigint := 100;
    wait_ms bigint;
    saved_lock_timeout text := current_setting('lock_timeout');
    class bigint;
    noun text := CASE kind WHEN 'route' THEN 'route lock' WHEN 'fence' THEN 'fence' END;
    h record;
    holders text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._wait_shard_lock');
    class := sharded_id._lock_class(kind);
    IF noun IS NULL THEN
        RAISE EXCEPTION 'a move waits for no lock of kind "%"', kind USING ERRCODE = 'invalid_parameter_value';
    END IF;
    LOOP
        FOR h IN
            SELECT a.pid, a.usename, a.application_name, a.state, a.query,
                   clock_timestamp() - a.state_change AS idle_for
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND l.classid = class AND l.objid = _wait_shard_lock.shard AND l.objsubid = 3
              AND l.mode = 'ShareLock' AND l.granted AND l.pid <> pg_backend_pid()
              AND ((a.state IN ('idle in transaction', 'idle in transaction (aborted)')
                    AND a.state_change < clock_timestamp() - interval '500 ms')
                   OR (end_all AND clock_timestamp() >= end_after AND a.xact_start < started))
        LOOP
            BEGIN
                IF pg_terminate_backend(h.pid) THEN
                    IF h.state IN ('idle in transaction', 'idle in transaction (aborted)') THEN
                        RAISE WARNING 'ended session % of role "%", idle in a transaction for % while it held the % of shard %',
                                      h.pid, h.usename, date_trunc('second', h.idle_for), noun, shard
                            USING DETAIL = format('%s; the session''s %s. Application name: "%s".', why,
                                                  CASE kind WHEN 'route' THEN 'routed calls had all returned'
                                                            ELSE 'statements after it entered the shard had all returned' END,
                                                  h.application_name);
                    ELSE
                        RAISE WARNING 'ended session % of role "%", which still held the % of shard % after half of %',
                                      h.pid, h.usename, noun, shard, timeout
                            USING DETAIL = format('%s; the session was %s, running: %s. Application name: "%s".', why,
                                                  h.state, left(h.query, 200), h.application_name),
                                  HINT = 'SET sharded_id.move_end_blockers = off to have the freeze fail instead.';
                    END IF;
                END IF;
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE WARNING 'could not end session % of role "%", idle in a transaction while it held the % of shard %',
                              h.pid, h.usename, noun, shard
                    USING DETAIL = SQLERRM,
                          HINT = 'Run moves as a superuser, or as a member of pg_signal_backend.';
            END;
        END LOOP;
        wait_ms := least(slice_ms, floor(extract(epoch FROM deadline - clock_timestamp()) * 1000)::bigint);
        IF wait_ms < 1 THEN
            holders := (SELECT string_agg(format('%s (role "%s", %s)', a.pid, a.usename, a.state), ', ' ORDER BY a.pid)
                        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                        WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                          AND l.classid = class AND l.objid = _wait_shard_lock.shard AND l.objsubid = 3
                          AND l.granted AND l.pid <> pg_backend_pid());
            RAISE EXCEPTION 'the % of shard % was not free within %', noun, shard, timeout
                USING ERRCODE = 'lock_not_available',
                      DETAIL = format('Sessions that %s held it: %s.',
                                      CASE kind WHEN 'route' THEN 'routed calls to the shard' ELSE 'entered the shard' END,
                                      coalesce(holders, 'none left')),
                      HINT = 'Writers in flight hold it until their transactions end; raise freeze_timeout, or end the sessions that hold it.';
        END IF;
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', wait_ms || 'ms', true);
            IF kind = 'route' THEN
                PERFORM sharded_id._lock_shard(shard, 'route', true);
            ELSE
                PERFORM sharded_id._lock_fence(shard);
            END IF;
            PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
        slice_ms := slice_ms * 2;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._wait_shard_lock(integer, text, interval, text) IS
'internal: take a shard''s route lock or fence for a move''s freeze, within a timeout, ending sessions that hold it idle in a transaction';

CREATE OR REPLACE FUNCTION sharded_id._move_schema_ddl(schema_name name)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ddl text[];
    first integer;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_schema_ddl');
    ddl := ARRAY(SELECT s FROM sharded_id.schema_ddl(schema_name) s);
    first := (SELECT min(x.n) FROM unnest(ddl) WITH ORDINALITY x(s, n)
              WHERE x.s LIKE 'ALTER TABLE % ADD CONSTRAINT %' OR x.s LIKE 'CREATE INDEX %' OR x.s LIKE 'CREATE UNIQUE INDEX %');
    IF first IS NULL THEN
        RETURN array_to_string(ddl, E';\n');
    END IF;
    RETURN (SELECT string_agg(y.s, E';\n' ORDER BY y.rank, y.n)
            FROM (SELECT x.s, x.n,
                         CASE WHEN x.n < first THEN 0
                              WHEN x.s ~ '^ALTER SEQUENCE \S.* OWNED BY \S' AND x.s !~ E'\n' THEN 0
                              WHEN x.s ~ '^ALTER [A-Z ]+ \S.* OWNER TO ("[^"]*"|[^ ]+)$' AND x.s !~ E'\n' THEN 1
                              WHEN x.s ~ '^ALTER TABLE \S.* ADD CONSTRAINT ("([^"]|"")*"|\S+) (PRIMARY KEY|UNIQUE)[ (]' THEN 2
                              WHEN x.s ~ '^ALTER TABLE \S.* ADD CONSTRAINT ("([^"]|"")*"|\S+) FOREIGN KEY[ (]' THEN 3
                              ELSE 4 END AS rank
                  FROM unnest(ddl) WITH ORDINALITY x(s, n)) y);
END
$$;

COMMENT ON FUNCTION sharded_id._move_schema_ddl(name) IS
'internal: the statements of schema_ddl for a move''s target, ordered so that none runs code of the schema''s owner with the mover''s rights: owners before constraints and indexes, foreign keys before other indexes';

CREATE OR REPLACE FUNCTION sharded_id._on_schema_tables(schema_name name, statement text)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    n integer := 0;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._on_schema_tables');
    FOR t IN
        SELECT c.oid::regclass AS rel FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname = schema_name AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.oid
    LOOP
        EXECUTE format(statement, t.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sharded_id._on_schema_tables(name, text) IS
'internal: run a statement on every table of a shard schema (a move''s freeze and fence)';

REVOKE EXECUTE ON FUNCTION sharded_id._schema_fingerprint(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._lock_shard(integer, text, boolean) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._unlock_shard(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._wait_shard_lock(integer, text, interval, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._on_schema_tables(name, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_schema_ddl(name) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.generator_stats(OUT layout text,
                                           OUT shard_id integer,
                                           OUT ids bigint,
                                           OUT full_ms_waits bigint,
                                           OUT wait_time double precision,
                                           OUT clock_behind bigint,
                                           OUT max_clock_lag double precision,
                                           OUT current_ms timestamptz,
                                           OUT last_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_generator_stats'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED ROWS 100;

COMMENT ON FUNCTION sharded_id.generator_stats() IS
'one row per (layout, shard) slot in use: ids minted, waits for the clock (ms), clock-behind events and the largest lag (ms), the millisecond filled, the newest id';

CREATE OR REPLACE FUNCTION sharded_id.generator_info(OUT slots_used integer,
                                          OUT max_shards integer,
                                          OUT ceiling timestamptz,
                                          OUT ceiling_writes bigint,
                                          OUT ceiling_write_time double precision,
                                          OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_generator_info'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id.generator_info() IS
'the generator as a whole: slots used of sharded_id.max_shards, the durable ceiling, its writes and their time (ms), when statistics were reset';

CREATE OR REPLACE FUNCTION sharded_id.reset_stats()
RETURNS void
AS 'MODULE_PATHNAME', 'shid_reset_stats'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_stats() IS
'zero the statistics of the id generator';

REVOKE EXECUTE ON FUNCTION sharded_id.generator_stats() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.generator_info() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.reset_stats() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION sharded_id.generator_stats() TO pg_monitor;

GRANT EXECUTE ON FUNCTION sharded_id.generator_info() TO pg_monitor;

CREATE OR REPLACE FUNCTION sharded_id._open_schemas(schemas oid[])
RETURNS TABLE (nspoid oid, k integer, what text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._open_schemas');
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
    ),
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
        WHERE dn.nspoid IN (SELECT c.nspoid FROM cand c)
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
    -- Code of the schema that uses a function, operator or type of another
    -- schema owned by an open role, directly or through the types above
    -- (the schema's own objects are reason 3's).
    SELECT DISTINCT u.nspoid, 5,
           pg_catalog.format('%s uses %s, owned by role %I',
                             pg_catalog.pg_describe_object(u.classid, u.objid, u.objsubid),
                             pg_catalog.pg_describe_object(u.refclassid, u.refobjid, 0), r.rolname)
    FROM run_owner u JOIN pg_catalog.pg_roles r ON r.oid = u.owner
    WHERE r.oid IN (SELECT x.oid FROM open_role x) AND u.refnsp <> u.nspoid;
END
$$;

COMMENT ON FUNCTION sharded_id._open_schemas(oid[]) IS
'internal: of the given schemas, those that a role that is not a superuser (or is a member of a superuser role) owns, may create objects or triggers in, or has code in, with each reason (citus_open_shards, citus_check_moves)';

REVOKE EXECUTE ON FUNCTION sharded_id._open_schemas(oid[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.citus_open_shards(first_shard integer DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION sharded_id.citus_check_moves()
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

CREATE OR REPLACE FUNCTION sharded_id.citus_distribute_shards(first_shard integer DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION sharded_id.citus_shard_node(shard_id integer,
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

CREATE OR REPLACE FUNCTION sharded_id.citus_id_node(id bigint,
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

CREATE OR REPLACE FUNCTION sharded_id.citus_grant_windows(shard_ids integer[], layout text, group_id integer,
                                              node_name text, node_port integer, min_starts bigint[],
                                              stripes integer, stripe integer, reserved boolean)
RETURNS TABLE (shard_id integer, window_start bigint, window_end bigint, retry_after integer)
AS 'MODULE_PATHNAME', 'shid_citus_grant_windows'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

COMMENT ON FUNCTION sharded_id.citus_grant_windows(integer[], text, integer, text, integer, bigint[], integer, integer, boolean) IS
'on a Citus coordinator, called by a node over its own connection: for each shard in turn, grant the node a window [window_start, window_end) of Unix ms of it, from its min_starts on, durable before it returns; NULLs and retry_after (ms) where it would start more than a second ahead of the clock; refuses a node that is not an active primary of pg_dist_node or whose sharded_id.stripes or sharded_id.stripe differ from the coordinator''s; reserved: the node''s caller may have the first shard''s slot from the whole slot table (a superuser or a shard of its catalog), else it comes from sharded_id.max_free_slots; renewed shards without a slot get NULLs';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_grant_windows(integer[], text, integer, text, integer, bigint[], integer, integer, boolean) FROM PUBLIC;


-- Old copies that an earlier version fenced: a move's source kept its old
-- copy of a shard, until the cleanup dropped it, behind a CHECK (false) NOT
-- VALID constraint named sharded_id_moved on every table, which stopped
-- INSERT and UPDATE but let DELETE and TRUNCATE through (the retirement
-- took the shard's catalog row, so the table's constraint is what names an
-- old copy).  Each table that carries that very constraint, not a
-- temporary one, gets 2.0's fence, which refuses every write with 40001
-- (_fence_table, as _fence_old_copy fences a copy now; a trigger of that
-- name there is replaced).  No other table is touched: only a table's
-- owner adds a constraint to it, so no role fences another's table.  The constraint stays until the copy is
-- dropped, or a take-back removes both (_unfence_old_copy).
DO $fence$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT c.oid::pg_catalog.regclass AS rel
        FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_constraint k ON k.conrelid OPERATOR(pg_catalog.=) c.oid
        WHERE c.relkind IN ('r', 'p') AND c.relpersistence OPERATOR(pg_catalog.<>) 't'
          AND k.contype OPERATOR(pg_catalog.=) 'c' AND NOT k.convalidated
          AND k.conname OPERATOR(pg_catalog.=) 'sharded_id_moved'
          AND pg_catalog.pg_get_constraintdef(k.oid) OPERATOR(pg_catalog.=) 'CHECK (false) NOT VALID'
        ORDER BY 1
    LOOP
        EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS sharded_id_moved ON %s', t.rel);
        PERFORM sharded_id._fence_table(t.rel);
    END LOOP;
END
$fence$;
