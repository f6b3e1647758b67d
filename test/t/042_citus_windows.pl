# test/t/042_citus_windows.pl
#
# Shard windows on a Citus cluster that lives (src/citus.c): a coordinator
# and two workers with shared_preload_libraries = 'citus,sharded_id' and no
# sharded_id setting.  Each node writes the ids it mints into a local table
# (minted); every check of repeats reads all of them.  Skipped (skip_all)
# when Citus is not installed for the PostgreSQL under test.
#
#  - A hot shard on the coordinator alone uses the whole sequence field:
#    more than 32 ids (1.6's share of a node) in one millisecond.
#  - Churn: worker 1 removed and added again 300 times (a new group id
#    each time, past group 31, where 1.6 refused), with a failed add to a
#    dead port every 100th cycle, minting 300 ids of shard 1 directly after
#    each add while the coordinator mints for shard 1 all along: 0 repeats,
#    and in each millisecond of shard 1 minted on both nodes, each node's
#    ids in a lane of its own.
#  - A removed node refuses to mint once its window ended (55000, naming
#    why), within a few seconds.  Removed or disabled and refused, then
#    added again or activated, its first statement mints (6 cycles): no
#    back-off outlives a change of pg_dist_node.
#  - A rolling change of sharded_id.stripes and sharded_id.stripe (1/0 to
#    4/2), one node at a time with restarts, the coordinator last, under 3
#    minters: a worker that disagrees refuses and its error names the
#    setting and both values; every node mints with the new stripe once all
#    have it; 0 repeats.
#  - Many shards at once: the coordinator and worker 1 each mint 300 shards
#    in turn (a worker renews the windows of the shards it minted lately
#    with the one it asks for): 0 repeats.
#  - Kills: the coordinator stopped at once ('immediate') while the three
#    nodes mint, and started again; then worker 1: 0 repeats.
#  - reset_ceiling on the coordinator right after its restart: the next
#    window of a shard starts after one granted before the restart, a second
#    ahead of the clock.
#  - Crashes of the coordinator at each injection point of a grant
#    ("sharded-id-grant-...", read from src/*.c), while worker 1 asks for a
#    window: the worker's statement timeout cancels its request while the
#    coordinator holds it; the coordinator starts again with its clock 5 s,
#    then 30 s behind (libfaketime), and both nodes mint that shard at
#    once, 0 repeats, none of the worker's ids more than a second ahead of
#    its clock.  Then a plain role's request, held there and canceled by
#    its own statement timeout, backs nobody off: a superuser's next_id of
#    that shard right after mints.  Only where PostgreSQL was built with
#    injection points.
#  - A coordinator on 2.0's library whose extension is still at 1.6 (a
#    rolling upgrade) refuses to mint (55000), and mints once updated.  Its
#    update refuses (55000) while a worker runs an older library or does
#    not answer, and runs once the worker runs 2.0's.
#  - A coordinator whose clock runs 5 s ahead (libfaketime): a worker's
#    window lies 5 s ahead of the worker's clock; lower_floor there drops
#    it, and the worker's ids repeat none of the coordinator's.  Then the
#    coordinator's clock steps back 5 s: both nodes mint that shard on
#    (its windows move on one ms per ms), 0 repeats, and again after a
#    restart of the coordinator.
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

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $bindir = `pg_config --bindir`;
chomp $bindir;
if (!-f "$pkglibdir/citus.so" || !-f "$sharedir/extension/citus.control")
{
	plan skip_all => "Citus is not installed for this PostgreSQL (no $pkglibdir/citus.so): "
	  . 'run ../shared/citus/install.sh (PostgreSQL 18) to test sharded_id on Citus';
}

# The faked clocks of nodes made with one: name => [set, start].
my %clock;

sub citus_node
{
	my ($name, $faked) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
max_prepared_transactions = 50
max_connections = 60
max_worker_processes = 16
citus.local_hostname = '" . $node->host . "'
");
	if ($faked)
	{
		$clock{$name} = [ ShardedIdTest::faked_clock($node) ];
		$clock{$name}[1]->();
	}
	else { $node->start; }
	$node->safe_psql('postgres', q{
		CREATE EXTENSION citus; CREATE EXTENSION sharded_id;
		SET citus.enable_ddl_propagation = off;
		CREATE TABLE minted (id bigint, minted_at timestamptz DEFAULT clock_timestamp(), n bigserial)});
	return $node;
}

