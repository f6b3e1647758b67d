/* src/sql/edition/decoders.sql */

--
-- sharded_id_sql: the layouts and the decoders, in SQL and PL/pgSQL, with
-- the names, signatures and results of the C extension's (src/layout.c,
-- src/decode.c, src/shortcode.c, src/shard_for.c).  See doc/sharded_id-sql-edition.md.
-- Nothing here reads the clock or a table: all are IMMUTABLE.
--

-- The built-in layouts of src/layout.c, in its order; entries never change.
CREATE FUNCTION sharded_id.layouts(OUT name text,
                                   OUT epoch timestamptz,
                                   OUT time_bits integer,
                                   OUT shard_bits integer,
                                   OUT seq_bits integer,
                                   OUT max_shard integer,
                                   OUT ids_per_ms integer,
                                   OUT last_time timestamptz)
RETURNS SETOF record
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ROWS 5
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT l.name,
           '1970-01-01 00:00:00+00'::pg_catalog.timestamptz OPERATOR(pg_catalog.+) (l.epoch_ms OPERATOR(pg_catalog.*) '1 ms'::pg_catalog.interval),
           l.time_bits, l.shard_bits, l.seq_bits,
           ((1::pg_catalog.int8 OPERATOR(pg_catalog.<<) l.shard_bits) OPERATOR(pg_catalog.-) 1)::pg_catalog.int4,
           (1 OPERATOR(pg_catalog.<<) l.seq_bits),
           '1970-01-01 00:00:00+00'::pg_catalog.timestamptz OPERATOR(pg_catalog.+)
               ((l.epoch_ms OPERATOR(pg_catalog.+) ((1::pg_catalog.int8 OPERATOR(pg_catalog.<<)
                   LEAST(l.time_bits, 63 OPERATOR(pg_catalog.-) l.shard_bits OPERATOR(pg_catalog.-) l.seq_bits))
                   OPERATOR(pg_catalog.-) 1)) OPERATOR(pg_catalog.*) '1 ms'::pg_catalog.interval)
    FROM (VALUES (1, 'instagram', 1314220021721::pg_catalog.int8, 41, 13, 10),
                 (2, 'instagram_2011_01', 1293843600000, 41, 13, 10),
                 (3, 'instagram_2025', 1735689600000, 41, 13, 10),
                 (4, 'snowflake', 1288834974657, 41, 10, 12),
                 (5, '58com', 1451606400000, 39, 13, 7)) AS l(ord, name, epoch_ms, time_bits, shard_bits, seq_bits)
    ORDER BY l.ord
$$;

COMMENT ON FUNCTION sharded_id.layouts() IS
'the built-in id layouts, and the last time each can hold';

-- One layout's fields by name, and the C extension's error for another name.
CREATE FUNCTION sharded_id._layout(layout text, OUT epoch_ms bigint, OUT shard_bits integer,
                                   OUT seq_bits integer, OUT time_bits integer)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    CASE layout
        WHEN 'instagram' THEN epoch_ms := 1314220021721; time_bits := 41; shard_bits := 13; seq_bits := 10;
        WHEN 'instagram_2011_01' THEN epoch_ms := 1293843600000; time_bits := 41; shard_bits := 13; seq_bits := 10;
        WHEN 'instagram_2025' THEN epoch_ms := 1735689600000; time_bits := 41; shard_bits := 13; seq_bits := 10;
        WHEN 'snowflake' THEN epoch_ms := 1288834974657; time_bits := 41; shard_bits := 10; seq_bits := 12;
        WHEN '58com' THEN epoch_ms := 1451606400000; time_bits := 39; shard_bits := 13; seq_bits := 7;
        ELSE
            RAISE EXCEPTION 'unknown sharded id layout "%"', pg_catalog.left(layout, 64)
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'Valid layouts are: instagram, instagram_2011_01, instagram_2025, snowflake, 58com.';
    END CASE;
    -- The sign bit is never used: at most 63 bits in all.
    time_bits := LEAST(time_bits, 63 - shard_bits - seq_bits);
END
$$;

COMMENT ON FUNCTION sharded_id._layout(text) IS
'internal: epoch (Unix ms), field widths and usable time bits of the named layout; 22023 for an unknown name';

