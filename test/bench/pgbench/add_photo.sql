-- test/bench/pgbench/add_photo.sql: one photo for user :uid, through app_api
SELECT app_api.add_photo(:uid, 'bench');
