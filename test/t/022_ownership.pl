# test/t/022_ownership.pl
#
# Ownership follows its transaction, and the server's state of a shard is
# the authority, whatever any database's catalog says.  On one server with
# databases a, b and c:
#
# 1. Rolled back, a retirement and a take-back in one transaction, or in a
#    savepoint, leave the shard minting; a take-back alone rolled back
#    leaves it retired.  So after a restart and after a crash.  A
#    transaction whose retirement rolled back to a savepoint can be
#    prepared, and committed after a restart; one that retires cannot.
# 2. Database a plants shard 15 and 16 in its sharded_id.retired_shards.
#    Database b owns shard 15, retires it and takes it back; b owns 16 and
#    never gave it away.  Whichever database mints first, before and after
#    a restart, b's inserts into both shards succeed, with no repeated id.
# 3. Catalog DML cannot un-retire: b retires shard 17 and deletes its row
#    of retired_shards, and a deletes nothing; both refuse 17 with SI001,
#    also after a restart and a crash.
# 4. A database restored on this server (c) whose catalog retired shards 18
#    and 19, which this server never created, retired nor took back: c
#    refuses 18, and so does the server from then on, even once c's row is
#    deleted and the server restarted; a take-back of 19 rolled back keeps
#    it refused, also after a crash.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $node = sharded_node('ownership', conf => "max_prepared_transactions = 5\n");
$node->start;
for my $db ('a', 'b', 'c')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION sharded_id');
}
$node->safe_psql('b', q{
	CREATE SCHEMA tpl;
	CREATE TABLE tpl.t (id bigint PRIMARY KEY, v text);
	SELECT sharded_id.add_table('tpl.t');
	SELECT count(sharded_id.create_shard(s)) FROM unnest('{11,12,13,14,15,16,17}'::int[]) s;
});

