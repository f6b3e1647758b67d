-- test/bench/setup.sql: objects the benchmark suite measures.
CREATE EXTENSION IF NOT EXISTS sharded_id;
CREATE SCHEMA bench;

-- The seed's PL/pgSQL function, as published (shard 5, one sequence).
CREATE SCHEMA insta5;
CREATE SEQUENCE insta5.table_id_seq;
CREATE FUNCTION insta5.seed_next_id(OUT result bigint) AS $$
DECLARE
    our_epoch bigint := 1314220021721;
    seq_id bigint;
    now_millis bigint;
    shard_id int := 5;
BEGIN
    SELECT nextval('insta5.table_id_seq') % 1024 INTO seq_id;
    SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
    result := (now_millis - our_epoch) << 23;
    result := result | (shard_id << 10);
    result := result | (seq_id);
END;
$$ LANGUAGE plpgsql;

-- Shards provisioned the normal way: shard_0000 .. shard_0015, each with
-- its id_seq and its zero-argument next_id(), as in the seed's DEFAULT
-- insta5.next_id().
SELECT count(*) FROM sharded_id.create_shards(0, 15);

CREATE SEQUENCE bench.seq;
CREATE SEQUENCE bench.cache1 CACHE 1;
CREATE SEQUENCE bench.cache32 CACHE 32;
CREATE SEQUENCE bench.cache1000 CACHE 1000;

-- One table per id scheme, each with its id as primary key.
CREATE TABLE bench.t_bigserial (id bigserial PRIMARY KEY, v int);
-- The same again: bigserial against bigserial shows the noise floor.
CREATE TABLE bench.t_bigserial2 (id bigserial PRIMARY KEY, v int);
CREATE TABLE bench.t_next_id (id bigint DEFAULT sharded_id.next_id(5, 'shard_0005.id_seq') PRIMARY KEY, v int);
CREATE TABLE bench.t_counter (id bigint DEFAULT sharded_id.next_id(9) PRIMARY KEY, v int);
CREATE TABLE bench.t_wrapper (id bigint DEFAULT shard_0005.next_id() PRIMARY KEY, v int);
CREATE TABLE bench.t_plpgsql (id bigint DEFAULT insta5.seed_next_id() PRIMARY KEY, v int);
CREATE TABLE bench.t_uuid (id uuid DEFAULT gen_random_uuid() PRIMARY KEY, v int);
CREATE TABLE bench.t_cache1 (id bigint DEFAULT sharded_id.next_id(6, 'bench.cache1') PRIMARY KEY, v int);
CREATE TABLE bench.t_cache32 (id bigint DEFAULT sharded_id.next_id(6, 'bench.cache32') PRIMARY KEY, v int);
CREATE TABLE bench.t_cache1000 (id bigint DEFAULT sharded_id.next_id(6, 'bench.cache1000') PRIMARY KEY, v int);

-- Autovacuum would wake up on a table just loaded while the next candidate
-- is being measured; the suite truncates the tables itself.
SELECT format('ALTER TABLE %s SET (autovacuum_enabled = off)', c.oid::regclass)
FROM pg_class c WHERE c.relnamespace = 'bench'::regnamespace AND c.relkind = 'r' \gexec

CREATE TABLE bench.results (
    section text NOT NULL,
    candidate text NOT NULL,
    metric text NOT NULL,
    round int NOT NULL,
    value double precision NOT NULL
);

-- Milliseconds one statement takes, timed inside the server, and the WAL
-- it wrote, with settings (name=value) applied for the transaction.
CREATE FUNCTION bench.time_ms(stmt text, settings text[] DEFAULT '{}',
                              OUT ms double precision, OUT wal_bytes numeric)
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    lsn0 pg_lsn;
BEGIN
    PERFORM set_config(split_part(s, '=', 1), split_part(s, '=', 2), true) FROM unnest(settings) s;
    lsn0 := pg_current_wal_insert_lsn();
    t0 := clock_timestamp();
    EXECUTE stmt;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    wal_bytes := pg_wal_lsn_diff(pg_current_wal_insert_lsn(), lsn0);
END $$;

-- Bulk insert of n rows into a table: time, WAL bytes and primary-key size.
CREATE FUNCTION bench.bulk_insert(tab regclass, n int,
                                  OUT ms double precision,
                                  OUT wal_bytes numeric,
                                  OUT pk_bytes bigint)
LANGUAGE plpgsql AS $$
DECLARE
    lsn0 pg_lsn;
BEGIN
    EXECUTE format('TRUNCATE %s', tab);
    lsn0 := pg_current_wal_insert_lsn();
    ms := (bench.time_ms(format('INSERT INTO %s (v) SELECT generate_series(1, %s)', tab, n))).ms;
    wal_bytes := pg_wal_lsn_diff(pg_current_wal_insert_lsn(), lsn0);
    SELECT pg_relation_size(i.indexrelid) INTO pk_bytes
    FROM pg_index i WHERE i.indrelid = tab AND i.indisprimary;
END $$;
