# test/t/009_hardening.pl
#
# The generator's edges, as a careless operator or a hostile role would
# find them:
#  - the state file: truncated, corrupt, implausible or missing, each with a
#    WARNING, and ids that start no earlier than the clock;
#  - a role with no rights on any sequence cannot fill the slot table;
#  - a wall clock that stops makes a full millisecond fail, not spin;
#  - a wall clock that leaps years ahead is refused, and a superuser can
#    lower a ceiling that such a leap left behind.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $node = sharded_node('hardening', conf => "sharded_id.max_shards = 4\nstatement_timeout = '120s'\n");
my ($set_clock, $start_faked) = faked_clock($node);
$start_faked->();
$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE s;
	CREATE ROLE nobody LOGIN;
});
my $state = $node->data_dir . '/sharded_id.state';
my $marker = $node->data_dir . '/sharded_id.minted';

is($node->safe_psql('postgres', 'SHOW sharded_id.max_shards'), '4',
	'a small sharded_id.max_shards is taken as set');
ok(!-e $marker, 'a server that never minted has no marker file');

# A role with no rights on any sequence, calling next_id over many shards:
# every call fails its checks, and none makes a slot.
my ($ret, $out, $err) = $node->psql('postgres', q{
	DO $$
	BEGIN
		FOR g IN 0 .. 99 LOOP
			BEGIN
				PERFORM sharded_id.next_id(g, 'pg_class');
			EXCEPTION WHEN wrong_object_type OR insufficient_privilege THEN
				NULL;
			END;
		END LOOP;
	END $$;
	SELECT sharded_id.next_id(1);
}, extra_params => [ '-U', 'nobody' ]);
like($err, qr/permission denied for function next_id/, 'counter mode is not for PUBLIC');
is($node->safe_psql('postgres',
		'SELECT count(DISTINCT sharded_id.shard_id(sharded_id.next_id(g, \'s\'))) FROM generate_series(10, 13) g'),
	'4', 'after 100 failed calls, all 4 slots are still free for real shards');

# The state file as written: a version, the LSN it reflects, the ceiling, a
# checksum.
like(slurp_file($state), qr/\Asharded_id state 4\nlsn [0-9A-F]+\/[0-9A-F]{8}\nceiling \d+\nfloor \d+\ncrc32c [0-9a-f]{8}\n\z/,
	'the state file carries its version, its LSN and a CRC-32C');
ok(-e $marker, 'and the marker says this server has minted');

sub clock_ms
{
	return $node->safe_psql('postgres', q{SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint});
}

# Restart with the state file replaced by $content (undef: removed), and
# check the WARNING and that new ids come after the clock at the restart.
sub restart_with_state
{
	my ($content, $warning, $what) = @_;
	my $before = clock_ms();
	$node->stop;
	if (defined $content)
	{
		open my $fh, '>', $state or die $!;
		print $fh $content;
		close $fh;
	}
	else
	{
		unlink $state or die "unlink $state: $!";
	}
	my $offset = -s $node->logfile;
	$start_faked->();
	my $log = slurp_file($node->logfile, $offset);
	if (defined $warning)
	{
		like($log, $warning, "$what: a WARNING at startup");
	}
	else
	{
		unlike($log, qr/WARNING:.*sharded_id/, "$what: no WARNING at startup");
	}
	my $first = $node->safe_psql('postgres',
		q{SELECT (extract(epoch FROM sharded_id.created_at(sharded_id.next_id(12, 's'))) * 1000)::bigint});
	cmp_ok($first, '>=', $before, "$what: the first new id is not before the clock at the restart");
}

my $good = slurp_file($state);
(my $truncated = $good) =~ s/crc32c [0-9a-f]+\n\z/crc32c 1a/;
restart_with_state($truncated, qr/WARNING:  invalid contents in file "sharded_id.state"/, 'a truncated file');
(my $corrupt = $good) =~ s/ceiling (\d)/ceiling @{[ ($1 + 1) % 10 ]}/;
restart_with_state($corrupt, qr/WARNING:  invalid contents in file "sharded_id.state"\n.*DETAIL:  Its checksum does not match/,
	'a file whose ceiling no longer matches its checksum');
restart_with_state("sharded_id clock ceiling 17953", qr/WARNING:  invalid contents in file "sharded_id.state"/,
	'1.2\'s one-line form, truncated');
restart_with_state("sharded_id clock ceiling 9223372036854775807\n",
	qr/WARNING:  implausible clock ceiling 9223372036854775807/, 'a ceiling of the largest bigint');