# The SQLSTATE and message of a statement that must fail, or 'none'.
sub refusal
{
	my ($node, $sql) = @_;
	my ($r, $o, $e) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ('none', '') if $r == 0;
	return $e =~ /ERROR:\s+([0-9A-Z]{5}):\s*(.*)/ ? ($1, $2) : ('?', $e);
}

sub add_node
{
	my ($coord, $node) = @_;
	$coord->safe_psql('postgres', "SELECT citus_add_node('" . $node->host . "', " . $node->port . ')');
	return $node->safe_psql('postgres', 'SELECT groupid FROM pg_dist_local_group');
}

sub remove_node
{
	my ($coord, $node) = @_;
	$coord->safe_psql('postgres', "SELECT citus_remove_node('" . $node->host . "', " . $node->port . ')');
	return;
}

sub mint
{
	my ($node, $n, $shard) = @_;
	$shard //= 1;
	return $node->safe_psql('postgres',
		"INSERT INTO minted (id) SELECT sharded_id.next_id($shard) FROM generate_series(1, $n)");
}

# Mint, trying again for at most 15 s while the node is refused (a back-off
# after the coordinator could not be reached, say); true once it minted.
sub mint_eventually
{
	my ($node, $n, $shard) = @_;
	my $deadline = time + 15;
	while (1)
	{
		my ($r, $o, $e) = $node->psql('postgres',
			"INSERT INTO minted (id) SELECT sharded_id.next_id($shard) FROM generate_series(1, $n)");
		return 1 if $r == 0;
		if (time > $deadline)
		{
			diag($node->name . ": $e");
			return 0;
		}
		select(undef, undef, undef, 0.1);
	}
}

