# test/t/036_search_path.pl
#
# No call of the move and provisioning API runs a function that a member of
# sharded_id_provisioner planted where a superuser's default search path
# ("$user", public) looks.
#
# 1. The names: every identifier followed by "(" in src/sql/api/*.sql and src/sql/router/*.sql, in
#    the string literals of src/*.c (the SPI queries) and in the
#    command-line tools of src/bin/, not schema-qualified and not SQL
#    syntax (coalesce, nullif, greatest, exists, cast, ...), that names a
#    function of pg_catalog on a data node.  Fewer than 20 fails the test.
# 2. The plant: on the router and on each data node, a role whose only
#    grant is membership in sharded_id_provisioner (which has CREATE on the
#    database, to make shard schemas) makes the schema named like the
#    superuser, the first schema of its default search path, and fills it
#    with shadows of those built-ins: for each pg_catalog signature of a
#    name, the same arity with every argument text; every polymorphic or
#    "any" argument made text (or text[]); every numeric argument made
#    integer (arguments with defaults keep a default, named arguments their
#    names); and for a VARIADIC built-in (format, concat_ws,
#    jsonb_build_object, ...) 1 to 3 variadic arguments, all text, and for
#    VARIADIC "any" every mix of text, integer and bigint.  Public is
#    planted too where the role may create there (not on PostgreSQL 15 and
#    later).  A shadow that the server refuses to create is counted and
#    skipped, as is one identical to a built-in, which pg_catalog hides.
#    Each shadow raises a WARNING naming itself (kept by the server log even
#    in a read-only transaction) and advances the sequence planted.ran
#    (which a rollback does not undo), then returns NULL.
# 3. The shadows are live: as the superuser, with the default search path,
#    concat_ws('-', 'a', 'b'), format('%s', 'x'), jsonb_build_object('k',
#    'v'), format('shard %s on %s', 1, 'a') and make_interval(secs => 5)
#    each run the planted function, on the router and on each node.
# 4. Then, as that superuser with the default search path: move_shard
#    online and by dump under pgbench writers through the router, a dry
#    run, the command-line tools sharded_id_move_shard and
#    sharded_id_rebalance, rebalance_plan, rebalance (dry run and real),
#    recover_moves() when two moves cannot be recovered (their sessions
#    ended at a hold point, their target down: the combined error), and
#    again once it is back, a move that first finishes an earlier
#    unfinished one, a move whose cleanup is deferred and recover_moves()
#    doing that cleanup, place_shard, apply_shard_map, move_progress; on a
#    data node create_shard, create_shards, provision_shards, schema_ddl,
#    schema_inventory, raise_floors, retire_shard, drop_shard and the
#    readers of floors and settings.  After each, planted.ran has not moved
#    on the router nor on any node, and no server log shows a planted
#    function.  At the end the shadows are shown live again.
#
# On 1.6 step 4 would have run the planted concat_ws as the superuser:
# recover_moves() had no search path of its own (a procedure cannot SET
# one) and built the DETAIL of its combined error with unqualified
# concat_ws(' ', nullif(first_detail, ''), CASE ... format(...) END), whose
# arguments (unknown, text, text) resolve to a planted
# concat_ws(text, text, text) over pg_catalog.concat_ws(text, VARIADIC
# "any") once two moves are unrecoverable; and its node sessions
# (_remote_open) pinned no search path, so the remote SQL's unqualified
# jsonb_build_object ran a planted one on the nodes at every move.
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
	a => data_node('path_a', shards => [ 0 .. 3 ], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }),
	b => data_node('path_b', shards => [], shard_count => $shard_count,
		init => { allows_streaming => 'logical' }));
