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

-- @functions@

-- Old copies that an earlier version fenced: a move's source kept its old
-- copy of a shard, until the cleanup dropped it, behind a CHECK (false) NOT
-- VALID constraint named sharded_id_moved on every table, which stopped
-- INSERT and UPDATE but let DELETE and TRUNCATE through.  Each schema with
-- such a constraint gets 2.0's fence, which refuses every write with 40001
-- (_fence_old_copy), unless it has it; the constraint stays until the copy
-- is dropped, or a take-back removes both (_unfence_old_copy).
SELECT sharded_id._fence_old_copy(n.nspname)
FROM pg_catalog.pg_namespace n
WHERE EXISTS (SELECT FROM pg_catalog.pg_constraint k
              WHERE k.connamespace OPERATOR(pg_catalog.=) n.oid AND k.contype OPERATOR(pg_catalog.=) 'c'
                AND k.conname OPERATOR(pg_catalog.=) 'sharded_id_moved')
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) g.tgrelid
                  WHERE c.relnamespace OPERATOR(pg_catalog.=) n.oid AND g.tgname OPERATOR(pg_catalog.=) 'sharded_id_moved')
ORDER BY n.nspname;
