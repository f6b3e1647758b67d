# test/t/015_move_procedure.pl
#
# Moves as operations of the router's database: CALL sharded_id.move_shard
# and sharded_id.rebalance, journaled in sharded_id.moves.
#
# 1. Writers through the router wait out a move instead of failing: 2
#    pgbench clients without --max-tries, online and dump moves, 0 failed.
# 2. After the switch, DELETE and TRUNCATE on the old copy do not reach
#    the new owner: replication stopped inside the final freeze.
# 3. Crashes: at four points (after the copy starts, during the catch-up,
#    inside the final freeze, between the switch and the cleanup) the
#    router, the source and the target are each stopped with an immediate
#    shutdown while 2 writers run through the router, and started again.
#    Recovery finishes or rolls back the move.  Each time no row a writer
#    saw committed is lost, no id repeats, neither node keeps a slot, a
#    publication or a subscription, and the shard map names the node that
#    holds the shard.
# 4. A copied table whose synchronization slot is gone from the source
#    fails the move at the copy within seconds, not at its timeout; it
#    rolls back, and a retry moves every row.
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
	a => data_node('move_a', shards => [ 0 .. 6 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	b => data_node('move_b', shards => [], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }));
# Shard 7's schema name holds a double quote, a semicolon, a quote and spaces.
my $hostile = q{Shard "7"; it's};
$node{a}->safe_psql('app', q{SELECT sharded_id.create_shard(7, 'Shard "7"; it''s')});
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 7 }, $shard_count);
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 200) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
});

my $other = sub { return $_[0] eq 'a' ? 'b' : 'a'; };

# What a move must leave behind on the nodes, whatever happened: no
# replication objects, the shard registered only where the map says, its
# schema only there, and no id twice.
my $check_nodes = sub {
	my ($shard, $what) = @_;
	my $schema = sprintf('shard_%04d', $shard);
	my $where = map_owner($router, $shard);
	for my $n (sort keys %node)
	{
		is($node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots)
			|| '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_subscription)}),
			'0/0/0', "$what: node $n holds 0 slots, 0 publications, 0 subscriptions");
		is($node{$n}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard")
			  . '/' . $node{$n}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'"),
			$n eq $where ? '1/1' : '0/0', "$what: node $n holds shard $shard only if the map says so");
	}
	my @ids = all_ids(values %node);
	my %seen;
	is(scalar(grep { $seen{$_}++ } @ids), 0, "$what: no id repeats over the nodes (" . scalar(@ids) . ' ids)');
	return \%seen;
};

my @wids = split /\n/, $router->safe_psql('router', 'SELECT DISTINCT sharded_id.shard_id(user_id) FROM demo_users ORDER BY 1');
ok(scalar(@wids) == $shard_count, 'the demo users cover every shard');

# 1. pgbench writers without --max-tries, through the router.
for my $method (qw(online dump))
{
	my $shard = 5;
	my $from = map_owner($router, $shard);
	my $to = $other->($from);
	my ($writers, $w_ref) = router_writers($router, "sharded_id.shard_id(user_id) = $shard", 6,
		caption => 'pgbench', max_tries => 0);
	$router->poll_query_until('router', "SELECT count(*) > 0 FROM ops.photos
		WHERE caption = 'pgbench' AND sharded_id.shard_id(id) = $shard")
	  or die "the writers did not start: $$w_ref";
	my ($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard($shard, '$to', method => '$method')");
	is($ret, 0, "$method move of shard $shard from $from to $to by CALL") or diag($stderr);
	like($stderr, qr/moved shard $shard .* write freeze [0-9.]+ ms, high-water mark \d+/, "$method move: reports its freeze and high-water mark");
	ok($writers->finish, "$method move: pgbench without --max-tries exited 0") or diag($$w_ref);
	my $w_out = $$w_ref;
	my ($failed) = $w_out =~ /number of failed transactions: (\d+)/;
	$failed //= 0;
	is($failed, 0, "$method move: 0 writes failed");
	unlike($w_out, qr/aborted|error/i, "$method move: no client aborted");
	is(map_owner($router, $shard), $to, "$method move: the map names $to");
	is($router->safe_psql('router', "SELECT outcome || ':' || (freeze_ms IS NOT NULL) FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1"),
		'moved:true', "$method move: journaled as moved, with its freeze time");
	is($node{$from}->safe_psql('app', "SELECT count(*) FROM sharded_id.retired_shards WHERE shard_id = $shard"),
		'1', "$method move: the source has retired shard $shard");
	$check_nodes->($shard, "$method move");
}

# Hostile names: shard 7 moves online and back by dump, its rows intact.
{
	my $rows_of = sub {
		my ($n) = @_;
		return $node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM "Shard ""7""; it's".users) || '/'
			|| (SELECT count(*) FROM "Shard ""7""; it's".photos)});
	};
	my $before = $rows_of->('a');
	for my $step ([ 'b', 'online' ], [ 'a', 'dump' ])
	{
		my ($to, $method) = @$step;
		my ($r, $o, $e) = $router->psql('router', "CALL sharded_id.move_shard(7, '$to', method => '$method')");
		is($r, 0, "hostile schema name: $method move to $to") or diag($e);
		is(map_owner($router, 7), $to, "hostile schema name: the map names $to");
		is($rows_of->($to), $before, "hostile schema name: every row reached $to");
		is($node{$to}->safe_psql('app', 'SELECT schema_name FROM sharded_id.shards WHERE shard_id = 7'), $hostile,
			"hostile schema name: $to registered the schema under its name");
	}
}

