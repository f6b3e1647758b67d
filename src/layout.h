/*-------------------------------------------------------------------------
 *
 * src/layout.h
 *	  The bit layout of a sharded id, and packing and unpacking it.
 *
 * The default layout is Instagram's:
 *
 *	 63 62                                    23 22          10 9          0
 *	+--+----------------------------------------+--------------+------------+
 *	|0 |   milliseconds since the epoch (41)    |  shard (13)  |  seq (10)  |
 *	+--+----------------------------------------+--------------+------------+
 *
 * The time field is nominally 41 bits wide, but its top bit is the sign bit
 * of the bigint, so only 40 bits of milliseconds are usable: with the
 * default epoch (2011-08-24 21:07:01.721 UTC) ids stay positive until
 * 2046-06-27.  A layout whose fields add up to less than 63 bits simply
 * leaves the top bits zero.
 *
 * Other built-in layouts (layout.c) move the borders between the fields and
 * the epoch; all of them keep the order time, shard, sequence.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_LAYOUT_H
#define SHARDED_ID_LAYOUT_H

#include "compat.h"

#include "datatype/timestamp.h"
#include "fmgr.h"

/* Widest sequence field the generator keeps state for (Snowflake's). */
#define SHID_MAX_SEQ_BITS 12

/* Most stripes (sharded_id.stripes): Instagram's layout keeps 16 ids per ms. */
#define SHID_MAX_STRIPES 64

/* Milliseconds between 1970-01-01 and PostgreSQL's 2000-01-01 epoch. */
#define SHID_UNIX_MS_AT_PG_EPOCH \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000)

typedef struct ShidLayout
{
	const char *name;			/* how SQL callers name the layout */
	int64		epoch_ms;		/* Unix time in ms of time field zero */
	int			time_bits;		/* nominal width of the time field */
	int			shard_bits;		/* width of the shard field */
	int			seq_bits;		/* width of the sequence field */
	int64		max_unix_ms;	/* the last Unix ms its usable time bits
								 * hold (shid_max_elapsed_ms), for
								 * shid_check_unix_ms */
} ShidLayout;

/* Fields of one id, as unpacked. */
typedef struct ShidFields
{
	int64		unix_ms;		/* creation time, Unix ms */
	int32		shard;
	int32		seq;
} ShidFields;

extern const ShidLayout *shid_default_layout(void);
extern int	shid_num_layouts(void);
extern const ShidLayout *shid_layout_at(int i);
extern const ShidLayout *shid_layout_by_name(const char *name);
extern const ShidLayout *shid_layout_by_key(uint64 key);
extern const ShidLayout *shid_layout_arg(FunctionCallInfo fcinfo, int argno);

/* Most bytes of a caller's text that an error message quotes. */
#define SHID_MAX_QUOTED 64

extern char *shid_bounded(const char *text, int len);
extern SHID_NORETURN void shid_shard_out_of_range(const ShidLayout *layout, int64 shard);
extern SHID_NORETURN void shid_time_out_of_range(const ShidLayout *layout);
extern void shid_check_id(const ShidLayout *layout, int64 id);

extern void shid_unpack(const ShidLayout *layout, int64 id,
						ShidFields *fields);

extern int64 shid_timestamptz_to_unix_ms(TimestampTz ts);
extern TimestampTz shid_unix_ms_to_timestamptz(int64 unix_ms);

/*
 * The small helpers below are on next_id's path, so they are inline here
 * rather than calls into layout.c.
 */

/* Bits of the time field that can be used without touching the sign bit. */
static inline int
shid_usable_time_bits(const ShidLayout *layout)
{
	return Min(layout->time_bits, 63 - layout->shard_bits - layout->seq_bits);
}

static inline int64
shid_max_elapsed_ms(const ShidLayout *layout)
{
	return (INT64CONST(1) << shid_usable_time_bits(layout)) - 1;
}

static inline int64
shid_max_shard(const ShidLayout *layout)
{
	return (INT64CONST(1) << layout->shard_bits) - 1;
}

static inline int64
shid_seq_capacity(const ShidLayout *layout)
{
	return INT64CONST(1) << layout->seq_bits;
}

/*
 * A key that tells layouts apart where their ids could differ: the epoch and
 * the widths of the two low fields.  The generator keeps one state per
 * (layout key, shard).
 */
static inline uint64
shid_layout_key(const ShidLayout *layout)
{
	return ((uint64) layout->epoch_ms << 16) |
		((uint64) layout->shard_bits << 8) |
		(uint64) layout->seq_bits;
}

/* Raise an error unless the layout has this shard. */
static inline void
shid_check_shard(const ShidLayout *layout, int64 shard)
{
	if (unlikely(shard < 0 || shard > shid_max_shard(layout)))
		shid_shard_out_of_range(layout, shard);
}

/*
 * Raise an error unless unix_ms fits the time field of the layout: not
 * before its epoch, and not so late that the id would turn negative.
 */
static inline void
shid_check_unix_ms(const ShidLayout *layout, int64 unix_ms)
{
	Assert(layout->max_unix_ms == layout->epoch_ms + shid_max_elapsed_ms(layout));
	if (unlikely(unix_ms < layout->epoch_ms || unix_ms > layout->max_unix_ms))
		shid_time_out_of_range(layout);
}

/*
 * Build an id.  The caller has checked the shard and the time; the sequence
 * value contributes its low seq_bits bits.
 */
static inline int64
shid_pack(const ShidLayout *layout, int64 unix_ms, int64 shard, int64 seq)
{
	uint64		elapsed = (uint64) (unix_ms - layout->epoch_ms);
	uint64		seq_mask = (UINT64CONST(1) << layout->seq_bits) - 1;

	Assert(unix_ms >= layout->epoch_ms);
	Assert(shard >= 0 && shard <= shid_max_shard(layout));

	return (int64) ((elapsed << (layout->shard_bits + layout->seq_bits)) |
					((uint64) shard << layout->seq_bits) |
					((uint64) seq & seq_mask));
}

#endif							/* SHARDED_ID_LAYOUT_H */
