# test/t/037_recover_crash.pl
#
# A crash of the router at every step of recovery and of the deferred
# cleanup.  Two writers run through the router the whole time, logging
# every id they saw committed.
#
# Each case first interrupts an online move of shard 1 where recovery must
# roll it forward: the router is stopped with an immediate shutdown at hold
# point 'retired' (the source committed its retirement, the target has not
# registered the shard) or 'registered' (the target registered it, the map
# still names the source).  Then CALL sharded_id.recover_moves() runs with
# sharded_id.move_hold set to one point of the recovery, waits there, and
# the router is stopped with an immediate shutdown again, and started.
# The points:
#  - recover_switch: in _move_resolve, before the switch of the map (after
#    the recovery registered the shard on the target, from 'retired');
#  - recover_switched: the switch committed, the ops tables not yet
#    pointed at the new node;
#  - recover_followed: the ops tables' switch committed, the cleanup next;
#  - every remote statement of the cleanup (_move_cleanup_hold):
#    disable_subscription_target, detach_subscription_target,
#    drop_subscription_target, drop_slot_source, drop_publication_source,
#    delete_mark_source, delete_mark_target, drop_schema_source (before the
#    old copy's drop), dropped_schema_source (after it, the drop committed
#    on the node, the router's transaction not);
#  - recover_switched again, in the next move_shard of the shard, which
#    finishes the interrupted move first.
# And the deferred cleanup's switch of the ops tables: a plain role reads
# ops.photos through a move, so the move is done with its cleanup pending
# and the ops tables still reading the old copy; recover_moves points them
# at the new node, commits, and drops the old copy.  The router is stopped
# at drop_schema_source (after the ops tables' switch, before the drop) and
# at dropped_schema_source (after the drop).
#
# After each crash, before any recovery: the shard map names the node
# that the point implies (the source before the switch, the target after),
# that node holds the shard's schema with every row written before and
# every id the writers saw committed; the ops table's partition of the
# shard is on the server of the node the point implies (the source until
# the ops tables' switch commits, the target after), which holds a copy of
# the schema, and reads; after the switch, the shard is registered on the
# node the map names, and a write and a read through the router succeed
# (retried on 40001 for at most 30 s).  Then the next recover_moves()
# finishes with no error or warning, and: the map names the target,
# which registers the shard and the source does not; every row and every
# committed id is there; a routed write and read succeed; the ops table
# reads the target, all of its rows; no slot, publication, subscription or
# mark on either node, no old copy of the schema on the source, no record
# of the move in sharded_id.move_cleanup, every move finished; no id repeats
# over the nodes.  The test notes how many times it stopped the router.
#
# These assertions fail on a recovery shaped as 1.6's was, which switched
# the map, pointed the ops tables at the new node and dropped the old copy
# in one router transaction: the drop commits on the node at once, so the
# crash at dropped_schema_source rolls the switch back and leaves the map
# and the ops table naming the source, whose copy is gone.  The node the
# map names then lacks the rows, routed writes get 40001 for good, the ops
# table's read fails, and the next recover_moves() fails too.  A deferred
# cleanup that points the ops tables at the new node and drops the old
# copy in one transaction leaves, at the same point, the ops table reading
# the dropped copy.
#
# The points added in 2.0 (recover_switch, recover_switched,
# recover_followed, dropped_*) are skipped, each with its reason, when the
# installed build does not have them.
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
my $shard = 1;
my $schema = sprintf('shard_%04d', $shard);
my %node = (
	a => data_node('rcr_a', shards => [ 0 .. 3 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	b => data_node('rcr_b', shards => [], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }));
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 3 }, $shard_count);
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 80) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
	CREATE ROLE analyst LOGIN;
	GRANT USAGE ON SCHEMA ops TO analyst; GRANT SELECT ON ALL TABLES IN SCHEMA ops TO analyst;
});
my $user = $router->safe_psql('router', "SELECT min(user_id) FROM demo_users WHERE sharded_id.shard_id(user_id) = $shard");

my $crashes = 0;
my $other = sub { return $_[0] eq 'a' ? 'b' : 'a'; };