-- The shard, checked against the layout (22003 out of range).
CREATE FUNCTION sharded_id.check_shard(shard_id integer, layout text)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_shard bigint := (1::bigint << (sharded_id._layout(layout)).shard_bits) - 1;
BEGIN
    IF shard_id < 0 OR shard_id > max_shard THEN
        RAISE EXCEPTION 'shard id % is out of range', shard_id
            USING ERRCODE = 'numeric_value_out_of_range',
                  DETAIL = pg_catalog.format('Shard ids must be between 0 and %s.', max_shard),
                  HINT = 'Pass a shard id the layout has.';
    END IF;
    RETURN shard_id;
END
$$;

COMMENT ON FUNCTION sharded_id.check_shard(integer, text) IS
'the shard id if the named layout has such a shard; next_id''s error otherwise (unknown layout, shard out of range)';

-- All three fields of an id of the layout; 22003 for an id outside it.
CREATE FUNCTION sharded_id.decode(id bigint, layout text,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record := sharded_id._layout(layout);
    max_id bigint := CASE WHEN l.time_bits + l.shard_bits + l.seq_bits >= 63 THEN 9223372036854775807
                          ELSE (1::bigint << (l.time_bits + l.shard_bits + l.seq_bits)) - 1 END;
BEGIN
    IF id < 0 OR id > max_id THEN
        RAISE EXCEPTION 'sharded id % is out of range', id
            USING ERRCODE = 'numeric_value_out_of_range',
                  DETAIL = pg_catalog.format('Sharded ids of layout "%s" are between 0 and %s.', layout, max_id),
                  HINT = 'Decode ids of this layout only.';
    END IF;
    seq_id := (id & ((1::bigint << l.seq_bits) - 1))::integer;
    shard_id := ((id >> l.seq_bits) & ((1::bigint << l.shard_bits) - 1))::integer;
    created_at := '1970-01-01 00:00:00+00'::timestamptz
        + (l.epoch_ms + (id >> (l.shard_bits + l.seq_bits))) * '1 ms'::interval;
END
$$;

COMMENT ON FUNCTION sharded_id.decode(bigint, text) IS
'creation time, shard and sequence field of an id of the named layout';

CREATE FUNCTION sharded_id.decode(id bigint,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM sharded_id.decode(id, 'instagram') $$;

COMMENT ON FUNCTION sharded_id.decode(bigint) IS
'creation time, shard and sequence field of an id';

CREATE FUNCTION sharded_id.created_at(id bigint, layout text)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (sharded_id.decode(id, layout)).created_at $$;

COMMENT ON FUNCTION sharded_id.created_at(bigint, text) IS
'creation time of an id of the named layout, to the millisecond';

CREATE FUNCTION sharded_id.created_at(id bigint)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (sharded_id.decode(id, 'instagram')).created_at $$;

COMMENT ON FUNCTION sharded_id.created_at(bigint) IS
'creation time of an id, to the millisecond';

CREATE FUNCTION sharded_id.shard_id(id bigint, layout text)
RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (sharded_id.decode(id, layout)).shard_id $$;

COMMENT ON FUNCTION sharded_id.shard_id(bigint, text) IS
'logical shard that owns an id of the named layout';

CREATE FUNCTION sharded_id.shard_id(id bigint)
RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (sharded_id.decode(id, 'instagram')).shard_id $$;

COMMENT ON FUNCTION sharded_id.shard_id(bigint) IS
'logical shard that owns an id';

CREATE FUNCTION sharded_id.seq_id(id bigint, layout text)
RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (sharded_id.decode(id, layout)).seq_id $$;

COMMENT ON FUNCTION sharded_id.seq_id(bigint, text) IS
'sequence field of an id of the named layout';

CREATE FUNCTION sharded_id.seq_id(id bigint)
RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (sharded_id.decode(id, 'instagram')).seq_id $$;

COMMENT ON FUNCTION sharded_id.seq_id(bigint) IS
'sequence field of an id';

-- Milliseconds since the layout's epoch of ts, checked (22008).
CREATE FUNCTION sharded_id._elapsed_ms(ts timestamptz, layout text)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record := sharded_id._layout(layout);
    elapsed bigint;
BEGIN
    IF NOT pg_catalog.isfinite(ts) THEN
        RAISE EXCEPTION 'timestamp out of range for sharded ids'
            USING ERRCODE = 'datetime_field_overflow', DETAIL = 'Infinite timestamps cannot be encoded.',
                  HINT = 'Pass a finite timestamp.';
    END IF;
    elapsed := pg_catalog.floor(EXTRACT(epoch FROM ts) * 1000)::bigint - l.epoch_ms;
    IF elapsed < 0 OR elapsed > (1::bigint << l.time_bits) - 1 THEN
        RAISE EXCEPTION 'timestamp out of range for sharded ids'
            USING ERRCODE = 'datetime_field_overflow',
                  DETAIL = pg_catalog.format('Sharded ids of layout "%s" hold times from the layout''s epoch for 2^%s ms.', layout, l.time_bits),
                  HINT = 'Pass a time that the layout can hold (sharded_id.layouts()).';
    END IF;
    RETURN elapsed;
END
$$;

COMMENT ON FUNCTION sharded_id._elapsed_ms(timestamptz, text) IS
'internal: milliseconds from the layout''s epoch to ts, floored; 22008 outside the layout''s time field';

CREATE FUNCTION sharded_id.encode(created_at timestamptz, shard_id integer, seq_id bigint, layout text)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record := sharded_id._layout(layout);
    elapsed bigint := sharded_id._elapsed_ms(created_at, layout);
BEGIN
    PERFORM sharded_id.check_shard(shard_id, layout);
    IF seq_id < 0 OR seq_id >= (1::bigint << l.seq_bits) THEN
        RAISE EXCEPTION 'sequence field % is out of range', seq_id
            USING ERRCODE = 'numeric_value_out_of_range',
                  DETAIL = pg_catalog.format('Sequence fields of layout "%s" are between 0 and %s.', layout, (1::bigint << l.seq_bits) - 1),
                  HINT = pg_catalog.format('For a sequence value, as the seed formula takes it, pass nextval %% %s.', 1::bigint << l.seq_bits);
    END IF;
    RETURN (elapsed << (l.shard_bits + l.seq_bits)) | (shard_id::bigint << l.seq_bits) | seq_id;
END
$$;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint, text) IS
'the id of the named layout with these fields; reserves nothing';

CREATE FUNCTION sharded_id.encode(created_at timestamptz, shard_id integer, seq_id bigint)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT sharded_id.encode(created_at, shard_id, seq_id, 'instagram') $$;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint) IS
'the id with these fields (time floored to the millisecond); reserves nothing';

