# test/t/011_online_move.pl
#
# Online shard moves with logical replication: a move while pgbench writes
# through the router; a move whose target dies in the middle of the copy,
# one whose copy differs, one whose copy cannot finish and one canceled; a writer that
# bypasses the fence during the final freeze; and a third node filled by
# sharded_id_rebalance.  After each, no replication slot, publication or
# subscription of a move is left on any node.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 8;
my %node = (
	node1 => data_node('node1', shards => [ grep { $_ % 2 == 0 } 0 .. 7 ],
		shard_count => $shard_count, init => { allows_streaming => 'logical' }),
	node2 => data_node('node2', shards => [ grep { $_ % 2 == 1 } 0 .. 7 ],
		shard_count => $shard_count, init => { allows_streaming => 'logical' }));
my $router = router_node(\%node, { map { ($_ => $_ % 2 ? 'node2' : 'node1') } 0 .. 7 }, $shard_count);
my $bindir = `pg_config --bindir`;
chomp $bindir;

$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 400) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
});

# What the moves may leave: replication slots, publications, subscriptions.
sub leftovers
{
	my ($n) = @_;
	return $n->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots)
		+ (SELECT count(*) FROM pg_publication) + (SELECT count(*) FROM pg_subscription)});
}
# pgbench through the router, adding photos for users picked by $where.
sub writers { return router_writers($router, @_); }
sub pgbench_count
{
	my ($out, $what) = @_;
	my ($n) = $$out =~ /number of $what: (\d+)/;
	return $n // 0;
}
sub move
{
	my ($shard, $from, $to, @opts) = @_;
	return [ "$bindir/sharded_id_move_shard", '--shard', $shard,
		'--from', $node{$from}->connstr('app'), '--to', $node{$to}->connstr('app'),
		'--to-node', $to, '--router', $router->connstr('router'), @opts ];
}

# 1. Shard 5 moves online from node2 to node1 while writers add photos on
# every shard through the router.
my $rows_before = $router->safe_psql('router', 'SELECT count(*) FROM ops.photos');
my ($writer, $w_out) = writers('true', 6);
$router->poll_query_until('router', q{SELECT count(*) > 0 FROM ops.photos WHERE caption = 'during the move'})
  or die "the writers did not start: $$w_out";
my ($m_out, $m_err) = ('', '');
ok(IPC::Run::run(move(5, 'node2', 'node1'), '>', \$m_out, '2>', \$m_err),
	'shard 5 moved online while writers ran')
  or diag($m_err);