# The ids of the shard's tables on a node, or undef when it has no such
# schema.
my $ids_on = sub {
	my ($n) = @_;
	my ($r, $o, $e) = $node{$n}->psql('app', "SELECT id FROM $schema.users UNION ALL SELECT id FROM $schema.photos");
	return $r == 0 ? { map { ($_ => 1) } split /\n/, $o } : undef;
};
# Every id written to the shard so far that must survive: its rows before
# the first move, and what the writers saw committed.
my %written = %{ $ids_on->('a') };
my $missing_on = sub {
	my ($n, @more) = @_;
	my $there = $ids_on->($n) // {};
	return scalar(grep { !$there->{$_} } (keys %written, @more));
};
my $registered = sub {
	my ($n) = @_;
	return $node{$n}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard");
};
my $schema_on = sub {
	my ($n) = @_;
	return $node{$n}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'");
};
# The server of the shard's partition of ops.photos.
my $ops_server = sub {
	return $router->safe_psql('router', qq{SELECT s.srvname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_foreign_table f ON f.ftrelid = c.oid
		JOIN pg_foreign_server s ON s.oid = f.ftserver
		WHERE i.inhparent = 'ops.photos'::regclass AND pg_get_expr(c.relpartbound, c.oid) = 'FOR VALUES IN ($shard)'});
};
my $server_of = sub { return $router->safe_psql('router', "SELECT sharded_id.node_server('$_[0]')"); };
# The ops table's read of the shard: its count, or undef and the error.
my $ops_count = sub {
	my ($r, $o, $e) = $router->psql('router', "SELECT count(*) FROM ops.photos WHERE sharded_id.shard_id(id) = $shard");
	return $r == 0 ? ($o, '') : (undef, $e);
};
# A write and a read through the router, each retried on 40001 for 30 s
# at most: the new row's id read back, or undef and the last error.
my $routed = sub {
	my ($tag) = @_;
	my $deadline = time + 30;
	my $err = '';
	while (time < $deadline)
	{
		my ($r, $o, $e) = $router->psql('router', "\\set VERBOSITY verbose\n"
			  . "SELECT app_api.add_photo($user, '$tag') AS id \\gset\n"
			  . "SELECT id FROM app_api.photos_of($user) WHERE id = :id");
		if ($r == 0 && $o =~ /^(\d+)$/)
		{
			$written{$1} = 1;
			return ($1, '');
		}
		$err = $r == 0 ? "read back: '$o'" : $e;
		return (undef, $err) unless $e =~ /\b40001\b/;
		select(undef, undef, undef, 0.2);
	}
	return (undef, "not within 30 s: $err");
};
my $stop_router = sub {
	restart_node($router, 'immediate');
	$crashes++;
};

# A psql session of the router running @sql with sharded_id.move_hold =
# $point, named $app.
my $held_call = sub {
	my ($app, $point, @sql) = @_;
	my ($out, $err) = ('', '');
	local $ENV{PGAPPNAME} = $app;
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $router->connstr('router'),
			'-c', "SET sharded_id.move_hold = '$point'", map { ('-c', $_) } @sql ],
		'>', \$out, '2>', \$err);
	return ($h, \$err);
};
# Wait, 60 s at most, until the session named $app waits at its hold
# point; false if it ended or did not get there.
my $wait_for_hold = sub {
	my ($app) = @_;
	my $deadline = time + 60;
	my $seen = 0;
	while (time < $deadline)
	{
		my ($present, $waiting) = split /\|/, $router->safe_psql('router', qq{SELECT count(*) || '|' || count(l.pid)
			FROM pg_stat_activity a LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory'
			  AND l.classid = } . HOLD_CLASS . qq{ AND l.objid = 0 AND NOT l.granted
			WHERE a.application_name = '$app'});
		return 1 if $waiting > 0;
		$seen ||= $present > 0;
		return 0 if $seen && $present == 0;
		select(undef, undef, undef, 0.1);
	}
	return 0;
};
# Run @sql with the hold at $point, and stop the router while it waits
# there.
my $crash_at = sub {
	my ($what, $app, $point, @sql) = @_;
	hold_on($router);
	my ($h, $err) = $held_call->($app, $point, @sql);
	my $there = $wait_for_hold->($app);
	$stop_router->() if $there;
	hold_off($router);
	eval { $h->finish; };
	ok($there, "$what: stopped at $point") or diag($$err);
	return $there;
};

# Whether the installed build has a hold point: the new ones are looked
# for in the source of the extension's functions.
my %added = (
	recover_switch => q{'recover_switch'},
	recover_switched => q{'recover_switched'},
	recover_followed => q{'recover_followed'},
	dropped_schema_source => q{'dropped'});
my $has_point = sub {
	my ($point) = @_;
	return 1 unless $added{$point};
	return $router->safe_psql('router', qq{SELECT count(*) > 0 FROM pg_proc
		WHERE pronamespace = 'sharded_id'::regnamespace AND strpos(prosrc, \$p\$$added{$point}\$p\$) > 0}) eq 't';
};

