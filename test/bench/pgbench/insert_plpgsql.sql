-- test/bench/pgbench/insert_plpgsql.sql: one row, id from the column DEFAULT
INSERT INTO bench.t_plpgsql (v) VALUES (1);
