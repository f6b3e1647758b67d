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
