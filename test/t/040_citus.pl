# test/t/040_citus.pl
#
# sharded_id on a real Citus cluster: a coordinator and two workers, then a
# third worker added later, each a PostgreSQL server with
# shared_preload_libraries = 'citus,sharded_id' and no sharded_id setting.
# Skipped (skip_all) when Citus is not installed for the PostgreSQL under
# test: ../shared/citus holds a build for PostgreSQL 18 (test/setup.sh
# installs it).
#
#  - Fail closed: a worker the coordinator has not added yet (group 0, no
#    pg_dist_node) refuses to mint with 55000 and mints nothing; a session
#    opened then mints once the node is added, without reconnecting, also
#    for a role that is not a superuser with a planted pg_dist_local_group
#    on its path; a node with group 32 mints (no node field to outgrow), and
#    one whose sharded_id.stripes differs from the coordinator's refuses,
#    naming it.
#  - The race: the coordinator and a worker mint for one shard at once,
#    100,000 ids each, into a table under a primary key: 0 repeats, and
#    milliseconds of the shard carry ids of both, each node's in a lane of
#    its own (src/citus_frames.c's frames).  Then 32 and 64 nodes at a
#    trickle, driven through the grant function as nodes ask
#    (test/perl/citus_nodes.sql): none is without a window for 1 % of the
#    time, no two windows share a value of a millisecond; and so for nodes
#    whose clocks lie 2 s and 30 s apart (lines of time,
#    src/citus_frames.c), none of them more than a second ahead of its
#    node's clock.
#  - A pushed-down INSERT ... SELECT mints on the worker that holds the
#    shard: its newest id of the shard is theirs.
#  - Provisioning distributes the shard schemas (citus_distribute_shards);
#    decoders, shard_for and routing by id (citus_id_node) agree with
#    Citus's placements.
#  - citus_schema_move and citus_rebalance_start under 2 pgbench writers
#    through the coordinator: 0 failed writes, every row kept, 0 repeats;
#    floors and ownership stay untouched on every node.
#  - A node added after ids were minted, and a node removed and re-added
#    (a new group id), mint without repeats.
#  - sharded_id.stripes = 1 set by hand, as on the coordinator, mints;
#    generator_stats's last_id is the node's newest id.
#  - A worker's physical standby, promoted, mints above every id the worker
#    minted.
#  - The README's Citus blocks (<!-- run: citus_node --> on every node,
#    <!-- run: citus --> on the coordinator) run as written.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $bindir = `pg_config --bindir`;
chomp $bindir;
my $major = `pg_config --version`;
$major =~ s/^PostgreSQL (\d+).*/$1/s;
if (!-f "$pkglibdir/citus.so" || !-f "$sharedir/extension/citus.control")
{
	plan skip_all => "Citus is not installed for PostgreSQL $major (no $pkglibdir/citus.so): "
	  . 'run ../shared/citus/install.sh (PostgreSQL 18) to test sharded_id on Citus';
}

