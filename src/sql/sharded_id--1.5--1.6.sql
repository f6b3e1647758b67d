/* src/sql/sharded_id--1.5--1.6.sql: the update from 1.5 to 1.6, as released (made by make from src/sql/updates/ and src/sql/api/ of 1.6) */

/* src/sql/updates/sharded_id--1.5--1.6.sql: the hand-written part of the
 * update from 1.5 to 1.6.  make puts every function statement of
 * src/sql/api/ in at the "@functions@" line below (src/sql/functions.awk),
 * so that a function's text is written once; this file holds only what a
 * CREATE OR REPLACE cannot do: catalog and data changes, and the functions
 * dropped or whose signature changed. */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION sharded_id UPDATE TO '1.6'" to load this file. \quit

-- Who retired a shard: a role that is not a superuser takes back only what
-- it retired.  Rows from before record the role running the update, so
-- that only a superuser takes those shards back.
-- Its comment is src/sql/api/shards.sql's, carried in at @functions@.
ALTER TABLE sharded_id.retired_shards ADD COLUMN retired_by name DEFAULT CURRENT_USER;

-- When a move's cleanup found the new copy the same schema as the old one,
-- which may then be dropped (its comment is moves.sql's).  A move of 1.5
-- that is still unfinished is checked when it is recovered.
ALTER TABLE sharded_id.moves ADD COLUMN copy_checked_at timestamptz;

-- 1.5's provisioning recipe granted EXECUTE ON ALL FUNCTIONS and ALL
-- PROCEDURES IN SCHEMA sharded_id, which 1.6 replaces with one grant
-- (sharded_id_provisioner).  Give every function of the extension the
-- privileges of a fresh install: revoke EXECUTE here from every grantee but
-- its owner and PUBLIC (CASCADE: also what they granted on with GRANT
-- OPTION), but pg_monitor's two that the install gives too, and the grants
-- of counter mode's next_id functions, which 1.5 too revoked from PUBLIC:
-- the column defaults of counter-mode shards call them as the writers they
-- were granted to.  The install's own REVOKE and GRANT statements, which
-- come with the functions below, then make PUBLIC's and
-- sharded_id_provisioner's what a fresh install gives.  This also takes
-- away explicit grants of route() and route_id(): 1.5 gave them to PUBLIC,
-- so such a grant came from the recipe, which gave the moves and the
-- router's administration with them; 1.6 wants them granted again to the
-- roles that call the router (the reference's upgrade notes).
DO $$
DECLARE
    r record;
    roles text;
BEGIN
    FOR r IN
        SELECT DISTINCT p.oid::regprocedure AS fn, p.prokind,
               pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) AS grantee
        FROM pg_catalog.pg_depend d
        JOIN pg_catalog.pg_proc p ON p.oid = d.objid
        CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
        WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
          AND d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
          AND d.refobjid = (SELECT e.oid FROM pg_catalog.pg_extension e WHERE e.extname = 'sharded_id')
          AND d.deptype = 'e'
          AND a.grantee <> 0 AND a.grantee <> p.proowner
          -- the install's own grants to pg_monitor (src/sql/api/monitor.sql),
          -- which 1.5 made too: kept, not revoked and granted again
          AND NOT (a.grantee = 'pg_monitor'::pg_catalog.regrole
                   AND p.oid IN ('sharded_id.generator_stats()'::pg_catalog.regprocedure,
                                 'sharded_id.generator_info()'::pg_catalog.regprocedure))
          -- counter mode's minting, which 1.5 too granted only to the
          -- writers that an owner named: a grant of it is an application's
          AND p.oid NOT IN ('sharded_id.next_id(integer)'::pg_catalog.regprocedure,
                            'sharded_id.next_id_in_layout(integer, text)'::pg_catalog.regprocedure,
                            'sharded_id.next_ids(integer, integer)'::pg_catalog.regprocedure,
                            'sharded_id.next_ids_in_layout(integer, integer, text)'::pg_catalog.regprocedure)
        ORDER BY 3, 1
    LOOP
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON %s %s FROM %s CASCADE',
                                  CASE WHEN r.prokind = 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
                                  r.fn, r.grantee);
        IF roles IS NULL OR pg_catalog.strpos(', ' || roles || ', ', ', ' || r.grantee || ', ') = 0 THEN
            roles := pg_catalog.concat_ws(', ', roles, r.grantee);
        END IF;
    END LOOP;
    IF roles IS NOT NULL THEN
        -- A WARNING: ALTER EXTENSION runs its script with client_min_messages
        -- at least warning, so a NOTICE would reach no one.
        RAISE WARNING 'revoked EXECUTE on functions of sharded_id from %', roles
            USING DETAIL = 'A fresh install of 1.6 grants them none of these functions; 1.5''s provisioning grants gave them internal and administrative ones.  Grants of next_id(integer) and its counter-mode variants are kept.',
                  HINT = 'Grant sharded_id_provisioner to the roles that provision shards, and EXECUTE on sharded_id.route and sharded_id.route_id to the roles that call the router.';
    END IF;
END
$$;

-- The provisioning role is made by sharded_id._provisioner_role(), which
-- the install runs too: its call comes with the functions below.

-- 1.5's provisioning recipe granted DML on the catalogs: since 1.6 only
-- their owner writes them (src/privs.c), so that no grant can undo a
-- retirement.  Reading stays open to everyone.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT DISTINCT c.oid::regclass AS rel, c.relkind,
               CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                    ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END AS grantee
        FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
        WHERE c.oid IN ('sharded_id.settings'::regclass, 'sharded_id.shards'::regclass,
                        'sharded_id.shard_tables'::regclass, 'sharded_id.retired_shards'::regclass,
                        'sharded_id.shard_tables_position_seq'::regclass)
          AND a.grantee <> c.relowner AND a.privilege_type <> 'SELECT'
    LOOP
        EXECUTE pg_catalog.format('REVOKE %s ON %s %s FROM %s',
                                  CASE WHEN r.relkind = 'S' THEN 'USAGE, UPDATE'
                                       ELSE 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER' END,
                                  CASE WHEN r.relkind = 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
                                  r.rel, r.grantee);
    END LOOP;
END
$$;

-- The journal of a move's steps is a function now, which the procedures
-- commit after (_move_journal_step).
DROP PROCEDURE sharded_id._move_journal(bigint, text);

