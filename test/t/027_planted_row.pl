# test/t/027_planted_row.pl
#
# A row planted during a move never strands its shard.  A router over data
# nodes a and b, in seed and in counter mode, with pgbench writers through
# the router that log every id they saw committed; the row, 9223372036854775000 (an id no floor may be
# raised over), is planted by app_writer, a plain role that may only write
# the shard's tables:
#
# 1. in the source's copy while the move holds at its freeze, by both
#    methods: the move fails before the source retires, with SQLSTATE
#    SI003, and rolls back;
# 2. in the target's copy after the source retired the shard (held at
#    register_target): the target refuses the shard, and the move rolls
#    back by itself, the source taking the shard back;
# 3. the same with the move's session killed there, then recover_moves(),
#    after which the source keeps the shard through an immediate restart.
#
# Each time, after the failure: the map names the source, the source holds
# the shard and takes its writes, the target holds nothing of it, neither
# node keeps a slot, publication, subscription or replication origin, no id
# repeats and no committed row is lost; then, in the same session, once the
# row is deleted, the move tried again succeeds.
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
my $shard = 3;
my $schema = sprintf('shard_%04d', $shard);
my $planted = '9223372036854775000';
for my $mode (qw(seed counter))
{
	my %node;
	for my $n (qw(a b))
	{
		$node{$n} = data_node("planted_${mode}_$n", mode => $mode, shards => $n eq 'a' ? [ 0 .. 3 ] : [ 4 .. 7 ],
			shard_count => $shard_count, init => { allows_streaming => 'logical' });
	}
	my $router = router_node(\%node, { map { ($_ => $_ < 4 ? 'a' : 'b') } 0 .. 7 }, $shard_count, "planted_${mode}_router");
	$router->safe_psql('router', q{
		CREATE TABLE demo_users AS
		SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 200) g;
		SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
		CREATE TABLE written (id bigint);
	});
	my $rconn = $router->connstr('router');

	# The writer role: no superuser, it may only use the shard's schema and
	# write its tables; a move copies its privileges to the target's copy.
	for my $n (qw(a b))
	{
		$node{$n}->safe_psql('app', 'CREATE ROLE app_writer LOGIN');
	}
	$node{a}->safe_psql('app', "GRANT USAGE ON SCHEMA $schema TO app_writer;
		GRANT SELECT, INSERT, DELETE ON ALL TABLES IN SCHEMA $schema TO app_writer");
	is($node{a}->safe_psql('app', q{SELECT rolsuper OR rolcreaterole OR rolbypassrls FROM pg_roles WHERE rolname = 'app_writer'}),
		'f', 'app_writer is a plain role');
	my $as_writer = sub {
		my ($n, $sql) = @_;
		return $node{$n}->psql('app', $sql, extra_params => [ '-U', 'app_writer' ]);
	};

	my $other = sub { return $_[0] eq 'a' ? 'b' : 'a'; };

	# pgbench writers through the router on the shard, each committed id
	# logged in the router's table written in the same transaction (the node
	# commits first: a logged id is a committed row).
	my $script = $router->basedir . '/planted_writer.sql';
	my $users = $router->safe_psql('router', "CREATE TABLE writer_users AS SELECT row_number() OVER (ORDER BY n) AS k, user_id
		FROM demo_users WHERE sharded_id.shard_id(user_id) = $shard; SELECT count(*) FROM writer_users");
	open my $fh, '>', $script or die $!;
	print $fh "\\set k random(1, $users)\n"
	  . "INSERT INTO written SELECT app_api.add_photo(user_id, 'planted test') FROM writer_users WHERE k = :k;\n";
	close $fh;
	my $start_writers = sub {
		my $out = '';
		my $h = IPC::Run::start([ 'pgbench', '-n', '-c', '2', '-j', '2', '-T', '900', '--max-tries=1000',
				'-f', $script, $rconn ], '>', \$out, '2>&1');
		return { h => $h, out => \$out };
	};
	my $written = sub { return $router->safe_psql('router', 'SELECT count(*) FROM written'); };
	my $writers_go_on = sub {
		my ($n) = @_;
		my $before = $written->();
		return $router->poll_query_until('router', "SELECT count(*) >= $before + $n FROM written");
	};
	my $stop_writers = sub {
		my ($w) = @_;
		$w->{h}->kill_kill;
		unlike(${ $w->{out} }, qr/aborted|FATAL/, 'no pgbench client aborted') or diag(${ $w->{out} });
	};

	# Hold points of the router (hold_on, hold_off): a move with
	# sharded_id.move_hold set waits at its hold point while key 0 is held,
	# and the mover's session waits between its two moves (hold_pause) while
	# key 1 is.
	my $hold_on = sub { hold_on($router, $_[0]); };
	my $hold_off = sub { hold_off($router, $_[0]); };
	my $wait_on = sub {
		my ($key, $err) = @_;
		wait_at_hold($router, 'planted_mover', $key) or die "the mover did not reach hold $key: $$err";
	};
	my $mover = sub {
		my (@cmds) = @_;
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'VERBOSITY=verbose', '-d', "$rconn application_name=planted_mover",
				map { ('-c', $_) } @cmds ], '>', \$out, '2>', \$err);
		return ($h, \$err);
	};
	# What the mover's session printed so far, once it printed $re, or after
	# the default timeout.
	my $printed = sub {
		my ($h, $err, $re) = @_;
		my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
		while ($$err !~ $re && time < $deadline)
		{
			$h->pump_nb;
			select(undef, undef, undef, 0.05);
		}
		return $$err;
	};
	my @pause = hold_pause(1);

	# What a failed move must leave: the shard on $from only, writable there
	# through the router, nothing of the move on either node, no id twice, no
	# committed row lost.
	my $check = sub {
		my ($what, $where) = @_;
		is(map_owner($router, $shard), $where, "$what: the map names $where");
		is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '0',
			"$what: no move is left unfinished");
		for my $n (sort keys %node)
		{
			is($node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots)
				|| '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_subscription)
				|| '/' || (SELECT count(*) FROM pg_replication_origin)}),
				'0/0/0/0', "$what: node $n keeps no slot, publication, subscription or replication origin");
			my $holds = $node{$n}->safe_psql('app', "SELECT (SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard)
				|| '/' || (SELECT count(*) FROM pg_namespace WHERE nspname = '$schema')
				|| '/' || (SELECT count(*) FROM sharded_id.floors() WHERE shard_id = $shard AND retired)");
			like($holds, $n eq $where ? qr{^1/1/0$} : qr{^0/0/}, "$what: node $n holds shard $shard only if the map names it ($holds)");
		}
		my $id = $router->safe_psql('router', "SELECT app_api.add_photo(user_id, 'after') FROM writer_users ORDER BY k LIMIT 1");
		is($node{$where}->safe_psql('app', "SELECT count(*) FROM $schema.photos WHERE id = $id"), '1',
			"$what: a write through the router lands on node $where");
		ok($writers_go_on->(10), "$what: the writers commit through the router");
		# The ids logged before the nodes are read: the writers go on.
		my @logged = split /\n/, $router->safe_psql('router', 'SELECT id FROM written');
		my @ids = all_ids(values %node);
		my %seen;
		is(scalar(grep { $seen{$_}++ } @ids), 0, "$what: no id repeats over the nodes (" . scalar(@ids) . ' ids)');
		is(scalar(grep { !$seen{$_} } @logged), 0, "$what: 0 of " . scalar(@logged) . ' committed rows lost');
	};

	# 1. Planted in the source's copy at the freeze, by both methods.
	for my $method (qw(online dump))
	{
		my $what = "$mode, $method move, row planted in the source at the freeze";
		my $from = map_owner($router, $shard);
		my $to = $other->($from);
		my $w = $start_writers->();
		ok($writers_go_on->(5), "$what: the writers commit");
		$hold_on->(0);
		$hold_on->(1);
		my $moves = $router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves');
		my ($h, $err) = $mover->("SET sharded_id.move_hold = 'freeze'",
			"CALL sharded_id.move_shard($shard, '$to', method => '$method')",
			'RESET sharded_id.move_hold', @pause,
			"CALL sharded_id.move_shard($shard, '$to', method => '$method')");
		$wait_on->(0, $err);
		my ($r, $o, $e) = $as_writer->($from, "INSERT INTO $schema.users (id, name) VALUES ($planted, 'planted')");
		is($r, 0, "$what: app_writer plants the row in the source's copy") or diag($e);
		$hold_off->(0);
		$wait_on->(1, $err);
		note($printed->($h, $err, qr/rolled back: the shard stays/));
		like($$err, qr/SI003: move \d+ of shard $shard to node "$to" failed at step "retire_source": table $schema\.users holds id $planted/,
			"$what: the move fails before the source retires, with SQLSTATE SI003");
		like($$err, qr/The move was rolled back: the shard stays on node "$from"/, "$what: the move says it rolled back");
		is($router->safe_psql('router', "SELECT string_agg(outcome, ',' ORDER BY move_id) FROM sharded_id.moves WHERE move_id > $moves"),
			'rolled back', "$what: the move is journaled as rolled back");
		$check->("$what, failed", $from);
		($r, $o, $e) = $as_writer->($from, "DELETE FROM $schema.users WHERE id = $planted");
		is($r, 0, "$what: app_writer deletes the row") or diag($e);
		$hold_off->(1);
		$h->finish;
		like($$err, qr/moved shard $shard \(schema "$schema"\) from node "$from" to node "$to"/,
			"$what: the move tried again in the same session succeeds");
		$check->("$what, tried again", $to);
		$stop_writers->($w);
	}

	# 2. Planted in the target's copy after the source retired: the target
	# refuses the shard, and the move rolls back by itself.
	{
		my $method = 'online';
		my $what = "$mode, $method move, row planted in the target before it registers";
		my $from = map_owner($router, $shard);
		my $to = $other->($from);
		my $w = $start_writers->();
		ok($writers_go_on->(5), "$what: the writers commit");
		$hold_on->(0);
		$hold_on->(1);
		my ($h, $err) = $mover->("SET sharded_id.move_hold = 'register_target'",
			"CALL sharded_id.move_shard($shard, '$to', method => '$method')",
			'RESET sharded_id.move_hold', @pause,
			"CALL sharded_id.move_shard($shard, '$to', method => '$method')");
		$wait_on->(0, $err);
		is($node{$from}->safe_psql('app', "SELECT count(*) FROM sharded_id.move_retirements WHERE shard_id = $shard")
			  . '/' . $node{$to}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard"),
			'1/0', "$what: the source has retired the shard, the target not registered it");
		my ($r, $o, $e) = $as_writer->($to, "INSERT INTO $schema.users (id, name) VALUES ($planted, 'planted')");
		is($r, 0, "$what: app_writer plants the row in the target's copy") or diag($e);
		$hold_off->(0);
		$wait_on->(1, $err);
		note($printed->($h, $err, qr/rolled back: the shard stays/));
		like($$err, qr/SI003: move \d+ of shard $shard to node "$to" failed at step "register_target": table $schema\.users holds id $planted/,
			"$what: the move fails at register_target, with SQLSTATE SI003");
		like($$err, qr/The move was rolled back: the shard stays on node "$from"/, "$what: the move says it rolled back");
		is($node{$from}->safe_psql('app', "SELECT count(*) FROM pg_constraint WHERE conname = 'sharded_id_moved'")
			  . '/' . $node{$from}->safe_psql('app', "SELECT count(*) FROM pg_trigger WHERE tgname = 'sharded_id_moved'")
			  . '/' . $node{$from}->safe_psql('app', "SELECT count(*) FROM sharded_id.move_retirements WHERE shard_id = $shard"),
			'0/0/0', "$what: the source's copy lost its fence (constraint and trigger) and its retirement");
		$check->("$what, failed", $from);
		$hold_off->(1);
		$h->finish;
		like($$err, qr/moved shard $shard \(schema "$schema"\) from node "$from" to node "$to"/,
			"$what: the move tried again in the same session succeeds");
		$check->("$what, tried again", $to);
		$stop_writers->($w);
	}

	# 3. The same, the move's session killed at register_target, then
	# recover_moves(), and a move in the same session.
	{
		my $method = 'dump';
		my $what = "$mode, $method move killed at register_target, row planted in the target, recover_moves";
		my $from = map_owner($router, $shard);
		my $to = $other->($from);
		my $w = $start_writers->();
		ok($writers_go_on->(5), "$what: the writers commit");
		$hold_on->(0);
		my ($h, $err) = $mover->("SET sharded_id.move_hold = 'register_target'",
			"CALL sharded_id.move_shard($shard, '$to', method => '$method')");
		$wait_on->(0, $err);
		my ($r, $o, $e) = $as_writer->($to, "INSERT INTO $schema.users (id, name) VALUES ($planted, 'planted')");
		is($r, 0, "$what: app_writer plants the row in the target's copy") or diag($e);
		$router->safe_psql('router', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'planted_mover'});
		eval { $h->finish; };
		$hold_off->(0);
		my $move = $router->safe_psql('router', 'SELECT move_id FROM sharded_id.moves WHERE finished_at IS NULL');
		ok($move ne '', "$what: the move is left unfinished");
		$hold_on->(1);
		($h, $err) = $mover->('CALL sharded_id.recover_moves()', @pause,
			"CALL sharded_id.move_shard($shard, '$to', method => '$method')");
		$wait_on->(1, $err);
		note($printed->($h, $err, qr/interrupted at step/));
		like($$err, qr/move $move of shard $shard, interrupted at step "register_target": rolled back/,
			"$what: recover_moves rolls the move back");
		unlike($$err, qr/ERROR/, "$what: recover_moves fails on nothing");
		is($router->safe_psql('router', "SELECT outcome FROM sharded_id.moves WHERE move_id = $move"), 'rolled back',
			"$what: the move is journaled as rolled back");
		$check->("$what, recovered", $from);
		# The source's take-back survives a crash of the source.
		$stop_writers->($w);
		restart_node($node{$from}, 'immediate');
		is($node{$from}->safe_psql('app', "SELECT (SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard)
			|| '/' || (SELECT count(*) FROM sharded_id.floors() WHERE shard_id = $shard AND retired)"),
			'1/0', "$what: after an immediate restart of $from, it still owns the shard");
		# The router's connection to the old server may fail once.
		my ($rr, $id, $ee);
		for my $try (1 .. 5)
		{
			($rr, $id, $ee) = $router->psql('router', "SELECT app_api.add_photo(user_id, 'after the restart') FROM writer_users ORDER BY k LIMIT 1");
			last if $rr == 0;
		}
		is($rr, 0, "$what: after the restart, the router writes to the shard") or diag($ee);
		is($node{$from}->safe_psql('app', "SELECT count(*) FROM $schema.photos WHERE id = $id"), '1',
			"$what: after the restart, a write through the router lands on node $from");
		$w = $start_writers->();
		$hold_off->(1);
		$h->finish;
		like($$err, qr/moved shard $shard \(schema "$schema"\) from node "$from" to node "$to"/,
			"$what: a move in the same session succeeds");
		$check->("$what, moved", $to);
		$stop_writers->($w);
	}

	$_->stop for $router, values %node;
}
done_testing();
