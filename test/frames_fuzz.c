/*
 * test/frames_fuzz.c: src/citus_frames.c's shid_frames_place, the
 * coordinator's placing of Citus windows among a shard's frames and lines
 * of time, driven by random nodes and checked by brute force
 * (test/frames.sh builds and runs it; doc/sharded_id-design.md, "Lines of
 * time").
 *
 * Each sequence: a window length, a slot's lanes, 1 to 8 nodes, each with a
 * clock off by one of a few offsets (0, under a second, about a second, 2 s,
 * 30 s), joining and leaving at random, renewing as src/citus_ask.c does;
 * now and then a node on 2.0's library (no lanes), an ask from anywhere,
 * and a base that moves up (a coordinator's learn).  Every grant is
 * checked: no value (a 64th of a millisecond) granted twice, no window
 * starting more than a second after its requester's clock (where its own
 * min_start does not), none before base or min_start, none empty, its lane
 * one of at most 2 ^ max_bits.  In sequences of at most four clocks, on a
 * slot that can split, every node present throughout once joined, no node
 * waits in all longer than its clock lags the fastest, plus a second and
 * two windows.  Prints TAP.
 */
#include "postgres.h"

#include "citus_int.h"

#include <stdio.h>
#include <stdlib.h>

int			shid_citus_window_ms = 100;

#define T0		INT64CONST(1800000000000)
#define LO		(T0 - 70000)
#define SPAN	300000
#define NODES	8

static uint64 vals[SPAN];
static uint64 rng = 88172645463325252ULL;
static long bad_twice, bad_ahead, bad_floor, bad_shape, bad_wait, grants, steady;
static long cov_split, cov_merge, cov_old, cov_below, cov_four;

static uint64 rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static int64 pick(int64 lo, int64 hi) { return lo + (int64) (rnd() % (uint64) (hi - lo + 1)); }

typedef struct Node
{
	int64		off, join, leave, cs, ce, retry_at, waited, renew;
	bool		old;
} Node;

/* Check one grant, and mark its values. */
static void
check(const ShidFrameAsk *a, const ShidGrant *g, int max_bits)
{
	int64		from = Max(a->ref, a->min_start);
	int			w;
	uint64		mask;

	grants++;
	if (g->end <= g->start || g->lane_bits < 0 || g->lane_bits > Min(6, max_bits) ||
		g->lane < 0 || g->lane >= (1 << g->lane_bits))
		bad_shape++;
	if (g->start < a->base || g->start < from)
		bad_floor++;
	if (g->start > a->ref + SHID_WINDOW_AHEAD_MS && from <= a->ref + SHID_WINDOW_AHEAD_MS)
		bad_ahead++;
	w = 64 >> Min(6, Max(0, g->lane_bits));
	mask = (w == 64 ? ~UINT64CONST(0) : ((UINT64CONST(1) << w) - 1)) << (g->lane * w);
	for (int64 ms = Max(g->start, LO); ms < Min(g->end, LO + SPAN); ms++)
	{
		if (vals[ms - LO] & mask)
			bad_twice++;
		vals[ms - LO] |= mask;
	}
}

