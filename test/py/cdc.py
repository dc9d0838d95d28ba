#!/usr/bin/python3
"""test/cdc -- a change-data-capture job into paimon_sink, killed at random.

The example job: it replicates two tables of a PostgreSQL source database,
orders and order_lines (order_lines.order_id references orders.id, ON
UPDATE CASCADE and ON DELETE CASCADE), into a replica database of the same
cluster through paimon_sink's upsert sinks, exactly once, however often it
is killed.

* Source: database cdc_source (wal_level = logical); both tables have
  REPLICA IDENTITY FULL, so that an UPDATE and a DELETE carry the old row.
  A logical replication slot with the wal2json output plugin (Debian's
  postgresql-15-wal2json; format 2: one JSON document per change, with the
  transaction's B and C messages) is created before the first change.
* The job (this program with --job, a process of its own) streams the slot
  with psycopg2's replication support (LogicalReplicationConnection),
  buffers each source transaction until its commit message, and maps its
  changes to row kinds of the replica's upsert sinks: INSERT to +I, an
  UPDATE that keeps the primary key to -U (old row) and +U (new row), an
  UPDATE that changes it to -D (the old row, which a full-row retraction
  needs) and +I (the new row), DELETE to -D (the old row).  It writes them in
  stream order from one session into orders_sink and order_lines_sink,
  whose targets are the replica's tables, each transaction naming the job's
  identity (write_as(): commit user cdc-job, writer id 0, and the fence
  epoch restart_job() returned).
* Checkpoints: every --interval-ms the job makes checkpoint N (one commit
  user, cdc-job, for every sink): prepare_commit on each sink (naming the
  fence epoch, as every call of the job does) with the properties {"lsn": the end of the last source transaction written,
  "xid": its xid, "changes": source changes applied in all}, then commit on
  each sink; only then does it acknowledge the slot (send_feedback with
  flush_lsn), so the slot never passes what is not committed.
* Restart: the job waits (bounded) for the sessions of its killed
  predecessor to end and for the slot to be free, reads every sink's
  last_commit() and calls restart_job() on each sink with
  restored_checkpoint_id = the highest checkpoint any sink committed (a
  checkpoint prepared everywhere but committed on some sinks is committed on
  the rest; one prepared on some only is discarded), and resumes from that
  checkpoint's lsn: the slot may send again transactions committed before
  the kill but not yet acknowledged, which the job skips (commit at or below
  the committed lsn).
* --group (the default; --no-group for one sink at a time): the sinks form
  the group cdc_group (create_sink_group), and checkpoint N is
  prepare_commit and commit on the group, one prepared transaction for both
  tables; the restart is one restart_job() on the group.  The protocol lives
  in Job.checkpoint and Job.restore.

The driver (this program without --job) makes a throwaway cluster, runs a
source workload (transactions of 1-4 operations on distinct orders: new
orders with lines, updates of orders and lines, deleted lines and orders,
key changes of an order (its lines follow by the cascade) or of a line, ~8%
rolled back) for --seconds, and meanwhile starts the job and kills it
(SIGKILL) at random moments, at least --kills times: after a random delay,
or, when the driver asks for it, by the job itself at a moment of its
protocol (after a write, between the sinks' prepares, after every prepare,
between the sinks' commits, after the commits and before the
acknowledgement).  Then the workload stops, the job runs unkilled until it
committed the source's last transaction and is stopped, and the replica's
tables are compared with the source's row by row (EXCEPT ALL both ways, in
the driver: they are two databases).

Key changes are single-row updates to fresh keys, never otherwise touched in
their transaction.  Today an upsert sink's -D is key-only and the latest
version of a key wins in stream order within a checkpoint, so a mass key
shift with a deferrable key (UPDATE ... SET id = id + 1 in one statement,
whose -D of an old version can come after the +I of the new one) could lose
rows; once full-row retractions retract only that row version (issue 18
item 2), such shifts are replicated too: --mass-key-shift makes the lines'
key DEFERRABLE on the source and adds transactions that shift every line of
an order by one in one UPDATE (today it loses rows: mismatched > 0).

The last line is always
    cdc: changes=N failures=N rows=N mismatched=N
(changes: source changes the job applied, from the last checkpoint's
properties; failures: kills survived; rows: source rows at the end;
mismatched: rows in one side and not the other; -1 when not measured).
Exit 0 only when mismatched = 0, at least --kills kills happened and
nothing is left behind (prepared transactions, pending checkpoints, sinks
that disagree).

Usage: test/cdc [--seconds N] [--kills N] [--seed N] [--skip-build] [--no-group]
                [--no-mass-key-shift]
Environment (same meaning): CDC_SECONDS (30), CDC_KILLS (12), CDC_SEED
(random; printed), CDC_SKIP_BUILD=1, CDC_INTERVAL_MS (250), CDC_GROUP=0
(--no-group), CDC_MASS_KEY_SHIFT=0 (--no-mass-key-shift), CDC_TAMPER=1 (delete a replica row before comparing: must report
mismatched=1 and fail), CDC_BREAK=ack-early (the job acknowledges the slot
when it writes, before its checkpoint commits: changes are lost) or
own-restore (with --no-group: each sink restored to its own last commit, the job resuming
from the highest: changes are lost), both to show that the comparison
fails; KEEP_TMP=1.

As root it builds and installs the extension from a copy of the repo into
the PostgreSQL of PS_PGBIN (unless --skip-build) and copies wal2json.so
there when that PostgreSQL is not the system's (test/lib/cluster.sh's
ps_ensure_wal2json); as another user (test/check runs it as postgres) it
uses what is installed.
"""
import argparse
import collections
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from decimal import Decimal

