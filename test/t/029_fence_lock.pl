# test/t/029_fence_lock.pl
#
# No plain role on a data node can hold a lock that stops a move: the
# shard's fence, which enter_shard takes and a move's freeze waits for, is
# a lock tag that pg_advisory_lock() and its kin cannot take.
#
# 1. A plain role (LOGIN only) on the source takes pg_advisory_lock_shared
#    (FENCE_CLASS, 5), the old fence's key, in an idle session; another
#    session of it holds pg_advisory_xact_lock_shared on the same key idle
#    in a transaction; a third parks it in a prepared transaction.  A
#    move of shard 5 (the dump method, whose freeze takes the fence) under 2 pgbench writers (without --max-tries)
#    completes, with 0 failed writes, every row on the new owner and no id
#    repeated, and the plain role's sessions are left alone.
# 2. A transaction that entered the shard (enter_shard) cannot be
#    prepared (0A000), and leaves no prepared transaction nor fence.
# 3. A writer on the node that entered the shard and stays idle in its
#    transaction is ended by the online move's freeze (at its compare),
#    and the move back completes, again with 0 failed writes and no row
#    lost.  (It has written nothing: an online move's replication slot
#    waits for every transaction that has an id, before any freeze.)
# 4. A reader (LOGIN only) that entered the shard and keeps a statement
#    running (pg_sleep) holds the fence: the freeze ends it once half its
#    freeze_timeout has passed (sharded_id.move_end_blockers, on by
#    default), logs so, and the move completes within that timeout with 0
#    failed writes.
#    4b. The same reader beside a writer on the node whose transaction
#    entered the shard before the freeze and goes on in short statements
#    past half of freeze_timeout (a dump move, held before its freeze):
#    the freeze ends the reader, never the writer, which commits, and the
#    move completes.  2.0 ended both.
# 5. Transaction ids held open on the source by sessions that do not touch
#    shard 5 (a LOGIN-only role's, a writer's that entered shard 3, a
#    superuser's in another database): an online move's replication slot
#    waits for them, and the move, by default (move_end_blockers on), ends
#    none of them: it fails soon after its timeout (6 s), naming each
#    session's pid, role, database and the age of its transaction, leaves
#    no slot behind and rolls back at once; once they end, it completes.
#    2.0 ended every one of them once half the timeout had passed.
# 6. A move canceled, then one terminated, while its slot waits for such a
#    transaction (move_end_blockers off, timeout 10 min): it ends at once,
#    no call on the source still waits, and no slot appears once the
#    transaction ends.  1.6's cancel did nothing, and after a terminate the
#    source made the slot when the transaction ended.
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
	a => data_node('fence_a', shards => [ 0 .. 7 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }, conf => 'max_prepared_transactions = 10'),
	b => data_node('fence_b', shards => [], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }, conf => 'max_prepared_transactions = 10'));
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 7 }, $shard_count);
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 200) g;
});
for my $n (values %node)
{
	$n->safe_psql('app', q{CREATE ROLE mallory LOGIN; CREATE ROLE node_writer LOGIN;});
}
# The shard's fence: the tag (FENCE_CLASS, shard 5, field 4 =
# SHARD_LOCK_KIND); pg_advisory_*(FENCE_CLASS, 5) takes (FENCE_CLASS, 5,
# KEY_PAIR_KIND), the old fence's key.
my ($fence_class, $shard_kind, $key_pair) = (FENCE_CLASS, SHARD_LOCK_KIND, KEY_PAIR_KIND);
my $fence_locks = sub {
	my ($n, $mode) = @_;
	return $n->safe_psql('app', qq{SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $fence_class AND objid = 5 AND objsubid = $shard_kind AND mode = '$mode' AND granted});
};

# A session on data node $n as $role that runs $sql and stays as it is;
# returns the harness and its input and output.
my $hold = sub {
	my ($n, $role, $name, $sql) = @_;
	my ($in, $out) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $n->connstr('app') . " user=$role application_name=$name" ],
		'<', \$in, '>', \$out, '2>&1');
	$in = "$sql\n\\echo held\n";
	$h->pump until $out =~ /held/;
	return ($h, \$in, \$out);
};

