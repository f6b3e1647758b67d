--
-- Pin the volatility, parallel-safety and strictness of every function of
-- the extension, and check that every member object is commented.
--
-- Both extensions: sharded_id and its router.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sharded_id_router CASCADE;
RESET client_min_messages;

SELECT p.oid::regprocedure AS function,
       p.provolatile AS volatile,
       p.proparallel AS parallel,
       p.proisstrict AS strict,
       p.prosecdef AS security_definer,
       p.proconfig AS settings
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname IN ('sharded_id', 'sharded_id_router') AND d.deptype = 'e'
ORDER BY p.oid::regprocedure::text COLLATE "C";

-- Anything that calls nextval, mints, takes locks or changes the database or the
-- generator's state is VOLATILE and not PARALLEL SAFE; every C decoder is
-- IMMUTABLE, STRICT and PARALLEL SAFE;
-- every SQL and PL/pgSQL function pins its search_path.
WITH generator AS (VALUES ('reset_ceiling'), ('generator_stats'), ('generator_info'), ('reset_stats'),
                          ('raise_floor'), ('high_water'), ('_retire_shard'), ('_own_shard'), ('route'),
                          ('lower_floor'), ('floors'), ('_check_floor'),
                          ('_lock_shard'), ('_unlock_shard'), ('_lock_route'), ('_enter_fence'), ('_lock_fence'),
                          ('_catalog_retire'), ('_catalog_own'), ('_catalog_unretire'), ('_catalog_add_table'),
                          -- moves a Citus shard's windows on (src/citus.c)
                          ('citus_grant_windows'), ('citus_window_high_water'),
                          -- the check of internal functions: run at every call
                          ('_superuser_only'),
                          -- reads the catalog with the newest snapshot
                          ('_shard_schema_now')),
     -- Read and check tables as their owners: they switch the user and the
     -- search_path, which no parallel worker may do.
     owner_reads AS (VALUES ('_max_id'), ('_table_fingerprint'), ('_table_rows'), ('_validate_as_owner'), ('_insert_as_owner'))
SELECT p.oid::regprocedure AS mislabelled
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
JOIN pg_language l ON l.oid = p.prolang
WHERE e.extname IN ('sharded_id', 'sharded_id_router') AND d.deptype = 'e'
  AND ((p.proname LIKE 'next\_id%' AND (p.provolatile <> 'v' OR p.proparallel = 's'))
       OR (p.provolatile = 'v' AND p.proparallel = 's')
       OR (l.lanname = 'c' AND p.proname NOT LIKE 'next\_id%' AND p.proname NOT IN (SELECT * FROM generator)
           AND p.proname NOT IN (SELECT * FROM owner_reads)
           AND (p.provolatile <> 'i' OR p.proparallel <> 's' OR NOT p.proisstrict))
       OR (p.proname IN (SELECT * FROM generator) AND (p.provolatile <> 'v' OR p.proparallel = 's'))
       OR (p.proname IN (SELECT * FROM owner_reads) AND (p.provolatile = 'i' OR p.proparallel <> 'u'))
       OR (l.lanname <> 'c' AND p.prokind <> 'p'
           AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false))
       -- A procedure that commits cannot carry a SET clause: either it pins
       -- its search_path with set_config in each of its transactions, or
       -- its body leaves the work to functions of the extension, which pin
       -- theirs, and reads no relation itself (FROM or JOIN names only such
       -- functions).
       OR (p.prokind = 'p' AND (p.proconfig IS NOT NULL
                                OR (position('set_config(''search_path'', ''pg_catalog, pg_temp'', true)' IN p.prosrc) = 0
                                    AND p.prosrc ~ '\m(FROM|JOIN)\s+(?!sharded_id\.)'))));

-- Provisioning is not for PUBLIC.
SELECT p.oid::regprocedure AS function, has_function_privilege('public', p.oid, 'EXECUTE') AS public_may_execute
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname IN ('sharded_id', 'sharded_id_router') AND d.deptype = 'e'
  AND NOT has_function_privilege('public', p.oid, 'EXECUTE')
ORDER BY p.oid::regprocedure::text COLLATE "C";

-- The provisioning role: what it may execute, and that it writes no
-- catalog (it changes shards through the functions, which check it).
SELECT p.oid::regprocedure AS provisioner_executes
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname IN ('sharded_id', 'sharded_id_router') AND d.deptype = 'e'
  AND NOT has_function_privilege('public', p.oid, 'EXECUTE')
  AND has_function_privilege('sharded_id_provisioner', p.oid, 'EXECUTE')
ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT c.oid::regclass AS provisioner_writes
FROM pg_class c
WHERE c.relnamespace = 'sharded_id'::regnamespace AND c.relkind IN ('r', 'p', 'S')
  AND (has_table_privilege('sharded_id_provisioner', c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')
       OR (c.relkind = 'S' AND has_sequence_privilege('sharded_id_provisioner', c.oid, 'USAGE, UPDATE')));

-- Every member object has a comment.  (PostgreSQL 18 also records the row
-- types of member tables, and their array types, as members.)
SELECT pg_describe_object(d.classid, d.objid, d.objsubid) AS uncommented
FROM pg_depend d
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname IN ('sharded_id', 'sharded_id_router') AND d.deptype = 'e'
  AND obj_description(d.objid, (SELECT relname FROM pg_class WHERE oid = d.classid)) IS NULL
  AND NOT EXISTS (SELECT 1 FROM pg_type t
                  WHERE d.classid = 'pg_type'::regclass AND t.oid = d.objid
                    AND (t.typrelid <> 0 OR EXISTS (SELECT 1 FROM pg_type e
                                                    WHERE e.oid = t.typelem AND e.typrelid <> 0)));

-- The extension lives in its own schema and is not relocatable.
SELECT extname, extnamespace::regnamespace, extrelocatable
FROM pg_extension WHERE extname = 'sharded_id';
SET client_min_messages = warning;
DROP EXTENSION sharded_id_router;
DROP EXTENSION plproxy;
DROP EXTENSION postgres_fdw CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
