/*-------------------------------------------------------------------------
 *
 * src/compat.h
 *	  Every PG_VERSION_NUM guard of sharded_id, in one place.
 *
 * sharded_id is tested on PostgreSQL 15, 17 and 18, and builds for 16 from
 * the same guards.  Call sites use the names this header defines, which it
 * maps onto what each server version provides; it redefines nothing of
 * PostgreSQL's.
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
 * A function that never returns: PostgreSQL 18 spells it with the prefix
 * pg_noreturn, older versions with a suffix; C11's _Noreturn is a prefix
 * that every supported compiler knows.
 */
#if PG_VERSION_NUM >= 180000
#define SHID_NORETURN pg_noreturn
#else
#define SHID_NORETURN _Noreturn
#endif

/*
 * A variable of the module that another of its files reads on next_id's
 * path: declared hidden, the compiler addresses it directly instead of
 * through the global offset table, as it did when the variable was static
 * in the file that reads it.
 */
#if defined(__GNUC__) || defined(__clang__)
#define SHID_INTERNAL __attribute__((visibility("hidden")))
#else
#define SHID_INTERNAL
#endif

/*
 * Declare a SQL-callable function.  PostgreSQL 16 and later build extensions
 * with -fvisibility=hidden and their PG_FUNCTION_INFO_V1 exports the
 * function.  On 15 the Makefile builds with -fvisibility=hidden too, so that
 * no helper of ours binds to another library's symbol, but 15's
 * PG_FUNCTION_INFO_V1 exports only the info function: the function itself
 * is declared exported first, which later declarations keep.
 */
#if PG_VERSION_NUM < 160000
#define SHID_FUNCTION_INFO(funcname) \
extern PGDLLEXPORT Datum funcname(PG_FUNCTION_ARGS); \
PG_FUNCTION_INFO_V1(funcname)
#else
#define SHID_FUNCTION_INFO(funcname) PG_FUNCTION_INFO_V1(funcname)
#endif

/*
 * May the role execute the function?  pg_proc_aclcheck up to PostgreSQL 15,
 * object_aclcheck from 16 on.
 */
#if PG_VERSION_NUM < 160000
#define shid_proc_aclcheck(proc, role) pg_proc_aclcheck((proc), (role), ACL_EXECUTE)
#else
#define shid_proc_aclcheck(proc, role) object_aclcheck(ProcedureRelationId, (proc), (role), ACL_EXECUTE)
#endif

/*
 * The oldest transaction whose status the commit log still holds: in
 * ShmemVariableCache up to PostgreSQL 16, in TransamVariables from 17 on.
 * Read under XactTruncationLock.
 */
#include "access/transam.h"
#if PG_VERSION_NUM >= 170000
#define SHID_OLDEST_CLOG_XID() (TransamVariables->oldestClogXid)
#else
#define SHID_OLDEST_CLOG_XID() (ShmemVariableCache->oldestClogXid)
#endif

/*
 * ExecutorRun lost its execute_once argument in PostgreSQL 18.
 */
#if PG_VERSION_NUM >= 180000
#define SHID_EXECUTOR_RUN(qd, dir, count) ExecutorRun((qd), (dir), (count))
#else
#define SHID_EXECUTOR_RUN(qd, dir, count) ExecutorRun((qd), (dir), (count), true)
#endif

/*
 * The backend's local transaction id: in PGPROC's lxid up to PostgreSQL 16,
 * in its vxid from 17 on.
 */
#include "storage/proc.h"
#if PG_VERSION_NUM >= 170000
#define SHID_MY_LXID() (MyProc->vxid.lxid)
#else
#define SHID_MY_LXID() (MyProc->lxid)
#endif

/*
 * Injection points (core's INJECTION_POINT(), 17 on) at every durable step
 * of the ceiling and the shards' states, for the crash tests: compiled in
 * only where the server was built with --enable-injection-points, and then
 * a lookup in core's table of attached points, never on next_id's common
 * path.  18 gave the macro an argument.
 */
#if defined(USE_INJECTION_POINTS) && PG_VERSION_NUM >= 170000
#include "utils/injection_point.h"
#if PG_VERSION_NUM >= 180000
#define SHID_INJECTION_POINT(name) INJECTION_POINT(name, NULL)
#else
#define SHID_INJECTION_POINT(name) INJECTION_POINT(name)
#endif
#else
#define SHID_INJECTION_POINT(name) ((void) (name))
#endif

#endif							/* SHARDED_ID_COMPAT_H */
