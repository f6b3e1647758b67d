# test/t/032_cleanup_deferred.pl
#
# A deferred cleanup finishes whatever the shard went through on its new
# node meanwhile, and nobody below a superuser can stop it or turn a
# switched move into a failed one:
#  - A plain role reading the router's ops tables holds them while a move
#    switches: the move is done (moved, with a warning), the old copy the
#    ops tables still read stays, and once the reader is gone,
#    recover_moves points the ops tables at the new node and drops the old
#    copy.
#  - The role that owns a shard's schema changes it on the new node (a
#    GRANT) while the move's cleanup is pending: recover_moves drops the old
#    copies of that shard and of another, and the shard moves back.
# Each case asserts that every row is on the node the map names, that no
# id repeats over the nodes, and that no slot, publication, subscription,
# mark or cleanup record is left.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 4;
my %node = (
	a => data_node('dfr_a', shards => [ 0 .. 3 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	b => data_node('dfr_b', shards => [], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }));
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 3 }, $shard_count);
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 80) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
});

my $bindir = `pg_config --bindir`;
chomp $bindir;
my $tool = "$bindir/sharded_id_move_shard";

my $schema = sub { return sprintf('shard_%04d', $_[0]); };
my $rows_on = sub {
	my ($n, $shard) = @_;
	my $s = $schema->($shard);
	return $node{$n}->safe_psql('app', "SELECT (SELECT count(*) FROM $s.users) + (SELECT count(*) FROM $s.photos)");
};
my $schema_on = sub {
	my ($n, $shard) = @_;
	return $node{$n}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = '" . $schema->($shard) . "'");
};
my $write = sub {
	my ($shard, $tag) = @_;
	return $router->safe_psql('router', "SELECT count(app_api.add_photo(user_id, '$tag'))
		FROM demo_users WHERE sharded_id.shard_id(user_id) = $shard");
};
my $no_repeats = sub {
	my ($what) = @_;
	my @ids = all_ids(values %node);
	my %seen;
	my @twice = grep { $seen{$_}++ } @ids;
	is(scalar @twice, 0, "$what: no id repeats over the nodes (" . scalar(@ids) . ' ids)');
};
my $nothing_left = sub {
	my ($what) = @_;
	for my $n (sort keys %node)
	{
		is($node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots)
			|| '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_subscription)
			|| '/' || (SELECT count(*) FROM sharded_id.move_marks)}), '0/0/0/0',
			"$what: no slot, publication, subscription or mark on node $n");
	}
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.move_cleanup'), '0',
		"$what: no cleanup record left");
	is($router->safe_psql('router', q{SELECT count(*) FROM sharded_id.moves WHERE state <> 'finished' OR finished_at IS NULL}),
		'0', "$what: every move in the journal is finished");
};
my $last_move = sub {
	return $router->safe_psql('router', q{SELECT coalesce(outcome, '-') || '|' || state || '|' || (finished_at IS NOT NULL)
		FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1});
};

# 1. A plain role reads the ops tables through the switch.
my $shard = 1;
$router->safe_psql('router', q{CREATE ROLE analyst LOGIN;
	GRANT USAGE ON SCHEMA ops TO analyst; GRANT SELECT ON ALL TABLES IN SCHEMA ops TO analyst});
my $before = $rows_on->('a', $shard);
my $reader = IPC::Run::start([ 'psql', '-X', '-q', '-d', $router->connstr('router'),
	'-c', 'SET application_name = ops_reader', '-c', 'SET ROLE analyst',
	'-c', 'SELECT FROM ops.photos WHERE false; SELECT pg_sleep(3600)' ], '>', \my $rout, '2>', \my $rerr);
$router->poll_query_until('router', q{SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	WHERE l.relation = 'ops.photos'::regclass AND a.application_name = 'ops_reader' AND l.granted})
  or die "the reader took no lock: $rerr";
my ($rc, $out, $err) = $router->psql('router', "SET lock_timeout = '2s'; CALL sharded_id.move_shard($shard, 'b')");
is($rc, 0, 'a move whose ops tables a reader holds is not an error');
like($err, qr/WARNING:.*is done, but its cleanup is pending: the ops tables of shard $shard still read node "a"/,
	'its warning says the ops tables still read the old node');
