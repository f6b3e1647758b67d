# test/t/025_cross_database.pl
#
# No database's provisioner changes a shard that another database of the
# server decided.  One server, databases a and b; prov logs in with the one
# documented grant, membership in sharded_id_provisioner, and owns schemas
# in b only.  A superuser made shards 5, 6 and 9 in a and retired 7 there.
#
# From b, prov tries: create_shard(9) (a's minting shard), _catalog_own(5)
# in a schema of its own;
# retire_shard, raise_floor 23 h ahead and drop_shard of 5 where b's catalog
# lists 5 in a schema of prov's (planted by a superuser's catalog DML); and
# the take-back create_shard(7) of a's retirement, where b's catalog says
# prov retired 7.  Each gets 42501 naming database a, in its own session
# and again in one session that retries after each failure, also after a
# restart and a crash.  So does create_shard(50), which b's catalog would
# let prov retire next: a mints for shard 50 with a bare next_id(50) and no
# shard catalog entry, and its first mint claimed the shard for a.  Throughout, a mints for 5
# with no repeated id, and for 50, and
# floors() and a's catalogs read as before.  A shard created in a database
# that was then dropped is refused to prov as well.  A promoted standby
# keeps each state's database.  A file of states of version 1 (no
# databases) is read as states of no known database, which prov cannot
# change until a superuser claims them.  prov's own shard 40 in
# b works end to end (create, mint, raise the floor, retire, take back,
# drop).  A superuser still moves shard 6 from a to b: retire in a, take
# back in b; b then mints for 6, also after a restart.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $node = sharded_node('cross_database', init => { allows_streaming => 1 });
$node->start;
$node->safe_psql('postgres', 'CREATE ROLE prov LOGIN');
for my $db ('a', 'b')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION sharded_id');
}
$node->safe_psql('postgres', 'GRANT sharded_id_provisioner TO prov');
$node->safe_psql('a', q{
	CREATE SCHEMA tpl;
	CREATE TABLE tpl.t (id bigint PRIMARY KEY, v text);
	SELECT sharded_id.add_table('tpl.t');
	SELECT count(sharded_id.create_shard(s)) FROM unnest('{5,6,7,9}'::int[]) s;
	SELECT sharded_id.retire_shard(7);
	-- Shard 50: a bare next_id, with no shard catalog entry.
	CREATE TABLE bare (id bigint PRIMARY KEY DEFAULT sharded_id.next_id(50), v text);
	INSERT INTO bare (v) VALUES ('first');
});
# b: the template and two schemas belong to prov; b's catalog lists shard 5
# in one of them and says that prov retired shard 7, as a superuser's
# catalog DML or an old restore could leave it.
$node->safe_psql('b', q{
	CREATE SCHEMA tpl AUTHORIZATION prov;
	CREATE TABLE tpl.t (id bigint PRIMARY KEY, v text);
	ALTER TABLE tpl.t OWNER TO prov;
	SELECT sharded_id.add_table('tpl.t');
	CREATE SCHEMA prov_5 AUTHORIZATION prov;
	CREATE SCHEMA shard_0007 AUTHORIZATION prov;
	INSERT INTO sharded_id.shards (shard_id, schema_name, layout) VALUES (5, 'prov_5', 'instagram');
	INSERT INTO sharded_id.retired_shards (shard_id, layout, high_water, retired_by)
	VALUES (7, 'instagram', 0, 'prov');
});

# The SQLSTATE of a statement and its error, 'ok' if it succeeds.
my $run = sub {
	my ($db, $sql, $user) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql,
		extra_params => [ ($user ? ('-U', $user) : ()), '-v', 'VERBOSITY=verbose' ]);
	return ('ok', '') if $ret == 0;
	my ($code) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($code // 'failed', $err);
};
# floors() and a's catalogs, as text.
my $snapshot = sub {
	return $node->safe_psql('a', q{
		SELECT concat_ws(E'\n',
			(SELECT string_agg(concat_ws(' ', layout, shard_id, floor, retired), ',' ORDER BY layout, shard_id)
			 FROM sharded_id.floors()),
			(SELECT string_agg(concat_ws(' ', shard_id, schema_name, layout), ',' ORDER BY shard_id) FROM sharded_id.shards),
			(SELECT string_agg(concat_ws(' ', shard_id, layout, high_water, retired_by), ',' ORDER BY shard_id)
			 FROM sharded_id.retired_shards))});
};
# b's catalog and schemas, as text: prov's refused calls leave them so.
my $b_snapshot = sub {
	return $node->safe_psql('b', q{
		SELECT concat_ws(E'\n',
			(SELECT string_agg(concat_ws(' ', shard_id, schema_name), ',' ORDER BY shard_id) FROM sharded_id.shards),
			(SELECT string_agg(concat_ws(' ', shard_id, retired_by), ',' ORDER BY shard_id) FROM sharded_id.retired_shards),
			(SELECT string_agg(nspname, ',' ORDER BY nspname) FROM pg_namespace WHERE nspname LIKE 'shard\_%'))});
};

