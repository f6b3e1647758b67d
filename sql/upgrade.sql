--
-- The upgrade chain: every released version has an update path to the
-- default version, and an extension installed as 1.0 and updated has the
-- same objects, definitions and labels as a fresh install, while column
-- defaults made under 1.0 keep working.
--
SELECT e.source, e.path
FROM pg_extension_update_paths('sharded_id') e
JOIN pg_available_extensions a ON a.name = 'sharded_id' AND e.target = a.default_version
ORDER BY e.source;

CREATE FUNCTION pg_temp.extension_objects()
RETURNS TABLE (object text, definition text, labels text, comment text)
LANGUAGE sql AS $$
    SELECT pg_describe_object(d.classid, d.objid, d.objsubid),
           CASE WHEN d.classid = 'pg_proc'::regclass THEN md5(pg_get_functiondef(d.objid))
                WHEN d.classid = 'pg_class'::regclass THEN
                    (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
                                       || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), ''), ', ' ORDER BY a.attnum)
                     FROM pg_attribute a
                     LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                     WHERE a.attrelid = d.objid AND a.attnum > 0 AND NOT a.attisdropped)
           END,
           (SELECT concat_ws(' ', p.provolatile, p.proparallel, p.proisstrict, p.prosecdef)
                   || coalesce(array_to_string(p.proconfig, ','), '')
                   || coalesce(array_to_string(p.proacl, ','), '')
            FROM pg_proc p WHERE d.classid = 'pg_proc'::regclass AND p.oid = d.objid),
           obj_description(d.objid, (SELECT relname FROM pg_class WHERE oid = d.classid))
    FROM pg_depend d
    JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
    WHERE e.extname = 'sharded_id' AND d.deptype = 'e'
$$;

-- The extension as installed fresh at the default version.
CREATE TEMP TABLE fresh AS SELECT * FROM pg_temp.extension_objects();
SELECT count(*) > 0 AS fresh_has_objects FROM fresh;

DROP EXTENSION sharded_id;
CREATE EXTENSION sharded_id VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'sharded_id';
CREATE SCHEMA up;
CREATE SEQUENCE up.seq;
CREATE TABLE up.t (id bigint DEFAULT sharded_id.next_id(21, 'up.seq') PRIMARY KEY, v int);
INSERT INTO up.t (v) VALUES (1);

ALTER EXTENSION sharded_id UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'sharded_id';

-- Defaults from before the update still mint ids of their shard.
INSERT INTO up.t (v) VALUES (2);
SELECT v, sharded_id.shard_id(id) AS shard FROM up.t ORDER BY v;

-- Updated and fresh installs agree, object by object.
(SELECT 'only fresh' AS side, * FROM fresh EXCEPT SELECT 'only fresh', * FROM pg_temp.extension_objects())
UNION ALL
(SELECT 'only updated', * FROM pg_temp.extension_objects() EXCEPT SELECT 'only updated', * FROM fresh)
ORDER BY 1, 2;

DROP SCHEMA up CASCADE;
