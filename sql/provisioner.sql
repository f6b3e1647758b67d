--
-- A role without superuser provisions shards with the documented grants
-- (doc/sharded_id-reference.md, "Provisioning without superuser"): EXECUTE
-- on the API, CREATE on the database, and the provisioning catalogs.  It
-- copies a template whose policy names a role, and drops only the shards
-- it owns.
--
CREATE EXTENSION IF NOT EXISTS sharded_id;
CREATE ROLE sid_provisioner;
CREATE ROLE sid_tenant;
-- The grants.
DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO sid_provisioner', current_database()); END $$;
GRANT USAGE ON SCHEMA sharded_id TO sid_provisioner;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sharded_id TO sid_provisioner;
GRANT EXECUTE ON ALL PROCEDURES IN SCHEMA sharded_id TO sid_provisioner;
GRANT SELECT, INSERT, UPDATE, DELETE
    ON sharded_id.settings, sharded_id.shards, sharded_id.shard_tables, sharded_id.retired_shards TO sid_provisioner;
GRANT USAGE ON SEQUENCE sharded_id.shard_tables_position_seq TO sid_provisioner;

SET ROLE sid_provisioner;
SELECT rolsuper FROM pg_roles WHERE rolname = current_user;
CREATE SCHEMA prov_tmpl;
CREATE TABLE prov_tmpl.notes (id bigint PRIMARY KEY, tenant text NOT NULL, body text);
ALTER TABLE prov_tmpl.notes ENABLE ROW LEVEL SECURITY;
CREATE POLICY notes_tenant ON prov_tmpl.notes FOR SELECT TO sid_tenant USING (tenant = current_user);
GRANT SELECT ON prov_tmpl.notes TO sid_tenant;
SELECT sharded_id.add_table('prov_tmpl.notes');
SELECT sharded_id.create_shard(70);
CALL sharded_id.provision_shards(71, 72, batch_size => 2);
SELECT sharded_id.create_shards(73, 73);
INSERT INTO shard_0070.notes (tenant, body) VALUES ('sid_tenant', 'mine'), ('other', 'theirs');
GRANT USAGE ON SCHEMA shard_0070 TO sid_tenant;
RESET ROLE;

-- Every copy is there, owned by the provisioner, with the policy's role.
SELECT n.nspname, pg_get_userbyid(n.nspowner) AS schema_owner, pg_get_userbyid(c.relowner) AS table_owner,
       (SELECT string_agg(r, ',') FROM pg_policies p, unnest(p.roles) r
        WHERE p.schemaname = n.nspname AND p.tablename = 'notes') AS policy_roles,
       has_table_privilege('sid_tenant', c.oid, 'SELECT') AS tenant_reads
FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = 'notes'
WHERE n.nspname IN (SELECT schema_name FROM sharded_id.shards)
ORDER BY 1;
SET ROLE sid_tenant;
SELECT body FROM shard_0070.notes;
RESET ROLE;

-- It drops its own shards; a shard another role owns stays whole.
SELECT sharded_id.create_shard(74);
SET ROLE sid_provisioner;
SELECT sharded_id.drop_shard(71);
SELECT sharded_id.drop_shard(74);
RESET ROLE;
SELECT shard_id, schema_name FROM sharded_id.shards ORDER BY 1;
SELECT shard_id FROM sharded_id.retired_shards WHERE shard_id >= 70 ORDER BY 1;
SELECT count(*) AS schema_74 FROM pg_namespace WHERE nspname = 'shard_0074';

-- Clean up.
SET client_min_messages = warning;
SELECT sharded_id.drop_shard(s) FROM unnest('{70,72,73,74}'::int[]) s;
DELETE FROM sharded_id.shard_tables;
DELETE FROM sharded_id.retired_shards;
DROP SCHEMA prov_tmpl CASCADE;
DO $$ BEGIN EXECUTE format('REVOKE CREATE ON DATABASE %I FROM sid_provisioner', current_database()); END $$;
REVOKE ALL ON ALL TABLES IN SCHEMA sharded_id FROM sid_provisioner;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA sharded_id FROM sid_provisioner;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA sharded_id FROM sid_provisioner;
REVOKE ALL ON ALL PROCEDURES IN SCHEMA sharded_id FROM sid_provisioner;
REVOKE ALL ON SCHEMA sharded_id FROM sid_provisioner;
DROP ROLE sid_provisioner, sid_tenant;
RESET client_min_messages;
