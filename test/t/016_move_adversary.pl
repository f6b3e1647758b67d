# test/t/016_move_adversary.pl
#
# Moves as an operator tries them, in seed and in counter mode, on a router
# over data nodes a, b and c (c's clock 2 s behind), with writers through
# the router that log the ids they saw committed:
#
# 1. A second session during a paused move: recover_moves and a second
#    move_shard of the shard fail, naming the move and its backend, and
#    change nothing; the route lock's advisory key stalls no writer.
# 2. A move left unfinished by a statement_timeout, or failed at its
#    comparison, then a move of the same shard to another node in the same
#    session, by both methods.
# 3. A cancel and a statement_timeout inside the final freeze, by both
#    methods, the cancelled session staying connected: the route lock and
#    the source's freeze are gone within seconds and the writers go on.
# 4. A dump move of a shard whose tables have a BEFORE INSERT trigger that
#    changes rows and an AFTER INSERT trigger that writes outside the shard.
# 5. A mover subject to FORCE row security is refused before it copies.
# 6. Moves a->b and b->a of two shards at the same time.
# 7. Immediate stops of the router, the source and the target after the
#    source committed its retirement, and after the target registered.
# 8. The router's clock stepped back an hour during the catch-up.
# 9. A shard retired by hand under an interrupted move: recovery refuses to
#    roll forward and changes nothing.
#
# After each: the shard is registered, and its schema exists, only on the
# node the map names; no node keeps a slot, publication or subscription;
# no id repeats; every row written before and during the move is there;
# no move is left unfinished; a write through the router succeeds and
# lands on the node the map names.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use Time::HiRes qw(time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 8;

