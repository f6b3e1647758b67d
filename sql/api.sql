--
-- The SQL API: next_id as users call it, decode/encode round trips, the
-- seed's worked example, accessors, NULL handling.
--
CREATE SCHEMA insta5;
CREATE SEQUENCE insta5.table_id_seq;
CREATE TABLE insta5.our_table (
    id bigint NOT NULL DEFAULT sharded_id.next_id(5, 'insta5.table_id_seq') PRIMARY KEY,
    body text
);

-- Ids minted by a column default decode to the shard, the sequence value
-- modulo 1024 and the time of the insert.
SELECT clock_timestamp() AS before \gset
INSERT INTO insta5.our_table (body)
SELECT 'row ' || g FROM generate_series(1, 100) g;
SELECT clock_timestamp() AS after \gset

SELECT count(*) AS rows,
       count(DISTINCT id) AS distinct_ids,
       bool_and(d.shard_id = 5) AS all_shard_5,
       bool_and(d.created_at >= date_trunc('milliseconds', :'before'::timestamptz)
                AND d.created_at <= :'after') AS times_within_insert,
       bool_and(id > 0) AS all_positive
FROM insta5.our_table t, sharded_id.decode(t.id) d;

-- The sequence field is nextval % 1024: 100 rows took values 1..100.
SELECT array_agg(d.seq_id ORDER BY d.seq_id) = array_agg(g ORDER BY g) AS seq_fields_are_1_to_100
FROM insta5.our_table t, sharded_id.decode(t.id) d,
     LATERAL (SELECT substr(t.body, 5)::int AS g) g;

-- The (decode(id)).* form works too and agrees with the accessors.
SELECT bool_and((sharded_id.decode(id)).created_at = sharded_id.created_at(id)
            AND (sharded_id.decode(id)).shard_id = sharded_id.shard_id(id)
            AND (sharded_id.decode(id)).seq_id = sharded_id.seq_id(id)) AS accessors_agree
FROM insta5.our_table;

-- Time order: a later insert gets a larger id.
SELECT max(id) AS last_id FROM insta5.our_table \gset
SELECT pg_sleep(0.002);
INSERT INTO insta5.our_table (body) VALUES ('later') RETURNING id > :last_id AS later_id_is_larger;

-- At a low rate next_id gives exactly the seed's bits: the id equals the
-- seed formula evaluated on its own millisecond and sequence value.
CREATE SEQUENCE insta5.probe_seq START 5000;
CREATE FUNCTION seed_formula(ms bigint, shard_id int, seqval bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    our_epoch bigint := 1314220021721;
    result bigint;
BEGIN
    result := (ms - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | (seqval % 1024);
    RETURN result;
END $$;
SELECT count(*) AS probes,
       bool_and(id = seed_formula(floor(extract(epoch FROM sharded_id.created_at(id)) * 1000)::bigint,
                                  1341, v)) AS matches_seed
FROM (SELECT sharded_id.next_id(1341, 'insta5.probe_seq') AS id,
             currval('insta5.probe_seq') AS v
      FROM generate_series(1, 20)) s;

-- The seed's worked example: 1387263000 ms after the epoch, shard 1341,
-- sequence value 5001, whose field is 5001 % 1024.
SELECT sharded_id.encode(timestamptz '2011-08-24 21:07:01.721+00'
                         + interval '1387263000 milliseconds', 1341, 5001 % 1024) AS seed_example;
SELECT * FROM sharded_id.decode(11637205501278089);
SELECT seed_formula(1314220021721 + 1387263000, 1341, 5001) AS seed_formula_example;

-- encode agrees with the seed formula over many values, and decode inverts it.
SELECT count(*) AS cases,
       bool_and(sharded_id.encode(to_timestamp(ms / 1000.0), shard, seqval % 1024)
                = seed_formula(ms, shard, seqval)) AS encode_is_seed_formula,
       bool_and((sharded_id.decode(seed_formula(ms, shard, seqval))).created_at
                = to_timestamp(ms / 1000.0)) AS decode_time,
       bool_and(sharded_id.shard_id(seed_formula(ms, shard, seqval)) = shard) AS decode_shard,
       bool_and(sharded_id.seq_id(seed_formula(ms, shard, seqval)) = seqval % 1024) AS decode_seq
FROM (SELECT 1314220021721 + (g::bigint * 7919 * 104729) % 1099511627776 AS ms,
             (g * 31) % 8192 AS shard,
             (g * 1000003)::bigint AS seqval
      FROM generate_series(0, 9999) g) c;

-- Field boundaries.
SELECT sharded_id.encode('2011-08-24 21:07:01.721+00', 0, 0) AS smallest;
SELECT sharded_id.encode('2011-08-24 21:07:01.721+00', 8191, 1023) AS first_ms_largest;
SELECT sharded_id.encode('2046-06-27 17:00:49.496+00', 8191, 1023) AS largest;
SELECT * FROM sharded_id.decode(9223372036854775807);

-- encode floors to the millisecond; sequence fields out of range are
-- errors (errors.sql).
SELECT sharded_id.created_at(sharded_id.encode('2020-02-02 02:02:02.123999+00', 1, 1)) AS floored;
SELECT sharded_id.seq_id(sharded_id.encode('2020-02-02', 1, 1023)) AS seq_1023;

-- The same id, decoded in another time zone, is the same instant.
SET timezone = 'Asia/Tokyo';
SELECT * FROM sharded_id.decode(11637205501278089);
RESET timezone;

-- NULL in, NULL out, and nothing consumed.
SELECT last_value AS probe_before FROM insta5.probe_seq \gset
SELECT sharded_id.next_id(NULL, 'insta5.probe_seq') AS null_shard,
       sharded_id.next_id(1, NULL) AS null_seq,
       sharded_id.encode(NULL, 1, 1) AS null_time,
       sharded_id.encode(now(), NULL, 1) AS null_encode_shard,
       sharded_id.encode(now(), 1, NULL) AS null_encode_seq,
       sharded_id.created_at(NULL) AS null_created_at,
       sharded_id.shard_id(NULL) AS null_shard_id,
       sharded_id.seq_id(NULL) AS null_seq_id;
SELECT * FROM sharded_id.decode(NULL);
SELECT last_value = :probe_before AS probe_untouched FROM insta5.probe_seq;

-- Decoders are usable in an index and in WHERE clauses.
CREATE INDEX our_table_shard_idx ON insta5.our_table (sharded_id.shard_id(id));
CREATE INDEX our_table_time_idx ON insta5.our_table (sharded_id.created_at(id));
SELECT count(*) AS rows_of_shard_5 FROM insta5.our_table WHERE sharded_id.shard_id(id) = 5;

DROP SCHEMA insta5 CASCADE;
DROP FUNCTION seed_formula(bigint, int, bigint);
