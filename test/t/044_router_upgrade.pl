# test/t/044_router_upgrade.pl
#
# A router made by sharded_id 1.6, where the router was part of sharded_id,
# updated as the README's Upgrading section says:
#   BEGIN; ALTER EXTENSION sharded_id UPDATE; CREATE EXTENSION sharded_id_router; COMMIT;
# keeps its shard map, its nodes, its move journal (moves, move_steps,
# move_cleanup, and the journal's sequence) and its ops tables, and the
# router's objects then belong to sharded_id_router, none to sharded_id.
# Routed writes work after it, and CALL sharded_id.move_shard moves a shard.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 4;
my $example = "$FindBin::RealBin/../example";
my %node = (
	a => data_node('up_a', shards => [ 0 .. 3 ], shard_count => $shard_count),
	b => data_node('up_b', shards => [], shard_count => $shard_count),
);

# The router, made at 1.6 as 1.6's documents made it.
my $router = PostgreSQL::Test::Cluster->new('up_router');
$router->init;
$router->start;
$router->safe_psql('postgres', 'CREATE DATABASE router');
$router->safe_psql('router', q{CREATE EXTENSION plproxy; CREATE EXTENSION postgres_fdw; CREATE EXTENSION dblink;
	CREATE EXTENSION sharded_id VERSION '1.6'; } . slurp_file("$example/templates.sql"));
is($router->safe_psql('router', q{SELECT extversion FROM pg_extension WHERE extname = 'sharded_id'}), '1.6',
	'the router runs sharded_id 1.6');
for my $name (sort keys %node)
{
	my $connstr = $node{$name}->connstr('app');
	$router->safe_psql('router', "INSERT INTO sharded_id.nodes VALUES ('$name', \$c\$$connstr\$c\$)");
}
$router->safe_psql('router', 'INSERT INTO sharded_id.shard_map SELECT g, \'a\' FROM generate_series(0, 3) g');
is($router->safe_psql('router', 'SELECT sharded_id.apply_shard_map()'), $shard_count, '1.6: the map is applied');
$router->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-v', "shard_count=$shard_count",
	'-f', "$example/router_api.sql", '-d', $router->connstr('router')], '1.6: router API installed');
$router->safe_psql('router', q{SELECT sharded_id.create_ops_table('app.photos')});
# A finished move in the journal, with its steps and a cleanup row, as a
# move of 1.6 left them.
$router->safe_psql('router', q{
	INSERT INTO sharded_id.moves (shard_id, source_node, target_node, method, cluster, schema_name, state, finished_at, outcome)
	VALUES (3, 'b', 'a', 'dump', 'sharded_id', 'shard_0003', 'done', clock_timestamp(), 'moved');
	INSERT INTO sharded_id.move_steps (move_id, step_no, step) SELECT move_id, 1, 'switch' FROM sharded_id.moves;
	INSERT INTO sharded_id.move_cleanup (move_id, node_name, object_type, object_name, policy)
	SELECT move_id, 'b', 'schema', 'shard_0003', 'on_success' FROM sharded_id.moves});
my $users = $router->safe_psql('router',
	q{SELECT count(app_api.add_user('user ' || g)) FROM generate_series(1, 20) g});
is($users, '20', '1.6: writes go through the router');

my $state_sql = q{
	SELECT (SELECT string_agg(format('%s:%s', shard_id, node_name), ',' ORDER BY shard_id) FROM sharded_id.shard_map)
	    || ' / ' || (SELECT string_agg(node_name, ',' ORDER BY node_name) FROM sharded_id.nodes)
	    || ' / ' || (SELECT string_agg(format('%s %s %s %s', move_id, shard_id, state, outcome), ',' ORDER BY move_id) FROM sharded_id.moves)
	    || ' / ' || (SELECT count(*) FROM sharded_id.move_steps)
	    || ' / ' || (SELECT count(*) FROM sharded_id.move_cleanup)
	    || ' / ' || (SELECT string_agg(format('%s %s', template, ops_table), ',') FROM sharded_id.ops_tables)};
my $before = $router->safe_psql('router', $state_sql);

# The administrator's own privileges on the router's objects, unlike 1.6's
# defaults: shard_map and the journal not for PUBLIC, the nodes and route()
# for an application role, and a column of shard_map for it to update.
$router->safe_psql('router', q{CREATE ROLE app_role; CREATE ROLE tenant;
	REVOKE SELECT ON sharded_id.shard_map, sharded_id.moves FROM PUBLIC;
	GRANT SELECT ON sharded_id.nodes TO app_role;
	GRANT UPDATE (node_name) ON sharded_id.shard_map TO app_role;
	GRANT EXECUTE ON FUNCTION sharded_id.route(integer, text), sharded_id.route_id(bigint, text) TO app_role});
