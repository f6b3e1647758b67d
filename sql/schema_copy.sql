--
-- schema_ddl() makes a shard schema again in another database, object for
-- object: the inventories (sharded_id.schema_inventory) of both copies are
-- the same, owners, privileges, SECURITY DEFINER, the schema's privileges,
-- views, types and trigger states included.  An object it cannot make
-- again is refused, named, before anything is made.
--
CREATE EXTENSION IF NOT EXISTS sharded_id;
CREATE EXTENSION dblink;
CREATE ROLE sc_alice;
CREATE ROLE sc_reader;
CREATE ROLE sc_writer;
CREATE SCHEMA sc_tmpl;
CREATE TABLE sc_tmpl.items (id bigint PRIMARY KEY, name text NOT NULL);
SELECT sharded_id.add_table('sc_tmpl.items');
SELECT sharded_id.create_shard(7);

-- What users add to a shard after provisioning: every kind schema_ddl makes.
SET client_min_messages = warning;
CREATE TYPE shard_0007.mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE shard_0007.pair AS (a integer, b text COLLATE "C");
COMMENT ON COLUMN shard_0007.pair.b IS 'the text half';
CREATE FUNCTION shard_0007.span_diff(a numeric, b numeric) RETURNS float8
    LANGUAGE sql IMMUTABLE AS 'SELECT (a - b)::float8';
CREATE TYPE shard_0007.span AS RANGE (SUBTYPE = numeric, SUBTYPE_DIFF = shard_0007.span_diff);
CREATE DOMAIN shard_0007.score AS integer DEFAULT 0 CONSTRAINT score_range CHECK (VALUE BETWEEN 0 AND 100) NOT NULL;
COMMENT ON DOMAIN shard_0007.score IS 'a score';
CREATE DOMAIN shard_0007.moods AS shard_0007.mood[];
CREATE SEQUENCE shard_0007.ticket_seq AS integer START 100 INCREMENT 5 CACHE 3;
CREATE TABLE shard_0007.feelings (
    id bigint PRIMARY KEY DEFAULT shard_0007.next_id(),
    mood shard_0007.mood NOT NULL DEFAULT 'ok',
    score shard_0007.score,
    span shard_0007.span,
    pair shard_0007.pair,
    ticket integer NOT NULL DEFAULT nextval('shard_0007.ticket_seq'),
    item_id bigint REFERENCES shard_0007.items (id),
    seen integer GENERATED ALWAYS AS IDENTITY (START 1000 INCREMENT 10 CACHE 5),
    note text CHECK (note <> '')
);
ALTER SEQUENCE shard_0007.ticket_seq OWNED BY shard_0007.feelings.ticket;
ALTER TABLE shard_0007.feelings ALTER COLUMN note SET STORAGE EXTERNAL, ALTER COLUMN note SET COMPRESSION pglz,
    ALTER COLUMN mood SET STATISTICS 500;
CREATE INDEX feelings_mood ON shard_0007.feelings (mood) WHERE score > 10;
COMMENT ON INDEX shard_0007.feelings_mood IS 'by mood';
COMMENT ON CONSTRAINT feelings_note_check ON shard_0007.feelings IS 'no empty notes';
CREATE TABLE shard_0007.log (id bigint, at timestamptz DEFAULT now(), what text) PARTITION BY RANGE (id);
CREATE TABLE shard_0007.log_low PARTITION OF shard_0007.log FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE shard_0007.log_high PARTITION OF shard_0007.log FOR VALUES FROM (1000) TO (MAXVALUE);
-- A SECURITY DEFINER function owned by a role without superuser, that
-- only sc_reader may run; a trigger function; a procedure; a function
-- with a SQL-standard body over a table.
CREATE FUNCTION shard_0007.audit() RETURNS bigint
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS 'SELECT count(*) FROM shard_0007.feelings';
ALTER FUNCTION shard_0007.audit() OWNER TO sc_alice;
REVOKE ALL ON FUNCTION shard_0007.audit() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION shard_0007.audit() TO sc_reader;
COMMENT ON FUNCTION shard_0007.audit() IS 'how many feelings';
CREATE FUNCTION shard_0007.stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.what := coalesce(NEW.what, '') || '!'; RETURN NEW; END $$;
CREATE FUNCTION shard_0007.happy_count() RETURNS bigint LANGUAGE sql
    BEGIN ATOMIC SELECT count(*) FROM shard_0007.feelings WHERE mood = 'happy'; END;
