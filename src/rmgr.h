/*-------------------------------------------------------------------------
 *
 * src/rmgr.h
 *	  The custom WAL resource manager "sharded_id": its id and its record
 *	  types (rmgr.c registers it and dispatches its records).
 *
 * The ids and the layouts of the records are read back from WAL written by
 * earlier versions: never change them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SHARDED_ID_RMGR_H
#define SHARDED_ID_RMGR_H

/*
 * The default id of the custom WAL resource manager: one that the list of
 * custom resource managers on the PostgreSQL wiki reserves for no other
 * extension (128 is RM_EXPERIMENTAL_ID, for extensions in development, and
 * what sharded_id 1.3 used).
 */
#define SHID_DEFAULT_RMGR_ID 203

/* WAL record types of the "sharded_id" resource manager. */
#define XLOG_SHID_CEILING	0x00	/* the ceiling was raised to ...
									 * (ceiling.c) */
#define XLOG_SHID_RESET		0x10	/* ... or set by reset_ceiling to ... */
#define XLOG_SHID_FLOOR		0x20	/* 1.4: the server-wide floor was raised */
#define XLOG_SHID_SHARD		0x30	/* 1.6: a shard's state (floors.c) became ... */
#define XLOG_SHID_STATES	0x40	/* the states (floors.c) synced became ... */

extern void shid_rmgr_register(void);

#endif							/* SHARDED_ID_RMGR_H */
