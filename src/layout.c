/*-------------------------------------------------------------------------
 *
 * src/layout.c
 *	  The bit layout of a sharded id: range checks, packing, unpacking.
 *
 * Default (Instagram) layout, most significant bit first:
 *
 *	 63 62                                    23 22          10 9          0
 *	+--+----------------------------------------+--------------+------------+
 *	|0 |   milliseconds since the epoch (41)    |  shard (13)  |  seq (10)  |
 *	+--+----------------------------------------+--------------+------------+
 *
 *	id = (ms - epoch) << 23 | shard << 10 | seq & 1023
 *
 * Everything here is pure arithmetic on a ShidLayout; nothing reads the
 * clock or shared memory, so the SQL-level decoders built on it are
 * IMMUTABLE.  A sequence value enters the id as its low seq_bits bits,
 * which for a non-negative value is exactly "value % 1024".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "layout.h"
#include "utils/timestamp.h"

/* Instagram's layout and epoch, 2011-08-24 21:07:01.721 UTC. */
static const ShidLayout shid_instagram = {
	.name = "instagram",
	.epoch_ms = INT64CONST(1314220021721),
	.time_bits = 41,
	.shard_bits = 13,
	.seq_bits = 10,
};

const ShidLayout *
shid_default_layout(void)
{
	return &shid_instagram;
}

/* Bits of the time field that can be used without touching the sign bit. */
static int
shid_usable_time_bits(const ShidLayout *layout)
{
	return Min(layout->time_bits, 63 - layout->shard_bits - layout->seq_bits);
}

static int64
shid_max_elapsed_ms(const ShidLayout *layout)
{
	return (INT64CONST(1) << shid_usable_time_bits(layout)) - 1;
}

int64
shid_max_shard(const ShidLayout *layout)
{
	return (INT64CONST(1) << layout->shard_bits) - 1;
}

int64
shid_seq_capacity(const ShidLayout *layout)
{
	return INT64CONST(1) << layout->seq_bits;
}

/*
 * A key that tells layouts apart where their ids could differ: the epoch and
 * the widths of the two low fields.  The generator keeps one state per
 * (layout key, shard).
 */
uint64
shid_layout_key(const ShidLayout *layout)
{
	return ((uint64) layout->epoch_ms << 16) |
		((uint64) layout->shard_bits << 8) |
		(uint64) layout->seq_bits;
}

void
shid_check_shard(const ShidLayout *layout, int64 shard)
{
	if (shard < 0 || shard > shid_max_shard(layout))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("shard id %lld is out of range", (long long) shard),
				 errdetail("Shard ids must be between 0 and %lld.",
						   (long long) shid_max_shard(layout))));
}

/*
 * Raise an error unless unix_ms fits the time field of the layout: not
 * before its epoch, and not so late that the id would turn negative.
 */
void
shid_check_unix_ms(const ShidLayout *layout, int64 unix_ms)
{
	int64		elapsed = unix_ms - layout->epoch_ms;

	if (elapsed < 0 || elapsed > shid_max_elapsed_ms(layout))
	{
		char	   *lo;
		char	   *hi;

		/* timestamptz_to_str returns a static buffer: copy each result. */
		lo = pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(layout->epoch_ms)));
		hi = pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(layout->epoch_ms +
																	shid_max_elapsed_ms(layout))));
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for sharded ids"),
				 errdetail("Sharded ids of layout \"%s\" hold times from %s to %s.",
						   layout->name, lo, hi)));
	}
}

void
shid_check_id(const ShidLayout *layout, int64 id)
{
	int			bits = shid_usable_time_bits(layout) +
		layout->shard_bits + layout->seq_bits;
	int64		max_id = (bits >= 63) ? PG_INT64_MAX :
		(INT64CONST(1) << bits) - 1;

	if (id < 0 || id > max_id)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("sharded id %lld is out of range", (long long) id),
				 errdetail("Sharded ids of layout \"%s\" are between 0 and %lld.",
						   layout->name, (long long) max_id)));
}

/*
 * Build an id.  The caller has checked the shard and the time; the sequence
 * value contributes its low seq_bits bits.
 */
int64
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

/* Split an id into its fields.  The caller has checked the id. */
void
shid_unpack(const ShidLayout *layout, int64 id, ShidFields *fields)
{
	uint64		u = (uint64) id;
	uint64		seq_mask = (UINT64CONST(1) << layout->seq_bits) - 1;
	uint64		shard_mask = (UINT64CONST(1) << layout->shard_bits) - 1;

	fields->seq = (int32) (u & seq_mask);
	fields->shard = (int32) ((u >> layout->seq_bits) & shard_mask);
	fields->unix_ms = layout->epoch_ms +
		(int64) (u >> (layout->shard_bits + layout->seq_bits));
}

/* Floor a timestamptz to whole Unix milliseconds.  It must be finite. */
int64
shid_timestamptz_to_unix_ms(TimestampTz ts)
{
	int64		ms = ts / 1000;

	if (ts % 1000 < 0)
		ms--;
	return ms + SHID_UNIX_MS_AT_PG_EPOCH;
}

TimestampTz
shid_unix_ms_to_timestamptz(int64 unix_ms)
{
	return (TimestampTz) ((unix_ms - SHID_UNIX_MS_AT_PG_EPOCH) * 1000);
}
