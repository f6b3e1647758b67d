# test/t/042_citus_churn.pl
#
# Minter numbers on a Citus cluster that lives (src/citus.c): a coordinator
# and two workers with shared_preload_libraries = 'citus,sharded_id' and
# sharded_id.citus_lease_time = 4s.  Skipped (skip_all) when Citus is not
# installed for the PostgreSQL under test.
#
#  - Churn: worker 1 removed and added again 40 times (a new group id each
#    time, past group 31, where 1.6 refused), minting 2,000 ids of shard 1
#    after each add while the coordinator mints for shard 1 all along:
#    worker 1 keeps one number throughout, and 0 repeats.
#  - A removed node refuses to mint once its lease ran out (55000, naming
#    why), and its number goes to the next new node, worker 2 (dense
#    numbers; leased by a role that is not a superuser), whose ids of it
#    start after the removed node's lease.
#    Worker 1, added again, finds its number gone: it refuses until
#    restarted, then mints with another.
#  - A rolling change of sharded_id.stripes (1 to 4, stripe 0, 1, 2) one node
#    at a time with restarts, under 3 minters: a node whose setting
#    disagrees with the coordinator's refuses and names it; 0 repeats.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

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

my $lease_ms = 4000;

sub citus_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
max_prepared_transactions = 50
max_connections = 60
max_worker_processes = 16
citus.local_hostname = '" . $node->host . "'
sharded_id.citus_lease_time = ${lease_ms}ms
");
	$node->start;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION citus; CREATE EXTENSION sharded_id;
		SET citus.enable_ddl_propagation = off;
		CREATE TABLE minted (id bigint, minted_at timestamptz DEFAULT clock_timestamp())});
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
	my ($node, $n) = @_;
	return $node->safe_psql('postgres',
		"INSERT INTO minted (id) SELECT sharded_id.next_id(1) FROM generate_series(1, $n)");
}

# A loop that mints 500 ids of shard 1 per transaction on the node until
# $stop exists, going on through refusals and restarts; returns its handle
# and output.
sub minter
{
	my ($node, $stop) = @_;
	my $out = '';
	my $sql = 'INSERT INTO minted (id) SELECT sharded_id.next_id(1) FROM generate_series(1, 500)';
	my $h = IPC::Run::start(
		[ 'bash', '-c',
		  qq{while [ ! -e '$stop' ]; do "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -d '}
			. $node->connstr('postgres') . qq{' -c '$sql' && echo ok; sleep 0.02; done} ],
		'>', \$out, '2>&1');
	return [ $h, \$out ];
}

my $coord = citus_node('coordinator');
my $w1 = citus_node('worker1');
my $w2 = citus_node('worker2');
$coord->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ')');
add_node($coord, $w1);
mint($coord, 10);
mint($w1, 10);
my $coord_minter = $coord->safe_psql('postgres', 'SELECT sharded_id.citus_minter()');
my $w1_minter = $w1->safe_psql('postgres', 'SELECT sharded_id.citus_minter()');
is("$coord_minter $w1_minter", '0 1', 'the coordinator (group 0) and worker 1 (group 1) lease numbers 0 and 1');
is($coord->safe_psql('postgres', 'SELECT count(DISTINCT sharded_id.stripe_id(id, 32)) FROM minted'), '1',
	"the coordinator's ids carry its number");

# --- Churn: 40 remove/add cycles of worker 1 while the coordinator mints.
my $stop = $coord->basedir . '/stop_churn';
my $coord_loop = minter($coord, $stop);
my (@groups, %numbers);
my $started = time;
for my $cycle (1 .. 40)
{
	remove_node($coord, $w1);
	push @groups, add_node($coord, $w1);
	mint($w1, 2000);
	$numbers{ $w1->safe_psql('postgres', 'SELECT sharded_id.citus_minter()') }++;
}
my $churn_s = time - $started;
open my $touch, '>', $stop or die $!;
close $touch;
$coord_loop->[0]->finish;
my $coord_ok = () = ${ $coord_loop->[1] } =~ /^ok$/mg;
ok($coord_ok > 0, "churn: the coordinator minted all along ($coord_ok transactions of 500 ids)");
unlike(${ $coord_loop->[1] }, qr/ERROR/, 'churn: none of its calls failed');
ok($groups[-1] > 31, "churn: worker 1 went through groups $groups[0] to $groups[-1], past 31, in "
	  . sprintf('%.0f s', $churn_s));
is(join(',', keys %numbers), $w1_minter, "churn: worker 1 kept number $w1_minter in every cycle");
is($w1->safe_psql('postgres', 'SELECT count(*), count(DISTINCT sharded_id.stripe_id(id, 32)) FROM minted'),
	'80010|1', 'churn: worker 1 minted its 80,010 ids, all with that number');

# Every id minted so far, from both nodes, once.
sub repeats
{
	my (@nodes) = @_;
	my (%seen, $total);
	for my $node (@nodes)
	{
		for my $id (split /\n/, $node->safe_psql('postgres', 'SELECT id FROM minted'))
		{
			$seen{$id}++;
			$total++;
		}
	}
	return ($total, $total - scalar(keys %seen));
}
my ($total, $repeats) = repeats($coord, $w1);
is($repeats, 0, "churn: 0 repeats in shard 1 over $total ids of the coordinator and worker 1");
# The milliseconds in which both nodes minted for shard 1.
my %coord_ms = map { ($_ => 1) } split /\n/,
  $coord->safe_psql('postgres', 'SELECT DISTINCT sharded_id.created_at(id) FROM minted');
my $both_ms = grep { $coord_ms{$_} } split /\n/,
  $w1->safe_psql('postgres', 'SELECT DISTINCT sharded_id.created_at(id) FROM minted');
ok($both_ms > 0, "churn: the coordinator and worker 1 minted for shard 1 in $both_ms of the same milliseconds");

# --- A removed node refuses to mint once its lease ran out.
my $w1_last = $w1->safe_psql('postgres', 'SELECT max(id) FROM minted');
remove_node($coord, $w1);
my $removed_at = time;
my ($state, $message) = ('none', '');
while (time - $removed_at < 60)
{
	($state, $message) = refusal($w1, 'INSERT INTO minted (id) SELECT sharded_id.next_id(1)');
	last if $state ne 'none';
	select(undef, undef, undef, 0.1);
}
my $refused_after = time - $removed_at;
is($state, '55000', sprintf('worker 1, removed, refuses to mint %.1f s later (lease %d ms)', $refused_after, $lease_ms));
like($message, qr/this Citus node may not mint: .* is not an active node of the Citus cluster/,
	'and says that it is not an active node of the Citus cluster');
ok($refused_after < $lease_ms / 1000 + 5, 'within its lease and a few seconds');
($state) = refusal($w1, 'SELECT sharded_id.next_id(1)');
is($state, '55000', 'a new session of worker 1 is refused too');

# Its number goes to the next new node, which mints after the removed node's lease.
# Its number is free once its lease ran out by the coordinator's clock: it
# refuses a second before that, when its lease no longer covers a ceiling.
my $w1_lease_end = $coord->safe_psql('postgres',
	q{SELECT expires_ms FROM sharded_id.citus_minters WHERE minter = } . $w1_minter);
$coord->poll_query_until('postgres',
	"SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint > $w1_lease_end")
  or die 'the lease of worker 1 did not run out';
# Its first lease asked by a role that is not a superuser, over that role's
# own connection to the coordinator.
$coord->safe_psql('postgres', 'CREATE ROLE app LOGIN');
$w2->safe_psql('postgres', 'SET citus.enable_ddl_propagation = off; CREATE ROLE app LOGIN');
my $w2_group = add_node($coord, $w2);
is($w2->safe_psql('postgres', 'SET ROLE app; SELECT sharded_id.citus_minter()'), $w1_minter,
	"worker 2 (group $w2_group), leasing as a role that is not a superuser, takes the free number $w1_minter");
ok($coord->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'sharded_id_lease'}),
	'the lease connections are closed');