CREATE PROCEDURE shard_0007.forget(keep integer) LANGUAGE sql AS 'DELETE FROM shard_0007.log WHERE id > keep';
GRANT EXECUTE ON PROCEDURE shard_0007.forget(integer) TO sc_writer;
CREATE TRIGGER log_stamp BEFORE INSERT ON shard_0007.log FOR EACH ROW EXECUTE FUNCTION shard_0007.stamp();
CREATE TRIGGER log_stamp_off BEFORE UPDATE ON shard_0007.log FOR EACH ROW EXECUTE FUNCTION shard_0007.stamp();
ALTER TABLE shard_0007.log DISABLE TRIGGER log_stamp_off;
CREATE FUNCTION shard_0007.touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.note := NEW.note || '.'; RETURN NEW; END $$;
CREATE TRIGGER feelings_replica BEFORE INSERT ON shard_0007.feelings FOR EACH ROW EXECUTE FUNCTION shard_0007.touch();
ALTER TABLE shard_0007.feelings ENABLE REPLICA TRIGGER feelings_replica;
COMMENT ON TRIGGER log_stamp ON shard_0007.log IS 'marks every row';
-- Views, a view on a view, a materialized view holding rows.
CREATE VIEW shard_0007.recent AS SELECT id, mood, score FROM shard_0007.feelings WHERE id > 0;
CREATE VIEW shard_0007.happy WITH (security_barrier) AS
    SELECT id, shard_0007.audit() AS total FROM shard_0007.recent WHERE mood = 'happy' WITH CASCADED CHECK OPTION;
ALTER VIEW shard_0007.recent ALTER COLUMN score SET DEFAULT 50;
ALTER VIEW shard_0007.recent OWNER TO sc_alice;
GRANT SELECT ON shard_0007.recent TO sc_reader;
COMMENT ON VIEW shard_0007.recent IS 'the recent feelings';
CREATE MATERIALIZED VIEW shard_0007.mood_counts AS SELECT mood, count(*) AS n FROM shard_0007.feelings GROUP BY mood;
CREATE UNIQUE INDEX mood_counts_mood ON shard_0007.mood_counts (mood);
CREATE MATERIALIZED VIEW shard_0007.empty_counts AS SELECT count(*) AS n FROM shard_0007.log WITH NO DATA;
-- Row security and a policy naming a role, owners, grants.
ALTER TABLE shard_0007.feelings ENABLE ROW LEVEL SECURITY;
CREATE POLICY feelings_read ON shard_0007.feelings FOR SELECT TO sc_reader, sc_writer USING (score > 10);
COMMENT ON POLICY feelings_read ON shard_0007.feelings IS 'only the good ones';
ALTER TABLE shard_0007.feelings OWNER TO sc_alice;
GRANT SELECT, INSERT ON shard_0007.feelings TO sc_writer WITH GRANT OPTION;
GRANT UPDATE (note) ON shard_0007.feelings TO sc_reader;
ALTER TYPE shard_0007.mood OWNER TO sc_alice;
REVOKE USAGE ON TYPE shard_0007.mood FROM PUBLIC;
GRANT USAGE ON TYPE shard_0007.mood TO sc_reader;
GRANT USAGE ON SEQUENCE shard_0007.id_seq TO sc_writer;
-- The schema's own owner, privileges and comment.
ALTER SCHEMA shard_0007 OWNER TO sc_alice;
GRANT USAGE ON SCHEMA shard_0007 TO sc_reader, sc_writer;
COMMENT ON SCHEMA shard_0007 IS 'shard seven';
-- A grant made by a grantee that holds the grant option.
SET ROLE sc_writer;
GRANT SELECT ON shard_0007.feelings TO sc_reader;
RESET ROLE;
RESET client_min_messages;
INSERT INTO shard_0007.feelings (mood, score, note) VALUES ('happy', 90, 'yes'), ('sad', 5, 'no');
REFRESH MATERIALIZED VIEW shard_0007.mood_counts;

-- Every kind is there.
SELECT kind, count(*) FROM sharded_id.schema_inventory('shard_0007') GROUP BY kind ORDER BY kind;

-- The statements, run in another database in one transaction.
CREATE DATABASE sc_target;
SELECT dblink_connect('sc', format('dbname=sc_target user=%s host=%s port=%s', current_user,
                                  split_part(current_setting('unix_socket_directories'), ',', 1), current_setting('port')));
SELECT dblink_exec('sc', 'SET client_min_messages = warning; CREATE EXTENSION sharded_id');
SELECT dblink_exec('sc', 'BEGIN; ' || string_agg(s, E';\n') || '; COMMIT')
FROM sharded_id.schema_ddl('shard_0007') s;

-- The two inventories: no difference.
CREATE TEMP TABLE sc_remote AS
SELECT * FROM dblink('sc', $$SELECT * FROM sharded_id.schema_inventory('shard_0007')$$)
    AS t(kind text, name text, owner name, acl text, details text, definition text);
