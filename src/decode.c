/*-------------------------------------------------------------------------
 *
 * src/decode.c
 *	  SQL-callable decoders and the pure encoder of sharded ids.
 *
 *	 63 62                                    23 22          10 9          0
 *	+--+----------------------------------------+--------------+------------+
 *	|0 |   milliseconds since the epoch (41)    |  shard (13)  |  seq (10)  |
 *	+--+----------------------------------------+--------------+------------+
 *
 * None of these functions reads the clock or shared memory: each result
 * depends on the arguments alone, so all are IMMUTABLE and PARALLEL SAFE,
 * and can be used in index expressions and partition bounds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "layout.h"
#include "port/pg_bitutils.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
#include "utils/timestamp.h"

/* Argument argno as Unix ms, checked against the layout's time field. */
static int64
shid_arg_unix_ms(FunctionCallInfo fcinfo, int argno, const ShidLayout *layout)
{
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(argno);
	int64		unix_ms;

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for sharded ids"),
				 errdetail("Infinite timestamps cannot be encoded.")));
	unix_ms = shid_timestamptz_to_unix_ms(ts);
	shid_check_unix_ms(layout, unix_ms);
	return unix_ms;
}

/* Argument argno as an id of the layout, checked. */
static int64
shid_arg_id(FunctionCallInfo fcinfo, int argno, const ShidLayout *layout)
{
	int64		id = PG_GETARG_INT64(argno);

	shid_check_id(layout, id);
	return id;
}

/*
 * decode(id bigint [, layout text], OUT created_at timestamptz,
 *		  OUT shard_id integer, OUT seq_id integer) RETURNS record
 *
 * All three fields of an id, in the default layout or the one named.
 */
SHID_FUNCTION_INFO(shid_decode);
Datum
shid_decode(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	int64		id = shid_arg_id(fcinfo, 0, layout);
	TupleDesc	tupdesc;
	ShidFields	fields;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	shid_unpack(layout, id, &fields);
	values[0] = TimestampTzGetDatum(shid_unix_ms_to_timestamptz(fields.unix_ms));
	values[1] = Int32GetDatum(fields.shard);
	values[2] = Int32GetDatum(fields.seq);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * created_at(id bigint [, layout text]) RETURNS timestamptz
 *
 * When the id was minted, to the millisecond.
 */
SHID_FUNCTION_INFO(shid_created_at);
Datum
shid_created_at(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	ShidFields	fields;

	shid_unpack(layout, shid_arg_id(fcinfo, 0, layout), &fields);
	PG_RETURN_TIMESTAMPTZ(shid_unix_ms_to_timestamptz(fields.unix_ms));
}

/*
 * shard_id(id bigint [, layout text]) RETURNS integer
 *
 * The logical shard that owns the id.
 */
SHID_FUNCTION_INFO(shid_shard_id);
Datum
shid_shard_id(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	ShidFields	fields;

	shid_unpack(layout, shid_arg_id(fcinfo, 0, layout), &fields);
	PG_RETURN_INT32(fields.shard);
}

/*
 * seq_id(id bigint [, layout text]) RETURNS integer
 *
 * The sequence field of the id.
 */
SHID_FUNCTION_INFO(shid_seq_id);
Datum
shid_seq_id(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	ShidFields	fields;

	shid_unpack(layout, shid_arg_id(fcinfo, 0, layout), &fields);
	PG_RETURN_INT32(fields.seq);
}

/*
 * stripe_id(id bigint, stripes integer [, layout text]) RETURNS integer
 *
 * The stripe of an id minted with sharded_id.stripes = stripes: the top
 * log2(stripes) bits of its sequence field, which name the server that
 * minted it.
 */
SHID_FUNCTION_INFO(shid_stripe_id);
Datum
shid_stripe_id(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 2);
	int64		id = shid_arg_id(fcinfo, 0, layout);
	int32		stripes = PG_GETARG_INT32(1);
	int			max_stripes = Min(SHID_MAX_STRIPES, 1 << (layout->seq_bits - 1));
	ShidFields	fields;

	if (stripes < 1 || stripes > max_stripes || (stripes & (stripes - 1)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("stripe count %d is out of range", stripes),
				 errdetail("Stripe counts of layout \"%s\" are powers of two from 1 to %d.",
						   layout->name, max_stripes)));
	shid_unpack(layout, id, &fields);
	PG_RETURN_INT32(fields.seq >> (layout->seq_bits - pg_leftmost_one_pos32((uint32) stripes)));
}

