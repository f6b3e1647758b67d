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

-- Minter numbers that Citus nodes lease from their coordinator (src/citus.c).
CREATE TABLE sharded_id.citus_minters (
    node_key    text PRIMARY KEY,
    minter      integer NOT NULL CHECK (minter >= 0),
    group_id    integer NOT NULL,
    node_name   text NOT NULL,
    node_port   integer NOT NULL,
    stripes     integer NOT NULL,
    node_bits   integer NOT NULL,
    expires_ms  bigint NOT NULL,
    superseded  boolean NOT NULL DEFAULT false,
    renewed_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);

COMMENT ON TABLE sharded_id.citus_minters IS
'on a Citus coordinator: the minter number leased to each node (node_key: system identifier, host and port), the settings it mints with, and the end of its lease in Unix ms; superseded once another server took over its number or its address';

REVOKE ALL ON sharded_id.citus_minters FROM PUBLIC;

-- @functions@
