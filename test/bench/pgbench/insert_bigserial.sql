-- test/bench/pgbench/insert_bigserial.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_bigserial (v) VALUES (1);
