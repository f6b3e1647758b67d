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


-- @functions@

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
