/* src/sql/edition/minting.sql */

--
-- sharded_id_sql: minting without a C library.  Each (layout, shard) has a
-- sequence, sharded_id."<layout>_<shard>", whose value v is the id's
-- (millisecond, counter) pair: v = (ms since the layout's epoch) * ids_per_ms
-- + counter.  A sequence never goes back, through crashes too (nextval's
-- WAL prefetch only skips values), so no clock step and no crash can repeat
-- an id.  Only a move up to the clock (setval, when the sequence fell
-- behind) could hand out a value twice, if some nextval ran between its
-- read and its setval; each shard's second sequence, "<layout>_<shard>_moves",
-- is a sequence lock: a move counts it up to odd before it reads, and to
-- even after its setval, and a value taken without the lock counts only if
-- the moves count read before and after its nextval is the same even
-- number.  See doc/sharded_id-sql-edition.md.
--
-- The functions that touch the sequences are SECURITY DEFINER, owned by
-- the role that installed the edition (the database owner): they run only
-- built-ins, schema-qualified, with search_path pinned.
--

-- The sequences of a shard, made on its first id.  Two sessions making them
-- at once: the second waits on the first's catalog row, fails, and finds
-- them.  They are looked up in pg_class with the statement's snapshot, not
-- by to_regclass, whose cache may still say they do not exist.
CREATE FUNCTION sharded_id._shard_sequences(shard_id integer, layout text, OUT seq regclass, OUT moves regclass)
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    name text := pg_catalog.format('%s_%s', layout, shard_id);
BEGIN
    PERFORM sharded_id.check_shard(shard_id, layout);
    IF pg_catalog.to_regclass(pg_catalog.format('sharded_id.%I', name)) IS NULL
       OR pg_catalog.to_regclass(pg_catalog.format('sharded_id.%I', name || '_moves')) IS NULL THEN
        BEGIN
            EXECUTE pg_catalog.format('CREATE SEQUENCE sharded_id.%I AS bigint MINVALUE 0 CACHE 1 NO CYCLE', name);
            EXECUTE pg_catalog.format('CREATE SEQUENCE sharded_id.%I AS bigint MINVALUE 0 START 0 CACHE 1 NO CYCLE', name || '_moves');
            EXECUTE pg_catalog.format('COMMENT ON SEQUENCE sharded_id.%I IS %L', name,
                pg_catalog.format('ids of shard %s, layout %s: (ms since the epoch) * ids per ms + counter', shard_id, layout));
            EXECUTE pg_catalog.format('COMMENT ON SEQUENCE sharded_id.%I IS %L', name || '_moves',
                pg_catalog.format('moves of sharded_id.%s up to the clock: odd while one runs', name));
        EXCEPTION WHEN duplicate_table OR unique_violation THEN
            NULL;       -- made by another session meanwhile
        END;
    END IF;
    seq := (SELECT c.oid FROM pg_catalog.pg_class c
            WHERE c.relnamespace = 'sharded_id'::pg_catalog.regnamespace AND c.relname = name AND c.relkind = 'S');
    moves := (SELECT c.oid FROM pg_catalog.pg_class c
              WHERE c.relnamespace = 'sharded_id'::pg_catalog.regnamespace AND c.relname = name || '_moves' AND c.relkind = 'S');
    IF seq IS NULL OR moves IS NULL THEN
        RAISE EXCEPTION 'the sequences of shard % of layout % are missing', shard_id, layout
            USING ERRCODE = 'undefined_object',
                  DETAIL = pg_catalog.format('sharded_id.%I and sharded_id.%I must both exist, or neither.', name, name || '_moves'),
                  HINT = pg_catalog.format('Drop sharded_id.%I if it is left alone, after noting sharded_id.high_water(%s, %L) and before raising the floor again with it.', name, shard_id, layout);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._shard_sequences(integer, text) IS
'internal: the sequence of the shard''s ids in the layout and its moves sequence, both made on first use';

-- Under the shard's move lock: reserve n values, none below floor_v, above
-- every value handed out; returns the first.  The lock is a session lock,
-- held only here, so a long transaction never holds up other movers.
CREATE FUNCTION sharded_id._move(seq regclass, moves regclass, floor_v bigint, n bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    last_v bigint;
    first_v bigint;
BEGIN
    PERFORM pg_catalog.pg_advisory_lock(1936222577, seq::oid::integer);   -- "shiq", this sequence
    BEGIN
        -- to odd: values taken from now on without the lock do not count
        IF pg_catalog.nextval(moves) % 2 = 0 THEN
            PERFORM pg_catalog.nextval(moves);   -- even after a crash skipped values
        END IF;
        last_v := COALESCE(pg_catalog.pg_sequence_last_value(seq), -1);
        first_v := GREATEST(last_v + 1, floor_v);
        PERFORM pg_catalog.setval(seq, first_v + n - 1, true);
        PERFORM pg_catalog.nextval(moves);       -- to even
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        PERFORM pg_catalog.pg_advisory_unlock(1936222577, seq::oid::integer);
        RAISE;
    END;
    PERFORM pg_catalog.pg_advisory_unlock(1936222577, seq::oid::integer);
    RETURN first_v;
END
$$;

COMMENT ON FUNCTION sharded_id._move(regclass, regclass, bigint, bigint) IS
'internal: under the shard''s move lock (moves: its moves sequence), reserve n values of the sequence from the greater of floor_v and the next value; returns the first';

-- The current millisecond since the layout's epoch.
CREATE FUNCTION sharded_id._clock_ms(epoch_ms bigint)
RETURNS bigint
LANGUAGE sql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.floor(EXTRACT(epoch FROM pg_catalog.clock_timestamp()) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8
           OPERATOR(pg_catalog.-) epoch_ms
$$;

COMMENT ON FUNCTION sharded_id._clock_ms(bigint) IS
'internal: milliseconds from epoch_ms (Unix ms) to the clock';

-- Wait until a value's millisecond is at most 1 s ahead of the clock.
CREATE FUNCTION sharded_id._wait_for(epoch_ms bigint, ms bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ahead bigint;
BEGIN
    LOOP
        ahead := ms - 1000 - sharded_id._clock_ms(epoch_ms);
        EXIT WHEN ahead <= 0;
        PERFORM pg_catalog.pg_sleep(LEAST(ahead, 100) / 1000.0);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._wait_for(bigint, bigint) IS
'internal: sleep until millisecond ms is at most 1 s ahead of the clock';

-- n new sequence values of the shard (n = 1 for next_id): the first.
-- Without the lock while the sequence is at the clock; through _move when
-- it is behind, or when a move ran meanwhile.
CREATE FUNCTION sharded_id._reserve(shard_id integer, layout text, n bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record := sharded_id._layout(layout);
    per_ms bigint := 1::bigint << l.seq_bits;
    name text := pg_catalog.format('%s_%s', layout, shard_id);
    seq regclass := pg_catalog.to_regclass(pg_catalog.format('sharded_id.%I', name));
    moves regclass := pg_catalog.to_regclass(pg_catalog.format('sharded_id.%I', name || '_moves'));
    now_ms bigint;
    g bigint;
    v bigint;
BEGIN
    IF seq IS NULL OR moves IS NULL THEN
        SELECT s.seq, s.moves INTO seq, moves FROM sharded_id._shard_sequences(shard_id, layout) s;
    END IF;
    LOOP
        IF n = 1 THEN
            g := pg_catalog.pg_sequence_last_value(moves);
            v := pg_catalog.nextval(seq);
            -- sharded_id._clock_ms, written out: a function with SET is not inlined
            now_ms := pg_catalog.floor(EXTRACT(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint - l.epoch_ms;
            IF v >= now_ms * per_ms AND g % 2 = 0 AND g = pg_catalog.pg_sequence_last_value(moves) THEN
                EXIT WHEN v / per_ms <= now_ms + 1000;
                PERFORM sharded_id._wait_for(l.epoch_ms, v / per_ms);   -- v is skipped
                CONTINUE;
            END IF;
        END IF;
        now_ms := sharded_id._clock_ms(l.epoch_ms);
        v := sharded_id._move(seq, moves, now_ms * per_ms, n);
        -- the reserved block ends at most 1 s ahead of the clock
        PERFORM sharded_id._wait_for(l.epoch_ms, (v + n - 1) / per_ms);
        EXIT;
    END LOOP;
    IF v IS NULL THEN
        RAISE EXCEPTION 'no id was reserved for shard %', shard_id
            USING ERRCODE = 'internal_error', HINT = 'Report the case to the project.';
    END IF;
    IF (v + n - 1) / per_ms > (1::bigint << l.time_bits) - 1 THEN
        RAISE EXCEPTION 'timestamp out of range for sharded ids'
            USING ERRCODE = 'datetime_field_overflow',
                  DETAIL = pg_catalog.format('Layout "%s" holds no later millisecond.', layout),
                  HINT = 'Mint in a layout with a later epoch.';
    END IF;
    RETURN v;
END
$$;

COMMENT ON FUNCTION sharded_id._reserve(integer, text, bigint) IS
'internal: reserve n values of the shard''s sequence, none behind the clock and none more than 1 s ahead of it; returns the first';

-- The id of sequence value v of the shard.
CREATE FUNCTION sharded_id._id_of(v bigint, shard_id integer, shard_bits integer, seq_bits integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ((v OPERATOR(pg_catalog.>>) seq_bits) OPERATOR(pg_catalog.<<) (shard_bits OPERATOR(pg_catalog.+) seq_bits))
           OPERATOR(pg_catalog.|) (shard_id::pg_catalog.int8 OPERATOR(pg_catalog.<<) seq_bits)
           OPERATOR(pg_catalog.|) (v OPERATOR(pg_catalog.&) ((1::pg_catalog.int8 OPERATOR(pg_catalog.<<) seq_bits) OPERATOR(pg_catalog.-) 1))
$$;

COMMENT ON FUNCTION sharded_id._id_of(bigint, integer, integer, integer) IS
'internal: the id of a shard''s sequence value (ms * ids_per_ms + counter)';

CREATE FUNCTION sharded_id.next_id_in_layout(shard_id integer, layout text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record := sharded_id._layout(layout);
BEGIN
    RETURN sharded_id._id_of(sharded_id._reserve(shard_id, layout, 1), shard_id, l.shard_bits, l.seq_bits);
END
$$;

COMMENT ON FUNCTION sharded_id.next_id_in_layout(integer, text) IS
'new id for the shard in the named layout: strictly increasing per shard, never repeats in this database';

CREATE FUNCTION sharded_id.next_id(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN sharded_id._id_of(sharded_id._reserve(shard_id, 'instagram', 1), shard_id, 13, 10);
END
$$;

COMMENT ON FUNCTION sharded_id.next_id(integer) IS
'new id for the shard: strictly increasing per shard, never repeats in this database, at most 1 s ahead of the clock';

CREATE FUNCTION sharded_id.next_ids_in_layout(shard_id integer, n integer, layout text)
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER ROWS 1000
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record := sharded_id._layout(layout);
    first_v bigint;
BEGIN
    IF n < 0 OR n > 1000000 THEN
        RAISE EXCEPTION 'batch size % is out of range', n
            USING ERRCODE = 'invalid_parameter_value', DETAIL = 'Batches must hold between 0 and 1000000 ids.',
                  HINT = 'Call next_ids again for more.';
    END IF;
    IF n = 0 THEN
        PERFORM sharded_id.check_shard(shard_id, layout);
        RETURN;
    END IF;
    first_v := sharded_id._reserve(shard_id, layout, n);
    -- sharded_id._id_of, written out: a function with SET is not inlined
    RETURN QUERY SELECT ((v >> l.seq_bits) << (l.shard_bits + l.seq_bits)) | (shard_id::bigint << l.seq_bits)
                        | (v & ((1::bigint << l.seq_bits) - 1))
                 FROM pg_catalog.generate_series(first_v, first_v + n - 1) v;
END
$$;

COMMENT ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) IS
'reserve n new ids for the shard in the named layout in one call (at most 1000000), for loaders';

CREATE FUNCTION sharded_id.next_ids(shard_id integer, n integer)
RETURNS SETOF bigint
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER ROWS 1000
SET search_path = pg_catalog, pg_temp
AS $$ SELECT sharded_id.next_ids_in_layout(shard_id, n, 'instagram') $$;

COMMENT ON FUNCTION sharded_id.next_ids(integer, integer) IS
'reserve n new ids for the shard in one call (at most 1000000), for loaders';
