--
-- Bad input to the shard, router and move calls: each is refused with a
-- SQLSTATE of its own, before anything is read from a node or changed, and
-- the catalogs, the server's shard state and the PL/Proxy cluster are the
-- same afterwards.  (test/t/027_planted_row.pl runs the moves for real.)
--
\set SHOW_CONTEXT never

-- The router is an extension of its own.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sharded_id_router CASCADE;
RESET client_min_messages;

-- The SQLSTATE and message of a statement, or 'no error'.
CREATE FUNCTION pg_temp.error_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE query;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- Everything a call could change: the shard catalog, the retirements, the
-- server's ownership and floors, schemas, the router's map and nodes, the
-- foreign servers and user mappings, and the move journal.
CREATE FUNCTION pg_temp.state() RETURNS text
LANGUAGE sql AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(format('%s %s %s %s', shard_id, schema_name, layout, mode), ',' ORDER BY shard_id) FROM sharded_id.shards),
        (SELECT string_agg(format('%s %s %s', shard_id, layout, high_water), ',' ORDER BY shard_id) FROM sharded_id.retired_shards),
        (SELECT string_agg(f::text, ',' ORDER BY f::text) FROM sharded_id.floors() f),
        (SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace),
        (SELECT string_agg(format('%s %s', shard_id, node_name), ',' ORDER BY shard_id) FROM sharded_id.shard_map),
        (SELECT string_agg(node_name, ',' ORDER BY node_name) FROM sharded_id.nodes),
        (SELECT string_agg(format('%s %s', srvname, srvoptions), ',' ORDER BY srvname) FROM pg_foreign_server),
        (SELECT string_agg(format('%s %s %s', srvname, usename, umoptions), ',' ORDER BY srvname, usename) FROM pg_user_mappings),
        (SELECT string_agg(format('%s %s', move_id, state), ',' ORDER BY move_id) FROM sharded_id.moves),
        (SELECT string_agg(format('%I.%I %s', n.nspname, p.proname, pg_get_functiondef(p.oid)), ',' ORDER BY n.nspname, p.proname)
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname LIKE 'shard\_%')))
$$;

-- 1. apply_shard_map: bad settings are refused before PL/Proxy sees them.
INSERT INTO sharded_id.nodes VALUES ('bad_n1', 'dbname=a'), ('bad_n2', 'dbname=b');
INSERT INTO sharded_id.shard_map VALUES (0, 'bad_n1'), (1, 'bad_n2');
SELECT sharded_id.apply_shard_map('sharded_id');
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'sharded_id';
SELECT pg_temp.state() AS before \gset
SELECT pg_temp.error_of($$SELECT sharded_id.apply_shard_map('sharded_id', -1, -1)$$) AS both_negative;
SELECT pg_temp.error_of($$SELECT sharded_id.apply_shard_map('sharded_id', -1)$$) AS negative_lifetime;
SELECT pg_temp.error_of($$SELECT sharded_id.apply_shard_map('sharded_id', query_timeout => -5)$$) AS negative_timeout;
SELECT pg_temp.error_of($$SELECT sharded_id.apply_shard_map(NULL)$$) AS null_cluster;
SELECT pg_temp.error_of($$SELECT sharded_id.apply_shard_map('')$$) AS empty_cluster;
SELECT pg_temp.state() = :'before' AS apply_shard_map_changed_nothing;
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'sharded_id';
-- 0 stays what it was: no limit.
SELECT sharded_id.apply_shard_map('sharded_id', 0, 0);
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'sharded_id';

