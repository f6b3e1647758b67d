# test/t/047_sql_edition.pl
#
# sharded_id_sql, the SQL edition (doc/sharded_id-sql-edition.md), on a server that
# loads no library of ours, in each of its three forms: CREATE EXTENSION by a
# database owner who is not a superuser, the plain script through psql -f by
# another, and the pg_tle script by a third granted pgtle_admin.  Each passes
# the same minting checks (mint_checks): more sessions than cores and one
# statement of 1,000,000 ids on one shard at once, no repeat, at most 1,024
# ids in any millisecond, none more than 1 s ahead of the clock.  Then, on
# the CREATE EXTENSION database: the decoders agree with the C extension's
# (a second cluster, which preloads it) for the same ids, in every layout; a
# shard moves to the C server and back without a repeat; pg_dump and restore,
# then minting, without a repeat; and the clock stepped back 5 s
# (libfaketime), the server killed and restarted, then minting goes on with
# no repeat against every id handed out before, the newest at most 1 s ahead
# of the real clock.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use Time::HiRes ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $pg_config = $ENV{PG_CONFIG} // 'pg_config';
chomp(my $sharedir = `$pg_config --sharedir`);
chomp(my $docdir = `$pg_config --docdir`);
plan skip_all => "pg_tle is not installed in $sharedir (test/setup.sh builds it from ../shared/pg_tle)"
  unless -f "$sharedir/extension/pg_tle.control";
my ($pgtle_script) = glob("$docdir/extension/sharded_id_sql--*--pgtle.sql");
my ($plain_script) = glob("$docdir/extension/sharded_id_sql--*--psql.sql");
die "the SQL edition's scripts are not installed in $docdir/extension (make install)"
  unless $pgtle_script && $plain_script;

# The SQL edition's server: pg_tle preloaded, nothing of ours.
my $node = PostgreSQL::Test::Cluster->new('sql_edition');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'pg_tle'\nmax_connections = 30\n");
my ($set_clock, $start_faked) = ShardedIdTest::faked_clock($node);
$start_faked->();

# The C extension's server, for the decoders and the move.
my $cnode = ShardedIdTest::sharded_node('c_edition');
$cnode->start;
$cnode->safe_psql('postgres', 'CREATE EXTENSION sharded_id');

my $timeout = $PostgreSQL::Test::Utils::timeout_default;

sub psql_as
{
	my ($db, $role, $sql) = @_;
	return $node->safe_psql($db, $sql, extra_params => [ '-U', $role ]);
}

# Each form installed by its own database owner, none a superuser.
for my $form (qw(ext plain tle))
{
	$node->safe_psql('postgres', "CREATE ROLE owner_$form LOGIN; CREATE DATABASE $form OWNER owner_$form;");
}
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'owner\\_%' AND rolsuper"),
	'0', 'the three owners are not superusers');
psql_as('ext', 'owner_ext', 'CREATE EXTENSION sharded_id_sql');
$node->command_ok(
	[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('plain'), '-U', 'owner_plain', '-f', $plain_script ],
	'the plain script installs with psql -f by the database owner');
