# test/t/020_runbook.pl
#
# doc/sharded_id-runbook.md runs as written.  Its blocks are extracted in
# order, each with the step line before it (server, role, database), and
# run on three fresh clusters (router, node1, node2) made as Debian makes
# them (scram-sha-256 over TCP, peer for local connections, a superuser
# postgres without a password): SQL blocks with psql -v ON_ERROR_STOP=1 as
# the named role over TCP with the runbook's password file, or locally
# through peer; shell blocks with plain bash (no options: a block that must
# stop at a failed step sets them itself) in one scratch directory, with the
# PATH of a Debian reader who also has a newer major's client installed (the
# newest installed major's psql, pg_dump and pg_restore first; on the newest
# major itself there is none newer, and the blocks run with its own), with
# ROUTER, NODE1 and NODE2 holding the servers' connection strings and
# POSTGRES_PASSWORD and APP_PASSWORD the roles' passwords;
# postgresql.conf blocks appended to the server's file before a restart,
# pg_hba.conf blocks before a reload.  Blocks as root (installing) are
# shown, not run.  The first block that fails fails the test, by name.
#
# Around the runbook's own blocks the test checks:
# - the application role is no superuser, and writes through the router
#   (logging in to the nodes as itself, by scram-sha-256) and reads the ops
#   tables (as itself, not as the superuser);
# - the pgbench writer of the online move, through the router as that
#   role, runs through the whole move and has 0 failed transactions;
# - the restore block, first run against a node1 whose shard_0006 is in
#   the way, stops, and leaves node2's rows, node1 and the map as they were;
# - after the restore, the first call through the router for the restored
#   shard succeeds and reaches the node it was restored on;
# - the recovery drill leaves a move unfinished, and recover_moves rolls
#   it back;
# - at the end, every shard is only where the map says, no id repeats over
#   the nodes, and no node keeps a slot, publication or subscription.
# Then copies of the runbook: without its password file, the first call
# from one server to another fails (fe_sendauth: no password supplied);
# without its pg_hba.conf lines, the first connection over TCP is refused;
# with one block broken, the run fails on that block, and on none before it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use File::Temp ();
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $doc_path = "$FindBin::RealBin/../../doc/sharded_id-runbook.md";
my $doc = slurp_file($doc_path);

# The passwords of the runbook's roles, as the operator would choose them.
my %passwords = map { $_ => join('', map { ('a' .. 'z', 'A' .. 'Z', 0 .. 9)[ int(rand(62)) ] } 1 .. 24) } qw(postgres app);