CREATE OR REPLACE FUNCTION sharded_id._superuser_only(caller text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_superuser_only'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id._superuser_only(text) IS
'internal: refuse (42501) a caller that is not a superuser, whatever the grants on the internal function named caller';

CREATE OR REPLACE FUNCTION sharded_id.next_id(shard_id integer, seq regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass) IS
'new id for the shard, its low bits from nextval(seq); never repeats within the cluster';

CREATE OR REPLACE FUNCTION sharded_id.next_id(shard_id integer, seq regclass, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer, regclass, text) IS
'new id for the shard in the named layout, its low bits from nextval(seq); never repeats within the cluster';

CREATE OR REPLACE FUNCTION sharded_id.next_ids(shard_id integer, seq regclass, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, regclass, integer) IS
'reserve n new ids for the shard in one call (at most 1000000), for loaders';

CREATE OR REPLACE FUNCTION sharded_id.next_ids(shard_id integer, seq regclass, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, regclass, integer, text) IS
'reserve n new ids for the shard in the named layout in one call (at most 1000000), for loaders';

CREATE OR REPLACE FUNCTION sharded_id.next_id(shard_id integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id(integer) IS
'new id for the shard in counter mode (no sequence): strictly increasing per shard, never repeats within the cluster';

CREATE OR REPLACE FUNCTION sharded_id.next_id_in_layout(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_id'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.next_id_in_layout(integer, text) IS
'new id for the shard in counter mode, in the named layout';

CREATE OR REPLACE FUNCTION sharded_id.next_ids(shard_id integer, n integer)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids(integer, integer) IS
'reserve n new ids for the shard in counter mode in one call (at most 1000000), for loaders';

CREATE OR REPLACE FUNCTION sharded_id.next_ids_in_layout(shard_id integer, n integer, layout text)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'shid_next_counter_ids'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;

COMMENT ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) IS
'reserve n new ids for the shard in counter mode in the named layout, for loaders';

REVOKE EXECUTE ON FUNCTION sharded_id.next_id(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.next_id_in_layout(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.next_ids(integer, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.next_ids_in_layout(integer, integer, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.reset_ceiling()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_reset_ceiling'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_ceiling() IS
'superuser only: lower the durable clock ceiling and every shard''s high-water mark to the current time, never below a shard''s floor nor below an id already handed out at the clock''s pace; returns it';

REVOKE EXECUTE ON FUNCTION sharded_id.reset_ceiling() FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.raise_floor(shard_id integer, above_id bigint, layout text DEFAULT 'instagram',
                                       force boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_raise_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) IS
'every id minted on this server for the shard from now on is greater than above_id, also after a restart or a failover; refuses an id of another shard, and one more than sharded_id.max_clock_jump ahead of the clock unless force; returns the floor';

CREATE OR REPLACE FUNCTION sharded_id._check_floor(shard_id integer, above_id bigint, layout text, source text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_check_floor'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) IS
'internal: raise raise_floor''s error, naming source, unless raise_floor without force would accept above_id';

CREATE OR REPLACE FUNCTION sharded_id.lower_floor(shard_id integer, layout text DEFAULT 'instagram')
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_lower_floor'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.lower_floor(integer, text) IS
'superuser only, with a warning: remove a shard''s floor and bring its ids back to the clock, as after a floor raised over a wrong id; ids of the shard minted with later times may be minted again';

CREATE OR REPLACE FUNCTION sharded_id.floors(OUT layout text, OUT shard_id integer, OUT floor timestamptz, OUT retired boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_floors'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id.floors() IS
'what this server keeps about single shards, for every database: each floor, and whether the server gave the shard away';

CREATE OR REPLACE FUNCTION sharded_id.high_water(shard_id integer, layout text DEFAULT 'instagram')
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_high_water'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.high_water(integer, text) IS
'the largest id of the shard that this server may have minted: raise_floor on the server that takes the shard over';

CREATE OR REPLACE FUNCTION sharded_id._retire_shard(shard_id integer, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_retire_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._retire_shard(integer, text) IS
'internal: stop minting for the shard at once, on this server and in every database of it, durably (undone if the transaction aborts); returns its high-water mark';

CREATE OR REPLACE FUNCTION sharded_id._own_shard(shard_id integer, layout text)
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

CREATE OR REPLACE FUNCTION sharded_id.decode(id bigint,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.decode(bigint) IS
'creation time, shard and sequence field of an id';

CREATE OR REPLACE FUNCTION sharded_id.decode(id bigint, layout text,
                                  OUT created_at timestamptz,
                                  OUT shard_id integer,
                                  OUT seq_id integer)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_decode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.decode(bigint, text) IS
'creation time, shard and sequence field of an id of the named layout';

CREATE OR REPLACE FUNCTION sharded_id.encode(created_at timestamptz,
                                  shard_id integer,
                                  seq_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_encode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint) IS
'the id with these fields (time floored to the millisecond, seq_id % 1024); reserves nothing';

CREATE OR REPLACE FUNCTION sharded_id.encode(created_at timestamptz,
                                  shard_id integer,
                                  seq_id bigint,
                                  layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_encode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.encode(timestamptz, integer, bigint, text) IS
'the id of the named layout with these fields; reserves nothing';

CREATE OR REPLACE FUNCTION sharded_id.created_at(id bigint)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_created_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.created_at(bigint) IS
'creation time of an id, to the millisecond';

CREATE OR REPLACE FUNCTION sharded_id.created_at(id bigint, layout text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'shid_created_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.created_at(bigint, text) IS
'creation time of an id of the named layout, to the millisecond';

CREATE OR REPLACE FUNCTION sharded_id.shard_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_id(bigint) IS
'logical shard that owns an id';

CREATE OR REPLACE FUNCTION sharded_id.shard_id(id bigint, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_id(bigint, text) IS
'logical shard that owns an id of the named layout';

CREATE OR REPLACE FUNCTION sharded_id.seq_id(id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_seq_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.seq_id(bigint) IS
'sequence field of an id';

CREATE OR REPLACE FUNCTION sharded_id.seq_id(id bigint, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_seq_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.seq_id(bigint, text) IS
'sequence field of an id of the named layout';

CREATE OR REPLACE FUNCTION sharded_id.stripe_id(id bigint, stripes integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_stripe_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.stripe_id(bigint, integer) IS
'stripe of an id minted with sharded_id.stripes = stripes: which writer of the shard minted it';

CREATE OR REPLACE FUNCTION sharded_id.stripe_id(id bigint, stripes integer, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_stripe_id'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.stripe_id(bigint, integer, text) IS
'stripe of an id of the named layout minted with sharded_id.stripes = stripes';

CREATE OR REPLACE FUNCTION sharded_id.layouts(OUT name text,
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

CREATE OR REPLACE FUNCTION sharded_id.check_shard(shard_id integer, layout text)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_check_shard_sql'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.check_shard(integer, text) IS
'the shard id if the named layout has such a shard; next_id''s error otherwise (unknown layout, shard out of range)';

CREATE OR REPLACE FUNCTION sharded_id.min_id_at(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_min_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.min_id_at(timestamptz) IS
'lowest id any shard can have at the millisecond of ts';

CREATE OR REPLACE FUNCTION sharded_id.min_id_at(ts timestamptz, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_min_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.min_id_at(timestamptz, text) IS
'lowest id of the named layout any shard can have at the millisecond of ts';

CREATE OR REPLACE FUNCTION sharded_id.max_id_at(ts timestamptz)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_max_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.max_id_at(timestamptz) IS
'highest id any shard can have at the millisecond of ts';

CREATE OR REPLACE FUNCTION sharded_id.max_id_at(ts timestamptz, layout text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_max_id_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.max_id_at(timestamptz, text) IS
'highest id of the named layout any shard can have at the millisecond of ts';

CREATE OR REPLACE FUNCTION sharded_id.shard_for(key bigint, shard_count integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_for_int8'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_for(bigint, integer) IS
'logical shard of an integer key: key modulo shard_count, floored (negative keys too)';

CREATE OR REPLACE FUNCTION sharded_id.shard_for(key text, shard_count integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'shid_shard_for_text'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.shard_for(text, integer) IS
'logical shard of a text key: 64-bit FNV-1a of its bytes modulo shard_count';

CREATE OR REPLACE FUNCTION sharded_id.to_shortcode(id bigint)
RETURNS text
AS 'MODULE_PATHNAME', 'shid_to_shortcode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.to_shortcode(bigint) IS
'the id in URL-safe base 64 (digits A-Z a-z 0-9 - _)';

CREATE OR REPLACE FUNCTION sharded_id.from_shortcode(code text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_from_shortcode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id.from_shortcode(text) IS
'the id a shortcode stands for';

COMMENT ON COLUMN sharded_id.retired_shards.retired_by IS
'the role that retired the shard: a role that is not a superuser takes back only what it, or a role whose privileges it has, retired';

CREATE OR REPLACE FUNCTION sharded_id._provisioner_role()
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._provisioner_role');
    SELECT * INTO r FROM pg_catalog.pg_roles a WHERE a.rolname = 'sharded_id_provisioner';
    IF NOT FOUND THEN
        CREATE ROLE sharded_id_provisioner NOLOGIN;
    ELSIF r.rolcanlogin OR r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication
          OR r.rolbypassrls OR EXISTS (SELECT FROM pg_catalog.pg_auth_members m WHERE m.member = r.oid) THEN
        RAISE EXCEPTION 'role "sharded_id_provisioner" has more rights than provisioning needs'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'The role exists with LOGIN, SUPERUSER, CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS, or as a member of another role, and sharded_id would grant its members the provisioning functions.',
                  HINT = 'Drop the role, or make it NOLOGIN and a member of no role, then create the extension again.';
    END IF;
    COMMENT ON ROLE sharded_id_provisioner IS
        'sharded_id: its members provision shards, and retire, take back, raise the floor of and drop those whose schema they own';
    EXECUTE pg_catalog.format('GRANT CREATE ON DATABASE %I TO sharded_id_provisioner', pg_catalog.current_database());
END
$$;

COMMENT ON FUNCTION sharded_id._provisioner_role() IS
'internal: make the role sharded_id_provisioner, or take the one there if it has no more rights than provisioning needs, and let it create schemas in this database; run by the install and by every update';

REVOKE EXECUTE ON FUNCTION sharded_id._provisioner_role() FROM PUBLIC;

SELECT sharded_id._provisioner_role();

CREATE OR REPLACE FUNCTION sharded_id._catalog_retire(shard_id integer, layout text, high_water bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_retire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_retire(integer, text, bigint) IS
'internal: retire_shard''s catalog writes, for a superuser or a member of sharded_id_provisioner that owns the shard''s schema: out of shards, into retired_shards with its high-water mark and the role that retired it';

CREATE OR REPLACE FUNCTION sharded_id._catalog_own(shard_id integer, schema_name name, layout text, mode text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_own'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_own(integer, name, text, text) IS
'internal: create_shard''s first catalog write, for a superuser, or a member of sharded_id_provisioner in a new schema or one it owns, taking back only what it retired: into shards';

CREATE OR REPLACE FUNCTION sharded_id._catalog_unretire(shard_id integer, layout text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_unretire'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_unretire(integer, text) IS
'internal: create_shard''s last catalog write, after _own_shard, for a superuser or the caller _catalog_own allowed: out of retired_shards';

CREATE OR REPLACE FUNCTION sharded_id._catalog_add_table(template regclass, table_name name, id_column name)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_add_table'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_add_table(regclass, name, name) IS
'internal: add_table''s catalog write, for a superuser or a member of sharded_id_provisioner that owns the template';

CREATE OR REPLACE FUNCTION sharded_id.current_settings(OUT schema_prefix text,
                                            OUT pad_width integer,
                                            OUT layout text,
                                            OUT mode text)
RETURNS record
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.schema_prefix, s.pad_width, s.layout, s.mode
    FROM sharded_id.settings s
    UNION ALL
    SELECT 'shard_', 4, 'instagram', 'seed'
    WHERE NOT EXISTS (SELECT 1 FROM sharded_id.settings)
$$;

COMMENT ON FUNCTION sharded_id.current_settings() IS
'the provisioning settings in force (sharded_id.settings, or the defaults)';

CREATE OR REPLACE FUNCTION sharded_id.configure(schema_prefix text DEFAULT NULL,
                                     pad_width integer DEFAULT NULL,
                                     layout text DEFAULT NULL,
                                     mode text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cur record;
BEGIN
    SELECT * INTO cur FROM sharded_id.current_settings();
    -- Names are limited in bytes (63), not characters: leave room for the
    -- shard number.
    IF octet_length(schema_prefix) > 50 OR schema_prefix = '' THEN
        RAISE EXCEPTION 'schema prefix "%" is out of range', left(schema_prefix, 64)
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('Schema prefixes must be between 1 and 50 bytes long; this one is %s bytes.',
                                  octet_length(schema_prefix));
    END IF;
    IF schema_prefix LIKE 'pg\_%' THEN
        RAISE EXCEPTION 'schema prefix "%" is reserved', schema_prefix
            USING ERRCODE = 'reserved_name',
                  DETAIL = 'PostgreSQL reserves names beginning with "pg_" for system schemas, so no shard schema could be created with it.';
    END IF;
    IF layout IS NOT NULL AND layout IS DISTINCT FROM cur.layout THEN
        -- An unknown layout fails here, with the error next_id gives.
        PERFORM sharded_id.check_shard(0, configure.layout);
        IF EXISTS (SELECT 1 FROM sharded_id.shards) THEN
            RAISE EXCEPTION 'cannot change the layout of existing shards'
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Shards use layout "%s", and their ids and column defaults depend on it.', cur.layout);
        END IF;
    END IF;
    IF mode IS NOT NULL AND mode IS DISTINCT FROM cur.mode THEN
        IF mode NOT IN ('seed', 'counter') THEN
            RAISE EXCEPTION 'unknown id mode "%"', mode
                USING ERRCODE = 'invalid_parameter_value',
                      HINT = 'The modes are seed and counter.';
        END IF;
        IF EXISTS (SELECT 1 FROM sharded_id.shards) THEN
            RAISE EXCEPTION 'cannot change the mode of existing shards'
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('Shards mint ids in %s mode, and their column defaults depend on it.', cur.mode);
        END IF;
    END IF;
    INSERT INTO sharded_id.settings AS s (singleton, schema_prefix, pad_width, layout, mode)
    VALUES (true,
            coalesce(configure.schema_prefix, cur.schema_prefix),
            coalesce(configure.pad_width, cur.pad_width),
            coalesce(configure.layout, cur.layout),
            coalesce(configure.mode, cur.mode))
    ON CONFLICT (singleton) DO UPDATE
        SET schema_prefix = excluded.schema_prefix,
            pad_width = excluded.pad_width,
            layout = excluded.layout,
            mode = excluded.mode;
END
$$;

COMMENT ON FUNCTION sharded_id.configure(text, integer, text, text) IS
'set the schema name prefix, its zero padding, the layout and the mode (seed or counter) of new shards';

CREATE OR REPLACE FUNCTION sharded_id.shard_schema(shard_id integer)
RETURNS name
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(
        (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = shard_schema.shard_id),
        (SELECT (c.schema_prefix
                 || lpad(sharded_id.check_shard(shard_schema.shard_id, c.layout)::text,
                         greatest(c.pad_width, length(shard_schema.shard_id::text)), '0'))::name
         FROM sharded_id.current_settings() c))
$$;

COMMENT ON FUNCTION sharded_id.shard_schema(integer) IS
'schema name of a shard: its catalog entry, or the name the settings give it';

CREATE OR REPLACE FUNCTION sharded_id._next_id_call(shard_id integer, seq regclass, layout text)
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN seq IS NOT NULL THEN
            format('sharded_id.next_id(%s, %L::pg_catalog.regclass%s)', shard_id, seq::text,
                   CASE WHEN layout = 'instagram' THEN '' ELSE format(', %L', layout) END)
        WHEN layout = 'instagram' THEN format('sharded_id.next_id(%s)', shard_id)
        ELSE format('sharded_id.next_id_in_layout(%s, %L)', shard_id, layout)
    END
$$;

COMMENT ON FUNCTION sharded_id._next_id_call(integer, regclass, text) IS
'internal: the SQL text of a shard''s next_id call (seq NULL: counter mode)';

CREATE OR REPLACE FUNCTION sharded_id._relation_extras_ddl(src regclass, dst text)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    r record;
    keyword text;
    -- The same relation again (schema_ddl), with its grants made by their
    -- grantors; or a shard's copy of a template, whose grantors need not
    -- reach the shard's schema: there the owner makes every grant.
    exact boolean := dst = src::text;
BEGIN
    SELECT c.oid, c.relkind, c.relrowsecurity, c.relforcerowsecurity, c.relowner, c.relacl
    INTO rel FROM pg_class c WHERE c.oid = src;
    keyword := CASE rel.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END;
    FOR r IN
        SELECT g.tgname, g.tgenabled, g.tgparentid, pg_get_triggerdef(g.oid) AS def,
               (SELECT p.tgenabled FROM pg_trigger p WHERE p.oid = g.tgparentid) AS parent_enabled,
               obj_description(g.oid, 'pg_trigger') AS description
        FROM pg_trigger g
        WHERE g.tgrelid = src AND NOT g.tgisinternal
        ORDER BY g.tgname
    LOOP
        -- A partition's clone of its parent's trigger comes with the
        -- parent's; only its state, where it differs, is its own.
        IF r.tgparentid = 0 THEN
            RETURN NEXT regexp_replace(r.def, ' ON (ONLY )?' || regexp_replace(src::text, '([^A-Za-z0-9_])', '\\\1', 'g') || ' ',
                                       ' ON ' || dst || ' ');
        END IF;
        IF (r.tgparentid = 0 AND r.tgenabled <> 'O') OR (r.tgparentid <> 0 AND r.tgenabled <> r.parent_enabled) THEN
            RETURN NEXT format('ALTER TABLE %s %s TRIGGER %I', dst,
                               CASE r.tgenabled WHEN 'D' THEN 'DISABLE' WHEN 'R' THEN 'ENABLE REPLICA'
                                                WHEN 'A' THEN 'ENABLE ALWAYS' ELSE 'ENABLE' END, r.tgname);
        END IF;
        IF r.tgparentid = 0 AND r.description IS NOT NULL THEN
            RETURN NEXT format('COMMENT ON TRIGGER %I ON %s IS %L', r.tgname, dst, r.description);
        END IF;
    END LOOP;
    IF rel.relrowsecurity THEN
        RETURN NEXT format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', dst);
    END IF;
    IF rel.relforcerowsecurity THEN
        RETURN NEXT format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', dst);
    END IF;
    FOR r IN
        SELECT p.polname, p.polpermissive, p.polcmd,
               CASE WHEN p.polroles = '{0}' THEN 'PUBLIC'
                    ELSE (SELECT string_agg(CASE WHEN g = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(g)) END, ', '
                                            ORDER BY pg_get_userbyid(g))
                          FROM unnest(p.polroles) g) END AS roles,
               pg_get_expr(p.polqual, p.polrelid) AS qual, pg_get_expr(p.polwithcheck, p.polrelid) AS chk,
               obj_description(p.oid, 'pg_policy') AS description
        FROM pg_policy p WHERE p.polrelid = src ORDER BY p.polname
    LOOP
        RETURN NEXT format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', r.polname, dst,
                           CASE WHEN r.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                           CASE r.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'
                                         WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                           r.roles, ' USING (' || r.qual || ')', ' WITH CHECK (' || r.chk || ')');
        IF r.description IS NOT NULL THEN
            RETURN NEXT format('COMMENT ON POLICY %I ON %s IS %L', r.polname, dst, r.description);
        END IF;
    END LOOP;
    -- A sequence owned by a column has its table's owner, and follows it.
    IF NOT (rel.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = src
                                          AND d.refclassid = 'pg_class'::regclass AND d.deptype = 'a')) THEN
        RETURN NEXT format('ALTER %s %s OWNER TO %I', keyword, dst, pg_get_userbyid(rel.relowner));
    END IF;
    RETURN QUERY SELECT sharded_id._acl_ddl(CASE WHEN rel.relkind = 'S' THEN 'SEQUENCE ' ELSE 'TABLE ' END || dst,
                                            rel.relacl, rel.relowner, as_grantor => exact);
    FOR r IN
        SELECT att.attname, att.attacl FROM pg_attribute att
        WHERE att.attrelid = src AND att.attnum > 0 AND NOT att.attisdropped AND att.attacl IS NOT NULL
        ORDER BY att.attnum
    LOOP
        RETURN QUERY SELECT sharded_id._acl_ddl('TABLE ' || dst, r.attacl, rel.relowner, quote_ident(r.attname), exact);
    END LOOP;
    FOR r IN
        SELECT d.objsubid, d.description, att.attname FROM pg_description d
        LEFT JOIN pg_attribute att ON att.attrelid = d.objoid AND att.attnum = d.objsubid
        WHERE d.classoid = 'pg_class'::regclass AND d.objoid = src ORDER BY d.objsubid
    LOOP
        IF r.objsubid = 0 THEN
            RETURN NEXT format('COMMENT ON %s %s IS %L', keyword, dst, r.description);
        ELSE
            RETURN NEXT format('COMMENT ON COLUMN %s.%I IS %L', dst, r.attname, r.description);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._relation_extras_ddl(regclass, text) IS
'internal: statements giving a copy of a relation its triggers and their state, row security, policies, owner, privileges and comments';

CREATE OR REPLACE FUNCTION sharded_id._copy_table(t sharded_id.shard_tables, shard_id integer,
                                       schema name, seq regclass, layout text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    template regclass;
    target text := format('%I.%I', schema, t.table_name);
    part record;
    stmt text;
BEGIN
    IF to_regclass(target) IS NOT NULL THEN
        IF (SELECT c.relkind FROM pg_class c WHERE c.oid = to_regclass(target)) NOT IN ('r', 'p') THEN
            RAISE EXCEPTION '"%" is not a table', target
                USING ERRCODE = 'wrong_object_type',
                      DETAIL = format('Shard %s''s copy of sharded table "%s" must be an ordinary or partitioned table.',
                                      shard_id, t.table_name),
                      HINT = 'Drop it, or make it an ordinary table again, before the shard is provisioned.';
        END IF;
        -- An adopted copy (restored from a dump, or left behind by DROP
        -- EXTENSION ... CASCADE, which drops the id defaults with next_id)
        -- gets its id default back if it has none.
        IF NOT EXISTS (SELECT 1 FROM pg_attrdef d
                       JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                       WHERE d.adrelid = to_regclass(target) AND a.attname = t.id_column) THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s',
                           target, t.id_column, sharded_id._next_id_call(shard_id, seq, layout));
        END IF;
        RETURN false;
    END IF;
    template := to_regclass(format('%I.%I', t.template_schema, t.template_table));
    IF template IS NULL THEN
        RAISE EXCEPTION 'template table %.% of sharded table "%" does not exist',
                        quote_ident(t.template_schema), quote_ident(t.template_table), t.table_name
            USING ERRCODE = 'undefined_table';
    END IF;
    -- A partitioned template gives a partitioned copy, with a copy of each
    -- of its partitions; one level only, refused before anything is made.
    IF EXISTS (SELECT FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
               WHERE i.inhparent = template AND c.relkind = 'p') THEN
        RAISE EXCEPTION 'template table % has partitions that are partitioned themselves', template
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Shard copies keep one level of partitioning.',
                  HINT = 'Partition the template once, or attach the sub-partitions to each shard''s copy yourself.';
    END IF;
    EXECUTE format('CREATE TABLE %s (LIKE %s INCLUDING ALL)%s', target, template,
                   CASE WHEN (SELECT relkind FROM pg_class WHERE oid = template) = 'p'
                        THEN ' PARTITION BY ' || pg_get_partkeydef(template) ELSE '' END);
    FOR part IN
        SELECT c.oid, c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = template ORDER BY c.relname
    LOOP
        EXECUTE format('CREATE TABLE %I.%I PARTITION OF %s %s', schema, part.relname, target, part.bound);
        FOR stmt IN SELECT sharded_id._relation_extras_ddl(part.oid, format('%I.%I', schema, part.relname)) LOOP
            EXECUTE stmt;
        END LOOP;
    END LOOP;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s',
                   target, t.id_column, sharded_id._next_id_call(shard_id, seq, layout));
    -- Triggers, row security and its policies, grants, owner and comments,
    -- which LIKE leaves behind.
    FOR stmt IN SELECT sharded_id._relation_extras_ddl(template, target) LOOP
        EXECUTE stmt;
    END LOOP;
    RETURN true;
END
$$;

COMMENT ON FUNCTION sharded_id._copy_table(sharded_id.shard_tables, integer, name, regclass, text) IS
'internal: copy one template table into a shard schema';

CREATE OR REPLACE FUNCTION sharded_id._copy_foreign_keys(t sharded_id.shard_tables, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    template regclass := to_regclass(format('%I.%I', t.template_schema, t.template_table));
    target regclass := to_regclass(format('%I.%I', schema, t.table_name));
    fk record;
    def text;
    referenced regclass;
BEGIN
    FOR fk IN
        SELECT c.conname, pg_get_constraintdef(c.oid) AS def, NOT c.convalidated AS not_valid,
               c.confrelid, c.confrelid::regclass::text AS referenced, st.table_name AS ref_sharded
        FROM pg_constraint c
        JOIN pg_class rc ON rc.oid = c.confrelid
        JOIN pg_namespace rn ON rn.oid = rc.relnamespace
        LEFT JOIN sharded_id.shard_tables st
               ON st.template_schema = rn.nspname AND st.template_table = rc.relname
        WHERE c.conrelid = template AND c.contype = 'f'
        ORDER BY c.conname
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_constraint
                              WHERE conrelid = target AND conname = fk.conname);
        def := fk.def;
        IF fk.ref_sharded IS NOT NULL THEN
            -- Both names are printed under this function's search_path.
            def := replace(def, format(') REFERENCES %s(', fk.referenced),
                           format(') REFERENCES %I.%I(', schema, fk.ref_sharded));
        END IF;
        referenced := CASE WHEN fk.ref_sharded IS NOT NULL
                           THEN to_regclass(format('%I.%I', schema, fk.ref_sharded)) ELSE fk.confrelid END;
        -- Checking the key plans a read of both tables, and planning
        -- evaluates their index expressions: with the caller's rights only
        -- when each table's owner could act as the caller anyway, else as
        -- the table's owner (sharded_id._validate_as_owner), since the
        -- table may be one that its schema's owner made.
        IF fk.not_valid OR NOT EXISTS (
               SELECT FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
               WHERE c.oid IN (target, referenced)
                 AND NOT (r.rolsuper OR pg_has_role(r.oid, current_user, 'USAGE'))) THEN
            EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', target, fk.conname, def);
        ELSIF (SELECT c.relkind FROM pg_class c WHERE c.oid = target) = 'p' THEN
            -- A partitioned table takes no NOT VALID foreign key before
            -- PostgreSQL 18.
            RAISE EXCEPTION 'cannot check foreign key "%" of partitioned table % as its owner', fk.conname, target
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('%s belongs to %s, and %s to %s: checking the key runs their code with the rights of whoever adds it.',
                                      target, (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid = target),
                                      referenced, (SELECT c.relowner::regrole FROM pg_class c WHERE c.oid = referenced)),
                      HINT = 'Add the key as the table''s owner, then run create_shard again.';
        ELSE
            EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s NOT VALID', target, fk.conname, def);
            PERFORM sharded_id._validate_as_owner(target, fk.conname);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._copy_foreign_keys(sharded_id.shard_tables, name) IS
'internal: recreate a template table''s foreign keys in a shard schema';

CREATE OR REPLACE FUNCTION sharded_id._check_adoptable(schema name)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema);
    templates text;
    tables text[];
BEGIN
    IF schema IN ('public', 'sharded_id', 'information_schema') OR schema LIKE 'pg\_%' THEN
        RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'System schemas, public and sharded_id never hold shards.';
    END IF;
    SELECT string_agg(format('%I.%I', st.template_schema, st.template_table), ', ' ORDER BY st.position)
    INTO templates FROM sharded_id.shard_tables st WHERE st.template_schema = schema;
    IF templates IS NOT NULL THEN
        RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('It holds the template tables %s, which a shard only copies.', templates);
    END IF;
    IF nsp IS NULL
       OR EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = nsp AND p.proname = 'next_id' AND p.pronargs = 0)
       OR EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = nsp AND c.relname = 'id_seq' AND c.relkind = 'S') THEN
        RETURN;
    END IF;
    SELECT array_agg(c.relname::text ORDER BY c.relname) INTO tables
    FROM pg_class c WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'v', 'm', 'f');
    IF tables IS NULL AND NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = nsp) THEN
        RETURN;
    END IF;
    IF tables IS NOT NULL AND EXISTS (SELECT 1 FROM sharded_id.shard_tables)
       AND tables <@ (SELECT array_agg(st.table_name::text) FROM sharded_id.shard_tables st) THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'schema "%" cannot hold a shard', schema
        USING ERRCODE = 'invalid_parameter_value',
              DETAIL = format('It holds %s but neither a next_id() function nor an id_seq sequence, so create_shard did not make it.',
                              coalesce(array_to_string(tables, ', '), 'functions')),
              HINT = 'Adopt a schema made by create_shard or restored from one, or an empty one.';
END
$$;

COMMENT ON FUNCTION sharded_id._check_adoptable(name) IS
'internal: refuse a schema that is not shaped like a shard before a new shard adopts it';

CREATE OR REPLACE FUNCTION sharded_id._max_id(rel regclass, id_column name)
RETURNS bigint
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_max_id';

COMMENT ON FUNCTION sharded_id._max_id(regclass, name) IS
'internal: the largest value of a table''s bigint column, read as the table''s owner in a security-restricted operation with a fixed search_path; refuses what is not a table';

CREATE OR REPLACE FUNCTION sharded_id._table_fingerprint(rel regclass)
RETURNS text
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_table_fingerprint';

COMMENT ON FUNCTION sharded_id._table_fingerprint(regclass) IS
'internal: a table''s row count and the sum of its rows'' hashes, read as the table''s owner in a security-restricted operation, to compare two copies';

CREATE OR REPLACE FUNCTION sharded_id._table_rows(rel regclass)
RETURNS SETOF text
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_table_rows';

COMMENT ON FUNCTION sharded_id._table_rows(regclass) IS
'internal: every row of a table as text, read as the table''s owner in a security-restricted operation, for a move''s copy';

CREATE OR REPLACE FUNCTION sharded_id._insert_as_owner(rel regclass, rows text[])
RETURNS bigint
LANGUAGE c VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_insert_as_owner';

COMMENT ON FUNCTION sharded_id._insert_as_owner(regclass, text[]) IS
'internal: inserts rows given as text into a table as the table''s owner in a security-restricted operation, for a move''s dump copy; returns their number';

CREATE OR REPLACE FUNCTION sharded_id._validate_as_owner(rel regclass, constraint_name name)
RETURNS void
LANGUAGE c VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_validate_as_owner';

COMMENT ON FUNCTION sharded_id._validate_as_owner(regclass, name) IS
'internal: validate a table''s foreign key as the table''s owner in a security-restricted operation with a fixed search_path; refuses a referenced table of another owner';

CREATE OR REPLACE FUNCTION sharded_id._check_schema_shard(shard_id integer, schema name)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema);
    holder integer := (SELECT s.shard_id FROM sharded_id.shards s WHERE s.schema_name = schema);
    other record;
BEGIN
    IF holder IS DISTINCT FROM shard_id AND holder IS NOT NULL THEN
        RAISE EXCEPTION 'schema "%" belongs to shard %', schema, holder
            USING ERRCODE = 'duplicate_schema',
                  DETAIL = format('Shard %s of this database''s catalog is in schema "%s".', holder, schema),
                  HINT = 'Give the new shard a schema of its own.';
    END IF;
    SELECT x.shard, x.what INTO other FROM (
        SELECT (regexp_match(pg_get_functiondef(p.oid), 'sharded_id\.next_id(?:_in_layout)?\((\d+)'))[1]::integer AS shard,
               format('%I.next_id()', schema) AS what
        FROM pg_proc p WHERE p.pronamespace = nsp AND p.proname = 'next_id' AND p.pronargs = 0 AND p.prokind = 'f'
        UNION ALL
        SELECT (regexp_match(pg_get_expr(d.adbin, d.adrelid), 'sharded_id\.next_id(?:_in_layout)?\((\d+)'))[1]::integer,
               format('the default of %s.%I', c.oid::regclass, a.attname)
        FROM pg_attrdef d
        JOIN pg_class c ON c.oid = d.adrelid
        JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        WHERE c.relnamespace = nsp
    ) x
    WHERE x.shard IS DISTINCT FROM shard_id AND x.shard IS NOT NULL
    ORDER BY x.what LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'schema "%" belongs to shard %', schema, other.shard
            USING ERRCODE = 'duplicate_schema',
                  DETAIL = format('%s mints ids of shard %s%s, not of shard %s.', other.what, other.shard,
                                  CASE WHEN EXISTS (SELECT FROM sharded_id.retired_shards r WHERE r.shard_id = other.shard)
                                       THEN ', which this server retired' ELSE '' END, shard_id),
                  HINT = format('Take shard %s back with sharded_id.create_shard(%s, %L), or give the new shard a schema of its own.',
                                other.shard, other.shard, schema);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._check_schema_shard(integer, name) IS
'internal: refuse a schema that belongs to another shard (in the catalog, or minting its ids) before a new shard adopts it';

CREATE OR REPLACE FUNCTION sharded_id.shard_max_id(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql STABLE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name := (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = shard_max_id.shard_id);
    t sharded_id.shard_tables;
    rel regclass;
    top_id bigint;
BEGIN
    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        rel := to_regclass(format('%I.%I', schema, t.table_name));
        CONTINUE WHEN rel IS NULL;
        top_id := greatest(top_id, sharded_id._max_id(rel, t.id_column));
    END LOOP;
    RETURN top_id;
END
$$;

COMMENT ON FUNCTION sharded_id.shard_max_id(integer) IS
'the largest id in a shard''s copies of the template tables, or NULL';

CREATE OR REPLACE FUNCTION sharded_id._check_floors(shard_id integer, schema_name name, layout text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t sharded_id.shard_tables;
    rel regclass;
    table_top bigint;
BEGIN
    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        rel := to_regclass(format('%I.%I', schema_name, t.table_name));
        CONTINUE WHEN rel IS NULL;
        table_top := sharded_id._max_id(rel, t.id_column);
        IF table_top >= 0 THEN
            PERFORM sharded_id._check_floor(shard_id, table_top, layout, format('table %s', rel));
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._check_floors(integer, name, text) IS
'internal: raise raise_floor''s error, naming the table, unless the largest id of each of a shard''s tables is one its floor may be raised over';

CREATE OR REPLACE FUNCTION sharded_id.raise_floors()
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard record;
    top_id bigint;
    raised integer := 0;
BEGIN
    FOR shard IN SELECT * FROM sharded_id.shards ORDER BY shard_id LOOP
        PERFORM sharded_id._check_floors(shard.shard_id, shard.schema_name, shard.layout);
    END LOOP;
    FOR shard IN SELECT * FROM sharded_id.shards ORDER BY shard_id LOOP
        top_id := sharded_id.shard_max_id(shard.shard_id);
        IF top_id >= 0 THEN
            PERFORM sharded_id.raise_floor(shard.shard_id, top_id, shard.layout);
            raised := raised + 1;
        END IF;
    END LOOP;
    RETURN raised;
END
$$;

COMMENT ON FUNCTION sharded_id.raise_floors() IS
'raise the floor of every shard of the catalog over the largest id its tables hold, as after a restore on another server, once every shard''s ids pass raise_floor''s checks; returns how many shards hold ids';

CREATE OR REPLACE FUNCTION sharded_id._provision(shard_id integer, schema_name name)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard record;
    cfg record;
    seq regclass;
    t sharded_id.shard_tables;
    adopted boolean := false;
    top_id bigint;
BEGIN
    SELECT * INTO cfg FROM sharded_id.current_settings();
    SELECT * INTO shard FROM sharded_id.shards s WHERE s.shard_id = _provision.shard_id;
    IF FOUND AND shard.schema_name <> coalesce(_provision.schema_name, shard.schema_name) THEN
        RAISE EXCEPTION 'shard % already exists in schema "%"', shard_id, shard.schema_name
            USING ERRCODE = 'duplicate_object';
    ELSIF FOUND AND EXISTS (SELECT 1 FROM sharded_id.floors() f
                            WHERE f.shard_id = shard.shard_id AND f.layout = shard.layout AND f.retired) THEN
        -- In this database's catalog, but the server gave it away (from
        -- another database, or before an update to 1.5): take it back here,
        -- with its floor over its rows.
        PERFORM sharded_id._check_floors(shard.shard_id, shard.schema_name, shard.layout);
        PERFORM sharded_id._catalog_own(shard.shard_id, shard.schema_name, shard.layout, shard.mode);
        PERFORM sharded_id._own_shard(shard.shard_id, shard.layout);
        PERFORM sharded_id._catalog_unretire(shard.shard_id, shard.layout);
        adopted := true;
    ELSIF NOT FOUND THEN
        PERFORM sharded_id.check_shard(shard_id, cfg.layout);
        PERFORM sharded_id._check_schema_shard(shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)));
        PERFORM sharded_id._check_adoptable(coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)));
        -- A schema with rows raises the floor over them below: check first.
        PERFORM sharded_id._check_floors(shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)), cfg.layout);
        -- Into the catalog, and out of retired_shards: this server mints for
        -- the shard again, from the commit on.  Each step checks the caller.
        -- The take-back reads the catalog's retirement before it leaves
        -- retired_shards, if the server never decided the shard's owner, so
        -- that a rollback keeps it.
        PERFORM sharded_id._catalog_own(shard_id, coalesce(_provision.schema_name, sharded_id.shard_schema(shard_id)),
                                        cfg.layout, cfg.mode);
        SELECT * INTO shard FROM sharded_id.shards s WHERE s.shard_id = _provision.shard_id;
        PERFORM sharded_id._own_shard(shard.shard_id, shard.layout);
        PERFORM sharded_id._catalog_unretire(shard.shard_id, shard.layout);
        adopted := true;
    END IF;

    EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', shard.schema_name);
    -- Seed mode takes the sequence fields from the shard's id_seq; counter
    -- mode needs none.
    IF shard.mode = 'seed' THEN
        EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %I.id_seq', shard.schema_name);
        seq := format('%I.id_seq', shard.schema_name)::regclass;
        IF (SELECT relkind FROM pg_class WHERE oid = seq) <> 'S' THEN
            RAISE EXCEPTION '"%" is not a sequence', seq
                USING ERRCODE = 'wrong_object_type',
                      DETAIL = format('Shard %s takes the sequence fields of its ids from %s.', shard.shard_id, seq);
        END IF;
        EXECUTE format('COMMENT ON SEQUENCE %s IS %L', seq,
                       format('sequence fields of the ids of shard %s', shard.shard_id));
    END IF;

    -- The zero-argument next_id() of the seed, with a SQL-standard body bound
    -- at creation, which the planner inlines.
    IF to_regprocedure(format('%I.next_id()', shard.schema_name)) IS NULL THEN
        EXECUTE format('CREATE FUNCTION %I.next_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE '
                       'BEGIN ATOMIC SELECT %s; END',
                       shard.schema_name, sharded_id._next_id_call(shard.shard_id, seq, shard.layout));
        EXECUTE format('COMMENT ON FUNCTION %I.next_id() IS %L', shard.schema_name,
                       format('new id for shard %s', shard.shard_id));
    END IF;

    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        PERFORM sharded_id._copy_table(t, shard.shard_id, shard.schema_name, seq, shard.layout);
    END LOOP;
    FOR t IN SELECT * FROM sharded_id.shard_tables ORDER BY position LOOP
        PERFORM sharded_id._copy_foreign_keys(t, shard.schema_name);
    END LOOP;

    -- A schema adopted with rows (a move, a restore) holds ids that another
    -- server minted, maybe with a clock ahead of this one: new ids go above
    -- the largest.
    IF adopted THEN
        top_id := sharded_id.shard_max_id(shard.shard_id);
        IF top_id >= 0 THEN
            PERFORM sharded_id.raise_floor(shard.shard_id, top_id, shard.layout);
        END IF;
    END IF;
    RETURN shard.schema_name;
END
$$;

COMMENT ON FUNCTION sharded_id._provision(integer, name) IS
'internal: create whatever a shard schema is missing';

CREATE OR REPLACE FUNCTION sharded_id.create_shard(shard_id integer, schema_name name DEFAULT NULL)
RETURNS name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF shard_id IS NULL THEN
        RAISE EXCEPTION 'shard id must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF schema_name = '' THEN
        RAISE EXCEPTION 'schema name of shard % must not be empty', shard_id
            USING ERRCODE = 'invalid_name',
                  HINT = 'Pass NULL, or leave the name out, for the name the settings give the shard.';
    END IF;
    RETURN sharded_id._provision(shard_id, schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id.create_shard(integer, name) IS
'create the schema of a logical shard (named by the settings, or schema_name) with its sequence (seed mode), next_id() and a copy of every template table; creates only what is missing, so it also adopts a schema restored from a dump';

CREATE OR REPLACE FUNCTION sharded_id.create_shards(first_shard integer, last_shard integer)
RETURNS SETOF name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF first_shard > last_shard THEN
        RAISE EXCEPTION 'first shard % is after last shard %', first_shard, last_shard
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    FOR shard IN first_shard .. last_shard LOOP
        RETURN NEXT sharded_id._provision(shard, NULL);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id.create_shards(integer, integer) IS
'create_shard for every shard from first_shard to last_shard, all or nothing, in one transaction (for thousands, CALL provision_shards)';

CREATE OR REPLACE PROCEDURE sharded_id.provision_shards(first_shard integer, last_shard integer,
                                             batch_size integer DEFAULT 64)
LANGUAGE plpgsql
AS $$
DECLARE
    batch_start bigint := first_shard;
    batch_end bigint;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF first_shard IS NULL OR last_shard IS NULL OR batch_size IS NULL THEN
        RAISE EXCEPTION 'shard range and batch size must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF first_shard > last_shard THEN
        RAISE EXCEPTION 'first shard % is after last shard %', first_shard, last_shard
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch size % is out of range', batch_size
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A batch holds at least one shard.';
    END IF;
    WHILE batch_start <= last_shard LOOP
        batch_end := least(last_shard, batch_start + batch_size - 1);
        PERFORM sharded_id._provision(s::integer, NULL) FROM generate_series(batch_start, batch_end) s;
        RAISE NOTICE 'shards % to % provisioned (% to %)', batch_start, batch_end, first_shard, last_shard;
        COMMIT;
        PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
        batch_start := batch_end + 1;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE sharded_id.provision_shards(integer, integer, integer) IS
'create_shard for every shard from first_shard to last_shard, committing every batch_size shards so that any number fits a default lock table; resumable; CALL it outside a transaction block';

CREATE OR REPLACE FUNCTION sharded_id.retire_shard(shard_id integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard record;
    mark bigint;
BEGIN
    SELECT * INTO shard FROM sharded_id.shards s WHERE s.shard_id = retire_shard.shard_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard % does not exist', shard_id
            USING ERRCODE = 'undefined_object';
    END IF;
    -- Both check the caller against the catalog row, before it goes.
    mark := sharded_id._retire_shard(shard.shard_id, shard.layout);
    PERFORM sharded_id._catalog_retire(shard.shard_id, shard.layout, mark);
    RETURN mark;
END
$$;

COMMENT ON FUNCTION sharded_id.retire_shard(integer) IS
'give a logical shard away: out of the catalog, and next_id refuses it here until create_shard takes it back; keeps the schema; returns the shard''s high-water mark for raise_floor on its new server';

CREATE OR REPLACE FUNCTION sharded_id.drop_shard(shard_id integer)
RETURNS name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name := (SELECT s.schema_name FROM sharded_id.shards s WHERE s.shard_id = drop_shard.shard_id);
BEGIN
    PERFORM sharded_id.retire_shard(shard_id);
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', schema);
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id.drop_shard(integer) IS
'drop a logical shard: its schema with all its tables and rows, and its catalog entry; next_id refuses it here until create_shard takes it back';

CREATE OR REPLACE FUNCTION sharded_id.add_table(template regclass, id_column name DEFAULT 'id')
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    t sharded_id.shard_tables;
    shard record;
    copies integer := 0;
BEGIN
    SELECT c.relname, n.nspname, c.relkind INTO rel
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = template;
    IF rel.relkind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', template
            USING ERRCODE = 'wrong_object_type';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_attribute a
                   WHERE a.attrelid = template AND a.attname = id_column
                     AND a.atttypid = 'pg_catalog.int8'::regtype AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'column "%" of "%" is not a bigint column', id_column, template
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'The id column of a sharded table must be of type bigint.';
    END IF;
    IF EXISTS (SELECT 1 FROM sharded_id.shards s WHERE s.schema_name = rel.nspname) THEN
        RAISE EXCEPTION 'template table "%" is inside a shard schema', template
            USING ERRCODE = 'invalid_parameter_value';
    END IF;

    SELECT * INTO t FROM sharded_id.shard_tables st WHERE st.table_name = rel.relname;
    IF FOUND AND (t.template_schema, t.template_table) <> (rel.nspname, rel.relname) THEN
        RAISE EXCEPTION 'a sharded table named "%" already exists', rel.relname
            USING ERRCODE = 'duplicate_table',
                  DETAIL = format('Its template is %I.%I.', t.template_schema, t.template_table);
    ELSIF NOT FOUND THEN
        PERFORM sharded_id._catalog_add_table(template, rel.relname, id_column);
        SELECT * INTO t FROM sharded_id.shard_tables st
        WHERE st.table_name = rel.relname;
    END IF;

    FOR shard IN SELECT * FROM sharded_id.shards ORDER BY shard_id LOOP
        IF sharded_id._copy_table(t, shard.shard_id, shard.schema_name,
                                  CASE WHEN shard.mode = 'seed' THEN format('%I.id_seq', shard.schema_name)::regclass END,
                                  shard.layout) THEN
            copies := copies + 1;
        END IF;
        PERFORM sharded_id._copy_foreign_keys(t, shard.schema_name);
    END LOOP;
    RETURN copies;
END
$$;

COMMENT ON FUNCTION sharded_id.add_table(regclass, name) IS
'make a table the template of a sharded table: every shard, existing or new, gets a copy; returns the copies made';

CREATE OR REPLACE FUNCTION sharded_id.adopt_table(tbl regclass, shard_id integer, id_column name DEFAULT 'id')
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cfg record;
    col record;
    old_seq record;
    seq regclass;
    seq_name text;
    max_id bigint;
    first_new bigint;
    call text;
BEGIN
    SELECT * INTO cfg FROM sharded_id.current_settings();
    PERFORM sharded_id.check_shard(shard_id, cfg.layout);
    IF EXISTS (SELECT 1 FROM sharded_id.retired_shards r
               WHERE r.shard_id = adopt_table.shard_id AND r.layout = cfg.layout)
       OR EXISTS (SELECT 1 FROM sharded_id.floors() f
                  WHERE f.shard_id = adopt_table.shard_id AND f.layout = cfg.layout AND f.retired) THEN
        RAISE EXCEPTION 'shard % is not minted on this server', shard_id
            USING ERRCODE = 'SI001',
                  DETAIL = format('This server gave shard %s away, so another server may be minting its ids.', shard_id),
                  HINT = format('Adopt the table on the server that holds shard %s, or take the shard back here with sharded_id.create_shard(%s).',
                                shard_id, shard_id);
    END IF;
    -- The table may be one its schema's owner made: only a table, and its
    -- rows are read as its owner (sharded_id._max_id).
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = tbl) NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '"%" is not a table', tbl
            USING ERRCODE = 'wrong_object_type',
                  DETAIL = 'adopt_table switches the key of an ordinary or partitioned table.';
    END IF;
    SELECT a.atttypid, a.attidentity, pg_get_serial_sequence(tbl::text, a.attname) AS owned_seq INTO col
    FROM pg_attribute a
    WHERE a.attrelid = tbl AND a.attname = id_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of relation "%" does not exist', id_column, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    IF col.atttypid <> 'pg_catalog.int8'::regtype THEN
        RAISE EXCEPTION 'column "%" of "%" is of type %, not bigint', id_column, tbl, format_type(col.atttypid, NULL)
            USING ERRCODE = 'datatype_mismatch',
                  DETAIL = 'A sharded id needs all 64 bits: milliseconds, the shard and a sequence field.',
                  HINT = format('Widen the column first: ALTER TABLE %s ALTER COLUMN %I TYPE bigint.', tbl, id_column);
    END IF;

    -- No writer may add an id between the check and the switch.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    max_id := sharded_id._max_id(tbl, id_column);
    first_new := sharded_id.min_id_at(now(), cfg.layout);
    IF max_id >= first_new THEN
        RAISE EXCEPTION 'ids of "%" reach into the range of sharded ids minted now', tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its largest id is %s; the lowest sharded id minted now is %s, so an old id could equal a new one.',
                                  max_id, first_new);
    END IF;

    IF col.attidentity <> '' THEN
        EXECUTE format('SELECT last_value, is_called FROM %s', col.owned_seq) INTO old_seq;
        seq_name := col.owned_seq;
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, id_column);
        EXECUTE format('CREATE SEQUENCE %s OWNED BY %s.%I', seq_name, tbl, id_column);
        PERFORM setval(seq_name::regclass, old_seq.last_value, old_seq.is_called);
        seq := seq_name::regclass;
    ELSIF col.owned_seq IS NOT NULL THEN
        seq := col.owned_seq::regclass;
    ELSIF cfg.mode = 'seed' THEN
        RAISE EXCEPTION 'column "%" of "%" has no sequence', id_column, tbl
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'In seed mode the sequence fields of new ids come from the column''s serial or identity sequence.',
                  HINT = format('Give the column a sequence (CREATE SEQUENCE ... OWNED BY %s.%I), or configure counter mode.', tbl, id_column);
    END IF;

    call := sharded_id._next_id_call(shard_id, CASE WHEN cfg.mode = 'seed' THEN seq END, cfg.layout);
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', tbl, id_column, call);
    RETURN call;
END
$$;

COMMENT ON FUNCTION sharded_id.adopt_table(regclass, integer, name) IS
'switch an existing bigint key (serial, bigserial or IDENTITY) to a next_id default of one shard, keeping rows and sequence; refuses ids that reach the range minted now';

CREATE OR REPLACE FUNCTION sharded_id._acl_ddl(object text, acl aclitem[], owner oid, columns text DEFAULT NULL,
                                    as_grantor boolean DEFAULT true)
RETURNS SETOF text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s FROM (
        SELECT 0 AS step, false AS other_grantor, format('REVOKE ALL ON %s FROM PUBLIC', object) AS s
        WHERE acl IS NOT NULL AND columns IS NULL
        UNION ALL
        SELECT 1, false, format('REVOKE ALL ON %s FROM %I', object, pg_get_userbyid(owner))
        WHERE acl IS NOT NULL AND columns IS NULL
        UNION ALL
        SELECT 2, a.grantor <> owner,
               CASE WHEN a.grantor <> owner AND as_grantor THEN format('SET ROLE %I; ', pg_get_userbyid(a.grantor)) ELSE '' END
               || format('GRANT %s ON %s TO %s%s',
                         string_agg(a.privilege_type || coalesce(' (' || columns || ')', ''), ', ' ORDER BY a.privilege_type),
                         object,
                         CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
                         CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
               || CASE WHEN a.grantor <> owner AND as_grantor THEN '; RESET ROLE' ELSE '' END
        FROM aclexplode(acl) a
        GROUP BY a.grantor, a.grantee, a.is_grantable
    ) x
    ORDER BY step, other_grantor, s
$$;

COMMENT ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text, boolean) IS
'internal: the REVOKE and GRANT statements that give an object (or columns of a table) this access control list, each grant made by its grantor or by the owner';

CREATE OR REPLACE FUNCTION sharded_id._schema_unsupported(nsp oid)
RETURNS SETOF text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN o.classid = 'pg_proc'::regclass
                THEN (SELECT CASE p.prokind WHEN 'a' THEN 'aggregate ' ELSE 'routine ' END || p.oid::regprocedure::text
                      FROM pg_proc p WHERE p.oid = o.objid)
                ELSE pg_describe_object(o.classid, o.objid, 0) END FROM (
        SELECT 'pg_class'::regclass::oid AS classid, c.oid AS objid FROM pg_class c
        WHERE c.relnamespace = nsp
          AND (c.relkind NOT IN ('r', 'p', 'v', 'm', 'S', 'c', 'i', 'I') OR c.reloftype <> 0
               OR (NOT c.relispartition AND EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = c.oid)))
        UNION ALL
        SELECT 'pg_rewrite'::regclass, w.oid FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class
        WHERE c.relnamespace = nsp AND w.rulename <> '_RETURN'
        UNION ALL
        SELECT 'pg_proc'::regclass, p.oid FROM pg_proc p WHERE p.pronamespace = nsp AND p.prokind NOT IN ('f', 'p', 'w')
        UNION ALL
        SELECT 'pg_type'::regclass, t.oid FROM pg_type t
        WHERE t.typnamespace = nsp
          AND NOT (t.typisdefined AND (t.typtype IN ('e', 'd', 'r', 'm') OR t.typrelid <> 0
                                       OR EXISTS (SELECT FROM pg_type e WHERE e.typarray = t.oid)))
        UNION ALL
        SELECT 'pg_type'::regclass, r.rngtypid FROM pg_range r JOIN pg_type t ON t.oid = r.rngtypid
        WHERE t.typnamespace = nsp AND r.rngcanonical <> 0
        UNION ALL
        SELECT 'pg_operator'::regclass, x.oid FROM pg_operator x WHERE x.oprnamespace = nsp
        UNION ALL
        SELECT 'pg_opclass'::regclass, x.oid FROM pg_opclass x WHERE x.opcnamespace = nsp
        UNION ALL
        SELECT 'pg_opfamily'::regclass, x.oid FROM pg_opfamily x WHERE x.opfnamespace = nsp
        UNION ALL
        SELECT 'pg_statistic_ext'::regclass, x.oid FROM pg_statistic_ext x WHERE x.stxnamespace = nsp
        UNION ALL
        SELECT 'pg_ts_config'::regclass, x.oid FROM pg_ts_config x WHERE x.cfgnamespace = nsp
        UNION ALL
        SELECT 'pg_ts_dict'::regclass, x.oid FROM pg_ts_dict x WHERE x.dictnamespace = nsp
        UNION ALL
        SELECT 'pg_ts_parser'::regclass, x.oid FROM pg_ts_parser x WHERE x.prsnamespace = nsp
        UNION ALL
        SELECT 'pg_ts_template'::regclass, x.oid FROM pg_ts_template x WHERE x.tmplnamespace = nsp
        UNION ALL
        SELECT 'pg_collation'::regclass, x.oid FROM pg_collation x WHERE x.collnamespace = nsp
        UNION ALL
        SELECT 'pg_conversion'::regclass, x.oid FROM pg_conversion x WHERE x.connamespace = nsp
        UNION ALL
        SELECT 'pg_extension'::regclass, x.oid FROM pg_extension x WHERE x.extnamespace = nsp
        UNION ALL
        SELECT 'pg_default_acl'::regclass, x.oid FROM pg_default_acl x WHERE x.defaclnamespace = nsp
        UNION ALL
        SELECT d.classid, d.objid FROM pg_depend d
        WHERE d.deptype = 'e' AND d.objsubid = 0
          AND ((d.classid = 'pg_class'::regclass AND d.objid IN (SELECT c.oid FROM pg_class c WHERE c.relnamespace = nsp))
               OR (d.classid = 'pg_proc'::regclass AND d.objid IN (SELECT p.oid FROM pg_proc p WHERE p.pronamespace = nsp))
               OR (d.classid = 'pg_type'::regclass AND d.objid IN (SELECT t.oid FROM pg_type t WHERE t.typnamespace = nsp)))
    ) o
    ORDER BY 1
$$;

COMMENT ON FUNCTION sharded_id._schema_unsupported(oid) IS
'internal: the objects of a schema that schema_ddl cannot make again, described';

CREATE OR REPLACE FUNCTION sharded_id._schema_objects(nsp oid)
RETURNS TABLE (classid oid, objid oid, level integer)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE
    nodes (classid, objid) AS (
        SELECT 'pg_type'::regclass::oid, t.oid FROM pg_type t
        WHERE t.typnamespace = nsp AND t.typtype IN ('e', 'd', 'r')
        UNION ALL
        SELECT 'pg_class'::regclass::oid, c.oid FROM pg_class c
        WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'c')
          -- not the sequences of identity columns, which their columns make
          AND NOT (c.relkind = 'S' AND EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                                               AND d.objid = c.oid AND d.deptype = 'i'))
        UNION ALL
        SELECT 'pg_proc'::regclass::oid, p.oid FROM pg_proc p
        WHERE p.pronamespace = nsp AND p.prokind IN ('f', 'p', 'w')
          -- not the constructors of range types, which their types make
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                          AND d.objid = p.oid AND d.deptype = 'i')
    ),
    -- Every catalog object of the schema, with the node it belongs to.
    member (classid, objid, node_class, node_obj) AS (
        SELECT n.classid, n.objid, n.classid, n.objid FROM nodes n
        UNION ALL
        SELECT 'pg_type'::regclass::oid, t.oid, 'pg_class'::regclass::oid, t.typrelid FROM pg_type t
        WHERE t.typnamespace = nsp AND t.typrelid <> 0
        UNION ALL
        SELECT 'pg_type'::regclass::oid, t.typarray, 'pg_type'::regclass::oid, t.oid FROM pg_type t
        WHERE t.typnamespace = nsp AND t.typarray <> 0 AND t.typtype IN ('e', 'd', 'r')
        UNION ALL
        SELECT 'pg_type'::regclass::oid, t.typarray, 'pg_class'::regclass::oid, t.typrelid FROM pg_type t
        WHERE t.typnamespace = nsp AND t.typarray <> 0 AND t.typrelid <> 0
        UNION ALL
        SELECT 'pg_type'::regclass::oid, m.oid, 'pg_type'::regclass::oid, r.rngtypid
        FROM pg_range r JOIN pg_type t ON t.oid = r.rngtypid JOIN pg_type m ON m.oid = r.rngmultitypid
        WHERE t.typnamespace = nsp
        UNION ALL
        SELECT 'pg_type'::regclass::oid, m.typarray, 'pg_type'::regclass::oid, r.rngtypid
        FROM pg_range r JOIN pg_type t ON t.oid = r.rngtypid JOIN pg_type m ON m.oid = r.rngmultitypid
        WHERE t.typnamespace = nsp AND m.typarray <> 0
        UNION ALL
        SELECT 'pg_attrdef'::regclass::oid, d.oid, 'pg_class'::regclass::oid, d.adrelid
        FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid WHERE c.relnamespace = nsp
        UNION ALL
        SELECT 'pg_constraint'::regclass::oid, k.oid, 'pg_type'::regclass::oid, k.contypid
        FROM pg_constraint k JOIN pg_type t ON t.oid = k.contypid WHERE t.typnamespace = nsp
        UNION ALL
        SELECT 'pg_rewrite'::regclass::oid, w.oid, 'pg_class'::regclass::oid, w.ev_class
        FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class
        WHERE c.relnamespace = nsp AND w.rulename = '_RETURN'
    ),
    edges (from_class, from_obj, to_class, to_obj) AS (
        SELECT a.node_class, a.node_obj, b.node_class, b.node_obj
        FROM pg_depend d
        JOIN member a ON a.classid = d.classid AND a.objid = d.objid
        JOIN member b ON b.classid = d.refclassid AND b.objid = d.refobjid
        WHERE d.deptype = 'n' AND (a.node_class, a.node_obj) <> (b.node_class, b.node_obj)
        UNION
        SELECT 'pg_class'::regclass::oid, i.inhrelid, 'pg_class'::regclass::oid, i.inhparent
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE c.relnamespace = nsp AND c.relispartition
    ),
    depth (classid, objid, level) AS (
        SELECT n.classid, n.objid, 0 FROM nodes n
        UNION
        SELECT e.from_class, e.from_obj, depth.level + 1
        FROM edges e JOIN depth ON e.to_class = depth.classid AND e.to_obj = depth.objid
        -- a cycle stops one past the number of objects
        WHERE depth.level <= (SELECT count(*) FROM nodes)
    )
    SELECT d.classid, d.objid, max(d.level)::integer FROM depth d GROUP BY d.classid, d.objid
$$;

COMMENT ON FUNCTION sharded_id._schema_objects(oid) IS
'internal: the objects of a schema that schema_ddl makes one statement each, with the depth of their dependencies on each other';

CREATE OR REPLACE FUNCTION sharded_id._type_ddl(typ oid, schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    dc record;
    type_name text;
BEGIN
    SELECT t.* INTO r FROM pg_type t WHERE t.oid = typ;
    type_name := format('%I.%I', schema_name, r.typname);
    IF r.typtype = 'e' THEN
        RETURN NEXT format('CREATE TYPE %s AS ENUM (%s)', type_name,
                           (SELECT coalesce(string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder), '')
                            FROM pg_enum e WHERE e.enumtypid = r.oid));
    ELSIF r.typtype = 'd' THEN
        RETURN NEXT format('CREATE DOMAIN %s AS %s%s%s', type_name, format_type(r.typbasetype, r.typtypmod),
                           CASE WHEN r.typcollation <> (SELECT b.typcollation FROM pg_type b WHERE b.oid = r.typbasetype)
                                THEN ' COLLATE ' || r.typcollation::regcollation::text ELSE '' END,
                           coalesce(' DEFAULT ' || r.typdefault, ''));
        FOR dc IN
            SELECT c.conname, pg_get_constraintdef(c.oid) AS def, c.contype FROM pg_constraint c
            WHERE c.contypid = r.oid ORDER BY c.conname
        LOOP
            RETURN NEXT format('ALTER DOMAIN %s ADD CONSTRAINT %I %s', type_name, dc.conname, dc.def);
        END LOOP;
        IF r.typnotnull AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.contypid = r.oid AND c.contype = 'n') THEN
            RETURN NEXT format('ALTER DOMAIN %s SET NOT NULL', type_name);
        END IF;
    ELSIF r.typtype = 'r' THEN
        RETURN NEXT (SELECT format('CREATE TYPE %s AS RANGE (SUBTYPE = %s, SUBTYPE_OPCLASS = %I.%I%s%s, MULTIRANGE_TYPE_NAME = %I.%I)',
                                   type_name, format_type(g.rngsubtype, NULL), opn.nspname, opc.opcname,
                                   CASE WHEN g.rngcollation <> 0 AND g.rngcollation <> st.typcollation
                                        THEN ', COLLATION = ' || g.rngcollation::regcollation::text ELSE '' END,
                                   CASE WHEN g.rngsubdiff <> 0 THEN ', SUBTYPE_DIFF = ' || g.rngsubdiff::regproc::text ELSE '' END,
                                   mn.nspname, mt.typname)
                     FROM pg_range g
                     JOIN pg_type st ON st.oid = g.rngsubtype
                     JOIN pg_opclass opc ON opc.oid = g.rngsubopc
                     JOIN pg_namespace opn ON opn.oid = opc.opcnamespace
                     JOIN pg_type mt ON mt.oid = g.rngmultitypid
                     JOIN pg_namespace mn ON mn.oid = mt.typnamespace
                     WHERE g.rngtypid = r.oid);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._type_ddl(oid, name) IS
'internal: the statements that make a type of a schema again (enum, domain and its constraints, range), for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._relation_ddl(rel oid, schema_name name)
RETURNS text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    SELECT c.oid, c.relname, c.relkind, c.relispartition, c.relpersistence, c.reloptions,
           (SELECT a.amname FROM pg_am a WHERE a.oid = c.relam) AS am,
           pg_get_expr(c.relpartbound, c.oid) AS bound,
           (SELECT i.inhparent::regclass::text FROM pg_inherits i WHERE i.inhrelid = c.oid) AS parent,
           CASE WHEN c.relkind = 'p' THEN ' PARTITION BY ' || pg_get_partkeydef(c.oid) ELSE '' END AS partition_by,
           (SELECT string_agg(format('%I %s%s%s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                      CASE WHEN a.attcollation <> t.typcollation
                           THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END,
                      CASE a.attgenerated WHEN 's' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ') STORED'
                                          WHEN 'v' THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ') VIRTUAL'
                           ELSE coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '') END,
                      CASE a.attidentity WHEN 'a' THEN ' GENERATED ALWAYS AS IDENTITY'
                                         WHEN 'd' THEN ' GENERATED BY DEFAULT AS IDENTITY' ELSE '' END
                      -- the identity's sequence, under its name, with its options
                      || coalesce((SELECT format(' (SEQUENCE NAME %I.%I INCREMENT %s MINVALUE %s MAXVALUE %s START %s CACHE %s%s)',
                                                 schema_name, sc.relname, q.seqincrement,
                                                 q.seqmin, q.seqmax, q.seqstart, q.seqcache,
                                                 CASE WHEN q.seqcycle THEN ' CYCLE' ELSE '' END)
                                   FROM pg_depend dep JOIN pg_class sc ON sc.oid = dep.objid
                                   JOIN pg_sequence q ON q.seqrelid = sc.oid
                                   WHERE a.attidentity <> '' AND dep.classid = 'pg_class'::regclass
                                     AND dep.refclassid = 'pg_class'::regclass AND dep.refobjid = a.attrelid
                                     AND dep.refobjsubid = a.attnum AND dep.deptype = 'i' AND sc.relkind = 'S'), ''),
                      CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END), ', ' ORDER BY a.attnum)
            FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
           (SELECT string_agg(format('%I %s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                      CASE WHEN a.attcollation <> t.typcollation
                           THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END), ', ' ORDER BY a.attnum)
            FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS attributes
    INTO r FROM pg_class c WHERE c.oid = rel;
    IF r.relkind = 'S' THEN
        RETURN (SELECT format('CREATE SEQUENCE %I.%I AS %s INCREMENT %s MINVALUE %s MAXVALUE %s START %s CACHE %s%s',
                              schema_name, r.relname, format_type(q.seqtypid, NULL), q.seqincrement, q.seqmin,
                              q.seqmax, q.seqstart, q.seqcache, CASE WHEN q.seqcycle THEN ' CYCLE' ELSE '' END)
                FROM pg_sequence q WHERE q.seqrelid = r.oid);
    ELSIF r.relkind = 'c' THEN
        RETURN format('CREATE TYPE %I.%I AS (%s)', schema_name, r.relname, coalesce(r.attributes, ''));
    ELSIF r.relkind = 'v' THEN
        RETURN format('CREATE VIEW %I.%I%s AS %s', schema_name, r.relname,
                      coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''),
                      rtrim(pg_get_viewdef(r.oid), ';'));
    ELSIF r.relkind = 'm' THEN
        RETURN format('CREATE MATERIALIZED VIEW %I.%I%s%s AS %s WITH NO DATA', schema_name, r.relname,
                      CASE WHEN r.am <> 'heap' THEN ' USING ' || quote_ident(r.am) ELSE '' END,
                      coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''),
                      rtrim(pg_get_viewdef(r.oid), ';'));
    ELSIF r.relispartition THEN
        RETURN format('CREATE TABLE %I.%I PARTITION OF %s %s%s%s', schema_name, r.relname, r.parent,
                      r.bound, r.partition_by,
                      coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''));
    END IF;
    RETURN format('CREATE %sTABLE %I.%I (%s)%s%s%s', CASE WHEN r.relpersistence = 'u' THEN 'UNLOGGED ' ELSE '' END,
                  schema_name, r.relname, coalesce(r.columns, ''), r.partition_by,
                  CASE WHEN r.am IS NOT NULL AND r.am <> 'heap' THEN ' USING ' || quote_ident(r.am) ELSE '' END,
                  coalesce(' WITH (' || array_to_string(r.reloptions, ', ') || ')', ''));
END
$$;

COMMENT ON FUNCTION sharded_id._relation_ddl(oid, name) IS
'internal: the statement that makes a relation of a schema again (sequence, composite type, view, materialized view without rows, partition or table with its columns), for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_head_ddl(nsp oid, schema_name name)
RETURNS SETOF text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s FROM (
        SELECT 1 AS step, 0::bigint AS n, format('CREATE SCHEMA %I AUTHORIZATION %I', schema_name, pg_get_userbyid(n.nspowner)) AS s
        FROM pg_namespace n WHERE n.oid = nsp
        UNION ALL
        SELECT 2, a.ord, a.s FROM pg_namespace n,
            LATERAL sharded_id._acl_ddl(format('SCHEMA %I', schema_name), n.nspacl, n.nspowner) WITH ORDINALITY AS a(s, ord)
        WHERE n.oid = nsp
        UNION ALL
        SELECT 3, 0, 'SET LOCAL check_function_bodies = off'
    ) h
    ORDER BY h.step, h.n
$$;

COMMENT ON FUNCTION sharded_id._schema_head_ddl(oid, name) IS
'internal: the statements that make a schema and give it its privileges, then leave function bodies unchecked, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_objects_ddl(nsp oid, schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    o record;
BEGIN
    FOR o IN
        SELECT x.classid, x.objid FROM sharded_id._schema_objects(nsp) x ORDER BY x.level, x.objid
    LOOP
        IF o.classid = 'pg_proc'::regclass THEN
            RETURN NEXT rtrim(pg_get_functiondef(o.objid), E'\n');
        ELSIF o.classid = 'pg_type'::regclass THEN
            RETURN QUERY SELECT sharded_id._type_ddl(o.objid, schema_name);
        ELSE
            RETURN NEXT sharded_id._relation_ddl(o.objid, schema_name);
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_objects_ddl(oid, name) IS
'internal: the statements that make the types, sequences, functions, procedures, tables, views and materialized views of a schema again, in dependency order, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_tables_ddl(nsp oid)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
        SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.conrelid::regclass, k.conname, pg_get_constraintdef(k.oid))
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
        WHERE c.relnamespace = nsp AND k.contype IN ('p', 'u', 'x', 'c') AND k.conislocal
        ORDER BY c.relispartition, c.oid, k.contype DESC, k.conname;
    RETURN QUERY
        SELECT replace(pg_get_indexdef(x.indexrelid), ' ON ONLY ', ' ON ')
        FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid
        WHERE c.relnamespace = nsp
          AND NOT EXISTS (SELECT FROM pg_constraint k WHERE k.conindid = x.indexrelid AND k.conrelid = x.indrelid)
          AND NOT EXISTS (SELECT FROM pg_inherits i WHERE i.inhrelid = x.indexrelid)
        ORDER BY c.relispartition, c.oid, x.indexrelid;
    RETURN QUERY
        SELECT format('ALTER TABLE %s REPLICA IDENTITY %s', c.oid::regclass,
                      CASE c.relreplident WHEN 'f' THEN 'FULL' WHEN 'n' THEN 'NOTHING'
                           ELSE 'USING INDEX ' || (SELECT quote_ident(ic.relname) FROM pg_index x
                                                   JOIN pg_class ic ON ic.oid = x.indexrelid
                                                   WHERE x.indrelid = c.oid AND x.indisreplident) END)
        FROM pg_class c
        WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'm') AND c.relreplident <> 'd'
        ORDER BY c.oid;
    RETURN QUERY
        SELECT format('ALTER SEQUENCE %s OWNED BY %s.%I', d.objid::regclass, d.refobjid::regclass, a.attname)
        FROM pg_depend d JOIN pg_class s ON s.oid = d.objid
        JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
          AND s.relkind = 'S' AND s.relnamespace = nsp AND d.deptype = 'a'
        ORDER BY s.relname;
    RETURN QUERY
        SELECT format('ALTER TABLE %s ALTER COLUMN %I %s', c.oid::regclass, a.attname, x.setting)
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        JOIN pg_type t ON t.oid = a.atttypid
        CROSS JOIN LATERAL (VALUES
            (1, CASE WHEN a.attstorage <> t.typstorage
                     THEN 'SET STORAGE ' || CASE a.attstorage WHEN 'p' THEN 'PLAIN' WHEN 'e' THEN 'EXTERNAL'
                                                              WHEN 'm' THEN 'MAIN' ELSE 'EXTENDED' END END),
            (2, CASE a.attcompression WHEN 'p' THEN 'SET COMPRESSION pglz' WHEN 'l' THEN 'SET COMPRESSION lz4' END),
            (3, CASE WHEN a.attstattarget >= 0 THEN 'SET STATISTICS ' || a.attstattarget END)) AS x(n, setting)
        WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p', 'm') AND x.setting IS NOT NULL
        ORDER BY c.relispartition, c.oid, a.attnum, x.n;
    RETURN QUERY
        SELECT format('ALTER VIEW %s ALTER COLUMN %I SET DEFAULT %s', c.oid::regclass, a.attname, pg_get_expr(d.adbin, d.adrelid))
        FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid
        JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
        WHERE c.relnamespace = nsp AND c.relkind = 'v'
        ORDER BY c.oid, a.attnum;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_tables_ddl(oid) IS
'internal: the constraints (but foreign keys), indexes, replica identities, sequence ownership, column settings and view column defaults of a schema as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_relation_extras_ddl(nsp oid)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT o.objid FROM sharded_id._schema_objects(nsp) o JOIN pg_class c ON c.oid = o.objid
        WHERE o.classid = 'pg_class'::regclass AND c.relkind <> 'c'
        ORDER BY o.level, o.objid
    LOOP
        RETURN QUERY SELECT sharded_id._relation_extras_ddl(r.objid, r.objid::regclass::text);
    END LOOP;
    RETURN QUERY
        SELECT format('COMMENT ON CONSTRAINT %I ON %s%s IS %L', k.conname,
                      CASE WHEN k.contypid <> 0 THEN 'DOMAIN ' ELSE '' END,
                      CASE WHEN k.contypid <> 0 THEN k.contypid::regtype::text ELSE k.conrelid::regclass::text END,
                      d.description)
        FROM pg_constraint k
        JOIN pg_description d ON d.classoid = 'pg_constraint'::regclass AND d.objoid = k.oid AND d.objsubid = 0
        WHERE k.connamespace = nsp AND (k.conislocal OR k.contypid <> 0)
        ORDER BY k.conrelid, k.contypid, k.conname;
    RETURN QUERY
        SELECT format('COMMENT ON INDEX %s IS %L', c.oid::regclass, d.description)
        FROM pg_class c JOIN pg_description d ON d.classoid = 'pg_class'::regclass AND d.objoid = c.oid AND d.objsubid = 0
        WHERE c.relnamespace = nsp AND c.relkind IN ('i', 'I')
        ORDER BY c.oid;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_relation_extras_ddl(oid) IS
'internal: the triggers, row security, policies, owners, privileges and comments of the relations of a schema, and the comments of its constraints and indexes, as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_type_owners_ddl(nsp oid, schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT t.oid, t.typowner, t.typacl, t.typrelid, format('%I.%I', schema_name, t.typname) AS type_name,
               CASE WHEN t.typtype = 'd' THEN 'DOMAIN' ELSE 'TYPE' END AS keyword
        FROM sharded_id._schema_objects(nsp) o
        JOIN pg_type t ON (o.classid = 'pg_type'::regclass AND t.oid = o.objid)
                       OR (o.classid = 'pg_class'::regclass AND t.typrelid = o.objid
                           AND (SELECT c.relkind FROM pg_class c WHERE c.oid = o.objid) = 'c')
        ORDER BY o.level, o.objid
    LOOP
        RETURN NEXT format('ALTER %s %s OWNER TO %I', r.keyword, r.type_name, pg_get_userbyid(r.typowner));
        RETURN QUERY SELECT sharded_id._acl_ddl(r.keyword || ' ' || r.type_name, r.typacl, r.typowner);
        RETURN QUERY
            SELECT CASE WHEN d.objsubid = 0 THEN format('COMMENT ON %s %s IS %L', r.keyword, r.type_name, d.description)
                        ELSE format('COMMENT ON COLUMN %s.%I IS %L', r.type_name, a.attname, d.description) END
            FROM pg_description d
            LEFT JOIN pg_attribute a ON a.attrelid = d.objoid AND a.attnum = d.objsubid
            WHERE (d.classoid = 'pg_type'::regclass AND d.objoid = r.oid)
               OR (d.classoid = 'pg_class'::regclass AND d.objoid = r.typrelid AND r.typrelid <> 0)
            ORDER BY d.objsubid;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_type_owners_ddl(oid, name) IS
'internal: the owners, privileges and comments of the types of a schema as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_routine_owners_ddl(nsp oid)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT p.oid, p.proowner, p.proacl, p.oid::regprocedure::text AS signature,
               CASE WHEN p.prokind = 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END AS keyword
        FROM sharded_id._schema_objects(nsp) o JOIN pg_proc p ON p.oid = o.objid
        WHERE o.classid = 'pg_proc'::regclass
        ORDER BY o.level, o.objid
    LOOP
        RETURN NEXT format('ALTER %s %s OWNER TO %I', r.keyword, r.signature, pg_get_userbyid(r.proowner));
        RETURN QUERY SELECT sharded_id._acl_ddl(r.keyword || ' ' || r.signature, r.proacl, r.proowner);
        RETURN QUERY
            SELECT format('COMMENT ON %s %s IS %L', r.keyword, r.signature, d.description)
            FROM pg_description d WHERE d.classoid = 'pg_proc'::regclass AND d.objoid = r.oid AND d.objsubid = 0;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_routine_owners_ddl(oid) IS
'internal: the owners, privileges and comments of the functions and procedures of a schema as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id._schema_tail_ddl(nsp oid, schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY
        SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.conrelid::regclass, k.conname, pg_get_constraintdef(k.oid))
        FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
        WHERE c.relnamespace = nsp AND k.contype = 'f' AND k.conislocal
        ORDER BY c.relispartition, c.oid, k.conname;
    RETURN QUERY
        SELECT format('COMMENT ON SCHEMA %I IS %L', schema_name, d.description)
        FROM pg_description d WHERE d.classoid = 'pg_namespace'::regclass AND d.objoid = nsp AND d.objsubid = 0;
    RETURN QUERY
        SELECT format('REFRESH MATERIALIZED VIEW %s', c.oid::regclass)
        FROM sharded_id._schema_objects(nsp) o JOIN pg_class c ON c.oid = o.objid
        WHERE o.classid = 'pg_class'::regclass AND c.relkind = 'm' AND c.relispopulated
        ORDER BY o.level, o.objid;
END
$$;

COMMENT ON FUNCTION sharded_id._schema_tail_ddl(oid, name) IS
'internal: the foreign keys of a schema, its comment and the refreshes of its materialized views that hold rows, as statements, for schema_ddl';

CREATE OR REPLACE FUNCTION sharded_id.schema_ddl(schema_name name)
RETURNS SETOF text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- The schema, and the objects of it that schema_ddl cannot make again
    -- (_schema_unsupported): an error names the first and lists them all.
    -- Then one function per step, each giving its statements in the order
    -- they run in: the schema, its objects, what its tables carry, what
    -- its relations carry, owners of types and routines, and the last.
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema_ddl.schema_name);
    unsupported text[];
BEGIN
    IF nsp IS NULL THEN
        RAISE EXCEPTION 'schema "%" does not exist', schema_name
            USING ERRCODE = 'invalid_schema_name';
    END IF;
    unsupported := ARRAY(SELECT sharded_id._schema_unsupported(nsp));
    IF cardinality(unsupported) > 0 THEN
        RAISE EXCEPTION 'schema_ddl cannot rebuild % of schema "%"', unsupported[1], schema_name
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = format('Objects it cannot make again: %s.', array_to_string(unsupported, '; ')),
                  HINT = 'Drop these objects, or move them out of the schema, before the schema is copied.';
    END IF;
    IF EXISTS (SELECT FROM sharded_id._schema_objects(nsp) o
               WHERE o.level > (SELECT count(*) FROM sharded_id._schema_objects(nsp))) THEN
        RAISE EXCEPTION 'objects of schema "%" depend on each other in a cycle', schema_name
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'schema_ddl makes each object after those it depends on, and cannot order these.';
    END IF;
    RETURN QUERY SELECT sharded_id._schema_head_ddl(nsp, schema_name);
    RETURN QUERY SELECT sharded_id._schema_objects_ddl(nsp, schema_name);
    RETURN QUERY SELECT sharded_id._schema_tables_ddl(nsp);
    RETURN QUERY SELECT sharded_id._schema_relation_extras_ddl(nsp);
    RETURN QUERY SELECT sharded_id._schema_type_owners_ddl(nsp, schema_name);
    RETURN QUERY SELECT sharded_id._schema_routine_owners_ddl(nsp);
    RETURN QUERY SELECT sharded_id._schema_tail_ddl(nsp, schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id.schema_ddl(name) IS
'the statements that make a shard schema again, without its rows, in one transaction: types, sequences, functions, procedures, tables and partitions, views and materialized views in dependency order, then constraints, indexes, triggers and their enabled state, row security, policies, owners, privileges and comments of every object and of the schema; refuses (0A000) a schema holding an object it cannot make again';

CREATE OR REPLACE FUNCTION sharded_id.schema_inventory(schema_name name)
RETURNS TABLE (kind text, name text, owner name, acl text, details text, definition text)
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    nsp oid := (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema_inventory.schema_name);
    prefix text := quote_ident(schema_name) || '.';
BEGIN
    IF nsp IS NULL THEN
        RAISE EXCEPTION 'schema "%" does not exist', schema_name
            USING ERRCODE = 'invalid_schema_name';
    END IF;
    RETURN QUERY
    WITH objects (kind, name, owner, acl, details, def) AS (
        SELECT 'schema', '', n.nspowner, n.nspacl, NULL::text,
               obj_description(n.oid, 'pg_namespace')
        FROM pg_namespace n WHERE n.oid = nsp
        UNION ALL
        SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view'
                              WHEN 'm' THEN 'materialized view' WHEN 'S' THEN 'sequence' WHEN 'i' THEN 'index'
                              WHEN 'I' THEN 'partitioned index' WHEN 'c' THEN 'composite type'
                              WHEN 'f' THEN 'foreign table' ELSE 'relation ' || c.relkind::text END,
               c.relname::text, c.relowner, c.relacl,
               concat_ws(' ', CASE WHEN c.relkind = 'm' THEN CASE WHEN c.relispopulated THEN 'populated' ELSE 'not populated' END END,
                         CASE WHEN c.relrowsecurity THEN 'row security' END,
                         CASE WHEN c.relforcerowsecurity THEN 'forced' END,
                         CASE WHEN c.relpersistence = 'u' THEN 'unlogged' END,
                         CASE WHEN c.relkind IN ('r', 'p') AND c.relreplident <> 'd' THEN 'replica identity ' || c.relreplident::text END),
               concat_ws(E'\n',
                   c.reloptions::text, (SELECT a.amname FROM pg_am a WHERE a.oid = c.relam),
                   pg_get_partkeydef(c.oid), pg_get_expr(c.relpartbound, c.oid),
                   (SELECT 'parent ' || i.inhparent::regclass::text FROM pg_inherits i WHERE i.inhrelid = c.oid),
                   CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END,
                   CASE WHEN c.relkind IN ('i', 'I') THEN pg_get_indexdef(c.oid) END,
                   (SELECT concat_ws(' ', q.seqtypid::regtype, q.seqstart, q.seqincrement, q.seqmin, q.seqmax, q.seqcache, q.seqcycle)
                    FROM pg_sequence q WHERE q.seqrelid = c.oid),
                   (SELECT 'owned by ' || d.refobjid::regclass::text || '.' || quote_ident(a.attname) || ' ' || d.deptype::text
                    FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass
                      AND d.deptype IN ('a', 'i') AND c.relkind = 'S'),
                   (SELECT string_agg(concat_ws(' ', quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
                                                a.attcollation::regcollation::text, a.attnotnull, a.attidentity, a.attgenerated,
                                                a.attstorage, a.attcompression, a.attstattarget,
                                                pg_get_expr(d.adbin, d.adrelid),
                                                (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(a.attacl) x),
                                                col_description(c.oid, a.attnum)), E'\n' ORDER BY a.attnum)
                    FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                   obj_description(c.oid, 'pg_class'))
        FROM pg_class c WHERE c.relnamespace = nsp
        UNION ALL
        SELECT 'constraint', coalesce(c.relname, t.typname)::text || '.' || k.conname, NULL::oid, NULL::aclitem[],
               concat_ws(' ', k.contype, CASE WHEN NOT k.convalidated THEN 'not valid' END),
               concat_ws(E'\n', pg_get_constraintdef(k.oid), obj_description(k.oid, 'pg_constraint'))
        FROM pg_constraint k LEFT JOIN pg_class c ON c.oid = k.conrelid LEFT JOIN pg_type t ON t.oid = k.contypid
        -- NOT NULL is a column's or a domain's flag here: only some majors
        -- keep it as a constraint as well.
        WHERE k.connamespace = nsp AND k.contype <> 'n'
        UNION ALL
        SELECT 'trigger', c.relname::text || '.' || g.tgname, NULL::oid, NULL::aclitem[],
               'enabled ' || g.tgenabled::text,
               concat_ws(E'\n', pg_get_triggerdef(g.oid), obj_description(g.oid, 'pg_trigger'))
        FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
        WHERE c.relnamespace = nsp AND NOT g.tgisinternal
        UNION ALL
        SELECT 'policy', c.relname::text || '.' || p.polname, NULL::oid, NULL::aclitem[],
               concat_ws(' ', p.polcmd, CASE WHEN p.polpermissive THEN 'permissive' ELSE 'restrictive' END),
               concat_ws(E'\n', (SELECT string_agg(CASE WHEN r = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(r)::text END, ',' ORDER BY 1)
                                 FROM unnest(p.polroles) r),
                         pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid),
                         obj_description(p.oid, 'pg_policy'))
        FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
        WHERE c.relnamespace = nsp
        UNION ALL
        SELECT CASE p.prokind WHEN 'f' THEN 'function' WHEN 'p' THEN 'procedure' WHEN 'w' THEN 'window function'
                              WHEN 'a' THEN 'aggregate' ELSE 'routine' END,
               p.proname::text || '(' || pg_get_function_identity_arguments(p.oid) || ')', p.proowner, p.proacl,
               CASE WHEN p.prosecdef THEN 'security definer' END,
               concat_ws(E'\n', CASE WHEN p.prokind <> 'a' THEN pg_get_functiondef(p.oid) END,
                         obj_description(p.oid, 'pg_proc'))
        FROM pg_proc p WHERE p.pronamespace = nsp
        UNION ALL
        SELECT CASE t.typtype WHEN 'e' THEN 'enum' WHEN 'd' THEN 'domain' WHEN 'r' THEN 'range' WHEN 'm' THEN 'multirange'
                              WHEN 'c' THEN 'type' ELSE 'type ' || t.typtype::text END,
               t.typname::text, t.typowner, t.typacl,
               CASE WHEN t.typnotnull THEN 'not null' END,
               concat_ws(E'\n',
                   (SELECT string_agg(e.enumlabel::text, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid),
                   CASE WHEN t.typtype = 'd' THEN concat_ws(' ', format_type(t.typbasetype, t.typtypmod), t.typcollation::regcollation::text, t.typdefault) END,
                   (SELECT concat_ws(' ', g.rngsubtype::regtype, g.rngsubopc, g.rngcollation, g.rngsubdiff::regproc, g.rngmultitypid::regtype)
                    FROM pg_range g WHERE g.rngtypid = t.oid),
                   obj_description(t.oid, 'pg_type'))
        FROM pg_type t
        WHERE t.typnamespace = nsp
          AND (t.typtype IN ('e', 'd', 'r', 'm', 'b', 'p')
               OR (t.typtype = 'c' AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c'))
          AND NOT EXISTS (SELECT FROM pg_type e WHERE e.typarray = t.oid)
        UNION ALL
        SELECT 'unsupported', u, NULL::oid, NULL::aclitem[], NULL::text, NULL::text
        FROM sharded_id._schema_unsupported(nsp) u
    )
    SELECT o.kind, replace(o.name, prefix, '@schema@.'), pg_get_userbyid(o.owner),
           (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM unnest(o.acl) x),
           nullif(o.details, ''),
           md5(replace(coalesce(o.def, ''), prefix, '@schema@.'))
    FROM objects o
    ORDER BY 1, 2;
END
$$;

COMMENT ON FUNCTION sharded_id.schema_inventory(name) IS
'every object of a schema with its owner, privileges, flags and a hash of its definition, the schema''s name replaced by @schema@: two copies of a shard are the same schema when their inventories are';

REVOKE EXECUTE ON FUNCTION sharded_id.configure(text, integer, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._copy_table(sharded_id.shard_tables, integer, name, regclass, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._copy_foreign_keys(sharded_id.shard_tables, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_adoptable(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_schema_shard(integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._provision(integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.create_shard(integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.create_shards(integer, integer) FROM PUBLIC;

REVOKE EXECUTE ON PROCEDURE sharded_id.provision_shards(integer, integer, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.retire_shard(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.raise_floors() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_floors(integer, name, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._max_id(regclass, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._validate_as_owner(regclass, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._table_fingerprint(regclass) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._table_rows(regclass) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._insert_as_owner(regclass, text[]) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.drop_shard(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.add_table(regclass, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.adopt_table(regclass, integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._relation_extras_ddl(regclass, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.schema_ddl(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text, boolean) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_unsupported(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_objects(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._type_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._relation_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_head_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_objects_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_tables_ddl(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_relation_extras_ddl(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_type_owners_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_routine_owners_ddl(oid) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._schema_tail_ddl(oid, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.schema_inventory(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._catalog_retire(integer, text, bigint) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._catalog_own(integer, name, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._catalog_unretire(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._catalog_add_table(regclass, name, name) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION sharded_id.add_table(regclass, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.create_shard(integer, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.create_shards(integer, integer) TO sharded_id_provisioner;

GRANT EXECUTE ON PROCEDURE sharded_id.provision_shards(integer, integer, integer) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.retire_shard(integer) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.drop_shard(integer) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.adopt_table(regclass, integer, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.raise_floor(integer, bigint, text, boolean) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.high_water(integer, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.floors() TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.schema_ddl(name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id.schema_inventory(name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._provision(integer, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._copy_table(sharded_id.shard_tables, integer, name, regclass, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._copy_foreign_keys(sharded_id.shard_tables, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._check_adoptable(name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._check_schema_shard(integer, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._check_floors(integer, name, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._max_id(regclass, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._validate_as_owner(regclass, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._check_floor(integer, bigint, text, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._relation_extras_ddl(regclass, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._acl_ddl(text, aclitem[], oid, text, boolean) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_unsupported(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_objects(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._type_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._relation_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_head_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_objects_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_tables_ddl(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_relation_extras_ddl(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_type_owners_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_routine_owners_ddl(oid) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._schema_tail_ddl(oid, name) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._retire_shard(integer, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._own_shard(integer, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._catalog_retire(integer, text, bigint) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._catalog_own(integer, name, text, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._catalog_unretire(integer, text) TO sharded_id_provisioner;

GRANT EXECUTE ON FUNCTION sharded_id._catalog_add_table(regclass, name, name) TO sharded_id_provisioner;

CREATE OR REPLACE FUNCTION sharded_id._enter_fence(shard integer)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_enter_fence'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._enter_fence(integer) IS
'internal: take a shard''s fence in share mode until the transaction ends, which then cannot be prepared (enter_shard)';

CREATE OR REPLACE FUNCTION sharded_id._lock_fence(shard integer)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_lock_fence'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_fence(integer) IS
'internal: take a shard''s fence in exclusive mode until the transaction ends (a move''s freeze on a node); superusers only';

REVOKE EXECUTE ON FUNCTION sharded_id._lock_fence(integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id._lock_class(kind text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'shid_lock_class'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._lock_class(text) IS
'internal: the pg_locks classid of the shard locks of a kind (route, move, fence), whose objsubid is 3';

CREATE OR REPLACE FUNCTION sharded_id.enter_shard(shard_id integer)
RETURNS name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name;
BEGIN
    -- A move holds this shard's fence exclusively from its write freeze
    -- until it drops the source copy, so a writer waits here, then finds
    -- the shard gone.  The fence is a lock that only _enter_fence takes in
    -- share mode, until the transaction ends, which then cannot be
    -- prepared; the freeze ends a session that holds it idle in a
    -- transaction.
    PERFORM sharded_id._enter_fence(enter_shard.shard_id);
    SELECT s.schema_name INTO schema
    FROM sharded_id.shards s
    WHERE s.shard_id = enter_shard.shard_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard % is not on this node', shard_id
            USING ERRCODE = 'serialization_failure',
                  HINT = 'The shard may have moved to another node. Retry the call through the router.';
    END IF;
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id.enter_shard(integer) IS
'schema of a shard held by this node, locked against a move for the rest of the transaction; a retryable error (40001) otherwise';

CREATE OR REPLACE FUNCTION sharded_id.node_server(node_name text)
RETURNS name
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ('sharded_id_' || node_name)::name
$$;

COMMENT ON FUNCTION sharded_id.node_server(text) IS
'name of the postgres_fdw server that apply_shard_map makes for a data node';

CREATE OR REPLACE FUNCTION sharded_id._set_server_options(server name, fdw name, wanted text[])
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    current text[] := (SELECT coalesce(srvoptions, '{}') FROM pg_foreign_server WHERE srvname = server);
    changes text[] := '{}';
    opt record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._set_server_options');
    IF current IS NULL THEN
        EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER %I OPTIONS (%s)', server, fdw,
                       (SELECT string_agg(format('%I %L', split_part(o, '=', 1), substr(o, strpos(o, '=') + 1)), ', ')
                        FROM unnest(wanted) o));
        EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I', server);
        RETURN;
    END IF;
    FOR opt IN
        SELECT coalesce(w.k, c.k) AS k, w.v AS wanted, c.v AS current
        FROM (SELECT split_part(o, '=', 1) AS k, substr(o, strpos(o, '=') + 1) AS v FROM unnest(wanted) o) w
        FULL JOIN (SELECT split_part(o, '=', 1) AS k, substr(o, strpos(o, '=') + 1) AS v FROM unnest(current) o) c
        ON w.k = c.k
    LOOP
        IF opt.current IS NULL THEN
            changes := changes || format('ADD %I %L', opt.k, opt.wanted);
        ELSIF opt.wanted IS NULL THEN
            changes := changes || format('DROP %I', opt.k);
        ELSIF opt.wanted <> opt.current THEN
            changes := changes || format('SET %I %L', opt.k, opt.wanted);
        END IF;
    END LOOP;
    IF cardinality(changes) > 0 THEN
        EXECUTE format('ALTER SERVER %I OPTIONS (%s)', server, array_to_string(changes, ', '));
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._set_server_options(name, name, text[]) IS
'internal: create a foreign server with these options, or add, set and drop its options to match';

CREATE OR REPLACE FUNCTION sharded_id._connstr_options(connstr text)
RETURNS text[]
AS 'MODULE_PATHNAME', 'shid_connstr_options'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_options(text) IS
'internal: the options a libpq connection string or URI sets, as libpq parses them, less the user and secrets (they belong in user mappings)';

CREATE OR REPLACE FUNCTION sharded_id._connstr_public(connstr text, with_user boolean DEFAULT true)
RETURNS text
AS 'MODULE_PATHNAME', 'shid_connstr_public'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_public(text, boolean) IS
'internal: a libpq connection string or URI as a keyword/value string without its secrets (and optionally its user), fit for statements, catalogs and logs';

CREATE OR REPLACE FUNCTION sharded_id._connstr_secrets(connstr text, with_user boolean DEFAULT false)
RETURNS text[]
AS 'MODULE_PATHNAME', 'shid_connstr_secrets'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_secrets(text, boolean) IS
'internal: the secrets (and optionally the user) of a libpq connection string, as user mapping options';

CREATE OR REPLACE FUNCTION sharded_id._set_mapping_options(server name, wanted text[])
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    current text[];
    changes text[] := '{}';
    opt record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._set_mapping_options');
    -- pg_user_mappings shows the options of the mapping for PUBLIC to the
    -- server's owner, who may not read pg_user_mapping.
    SELECT coalesce(u.umoptions, '{}') INTO current
    FROM pg_user_mappings u WHERE u.srvname = server AND u.umuser = 0;
    IF NOT FOUND THEN
        EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I', server);
        current := '{}';
    END IF;
    FOR opt IN
        SELECT w.k, w.v AS wanted, c.v AS current
        FROM (SELECT split_part(o, '=', 1) AS k, substr(o, strpos(o, '=') + 1) AS v FROM unnest(wanted) o) w
        LEFT JOIN (SELECT split_part(o, '=', 1) AS k, substr(o, strpos(o, '=') + 1) AS v FROM unnest(current) o) c
        ON w.k = c.k
    LOOP
        IF opt.current IS NULL THEN
            changes := changes || format('ADD %I %L', opt.k, opt.wanted);
        ELSIF opt.wanted <> opt.current THEN
            changes := changes || format('SET %I %L', opt.k, opt.wanted);
        END IF;
    END LOOP;
    IF cardinality(changes) > 0 THEN
        EXECUTE format('ALTER USER MAPPING FOR PUBLIC SERVER %I OPTIONS (%s)', server, array_to_string(changes, ', '));
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._set_mapping_options(name, text[]) IS
'internal: add or set options of the user mapping for PUBLIC of a foreign server, keeping its others';

CREATE OR REPLACE FUNCTION sharded_id._partition_connstr(connstr text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN sharded_id._connstr_public(connstr, sharded_id._connstr_secrets(connstr) = '{}');

COMMENT ON FUNCTION sharded_id._partition_connstr(text) IS
'internal: a node''s PL/Proxy partition string, without its secrets, and without its user when it has one';

GRANT EXECUTE ON FUNCTION sharded_id._partition_connstr(text) TO PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id._cluster_mapping(cluster name, moved_shard integer DEFAULT NULL, target text DEFAULT NULL)
RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    secrets text[];
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._cluster_mapping');
    WITH conns AS (
        SELECT n.connstr FROM sharded_id.shard_map m
        JOIN sharded_id.nodes n ON n.node_name = CASE WHEN m.shard_id = moved_shard THEN target ELSE m.node_name END
    )
    SELECT array_agg(DISTINCT sharded_id._connstr_secrets(c.connstr, true)::text) INTO secrets
    FROM conns c
    WHERE EXISTS (SELECT FROM conns c2 WHERE sharded_id._connstr_secrets(c2.connstr) <> '{}');
    IF cardinality(secrets) > 1 THEN
        RAISE EXCEPTION 'the data nodes of cluster "%" have different users or passwords', cluster
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'PL/Proxy takes one user mapping per cluster, and passwords stay out of the cluster''s options, which every role can read. A node with a password in its connection string shares it, and its user, with every other node of the map.',
                  HINT = 'Give the nodes one user and password, or keep the passwords in a password file (passfile=) or service file of the router''s server and out of sharded_id.nodes.';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(secrets[1]::text[]) o WHERE split_part(o, '=', 1) NOT IN ('user', 'password')) THEN
        RAISE EXCEPTION 'the data nodes of cluster "%" have a secret PL/Proxy cannot take', cluster
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A PL/Proxy user mapping holds a user and a password, nothing else.',
                  HINT = 'Keep the other secrets (sslpassword) in a service file of the router''s server.';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(secrets[1]::text[]) o WHERE o ~ '[''\\]') THEN
        RAISE EXCEPTION 'the user or password of cluster "%" holds a quote or a backslash', cluster
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'PL/Proxy quotes the options of its user mapping without escaping them.',
                  HINT = 'Choose a password without them, or keep it in a password file (passfile=) of the router''s server.';
    END IF;
    RETURN coalesce(secrets[1]::text[], '{}');
END
$$;

COMMENT ON FUNCTION sharded_id._cluster_mapping(name, integer, text) IS
'internal: the options of a PL/Proxy cluster''s user mapping for PUBLIC, from the shard map''s nodes (optionally with one shard moved), failing on what one mapping cannot carry';

CREATE OR REPLACE FUNCTION sharded_id._apply_shard_map(cluster name, connection_lifetime integer,
                                            query_timeout integer, with_ops boolean)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    map_layout text := (SELECT c.layout FROM sharded_id.current_settings() c);
    max_count integer := (SELECT l.max_shard + 1 FROM sharded_id.layouts() l WHERE l.name = map_layout);
    shard_count integer;
    options text[];
    mapping text[];
    stale text;
    node record;
    ops record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._apply_shard_map');
    -- One at a time, and never beside a move's switch, whose map it would
    -- otherwise overwrite with the one it read before.
    LOCK TABLE sharded_id.shard_map IN SHARE ROW EXCLUSIVE MODE;
    PERFORM sharded_id.check_shard(m.shard_id, map_layout) FROM sharded_id.shard_map m;
    SELECT count(*) INTO shard_count FROM sharded_id.shard_map;
    IF shard_count = 0 OR shard_count > max_count OR (shard_count & (shard_count - 1)) <> 0 THEN
        RAISE EXCEPTION 'the shard map holds % shards', shard_count
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('PL/Proxy needs a power of two between 1 and %s partitions, one per logical shard of layout "%s".',
                                  max_count, map_layout);
    END IF;
    IF (SELECT max(shard_id) FROM sharded_id.shard_map) <> shard_count - 1 THEN
        RAISE EXCEPTION 'the shard map does not hold shards 0 to %', shard_count - 1
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Partition n of the cluster serves logical shard n, so every shard from 0 up needs a node.';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_foreign_data_wrapper WHERE fdwname = 'plproxy') THEN
        RAISE EXCEPTION 'foreign-data wrapper "plproxy" does not exist'
            USING ERRCODE = 'undefined_object',
                  HINT = 'Run CREATE EXTENSION plproxy on the router first.';
    END IF;

    -- The PL/Proxy cluster: partition n is logical shard n.  Its options
    -- are readable by every role, so they hold no secret: a password goes,
    -- with the user it is for, to the cluster's user mapping for PUBLIC,
    -- which PL/Proxy adds to every partition's connection string that
    -- names no user, and PostgreSQL shows to no other role; or it comes
    -- from a password file or service file.
    SELECT array_agg(format('p%s=%s', m.shard_id,
                            sharded_id._partition_connstr(n.connstr))
                     ORDER BY m.shard_id)
    INTO options
    FROM sharded_id.shard_map m JOIN sharded_id.nodes n USING (node_name);
    mapping := sharded_id._cluster_mapping(cluster);
    -- Settings not given keep their value, or start at 1800 s and none.
    SELECT coalesce(_apply_shard_map.connection_lifetime,
                    (SELECT split_part(o, '=', 2)::integer
                     FROM pg_foreign_server s, unnest(s.srvoptions) o
                     WHERE s.srvname = cluster AND o LIKE 'connection\_lifetime=%'), 1800),
           coalesce(_apply_shard_map.query_timeout,
                    (SELECT split_part(o, '=', 2)::integer
                     FROM pg_foreign_server s, unnest(s.srvoptions) o
                     WHERE s.srvname = cluster AND o LIKE 'query\_timeout=%'), 0)
    INTO connection_lifetime, query_timeout;
    options := options || format('connection_lifetime=%s', connection_lifetime)
                       || format('query_timeout=%s', query_timeout);
    PERFORM sharded_id._set_server_options(cluster, 'plproxy', options);
    IF mapping <> '{}' THEN
        PERFORM sharded_id._set_mapping_options(cluster, mapping);
        -- dblink reaches the nodes with the same mapping.
        IF EXISTS (SELECT FROM pg_proc p
                   JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
                   JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dblink'
                   WHERE p.proname = 'dblink_connect' AND has_function_privilege('public', p.oid, 'EXECUTE')) THEN
            RAISE WARNING 'every role with USAGE on server "%" can log in to the data nodes with its user mapping through dblink', cluster
                USING DETAIL = 'PUBLIC may call dblink_connect, and the mapping for PUBLIC holds the nodes'' user and password.',
                      HINT = 'REVOKE EXECUTE on dblink''s functions FROM PUBLIC, or keep the passwords in a password file of the router''s server.';
        END IF;
    ELSE
        -- No node has a password: one that an earlier map put in the
        -- mapping, with its user, would log every caller in as that user.
        SELECT string_agg(format('DROP %I', split_part(o, '=', 1)), ', ') INTO stale
        FROM pg_user_mappings u, unnest(u.umoptions) o
        WHERE u.srvname = cluster AND u.umuser = 0 AND split_part(o, '=', 1) IN ('user', 'password');
        IF stale IS NOT NULL THEN
            EXECUTE format('ALTER USER MAPPING FOR PUBLIC SERVER %I OPTIONS (%s)', cluster, stale);
        END IF;
    END IF;

    -- A postgres_fdw server per node, for ops queries.
    IF EXISTS (SELECT 1 FROM pg_foreign_data_wrapper WHERE fdwname = 'postgres_fdw') THEN
        FOR node IN SELECT * FROM sharded_id.nodes ORDER BY node_name LOOP
            PERFORM sharded_id._set_server_options(
                sharded_id.node_server(node.node_name), 'postgres_fdw',
                sharded_id._connstr_options(node.connstr)
                || ARRAY['extensions=sharded_id', 'async_capable=true']);
            -- A node's password, with the user it is for, goes to the
            -- server's user mapping.  Without one, each connection logs in
            -- as the user its role's own mapping names; a mapping that names
            -- no user logs in as the router server's operating-system user
            -- (libpq's default), so every mapping should name one.
            IF sharded_id._connstr_secrets(node.connstr) <> '{}' THEN
                PERFORM sharded_id._set_mapping_options(sharded_id.node_server(node.node_name),
                                                        sharded_id._connstr_secrets(node.connstr, true));
            END IF;
        END LOOP;
        FOR ops IN SELECT * FROM sharded_id.ops_tables WHERE with_ops LOOP
            PERFORM sharded_id._attach_ops_partitions(ops.ops_table);
        END LOOP;
    END IF;
    RETURN shard_count;
END
$$;

COMMENT ON FUNCTION sharded_id._apply_shard_map(name, integer, integer, boolean) IS
'internal: apply_shard_map, optionally without rebuilding the ops tables'' partitions';

CREATE OR REPLACE FUNCTION sharded_id._check_map_arguments(cluster name, connection_lifetime integer, query_timeout integer)
RETURNS name
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._check_map_arguments');
    IF cluster IS NULL THEN
        RAISE EXCEPTION 'cluster must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF cluster = '' THEN
        RAISE EXCEPTION 'cluster name must not be empty'
            USING ERRCODE = 'invalid_name';
    END IF;
    IF connection_lifetime < 0 THEN
        RAISE EXCEPTION 'connection_lifetime % is out of range', connection_lifetime
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'PL/Proxy keeps a connection to a node for at most that many seconds, 0 or more.',
                  HINT = 'Pass NULL to keep the cluster''s setting.';
    END IF;
    IF query_timeout < 0 THEN
        RAISE EXCEPTION 'query_timeout % is out of range', query_timeout
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'PL/Proxy waits that many seconds for a node''s answer, 0 or more (0: no limit).',
                  HINT = 'Pass NULL to keep the cluster''s setting.';
    END IF;
    RETURN cluster;
END
$$;

COMMENT ON FUNCTION sharded_id._check_map_arguments(name, integer, integer) IS
'internal: refuse a NULL or empty cluster name or a negative setting of apply_shard_map before anything changes';

CREATE OR REPLACE FUNCTION sharded_id.apply_shard_map(cluster name DEFAULT 'sharded_id',
                                           connection_lifetime integer DEFAULT NULL,
                                           query_timeout integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN sharded_id._apply_shard_map(sharded_id._check_map_arguments(cluster, connection_lifetime, query_timeout),
                                       connection_lifetime, query_timeout, true);
END
$$;

COMMENT ON FUNCTION sharded_id.apply_shard_map(name, integer, integer) IS
'create or update the PL/Proxy cluster (one partition per logical shard), the postgres_fdw server of each node and the ops tables from the shard map';

CREATE OR REPLACE FUNCTION sharded_id._attach_ops_partition(ops_table regclass, shard_id integer)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ops_schema name;
    ops_name name;
    remote_table name;
    server name;
    cur record;
    pad integer := (SELECT c.pad_width FROM sharded_id.current_settings() c);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._attach_ops_partition');
    SELECT n.nspname, c.relname INTO ops_schema, ops_name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = ops_table;
    SELECT c.relname INTO remote_table
    FROM sharded_id.ops_tables o JOIN pg_class c ON c.oid = o.template
    WHERE o.ops_table = _attach_ops_partition.ops_table;
    server := (SELECT sharded_id.node_server(m.node_name) FROM sharded_id.shard_map m
               WHERE m.shard_id = _attach_ops_partition.shard_id);
    SELECT c.oid::regclass AS rel, s.srvname INTO cur
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    LEFT JOIN pg_foreign_table f ON f.ftrelid = c.oid LEFT JOIN pg_foreign_server s ON s.oid = f.ftserver
    WHERE i.inhparent = ops_table
      AND pg_get_expr(c.relpartbound, c.oid) = format('FOR VALUES IN (%s)', _attach_ops_partition.shard_id);
    IF cur.srvname IS NOT DISTINCT FROM server AND cur.rel IS NOT NULL THEN
        RETURN;
    ELSIF cur.rel IS NOT NULL THEN
        EXECUTE format('DROP FOREIGN TABLE %s', cur.rel);
    END IF;
    IF server IS NOT NULL THEN
        EXECUTE format('CREATE FOREIGN TABLE %I.%I PARTITION OF %s FOR VALUES IN (%s) '
                       'SERVER %I OPTIONS (schema_name %L, table_name %L)',
                       ops_schema, format('%s_%s', ops_name, lpad(shard_id::text, greatest(pad, length(shard_id::text)), '0')),
                       ops_table, shard_id, server, sharded_id.shard_schema(shard_id), remote_table);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._attach_ops_partition(regclass, integer) IS
'internal: point one shard''s postgres_fdw partition of an ops table at the node the shard map names';

CREATE OR REPLACE FUNCTION sharded_id._attach_ops_partitions(ops_table regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._attach_ops_partitions');
    FOR part IN SELECT i.inhrelid::regclass AS rel FROM pg_inherits i WHERE i.inhparent = ops_table LOOP
        EXECUTE format('DROP FOREIGN TABLE %s', part.rel);
    END LOOP;
    PERFORM sharded_id._attach_ops_partition(ops_table, m.shard_id)
    FROM sharded_id.shard_map m ORDER BY m.shard_id;
END
$$;

COMMENT ON FUNCTION sharded_id._attach_ops_partitions(regclass) IS
'internal: one postgres_fdw partition per shard of an ops table';

CREATE OR REPLACE FUNCTION sharded_id.create_ops_table(template regclass, ops_schema name DEFAULT 'ops',
                                            id_column name DEFAULT 'id')
RETURNS regclass
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ops regclass;
    tab_name name := (SELECT relname FROM pg_class WHERE oid = template);
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_foreign_data_wrapper WHERE fdwname = 'postgres_fdw') THEN
        RAISE EXCEPTION 'foreign-data wrapper "postgres_fdw" does not exist'
            USING ERRCODE = 'undefined_object',
                  HINT = 'Run CREATE EXTENSION postgres_fdw on the router first.';
    END IF;
    EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', ops_schema);
    EXECUTE format('CREATE TABLE %I.%I (LIKE %s INCLUDING DEFAULTS INCLUDING COMMENTS) '
                   'PARTITION BY LIST (sharded_id.shard_id(%I))',
                   ops_schema, tab_name, template, id_column);
    ops := format('%I.%I', ops_schema, tab_name)::regclass;
    EXECUTE format('COMMENT ON TABLE %s IS %L', ops,
                   format('every shard''s %s, partitioned on the shard bits of %s', tab_name, id_column));
    INSERT INTO sharded_id.ops_tables VALUES (template, ops);
    PERFORM sharded_id._attach_ops_partitions(ops);
    RETURN ops;
END
$$;

COMMENT ON FUNCTION sharded_id.create_ops_table(regclass, name, name) IS
'a table over every shard''s copy of a sharded table: partitioned on sharded_id.shard_id(id), one postgres_fdw partition per shard';

REVOKE EXECUTE ON FUNCTION sharded_id._set_server_options(name, name, text[]) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._set_mapping_options(name, text[]) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.apply_shard_map(name, integer, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_map_arguments(name, integer, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._apply_shard_map(name, integer, integer, boolean) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._cluster_mapping(name, integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._attach_ops_partition(regclass, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._attach_ops_partitions(regclass) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.create_ops_table(regclass, name, name) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id._lock_route(shard integer)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_lock_route'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_route(integer) IS
'internal: take a shard''s route lock, which route() waits on, in exclusive mode until the transaction ends';

REVOKE EXECUTE ON FUNCTION sharded_id._lock_route(integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.place_shard(shard integer, node text, cluster name DEFAULT 'sharded_id')
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous text;
    held text;
BEGIN
    IF shard IS NULL OR node IS NULL OR cluster IS NULL THEN
        RAISE EXCEPTION 'arguments of place_shard must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM sharded_id.nodes n WHERE n.node_name = node) THEN
        RAISE EXCEPTION 'data node "%" does not exist', node
            USING ERRCODE = 'undefined_object',
                  HINT = 'Add it to sharded_id.nodes first.';
    END IF;
    -- Calls routed with route() or route_id() wait from here until commit.
    PERFORM sharded_id._lock_route(shard);
    SELECT m.node_name INTO previous FROM sharded_id.shard_map m WHERE m.shard_id = shard FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'shard % is not in the shard map', shard
            USING ERRCODE = 'undefined_object',
                  DETAIL = 'place_shard changes where a mapped shard is; the map''s shards are set when the router is set up.';
    END IF;
    IF to_regclass('sharded_id.moves') IS NOT NULL
       AND EXISTS (SELECT FROM sharded_id.moves v WHERE v.shard_id = shard AND v.finished_at IS NULL) THEN
        RAISE EXCEPTION 'shard % has a move that did not end', shard
            USING ERRCODE = 'object_in_use',
                  HINT = 'Run CALL sharded_id.recover_moves() first.';
    END IF;
    -- The node must hold the shard: otherwise every call would fail there.
    BEGIN
        PERFORM sharded_id._remote_open('shid_place', node);
        held := sharded_id._remote('shid_place', format(
            'SELECT count(*) FROM sharded_id.shards WHERE shard_id = %s', shard));
        PERFORM sharded_id._remote_close('shid_place');
    EXCEPTION WHEN OTHERS THEN
        PERFORM sharded_id._remote_close('shid_place');
        RAISE;
    END;
    IF held IS DISTINCT FROM '1' THEN
        RAISE EXCEPTION 'data node "%" does not hold shard %', node, shard
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The shard is not in the node''s sharded_id.shards.',
                  HINT = 'Restore the shard''s schema there and register it with sharded_id.create_shard first.';
    END IF;
    UPDATE sharded_id.shard_map m SET node_name = node WHERE m.shard_id = shard;
    PERFORM sharded_id.apply_shard_map(cluster);
    RETURN previous;
END
$$;

COMMENT ON FUNCTION sharded_id.place_shard(integer, text, name) IS
'after a shard is restored on another data node: point the shard map at that node and apply it, in one transaction under the shard''s route lock; checks that the node holds the shard; returns the node the map named before';

REVOKE EXECUTE ON FUNCTION sharded_id.place_shard(integer, text, name) FROM PUBLIC;

COMMENT ON COLUMN sharded_id.moves.copy_checked_at IS
'when the cleanup of a move that switched its shard found the new copy the same schema as the old one (_move_check_copy), which may then be dropped; NULL: not yet';

CREATE OR REPLACE FUNCTION sharded_id.route(shard integer, cluster text DEFAULT 'sharded_id')
RETURNS text
AS 'MODULE_PATHNAME', 'shid_route'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.route(integer, text) IS
'the PL/Proxy cluster for a call on a shard (CLUSTER sharded_id.route(...)), after waiting out a move''s switch of the shard';

CREATE OR REPLACE FUNCTION sharded_id.route_id(id bigint, cluster text DEFAULT 'sharded_id')
RETURNS text
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id.route(sharded_id.shard_id(id), cluster)
$$;

COMMENT ON FUNCTION sharded_id.route_id(bigint, text) IS
'route() for the shard an id carries';

REVOKE EXECUTE ON FUNCTION sharded_id.route(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.route_id(bigint, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id._schema_fingerprint(schema_name name)
RETURNS text
LANGUAGE plpgsql STABLE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    line text;
    result text := '';
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._schema_fingerprint');
    -- Each table read as its owner (sharded_id._table_fingerprint): the
    -- schema's owner may have planted code in it.
    FOR t IN
        SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = schema_name AND c.relkind = 'r' ORDER BY c.relname
    LOOP
        line := t.relname || ':' || sharded_id._table_fingerprint(t.oid);
        result := result || line || ' ';
    END LOOP;
    RETURN rtrim(result);
END
$$;

COMMENT ON FUNCTION sharded_id._schema_fingerprint(name) IS
'internal: row count and row-hash sum of every table of a schema, to compare two copies';

CREATE OR REPLACE FUNCTION sharded_id._dblink_schema()
RETURNS name
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name := (SELECT e.extnamespace::regnamespace::name FROM pg_extension e WHERE e.extname = 'dblink');
BEGIN
    IF schema IS NULL THEN
        RAISE EXCEPTION 'extension "dblink" is not installed'
            USING ERRCODE = 'undefined_object',
                  DETAIL = 'Shard moves reach the data nodes through dblink.',
                  HINT = 'Run CREATE EXTENSION dblink on the router.';
    END IF;
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id._dblink_schema() IS
'internal: the schema of dblink, which moves need on the router';

CREATE OR REPLACE FUNCTION sharded_id._remote_open(conn text, node text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name;
    dsn text;
    open boolean;
    alive boolean;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_open');
    dblink := sharded_id._dblink_schema();
    EXECUTE format('SELECT $1 = ANY (coalesce(%I.dblink_get_connections(), ''{}''))', dblink) INTO open USING conn;
    IF open THEN
        EXECUTE format('SELECT count(*) = 1 FROM %I.dblink($1, ''SELECT 1'', false) AS r(v int)', dblink)
        INTO alive USING conn;
        IF alive THEN
            RETURN;
        END IF;
        EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink) USING conn;
    END IF;
    SELECT CASE WHEN EXISTS (SELECT FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
                             WHERE s.srvname = sharded_id.node_server(n.node_name) AND w.fdwname = 'postgres_fdw')
                THEN sharded_id.node_server(n.node_name)::text ELSE n.connstr END
    INTO dsn FROM sharded_id.nodes n WHERE n.node_name = node;
    IF dsn IS NULL THEN
        RAISE EXCEPTION 'data node "%" does not exist', node
            USING ERRCODE = 'undefined_object';
    END IF;
    EXECUTE format('SELECT %I.dblink_connect($1, $2)', dblink) USING conn, dsn;
    EXECUTE format('SELECT %I.dblink_exec($1, $2)', dblink)
    USING conn, format('SET row_security = off; SET application_name = %L', conn);
END
$$;

COMMENT ON FUNCTION sharded_id._remote_open(text, text) IS
'internal: open a named dblink connection to a data node, with row_security off, unless it is open and answers';

CREATE OR REPLACE FUNCTION sharded_id._remote_close(conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name;
    open boolean;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_close');
    dblink := sharded_id._dblink_schema();
    EXECUTE format('SELECT $1 = ANY (coalesce(%I.dblink_get_connections(), ''{}''))', dblink) INTO open USING conn;
    IF open THEN
        EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink) USING conn;
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_close(text) IS
'internal: close a named dblink connection (a transaction open on it rolls back)';

CREATE OR REPLACE FUNCTION sharded_id._remote_close_all(prefix text)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    dblink name;
    conns text[];
    c text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_close_all');
    dblink := sharded_id._dblink_schema();
    EXECUTE format('SELECT coalesce(%I.dblink_get_connections(), ''{}'')', dblink) INTO conns;
    FOREACH c IN ARRAY conns LOOP
        IF left(c, length(prefix)) = prefix THEN
            EXECUTE format('SELECT %I.dblink_disconnect($1)', dblink) USING c;
        END IF;
    END LOOP;
    RETURN cardinality(conns);
END
$$;

COMMENT ON FUNCTION sharded_id._remote_close_all(text) IS
'internal: close every dblink connection of the session whose name starts with a prefix';

CREATE OR REPLACE FUNCTION sharded_id._move_conn(move_id bigint, role text, node text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_conn');
    SELECT format('sharded_id_%s_%s_%s', coalesce(move_id::text, 'new'), role, node)
$$;

COMMENT ON FUNCTION sharded_id._move_conn(bigint, text, text) IS
'internal: the dblink connection name of a move, a role and a node';

CREATE OR REPLACE FUNCTION sharded_id._move_open(m sharded_id.moves, role text)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    node text := CASE WHEN role IN ('target', 'snap_target') THEN m.target_node ELSE m.source_node END;
    conn text := sharded_id._move_conn(m.move_id, role, node);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_open');
    PERFORM sharded_id._remote_open(conn, node);
    RETURN conn;
END
$$;

COMMENT ON FUNCTION sharded_id._move_open(sharded_id.moves, text) IS
'internal: open, or check and reuse, the connection of a move in a role, and return its name';

CREATE OR REPLACE FUNCTION sharded_id._move_claim(shard_id integer)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    holder integer;
    running bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_claim');
    IF sharded_id._lock_shard(shard_id, 'move', false) THEN
        RETURN;
    END IF;
    holder := (SELECT l.pid FROM pg_locks l
               WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND l.classid = sharded_id._lock_class('move') AND l.objid = _move_claim.shard_id AND l.objsubid = 3 AND l.granted
               LIMIT 1);
    running := (SELECT x.move_id FROM sharded_id.moves x WHERE x.shard_id = _move_claim.shard_id AND x.finished_at IS NULL);
    RAISE EXCEPTION 'move % of shard % is running in backend %', coalesce(running::text, '(not yet journaled)'), shard_id,
                    coalesce(holder::text, '(gone)')
        USING ERRCODE = 'lock_not_available',
              DETAIL = 'A move holds its shard''s move lock from its start to its end, and nothing else may finish or roll it back meanwhile.',
              HINT = 'Wait for that move to end, or cancel it with pg_cancel_backend, then try again.';
END
$$;

COMMENT ON FUNCTION sharded_id._move_claim(integer) IS
'internal: take a shard''s move lock for this session, or fail naming the move and the backend running it';

CREATE OR REPLACE FUNCTION sharded_id._lock_shard(shard integer, kind text, wait boolean)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shid_lock_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_shard(integer, text, boolean) IS
'internal: take a shard''s route or move lock in exclusive mode as a session lock, released at the latest when a transaction aborts';

CREATE OR REPLACE FUNCTION sharded_id._unlock_shard(shard integer, kind text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'shid_unlock_shard'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._unlock_shard(integer, text) IS
'internal: release a shard''s route or move lock taken by _lock_shard';

CREATE OR REPLACE FUNCTION sharded_id._wait_shard_lock(shard integer, kind text, timeout interval, why text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + timeout;
    slice_ms bigint := 100;
    wait_ms bigint;
    saved_lock_timeout text := current_setting('lock_timeout');
    class bigint;
    noun text := CASE kind WHEN 'route' THEN 'route lock' WHEN 'fence' THEN 'fence' END;
    h record;
    holders text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._wait_shard_lock');
    class := sharded_id._lock_class(kind);
    IF noun IS NULL THEN
        RAISE EXCEPTION 'a move waits for no lock of kind "%"', kind USING ERRCODE = 'invalid_parameter_value';
    END IF;
    LOOP
        FOR h IN
            SELECT a.pid, a.usename, a.application_name, clock_timestamp() - a.state_change AS idle_for
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND l.classid = class AND l.objid = _wait_shard_lock.shard AND l.objsubid = 3
              AND l.mode = 'ShareLock' AND l.granted AND l.pid <> pg_backend_pid()
              AND a.state IN ('idle in transaction', 'idle in transaction (aborted)')
              AND a.state_change < clock_timestamp() - interval '500 ms'
        LOOP
            BEGIN
                IF pg_terminate_backend(h.pid) THEN
                    RAISE WARNING 'ended session % of role "%", idle in a transaction for % while it held the % of shard %',
                                  h.pid, h.usename, date_trunc('second', h.idle_for), noun, shard
                        USING DETAIL = format('%s; the session''s %s. Application name: "%s".', why,
                                              CASE kind WHEN 'route' THEN 'routed calls had all returned'
                                                        ELSE 'statements after it entered the shard had all returned' END,
                                              h.application_name);
                END IF;
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE WARNING 'could not end session % of role "%", idle in a transaction while it held the % of shard %',
                              h.pid, h.usename, noun, shard
                    USING DETAIL = SQLERRM,
                          HINT = 'Run moves as a superuser, or as a member of pg_signal_backend.';
            END;
        END LOOP;
        wait_ms := least(slice_ms, floor(extract(epoch FROM deadline - clock_timestamp()) * 1000)::bigint);
        IF wait_ms < 1 THEN
            holders := (SELECT string_agg(format('%s (role "%s", %s)', a.pid, a.usename, a.state), ', ' ORDER BY a.pid)
                        FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                        WHERE l.locktype = 'advisory' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                          AND l.classid = class AND l.objid = _wait_shard_lock.shard AND l.objsubid = 3
                          AND l.granted AND l.pid <> pg_backend_pid());
            RAISE EXCEPTION 'the % of shard % was not free within %', noun, shard, timeout
                USING ERRCODE = 'lock_not_available',
                      DETAIL = format('Sessions that %s held it: %s.',
                                      CASE kind WHEN 'route' THEN 'routed calls to the shard' ELSE 'entered the shard' END,
                                      coalesce(holders, 'none left')),
                      HINT = 'Writers in flight hold it until their transactions end; raise freeze_timeout, or end the sessions that hold it.';
        END IF;
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', wait_ms || 'ms', true);
            IF kind = 'route' THEN
                PERFORM sharded_id._lock_shard(shard, 'route', true);
            ELSE
                PERFORM sharded_id._lock_fence(shard);
            END IF;
            PERFORM pg_catalog.set_config('lock_timeout', saved_lock_timeout, true);
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            NULL;
        END;
        slice_ms := slice_ms * 2;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._wait_shard_lock(integer, text, interval, text) IS
'internal: take a shard''s route lock or fence for a move''s freeze, within a timeout, ending sessions that hold it idle in a transaction';

CREATE OR REPLACE FUNCTION sharded_id._move_lock_route(m sharded_id.moves, freeze_timeout interval)
RETURNS void
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_lock_route');
    SELECT sharded_id._wait_shard_lock(m.shard_id, 'route', freeze_timeout, format('Move %s freezes the shard', m.move_id))
$$;

COMMENT ON FUNCTION sharded_id._move_lock_route(sharded_id.moves, interval) IS
'internal: take the route lock of a move''s shard for its freeze, within freeze_timeout, ending sessions that hold it idle in a transaction';

CREATE OR REPLACE FUNCTION sharded_id._remote(conn text, sql text)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote');
    EXECUTE format('SELECT string_agg(r.v, E''\n'') FROM %I.dblink($1, $2) AS r(v text)', sharded_id._dblink_schema())
    INTO result USING conn, sql;
    RETURN result;
END
$$;

COMMENT ON FUNCTION sharded_id._remote(text, text) IS
'internal: run a query on a dblink connection, and return its first column as lines';

CREATE OR REPLACE FUNCTION sharded_id._remote_rows(conn text, sql text)
RETURNS text[]
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result text[];
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_rows');
    EXECUTE format('SELECT array_agg(r.v) FROM %I.dblink($1, $2) AS r(v text)', sharded_id._dblink_schema())
    INTO result USING conn, sql;
    RETURN result;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_rows(text, text) IS
'internal: run a query on a dblink connection, and return its first column as an array';

CREATE OR REPLACE FUNCTION sharded_id._remote_exec(conn text, sql text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_exec');
    EXECUTE format('SELECT %I.dblink_exec($1, $2)', sharded_id._dblink_schema()) USING conn, sql;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_exec(text, text) IS
'internal: run statements on a dblink connection';

CREATE OR REPLACE FUNCTION sharded_id._remote_exists(conn text, sql text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result boolean;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_exists');
    EXECUTE format('SELECT r.v FROM %I.dblink($1, $2) AS r(v boolean)', sharded_id._dblink_schema())
    INTO result USING conn, format('SELECT EXISTS (%s)', sql);
    RETURN result;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_exists(text, text) IS
'internal: whether a query on a dblink connection returns a row';

CREATE OR REPLACE FUNCTION sharded_id._remote_json(conn text, sql text)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    result jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._remote_json');
    EXECUTE format('SELECT r.v FROM %I.dblink($1, $2) AS r(v jsonb)', sharded_id._dblink_schema())
    INTO STRICT result USING conn, sql;
    RETURN result;
EXCEPTION WHEN no_data_found THEN
    RETURN NULL;
END
$$;

COMMENT ON FUNCTION sharded_id._remote_json(text, text) IS
'internal: the one jsonb value that a query on a dblink connection returns, or NULL when it returns no row';

CREATE OR REPLACE FUNCTION sharded_id._move_hold(point text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_hold');
    IF current_setting('sharded_id.move_hold', true) = point THEN
        PERFORM pg_advisory_lock_shared(1936222579, 0);
        PERFORM pg_advisory_unlock_shared(1936222579, 0);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_hold(text) IS
'internal: pause a move at a point named by sharded_id.move_hold, for fault-injection tests';

CREATE OR REPLACE FUNCTION sharded_id._move_will_create(move_id bigint, node text, object_type text,
                                             object_name text, policy text)
RETURNS void
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_will_create');
    INSERT INTO sharded_id.move_cleanup VALUES (move_id, node, object_type, object_name, policy)
    ON CONFLICT DO NOTHING
$$;

COMMENT ON FUNCTION sharded_id._move_will_create(bigint, text, text, text, text) IS
'internal: record what a move is about to create on a node, and when to drop it';

CREATE OR REPLACE FUNCTION sharded_id._move_open_freeze(m sharded_id.moves)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    frz text := sharded_id._move_conn(m.move_id, 'freeze', m.source_node);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_open_freeze');
    PERFORM sharded_id._remote_close(frz);
    PERFORM sharded_id._remote_open(frz, m.source_node);
    PERFORM sharded_id._remote_exec(frz, format(
        'SELECT FROM sharded_id.shards WHERE shard_id = %s; '
        'SELECT FROM sharded_id._on_schema_tables(%L, ''LOCK TABLE %%s IN ACCESS SHARE MODE''); '
        'SET lock_timeout = DEFAULT',
        m.shard_id, m.schema_name));
    RETURN frz;
END
$$;

COMMENT ON FUNCTION sharded_id._move_open_freeze(sharded_id.moves) IS
'internal: open a new freeze connection of a move to its source';

CREATE OR REPLACE FUNCTION sharded_id._move_freeze_source(m sharded_id.moves, lock_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_freeze_source');
    -- It ends with a command: dblink_exec takes no rows from the last.
    PERFORM sharded_id._remote_exec(sharded_id._move_conn(m.move_id, 'freeze', m.source_node), format(
        'BEGIN; SET LOCAL lock_timeout = %1$L; '
        'SELECT FROM sharded_id._wait_shard_lock(%2$s, ''fence'', %1$L, %4$L); '
        'SELECT FROM sharded_id.shards WHERE shard_id = %2$s FOR UPDATE; '
        'SELECT FROM sharded_id._on_schema_tables(%3$L, ''LOCK TABLE %%s IN EXCLUSIVE MODE''); '
        'SET LOCAL lock_timeout = %1$L',
        (extract(epoch FROM lock_timeout) * 1000)::bigint || 'ms', m.shard_id, m.schema_name,
        format('Move %s freezes the shard', m.move_id)));
END
$$;

COMMENT ON FUNCTION sharded_id._move_freeze_source(sharded_id.moves, interval) IS
'internal: open the freezing transaction of a move on its source';

CREATE OR REPLACE FUNCTION sharded_id._move_schema_ddl(schema_name name)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ddl text[];
    first integer;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_schema_ddl');
    ddl := ARRAY(SELECT s FROM sharded_id.schema_ddl(schema_name) s);
    first := (SELECT min(x.n) FROM unnest(ddl) WITH ORDINALITY x(s, n)
              WHERE x.s LIKE 'ALTER TABLE % ADD CONSTRAINT %' OR x.s LIKE 'CREATE INDEX %' OR x.s LIKE 'CREATE UNIQUE INDEX %');
    IF first IS NULL THEN
        RETURN array_to_string(ddl, E';\n');
    END IF;
    RETURN (SELECT string_agg(y.s, E';\n' ORDER BY y.rank, y.n)
            FROM (SELECT x.s, x.n,
                         CASE WHEN x.n < first THEN 0
                              WHEN x.s ~ '^ALTER [A-Z ]+ \S.* OWNER TO ("[^"]*"|[^ ]+)$' AND x.s !~ E'\n' THEN 1
                              WHEN x.s ~ '^ALTER TABLE \S.* ADD CONSTRAINT ("([^"]|"")*"|\S+) (PRIMARY KEY|UNIQUE)[ (]' THEN 2
                              WHEN x.s ~ '^ALTER TABLE \S.* ADD CONSTRAINT ("([^"]|"")*"|\S+) FOREIGN KEY[ (]' THEN 3
                              ELSE 4 END AS rank
                  FROM unnest(ddl) WITH ORDINALITY x(s, n)) y);
END
$$;

COMMENT ON FUNCTION sharded_id._move_schema_ddl(name) IS
'internal: the statements of schema_ddl for a move''s target, ordered so that none runs code of the schema''s owner with the mover''s rights: owners before constraints and indexes, foreign keys before other indexes';

CREATE OR REPLACE FUNCTION sharded_id._on_schema_tables(schema_name name, statement text)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    n integer := 0;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._on_schema_tables');
    FOR t IN
        SELECT c.oid::regclass AS rel FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname = schema_name AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.oid
    LOOP
        EXECUTE format(statement, t.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

COMMENT ON FUNCTION sharded_id._on_schema_tables(name, text) IS
'internal: run a statement on every table of a shard schema (a move''s freeze and fence)';

CREATE OR REPLACE FUNCTION sharded_id._move_catch_up(m sharded_id.moves, timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    mark bigint;
    polls bigint := 0;
    max_polls bigint := greatest(1, (extract(epoch FROM timeout) * 1000)::bigint);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_catch_up');
    mark := (sharded_id._remote_json(src, format(
        'INSERT INTO sharded_id.move_marks VALUES (%s, 1) ON CONFLICT (move_id) DO UPDATE SET mark = move_marks.mark + 1 '
        'RETURNING jsonb_build_object(''mark'', mark)',
        m.move_id)) ->> 'mark')::bigint;
    WHILE coalesce((sharded_id._remote_json(tgt, format(
              'SELECT jsonb_build_object(''mark'', mark) FROM sharded_id.move_marks WHERE move_id = %s', m.move_id))
              ->> 'mark')::bigint, 0) < mark LOOP
        polls := polls + 1;
        IF polls > max_polls THEN
            RAISE EXCEPTION 'the target did not catch up with the source within %', timeout
                USING ERRCODE = 'lock_not_available';
        END IF;
        IF NOT sharded_id._remote_exists(tgt, format(
               'SELECT FROM pg_subscription WHERE oid = %s AND subenabled', m.sub_oid)) THEN
            RAISE EXCEPTION 'the subscription of move % stopped', m.move_id
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'The target''s server log says why.';
        END IF;
        PERFORM pg_sleep(0.001);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_catch_up(sharded_id.moves, interval) IS
'internal: wait until a move''s target has applied everything its source committed';

CREATE OR REPLACE FUNCTION sharded_id._move_compare(m sharded_id.moves, source_conn text, target_conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    sql text := format('SELECT sharded_id._schema_fingerprint(%L)', m.schema_name);
    f_source text := sharded_id._remote(source_conn, sql);
    f_target text := sharded_id._remote(target_conn, sql);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_compare');
    IF f_source IS DISTINCT FROM f_target THEN
        RAISE EXCEPTION 'the copy of shard % differs from the source', m.shard_id
            USING ERRCODE = 'data_corrupted',
                  DETAIL = format('Source: %s. Target: %s.', f_source, f_target);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_compare(sharded_id.moves, text, text) IS
'internal: fail when two copies of a moving shard hold different rows';

CREATE OR REPLACE FUNCTION sharded_id._move_register_target(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_register_target');
    -- Nothing mints for the retired copy, so its sequences stay put.
    PERFORM sharded_id._remote_exec(tgt, format(
        'BEGIN; SET LOCAL client_min_messages = warning; '
        'SELECT sharded_id._lock_fence(%2$s); SELECT %4$L::pg_catalog.regnamespace; %1$s '
        'SELECT sharded_id.create_shard(%2$s, %3$L); '
        'SELECT sharded_id.raise_floor(s.shard_id, %5$s, s.layout) FROM sharded_id.shards s WHERE s.shard_id = %2$s AND %5$s IS NOT NULL; '
        'COMMIT',
        coalesce(sharded_id._move_setvals(src, m.schema_name), ''), m.shard_id, m.schema_name, quote_ident(m.schema_name),
        coalesce(m.high_water::text, 'NULL')));
END
$$;

COMMENT ON FUNCTION sharded_id._move_register_target(sharded_id.moves) IS
'internal: make a move''s target the owner of the shard, its ids above the source''s high-water mark';

CREATE OR REPLACE FUNCTION sharded_id._move_setvals(conn text, schema_name name)
RETURNS text
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_setvals');
    SELECT sharded_id._remote(conn, format(
        'SELECT string_agg(format(''SELECT pg_catalog.setval(%%L, %%s, %%s);'', format(''%%I.%%I'', schemaname, sequencename), '
        'coalesce(last_value, start_value), CASE WHEN last_value IS NULL THEN ''false'' ELSE ''true'' END), '' '') '
        'FROM pg_sequences WHERE schemaname = %L',
        schema_name))
$$;

COMMENT ON FUNCTION sharded_id._move_setvals(text, name) IS
'internal: a shard''s sequence positions on a node, as setval calls';

CREATE OR REPLACE FUNCTION sharded_id._move_switch(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    part text := format('p%s', m.shard_id);
    connstr text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_switch');
    LOCK TABLE sharded_id.shard_map IN EXCLUSIVE MODE;
    UPDATE sharded_id.shard_map SET node_name = m.target_node WHERE shard_id = m.shard_id;
    SELECT sharded_id._partition_connstr(n.connstr) INTO connstr
    FROM sharded_id.nodes n WHERE n.node_name = m.target_node;
    IF EXISTS (SELECT FROM pg_foreign_server s, unnest(s.srvoptions) o
               WHERE s.srvname = m.cluster AND o = format('%s=%s', split_part(o, '=', 1), connstr)
                 AND split_part(o, '=', 1) ~ '^p[0-9]+$')
       AND EXISTS (SELECT FROM pg_foreign_server s, unnest(s.srvoptions) o
                   WHERE s.srvname = m.cluster AND split_part(o, '=', 1) = part) THEN
        EXECUTE format('ALTER SERVER %I OPTIONS (SET %I %L)', m.cluster, part, connstr);
    ELSE
        PERFORM sharded_id._apply_shard_map(m.cluster, NULL, NULL, false);
    END IF;
    UPDATE sharded_id.moves SET state = 'switched', updated_at = clock_timestamp() WHERE move_id = m.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._move_switch(sharded_id.moves) IS
'internal: the router''s switch of a shard to its new node';

CREATE OR REPLACE FUNCTION sharded_id._move_follow_ops(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '10s'
AS $$
DECLARE
    ops record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_follow_ops');
    IF NOT EXISTS (SELECT FROM pg_foreign_data_wrapper WHERE fdwname = 'postgres_fdw') THEN
        RETURN;
    ELSIF NOT EXISTS (SELECT FROM pg_foreign_server WHERE srvname = sharded_id.node_server(m.target_node)) THEN
        PERFORM sharded_id._apply_shard_map(m.cluster, NULL, NULL, true);
        RETURN;
    END IF;
    FOR ops IN SELECT * FROM sharded_id.ops_tables LOOP
        PERFORM sharded_id._attach_ops_partition(ops.ops_table, m.shard_id);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_follow_ops(sharded_id.moves) IS
'internal: point a moved shard''s partition of every ops table at its new node';

CREATE OR REPLACE FUNCTION sharded_id._move_cleanup_hold(m sharded_id.moves, c sharded_id.move_cleanup, verb text)
RETURNS void
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_cleanup_hold');
    SELECT sharded_id._move_hold(format('%s_%s_%s', verb, c.object_type,
                                        CASE WHEN c.node_name = m.source_node THEN 'source' ELSE 'target' END))
$$;

COMMENT ON FUNCTION sharded_id._move_cleanup_hold(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: the hold point (sharded_id.move_hold) before a remote statement of a move''s cleanup';

CREATE OR REPLACE FUNCTION sharded_id._move_drop_subscription(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_subscription');
    IF NOT sharded_id._remote_exists(conn, format(
           'SELECT FROM pg_subscription WHERE subname = %L
            AND subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())', c.object_name)) THEN
        RETURN;
    END IF;
    PERFORM sharded_id._move_cleanup_hold(m, c, 'disable');
    PERFORM sharded_id._remote_exec(conn, format('ALTER SUBSCRIPTION %I DISABLE', c.object_name));
    PERFORM sharded_id._move_cleanup_hold(m, c, 'detach');
    PERFORM sharded_id._remote_exec(conn, format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', c.object_name));
    PERFORM sharded_id._move_cleanup_hold(m, c, 'drop');
    PERFORM sharded_id._remote_exec(conn, format('DROP SUBSCRIPTION %I', c.object_name));
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_subscription(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: drop a move''s subscription on its target, if it is there';

CREATE OR REPLACE FUNCTION sharded_id._move_drop_slot(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + interval '10 s';
    left_slots bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_slot');
    LOOP
        PERFORM sharded_id._move_cleanup_hold(m, c, 'drop');
        left_slots := (sharded_id._remote_json(conn, format(
            'WITH s AS (SELECT * FROM pg_replication_slots WHERE slot_name = %L OR (%s <> 0 AND slot_name LIKE %L)), '
            't AS (SELECT pg_terminate_backend(active_pid) FROM s WHERE active_pid IS NOT NULL), '
            'd AS (SELECT pg_drop_replication_slot(slot_name) FROM s WHERE NOT active) '
            'SELECT jsonb_build_object(''left'', (SELECT count(*) FROM s) - (SELECT count(*) FROM d) + 0 * (SELECT count(*) FROM t))',
            c.object_name, coalesce(m.sub_oid, 0), format('pg\_%s\_sync\_%%', coalesce(m.sub_oid, 0)))) ->> 'left')::bigint;
        EXIT WHEN left_slots = 0;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'could not drop replication slot "%" on node "%"', c.object_name, c.node_name
                USING ERRCODE = 'object_in_use',
                      HINT = 'Something keeps using it. CALL sharded_id.recover_moves() again once it is free.';
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_slot(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: drop a move''s replication slot and its subscription''s table-copy slots on its source, ending their walsenders';

CREATE OR REPLACE FUNCTION sharded_id._move_drop_publication(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_publication');
    PERFORM sharded_id._move_cleanup_hold(m, c, 'drop');
    PERFORM sharded_id._remote_exec(conn, format('DROP PUBLICATION IF EXISTS %I', c.object_name));
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_publication(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: drop a move''s publication on its source, if it is there';

CREATE OR REPLACE FUNCTION sharded_id._move_drop_mark(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_mark');
    PERFORM sharded_id._move_cleanup_hold(m, c, 'delete');
    PERFORM sharded_id._remote_exec(conn, format('DELETE FROM sharded_id.move_marks WHERE move_id = %s', c.object_name::bigint));
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_mark(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: delete a move''s catch-up mark on one of its nodes';

CREATE OR REPLACE FUNCTION sharded_id._move_drop_schema(m sharded_id.moves, c sharded_id.move_cleanup, conn text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_drop_schema');
    PERFORM sharded_id._move_cleanup_hold(m, c, 'drop');
    PERFORM sharded_id._remote_exec(conn, format(
        'SET client_min_messages = warning; DO $do$ BEGIN IF NOT EXISTS (SELECT FROM sharded_id.shards WHERE schema_name = %L) '
        'THEN DROP SCHEMA IF EXISTS %I CASCADE; END IF; END $do$', c.object_name, c.object_name));
END
$$;

COMMENT ON FUNCTION sharded_id._move_drop_schema(sharded_id.moves, sharded_id.move_cleanup, text) IS
'internal: drop a copy of a shard''s schema that a move left on a node, unless the node holds it as a shard; the old copy only once the new one is checked';

CREATE OR REPLACE FUNCTION sharded_id._move_cleanup(m sharded_id.moves, moved boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c sharded_id.move_cleanup;
    conn text;
    left_over integer;
    err text;
    err_state text;
    err_detail text;
    err_hint text;
    first_err text;
    first_detail text;
    first_hint text;
    first_state text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_cleanup');
    -- The ops tables follow the switch before the old copy goes (move_shard
    -- and recover_moves have tried already, and committed).  If they cannot
    -- (a reader holds them), the old copy they read stays, for the deferred
    -- cleanup, which tries again.
    IF moved THEN
        BEGIN
            PERFORM sharded_id._move_follow_ops(m);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE;
            first_err := format('the ops tables of shard %s still read node "%s": %s', m.shard_id, m.source_node, err);
            first_state := err_state;
        END;
    END IF;
    DELETE FROM sharded_id.move_cleanup x
    WHERE x.move_id = m.move_id AND x.policy = CASE WHEN moved THEN 'on_failure' ELSE 'on_success' END;
    FOR c IN
        SELECT * FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id
        ORDER BY CASE x.object_type WHEN 'subscription' THEN 1 WHEN 'slot' THEN 2 WHEN 'publication' THEN 3
                                    WHEN 'mark' THEN 4 ELSE 5 END, x.node_name
    LOOP
        IF moved AND c.object_type = 'schema' THEN
            -- The old copy stays while the ops tables read it, and until the
            -- new copy is found the same schema.
            CONTINUE WHEN first_err LIKE 'the ops tables %';
            IF m.copy_checked_at IS NULL THEN
                BEGIN
                    PERFORM sharded_id._move_check_copy(m);
                    UPDATE sharded_id.moves x SET copy_checked_at = clock_timestamp()
                    WHERE x.move_id = m.move_id RETURNING x.copy_checked_at INTO m.copy_checked_at;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE,
                                            err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
                    IF err_state = 'XX001' AND m.state IS DISTINCT FROM 'cleanup pending' THEN
                        -- Right after the switch: the new copy is not what
                        -- the old one was, not a leftover.
                        RAISE;
                    END IF;
                    IF first_err IS NULL THEN
                        first_err := format('the old copy of shard %s on node "%s" is kept: %s', m.shard_id, c.node_name, err);
                        first_state := err_state;
                        first_detail := nullif(err_detail, '');
                        first_hint := CASE WHEN err_state = 'XX001' THEN
                            'The new copy has changed since the switch, or was never the same: compare the two, then drop the old copy by hand and delete its row from sharded_id.move_cleanup.'
                            ELSE nullif(err_hint, '') END;
                    END IF;
                    CONTINUE;
                END;
            END IF;
        END IF;
        BEGIN
            conn := sharded_id._move_conn(m.move_id, 'cleanup', c.node_name);
            PERFORM sharded_id._remote_open(conn, c.node_name);
            CASE c.object_type
            WHEN 'subscription' THEN PERFORM sharded_id._move_drop_subscription(m, c, conn);
            WHEN 'slot' THEN PERFORM sharded_id._move_drop_slot(m, c, conn);
            WHEN 'publication' THEN PERFORM sharded_id._move_drop_publication(m, c, conn);
            WHEN 'mark' THEN PERFORM sharded_id._move_drop_mark(m, c, conn);
            WHEN 'schema' THEN PERFORM sharded_id._move_drop_schema(m, c, conn);
            END CASE;
            DELETE FROM sharded_id.move_cleanup x
            WHERE x.move_id = c.move_id AND x.node_name = c.node_name
              AND x.object_type = c.object_type AND x.object_name = c.object_name;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE,
                                    err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
            -- The next record of the node tries a new connection.
            BEGIN
                PERFORM sharded_id._remote_close(conn);
            EXCEPTION WHEN OTHERS THEN
                NULL;
            END;
            IF first_err IS NULL THEN
                first_err := format('node "%s", %s %s: %s', c.node_name, c.object_type, c.object_name, err);
                first_state := err_state;
                first_detail := nullif(err_detail, '');
                first_hint := nullif(err_hint, '');
            END IF;
        END;
    END LOOP;
    IF first_err IS NOT NULL AND NOT moved THEN
        -- The first failure's own detail and hint say what to do about it.
        RAISE EXCEPTION 'could not drop everything move % made: %', m.move_id, first_err
            USING ERRCODE = first_state, DETAIL = coalesce(first_detail, ''),
                  HINT = coalesce(first_hint, 'CALL sharded_id.recover_moves() again once every node answers.');
    END IF;
    left_over := (SELECT count(*) FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id);
    UPDATE sharded_id.moves x
    SET state = CASE WHEN left_over = 0 THEN 'finished' ELSE 'cleanup pending' END,
        outcome = CASE WHEN moved THEN 'moved' ELSE 'rolled back' END,
        finished_at = coalesce(x.finished_at, clock_timestamp()), updated_at = clock_timestamp(),
        error = CASE WHEN first_err IS NULL THEN x.error ELSE coalesce(x.error, 'cleanup: ' || first_err) END
    WHERE x.move_id = m.move_id;
    IF first_err IS NOT NULL THEN
        RAISE WARNING 'move % of shard % to node "%" is done, but its cleanup is pending: %', m.move_id, m.shard_id, m.target_node, first_err
            USING DETAIL = format('Node "%s" owns the shard and the shard map names it. %s of what the move made on the nodes is left (sharded_id.move_cleanup)%s.%s',
                                  m.target_node, left_over,
                                  CASE WHEN EXISTS (SELECT FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id AND x.object_type = 'slot')
                                       THEN format(', among it replication slot "%s" on node "%s", which keeps the WAL the node writes', 'sharded_id_move_' || m.shard_id, m.source_node)
                                       ELSE '' END,
                                  coalesce(' ' || first_detail, '')),
                  HINT = coalesce(first_hint, 'CALL sharded_id.recover_moves() once every node answers; the next move of the shard drops it too.');
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_cleanup(sharded_id.moves, boolean) IS
'internal: drop what a finished or rolled-back move left on its nodes, as its cleanup records say, one function per kind of object; after a switch, what cannot be dropped is left to a deferred cleanup, with a warning';

CREATE OR REPLACE FUNCTION sharded_id._move_deferred_cleanup(move_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_deferred_cleanup');
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_deferred_cleanup.move_id FOR UPDATE;
    IF m.finished_at IS NULL THEN
        RAISE EXCEPTION 'move % is unfinished', move_id USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM sharded_id._remote_close_all(format('sharded_id_%s_', m.move_id));
    PERFORM sharded_id._move_cleanup(m, m.outcome = 'moved');
    RETURN NOT EXISTS (SELECT FROM sharded_id.move_cleanup x WHERE x.move_id = m.move_id);
END
$$;

CREATE OR REPLACE FUNCTION sharded_id._move_try_deferred_cleanup(move_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_try_deferred_cleanup');
    BEGIN
        RETURN sharded_id._move_deferred_cleanup(move_id);
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'the deferred cleanup of move % failed: %', move_id, SQLERRM
            USING HINT = 'CALL sharded_id.recover_moves() again once the cause is gone.';
        RETURN false;
    END;
END
$$;

COMMENT ON FUNCTION sharded_id._move_try_deferred_cleanup(bigint) IS
'internal: the deferred cleanup of one move, with a warning instead of an error, so that recover_moves goes on with the others';

COMMENT ON FUNCTION sharded_id._move_deferred_cleanup(bigint) IS
'internal: drop what a finished move left on its nodes when its cleanup was cut short (state cleanup pending); true when nothing is left';

CREATE OR REPLACE FUNCTION sharded_id._move_take_back(m sharded_id.moves, why text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'take_back_source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'take_back_target', m.target_node);
    mark text;
    msg text;
    state text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_take_back');
    PERFORM sharded_id._remote_close(c) FROM unnest(ARRAY[src, tgt]) c;
    PERFORM sharded_id._remote_open(tgt, m.target_node);
    PERFORM sharded_id._remote_exec(tgt, format(
        'BEGIN; SET LOCAL client_min_messages = warning; '
        'SELECT sharded_id._lock_fence(%1$s); '
        'DO $take_back$ BEGIN '
        'IF EXISTS (SELECT FROM sharded_id.shards WHERE shard_id = %1$s OR schema_name = %2$L) THEN '
        'RAISE EXCEPTION ''shard %1$s is registered on the target'' USING ERRCODE = ''object_not_in_prerequisite_state''; '
        'END IF; END $take_back$; '
        'DROP SCHEMA IF EXISTS %3$I CASCADE; COMMIT',
        m.shard_id, m.schema_name, m.schema_name));
    PERFORM sharded_id._remote_open(src, m.source_node);
    mark := sharded_id._remote_json(src, format(
        'SELECT jsonb_build_object(''high_water'', high_water) FROM sharded_id.retired_shards WHERE shard_id = %s', m.shard_id))
        ->> 'high_water';
    PERFORM sharded_id._remote_exec(src, format(
        'BEGIN; SET LOCAL client_min_messages = warning; '
        'SELECT sharded_id._lock_fence(%1$s); '
        'DO $take_back$ BEGIN '
        'IF NOT EXISTS (SELECT FROM sharded_id.move_retirements WHERE shard_id = %1$s AND move_id = %2$s) THEN '
        'RAISE EXCEPTION ''move %2$s did not retire shard %1$s on the source'' USING ERRCODE = ''object_not_in_prerequisite_state''; '
        'END IF; END $take_back$; '
        'SELECT sharded_id._on_schema_tables(%3$L, ''ALTER TABLE %%s DROP CONSTRAINT IF EXISTS sharded_id_moved''); '
        'DELETE FROM sharded_id.move_retirements WHERE shard_id = %1$s AND move_id = %2$s; '
        'SELECT sharded_id.create_shard(%1$s, %3$L); '
        'SELECT sharded_id.raise_floor(s.shard_id, %4$s, s.layout) FROM sharded_id.shards s WHERE s.shard_id = %1$s AND %4$s IS NOT NULL; '
        'COMMIT',
        m.shard_id, m.move_id, m.schema_name, coalesce(mark, 'NULL')));
    PERFORM sharded_id._remote_close(c) FROM unnest(ARRAY[src, tgt]) c;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, state = RETURNED_SQLSTATE;
    PERFORM sharded_id._remote_close(c) FROM unnest(ARRAY[src, tgt]) c;
    RAISE EXCEPTION 'move % of shard % can be neither finished nor rolled back: %', m.move_id, m.shard_id, msg
        USING ERRCODE = state,
              DETAIL = format('Node "%s" retired the shard for the move, and node "%s" did not take it: %s', m.source_node, m.target_node, why),
              HINT = 'Once both nodes answer and the cause is gone, CALL sharded_id.recover_moves() again.';
END
$$;

COMMENT ON FUNCTION sharded_id._move_take_back(sharded_id.moves, text) IS
'internal: roll back a move after its source retired the shard and its target refused it: the copy off the target, the shard back on the source';

CREATE OR REPLACE FUNCTION sharded_id._move_resolve(move_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
    routed_to text;
    src text;
    tgt text;
    retired_by bigint;
    source_owns boolean;
    target_owns boolean;
    refused text;
    refused_state text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_resolve');
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_resolve.move_id FOR UPDATE;
    IF m.finished_at IS NOT NULL THEN
        RETURN m.outcome = 'moved';
    END IF;
    -- Fresh connections: the move's own may have died with a node, and
    -- its freeze, if any, ends here.
    PERFORM sharded_id._remote_close_all(format('sharded_id_%s_', m.move_id));
    routed_to := (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = m.shard_id);
    IF routed_to = m.target_node THEN
        PERFORM sharded_id._move_cleanup(m, true);
        RETURN true;
    END IF;
    src := sharded_id._move_open(m, 'source');
    source_owns := sharded_id._remote_exists(src, format(
        'SELECT FROM sharded_id.shards WHERE shard_id = %s', m.shard_id));
    BEGIN
        tgt := sharded_id._move_open(m, 'target');
        target_owns := sharded_id._remote_exists(tgt, format(
            'SELECT FROM sharded_id.shards WHERE shard_id = %s', m.shard_id));
    EXCEPTION WHEN connection_exception THEN
        -- A target that does not answer cannot own the shard while the
        -- source does (it registers only after the source retires): roll
        -- back what can be, and keep the rest for the next try.
        IF NOT source_owns THEN
            RAISE;
        END IF;
    END;
    IF source_owns AND target_owns THEN
        RAISE EXCEPTION 'shard % is registered on both "%" and "%"', m.shard_id, m.source_node, m.target_node
            USING ERRCODE = 'data_corrupted',
                  DETAIL = format('Move %s cannot tell which copy to keep.', m.move_id),
                  HINT = 'Retire the copy that is not current with sharded_id.retire_shard, then recover again.';
    ELSIF source_owns THEN
        PERFORM sharded_id._move_cleanup(m, false);
        RETURN false;
    END IF;
    -- Retired on the source: forward only if the source says this move
    -- retired it, and the copy holds what the retired source holds (the
    -- source retires only after the target caught up and replication
    -- stopped).  Otherwise change nothing.
    retired_by := (sharded_id._remote_json(src, format(
        'SELECT jsonb_build_object(''move_id'', move_id) FROM sharded_id.move_retirements WHERE shard_id = %s', m.shard_id))
        ->> 'move_id')::bigint;
    IF retired_by IS DISTINCT FROM m.move_id THEN
        RAISE EXCEPTION 'move % of shard % can be neither finished nor rolled back: node "%" no longer owns the shard, but the move did not retire it',
                        m.move_id, m.shard_id, m.source_node
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = CASE WHEN retired_by IS NULL THEN 'No move retired it there: it was retired or dropped otherwise.'
                                ELSE format('Move %s retired it there.', retired_by) END || ' Recovery changed nothing.',
                  HINT = 'Find the node that holds the shard''s rows, register the shard there, point the shard map at it, and then recover again.';
    END IF;
    IF target_owns THEN
        PERFORM sharded_id._move_compare(m, src, tgt);
    ELSE
        -- Not registered on the target: forward when the copy holds what
        -- the retired source holds and the target takes it; when the
        -- target answers but differs or refuses (a row planted in its copy
        -- that no floor may be raised over), back, the source taking the
        -- shard back.  A target that does not answer keeps the move for
        -- the next try.
        IF m.method = 'online' THEN
            PERFORM sharded_id._remote_exec(tgt, format(
                'ALTER SUBSCRIPTION %I DISABLE', 'sharded_id_move_' || m.shard_id))
            WHERE sharded_id._remote_exists(tgt, format(
                'SELECT FROM pg_subscription WHERE subname = %L AND subenabled', 'sharded_id_move_' || m.shard_id));
        END IF;
        BEGIN
            PERFORM sharded_id._move_compare(m, src, tgt);
            m.high_water := (sharded_id._remote_json(src, format(
                'SELECT jsonb_build_object(''high_water'', high_water) FROM sharded_id.retired_shards WHERE shard_id = %s', m.shard_id))
                ->> 'high_water')::bigint;
            UPDATE sharded_id.moves x SET high_water = m.high_water WHERE x.move_id = m.move_id;
            PERFORM sharded_id._move_register_target(m);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS refused = MESSAGE_TEXT, refused_state = RETURNED_SQLSTATE;
            IF refused_state LIKE '08%' OR refused_state IN ('57P01', '57P02', '57P03', '57014') THEN
                RAISE;
            END IF;
            PERFORM sharded_id._move_take_back(m, refused);
            UPDATE sharded_id.moves x SET error = coalesce(x.error || '; ', '') || 'rolled back: ' || refused
            WHERE x.move_id = m.move_id;
            PERFORM sharded_id._move_cleanup(m, false);
            RETURN false;
        END;
    END IF;
    PERFORM sharded_id._move_switch(m);
    PERFORM sharded_id._move_cleanup(m, true);
    RETURN true;
END
$$;

COMMENT ON FUNCTION sharded_id._move_resolve(bigint) IS
'internal: finish or roll back an interrupted move, from its journal and the state of its nodes';

CREATE OR REPLACE FUNCTION sharded_id._move_record_objects(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    repl text := 'sharded_id_move_' || m.shard_id;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_record_objects');
    PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'schema', m.schema_name, 'on_failure');
    PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'schema', m.schema_name, 'on_success');
    IF m.method = 'online' THEN
        PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'publication', repl, 'always');
        PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'slot', repl, 'always');
        PERFORM sharded_id._move_will_create(m.move_id, m.source_node, 'mark', m.move_id::text, 'always');
        PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'subscription', repl, 'always');
        PERFORM sharded_id._move_will_create(m.move_id, m.target_node, 'mark', m.move_id::text, 'always');
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_record_objects(sharded_id.moves) IS
'internal: step record_objects of a move: record what it will make on its nodes, and when to drop it';

CREATE OR REPLACE FUNCTION sharded_id._move_create_publication(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    repl text := 'sharded_id_move_' || m.shard_id;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_create_publication');
    PERFORM sharded_id._remote_exec(src, format(
        'CREATE PUBLICATION %I FOR TABLES IN SCHEMA %I, TABLE sharded_id.move_marks WHERE (move_id = %s)',
        repl, m.schema_name, m.move_id));
    PERFORM sharded_id._remote(src, format(
        'SELECT 1 FROM pg_create_logical_replication_slot(%L, ''pgoutput'')', repl));
END
$$;

COMMENT ON FUNCTION sharded_id._move_create_publication(sharded_id.moves) IS
'internal: step create_publication of an online move: its publication and replication slot on the source';

CREATE OR REPLACE FUNCTION sharded_id._move_subscribe(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    repl text := 'sharded_id_move_' || m.shard_id;
    ddl text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_subscribe');
    ddl := sharded_id._remote(src, format('SELECT sharded_id._move_schema_ddl(%L)', m.schema_name));
    PERFORM sharded_id._remote_exec(tgt, format(
        'BEGIN; SET LOCAL client_min_messages = warning; %s; '
        'CREATE SUBSCRIPTION %I CONNECTION %L PUBLICATION %I WITH (create_slot = false, slot_name = %L, '
        'copy_data = true, synchronous_commit = on, disable_on_error = true%s); COMMIT',
        ddl, repl, sharded_id._move_subscription_connstr(m), repl, repl, sharded_id._move_subscription_options(m)));
    UPDATE sharded_id.moves x SET sub_oid = (sharded_id._remote_json(tgt, format(
        'SELECT jsonb_build_object(''oid'', oid) FROM pg_subscription WHERE subname = %L
         AND subdbid = (SELECT oid FROM pg_database WHERE datname = current_database())', repl)) ->> 'oid')::oid
    WHERE x.move_id = m.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._move_subscribe(sharded_id.moves) IS
'internal: step subscribe of an online move: the empty schema and the subscription that fills it, on the target';

CREATE OR REPLACE FUNCTION sharded_id._move_lost_sync_slots(m sharded_id.moves)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    syncs jsonb;
    lost jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_lost_sync_slots');
    -- {slot name prefix: {"table": name, "alive": worker alive}}
    syncs := sharded_id._remote_json(tgt, format(
        'SELECT jsonb_object_agg(format(''pg_%%s_sync_%%s_'', r.srsubid, r.srrelid),
                                 jsonb_build_object(''table'', r.srrelid::regclass::text,
                                                    ''alive'', EXISTS (SELECT FROM pg_stat_subscription w
                                                                       WHERE w.subid = r.srsubid AND w.relid = r.srrelid
                                                                         AND w.pid IS NOT NULL)))
         FROM pg_subscription_rel r WHERE r.srsubid = %s AND r.srsubstate = ''f''', m.sub_oid));
    IF syncs IS NULL THEN
        RETURN NULL;
    END IF;
    BEGIN
        lost := sharded_id._remote_json(sharded_id._move_open(m, 'source'), format(
            'SELECT jsonb_build_object(''missing'', count(*),
                                       ''dead'', string_agg(j.value->>''table'', '', '' ORDER BY j.value->>''table'')
                                                 FILTER (WHERE NOT (j.value->>''alive'')::boolean))
             FROM jsonb_each(%L::jsonb) j
             WHERE NOT EXISTS (SELECT FROM pg_replication_slots s
                               WHERE starts_with(s.slot_name, j.key) AND s.wal_status IS DISTINCT FROM ''lost'')',
            syncs));
    EXCEPTION WHEN connection_exception OR admin_shutdown OR crash_shutdown OR cannot_connect_now THEN
        RETURN NULL;
    END;
    RETURN CASE WHEN (lost->>'missing')::bigint > 0 THEN lost END;
END
$$;

COMMENT ON FUNCTION sharded_id._move_lost_sync_slots(sharded_id.moves) IS
'internal: the copied tables of an online move whose synchronization slot is gone from the source, and which of them no worker still syncs';

CREATE OR REPLACE FUNCTION sharded_id._move_copy(m sharded_id.moves, timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    deadline timestamptz := clock_timestamp() + timeout;
    sub jsonb;
    lost jsonb;
    lost_polls integer := 0;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_copy');
    LOOP
        sub := sharded_id._remote_json(tgt, format(
            'SELECT jsonb_build_object(''enabled'', s.subenabled,
                                       ''unready'', count(*) FILTER (WHERE r.srsubstate <> ''r''),
                                       ''finished_copy'', count(*) FILTER (WHERE r.srsubstate = ''f''))
             FROM pg_subscription s LEFT JOIN pg_subscription_rel r ON r.srsubid = s.oid
             WHERE s.oid = %s GROUP BY s.subenabled', m.sub_oid));
        IF sub IS NULL OR NOT (sub->>'enabled')::boolean THEN
            RAISE EXCEPTION 'the subscription of move % stopped during the copy', m.move_id
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = 'The target''s server log says why.';
        END IF;
        EXIT WHEN (sub->>'unready')::bigint = 0;
        lost := CASE WHEN (sub->>'finished_copy')::bigint > 0 THEN sharded_id._move_lost_sync_slots(m) END;
        lost_polls := CASE WHEN lost IS NULL THEN 0 WHEN lost->>'dead' IS NULL THEN lost_polls ELSE lost_polls + 1 END;
        IF lost_polls >= 200 THEN
            RAISE EXCEPTION 'the copy of shard % cannot finish: the synchronization of % has no usable slot on node "%"',
                            m.shard_id, lost->>'dead', m.source_node
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = 'The target copied the table, but the replication slot its catch-up reads is gone or invalidated on the source; a new move copies the table afresh.';
        END IF;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'the copy of shard % did not finish within %', m.shard_id, timeout
                USING ERRCODE = 'lock_not_available';
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_copy(sharded_id.moves, interval) IS
'internal: step copy of an online move: wait until the subscription has synchronized every table, failing on one that cannot finish';

CREATE OR REPLACE FUNCTION sharded_id._move_wait_lag(m sharded_id.moves, max_lag bigint, timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    repl text := 'sharded_id_move_' || m.shard_id;
    deadline timestamptz := clock_timestamp() + timeout;
    lag bigint;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_wait_lag');
    LOOP
        lag := (sharded_id._remote_json(src, format(
            'SELECT jsonb_build_object(''lag'', pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint)
             FROM pg_replication_slots WHERE slot_name = %L',
            repl)) ->> 'lag')::bigint;
        IF lag IS NULL THEN
            RAISE EXCEPTION 'replication slot "%" is gone from node "%"', repl, m.source_node
                USING ERRCODE = 'undefined_object';
        END IF;
        EXIT WHEN lag <= max_lag;
        IF clock_timestamp() > deadline THEN
            RAISE EXCEPTION 'the lag of the copy of shard % stayed over % bytes for %', m.shard_id, max_lag, timeout
                USING ERRCODE = 'lock_not_available';
        END IF;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_wait_lag(sharded_id.moves, bigint, interval) IS
'internal: step catch_up of an online move: wait until its slot''s lag is at most max_lag bytes';

CREATE OR REPLACE FUNCTION sharded_id._move_compare_frozen(m sharded_id.moves, timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    snaps text[];
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_compare_frozen');
    PERFORM sharded_id._move_open_freeze(m);
    snaps := ARRAY[sharded_id._move_open(m, 'snap_source'), sharded_id._move_open(m, 'snap_target')];
    PERFORM sharded_id._remote_exec(c, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY') FROM unnest(snaps) c;
    PERFORM sharded_id._move_catch_up(m, timeout);
    PERFORM sharded_id._move_freeze_source(m, freeze_timeout);
    PERFORM sharded_id._move_catch_up(m, freeze_timeout);
    PERFORM sharded_id._remote(c, 'SELECT 1') FROM unnest(snaps) c;
    PERFORM sharded_id._remote_close(sharded_id._move_conn(m.move_id, 'freeze', m.source_node));
    PERFORM sharded_id._move_compare(m, snaps[1], snaps[2]);
    PERFORM sharded_id._remote_close(c) FROM unnest(snaps) c;
END
$$;

COMMENT ON FUNCTION sharded_id._move_compare_frozen(sharded_id.moves, interval, interval) IS
'internal: step compare of an online move: compare both copies in snapshots taken in a short freeze of the source';

CREATE OR REPLACE FUNCTION sharded_id._move_freeze(m sharded_id.moves, timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_freeze');
    PERFORM sharded_id._move_open_freeze(m);
    IF m.method = 'online' THEN
        PERFORM sharded_id._move_catch_up(m, timeout);
    END IF;
    PERFORM sharded_id._move_lock_route(m, freeze_timeout);
    PERFORM sharded_id._move_freeze_source(m, freeze_timeout);
    IF m.method = 'online' THEN
        PERFORM sharded_id._move_catch_up(m, freeze_timeout);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_freeze(sharded_id.moves, interval, interval) IS
'internal: step freeze of a move: the route lock on the router and the freezing transaction on the source, the target caught up';

CREATE OR REPLACE FUNCTION sharded_id._move_stop_replication(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_stop_replication');
    PERFORM sharded_id._remote_exec(sharded_id._move_conn(m.move_id, 'target', m.target_node),
                                    format('ALTER SUBSCRIPTION %I DISABLE', 'sharded_id_move_' || m.shard_id));
END
$$;

COMMENT ON FUNCTION sharded_id._move_stop_replication(sharded_id.moves) IS
'internal: step stop_replication of an online move, in its freeze: disable the subscription on the target';

CREATE OR REPLACE FUNCTION sharded_id._move_copy_rows(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text := sharded_id._move_conn(m.move_id, 'source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    frz text := sharded_id._move_conn(m.move_id, 'freeze', m.source_node);
    ddl text;
    t record;
    tbl text;
    batch text[];
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_copy_rows');
    ddl := sharded_id._remote(src, format('SELECT sharded_id._move_schema_ddl(%L)', m.schema_name));
    PERFORM sharded_id._remote_exec(tgt, format('BEGIN; SET LOCAL client_min_messages = warning; %s; COMMIT', ddl));
    -- Each table by oid, then its name, quoted on the source.
    FOR t IN
        SELECT * FROM unnest(sharded_id._remote_rows(frz, format(
            'SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = %L AND c.relkind = ''r'' ORDER BY c.oid', m.schema_name))) AS rel
    LOOP
        tbl := sharded_id._remote(frz, format('SELECT %s::regclass::text', t.rel));
        PERFORM sharded_id._remote_exec(frz, format(
            'DECLARE shid_rows NO SCROLL CURSOR FOR SELECT r FROM sharded_id._table_rows(%L) r', tbl));
        LOOP
            batch := sharded_id._remote_rows(frz, 'FETCH 10000 FROM shid_rows');
            EXIT WHEN batch IS NULL;
            PERFORM sharded_id._remote_exec(tgt, format(
                'SET session_replication_role = replica; '
                'SELECT sharded_id._insert_as_owner(%L, %L::text[]); '
                'RESET session_replication_role',
                tbl, batch));
        END LOOP;
        PERFORM sharded_id._remote_exec(frz, 'CLOSE shid_rows');
    END LOOP;
    PERFORM sharded_id._move_compare(m, frz, tgt);
END
$$;

COMMENT ON FUNCTION sharded_id._move_copy_rows(sharded_id.moves) IS
'internal: step copy_rows of a move by dump, in its freeze: the schema and every row, read on the source, written as each table''s owner on the target';

CREATE OR REPLACE FUNCTION sharded_id._move_retire_source(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tgt text := sharded_id._move_conn(m.move_id, 'target', m.target_node);
    frz text := sharded_id._move_conn(m.move_id, 'freeze', m.source_node);
    layout text;
    mark text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_retire_source');
    layout := sharded_id._remote_json(frz, format(
        'SELECT jsonb_build_object(''layout'', layout) FROM sharded_id.shards WHERE shard_id = %s', m.shard_id)) ->> 'layout';
    PERFORM sharded_id._remote(c, format('SELECT sharded_id._check_floors(%s, %L, %L)', m.shard_id, m.schema_name, layout))
    FROM unnest(ARRAY[frz, tgt]) c;
    mark := sharded_id._remote_json(frz, format(
        'SELECT jsonb_build_object(''high_water'', sharded_id.high_water(%s, %L))', m.shard_id, layout)) ->> 'high_water';
    IF mark IS NOT NULL THEN
        PERFORM sharded_id._remote(tgt, format('SELECT sharded_id._check_floor(%s, %s, %L, %L)',
                                               m.shard_id, mark, layout, format('the source, node "%s",', m.source_node)));
    END IF;
    UPDATE sharded_id.moves x SET high_water = (sharded_id._remote_json(frz, format(
        'SELECT jsonb_build_object(''high_water'', sharded_id.retire_shard(%s))', m.shard_id)) ->> 'high_water')::bigint
    WHERE x.move_id = m.move_id;
    PERFORM sharded_id._remote_exec(frz, format(
        'SELECT sharded_id._on_schema_tables(%L, ''ALTER TABLE %%s ADD CONSTRAINT sharded_id_moved CHECK (false) NOT VALID''); '
        'INSERT INTO sharded_id.move_retirements AS r (shard_id, move_id) VALUES (%s, %s) '
        'ON CONFLICT (shard_id) DO UPDATE SET move_id = excluded.move_id, retired_at = excluded.retired_at',
        m.schema_name, m.shard_id, m.move_id));
    PERFORM sharded_id._remote_exec(frz, 'COMMIT');
    PERFORM sharded_id._remote_close(frz);
    PERFORM sharded_id._move_hold('retired');
END
$$;

COMMENT ON FUNCTION sharded_id._move_retire_source(sharded_id.moves) IS
'internal: step retire_source of a move, in its freeze: check the floors again, then retire the shard on the source and fence its old copy, and commit';

CREATE OR REPLACE FUNCTION sharded_id._move_step(move_id bigint, step text, max_lag bigint,
                                      timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_step');
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_step.move_id;
    IF step NOT IN ('stop_replication', 'retire_source', 'register_target', 'switch') THEN
        PERFORM sharded_id._move_open(m, 'source');
        PERFORM sharded_id._move_open(m, 'target');
    END IF;
    CASE step
    WHEN 'record_objects' THEN PERFORM sharded_id._move_record_objects(m);
    WHEN 'create_publication' THEN PERFORM sharded_id._move_create_publication(m);
    WHEN 'subscribe' THEN PERFORM sharded_id._move_subscribe(m);
    WHEN 'copy' THEN PERFORM sharded_id._move_copy(m, timeout);
    WHEN 'catch_up' THEN PERFORM sharded_id._move_wait_lag(m, max_lag, timeout);
    WHEN 'compare' THEN PERFORM sharded_id._move_compare_frozen(m, timeout, freeze_timeout);
    WHEN 'freeze' THEN PERFORM sharded_id._move_freeze(m, timeout, freeze_timeout);
    WHEN 'stop_replication' THEN PERFORM sharded_id._move_stop_replication(m);
    WHEN 'copy_rows' THEN PERFORM sharded_id._move_copy_rows(m);
    WHEN 'retire_source' THEN PERFORM sharded_id._move_retire_source(m);
    WHEN 'register_target' THEN
        PERFORM sharded_id._move_register_target(m);
        PERFORM sharded_id._move_hold('registered');
    WHEN 'switch' THEN PERFORM sharded_id._move_switch(m);
    ELSE
        RAISE EXCEPTION 'unknown move step "%"', step USING ERRCODE = 'internal_error';
    END CASE;
END
$$;

COMMENT ON FUNCTION sharded_id._move_step(bigint, text, bigint, interval, interval) IS
'internal: take one step of a move, by the function of that step';

CREATE OR REPLACE FUNCTION sharded_id._check_move_arguments(method text, cluster name, max_lag bigint,
                                                 timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._check_move_arguments');
    IF method IS NOT NULL AND method NOT IN ('online', 'dump') THEN
        RAISE EXCEPTION 'move method "%" is not online or dump', method
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF cluster IS NULL THEN
        RAISE EXCEPTION 'cluster must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_foreign_server s JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw
                   WHERE s.srvname = cluster AND w.fdwname = 'plproxy') THEN
        RAISE EXCEPTION 'PL/Proxy cluster "%" does not exist', cluster
            USING ERRCODE = 'undefined_object',
                  DETAIL = 'A move switches the shard in the cluster that routes its writers.',
                  HINT = 'Name the cluster that sharded_id.apply_shard_map made, or make it with sharded_id.apply_shard_map(cluster).';
    END IF;
    IF max_lag < 0 THEN
        RAISE EXCEPTION 'max_lag % is out of range', max_lag
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The lag a move waits for before its comparison is a number of bytes, 0 or more.';
    END IF;
    IF timeout <= interval '0' OR freeze_timeout <= interval '0' THEN
        RAISE EXCEPTION 'timeout % and freeze_timeout % must be longer than 0', timeout, freeze_timeout
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._check_move_arguments(text, name, bigint, interval, interval) IS
'internal: refuse a bad method, cluster, lag or timeout of move_shard or rebalance before anything is done';

CREATE OR REPLACE FUNCTION sharded_id._move_check_call(shard_id integer, target_node text, method text, dry_run boolean,
                                            cluster name, max_lag bigint, timeout interval, freeze_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_call');
    IF shard_id IS NULL OR target_node IS NULL OR dry_run IS NULL OR cluster IS NULL
       OR max_lag IS NULL OR timeout IS NULL OR freeze_timeout IS NULL THEN
        RAISE EXCEPTION 'arguments of move_shard must not be null, except method'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM sharded_id._check_move_arguments(method, cluster, max_lag, timeout, freeze_timeout);
    PERFORM sharded_id._dblink_schema();
    PERFORM sharded_id._remote_close_all('sharded_id_');
    IF NOT dry_run THEN
        PERFORM sharded_id._move_claim(shard_id);
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_call(integer, text, text, boolean, name, bigint, interval, interval) IS
'internal: check move_shard''s arguments and take the shard''s move lock, unless a dry run';

CREATE OR REPLACE FUNCTION sharded_id._move_check_versions(src text, tgt text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    q text := 'SELECT jsonb_build_object(''version'', extversion) FROM pg_extension WHERE extname = ''sharded_id''';
    router text := (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'sharded_id');
    source text := sharded_id._remote_json(src, q) ->> 'version';
    target text := sharded_id._remote_json(tgt, q) ->> 'version';
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_versions');
    IF source IS DISTINCT FROM router OR target IS DISTINCT FROM router THEN
        RAISE EXCEPTION 'sharded_id versions differ: router %, source %, target %',
                        router, coalesce(source, 'none'), coalesce(target, 'none')
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run ALTER EXTENSION sharded_id UPDATE on every node and on the router.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_versions(text, text) IS
'internal: fail unless the router, the source and the target run the same version of sharded_id';

CREATE OR REPLACE FUNCTION sharded_id._move_check_source_holds(src text, source text, shard_id integer)
RETURNS name
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema name;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_source_holds');
    schema := sharded_id._remote_json(src, format(
        'SELECT jsonb_build_object(''schema_name'', schema_name) FROM sharded_id.shards WHERE shard_id = %s', shard_id)) ->> 'schema_name';
    IF schema IS NULL THEN
        RAISE EXCEPTION 'node "%" does not hold shard %', source, shard_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The shard map names the node, but its sharded_id.shards has no such shard.';
    END IF;
    RETURN schema;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_source_holds(text, text, integer) IS
'internal: fail unless the source registers the shard; return its schema';

CREATE OR REPLACE FUNCTION sharded_id._move_check_target_free(tgt text, target_node text, shard_id integer, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_target_free');
    IF sharded_id._remote_exists(tgt, format(
           'SELECT FROM sharded_id.shards WHERE shard_id = %s OR schema_name = %L UNION ALL SELECT FROM pg_namespace WHERE nspname = %L',
           shard_id, schema, schema)) THEN
        RAISE EXCEPTION 'node "%" already holds shard % or a schema "%"', target_node, shard_id, schema
            USING ERRCODE = 'duplicate_object';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_target_free(text, text, integer, name) IS
'internal: fail when the target holds the shard or a schema of its name';

CREATE OR REPLACE FUNCTION sharded_id._move_check_row_security(src text, tgt text, source text, target_node text,
                                                    shard_id integer, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tables text;
    n record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_row_security');
    tables := sharded_id._remote_json(src, format(
        'SELECT jsonb_build_object(''tables'', string_agg(format(''%%I'', c.relname), '', '' ORDER BY c.relname))
         FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
         WHERE s.nspname = %L AND c.relkind IN (''r'', ''p'') AND c.relrowsecurity', schema)) ->> 'tables';
    IF tables IS NULL THEN
        RETURN;
    END IF;
    FOR n IN SELECT * FROM (VALUES (1, source, src), (2, target_node, tgt)) v(k, node, conn) ORDER BY k LOOP
        IF NOT sharded_id._remote_exists(n.conn,
               'SELECT FROM pg_roles WHERE rolname = current_user AND (rolsuper OR rolbypassrls)') THEN
            RAISE EXCEPTION 'the role that moves shard % on node "%" cannot bypass row security', shard_id, n.node
                USING ERRCODE = 'insufficient_privilege',
                      DETAIL = format('Tables of schema "%s" have row security: %s. A move copies and compares every row, which row security would filter.', schema, tables),
                      HINT = 'Reach the nodes as a superuser or a role with BYPASSRLS.';
        END IF;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_row_security(text, text, text, text, integer, name) IS
'internal: fail when the shard has tables with row security and the mover cannot bypass it on the source or the target';

CREATE OR REPLACE FUNCTION sharded_id._move_choose_method(src text, source text, shard_id integer, method text)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    wal_level text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_choose_method');
    wal_level := sharded_id._remote_json(src,
        'SELECT jsonb_build_object(''wal_level'', current_setting(''wal_level''))') ->> 'wal_level';
    IF method IS NULL THEN
        method := CASE WHEN wal_level = 'logical' THEN 'online' ELSE 'dump' END;
        IF method = 'dump' THEN
            RAISE WARNING 'node "%" has wal_level = %, so shard % moves by the dump method', source, wal_level, shard_id
                USING DETAIL = 'An online move needs wal_level = logical on the source. The dump method freezes the shard''s writes for as long as its copy takes, which grows with the shard.',
                      HINT = 'Set wal_level = logical on that node and restart it before moving, or pass method => ''dump'' to choose the dump method.';
        END IF;
    ELSIF method = 'online' AND wal_level <> 'logical' THEN
        RAISE EXCEPTION 'an online move needs wal_level = logical on node "%"', source
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Set wal_level = logical there, or move with method => ''dump''.';
    END IF;
    RETURN method;
END
$$;

COMMENT ON FUNCTION sharded_id._move_choose_method(text, text, integer, text) IS
'internal: the method of a move: the one asked for, if the source allows it, or online when the source has wal_level = logical, else dump';

CREATE OR REPLACE FUNCTION sharded_id._move_check_replica_identity(src text, schema name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tables text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_replica_identity');
    tables := sharded_id._remote_json(src, format(
        'SELECT jsonb_build_object(''tables'', string_agg(format(''%%I'', c.relname), '', '' ORDER BY c.relname))
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = %L AND c.relkind = ''r''
           AND (c.relpersistence <> ''p'' OR c.relreplident = ''n''
                OR (c.relreplident = ''d'' AND NOT EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)))',
        schema)) ->> 'tables';
    IF tables IS NOT NULL THEN
        RAISE EXCEPTION 'an online move needs a primary key or replica identity on every logged table'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('These tables of schema "%s" lack one: %s.', schema, tables),
                  HINT = 'Move with method => ''dump''.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_replica_identity(text, name) IS
'internal: fail an online move of a shard with an unlogged table or a table without a primary key or replica identity';

CREATE OR REPLACE FUNCTION sharded_id._move_check_floors(src text, tgt text, source text, shard_id integer)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_floors');
    s := sharded_id._remote_json(src, format(
        'SELECT jsonb_build_object(''checked'', sharded_id._check_floors(s.shard_id, s.schema_name, s.layout) IS NULL,
                                   ''high_water'', sharded_id.high_water(s.shard_id, s.layout), ''layout'', s.layout)
         FROM sharded_id.shards s WHERE s.shard_id = %s', shard_id));
    PERFORM sharded_id._remote(tgt, format(
        'SELECT sharded_id._check_floor(%s, %s, %L, %L)', shard_id, coalesce(s ->> 'high_water', 'NULL'),
        s ->> 'layout', format('the source, node "%s",', source)));
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_floors(text, text, text, integer) IS
'internal: fail unless the target may raise the shard''s floor over the source''s ids and high-water mark';

CREATE OR REPLACE FUNCTION sharded_id._move_steps(method text)
RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_steps');
    SELECT CASE method
           WHEN 'online' THEN ARRAY['record_objects', 'create_publication', 'subscribe', 'copy', 'catch_up', 'compare', 'catch_up',
                                    'freeze', 'stop_replication', 'retire_source', 'register_target', 'switch']
           ELSE ARRAY['record_objects', 'freeze', 'copy_rows', 'retire_source', 'register_target', 'switch'] END
$$;

COMMENT ON FUNCTION sharded_id._move_steps(text) IS
'internal: the steps of a move by a method, in order';

CREATE OR REPLACE FUNCTION sharded_id._move_plan(shard_id integer, target_node text, requested_method text, cluster name, dry_run boolean,
                                      OUT source_node text, OUT schema_name name, OUT method text, OUT steps text[])
RETURNS record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src text;
    tgt text;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_plan');
    source_node := (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = _move_plan.shard_id);
    IF source_node IS NULL THEN
        RAISE EXCEPTION 'shard % is not in the shard map', shard_id
            USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT EXISTS (SELECT FROM sharded_id.nodes x WHERE x.node_name = target_node) THEN
        RAISE EXCEPTION 'data node "%" does not exist', target_node
            USING ERRCODE = 'undefined_object';
    END IF;
    -- The map after the switch must be one the router can apply.
    PERFORM sharded_id._cluster_mapping(cluster, shard_id, target_node);
    IF source_node = target_node THEN
        RAISE NOTICE 'shard % is already on node "%"', shard_id, target_node;
        PERFORM sharded_id._remote_close_all('sharded_id_');
        RETURN;
    END IF;
    src := sharded_id._move_conn(NULL, 'source', source_node);
    tgt := sharded_id._move_conn(NULL, 'target', target_node);
    PERFORM sharded_id._remote_open(src, source_node);
    PERFORM sharded_id._remote_open(tgt, target_node);
    PERFORM sharded_id._move_check_versions(src, tgt);
    schema_name := sharded_id._move_check_source_holds(src, source_node, shard_id);
    PERFORM sharded_id._move_check_target_free(tgt, target_node, shard_id, schema_name);
    PERFORM sharded_id._move_check_row_security(src, tgt, source_node, target_node, shard_id, schema_name);
    method := sharded_id._move_choose_method(src, source_node, shard_id, requested_method);
    IF method = 'online' THEN
        PERFORM sharded_id._move_check_replica_identity(src, schema_name);
        PERFORM sharded_id._move_check_online_owners(src, tgt, shard_id, schema_name, target_node);
    END IF;
    PERFORM sharded_id._move_check_floors(src, tgt, source_node, shard_id);
    PERFORM sharded_id._move_check_schema(src, schema_name);
    PERFORM sharded_id._remote_close_all('sharded_id_');
    IF dry_run THEN
        RAISE NOTICE 'would move shard % (schema "%") from node "%" to node "%", method %: %',
                     shard_id, schema_name, source_node, target_node, method, array_to_string(sharded_id._move_steps(method), ', ');
        RETURN;
    END IF;
    steps := sharded_id._move_steps(method);
EXCEPTION WHEN OTHERS OR query_canceled THEN
    PERFORM sharded_id._remote_close_all('sharded_id_');
    PERFORM sharded_id._unlock_shard(_move_plan.shard_id, 'move');
    RAISE;
END
$$;

COMMENT ON FUNCTION sharded_id._move_plan(integer, text, text, name, boolean) IS
'internal: check a move before anything is journaled, and return its source, schema, method and steps (none when nothing is to move)';

CREATE OR REPLACE FUNCTION sharded_id._move_unfinished(shard_id integer)
RETURNS bigint
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_unfinished');
    SELECT x.move_id FROM sharded_id.moves x WHERE x.shard_id = _move_unfinished.shard_id AND x.finished_at IS NULL
$$;

COMMENT ON FUNCTION sharded_id._move_unfinished(integer) IS
'internal: the unfinished move of a shard, or NULL';

CREATE OR REPLACE FUNCTION sharded_id._move_pending_cleanups(shard_id integer)
RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_pending_cleanups');
    SELECT coalesce(array_agg(x.move_id ORDER BY x.move_id), '{}') FROM sharded_id.moves x
    WHERE (_move_pending_cleanups.shard_id IS NULL OR x.shard_id = _move_pending_cleanups.shard_id)
      AND x.finished_at IS NOT NULL
      AND (x.state = 'cleanup pending' OR EXISTS (SELECT FROM sharded_id.move_cleanup c WHERE c.move_id = x.move_id))
$$;

COMMENT ON FUNCTION sharded_id._move_pending_cleanups(integer) IS
'internal: the finished moves of a shard, or of every shard, whose cleanup is pending';

CREATE OR REPLACE FUNCTION sharded_id._move_journal_start(shard_id integer, source_node text, target_node text, method text,
                                               cluster name, schema_name name)
RETURNS sharded_id.moves
LANGUAGE sql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_journal_start');
    INSERT INTO sharded_id.moves (shard_id, source_node, target_node, method, cluster, schema_name)
    VALUES (shard_id, source_node, target_node, method, cluster, schema_name)
    RETURNING *
$$;

COMMENT ON FUNCTION sharded_id._move_journal_start(integer, text, text, text, name, name) IS
'internal: journal a move about to start';

CREATE OR REPLACE FUNCTION sharded_id._move_take_step(m sharded_id.moves, step text, max_lag bigint, timeout interval, freeze_timeout interval,
                                           OUT error text, OUT error_state text,
                                           OUT error_detail text, OUT canceled boolean, OUT ends_freeze boolean)
RETURNS record
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_take_step');
    UPDATE sharded_id.move_steps x SET begun_at = clock_timestamp()
    WHERE x.move_id = m.move_id AND x.step = 'freeze' AND _move_take_step.step = 'freeze'
      AND x.step_no = (SELECT max(y.step_no) FROM sharded_id.move_steps y WHERE y.move_id = m.move_id);
    BEGIN
        PERFORM sharded_id._move_hold(step);
        PERFORM sharded_id._move_step(m.move_id, step, max_lag, timeout, freeze_timeout);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        GET STACKED DIAGNOSTICS error = MESSAGE_TEXT, error_state = RETURNED_SQLSTATE, error_detail = PG_EXCEPTION_DETAIL;
        PERFORM sharded_id._remote_close(sharded_id._move_conn(m.move_id, 'freeze', m.source_node));
    END;
    canceled := error_state IS NOT DISTINCT FROM '57014';
    ends_freeze := step = 'switch' OR error IS NOT NULL;
END
$$;

COMMENT ON FUNCTION sharded_id._move_take_step(sharded_id.moves, text, bigint, interval, interval) IS
'internal: take a step of a move, and return its error instead of raising it';

CREATE OR REPLACE FUNCTION sharded_id._move_stop_canceled(m sharded_id.moves, step text, error text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_stop_canceled');
    PERFORM sharded_id._remote_close_all('sharded_id_');
    PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
    UPDATE sharded_id.moves x SET error = format('%s: %s', step, _move_stop_canceled.error), updated_at = clock_timestamp()
    WHERE x.move_id = m.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._move_stop_canceled(sharded_id.moves, text, text) IS
'internal: journal a canceled move''s step and error, and release its connections and route lock';

CREATE OR REPLACE FUNCTION sharded_id._move_end_freeze(m sharded_id.moves, step text, error text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    freeze_began timestamptz;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_end_freeze');
    freeze_began := (SELECT max(x.begun_at) FROM sharded_id.move_steps x WHERE x.move_id = m.move_id AND x.step = 'freeze');
    UPDATE sharded_id.moves x
    SET freeze_ms = extract(epoch FROM clock_timestamp() - freeze_began) * 1000,
        error = CASE WHEN _move_end_freeze.error IS NOT NULL THEN format('%s: %s', step, _move_end_freeze.error) END
    WHERE x.move_id = m.move_id AND (freeze_began IS NOT NULL OR _move_end_freeze.error IS NOT NULL);
END
$$;

COMMENT ON FUNCTION sharded_id._move_end_freeze(sharded_id.moves, text, text) IS
'internal: journal the length of a move''s freeze and its failed step''s error';

CREATE OR REPLACE FUNCTION sharded_id._move_follow_ops_after_switch(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_follow_ops_after_switch');
    BEGIN
        PERFORM sharded_id._move_follow_ops(m);
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'the ops tables of shard % still read node "%": %', m.shard_id, m.source_node, SQLERRM;
    END;
END
$$;

COMMENT ON FUNCTION sharded_id._move_follow_ops_after_switch(sharded_id.moves) IS
'internal: point a switched shard''s ops tables at its new node, with a warning when they cannot be';

CREATE OR REPLACE FUNCTION sharded_id._move_try_resolve(move_id bigint, OUT moved boolean, OUT recovery_error text)
RETURNS record
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_try_resolve');
    BEGIN
        moved := sharded_id._move_resolve(move_id);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS recovery_error = MESSAGE_TEXT;
    END;
END
$$;

COMMENT ON FUNCTION sharded_id._move_try_resolve(bigint) IS
'internal: finish or roll back a move whose step failed, and return the outcome or the error of that';

CREATE OR REPLACE FUNCTION sharded_id._move_report(move_id bigint, step text, error text, error_state text, error_detail text,
                                        moved boolean, recovery_error text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m sharded_id.moves;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_report');
    SELECT * INTO m FROM sharded_id.moves x WHERE x.move_id = _move_report.move_id;
    IF error IS NULL THEN
        RAISE NOTICE 'moved shard % (schema "%") from node "%" to node "%" by method %: write freeze % ms, high-water mark %',
                     m.shard_id, m.schema_name, m.source_node, m.target_node, m.method,
                     round(m.freeze_ms::numeric, 1), m.high_water;
    ELSIF recovery_error IS NOT NULL THEN
        RAISE EXCEPTION 'move % of shard % to node "%" failed at step "%": %', m.move_id, m.shard_id, m.target_node, step, error
            USING ERRCODE = error_state,
                  DETAIL = format('Finishing or rolling back the move failed too: %s', recovery_error),
                  HINT = 'CALL sharded_id.recover_moves() once both nodes answer.';
    ELSIF moved THEN
        RAISE WARNING 'move % of shard % to node "%" finished after step "%" failed: %',
                      m.move_id, m.shard_id, m.target_node, step, error;
    ELSE
        RAISE EXCEPTION 'move % of shard % to node "%" failed at step "%": %', m.move_id, m.shard_id, m.target_node, step, error
            USING ERRCODE = error_state,
                  DETAIL = coalesce(error_detail || ' ', '') || 'The move was rolled back: the shard stays on node "' || m.source_node || '".';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_report(bigint, text, text, text, text, boolean, text) IS
'internal: report how a move ended: a notice when it moved, a warning when it finished after a failed step, else an error';

CREATE OR REPLACE FUNCTION sharded_id._move_journal_step(move_id bigint, step text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_journal_step');
    INSERT INTO sharded_id.move_steps (move_id, step_no, step)
    SELECT _move_journal_step.move_id, coalesce(max(s.step_no), 0) + 1, _move_journal_step.step
    FROM sharded_id.move_steps s WHERE s.move_id = _move_journal_step.move_id;
    UPDATE sharded_id.moves m SET state = step, updated_at = clock_timestamp()
    WHERE m.move_id = _move_journal_step.move_id;
END
$$;

COMMENT ON FUNCTION sharded_id._move_journal_step(bigint, text) IS
'internal: journal the step a move is about to take';

CREATE OR REPLACE PROCEDURE sharded_id.move_shard(shard_id integer, target_node text,
                                       method text DEFAULT NULL,
                                       dry_run boolean DEFAULT false,
                                       cluster name DEFAULT 'sharded_id',
                                       max_lag bigint DEFAULT 1048576,
                                       timeout interval DEFAULT '1 hour',
                                       freeze_timeout interval DEFAULT '10 s')
LANGUAGE plpgsql
AS $$
DECLARE
    m sharded_id.moves;
    earlier bigint;
    plan record;
    step text;
    taken record;
    moved boolean;
    recovery_error text;
BEGIN
    PERFORM sharded_id._move_check_call(shard_id, target_node, method, dry_run, cluster, max_lag, timeout, freeze_timeout);
    IF NOT dry_run THEN
        -- First, whatever an earlier move of this shard left unfinished.
        earlier := sharded_id._move_unfinished(shard_id);
        IF earlier IS NOT NULL THEN
            RAISE NOTICE 'finishing move % of shard %, which did not end', earlier, shard_id;
            PERFORM sharded_id._move_resolve(earlier);
            COMMIT;
            PERFORM sharded_id._remote_close_all('sharded_id_');
        END IF;
        -- Then what earlier moves of the shard could not drop: its objects
        -- bear the names this move makes.
        FOREACH earlier IN ARRAY sharded_id._move_pending_cleanups(shard_id) LOOP
            RAISE NOTICE 'dropping what move % of shard % left on the nodes', earlier, shard_id;
            IF NOT sharded_id._move_deferred_cleanup(earlier) THEN
                COMMIT;
                PERFORM sharded_id._remote_close_all('sharded_id_');
                PERFORM sharded_id._unlock_shard(shard_id, 'move');
                RAISE EXCEPTION 'move % of shard % left objects on the nodes that cannot be dropped yet', earlier, shard_id
                    USING ERRCODE = 'object_not_in_prerequisite_state',
                          DETAIL = 'A new move of the shard would make objects of the same names.',
                          HINT = 'CALL sharded_id.recover_moves() once every node answers, then move the shard.';
            END IF;
            COMMIT;
            PERFORM sharded_id._remote_close_all('sharded_id_');
        END LOOP;
    END IF;

    SELECT * INTO plan FROM sharded_id._move_plan(shard_id, target_node, method, cluster, dry_run);
    IF plan.steps IS NULL THEN
        PERFORM sharded_id._unlock_shard(shard_id, 'move');
        RETURN;
    END IF;

    m := sharded_id._move_journal_start(shard_id, plan.source_node, target_node, plan.method, cluster, plan.schema_name);
    FOREACH step IN ARRAY plan.steps LOOP
        PERFORM sharded_id._move_journal_step(m.move_id, step);
        COMMIT;
        SELECT * INTO taken FROM sharded_id._move_take_step(m, step, max_lag, timeout, freeze_timeout);
        IF taken.canceled THEN
            PERFORM sharded_id._move_stop_canceled(m, step, taken.error);
            COMMIT;
            PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
            RAISE EXCEPTION 'move % of shard % to node "%" was canceled at step "%": %', m.move_id, m.shard_id, m.target_node, step, taken.error
                USING ERRCODE = 'query_canceled',
                      DETAIL = 'The move is unfinished; writers to the shard go on.',
                      HINT = 'CALL sharded_id.recover_moves() to finish it or roll it back.';
        END IF;
        IF taken.ends_freeze THEN
            PERFORM sharded_id._move_end_freeze(m, step, taken.error);
            COMMIT;
            PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
            IF taken.error IS NULL THEN
                PERFORM sharded_id._move_follow_ops_after_switch(m);
            END IF;
        END IF;
        EXIT WHEN taken.error IS NOT NULL;
        COMMIT;
    END LOOP;

    IF taken.error IS NULL THEN
        PERFORM sharded_id._move_journal_step(m.move_id, 'cleanup');
        COMMIT;
        PERFORM sharded_id._move_hold('cleanup');
        PERFORM sharded_id._move_resolve(m.move_id);
    ELSE
        -- A step failed: finish the move or roll it back, as the nodes allow.
        PERFORM sharded_id._move_journal_step(m.move_id, 'recover');
        COMMIT;
        SELECT * INTO moved, recovery_error FROM sharded_id._move_try_resolve(m.move_id);
    END IF;
    COMMIT;
    PERFORM sharded_id._remote_close_all('sharded_id_');
    PERFORM sharded_id._unlock_shard(m.shard_id, 'route');
    PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
    PERFORM sharded_id._move_report(m.move_id, step, taken.error, taken.error_state, taken.error_detail,
                                    moved, recovery_error);
END
$$;

COMMENT ON PROCEDURE sharded_id.move_shard(integer, text, text, boolean, name, bigint, interval, interval) IS
'move a logical shard to another data node, online (logical replication) or by dump, journaled step by step in sharded_id.moves; writers through sharded_id.route wait out the switch; CALL it on the router, outside a transaction block';

CREATE OR REPLACE FUNCTION sharded_id._move_recover_begin(move_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_recover_begin');
    PERFORM sharded_id._move_journal_step(move_id, 'recover');
    PERFORM sharded_id._move_follow_ops_after_switch(x) FROM sharded_id.moves x
    WHERE x.move_id = _move_recover_begin.move_id
      AND x.target_node = (SELECT s.node_name FROM sharded_id.shard_map s WHERE s.shard_id = x.shard_id);
END
$$;

COMMENT ON FUNCTION sharded_id._move_recover_begin(bigint) IS
'internal: journal the recovery of a move, and point a switched shard''s ops tables at its new node';

CREATE OR REPLACE FUNCTION sharded_id._moves_unfinished()
RETURNS TABLE (move_id bigint, shard_id integer, state text)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._moves_unfinished');
    SELECT x.move_id, x.shard_id, x.state FROM sharded_id.moves x WHERE x.finished_at IS NULL ORDER BY x.move_id
$$;

COMMENT ON FUNCTION sharded_id._moves_unfinished() IS
'internal: the moves that did not end, oldest first';

CREATE OR REPLACE FUNCTION sharded_id._move_claim_move(move_id bigint)
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard integer := (SELECT x.shard_id FROM sharded_id.moves x WHERE x.move_id = _move_claim_move.move_id);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_claim_move');
    PERFORM sharded_id._move_claim(shard);
    RETURN shard;
END
$$;

COMMENT ON FUNCTION sharded_id._move_claim_move(bigint) IS
'internal: take the move lock of a move''s shard for this session, and return the shard';

CREATE OR REPLACE PROCEDURE sharded_id.recover_moves()
LANGUAGE plpgsql
AS $$
DECLARE
    m record;
    moved boolean;
    pending bigint;
    shard integer;
    err text;
    err_state text;
    err_detail text;
    err_hint text;
    first_err text;
    first_state text;
    first_detail text;
    first_hint text;
    failures integer := 0;
BEGIN
    PERFORM sharded_id._dblink_schema();
    PERFORM sharded_id._remote_close_all('sharded_id_');
    FOR m IN SELECT * FROM sharded_id._moves_unfinished() LOOP
        -- Never a move that is still running in another session.
        PERFORM sharded_id._move_claim(m.shard_id);
        PERFORM sharded_id._move_recover_begin(m.move_id);
        COMMIT;
        -- A move that cannot be recovered yet stays unfinished; the others
        -- go on, and the call fails at its end with the first one's error.
        BEGIN
            moved := sharded_id._move_resolve(m.move_id);
            RAISE NOTICE 'move % of shard %, interrupted at step "%": %', m.move_id, m.shard_id, m.state,
                         CASE WHEN moved THEN 'finished' ELSE 'rolled back' END;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS err = MESSAGE_TEXT, err_state = RETURNED_SQLSTATE,
                                    err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
            failures := failures + 1;
            IF first_err IS NULL THEN
                first_err := err;
                first_state := err_state;
                first_detail := err_detail;
                first_hint := err_hint;
            ELSE
                RAISE WARNING 'move % of shard % is still unfinished: %', m.move_id, m.shard_id, err;
            END IF;
        END;
        COMMIT;
        PERFORM sharded_id._remote_close_all('sharded_id_');
        PERFORM sharded_id._unlock_shard(m.shard_id, 'move');
    END LOOP;
    -- Then the deferred cleanups: what finished moves could not drop.
    FOREACH pending IN ARRAY sharded_id._move_pending_cleanups(NULL) LOOP
        shard := sharded_id._move_claim_move(pending);
        IF sharded_id._move_try_deferred_cleanup(pending) THEN
            RAISE NOTICE 'move % of shard %: its deferred cleanup is done', pending, shard;
        END IF;
        COMMIT;
        PERFORM sharded_id._remote_close_all('sharded_id_');
        PERFORM sharded_id._unlock_shard(shard, 'move');
    END LOOP;
    IF first_err IS NOT NULL THEN
        RAISE EXCEPTION '%', first_err
            USING ERRCODE = first_state,
                  DETAIL = concat_ws(' ', nullif(first_detail, ''),
                                     CASE WHEN failures > 1 THEN format('%s unfinished moves could not be recovered; the warnings name the others.', failures) END),
                  HINT = coalesce(nullif(first_hint, ''), 'CALL sharded_id.recover_moves() again once the cause is gone.');
    END IF;
END
$$;

COMMENT ON PROCEDURE sharded_id.recover_moves() IS
'finish or roll back every move that did not end (a crash, a failed step, a cancel), from the journal and what the nodes hold, then drop what finished moves left on the nodes (state cleanup pending), and fail on a move still running in another session; CALL it on the router';

CREATE OR REPLACE FUNCTION sharded_id.rebalance_plan(nodes text[] DEFAULT NULL)
RETURNS TABLE (move_no integer, shard_id integer, source_node text, target_node text, method text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    methods jsonb := '{}';
    listed text[];
    counts jsonb;
    placement jsonb;
    s record;
    fullest text;
    emptiest text;
    moving integer;
BEGIN
    IF array_position(nodes, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'the list of data nodes must not hold null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF nodes IS NOT NULL AND EXISTS (SELECT FROM unnest(nodes) n WHERE n NOT IN (SELECT x.node_name FROM sharded_id.nodes x)) THEN
        RAISE EXCEPTION 'data node "%" does not exist',
                        (SELECT n FROM unnest(nodes) n WHERE n NOT IN (SELECT x.node_name FROM sharded_id.nodes x) LIMIT 1)
            USING ERRCODE = 'undefined_object';
    END IF;
    listed := (SELECT array_agg(x.node_name ORDER BY x.node_name) FROM sharded_id.nodes x
               WHERE nodes IS NULL OR x.node_name = ANY (nodes));
    IF listed IS NULL THEN
        RAISE EXCEPTION 'the router knows no data nodes to balance over'
            USING ERRCODE = 'undefined_object';
    END IF;
    counts := (SELECT jsonb_object_agg(n, (SELECT count(*) FROM sharded_id.shard_map m WHERE m.node_name = n))
               FROM unnest(listed) n);
    placement := (SELECT coalesce(jsonb_object_agg(m.shard_id::text, m.node_name), '{}') FROM sharded_id.shard_map m);
    -- What move_shard would choose on each node that holds shards.
    FOR s IN SELECT DISTINCT m.node_name FROM sharded_id.shard_map m ORDER BY 1 LOOP
        BEGIN
            PERFORM sharded_id._remote_open(sharded_id._move_conn(NULL, 'plan', s.node_name), s.node_name);
            methods := methods || jsonb_build_object(s.node_name,
                CASE WHEN sharded_id._remote(sharded_id._move_conn(NULL, 'plan', s.node_name), 'SHOW wal_level') = 'logical'
                     THEN 'online' ELSE 'dump' END);
            PERFORM sharded_id._remote_close(sharded_id._move_conn(NULL, 'plan', s.node_name));
        EXCEPTION WHEN OTHERS THEN
            PERFORM sharded_id._remote_close(sharded_id._move_conn(NULL, 'plan', s.node_name));
        END;
    END LOOP;
    move_no := 0;
    FOR s IN SELECT m.shard_id, m.node_name FROM sharded_id.shard_map m
             WHERE m.node_name <> ALL (listed) ORDER BY m.shard_id LOOP
        emptiest := (SELECT k FROM jsonb_each_text(counts) e(k, v) ORDER BY v::int, k LIMIT 1);
        move_no := move_no + 1;
        shard_id := s.shard_id; source_node := s.node_name; target_node := emptiest;
        method := methods ->> source_node;
        RETURN NEXT;
        counts := jsonb_set(counts, ARRAY[emptiest], to_jsonb((counts ->> emptiest)::int + 1));
        placement := jsonb_set(placement, ARRAY[s.shard_id::text], to_jsonb(emptiest));
    END LOOP;
    LOOP
        fullest := (SELECT k FROM jsonb_each_text(counts) e(k, v) ORDER BY v::int DESC, k LIMIT 1);
        emptiest := (SELECT k FROM jsonb_each_text(counts) e(k, v) ORDER BY v::int, k LIMIT 1);
        EXIT WHEN (counts ->> fullest)::int - (counts ->> emptiest)::int < 2;
        moving := (SELECT max(k::int) FROM jsonb_each_text(placement) e(k, v) WHERE v = fullest);
        move_no := move_no + 1;
        shard_id := moving; source_node := fullest; target_node := emptiest;
        method := methods ->> source_node;
        RETURN NEXT;
        counts := jsonb_set(jsonb_set(counts, ARRAY[fullest], to_jsonb((counts ->> fullest)::int - 1)),
                            ARRAY[emptiest], to_jsonb((counts ->> emptiest)::int + 1));
        placement := jsonb_set(placement, ARRAY[moving::text], to_jsonb(emptiest));
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id.rebalance_plan(text[]) IS
'the moves that rebalance would make: shards off unlisted nodes, then from the fullest node to the emptiest until they differ by at most one, each with the method move_shard would choose (online or dump, from the source''s wal_level)';

CREATE OR REPLACE FUNCTION sharded_id._rebalance_begin(nodes text[], method text, dry_run boolean, cluster name)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    total integer;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._rebalance_begin');
    IF dry_run IS NULL THEN
        RAISE EXCEPTION 'dry_run must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM sharded_id._check_move_arguments(method, cluster, 0, interval '1 s', interval '1 s');
    total := (SELECT count(*) FROM sharded_id.rebalance_plan(nodes));
    IF total = 0 THEN
        RAISE NOTICE 'the shards are balanced: nothing to move';
        RETURN NULL;
    END IF;
    IF NOT dry_run THEN
        PERFORM sharded_id._dblink_schema();
        PERFORM sharded_id._move_claim(x.shard_id) FROM sharded_id.rebalance_plan(nodes) x ORDER BY x.move_no;
    END IF;
    RETURN total;
END
$$;

COMMENT ON FUNCTION sharded_id._rebalance_begin(text[], text, boolean, name) IS
'internal: check rebalance''s arguments and take the move lock of every shard of its plan; the number of moves, or NULL when none';

CREATE OR REPLACE FUNCTION sharded_id._rebalance_moves(nodes text[])
RETURNS TABLE (move_no integer, shard_id integer, source_node text, target_node text, method text)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._rebalance_moves');
    SELECT * FROM sharded_id.rebalance_plan(nodes) p ORDER BY p.move_no
$$;

COMMENT ON FUNCTION sharded_id._rebalance_moves(text[]) IS
'internal: the moves of rebalance''s plan, in order';

CREATE OR REPLACE PROCEDURE sharded_id.rebalance(nodes text[] DEFAULT NULL, method text DEFAULT NULL,
                                      dry_run boolean DEFAULT false, cluster name DEFAULT 'sharded_id')
LANGUAGE plpgsql
AS $$
DECLARE
    p record;
    total integer;
BEGIN
    total := sharded_id._rebalance_begin(nodes, method, dry_run, cluster);
    IF total IS NULL THEN
        RETURN;
    END IF;
    FOR p IN SELECT * FROM sharded_id._rebalance_moves(nodes) LOOP
        IF dry_run THEN
            RAISE NOTICE 'move %/%: shard % from node "%" to node "%", method %', p.move_no, total, p.shard_id, p.source_node, p.target_node,
                         coalesce(method, p.method, 'unknown (the node did not answer)');
        ELSE
            RAISE NOTICE 'move %/%: shard % from node "%" to node "%"', p.move_no, total, p.shard_id, p.source_node, p.target_node;
            CALL sharded_id.move_shard(p.shard_id, p.target_node, method => method, cluster => cluster);
        END IF;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE sharded_id.rebalance(text[], text, boolean, name) IS
'even the shards out over the listed data nodes (NULL: all), moving one shard at a time with move_shard; a node left out is drained; CALL it on the router';

REVOKE EXECUTE ON FUNCTION sharded_id._schema_fingerprint(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._remote_open(text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._remote_close(text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._remote(text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._remote_rows(text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._remote_exec(text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._remote_close_all(text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_conn(bigint, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_open(sharded_id.moves, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_claim(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._lock_shard(integer, text, boolean) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._unlock_shard(integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_lock_route(sharded_id.moves, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._wait_shard_lock(integer, text, interval, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_hold(text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_will_create(bigint, text, text, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_freeze_source(sharded_id.moves, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_open_freeze(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._on_schema_tables(name, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_schema_ddl(name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_catch_up(sharded_id.moves, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_register_target(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_compare(sharded_id.moves, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_setvals(text, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_switch(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_follow_ops(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_cleanup(sharded_id.moves, boolean) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_cleanup_hold(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_subscription(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_slot(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_publication(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_mark(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_drop_schema(sharded_id.moves, sharded_id.move_cleanup, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_deferred_cleanup(bigint) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_try_deferred_cleanup(bigint) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._remote_exists(text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._remote_json(text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_resolve(bigint) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_take_back(sharded_id.moves, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_step(bigint, text, bigint, interval, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_record_objects(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_create_publication(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_subscribe(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_lost_sync_slots(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_copy(sharded_id.moves, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_wait_lag(sharded_id.moves, bigint, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_compare_frozen(sharded_id.moves, interval, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_freeze(sharded_id.moves, interval, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_stop_replication(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_copy_rows(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_retire_source(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._check_move_arguments(text, name, bigint, interval, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_call(integer, text, text, boolean, name, bigint, interval, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_versions(text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_source_holds(text, text, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_target_free(text, text, integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_row_security(text, text, text, text, integer, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_choose_method(text, text, integer, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_replica_identity(text, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_floors(text, text, text, integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_steps(text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_plan(integer, text, text, name, boolean) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_unfinished(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_pending_cleanups(integer) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_journal_start(integer, text, text, text, name, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_journal_step(bigint, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_take_step(sharded_id.moves, text, bigint, interval, interval) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_stop_canceled(sharded_id.moves, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_end_freeze(sharded_id.moves, text, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_follow_ops_after_switch(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_try_resolve(bigint) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_report(bigint, text, text, text, text, boolean, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_recover_begin(bigint) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._moves_unfinished() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_claim_move(bigint) FROM PUBLIC;

REVOKE EXECUTE ON PROCEDURE sharded_id.move_shard(integer, text, text, boolean, name, bigint, interval, interval) FROM PUBLIC;

REVOKE EXECUTE ON PROCEDURE sharded_id.recover_moves() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.rebalance_plan(text[]) FROM PUBLIC;

REVOKE EXECUTE ON PROCEDURE sharded_id.rebalance(text[], text, boolean, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._rebalance_begin(text[], text, boolean, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._rebalance_moves(text[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id._move_check_schema(conn text, schema_name name)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_schema');
    PERFORM sharded_id._remote(conn, format('SELECT count(*) FROM sharded_id.schema_ddl(%L)', schema_name));
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_schema(text, name) IS
'internal: fail, with schema_ddl''s error, when a node cannot give a shard schema back as statements';

CREATE OR REPLACE FUNCTION sharded_id._move_check_copy(m sharded_id.moves)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    refresh text;
    inventory text := format(
        'SELECT format(''%%s|%%s|%%s|%%s|%%s|%%s'', kind, name, owner, acl, details, definition) FROM sharded_id.schema_inventory(%L) '
        'WHERE NOT (kind = ''constraint'' AND name LIKE ''%%.sharded_id\_moved'')', m.schema_name);
    on_source text[];
    on_target text[];
    differences text;
    -- Connections of this move, bound to its nodes, closed with the move's.
    src text := sharded_id._move_conn(m.move_id, 'check_source', m.source_node);
    tgt text := sharded_id._move_conn(m.move_id, 'check_target', m.target_node);
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_copy');
    PERFORM sharded_id._remote_open(src, m.source_node);
    PERFORM sharded_id._remote_open(tgt, m.target_node);
    -- Dropped already, by a cleanup that was cut short before it recorded so.
    IF NOT sharded_id._remote_exists(src, format('SELECT FROM pg_namespace WHERE nspname = %L', m.schema_name)) THEN
        RETURN;
    END IF;
    refresh := sharded_id._remote(src, format(
        'SELECT string_agg(s, ''; '') FROM sharded_id.schema_ddl(%L) s WHERE s LIKE ''REFRESH MATERIALIZED VIEW %%''',
        m.schema_name));
    IF refresh IS NOT NULL THEN
        PERFORM sharded_id._remote_exec(tgt, refresh);
    END IF;
    -- Servers of two majors may print one definition two ways: then the
    -- objects, owners, privileges and flags are compared, not the hashes.
    IF sharded_id._remote_json(src, 'SELECT jsonb_build_object(''major'', current_setting(''server_version_num'')::integer / 10000)')
       IS DISTINCT FROM sharded_id._remote_json(tgt, 'SELECT jsonb_build_object(''major'', current_setting(''server_version_num'')::integer / 10000)') THEN
        inventory := replace(inventory, ', definition)', ', '''')');
    END IF;
    on_source := coalesce(sharded_id._remote_rows(src, inventory), '{}');
    on_target := coalesce(sharded_id._remote_rows(tgt, inventory), '{}');
    SELECT string_agg(d, '; ' ORDER BY d) INTO differences FROM (
        (SELECT 'only on the source: ' || x AS d FROM unnest(on_source) x EXCEPT SELECT 'only on the source: ' || x FROM unnest(on_target) x)
        UNION ALL
        (SELECT 'only on the target: ' || x FROM unnest(on_target) x EXCEPT SELECT 'only on the target: ' || x FROM unnest(on_source) x)
    ) diff;
    PERFORM sharded_id._remote_close(c) FROM unnest(ARRAY[src, tgt]) c;
    IF differences IS NOT NULL THEN
        RAISE EXCEPTION 'the copy of shard % on node "%" is not the same schema as its source', m.shard_id, m.target_node
            USING ERRCODE = 'data_corrupted',
                  DETAIL = format('Move %s keeps schema "%s" on node "%s". Differences (kind|name|owner|privileges|details|definition hash): %s.',
                                  m.move_id, m.schema_name, m.source_node, differences),
                  HINT = 'Make the two copies the same (sharded_id.schema_inventory on each node shows them), then CALL sharded_id.recover_moves().';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_copy(sharded_id.moves) IS
'internal: before a moved shard''s old copy is dropped, refresh the new copy''s materialized views and fail unless both copies have the same inventory';

CREATE OR REPLACE FUNCTION sharded_id._move_subscription_connstr(m sharded_id.moves)
RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sharded_id._superuser_only('sharded_id._move_subscription_connstr');
    SELECT sharded_id._connstr_public(n.connstr) FROM sharded_id.nodes n WHERE n.node_name = m.source_node
$$;

COMMENT ON FUNCTION sharded_id._move_subscription_connstr(sharded_id.moves) IS
'internal: the connection string a move''s subscription uses to reach the source, without its secrets';

CREATE OR REPLACE FUNCTION sharded_id._move_subscription_options(m sharded_id.moves)
RETURNS text
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_subscription_options');
    -- From 16 on, the apply and the table sync write as each table's
    -- owner (run_as_owner = false, the default, said here so that no
    -- default changes it): a schema's owner's code never runs with the
    -- subscription owner's rights.  Before 16 there is no such option,
    -- and move_shard refuses (_move_check_online_owners) a shard whose
    -- code a role that is not a superuser controls.
    IF (sharded_id._remote_json(sharded_id._move_conn(m.move_id, 'target', m.target_node),
                                'SELECT jsonb_build_object(''version'', current_setting(''server_version_num'')::integer)')
        ->> 'version')::integer >= 160000 THEN
        RETURN ', run_as_owner = false';
    END IF;
    RETURN '';
END
$$;

COMMENT ON FUNCTION sharded_id._move_subscription_options(sharded_id.moves) IS
'internal: the options of a move''s subscription that depend on the target''s version: run_as_owner = false from PostgreSQL 16 on';

CREATE OR REPLACE FUNCTION sharded_id._move_check_online_owners(src text, tgt text, shard integer, schema_name name, target_node text)
RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found jsonb;
    owners text[];
    bad jsonb;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._move_check_online_owners');
    IF (sharded_id._remote_json(tgt, 'SELECT jsonb_build_object(''version'', current_setting(''server_version_num'')::integer)')
        ->> 'version')::integer >= 160000 THEN
        RETURN;
    END IF;
    -- (object, role) of the schema, its relations, types, functions and
    -- operators, and the roles that may create objects in it; then those
    -- of them whose role is not a superuser on the source.
    found := sharded_id._remote_json(src, format($q$
        WITH nsp AS (SELECT oid, nspowner, nspacl FROM pg_namespace WHERE nspname = %1$L),
        o AS (
            SELECT 0 AS k, format('schema %%I', %1$L) AS obj, nsp.nspowner AS owner FROM nsp
            UNION ALL
            SELECT 1, format('%%s %%s', CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'table' WHEN 'i' THEN 'index'
                                                       WHEN 'I' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 'v' THEN 'view'
                                                       WHEN 'm' THEN 'materialized view' ELSE 'relation' END, c.oid::regclass),
                   c.relowner FROM pg_class c, nsp WHERE c.relnamespace = nsp.oid
            UNION ALL
            SELECT 2, format('type %%s', t.oid::regtype), t.typowner FROM pg_type t, nsp
            WHERE t.typnamespace = nsp.oid AND t.typrelid = 0 AND t.typelem = 0
            UNION ALL
            SELECT 3, format('function %%s', p.oid::regprocedure), p.proowner FROM pg_proc p, nsp WHERE p.pronamespace = nsp.oid
            UNION ALL
            SELECT 4, format('operator %%s', r.oid::regoperator), r.oprowner FROM pg_operator r, nsp WHERE r.oprnamespace = nsp.oid
            UNION ALL
            SELECT 5, format('the CREATE privilege on schema %%I', %1$L), a.grantee
            FROM nsp, aclexplode(nsp.nspacl) a WHERE a.privilege_type = 'CREATE')
        SELECT coalesce(jsonb_agg(jsonb_build_object('role', coalesce(r.rolname, 'PUBLIC'), 'object', o.obj,
                                                     'superuser', coalesce(r.rolsuper, false)) ORDER BY o.k, o.obj), '[]')
        FROM o LEFT JOIN pg_roles r ON r.oid = o.owner$q$, schema_name));
    SELECT array_agg(DISTINCT f ->> 'role') INTO owners FROM jsonb_array_elements(found) f;
    bad := (SELECT f FROM jsonb_array_elements(found) WITH ORDINALITY x(f, n) WHERE NOT (f ->> 'superuser')::boolean ORDER BY n LIMIT 1);
    IF bad IS NULL THEN
        -- Each role a superuser on the source: on the target too?
        bad := (SELECT f FROM jsonb_array_elements(found) WITH ORDINALITY x(f, n)
                WHERE f ->> 'role' = (
                    SELECT sharded_id._remote_json(tgt, format(
                        'SELECT jsonb_build_object(''role'', min(u.r)) FROM unnest(%L::text[]) u(r) LEFT JOIN pg_roles x ON x.rolname = u.r
                         WHERE x.rolsuper IS NOT TRUE', owners)) ->> 'role')
                ORDER BY n LIMIT 1);
    END IF;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'an online move of shard % to node "%" would run code of role "%" with the subscription''s rights',
                        shard, target_node, bad ->> 'role'
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Node "%s" runs PostgreSQL before 16, where logical replication copies and applies rows as the subscription''s owner, not as each table''s owner; %s is owned by or granted to "%s", which is not a superuser on both nodes, so its index expressions, constraints, defaults, generated columns, domain checks or triggers could run with the mover''s rights.',
                                  target_node, bad ->> 'object', bad ->> 'role'),
                  HINT = 'Move the shard to a node on PostgreSQL 16 or later, or move it with method => ''dump'', which writes as each table''s owner, or make a trusted role (a superuser) own the schema and every object in it.';
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._move_check_online_owners(text, text, integer, name, text) IS
'internal: refuses (42501) an online move to a node before PostgreSQL 16 of a shard whose schema, or an object in it, a role that is not a superuser owns, or where such a role may create objects';

REVOKE EXECUTE ON FUNCTION sharded_id._move_subscription_connstr(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_subscription_options(sharded_id.moves) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_online_owners(text, text, integer, name, text) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_schema(text, name) FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id._move_check_copy(sharded_id.moves) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.generator_stats(OUT layout text,
                                           OUT shard_id integer,
                                           OUT ids bigint,
                                           OUT full_ms_waits bigint,
                                           OUT wait_time double precision,
                                           OUT clock_behind bigint,
                                           OUT max_clock_lag double precision,
                                           OUT current_ms timestamptz,
                                           OUT last_id bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'shid_generator_stats'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED ROWS 100;

COMMENT ON FUNCTION sharded_id.generator_stats() IS
'one row per (layout, shard) slot in use: ids minted, waits for the clock (ms), clock-behind events and the largest lag (ms), the millisecond filled, the newest id';

CREATE OR REPLACE FUNCTION sharded_id.generator_info(OUT slots_used integer,
                                          OUT max_shards integer,
                                          OUT ceiling timestamptz,
                                          OUT ceiling_writes bigint,
                                          OUT ceiling_write_time double precision,
                                          OUT stats_reset timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'shid_generator_info'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION sharded_id.generator_info() IS
'the generator as a whole: slots used of sharded_id.max_shards, the durable ceiling, its writes and their time (ms), when statistics were reset';

CREATE OR REPLACE FUNCTION sharded_id.reset_stats()
RETURNS void
AS 'MODULE_PATHNAME', 'shid_reset_stats'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id.reset_stats() IS
'zero the statistics of the id generator';

REVOKE EXECUTE ON FUNCTION sharded_id.generator_stats() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.generator_info() FROM PUBLIC;

REVOKE EXECUTE ON FUNCTION sharded_id.reset_stats() FROM PUBLIC;

GRANT EXECUTE ON FUNCTION sharded_id.generator_stats() TO pg_monitor;

GRANT EXECUTE ON FUNCTION sharded_id.generator_info() TO pg_monitor;

CREATE OR REPLACE FUNCTION sharded_id.citus_distribute_shards(first_shard integer DEFAULT NULL,
                                                  last_shard integer DEFAULT NULL)
RETURNS SETOF name
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    s record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'the citus extension is not installed in this database'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it on a node of a Citus cluster.';
    END IF;
    IF first_shard > last_shard THEN
        RAISE EXCEPTION 'first shard % is after last shard %', first_shard, last_shard
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- By the schema's OID, never its name read as an identifier: a name
    -- such as "Shard7" must not fold to another role's shard7.
    FOR s IN
        SELECT c.shard_id, c.schema_name, n.oid AS nspoid
        FROM sharded_id.shards c JOIN pg_namespace n ON n.nspname = c.schema_name
        WHERE c.shard_id >= coalesce(first_shard, 0)
          AND c.shard_id <= coalesce(last_shard, 2147483647)
        ORDER BY c.shard_id
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema d WHERE d.schemaid = s.nspoid);
        EXECUTE 'SELECT pg_catalog.citus_schema_distribute($1)' USING s.nspoid::regnamespace;
        RETURN NEXT s.schema_name;
    END LOOP;
END
$$;

COMMENT ON FUNCTION sharded_id.citus_distribute_shards(integer, integer) IS
'on a Citus coordinator: citus_schema_distribute on the schema of every catalog shard (from first_shard to last_shard; NULL: no bound) that is not distributed yet, in one transaction; returns the schemas it distributed';

REVOKE EXECUTE ON FUNCTION sharded_id.citus_distribute_shards(integer, integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION sharded_id.citus_shard_node(shard_id integer,
                                           OUT schema_name name,
                                           OUT group_id integer,
                                           OUT node_name text,
                                           OUT node_port integer)
RETURNS SETOF record
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'the citus extension is not installed in this database'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Run it on a node of a Citus cluster.';
    END IF;
    schema_name := sharded_id.shard_schema(citus_shard_node.shard_id);
    -- A distributed schema's tables are single-shard and colocated: the
    -- placement of any one of them is the schema's node.
    RETURN QUERY
        SELECT DISTINCT schema_name, pl.groupid, n.nodename, n.nodeport
        FROM pg_catalog.pg_dist_schema d
        JOIN pg_catalog.pg_dist_partition p ON p.colocationid = d.colocationid
        JOIN pg_catalog.pg_dist_shard sh ON sh.logicalrelid = p.logicalrelid
        JOIN pg_catalog.pg_dist_placement pl ON pl.shardid = sh.shardid
        JOIN pg_catalog.pg_dist_node n ON n.groupid = pl.groupid AND n.noderole = 'primary'
        WHERE d.schemaid = (SELECT ns.oid FROM pg_namespace ns WHERE ns.nspname = schema_name);
END
$$;

COMMENT ON FUNCTION sharded_id.citus_shard_node(integer) IS
'on a Citus cluster: the node (group, host, port) that holds the distributed schema of the shard, from Citus''s metadata; no row if the schema is not distributed or has no table';

CREATE OR REPLACE FUNCTION sharded_id.citus_id_node(id bigint,
                                        OUT shard_id integer,
                                        OUT schema_name name,
                                        OUT group_id integer,
                                        OUT node_name text,
                                        OUT node_port integer)
RETURNS SETOF record
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.shard_id, n.schema_name, n.group_id, n.node_name, n.node_port
    FROM (SELECT sharded_id.shard_id(citus_id_node.id,
                                     (SELECT c.layout FROM sharded_id.current_settings() c)) AS shard_id) s,
         sharded_id.citus_shard_node(s.shard_id) n
$$;

COMMENT ON FUNCTION sharded_id.citus_id_node(bigint) IS
'on a Citus cluster: routing by id, the shard of the id (in the settings'' layout) and the node that holds its distributed schema';