# the harness first: it installs psycopg2 when it is missing
from harness import (PGBIN, SINK_DIAGNOSIS, Cluster, RunLog, Server, close_quietly, describe, interrupt_on_signals,
                     keep_logs, pg_user, stage_files, write_diagnosis)

import psycopg2
import psycopg2.errors
import psycopg2.extras

SOURCE_DB = "cdc_source"
REPLICA_DB = "cdc_replica"
SLOT = "paimon_cdc"
COMMIT_USER = "cdc-job"
GROUP = "cdc_group"
# (table, primary key columns, columns): the replicated tables, parents first
TABLES = [("orders", ("id",), ("id", "customer", "status", "total", "updated_at")),
          ("order_lines", ("order_id", "line_no"), ("order_id", "line_no", "sku", "qty", "price"))]
SINKS = [t + "_sink" for t, _, _ in TABLES]
# the moments of the job's protocol at which the driver may have it kill itself
MOMENTS = ["after_write", "mid_prepare", "after_prepare", "mid_commit", "before_ack"]

SOURCE_DDL = """
CREATE TABLE orders (
    id bigint PRIMARY KEY,
    customer text NOT NULL,
    status text NOT NULL,
    total numeric(12,2) NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE order_lines (
    order_id bigint NOT NULL REFERENCES orders ON UPDATE CASCADE ON DELETE CASCADE,
    line_no int NOT NULL,
    sku text NOT NULL,
    qty int NOT NULL,
    price numeric(10,2) NOT NULL,
    PRIMARY KEY (order_id, line_no)
);
ALTER TABLE orders REPLICA IDENTITY FULL;
ALTER TABLE order_lines REPLICA IDENTITY FULL;
"""
# --mass-key-shift: the lines' key checked at the end of each statement, so
# that one UPDATE may shift every line of an order by one
SOURCE_DDL_DEFERRABLE = SOURCE_DDL.replace("PRIMARY KEY (order_id, line_no)",
                                           "PRIMARY KEY (order_id, line_no) DEFERRABLE INITIALLY IMMEDIATE")
# The replica: the same tables without the foreign key, as each sink commits
# its own table (with --group, one transaction would keep it).
REPLICA_DDL = SOURCE_DDL.replace(" REFERENCES orders ON UPDATE CASCADE ON DELETE CASCADE", "") \
    .split("ALTER TABLE")[0]

RUN = RunLog()
log = RUN.log
note = RUN.note


class Abort(Exception):
    """The run cannot go on (setup, a hang, a job that fails by itself)."""


def lsn_text(lsn):
    """lsn_text writes a WAL position as PostgreSQL does (X/X)."""
    return "%X/%X" % (lsn >> 32, lsn & 0xFFFFFFFF)


def lsn_int(text):
    """lsn_int reads a WAL position written X/X."""
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


# ----------------------------------------------------------------------------
# The job (a process of its own: --job)
# ----------------------------------------------------------------------------

