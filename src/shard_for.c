/*-------------------------------------------------------------------------
 *
 * src/shard_for.c
 *	  shard_for(): which logical shard owns an application key.
 *
 * Instagram maps a user to a logical shard with user_id % shard_count, and
 * every piece of the system (application, router, data nodes) must agree on
 * that mapping.  These functions are IMMUTABLE and use only arithmetic
 * anyone can reproduce:
 *
 *	 integer keys: the floored remainder, always in [0, shard_count):
 *				   shard_for(5001, 2000) = 1001, shard_for(-1, 2000) = 1999
 *				   (Python's key % n; in C or SQL, ((key % n) + n) % n)
 *	 text keys:    64-bit FNV-1a of the key's bytes, as an unsigned number,
 *				   modulo shard_count
 *
 * They take no lock and read no state: the router's locks are in route.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "fmgr.h"
#include "utils/builtins.h"

#define SHID_FNV64_OFFSET	UINT64CONST(0xcbf29ce484222325)
#define SHID_FNV64_PRIME	UINT64CONST(0x100000001b3)

static void
shid_check_shard_count(int32 shard_count)
{
	if (shard_count <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("shard count %d is out of range", shard_count),
				 errdetail("The shard count must be at least 1.")));
}

/*
 * shard_for(key bigint, shard_count integer) RETURNS integer
 *
 * The logical shard of an integer key: key modulo shard_count, floored so
 * that negative keys land in [0, shard_count) too.
 */
SHID_FUNCTION_INFO(shid_shard_for_int8);
Datum
shid_shard_for_int8(PG_FUNCTION_ARGS)
{
	int64		key = PG_GETARG_INT64(0);
	int32		shard_count = PG_GETARG_INT32(1);
	int64		r;

	shid_check_shard_count(shard_count);
	r = key % shard_count;
	if (r < 0)
		r += shard_count;
	PG_RETURN_INT32((int32) r);
}

/*
 * shard_for(key text, shard_count integer) RETURNS integer
 *
 * The logical shard of a text key: the 64-bit FNV-1a hash of its bytes
 * (in the database encoding), modulo shard_count.
 */
SHID_FUNCTION_INFO(shid_shard_for_text);
Datum
shid_shard_for_text(PG_FUNCTION_ARGS)
{
	text	   *key = PG_GETARG_TEXT_PP(0);
	int32		shard_count = PG_GETARG_INT32(1);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(key);
	int			len = VARSIZE_ANY_EXHDR(key);
	uint64		h = SHID_FNV64_OFFSET;

	shid_check_shard_count(shard_count);
	for (int i = 0; i < len; i++)
	{
		h ^= p[i];
		h *= SHID_FNV64_PRIME;
	}
	PG_RETURN_INT32((int32) (h % (uint64) shard_count));
}