# A loop that mints 500 ids of shard 1 per transaction on the node until
# $stop exists, going on through refusals and restarts; returns its handle
# and the file its output goes to.
my $minters = 0;
sub minter
{
	my ($node, $stop, $sql) = @_;
	# A file, not a pipe nobody reads until the end: errors would fill it
	# and stop the loop.
	my $out = $node->basedir . '/minter_' . ++$minters . '.log';
	$sql //= 'INSERT INTO minted (id) SELECT sharded_id.next_id(1) FROM generate_series(1, 500)';
	my $h = IPC::Run::start(
		[ 'bash', '-c',
		  qq{while [ ! -e '$stop' ]; do "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -d '}
			. $node->connstr('postgres') . qq{' -c '$sql' && echo ok; sleep 0.02; done} ],
		'>', $out, '2>&1');
	return [ $h, $out ];
}

sub stop_minters
{
	my ($stop, @loops) = @_;
	open my $touch, '>', $stop or die $!;
	close $touch;
	$_->[0]->finish for @loops;
	return map { scalar(() = slurp_file($_->[1]) =~ /^ok$/mg) } @loops;
}

# Every id minted so far on the nodes: how many, and how many repeat.  What
# a set of nodes minted is kept from call to call, and each call reads
# only the rows added since (a table's n): the tables only grow, and
# nothing mints into them while this reads.
my %checked;

sub repeats
{
	my (@nodes) = @_;
	my $set = $checked{ join ' ', sort map { $_->name } @nodes } //=
	  { seen => {}, last => {}, total => 0, repeats => 0 };
	for my $node (@nodes)
	{
		my $last = $set->{last}{ $node->name } // 0;
		for my $row (split /\n/,
			$node->safe_psql('postgres', "SELECT n, id FROM minted WHERE n > $last ORDER BY n"))
		{
			my ($n, $id) = split /\|/, $row;
			$set->{last}{ $node->name } = $n;
			$set->{total}++;
			$set->{repeats}++ if $set->{seen}{$id}++;
		}
	}
	return ($set->{total}, $set->{repeats});
}

# Poll, at most $secs s, until the node's table has more than $count ids.
sub minted_more
{
	my ($node, $count, $secs) = @_;
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		my $now = eval { $node->safe_psql('postgres', 'SELECT count(*) FROM minted') } // 0;
		return 1 if $now > $count;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

my $coord = citus_node('coordinator', 1);
my $w1 = citus_node('worker1');
my $w2 = citus_node('worker2');
$coord->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ')');
add_node($coord, $w1);

# --- A hot shard minted by the coordinator alone: the whole field.
mint($coord, 20000, 3);
my $per_ms = $coord->safe_psql('postgres', q{
	SELECT max(c) FROM (SELECT count(*) AS c FROM minted
	                    WHERE sharded_id.shard_id(id) = 3 GROUP BY sharded_id.created_at(id)) x});
ok($per_ms > 32, "a hot shard on the coordinator minted up to $per_ms ids in one millisecond (1.6: 32)");
is($coord->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM minted'), '0',
	'and none repeats');

# --- Churn: 300 remove/add cycles of worker 1 while the coordinator mints.
my $dead = PostgreSQL::Test::Cluster::get_free_port();
my $stop = $coord->basedir . '/stop_churn';
my $coord_loop = minter($coord, $stop);
ok(minted_more($coord, 20000, 30), 'the coordinator mints shard 1 in a loop');
my (@groups, @failed_adds);
my $started = time;
my ($cycles, $per_add) = (300, 300);
for my $cycle (1 .. $cycles)
{
	remove_node($coord, $w1);
	if ($cycle % 100 == 0)
	{
		my ($r, $o, $e) = $coord->psql('postgres', "\\set VERBOSITY verbose\nSELECT citus_add_node('"
			  . $coord->host . "', $dead)");
		push @failed_adds, ($r != 0 && $e =~ /ERROR:\s+([0-9A-Z]{5})/ ? $1 : 'none');
	}
	push @groups, add_node($coord, $w1);
	mint($w1, $per_add);
}
my $churn_s = time - $started;
# The coordinator mints once more after worker 1's last ids, then stops.
ok(minted_more($coord, $coord->safe_psql('postgres', 'SELECT count(*) FROM minted'), 30),
	'churn: the coordinator mints on after the last cycle');
my ($coord_ok) = stop_minters($stop, $coord_loop);
ok($coord_ok > 0, "churn: the coordinator minted all along ($coord_ok transactions of 500 ids)");
unlike(slurp_file($coord_loop->[1]), qr/ERROR/, 'churn: none of its calls failed');
is(join(',', @failed_adds), join(',', ('08006') x ($cycles / 100)),
	'churn: ' . ($cycles / 100) . ' adds of a node at a dead port failed (08006)');
ok($groups[-1] > 31, "churn: worker 1 went through groups $groups[0] to $groups[-1], past 31, in "
	  . sprintf('%.0f s', $churn_s));
is($w1->safe_psql('postgres', 'SELECT count(*) FROM minted'), $cycles * $per_add,
	"churn: worker 1 minted its ids, $per_add after each of $cycles adds");
my ($total, $repeats) = repeats($coord, $w1);
is($repeats, 0, "churn: 0 repeats over $total ids of the coordinator and worker 1");
# Windows are exclusive: in each millisecond of shard 1 minted on both
# nodes, each node's sequence fields lie in a lane of its own, though their
# minting interleaved in time.
my %coord_seq;
for (split /\n/, $coord->safe_psql('postgres',
	'SELECT sharded_id.created_at(id), min(sharded_id.seq_id(id)), max(sharded_id.seq_id(id)) FROM minted WHERE sharded_id.shard_id(id) = 1 GROUP BY 1'))
{
	my ($t, $lo, $hi) = split /\|/;
	$coord_seq{$t} = [ $lo, $hi ];
}
my @w1_seq = map { [ split /\|/ ] } split /\n/, $w1->safe_psql('postgres',
	'SELECT sharded_id.created_at(id), min(sharded_id.seq_id(id)), max(sharded_id.seq_id(id)) FROM minted GROUP BY 1');
my @both = grep { $coord_seq{ $_->[0] } } @w1_seq;
my $mixed = grep { !($_->[2] < $coord_seq{ $_->[0] }[0] || $coord_seq{ $_->[0] }[1] < $_->[1]) } @both;
is($mixed, 0, 'churn: in the ' . scalar(@both) . ' milliseconds of shard 1 minted on both nodes, their lanes lie apart ('
	  . scalar(@w1_seq) . ' of worker 1, ' . scalar(keys %coord_seq) . ' of the coordinator)');
my ($coord_first, $coord_last) = split /\|/, $coord->safe_psql('postgres',
	'SELECT min(minted_at), max(minted_at) FROM minted WHERE sharded_id.shard_id(id) = 1');
is($w1->safe_psql('postgres', "SELECT count(*) FROM minted WHERE minted_at BETWEEN '$coord_first' AND '$coord_last'"),
	$cycles * $per_add, 'churn: every id of worker 1 was minted while the coordinator minted the same shard');

# --- A removed node refuses to mint once its window ended.
remove_node($coord, $w1);
my $removed_at = time;
my ($state, $message) = ('none', '');
while (time - $removed_at < 30)
{
	($state, $message) = refusal($w1, 'INSERT INTO minted (id) SELECT sharded_id.next_id(1)');
	last if $state ne 'none';
	select(undef, undef, undef, 0.05);
}
my $refused_after = time - $removed_at;
is($state, '55000', sprintf('worker 1, removed, refuses to mint %.2f s later', $refused_after));
like($message, qr/^this Citus node may not mint: node \S+:\d+ \(group \d+\) is not an active node of the Citus cluster/,
	'and says that it is not an active node of the Citus cluster');
ok($refused_after < 3, 'within its window and the next, a second ahead at most, and the test\'s round trips');
($state, $message) = refusal($w1, 'SELECT sharded_id.next_id(1)');
is($state, '55000', 'a new session of worker 1 is refused too');
# Refused while out of the cluster, then back in: its first statement
# mints, with no back-off left from the refusals (each cycle: removed, or
# disabled, until refused; added again, or activated).
my @first_after;
for my $cycle (1 .. 6)
{
	my $disable = $cycle % 2 == 0;
	if ($cycle > 1)
	{
		$coord->safe_psql('postgres', $disable
			? "SELECT citus_disable_node('" . $w1->host . "', " . $w1->port . ', synchronous => true)'
			: "SELECT citus_remove_node('" . $w1->host . "', " . $w1->port . ')');
		my $deadline = time + 30;
		($state) = refusal($w1, 'SELECT sharded_id.next_id(1)') while $state eq 'none' && time < $deadline;
	}
	push @first_after, "$state:" . (($disable && $cycle > 1) ? 'activated' : 'added');
	$coord->safe_psql('postgres', ($disable && $cycle > 1)
		? "SELECT citus_activate_node('" . $w1->host . "', " . $w1->port . ')'
		: "SELECT citus_add_node('" . $w1->host . "', " . $w1->port . ')');
	my ($again, $why) = refusal($w1, 'INSERT INTO minted (id) SELECT sharded_id.next_id(1) FROM generate_series(1, 10)');
	$first_after[-1] .= ":$again";
	diag("cycle $cycle: $why") if $again ne 'none';
	$state = 'none';
}
is(join(' ', @first_after), join(' ', map { $_ == 1 ? '55000:added:none' : $_ % 2 ? '55000:added:none' : '55000:activated:none' } 1 .. 6),
	'removed or disabled, worker 1 is refused; added again or activated, its first statement mints (6 cycles)');

# --- A rolling change of the stripes under 3 minters.
add_node($coord, $w2);
my $roll_stop = $coord->basedir . '/stop_roll';
my @roll = ($coord, $w1, $w2);
my %loops = map { ($_->name => minter($_, $roll_stop)) } @roll;
for my $node (@roll)
{
	my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM minted');
	ok(minted_more($node, $before + 1000, 30), $node->name . ' mints shard 1 before the change');
}
for my $node ($w1, $w2, $coord)
{
	$node->append_conf('postgresql.conf', "sharded_id.stripes = 4\nsharded_id.stripe = 2\n");
	$node->restart;
	next if $node == $coord;
	($state, $message) = refusal($node, 'SELECT sharded_id.next_id(1)');
	is($state, '55000', $node->name . ' with sharded_id.stripes = 4 refuses while the coordinator has 1');
	like($message, qr/sharded_id\.stripes is 4 there and 1 on the coordinator/,
		'and its error names the setting and both values');
}
# Every node mints with stripe 2 of 4 once all have it.
for my $node (@roll)
{
	my $ok = 0;
	my $deadline = time + 30;
	while (time < $deadline && !$ok)
	{
		$ok = $node->safe_psql('postgres', q{
			SELECT count(*) > 0 FROM minted WHERE minted_at > pg_postmaster_start_time()}) eq 't';
		select(undef, undef, undef, 0.1) unless $ok;
	}
	ok($ok, $node->name . ' mints after the change');
	is($node->safe_psql('postgres', q{
		SELECT count(*) FILTER (WHERE sharded_id.stripe_id(id, 4) <> 2) FROM minted
		WHERE minted_at > pg_postmaster_start_time()}), '0', $node->name . "'s new ids carry stripe 2 of 4");
}

# --- Many shards at once: the coordinator and worker 1 each mint 300
# shards in turn, so that a worker's request renews many windows at once.
my $many_stop = $coord->basedir . '/stop_many';
my $many_sql = 'INSERT INTO minted (id) SELECT sharded_id.next_id(1000 + g % 300) FROM generate_series(1, 3000) g';
my @many = map { minter($_, $many_stop, $many_sql) } ($coord, $w1);
for my $node ($coord, $w1)
{
	ok(minted_more($node, $node->safe_psql('postgres', 'SELECT count(*) FROM minted') + 30000, 60),
		$node->name . ' mints 300 shards in turn');
}
my @many_ok = stop_minters($many_stop, @many);
my $many_both = $w1->safe_psql('postgres',
	'SELECT count(DISTINCT sharded_id.shard_id(id)) FROM minted WHERE sharded_id.shard_id(id) >= 1000');
is($many_both, '300', 'worker 1 minted every one of the 300 shards (' . join(', ', @many_ok)
	  . ' transactions of 3,000 ids on the coordinator and worker 1)');
($total, $repeats) = repeats($coord, $w1);
is($repeats, 0, "many shards at once: 0 repeats over $total ids of the coordinator and worker 1");

# --- Kills: the coordinator, then worker 1, stopped at once while all mint.
my %count = map { ($_->name => $_->safe_psql('postgres', 'SELECT count(*) FROM minted')) } @roll;
$coord->stop('immediate');
$coord->start;
for my $node (@roll)
{
	ok(minted_more($node, $count{ $node->name } + 1000, 30),
		$node->name . ' mints again after the coordinator was killed and started');
}
%count = map { ($_->name => $_->safe_psql('postgres', 'SELECT count(*) FROM minted')) } @roll;
$w1->stop('immediate');
$w1->start;
for my $node (@roll)
{
	ok(minted_more($node, $count{ $node->name } + 1000, 30),
		$node->name . ' mints again after worker 1 was killed and started');
}
my @ok = stop_minters($roll_stop, map { $loops{ $_->name } } @roll);
ok((grep { $_ > 0 } @ok) == 3, 'rolling change and kills: the three loops minted ' . join(', ', @ok)
	  . ' transactions of 500 ids');
($total, $repeats) = repeats(@roll);
is($repeats, 0, "rolling change and kills: 0 repeats over $total ids of the three nodes");

# --- reset_ceiling on the coordinator right after its restart: a window it
# granted before, ahead of the clock (a requester's minimum start a second
# ahead, a window of 1 s), is no slot's any more; no later grant of the
# shard may overlap it.
$coord->append_conf('postgresql.conf', "sharded_id.citus_window = 1000\n");
$coord->reload;
my $grant_sql = sub {
	my ($min_start) = @_;
	return "SELECT window_start || ' ' || window_end FROM sharded_id.citus_grant_windows(ARRAY[400], 'instagram', "
	  . $w1->safe_psql('postgres', 'SELECT groupid FROM pg_dist_local_group') . ", '" . $w1->host . "', "
	  . $w1->port . ", ARRAY[$min_start]::bigint[], "
	  . "current_setting('sharded_id.stripes')::int, current_setting('sharded_id.stripe')::int, true)";
};
my ($ahead_start, $ahead_end) = split / /, $coord->safe_psql('postgres',
	$grant_sql->("(extract(epoch FROM clock_timestamp()) * 1000)::bigint + 990"));
$coord->stop('immediate');
$coord->start;
$coord->safe_psql('postgres', 'SELECT sharded_id.reset_ceiling()');
# A grant that would start more than a second ahead of the clock is put
# off (NULLs): ask again, for 5 s at most.
my $after_start = '';
my $asked_until = time + 5;
while ($after_start eq '' && time < $asked_until)
{
	($after_start) = split / /, $coord->safe_psql('postgres', $grant_sql->(0));
	$after_start //= '';
	select(undef, undef, undef, 0.1) if $after_start eq '';
}
ok($after_start >= $ahead_end, 'reset_ceiling after a restart of the coordinator: the next window of a shard ('
	  . "from $after_start) starts after the one granted before the restart ($ahead_start to $ahead_end)");
$coord->append_conf('postgresql.conf', "sharded_id.citus_window = 100\n");
$coord->reload;

# --- Crashes of the coordinator in a grant, at each of its injection points.
my %found;
for my $file (glob("$FindBin::RealBin/../../src/*.c"))
{
	my $text = slurp_file($file);
	$found{$1} = 1 while $text =~ /"(sharded-id-grant-[a-z-]+)"/g;
}
my @points = sort keys %found;
my $include = `pg_config --includedir-server`;
chomp $include;
SKIP:
{
	skip 'PostgreSQL was built without injection points', 12 * scalar(@points) + 4
	  unless slurp_file("$include/pg_config.h") =~ /^#define USE_INJECTION_POINTS 1$/m;
	ok(@points >= 2, 'src/*.c names the injection points of a grant: ' . join(', ', @points));
	my $shard = 20;
	for my $case (map { my $p = $_; map { [ $p, $_ ] } (5, 30) } @points)
	{
		my ($point, $behind) = @$case;
		$shard++;
		$coord->safe_psql('postgres', q{
			SET citus.enable_ddl_propagation = off;
			CREATE EXTENSION IF NOT EXISTS injection_points});
		mint($_, 1000, $shard) for ($coord, $w1);
		$coord->safe_psql('postgres', "SELECT injection_points_attach('$point', 'wait')");
		# Worker 1 asks for a window of a shard it never minted.
		my $asked = $shard + 100;
		my ($out, $err) = ('', '');
		my $h = IPC::Run::start(
			[ "$bindir/psql", '-X', '-d', $w1->connstr('postgres'), '-c',
			  "SET statement_timeout = '3s'; INSERT INTO minted (id) SELECT sharded_id.next_id($asked)" ],
			'>', \$out, '2>', \$err);
		my $waiting = $coord->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = '$point'");
		ok($waiting, "a grant to worker 1 waits at $point");
		# The request is interruptible: the worker's statement timeout ends it.
		my $t0 = time;
		$h->finish;
		like($err, qr/canceling statement due to statement timeout/,
			sprintf('the request of worker 1, waiting for the coordinator, is canceled by its statement timeout (after %.1f s more)',
				time - $t0));
		# Killed there, and started with its clock $behind s behind.
		$coord->stop('immediate');
		$clock{coordinator}[0]->("-$behind");
		$clock{coordinator}[1]->();
		ok(mint_eventually($_, 1000, $asked) && mint_eventually($_, 1000, $shard),
			"crash at $point, restart $behind s behind: " . $_->name . " mints shards $asked and $shard again")
		  for ($w1, $coord);
		($total, $repeats) = repeats($coord, $w1);
		is($repeats, 0, "crash at $point, restart $behind s behind: both nodes mint shards $shard and $asked again, 0 repeats over $total ids");
		is($w1->safe_psql('postgres', "SELECT count(*) FROM minted WHERE sharded_id.shard_id(id) IN ($shard, $asked)"
				  . " AND sharded_id.created_at(id) > minted_at + interval '1 s'"), '0',
			"crash at $point, restart $behind s behind: none of worker 1's ids more than a second ahead of its clock");
	}
	# The coordinator's clock right again for what follows, which times
	# requests out: run 30 s behind under libfaketime, it ended a request
	# by its 5 s statement timeout after one second.
	$coord->stop;
	$clock{coordinator}[0]->('+0');
	$clock{coordinator}[1]->();

	# A plain role's request canceled by its own statement timeout, while
	# the coordinator holds it, backs nobody off: a superuser's next_id of
	# that shard on the worker right after mints.
	my $point = $points[0];
	$w1->safe_psql('postgres', q{
		SET citus.enable_ddl_propagation = off;
		CREATE ROLE plain LOGIN;
		GRANT USAGE ON SCHEMA sharded_id TO plain;
		GRANT EXECUTE ON FUNCTION sharded_id.next_id(integer) TO plain});
	$coord->safe_psql('postgres', "SELECT injection_points_attach('$point', 'wait')");
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ "$bindir/psql", '-X', '-U', 'plain', '-d', $w1->connstr('postgres'), '-c',
		  "SET statement_timeout = '2s'; SELECT sharded_id.next_id(300)" ],
		'>', \$out, '2>', \$err);
	ok($coord->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = '$point'"),
		"a plain role's request for a window of shard 300 waits at $point");
	$h->finish;
	like($err, qr/canceling statement due to statement timeout/,
		"the plain role's request is canceled by its own statement timeout");
	$coord->safe_psql('postgres', "SELECT injection_points_detach('$point')");
	my @victim = refusal($w1, 'SELECT sharded_id.next_id(300)');
	is("@victim", 'none ',
		"a superuser's next_id(300) on worker 1 right after the plain role's cancel mints (no back-off)");
	$coord->safe_psql('postgres', "SELECT injection_points_wakeup('$point')");
}

# --- The rolling upgrade from 1.6: a coordinator whose extension is still
# at 1.6 does not mint in windows (nodes on 1.6's library would mint with
# their group id beside it), and mints once updated to 2.0.
my $c16 = PostgreSQL::Test::Cluster->new('coordinator16');
$c16->init;
$c16->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
max_prepared_transactions = 50
citus.local_hostname = '" . $c16->host . "'
");
$c16->start;
$c16->safe_psql('postgres', "CREATE EXTENSION citus; CREATE EXTENSION sharded_id VERSION '1.6';
	SELECT citus_set_coordinator_host('" . $c16->host . "', " . $c16->port . ')');
my ($c16_r, $c16_o, $c16_e) = $c16->psql('postgres', "\\set VERBOSITY verbose\nSELECT sharded_id.next_id(1)");
like($c16_e, qr/55000: this Citus coordinator may not mint until sharded_id is updated to 2\.0/,
	'a Citus coordinator on 2.0\'s library with its extension at 1.6 refuses to mint (55000)');
like($c16_e, qr/version 1\.6/, 'and names the version');
# A worker whose sessions report no sharded_id.library_version, as 1.6's
# library does (here: the library not preloaded), stops the update; so does
# a worker that does not answer; restarted with 2.0's library, it lets it run.
my $w16 = PostgreSQL::Test::Cluster->new('worker16');
$w16->init;
$w16->append_conf('postgresql.conf', "shared_preload_libraries = 'citus'
max_prepared_transactions = 50
citus.local_hostname = '" . $w16->host . "'
");
$w16->start;
$w16->safe_psql('postgres', "CREATE EXTENSION citus; CREATE EXTENSION sharded_id VERSION '1.6'");
add_node($c16, $w16);
my ($upd_state, $upd_message) = refusal($c16, 'ALTER EXTENSION sharded_id UPDATE');
is($upd_state, '55000', 'the update on a coordinator refuses while a worker runs an older library (55000)');
like($upd_message, qr/a Citus node does not run the sharded_id library of version 2\.0/, 'and says so');
my (undef, undef, $upd_e) = $c16->psql('postgres', 'ALTER EXTENSION sharded_id UPDATE');
like($upd_e, qr/DETAIL:\s+Node \S+:${\ $w16->port } \(group \d+\): its library is of version 1\.6 or earlier/,
	'its detail names the worker and its library');
is($c16->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'sharded_id'"), '1.6',
	'and the extension stays at 1.6');
$w16->stop;
($upd_state, $upd_message) = refusal($c16, 'ALTER EXTENSION sharded_id UPDATE');
is($upd_state, '55000', 'a worker that does not answer stops the update too');
$w16->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'\n");
$w16->start;
$c16->safe_psql('postgres', 'ALTER EXTENSION sharded_id UPDATE');
is($c16->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'sharded_id'"), '2.1',
	'once the worker runs the new library, the update runs');
($c16_r, $c16_o, $c16_e) = $c16->psql('postgres',
	'SELECT count(DISTINCT sharded_id.next_id(1)) FROM generate_series(1, 5000)');
is($c16_o, '5000', "once updated to 2.0 it mints in windows ($c16_e)");
$w16->stop;
$c16->stop;

# --- lower_floor on a worker whose window lies ahead of its clock: the
# coordinator's clock runs 5 s ahead (libfaketime), so the worker's window,
# granted at the coordinator's time, lies 5 s ahead of the worker's clock.
# lower_floor moves the slot back to the worker's clock and must drop the
# window: the milliseconds below it were the coordinator's.  Then the
# coordinator's clock steps back 5 s: its error names its own clock.
my $skew = 5;
my $cc = PostgreSQL::Test::Cluster->new('coordinator_ahead');
my $cw = PostgreSQL::Test::Cluster->new('worker_behind');
my ($set_clock, $start_faked) = ShardedIdTest::faked_clock($cc);
for my $node ($cc, $cw)
{
	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
max_prepared_transactions = 50
citus.local_hostname = '" . $node->host . "'
");
}
$set_clock->("+$skew");
$start_faked->();
$cw->start;
for my $node ($cc, $cw)
{
	$node->safe_psql('postgres', q{
		CREATE EXTENSION citus; CREATE EXTENSION sharded_id;
		SET citus.enable_ddl_propagation = off;
		CREATE TABLE minted (id bigint, n bigserial)});
}
$cc->safe_psql('postgres', "SELECT citus_set_coordinator_host('" . $cc->host . "', " . $cc->port . ')');
add_node($cc, $cw);
# One session of the coordinator reads the worker's clock, then its own:
# a slow psql start on a busy machine cannot shrink the lead measured.
my $clock_sql = 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint';
my $lead = $cc->safe_psql('postgres', qq{
	SELECT result AS worker_ms FROM pg_catalog.run_command_on_workers(\$\$$clock_sql\$\$) \\gset
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - :worker_ms});
cmp_ok($lead, '>', ($skew - 1) * 1000, "the coordinator's clock runs ahead of the worker's ($lead ms)");
my $t0 = time;
$cc->safe_psql('postgres', 'INSERT INTO minted SELECT sharded_id.next_id(1) FROM generate_series(1, 200000)');
# When the worker's clock reads the coordinator's T0, the worker mints one
# id (a window at the coordinator's time), lowers the floor, and mints.  If
# the coordinator's ids reach further (it took long to mint them on a busy
# machine), the worker waits until its clock is 0.3 s short of the newest:
# the windows granted end at most a window past it, less than 1 s ahead of
# the worker's clock, and lower_floor still moves the worker's slot into
# milliseconds the coordinator minted.
my $newest = $cc->safe_psql('postgres', 'SELECT extract(epoch FROM max(sharded_id.created_at(id))) FROM minted');
my $at = $t0 + $skew + 0.02;
$at = $newest - 0.3 if $newest - 0.3 > $at;
sleep($at - time) if time < $at;
$cw->safe_psql('postgres', q{
	INSERT INTO minted SELECT sharded_id.next_id(1);
	SET client_min_messages = error;
	SELECT sharded_id.lower_floor(1);
	INSERT INTO minted SELECT sharded_id.next_id(1) FROM generate_series(1, 200000)});
($total, $repeats) = repeats($cc, $cw);
is($repeats, 0, "lower_floor on a worker drops its window: 0 repeats over $total ids of the coordinator and the worker");

# The coordinator's clock steps back 5 s, behind the windows it granted:
# they move on one ms per ms, and both nodes mint shard 1.
$set_clock->('+0');
my ($cb_r, $cb_o, $cb_e) = $cc->psql('postgres',
	'INSERT INTO minted SELECT sharded_id.next_id(1) FROM generate_series(1, 200000)');
is($cb_r, 0, "after a step back of the coordinator's clock it mints a shard it granted windows of ($cb_e)");
($cb_r, $cb_o, $cb_e) = $cw->psql('postgres',
	'INSERT INTO minted SELECT sharded_id.next_id(1) FROM generate_series(1, 200000)');
is($cb_r, 0, "and so does the worker ($cb_e)");
($total, $repeats) = repeats($cc, $cw);
is($repeats, 0, "after the coordinator's clock stepped back: 0 repeats over $total ids");
# Restarted, the coordinator grants after the ceiling it started with and
# after where its own windows could reach, as the worker kept it: it mints
# again once its clock is within a second of them (about 5 s).
$cc->stop;
$start_faked->();
my $cc_count = $cc->safe_psql('postgres', 'SELECT count(*) FROM minted');
ok(mint_eventually($cc, 200000, 1), 'restarted behind its windows, the coordinator mints shard 1 again');
is($cc->safe_psql('postgres', 'SELECT count(*) FROM minted'), $cc_count + 200000, 'and its 200,000 ids are stored');
($total, $repeats) = repeats($cc, $cw);
is($repeats, 0, "after a restart of the coordinator behind its windows: 0 repeats over $total ids");
$cc->stop;
$cw->stop;

done_testing();
