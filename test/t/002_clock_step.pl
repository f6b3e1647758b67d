# test/t/002_clock_step.pl
#
# The server's wall clock is stepped back an hour (as by NTP or a VM
# restore), through libfaketime.  Ids must not repeat, must not go back in
# time, and must not hang; the same holds across an immediate restart while
# the clock is still behind.  A clock before the epoch or past the sign-bit
# date gives an error and consumes nothing.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest ();
use Test::More;

# A hang becomes a failure instead of a stuck test.
my $node = ShardedIdTest::sharded_node('clock', conf => "statement_timeout = '120s'\n");
my ($set_clock, $start_faked) = ShardedIdTest::faked_clock($node);
sub set_clock { $set_clock->(@_) }
sub start_faked { $start_faked->() }

set_clock('+0');
start_faked();
$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE s;
	CREATE TABLE ids (id bigint PRIMARY KEY, phase int NOT NULL);
	CREATE FUNCTION unix_ms(timestamptz) RETURNS bigint
	LANGUAGE sql IMMUTABLE AS 'SELECT (extract(epoch FROM $1) * 1000)::bigint';
});

my $call = "sharded_id.next_id(3, 's')";
sub mint { ShardedIdTest::mint($node, $call, @_) }
sub phase_ms { ShardedIdTest::phase_ms($node, @_) }

sub clock_ms
{
	return $node->safe_psql('postgres', 'SELECT unix_ms(clock_timestamp())');
}

mint(1, 20000);
my $high_water = phase_ms('max', 1);

# Step back one hour while the server runs.
set_clock('-1h');
cmp_ok(clock_ms(), '<', $high_water - 3000 * 1000,
	'the server clock now reads about an hour earlier');
mint(2, 20000);
cmp_ok(phase_ms('min', 2), '>=', $high_water,
	'with the clock behind, ids do not go back in time');
cmp_ok(phase_ms('max', 2), '<=', $high_water + 20000 / 1024 + 2,
	'ids keep the high-water time, moving 1 ms per 1024 ids');
is($node->safe_psql('postgres', q{
	SELECT clock_behind > 0 AND max_clock_lag > 3000 * 1000
	FROM sharded_id.generator_stats WHERE layout = 'instagram' AND shard_id = 3}),
	't', 'generator_stats counts the calls that found the clock behind, and the hour of lag');

# Immediate restart with the clock still an hour behind: shared memory is
# gone, the durable ceiling is not.
$high_water = phase_ms('max', 2);
$node->stop('immediate');
start_faked();
mint(3, 20000);
cmp_ok(phase_ms('min', 3), '>', $high_water,
	'after a restart with the clock behind, ids are later than every old one');
cmp_ok(phase_ms('max', 3), '<=', $high_water + 1000 + 20000 / 1024 + 2,
	'and at most one clock lease (1000 ms) ahead of them');

# The clock comes back.  Once it has passed the durable ceiling (at most
# one lease after the newest id), ids follow the wall clock again.
set_clock('+0');
my $ceiling = ShardedIdTest::read_ceiling($node);
cmp_ok($ceiling, '>=', phase_ms('max', 3), 'the durable ceiling covers the newest id');
$node->poll_query_until('postgres', "SELECT unix_ms(clock_timestamp()) > $ceiling")
  or die 'the clock did not pass the ceiling';
my $before = clock_ms();
mint(4, 1000);
my $after = clock_ms();
cmp_ok(phase_ms('min', 4), '>=', $before, 'with the clock back, ids carry the wall clock');
cmp_ok(phase_ms('max', 4), '<=', $after, 'and not a time ahead of it');

is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'),
	'0', 'no repeats over all phases');

# Counter mode, with the clock stepped back an hour live and across an
# immediate restart: no repeat, ids still increase in the order minted, and
# no hang (statement_timeout would fail the statement).
$node->safe_psql('postgres', 'CREATE TABLE cids (ord bigserial, id bigint PRIMARY KEY)');
sub mint_counter
{
	my ($what) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		'INSERT INTO cids (id) SELECT sharded_id.next_id(4) FROM generate_series(1, 20000)');
	is($ret, 0, "counter mode, $what: 20000 ids inserted under a primary key") or diag($stderr);
}
set_clock('+0');
mint_counter('clock right');
set_clock('-1h');
mint_counter('clock an hour behind');
$node->stop('immediate');
start_faked();
mint_counter('after a restart with the clock behind');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE id <= prev) FROM (SELECT id, lag(id) OVER (ORDER BY ord) AS prev FROM cids) c}),
	'0', 'counter mode: every id is above the one minted before it');
set_clock('+0');

# A clock outside the id's time field: an error of class 22, and the
# sequence is not consumed.
my $last_value = $node->safe_psql('postgres', 'SELECT last_value FROM s');
for my $case (['@2010-01-01 00:00:00', 'before the epoch'],
	['@2047-01-01 00:00:00', 'past the sign-bit date'])
{
	my ($spec, $what) = @$case;
	set_clock($spec);
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT sharded_id.next_id(3, 's');");
	like($stderr, qr/ERROR:  22008: timestamp out of range for sharded ids/,
		"clock $what: SQLSTATE 22008");
	like($stderr, qr/hold times from 2011-08-24 .* to 2046-06-27 /,
		"clock $what: the detail states the range");
}
set_clock('+0');
is($node->safe_psql('postgres', 'SELECT last_value FROM s'),
	$last_value, 'rejected calls consumed no sequence value');

$node->stop;
done_testing();
