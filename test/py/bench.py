#!/usr/bin/python3
"""test/bench -- the paimon_sink benchmark: throughput, commit latency and
writer memory of the sink against PostgreSQL's own ways of loading.

One throwaway cluster (shared_buffers 1GB, max_wal_size 8GB,
checkpoint_timeout 30min, synchronous_commit on, plus test/paimon_sink.conf),
one generated data set of BENCH_ROWS rows (id bigint, k int, v text of 64
bytes, ts timestamptz) in a table `source` and in a text and a binary COPY
file, three targets of the same shape (id bigint PRIMARY KEY, k, v, ts):
target_plain for the baselines, target_sink behind the sink `sink` (as
create_sink makes it: a session's rows go to one bucket, in their order) and
target_bucketed behind `sink_bucketed` (4 buckets by id), and, when
sink_upsert runs, target_upsert behind `sink_upsert` (mode upsert, 4 buckets
on the primary key).  Before every run the target is TRUNCATEd and a SQL
CHECKPOINT is taken; after every run the target must hold exactly the rows
written (count and count(DISTINCT id); for on_conflict and sink_upsert also
every row equal to source's), otherwise the benchmark fails.  Autovacuum is off on the targets: the analyze
that one path's million rows call for would otherwise run while the next
path is timed.

Throughput paths (each BENCH_REPEAT times, in rounds over the paths so that
a noisy neighbour hits all of them alike; the median is reported):
  copy_text, copy_binary        COPY target FROM server-side file
  insert_select[_2|_8]          INSERT INTO target SELECT * FROM source
                                (_n: n sessions, WHERE id % n = i)
  multirow_insert               psycopg2 execute_values, 1000 rows/statement,
                                one transaction
  xa_2pc                        2 sessions, each a transaction of one
                                EXECUTE of a prepared single-row INSERT per
                                row (1000 per round trip, rendered before the
                                clock starts), PREPARE TRANSACTION, COMMIT
                                PREPARED: what Flink's and SeaTunnel's JDBC
                                XA sinks send through executeBatch()
  pgbench_small                 pgbench, 4 clients, 1-10 rows/transaction
  on_conflict                   INSERT INTO target SELECT * FROM source ON
                                CONFLICT (id) DO UPDATE SET k, v, ts = EXCLUDED's,
                                into a target that holds (set up untimed,
                                then VACUUM FREEZE) the even ids with other
                                k, v, ts: half the rows update, half insert
  sink_*                        the same into the foreign table `sink`, then
                                checkpoint() (timed); sink_client_batch_2 is
                                xa_2pc's code with a plain COMMIT;
                                sink_pgbench_small checkpoints every 200 ms
                                while pgbench runs, and once at the end
  sink_bucketed_insert_select   sink_insert_select into `sink_bucketed`: its
                                commit inserts file by file, each bucket's
                                ids into the middle of the primary key index
  sink_upsert                   on_conflict's pre-state, set up directly in
                                target_upsert; timed: INSERT INTO sink_upsert
                                SELECT *, NULL FROM source (row kind NULL:
                                upsert), then checkpoint()
WAL: every throughput run also measures the WAL it writes
(pg_wal_lsn_diff of pg_current_wal_insert_lsn() before and after; for the
single-statement sink paths also right after the statement, before the
checkpoint), the bytes the sink's writers staged meanwhile (the writers
view's bytes_staged: the rows' payload) and the target's heap size after it
(pg_relation_size, main fork).  Reported per path, median of the runs with
their range: the staging statement's WAL per staged byte (sink paths), the
whole run's WAL per heap byte (for a plain path: its statement, index
included), and the whole run's WAL against its counterpart's.
Commit latency: BENCH_COMMIT_ROUNDS rounds of (insert 1 or 100 rows into the
sink + checkpoint()) against (BEGIN; INSERT; PREPARE TRANSACTION; COMMIT
PREPARED), interleaved; p50/p99 in ms.
Writer memory: writers restarted, then BENCH_MEM_SMALL and BENCH_MEM_LARGE
rows through one INSERT ... SELECT generate_series and one checkpoint while
/proc/<pid>/status and smaps_rollup of every writer are sampled every 100 ms.

A make install by someone else during the run (the library replaced under
the cluster) is reported as a WARNING on stderr.
Results go to stdout (tables) and BENCH_OUT (default bench-results/ at the
repo root): throughput.tsv, runs.tsv, latency.tsv, memory.tsv, meta.tsv,
summary.txt, wal.tsv, throughput.png (gnuplot).  Progress and the time of
every phase go to stderr.  The last line is always
  bench: sink_vs_insert_select=R sink_copy_vs_copy=R sink_vs_xa=R commit_p50_vs_2pc=R writer_mem_10m_vs_1m=R upsert_vs_on_conflict=R sink_wal_per_staged_byte=R insert_select_wal_per_heap_byte=R sink_wal_vs_insert_select=R small_tx_vs_plain=R
(n/a: not measured; upsert_vs_on_conflict is sink_upsert's rows/s over
on_conflict's; small_tx_vs_plain is sink_pgbench_small's rows/s over
pgbench_small's; sink_wal_per_staged_byte is sink_insert_select's WAL of the
INSERT statement over the bytes it staged, insert_select_wal_per_heap_byte
the plain insert_select's WAL over its heap bytes, sink_wal_vs_insert_select
sink_insert_select's WAL, checkpoint included, over insert_select's).  Exit
0 only if every run delivered exactly its rows.

Usage: test/bench [--quick] [--only PATH[,PATH...]] [--skip-build] [--list]
  --quick   BENCH_ROWS=100000 BENCH_COMMIT_ROUNDS=50 BENCH_MEM_LARGE=0
            BENCH_PGBENCH_SECONDS=5 (variables set explicitly still win)
  --only    run only these paths; commit_latency and writer_memory name the
            other two phases (see --list)
Environment: BENCH_ROWS (1000000), BENCH_REPEAT (3), BENCH_COMMIT_ROUNDS
(500), BENCH_MEM_SMALL (1000000), BENCH_MEM_LARGE (10000000; 0 skips),
BENCH_PGBENCH_SECONDS (20), BENCH_OUT, BENCH_SKIP_BUILD=1 (use the installed
extension), KEEP_TMP=1 (keep the temp dir), BENCH_CONF (settings added to the
cluster's, separated by ";", e.g. "paimon_sink.load_ahead = off").

How periodic checkpoints scale with the sinks of a database (1, 10 and 100
sinks at 200 ms, and 10 busy sinks beside one big checkpoint) is the other
program, test/py/bench_scale.py: `test/bench --scale [--quick]` runs it.

As root it does what test/demo does: installs missing packages (and
gnuplot-nox), builds and installs the extension from a copy of the repo, runs
the cluster as the OS user postgres in a temp dir (unix socket only) and
removes everything at exit, also on Ctrl-C.
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import traceback

# the harness first: it installs psycopg2 when it is missing
from harness import ControlQueries, PGBIN, ROOT, Cluster, finish_run, interrupt_on_signals, library_path, percentile, pg_user
from harness import lib_identity as file_identity

import psycopg2
import psycopg2.extras

CLUSTER = "bench"
SINK = "sink"
PLAIN = "target_plain"
SINKT = "target_sink"
# a second sink that hashes id into 4 buckets: rows of an increasing key
# then reach the target file by file, not in key order (see sink_bucketed_*)
BSINK = "sink_bucketed"
BSINKT = "target_bucketed"
# an upsert sink (4 buckets on the primary key), set up only when a path
# needs it; its paths start from a target holding half the keys
USINK = "sink_upsert"
USINKT = "target_upsert"
SINK_OF = {SINKT: SINK, BSINKT: BSINK, USINKT: USINK}  # target table -> its sink
STMT_TIMEOUT_MS = 900000  # a guard against hangs, not a limit on any path
CONF = """
# ---- test/bench (the same for every path) ----
shared_buffers = 1GB
max_wal_size = 8GB
checkpoint_timeout = 30min
synchronous_commit = on
max_connections = 50
"""


def sink_name(name):
    """name if it is one of the sinks (the paths take what they write into)."""
    return name if name in SINK_OF.values() else None


def row_sql(g):
    """Generated row number g, in SQL: the same data in source, the memory
    phase and pgbench (double the % for a query with parameters)."""
    return ("{g}, (({g} * 7919) % 100000)::int, md5({g}::text) || md5(({g} + 1)::text), "
            "timestamptz '2024-01-01 00:00:00+00' + {g} * interval '1 ms'").format(g=g)


# name -> (target, counterpart baseline of a sink path)
PATHS = {
    "copy_text": (PLAIN, None),
    "copy_binary": (PLAIN, None),
    "insert_select": (PLAIN, None),
    "insert_select_2": (PLAIN, None),
    "insert_select_8": (PLAIN, None),
    "multirow_insert": (PLAIN, None),
    "xa_2pc": (PLAIN, None),
    "pgbench_small": (PLAIN, None),
    "on_conflict": (PLAIN, None),
    "sink_insert_select": (SINKT, "insert_select"),
    "sink_copy_text": (SINKT, "copy_text"),
    "sink_copy_binary": (SINKT, "copy_binary"),
    "sink_insert_select_2": (SINKT, "insert_select_2"),
    "sink_insert_select_8": (SINKT, "insert_select_8"),
    "sink_bucketed_insert_select": (BSINKT, "insert_select"),
    "sink_client_batch_2": (SINKT, "xa_2pc"),
    "sink_pgbench_small": (SINKT, "pgbench_small"),
    "sink_upsert": (USINKT, "on_conflict"),
}
PHASES = ["commit_latency", "writer_memory"]
CLIENT_PATHS = {"multirow_insert", "xa_2pc", "sink_client_batch_2"}
FILE_PATHS = {"copy_text", "copy_binary", "sink_copy_text", "sink_copy_binary"}
PGBENCH_PATHS = {"pgbench_small", "sink_pgbench_small"}
UPSERT_PATHS = {"on_conflict", "sink_upsert"}  # start from half the keys, end as source

T0 = time.monotonic()


def log(msg):
    """log prints a progress line, with the seconds since the start, to stderr."""
    print("[bench %6.1fs] %s" % (time.monotonic() - T0, msg), file=sys.stderr, flush=True)


class BenchFail(Exception):
    """A run delivered the wrong rows, or the benchmark cannot go on."""


def pg_error(e):
    """The server's full message (ERROR, DETAIL, HINT, CONTEXT) or the exception."""
    text = (getattr(e, "pgerror", None) or str(e) or type(e).__name__).strip()
    code = getattr(e, "pgcode", None)
    return ("[SQLSTATE %s] %s" % (code, text)) if code else text


