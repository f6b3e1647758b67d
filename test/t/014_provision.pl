# test/t/014_provision.pl
#
# Every shard of the default layout, 8192, provisioned from the demo's two
# templates on a server with PostgreSQL's default max_locks_per_transaction
# and max_connections (on PostgreSQL 18; on older majors the first 2048,
# as the SQL that provisions them is the same).  One create_shards call for 2048 shards runs out of
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

# Every shard of the layout on the newest major; the first 2048 on the
# others, whose provisioning runs the same SQL (the suite's slowest file).
my $last = $node->pg_version >= 18 ? 8191 : 2047;
my $stop = $last == 8191 ? 5000 : 1000;
my $shards = $last + 1;

# A schema in the way of shard $stop stops the procedure there; what it
# committed before stays.
$node->safe_psql('postgres', "CREATE SCHEMA shard_$stop; CREATE TABLE shard_$stop.other (x int)");
($ret, $out, $err) = $node->psql('postgres', "CALL sharded_id.provision_shards(0, $last)");
like($err, qr/schema "shard_$stop" cannot hold a shard/, 'provision_shards stops at a schema it cannot adopt');
my $kept = $node->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.shards');
my $batches = int($stop / 64);
is($kept, $batches * 64, "and keeps the $batches batches of 64 shards it committed before");

# Out of the way, the same call resumes and provisions every shard.
$node->safe_psql('postgres', "DROP SCHEMA shard_$stop CASCADE");
my $start = time;
($ret, $out, $err) = $node->psql('postgres', "CALL sharded_id.provision_shards(0, $last)");
my $seconds = time - $start;
is($ret, 0, "provision_shards(0, $last) resumes and finishes") or diag($err);
like($err, qr/NOTICE:  shards ${\ ($last - 63) } to $last provisioned \(0 to $last\)/, 'it reports each batch');
is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || min(shard_id) || ' ' || max(shard_id) FROM sharded_id.shards}),
	"$shards 0 $last", "all $shards shards are in the catalog");
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname LIKE 'shard\_%' AND c.relkind = 'r'}), 2 * $shards, 'each with a copy of both templates');
is($node->safe_psql('postgres', qq{SELECT sharded_id.shard_id(app_id) FROM (
	SELECT shard_$last.next_id() AS app_id) t}), $last, 'the last shard mints its ids');
note(sprintf('provisioned %d shards in %.1f s (%.1f ms a shard)', $shards - $kept, $seconds, $seconds * 1000 / ($shards - $kept)));

# Bad input, before anything is done.
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nCALL sharded_id.provision_shards(5, 3)");
like($err, qr/ERROR:  22023: first shard 5 is after last shard 3/, 'a reversed range is refused');
($ret, $out, $err) = $node->psql('postgres', "\\set VERBOSITY verbose\nCALL sharded_id.provision_shards(0, 3, 0)");
like($err, qr/ERROR:  22023: batch size 0 is out of range/, 'an empty batch is refused');
($ret, $out, $err) = $node->psql('postgres', "BEGIN;\nCALL sharded_id.provision_shards(0, 3);");
like($err, qr/invalid transaction termination/, 'inside a transaction block it cannot commit, and says so');

$node->stop;
done_testing();
