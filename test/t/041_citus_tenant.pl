# test/t/041_citus_tenant.pl
#
# No tenant code with a superuser's rights on Citus: a coordinator and two
# workers, each a PostgreSQL server with shared_preload_libraries =
# 'citus,sharded_id', as in test/t/040_citus.pl.  Skipped (skip_all) when
# Citus is not installed for the PostgreSQL under test: ../shared/citus
# holds a build for PostgreSQL 18 (test/setup.sh installs it).
#
#  - A role that is not a superuser owns shard 2's schema and plants code in
#    its table: a CHECK constraint, a default, a generated column, an index
#    expression, a partial index predicate and a trigger, each of which
#    records current_user and session_user and, when it runs as a
#    superuser, makes its owner a superuser.  As the owner, each piece runs
#    (the plant works).
#  - The README's provisioning block, as a superuser, is refused by
#    citus_distribute_shards with 42501, naming the schema and its owner;
#    nothing is distributed, not even the superuser's shards.  The shards
#    that a superuser owns are then distributed (citus_distribute_shards
#    with a range), and shard 2 alone is refused again.  citus_open_shards
#    names shard 2 only, with every reason: its owner, its table, and each
#    piece of code that uses the owner's functions.
#  - The README's move block (citus_schema_move, citus_rebalance_start), as
#    a superuser: no planted code ran as a superuser on any node, and the
#    owner is a superuser nowhere.
#  - The refusal also covers a schema that a superuser owns but where
#    another role may create objects or triggers, or whose table calls a
#    function such a role owns, or whose column's type reaches such a
#    role's code (an array of its domain, its table's row type, a
#    superuser's domain over its domain), or where a superuser role that
#    such a role is a member of owns an object; a refused call distributes
#    nothing.  citus_check_moves, which the README's move block runs
#    first, refuses while a distributed schema is open (one given to
#    another role after it was distributed).
#  - Why: a schema owned by another role, distributed and moved by a
#    superuser straight through Citus (citus_schema_distribute,
#    citus_schema_move), runs that role's CHECK constraint and generated
#    column as the superuser on the node that receives the rows.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $major = `pg_config --version`;
$major =~ s/^PostgreSQL (\d+).*/$1/s;
if (!-f "$pkglibdir/citus.so" || !-f "$sharedir/extension/citus.control")
{
	plan skip_all => "Citus is not installed for PostgreSQL $major (no $pkglibdir/citus.so): "
	  . 'run ../shared/citus/install.sh (PostgreSQL 18) to test sharded_id on Citus';
}

