/* src/sql/edition/privileges.sql */

--
-- sharded_id_sql: who owns and who may call what.  Everyone may decode.
-- What touches the shards' sequences belongs to the role that installed the
-- edition (@extowner@: the database owner), who grants minting to the
-- application's roles as a table owner grants INSERT:
--     GRANT EXECUTE ON FUNCTION sharded_id.next_id(integer) TO app;
-- See doc/sharded_id-sql-edition.md.
--
COMMENT ON SCHEMA sharded_id IS
'sharded_id_sql: 64-bit, time-sortable, shard-carrying ids; each shard''s sequences are made here on its first id';

GRANT USAGE ON SCHEMA sharded_id TO PUBLIC;

DO $grants$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
             WHERE p.pronamespace OPERATOR(pg_catalog.=) 'sharded_id'::regnamespace
               AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['_shard_sequences', '_move', '_clock_ms', '_wait_for',
                   '_reserve', 'next_id', 'next_id_in_layout', 'next_ids', 'next_ids_in_layout',
                   'high_water', 'raise_floor'])
    LOOP
        EXECUTE pg_catalog.format('ALTER FUNCTION %s OWNER TO @extowner@', f);
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END
$grants$;
