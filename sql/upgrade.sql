--
-- The upgrade chain.  A fresh install of the default version runs one
-- script, made by make from src/sql/api/; an update runs the frozen scripts
-- of every release and then the deltas.  Both must give the same extension,
-- object by object: functions (definition, labels, settings, privileges,
-- comment), tables and views (columns, defaults, constraints, indexes,
-- definitions, privileges, comment), sequences, and the tables pg_dump keeps (pg_extension_config_dump).
-- Column defaults made under 1.0 keep working after the update.
-- From 2.0 on the router is an extension of its own, sharded_id_router:
-- sharded_id alone has no router or move object, and an updated 1.x
-- router, once CREATE EXTENSION sharded_id_router has taken over the
-- tables the update left, has the objects of a fresh sharded_id and
-- sharded_id_router.
--
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS sharded_id_router;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
CREATE EXTENSION IF NOT EXISTS plproxy;
RESET client_min_messages;
SELECT e.source, e.path
FROM pg_extension_update_paths('sharded_id') e
JOIN pg_available_extensions a ON a.name = 'sharded_id' AND e.target = a.default_version
ORDER BY e.source;

CREATE FUNCTION pg_temp.extension_objects()
RETURNS TABLE (object text, definition text)
LANGUAGE sql AS $$
    SELECT e.extname || ': ' || pg_describe_object(d.classid, d.objid, d.objsubid),
           concat_ws(E'\n',
               CASE WHEN d.classid = 'pg_proc'::regclass THEN
                   (SELECT concat_ws(' ', md5(pg_get_functiondef(p.oid)), p.provolatile, p.proparallel,
                                     p.proisstrict, p.prosecdef, p.proconfig::text,
                                     -- the privileges, in a fixed order, a default ACL spelt out
                                     (SELECT string_agg(x::text, ',' ORDER BY x::text)
                                      FROM unnest(coalesce(p.proacl, acldefault('f', p.proowner))) x))
                    FROM pg_proc p WHERE p.oid = d.objid)
               END,
               CASE WHEN d.classid = 'pg_class'::regclass THEN
                   (SELECT concat_ws(E'\n', c.relkind, c.relacl::text,
                       CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END,
                       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                                          || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
                                          || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), ''),
                                          ', ' ORDER BY a.attnum)
                        FROM pg_attribute a
                        LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                        WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                       (SELECT string_agg(co.conname || ': ' || pg_get_constraintdef(co.oid), E'\n' ORDER BY co.conname)
                        FROM pg_constraint co WHERE co.conrelid = c.oid),
                       (SELECT string_agg(pg_get_indexdef(i.indexrelid), E'\n' ORDER BY 1)
                        FROM pg_index i WHERE i.indrelid = c.oid),
                       (SELECT concat_ws(' ', s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache)
                        FROM pg_sequence s WHERE s.seqrelid = c.oid))
                    FROM pg_class c WHERE c.oid = d.objid)
               END,
               'comment: ' || obj_description(d.objid, (SELECT relname FROM pg_class WHERE oid = d.classid)))
    FROM pg_depend d
    JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
    WHERE e.extname IN ('sharded_id', 'sharded_id_router') AND d.deptype = 'e'
    UNION ALL
    SELECT e.extname || ': config dump of ' || cfg.rel::regclass::text, 'where: ' || cfg.cond
    FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS cfg(rel, cond)
    WHERE e.extname IN ('sharded_id', 'sharded_id_router')
    UNION ALL
    SELECT extname || ': extension', concat_ws(' ', extnamespace::regnamespace, extrelocatable)
    FROM pg_extension WHERE extname IN ('sharded_id', 'sharded_id_router')
$$;

-- sharded_id alone: no object of the router or of a move's router side.
SELECT object FROM pg_temp.extension_objects()
WHERE object ~ '(shard_map|\mnodes\M|\mmoves\M|move_steps|move_cleanup|move_progress|ops_table|move_shard|\mroute|_lock_route|rebalance|recover_moves|apply_shard_map|place_shard|\mnode_server\M|_remote|_connstr|_move_plan|_dblink)'
ORDER BY 1;
SELECT count(*) AS router_objects_in_sharded_id FROM pg_temp.extension_objects() WHERE object LIKE 'sharded_id_router: %';
CREATE EXTENSION sharded_id_router;
SELECT count(*) > 100 AS router_objects, count(*) FILTER (WHERE object LIKE '%shard_map%') > 0 AS has_shard_map,
       count(*) FILTER (WHERE object LIKE '%move_shard%') AS has_move_shard