my $readme = slurp_file("$FindBin::RealBin/../../README.md");
my %blocks;
while ($readme =~ /^<!--[ \t]*run:[ \t]*(citus\w*)[ \t]*-->[ \t]*\n^```(sql|sh)\n(.*?)^```[ \t]*$/msg)
{
	push @{ $blocks{$1} }, $3;
}
my ($distribute_block) = grep { /citus_distribute_shards\(\)/ } @{ $blocks{citus} // [] };
my ($move_block) = grep { /citus_schema_move\(/ && /citus_rebalance_start\(/ } @{ $blocks{citus} // [] };
ok(defined $distribute_block && defined $move_block && @{ $blocks{citus_node} // [] } >= 1,
	"README.md has the Citus blocks that provision and distribute, and that move and rebalance");

# A Citus node with sharded_id preloaded and no sharded_id setting.
sub citus_node
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
wal_level = logical
max_prepared_transactions = 50
max_connections = 100
max_worker_processes = 24
max_replication_slots = 20
max_wal_senders = 20
citus.local_hostname = '" . $node->host . "'
");
	$node->start;
	for my $b (@{ $blocks{citus_node} // [] })
	{
		my ($r, $o, $e) = $node->psql('postgres', $b, extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
		die "README's citus_node block failed on $name: $e" if $r;
	}
	return $node;
}

# Runs SQL; returns the SQLSTATE of its error ('none' if none) and the
# error's text.
sub attempt
{
	my ($node, $sql, @role) = @_;
	my ($r, $o, $e) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-v', 'ON_ERROR_STOP=1', @role ]);
	return ($r == 0 ? 'none' : ($e =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : '?'), $e);
}

my $coord = citus_node('coordinator');
my $w1 = citus_node('worker1');
my $w2 = citus_node('worker2');
my @nodes = ($coord, $w1, $w2);
$coord->safe_psql('postgres',
	"SELECT citus_set_coordinator_host('" . $coord->host . "', " . $coord->port . ')');
$coord->safe_psql('postgres', "SELECT citus_add_node('" . $_->host . "', " . $_->port . ')') for ($w1, $w2);
my $su = $coord->safe_psql('postgres', 'SELECT current_user');

# The record of planted code: a table of its own on each node, which any
# role may write, and functions that write to it.  spy.seen also makes
# role tenant a superuser when it runs as one.
$coord->safe_psql('postgres', q{
	CREATE ROLE tenant LOGIN;
	CREATE ROLE tenant2 LOGIN;
	CREATE ROLE outsider LOGIN});
for my $node (@nodes)
{
	$node->safe_psql('postgres', q{
		SET citus.enable_ddl_propagation = off;
		CREATE TABLE public.spied (who name, sess name, port integer, what text);
		GRANT INSERT ON public.spied TO PUBLIC;});
}
$coord->safe_psql('postgres', q{
	CREATE SCHEMA spy AUTHORIZATION tenant;
	SET ROLE tenant;
	CREATE FUNCTION spy.seen(what text) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.spied VALUES (current_user, session_user, pg_catalog.inet_server_port(), what);
		IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'ALTER ROLE tenant SUPERUSER';
		END IF;
		RETURN true;
	END $$;
	-- For index expressions, predicates and generated columns.
	CREATE FUNCTION spy.seen_i(what text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
	BEGIN RETURN spy.seen(what); END $$;
	CREATE FUNCTION spy.trg() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN PERFORM spy.seen('trigger'); RETURN NEW; END $$;
	GRANT USAGE ON SCHEMA spy TO PUBLIC});
for my $node ($w1, $w2)
{
	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner
		WHERE p.pronamespace = 'spy'::regnamespace AND r.rolname = 'tenant' AND NOT r.rolsuper}), '3',
		$node->name . ': Citus made role tenant and its three functions there too, tenant not a superuser');
}

# Shard 2's schema belongs to tenant, who plants code in its table.
$coord->safe_psql('postgres', q{
	SELECT sharded_id.create_shard(2);
	ALTER SCHEMA shard_0002 OWNER TO tenant;
	SET ROLE tenant;
	CREATE TABLE shard_0002.planted (
		id bigint PRIMARY KEY,
		a integer CHECK (spy.seen('check')),
		d boolean DEFAULT spy.seen('default'),
		g boolean GENERATED ALWAYS AS (spy.seen_i('generated')) STORED);
	CREATE INDEX ON shard_0002.planted ((spy.seen_i('index' || a)));
	CREATE INDEX ON shard_0002.planted (a) WHERE spy.seen_i('partial');
	CREATE TRIGGER planted BEFORE INSERT OR UPDATE ON shard_0002.planted
		FOR EACH ROW EXECUTE FUNCTION spy.trg();
	RESET ROLE;
	TRUNCATE public.spied});
$coord->safe_psql('postgres', q{
	SET ROLE tenant;
	INSERT INTO shard_0002.planted (id, a) SELECT i, i FROM generate_series(1, 10) i});
is($coord->safe_psql('postgres', q{
	SELECT string_agg(DISTINCT regexp_replace(what, '[0-9]+$', ''), ',') FROM public.spied WHERE who = 'tenant'}),
	'check,default,generated,index,partial,trigger',
	'the plant works: written by its owner, every piece of code ran, as tenant');
$coord->safe_psql('postgres', 'TRUNCATE public.spied');

# What ran as a superuser, over all nodes, and whether tenant became one.
my $escalations = sub {
	my @seen;
	for my $node (@nodes)
	{
		my $s = $node->safe_psql('postgres', q{
			SELECT string_agg(DISTINCT s.what || ' as ' || s.who, ', ')
			FROM public.spied s JOIN pg_roles r ON r.rolname = s.who WHERE r.rolsuper});
		push @seen, $node->name . ": $s" if $s ne '';
		push @seen, $node->name . ': tenant is a superuser'
		  if $node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'tenant'}) eq 't';
	}
	return join('; ', @seen) || 'none';
};
my $distributed = sub {
	return $coord->safe_psql('postgres', q{
		SELECT coalesce(string_agg(n.nspname, ',' ORDER BY n.nspname), '')
		FROM pg_dist_schema d JOIN pg_namespace n ON n.oid = d.schemaid});
};

# --- The README's provisioning block, as a superuser.
my ($state, $err) = attempt($coord, $distribute_block);
is($state, '42501', "the README's provisioning block is refused by citus_distribute_shards: 42501");
like($err, qr/shard schema shard_0002 is open to a role that is not a superuser/, 'the error names the schema');
like($err, qr/DETAIL:\s+In schema shard_0002, role tenant owns the schema\. Citus copies/,
	'the detail names the owner and says why');
like($err, qr/HINT:\s+Review and drop that role's code in the schema/, 'and the hint says what to do');
is($distributed->(), '', 'the refused call distributed nothing, not even the shards a superuser owns');
is($escalations->(), 'none', 'no planted code ran as a superuser on any node, and tenant is a superuser nowhere');

is($coord->safe_psql('postgres', q{SELECT string_agg(s, ',') FROM sharded_id.citus_distribute_shards(3, 4) s}),
	'shard_0003,shard_0004', 'citus_distribute_shards(3, 4) distributes the shards a superuser owns');
is($coord->safe_psql('postgres', q{SELECT string_agg(s, ',') FROM sharded_id.citus_distribute_shards(1, 1) s}),
	'shard_0001', 'and citus_distribute_shards(1, 1) shard 1, which the README\'s move block moves');
($state, $err) = attempt($coord, 'SELECT * FROM sharded_id.citus_distribute_shards()');
is($state, '42501', 'citus_distribute_shards() is refused again: shard 2 is the one left');
is($distributed->(), 'shard_0001,shard_0003,shard_0004', 'shard_0002 stays a schema of the coordinator');

my @open = split /\n/, $coord->safe_psql('postgres', q{SELECT shard_id || ': ' || reason FROM sharded_id.citus_open_shards()});
is(scalar(grep { !/^2: / } @open), 0, 'citus_open_shards names shard 2 and no other shard');
for my $reason ('role tenant owns the schema', 'role tenant owns table shard_0002.planted',
	'constraint planted_check on table shard_0002.planted uses function spy.seen(text), owned by role tenant',
	'default value for column d of table shard_0002.planted uses function spy.seen(text), owned by role tenant',
	'default value for column g of table shard_0002.planted uses function spy.seen_i(text), owned by role tenant',
	'index shard_0002.planted_a_idx uses function spy.seen_i(text), owned by role tenant',
	'index shard_0002.planted_seen_i_idx uses function spy.seen_i(text), owned by role tenant',
	'trigger planted on table shard_0002.planted uses function spy.trg(), owned by role tenant')
{
	ok((grep { $_ eq "2: $reason" } @open), "citus_open_shards: $reason");
}
is(scalar(@open), 8, 'and nothing else (' . scalar(@open) . ' reasons)') or diag(join("\n", @open));
is($coord->safe_psql('postgres', q{
	SELECT has_function_privilege('public', 'sharded_id.citus_open_shards(integer, integer)', 'EXECUTE')}),
	'f', 'citus_open_shards is not for PUBLIC');

# --- The README's move block, as a superuser.
($state, $err) = attempt($coord, $move_block);
is($state, 'none', "the README's move block runs: citus_schema_move of shard_0001 and a rebalance") or diag($err);
is($escalations->(), 'none', 'after the moves no planted code ran as a superuser on any node; tenant is a superuser nowhere');
# Read as its owner: a superuser's query would plan the partial index,
# whose predicate the planner folds, running the owner's function.
is($coord->safe_psql('postgres', 'SET ROLE tenant; SELECT count(*) FROM shard_0002.planted'), '10',
	"tenant's rows are all there");

# --- What else the check refuses, each with nothing distributed.
# A superuser's schema where another role may create objects.
$coord->safe_psql('postgres', q{
	SELECT sharded_id.create_shard(5);
	GRANT CREATE ON SCHEMA shard_0005 TO outsider});
($state, $err) = attempt($coord, 'SELECT * FROM sharded_id.citus_distribute_shards(5, 5)');
is($state, '42501', 'a schema where role outsider may create objects: 42501');
like($err, qr/role outsider may create objects in the schema/, 'naming the grant');
$coord->safe_psql('postgres', q{
	REVOKE CREATE ON SCHEMA shard_0005 FROM outsider;
	CREATE TABLE shard_0005.t (id bigint PRIMARY KEY);
	GRANT TRIGGER ON shard_0005.t TO outsider});
($state, $err) = attempt($coord, 'SELECT * FROM sharded_id.citus_distribute_shards(5, 5)');
is($state, '42501', 'a table on which role outsider may create triggers: 42501');
like($err, qr/role outsider may create triggers on table shard_0005\.t/, 'naming the table');
$coord->safe_psql('postgres', q{
	REVOKE TRIGGER ON shard_0005.t FROM outsider;
	ALTER TABLE shard_0005.t ADD COLUMN a integer CONSTRAINT outside CHECK (spy.seen('outside check'))});
($state, $err) = attempt($coord, 'SELECT * FROM sharded_id.citus_distribute_shards(5, 5)');
is($state, '42501', "a superuser's table whose CHECK calls a function of tenant's: 42501");
like($err, qr/constraint outside on table shard_0005\.t uses function spy\.seen\(text\), owned by role tenant/,
	'naming the constraint, the function and its owner');
is($distributed->(), 'shard_0001,shard_0003,shard_0004', 'none of these refused calls distributed anything');
$coord->safe_psql('postgres', 'ALTER TABLE shard_0005.t DROP CONSTRAINT outside');
is($coord->safe_psql('postgres', q{SELECT string_agg(s, ',') FROM sharded_id.citus_distribute_shards(5, 5) s}),
	'shard_0005', 'with the grants revoked and the constraint dropped, shard 5 is distributed');
is($escalations->(), 'none', 'still no planted code ran as a superuser, and tenant is a superuser nowhere');

# Code reached through the types of a superuser's columns: tenant's domain
# (whose CHECK calls tenant's function) as an array, tenant's table's row
# type, and a superuser's domain over tenant's; and a superuser role that
# a role that is not a superuser is a member of.
$coord->safe_psql('postgres', q{
	SET ROLE tenant;
	CREATE DOMAIN spy.email AS text CHECK (spy.seen('domain check'));
	CREATE TABLE spy.addr (street text, mail spy.email);
	RESET ROLE;
	CREATE DOMAIN public.mail2 AS spy.email;
	SELECT sharded_id.create_shard(7);});
for my $case (
	[ 'mails spy.email[]', qr/column mails of table shard_0007\.t uses type spy\.email\[\], owned by role tenant/,
		"an array of tenant's domain" ],
	[ 'home spy.addr', qr/column home of table shard_0007\.t uses type spy\.addr, owned by role tenant/,
		"tenant's table's row type" ],
	[ 'mail public.mail2', qr/column mail of table shard_0007\.t uses type spy\.email, owned by role tenant/,
		"a superuser's domain over tenant's" ])
{
	my ($column, $reason, $what) = @$case;
	$coord->safe_psql('postgres', "CREATE TABLE shard_0007.t (id bigint PRIMARY KEY, $column)");
	($state, $err) = attempt($coord, 'SELECT * FROM sharded_id.citus_distribute_shards(7, 7)');
	is($state, '42501', "a superuser's column of $what: 42501");
	like($coord->safe_psql('postgres', q{SELECT string_agg(reason, E'\n') FROM sharded_id.citus_open_shards(7, 7)}),
		$reason, "citus_open_shards names it: $what");
	$coord->safe_psql('postgres', 'DROP TABLE shard_0007.t');
}
$coord->safe_psql('postgres', q{
	CREATE ROLE su_owner SUPERUSER NOLOGIN;
	GRANT su_owner TO outsider;
	CREATE FUNCTION shard_0007.f() RETURNS boolean LANGUAGE sql RETURN true;
	ALTER FUNCTION shard_0007.f() OWNER TO su_owner});
($state, $err) = attempt($coord, 'SELECT * FROM sharded_id.citus_distribute_shards(7, 7)');
is($state, '42501', 'a function of a superuser role that outsider is a member of: 42501');
like($err, qr/role su_owner owns function shard_0007\.f\(\)/, 'naming it');
$coord->safe_psql('postgres', 'REVOKE su_owner FROM outsider');
is($coord->safe_psql('postgres', q{SELECT string_agg(s, ',') FROM sharded_id.citus_distribute_shards(7, 7) s}),
	'shard_0007', 'once no such role is a member of it, shard 7 is distributed');

# citus_check_moves, which the README's move block runs first: a
# distributed schema given to another role afterwards is refused.
is((attempt($coord, 'SELECT sharded_id.citus_check_moves()'))[0], 'none',
	'citus_check_moves passes while every distributed schema is a superuser\'s');
$coord->safe_psql('postgres', 'ALTER SCHEMA shard_0003 OWNER TO tenant2');
($state, $err) = attempt($coord, 'SELECT sharded_id.citus_check_moves()');
is($state, '42501', 'a distributed schema given to tenant2: citus_check_moves refuses');
like($err, qr/distributed schema shard_0003 is open to a role that is not a superuser.*role tenant2 owns the schema/s,
	'naming the schema and why');
($state, $err) = attempt($coord, $move_block);
is($state, '42501', "and so does the README's move block, before it moves anything");
$coord->safe_psql('postgres', 'ALTER SCHEMA shard_0003 OWNER TO CURRENT_USER');

# --- Why: straight through Citus, a superuser runs the owner's code.  Role
# tenant2 owns shard 6's schema; its code only records who ran it.
$coord->safe_psql('postgres', q{
	CREATE SCHEMA spy2 AUTHORIZATION tenant2;
	SET ROLE tenant2;
	CREATE FUNCTION spy2.seen(what text) RETURNS boolean LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO public.spied VALUES (current_user, session_user, pg_catalog.inet_server_port(), what);
		RETURN true;
	END $$;
	CREATE FUNCTION spy2.seen_i(what text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
	BEGIN RETURN spy2.seen(what); END $$;
	RESET ROLE;
	SELECT sharded_id.create_shard(6);
	ALTER SCHEMA shard_0006 OWNER TO tenant2;
	SET ROLE tenant2;
	CREATE TABLE shard_0006.planted (
		id bigint PRIMARY KEY,
		a integer CHECK (spy2.seen('check')),
		g boolean GENERATED ALWAYS AS (spy2.seen_i('generated')) STORED);
	INSERT INTO shard_0006.planted (id, a) SELECT i, i FROM generate_series(1, 10) i});
my $as_su = sub {
	my ($node) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT coalesce(string_agg(DISTINCT what, ','), '') FROM public.spied WHERE who = '$su' AND what IN ('check', 'generated')});
};
$_->safe_psql('postgres', 'TRUNCATE public.spied') for @nodes;
$coord->safe_psql('postgres', q{SELECT citus_schema_distribute('shard_0006')});
my $holder = $coord->safe_psql('postgres', 'SELECT node_port FROM sharded_id.citus_shard_node(6)');
my ($from) = grep { $_->port == $holder } ($w1, $w2);
my ($to) = grep { $_->port != $holder } ($w1, $w2);
ok(defined $from, 'citus_schema_distribute put shard_0006 on a worker');
is($as_su->($from), 'check,generated',
	"citus_schema_distribute by a superuser ran tenant2's CHECK and generated column as $su on " . $from->name);
$_->safe_psql('postgres', 'TRUNCATE public.spied') for @nodes;
$coord->safe_psql('postgres', "SELECT citus_schema_move('shard_0006', '" . $to->host . "', " . $to->port . ')');
is($coord->safe_psql('postgres', 'SELECT node_port FROM sharded_id.citus_shard_node(6)'), $to->port,
	'citus_schema_move put shard_0006 on ' . $to->name);
is($as_su->($to), 'check,generated',
	"citus_schema_move by a superuser ran them as $su on " . $to->name . ', the node that received the rows');

done_testing();
