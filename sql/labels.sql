--
-- Pin the volatility, parallel-safety and strictness of every function of
-- the extension, and check that every member object is commented.
--
SELECT p.oid::regprocedure AS function,
       p.provolatile AS volatile,
       p.proparallel AS parallel,
       p.proisstrict AS strict,
       p.prosecdef AS security_definer
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname = 'sharded_id' AND d.deptype = 'e'
ORDER BY 1::text;

-- Anything that calls nextval is VOLATILE and not PARALLEL SAFE; every
-- decoder is IMMUTABLE, STRICT and PARALLEL SAFE.
SELECT p.oid::regprocedure AS mislabelled
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname = 'sharded_id' AND d.deptype = 'e'
  AND CASE WHEN p.proname LIKE 'next\_id%'
           THEN p.provolatile <> 'v' OR p.proparallel = 's'
           ELSE p.provolatile <> 'i' OR p.proparallel <> 's' OR NOT p.proisstrict
      END;

-- Every member object has a comment.
SELECT pg_describe_object(d.classid, d.objid, d.objsubid) AS uncommented
FROM pg_depend d
JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
WHERE e.extname = 'sharded_id' AND d.deptype = 'e'
  AND obj_description(d.objid, (SELECT relname FROM pg_class WHERE oid = d.classid)) IS NULL;

-- The extension lives in its own schema and is not relocatable.
SELECT extname, extnamespace::regnamespace, extrelocatable
FROM pg_extension WHERE extname = 'sharded_id';