-- Time ranges: WHERE id >= sharded_id.min_id_at(ts) is a primary-key range.
CREATE FUNCTION sharded_id.min_id_at(ts timestamptz, layout text)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._elapsed_ms(ts, layout) OPERATOR(pg_catalog.<<)
           (l.shard_bits OPERATOR(pg_catalog.+) l.seq_bits)
    FROM sharded_id._layout(layout) l
$$;

COMMENT ON FUNCTION sharded_id.min_id_at(timestamptz, text) IS
'lowest id of the named layout any shard can have at the millisecond of ts';

CREATE FUNCTION sharded_id.min_id_at(ts timestamptz)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT sharded_id.min_id_at(ts, 'instagram') $$;

COMMENT ON FUNCTION sharded_id.min_id_at(timestamptz) IS
'lowest id any shard can have at the millisecond of ts';

CREATE FUNCTION sharded_id.max_id_at(ts timestamptz, layout text)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id.min_id_at(ts, layout) OPERATOR(pg_catalog.|)
           ((1::pg_catalog.int8 OPERATOR(pg_catalog.<<) (l.shard_bits OPERATOR(pg_catalog.+) l.seq_bits))
            OPERATOR(pg_catalog.-) 1)
    FROM sharded_id._layout(layout) l
$$;

COMMENT ON FUNCTION sharded_id.max_id_at(timestamptz, text) IS
'highest id of the named layout any shard can have at the millisecond of ts';

CREATE FUNCTION sharded_id.max_id_at(ts timestamptz)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT sharded_id.max_id_at(ts, 'instagram') $$;

COMMENT ON FUNCTION sharded_id.max_id_at(timestamptz) IS
'highest id any shard can have at the millisecond of ts';