# 1. The plain role, with every SQL-level advisory call on the old key.
{
	my $a = $node{a};
	my ($h1, $in1, $out1) = $hold->($a, 'mallory', 'mallory_session', "SELECT pg_advisory_lock_shared($fence_class, 5);");
	my ($h2, $in2, $out2) = $hold->($a, 'mallory', 'mallory_xact',
		"BEGIN; SELECT pg_advisory_xact_lock_shared($fence_class, 5);");
	$a->safe_psql('app', qq{BEGIN; SELECT pg_advisory_xact_lock_shared($fence_class, 5); PREPARE TRANSACTION 'park5'},
		extra_params => [ '-U', 'mallory' ]);
	is($a->safe_psql('app', q{SELECT gid || ' ' || owner FROM pg_prepared_xacts}), 'park5 mallory',
		'the plain role parked the old key in a prepared transaction');
	is($a->safe_psql('app', qq{SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $fence_class AND objid = 5 AND objsubid = $key_pair AND granted}), 3,
		'the plain role holds the old key in two sessions and a prepared transaction');
	is($fence_locks->($a, 'ShareLock') + $fence_locks->($a, 'ExclusiveLock'), 0, 'none of them is the shard\'s fence');
	# The dump method: an online move's replication slot would wait for
	# the prepared transaction, as logical decoding waits for every
	# transaction that has an id, whatever its locks.
	my $err = move_under_writers($router, \%node, 5, 'plain role holding the old fence key', 'dump');
	unlike($err, qr/ended session/, 'the freeze ended no session');
	is($a->safe_psql('app', q{SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'mallory_%'}), 2,
		'the plain role\'s sessions were left alone');
	is($a->safe_psql('app', 'SELECT count(*) FROM sharded_id.shards WHERE shard_id = 5'), 0, 'the source gave shard 5 away');
	$a->safe_psql('app', q{ROLLBACK PREPARED 'park5'});
	for ([ $h1, $in1 ], [ $h2, $in2 ])
	{
		${ $_->[1] } = "\\q\n";
		$_->[0]->finish;
	}
}

# 2. A transaction that entered the shard cannot be prepared.
{
	my $b = $node{ map_owner($router, 5) };
	$b->safe_psql('app', q{GRANT USAGE ON SCHEMA shard_0005 TO node_writer;
		GRANT INSERT, SELECT ON ALL TABLES IN SCHEMA shard_0005 TO node_writer;
		GRANT USAGE ON ALL SEQUENCES IN SCHEMA shard_0005 TO node_writer;});
	my $superuser = $b->safe_psql('app', 'SELECT current_user');
	for my $role ('node_writer', 'mallory', $superuser)
	{
		my ($ret, $o, $e) = $b->psql('app', q{BEGIN; SELECT sharded_id.enter_shard(5); PREPARE TRANSACTION 'entered5'},
			extra_params => [ '-U', $role, '-v', 'VERBOSITY=verbose' ]);
		like($e, qr/0A000: cannot prepare a transaction that entered shard 5/,
			"a transaction of $role that entered shard 5 cannot be prepared (0A000)");
		is($b->safe_psql('app', 'SELECT count(*) FROM pg_prepared_xacts'), 0, 'no prepared transaction is left');
		is($fence_locks->($b, 'ShareLock'), 0, 'and no fence is held');
	}
	# The same session goes on: a retry after the refusal enters and commits.
	my ($ret, $o, $e) = $b->psql('app', q{BEGIN; SELECT sharded_id.enter_shard(5); PREPARE TRANSACTION 'entered5';
		BEGIN; SELECT sharded_id.enter_shard(5); COMMIT; SELECT count(*) FROM pg_prepared_xacts},
		on_error_stop => 0, extra_params => [ '-U', 'node_writer' ]);
	is($o, "shard_0005\nshard_0005\n0", 'the same session enters the shard again after the refusal, and commits');
	# A plain role's pg_advisory_xact_lock_shared on the old key is not the fence.
	($ret, $o, $e) = $b->psql('app', qq{BEGIN; SELECT pg_advisory_xact_lock_shared($fence_class, 5);
		SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 5 AND objsubid = $shard_kind AND pid = pg_backend_pid(); ROLLBACK},
		extra_params => [ '-U', 'mallory' ]);
	like($o, qr/^0$/m, 'pg_advisory_xact_lock_shared takes no lock of field 4 = 3');
}

