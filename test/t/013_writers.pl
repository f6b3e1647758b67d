# test/t/013_writers.pl
#
# Several writers for one shard, and the commit of a ceiling raise:
#  - two servers mint for one shard at once in counter mode, 4 pgbench
#    clients each, 1,000,000 ids in all: with distinct stripes no id
#    repeats, and each id decodes to the stripe of the server that minted
#    it; without stripes two servers at the same floor mint the same id;
#  - a bad stripe is refused at start-up, and a server that changes its
#    stripes after minting mints above everything it minted before;
#  - a server whose minting is switched off refuses with SQLSTATE SI002 and
#    mints nothing;
#  - a transaction that only calls next_id() and raises the clock ceiling
#    waits for the synchronous standby at commit, as nextval() does.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $bindir = `pg_config --bindir`;
chomp $bindir;

# Two writers of shard 5, stripes 0 and 1 of 2.
my %w;
for my $stripe (0, 1)
{
	$w{$stripe} = sharded_node("writer$stripe", conf => "sharded_id.stripes = 2\nsharded_id.stripe = $stripe\n");
	$w{$stripe}->start;
	$w{$stripe}->safe_psql('postgres', 'CREATE EXTENSION sharded_id; CREATE TABLE ids (id bigint PRIMARY KEY)');
}

# 4 clients on each server, 125 transactions of 1,000 ids each: 500,000
# ids per server, minted by both at the same time.
my %run;
for my $stripe (0, 1)
{
	my $script = $w{$stripe}->basedir . '/mint.sql';
	open my $fh, '>', $script or die $!;
	print $fh "INSERT INTO ids SELECT sharded_id.next_id(5) FROM generate_series(1, 1000);\n";
	close $fh;
	my $out = '';
	$run{$stripe} = [ IPC::Run::start(
		[ "$bindir/pgbench", '-n', '-c', '4', '-j', '2', '-t', '125', '-f', $script, $w{$stripe}->connstr('postgres') ],
		'>', \$out, '2>&1'), \$out ];
}
for my $stripe (0, 1)
{
	ok($run{$stripe}[0]->finish, "stripe $stripe: 4 clients minted under a primary key") or diag(${ $run{$stripe}[1] });
	is($w{$stripe}->safe_psql('postgres', 'SELECT count(*) FROM ids'), '500000', "stripe $stripe: 500,000 ids");
	is($w{$stripe}->safe_psql('postgres',
			"SELECT count(*) FROM ids WHERE sharded_id.stripe_id(id, 2) <> $stripe OR sharded_id.shard_id(id) <> 5"),
		'0', "stripe $stripe: every id decodes to shard 5 and to this server's stripe");
}
# All 1,000,000 in one place.
my $copy = $w{1}->basedir . '/ids.copy';
$w{1}->safe_psql('postgres', "COPY ids TO '$copy'");
$w{0}->safe_psql('postgres', "CREATE TABLE other (id bigint); COPY other FROM '$copy'");
is($w{0}->safe_psql('postgres',
		'SELECT count(*) || \' \' || count(DISTINCT id) FROM (SELECT id FROM ids UNION ALL SELECT id FROM other) t'),
	'1000000 1000000', 'two servers minted 1,000,000 ids for one shard at once: no repeat');

# The hole the stripes close: two servers without stripes whose floors for
# shard 6 are the same (as after a move, or with equal clocks) mint the
# same first id in counter mode.  With their stripes, they do not.
my $floor = $w{0}->safe_psql('postgres', q{SELECT sharded_id.encode(now() + interval '10 minutes', 6, 1023)});
my $first_id = sub {
	my ($node) = @_;
	$node->safe_psql('postgres', "SELECT sharded_id.raise_floor(6, $floor)");
	return $node->safe_psql('postgres', 'SELECT sharded_id.next_id(6)');
};
my @plain = map { sharded_node("plain$_") } (0, 1);
$_->start for @plain;
$_->safe_psql('postgres', 'CREATE EXTENSION sharded_id') for @plain;
is($first_id->($plain[0]), $first_id->($plain[1]), 'without stripes, two servers at the same floor mint the same id');
$_->stop for @plain;
my @first = map { $first_id->($w{$_}) } (0, 1);
isnt($first[0], $first[1], 'with stripes, they mint different ids');
is(int($first[0]) ^ int($first[1]), 512, 'which differ in the top bit of the sequence field only');

# A stripe outside sharded_id.stripes is refused at start-up.
my $restart_with = sub {
	my ($node, $conf) = @_;
	$node->stop;
	$node->append_conf('postgresql.conf', $conf);
	my $offset = -s $node->logfile;
	my $started = $node->start(fail_ok => 1);
	return ($started, slurp_file($node->logfile, $offset));
};
my ($started, $log) = $restart_with->($w{1}, "sharded_id.stripe = 2\n");
ok(!$started, 'stripe 2 of 2: the server does not start');
like($log, qr/sharded_id\.stripe 2 is out of range/, 'and says that the stripe is out of range');

