# test/t/021_passwords.pl
#
# Data nodes that want a password.  Their role logs in only with one
# (scram-sha-256), and the router's sharded_id.nodes carries it in each
# node's connection string.  apply_shard_map keeps it out of every option
# a role can read and puts it, with its user, in the user mappings: the
# PL/Proxy cluster's, which PL/Proxy adds only to a partition string that
# names no user, and each node's postgres_fdw server's.  Writes through the
# router, the ops tables, a dump move and (with a password file the
# target's server reads, as the docs say) an online move then all log in.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 4;
my $password = 'Node-pw-7d1f';

# Two data nodes.  Role shard_admin logs in only with its password, over
# the socket the router uses too.
my %node = (
	node1 => data_node('node1', shards => [ 0, 2 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	node2 => data_node('node2', shards => [ 1, 3 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }));
for my $n (values %node)
{
	$n->safe_psql('postgres', "SET password_encryption = 'scram-sha-256';
		CREATE ROLE shard_admin LOGIN SUPERUSER PASSWORD '$password'");
	my $hba = $n->data_dir . '/pg_hba.conf';
	my $rules = slurp_file($hba);
	open my $fh, '>', $hba or die $!;
	print $fh "local all shard_admin scram-sha-256\nhost all shard_admin 127.0.0.1/32 scram-sha-256\n$rules";
	close $fh;
	$n->reload;
}
sub node_connstr
{
	my ($n, %extra) = @_;
	return join(' ', 'host=' . $n->host, 'port=' . $n->port, 'dbname=app', 'user=shard_admin',
		map { "$_=$extra{$_}" } sort keys %extra);
}
{
	local $ENV{PGPASSWORD};
	my ($ret, $out, $err) = $node{node1}->psql('app', 'SELECT 1', connstr => node_connstr($node{node1}));
	isnt($ret, 0, 'without a password, shard_admin cannot log in to a node');
	like($err, qr/password/, 'and the server asked for one');
}

# The router, with the password in each node's connection string.
my $router = PostgreSQL::Test::Cluster->new('router');
$router->init;
$router->start;
$router->safe_psql('postgres', 'CREATE DATABASE router');
$router->safe_psql('router', 'CREATE EXTENSION plproxy; CREATE EXTENSION postgres_fdw;
	CREATE EXTENSION dblink; CREATE EXTENSION sharded_id; CREATE EXTENSION sharded_id_router; ' . slurp_file("$FindBin::RealBin/../example/templates.sql"));
for my $name (sort keys %node)
{
	my $connstr = node_connstr($node{$name}, password => $password);
	$router->safe_psql('router', "INSERT INTO sharded_id.nodes VALUES ('$name', \$c\$$connstr\$c\$)");
}
$router->safe_psql('router', 'INSERT INTO sharded_id.shard_map VALUES '
	  . join(', ', map { "($_, 'node" . ($_ % 2 + 1) . "')" } 0 .. $shard_count - 1));
is($router->safe_psql('router', 'SELECT sharded_id.apply_shard_map()'), $shard_count, 'the shard map applied');
is($router->safe_psql('router', qq{SELECT count(*) FROM pg_foreign_server s, unnest(s.srvoptions) o
	WHERE o LIKE '%$password%' OR (s.srvname = 'sharded_id' AND o LIKE '%user=%')}), '0',
	'no server option holds the password, and no partition names a user');
is($router->safe_psql('router', qq{SELECT string_agg(srvname || ':' || array_to_string(umoptions, ','), ' ' ORDER BY srvname)
	FROM pg_user_mappings WHERE srvname IN ('sharded_id', 'sharded_id_node1', 'sharded_id_node2')}),
	join(' ', map { "$_:password=$password,user=shard_admin" } qw(sharded_id sharded_id_node1 sharded_id_node2)),
	'the password and its user are in the user mappings for PUBLIC');
$router->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-v', "shard_count=$shard_count",
	'-f', "$FindBin::RealBin/../example/router_api.sql", '-d', $router->connstr('router')], 'router API installed');
$router->safe_psql('router', q{SELECT sharded_id.create_ops_table('app.photos')});

# Writes through the router reach every shard, as the superuser and as a
# role with the grants an application has.
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 40) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
	CREATE ROLE app LOGIN;
	GRANT USAGE ON SCHEMA app_api TO app;
	GRANT USAGE ON FOREIGN SERVER sharded_id TO app;
	GRANT SELECT ON demo_users TO app;
	GRANT EXECUTE ON FUNCTION sharded_id.route(integer, text), sharded_id.route_id(bigint, text) TO app;
});
is($router->safe_psql('router', 'SELECT count(DISTINCT sharded_id.shard_id(user_id)) FROM demo_users'),
	$shard_count, 'users written through the router landed on every shard');
