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

-- A move's target reads the source's sequence positions as data, and sets
-- them itself (_node_sequence_positions, _node_register_shard).
DROP FUNCTION sharded_id._move_setvals(text, name);
-- The target chooses its subscription's options by its own version
-- (_node_subscribe).
DROP FUNCTION sharded_id._move_subscription_options(sharded_id.moves);

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
