# test/bench/citus.pl: Citus's mover against sharded_id's, side by side in
# one run, and next_id against nextval on a Citus worker.  Run by
# test/bench/citus.sh (which see) under PostgreSQL's TAP harness, so that
# it can start its own clusters; the tables are printed as TAP notes and
# written to $ENV{SHID_BENCH_OUT}.
#
#  - A Citus cluster (a coordinator, two workers, PostgreSQL with
#    shared_preload_libraries = 'citus,sharded_id') with shard 1 as a
#    distributed schema, and a router over two data nodes (test/example)
#    with shard 1 on one of them.
#  - For each size (SIZES, default "10000 1000000" rows of shard 1's
#    photos), ROUNDS moves by each mover (BIG_ROUNDS at 1,000,000), in an
#    order that alternates: citus_schema_move to the other worker, and CALL
#    sharded_id.move_shard(1, other node) on the router, each while 2
#    pgbench writers add photos to shard 1 (through the coordinator, and
#    through the router's PL/Proxy function), without retries: the longest
#    writer transaction (pgbench -l), the move's total time, the writes and
#    the failed writes.  The writers run WRITER_SECONDS (by size, default
#    "10 60"); a row says when a move outlasted them.
#  - On worker 1: CALLS calls (default 1,000,000) in one statement of
#    nextval, counter next_id and seed next_id over 8192 shards, and counter
#    next_id on one shard (a tenth as many), CALL_ROUNDS rounds (default 5)
#    in rotating order.
#  - A hot shard: HOT_IDS ids (default 2,000,000) of one shard in one
#    statement on the Citus coordinator (minting in its shard windows,
#    src/citus.c) and on a data node of the same machine that does not
#    preload Citus, HOT_ROUNDS rounds (default 3) in alternating order, and
#    the ratio of their median times.
#  SIZES='' skips the movers, CALL_ROUNDS=0 the calls on worker 1.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use File::Temp qw(tempdir);
use IPC::Run;
use List::Util qw(max sum);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;
use Time::HiRes qw(time);

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
plan skip_all => "Citus is not installed for this PostgreSQL (no $pkglibdir/citus.so)"
  unless -f "$pkglibdir/citus.so";

my @sizes = split ' ', ($ENV{SIZES} // '10000 1000000');
my @writer_seconds = split ' ', ($ENV{WRITER_SECONDS} // '10 60');
my $rounds = $ENV{ROUNDS} // 3;
my $big_rounds = $ENV{BIG_ROUNDS} // 1;
my $call_rounds = $ENV{CALL_ROUNDS} // 5;
my $calls = $ENV{CALLS} // 1000000;
my $hot_ids = $ENV{HOT_IDS} // 2000000;
my $hot_rounds = $ENV{HOT_ROUNDS} // 3;
my $spread_rounds = $ENV{SPREAD_ROUNDS} // 3;
my $spread_shards = $ENV{SPREAD_SHARDS} // 1000;
my $spread_idle = $ENV{SPREAD_IDLE} // 11;
my $out_file = $ENV{SHID_BENCH_OUT};

sub citus_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
wal_level = logical
max_prepared_transactions = 50
max_worker_processes = 24
max_replication_slots = 20
max_wal_senders = 20
citus.local_hostname = '" . $node->host . "'\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION sharded_id');
	return $node;
}

# The Citus cluster, shard 1 as a distributed schema on a worker.
my $coord = citus_node('bench_coordinator');
my @workers = (citus_node('bench_worker1'), citus_node('bench_worker2'));
$coord->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ')');
$coord->safe_psql('postgres', "SELECT citus_add_node('" . $_->host . "', " . $_->port . ')') for @workers;
$coord->safe_psql('postgres', slurp_file("$FindBin::RealBin/../example/templates.sql") . q{
	SELECT sharded_id.add_table('app.users'), sharded_id.add_table('app.photos');
	SELECT sharded_id.create_shards(1, 1);
	SELECT count(*) FROM sharded_id.citus_distribute_shards();});
my $citus_user = $coord->safe_psql('postgres', q{INSERT INTO shard_0001.users (name) VALUES ('bench') RETURNING id});

# The router and two data nodes, shard 1 on node1.
my %nodes = (
	node1 => data_node('node1', shards => [ 0, 1 ], shard_count => 4, init => { allows_streaming => 'logical' }),
	node2 => data_node('node2', shards => [ 2, 3 ], shard_count => 4, init => { allows_streaming => 'logical' }));
