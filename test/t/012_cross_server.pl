# test/t/012_cross_server.pl
#
# Ids stay unique across servers whose clocks disagree.  In seed mode and in
# counter mode: shard 5 moves online, and shard 3 by dump, from a node on
# the true clock to a node 2 s behind, then on to a node 1 h behind, while
# 2 pgbench writers add photos to the moving shard through the router.
# After each move: no write failed, no id repeats on any node, every id the
# target minted is greater than every id the shard had before, also after
# an immediate restart of the target, and the old owner refuses to mint for
# the shard.  Then one shard dumped with pg_dump -n is restored on a node
# 5 s behind: create_shard puts the next ids above the restored ones.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $shard_count = 8;
my $bindir = `pg_config --bindir`;
chomp $bindir;

for my $mode (qw(seed counter))
{
	my %node = (
		a => data_node("${mode}_a", shards => [ 0 .. 7 ], shard_count => $shard_count, mode => $mode,
			init => { allows_streaming => 'logical' }),
		b => data_node("${mode}_b", shards => [], shard_count => $shard_count, mode => $mode,
			init => { allows_streaming => 'logical' }, clock => '-2s'),
		c => data_node("${mode}_c", shards => [], shard_count => $shard_count, mode => $mode,
			init => { allows_streaming => 'logical' }, clock => '-1h'));
	my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 7 }, $shard_count, "router_$mode");
	$router->safe_psql('router', q{
		CREATE TABLE demo_users AS
		SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 200) g;
		SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
	});

	# Add photos for the users of a shard through the router, and return
	# their ids.
	my $add_photos = sub {
		my ($shard, $caption) = @_;
		return split /\n/, $router->safe_psql('router', "SELECT app_api.add_photo(user_id, '$caption')
			FROM demo_users WHERE sharded_id.shard_id(user_id) = $shard ORDER BY n");
	};

	# Every id of a shard on a node: its users and its photos, with the xid
	# that wrote each row.
	my $shard_rows = sub {
		my ($shard) = @_;
		my $schema = sprintf('shard_%04d', $shard);
		return "SELECT id, xmin::text::bigint AS x FROM $schema.users
		        UNION ALL SELECT id, xmin::text::bigint FROM $schema.photos";
	};

	my $move = sub {
		my ($shard, $from, $to, $method) = @_;
		my $what = "$mode mode, $method move of shard $shard from $from to $to";

		# Two writers through the router, on the users of the moving shard.
		my $rows_before = $router->safe_psql('router', 'SELECT count(*) FROM ops.photos');
		# They run from before the move until they have written 20 more
		# photos after it.
		my ($writers, $w_out) = router_writers($router, "sharded_id.shard_id(user_id) = $shard", undef);
		my $during = "SELECT count(*) FROM ops.photos
			WHERE caption = 'during the move' AND sharded_id.shard_id(id) = $shard";
		$router->poll_query_until('router', "SELECT ($during) > 0")
		  or die "the writers did not start: $$w_out";

		my ($m_out, $m_err) = ('', '');
		ok(IPC::Run::run([ "$bindir/sharded_id_move_shard", '--shard', $shard, '--method', $method,
				'--from', $node{$from}->connstr('app'), '--to', $node{$to}->connstr('app'),
				'--to-node', $to, '--router', $router->connstr('router') ],
				'>', \$m_out, '2>', \$m_err), "$what: moved while 2 writers ran")
		  or diag($m_err);
		like($m_out, qr/^high-water mark: \d+$/m, "$what: the source reported its high-water mark");

		ok(stop_router_writers($router, $writers, $during), "$what: the writers finished") or diag($$w_out);
		my ($processed) = $$w_out =~ /number of transactions actually processed: (\d+)/;
		my ($failed) = $$w_out =~ /number of failed transactions: (\d+)/;
		cmp_ok($processed // 0, '>', 0, "$what: the writers wrote " . ($processed // 0) . ' photos');
		is($failed, '0', "$what: no write failed");
		is($router->safe_psql('router', 'SELECT count(*) FROM ops.photos'), $rows_before + $processed,
			"$what: no row lost");

		# Rows the target wrote itself (after it registered the shard)
		# against the rows copied to it.
		my @after = $add_photos->($shard, 'after the move');
		my $split = $node{$to}->safe_psql('app', "WITH reg AS (
				SELECT xmin::text::bigint AS x FROM sharded_id.shards WHERE shard_id = $shard),
			rows AS (" . $shard_rows->($shard) . ")
			SELECT count(*) FILTER (WHERE rows.x < reg.x) || ' ' || count(*) FILTER (WHERE rows.x > reg.x) || ' '
			       || coalesce((max(id) FILTER (WHERE rows.x < reg.x) < min(id) FILTER (WHERE rows.x > reg.x))::text, 'none')
			FROM rows, reg");
		my ($copied, $minted, $ordered) = split / /, $split;
		cmp_ok($copied, '>', 0, "$what: $copied rows copied");
		cmp_ok($minted, '>=', scalar(@after), "$what: $minted rows minted on the target");
		is($ordered, 'true', "$what: every id minted on the target is greater than every copied id");

		my @ids = all_ids(values %node);
		my %seen;
		is(scalar(grep { $seen{$_}++ } @ids), 0, "$what: no id repeats on any node (" . scalar(@ids) . ' ids)');
		is($node{$to}->safe_psql('app', 'SELECT misplaced_ids()'), '0',
			"$what: every id on the target decodes to the shard that stores it");

		# The old owner refuses to mint for the shard.
		my ($ret, $out, $err) = $node{$from}->psql('app',
			"\\set VERBOSITY verbose\nSELECT sharded_id.next_id($shard)");
		like($err, qr/ERROR:  SI001: shard $shard is not minted on this server/,
			"$what: the old owner refuses to mint for the shard");

		# An immediate restart of the target right after the move: its next
		# ids are still above every id of the shard.
		my $top = $node{$to}->safe_psql('app', "SELECT max(id) FROM (" . $shard_rows->($shard) . ") t");
		restart_node($node{$to}, 'immediate');
		my @restarted = $add_photos->($shard, 'after a restart');
		cmp_ok(scalar(@restarted), '>', 0, "$what: the target mints after an immediate restart");
		is(scalar(grep { $_ <= $top } @restarted), 0,
			"$what: and every id it mints is greater than the shard's ids before the restart");
	};

	$move->(5, 'a', 'b', 'online');
	$move->(5, 'b', 'c', 'online');
	$move->(3, 'a', 'b', 'dump');
	$move->(3, 'b', 'c', 'dump');

	# A restore by hand: one shard's schema, dumped right after new ids were
	# minted on the true clock, restored on a node 5 s behind, then adopted
	# by create_shard.
	my $d = data_node("${mode}_d", shards => [], shard_count => $shard_count, mode => $mode, clock => '-5s');
	$add_photos->(6, 'before the dump');
	my $dump = $node{a}->basedir . '/shard_0006.sql';
	$node{a}->command_ok([ "$bindir/pg_dump", '-n', 'shard_0006', '-f', $dump, '-d', $node{a}->connstr('app') ],
		"$mode mode: shard 6 dumped");
	$d->command_ok([ "$bindir/psql", '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $dump, '-d', $d->connstr('app') ],
		"$mode mode: and restored on a node 5 s behind");
	my $restored_top = $d->safe_psql('app', "SELECT max(id) FROM (" . $shard_rows->(6) . ") t");
	$d->safe_psql('app', 'SELECT sharded_id.create_shard(6)');
	my $user6 = $d->safe_psql('app', 'SELECT min(id) FROM shard_0006.users');
	my @new = split /\n/, $d->safe_psql('app', "INSERT INTO shard_0006.photos (user_id, caption)
		SELECT $user6, 'after the restore' FROM generate_series(1, 2000) RETURNING id");
	is(scalar(@new), 2000, "$mode mode: the restored shard takes new rows");
	is(scalar(grep { $_ <= $restored_top } @new), 0,
		"$mode mode: every new id is above the restored maximum");

	$_->stop for values %node, $d, $router;
}

done_testing();