like($m_out, qr/^method: online$/m, 'the source has wal_level = logical, so the move is online');
my ($freeze) = $m_out =~ /^write freeze: (\d+) ms$/m;
ok(defined $freeze, 'the tool reports its write freeze: ' . ($freeze // '?') . ' ms');
note($m_out);
ok($writer->finish, 'the writers finished') or diag($$w_out);
my $processed = pgbench_count($w_out, 'transactions actually processed');
cmp_ok($processed, '>', 0, "the writers wrote $processed photos");
is(pgbench_count($w_out, 'failed transactions'), 0, 'none failed for good');
note(($$w_out =~ /(number of transactions retried: .*)/)[0] // 'no retries reported');
is($router->safe_psql('router', 'SELECT count(*) FROM ops.photos'), $rows_before + $processed,
	'no row lost: the ops table counts every write');
is($node{node2}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0005'}),
	'0', 'no row left on the source');
is($node{node1}->safe_psql('app', 'SELECT count(*) FROM sharded_id.shards WHERE shard_id = 5'), '1',
	'the target holds shard 5');
is(map_owner($router, 5), 'node1', 'and the router sends shard 5 there');
is($node{node1}->safe_psql('app', 'SELECT misplaced_ids()'), '0',
	'every id on the target decodes to the shard that stores it');
my @ids = all_ids(values %node);
my %seen;
is(scalar(@ids), 400 + $rows_before + $processed, 'every user and photo is on a node');
is(scalar(grep { $seen{$_}++ } @ids), 0, 'no id repeats');
is(leftovers($node{$_}), '0', "$_: no slot, publication or subscription left") for qw(node1 node2);
# The moved shard's sequence went with it: new photos on shard 5 get ids.
is($router->safe_psql('router', q{SELECT count(DISTINCT app_api.add_photo(user_id, 'after the move'))
	FROM demo_users WHERE sharded_id.shard_id(user_id) = 5}),
	$router->safe_psql('router', 'SELECT count(*) FROM demo_users WHERE sharded_id.shard_id(user_id) = 5'),
	'the target mints for shard 5');

# 2. The target dies in the middle of the copy of a large shard 3, while
# writers add photos on shard 3.
my $big_user = $router->safe_psql('router', 'SELECT user_id FROM demo_users WHERE sharded_id.shard_id(user_id) = 3 LIMIT 1');
$node{node2}->safe_psql('app', "INSERT INTO shard_0003.photos (user_id, caption)
	SELECT $big_user, repeat('x', 100) FROM generate_series(1, 500000)");
my $shard3_before = $node{node2}->safe_psql('app', 'SELECT count(*) FROM shard_0003.photos');
($writer, $w_out) = writers('sharded_id.shard_id(user_id) = 3', 6);
$router->poll_query_until('router', q{SELECT count(*) > 0 FROM ops.photos WHERE caption = 'during the move' AND sharded_id.shard_id(id) = 3})
  or die "the writers did not start: $$w_out";
($m_out, $m_err) = ('', '');
my $mover = IPC::Run::start(move(3, 'node2', 'node1'), '>', \$m_out, '2>', \$m_err);
$node{node1}->poll_query_until('app', q{SELECT count(*) > 0 FROM pg_stat_progress_copy
	WHERE relid = 'shard_0003.photos'::regclass AND tuples_processed > 0})
  or die "the copy did not start: $m_err";
$node{node1}->stop('immediate');
ok(!$mover->finish, 'the move fails when its target dies during the copy');
like($m_err, qr/failed at step "copy"/, 'and says at which step');
like($m_err, qr/Finishing or rolling back the move failed too/, 'and that it could not be rolled back yet');
is(leftovers($node{node2}), '0', 'no slot or publication is left on the source');
is(map_owner($router, 3), 'node2', 'the router still sends shard 3 to the source');
ok($writer->finish, 'the writers on shard 3 finished') or diag($$w_out);
$processed = pgbench_count($w_out, 'transactions actually processed');
cmp_ok($processed, '>', 0, "the source kept serving writes: $processed photos");
is(pgbench_count($w_out, 'failed transactions'), 0, 'and none failed');
is($node{node2}->safe_psql('app', 'SELECT count(*) FROM shard_0003.photos'), $shard3_before + $processed,
	'the source holds every row of shard 3');

# The target comes back holding the subscription and the partial copy; the
# next move of shard 3 removes them first, then moves the shard.
$node{node1}->start;
($m_out, $m_err) = ('', '');
ok(IPC::Run::run(move(3, 'node2', 'node1'), '>', \$m_out, '2>', \$m_err),
	'the next move of shard 3 succeeds') or diag($m_err);
like($m_err, qr/finishing move \d+ of shard 3, which did not end/, 'after rolling back the failed one');
is($node{node1}->safe_psql('app', 'SELECT count(*) FROM shard_0003.photos'), $shard3_before + $processed,
	'the target holds every row of shard 3');
is(leftovers($node{$_}), '0', "$_: nothing left after the second move") for qw(node1 node2);

# 3. Failures after the copy started.  A trigger that fires only where
# changes are applied by replication (ENABLE REPLICA) goes with shard 7 to
# the target; there it rewrites rows, or waits on a lock the test holds.
for my $name (qw(node1 node2))
{
	$node{$name}->safe_psql('app', q{CREATE FUNCTION public.replica_hook() RETURNS trigger
		LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$});
}
$node{node2}->safe_psql('app', q{
	CREATE TRIGGER replica_hook BEFORE INSERT ON shard_0007.photos FOR EACH ROW EXECUTE FUNCTION public.replica_hook();
	ALTER TABLE shard_0007.photos ENABLE REPLICA TRIGGER replica_hook;});
my $shard7 = $node{node2}->safe_psql('app', q{SELECT count(*) || ':' || sum(hashtext(caption)) FROM shard_0007.photos});
sub failed_move_left_nothing
{
	my ($what) = @_;
	is(map_owner($router, 7), 'node2', "$what: the router still sends shard 7 to the source");
	is($node{node2}->safe_psql('app', q{SELECT count(*) || ':' || sum(hashtext(caption)) FROM shard_0007.photos}), $shard7,
		"$what: the source's rows are untouched");
	is($node{node1}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0007'}), '0',
		"$what: the partial copy is gone from the target");
	is(leftovers($node{$_}), '0', "$what: $_ keeps no slot, publication or subscription") for qw(node1 node2);
}

# The copy on the target differs from the source: the comparison at the
# sync point catches it.
$node{node1}->safe_psql('app', q{CREATE OR REPLACE FUNCTION public.replica_hook() RETURNS trigger
	LANGUAGE plpgsql AS $$BEGIN NEW.caption := 'changed on the way'; RETURN NEW; END$$});
($m_out, $m_err) = ('', '');
ok(!IPC::Run::run(move(7, 'node2', 'node1'), '>', \$m_out, '2>', \$m_err), 'a move whose copy differs fails');
like($m_err, qr/the copy of shard 7 differs from the source.*The move was rolled back/s, 'at the comparison of the two sides');
failed_move_left_nothing('rows differ');

# The copy cannot finish: the move gives up after --timeout.
$node{node1}->safe_psql('app', q{CREATE OR REPLACE FUNCTION public.replica_hook() RETURNS trigger
	LANGUAGE plpgsql AS $$BEGIN PERFORM pg_advisory_xact_lock_shared(42); RETURN NEW; END$$});
my ($l_in, $l_out) = ('', '');
my $locker = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $node{node1}->connstr('app') ],
	'<', \$l_in, '>', \$l_out, '2>&1');
$l_in = "SELECT pg_advisory_lock(42);\n\\echo locked\n";
$locker->pump until $l_out =~ /locked/;
($m_out, $m_err) = ('', '');
ok(!IPC::Run::run(move(7, 'node2', 'node1', '--timeout', '2'), '>', \$m_out, '2>', \$m_err),
	'a move whose copy cannot finish fails');
like($m_err, qr/the copy of shard 7 did not finish within 00:00:02.*The move was rolled back/s, 'when its time limit is up');
failed_move_left_nothing('copy stuck');
$l_in = "\\q\n";
$locker->finish;
$node{node2}->safe_psql('app', 'DROP TRIGGER replica_hook ON shard_0007.photos');

# A move canceled once its publication, slot and subscription exist (held
# before its catch-up) rolls itself back before it fails: nothing of it is
# left on either node, and no recover_moves() is needed.
my ($k_in, $k_out) = ('', '');
my $holder = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $router->connstr('router') ],
	'<', \$k_in, '>', \$k_out, '2>&1');
