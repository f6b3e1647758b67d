/* src/sql/api/monitor.sql */

--
-- Monitoring the generator.  Counters live in shared memory, as
-- pg_stat_statements' do: a view per level, and a reset function.  They are
-- for pg_monitor, not PUBLIC.
--
CREATE FUNCTION sharded_id.generator_stats(OUT layout text,
                                           OUT shard_id integer,
                                           OUT ids bigint,
                                           OUT full_ms_waits bigint,
                                           OUT wait_time double precision,
                                           OUT clock_behind bigint,
                                           OUT max_clock_lag double precision,
                                           OUT current_ms timestamptz,
                                           OUT last_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_generator_stats'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED ROWS 100;

COMMENT ON FUNCTION sharded_id.generator_stats() IS
'one row per (layout, shard) slot in use: ids minted, waits for the clock (ms), clock-behind events and the largest lag (ms), the millisecond filled, the newest id';

CREATE VIEW sharded_id.generator_stats AS
SELECT * FROM sharded_id.generator_stats();

COMMENT ON VIEW sharded_id.generator_stats IS
'statistics of the id generator, one row per (layout, shard) slot in use, since the last reset_stats()';

CREATE FUNCTION sharded_id.generator_info(OUT slots_used integer,
                                          OUT max_shards integer,
                                          OUT ceiling timestamptz,
                                          OUT ceiling_writes bigint,
                                          OUT ceiling_write_time double precision,
                                          OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_generator_info'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id.generator_info() IS
'the generator as a whole: slots used of sharded_id.max_shards, the durable ceiling, its writes and their time (ms), when statistics were reset';

CREATE VIEW sharded_id.generator_info AS
SELECT * FROM sharded_id.generator_info();

COMMENT ON VIEW sharded_id.generator_info IS
'the id generator as a whole: slots in use, the durable clock ceiling and its writes';

CREATE FUNCTION sharded_id.reset_stats()
RETURNS void
AS 'MODULE_PATHNAME', 'shid_reset_stats'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_stats() IS
'zero the statistics of the id generator';

REVOKE ALL ON sharded_id.generator_stats, sharded_id.generator_info FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.generator_stats() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.generator_info() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.reset_stats() FROM PUBLIC;
GRANT SELECT ON sharded_id.generator_stats, sharded_id.generator_info TO pg_monitor;
GRANT EXECUTE ON FUNCTION sharded_id.generator_stats() TO pg_monitor;
GRANT EXECUTE ON FUNCTION sharded_id.generator_info() TO pg_monitor;
