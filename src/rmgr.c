/*-------------------------------------------------------------------------
 *
 * src/rmgr.c
 *	  The dispatch of the custom WAL resource manager "sharded_id": its
 *	  registration, and which file replays and describes each record.
 *
 * Records (rmgr.h): CEILING, RESET and 1.4's FLOOR belong to the durable
 * clock ceiling (ceiling.c); STATES, and 1.6's SHARD, to the states of
 * shards (floors.c), after whose replay each shard's generator slot, if
 * there is one, follows its replayed state (slots.c).  The files that write records
 * (shid_wal_log, ceiling.c) know nothing of the dispatch, and the files
 * that replay them call nothing here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog_internal.h"
#include "access/xlogreader.h"
#include "ceiling.h"
#include "floors.h"
#include "rmgr.h"
#include "slots.h"

static void shid_rmgr_redo(XLogReaderState *record);
static void shid_rmgr_desc(StringInfo buf, XLogReaderState *record);
static const char *shid_rmgr_identify(uint8 info);

static RmgrData shid_rmgr = {
	.rm_name = "sharded_id",
	.rm_redo = shid_rmgr_redo,
	.rm_desc = shid_rmgr_desc,
	.rm_identify = shid_rmgr_identify,
};

/*
 * Register the "sharded_id" resource manager, from _PG_init, under
 * sharded_id.wal_rmgr_id (0: none).  Registering an id that another loaded
 * extension holds fails: PostgreSQL never lets two share one.
 */
void
shid_rmgr_register(void)
{
	if (shid_wal_rmgr_id != 0)
		RegisterCustomRmgr((RmgrId) shid_wal_rmgr_id, &shid_rmgr);
}

/*
 * Replay a record: on a standby, or in crash recovery.  A shard's slot
 * follows its replayed state once floors.c has released its lock.
 */
static void
shid_rmgr_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_SHID_SHARD || info == XLOG_SHID_STATES)
	{
		ShidShardState *states;
		int			n = shid_floors_redo(record, &states);

		for (int i = 0; i < n; i++)
			shid_slot_follow_state(&states[i]);
		pfree(states);
	}
	else
		shid_ceiling_redo(record);
}

/* What pg_walinspect shows of a record. */
static void
shid_rmgr_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_SHID_SHARD || info == XLOG_SHID_STATES)
		shid_floors_desc(buf, record);
	else
		shid_ceiling_desc(buf, record);
}

static const char *
shid_rmgr_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_SHID_CEILING:
			return "CEILING";
		case XLOG_SHID_RESET:
			return "RESET";
		case XLOG_SHID_FLOOR:
			return "FLOOR";
		case XLOG_SHID_SHARD:
			return "SHARD";
		case XLOG_SHID_STATES:
			return "STATES";
	}
	return NULL;
}