$k_in = "SELECT pg_advisory_lock(1936222579, 0);\n\\echo held\n";
$holder->pump until $k_out =~ /held/;
($m_out, $m_err) = ('', '');
$mover = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-v', 'VERBOSITY=verbose',
	'-d', $router->connstr('router') . ' application_name=cancel_me',
	'-c', "SET sharded_id.move_hold = 'catch_up'", '-c', "CALL sharded_id.move_shard(7, 'node1')" ],
	'>', \$m_out, '2>', \$m_err);
$router->poll_query_until('router', q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE application_name = 'cancel_me' AND wait_event_type = 'Lock'})
  or die "the move did not reach its catch-up: $m_err";
is($node{node2}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_publication WHERE pubname = 'sharded_id_move_7')
	|| '/' || (SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'sharded_id_move_7')})
	. '/' . $node{node1}->safe_psql('app', q{SELECT count(*) FROM pg_subscription WHERE subname = 'sharded_id_move_7'}),
	'1/1/1', 'canceled move: its publication, slot and subscription exist before the cancel');
$router->safe_psql('router', q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'cancel_me'});
ok(!$mover->finish, 'canceled move: the move fails');
like($m_err, qr/57014: move \d+ of shard 7 to node "node1" was canceled at step "catch_up".*The move was rolled back/s,
	'canceled move: it says it was canceled and rolled back');
$k_in = "\\q\n";
$holder->finish;
is($router->safe_psql('router', 'SELECT state || \':\' || outcome FROM sharded_id.moves WHERE shard_id = 7 ORDER BY move_id DESC LIMIT 1'),
	'finished:rolled back', 'canceled move: journaled as rolled back, without recover_moves()');
failed_move_left_nothing('canceled move');

# 4. Writers that bypass enter_shard during the final freeze, once the
# source has retired the shard, fail on the retired copy instead of writing
# a row that would be dropped with it: one that takes its id from the
# column default and one that brings its own id, both on the fence of the
# retired copy (a statement trigger, which fires before the default would
# find that the source no longer mints for shard 7).  A lock the test holds
# on the router's shard map stops the move inside that freeze, at its
# switch.
my $user7 = $router->safe_psql('router', 'SELECT user_id FROM demo_users WHERE sharded_id.shard_id(user_id) = 7 LIMIT 1');
my ($h_in, $h_out) = ('', '');
my $map_lock = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $router->connstr('router') ],
	'<', \$h_in, '>', \$h_out, '2>&1');
$h_in = "BEGIN;\nSELECT 1 FROM sharded_id.shard_map WHERE shard_id = 7 FOR UPDATE;\n\\echo held\n";
$map_lock->pump until $h_out =~ /held/;
($m_out, $m_err) = ('', '');
$mover = IPC::Run::start(move(7, 'node2', 'node1'), '>', \$m_out, '2>', \$m_err);
$router->poll_query_until('router', q{SELECT count(*) > 0 FROM pg_stat_activity
	WHERE wait_event_type = 'Lock' AND query LIKE 'CALL sharded_id.move_shard%'})
  or die "the move did not reach its repoint: $m_err";
