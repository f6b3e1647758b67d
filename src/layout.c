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
 * IMMUTABLE.  Other layouts (see shid_layouts) move the field borders and
 * the epoch; the code is the same for all of them.  A sequence value enters
 * the id as its low seq_bits bits, which for a non-negative value is exactly
 * "value % 1024".
 *
 *-------------------------------------------------------------------------
 */
#include "compat.h"

#include "layout.h"
#include "mb/pg_wchar.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

/*
 * One built-in layout, with its last usable Unix ms worked out.  The array
 * in the sequence field's width has a negative length, and so stops the
 * build, for a layout that does not fit: a sequence field of 1 to
 * SHID_MAX_SEQ_BITS bits (the generator's slot keeps a bitmap of that many
 * bits), a shard field of 1 to 30 bits, and at most 64 bits in all.
 */
#define SHID_LAYOUT(name, epoch_ms, time_bits, shard_bits, seq_bits) \
	{(name), INT64CONST(epoch_ms), (time_bits), (shard_bits), \
	 (seq_bits) + 0 * (int) sizeof(char[((seq_bits) >= 1 && \
										 (seq_bits) <= SHID_MAX_SEQ_BITS && \
										 (shard_bits) >= 1 && (shard_bits) <= 30 && \
										 (time_bits) + (shard_bits) + (seq_bits) <= 64) ? 1 : -1]), \
	 INT64CONST(epoch_ms) + (INT64CONST(1) << Min((time_bits), 63 - (shard_bits) - (seq_bits))) - 1}

/*
 * The built-in layouts.  An entry is never changed once released: stored
 * ids, column defaults and IMMUTABLE decoders name layouts by these names.
 * New layouts are only ever appended.
 */
static const ShidLayout shid_layouts[] = {
	/* Instagram's, epoch 2011-08-24 21:07:01.721 UTC: the default. */
	SHID_LAYOUT("instagram", 1314220021721, 41, 13, 10),
	/* Instagram's bits, epoch 2011-01-01 01:00:00 UTC. */
	SHID_LAYOUT("instagram_2011_01", 1293843600000, 41, 13, 10),
	/* Instagram's bits, epoch 2025-01-01 00:00:00 UTC: positive until 2059. */
	SHID_LAYOUT("instagram_2025", 1735689600000, 41, 13, 10),
	/* Twitter Snowflake: 10 worker bits, 12 sequence bits. */
	SHID_LAYOUT("snowflake", 1288834974657, 41, 10, 12),

	/*
	 * 58.com: 39 ms bits from 2016-01-01 UTC, 13 bits of data centre,
	 * machine and business line, 7 sequence bits.
	 */
	SHID_LAYOUT("58com", 1451606400000, 39, 13, 7),
};

#define SHID_NUM_LAYOUTS lengthof(shid_layouts)

const ShidLayout *
shid_default_layout(void)
{
	return &shid_layouts[0];
}

int
shid_num_layouts(void)
{
	return SHID_NUM_LAYOUTS;
}

const ShidLayout *
shid_layout_at(int i)
{
	Assert(i >= 0 && i < (int) SHID_NUM_LAYOUTS);
	return &shid_layouts[i];
}

/* The layout called name; an error names the valid ones otherwise. */
const ShidLayout *
shid_layout_by_name(const char *name)
{
	StringInfoData names;

	for (int i = 0; i < (int) SHID_NUM_LAYOUTS; i++)
	{
		if (strcmp(shid_layouts[i].name, name) == 0)
			return &shid_layouts[i];
	}

	initStringInfo(&names);
	for (int i = 0; i < (int) SHID_NUM_LAYOUTS; i++)
		appendStringInfo(&names, "%s%s", i > 0 ? ", " : "", shid_layouts[i].name);
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown sharded id layout \"%s\"", shid_bounded(name, strlen(name))),
			 errhint("Valid layouts are: %s.", names.data)));
	return NULL;				/* keep compiler quiet */
}

/*
 * A caller's text for an error message: at most SHID_MAX_QUOTED bytes of
 * it, cut at a character boundary, with "..." where it was cut, so that a
 * huge argument does not make a huge error.
 */
char *
shid_bounded(const char *text, int len)
{
	if (len <= SHID_MAX_QUOTED)
		return pnstrdup(text, len);
	return psprintf("%.*s...", pg_mbcliplen(text, len, SHID_MAX_QUOTED), text);
}

/* The layout whose key (shid_layout_key) is key; keys are unique. */
const ShidLayout *
shid_layout_by_key(uint64 key)
{
	for (int i = 0; i < (int) SHID_NUM_LAYOUTS; i++)
	{
		if (shid_layout_key(&shid_layouts[i]) == key)
			return &shid_layouts[i];
	}
	elog(ERROR, "no sharded id layout has key %llu", (unsigned long long) key);
	return NULL;				/* keep compiler quiet */
}

/*
 * The layout named by argument argno of a SQL-callable function, or the
 * default layout when the function was called without it.
 */
const ShidLayout *
shid_layout_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_NARGS() <= argno)
		return shid_default_layout();
	return shid_layout_by_name(text_to_cstring(PG_GETARG_TEXT_PP(argno)));
}

/* The error of a shard the layout does not have. */
void
shid_shard_out_of_range(const ShidLayout *layout, int64 shard)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("shard id %lld is out of range", (long long) shard),
			 errdetail("Shard ids must be between 0 and %lld.",
					   (long long) shid_max_shard(layout))));
}

/* The error of a time outside the layout's time field. */
void
shid_time_out_of_range(const ShidLayout *layout)
{
	char	   *lo;
	char	   *hi;

	/* timestamptz_to_str returns a static buffer: copy each result. */
	lo = pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(layout->epoch_ms)));
	hi = pstrdup(timestamptz_to_str(shid_unix_ms_to_timestamptz(layout->max_unix_ms)));
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("timestamp out of range for sharded ids"),
			 errdetail("Sharded ids of layout \"%s\" hold times from %s to %s.",
					   layout->name, lo, hi)));
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
