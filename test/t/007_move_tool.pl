# test/t/007_move_tool.pl
#
# sharded_id_move_shard, which runs CALL sharded_id.move_shard on the
# router, with hostile input: schema names holding quotes, semicolons and
# spaces move intact; a name built to inject SQL fails cleanly and runs
# nothing, with either method; a node name built to inject SQL is refused;
# and the tool runs the psql of its own server version, whatever PATH
# holds.  The nodes have wal_level = logical, so
# moves are online unless --method dump is given.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $weird = q{we"ird'; sch ema};
my $injected = q{x"; DROP TABLE public.victim; --};

my %node;
for my $name (qw(node1 node2))
{
	$node{$name} = sharded_node($name, init => { allows_streaming => 'logical' });
	$node{$name}->start;
	$node{$name}->safe_psql('postgres', q{
		CREATE EXTENSION sharded_id;
		CREATE SCHEMA app;
		CREATE TABLE app.items (id bigint PRIMARY KEY, v text);
		SELECT sharded_id.add_table('app.items');
		CREATE TABLE public.victim (x int);
		INSERT INTO public.victim VALUES (1);
	});
}
$node{node1}->safe_psql('postgres', 'SELECT sharded_id.create_shard(0)');
for my $shard ([1, $weird], [3, $injected])
{
	my ($id, $schema) = @$shard;
	$node{node2}->safe_psql('postgres', qq{
		SELECT sharded_id.create_shard($id, \$n\$$schema\$n\$);
		SELECT format('INSERT INTO %I.items (v) SELECT ''row '' || g FROM generate_series(1, 100) g', \$n\$$schema\$n\$) \\gexec
	});
}

my $router = sharded_node('router');
$router->start;
$router->safe_psql('postgres', 'CREATE EXTENSION plproxy; CREATE EXTENSION dblink; CREATE EXTENSION sharded_id; CREATE EXTENSION sharded_id_router CASCADE');
for my $name (qw(node1 node2))
{
	my $connstr = $node{$name}->connstr('postgres');
	$router->safe_psql('postgres', "INSERT INTO sharded_id.nodes VALUES ('$name', \$c\$$connstr\$c\$)");
}
$router->safe_psql('postgres', q{
	INSERT INTO sharded_id.shard_map VALUES (0, 'node1'), (1, 'node2'), (2, 'node1'), (3, 'node2');
	SELECT sharded_id.apply_shard_map();
});

my $bindir = `pg_config --bindir`;
chomp $bindir;
my $tool = "$bindir/sharded_id_move_shard";
ok(-x $tool, 'the move tool is installed beside the server binaries');

sub move
{
	my ($shard, $to_node, $method, %env) = @_;
	my ($out, $err) = ('', '');
	local @ENV{ keys %env } = values %env;
	my $ok = IPC::Run::run(
		[ $tool, '--shard', $shard,
		  '--from', $node{node2}->connstr('postgres'), '--to', $node{node1}->connstr('postgres'),
		  '--to-node', $to_node, '--router', $router->connstr('postgres'), '--method', $method ],
		'>', \$out, '2>', \$err);
	return ($ok, $out, $err);
}

# A node name that would widen the router's check if it were pasted in.
my ($ok, $out, $err) = move(1, q{nosuch' OR node_name <> '}, 'online');
ok(!$ok, 'a node name holding SQL is refused');
like($err, qr/the router knows no node "nosuch' OR node_name <> '"/, 'as an unknown node');
is(map_owner($router, 1, 'postgres'), 'node2', 'and the shard map is unchanged');

# psql and pg_dump on PATH that are not the server's: the tool must not
# run them.
my $fake = PostgreSQL::Test::Utils::tempdir();
for my $prog (qw(psql pg_dump))
{
	open my $fh, '>', "$fake/$prog" or die $!;
	print $fh "#!/bin/sh\necho 'the $prog on PATH was run' >&2\nexit 97\n";
	close $fh;
	chmod 0755, "$fake/$prog";
}

# The schema name holds a double quote, a single quote, a semicolon and a
# space.
($ok, $out, $err) = move(1, 'node1', 'online', PATH => "$fake:$ENV{PATH}");
ok($ok, "a shard in schema $weird moves") or diag($err);
like($out, qr/^method: online$/m, 'online, with logical replication');
unlike($err, qr/on PATH was run/, 'with the psql and pg_dump beside the tool, not those on PATH');
is($node{node1}->safe_psql('postgres', qq{SELECT count(*) FROM sharded_id.shards WHERE shard_id = 1 AND schema_name = \$n\$$weird\$n\$}),
	'1', 'the target holds the shard under its name');
is($node{node1}->safe_psql('postgres', q{SELECT format('SELECT count(*) FROM %I.items', schema_name) FROM sharded_id.shards WHERE shard_id = 1 \gexec}),
	'100', 'with every row');
is($node{node2}->safe_psql('postgres', qq{SELECT count(*) FROM pg_namespace WHERE nspname = \$n\$$weird\$n\$}),
	'0', 'and the source holds it no more');
is(map_owner($router, 1, 'postgres'), 'node1', 'the router sends shard 1 to node1');

# A trigger of shard 3 that fires only where rows are applied by
# replication or copied by a move (ENABLE REPLICA) goes with the shard to
# the target and rewrites its rows there, so the copy cannot match its
# source: the move fails after the copy, and its cleanup must drop exactly
# the copied schema.
for my $name (qw(node1 node2))
{
	$node{$name}->safe_psql('postgres', q{CREATE FUNCTION public.rewrite() RETURNS trigger
		LANGUAGE plpgsql AS $$BEGIN NEW.v := 'rewritten'; RETURN NEW; END$$});
}
$node{node2}->safe_psql('postgres', q{SELECT format('CREATE TRIGGER rewrite BEFORE INSERT ON %1$I.items
	FOR EACH ROW EXECUTE FUNCTION public.rewrite(); ALTER TABLE %1$I.items ENABLE REPLICA TRIGGER rewrite', schema_name)
	FROM sharded_id.shards WHERE shard_id = 3 \gexec});
for my $method (qw(online dump))
{
	($ok, $out, $err) = move(3, 'node1', $method);
	ok(!$ok, "$method: the move of the shard with an injected name fails");
	like($err, qr/the copy of shard 3 differs from the source.*The move was rolled back/s, "$method: at its verification, and says so");
	is($node{node1}->safe_psql('postgres', 'SELECT count(*) FROM public.victim'), '1',
		"$method: the injected statement did not run on the target");
	is($node{node1}->safe_psql('postgres', qq{SELECT count(*) FROM pg_namespace WHERE nspname = \$n\$$injected\$n\$}),
		'0', "$method: the partial copy is gone from the target");
	is($node{node1}->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.shards WHERE shard_id = 3'),
		'0', "$method: and so is its catalog entry");
	is($node{node2}->safe_psql('postgres', q{SELECT format('SELECT count(*) FROM %I.items', schema_name) FROM sharded_id.shards WHERE shard_id = 3 \gexec}),
		'100', "$method: the source still holds the shard and its rows");
	is(map_owner($router, 3, 'postgres'), 'node2', "$method: and the router still sends shard 3 there");
	is($node{node2}->safe_psql('postgres', 'SELECT count(*) FROM public.victim'), '1',
		"$method: nothing ran on the source either");
	is($node{$_}->safe_psql('postgres', q{SELECT (SELECT count(*) FROM pg_replication_slots)
		+ (SELECT count(*) FROM pg_publication) + (SELECT count(*) FROM pg_subscription)}),
		'0', "$method: $_ keeps no slot, publication or subscription") for qw(node1 node2);
}

$_->stop for values %node;
$router->stop;
done_testing();