def lib_identity():
    """The installed library's identity: a make install during the run
    replaces it under the cluster (new backends load the new build)."""
    return file_identity(library_path())


# ----------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------

def parse_args():
    """parse_args reads the options and the BENCH_* sizes (--quick's smaller defaults, an explicit
    variable still winning) and the paths selected; --list prints them and exits."""
    p = argparse.ArgumentParser(prog="bench", description="paimon_sink benchmark (see the header of test/bench)")
    p.add_argument("--quick", action="store_true", help="small sizes for fast iteration")
    p.add_argument("--only", default="", help="comma list of paths/phases to run (see --list)")
    p.add_argument("--skip-build", action="store_true", default=os.environ.get("BENCH_SKIP_BUILD") == "1")
    p.add_argument("--list", action="store_true", help="list the paths and phases, and exit")
    cfg = p.parse_args()
    if cfg.list:
        print("\n".join(list(PATHS) + PHASES))
        sys.exit(0)
    quick = {"BENCH_ROWS": 100000, "BENCH_COMMIT_ROUNDS": 50, "BENCH_MEM_LARGE": 0, "BENCH_PGBENCH_SECONDS": 5}
    defaults = {"BENCH_ROWS": 1000000, "BENCH_REPEAT": 3, "BENCH_COMMIT_ROUNDS": 500,
                "BENCH_MEM_SMALL": 1000000, "BENCH_MEM_LARGE": 10000000, "BENCH_PGBENCH_SECONDS": 20}
    for k, d in defaults.items():
        v = os.environ.get(k) or (quick.get(k, d) if cfg.quick else d)
        try:
            v = int(v)
        except ValueError:
            p.error("%s must be an integer" % k)
        setattr(cfg, k[6:].lower(), v)
    if cfg.rows < 8 or cfg.repeat < 1 or cfg.commit_rounds < 1 or cfg.mem_small < 1 or cfg.pgbench_seconds < 1:
        p.error("BENCH_ROWS >= 8, BENCH_REPEAT, BENCH_COMMIT_ROUNDS, BENCH_MEM_SMALL, BENCH_PGBENCH_SECONDS >= 1")
    cfg.out = os.path.abspath(os.environ.get("BENCH_OUT") or os.path.join(ROOT, "bench-results"))
    known = list(PATHS) + PHASES
    if cfg.only:
        sel = [s.strip() for s in cfg.only.split(",") if s.strip()]
        bad = [s for s in sel if s not in known]
        if bad:
            p.error("unknown path(s) %s; known: %s" % (", ".join(bad), ", ".join(known)))
        cfg.selected = [s for s in known if s in sel]
    else:
        cfg.selected = known
    return cfg


# ----------------------------------------------------------------------------
# The benchmark
# ----------------------------------------------------------------------------