my ($d_out, $d_err, $e_out, $e_err) = ('', '', '', '');
my $direct = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node{node2}->connstr('app'),
	'-c', "INSERT INTO shard_0007.photos (user_id, caption) VALUES ($user7, 'direct') RETURNING id" ],
	'>', \$d_out, '2>', \$d_err);
my $explicit = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $node{node2}->connstr('app'),
	'-c', "INSERT INTO shard_0007.photos (id, user_id, caption) VALUES (sharded_id.encode(now(), 7, 1), $user7, 'direct') RETURNING id" ],
	'>', \$e_out, '2>', \$e_err);
# The source committed its retirement before the switch: the direct
# writers fail at once, while the move still waits.
ok(!$direct->finish, 'the direct writer fails');
ok(!$explicit->finish, 'the direct writer with its own id fails too');
$h_in = "COMMIT;\n\\q\n";
$map_lock->finish;
ok($mover->finish, 'shard 7 moves once the router is free') or diag($m_err);
like($d_err, qr/table shard_0007\.photos is the old copy of a shard that moved away/,
	'on the fence of the retired copy, before its column default runs');
is($d_out, '', 'and returns no id');
like($e_err, qr/table shard_0007\.photos is the old copy of a shard that moved away/, 'on the fence of the retired copy');
is($node{node1}->safe_psql('app', q{SELECT count(*) FROM shard_0007.photos WHERE caption = 'direct'}), '0',
	'the target has no such row either');
is($node{node2}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0007'}), '0',
	'and the retired copy is gone from the source');
is(leftovers($node{$_}), '0', "$_: nothing left after the move of shard 7") for qw(node1 node2);

# 5. A third node joins, and sharded_id_rebalance evens out the 8 shards.
$node{node3} = data_node('node3', shard_count => $shard_count, init => { allows_streaming => 'logical' });
my $connstr = $node{node3}->connstr('app');
$router->safe_psql('router', "INSERT INTO sharded_id.nodes VALUES ('node3', \$c\$$connstr\$c\$)");
my $map = sub { $router->safe_psql('router', q{SELECT string_agg(shard_id || ':' || node_name, ' ' ORDER BY shard_id) FROM sharded_id.shard_map}) };
my $map_before = $map->();
my $rebalance = [ "$bindir/sharded_id_rebalance", '--router', $router->connstr('router') ];
my ($r_out, $r_err) = ('', '');
ok(IPC::Run::run([ @$rebalance, '--dry-run' ], '>', \$r_out, '2>', \$r_err), 'the dry run plans')
  or diag($r_err);
like($r_out, qr/^plan: 4 moves$/m, 'four moves, from 7 + 1 + 0 shards to 3 + 3 + 2');
is(scalar(() = $r_out =~ /^move shard \d+ from node "node1" to node "node\d"$/mg), 4,
	'each from the fullest node') or diag($r_out);
is($map->(), $map_before, 'and the dry run moves nothing');
my $total = () = all_ids(values %node);
ok(IPC::Run::run($rebalance, '>', \$r_out, '2>', \$r_err), 'the rebalance runs') or diag($r_err);
like($r_out, qr/^rebalanced: 4 moves$/m, 'its four moves');
is($router->safe_psql('router', q{SELECT string_agg(n::text, ',' ORDER BY node_name) FROM
	(SELECT node_name, count(*) AS n FROM sharded_id.shard_map GROUP BY node_name) c}),
	'3,3,2', 'the nodes hold 3, 3 and 2 shards');
for my $name (sort keys %node)
{
	is($node{$name}->safe_psql('app', q{SELECT string_agg(shard_id::text, ',' ORDER BY shard_id) FROM sharded_id.shards}),
		$router->safe_psql('router', qq{SELECT string_agg(shard_id::text, ',' ORDER BY shard_id) FROM sharded_id.shard_map WHERE node_name = '$name'}),
		"$name holds exactly the shards the router sends it");
	is(leftovers($node{$name}), '0', "$name: nothing left after the rebalance");
}
@ids = all_ids(values %node);
%seen = ();
is(scalar(@ids), $total, 'every row is still on a node');
is(scalar(grep { $seen{$_}++ } @ids), 0, 'and no id repeats');
is($router->safe_psql('router', 'SELECT count(*) FROM ops.photos'), $total - 400,
	'the ops table, through the new shard map, reads every photo');

$_->stop for values %node;
$router->stop;
done_testing();
