# src/sql/functions.awk: print the function statements of the SQL API files,
# so that an update script re-creates every function from its one source.
#
# Reads the files of src/sql/api/ and prints, in their order, every
# statement that defines a function or procedure (as CREATE OR REPLACE), its
# comment, and its grants and revocations, and every statement that follows
# a line "-- @update@" (one that both the install and every update run, such
# as a call that makes a role).  Tables, views, sequences and data are the
# hand-written part of each update (src/sql/updates/).
#
# A statement starts at a line that begins with a keyword and ends at the
# first line ending in ";" outside dollar quotes.
function dollar_quotes(line,    n, rest, tag) {
	n = 0
	rest = line
	while (match(rest, /\$[A-Za-z_]*\$/)) {
		tag = substr(rest, RSTART, RLENGTH)
		if (quote == "") { quote = tag; n++ }
		else if (tag == quote) { quote = ""; n++ }
		rest = substr(rest, RSTART + RLENGTH)
	}
	return n
}
BEGIN { quote = ""; keep = 0; inside = 0; marked = 0 }
!inside && quote == "" && /^-- @update@/ { marked = 1; next }
{
	if (!inside && quote == "" && $0 ~ /^[A-Z]/) {
		inside = 1
		keep = marked || ($0 ~ /^CREATE (OR REPLACE )?(FUNCTION|PROCEDURE) / ||
				$0 ~ /^COMMENT ON (FUNCTION|PROCEDURE) / ||
				$0 ~ /^(GRANT|REVOKE) [A-Z, ]+ ON (FUNCTION|PROCEDURE|ALL FUNCTIONS|ALL PROCEDURES|ROUTINE) /)
		marked = 0
		if (keep) {
			sub(/^CREATE (OR REPLACE )?FUNCTION /, "CREATE OR REPLACE FUNCTION ")
			sub(/^CREATE (OR REPLACE )?PROCEDURE /, "CREATE OR REPLACE PROCEDURE ")
		}
	}
	if (inside) {
		dollar_quotes($0)
		if (keep) print
		if (quote == "" && $0 ~ /;[ \t]*(--.*)?$/) {
			inside = 0
			if (keep) print ""
		}
	}
}
END {
	if (quote != "" || inside) {
		print "functions.awk: unterminated statement at end of input" > "/dev/stderr"
		exit 1
	}
}