class Job:
    """Job is one run of the CDC job, from its restart until it is killed
    (or stopped with SIGTERM)."""

    def __init__(self, cfg):
        """__init__ records the configuration: the server, --group, the
        interval, and the moment (and its occurrence) to kill itself at."""
        self.cfg = cfg
        self.replica = Server(cfg.host, cfg.port, dbname=REPLICA_DB)
        self.source = Server(cfg.host, cfg.port, dbname=SOURCE_DB)
        self.group = cfg.group
        self.die_at = cfg.die_at
        self.die_left = cfg.die_n
        self.stop = False
        self.conn = None
        self.committed_lsn = 0
        self.written_lsn = 0
        self.written_xid = None
        self.changes = 0  # source changes written, through the last write
        self.checkpoint_id = 0
        self.skipped = 0
        self.resumed = False  # a transaction beyond the committed lsn came
        self.epochs = {}  # sink or group -> the fence epoch restart_job() returned for it

    def say(self, msg):
        """say prints a line of the job's log (the driver keeps it)."""
        print("[job %d %.3f] %s" % (os.getpid(), time.time(), msg), flush=True)

    def maybe_die(self, moment):
        """maybe_die kills the job (SIGKILL, as the driver does) at moment
        of its protocol when the driver asked for that moment, at its
        die_n-th occurrence."""
        if self.die_at != moment:
            return
        self.die_left -= 1
        if self.die_left <= 0:
            self.say("killing myself at %s (checkpoint %d)" % (moment, self.checkpoint_id))
            os.kill(os.getpid(), signal.SIGKILL)

    def sql(self, sql, args=None):
        """sql runs one statement on the job's session and returns its rows."""
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall() if cur.description else None

    # ---- the per-checkpoint protocol: the one place that knows the sinks ----
    def checkpoint(self, n, props):
        """checkpoint makes checkpoint n with properties props (a dict):
        prepare_commit on every sink, each with the properties, then commit
        on every sink.  With --group (the default) one prepare_commit and one
        commit on the group, one prepared transaction for every table."""
        targets = [GROUP] if self.group else SINKS
        text = json.dumps(props)
        for i, s in enumerate(targets):
            if i > 0:
                self.maybe_die("mid_prepare")
            self.sql("SELECT count(*) FROM paimon_sink.prepare_commit(%s, %s, %s, 0, %s::jsonb, "
                     "fence_epoch => %s)", (s, COMMIT_USER, n, text, self.epochs[s]))
        self.maybe_die("after_prepare")
        for i, s in enumerate(targets):
            if i > 0:
                self.maybe_die("mid_commit")
            self.sql("SELECT count(*) FROM paimon_sink.commit(%s, %s, %s, %s)",
                     (s, COMMIT_USER, n, self.epochs[s]))

    def restore(self):
        """restore restarts the job on the sinks and returns (checkpoint id,
        properties) to resume from: restart_job() on every sink with
        restored_checkpoint_id = the highest checkpoint any sink committed,
        so that a checkpoint committed on some sinks is committed on all (a
        restore that meets a commit served meanwhile is tried again).  With
        --group one restart_job() on the group.  Keeps the fence epoch each
        restart_job() returned (self.epochs), which the job's writes and
        calls name from then on."""
        if self.group:
            r = self.sql("SELECT checkpoint_id, properties, fence_epoch "
                         "FROM paimon_sink.restart_job(%s, %s, 60000)", (GROUP, COMMIT_USER))[0]
            self.epochs = {GROUP: r[2]}
            return r[0], r[1] or {}
        for attempt in range(1, 6):
            marks = {}
            for s in SINKS:
                r = self.sql("SELECT checkpoint_id FROM paimon_sink.last_commit(%s, %s)", (s, COMMIT_USER))
                marks[s] = r[0][0] if r else 0
            m = max(marks.values())
            got = {}
            try:
                for s in SINKS:
                    restored = marks[s] if self.cfg.broken == "own-restore" else m
                    r = self.sql("SELECT checkpoint_id, properties, fence_epoch "
                                 "FROM paimon_sink.restart_job(%s, %s, 60000, %s)",
                                 (s, COMMIT_USER, restored))[0]
                    got[s] = (r[0], r[1] or {})
                    self.epochs[s] = r[2]
            except psycopg2.Error as e:
                if e.pgcode != "22023" or attempt == 5:
                    raise
                self.say("restore %d: %s; again" % (attempt, describe(e)))
                time.sleep(0.2)
                continue
            if self.cfg.broken == "own-restore":
                return max(got.values(), key=lambda r: r[0])
            if len(set(json.dumps(v, sort_keys=True) for v in got.values())) != 1:
                raise Abort("the sinks disagree after their restore to checkpoint %d: %s" % (m, got))
            self.say("restored: last commits %s -> checkpoint %d" % (marks, m))
            return got[SINKS[0]]

    # ---- start ----------------------------------------------------------------
    def wait_predecessor(self, seconds=30):
        """wait_predecessor waits (bounded) until the sessions of a killed job
        are gone: its replica sessions (a statement they ran goes on until it
        ends) and the walsender holding the slot."""
        deadline = time.monotonic() + seconds
        while True:
            left = self.replica.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'cdc-job' "
                                      "AND pid <> pg_backend_pid()", app="cdc-job-start")[0][0]
            busy = self.source.query("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s AND active",
                                     (SLOT,), app="cdc-job-start")[0][0]
            if not left and not busy:
                return
            if time.monotonic() > deadline:
                raise Abort("the killed job's sessions (%d) or slot (active: %d) still busy after %d s"
                            % (left, busy, seconds))
            time.sleep(0.05)

    def start(self):
        """start waits for the predecessor, restores, and opens the slot's
        stream; returns the replication cursor."""
        self.wait_predecessor()
        self.conn = self.replica.connect("cdc-job")
        n, props = self.restore()
        self.checkpoint_id = n
        self.committed_lsn = lsn_int(props["lsn"]) if "lsn" in props else 0
        self.written_lsn = self.committed_lsn
        self.written_xid = props.get("xid")
        self.changes = int(props.get("changes", 0))
        self.say("resuming after checkpoint %d: lsn %s, %d changes applied" % (n, lsn_text(self.committed_lsn),
                                                                               self.changes))
        rconn = psycopg2.connect(host=self.cfg.host, port=self.cfg.port, user=pg_user(), dbname=SOURCE_DB,
                                 application_name="cdc-job-repl",
                                 connection_factory=psycopg2.extras.LogicalReplicationConnection)
        cur = rconn.cursor()
        # start_lsn 0: from the slot's acknowledged position, which may be
        # below committed_lsn (a kill between commit and acknowledgement)
        cur.start_replication(slot_name=SLOT, decode=True, start_lsn=0,
                              options={"format-version": "2", "include-xids": "1", "include-types": "0",
                                       "add-tables": ",".join("public." + t for t, _, _ in TABLES)})
        return cur

    # ---- changes to row kinds ----------------------------------------------------
    @staticmethod
    def rows_of(change):
        """rows_of maps one wal2json change to the sink rows that apply it:
        (table, row kind, {column: value})."""
        table = change["table"]
        new = {c["name"]: c["value"] for c in change.get("columns", [])}
        old = {c["name"]: c["value"] for c in change.get("identity", [])}
        action = change["action"]
        if action == "I":
            return [(table, "+I", new)]
        if action == "D":
            return [(table, "-D", old)]
        key = next(k for t, k, _ in TABLES if t == table)
        if all(old[c] == new[c] for c in key):
            return [(table, "-U", old), (table, "+U", new)]
        # a key change: the old row goes, the new one comes
        return [(table, "-D", old), (table, "+I", new)]

    def write(self, txns):
        """write writes the buffered source transactions txns ([(end lsn,
        xid, rows, changes)]) into the sinks, in stream order, in one
        transaction of the job's session that names the job's identity
        (write_as(): commit user, writer id 0, fence epoch) on the group or
        on each sink."""
        per_table = collections.OrderedDict((t, []) for t, _, _ in TABLES)
        for _, _, rows, _ in txns:
            for table, kind, values in rows:
                cols = next(c for t, _, c in TABLES if t == table)
                per_table[table].append(tuple(values[c] for c in cols) + (kind,))
        with self.conn.cursor() as cur:
            cur.execute("BEGIN")
            for target, epoch in self.epochs.items():
                cur.execute("SELECT paimon_sink.write_as(%s, %s, 0, %s)", (target, COMMIT_USER, epoch))
            for (table, _, cols), sink in zip(TABLES, SINKS):
                rows = per_table[table]
                if rows:
                    psycopg2.extras.execute_values(
                        cur, "INSERT INTO %s (%s, _row_kind) VALUES %%s" % (sink, ", ".join(cols)), rows,
                        page_size=1000)
            cur.execute("COMMIT")
        self.written_lsn = txns[-1][0]
        self.written_xid = txns[-1][1]
        self.changes += sum(t[3] for t in txns)
        self.maybe_die("after_write")

    # ---- the loop ----------------------------------------------------------------
    def run(self):
        """run streams, writes and checkpoints until SIGTERM."""
        signal.signal(signal.SIGTERM, lambda signum, frame: setattr(self, "stop", True))
        cur = self.start()
        txn = None
        pending = []
        next_ckpt = time.monotonic() + self.cfg.interval_ms / 1000.0
        while not self.stop:
            msg = cur.read_message()
            if msg is not None:
                d = json.loads(msg.payload, parse_float=Decimal)
                action = d["action"]
                if action == "B":
                    txn = (d.get("xid"), [], [0])
                elif action == "C":
                    # data_start of the commit message: the end of the commit record
                    if msg.data_start <= self.committed_lsn:
                        self.skipped += 1
                    else:
                        if self.skipped and not self.resumed:
                            self.say("skipped %d transaction(s) at or below the committed lsn %s"
                                     % (self.skipped, lsn_text(self.committed_lsn)))
                        self.resumed = True
                        pending.append((msg.data_start, txn[0], txn[1], txn[2][0]))
                    txn = None
                elif action in ("I", "U", "D"):
                    txn[1].extend(self.rows_of(d))
                    txn[2][0] += 1
                elif action == "T":
                    raise Abort("TRUNCATE of %s.%s: not replicated by this example" % (d["schema"], d["table"]))
                continue
            if pending:
                self.write(pending)
                if self.cfg.broken == "ack-early":
                    cur.send_feedback(flush_lsn=self.written_lsn, force=True)
                pending = []
            now = time.monotonic()
            if now >= next_ckpt:
                next_ckpt = now + self.cfg.interval_ms / 1000.0
                if self.written_lsn > self.committed_lsn:
                    n = self.checkpoint_id + 1
                    self.checkpoint(n, {"lsn": lsn_text(self.written_lsn), "xid": self.written_xid,
                                        "changes": self.changes})
                    self.checkpoint_id = n
                    self.committed_lsn = self.written_lsn
                    self.maybe_die("before_ack")
                    # acknowledged only now: the slot never passes what is not committed
                    cur.send_feedback(flush_lsn=self.committed_lsn, force=True)
                    self.say("checkpoint %d: lsn %s, %d changes" % (n, lsn_text(self.committed_lsn), self.changes))
                continue
            try:
                select.select([cur], [], [], max(0.0, min(0.05, next_ckpt - now)))
            except InterruptedError:
                pass
        self.say("stopped (SIGTERM) after checkpoint %d" % self.checkpoint_id)


