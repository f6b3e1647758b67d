/* src/sql/updates/sharded_id--1.5--1.6.sql: the hand-written part of the
 * update from 1.5 to 1.6.  make puts every function statement of
 * src/sql/api/ in at the "@functions@" line below (src/sql/functions.awk),
 * so that a function's text is written once; this file holds only what a
 * CREATE OR REPLACE cannot do: catalog and data changes, and the functions
 * dropped or whose signature changed. */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '1.6'" to load this file. \quit

-- Who retired a shard: a role that is not a superuser takes back only what
-- it retired.  Rows from before record the role running the update, so
-- that only a superuser takes those shards back.
ALTER TABLE sharded_id.retired_shards ADD COLUMN retired_by name DEFAULT CURRENT_USER;

COMMENT ON COLUMN sharded_id.retired_shards.retired_by IS
'the role that retired the shard: a role that is not a superuser takes back only what it, or a role whose privileges it has, retired';

-- The provisioning role is made by sharded_id._provisioner_role(), which
-- the install runs too: its call comes with the functions below.

-- 1.5's provisioning recipe granted DML on the catalogs: since 1.6 only
-- their owner writes them (src/privs.c), so that no grant can undo a
-- retirement.  Reading stays open to everyone.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT DISTINCT c.oid::regclass AS rel, c.relkind,
               CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                    ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END AS grantee
        FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
        WHERE c.oid IN ('sharded_id.settings'::regclass, 'sharded_id.shards'::regclass,
                        'sharded_id.shard_tables'::regclass, 'sharded_id.retired_shards'::regclass,
                        'sharded_id.shard_tables_position_seq'::regclass)
          AND a.grantee <> c.relowner AND a.privilege_type <> 'SELECT'
    LOOP
        EXECUTE pg_catalog.format('REVOKE %s ON %s %s FROM %s',
                                  CASE WHEN r.relkind = 'S' THEN 'USAGE, UPDATE'
                                       ELSE 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER' END,
                                  CASE WHEN r.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
                                  r.rel, r.grantee);
    END LOOP;
END
$$;

-- @functions@