/* One sequence; steady: at most four clocks, no old node, no stray asks. */
static void
sequence(bool is_steady)
{
	static const int64 offsets[] = {0, 0, 300, -600, 950, -1000, 1100, 2000, -2000, 30000, -30000};
	static const int windows[] = {10, 50, 100, 100, 1000};
	static const int bits[] = {6, 6, 6, 4, 2, 1, 0};
	ShidGrantState g;
	Node		nd[NODES];
	int			n = (int) pick(1, NODES);
	int			max_bits = bits[pick(0, is_steady ? 3 : 6)];
	int64		span = is_steady ? 20000 : pick(2000, 40000);
	int64		base = 0, fastest = PG_INT64_MIN;
	bool		was_split = false;

	memset(&g, 0, sizeof(g));
	memset(vals, 0, sizeof(vals));
	shid_citus_window_ms = windows[pick(0, 4)];
	for (int i = 0; i < n; i++)
	{
		memset(&nd[i], 0, sizeof(Node));
		nd[i].off = offsets[pick(0, 10)];
		if (is_steady && i >= 4)
			nd[i].off = nd[i % 4].off;
		nd[i].join = pick(0, span / 2);
		nd[i].leave = is_steady ? span : pick(nd[i].join, span);
		nd[i].old = !is_steady && pick(0, 49) == 0;
		fastest = Max(fastest, nd[i].off);
	}
	for (int64 t = 0; t < span; t += pick(1, 7))
	{
		if (!is_steady && pick(0, 3000) == 0)
			base = Max(base, T0 + t + pick(-2000, 3000));
		for (int i = 0; i < n; i++)
		{
			Node	   *x = &nd[i];
			int64		clock = T0 + t + x->off;
			ShidFrameAsk a = {clock, 0, base, 100000 + t + pick(0, 2), max_bits, !x->old};
			ShidGrant	gr;
			int32		retry;

			if (t < x->join || t >= x->leave || clock < x->retry_at)
				continue;
			if (x->ce <= clock)
				a.min_start = Max(clock, x->cs);
			else if (clock >= x->renew)
				a.min_start = x->ce;
			else
				continue;
			if (!is_steady && pick(0, 19) == 0)
				a.min_start = clock + pick(-3000, 3000);
			if (!shid_frames_place(&g, &a, &gr, &retry))
			{
				if (x->ce <= clock)
					x->waited += Min(retry, 100);
				x->retry_at = clock + Min(retry, 100);
				continue;
			}
			check(&a, &gr, max_bits);
			cov_old += x->old;
			cov_below += g.split && gr.end <= g.whole_lo;
			cov_four += g.split && g.line[3].frame_start != 0 && g.line[2].frame_start != 0;
			if (g.split && !was_split)
				cov_split++;
			if (!g.split && was_split)
				cov_merge++;
			was_split = g.split;
			if (gr.end > x->ce || x->ce <= clock)
			{
				x->cs = gr.start;
				x->ce = gr.end;
				x->renew = gr.start + (gr.end - gr.start) / 2;
			}
		}
	}
	for (int i = 0; is_steady && i < n; i++)
	{
		steady++;
		if (nd[i].waited > fastest - nd[i].off + SHID_WINDOW_AHEAD_MS + 2 * shid_citus_window_ms)
			bad_wait++;
	}
}

int
main(int argc, char **argv)
{
	long		count = argc > 1 ? atol(argv[1]) : 6000;

	rng ^= (uint64) (argc > 2 ? atol(argv[2]) : 1);
	for (long s = 0; s < count; s++)
		sequence(s % 4 == 0);
	printf("%s 1 - %ld sequences, %ld grants: no value of a millisecond granted twice (%ld)\n",
		   bad_twice ? "not ok" : "ok", count, grants, bad_twice);
	printf("%s 2 - no window starts more than a second after its requester's clock (%ld)\n",
		   bad_ahead ? "not ok" : "ok", bad_ahead);
	printf("%s 3 - none before base or the requester's min_start (%ld)\n",
		   bad_floor ? "not ok" : "ok", bad_floor);
	printf("%s 4 - every window non-empty, in one of at most 2 ^ max_bits lanes (%ld)\n",
		   bad_shape ? "not ok" : "ok", bad_shape);
	printf("%s 5 - at most four clocks: of %ld nodes, none waited longer than its lag, a second and two windows (%ld)\n",
		   bad_wait ? "not ok" : "ok", steady, bad_wait);
	printf("%s 6 - the sequences split (%ld), merged (%ld), granted below the whole milliseconds (%ld), "
		   "in four lines (%ld) and to old nodes (%ld)\n",
		   cov_split && cov_merge && cov_below && cov_four && cov_old ? "ok" : "not ok",
		   cov_split, cov_merge, cov_below, cov_four, cov_old);
	printf("1..6\n");
	return 0;
}
