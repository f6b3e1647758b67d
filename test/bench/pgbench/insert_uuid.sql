-- test/bench/pgbench/insert_uuid.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_uuid (v) VALUES (1);
