# test/t/038_move_provisioner.pl
#
# A provisioner's shard moves.  app_admin, a member of
# sharded_id_provisioner, owns shard 1's schema and tables and adds a table
# of its own with a bigserial column: its sequence is app_admin's and
# linked to the column (OWNED BY).  A superuser moves the shard by dump to
# node b, then online back to node a (PostgreSQL 16 and later; on 15 an
# online move of a schema a role that is not a superuser owns is refused,
# 42501, and the shard stays on b, writable).
#
# 1.6 failed the dump move at copy_rows ("sequence must have same owner as
# table it is linked to"): the target made the owners before it linked the
# sequence.  After each move: every row arrived, the sequence continues
# past every value the source gave, the table and its sequence are still
# app_admin's and linked, app_admin is not a superuser, and writes through
# the router reach the new node.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 4;
my %node;
for my $n (qw(a b))
{
	$node{$n} = data_node("prov_$n", shards => $n eq 'a' ? [ 0, 1 ] : [ 2, 3 ],
		shard_count => $shard_count, init => { allows_streaming => 'logical' });
	$node{$n}->safe_psql('app', q{
		CREATE ROLE app_admin LOGIN;
		GRANT sharded_id_provisioner TO app_admin;});
}
my $router = router_node(\%node, { 0 => 'a', 1 => 'a', 2 => 'b', 3 => 'b' }, $shard_count, 'prov_router');
my $major = int($node{a}->safe_psql('app', 'SHOW server_version_num') / 10000);

$node{a}->safe_psql('app', q{
	ALTER SCHEMA shard_0001 OWNER TO app_admin;
	ALTER TABLE shard_0001.users OWNER TO app_admin;
	ALTER TABLE shard_0001.photos OWNER TO app_admin;
	SET ROLE app_admin;
	CREATE TABLE shard_0001.items (id bigint PRIMARY KEY, n bigserial, what text);
	RESET ROLE;
	INSERT INTO shard_0001.items (id, what) SELECT sharded_id.next_id(1), 'x' || g FROM generate_series(1, 500) g;});

# What a node says of the shard's items table: rows, the owners of the table and its sequence, the column the sequence is linked
# to, and the sequence's next value (taken, so each check moves it on).
sub items_state
{
	my ($n) = @_;
	return $node{$n}->safe_psql('app', q{
		SELECT count(*), pg_get_userbyid(c.relowner), pg_get_userbyid(s.relowner),
		       pg_get_serial_sequence('shard_0001.items', 'n'), nextval('shard_0001.items_n_seq') > max(n)
		FROM shard_0001.items, pg_class c, pg_class s
		WHERE c.oid = 'shard_0001.items'::regclass AND s.oid = 'shard_0001.items_n_seq'::regclass
		GROUP BY c.relowner, s.relowner});
}

sub check_moved
{
	my ($to, $from, $rows, $label) = @_;
	is($router->safe_psql('router', 'SELECT node_name FROM sharded_id.shard_map WHERE shard_id = 1'), $to,
		"$label: the map names node $to");
	is(items_state($to), "$rows|app_admin|app_admin|shard_0001.items_n_seq|t",
		"$label: every row arrived, the table and its linked sequence are app_admin's, and the sequence goes on past every value");
	is($node{$from}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0001'}), '0',
		"$label: the old copy is dropped");
	is($node{$to}->safe_psql('app', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'app_admin'}), 'f',
		"$label: app_admin is not a superuser");
}

my ($rc, $out, $err) = $router->psql('router', q{CALL sharded_id.move_shard(1, 'b', method => 'dump')});
is($rc, 0, 'a provisioner\'s shard with a serial column moves by dump') or diag($err);
$node{b}->safe_psql('app', q{INSERT INTO shard_0001.items (id, what) VALUES (sharded_id.next_id(1), 'on b')});
check_moved('b', 'a', 501, 'dump');

($rc, $out, $err) = $router->psql('router', q{CALL sharded_id.move_shard(1, 'a', method => 'online')});
if ($major >= 16)
{
	is($rc, 0, 'and online back, on PostgreSQL 16 and later') or diag($err);
	$node{a}->safe_psql('app', q{INSERT INTO shard_0001.items (id, what) VALUES (sharded_id.next_id(1), 'on a')});
	check_moved('a', 'b', 502, 'online');
}
else
{
	like($err, qr/would run code of role "app_admin"/, 'online on 15: refused, naming the owner');
	is($router->safe_psql('router', 'SELECT node_name FROM sharded_id.shard_map WHERE shard_id = 1'), 'b',
		'online on 15: the shard stays on b');
	$node{b}->safe_psql('app', q{INSERT INTO shard_0001.items (id, what) VALUES (sharded_id.next_id(1), 'still on b')});
	is($node{b}->safe_psql('app', 'SELECT count(*) FROM shard_0001.items'), '502', 'online on 15: and writable');
}
is($router->safe_psql('router', q{SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL}), '0',
	'no move is left unfinished');
done_testing();
