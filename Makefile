# Makefile for sharded_id, built with PGXS:
#   make && make install          build and install into pg_config's server
#   make installcheck             run the tests against a server that has
#                                 sharded_id in shared_preload_libraries
#   make PG_CONFIG=/path/to/pg_config ...   the same for another major version
# test/run.sh does all of it on throwaway clusters.

# Two extensions from one tree: sharded_id (the library, ids, shards and the
# node side of moves) and sharded_id_router (SQL only: the shard map,
# routing, moves, rebalance, recovery and ops tables), which requires it.
EXTENSION = sharded_id sharded_id_router
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(srcdir)/sharded_id.control)
ROUTER_VERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(srcdir)/sharded_id_router.control)

MODULE_big = sharded_id
OBJS = src/init.o src/layout.o src/ceiling.o src/floors.o src/floors_api.o src/rmgr.o src/slots.o \
	src/owner.o src/generator.o src/decode.o src/shard_for.o src/route.o src/shortcode.o \
	src/connstr.o src/reserve.o src/owner_read.o src/privs.o src/hints.o src/fence.o src/citus_conn.o src/citus_learn.o src/citus.o src/citus_grant.o src/citus_frames.o src/citus_ask.o
PGFILEDESC = "sharded_id - time-sortable 64-bit ids carrying a logical shard"

# The install script of the current version is assembled from the topic
# files of src/sql/api/, in this order.  Released scripts (src/sql/) are
# installed as they are and never edited again.
API_SOURCES = $(addprefix src/sql/api/,ids.sql decoders.sql shards.sql node.sql node_moves.sql monitor.sql citus.sql)
# sharded_id_router's install script is assembled the same way from
# src/sql/router/: adopt.sql first (it takes over the tables that sharded_id
# 1.6's update to 2.0 left), then the router's topic files, then
# adopted.sql (the privileges of what was taken over, as they were).  Its update
# scripts, src/sql/sharded_id_router--*--*.sql, are installed as they are.
ROUTER_SOURCES = $(addprefix src/sql/router/,adopt.sql router.sql moves.sql adopted.sql)
ROUTER_SCRIPT = src/sql/sharded_id_router--$(ROUTER_VERSION).sql
# The update to it, src/sql/sharded_id--$(PREVVERSION)--$(EXTVERSION).sql, is
# its hand-written part in src/sql/updates/ (catalog and data changes) with
# every function statement of src/sql/api/ put in at its "-- @functions@"
# line, re-created by src/sql/functions.awk: a function is written once.
# The router's update is made the same way from src/sql/router/'s function
# files.  Released scripts (1.6's update to 2.0, the router's 2.0 install
# script) are frozen in src/sql/ as make built them.
PREVVERSION = 2.0
UPDATE_SCRIPT = src/sql/sharded_id--$(PREVVERSION)--$(EXTVERSION).sql
ROUTER_PREVVERSION = 2.0
ROUTER_UPDATE = src/sql/sharded_id_router--$(ROUTER_PREVVERSION)--$(ROUTER_VERSION).sql
ROUTER_FUNCTIONS = $(addprefix src/sql/router/,router.sql moves.sql)
DATA_built = src/sql/sharded_id--$(EXTVERSION).sql $(UPDATE_SCRIPT) $(ROUTER_SCRIPT) $(ROUTER_UPDATE)
DATA = src/sql/sharded_id--1.0.sql $(filter-out $(UPDATE_SCRIPT),$(wildcard src/sql/sharded_id--*--*.sql)) \
	src/sql/sharded_id_router--$(ROUTER_PREVVERSION).sql \
	$(filter-out $(ROUTER_UPDATE),$(wildcard src/sql/sharded_id_router--*--*.sql))
SCRIPTS = src/bin/sharded_id_move_shard src/bin/sharded_id_rebalance
# Installed in $(pg_config --docdir)/extension.
DOCS = $(wildcard doc/*.md)

PG_CONFIG ?= pg_config
PG_MAJOR := $(shell $(PG_CONFIG) --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')

# libpq parses the nodes' connection strings (src/connstr.c), as in
# postgres_fdw and dblink.
PG_CPPFLAGS = -I$(srcdir)/src -I$(libpq_srcdir)
SHLIB_LINK_INTERNAL = $(libpq)
# PostgreSQL 16 and later build modules with -fvisibility=hidden and mark
# what they export with PGDLLEXPORT; do the same on 15, so that no helper of
# ours can bind to another library's symbol of the same name.
ifeq ($(PG_MAJOR),15)
PG_CPPFLAGS += '-DPGDLLEXPORT=__attribute__((visibility("default")))'
endif

# pg_regress: sql/ and expected/
REGRESS = api errors labels stress counter monitor layouts helpers shards lifecycle adopt router upgrade owners owner_rollback templates schema_copy provisioner internals secrets tenants bad_input citus_absent hints
REGRESS_OPTS = --load-extension=sharded_id

# pg_isolation_regress: test/specs/ and test/expected/
ISOLATION = concurrent_shard sequence_lock counter_shard enter_shard_fence retire_fence take_back_snapshot move_snapshot
ISOLATION_OPTS = --inputdir=test --load-extension=sharded_id

# TAP: test/t/
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

# sharded_id_sql, the SQL edition, in its three forms.
include src/sql/edition/edition.mk

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# (After pgxs.mk, which may already have expanded CFLAGS with PG_CFLAGS.)
ifeq ($(PG_MAJOR),15)
override CFLAGS += -fvisibility=hidden
endif

src/sql/sharded_id--$(EXTVERSION).sql: $(API_SOURCES) sharded_id.control
	{ printf '/* %s: made by make from src/sql/api/; edit those files instead */\n\n' '$@'; \
	  cat $(API_SOURCES); } > $@

$(ROUTER_SCRIPT): $(ROUTER_SOURCES) sharded_id_router.control
	{ printf '/* %s: made by make from src/sql/router/; edit those files instead */\n\n' '$@'; \
	  cat $(ROUTER_SOURCES); } > $@

$(UPDATE_SCRIPT): src/sql/updates/sharded_id--$(PREVVERSION)--$(EXTVERSION).sql src/sql/functions.awk $(API_SOURCES) sharded_id.control
	awk -f src/sql/functions.awk $(API_SOURCES) > $@.functions
	{ printf '/* %s: made by make from src/sql/updates/ and src/sql/api/; edit those files instead */\n\n' '$@'; \
	  awk -v f=$@.functions '/^-- @functions@$$/ { while ((getline l < f) > 0) print l; next } { print }' \
	      src/sql/updates/sharded_id--$(PREVVERSION)--$(EXTVERSION).sql; } > $@
	rm -f $@.functions

$(ROUTER_UPDATE): src/sql/updates/sharded_id_router--$(ROUTER_PREVVERSION)--$(ROUTER_VERSION).sql src/sql/functions.awk $(ROUTER_FUNCTIONS) sharded_id_router.control
	awk -f src/sql/functions.awk $(ROUTER_FUNCTIONS) > $@.functions
	{ printf '/* %s: made by make from src/sql/updates/ and src/sql/router/; edit those files instead */\n\n' '$@'; \
	  awk -v f=$@.functions '/^-- @functions@$$/ { while ((getline l < f) > 0) print l; next } { print }' \
	      src/sql/updates/sharded_id_router--$(ROUTER_PREVVERSION)--$(ROUTER_VERSION).sql; } > $@
	rm -f $@.functions
