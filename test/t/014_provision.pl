# test/t/014_provision.pl
#
# Every shard of the default layout, 8192, provisioned from the demo's two
# templates on a server with PostgreSQL's default max_locks_per_transaction
# and max_connections.  One create_shards call for 2048 shards runs out of
# lock table and creates nothing; provision_shards commits in batches, takes
# all 8192, and resumes after a failure in the middle.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;
use Time::HiRes qw(time);

my $example = "$FindBin::RealBin/../example";
my $node = sharded_node('provision',
	conf => "max_locks_per_transaction = 64\nmax_connections = 100\n");
$node->start;
is($node->safe_psql('postgres', q{SELECT current_setting('max_locks_per_transaction') || ' '
	|| current_setting('max_connections')}), '64 100', 'the lock table has its default size');
$node->safe_psql('postgres', 'CREATE EXTENSION sharded_id; '
	  . slurp_file("$example/templates.sql")
	  . q{ SELECT sharded_id.add_table('app.users'); SELECT sharded_id.add_table('app.photos');});

# One transaction for 2048 shards holds too many locks.
my ($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT count(*) FROM sharded_id.create_shards(0, 2047)");
like($err, qr/ERROR:  53200: out of shared memory/, 'create_shards(0, 2047) runs out of lock table');
is($node->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.shards'), '0', 'and creates nothing');

# A schema in the way of shard 5000 stops the procedure there; what it
# committed before stays.
$node->safe_psql('postgres', 'CREATE SCHEMA shard_5000; CREATE TABLE shard_5000.other (x int)');
($ret, $out, $err) = $node->psql('postgres', 'CALL sharded_id.provision_shards(0, 8191)');
like($err, qr/schema "shard_5000" cannot hold a shard/, 'provision_shards stops at a schema it cannot adopt');
my $kept = $node->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.shards');
is($kept, '4992', 'and keeps the 78 batches of 64 shards it committed before');

# Out of the way, the same call resumes and provisions every shard.
$node->safe_psql('postgres', 'DROP SCHEMA shard_5000 CASCADE');
my $start = time;
($ret, $out, $err) = $node->psql('postgres', 'CALL sharded_id.provision_shards(0, 8191)');
my $seconds = time - $start;
is($ret, 0, 'provision_shards(0, 8191) resumes and finishes') or diag($err);
like($err, qr/NOTICE:  shards 8128 to 8191 provisioned \(0 to 8191\)/, 'it reports each batch');
is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || min(shard_id) || ' ' || max(shard_id) FROM sharded_id.shards}),
	'8192 0 8191', 'all 8192 shards of the default layout are in the catalog');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname LIKE 'shard\_%' AND c.relkind = 'r'}), '16384', 'each with a copy of both templates');
is($node->safe_psql('postgres', q{SELECT sharded_id.shard_id(app_id) FROM (
	SELECT shard_8191.next_id() AS app_id) t}), '8191', 'the last shard mints its ids');
note(sprintf('provisioned %d shards in %.1f s (%.1f ms a shard)', 8192 - $kept, $seconds, $seconds * 1000 / (8192 - $kept)));

# Bad input, before anything is done.
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nCALL sharded_id.provision_shards(5, 3)");
like($err, qr/ERROR:  22023: first shard 5 is after last shard 3/, 'a reversed range is refused');
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nCALL sharded_id.provision_shards(0, 3, 0)");
like($err, qr/ERROR:  22023: batch size 0 is out of range/, 'an empty batch is refused');
($ret, $out, $err) = $node->psql('postgres', "BEGIN;\nCALL sharded_id.provision_shards(0, 3);");
like($err, qr/invalid transaction termination/, 'inside a transaction block it cannot commit, and says so');

$node->stop;
done_testing();