# The SQLSTATE of a statement, 'ok' if it succeeds.
my $sqlstate = sub {
	my ($db, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return 'ok' if $ret == 0;
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return $state // "failed: $err";
};
my $retired_in_floors = sub {
	my ($shard) = @_;
	return $node->safe_psql('b', "SELECT count(*) FROM sharded_id.floors() WHERE shard_id = $shard AND retired");
};
my $restart_both = sub {
	my ($check) = @_;
	$node->restart;
	$check->('after a restart');
	$node->stop('immediate');
	$node->start;
	$check->('after a crash');
};

# 1. Rollbacks.
$node->safe_psql('b', q{
	BEGIN;
	SELECT sharded_id.retire_shard(11);
	SELECT sharded_id.create_shard(11);
	ROLLBACK;
	BEGIN;
	SAVEPOINT s;
	SELECT sharded_id.retire_shard(12);
	SELECT sharded_id.create_shard(12);
	ROLLBACK TO SAVEPOINT s;
	COMMIT;
	SELECT sharded_id.retire_shard(13);
	BEGIN;
	SELECT sharded_id.create_shard(13);
	ROLLBACK;
});
my $check_rollbacks = sub {
	my ($what) = @_;
	is($sqlstate->('b', 'INSERT INTO shard_0011.t (v) VALUES (1)') . '/' . $retired_in_floors->(11), 'ok/0',
		"$what: retire and take-back rolled back, shard 11 mints and is not retired");
	is($sqlstate->('b', 'INSERT INTO shard_0012.t (v) VALUES (1)') . '/' . $retired_in_floors->(12), 'ok/0',
		"$what: retire and take-back rolled back to a savepoint, shard 12 mints");
	is($sqlstate->('b', 'INSERT INTO shard_0013.t (v) VALUES (1)') . '/' . $retired_in_floors->(13), 'SI001/1',
		"$what: a take-back alone rolled back leaves shard 13 retired");
};
$check_rollbacks->('at once');
$restart_both->($check_rollbacks);

# A transaction whose retirement rolled back to a savepoint can be
# prepared; one that retires cannot.
$node->safe_psql('b', q{
	BEGIN;
	SAVEPOINT s;
	SELECT sharded_id.retire_shard(14);
	ROLLBACK TO SAVEPOINT s;
	PREPARE TRANSACTION 'kept';
});
$node->restart;
$node->safe_psql('b', q{COMMIT PREPARED 'kept'});
is($sqlstate->('b', 'BEGIN; SELECT sharded_id.retire_shard(14); PREPARE TRANSACTION $$retires$$'), '0A000',
	'a transaction that retires a shard cannot be prepared');
$node->stop('immediate');
$node->start;
is($sqlstate->('b', 'INSERT INTO shard_0014.t (v) VALUES (1)') . '/' . $retired_in_floors->(14)
	. '/' . $node->safe_psql('b', 'SELECT count(*) FROM pg_prepared_xacts'), 'ok/0/0',
	'after a prepared transaction with a retirement rolled back to a savepoint, a refused prepare and a crash, shard 14 mints');

# 2. Database a's catalog does not decide for b.
$node->safe_psql('a', q{INSERT INTO sharded_id.retired_shards VALUES (15, 'instagram', 0, now()), (16, 'instagram', 0, now())});
$node->safe_psql('b', 'SELECT sharded_id.retire_shard(15)');
$node->safe_psql('b', 'SELECT sharded_id.create_shard(15)');
my $check_b_mints = sub {
	my ($what, $first) = @_;
	if ($first eq 'a')
	{
		# a mints first, learning the shards' owner state for the server.
		$sqlstate->('a', "SELECT sharded_id.next_id($_)") for 15, 16;
	}
	is($sqlstate->('b', 'INSERT INTO shard_0015.t (v) SELECT g FROM generate_series(1, 100) g')
		. '/' . $sqlstate->('b', 'INSERT INTO shard_0016.t (v) SELECT g FROM generate_series(1, 100) g')
		. '/' . $retired_in_floors->(15) . '/' . $retired_in_floors->(16), 'ok/ok/0/0',
		"$what, $first minting first: b's shards 15 and 16 take inserts, the server retired neither");
	is($sqlstate->('a', 'SELECT sharded_id.next_id(15)') . '/' . $sqlstate->('a', 'SELECT sharded_id.next_id(16)'),
		'ok/ok', "$what: a mints them too: the server owns them, whatever a's catalog says");
};
$check_b_mints->('after the take-back', 'a');
$node->restart;
$check_b_mints->('after a restart', 'a');
$node->restart;
$check_b_mints->('after another restart', 'b');
is($node->safe_psql('b', q{SELECT count(*) || '/' || count(DISTINCT id) FROM (SELECT id FROM shard_0015.t UNION ALL SELECT id FROM shard_0016.t) t}),
	'600/600', 'no id of shards 15 and 16 repeats');

# 3. Catalog DML does not un-retire.
$node->safe_psql('b', 'SELECT sharded_id.retire_shard(17)');
$node->safe_psql('b', 'DELETE FROM sharded_id.retired_shards WHERE shard_id = 17');
my $check_17 = sub {
	my ($what) = @_;
	is($sqlstate->('a', 'SELECT sharded_id.next_id(17)') . '/' . $sqlstate->('b', 'INSERT INTO shard_0017.t (v) VALUES (1)')
		. '/' . $retired_in_floors->(17), 'SI001/SI001/1',
		"$what: shard 17, retired and deleted from b's retired_shards, is refused in a and b");
};
$check_17->('at once');
$restart_both->($check_17);

# 4. A restored catalog's retirement of a shard the server knows nothing of.
$node->safe_psql('c', q{INSERT INTO sharded_id.retired_shards VALUES (18, 'instagram', 0, now())});
is($sqlstate->('c', 'SELECT sharded_id.next_id(18)'), 'SI001', "c's catalog retired shard 18: c refuses it");
is($retired_in_floors->(18), 1, 'the server retired shard 18 from then on');
$node->safe_psql('c', q{INSERT INTO sharded_id.retired_shards VALUES (19, 'instagram', 0, now());
	BEGIN; SELECT sharded_id.create_shard(19); ROLLBACK;});
is($sqlstate->('c', 'SELECT sharded_id.next_id(19)') . '/' . $retired_in_floors->(19), 'SI001/1',
	"c's catalog retired shard 19, and its take-back rolled back: refused, and retired by the server");
$node->safe_psql('c', 'DELETE FROM sharded_id.retired_shards WHERE shard_id IN (18, 19)');
$node->stop('immediate');
$node->start;
is($sqlstate->('c', 'SELECT sharded_id.next_id(19)') . '/' . $sqlstate->('b', 'SELECT sharded_id.next_id(19)'),
	'SI001/SI001', 'after the rows were deleted and a crash, every database refuses shard 19');
$node->restart;
is($sqlstate->('c', 'SELECT sharded_id.next_id(18)') . '/' . $sqlstate->('b', 'SELECT sharded_id.next_id(18)'),
	'SI001/SI001', 'after the row was deleted and a restart, every database refuses shard 18');
is($sqlstate->('c', 'SELECT sharded_id.create_shard(18)') . '/' . $sqlstate->('c', 'SELECT sharded_id.next_id(18)'),
	'ok/ok', 'create_shard takes shard 18 back');

$node->stop;
done_testing();