my $steps = $router->safe_psql('router', q{SELECT string_agg(s.step, ',' ORDER BY s.step_no)
	FROM sharded_id.move_steps s WHERE s.move_id = (SELECT min(move_id) FROM sharded_id.moves)});
is($steps, 'record_objects,create_publication,subscribe,copy,catch_up,compare,catch_up,freeze,stop_replication,retire_source,register_target,switch,cleanup',
	'the online move journaled each step before taking it');

# A dry run moves nothing; the plan evens the shards out.
my ($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard(2, 'b', dry_run => true)");
like($stderr, qr/would move shard 2 \(schema "shard_0002"\) from node "a" to node "b", method online/, 'dry run: prints the plan');
is(map_owner($router, 2), 'a', 'dry run: moves nothing');
is($router->safe_psql('router', q{SELECT string_agg(shard_id || ':' || source_node || '>' || target_node, ' ' ORDER BY move_no)
	FROM sharded_id.rebalance_plan()}), '7:a>b 6:a>b 5:a>b 4:a>b', 'rebalance_plan moves the highest shards of the fullest node');
is($router->safe_psql('router', q{SELECT string_agg(shard_id || ':' || source_node || '>' || target_node, ' ' ORDER BY move_no)
	FROM sharded_id.rebalance_plan('{b}')}), '0:a>b 1:a>b 2:a>b 3:a>b 4:a>b 5:a>b 6:a>b 7:a>b', 'rebalance_plan drains a node left out');

# Bad input fails up front, with nothing journaled.
my $journaled = $router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves');
($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard(3, 'nowhere')");
like($stderr, qr/data node "nowhere" does not exist/, 'an unknown node is refused');
($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard(3, 'b', method => 'carrier pigeon')");
like($stderr, qr/move method "carrier pigeon" is not online or dump/, 'an unknown method is refused');
is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves'), $journaled, 'refused moves journal nothing');

# A move that pauses after journaling a step, at a hold point (hold_on);
# the hold ends when the test terminates the holding session (hold_off).
my $holder;
my $start_move = sub {
	my ($shard, $to, $point) = @_;
	$holder = hold_on($router);
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $router->connstr('router'),
			'-c', "SET sharded_id.move_hold = '$point'", '-c', "CALL sharded_id.move_shard($shard, '$to')" ],
		'>', \$out, '2>', \$err);
	$router->poll_query_until('router', "SELECT state = '$point' FROM sharded_id.moves WHERE finished_at IS NULL")
	  or die "the move did not reach $point: $err";
	return ($h, \$err);
};

# 2. DELETE and TRUNCATE on the old copy, between the switch and the cleanup.
{
	my $shard = 5;
	my $from = map_owner($router, $shard);
	my $to = $other->($from);
	my $schema = sprintf('shard_%04d', $shard);
	my ($h, $err) = $start_move->($shard, $to, 'cleanup');
	is(map_owner($router, $shard), $to, 'bypass: the map has switched');
	my $rows = $node{$to}->safe_psql('app', "SELECT count(*) FROM $schema.photos") . '/'
	  . $node{$to}->safe_psql('app', "SELECT count(*) FROM $schema.users");
	is($node{$to}->safe_psql('app', "SELECT count(*) FROM pg_subscription WHERE subenabled")
		  . '/' . $node{$to}->safe_psql('app', 'SELECT count(pid) FROM pg_stat_subscription'),
		'0/0', 'bypass: replication stopped in the freeze: subscription disabled, no apply worker');
	my $old_rows = $node{$from}->safe_psql('app', "SELECT count(*) FROM $schema.users");
	my ($r, $o, $e) = $node{$from}->psql('app', "\\set VERBOSITY verbose\nDELETE FROM $schema.photos");
	like($e, qr/40001: table $schema\.photos is the old copy of a shard that moved away/,
		'bypass: a DELETE on the old copy is refused, 40001');
	($r, $o, $e) = $node{$from}->psql('app', "\\set VERBOSITY verbose\nTRUNCATE $schema.users CASCADE");
	like($e, qr/40001: table $schema\.\w+ is the old copy of a shard that moved away/,
		'bypass: a TRUNCATE on the old copy is refused, 40001');
	is($node{$from}->safe_psql('app', "SELECT count(*) FROM $schema.users"), $old_rows, 'bypass: the old copy keeps its rows');
	($r, $o, $e) = $node{$from}->psql('app', "INSERT INTO $schema.users (name) VALUES ('bypass')");
	like($e, qr/old copy of a shard that moved away|not minted|SI001/, 'bypass: a new row on the old copy is refused');
	hold_off($router);
	$h->finish;
	is($node{$to}->safe_psql('app', "SELECT count(*) FROM $schema.photos") . '/'
		  . $node{$to}->safe_psql('app', "SELECT count(*) FROM $schema.users"),
		$rows, 'bypass: the new owner kept every row');
	$check_nodes->($shard, 'bypass');
}

# 3. Crashes, with 2 writers through the router that log the ids they saw
# committed (logged_writers).

my $shard = 3;
for my $point (qw(copy catch_up retire_source cleanup))
{
	for my $victim (qw(router source target))
	{
		my $from = map_owner($router, $shard);
		my $to = $other->($from);
		my $what = "crash of the $victim at $point";
		my $w = logged_writers($router, 'crash', $shard);
		$router->poll_query_until('router', "SELECT count(*) > 0 FROM ops.photos
			WHERE caption = 'crash' AND sharded_id.shard_id(id) = $shard") or die "$what: the writers did not start";
		my ($h, $err) = $start_move->($shard, $to, $point);
		my $killed = $victim eq 'router' ? $router : $node{ $victim eq 'source' ? $from : $to };
		restart_node($killed, 'immediate');
		if ($victim eq 'router') { eval { $holder->finish; }; }
		else { hold_off($router); }
		$h->finish;
		my ($r, $o, $e) = $router->psql('router', 'CALL sharded_id.recover_moves()');
		is($r, 0, "$what: recovery ran") or diag("$e\nmove: $$err");
		is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '0',
			"$what: no move is left unfinished");
		my $outcome = $router->safe_psql('router', 'SELECT outcome FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1');
		is(map_owner($router, $shard), $outcome eq 'moved' ? $to : $from, "$what: the map agrees with the outcome ($outcome)");
		# The writers go on through the router after recovery.
		ok(writers_go_on($w, 10), "$what: the writers commit again after recovery");
		stop_writers($w);
		my $seen = $check_nodes->($shard, $what);
		my @ids = committed($w);
		is(scalar(grep { !$seen->{$_} } @ids), 0, "$what: 0 of " . scalar(@ids) . ' committed rows lost');
	}
}

# 4. A table sync that lost its slot.  After the target's table sync has
# copied a table (FINISHEDCOPY), it catches up through its own slot on
# the source.  Invalidated or dropped (or dropped by the sync itself just
# before a stop of the target lost the commit that follows), that slot is
# gone for good, and the sync can never finish.  The test plants that state
# as the target's superuser while the move pauses at the copy: the
# subscription disabled, one table set back to FINISHEDCOPY with its
# replication origin (inserted in the catalog, since
# pg_replication_origin_create refuses the reserved names of table syncs),
# then enabled again.  The move must give up in about 10 s rather than
# wait out its timeout, roll back with nothing left behind, and a retry in
# the same session must move every row.
{
	my $shard = 4;
	my $from = map_owner($router, $shard);
	my $to = $other->($from);
	my $schema = sprintf('shard_%04d', $shard);
	my $sub = "sharded_id_move_$shard";
	my $what = 'lost sync slot';
	my $w = logged_writers($router, 'crash', $shard);
	$router->poll_query_until('router', "SELECT count(*) > 0 FROM ops.photos
		WHERE caption = 'crash' AND sharded_id.shard_id(id) = $shard") or die "$what: the writers did not start";
	hold_on($router);
	my ($out, $err) = ('', '');
	# The move must fail on the lost slot, not wait out its timeout.
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'VERBOSITY=verbose', '-d', $router->connstr('router'),
			'-c', "SET sharded_id.move_hold = 'copy'",
			'-c', "CALL sharded_id.move_shard($shard, '$to', timeout => interval '3 min')" ],
		'>', \$out, '2>', \$err);
	$router->poll_query_until('router', "SELECT state = 'copy' FROM sharded_id.moves WHERE finished_at IS NULL")
	  or die "$what: the move did not reach copy: $err";
	my $t = $node{$to};
	$t->poll_query_until('app', "SELECT count(*) > 0 AND bool_and(r.srsubstate = 'r')
		FROM pg_subscription s JOIN pg_subscription_rel r ON r.srsubid = s.oid WHERE s.subname = '$sub'")
	  or die "$what: the tables did not synchronize";
	$t->safe_psql('app', "ALTER SUBSCRIPTION $sub DISABLE");
	$t->poll_query_until('app', "SELECT count(pid) = 0 FROM pg_stat_subscription WHERE subname = '$sub'")
	  or die "$what: the subscription's workers did not exit";
	$t->safe_psql('app', qq{
		INSERT INTO pg_replication_origin
		SELECT (SELECT coalesce(max(roident::text::integer), 0) + 1 FROM pg_replication_origin)::text::oid,
		       format('pg_%s_%s', s.oid, '$schema.photos'::regclass::oid)
		FROM pg_subscription s WHERE s.subname = '$sub';
		UPDATE pg_subscription_rel SET srsubstate = 'f'
		WHERE srsubid = (SELECT oid FROM pg_subscription WHERE subname = '$sub')
		  AND srrelid = '$schema.photos'::regclass;
		ALTER SUBSCRIPTION $sub ENABLE});
	hold_off($router);
	$h->finish;
	like($err, qr/the copy of shard $shard cannot finish: the synchronization of $schema\.photos has no usable slot on node "$from"/,
		"$what: the move gave up on the copy, naming the table");
	like($err, qr/ERROR:  55000: move \d+ of shard $shard to node "$to" failed at step "copy"/,
		"$what: the error is 55000, at the copy step");
	is($router->safe_psql('router', 'SELECT outcome FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1'),
		'rolled back', "$what: the move rolled back");
	is(map_owner($router, $shard), $from, "$what: the map still names $from");
	is($t->safe_psql('app', 'SELECT count(*) FROM pg_replication_origin'), '0',
		"$what: no replication origin is left on $to");
	$check_nodes->($shard, $what);
	# A retry in one session: the move goes through with every row.
	my ($r, $o, $e) = $router->psql('router', "CALL sharded_id.move_shard($shard, '$to')");
	is($r, 0, "$what: the move tried again succeeds") or diag($e);
	is(map_owner($router, $shard), $to, "$what: the map names $to");
	ok(writers_go_on($w, 10), "$what: the writers commit after the retry");
	stop_writers($w);
	my $seen = $check_nodes->($shard, "$what, retried");
	my @ids = committed($w);
	is(scalar(grep { !$seen->{$_} } @ids), 0, "$what: 0 of " . scalar(@ids) . ' committed rows lost');
}
done_testing();