FROM pg_temp.extension_objects() WHERE object LIKE 'sharded_id_router: %';

-- The extension as installed fresh at the default version.
CREATE TEMP TABLE fresh AS SELECT * FROM pg_temp.extension_objects();
SELECT count(*) > 50 AS fresh_has_objects,
       count(*) FILTER (WHERE object LIKE '%: config dump of %') AS config_dumps
FROM fresh;

-- Each released version, installed and updated, against the fresh install.
CREATE TEMP TABLE differences (source text, side text, object text, definition text);
DO $$
DECLARE
    source text;
BEGIN
    FOR source IN
        SELECT e.source FROM pg_extension_update_paths('sharded_id') e
        JOIN pg_available_extensions a ON a.name = 'sharded_id' AND e.target = a.default_version
        WHERE e.path IS NOT NULL ORDER BY e.source
    LOOP
        DROP EXTENSION sharded_id_router;
        DROP EXTENSION sharded_id;
        EXECUTE format('CREATE EXTENSION sharded_id VERSION %L', source);
        ALTER EXTENSION sharded_id UPDATE;
        CREATE EXTENSION sharded_id_router;
        INSERT INTO differences
        (SELECT source, 'only fresh', * FROM fresh EXCEPT SELECT source, 'only fresh', * FROM pg_temp.extension_objects())
        UNION ALL
        (SELECT source, 'only updated', * FROM pg_temp.extension_objects() EXCEPT SELECT source, 'only updated', * FROM fresh);
        RAISE NOTICE 'updated from %', source;
    END LOOP;
END
$$;
SELECT source, side, object, definition FROM differences ORDER BY 1, 2, 3;

-- The router, installed at 2.0 and updated, against the fresh install.
DROP EXTENSION sharded_id_router;
DROP EXTENSION sharded_id;
CREATE EXTENSION sharded_id;
CREATE EXTENSION sharded_id_router VERSION '2.0';
ALTER EXTENSION sharded_id_router UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'sharded_id_router';
(SELECT 'only fresh' AS side, * FROM fresh EXCEPT SELECT 'only fresh', * FROM pg_temp.extension_objects())
UNION ALL
(SELECT 'only updated', * FROM pg_temp.extension_objects() EXCEPT SELECT 'only updated', * FROM fresh)
ORDER BY 1, 2;

-- Defaults from before the update still mint ids of their shard.
DROP EXTENSION sharded_id_router;
DROP EXTENSION sharded_id;
CREATE EXTENSION sharded_id VERSION '1.0';
CREATE SCHEMA up;
CREATE SEQUENCE up.seq;
CREATE TABLE up.t (id bigint DEFAULT sharded_id.next_id(21, 'up.seq') PRIMARY KEY, v int);
INSERT INTO up.t (v) VALUES (1);
ALTER EXTENSION sharded_id UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'sharded_id';
INSERT INTO up.t (v) VALUES (2);
SELECT v, sharded_id.shard_id(id) AS shard FROM up.t ORDER BY v;
-- The router's tables that the update left go with the router.
CREATE EXTENSION sharded_id_router;
DROP EXTENSION sharded_id_router;

DROP SCHEMA up CASCADE;

-- 1.5's provisioning recipe, applied before the update, keeps no EXECUTE
-- that a fresh 1.6 does not give: not the blanket grants, not one given on
-- with GRANT OPTION, not route().  pg_monitor keeps its two, and a writer
-- its grant of counter mode's next_id(integer), which its column defaults
-- call.
CREATE ROLE upgrade_app15 LOGIN;
CREATE ROLE upgrade_app15b LOGIN;
CREATE ROLE upgrade_writer LOGIN;
DROP EXTENSION sharded_id;
CREATE EXTENSION sharded_id VERSION '1.5';
GRANT USAGE ON SCHEMA sharded_id TO upgrade_app15;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sharded_id TO upgrade_app15;
GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA sharded_id TO upgrade_app15;
GRANT SELECT, INSERT, UPDATE, DELETE ON sharded_id.settings, sharded_id.shards, sharded_id.shard_tables,
      sharded_id.retired_shards TO upgrade_app15;
GRANT EXECUTE ON FUNCTION sharded_id.floors() TO upgrade_app15 WITH GRANT OPTION;
SET ROLE upgrade_app15;
GRANT EXECUTE ON FUNCTION sharded_id.floors() TO upgrade_app15b;
RESET ROLE;
GRANT EXECUTE ON FUNCTION sharded_id.next_id(integer) TO upgrade_writer;
SELECT count(*) > 30 AS recipe_functions FROM pg_proc p
WHERE p.pronamespace = 'sharded_id'::regnamespace AND has_function_privilege('upgrade_app15', p.oid, 'EXECUTE')
  AND NOT has_function_privilege('public', p.oid, 'EXECUTE');
