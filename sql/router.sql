--
-- Router and data-node helpers of 1.2: input checks that need no second
-- server.  test/t/005_scale_out.pl runs the real thing.
--
\set SHOW_CONTEXT never

-- enter_shard: the schema of a local shard, or a retryable error.
SELECT sharded_id.create_shard(3);
SELECT sharded_id.enter_shard(3);
SELECT sharded_id.enter_shard(4);
\set VERBOSITY sqlstate
SELECT sharded_id.enter_shard(4);
\set VERBOSITY default
SELECT sharded_id.drop_shard(3);

-- The router is an extension of its own, which needs dblink, postgres_fdw
-- and PL/Proxy (CASCADE installs them).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sharded_id_router CASCADE;
RESET client_min_messages;

-- Connection strings to postgres_fdw options, without credentials.
SELECT sharded_id._connstr_options($$host=db1.example port=5433 dbname='my app' user=u password='p w'$$);
SELECT sharded_id._connstr_options($$dbname='it\'s' sslmode=require$$);
-- libpq's own rules: a URI gives the options of its keyword/value form, and
-- secrets other than the password stay out too.
SELECT sharded_id._connstr_options('postgresql://u:p%20w@db1.example:5433/my%20app?sslmode=require')
       = sharded_id._connstr_options($$host=db1.example port=5433 dbname='my app' user=u password='p w' sslmode=require$$)
       AS uri_is_keyword_value;
SELECT sharded_id._connstr_options('postgresql://db1.example:5433/my%20app?sslmode=require');
SELECT sharded_id._connstr_options('host=a sslpassword=secret passfile=/home/app/.pgpass');
SELECT sharded_id._connstr_options('host=a nosuchoption=1');
SELECT sharded_id._connstr_options('postgresql://[::1');
\set VERBOSITY sqlstate
SELECT sharded_id._connstr_options('host=a nosuchoption=1');
\set VERBOSITY default

-- Connection strings may hold passwords: only the owner, and the roles it
-- grants SELECT to, read them.  The shard map stays readable.
CREATE ROLE sharded_id_regress_reader;
SET ROLE sharded_id_regress_reader;
SELECT connstr FROM sharded_id.nodes;
SELECT count(*) AS map_readable FROM sharded_id.shard_map;
RESET ROLE;
DROP ROLE sharded_id_regress_reader;
SELECT sharded_id.node_server('node1');

-- The shard map must hold shards 0..N-1 with N a power of two.
SELECT sharded_id.apply_shard_map();
INSERT INTO sharded_id.nodes VALUES ('n1', 'dbname=a'), ('n2', 'dbname=b');
INSERT INTO sharded_id.shard_map VALUES (0, 'n1'), (1, 'n2'), (2, 'n1');
SELECT sharded_id.apply_shard_map();
INSERT INTO sharded_id.shard_map VALUES (4, 'n2');
SELECT sharded_id.apply_shard_map();
-- Shards are checked against the layout in force (0..8191 for the default).
INSERT INTO sharded_id.shard_map VALUES (9000, 'n1');
SELECT sharded_id.apply_shard_map();
DELETE FROM sharded_id.shard_map WHERE shard_id = 9000;
INSERT INTO sharded_id.nodes VALUES ('Bad Name', 'dbname=c');
UPDATE sharded_id.shard_map SET shard_id = 3 WHERE shard_id = 4;

-- With PL/Proxy (which sharded_id_router requires): the cluster's
-- partitions follow the map.
SELECT sharded_id.apply_shard_map('regress_cluster', connection_lifetime => 600);
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'regress_cluster';
UPDATE sharded_id.shard_map SET node_name = 'n1' WHERE shard_id = 3;
SELECT sharded_id.apply_shard_map('regress_cluster');
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'regress_cluster';


-- Ops tables: one postgres_fdw partition per shard, named with the
-- configured zero padding, reading the shard's schema on its node.
SELECT sharded_id.configure(pad_width => 5);
-- The same server as a URI and as keyword/value: the same foreign server.
INSERT INTO sharded_id.nodes VALUES
    ('n3', 'postgresql://db1.example:5433/app?sslmode=require&application_name=router'),
    ('n4', 'host=db1.example port=5433 dbname=app sslmode=require application_name=router');
