-- test/bench/report.sql: medians of every measurement, as Markdown tables.
\pset format unaligned
\pset tuples_only on
\pset footer off
CREATE TEMP VIEW med AS
SELECT section, candidate, metric,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median,
       count(*) AS rounds
FROM bench.results GROUP BY 1, 2, 3;

SELECT '### Per call: 1,000,000 calls in one statement (median of ' || max(rounds) || ' rounds)'
FROM med WHERE section = 'percall' AND metric = 'ms';
SELECT '';
SELECT '| candidate | ms per million calls | × nextval | ids/s | WAL bytes per million calls |';
SELECT '|---|---:|---:|---:|---:|';
SELECT format('| %s | %s | %s | %s | %s |', m.candidate, round(m.median::numeric, 0),
              round((m.median / b.median)::numeric, 2),
              to_char(1e9 / m.median, 'FM9,999,999,999'),
              to_char(w.median, 'FM999,999,999,990'))
FROM med m
JOIN med b ON b.section = 'percall' AND b.candidate = 'nextval' AND b.metric = 'ms'
JOIN med w ON w.section = 'percall' AND w.candidate = m.candidate AND w.metric = 'wal_bytes'
WHERE m.section = 'percall' AND m.metric = 'ms'
ORDER BY m.median;
SELECT '';
SELECT format('next_id on one shard reaches %s %% of the 1,024,000 ids/s ceiling; '
              'the PL/pgSQL original is %s× slower than next_id over many shards; '
              'next_id over many shards costs %s× a nextval evaluating the same shard expression.',
              round((1e9 / one.median / 1024000 * 100)::numeric, 1),
              round((seed.median / spread.median)::numeric, 1),
              round((spread.median / ref.median)::numeric, 2))
FROM med one, med seed, med spread, med ref
WHERE one.candidate = 'next_id, one shard' AND seed.candidate = 'PL/pgSQL original'
  AND spread.candidate = 'next_id, 8192 shards' AND ref.candidate = 'nextval + shard expression'
  AND one.section = 'percall' AND seed.section = 'percall'
  AND spread.section = 'percall' AND ref.section = 'percall'
  AND one.metric = 'ms' AND seed.metric = 'ms' AND spread.metric = 'ms' AND ref.metric = 'ms';
SELECT format('Counter mode: next_id(n) over 8192 shards costs %s× a bare nextval and %s× next_id(n, seq) over 8192 shards; '
              'on one shard it reaches %s %% of the 1,024,000 ids/s ceiling.',
              round((c.median / nv.median)::numeric, 2),
              round((c.median / spread.median)::numeric, 2),
              round((1e9 / c1.median / 1024000 * 100)::numeric, 1))
FROM med c, med nv, med spread, med c1
WHERE c.section = 'percall' AND c.candidate = 'counter next_id(n), 8192 shards'
  AND nv.section = 'percall' AND nv.candidate = 'nextval'
  AND spread.section = 'percall' AND spread.candidate = 'next_id, 8192 shards'
  AND c1.section = 'percall' AND c1.candidate = 'counter next_id(n), one shard'
  AND c.metric = 'ms' AND nv.metric = 'ms' AND spread.metric = 'ms' AND c1.metric = 'ms';
-- (sharded_id.wal_log_ceiling is set for the whole server since 2.0: no
-- per-session candidate measures it any more.)
SELECT format('Side by side over 8192 shards: next_id %s ms; again (A/A, the noise floor) %s ms (%s×); '
              'with track_stats off %s ms (%s×); its WAL %s bytes per million calls.',
              round(a.median::numeric), round(aa.median::numeric), round((aa.median / a.median)::numeric, 3),
              round(st.median::numeric), round((st.median / a.median)::numeric, 3),
              round(aw.median::numeric))
FROM med a, med aa, med st, med aw
WHERE a.section = 'percall' AND a.candidate = 'next_id, 8192 shards' AND a.metric = 'ms'
  AND aa.section = 'percall' AND aa.candidate = 'next_id, 8192 shards, again (noise floor)' AND aa.metric = 'ms'
  AND st.section = 'percall' AND st.candidate = 'next_id, 8192 shards, track_stats off' AND st.metric = 'ms'
  AND aw.section = 'percall' AND aw.candidate = 'next_id, 8192 shards' AND aw.metric = 'wal_bytes';
SELECT format('A shard''s zero-argument next_id() costs %s× the direct next_id(n, seq) it stands for (16 shards in turn, per call).',
              round((w.median / d.median)::numeric, 3))
FROM med w, med d
WHERE w.section = 'percall' AND w.candidate = 'shard_n.next_id() over 16 shards' AND w.metric = 'ms'
  AND d.section = 'percall' AND d.candidate = 'next_id(n, seq) over 16 shards' AND d.metric = 'ms';
