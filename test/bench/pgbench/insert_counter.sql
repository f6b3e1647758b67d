-- test/bench/pgbench/insert_counter.sql: one row, id from the column DEFAULT (counter mode)
INSERT INTO bench.t_counter (v) VALUES (1);
