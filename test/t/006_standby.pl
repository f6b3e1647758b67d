# test/t/006_standby.pl
#
# An asynchronous standby whose clock runs 5 minutes behind its primary's is
# promoted after the primary minted ids, the last of which never reached it.
# Every id the new primary mints is greater than every id it replicated:
# only the ceiling it replayed from WAL puts its ids there, since its own
# clock would put them 5 minutes earlier.  (Ids the primary minted after the
# standby's last record are the limit of asynchronous replication, which
# the README states: the standby never learns of them.)
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use ShardedIdTest;
use Test::More;

my $primary = sharded_node('primary', init => { allows_streaming => 1 });
my ($set_clock, $start_ahead) = faked_clock($primary);
$set_clock->('+5m');
$start_ahead->();
$primary->safe_psql('postgres', q{
	CREATE EXTENSION sharded_id;
	CREATE SEQUENCE s CACHE 32;
	CREATE TABLE ids (id bigint PRIMARY KEY);
});

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# Mint n ids on a node; return them.
sub mint
{
	my ($node, $n) = @_;
	return split /\n/, $node->safe_psql('postgres',
		"INSERT INTO ids SELECT sharded_id.next_id(9, 's') FROM generate_series(1, $n) RETURNING id");
}

my @old = mint($primary, 20000);
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres', 'SELECT count(*) FROM ids'), '20000',
	'the standby has the first 20000 ids');
cmp_ok($standby->safe_psql('postgres',
		'SELECT extract(epoch FROM max(sharded_id.created_at(id)) - clock_timestamp()) FROM ids'),
	'>', 240, "the replicated ids carry times minutes ahead of the standby's clock");

# Cut the standby off, then mint ids it will never see.
$standby->stop;
my @unreplicated = mint($primary, 20000);
is(scalar(@unreplicated), 20000, '20000 more ids minted on the primary alone');
$primary->stop('immediate');

$standby->start;
$standby->promote;
is($standby->safe_psql('postgres', 'SELECT count(*) FROM ids'), '20000',
	'the promoted standby never received the last 20000');

my @new = mint($standby, 40000);
is(scalar(@new), 40000, 'the new primary mints ids under the primary key');
my %old = map { $_ => 1 } @old;
is(scalar(grep { $old{$_} } @new), 0, 'no id of the new primary repeats a replicated one');
my $newest_replicated = (sort { $a <=> $b } @old)[-1];
is(scalar(grep { $_ <= $newest_replicated } @new), 0,
	'every id of the new primary is greater than every replicated id, though its clock runs 5 minutes behind');

$standby->stop;
done_testing();
