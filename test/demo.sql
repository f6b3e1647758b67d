-- test/demo.sql: the demo that test/demo.sh runs on a throwaway cluster.
\set ON_ERROR_STOP on
\pset footer off
\echo
\echo '== CREATE EXTENSION, then four shard schemas, each with a sequence and a table'
CREATE EXTENSION sharded_id;
SELECT format($ddl$
    CREATE SCHEMA %1$I;
    CREATE SEQUENCE %1$I.table_id_seq;
    CREATE TABLE %1$I.photos (
        id bigint NOT NULL DEFAULT sharded_id.next_id(%2$s, %3$L) PRIMARY KEY,
        user_id bigint NOT NULL,
        caption text
    );$ddl$, 'insta' || s, s, 'insta' || s || '.table_id_seq')
FROM generate_series(1, 4) s \gexec

\echo '== Rows go to the shard of their user (user_id % 4 + 1); ids come from the DEFAULT'
SELECT format('INSERT INTO %I.photos (user_id, caption) VALUES (%s, %L)',
              'insta' || (u % 4 + 1), u, 'photo ' || p || ' of user ' || u)
FROM generate_series(101, 106) u, generate_series(1, 2) p \gexec

\echo '== Every row, its id decoded: the shard is inside the id'
SELECT t.id, d.created_at, d.shard_id, d.seq_id, t.user_id, t.caption
FROM (SELECT * FROM insta1.photos UNION ALL SELECT * FROM insta2.photos
      UNION ALL SELECT * FROM insta3.photos UNION ALL SELECT * FROM insta4.photos) t,
     sharded_id.decode(t.id) d
ORDER BY t.id;

\echo '== Ids sort by creation time across shards'
SELECT id, sharded_id.shard_id(id) AS shard, sharded_id.created_at(id)
FROM (SELECT id FROM insta1.photos UNION ALL SELECT id FROM insta4.photos) t
ORDER BY id DESC LIMIT 3;

\echo '== The seed article''s worked example: 1387263000 ms after the epoch, shard 1341, nextval 5001'
SELECT sharded_id.encode(timestamptz '2011-08-24 21:07:01.721+00'
                         + interval '1387263000 ms', 1341, 5001) AS id;
SELECT * FROM sharded_id.decode(11637205501278089);

\echo '== 2,000,000 ids for one shard in one statement: twice the 1024-per-ms ceiling'
\timing on
CREATE TEMP TABLE burst AS
SELECT sharded_id.next_id(1, 'insta1.table_id_seq') AS id FROM generate_series(1, 2000000);
\timing off
SELECT count(*) AS ids,
       count(DISTINCT id) AS distinct_ids,
       (SELECT max(n) FROM (SELECT count(*) AS n FROM burst
                            GROUP BY sharded_id.created_at(id)) per_ms) AS most_ids_in_one_ms
FROM burst;
