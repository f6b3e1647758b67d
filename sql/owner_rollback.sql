--
-- Ownership follows its transaction: a retirement, a take-back, or both, in
-- a transaction or a savepoint that rolls back, leave the server's state of
-- the shard as it was before; committed, they hold.
--
SET client_min_messages = warning;
\set SHOW_CONTEXT never
CREATE FUNCTION pg_temp.sqlstate_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE query;
    RETURN 'mints';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
-- The server's state of the shard (floors()), what next_id says, and the
-- catalog: retired_shards rows / shards rows.
CREATE FUNCTION pg_temp.state(s integer) RETURNS text
LANGUAGE sql AS $$
SELECT CASE WHEN EXISTS (SELECT 1 FROM sharded_id.floors() f WHERE f.shard_id = s AND f.retired)
            THEN 'retired' ELSE 'owned' END
       || ' / ' || pg_temp.sqlstate_of(format('SELECT sharded_id.next_id(%s)', s))
       || ' / ' || (SELECT count(*) FROM sharded_id.retired_shards r WHERE r.shard_id = s)
       || ' / ' || (SELECT count(*) FROM sharded_id.shards c WHERE c.shard_id = s)
$$;
SELECT sharded_id.create_shard(s) FROM generate_series(4601, 4606) s;

-- Retire and take back in one transaction that rolls back.
BEGIN;
SELECT sharded_id.retire_shard(4601) IS NOT NULL AS retired;
SELECT sharded_id.create_shard(4601);
ROLLBACK;
SELECT pg_temp.state(4601) AS after_rollback;

-- The same in a savepoint that rolls back, the transaction committing.
BEGIN;
SAVEPOINT s;
SELECT sharded_id.retire_shard(4602) IS NOT NULL AS retired;
SELECT sharded_id.create_shard(4602);
ROLLBACK TO SAVEPOINT s;
SELECT pg_temp.state(4602) AS after_rollback_to_savepoint;
COMMIT;
SELECT pg_temp.state(4602) AS after_commit;

-- Each statement in its own savepoint (psql's ON_ERROR_ROLLBACK, drivers'
-- autosave): the whole transaction rolls back.
\set ON_ERROR_ROLLBACK on
BEGIN;
SELECT sharded_id.retire_shard(4603) IS NOT NULL AS retired;
SELECT sharded_id.create_shard(4603);
ROLLBACK;
SELECT pg_temp.state(4603) AS after_rollback_of_released_savepoints;
\set ON_ERROR_ROLLBACK off

-- A retirement that commits, with the take-back rolled back to a savepoint:
-- retired.
BEGIN;
SELECT sharded_id.retire_shard(4604) IS NOT NULL AS retired;
SAVEPOINT s;
SELECT sharded_id.create_shard(4604);
ROLLBACK TO SAVEPOINT s;
SELECT pg_temp.state(4604) AS inside;
COMMIT;
SELECT pg_temp.state(4604) AS retirement_kept;

-- A take-back alone rolled back leaves the shard retired: in a transaction,
-- then in a savepoint.
BEGIN;
SELECT sharded_id.create_shard(4604);
ROLLBACK;
SELECT pg_temp.state(4604) AS take_back_rolled_back;
BEGIN;
SAVEPOINT s;
SELECT sharded_id.create_shard(4604);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT pg_temp.state(4604) AS take_back_rolled_back_to_savepoint;
-- Committed, it mints again.
SELECT sharded_id.create_shard(4604);
SELECT pg_temp.state(4604) AS taken_back;

-- Nested: a retirement in one savepoint, the take-back in an inner one that
-- rolls back, the outer released and committed: retired.  Then the
-- reverse, a take-back kept and an inner retirement rolled back: owned.
BEGIN;
SAVEPOINT a;
SELECT sharded_id.retire_shard(4605) IS NOT NULL AS retired;
SAVEPOINT b;
SELECT sharded_id.create_shard(4605);
ROLLBACK TO SAVEPOINT b;
RELEASE SAVEPOINT a;
COMMIT;
SELECT pg_temp.state(4605) AS outer_retirement_kept;
BEGIN;
SELECT sharded_id.create_shard(4605);
SAVEPOINT b;
SELECT sharded_id.retire_shard(4605) IS NOT NULL AS retired;
ROLLBACK TO SAVEPOINT b;
COMMIT;
SELECT pg_temp.state(4605) AS outer_take_back_kept;

-- Retire, take back and retire again, then the last retirement rolled back
-- to a savepoint: owned; a retirement and take-back committed: owned.
BEGIN;
SELECT sharded_id.retire_shard(4606) IS NOT NULL AS retired;
SELECT sharded_id.create_shard(4606);
SAVEPOINT s;
SELECT sharded_id.retire_shard(4606) IS NOT NULL AS retired;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT pg_temp.state(4606) AS last_retirement_rolled_back;
BEGIN;
SELECT sharded_id.retire_shard(4606) IS NOT NULL AS retired;
SELECT sharded_id.create_shard(4606);
COMMIT;
SELECT pg_temp.state(4606) AS retired_and_taken_back;

-- A retirement that only the catalog records, of a shard this server never
-- created, retired nor took back (a restored database): a take-back rolled
-- back keeps it refused, and the retirement is the server's from then on,
-- so that deleting the row does not take the shard back.
-- It minted here before, with no state: its slot says it mints.
SELECT sharded_id.shard_id(sharded_id.next_id(4607)) AS minted_before;
INSERT INTO sharded_id.retired_shards VALUES (4607, 'instagram', 0, now());
BEGIN;
SELECT sharded_id.create_shard(4607);
ROLLBACK;
SELECT pg_temp.state(4607) AS catalog_retirement_kept;
DELETE FROM sharded_id.retired_shards WHERE shard_id = 4607;
SELECT pg_temp.state(4607) AS row_deleted;
-- Nor does deleting the row of a retirement this server made.
SELECT sharded_id.retire_shard(4601) IS NOT NULL AS retired;
DELETE FROM sharded_id.retired_shards WHERE shard_id = 4601;
SELECT pg_temp.state(4601) AS row_of_server_retirement_deleted;
SELECT sharded_id.create_shard(s) FROM unnest('{4601,4607}'::int[]) s;
SELECT pg_temp.state(4601) AS taken_back, pg_temp.state(4607) AS taken_back;

-- No id repeated by any of it.
SELECT count(*) = count(DISTINCT id) AS no_repeat, bool_and(sharded_id.shard_id(id) = s) AS right_shard
FROM (SELECT s, sharded_id.next_id(s) AS id FROM generate_series(4601, 4603) s, generate_series(1, 500)) t;

-- Clean up: the shards stay retired on this server.
SELECT count(sharded_id.drop_shard(shard_id)) FROM sharded_id.shards WHERE shard_id BETWEEN 4601 AND 4607;