# 3. A writer on the node idle in its transaction after enter_shard.
{
	my $from = map_owner($router, 5);
	my $n = $node{$from};
	my ($h, $in, $out) = $hold->($n, 'node_writer', 'idle_writer',
		q{BEGIN; SELECT sharded_id.enter_shard(5); SELECT count(*) >= 0 FROM shard_0005.photos;});
	like($$out, qr/^shard_0005$/m, 'the writer entered shard 5');
	is($fence_locks->($n, 'ShareLock'), 1, 'and holds its fence in share mode');
	move_under_writers($router, \%node, 5, 'writer idle in transaction after enter_shard');
	ok($n->poll_query_until('app', q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'idle_writer'}),
		'the freeze ended the idle session that held the fence');
	ok($n->log_contains(qr/WARNING:  ended session \d+ of role "node_writer", idle in a transaction for .* while it held the fence of shard 5/),
		'the source logged that it ended the session, naming its role');
	$$in = "SELECT 1;\n\\q\n";
	eval { $h->finish; };
	my $to = map_owner($router, 5);
	is($fence_locks->($_, 'ShareLock') + $fence_locks->($_, 'ExclusiveLock'), 0, 'no fence is left on ' . $_->name)
	  for values %node;
}

# 4. A reader that entered the shard and keeps running.
{
	my $from = map_owner($router, 5);
	my $n = $node{$from};
	my ($h, $in, $out) = $hold->($n, 'mallory', 'sleeping_reader', q{BEGIN; SELECT sharded_id.enter_shard(5);});
	$$in .= "SELECT pg_sleep(600);\n";
	$h->pump_nb;
	ok($n->poll_query_until('app', q{SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = 'sleeping_reader' AND state = 'active' AND query LIKE '%pg_sleep%'}),
		'the reader holds the fence of shard 5 in a running statement');
	my $started = time;
	move_under_writers($router, \%node, 5, 'a reader running in the shard');
	cmp_ok(time - $started, '<', 60, 'the move did not wait for the reader\'s statement to end');
	ok($n->poll_query_until('app', q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'sleeping_reader'}),
		'the freeze ended the reader');
	ok($n->log_contains(qr/WARNING:  ended session \d+ of role "mallory", which still held the fence of shard 5 after half of/),
		'the source logged that it ended the reader, naming its role');
	ok(!$n->log_contains(qr/ended session \d+ of role "(?!mallory")[^"]*", which still held the fence of shard 5/),
		'and ended no writer of the application');
	eval { $h->finish; };
	is($fence_locks->($_, 'ShareLock') + $fence_locks->($_, 'ExclusiveLock'), 0, 'no fence is left on ' . $_->name)
	  for values %node;
}

# 4b. An application's writer on the source whose transaction entered the
# shard before the freeze and goes on in short statements past half of
# freeze_timeout, beside a LOGIN-only role that holds the fence in one long
# statement: the freeze ends the role's session, not the writer's, waits for
# the writer's commit, and the dump move completes.
{
	my $from = map_owner($router, 5);
	my ($to) = grep { $_ ne $from } sort keys %node;
	my $n = $node{$from};
	# The move waits before its freeze while this session holds the hold lock.
	my ($hold_in, $hold_out) = ("SELECT pg_advisory_lock(1936222579, 0);\n\\echo held\n", '');
	my $hold_h = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $router->connstr('router') . ' application_name=move_holder' ],
		'<', \$hold_in, '>', \$hold_out, '2>&1');
	$hold_h->pump until $hold_out =~ /held/;
	my ($mover_out, $mover_err) = ('', '');
	my $mover = IPC::Run::start([ 'psql', '-X', '-q', '-d', $router->connstr('router') . ' application_name=held_mover',
			'-c', "SET sharded_id.move_hold = 'freeze'",
			'-c', "CALL sharded_id.move_shard(5, '$to', method => 'dump', freeze_timeout => '20 s')" ],
		'>', \$mover_out, '2>', \$mover_err);
	$router->poll_query_until('router', q{SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = 'held_mover' AND wait_event = 'advisory'}) or die "the move does not wait: $mover_err";
	my ($rh, $rin) = $hold->($n, 'mallory', 'long_reader', q{BEGIN; SELECT sharded_id.enter_shard(5);});
	$$rin .= "SELECT pg_sleep(600);\n";
	$rh->pump_nb;
	# The writer's short statements, 15 s of them (past half of 20 s from
	# the freeze's start), never idle, then its commit.
	my ($wh, $win, $wout) = $hold->($n, 'node_writer', 'short_writer', q{BEGIN; SELECT sharded_id.enter_shard(5);});
	$$win .= ("SELECT pg_sleep(0.1);\n" x 150) . "COMMIT;\n\\echo committed\n";
	$wh->pump_nb;
	is($fence_locks->($n, 'ShareLock'), 2, 'the reader and the writer hold the fence before the freeze');
	# Released: the freeze waits for the fence on the source.
	$hold_in .= "SELECT pg_advisory_unlock(1936222579, 0);\n";
	$hold_h->pump_nb;
	$n->poll_query_until('app', qq{SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $fence_class
		AND objid = 5 AND objsubid = $shard_kind AND mode = 'ExclusiveLock'}, 't') or die "the freeze does not wait: $mover_err";
	my $freeze_seen = time;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while ($$wout !~ /committed|terminat|closed/ && $wh->pumpable && time < $deadline)
	{
		$wh->pump_nb;
		select(undef, undef, undef, 0.1);
	}
	like($$wout, qr/committed/, 'the writer went on past half of freeze_timeout and committed');
	unlike($$wout, qr/FATAL|terminat/, 'the writer was not ended');
	cmp_ok(time - $freeze_seen, '>', 10, 'the writer held the fence past half of the freeze\'s 20 s');
	$mover->finish;
	like($mover_err, qr/moved shard 5 .* by method dump/, 'the dump move completed') or diag($mover_err);
	unlike($mover_err, qr/ERROR/, 'without an error');
	is(map_owner($router, 5), $to, 'the map names the target');
	ok($n->log_contains(qr/ended session \d+ of role "mallory", which still held the fence of shard 5 after half of 00:00:20, in one statement/),
		'the freeze ended the LOGIN-only role\'s long statement');
	ok(!$n->log_contains(qr/ended session \d+ of role "node_writer", which still held the fence/),
		'and not the writer\'s session');
	$$wout = '';
	$$win .= "\\q\n";
	eval { $wh->finish; };
	eval { $rh->finish; };
	$hold_in .= "\\q\n";
	$hold_h->finish;
}

