# test/t/010_failover.pl
#
# Failover with standbys whose clocks run behind the primary's, 3 seconds
# and 1 hour (libfaketime).  The primary WAL-logs every raise of its clock
# ceiling; a standby replays it, keeps it across a restart, and once
# promoted mints every shard's ids after every id it replicated.  The
# records are listed by pg_waldump and described by pg_walinspect.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $primary = sharded_node('primary', init => { allows_streaming => 1 });
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE EXTENSION pg_walinspect;
	CREATE SEQUENCE s CACHE 32;
	CREATE TABLE ids (id bigint PRIMARY KEY, phase int NOT NULL);
});
$primary->backup('base');

# Two standbys, their wall clocks behind the primary's.
my %standby;
my %start;
for my $case ([ 'behind_3s', '-3' ], [ 'behind_1h', '-1h' ])
{
	my ($name, $offset) = @$case;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, 'base', has_streaming => 1);
	my ($set_clock, $start_faked) = faked_clock($node);
	$set_clock->($offset);
	$start_faked->();
	$standby{$name} = $node;
	$start{$name} = $start_faked;
}

# The primary mints on several shards, in seed and counter mode.
my $lsn0 = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
my $mint = q{
	INSERT INTO ids SELECT sharded_id.next_id(1 + g % 4, 's'), PHASE FROM generate_series(1, 40000) g;
	INSERT INTO ids SELECT sharded_id.next_id(5 + g % 2), PHASE FROM generate_series(1, 20000) g;
};
$primary->safe_psql('postgres', $mint =~ s/PHASE/1/gr);
my $lsn1 = $primary->safe_psql('postgres', 'SELECT pg_current_wal_insert_lsn()');
$primary->wait_for_catchup($_) for values %standby;

# The ceiling records in the primary's WAL.
my $rmid = $primary->safe_psql('postgres', 'SHOW sharded_id.wal_rmgr_id');
my ($ret, $out, $err) = $primary->psql('postgres', 'CHECKPOINT');
my ($wd_out, $wd_err) = ('', '');
IPC::Run::run([ 'pg_waldump', '-p', $primary->data_dir . '/pg_wal', '-s', $lsn0, '-e', $lsn1, '-r', "custom$rmid" ],
	'>', \$wd_out, '2>', \$wd_err);
my $dumped = () = $wd_out =~ /^rmgr: custom$rmid /mg;
cmp_ok($dumped, '>', 0, "pg_waldump lists $dumped records under rmgr custom$rmid") or diag($wd_err);
# The ceiling's records, and the shard states' (the first mint of a shard
# with no state claims it for its database: owner.c).
my $described = $primary->safe_psql('postgres', qq{
	SELECT count(*) || ' ' || bool_and(record_type = 'CEILING' AND description ~ '^ceiling \\d+ \\(\\d{4}-'
	                                   OR record_type = 'STATES' AND description ~ '^\\d+ states: shard \\d+ ')
	       || ' ' || (count(*) FILTER (WHERE record_type = 'CEILING') > 0)
	FROM pg_get_wal_records_info('$lsn0', '$lsn1') WHERE resource_manager = 'sharded_id'});
is($described, "$dumped true true",
	'pg_walinspect names each one CEILING or STATES and describes it: ceiling <ms> (<time>), <n> states: shard <n> ...');
my $example = $primary->safe_psql('postgres', qq{
	SELECT description FROM pg_get_wal_records_info('$lsn0', '$lsn1')
	WHERE resource_manager = 'sharded_id' AND record_type = 'CEILING' LIMIT 1});
note("a ceiling record as pg_walinspect describes it: $example");

# A standby does not mint.
($ret, $out, $err) = $standby{behind_3s}->psql('postgres', "\\set VERBOSITY verbose\nSELECT sharded_id.next_id(5)");
like($err, qr/ERROR:  25006: cannot mint sharded ids during recovery/, 'a standby refuses to mint');

# The 1-hour standby restarts before promotion: the ceiling it replayed is
# in its own state file.
$standby{behind_1h}->stop;
$start{behind_1h}->();
my $standby_state = $standby{behind_1h}->data_dir . '/sharded_id.state';
like(-f $standby_state ? slurp_file($standby_state) : '(no file)', qr/\Asharded_id state 4\nlsn [0-9A-F]+\/[0-9A-F]{8}\nceiling \d+\nfloor \d+\n/,
	'the standby made the replayed ceiling durable in its own state file');
$primary->wait_for_catchup($standby{behind_1h});
$primary->stop;

for my $name (sort keys %standby)
{
	my $node = $standby{$name};
	$node->promote;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die "$name was not promoted";
	my $clock_lag = $node->safe_psql('postgres', q{SELECT round(extract(epoch FROM now() - max(sharded_id.created_at(id)))) FROM ids});
	note("$name: its clock reads ${clock_lag} s from the newest replicated id");
	($ret, $out, $err) = $node->psql('postgres', $mint =~ s/PHASE/2/gr);
	is($ret, 0, "$name: promoted, it mints 60000 ids under the primary key, no repeat") or diag($err);
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT sharded_id.shard_id(id) AS shard,
			       max(id) FILTER (WHERE phase = 1) AS replicated,
			       min(id) FILTER (WHERE phase = 2) AS minted
			FROM ids GROUP BY 1) x
		WHERE minted <= replicated OR minted IS NULL}),
		'0', "$name: on every shard, every new id is above every replicated id");
	$node->stop;
}

done_testing();
