# test/t/033_rate.pl
#
# One shard minted by several sessions at once for a bounded time: in
# counter mode, in seed mode, and in batches of a million by a LOGIN-only
# role (its own temporary sequence, and counter mode once granted), and
# every way at once with the shard starting 1 s ahead of the clock.  The
# shard never hands out more than its layout's 1024 ids per millisecond,
# 1,024,000 per second over the run; its newest id stays within 2 s of the
# clock while the sessions run, when they are done and after a restart, and
# a shard not used before mints at the clock after that restart; no id
# repeats.
#
# Each session copies its ids out (COPY ... TO STDOUT) into a file of its
# own, a chunk at a time, for 3 s from its start; the files are checked
# here afterwards.  Copying out is not the bottleneck: with the shard's
# limit out of the way (ids spread over 64 shards) it carries 2 to 3
# million ids per second over the 2 cores, and batches 4 to 6 million.  A
# shard that moved on from a full millisecond without waiting whenever a
# caller's clock reading was behind it, as the generator once did, goes
# that fast: single calls under contention soon read the clock behind the
# slot, and every call does once the shard is ahead of the clock (the run
# that starts it 1 s ahead; every shard after a restart that followed such
# a run), so it would mint well over the limit here, its ids seconds ahead.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;
use Time::HiRes qw(time sleep);

my $shard = 5;
# Seconds each run mints for.
my $seconds = 3;
# The default layout (instagram): 41 bits of ms, 13 of shard, 10 of seq.
my $ids_per_ms = 1024;
# How far ahead of the clock the shard's newest id may be, in ms.
my $max_ahead_ms = 2000;

my $node = sharded_node('rate');
$node->start;
# seed_seq is cached so that nextval is not what limits the sessions: a
# plain sequence shared by the sessions carries barely more than the
# shard's limit.
$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE seed_seq CACHE 1000;
	CREATE ROLE app LOGIN;
});
# Unix ms of the default layout's epoch: an id's time is this plus id >> 23.
my $epoch_ms = $node->safe_psql('postgres',
	'SELECT (extract(epoch FROM sharded_id.created_at(0)) * 1000)::bigint');

# The LOGIN-only role: the seed-mode batch with its own temporary sequence
# needs no grant; counter mode is revoked from PUBLIC, and an application
# grants it to the role that mints.
my $app = $node->connstr('postgres') . ' user=app';
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"CREATE TEMPORARY SEQUENCE s; SELECT count(*) FROM sharded_id.next_ids($shard, 'pg_temp.s', 10)",
	connstr => $app);
is($stdout, '10', 'a LOGIN-only role mints a batch from its temporary sequence') or diag($stderr);
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SELECT count(*) FROM sharded_id.next_ids($shard, 10)", connstr => $app);
like($stderr, qr/permission denied for function next_ids/,
	'counter-mode batches are not the role\'s until granted');
$node->safe_psql('postgres', 'GRANT EXECUTE ON FUNCTION sharded_id.next_ids(integer, integer) TO app');
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SELECT count(*) FROM sharded_id.next_ids($shard, 10)", connstr => $app);
is($stdout, '10', 'once granted, the role mints counter-mode batches') or diag($stderr);

# What one session of each kind runs, over and over until the deadline: a
# chunk of ids copied out, after its setup.
my %kinds = (
	counter => { chunk => "COPY (SELECT sharded_id.next_id($shard) FROM generate_series(1, 20000)) TO STDOUT;" },
	seed => { chunk => "COPY (SELECT sharded_id.next_id($shard, 'seed_seq') FROM generate_series(1, 20000)) TO STDOUT;" },
	temp_batch => {
		setup => 'CREATE TEMPORARY SEQUENCE s;',
		chunk => "COPY (SELECT sharded_id.next_ids($shard, 'pg_temp.s', 1000000)) TO STDOUT;" },
	counter_batch => { chunk => "COPY (SELECT sharded_id.next_ids($shard, 1000000)) TO STDOUT;" },
);
my @runs = (
	{ name => 'counter mode, 2 sessions', kinds => [ ('counter') x 2 ] },
	{ name => 'counter mode, 4 sessions', kinds => [ ('counter') x 4 ] },
	{ name => 'seed mode, 2 sessions', kinds => [ ('seed') x 2 ] },
	# Restarted right after it (see below).
	{ name => 'seed mode, 4 sessions', kinds => [ ('seed') x 4 ], restart_after => 1 },
	# A shard ahead of the clock (here on a floor raised 1 s ahead, as after
	# a move from a server whose clock ran ahead, or a restart at the
	# ceiling) moves on at real time's pace: it stays about 1 s ahead while
	# the sessions keep every millisecond full, and gets no further.
	{ name => 'every way at once, 4 sessions, the shard starting 1 s ahead of the clock',
	  kinds => [ qw(counter seed counter_batch temp_batch) ], ahead_ms => 1000 },
	{ name => 'batches of a LOGIN-only role, 2 sessions', kinds => [ ('temp_batch') x 2 ], connstr => $app },
	{ name => 'batches of a LOGIN-only role, 4 sessions, 2 of them counter mode',
	  kinds => [ qw(temp_batch counter_batch temp_batch counter_batch) ], connstr => $app },
);