SELECT sharded_id.apply_shard_map('regress_cluster');
SELECT s3.srvoptions AS uri_server, s3.srvoptions = s4.srvoptions AS same_as_keyword_value
FROM pg_foreign_server s3, pg_foreign_server s4
WHERE s3.srvname = 'sharded_id_n3' AND s4.srvname = 'sharded_id_n4';
CREATE TABLE public.regress_items (id bigint PRIMARY KEY, v text);
SELECT sharded_id.create_ops_table('public.regress_items', 'regress_ops');
SELECT c.relname AS partition, s.srvname AS server, ft.ftoptions AS options
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_foreign_table ft ON ft.ftrelid = c.oid
JOIN pg_foreign_server s ON s.oid = ft.ftserver
WHERE i.inhparent = 'regress_ops.regress_items'::regclass
ORDER BY 1;
SET client_min_messages = warning;
DROP SCHEMA regress_ops CASCADE;
DROP TABLE public.regress_items;
DELETE FROM sharded_id.ops_tables;
DROP SERVER sharded_id_n1, sharded_id_n2, sharded_id_n3, sharded_id_n4 CASCADE;
DELETE FROM sharded_id.nodes WHERE node_name IN ('n3', 'n4');
RESET client_min_messages;

-- The limits follow the layout: snowflake has 1024 shards, 0 to 1023.
SELECT sharded_id.configure(layout => 'snowflake');
INSERT INTO sharded_id.shard_map SELECT s, 'n1' FROM generate_series(4, 2047) s;
SELECT sharded_id.apply_shard_map('regress_cluster');
DELETE FROM sharded_id.shard_map WHERE shard_id >= 1024;
SELECT sharded_id.apply_shard_map('regress_cluster');
DELETE FROM sharded_id.settings;

-- place_shard: bad input is refused before anything changes, and PUBLIC
-- may not call it.  (test/t/020_runbook.pl places a restored shard.)
\set VERBOSITY sqlstate
SELECT sharded_id.place_shard(NULL, 'n1');
SELECT sharded_id.place_shard(1, NULL);
SELECT sharded_id.place_shard(1, 'no_such_node');
SELECT sharded_id.place_shard(5000, 'n1');
\set VERBOSITY default
SELECT sharded_id.place_shard(5000, 'n1');
SELECT node_name FROM sharded_id.shard_map WHERE shard_id = 1;
CREATE ROLE regress_placer;
SET ROLE regress_placer;
SELECT sharded_id.place_shard(1, 'n1');
RESET ROLE;
DROP ROLE regress_placer;

-- route() checks its arguments: a shard some layout has, a cluster name
-- that can name a foreign server.
\set VERBOSITY sqlstate
SELECT sharded_id.route(99999);
SELECT sharded_id.route(-1);
SELECT sharded_id.route(1, repeat('x', 100000));
SELECT sharded_id.route(1, '');
\set VERBOSITY default
SELECT sharded_id.route(8191, repeat('x', 63)) = repeat('x', 63) AS largest_accepted;

-- A node call of a function the node's sharded_id lacks (a node of another
-- version): 42883, with the way out.
SELECT dblink_connect('node', format('dbname=%s user=%s host=%s port=%s', current_database(), current_user,
                      split_part(current_setting('unix_socket_directories'), ',', 1), current_setting('port')));
\set SHOW_CONTEXT errors
SELECT sharded_id._node_call('node', '_node_no_such_function', 'x');
\set SHOW_CONTEXT never
SELECT dblink_disconnect('node');

DROP SERVER regress_cluster CASCADE;
DELETE FROM sharded_id.shard_map;
DELETE FROM sharded_id.nodes;
SET client_min_messages = warning;
DROP EXTENSION sharded_id_router;
DROP EXTENSION plproxy;
DROP EXTENSION postgres_fdw CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
