--
-- A role that owns a shard schema, and nothing else, plants its own code in
-- it: a view in place of a shard table, an index expression, a partial
-- index, expression statistics, a column default, a generated column, a
-- trigger, a rule, a forced row-security policy, a check constraint, a
-- partition's index expression, a domain column, a materialized view.  Its
-- function makes the role a superuser when it runs with a superuser's
-- rights, and writes to a side-effect table whenever it runs.  Then a
-- superuser runs every call that reads or changes shard schemas.  None may
-- run the tenant's code with any rights but the tenant's own.
--
SET client_min_messages = warning;
\set SHOW_CONTEXT never
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE ROLE sharded_id_regress_tenant NOLOGIN;
CREATE ROLE sharded_id_regress_reader NOLOGIN;
CREATE SCHEMA tenant_lab;
GRANT USAGE ON SCHEMA tenant_lab TO sharded_id_regress_tenant;
CREATE TABLE tenant_lab.side_effect (usr name, su text, at timestamptz DEFAULT clock_timestamp());
GRANT INSERT ON tenant_lab.side_effect TO sharded_id_regress_tenant;
-- The same, kept when the call fails and its transaction rolls back: each
-- run of the tenant's code with rights other than its own.
CREATE SEQUENCE tenant_lab.ran_foreign;
GRANT USAGE ON SEQUENCE tenant_lab.ran_foreign TO sharded_id_regress_tenant;
CREATE TABLE tenant_lab.results (kind text, call text, sqlstate text, tenant_super boolean,
                                 foreign_rows bigint, unchanged boolean, n integer);

-- The template of every shard's table.
CREATE SCHEMA tenant_app;
CREATE TABLE tenant_app.items (id bigint PRIMARY KEY, v text, parent bigint REFERENCES tenant_app.items (id));
SELECT sharded_id.add_table('tenant_app.items') >= 0 AS template_added;

-- The tenant plants in a session of its own, as an attacker would: this
-- session's caches know nothing of its objects.
SELECT dblink_connect('tenant', format('dbname=%s user=%s host=%s port=%s', current_database(), current_user,
                                       split_part(current_setting('unix_socket_directories'), ',', 1),
                                       current_setting('port')));
SELECT dblink_exec('tenant', 'SET client_min_messages = warning');

