# test/t/005_scale_out.pl
#
# Two data nodes and a router: 8 logical shards, PL/Proxy routing from the
# shard map, postgres_fdw ops tables, a node going down, and a shard moved
# to the other node while writers run.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 8;

# Data nodes: node1 holds the even shards, node2 the odd ones.  The router
# applies that shard map and holds an ops table.
my %node = (
	node1 => data_node('node1', shards => [ grep { $_ % 2 == 0 } 0 .. $shard_count - 1 ],
		shard_count => $shard_count),
	node2 => data_node('node2', shards => [ grep { $_ % 2 == 1 } 0 .. $shard_count - 1 ],
		shard_count => $shard_count));
my $router = router_node(\%node,
	{ map { ($_ => $_ % 2 ? 'node2' : 'node1') } 0 .. $shard_count - 1 }, $shard_count);
is($router->safe_psql('router', q{SELECT count(*) FROM pg_foreign_server s, unnest(s.srvoptions) o
	WHERE s.srvname = 'sharded_id' AND o ~ '^p[0-9]+='}), $shard_count, 'partitions p0..p7 in the server options');

# Inserts through the router.
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 200) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
	SELECT count(app_api.add_photo(user_id, 'second of ' || n)) FROM demo_users;
});
is($router->safe_psql('router', 'SELECT count(DISTINCT sharded_id.shard_id(user_id)) FROM demo_users'),
	$shard_count, 'users landed on all 8 shards');
is($router->safe_psql('router', q{SELECT bool_and(sharded_id.shard_id(user_id) = app_api.user_shard('user ' || n)) FROM demo_users}),
	't', 'each user id carries the shard that shard_for gave its name');

# Every id decodes to the shard that stores it, and no id repeats across nodes.
for my $name (qw(node1 node2))
{
	is($node{$name}->safe_psql('app', 'SELECT misplaced_ids()'), '0',
		"$name: every id decodes to the shard that stores it");
}
my @ids = all_ids(values %node);
my %seen;
is(scalar(@ids), 600, '600 rows over both nodes');
is(scalar(grep { $seen{$_}++ } @ids), 0, 'no id repeats across nodes');

# Reads by key and by id.
is($router->safe_psql('router', 'SELECT count(*) FROM demo_users d, app_api.photos_of(d.user_id) p'),
	'400', 'read by key: every user has its two photos');
is($router->safe_psql('router', q{SELECT bool_and(u.name = 'user ' || d.n) FROM demo_users d, app_api.user_by_id(d.user_id) u}),
	't', 'read by id: every user found through the shard bits of its id');

# A node down: its shards fail with an error that names it; the others work.
my $odd_user = $router->safe_psql('router', 'SELECT user_id FROM demo_users WHERE sharded_id.shard_id(user_id) % 2 = 1 LIMIT 1');
my $even_user = $router->safe_psql('router', 'SELECT user_id FROM demo_users WHERE sharded_id.shard_id(user_id) % 2 = 0 LIMIT 1');
$node{node2}->stop;
my ($ret, $out, $err) = $router->psql('router', "SELECT app_api.add_photo($odd_user, 'node down')");
isnt($ret, 0, 'a call for a shard of the stopped node fails');
my $node2_port = $node{node2}->port;
like($err, qr/PL\/Proxy function app_api\.add_photo.*\b$node2_port\b/, 'and the error names the function and the node');
is($router->safe_psql('router', "SELECT sharded_id.shard_id(app_api.add_photo($even_user, 'node1 is up'))"),
	$router->safe_psql('router', "SELECT sharded_id.shard_id(${even_user}::bigint)"),
	'shards of the other node keep working');
$node{node2}->start;

# Move shard 5 from node2 to node1 while writers run through the router.
my $moving = 5;
my $before = $router->safe_psql('router', 'SELECT count(*) FROM ops.photos');
my $writer_script = $router->basedir . '/writer.sql';
open my $fh, '>', $writer_script or die $!;
print $fh "\\set n random(1, 200)\nSELECT app_api.add_photo(user_id, 'during the move') FROM demo_users WHERE n = :n;\n";
close $fh;
my ($w_out, $w_err) = ('', '');
my $writer = IPC::Run::start(
	['pgbench', '-n', '-c', '2', '-j', '2', '-T', '8', '--max-tries=100',
	 '-f', $writer_script, $router->connstr('router')],
	'>', \$w_out, '2>', \$w_err);
$router->poll_query_until('router',
	q{SELECT count(*) > 0 FROM ops.photos WHERE caption = 'during the move'})
  or die "the writers did not start: $w_err";

my ($m_out, $m_err) = ('', '');
my $moved = IPC::Run::run(
	['sharded_id_move_shard', '--shard', $moving,
	 '--from', $node{node2}->connstr('app'), '--to', $node{node1}->connstr('app'),
	 '--to-node', 'node1', '--router', $router->connstr('router')],
	'>', \$m_out, '2>', \$m_err);
