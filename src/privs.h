/*-------------------------------------------------------------------------
 *
 * src/privs.h
 *	  Who may change a shard: superusers, and members of the provisioner
 *	  role for the shards whose schema they own (privs.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_PRIVS_H
#define SHARDED_ID_PRIVS_H

#include "postgres.h"

#include "floors.h"
#include "miscadmin.h"

/* The role that the extension creates and grants the provisioning API. */
#define SHID_PROVISIONER_ROLE "sharded_id_provisioner"

extern void shid_require_shard_owner(int32 shard, const char *layout, const char *action);
extern void shid_require_take_back(int32 shard, const char *layout);
extern void shid_require_state_here(int32 shard, const char *layout, const char *action);
extern bool shid_may_claim(void);
extern void shid_refuse_state_elsewhere(const ShidShardState *state, const char *action);

/*
 * For internal functions that only superusers call (the moves, the router's
 * administration): refuse (42501) anyone else, whatever the grants.  The C
 * ones call it at their top, the SQL ones through _superuser_only
 * (privs.c).  Inline, so that the files that call it (owner_read.c among
 * them, which privs.c calls) do not call back into privs.c.
 */
static inline void
shid_require_superuser_internal(const char *function)
{
	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", function),
				 errdetail("Only superusers call this internal function of sharded_id.")));
}

#endif							/* SHARDED_ID_PRIVS_H */
