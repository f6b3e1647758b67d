/* src/sql/updates/sharded_id--1.6--2.0.sql: the hand-written part of the
 * update from 1.6 to 2.0.  make puts every function statement of
 * src/sql/api/ in at the "@functions@" line below (src/sql/functions.awk),
 * so that a function's text is written once; this file holds only what a
 * CREATE OR REPLACE cannot do: catalog and data changes, and the functions
 * dropped or whose signature changed. */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '2.0'" to load this file. \quit

-- The step that creates a move's publication and slot takes the move's
-- timeout: the slot's creation is watched and bounded.
DROP FUNCTION sharded_id._move_create_publication(sharded_id.moves);

-- The router is an extension of its own from 2.0 on, sharded_id_router.
-- Its functions and view go; its tables (the nodes, the shard map, the ops
-- tables and the move journal) and the journal's sequence stay, with their
-- rows, as objects of no extension, until CREATE EXTENSION
-- sharded_id_router takes them over (src/sql/router/adopt.sql).  Run both
-- in one transaction, so that no routed write finds route() missing:
--   BEGIN; ALTER EXTENSION sharded_id UPDATE; CREATE EXTENSION sharded_id_router; COMMIT;
-- The node side of moves (marks, retirements, fences, fingerprints and the
-- schema DDL of a move) stays here.
DROP VIEW sharded_id.move_progress;
-- (_partition_connstr first: its body names two of the others.)
DROP ROUTINE sharded_id._partition_connstr(text);
DROP ROUTINE sharded_id._apply_shard_map(name,integer,integer,boolean);
DROP ROUTINE sharded_id._attach_ops_partition(regclass,integer);
DROP ROUTINE sharded_id._attach_ops_partitions(regclass);
DROP ROUTINE sharded_id._check_map_arguments(name,integer,integer);
DROP ROUTINE sharded_id._check_move_arguments(text,name,bigint,interval,interval);
DROP ROUTINE sharded_id._cluster_mapping(name,integer,text);
DROP ROUTINE sharded_id._connstr_options(text);
DROP ROUTINE sharded_id._connstr_public(text,boolean);
DROP ROUTINE sharded_id._connstr_secrets(text,boolean);
DROP ROUTINE sharded_id._dblink_schema();
DROP ROUTINE sharded_id._lock_route(integer);
DROP ROUTINE sharded_id._move_catch_up(sharded_id.moves,interval);
DROP ROUTINE sharded_id._move_check_call(integer,text,text,boolean,name,bigint,interval,interval);
DROP ROUTINE sharded_id._move_check_copy(sharded_id.moves);
DROP ROUTINE sharded_id._move_check_floors(text,text,text,integer);
DROP ROUTINE sharded_id._move_check_online_owners(text,text,integer,name,text);
DROP ROUTINE sharded_id._move_check_replica_identity(text,name);
DROP ROUTINE sharded_id._move_check_row_security(text,text,text,text,integer,name);
DROP ROUTINE sharded_id._move_check_schema(text,name);
DROP ROUTINE sharded_id._move_check_source_holds(text,text,integer);
DROP ROUTINE sharded_id._move_check_target_free(text,text,integer,name);
DROP ROUTINE sharded_id._move_check_versions(text,text);
DROP ROUTINE sharded_id._move_choose_method(text,text,integer,text);
DROP ROUTINE sharded_id._move_claim(integer);
DROP ROUTINE sharded_id._move_claim_move(bigint);
DROP ROUTINE sharded_id._move_cleanup(sharded_id.moves,boolean);
DROP ROUTINE sharded_id._move_cleanup_hold(sharded_id.moves,sharded_id.move_cleanup,text);
DROP ROUTINE sharded_id._move_compare(sharded_id.moves,text,text);
DROP ROUTINE sharded_id._move_compare_frozen(sharded_id.moves,interval,interval);
DROP ROUTINE sharded_id._move_conn(bigint,text,text);
DROP ROUTINE sharded_id._move_copy(sharded_id.moves,interval);
DROP ROUTINE sharded_id._move_copy_rows(sharded_id.moves);
DROP ROUTINE sharded_id._move_deferred_cleanup(bigint);
DROP ROUTINE sharded_id._move_drop_mark(sharded_id.moves,sharded_id.move_cleanup,text);
DROP ROUTINE sharded_id._move_drop_publication(sharded_id.moves,sharded_id.move_cleanup,text);
DROP ROUTINE sharded_id._move_drop_schema(sharded_id.moves,sharded_id.move_cleanup,text);
DROP ROUTINE sharded_id._move_drop_slot(sharded_id.moves,sharded_id.move_cleanup,text);
DROP ROUTINE sharded_id._move_drop_subscription(sharded_id.moves,sharded_id.move_cleanup,text);
DROP ROUTINE sharded_id._move_end_freeze(sharded_id.moves,text,text);
DROP ROUTINE sharded_id._move_follow_ops(sharded_id.moves);
DROP ROUTINE sharded_id._move_follow_ops_after_switch(sharded_id.moves);
DROP ROUTINE sharded_id._move_freeze(sharded_id.moves,interval,interval);
DROP ROUTINE sharded_id._move_freeze_source(sharded_id.moves,interval);
DROP ROUTINE sharded_id._move_hold(text);
DROP ROUTINE sharded_id._move_journal_start(integer,text,text,text,name,name);
DROP ROUTINE sharded_id._move_journal_step(bigint,text);
DROP ROUTINE sharded_id._move_lock_route(sharded_id.moves,interval);
DROP ROUTINE sharded_id._move_lost_sync_slots(sharded_id.moves);
DROP ROUTINE sharded_id._move_open(sharded_id.moves,text);
DROP ROUTINE sharded_id._move_open_freeze(sharded_id.moves);
DROP ROUTINE sharded_id._move_pending_cleanups(integer);
DROP ROUTINE sharded_id._move_plan(integer,text,text,name,boolean);
DROP ROUTINE sharded_id._move_record_objects(sharded_id.moves);
DROP ROUTINE sharded_id._move_recover_begin(bigint);
DROP ROUTINE sharded_id._move_register_target(sharded_id.moves);
DROP ROUTINE sharded_id._move_report(bigint,text,text,text,text,boolean,text);
DROP ROUTINE sharded_id._move_resolve(bigint);
DROP ROUTINE sharded_id._move_retire_source(sharded_id.moves);
DROP ROUTINE sharded_id._move_setvals(text,name);
DROP ROUTINE sharded_id._move_step(bigint,text,bigint,interval,interval);
DROP ROUTINE sharded_id._move_steps(text);
DROP ROUTINE sharded_id._move_stop_canceled(sharded_id.moves,text,text);
DROP ROUTINE sharded_id._move_stop_replication(sharded_id.moves);
DROP ROUTINE sharded_id._move_subscribe(sharded_id.moves);
DROP ROUTINE sharded_id._move_subscription_connstr(sharded_id.moves);
DROP ROUTINE sharded_id._move_subscription_options(sharded_id.moves);
DROP ROUTINE sharded_id._move_switch(sharded_id.moves);
DROP ROUTINE sharded_id._move_take_back(sharded_id.moves,text);
DROP ROUTINE sharded_id._move_take_step(sharded_id.moves,text,bigint,interval,interval);
DROP ROUTINE sharded_id._move_try_deferred_cleanup(bigint);
DROP ROUTINE sharded_id._move_try_resolve(bigint);
DROP ROUTINE sharded_id._move_unfinished(integer);
DROP ROUTINE sharded_id._move_wait_lag(sharded_id.moves,bigint,interval);
DROP ROUTINE sharded_id._move_will_create(bigint,text,text,text,text);
DROP ROUTINE sharded_id._moves_unfinished();
DROP ROUTINE sharded_id._rebalance_begin(text[],text,boolean,name);
DROP ROUTINE sharded_id._rebalance_moves(text[]);
DROP ROUTINE sharded_id._remote(text,text);
DROP ROUTINE sharded_id._remote_close(text);
DROP ROUTINE sharded_id._remote_close_all(text);
DROP ROUTINE sharded_id._remote_exec(text,text);
DROP ROUTINE sharded_id._remote_exists(text,text);
DROP ROUTINE sharded_id._remote_json(text,text);
DROP ROUTINE sharded_id._remote_open(text,text);
DROP ROUTINE sharded_id._remote_rows(text,text);
DROP ROUTINE sharded_id._set_mapping_options(name,text[]);
DROP ROUTINE sharded_id._set_server_options(name,name,text[]);
DROP ROUTINE sharded_id.apply_shard_map(name,integer,integer);
DROP ROUTINE sharded_id.create_ops_table(regclass,name,name);
DROP ROUTINE sharded_id.move_shard(integer,text,text,boolean,name,bigint,interval,interval);
DROP ROUTINE sharded_id.node_server(text);
DROP ROUTINE sharded_id.place_shard(integer,text,name);
DROP ROUTINE sharded_id.rebalance(text[],text,boolean,name);
DROP ROUTINE sharded_id.rebalance_plan(text[]);
DROP ROUTINE sharded_id.recover_moves();
-- route() and route_id() are kept too: the application's routing
-- functions (BEGIN ATOMIC) depend on them; sharded_id_router takes them over.
ALTER EXTENSION sharded_id DROP FUNCTION sharded_id.route(integer, text);
ALTER EXTENSION sharded_id DROP FUNCTION sharded_id.route_id(bigint, text);
ALTER EXTENSION sharded_id DROP TABLE sharded_id.move_cleanup;
ALTER EXTENSION sharded_id DROP TABLE sharded_id.move_steps;
ALTER EXTENSION sharded_id DROP TABLE sharded_id.moves;
ALTER EXTENSION sharded_id DROP SEQUENCE sharded_id.moves_move_id_seq;
ALTER EXTENSION sharded_id DROP TABLE sharded_id.ops_tables;
ALTER EXTENSION sharded_id DROP TABLE sharded_id.shard_map;
ALTER EXTENSION sharded_id DROP TABLE sharded_id.nodes;


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
