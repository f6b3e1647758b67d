--
-- A role without superuser provisions shards with the one documented grant
-- (doc/sharded_id-reference.md, "Provisioning without superuser"):
-- membership in sharded_id_provisioner, which the extension creates.  It
-- copies a template whose policy names a role, and drops only the shards
-- it owns.
--
CREATE EXTENSION IF NOT EXISTS sharded_id;
CREATE ROLE sid_provisioner;
CREATE ROLE sid_other;
CREATE ROLE sid_tenant;
-- The superuser whose shards and retirements the provisioner meets: a role
-- of its own, so that the messages that name it do not depend on who runs
-- the test.
CREATE ROLE sid_super SUPERUSER;
-- The role as the extension made it.
SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls,
       has_database_privilege('sharded_id_provisioner', current_database(), 'CREATE') AS creates_schemas,
       (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid) AS member_of
FROM pg_roles r WHERE rolname = 'sharded_id_provisioner';
-- No one but the owner writes a catalog.
SELECT c.relname, a.privilege_type, coalesce(pg_get_userbyid(nullif(a.grantee, 0)), 'PUBLIC') AS grantee
FROM pg_class c, aclexplode(c.relacl) a
WHERE c.relnamespace = 'sharded_id'::regnamespace AND a.grantee <> c.relowner
  AND c.relname IN ('settings', 'shards', 'shard_tables', 'retired_shards', 'shard_tables_position_seq')
ORDER BY 1, 2, 3;
-- The grant.
GRANT sharded_id_provisioner TO sid_provisioner, sid_other;

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
SET ROLE sid_super;
SELECT sharded_id.create_shard(74);
SET ROLE sid_provisioner;
SELECT sharded_id.drop_shard(71);
SELECT sharded_id.drop_shard(74);
RESET ROLE;
SELECT shard_id, schema_name FROM sharded_id.shards ORDER BY 1;
SELECT shard_id, retired_by FROM sharded_id.retired_shards WHERE shard_id >= 70 ORDER BY 1;
SELECT count(*) AS schema_74 FROM pg_namespace WHERE nspname = 'shard_0074';