class Bench(ControlQueries):
    """The benchmark: one cluster, the data set, every path's runs, the commit latency and writer
    memory phases, and the report."""

    def __init__(self, cfg, h):
        """__init__ sets up empty results for the configuration and the cluster h."""
        self.cfg = cfg
        self.h = h
        self.user = pg_user()
        self.ctl = None
        self.client_rows = None
        self.client_pages = None
        self.runs = []        # (path, rep, rows, seconds, extra)
        self.wal = []         # (path, rep, WAL bytes of the statement, of the run, bytes staged, heap bytes)
        self.ahead = {}       # path -> [(bytes, seconds) loaded ahead before checkpoint()]
        self.split = None     # single(): the WAL mark right after a sink path's statement
        self.split_s = None   # single(): the seconds of that statement, before its checkpoint
        self.latency = {}     # kind -> [ms]
        self.memory = []      # dicts
        self.phase_times = []  # (phase, seconds)
        self.procs = []       # subprocesses to stop on exit
        self.load_start = os.getloadavg()
        self.lib = None

    # connections ------------------------------------------------------------
    def connect(self, app, autocommit=True):
        """A connection named bench-APP, with a statement timeout that
        guards against hangs."""
        return self.h.server(connect_timeout=10, app_prefix="bench-").connect(
            app, autocommit=autocommit, statement_timeout_ms=STMT_TIMEOUT_MS)

    # setup ----------------------------------------------------------------------
    def setup(self):
        """setup installs what is missing (and gnuplot-nox), builds and installs the extension
        unless told not to, starts the cluster with the bench's settings and creates the targets
        and sinks the selected paths need."""
        cfg, h = self.cfg, self.h
        t = time.monotonic()
        h.sh("eval", "PS_PACKAGES+=(gnuplot-nox); ps_ensure_packages")
        h.create_workdir()
        if cfg.skip_build:
            log("build: skipped (BENCH_SKIP_BUILD=1), using the installed extension")
        else:
            log("build: make COPT=-Werror && make install (in a copy of %s)" % ROOT)
            blog = os.path.join(h.work, "logs", "build.log")
            rc = h.build_install(blog, stderr_too=True)
            if rc != 0:
                with open(blog) as f:
                    sys.stderr.write("".join(f.readlines()[-40:]))
                raise BenchFail("build or make install failed")
        self.lib = lib_identity()
        h.create(CONF + "".join(line.strip() + "\n" for line in os.environ.get("BENCH_CONF", "").split(";")))
        h.start()
        self.datadir = os.path.join(h.work, "data")
        os.makedirs(self.datadir, exist_ok=True)
        h.sh("ps_chown_work")
        self.ctl = self.connect("ctl")
        # autovacuum off on the targets: the analyze that one path's million rows call for would
        # otherwise run while the next path is timed (a sink path's target as a plain one's, now
        # that the committer's counts reach the statistics); reset() truncates them anyway
        ddl = ("CREATE TABLE %s (id bigint PRIMARY KEY, k int, v text, ts timestamptz) "
               "WITH (autovacuum_enabled = off)")
        self.q("CREATE EXTENSION paimon_sink")
        self.q(ddl % PLAIN)
        self.q(ddl % SINKT)
        self.q(ddl % BSINKT)
        self.q("SELECT * FROM paimon_sink.create_sink(%s, %s)", (SINK, SINKT))
        self.q("SELECT * FROM paimon_sink.create_sink(%s, %s, buckets => 4, bucket_key => '{id}')", (BSINK, BSINKT))
        upsert = "sink_upsert" in cfg.selected
        if upsert:
            self.q(ddl % USINKT)
            self.q("SELECT * FROM paimon_sink.create_sink(%s, %s, mode => 'upsert', buckets => 4)", (USINK, USINKT))
        self.q("CREATE SEQUENCE bench_ids")  # pgbench ids: unique, and their count
        self.writers = int(self.q1("SELECT current_setting('paimon_sink.writers_per_database')"))
        self.wait_writers(set(), 60)
        log("cluster: socket %s port %d, log %s; sink %s on %s, %s on %s (4 buckets by id)%s, %d writers ready"
            % (h.sockdir, h.port, h.server_log, SINK, SINKT, BSINK, BSINKT,
               ", %s on %s (upsert, 4 buckets by id)" % (USINK, USINKT) if upsert else "", self.writers))
        self.phase("setup", t)

    def phase(self, name, t):
        """phase records and logs how long phase name took since t."""
        dt = time.monotonic() - t
        self.phase_times.append((name, dt))
        log("phase %s: %.1f s" % (name, dt))

    def writer_pids(self):
        """writer_pids lists the pids of the paimon_sink writers running now."""
        return sorted(r[0] for r in self.q(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'paimon_sink writer'"))

    def wait_writers(self, old, seconds):
        """Until every writer is ready, none of them one of the old pids."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            rows = self.q("SELECT pid, ready FROM paimon_sink.writers")
            pids = {r[0] for r in rows if r[1] and r[0]}
            if len(pids) == self.writers and not (pids & old) and set(self.writer_pids()) == pids:
                return sorted(pids)
            time.sleep(0.1)
        raise BenchFail("the sink's writers are not ready after %d s: %s" % (seconds, self.q(
            "SELECT * FROM paimon_sink.writers")))

    # data ---------------------------------------------------------------------
    def make_data(self):
        """make_data generates the source table, the COPY files and the client paths' rows and
        pages, as far as the selected paths need them."""
        cfg = self.cfg
        t = time.monotonic()
        need = set(cfg.selected)
        if not (need - PGBENCH_PATHS - set(PHASES)):
            return
        self.q("CREATE TABLE source (id bigint, k int, v text, ts timestamptz)")
        self.q("INSERT INTO source SELECT %s FROM generate_series(1, %d::bigint) g"
               % (row_sql("g"), cfg.rows))
        self.q("VACUUM (FREEZE, ANALYZE) source")  # hint bits set once, not in the first run
        self.text_file = os.path.join(self.datadir, "source.txt")
        self.bin_file = os.path.join(self.datadir, "source.bin")
        if need & FILE_PATHS:
            self.q("COPY source TO %s", (self.text_file,))
            self.q("COPY source TO %s (FORMAT binary)", (self.bin_file,))
        if need & CLIENT_PATHS:
            # the client paths send the same rows, as Python values
            conn = self.connect("fetch")
            with conn.cursor() as cur:
                cur.execute("SELECT id, k, v, ts FROM source ORDER BY id")
                self.client_rows = cur.fetchall()
            # xa_2pc and sink_client_batch_2 send what a JDBC sink's
            # executeBatch() of a prepared INSERT sends: one EXECUTE per row,
            # 1000 per round trip.  The pages are rendered here, untimed, so
            # that the client's own work does not hide the server's.
            with conn.cursor() as cur:
                self.client_pages = [
                    [b";".join(cur.mogrify("EXECUTE ins(%s, %s, %s, %s)", r) for r in half[p:p + 1000])
                     for p in range(0, len(half), 1000)]
                    for half in ([r for r in self.client_rows if r[0] % 2 == i] for i in range(2))]
            conn.close()
        log("data: %d rows in source (%s)%s%s" % (
            cfg.rows, self.q1("SELECT pg_size_pretty(pg_total_relation_size('source'))"),
            ", text file %.0f MB, binary file %.0f MB" % (os.path.getsize(self.text_file) / 1e6,
                                                         os.path.getsize(self.bin_file) / 1e6)
            if need & FILE_PATHS else "", ", %d rows fetched for the client paths" % len(self.client_rows)
            if self.client_rows else ""))
        self.phase("data", t)

    # run helpers --------------------------------------------------------------
    def reset(self, target, half=False):
        """Every run starts alike: empty target (half: holding the even ids of
        source with other k, v, ts, settled by VACUUM FREEZE), nothing
        pending, a fresh checkpoint."""
        for (gid,) in self.q("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'xa\\_%' OR gid LIKE 'lat\\_%'"):
            self.q("ROLLBACK PREPARED %s", (gid,))
        if target in SINK_OF:
            pending = self.q1("SELECT count(*) FROM paimon_sink.pending_checkpoints")
            if pending:
                raise BenchFail("%d checkpoint(s) of the sink still pending before a run" % pending)
        self.q("TRUNCATE %s" % target)
        if half:
            self.q("INSERT INTO %s SELECT id, k + 1, md5(v), ts - interval '1 day' FROM source WHERE id %% 2 = 0"
                   % target)
            self.q("VACUUM (FREEZE, ANALYZE) %s" % target)
        self.q("ALTER SEQUENCE bench_ids RESTART")
        self.q("CHECKPOINT")

    def checkpoint(self, cur, sink=SINK):
        """checkpoint calls checkpoint(sink) on cur and returns snapshots, rows and files."""
        cur.execute("SELECT count(*), coalesce(sum(row_count), 0), coalesce(sum(file_count), 0) "
                    "FROM paimon_sink.checkpoint(%s)", (sink,))
        return cur.fetchone()

    def verify(self, path, target, expected):
        """verify fails the benchmark unless target holds exactly expected rows with distinct ids
        (and, for the upsert paths, every row equal to source's)."""
        n, d = self.q("SELECT count(*), count(DISTINCT id) FROM %s" % target)[0]
        if n != expected or d != expected:
            raise BenchFail("%s: %s holds %d rows (%d distinct ids), expected %d" % (path, target, n, d, expected))
        if path in UPSERT_PATHS:
            # every row as in source: the updated half too
            bad = self.q1("SELECT count(*) FROM source s FULL JOIN %s t ON t.id = s.id WHERE s.id IS NULL "
                          "OR t.id IS NULL OR (t.k, t.v, t.ts) IS DISTINCT FROM (s.k, s.v, s.ts)" % target)
            if bad:
                raise BenchFail("%s: %d row(s) of %s differ from source (missing, extra or not updated)"
                                % (path, bad, target))

    def parallel(self, n, work, after=None):
        """Run work(i, conn) in n threads started at once; then after(); the
        wall time from the start to the end of after()."""
        conns = [self.connect("s%d" % i) for i in range(n)]
        start = threading.Barrier(n + 1)
        errors = []

        def body(i):
            """body is one thread: wait for the start, then work(i, conn), keeping its error."""
            try:
                start.wait()
                work(i, conns[i])
            except BaseException as e:
                errors.append(e)
        threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
        for th in threads:
            th.start()
        start.wait()
        t0 = time.perf_counter()
        for th in threads:
            th.join()
        extra = None
        if not errors and after is not None:
            extra = after()
        dt = time.perf_counter() - t0
        for c in conns:
            c.close()
        if errors:
            raise errors[0]
        return dt, extra

    def ckpt_after(self, sink=SINK):
        """ckpt_after checkpoints the sink on the control connection."""
        with self.ctl.cursor() as cur:
            return self.checkpoint(cur, sink)

    # the paths ----------------------------------------------------------------
    def wal_mark(self):
        """wal_mark returns (WAL insert position as bytes from 0/0, bytes staged by the writers so
        far), read on the control connection."""
        return tuple(int(v) for v in self.q(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0'), "
            "(SELECT coalesce(sum(bytes_staged), 0) FROM paimon_sink.writers)")[0])

    def ahead_mark(self):
        """ahead_mark returns (bytes, seconds) the database's loaders loaded ahead so far, before
        their checkpoints were given to them (load_ahead_status())."""
        r = self.q("SELECT bytes_loaded_ahead, seconds_loading_ahead FROM paimon_sink.load_ahead_status()")[0]
        return int(r[0]), float(r[1])

    def single(self, sql, args=None, sink=None):
        """sink: the sink to checkpoint after the statement, or None; for a sink the WAL mark between
        the two is kept in self.split (one query on the control connection, inside the timing)."""
        conn = self.connect("single")
        try:
            with conn.cursor() as cur:
                t0 = time.perf_counter()
                cur.execute(sql, args)
                if sink:
                    self.split_s = time.perf_counter() - t0
                    self.split = self.wal_mark()
                ck = self.checkpoint(cur, sink) if sink else None
                return time.perf_counter() - t0, ck
        finally:
            conn.close()

    def run_copy_text(self, target):
        """run_copy_text is COPY FROM the text file into target (then a checkpoint for a sink)."""
        return self.single("COPY %s FROM %%s" % target, (self.text_file,), sink_name(target))

    def run_copy_binary(self, target):
        """run_copy_binary is COPY FROM the binary file into target (then a checkpoint for a sink)."""
        return self.single("COPY %s FROM %%s (FORMAT binary)" % target, (self.bin_file,), sink_name(target))

    def run_insert_select(self, target):
        """run_insert_select is INSERT INTO target SELECT * FROM source (then a checkpoint for a
        sink)."""
        return self.single("INSERT INTO %s SELECT * FROM source" % target, None, sink_name(target))

    def run_on_conflict(self, target):
        """run_on_conflict is INSERT ... ON CONFLICT (id) DO UPDATE from source into target."""
        return self.single("INSERT INTO %s SELECT * FROM source ON CONFLICT (id) DO UPDATE "
                           "SET k = EXCLUDED.k, v = EXCLUDED.v, ts = EXCLUDED.ts" % target)

    def run_sink_upsert(self, target):
        """target: the upsert sink; every row an upsert (row kind NULL)."""
        return self.single("INSERT INTO %s SELECT *, NULL FROM source" % target, None, target)

    def run_insert_select_n(self, target, n):
        """run_insert_select_n is insert_select from n sessions at once, session i taking id % n =
        i."""
        def work(i, conn):
            """work is session i's share of the rows."""
            with conn.cursor() as cur:
                cur.execute("INSERT INTO %s SELECT * FROM source WHERE id %% %d = %d" % (target, n, i))
        return self.parallel(n, work, self.ckpt_after if target == SINK else None)

    def run_multirow_insert(self, target):
        """run_multirow_insert sends the client rows with execute_values, 1000 per statement, in one
        transaction."""
        conn = self.connect("multirow", autocommit=False)
        try:
            with conn.cursor() as cur:
                t0 = time.perf_counter()
                psycopg2.extras.execute_values(cur, "INSERT INTO %s VALUES %%s" % target, self.client_rows,
                                               page_size=1000)
                conn.commit()
                return time.perf_counter() - t0, None
        finally:
            conn.close()

    def run_client_batch_2(self, target, rep):
        """xa_2pc (plain target) or sink_client_batch_2 (the sink): the same
        client code; XA prepares both branches before committing either."""
        xa = target != SINK
        prepared = threading.Barrier(2, timeout=STMT_TIMEOUT_MS / 1000)
        prepare = "PREPARE ins (bigint, int, text, timestamptz) AS INSERT INTO %s VALUES ($1, $2, $3, $4)" % target

        def work(i, conn):
            """work is branch i: its pages of EXECUTEs in one transaction, then PREPARE TRANSACTION
            and (once both prepared) COMMIT PREPARED for XA, or COMMIT."""
            try:
                with conn.cursor() as cur:
                    cur.execute(prepare)
                    cur.execute("BEGIN")
                    for page in self.client_pages[i]:
                        cur.execute(page)
                    if xa:
                        gid = "xa_%d_%d" % (rep, i)
                        cur.execute("PREPARE TRANSACTION %s", (gid,))
                        prepared.wait()
                        cur.execute("COMMIT PREPARED %s", (gid,))
                    else:
                        cur.execute("COMMIT")
            except BaseException:
                prepared.abort()
                raise
        return self.parallel(2, work, None if xa else self.ckpt_after)

    def run_pgbench(self, target):
        """run_pgbench runs pgbench (4 clients, 1-10 rows per transaction) into target for
        BENCH_PGBENCH_SECONDS, for the sink with a checkpoint every 200 ms and one at the end;
        returns the time, the extra figures and the rows drawn."""
        cfg = self.cfg
        script = os.path.join(self.datadir, "small_%s.pgbench" % target)
        with open(script, "w") as f:
            f.write("-- 1-10 rows per transaction, ids from a sequence (no collisions)\n"
                    "\\set n random(1, 10)\n"
                    "INSERT INTO %s SELECT %s FROM (SELECT nextval('bench_ids') AS s "
                    "FROM generate_series(1, :n)) q;\n" % (target, row_sql("s")))
        cmd = [os.path.join(PGBIN, "pgbench"), "-n", "-c", "4", "-j", "2", "-T", str(cfg.pgbench_seconds),
               "-f", script, "-h", self.h.sockdir, "-p", str(self.h.port), "-U", self.user, "postgres"]
        stop = threading.Event()
        loop = {"calls": 0, "snapshots": 0, "error": None}

        def ckpt_loop():
            """ckpt_loop checkpoints the sink every 200 ms until stopped, counting calls and
            snapshots."""
            try:
                conn = self.connect("ckpt-loop")
                with conn.cursor() as cur:
                    while not stop.is_set():
                        t = time.monotonic()
                        loop["snapshots"] += self.checkpoint(cur)[0]
                        loop["calls"] += 1
                        stop.wait(max(0.0, 0.2 - (time.monotonic() - t)))
                conn.close()
            except BaseException as e:
                loop["error"] = e
        th = threading.Thread(target=ckpt_loop, daemon=True)
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, PGAPPNAME="bench-pgbench"))
        self.procs.append(p)
        if target == SINK:
            th.start()
        try:
            out, _ = p.communicate(timeout=cfg.pgbench_seconds + 300)
        finally:
            stop.set()
            if th.is_alive():
                th.join()
            self.procs.remove(p)
        if p.returncode != 0:
            raise BenchFail("pgbench into %s failed (exit %d):\n%s" % (target, p.returncode, out.strip()))
        if loop["error"] is not None:
            raise loop["error"]
        ck = self.ckpt_after() if target == SINK else None
        dt = time.perf_counter() - t0
        m = re.search(r"number of transactions actually processed: (\d+)", out)
        failed = re.search(r"number of failed transactions: (\d+)", out)
        if not m or (failed and int(failed.group(1)) != 0):
            raise BenchFail("pgbench into %s: unexpected output:\n%s" % (target, out.strip()))
        drawn = self.q1("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM bench_ids")
        extra = "transactions=%s" % m.group(1)
        if target == SINK:
            extra += " checkpoint_calls=%d snapshots=%d" % (loop["calls"], loop["snapshots"] + ck[0])
        return dt, extra, drawn

    def run_path(self, path, rep):
        """run_path is one run of a path: reset its target, time it, check the checkpoint's rows and
        the target, record and log the run."""
        cfg = self.cfg
        target, _ = PATHS[path]
        tname = SINK_OF.get(target, PLAIN)  # what the path writes into
        self.reset(target, half=path in UPSERT_PATHS)
        expected = cfg.rows
        extra = ""
        self.split = self.split_s = None
        ahead0 = self.ahead_mark() if target in SINK_OF else None
        mark0 = self.wal_mark()
        if path == "on_conflict":
            dt, ck = self.run_on_conflict(tname)
        elif path == "sink_upsert":
            dt, ck = self.run_sink_upsert(tname)
        elif path.endswith("copy_text"):
            dt, ck = self.run_copy_text(tname)
        elif path.endswith("copy_binary"):
            dt, ck = self.run_copy_binary(tname)
        elif path.endswith("insert_select"):
            dt, ck = self.run_insert_select(tname)
        elif re.search(r"insert_select_\d+$", path):
            dt, ck = self.run_insert_select_n(tname, int(path.rsplit("_", 1)[1]))
        elif path == "multirow_insert":
            dt, ck = self.run_multirow_insert(tname)
        elif path in ("xa_2pc", "sink_client_batch_2"):
            dt, ck = self.run_client_batch_2(tname, rep)
        elif path in PGBENCH_PATHS:
            dt, extra, expected = self.run_pgbench(tname)
            ck = None
        else:
            raise AssertionError(path)
        if ck is not None:
            extra = (extra + " " if extra else "") + "snapshots=%d files=%d" % (ck[0], ck[2])
            if path not in PGBENCH_PATHS and ck[1] != expected:
                raise BenchFail("%s: the checkpoint committed %d rows, expected %d" % (path, ck[1], expected))
        mark1 = self.wal_mark()
        self.verify(path, target, expected)
        self.runs.append((path, rep, expected, dt, extra))
        heap = int(self.q1("SELECT pg_relation_size(%s::regclass)", (target,)))
        # the statement's own WAL: known for the sink paths of one statement (single), and for a
        # plain path it is the run's
        stmt = self.split[0] - mark0[0] if self.split else None if target in SINK_OF else mark1[0] - mark0[0]
        self.wal.append((path, rep, stmt, mark1[0] - mark0[0], mark1[1] - mark0[1], heap))
        extra = (extra + " " if extra else "") + "wal=%.1fMB heap=%.1fMB%s%s" % (
            (mark1[0] - mark0[0]) / 1e6, heap / 1e6,
            " staged=%.1fMB" % ((mark1[1] - mark0[1]) / 1e6) if target in SINK_OF else "",
            " statement_wal=%.0fkB" % (stmt / 1e3) if target in SINK_OF and stmt is not None else "")
        if self.split_s is not None:
            extra += " statement=%.2fs checkpoint=%.2fs" % (self.split_s, dt - self.split_s)
        if ahead0 is not None:
            ahead1 = self.ahead_mark()
            self.ahead.setdefault(path, []).append((ahead1[0] - ahead0[0], ahead1[1] - ahead0[1]))
            extra += " loaded_ahead=%dB/%.2fs" % (ahead1[0] - ahead0[0], ahead1[1] - ahead0[1])
        log("%-22s run %d/%d: %8.2f s %12s rows/s  %s" % (path, rep, cfg.repeat, dt,
                                                         "{:,.0f}".format(expected / dt), extra))

    def wal_summary(self):
        """path -> {figure: (median, min, max)} over the path's runs, for the figures that apply:
        stmt_per_staged (a sink path's statement WAL per staged byte), per_heap (the run's WAL per
        heap byte), vs_counterpart (the run's WAL over the counterpart path's median WAL), and the
        medians of the raw byte counts (wal, staged, heap)."""
        def med(rows, i):
            """med is the median of column i of a path's WAL rows."""
            return statistics.median(r[i] for r in rows)
        res = {}
        for p in PATHS:
            rows = [r for r in self.wal if r[0] == p]
            if not rows:
                continue
            figs = {"wal": med(rows, 3), "staged": med(rows, 4), "heap": med(rows, 5)}

            def spread(values):
                """spread is (median, min, max) of a non-empty list, or None for an empty one."""
                return (statistics.median(values), min(values), max(values)) if values else None
            target, base = PATHS[p]
            if target in SINK_OF:
                figs["stmt_per_staged"] = spread([r[2] / r[4] for r in rows if r[2] is not None and r[4] > 0])
            figs["per_heap"] = spread([r[3] / r[5] for r in rows if r[5] > 0])
            base_rows = [r for r in self.wal if r[0] == base] if base else []
            if base_rows:
                figs["vs_counterpart"] = spread([r[3] / med(base_rows, 3) for r in rows])
            res[p] = figs
        return res

    def throughput(self):
        """throughput runs the selected paths BENCH_REPEAT times, in rounds over the paths."""
        paths = [p for p in PATHS if p in self.cfg.selected]
        if not paths:
            return
        t = time.monotonic()
        per = {p: 0.0 for p in paths}
        for rep in range(1, self.cfg.repeat + 1):
            for p in paths:
                tp = time.monotonic()
                self.run_path(p, rep)
                per[p] += time.monotonic() - tp
        for p in paths:
            log("    %-22s %.1f s in all (with resets and checks)" % (p, per[p]))
        # loading ahead (paimon_sink.load_ahead): what each sink path loaded before checkpoint()
        for p in paths:
            if p in self.ahead:
                b = statistics.median(a[0] for a in self.ahead[p])
                sec = statistics.median(a[1] for a in self.ahead[p])
                log("    %-22s loaded before checkpoint(): %d bytes in %.2f s (median of %d runs)"
                    % (p, b, sec, len(self.ahead[p])))
        self.phase("throughput", t)

    # commit latency -------------------------------------------------------------
    def commit_latency(self):
        """commit_latency times, interleaved, a sink insert plus checkpoint() against BEGIN, INSERT,
        PREPARE TRANSACTION, COMMIT PREPARED and a plain commit, for 1 and 100 rows."""
        if "commit_latency" not in self.cfg.selected:
            return
        t = time.monotonic()
        rounds, warm = self.cfg.commit_rounds, 5
        self.reset(PLAIN)
        self.reset(SINKT)
        sink = self.connect("lat-sink")
        plain = self.connect("lat-plain")
        kinds = ["sink_1row", "sink_100row", "bare_2pc_1row", "bare_2pc_100row", "plain_commit_1row",
                 "checkpoint_only_1row", "checkpoint_only_100row"]
        lat = {k: [] for k in kinds}
        nid = [0, 0]  # next id in target_sink, target_plain
        ins = ("INSERT INTO {t} SELECT " + row_sql("g").replace("%", "%%") +
               " FROM generate_series(%s::bigint, %s::bigint) g")

        def sink_round(n):
            """sink_round inserts n rows into the sink and checkpoints: the whole time and the
            checkpoint's alone, in ms."""
            with sink.cursor() as cur:
                a, nid[0] = nid[0] + 1, nid[0] + n
                t0 = time.perf_counter()
                cur.execute(ins.format(t=SINK), (a, nid[0]))
                t1 = time.perf_counter()
                ck = self.checkpoint(cur)
                t2 = time.perf_counter()
            if ck[1] != n:
                raise BenchFail("commit latency: a checkpoint committed %d rows, expected %d" % (ck[1], n))
            return (t2 - t0) * 1e3, (t2 - t1) * 1e3

        def two_pc_round(n, r):
            """two_pc_round inserts n rows in a prepared transaction and commits it: ms."""
            with plain.cursor() as cur:
                a, nid[1] = nid[1] + 1, nid[1] + n
                gid = "lat_%d_%d" % (n, r)
                t0 = time.perf_counter()
                cur.execute("BEGIN")
                cur.execute(ins.format(t=PLAIN), (a, nid[1]))
                cur.execute("PREPARE TRANSACTION %s", (gid,))
                cur.execute("COMMIT PREPARED %s", (gid,))
                return (time.perf_counter() - t0) * 1e3

        def plain_round():
            """plain_round inserts one row in autocommit: ms."""
            with plain.cursor() as cur:
                a = nid[1] = nid[1] + 1
                t0 = time.perf_counter()
                cur.execute(ins.format(t=PLAIN), (a, a))
                return (time.perf_counter() - t0) * 1e3

        # interleaved, so that noise from other jobs hits every kind alike
        for r in range(warm + rounds):
            s1 = sink_round(1)
            s100 = sink_round(100)
            p1 = two_pc_round(1, r)
            p100 = two_pc_round(100, r)
            pc = plain_round()
            if r >= warm:
                lat["sink_1row"].append(s1[0])
                lat["checkpoint_only_1row"].append(s1[1])
                lat["sink_100row"].append(s100[0])
                lat["checkpoint_only_100row"].append(s100[1])
                lat["bare_2pc_1row"].append(p1)
                lat["bare_2pc_100row"].append(p100)
                lat["plain_commit_1row"].append(pc)
        sink.close()
        plain.close()
        self.verify("commit_latency", SINKT, nid[0])
        self.verify("commit_latency", PLAIN, nid[1])
        self.latency = lat
        log("commit latency: %d rounds (+%d warm-up) of each kind; p50 sink 1 row %.2f ms, bare 2PC 1 row %.2f ms"
            % (rounds, warm, percentile(lat["sink_1row"], 50), percentile(lat["bare_2pc_1row"], 50)))
        self.phase("commit_latency", t)

    # writer memory ----------------------------------------------------------------
    @staticmethod
    def read_mem(pid):
        """kB: VmHWM, RssAnon from status; Private_Dirty, Anonymous from smaps_rollup."""
        m = {}
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "RssAnon"):
                    m[k] = int(v.split()[0])
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Private_Dirty", "Anonymous"):
                    m[k] = int(v.split()[0])
        return m

    def writer_memory(self):
        """writer_memory restarts the writers, then for each size sends that many rows through one
        INSERT and one checkpoint while sampling every writer's memory every 100 ms."""
        if "writer_memory" not in self.cfg.selected:
            return
        t = time.monotonic()
        sizes = [("small", self.cfg.mem_small)] + ([("large", self.cfg.mem_large)] if self.cfg.mem_large > 0 else [])
        for label, n in sizes:
            self.reset(SINKT)
            old = set(self.writer_pids())
            self.q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink writer'")
            pids = self.wait_writers(old, 60)
            peak = {pid: {} for pid in pids}
            stop = threading.Event()
            gone = []

            def sample():
                """sample records each writer's peak memory figures every 100 ms until stopped (a
                writer gone is noted)."""
                while True:
                    for pid in pids:
                        try:
                            m = self.read_mem(pid)
                        except OSError:
                            gone.append(pid)
                            continue
                        for k, v in m.items():
                            peak[pid][k] = max(peak[pid].get(k, 0), v)
                    if stop.wait(0.1):
                        return
            th = threading.Thread(target=sample, daemon=True)
            th.start()
            conn = self.connect("mem")
            try:
                with conn.cursor() as cur:
                    t0 = time.perf_counter()
                    cur.execute("INSERT INTO %s SELECT %s FROM generate_series(1, %d::bigint) g"
                                % (SINK, row_sql("g"), n))
                    t1 = time.perf_counter()
                    ck = self.checkpoint(cur)
                    t2 = time.perf_counter()
            finally:
                stop.set()
                th.join()
                conn.close()
            if gone:
                raise BenchFail("writer memory: writer(s) %s exited during the measurement" % sorted(set(gone)))
            if ck[1] != n:
                raise BenchFail("writer memory: the checkpoint committed %d rows, expected %d" % (ck[1], n))
            self.verify("writer_memory", SINKT, n)
            row = {"size": label, "rows": n, "insert_s": t1 - t0, "checkpoint_s": t2 - t1, "writers": len(pids)}
            for k in ("RssAnon", "VmHWM", "Private_Dirty", "Anonymous"):
                row[k] = max(peak[pid].get(k, 0) for pid in pids)
            self.memory.append(row)
            log("writer memory, %d rows: insert %.1f s, checkpoint %.1f s; peak RssAnon %.1f MB, VmHWM %.1f MB"
                % (n, t1 - t0, t2 - t1, row["RssAnon"] / 1024, row["VmHWM"] / 1024))
            self.q("TRUNCATE %s" % SINKT)  # give the space back
        self.phase("writer_memory", t)

    # report -------------------------------------------------------------------------
    def summary(self):
        """path -> (rows, median seconds, rows/s); rows/s of the median run."""
        res = {}
        for p in PATHS:
            rs = [(r[3], r[2]) for r in self.runs if r[0] == p]
            if not rs:
                continue
            rates = sorted(rows / s for s, rows in rs)
            rate = statistics.median(rates)
            res[p] = (int(statistics.median(rows for _, rows in rs)), statistics.median(s for s, _ in rs), rate)
        return res

    def ratios(self, res):
        """ratios are the figures of the last line: each sink path's rows/s over its baseline's, the
        commit p50 over bare 2PC's, the writer memory of the large run over the small's."""
        def rate(p):
            """rate is path p's rows/s, or None when it did not run."""
            return res[p][2] if p in res else None

        def div(a, b):
            """div is a / b, or None when either is missing."""
            return a / b if a is not None and b else None
        wal = self.wal_summary()

        def wal_fig(p, k):
            """wal_fig is the median of WAL figure k of path p, or None when it was not measured."""
            v = wal.get(p, {}).get(k)
            return v[0] if v else None
        lat = self.latency
        mem = {m["size"]: m["RssAnon"] for m in self.memory}
        return [
            ("sink_vs_insert_select", div(rate("sink_insert_select"), rate("insert_select"))),
            ("sink_copy_vs_copy", div(rate("sink_copy_text"), rate("copy_text"))),
            ("sink_vs_xa", div(rate("sink_client_batch_2"), rate("xa_2pc"))),
            ("commit_p50_vs_2pc", div(percentile(lat["sink_1row"], 50), percentile(lat["bare_2pc_1row"], 50)) if lat else None),
            ("writer_mem_10m_vs_1m", div(mem.get("large"), mem.get("small"))),
            ("upsert_vs_on_conflict", div(rate("sink_upsert"), rate("on_conflict"))),
            ("sink_wal_per_staged_byte", wal_fig("sink_insert_select", "stmt_per_staged")),
            ("insert_select_wal_per_heap_byte", wal_fig("insert_select", "per_heap")),
            ("sink_wal_vs_insert_select", wal_fig("sink_insert_select", "vs_counterpart")),
            ("small_tx_vs_plain", div(rate("sink_pgbench_small"), rate("pgbench_small"))),
        ]

    def report(self, failed=None):
        """report prints the tables (throughput, commit latency, writer memory), writes the result
        files and returns the last line."""
        cfg = self.cfg
        res = self.summary()
        lines = []

        def f2(x):
            """f2 formats a ratio to two decimals, or n/a."""
            return "n/a" if x is None else "%.2f" % x
        tput = [("path", "rows", "median_s", "rows_per_s", "vs_insert_select", "vs_copy_text",
                 "counterpart", "vs_counterpart")]
        for p, (rows, s, rate) in res.items():
            base = PATHS[p][1]

            def vs(b):
                """vs is this path's rows/s over path b's, or None."""
                return rate / res[b][2] if b in res else None
            tput.append((p, str(rows), "%.3f" % s, "%.0f" % rate, f2(vs("insert_select")), f2(vs("copy_text")),
                         base or "-", f2(vs(base)) if base else "-"))
        lat = [("kind", "rounds", "p50_ms", "p99_ms", "mean_ms", "max_ms")]
        for k, v in self.latency.items():
            lat.append((k, str(len(v)), "%.2f" % percentile(v, 50), "%.2f" % percentile(v, 99), "%.2f" % statistics.mean(v),
                        "%.2f" % max(v)))
        def f2r(v):
            """f2r formats a (median, min, max) figure as "M (min-max)" with three decimals (a WAL
            figure of a path that writes almost none still shows), or n/a."""
            return "n/a" if v is None else "%.3f (%.3f-%.3f)" % v
        wal = [("path", "wal_mb", "staged_mb", "heap_mb", "statement_wal_per_staged_byte", "wal_per_heap_byte",
                "counterpart", "wal_vs_counterpart")]
        for p, w in self.wal_summary().items():
            sink_path = PATHS[p][0] in SINK_OF
            wal.append((p, "%.1f" % (w["wal"] / 1e6), "%.1f" % (w["staged"] / 1e6) if sink_path else "-",
                        "%.1f" % (w["heap"] / 1e6), f2r(w.get("stmt_per_staged")) if sink_path else "-",
                        f2r(w.get("per_heap")), PATHS[p][1] or "-",
                        f2r(w.get("vs_counterpart")) if PATHS[p][1] else "-"))
        mem = [("size", "rows", "writers", "peak_rss_anon_mb", "peak_vm_hwm_mb", "peak_private_dirty_mb",
                "peak_anonymous_mb", "insert_s", "checkpoint_s")]
        for m in self.memory:
            mem.append((m["size"], str(m["rows"]), str(m["writers"]), "%.1f" % (m["RssAnon"] / 1024),
                        "%.1f" % (m["VmHWM"] / 1024), "%.1f" % (m["Private_Dirty"] / 1024),
                        "%.1f" % (m["Anonymous"] / 1024), "%.1f" % m["insert_s"], "%.1f" % m["checkpoint_s"]))

        def table(title, rows):
            """table appends an aligned table with its title to the report's lines."""
            if len(rows) < 2:
                return
            w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines.append(title)
            for r in rows:
                lines.append("  " + "  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(r)))
            lines.append("")
        lines.append("paimon_sink benchmark: %d rows, median of %d runs, %d cores, load average %.2f at start, "
                     "%.2f at end (absolute numbers are noisy; compare ratios)"
                     % (cfg.rows, cfg.repeat, os.cpu_count() or 0, self.load_start[0], os.getloadavg()[0]))
        lines.append("")
        table("throughput (sink paths include the checkpoint; copy paths: compare with the same format, "
              "column vs_counterpart)", tput)
        table("WAL per run (median of the runs, their range in brackets; staged: the writers' bytes_staged; "
              "heap: the target's main fork after the run; statement: a sink path's INSERT or COPY before its "
              "checkpoint(); wal_vs_counterpart: the whole run's WAL over the counterpart's)", wal)
        table("commit latency (sink: insert-commit + checkpoint(); bare 2PC: BEGIN, INSERT, PREPARE "
              "TRANSACTION, COMMIT PREPARED; checkpoint_only: the checkpoint() call alone)", lat)
        table("writer memory (max over writers; RssAnon is the private memory, VmHWM counts shared "
              "buffers touched)", mem)
        if failed:
            lines.append("bench: FAILED: %s" % failed)
        last = "bench: " + " ".join("%s=%s" % (k, f2(v)) for k, v in self.ratios(res))
        print("\n".join(lines))
        self.write_out(tput, lat, mem, wal, lines, last)
        return last

    def write_out(self, tput, lat, mem, wal, lines, last):
        """write_out replaces the result files in BENCH_OUT: the TSV tables, the runs, the meta
        data, the summary and the plot."""
        out = self.cfg.out
        os.makedirs(out, exist_ok=True)
        names = ["throughput.tsv", "runs.tsv", "latency.tsv", "memory.tsv", "meta.tsv", "summary.txt",
                 "throughput.png", "throughput.gp", "throughput.dat", "wal.tsv"]
        for n in names:
            if os.path.exists(os.path.join(out, n)):
                os.remove(os.path.join(out, n))

        def tsv(name, rows):
            """tsv writes rows as a tab-separated file name (nothing for a header alone)."""
            if len(rows) < 2:
                return
            with open(os.path.join(out, name), "w") as f:
                f.write("".join("\t".join(r) + "\n" for r in rows))
        tsv("throughput.tsv", tput)
        tsv("runs.tsv", [("path", "run", "rows", "seconds", "rows_per_s", "extra")] +
            [(p, str(r), str(n), "%.4f" % s, "%.0f" % (n / s), e) for p, r, n, s, e in self.runs])
        tsv("latency.tsv", lat)
        tsv("memory.tsv", mem)
        tsv("wal.tsv", [("path", "run", "statement_wal_bytes", "wal_bytes", "staged_bytes", "heap_bytes")] +
            [(p, str(r), "-" if st is None else str(st), str(w), str(sb), str(hb))
             for p, r, st, w, sb, hb in self.wal])
        cfg = self.cfg
        meta = [("key", "value"), ("rows", str(cfg.rows)), ("repeat", str(cfg.repeat)),
                ("commit_rounds", str(cfg.commit_rounds)), ("mem_small", str(cfg.mem_small)),
                ("mem_large", str(cfg.mem_large)), ("pgbench_seconds", str(cfg.pgbench_seconds)),
                ("selected", ",".join(cfg.selected)), ("cores", str(os.cpu_count())),
                ("loadavg_start", "%.2f" % self.load_start[0]), ("loadavg_end", "%.2f" % os.getloadavg()[0]),
                ("finished", time.strftime("%Y-%m-%d %H:%M:%S %Z"))]
        meta += [("phase_%s_s" % n, "%.1f" % s) for n, s in self.phase_times]
        tsv("meta.tsv", meta)
        with open(os.path.join(out, "summary.txt"), "w") as f:
            f.write("\n".join(lines) + "\n" + last + "\n")
        if len(tput) > 1:
            self.plot(out, tput)

    def plot(self, out, tput):
        """plot draws throughput.png with gnuplot, if it is installed."""
        gp = shutil.which("gnuplot")
        if not gp:
            log("gnuplot not found: no throughput.png")
            return
        terms = subprocess.run([gp, "-e", "set terminal"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True).stdout
        term = "pngcairo size 1200,650 font ',10'" if "pngcairo" in terms else "png size 1200,650"
        dat = os.path.join(out, "throughput.dat")
        with open(dat, "w") as f:
            for r in tput[1:]:
                f.write("%s\t%s\t%s\n" % (r[0], r[3], "0xd95f02" if r[0].startswith("sink") else "0x1b9e77"))
        script = os.path.join(out, "throughput.gp")
        with open(script, "w") as f:
            f.write("""set terminal %s
set output '%s'
set title 'paimon\\_sink benchmark: rows/s per path (%d rows, median of %d; green: PostgreSQL, orange: the sink)'
set style fill solid 0.8 border -1
set boxwidth 0.7
set bmargin 8
set rmargin 12
set xtics rotate by -35 left noenhanced
set ylabel 'rows/s'
set format y '%%.0f'
set grid ytics
set yrange [0:*]
set key off
set datafile separator '\\t'
plot '%s' using 0:2:(0.7):3:xtic(1) with boxes lc rgb variable, \\
     '' using 0:2:(sprintf('%%.0f', $2)) with labels offset 0,0.7 font ',8'
""" % (term, os.path.join(out, "throughput.png"), self.cfg.rows, self.cfg.repeat, dat))
        r = subprocess.run([gp, script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            log("gnuplot failed: %s" % r.stdout.strip())

    def stop_procs(self):
        """stop_procs stops the subprocesses still running (pgbench), TERM then KILL."""
        for p in list(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()


def main():
    """main runs the benchmark's phases, then always stops what it started, keeps the server log
    with the results, reports and prints the last line; returns the exit status."""
    cfg = parse_args()
    h = Cluster(CLUSTER, "bench", BenchFail)
    bench = Bench(cfg, h)
    rc = 1
    failed = None
    interrupt_on_signals()
    log("=== paimon_sink benchmark: %d rows x %d runs, %d commit rounds, memory %d/%d rows, pgbench %d s; "
        "results in %s" % (cfg.rows, cfg.repeat, cfg.commit_rounds, cfg.mem_small, cfg.mem_large,
                           cfg.pgbench_seconds, cfg.out))
    try:
        bench.setup()
        bench.make_data()
        bench.throughput()
        bench.commit_latency()
        bench.writer_memory()
        rc = 0
    except KeyboardInterrupt:
        failed = "interrupted"
        rc = 130
    except BenchFail as e:
        failed = str(e)
    except Exception as e:
        failed = pg_error(e) if isinstance(e, psycopg2.Error) else \
            "unexpected error:\n" + traceback.format_exc()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        bench.stop_procs()
        if bench.lib is not None and lib_identity() != bench.lib:
            log("WARNING: paimon_sink.so was replaced during the run (a make install meanwhile?): "
                "new backends may have loaded the new build; the results may not be trustworthy")
        if failed:
            log("FAILED: %s" % failed)
        if h.work and os.path.exists(h.server_log):
            # kept with the results: the extension's warnings and errors matter
            os.makedirs(cfg.out, exist_ok=True)
            shutil.copy(h.server_log, os.path.join(cfg.out, "server.log"))
            with open(h.server_log, errors="replace") as f:
                lines = f.readlines()
            # the writer restarts of the memory phase are ours, not problems
            problems = [ln for ln in lines if re.search(r"\b(WARNING|ERROR|FATAL|PANIC):", ln) and
                        "paimon_sink writer\" due to administrator command" not in ln]
            log("server log (kept in %s/server.log): %d unexpected WARNING/ERROR/FATAL/PANIC line(s)%s"
                % (cfg.out, len(problems), ":\n" + "".join(problems[:10]).rstrip() if problems else ""))
            if failed:
                sys.stderr.write("----- server log (last 30 lines)\n%s" % "".join(lines[-30:]))
        rc = finish_run(bench, h, failed,
                        "bench: sink_vs_insert_select=n/a sink_copy_vs_copy=n/a sink_vs_xa=n/a "
                        "commit_p50_vs_2pc=n/a writer_mem_10m_vs_1m=n/a upsert_vs_on_conflict=n/a "
                        "sink_wal_per_staged_byte=n/a insert_select_wal_per_heap_byte=n/a sink_wal_vs_insert_select=n/a "
                        "small_tx_vs_plain=n/a", log, T0) or rc
    return rc


if __name__ == "__main__":
    sys.exit(main())
