# test/perl/ShardedIdTest.pm
#
# Helpers shared by the TAP tests of test/t/: clusters with sharded_id
# preloaded, minting ids into a table under a primary key, reading back
# the times of what was minted, the durable ceiling, a wall clock moved
# with libfaketime, and data nodes behind a PL/Proxy router built from the
# demo application in test/example; the shard map's owner of a shard,
# writers through the router, the mover's hold points, and the classes of
# the advisory locks the tests read in pg_locks.
package ShardedIdTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use IPC::Run;

our @EXPORT = qw(reader_path sharded_node mint phase_ms read_ceiling faked_clock move_under_writers
  data_node router_node all_ids restart_node router_writers stop_router_writers map_owner
  logged_writers committed writers_go_on stop_writers
  hold_on hold_off wait_at_hold hold_pause
  HOLD_CLASS ROUTE_LOCK_CLASS MOVE_LOCK_CLASS FENCE_CLASS KEY_PAIR_KIND SHARD_LOCK_KIND);

# The classes (objid's neighbour classid in pg_locks) of the advisory locks
# the tests look for, four ASCII letters each, as in src/locks.h and
# src/sql/api/moves.sql; written here only.
use constant {
	# "shis", router: a move with sharded_id.move_hold set waits at that
	# point while another session holds pg_advisory_lock(HOLD_CLASS, 0).
	HOLD_CLASS => 1936222579,
	# "shir", router: a shard's route lock (route(), a move's switch,
	# place_shard).
	ROUTE_LOCK_CLASS => 1936222578,
	# "shim", router: one move of a shard at a time.
	MOVE_LOCK_CLASS => 1936222573,
	# "shid", data node: a shard's fence (enter_shard, a move's freeze).
	FENCE_CLASS => 1936222564,
	# objsubid of a lock taken by pg_advisory_*(class, key): two int4 keys.
	KEY_PAIR_KIND => 2,
	# objsubid of the shard locks (SHID_LOCK_KIND), which no pg_advisory_*
	# function can take.
	SHARD_LOCK_KIND => 3,
};

my $example = dirname(__FILE__) . '/../example';

# PostgreSQL 17 and later's PostgreSQL::Test::Cluster copies the data
# directory of a new server from $ENV{INITDB_TEMPLATE} rather than run
# initdb; test/tap.sh makes one per major.  15's runs initdb every time:
# given SHID_INITDB_TEMPLATE, its plain initdb call (no extra options)
# copies the template too.
if (my $template = $ENV{SHID_INITDB_TEMPLATE})
{
	no warnings 'redefine';
	my $system_or_bail = \&PostgreSQL::Test::Utils::system_or_bail;
	*PostgreSQL::Test::Utils::system_or_bail = sub {
		if (@_ == 6 && $_[0] eq 'initdb' && "@_[1, 3, 4, 5]" eq '-D -A trust -N')
		{
			note('initializing database system by copying initdb template');
			return $system_or_bail->('cp', '-RPp', $template, $_[2]);
		}
		return $system_or_bail->(@_);
	};
}

# A new cluster with sharded_id preloaded, plus the postgresql.conf lines
# in $opt{conf}; $opt{init} is passed to init.  Not started.
# The PATH a reader's shell has on Debian, for running a document's shell
# blocks as written: the newest installed major's psql, pg_dump, pg_restore
# and pg_dumpall first (Debian's wrappers in /usr/bin pick that one too),
# then the test's own PATH.  A block that relies on the default client
# against an older server then breaks as it would for the reader (an 18
# pg_dump's SET transaction_timeout, refused by 15).  Against the newest
# installed major itself there is no newer client: the block runs with that
# major's.  Returns (PATH, major of that client).
sub reader_path
{
	my ($major) = sort { $b <=> $a } grep { -x "/usr/lib/postgresql/$_/bin/pg_dump" }
	  map { m{/(\d+)$} ? $1 : () } glob('/usr/lib/postgresql/*');
	return ($ENV{PATH}, undef) unless defined $major;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	symlink("/usr/lib/postgresql/$major/bin/$_", "$dir/$_") or die "symlink $_: $!"
	  for grep { -x "/usr/lib/postgresql/$major/bin/$_" } qw(psql pg_dump pg_restore pg_dumpall);
	return ("$dir:$ENV{PATH}", $major);
}

