# test/t/019_floors_owners.pl
#
# A floor belongs to one shard, is bounded and can be lowered; a retirement
# belongs to the server.  On a primary with a streaming standby:
#
# 1. raise_floor(5, an id 1 h ahead): shards 1 and 6 mint within a second of
#    the clock, before and after a restart, after a crash, and on the
#    promoted standby, while shard 5 stays above its floor.
# 2. A row that an application role with only INSERT planted, holding
#    9223372036854775000, makes raise_floors() and create_shard on its
#    schema fail with SI003 naming the row's table, changing nothing; after
#    each failure and a restart, every shard still mints.
# 3. A floor in 2046 is refused without force and taken with it; the
#    shard, stuck in 2046 after a restart, comes back to the clock with
#    lower_floor.
# 4. A shard retired in one database is refused (SI001) in another database
#    of the server, also after CREATE EXTENSION and DROP EXTENSION there, a
#    restart, and a promotion of the standby; a shard never given away still
#    mints there.
# 5. A move of a shard holding a planted row fails on the router with SI003
#    naming the table, before it changes anything.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $planted = '9223372036854775000';
my $primary = sharded_node('floors_primary', init => { allows_streaming => 1 });
$primary->start;
$primary->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE ROLE app LOGIN;
	CREATE SCHEMA tpl;
	CREATE TABLE tpl.photos (id bigint PRIMARY KEY, caption text);
	SELECT sharded_id.add_table('tpl.photos');
	SELECT count(sharded_id.create_shard(s)) FROM unnest('{1,2,3,6,7,100}'::int[]) s;
	GRANT USAGE ON SCHEMA shard_0002 TO app;
	GRANT INSERT ON shard_0002.photos TO app;
});
$primary->safe_psql('postgres', 'CREATE DATABASE other');
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('floors_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# How far the time of a new id of the shard lies ahead of the clock, in ms.
my $lead_ms = sub {
	my ($node, $shard, $db) = @_;
	return $node->safe_psql($db // 'postgres', "SELECT round(extract(epoch FROM
		sharded_id.created_at(sharded_id.next_id($shard)) - clock_timestamp()) * 1000)");
};
# The SQLSTATE and message of a statement that must fail.
my $failure = sub {
	my ($node, $sql, $db, @params) = @_;
	my ($ret, $out, $err) = $node->psql($db // 'postgres', $sql,
		extra_params => [ '-v', 'VERBOSITY=verbose', @params ]);
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($ret, $state // 'none', $err);
};
# Every shard of the list mints on the node.
my $all_mint = sub {
	my ($node, $what, @shards) = @_;
	my $sql = join(' UNION ALL ', map { "SELECT sharded_id.shard_id(sharded_id.next_id($_))" } @shards);
	is($node->safe_psql('postgres', "SELECT string_agg(s::text, ',') FROM ($sql) t(s)"),
		join(',', @shards), "$what: shards @shards mint");
};

# 1. A floor an hour ahead moves shard 5 only.
my $ahead = $primary->safe_psql('postgres', q{SELECT sharded_id.encode(now() + interval '1 hour', 5, 1023)});
$primary->safe_psql('postgres', "SELECT sharded_id.raise_floor(5, $ahead)");
# Right after a restart a server's ids may run up to a lease (a second)
# ahead of the clock, until the clock passes the durable ceiling: wait for
# that, which a ceiling dragged to a shard's floor an hour ahead would never
# allow.
my $settle = sub {
	my ($node, $what) = @_;
	ok($node->poll_query_until('postgres', 'SELECT clock_timestamp() > ceiling FROM sharded_id.generator_info'),
		"$what: the clock passes the durable ceiling");
};
my $check_floor = sub {
	my ($node, $what) = @_;
	$settle->($node, $what);
	cmp_ok($node->safe_psql('postgres', 'SELECT sharded_id.next_id(5)'), '>', $ahead,
		"$what: shard 5 mints above its floor");
	for my $shard (1, 6)
	{
		my $lead = $lead_ms->($node, $shard);
		ok($lead > -1000 && $lead < 1000, "$what: shard $shard mints within a second of the clock ($lead ms)");
	}
};
$check_floor->($primary, 'raised');
$primary->restart;
$check_floor->($primary, 'after a restart');
$primary->stop('immediate');
$primary->start;
$check_floor->($primary, 'after a crash');

# 2. A planted row.
$primary->safe_psql('postgres', "INSERT INTO shard_0002.photos VALUES ($planted, 'planted')",
	extra_params => [ '-U', 'app' ]);
my ($ret, $state, $err) = $failure->($primary, 'SELECT sharded_id.raise_floors()');
is($state, 'SI003', 'raise_floors() over a planted row fails with SI003');
like($err, qr/table shard_0002\.photos holds id $planted/, 'the error names the table and the id');
is($primary->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.floors() WHERE shard_id <> 5 AND floor IS NOT NULL'),
	0, 'no floor moved');
$primary->restart;
$all_mint->($primary, 'after the refused raise_floors() and a restart', 1, 2, 3, 6, 7, 100);

$primary->safe_psql('postgres', "CREATE SCHEMA shard_0004; CREATE TABLE shard_0004.photos (id bigint PRIMARY KEY, caption text);
	INSERT INTO shard_0004.photos VALUES ($planted, 'planted')");
($ret, $state, $err) = $failure->($primary, 'SELECT sharded_id.create_shard(4)');
is($state, 'SI003', 'create_shard on a schema holding a planted row fails with SI003');
like($err, qr/table shard_0004\.photos holds id $planted/, 'the error names the table');
is($primary->safe_psql('postgres', q{SELECT (SELECT count(*) FROM sharded_id.shards WHERE shard_id = 4)
	|| '/' || (SELECT count(*) FROM sharded_id.floors() WHERE shard_id = 4)
	|| '/' || (SELECT count(*) FROM pg_proc WHERE pronamespace = 'shard_0004'::regnamespace)}),
	'0/0/0', 'nothing of shard 4 was made: no catalog row, no state, no next_id()');
$primary->restart;
$all_mint->($primary, 'after the refused create_shard and a restart', 1, 2, 3, 4, 6, 7, 100);

# 3. A floor in 2046.
my $in_2046 = $primary->safe_psql('postgres', q{SELECT sharded_id.encode('2046-06-01 00:00+00', 7, 0)});
($ret, $state) = $failure->($primary, "SELECT sharded_id.raise_floor(7, $in_2046)");
is($state, 'SI003', 'a floor in 2046 is refused');
$primary->safe_psql('postgres', "SELECT sharded_id.raise_floor(7, $in_2046, force => true)");
$primary->restart;
cmp_ok($primary->safe_psql('postgres', 'SELECT sharded_id.next_id(7)'), '>', $in_2046,
	'forced, and after a restart, shard 7 mints in 2046');
my $lowered = $primary->psql('postgres', 'SELECT sharded_id.lower_floor(7)', stderr => \my $warning);
like($warning, qr/WARNING:  lowered the floor of shard 7 to the clock/, 'lower_floor warns');
$primary->restart;
$settle->($primary, 'after lower_floor and a restart');
my $lead7 = $lead_ms->($primary, 7);
ok($lead7 > -1000 && $lead7 < 1000, "lowered, and after a restart, shard 7 mints within a second of the clock ($lead7 ms)");
$check_floor->($primary, 'after shard 7 came back');

# 4. A retirement is the server's.
$primary->safe_psql('postgres', 'SELECT sharded_id.retire_shard(3)');
$primary->safe_psql('other', 'CREATE EXTENSION sharded_id');
my $refused_in_other = sub {
	my ($node, $what) = @_;
	my ($r, $s) = $failure->($node, 'SELECT sharded_id.next_id(3)', 'other');
	is($s, 'SI001', "$what: shard 3, retired in database postgres, is refused in database other");
	$s = ($failure->($node, 'SELECT sharded_id.next_id(3)'))[1];
	is($s, 'SI001', "$what: and in database postgres");
	is($node->safe_psql('other', 'SELECT sharded_id.shard_id(sharded_id.next_id(8))'), 8,
		"$what: database other mints a shard this server never gave away");
};
$refused_in_other->($primary, 'after CREATE EXTENSION');
$primary->safe_psql('other', 'DROP EXTENSION sharded_id; CREATE EXTENSION sharded_id');
$refused_in_other->($primary, 'after DROP and CREATE EXTENSION');
$primary->restart;
$refused_in_other->($primary, 'after a restart');

# The standby has replayed all of it: promoted, it keeps shard 5's floor,
# shard 7's lowering and shard 3's retirement.
$primary->wait_for_catchup($standby);
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
$check_floor->($standby, 'on the promoted standby');
$settle->($standby, 'on the promoted standby, for shard 7');
$lead7 = $lead_ms->($standby, 7);
ok($lead7 > -1000 && $lead7 < 1000, "on the promoted standby, shard 7 mints within a second of the clock ($lead7 ms)");
$refused_in_other->($standby, 'on the promoted standby');
$standby->stop;

# 5. A move of a shard holding a planted row.
my %node = (
	a => data_node('floors_a', shards => [ 0 .. 3 ], shard_count => 4,
		init => { allows_streaming => 'logical' }),
	b => data_node('floors_b', shards => [], shard_count => 4,
		init => { allows_streaming => 'logical' }));
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 3 }, 4, 'floors_router');
$router->safe_psql('router', q{SELECT count(app_api.add_photo(app_api.add_user('user ' || g), 'first')) FROM generate_series(1, 20) g});
$node{a}->safe_psql('app', q{CREATE ROLE writer LOGIN; GRANT USAGE ON SCHEMA shard_0002 TO writer;
	GRANT INSERT ON shard_0002.users TO writer});
