--
-- Across servers: a shard's floor (raise_floor, high_water), only the owner
-- mints (retire_shard, drop_shard, create_shard), and stripes.
--
SET client_min_messages = warning;
\set SHOW_CONTEXT never
CREATE FUNCTION pg_temp.sqlstate_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE query;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
CREATE FUNCTION pg_temp.message_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE query;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- A floor two minutes ahead of this server's clock, as a shard moved from a
-- server whose clock runs ahead brings: every id minted here afterwards is
-- greater, although the clock is behind it.
SELECT sharded_id.encode(now() + interval '2 minutes', 60, 1023) AS ahead \gset
SELECT sharded_id.created_at(sharded_id.raise_floor(60, :ahead)) = sharded_id.created_at(:ahead) AS floor_in_that_ms;
SELECT bool_and(id > :ahead) AS all_above_the_floor, count(DISTINCT id) AS distinct_ids,
       bool_and(sharded_id.shard_id(id) = 60) AS all_of_shard_60
FROM (SELECT sharded_id.next_id(60) AS id FROM generate_series(1, 5000)) t;
-- The high-water mark covers everything minted, and a lower floor changes
-- nothing.
SELECT sharded_id.high_water(60) >= (SELECT max(id) FROM (SELECT sharded_id.next_id(60) AS id) t) AS covers;
SELECT sharded_id.raise_floor(60, sharded_id.encode(now(), 60, 0)) IS NOT NULL AS raised_lower;
SELECT sharded_id.next_id(60) > :ahead AS lower_floor_is_harmless;
-- The floor is the shard's own, kept durably (a restart keeps it); the
-- clock ceiling, where every other shard starts after a restart, does not
-- follow it, and another shard mints at the clock.
SELECT layout, shard_id, floor >= sharded_id.created_at(:ahead) AS floor_kept, retired
FROM sharded_id.floors() WHERE shard_id = 60;
SELECT ceiling < now() + interval '1 minute' AS ceiling_stays_near_the_clock FROM sharded_id.generator_info;
SELECT sharded_id.created_at(sharded_id.next_id(59)) < now() + interval '1 minute' AS other_shard_at_the_clock;

-- Floors are bounded.  An id of another shard, one more than
-- sharded_id.max_clock_jump ahead (a day, by default), and one that leaves
-- no id to mint are refused (SI003); force takes the second only.
SELECT pg_temp.sqlstate_of(format('SELECT sharded_id.raise_floor(60, %s)', sharded_id.encode(now(), 61, 0))) AS other_shard,
       pg_temp.sqlstate_of(format('SELECT sharded_id.raise_floor(57, %s)', sharded_id.encode('2046-06-01', 57, 0))) AS in_2046,
       pg_temp.sqlstate_of('SELECT sharded_id.raise_floor(57, 9223372036854775807, force => true)') AS no_room,
       pg_temp.sqlstate_of('SELECT sharded_id.raise_floor(8191, 9223372036854775000, force => true)') AS planted_id;
SELECT count(*) AS no_floor_for_57 FROM sharded_id.floors() WHERE shard_id = 57;
SELECT sharded_id.created_at(sharded_id.raise_floor(57, sharded_id.encode('2046-06-01', 57, 0), force => true)) AS forced_floor;
SELECT sharded_id.created_at(sharded_id.next_id(57)) > '2046-06-01' AS above_the_forced_floor;
-- The way back: lower_floor, with a warning, brings the shard's ids back to
-- the clock, and drops its floor.
SET client_min_messages = notice;
\set VERBOSITY terse
SELECT sharded_id.lower_floor(57) <= clock_timestamp() AS lowered_to_the_clock;
\set VERBOSITY default
SET client_min_messages = warning;
SELECT sharded_id.created_at(sharded_id.next_id(57)) < now() + interval '1 minute' AS mints_at_the_clock;
SELECT count(*) AS floor_gone FROM sharded_id.floors() WHERE shard_id = 57;
SELECT pg_temp.sqlstate_of('SELECT sharded_id.lower_floor(57, ''nope'')') AS bad_layout,
       pg_temp.sqlstate_of('SELECT sharded_id.lower_floor(-1)') AS bad_shard;

-- A shard in the catalog, in seed mode.
CREATE SCHEMA own_app;
CREATE TABLE own_app.items (id bigint PRIMARY KEY, v text);
SELECT sharded_id.add_table('own_app.items') AS copies;
SELECT sharded_id.create_shard(61);
INSERT INTO shard_0061.items (v) SELECT 'before' FROM generate_series(1, 10);

