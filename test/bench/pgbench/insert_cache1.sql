-- test/bench/pgbench/insert_cache1.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_cache1 (v) VALUES (1);
