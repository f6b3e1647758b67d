--
-- Generator statistics: counted in shared memory, shown by two views,
-- zeroed by reset_stats(), and for pg_monitor only.
--
SELECT sharded_id.reset_stats();
SELECT count(*) AS all_zero FROM sharded_id.generator_stats
WHERE ids > 0 OR full_ms_waits > 0 OR wait_time > 0 OR clock_behind > 0;

-- ids counts what was minted, per shard and layout, seed and counter mode.
CREATE SEQUENCE monitor_seq;
SELECT count(sharded_id.next_id(40, 'monitor_seq')) FROM generate_series(1, 1000);
SELECT count(sharded_id.next_id(41)) FROM generate_series(1, 2500);
SELECT count(*) FROM sharded_id.next_ids(41, 500);
SELECT count(sharded_id.next_id_in_layout(42, 'snowflake')) FROM generate_series(1, 300);
SELECT layout, shard_id, ids FROM sharded_id.generator_stats
WHERE shard_id IN (40, 41, 42) AND ids > 0 ORDER BY layout, shard_id;
-- The newest id of a slot is the one just minted.
SELECT sharded_id.next_id(43) = (SELECT last_id FROM sharded_id.generator_stats
                                 WHERE layout = 'instagram' AND shard_id = 43) AS last_id_is_newest;

-- A burst past a millisecond's ids waits for the clock: 100,000 ids of the
-- 58com layout (128 per ms) need 782 ms at least, so a batch, which claims
-- them 64 at a time, fills milliseconds and waits on any machine that
-- mints more than 128 ids per ms.
SELECT count(*) FROM sharded_id.next_ids_in_layout(44, 100000, '58com');
SELECT ids, full_ms_waits > 0 AS waited, wait_time > 0 AS wait_time_counted
FROM sharded_id.generator_stats WHERE layout = '58com' AND shard_id = 44;

-- The whole generator.
SELECT slots_used >= 5 AS slots_counted, max_shards = current_setting('sharded_id.max_shards')::int AS max_shards_shown,
       ceiling > now() AS ceiling_ahead, ceiling_writes > 0 AS ceiling_written, stats_reset <= now() AS reset_known
FROM sharded_id.generator_info;

-- reset_stats zeroes the counters, not the state.
SELECT sharded_id.reset_stats();
SELECT count(*) FILTER (WHERE ids > 0 OR full_ms_waits > 0 OR clock_behind > 0) AS nonzero,
       count(*) FILTER (WHERE layout = '58com' AND shard_id = 44 AND last_id IS NOT NULL) AS state_kept
FROM sharded_id.generator_stats;
SELECT ceiling_writes AS writes_after_reset, stats_reset > now() - interval '1 minute' AS reset_now
FROM sharded_id.generator_info;

-- With track_stats off, nothing is counted.
SET sharded_id.track_stats = off;
SELECT count(sharded_id.next_id(45)) FROM generate_series(1, 100);
SELECT ids AS untracked FROM sharded_id.generator_stats WHERE layout = 'instagram' AND shard_id = 45;
RESET sharded_id.track_stats;

-- For pg_monitor, not PUBLIC.
CREATE ROLE sharded_id_regress_watcher;
SET ROLE sharded_id_regress_watcher;
SELECT count(*) FROM sharded_id.generator_stats;
SELECT count(*) FROM sharded_id.generator_info;
SELECT sharded_id.reset_stats();
RESET ROLE;
GRANT pg_monitor TO sharded_id_regress_watcher;
SET ROLE sharded_id_regress_watcher;
SELECT count(*) > 0 AS monitor_sees_stats FROM sharded_id.generator_stats;
SELECT slots_used > 0 AS monitor_sees_info FROM sharded_id.generator_info;
SELECT sharded_id.reset_stats();
RESET ROLE;
DROP ROLE sharded_id_regress_watcher;
DROP SEQUENCE monitor_seq;
