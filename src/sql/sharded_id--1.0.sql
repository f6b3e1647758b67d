/* src/sql/sharded_id--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION sharded_id" to load this file. \quit

-- CREATE EXTENSION made the schema; everyone may look up the functions in
-- it.  next_id checks the caller's rights on the sequence, like nextval.
GRANT USAGE ON SCHEMA sharded_id TO PUBLIC;

CREATE FUNCTION sharded_id.next_id(shard_id integer, seq regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass) IS
'new id for the shard, its low bits from nextval(seq); never repeats within the cluster';

CREATE FUNCTION sharded_id.decode(id bigint,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.decode(bigint) IS
'creation time, shard and sequence field of an id';

CREATE FUNCTION sharded_id.encode(created_at timestamptz,
                                  shard_id integer,
                                  seq_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_encode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint) IS
'the id with these fields (time floored to the millisecond, seq_id % 1024); reserves nothing';

CREATE FUNCTION sharded_id.created_at(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_created_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.created_at(bigint) IS
'creation time of an id, to the millisecond';

CREATE FUNCTION sharded_id.shard_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_id(bigint) IS
'logical shard that owns an id';

CREATE FUNCTION sharded_id.seq_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_seq_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.seq_id(bigint) IS
'sequence field of an id';
