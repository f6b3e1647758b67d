# test/t/034_crash_sweep.pl
#
# A crash at every durable step of the ceiling and of the shards' states.
# The injection points ("sharded-id-..." string literals) are read from
# src/*.c, not listed here: a point added to the sources is swept, and one
# whose operation this file does not know fails the test.  The points of a
# Citus coordinator's window grants ("sharded-id-grant-...") need Citus:
# test/t/042_citus_windows.pl sweeps them.  For each point,
# while two psql sessions copy out every id they are handed (COPY ... TO
# STDOUT into a file: counter mode on shard 7, seed mode on shard 8 with
# sequence s) and a pgbench client commits ids of both shards into a table,
# the test attaches 'wait' to the point, starts what reaches it (minting for
# the ceiling's points, reset_ceiling() for the reset's, a committing
# raise_floor, retire_shard or create_shard of a retired shard for the
# states' sync, and the operation itself for the "-changed" points), waits
# (bounded) until a backend waits there, stops the server at once
# ('immediate') and starts it with its clock 5 s behind.  Then:
#
#   - no repeat: 20,000 ids of each minting shard, 1,000 of the operations'
#     shards and of a shard that never minted, after the restart, equal none
#     of the ids handed out before (over every crash so far), and the ids
#     handed out between two crashes repeat none either;
#   - the shards' states (floors()) are as committed: the operation that was
#     stopped never committed, so every retirement is as it was before it; a
#     floor may have risen (floors are not undone), never fallen, but for
#     lower_floor's own shard (the lowering is not undone by an abort
#     either, so it may hold or not); a shard retired mints only after
#     create_shard took it back;
#   - no shard mints far ahead: with the clock 5 s behind, new ids must
#     come after the ids handed out before the crash, so they cannot carry
#     the clock's time; each shard's newest id lies at most a lease (1 s)
#     plus 250 ms plus its count / 1024 ms (the ids it minted, 1024 a
#     millisecond) past the later of the server's clock and the newest id
#     handed out before the crash (or a floor committed or being raised).
#
# Then the same on a physical standby: the primary streams to it
# synchronously (synchronous_standby_names '*', synchronous_commit
# remote_apply); at each point the primary stops at once and the standby,
# its clock 5 s behind, is promoted, and becomes the primary of the next
# point with a new standby made from its backup.  With replication an id
# copied out of a transaction that never committed may not be covered by
# any WAL that reached the standby, so only ids of committed transactions
# (those of the table on the promoted standby) count for its repeats; the
# ids copied out are only counted in a note.
#
# Skipped where the server was built without injection points (then
# sharded_id has none either).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;
use Time::HiRes ();

use constant LEASE_MS => 1000;

# The points, from the sources.
my %found;
for my $file (glob("$FindBin::RealBin/../../src/*.c"))
{
	my $text = slurp_file($file);
	$found{$1} = 1 while $text =~ /"(sharded-id-[a-z-]+)"/g;
}
# The grant's points (citus.c) are reached only on a Citus coordinator:
# test/t/042_citus_windows.pl crashes the coordinator at each of them.
my @citus_points = sort grep { /^sharded-id-grant-/ } keys %found;
my @points = sort grep { !/^sharded-id-grant-/ } keys %found;

my $major = `pg_config --version` =~ /PostgreSQL (\d+)/ ? $1 : '?';
my $include = `pg_config --includedir-server`;
chomp $include;
my $config_h = -f "$include/pg_config.h" ? slurp_file("$include/pg_config.h") : '';
plan skip_all => "PostgreSQL $major was built without injection points (no USE_INJECTION_POINTS in pg_config.h)"
  unless $config_h =~ /^#define USE_INJECTION_POINTS 1$/m;

my $node = sharded_node('sweep', init => { allows_streaming => 1 }, conf => q{
max_connections = 30
synchronous_commit = remote_apply
});
my ($set_clock, $start) = faked_clock($node);
$start->();
my ($ret, $out, $err) = $node->psql('postgres', 'CREATE EXTENSION injection_points');
if ($ret != 0)
{
	$node->stop;
	plan skip_all => "PostgreSQL $major was built without injection points (CREATE EXTENSION injection_points: $err)";
}

ok(@points > 0, 'src/*.c names injection points: ' . scalar(@points)
	  . ' swept here, and ' . scalar(@citus_points) . ' of a Citus coordinator swept by 042_citus_windows')
  or BAIL_OUT('no injection point found in src/*.c');

