# test/t/030_move_tenant.pl
#
# A tenant that owns a shard's schema, and its tables, on the source, plants
# code that makes it a superuser when it runs with a superuser's rights: an
# index expression's function, a partial index whose predicate is a
# constant call (folded by whoever plans a read of the table, or makes the
# index), a trigger enabled ALWAYS (it fires in replica mode too), a check
# constraint and a column default, each writing a row to a side-effect
# table whenever it runs.  A superuser then moves one
# shard with method => 'dump' and another with method => 'online'.
#
# The dump move writes the rows on the target as each table's owner, so the
# tenant's code runs there as the tenant.  An online move on PostgreSQL 16
# and later applies as the tables' owners; on 15, where the apply and the
# table sync run as the subscription's owner, it is refused (42501) before
# anything changes, and the shard stays writable on the source.
#
# After each: the tenant is not a superuser on either node, no side-effect
# row says a superuser ran the code, every row arrived, no id repeats.
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
	$node{$n} = data_node("tenant_$n", shards => $n eq 'a' ? [ 0, 1 ] : [ 2, 3 ],
		shard_count => $shard_count, init => { allows_streaming => 'logical' });
	$node{$n}->safe_psql('app', q{
		CREATE ROLE tenant NOLOGIN;
		CREATE TABLE public.side_effect (what text, usr name, su text, query text DEFAULT left(current_query(), 300), app text DEFAULT current_setting('application_name'));
		GRANT INSERT ON public.side_effect TO PUBLIC;});
}
my $router = router_node(\%node, { 0 => 'a', 1 => 'a', 2 => 'b', 3 => 'b' }, $shard_count, 'tenant_router');
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 100) g;
	SELECT count(app_api.add_photo(user_id, 'photo of ' || n)) FROM demo_users;});
my $major = int($node{a}->safe_psql('app', 'SHOW server_version_num') / 10000);