SELECT '';
SELECT '### Bulk INSERT of 1,000,000 rows with the id as column DEFAULT (median of ' || max(rounds) || ' rounds)'
FROM med WHERE section = 'bulk';
SELECT '';
SELECT '| id column | ms | × bigserial throughput | PK index MB per million rows | WAL MB per million rows |';
SELECT '|---|---:|---:|---:|---:|';
SELECT format('| %s | %s | %s | %s | %s |', m.candidate, round(m.median::numeric, 0),
              round((b.median / m.median)::numeric, 2),
              round((pk.median / 1048576)::numeric, 1),
              round((wal.median / 1048576)::numeric, 1))
FROM med m
JOIN med b ON b.section = 'bulk' AND b.candidate = 'bigserial' AND b.metric = 'ms'
JOIN med pk ON pk.section = 'bulk' AND pk.candidate = m.candidate AND pk.metric = 'pk_bytes'
JOIN med wal ON wal.section = 'bulk' AND wal.candidate = m.candidate AND wal.metric = 'wal_bytes'
WHERE m.section = 'bulk' AND m.metric = 'ms'
ORDER BY m.median;
SELECT '';
-- The wrapper against the direct call, where the shard's 1024-per-ms
-- ceiling does not bind (a bulk INSERT mints about 500 ids per ms).
SELECT format('Counter mode against bigserial in bulk: primary key %s× its size, WAL %s×.',
              round((cpk.median / bpk.median)::numeric, 3), round((cwal.median / bwal.median)::numeric, 3))
FROM med cpk, med bpk, med cwal, med bwal
WHERE cpk.section = 'bulk' AND cpk.candidate = 'counter next_id(9)' AND cpk.metric = 'pk_bytes'
  AND bpk.section = 'bulk' AND bpk.candidate = 'bigserial' AND bpk.metric = 'pk_bytes'
  AND cwal.section = 'bulk' AND cwal.candidate = 'counter next_id(9)' AND cwal.metric = 'wal_bytes'
  AND bwal.section = 'bulk' AND bwal.candidate = 'bigserial' AND bwal.metric = 'wal_bytes';
SELECT format('A shard''s zero-argument next_id() as the DEFAULT takes %s× the time of the direct next_id(5, seq).',
              round((w.median / d.median)::numeric, 3))
FROM med w, med d
WHERE w.section = 'bulk' AND w.metric = 'ms' AND w.candidate = 'shard_0005.next_id() wrapper'
  AND d.section = 'bulk' AND d.metric = 'ms' AND d.candidate = 'next_id(5, seq)';
SELECT '';

SELECT '### pgbench: single-row INSERT with the id as column DEFAULT, transactions/s (median of ' || max(rounds) || ' runs)'
FROM med WHERE section = 'pgbench';
SELECT '';
SELECT '| id column | ' || string_agg(metric || ' | ×bigserial', ' | ' ORDER BY split_part(metric, ' ', 1)::int) || ' |'
FROM (SELECT DISTINCT metric FROM med WHERE section = 'pgbench') x;
SELECT '|---|' || string_agg('---:|---:', '|' ORDER BY split_part(metric, ' ', 1)::int) || '|'
FROM (SELECT DISTINCT metric FROM med WHERE section = 'pgbench') x;
SELECT format('| %s | %s |', m.candidate,
              string_agg(round(m.median::numeric, 0) || ' | ' || round((m.median / b.median)::numeric, 2),
                         ' | ' ORDER BY split_part(m.metric, ' ', 1)::int))
FROM med m JOIN med b ON b.section = 'pgbench' AND b.candidate = 'bigserial' AND b.metric = m.metric
WHERE m.section = 'pgbench'
GROUP BY m.candidate
ORDER BY min(b.median / m.median);
SELECT '';

SELECT '### Sequence CACHE under next_id: pgbench single-row INSERT, 4 clients, transactions/s (median of ' || max(rounds) || ' runs)'
FROM med WHERE section = 'cache';
SELECT '';
SELECT '| sequence | transactions/s | × CACHE 1 |';
SELECT '|---|---:|---:|';
SELECT format('| %s | %s | %s |', m.candidate, round(m.median::numeric, 0),
              round((m.median / b.median)::numeric, 2))
FROM med m JOIN med b ON b.section = 'cache' AND b.candidate = 'CACHE 1'
WHERE m.section = 'cache'
ORDER BY split_part(m.candidate, ' ', 2)::int;
SELECT '';

SELECT '### Router: PL/Proxy call of a data-node insert function, transactions/s (median of ' || max(rounds) || ' runs)'
FROM med WHERE section = 'router';
SELECT '';
SELECT '| clients | direct on the node | through the PL/Proxy router | router / direct |';
SELECT '|---|---:|---:|---:|';
SELECT format('| %s | %s | %s | %s |', split_part(d.metric, ' ', 1), round(d.median::numeric, 0),
              round(r.median::numeric, 0), round((r.median / d.median)::numeric, 2))
