#!/usr/bin/python3
"""test/bench --scale -- how periodic checkpoints scale with the sinks of one
database: the lag of a row from its writing transaction to its target.

One throwaway cluster (bench.py's settings: shared_buffers 1GB, max_wal_size
8GB, synchronous_commit on, plus test/paimon_sink.conf), one database.

Scale runs: for each sink count in BENCH_SCALE_SINKS (1, 10, 100), that many
sinks, each into its own target (id bigint, written_at timestamptz,
loaded_at timestamptz) whose BEFORE INSERT trigger sets loaded_at =
clock_timestamp() (a commit loads through COPY's machinery, which fires row
triggers), each with checkpoint_interval BENCH_SCALE_INTERVAL_MS (200).  The
same light load per sink: BENCH_SCALE_RATE single-row transactions per
second per sink (5: one row per interval on average), evenly paced, sent by
BENCH_SCALE_CLIENTS client threads (4) each with its own connection; a row's
written_at is the client statement's clock_timestamp(), just before its
commit.  The load runs BENCH_SCALE_SECONDS (20); the first 2 s are warm-up,
not counted.  Then the load stops, every row must arrive (otherwise the
benchmark fails), and per run it prints the lag (loaded_at - written_at) p50,
p99 and max over all rows, the p99 of the worst sink and of the first and the
last quarter of the sinks (in creation order, the committer's array order:
starvation shows there), the snapshots made per sink per second, and the
overdue checkpoint slots of the paimon_sink.checkpoint_schedule view
(n/a for a build without it).  The sinks are dropped after each run.

Head-of-line run: 10 sinks under the same load, plus a sink `big` without a
checkpoint interval into which BENCH_HOL_ROWS rows (5000000; test/bench's
rows: id bigint PRIMARY KEY, k int, v text of 64 bytes, ts timestamptz) are
staged by one INSERT ... SELECT before the clock starts.  First BENCH_HOL_BASE_SECONDS
(10) of the load alone (the baseline: rows written until 1.5 intervals
before the big checkpoint starts), then checkpoint('big') while the load
goes on; the lag of the 10 sinks' rows written during the big checkpoint is
set against the baseline's.

Results go to stdout, progress to stderr; the last line is always
  bench-scale: lag_p99_ms_1=N lag_p99_ms_10=N lag_p99_ms_100=N p99_100_vs_1=R worst_sink_p99_ms_100=N overdue_100=N hol_lag_p99_delta_ms=N hol_big_checkpoint_s=N
(n/a: not measured; the _N suffix is the sink count; overdue_100 the
checkpoint slots the 100 sinks missed in all), followed, for each other sink
count run (BENCH_SCALE_SINKS=1,1000), by lag_p99_ms_N p99_N_vs_1
worst_sink_p99_ms_N overdue_N.  Goals of issue 16: at 100
sinks lag p99 <= 2x that at 1 sink and no sink starved (worst sink's p99
near the others'); hol_lag_p99_delta_ms <= 1000.  Issue 32's: at 1,000
sinks (BENCH_SCALE_SINKS=1,1000 BENCH_SCALE_INTERVAL_MS=1000
BENCH_SCALE_RATE=1) the same, p99_1000_vs_1 <= 2 and overdue_1000 = 0.  Exit 0
only if every row arrived.

Usage: test/bench --scale [--quick]
  --quick   BENCH_SCALE_SECONDS=6 BENCH_HOL_ROWS=200000 BENCH_HOL_BASE_SECONDS=4
            (variables set explicitly still win)
Environment: BENCH_SCALE_SINKS (1,10,100), BENCH_SCALE_RATE (5),
BENCH_SCALE_INTERVAL_MS (200), BENCH_SCALE_CLIENTS (4), BENCH_SCALE_SECONDS
(20), BENCH_HOL_ROWS (5000000; 0 skips the run), BENCH_HOL_BASE_SECONDS (10),
BENCH_SKIP_BUILD=1 (use the installed extension), KEEP_TMP=1.

As root it does what test/bench does: builds and installs the extension from
a copy of the repo, runs the cluster as the OS user postgres in a temp dir
(unix socket only) and removes everything at exit, also on Ctrl-C.
"""
import argparse
import datetime
import os
import signal
import sys
import threading
import time
import traceback

