/* src/sql/router/adopt.sql */

--
-- The router of sharded_id, as an extension of its own: the shard map,
-- route() and route_id(), moves, rebalance, recovery and the ops tables.
-- It lives in sharded_id's schema and needs sharded_id 2.0 or later.
--
-- Up to 1.6 these were sharded_id's.  The update of sharded_id to 2.0
-- drops the router's functions and view and leaves its tables (the shard
-- map, the nodes, the ops tables and the move journal) and the journal's
-- sequence in place, rows and all, as objects of no extension.  Here this
-- extension takes them over (ALTER EXTENSION ... ADD); the CREATE TABLE IF
-- NOT EXISTS statements that follow then leave them as they are.  Run both
-- in one transaction, so that no routed write ever finds route() missing:
--   BEGIN; ALTER EXTENSION sharded_id UPDATE; CREATE EXTENSION sharded_id_router; COMMIT;
--

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION sharded_id_router" to load this file. \quit

-- The privileges of what is taken over stay as the administrator left
-- them, and pg_dump still tells them from the extension's own: each
-- object's privileges are set aside and reset to the defaults before it is
-- added, so that the grants of this script that follow make the same
-- initial privileges (pg_init_privs) as a new install's, and are put back
-- at the end of the script (src/sql/router/adopted.sql).
DO $adopt$
DECLARE
    version text := (SELECT e.extversion FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'sharded_id');
    o record;
    acls jsonb := '[]';
BEGIN
    IF version IS NULL OR pg_catalog.string_to_array(version, '.')::integer[] OPERATOR(pg_catalog.<) '{2,0}' THEN
        RAISE EXCEPTION 'sharded_id_router needs sharded_id 2.0 or later, not %', coalesce(version, 'none')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Up to 1.6 the router was part of sharded_id; its update to 2.0 hands the router''s tables over.',
                  HINT = 'Run ALTER EXTENSION sharded_id UPDATE first, in the same transaction: BEGIN; ALTER EXTENSION sharded_id UPDATE; CREATE EXTENSION sharded_id_router; COMMIT;';
    END IF;
    FOR o IN
        SELECT x.kind, x.name, x.n FROM (VALUES
            ('TABLE', 'sharded_id.nodes', 1), ('TABLE', 'sharded_id.shard_map', 2), ('TABLE', 'sharded_id.ops_tables', 3),
            ('TABLE', 'sharded_id.moves', 4), ('SEQUENCE', 'sharded_id.moves_move_id_seq', 5),
            ('TABLE', 'sharded_id.move_steps', 6), ('TABLE', 'sharded_id.move_cleanup', 7)) AS x(kind, name, n)
        WHERE pg_catalog.to_regclass(x.name) IS NOT NULL
        ORDER BY x.n
    LOOP
        -- Only what the update of sharded_id left: a relation of no
        -- extension.
        IF EXISTS (SELECT FROM pg_catalog.pg_depend d
                   WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                     AND d.objid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(o.name)
                     AND d.deptype OPERATOR(pg_catalog.=) 'e') THEN
            RAISE EXCEPTION 'relation % already belongs to an extension', o.name
                USING ERRCODE = 'duplicate_object',
                      DETAIL = 'sharded_id_router takes over only the router tables that the update of sharded_id to 2.0 left.',
                      HINT = 'Update sharded_id to 2.0 or later first (ALTER EXTENSION sharded_id UPDATE).';
        END IF;
        -- Its catalog row is written below as GRANT writes it, under a lock
        -- that keeps VACUUM's in-place updates of the row away until the
        -- transaction ends (adopted.sql writes it again).
        IF o.kind OPERATOR(pg_catalog.=) 'TABLE' THEN
            EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE UPDATE EXCLUSIVE MODE', o.name);
        END IF;
        acls := acls OPERATOR(pg_catalog.||) (SELECT pg_catalog.jsonb_build_object('class', 'pg_class', 'oid', c.oid, 'acl', c.relacl::text)
                                              FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(o.name));
        UPDATE pg_catalog.pg_class c SET relacl = NULL WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(o.name);
        -- Its columns' privileges too: ALTER EXTENSION ... ADD makes them
        -- initial privileges as well.
        acls := acls OPERATOR(pg_catalog.||) COALESCE((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('class', 'pg_attribute', 'oid', a.attrelid, 'attnum', a.attnum, 'acl', a.attacl::text))
                                                       FROM pg_catalog.pg_attribute a
                                                       WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(o.name)
                                                         AND a.attnum OPERATOR(pg_catalog.>) 0 AND a.attacl IS NOT NULL), '[]');
        UPDATE pg_catalog.pg_attribute a SET attacl = NULL
        WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(o.name) AND a.attnum OPERATOR(pg_catalog.>) 0 AND a.attacl IS NOT NULL;
        EXECUTE pg_catalog.format('ALTER EXTENSION sharded_id_router ADD %s %s', o.kind, o.name);
    END LOOP;
    -- route() and route_id(), which the application's routing functions
    -- may depend on (BEGIN ATOMIC), are kept and re-created in place
    -- (CREATE OR REPLACE, src/sql/router/moves.sql).
    FOR o IN
        SELECT x.name FROM (VALUES ('sharded_id.route(integer, text)'), ('sharded_id.route_id(bigint, text)')) AS x(name)
        WHERE pg_catalog.to_regprocedure(x.name) IS NOT NULL
          AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                          WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
                            AND d.objid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure(x.name)
                            AND d.deptype OPERATOR(pg_catalog.=) 'e')
    LOOP
        acls := acls OPERATOR(pg_catalog.||) (SELECT pg_catalog.jsonb_build_object('class', 'pg_proc', 'oid', p.oid, 'acl', p.proacl::text)
                                              FROM pg_catalog.pg_proc p WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure(o.name));
        UPDATE pg_catalog.pg_proc p SET proacl = NULL WHERE p.oid OPERATOR(pg_catalog.=) pg_catalog.to_regprocedure(o.name);
        EXECUTE pg_catalog.format('ALTER EXTENSION sharded_id_router ADD FUNCTION %s', o.name);
    END LOOP;
    PERFORM pg_catalog.set_config('sharded_id_router.adopted_acls', acls::text, true);
END
$adopt$;

