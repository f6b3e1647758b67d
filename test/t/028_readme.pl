# test/t/028_readme.pl
#
# Every SQL and shell block of README.md runs as written, and so does every
# block of doc/sharded_id-scaling-out.md that has a run line (its recipes,
# moved there from the README; they run after the README's).  Each block has
# a hidden line before it, <!-- run: CONTEXT -->, that names where it runs:
#
#   build      a build or test command, run by .ci/run itself: the test
#              checks that each script it names exists
#   fresh      a new database of a single server, as superuser
#   ids        the database ids of that server, as superuser: the README's
#              first steps, ids alone, on a fresh server: the block that
#              grants makes the role app too
#   app        the quick start's database app (one server), as superuser
#   admin      database app, as superuser, with the role app_admin created
#              first and made the owner of the application's templates (the
#              README's "role that owns the application")
#   router     the router of two data nodes (node1, node2), database router
#   source     the data node that holds shard 5, database app
#   target     the other data node, database app
#   restore    a shell, with SOURCE and TARGET holding their connection strings
#   citus_node every node of a Citus cluster; citus: its coordinator;
#              run by test/t/040_citus.pl on a real cluster (skipped there
#              when Citus is not installed); here the test checks that it
#              exists
#
# A block with no such line, or a context the test does not know, fails the
# test: no block of the README goes unrun.  Around the blocks the test checks
# what they claim: ids alone mint distinct ids of shard 1 into an ordinary
# table, and the role app inserts after the README's grants and not before
# them; the quick start's ids decode to the shard that holds them,
# the grants let app_admin provision, the move and the restore leave shard 5
# minting on the node the map names and nowhere else, and no id repeats.
# Shell blocks run as a reader runs them: plain bash, no options added, the
# newest installed major's psql, pg_dump and pg_restore first on PATH (on a 15
# server, 18's; on the newest major itself there is none newer).  The restore
# block is first run against a target that makes it fail, and must stop
# there, with the source's rows, the target and the map as they were.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $readme = slurp_file("$FindBin::RealBin/../../README.md");

sub blocks_of
{
	my ($doc, $text) = @_;
	my @found;
	while ($text =~ /(?:^<!--[ \t]*run:[ \t]*(\w+)[ \t]*-->[ \t]*\n)?^```(sql|sh)\n(.*?)^```[ \t]*$/msg)
	{
		push @found, { doc => $doc, context => $1, lang => $2, body => $3 };
	}
	return @found;
}
my @blocks = blocks_of('README', $readme);
ok(scalar(@blocks) >= 10, scalar(@blocks) . ' SQL and shell blocks in README.md');
my @unmarked = grep { !defined $_->{context} } @blocks;
is(scalar(@unmarked), 0, 'every SQL and shell block says where it runs')
  or diag(join("\n---\n", map { $_->{body} } @unmarked));