$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE s CACHE 100;
	CREATE TABLE committed (id bigint PRIMARY KEY);
	SELECT sharded_id.create_shard(11);
});

# What each point's operation is: the ceiling's are reached by minting, the
# reset's by reset_ceiling(), the states' by a committing change of a shard
# (raise_floor, retire_shard, create_shard of a retired shard, in turn),
# the "-changed" ones by their own operation.
my @states_ops = qw(raise_floor retire take_back);
my $states_turn = 0;
sub operation_of
{
	my ($point) = @_;
	return 'mint' if $point =~ /^sharded-id-ceiling-/;
	return 'reset' if $point =~ /^sharded-id-reset-/;
	return $states_ops[ $states_turn++ % @states_ops ] if $point =~ /^sharded-id-states-/;
	return 'raise_floor' if $point eq 'sharded-id-raise-floor-changed';
	return 'lower_floor' if $point eq 'sharded-id-lower-floor-changed';
	return 'retire' if $point eq 'sharded-id-retire-changed';
	return 'take_back' if $point eq 'sharded-id-take-back-changed';
	return undef;
}

# The minters' scripts: a psql session copies out 200 ids, sleeps 10 ms,
# and so on (for minutes: the crash ends it); pgbench commits 50 ids of each
# shard 20 times a second.
my $work = PostgreSQL::Test::Utils::tempdir();
my %script;
for my $m ([ counter => 'sharded_id.next_id(7)' ], [ seed => q{sharded_id.next_id(8, 's')} ])
{
	my ($name, $call) = @$m;
	$script{$name} = "$work/mint_$name.sql";
	open my $fh, '>', $script{$name} or die $!;
	print $fh "COPY (SELECT $call FROM generate_series(1, 200)) TO STDOUT;\nSELECT pg_sleep(0.01) \\g /dev/null\n"
	  for 1 .. 10000;
	close $fh;
}
$script{commit} = "$work/mint_commit.sql";
open my $fh, '>', $script{commit} or die $!;
print $fh "INSERT INTO committed SELECT sharded_id.next_id(7) FROM generate_series(1, 50);\n"
  . "INSERT INTO committed SELECT sharded_id.next_id(8, 's') FROM generate_series(1, 50);\n";
close $fh;

sub connstr
{
	my ($n, $app) = @_;
	return $n->connstr('postgres') . " application_name=$app";
}

# Wait, at most $secs s, until $cond holds; its last value.
sub wait_until
{
	my ($secs, $cond) = @_;
	my $deadline = Time::HiRes::time() + $secs;
	while (Time::HiRes::time() < $deadline)
	{
		my $v = $cond->();
		return $v if $v;
		Time::HiRes::sleep(0.05);
	}
	return $cond->();
}

