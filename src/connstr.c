/*-------------------------------------------------------------------------
 *
 * src/connstr.c
 *	  Connection strings of data nodes, read by libpq's own rules.
 *
 * A node's connection string (sharded_id.nodes.connstr) feeds two engines:
 * PL/Proxy hands it to libpq as it is, and apply_shard_map turns it into
 * the options of the node's postgres_fdw server.  The second must read it
 * exactly as libpq does, keyword/value strings and postgresql:// URIs
 * alike, so it asks libpq (PQconninfoParse).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "compat.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "libpq-fe.h"
#include "utils/array.h"
#include "utils/builtins.h"

/* Options a postgres_fdw server does not take, or takes from elsewhere. */
static bool
shid_server_option(const PQconninfoOption *opt)
{
	/* The user and every secret belong in a user mapping. */
	if (strcmp(opt->keyword, "user") == 0 || strchr(opt->dispchar, '*') != NULL)
		return false;
	/* Debug options, and those postgres_fdw sets itself. */
	if (strchr(opt->dispchar, 'D') != NULL ||
		strcmp(opt->keyword, "client_encoding") == 0 ||
		strcmp(opt->keyword, "fallback_application_name") == 0)
		return false;
	return true;
}

static int
shid_cmp_cstring(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * _connstr_options(connstr text) RETURNS text[]
 *
 * The options that a libpq connection string sets, keyword/value string or
 * URI, as 'keyword=value' sorted by keyword: the options of a postgres_fdw
 * server, so without the user and the secrets (password, sslpassword),
 * which belong in a user mapping.  An invalid string is an error (22023)
 * with libpq's own words.  Takes no lock.
 */
SHID_FUNCTION_INFO(shid_connstr_options);
Datum
shid_connstr_options(PG_FUNCTION_ARGS)
{
	char	   *connstr = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *errmsg_libpq = NULL;
	PQconninfoOption *opts;
	char	  **items;
	Datum	   *elems;
	int			n = 0;
	int			count = 0;

	opts = PQconninfoParse(connstr, &errmsg_libpq);
	if (opts == NULL)
	{
		char	   *detail = pstrdup(errmsg_libpq ? errmsg_libpq : "out of memory");

		if (errmsg_libpq)
			PQfreemem(errmsg_libpq);
		/* libpq ends its messages with a newline. */
		if (detail[0] != '\0' && detail[strlen(detail) - 1] == '\n')
			detail[strlen(detail) - 1] = '\0';
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid connection string"),
				 errdetail("libpq says: %s", detail)));
	}

	for (PQconninfoOption *opt = opts; opt->keyword != NULL; opt++)
		count++;
	items = palloc(Max(count, 1) * sizeof(char *));
	for (PQconninfoOption *opt = opts; opt->keyword != NULL; opt++)
	{
		if (opt->val != NULL && shid_server_option(opt))
			items[n++] = psprintf("%s=%s", opt->keyword, opt->val);
	}
	PQconninfoFree(opts);

	qsort(items, n, sizeof(char *), shid_cmp_cstring);
	elems = palloc(Max(n, 1) * sizeof(Datum));
	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(items[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * _connstr_public(connstr text, with_user boolean DEFAULT true) RETURNS text
 *
 * The same connection string, keyword/value string or URI, as a
 * keyword/value string without its secrets (password, sslpassword and any
 * other option libpq displays as '*'): what may be written into a
 * statement, a catalog or a log.  A password then comes from a password
 * file (passfile, ~/.pgpass) or a service file, or a user mapping.  Without
 * with_user the user is left out too, for a user mapping that names it
 * beside the password (PL/Proxy uses a mapping's options only for a
 * partition whose string names no user).  An invalid string is an error
 * (22023) without libpq's words, which may quote a piece of it.  Takes no
 * lock.
 */
SHID_FUNCTION_INFO(shid_connstr_public);
Datum
shid_connstr_public(PG_FUNCTION_ARGS)
{
	char	   *connstr = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		with_user = PG_NARGS() < 2 || PG_GETARG_BOOL(1);
	char	   *errmsg_libpq = NULL;
	PQconninfoOption *opts;
	StringInfoData buf;

	opts = PQconninfoParse(connstr, &errmsg_libpq);
	if (opts == NULL)
	{
		if (errmsg_libpq)
			PQfreemem(errmsg_libpq);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid connection string"),
				 errdetail("libpq cannot parse it; its words are left out, since they may quote a secret.")));
	}

	initStringInfo(&buf);
	for (PQconninfoOption *opt = opts; opt->keyword != NULL; opt++)
	{
		if (opt->val == NULL || strchr(opt->dispchar, '*') != NULL ||
			(!with_user && strcmp(opt->keyword, "user") == 0))
			continue;
		if (buf.len > 0)
			appendStringInfoChar(&buf, ' ');
		appendStringInfo(&buf, "%s=", opt->keyword);
		/* Quoted only when libpq needs it: empty, or with a space or quote. */
		if (opt->val[0] == '\0' || strpbrk(opt->val, " \t\n\r\f\v'\\") != NULL)
		{
			appendStringInfoChar(&buf, '\'');
			for (const char *c = opt->val; *c; c++)
			{
				if (*c == '\'' || *c == '\\')
					appendStringInfoChar(&buf, '\\');
				appendStringInfoChar(&buf, *c);
			}
			appendStringInfoChar(&buf, '\'');
		}
		else
			appendStringInfoString(&buf, opt->val);
	}
	PQconninfoFree(opts);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(buf.data, buf.len));
}

/*
 * _connstr_secrets(connstr text, with_user boolean) RETURNS text[]
 *
 * What _connstr_options and _connstr_public leave out of a connection
 * string: its secrets (password, sslpassword), and with with_user its user
 * too, as 'keyword=value' sorted by keyword: the options of a user
 * mapping.  An invalid string is an error (22023) without libpq's words.
 * Takes no lock.
 */
SHID_FUNCTION_INFO(shid_connstr_secrets);
Datum
shid_connstr_secrets(PG_FUNCTION_ARGS)
{
	char	   *connstr = text_to_cstring(PG_GETARG_TEXT_PP(0));
	bool		with_user = PG_GETARG_BOOL(1);
	char	   *errmsg_libpq = NULL;
	PQconninfoOption *opts;
	char	  **items;
	Datum	   *elems;
	int			n = 0;
	int			count = 0;

	opts = PQconninfoParse(connstr, &errmsg_libpq);
	if (opts == NULL)
	{
		if (errmsg_libpq)
			PQfreemem(errmsg_libpq);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid connection string"),
				 errdetail("libpq cannot parse it; its words are left out, since they may quote a secret.")));
	}

	for (PQconninfoOption *opt = opts; opt->keyword != NULL; opt++)
		count++;
	items = palloc(Max(count, 1) * sizeof(char *));
	for (PQconninfoOption *opt = opts; opt->keyword != NULL; opt++)
	{
		if (opt->val != NULL &&
			(strchr(opt->dispchar, '*') != NULL || (with_user && strcmp(opt->keyword, "user") == 0)))
			items[n++] = psprintf("%s=%s", opt->keyword, opt->val);
	}
	PQconninfoFree(opts);

	qsort(items, n, sizeof(char *), shid_cmp_cstring);
	elems = palloc(Max(n, 1) * sizeof(Datum));
	for (int i = 0; i < n; i++)
		elems[i] = CStringGetTextDatum(items[i]);
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}
