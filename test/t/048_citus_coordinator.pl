# test/t/048_citus_coordinator.pl
#
# Ids of a Citus cluster survive the coordinator (src/citus_learn.c): a
# coordinator that starts, is promoted or resets its ceiling asks every
# active node what it minted in and holds before it grants a window, and a
# window starts near the clock of the node that asks, not the
# coordinator's.  One cluster: a coordinator whose clock runs 15 s ahead,
# with an asynchronous standby, and two workers, the second's clock 3 s
# ahead, minting all along (a loop of statements each, as an application
# would, going on through errors).
#
#  - Asynchronous failover with a lagging standby: the standby stops
#    receiving while worker 2 mints shard 5 in windows 3 s ahead of worker
#    1's clock, until they run 2.5 s past the ceiling the standby has; the
#    coordinator is killed, and the standby, its clock 30 s behind, is
#    promoted on the coordinator's port.  Worker 1 then mints shard 5 too:
#    no id repeats (without what the nodes report, the new coordinator
#    would grant worker 1 the milliseconds worker 2 minted in), none runs
#    more than a second ahead of the clock of the worker that minted it.
#    Once the standby lags, the coordinator mints shard 8 itself, in
#    windows 15 s ahead of worker 1's clock; after the failover worker 1
#    mints shard 8: its first id lies after the newest the lost
#    coordinator minted itself, so it repeats none of those (the nodes
#    keep how far the coordinator's own windows may reach, from its
#    answers, and tell the new one; without that, worker 1 would get
#    windows from a second and a window after worker 2's clock on, inside
#    the lost coordinator's last seconds).  Before the kill the
#    coordinator's clock steps back 15 s and lower_floor makes it ask the
#    nodes again: they keep the greater bound.  None of the coordinator's
#    ids of before the step ran more than a second ahead of its clock.
#  - The promoted coordinator restarted 5 s further behind, then
#    reset_ceiling(): no id repeats.
#  - An active worker that does not answer stops the grants after a
#    restart, with an error that names it (55000).
#
# Skipped (skip_all) when Citus is not installed for the PostgreSQL under
# test.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;
use Time::HiRes qw(time);

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $bindir = `pg_config --bindir`;
chomp $bindir;
if (!-f "$pkglibdir/citus.so")
{
	plan skip_all => "Citus is not installed for this PostgreSQL (no $pkglibdir/citus.so): "
	  . 'run ../shared/citus/install.sh (PostgreSQL 18) to test sharded_id on Citus';
}
my $wait_s = $PostgreSQL::Test::Utils::timeout_default;
# The layout's epoch in Unix ms, to read the time of the ids the
# coordinator printed (set once a worker minted).
my $epoch_ms;

sub citus_conf
{
	my ($node) = @_;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
max_prepared_transactions = 50
max_connections = 60
citus.local_hostname = '" . $node->host . "'
wal_level = replica
");
	return;
}

sub worker
{
	my ($name, $clock) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	citus_conf($node);
	if (defined $clock)
	{
		my ($set, $start) = ShardedIdTest::faked_clock($node);
		$set->($clock);
		$start->();
	}
	else { $node->start; }
	$node->safe_psql('postgres', q{CREATE EXTENSION citus; CREATE EXTENSION sharded_id;
		SET citus.enable_ddl_propagation = off;
		CREATE TABLE minted (id bigint, minted_at bigint)});
	return $node;
}

