--
-- Internal functions refuse a role that is not a superuser, whatever the
-- grants.  A LOGIN role gets 1.5's blanket recipe on 1.6 (EXECUTE ON ALL
-- FUNCTIONS and ALL PROCEDURES IN SCHEMA sharded_id): every internal
-- function ("_" name) that a fresh install grants neither PUBLIC nor
-- sharded_id_provisioner is called as that role with non-null dummy
-- arguments, and must fail with 42501 from the check of internal functions,
-- it does anything (at the latest in its DECLARE, where an initializer
-- calls another internal function, which refuses).  The list comes from pg_proc, so a new internal
-- function is covered without a change here (but shows in the output).
--
-- The router's internal functions too.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sharded_id_router CASCADE;
RESET client_min_messages;
CREATE ROLE internals_app LOGIN;
-- What a fresh install grants PUBLIC and the provisioner, before the
-- blanket grant hides it.
CREATE TEMP TABLE internals_fresh AS
SELECT p.oid AS fn, p.proname,
       has_function_privilege('public', p.oid, 'EXECUTE') AS to_public,
       has_function_privilege('sharded_id_provisioner', p.oid, 'EXECUTE') AS to_provisioner
FROM pg_proc p WHERE p.pronamespace = 'sharded_id'::regnamespace;
GRANT USAGE ON SCHEMA sharded_id TO internals_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sharded_id TO internals_app;
GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA sharded_id TO internals_app;
SELECT rolsuper FROM pg_roles WHERE rolname = 'internals_app';

-- The internal functions of neither PUBLIC nor the provisioner.
SELECT count(*) > 40 AS many,
       count(*) FILTER (WHERE to_public) AS public_internal_functions
FROM internals_fresh WHERE proname LIKE '\_%' AND NOT to_provisioner;
SELECT string_agg(proname, ' ' ORDER BY proname) AS public_internal_functions
FROM internals_fresh WHERE proname LIKE '\_%' AND to_public;

-- One call per function, with non-null arguments of its types (a
-- variadic one's array passed as such).
CREATE TEMP TABLE internals_calls AS
SELECT f.proname, p.oid::regprocedure AS fn,
       format('%s sharded_id.%I(%s)', CASE WHEN p.prokind = 'p' THEN 'CALL' ELSE 'SELECT' END, p.proname,
              coalesce((SELECT string_agg(
                  CASE WHEN p.provariadic <> 0 AND a.n = p.pronargs THEN 'VARIADIC ' ELSE '' END ||
                  format('%L::%s',
                         CASE WHEN t.typtype = 'c' THEN
                                  '(' || repeat(',', (SELECT count(*)::int - 1 FROM pg_attribute a
                                                      WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped)) || ')'
                              WHEN t.oid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype, 'oid'::regtype) THEN '1'
                              WHEN t.oid = 'bool'::regtype THEN 'false'
                              WHEN t.oid = 'interval'::regtype THEN '1 s'
                              WHEN t.oid = 'regclass'::regtype THEN 'sharded_id.shards'
                              WHEN t.oid IN ('json'::regtype, 'jsonb'::regtype) THEN '{}'
                              WHEN t.typcategory = 'A' THEN '{}'
                              ELSE 'x' END,
                         format_type(t.oid, NULL)), ', ' ORDER BY a.n)
                 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(typ, n)
                 JOIN pg_type t ON t.oid = a.typ), '')) AS call
FROM internals_fresh f JOIN pg_proc p ON p.oid = f.fn
WHERE f.proname LIKE '\_%' AND NOT f.to_public AND NOT f.to_provisioner
  AND p.prorettype <> 'trigger'::regtype;
GRANT SELECT ON internals_calls TO internals_app;
CREATE TEMP TABLE internals_outcome (proname name, fn text, outcome text);
GRANT INSERT ON internals_outcome TO internals_app;

SET ROLE internals_app;
DO $$
DECLARE
    c record;
    state text;
    msg text;
BEGIN
    FOR c IN SELECT * FROM internals_calls ORDER BY proname, fn::text LOOP
        BEGIN
            EXECUTE c.call;
            INSERT INTO internals_outcome VALUES (c.proname, c.fn::text, 'ran: ' || c.call);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
            INSERT INTO internals_outcome VALUES (c.proname, c.fn::text,
                CASE WHEN state = '42501' AND msg LIKE 'permission denied for function sharded\_id.\_%'
                     THEN 'refused' ELSE format('%s %s: %s', state, msg, c.call) END);
        END;
    END LOOP;
END
$$;
RESET ROLE;

-- Trigger functions are left out above: PostgreSQL calls them only as the
-- triggers that a superuser made (_fence_old_copy), never from a query.
SELECT p.oid::regprocedure AS trigger_function
FROM pg_proc p
WHERE p.pronamespace = 'sharded_id'::regnamespace AND p.prorettype = 'trigger'::regtype;

-- Every one refused; none ran or failed otherwise.
SELECT outcome, count(*) FROM internals_outcome GROUP BY 1 ORDER BY 1;
SELECT fn, outcome FROM internals_outcome WHERE outcome <> 'refused' ORDER BY 1;
SELECT proname AS refused FROM internals_outcome WHERE outcome = 'refused' ORDER BY 1;

-- The same under SET ROLE from a session that logged in as the role, and
-- for the administrative entry points that go through them: apply_shard_map,
-- place_shard, move_shard, recover_moves.
-- (Terse: the context lines differ between majors.)
\set VERBOSITY terse
SET SESSION AUTHORIZATION internals_app;
SELECT sharded_id._remote_exec('c', 'SELECT 1');
SELECT sharded_id._move_hold('freeze');
SELECT count(*) FROM sharded_id._schema_fingerprint('pg_catalog');
SELECT sharded_id.apply_shard_map('sharded_id', 60, 0);
SELECT sharded_id.place_shard(3, 'n1');
CALL sharded_id.move_shard(3, 'n1');
CALL sharded_id.recover_moves();
SELECT sharded_id._lock_route(3);
SELECT sharded_id._superuser_only(NULL);
SELECT count(*) AS route_locks_held FROM pg_locks
WHERE locktype = 'advisory' AND pid = pg_backend_pid();
RESET SESSION AUTHORIZATION;
\set VERBOSITY default
SELECT rolsuper FROM pg_roles WHERE rolname = 'internals_app';
SELECT count(*) AS moves FROM sharded_id.moves;

-- A superuser still passes the check.
SELECT sharded_id._superuser_only('sharded_id.x');
SELECT sharded_id._move_hold('no such point');

DROP TABLE internals_calls, internals_outcome, internals_fresh;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sharded_id FROM internals_app;
REVOKE ALL ON ALL PROCEDURES IN SCHEMA sharded_id FROM internals_app;
REVOKE USAGE ON SCHEMA sharded_id FROM internals_app;
DROP ROLE internals_app;
SET client_min_messages = warning;
DROP EXTENSION sharded_id_router;
DROP EXTENSION plproxy;
DROP EXTENSION postgres_fdw CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
