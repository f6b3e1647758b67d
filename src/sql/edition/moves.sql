/* src/sql/edition/moves.sql */

--
-- sharded_id_sql: a shard across servers, with the C extension's names.
-- high_water on the server a shard leaves, raise_floor with it on the one
-- that takes it over, whichever edition each runs.  See doc/sharded_id-sql-edition.md.
--

CREATE FUNCTION sharded_id.high_water(shard_id integer, layout text DEFAULT 'instagram')
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record := sharded_id._layout(layout);
    -- pg_class with the statement's snapshot: to_regclass's cache may lag
    seq regclass := (SELECT c.oid FROM pg_catalog.pg_class c
                     WHERE c.relnamespace = 'sharded_id'::pg_catalog.regnamespace
                       AND c.relname = pg_catalog.format('%s_%s', layout, shard_id) AND c.relkind = 'S');
    last_v bigint;
BEGIN
    PERFORM sharded_id.check_shard(shard_id, layout);
    IF seq IS NOT NULL THEN
        last_v := pg_catalog.pg_sequence_last_value(seq);
    END IF;
    IF last_v IS NULL THEN
        RETURN NULL;        -- no id of the shard was minted here
    END IF;
    RETURN sharded_id._id_of(last_v, shard_id, l.shard_bits, l.seq_bits);
END
$$;

COMMENT ON FUNCTION sharded_id.high_water(integer, text) IS
'the largest id of the shard that this database may have minted (NULL if none): raise_floor on the server that takes the shard over';

CREATE FUNCTION sharded_id.raise_floor(shard_id integer, above_id bigint, layout text DEFAULT 'instagram',
                                       force boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    l record := sharded_id._layout(layout);
    f record := sharded_id.decode(above_id, layout);
    ahead_ms bigint;
BEGIN
    PERFORM sharded_id.check_shard(shard_id, layout);
    IF f.shard_id <> shard_id THEN
        RAISE EXCEPTION 'id % carries shard %, not shard %', above_id, f.shard_id, shard_id
            USING ERRCODE = 'SI003', DETAIL = pg_catalog.format('A floor of shard %s is raised over ids of shard %s only.', shard_id, shard_id),
                  HINT = 'Pass the high-water mark of the same shard.';
    END IF;
    ahead_ms := (above_id >> (l.shard_bits + l.seq_bits)) - sharded_id._clock_ms(l.epoch_ms);
    IF NOT force AND ahead_ms > 1000 THEN
        RAISE EXCEPTION 'id %, % s ahead of this server''s clock', above_id, ahead_ms / 1000
            USING ERRCODE = 'SI003',
                  DETAIL = pg_catalog.format('The id carries shard %s and the time %s. The SQL edition mints at most 1 s ahead of the clock, so the shard would wait until then.', shard_id, f.created_at),
                  HINT = 'If ids that late really exist, pass force => true.';
    END IF;
    -- every later value of the shard's sequence is above the id's
    PERFORM sharded_id._move(s.seq, s.moves, ((above_id >> (l.shard_bits + l.seq_bits)) << l.seq_bits) + f.seq_id + 1, 1)
    FROM sharded_id._shard_sequences(shard_id, layout) s;
    RETURN above_id;
END
$$;

COMMENT ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) IS
'every id minted in this database for the shard from now on is greater than above_id, also after a crash; refuses an id of another shard, and one more than 1 s ahead of the clock unless force; returns above_id';