my $router = router_node(\%nodes, { 0 => 'node1', 1 => 'node1', 2 => 'node2', 3 => 'node2' }, 4);
$router->safe_psql('router', q{CREATE EXTENSION IF NOT EXISTS dblink});
my $router_user = $nodes{node1}->safe_psql('app', q{INSERT INTO shard_0001.users (name) VALUES ('bench') RETURNING id});

# Shard 1's photos brought to $size rows, with ids of the past made by encode.
sub fill
{
	my ($node, $db, $size) = @_;
	my ($user) = $node == $coord ? $citus_user : $router_user;
	my $have = $node->safe_psql($db, q{
		DELETE FROM shard_0001.photos WHERE caption = 'during a move';
		SELECT count(*) FROM shard_0001.photos});
	$node->safe_psql($db, qq{
		INSERT INTO shard_0001.photos (id, user_id, caption)
		SELECT sharded_id.encode(timestamptz '2026-01-01' + g * interval '1 ms', 1, 0), $user, 'row ' || g
		FROM generate_series($have + 1, $size) g;
		VACUUM ANALYZE shard_0001.photos;});
	$_->safe_psql('postgres', 'CHECKPOINT') for ($coord, @workers, values %nodes);
	return $node->safe_psql($db, 'SELECT count(*) FROM shard_0001.photos');
}

sub router_holder
{
	return $router->safe_psql('router', 'SELECT node_name FROM sharded_id.shard_map WHERE shard_id = 1');
}