my $router = router_node(\%node, { map { ($_ => 'a') } 0 .. 3 }, $shard_count, 'path_router');
$router->safe_psql('router', q{
	CREATE TABLE demo_users AS
	SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 80) g;
	SELECT count(app_api.add_photo(user_id, 'first of ' || n)) FROM demo_users;
	CREATE ROLE analyst LOGIN;
	GRANT USAGE ON SCHEMA ops TO analyst;
	GRANT SELECT ON ALL TABLES IN SCHEMA ops TO analyst;
});
# The test's own helpers on the nodes pin their path: they are no part of
# the API, and would otherwise run the shadows themselves.
for my $n (values %node)
{
	$n->safe_psql('app', 'ALTER FUNCTION public.all_ids() SET search_path = pg_catalog, pg_temp;
		ALTER FUNCTION public.misplaced_ids() SET search_path = pg_catalog, pg_temp');
}

my @servers = (
	{ name => 'router', node => $router, db => 'router' },
	{ name => 'node a', node => $node{a}, db => 'app' },
	{ name => 'node b', node => $node{b}, db => 'app' });

# What the test reads for itself runs with the shadows out of its path;
# what it calls of the API runs with the server's default path.
my $pinned = sub {
	my ($n, $db, $sql) = @_;
	return $n->safe_psql($db, "SET search_path = pg_catalog, public, pg_temp;\n$sql");
};

# 1. The built-in functions the sources call by a bare name.
my %syntax = map { $_ => 1 } qw(all any array between bigint bit boolean cast char character coalesce
  collation dec decimal exists extract float greatest grouping in int integer interval json least
  national nchar none normalize nullif numeric overlay position precision real row setof smallint some
  substring time timestamp treat trim values varchar xmlattributes xmlconcat xmlelement xmlexists
  xmlforest xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable);
my %called;
my $scan = sub {
	my ($text) = @_;
	while ($text =~ /(?<![.\w"\$%])([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(/g)
	{
		$called{ lc $1 }++ unless $syntax{ lc $1 };
	}
};
my $src = "$FindBin::RealBin/../../src";
for my $f (glob("$src/sql/api/*.sql"), glob("$src/sql/router/*.sql"))
{
	my $t = slurp_file($f);
	$t =~ s{/\*.*?\*/}{}gs;
	$t =~ s/--[^\n]*//g;
	$scan->($t);
}
for my $f (glob("$src/bin/*"))
{
	my $t = slurp_file($f);
	$t =~ s/^\s*#[^\n]*//mg;
	$scan->($t);
}
for my $f (glob("$src/*.c"))
{
	my $t = slurp_file($f);
	$t =~ s{/\*.*?\*/}{}gs;
	$scan->($1) while $t =~ /"((?:[^"\\\n]|\\.)*)"/g;
}
my $candidates = join(',', map { "'$_'" } sort keys %called);
my @builtins = split /\n/, $pinned->($node{a}, 'app', "SELECT DISTINCT p.proname FROM pg_proc p
	WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname IN ($candidates) ORDER BY 1");
cmp_ok(scalar(@builtins), '>=', 20, 'the sources call ' . scalar(@builtins) . ' built-in functions by a bare name');
note('built-ins called by a bare name: ' . join(' ', @builtins));
ok((grep { $_ eq 'concat_ws' } @builtins) && (grep { $_ eq 'jsonb_build_object' } @builtins)
	  && (grep { $_ eq 'format' } @builtins), 'they include concat_ws, format and jsonb_build_object');

# 2. The plant.
my $su = $router->safe_psql('router', 'SELECT current_user');
my $plant_sql = q{
CREATE SCHEMA planted;
CREATE SEQUENCE planted.ran;
GRANT USAGE ON SCHEMA planted TO PUBLIC;
GRANT USAGE, UPDATE ON SEQUENCE planted.ran TO PUBLIC;

-- The type a shadow takes or returns for a type of a built-in: polymorphic
-- and "any" ones made concrete.
CREATE FUNCTION planted.concrete(t oid) RETURNS text
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE
        WHEN t IN ('anyelement'::regtype, 'anynonarray'::regtype, 'anycompatible'::regtype,
                   'anycompatiblenonarray'::regtype, 'anyenum'::regtype, '"any"'::regtype) THEN 'text'
        WHEN t IN ('anyarray'::regtype, 'anycompatiblearray'::regtype) THEN 'text[]'
        ELSE format_type(t, NULL) END
$$;

-- One shadow of built-in fn in schema target, taking types (named
-- arg_names, the last defaults of them with a default).
CREATE FUNCTION planted.shadow(target name, fn oid, types text[], arg_names text[], defaults integer)
RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    p pg_proc;
    sig text;
    args text[] := '{}';
    rt text;
    ret text;
    i integer;
    n integer := coalesce(cardinality(types), 0);
    out_names text[];
    out_type text;
BEGIN
    SELECT * INTO p FROM pg_proc WHERE oid = fn;
    out_names := ARRAY(SELECT p.proargnames[u.o] FROM unnest(p.proargmodes) WITH ORDINALITY u(m, o) WHERE u.m IN ('o', 't'));
    IF to_regprocedure(format('pg_catalog.%I(%s)', p.proname, array_to_string(types, ', '))) IS NOT NULL THEN
        RETURN 'identical to a built-in';
    END IF;
    sig := format('%I.%I(%s)', target, p.proname, array_to_string(types, ', '));
    IF to_regprocedure(sig) IS NOT NULL THEN
        RETURN 'already planted';
    END IF;
    FOR i IN 1 .. n LOOP
        -- (An argument named like a result column goes unnamed.)
        args := args || (CASE WHEN coalesce(arg_names[i], '') <> '' AND arg_names[i] <> ALL (out_names) THEN quote_ident(arg_names[i]) || ' ' ELSE '' END
                         || types[i] || CASE WHEN i > n - defaults THEN ' DEFAULT NULL' ELSE '' END);
    END LOOP;
    FOR i IN 1 .. coalesce(cardinality(p.proallargtypes), 0) LOOP
        IF p.proargmodes[i] IN ('o', 't') THEN
            out_type := planted.concrete(p.proallargtypes[i]);
            args := args || ('OUT ' || quote_ident(p.proargnames[i]) || ' ' || out_type);
        END IF;
    END LOOP;
    IF cardinality(out_names) > 0 THEN
        rt := CASE WHEN p.proretset THEN 'SETOF ' ELSE '' END
              || CASE WHEN cardinality(out_names) = 1 THEN out_type ELSE 'record' END;
        ret := 'RETURN;';
    ELSE
        rt := CASE WHEN p.proretset THEN 'SETOF ' ELSE '' END || planted.concrete(p.prorettype);
        ret := CASE WHEN p.proretset OR p.prorettype = 'void'::regtype THEN 'RETURN;' ELSE 'RETURN NULL;' END;
    END IF;
    BEGIN
        EXECUTE format($c$CREATE FUNCTION %s(%s) RETURNS %s LANGUAGE plpgsql %s
SET search_path = pg_catalog, pg_temp AS $b$
BEGIN
    RAISE WARNING 'planted shadow %% ran', %L;
    BEGIN
        PERFORM pg_catalog.nextval('planted.ran');
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
    %s
END $b$$c$,
            format('%I.%I', target, p.proname), array_to_string(args, ', '), rt,
            CASE p.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END,
            sig, ret);
    EXCEPTION WHEN OTHERS THEN
        RETURN 'refused: ' || sig || ': ' || SQLERRM;
    END;
    RETURN 'planted';
END
$f$;

-- Every shadow of the built-ins called names, in schema target; returns
-- how many of each outcome.
CREATE FUNCTION planted.plant(target name, names text[])
RETURNS TABLE (outcome text, shadows bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
    p pg_proc;
    types oid[];
    in_names text[];
    n integer;
    k integer;
    fixed text[];
    combo text[];
    results text[] := '{}';
BEGIN
    FOR p IN SELECT f.* FROM pg_proc f
             WHERE f.pronamespace = 'pg_catalog'::regnamespace AND f.proname = ANY (names) AND f.prokind <> 'p'
             ORDER BY f.proname, f.oid LOOP
        types := ARRAY(SELECT u.t FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(t, o) ORDER BY u.o);
        n := coalesce(cardinality(types), 0);
        in_names := ARRAY(SELECT coalesce(p.proargnames[u.o], '')
                          FROM unnest(coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[n]))) WITH ORDINALITY u(m, o)
                          WHERE u.m IN ('i', 'b', 'v') ORDER BY u.o);
        -- Every argument text.
        results := results || planted.shadow(target, p.oid, array_fill('text'::text, ARRAY[n]), in_names, p.pronargdefaults);
        -- Polymorphic and "any" arguments made concrete.
        results := results || planted.shadow(target, p.oid,
            ARRAY(SELECT planted.concrete(u.t) FROM unnest(types) WITH ORDINALITY u(t, o) ORDER BY u.o),
            in_names, p.pronargdefaults);
        -- Numeric arguments made integer.
        IF NOT EXISTS (SELECT FROM unnest(types) u(t) JOIN pg_type y ON y.oid = u.t WHERE y.typtype = 'p') THEN
            results := results || planted.shadow(target, p.oid,
                ARRAY(SELECT CASE WHEN u.t IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype, 'float4'::regtype,
                                               'float8'::regtype, 'numeric'::regtype)
                                  THEN 'integer' ELSE format_type(u.t, NULL) END
                      FROM unnest(types) WITH ORDINALITY u(t, o) ORDER BY u.o),
                in_names, p.pronargdefaults);
        END IF;
        -- VARIADIC: 1 to 3 variadic arguments, text, and for "any" every mix
        -- of text, integer and bigint.
        IF p.provariadic <> 0 THEN
            fixed := ARRAY(SELECT planted.concrete(u.t) FROM unnest(types[1:n - 1]) WITH ORDINALITY u(t, o) ORDER BY u.o);
            FOR k IN 1 .. 3 LOOP
                results := results || planted.shadow(target, p.oid, array_fill('text'::text, ARRAY[n - 1 + k]),
                                                     in_names[1:n - 1], 0);
                IF p.provariadic = '"any"'::regtype THEN
                    FOR combo IN WITH RECURSIVE c(a) AS (
                                     SELECT '{}'::text[]
                                     UNION ALL
                                     SELECT c.a || v.t FROM c, unnest('{text,integer,bigint}'::text[]) v(t)
                                     WHERE cardinality(c.a) < k)
                                 SELECT c.a FROM c WHERE cardinality(c.a) = k LOOP
                        results := results || planted.shadow(target, p.oid, fixed || combo, in_names[1:n - 1], 0);
                    END LOOP;
                END IF;
            END LOOP;
        END IF;
    END LOOP;
    RETURN QUERY SELECT r, count(*) FROM unnest(results) r GROUP BY r ORDER BY r;
END
$f$;
};
my $names_array = 'ARRAY[' . join(',', map { "'$_'" } @builtins) . ']';
my %schemas;
for my $s (@servers)
{
	my ($n, $db, $name) = ($s->{node}, $s->{db}, $s->{name});
	is($n->safe_psql($db, 'SELECT current_user'), $su, "$name: the superuser is $su");
	is($n->safe_psql($db, 'SHOW search_path'), '"$user", public', "$name: its search path is the default");
	$n->safe_psql($db, 'CREATE ROLE planter LOGIN; GRANT sharded_id_provisioner TO planter');
	is($pinned->($n, $db, q{SELECT rolsuper::text || has_database_privilege('planter', current_database(), 'CREATE')::text
		FROM pg_roles WHERE rolname = 'planter'}), 'falsetrue', "$name: the planter is no superuser, and may create schemas");
	my @targets = ($su);
	push @targets, 'public' if $pinned->($n, $db, q{SELECT has_schema_privilege('planter', 'public', 'CREATE')}) eq 't';
	note("$name: the planter may create in: " . join(', ', @targets));
	my $sql = $plant_sql . qq{CREATE SCHEMA "$su";\nGRANT USAGE ON SCHEMA "$su" TO PUBLIC;\n};
	$sql .= join('', map { "SELECT outcome || '|' || shadows FROM planted.plant('$_', $names_array);\n" } @targets);
	my %outcome;
	for my $line (split /\n/, $n->safe_psql($db, $sql, extra_params => [ '-U', 'planter' ]))
	{
		my ($what, $count) = $line =~ /^(.*)\|(\d+)$/ or next;
		$outcome{ $what =~ /^refused/ ? 'refused' : $what } += $count;
		note("$name: $count shadows $what") if $what =~ /^refused/;
	}
	cmp_ok($outcome{planted} // 0, '>', 0, "$name: the planter planted " . ($outcome{planted} // 0) . ' shadows in '
		  . join(', ', @targets) . ' (' . ($outcome{refused} // 0) . ' refused, '
		  . ($outcome{'identical to a built-in'} // 0) . ' identical to a built-in)');
	$schemas{$name} = \@targets;
	is($pinned->($n, $db, qq{SELECT nspowner::regrole FROM pg_namespace WHERE nspname = '$su'}), 'planter',
		"$name: schema \"$su\" is the planter's");
}

# 3. Without a pinned path, the shadows win.
my %ran_at;
my $ran = sub {
	my ($s) = @_;
	return $pinned->($s->{node}, $s->{db}, 'SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM planted.ran');
};
my @bait = (
	q{concat_ws('-', 'a', 'b')},
	q{format('%s', 'x')},
	q{jsonb_build_object('k', 'v')},
	q{format('shard %s on %s', 1, 'a')},
	q{make_interval(secs => 5)});
my $live = sub {
	my ($what) = @_;
	for my $s (@servers)
	{
		my $before = $ran->($s);
		for my $call (@bait)
		{
			is($s->{node}->safe_psql($s->{db}, "SELECT $call IS NULL"), 't',
				"$what: on the $s->{name}, unpinned $call returns the planted NULL");
		}
		is($ran->($s) - $before, scalar(@bait), "$what: planted.ran counted " . scalar(@bait) . " runs on the $s->{name}");
	}
};
$live->('before');

# From here on, no shadow may run: planted.ran starts again, and the server
# logs are read from here.
my %log_at;
for my $s (@servers)
{
	$s->{node}->safe_psql($s->{db}, 'ALTER SEQUENCE planted.ran RESTART');
	$ran_at{ $s->{name} } = 0;
	$log_at{ $s->{name} } = -s $s->{node}->logfile;
}
my %down;
my $log_since = sub {
	my ($s) = @_;
	open my $fh, '<:raw', $s->{node}->logfile or die "could not read the log of $s->{name}: $!";
	seek($fh, $log_at{ $s->{name} }, 0);
	local $/;
	my $text = <$fh> // '';
	close $fh;
	$log_at{ $s->{name} } += length($text);
	return $text;
};
# After each call: no shadow ran on any server that is up.
my $no_shadow_ran = sub {
	my ($what) = @_;
	for my $s (@servers)
	{
		next if $down{ $s->{name} };
		my $now = $ran->($s);
		my @lines = split /\n/, $log_since->($s);
		my @hits;
		for my $i (0 .. $#lines)
		{
			push @hits, @lines[ $i .. ($i + 3 > $#lines ? $#lines : $i + 3) ] if $lines[$i] =~ /planted shadow/;
		}
		is($now - $ran_at{ $s->{name} }, 0, "$what: planted.ran did not move on the $s->{name}")
		  or diag(join("\n", @hits));
		is(scalar(grep { /WARNING:  planted shadow/ } @hits), 0, "$what: the log of the $s->{name} shows no planted function")
		  or diag(join("\n", @hits));
		$ran_at{ $s->{name} } = $now;
	}
};

my $bindir = `pg_config --bindir`;
chomp $bindir;
my $connstr = $router->connstr('router');
my $run_tool = sub {
	my (@cmd) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	return ($ok, $out, $err);
};
my $call = sub {
	my ($sql) = @_;
	return $router->psql('router', $sql);
};
my $unfinished = sub {
	return $pinned->($router, 'router', 'SELECT count(*) FROM sharded_id.moves WHERE finished_at IS NULL');
};

# 4. The calls.
my ($ret, $out, $err) = $call->(q{CALL sharded_id.move_shard(1, 'b', dry_run => true)});
like($err, qr/would move shard 1 .* from node "a" to node "b"/, 'a dry run prints its plan') or diag($err);
$no_shadow_ran->('move_shard, dry run');

move_under_writers($router, \%node, 1, 'online move', 'online');
$no_shadow_ran->('move_shard online, under writers');

move_under_writers($router, \%node, 2, 'dump move', 'dump');
$no_shadow_ran->('move_shard by dump, under writers');

my $ok;
($ok, $out, $err) = $run_tool->("$bindir/sharded_id_move_shard", '--shard', 1, '--to-node', 'a', '--router', $connstr);
ok($ok, 'sharded_id_move_shard moves shard 1 back to a') or diag("$out\n$err");
like($out, qr/^outcome: moved$/m, 'sharded_id_move_shard says moved');
$no_shadow_ran->('sharded_id_move_shard');
# Where the tool failed, the shard moves by CALL, so that what follows
# finds the shards where it expects them.
if (map_owner($router, 1) ne 'a')
{
	($ret, $out, $err) = $call->(q{CALL sharded_id.move_shard(1, 'a')});
	is($ret, 0, 'shard 1 moves back to a by CALL') or diag($err);
	$no_shadow_ran->('move_shard, shard 1 back to a');
}

($ok, $out, $err) = $run_tool->("$bindir/sharded_id_rebalance", '--router', $connstr, '--dry-run');
ok($ok, 'sharded_id_rebalance --dry-run') or diag("$out\n$err");
like($out, qr/^move shard 3 from node "a" to node "b"$/m, 'sharded_id_rebalance --dry-run prints the plan')
  or diag($out);
$no_shadow_ran->('sharded_id_rebalance --dry-run');

is($router->safe_psql('router', q{SELECT count(*) FROM sharded_id.rebalance_plan()}), '1', 'rebalance_plan: one move');
($ret, $out, $err) = $call->(q{CALL sharded_id.rebalance(dry_run => true)});
like($err, qr/move 1\/1: shard 3 from node "a" to node "b"/, 'rebalance, dry run: prints the plan') or diag($err);
($ret, $out, $err) = $call->(q{CALL sharded_id.rebalance()});
is($ret, 0, 'rebalance moves shard 3') or diag($err);
is(map_owner($router, 3), 'b', 'rebalance: the map names b for shard 3');
$no_shadow_ran->('rebalance_plan and rebalance, dry run and real');

($ok, $out, $err) = $run_tool->("$bindir/sharded_id_rebalance", '--router', $connstr);
ok($ok && $out =~ /^rebalanced: 0 moves$/m, 'sharded_id_rebalance: nothing to move') or diag("$out\n$err");
$no_shadow_ran->('sharded_id_rebalance');

# The mover's hold point (see hold_on in ShardedIdTest.pm), held by a
# session whose path is pinned: unpinned, its pg_sleep(3600) would run the
# planted pg_sleep(integer) and let go of the hold at once.
my $hold_on = sub {
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $connstr, '-c', 'SET search_path = pg_catalog, pg_temp',
			'-c', 'SELECT pg_advisory_lock(' . HOLD_CLASS . ', 0)', '-c', 'SELECT pg_sleep(3600)' ],
		'>', \my $o, '2>', \my $e);
	$router->poll_query_until('router', "SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory'
		AND classid = " . HOLD_CLASS . " AND objid = 0 AND mode = 'ExclusiveLock' AND granted")
	  or die "the hold was not taken: $e";
	return $h;
};
my $hold_off = sub {
	my ($h) = @_;
	$pinned->($router, 'router', "SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory'
		AND classid = " . HOLD_CLASS . " AND objid = 0 AND mode = 'ExclusiveLock' AND granted");
	$h->finish;
};

# A move whose session ends while it waits at its copy step's hold point
# (sharded_id.move_hold): journaled, unfinished.
my $cut_move = sub {
	my ($shard, $to) = @_;
	my $app = "path_cut_$shard";
	my $holder = $hold_on->();
	my ($o, $e) = ('', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', "$connstr application_name=$app",
			'-c', q{SET sharded_id.move_hold = 'copy'}, '-c', "CALL sharded_id.move_shard($shard, '$to')" ],
		'>', \$o, '2>', \$e);
	wait_at_hold($router, $app) or die "the move of shard $shard did not reach its hold point: $e";
	is($pinned->($router, 'router', "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
		WHERE application_name = '$app'"), 't', "the session of the move of shard $shard ended at its copy step");
	$h->finish;
	$hold_off->($holder);
	is($pinned->($router, 'router', "SELECT state FROM sharded_id.moves WHERE shard_id = $shard AND finished_at IS NULL"),
		'copy', "the move of shard $shard is unfinished, at its copy step");
};

# Two unfinished moves whose target is down: recover_moves fails with its
# combined error.
$cut_move->(0, 'b');
$cut_move->(1, 'b');
$no_shadow_ran->('two moves cut at their copy step');
$node{b}->stop('fast');
$down{'node b'} = 1;
($ret, $out, $err) = $call->(q{CALL sharded_id.recover_moves()});
isnt($ret, 0, 'recover_moves with the target down fails');
like($err, qr/DETAIL:  .*2 unfinished moves could not be recovered; the warnings name the others\./s,
	'recover_moves: the combined error counts 2 unrecoverable moves') or diag($err);
like($err, qr/WARNING:  move \d+ of shard \d+ is still unfinished/, 'recover_moves: a warning names the other move')
  or diag($err);
is($unfinished->(), '2', 'both moves are still unfinished');
$no_shadow_ran->('recover_moves, 2 moves unrecoverable');
$node{b}->start;
delete $down{'node b'};
($ret, $out, $err) = $call->(q{CALL sharded_id.recover_moves()});
is($ret, 0, 'recover_moves once the target is back') or diag($err);
is($unfinished->(), '0', 'no move is left unfinished');
is(map_owner($router, 0) . map_owner($router, 1), 'aa', 'shards 0 and 1 stayed on a');
$no_shadow_ran->('recover_moves, both recovered');

# A move that first finishes the unfinished one of its shard.
$cut_move->(0, 'b');
($ret, $out, $err) = $call->(q{CALL sharded_id.move_shard(0, 'b')});
is($ret, 0, 'a move of shard 0 after its unfinished one') or diag($err);
like($err, qr/finishing move \d+ of shard 0, which did not end/, 'it finished the earlier move first') or diag($err);
is(map_owner($router, 0), 'b', 'shard 0 is on b');
$no_shadow_ran->('move_shard finishing an unfinished move');

# A move whose cleanup waits for a reader of the ops tables, and the
# recovery that does it.
my $reader = IPC::Run::start([ 'psql', '-X', '-q', '-d', $connstr,
	'-c', 'SET application_name = ops_reader', '-c', 'SET ROLE analyst',
	'-c', 'SELECT FROM ops.photos WHERE false; SELECT pg_catalog.pg_sleep(3600)' ], '>', \my $rout, '2>', \my $rerr);
$router->poll_query_until('router', q{SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	WHERE l.relation = 'ops.photos'::regclass AND a.application_name = 'ops_reader' AND l.granted})
  or die "the reader took no lock: $rerr";
($ret, $out, $err) = $call->(q{SET lock_timeout = '2s'; CALL sharded_id.move_shard(2, 'a')});
is($ret, 0, 'a move past a reader of the ops tables') or diag($err);
like($err, qr/its cleanup is pending/, 'its cleanup is pending') or diag($err);
$pinned->($router, 'router', q{SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = 'ops_reader'});
$reader->finish;
$no_shadow_ran->('move_shard with its cleanup deferred');
($ret, $out, $err) = $call->(q{CALL sharded_id.recover_moves()});
is($ret, 0, 'recover_moves does the deferred cleanup') or diag($err);
like($err, qr/its deferred cleanup is done/, 'recover_moves reports the deferred cleanup done') or diag($err);
is($pinned->($router, 'router', 'SELECT count(*) FROM sharded_id.move_cleanup'), '0', 'no cleanup is left');
$no_shadow_ran->('recover_moves, a deferred cleanup');

# The router's other calls.
is($router->safe_psql('router', q{SELECT sharded_id.place_shard(2, 'a')}), 'a', 'place_shard on the node that holds it');
is($router->safe_psql('router', q{SELECT sharded_id.apply_shard_map()}), $shard_count, 'apply_shard_map');
cmp_ok($router->safe_psql('router', q{SELECT count(*) FROM sharded_id.move_progress}), '>', 0, 'move_progress');
$no_shadow_ran->('place_shard, apply_shard_map, move_progress');

# A data node's calls.
my $a = $node{a};
($ret, $out, $err) = $a->psql('app', q{
	SELECT sharded_id.create_shard(10);
	SELECT sharded_id.create_shards(11, 12);
	CALL sharded_id.provision_shards(10, 13, 2);
	SELECT length(sharded_id.schema_ddl('shard_0010')) > 0;
	SELECT count(*) > 0 FROM sharded_id.schema_inventory('shard_0010');
	SELECT sharded_id.raise_floors();
	SELECT sharded_id.retire_shard(13);
	SELECT sharded_id.create_shard(13);
	SELECT sharded_id.shard_schema(13);
	SELECT sharded_id.shard_max_id(1);
	SELECT sharded_id.high_water(1);
	SELECT count(*) FROM sharded_id.floors();
	SELECT count(*) FROM sharded_id.current_settings();
	SELECT sharded_id.drop_shard(10);
	SELECT sharded_id.drop_shard(11);
	SELECT sharded_id.drop_shard(12);
	SELECT sharded_id.drop_shard(13);});
is($ret, 0, 'node a: create_shard, create_shards, provision_shards, schema_ddl, schema_inventory, raise_floors, '
	  . 'retire_shard, drop_shard and the readers run') or diag($err);
is($pinned->($a, 'app', q{SELECT count(*) FROM pg_namespace WHERE nspname IN ('shard_0010', 'shard_0011', 'shard_0012', 'shard_0013')}),
	'0', 'node a: the shards made there are dropped');
($ret, $out, $err) = $node{b}->psql('app', q{
	SELECT sharded_id.schema_ddl('shard_0000') IS NOT NULL;
	SELECT count(*) FROM sharded_id.schema_inventory('shard_0003');
	SELECT sharded_id.raise_floors();});
is($ret, 0, 'node b: schema_ddl, schema_inventory, raise_floors') or diag($err);
$no_shadow_ran->('the data nodes\' calls');

# Every row is still where the map says, once.
my @ids = all_ids(values %node);
my %seen;
is(scalar(grep { $seen{$_}++ } @ids), 0, 'no id repeats over the nodes (' . scalar(@ids) . ' ids)');

# The shadows were there all along.
$live->('after');

done_testing();
