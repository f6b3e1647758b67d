# test/t/035_reset_crash.pl
#
# A crash after reset_ceiling() repeats no id, in counter mode and in seed
# mode.  The scenario of the bug report, on a server whose clock is right:
# CHECKPOINT, SELECT sharded_id.reset_ceiling(), then, in a transaction
# that stays open, 2,500,000 next_id(7) copied out to a file (COPY ... TO
# STDOUT through psql); an immediate stop while the transaction is still
# open; a start with the clock 5 s behind; 200,000 more next_id(7).  No id
# after the crash may equal one of the ids copied out before it.  On 1.6
# crash recovery replayed the reset's record over a state file that covered
# those ids, and the ids after the crash repeated 65,000 to 136,000 of
# them.  Seed mode does the same with next_id(7, 's').  The ids before the
# crash are minted by a server started without libfaketime (which reads its
# clock file at every call, and would take many seconds over them), and the
# WAL writer writes the WAL only every 10 s: so the records that minting
# logs in the open transaction are on disk at the crash only if sharded_id
# flushed them itself before it wrote its state file.  Needs no injection
# points: it runs on every major.
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

my $before_n = 2_500_000;
my $after_n = 200_000;

my $node = sharded_node('reset_crash', conf => "statement_timeout = '120s'\nwal_writer_delay = '10s'\n");
my ($set_clock, $start_faked) = faked_clock($node);
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE s CACHE 100;
	CREATE TABLE handed (id bigint NOT NULL, mode text NOT NULL);
	CREATE TABLE after_crash (id bigint NOT NULL, mode text NOT NULL);
});

for my $mode ([ 'counter', 'sharded_id.next_id(7)' ], [ 'seed', q{sharded_id.next_id(7, 's')} ])
{
	my ($name, $call) = @$mode;

	# The clock right while the ids are handed out: no libfaketime.
	if ($name ne 'counter')
	{
		$node->stop;
		$node->start;
	}
	$node->safe_psql('postgres', 'CHECKPOINT');
	$node->safe_psql('postgres', 'SELECT sharded_id.reset_ceiling()');

	# One psql: the transaction, the COPY into the file, then a sleep that
	# keeps the transaction open until the server stops.
	my $script = $node->basedir . "/$name.sql";
	my $file = $node->basedir . "/$name.ids";
	open my $fh, '>', $script or die $!;
	print $fh "BEGIN;\n"
	  . "COPY (SELECT $call FROM generate_series(1, $before_n)) TO STDOUT;\n"
	  . "SELECT pg_sleep(3600) AS open_$name;\n";
	close $fh;
	my $stderr = '';
	my $minter = IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $node->connstr('postgres') ],
		'<', $script, '>', $file, '2>', \$stderr, IPC::Run::timeout(600));
	ok($node->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity
		WHERE query LIKE 'SELECT pg_sleep(3600) AS open_$name%' AND backend_xid IS NOT NULL}),
		"$name mode: $before_n ids copied out, their transaction open");

	# Crash with the transaction open; start with the clock 5 s behind.
	$node->stop('immediate');
	$minter->finish;
	$set_clock->('-5');
	$start_faked->();
	my $lag = Time::HiRes::time() - $node->safe_psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())');
	ok($lag > 4 && $lag < 6, "$name mode: the restarted server's clock reads 5 s behind (" . sprintf('%.2f', $lag) . " s)");

	$node->safe_psql('postgres', "CREATE TABLE copied_$name (id bigint); COPY copied_$name FROM '$file'");
	is($node->safe_psql('postgres', "SELECT count(*) FROM copied_$name"), $before_n,
		"$name mode: the file holds the $before_n ids copied out before the crash");
	$node->safe_psql('postgres', "INSERT INTO handed SELECT id, '$name' FROM copied_$name");

	$node->safe_psql('postgres',
		"INSERT INTO after_crash SELECT $call, '$name' FROM generate_series(1, $after_n)");
	is($node->safe_psql('postgres', "SELECT count(DISTINCT id) FROM after_crash WHERE mode = '$name'"),
		$after_n, "$name mode: $after_n distinct ids minted after the restart");
	my $repeats = $node->safe_psql('postgres', "ANALYZE handed, after_crash;
		SET enable_nestloop = off;
		SELECT count(*) FROM after_crash a WHERE a.mode = '$name' AND EXISTS (SELECT 1 FROM handed h WHERE h.id = a.id)");
	is($repeats, '0', "$name mode: none of the $after_n ids after the crash equals one of the ids handed out before it");
	diag("$name mode: $repeats of $after_n ids after the crash repeat one of the "
		  . $node->safe_psql('postgres', 'SELECT count(*) FROM handed') . ' handed out before');
}

$node->stop;
done_testing();
