--
-- Bad input: each error with its SQLSTATE, and nothing left half-done.
--
CREATE FUNCTION pg_temp.sqlstate_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE query;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;

CREATE SEQUENCE err_seq;
SELECT nextval('err_seq');

-- Shard ids outside 0..8191: 22003, and the sequence is not consumed.
SELECT sharded_id.next_id(8192, 'err_seq');
SELECT sharded_id.next_id(-1, 'err_seq');
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.next_id(8192, 'err_seq')$$) AS too_large,
       pg_temp.sqlstate_of($$SELECT sharded_id.next_id(-1, 'err_seq')$$) AS negative,
       pg_temp.sqlstate_of($$SELECT sharded_id.encode(now(), 8192, 1)$$) AS encode_shard;
SELECT last_value AS still_1 FROM err_seq;

-- Not a sequence: 42809 (the message is PostgreSQL's own, and differs
-- between versions).  A missing relation fails in the regclass cast.
CREATE TABLE not_a_seq (x int);
\set VERBOSITY sqlstate
SELECT sharded_id.next_id(1, 'not_a_seq');
\set VERBOSITY default
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.next_id(1, 'not_a_seq')$$) AS not_a_sequence;
SELECT sharded_id.next_id(1, 'no_such_seq');

-- A caller without USAGE or UPDATE on the sequence: 42501.
CREATE ROLE sharded_id_regress_nobody;
GRANT SELECT ON err_seq TO sharded_id_regress_nobody;
SET ROLE sharded_id_regress_nobody;
SELECT sharded_id.next_id(1, 'err_seq');
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.next_id(1, 'err_seq')$$) AS no_usage;
-- Decoders need no rights at all.
SELECT sharded_id.shard_id(11637205501278089) AS decode_needs_no_rights;
RESET ROLE;
GRANT USAGE ON err_seq TO sharded_id_regress_nobody;
SET ROLE sharded_id_regress_nobody;
SELECT sharded_id.shard_id(sharded_id.next_id(3, 'err_seq')) AS with_usage;
RESET ROLE;
REVOKE ALL ON err_seq FROM sharded_id_regress_nobody;
DROP ROLE sharded_id_regress_nobody;

-- Times outside the 41-bit field: before the epoch, or late enough to set
-- the sign bit (2046-06-27 with the default epoch): class 22, never a
-- negative id.
SET timezone = 'UTC';
SELECT sharded_id.encode('2011-08-24 21:07:01.720+00', 1, 1);
SELECT sharded_id.encode('2046-06-27 17:00:49.497+00', 1, 1);
SELECT sharded_id.encode('infinity', 1, 1);
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.encode('2000-01-01', 1, 1)$$) AS before_epoch,
       pg_temp.sqlstate_of($$SELECT sharded_id.encode('2046-06-28', 1, 1)$$) AS sign_bit,
       pg_temp.sqlstate_of($$SELECT sharded_id.encode('-infinity', 1, 1)$$) AS minus_infinity;
RESET timezone;

-- Negative bigints are no sharded ids.
SELECT sharded_id.decode(-1);
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.decode(-1)$$) AS decode_negative,
       pg_temp.sqlstate_of($$SELECT sharded_id.created_at(-9223372036854775808)$$) AS created_at_negative,
       pg_temp.sqlstate_of($$SELECT sharded_id.shard_id(-5)$$) AS shard_id_negative,
       pg_temp.sqlstate_of($$SELECT sharded_id.seq_id(-5)$$) AS seq_id_negative;

-- A sequence field outside the layout: 22003, as a shard outside it is,
-- never masked to its low bits.
SELECT sharded_id.encode(now(), 1, 1024);
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.encode(now(), 1, 1024)$$) AS seq_1024,
       pg_temp.sqlstate_of($$SELECT sharded_id.encode(now(), 1, 5000)$$) AS seq_5000,
       pg_temp.sqlstate_of($$SELECT sharded_id.encode(now(), 1, -1)$$) AS seq_negative,
       pg_temp.sqlstate_of($$SELECT sharded_id.encode(now(), 1, 128, '58com')$$) AS seq_58com,
       pg_temp.sqlstate_of($$SELECT sharded_id.encode(now(), 1, 4095, 'snowflake')$$) AS snowflake_4095;

-- A huge argument is quoted by a bounded prefix in the error, not whole.
CREATE FUNCTION pg_temp.error_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE query;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || length(SQLERRM) || ' ' || left(SQLERRM, 40);
END $$;
SELECT pg_temp.error_of($$SELECT sharded_id.from_shortcode(repeat('!', 1000000))$$) AS long_bad_shortcode,
       pg_temp.error_of($$SELECT sharded_id.from_shortcode('B' || repeat('x', 1000000))$$) AS long_big_shortcode,
       pg_temp.error_of($$SELECT sharded_id.from_shortcode('A' || repeat('x', 1000000))$$) AS long_leading_zero;
SELECT pg_temp.error_of($$SELECT sharded_id.next_id_in_layout(1, repeat('x', 1000000))$$) AS long_layout;
SELECT sharded_id.from_shortcode('!' || repeat('é', 40));

-- Names that could never make a shard schema are refused up front.
SELECT sharded_id.configure(schema_prefix => 'pg_');
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.configure(schema_prefix => 'pg_shard')$$) AS pg_prefix,
       pg_temp.sqlstate_of($$SELECT sharded_id.create_shard(3, '')$$) AS empty_schema;
SELECT sharded_id.create_shard(3, '');
SELECT count(*) AS nothing_configured FROM sharded_id.settings;
SELECT count(*) AS nothing_created FROM sharded_id.shards;

-- A failed DEFAULT leaves no row behind and consumes no sequence value.
SELECT last_value AS err_seq_before FROM err_seq \gset
CREATE TABLE err_table (id bigint DEFAULT sharded_id.next_id(9000, 'err_seq') PRIMARY KEY, v int);
INSERT INTO err_table (v) SELECT g FROM generate_series(1, 10) g;
SELECT count(*) AS no_rows FROM err_table;
SELECT last_value = :err_seq_before AS sequence_untouched FROM err_seq;

DROP TABLE err_table, not_a_seq;
DROP SEQUENCE err_seq;
