--
-- Passwords stay with their owner.  apply_shard_map() keeps the password of
-- a node's connection string out of the PL/Proxy cluster's options and the
-- postgres_fdw servers' options (pg_foreign_server is readable by every
-- role): it goes to user mappings, which PostgreSQL shows to no other
-- role.  A role without privileges then finds it in no catalog and no
-- view: every relation of pg_catalog, information_schema and sharded_id
-- it may read is searched, its own pg_stat_activity row included.
--
CREATE EXTENSION IF NOT EXISTS sharded_id;
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS sharded_id_router CASCADE;
RESET client_min_messages;
CREATE ROLE sid_snoop;
INSERT INTO sharded_id.nodes VALUES
    ('s1', 'host=db1.example port=5433 dbname=app user=app password=Sekr1t-pw sslmode=prefer'),
    ('s2', 'postgresql://app:Sekr1t-pw@db2.example:5433/app?application_name=router');
INSERT INTO sharded_id.shard_map VALUES (0, 's1'), (1, 's2');
SELECT sharded_id.apply_shard_map('secret_cluster');

-- What every role reads: the options without the password.
SELECT srvname, srvoptions FROM pg_foreign_server
WHERE srvname IN ('secret_cluster', 'sharded_id_s1', 'sharded_id_s2') ORDER BY 1;
-- Where the password went: the user mappings for PUBLIC, which their
-- servers' owner reads.
SELECT srvname, usename, umoptions FROM pg_user_mappings
WHERE srvname IN ('secret_cluster', 'sharded_id_s1', 'sharded_id_s2') ORDER BY 1;

-- The role without privileges, searching everything it may read.
GRANT USAGE ON SCHEMA sharded_id TO sid_snoop;
SET ROLE sid_snoop;
CREATE FUNCTION pg_temp.search(needle text)
RETURNS TABLE (relation text, rows_with_it bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    n bigint;
BEGIN
    FOR r IN
        SELECT c.oid::regclass::text AS rel FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
        WHERE s.nspname IN ('pg_catalog', 'information_schema', 'sharded_id') AND c.relkind IN ('r', 'v', 'm', 'p')
          AND has_table_privilege(c.oid, 'SELECT')
        ORDER BY 1
    LOOP
        BEGIN
            EXECUTE format('SELECT count(*) FROM %s t WHERE strpos(t::text, $1) > 0', r.rel) INTO n USING needle;
        EXCEPTION WHEN insufficient_privilege THEN
            CONTINUE;
        END;
        relation := r.rel;
        rows_with_it := n;
        RETURN NEXT;
    END LOOP;
END
$$;
-- The search reads many relations, its own session's row among them ...
SELECT count(*) > 100 AS relations_searched,
       bool_or(relation = 'pg_stat_activity') AS reads_pg_stat_activity,
       bool_or(relation = 'pg_foreign_server') AS reads_pg_foreign_server,
       bool_or(relation = 'pg_user_mappings') AS reads_pg_user_mappings,
       bool_or(relation = 'sharded_id.shard_map') AS reads_shard_map
FROM pg_temp.search('zzz-no-such-text');
-- ... and would find what is there (the node names) ...
SELECT relation FROM pg_temp.search('sharded_id_s1') WHERE rows_with_it > 0 ORDER BY 1;
-- ... but finds the password nowhere.
SELECT relation, rows_with_it FROM pg_temp.search('Sekr1t' || '-pw') WHERE rows_with_it > 0;
RESET ROLE;
REVOKE USAGE ON SCHEMA sharded_id FROM sid_snoop;

-- Nodes with different passwords cannot share the cluster's user mapping.
UPDATE sharded_id.nodes SET connstr = 'host=db2.example dbname=app user=app password=Other-pw' WHERE node_name = 's2';
SELECT sharded_id.apply_shard_map('secret_cluster');
-- With the passwords in a password file, the cluster's options name the
-- file, and the cluster's mapping loses the user and password an earlier
-- map put there (PL/Proxy would log every caller in as that user); the
-- postgres_fdw servers' mappings are left as they are.
UPDATE sharded_id.nodes SET connstr = replace(replace(connstr, 'password=Sekr1t-pw ', 'passfile=/etc/router.pgpass '),
                                             'password=Other-pw', 'passfile=/etc/router.pgpass');
SELECT sharded_id.apply_shard_map('secret_cluster');
SELECT srvoptions FROM pg_foreign_server WHERE srvname = 'secret_cluster';
SELECT srvname, umoptions FROM pg_user_mappings
WHERE srvname IN ('secret_cluster', 'sharded_id_s1', 'sharded_id_s2') ORDER BY 1;

-- The connection string a move's subscription gets: no secret.
SELECT sharded_id._connstr_public('postgresql://app:Sekr1t-pw@db2.example:5433/app?sslpassword=key-pw&sslmode=require');
SELECT sharded_id._connstr_public($$host=a dbname='my app' password='it\'s' application_name='a\\b'$$);
SELECT sharded_id._connstr_secrets('host=a user=u password=p sslpassword=k'),
       sharded_id._connstr_secrets('host=a user=u password=p', with_user => true);
-- A string libpq cannot parse: its words may quote the string, so they stay out.
SELECT sharded_id._connstr_public('host=a password=''Sekr1t');
-- The PL/Proxy partitions of nodes with a password name no user: PL/Proxy
-- adds its user mapping's options only to a string that names none.
SELECT sharded_id._connstr_public('host=a user=u password=p dbname=d', with_user => false);

-- What one user mapping cannot carry is refused: a node with a password
-- beside one without ...
UPDATE sharded_id.nodes SET connstr = 'host=db1.example dbname=app user=app password=Sekr1t-pw' WHERE node_name = 's1';
UPDATE sharded_id.nodes SET connstr = 'host=db2.example dbname=app user=app' WHERE node_name = 's2';
SELECT sharded_id.apply_shard_map('secret_cluster');
-- ... a secret other than a password ...
UPDATE sharded_id.nodes SET connstr = 'host=db' || right(node_name, 1) || '.example dbname=app user=app password=Sekr1t-pw sslpassword=key-pw';
SELECT sharded_id.apply_shard_map('secret_cluster');
-- ... and a password that PL/Proxy would quote wrongly.
UPDATE sharded_id.nodes SET connstr = $$host=db$$ || right(node_name, 1) || $$.example dbname=app user=app password='it\'s'$$;
SELECT sharded_id.apply_shard_map('secret_cluster');

-- Clean up.
SET client_min_messages = warning;
DROP SERVER secret_cluster, sharded_id_s1, sharded_id_s2 CASCADE;
DELETE FROM sharded_id.shard_map;
DELETE FROM sharded_id.nodes;
SET client_min_messages = warning;
DROP EXTENSION sharded_id_router;
DROP EXTENSION plproxy;
DROP EXTENSION postgres_fdw CASCADE;
DROP EXTENSION dblink;
RESET client_min_messages;
DROP FUNCTION pg_temp.search(text);
DROP ROLE sid_snoop;
RESET client_min_messages;
