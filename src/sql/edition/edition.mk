# src/sql/edition/edition.mk: sharded_id_sql, the SQL edition (see
# doc/sharded_id-sql-edition.md), made in three forms from the topic files of
# src/sql/edition/, in this order; none is written by hand:
#   src/sql/sharded_id_sql--V.sql       for CREATE EXTENSION (installed with
#                                       sharded_id_sql.control)
#   dist/sharded_id_sql--V--pgtle.sql   for pg_tle: pgtle.install_extension
#   dist/sharded_id_sql--V--psql.sql    for psql -f by the database owner
# The two in dist/ are installed in $(pg_config --docdir)/extension.
# Included by the Makefile before pgxs.mk, so its first rule is "all".
SQL_EDITION_VERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" sharded_id_sql.control)
SQL_EDITION_COMMENT = $(shell sed -n "s/^comment = '\(.*\)'/\1/p" sharded_id_sql.control)
SQL_EDITION_SOURCES = $(addprefix src/sql/edition/,decoders.sql minting.sql moves.sql privileges.sql)
SQL_EDITION_SCRIPT = src/sql/sharded_id_sql--$(SQL_EDITION_VERSION).sql
SQL_EDITION_PGTLE = dist/sharded_id_sql--$(SQL_EDITION_VERSION)--pgtle.sql
SQL_EDITION_PLAIN = dist/sharded_id_sql--$(SQL_EDITION_VERSION)--psql.sql

EXTENSION += sharded_id_sql
DATA_built += $(SQL_EDITION_SCRIPT)
DOCS += $(SQL_EDITION_PGTLE) $(SQL_EDITION_PLAIN)
EXTRA_CLEAN += dist

all: $(SQL_EDITION_PGTLE) $(SQL_EDITION_PLAIN)

$(SQL_EDITION_SCRIPT): $(SQL_EDITION_SOURCES) sharded_id_sql.control
	{ printf '/* %s: made by make from src/sql/edition/; edit those files instead */\n\n' '$@'; \
	  printf '\\echo Use "CREATE EXTENSION sharded_id_sql" to load this file. \\quit\n\n'; \
	  cat $(SQL_EDITION_SOURCES); } > $@

# pg_tle runs the script as the calling role and substitutes @extowner@.
# The script must not hold the dollar quote that carries it.
$(SQL_EDITION_PGTLE): $(SQL_EDITION_SOURCES) sharded_id_sql.control
	@mkdir -p dist
	! grep -q '\$$sharded_id_sql\$$' $(SQL_EDITION_SOURCES)
	{ printf '/* %s: made by make from src/sql/edition/; edit those files instead.\n' '$@'; \
	  printf '   Run by a role granted pgtle_admin, then CREATE EXTENSION sharded_id_sql. */\n\n'; \
	  printf "SELECT pgtle.install_extension('sharded_id_sql', '%s', '%s', \$$sharded_id_sql\$$\n" \
	         '$(SQL_EDITION_VERSION)' "$$(printf '%s' '$(SQL_EDITION_COMMENT)' | sed "s/'/''/g")"; \
	  cat $(SQL_EDITION_SOURCES); \
	  printf "\$$sharded_id_sql\$$, NULL, 'sharded_id');\n"; } > $@

# A plain script, run in one transaction by the role that will own it.
$(SQL_EDITION_PLAIN): $(SQL_EDITION_SOURCES) sharded_id_sql.control
	@mkdir -p dist
	{ printf '/* %s: made by make from src/sql/edition/; edit those files instead.\n' '$@'; \
	  printf '   psql -v ON_ERROR_STOP=1 -f this file, as the database owner. */\n\n'; \
	  printf 'BEGIN;\nCREATE SCHEMA sharded_id;\n\n'; \
	  sed 's/@extowner@/CURRENT_USER/g' $(SQL_EDITION_SOURCES); \
	  printf 'COMMIT;\n'; } > $@