# The tenant takes shards 0 and 1 and plants its code in both users tables,
# as itself: what runs now runs as the tenant.
for my $s (qw(shard_0000 shard_0001))
{
	$node{a}->safe_psql('app', qq{
		ALTER SCHEMA $s OWNER TO tenant;
		ALTER TABLE $s.users OWNER TO tenant;
		ALTER TABLE $s.photos OWNER TO tenant;
		SET ROLE tenant;
		CREATE FUNCTION $s.evil(what text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS \$b\$
		DECLARE
			su boolean := (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user);
		BEGIN
			-- A read-only transaction (a move's comparison) takes no row:
			-- the server log keeps a superuser's run there.
			IF su THEN
				RAISE WARNING 'tenant code ran as superuser %: %', current_user, what;
			END IF;
			IF current_setting('transaction_read_only') = 'off' THEN
				INSERT INTO public.side_effect VALUES (what, current_user, CASE WHEN su THEN 'on' ELSE 'off' END);
			END IF;
			IF su THEN
				ALTER ROLE tenant SUPERUSER;
			END IF;
			RETURN true;
		END \$b\$;
		CREATE FUNCTION $s.evil_i(x bigint) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS \$b\$
		BEGIN PERFORM $s.evil('index'); RETURN x; END \$b\$;
		CREATE FUNCTION $s.evil_c(x bigint) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS \$b\$
		BEGIN RETURN $s.evil('check'); END \$b\$;
		CREATE FUNCTION $s.evil_b(x boolean) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS \$b\$
		BEGIN PERFORM $s.evil('partial index'); RETURN x; END \$b\$;
		CREATE FUNCTION $s.evil_t() RETURNS trigger LANGUAGE plpgsql AS \$b\$
		BEGIN PERFORM $s.evil('trigger'); RETURN NEW; END \$b\$;
		CREATE INDEX users_evil ON $s.users ($s.evil_i(id));
		-- A constant predicate: folded whenever a query on the table is
		-- planned, by whoever plans it.
		CREATE INDEX users_evil_p ON $s.users (id) WHERE $s.evil_b(true);
		ALTER TABLE $s.users ADD CONSTRAINT users_evil CHECK ($s.evil_c(id));
		ALTER TABLE $s.users ADD COLUMN planted boolean DEFAULT $s.evil('default');
		CREATE TRIGGER users_evil BEFORE INSERT OR UPDATE ON $s.users FOR EACH ROW EXECUTE FUNCTION $s.evil_t();
		ALTER TABLE $s.users ENABLE ALWAYS TRIGGER users_evil;
		RESET ROLE;});
}
is($node{a}->safe_psql('app', q{SELECT count(*) FROM side_effect WHERE su <> 'off' OR usr <> 'tenant'}),
	'0', 'the planted code ran only as the tenant so far');
cmp_ok($node{a}->safe_psql('app', q{SELECT count(DISTINCT what) FROM side_effect}), '>=', 3,
	'the planted code runs when rows are written');

# What no move may change.
my $unharmed = sub {
	my ($what) = @_;
	for my $n (qw(a b))
	{
		is($node{$n}->safe_psql('app', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'tenant'}), 'f',
			"$what: the tenant is not a superuser on node $n");
		my @runs = slurp_file($node{$n}->logfile) =~ /(WARNING:  tenant code ran as superuser.*)/g;
		is(scalar(@runs), 0, "$what: the log of node $n shows no run of the planted code as a superuser")
		  or diag(join("\n", @runs));
		is($node{$n}->safe_psql('app', q{SELECT count(*) FROM side_effect WHERE su <> 'off' OR usr <> 'tenant'}),
			'0', "$what: no planted code ran as another role on node $n")
		  or diag($node{$n}->safe_psql('app', q{SELECT what, usr, su, app, query FROM side_effect WHERE su <> 'off' OR usr <> 'tenant' LIMIT 5}));
	}
	# Read as each schema's owner: the tenant's code runs as the tenant.
	my @ids;
	for my $n (values %node)
	{
		for my $s (split /\n/, $n->safe_psql('app', 'SELECT schema_name FROM sharded_id.shards ORDER BY 1'))
		{
			push @ids, split /\n/, $n->safe_psql('app', "SELECT set_config('role', nspowner::regrole::text, false) FROM pg_namespace
				WHERE nspname = '$s' \\gset
				SELECT id FROM $s.users UNION ALL SELECT id FROM $s.photos");
		}
	}
	my %seen;
	is(scalar(grep { $seen{$_}++ } @ids), 0, "$what: no id repeats");
};
my $rows = sub {
	my ($n, $s) = @_;
	return $node{$n}->safe_psql('app', "SET ROLE tenant;
		SELECT (SELECT count(*) FROM $s.users) || '/' || (SELECT count(*) FROM $s.photos)");
};

# 1. The dump method.
my $before = $rows->('a', 'shard_0000');
$node{b}->safe_psql('app', 'TRUNCATE side_effect');
my ($rc, $out, $err) = $router->psql('router', q{CALL sharded_id.move_shard(0, 'b', method => 'dump')});
is($rc, 0, 'dump: the move succeeds') or diag($err);
is(map_owner($router, 0), 'b', 'dump: the map names the target');
is($rows->('b', 'shard_0000'), $before, "dump: every row arrived ($before)");
is($node{a}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0000'}), '0',
	'dump: the source dropped its copy');
cmp_ok($node{b}->safe_psql('app', q{SELECT count(*) FROM side_effect WHERE usr = 'tenant' AND what IN ('index', 'check', 'trigger')}),
	'>', 0, 'dump: the planted code ran on the target, as the tenant');
$unharmed->('dump');

# 2. The online method.
$before = $rows->('a', 'shard_0001');
$node{b}->safe_psql('app', 'TRUNCATE side_effect');
($rc, $out, $err) = $router->psql('router', qq{\\set VERBOSITY verbose\nCALL sharded_id.move_shard(1, 'b', method => 'online')});
if ($major < 16)
{
	isnt($rc, 0, 'online on 15: the move is refused');
	like($err, qr/ERROR:  42501: an online move of shard 1 to node "b" would run code of role "tenant"/,
		'online on 15: refused with 42501, naming the tenant') or diag($err);
	like($err, qr/DETAIL:  .*schema shard_0001 is owned by or granted to "tenant"/, 'online on 15: the refusal names the object');
	like($err, qr/HINT:  .*PostgreSQL 16 or later/, 'online on 15: the hint says what to do');
	is(map_owner($router, 1), 'a', 'online on 15: the map still names the source');
	is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.moves WHERE shard_id = 1'), '0',
		'online on 15: no move was journaled');
	for my $n (qw(a b))
	{
		is($node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_publication) + (SELECT count(*) FROM pg_replication_slots)
			+ (SELECT count(*) FROM pg_subscription)}), '0', "online on 15: no publication, slot or subscription on node $n");
	}
	is($node{b}->safe_psql('app', q{SELECT count(*) FROM pg_namespace WHERE nspname = 'shard_0001'}), '0',
		'online on 15: nothing was made on the target');
	is($rows->('a', 'shard_0001'), $before, 'online on 15: the source keeps every row');
	# Still writable on the source: a new id, written as the tenant.
	is($node{a}->safe_psql('app', q{
		SELECT sharded_id.next_id(1) AS id \gset
		SET ROLE tenant;
		INSERT INTO shard_0001.users (id, name) VALUES (:id, 'after the refusal');
		SELECT count(*) FROM shard_0001.users WHERE name = 'after the refusal'}), '1',
		'online on 15: the shard is still writable on the source');
	# The router writes as its own role, to photos, where the tenant
	# planted nothing.
	($rc, $out, $err) = $router->psql('router', q{SELECT app_api.add_photo(user_id, 'through the router') FROM demo_users
		WHERE sharded_id.shard_id(user_id) = 1 LIMIT 1});
	is($rc, 0, 'online on 15: the router still writes to the shard') or diag($err);
}
else
{
	is($rc, 0, "online on $major: the move succeeds") or diag($err);
	is(map_owner($router, 1), 'b', "online on $major: the map names the target");
	is($rows->('b', 'shard_0001'), $before, "online on $major: every row arrived ($before)");
	cmp_ok($node{b}->safe_psql('app', q{SELECT count(*) FROM side_effect WHERE usr = 'tenant' AND what IN ('index', 'check', 'trigger')}),
		'>', 0, "online on $major: the planted code ran on the target, as the tenant");
	for my $n (qw(a b))
	{
		is($node{$n}->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_publication) + (SELECT count(*) FROM pg_replication_slots)
			+ (SELECT count(*) FROM pg_subscription)}), '0', "online on $major: no publication, slot or subscription left on node $n");
	}
}
$unharmed->('online');

done_testing();