SELECT count(*) > 40 AS many_objects FROM sc_remote;
(SELECT 'only source' AS side, * FROM sharded_id.schema_inventory('shard_0007') EXCEPT SELECT 'only source', * FROM sc_remote)
UNION ALL
(SELECT 'only copy', * FROM sc_remote EXCEPT SELECT 'only copy', * FROM sharded_id.schema_inventory('shard_0007'))
ORDER BY 1, 2, 3;
-- What the issue named, read from the copy's own catalogs.
SELECT * FROM dblink('sc', $$
    SELECT p.oid::regprocedure::text, pg_get_userbyid(p.proowner), p.prosecdef, p.proacl::text
    FROM pg_proc p WHERE p.oid = 'shard_0007.audit()'::regprocedure
    UNION ALL
    SELECT 'schema', pg_get_userbyid(n.nspowner), NULL, n.nspacl::text FROM pg_namespace n WHERE n.nspname = 'shard_0007'
    UNION ALL
    SELECT c.relname, pg_get_userbyid(c.relowner), NULL, c.relacl::text FROM pg_class c WHERE c.oid = 'shard_0007.recent'::regclass
    UNION ALL
    SELECT t.typname, pg_get_userbyid(t.typowner), NULL, t.typacl::text FROM pg_type t WHERE t.oid = 'shard_0007.mood'::regtype
    UNION ALL
    SELECT g.tgname, NULL, NULL, g.tgenabled::text FROM pg_trigger g
    WHERE g.tgrelid IN ('shard_0007.log'::regclass, 'shard_0007.feelings'::regclass) AND NOT g.tgisinternal
    ORDER BY 1 $$) AS t(object text, owner text, security_definer boolean, acl text);
-- The materialized view holds rows as the source's does, once the rows
-- are copied and it is refreshed; the empty one stays unpopulated.
SELECT dblink_exec('sc', $$SET session_replication_role = replica;
    INSERT INTO shard_0007.feelings (id, mood, score, note) OVERRIDING SYSTEM VALUE VALUES (1, 'happy', 90, 'yes');
    RESET session_replication_role; REFRESH MATERIALIZED VIEW shard_0007.mood_counts$$);
SELECT * FROM dblink('sc', $$SELECT mood::text, n FROM shard_0007.mood_counts
    UNION ALL SELECT 'populated: ' || relname, relispopulated::int FROM pg_class
    WHERE relname IN ('mood_counts', 'empty_counts') ORDER BY 1$$) AS t(mood text, n bigint);

-- The inventory sees a change of any of these on one side.
SELECT dblink_exec('sc', $$ALTER FUNCTION shard_0007.audit() SECURITY INVOKER;
    ALTER TABLE shard_0007.log ENABLE TRIGGER log_stamp_off; REVOKE USAGE ON SCHEMA shard_0007 FROM sc_reader;
    DROP VIEW shard_0007.happy$$);
SELECT kind, name, details FROM (
    (SELECT * FROM sharded_id.schema_inventory('shard_0007')
     EXCEPT SELECT * FROM dblink('sc', $$SELECT * FROM sharded_id.schema_inventory('shard_0007')$$)
         AS t(kind text, name text, owner name, acl text, details text, definition text))) d
ORDER BY 1, 2;

-- An object schema_ddl cannot make again is refused, by name, with 0A000.
\set VERBOSITY default
CREATE AGGREGATE shard_0007.total(integer) (SFUNC = int4pl, STYPE = integer);
SELECT count(*) FROM sharded_id.schema_ddl('shard_0007');
DROP AGGREGATE shard_0007.total(integer);
CREATE OPERATOR shard_0007.=== (LEFTARG = integer, RIGHTARG = integer, FUNCTION = int4eq);
CREATE TEXT SEARCH CONFIGURATION shard_0007.words (COPY = pg_catalog.simple);
CREATE STATISTICS shard_0007.feel_stats ON mood, score FROM shard_0007.feelings;
ALTER DEFAULT PRIVILEGES FOR ROLE sc_alice IN SCHEMA shard_0007 GRANT SELECT ON TABLES TO sc_reader;
DO $$
DECLARE
    detail text;
BEGIN
    PERFORM sharded_id.schema_ddl('shard_0007');
EXCEPTION WHEN feature_not_supported THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RAISE NOTICE 'refused (%): % (%)', SQLSTATE, SQLERRM, detail;
END $$;
DROP OPERATOR shard_0007.=== (integer, integer);
DROP TEXT SEARCH CONFIGURATION shard_0007.words;
DROP STATISTICS shard_0007.feel_stats;
ALTER DEFAULT PRIVILEGES FOR ROLE sc_alice IN SCHEMA shard_0007 REVOKE SELECT ON TABLES FROM sc_reader;
CREATE RULE feelings_quiet AS ON DELETE TO shard_0007.log DO INSTEAD NOTHING;
SELECT count(*) FROM sharded_id.schema_ddl('shard_0007');
DROP RULE feelings_quiet ON shard_0007.log;
SELECT count(*) > 0 AS rebuilds_again FROM sharded_id.schema_ddl('shard_0007');
-- Only the extension's owner and the roles it grants it to read it.
SELECT has_function_privilege('sc_reader', 'sharded_id.schema_inventory(name)', 'EXECUTE') AS reader_may_inventory;

-- Clean up.
SELECT dblink_disconnect('sc');
DROP DATABASE sc_target;
SET client_min_messages = warning;
SELECT sharded_id.drop_shard(7);
DELETE FROM sharded_id.shard_tables;
DELETE FROM sharded_id.retired_shards;
DROP SCHEMA sc_tmpl CASCADE;
DROP EXTENSION dblink;
DROP ROLE sc_alice, sc_reader, sc_writer;
RESET client_min_messages;
