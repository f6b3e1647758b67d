/*-------------------------------------------------------------------------
 *
 * src/owner_read.h
 *	  Run a stretch of code as a relation's owner inside a
 *	  security-restricted operation, with search_path pinned, as core's
 *	  maintenance commands do since CVE-2022-1552 (owner_read.c).
 *
 * shid_pin_search_path, then shid_become_owner, then shid_end_owner.  An
 * error in between is undone by the (sub)transaction's abort, which gives
 * back the caller's identity, security context and settings.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_OWNER_READ_H
#define SHARDED_ID_OWNER_READ_H

#include "postgres.h"

/* The identity and settings of the caller, while code runs as an owner. */
typedef struct ShidOwnerContext
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
} ShidOwnerContext;

extern void shid_pin_search_path(ShidOwnerContext *ctx);
extern void shid_become_owner(Oid owner, ShidOwnerContext *ctx);
extern void shid_end_owner(ShidOwnerContext *ctx);

#endif							/* SHARDED_ID_OWNER_READ_H */