mint($w2, 2000);
is($w2->safe_psql('postgres', "SELECT min(sharded_id.created_at(id)) > to_timestamp($w1_lease_end / 1000.0) FROM minted"),
	't', "worker 2's ids of number $w1_minter lie after the end of worker 1's lease");
ok($w2->safe_psql('postgres', 'SELECT min(id) FROM minted') > $w1_last, 'and above every id worker 1 minted');

# Worker 1, added again, finds its number gone: it refuses until restarted.
add_node($coord, $w1);
($state, $message) = refusal($w1, 'SELECT sharded_id.next_id(1)');
is($state, '55000', 'worker 1, added again, refuses while its old number is held by worker 2');
like($message, qr/lost its minter number $w1_minter/, 'and says it lost its number');
$w1->restart;
mint($w1, 2000);
my $w1_new = $w1->safe_psql('postgres', 'SELECT sharded_id.citus_minter()');
ok($w1_new ne $w1_minter && $w1_new ne $coord_minter, "restarted, worker 1 mints with number $w1_new");
($total, $repeats) = repeats($coord, $w1, $w2);
is($repeats, 0, "0 repeats in shard 1 over $total ids of the three nodes");

# --- A rolling change of sharded_id.stripes under 3 minters.
my $roll_stop = $coord->basedir . '/stop_roll';
my %loops = map { ($_->name => minter($_, $roll_stop)) } ($coord, $w1, $w2);
# Each loop minted before the change.
for my $node ($coord, $w1, $w2)
{
	my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM minted');
	$node->poll_query_until('postgres', "SELECT count(*) > $before + 1000 FROM minted")
	  or die $node->name . ' does not mint';
}
my %stripe = (worker1 => 1, worker2 => 2, coordinator => 0);
for my $node ($w1, $w2, $coord)
{
	$node->append_conf('postgresql.conf', "sharded_id.stripes = 4\nsharded_id.stripe = $stripe{$node->name}\n");
	$node->restart;
	if ($node != $coord)
	{
		($state, $message) = refusal($node, 'SELECT sharded_id.next_id(1)');
		is($state, '55000', $node->name . ' with sharded_id.stripes = 4 refuses while the coordinator has 1');
		like($message, qr/sharded_id\.stripes is 4 there and 1 on the coordinator/,
			'and names the disagreement');
	}
}
# Every node mints with its stripe once the old leases ran out.
for my $node ($coord, $w1, $w2)
{
	$node->poll_query_until('postgres', qq{
		SELECT count(*) > 0 FROM minted
		WHERE sharded_id.stripe_id(id, 4) = $stripe{$node->name}
		  AND minted_at > pg_postmaster_start_time()})
	  or diag($node->name . ' did not mint after the change');
	is($node->safe_psql('postgres', 'SELECT sharded_id.citus_minter()'), $stripe{ $node->name },
		$node->name . " mints with stripe $stripe{$node->name} after the change");
}
open $touch, '>', $roll_stop or die $!;
close $touch;
for my $name (sort keys %loops)
{
	$loops{$name}[0]->finish;
	my $ok = () = ${ $loops{$name}[1] } =~ /^ok$/mg;
	ok($ok > 0, "rolling change: $name minted $ok transactions of 500 ids");
}
($total, $repeats) = repeats($coord, $w1, $w2);
is($repeats, 0, "rolling change: 0 repeats in shard 1 over $total ids of the three minters");

done_testing();