-- An old copy of a shard that moved away, fenced as 1.5 and 1.6 did: a
-- CHECK (false) NOT VALID constraint on each table that is not a partition
-- (partitions inherit it).  Beside it, a table of another schema with
-- another constraint of that name, which the update leaves alone.
SELECT sharded_id.create_shard(4090, 'old_copy') IS NOT NULL AS created;
CREATE TABLE public.not_a_copy (id bigint CONSTRAINT sharded_id_moved CHECK (id > 0));
CREATE TABLE old_copy.t (id bigint PRIMARY KEY, v text);
CREATE TABLE old_copy.p (id bigint, v text) PARTITION BY RANGE (id);
CREATE TABLE old_copy.p1 PARTITION OF old_copy.p FOR VALUES FROM (0) TO (100);
INSERT INTO old_copy.t VALUES (1, 'kept'), (2, 'kept');
INSERT INTO old_copy.p VALUES (1, 'kept');
SELECT sharded_id.retire_shard(4090) IS NOT NULL AS retired;
SELECT sharded_id._on_schema_tables('old_copy', 'ALTER TABLE %s ADD CONSTRAINT sharded_id_moved CHECK (false) NOT VALID');
DELETE FROM old_copy.t WHERE id = 2;
ALTER EXTENSION sharded_id UPDATE;
CREATE EXTENSION sharded_id_router;
SELECT extversion FROM pg_extension WHERE extname = 'sharded_id';
-- The update fences it as 2.0 does: every write is refused, DELETE and
-- TRUNCATE too, on partitions as well, and every row stays.
\set VERBOSITY sqlstate
DELETE FROM old_copy.t;
TRUNCATE old_copy.t;
DELETE FROM old_copy.p1;
UPDATE old_copy.p SET v = 'changed';
INSERT INTO old_copy.t VALUES (3, 'new');
\set VERBOSITY default
SELECT (SELECT count(*) FROM old_copy.t) AS t_rows, (SELECT count(*) FROM old_copy.p) AS p_rows;
INSERT INTO public.not_a_copy VALUES (1);
SELECT count(*) AS triggers_elsewhere FROM pg_trigger WHERE tgname = 'sharded_id_moved' AND tgrelid = 'public.not_a_copy'::regclass;
DROP TABLE public.not_a_copy;
DROP SCHEMA IF EXISTS old_copy CASCADE;
DELETE FROM sharded_id.retired_shards WHERE shard_id = 4090;
-- Beyond PUBLIC's: counter mode's next_id functions only.
SELECT r.rolname, p.oid::regprocedure AS still_executable
FROM pg_proc p, pg_roles r
WHERE p.pronamespace = 'sharded_id'::regnamespace
  AND r.rolname IN ('upgrade_app15', 'upgrade_app15b', 'upgrade_writer')
  AND has_function_privilege(r.oid, p.oid, 'EXECUTE') AND NOT has_function_privilege('public', p.oid, 'EXECUTE')
ORDER BY 1, 2;
SELECT has_function_privilege('pg_monitor', 'sharded_id.generator_stats()', 'EXECUTE') AS monitor_stats,
       has_function_privilege('sharded_id_provisioner', 'sharded_id.create_shard(integer, name)', 'EXECUTE') AS provisioner_create;
-- The role's internal and administrative calls are refused.
SET ROLE upgrade_app15;
SELECT sharded_id._move_hold('x');
SELECT sharded_id._remote_exec('c', 'SELECT 1');
SELECT sharded_id.route(3);
SELECT sharded_id.apply_shard_map();
RESET ROLE;
DROP OWNED BY upgrade_app15, upgrade_app15b, upgrade_writer;
DROP ROLE upgrade_app15, upgrade_app15b, upgrade_writer;
-- Without those roles' grants, every function's privileges are a fresh
-- install's (the roles' SELECT on the catalogs, which PUBLIC has too, went
-- with DROP OWNED).
(SELECT 'only fresh' AS side, * FROM fresh EXCEPT SELECT 'only fresh', * FROM pg_temp.extension_objects())
UNION ALL
(SELECT 'only updated', * FROM pg_temp.extension_objects() EXCEPT SELECT 'only updated', * FROM fresh)
ORDER BY 1, 2;
SET client_min_messages = warning;
DROP EXTENSION sharded_id_router;
DROP EXTENSION plproxy;
DROP EXTENSION postgres_fdw CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