# What must hold once the next recover_moves() has run, with the writers
# stopped: the shard on $to with every row, nothing of the move left.
my $after_recovery = sub {
	my ($what, $from, $to) = @_;
	is(map_owner($router, $shard), $to, "$what: the map names $to");
	is($registered->($to) . '/' . $registered->($from), '1/0', "$what: $to registers the shard, $from does not");
	is($missing_on->($to), 0, "$what: every row written and committed is on $to (" . scalar(keys %written) . ' ids)');
	my ($id, $err) = $routed->("after $what");
	ok(defined $id, "$what: a write and a read through the router succeed") or diag($err);
	is($ops_server->(), $server_of->($to), "$what: the ops table reads the shard on $to");
	my ($count, $oerr) = $ops_count->();
	is($count, $node{$to}->safe_psql('app', "SELECT count(*) FROM $schema.photos"),
		"$what: the ops table reads every photo of the shard") or diag($oerr);
	for my $n (sort keys %node)
	{
		is($node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots)
			|| '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_subscription)
			|| '/' || (SELECT count(*) FROM sharded_id.move_marks)}), '0/0/0/0',
			"$what: no slot, publication, subscription or mark on $n");
	}
	is($schema_on->($from) . '/' . $schema_on->($to), '0/1', "$what: no old copy on $from, the new one on $to");
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.move_cleanup'), '0',
		"$what: no cleanup record left");
	is($router->safe_psql('router', q{SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL OR state <> 'finished'}),
		'0', "$what: every move is finished");
	is($router->safe_psql('router', 'SELECT outcome FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1'), 'moved',
		"$what: the move's outcome is moved");
	my @ids = all_ids(values %node);
	my %seen;
	is(scalar(grep { $seen{$_}++ } @ids), 0, "$what: no id repeats over the nodes (" . scalar(@ids) . ' ids)');
};

# Right after a crash of recovery: the map names $owner, which holds
# every row; the ops table reads $ops_node, which holds a copy of the
# shard's schema; after the switch, the shard takes writes on $owner.
my $after_crash = sub {
	my ($what, $w, $owner, $switched, $ops_node) = @_;
	my @committed = committed($w);
	my $mapped = map_owner($router, $shard);
	is($mapped, $owner, "$what: the map names $owner");
	is($missing_on->($mapped, @committed), 0, "$what: the node the map names holds the shard's schema with every row "
		  . 'written and committed (' . scalar(@committed) . ' by the writers)');
	my $read = $ops_server->();
	is($read, $server_of->($ops_node), "$what: the ops table reads the shard on $ops_node");
	my ($read_node) = grep { $server_of->($_) eq $read } sort keys %node;
	is(defined $read_node ? $schema_on->($read_node) : 'no node', '1', "$what: the node the ops table reads holds a copy of the shard's schema");
	my ($count, $oerr) = $ops_count->();
	ok(defined $count, "$what: the ops table's read of the shard succeeds") or diag($oerr);
	if ($switched)
	{
		is($registered->($owner), '1', "$what: $owner registers the shard");
		my ($id, $err) = $routed->("after $what");
		ok(defined $id, "$what: a write and a read through the router succeed") or diag($err);
	}
};

my $recover = sub {
	my ($what) = @_;
	my ($r, $o, $e) = $router->psql('router', 'CALL sharded_id.recover_moves()');
	is($r, 0, "$what: the next recover_moves() finishes") or diag($e);
	unlike($e, qr/WARNING|ERROR/, "$what: with no warning") or diag($e);
};

my $start_writers = sub {
	my ($tag) = @_;
	my $w = logged_writers($router, $tag, $shard);
	ok(writers_go_on($w, 3), "$tag: the writers commit");
	return $w;
};
my $stop_writers = sub {
	my ($w, $what) = @_;
	ok(writers_go_on($w, 3), "$what: the writers commit after recovery");
	stop_writers($w);
	$written{$_} = 1 for committed($w);
};

# A move of the shard to $to, stopped with the router at $interrupt.
my $interrupted_move = sub {
	my ($what, $to, $interrupt) = @_;
	$crash_at->("$what, the move", 'rcr_move', $interrupt, "CALL sharded_id.move_shard($shard, '$to')")
	  or BAIL_OUT("the move did not reach $interrupt");
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '1',
		"$what: the move is unfinished");
};

