-- test/bench/pgbench/insert_cache1000.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_cache1000 (v) VALUES (1);