is($router->safe_psql('router', q{SET ROLE app; SELECT count(app_api.add_photo(user_id, 'by app')) FROM demo_users}),
	'40', 'a role without superuser writes through the router too');
is($router->safe_psql('router', 'SELECT count(*) FROM ops.photos'), '80',
	'the ops table reads every node through postgres_fdw');

# A dump move logs in to both nodes with the password.
my $before = $router->safe_psql('router', 'SELECT count(*) FROM ops.photos');
$router->safe_psql('router', q{CALL sharded_id.move_shard(1, 'node1', method => 'dump')});
is(map_owner($router, 1), 'node1',
	'dump move: the map names node1');
is($node{node1}->safe_psql('app', 'SELECT count(*) FROM shard_0001.photos'),
	$router->safe_psql('router', 'SELECT count(*) FROM demo_users d WHERE sharded_id.shard_id(d.user_id) = 1') * 2,
	'dump move: node1 holds every photo of shard 1');

# An online move's subscription carries no password: the target's server
# reads it from the password file the connection string names.  Node1 logs
# every statement (log_statement = all in test clusters), the move's
# CREATE SUBSCRIPTION among them.
my $log_from = -s $node{node1}->logfile;
my $passfile = $router->basedir . '/node.pgpass';
open my $pf, '>', $passfile or die $!;
print $pf "*:*:*:shard_admin:$password\n";
close $pf;
chmod 0600, $passfile;
$router->safe_psql('router', "UPDATE sharded_id.nodes SET connstr = connstr || ' passfile=$passfile'");
is($router->safe_psql('router', 'SELECT sharded_id.apply_shard_map()'), $shard_count, 'the map applied with a password file');
$router->safe_psql('router', q{CALL sharded_id.move_shard(3, 'node1', method => 'online')});
is(map_owner($router, 3), 'node1',
	'online move: the map names node1');
my $node1_log = substr(slurp_file($node{node1}->logfile), $log_from);
# The target makes the subscription in the move's call of
# sharded_id._node_subscribe(ddl, subscription, connstr, publication).
like($node1_log, qr/sharded_id\._node_subscribe\(.*, 'sharded_id_move_3', '[^']*passfile=[^']*', 'sharded_id_move_3'\)/s,
	'online move: the target made the subscription, its connection string naming the password file');
unlike($node1_log, qr/\Q$password\E/, 'and no statement on the target held the password');
is($node{node1}->safe_psql('app', q{SELECT count(*) FROM pg_subscription}), '0', 'online move: no subscription is left');

# Back to node2, which now serves no shard: the switch applies the whole
# map, with the password in the cluster's user mapping, and the ops tables
# follow.
$router->safe_psql('router', q{CALL sharded_id.move_shard(3, 'node2', method => 'online')});
is(map_owner($router, 3), 'node2',
	'a move to a node that served no shard: the map names node2');
is($router->safe_psql('router', q{SELECT s.srvname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
	JOIN pg_foreign_table f ON f.ftrelid = c.oid JOIN pg_foreign_server s ON s.oid = f.ftserver
	WHERE i.inhparent = 'ops.photos'::regclass AND pg_get_expr(c.relpartbound, c.oid) = 'FOR VALUES IN (3)'}),
	'sharded_id_node2', 'and the ops table reads shard 3 on node2');

# A move to a node whose password differs from the others' is refused
# before it starts: the map after the switch could not be applied.
$router->safe_psql('router', "INSERT INTO sharded_id.nodes VALUES ('node3', \$c\$"
	  . node_connstr($node{node2}, password => 'Other-pw') . "\$c\$)");
my $moves_before = $router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves');
my ($ret, $out, $err) = $router->psql('router', "\\set VERBOSITY verbose\nCALL sharded_id.move_shard(2, 'node3')");
like($err, qr/ERROR:  0A000: the data nodes of cluster "sharded_id" have different users or passwords/,
	'a move to a node with another password is refused (0A000)');
is(map_owner($router, 2)
	  . '/' . $router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves'),
	"node1/$moves_before", 'and the map is unchanged, with no move journaled');
$router->safe_psql('router', q{DELETE FROM sharded_id.nodes WHERE node_name = 'node3'});

# Every row written is still reachable, and writes go on.
is($router->safe_psql('router', 'SELECT count(*) FROM ops.photos'), $before, 'after both moves: every photo is on a node of the map');
is($router->safe_psql('router', q{SELECT count(app_api.add_photo(user_id, 'after the moves')) FROM demo_users}),
	'40', 'after both moves: writes through the router reach every shard');
my @ids = all_ids(values %node);
my %seen;
is(scalar(grep { $seen{$_}++ } @ids), 0, 'no id repeats across nodes');

done_testing();
