# test/t/017_schema_copy.pl
#
# A move copies the whole shard schema, and never drops what it did not
# copy.
#
# 1. A shard holding, besides its template tables, a table with an enum
#    column, a view over it, a materialized view, a SECURITY DEFINER
#    function owned by a role without superuser and run only by another
#    role, a disabled trigger and privileges on the schema moves online to
#    node b and back by dump.  After each move the new copy's inventory
#    (sharded_id.schema_inventory) and every row are those of the start,
#    and the old copy is gone.
# 2. A shard holding an object schema_ddl cannot make again (an
#    aggregate) is refused before the move copies anything: no journal
#    entry, no schema, publication, slot or subscription anywhere, the map
#    unchanged.
# 3. A copy that differs from its source when the move is about to drop
#    the source (changed on the target after the switch) stops the move
#    there: both copies stay; once they are the same again,
#    recover_moves() finishes the move.  Before PostgreSQL 16, the online
#    move of shard 1 is refused (a role without superuser owns objects in
#    it), so 1 and 3 move it by dump there.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 4;
my %node = (
	a => data_node('copy_a', shards => [ 0 .. 3 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	b => data_node('copy_b', shards => [], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }));
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 3 }, $shard_count);
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 80) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
});
# Roles are per server: both nodes know the shard's roles.
$node{$_}->safe_psql('postgres', 'CREATE ROLE sc_alice; CREATE ROLE sc_reader') for sort keys %node;

$node{a}->safe_psql('app', q{
	CREATE TYPE shard_0001.mood AS ENUM ('sad', 'ok', 'happy');
	CREATE TABLE shard_0001.moods (id bigint PRIMARY KEY DEFAULT shard_0001.next_id(),
		user_id bigint NOT NULL REFERENCES shard_0001.users (id), mood shard_0001.mood NOT NULL DEFAULT 'ok');
	INSERT INTO shard_0001.moods (user_id, mood)
	SELECT id, (ARRAY['sad', 'ok', 'happy'])[1 + (row_number() OVER (ORDER BY id))::int % 3]::shard_0001.mood
	FROM shard_0001.users;
	CREATE VIEW shard_0001.happy_users AS
	SELECT u.id, u.name FROM shard_0001.users u JOIN shard_0001.moods m ON m.user_id = u.id WHERE m.mood = 'happy';
	CREATE MATERIALIZED VIEW shard_0001.mood_counts AS SELECT mood, count(*) AS n FROM shard_0001.moods GROUP BY mood;
	CREATE FUNCTION shard_0001.audit() RETURNS bigint LANGUAGE sql SECURITY DEFINER
		SET search_path = pg_catalog AS 'SELECT count(*) FROM shard_0001.moods';
	ALTER FUNCTION shard_0001.audit() OWNER TO sc_alice;
	REVOKE ALL ON FUNCTION shard_0001.audit() FROM PUBLIC;
	GRANT EXECUTE ON FUNCTION shard_0001.audit() TO sc_reader;
	ALTER TABLE shard_0001.moods OWNER TO sc_alice;
	ALTER VIEW shard_0001.happy_users OWNER TO sc_alice;
	GRANT SELECT ON shard_0001.happy_users TO sc_reader;
	GRANT SELECT ON shard_0001.users TO sc_alice;
	GRANT USAGE ON SCHEMA shard_0001 TO sc_reader, sc_alice;
	CREATE FUNCTION shard_0001.no_updates() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN RAISE EXCEPTION 'no updates'; END $$;
	CREATE TRIGGER moods_frozen BEFORE UPDATE ON shard_0001.moods FOR EACH ROW EXECUTE FUNCTION shard_0001.no_updates();
	ALTER TABLE shard_0001.moods DISABLE TRIGGER moods_frozen;
});

my $inventory_sql = q{SELECT string_agg(format('%s|%s|%s|%s|%s|%s', kind, name, owner, acl, details, definition), E'\n' ORDER BY kind, name)
	FROM sharded_id.schema_inventory('shard_0001')};
my $rows_sql = q{SELECT sharded_id._schema_fingerprint('shard_0001') || ' views:'
	|| (SELECT string_agg(mood || '=' || n, ',' ORDER BY mood) FROM shard_0001.mood_counts) || ' '
	|| (SELECT count(*) FROM shard_0001.happy_users)};
my $start_inventory = $node{a}->safe_psql('app', $inventory_sql);
my $start_rows = $node{a}->safe_psql('app', $rows_sql);
like($start_inventory, qr/^enum\|mood\|/m, 'the inventory holds the enum');
like($start_inventory, qr/^function\|audit\(\)\|sc_alice\|sc_alice=X\/sc_alice,sc_reader=X\/sc_alice\|security definer\|/m,
	'the inventory holds the SECURITY DEFINER function, its owner and privileges');
like($start_inventory, qr/^trigger\|moods\.moods_frozen\|\|\|enabled D\|/m, 'the inventory holds the disabled trigger');
like($start_rows, qr/moods:\d+:/, 'the rows include the new table');

