# test/t/031_cleanup_cut.pl
#
# A move whose cleanup loses a node after the switch is done: the map names
# the target, which owns the shard, so the move is reported moved, with a
# WARNING, and what it could not drop is left to a deferred cleanup.
#
# For each remote statement of the cleanup (the subscription's DISABLE,
# SET (slot_name = NONE) and DROP on the target, the slot's and the
# publication's drop and the mark's delete on the source, the mark's
# delete on the target, the old copy's drop on the source), a move by the
# command-line tool pauses at that statement's hold point
# (sharded_id.move_hold), the test ends the node's backend of the router's
# cleanup connection, and the move goes on.  Then:
#  - the tool exits 0, says "outcome: moved" and "cleanup: pending", and
#    the WARNING names the pending cleanup;
#  - the journal has the move finished, moved, its state 'cleanup pending',
#    with its records left in sharded_id.move_cleanup, and the object of
#    the cut statement is still on its node;
#  - the shard takes writes through the router on the target: every row
#    is there, and no id repeats over the nodes;
#  - CALL sharded_id.recover_moves() leaves no slot, publication,
#    subscription or mark on either node, the old copy gone, the journal
#    'finished' with no record left.
# Last, a cut whose leftovers the next move of the shard drops before it
# starts, and a next move that refuses to start while a node holding
# leftovers does not answer.
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
	a => data_node('cut_a', shards => [ 0 .. 3 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	b => data_node('cut_b', shards => [], shard_count => $shard_count,
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

my $shard = 1;
my $schema = sprintf('shard_%04d', $shard);
my $owner = sub { return map_owner($router, $shard); };
my $other = sub { return $_[0] eq 'a' ? 'b' : 'a'; };

# Slots/publications/subscriptions/marks of a node.
my $leftovers = sub {
	my ($n) = @_;
	return $node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots)
		|| '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_subscription)
		|| '/' || (SELECT count(*) FROM sharded_id.move_marks)});
};
my $rows_on = sub {
	my ($n) = @_;
	return $node{$n}->safe_psql('app', "SELECT (SELECT count(*) FROM $schema.users) + (SELECT count(*) FROM $schema.photos)");
};
# Writes to the shard through the router, after the move.
my $write = sub {
	my ($tag) = @_;
	return $router->safe_psql('router', "SELECT count(app_api.add_photo(user_id, '$tag'))
		FROM demo_users WHERE sharded_id.shard_id(user_id) = $shard");
};
# No id twice over the nodes.
my $no_repeats = sub {
	my ($what) = @_;
	my @ids = all_ids(values %node);
	my %seen;
	is(scalar(grep { $seen{$_}++ } @ids), 0, "$what: no id repeats over the nodes (" . scalar(@ids) . ' ids)');
};

# What the cut statement's object is, on the node that holds it.
my %still_there = (
	subscription => q{SELECT count(*) FROM pg_subscription},
	slot => q{SELECT count(*) FROM pg_replication_slots},
	publication => q{SELECT count(*) FROM pg_publication},
	mark => q{SELECT count(*) FROM sharded_id.move_marks},
	schema => "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'");

# A move by the tool that pauses at $point (hold_on, wait_at_hold); the router's cleanup connection
# to $cut (a node name) is ended there.  Returns the tool's exit, stdout
# and stderr, and how many backends the cut ended.
my $cut_move = sub {
	my ($to, $point, $cut) = @_;
	hold_on($router);
	my ($out, $err) = ('', '');
	local $ENV{PGOPTIONS} = "-c sharded_id.move_hold=$point";
	local $ENV{PGAPPNAME} = 'cleanup_cut';
	my $h = IPC::Run::start([ $tool, '--shard', $shard, '--to-node', $to, '--router', $router->connstr('router') ],
		'>', \$out, '2>', \$err);
	wait_at_hold($router, 'cleanup_cut') or die "the move did not reach $point: $err";
	my $ended = $node{$cut}->safe_psql('app', q{SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name LIKE 'sharded\_id\_%\_cleanup\_%'});
	hold_off($router);
	my $ok = $h->finish;
	return ($ok, $out, $err, $ended);
};

my @cases = (
	[ 'disable_subscription_target', 'target', 'subscription' ],
	[ 'detach_subscription_target', 'target', 'subscription' ],
	[ 'drop_subscription_target', 'target', 'subscription' ],
	[ 'drop_slot_source', 'source', 'slot' ],
	[ 'drop_publication_source', 'source', 'publication' ],
	[ 'delete_mark_source', 'source', 'mark' ],
	[ 'delete_mark_target', 'target', 'mark' ],
	[ 'drop_schema_source', 'source', 'schema' ]);
my $n = 0;
for my $case (@cases)
{
	my ($point, $role, $kind) = @$case;
	$n++;
	my $from = $owner->();
	my $to = $other->($from);
	my $cut = $role eq 'source' ? $from : $to;
	my $what = "cut at $point";
	my $rows = $rows_on->($from);
	my ($ok, $out, $err, $ended) = $cut_move->($to, $point, $cut);
	is($ended, 1, "$what: the router's cleanup connection to $cut was ended at the statement");
	ok($ok, "$what: the tool exits 0") or diag("$out\n$err");
	like($out, qr/^outcome: moved$/m, "$what: the tool says moved");
	like($out, qr/^cleanup: pending/m, "$what: the tool says the cleanup is pending");
	like($err, qr/WARNING:  move \d+ of shard $shard to node "$to" is done, but its cleanup is pending: node "$cut", $kind /,
		"$what: a WARNING names the pending cleanup");
	unlike($err, qr/ERROR/, "$what: no error");
	is($router->safe_psql('router', q{SELECT outcome || '|' || state || '|' || (finished_at IS NOT NULL)
		|| '|' || (SELECT count(*) > 0 FROM sharded_id.move_cleanup c WHERE c.move_id = m.move_id)
		FROM sharded_id.moves m ORDER BY move_id DESC LIMIT 1}),
		'moved|cleanup pending|true|true', "$what: journaled as moved, finished, its cleanup pending");
	is($owner->(), $to, "$what: the map names $to");
	ok($node{$cut}->safe_psql('app', $still_there{$kind}) > 0, "$what: the $kind is still on $cut");
	is($node{$to}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard")
		  . '/' . $node{$from}->safe_psql('app', "SELECT count(*) FROM sharded_id.shards WHERE shard_id = $shard"),
		'1/0', "$what: $to owns the shard, $from does not");
	# Writes through the router land on the target, after every row moved.
	is($rows_on->($to), $rows, "$what: every row reached $to");
	my $written = $write->("after cut $n");
	is($rows_on->($to), $rows + $written, "$what: the $written writes through the router landed on $to");
	is($node{$to}->safe_psql('app', "SELECT count(*) FROM $schema.photos WHERE caption = 'after cut $n'"),
		$written, "$what: they are on $to");
	$no_repeats->($what);

	my ($r, $o, $e) = $router->psql('router', 'CALL sharded_id.recover_moves()');
	is($r, 0, "$what: recover_moves runs") or diag($e);
	like($e, qr/its deferred cleanup is done/, "$what: recover_moves reports the deferred cleanup done");
	is($leftovers->('a') . ' ' . $leftovers->('b'), '0/0/0/0 0/0/0/0',
		"$what: after recover_moves no slot, publication, subscription or mark is left on either node");
	is($node{$from}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'")
		  . '/' . $node{$to}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'"),
		'0/1', "$what: the old copy is gone, the new one stays");
	is($router->safe_psql('router', q{SELECT state || '|' || outcome || '|' || (SELECT count(*) FROM sharded_id.move_cleanup)
		FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1}), 'finished|moved|0',
		"$what: journaled finished, no cleanup record left");
	$written += $write->("after recovery $n");
	is($rows_on->($to), $rows + $written, "$what: the shard still takes writes on $to");
	$no_repeats->("$what, after recovery");
}

# The next move of the shard drops what an earlier one left, before it
# starts; while a node that holds leftovers is down, it refuses to start.
{
	my $from = $owner->();
	my $to = $other->($from);
	my $what = 'next move';
	my ($ok, $out, $err, $ended) = $cut_move->($to, 'drop_slot_source', $from);
	ok($ok && $out =~ /^cleanup: pending/m, "$what: a cut move leaves its slot to a deferred cleanup") or diag("$out\n$err");
	my $rows = $rows_on->($to);
	$node{$from}->stop('fast');
	my ($r, $o, $e) = $router->psql('router', "CALL sharded_id.move_shard($shard, '$from')");
	like($e, qr/move \d+ of shard $shard left objects on the nodes that cannot be dropped yet/,
		"$what: refused while the node holding the leftovers is down");
	is($owner->(), $to, "$what: the refused move changed no map");
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '0',
		"$what: the refused move journaled nothing unfinished");
	$node{$from}->start;
	($r, $o, $e) = $router->psql('router', "CALL sharded_id.move_shard($shard, '$from')");
	is($r, 0, "$what: the next move runs once the node answers") or diag($e);
	like($e, qr/dropping what move \d+ of shard $shard left on the nodes/, "$what: it drops the leftovers first");
	is($owner->(), $from, "$what: the shard moved back to $from");
	is($rows_on->($from), $rows, "$what: with every row");
	is($leftovers->('a') . ' ' . $leftovers->('b'), '0/0/0/0 0/0/0/0',
		"$what: no slot, publication, subscription or mark is left on either node");
	is($router->safe_psql('router', q{SELECT count(*) FROM sharded_id.move_cleanup})
		  . '/' . $router->safe_psql('router', q{SELECT string_agg(DISTINCT state, ',') FROM sharded_id.moves}),
		'0/finished', "$what: every move journaled finished, no cleanup record left");
	my $written = $write->('after the next move');
	is($rows_on->($from), $rows + $written, "$what: the shard takes writes on $from");
	$no_repeats->($what);
}

done_testing();
