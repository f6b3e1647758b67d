# test/t/008_layout_bounds.pl
#
# A layout whose sequence field is wider than the generator's slot holds
# (SHID_MAX_SEQ_BITS), or whose fields overflow 64 bits, stops the build:
# src/layout.c is compiled as it is, then with such a layout appended to the
# table of built-in layouts.
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

done_testing();
