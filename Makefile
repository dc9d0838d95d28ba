# paimon_sink — built with PGXS.
MODULE_big = paimon_sink
# src/ (the module glue), then each folder of src/ in the order of test/layers,
# lowest first; headers sit beside their .c, included by path from src/
OBJS = \
	src/paimon_sink.o \
	src/shmem_hooks.o \
	src/launcher.o \
	src/core/guc.o \
	src/core/names.o \
	src/core/fault.o \
	src/core/security.o \
	src/core/shared_state.o \
	src/core/open_staged.o \
	src/core/budget.o \
	src/core/worker_start.o \
	src/core/wait_events.o \
	src/staging/staged_file.o \
	src/staging/staged_wal.o \
	src/staging/value_encoding.o \
	src/metadata/catalog.o \
	src/metadata/column_follow.o \
	src/metadata/version.o \
	src/metadata/extension.o \
	src/metadata/statement.o \
	src/metadata/metadata.o \
	src/metadata/metadata_layout.o \
	src/metadata/metadata_group.o \
	src/metadata/metadata_job.o \
	src/metadata/metadata_maintenance.o \
	src/metadata/metadata_stats.o \
	src/metadata/metadata_overwrite.o \
	src/metadata/metadata_properties.o \
	src/metadata/metadata_heap.o \
	src/metadata/metadata_sink_cache.o \
	src/metadata/write_check.o \
	src/metadata/fence.o \
	src/ipc/request.o \
	src/ipc/liveness.o \
	src/ipc/handoff_queue.o \
	src/ipc/handoff_failure.o \
	src/ipc/stream_lock.o \
	src/ipc/ahead_publish.o \
	src/apply/load.o \
	src/apply/load_layout.o \
	src/apply/upsert.o \
	src/apply/upsert_merge.o \
	src/apply/overwrite.o \
	src/apply/overwrite_route.o \
	src/apply/rejects.o \
	src/writer/writer.o \
	src/writer/writer_adopt.o \
	src/writer/writer_seal.o \
	src/writer/writer_window.o \
	src/writer/writer_barrier.o \
	src/writer/writer_open_stats.o \
	src/session/fdw.o \
	src/session/fdw_session.o \
	src/session/handoff.o \
	src/session/write_identity.o \
	src/committer/committer.o \
	src/committer/serve.o \
	src/committer/work.o \
	src/committer/prepare.o \
	src/committer/commit.o \
	src/committer/commit_batch.o \
	src/committer/commit_group.o \
	src/committer/commit_parallel.o \
	src/committer/commit_removal.o \
	src/committer/outcome_stats.o \
	src/committer/recovery.o \
	src/committer/schedule.o \
	src/committer/maintenance.o \
	src/committer/missing_files.o \
	src/committer/loader.o \
	src/committer/loader_workers.o \
	src/committer/loader_ahead.o \
	src/committer/load_ahead.o \
	src/committer/barrier.o \
	src/api/alter_sink.o \
	src/api/api.o \
	src/api/schema_change.o \
	src/api/staged_types.o \
	src/api/restart.o \
	src/api/status.o \
	src/api/sink_ddl.o \
	src/api/sink_group.o \
	src/api/sql_call.o \
	src/api/foreign_table.o \
	src/api/utility_hook.o

EXTENSION = paimon_sink
# The library's version is the control file's default_version: the catalog
# version it reads and writes (the committer waits, and calls refuse, until
# ALTER EXTENSION paimon_sink UPDATE brings an older catalog to it).
EXTVERSION = $(shell sed -n "s/^default_version = '\\(.*\\)'$$/\\1/p" $(srcdir)/paimon_sink.control)
# A released script never changes; each release adds an upgrade script.
DATA = sql/paimon_sink--0.1.sql sql/paimon_sink--0.1--0.2.sql
PGFILEDESC = "paimon_sink - exactly-once transactional sink"

PG_CPPFLAGS = -I$(srcdir)/src -DPAIMON_SINK_VERSION='"$(EXTVERSION)"'
# PGXS builds extensions with -Wshadow=compatible-local from PostgreSQL 16;
# asked on every major, so that a shadowed local fails the build on 15 too
# (test/check builds with -Werror), not only on the newer majors
PG_CFLAGS = -Wshadow=compatible-local
SHLIB_LINK = -luuid

# pg_regress inputs live in sql/ (beside the scripts the extension ships,
# which DATA names one by one: only paimon_sink--*.sql is installed), outputs
# in expected/: PGXS's own layout, pg_regress's default --inputdir.
REGRESS = setup append errors upsert retract upgrade wal properties overwrite sink_groups \
	commit_cost types entry_points unstaged_columns arguments job_identity \
	failure_counts skipped_commits monitor_role sink_stats schema_refusals alter_sink
