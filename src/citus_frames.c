/*-------------------------------------------------------------------------
 *
 * src/citus_frames.c
 *	  Shard windows on Citus, the coordinator's side: where a request's
 *	  window lies among the shard's frames, in which line of time.
 *
 * The design is in doc/sharded_id-design.md, "Citus", "Lines of time".
 * citus_grant.c calls shid_frames_place; this file calls no other.  A
 * shard's frames follow one line of time until a request finds that the
 * line cannot serve it within a second of its clock and its clock runs
 * more than a second less a window (half a second at least,
 * shid_line_apart_ms) behind the line's, or that its clock runs that far
 * ahead of the line's: then the shard splits (where a millisecond has four
 * values or more) in SHID_GRANT_LINES lines, each in a part of the values
 * of every millisecond, so that nodes whose clocks differ mint it at once,
 * each near its own clock.  Once the other lines are unused or idle and lie
 * behind the one a frame opens in, and no request was refused lately,
 * they merge again.  No value of a millisecond is granted twice: a line's
 * frames follow one another and never start before its end, which a merge
 * keeps (raised past the whole milliseconds); lines hold different parts;
 * and a frame in a part keeps out of the milliseconds of the frames of
 * every value since the last merge (ShidGrantState's whole_lo, whole_hi).
 *
 * Everything here runs under the slot's spinlock (citus_grant.c): no call
 * that can fail, no allocation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "citus.h"
#include "citus_int.h"
#include "port/pg_bitutils.h"
#include "slots.h"

/*
 * A line without a grant for this long is idle: a request may move it on
 * past its nodes' clocks, and the shard's lines may merge again.
 */
static inline int64
shid_line_idle_ms(void)
{
	return Max((int64) shid_citus_window_ms * 100, 2 * SHID_WINDOW_AHEAD_MS);
}

/*
 * How far a requester's clock may lie from the clock of a line's last
 * requester (moved on since) and still be the line's: ahead, for it to
 * move the line on, so far that the line's next frame still ends within a
 * second of its nodes' clocks; behind, for it to wait for the line's
 * frames rather than take a line of its own.  Half a second at least (with
 * long windows, a clock read a few ms later would split a line).
 */
static inline int64
shid_line_apart_ms(void)
{
	return Max(SHID_WINDOW_AHEAD_MS - shid_citus_window_ms, SHID_WINDOW_AHEAD_MS / 2);
}

/*
 * Whether a request that needs windows from ms from on may take a lane of
 * line l's last frame: a frame of this run above the floors, the window
 * (from from on, or from the frame's start) starting within a second of
 * the requester's clock, with half a window or more left after from; and
 * one of its lanes never granted, unless !free.
 */
static bool
shid_line_joinable(const ShidGrantState *g, int l, const ShidFrameAsk *a, int64 from, bool free)
{
	const ShidGrantLine *ln = &g->line[l];
	int			count = 1 << ln->lane_bits;
	uint64		all = count == 64 ? ~UINT64CONST(0) : (UINT64CONST(1) << count) - 1;

	return a->lanes && ln->frame_start != 0 && ln->frame_start >= a->base &&
		Max(ln->frame_start, from) <= a->ref + SHID_WINDOW_AHEAD_MS &&
		ln->end - from >= shid_citus_window_ms / 2 && (!free || (ln->lanes_taken & all) != all);
}

/* The lane grant takes of line l's frame, numbered among all values'. */
static void
shid_line_lane(const ShidGrantState *g, int l, int lane, ShidGrant *grant)
{
	const ShidGrantLine *ln = &g->line[l];

	grant->lane = (int16) (ln->in_part ? (l << ln->lane_bits) | lane : lane);
	grant->lane_bits = (int16) (ln->in_part ? ln->lane_bits + SHID_GRANT_LINE_BITS : ln->lane_bits);
}

/*
 * Take a lane of line l's last frame (shid_line_joinable), the window
 * starting at from if the frame started before.  A frame whose lanes are
 * all taken is marked, so that the line's next one has twice as many.
 */
static bool
shid_line_join(ShidGrantState *g, int l, const ShidFrameAsk *a, int64 from, ShidGrant *grant)
{
	ShidGrantLine *ln = &g->line[l];
	int			lane;

	if (!shid_line_joinable(g, l, a, from, true))
	{
		if (shid_line_joinable(g, l, a, from, false))
			ln->overflow = true;	/* every lane taken */
		return false;
	}
	lane = pg_rightmost_one_pos64(~ln->lanes_taken);
	shid_line_lane(g, l, lane, grant);
	grant->start = Max(ln->frame_start, from);
	grant->end = ln->end;
	ln->lanes_taken |= UINT64CONST(1) << lane;
	ln->mono = a->mono;
	ln->ref = a->ref;
	return true;
}

