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
-- Its comment is src/sql/api/shards.sql's, carried in at @functions@.
ALTER TABLE sharded_id.retired_shards ADD COLUMN retired_by name DEFAULT CURRENT_USER;

-- When a move's cleanup found the new copy the same schema as the old one,
-- which may then be dropped (its comment is moves.sql's).  A move of 1.5
-- that is still unfinished is checked when it is recovered.
ALTER TABLE sharded_id.moves ADD COLUMN copy_checked_at timestamptz;

-- 1.5's provisioning recipe granted EXECUTE ON ALL FUNCTIONS and ALL
-- PROCEDURES IN SCHEMA sharded_id, which 1.6 replaces with one grant
-- (sharded_id_provisioner).  Give every function of the extension the
-- privileges of a fresh install: revoke EXECUTE here from every grantee but
-- its owner and PUBLIC (CASCADE: also what they granted on with GRANT
-- OPTION), but pg_monitor's two that the install gives too, and the grants
-- of counter mode's next_id functions, which 1.5 too revoked from PUBLIC:
-- the column defaults of counter-mode shards call them as the writers they
-- were granted to.  The install's own REVOKE and GRANT statements, which
-- come with the functions below, then make PUBLIC's and
-- sharded_id_provisioner's what a fresh install gives.  This also takes
-- away explicit grants of route() and route_id(): 1.5 gave them to PUBLIC,
-- so such a grant came from the recipe, which gave the moves and the
-- router's administration with them; 1.6 wants them granted again to the
-- roles that call the router (the reference's upgrade notes).
DO $$
DECLARE
    r record;
    roles text;
BEGIN
    FOR r IN
        SELECT DISTINCT p.oid::regprocedure AS fn, p.prokind,
               pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) AS grantee
        FROM pg_catalog.pg_depend d
        JOIN pg_catalog.pg_proc p ON p.oid = d.objid
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
        WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
          AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
          AND d.refobjid = (SELECT e.oid FROM pg_catalog.pg_extension e WHERE e.extname = 'sharded_id')
          AND d.deptype = 'e'
          AND a.grantee <> 0 AND a.grantee <> p.proowner
          -- the install's own grants to pg_monitor (src/sql/api/monitor.sql),
          -- which 1.5 made too: kept, not revoked and granted again
          AND NOT (a.grantee = 'pg_monitor'::pg_catalog.regrole
                   AND p.oid IN ('sharded_id.generator_stats()'::pg_catalog.regprocedure,
                                 'sharded_id.generator_info()'::pg_catalog.regprocedure))
          -- counter mode's minting, which 1.5 too granted only to the
          -- writers that an owner named: a grant of it is an application's
          AND p.oid NOT IN ('sharded_id.next_id(integer)'::pg_catalog.regprocedure,
                            'sharded_id.next_id_in_layout(integer, text)'::pg_catalog.regprocedure,
                            'sharded_id.next_ids(integer, integer)'::pg_catalog.regprocedure,
                            'sharded_id.next_ids_in_layout(integer, integer, text)'::pg_catalog.regprocedure)
        ORDER BY 3, 1
    LOOP
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON %s %s FROM %s CASCADE',
                                  CASE WHEN r.prokind = 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
                                  r.fn, r.grantee);
        IF roles IS NULL OR pg_catalog.strpos(', ' || roles || ', ', ', ' || r.grantee || ', ') = 0 THEN
            roles := pg_catalog.concat_ws(', ', roles, r.grantee);
        END IF;
    END LOOP;
    IF roles IS NOT NULL THEN
        -- A WARNING: ALTER EXTENSION runs its script with client_min_messages
        -- at least warning, so a NOTICE would reach no one.
        RAISE WARNING 'revoked EXECUTE on functions of sharded_id from %', roles
            USING DETAIL = 'A fresh install of 1.6 grants them none of these functions; 1.5''s provisioning grants gave them internal and administrative ones.  Grants of next_id(integer) and its counter-mode variants are kept.',
                  HINT = 'Grant sharded_id_provisioner to the roles that provision shards, and EXECUTE on sharded_id.route and sharded_id.route_id to the roles that call the router.';
    END IF;
END
$$;

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

-- The journal of a move's steps is a function now, which the procedures
-- commit after (_move_journal_step).
DROP PROCEDURE sharded_id._move_journal(bigint, text);

-- @functions@
