# test/t/004_dump_restore.pl
#
# Shards survive pg_dump: a whole database restored with pg_restore, and a
# single shard schema copied with pg_dump -n into another database, keep
# minting ids.  Sequences continue, nothing is restarted, nothing repeats;
# the catalog, settings and templates come back with a full dump.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);

my $example = dirname(__FILE__) . '/../example';
my $node = PostgreSQL::Test::Cluster->new('dump');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'sharded_id'");
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', 'CREATE EXTENSION sharded_id; ' . slurp_file("$example/templates.sql") . q{
	SELECT sharded_id.add_table('app.users');
	SELECT sharded_id.add_table('app.photos');
	SELECT sharded_id.configure(schema_prefix => 'insta', pad_width => 0);
	SELECT count(*) FROM sharded_id.create_shards(0, 3);
});

# Insert n users, each with a photo, into every shard of database db.
sub insert_rows
{
	my ($db, $n) = @_;
	$node->safe_psql($db, qq{
		DO \$\$
		DECLARE s record;
		BEGIN
			FOR s IN SELECT schema_name FROM sharded_id.shards LOOP
				EXECUTE format('INSERT INTO %1\$I.users (name) SELECT ''u'' || g FROM generate_series(1, $n) g', s.schema_name);
				EXECUTE format('INSERT INTO %1\$I.photos (user_id, caption) SELECT id, name FROM %1\$I.users
				                WHERE NOT EXISTS (SELECT 1 FROM %1\$I.photos p WHERE p.user_id = users.id)', s.schema_name);
			END LOOP;
		END \$\$});
}

# All ids of a database, as "shard:id" lines, and the per-shard sequence positions.
sub ids_of
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
		SELECT string_agg(x, E'\n' ORDER BY x) FROM (
			SELECT 'insta' || sharded_id.shard_id(id) || ':' || id AS x FROM insta0.users
			UNION ALL SELECT 'insta' || sharded_id.shard_id(id) || ':' || id FROM insta1.photos
			UNION ALL SELECT 'insta' || sharded_id.shard_id(id) || ':' || id FROM insta2.users
			UNION ALL SELECT 'insta' || sharded_id.shard_id(id) || ':' || id FROM insta2.photos) t});
}

insert_rows('src', 500);
my $src_seq2 = $node->safe_psql('src', 'SELECT last_value FROM insta2.id_seq');

# Whole database: pg_dump -Fc, pg_restore into a new database.
my $dump = $node->basedir . '/src.dump';
$node->command_ok(['pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src')],
	'pg_dump of the whole database');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok(['pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump],
	'pg_restore into a new database');

is($node->safe_psql('dst', q{SELECT string_agg(shard_id || '=' || schema_name, ',' ORDER BY shard_id) FROM sharded_id.shards}),
	'0=insta0,1=insta1,2=insta2,3=insta3', 'the shard catalog is restored');
is($node->safe_psql('dst', q{SELECT schema_prefix || '/' || pad_width FROM sharded_id.current_settings()}),
	'insta/0', 'the settings are restored');
is($node->safe_psql('dst', q{SELECT string_agg(table_name, ',' ORDER BY position) FROM sharded_id.shard_tables}),
	'users,photos', 'the templates are restored');
is($node->safe_psql('dst', 'SELECT last_value FROM insta2.id_seq'), $src_seq2,
	'sequence positions are restored, not restarted');
is(ids_of('dst'), ids_of('src'), 'every row and id is restored');

insert_rows('dst', 500);
is($node->safe_psql('dst', 'SELECT count(*) FROM insta2.users'), '1000',
	'the restored database keeps inserting, under its primary keys');
cmp_ok($node->safe_psql('dst', 'SELECT min(last_value) FROM (SELECT last_value FROM insta2.id_seq) s'),
	'>', $src_seq2, 'and its sequences continue where they were');
is($node->safe_psql('dst', q{
	SELECT count(*) - count(DISTINCT id) FROM (
		SELECT id FROM insta0.users UNION ALL SELECT id FROM insta1.users
		UNION ALL SELECT id FROM insta2.users UNION ALL SELECT id FROM insta3.users
		UNION ALL SELECT id FROM insta0.photos UNION ALL SELECT id FROM insta1.photos
		UNION ALL SELECT id FROM insta2.photos UNION ALL SELECT id FROM insta3.photos) t}),
	'0', 'no id repeats across old and new rows');
is($node->safe_psql('dst', 'SELECT sharded_id.create_shard(4)'), 'insta4',
	'a new shard in the restored database gets the restored naming');
is($node->safe_psql('dst', q{SELECT count(*) FROM pg_tables WHERE schemaname = 'insta4'}), '2',
	'and both template tables');

# A single shard: pg_dump -n into a database that has the extension but
# names its shards differently; create_shard adopts the schema.
my $one = $node->basedir . '/insta2.sql';
$node->command_ok(['pg_dump', '-n', 'insta2', '-f', $one, '-d', $node->connstr('src')],
	'pg_dump -n of one shard schema');
$node->safe_psql('postgres', 'CREATE DATABASE single');
$node->safe_psql('single', 'CREATE EXTENSION sharded_id');
$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $one, '-d', $node->connstr('single')],
	'the shard schema restores into the other database');
is($node->safe_psql('single', q{SELECT sharded_id.create_shard(2, 'insta2')}), 'insta2',
	'create_shard adopts the restored schema under its own name');
is($node->safe_psql('single', 'SELECT last_value FROM insta2.id_seq'), $src_seq2,
	'the copied shard keeps its sequence position');
$node->safe_psql('single', q{INSERT INTO insta2.users (name) SELECT 'copy' || g FROM generate_series(1, 500) g});
is($node->safe_psql('single', q{SELECT count(*) || ':' || count(DISTINCT id) || ':' || bool_and(sharded_id.shard_id(id) = 2) FROM insta2.users}),
	'1000:1000:true', 'the copied shard keeps inserting ids of shard 2 with no repeat');

$node->stop;
done_testing();
