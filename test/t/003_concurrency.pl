# test/t/003_concurrency.pl
#
# Concurrent sessions on one shard, through pgbench: plain, cached and
# strided sequences, then many shards at once.  Zero repeats.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('concurrency');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'sharded_id'");
$node->start;

$node->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE plain_seq;
	CREATE SEQUENCE cached_seq CACHE 1024;
	CREATE SEQUENCE strided_seq INCREMENT BY 7 CACHE 50;
	CREATE UNLOGGED TABLE ids (id bigint NOT NULL, source text NOT NULL);
});

my $clients = 4;
my $transactions = 100;
my $per_transaction = 1000;
my $total = $clients * $transactions;

for my $seq (qw(plain_seq cached_seq strided_seq))
{
	$node->pgbench(
		"--no-vacuum --client=$clients --jobs=2 --transactions=$transactions",
		0,
		[qr{processed: $total/$total}],
		[qr{^$}],
		"$clients concurrent clients mint ids for shard 11 from $seq",
		{
			"001_$seq" => "INSERT INTO ids SELECT sharded_id.next_id(11, '$seq'), '$seq' FROM generate_series(1, $per_transaction);"
		});
}

is( $node->safe_psql('postgres',
		'SELECT count(*) || \' \' || count(DISTINCT id) FROM ids'),
	(3 * $total * $per_transaction) . ' ' . (3 * $total * $per_transaction),
	'one shard, three sequences, concurrent sessions: every id distinct');

is( $node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT 1 FROM ids GROUP BY sharded_id.created_at(id) HAVING count(*) > 1024) x"),
	'0', 'no millisecond of the shard holds more than 1024 ids');

# Many shards at once: each transaction spreads over all 8192 shards.
$node->safe_psql('postgres', 'TRUNCATE ids');
$node->pgbench(
	"--no-vacuum --client=$clients --jobs=2 --transactions=$transactions",
	0,
	[qr{processed: $total/$total}],
	[qr{^$}],
	"$clients concurrent clients mint ids over 8192 shards",
	{
		'002_spread' => "INSERT INTO ids SELECT sharded_id.next_id((g * 7 + :client_id) % 8192, 'cached_seq'), 'spread' FROM generate_series(1, $per_transaction) g;"
	});

is( $node->safe_psql('postgres',
		'SELECT count(*) - count(DISTINCT id) FROM ids'),
	'0', 'many shards, concurrent sessions: every id distinct');

# Counter mode: concurrent sessions on one shard, no sequence.  Each
# session's ids strictly increase in the order it minted them (ord is a
# sequence, so it increases within a session), and none repeats.
$node->safe_psql('postgres', 'CREATE UNLOGGED TABLE cids (ord bigserial, client int NOT NULL, id bigint NOT NULL)');
$node->pgbench(
	"--no-vacuum --client=$clients --jobs=2 --transactions=$transactions",
	0,
	[qr{processed: $total/$total}],
	[qr{^$}],
	"$clients concurrent clients mint ids for shard 12 in counter mode",
	{
		'003_counter' => "INSERT INTO cids (client, id) SELECT :client_id, sharded_id.next_id(12) FROM generate_series(1, $per_transaction);"
	});
is($node->safe_psql('postgres', "SELECT count(*) || ' ' || count(DISTINCT id) FROM cids"),
	($total * $per_transaction) . ' ' . ($total * $per_transaction),
	'counter mode, concurrent sessions: every id distinct');
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE id <= prev)
	FROM (SELECT id, lag(id) OVER (PARTITION BY client ORDER BY ord) AS prev FROM cids) c}),
	'0', 'counter mode: each session\'s ids strictly increase');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT 1 FROM cids GROUP BY sharded_id.created_at(id) HAVING count(*) > 1024) x"),
	'0', 'counter mode: no millisecond of the shard holds more than 1024 ids');

$node->stop;
done_testing();