# Recovery, stopped at each point.  [point, where the move was
# interrupted, whether the map has switched when the router stops, whether
# the ops tables have, the call that recovers]
my @cases = (
	[ 'recover_switch', 'retired', 0, 0 ],
	[ 'recover_switch', 'registered', 0, 0 ],
	[ 'recover_switched', 'retired', 1, 0 ],
	[ 'recover_followed', 'registered', 1, 1 ],
	[ 'disable_subscription_target', 'retired', 1, 1 ],
	[ 'detach_subscription_target', 'registered', 1, 1 ],
	[ 'drop_subscription_target', 'retired', 1, 1 ],
	[ 'drop_slot_source', 'registered', 1, 1 ],
	[ 'drop_publication_source', 'retired', 1, 1 ],
	[ 'delete_mark_source', 'registered', 1, 1 ],
	[ 'delete_mark_target', 'retired', 1, 1 ],
	[ 'drop_schema_source', 'registered', 1, 1 ],
	[ 'dropped_schema_source', 'retired', 1, 1 ],
	[ 'recover_switched', 'registered', 1, 0, 'move_shard' ]);
my $n = 0;
for my $case (@cases)
{
	my ($point, $interrupt, $switched, $followed, $by) = @$case;
	$by //= 'recover_moves';
	$n++;
	my $from = map_owner($router, $shard);
	my $to = $other->($from);
	my $what = "$n. $by stopped at $point (move $from to $to stopped at $interrupt)";
  SKIP:
	{
		skip "$what: the installed sharded_id has no hold point $point", 1 unless $has_point->($point);
		my $w = $start_writers->("w$n");
		$interrupted_move->($what, $to, $interrupt);
		my $call = $by eq 'move_shard' ? "CALL sharded_id.move_shard($shard, '$to')" : 'CALL sharded_id.recover_moves()';
		$crash_at->($what, 'rcr_recover', $point, $call) or BAIL_OUT("$what: the recovery did not reach $point");
		$after_crash->($what, $w, $switched ? $to : $from, $switched, $followed ? $to : $from);
		$recover->($what);
		$stop_writers->($w, $what);
		$after_recovery->($what, $from, $to);
	}
}

# The deferred cleanup: a move past a reader of the ops tables leaves them
# on the old copy; recover_moves switches them, commits, and drops it.
for my $point (qw(drop_schema_source dropped_schema_source))
{
	$n++;
	my $from = map_owner($router, $shard);
	my $to = $other->($from);
	my $what = "$n. deferred cleanup stopped at $point (move $from to $to past a reader of the ops tables)";
  SKIP:
	{
		skip "$what: the installed sharded_id has no hold point $point", 1 unless $has_point->($point);
		my $w = $start_writers->("w$n");
		my $reader = IPC::Run::start([ 'psql', '-X', '-q', '-d', $router->connstr('router'),
			'-c', 'SET application_name = ops_reader', '-c', 'SET ROLE analyst',
			'-c', 'SELECT FROM ops.photos WHERE false; SELECT pg_sleep(3600)' ], '>', \my $rout, '2>', \my $rerr);
		$router->poll_query_until('router', q{SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
			WHERE l.relation = 'ops.photos'::regclass AND a.application_name = 'ops_reader' AND l.granted})
		  or BAIL_OUT("the reader took no lock: $rerr");
		my ($r, $o, $e) = $router->psql('router', "CALL sharded_id.move_shard($shard, '$to')");
		is($r, 0, "$what: the move is done") or diag($e);
		$router->safe_psql('router', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ops_reader'});
		$reader->finish;
		is($router->safe_psql('router', q{SELECT outcome || '|' || state FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1}),
			'moved|cleanup pending', "$what: its cleanup is pending");
		is($ops_server->() . '/' . $schema_on->($from), $server_of->($from) . '/1',
			"$what: the ops table still reads the old copy on $from, which is kept");
		$crash_at->($what, 'rcr_recover', $point, 'CALL sharded_id.recover_moves()')
		  or BAIL_OUT("$what: the recovery did not reach $point");
		$after_crash->($what, $w, $to, 1, $to);
		is($schema_on->($from), $point eq 'drop_schema_source' ? '1' : '0',
			"$what: the old copy is " . ($point eq 'drop_schema_source' ? 'still there' : 'dropped'));
		$recover->($what);
		$stop_writers->($w, $what);
		$after_recovery->($what, $from, $to);
	}
}

note("the router was stopped with an immediate shutdown $crashes times");
done_testing();
