/*-------------------------------------------------------------------------
 *
 * src/shortcode.c
 *	  Instagram-style shortcodes: an id written in URL-safe base 64.
 *
 * The digits, from 0 to 63, are A-Z a-z 0-9 - _.  The most significant
 * digit comes first and there is no padding, so 0 is "A", 63 is "_", 64 is
 * "BA", and a default-layout id of today takes 11 characters.  JavaScript's
 * Number loses integers above 2^53; a shortcode (like id::text) carries an
 * id through JSON and URLs intact.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "compat.h"
#include "fmgr.h"
#include "layout.h"
#include "utils/builtins.h"

static const char shid_digits[] =
"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Value of a shortcode digit, or -1. */
static int
shid_digit_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/*
 * to_shortcode(id bigint) RETURNS text
 *
 * The id in URL-safe base 64.
 */
SHID_FUNCTION_INFO(shid_to_shortcode);
Datum
shid_to_shortcode(PG_FUNCTION_ARGS)
{
	int64		id = PG_GETARG_INT64(0);
	uint64		v;
	char		buf[12];		/* 63 bits take at most 11 digits */
	int			pos = sizeof(buf);

	if (id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("cannot make a shortcode of negative number %lld",
						(long long) id)));

	v = (uint64) id;
	do
	{
		buf[--pos] = shid_digits[v & 63];
		v >>= 6;
	} while (v != 0);

	PG_RETURN_TEXT_P(cstring_to_text_with_len(buf + pos, sizeof(buf) - pos));
}

/*
 * from_shortcode(code text) RETURNS bigint
 *
 * The id a shortcode stands for.
 */
SHID_FUNCTION_INFO(shid_from_shortcode);
Datum
shid_from_shortcode(PG_FUNCTION_ARGS)
{
	text	   *code = PG_GETARG_TEXT_PP(0);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(code);
	int			len = VARSIZE_ANY_EXHDR(code);
	uint64		v = 0;

	if (len == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid shortcode \"\""),
				 errdetail("A shortcode has at least one digit.")));

	/* "A" is the digit 0: only the code of 0 itself may start with it. */
	if (len > 1 && p[0] == 'A')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid shortcode \"%s\"", shid_bounded((const char *) p, len)),
				 errdetail("A shortcode does not start with \"A\", the digit zero, unless it is \"A\" itself.")));

	for (int i = 0; i < len; i++)
	{
		int			d = shid_digit_value(p[i]);

		if (d < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("invalid shortcode \"%s\"", shid_bounded((const char *) p, len)),
					 errdetail("Shortcode digits are A-Z, a-z, 0-9, \"-\" and \"_\".")));
		if (v > (uint64) (PG_INT64_MAX >> 6))
			ereport(ERROR,
					(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
					 errmsg("shortcode \"%s\" is out of range for type bigint",
							shid_bounded((const char *) p, len))));
		v = (v << 6) | (uint64) d;
	}
	PG_RETURN_INT64((int64) v);
}
