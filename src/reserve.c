/*-------------------------------------------------------------------------
 *
 * src/reserve.c
 *	  Which callers of next_id may make a generator slot outside the
 *	  share that any role may take.
 *
 * The slot table (slots.c) has sharded_id.max_shards entries, shared
 * by every database of the server, and an entry, once made, stays until
 * the server stops.  next_id is PUBLIC, and a temporary sequence is all a
 * role needs to call it, so any role that can log in could make a slot
 * for every shard of every layout and leave none for the shards the
 * server really serves.  So next_id makes a slot from the whole table
 * only:
 *
 *	 - for a shard of this database's shard catalog (sharded_id.shards, in
 *	   the same layout): the application's shards, which create_shard
 *	   registers, and whose slot create_shard itself makes;
 *	 - for a superuser.
 *
 * Any other slot counts against sharded_id.max_free_slots (by default
 * half of max_shards); once those are made, such calls fail with 53400,
 * and the rest of the table stays for the catalog's shards.  Finding a
 * slot that exists costs the same as before: this runs only when a call
 * makes a new slot.
 *
 * The catalog is read directly, with the catalog snapshot, neither as the
 * caller (who may not be granted the table) nor through anything a role
 * other than the extension's owner could define.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "reserve.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

/*
 * Is the shard, in this layout, in the shard catalog of the current
 * database?  No catalog (no schema sharded_id, or no table shards of the
 * expected shape) says no.
 *
 * Locks: sharded_id.shards in AccessShareLock, until the transaction ends.
 */
bool
shid_catalog_has_shard(int32 shard, const ShidLayout *layout)
{
	Oid			nsp = get_namespace_oid("sharded_id", true);
	Oid			relid;
	Relation	rel;
	TupleDesc	desc;
	AttrNumber	shard_att;
	AttrNumber	layout_att;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	if (!OidIsValid(nsp))
		return false;
	relid = get_relname_relid("shards", nsp);
	if (!OidIsValid(relid))
		return false;
	rel = table_open(relid, AccessShareLock);
	desc = RelationGetDescr(rel);
	shard_att = get_attnum(relid, "shard_id");
	layout_att = get_attnum(relid, "layout");
	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		shard_att <= 0 || layout_att <= 0 ||
		TupleDescAttr(desc, shard_att - 1)->atttypid != INT4OID ||
		TupleDescAttr(desc, layout_att - 1)->atttypid != TEXTOID)
	{
		table_close(rel, AccessShareLock);
		return false;
	}
	/*
	 * A scan of the table, a few thousand rows at most, and only when a
	 * call makes a new slot.
	 */
	ScanKeyInit(&key, shard_att, BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(shard));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	while (!found && HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		value = heap_getattr(tuple, layout_att, desc, &isnull);

		if (!isnull)
		{
			char	   *name = TextDatumGetCString(value);

			found = strcmp(name, layout->name) == 0;
			pfree(name);
		}
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * May next_id make the slot of (layout, shard) from the whole slot table,
 * rather than from the share of sharded_id.max_free_slots?  Yes for a
 * superuser, and for a shard of this database's shard catalog.
 */
bool
shid_slot_reserved(int32 shard, const ShidLayout *layout)
{
	if (superuser())
		return true;
	return shid_catalog_has_shard(shard, layout);
}