def job_main(cfg):
    """job_main runs the job process; exit 0 when stopped by SIGTERM, 3 on
    an error (printed)."""
    job = Job(cfg)
    try:
        job.run()
        return 0
    except Exception:
        job.say("ERROR:\n" + traceback.format_exc())
        return 3


# ----------------------------------------------------------------------------
# The driver: the source workload, the kills, the comparison
# ----------------------------------------------------------------------------

class Workload(threading.Thread):
    """Workload writes the source: transactions of 1-4 operations, each on
    an order of its own (a new one or one no other operation of the
    transaction touches), ~8% rolled back; it keeps the source's keys to
    pick from (changed only when a transaction commits)."""

    def __init__(self, server, seed, mass_shift):
        """__init__ prepares the connection's server and the seeded choices;
        mass_shift adds shifts of every line of an order by one."""
        super().__init__(name="workload", daemon=True)
        self.server = server
        self.mass_shift = mass_shift
        self.rng = random.Random("%d-workload" % seed)
        self.orders = {}  # id -> set of line numbers
        self.next_id = 1
        self.next_line = 1
        self.stop = threading.Event()
        self.commits = 0
        self.rollbacks = 0
        self.ops = collections.Counter()
        self.error = None

    def fresh_id(self):
        """fresh_id is an order id never used."""
        self.next_id += 1
        return self.next_id - 1

    def fresh_line(self):
        """fresh_line is a line number never used."""
        self.next_line += 1
        return self.next_line - 1

    def op(self, cur, orders, kind, oid):
        """op runs one operation on order oid (None for a new order) of the
        transaction, on orders (the keys as the transaction leaves them)."""
        rng = self.rng
        if kind == "new_order":
            oid = self.fresh_id()
            cur.execute("INSERT INTO orders (id, customer, status, total) VALUES (%s, %s, 'new', %s)",
                        (oid, "c%d" % rng.randint(1, 50), Decimal(rng.randint(100, 99999)) / 100))
            lines = [self.fresh_line() for _ in range(rng.randint(1, 4))]
            psycopg2.extras.execute_values(cur, "INSERT INTO order_lines VALUES %s",
                                           [(oid, n, "sku-%d" % rng.randint(1, 500), rng.randint(1, 9),
                                             Decimal(rng.randint(50, 9999)) / 100) for n in lines])
            orders[oid] = set(lines)
        elif kind == "update_order":
            cur.execute("UPDATE orders SET status = %s, total = total + %s, updated_at = now() WHERE id = %s",
                        (rng.choice(["paid", "packed", "shipped", "returned"]), Decimal(rng.randint(1, 999)) / 100,
                         oid))
        elif kind == "update_line" and orders[oid]:
            cur.execute("UPDATE order_lines SET qty = qty + 1, price = price + 0.01 WHERE order_id = %s "
                        "AND line_no = %s", (oid, rng.choice(sorted(orders[oid]))))
        elif kind == "add_line":
            n = self.fresh_line()
            cur.execute("INSERT INTO order_lines VALUES (%s, %s, 'sku-x', 1, 1.00)", (oid, n))
            orders[oid].add(n)
        elif kind == "delete_line" and orders[oid]:
            n = rng.choice(sorted(orders[oid]))
            cur.execute("DELETE FROM order_lines WHERE order_id = %s AND line_no = %s", (oid, n))
            orders[oid].discard(n)
        elif kind == "delete_order":
            cur.execute("DELETE FROM orders WHERE id = %s", (oid,))  # its lines by the cascade
            del orders[oid]
        elif kind == "move_order":
            # a key change to a fresh key; its lines' keys follow (ON UPDATE CASCADE)
            new = self.fresh_id()
            cur.execute("UPDATE orders SET id = %s WHERE id = %s", (new, oid))
            orders[new] = orders.pop(oid)
        elif kind == "move_line" and orders[oid]:
            n = rng.choice(sorted(orders[oid]))
            m = self.fresh_line()
            cur.execute("UPDATE order_lines SET line_no = %s WHERE order_id = %s AND line_no = %s", (m, oid, n))
            orders[oid].discard(n)
            orders[oid].add(m)
        elif kind == "shift_lines" and len(orders[oid]) > 1:
            # one statement changes every line's key, to keys that lines of
            # the same statement give up: an old version's -D can come after
            # the new version's +I of the same key
            cur.execute("UPDATE order_lines SET line_no = line_no + 1 WHERE order_id = %s", (oid,))
            orders[oid] = {n + 1 for n in orders[oid]}
            self.next_line = max(self.next_line, max(orders[oid]) + 1)
        else:
            return
        self.ops[kind] += 1

    def transaction(self, cur):
        """transaction runs one source transaction (committed or rolled back)."""
        rng = self.rng
        orders = {k: set(v) for k, v in self.orders.items()}
        untouched = list(orders)
        rng.shuffle(untouched)
        cur.execute("BEGIN")
        for _ in range(rng.randint(1, 4)):
            kind = rng.choices(["new_order", "update_order", "update_line", "add_line", "delete_line",
                                "delete_order", "move_order", "move_line", "shift_lines"],
                               [25, 20, 15, 8, 8, 8, 8, 8, 8 if self.mass_shift else 0])[0]
            if kind == "new_order" or len(orders) < 20:
                self.op(cur, orders, "new_order", None)
            elif untouched:
                self.op(cur, orders, kind, untouched.pop())
        if rng.random() < 0.08:
            cur.execute("ROLLBACK")
            self.rollbacks += 1
            return
        cur.execute("COMMIT")
        self.orders = orders
        self.commits += 1

    def run(self):
        """run writes transactions until stopped; an error ends the run
        (kept in error)."""
        conn = None
        try:
            conn = self.server.connect("cdc-workload")
            with conn.cursor() as cur:
                while not self.stop.is_set():
                    self.transaction(cur)
                    self.stop.wait(self.rng.uniform(0, 0.01))
        except Exception as e:
            self.error = describe(e)
            log("workload failed: %s" % traceback.format_exc())
        finally:
            close_quietly(conn)

    def last_transaction(self):
        """last_transaction commits a final update of an order (inserting one
        if there is none) and returns its xid, which the job's last
        checkpoint must reach."""
        conn = self.server.connect("cdc-workload")
        try:
            with conn.cursor() as cur:
                cur.execute("BEGIN")
                if not self.orders:
                    self.op(cur, self.orders, "new_order", None)
                oid = min(self.orders)
                cur.execute("UPDATE orders SET status = 'final' WHERE id = %s", (oid,))
                cur.execute("SELECT (pg_current_xact_id()::text::bigint % 4294967296)::bigint")
                xid = cur.fetchone()[0]
                cur.execute("COMMIT")
                return xid
        finally:
            conn.close()


