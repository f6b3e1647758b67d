/*-------------------------------------------------------------------------
 *
 * src/citus_conn.h
 *	  Connections between the nodes of a Citus cluster (citus_conn.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_CITUS_CONN_H
#define SHARDED_ID_CITUS_CONN_H

#include "postgres.h"

#include "lib/stringinfo.h"
#include "libpq-fe.h"

extern void shid_conninfo_add(StringInfo buf, const char *keyword, const char *value);
extern void shid_node_conninfo(StringInfo buf, const char *host, int port);
extern Oid	shid_extension_owner(void);
extern PGconn *shid_remote_connect(const char *conninfo, int64 deadline_us);
extern PGresult *shid_remote_exec(PGconn *conn, const char *sql, int n, const char *const *params,
								  int64 deadline_us, bool *timed_out);

#endif							/* SHARDED_ID_CITUS_CONN_H */
