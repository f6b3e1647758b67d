# test/perl/logged_writer.pl CONNSTR SQL USERS STOP IDS
#
# One writer of ShardedIdTest::logged_writers.  It keeps one psql session
# and runs SQL in it, one statement at a time, until the file STOP exists.
# SQL is a format with one %d, a random number from 1 to USERS.  Each line
# the statement returns (the id of a row it committed) is appended to IDS
# as soon as psql prints it.  Statements are 20 ms apart (a psql call per
# write, which this replaced, took about as long to start); a failed one
# (its error goes to stderr) is followed by a 50 ms pause.  When the session ends (its server
# restarted, the session terminated), a new one starts 50 ms later.
use strict;
use warnings;
use IO::Handle;
use IPC::Open2;
use Time::HiRes qw(sleep);

my ($connstr, $sql, $users, $stop, $ids) = @ARGV;
open my $log, '>>', $ids or die "$ids: $!";
$log->autoflush(1);
$SIG{PIPE} = 'IGNORE';
my $marker = '-- logged_writer: statement done --';

# Run one statement in the session; false once the session has ended.
sub one_statement
{
	my ($in, $out) = @_;
	my $statement = sprintf($sql, int(rand($users)) + 1);
	print $in "$statement;\n\\echo $marker\n" or return 0;
	my $wrote = 0;
	while (defined(my $line = <$out>))
	{
		if ($line eq "$marker\n")
		{
			sleep($wrote ? 0.02 : 0.05);
			return 1;
		}
		print $log $line;
		$wrote = 1;
	}
	return 0;
}

until (-e $stop)
{
	my $pid = open2(my $out, my $in, 'psql', '-X', '-A', '-t', '-q', '-d', $connstr);
	$in->autoflush(1);
	until (-e $stop)
	{
		last unless one_statement($in, $out);
	}
	close $in;
	close $out;
	waitpid $pid, 0;
	sleep 0.05 unless -e $stop;
}