my $leftovers = sub {
	return join(' ', map { "$_:" . $node{$_}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots)
			|| '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_subscription)}) } sort keys %node);
};

# 1. Online to b, back to a by dump.  Before PostgreSQL 16 a subscription
# writes as its owner, and sc_alice owns objects of the shard: the online
# move is refused there (42501) before it changes anything, and the shard
# goes to b by dump.
my $major = int($node{a}->safe_psql('app', 'SHOW server_version_num') / 10000);
if ($major < 16)
{
	my ($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard(1, 'b', method => 'online')");
	like($stderr, qr/would run code of role "sc_alice" with the subscription's rights/,
		'online move on 15 of a shard with objects of a role without superuser: refused');
	is(map_owner($router, 1), 'a', 'refused online move: the map still names a');
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves'), '0', 'refused online move: nothing journaled');
}
for my $step ([ 'a', 'b', $major < 16 ? 'dump' : 'online' ], [ 'b', 'a', 'dump' ])
{
	my ($from, $to, $method) = @$step;
	my ($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard(1, '$to', method => '$method')");
	is($ret, 0, "$method move of shard 1 to $to") or diag($stderr);
	is(map_owner($router, 1), $to, "$method move: the map names $to");
	is($node{$to}->safe_psql('app', $inventory_sql), $start_inventory,
		"$method move: the copy on $to has the inventory of the start");
	is($node{$to}->safe_psql('app', $rows_sql), $start_rows, "$method move: every row on $to is as at the start");
	is($node{$from}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0001'}), '0',
		"$method move: the old copy on $from is dropped");
	is($leftovers->(), 'a:0/0/0 b:0/0/0', "$method move: no slot, publication or subscription left");
	# The function runs with its owner's rights for the role granted it, and for no other.
	is($node{$to}->safe_psql('app', 'SET ROLE sc_reader; SELECT shard_0001.audit() > 0'), 't',
		"$method move: sc_reader runs the SECURITY DEFINER function on $to");
	my ($r, $o, $e) = $node{$to}->psql('app', 'CREATE ROLE sc_nobody; SET ROLE sc_nobody; SELECT shard_0001.audit()');
	like($e, qr/permission denied/, "$method move: a role without the grant may not run it on $to");
	$node{$to}->safe_psql('app', 'DROP ROLE sc_nobody');
}

# 2. An aggregate in shard 2: the move is refused before it copies anything.
$node{a}->safe_psql('app', 'CREATE AGGREGATE shard_0002.total(integer) (SFUNC = int4pl, STYPE = integer)');
my $journaled = $router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves');
for my $method (qw(online dump))
{
	my ($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard(2, 'b', method => '$method')");
	isnt($ret, 0, "$method move of a shard holding an aggregate fails");
	like($stderr, qr/schema_ddl cannot rebuild aggregate shard_0002\.total\(integer\)/, "$method move: the error names the aggregate");
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves'), $journaled, "$method move: nothing journaled");
	is($node{b}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0002'}), '0',
		"$method move: nothing created on the target");
	is($leftovers->(), 'a:0/0/0 b:0/0/0', "$method move: no slot, publication or subscription made");
	is(map_owner($router, 2), 'a', "$method move: the map still names a");
}
$node{a}->safe_psql('app', 'DROP AGGREGATE shard_0002.total(integer)');

# 3. The target's copy changes between the switch and the drop of the old
# copy: the move stops, both copies stay, and finishes once they agree.
hold_on($router);
my ($move_out, $move_err) = ('', '');
my $mover = IPC::Run::start([ 'psql', '-X', '-q', '-d', $router->connstr('router'),
		'-c', q{SET sharded_id.move_hold = 'cleanup'},
		'-c', "CALL sharded_id.move_shard(1, 'b', method => '" . ($major < 16 ? 'dump' : 'online') . "')" ],
	'>', \$move_out, '2>', \$move_err);
$router->poll_query_until('router', q{SELECT state = 'cleanup' FROM sharded_id.moves WHERE finished_at IS NULL})
  or die "the move did not reach its cleanup: $move_err";
is(map_owner($router, 1), 'b', 'changed copy: the map has switched to b');
$node{b}->safe_psql('app', 'ALTER FUNCTION shard_0001.audit() SECURITY INVOKER');
hold_off($router);
$mover->finish;
like($move_err, qr/is not the same schema as its source/, 'changed copy: the move stops before it drops the old copy');
like($move_err, qr/audit\(\)/, 'changed copy: the error names the function that differs');
is($node{a}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0001'})
	  . '/' . $node{b}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0001'}),
	'1/1', 'changed copy: both copies stay');
is($node{a}->safe_psql('app', $rows_sql), $start_rows, 'changed copy: the old copy keeps every row');
is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL'), '1',
	'changed copy: the move stays unfinished');
$node{b}->safe_psql('app', 'ALTER FUNCTION shard_0001.audit() SECURITY DEFINER');
my ($ret, $stdout, $stderr) = $router->psql('router', 'CALL sharded_id.recover_moves()');
is($ret, 0, 'changed copy: recover_moves finishes the move once the copies agree') or diag($stderr);
is($router->safe_psql('router', q{SELECT outcome FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1}), 'moved',
	'changed copy: journaled as moved');
is($node{a}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0001'}), '0',
	'changed copy: the old copy is dropped now');
is($node{b}->safe_psql('app', $inventory_sql), $start_inventory, 'changed copy: the copy on b has the inventory of the start');
is($node{b}->safe_psql('app', $rows_sql), $start_rows, 'changed copy: every row on b is as at the start');
is($leftovers->(), 'a:0/0/0 b:0/0/0', 'changed copy: no slot, publication or subscription left');

done_testing();
