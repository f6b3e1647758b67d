--
-- The shard lifecycle's sharp edges: who may enter a shard, which schemas
-- a shard may adopt, names limited in bytes, and shards that outlive a
-- DROP EXTENSION ... CASCADE.
--
SET client_min_messages = warning;
\set SHOW_CONTEXT never
CREATE SCHEMA app;
CREATE TABLE app.items (id bigint PRIMARY KEY, v text);
SELECT sharded_id.add_table('app.items') AS copies;
SELECT sharded_id.create_shard(3);

-- An application role with rights on the shard's tables and sequence, and
-- none on sharded_id's catalog beyond reading it, enters the shard (the
-- move fence is an advisory lock, not a row lock that needs UPDATE).
CREATE ROLE sharded_id_regress_writer;
GRANT USAGE ON SCHEMA shard_0003 TO sharded_id_regress_writer;
GRANT SELECT, INSERT ON shard_0003.items TO sharded_id_regress_writer;
GRANT USAGE ON SEQUENCE shard_0003.id_seq TO sharded_id_regress_writer;
SET ROLE sharded_id_regress_writer;
SELECT sharded_id.enter_shard(3) AS entered;
INSERT INTO shard_0003.items (v) VALUES ('by the application role');
RESET ROLE;
SELECT count(*) AS written FROM shard_0003.items;

-- A shard adopts only a schema shaped like a shard: never the templates'
-- own, a system schema, or one holding other things.
SELECT sharded_id.create_shard(5, 'app');
SELECT sharded_id.create_shard(5, 'public');
SELECT sharded_id.create_shard(5, 'pg_catalog');
CREATE SCHEMA other;
CREATE TABLE other.precious (x int);
SELECT sharded_id.create_shard(5, 'other');
SELECT count(*) AS no_shard_5 FROM sharded_id.shards WHERE shard_id = 5;
SELECT count(*) AS templates_kept FROM app.items;
-- An empty schema is fine.
CREATE SCHEMA empty_one;
SELECT sharded_id.create_shard(5, 'empty_one');
SELECT sharded_id.drop_shard(5);
DROP SCHEMA other CASCADE;

-- Schema names are limited in bytes: a 30-character prefix of two-byte
-- letters is 60 bytes.
SELECT sharded_id.configure(repeat('é', 30), 4);
SELECT sharded_id.configure(repeat('é', 25), 4);
SELECT octet_length(sharded_id.shard_schema(1)) AS bytes, sharded_id.shard_schema(1) <> sharded_id.shard_schema(2) AS distinct_names;
DELETE FROM sharded_id.settings;

-- Shard numbers outside the layout are no schema names.
SELECT sharded_id.shard_schema(-5);
SELECT sharded_id.shard_schema(8192);

-- DROP EXTENSION ... CASCADE drops the catalog, the shards' next_id() and
-- their id defaults, not their tables.  Once the extension is back and the
-- templates are registered, create_shard adopts each schema and gives the
-- id columns their defaults back.
INSERT INTO shard_0003.items (v) VALUES ('before the drop');
DROP EXTENSION sharded_id CASCADE;
SELECT count(*) AS rows_survive FROM shard_0003.items;
SELECT pg_get_expr(d.adbin, d.adrelid) AS default_after_drop
FROM pg_attrdef d WHERE d.adrelid = 'shard_0003.items'::regclass;
CREATE EXTENSION sharded_id;
SELECT sharded_id.add_table('app.items') AS copies;
SELECT sharded_id.create_shard(3);
SELECT pg_get_expr(d.adbin, d.adrelid) AS default_restored
FROM pg_attrdef d WHERE d.adrelid = 'shard_0003.items'::regclass;
INSERT INTO shard_0003.items (v) VALUES ('after the drop');
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids, bool_and(sharded_id.shard_id(id) = 3) AS all_shard_3
FROM shard_0003.items;
SELECT sharded_id.shard_id(shard_0003.next_id()) AS wrapper_back;

REVOKE ALL ON SCHEMA shard_0003 FROM sharded_id_regress_writer;
REVOKE ALL ON shard_0003.items FROM sharded_id_regress_writer;
REVOKE ALL ON SEQUENCE shard_0003.id_seq FROM sharded_id_regress_writer;
DROP ROLE sharded_id_regress_writer;
SELECT count(*) AS dropped FROM (SELECT sharded_id.drop_shard(shard_id) FROM sharded_id.shards) d;
DELETE FROM sharded_id.shard_tables;
DROP SCHEMA app CASCADE;
RESET client_min_messages;
