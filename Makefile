# Makefile for sharded_id, built with PGXS:
#   make && make install          build and install into pg_config's server
#   make installcheck             run the tests against a server that has
#                                 sharded_id in shared_preload_libraries
# test/run.sh does all of it on a throwaway cluster.

MODULE_big = sharded_id
OBJS = src/layout.o src/generator.o src/decode.o src/route.o src/shortcode.o
PGFILEDESC = "sharded_id - time-sortable 64-bit ids carrying a logical shard"

EXTENSION = sharded_id
DATA = $(wildcard src/sql/sharded_id--*.sql)
SCRIPTS = src/bin/sharded_id_move_shard

PG_CPPFLAGS = -I$(srcdir)/src

# pg_regress: sql/ and expected/
REGRESS = api errors labels stress layouts helpers shards router upgrade
REGRESS_OPTS = --load-extension=sharded_id

# pg_isolation_regress: test/specs/ and test/expected/
ISOLATION = concurrent_shard sequence_lock
ISOLATION_OPTS = --inputdir=test --load-extension=sharded_id

# TAP: test/t/
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

EXTRA_CLEAN = output_iso tmp_check results regression.diffs regression.out
