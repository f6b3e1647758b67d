-- test/bench/pgbench/add_photo_random.sql: one photo for a random demo user, through the router
\set n random(1, 200)
SELECT app_api.add_photo(user_id, 'during a move') FROM bench.demo_users WHERE n = :n;
