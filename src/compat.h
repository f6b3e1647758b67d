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
 * where PGDLLEXPORT is empty unless defined on the command line.
 */

#endif							/* SHARDED_ID_COMPAT_H */