is(map_owner($router, $shard), 'b', 'the map names the new node');
is($last_move->(), 'moved|cleanup pending|true', 'the journal: moved, finished, its cleanup pending');
is($schema_on->('a', $shard), '1', 'the old copy the ops tables read is kept');
my $written = $write->($shard, 'after the switch');
cmp_ok($written, '>', 0, 'the shard takes writes through the router');
is($rows_on->('b', $shard), $before + $written, 'every row is on the new node');
$router->safe_psql('router', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ops_reader'});
$reader->finish;
($rc, $out, $err) = $router->psql('router', 'CALL sharded_id.recover_moves()');
is($rc, 0, 'recover_moves, once the reader is gone') or diag($err);
is($schema_on->('a', $shard), '0', 'the old copy is dropped');
is($router->safe_psql('router', "SELECT count(*) FROM ops.photos WHERE sharded_id.shard_id(id) = $shard"),
	$node{b}->safe_psql('app', "SELECT count(*) FROM shard_0001.photos"), 'the ops tables read the new node');
$nothing_left->('ops reader');
$no_repeats->('ops reader');

# 1b. The same, but the new copy changes (an index) before its first
# check could run: the deferred cleanup does not drop an old copy it could
# not check.  It keeps it, with a warning, and goes on with the others.
$shard = 0;
$reader = IPC::Run::start([ 'psql', '-X', '-q', '-d', $router->connstr('router'),
	'-c', 'SET application_name = ops_reader', '-c', 'SET ROLE analyst',
	'-c', 'SELECT FROM ops.photos WHERE false; SELECT pg_sleep(3600)' ], '>', \$rout, '2>', \$rerr);
$router->poll_query_until('router', q{SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	WHERE l.relation = 'ops.photos'::regclass AND a.application_name = 'ops_reader' AND l.granted})
  or die "the reader took no lock: $rerr";
($rc, $out, $err) = $router->psql('router', "SET lock_timeout = '2s'; CALL sharded_id.move_shard($shard, 'b')");
is($rc, 0, 'a second move past a reader of the ops tables is done');
is($last_move->(), 'moved|cleanup pending|true', 'its cleanup is pending');
$router->safe_psql('router', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ops_reader'});
$reader->finish;
$node{b}->safe_psql('app', 'CREATE INDEX late_idx ON shard_0000.photos (id)');
($rc, $out, $err) = $router->psql('router', 'CALL sharded_id.recover_moves()');
is($rc, 0, 'recover_moves does not fail on a copy it cannot check') or diag($err);
like($err, qr/WARNING:.*the old copy of shard 0 on node "a" is kept/, 'it warns that it keeps the old copy');
is($schema_on->('a', $shard), '1', 'the old copy, unchecked, is kept');
is($router->safe_psql('router', "SELECT count(*) FROM sharded_id.move_cleanup WHERE object_type = 'schema'"), '1',
	'its record stays');
$node{a}->safe_psql('app', 'DROP SCHEMA shard_0000 CASCADE');
$router->safe_psql('router', "DELETE FROM sharded_id.move_cleanup WHERE object_type = 'schema'");
($rc, $out, $err) = $router->psql('router', 'CALL sharded_id.recover_moves()');
is($rc, 0, 'recover_moves, once the operator dropped the old copy and its record') or diag($err);
$nothing_left->('kept copy');

# 2. The shard's owner, not a superuser, changes the schema on the new
# node while the move's cleanup is pending.
for my $n (values %node) { $n->safe_psql('app', 'CREATE ROLE tenant LOGIN'); }
$node{a}->safe_psql('app', q{ALTER SCHEMA shard_0002 OWNER TO tenant;
	ALTER TABLE shard_0002.users OWNER TO tenant; ALTER TABLE shard_0002.photos OWNER TO tenant});
my $cut_move = sub {
	my ($s) = @_;
	hold_on($router);
	local $ENV{PGOPTIONS} = '-c sharded_id.move_hold=drop_schema_source';
	local $ENV{PGAPPNAME} = 'cleanup_cut';
	my $h = IPC::Run::start([ $tool, '--shard', $s, '--to-node', 'b', '--router', $router->connstr('router'),
		'--method', 'dump' ], '>', \my $o, '2>', \my $e);
	wait_at_hold($router, 'cleanup_cut') or die "no hold: $e";
	$node{a}->safe_psql('app', q{SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name LIKE 'sharded\_id\_%\_cleanup\_%'});
	hold_off($router);
	$h->finish;
	return ($h->result(0), $o, $e);
};
my %rows;
for my $s (2, 3)
{
	$rows{$s} = $rows_on->('a', $s);
	my ($exit, $o, $e) = $cut_move->($s);
	is($exit, 0, "shard $s: the tool exits 0 with its old copy's drop cut");
	like($o, qr/^cleanup: pending/m, "shard $s: cleanup pending") or diag("$o\n$e");
	is($schema_on->('a', $s), '1', "shard $s: the old copy is still on the old node");
}
$node{b}->safe_psql('app', q{SET ROLE tenant; GRANT SELECT ON shard_0002.photos TO PUBLIC;
	CREATE INDEX tenant_photos_idx ON shard_0002.photos (user_id)});
$written = $write->(2, 'after the grant');
cmp_ok($written, '>', 0, 'shard 2 takes writes on its new node');
($rc, $out, $err) = $router->psql('router', 'CALL sharded_id.recover_moves()');
is($rc, 0, 'recover_moves finishes both deferred cleanups') or diag($err);
is($schema_on->('a', $_), '0', "shard $_: the old copy is dropped") for (2, 3);
is($rows_on->('b', 3), $rows{3}, 'shard 3: every row is on the new node');
is($rows_on->('b', 2), $rows{2} + $written, 'shard 2: every row is on the new node');
$nothing_left->('tenant grant');
($rc, $out, $err) = $router->psql('router', "CALL sharded_id.move_shard(2, 'a', method => 'dump')");
is($rc, 0, 'shard 2 moves back') or diag($err);
is(map_owner($router, 2), 'a', 'the map names the old node again');
is($rows_on->('a', 2), $rows{2} + $written, 'shard 2: every row came back');
is($node{a}->safe_psql('app', q{SELECT count(*) FROM pg_indexes WHERE schemaname = 'shard_0002' AND indexname = 'tenant_photos_idx'}),
	'1', "the owner's index came along");
$nothing_left->('moved back');
$no_repeats->('tenant grant');

done_testing();
