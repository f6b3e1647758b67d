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
#
# Then the admin calls and transactions, on shard 1: 20,000 ids minted
# with the clock 60 s ahead, the clock set right.  reset_ceiling() and
# lower_floor() refuse to run inside a transaction block, a query string of
# several statements and an exception block (25001), and leave the ceiling
# as it was: the next id still lies past the 20,000 (on 2.0 a rolled-back
# reset_ceiling() took effect, and the next id carried the clock's time,
# below them).  raise_floor() in a transaction that is prepared and then
# rolled back (ROLLBACK PREPARED) keeps its floor, which only goes up.  An
# immediate stop after all that, a start, and 20,000 ids more: none repeats
# one minted before, and all lie past them.  A reset_ceiling() of its own
# still runs.
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

my $node = sharded_node('reset_crash', conf => "statement_timeout = '120s'\nwal_writer_delay = '10s'\nmax_prepared_transactions = 2\n");
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

# --- Admin calls and transactions (see the top).  The server still runs
# with libfaketime, which reads the clock file at every call.
$set_clock->('+60');
$node->safe_psql('postgres',
	'CREATE TABLE minted AS SELECT sharded_id.next_id(1) AS id FROM generate_series(1, 20000)');
$set_clock->('+0');
my $ahead_max = $node->safe_psql('postgres', 'SELECT max(id) FROM minted');
cmp_ok($node->safe_psql('postgres', 'SELECT extract(epoch FROM sharded_id.created_at(max(id)) - clock_timestamp()) FROM minted'),
	'>', 55, 'the 20,000 ids of shard 1 carry a time about 60 s ahead of the clock set right');

# Each refusal: its SQLSTATE, printed by psql after the error.
my $refused = sub {
	my ($sql, $what) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', "$sql\n\\echo state :LAST_ERROR_SQLSTATE\n", on_error_stop => 0);
	like($out, qr/state 25001/, "$what: refused with 25001");
	like($err, qr/cannot run inside a transaction block/, "$what: the error says why");
};
$refused->("BEGIN;\nSELECT sharded_id.reset_ceiling();\nROLLBACK;", 'reset_ceiling() in BEGIN ... ROLLBACK');
$refused->("BEGIN;\nSAVEPOINT s;\nSELECT sharded_id.reset_ceiling();\nROLLBACK;", 'reset_ceiling() after a savepoint');
$refused->('SELECT sharded_id.reset_ceiling() \; SELECT 1;', 'reset_ceiling() in a query string of two statements');
$refused->(q{DO $$BEGIN PERFORM sharded_id.reset_ceiling(); EXCEPTION WHEN division_by_zero THEN NULL; END$$;},
	'reset_ceiling() in an exception block');
$refused->("BEGIN;\nSELECT sharded_id.lower_floor(1);\nROLLBACK;", 'lower_floor() in BEGIN ... ROLLBACK');
$node->safe_psql('postgres', 'INSERT INTO minted SELECT sharded_id.next_id(1)');
is($node->safe_psql('postgres', 'SELECT max(id) > ' . $ahead_max . ' FROM minted'), 't',
	'after the refused calls and their rollbacks, the next id of shard 1 still lies past the 20,000 minted ahead');

# raise_floor() prepared, then rolled back: its floor stays.
my $above = $node->safe_psql('postgres',
	"SELECT sharded_id.encode(sharded_id.created_at($ahead_max) + interval '10 s', 1, 0)");
$node->safe_psql('postgres', "BEGIN;\nSELECT sharded_id.raise_floor(1, $above);\nPREPARE TRANSACTION 'raise';");
$node->safe_psql('postgres', "ROLLBACK PREPARED 'raise'");
$node->safe_psql('postgres', 'INSERT INTO minted SELECT sharded_id.next_id(1)');
is($node->safe_psql('postgres', "SELECT max(id) > $above FROM minted"), 't',
	'raise_floor() rolled back with ROLLBACK PREPARED: its floor stays, the next id lies past it');

# A crash now, and minting after it.
my $before_max = $node->safe_psql('postgres', 'SELECT max(id) FROM minted');
$node->stop('immediate');
$start_faked->();
$node->safe_psql('postgres',
	'CREATE TABLE minted_after AS SELECT sharded_id.next_id(1) AS id FROM generate_series(1, 20000)');
is($node->safe_psql('postgres', 'SELECT count(*) FROM minted_after a JOIN minted m USING (id)'), '0',
	'after the rollbacks and a crash: none of 20,000 ids of shard 1 repeats one minted before');
is($node->safe_psql('postgres', "SELECT min(id) > $before_max FROM minted_after"), 't',
	'after the rollbacks and a crash: every id of shard 1 lies past those minted before');

# A reset_ceiling() of its own runs: shard 2, which starts at the ceiling
# (shard 1 keeps its floor), goes from ahead back to the clock.  Before
# the reset, shard 2's first id lies at or past the time of the ids
# minted ahead (the ceiling covers them), whatever time the steps above
# took; and that time must still lie ahead of the clock, or the reset
# below would show nothing.
my $lead = q{SELECT extract(epoch FROM sharded_id.created_at(sharded_id.next_id(2)) - clock_timestamp())};
is($node->safe_psql('postgres', "SELECT sharded_id.created_at(sharded_id.next_id(2)) >= sharded_id.created_at($ahead_max)"),
	't', 'before a reset_ceiling() of its own, shard 2 starts at the ceiling, at or past the ids minted ahead');
cmp_ok($node->safe_psql('postgres', "SELECT extract(epoch FROM sharded_id.created_at($ahead_max) - clock_timestamp())"),
	'>', 5, 'before the reset, the ids minted ahead (which the ceiling covers) still lie ahead of the clock');
$node->safe_psql('postgres', 'SELECT sharded_id.reset_ceiling()');
cmp_ok($node->safe_psql('postgres', $lead), '<', 2, 'reset_ceiling() as a statement of its own still takes the ids back to the clock');

$node->stop;
done_testing();