FROM med d JOIN med r ON r.section = 'router' AND r.candidate = 'through the PL/Proxy router' AND r.metric = d.metric
WHERE d.section = 'router' AND d.candidate = 'direct on the node'
ORDER BY split_part(d.metric, ' ', 1)::int;
SELECT '';

SELECT '### Moving a shard while 2 writers insert through the router (median of ' || max(rounds) || ' moves each)'
FROM med WHERE section = 'move';
SELECT '';
SELECT '| method | rows | write freeze ms (min–max) | total s | writes per move | retried, all moves | failed, all moves |';
SELECT '|---|---:|---:|---:|---:|---:|---:|';
SELECT format('| %s | %s | %s (%s–%s) | %s | %s | %s | %s |', split_part(f.candidate, ',', 1),
              to_char(n.median, 'FM9,999,999'), round(f.median::numeric, 0), mm.lo, mm.hi,
              round((t.median / 1000)::numeric, 1),
              round(w.median::numeric, 0), mm.retried, mm.failed)
FROM med f
JOIN med n ON n.section = 'move' AND n.candidate = f.candidate AND n.metric = 'rows'
JOIN med t ON t.section = 'move' AND t.candidate = f.candidate AND t.metric = 'total ms'
JOIN med w ON w.section = 'move' AND w.candidate = f.candidate AND w.metric = 'writes'
JOIN (SELECT candidate,
             min(value) FILTER (WHERE metric = 'write freeze ms') AS lo,
             max(value) FILTER (WHERE metric = 'write freeze ms') AS hi,
             sum(value) FILTER (WHERE metric = 'writes retried') AS retried,
             sum(value) FILTER (WHERE metric = 'writes failed') AS failed
      FROM bench.results WHERE section = 'move' GROUP BY candidate) mm ON mm.candidate = f.candidate
WHERE f.section = 'move' AND f.metric = 'write freeze ms'
ORDER BY split_part(f.candidate, ',', 1) DESC, n.median;
SELECT '';
SELECT format('Online move: the median write freeze at %s rows is %s× the one at %s rows.',
              to_char(bn.median, 'FM9,999,999'), round((b.median / s.median)::numeric, 2), to_char(sn.median, 'FM9,999,999'))
FROM med b JOIN med bn ON bn.section = 'move' AND bn.candidate = b.candidate AND bn.metric = 'rows',
     med s JOIN med sn ON sn.section = 'move' AND sn.candidate = s.candidate AND sn.metric = 'rows'
WHERE b.section = 'move' AND b.metric = 'write freeze ms' AND b.candidate LIKE 'online,%'
  AND s.section = 'move' AND s.metric = 'write freeze ms' AND s.candidate LIKE 'online,%'
  AND bn.median = (SELECT max(median) FROM med WHERE section = 'move' AND metric = 'rows' AND candidate LIKE 'online,%')
  AND sn.median = (SELECT min(median) FROM med WHERE section = 'move' AND metric = 'rows' AND candidate LIKE 'online,%');

SELECT '';
SELECT '### The same moves seen by 2 writers through the router: the command-line tool beside move_shard (median of ' || max(rounds) || ' moves each)'
FROM med WHERE section = 'writers';
SELECT '';
SELECT '| mover | rows | longest writer transaction ms, median (max) | write freeze ms | retried, all moves | failed, all moves | clients aborted |';
SELECT '|---|---:|---:|---:|---:|---:|---:|';
SELECT format('| %s | %s | %s (%s) | %s | %s | %s | %s |', split_part(l.candidate, ',', 1),
              to_char(n.median, 'FM9,999,999'), round(l.median::numeric, 1), mm.longest,
              round(f.median::numeric, 0), mm.retried, mm.failed, mm.aborted)
FROM med l
JOIN med n ON n.section = 'writers' AND n.candidate = l.candidate AND n.metric = 'rows'
JOIN med f ON f.section = 'writers' AND f.candidate = l.candidate AND f.metric = 'write freeze ms'
JOIN (SELECT candidate,
             max(value) FILTER (WHERE metric = 'longest writer transaction ms') AS longest,
             sum(value) FILTER (WHERE metric = 'writes retried') AS retried,
             sum(value) FILTER (WHERE metric = 'writes failed') AS failed,
             sum(value) FILTER (WHERE metric = 'clients aborted') AS aborted
      FROM bench.results WHERE section = 'writers' GROUP BY candidate) mm ON mm.candidate = l.candidate
WHERE l.section = 'writers' AND l.metric = 'longest writer transaction ms'
ORDER BY split_part(l.candidate, ',', 1), n.median;
