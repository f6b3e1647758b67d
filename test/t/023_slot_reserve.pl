# test/t/023_slot_reserve.pl
#
# A plain role (LOGIN, and USAGE on schema sharded_id, which PUBLIC has)
# with a temporary sequence cannot take the generator slots that the shard
# catalog and the superuser need.  With sharded_id.max_shards = 64, the
# slots that next_id makes for shards outside this database's catalog, for
# a caller that is not a superuser, are at most sharded_id.max_free_slots
# (by default half of max_shards).  After the plain role has made every
# slot it can, over every layout's shards:
#  - the superuser's create_shard makes new shards (5000 to 5021, which
#    the plain role's loop did not reach), and next_id mints for
#    them and for the catalog's other shards, the plain role's calls
#    included, with no id repeated;
#  - the superuser's next_id for a shard outside the catalog still works;
#  - the plain role gets 53400 for a new shard outside the catalog, and
#    never made more than its share;
#  - after a restart, and with max_free_slots = 0, the same holds.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $node = sharded_node('slots', conf => "sharded_id.max_shards = 64\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	SELECT sharded_id.create_shard(1);
	SELECT sharded_id.create_shard(2);
	CREATE TABLE ids (id bigint PRIMARY KEY, who text NOT NULL);
	CREATE ROLE mallory LOGIN;
	GRANT INSERT ON ids TO mallory;
	CREATE SEQUENCE su_seq;
});
# psql as the plain role: (exit code, stdout, stderr).
my $as_mallory = sub {
	return $node->psql('postgres', $_[0], extra_params => [ '-U', 'mallory' ]);
};

my $slots = sub {
	return $node->safe_psql('postgres', 'SELECT slots_used FROM sharded_id.generator_info');
};

# Every shard of every layout (up to shard 200 of each) through a temporary
# sequence; returns "made/refused", refusals being 53400 only.
my $exhaust = sub {
	my ($ret, $out, $err) = $as_mallory->(q{
		CREATE TEMP SEQUENCE s;
		DO $$
		DECLARE l record; made int := 0; refused int := 0;
		BEGIN
			FOR l IN SELECT name, max_shard FROM sharded_id.layouts() LOOP
				FOR k IN 0 .. least(l.max_shard, 200) LOOP
					BEGIN
						PERFORM sharded_id.next_id(k, 'pg_temp.s', l.name);
						made := made + 1;
					EXCEPTION WHEN configuration_limit_exceeded THEN
						refused := refused + 1;
					END;
				END LOOP;
			END LOOP;
			RAISE NOTICE 'result %/%', made, refused;
		END $$;});
	is($ret, 0, 'the plain role ran its loop') or diag($err);
	my ($r) = $err =~ /result (\d+\/\d+)/;
	return $r // '';
};

is($slots->(), 2, 'before: the slots of catalog shards 1 and 2');
my $layouts = $node->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.layouts()');
ok($layouts >= 2, "$layouts layouts to fill");
my ($made, $refused) = split m{/}, $exhaust->();
ok($refused > 0, "the plain role was refused slots ($made made, $refused refused)");
# Its calls for catalog shards 1 and 2 reuse their slots: 32 new ones at most.
is($slots->(), 2 + 32, 'the plain role made no more than max_free_slots (32 of 64) new slots');

# The superuser's create_shard and next_id, and the plain role's next_id
# for catalog shards, new ones included.
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT sharded_id.create_shard(5000)');
is($ret, 0, 'after the exhaustion, create_shard(5000) by the superuser succeeds') or diag($err);
($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM sharded_id.create_shards(5001, 5020)');
is($ret, 0, 'and create_shards(5001, 5020)') or diag($err);
my $mint_all = sub {
	my ($what) = @_;
	my ($r, $o, $e) = $node->psql('postgres', q{
		INSERT INTO ids SELECT shard_5000.next_id(), 'su' FROM generate_series(1, 3000);
		INSERT INTO ids SELECT shard_0001.next_id(), 'su' FROM generate_series(1, 3000);
		INSERT INTO ids SELECT sharded_id.next_id(5020, 'shard_5020.id_seq'), 'su' FROM generate_series(1, 3000);
		INSERT INTO ids SELECT sharded_id.next_id(7000, 'su_seq'), 'su' FROM generate_series(1, 3000);});
	is($r, 0, "$what: the superuser mints for catalog shards 1, 5000 and 5020, and for shard 7000 outside the catalog") or diag($e);
	($r, $o, $e) = $as_mallory->(q{
		CREATE TEMP SEQUENCE s;
		INSERT INTO ids SELECT sharded_id.next_id(5000, 'pg_temp.s'), 'mallory' FROM generate_series(1, 3000);
		INSERT INTO ids SELECT sharded_id.next_id(5010, 'pg_temp.s'), 'mallory' FROM generate_series(1, 3000);
		INSERT INTO ids SELECT sharded_id.next_id(2, 'pg_temp.s'), 'mallory' FROM generate_series(1, 3000);});
	is($r, 0, "$what: the plain role mints for catalog shards 2, 5000 and 5010, with no repeat of anyone's id") or diag($e);
	($r, $o, $e) = $as_mallory->(q{CREATE TEMP SEQUENCE s; SELECT sharded_id.next_id(7001, 'pg_temp.s')});
	like($e, qr/53400|too many shards outside/, "$what: a new shard outside the catalog is refused to the plain role");
	like($e, qr/sharded_id\.max_free_slots/, "$what: the error names sharded_id.max_free_slots");
};
$mint_all->('after the exhaustion');
is($node->safe_psql('postgres', 'SELECT count(*) || \'/\' || count(DISTINCT id) FROM ids'), '21000/21000',
	'21000 ids, none repeated');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'mallory'}), 'f', 'mallory is no superuser');

# A restart empties the slot table: the same, and the ids after it are new.
$node->restart;
($made, $refused) = split m{/}, $exhaust->();
ok($refused > 0, "after a restart the plain role is refused again ($made made, $refused refused)");
($ret, $out, $err) = $node->psql('postgres', 'SELECT sharded_id.create_shard(5021)');
is($ret, 0, 'after a restart and a second exhaustion, create_shard(5021) succeeds') or diag($err);
$mint_all->('after a restart');
is($node->safe_psql('postgres', 'SELECT count(*) || \'/\' || count(DISTINCT id) FROM ids'), '42000/42000',
	'42000 ids over the restart, none repeated');

# max_free_slots = 0 (a reload): no new slot outside the catalog for the
# plain role, the catalog's new shards still mint.
$node->append_conf('postgresql.conf', "sharded_id.max_free_slots = 0\n");
$node->restart;
($ret, $out, $err) = $as_mallory->(q{CREATE TEMP SEQUENCE s; SELECT sharded_id.next_id(100, 'pg_temp.s')});
like($err, qr/too many shards outside/, 'max_free_slots = 0: the plain role makes no slot outside the catalog');
($ret, $out, $err) = $as_mallory->(q{CREATE TEMP SEQUENCE s; SELECT sharded_id.next_id(5021, 'pg_temp.s') > 0});
is($out, 't', 'max_free_slots = 0: the plain role still mints for a catalog shard') or diag($err);
is($slots->(), 1, 'max_free_slots = 0: one slot in use, the catalog shard\'s');

done_testing();