sub sharded_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%{ $opt{init} // {} });
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'sharded_id'\n" . ($opt{conf} // ''));
	return $node;
}

# Insert n ids made by the SQL expression $call into table ids (id, phase)
# in one statement.  The table's primary key turns any repeat into an
# error, and so into a failed test.
sub mint
{
	my ($node, $call, $phase, $n) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"INSERT INTO ids SELECT $call, $phase FROM generate_series(1, $n)");
	is($ret, 0, "phase $phase: $n ids inserted under a primary key")
	  or diag($stderr);
	return $ret == 0;
}

# Unix milliseconds of the oldest ('min') or newest ('max') id of a phase.
sub phase_ms
{
	my ($node, $agg, $phase) = @_;
	return $node->safe_psql('postgres',
		"SELECT (extract(epoch FROM $agg(sharded_id.created_at(id))) * 1000)::bigint FROM ids WHERE phase = $phase"
	);
}

# The durable ceiling in the node's sharded_id.state, in Unix ms, or undef.
sub read_ceiling
{
	my ($node) = @_;
	my $file = $node->data_dir . '/sharded_id.state';
	return undef unless -f $file;
	my ($ceiling) = slurp_file($file) =~ /^(?:ceiling|sharded_id clock ceiling) (\d+)$/m;
	return $ceiling;
}

# A wall clock for $node, moved with libfaketime: returns a function that
# sets the clock ('+0', '-1h', '@2047-01-01 00:00:00', ...) and a function
# that starts the node with that clock.  The monotonic clock stays real.
sub faked_clock
{
	my ($node) = @_;
	my ($lib) = glob('/usr/lib/*/faketime/libfaketime.so.1');
	die "libfaketime is not installed (apt-get install libfaketime)"
	  unless defined $lib && -f $lib;
	my $file = PostgreSQL::Test::Utils::tempdir() . '/clock';
	my $set = sub {
		open my $fh, '>', $file or die "could not write $file: $!";
		print $fh "$_[0]\n";
		close $fh;
	};
	my $start = sub {
		local $ENV{LD_PRELOAD} = $lib;
		local $ENV{FAKETIME_TIMESTAMP_FILE} = $file;
		local $ENV{FAKETIME_NO_CACHE} = '1';
		local $ENV{FAKETIME_DONT_FAKE_MONOTONIC} = '1';
		$node->start;
	};
	$set->('+0');
	return ($set, $start);
}

# Nodes started with a faked clock: name => the function that starts one.
my %clock_start;

