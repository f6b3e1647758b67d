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

-- A floor two minutes ahead of this server's clock, as a shard moved from a
-- server whose clock runs ahead brings: every id minted here afterwards is
-- greater, although the clock is behind it.
SELECT sharded_id.max_id_at(now() + interval '2 minutes') AS ahead \gset
SELECT sharded_id.created_at(sharded_id.raise_floor(60, :ahead)) = sharded_id.created_at(:ahead) AS floor_in_that_ms;
SELECT bool_and(id > :ahead) AS all_above_the_floor, count(DISTINCT id) AS distinct_ids,
       bool_and(sharded_id.shard_id(id) = 60) AS all_of_shard_60
FROM (SELECT sharded_id.next_id(60) AS id FROM generate_series(1, 5000)) t;
-- The high-water mark covers everything minted, and a lower floor changes
-- nothing.
SELECT sharded_id.high_water(60) >= (SELECT max(id) FROM (SELECT sharded_id.next_id(60) AS id) t) AS covers;
SELECT sharded_id.raise_floor(60, sharded_id.min_id_at(now())) < sharded_id.next_id(60) AS lower_floor_is_harmless;
-- The durable ceiling went past the floor, so a restart keeps it too.
SELECT ceiling > now() + interval '2 minutes' AS ceiling_past_the_floor FROM sharded_id.generator_info;

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
DROP SCHEMA IF EXISTS own_app, shard_0061, shard_0062 CASCADE;