def parse_args():
    """parse_args reads the options and their CDC_* defaults."""
    env = os.environ
    p = argparse.ArgumentParser(prog="cdc", description="paimon_sink CDC job with random kills")
    p.add_argument("--seconds", type=float, default=float(env.get("CDC_SECONDS", "30")))
    p.add_argument("--kills", type=int, default=int(env.get("CDC_KILLS", "12")))
    p.add_argument("--seed", type=int, default=int(env["CDC_SEED"]) if env.get("CDC_SEED") else None)
    p.add_argument("--skip-build", action="store_true", default=env.get("CDC_SKIP_BUILD") == "1")
    p.add_argument("--interval-ms", type=int, default=int(env.get("CDC_INTERVAL_MS", "250")))
    p.add_argument("--group", action=argparse.BooleanOptionalAction, default=env.get("CDC_GROUP", "1") == "1",
                   help="checkpoint one sink group (the default), or each sink in turn (--no-group)")
    p.add_argument("--mass-key-shift", action=argparse.BooleanOptionalAction,
                   default=env.get("CDC_MASS_KEY_SHIFT", "1") == "1",
                   help="also shift all lines of an order by one in one UPDATE (the default; full-row "
                        "retractions keep every line)")
    p.add_argument("--tamper", action="store_true", default=env.get("CDC_TAMPER") == "1")
    p.add_argument("--break", dest="broken", choices=["ack-early", "own-restore"], default=env.get("CDC_BREAK"))
    # the job process's own options
    p.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--host", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--die-at", choices=MOMENTS, help=argparse.SUPPRESS)
    p.add_argument("--die-n", type=int, default=1, help=argparse.SUPPRESS)
    cfg = p.parse_args()
    if cfg.seed is None:
        cfg.seed = random.SystemRandom().randrange(1, 1 << 31)
    return cfg


