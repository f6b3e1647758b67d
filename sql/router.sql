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

-- Connection strings to postgres_fdw options, without credentials.
SELECT sharded_id._connstr_options($$host=db1.example port=5433 dbname='my app' user=u password='p w'$$);
SELECT sharded_id._connstr_options($$dbname='it\'s' sslmode=require$$);
SELECT sharded_id.node_server('node1');

-- The shard map must hold shards 0..N-1 with N a power of two.
SELECT sharded_id.apply_shard_map();
INSERT INTO sharded_id.nodes VALUES ('n1', 'dbname=a'), ('n2', 'dbname=b');
INSERT INTO sharded_id.shard_map VALUES (0, 'n1'), (1, 'n2'), (2, 'n1');
SELECT sharded_id.apply_shard_map();
INSERT INTO sharded_id.shard_map VALUES (4, 'n2');
SELECT sharded_id.apply_shard_map();
INSERT INTO sharded_id.shard_map VALUES (9000, 'n1');
INSERT INTO sharded_id.nodes VALUES ('Bad Name', 'dbname=c');
UPDATE sharded_id.shard_map SET shard_id = 3 WHERE shard_id = 4;
-- A valid map, but no PL/Proxy in this database.
SELECT count(*) FROM pg_foreign_data_wrapper WHERE fdwname = 'plproxy';
SELECT sharded_id.apply_shard_map();

-- With PL/Proxy: the cluster's partitions follow the map.
CREATE EXTENSION plproxy;
SELECT sharded_id.apply_shard_map('regress_cluster', connection_lifetime => 600);
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'regress_cluster';
UPDATE sharded_id.shard_map SET node_name = 'n1' WHERE shard_id = 3;
SELECT sharded_id.apply_shard_map('regress_cluster');
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'regress_cluster';

DROP SERVER regress_cluster CASCADE;
DROP EXTENSION plproxy;
DELETE FROM sharded_id.shard_map;
DELETE FROM sharded_id.nodes;
