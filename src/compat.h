/*-------------------------------------------------------------------------
 *
 * src/compat.h
 *	  Every PG_VERSION_NUM guard of sharded_id, in one place.
 *
 * The code targets PostgreSQL 15 and builds against 13 through 18.  Call
 * sites use the names on the left; this header maps them onto what each
 * server version provides.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_COMPAT_H
#define SHARDED_ID_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 130000
#error "sharded_id requires PostgreSQL 13 or later"
#endif

/*
 * PostgreSQL 15 added shmem_request_hook; before it, shared memory and
 * LWLock tranches were requested straight from _PG_init.
 */
#if PG_VERSION_NUM >= 150000
#define SHID_HAVE_SHMEM_REQUEST_HOOK 1
#endif

/*
 * PostgreSQL 15 renamed EmitWarningsOnPlaceholders to MarkGUCPrefixReserved.
 */
#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/*
 * PostgreSQL 16 moved the varlena macros (VARDATA_ANY and friends) out of
 * postgres.h into varatt.h.
 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#endif							/* SHARDED_ID_COMPAT_H */