my $acl_sql = q{
	SELECT string_agg(format('%s %s', o, acl), '; ' ORDER BY o) FROM (
	    SELECT c.relname::text AS o, c.relacl::text AS acl FROM pg_class c
	    WHERE c.relnamespace = 'sharded_id'::regnamespace
	      AND c.relname IN ('nodes', 'shard_map', 'ops_tables', 'moves', 'moves_move_id_seq', 'move_steps', 'move_cleanup')
	    UNION ALL
	    SELECT p.oid::regprocedure::text, p.proacl::text FROM pg_proc p
	    WHERE p.oid IN ('sharded_id.route(integer, text)'::regprocedure, 'sharded_id.route_id(bigint, text)'::regprocedure)
	    UNION ALL
	    SELECT format('%s.%s', a.attrelid::regclass, a.attname), a.attacl::text FROM pg_attribute a
	    WHERE a.attrelid IN ('sharded_id.nodes'::regclass, 'sharded_id.shard_map'::regclass) AND a.attnum > 0 AND a.attacl IS NOT NULL) x};
my $acl_before = $router->safe_psql('router', $acl_sql);
my $privileges_sql = q{SELECT has_table_privilege('tenant', 'sharded_id.shard_map', 'SELECT'),
	has_table_privilege('tenant', 'sharded_id.moves', 'SELECT'), has_table_privilege('app_role', 'sharded_id.nodes', 'SELECT'),
	has_function_privilege('app_role', 'sharded_id.route(integer, text)', 'EXECUTE'),
	has_function_privilege('tenant', 'sharded_id.route(integer, text)', 'EXECUTE'),
	has_column_privilege('app_role', 'sharded_id.shard_map', 'node_name', 'UPDATE')};
is($router->safe_psql('router', $privileges_sql), 'f|f|t|t|f|t', "1.6: the administrator's privileges");
like($before, qr{^0:a,1:a,2:a,3:a / a,b / 1 3 done moved / 1 / 1 / app.photos ops.photos$}, '1.6: the state to keep');

# The update, as the README says: both in one transaction.
my ($ret, $out, $err) = $router->psql('router',
	'BEGIN; ALTER EXTENSION sharded_id UPDATE; CREATE EXTENSION sharded_id_router; COMMIT;', on_error_stop => 1);
is($ret, 0, 'the update and CREATE EXTENSION sharded_id_router run in one transaction') or diag($err);
like($err, qr/this database is a router.*\n.*\n.*CREATE EXTENSION sharded_id_router/, 'the update says that a router needs sharded_id_router');
is($router->safe_psql('router', $acl_sql), $acl_before, 'the privileges of the objects taken over are as they were');
is($router->safe_psql('router', $privileges_sql), 'f|f|t|t|f|t', "the administrator's privileges hold");
# Their initial privileges are a new install's, so that pg_dump keeps the
# administrator's apart: the dump grants and revokes them again.
$router->safe_psql('postgres', 'CREATE DATABASE fresh');
$router->safe_psql('fresh', 'SET client_min_messages = warning; CREATE EXTENSION sharded_id_router CASCADE');
my $init_sql = q{SELECT string_agg(format('%s %s', pg_describe_object(i.classoid, i.objoid, i.objsubid), i.initprivs), '; '
	ORDER BY pg_describe_object(i.classoid, i.objoid, i.objsubid))
	FROM pg_init_privs i JOIN pg_depend d ON d.classid = i.classoid AND d.objid = i.objoid AND d.deptype = 'e'
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'sharded_id_router'};
is($router->safe_psql('router', $init_sql), $router->safe_psql('fresh', $init_sql),
	'the initial privileges of the router are those of a new install');
my ($dump, $dump_err) = run_command(['pg_dump', '-d', $router->connstr('router')]);
like($dump, qr/^REVOKE SELECT ON TABLE sharded_id\.shard_map FROM PUBLIC;$/m, "pg_dump keeps the administrator's revoke");
like($dump, qr/^GRANT SELECT ON TABLE sharded_id\.nodes TO app_role;$/m, "pg_dump keeps the administrator's grant on a table");
like($dump, qr/^GRANT ALL ON FUNCTION sharded_id\.route\(shard integer, cluster text\) TO app_role;$/m,
	"pg_dump keeps the administrator's grant on route()");
like($dump, qr/^GRANT UPDATE\(node_name\) ON TABLE sharded_id\.shard_map TO app_role;$/m,
	"pg_dump keeps the administrator's grant on a column");
is($router->safe_psql('router', q{SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname)
	FROM pg_extension WHERE extname LIKE 'sharded_id%'}), 'sharded_id 2.1, sharded_id_router 2.1', 'both extensions at 2.1');
is($router->safe_psql('router', $state_sql), $before, 'the map, the nodes, the journal and the ops tables are kept');

