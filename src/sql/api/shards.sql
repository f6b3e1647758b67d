/* src/sql/api/shards.sql */

--
-- Logical shards as schemas.
--
CREATE TABLE sharded_id.settings (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    schema_prefix text NOT NULL CHECK (schema_prefix <> '' AND octet_length(schema_prefix) <= 50),
    pad_width integer NOT NULL CHECK (pad_width BETWEEN 0 AND 5),
    layout text NOT NULL,
    mode text NOT NULL DEFAULT 'seed' CHECK (mode IN ('seed', 'counter'))
);

COMMENT ON TABLE sharded_id.settings IS
'how shards are provisioned: schema names, layout and mode (no row: shard_0000-style names, layout instagram, seed mode)';

CREATE TABLE sharded_id.shards (
    shard_id integer PRIMARY KEY CHECK (shard_id >= 0),
    schema_name name NOT NULL UNIQUE,
    layout text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    mode text NOT NULL DEFAULT 'seed' CHECK (mode IN ('seed', 'counter'))
);

COMMENT ON TABLE sharded_id.shards IS
'the logical shards of this database, one schema each';

CREATE TABLE sharded_id.shard_tables (
    table_name name PRIMARY KEY,
    template_schema name NOT NULL,
    template_table name NOT NULL,
    id_column name NOT NULL,
    position serial NOT NULL,
    UNIQUE (template_schema, template_table)
);

COMMENT ON TABLE sharded_id.shard_tables IS
'the template tables that every shard schema gets a copy of';

COMMENT ON SEQUENCE sharded_id.shard_tables_position_seq IS
'order in which template tables were added';

-- Only the owner mints: a shard this server gave away stays here, so that
-- next_id refuses it after a restart or a failover too (owner.c).
CREATE TABLE sharded_id.retired_shards (
    shard_id integer PRIMARY KEY CHECK (shard_id >= 0),
    layout text NOT NULL,
    high_water bigint,
    retired_at timestamptz NOT NULL DEFAULT now(),
    retired_by name DEFAULT CURRENT_USER
);

COMMENT ON TABLE sharded_id.retired_shards IS
'shards this server gave away (drop_shard, moves), with their high-water mark here: next_id refuses them until create_shard takes them back';

-- @update@
COMMENT ON COLUMN sharded_id.retired_shards.retired_by IS
'the role that retired the shard: a role that is not a superuser takes back only what it, or a role whose privileges it has, retired';

-- pg_dump keeps their rows; the install leaves them empty.
SELECT pg_catalog.pg_extension_config_dump('sharded_id.retired_shards', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.settings', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.shards', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.shard_tables', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.shard_tables_position_seq', '');

-- next_id reads retired_shards as its caller, once per shard and server run.
GRANT SELECT ON sharded_id.settings, sharded_id.shards, sharded_id.shard_tables,
                sharded_id.retired_shards TO PUBLIC;

-- The provisioning role, for roles that are not superusers: its members
-- provision and drop shards, and retire, take back and raise the floor of
-- the shards whose schema they own (src/privs.c).  Roles belong to the
-- cluster, so another database's install, or a restore, may have made it:
-- it is taken as it is only if it has none of the attributes, and is a
-- member of no role, that would give its members more.  It gets EXECUTE on
-- the provisioning functions (below them) and CREATE on this database, for
-- the shards' schemas; the catalogs are written by their owner only.
CREATE FUNCTION sharded_id._provisioner_role()
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

-- @update@
SELECT sharded_id._provisioner_role();

