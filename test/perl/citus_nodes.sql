-- test/perl/citus_nodes.sql: nodes minting one shard at once, driven
-- through the coordinator's own grant function (test/t/040): each node
-- asks for windows as src/citus_ask.c does, so that more nodes than a
-- test machine can run share a shard.  Run on a Citus coordinator.
SET citus.enable_ddl_propagation = off;
CREATE TABLE lane_grants (id serial, node int, asked_at bigint, s bigint, e bigint, lane int, lanes int);

-- For seconds, nodes (all named name:port, an active node) mint shard at
-- a trickle: each renews past the middle of its last window from that
-- window's end, or asks from its clock once its windows ended, and after a
-- refusal asks again after retry_after.  Every grant goes into
-- lane_grants.  Returns the largest share of the time a node spent
-- without a window after its ask was refused (a node whose window lapsed
-- while this loop did not run asks then, and is not counted), and the
-- asks and refusals.  Node i's clock runs offsets[1 + (i - 1) % n] ms off
-- the real one (n offsets): asked_at is its clock.
CREATE FUNCTION emulate_nodes(nodes int, seconds float8, shard int, name text, port int,
                              offsets int[] DEFAULT '{0}')
RETURNS TABLE (worst_gap float8, asks bigint, refused bigint)
LANGUAGE plpgsql AS $$
DECLARE
	cur_s bigint[] := array_fill(0::bigint, ARRAY[nodes]);
	cur_e bigint[] := array_fill(0::bigint, ARRAY[nodes]);
	cur_l int[] := array_fill(0, ARRAY[nodes]);
	cur_n int[] := array_fill(0, ARRAY[nodes]);
	nxt_s bigint[] := array_fill(0::bigint, ARRAY[nodes]);
	nxt_e bigint[] := array_fill(0::bigint, ARRAY[nodes]);
	nxt_l int[] := array_fill(0, ARRAY[nodes]);
	nxt_n int[] := array_fill(0, ARRAY[nodes]);
	renew bigint[] := array_fill(0::bigint, ARRAY[nodes]);
	retry_at bigint[] := array_fill(0::bigint, ARRAY[nodes]);
	waiting boolean[] := array_fill(false, ARRAY[nodes]);
	gap float8[] := array_fill(0::float8, ARRAY[nodes]);
	t0 bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
	prev bigint := t0;
	real_now bigint;
	now bigint;
	slot_ms bigint;
	min_start bigint;
	g record;
BEGIN
	asks := 0;
	refused := 0;
	LOOP
		real_now := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
		EXIT WHEN real_now > t0 + seconds * 1000;
		FOR i IN 1 .. nodes LOOP
			now := real_now + offsets[1 + (i - 1) % cardinality(offsets)];
			IF now >= cur_e[i] AND nxt_e[i] > now THEN
				cur_s[i] := nxt_s[i]; cur_e[i] := nxt_e[i]; cur_l[i] := nxt_l[i]; cur_n[i] := nxt_n[i];
				renew[i] := cur_s[i] + (cur_e[i] - cur_s[i]) / 2;
				nxt_e[i] := 0;
			END IF;
			IF cur_e[i] <= now AND waiting[i] THEN
				gap[i] := gap[i] + (real_now - prev);
			END IF;
			slot_ms := greatest(now, cur_s[i]);
			min_start := NULL;
			IF cur_e[i] <= slot_ms THEN
				min_start := slot_ms;
			ELSIF nxt_e[i] = 0 AND slot_ms >= renew[i] THEN
				min_start := cur_e[i];
			END IF;
			CONTINUE WHEN min_start IS NULL OR now < retry_at[i];
			asks := asks + 1;
			SELECT * INTO g FROM sharded_id.citus_grant_windows(ARRAY[shard], 'instagram', 1, name, port,
				ARRAY[min_start], 1, 0, true, now);
			IF g.window_end IS NULL THEN
				refused := refused + 1;
				waiting[i] := true;
				retry_at[i] := now + least(greatest(g.retry_after, 1), 100);
				CONTINUE;
			END IF;
			waiting[i] := false;
			INSERT INTO lane_grants (node, asked_at, s, e, lane, lanes) VALUES (i, now, g.window_start, g.window_end, g.lane, g.lanes);
			IF cur_e[i] > slot_ms AND g.window_start <= cur_e[i] AND g.lane = cur_l[i] AND g.lanes = cur_n[i] THEN
				cur_e[i] := greatest(cur_e[i], g.window_end);
				renew[i] := g.window_start + (g.window_end - g.window_start) / 2;
			ELSIF cur_e[i] > slot_ms THEN
				nxt_s[i] := g.window_start; nxt_e[i] := g.window_end; nxt_l[i] := g.lane; nxt_n[i] := g.lanes;
			ELSE
				cur_s[i] := g.window_start; cur_e[i] := g.window_end; cur_l[i] := g.lane; cur_n[i] := g.lanes;
				renew[i] := cur_s[i] + (cur_e[i] - cur_s[i]) / 2;
			END IF;
		END LOOP;
		prev := real_now;
	END LOOP;
	SELECT max(x) / (seconds * 1000) INTO worst_gap FROM unnest(gap) x;
	RETURN NEXT;
END $$;

-- Pairs of grants that share a value of a millisecond (a lane of lanes
-- is a range of 64ths of the values), and grants that start more than a
-- second after the clock of the node that asked.
CREATE VIEW lane_overlaps AS
SELECT count(*) AS n FROM lane_grants a JOIN lane_grants b
  ON a.id < b.id
 AND a.s < b.e AND b.s < a.e
 AND a.lane * (64 / a.lanes) < (b.lane + 1) * (64 / b.lanes)
 AND b.lane * (64 / b.lanes) < (a.lane + 1) * (64 / a.lanes);
CREATE VIEW lane_ahead AS
SELECT count(*) FILTER (WHERE s > asked_at + 1000) AS n, max(lanes) AS most_lanes FROM lane_grants;