# the harness first: it installs psycopg2 when it is missing
from harness import ControlQueries, Cluster, finish_run, interrupt_on_signals, percentile
from bench import row_sql

import psycopg2

CLUSTER = "bench_scale"
STMT_TIMEOUT_MS = 900000  # a guard against hangs
WARMUP_S = 2.0
CONF = """
# ---- test/bench --scale ----
shared_buffers = 1GB
max_wal_size = 8GB
checkpoint_timeout = 30min
synchronous_commit = on
max_connections = 50
"""
T0 = time.monotonic()


class BenchFail(Exception):
    """A run lost rows, or the benchmark cannot go on."""


def log(msg):
    """log writes a progress line to stderr."""
    print("[bench-scale %6.1fs] %s" % (time.monotonic() - T0, msg), file=sys.stderr, flush=True)


def parse_args():
    """parse_args reads --quick and the BENCH_* settings (--quick's smaller defaults; an explicit
    variable wins)."""
    p = argparse.ArgumentParser(description="paimon_sink scale benchmark (see the docstring)")
    p.add_argument("--quick", action="store_true", help="small sizes for a fast check")
    a = p.parse_args()

    def env(name, full, quick):
        """env is variable name as an int, or the mode's default."""
        return int(os.environ.get(name, quick if a.quick else full))
    cfg = argparse.Namespace()
    cfg.sinks = [int(x) for x in os.environ.get("BENCH_SCALE_SINKS", "1,10,100").split(",") if x.strip()]
    cfg.rate = float(os.environ.get("BENCH_SCALE_RATE", "5"))
    cfg.interval_ms = env("BENCH_SCALE_INTERVAL_MS", 200, 200)
    cfg.clients = env("BENCH_SCALE_CLIENTS", 4, 4)
    cfg.seconds = env("BENCH_SCALE_SECONDS", 20, 6)
    cfg.hol_rows = env("BENCH_HOL_ROWS", 5000000, 200000)
    cfg.hol_base = env("BENCH_HOL_BASE_SECONDS", 10, 4)
    cfg.skip_build = os.environ.get("BENCH_SKIP_BUILD") == "1"
    if not cfg.sinks or min(cfg.sinks) < 1 or cfg.rate <= 0 or cfg.clients < 1 or cfg.seconds <= WARMUP_S:
        p.error("BENCH_SCALE_SINKS >= 1 each, BENCH_SCALE_RATE > 0, BENCH_SCALE_CLIENTS >= 1, "
                "BENCH_SCALE_SECONDS > %g" % WARMUP_S)
    return cfg


class Load:
    """Load is the light load: client threads, each sending single-row transactions to its share
    of the sinks at rate rows/s per sink, evenly paced, until stopped."""

    def __init__(self, scale, sinks, rate):
        """__init__ prepares the threads for the sink names sinks."""
        self.scale = scale
        self.sinks = sinks
        self.rate = rate
        self.stop_event = threading.Event()
        self.sent = {s: 0 for s in sinks}
        self.errors = []
        self.threads = []

    def start(self):
        """start starts one thread per client (at most one per sink)."""
        n = min(self.scale.cfg.clients, len(self.sinks))
        for k in range(n):
            mine = self.sinks[k::n]
            t = threading.Thread(target=self.run, args=(k, n, mine), daemon=True)
            t.start()
            self.threads.append(t)

    def run(self, k, n, mine):
        """run sends rows to the sinks mine in turn, one transaction each, paced so that each sink
        gets rate rows/s; behind schedule, it sends as fast as it can."""
        try:
            conn = self.scale.connect("load%d" % k)
            cur = conn.cursor()
            step = 1.0 / (self.rate * len(mine))
            # the n clients start spread over one step, not all at once
            due = time.monotonic() + step * k / n
            i = 0
            while not self.stop_event.is_set():
                now = time.monotonic()
                if due > now:
                    time.sleep(due - now)
                sink = mine[i % len(mine)]
                self.sent[sink] += 1
                cur.execute("INSERT INTO %s (id, written_at) VALUES (%%s, clock_timestamp())" % sink,
                            (self.sent[sink],))
                i += 1
                due += step
            conn.close()
        except Exception as e:  # reported by stop()
            self.errors.append("client %d: %s" % (k, e))

    def stop(self):
        """stop ends the threads and raises the first client error."""
        self.stop_event.set()
        for t in self.threads:
            t.join(60)
        if self.errors:
            raise BenchFail(self.errors[0])


