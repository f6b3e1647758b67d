# test/t/001_restart.pl
#
# Ids never repeat across an immediate shutdown or a backend crash, and the
# module refuses to mint ids when it was not preloaded (CREATE EXTENSION
# then warns so).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $node = sharded_node('restart', conf => "restart_after_crash = on\n");
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE s CACHE 100;
	CREATE TABLE ids (id bigint PRIMARY KEY, phase int NOT NULL);
});
my $call = "sharded_id.next_id(7, 's')";

mint($node, $call, 1, 100000);

ok(-f $node->data_dir . '/sharded_id.state', 'the clock ceiling file exists after minting');
my $ceiling = read_ceiling($node);
ok(defined $ceiling && $ceiling >= phase_ms($node, 'max', 1),
	'the durable ceiling covers every id minted');

# Immediate shutdown: no shutdown checkpoint, shared memory lost.
$node->stop('immediate');
$node->start;
mint($node, $call, 2, 100000);
cmp_ok(phase_ms($node, 'min', 2), '>', phase_ms($node, 'max', 1),
	'after an immediate restart, new ids are later than every old one');

# A backend killed by SIGKILL makes the postmaster reinitialise shared
# memory without a full restart.  The victim is a psql with no standard
# input, so nothing is ever written to it after the kill; its non-zero exit
# is expected.
my ($sleep_out, $sleep_err) = ('', '');
my $sleeper = IPC::Run::start(
	[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c', 'SELECT pg_sleep(600)' ],
	'<', \undef, '>', \$sleep_out, '2>', \$sleep_err);
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'")
  or die 'the sleeping backend did not start';
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'");
my $log_offset = -s $node->logfile;
kill 'KILL', $pid;
$sleeper->finish;
isnt($sleeper->result, 0, 'the killed backend\'s psql saw its connection end');
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
# Read from the log, not by polling with psql: a psql that the recovering
# server turns away exits before its query is written to it, and IPC::Run
# dies of the broken pipe.
$node->wait_for_log(qr/database system is ready to accept connections/, $log_offset);

mint($node, $call, 3, 100000);
cmp_ok(phase_ms($node, 'min', 3), '>', phase_ms($node, 'max', 2),
	'after a backend crash, new ids are later than every old one');
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'),
	'0', 'no repeats over 300000 ids and two restarts');

# Counter mode (no sequence): the first id after an immediate restart is
# above every id minted before it.
my $counter = 'sharded_id.next_id(8)';
mint($node, $counter, 11, 50000);
my $max_before = $node->safe_psql('postgres', 'SELECT max(id) FROM ids WHERE phase = 11');
$node->stop('immediate');
$node->start;
my $first_after = $node->safe_psql('postgres', "SELECT $counter");
is($node->safe_psql('postgres', "SELECT ${first_after}::bigint > ${max_before}::bigint"), 't',
	'counter mode: the first id after an immediate restart is above every id before it');
mint($node, $counter, 12, 50000);
is($node->safe_psql('postgres', "SELECT count(*) FROM ids WHERE phase = 12 AND id <= $first_after"),
	'0', 'counter mode: and the ids after it keep increasing');

# CREATE EXTENSION on a server that preloads the library says nothing.
$node->safe_psql('postgres', 'CREATE DATABASE preloaded');
my ($ret, $stdout, $stderr) = $node->psql('preloaded', 'CREATE EXTENSION sharded_id');
is($ret . $stderr, '0', 'CREATE EXTENSION with the library preloaded: no warning');

# Without shared_preload_libraries there is no shared state: next_id
# refuses, with a hint, instead of falling back to the unguarded formula,
# and CREATE EXTENSION warns (2.0 said nothing).
$node->adjust_conf('postgresql.conf', 'shared_preload_libraries', "''");
$node->restart;
$node->safe_psql('postgres', 'CREATE DATABASE not_preloaded');
($ret, $stdout, $stderr) = $node->psql('not_preloaded', 'CREATE EXTENSION sharded_id');
is($ret, 0, 'CREATE EXTENSION without the preload succeeds');
like($stderr, qr/WARNING:  sharded_id is not in shared_preload_libraries: next_id will fail on this server/,
	'but warns that next_id will fail');
like($stderr, qr/HINT:  Add sharded_id to shared_preload_libraries in postgresql.conf and restart the server/,
	'with the setting to add in its hint');
($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT sharded_id.next_id(7, 's');");
isnt($ret, 0, 'next_id fails without the preload');
like($stderr, qr/ERROR:  55000: sharded_id must be loaded via "shared_preload_libraries"/,
	'the error says what is missing, the setting quoted, with SQLSTATE 55000');
like($stderr, qr/HINT:  Add sharded_id to shared_preload_libraries in postgresql.conf/,
	'the hint names the setting');
is($node->safe_psql('postgres', 'SELECT sharded_id.shard_id(max(id)) FROM ids WHERE phase <= 3'),
	'7', 'decoders work without the preload');

$node->stop;
done_testing();