ok($moved, 'sharded_id_move_shard moved shard 5 while writers ran') or diag($m_err);
my ($freeze_ms) = $m_out =~ /write freeze: (\d+) ms/;
ok(defined $freeze_ms, "the tool reports its write freeze: " . ($freeze_ms // '?') . ' ms');
note("write freeze of the move: $freeze_ms ms") if defined $freeze_ms;
ok($writer->finish, 'the writers finished') or diag($w_err);
my ($processed) = $w_out =~ /number of transactions actually processed: (\d+)/;
my ($failed) = $w_out =~ /number of failed transactions: (\d+)/;
cmp_ok($processed // 0, '>', 0, "the writers wrote $processed photos");
is($failed // 0, 0, 'none failed for good: at most retried');
note(($w_out =~ /(number of transactions retried: .*)/)[0] // 'no retries reported');

is($router->safe_psql('router', 'SELECT count(*) FROM ops.photos'), $before + $processed,
	'no row lost: the ops table counts every write');
is($node{node2}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0005'"),
	'0', 'no row left on the old node');
is($node{node1}->safe_psql('app', "SELECT schema_name FROM sharded_id.shards WHERE shard_id = $moving"),
	'shard_0005', 'the new node holds the shard');
is($node{node1}->safe_psql('app', 'SELECT misplaced_ids()'), '0',
	'every id on the new node decodes to the shard that stores it');
@ids = all_ids(values %node);
%seen = ();
is(scalar(@ids), 600 + 1 + $processed, 'all rows are on the nodes');
is(scalar(grep { $seen{$_}++ } @ids), 0, 'no id repeats across nodes after the move');

# Ops queries over postgres_fdw, after the move (the ops table follows the
# shard map): rows per shard and one id, pushed down.
$router->safe_psql('router', 'ANALYZE ops.photos');
# The nodes estimate both plans (use_remote_estimate), so the choice does
# not turn on how many rows the writers added.
my $per_shard = $router->safe_psql('router', q{
	BEGIN;
	ALTER SERVER sharded_id_node1 OPTIONS (ADD use_remote_estimate 'true');
	ALTER SERVER sharded_id_node2 OPTIONS (ADD use_remote_estimate 'true');
	SET LOCAL enable_partitionwise_aggregate = on;
	EXPLAIN (VERBOSE, COSTS OFF) SELECT sharded_id.shard_id(id), count(*) FROM ops.photos GROUP BY 1;
	ROLLBACK});
my $pushed = () = $per_shard =~ /Remote SQL: SELECT sharded_id\.shard_id\(id\), count\(\*\) FROM shard_\d+\.photos GROUP BY 1/g;
is($pushed, $shard_count, 'rows per shard: each shard counts its own rows on its node')
  or diag($per_shard);
is($router->safe_psql('router', q{SET enable_partitionwise_aggregate = on;
	SELECT sum(n) FROM (SELECT sharded_id.shard_id(id), count(*) AS n FROM ops.photos GROUP BY 1) x}),
	$before + $processed, 'and the counts add up');
my $one = $router->safe_psql('router', 'SELECT user_id FROM demo_users WHERE n = 7');
my $lookup = $router->safe_psql('router', qq{
	EXPLAIN (VERBOSE, COSTS OFF) SELECT * FROM ops.photos
	WHERE user_id = $one AND sharded_id.shard_id(id) = sharded_id.shard_id(${one}::bigint)});
is(scalar(() = $lookup =~ /Foreign Scan on/g), 1, 'look up by shard: one partition scanned');
like($lookup, qr/Remote SQL: SELECT .* FROM shard_\d+\.photos WHERE \(\(user_id = \Q$one\E::bigint\)\) AND \(\(sharded_id\.shard_id\(id\) = \d+\)\)/,
	'and its conditions, the shard test too, run on the node');

# The tool refuses what it must refuse.
IPC::Run::run(['sharded_id_move_shard', '--shard', $moving,
	'--from', $node{node2}->connstr('app'), '--to', $node{node1}->connstr('app'),
	'--to-node', 'node1', '--router', $router->connstr('router')], '>', \$m_out, '2>', \$m_err);
like($m_err, qr/the source does not hold shard 5/, 'refuses a shard the source does not hold');
$node{node1}->safe_psql('app', 'CREATE SCHEMA shard_0001');
IPC::Run::run(['sharded_id_move_shard', '--shard', 1,
	'--from', $node{node2}->connstr('app'), '--to', $node{node1}->connstr('app'),
	'--to-node', 'node1', '--router', $router->connstr('router')], '>', \$m_out, '2>', \$m_err);
like($m_err, qr/node "node1" already holds shard 1/, 'refuses when the target already holds the shard');
$node{node1}->safe_psql('app', 'DROP SCHEMA shard_0001');
$node{node1}->safe_psql('app', q{UPDATE pg_extension SET extversion = '0.9' WHERE extname = 'sharded_id'});
IPC::Run::run(['sharded_id_move_shard', '--shard', 1,
	'--from', $node{node2}->connstr('app'), '--to', $node{node1}->connstr('app'),
	'--to-node', 'node1', '--router', $router->connstr('router')], '>', \$m_out, '2>', \$m_err);
like($m_err, qr/sharded_id versions differ/, 'refuses when the extension versions differ');
is($node{node2}->safe_psql('app', 'SELECT count(*) FROM sharded_id.shards WHERE shard_id = 1'), '1',
	'and leaves the shard where it was');

$_->stop for values %node;
$router->stop;
done_testing();