# 5. Open transaction ids on the source that have nothing to do with the
# shard: a LOGIN-only role's, an application writer's on another shard, a
# superuser's in another database.
{
	my $from = map_owner($router, 5);
	my ($to) = grep { $_ ne $from } sort keys %node;
	my $n = $node{$from};
	# Shard 3 on the source too, for its writer.
	$router->safe_psql('router', "CALL sharded_id.move_shard(3, '$from', method => 'dump')")
	  if map_owner($router, 3) ne $from;
	my ($h1, $in1) = $hold->($n, 'mallory', 'xid_holder', q{BEGIN; SELECT txid_current() > 0;});
	my ($h2, $in2, $out2) = $hold->($n, 'node_writer', 'shard3_writer',
		q{BEGIN; SELECT sharded_id.enter_shard(3); SELECT txid_current() > 0;});
	like($$out2, qr/^shard_0003\nt$/m, 'a writer entered shard 3 on the source and holds a transaction id');
	my $superuser = $n->safe_psql('app', 'SELECT current_user');
	my ($h3, $in3, $out3) = ('', '', '');
	{
		my ($in, $out) = ('', '');
		$h3 = IPC::Run::start([ 'psql', '-X', '-A', '-t', '-d', $n->connstr('postgres') . ' application_name=other_db' ],
			'<', \$in, '>', \$out, '2>&1');
		$in = "BEGIN; SELECT txid_current() > 0;\n\\echo held\n";
		$h3->pump until $out =~ /held/;
		$in3 = \$in;
	}
	my %pid = map { $_ => $n->safe_psql('app', "SELECT pid FROM pg_stat_activity WHERE application_name = '$_'") }
	  qw(xid_holder shard3_writer other_db);
	my $started = time;
	my ($ret, $o, $e) = $router->psql('router', "CALL sharded_id.move_shard(5, '$to', method => 'online', timeout => '6 s')");
	my $took = time - $started;
	isnt($ret, 0, 'the move fails behind open transaction ids that do not touch the shard, by default');
	cmp_ok($took, '<', 6 + $PostgreSQL::Test::Utils::timeout_default / 6, "it ends soon after its timeout ($took s)");
	like($e, qr/the replication slot of move \d+ was not made on node "$from" within 00:00:06/,
		'and says the slot was not made within its timeout');
	like($e, qr/\b$pid{xid_holder} \(role "mallory", database "app", idle in transaction, in a transaction for \d\d:\d\d:\d\d\)/,
		'naming the LOGIN-only role\'s session: pid, role, database, age');
	like($e, qr/\b$pid{shard3_writer} \(role "node_writer", database "app", idle in transaction, in a transaction for /,
		'naming the writer of shard 3');
	like($e, qr/\b$pid{other_db} \(role "$superuser", database "postgres", idle in transaction, in a transaction for /,
		'naming the superuser\'s session in another database');
	unlike($e, qr/ended \d+ session/, 'saying it ended no session');
	is($n->safe_psql('app', q{SELECT count(*) FROM pg_stat_activity
		WHERE application_name IN ('xid_holder', 'shard3_writer', 'other_db') AND backend_xid IS NOT NULL}), 3,
		'the three sessions are left alone, in their transactions');
	is($n->safe_psql('app', q{SELECT count(*) FROM pg_replication_slots}), 0, 'no slot is left on the source');
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '0',
		'the move was rolled back at once');
	is(map_owner($router, 5), $from, 'the shard stays where it was');
	for ([ $h1, $in1 ], [ $h2, $in2 ], [ $h3, $in3 ])
	{
		${ $_->[1] } .= "COMMIT;\n\\q\n";
		eval { $_->[0]->finish; };
	}
	$started = time;
	($ret, $o, $e) = $router->psql('router', "CALL sharded_id.move_shard(5, '$to', method => 'online', timeout => '20 s')");
	is($ret, 0, 'once they have ended, the move completes') or diag($e);
	is(map_owner($router, 5), $to, 'the map names the target');
}

# 6. A move canceled, then one terminated, while its replication slot waits
# for an open transaction id on the source (sharded_id.move_end_blockers
# off, a long timeout): each ends at once, and nothing of it still waits on
# the source: once the session that held the transaction id ends, no slot
# appears.
for my $how (qw(cancel terminate))
{
	my $from = map_owner($router, 5);
	my ($to) = grep { $_ ne $from } sort keys %node;
	my $n = $node{$from};
	my ($h, $in) = $hold->($n, 'mallory', "xid_holder_$how", q{BEGIN; SELECT txid_current() > 0;});
	my ($out, $err) = ('', '');
	my $mover = IPC::Run::start([ 'psql', '-X', '-q', '-d', $router->connstr('router') . " application_name=slot_mover",
			'-c', 'SET sharded_id.move_end_blockers = off',
			'-c', "CALL sharded_id.move_shard(5, '$to', method => 'online', timeout => '10 min')" ],
		'>', \$out, '2>', \$err);
	# The source's call that makes the slot (sharded_id._node_create_slot)
	# waits for the transaction id.
	$n->poll_query_until('app', q{SELECT count(*) = 1 FROM pg_stat_activity
		WHERE query LIKE '%sharded\_id.\_node\_create\_slot(%' AND wait_event_type = 'Lock'
		  AND pid <> pg_backend_pid()}) or die "$how: the slot's creation does not wait: $err";
	my $pid = $router->safe_psql('router', q{SELECT pid FROM pg_stat_activity WHERE application_name = 'slot_mover'});
	my $t0 = time;
	$router->safe_psql('router', "SELECT pg_${how}_backend($pid)");
	eval { $mover->finish; };
	ok(time - $t0 < 15, "$how: the move ends within 15 s") or diag($err);
	like($err, $how eq 'cancel' ? qr/cancel/i : qr/terminat|closed the connection/i, "$how: the move says how it ended");
	ok($n->poll_query_until('app', q{SELECT count(*) = 0 FROM pg_stat_activity
		WHERE query LIKE '%sharded\_id.\_node\_create\_slot(%' AND pid <> pg_backend_pid()}),
		"$how: no call on the source still waits to make the slot");
	is($n->safe_psql('app', "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'xid_holder_$how'"), 1,
		"$how: while the session holding the transaction id is still open");
	$n->safe_psql('app', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'xid_holder_$how'");
	eval { $h->finish; };
	$n->poll_query_until('app', "SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'xid_holder_$how'")
	  or die "$how: the holder stays";
	is($n->safe_psql('app', q{SELECT count(*) FROM pg_replication_slots}), 0,
		"$how: once it ended, no slot is made on the source");
	my ($ret, $o, $e) = $router->psql('router', 'CALL sharded_id.recover_moves()');
	is($ret, 0, "$how: recover_moves runs") or diag($e);
	is(map_owner($router, 5), $from, "$how: the shard stays where it was");
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '0',
		"$how: no move is left unfinished");
	is($node{$to}->safe_psql('app', 'SELECT count(*) FROM pg_subscription') . '/'
		  . $n->safe_psql('app', 'SELECT count(*) FROM pg_publication') . '/'
		  . $n->safe_psql('app', 'SELECT count(*) FROM pg_replication_slots'), '0/0/0',
		"$how: no subscription, publication or slot is left");
}

done_testing();