-- 2. create_shard may not adopt another shard's schema.  Shard 12 retired
-- keeps its schema, whose next_id() and defaults mint shard 12.
CREATE TABLE public.bad_template (id bigint PRIMARY KEY, v text);
SELECT sharded_id.add_table('public.bad_template');
SELECT sharded_id.create_shard(12);
SELECT sharded_id.create_shard(13);
INSERT INTO shard_0012.bad_template (v) VALUES ('twelve');
SELECT sharded_id.retire_shard(12) > 0 AS retired;
SELECT pg_temp.state() AS before \gset
SELECT pg_temp.error_of($$SELECT sharded_id.create_shard(42, 'shard_0012')$$) AS retired_shards_schema;
-- Without rows too, and whatever the settings name it.
DELETE FROM shard_0012.bad_template;
SELECT pg_temp.error_of($$SELECT sharded_id.create_shard(42, 'shard_0012')$$) AS retired_shards_empty_schema;
SELECT pg_temp.error_of($$SELECT sharded_id.create_shard(42, 'shard_0013')$$) AS live_shards_schema;
SELECT pg_temp.state() = :'before' AS create_shard_changed_nothing;
SELECT sharded_id.create_shard(42, 'shard_0012');
\set VERBOSITY default
-- Shard 12 takes its own schema back, and mints shard 12 again.
SELECT sharded_id.create_shard(12);
SELECT sharded_id.shard_id(shard_0012.next_id()) AS mints;
INSERT INTO shard_0012.bad_template (v) VALUES ('twelve again') RETURNING sharded_id.shard_id(id) AS row_shard;
SELECT shard_id, schema_name FROM sharded_id.shards ORDER BY shard_id;
SELECT count(*) AS retired FROM sharded_id.retired_shards WHERE shard_id IN (12, 42);
-- A new shard's own schema is still adopted, empty or made for it.
CREATE SCHEMA bad_empty;
SELECT sharded_id.create_shard(44, 'bad_empty');
SET client_min_messages = warning;
SELECT sharded_id.drop_shard(s) FROM unnest('{12, 13, 44}'::int[]) s;
RESET client_min_messages;
DELETE FROM sharded_id.shard_tables;
DROP TABLE public.bad_template;

-- 3. rebalance and move_shard check every argument before anything else,
-- also when nothing would move: here the shards are balanced.  (The
-- nodes do not answer: rebalance_plan leaves their method unknown.)
SELECT pg_temp.state() AS before \gset
CALL sharded_id.rebalance(method => 'bogus');
\set VERBOSITY sqlstate
CALL sharded_id.rebalance(method => 'bogus');
CALL sharded_id.rebalance(dry_run => NULL);
CALL sharded_id.rebalance(cluster => NULL);
CALL sharded_id.rebalance(cluster => 'no_such_cluster');
CALL sharded_id.rebalance(ARRAY['bad_n1', NULL]);
CALL sharded_id.move_shard(0, 'bad_n2', method => 'bogus');
CALL sharded_id.move_shard(0, 'bad_n2', cluster => 'no_such_cluster');
CALL sharded_id.move_shard(0, 'bad_n2', max_lag => -1);
CALL sharded_id.move_shard(0, 'bad_n2', timeout => '-1 s');
CALL sharded_id.move_shard(0, 'bad_n2', freeze_timeout => '0');
CALL sharded_id.move_shard(0, 'bad_n2', cluster => NULL);
CALL sharded_id.move_shard(NULL, 'bad_n2');
\set VERBOSITY default
SELECT pg_temp.error_of($$SELECT * FROM sharded_id.rebalance_plan(ARRAY[NULL])$$) AS plan_null_node;
SELECT pg_temp.error_of($$CALL sharded_id.move_shard(0, 'bad_n2', cluster => 'no_such_cluster')$$) AS unknown_cluster;
SELECT pg_temp.error_of($$CALL sharded_id.rebalance(method => 'bogus', dry_run => true)$$) AS bogus_dry_run;
SELECT pg_temp.state() = :'before' AS moves_changed_nothing;
-- A balanced map with good arguments: nothing to move.
CALL sharded_id.rebalance(method => 'dump');

DROP SERVER sharded_id CASCADE;
DELETE FROM sharded_id.shard_map;
DELETE FROM sharded_id.nodes;
SET client_min_messages = warning;
DROP EXTENSION sharded_id_router;
DROP EXTENSION plproxy;
DROP EXTENSION postgres_fdw CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
