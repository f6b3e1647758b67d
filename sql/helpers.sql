--
-- Range, bulk, routing and text helpers.
--
SET timezone = 'UTC';

-- min_id_at / max_id_at bound every id of a millisecond.
SELECT sharded_id.min_id_at('2026-01-01') AS min_id,
       sharded_id.max_id_at('2026-01-01') AS max_id,
       sharded_id.min_id_at('2026-01-01') = sharded_id.encode('2026-01-01', 0, 0) AS min_is_encode,
       sharded_id.max_id_at('2026-01-01') + 1 = sharded_id.min_id_at('2026-01-01 00:00:00.001') AS adjacent;
SELECT sharded_id.min_id_at('2026-01-01', 'snowflake') = sharded_id.encode('2026-01-01', 0, 0, 'snowflake') AS snowflake_min;

-- ... and a WHERE clause with them is a primary-key range scan.
CREATE TABLE events (id bigint PRIMARY KEY, body text);
INSERT INTO events
SELECT sharded_id.encode(timestamptz '2025-12-31 12:00' + g * interval '1 minute', g % 8192, g % 1024), 'e' || g
FROM generate_series(1, 2000) g;
ANALYZE events;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT * FROM events WHERE id >= sharded_id.min_id_at('2026-01-01') AND id <= sharded_id.max_id_at('2026-01-01 06:00');
RESET enable_seqscan;
SELECT count(*) AS events_from_midnight_to_six
FROM events WHERE id >= sharded_id.min_id_at('2026-01-01') AND id <= sharded_id.max_id_at('2026-01-01 06:00');
SELECT count(*) AS same_by_decoding
FROM events WHERE sharded_id.created_at(id) BETWEEN '2026-01-01' AND '2026-01-01 06:00';
DROP TABLE events;

-- Bulk: next_ids reserves n ids in one call; single calls interleaved
-- with batches never repeat them.
CREATE SEQUENCE bulk_seq;
CREATE TEMP TABLE bulk_ids (id bigint);
INSERT INTO bulk_ids SELECT * FROM sharded_id.next_ids(12, 'bulk_seq', 5000);
INSERT INTO bulk_ids SELECT sharded_id.next_id(12, 'bulk_seq') FROM generate_series(1, 3000);
INSERT INTO bulk_ids SELECT * FROM sharded_id.next_ids(12, 'bulk_seq', 5000);
-- Batches of 3 and single calls alternating, row by row.
INSERT INTO bulk_ids
SELECT b
FROM generate_series(1, 1000) g,
     LATERAL (SELECT sharded_id.next_id(12, 'bulk_seq') AS b
              UNION ALL
              SELECT * FROM sharded_id.next_ids(12, 'bulk_seq', 3 + 0 * g)) x;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(sharded_id.shard_id(id) = 12) AS all_shard_12
FROM bulk_ids;
SELECT count(*) AS empty_batch FROM sharded_id.next_ids(12, 'bulk_seq', 0);
SELECT sharded_id.next_ids(12, 'bulk_seq', -1);
SELECT sharded_id.next_ids(12, 'bulk_seq', 1000001);
SELECT count(*) AS snowflake_batch, count(DISTINCT id) AS distinct_ids
FROM sharded_id.next_ids(1000, 'bulk_seq', 10000, 'snowflake') id;
DROP SEQUENCE bulk_seq;

-- Routing: integer keys modulo the shard count, floored for negatives;
-- text keys through 64-bit FNV-1a.
SELECT k, sharded_id.shard_for(k, 2000) AS shard
FROM unnest(ARRAY[0, 1, 1999, 2000, 5001, -1, -2000, -2001, 9223372036854775807, -9223372036854775808]) k;
SELECT sharded_id.shard_for('', 8192) AS empty,
       sharded_id.shard_for('a', 8192) AS a,
       sharded_id.shard_for('instagram', 8192) AS instagram,
       sharded_id.shard_for('user@example.com', 4096) AS email;
-- The text hash is the published FNV-1a: 'a' hashes to 0xaf63dc4c8601ec8c.
SELECT sharded_id.shard_for('a', 2147483647) = (x'af63dc4c8601ec8c'::bit(64)::bigint::numeric + 18446744073709551616) % 2147483647 AS fnv1a_of_a;
SELECT count(DISTINCT sharded_id.shard_for('user' || g, 16)) AS text_keys_spread_over_16
FROM generate_series(1, 1000) g;
SELECT sharded_id.shard_for(1, 0);
SELECT sharded_id.shard_for('x', -5);

-- Shortcodes: URL-safe base 64, round trips, 22P02 on bad input.
SELECT v, sharded_id.to_shortcode(v) AS code
FROM unnest(ARRAY[0, 1, 63, 64, 4095, 4096, 11637205501278089, 9223372036854775807]) v;
SELECT bool_and(sharded_id.from_shortcode(sharded_id.to_shortcode(v)) = v) AS shortcodes_round_trip
FROM (SELECT (random() * 9223372036854775807)::bigint AS v FROM generate_series(1, 10000)
      UNION ALL SELECT 0 UNION ALL SELECT 9223372036854775807) r;
-- One spelling per id: "A" is the digit zero, so only the code of 0 starts
-- with it.
SELECT sharded_id.from_shortcode('A') AS zero, sharded_id.from_shortcode('B') AS one;
SELECT sharded_id.from_shortcode('AB');
SELECT sharded_id.from_shortcode('AAAB');
SELECT sharded_id.from_shortcode('abc!');
SELECT sharded_id.from_shortcode('');
SELECT sharded_id.from_shortcode('I__________');
SELECT sharded_id.to_shortcode(-1);

-- JSON: ids travel as text.  A JSON number read into a double (as
-- JavaScript's Number does) loses the low bits; the text form does not.
SELECT 4035708078211991553::float8::numeric = 4035708078211991553 AS double_keeps_it;
SELECT (json_build_object('id', 4035708078211991553::text)->>'id')::bigint = 4035708078211991553 AS text_keeps_it;
SELECT json_build_object('id', id::text, 'code', sharded_id.to_shortcode(id))
FROM (VALUES (4035708078211991553)) v(id);
RESET timezone;
