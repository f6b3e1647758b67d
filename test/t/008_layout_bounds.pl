# test/t/008_layout_bounds.pl
#
# Checks of the build.  A layout whose sequence field is wider than the
# generator's slot holds (SHID_MAX_SEQ_BITS), or whose fields overflow 64
# bits, stops the build: src/layout.c is compiled as it is, then with such a
# layout appended to the table of built-in layouts.  And the installed
# library exports the SQL-callable functions and nothing else of ours, on
# every major version.
use strict;
use warnings;
use FindBin;
use File::Copy;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

my $src = "$FindBin::RealBin/../../src";
my $includedir = `pg_config --includedir-server`;
chomp $includedir;
my $cc = `pg_config --cc`;
chomp $cc;
($cc) = split ' ', $cc;

# Compile src/layout.c with $extra appended to the layout table.
sub compile_with
{
	my ($extra) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	copy("$src/$_", "$dir/$_") or die "copy $_: $!" for qw(layout.c layout.h compat.h);
	my $code = slurp_file("$dir/layout.c");
	$code =~ s/(static const ShidLayout shid_layouts\[\] = \{\n)/$1$extra\n/
	  or die 'the layout table was not found in layout.c';
	open my $fh, '>', "$dir/layout.c" or die $!;
	print $fh $code;
	close $fh;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $cc, '-fsyntax-only', "-I$dir", "-I$includedir", "$dir/layout.c" ],
		'>', \$out, '2>', \$err);
	return ($ok, $err);
}

my ($ok, $err) = compile_with('');
ok($ok, 'layout.c compiles as it is') or diag($err);

($ok, $err) = compile_with('SHID_LAYOUT("widest", 1288834974657, 41, 10, 12),');
ok($ok, 'a layout with a 12-bit sequence field, the slot\'s width, compiles') or diag($err);

($ok, $err) = compile_with('SHID_LAYOUT("too_wide", 1288834974657, 41, 9, 13),');
ok(!$ok, 'a layout with a 13-bit sequence field does not compile');
like($err, qr/negative/, 'the compiler names the failed size check');

($ok, $err) = compile_with('SHID_LAYOUT("too_long", 1288834974657, 45, 13, 10),');
ok(!$ok, 'a layout of more than 64 bits does not compile');

# The installed library: hidden helpers, exported SQL-callable functions.
my $libdir = `pg_config --pkglibdir`;
chomp $libdir;
my ($nm_out, $nm_err) = ('', '');
IPC::Run::run([ 'nm', '-D', '--defined-only', "$libdir/sharded_id.so" ], '>', \$nm_out, '2>', \$nm_err)
  or die "nm failed: $nm_err";
my %exported = map { (split ' ')[2] => 1 } grep { /\S/ } split /\n/, $nm_out;
ok($exported{$_}, "the library exports $_")
  for qw(Pg_magic_func _PG_init shid_next_id pg_finfo_shid_next_id shid_next_counter_id shid_decode),
  map { ($_, "pg_finfo_$_") } qw(shid_next_id_v21 shid_next_ids_v21 shid_next_counter_id_v21 shid_next_counter_ids_v21);
ok(!$exported{$_}, "the library keeps $_ to itself")
  for qw(shid_cover_slow shid_ceiling shid_layout_by_name shid_shard_out_of_range);

done_testing();
