/*-------------------------------------------------------------------------
 *
 * src/compat.h
 *	  Every PG_VERSION_NUM guard of sharded_id, in one place.
 *
 * sharded_id is tested on PostgreSQL 15 and 18, and builds for 16 and 17
 * from the same guards.  Call sites use the names on the left; this header
 * maps them onto what each server version provides.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_COMPAT_H
#define SHARDED_ID_COMPAT_H

#include "postgres.h"

#include "fmgr.h"

#if PG_VERSION_NUM < 150000
#error "sharded_id requires PostgreSQL 15 or later"
#endif

/*
 * PostgreSQL 16 moved the varlena macros (VARDATA_ANY and friends) out of
 * postgres.h into varatt.h.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * PostgreSQL 18 marks functions that never return with the prefix
 * pg_noreturn, in place of the suffix pg_attribute_noreturn().
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn _Noreturn
#endif

/*
 * PostgreSQL 16 and later build extensions with -fvisibility=hidden and
 * export only what PGDLLEXPORT marks.  The Makefile does the same on 15,
 * defining PGDLLEXPORT on the command line; 15's PG_FUNCTION_INFO_V1 marks
 * only the info function, so here it marks the function as 16's does.
 */
#if PG_VERSION_NUM < 160000
#undef PG_FUNCTION_INFO_V1
#define PG_FUNCTION_INFO_V1(funcname) \
extern PGDLLEXPORT Datum funcname(PG_FUNCTION_ARGS); \
extern PGDLLEXPORT const Pg_finfo_record * CppConcat(pg_finfo_,funcname)(void); \
const Pg_finfo_record * \
CppConcat(pg_finfo_,funcname) (void) \
{ \
	static const Pg_finfo_record my_finfo = { 1 }; \
	return &my_finfo; \
} \
extern int no_such_variable
#endif

#endif							/* SHARDED_ID_COMPAT_H */
