# test/t/024_route_lock.pl
#
# No plain role can hold a lock that stops a move, and place_shard takes
# the lock that route() waits on.
#
# 1. A plain role (LOGIN only) on the router runs BEGIN; route(5) and keeps
#    its transaction open: route() is not its to call (42501), it holds no
#    route lock, and an online move of shard 5 under 2 pgbench writers
#    (without --max-tries) completes with 0 failed writes and every
#    written row on the new owner.
# 2. A role granted route() (the writers' documented grant) runs BEGIN;
#    route(5) and stays idle in its transaction: the move's freeze ends
#    that session, whose routed calls have all returned, and the move
#    completes, again with 0 failed writes and no row lost.
#    A writer whose routed call is still running: with
#    sharded_id.move_end_blockers off it is waited for, not ended, and past
#    freeze_timeout the move fails (55P03) naming it, and rolls back; by
#    default the freeze ends it once half its freeze_timeout has passed,
#    says so, and the move completes.
#    A transaction that called route() cannot be prepared.
# 3. place_shard holds the shard's route lock, the one route() waits on,
#    until its transaction ends: route(5) in another session waits for it
#    (lock_timeout), and pg_locks shows the tag (ROUTE_LOCK_CLASS, 5,
#    SHARD_LOCK_KIND).
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
	a => data_node('route_a', shards => [ 0 .. 7 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	b => data_node('route_b', shards => [], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }));
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 7 }, $shard_count);
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 200) g;
	CREATE ROLE mallory LOGIN;
	CREATE ROLE app_writer LOGIN;
	GRANT EXECUTE ON FUNCTION sharded_id.route(integer, text), sharded_id.route_id(bigint, text) TO app_writer;
});
# The route lock of shard 5: the tag (ROUTE_LOCK_CLASS, 5, SHARD_LOCK_KIND).
my ($route_class, $shard_kind) = (ROUTE_LOCK_CLASS, SHARD_LOCK_KIND);
my $route_locks = sub {
	my ($mode) = @_;
	return $router->safe_psql('router', qq{SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $route_class AND objid = 5 AND objsubid = $shard_kind AND mode = '$mode' AND granted});
};

# A session of $role on the router that runs BEGIN; route(5) and stays in
# its transaction; returns the harness and its output.
my $hold = sub {
	my ($role) = @_;
	my ($in, $out) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $router->connstr('router') . " user=$role application_name=holder_$role" ],
		'<', \$in, '>', \$out, '2>&1');
	$in = "BEGIN;\nSELECT sharded_id.route(5);\n\\echo held\n";
	$h->pump until $out =~ /held/;
	return ($h, \$in, \$out);
};

my $move_under_writers = sub { return move_under_writers($router, \%node, 5, $_[0]); };

# 1. The plain role.
{
	my ($h, $in, $out) = $hold->('mallory');
	like($$out, qr/permission denied for function route/, 'a plain role may not call route()');
	is($route_locks->('ShareLock'), 0, 'the plain role holds no route lock');
	my $err = $move_under_writers->('plain role holding route(5)');
	unlike($err, qr/ended session/, 'the freeze ended no session');
	is($router->safe_psql('router', q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'holder_mallory'}),
		1, 'the plain role\'s session was left alone');
	$$in = "\\q\n";
	$h->finish;
}

# 2. A writer idle in its transaction after route(5).
{
	my ($h, $in, $out) = $hold->('app_writer');
	like($$out, qr/^sharded_id$/m, 'a role granted route() gets the cluster');
	is($route_locks->('ShareLock'), 1, 'and holds the shard\'s route lock');
	my $err = $move_under_writers->('writer idle in transaction after route(5)');
	like($err, qr/WARNING:  ended session \d+ of role "app_writer", idle in a transaction for .* while it held the route lock of shard 5/,
		'the move warns that it ended the idle session, naming its role');
	ok($router->poll_query_until('router', q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'holder_app_writer'}),
		'the freeze ended the idle session that held the route lock');
	$$in = "SELECT 1;\n\\q\n";
	eval { $h->finish; };
	is($route_locks->('ShareLock'), 0, 'no route lock is left');
}

# A transaction that called route() cannot be prepared, which would keep
# the lock held by no session the freeze could end.
{
	my ($ret, $o, $e) = $router->psql('router', q{BEGIN; SELECT sharded_id.route(5); PREPARE TRANSACTION 'held_route'},
		extra_params => [ '-U', 'app_writer' ]);
	like($e, qr/cannot prepare a transaction that called route\(\)/, 'a transaction that called route() cannot be prepared');
	is($router->safe_psql('router', 'SELECT count(*) FROM pg_prepared_xacts'), 0, 'no prepared transaction is left');
	is($route_locks->('ShareLock'), 0, 'and no route lock');
}