my $ahead = $node->safe_psql('a', q{SELECT sharded_id.encode(now() + interval '23 hours', 5, 0)});
my @attacks = (
	[ 'create_shard(9), a\'s minting shard', 'SELECT sharded_id.create_shard(9)' ],
	[ '_catalog_own(5)', q{SELECT sharded_id._catalog_own(5, 'prov_5', 'instagram', 'seed')} ],
	[ 'retire_shard(5)', 'SELECT sharded_id.retire_shard(5)' ],
	[ '_retire_shard(5)', q{SELECT sharded_id._retire_shard(5, 'instagram')} ],
	[ 'raise_floor(5) 23 h ahead', "SELECT sharded_id.raise_floor(5, $ahead)" ],
	[ 'drop_shard(5)', 'SELECT sharded_id.drop_shard(5)' ],
	[ 'take-back create_shard(7) of a\'s retirement', 'SELECT sharded_id.create_shard(7)' ],
	[ 'create_shard(50), a\'s bare next_id', 'SELECT sharded_id.create_shard(50)' ],
);

my $minted = 0;
my $mint_a = sub {
	my ($what) = @_;
	my ($code, $err) = $run->('a', q{INSERT INTO shard_0005.t (v) SELECT 'x' FROM generate_series(1, 200)});
	is($code, 'ok', "$what: a mints for shard 5") or diag($err);
	$minted += 200 if $code eq 'ok';
	is($node->safe_psql('a', q{
		SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || count(*) FILTER (WHERE sharded_id.shard_id(id) = 5)
		FROM shard_0005.t}), "$minted $minted $minted", "$what: a's ids of shard 5 carry shard 5, none repeated");
	($code, $err) = $run->('a', q{INSERT INTO bare (v) VALUES ('x')});
	is($code, 'ok', "$what: a's bare next_id(50) mints") or diag($err);
};

