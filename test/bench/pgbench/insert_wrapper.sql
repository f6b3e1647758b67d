-- test/bench/pgbench/insert_wrapper.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_wrapper (v) VALUES (1);
