# test/t/045_matview_refresh.pl
#
# The check of a move's new copy compares its materialized views with the
# source's, populated or not, as they are when the check runs.  Materialized
# views are not fenced: a tenant's job may refresh one on the old copy while
# the move runs.  Two dump moves, each held at its switch while the source
# changes a view: shard 1's view, made WITH NO DATA, is refreshed for the
# first time; shard 2's view, which held rows, is emptied (WITH NO DATA).
# Each move finishes (moved, its old copy dropped), and the target's view
# holds rows exactly when the source's did: the target refreshes the views
# that the source says hold rows, and empties the others, rather than
# re-running the statements of its own copy's DDL.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 4;
my %node = (
	a => data_node('mv_a', shards => [ 0 .. 3 ], shard_count => $shard_count),
	b => data_node('mv_b', shards => [], shard_count => $shard_count));
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 3 }, $shard_count, 'mv_router');
$router->safe_psql('router', q{SELECT count(app_api.add_user('user ' || g)) FROM generate_series(1, 40) g});
$node{a}->safe_psql('app', q{
	CREATE MATERIALIZED VIEW shard_0001.user_count AS SELECT count(*) AS n FROM shard_0001.users WITH NO DATA;
	CREATE MATERIALIZED VIEW shard_0002.user_count AS SELECT count(*) AS n FROM shard_0002.users;});

for my $case ([ 1, 'REFRESH MATERIALIZED VIEW shard_0001.user_count', 't', 'refreshed for the first time' ],
	[ 2, 'REFRESH MATERIALIZED VIEW shard_0002.user_count WITH NO DATA', 'f', 'emptied' ])
{
	my ($shard, $sql, $populated, $what) = @$case;
	my $schema = sprintf('shard_%04d', $shard);
	hold_on($router);
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-d', $router->connstr('router') . ' application_name=mv_mover',
			'-c', "SET sharded_id.move_hold = 'switch'",
			'-c', "CALL sharded_id.move_shard($shard, 'b', method => 'dump')" ],
		'>', \$out, '2>', \$err);
	wait_at_hold($router, 'mv_mover') or die "shard $shard: the move did not reach its hold: $err";
	$node{a}->safe_psql('app', $sql);
	hold_off($router);
	eval { $h->finish; };
	unlike($err, qr/ERROR|WARNING/, "shard $shard, its view $what during the move: the move reports no error")
	  or diag($err);
	is($router->safe_psql('router', "SELECT outcome || '/' || (finished_at IS NOT NULL) FROM sharded_id.moves
		WHERE shard_id = $shard ORDER BY move_id DESC LIMIT 1"), 'moved/true', "shard $shard: moved and finished");
	is($node{a}->safe_psql('app', "SELECT count(*) FROM pg_namespace WHERE nspname = '$schema'"), '0',
		"shard $shard: the old copy is dropped");
	is($node{b}->safe_psql('app', "SELECT relispopulated FROM pg_class WHERE oid = '$schema.user_count'::regclass"),
		$populated, "shard $shard: the target's view holds rows as the source's did ($populated)");
}
done_testing();