# A writer whose routed call is still running, with move_end_blockers off,
# is waited for, and not ended: past freeze_timeout the move fails
# (55P03), naming the session, and rolls back.
{
	my $from = map_owner($router, 5);
	my $to = $from eq 'a' ? 'b' : 'a';
	my $h = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $router->connstr('router') . ' user=app_writer application_name=busy_writer',
		'-c', 'SELECT sharded_id.route(5), pg_sleep(60)' ], '>', \my $o, '2>', \my $e);
	$router->poll_query_until('router', qq{SELECT count(*) = 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		WHERE l.locktype = 'advisory' AND l.classid = $route_class AND l.objid = 5 AND l.objsubid = $shard_kind AND a.application_name = 'busy_writer'})
	  or die 'the busy writer did not take the route lock';
	my ($ret, $stdout, $stderr) = $router->psql('router',
		"SET sharded_id.move_end_blockers = off; CALL sharded_id.move_shard(5, '$to', freeze_timeout => '2 s')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($ret, 0, 'move_end_blockers off: a move beside a routed call in flight past freeze_timeout fails');
	like($stderr, qr/55P03/, 'with 55P03');
	like($stderr, qr/the route lock of shard 5 was not free within 00:00:02/, 'at the route lock');
	like($stderr, qr/role "app_writer", active/, 'naming the session that holds it');
	is(map_owner($router, 5), $from, 'the shard stays where it was');
	is($router->safe_psql('router', q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'busy_writer'}), 1,
		'the session in flight was not ended');
	$router->safe_psql('router', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'busy_writer'});
	eval { $h->finish; };
	is($router->safe_psql('router', 'SELECT outcome FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1'), 'rolled back',
		'the move is journaled as rolled back');
}

# The same by default: the freeze ends the writer in flight once half its
# freeze_timeout has passed, and the move completes.
{
	my $from = map_owner($router, 5);
	my $to = $from eq 'a' ? 'b' : 'a';
	my $h = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $router->connstr('router') . ' user=app_writer application_name=busy_writer',
		'-c', 'SELECT sharded_id.route(5), pg_sleep(60)' ], '>', \my $o, '2>', \my $e);
	$router->poll_query_until('router', qq{SELECT count(*) = 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
		WHERE l.locktype = 'advisory' AND l.classid = $route_class AND l.objid = 5 AND l.objsubid = $shard_kind AND a.application_name = 'busy_writer'})
	  or die 'the busy writer did not take the route lock';
	my ($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard(5, '$to', freeze_timeout => '2 s')",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	is($ret, 0, 'by default the move beside a routed call in flight completes') or diag($stderr);
	like($stderr, qr/ended session \d+ of role "app_writer", which still held the route lock of shard 5 after half of 00:00:02/,
		'after ending the session in flight, with a warning naming its role');
	is(map_owner($router, 5), $to, 'the map names the target');
	ok($router->poll_query_until('router', q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'busy_writer'}),
		'the session in flight is gone');
	eval { $h->finish; };
}

# 3. place_shard takes the lock route() waits on.
{
	my $at = map_owner($router, 5);
	my ($in, $out) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $router->connstr('router') ],
		'<', \$in, '>', \$out, '2>&1');
	$in = "BEGIN;\nSELECT sharded_id.place_shard(5, '$at');\n\\echo placed\n";
	$h->pump until $out =~ /placed/;
	like($out, qr/^$at$/m, 'place_shard ran, its transaction open');
	is($route_locks->('ExclusiveLock'), 1, "place_shard holds the route lock ($route_class, 5, $shard_kind) exclusively");
	my ($ret, $o, $e) = $router->psql('router', "SET lock_timeout = '1s'; SELECT sharded_id.route(5)");
	like($e, qr/canceling statement due to lock timeout/, 'route(5) waits for place_shard\'s transaction');
	($ret, $o, $e) = $router->psql('router', "SET lock_timeout = '1s'; SELECT sharded_id.route(4)");
	is($o, 'sharded_id', 'route() of another shard does not wait');
	$in = "COMMIT;\n\\q\n";
	$h->finish;
	($ret, $o, $e) = $router->psql('router', "SET lock_timeout = '1s'; SELECT sharded_id.route(5)");
	is($o, 'sharded_id', 'route(5) goes on once place_shard commits') or diag($e);
}

done_testing();