def plugin_setting():
    """plugin_setting returns the postgresql.conf line that lets wal2json be
    a slot's output plugin where the server has a list of allowed output
    plugins (output_plugin_libraries, whose default names only pgoutput and
    test_decoding), else nothing: a server without the setting refuses to
    start with it."""
    out = subprocess.run([os.path.join(PGBIN, "postgres"), "--describe-config"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    for line in out.splitlines():
        f = line.split("\t")
        if f[0] == "output_plugin_libraries":
            allowed = [x.strip() for x in f[4].split(",") if x.strip()] if len(f) > 4 else []
            return "output_plugin_libraries = '%s'\n" % ", ".join(allowed + ["wal2json"])
    return ""


class Driver:
    """Driver runs the example: the cluster, the source, the replica and its
    sinks, the workload, the job's runs and kills, and the comparison."""

    def __init__(self, cfg):
        """__init__ prepares the cluster object and the counters."""
        self.cfg = cfg
        self.h = Cluster("cdc", "cdc", Abort)
        self.rng = random.Random(cfg.seed)
        self.kills = 0
        self.self_kills = collections.Counter()
        self.starts = 0
        self.job_log = None
        self.job = None
        self.res = {"changes": -1, "failures": -1, "rows": -1, "mismatched": -1}

    def setup(self):
        """setup installs what is missing, builds (as root), makes the
        cluster (wal_level = logical), the source with its slot and the
        replica with its sinks."""
        h, cfg = self.h, self.cfg
        h.sh("ps_ensure_packages")
        h.create_workdir()
        RUN.open(os.path.join(h.work, "logs", "cdc.log"))
        if cfg.skip_build or os.geteuid() != 0:
            log("build: skipped (%s), using the installed extension"
                % ("--skip-build" if cfg.skip_build else "not root"))
        else:
            log("build: make COPT=-Werror && make install")
            if h.build_install(os.path.join(h.work, "logs", "build.log")) != 0:
                raise Abort("build or make install failed (see logs/build.log)")
        if h.sh("ps_ensure_wal2json", check=False) != 0:
            raise Abort("the wal2json output plugin cannot be loaded (above: why, and what to do)")
        h.create("\n# ---- test/cdc ----\nwal_level = logical\nmax_wal_senders = 10\nmax_replication_slots = 10\n"
                 "max_connections = 50\nlog_min_messages = log\nlog_line_prefix = '%m [%p] %d %a '\n"
                 + plugin_setting())
        h.start()
        ctl = h.server(default_app="cdc-ctl")
        for db in (SOURCE_DB, REPLICA_DB):
            ctl.query("CREATE DATABASE %s" % db)
        self.src = Server(h.sockdir, h.port, dbname=SOURCE_DB, default_app="cdc-ctl")
        self.rep = Server(h.sockdir, h.port, dbname=REPLICA_DB, default_app="cdc-ctl")
        self.src.query(SOURCE_DDL_DEFERRABLE if cfg.mass_key_shift else SOURCE_DDL)
        self.src.query("SELECT pg_create_logical_replication_slot(%s, 'wal2json')", (SLOT,))
        self.rep.query("CREATE EXTENSION paimon_sink")
        self.rep.query(REPLICA_DDL)
        for (table, _, _), sink in zip(TABLES, SINKS):
            self.rep.query("SELECT * FROM paimon_sink.create_sink(%s, %s, mode => 'upsert', buckets => 2)",
                           (sink, table))
        if cfg.group:
            # sink groups (issue 18 item 4): not on main yet
            try:
                self.rep.query("SELECT * FROM paimon_sink.create_sink_group(%s, %s)", (GROUP, SINKS))
            except psycopg2.errors.UndefinedFunction as e:
                raise Abort("--group needs sink groups, which this paimon_sink lacks: %s" % describe(e))
        if not self.rep.wait_writers_ready(60):
            raise Abort("the replica's writers did not start")
        log("cluster: socket %s port %d; source %s (slot %s, wal2json), replica %s (upsert sinks %s%s)"
            % (h.sockdir, h.port, SOURCE_DB, SLOT, REPLICA_DB, ", ".join(SINKS),
               ", group %s" % GROUP if cfg.group else ""))

    def committed_by(self):
        """committed_by names what last_commit() is asked about: every sink,
        or with --group the group."""
        return [GROUP] if self.cfg.group else SINKS

    def start_job(self, die_at=None, die_n=1):
        """start_job starts a job process (its output appended to logs/job.log)."""
        cmd = ["/usr/bin/python3", "-B", os.path.abspath(__file__), "--job", "--host", self.h.sockdir,
               "--port", str(self.h.port), "--interval-ms", str(self.cfg.interval_ms), "--die-n", str(die_n)]
        if die_at:
            cmd += ["--die-at", die_at]
        cmd.append("--group" if self.cfg.group else "--no-group")
        if self.cfg.broken:
            cmd += ["--break", self.cfg.broken]
        self.starts += 1
        self.job = subprocess.Popen(cmd, stdout=self.job_log, stderr=subprocess.STDOUT)
        return self.job

    def job_failed(self, rc):
        """job_failed raises Abort for a job that ended by itself, not by a kill."""
        raise Abort("the job exited with %s by itself (see logs/job.log)" % rc)

    def chaos(self, workload):
        """chaos starts the job again and again and kills it, until the
        workload ran --seconds and --kills kills happened."""
        t_end = time.monotonic() + self.cfg.seconds
        hard_end = t_end + 3 * self.cfg.seconds
        while time.monotonic() < t_end or self.kills < self.cfg.kills:
            if time.monotonic() > hard_end:
                raise Abort("only %d kills within %.0f s" % (self.kills, 4 * self.cfg.seconds))
            if workload.error:
                raise Abort("the workload failed: %s" % workload.error)
            die_at = self.rng.choice([None] * 3 + MOMENTS)
            p = self.start_job(die_at, self.rng.randint(1, 3))
            delay = self.rng.uniform(0.8, 2.5)
            try:
                rc = p.wait(delay)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
                how = "killed by the driver after %.1f s" % delay
            else:
                if rc != -signal.SIGKILL:
                    self.job_failed(rc)
                how = "killed itself at %s" % die_at
                self.self_kills[die_at] += 1
            self.kills += 1
            note("kill %d: job pid %d %s" % (self.kills, p.pid, how))

    def catch_up(self, xid, seconds=60):
        """catch_up runs the job unkilled until every sink's last commit
        reached the source's last transaction (xid), then stops it."""
        p = self.start_job()
        deadline = time.monotonic() + seconds
        try:
            while True:
                rows = self.rep.query("SELECT l.properties FROM unnest(%s::text[]) s, "
                                      "paimon_sink.last_commit(s, %s) l", (self.committed_by(), COMMIT_USER))
                if rows and all(r[0] and r[0].get("xid") == xid for r in rows):
                    return rows[0][0]
                if p.poll() is not None:
                    self.job_failed(p.returncode)
                if time.monotonic() > deadline:
                    raise Abort("the job did not reach the last source transaction (xid %d) within %d s; "
                                "last commits: %s" % (xid, seconds, rows))
                time.sleep(0.1)
        finally:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    def compare(self):
        """compare counts the rows in one side and not the other, per table
        (EXCEPT ALL both ways) and returns (source rows, mismatched)."""
        if self.cfg.tamper:
            log("CDC_TAMPER=1: deleting one replica row before comparing")
            self.rep.query("DELETE FROM order_lines WHERE ctid = (SELECT min(ctid) FROM order_lines)")
        rows = mismatched = 0
        for table, key, cols in TABLES:
            sql = "SELECT %s FROM %s ORDER BY %s" % (", ".join(cols), table, ", ".join(key))
            a = collections.Counter(self.src.query(sql, timeout_ms=120000))
            b = collections.Counter(self.rep.query(sql, timeout_ms=120000))
            only_src, only_rep = a - b, b - a
            n = sum(a.values())
            bad = sum(only_src.values()) + sum(only_rep.values())
            log("compare %s: source %d rows, replica %d; only in the source %d, only in the replica %d"
                % (table, n, sum(b.values()), sum(only_src.values()), sum(only_rep.values())))
            for r in list(only_src)[:5]:
                log("    only in the source: %s" % (r,))
            for r in list(only_rep)[:5]:
                log("    only in the replica: %s" % (r,))
            rows += n
            mismatched += bad
        return rows, mismatched

    def leftovers(self):
        """leftovers lists what must not be left: prepared transactions,
        pending checkpoints, staged files, sinks whose last commits differ."""
        problems = []
        q = self.rep.query("SELECT (SELECT count(*) FROM pg_prepared_xacts), "
                           "(SELECT count(*) FROM paimon_sink.pending_checkpoints), "
                           "(SELECT count(DISTINCT (l.checkpoint_id, l.properties::text)) "
                           "   FROM unnest(%s::text[]) s, paimon_sink.last_commit(s, %s) l)",
                           (self.committed_by(), COMMIT_USER))[0]
        files = stage_files(self.h.datadir)
        for _ in range(50):
            if not files:
                break
            time.sleep(0.1)
            files = stage_files(self.h.datadir)
        log("left: prepared transactions %d, pending checkpoints %d, staged files %d; distinct last commits "
            "over the sinks %d" % (q[0], q[1], len(files), q[2]))
        if q[0] or q[1] or files:
            problems.append("left behind: %d prepared transaction(s), %d pending checkpoint(s), %d staged file(s)"
                            % (q[0], q[1], len(files)))
        if q[2] != 1:
            problems.append("the sinks' last commits differ (%d distinct)" % q[2])
        return problems

    def run(self):
        """run runs the example and returns the problems found."""
        cfg = self.cfg
        self.setup()
        self.job_log = open(os.path.join(self.h.work, "logs", "job.log"), "a")
        workload = Workload(self.src, cfg.seed, cfg.mass_key_shift)
        workload.start()
        log("workload and job started: %.0f s, at least %d kills, checkpoints every %d ms%s"
            % (cfg.seconds, cfg.kills, cfg.interval_ms, ", BROKEN: " + cfg.broken if cfg.broken else ""))
        try:
            self.chaos(workload)
        finally:
            workload.stop.set()
            workload.join(30)
        self.res["failures"] = self.kills
        if workload.error:
            raise Abort("the workload failed: %s" % workload.error)
        xid = workload.last_transaction()
        log("source: %d transactions committed, %d rolled back; operations %s"
            % (workload.commits + 1, workload.rollbacks, ", ".join("%s %d" % kv for kv in sorted(workload.ops.items()))))
        log("kills: %d (%d by the driver; the job itself: %s); job starts %d"
            % (self.kills, self.kills - sum(self.self_kills.values()),
               ", ".join("%s %d" % kv for kv in sorted(self.self_kills.items())) or "none", self.starts))
        props = self.catch_up(xid)
        self.res["changes"] = int(props.get("changes", -1))
        self.job_log.flush()
        with open(os.path.join(self.h.work, "logs", "job.log")) as f:
            text = f.read()
        skipped = re.findall(r"\] skipped (\d+) transaction", text)
        log("job: %d checkpoints committed over all runs; %d restart(s) skipped %d transaction(s) the slot sent "
            "again (committed, not yet acknowledged); last properties %s"
            % (text.count("] checkpoint "), len(skipped), sum(map(int, skipped)), json.dumps(props, sort_keys=True)))
        rows, mismatched = self.compare()
        self.res.update(rows=rows, mismatched=mismatched)
        problems = self.leftovers()
        if mismatched:
            problems.append("%d row(s) differ between source and replica" % mismatched)
        if self.kills < cfg.kills:
            problems.append("only %d of %d kills" % (self.kills, cfg.kills))
        return problems

    def diagnose(self):
        """diagnose writes the replica's sessions and sink state into logs/diagnosis."""
        write_diagnosis(self.h.work, self.rep, "cdc-diagnose", SINK_DIAGNOSIS + [
            ("slot", "SELECT slot_name, active, active_pid, restart_lsn, confirmed_flush_lsn "
                     "FROM pg_replication_slots")])


def main():
    """main runs the driver (or, with --job, the job); it always cleans up
    and prints the last line cdc: changes=N failures=N rows=N mismatched=N."""
    cfg = parse_args()
    if cfg.job:
        return job_main(cfg)
    d = Driver(cfg)
    interrupt_on_signals()
    rc = 1
    try:
        log("=== paimon_sink CDC example: seed %d, %.0f s, %d kills%s; rerun: CDC_SEED=%d test/cdc"
            % (cfg.seed, cfg.seconds, cfg.kills, (", sink group" if cfg.group else "")
               + (", mass key shifts" if cfg.mass_key_shift else ""), cfg.seed))
        problems = d.run()
        if problems:
            log("FAIL: " + "; ".join(problems))
        else:
            log("PASS: the replica equals the source row by row, nothing left behind")
            rc = 0
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Exception as e:
        log("FAIL: %s" % (e if isinstance(e, Abort) else traceback.format_exc()))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if d.job is not None and d.job.poll() is None:
            d.job.kill()
            d.job.wait()
        if rc == 1 and d.h.work:
            if getattr(d, "rep", None) is not None:
                d.diagnose()
            keep_logs(d.h.work, [d.h.server_log], "paimon_sink-cdc-logs.")
        d.h.cleanup()
        if d.res["failures"] < 0:
            d.res["failures"] = d.kills
        print("cdc: changes=%d failures=%d rows=%d mismatched=%d" % tuple(
            d.res[k] for k in ("changes", "failures", "rows", "mismatched")), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
