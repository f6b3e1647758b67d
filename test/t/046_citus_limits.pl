# test/t/046_citus_limits.pl
#
# What a Citus node's requests for shard windows may cost others, and how
# long they may wait (src/citus.c): each part runs its own coordinator and
# worker, with shared_preload_libraries = 'citus,sharded_id'.  Skipped
# (skip_all) when Citus is not installed for the PostgreSQL under test.
#
#  - A coordinator that accepts connections and never answers (its
#    postmaster stopped with SIGSTOP, over TCP): a worker's next_id of a
#    shard it has no window for ends with an error within seconds, and so
#    does a second backend that needs the same shard; once the coordinator
#    runs again, the worker mints.
#  - Connections: a plain role's 22 sessions on the worker, each minting a
#    shard of its own and leaving its transaction open, hold at most 8
#    connections to the coordinator (max_connections = 20), a superuser
#    connects, and the coordinator ends them once idle.
#  - Slots: a plain role fills its share of sharded_id.max_free_slots on the
#    worker and on the coordinator; a superuser still mints new shards on
#    both (the coordinator makes the worker's slots within the free share).
#  - A worker whose clock runs 3 s ahead of the coordinator's mints, its
#    ids at most a second ahead of its own clock (windows start near the
#    clock of the node that asks).
#  - The coordinator's clock steps back 8 s; no id the worker mints runs
#    more than a second ahead of the worker's clock.
#  - Lines of time: the coordinator, its clock 2 s and then 30 s ahead of
#    the worker's, and the worker mint one shard at once; each keeps
#    minting, its ids at most a second ahead of its own clock, and no id is
#    minted by both.
#  - A synchronous standby of the coordinator: its own grants in a session
#    with synchronous_commit = remote_write succeed.  Then the standby
#    receives nothing: while
#    a coordinator session that raised the ceiling waits for it at its
#    commit, the worker's grant, which that ceiling covers, waits too and
#    the worker mints nothing; the standby, promoted, repeats none of the
#    worker's ids.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;
use Time::HiRes qw(time sleep);

my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $bindir = `pg_config --bindir`;
chomp $bindir;
if (!-f "$pkglibdir/citus.so" || !-f "$sharedir/extension/citus.control")
{
	plan skip_all => "Citus is not installed for this PostgreSQL (no $pkglibdir/citus.so): "
	  . 'run ../shared/citus/install.sh (PostgreSQL 18) to test sharded_id on Citus';
}

my $clock_sql = 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint';

# A node of a Citus cluster, not started if $no_start (a faked clock).
sub citus_node
{
	my ($name, $extra, $no_start) = @_;
	$extra //= '';
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
max_prepared_transactions = 50
citus.local_hostname = '" . ($extra =~ /listen_addresses/ ? '127.0.0.1' : $node->host) . "'
" . $extra);
	return $node if $no_start;
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION sharded_id');
	return $node;
}

sub cluster
{
	my ($coord, $worker) = @_;
	my $host = $coord->safe_psql('postgres', "SELECT current_setting('citus.local_hostname')");
	$coord->safe_psql('postgres', "SELECT citus_set_coordinator_host('$host', " . $coord->port . ')');
	$coord->safe_psql('postgres', "SELECT citus_add_node('"
		  . $worker->safe_psql('postgres', "SELECT current_setting('citus.local_hostname')") . "', "
		  . $worker->port . ')');
	return;
}

# The SQLSTATE and message of a statement that must fail, or 'none'.
sub refusal
{
	my ($node, $sql, @opts) = @_;
	my ($r, $o, $e) = $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", @opts);
	return ('none', '') if $r == 0;
	return $e =~ /ERROR:\s+([0-9A-Z]{5}):\s*(.*)/ ? ($1, $2) : ('?', $e);
}