restart_with_state("sharded_id clock ceiling 4102444800000\n",
	qr/WARNING:  implausible clock ceiling 4102444800000/, 'a ceiling in the year 2100');
restart_with_state(undef, qr/WARNING:  file "sharded_id.state" is missing/,
	'a missing file on a server that has minted');
restart_with_state("sharded_id clock ceiling " . (clock_ms() + 500) . "\n", undef,
	'1.2\'s one-line form, whole');
# 1.3 wrote version 2, with no floor line: still read.
sub crc32c
{
	my $crc = 0xFFFFFFFF;
	for my $byte (unpack 'C*', $_[0])
	{
		$crc ^= $byte;
		$crc = ($crc >> 1) ^ (($crc & 1) ? 0x82F63B78 : 0) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}
my $v2 = "sharded_id state 2\nceiling " . (clock_ms() + 500) . "\n";
restart_with_state($v2 . sprintf("crc32c %08x\n", crc32c($v2)), undef, '1.3\'s version 2, whole');
# 1.4 to 1.6 wrote version 3, with no lsn line: still read.
my $v3 = "sharded_id state 3\nceiling " . (clock_ms() + 500) . "\nfloor 0\n";
restart_with_state($v3 . sprintf("crc32c %08x\n", crc32c($v3)), undef, '1.6\'s version 3, whole');

# The wall clock stops: a shard that fills its millisecond cannot wait for
# the next one.  The monotonic clock ends the wait.
# Frozen a few seconds ahead, so that no slot is ahead of it.
$set_clock->(`date -u -d '+5 seconds' '+%Y-%m-%d %H:%M:%S'` =~ s/\n//r);
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(sharded_id.next_id(2)) FROM generate_series(1, 5000);");
like($err, qr/ERROR:  55000: the system clock has not advanced for 1000 ms/,
	'a frozen clock: a full millisecond fails with 55000 instead of spinning');
$set_clock->('+0');

# A clock that leaps ten years ahead while the server runs: refused, and no
# slot moves.
$set_clock->('+3650d');
($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT sharded_id.next_id(12, 's');");
like($err, qr/ERROR:  55000: refusing to mint sharded ids: the system clock leaped \d+ s ahead/,
	'a clock ten years ahead is refused with 55000');
like($err, qr/HINT:  Correct the system clock\. If the jump is real, raise sharded_id\.max_clock_jump/,
	'and the hint names the setting');
$set_clock->('+0');
my $year = $node->safe_psql('postgres', q{SELECT extract(year FROM sharded_id.created_at(sharded_id.next_id(12, 's')))});
is($year, (gmtime)[5] + 1900, 'with the clock back, ids carry the current year: the refused call moved nothing');

# With the guard off, a leap poisons the shard: ids keep the future time
# after the clock comes back, and across a restart, until a superuser
# resets the ceiling.
$node->append_conf('postgresql.conf', 'sharded_id.max_clock_jump = 0');
$node->reload;
$set_clock->('+3650d');
my $future = $node->safe_psql('postgres', q{SELECT extract(year FROM sharded_id.created_at(sharded_id.next_id(12, 's')))});
is($future, (gmtime)[5] + 1900 + 10, 'with the guard off, the leap mints ids ten years ahead');
$set_clock->('+0');
is($node->safe_psql('postgres', q{SELECT extract(year FROM sharded_id.created_at(sharded_id.next_id(12, 's')))}),
	$future, 'the clock is back, but the shard keeps the future time');
$node->stop('immediate');
my $offset = -s $node->logfile;
$start_faked->();
like(slurp_file($node->logfile, $offset), qr/WARNING:  the clock ceiling in file "sharded_id.state" is \d+ s ahead of the clock/,
	'after a restart, the far ceiling is warned about');
($ret, $out, $err) = $node->psql('postgres', 'SELECT sharded_id.reset_ceiling()', extra_params => [ '-U', 'nobody' ]);
like($err, qr/permission denied for function reset_ceiling|must be superuser/, 'only a superuser may reset the ceiling');
$node->safe_psql('postgres', 'SELECT sharded_id.reset_ceiling()');
is($node->safe_psql('postgres', q{SELECT extract(year FROM sharded_id.created_at(sharded_id.next_id(12, 's')))}),
	(gmtime)[5] + 1900, 'after reset_ceiling, ids carry the current time again');
$node->restart;
is($node->safe_psql('postgres', q{SELECT extract(year FROM sharded_id.created_at(sharded_id.next_id(12, 's')))}),
	(gmtime)[5] + 1900, 'and so they do after a restart');

$node->stop;
done_testing();