# Stop $node ('immediate' or 'fast') and start it again, with the faked
# clock it was made with, if any.
sub restart_node
{
	my ($node, $mode) = @_;
	$node->stop($mode // 'fast');
	if ($clock_start{ $node->name }) { $clock_start{ $node->name }->(); }
	else { $node->start; }
}

# A started data node of the demo application: database app with the
# templates, the shards in @{$opt{shards}}, the data-node API for
# $opt{shard_count} shards, and two test helpers: all_ids(), every id on
# the node, and misplaced_ids(), how many ids do not decode to the shard
# that stores them.  $opt{init} is passed to init, $opt{conf} appended to
# postgresql.conf; $opt{clock} ('-2s', '-1h', ...) runs the node on a
# clock moved by libfaketime; $opt{mode} is the shards' id mode.
sub data_node
{
	my ($name, %opt) = @_;
	my $node = sharded_node($name, init => $opt{init}, conf => $opt{conf});
	if (defined $opt{clock})
	{
		my ($set, $start) = faked_clock($node);
		$set->($opt{clock});
		$clock_start{$name} = $start;
		$start->();
	}
	else
	{
		$node->start;
	}
	$node->safe_psql('postgres', 'CREATE DATABASE app');
	my $shards = join(',', @{ $opt{shards} // [] });
	my $mode = $opt{mode} // 'seed';
	$node->safe_psql('app', 'CREATE EXTENSION sharded_id; '
		  . PostgreSQL::Test::Utils::slurp_file("$example/templates.sql") . "
		SELECT sharded_id.configure(mode => '$mode');
		SELECT sharded_id.add_table('app.users');
		SELECT sharded_id.add_table('app.photos');
		SELECT count(sharded_id.create_shard(s)) FROM unnest('{$shards}'::int[]) s;");
	$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-v', "shard_count=$opt{shard_count}",
		'-f', "$example/node_api.sql", '-d', $node->connstr('app')],
		"$name: data-node API installed");
	$node->safe_psql('app', q{
		CREATE FUNCTION all_ids() RETURNS SETOF bigint LANGUAGE plpgsql AS $$
		DECLARE s record;
		BEGIN
			FOR s IN SELECT schema_name FROM sharded_id.shards LOOP
				RETURN QUERY EXECUTE format('SELECT id FROM %1$I.users UNION ALL SELECT id FROM %1$I.photos', s.schema_name);
			END LOOP;
		END $$;
		CREATE FUNCTION misplaced_ids() RETURNS bigint LANGUAGE plpgsql AS $$
		DECLARE s record; n bigint; total bigint := 0;
		BEGIN
			FOR s IN SELECT shard_id, schema_name FROM sharded_id.shards LOOP
				EXECUTE format('SELECT count(*) FROM (SELECT id, id AS owner FROM %1$I.users
				                UNION ALL SELECT id, user_id FROM %1$I.photos) t
				                WHERE sharded_id.shard_id(id) <> $1 OR sharded_id.shard_id(owner) <> $1', s.schema_name)
				INTO n USING s.shard_id;
				total := total + n;
			END LOOP;
			RETURN total;
		END $$;});
	return $node;
}

# A started router over the data nodes in %$nodes (name => node), with the
# shard map in %$map (shard => node name) applied, the router API for
# $shard_count shards and the ops table ops.photos.  Its name is $name, or
# router.  With $clock, a reference to a scalar, the router runs on a wall
# clock moved by libfaketime, $$clock becomes the function that sets it
# (see faked_clock), and restart_node keeps it.
sub router_node
{
	my ($nodes, $map, $shard_count, $name, $clock) = @_;
	my $router = PostgreSQL::Test::Cluster->new($name // 'router');
	$router->init;
	if ($clock)
	{
		my ($set, $start) = faked_clock($router);
		$$clock = $set;
		$clock_start{ $router->name } = $start;
		$start->();
	}
	else
	{
		$router->start;
	}
	$router->safe_psql('postgres', 'CREATE DATABASE router');
	$router->safe_psql('router', 'CREATE EXTENSION plproxy; CREATE EXTENSION postgres_fdw;
		CREATE EXTENSION dblink; CREATE EXTENSION sharded_id; CREATE EXTENSION sharded_id_router; ' . PostgreSQL::Test::Utils::slurp_file("$example/templates.sql"));
	for my $name (sort keys %$nodes)
	{
		my $connstr = $nodes->{$name}->connstr('app');
		$router->safe_psql('router', "INSERT INTO sharded_id.nodes VALUES ('$name', \$c\$$connstr\$c\$)");
	}
	$router->safe_psql('router', 'INSERT INTO sharded_id.shard_map VALUES '
		  . join(', ', map { "($_, '$map->{$_}')" } sort { $a <=> $b } keys %$map));
	is($router->safe_psql('router', 'SELECT sharded_id.apply_shard_map()'), scalar(keys %$map),
		'the PL/Proxy cluster has one partition per logical shard');
	$router->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-v', "shard_count=$shard_count",
		'-f', "$example/router_api.sql", '-d', $router->connstr('router')], 'router API installed');
	$router->safe_psql('router', q{SELECT sharded_id.create_ops_table('app.photos')});
	return $router;
}

# Two pgbench clients through $router for $seconds, adding photos captioned
# $opt{caption} ('during the move' by default) for the users of its table
# demo_users that $where picks, retrying a write up to $opt{max_tries} times
# on 40001 (1000 by default; 0: pgbench's default of no retry, without
# --max-tries).  $seconds undef: until stop_router_writers ends them (or
# the default timeout).  Returns the harness and a reference to pgbench's
# output.
sub router_writers
{
	my ($router, $where, $seconds, %opt) = @_;
	$seconds //= $PostgreSQL::Test::Utils::timeout_default;
	my $caption = $opt{caption} // 'during the move';
	my $tries = $opt{max_tries} // 1000;
	my $users = $router->safe_psql('router', "DROP TABLE IF EXISTS writer_users;
		CREATE TABLE writer_users AS SELECT row_number() OVER (ORDER BY n) AS k, user_id FROM demo_users WHERE $where;
		SELECT count(*) FROM writer_users");
	my $script = $router->basedir . '/writer.sql';
	open my $fh, '>', $script or die $!;
	print $fh "\\set k random(1, $users)\n"
	  . "SELECT app_api.add_photo(user_id, '$caption') FROM writer_users WHERE k = :k;\n";
	close $fh;
	my $out = '';
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-c', '2', '-j', '2', '-T', $seconds, ($tries ? ("--max-tries=$tries") : ()),
		  '-f', $script, $router->connstr('router') ],
		'>', \$out, '2>&1');
	return ($h, \$out);
}

# End the writers of router_writers once they have committed $n more rows
# (20 by default) that the query $count_sql counts, then wait for pgbench to
# exit.  SIGALRM ends a pgbench -T run as its clock does: each client
# finishes its transaction, and pgbench prints its report.  True if pgbench
# exited 0.
sub stop_router_writers
{
	my ($router, $h, $count_sql, $n) = @_;
	$n //= 20;
	my $before = $router->safe_psql('router', $count_sql);
	my $went_on = $router->poll_query_until('router', "SELECT ($count_sql) >= $before + $n");
	diag("the writers did not commit $n more rows") unless $went_on;
	$h->signal('ALRM');
	my $exited = $h->finish;
	return $went_on && $exited;
}

# The data node that the shard map of $router names for shard $shard, as
# read in its database $db ('router' by default).
sub map_owner
{
	my ($router, $shard, $db) = @_;
	return $router->safe_psql($db // 'router', "SELECT node_name FROM sharded_id.shard_map WHERE shard_id = $shard");
}

# Two writers through $router, each one psql session (a new one whenever
# the last ended), adding photos captioned $caption for the users of
# demo_users whose shard is in @shards, one statement at a time, each
# logging the id of every row it saw committed (test/perl/logged_writer.pl).
# Returns the writers, for committed, writers_go_on and stop_writers.
my $writers_no = 0;
sub logged_writers
{
	my ($router, $caption, @shards) = @_;
	my $no = ++$writers_no;
	my $dir = $router->basedir . "/writers_$no";
	mkdir $dir;
	my $list = join(',', @shards);
	my $users = $router->safe_psql('router', "DROP TABLE IF EXISTS writer_users_$no;
		CREATE TABLE writer_users_$no AS SELECT row_number() OVER (ORDER BY n) AS k, user_id
		FROM demo_users WHERE sharded_id.shard_id(user_id) IN ($list);
		SELECT count(*) FROM writer_users_$no");
	my $sql = "SELECT app_api.add_photo(user_id, '$caption') FROM writer_users_$no WHERE k = %d";
	my @h;
	for my $w (1, 2)
	{
		push @h, IPC::Run::start([ $^X, dirname(__FILE__) . '/logged_writer.pl',
			$router->connstr('router'), $sql, $users, "$dir/stop", "$dir/ids.$w" ],
			'<', \undef, '>>', "$dir/out.$w", '2>>', "$dir/errors.$w");
	}
	return { dir => $dir, h => \@h };
}

# The ids the writers saw committed so far.
sub committed
{
	my ($w) = @_;
	return grep { /^\d+$/ } map { split /\n/, slurp_file($_) } glob("$w->{dir}/ids.*");
}

# Wait until the writers have committed $n more rows; true if they did
# within the default timeout.
sub writers_go_on
{
	my ($w, $n) = @_;
	my $before = () = committed($w);
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	select(undef, undef, undef, 0.05) while scalar(() = committed($w)) < $before + $n && time < $deadline;
	return scalar(() = committed($w)) >= $before + $n;
}

# Stop the writers and wait for them to exit.
sub stop_writers
{
	my ($w) = @_;
	open my $stop, '>', "$w->{dir}/stop" or die $!;
	close $stop;
	$_->finish for @{ $w->{h} };
}

# Hold points.  A move with sharded_id.move_hold = 'point' waits after
# journaling that step while another session of the router holds advisory
# lock (HOLD_CLASS, 0).  hold_on($router, $key) starts a session that takes
# (HOLD_CLASS, $key) ($key 0 by default) and returns its harness once the
# lock is granted; hold_off($router, $key) ends that session.  Both take
# the database as a third argument, 'router' by default: a hold is of its
# database.
my %holders;
sub hold_on
{
	my ($router, $key, $db) = @_;
	$key //= 0;
	$db //= 'router';
	my $h = IPC::Run::start([ 'psql', '-X', '-q', '-d', $router->connstr($db),
		'-c', 'SELECT pg_advisory_lock(' . HOLD_CLASS . ", $key)", '-c', 'SELECT pg_catalog.pg_sleep(3600)' ],
		'>', \my $o, '2>', \my $e);
	$holders{ $router->name . "/$db/$key" } = $h;
	$router->poll_query_until($db, "SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory'
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = " . HOLD_CLASS . " AND objid = $key AND mode = 'ExclusiveLock' AND granted")
	  or die "hold $key was not taken";
	return $h;
}

sub hold_off
{
	my ($router, $key, $db) = @_;
	$key //= 0;
	$db //= 'router';
	$router->safe_psql($db, "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = " . HOLD_CLASS . " AND objid = $key AND mode = 'ExclusiveLock' AND granted");
	my $h = delete $holders{ $router->name . "/$db/$key" };
	eval { $h->finish if $h; };
}

# Wait until the session of $router named $application_name waits for hold
# $key (0 by default); true if it did within the default timeout.
sub wait_at_hold
{
	my ($router, $application_name, $key) = @_;
	$key //= 0;
	return $router->poll_query_until('router', "SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE a.application_name = '$application_name' AND l.locktype = 'advisory' AND l.classid = " . HOLD_CLASS . "
		  AND l.objid = $key AND NOT l.granted");
}

# Two statements that wait, in a session's list of commands, while hold
# $key is held.
sub hold_pause
{
	my ($key) = @_;
	return ('SELECT pg_advisory_lock_shared(' . HOLD_CLASS . ", $key)",
		'SELECT pg_advisory_unlock_shared(' . HOLD_CLASS . ", $key)");
}

# Every id on the given data nodes.
sub all_ids
{
	return map { split /\n/, $_->safe_psql('app', 'SELECT * FROM all_ids()') } @_;
}

# An online move of shard $shard through $router under 2 pgbench writers
# without --max-tries, to the data node of %$nodes that does not hold it
# (of two): it completes, no write fails, and every row the writers
# committed is on the new owner, with no id repeated over the nodes.
# $what names the case in the tests' names; $method is move_shard's (its
# default when undef).  Returns the move's stderr.
sub move_under_writers
{
	my ($router, $nodes, $shard, $what, $method) = @_;
	my $owner = sub { return map_owner($router, $shard); };
	my $from = $owner->();
	my ($to) = grep { $_ ne $from } sort keys %$nodes;
	my $tag = "w$what";
	# The writers run until they have written 20 rows after the move, however
	# long it takes (stop_router_writers).
	my ($writers, $w_ref) = router_writers($router, "sharded_id.shard_id(user_id) = $shard", undef,
		caption => $tag, max_tries => 0);
	my $count = "SELECT count(*) FROM ops.photos WHERE caption = '$tag' AND sharded_id.shard_id(id) = $shard";
	$router->poll_query_until('router', "SELECT ($count) > 0")
	  or die "the writers did not start: $$w_ref";
	my $with = defined $method ? ", method => '$method'" : '';
	my ($ret, $stdout, $stderr) = $router->psql('router', "CALL sharded_id.move_shard($shard, '$to'$with)");
	is($ret, 0, "$what: the move of shard $shard from $from to $to completes") or diag($stderr);
	ok(stop_router_writers($router, $writers, $count), "$what: pgbench without --max-tries wrote on after the move and exited 0")
	  or diag($$w_ref);
	my ($done) = $$w_ref =~ /number of transactions actually processed: (\d+)/;
	my ($failed) = $$w_ref =~ /number of failed transactions: (\d+)/;
	is($failed // 0, 0, "$what: 0 writes failed");
	is($owner->(), $to, "$what: the map names $to");
	my $schema = sprintf('shard_%04d', $shard);
	is($nodes->{$to}->safe_psql('app', "SELECT count(*) FROM $schema.photos WHERE caption = '$tag'"),
		$done, "$what: every one of the $done writes is on $to");
	my @ids = all_ids(values %$nodes);
	my %seen;
	is(scalar(grep { $seen{$_}++ } @ids), 0, "$what: no id repeats over the nodes (" . scalar(@ids) . ' ids)');
	return $stderr;
}

1;