/*
 * Where line l's next frame would lie: from the latest of the requester's
 * clock, its min_start, the floors and the line's end (the shard's last
 * end while it has one line), for a window; a frame in a part of the
 * values, once the shard split, ends where the milliseconds of frames of
 * every value begin, or starts after them.  Returns its start, *end its
 * end.
 */
static int64
shid_line_next(const ShidGrantState *g, int l, const ShidFrameAsk *a, int64 *end)
{
	int64		s = Max(Max(a->ref, a->min_start), a->base);

	s = Max(s, g->split ? g->line[l].end : g->end);
	*end = s + shid_citus_window_ms;
	if (g->split && s < g->whole_hi && *end > g->whole_lo)
	{
		if (s >= g->whole_lo)
		{
			s = g->whole_hi;
			*end = s + shid_citus_window_ms;
		}
		else
			*end = g->whole_lo;
	}
	return s;
}

/*
 * The line for a request: among the lines that serve it within a second
 * of its clock (a lane of the last frame, or the next frame), the one
 * whose last requester's clock (moved on since) is nearest its own, an
 * idle one (no grant in shid_line_idle_ms) last, but none whose nodes'
 * clock runs more than shid_line_apart_ms behind it; else one not used
 * yet since the shard last had one line, unless a line of the requester's
 * clock (shid_line_apart_ms) runs too far
 * ahead (*own: frames of nodes of one clock, ahead; it waits for them, as
 * on one line); else -1.  *pushed: a line that serves it but whose nodes'
 * clock runs behind, the least recently used (-1: none); *wait: the ms
 * until some line would serve it.
 */
static int
shid_frames_choose(const ShidGrantState *g, const ShidFrameAsk *a, int64 from, int *pushed, bool *own,
				   int64 *wait)
{
	int			lines = g->split ? SHID_GRANT_LINES : 1;
	int			best = -1;
	int64		best_apart = PG_INT64_MAX;
	int			fresh = -1;
	int64		s;
	int64		e;

	*pushed = -1;
	*own = false;
	*wait = PG_INT64_MAX;
	for (int l = 0; l < lines; l++)
	{
		const ShidGrantLine *ln = &g->line[l];
		int64		idle = a->mono - ln->mono;
		bool		active = ln->frame_start != 0 && idle < shid_line_idle_ms();

		s = shid_line_next(g, l, a, &e);
		if (s > a->ref + SHID_WINDOW_AHEAD_MS && !shid_line_joinable(g, l, a, from, true))
		{
			*wait = Min(*wait, s - a->ref - SHID_WINDOW_AHEAD_MS);
			if (active && a->ref >= ln->ref + idle - shid_line_apart_ms())
				*own = true;
			continue;
		}
		if (ln->frame_start == 0)
		{
			if (fresh < 0)
				fresh = l;
		}
		else if (active && a->ref > ln->ref + idle + shid_line_apart_ms())
		{
			/* Its frames would run on with this clock, past its nodes'. */
			if (*pushed < 0 || ln->mono < g->line[*pushed].mono)
				*pushed = l;
		}
		else
		{
			/* The line of the nearest clock; an idle one last. */
			int64		d = a->ref - (ln->ref + idle);
			int64		apart = !active ? PG_INT64_MAX : d < 0 ? -d : d;

			if (best < 0 || apart < best_apart)
			{
				best = l;
				best_apart = apart;
			}
		}
	}
	return best >= 0 ? best : *own ? -1 : fresh;
}

/*
 * Split the shard in lines: every frame granted since it last had one line
 * holds every value of its milliseconds, and they lie in [whole_lo,
 * whole_hi).  Line 0 keeps
 * its last frame, and its next ones lie in its part of the values.
 */
static void
shid_frames_split(ShidGrantState *g)
{
	g->split = true;
	g->whole_hi = g->end;
}

/*
 * One line again from start on, whose frames hold every value: the
 * milliseconds from start on are the whole ones.  Each line keeps its end
 * (raised past the whole milliseconds before), where its part's next frame
 * may start once the shard splits again: before it, the part's values were
 * its own or whole.
 */
static void
shid_frames_unsplit(ShidGrantState *g, int64 start)
{
	for (int m = 0; m < SHID_GRANT_LINES; m++)
	{
		g->line[m].end = Max(g->line[m].end, g->whole_hi);
		g->line[m].frame_start = 0;
		g->line[m].in_part = false;
	}
	g->split = false;
	g->whole_lo = start;
	g->whole_hi = 0;
}

/*
 * Merge the lines where line l opens a frame at start: when every other
 * line is unused, or idle and behind start, and no request was refused for
 * as long as a line takes to idle (the requester that split the shard may
 * wait for its line).
 */
