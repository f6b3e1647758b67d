-- Without the citus extension in the database, the Citus functions exist and
-- refuse with 55000, naming what is missing; nothing is left behind.
DO $$
BEGIN
    PERFORM sharded_id.citus_distribute_shards();
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE 'citus_distribute_shards: % (%)', SQLERRM, SQLSTATE;
END
$$;
DO $$
BEGIN
    PERFORM sharded_id.citus_shard_node(1);
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE 'citus_shard_node: % (%)', SQLERRM, SQLSTATE;
END
$$;
DO $$
BEGIN
    PERFORM sharded_id.citus_id_node(sharded_id.encode(now(), 7, 0));
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE NOTICE 'citus_id_node: % (%)', SQLERRM, SQLSTATE;
END
$$;
-- Not for PUBLIC.
SELECT has_function_privilege('public', 'sharded_id.citus_distribute_shards(integer, integer)', 'EXECUTE') AS public_distributes;
-- citus_grant_windows is for the coordinator of a Citus cluster only, and
-- not for PUBLIC.
DO $$
BEGIN
    PERFORM sharded_id.citus_grant_windows('{1}', 'instagram', 1, 'worker-1', 5432, '{0}', 1, 0, false);
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'citus_grant_windows: % (%)', SQLERRM, SQLSTATE;
END
$$;
SELECT has_function_privilege('public', 'sharded_id.citus_grant_windows(integer[], text, integer, text, integer, bigint[], integer, integer, boolean)', 'EXECUTE') AS public_grants;
-- citus_window_high_water keeps the bound a coordinator gives it, which
-- holds every later grant: superusers only, whatever the grants (42501),
-- and a bound within a year of the clock, a name under 64 bytes (22023).
SELECT high_water >= 0 AS high_water, clock_ms > 0 AS clock, coordinator_until
FROM sharded_id.citus_window_high_water(0, 'regress');
DO $$
BEGIN
    PERFORM sharded_id.citus_window_high_water(-1, 'regress');
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'a bound below 0: % (%)', SQLERRM, SQLSTATE;
END
$$;
DO $$
BEGIN
    PERFORM sharded_id.citus_window_high_water(0, repeat('x', 64));
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'a long name: % (%)', SQLERRM, SQLSTATE;
END
$$;
CREATE ROLE shid_hw_plain;
GRANT EXECUTE ON FUNCTION sharded_id.citus_window_high_water(bigint, text) TO shid_hw_plain;
SET ROLE shid_hw_plain;
DO $$
BEGIN
    PERFORM sharded_id.citus_window_high_water(9000000000000000, 'regress');
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'a plain role: % (%)', SQLERRM, SQLSTATE;
END
$$;
RESET ROLE;
DROP OWNED BY shid_hw_plain;
DROP ROLE shid_hw_plain;
-- A server without Citus preloaded mints with the whole sequence field: no
-- node field, so 1024 ids of one millisecond, for a stripe of 0.
SELECT count(DISTINCT sharded_id.seq_id(id)) > 32 AS wider_than_a_node_field
FROM (SELECT sharded_id.next_id(4242) AS id FROM generate_series(1, 5000)) x;
SELECT count(*) FROM sharded_id.shards;