# Changing the stripes of a server that has minted: its new ids are above
# every id it minted before, whatever their stripe.
($started, $log) = $restart_with->($w{1}, "sharded_id.stripes = 4\nsharded_id.stripe = 3\n");
ok($started, 'stripe 3 of 4: the server starts');
my $top = $w{1}->safe_psql('postgres', 'SELECT max(id) FROM ids');
$w{1}->safe_psql('postgres', 'INSERT INTO ids SELECT sharded_id.next_id(5) FROM generate_series(1, 10000)');
is($w{1}->safe_psql('postgres',
		"SELECT count(*) FILTER (WHERE id > $top) || ' ' || count(*) FILTER (WHERE id > $top AND sharded_id.stripe_id(id, 4) = 3) FROM ids"),
	'10000 10000', 'after the change, all 10,000 new ids are above the old ones, in stripe 3 of 4');

# Minting switched off, with a reload: every call fails with SI002 and
# takes no slot.
$w{0}->safe_psql('postgres', 'ALTER SYSTEM SET sharded_id.minting = off; SELECT pg_reload_conf()');
$w{0}->poll_query_until('postgres', q{SELECT current_setting('sharded_id.minting') = 'off'})
  or die 'the reload did not reach new sessions';
my ($ret, $out, $err) = $w{0}->psql('postgres', "\\set VERBOSITY verbose\nSELECT sharded_id.next_id(7)");
like($err, qr/ERROR:  SI002: minting sharded ids is switched off on this server/,
	'minting off: next_id fails with SI002');
($ret, $out, $err) = $w{0}->psql('postgres', 'INSERT INTO ids SELECT sharded_id.next_id(7) FROM generate_series(1, 10)');
isnt($ret, 0, 'minting off: an insert that mints fails');
is($w{0}->safe_psql('postgres', q{SELECT count(*) FROM sharded_id.generator_stats WHERE shard_id = 7}), '0',
	'minting off: nothing was minted for the shard');
is($w{0}->safe_psql('postgres', 'SELECT count(*) FROM ids WHERE sharded_id.shard_id(id) = 7'), '0',
	'minting off: no row was written');
$w{0}->safe_psql('postgres', 'ALTER SYSTEM RESET sharded_id.minting; SELECT pg_reload_conf()');
$w{0}->poll_query_until('postgres', q{SELECT current_setting('sharded_id.minting') = 'on'})
  or die 'the reload did not reach new sessions';
is($w{0}->safe_psql('postgres', 'SELECT sharded_id.shard_id(sharded_id.next_id(7))'), '7',
	'minting on again: the server mints');
$_->stop for values %w;

# A primary with a synchronous standby that is down.
my $primary = sharded_node('primary', init => { allows_streaming => 1 });
$primary->start;
$primary->safe_psql('postgres', 'CREATE EXTENSION sharded_id; CREATE SEQUENCE s; SELECT sharded_id.next_id(9)');
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf', "cluster_name = 'standby'\n");
$standby->start;
$primary->safe_psql('postgres', q{ALTER SYSTEM SET synchronous_standby_names = 'standby'; SELECT pg_reload_conf()});
$primary->poll_query_until('postgres', q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'the standby did not become synchronous';
$standby->stop;

# A statement that commits and waits for the standby shows as SyncRep in
# pg_stat_activity until it is cancelled; cancelled, it warns that the
# commit may not have replicated.
my $waits_for_standby = sub {
	my ($sql, $what) = @_;
	my ($in, $o, $e) = ('', '', '');
	my $h = IPC::Run::start([ "$bindir/psql", '-X', '-A', '-t', '-d', $primary->connstr('postgres'), '-c', $sql ],
		'<', \$in, '>', \$o, '2>', \$e);
	ok($primary->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity
			WHERE wait_event = 'SyncRep' AND query = \$q\$$sql\$q\$}),
		"$what: the commit waits for the synchronous standby");
	$primary->safe_psql('postgres', qq{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE wait_event = 'SyncRep' AND query = \$q\$$sql\$q\$});
	$h->finish;
	like($e, qr/canceling wait for synchronous replication/, "$what: until it is cancelled");
	return $o;
};
$waits_for_standby->(q{SELECT nextval('s')}, 'nextval');
# The ceiling is less than half a lease ahead once no id was minted for
# half a second, so the next call raises it and WAL-logs the raise.
$primary->poll_query_until('postgres',
	q{SELECT ceiling < clock_timestamp() + interval '400 milliseconds' FROM sharded_id.generator_info})
  or die 'the ceiling did not age';
my $writes = $primary->safe_psql('postgres', 'SELECT ceiling_writes FROM sharded_id.generator_info');
my $id = $waits_for_standby->(q{SELECT sharded_id.next_id(9)}, 'next_id() that raises the ceiling');
is($primary->safe_psql('postgres', 'SELECT ceiling_writes FROM sharded_id.generator_info'), $writes + 1,
	'that call raised the ceiling once');
like($id, qr/^\d+$/, 'and returned its id');
$primary->stop;

done_testing();
