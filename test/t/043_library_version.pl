# test/t/043_library_version.pl
#
# Installing a new version without restarting the server leaves the old
# library loaded under the new SQL scripts.  CREATE EXTENSION and ALTER
# EXTENSION UPDATE then refuse with 55000 and a hint to restart, instead of
# the loader's "could not find function" half-way through the script; after
# the restart both run, and the library reports the extension's version.
#
# The older library is this tree's, built with sharded_id.library_version
# set to 1.9, as a library of an earlier version reports it, and without the
# names 2.1's scripts call next_id and its kin by, as a library before 2.1
# lacks them, in a copy of the installation.  A server starts from the copy with it; then the copy's
# library is replaced by the installed one, as make install replaces it.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Copy qw(copy);
use File::Path qw(make_path);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $top = "$FindBin::RealBin/../..";
sub pg_config
{
	my ($bin, $opt) = @_;
	my ($stdout, $stderr) = run_command([ "$bin/pg_config", $opt ]);
	chomp $stdout;
	return $stdout;
}
my ($bindir) = run_command([ 'pg_config', '--bindir' ]);
chomp $bindir;
my $pkglibdir = pg_config($bindir, '--pkglibdir');
my $sharedir = pg_config($bindir, '--sharedir');

# A copy of the installation under $root, at the same paths, so that the
# relocated server finds its library and share directories as the original
# does (Debian keeps share/ apart from bin/ and lib/).
my $root = PostgreSQL::Test::Utils::tempdir('install');
for my $dir (dirname($bindir), $pkglibdir, $sharedir)
{
	next if -d "$root$dir";
	make_path(dirname("$root$dir"));
	system('cp', '-a', $dir, "$root$dir") == 0 or die "cp -a $dir: $?";
}
my $inst = $root . dirname($bindir);
is(pg_config("$inst/bin", '--pkglibdir'), "$root$pkglibdir", 'the copy of the installation loads libraries from its own lib');

# The older library: this tree built with another version.
my $build = PostgreSQL::Test::Utils::tempdir('build');
system('cp', '-a', "$top/Makefile", "$top/sharded_id.control", "$top/sharded_id_router.control", "$top/src", $build) == 0 or die "cp: $?";
unlink glob("$build/src/*.o"), glob("$build/src/*.bc");    # a copy of a built tree
my ($out, $err) = ('', '');
my $built = IPC::Run::run([ 'make', '-s', '-C', $build, "PG_CONFIG=$bindir/pg_config",
	q{COPT=-DSHID_LIBRARY_VERSION="\"1.9\"" -DSHID_NO_NAMES_2_1}, 'sharded_id.so' ], '>', \$out, '2>', \$err);
ok($built, 'the older library builds') or diag($err);
my $lib = "$root$pkglibdir/sharded_id.so";
unlink $lib or die "unlink $lib: $!";
copy("$build/sharded_id.so", $lib) or die "copy: $!";

my $node = PostgreSQL::Test::Cluster->new('older', install_path => $inst);
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'sharded_id'\n");
$node->start;
is($node->safe_psql('postgres', 'SHOW sharded_id.library_version'), '1.9', 'the server runs the older library');
$node->safe_psql('postgres', 'CREATE DATABASE updated');
$node->safe_psql('postgres', 'CREATE DATABASE created');
$node->safe_psql('updated', q{CREATE EXTENSION sharded_id VERSION '1.6'});
my $before = $node->safe_psql('updated', 'SELECT sharded_id.next_id(7)');

# make install: a new file in place of the loaded library, no restart.
unlink $lib or die "unlink $lib: $!";
copy("$pkglibdir/sharded_id.so", $lib) or die "copy: $!";

my $default = $node->safe_psql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'sharded_id'});
for my $case ([ 'updated', 'ALTER EXTENSION sharded_id UPDATE' ], [ 'created', 'CREATE EXTENSION sharded_id' ])
{
	my ($db, $sql) = @$case;
	my ($ret, $stdout, $stderr) = $node->psql($db, $sql, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	isnt($ret, 0, "$sql over the older library fails");
	like($stderr, qr/55000: the sharded_id library loaded by this server is older than the extension's scripts/,
		"$sql: 55000, the library is older than the scripts");
	# An update from 1.6 is refused by its first step, 2.0's frozen script.
	like($stderr, qr/DETAIL:  The server runs the sharded_id library of version 1\.9, .* scripts are of version (?:2\.0|\Q$default\E)\./,
		"$sql: the detail names both versions");
	like($stderr, qr/HINT:  Restart the server after installing a new version of sharded_id/, "$sql: the hint says to restart");
	unlike($stderr, qr/could not find function/, "$sql: not the loader's error");
}
is($node->safe_psql('updated', q{SELECT extversion FROM pg_extension WHERE extname = 'sharded_id'}), '1.6',
	'the refused update left the extension at 1.6');
is($node->safe_psql('created', q{SELECT count(*) FROM pg_extension WHERE extname = 'sharded_id'}), '0',
	'the refused CREATE EXTENSION left nothing');

$node->restart;
is($node->safe_psql('postgres', 'SHOW sharded_id.library_version'), $default,
	"after the restart the library reports the extension's default version ($default)");
$node->safe_psql('updated', 'ALTER EXTENSION sharded_id UPDATE');
is($node->safe_psql('updated', q{SELECT extversion FROM pg_extension WHERE extname = 'sharded_id'}), $default,
	'after the restart the update runs');
my $after = $node->safe_psql('updated', 'SELECT sharded_id.next_id(7)');
ok($after > $before, 'the updated extension mints above its ids of before the update');
$node->safe_psql('created', 'CREATE EXTENSION sharded_id');
is($node->safe_psql('created', 'SELECT sharded_id.shard_id(sharded_id.next_id(3))'), '3',
	'after the restart CREATE EXTENSION runs');

# The older library installed back and the server restarted with it, the
# extension at 2.1: it mints nothing, in any of the four forms, and the
# error names what the library lacks.
unlink $lib or die "unlink $lib: $!";
copy("$build/sharded_id.so", $lib) or die "copy: $!";
$node->restart;
for my $case ([ 'next_id(3)', 'shid_next_counter_id_v21' ], [ q{next_id(3, 's')}, 'shid_next_id_v21' ],
	[ 'next_ids(3, 10)', 'shid_next_counter_ids_v21' ], [ q{next_ids(3, 's', 10)}, 'shid_next_ids_v21' ])
{
	my ($call, $name) = @$case;
	my ($ret, $stdout, $stderr) = $node->psql('created', "CREATE SEQUENCE IF NOT EXISTS s;
		SELECT sharded_id.$call", extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($stderr, qr/42883: could not find function "$name" in file/,
		"an older library under 2.1's scripts refuses $call (42883), naming the 2.1 function it lacks ($name)");
	is($stdout, '', "$call minted nothing");
}
unlink $lib or die "unlink $lib: $!";
copy("$pkglibdir/sharded_id.so", $lib) or die "copy: $!";
$node->restart;
is($node->safe_psql('created', 'SELECT sharded_id.shard_id(sharded_id.next_id(3))'), '3',
	'the new library installed back mints again');

$node->stop;
done_testing();
