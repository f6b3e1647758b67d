/* src/sql/api/ids.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION sharded_id" to load this file. \quit

--
-- Minting ids.  This file opens the install script that make assembles
-- from src/sql/api/ (see the Makefile): ids, decoders, shards, node, router.
--

-- CREATE EXTENSION made the schema; everyone may look up the functions in
-- it.  next_id checks the caller's rights on the sequence, like nextval.
GRANT USAGE ON SCHEMA sharded_id TO PUBLIC;

CREATE FUNCTION sharded_id.next_id(shard_id integer, seq regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass) IS
'new id for the shard, its low bits from nextval(seq); never repeats within the cluster';

CREATE FUNCTION sharded_id.next_id(shard_id integer, seq regclass, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass, text) IS
'new id for the shard in the named layout, its low bits from nextval(seq); never repeats within the cluster';

CREATE FUNCTION sharded_id.next_ids(shard_id integer, seq regclass, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, regclass, integer) IS
'reserve n new ids for the shard in one call (at most 1000000), for loaders';

CREATE FUNCTION sharded_id.next_ids(shard_id integer, seq regclass, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, regclass, integer, text) IS
'reserve n new ids for the shard in the named layout in one call (at most 1000000), for loaders';

--
-- Counter mode: no sequence.  The sequence field counts up within each
-- millisecond in the order the shard's slot hands values out, so a shard's
-- ids strictly increase in the order they are minted.  Nothing else gates
-- minting, so EXECUTE is for the roles it is granted to, as USAGE on a
-- sequence is for the seed mode.  Forms that name a layout have their own
-- names: an overload next_id(integer, text) would capture the seed's
-- next_id(5, 'insta5.table_id_seq'), whose literal PostgreSQL resolves to
-- text first.
--
CREATE FUNCTION sharded_id.next_id(shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer) IS
'new id for the shard in counter mode (no sequence): strictly increasing per shard, never repeats within the cluster';

CREATE FUNCTION sharded_id.next_id_in_layout(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id_in_layout(integer, text) IS
'new id for the shard in counter mode, in the named layout';

CREATE FUNCTION sharded_id.next_ids(shard_id integer, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, integer) IS
'reserve n new ids for the shard in counter mode in one call (at most 1000000), for loaders';

CREATE FUNCTION sharded_id.next_ids_in_layout(shard_id integer, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) IS
'reserve n new ids for the shard in counter mode in the named layout, for loaders';

REVOKE EXECUTE ON FUNCTION sharded_id.next_id(integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.next_id_in_layout(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.next_ids(integer, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) FROM PUBLIC;

--
-- The durable clock ceiling.  After the clock leaped ahead and ids were
-- minted with its time, every later id of those shards keeps that time,
-- since ids that late may be stored.  A superuser who knows none was kept
-- lowers the ceiling, and every slot, to the current time.
--
CREATE FUNCTION sharded_id.reset_ceiling()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_reset_ceiling'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_ceiling() IS
'superuser only: lower the durable clock ceiling and every shard''s high-water mark to the current time; returns it';

REVOKE EXECUTE ON FUNCTION sharded_id.reset_ceiling() FROM PUBLIC;
