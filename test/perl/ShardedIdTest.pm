# test/perl/ShardedIdTest.pm
#
# Helpers shared by the TAP tests of test/t/: clusters with sharded_id
# preloaded, minting ids into a table under a primary key, reading back
# the times of what was minted, the durable ceiling, and a wall clock moved
# with libfaketime.
package ShardedIdTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(sharded_node mint phase_ms read_ceiling faked_clock);

# A new cluster with sharded_id preloaded, plus the postgresql.conf lines
# in $opt{conf}; $opt{init} is passed to init.  Not started.
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

1;
