--
-- Shard copies of templates keep what LIKE ... INCLUDING ALL leaves out:
-- triggers, row-level security and its policies, grants and the owner, and
-- a partitioned template's partitioning.  Sub-partitioned templates are
-- refused.  schema_ddl() gives a shard schema back as statements.
--
CREATE EXTENSION IF NOT EXISTS sharded_id;
CREATE ROLE tmpl_owner;
CREATE ROLE tmpl_reader;
CREATE SCHEMA tmpl;
CREATE TABLE tmpl.notes (id bigint PRIMARY KEY, tenant text NOT NULL, body text);
COMMENT ON TABLE tmpl.notes IS 'notes of a tenant';
CREATE FUNCTION tmpl.stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.body := coalesce(NEW.body, '') || ' [stamped]'; RETURN NEW; END $$;
CREATE TRIGGER notes_stamp BEFORE INSERT ON tmpl.notes FOR EACH ROW EXECUTE FUNCTION tmpl.stamp();
ALTER TABLE tmpl.notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE tmpl.notes FORCE ROW LEVEL SECURITY;
CREATE POLICY notes_tenant ON tmpl.notes FOR SELECT TO tmpl_reader USING (tenant = current_user);
GRANT SELECT ON tmpl.notes TO tmpl_reader;
GRANT UPDATE (body) ON tmpl.notes TO tmpl_reader;
ALTER TABLE tmpl.notes OWNER TO tmpl_owner;
-- Partitioned by id range: ids sort by time, so min_id_at gives the bounds.
CREATE TABLE tmpl.events (id bigint, kind text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE tmpl.events_2026 PARTITION OF tmpl.events
    FOR VALUES FROM (0) TO (9223372036854775807);
CREATE TABLE tmpl.events_default PARTITION OF tmpl.events DEFAULT;
SELECT sharded_id.add_table('tmpl.notes');
SELECT sharded_id.add_table('tmpl.events');
SELECT sharded_id.create_shard(40);

-- The copy's trigger, row security, policy, grants, owner and comment.
SELECT tgname, pg_get_triggerdef(oid) LIKE '%ON shard_0040.notes %' AS on_copy
FROM pg_trigger WHERE tgrelid = 'shard_0040.notes'::regclass AND NOT tgisinternal;
SELECT relrowsecurity, relforcerowsecurity, pg_get_userbyid(relowner) AS owner,
       obj_description(oid, 'pg_class') AS comment
FROM pg_class WHERE oid = 'shard_0040.notes'::regclass;
SELECT policyname, cmd, roles, qual FROM pg_policies WHERE schemaname = 'shard_0040';
SELECT grantee, privilege_type FROM information_schema.role_table_grants
WHERE table_schema = 'shard_0040' AND table_name = 'notes' AND grantee = 'tmpl_reader';
SELECT grantee, column_name, privilege_type FROM information_schema.column_privileges
WHERE table_schema = 'shard_0040' AND table_name = 'notes' AND grantee = 'tmpl_reader'
ORDER BY column_name, privilege_type;
INSERT INTO shard_0040.notes (tenant, body) VALUES ('t1', 'hello');
SELECT body FROM shard_0040.notes;

-- The partitioned copy and its partitions.
SELECT c.relname, c.relkind, pg_get_partkeydef(c.oid) AS key, pg_get_expr(c.relpartbound, c.oid) AS bound
FROM pg_class c WHERE c.relnamespace = 'shard_0040'::regnamespace AND c.relname LIKE 'events%' AND c.relkind IN ('r', 'p')
ORDER BY c.relname;
INSERT INTO shard_0040.events (kind) VALUES ('created');
SELECT tableoid::regclass AS partition, sharded_id.shard_id(id) FROM shard_0040.events;

-- A sub-partitioned template is refused, and leaves nothing behind.
CREATE TABLE tmpl.deep (id bigint, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE tmpl.deep_a PARTITION OF tmpl.deep FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (id);
SELECT sharded_id.add_table('tmpl.deep');
SELECT count(*) FROM sharded_id.shard_tables WHERE table_name = 'deep';
SELECT to_regclass('shard_0040.deep');

-- schema_ddl: the shard schema again, as the statements a move runs on its
-- target: here, those that make its tables, trigger and policy.
SELECT s FROM sharded_id.schema_ddl('shard_0040') s WHERE s LIKE 'CREATE TABLE%' OR s LIKE 'CREATE POLICY%' OR s LIKE 'CREATE TRIGGER%';
SELECT sharded_id.schema_ddl('no_such_schema');

-- A grant that a grantee with the grant option made on the template: the
-- copy gets it too, made by the copy's owner, since the grantee need not
-- reach the shard's schema.
CREATE ROLE tmpl_relay;
CREATE ROLE tmpl_guest;
GRANT USAGE ON SCHEMA tmpl TO tmpl_relay, tmpl_owner;
SET ROLE tmpl_owner;
GRANT SELECT ON tmpl.notes TO tmpl_relay WITH GRANT OPTION;
SET ROLE tmpl_relay;
GRANT SELECT ON tmpl.notes TO tmpl_guest;
RESET ROLE;
SELECT sharded_id.create_shard(41);
SELECT c.oid::regclass AS copy, (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(c.relacl) x) AS acl
FROM pg_class c WHERE c.oid IN ('tmpl.notes'::regclass, 'shard_0041.notes'::regclass) ORDER BY c.oid;
SELECT has_table_privilege('tmpl_guest', 'shard_0041.notes', 'SELECT') AS guest_reads_copy;
SELECT sharded_id.drop_shard(41);
REVOKE SELECT ON tmpl.notes FROM tmpl_relay CASCADE;
REVOKE USAGE ON SCHEMA tmpl FROM tmpl_relay, tmpl_owner;
DROP ROLE tmpl_relay;
DROP ROLE tmpl_guest;

SELECT sharded_id.drop_shard(40);
DELETE FROM sharded_id.shard_tables WHERE template_schema = 'tmpl';
DROP SCHEMA tmpl CASCADE;
DROP ROLE tmpl_reader;
DROP ROLE tmpl_owner;
