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

/* The role that the extension creates and grants the provisioning API. */
#define SHID_PROVISIONER_ROLE "sharded_id_provisioner"

extern void shid_require_shard_owner(int32 shard, const char *layout, const char *action);
extern void shid_require_take_back(int32 shard, const char *layout);
extern void shid_require_state_here(int32 shard, const char *layout, const char *action);
extern void shid_refuse_state_elsewhere(const ShidShardState *state, const char *action);
extern void shid_require_superuser_internal(const char *function);

#endif							/* SHARDED_ID_PRIVS_H */
