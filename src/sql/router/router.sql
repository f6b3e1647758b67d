/* src/sql/router/router.sql */

--
-- Routers: the shard map, and the PL/Proxy cluster and postgres_fdw
-- servers built from it.  The tables are made IF NOT EXISTS: on a router
-- that an earlier version of sharded_id made, its update to 2.0 left them,
-- rows and all, and src/sql/router/adopt.sql has made them this extension's.
--
CREATE TABLE IF NOT EXISTS sharded_id.nodes (
    node_name text PRIMARY KEY CHECK (node_name ~ '^[a-z0-9_]+$'),
    connstr text NOT NULL
);

COMMENT ON TABLE sharded_id.nodes IS
'data nodes of the cluster: a name and a libpq connection string each';

CREATE TABLE IF NOT EXISTS sharded_id.shard_map (
    shard_id integer PRIMARY KEY CHECK (shard_id >= 0),
    node_name text NOT NULL REFERENCES sharded_id.nodes ON UPDATE CASCADE
);

COMMENT ON TABLE sharded_id.shard_map IS
'which data node holds each logical shard (apply_shard_map checks the shards against the layout)';

CREATE TABLE IF NOT EXISTS sharded_id.ops_tables (
    template regclass PRIMARY KEY,
    ops_table regclass NOT NULL
);

COMMENT ON TABLE sharded_id.ops_tables IS
'partitioned tables over all shards (postgres_fdw), rebuilt by apply_shard_map';

SELECT pg_catalog.pg_extension_config_dump('sharded_id.nodes', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.shard_map', '');
SELECT pg_catalog.pg_extension_config_dump('sharded_id.ops_tables', '');

-- Connection strings may hold passwords: sharded_id.nodes is for the
-- extension's owner and the roles it grants SELECT to.
GRANT SELECT ON sharded_id.shard_map, sharded_id.ops_tables TO PUBLIC;
REVOKE ALL ON sharded_id.nodes FROM PUBLIC;

-- The name of the postgres_fdw server of a data node.
CREATE FUNCTION sharded_id.node_server(node_name text)
RETURNS name
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ('sharded_id_' || node_name)::name
$$;

COMMENT ON FUNCTION sharded_id.node_server(text) IS
'name of the postgres_fdw server that apply_shard_map makes for a data node';

-- Create a foreign server with exactly the wanted options, or bring an
-- existing one's options to them, in one statement (validators see only
-- complete option sets).
CREATE FUNCTION sharded_id._set_server_options(server name, fdw name, wanted text[])
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

-- libpq connection string (keyword/value or URI) to postgres_fdw server
-- options, parsed by libpq itself.
CREATE FUNCTION sharded_id._connstr_options(connstr text)
RETURNS text[]
AS 'MODULE_PATHNAME', 'shid_connstr_options'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_options(text) IS
'internal: the options a libpq connection string or URI sets, as libpq parses them, less the user and secrets (they belong in user mappings)';

-- The same connection string without its secrets (password, sslpassword),
-- as a keyword/value string parsed and written back by libpq's rules.
CREATE FUNCTION sharded_id._connstr_public(connstr text, with_user boolean DEFAULT true)
RETURNS text
AS 'MODULE_PATHNAME', 'shid_connstr_public'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_public(text, boolean) IS
'internal: a libpq connection string or URI as a keyword/value string without its secrets (and optionally its user), fit for statements, catalogs and logs';

-- The secrets of a connection string (password, sslpassword), and with
-- with_user its user, as 'keyword=value' sorted by keyword: the options of
-- a user mapping, which PostgreSQL shows to no other role.
CREATE FUNCTION sharded_id._connstr_secrets(connstr text, with_user boolean DEFAULT false)
RETURNS text[]
AS 'MODULE_PATHNAME', 'shid_connstr_secrets'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION sharded_id._connstr_secrets(text, boolean) IS
'internal: the secrets (and optionally the user) of a libpq connection string, as user mapping options';

-- Give the user mapping for PUBLIC of a server (made if need be) the
-- wanted options, in one statement; its other options stay, since an
-- administrator may have set them.
CREATE FUNCTION sharded_id._set_mapping_options(server name, wanted text[])
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

-- A node's PL/Proxy partition string: its connection string without its
-- secrets, and without its user when it has a secret, which then goes with
-- the user to the cluster's user mapping (PL/Proxy adds a mapping's options
-- only to a partition string that names no user).  apply_shard_map and a
-- move's switch both write it, and the switch compares it.
CREATE FUNCTION sharded_id._partition_connstr(connstr text)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN sharded_id._connstr_public(connstr, sharded_id._connstr_secrets(connstr) = '{}');

