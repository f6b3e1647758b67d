-- test/bench/pgbench/insert_next_id.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_next_id (v) VALUES (1);