-- Routing keys to shards.
CREATE FUNCTION sharded_id._check_shard_count(shard_count integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF shard_count < 1 THEN
        RAISE EXCEPTION 'shard count % is out of range', shard_count
            USING ERRCODE = 'invalid_parameter_value', DETAIL = 'The shard count must be at least 1.',
                  HINT = 'Pass the number of logical shards.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._check_shard_count(integer) IS
'internal: 22023 unless shard_count is at least 1';

CREATE FUNCTION sharded_id.shard_for(key bigint, shard_count integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._check_shard_count(shard_count);
    RETURN (((key % shard_count) + shard_count) % shard_count)::integer;
END
$$;

COMMENT ON FUNCTION sharded_id.shard_for(bigint, integer) IS
'logical shard of an integer key: key modulo shard_count, floored (negative keys too)';

-- 64-bit FNV-1a of the key's bytes, in two 32-bit halves (bigint has no
-- wrapping multiplication): prime = 2^40 + 435.
CREATE FUNCTION sharded_id.shard_for(key text, shard_count integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    b bytea := pg_catalog.convert_to(key, pg_catalog.getdatabaseencoding());
    hi bigint := 3421674724;        -- 14695981039346656037 >> 32
    lo bigint := 2216829733;        -- 14695981039346656037 & (2^32 - 1)
    m bigint;
BEGIN
    PERFORM sharded_id._check_shard_count(shard_count);
    FOR i IN 0 .. pg_catalog.length(b) - 1 LOOP
        lo := lo # pg_catalog.get_byte(b, i);
        m := lo * 435;
        hi := (hi * 435 + (m >> 32) + (lo << 8)) & 4294967295;
        lo := m & 4294967295;
    END LOOP;
    RETURN ((hi::numeric * 4294967296 + lo) % shard_count)::integer;
END
$$;

COMMENT ON FUNCTION sharded_id.shard_for(text, integer) IS
'logical shard of a text key: 64-bit FNV-1a of its bytes modulo shard_count';

-- Ids as text: URL-safe base 64, most significant digit first (src/shortcode.c).
CREATE FUNCTION sharded_id.to_shortcode(id bigint)
RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    digits constant text := 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    v bigint := id;
    code text := '';
BEGIN
    IF id < 0 THEN
        RAISE EXCEPTION 'cannot make a shortcode of negative number %', id
            USING ERRCODE = 'numeric_value_out_of_range', HINT = 'Pass an id, which is never negative.';
    END IF;
    LOOP
        code := pg_catalog.substr(digits, (v & 63)::integer + 1, 1) || code;
        v := v >> 6;
        EXIT WHEN v = 0;
    END LOOP;
    RETURN code;
END
$$;

COMMENT ON FUNCTION sharded_id.to_shortcode(bigint) IS
'the id in URL-safe base 64 (digits A-Z a-z 0-9 - _)';

CREATE FUNCTION sharded_id.from_shortcode(code text)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    digits constant text := 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    v bigint := 0;
    d integer;
BEGIN
    IF code = '' THEN
        RAISE EXCEPTION 'invalid shortcode ""' USING ERRCODE = 'invalid_text_representation',
            DETAIL = 'A shortcode has at least one digit.', HINT = 'Pass a shortcode made by to_shortcode.';
    END IF;
    IF pg_catalog.length(code) > 1 AND pg_catalog.left(code, 1) = 'A' THEN
        RAISE EXCEPTION 'invalid shortcode "%"', pg_catalog.left(code, 64) USING ERRCODE = 'invalid_text_representation',
            DETAIL = 'A shortcode does not start with "A", the digit zero, unless it is "A" itself.',
            HINT = 'Pass a shortcode made by to_shortcode.';
    END IF;
    FOR i IN 1 .. pg_catalog.length(code) LOOP
        d := pg_catalog.strpos(digits, pg_catalog.substr(code, i, 1)) - 1;
        IF d < 0 THEN
            RAISE EXCEPTION 'invalid shortcode "%"', pg_catalog.left(code, 64) USING ERRCODE = 'invalid_text_representation',
                DETAIL = 'Shortcode digits are A-Z, a-z, 0-9, "-" and "_".', HINT = 'Pass a shortcode made by to_shortcode.';
        END IF;
        IF v > (9223372036854775807 >> 6) THEN
            RAISE EXCEPTION 'shortcode "%" is out of range for type bigint', pg_catalog.left(code, 64)
                USING ERRCODE = 'numeric_value_out_of_range', HINT = 'Pass a shortcode of a bigint.';
        END IF;
        v := (v << 6) | d;
    END LOOP;
    RETURN v;
END
$$;

COMMENT ON FUNCTION sharded_id.from_shortcode(text) IS
'the id a shortcode stands for';