# How far the shard's newest id (the generator's last_id) is ahead of the
# clock read just after it, in ms, and the clock then, in Unix ms; empty
# before the shard's first id above $above (0 by default).
sub ahead_sql
{
	my ($above) = @_;
	$above //= 0;
	return "SELECT round(extract(epoch FROM sharded_id.created_at(last_id) - t) * 1000),
	round(extract(epoch FROM t) * 1000)
	FROM (SELECT last_id, clock_timestamp() AS t FROM sharded_id.generator_stats
	      WHERE shard_id = $shard AND last_id > $above OFFSET 0) s";
}

# A session's psql script: its setup, a wait at hold $hold_key while the
# test holds it (a run whose shard starts ahead), the time it starts, its
# chunk for $seconds from then, and the time it ends.  The times go to the
# psql's standard output, the ids to its -o file.
my $hold_key = 33;
sub session_script
{
	my ($kind, $wait) = @_;
	my $now = 'SELECT extract(epoch FROM clock_timestamp()) AS t \gset';
	my $chunk = $kinds{$kind}{chunk};
	# More chunks than any session gets through before the deadline.
	my $chunks = $chunk =~ /1000000/ ? 200 : 5000;
	return ($kinds{$kind}{setup} // '') . "\n"
	  . ($wait ? join('', map { "$_ \\gset\n" } hold_pause($hold_key)) : '')
	  . "$now\n\\echo start :t\nSELECT true AS go, :t + $seconds AS deadline \\gset\n"
	  . ("\\if :go\n$chunk\nSELECT extract(epoch FROM clock_timestamp()) < :deadline AS go \\gset\n\\endif\n"
		  x $chunks)
	  . "$now\n\\echo end :t\n";
}

# Run the sessions of $run for $seconds, sampling how far ahead of the clock
# the shard's newest id is every 0.5 s; returns what the run produced.  A
# run whose shard starts ahead raises its floor once its sessions have
# connected and wait at the hold, lets them go in the same psql call, and
# samples at once until the first id above the floor, so that the lead
# does not go by while they start.
my $run_no = 0;
sub mint_for
{
	my ($run) = @_;
	my $dir = $node->basedir . '/run_' . ++$run_no;
	mkdir $dir or die "mkdir $dir: $!";
	my $connstr = $run->{connstr} // $node->connstr('postgres');
	my $wait = $run->{ahead_ms} ? 1 : 0;
	hold_on($node, $hold_key, 'postgres') if $wait;
	my @sessions;
	for my $i (0 .. $#{ $run->{kinds} })
	{
		my $script = "$dir/session_$i.sql";
		open my $fh, '>', $script or die "$script: $!";
		print $fh session_script($run->{kinds}[$i], $wait);
		close $fh;
		push @sessions, {
			ids => "$dir/session_$i.ids",
			out => "$dir/session_$i.out",
			err => "$dir/session_$i.err" };
		$sessions[-1]{h} = IPC::Run::start(
			[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', $connstr,
			  '-f', $script, '-o', $sessions[-1]{ids} ],
			'<', '/dev/null', '>', $sessions[-1]{out}, '2>', $sessions[-1]{err});
	}
	my $floor;
	if ($wait)
	{
		my $n = @sessions;
		my $held = "FROM pg_locks WHERE locktype = 'advisory' AND classid = " . HOLD_CLASS . " AND objid = $hold_key
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
		ok($node->poll_query_until('postgres', "SELECT count(*) = $n $held AND NOT granted"),
			"$run->{name}: the $n sessions wait at the hold");
		($floor) = split /\n/, $node->safe_psql('postgres', "SELECT sharded_id.raise_floor($shard,
			sharded_id.encode(clock_timestamp() + interval '$run->{ahead_ms} ms', $shard, 0));
			SELECT pg_terminate_backend(pid) $held AND granted");
		hold_off($node, $hold_key, 'postgres');
	}
	# Bounded: the sessions stop $seconds after they start, after the chunk
	# they are in; one that is still running 2 minutes later is killed.
	my $give_up = time + $seconds + 120;
	my @samples;
	while (grep { $_->{h}->pumpable } @sessions)
	{
		if (time > $give_up)
		{
			$_->{h}->kill_kill for @sessions;
			fail("$run->{name}: the sessions end within 2 minutes of their deadline");
			last;
		}
		my ($ahead) = split /\|/, $node->safe_psql('postgres', ahead_sql($floor));
		push @samples, $ahead if defined $ahead && $ahead ne '';
		# Until the first id (above the floor): at once again.
		sleep(@samples ? 0.5 : 0.02);
	}
	$_->{h}->finish for @sessions;
	my ($end_ahead, $end_clock) = split /\|/, $node->safe_psql('postgres', ahead_sql());
	return { run => $run, sessions => \@sessions, samples => \@samples,
		end_ahead => $end_ahead, end_clock => $end_clock };
}

# Read every id the sessions copied out: how many, how many repeat, how
# many are not of the shard, the newest id and its ms field, and the most
# ids any ms holds.  $lo, an ms field before the run, is where a bitmap of
# the shard's (ms, seq) pairs starts, 1024 bits a millisecond; ids outside
# it, and ids of another shard, are counted in a hash.
sub read_ids
{
	my ($files, $lo) = @_;
	my $span = ($seconds + 600) * 1000;
	my $bits = '';
	vec($bits, $span * $ids_per_ms - 1, 1) = 0;
	my (%far, %far_ms, %repeats_ms);
	my %r = (n => 0, repeats => 0, other_shard => 0, max_id => 0);
	for my $file (@$files)
	{
		open my $fh, '<', $file or die "$file: $!";
		while (my $id = <$fh>)
		{
			my $x = $id >> 10;
			my $off = ($x >> 13) - $lo;
			$r{max_id} = $id + 0 if $id > $r{max_id};
			if (($x & 8191) != $shard)
			{
				$r{other_shard}++;
				$r{repeats}++ if $far{ $id + 0 }++;
			}
			elsif ($off >= 0 && $off < $span)
			{
				my $k = ($off << 10) | ($id & 1023);
				if (vec($bits, $k, 1))
				{
					$r{repeats}++;
					$repeats_ms{$off}++;
				}
				else
				{
					vec($bits, $k, 1) = 1;
				}
			}
			else
			{
				$r{repeats}++ if $far{ $id + 0 }++;
				$far_ms{ $x >> 13 }++;
			}
		}
		$r{n} += $.;
		close $fh;
	}
	$r{max_ms} = $r{max_id} >> 23;
	# Ids in each ms of the bitmap: its bits set, plus the repeats.
	$r{max_per_ms} = 0;
	my $bytes = $ids_per_ms / 8;
	for my $off (0 .. $span - 1)
	{
		my $c = unpack('%32b*', substr($bits, $off * $bytes, $bytes)) + ($repeats_ms{$off} // 0);
		$r{max_per_ms} = $c if $c > $r{max_per_ms};
	}
	for (values %far_ms)
	{
		$r{max_per_ms} = $_ if $_ > $r{max_per_ms};
	}
	return \%r;
}

sub check_run
{
	my ($m) = @_;
	my $name = $m->{run}{name};
	my ($start, $end);
	for my $s (@{ $m->{sessions} })
	{
		is($s->{h}->full_result(0), 0, "$name: a session exited 0")
		  or diag(slurp_file($s->{err}));
		my $out = slurp_file($s->{out});
		my ($s_start) = $out =~ /^start ([\d.]+)$/m;
		my ($s_end) = $out =~ /^end ([\d.]+)$/m;
		next unless defined $s_start && defined $s_end;
		$start = $s_start if !defined $start || $s_start < $start;
		$end = $s_end if !defined $end || $s_end > $end;
	}
	unless (defined $end)
	{
		fail("$name: the sessions report when they started and ended");
		return;
	}
	my $wall = $end - $start;
	my @files = map { $_->{ids} } @{ $m->{sessions} };
	my $r = read_ids(\@files, int($start * 1000) - $epoch_ms - 1000);
	# A run leaves up to a few hundred MB of ids, several GB if the shard
	# runs away: what they show is in the note below.
	unlink @files;
	my $rate = $r->{n} / $wall;
	my $limit = $ids_per_ms * 1000 * ($wall + 0.002) / $wall;
	my $max_sample = (sort { $b <=> $a } @{ $m->{samples} })[0];
	my $newest_ahead = $r->{max_ms} + $epoch_ms - $m->{end_clock};
	note(sprintf('%s: %d ids in %.3f s: %.0f ids/s (limit %.0f); at most %d ids in a ms; '
		  . 'newest id ahead of the clock: at most %s ms in %d samples, %s ms at the end (last_id), %d ms (newest id copied out)',
		$name, $r->{n}, $wall, $rate, $limit, $r->{max_per_ms},
		$max_sample // 'n/a', scalar @{ $m->{samples} }, $m->{end_ahead}, $newest_ahead));

	cmp_ok($r->{n}, '>', 0, "$name: the sessions minted ids");
	cmp_ok($rate, '<=', $limit, "$name: at most 1,024,000 ids per second over the run");
	cmp_ok($r->{max_per_ms}, '<=', $ids_per_ms, "$name: no millisecond holds more than $ids_per_ms ids");
	is($r->{repeats}, 0, "$name: no id repeats");
	is($r->{other_shard}, 0, "$name: every id is of shard $shard");
	cmp_ok(scalar @{ $m->{samples} }, '>', 0, "$name: the newest id was sampled during the run");
	# Sampled every 0.5 s from 1 s ahead, the shard is seen at least a
	# quarter of that ahead even by sessions that fill few milliseconds.
	cmp_ok($max_sample // 0, '>=', $m->{run}{ahead_ms} / 4, "$name: the shard ran ahead of the clock, on its floor")
	  if $m->{run}{ahead_ms};
	cmp_ok($max_sample // 0, '<=', $max_ahead_ms, "$name: sampled during the run, the newest id is at most 2 s ahead of the clock");
	cmp_ok($m->{end_ahead}, '<=', $max_ahead_ms, "$name: at the end, the newest id is at most 2 s ahead of the clock");
	cmp_ok($newest_ahead, '<=', $max_ahead_ms, "$name: at the end, the newest id copied out is at most 2 s ahead of the clock");
	is($node->safe_psql('postgres', "SELECT (extract(epoch FROM sharded_id.created_at($r->{max_id})) * 1000)::bigint"),
		$r->{max_ms} + $epoch_ms, "$name: the ids decode here as created_at decodes them");
}

# After a restart: the shard's next id, and the first id of a shard not used
# before, against the clock read just after it, in ms.
sub ahead_after_restart
{
	my ($s) = @_;
	return $node->safe_psql('postgres',
		"SELECT round(extract(epoch FROM sharded_id.created_at(id) - t) * 1000)
		 FROM (SELECT sharded_id.next_id($s) AS id, clock_timestamp() AS t OFFSET 0) x");
}

for my $run (@runs)
{
	my $m = mint_for($run);
	if ($run->{restart_after})
	{
		# Right after the run, while the durable ceiling is as the sessions
		# left it: a shard that ran ahead of the clock takes the ceiling, and
		# so every shard, with it.
		restart_node($node);
		my $ahead5 = ahead_after_restart($shard);
		my $ahead6 = ahead_after_restart(6);
		note("after a restart: shard ${shard}'s next id is $ahead5 ms ahead of the clock, shard 6's first $ahead6 ms");
		cmp_ok($ahead5, '<=', $max_ahead_ms, "after a restart, shard ${shard}'s next id is at most 2 s ahead of the clock");
		cmp_ok(abs($ahead6), '<=', 1000, 'after a restart, a shard not used before mints at the clock (within 1 s)');
	}
	check_run($m);
}

$node->stop;
done_testing();