static bool
shid_frames_merge(ShidGrantState *g, int l, const ShidFrameAsk *a, int64 start)
{
	for (int m = 0; m < SHID_GRANT_LINES; m++)
	{
		const ShidGrantLine *ln = &g->line[m];

		if (m != l && ln->frame_start != 0 &&
			(a->mono - ln->mono < shid_line_idle_ms() || ln->end > start))
			return false;
	}
	if (a->mono - g->refused_mono < shid_line_idle_ms())
		return false;			/* a requester waits for a line */
	shid_frames_unsplit(g, start);
	return true;
}

/*
 * Open line l's next frame, [start, end), and take its first lane.  Its
 * lanes, as log2: twice the line's last frame's where a request found them
 * all taken, half where half or fewer were granted, else as many; none
 * (the whole field, or the line's whole part) for the line's first frame
 * since the shard last had one line, and for a requester that cannot mint
 * in a lane.
 */
static void
shid_line_open(ShidGrantState *g, int l, const ShidFrameAsk *a, int64 start, int64 end, ShidGrant *grant)
{
	ShidGrantLine *ln = &g->line[l];
	int			max_bits = a->max_bits - (g->split ? SHID_GRANT_LINE_BITS : 0);
	int			bits = ln->lane_bits;

	if (!a->lanes || ln->frame_start == 0)
		bits = 0;
	else if (ln->overflow)
		bits++;
	else if (bits > 0 && pg_popcount64(ln->lanes_taken) <= (1 << bits) / 2)
		bits--;
	if (!g->split && g->whole_lo == 0)
		g->whole_lo = start;
	ln->frame_start = start;
	ln->end = end;
	ln->lane_bits = (int16) Max(0, Min(bits, max_bits));
	ln->lanes_taken = 1;
	ln->overflow = false;
	ln->in_part = g->split;
	ln->mono = a->mono;
	ln->ref = a->ref;
	shid_line_lane(g, l, 0, grant);
	grant->start = start;
	grant->end = end;
	g->end = Max(g->end, end);
}

/*
 * Place a request's window among the shard's frames (ShidFrameAsk): a lane
 * of the last frame of its line, or that line's next frame; splitting the
 * shard in lines (shid_frames_choose says when).  A requester that cannot
 * mint in a lane gets a frame of every value, after every line's.  Returns
 * false, placing nothing, with *retry_after (ms), when no line serves it
 * within a second of its clock, or, the shard split, every line that does
 * is held by nodes whose clock runs more than shid_line_apart_ms behind.
 *
 * Locks: the slot's spinlock, held by the caller (citus_grant.c).
 */
bool
shid_frames_place(ShidGrantState *g, const ShidFrameAsk *a, ShidGrant *grant, int32 *retry_after)
{
	int64		from = Max(a->ref, a->min_start);
	bool		can_split = a->lanes && a->max_bits >= SHID_GRANT_LINE_BITS;
	int			pushed;
	bool		own;
	int64		wait;
	int64		start;
	int64		end = 0;
	int			l;

	if (!a->lanes)
	{
		/* After every line: a frame of every value, and one line again. */
		start = Max(Max(from, g->end), a->base);
		l = 0;
		wait = start - a->ref - SHID_WINDOW_AHEAD_MS;
		if (wait <= 0 && g->split)
			shid_frames_unsplit(g, start);
	}
	else
	{
		l = shid_frames_choose(g, a, from, &pushed, &own, &wait);
		/*
		 * No split for a requester whose own slot runs more than a second
		 * ahead of its clock (no line can serve it), nor for one of the
		 * line's clock (its frames run ahead: it waits, as on one line).
		 */
		if (l < 0 && !own && !g->split && can_split && g->line[0].frame_start != 0 &&
			from <= a->ref + SHID_WINDOW_AHEAD_MS)
		{
			shid_frames_split(g);
			l = shid_frames_choose(g, a, from, &pushed, &own, &wait);
		}
		/*
		 * A shard that cannot split moves its line on; a split one waits
		 * until a line serves the request (one idles, or its clock gets
		 * there).
		 */
		if (l < 0 && !g->split)
			l = pushed;
		if (l >= 0 && shid_line_join(g, l, a, from, grant))
			return true;
		if (l >= 0)
			start = shid_line_next(g, l, a, &end);
		else
			start = PG_INT64_MAX;
		if (l >= 0 && start > a->ref + SHID_WINDOW_AHEAD_MS)
		{
			wait = Min(wait, start - a->ref - SHID_WINDOW_AHEAD_MS);
			l = -1;
		}
		else if (l >= 0)
			wait = 0;
	}
	if (l < 0 || wait > 0)
	{
		g->refused_mono = a->mono;
		*retry_after = (int32) Max(1, Min(wait, SHID_WINDOW_AHEAD_MS));
		return false;
	}
	if (!a->lanes)
		end = start + shid_citus_window_ms;
	else if (g->split && shid_frames_merge(g, l, a, start))
	{
		l = 0;
		end = start + shid_citus_window_ms;
	}
	shid_line_open(g, l, a, start, end, grant);
	return true;
}