# pg_tle refuses a name whose control file the server has, as this one has
# sharded_id_sql's: the same script registers under another name here.
$node->safe_psql('tle', 'CREATE EXTENSION pg_tle; GRANT pgtle_admin TO owner_tle;');
my $tle_sql = slurp_file($pgtle_script);
$tle_sql =~ s/install_extension\('sharded_id_sql'/install_extension('sharded_id_sql_tle'/ or die 'no install_extension';
psql_as('tle', 'owner_tle', $tle_sql);
psql_as('tle', 'owner_tle', 'CREATE EXTENSION sharded_id_sql_tle');
is($node->safe_psql('tle', "SELECT extowner::regrole FROM pg_extension WHERE extname = 'sharded_id_sql_tle'"),
	'owner_tle', 'the pg_tle script installs through pg_tle by an owner granted pgtle_admin');

# Start psql on $db as $role running $sql, in the background.
sub start_psql
{
	my ($db, $role, $sql) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-U', $role, '-c', $sql ],
		'>', \$out, '2>', \$err, IPC::Run::timeout($timeout));
	return sub { $h->finish; return ($h->result(0), $err) };
}

# The minting checks, on database $db where $role owns the edition: shard 7
# minted by $sessions sessions of single ids at once with one statement of
# next_ids(7, 1000000), into ids, which the function makes.
sub mint_checks
{
	my ($db, $role, $label) = @_;
	my $sessions = 4;    # more than the machine's cores
	psql_as($db, $role, 'CREATE TABLE ids (id bigint NOT NULL, batch boolean NOT NULL DEFAULT false)');
	my @wait = map {
		start_psql($db, $role, 'INSERT INTO ids (id) SELECT sharded_id.next_id(7) FROM generate_series(1, 3000)')
	} 1 .. $sessions;
	push @wait, start_psql($db, $role, 'INSERT INTO ids SELECT sharded_id.next_ids(7, 1000000), true');
	for my $w (@wait)
	{
		my ($rc, $err) = $w->();
		is($rc, 0, "$label: a minting session ends without an error") or diag $err;
	}
	is( psql_as(
			$db, $role,
			"SELECT count(*) FILTER (WHERE batch), count(*) - count(DISTINCT id), "
			  . "bool_and(sharded_id.shard_id(id) = 7) FROM ids"),
		'1000000|0|t',
		"$label: 1,000,000 ids in one statement beside $sessions sessions, all of shard 7, 0 repeats");
	is( psql_as(
			$db, $role,
			"SELECT (SELECT max(id) FROM ids) <= sharded_id.max_id_at(clock_timestamp() + interval '1 s'), "
			  . "(SELECT max(n) FROM (SELECT count(*) AS n FROM ids GROUP BY id >> 23) s) <= 1024"),
		't|t', "$label: none more than 1 s ahead of the clock, at most 1,024 in any millisecond");
}

mint_checks('ext', 'owner_ext', 'CREATE EXTENSION');
mint_checks('plain', 'owner_plain', 'psql -f');
mint_checks('tle', 'owner_tle', 'pg_tle');

# Every layout mints, its ids carrying the shard and the time.
is( psql_as(
		'ext', 'owner_ext',
		"SELECT count(*), bool_and(sharded_id.shard_id(id, name) = shard AND sharded_id.created_at(id, name) "
		  . "BETWEEN now() - interval '1 s' AND clock_timestamp() + interval '1 s') "
		  . "FROM (SELECT name, 3 AS shard, sharded_id.next_id_in_layout(3, name) AS id FROM sharded_id.layouts() "
		  . "UNION ALL SELECT name, 4, sharded_id.next_ids_in_layout(4, 3, name) FROM sharded_id.layouts()) s"),
	'20|t', 'next_id_in_layout and next_ids_in_layout mint in every layout');

# The decoders against the C extension's, for ids of both editions and the
# edges of every layout.
my $probe = q{
SELECT string_agg(format('%s %s %s %s %s %s %s %s', l.name, i.id,
                         sharded_id.created_at(i.id, l.name), sharded_id.shard_id(i.id, l.name),
                         sharded_id.seq_id(i.id, l.name), sharded_id.to_shortcode(i.id),
                         sharded_id.from_shortcode(sharded_id.to_shortcode(i.id)),
                         (sharded_id.decode(i.id, l.name)).created_at), E'\n' ORDER BY l.name, i.id)
FROM sharded_id.layouts() l,
     (SELECT unnest(ARRAY[%s]::bigint[]) AS id) i
WHERE i.id <= sharded_id.max_id_at(l.last_time, l.name)
};
my $sample = psql_as('ext', 'owner_ext',
	"SELECT string_agg(id::text, ',') FROM (SELECT id FROM ids ORDER BY random() LIMIT 200) s");
my $cids = $cnode->safe_psql('postgres',
	"SELECT string_agg(id::text, ',') FROM sharded_id.next_ids(7, 100) id");
(my $q = $probe) =~ s/%s\]/0,1,1023,8388607,9223372036854775807,$sample,$cids]/;
is(psql_as('ext', 'owner_ext', $q), $cnode->safe_psql('postgres', $q),
	'decode, created_at, shard_id, seq_id and shortcodes agree with the C extension in every layout');