for my $mode (qw(seed counter))
{
	my %node;
	for my $n (qw(a b c))
	{
		$node{$n} = data_node("adv_${mode}_$n",
			shards => $n eq 'a' ? [ 0 .. 3 ] : $n eq 'b' ? [ 4 .. 7 ] : [],
			shard_count => $shard_count, mode => $mode,
			init => { allows_streaming => 'logical' },
			$n eq 'c' ? (clock => '-2s') : ());
	}
	my $router_clock;
	my $router = router_node(\%node, { map { ($_ => $_ < 4 ? 'a' : 'b') } 0 .. 7 },
		$shard_count, "adv_${mode}_router", \$router_clock);
	$router->safe_psql('router', q{
		CREATE TABLE demo_users AS
		SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 200) g;
		SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
	});
	my $rconn = $router->connstr('router');

	my %known = map { $_ => 1 } all_ids(values %node);
	is(scalar(keys %known), 400, "$mode: 200 users and 200 photos written through the router");

	# Writers through the router on the given shards, each logging the ids
	# it saw committed.
	my $start_writers = sub { return logged_writers($router, 'during', @_); };

	# What every scenario must leave behind.
	my $settle = sub {
		my ($what, $w, @shards) = @_;
		ok(writers_go_on($w, 10), "$what: the writers commit through the router afterwards");
		stop_writers($w);
		is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '0',
			"$what: no move is left unfinished");
		for my $n (sort keys %node)
		{
			is($node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots)
				|| '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_subscription)}),
				'0/0/0', "$what: node $n keeps no slot, publication or subscription");
		}
		for my $shard (@shards)
		{
			my $schema = sprintf('shard_%04d', $shard);
			my $where = map_owner($router, $shard);
			my $holders = join(',', grep {
				$node{$_}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard") ne '0'
				  || $node{$_}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'") ne '0'
			} sort keys %node);
			is($holders, $where, "$what: shard $shard and its schema are only on node $where, the one the map names");
			my $id = $router->safe_psql('router', "SELECT app_api.add_photo(user_id, 'after') FROM demo_users
				WHERE sharded_id.shard_id(user_id) = $shard ORDER BY n LIMIT 1");
			is($node{$where}->safe_psql('app', "SELECT count(*) FROM $schema.photos WHERE id = $id"), '1',
				"$what: a write through the router to shard $shard lands on node $where");
			$known{$id} = 1;
		}
		my @ids = all_ids(values %node);
		my %seen;
		is(scalar(grep { $seen{$_}++ } @ids), 0, "$what: no id repeats over the nodes (" . scalar(@ids) . ' ids)');
		my @during = committed($w);
		ok(@during > 0, "$what: the writers committed " . scalar(@during) . ' rows');
		$known{$_} = 1 for @during;
		my @lost = grep { !$seen{$_} } sort keys %known;
		is(scalar(@lost), 0, "$what: every row written before and during the move is there (" . scalar(keys %known) . ')')
		  or diag("lost: @lost[0 .. ($#lost < 9 ? $#lost : 9)]");
	};

	# A session of the router at a hold point (hold_on): a move with
	# sharded_id.move_hold set pauses there until it ends (hold_off).
	my $holder;
	my $hold_on = sub { $holder = hold_on($router); };
	my $hold_off = sub { hold_off($router); };
	# A psql session of the router named adv_mover running @cmds.
	my $mover = sub {
		my (@cmds) = @_;
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'VERBOSITY=verbose', '-d', "$rconn application_name=adv_mover",
				map { ('-c', $_) } @cmds ],
			'>', \$out, '2>', \$err);
		return ($h, \$err);
	};
	my $mover_pid = sub {
		return $router->safe_psql('router', q{SELECT pid FROM pg_stat_activity WHERE application_name = 'adv_mover'});
	};
	my $wait_at_hold = sub {
		my ($err) = @_;
		wait_at_hold($router, 'adv_mover') or die "the move did not reach its hold: $$err";
	};
	my $route_locked = sub {
		my ($shard) = @_;
		return $router->safe_psql('router', "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
			AND classid = " . ROUTE_LOCK_CLASS . " AND objid = $shard AND objsubid = " . SHARD_LOCK_KIND . "
			AND mode = 'ExclusiveLock' AND granted");
	};
	my $source_frozen = sub {
		my ($n, $shard) = @_;
		return $node{$n}->safe_psql('app', "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
			AND classid = " . FENCE_CLASS . " AND objid = $shard AND mode = 'ExclusiveLock' AND granted");
	};
	my $other_nodes = sub {
		my ($from) = @_;
		return grep { $_ ne $from } sort keys %node;
	};

	# 1. A second session during a paused move.
	{
		my $shard = 1;
		my $what = "$mode, second session";
		my $w = $start_writers->($shard);
		ok(writers_go_on($w, 5), "$what: the writers commit");
		# Anyone may take advisory lock (ROUTE_LOCK_CLASS, shard): it is not
		# the route lock, and no writer waits on it.
		my $route_class = ROUTE_LOCK_CLASS;
		my $key_pair = KEY_PAIR_KIND;
		my ($ah, $aout, $aerr) = (undef, '', '');
		$ah = IPC::Run::start([ 'psql', '-X', '-q', '-d', $rconn, '-c', "SELECT pg_advisory_lock($route_class, $shard)",
			'-c', 'SELECT pg_sleep(3600)' ], '>', \$aout, '2>', \$aerr);
		$router->poll_query_until('router', "SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory'
			AND classid = $route_class AND objid = $shard AND objsubid = $key_pair AND granted") or die 'no advisory lock';
		my ($r, $o, $e) = $router->psql('router', "SET lock_timeout = '5s'; SELECT app_api.add_photo(user_id, 'past the key')
			FROM demo_users WHERE sharded_id.shard_id(user_id) = $shard ORDER BY n LIMIT 1");
		is($r, 0, "$what: a writer goes past a session holding advisory lock ($route_class, $shard)") or diag($e);
		$known{$o} = 1 if $r == 0;
		$router->safe_psql('router', "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
			AND classid = $route_class AND objid = $shard AND objsubid = $key_pair");
		eval { $ah->finish; };

		$hold_on->();
		my ($h, $err) = $mover->("SET sharded_id.move_hold = 'retire_source'", "CALL sharded_id.move_shard($shard, 'b')");
		$wait_at_hold->($err);
		my $pid = $mover_pid->();
		my $move = $router->safe_psql('router', "SELECT move_id FROM sharded_id.moves WHERE finished_at IS NULL AND shard_id = $shard");
		for my $call ('CALL sharded_id.recover_moves()', "CALL sharded_id.move_shard($shard, 'c')",
			"CALL sharded_id.rebalance('{c}')")
		{
			($r, $o, $e) = $router->psql('router', "\\set VERBOSITY verbose\n$call");
			isnt($r, 0, "$what: $call fails while the move runs");
			like($e, qr/55P03: move $move of shard $shard is running in backend $pid/,
				"$what: $call names move $move and backend $pid");
		}
		is($router->safe_psql('router', "SELECT state || '/' || (finished_at IS NULL) FROM sharded_id.moves WHERE move_id = $move"),
			'retire_source/true', "$what: the paused move is untouched");
		is($router->safe_psql('router', "SELECT count(*) FROM sharded_id.moves WHERE move_id > $move"), '0',
			"$what: nothing else was journaled");
		is($node{c}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname ~ '^shard_[0-9]+\$'"), '0',
			"$what: nothing reached node c");
		$hold_off->();
		$h->finish;
		like($$err, qr/moved shard $shard/, "$what: the paused move goes on and moves the shard");
		is(map_owner($router, $shard), 'b', "$what: the map names b");
		$settle->($what, $w, $shard);
	}

	# 2. A move left unfinished by a statement_timeout, or failed at its
	# comparison, then a move to another node in the same session.
	for my $n (sort keys %node)
	{
		$node{$n}->safe_psql('app', q{CREATE FUNCTION public.rewrite() RETURNS trigger
			LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$});
	}
	for my $method (qw(online dump))
	{
		for my $kind (qw(unfinished failed))
		{
			my $shard = 2;
			my $what = "$mode, $method move $kind, then retried elsewhere in the same session";
			my $from = map_owner($router, $shard);
			my ($first, $second) = $other_nodes->($from);
			my $w = $start_writers->($shard);
			ok(writers_go_on($w, 5), "$what: the writers commit");
			my $sql;
			if ($kind eq 'unfinished')
			{
				$hold_on->();
				$sql = "SET sharded_id.move_hold = '" . ($method eq 'online' ? 'catch_up' : 'copy_rows') . "';
					SET statement_timeout = '3s';
					CALL sharded_id.move_shard($shard, '$first', method => '$method');
					RESET statement_timeout;
					RESET sharded_id.move_hold;";
			}
			else
			{
				# A trigger that fires where rows are applied by replication
				# or copied by a move goes with the shard, and rewrites rows
				# on $first only: the copy there differs from the source.
				$node{$from}->safe_psql('app', q{SELECT 'CREATE TRIGGER rewrite BEFORE INSERT ON shard_0002.photos
					FOR EACH ROW EXECUTE FUNCTION public.rewrite(); ALTER TABLE shard_0002.photos ENABLE REPLICA TRIGGER rewrite'
					WHERE NOT EXISTS (SELECT FROM pg_trigger WHERE tgname = 'rewrite') \gexec});
				$node{$first}->safe_psql('app', q{CREATE OR REPLACE FUNCTION public.rewrite() RETURNS trigger
					LANGUAGE plpgsql AS $$BEGIN NEW.caption := 'rewritten'; RETURN NEW; END$$});
				$sql = "CALL sharded_id.move_shard($shard, '$first', method => '$method');";
			}
			my ($r, $o, $e) = $router->psql('router', "\\set VERBOSITY verbose
				$sql
				CALL sharded_id.move_shard($shard, '$second', method => '$method');", on_error_stop => 0);
			if ($kind eq 'unfinished')
			{
				$hold_off->();
				like($e, qr/57014: move \d+ of shard $shard to node "$first" was canceled/, "$what: the first move is canceled");
			}
			else
			{
				$node{$first}->safe_psql('app', q{CREATE OR REPLACE FUNCTION public.rewrite() RETURNS trigger
					LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$});
				like($e, qr/XX001: move \d+ of shard $shard to node "$first" failed at step "(compare|copy_rows)": the copy of shard $shard differs/,
					"$what: the first move fails at its comparison");
			}
			like($e, qr/moved shard $shard .* to node "$second"/, "$what: the second move reports success");
			is(map_owner($router, $shard), $second, "$what: the map names $second");
			is($router->safe_psql('router', "SELECT string_agg(target_node || ':' || outcome, ',' ORDER BY move_id)
				FROM sharded_id.moves WHERE shard_id = $shard AND move_id > (SELECT coalesce(max(move_id), 0) FROM sharded_id.moves
				WHERE shard_id = $shard AND outcome = 'moved' AND target_node = '$from')"),
				"$first:rolled back,$second:moved", "$what: the first move rolled back, the second moved");
			$settle->($what, $w, $shard);
		}
	}

	# 3. A cancel and a statement_timeout inside the final freeze.
	for my $method (qw(online dump))
	{
		for my $kind (qw(cancel timeout))
		{
			my $shard = 5;
			my $what = "$mode, $kind in the $method move's freeze";
			my $from = map_owner($router, $shard);
			my ($to) = $other_nodes->($from);
			my $w = $start_writers->($shard);
			ok(writers_go_on($w, 5), "$what: the writers commit");
			$hold_on->();
			my ($h, $err) = $mover->(
				$kind eq 'timeout' ? "SET statement_timeout = '" . ($method eq 'online' ? 8 : 4) . "s'" : 'SELECT 1',
				"SET sharded_id.move_hold = '" . ($method eq 'online' ? 'stop_replication' : 'copy_rows') . "'",
				"CALL sharded_id.move_shard($shard, '$to', method => '$method')",
				'RESET statement_timeout', 'SELECT pg_sleep(3600)');
			my $pid;
			if ($kind eq 'cancel')
			{
				$wait_at_hold->($err);
				$pid = $mover_pid->();
				is($route_locked->($shard) . '/' . $source_frozen->($from, $shard), '1/1',
					"$what: the move holds the route lock and the source's freeze");
				$router->safe_psql('router', "SELECT pg_cancel_backend($pid)");
			}
			else
			{
				$router->poll_query_until('router', q{SELECT count(*) > 0 FROM pg_stat_activity
					WHERE application_name = 'adv_mover' AND query LIKE '%pg_sleep(3600)%'}) or die "no timeout: $$err";
				$pid = $mover_pid->();
			}
			my $t0 = time;
			# The writers' shared locks come and go; the move's exclusive
			# ones must go.
			$router->poll_query_until('router', "SELECT count(*) = 0 FROM pg_locks WHERE locktype = 'advisory'
				AND classid = " . ROUTE_LOCK_CLASS . " AND objid = $shard AND objsubid = " . SHARD_LOCK_KIND . "
				AND mode = 'ExclusiveLock'") or die "$what: the route lock stays";
			$node{$from}->poll_query_until('app', "SELECT count(*) = 0 FROM pg_locks WHERE locktype = 'advisory'
				AND classid = " . FENCE_CLASS . " AND objid = $shard AND mode = 'ExclusiveLock'")
			  or die "$what: the freeze stays";
			my $took = time - $t0;
			ok($took < 5, sprintf('%s: the route lock and the freeze are gone within %.2f s', $what, $took));
			ok(writers_go_on($w, 10), "$what: the writers go on while the session stays");
			is($router->safe_psql('router', "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid"), '1',
				"$what: the cancelled session is still connected");
			is($router->safe_psql('router', "SELECT count(*) FROM pg_locks WHERE pid = $pid AND locktype = 'advisory'
				AND objsubid = " . SHARD_LOCK_KIND), '0', "$what: the session holds no lock of a move");
			$router->safe_psql('router', "SELECT pg_terminate_backend($pid)");
			eval { $h->finish; };
			like($$err, qr/57014: move \d+ of shard $shard to node "$to" was canceled at step "(stop_replication|copy_rows)"/,
				"$what: the move reports the cancel inside the freeze");
			$hold_off->();
			my ($r, $o, $e) = $router->psql('router', 'CALL sharded_id.recover_moves()');
			is($r, 0, "$what: recovery runs") or diag($e);
			is(map_owner($router, $shard), $from, "$what: the move rolled back, the map names $from");
			$settle->($what, $w, $shard);
		}
	}

	# 4. A dump move of a shard with triggers that change rows and write
	# outside the shard.
	{
		my $shard = 6;
		my $schema = sprintf('shard_%04d', $shard);
		my $what = "$mode, dump move with user triggers";
		my $from = map_owner($router, $shard);
		my ($to) = $other_nodes->($from);
		for my $n (sort keys %node)
		{
			$node{$n}->safe_psql('app', q{
				CREATE TABLE public.audit (n serial PRIMARY KEY, what text);
				CREATE FUNCTION public.again() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN NEW.caption := NEW.caption || ' again'; RETURN NEW; END $$;
				CREATE FUNCTION public.audit_row() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN INSERT INTO public.audit (what) VALUES (NEW.id); RETURN NEW; END $$;});
		}
		$node{$from}->safe_psql('app', "CREATE TRIGGER again BEFORE INSERT ON $schema.photos FOR EACH ROW EXECUTE FUNCTION public.again();
			CREATE TRIGGER audit AFTER INSERT ON $schema.users FOR EACH ROW EXECUTE FUNCTION public.audit_row()");
		my $w = $start_writers->($shard);
		ok(writers_go_on($w, 5), "$what: the writers commit");
		my ($r, $o, $e) = $router->psql('router', "CALL sharded_id.move_shard($shard, '$to', method => 'dump')");
		is($r, 0, "$what: the move succeeds") or diag($e);
		is(map_owner($router, $shard), $to, "$what: the map names $to");
		is($node{$to}->safe_psql('app', "SELECT count(*) FROM $schema.photos WHERE caption LIKE '% again again'"), '0',
			"$what: no row was changed by the copy");
		# The copied rows are the ones the source held; the target's audit
		# may name only rows written there after the switch.
		my %copied = map { $_ => 1 } keys %known,
		  split /\n/, $node{$from}->safe_psql('app', 'SELECT what FROM public.audit');
		my @outside = grep { $copied{$_} } split /\n/, $node{$to}->safe_psql('app', 'SELECT what FROM public.audit');
		is(scalar(@outside), 0, "$what: the copy wrote nothing outside the shard");
		is($node{$to}->safe_psql('app', "SELECT count(*) FROM pg_trigger WHERE tgrelid::regclass::text LIKE '$schema.%' AND NOT tgisinternal"),
			'2', "$what: the triggers came along");
		$settle->($what, $w, $shard);
		is($node{$to}->safe_psql('app', "SELECT count(*) FROM $schema.photos WHERE caption = 'during'"), '0',
			"$what: the writers' rows carry the source trigger's change");
	}

	# 5. A mover subject to FORCE row security is refused up front.
	{
		my $shard = 0;
		my $schema = sprintf('shard_%04d', $shard);
		my $what = "$mode, row security";
		my $from = map_owner($router, $shard);
		my ($to) = $other_nodes->($from);
		$node{$from}->safe_psql('app', "CREATE ROLE mover LOGIN; GRANT USAGE ON SCHEMA $schema TO mover;
			GRANT SELECT ON ALL TABLES IN SCHEMA $schema TO mover;
			ALTER TABLE $schema.photos ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
			CREATE POLICY only_some ON $schema.photos USING (id % 2 = 0)");
		my $server = $router->safe_psql('router', "SELECT sharded_id.node_server('$from')");
		$router->safe_psql('router', "ALTER USER MAPPING FOR PUBLIC SERVER \"$server\" OPTIONS (ADD user 'mover')");
		my $w = $start_writers->($shard);
		ok(writers_go_on($w, 5), "$what: the writers commit");
		my $journaled = $router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves');
		for my $method (qw(online dump))
		{
			my ($r, $o, $e) = $router->psql('router', "\\set VERBOSITY verbose\nCALL sharded_id.move_shard($shard, '$to', method => '$method')");
			isnt($r, 0, "$what: the $method move is refused");
			like($e, qr/42501: the role that moves shard $shard on node "$from" cannot bypass row security/,
				"$what: the $method move says why");
		}
		is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves'), $journaled, "$what: nothing was journaled");
		is($node{$to}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'"), '0',
			"$what: nothing was copied");
		$router->safe_psql('router', "ALTER USER MAPPING FOR PUBLIC SERVER \"$server\" OPTIONS (DROP user)");
		$settle->($what, $w, $shard);
	}

	# 6. Moves a->b and b->a at the same time.
	{
		my ($s1, $s2) = (3, 7);
		my $what = "$mode, crossing moves";
		my ($n1, $n2) = (map_owner($router, $s1), map_owner($router, $s2));
		my $w = $start_writers->($s1, $s2);
		ok(writers_go_on($w, 5), "$what: the writers commit");
		my @h;
		for my $m ([ $s1, $n2 ], [ $s2, $n1 ])
		{
			my ($out, $err) = ('', '');
			my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $rconn,
					'-c', "CALL sharded_id.move_shard($m->[0], '$m->[1]', method => 'online')" ],
				'>', \$out, '2>', \$err);
			push @h, [ $h, \$err, @$m ];
		}
		for my $m (@h)
		{
			my ($h, $err, $shard, $to) = @$m;
			$h->finish;
			like($$err, qr/moved shard $shard .* to node "$to"/, "$what: shard $shard moved to $to") or diag($$err);
			is(map_owner($router, $shard), $to, "$what: the map names $to for shard $shard");
		}
		$settle->($what, $w, $s1, $s2);
	}

	# 7. Crashes inside the last steps: after the source committed its
	# retirement, before the target registers; after the target
	# registered, before the switch.  Recovery rolls forward.
	for my $point (qw(retired registered))
	{
		for my $victim (qw(router source target))
		{
			my $shard = 4;
			my $what = "$mode, crash of the $victim at $point";
			my $from = map_owner($router, $shard);
			my ($to) = $other_nodes->($from);
			my $w = $start_writers->($shard);
			ok(writers_go_on($w, 5), "$what: the writers commit");
			$hold_on->();
			my ($h, $err) = $mover->("SET sharded_id.move_hold = '$point'", "CALL sharded_id.move_shard($shard, '$to')");
			$wait_at_hold->($err);
			is($node{$from}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard")
				  . '/' . $node{$to}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard"),
				$point eq 'retired' ? '0/0' : '0/1', "$what: the move is held where it should be");
			my $killed = $victim eq 'router' ? $router : $node{ $victim eq 'source' ? $from : $to };
			restart_node($killed, 'immediate');
			if ($victim eq 'router') { eval { $holder->finish; }; }
			else { $hold_off->(); }
			eval { $h->finish; };
			my ($r, $o, $e) = $router->psql('router', 'CALL sharded_id.recover_moves()');
			is($r, 0, "$what: recovery ran") or diag("$e\nmove: $$err");
			is($router->safe_psql('router', 'SELECT outcome FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1'), 'moved',
				"$what: the move finished");
			is(map_owner($router, $shard), $to, "$what: the map names $to");
			$settle->($what, $w, $shard);
		}
	}

	# 8. The router's clock steps back an hour during the catch-up.
	{
		my $shard = 4;
		my $what = "$mode, router clock stepped back 1 h in the catch-up";
		my $from = map_owner($router, $shard);
		my ($to) = $other_nodes->($from);
		my $w = $start_writers->($shard);
		ok(writers_go_on($w, 5), "$what: the writers commit");
		$hold_on->();
		my ($h, $err) = $mover->("SET sharded_id.move_hold = 'catch_up'", "CALL sharded_id.move_shard($shard, '$to')");
		$wait_at_hold->($err);
		my $before = $router->safe_psql('router', 'SELECT extract(epoch FROM clock_timestamp())');
		$router_clock->('-1h');
		my $after = $router->safe_psql('router', 'SELECT extract(epoch FROM clock_timestamp())');
		ok($after < $before - 3000, "$what: the router's clock went back");
		$hold_off->();
		$h->finish;
		like($$err, qr/moved shard $shard/, "$what: the move succeeds") or diag($$err);
		is(map_owner($router, $shard), $to, "$what: the map names $to");
		$settle->($what, $w, $shard);
		$router_clock->('+0');
	}

	# 9. Recovery from evidence: a move interrupted before its freeze,
	# then the shard retired by hand on the source; recovery refuses to
	# roll forward and changes nothing.
	{
		my $shard = 4;
		my $what = "$mode, shard retired by hand under an interrupted move";
		my $from = map_owner($router, $shard);
		my ($to) = $other_nodes->($from);
		$hold_on->();
		my ($h, $err) = $mover->("SET sharded_id.move_hold = 'catch_up'", "CALL sharded_id.move_shard($shard, '$to')");
		$wait_at_hold->($err);
		my $pid = $mover_pid->();
		$router->safe_psql('router', "SELECT pg_terminate_backend($pid)");
		eval { $h->finish; };
		$hold_off->();
		$node{$from}->safe_psql('app', "SELECT sharded_id.retire_shard($shard)");
		my $journal = $router->safe_psql('router', 'SELECT move_id FROM sharded_id.moves WHERE finished_at IS NULL');
		my ($r, $o, $e) = $router->psql('router', "\\set VERBOSITY verbose\nCALL sharded_id.recover_moves()");
		isnt($r, 0, "$what: recovery fails");
		like($e, qr/55000: move \d+ of shard $shard can be neither finished nor rolled back/, "$what: recovery says why");
		is(map_owner($router, $shard), $from, "$what: the map still names $from");
		is($node{$to}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard"), '0',
			"$what: the partial copy was not registered");
		is($router->safe_psql('router', 'SELECT move_id FROM sharded_id.moves WHERE finished_at IS NULL'), $journal,
			"$what: the move stays unfinished");
		is($node{$to}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_000$shard'"), '1',
			"$what: the copy on $to is kept for whoever sorts it out");
	}

	$_->stop for $router, values %node;
}
done_testing();
