--
-- Logical shards as schemas: templates, provisioning, the catalog.
--
SET client_min_messages = warning;
-- PL/pgSQL line numbers are not part of the contract.
\set SHOW_CONTEXT never

-- Templates: ordinary tables, defined once.
CREATE SCHEMA app;
CREATE TABLE app.users (
    id bigint PRIMARY KEY,
    name text NOT NULL CHECK (name <> ''),
    email text UNIQUE
);
COMMENT ON TABLE app.users IS 'people';
COMMENT ON COLUMN app.users.name IS 'display name';
CREATE INDEX users_lower_name_idx ON app.users (lower(name));
CREATE TABLE app.photos (
    id bigint PRIMARY KEY,
    user_id bigint NOT NULL REFERENCES app.users (id) ON DELETE CASCADE,
    caption text,
    taken timestamptz DEFAULT now()
);

SELECT sharded_id.add_table('app.users') AS copies;
SELECT sharded_id.add_table('app.photos') AS copies;
SELECT table_name, template_schema, template_table, id_column FROM sharded_id.shard_tables ORDER BY position;

-- Sixteen shards in one call.
SELECT * FROM sharded_id.create_shards(0, 15);
SELECT count(*) AS shards, min(schema_name), max(schema_name), bool_and(layout = 'instagram') AS instagram
FROM sharded_id.shards;

-- Each shard schema has the tables, with the shard's own DEFAULT, and the
-- template's indexes, constraints and comments.
SELECT n.nspname, count(*) AS tables
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname LIKE 'shard\_%' AND c.relkind = 'r'
GROUP BY 1 HAVING count(*) <> 2;
SELECT pg_get_expr(d.adbin, d.adrelid) AS users_id_default
FROM pg_attrdef d WHERE d.adrelid = 'shard_0005.users'::regclass;
SELECT indexrelid::regclass AS index, pg_get_indexdef(indexrelid) AS definition
FROM pg_index WHERE indrelid = 'shard_0005.users'::regclass ORDER BY indexrelid::regclass::text COLLATE "C";
SELECT conname, pg_get_constraintdef(oid) AS definition
FROM pg_constraint WHERE conrelid IN ('shard_0005.users'::regclass, 'shard_0005.photos'::regclass)
  AND contype <> 'n'  -- PostgreSQL 18 lists NOT NULL constraints too
ORDER BY conrelid::regclass::text COLLATE "C", conname;
SELECT obj_description('shard_0005.users'::regclass, 'pg_class') AS table_comment,
       col_description('shard_0005.users'::regclass, 2) AS column_comment;

-- Rows get ids of their shard; foreign keys hold within the shard.
INSERT INTO shard_0005.users (name, email) VALUES ('ann', 'ann@example.com'), ('bob', NULL);
INSERT INTO shard_0005.photos (user_id, caption) SELECT id, 'by ' || name FROM shard_0005.users;
INSERT INTO shard_0009.users (name) VALUES ('cy');
SELECT 'shard_0005.users' AS tab, sharded_id.shard_id(id) AS shard FROM shard_0005.users
UNION ALL SELECT 'shard_0005.photos', sharded_id.shard_id(id) FROM shard_0005.photos
UNION ALL SELECT 'shard_0009.users', sharded_id.shard_id(id) FROM shard_0009.users
ORDER BY 1, 2;
\set VERBOSITY terse
INSERT INTO shard_0005.photos (user_id) VALUES ((SELECT id FROM shard_0009.users));
DELETE FROM shard_0005.users WHERE name = 'ann';
SELECT count(*) AS photos_left FROM shard_0005.photos;
INSERT INTO shard_0005.users (name) VALUES ('');
\set VERBOSITY default

-- The seed's zero-argument next_id() in every shard, inlined by the planner.
SELECT sharded_id.shard_id(shard_0007.next_id()) AS wrapper_shard;
EXPLAIN (VERBOSE, COSTS OFF) SELECT shard_0007.next_id();

-- Rerunning is idempotent.
SELECT sharded_id.create_shard(5) AS again;
SELECT count(*) AS still_16 FROM sharded_id.shards;
SELECT count(*) AS users_kept FROM shard_0005.users;

-- A template added later reaches every existing shard with one call.
CREATE TABLE app.likes (
    id bigint PRIMARY KEY,
    photo_id bigint NOT NULL REFERENCES app.photos (id),
    user_id bigint NOT NULL
);
SELECT sharded_id.add_table('app.likes') AS copies;
SELECT sharded_id.add_table('app.likes') AS copies_again;
SELECT count(*) AS likes_tables FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = 'likes' AND n.nspname LIKE 'shard\_%';
SELECT pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = 'shard_0003.likes'::regclass AND contype = 'f';

-- A foreign key is copied whole, as pg_get_constraintdef prints it: the
-- column list of ON DELETE SET NULL (...) included.
CREATE TABLE app.albums (
    id bigint PRIMARY KEY,
    owner_id bigint NOT NULL,
    UNIQUE (id, owner_id)
);
CREATE TABLE app.album_photos (
    id bigint PRIMARY KEY,
    album_id bigint,
    owner_id bigint NOT NULL,
    CONSTRAINT album_fk FOREIGN KEY (album_id, owner_id) REFERENCES app.albums (id, owner_id)
        ON DELETE SET NULL (album_id) DEFERRABLE INITIALLY DEFERRED
);
SELECT sharded_id.add_table('app.albums') AS copies, sharded_id.add_table('app.album_photos') AS copies;
SELECT pg_get_constraintdef(c.oid) AS shard_copy,
       pg_get_constraintdef(c.oid) = replace(pg_get_constraintdef(t.oid), 'app.albums', 'shard_0003.albums') AS same_as_template
