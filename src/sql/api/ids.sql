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

