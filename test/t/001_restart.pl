# test/t/001_restart.pl
#
# Ids never repeat across an immediate shutdown or a backend crash, and the
# module refuses to mint ids when it was not preloaded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('restart');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'sharded_id'
restart_after_crash = on
});
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE s CACHE 100;
	CREATE TABLE ids (id bigint PRIMARY KEY, phase int NOT NULL);
});

# Mint n ids for shard 7 in one statement.  The primary key turns any
# repeat into an error.
sub mint
{
	my ($phase, $n) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"INSERT INTO ids SELECT sharded_id.next_id(7, 's'), $phase FROM generate_series(1, $n)");
	is($ret, 0, "phase $phase: $n ids inserted under a primary key")
	  or diag($stderr);
}

# Milliseconds (Unix) of the oldest or newest id of a phase.
sub phase_ms
{
	my ($agg, $phase) = @_;
	return $node->safe_psql('postgres',
		"SELECT (extract(epoch FROM $agg(sharded_id.created_at(id))) * 1000)::bigint FROM ids WHERE phase = $phase");
}

mint(1, 100000);

my $state_file = $node->data_dir . '/sharded_id.state';
ok(-f $state_file, 'the clock ceiling file exists after minting');
my ($ceiling) = slurp_file($state_file) =~ /^sharded_id clock ceiling (\d+)$/m;
ok(defined $ceiling && $ceiling >= phase_ms('max', 1),
	'the durable ceiling covers every id minted');

# Immediate shutdown: no shutdown checkpoint, shared memory lost.
$node->stop('immediate');
$node->start;
mint(2, 100000);
cmp_ok(phase_ms('min', 2), '>', phase_ms('max', 1),
	'after an immediate restart, new ids are later than every old one');

# A backend killed by SIGKILL makes the postmaster reinitialise shared
# memory without a full restart.
my $sleeper = $node->background_psql('postgres');
$sleeper->query_until(qr/sleeping/, "\\echo sleeping\nSELECT pg_sleep(600);\n");
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(600)%'")
  or die 'the sleeping backend did not start';
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(600)%'");
my $log_offset = -s $node->logfile;
kill 'KILL', $pid;
$sleeper->quit;
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
$node->poll_query_until('postgres', 'SELECT true')
  or die 'the server did not come back after the crash';

mint(3, 100000);
cmp_ok(phase_ms('min', 3), '>', phase_ms('max', 2),
	'after a backend crash, new ids are later than every old one');
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'),
	'0', 'no repeats over 300000 ids and two restarts');

# Without shared_preload_libraries there is no shared state: next_id
# refuses, with a hint, instead of falling back to the unguarded formula.
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->restart;
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT sharded_id.next_id(7, 's');");
isnt($ret, 0, 'next_id fails without the preload');
like($stderr, qr/ERROR:  55000: sharded_id must be loaded via shared_preload_libraries/,
	'the error says what is missing, with SQLSTATE 55000');
like($stderr, qr/HINT:  Add sharded_id to shared_preload_libraries in postgresql.conf/,
	'the hint names the setting');
is($node->safe_psql('postgres', 'SELECT sharded_id.shard_id(max(id)) FROM ids'),
	'7', 'decoders work without the preload');

$node->stop;
done_testing();