/*
 * encode(created_at timestamptz, shard_id integer, seq_id bigint
 *		  [, layout text]) RETURNS bigint
 *
 * The id with these fields: the time floored to the millisecond.  A shard
 * or a sequence field outside the layout's range is an error (22003), not
 * masked.  It mints nothing: the result is not reserved against next_id.
 */
SHID_FUNCTION_INFO(shid_encode);
Datum
shid_encode(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 3);
	int64		unix_ms = shid_arg_unix_ms(fcinfo, 0, layout);
	int32		shard = PG_GETARG_INT32(1);
	int64		seq = PG_GETARG_INT64(2);

	shid_check_shard(layout, shard);
	if (seq < 0 || seq >= shid_seq_capacity(layout))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("sequence field %lld is out of range", (long long) seq),
				 errdetail("Sequence fields of layout \"%s\" are between 0 and %lld.",
						   layout->name, (long long) shid_seq_capacity(layout) - 1),
				 errhint("For a sequence value, as the seed formula takes it, pass nextval %% %lld.",
						 (long long) shid_seq_capacity(layout))));
	PG_RETURN_INT64(shid_pack(layout, unix_ms, shard, seq));
}

/*
 * min_id_at(ts timestamptz [, layout text]) RETURNS bigint
 *
 * The lowest id any shard can have at the millisecond of ts, so that
 * "id >= min_id_at(ts)" selects the ids minted at ts or later.
 */
SHID_FUNCTION_INFO(shid_min_id_at);
Datum
shid_min_id_at(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	int64		unix_ms = shid_arg_unix_ms(fcinfo, 0, layout);

	PG_RETURN_INT64(shid_pack(layout, unix_ms, 0, 0));
}

/*
 * max_id_at(ts timestamptz [, layout text]) RETURNS bigint
 *
 * The highest id any shard can have at the millisecond of ts, so that
 * "id <= max_id_at(ts)" selects the ids minted at ts or earlier.
 */
SHID_FUNCTION_INFO(shid_max_id_at);
Datum
shid_max_id_at(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	int64		unix_ms = shid_arg_unix_ms(fcinfo, 0, layout);

	PG_RETURN_INT64(shid_pack(layout, unix_ms, shid_max_shard(layout),
							  shid_seq_capacity(layout) - 1));
}

/*
 * layouts(OUT name text, OUT epoch timestamptz, OUT time_bits integer,
 *		   OUT shard_bits integer, OUT seq_bits integer, OUT max_shard integer,
 *		   OUT ids_per_ms integer, OUT last_time timestamptz) RETURNS SETOF record
 *
 * The built-in layouts, and the last instant each can hold before its ids
 * would turn negative.
 */
SHID_FUNCTION_INFO(shid_layouts);
Datum
shid_layouts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);

	for (int i = 0; i < shid_num_layouts(); i++)
	{
		const ShidLayout *layout = shid_layout_at(i);
		Datum		values[8];
		bool		nulls[8] = {0};

		values[0] = CStringGetTextDatum(layout->name);
		values[1] = TimestampTzGetDatum(shid_unix_ms_to_timestamptz(layout->epoch_ms));
		values[2] = Int32GetDatum(layout->time_bits);
		values[3] = Int32GetDatum(layout->shard_bits);
		values[4] = Int32GetDatum(layout->seq_bits);
		values[5] = Int32GetDatum((int32) shid_max_shard(layout));
		values[6] = Int32GetDatum((int32) shid_seq_capacity(layout));
		values[7] = TimestampTzGetDatum(shid_unix_ms_to_timestamptz(layout->max_unix_ms));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * check_shard(shard_id integer, layout text) RETURNS integer
 *
 * The shard id, if the layout has such a shard; the same errors as next_id
 * otherwise (an unknown layout, a shard out of range).  The SQL functions
 * check shards and layout names through this, so that each error has one
 * message and one hint.
 */
SHID_FUNCTION_INFO(shid_check_shard_sql);
Datum
shid_check_shard_sql(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_layout_arg(fcinfo, 1);
	int32		shard = PG_GETARG_INT32(0);

	shid_check_shard(layout, shard);
	PG_RETURN_INT32(shard);
}