-- An uncommitted retirement already refuses; rolled back, the shard mints
-- again.  The high-water mark covers the shard's rows.
BEGIN;
SELECT sharded_id.retire_shard(61) >= (SELECT max(id) FROM shard_0061.items) AS mark_covers_the_rows;
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.next_id(61, 'shard_0061.id_seq')$$) AS refused_before_commit;
ROLLBACK;
SELECT sharded_id.shard_id(shard_0061.next_id()) AS mints_after_rollback;
-- The same in a subtransaction that rolls back.
BEGIN;
SAVEPOINT s;
SELECT sharded_id.retire_shard(61) IS NOT NULL AS retired;
ROLLBACK TO SAVEPOINT s;
SELECT sharded_id.shard_id(shard_0061.next_id()) AS mints_after_rollback_to_savepoint;
COMMIT;
SELECT count(*) AS still_in_the_catalog FROM sharded_id.shards WHERE shard_id = 61;

-- Committed: out of the catalog, refused by every minting path with its own
-- SQLSTATE, recorded with its mark; the schema stays.
SELECT max(id) AS before_max FROM shard_0061.items \gset
SELECT sharded_id.retire_shard(61) >= :before_max AS retired_above_the_rows;
INSERT INTO shard_0061.items (v) VALUES ('after');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.next_id(61)$$) AS counter,
       pg_temp.sqlstate_of($$SELECT sharded_id.next_ids(61, 'shard_0061.id_seq', 5)$$) AS seed_batch,
       pg_temp.sqlstate_of($$SELECT sharded_id.next_ids(61, 5)$$) AS counter_batch,
       pg_temp.sqlstate_of($$SELECT sharded_id.next_id(61, 'shard_0061.id_seq', 'snowflake')$$) AS other_layout;
SELECT shard_id, layout, high_water >= :before_max AS has_mark FROM sharded_id.retired_shards;
-- A refused seed-mode call consumes no sequence value.
SELECT last_value AS seq_before FROM shard_0061.id_seq \gset
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.next_id(61, 'shard_0061.id_seq')$$) AS seed;
SELECT last_value = :seq_before AS no_value_consumed FROM shard_0061.id_seq;
-- The retirement is the server's: floors() shows it.
SELECT layout, shard_id, retired FROM sharded_id.floors() WHERE shard_id = 61;
SELECT count(*) AS schema_kept FROM pg_namespace WHERE nspname = 'shard_0061';
SELECT sharded_id.enter_shard(61);
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.retire_shard(61)$$) AS retire_again,
       pg_temp.sqlstate_of($$SELECT sharded_id.drop_shard(61)$$) AS drop_retired;

-- create_shard takes it back, adopting the schema and its rows.
SELECT sharded_id.create_shard(61);
INSERT INTO shard_0061.items (v) VALUES ('taken back') RETURNING id > :before_max AS above_the_old_rows;
SELECT count(*) AS retired FROM sharded_id.retired_shards;

-- A schema restored from another server whose clock ran ahead: create_shard
-- raises the floor over its largest id.
CREATE SCHEMA shard_0062;
CREATE TABLE shard_0062.items (id bigint PRIMARY KEY, v text);
SELECT sharded_id.encode(now() + interval '3 minutes', 62, 7) AS elsewhere \gset
INSERT INTO shard_0062.items VALUES (:elsewhere, 'minted elsewhere');
SELECT sharded_id.create_shard(62);
INSERT INTO shard_0062.items (v) SELECT 'here' FROM generate_series(1, 2000);
SELECT count(*) FILTER (WHERE id > :elsewhere) AS above, count(*) FILTER (WHERE id < :elsewhere) AS below
FROM shard_0062.items;

-- drop_shard gives the shard away too.
SELECT sharded_id.drop_shard(62);
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.next_id(62)$$) AS dropped;
SELECT sharded_id.create_shard(62);
SELECT sharded_id.shard_id(shard_0062.next_id()) AS created_again;

-- adopt_table refuses a shard this server gave away.
SELECT sharded_id.retire_shard(62) IS NOT NULL AS retired;
CREATE TABLE own_app.legacy (id bigserial PRIMARY KEY);
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.adopt_table('own_app.legacy', 62)$$) AS adopt_retired;

