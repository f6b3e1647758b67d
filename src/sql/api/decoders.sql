/* src/sql/api/decoders.sql */

--
-- Decoding ids.  Each function of 1.0 uses the default layout; its overload
-- whose last argument names a built-in layout came in 1.1.  Layout names
-- are frozen, so the decoders stay IMMUTABLE and stored defaults keep their
-- meaning.  None of these reads the clock or shared memory: all are
-- IMMUTABLE, STRICT and PARALLEL SAFE.
--
CREATE FUNCTION sharded_id.decode(id bigint,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.decode(bigint) IS
'creation time, shard and sequence field of an id';

CREATE FUNCTION sharded_id.decode(id bigint, layout text,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.decode(bigint, text) IS
'creation time, shard and sequence field of an id of the named layout';

CREATE FUNCTION sharded_id.encode(created_at timestamptz,
                                  shard_id integer,
                                  seq_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_encode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint) IS
'the id with these fields (time floored to the millisecond, seq_id % 1024); reserves nothing';

CREATE FUNCTION sharded_id.encode(created_at timestamptz,
                                  shard_id integer,
                                  seq_id bigint,
                                  layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_encode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint, text) IS
'the id of the named layout with these fields; reserves nothing';

CREATE FUNCTION sharded_id.created_at(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_created_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.created_at(bigint) IS
'creation time of an id, to the millisecond';

CREATE FUNCTION sharded_id.created_at(id bigint, layout text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_created_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.created_at(bigint, text) IS
'creation time of an id of the named layout, to the millisecond';

CREATE FUNCTION sharded_id.shard_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_id(bigint) IS
'logical shard that owns an id';

CREATE FUNCTION sharded_id.shard_id(id bigint, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_id(bigint, text) IS
'logical shard that owns an id of the named layout';

CREATE FUNCTION sharded_id.seq_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_seq_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.seq_id(bigint) IS
'sequence field of an id';

CREATE FUNCTION sharded_id.seq_id(id bigint, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_seq_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.seq_id(bigint, text) IS
'sequence field of an id of the named layout';

CREATE FUNCTION sharded_id.stripe_id(id bigint, stripes integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_stripe_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.stripe_id(bigint, integer) IS
'stripe of an id minted with sharded_id.stripes = stripes: which writer of the shard minted it';

CREATE FUNCTION sharded_id.stripe_id(id bigint, stripes integer, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_stripe_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.stripe_id(bigint, integer, text) IS
'stripe of an id of the named layout minted with sharded_id.stripes = stripes';

--
-- The layouts, and the check of a shard against one.
--
CREATE FUNCTION sharded_id.layouts(OUT name text,
                                   OUT epoch timestamptz,
                                   OUT time_bits integer,
                                   OUT shard_bits integer,
                                   OUT seq_bits integer,
                                   OUT max_shard integer,
                                   OUT ids_per_ms integer,
                                   OUT last_time timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_layouts'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE ROWS 5;

COMMENT ON FUNCTION sharded_id.layouts() IS
'the built-in id layouts, and the last time each can hold';

CREATE FUNCTION sharded_id.check_shard(shard_id integer, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_check_shard_sql'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.check_shard(integer, text) IS
'the shard id if the named layout has such a shard; next_id''s error otherwise (unknown layout, shard out of range)';

--
-- Time ranges: WHERE id >= sharded_id.min_id_at(ts) is a primary-key range.
--
CREATE FUNCTION sharded_id.min_id_at(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_min_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.min_id_at(timestamptz) IS
'lowest id any shard can have at the millisecond of ts';

CREATE FUNCTION sharded_id.min_id_at(ts timestamptz, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_min_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.min_id_at(timestamptz, text) IS
'lowest id of the named layout any shard can have at the millisecond of ts';

CREATE FUNCTION sharded_id.max_id_at(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_max_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.max_id_at(timestamptz) IS
'highest id any shard can have at the millisecond of ts';

CREATE FUNCTION sharded_id.max_id_at(ts timestamptz, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_max_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.max_id_at(timestamptz, text) IS
'highest id of the named layout any shard can have at the millisecond of ts';

--
-- Routing keys to shards, and ids as text.
--
CREATE FUNCTION sharded_id.shard_for(key bigint, shard_count integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_for_int8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_for(bigint, integer) IS
'logical shard of an integer key: key modulo shard_count, floored (negative keys too)';

CREATE FUNCTION sharded_id.shard_for(key text, shard_count integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_for_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_for(text, integer) IS
'logical shard of a text key: 64-bit FNV-1a of its bytes modulo shard_count';

CREATE FUNCTION sharded_id.to_shortcode(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'shid_to_shortcode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.to_shortcode(bigint) IS
'the id in URL-safe base 64 (digits A-Z a-z 0-9 - _)';

CREATE FUNCTION sharded_id.from_shortcode(code text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_from_shortcode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.from_shortcode(text) IS
'the id a shortcode stands for';