# Every router object is sharded_id_router's; sharded_id has none.
is($router->safe_psql('router', q{
	SELECT string_agg(c.relname || ' ' || e.extname, ', ' ORDER BY c.relname)
	FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
	JOIN pg_extension e ON e.oid = d.refobjid
	WHERE c.relname IN ('nodes', 'shard_map', 'ops_tables', 'moves', 'moves_move_id_seq', 'move_steps', 'move_cleanup', 'move_progress')}),
	'move_cleanup sharded_id_router, move_progress sharded_id_router, move_steps sharded_id_router, moves sharded_id_router, '
	  . 'moves_move_id_seq sharded_id_router, nodes sharded_id_router, ops_tables sharded_id_router, shard_map sharded_id_router',
	'the router tables, sequence and view belong to sharded_id_router');
is($router->safe_psql('router', q{
	SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'sharded_id'
	WHERE p.proname IN ('route', 'route_id', 'move_shard', 'rebalance', 'recover_moves', 'apply_shard_map', 'place_shard', 'create_ops_table')}),
	'0', 'sharded_id keeps no router function');
is($router->safe_psql('router', q{SELECT array_length(extconfig, 1) FROM pg_extension WHERE extname = 'sharded_id_router'}),
	'7', 'pg_dump keeps the rows of the adopted tables and the sequence');

# Routed writes, and a move.
is($router->safe_psql('router', q{SELECT count(app_api.add_user('after ' || g)) FROM generate_series(1, 20) g}), '20',
	'2.0: writes go through the router');
($ret, $out, $err) = $router->psql('router', "CALL sharded_id.move_shard(1, 'b', method => 'dump')");
is($ret, 0, 'move_shard moves shard 1 to b') or diag($err);
is(map_owner($router, 1), 'b', 'the map names b');
is($router->safe_psql('router', q{SELECT string_agg(format('%s %s %s', move_id, shard_id, outcome), ',' ORDER BY move_id) FROM sharded_id.moves}),
	'1 3 moved,2 1 moved', 'the journal keeps the old move and adds the new one after it');
is($node{b}->safe_psql('app', 'SELECT count(*) FROM sharded_id.shards WHERE shard_id = 1'), '1', 'b holds shard 1');
is($router->safe_psql('router', q{SELECT count(app_api.add_user('moved ' || g)) FROM generate_series(1, 20) g}), '20',
	'2.0: writes go through the router after the move');
is($node{a}->safe_psql('app', 'SELECT count(*) FROM sharded_id.shards WHERE shard_id = 1'), '0', 'a no longer holds shard 1');

# A data node of 1.6, where a tenant made objects that depend on router
# objects that every role may use (a view over move_progress, a function
# calling node_server): the update is not stopped by them and drops none
# of them; everything else of the router goes, and nothing of it is left
# outside an extension but the two objects depended on, renamed.
$router->safe_psql('postgres', 'CREATE DATABASE node16');
$router->safe_psql('node16', q{CREATE EXTENSION plproxy; CREATE EXTENSION postgres_fdw; CREATE EXTENSION dblink;
	CREATE EXTENSION sharded_id VERSION '1.6'; CREATE SCHEMA t AUTHORIZATION tenant});
$router->safe_psql('node16', q{SET ROLE tenant;
	CREATE VIEW t.mp AS SELECT shard_id FROM sharded_id.move_progress;
	CREATE FUNCTION t.f(text) RETURNS text LANGUAGE sql BEGIN ATOMIC SELECT sharded_id.node_server($1); END});
($ret, $out, $err) = $router->psql('node16', 'ALTER EXTENSION sharded_id UPDATE', on_error_stop => 1);
is($ret, 0, "a tenant's objects do not stop the update of a data node") or diag($err);
like($err, qr/WARNING:  sharded_id\.move_progress is kept as sharded_id\.move_progress_1_6/, 'the update names the view it kept');
like($err, qr/WARNING:  sharded_id\.node_server\(text\) is kept as sharded_id\.node_server_1_6/, 'the update names the function it kept');
unlike($err, qr/this database is a router/, 'a data node is not taken for a router');
is($router->safe_psql('node16', q{SET ROLE tenant; SELECT count(*) FROM t.mp}), '0', "the tenant's view still reads");
is($router->safe_psql('node16', q{
	SELECT string_agg(x.o, ', ' ORDER BY x.o) FROM (
	    SELECT c.relname::text AS o FROM pg_class c WHERE c.relnamespace = 'sharded_id'::regnamespace
	      AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('e', 'i', 'a'))
	    UNION ALL
	    SELECT p.proname::text FROM pg_proc p WHERE p.pronamespace = 'sharded_id'::regnamespace
	      AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')) x}),
	'move_progress_1_6, move_steps, moves, node_server_1_6',
	'the data node keeps no other router object outside the extension than the renamed ones and the tables under the view');
like($err, qr/WARNING:  sharded_id\.moves is kept, of no extension: other objects depend on it/, 'the update names the table it kept');
is($router->safe_psql('node16', q{SELECT to_regclass('sharded_id.shard_map') IS NULL AND to_regprocedure('sharded_id.route(integer, text)') IS NULL}),
	't', 'the data node has no shard map and no route()');

done_testing();
