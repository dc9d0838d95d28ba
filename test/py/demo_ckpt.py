#!/usr/bin/python3
"""Checkpoint loop and statistics of test/demo.

loop HOST PORT USER DB SINK INTERVAL_MS CSV STOPFILE
    call SELECT count(*), sum(row_count) FROM paimon_sink.checkpoint(SINK)
    every INTERVAL_MS (autocommit) until STOPFILE exists or SIGTERM; one CSV
    line per call: unix time, ok|error, snapshots, rows, ms, error text.
    Errors (the crash-restart) are recorded and the connection is retried.
stats CSV SERVERLOG SINK
    print key=value lines: call counts and latency percentiles, then the
    error messages (# lines).
"""
import csv
import os
import re
import signal
import sys
import time

from harness import Server, close_quietly, error_text, percentile


def loop(host, port, user, db, sink, interval_ms, out, stopfile):
    """loop calls checkpoint(sink) every interval_ms until stopfile exists
    or SIGTERM, one CSV line per call; errors (the crash-restart) are
    recorded and the connection is made again."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    interval = int(interval_ms) / 1000.0
    server = Server(host, port, user, dbname=db)
    conn = None
    with open(out, "w", newline="", buffering=1) as f:
        w = csv.writer(f)
        nxt = time.monotonic()
        while not stop and not os.path.exists(stopfile):
            try:
                if conn is None:
                    conn = server.connect("demo_checkpoint_loop")
                t0 = time.monotonic()
                with conn.cursor() as cur:
                    cur.execute("SELECT count(*), coalesce(sum(row_count), 0) "
                                "FROM paimon_sink.checkpoint(%s)", (sink,))
                    n, rows = cur.fetchone()
                ms = (time.monotonic() - t0) * 1000.0
                w.writerow([f"{time.time():.3f}", "ok", n, rows, f"{ms:.3f}", ""])
            except Exception as e:  # psycopg2.Error, or anything while reconnecting
                w.writerow([f"{time.time():.3f}", "error", 0, 0, "", error_text(e, 160)])
                close_quietly(conn)
                conn = None
            nxt += interval
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.monotonic()
    if conn is not None:
        conn.close()


def commit_log_ms(serverlog, sink):
    """commit_log_ms is the committer's own time of each commit of sink, in
    milliseconds, from its log lines in serverlog (src/commit.c's
    log_commit: '... N rows, N files, N loaders, T ms')."""
    pat = re.compile(r'paimon_sink committed snapshot \d+ of sink "%s": commit user "[^"]*", '
                     r'identifier -?\d+, \d+ rows, \d+ files, \d+ loaders, ([0-9.]+) ms'
                     % re.escape(sink))
    log_ms = []
    with open(serverlog, errors="replace") as f:
        for line in f:
            m = pat.search(line)
            if m:
                log_ms.append(float(m.group(1)))
    return log_ms


def pct(values, q):
    """pct is the nearest-rank percentile to one decimal, or n/a."""
    if not values:
        return "n/a"
    return f"{percentile(values, q):.1f}"


def stats(csvfile, serverlog, sink):
    """stats prints the loop's call counts and latency percentiles and the
    committer's own commit times from the server log, as key=value lines,
    then the error messages (# lines)."""
    calls = ok = made = empty = errors = snap_rows = 0
    lat_made, lat_empty, errs = [], [], {}
    with open(csvfile, newline="") as f:
        for row in csv.reader(f):
            calls += 1
            if row[1] == "ok":
                ok += 1
                n, rows, ms = int(row[2]), int(row[3]), float(row[4])
                if n > 0:
                    made += n
                    snap_rows += rows
                    lat_made.append(ms)
                else:
                    empty += 1
                    lat_empty.append(ms)
            else:
                errors += 1
                errs[row[5]] = errs.get(row[5], 0) + 1
    log_ms = commit_log_ms(serverlog, sink)
    print(f"calls={calls}")
    print(f"calls_ok={ok}")
    print(f"calls_snapshot={len(lat_made)}")
    print(f"snapshots_made={made}")
    print(f"snapshot_rows={snap_rows}")
    print(f"calls_empty={empty}")
    print(f"calls_error={errors}")
    print(f"call_p50={pct(lat_made, 50)}")
    print(f"call_p99={pct(lat_made, 99)}")
    print(f"call_max={pct(lat_made, 100)}")
    print(f"empty_p50={pct(lat_empty, 50)}")
    print(f"log_n={len(log_ms)}")
    print(f"log_p50={pct(log_ms, 50)}")
    print(f"log_p99={pct(log_ms, 99)}")
    print(f"log_max={pct(log_ms, 100)}")
    for msg, n in sorted(errs.items(), key=lambda kv: -kv[1]):
        print(f"# {n:5d} x {msg}")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "loop":
        loop(*sys.argv[2:10])
    elif mode == "stats":
        stats(*sys.argv[2:5])
    else:
        sys.exit(f"unknown mode {mode}")