class Scale(ControlQueries):
    """Scale is the benchmark: the cluster, the scale runs, the head-of-line run, the report."""

    def __init__(self, cfg, h):
        """__init__ sets up empty results for the configuration and the cluster h."""
        self.cfg = cfg
        self.h = h
        self.ctl = None
        self.results = {}  # sink count -> dict
        self.hol = None
        self.load_start = os.getloadavg()
        self.has_schedule_view = False

    def connect(self, app):
        """connect opens an autocommit connection named bench-scale-APP with a guarding
        statement timeout."""
        return self.h.server(connect_timeout=10, app_prefix="bench-scale-").connect(
            app, statement_timeout_ms=STMT_TIMEOUT_MS)

    def setup(self):
        """setup builds and installs the extension (unless told not to), starts the cluster and
        creates the extension and the trigger function of the targets."""
        h = self.h
        h.create_workdir()
        if self.cfg.skip_build:
            log("build: skipped (BENCH_SKIP_BUILD=1), using the installed extension")
        else:
            log("build: make COPT=-Werror && make install (in a copy of the repository)")
            blog = os.path.join(h.work, "logs", "build.log")
            if h.build_install(blog, stderr_too=True) != 0:
                with open(blog) as f:
                    sys.stderr.write("".join(f.readlines()[-40:]))
                raise BenchFail("build or make install failed")
        h.create(CONF)
        h.start()
        self.ctl = self.connect("ctl")
        self.q("CREATE EXTENSION paimon_sink")
        self.q("CREATE FUNCTION stamp_loaded_at() RETURNS trigger LANGUAGE plpgsql AS "
               "$$BEGIN NEW.loaded_at := clock_timestamp(); RETURN NEW; END$$")
        self.has_schedule_view = self.q1("SELECT to_regclass('paimon_sink.checkpoint_schedule') IS NOT NULL")
        self.wait_writers(60)
        log("cluster: socket %s port %d, log %s; schedule view %s" % (
            h.sockdir, h.port, h.server_log, "present" if self.has_schedule_view else "absent (overdue: n/a)"))

    def wait_writers(self, seconds):
        """wait_writers waits until every writer of the database serves."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.q1("SELECT count(*) FILTER (WHERE ready) = current_setting("
                       "'paimon_sink.writers_per_database')::int FROM paimon_sink.writers"):
                return
            time.sleep(0.1)
        raise BenchFail("the writers are not ready after %d s" % seconds)

    def make_sinks(self, names, interval_ms):
        """make_sinks creates a target with the loaded_at trigger and a sink for each name
        (interval_ms None: no checkpoint interval)."""
        for n in names:
            self.q("CREATE TABLE t_%s (id bigint, written_at timestamptz, loaded_at timestamptz)" % n)
            self.q("CREATE TRIGGER stamp BEFORE INSERT ON t_%s FOR EACH ROW EXECUTE FUNCTION stamp_loaded_at()" % n)
            self.q("SELECT * FROM paimon_sink.create_sink(%s, %s, checkpoint_interval => %s::interval)",
                   (n, "t_" + n, None if interval_ms is None else "%d ms" % interval_ms))

    def drop_sinks(self, names):
        """drop_sinks drops the sinks and their targets."""
        for n in names:
            self.q("SELECT paimon_sink.drop_sink(%s, true)", (n,))
            self.q("DROP TABLE t_%s" % n)

    def overdue(self):
        """overdue returns the overdue checkpoint slots of all sinks, or None without the view."""
        if not self.has_schedule_view:
            return None
        return int(self.q1("SELECT coalesce(sum(overdue), 0) FROM paimon_sink.checkpoint_schedule"))

    def snapshots(self, names):
        """snapshots returns the snapshots made so far by the sinks names."""
        return int(self.q1("SELECT coalesce(sum(commits), 0) FROM paimon_sink.commit_stats "
                           "WHERE sink_name = ANY(%s)", (list(names),)))

    def await_rows(self, load, seconds=120):
        """await_rows waits until every row the load sent is in its target, or fails."""
        deadline = time.monotonic() + seconds
        while True:
            missing = []
            for n in load.sinks:
                got = self.q1("SELECT count(*) FROM t_%s" % n)
                if got != load.sent[n]:
                    missing.append((n, load.sent[n], got))
            if not missing:
                return
            if time.monotonic() > deadline:
                raise BenchFail("rows missing %d s after the load stopped (sink, sent, arrived): %s"
                                % (seconds, missing[:5]))
            time.sleep(0.2)

    def lags(self, names, since, until=None):
        """lags returns per sink the lags in ms of its rows written in [since, until)."""
        out = {}
        for n in names:
            rows = self.q("SELECT extract(epoch FROM loaded_at - written_at) * 1000 FROM t_%s "
                          "WHERE written_at >= %%s AND (%%s::timestamptz IS NULL OR written_at < %%s)" % n,
                          (since, until, until))
            out[n] = [float(r[0]) for r in rows]
        return out

    def scale_run(self, count):
        """scale_run runs the light load on count sinks and records its figures."""
        cfg = self.cfg
        names = ["s%03d" % i for i in range(count)]
        log("scale %d: creating %d sinks (checkpoint_interval %d ms)" % (count, count, cfg.interval_ms))
        self.make_sinks(names, cfg.interval_ms)
        over0 = self.overdue()
        load = Load(self, names, cfg.rate)
        load.start()
        time.sleep(WARMUP_S)
        since = self.q1("SELECT clock_timestamp()")
        snaps0 = self.snapshots(names)
        t = time.monotonic()
        la0 = os.getloadavg()[0]
        time.sleep(cfg.seconds - WARMUP_S)
        load.stop()
        dt = time.monotonic() - t
        snaps = self.snapshots(names) - snaps0
        over = self.overdue()
        la = os.getloadavg()[0]
        self.await_rows(load)
        lag = self.lags(names, since)
        allv = [v for n in names for v in lag[n]]
        if not allv:
            raise BenchFail("scale %d: no row was written in the measured window" % count)
        per = [percentile(lag[n], 99) for n in names if lag[n]]
        q = max(1, count // 4)
        first = [v for n in names[:q] for v in lag[n]]
        last = [v for n in names[-q:] for v in lag[n]]
        r = {
            "sinks": count, "rows": len(allv), "rows_per_s": len(allv) / dt,
            "p50": percentile(allv, 50), "p99": percentile(allv, 99), "max": max(allv),
            "worst_p99": max(per), "best_p99": min(per),
            "first_q_p99": percentile(first, 99) if first else None,
            "last_q_p99": percentile(last, 99) if last else None,
            "snapshots_per_sink_s": snaps / dt / count,
            "overdue": None if over is None else over - over0,
            "load": "%.2f-%.2f" % (la0, la),
        }
        self.results[count] = r
        log("scale %d: %d rows (%.0f rows/s), lag p50 %.0f p99 %.0f max %.0f ms, worst sink p99 %.0f ms, "
            "%.2f snapshots/sink/s, overdue %s" % (count, r["rows"], r["rows_per_s"], r["p50"], r["p99"],
                                                   r["max"], r["worst_p99"], r["snapshots_per_sink_s"],
                                                   r["overdue"]))
        self.drop_sinks(names)

    def hol_run(self):
        """hol_run measures the lag of 10 busy sinks without and during one big checkpoint."""
        cfg = self.cfg
        names = ["h%02d" % i for i in range(10)]
        log("head-of-line: 10 sinks at %d ms, and sink big staging %d rows" % (cfg.interval_ms, cfg.hol_rows))
        self.make_sinks(names, cfg.interval_ms)
        # big has test/bench's row shape and primary key, and no interval
        self.q("CREATE TABLE t_big (id bigint PRIMARY KEY, k int, v text, ts timestamptz)")
        self.q("SELECT * FROM paimon_sink.create_sink('big', 't_big')")
        t = time.monotonic()
        self.q("INSERT INTO big SELECT %s FROM generate_series(1, %d::bigint) g" % (row_sql("g"), cfg.hol_rows))
        log("head-of-line: %d rows staged in %.1f s" % (cfg.hol_rows, time.monotonic() - t))
        self.q("CHECKPOINT")
        load = Load(self, names, cfg.rate)
        load.start()
        time.sleep(WARMUP_S)
        base_from = self.q1("SELECT clock_timestamp()")
        time.sleep(cfg.hol_base)
        big_from = self.q1("SELECT clock_timestamp()")
        t = time.monotonic()
        conn = self.connect("big")
        with conn.cursor() as cur:
            cur.execute("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('big')")
            big_rows = cur.fetchone()[0]
        conn.close()
        big_s = time.monotonic() - t
        big_to = self.q1("SELECT clock_timestamp()")
        la = os.getloadavg()[0]
        time.sleep(1.0)
        load.stop()
        self.await_rows(load)
        if big_rows != cfg.hol_rows or self.q1("SELECT count(*) FROM t_big") != cfg.hol_rows:
            raise BenchFail("head-of-line: sink big committed %s rows, not %d" % (big_rows, cfg.hol_rows))
        # the baseline ends an interval and a half before the big checkpoint starts: a row
        # written just before it may wait for it
        base_to = big_from - datetime.timedelta(milliseconds=cfg.interval_ms * 1.5)
        base = [v for vs in self.lags(names, base_from, base_to).values() for v in vs]
        during = [v for vs in self.lags(names, big_from, big_to).values() for v in vs]
        if not base or not during:
            raise BenchFail("head-of-line: no row written in a window (baseline %d, during %d)"
                            % (len(base), len(during)))
        self.hol = {"big_s": big_s, "base": base, "during": during, "load": la}
        log("head-of-line: big checkpoint %.1f s; lag p99 %.0f ms without, %.0f ms during it"
            % (big_s, percentile(base, 99), percentile(during, 99)))
        self.drop_sinks(names + ["big"])

    def report(self, failed=None):
        """report prints the tables and returns the last line."""
        def num(x, fmt="%.0f"):
            """num formats x, or n/a."""
            return "n/a" if x is None else fmt % x
        lines = ["paimon_sink scale benchmark: %s rows/s per sink, checkpoint_interval %d ms, %d clients, %d s per "
                 "run (%g s warm-up not counted), %d cores, load average %.2f at start, %.2f at end"
                 % (num(self.cfg.rate, "%g"), self.cfg.interval_ms, self.cfg.clients, self.cfg.seconds, WARMUP_S,
                    os.cpu_count() or 0, self.load_start[0], os.getloadavg()[0]), ""]
        rows = [("sinks", "rows", "rows_per_s", "lag_p50_ms", "lag_p99_ms", "lag_max_ms", "worst_sink_p99_ms",
                 "best_sink_p99_ms", "first_quarter_p99_ms", "last_quarter_p99_ms", "snapshots_per_sink_s",
                 "overdue", "load_avg")]
        for c in sorted(self.results):
            r = self.results[c]
            rows.append((str(c), str(r["rows"]), num(r["rows_per_s"]), num(r["p50"]), num(r["p99"]), num(r["max"]),
                         num(r["worst_p99"]), num(r["best_p99"]), num(r["first_q_p99"]), num(r["last_q_p99"]),
                         num(r["snapshots_per_sink_s"], "%.2f"), num(r["overdue"], "%d"), r["load"]))
        if self.hol:
            for k in ("base", "during"):
                v = self.hol[k]
                rows.append(("10+big:" + ("without" if k == "base" else "during"), str(len(v)), "-",
                             num(percentile(v, 50)), num(percentile(v, 99)), num(max(v)), "-", "-", "-", "-",
                             "-", "-", "%.2f" % self.hol["load"]))
        if len(rows) > 1:
            w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines.append("lag per row, written_at (client clock_timestamp() before the commit) to loaded_at "
                         "(BEFORE INSERT trigger at the commit's load)")
            for r in rows:
                lines.append("  " + "  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(r)))
            lines.append("")
        if self.hol:
            lines.append("head-of-line: checkpoint of %d rows took %.1f s" % (self.cfg.hol_rows, self.hol["big_s"]))
        if failed:
            lines.append("bench-scale: FAILED: %s" % failed)
        print("\n".join(lines), flush=True)

        def get(c, k):
            """get is figure k of the run with c sinks, or None."""
            return self.results.get(c, {}).get(k)
        p1, p100 = get(1, "p99"), get(100, "p99")
        delta = percentile(self.hol["during"], 99) - percentile(self.hol["base"], 99) if self.hol else None
        return "bench-scale: " + " ".join("%s=%s" % kv for kv in [
            ("lag_p99_ms_1", num(p1)), ("lag_p99_ms_10", num(get(10, "p99"))), ("lag_p99_ms_100", num(p100)),
            ("p99_100_vs_1", num(p100 / p1 if p1 and p100 is not None else None, "%.2f")),
            ("worst_sink_p99_ms_100", num(get(100, "worst_p99"))), ("overdue_100", num(get(100, "overdue"), "%d")),
            ("hol_lag_p99_delta_ms", num(delta)),
            ("hol_big_checkpoint_s", num(self.hol["big_s"] if self.hol else None, "%.1f"))] + [
            # the runs of other sink counts (BENCH_SCALE_SINKS=1,1000), after the fixed fields
            kv for c in sorted(self.results) if c not in (1, 10, 100) for kv in [
                ("lag_p99_ms_%d" % c, num(get(c, "p99"))),
                ("p99_%d_vs_1" % c, num(get(c, "p99") / p1 if p1 and get(c, "p99") is not None else None,
                                          "%.2f")),
                ("worst_sink_p99_ms_%d" % c, num(get(c, "worst_p99"))),
                ("overdue_%d" % c, num(get(c, "overdue"), "%d"))]])


def main():
    """main runs the scale runs and the head-of-line run, always stops what it started, reports
    and prints the last line; returns the exit status."""
    cfg = parse_args()
    h = Cluster(CLUSTER, "bench-scale", BenchFail)
    s = Scale(cfg, h)
    rc, failed = 1, None
    interrupt_on_signals()
    try:
        s.setup()
        for c in cfg.sinks:
            s.scale_run(c)
        if cfg.hol_rows > 0:
            s.hol_run()
        rc = 0
    except KeyboardInterrupt:
        failed, rc = "interrupted", 130
    except BenchFail as e:
        failed = str(e)
    except Exception as e:
        failed = str(e).strip() if isinstance(e, psycopg2.Error) else "unexpected error:\n" + traceback.format_exc()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if failed:
            log("FAILED: %s" % failed)
            if h.work and os.path.exists(h.server_log):
                with open(h.server_log, errors="replace") as f:
                    sys.stderr.write("----- server log (last 30 lines)\n%s" % "".join(f.readlines()[-30:]))
        rc = finish_run(s, h, failed,
                        "bench-scale: lag_p99_ms_1=n/a lag_p99_ms_10=n/a lag_p99_ms_100=n/a p99_100_vs_1=n/a "
                        "worst_sink_p99_ms_100=n/a overdue_100=n/a hol_lag_p99_delta_ms=n/a hol_big_checkpoint_s=n/a",
                        log, T0) or rc
    return rc


if __name__ == "__main__":
    sys.exit(main())
