-- test/bench/pgbench/insert_bigserial2.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_bigserial2 (v) VALUES (1);