# A loop on the node that mints $n ids (200 unless said) of the shard per
# statement, with the node's clock beside each, until $stop exists, going
# on through errors.  What psql prints goes to a file: a pipe nobody reads
# would fill with errors and stop the loop.
my $minters = 0;
sub minter
{
	my ($node, $stop, $shard, $n) = @_;
	my $out = $node->basedir . '/minter_' . ++$minters . '.log';
	$n //= 200;
	my $sql = "INSERT INTO minted SELECT sharded_id.next_id($shard), (extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM generate_series(1, $n)";
	my $h = IPC::Run::start(
		[ 'bash', '-c',
		  qq{while [ ! -e '$stop' ]; do "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -d '}
			. $node->connstr('postgres') . qq{' -c '$sql' && echo ok; sleep 0.02; done} ],
		'>', $out, '2>&1');
	return [ $h, $out ];
}

# A loop on the coordinator that mints 5,000 ids of the shard per
# statement (a few milliseconds, each whole) until $stop exists, and
# prints for each statement how many, the least and the greatest, and how
# many lay more than a second ahead of the coordinator's clock.
sub printer
{
	my ($node, $stop, $shard) = @_;
	my ($out, $err) = ('', '');
	my $sql = 'SELECT count(*), min(i), max(i), count(*) FILTER (WHERE '
	  . '(extract(epoch FROM sharded_id.created_at(i)) * 1000)::bigint > c + 1000) FROM '
	  . "(SELECT sharded_id.next_id($shard) AS i, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS c "
	  . 'FROM generate_series(1, 5000)) s';
	my $h = IPC::Run::start(
		[ 'bash', '-c',
		  qq{while [ ! -e '$stop' ]; do "$bindir/psql" -X -q -At -F ' ' -d '}
			. $node->connstr('postgres') . qq{' -c '$sql'; sleep 0.02; done} ],
		'>', \$out, '2>', \$err);
	return [ $h, \$out, \$err ];
}

sub count_of { return $_[0]->safe_psql('postgres', 'SELECT count(*) FROM minted'); }

# Poll until the node minted more than $count ids; true if it did in time.
sub minted_more
{
	my ($node, $count) = @_;
	my $deadline = time + $wait_s;
	while (time < $deadline)
	{
		return 1 if (eval { count_of($node) } // 0) > $count;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# How many ids the workers minted, how many repeat, and how many carry a
# time more than a second after the clock of the worker that minted them.
sub check_ids
{
	my ($label, @nodes) = @_;
	my (%seen, $total, $ahead);
	# What the coordinator's loop printed (printer).
	my $printed = ref $nodes[-1] eq 'SCALAR' ? pop @nodes : undef;
	for my $node (@nodes)
	{
		$ahead += $node->safe_psql('postgres',
			q{SELECT count(*) FROM minted
			  WHERE (extract(epoch FROM sharded_id.created_at(id)) * 1000)::bigint > minted_at + 1000});
		for my $id (split /\n/, $node->safe_psql('postgres', 'SELECT id FROM minted'))
		{
			$seen{$id}++;
			$total++;
		}
	}
	if ($printed)
	{
		my ($count, $coord_ahead) = (0, 0);
		for my $line (split /\n/, $$printed)
		{
			next unless $line =~ /^(\d+) \d+ \d+ (\d+)$/;
			$count += $1;
			$coord_ahead += $2;
		}
		cmp_ok($count, '>=', 20000, "$label: the coordinator minted $count ids itself");
		is($coord_ahead, 0, "$label: none of the coordinator's more than a second ahead of its clock");
	}
	my $repeats = $total - scalar(keys %seen);
	is($repeats, 0, "$label: $total ids on the workers, none repeats");
	is($ahead, 0, "$label: none more than a second ahead of its worker's clock");
	return;
}

my $coord = PostgreSQL::Test::Cluster->new('coordinator');
$coord->init(allows_streaming => 1);
citus_conf($coord);
my ($coord_set_clock, $coord_start) = ShardedIdTest::faked_clock($coord);
$coord_set_clock->('+15');
$coord_start->();
$coord->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION sharded_id');
my @workers = (worker('worker1'), worker('worker2', '+3'));
$coord->safe_psql('postgres', "SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ')');
$coord->safe_psql('postgres', "SELECT citus_add_node('" . $_->host . "', " . $_->port . ')') for @workers;

$coord->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($coord, 'base', has_streaming => 1);
chmod 0600, $standby->data_dir . '/server.key' if -f $standby->data_dir . '/server.key';
my ($set_clock, $start_faked) = ShardedIdTest::faked_clock($standby);
$start_faked->();
$coord->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'the standby does not stream';

my $stop = PostgreSQL::Test::Utils::tempdir() . '/stop';
my @loops = (minter($workers[0], $stop, 6), minter($workers[1], $stop, 5));
ok(minted_more($_, 2000), $_->name . ' mints') for @workers;
$epoch_ms = $workers[0]->safe_psql('postgres',
	q{SELECT (extract(epoch FROM sharded_id.created_at(id)) * 1000)::bigint - (id >> 23) FROM minted LIMIT 1});

# --- Asynchronous failover to a standby that lags and whose clock is 30 s behind.
$standby->safe_psql('postgres', q{ALTER SYSTEM SET primary_conninfo = ''; SELECT pg_reload_conf()});
$coord->poll_query_until('postgres', q{SELECT count(*) = 0 FROM pg_stat_replication})
  or die 'the standby still streams';
# Worker 2 mints on in windows that only the lost coordinator knew, until
# they run 2.5 s past the ceiling the standby has.
my $standby_ceiling = ShardedIdTest::read_ceiling($standby);
my $own = printer($coord, $stop, 8);
ok($workers[1]->poll_query_until('postgres',
		"SELECT max((extract(epoch FROM sharded_id.created_at(id)) * 1000)::bigint) > $standby_ceiling + 2500 FROM minted"),
	'failover: worker 2 mints 2.5 s past the ceiling the lagging standby has');
# The coordinator's own ids of shard 8 run past it too, over 2 s of its
# minting.
my ($own_first, $own_last) = (0, 0);
my $own_deadline = time + $wait_s;
while ($own_last - $own_first < 2000 && time < $own_deadline)
{
	$own->[0]->pump_nb;
	for my $line (split /\n/, ${ $own->[1] })
	{
		next unless $line =~ /^\d+ (\d+) (\d+) \d+$/;
		my ($least, $greatest) = (($1 >> 23) + $epoch_ms, ($2 >> 23) + $epoch_ms);
		$own_first = $least if $own_first == 0 || $least < $own_first;
		$own_last = $greatest if $greatest > $own_last;
	}
	select(undef, undef, undef, 0.1);
}
cmp_ok($own_first, '>', $standby_ceiling + 2500,
	'failover: the coordinator mints shard 8 itself 2.5 s past the ceiling the lagging standby has');
cmp_ok($own_last - $own_first, '>=', 2000, 'failover: and over 2 s of its ids');
# Its clock steps back 15 s, and lower_floor makes it ask the nodes again,
# with the bound of its own windows that its clock now gives: its own
# windows go on from where they were (one ms per ms), and the nodes keep
# the greater bound.  Killed once it minted there.
my $before_step = length ${ $own->[1] };
my $own_count = () = ${ $own->[1] } =~ /\n/g;
$coord_set_clock->('+0');
$coord->safe_psql('postgres', 'SET client_min_messages = error; SELECT sharded_id.lower_floor(42)');
my $lines_deadline = time + $wait_s;
while ((() = ${ $own->[1] } =~ /\n/g) < $own_count + 3 && time < $lines_deadline)
{
	$own->[0]->pump_nb;
	select(undef, undef, undef, 0.1);
}
cmp_ok((() = ${ $own->[1] } =~ /\n/g), '>=', $own_count + 3,
	'failover: the coordinator mints shard 8 on after its clock stepped back and lower_floor');
unlike(${ $own->[2] }, qr/ERROR/, 'failover: none of the coordinator\'s own statements failed');
$coord->stop('immediate');
$own->[0]->kill_kill;
my $own_max = 0;
for my $line (split /\n/, ${ $own->[1] })
{
	$own_max = $1 if $line =~ /^\d+ \d+ (\d+) \d+$/ && $1 > $own_max;
}
$own_max = ($own_max >> 23) + $epoch_ms;
$set_clock->('-30');
$standby->stop;
$standby->append_conf('postgresql.conf', 'port = ' . $coord->port . "\n");
$standby->{_port} = $coord->port;
$start_faked->();
$standby->promote;
my $coord_clock = $standby->safe_psql('postgres', 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint');
cmp_ok($coord_clock, '<', time * 1000 - 25000, 'failover: the promoted coordinator\'s clock runs 30 s behind');
# Worker 1 mints shards 5 and 8 now, worker 2 no more.
open my $touch1, '>', $stop or die $!;
close $touch1;
$_->[0]->finish for @loops;
unlink $stop;
@loops = (minter($workers[0], $stop, 5), minter($workers[0], $stop, 8, 1000));
my @before = map { count_of($_) } @workers;
ok(minted_more($workers[0], $before[0] + 8000), 'failover: worker 1 mints shards 5 and 8 after it');
# The new coordinator cannot know the lanes of the windows the lost one
# granted itself: it grants no window of shard 8 before their end.
ok($workers[0]->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM minted WHERE sharded_id.shard_id(id) = 8"),
	'failover: worker 1 mints shard 8, which the lost coordinator minted itself');
my $w1_first = $workers[0]->safe_psql('postgres',
	"SELECT min((extract(epoch FROM sharded_id.created_at(id)) * 1000)::bigint) FROM minted WHERE sharded_id.shard_id(id) = 8");
cmp_ok($w1_first, '>', $own_max,
	'failover: worker 1\'s first id of shard 8 lies after the newest the lost coordinator minted itself');
note(sprintf('failover: worker 1\'s first id of shard 8 %.1f s after the newest the lost coordinator minted itself',
		($w1_first - $own_max) / 1000));
check_ids('failover', @workers, \(my $before = substr(${ $own->[1] }, 0, $before_step)));
push @loops, minter($workers[1], $stop, 7);

# --- A restart 5 s further behind, then reset_ceiling(): both workers mint on.
$standby->stop('immediate');
$set_clock->('-35');
$start_faked->();
$standby->safe_psql('postgres', 'SELECT sharded_id.reset_ceiling()');
@before = map { count_of($_) } @workers;
ok(minted_more($workers[$_], $before[$_] + 4000), 'restart and reset: worker ' . ($_ + 1) . ' mints again')
  for 0 .. 1;
check_ids('restart and reset', @workers);

open my $touch, '>', $stop or die $!;
close $touch;
$_->[0]->finish for @loops;

# --- An active worker that does not answer: no grant after a restart, by name.
$workers[1]->stop;
$standby->stop('immediate');
$start_faked->();
my ($r, $o, $e) = $workers[0]->psql('postgres', "\\set VERBOSITY verbose\nSELECT sharded_id.next_id(6)");
like($e, qr/55000: .*grants no shard window until node \S+:${\ $workers[1]->port } \(group \d+\) reports/,
	'an active worker that does not answer stops the grants, by name');
$workers[1]->start;
ok($workers[0]->poll_query_until('postgres', 'SELECT sharded_id.next_id(6) > 0'),
	'once it answers, the other worker mints');

$_->stop for (@workers, $standby);
done_testing();
