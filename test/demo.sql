-- test/demo.sql: the demo that test/demo.sh runs on a throwaway cluster.
\set ON_ERROR_STOP on
-- Only results are printed: no command tags.
\set QUIET on
\pset footer off
\echo
\echo '== 1. CREATE EXTENSION, then define each sharded table once, as a template'
CREATE EXTENSION sharded_id;
-- app.users (id, name) and app.photos (id, user_id -> users, caption)
\ir example/templates.sql
-- add_table returns how many existing shards it copied the table into: none yet.
SELECT sharded_id.add_table('app.users') AS shards_given_users,
       sharded_id.add_table('app.photos') AS shards_given_photos;

\echo '== 2. Sixteen logical shards: a schema each, with its sequence, next_id() and both tables'
SELECT string_agg(s, ' ') AS shards FROM sharded_id.create_shards(0, 15) s;

\echo '== 3. Route each user to a shard with shard_for(user_id, 16); ids come from the column DEFAULT'
SELECT format('INSERT INTO %I.users (name) VALUES (%L)',
              sharded_id.shard_schema(sharded_id.shard_for(u, 16)), 'user ' || u)
FROM generate_series(5001, 5006) u \gexec
SELECT format('INSERT INTO %I.photos (user_id, caption) SELECT id, name || %L FROM %1$I.users',
              schema_name, '''s photo')
FROM sharded_id.shards \gexec
\echo 'Rows per shard (the shards that got a user):'
SELECT 'SELECT * FROM (' || string_agg(format('SELECT %L AS shard, (SELECT count(*) FROM %I.users) AS users, '
                                              '(SELECT count(*) FROM %I.photos) AS photos',
                                              schema_name, schema_name, schema_name), ' UNION ALL ')
       || ') c WHERE users > 0 ORDER BY shard'
FROM sharded_id.shards \gexec

\echo '== 4. Every photo of every shard, its id decoded: the shard is inside the id'
SELECT 'CREATE TEMP VIEW all_photos AS '
       || string_agg(format('SELECT * FROM %I.photos', schema_name), ' UNION ALL ' ORDER BY shard_id)
FROM sharded_id.shards \gexec
SELECT p.id, d.created_at, d.shard_id, d.seq_id, p.caption
FROM all_photos p, sharded_id.decode(p.id) d
ORDER BY p.id;

\echo '== 5. Ids as text for JSON (JavaScript numbers stop at 2^53), and as shortcodes'
SELECT json_build_object('id', id::text, 'shortcode', sharded_id.to_shortcode(id)) AS api_view
FROM all_photos ORDER BY id LIMIT 3;

\echo '== 6. The seed article''s worked example: 1387263000 ms after the epoch, shard 1341, nextval 5001'
SELECT sharded_id.encode(timestamptz '2011-08-24 21:07:01.721+00'
                         + interval '1387263000 ms', 1341, 5001 % 1024) AS id;
SELECT * FROM sharded_id.decode(11637205501278089);

\echo '== 7. 2,000,000 ids for one shard in one statement: twice the 1024-per-ms ceiling'
\echo 'Minting and storing them took:'
\timing on
CREATE TEMP TABLE burst AS
SELECT sharded_id.next_id(1, 'shard_0001.id_seq') AS id FROM generate_series(1, 2000000);
\timing off
SELECT count(*) AS ids,
       count(DISTINCT id) AS distinct_ids,
       (SELECT max(n) FROM (SELECT count(*) AS n FROM burst
                            GROUP BY sharded_id.created_at(id)) per_ms) AS most_ids_in_one_ms
FROM burst;

\echo '== 8. Counter mode: no sequence, and a shard''s ids strictly increase in minting order'
CREATE TEMP TABLE counted AS
SELECT g, sharded_id.next_id(2) AS id FROM generate_series(1, 100000) g;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE id <= prev) AS not_increasing
FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev FROM counted) c;

\echo '== 9. What the generator saw: per shard, and as a whole'
SELECT layout, shard_id, ids, full_ms_waits, round(wait_time::numeric, 1) AS wait_ms, clock_behind
FROM sharded_id.generator_stats WHERE ids > 0 ORDER BY ids DESC LIMIT 5;
SELECT slots_used, max_shards, ceiling > now() AS ceiling_ahead_of_the_clock, ceiling_writes
FROM sharded_id.generator_info;