COMMENT ON FUNCTION sharded_id._partition_connstr(text) IS
'internal: a node''s PL/Proxy partition string, without its secrets, and without its user when it has one';

-- A function of its argument only, like _connstr_public and _connstr_secrets:
-- PUBLIC's, as they are (1.5 revoked it).
GRANT EXECUTE ON FUNCTION sharded_id._partition_connstr(text) TO PUBLIC;

-- The options of a PL/Proxy cluster's user mapping for PUBLIC, from the
-- nodes of the shard map, or of the map as it will be once shard
-- moved_shard is on node target: the user and password that the nodes'
-- connection strings hold, the same for every node, or '{}' when none
-- holds a secret.  Fails on what one mapping cannot carry.
CREATE FUNCTION sharded_id._cluster_mapping(cluster name, moved_shard integer DEFAULT NULL, target text DEFAULT NULL)
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

-- The end of apply_shard_map, when postgres_fdw is installed: a
-- postgres_fdw server per node, for ops queries, and with_ops, the ops
-- tables' partitions rebuilt on them.
CREATE FUNCTION sharded_id._apply_node_servers(with_ops boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    node record;
    ops record;
BEGIN
    PERFORM sharded_id._superuser_only('sharded_id._apply_node_servers');
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_foreign_data_wrapper WHERE fdwname = 'postgres_fdw') THEN
        RETURN;
    END IF;
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
END
$$;

COMMENT ON FUNCTION sharded_id._apply_node_servers(boolean) IS
'internal: the postgres_fdw server and user mapping of every node, for ops queries, and optionally the ops tables'' partitions rebuilt on them';

-- apply_shard_map, with or without the rebuild of the ops tables' partitions
-- (a move's switch leaves that to its cleanup).
CREATE FUNCTION sharded_id._apply_shard_map(cluster name, connection_lifetime integer,
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

    PERFORM sharded_id._apply_node_servers(with_ops);
    RETURN shard_count;
END
$$;

COMMENT ON FUNCTION sharded_id._apply_shard_map(name, integer, integer, boolean) IS
'internal: apply_shard_map, optionally without rebuilding the ops tables'' partitions';

-- apply_shard_map's arguments, refused before PL/Proxy or CREATE SERVER
-- would fail on them with an error of their own (XX000, 42601); returns
-- the cluster.
CREATE FUNCTION sharded_id._check_map_arguments(cluster name, connection_lifetime integer, query_timeout integer)
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

CREATE FUNCTION sharded_id.apply_shard_map(cluster name DEFAULT 'sharded_id',
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

-- (Re)create the partitions of an ops table: one foreign table per shard,
-- on the node that holds it.
-- One shard's postgres_fdw partition of an ops table, on the server of
-- the node the shard map names; a partition of the shard on another server
-- is dropped first, and one already on that server is left as it is.
CREATE FUNCTION sharded_id._attach_ops_partition(ops_table regclass, shard_id integer)
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

CREATE FUNCTION sharded_id._attach_ops_partitions(ops_table regclass)
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

CREATE FUNCTION sharded_id.create_ops_table(template regclass, ops_schema name DEFAULT 'ops',
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
REVOKE EXECUTE ON FUNCTION sharded_id._apply_node_servers(boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._cluster_mapping(name, integer, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._attach_ops_partition(regclass, integer) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id._attach_ops_partitions(regclass) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION sharded_id.create_ops_table(regclass, name, name) FROM PUBLIC;

-- The shard's route lock, the one route() waits on, in exclusive mode
-- until the transaction ends.
CREATE FUNCTION sharded_id._lock_route(shard integer)
RETURNS void
AS 'MODULE_PATHNAME', 'shid_lock_route'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION sharded_id._lock_route(integer) IS
'internal: take a shard''s route lock, which route() waits on, in exclusive mode until the transaction ends';

REVOKE EXECUTE ON FUNCTION sharded_id._lock_route(integer) FROM PUBLIC;

-- Tell the router that a node now holds a shard, as after a restore of the
-- shard there from a dump: the shard map and apply_shard_map in one
-- transaction, under the shard's route lock, so that calls through the
-- router go to the node from the next one on.  The node must already hold
-- the shard (create_shard there); a move in progress for it is refused.
CREATE FUNCTION sharded_id.place_shard(shard integer, node text, cluster name DEFAULT 'sharded_id')
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
