--
-- Counter mode: ids with no sequence.  The sequence field counts up within
-- each millisecond, so a shard's ids strictly increase in the order they
-- are minted; at most the layout's capacity in one millisecond; no repeat.
--
SET timezone = 'UTC';

-- 2,000,000 ids on one shard in one statement, in generation order.
CREATE TEMP TABLE burst AS
SELECT g, sharded_id.next_id(21) AS id FROM generate_series(1, 2000000) g;
SELECT count(*) AS ids,
       count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE id <= prev) AS not_increasing,
       bool_and(sharded_id.shard_id(id) = 21) AS all_shard_21
FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev FROM burst) b;
-- Per millisecond: at most 1024, and the sequence field is 0, 1, 2, ...
SELECT max(n) <= 1024 AS at_most_1024_per_ms,
       bool_and(lo = 0 AND hi = n - 1) AS fields_count_from_0
FROM (SELECT count(*) AS n, min(sharded_id.seq_id(id)) AS lo, max(sharded_id.seq_id(id)) AS hi
      FROM burst GROUP BY sharded_id.created_at(id)) per_ms;
SELECT count(*) >= 1953 AS spans_at_least_1953_ms
FROM (SELECT DISTINCT sharded_id.created_at(id) FROM burst) ms;

-- Single calls and a batch interleave and keep increasing.
CREATE TEMP TABLE mixed (ord serial, id bigint);
INSERT INTO mixed (id) SELECT max(id) FROM burst;
INSERT INTO mixed (id) SELECT sharded_id.next_id(21);
INSERT INTO mixed (id) SELECT sharded_id.next_ids(21, 5000);
INSERT INTO mixed (id) SELECT sharded_id.next_id(21);
SELECT count(*) AS ids, count(*) FILTER (WHERE id <= prev) AS not_increasing
FROM (SELECT id, lag(id) OVER (ORDER BY ord) AS prev FROM mixed) m;

-- Other layouts, by name: snowflake holds 4096 per millisecond and 1024
-- shards.
CREATE TEMP TABLE snow AS
SELECT g, sharded_id.next_id_in_layout(1000, 'snowflake') AS id FROM generate_series(1, 100000) g;
SELECT count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE id <= prev) AS not_increasing,
       bool_and(sharded_id.shard_id(id, 'snowflake') = 1000) AS all_shard_1000
FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev FROM snow) s;
SELECT max(n) <= 4096 AS at_most_4096_per_ms
FROM (SELECT count(*) AS n FROM snow GROUP BY sharded_id.created_at(id, 'snowflake')) per_ms;
SELECT count(*) AS batch, count(DISTINCT id) AS distinct_ids
FROM sharded_id.next_ids_in_layout(7, 3000, '58com') id;
SELECT sharded_id.shard_id(sharded_id.next_id_in_layout(7, '58com'), '58com') AS shard_58com;

-- The seed's literal form still calls the sequence form: an unknown
-- literal never reaches a counter function.
CREATE SEQUENCE counter_seq;
EXPLAIN (VERBOSE, COSTS OFF) SELECT sharded_id.next_id(5, 'counter_seq');
SELECT last_value AS seq_called FROM counter_seq WHERE sharded_id.next_id(5, 'counter_seq') > 0;

-- Errors, and the checks run even for a batch of 0.
SELECT sharded_id.next_id(8192);
SELECT sharded_id.next_id(-1);
SELECT sharded_id.next_id_in_layout(1024, 'snowflake');
SELECT sharded_id.next_id_in_layout(1, 'no_such_layout');
SELECT * FROM sharded_id.next_ids(1, -1);
SELECT * FROM sharded_id.next_ids(9000, 0);
SELECT * FROM sharded_id.next_ids(9000, 'counter_seq', 0);
SELECT count(*) AS empty_batch FROM sharded_id.next_ids(1, 0);

-- Nothing gates minting but EXECUTE, so PUBLIC does not have it.
CREATE ROLE sharded_id_regress_counter;
SET ROLE sharded_id_regress_counter;
SELECT sharded_id.next_id(1);
RESET ROLE;
GRANT EXECUTE ON FUNCTION sharded_id.next_id(integer) TO sharded_id_regress_counter;
SET ROLE sharded_id_regress_counter;
SELECT sharded_id.shard_id(sharded_id.next_id(1)) AS granted;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION sharded_id.next_id(integer) FROM sharded_id_regress_counter;
DROP ROLE sharded_id_regress_counter;

-- Provisioning in counter mode: no id_seq, and the shard's next_id()
-- inlines to the counter call.
SET client_min_messages = warning;
\set SHOW_CONTEXT never
SELECT sharded_id.configure(mode => 'counter');
SELECT sharded_id.configure(mode => 'fast');
CREATE SCHEMA capp;
CREATE TABLE capp.events (id bigint PRIMARY KEY, what text);
SELECT sharded_id.add_table('capp.events') AS copies;
SELECT sharded_id.create_shard(30), sharded_id.create_shard(31);
SELECT shard_id, mode FROM sharded_id.shards ORDER BY shard_id;
SELECT to_regclass('shard_0030.id_seq') AS no_sequence;
SELECT pg_get_expr(d.adbin, d.adrelid) AS events_id_default
FROM pg_attrdef d WHERE d.adrelid = 'shard_0030.events'::regclass;
EXPLAIN (VERBOSE, COSTS OFF) SELECT shard_0031.next_id();
INSERT INTO shard_0030.events (what) SELECT 'e' || g FROM generate_series(1, 1000) g;
SELECT count(*) AS events, count(*) FILTER (WHERE id <= prev) AS not_increasing,
       bool_and(sharded_id.shard_id(id) = 30) AS all_shard_30
FROM (SELECT id, lag(id) OVER (ORDER BY substr(what, 2)::int) AS prev FROM shard_0030.events) e;
SELECT sharded_id.configure(mode => 'seed');
-- A template added later reaches counter shards without a sequence.
CREATE TABLE capp.more (id bigint PRIMARY KEY);
SELECT sharded_id.add_table('capp.more') AS copies;
SELECT pg_get_expr(d.adbin, d.adrelid) AS more_id_default
FROM pg_attrdef d WHERE d.adrelid = 'shard_0031.more'::regclass;

SELECT count(*) AS dropped FROM (SELECT sharded_id.drop_shard(shard_id) FROM sharded_id.shards) d;
DELETE FROM sharded_id.shard_tables;
DELETE FROM sharded_id.settings;
DROP SCHEMA capp CASCADE;
DROP SEQUENCE counter_seq;
RESET client_min_messages;