# The steps of a runbook: each fenced block with the step line before it.
sub parse_steps
{
	my ($text) = @_;
	my @steps;
	my $n = 0;
	while ($text =~ /^<!--[ \t]*step:[ \t]*([^\n]*?)[ \t]*-->[ \t]*\n```(\w+)\n(.*?)^```[ \t]*$/msg)
	{
		my ($spec, $lang, $body) = ($1, $2, $3);
		my %step = (n => ++$n, spec => $spec, lang => $lang, body => $body);
		if ($spec eq 'shell')
		{
			die "step $n: a shell step needs an sh block" unless $lang eq 'sh';
			$step{kind} = 'shell';
		}
		elsif ($spec =~ /^([\w, ]+?)\s+as\s+root$/)
		{
			die "step $n: a root step needs an sh block" unless $lang eq 'sh';
			$step{kind} = 'root';
			$step{servers} = [ split /\s*,\s*/, $1 ];
		}
		elsif ($spec =~ /^([\w, ]+?)\s+postgresql\.conf$/)
		{
			$step{kind} = 'conf';
			$step{servers} = [ split /\s*,\s*/, $1 ];
		}
		elsif ($spec =~ /^([\w, ]+?)\s+pg_hba\.conf$/)
		{
			$step{kind} = 'hba';
			$step{servers} = [ split /\s*,\s*/, $1 ];
		}
		elsif ($spec =~ /^([\w, ]+?)\s+as\s+(\w+)(\s+locally)?,\s*database\s+(\w+)$/)
		{
			die "step $n: an SQL step needs an sql block" unless $lang eq 'sql';
			$step{kind} = 'sql';
			$step{servers} = [ split /\s*,\s*/, $1 ];
			$step{role} = $2;
			$step{local} = defined $3;
			$step{db} = $4;
			die "step $n: a local step runs as postgres, through peer" if $step{local} && $step{role} ne 'postgres';
		}
		else
		{
			die "step $n: step line not understood: $spec";
		}
		push @steps, \%step;
	}
	# The line a reader sees before each step says the same as the step line.
	my @human = $text =~ /^([^\n]*)\n<!--[ \t]*step:/mg;
	for my $i (0 .. $#steps)
	{
		my $st = $steps[$i];
		my $servers = join(', ', @{ $st->{servers} // [] });
		my $want = $st->{kind} eq 'shell' ? '*In a shell, in the scratch directory:*'
		  : $st->{kind} eq 'root' ? "*On $servers, as root:*"
		  : $st->{kind} eq 'conf' ? "*In postgresql.conf of $servers:*"
		  : $st->{kind} eq 'hba' ? "*In pg_hba.conf of $servers:*"
		  : "*On $servers, as $st->{role}, " . ($st->{local} ? 'locally, ' : '') . "in database $st->{db}:*";
		die "step $st->{n}: the line before it reads \"" . ($human[$i] // '') . "\", not \"$want\""
		  unless defined $human[$i] && $human[$i] eq $want;
	}
	# A fenced block without a step line would be skipped silently.
	my $fences = () = $text =~ /^```\w+\s*$/mg;
	die "the runbook has $fences code blocks and " . scalar(@steps) . ' step lines'
	  unless $fences == @steps;
	return @steps;
}

# Three fresh clusters made as Debian makes them: a superuser role postgres
# without a password, password_encryption = scram-sha-256, local
# connections by peer.  Debian's pg_hba.conf also lets in TCP connections
# from the server's own host by scram-sha-256; the three servers here share
# one host, so those lines would let in every connection between them, and
# the test leaves them out: only the runbook's own lines let the servers
# reach each other, as on three hosts.  The servers listen on 127.0.0.1
# only until the runbook says otherwise.
#
# On Debian the servers run as the operating-system user postgres, so libpq
# in them logs in as postgres by default and reads that user's ~/.pgpass:
# here each server starts with PGUSER=postgres and PGPASSFILE naming the
# file .pgpass in a home directory of the three servers, which the runbook's
# shell steps (run as that user on the router's host) also read.
sub fresh_servers
{
	my ($tag) = @_;
	my %server;
	my $home = File::Temp::tempdir(DIR => PostgreSQL::Test::Utils::tempdir(), CLEANUP => 1);
	$server{home} = $home;
	$server{pgpass} = "$home/.pgpass";
	for my $name (qw(router node1 node2))
	{
		my $node = PostgreSQL::Test::Cluster->new("${tag}_$name");
		$node->init;
		$node->append_conf('postgresql.conf', "log_connections = on\npassword_encryption = 'scram-sha-256'\nlisten_addresses = '127.0.0.1'\n");
		open(my $hba, '>', $node->data_dir . '/pg_hba.conf') or die $!;
		print $hba "# as Debian's, without its lines for TCP connections from localhost\n"
		  . "local   all             all                                     peer\n"
		  . "local   replication     all                                     peer\n";
		close $hba;
		server_env(\%server, sub { $node->start });
		$node->safe_psql('postgres', 'CREATE ROLE postgres SUPERUSER LOGIN')
		  unless $node->safe_psql('postgres', "SELECT count(*) FROM pg_roles WHERE rolname = 'postgres'");
		$server{$name} = $node;
	}
	return \%server;
}

# Run code (a start or restart) with the environment of the servers.
sub server_env
{
	my ($server, $code) = @_;
	local $ENV{PGUSER} = 'postgres';
	local $ENV{PGPASSFILE} = $server->{pgpass};
	local $ENV{HOME} = $server->{home};
	$code->();
}

# A server's connection string over TCP, as the runbook's ROUTER, NODE1 and
# NODE2 hold it.
sub conninfo
{
	my ($node) = @_;
	return 'host=127.0.0.1 port=' . $node->port;
}

# psql as a role over TCP with the password file of the servers' home
# (or another): returns (success, stdout, stderr).
sub tcp_psql
{
	my ($server, $node, $db, $role, $sql, %opt) = @_;
	my ($stdout, $stderr) = ('', '');
	local $ENV{PGPASSFILE} = $opt{pgpass} // $server->{pgpass};
	my $ok = IPC::Run::run(
		[ 'psql', '-X', '-w', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', conninfo($node) . " dbname=$db user=$role" ],
		'<', \$sql, '>', \$stdout, '2>', \$stderr,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	chomp $stdout;
	return ($ok, $stdout, $stderr);
}

# Run the steps in order on the servers; after step n, $after->{n} runs
# (if any).  Steps as root are shown, not run.  $opt{client_pgpass} gives
# the runbook's psql, pgbench and pg_dump a password file of their own
# instead of the servers'.  Returns (undef, count run) when all pass, or the
# failing step's description and output.
sub run_steps
{
	my ($server, $steps, $after, %opt) = @_;
	my $scratch = File::Temp::tempdir(DIR => PostgreSQL::Test::Utils::tempdir(), CLEANUP => 1);
	local $ENV{ROUTER} = conninfo($server->{router});
	local $ENV{NODE1} = conninfo($server->{node1});
	local $ENV{NODE2} = conninfo($server->{node2});
	local $ENV{POSTGRES_PASSWORD} = $passwords{postgres};
	local $ENV{APP_PASSWORD} = $passwords{app};
	local $ENV{PGPASSFILE} = $opt{client_pgpass} // $server->{pgpass};
	local $ENV{HOME} = $server->{home};
	my ($reader_path) = reader_path();
	my $run = 0;
	for my $step (@$steps)
	{
		my $what = "step $step->{n} ($step->{spec})";
		my ($ok, $out) = (1, '');
		if ($step->{kind} eq 'root')
		{
			print "# $what: not run (it installs software as root)\n$step->{body}";
			next;
		}
		elsif ($step->{kind} eq 'conf')
		{
			for my $name (@{ $step->{servers} })
			{
				$server->{$name}->append_conf('postgresql.conf', $step->{body});
				server_env($server, sub { $server->{$name}->restart });
			}
		}
		elsif ($step->{kind} eq 'hba')
		{
			for my $name (@{ $step->{servers} })
			{
				$server->{$name}->append_conf('pg_hba.conf', $step->{body});
				$server->{$name}->reload;
			}
		}
		elsif ($step->{kind} eq 'shell')
		{
			my ($stdout, $stderr) = ('', '');
			# As a reader runs it: plain bash (a block that must stop at a
			# failed step says so itself), the newest client first on PATH.
			local $ENV{PATH} = $reader_path;
			$ok = IPC::Run::run([ 'bash', '-c', "cd '$scratch' || exit 1\n$step->{body}" ],
				'<', \undef, '>', \$stdout, '2>', \$stderr,
				IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
			$out = $stdout . $stderr;
		}
		else
		{
			for my $name (@{ $step->{servers} })
			{
				my ($stdout, $stderr) = ('', '');
				my $node = $server->{$name} or die "$what: no server $name";
				# Locally: through the server's socket, as the operating-system
				# user that peer maps to the bootstrap superuser (sudo -u
				# postgres psql on Debian).
				my $dsn = $step->{local}
				  ? $node->connstr($step->{db})
				  : conninfo($node) . " dbname=$step->{db} user=$step->{role}";
				my $r = IPC::Run::run(
					[ 'psql', '-X', '-w', '-v', 'ON_ERROR_STOP=1', '-d', $dsn ],
					'<', \$step->{body}, '>', \$stdout, '2>', \$stderr,
					IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
				$out .= "[$name]\n$stdout$stderr";
				$ok &&= $r;
				last unless $r;
			}
		}
		print "# $what\n$step->{body}# output:\n$out\n";
		return ("$what failed", $out, $step) unless $ok;
		$run++;
		$after->{ $step->{n} }->($scratch, $out) if $after && $after->{ $step->{n} };
	}
	return (undef, $run);
}

my @steps = parse_steps($doc);
ok(scalar(@steps) >= 20, 'the runbook has ' . scalar(@steps) . ' steps');

# The steps the checks hang on, found by what they do.
my ($step_of) = sub {
	my ($re) = @_;
	my @hits = grep { $_->{body} =~ $re } @steps;
	die "no single step matches $re" unless @hits == 1;
	return $hits[0]{n};
};
my $app_writes = $step_of->(qr/CREATE TEMP TABLE demo/);
my $ops_reads = $step_of->(qr/FROM ops\.users GROUP BY/);
my $writer_start = $step_of->(qr/pgbench .*writer\.sql/);
my $online_move = $step_of->(qr/CALL sharded_id\.move_shard\(3, 'node1'\)/);
my $writer_wait = $step_of->(qr/number of failed transactions/);
my $restore = $step_of->(qr/retire_shard\(6\)/);
my $place = $step_of->(qr/place_shard\(6, 'node1'\)/);
my $recover = $step_of->(qr/CALL sharded_id\.recover_moves\(\)/);
my $pgpass_step = $step_of->(qr/\.pgpass/);
my $hba_step = (grep { $_->{kind} eq 'hba' } @steps)[0]{n};
my $map_step = $step_of->(qr/SELECT sharded_id\.apply_shard_map\(\)/);
ok($writer_start < $online_move && $online_move < $writer_wait, 'the writer starts before the online move and is waited for after it');
ok($restore < $place, 'the restore comes before place_shard');

my $server = fresh_servers('rb');
# As the application role, over TCP with its password: (psql's exit
# status, stdout, stderr).
my $app_psql = sub {
	my ($sql) = @_;
	my ($ok, $stdout, $stderr) = tcp_psql($server, $server->{router}, 'app', 'app', $sql);
	return ($ok ? 0 : 1, $stdout, $stderr);
};
my ($restored_user, $restored_name);
my %after = (
	$app_writes => sub {
		is($server->{router}->safe_psql('app', q{SELECT rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls FROM pg_roles WHERE rolname = 'app'}),
			'f', 'the application role has no superuser, CREATEROLE, CREATEDB or BYPASSRLS');
		my $log = slurp_file($server->{node1}->logfile);
		like($log, qr/connection authorized: user=app database=app/,
			'the router\'s calls reach the data nodes as the application role');
		like($log, qr/connection authenticated: identity="app" method=scram-sha-256/,
			'with its password, by scram-sha-256');
		my ($ret, $out) = $app_psql->(q{SELECT count(*) FROM ops.photos WHERE caption LIKE 'first photo of user %'});
		is("$ret/$out", '0/100', 'as the application role, the ops table holds the 100 photos it wrote');
	},
	$ops_reads => sub {
		my ($ret, $out) = $app_psql->(q{SELECT count(DISTINCT sharded_id.shard_id(id)) FROM ops.users});
		is("$ret/$out", '0/8', 'as the application role, the ops tables reach every shard');
		for my $name (qw(node1 node2))
		{
			my @fdw = slurp_file($server->{$name}->logfile) =~ /connection authorized: user=(\w+) database=app application_name=postgres_fdw/g;
			ok(@fdw > 0 && !grep({ $_ ne 'app' } @fdw),
				"$name: the ops queries of the application role log in as it, not as the superuser (" . join(',', @fdw) . ')');
		}
	},
	$pgpass_step => sub {
		is(sprintf('%o', (stat $server->{pgpass})[2] & 07777), '600', 'the password file has mode 0600');
	},
	$online_move => sub {
		my ($scratch) = @_;
		unlike(slurp_file("$scratch/writer.log"), qr/actually processed/,
			'the writer was still running when the online move ended');
		is($server->{router}->safe_psql('app',
				q{SELECT method || '/' || outcome FROM sharded_id.moves WHERE shard_id = 3 ORDER BY move_id DESC LIMIT 1}),
			'online/moved', 'shard 3 moved online');
	},
	$writer_wait => sub {
		my ($scratch) = @_;
		my $log = slurp_file("$scratch/writer.log");
		my ($processed) = $log =~ /number of transactions actually processed: (\d+)/;
		my ($failed) = $log =~ /number of failed transactions: (\d+)/;
		ok(defined $processed && $processed > 0, 'the writer committed ' . ($processed // 'no') . ' transactions');
		is($failed, 0, 'the writer through the router, as the application role, had 0 failed transactions');
		is($server->{node1}->safe_psql('app', q{SELECT count(*) FROM shard_0003.photos WHERE caption = 'written during a move'})
			  + 0 > 0 ? 'yes' : 'no', 'yes', 'writes of the writer to shard 3 are on node1');
	},
	($restore - 1) => sub {
		($restored_user, $restored_name) = split /\|/, $server->{node2}->safe_psql('app',
			'SELECT id, name FROM shard_0006.users ORDER BY id LIMIT 1');
		ok(defined $restored_name, "shard 6 has a user before the restore ($restored_user)");

		# First the restore block against a node1 whose schema shard_0006 is in
		# the way (a table that is no shard's): it must stop, with node2's
		# rows, node1 and the map as they were.  Then node2 takes its shard
		# back, and the runbook's own run of the block follows.
		my ($scratch) = @_;
		my $count_sql = q{SELECT (SELECT count(*) FROM shard_0006.users) || '/' || (SELECT count(*) FROM shard_0006.photos)};
		my $rows = $server->{node2}->safe_psql('app', $count_sql);
		my $map_sql = 'SELECT node_name FROM sharded_id.shard_map WHERE shard_id = 6';
		my $map_before = $server->{router}->safe_psql('app', $map_sql);
		$server->{node1}->safe_psql('app', 'CREATE SCHEMA shard_0006; CREATE TABLE shard_0006.users (planted int)');
		local $ENV{PATH} = (reader_path())[0];
		my ($stdout, $stderr) = ('', '');
		my $ran = IPC::Run::run([ 'bash', '-c', "cd '$scratch' || exit 1\n$steps[$restore - 1]{body}" ],
			'<', \undef, '>', \$stdout, '2>', \$stderr,
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		ok(!$ran, 'a restore onto a node whose shard_0006 is in the way stops') or diag($stdout);
		is($server->{node1}->safe_psql('app', q{SELECT string_agg(c.relname || '.' || a.attname, ',')
			FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
			WHERE c.relnamespace = 'shard_0006'::regnamespace}), 'users.planted', '... leaves nothing of it on node1');
		is($server->{node1}->safe_psql('app', 'SELECT count(*) FROM sharded_id.shards WHERE shard_id = 6'), '0',
			'... registers no shard 6 on node1');
		is($server->{node2}->safe_psql('app', $count_sql), $rows, "... node2 keeps shard 6's rows ($rows)");
		is($server->{router}->safe_psql('app', $map_sql), $map_before, "... and the map still names $map_before");
		$server->{node1}->safe_psql('app', 'DROP SCHEMA shard_0006 CASCADE');
		$server->{node2}->safe_psql('app', 'SELECT sharded_id.create_shard(6)');
	},
	($recover - 1) => sub {
		is($server->{router}->safe_psql('app', q{SELECT state FROM sharded_id.moves WHERE shard_id = 2 AND finished_at IS NULL}),
			'copy', 'the drill leaves the move of shard 2 unfinished after its copy step');
		is($server->{node2}->safe_psql('app', 'SELECT count(*) FROM pg_subscription'), '1',
			'with its subscription on the target');
	},
	$recover => sub {
		is($server->{router}->safe_psql('app', q{SELECT outcome FROM sharded_id.moves WHERE shard_id = 2 ORDER BY move_id DESC LIMIT 1})
			  . '/' . map_owner($server->{router}, 2, 'app'),
			'rolled back/node1', 'recover_moves rolls the interrupted move back, and shard 2 stays on node1');
	},
	$place => sub {
		my ($ret, $out, $err) = $app_psql->("SELECT name FROM app_api.user_by_id($restored_user)");
		is("$ret/$out", "0/$restored_name", 'the first call through the router for the restored shard succeeds')
		  or diag($err);
		($ret, $out, $err) = $app_psql->("SELECT app_api.add_photo($restored_user, 'after the restore')");
		is($ret, 0, 'a write through the router to the restored shard succeeds') or diag($err);
		is($server->{node1}->safe_psql('app', q{SELECT count(*) FROM shard_0006.photos WHERE caption = 'after the restore'}),
			'1', 'it is on node1, where the shard was restored');
	},
);
my ($failed, $out) = run_steps($server, \@steps, \%after);
ok(!defined $failed, 'every step of the runbook runs: ' . ($failed // "$out of " . scalar(@steps) . ' steps, the others being as root'))
  or diag($out);
is(defined $failed ? 'failed' : $out, scalar(grep { $_->{kind} ne 'root' } @steps), 'no step but those as root was left out');

# A node without wal_level = logical: rebalance_plan names the dump method
# for moves from it, and a move from it without a method warns and dumps.
$server->{node2}->append_conf('postgresql.conf', "wal_level = replica\n");
server_env($server, sub { $server->{node2}->restart });
is($server->{router}->safe_psql('app', q{SELECT string_agg(format('%s:%s>%s:%s', shard_id, source_node, target_node, method), ' ' ORDER BY move_no)
	FROM sharded_id.rebalance_plan('{node1}')}), '1:node2>node1:dump 5:node2>node1:dump 7:node2>node1:dump',
	'rebalance_plan names the dump method for moves from a node without wal_level = logical');
is($server->{router}->safe_psql('app', q{SELECT string_agg(format('%s:%s>%s:%s', shard_id, source_node, target_node, method), ' ' ORDER BY move_no)
	FROM sharded_id.rebalance_plan()}), '6:node1>node2:online',
	'and the online method for moves from a node with it');
{
	my ($ret, $stdout, $stderr) = $server->{router}->psql('app', q{CALL sharded_id.move_shard(7, 'node1')});
	is($ret, 0, 'a move from that node without a method runs') or diag($stderr);
	like($stderr, qr/WARNING:  node "node2" has wal_level = replica, so shard 7 moves by the dump method/,
		'it warns that wal_level forces the dump method');
	is($server->{router}->safe_psql('app', q{SELECT method || '/' || outcome FROM sharded_id.moves WHERE shard_id = 7 ORDER BY move_id DESC LIMIT 1})
		  . '/' . map_owner($server->{router}, 7, 'app'), 'dump/moved/node1',
		'and moves the shard by the dump method');
}

# place_shard refuses a node that does not hold the shard, and roles
# other than the owner, and changes nothing then.
{
	my ($ret, $stdout, $stderr) = $server->{router}->psql('app', q{SELECT sharded_id.place_shard(1, 'node1')},
		extra_params => [ '-v', 'VERBOSITY=sqlstate' ]);
	like($stderr, qr/ERROR:  55000/, 'place_shard refuses a node that does not hold the shard (55000)');
	($ret, $stdout, $stderr) = $app_psql->(q{SELECT sharded_id.place_shard(1, 'node2')});
	like($stderr, qr/permission denied for function place_shard/, 'the application role may not call place_shard');
	is(map_owner($server->{router}, 1, 'app'), 'node2',
		'the map still puts shard 1 on node2');
}

# What the runbook leaves: every shard where the map says, no id twice.
my %map = map { split /\|/ } split /\n/, $server->{router}->safe_psql('app', 'SELECT shard_id, node_name FROM sharded_id.shard_map');
my @ids;
for my $name (qw(node1 node2))
{
	my $node = $server->{$name};
	my $held = $node->safe_psql('app', 'SELECT string_agg(shard_id::text, \',\' ORDER BY shard_id) FROM sharded_id.shards');
	my $mapped = join(',', sort { $a <=> $b } grep { $map{$_} eq $name } keys %map);
	is($held, $mapped, "$name holds exactly the shards the map gives it ($mapped)");
	my $schemas = $node->safe_psql('app', q{SELECT string_agg(substr(nspname, 7)::int::text, ',' ORDER BY nspname) FROM pg_namespace WHERE nspname ~ '^shard_\d{4}$'});
	is($schemas, $mapped, "$name keeps no schema of a shard it does not hold");
	is($node->safe_psql('app', q{SELECT (SELECT count(*) FROM pg_replication_slots) || '/' || (SELECT count(*) FROM pg_publication) || '/' || (SELECT count(*) FROM pg_subscription)}),
		'0/0/0', "$name keeps no slot, publication or subscription");
	for my $shard (split /,/, $held)
	{
		my $schema = sprintf('shard_%04d', $shard);
		my $misplaced = $node->safe_psql('app', "SELECT count(*) FROM (SELECT id FROM $schema.users UNION ALL SELECT id FROM $schema.photos) t WHERE sharded_id.shard_id(id) <> $shard");
		is($misplaced, 0, "$name: every id of $schema carries shard $shard");
		push @ids, split /\n/, $node->safe_psql('app', "SELECT id FROM $schema.users UNION ALL SELECT id FROM $schema.photos");
	}
}
my %seen;
is(scalar(grep { $seen{$_}++ } @ids), 0, 'no id repeats over the nodes (' . scalar(@ids) . ' ids)');
my ($ret, $count) = $app_psql->('SELECT (SELECT count(*) FROM ops.users) + (SELECT count(*) FROM ops.photos)');
is("$ret/$count", '0/' . scalar(@ids), 'the ops tables, read as the application role, see every row once');
$server->{$_}->stop for qw(router node1 node2);

# The runbook's password file and pg_hba.conf lines are what let the
# servers reach each other: a copy without one of them fails, and where.
ok($steps[ $pgpass_step - 1 ]{kind} eq 'shell' && $hba_step < $pgpass_step,
	"the runbook writes the password file (step $pgpass_step) after its pg_hba.conf lines (step $hba_step)");
is(join(',', map { $_->{n} } grep { $_->{kind} eq 'root' } @steps), '1,2',
	'the runbook starts with its two steps as root, which install the software; the test runs every other');

# Without the password file: the operator's own psql still has its
# passwords (a file of its own, as if typed), but the servers' libpq has
# none.  The runbook's steps run until the first call from one server to
# another, which fails as on a Debian server without ~postgres/.pgpass.
{
	my @copy = grep { $_->{n} != $pgpass_step } parse_steps($doc);
	my $servers = fresh_servers('nopass');
	my $client = "$servers->{home}/client.pgpass";
	open(my $fh, '>', $client) or die $!;
	print $fh "*:*:app:postgres:$passwords{postgres}\n*:*:app:app:$passwords{app}\n";
	close $fh;
	chmod 0600, $client;
	my ($failed, $out, $step) = run_steps($servers, \@copy, undef, client_pgpass => $client);
	like($out // '', qr/fe_sendauth: no password supplied/,
		'without the password file, the first call from one server to another fails: fe_sendauth: no password supplied')
	  or diag($failed // 'it did not fail');
	ok($step && $step->{n} > $map_step && grep({ $_ eq 'router' } @{ $step->{servers} // [] }),
		'on the router, after the map is applied: ' . ($failed // 'no step failed'));
	ok(!-e $servers->{pgpass}, 'and the servers had no password file');
	$servers->{$_}->stop for qw(router node1 node2);
}

# Without the pg_hba.conf lines, the first connection over TCP fails.
{
	my @copy = grep { $_->{n} != $hba_step } parse_steps($doc);
	my $servers = fresh_servers('nohba');
	my ($failed, $out) = run_steps($servers, \@copy);
	like($out // '', qr/no pg_hba\.conf entry for host "127\.0\.0\.1", user "postgres", database "app"/,
		'without the pg_hba.conf lines, the first connection over TCP is refused: ' . ($failed // 'no step failed'));
	$servers->{$_}->stop for qw(router node1 node2);
}

# A broken block fails the run, on that block: the first SQL step over TCP
# of a copy (on the data nodes, after the servers' settings) becomes SQL
# that does not run.
my @broken = parse_steps($doc);
my ($victim) = grep { $_->{kind} eq 'sql' && !$_->{local} } @broken;
$victim->{body} = "SELECT * FROM no_such_table_in_the_runbook;\n";
my $broken_servers = fresh_servers('broken');
my ($broken_failed, $broken_out) = run_steps($broken_servers, \@broken);
like($broken_failed // '', qr/^step $victim->{n} \(/, "a copy with step $victim->{n} broken fails on that step")
  or diag($broken_failed // 'it did not fail');
like($broken_out, qr/no_such_table_in_the_runbook/, 'the failure is the broken statement');
$broken_servers->{$_}->stop for qw(router node1 node2);

done_testing();