my $more = q{
SELECT string_agg(format('%s %s %s %s %s %s', l.name, t, sharded_id.min_id_at(t, l.name), sharded_id.max_id_at(t, l.name),
                         sharded_id.encode(t, 3, 5, l.name), sharded_id.check_shard(1, l.name)), E'\n' ORDER BY l.name, t)
FROM sharded_id.layouts() l,
     unnest(ARRAY['2026-01-01 00:00:00.1234+00', '2031-05-06 07:08:09.999+02']::timestamptz[]) t
UNION ALL SELECT string_agg(format('%s', l), E'\n') FROM sharded_id.layouts() l
UNION ALL SELECT string_agg(format('%s %s %s', k, sharded_id.shard_for(k, 97), sharded_id.shard_for(k::bigint * 7919 - 400000, 97)), E'\n')
FROM generate_series(-50, 50) k
UNION ALL SELECT string_agg(sharded_id.shard_for(s, 1024)::text, ',') FROM unnest(ARRAY['', 'a', 'shard key', 'ünïcødé ☃', repeat('xyz', 1000)]) s
};
is(psql_as('ext', 'owner_ext', $more), $cnode->safe_psql('postgres', $more),
	'layouts, min_id_at, max_id_at, encode, check_shard and shard_for agree with the C extension');

# Bad input gets the C extension's SQLSTATE, and the SQL edition's own
# refusals theirs.
sub sqlstate
{
	my ($n, $db, $role, $sql) = @_;
	my ($rc, $out, $err) =
	  $n->psql($db, "\\set VERBOSITY verbose\n$sql", extra_params => [ defined $role ? ('-U', $role) : () ]);
	return $err =~ /ERROR:  ([0-9A-Z]{5}):/ ? $1 : "no error ($rc)";
}
my $id7 = psql_as('ext', 'owner_ext', 'SELECT max(id) FROM ids');
for my $bad ('SELECT sharded_id.next_id(8192)', "SELECT sharded_id.next_id_in_layout(1, 'nope')",
	'SELECT sharded_id.next_ids(1, -1)', 'SELECT sharded_id.next_ids(1, 1000001)', 'SELECT sharded_id.next_ids(8192, 0)',
	"SELECT sharded_id.decode(-1)", "SELECT sharded_id.from_shortcode('a!')", 'SELECT sharded_id.to_shortcode(-1)',
	'SELECT sharded_id.encode(now(), 1, 1024)', 'SELECT sharded_id.shard_for(1, 0)',
	"SELECT sharded_id.min_id_at('2001-01-01')", "SELECT sharded_id.raise_floor(8, $id7)")
{
	my $state = sqlstate($node, 'ext', 'owner_ext', $bad);
	is($state, sqlstate($cnode, 'postgres', undef, $bad),
		"$bad: $state, as in the C extension");
}
is( sqlstate(
		$node, 'ext', 'owner_ext',
		"SELECT sharded_id.raise_floor(7, sharded_id.encode(clock_timestamp() + interval '1 min', 7, 0))"),
	'SI003', 'a floor more than 1 s ahead of the clock is refused unless forced');

# Shard 7 moves to the C server and back.
my $hw = psql_as('ext', 'owner_ext', 'SELECT sharded_id.high_water(7)');
is($hw, psql_as('ext', 'owner_ext', 'SELECT max(id) FROM ids'), "high_water is the shard's newest id");
$cnode->safe_psql('postgres', "SELECT sharded_id.raise_floor(7, $hw)");
my $c_new = $cnode->safe_psql('postgres',
	"SELECT min(id) > $hw FROM sharded_id.next_ids(7, 2000) id");
is($c_new, 't', 'on the C server, the shard mints above the SQL edition\'s high-water mark');
my $c_hw = $cnode->safe_psql('postgres', 'SELECT sharded_id.high_water(7)');
psql_as('ext', 'owner_ext', "SELECT sharded_id.raise_floor(7, $c_hw)");
is( psql_as(
		'ext', 'owner_ext',
		"WITH n AS (INSERT INTO ids (id) SELECT sharded_id.next_id(7) FROM generate_series(1, 500) RETURNING id) "
		  . "SELECT min(id) > $c_hw FROM n"),
	't', 'back on the SQL edition, the shard mints above the C server\'s high-water mark');

