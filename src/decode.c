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
#include "utils/timestamp.h"

static int64
shid_arg_id(FunctionCallInfo fcinfo, int argno, const ShidLayout *layout)
{
	int64		id = PG_GETARG_INT64(argno);

	shid_check_id(layout, id);
	return id;
}

/*
 * decode(id bigint, OUT created_at timestamptz, OUT shard_id integer,
 *		  OUT seq_id integer) RETURNS record
 *
 * All three fields of an id.
 */
PG_FUNCTION_INFO_V1(shid_decode);
Datum
shid_decode(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_default_layout();
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
 * created_at(id bigint) RETURNS timestamptz
 *
 * When the id was minted, to the millisecond.
 */
PG_FUNCTION_INFO_V1(shid_created_at);
Datum
shid_created_at(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_default_layout();
	ShidFields	fields;

	shid_unpack(layout, shid_arg_id(fcinfo, 0, layout), &fields);
	PG_RETURN_TIMESTAMPTZ(shid_unix_ms_to_timestamptz(fields.unix_ms));
}

/*
 * shard_id(id bigint) RETURNS integer
 *
 * The logical shard that owns the id.
 */
PG_FUNCTION_INFO_V1(shid_shard_id);
Datum
shid_shard_id(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_default_layout();
	ShidFields	fields;

	shid_unpack(layout, shid_arg_id(fcinfo, 0, layout), &fields);
	PG_RETURN_INT32(fields.shard);
}

/*
 * seq_id(id bigint) RETURNS integer
 *
 * The sequence field of the id.
 */
PG_FUNCTION_INFO_V1(shid_seq_id);
Datum
shid_seq_id(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_default_layout();
	ShidFields	fields;

	shid_unpack(layout, shid_arg_id(fcinfo, 0, layout), &fields);
	PG_RETURN_INT32(fields.seq);
}

/*
 * encode(created_at timestamptz, shard_id integer, seq_id bigint)
 *		RETURNS bigint
 *
 * The id with these fields: the time floored to the millisecond, the
 * sequence value reduced to its low bits (seq_id % 1024 when non-negative).
 * It mints nothing: the result is not reserved against next_id.
 */
PG_FUNCTION_INFO_V1(shid_encode);
Datum
shid_encode(PG_FUNCTION_ARGS)
{
	const ShidLayout *layout = shid_default_layout();
	TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
	int32		shard = PG_GETARG_INT32(1);
	int64		seq = PG_GETARG_INT64(2);
	int64		unix_ms;

	if (TIMESTAMP_NOT_FINITE(ts))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp out of range for sharded ids"),
				 errdetail("Infinite timestamps cannot be encoded.")));
	shid_check_shard(layout, shard);
	unix_ms = shid_timestamptz_to_unix_ms(ts);
	shid_check_unix_ms(layout, unix_ms);

	PG_RETURN_INT64(shid_pack(layout, unix_ms, shard, seq));
}
