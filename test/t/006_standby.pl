# test/t/006_standby.pl
#
# An asynchronous standby is promoted after the primary minted ids, some of
# which never reached the standby.  The new primary's ids never repeat any
# of the old primary's.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'sharded_id'");
$primary->start;
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
is(scalar(@new), 40000, 'the new primary mints ids');

my %old = map { $_ => 1 } (@old, @unreplicated);
is(scalar(grep { $old{$_} } @new), 0,
	'no id of the new primary repeats one of the old primary, replicated or not');
my $newest_old = $standby->safe_psql('postgres',
	'SELECT max(sharded_id.created_at(x)) FROM unnest(ARRAY[' . join(',', @unreplicated) . ']::bigint[]) x');
my $oldest_new = $standby->safe_psql('postgres',
	'SELECT min(sharded_id.created_at(x)) FROM unnest(ARRAY[' . join(',', @new) . ']::bigint[]) x');
ok($standby->safe_psql('postgres', "SELECT '$oldest_new'::timestamptz > '$newest_old'::timestamptz") eq 't',
	"the new primary's ids start after the old primary's last ($oldest_new > $newest_old)");

$standby->stop;
done_testing();