-- A row that a writer planted with an id far ahead (here the largest that
-- fits a bigint, whose shard field is not the shard's) cannot raise a
-- floor: raise_floors() and create_shard refuse with SI003, naming the
-- table, and change nothing.
CREATE SCHEMA shard_0063;
CREATE TABLE shard_0063.items (id bigint PRIMARY KEY, v text);
INSERT INTO shard_0063.items VALUES (9223372036854775000, 'planted');
SELECT pg_temp.message_of('SELECT sharded_id.create_shard(63)') LIKE 'SI003: table shard_0063.items holds id 9223372036854775000,%' AS create_refused;
SELECT count(*) AS not_registered FROM sharded_id.shards WHERE shard_id = 63;
SELECT count(*) AS untouched FROM shard_0063.items;
SELECT sharded_id.encode(now() + interval '2 days', 61, 0) AS two_days_ahead \gset
INSERT INTO shard_0061.items VALUES (:two_days_ahead, 'planted');
SELECT floor AS floor_before FROM sharded_id.floors() WHERE shard_id = 61 \gset
SELECT pg_temp.message_of('SELECT sharded_id.raise_floors()') LIKE 'SI003: table shard_0061.items holds id %, 172___ s ahead of this server''s clock' AS raise_floors_refused;
SELECT floor IS NOT DISTINCT FROM :'floor_before'::timestamptz AS floor_unchanged FROM sharded_id.floors() WHERE shard_id = 61;
DELETE FROM shard_0061.items WHERE id = :two_days_ahead;
DELETE FROM shard_0063.items;
SELECT sharded_id.create_shard(63);

-- raise_floors: every shard's floor over the largest id its tables hold, as
-- after a restore of the whole database on another server.
SELECT sharded_id.encode(now() + interval '4 minutes', 61, 9) AS restored \gset
INSERT INTO shard_0061.items VALUES (:restored, 'restored from elsewhere');
SELECT sharded_id.shard_max_id(61) = :restored AS max_id_found;
SELECT sharded_id.raise_floors() AS shards_with_ids;
SELECT shard_0061.next_id() > :restored AS above_the_restored_id;

-- Bad input.
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.raise_floor(60, -1)$$) AS negative_id,
       pg_temp.sqlstate_of($$SELECT sharded_id.raise_floor(8192, 1)$$) AS bad_shard,
       pg_temp.sqlstate_of($$SELECT sharded_id.raise_floor(60, 1, 'nope')$$) AS bad_layout,
       pg_temp.sqlstate_of($$SELECT sharded_id.high_water(-1)$$) AS bad_shard_mark,
       pg_temp.sqlstate_of($$SELECT sharded_id.retire_shard(999)$$) AS no_such_shard;

-- The WAL resource manager's id: none that a known extension uses.
SHOW sharded_id.wal_rmgr_id;

-- Stripes: the top bits of the sequence field.  This server has none.
SHOW sharded_id.stripes;
SHOW sharded_id.stripe;
SELECT sharded_id.stripe_id(sharded_id.encode(now(), 1, 1023), 4) AS top_of_4,
       sharded_id.stripe_id(sharded_id.encode(now(), 1, 256), 4) AS second_of_4,
       sharded_id.stripe_id(sharded_id.encode(now(), 1, 1023), 1) AS no_stripes,
       sharded_id.stripe_id(sharded_id.encode(now(), 1, 4095, 'snowflake'), 64, 'snowflake') AS snowflake_64;
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.stripe_id(1, 3)$$) AS not_a_power_of_two,
       pg_temp.sqlstate_of($$SELECT sharded_id.stripe_id(1, 128)$$) AS too_many,
       pg_temp.sqlstate_of($$SELECT sharded_id.stripe_id(1, 0)$$) AS zero,
       pg_temp.sqlstate_of($$SELECT sharded_id.stripe_id(1, 128, '58com')$$) AS too_many_for_58com;
-- Bad settings are refused at ALTER SYSTEM.
ALTER SYSTEM SET sharded_id.stripes = 3;
ALTER SYSTEM SET sharded_id.stripes = 128;
ALTER SYSTEM SET sharded_id.stripe = 64;

SELECT count(*) AS dropped FROM (SELECT sharded_id.drop_shard(shard_id) FROM sharded_id.shards) d;
DELETE FROM sharded_id.shard_tables;
DROP SCHEMA IF EXISTS own_app, shard_0061, shard_0062, shard_0063 CASCADE;

-- A retirement is the server's: a new shard catalog, after DROP EXTENSION
-- and CREATE EXTENSION, forgets none, and a bare next_id still mints for a
-- shard this server never gave away.
DROP EXTENSION sharded_id CASCADE;
CREATE EXTENSION sharded_id;
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.next_id(61)$$) AS retired_after_create_extension;
CREATE TABLE pg_temp.legacy (id bigserial PRIMARY KEY);
SELECT pg_temp.sqlstate_of($$SELECT sharded_id.adopt_table('pg_temp.legacy', 61)$$) AS adopt_refused;
SELECT sharded_id.shard_id(sharded_id.next_id(58)) AS never_given_away_mints;
-- create_shard takes a shard the server gave away back, in any database.
SELECT sharded_id.create_shard(61) AS taken_back;
SELECT sharded_id.shard_id(sharded_id.next_id(61)) AS mints_again;
SELECT count(*) AS not_retired FROM sharded_id.floors() WHERE shard_id = 61 AND retired;
SELECT sharded_id.drop_shard(61) IS NOT NULL AS dropped_again;

-- Only a superuser forces a floor past the clock's bound.
CREATE ROLE own_admin;
GRANT USAGE ON SCHEMA sharded_id TO own_admin;
GRANT EXECUTE ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) TO own_admin;
SET ROLE own_admin;
SELECT pg_temp.sqlstate_of(format('SELECT sharded_id.raise_floor(56, %s, force => true)',
                                  sharded_id.encode('2046-06-01', 56, 0))) AS forced_by_non_superuser;
RESET ROLE;
SELECT count(*) AS no_floor_for_56 FROM sharded_id.floors() WHERE shard_id = 56;
DROP OWNED BY own_admin;
DROP ROLE own_admin;