-- The catalog writes of the provisioning functions, which check their
-- caller (GetUserId(), since the functions run with its rights) and write
-- as the catalogs' owner (src/privs.c): no role but the owner writes the
-- catalogs, so none can undo a retirement by hand.
CREATE FUNCTION sharded_id._catalog_retire(shard_id integer, layout text, high_water bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_retire'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_retire(integer, text, bigint) IS
'internal: retire_shard''s catalog writes, for a superuser or a member of sharded_id_provisioner that owns the shard''s schema: out of shards, into retired_shards with its high-water mark and the role that retired it';

CREATE FUNCTION sharded_id._catalog_own(shard_id integer, schema_name name, layout text, mode text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_own'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_own(integer, name, text, text) IS
'internal: create_shard''s first catalog write, for a superuser, or a member of sharded_id_provisioner in a new schema or one it owns, taking back only what it retired: into shards';

CREATE FUNCTION sharded_id._catalog_unretire(shard_id integer, layout text)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_unretire'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_unretire(integer, text) IS
'internal: create_shard''s last catalog write, after _own_shard, for a superuser or the caller _catalog_own allowed: out of retired_shards';

CREATE FUNCTION sharded_id._catalog_add_table(template regclass, table_name name, id_column name)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_catalog_add_table'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._catalog_add_table(regclass, name, name) IS
'internal: add_table''s catalog write, for a superuser or a member of sharded_id_provisioner that owns the template';

-- The settings in force: the row of sharded_id.settings, or the defaults.
CREATE FUNCTION sharded_id.current_settings(OUT schema_prefix text,
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

CREATE FUNCTION sharded_id.configure(schema_prefix text DEFAULT NULL,
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

-- The schema name of a shard under the current settings.
CREATE FUNCTION sharded_id.shard_schema(shard_id integer)
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

-- The next_id call of a shard, as SQL text: the DEFAULT of its tables' id
-- columns and the body of its next_id().  seq is NULL in counter mode.
-- STABLE, not IMMUTABLE: the text of a regclass depends on the search_path
-- and on renames.
CREATE FUNCTION sharded_id._next_id_call(shard_id integer, seq regclass, layout text)
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

-- The statements that give relation dst (a qualified name) what src has
-- beyond its columns, constraints and indexes: triggers and their enabled
-- state, row-level security and its policies, owner, privileges (table and
-- column, exactly: defaults revoked first) and comments (of the relation,
-- its columns, triggers and policies).  Names are printed under this
-- function's search_path, so qualified; roles are read from pg_roles, so
-- that a role without superuser can copy a table too.
CREATE FUNCTION sharded_id._relation_extras_ddl(src regclass, dst text)
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

-- Copy template table t into schema of shard shard_id, unless it is there.
CREATE FUNCTION sharded_id._copy_table(t sharded_id.shard_tables, shard_id integer,
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

-- Recreate the template's foreign keys on the shard's copy; those that
-- point at another template table point at that table's copy in the shard.
-- pg_get_constraintdef prints each constraint whole, as the server knows it
-- (the column list of ON DELETE SET NULL (...) included); only the table it
-- references is swapped.
CREATE FUNCTION sharded_id._copy_foreign_keys(t sharded_id.shard_tables, schema name)
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

-- A schema that a new shard would adopt must be shaped like a shard, since
-- drop_shard drops it with everything in it: not a system schema or the
-- templates' own, and empty, or holding what create_shard makes (next_id()
-- or id_seq, which a dump carries along), or holding only copies of
-- registered templates (what DROP EXTENSION ... CASCADE leaves of a counter
-- shard).
CREATE FUNCTION sharded_id._check_adoptable(schema name)
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
    -- A schema with no table is adopted only from its owner (or a
    -- superuser's): one that another role made beforehand (a provisioner, planting shard_0031,
    -- maybe with an id_seq or a next_id() of its own, for a superuser's
    -- create_shard) would let that role drop the shard's tables with it,
    -- retire the shard, or run its code as every writer.
    IF nsp IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = nsp AND c.relkind IN ('r', 'p'))
       AND (SELECT n.nspowner FROM pg_namespace n WHERE n.oid = nsp)
           IS DISTINCT FROM (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user)
       AND NOT (SELECT r.rolsuper FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner WHERE n.oid = nsp) THEN
        RAISE EXCEPTION 'schema "%" belongs to role "%"', schema,
                        (SELECT pg_get_userbyid(n.nspowner) FROM pg_namespace n WHERE n.oid = nsp)
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = 'A schema without tables that another role made is not adopted as a shard: that role could drop the shard''s tables with it.',
                  HINT = pg_catalog.format('Drop the schema, or make %I its owner, then create the shard.', current_user);
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

-- A shard's tables are read as their owner (src/owner_read.c): a role that
-- owns a shard schema may have planted code in them (an index expression,
-- a policy, a view in place of a table), which must never run with the
-- caller's rights.  Ordinary and partitioned tables only (42809).
CREATE FUNCTION sharded_id._max_id(rel regclass, id_column name)
RETURNS bigint
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_max_id';

COMMENT ON FUNCTION sharded_id._max_id(regclass, name) IS
'internal: the largest value of a table''s bigint column, read as the table''s owner in a security-restricted operation with a fixed search_path; refuses what is not a table';

CREATE FUNCTION sharded_id._table_fingerprint(rel regclass)
RETURNS text
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_table_fingerprint';

COMMENT ON FUNCTION sharded_id._table_fingerprint(regclass) IS
'internal: a table''s row count and the sum of its rows'' hashes, read as the table''s owner in a security-restricted operation, to compare two copies';

CREATE FUNCTION sharded_id._table_rows(rel regclass)
RETURNS SETOF text
LANGUAGE c STABLE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_table_rows';

COMMENT ON FUNCTION sharded_id._table_rows(regclass) IS
'internal: every row of a table as text, read as the table''s owner in a security-restricted operation, for a move''s copy';

CREATE FUNCTION sharded_id._insert_as_owner(rel regclass, rows text[])
RETURNS bigint
LANGUAGE c VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_insert_as_owner';

COMMENT ON FUNCTION sharded_id._insert_as_owner(regclass, text[]) IS
'internal: inserts rows given as text into a table as the table''s owner in a security-restricted operation, for a move''s dump copy; returns their number';

CREATE FUNCTION sharded_id._validate_as_owner(rel regclass, constraint_name name)
RETURNS void
LANGUAGE c VOLATILE STRICT PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'shid_validate_as_owner';

COMMENT ON FUNCTION sharded_id._validate_as_owner(regclass, name) IS
'internal: validate a table''s foreign key as the table''s owner in a security-restricted operation with a fixed search_path; refuses a referenced table of another owner';

-- A schema that a new shard would adopt must not be another shard's: not
-- the schema of a shard of the catalog, and not one whose next_id() or
-- column defaults mint another shard's ids (a shard retired or dropped
-- from the catalog keeps its schema, and a restore brings one), or the
-- new shard's rows would carry that shard's ids, and the other shard could
-- not be created again.  Reads definitions only: no code of the schema
-- runs.
CREATE FUNCTION sharded_id._check_schema_shard(shard_id integer, schema name)
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

-- The largest id in a shard's copies of the template tables.  max() of an
-- indexed key reads one index entry.
CREATE FUNCTION sharded_id.shard_max_id(shard_id integer)
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

-- Before a floor is taken from a shard's rows: the largest id of each of
-- its tables must be one raise_floor accepts without force (it carries the
-- shard, and lies no further ahead of the clock than
-- sharded_id.max_clock_jump).  A row that any writer of the table could
-- plant must not stop a shard, or a server, from minting.
CREATE FUNCTION sharded_id._check_floors(shard_id integer, schema_name name, layout text)
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

-- After a restore on new hardware, or before a logical replica mints: raise
-- every shard's floor over the largest id its tables hold.  Every shard is
-- checked before any floor moves.
CREATE FUNCTION sharded_id.raise_floors()
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

-- Bring one shard's schema up to date: create what is missing.
CREATE FUNCTION sharded_id._provision(shard_id integer, schema_name name)
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

CREATE FUNCTION sharded_id.create_shard(shard_id integer, schema_name name DEFAULT NULL)
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

CREATE FUNCTION sharded_id.create_shards(first_shard integer, last_shard integer)
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

-- Provision a range of shards in batches of batch_size, one transaction
-- each, so that the lock table stays bounded (a shard holds a few dozen
-- locks until its transaction ends: its schema, sequence, function, tables
-- and indexes) however long the range.  A failure keeps the batches before
-- it, and running the call again resumes, since create_shard creates only
-- what is missing.  Progress shows in a NOTICE per batch, and to other
-- sessions in sharded_id.shards as each batch commits.
--
-- A procedure that commits cannot carry a SET clause, so this one pins its
-- search_path with set_config at the start of each of its transactions.
CREATE PROCEDURE sharded_id.provision_shards(first_shard integer, last_shard integer,
                                             batch_size integer DEFAULT 64)
LANGUAGE plpgsql
AS $$
DECLARE
    batch_start bigint := first_shard;
    batch_end bigint;
BEGIN
    -- A procedure cannot SET search_path (it COMMITs): pinned here, and
    -- again after every COMMIT and every CALL, which end the transaction.
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

-- Give a shard away: out of the catalog, so that enter_shard turns writers
-- away, and this server stops minting for it at once (for good when the
-- transaction commits).  Returns its high-water mark here, which the
-- server that takes it over passes to raise_floor.  The schema stays.
CREATE FUNCTION sharded_id.retire_shard(shard_id integer)
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

CREATE FUNCTION sharded_id.drop_shard(shard_id integer)
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

-- add_table's check, before it changes anything: the caller may create
-- in every shard schema that lacks the table (add_table copies as its
-- caller); else 42501 naming the first schemas and their count, with the
-- grant to run.
CREATE FUNCTION sharded_id._require_create_on_shards(table_name name)
RETURNS void
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    lacking name[];
    shown text;
BEGIN
    -- The catalogs, not to_regclass, which needs USAGE on the schema.
    lacking := ARRAY(SELECT s.schema_name FROM sharded_id.shards s JOIN pg_namespace n ON n.nspname = s.schema_name
                     WHERE NOT (has_schema_privilege(n.oid, 'USAGE') AND has_schema_privilege(n.oid, 'CREATE'))
                       AND NOT EXISTS (SELECT FROM pg_class c WHERE c.relnamespace = n.oid AND c.relname = table_name)
                     ORDER BY s.shard_id);
    IF cardinality(lacking) > 0 THEN
        -- Names quoted, so that the hint's statements run as they read.
        shown := (SELECT string_agg(quote_ident(x), ', ') FROM unnest(lacking[1:5]) x);
        RAISE EXCEPTION 'role "%" may not create tables in % shard schemas: %', current_user, cardinality(lacking),
                        shown || CASE WHEN cardinality(lacking) > 5 THEN ', ...' ELSE '' END
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('add_table copies table "%s" into every shard as its caller, and changed nothing: it needs USAGE and CREATE on each shard schema that lacks the table.', table_name),
                  HINT = format('A superuser or the schemas'' owner can grant them: GRANT USAGE, CREATE ON SCHEMA %s TO %I; or, for every shard: SELECT format(%L, schema_name) FROM sharded_id.shards \gexec',
                                shown, current_user, format('GRANT USAGE, CREATE ON SCHEMA %%I TO %I', current_user));
    END IF;
END
$$;

COMMENT ON FUNCTION sharded_id._require_create_on_shards(name) IS
'internal: refuse (42501) an add_table whose caller may not create in some shard schemas that lack the table, naming them';

CREATE FUNCTION sharded_id.add_table(template regclass, id_column name DEFAULT 'id')
RETURNS integer
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rel record;
    t sharded_id.shard_tables;
    shard record;
    copies integer := 0;
    known boolean;
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
    known := FOUND;
    IF known AND (t.template_schema, t.template_table) <> (rel.nspname, rel.relname) THEN
        RAISE EXCEPTION 'a sharded table named "%" already exists', rel.relname
            USING ERRCODE = 'duplicate_table',
                  DETAIL = format('Its template is %I.%I.', t.template_schema, t.template_table);
    END IF;
    PERFORM sharded_id._require_create_on_shards(rel.relname);
    IF NOT known THEN
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

-- Switch an existing table's bigint key (serial, bigserial or IDENTITY) to
-- sharded ids of one shard, in one transaction.  Every existing id must lie
-- below the lowest id minted now, so no old id can equal a new one.  The
-- column's sequence is kept, with its position: in seed mode it supplies the
-- sequence fields.  An IDENTITY's sequence goes with DROP IDENTITY, so it is
-- made again under the same name, owned by the column.
CREATE FUNCTION sharded_id.adopt_table(tbl regclass, shard_id integer, id_column name DEFAULT 'id')
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

-- Privileges as statements: acl of object (e.g. 'TABLE s.t', 'SCHEMA s'),
-- owned by owner, exactly: the defaults revoked, then each grant, made by
-- its grantor (SET ROLE) with as_grantor, else by the owner.  A NULL acl
-- is the default one, and gives nothing.  With columns, the column
-- privileges of a table (nothing to revoke).
CREATE FUNCTION sharded_id._acl_ddl(object text, acl aclitem[], owner oid, columns text DEFAULT NULL,
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

-- What schema_ddl cannot make again, as descriptions: objects of kinds it
-- does not know, members of extensions, and shapes of tables and types it
-- does not rebuild (plain inheritance, typed tables, rules, ranges with a
-- canonical function).
CREATE FUNCTION sharded_id._schema_unsupported(nsp oid)
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

-- The objects of a schema that schema_ddl creates one statement each
-- (types, sequences, functions and procedures, tables and partitions,
-- views, materialized views), with the length of the longest chain of
-- objects of the schema each depends on: made in that order, each finds
-- what it needs.  Defaults, domain constraints and view rules count for
-- the object they belong to; sequence ownership, constraints, indexes,
-- triggers and policies are made after every object, and do not count.
CREATE FUNCTION sharded_id._schema_objects(nsp oid)
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

-- A type of a schema (enum, domain with its constraints, range) as the
-- statements that make it again, under schema_name.
CREATE FUNCTION sharded_id._type_ddl(typ oid, schema_name name)
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

-- A relation of a schema (sequence, composite type, view, materialized
-- view without rows, partition, table) as the statement that makes it
-- again, under schema_name: columns with their collations, defaults,
-- generated expressions, identities (with their sequences) and NOT NULL;
-- access method and options.
CREATE FUNCTION sharded_id._relation_ddl(rel oid, schema_name name)
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

-- The schema (nsp, named schema_name) itself: CREATE SCHEMA with its
-- owner, then its privileges, first, since grantors that are not the
-- owner of an object make their grants as themselves, in the schema; and
-- function bodies left unchecked (check_function_bodies), as in pg_dump.
CREATE FUNCTION sharded_id._schema_head_ddl(nsp oid, schema_name name)
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

-- The objects of the schema that are made one statement each (types,
-- sequences, routines, relations), each after those it depends on.
CREATE FUNCTION sharded_id._schema_objects_ddl(nsp oid, schema_name name)
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

-- What the tables of the schema carry once every object is made:
-- constraints and indexes of each table that are its own, not cloned
-- from a partitioned parent's (those come with the parent's); replica
-- identities; sequence ownership; storage, compression and statistics
-- targets of columns that are not the defaults; defaults of view columns.
CREATE FUNCTION sharded_id._schema_tables_ddl(nsp oid)
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

-- Each relation's triggers, row security, policies, owner, privileges and
-- comments (_relation_extras_ddl); then the comments of constraints and
-- indexes.
CREATE FUNCTION sharded_id._schema_relation_extras_ddl(nsp oid)
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

-- Owners, privileges and comments of the types (composite types with the
-- comments of their columns) of the schema, named under schema_name.
CREATE FUNCTION sharded_id._schema_type_owners_ddl(nsp oid, schema_name name)
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

-- Owners, privileges and comments of the functions and procedures of the
-- schema.
CREATE FUNCTION sharded_id._schema_routine_owners_ddl(nsp oid)
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

-- Last: the foreign keys of the schema's tables, the schema's comment, and
-- a REFRESH of each materialized view that holds rows, so that it holds
-- them again, as its owner sees them, once the rows of its tables are in.
CREATE FUNCTION sharded_id._schema_tail_ddl(nsp oid, schema_name name)
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

-- A shard schema as the statements that make it again, empty, in another
-- database: what a move runs on its target before the rows arrive.  In the
-- order they must run in: the schema; its types, sequences, functions and
-- procedures, tables and partitions, views and materialized views (these
-- without rows), each after the objects of the schema it depends on; then
-- constraints, indexes, replica identities, sequence ownership; triggers
-- with their enabled state, row security, policies, owners, privileges and
-- comments of every object; foreign keys; the schema's privileges; and a
-- REFRESH of each materialized view that holds rows.  Function bodies are
-- not checked as they are made (check_function_bodies), as in pg_dump: the
-- statements run in one transaction.  An object it cannot make again is an
-- error (0A000) that names it, never left out.  Rows and sequence
-- positions are not part of it.  Names print qualified.  One function per
-- step; the checks come first, here.
CREATE FUNCTION sharded_id.schema_ddl(schema_name name)
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

-- The relations of a schema as schema_inventory lists them: kind, name,
-- owner, privileges, flags, and all else that defines them (options,
-- partitioning, definitions, sequence and column details, comments).
CREATE FUNCTION sharded_id._inventory_relations(nsp oid)
RETURNS TABLE (kind text, name text, owner oid, acl aclitem[], details text, def text)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' WHEN 'v' THEN 'view'
                          WHEN 'm' THEN 'materialized view' WHEN 'S' THEN 'sequence' WHEN 'i' THEN 'index'
                          WHEN 'I' THEN 'partitioned index' WHEN 'c' THEN 'composite type'
                          WHEN 'f' THEN 'foreign table' ELSE 'relation ' || c.relkind::text END,
           c.relname::text, c.relowner, c.relacl,
           pg_catalog.concat_ws(' ', CASE WHEN c.relkind = 'm' THEN CASE WHEN c.relispopulated THEN 'populated' ELSE 'not populated' END END,
                     CASE WHEN c.relrowsecurity THEN 'row security' END,
                     CASE WHEN c.relforcerowsecurity THEN 'forced' END,
                     CASE WHEN c.relpersistence = 'u' THEN 'unlogged' END,
                     CASE WHEN c.relkind IN ('r', 'p') AND c.relreplident <> 'd' THEN 'replica identity ' || c.relreplident::text END),
           pg_catalog.concat_ws(E'\n',
               c.reloptions::text, (SELECT a.amname FROM pg_catalog.pg_am a WHERE a.oid = c.relam),
               pg_catalog.pg_get_partkeydef(c.oid), pg_catalog.pg_get_expr(c.relpartbound, c.oid),
               (SELECT 'parent ' || i.inhparent::pg_catalog.regclass::text FROM pg_catalog.pg_inherits i WHERE i.inhrelid = c.oid),
               CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid) END,
               CASE WHEN c.relkind IN ('i', 'I') THEN pg_catalog.pg_get_indexdef(c.oid) END,
               (SELECT pg_catalog.concat_ws(' ', q.seqtypid::pg_catalog.regtype, q.seqstart, q.seqincrement, q.seqmin, q.seqmax, q.seqcache, q.seqcycle)
                FROM pg_catalog.pg_sequence q WHERE q.seqrelid = c.oid),
               (SELECT 'owned by ' || d.refobjid::pg_catalog.regclass::text || '.' || pg_catalog.quote_ident(a.attname) || ' ' || d.deptype::text
                FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                WHERE d.classid = 'pg_class'::pg_catalog.regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::pg_catalog.regclass
                  AND d.deptype IN ('a', 'i') AND c.relkind = 'S'),
               (SELECT pg_catalog.string_agg(pg_catalog.concat_ws(' ', pg_catalog.quote_ident(a.attname), pg_catalog.format_type(a.atttypid, a.atttypmod),
                                            a.attcollation::pg_catalog.regcollation::text, a.attnotnull, a.attidentity, a.attgenerated,
                                            a.attstorage, a.attcompression, a.attstattarget,
                                            pg_catalog.pg_get_expr(d.adbin, d.adrelid),
                                            (SELECT pg_catalog.string_agg(x::text, ',' ORDER BY x::text) FROM pg_catalog.unnest(a.attacl) x),
                                            pg_catalog.col_description(c.oid, a.attnum)), E'\n' ORDER BY a.attnum)
                FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
               pg_catalog.obj_description(c.oid, 'pg_class'))
    FROM pg_catalog.pg_class c WHERE c.relnamespace = _inventory_relations.nsp;
$$;

COMMENT ON FUNCTION sharded_id._inventory_relations(oid) IS
'internal: the relations of a schema with their owners, privileges, flags and definitions (schema_inventory)';

-- A schema as a list of its objects, to compare two copies of it: one row
-- per object, with its owner, its privileges (each grant as text, sorted;
-- NULL for the default ones), a few flags worth reading (details), and an
-- md5 of everything else that defines it: columns, defaults, bodies, view
-- definitions, enabled states, options, comments.  The schema's own name
-- is replaced by @schema@ in names and definitions, so that copies under
-- two names compare too.
CREATE FUNCTION sharded_id.schema_inventory(schema_name name)
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
        SELECT r.kind, r.name, r.owner, r.acl, r.details, r.def
        FROM sharded_id._inventory_relations(nsp) r
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

-- Provisioning is for the extension's owner, or roles it grants these to.
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
REVOKE EXECUTE ON FUNCTION sharded_id._require_create_on_shards(name) FROM PUBLIC;
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
REVOKE EXECUTE ON FUNCTION sharded_id._inventory_relations(oid) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._catalog_retire(integer, text, bigint) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._catalog_own(integer, name, text, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._catalog_unretire(integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._catalog_add_table(regclass, name, name) FROM PUBLIC;

-- The provisioning role: the provisioning API, with the internal functions
-- it calls as its caller.  Those that change the catalogs or the server's
-- state check the caller themselves (src/privs.c).  Not configure,
-- raise_floors, lower_floor, reset_ceiling, the moves or the router's.
GRANT EXECUTE ON FUNCTION sharded_id.add_table(regclass, name) TO sharded_id_provisioner;
GRANT EXECUTE ON FUNCTION sharded_id._require_create_on_shards(name) TO sharded_id_provisioner;
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
GRANT EXECUTE ON FUNCTION sharded_id._inventory_relations(oid) TO sharded_id_provisioner;
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
