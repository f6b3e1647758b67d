-- test/bench/pgbench/insert_cache32.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_cache32 (v) VALUES (1);
