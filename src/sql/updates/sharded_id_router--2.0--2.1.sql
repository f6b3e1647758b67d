/* src/sql/updates/sharded_id_router--2.0--2.1.sql: the hand-written part
 * of the router's update from 2.0 to 2.1.  make puts every function
 * statement of src/sql/router/router.sql and moves.sql in at the
 * "@functions@" line below (src/sql/functions.awk); this file holds only
 * catalog and data changes, and the functions dropped or whose signature
 * changed. */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id_router UPDATE TO '2.1'" to load this file. \quit

-- @functions@
