# test/t/039_freeze_router_hung.pl
#
# A router that hangs inside a move's freeze does not keep the shard
# write-locked on the source.  A move of shard 0 (each method) stops at its
# hold point inside the freeze (copy_rows, stop_replication) with
# freeze_timeout => '2 s' and timeout => '20 s': the source holds the
# freeze, idle in its transaction, while the router's mover waits.  The
# source ends that session once it has been idle for longer than the move
# allows, with the mover still hung (online: twice freeze_timeout and 10 s
# more, 14 s; by dump, whose copy and comparison run inside the freeze:
# the move's timeout, 20 s): the fence is gone, and a writer on the
# source that enters the shard commits.  When the mover resumes, the move
# fails and rolls back: the map still names the source, which holds every
# row, the one written meanwhile included, and recover_moves leaves no move
# unfinished.  1.6 kept the freeze for as long as the router's connection
# lasted (with a dead host, until TCP gave up, about 2 h).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;
use Time::HiRes qw(time);

my $shard_count = 4;
my %node;
for my $n (qw(a b))
{
	$node{$n} = data_node("hung_$n", shards => $n eq 'a' ? [ 0, 1 ] : [ 2, 3 ],
		shard_count => $shard_count, init => { allows_streaming => 'logical' });
}
my $router = router_node(\%node, { 0 => 'a', 1 => 'a', 2 => 'b', 3 => 'b' }, $shard_count, 'hung_router');
$router->safe_psql('router', q{SELECT count(app_api.add_user('user ' || g)) FROM generate_series(1, 200) g});

my $fenced = sub {
	return $node{a}->safe_psql('app', 'SELECT count(*) FROM pg_locks WHERE locktype = \'advisory\' AND classid = '
		  . FENCE_CLASS . ' AND objid = 0 AND granted');
};

for my $method (qw(dump online))
{
	my $what = "$method";
	my $point = $method eq 'online' ? 'stop_replication' : 'copy_rows';
	my $rows = $node{a}->safe_psql('app', 'SELECT count(*) FROM shard_0000.users');
	hold_on($router);
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'VERBOSITY=verbose', '-d',
			$router->connstr('router') . ' application_name=hung_mover',
			'-c', "SET sharded_id.move_hold = '$point'",
			'-c', "CALL sharded_id.move_shard(0, 'b', method => '$method', timeout => '20 s', freeze_timeout => '2 s')" ],
		'>', \$out, '2>', \$err);
	wait_at_hold($router, 'hung_mover') or die "$what: the move did not reach its hold: $err";
	is($fenced->(), '1', "$what: the hung router's move holds the freeze on the source");
	my $t0 = time;
	$node{a}->poll_query_until('app', 'SELECT count(*) = 0 FROM pg_locks WHERE locktype = \'advisory\' AND classid = '
		  . FENCE_CLASS . ' AND objid = 0 AND granted') or die "$what: the freeze stays";
	my $took = time - $t0;
	my $limit = $method eq 'online' ? 14 : 20;
	ok($took > $limit / 2 && $took < $limit + 15,
		sprintf('%s: the source ends the freeze after %.1f s (its limit: %d s), with the router still hung', $what, $took, $limit));
	is($router->safe_psql('router', q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'hung_mover'}), '1',
		"$what: the mover is still there, waiting");
	my ($rc, $o, $e) = $node{a}->psql('app', q{BEGIN; SELECT sharded_id.enter_shard(0);
		INSERT INTO shard_0000.users (name) VALUES ('written while the router hung'); COMMIT;});
	is($rc, 0, "$what: a writer on the source enters the shard and commits") or diag($e);
	hold_off($router);
	eval { $h->finish; };
	like($err, qr/move \d+ of shard 0 to node "b" failed/, "$what: the move fails when the router resumes");
	($rc, $o, $e) = $router->psql('router', 'CALL sharded_id.recover_moves()');
	is($rc, 0, "$what: recover_moves runs") or diag($e);
	is($router->safe_psql('router', 'SELECT node_name FROM sharded_id.shard_map WHERE shard_id = 0'), 'a',
		"$what: the map still names the source");
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '0',
		"$what: no move is left unfinished");
	is($node{a}->safe_psql('app', 'SELECT count(*) FROM shard_0000.users'), $rows + 1,
		"$what: the source holds every row, the one written meanwhile included");
	is($node{b}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0000'}), '0',
		"$what: nothing is left on the target");
}
done_testing();
