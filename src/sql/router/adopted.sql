/* src/sql/router/adopted.sql */

-- Last in the install script: the privileges of the objects that adopt.sql
-- took over, put back as they were before CREATE EXTENSION
-- sharded_id_router (the administrator's grants and revokes kept), after
-- this script's grants made their initial privileges a new install's.
-- They are written to the catalog as they were read, since a GRANT here
-- would make them initial privileges too, which pg_dump would then leave
-- out.
DO $adopted$
DECLARE
    a jsonb;
BEGIN
    FOR a IN
        SELECT x.v FROM pg_catalog.jsonb_array_elements(
            COALESCE(NULLIF(pg_catalog.current_setting('sharded_id_router.adopted_acls', true), ''), '[]')::jsonb) AS x(v)
    LOOP
        IF a OPERATOR(pg_catalog.->>) 'class' OPERATOR(pg_catalog.=) 'pg_class' THEN
            UPDATE pg_catalog.pg_class c SET relacl = (a OPERATOR(pg_catalog.->>) 'acl')::pg_catalog.aclitem[]
            WHERE c.oid OPERATOR(pg_catalog.=) (a OPERATOR(pg_catalog.->>) 'oid')::pg_catalog.oid;
        ELSIF a OPERATOR(pg_catalog.->>) 'class' OPERATOR(pg_catalog.=) 'pg_attribute' THEN
            UPDATE pg_catalog.pg_attribute t SET attacl = (a OPERATOR(pg_catalog.->>) 'acl')::pg_catalog.aclitem[]
            WHERE t.attrelid OPERATOR(pg_catalog.=) (a OPERATOR(pg_catalog.->>) 'oid')::pg_catalog.oid
              AND t.attnum OPERATOR(pg_catalog.=) (a OPERATOR(pg_catalog.->>) 'attnum')::pg_catalog.int2;
        ELSE
            UPDATE pg_catalog.pg_proc p SET proacl = (a OPERATOR(pg_catalog.->>) 'acl')::pg_catalog.aclitem[]
            WHERE p.oid OPERATOR(pg_catalog.=) (a OPERATOR(pg_catalog.->>) 'oid')::pg_catalog.oid;
        END IF;
    END LOOP;
    PERFORM pg_catalog.set_config('sharded_id_router.adopted_acls', '', true);
END
$adopted$;