my @ids_alone = grep { ($_->{context} // '') eq 'ids' } @blocks;
my @contexts = map { $_->{context} // 'none' } @blocks;
my ($first_run) = grep { $_ ne 'build' } @contexts;
ok(scalar(@ids_alone) >= 3 && $contexts[0] eq 'build' && $first_run eq 'ids',
	'the README opens with its set-up commands, then runs ids alone first (' . scalar(@ids_alone) . ' blocks)');
my @scaling = grep { defined $_->{context} }
  blocks_of('scaling-out', slurp_file("$FindBin::RealBin/../../doc/sharded_id-scaling-out.md"));
ok(scalar(@scaling) >= 5, scalar(@scaling) . ' blocks of doc/sharded_id-scaling-out.md with a run line');
push @blocks, @scaling;

# One server for the single-server blocks.
my $single = sharded_node('single');
$single->start;
$single->safe_psql('postgres', 'CREATE DATABASE app');

# Two data nodes and a router for the scale-out blocks: shard 5 on node1.
my $shard_count = 8;
my %node = (
	node1 => data_node('node1', shards => [ 0 .. 5 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	node2 => data_node('node2', shards => [ 6, 7 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }));
my $router = router_node(\%node, { map { ($_ => $_ <= 5 ? 'node1' : 'node2') } 0 .. 7 }, $shard_count);
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 64) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
});

my $other = sub { return $_[0] eq 'node1' ? 'node2' : 'node1'; };

my $fresh = 0;
my $restore_source;
for my $i (0 .. $#blocks)
{
	my $b = $blocks[$i];
	my $ctx = $b->{context} // 'none';
	my $name = "$b->{doc} block " . ($i + 1) . " ($ctx)";
	my ($server, $db);
	if ($ctx eq 'fresh')
	{
		$fresh++;
		$single->safe_psql('postgres', "CREATE DATABASE fresh$fresh");
		($server, $db) = ($single, "fresh$fresh");
	}
	elsif ($ctx eq 'build')
	{
		my @scripts = $b->{body} =~ /\bbash\s+(\S+)/g;
		ok(!grep({ !-f "$FindBin::RealBin/../../$_" } @scripts), "$name: the scripts it names exist (@scripts)");
		next;
	}
	elsif ($ctx eq 'citus' || $ctx eq 'citus_node')
	{
		ok(-f "$FindBin::RealBin/040_citus.pl", "$name: run by test/t/040_citus.pl on a Citus cluster");
		next;
	}
	elsif ($ctx eq 'ids')
	{
		if (!$single->safe_psql('postgres', q{SELECT count(*) FROM pg_database WHERE datname = 'ids'}))
		{
			$single->safe_psql('postgres', 'CREATE DATABASE ids; CREATE ROLE app_probe LOGIN');
		}
		if ($b->{body} =~ /GRANT EXECUTE ON FUNCTION sharded_id\.next_id\(integer\) TO app/)
		{
			# The table's rights alone are not enough: counter mode needs its grant.
			my ($r, $o, $e) = $single->psql('ids',
				q{GRANT SELECT, INSERT ON photos TO app_probe; SET ROLE app_probe; INSERT INTO photos (caption) VALUES ('denied')});
			isnt($r, 0, 'with the table rights alone, a role cannot insert into photos');
			like($e, qr/permission denied for function next_id/, '... for want of the grant on next_id(integer)');
		}
		($server, $db) = ($single, 'ids');
	}
	elsif ($ctx eq 'app') { ($server, $db) = ($single, 'app'); }
	elsif ($ctx eq 'admin')
	{
		# The block makes app_admin itself (the README creates every role
		# it uses).
		is($single->safe_psql('postgres', q{SELECT count(*) FROM pg_roles WHERE rolname = 'app_admin'}), '0',
			"$name: no role app_admin before the block");
		($server, $db) = ($single, 'app');
	}
	elsif ($ctx eq 'router') { ($server, $db) = ($router, 'router'); }
	elsif ($ctx eq 'source')
	{
		# The restore recipe takes shard 5 from node1 to node2 (its last
		# block places it there): bring it back from the move block first.
		if (map_owner($router, 5) ne 'node1')
		{
			$router->safe_psql('router', q{CALL sharded_id.move_shard(5, 'node1')});
		}
		$restore_source = map_owner($router, 5);
		($server, $db) = ($node{$restore_source}, 'app');
	}
	elsif ($ctx eq 'target')
	{
		die "$name: a target block before a source block" unless defined $restore_source;
		($server, $db) = ($node{ $other->($restore_source) }, 'app');
	}
	elsif ($ctx eq 'restore')
	{
		die "$name: a restore block before a source block" unless defined $restore_source;
		local $ENV{SOURCE} = $node{$restore_source}->connstr('app');
		local $ENV{TARGET} = $node{ $other->($restore_source) }->connstr('app');
		my ($out, $err) = ('', '');
		# As a reader runs it: plain bash, the newest installed major's
		# client first on PATH (none newer when that is the major tested).
		local $ENV{PATH} = (reader_path())[0];
		my $source = $node{$restore_source};
		my $target = $node{ $other->($restore_source) };

		# First a restore that fails: the target already holds a schema
		# shard_0005 whose users table is no shard's.  The block must stop
		# (non-zero), leave the target's schema as it was, the map and the
		# source's rows untouched.
		my $count_sql = q{SELECT (SELECT count(*) FROM shard_0005.users) || '/' || (SELECT count(*) FROM shard_0005.photos)};
		my $source_rows = $source->safe_psql('app', $count_sql);
		$target->safe_psql('app', q{CREATE SCHEMA shard_0005; CREATE TABLE shard_0005.users (planted int)});
		my $failed = IPC::Run::run([ 'bash', '-c', $b->{body} ], '>', \$out, '2>', \$err);
		ok(!$failed, "$name stops when the restore fails") or diag($out);
		is($target->safe_psql('app', q{SELECT string_agg(c.relname || '.' || a.attname, ',') FROM pg_class c
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
			WHERE c.relnamespace = 'shard_0005'::regnamespace}), 'users.planted',
			'... and leaves nothing of it on the target');
		is($source->safe_psql('app', $count_sql), $source_rows, "... the source keeps its rows ($source_rows)");
		is(map_owner($router, 5), $restore_source, '... and the map still names the source');
		$target->safe_psql('app', 'DROP SCHEMA shard_0005 CASCADE');

		($out, $err) = ('', '');
		my $ok = IPC::Run::run([ 'bash', '-c', $b->{body} ], '>', \$out, '2>', \$err);
		ok($ok, "$name runs") or diag($err);
		next;
	}
	else
	{
		fail("$name: unknown context");
		next;
	}
	my ($ret, $out, $err) = $server->psql($db, $b->{body}, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
	is($ret, 0, "$name runs") or diag("$b->{body}\n$err");

	# What the blocks claim.
	if ($ctx eq 'ids' && $b->{body} =~ /CREATE TABLE photos/)
	{
		is($single->safe_psql('ids', q{
			SELECT count(DISTINCT id) FILTER (WHERE sharded_id.shard_id(id) = 1 AND sharded_id.created_at(id) <= now())
			FROM photos}), '2', 'ids alone: two distinct ids of shard 1, made before now');
	}
	if ($ctx eq 'ids' && $b->{body} =~ /GRANT EXECUTE ON FUNCTION sharded_id\.next_id\(integer\) TO app/)
	{
		my ($r, $o, $e) = $single->psql('ids',
			q{SET ROLE app; INSERT INTO photos (caption) VALUES ('granted') RETURNING sharded_id.shard_id(id)});
		is($r, 0, 'after the README grants, app inserts into photos') or diag($e);
		is($o, '1', '... an id of shard 1');
	}
	if ($ctx eq 'ids' && $b->{body} =~ /insta5/)
	{
		is($single->safe_psql('ids', q{
			INSERT INTO insta5.our_table (caption) VALUES ('seed') RETURNING sharded_id.shard_id(id) = 5
			  AND sharded_id.seq_id(id) = (SELECT last_value FROM insta5.table_id_seq) % 1024}), 't',
			'seed mode: shard 5, the low bits from the sequence');
	}
	if ($ctx eq 'app' && $b->{body} =~ /create_shards/)
	{
		is($single->safe_psql('app', q{
			SELECT count(*) FROM shard_0009.photos p JOIN shard_0009.users u ON u.id = p.user_id
			WHERE sharded_id.shard_id(p.id) = 9 AND sharded_id.shard_id(u.id) = 9}),
			'1', 'the quick start stored a photo and its user in shard 9, with ids that say so');
	}
	if ($ctx eq 'admin')
	{
		my ($r, $o, $e) = $single->psql('app', q{SET ROLE app_admin; SELECT sharded_id.create_shard(100)});
		is($r, 0, 'after the README grants, app_admin provisions a shard') or diag($e);
		# add_table on the shards the superuser made (the quick start's) and
		# on its own: one copy each.
		my $shards = $single->safe_psql('app', 'SELECT count(*) FROM sharded_id.shards');
		($r, $o, $e) = $single->psql('app', q{SET ROLE app_admin;
			CREATE TABLE app.likes (id bigint PRIMARY KEY, photo_id bigint NOT NULL);
			SELECT sharded_id.add_table('app.likes')});
		is("$r/$o", "0/$shards", "after the README grants, app_admin adds a table to every shard ($shards)")
		  or diag($e);
	}
	if ($ctx eq 'router' && $b->{body} =~ /move_shard\(5, 'node2'\)/)
	{
		is(map_owner($router, 5), 'node2', 'the move block left shard 5 on node2 in the map');
	}
	if ($ctx eq 'router' && $b->{body} =~ /place_shard\(5, '(\w+)'\)/)
	{
		my $to = $1;
		is(map_owner($router, 5), $to, "place_shard left shard 5 on $to in the map");
		my $id = $router->safe_psql('router', q{
			SELECT app_api.add_photo(user_id, 'after the restore') FROM demo_users
			WHERE sharded_id.shard_id(user_id) = 5 LIMIT 1});
		like($id, qr/^\d+$/, 'a write for shard 5 through the router succeeds after the restore');
		is($node{$to}->safe_psql('app', "SELECT count(*) FROM shard_0005.photos WHERE id = $id"), '1',
			"the write reached $to");
	}
}

my @ids = all_ids(values %node);
my %seen;
my $repeats = grep { $seen{$_}++ } @ids;
is($repeats, 0, 'no id repeats over the data nodes (' . scalar(@ids) . ' ids)');
is($router->safe_psql('router', 'SELECT count(*) FROM sharded_id.shard_map m WHERE m.shard_id = 5'), '1',
	'shard 5 is in the map once');
my $mints = 0;
for my $n (sort keys %node)
{
	my ($r) = $node{$n}->psql('app', 'SELECT sharded_id.next_id(5, \'shard_0005.id_seq\')');
	$mints++ if $r == 0;
}
is($mints, 1, 'exactly one data node mints for shard 5');

done_testing();