# One move under 2 writers; returns its figures.
sub one_move
{
	my ($mover, $size, $seconds) = @_;
	my $lat = tempdir(CLEANUP => 1);
	my ($node, $db, $sql, $move);
	if ($mover eq 'citus_schema_move')
	{
		($node, $db) = ($coord, 'postgres');
		$sql = "INSERT INTO shard_0001.photos (user_id, caption) VALUES ($citus_user, 'during a move');\n";
		my $from = $coord->safe_psql('postgres', 'SELECT node_port FROM sharded_id.citus_shard_node(1)');
		my ($to) = grep { $_->port != $from } @workers;
		$move = sub {
			$coord->safe_psql('postgres', "SELECT citus_schema_move('shard_0001', '" . $to->host . "', " . $to->port . ')');
		};
	}
	else
	{
		($node, $db) = ($router, 'router');
		$sql = "SELECT app_api.add_photo($router_user, 'during a move');\n";
		my $to = router_holder() eq 'node1' ? 'node2' : 'node1';
		$move = sub { $router->safe_psql('router', "CALL sharded_id.move_shard(1, '$to')"); };
	}
	my $script = "$lat/writer.sql";
	open my $fh, '>', $script or die $!;
	print $fh $sql;
	close $fh;
	my $out = '';
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '2', '-j', '2', '-T', $seconds, '-l', "--log-prefix=$lat/w", '-f', $script,
		  $node->connstr($db) ],
		'>', \$out, '2>&1');
	$node->poll_query_until($db, $mover eq 'citus_schema_move'
		? q{SELECT count(*) > 0 FROM shard_0001.photos WHERE caption = 'during a move'}
		: q{SELECT count(*) > 0 FROM ops.photos WHERE caption = 'during a move' AND sharded_id.shard_id(id) = 1})
	  or die "writers did not start: $out";
	my $t0 = time;
	$move->();
	my $total_ms = (time - $t0) * 1000;
	$h->finish;
	my ($done) = $out =~ /number of transactions actually processed: (\d+)/;
	my ($failed) = $out =~ /number of failed transactions: (\d+)/;
	my $aborted = () = $out =~ /aborted in command/g;
	my $longest = 0;
	for my $f (glob "$lat/w.*")
	{
		open my $l, '<', $f or die $!;
		while (<$l>)
		{
			my @c = split;
			$longest = $c[2] if defined $c[2] && $c[2] > $longest;
		}
		close $l;
	}
	return {
		total_ms => $total_ms, longest_ms => $longest / 1000, writes => $done // 0,
		failed => ($failed // 0) + $aborted, outlasted => ($total_ms > ($seconds - 1) * 1000 ? 1 : 0) };
}

sub median
{
	my @v = sort { $a <=> $b } @_;
	return @v % 2 ? $v[$#v / 2] : ($v[@v / 2 - 1] + $v[@v / 2]) / 2;
}

my @report;
push @report, '### citus_schema_move against move_shard, shard 1 under 2 writers without retries', '',
  '| mover | rows | moves | longest writer transaction, median (max) ms | total time, median s | writes per move | failed writes, all moves | moves longer than the writers |',
  '|---|---:|---:|---:|---:|---:|---:|---:|' if @sizes;
for my $i (0 .. $#sizes)
{
	my $size = $sizes[$i];
	my $seconds = $writer_seconds[$i] // $writer_seconds[-1];
	my $n = $size >= 1000000 ? $big_rounds : $rounds;
	my %res;
	for my $r (1 .. $n)
	{
		my @order = $r % 2 ? ('citus_schema_move', 'move_shard') : ('move_shard', 'citus_schema_move');
		for my $mover (@order)
		{
			my $rows = $mover eq 'citus_schema_move' ? fill($coord, 'postgres', $size)
			  : fill($nodes{ router_holder() }, 'app', $size);
			my $m = one_move($mover, $size, $seconds);
			$m->{rows} = $rows;
			push @{ $res{$mover} }, $m;
			note(sprintf('%s, %d rows, round %d: total %.0f ms, longest writer transaction %.1f ms, %d writes, %d failed',
				$mover, $rows, $r, $m->{total_ms}, $m->{longest_ms}, $m->{writes}, $m->{failed}));
			is($m->{failed}, 0, "$mover at $size rows, round $r: 0 failed writes");
		}
	}
	for my $mover ('citus_schema_move', 'move_shard')
	{
		my @m = @{ $res{$mover} };
		push @report, sprintf('| %s | %s | %d | %.1f (%.1f) | %.1f | %d | %d | %d |',
			$mover, $size, scalar(@m), median(map { $_->{longest_ms} } @m), max(map { $_->{longest_ms} } @m),
			median(map { $_->{total_ms} } @m) / 1000, median(map { $_->{writes} } @m),
			sum(map { $_->{failed} } @m), sum(map { $_->{outlasted} } @m));
	}
}

# next_id against nextval on worker 1.
my $w = $workers[0];
if ($call_rounds > 0)
{
	$w->safe_psql('postgres', 'CREATE SEQUENCE bench_seq');
	my $n = $calls;
	my $n1 = int($calls / 10);
	my %calls = (
		'nextval' => [ $n, qq{SELECT count(nextval('bench_seq')) FROM generate_series(1, $n)} ],
		'counter next_id(n), 8192 shards' => [ $n, qq{SELECT count(sharded_id.next_id(g % 8192)) FROM generate_series(1, $n) g} ],
		'next_id(n, seq), 8192 shards' => [ $n, qq{SELECT count(sharded_id.next_id(g % 8192, 'bench_seq')) FROM generate_series(1, $n) g} ],
		'counter next_id(n), one shard' => [ $n1, qq{SELECT count(sharded_id.next_id(7)) FROM generate_series(1, $n1) g} ]);
	my @names = sort keys %calls;
	my %ms;
	for my $r (1 .. $call_rounds)
	{
		my @order = (@names[ ($r % @names) .. $#names ], @names[ 0 .. ($r % @names) - 1 ]);
		for my $name (@order)
		{
			my $t0 = time;
			$w->safe_psql('postgres', $calls{$name}[1]);
			push @{ $ms{$name} }, (time - $t0) * 1000;
		}
	}
	my $nv = median(@{ $ms{nextval} });
	push @report, '', "### next_id against nextval on a Citus worker (group 1), median of $call_rounds rounds", '',
	  '| call | calls | ms | ns per call | × nextval per call | ids/s |', '|---|---:|---:|---:|---:|---:|';
	for my $name (sort { median(@{ $ms{$a} }) / $calls{$a}[0] <=> median(@{ $ms{$b} }) / $calls{$b}[0] } @names)
	{
		my $m = median(@{ $ms{$name} });
		push @report, sprintf('| %s | %d | %.0f | %.0f | %.2f | %.0f |', $name, $calls{$name}[0], $m,
			$m * 1e6 / $calls{$name}[0], ($m / $calls{$name}[0]) / ($nv / $calls{nextval}[0]), $calls{$name}[0] / ($m / 1000));
	}
}
is($w->safe_psql('postgres', 'SELECT sharded_id.next_id(7) > 0'), 't', 'worker 1 mints');

# A hot shard: HOT_IDS ids of one shard in one statement on the Citus
# coordinator and on a server of this machine that does not preload Citus
# (data node node1), side by side, HOT_ROUNDS rounds in alternating order.
my %hot_ms;
my %hot_on = ('Citus coordinator' => [ $coord, 'postgres' ], 'Citus worker (worker 1)' => [ $workers[0], 'postgres' ],
	'server without Citus (node1)' => [ $nodes{node1}, 'app' ]);
for my $r (1 .. $hot_rounds)
{
	for my $where ($r % 2 ? sort keys %hot_on : reverse sort keys %hot_on)
	{
		my ($node, $db) = @{ $hot_on{$where} };
		my $t0 = time;
		$node->safe_psql($db, "SELECT count(sharded_id.next_id(5)) FROM generate_series(1, $hot_ids)");
		push @{ $hot_ms{$where} }, (time - $t0) * 1000;
	}
}
my $hot_plain = median(@{ $hot_ms{'server without Citus (node1)'} });
my $hot_ratio = median(@{ $hot_ms{'Citus coordinator'} }) / $hot_plain;
push @report, '', "### A hot shard: $hot_ids ids of one shard in one statement, median of $hot_rounds rounds", '',
  '| where | s, median | s, every round | ids/s |', '|---|---:|---|---:|';
for my $where (sort keys %hot_on)
{
	my $m = median(@{ $hot_ms{$where} });
	push @report, sprintf('| %s | %.2f | %s | %.0f |', $where, $m / 1000,
		join(', ', map { sprintf('%.2f', $_ / 1000) } @{ $hot_ms{$where} }), $hot_ids / ($m / 1000));
}
push @report, '', sprintf('Ratio to the server without Citus: Citus coordinator %.2f, Citus worker %.2f', $hot_ratio,
	median(@{ $hot_ms{'Citus worker (worker 1)'} }) / $hot_plain);
note(sprintf('hot shard ratio: %.2f', $hot_ratio));

# A worker's many shards: one id in each of SPREAD_SHARDS shards in one
# statement, on worker 1 (in its windows) and on data node node1 (no Citus),
# each having minted them before: again at once, and again after
# SPREAD_IDLE s idle; SPREAD_ROUNDS rounds.  On the worker, a shard's window
# lapses within a window (100 ms), so every statement asks the coordinator
# for windows: how many requests it takes is what the ratio shows.
if ($spread_rounds > 0)
{
	my $sql = "SELECT count(sharded_id.next_id(g)) FROM generate_series(0, $spread_shards - 1) g";
	my $plain = PostgreSQL::Test::Cluster->new('bench_plain');
	$plain->init;
	$plain->append_conf('postgresql.conf', "shared_preload_libraries = 'sharded_id'");
	$plain->start;
	$plain->safe_psql('postgres', 'CREATE EXTENSION sharded_id');
	my %on = ('Citus worker (worker 1)' => [ $workers[0], 'postgres' ], 'server without Citus' => [ $plain, 'postgres' ]);
	my %ms;
	for my $where (keys %on)
	{
		my ($node, $db) = @{ $on{$where} };
		$node->safe_psql($db, $sql);	# the shards minted once
	}
	for my $r (1 .. $spread_rounds)
	{
		for my $case ('again at once', "again after $spread_idle s idle")
		{
			sleep($spread_idle) if $case ne 'again at once';
			for my $where ($r % 2 ? sort keys %on : reverse sort keys %on)
			{
				my ($node, $db) = @{ $on{$where} };
				my $t0 = time;
				$node->safe_psql($db, $sql);
				push @{ $ms{$case}{$where} }, (time - $t0) * 1000;
			}
		}
	}
	push @report, '', "### A worker's $spread_shards shards: one id each in one statement, minted before, median of $spread_rounds rounds", '',
	  '| case | Citus worker, ms | server without Citus, ms | ratio | worker, every round (ms) |', '|---|---:|---:|---:|---|';
	for my $case ('again at once', "again after $spread_idle s idle")
	{
		my $wk = median(@{ $ms{$case}{'Citus worker (worker 1)'} });
		my $pl = median(@{ $ms{$case}{'server without Citus'} });
		push @report, sprintf('| %s | %.0f | %.0f | %.2f | %s |', $case, $wk, $pl, $wk / $pl,
			join(', ', map { sprintf('%.0f', $_) } @{ $ms{$case}{'Citus worker (worker 1)'} }));
	}
}

my $report = join("\n", @report) . "\n";
note($report);
if ($out_file)
{
	open my $o, '>', $out_file or die "$out_file: $!";
	print $o $report;
	close $o;
}
done_testing();