# No claim by a role that an administrator did not let mint: mallory, a
# plain role, mints for shard 60 in a with a temporary sequence of its own
# (seed mode); prov may still make shard 60 in b, and drops it again.
$node->safe_psql('postgres', 'CREATE ROLE mallory LOGIN');
$node->safe_psql('a', q{CREATE TEMP SEQUENCE s; SELECT sharded_id.next_id(60, 's') > 0;}, extra_params => [ '-U', 'mallory' ]);
{
	my ($code, $err) = $run->('b', 'SELECT sharded_id.create_shard(60) IS NOT NULL', 'prov');
	is($code, 'ok', 'a plain role\'s mints with a temporary sequence claim nothing: prov makes shard 60 in b') or diag($err);
	($code, $err) = $run->('b', 'SELECT sharded_id.drop_shard(60)', 'prov');
	is($code, 'ok', 'and drops it') or diag($err);
}
# A slot that an administrative call made first (prov's high_water(61) in
# b) still claims shard 61 for a at a's first mint.
$node->safe_psql('b', 'SELECT sharded_id.high_water(61)', extra_params => [ '-U', 'prov' ]);
$node->safe_psql('a', 'SELECT sharded_id.next_id(61) > 0');
{
	my ($code, $err) = $run->('b', 'SELECT sharded_id.create_shard(61)', 'prov');
	is($code, '42501', 'a slot made by high_water first: a\'s first mint claims shard 61, prov\'s create_shard(61) in b is refused');
	like($err, qr/belongs to database "a", which mints the shard's ids with no shard catalog entry/, 'the error says why');
}

my $floors = $snapshot->();
my $b_catalog = $b_snapshot->();
my $check = sub {
	my ($what) = @_;
	my $one_session = '';
	for my $attack (@attacks)
	{
		my ($code, $err) = $run->('b', $attack->[1], 'prov');
		is($code, '42501', "$what: prov in b, $attack->[0], refused");
		like($err, qr/database "a"/, "$what: prov in b, $attack->[0], the error names database a");
		$one_session .= "$attack->[1];\n";
	}
	# One session that retries after each failure.
	my ($ret, $out, $err) = $node->psql('b', $one_session, on_error_stop => 0,
		extra_params => [ '-U', 'prov' ]);
	my @errors = $err =~ /ERROR:/g;
	is(scalar(@errors), scalar(@attacks), "$what: one session, every attempt refused in turn");
	$mint_a->($what);
	is($snapshot->(), $floors, "$what: floors() and a's catalogs unchanged");
	is($b_snapshot->(), $b_catalog, "$what: b's catalog and schemas unchanged");
	is($node->safe_psql('a', q{SELECT count(*) FROM sharded_id.floors() WHERE shard_id IN (5, 6, 9) AND (retired OR floor IS NOT NULL)}),
		'0', "$what: shards 5, 6 and 9 neither retired nor floored");
	my ($c7) = $run->('a', q{INSERT INTO shard_0007.t (v) VALUES ('x')});
	is($c7, 'SI001', "$what: a's retirement of shard 7 holds");
};

$mint_a->('before');
$floors = $snapshot->();
$check->('at once');
$node->restart;
$check->('after a restart');
$node->stop('immediate');
$node->start;
$check->('after a crash');

# A shard made in a database since dropped (and still minting there when
# it went) belongs to no database prov is in.
$node->safe_psql('postgres', 'CREATE DATABASE c');
$node->safe_psql('c', q{
	CREATE EXTENSION sharded_id;
	CREATE SCHEMA tpl;
	CREATE TABLE tpl.t (id bigint PRIMARY KEY);
	SELECT sharded_id.add_table('tpl.t');
	SELECT sharded_id.create_shard(8);
});
$node->safe_psql('postgres', 'DROP DATABASE c');
my ($c8, $e8) = $run->('b', 'SELECT sharded_id.create_shard(8)', 'prov');
is($c8, '42501', 'shard 8 of a dropped database: prov cannot take it in b');
like($e8, qr/no longer exists/, 'shard 8: the error says its database is gone');

# prov's own shard 40 in b, end to end.
my $ahead40 = $node->safe_psql('b', q{SELECT sharded_id.encode(now() + interval '2 seconds', 40, 0)});
for my $step (
	[ 'create_shard(40)', 'SELECT sharded_id.create_shard(40)' ],
	[ 'mint', q{INSERT INTO shard_0040.t (v) SELECT 'x' FROM generate_series(1, 100)} ],
	[ 'raise_floor(40)', "SELECT sharded_id.raise_floor(40, $ahead40)" ],
	[ 'mint above the floor', qq{INSERT INTO shard_0040.t (v) VALUES ('y'); SELECT 1/(min(id) > $ahead40)::int FROM shard_0040.t WHERE v = 'y'} ],
	[ 'retire_shard(40)', 'SELECT sharded_id.retire_shard(40)' ],
	[ 'create_shard(40) takes it back', 'SELECT sharded_id.create_shard(40)' ],
	[ 'mint again', q{INSERT INTO shard_0040.t (v) SELECT 'z' FROM generate_series(1, 100)} ],
	[ 'drop_shard(40)', 'SELECT sharded_id.drop_shard(40)' ])
{
	my ($code, $err) = $run->('b', $step->[1], 'prov');
	is($code, 'ok', "prov's shard 40 in b: $step->[0]") or diag($err);
}
is($node->safe_psql('b', q{SELECT count(*) FROM sharded_id.floors() WHERE shard_id = 40 AND retired}), '1',
	'shard 40 dropped: the server gave it away');

# A standby replays each state with its database: promoted, it refuses prov
# in b a's shard 5, naming a, and lets prov's own shard 40 be taken back.
$node->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('cross_database_standby');
$standby->init_from_backup($node, 'base', has_streaming => 1);
$standby->start;
$node->safe_psql('a', 'SELECT sharded_id.retire_shard(9)');
$node->wait_for_catchup($standby);
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'the standby was not promoted';
{
	my ($ret, $out, $err) = $standby->psql('b', 'SELECT sharded_id.retire_shard(5)',
		extra_params => [ '-U', 'prov', '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:\s+42501:.*\n.*database "a"/, 'promoted standby: prov in b cannot retire a\'s shard 5');
	($ret, $out, $err) = $standby->psql('b', 'SELECT sharded_id.create_shard(9)',
		extra_params => [ '-U', 'prov', '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:\s+42501:.*\n.*database "a"/, 'promoted standby: nor take back a\'s retirement of 9');
	($ret, $out, $err) = $standby->psql('b', 'SELECT sharded_id.create_shard(40)',
		extra_params => [ '-U', 'prov' ]);
	is($ret, 0, 'promoted standby: prov takes back its own shard 40 in b') or diag($err);
	is($standby->safe_psql('a', q{INSERT INTO shard_0005.t (v) VALUES ('s') RETURNING sharded_id.shard_id(id)}), '5',
		'promoted standby: a mints for shard 5');
	$standby->stop;
}

# A superuser moves shard 6 from a to b.
my ($s1, $e1) = $run->('a', 'SELECT sharded_id.retire_shard(6)');
is($s1, 'ok', 'superuser retires shard 6 in a') or diag($e1);
my ($s2, $e2) = $run->('b', 'SELECT sharded_id.create_shard(6)');
is($s2, 'ok', 'superuser takes shard 6 back in b') or diag($e2);
my ($s3, $e3) = $run->('b', q{INSERT INTO shard_0006.t (v) VALUES ('b')});
is($s3, 'ok', 'b mints for shard 6') or diag($e3);
$node->restart;
my ($s5, $e5) = $run->('b', q{INSERT INTO shard_0006.t (v) VALUES ('b')});
is($s5, 'ok', 'after a restart: b mints for shard 6') or diag($e5);
# a's provisioner-free shard 5 still works, and prov still cannot touch it.
$mint_a->('at the end');
my ($s6) = $run->('b', 'SELECT sharded_id.retire_shard(5)', 'prov');
is($s6, '42501', 'at the end: prov still cannot retire shard 5');

# A file of states written before they named their database (version 1)
# reads as states of no known database: prov can change none of them, a
# superuser's change claims one for its database, and the file is written
# again as version 3, with the LSN it reflects.
sub crc32c
{
	my $crc = 0xFFFFFFFF;
	for my $byte (unpack 'C*', shift)
	{
		$crc ^= $byte;
		$crc = ($crc >> 1) ^ (($crc & 1) ? 0x82F63B78 : 0) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}
my $floors_v2 = $snapshot->();
$node->stop;
my $file = $node->data_dir . '/sharded_id.shards';
my $text = slurp_file($file);
like($text, qr/^sharded_id shards 3\nlsn [0-9A-F]+\/[0-9A-F]{8}\n(\d+ \d+ -?\d+ [01] [01] \d+ \d+\n)+crc32c [0-9a-f]{8}\n\z/,
	'the file of states is version 3, with its LSN and a database on each line');
my ($body) = $text =~ /^sharded_id shards 3\nlsn \S+\n(.*)crc32c/s;
$body =~ s/ \d+\n/\n/g;
my $v1 = "sharded_id shards 1\n$body";
open(my $fh, '>', $file) or die $!;
print $fh $v1 . sprintf("crc32c %08x\n", crc32c($v1));
close($fh);
$node->start;
is($snapshot->(), $floors_v2, 'version 1 file: floors() reads as before');
$mint_a->('version 1 file');
{
	my ($code, $err) = $run->('b', 'SELECT sharded_id.retire_shard(5)', 'prov');
	is($code, '42501', 'version 1 file: prov cannot retire shard 5 of no known database');
	like($err, qr/earlier version/, 'version 1 file: the error says the state names no database');
	($code, $err) = $run->('b', 'SELECT sharded_id.create_shard(40)', 'prov');
	is($code, '42501', 'version 1 file: nor take back its own shard 40, until a superuser claims it');
	like($err, qr/earlier version/, 'version 1 file: shard 40 names no database');
	($code, $err) = $run->('b', 'SELECT sharded_id.create_shard(40); ALTER SCHEMA shard_0040 OWNER TO prov');
	is($code, 'ok', 'version 1 file: a superuser takes shard 40 back in b, for prov') or diag($err);
	($code, $err) = $run->('b', 'SELECT sharded_id.drop_shard(40)', 'prov');
	is($code, 'ok', 'version 1 file: then prov drops its shard 40') or diag($err);
}
like(slurp_file($file), qr/^sharded_id shards 3\nlsn /, 'the file is written again as version 3');

$node->stop;
done_testing();