my $readme = slurp_file("$FindBin::RealBin/../../README.md");
my %blocks;
while ($readme =~ /^<!--[ \t]*run:[ \t]*(citus\w*)[ \t]*-->[ \t]*\n^```(sql|sh)\n(.*?)^```[ \t]*$/msg)
{
	push @{ $blocks{$1} }, $3;
}
ok(@{ $blocks{citus_node} // [] } >= 1 && @{ $blocks{citus} // [] } >= 3,
	'README.md has Citus blocks to run: ' . scalar(@{ $blocks{citus_node} // [] }) . ' per node, '
	  . scalar(@{ $blocks{citus} // [] }) . ' on the coordinator');

# A Citus node with sharded_id preloaded and no sharded_id setting.
sub citus_node
{
	my ($name, $extra) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
wal_level = logical
max_prepared_transactions = 50
max_connections = 100
max_worker_processes = 24
max_replication_slots = 20
max_wal_senders = 20
citus.local_hostname = '" . $node->host . "'
" . ($extra // ''));
	$node->start;
	for my $b (@{ $blocks{citus_node} // [] })
	{
		my ($r, $o, $e) = $node->psql('postgres', $b, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
		die "README's citus_node block failed on $name: $e" if $r;
	}
	return $node;
}

# The SQLSTATE of a statement that must fail, or 'none'.
sub sqlstate
{
	my ($node, $sql) = @_;
	my ($r, $o, $e) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return $r == 0 ? 'none' : ($e =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : "?: $e");
}

sub add_node
{
	my ($coord, $node) = @_;
	return $coord->safe_psql('postgres',
		"SELECT citus_add_node('" . $node->host . "', " . $node->port . ')');
}

sub group_of
{
	my ($node) = @_;
	return $node->safe_psql('postgres', 'SELECT groupid FROM pg_dist_local_group');
}

my $coord = citus_node('coordinator');
my $w1 = citus_node('worker1');
my $w2 = citus_node('worker2');
my %by_port = map { ($_->port => $_) } ($coord, $w1, $w2);

# --- Fail closed before the nodes are given their groups.
is(sqlstate($w1, 'SELECT sharded_id.next_id(5)'), '55000',
	'a worker not yet added (group 0, empty pg_dist_node) refuses to mint: 55000');
is(sqlstate($coord, 'SELECT sharded_id.next_id(5)'), '55000',
	'so does the coordinator before its cluster has a node');
is($w1->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.generator_stats WHERE ids > 0'), '0',
	'the refused calls minted nothing');
my $early = $w1->background_psql('postgres', on_error_stop => 0);
my ($early_out, $early_ret) = $early->query('SELECT sharded_id.next_id(6)');
isnt($early_ret, 0, 'a session open on the worker before it is added is refused too');

$coord->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ')');
add_node($coord, $_) for ($w1, $w2);
is(group_of($coord) . ' ' . group_of($w1) . ' ' . group_of($w2), '0 1 2', 'Citus gave groups 0, 1 and 2');
($early_out, $early_ret) = $early->query('SELECT sharded_id.next_id(6) IS NOT NULL');
is($early_out, 't', 'the same session, once its node was added, mints without reconnecting');
$early->quit;

# --- Provisioning: shard schemas distributed by one call.
for my $b (@{ $blocks{citus} })
{
	my ($r, $o, $e) = $coord->psql('postgres', $b, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($r, 0, 'README Citus block runs on the coordinator: ' . (split /\n/, $b)[0]) or diag("$b\n$e");
}
is($coord->safe_psql('postgres', q{
	SELECT count(*) FROM pg_dist_schema d JOIN sharded_id.shards s ON s.schema_name = d.schemaid::regnamespace::name}),
	'4', "the README's provisioning left shards 1 to 4 as distributed schemas");
is($coord->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.citus_distribute_shards()'), '0',
	'citus_distribute_shards again distributes nothing more');
$coord->safe_psql('postgres', 'SELECT sharded_id.create_shards(5, 6)');
is($coord->safe_psql('postgres', 'SELECT string_agg(s, \',\') FROM sharded_id.citus_distribute_shards(6) s'),
	'shard_0006', 'citus_distribute_shards(6) distributes shard 6 only');
is($coord->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.citus_distribute_shards(5, 5)'), '1',
	'and then shard 5');
is(sqlstate($w1, 'SELECT sharded_id.citus_shard_node(1)'), 'none',
	'citus_shard_node also answers on a worker, from the metadata Citus syncs there');

# Where each shard lives, by Citus's metadata and by citus_shard_node.
my $placement = sub {
	my ($shard) = @_;
	return $coord->safe_psql('postgres', sprintf(q{
		SELECT DISTINCT nodeport FROM citus_shards WHERE citus_table_type = 'schema'
		AND table_name::text LIKE 'shard_%04d.%%'}, $shard));
};
my $routed = sub {
	my ($shard) = @_;
	return $coord->safe_psql('postgres', "SELECT node_port FROM sharded_id.citus_shard_node($shard)");
};
is($routed->($_), $placement->($_), "citus_shard_node($_) names the node citus_shards places it on")
  for (1 .. 6);

# Mint through the coordinator into every shard; decoders, shard_for, routing by id.
$coord->safe_psql('postgres', q{
	INSERT INTO shard_0001.photos (caption) SELECT 'seed' FROM generate_series(1, 100);
	INSERT INTO shard_0002.photos (caption) SELECT 'seed' FROM generate_series(1, 100);
	INSERT INTO shard_0003.photos (caption) SELECT 'seed' FROM generate_series(1, 100);
	INSERT INTO shard_0004.photos (caption) SELECT 'seed' FROM generate_series(1, 100);
	INSERT INTO shard_0005.photos (caption) VALUES ('seed');
	INSERT INTO shard_0006.photos (caption) VALUES ('seed')});
is($coord->safe_psql('postgres', q{
	SELECT count(*) FROM (
	  SELECT id, 1 AS s FROM shard_0001.photos UNION ALL SELECT id, 2 FROM shard_0002.photos
	  UNION ALL SELECT id, 3 FROM shard_0003.photos UNION ALL SELECT id, 4 FROM shard_0004.photos) x
	WHERE sharded_id.shard_id(id) <> s}), '0', 'every id decodes to the shard whose schema holds it');
is($coord->safe_psql('postgres', q{
	SELECT count(*) FROM shard_0002.photos p, sharded_id.citus_id_node(p.id) r
	WHERE r.shard_id = 2 AND r.schema_name = 'shard_0002'
	  AND r.node_port = (SELECT node_port FROM sharded_id.citus_shard_node(2))}), '100',
	'citus_id_node routes each id of shard 2 to the node that holds shard_0002');
is($coord->safe_psql('postgres', 'SELECT sharded_id.shard_for(42, 4) = sharded_id.shard_for(42::bigint, 4)'),
	't', 'shard_for works on the coordinator as on one server');
is($w2->safe_psql('postgres', 'SELECT sharded_id.shard_for(\'alice\', 8)'),
	$coord->safe_psql('postgres', 'SELECT sharded_id.shard_for(\'alice\', 8)'),
	'and gives the same shard on a worker');

# --- The race: the coordinator and worker 1 mint for shard 1 at once, no setting.
my %race;
for my $n ([ coord => $coord ], [ w1 => $w1 ])
{
	my ($tag, $node) = @$n;
	my $script = $node->basedir . '/race.sql';
	open my $fh, '>', $script or die $!;
	print $fh "INSERT INTO shard_0001.photos (caption) SELECT 'race-$tag' FROM generate_series(1, 1000);\n";
	close $fh;
	my $out = '';
	$race{$tag} = [ IPC::Run::start(
		[ "$bindir/pgbench", '-n', '-c', '2', '-j', '2', '-t', '50', '-f', $script, $node->connstr('postgres') ],
		'>', \$out, '2>&1'), \$out ];
}
for my $tag (sort keys %race)
{
	ok($race{$tag}[0]->finish, "race: pgbench on $tag exited 0 (no primary key violation)") or diag(${ $race{$tag}[1] });
}
my $race = $coord->safe_psql('postgres', q{
	SELECT caption, count(*), count(DISTINCT id)
	FROM shard_0001.photos WHERE caption LIKE 'race-%' GROUP BY caption ORDER BY caption});
is($race, "race-coord|100000|100000\nrace-w1|100000|100000",
	'race: 100,000 ids from each node');
is($coord->safe_psql('postgres', q{
	SELECT count(*) - count(DISTINCT id) FROM shard_0001.photos}), '0',
	'race: 0 repeats in shard 1 (' . $coord->safe_psql('postgres', 'SELECT count(*) FROM shard_0001.photos') . ' ids)');
# Both nodes mint in the same milliseconds, each in a lane of its own: in
# each millisecond, the sequence fields of one node's ids all lie below or
# all above the other's.
my ($race_ms, $race_mixed) = split /\|/, $coord->safe_psql('postgres', q{
	SELECT count(*), count(*) FILTER (WHERE NOT (c_max < w_min OR w_max < c_min)) FROM (
	  SELECT sharded_id.created_at(id) AS t,
	         max(sharded_id.seq_id(id)) FILTER (WHERE caption = 'race-coord') AS c_max,
	         min(sharded_id.seq_id(id)) FILTER (WHERE caption = 'race-coord') AS c_min,
	         max(sharded_id.seq_id(id)) FILTER (WHERE caption = 'race-w1') AS w_max,
	         min(sharded_id.seq_id(id)) FILTER (WHERE caption = 'race-w1') AS w_min
	  FROM shard_0001.photos WHERE caption LIKE 'race-%' GROUP BY 1) x
	WHERE c_max IS NOT NULL AND w_max IS NOT NULL});
cmp_ok($race_ms, '>', 0, "race: $race_ms milliseconds of shard 1 carry ids of both nodes (lanes of the sequence field)");
is($race_mixed, '0', 'race: in each, the two nodes\' sequence fields lie apart: each minted in a lane of its own');

# More nodes on one shard than this machine runs: 32 and then 64 nodes
# minting one shard at a trickle, driven through citus_grant_windows as
# the nodes ask (test/perl/citus_nodes.sql): no node is without a window
# for 1 % of the time, no two grants share a value of a millisecond, none
# starts more than a second after its node's clock, each node in a lane of
# its own.  Then nodes whose clocks lie seconds apart (lines of time,
# src/citus_frames.c): 32 in four clocks, 0, 2 s ahead, 2 s behind and
# 30 s ahead, and 16 in two 30 s apart, each order; each clock's nodes in
# lanes of a quarter of the values.
$coord->safe_psql('postgres', slurp_file("$FindBin::RealBin/../perl/citus_nodes.sql"));
my @emulated = ([ 32, '{0}', 3 ], [ 64, '{0}', 3 ], [ 32, '{0,2000,-2000,30000}', 2 ], [ 16, '{0,30000}', 2 ],
	[ 16, '{30000,0}', 2 ]);
for my $i (0 .. $#emulated)
{
	my ($n, $offsets, $seconds) = @{ $emulated[$i] };
	my $what = "$n nodes on one shard" . ($offsets eq '{0}' ? '' : ", their clocks $offsets ms off");
	my ($gap, $asks, $refused) = split /\|/, $coord->safe_psql('postgres',
		"SELECT * FROM emulate_nodes($n, $seconds, 40 + $i, '" . $w1->host . "', "
		  . $w1->port . ", '$offsets')");
	cmp_ok($gap, '<=', 0.01, "$what: none without a window for 1 % of the time ($asks asks, $refused refused)");
	is($coord->safe_psql('postgres', 'SELECT n FROM lane_overlaps'), '0', "$what: no two windows share a value");
	is($coord->safe_psql('postgres', 'SELECT n || \' \' || most_lanes FROM lane_ahead'),
		'0 ' . ($offsets eq '{0}' ? $n : 4 * $n / scalar(split /,/, $offsets)),
		"$what: none more than a second ahead of its node's clock, in the lanes expected");
	$coord->safe_psql('postgres', 'TRUNCATE lane_grants');
}
is($coord->safe_psql('postgres', q{
	SELECT (SELECT min(sharded_id.created_at(id)) FROM shard_0001.photos WHERE caption = 'race-w1')
	     < (SELECT max(sharded_id.created_at(id)) FROM shard_0001.photos WHERE caption = 'race-coord')
	   AND (SELECT min(sharded_id.created_at(id)) FROM shard_0001.photos WHERE caption = 'race-coord')
	     < (SELECT max(sharded_id.created_at(id)) FROM shard_0001.photos WHERE caption = 'race-w1')}),
	't', 'race: though the two minted the shard over the same time');

my $w1_last = $w1->safe_psql('postgres', 'SELECT last_id FROM sharded_id.generator_stats WHERE shard_id = 1');
is($coord->safe_psql('postgres', "SELECT caption FROM shard_0001.photos WHERE id = $w1_last"), 'race-w1',
	"generator_stats's last_id, read in a new session of worker 1, is an id it minted in the race");

# --- A pushed-down INSERT ... SELECT mints on the worker that holds shard 3.
my $holder3 = $routed->(3);
$coord->safe_psql('postgres', q{
	INSERT INTO shard_0003.photos (caption) SELECT 'pushed' FROM shard_0003.photos WHERE caption = 'seed'});
is($coord->safe_psql('postgres', q{
	SELECT count(*), count(DISTINCT id)
	FROM shard_0003.photos WHERE caption = 'pushed'}), '100|100', 'pushed-down INSERT ... SELECT: 100 new ids');
my $holder3_last = $by_port{$holder3}->safe_psql('postgres',
	'SELECT last_id FROM sharded_id.generator_stats WHERE shard_id = 3');
is($coord->safe_psql('postgres', "SELECT caption FROM shard_0003.photos WHERE id = $holder3_last"), 'pushed',
	'the worker that holds shard 3 minted them: its newest id of shard 3 is one of them');

# --- Moves and a rebalance by Citus under 2 writers through the coordinator.
# Writers run rounds of -T seconds until one whole round ran after the
# operation ended; the test checks that they minted after it ended, so
# that it ran under them.
sub under_writers
{
	my ($what, $shards, $seconds, $op) = @_;
	my @schemas = map { sprintf('shard_%04d', $_) } @$shards;
	my $tag = "w-$what";
	my $script = $coord->basedir . "/$tag.sql";
	open my $fh, '>', $script or die $!;
	# One write per shard, each its own transaction.
	print $fh "INSERT INTO $_.photos (caption) VALUES ('$tag');\n" for @schemas;
	close $fh;
	my $schema = $schemas[0];
	my $out = '';
	# Rounds of $seconds s until a whole round ran after the operation
	# ended (a move's end waits for its subscriptions, up to a walsender's
	# keepalive): the writers outlast it, however long it takes.
	my $stop = $coord->basedir . "/$tag.stop";
	my $h = IPC::Run::start(
		[ 'bash', '-c',
		  qq{while :; do last=0; [ -e '$stop' ] && last=1; "$bindir/pgbench" -n -c 2 -j 2 -T $seconds -f '$script' '}
			. $coord->connstr('postgres') . qq{' || exit 1; [ \$last = 1 ] && exit 0; done} ],
		'>', \$out, '2>&1');
	$coord->poll_query_until('postgres', "SELECT count(*) > 10 FROM $schema.photos WHERE caption = '$tag'")
	  or die "$what: the writers did not start: $out";
	$op->();
	my $ended = $coord->safe_psql('postgres', 'SELECT clock_timestamp()');
	open my $touch, '>', $stop or die $!;
	close $touch;
	ok($h->finish, "$what: pgbench without retries exited 0 in every round") or diag($out);
	my ($done, $failed) = (0, 0);
	$done += $_ for $out =~ /number of transactions actually processed: (\d+)/g;
	$failed += $_ for $out =~ /number of failed transactions: (\d+)/g;
	is($failed, 0, "$what: 0 failed writes");
	for my $schema (@schemas)
	{
		is($coord->safe_psql('postgres', "SELECT count(*) FROM $schema.photos WHERE caption = '$tag'"),
			$done, "$what: every one of the $done committed writes is in $schema");
		is($coord->safe_psql('postgres', "SELECT count(*) - count(DISTINCT id) FROM $schema.photos"), '0',
			"$what: 0 repeats in $schema");
	}
	ok($coord->safe_psql('postgres',
			"SELECT max(sharded_id.created_at(id)) > '$ended' FROM $schema.photos WHERE caption = '$tag'") eq 't',
		"$what: the writers still wrote after it ended, so it ran under them");
	return;
}

my $from2 = $routed->(2);
my ($to2) = grep { $_ != $from2 } ($w1->port, $w2->port);
under_writers('schema move', [2], 3, sub {
	$coord->safe_psql('postgres', "SELECT citus_schema_move('shard_0002', '" . $w1->host . "', $to2)");
});
is($routed->(2), $to2, 'citus_schema_move put shard_0002 on the other worker, and citus_shard_node says so');
is($coord->safe_psql('postgres', q{SELECT count(*) FROM shard_0002.photos WHERE caption = 'seed'}), '100',
	'the rows from before the move are all there');

# --- A node added after ids were minted; a node removed and re-added.
my $w3 = citus_node('worker3');
$by_port{ $w3->port } = $w3;
my $w3_session = $w3->background_psql('postgres', on_error_stop => 0);
add_node($coord, $w3);
is(group_of($w3), '3', 'worker 3, added later, has group 3');
$w3->safe_psql('postgres', q{INSERT INTO shard_0004.photos (caption) SELECT 'w3' FROM generate_series(1, 2000)});
is($coord->safe_psql('postgres', q{
	SELECT count(*), count(DISTINCT id)
	FROM shard_0004.photos WHERE caption = 'w3'}), '2000|2000', 'worker 3 (group 3) mints 2,000 ids for shard 4');
$coord->safe_psql('postgres', "SELECT citus_remove_node('" . $w3->host . "', " . $w3->port . ')');
add_node($coord, $w3);
is(group_of($w3), '4', 'removed and added again, worker 3 has a new group, 4');
my ($w3_out, $w3_ret) = $w3_session->query(
	q{INSERT INTO shard_0004.photos (caption) SELECT 'w3-again' FROM generate_series(1, 2000)});
is($w3_ret, 0, 'a session open on worker 3 since before it was added mints again');
is($coord->safe_psql('postgres', q{
	SELECT count(*) FROM shard_0004.photos WHERE caption = 'w3-again'}), '2000', 'all 2,000 of its ids are there');
$w3_session->quit;
is($coord->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM shard_0004.photos'), '0',
	'0 repeats in shard 4 over the coordinator, the old and the new group of worker 3');

# --- A rebalance onto the new node under writers.
my $before_rebalance = $coord->safe_psql('postgres',
	"SELECT count(*) FROM citus_shards WHERE citus_table_type = 'schema' AND nodeport = " . $w3->port);
is($before_rebalance, '0', 'worker 3 holds no shard before the rebalance');
under_writers('rebalance', [ 1 .. 6 ], 3, sub {
	$coord->safe_psql('postgres', 'SELECT citus_rebalance_start(); SELECT citus_rebalance_wait()');
});
my $after_rebalance = $coord->safe_psql('postgres',
	"SELECT count(*) FROM citus_shards WHERE citus_table_type = 'schema' AND nodeport = " . $w3->port);
ok($after_rebalance > 0, "the rebalance moved $after_rebalance shard schemas onto worker 3");
is($coord->safe_psql('postgres', q{SELECT state FROM pg_dist_background_job ORDER BY job_id DESC LIMIT 1}),
	'finished', 'the rebalance job finished');
is($routed->($_), $placement->($_), "after the rebalance, citus_shard_node($_) follows Citus's placement")
  for (1 .. 6);

# Floors and ownership: Citus's moves touch neither, on any node.
for my $node ($coord, $w1, $w2, $w3)
{
	is($node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM sharded_id.floors()) + (SELECT count(*) FROM sharded_id.retired_shards)}),
		'0', $node->name . ': no floor and no retired shard after the moves');
}
# Every node still mints for shard 2.
for my $node ($coord, $w1, $w2, $w3)
{
	$node->safe_psql('postgres', q{
		INSERT INTO shard_0002.photos (caption) SELECT 'after' FROM generate_series(1, 500)});
}
is($coord->safe_psql('postgres', q{
	SELECT count(*), count(DISTINCT id)
	FROM shard_0002.photos WHERE caption = 'after'}), '2000|2000',
	'after the moves every node mints for shard 2 (2,000 ids, 0 repeats)');

# --- A group id past 31 mints; stripes that differ from the coordinator's refuse.
$coord->safe_psql('postgres', 'ALTER SEQUENCE pg_catalog.pg_dist_groupid_seq RESTART 32');
my $w4 = citus_node('worker4');
add_node($coord, $w4);
is(group_of($w4), '32', 'worker 4 got group 32');
is(sqlstate($w4, 'SELECT sharded_id.next_id(5)'), 'none',
	'group 32 mints: no node field to outgrow (1.6 refused it with 53400)');
$w4->append_conf('postgresql.conf', "sharded_id.stripes = 64\nsharded_id.stripe = 32\n");
$w4->restart;
is(sqlstate($w4, 'SELECT sharded_id.next_id(5)'), '55000',
	'with sharded_id.stripes = 64 set on worker 4 only, it refuses with 55000');
like(($w4->psql('postgres', 'SELECT sharded_id.next_id(5)'))[2],
	qr/sharded_id\.stripes is 64 there and 1 on the coordinator/, 'and the error names the setting and both values');

# sharded_id.stripes = 1 and stripe = 0 set by hand, as on the coordinator.
$w2->append_conf('postgresql.conf', "sharded_id.stripes = 1\nsharded_id.stripe = 0\n");
$w2->restart;
is(sqlstate($w2, 'SELECT sharded_id.next_id(5)'), 'none',
	'worker 2 with sharded_id.stripes = 1 and stripe = 0 set, as the coordinator has, mints');

# A role that is not a superuser learns its node as any other does, and a
# pg_dist_local_group it plants in its own schema, first on its search_path,
# changes nothing: the node is read from pg_catalog's, without its privileges.
$coord->safe_psql('postgres', 'CREATE ROLE minter LOGIN');
$w2->safe_psql('postgres', q{
	SET citus.enable_ddl_propagation = off;
	CREATE SCHEMA planted AUTHORIZATION minter;
	SET ROLE minter;
	CREATE SEQUENCE planted.seq;
	CREATE TABLE planted.pg_dist_local_group (groupid integer);
	INSERT INTO planted.pg_dist_local_group VALUES (0);
	CREATE TABLE planted.pg_dist_node (nodeid integer);});
is($w2->safe_psql('postgres', q{
	SET ROLE minter; SET search_path = planted, pg_catalog;
	SELECT sharded_id.next_id(5, 'planted.seq') > 0}), 't',
	'a role that is not a superuser, with a planted pg_dist_local_group first on its path, mints');

# No id repeats anywhere, over every shard.
is($coord->safe_psql('postgres', q{
	SELECT count(*) - count(DISTINCT id) FROM (
	  SELECT id FROM shard_0001.photos UNION ALL SELECT id FROM shard_0002.photos
	  UNION ALL SELECT id FROM shard_0003.photos UNION ALL SELECT id FROM shard_0004.photos
	  UNION ALL SELECT id FROM shard_0005.photos UNION ALL SELECT id FROM shard_0006.photos) x}),
	'0', 'no id repeats over all shards');

# A shard schema whose name has capitals is distributed by its OID: a
# schema of the folded name, planted by a role that is not a superuser, is
# left alone.
$coord->safe_psql('postgres', q{
	CREATE ROLE planter LOGIN; GRANT CREATE ON DATABASE postgres TO planter;
	SELECT sharded_id.create_shard(8, 'Shard8');
	SET ROLE planter; CREATE SCHEMA shard8; RESET ROLE});
is($coord->safe_psql('postgres', 'SELECT string_agg(s, \',\') FROM sharded_id.citus_distribute_shards(8, 8) s'),
	'Shard8', 'citus_distribute_shards(8, 8) distributes "Shard8"');
is($coord->safe_psql('postgres', q{
	SELECT string_agg(n.nspname || ':' || pg_get_userbyid(n.nspowner), ',' ORDER BY n.nspname)
	FROM pg_dist_schema d JOIN pg_namespace n ON n.oid = d.schemaid WHERE lower(n.nspname) = 'shard8'}),
	'Shard8:' . $coord->safe_psql('postgres', 'SELECT current_user'),
	'the catalog\'s schema is distributed, and the planted one is not');

# A worker's standby, promoted, mints above every id the worker minted
# before: it has no window, and the coordinator grants after the last end.
$w1->backup('w1_backup');
my $standby = PostgreSQL::Test::Cluster->new('worker1_standby');
$standby->init_from_backup($w1, 'w1_backup', has_streaming => 1);
# Citus made a key for ssl in the data directory; the copy loosened its mode.
chmod 0600, $standby->data_dir . '/server.key' if -f $standby->data_dir . '/server.key';
$standby->start;
my $w1_max = $w1->safe_psql('postgres', 'SELECT max(sharded_id.next_id(77)) FROM generate_series(1, 5000)');
$w1->wait_for_catchup($standby);
$w1->stop('immediate');
$standby->promote;
is($standby->safe_psql('postgres', qq{
	SELECT count(*), min(id) > $w1_max
	FROM (SELECT sharded_id.next_id(77) AS id FROM generate_series(1, 5000)) x}), '5000|t',
	"worker 1's promoted standby mints above every id worker 1 minted");

done_testing();