-- The tenant's code, made in schema s: evil() writes a row, and when it
-- runs as a superuser, makes the tenant one.  Immutable wrappers, for
-- index expressions and constraints, call it.
CREATE FUNCTION tenant_lab.tenant_code(s name) RETURNS text LANGUAGE sql AS $f$
SELECT format($$
CREATE FUNCTION %1$I.evil() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $b$
DECLARE
    -- is_superuser is the session's; rolsuper is the rights in force.
    su boolean := (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user);
BEGIN
    INSERT INTO tenant_lab.side_effect (usr, su) VALUES (current_user, CASE WHEN su THEN 'on' ELSE 'off' END);
    IF su OR current_user <> 'sharded_id_regress_tenant' THEN
        PERFORM nextval('tenant_lab.ran_foreign');
    END IF;
    IF su THEN
        ALTER ROLE sharded_id_regress_tenant SUPERUSER;
    END IF;
    RETURN true;
END $b$;
CREATE FUNCTION %1$I.evil_i(x bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $b$
BEGIN PERFORM %1$I.evil(); RETURN x; END $b$;
CREATE FUNCTION %1$I.evil_b(x boolean) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $b$
BEGIN PERFORM %1$I.evil(); RETURN x; END $b$;
CREATE FUNCTION %1$I.evil_t() RETURNS trigger LANGUAGE plpgsql AS $b$
BEGIN PERFORM %1$I.evil(); RETURN coalesce(NEW, OLD); END $b$;
$$, s)
$f$;

-- The tenant's version of the shard's table, with two ids of shard n from
-- yesterday (below anything minted now, and ids its floor may be raised
-- over), and the plant of that kind.
CREATE FUNCTION tenant_lab.plant_sql(kind text, s name, n integer) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    t text := format('%I.items', s);
    rows text := format('INSERT INTO %s (id, v) VALUES (%s, ''a''), (%s, ''b'');', t,
                        sharded_id.encode(now() - interval '1 day', n, 1), sharded_id.encode(now() - interval '1 day', n, 2));
    base text := format('DROP TABLE IF EXISTS %1$s; CREATE TABLE %1$s (id bigserial PRIMARY KEY, v text, parent bigint);', t);
BEGIN
    RETURN tenant_lab.tenant_code(s) || CASE kind
        WHEN 'view' THEN format('DROP TABLE IF EXISTS %1$s; CREATE VIEW %1$s AS SELECT x AS id, ''v''::text AS v '
                                'FROM (VALUES (%2$s::bigint)) y(x) WHERE %3$I.evil();',
                                t, sharded_id.encode(now() - interval '1 day', n, 1), s)
        WHEN 'matview' THEN format('DROP TABLE IF EXISTS %1$s; CREATE MATERIALIZED VIEW %1$s AS SELECT x AS id, ''v''::text AS v '
                                   'FROM (VALUES (%2$s::bigint)) y(x) WHERE %3$I.evil();',
                                   t, sharded_id.encode(now() - interval '1 day', n, 1), s)
        WHEN 'index expression' THEN base || rows || format('CREATE INDEX ON %s ((id + %I.evil_i(0)));', t, s)
        WHEN 'partial index' THEN base || rows || format('CREATE INDEX ON %s (id) WHERE %I.evil_b(true);', t, s)
        WHEN 'statistics' THEN base || rows || format('CREATE STATISTICS %I.st ON (id + %I.evil_i(0)) FROM %s; ANALYZE %s;', s, s, t, t)
        WHEN 'default' THEN format('DROP TABLE IF EXISTS %1$s; CREATE TABLE %1$s (id bigserial PRIMARY KEY, v text DEFAULT %2$I.evil()::text, parent bigint);', t, s) || rows
        WHEN 'generated' THEN format('DROP TABLE IF EXISTS %1$s; CREATE TABLE %1$s (id bigserial PRIMARY KEY, v text, parent bigint, '
                                    'g bigint GENERATED ALWAYS AS (%2$I.evil_i(id)) STORED);', t, s) || rows
        WHEN 'trigger' THEN base || rows || format('CREATE TRIGGER tr BEFORE INSERT OR UPDATE OR DELETE ON %s '
                                                   'FOR EACH ROW EXECUTE FUNCTION %I.evil_t();'
                                                   'CREATE TRIGGER trs BEFORE TRUNCATE ON %s '
                                                   'FOR EACH STATEMENT EXECUTE FUNCTION %I.evil_t();', t, s, t, s)
        WHEN 'rule' THEN base || rows || format('CREATE RULE r AS ON INSERT TO %s DO ALSO SELECT %I.evil();'
                                                'CREATE RULE u AS ON UPDATE TO %s DO ALSO SELECT %I.evil();', t, s, t, s)
        WHEN 'policy' THEN base || rows || format('ALTER TABLE %1$s ENABLE ROW LEVEL SECURITY; ALTER TABLE %1$s FORCE ROW LEVEL SECURITY;'
                                                  'CREATE POLICY p ON %1$s USING (%2$I.evil());', t, s)
        WHEN 'check' THEN base || rows || format('ALTER TABLE %s ADD CONSTRAINT c CHECK (%I.evil_b(id > 0));', t, s)
        WHEN 'partition' THEN format('DROP TABLE IF EXISTS %1$s; CREATE TABLE %1$s (id bigserial PRIMARY KEY, v text, parent bigint) PARTITION BY RANGE (id);'
                                     'CREATE TABLE %2$I.items_all PARTITION OF %1$s DEFAULT;', t, s)
                              || rows || format('CREATE INDEX ON %I.items_all ((id + %I.evil_i(0)));', s, s)
        WHEN 'domain' THEN format('CREATE DOMAIN %1$I.big AS bigint CHECK (%1$I.evil_b(VALUE > 0));'
                                  'DROP TABLE IF EXISTS %2$s; CREATE TABLE %2$s (id %1$I.big PRIMARY KEY, v text, parent bigint);', s, t) || rows
    END;
END
$f$;

-- What a refused call must leave as it found it: the shard's catalog rows,
-- its floor, and the schema's relations with their column defaults.
CREATE FUNCTION tenant_lab.state(n integer, s name) RETURNS text LANGUAGE sql AS $f$
SELECT concat_ws(' | ',
    (SELECT string_agg(format('%s %s %s %s', x.shard_id, x.schema_name, x.layout, x.mode), ',') FROM sharded_id.shards x WHERE x.shard_id = n),
    (SELECT string_agg(format('%s %s', r.shard_id, r.high_water), ',') FROM sharded_id.retired_shards r WHERE r.shard_id = n),
    (SELECT string_agg(format('%s %s %s', f.layout, f.floor, f.retired), ',') FROM sharded_id.floors() f WHERE f.shard_id = n),
    (SELECT string_agg(format('%s %s %s', c.relname, c.relkind, c.relowner::regrole), ',' ORDER BY c.relname)
     FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace WHERE ns.nspname = s),
    (SELECT string_agg(format('%s.%s %s', c.relname, a.attname, pg_get_expr(d.adbin, d.adrelid)), ',' ORDER BY c.relname, a.attnum)
     FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid JOIN pg_namespace ns ON ns.oid = c.relnamespace
     JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE ns.nspname = s))
$f$;

CREATE SEQUENCE tenant_lab.shard_numbers START 3500;

-- Step 1, committed in the other session: the shard, as a superuser makes
-- it, with its schema handed to the tenant; or, for the calls that adopt a
-- schema, an empty schema the tenant owns.
CREATE FUNCTION tenant_lab.prepare(kind text, call text) RETURNS integer LANGUAGE plpgsql AS $f$
DECLARE
    n integer := nextval('tenant_lab.shard_numbers');
    s name := CASE WHEN call = 'create_shard adopting' THEN format('tenant_restored_%s', n)
                   ELSE sharded_id.shard_schema(n) END;
BEGIN
    IF call IN ('create_shard adopting', 'provision_shards') THEN
        PERFORM public.dblink_exec('tenant', format('CREATE SCHEMA %I AUTHORIZATION sharded_id_regress_tenant', s));
    ELSE
        PERFORM public.dblink_exec('tenant', format('BEGIN; SELECT sharded_id.create_shard(%s); '
                                                    'ALTER SCHEMA %I OWNER TO sharded_id_regress_tenant; COMMIT', n, s));
    END IF;
    RETURN n;
END
$f$;

-- Step 2: the tenant plants, in its own session, as itself.
CREATE FUNCTION tenant_lab.plant(kind text, call text) RETURNS text LANGUAGE sql AS $f$
SELECT public.dblink_exec('tenant',
    'BEGIN; SET LOCAL ROLE sharded_id_regress_tenant; '
    || tenant_lab.plant_sql(kind,
                            CASE WHEN call = 'create_shard adopting' THEN format('tenant_restored_%s', currval('tenant_lab.shard_numbers'))
                                 ELSE sharded_id.shard_schema(currval('tenant_lab.shard_numbers')::integer) END,
                            currval('tenant_lab.shard_numbers')::integer)
    || ' COMMIT')
$f$;

-- A table's rows, deleted by its owner (planning the DELETE folds the
-- owner's constant index predicates) and inserted again through
-- _insert_as_owner by the superuser.
CREATE FUNCTION tenant_lab.reinsert(rel regclass) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    rows text[] := ARRAY(SELECT r FROM sharded_id._table_rows(rel) r);
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', (SELECT c.relowner::regrole::text FROM pg_class c WHERE c.oid = rel));
    EXECUTE format('DELETE FROM %s', rel);
    RESET ROLE;
    IF sharded_id._insert_as_owner(rel, rows) <> coalesce(cardinality(rows), 0) THEN
        RAISE EXCEPTION 'rows of % lost', rel;
    END IF;
END
$f$;

-- Step 3: the superuser's call, its SQLSTATE, and what the tenant gained.
CREATE FUNCTION tenant_lab.attack(kind text, call text) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    n integer := tenant_lab.prepare(kind, call);
    s name := CASE WHEN call = 'create_shard adopting' THEN format('tenant_restored_%s', n)
                   ELSE sharded_id.shard_schema(n) END;
    before text;
    state text := 'ok';
BEGIN
    PERFORM tenant_lab.plant(kind, call);
    -- What the tenant's code wrote as itself while planting does not count.
    TRUNCATE tenant_lab.side_effect;
    PERFORM setval('tenant_lab.ran_foreign', 1, false);
    IF call = 'retire_shard, create_shard' THEN
        PERFORM sharded_id.retire_shard(n);
    END IF;
    before := tenant_lab.state(n, s);
    BEGIN
        CASE call
            WHEN 'raise_floors' THEN PERFORM sharded_id.raise_floors();
            WHEN 'retire_shard, create_shard' THEN PERFORM sharded_id.create_shard(n);
            WHEN 'create_shard again' THEN PERFORM sharded_id.create_shard(n);
            WHEN 'create_shard adopting' THEN PERFORM sharded_id.create_shard(n, s);
            WHEN 'adopt_table' THEN PERFORM sharded_id.adopt_table(format('%I.items', s)::regclass, n);
            WHEN 'drop_shard' THEN PERFORM sharded_id.drop_shard(n);
            WHEN 'schema_ddl' THEN PERFORM count(*) FROM sharded_id.schema_ddl(s);
            WHEN 'schema_inventory' THEN PERFORM count(*) FROM sharded_id.schema_inventory(s);
            -- What move_shard runs on both nodes to compare the copies.
            WHEN 'move fingerprint' THEN PERFORM sharded_id._schema_fingerprint(s);
            -- What the dump method's copy reads on the source.
            WHEN 'move copy' THEN PERFORM count(*) FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace,
                                                        sharded_id._table_rows(c.oid) r
                                  WHERE ns.nspname = s AND c.relkind = 'r';
            -- What it writes on the target: each table's rows, emptied
            -- first in replica mode (which runs none of the tenant's code),
            -- inserted again as the dump method does.
            WHEN 'move insert' THEN
                PERFORM set_config('session_replication_role', 'replica', true);
                PERFORM tenant_lab.reinsert(c.oid) FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
                WHERE ns.nspname = s AND c.relkind = 'r';
                PERFORM set_config('session_replication_role', 'origin', true);
        END CASE;
    EXCEPTION WHEN OTHERS THEN
        state := SQLSTATE;
    END;
    PERFORM tenant_lab.record(kind, call, state, CASE WHEN state <> 'ok' THEN before = tenant_lab.state(n, s) END);
END
$f$;

-- Step 4: record, then put everything back for the next case.
CREATE FUNCTION tenant_lab.record(kind text, call text, state text, unchanged boolean) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE
    n integer := currval('tenant_lab.shard_numbers');
BEGIN
    INSERT INTO tenant_lab.results
    SELECT kind, call, state,
           (SELECT r.rolsuper FROM pg_roles r WHERE r.rolname = 'sharded_id_regress_tenant'),
           (SELECT count(*) FROM tenant_lab.side_effect e WHERE e.usr <> 'sharded_id_regress_tenant' OR e.su <> 'off')
           + (SELECT CASE WHEN q.is_called THEN q.last_value ELSE 0 END FROM tenant_lab.ran_foreign q),
           unchanged, n;
    ALTER ROLE sharded_id_regress_tenant NOSUPERUSER;
    DELETE FROM sharded_id.shards x WHERE x.shard_id = n;
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', sharded_id.shard_schema(n));
    EXECUTE format('DROP SCHEMA IF EXISTS %I CASCADE', format('tenant_restored_%s', n));
    TRUNCATE tenant_lab.side_effect;
    PERFORM setval('tenant_lab.ran_foreign', 1, false);
END
$f$;

-- Every kind of plant against every call.  provision_shards commits, so it
-- is called at the top level; its errors show here.
\set VERBOSITY sqlstate
SELECT CASE WHEN c = 'provision_shards'
            THEN format('DO $$BEGIN PERFORM tenant_lab.prepare(%1$L, %2$L); PERFORM tenant_lab.plant(%1$L, %2$L); '
                        'TRUNCATE tenant_lab.side_effect; END$$', k, c)
            ELSE format('DO $$BEGIN PERFORM tenant_lab.attack(%L, %L); END$$', k, c) END,
       CASE WHEN c = 'provision_shards'
            THEN format('CALL sharded_id.provision_shards(%1$s, %1$s)', 'currval(''tenant_lab.shard_numbers'')::integer') END,
       CASE WHEN c = 'provision_shards'
            THEN format('DO $$BEGIN PERFORM tenant_lab.record(%L, %L, CASE WHEN EXISTS (SELECT FROM sharded_id.shards x '
                        'WHERE x.shard_id = currval(''tenant_lab.shard_numbers'')) THEN ''ok'' ELSE ''refused'' END, NULL); END$$', k, c) END
FROM unnest(ARRAY['view', 'matview', 'index expression', 'partial index', 'statistics', 'default', 'generated',
                  'trigger', 'rule', 'policy', 'check', 'partition', 'domain']) WITH ORDINALITY AS k(k, i),
     unnest(ARRAY['raise_floors', 'retire_shard, create_shard', 'create_shard again', 'create_shard adopting', 'provision_shards',
                  'adopt_table', 'drop_shard', 'schema_ddl', 'schema_inventory', 'move fingerprint', 'move copy',
                  'move insert']) WITH ORDINALITY AS c(c, j)
ORDER BY i, j
\gexec
\set VERBOSITY default

-- The tenant gained nothing, whatever it planted and whatever was called:
-- never a superuser, its code never ran with anyone's rights but its own,
-- and a refused call changed nothing.
SELECT count(*) AS cases,
       count(*) FILTER (WHERE tenant_super) AS tenant_became_superuser,
       count(*) FILTER (WHERE foreign_rows > 0) AS ran_with_other_rights,
       count(*) FILTER (WHERE NOT unchanged) AS refused_but_changed
FROM tenant_lab.results;
SELECT kind, call, n FROM tenant_lab.results WHERE tenant_super OR foreign_rows > 0 OR NOT unchanged ORDER BY n;
-- Which calls refuse which plants: a relation that is not a table where a
-- shard table is expected (42809), a column that is not bigint (42804).
SELECT kind, string_agg(call || ' ' || sqlstate, ', ' ORDER BY n) AS refused
FROM tenant_lab.results WHERE sqlstate <> 'ok' GROUP BY kind ORDER BY min(n);
SELECT rolsuper AS tenant_is_superuser FROM pg_roles WHERE rolname = 'sharded_id_regress_tenant';

-- The errors name the object.
CREATE FUNCTION pg_temp.message_of(query text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE query;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT tenant_lab.prepare('view', 'raise_floors') AS n \gset
SELECT tenant_lab.plant('view', 'raise_floors') IS NOT NULL AS planted;
SELECT coalesce((SELECT floor::text FROM sharded_id.floors() WHERE shard_id = :n), 'none') AS floor_before \gset
SELECT regexp_replace(pg_temp.message_of('SELECT sharded_id.raise_floors()'), '_[0-9]+', '_N', 'g') AS raise_floors;
SELECT regexp_replace(pg_temp.message_of(format('SELECT sharded_id.adopt_table(''shard_%s.items'', %s)', :n, :n)), '_[0-9]+', '_N', 'g') AS adopt_table;
SELECT regexp_replace(pg_temp.message_of(format('SELECT sharded_id.shard_max_id(%s)', :n)), '_[0-9]+', '_N', 'g') AS shard_max_id;
SELECT coalesce((SELECT floor::text FROM sharded_id.floors() WHERE shard_id = :n), 'none') = :'floor_before' AS floor_unchanged;
SELECT count(*) AS side_effects FROM tenant_lab.side_effect WHERE su = 'on';
SELECT tenant_lab.record('view', 'messages', NULL, NULL) IS NULL;

-- A key that create_shard adds is checked as its table's owner, since the
-- check plans a read of both tables.  The partitioned table of a tenant
-- takes no unchecked key before PostgreSQL 18: refused (42501), and the
-- tenant's code did not run.
SELECT tenant_lab.prepare('partition', 'create_shard again') AS n \gset
SELECT tenant_lab.plant('partition', 'create_shard again') IS NOT NULL AS planted;
TRUNCATE tenant_lab.side_effect;
SELECT tenant_lab.state(:n, 'shard_' || :n) AS state_before \gset
SELECT regexp_replace(pg_temp.message_of(format('SELECT sharded_id.create_shard(%s)', :n)), '_[0-9]+', '_N', 'g') AS partitioned_key;
SELECT tenant_lab.state(:n, 'shard_' || :n) = :'state_before' AS unchanged,
       (SELECT count(*) FROM tenant_lab.side_effect) AS tenant_code_ran;
-- Once the tenant has added the key itself, create_shard has nothing to add.
SELECT public.dblink_exec('tenant', format('SET ROLE sharded_id_regress_tenant; '
                                           'ALTER TABLE shard_%1$s.items ADD CONSTRAINT items_parent_fkey '
                                           'FOREIGN KEY (parent) REFERENCES shard_%1$s.items (id); RESET ROLE', :n));
SELECT sharded_id.create_shard(:n) = 'shard_' || :n AS provisioned;
SELECT rolsuper AS tenant_is_superuser FROM pg_roles WHERE rolname = 'sharded_id_regress_tenant';
SELECT tenant_lab.record('partition', 'messages', NULL, NULL) IS NULL;
-- A second template, whose copies point at the first.  The tenant puts its
-- own table, with its code in an index expression, in place of the copy
-- of the first; create_shard makes a new copy of the second, owned by
-- another role, whose key into the tenant's table would run the tenant's
-- code as that role: refused (42501), and nothing is left.
CREATE TABLE tenant_app.children (id bigint PRIMARY KEY, item_id bigint REFERENCES tenant_app.items (id));
SELECT sharded_id.add_table('tenant_app.children') >= 0 AS template_added;
SELECT tenant_lab.prepare('index expression', 'create_shard again') AS n \gset
SELECT public.dblink_exec('tenant', format('SET ROLE sharded_id_regress_tenant; DROP TABLE shard_%s.children; RESET ROLE', :n));
SELECT tenant_lab.plant('index expression', 'create_shard again') IS NOT NULL AS planted;
TRUNCATE tenant_lab.side_effect;
SELECT setval('tenant_lab.ran_foreign', 1, false) IS NOT NULL AS reset;
SELECT tenant_lab.state(:n, 'shard_' || :n) AS state_before \gset
SELECT regexp_replace(pg_temp.message_of(format('SELECT sharded_id.create_shard(%s)', :n)), '_[0-9]+', '_N', 'g') AS key_into_tenant_table;
SELECT tenant_lab.state(:n, 'shard_' || :n) = :'state_before' AS unchanged,
       (SELECT count(*) FROM tenant_lab.side_effect) AS tenant_code_ran,
       (SELECT is_called FROM tenant_lab.ran_foreign) AS ran_with_other_rights;
SELECT rolsuper AS tenant_is_superuser FROM pg_roles WHERE rolname = 'sharded_id_regress_tenant';
SELECT tenant_lab.record('index expression', 'messages', NULL, NULL) IS NULL;
DELETE FROM sharded_id.shard_tables WHERE table_name = 'children';

--
-- sharded_id._max_id reads a table's largest id as the table's owner, in a
-- security-restricted operation with a fixed search_path.
--
CREATE TABLE tenant_app.owned (id bigint, small integer, v text);
INSERT INTO tenant_app.owned SELECT g, g, 'x' FROM generate_series(1, 100) g;
ALTER TABLE tenant_app.owned OWNER TO sharded_id_regress_tenant;
SELECT sharded_id._max_id('tenant_app.owned', 'id') AS max_id;
-- A forced policy hides every row from the owner: the read still sees them
-- all, and runs no policy.
ALTER TABLE tenant_app.owned ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE FUNCTION tenant_app.hide() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN INSERT INTO tenant_lab.side_effect (usr, su) VALUES (current_user, current_setting('is_superuser')); RETURN false; END $$;
ALTER FUNCTION tenant_app.hide() OWNER TO sharded_id_regress_tenant;
CREATE POLICY hide ON tenant_app.owned USING (tenant_app.hide());
SELECT sharded_id._max_id('tenant_app.owned', 'id') AS max_id_under_forced_policy;
SELECT count(*) AS policy_ran FROM tenant_lab.side_effect;
-- Bad input: not a table, not bigint, no such column, NULL.
CREATE VIEW tenant_app.owned_view AS SELECT * FROM tenant_app.owned;
CREATE SEQUENCE tenant_app.a_sequence;
SELECT pg_temp.message_of($$SELECT sharded_id._max_id('tenant_app.owned_view', 'id')$$) AS view,
       pg_temp.message_of($$SELECT sharded_id._max_id('tenant_app.a_sequence', 'last_value')$$) AS sequence;
SELECT pg_temp.message_of($$SELECT sharded_id._max_id('tenant_app.owned', 'small')$$) AS integer_column,
       pg_temp.message_of($$SELECT sharded_id._max_id('tenant_app.owned', 'nope')$$) AS no_column,
       pg_temp.message_of($$SELECT sharded_id._max_id('tenant_app.owned', 'ctid')$$) AS system_column;
SELECT sharded_id._max_id(NULL, 'id') IS NULL AS strict;
-- The owner that cannot read its own table: an error, and the session is
-- itself again afterwards, in the same transaction and after it.
REVOKE SELECT ON tenant_app.owned FROM sharded_id_regress_tenant;
BEGIN;
SELECT pg_temp.message_of($$SELECT sharded_id._max_id('tenant_app.owned', 'id')$$) AS owner_without_select;
SELECT current_user = session_user AS same_user, current_setting('search_path') AS search_path,
       current_setting('is_superuser') AS superuser;
ROLLBACK;
SELECT current_user = session_user AS same_user, current_setting('search_path') AS search_path;
GRANT SELECT ON tenant_app.owned TO sharded_id_regress_tenant;
-- A caller needs SELECT on the column itself, whatever EXECUTE it has.
GRANT USAGE ON SCHEMA tenant_app TO sharded_id_regress_reader;
GRANT EXECUTE ON FUNCTION sharded_id._max_id(regclass, name) TO sharded_id_regress_reader;
GRANT EXECUTE ON FUNCTION sharded_id._table_fingerprint(regclass) TO sharded_id_regress_reader;
SET ROLE sharded_id_regress_reader;
SELECT pg_temp.message_of($$SELECT sharded_id._max_id('tenant_app.owned', 'id')$$) AS reader_without_select;
RESET ROLE;
GRANT SELECT (id) ON tenant_app.owned TO sharded_id_regress_reader;
SET ROLE sharded_id_regress_reader;
SELECT sharded_id._max_id('tenant_app.owned', 'id') AS reader_with_column_select;
RESET ROLE;
-- Not for PUBLIC.
SELECT has_function_privilege('public', 'sharded_id._max_id(regclass, name)', 'EXECUTE') AS public_may_execute,
       has_function_privilege('public', 'sharded_id._table_fingerprint(regclass)', 'EXECUTE') AS fingerprint,
       has_function_privilege('public', 'sharded_id._table_rows(regclass)', 'EXECUTE') AS table_rows,
       has_function_privilege('public', 'sharded_id._validate_as_owner(regclass, name)', 'EXECUTE') AS validate;

-- sharded_id._table_fingerprint, which a move compares on both nodes:
-- every row, as a superuser reading the table sees it, read as the owner.
-- The owner of a table owns its row type, and may cast it to text with
-- its own function; the fingerprint does not use the cast.
TRUNCATE tenant_lab.side_effect;
SELECT sharded_id._table_fingerprint('tenant_app.owned') AS fingerprint \gset
SELECT :'fingerprint' = (SELECT count(*) || ':' || coalesce(sum(hashtextextended(r::text, 0)), 0) FROM tenant_app.owned r)
       AS same_as_a_superuser_reads;
CREATE FUNCTION tenant_app.owned_text(r tenant_app.owned) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN INSERT INTO tenant_lab.side_effect (usr, su) VALUES (current_user, current_setting('is_superuser')); RETURN 'cast'; END $$;
ALTER FUNCTION tenant_app.owned_text(tenant_app.owned) OWNER TO sharded_id_regress_tenant;
GRANT USAGE ON SCHEMA tenant_app TO sharded_id_regress_tenant;
SET ROLE sharded_id_regress_tenant;
CREATE CAST (tenant_app.owned AS text) WITH FUNCTION tenant_app.owned_text(tenant_app.owned);
RESET ROLE;
SELECT sharded_id._table_fingerprint('tenant_app.owned') = :'fingerprint' AS cast_not_used,
       (SELECT count(*) FROM tenant_lab.side_effect) AS tenant_code_ran;
-- sharded_id._table_rows, what a move copies: every row, each as record_out
-- prints it, the cast not used either.
SELECT count(*) AS rows, count(*) FILTER (WHERE r = 'cast') AS cast_used,
       (SELECT count(*) FROM tenant_lab.side_effect) AS tenant_code_ran
FROM sharded_id._table_rows('tenant_app.owned') r;
SELECT (SELECT array_agg(r ORDER BY r) FROM sharded_id._table_rows('tenant_app.owned') r)
       = (SELECT array_agg(textin(record_out(o)) ORDER BY textin(record_out(o))) FROM tenant_app.owned o) AS same_rows;
-- The cast is live: the plain read a move made before runs it.
SELECT count(*) AS rows FROM (SELECT r::text FROM tenant_app.owned r LIMIT 1) x;
SELECT count(*) AS tenant_code_ran FROM tenant_lab.side_effect;
SELECT pg_temp.message_of($$SELECT sharded_id._table_fingerprint('tenant_app.owned_view')$$) AS view,
       pg_temp.message_of($$SELECT count(*) FROM sharded_id._table_rows('tenant_app.owned_view')$$) AS rows_of_view;
-- A move's reads are for superusers only, whatever EXECUTE the caller has.
SET ROLE sharded_id_regress_reader;
SELECT pg_temp.message_of($$SELECT sharded_id._table_fingerprint('tenant_app.owned')$$) AS reader_not_superuser;
RESET ROLE;
DROP CAST (tenant_app.owned AS text);

-- Clean up.
SELECT dblink_disconnect('tenant');
DELETE FROM sharded_id.shard_tables WHERE template_schema = 'tenant_app';
DROP SCHEMA tenant_app CASCADE;
DROP SCHEMA tenant_lab CASCADE;
REVOKE ALL ON FUNCTION sharded_id._max_id(regclass, name) FROM sharded_id_regress_reader;
REVOKE ALL ON FUNCTION sharded_id._table_fingerprint(regclass) FROM sharded_id_regress_reader;
DROP ROLE sharded_id_regress_tenant;
DROP ROLE sharded_id_regress_reader;
DROP EXTENSION dblink;

-- A column named r stands for neither the row nor the table's alias: two
-- tables that differ outside such a column differ in their fingerprints,
-- and every row is read whole.
CREATE TYPE pg_temp_r AS (v integer);
CREATE TABLE r_composite_a (id bigint, r pg_temp_r, note text);
CREATE TABLE r_composite_b (id bigint, r pg_temp_r, note text);
CREATE TABLE r_text (id bigint, r text);
INSERT INTO r_composite_a VALUES (1, ROW(7), 'original');
INSERT INTO r_composite_b VALUES (1, ROW(7), 'tampered');
INSERT INTO r_text VALUES (1, 'x');
SELECT sharded_id._table_fingerprint('r_composite_a') <> sharded_id._table_fingerprint('r_composite_b') AS fingerprints_differ;
SELECT sharded_id._table_rows('r_composite_a') AS composite_row, sharded_id._table_rows('r_text') AS text_row;
DROP TABLE r_composite_a, r_composite_b, r_text;
DROP TYPE pg_temp_r;

-- An owner that revoked its own SELECT on a shard's table: the read as the
-- owner (raise_floors(), create_shard, a move's comparison) fails with an
-- error that names the table and its owner (42501), before anything runs in
-- the owner's context.
CREATE ROLE sharded_id_regress_blind;
CREATE SCHEMA blind_lab AUTHORIZATION sharded_id_regress_blind;
SET ROLE sharded_id_regress_blind;
CREATE TABLE blind_lab.t (id bigint PRIMARY KEY);
REVOKE ALL ON blind_lab.t FROM sharded_id_regress_blind;
RESET ROLE;
INSERT INTO blind_lab.t VALUES (1);
\set VERBOSITY default
SELECT sharded_id._max_id('blind_lab.t', 'id');
SELECT sharded_id._table_fingerprint('blind_lab.t');
\set VERBOSITY terse
DROP SCHEMA blind_lab CASCADE;
DROP ROLE sharded_id_regress_blind;