$node{a}->safe_psql('app', "INSERT INTO shard_0002.users (id, name) VALUES ($planted, 'planted')",
	extra_params => [ '-U', 'writer' ]);
my $rows_before = $node{a}->safe_psql('app', 'SELECT count(*) FROM all_ids()');
for my $method ('online', 'dump')
{
	($ret, $state, $err) = $failure->($router, "CALL sharded_id.move_shard(2, 'b', method => '$method')", 'router');
	is($state, 'SI003', "$method move of a shard holding a planted row fails with SI003");
	like($err, qr/table shard_0002\.users holds id $planted/, "$method move: the error names the table");
	is(map_owner($router, 2) . '/' . $router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves'), 'a/0', "$method move: the map still names a, no move was journaled");
	is($node{b}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0002')
		|| '/' || (SELECT count(*) FROM pg_subscription) || '/' || (SELECT count(*) FROM sharded_id.shards)}),
		'0/0/0', "$method move: nothing was made on b");
	is($node{a}->safe_psql('app', q{SELECT (SELECT count(*) FROM all_ids()) || '/' || (SELECT count(*) FROM pg_publication)
		|| '/' || (SELECT count(*) FROM pg_replication_slots) || '/' || (SELECT count(*) FROM sharded_id.floors() WHERE retired)}),
		"$rows_before/0/0/0", "$method move: a keeps every row, makes no publication or slot, retires nothing");
}
$node{$_}->restart for sort keys %node;
is($router->safe_psql('router', q{SELECT count(app_api.add_photo(app_api.add_user('after ' || g), 'after')) FROM generate_series(1, 20) g}),
	20, 'after the refused moves and a restart of the nodes, writes through the router succeed on every shard');

done_testing();
