--
-- Layouts from the seeds, chosen by name; decoders stay IMMUTABLE.
--
SET timezone = 'UTC';
SELECT * FROM sharded_id.layouts();

-- Instagram, the default: the 2-argument calls and 'instagram' agree.
SELECT sharded_id.encode('2026-01-01', 42, 7) = sharded_id.encode('2026-01-01', 42, 7, 'instagram') AS default_is_instagram;

-- The seed's other epoch, 1293843600000 (2011-01-01 01:00 UTC): time
-- 264384000000 ms, shard 1001 (user 5001 of 2000 shards), sequence value
-- 9001, so seq_id 809.  The article prints 2217813737473025832; the
-- formula gives ...833.
SELECT sharded_id.shard_for(5001, 2000) AS shard_of_user_5001;
SELECT sharded_id.encode(to_timestamp((1293843600000 + 264384000000) / 1000.0), 1001, 9001 % 1024,
                         'instagram_2011_01') AS vietnamese_example;
SELECT (264384000000::bigint << 23) | (1001 << 10) | (9001 % 1024) AS formula;
SELECT * FROM sharded_id.decode(2217813737473025833, 'instagram_2011_01');

-- Twitter Snowflake: 10 worker bits, 12 sequence bits.
SELECT sharded_id.encode('2026-01-01', 1023, 4095, 'snowflake') AS snowflake_max_fields;
SELECT * FROM sharded_id.decode(sharded_id.encode('2026-01-01', 1023, 4095, 'snowflake'), 'snowflake');
SELECT sharded_id.encode('2026-01-01', 1024, 0, 'snowflake');

-- 58.com: 39 ms bits, 13 bits of data centre + machine + business line,
-- 7 sequence bits; ids use 59 bits.
SELECT sharded_id.encode('2026-01-01', 8191, 127, '58com') AS com58_max_fields,
       sharded_id.encode('2026-01-01', 8191, 127, '58com') < (1::bigint << 59) AS fits_59_bits;
SELECT * FROM sharded_id.decode(sharded_id.encode('2026-01-01', 8191, 200 % 128, '58com'), '58com');
SELECT sharded_id.decode(1::bigint << 59, '58com');

-- A recent epoch pushes the sign-bit date out to 2059.
SELECT sharded_id.encode('2050-01-01', 1, 1);
SELECT sharded_id.created_at(sharded_id.encode('2050-01-01', 1, 1, 'instagram_2025'), 'instagram_2025');

-- Every layout: round trips through encode/decode, and next_id per layout
-- honours the layout's capacity without repeats.
SELECT l.name,
       bool_and((sharded_id.decode(sharded_id.encode(ts, sh, sq, l.name), l.name)).created_at = date_trunc('milliseconds', ts)
            AND sharded_id.shard_id(sharded_id.encode(ts, sh, sq, l.name), l.name) = sh
            AND sharded_id.seq_id(sharded_id.encode(ts, sh, sq, l.name), l.name) = sq) AS round_trips
FROM sharded_id.layouts() l,
     LATERAL (SELECT timestamptz '2030-01-01' + g * interval '977 seconds 1 millisecond' AS ts,
                     (g * 37) % (l.max_shard + 1) AS sh,
                     (g * 11) % l.ids_per_ms AS sq
              FROM generate_series(0, 999) g) c
GROUP BY l.name ORDER BY l.name COLLATE "C";

CREATE SEQUENCE layout_seq;
CREATE TEMP TABLE layout_ids AS
SELECT l.name, sharded_id.next_id(3, 'layout_seq', l.name) AS id
FROM sharded_id.layouts() l, generate_series(1, 20000);
SELECT name, count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       max(n) <= min(l.ids_per_ms) AS within_capacity,
       bool_and(sharded_id.shard_id(id, name) = 3) AS shard_3
FROM (SELECT name, id, count(*) OVER (PARTITION BY name, sharded_id.created_at(id, name)) AS n
      FROM layout_ids) x
JOIN sharded_id.layouts() l USING (name)
GROUP BY name ORDER BY name COLLATE "C";

-- Bad layout names, with the list of good ones; nothing consumed.
SELECT last_value AS layout_seq_before FROM layout_seq \gset
SELECT sharded_id.decode(1, 'twitter');
SELECT sharded_id.next_id(1, 'layout_seq', 'nope');
SELECT last_value = :layout_seq_before AS not_consumed FROM layout_seq;
DROP SEQUENCE layout_seq;
RESET timezone;
