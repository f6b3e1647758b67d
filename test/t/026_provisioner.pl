# test/t/026_provisioner.pl
#
# The provisioning role against a superuser's retirement, across restarts.
# app_admin logs in with the one documented grant, membership in
# sharded_id_provisioner.  A superuser made shards 10, 11 and 12 (their
# schemas are the superuser's) and retired 10.  app_admin tries to take 10
# back (_own_shard, _catalog_own, create_shard in the old schema and in one
# of its own, catalog DML), to retire 11, and to raise 12's floor 23 h
# ahead: every attempt fails with 42501, in its own session and again in
# one session that retries after each failure.  After a restart and after
# a crash, shard 10 is still refused (SI001), 11 and 12 mint within a
# second of the clock, and floors() and the catalogs read as before.  Its
# own shard 20 it retires, takes back and drops, and its retirement of 20
# also holds across the restart.  A dump restored into a new database keeps
# who retired what, so app_admin cannot take shard 10 back there either;
# CREATE EXTENSION takes the existing role as it is, and refuses (42501,
# nothing installed) one that can log in or is a member of another role.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $node = sharded_node('provisioner');
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE ROLE app_admin LOGIN;
	GRANT sharded_id_provisioner TO app_admin;
	CREATE SCHEMA tpl;
	CREATE TABLE tpl.photos (id bigint PRIMARY KEY, caption text);
	ALTER SCHEMA tpl OWNER TO app_admin;
	ALTER TABLE tpl.photos OWNER TO app_admin;
	SELECT sharded_id.add_table('tpl.photos');
	SELECT count(sharded_id.create_shard(s)) FROM unnest('{10,11,12}'::int[]) s;
	SELECT sharded_id.retire_shard(10);
});

# The SQLSTATE of a statement run as app_admin, or as the superuser.
my $state = sub {
	my ($sql, $superuser) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ ($superuser ? () : ('-U', 'app_admin')), '-v', 'VERBOSITY=verbose' ]);
	my ($code) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return $ret == 0 ? 'ok' : ($code // "failed: $err");
};
# floors() and the catalogs, as text.
my $snapshot = sub {
	return $node->safe_psql('postgres', q{
		SELECT concat_ws(E'\n',
			(SELECT string_agg(concat_ws(' ', layout, shard_id, floor, retired), ',' ORDER BY layout, shard_id)
			 FROM sharded_id.floors()),
			(SELECT string_agg(concat_ws(' ', shard_id, schema_name, layout), ',' ORDER BY shard_id) FROM sharded_id.shards),
			(SELECT string_agg(concat_ws(' ', shard_id, layout, high_water, retired_by), ',' ORDER BY shard_id)
			 FROM sharded_id.retired_shards),
			(SELECT string_agg(table_name, ',') FROM sharded_id.shard_tables))});
};
my $mints = sub {
	my ($what) = @_;
	# Right after a restart ids may run up to a lease (a second) ahead of
	# the clock, until the clock passes the durable ceiling.
	ok($node->poll_query_until('postgres', 'SELECT clock_timestamp() > ceiling FROM sharded_id.generator_info'),
		"$what: the clock passes the durable ceiling");
	is($state->(q{SELECT sharded_id.next_id(10, 'shard_0010.id_seq')}, 1), 'SI001',
		"$what: shard 10 is still refused");
	for my $shard (11, 12)
	{
		my $seq = sprintf("shard_%04d.id_seq", $shard);
		is($node->safe_psql('postgres', qq{
			SELECT sharded_id.shard_id(id) = $shard
			       AND sharded_id.created_at(id) < clock_timestamp() + interval '1 s'
			FROM sharded_id.next_id($shard, '$seq') id}), 't',
			"$what: shard $shard mints near the clock");
	}
};

my $before = $snapshot->();
my $ahead = $node->safe_psql('postgres', q{SELECT sharded_id.encode(now() + interval '23 hours', 12, 0)});
my @attempts = (
	q{SELECT sharded_id._own_shard(10, 'instagram')},
	q{SELECT sharded_id._catalog_own(10, 'shard_0010', 'instagram', 'seed')},
	q{DELETE FROM sharded_id.retired_shards WHERE shard_id = 10},
	q{UPDATE sharded_id.retired_shards SET retired_by = 'app_admin'},
	q{INSERT INTO sharded_id.shards (shard_id, schema_name, layout) VALUES (10, 'mine', 'instagram')},
	q{SELECT sharded_id.create_shard(10)},
	q{SELECT sharded_id.create_shard(10, 'app_10')},
	q{SELECT sharded_id.retire_shard(11)},
	q{SELECT sharded_id._retire_shard(11, 'instagram')},
	q{SELECT sharded_id.drop_shard(11)},
	"SELECT sharded_id.raise_floor(12, $ahead)",
	q{SELECT sharded_id.raise_floors()},
);
for my $sql (@attempts)
{
	is($state->($sql), '42501', "app_admin refused: $sql");
}
# The same in one session, retrying after each failure.
my ($ret, $out, $err) = $node->psql('postgres',
	join('', map { "$_;\n" } @attempts, @attempts),
	on_error_stop => 0,
	extra_params => [ '-U', 'app_admin', '-v', 'VERBOSITY=verbose' ]);