# UTF8, so that the encoding tests mean the same everywhere
REGRESS_OPTS = --temp-config=$(srcdir)/test/paimon_sink.conf \
	--encoding=UTF8

ISOLATION = concurrent_checkpoint drop_sink foreign_table_drop end_input_race zombie_fence \
	recover_commit restart_writer checkpoint_twice drop_checkpoint schema_change_lock
ISOLATION_OPTS = --inputdir=$(srcdir)/test/isolation \
	--temp-config=$(srcdir)/test/paimon_sink.conf

TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

# SANITIZE=1: the library built with AddressSanitizer and
# UndefinedBehaviorSanitizer, for a server started with the sanitizer
# runtime preloaded (PostgreSQL's binary is not instrumented;
# test/lib/cluster.sh's ps_sanitizer_env prints that environment, and
# test/check's suite sanitize uses it).  Built by clang (PostgreSQL's
# $(CLANG), the one its JIT uses), whose runtime libclang_rt.asan carries
# UBSan's handlers too: one runtime, one report file per process.  gcc
# links two, libasan and libubsan, whose internals interpose each other:
# UBSan's reports ignore log_path and its start sends ASan's to stderr.
# UBSan reports and goes on (the harness fails the run on any report); ASan
# stops the process.  No bitcode: the JIT must not inline uninstrumented
# copies of our code.  With it, paimon_sink_sanitizer_init.so
# (test/lib/sanitizer_init.c), which the preload needs for the runtime to
# start at all (see there).
ifeq ($(SANITIZE),1)
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer
override CC = $(or $(CLANG),clang)
override with_llvm = no
# the runtime as a dependency found by rpath: ldd names it, and the library
# refuses to load without it rather than run uninstrumented checks blind
SHLIB_LINK += $(SANITIZE_FLAGS) -shared-libsan -Wl,-rpath,$(shell $(CC) --print-runtime-dir)
endif
SANITIZER_INIT = test/lib/paimon_sink_sanitizer_init$(DLSUFFIX)
# The objects of one build mode are never linked into the other: a change of
# SANITIZE rebuilds them (.build_mode holds the mode of the objects).
BUILD_MODE := sanitize=$(if $(filter 1,$(SANITIZE)),1,0)
ifneq ($(BUILD_MODE),$(shell cat .build_mode 2>/dev/null))
$(shell echo '$(BUILD_MODE)' >.build_mode)
endif
EXTRA_CLEAN = .build_mode $(SANITIZER_INIT)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

ifeq ($(SANITIZE),1)
# PostgreSQL's CFLAGS are gcc's: without the flags clang does not know, with
# the warnings PostgreSQL's configure turns off for clang and the one its
# bitcode build does (its headers' gnu_printf: the gcc build checks formats); no
# _FORTIFY_SOURCE, whose checked copies of memcpy & co. ASan does not see
override CFLAGS := $(filter-out -Wimplicit-fallthrough=3 -Wcast-function-type -fexcess-precision=standard \
	-Wno-format-truncation -Wno-stringop-truncation -Wshadow=compatible-local,$(CFLAGS)) -Wno-unused-command-line-argument \
	-Wno-compound-token-split-by-macro -Wno-ignored-attributes $(SANITIZE_FLAGS)
override CPPFLAGS := $(CPPFLAGS) -U_FORTIFY_SOURCE
endif

# the shared TAP helpers (test/perl/PaimonSinkTest.pm); after PGXS, which empties it
PROVE_FLAGS += -I ./test/perl
# TAP_JOBS=N runs N test files at once (prove -j); each file's nodes take
# their own ports (PostgreSQL::Test::Cluster locks them) and directories
ifneq ($(TAP_JOBS),)
PROVE_FLAGS += -j$(TAP_JOBS)
endif

# (srcdir is PGXS's)
ifeq ($(EXTVERSION),)
$(error paimon_sink.control has no line of the form default_version = 'X.Y')
endif

# Every object depends on every header: shared-memory layouts must agree;
# and on the control file, whose version is compiled in.
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h) $(srcdir)/paimon_sink.control .build_mode

ifeq ($(SANITIZE),1)
all: $(SANITIZER_INIT)
install: install-sanitizer-init

# not instrumented itself: it runs before the ASan runtime is initialized
$(SANITIZER_INIT): $(srcdir)/test/lib/sanitizer_init.c
	$(CC) $(CFLAGS_SL) -Wall -O2 -g -shared -o $@ $< -ldl

.PHONY: install-sanitizer-init
install-sanitizer-init: $(SANITIZER_INIT) installdirs
	$(INSTALL_SHLIB) $(SANITIZER_INIT) '$(DESTDIR)$(pkglibdir)/'
endif

.PHONY: check-format
check-format:
	clang-format --dry-run --Werror src/*.c src/*.h src/*/*.c src/*/*.h