--
-- The provisioner against a superuser's retirement and other owners'
-- shards.  A superuser retires shard 80 (its schema is the superuser's)
-- and keeps shards 81 and 82; sid_other, another member of the
-- provisioner role, owns the schemas of shards 83 and 84 and retires 83.
-- Whatever sid_provisioner tries, each attempt fails with 42501 and the
-- server's state (floors()), the catalogs and next_id's refusal of shards
-- 80 and 83 stay as they were.
--
SET ROLE sid_super;
SELECT count(sharded_id.create_shard(s)) FROM unnest('{80,81,82}'::int[]) s;
SELECT sharded_id.retire_shard(80) > 0 AS retired_80;
RESET ROLE;
-- The superuser makes the shards and hands their schemas to sid_other (a
-- superuser's create_shard does not adopt an empty schema that another
-- role made: below).
SELECT sharded_id.create_shard(83, 'other_83'), sharded_id.create_shard(84, 'other_84');
ALTER SCHEMA other_83 OWNER TO sid_other;
ALTER SCHEMA other_84 OWNER TO sid_other;
CREATE TABLE public.su_template (id bigint PRIMARY KEY);
SET ROLE sid_other;
SELECT sharded_id.retire_shard(83) > 0 AS retired_83;
RESET ROLE;
CREATE TEMP TABLE before_floors AS SELECT * FROM sharded_id.floors();
CREATE TEMP TABLE before_catalog AS
SELECT 'shards' AS t, to_jsonb(s) AS r FROM sharded_id.shards s
UNION ALL SELECT 'retired_shards', to_jsonb(r) FROM sharded_id.retired_shards r
UNION ALL SELECT 'shard_tables', to_jsonb(t) FROM sharded_id.shard_tables t
UNION ALL SELECT 'settings', to_jsonb(s) FROM sharded_id.settings s;
GRANT SELECT ON before_floors, before_catalog TO PUBLIC;
CREATE FUNCTION pg_temp.catalog_changes() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM (
        (SELECT * FROM before_catalog
         EXCEPT ALL
         (SELECT 'shards', to_jsonb(s) FROM sharded_id.shards s
          UNION ALL SELECT 'retired_shards', to_jsonb(r) FROM sharded_id.retired_shards r
          UNION ALL SELECT 'shard_tables', to_jsonb(t) FROM sharded_id.shard_tables t
          UNION ALL SELECT 'settings', to_jsonb(s) FROM sharded_id.settings s))
        UNION ALL
        ((SELECT 'shards', to_jsonb(s) FROM sharded_id.shards s
          UNION ALL SELECT 'retired_shards', to_jsonb(r) FROM sharded_id.retired_shards r
          UNION ALL SELECT 'shard_tables', to_jsonb(t) FROM sharded_id.shard_tables t
          UNION ALL SELECT 'settings', to_jsonb(s) FROM sharded_id.settings s)
         EXCEPT ALL SELECT * FROM before_catalog)) d
$$;
CREATE FUNCTION pg_temp.floor_changes() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM ((SELECT * FROM before_floors EXCEPT SELECT * FROM sharded_id.floors())
                          UNION ALL (SELECT * FROM sharded_id.floors() EXCEPT SELECT * FROM before_floors)) d
$$;
SELECT shard_id, retired, floor IS NOT NULL AS has_floor FROM before_floors WHERE shard_id BETWEEN 80 AND 99 ORDER BY 1;

SET ROLE sid_provisioner;
\set VERBOSITY sqlstate
-- The internal functions, and the catalogs, directly.
SELECT sharded_id._own_shard(80, 'instagram');
SELECT sharded_id._catalog_own(80, 'shard_0080', 'instagram', 'seed');
SELECT sharded_id._catalog_own(80, 'prov_80', 'instagram', 'seed');
SELECT sharded_id._catalog_own(81, 'prov_80', 'instagram', 'seed');
SELECT sharded_id._catalog_own(70, 'shard_0070', 'snowflake', 'seed');
SELECT sharded_id._retire_shard(81, 'instagram');
SELECT sharded_id._retire_shard(70, 'snowflake');
SELECT sharded_id._catalog_retire(81, 'instagram', 0);
SELECT sharded_id._catalog_add_table('sharded_id.shards', 'shards', 'shard_id');
DELETE FROM sharded_id.retired_shards WHERE shard_id = 80;
UPDATE sharded_id.retired_shards SET retired_by = 'sid_provisioner' WHERE shard_id = 80;
INSERT INTO sharded_id.retired_shards (shard_id, layout) VALUES (81, 'instagram');
TRUNCATE sharded_id.retired_shards;
DELETE FROM sharded_id.shards WHERE shard_id = 81;
UPDATE sharded_id.shards SET schema_name = 'prov_81' WHERE shard_id = 81;
INSERT INTO sharded_id.shards (shard_id, schema_name, layout) VALUES (80, 'prov_80', 'instagram');
DELETE FROM sharded_id.shard_tables;
INSERT INTO sharded_id.shard_tables (table_name, template_schema, template_table, id_column) VALUES ('x', 'x', 'x', 'id');
UPDATE sharded_id.settings SET pad_width = 2;
INSERT INTO sharded_id.settings (schema_prefix, pad_width, layout) VALUES ('p_', 2, 'instagram');
SELECT sharded_id.configure(schema_prefix => 'p_');
-- The public functions, on shards whose schema it does not own.
SELECT sharded_id.create_shard(80);
CREATE SCHEMA prov_80;
SELECT sharded_id.create_shard(80, 'prov_80');
SELECT sharded_id.create_shard(83);
SELECT sharded_id.create_shard(83, 'prov_80');
SELECT sharded_id.create_shard(83, 'other_83');
SELECT sharded_id.create_shard(85, 'other_84');
SELECT sharded_id.retire_shard(81);
SELECT sharded_id.retire_shard(84);
SELECT sharded_id.drop_shard(82);
SELECT sharded_id.drop_shard(84);
SELECT sharded_id.raise_floor(82, sharded_id.encode(now() + interval '23 hours', 82, 0));
SELECT sharded_id.raise_floor(84, sharded_id.encode(now() + interval '23 hours', 84, 0));
SELECT sharded_id.add_table('public.su_template');
SELECT sharded_id.raise_floor(70, sharded_id.encode(now() + interval '23 hours', 70, 0, 'snowflake'), 'snowflake');
SELECT sharded_id.lower_floor(82);
SELECT sharded_id.raise_floors();
-- A savepoint rolled back does not leave a take-back behind.
BEGIN;
SAVEPOINT a;
SELECT sharded_id._catalog_own(80, 'prov_80', 'instagram', 'seed');
ROLLBACK TO a;
SELECT sharded_id._own_shard(80, 'instagram');
ROLLBACK;
\set VERBOSITY default
-- One error in full.
SELECT sharded_id.create_shard(80, 'prov_80');
DROP SCHEMA prov_80;
RESET ROLE;
SELECT pg_temp.floor_changes() AS floor_changes, pg_temp.catalog_changes() AS catalog_changes,
       (SELECT rolsuper FROM pg_roles WHERE rolname = 'sid_provisioner') AS rolsuper;
\set VERBOSITY sqlstate
SELECT sharded_id.next_id(80, 'shard_0080.id_seq');
SELECT sharded_id.next_id(83, 'other_83.id_seq');
\set VERBOSITY default
SELECT sharded_id.shard_id(sharded_id.next_id(81, 'shard_0081.id_seq')) AS mints_81,
       sharded_id.shard_id(sharded_id.next_id(82, 'shard_0082.id_seq')) AS mints_82,
       sharded_id.shard_id(sharded_id.next_id(84, 'other_84.id_seq')) AS mints_84;
SELECT count(*) AS schemas_kept FROM pg_namespace WHERE nspname IN ('shard_0080', 'shard_0082', 'other_83', 'other_84');

--
-- On a shard whose schema it owns, it does all of it: retire, take back
-- (also after a savepoint rolled back), raise the floor, drop, and take
-- back again what it dropped.
--
SET ROLE sid_provisioner;
SELECT sharded_id.retire_shard(72) > 0 AS retired_72;
SELECT EXISTS (SELECT FROM sharded_id.floors() WHERE shard_id = 72 AND retired) AS retired;
\set VERBOSITY sqlstate
SELECT sharded_id.next_id(72, 'shard_0072.id_seq');
\set VERBOSITY default
SELECT retired_by FROM sharded_id.retired_shards WHERE shard_id = 72;
BEGIN;
SAVEPOINT a;
SELECT sharded_id.create_shard(72);
ROLLBACK TO a;
SELECT sharded_id.create_shard(72);
COMMIT;
SELECT EXISTS (SELECT FROM sharded_id.floors() WHERE shard_id = 72 AND retired) AS retired;
SELECT sharded_id.shard_id(sharded_id.next_id(72, 'shard_0072.id_seq')) AS mints_72;
SELECT sharded_id.raise_floor(72, sharded_id.encode(now() + interval '23 hours', 72, 0))
       = sharded_id.encode(date_trunc('milliseconds', now() + interval '23 hours'), 72, 1023) AS floor_72;
SELECT sharded_id.created_at(sharded_id.next_id(72, 'shard_0072.id_seq')) > now() + interval '22 hours' AS above_floor;
SELECT sharded_id.drop_shard(72);
SELECT sharded_id.create_shard(72);
SELECT sharded_id.shard_id(sharded_id.next_id(72, 'shard_0072.id_seq')) AS mints_72_again;
RESET ROLE;
SELECT shard_id, schema_name FROM sharded_id.shards ORDER BY 1;
SELECT shard_id, retired_by FROM sharded_id.retired_shards WHERE shard_id >= 70 ORDER BY 1;

--
-- add_table on shards whose schemas other roles made: refused up front
-- (42501), naming the schemas it may not create in, with nothing changed;
-- after the grant its hint names, it copies into every shard.
--
SET ROLE sid_provisioner;
CREATE TABLE prov_tmpl.tags (id bigint PRIMARY KEY, tag text);
SELECT sharded_id.add_table('prov_tmpl.tags');
SELECT (SELECT count(*) FROM sharded_id.shard_tables WHERE table_name = 'tags') AS catalog_rows,
       (SELECT count(*) FROM pg_class WHERE relname = 'tags' AND relnamespace <> 'prov_tmpl'::regnamespace) AS copies;
RESET ROLE;
SELECT format('GRANT USAGE, CREATE ON SCHEMA %I TO sid_provisioner', schema_name) FROM sharded_id.shards
WHERE NOT has_schema_privilege('sid_provisioner', schema_name, 'CREATE') ORDER BY shard_id \gexec
SET ROLE sid_provisioner;
SELECT sharded_id.add_table('prov_tmpl.tags') = (SELECT count(*) FROM sharded_id.shards) AS copied_to_every_shard;
RESET ROLE;

-- Clean up.
SET client_min_messages = warning;
SELECT count(sharded_id.drop_shard(s)) FROM unnest('{70,72,73,74,81,82,84}'::int[]) s;
SELECT count(sharded_id.create_shard(s)) FROM unnest('{80,83}'::int[]) s;
SELECT count(sharded_id.drop_shard(s)) FROM unnest('{80,83}'::int[]) s;
DROP TABLE public.su_template;
DROP SCHEMA other_83 CASCADE;
DELETE FROM sharded_id.shard_tables;
DELETE FROM sharded_id.retired_shards;
DROP SCHEMA prov_tmpl CASCADE;
DROP ROLE sid_provisioner, sid_other, sid_tenant;
RESET client_min_messages;

--
-- The update from 1.5 takes the writes of 1.5's recipe on the catalogs
-- away, and the functions refuse a role that kept its EXECUTE grants.
--
DROP EXTENSION sharded_id;
CREATE EXTENSION sharded_id VERSION '1.5';
CREATE ROLE sid_old_admin;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sharded_id TO sid_old_admin;
GRANT SELECT, INSERT, UPDATE, DELETE
    ON sharded_id.settings, sharded_id.shards, sharded_id.shard_tables, sharded_id.retired_shards TO sid_old_admin;
GRANT USAGE ON SEQUENCE sharded_id.shard_tables_position_seq TO sid_old_admin;
ALTER EXTENSION sharded_id UPDATE;
SELECT c.relname, a.privilege_type, coalesce(pg_get_userbyid(nullif(a.grantee, 0)), 'PUBLIC') AS grantee
FROM pg_class c, aclexplode(c.relacl) a
WHERE c.relnamespace = 'sharded_id'::regnamespace AND a.grantee <> c.relowner
  AND c.relname IN ('settings', 'shards', 'shard_tables', 'retired_shards', 'shard_tables_position_seq')
ORDER BY 1, 2, 3;
SET ROLE sid_super;
SELECT sharded_id.create_shard(90);
SELECT sharded_id.retire_shard(90) > 0 AS retired_90;
SET ROLE sid_old_admin;
\set VERBOSITY sqlstate
SELECT sharded_id._own_shard(90, 'instagram');
SELECT sharded_id.create_shard(90);
DELETE FROM sharded_id.retired_shards WHERE shard_id = 90;
SELECT sharded_id.create_shard(91);
SELECT sharded_id._lock_shard(90, 'move', false);
\set VERBOSITY default
RESET ROLE;
SELECT EXISTS (SELECT FROM sharded_id.floors() WHERE shard_id = 90 AND retired) AS retired;
SELECT shard_id, retired_by FROM sharded_id.retired_shards;
SELECT count(*) AS shards FROM sharded_id.shards;
SET client_min_messages = warning;
SELECT sharded_id.create_shard(90);
SELECT sharded_id.drop_shard(90);
DELETE FROM sharded_id.retired_shards;
RESET client_min_messages;
-- A provisioner makes an empty schema named like shard 31 before a
-- superuser creates the shard: the superuser's create_shard refuses to
-- adopt it (42501), so that the provisioner cannot later drop the shard's
-- tables with its schema, and changes nothing.
CREATE ROLE sid_planter;
GRANT sharded_id_provisioner TO sid_planter;
SET ROLE sid_planter;
CREATE SCHEMA shard_0031;
RESET ROLE;
\set VERBOSITY sqlstate
SELECT sharded_id.create_shard(31);
\set VERBOSITY default
SELECT count(*) AS shard_31 FROM sharded_id.shards WHERE shard_id = 31;
SELECT count(*) AS objects_in_it FROM pg_class WHERE relnamespace = 'shard_0031'::regnamespace;
-- Nor with an id_seq of the planter's in it, which would otherwise pass
-- for a schema that create_shard made.
SET ROLE sid_planter;
CREATE SEQUENCE shard_0031.id_seq;
RESET ROLE;
\set VERBOSITY sqlstate
SELECT sharded_id.create_shard(31);
\set VERBOSITY default
SELECT count(*) AS shard_31 FROM sharded_id.shards WHERE shard_id = 31;
DROP SCHEMA shard_0031 CASCADE;
DROP ROLE sid_planter;
SET client_min_messages = warning;
-- (The update's grants and revocations recorded its grants as the
-- extension's initial privileges.)
DROP OWNED BY sid_old_admin;
DROP ROLE sid_old_admin;
REASSIGN OWNED BY sid_super TO CURRENT_USER;
DROP OWNED BY sid_super;
DROP ROLE sid_super;
RESET client_min_messages;