my $refusals = () = $err =~ /ERROR:\s+42501:/g;
is($refusals, 2 * @attempts, 'one session: every attempt and every retry refused with 42501');
is($snapshot->(), $before, 'floors() and the catalogs are unchanged');
$mints->('after the attempts');

# Its own shard: retired by it, taken back, retired again and kept so.
is($state->(q{CREATE SCHEMA app_20; SELECT sharded_id.create_shard(20, 'app_20')}), 'ok', 'app_admin makes shard 20');
is($state->(q{SELECT sharded_id.retire_shard(20); SELECT sharded_id.create_shard(20, 'app_20')}), 'ok',
	'app_admin retires and takes back its shard 20');
is($state->(q{SELECT sharded_id.retire_shard(20)}), 'ok', 'app_admin retires its shard 20 again');
$before = $snapshot->();

for my $mode ('fast', 'immediate')
{
	restart_node($node, $mode);
	$mints->("after a $mode restart");
	is($state->(q{SELECT sharded_id.next_id(20, 'app_20.id_seq')}, 1), 'SI001',
		"after a $mode restart: shard 20 is refused");
	is($state->(q{SELECT sharded_id._own_shard(10, 'instagram')}), '42501',
		"after a $mode restart: app_admin's _own_shard(10) is refused");
	is($snapshot->(), $before, "after a $mode restart: floors() and the catalogs are unchanged");
}
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'app_admin'}), 'f',
	'app_admin is no superuser');

# It takes back and drops its own shard; a superuser takes back shard 10.
is($state->(q{SELECT sharded_id.create_shard(20, 'app_20'); SELECT sharded_id.drop_shard(20)}), 'ok',
	'app_admin takes back and drops its shard 20');
is($state->(q{SELECT sharded_id.create_shard(10)}, 1), 'ok', 'a superuser takes shard 10 back');
is($node->safe_psql('postgres', q{SELECT sharded_id.shard_id(sharded_id.next_id(10, 'shard_0010.id_seq'))}), '10',
	'shard 10 mints again');

# A dump carries who retired what: restored into a new database (with
# pg_restore --exit-on-error, the role already there), shard 10 is still
# the superuser's retirement, and app_admin cannot take it back there.
$node->safe_psql('postgres', 'SELECT sharded_id.retire_shard(10)');
my $dump = $node->basedir . '/provisioner.dump';
$node->command_ok(['pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('postgres')], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(['pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), $dump],
	'pg_restore into a new database, the role existing');
is($node->safe_psql('restored', q{
	SELECT string_agg(concat_ws(' ', shard_id, retired_by = current_user), ',' ORDER BY shard_id)
	FROM sharded_id.retired_shards}), '10 t,20 f', 'the restored catalog says who retired each shard');
my ($r_ret, $r_out, $r_err) = $node->psql('restored', q{SELECT sharded_id.create_shard(10)},
	extra_params => [ '-U', 'app_admin', '-v', 'VERBOSITY=verbose' ]);
like($r_err, qr/ERROR:\s+42501:/, 'restored: app_admin cannot take back the superuser\'s retirement');
is($node->safe_psql('restored', q{
	SELECT has_database_privilege('sharded_id_provisioner', 'restored', 'CREATE')}), 't',
	'restored: the role creates schemas there');

# A role of that name with more rights than provisioning needs is refused,
# and nothing is installed.
$node->safe_psql('postgres', 'CREATE DATABASE third');
for my $change ('ALTER ROLE sharded_id_provisioner LOGIN', 'GRANT pg_read_all_data TO sharded_id_provisioner')
{
	$node->safe_psql('postgres', $change);
	my ($ret, $out, $err) = $node->psql('third', 'CREATE EXTENSION sharded_id',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:\s+42501:.*has more rights than provisioning needs/, "after $change: CREATE EXTENSION refused");
	is($node->safe_psql('third', q{SELECT count(*) FROM pg_extension WHERE extname = 'sharded_id'}), '0',
		"after $change: nothing installed");
}
$node->safe_psql('postgres', 'ALTER ROLE sharded_id_provisioner NOLOGIN; REVOKE pg_read_all_data FROM sharded_id_provisioner');
$node->safe_psql('third', 'CREATE EXTENSION sharded_id');
is($node->safe_psql('third', q{SELECT has_database_privilege('sharded_id_provisioner', 'third', 'CREATE')}), 't',
	'the role taken as it is in a third database');

$node->stop;
done_testing();
