/* src/sql/api/ids.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION sharded_id" to load this file. \quit

-- A server that still runs an older library, installed files and no
-- restart, would fail below with the loader's "could not find function":
-- refuse first, with the restart in the hint.  The library says its version
-- in sharded_id.library_version (1.6 and earlier do not have it); the
-- version of this script is pg_extension's, which CREATE EXTENSION and each
-- step of ALTER EXTENSION UPDATE set before they run a script.  The setting
-- is read from pg_settings, which shows the library's own setting and not a
-- placeholder that a SET made before the library was loaded; versions are
-- compared by their leading numbers (2.10 after 2.9, 2.1beta as 2.1).  A library
-- that is not loaded yet in this session is loaded, from the new files, by
-- the first C function below.  Every update runs it too, before its
-- functions.
-- @update@
DO $check$
DECLARE
    lib text := (SELECT s.setting FROM pg_catalog.pg_settings s
                 WHERE s.name OPERATOR(pg_catalog.=) 'sharded_id.library_version');
    ext text := (SELECT e.extversion FROM pg_catalog.pg_extension e
                 WHERE e.extname OPERATOR(pg_catalog.=) 'sharded_id');
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_settings s WHERE s.name OPERATOR(pg_catalog.~~) 'sharded\_id.%')
       AND (lib IS NULL
            OR pg_catalog.string_to_array(pg_catalog.regexp_replace(lib, '^([0-9]+(\.[0-9]+)*).*$', '\1'), '.')::integer[]
               OPERATOR(pg_catalog.<)
               pg_catalog.string_to_array(pg_catalog.regexp_replace(ext, '^([0-9]+(\.[0-9]+)*).*$', '\1'), '.')::integer[])
    THEN
        RAISE EXCEPTION 'the sharded_id library loaded by this server is older than the extension''s scripts'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = pg_catalog.format('The server runs the sharded_id library of version %s, loaded when it started; the scripts are of version %s.',
                                             coalesce(lib, '1.6 or earlier'), ext),
                  HINT = 'Restart the server after installing a new version of sharded_id (where it is not in shared_preload_libraries, open a new session), then run the command again.';
    END IF;
END
$check$;

--
-- Minting ids.  This file opens the install script that make assembles
-- from src/sql/api/ (see the Makefile): ids, decoders, shards, node, router.
--

-- CREATE EXTENSION made the schema; everyone may look up the functions in
-- it.  next_id checks the caller's rights on the sequence, like nextval.
GRANT USAGE ON SCHEMA sharded_id TO PUBLIC;

-- The one check of the internal functions that only superusers run (moves,
-- the router's administration, remote execution): the first statement of
-- each calls it with the function's name.  It refuses (42501) a caller that
-- is not a superuser whatever the grants on that function, so that a
-- blanket GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA sharded_id opens none of
-- them.  PUBLIC keeps EXECUTE on it: it only tells whether the caller is a
-- superuser.
CREATE FUNCTION sharded_id._superuser_only(caller text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_superuser_only'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id._superuser_only(text) IS
'internal: refuse (42501) a caller that is not a superuser, whatever the grants on the internal function named caller';

CREATE FUNCTION sharded_id.next_id(shard_id integer, seq regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id_v21'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass) IS
'new id for the shard, its low bits from nextval(seq); never repeats within the cluster';

CREATE FUNCTION sharded_id.next_id(shard_id integer, seq regclass, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id_v21'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass, text) IS
'new id for the shard in the named layout, its low bits from nextval(seq); never repeats within the cluster';

CREATE FUNCTION sharded_id.next_ids(shard_id integer, seq regclass, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_ids_v21'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, regclass, integer) IS
'reserve n new ids for the shard in one call (at most 1000000), for loaders';

CREATE FUNCTION sharded_id.next_ids(shard_id integer, seq regclass, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_ids_v21'
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
AS 'MODULE_PATHNAME', 'shid_next_counter_id_v21'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer) IS
'new id for the shard in counter mode (no sequence): strictly increasing per shard, never repeats within the cluster';

CREATE FUNCTION sharded_id.next_id_in_layout(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id_v21'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id_in_layout(integer, text) IS
'new id for the shard in counter mode, in the named layout';

CREATE FUNCTION sharded_id.next_ids(shard_id integer, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids_v21'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, integer) IS
'reserve n new ids for the shard in counter mode in one call (at most 1000000), for loaders';

CREATE FUNCTION sharded_id.next_ids_in_layout(shard_id integer, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids_v21'
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
-- lowers the ceiling, and every slot, to the current time.  Safe beside
-- running minters: a shard within a second of the clock, or held up by its
-- floor, stays where it is.
--
CREATE FUNCTION sharded_id.reset_ceiling()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_reset_ceiling'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_ceiling() IS
'superuser only: lower the durable clock ceiling and every shard''s high-water mark to the current time, never below a shard''s floor nor below an id already handed out at the clock''s pace; returns it';

REVOKE EXECUTE ON FUNCTION sharded_id.reset_ceiling() FROM PUBLIC;

--
-- Across servers.  A shard's floor: every id minted here for it afterwards
-- is greater than a given id, whatever this server's clock reads, durably
-- (WAL-logged, and kept in the data directory's sharded_id.shards).  It
-- belongs to one shard of one layout.  Moves and restores raise it from the
-- shard's high-water mark on the server it came from.  A floor further
-- ahead of the clock than sharded_id.max_clock_jump is refused unless
-- forced; lower_floor is the way back.
--
CREATE FUNCTION sharded_id.raise_floor(shard_id integer, above_id bigint, layout text DEFAULT 'instagram',
                                       force boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_raise_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) IS
'every id minted on this server for the shard from now on is greater than above_id, also after a restart or a failover; refuses an id of another shard, and one more than sharded_id.max_clock_jump ahead of the clock unless force; returns the floor';

CREATE FUNCTION sharded_id._check_floor(shard_id integer, above_id bigint, layout text, source text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_check_floor'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) IS
'internal: raise raise_floor''s error, naming source, unless raise_floor without force would accept above_id';

CREATE FUNCTION sharded_id.lower_floor(shard_id integer, layout text DEFAULT 'instagram')
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_lower_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.lower_floor(integer, text) IS
'superuser only, with a warning: remove a shard''s floor and bring its ids back to the clock, as after a floor raised over a wrong id; ids of the shard minted with later times may be minted again';

CREATE FUNCTION sharded_id.floors(OUT layout text, OUT shard_id integer, OUT floor timestamptz, OUT retired boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_floors'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id.floors() IS
'what this server keeps about single shards, for every database: each floor, and whether the server gave the shard away';

CREATE FUNCTION sharded_id.high_water(shard_id integer, layout text DEFAULT 'instagram')
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_high_water'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.high_water(integer, text) IS
'the largest id of the shard that this server may have minted: raise_floor on the server that takes the shard over';

CREATE FUNCTION sharded_id._retire_shard(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_retire_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._retire_shard(integer, text) IS
'internal: stop minting for the shard at once, on this server and in every database of it, durably (undone if the transaction aborts); returns its high-water mark';

CREATE FUNCTION sharded_id._own_shard(shard_id integer, layout text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_own_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._own_shard(integer, text) IS
'internal: mint for the shard here again once the transaction commits';

REVOKE EXECUTE ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.lower_floor(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.floors() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.high_water(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._retire_shard(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._own_shard(integer, text) FROM PUBLIC;

-- A server that did not preload the library has no shared memory, and
-- next_id fails there (55000): say so at CREATE EXTENSION and at every
-- update, with a WARNING, rather than at the first id.  floors() is the
-- cheapest call that needs the shared memory; it reads nothing else.  A
-- router that mints no ids need not preload the library.
-- @update@
DO $preload$
BEGIN
    PERFORM FROM sharded_id.floors();
EXCEPTION WHEN object_not_in_prerequisite_state THEN
    RAISE WARNING 'sharded_id is not in shared_preload_libraries: next_id will fail on this server'
        USING DETAIL = 'The extension is installed, but the library was not loaded when the server started, so it has no shared memory to guarantee that no id repeats; only the decoders work.',
              HINT = 'Add sharded_id to shared_preload_libraries in postgresql.conf and restart the server. A router that mints no ids may ignore this.';
END
$preload$;
