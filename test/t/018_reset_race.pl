# test/t/018_reset_race.pl
#
# reset_ceiling() never repeats an id, whatever runs beside it: six pgbench
# clients insert 50 ids of shard 5 at a time into a table with a primary
# key for 6 s, in counter mode and in seed mode (a sequence with a cache),
# while another client calls reset_ceiling() in a loop.  Every insert must
# commit: a repeated id would fail its transaction with a duplicate key and
# abort the client.  Afterwards the shard still mints at the clock.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $seconds = 6;
my $node = sharded_node('reset_race', conf => "max_connections = 40\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE s CACHE 100;
	CREATE TABLE counter_ids (id bigint PRIMARY KEY);
	CREATE TABLE seed_ids (id bigint PRIMARY KEY);
});

my $script = sub {
	my ($name, $sql) = @_;
	my $file = $node->basedir . "/$name.sql";
	open my $fh, '>', $file or die $!;
	print $fh "$sql\n";
	close $fh;
	return $file;
};
my $reset = $script->('reset', 'SELECT sharded_id.reset_ceiling();');

for my $mode ([ 'counter', 'sharded_id.next_id(5)' ], [ 'seed', q{sharded_id.next_id(5, 's')} ])
{
	my ($name, $call) = @$mode;
	my $insert = $script->("insert_$name",
		"INSERT INTO ${name}_ids SELECT $call FROM generate_series(1, 50);");
	my ($mint_out, $reset_out) = ('', '');
	my $minters = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '6', '-j', '2', '-T', $seconds, '-f', $insert, $node->connstr('postgres') ],
		'>', \$mint_out, '2>&1');
	my $resetter = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '1', '-T', $seconds, '-f', $reset, $node->connstr('postgres') ],
		'>', \$reset_out, '2>&1');
	my $minters_ok = $minters->finish;
	my $resetter_ok = $resetter->finish;

	ok($minters_ok, "$name mode: the six minters ran $seconds s and exited 0")
	  or diag($mint_out);
	unlike($mint_out, qr/duplicate key|aborted/, "$name mode: no insert hit a duplicate key, no client aborted");
	my ($minted) = $mint_out =~ /number of transactions actually processed: (\d+)/;
	my ($resets) = $reset_out =~ /number of transactions actually processed: (\d+)/;
	ok($resetter_ok, "$name mode: the resetter exited 0") or diag($reset_out);
	cmp_ok($resets // 0, '>=', 100, "$name mode: reset_ceiling() ran at least 100 times beside the minters");
	is($node->safe_psql('postgres', "SELECT count(*) FROM ${name}_ids"), 50 * ($minted // -1),
		"$name mode: every committed insert's 50 ids are in the table");
	diag("$name mode: " . ($minted // 0) * 50 . " ids minted beside $resets resets");
	is($node->safe_psql('postgres', "SELECT count(*) FROM ${name}_ids WHERE sharded_id.shard_id(id) <> 5"), 0,
		"$name mode: every id carries shard 5");
	# Resets in a row must not push the shard ahead of the clock either.
	my $lead = $node->safe_psql('postgres', q{SELECT round(extract(epoch FROM
		sharded_id.created_at(sharded_id.next_id(5)) - clock_timestamp()) * 1000)});
	cmp_ok($lead, '<', 1000, "$name mode: afterwards shard 5 mints less than a lease ahead of the clock ($lead ms)");
}

done_testing();