FROM pg_constraint t JOIN pg_constraint c ON c.conname = t.conname
WHERE t.conrelid = 'app.album_photos'::regclass AND c.conrelid = 'shard_0003.album_photos'::regclass
  AND t.contype = 'f';
INSERT INTO shard_0003.albums (owner_id) VALUES (42);
INSERT INTO shard_0003.album_photos (album_id, owner_id) SELECT id, owner_id FROM shard_0003.albums;
DELETE FROM shard_0003.albums;
SELECT album_id IS NULL AS album_set_null, owner_id AS owner_kept FROM shard_0003.album_photos;

-- The text of a shard's next_id call names its sequence, whose name can
-- change under the same oid: the function that renders it is STABLE.
CREATE TEMP TABLE seq_oid AS SELECT 'shard_0003.id_seq'::regclass::oid AS oid;
SELECT sharded_id._next_id_call(3, oid::regclass, 'instagram') FROM seq_oid;
ALTER SEQUENCE shard_0003.id_seq RENAME TO id_seq_renamed;
SELECT sharded_id._next_id_call(3, oid::regclass, 'instagram') FROM seq_oid;
ALTER SEQUENCE shard_0003.id_seq_renamed RENAME TO id_seq;
SELECT provolatile AS stable FROM pg_proc WHERE oid = 'sharded_id._next_id_call'::regproc;

-- All or nothing: shard 19's schema holds a table where its sequence
-- should be, so creating shards 16..20 fails and leaves nothing behind.
CREATE SCHEMA shard_0019;
CREATE TABLE shard_0019.id_seq (x int);
SELECT * FROM sharded_id.create_shards(16, 20);
SELECT count(*) AS still_16 FROM sharded_id.shards;
SELECT count(*) AS no_new_schemas FROM pg_namespace WHERE nspname IN ('shard_0016', 'shard_0017', 'shard_0018', 'shard_0020');
DROP SCHEMA shard_0019 CASCADE;

-- Bad input.
SELECT sharded_id.create_shard(8192);
SELECT sharded_id.create_shard(-1);
SELECT * FROM sharded_id.create_shards(5, 3);
SELECT sharded_id.drop_shard(999);
SELECT sharded_id.create_shard(5, 'somewhere_else');
SELECT sharded_id.create_shard(NULL);
CREATE VIEW app.v AS SELECT 1::bigint AS id;
SELECT sharded_id.add_table('app.v');
CREATE TABLE app.no_bigint (id integer PRIMARY KEY);
SELECT sharded_id.add_table('app.no_bigint');
SELECT sharded_id.add_table('shard_0001.users');
DROP VIEW app.v;
DROP TABLE app.no_bigint;

-- Drop a shard: its schema and catalog entry go.
SELECT sharded_id.drop_shard(15);
SELECT count(*) AS shards, to_regnamespace('shard_0015') AS gone FROM sharded_id.shards;

-- Settings: the name pattern is configurable; the layout is fixed once
-- shards exist.
SELECT * FROM sharded_id.current_settings();
SELECT sharded_id.configure(schema_prefix => 'insta', pad_width => 0);
SELECT sharded_id.create_shard(16);
SELECT sharded_id.configure(layout => 'snowflake');
SELECT sharded_id.configure(layout => 'no_such_layout');
SELECT * FROM sharded_id.current_settings();

-- Only the extension's owner, or roles it grants EXECUTE to, provision.
CREATE ROLE sharded_id_regress_app;
SET ROLE sharded_id_regress_app;
SELECT sharded_id.create_shard(20);
SELECT sharded_id.drop_shard(1);
SELECT count(*) > 0 AS may_read_catalog FROM sharded_id.shards;
RESET ROLE;
DROP ROLE sharded_id_regress_app;

-- A hostile search_path changes nothing: functions of the same names as
-- those the provisioning code calls, earlier on the path, are not used.
CREATE SCHEMA evil;
CREATE FUNCTION evil.lpad(text, integer, text) RETURNS text LANGUAGE sql AS $$SELECT 'pwned'$$;
CREATE FUNCTION evil.to_regclass(text) RETURNS regclass LANGUAGE sql AS $$SELECT NULL::regclass$$;
CREATE FUNCTION evil.quote_ident(text) RETURNS text LANGUAGE sql AS $$SELECT 'pwned'$$;
SET search_path = evil, public;
SELECT sharded_id.create_shard(17);
RESET search_path;
SELECT count(*) AS insta17_tables FROM pg_tables WHERE schemaname = 'insta17';
SELECT count(*) AS pwned_schemas FROM pg_namespace WHERE nspname LIKE '%pwned%';
DROP SCHEMA evil CASCADE;

-- Clean up: every shard, the templates, the settings.
SELECT count(*) AS dropped FROM (SELECT sharded_id.drop_shard(shard_id) FROM sharded_id.shards) d;
DELETE FROM sharded_id.shard_tables;
DELETE FROM sharded_id.settings;
DROP SCHEMA app CASCADE;
RESET client_min_messages;