my $minters_no = 0;
sub start_minters
{
	my ($n) = @_;
	my $dir = "$work/minters_" . ++$minters_no;
	mkdir $dir or die $!;
	my @h;
	for my $name (qw(counter seed))
	{
		push @h, IPC::Run::start(
			[ 'psql', '-X', '-q', '-A', '-t', '-d', connstr($n, "sweep_$name"), '-f', $script{$name} ],
			'<', \undef, '>', "$dir/$name.ids", '2>', "$dir/$name.err", IPC::Run::timeout(300));
	}
	push @h, IPC::Run::start(
		[ 'pgbench', '-n', '-c', '1', '-R', '20', '-T', '600', '-f', $script{commit}, connstr($n, 'sweep_commit') ],
		'<', \undef, '>', "$dir/commit.out", '2>&1', IPC::Run::timeout(300));
	# At least 5,000 ids copied out by each psql (about 20 bytes a line)
	# and 1,000 committed before the point is attached.
	my $started = wait_until(60, sub {
		(-s "$dir/counter.ids" // 0) > 100_000 && (-s "$dir/seed.ids" // 0) > 100_000
		  && $n->safe_psql('postgres', 'SELECT count(*) >= 1000 FROM committed') eq 't' });
	die "the minters did not start: " . slurp_file("$dir/counter.err") . slurp_file("$dir/commit.out")
	  unless $started;
	return { dir => $dir, h => \@h };
}

# Wait (bounded) for a background program that the crash ended.
sub reap
{
	my ($h) = @_;
	eval { $h->finish; 1 } or do { diag("a background program did not end: $@"); eval { $h->kill_kill } };
}

# Every id in a file, one a line.
sub ids_in
{
	my ($file) = @_;
	return () unless -f $file;
	return slurp_file($file) =~ /^(\d+)$/mg;
}

# The shards' states: shard => [floor ms or 0, retired 0/1].
sub states
{
	my ($n) = @_;
	my %s;
	for (split /\n/, $n->safe_psql('postgres', q{SELECT shard_id,
		coalesce((extract(epoch FROM floor) * 1000)::bigint, 0), retired::int FROM sharded_id.floors()}))
	{
		my ($shard, $floor, $retired) = split /\|/;
		$s{$shard} = [ $floor, $retired ];
	}
	return \%s;
}

sub show_states
{
	my ($s) = @_;
	return join(', ', map { "$_: floor $s->{$_}[0] retired $s->{$_}[1]" } sort { $a <=> $b } keys %$s) || 'none';
}

sub clock_ms
{
	my ($n) = @_;
	return $n->safe_psql('postgres', 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint');
}

sub id_ms
{
	my ($n, $id) = @_;
	return $n->safe_psql('postgres', "SELECT (extract(epoch FROM sharded_id.created_at($id)) * 1000)::bigint");
}

sub commit_sql
{
	my ($n, $sql) = @_;
	$n->safe_psql('postgres', $sql);
}

# Every id handed out so far, over every crash: id => 1.
my %handed;
my $crashes = 0;
my $fresh_shard = 100;

# One point: $n is the server to crash; $standby, if any, is promoted
# instead of restarting $n, with $sb_clock setting its clock.  Returns the
# server that runs afterwards.
sub sweep_point
{
	my ($phase, $point, $n, $standby, $sb_clock) = @_;
	my $what = "$phase, $point";
	my $op = operation_of($point);
	unless (defined $op)
	{
		fail("$what: an operation that reaches the point");
		return ($n, 0);
	}

	# What the operation needs before it: shard 11 owned to retire it,
	# retired to take it back, shard 12 with a floor to lower it.
	my $s = states($n);
	commit_sql($n, 'SELECT sharded_id.create_shard(11)') if $op eq 'retire' && $s->{11} && $s->{11}[1];
	commit_sql($n, 'SELECT sharded_id.retire_shard(11)') if $op eq 'take_back' && !($s->{11} && $s->{11}[1]);
	commit_sql($n, q{SELECT sharded_id.raise_floor(12, sharded_id.encode(clock_timestamp() + interval '100 ms', 12, 0))})
	  if $op eq 'lower_floor' && !($s->{12} && $s->{12}[0]);
	my $before = states($n);

	# raise_floor's floor, on the counter's shard: 200 ms past the later of
	# the clock, the shard's high-water mark and its floor, so that it
	# changes the floor (and reaches the sync).
	my $above = $n->safe_psql('postgres', q{SELECT sharded_id.encode(greatest(clock_timestamp(),
		sharded_id.created_at(sharded_id.high_water(7)),
		(SELECT max(floor) FROM sharded_id.floors() WHERE shard_id = 7)) + interval '200 ms', 7, 0)});
	my $op_floor_ms = $op eq 'raise_floor' ? id_ms($n, $above) : 0;
	my $minters = start_minters($n);
	my $op_sql = {
		mint => undef,
		reset => 'SELECT sharded_id.reset_ceiling();',
		raise_floor => "SELECT sharded_id.raise_floor(7, $above);",
		lower_floor => 'SELECT sharded_id.lower_floor(12);',
		retire => 'SELECT sharded_id.retire_shard(11);',
		take_back => 'SELECT sharded_id.create_shard(11);',
	}->{$op};

	$n->safe_psql('postgres', "SELECT injection_points_attach('$point', 'wait')");
	my ($op_h, $op_out);
	if (defined $op_sql)
	{
		$op_out = '';
		# reset_ceiling and lower_floor refuse a transaction block.
		my $tx = ($op eq 'reset' || $op eq 'lower_floor') ? $op_sql : "BEGIN;\n$op_sql\nCOMMIT;\n";
		$op_h = IPC::Run::start(
			[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', connstr($n, 'sweep_op'),
			  '-c', $tx, '-c', '\echo op done' ],
			'<', \undef, '>', \$op_out, '2>&1', IPC::Run::timeout(300));
	}
	my $waiter = wait_until(60, sub {
		$n->safe_psql('postgres', "SELECT string_agg(coalesce(nullif(application_name, ''), backend_type), ',')
			FROM pg_stat_activity WHERE wait_event = '$point'") });
	my $visited = ok($waiter, "$what: a backend waits at the point ($op)");
	note("$what: waiting: $waiter") if $waiter;

	# The crash.
	my $ceiling_before = read_ceiling($n) // 'none';
	$n->stop('immediate');
	$crashes++;
	reap($_) for @{ $minters->{h} };
	my $op_committed = 0;
	if ($op_h)
	{
		reap($op_h);
		$op_committed = $op_out =~ /op done/;
	}
	ok(!$op_committed, "$what: the operation did not end before the crash") or diag($op_out);
	my $errors = join('', map { -f $_ ? grep { /ERROR:/ } split /^/, slurp_file($_) : () }
		  map { "$minters->{dir}/$_" } qw(counter.err seed.err commit.out));
	is($errors, '', "$what: no minter got an error before the crash");

	my $after;
	if ($standby)
	{
		$sb_clock->('-5');
		$standby->promote;
		wait_until(60, sub { $standby->safe_psql('postgres', 'SELECT NOT pg_is_in_recovery()') eq 't' })
		  or die 'the standby was not promoted';
		$after = $standby;
	}
	else
	{
		$set_clock->('-5');
		$start->();
		$after = $n;
	}

	my $ceiling_after = read_ceiling($after) // 'none';

	# What was handed out before the crash.
	my @copied = map { ids_in("$minters->{dir}/$_.ids") } qw(counter seed);
	my @committed = split /\n/, $after->safe_psql('postgres', 'SELECT id FROM committed');
	my @counted = $standby ? @committed : (@copied, @committed);
	my $repeated_before = 0;
	my %this;
	for (@counted)
	{
		next if $this{$_}++;    # committed and copied out: the same id
		$repeated_before++ if $handed{$_}++;
	}
	is($repeated_before, 0, "$what: the " . scalar(keys %this) . ' ids handed out before the crash repeat none handed out earlier');
	my $high = 0;
	for (@copied, @committed) { $high = $_ if $_ > $high; }
	my $high_ms = $high ? id_ms($after, $high) : 0;

	# The state is as committed.
	my $now = states($after);
	my @wrong;
	for my $shard (sort { $a <=> $b } keys %{ { %$before, %$now } })
	{
		my ($f0, $r0) = @{ $before->{$shard} // [ 0, 0 ] };
		my ($f1, $r1) = @{ $now->{$shard} // [ 0, 0 ] };
		push @wrong, "shard $shard retired $r1, committed $r0" if $r1 != $r0;
		push @wrong, "shard $shard floor $f1 below the committed $f0"
		  if $f1 < $f0 && !($op eq 'lower_floor' && $shard == 12 && $f1 == 0);
	}
	is(join('; ', @wrong), '', "$what: the shards' states are as committed")
	  or diag('before: ' . show_states($before) . "\nafter: " . show_states($now));
	note("$what: lower_floor's lowering " . (($now->{12} // [0])->[0] ? 'did not hold' : 'held'))
	  if $op eq 'lower_floor';

	# Ids after the restart.
	my $clock = clock_ms($after);
	my $base = $high_ms;
	$base = $clock if $clock > $base;
	$base = $op_floor_ms if $op_floor_ms > $base;
	for (values %$before) { $base = $_->[0] if $_->[0] > $base; }
	my $shard_11_retired = $before->{11} && $before->{11}[1];
	my $fresh = $fresh_shard++;
	my @mints = ([ 7, 'sharded_id.next_id(7)', 20000 ], [ 8, q{sharded_id.next_id(8, 's')}, 20000 ],
		[ 12, 'sharded_id.next_id(12)', 1000 ], [ $fresh, "sharded_id.next_id($fresh)", 1000 ]);
	if ($shard_11_retired)
	{
		my ($r, $o, $e) = $after->psql('postgres', "\\set VERBOSITY verbose\nSELECT sharded_id.next_id(11)");
		like($e, qr/SI001/, "$what: shard 11, retired as committed, does not mint");
	}
	else
	{
		push @mints, [ 11, 'sharded_id.next_id(11)', 1000 ];
	}
	my $repeats = 0;
	my $new = 0;
	my @far;
	my $lead = -1e9;
	for my $m (@mints)
	{
		my ($shard, $call, $count) = @$m;
		my @ids = split /\n/, $after->safe_psql('postgres', "COPY (SELECT $call FROM generate_series(1, $count)) TO STDOUT");
		my $max = 0;
		my @again;
		for (@ids)
		{
			push @again, $_ if $handed{$_}++;
			$max = $_ if $_ > $max;
		}
		$repeats += @again;
		if (@again)
		{
			my ($lo, $hi) = (sort { $a <=> $b } @again)[ 0, -1 ];
			my $old_max = 0;
			for (@counted) { $old_max = $_ if ($_ >> 10) % 8192 == $shard && $_ > $old_max; }
			diag("$what: shard $shard repeats " . scalar(@again) . ' ids, from ' . id_ms($after, $lo) . ' to '
				  . id_ms($after, $hi) . ' ms; its newest id before the crash: ' . ($old_max ? id_ms($after, $old_max) : 'none')
				  . "; the ceiling file before the crash: $ceiling_before, after the restart: $ceiling_after; states before: " . show_states($before)
				  . '; after: ' . show_states($now));
		}
		$new += @ids;
		my $ms = id_ms($after, $max);
		# Against the clock as it read once they were minted, however long
		# that took on a loaded machine.
		my $clock_after = clock_ms($after);
		my $mbase = $clock_after > $base ? $clock_after : $base;
		my $limit = $mbase + LEASE_MS + 250 + int($count / 1024);
		push @far, "shard $shard at $ms, " . ($ms - $mbase) . " ms past $mbase" if $ms > $limit;
		$lead = $ms - $mbase if $ms - $mbase > $lead;
	}
	note("$what: the newest id after the crash is $lead ms past the clock or the newest id before it");
	is($repeats, 0, "$what: the $new ids after the crash repeat none of the " . scalar(keys %handed) . ' ever handed out');
	is(join('; ', @far), '', "$what: every shard mints within a lease of the clock or of the newest id before the crash");
	if ($standby)
	{
		my $uncovered = grep { $handed{$_} } grep { !$this{$_} } @copied;
		note("$what: $uncovered of the " . scalar(@copied) . ' ids copied out of uncommitted transactions repeat after the promotion');
	}
	$after->safe_psql('postgres', 'TRUNCATE committed');
	return ($after, $visited);
}

# The primary: a crash and a restart at each point.
my $visited = 0;
for my $point (@points)
{
	$set_clock->('+0');
	my ($n, $v) = sweep_point('primary', $point, $node);
	$visited += $v;
}
is($visited, scalar(@points), "primary: every one of the " . scalar(@points) . ' points was reached and waited at');
diag("primary: $visited of " . scalar(@points) . " points visited, $crashes crashes");

# A standby of $primary, streaming synchronously, on a clock of its own.
my $standbys = 0;
sub new_standby
{
	my ($primary) = @_;
	my $name = 'standby' . ++$standbys;
	$primary->backup($name);
	my $standby = PostgreSQL::Test::Cluster->new($name);
	$standby->init_from_backup($primary, $name, has_streaming => 1);
	my ($set, $go) = faked_clock($standby);
	$go->();
	$primary->safe_psql('postgres', "ALTER SYSTEM SET synchronous_standby_names = '*'");
	$primary->safe_psql('postgres', 'SELECT pg_reload_conf()');
	wait_until(60, sub { $primary->safe_psql('postgres',
		"SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = '$name' AND sync_state = 'sync'") eq 't' })
	  or die "$name is not a synchronous standby";
	return ($standby, $set);
}

my $crashes_primary = $crashes;
my $primary = $node;
my $primary_clock = $set_clock;
$visited = 0;
for my $point (@points)
{
	$primary_clock->('+0');
	my ($standby, $sb_clock) = new_standby($primary);
	my ($after, $v) = sweep_point('standby', $point, $primary, $standby, $sb_clock);
	$visited += $v;
	# The old primary is not started again: its files go.
	$primary->clean_node unless $primary == $node;
	$primary = $after;
	$primary_clock = $sb_clock;
}
is($visited, scalar(@points), "standby: every one of the " . scalar(@points) . ' points was reached and waited at, then the standby promoted');
diag("standby: $visited of " . scalar(@points) . ' points visited, ' . ($crashes - $crashes_primary) . ' crashes and promotions');
diag("in all: $crashes crashes, " . scalar(keys %handed) . ' ids compared');

$primary->stop;
done_testing();
