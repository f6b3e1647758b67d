--
-- Uniqueness under load: 2,000,000 ids for one shard in one statement is
-- about twice the 1024-per-millisecond ceiling, so the generator has to
-- wait for the clock rather than wrap the sequence field.
--
CREATE SEQUENCE stress_seq;
CREATE UNLOGGED TABLE stress_ids (id bigint NOT NULL);

SELECT clock_timestamp() AS before \gset
INSERT INTO stress_ids SELECT sharded_id.next_id(77, 'stress_seq') FROM generate_series(1, 2000000);
SELECT clock_timestamp() AS after \gset

SELECT count(*) AS ids,
       count(*) - count(DISTINCT id) AS repeats,
       bool_and(sharded_id.shard_id(id) = 77) AS all_shard_77
FROM stress_ids;

-- No millisecond holds more than 1024 ids, and the embedded time stays
-- within the statement (truthful, not borrowed from the future).
SELECT max(n) <= 1024 AS at_most_1024_per_ms,
       count(*) >= 2000000 / 1024 AS enough_milliseconds
FROM (SELECT sharded_id.created_at(id) AS ms, count(*) AS n
      FROM stress_ids GROUP BY 1) per_ms;
SELECT min(sharded_id.created_at(id)) >= date_trunc('milliseconds', :'before'::timestamptz) AS not_before_start,
       max(sharded_id.created_at(id)) <= :'after'::timestamptz AS not_after_end
FROM stress_ids;

-- The same shard through a second sequence shares the same state: the two
-- sequences' low bits collide, the ids do not.
CREATE SEQUENCE stress_seq2 START 1;
ALTER SEQUENCE stress_seq RESTART 1;
TRUNCATE stress_ids;
INSERT INTO stress_ids
SELECT sharded_id.next_id(77, CASE WHEN g % 2 = 0 THEN 'stress_seq' ELSE 'stress_seq2' END::regclass)
FROM generate_series(1, 200000) g;
SELECT count(*) AS ids, count(*) - count(DISTINCT id) AS repeats FROM stress_ids;

-- Spread over every shard of the layout.
TRUNCATE stress_ids;
INSERT INTO stress_ids SELECT sharded_id.next_id(g % 8192, 'stress_seq') FROM generate_series(1, 500000) g;
SELECT count(*) AS ids,
       count(*) - count(DISTINCT id) AS repeats,
       count(DISTINCT sharded_id.shard_id(id)) AS shards
FROM stress_ids;

DROP TABLE stress_ids;
DROP SEQUENCE stress_seq, stress_seq2;

-- A sequence whose every value has the same low ten bits.
CREATE SEQUENCE stride_seq INCREMENT BY 1024;
CREATE UNLOGGED TABLE stride_ids AS
SELECT sharded_id.next_id(78, 'stride_seq') AS id FROM generate_series(1, 20000);
SELECT count(*) AS ids,
       count(*) - count(DISTINCT id) AS repeats,
       count(DISTINCT sharded_id.seq_id(id)) > 1 AS low_bits_vary
FROM stride_ids;
DROP TABLE stride_ids;
DROP SEQUENCE stride_seq;