# --- A coordinator that never answers.
{
	my $coord = citus_node('hang_coord', "listen_addresses = '127.0.0.1'\n");
	my $worker = citus_node('hang_worker', "listen_addresses = '127.0.0.1'\n");
	cluster($coord, $worker);
	is($worker->safe_psql('postgres', 'SELECT sharded_id.next_id(1) > 0'), 't', 'hang: the worker mints');
	my $pm = $coord->{_pid};
	kill 'STOP', $pm;
	my $stopped = time;
	my ($asker_out, $other_out) = ('', '');
	my $asker = IPC::Run::start([ "$bindir/psql", '-X', '-d', $worker->connstr('postgres'),
		'-c', 'SELECT sharded_id.next_id(2)' ], '>', \$asker_out, '2>&1');
	# The second backend starts once the first asks.
	$worker->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'SELECT sharded_id.next_id(2)'});
	my $other = IPC::Run::start([ "$bindir/psql", '-X', '-d', $worker->connstr('postgres'),
		'-c', 'SELECT sharded_id.next_id(2)' ], '>', \$other_out, '2>&1');
	my ($asker_s, $other_s);
	while (time - $stopped < 30 && !(defined $asker_s && defined $other_s))
	{
		$asker_s //= time - $stopped unless $asker->pumpable;
		$other_s //= time - $stopped unless $other->pumpable;
		$asker->pump_nb if $asker->pumpable;
		$other->pump_nb if $other->pumpable;
		sleep(0.1);
	}
	kill 'CONT', $pm;
	$asker->finish;
	$other->finish;
	ok(defined $asker_s && $asker_s < 12,
		sprintf('hang: the asker\'s next_id ended %.1f s after the coordinator stopped answering', $asker_s // -1));
	like($asker_out, qr/could not connect to the Citus coordinator|did not answer within/,
		'hang: its error says the coordinator did not answer');
	ok(defined $other_s && $other_s < 12,
		sprintf('hang: a second backend needing the shard ended %.1f s after', $other_s // -1));
	unlike($other_out, qr/timed out waiting for a window/, 'hang: without waiting 15 s for the asker');
	my $minted = 0;
	my $deadline = time + 15;
	while (!$minted && time < $deadline)
	{
		my ($r) = $worker->psql('postgres', 'SELECT sharded_id.next_id(2)');
		$minted = $r == 0;
		sleep(0.1) unless $minted;
	}
	ok($minted, 'hang: once the coordinator runs again, the worker mints the shard');
	$_->stop for ($worker, $coord);
}

# --- Connections to the coordinator held by a plain role's open transactions.
{
	my $coord = citus_node('conn_coord', "max_connections = 20\n");
	my $worker = citus_node('conn_worker', "max_connections = 60\n");
	cluster($coord, $worker);
	$coord->safe_psql('postgres', 'CREATE ROLE plain LOGIN');
	my @sessions;
	my $held = 0;
	for my $k (0 .. 21)
	{
		my $s = $worker->background_psql('postgres', on_error_stop => 0, extra_params => [ '-U', 'plain' ]);
		my ($out) = $s->query('BEGIN; CREATE TEMP SEQUENCE s; SELECT sharded_id.next_id(' . (100 + $k) . ", 's') > 0");
		$held++ if defined $out && $out =~ /t/;
		push @sessions, $s;
	}
	is($held, 22, 'connections: a plain role minted a shard of its own in 22 sessions of the worker, each left open');
	my ($r, $o, $e) = $coord->psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sharded_id_window'});
	is($r, 0, 'connections: a superuser connects to the coordinator (max_connections = 20)');
	cmp_ok($o, '<=', 8, "connections: the worker keeps at most 8 connections there ($o)");
	ok($coord->poll_query_until('postgres',
			q{SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name = 'sharded_id_window'}),
		'connections: and the coordinator ends them once idle, though the transactions stay open');
	$_->quit for @sessions;
	$_->stop for ($worker, $coord);
}

# --- The coordinator's slots, and a plain role's share of them.
{
	my $coord = citus_node('slot_coord', "sharded_id.max_shards = 64\n");
	my $worker = citus_node('slot_worker', "sharded_id.max_shards = 64\n");
	cluster($coord, $worker);
	$coord->safe_psql('postgres', 'CREATE ROLE plain LOGIN');
	my ($r, $o, $e) = $worker->psql('postgres', q{CREATE TEMP SEQUENCE s;
		SELECT count(sharded_id.next_id(g, 's')) FROM generate_series(100, 131) g},
		extra_params => [ '-U', 'plain' ]);
	is($o, '32', "slots: a plain role minted 32 shards on the worker, its free share there $e");
	my @state = refusal($worker, q{CREATE TEMP SEQUENCE s; SELECT sharded_id.next_id(132, 's')},
		extra_params => [ '-U', 'plain' ]);
	is($state[0], '53400', 'slots: and no more');
	# On the coordinator the worker's 32 took the free share.
	@state = refusal($coord, q{CREATE TEMP SEQUENCE s; SELECT sharded_id.next_id(200, 's')},
		extra_params => [ '-U', 'plain' ]);
	is($state[0], '53400', 'slots: the coordinator made the worker\'s slots within its free share');
	is($coord->safe_psql('postgres', 'SELECT count(*) FROM sharded_id.generator_stats()'), '32',
		'slots: 32 of the coordinator\'s 64 are in use');
	@state = refusal($coord, 'SELECT sharded_id.next_id(5)');
	is("@state", 'none ', 'slots: a superuser mints a new shard on the coordinator');
	@state = refusal($worker, 'SELECT sharded_id.next_id(6)');
	is("@state", 'none ', 'slots: a superuser mints a new shard on the worker');
	$_->stop for ($worker, $coord);
}

# --- A worker whose clock runs ahead of the coordinator's; then the
# coordinator's clock steps back.
{
	my $coord = citus_node('clock_coord', '', 1);
	my $worker = citus_node('clock_worker');
	my ($set_clock, $start_faked) = ShardedIdTest::faked_clock($coord);
	$set_clock->('-3');
	$start_faked->();
	$coord->safe_psql('postgres', 'CREATE EXTENSION citus; CREATE EXTENSION sharded_id');
	cluster($coord, $worker);
	my $lead = $worker->safe_psql('postgres', $clock_sql) - $coord->safe_psql('postgres', $clock_sql);
	cmp_ok($lead, '>', 2500, "clock: the worker's clock runs $lead ms ahead of the coordinator's");
	my @state = refusal($worker, 'SELECT sharded_id.next_id(2)');
	is("@state", 'none ', "clock: the worker, its clock ahead of the coordinator's, mints");
	my $ahead = $worker->safe_psql('postgres',
		"SELECT (extract(epoch FROM sharded_id.created_at(sharded_id.next_id(2))) * 1000)::bigint - ($clock_sql)");
	cmp_ok($ahead, '<=', 1000, "clock: its ids run at most a second ahead of its own clock ($ahead ms)");

	# The coordinator's clock runs 5 s ahead of the worker's (libfaketime
	# reads the file at every call), mints shard 1, then steps back 8 s.
	$set_clock->('+5');
	my $before_ms = $coord->safe_psql('postgres',
		'SELECT (extract(epoch FROM sharded_id.created_at(sharded_id.next_id(1))) * 1000)::bigint');
	$set_clock->('-3');
	# Until the coordinator's clock passed every window it granted (at most
	# a second and a window ahead of it when it granted).
	ok($coord->poll_query_until('postgres', "$clock_sql > $before_ms + 1500"),
		'clock: the coordinator\'s clock, stepped back 8 s, passed the windows it granted');
	my ($r, $id_ms, $e) = $worker->psql('postgres',
		'SELECT (extract(epoch FROM sharded_id.created_at(sharded_id.next_id(1))) * 1000)::bigint');
	my $worker_now = $worker->safe_psql('postgres', $clock_sql);
	ok($r == 0 && $id_ms - $worker_now <= 1000,
		'clock: the worker mints the shard, no id more than a second ahead of its clock ('
		  . ($r == 0 ? ($id_ms - $worker_now) . ' ms' : "refused: $e") . ')');

	# Both mint one shard at once for 2 s, the coordinator's clock 2 s and
	# then 30 s ahead of the worker's (so the worker's 2 s and 30 s behind):
	# each keeps minting near its own clock (lines of time,
	# src/citus_frames.c), and no id is minted by both.
	my $mint = q{
		DO $$ DECLARE t0 timestamptz := clock_timestamp(); c bigint; i bigint; BEGIN
		  WHILE clock_timestamp() < t0 + interval '2 s' LOOP
		    c := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
		    i := sharded_id.next_id(SHARD);
		    INSERT INTO lines_log VALUES (i, (extract(epoch FROM sharded_id.created_at(i)) * 1000)::bigint - c);
		  END LOOP;
		END $$};
	for my $node ($coord, $worker)
	{
		$node->safe_psql('postgres',
			'SET citus.enable_ddl_propagation = off; CREATE TABLE lines_log (id bigint, ahead bigint)');
	}
	for my $case ([ '+2', 30 ], [ '+30', 31 ])
	{
		my ($offset, $shard) = @$case;
		$set_clock->($offset);
		my $sql = $mint =~ s/SHARD/$shard/r;
		my %out;
		my @runs = map {
			my $node = $_;
			$out{ $node->name } = '';
			IPC::Run::start([ "$bindir/psql", '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-c', $sql ],
				'>', \$out{ $node->name }, '2>&1')
		} ($coord, $worker);
		my @ok = map { $_->finish } @runs;
		ok($ok[0] && $ok[1], "lines: the coordinator ${offset} s ahead and the worker both minted shard $shard for 2 s")
		  or diag(join "\n", values %out);
		for my $node ($coord, $worker)
		{
			my ($n, $ahead) = split /\|/, $node->safe_psql('postgres',
				"SELECT count(*), coalesce(max(ahead), 99999) FROM lines_log WHERE sharded_id.shard_id(id) = $shard");
			cmp_ok($n, '>', 100, 'lines: ' . $node->name . " minted shard $shard ($n ids)");
			cmp_ok($ahead, '<=', 1000, 'lines: ' . $node->name . "'s ids of shard $shard at most a second ahead of its clock ($ahead ms)");
		}
		my $ids = $worker->safe_psql('postgres',
			"SELECT string_agg(id::text, ',') FROM lines_log WHERE sharded_id.shard_id(id) = $shard");
		is($coord->safe_psql('postgres',
				"SELECT count(*) FROM lines_log WHERE id = ANY ('{$ids}'::bigint[])"),
			'0', "lines: no id of shard $shard minted by both");
	}
	$_->stop for ($worker, $coord);
}

# --- A synchronous standby of the coordinator that receives nothing.
{
	my $primary = PostgreSQL::Test::Cluster->new('sync_coord');
	$primary->init(allows_streaming => 1);
	$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'citus,sharded_id'
max_prepared_transactions = 50
citus.local_hostname = '" . $primary->host . "'
");
	$primary->start;
	my $worker = citus_node('sync_worker');
	for my $node ($primary, $worker)
	{
		$node->safe_psql('postgres', 'CREATE EXTENSION IF NOT EXISTS citus; CREATE EXTENSION IF NOT EXISTS sharded_id;
			SET citus.enable_ddl_propagation = off; CREATE TABLE minted (id bigint)');
	}
	cluster($primary, $worker);
	$primary->backup('base');
	my $standby = PostgreSQL::Test::Cluster->new('sync_standby');
	$standby->init_from_backup($primary, 'base', has_streaming => 1);
	chmod 0600, $standby->data_dir . '/server.key' if -f $standby->data_dir . '/server.key';
	# Its clock 5 s behind, so that only the ceiling keeps it from old windows.
	my ($set_clock, $start_faked) = ShardedIdTest::faked_clock($standby);
	$set_clock->('-5');
	$start_faked->();
	$primary->safe_psql('postgres',
		q{ALTER SYSTEM SET synchronous_standby_names = 'sync_standby'; SELECT pg_reload_conf()});
	ok($primary->poll_query_until('postgres',
			q{SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'sync_standby'}),
		'sync: a synchronous standby streams from the coordinator');
	$worker->safe_psql('postgres', 'INSERT INTO minted SELECT sharded_id.next_id(2) FROM generate_series(1, 100)');
	# A session's synchronous_commit = remote_write does not make the
	# coordinator's own grants, which wait for the standby's flush, fail.
	my @ok = refusal($primary, q{SET synchronous_commit = remote_write;
		SELECT count(DISTINCT sharded_id.next_id(20 + g % 50)) FROM generate_series(1, 300000) g});
	is("@ok", 'none ', 'sync: the coordinator mints 50 shards with synchronous_commit = remote_write');

	# The standby stops receiving.
	$standby->safe_psql('postgres', q{ALTER SYSTEM SET primary_conninfo = ''; SELECT pg_reload_conf()});
	$primary->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM pg_stat_replication WHERE application_name = 'sync_standby'});
	# Past half a lease of the ceiling: the coordinator's next id raises it
	# with a record, and that session's commit waits for the standby.
	my $ceiling_ms = ShardedIdTest::read_ceiling($primary);
	$primary->poll_query_until('postgres', "$clock_sql > $ceiling_ms - 400");
	my $out = '';
	my $h = IPC::Run::start([ "$bindir/psql", '-X', '-d', $primary->connstr('postgres'),
		'-c', 'SELECT sharded_id.next_id(9)' ], '>', \$out, '2>&1');
	ok($primary->poll_query_until('postgres',
			q{SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'SyncRep'}),
		'sync: a coordinator session that raised the ceiling waits for the standby');
	my @state = refusal($worker, q{SET statement_timeout = '4s';
		INSERT INTO minted SELECT sharded_id.next_id(2) FROM generate_series(1, 5000)});
	isnt($state[0], 'none', "sync: meanwhile the worker mints nothing in a window the standby lacks ($state[0])");
	my $w_max_ms = $worker->safe_psql('postgres',
		'SELECT (extract(epoch FROM max(sharded_id.created_at(id))) * 1000)::bigint FROM minted');

	$primary->stop('immediate');
	$h->finish;
	$standby->promote;
	$standby->stop;
	$standby->append_conf('postgresql.conf', 'port = ' . $primary->port . "\n");
	$standby->{_port} = $primary->port;
	$start_faked->();
	cmp_ok(ShardedIdTest::read_ceiling($standby), '>', $w_max_ms,
		"sync: the promoted coordinator's ceiling lies above the worker's last id");
	my $ids = $worker->safe_psql('postgres', q{SELECT string_agg(id::text, ',') FROM minted});
	$standby->safe_psql('postgres', "CREATE TABLE worker_ids AS SELECT unnest('{$ids}'::bigint[]) AS id");
	my ($minted, $repeats) = split /\|/, $standby->safe_psql('postgres', q{
		CREATE TEMP TABLE m AS SELECT sharded_id.next_id(2) AS id FROM generate_series(1, 200000);
		SELECT count(*), (SELECT count(*) FROM m JOIN worker_ids USING (id)) FROM m});
	is($repeats, 0, "sync: the promoted coordinator minted $minted ids of the shard, repeating none of the worker's");
	$_->stop for ($worker, $standby);
}

done_testing();