# Minting is the owner's to grant; the shards' sequences stay the owner's.
$node->safe_psql('postgres', 'CREATE ROLE app LOGIN');
is(sqlstate($node, 'ext', 'app', 'SELECT sharded_id.next_id(7)'), '42501', 'a role not granted next_id cannot mint');
psql_as('ext', 'owner_ext', 'GRANT EXECUTE ON FUNCTION sharded_id.next_id(integer) TO app');
is($node->safe_psql('ext', 'SELECT sharded_id.shard_id(sharded_id.next_id(7))', extra_params => [ '-U', 'app' ]),
	'7', 'once granted, it mints');
is(sqlstate($node, 'ext', 'app', "SELECT setval('sharded_id.instagram_7', 1)"), '42501',
	'and cannot move the shard\'s sequence itself');
is(sqlstate($node, 'ext', 'app', 'SELECT sharded_id.raise_floor(7, 1)'), '42501', 'nor raise a floor');

# pg_dump and restore into a new database, then minting.
$node->safe_psql('postgres', 'CREATE DATABASE restored OWNER owner_ext');
my $dump = PostgreSQL::Test::Utils::tempdir() . '/ext.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-U', 'owner_ext', '-f', $dump, '-d', $node->connstr('ext') ],
	'pg_dump by the owner');
$node->command_ok([ 'pg_restore', '-U', 'owner_ext', '--exit-on-error', '-d', $node->connstr('restored'), $dump ],
	'pg_restore by the owner');
is(psql_as('restored', 'owner_ext', 'SELECT sharded_id.high_water(7) >= max(id) FROM ids'),
	't', "the dump carries the shard's sequence: its high-water mark is at least the newest id restored");
is( psql_as(
		'restored', 'owner_ext',
		"INSERT INTO ids (id) SELECT sharded_id.next_id(7) FROM generate_series(1, 500); "
		  . "INSERT INTO ids SELECT sharded_id.next_ids(7, 5000), true; "
		  . "SELECT count(*) - count(DISTINCT id) FROM ids"),
	'0', 'after pg_dump and restore, minting goes on with 0 repeats');

# The clock 5 s back, the server killed and restarted: minting goes on.
# The shard's newest id is at the clock first, so it is ahead after.
psql_as('ext', 'owner_ext',
	'INSERT INTO ids (id) SELECT sharded_id.next_id(7) FROM generate_series(1, 100); CREATE TABLE ids_after (id bigint)');
my $old_max = psql_as('ext', 'owner_ext', 'SELECT max(id) FROM ids');
$set_clock->('-5');
$node->stop('immediate');
$start_faked->();
my $t0 = Time::HiRes::time();
cmp_ok($t0 - $node->safe_psql('postgres', 'SELECT extract(epoch FROM clock_timestamp())'),
	'>=', 4, "the server's clock reads 5 s behind the real one");
my @after = map {
	start_psql('ext', 'owner_ext', 'INSERT INTO ids_after SELECT sharded_id.next_id(7) FROM generate_series(1, 1000)')
} 1 .. 3;
for my $w (@after)
{
	my ($rc, $err) = $w->();
	is($rc, 0, 'after the clock step and the crash, a session mints') or diag $err;
}
my $real = Time::HiRes::time();
is( psql_as(
		'ext', 'owner_ext',
		"SELECT count(*), min(id) > $old_max, max(id) <= sharded_id.max_id_at(clock_timestamp() + interval '1 s') FROM ids_after"),
	'3000|t|t',
	"after it, every id is above the shard's newest before and at most 1 s ahead of the stepped-back clock");
my ($dups, $newest) = split /\|/, psql_as('ext', 'owner_ext',
	"SELECT count(*) - count(DISTINCT id), extract(epoch FROM sharded_id.created_at(max(id))) "
	  . "FROM (SELECT id FROM ids UNION ALL SELECT id FROM ids_after) a");
is($dups, '0', 'no repeat against every id handed out before the step and the crash');
cmp_ok($newest, '<=', $real + 1, 'the newest id is at most 1 s ahead of the real clock');
note sprintf('minting 3 x 1000 ids after the restart took %.1f s', $real - $t0);
$set_clock->('+0');

$node->stop;
$cnode->stop;
done_testing();
