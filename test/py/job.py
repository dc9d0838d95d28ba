#!/usr/bin/python3
"""test/job -- a stream job with failovers against paimon_sink (exactly-once).

Emulates a Flink-style job on one throwaway cluster (restart_after_crash on):

* source: records i = 1..N, payload 'r<i>:<md5(i)>', partitioned over 4
  subtasks by i mod 4; each subtask reads its records in order; its source
  position (records consumed) is checkpoint state;
* 4 writer subtasks (threads, one connection each) write small
  transactions: multi-row INSERT VALUES, COPY, INSERT ... SELECT
  generate_series, several INSERTs in BEGIN/COMMIT, a rolled-back savepoint
  inside a committed transaction, and now and then a ROLLBACK'ed batch.
  Their identity (commit user = the job id, writer id = subtask index, the
  attempt's fence epoch from restart_job()) travels in each transaction
  (--identity transaction, the default: every writing transaction is a
  block whose first statement is write_as(sink, job, s, epoch)) or in the
  session (--identity session: SET paimon_sink.commit_user, writer_id and
  fence_epoch once per connection; the single statements in autocommit);
* a checkpoint coordinator triggers checkpoint N every 200-500 ms; each
  subtask, at its next batch boundary, calls prepare_commit(sink, job, N, s,
  properties => {"pos-<s>": position}, fence_epoch => epoch, expected_rows =>
  the rows it sent since its last prepare) and reports it; once all 4 did, N
  is complete and the single committer calls commit(sink, job, N,
  fence_epoch => epoch) (with --identity session both leave fence_epoch to
  the session's setting).  The job
  keeps no store of its own: its source positions are the checkpoint's
  properties, committed in the same prepared transaction as its rows (as
  Paimon's snapshot properties, Kafka's sendOffsetsToTransaction);
* a chaos agent makes at least JOB_FAILURES failures at random moments: the
  job kills itself (sockets shut down, threads stopped, in-flight batches
  lost), kill -9 of a client backend / paimon_sink writer / committer,
  pg_terminate_backend of a job session, an injected fault (error, fatal,
  panic, kill) at a random point, a commit that fails, hangs (pause; the
  commit times out) or whose reply is lost, a job kill in the middle of a
  barrier (one subtask prepared N) or after all prepared N but before
  commit(N) was sent.  The source is paced so that about 1/(failures+1) of it is written
  between two failures, and each failure is reported (kind, checkpoint,
  restored from M, what restart_job() did);
* after every failure the job restarts at once (as a job does: its old
  connections are gone, their server sessions may still be finishing a
  statement; those still running at the restore are reported) with one
  call, restart_job(sink, job, 120000): it waits for the server's
  workers, restores the job to its last committed checkpoint M (what was
  prepared after M is discarded) and returns M with its properties and the
  new attempt's fence epoch; the job resets the source positions to them
  and replays (its start is such a call too, from nothing).  Checkpoint ids continue
  from M+1 ("continue") or from a counter that never goes back ("counter"),
  chosen per restart;
* at the end: no more failures, the source is finished, a final checkpoint
  is prepared and committed; then the target must hold every record exactly
  once, no paimon_sink prepared transaction, pending checkpoint or staged
  file may be left.

The last line is always
    job: records=N failures=N missing=N duplicated=N
(-1: not measured).  Exit 0 only when missing = duplicated = 0, every other
check passed and nothing is left behind.

Through PgBouncer (--pooler transaction|session): the harness starts
Debian's PgBouncer beside the cluster (unix socket, pool_mode as given,
--pool-size server connections per pool, 2: fewer than the subtasks), and
the subtasks, the committer and restart_job() reach the cluster through it
as the roles job_subtask, job_committer and job_restart, whose statement
timeouts (20 s, 6 s, 180 s) are role settings, since a pooler passes no
startup options; the chaos agent and the checks connect directly.  Under
session pooling each subtask transaction gets its own client connection
(a pool smaller than the subtasks serves them only so).  The report adds
PgBouncer's pools (server connections, never above the pool size) and
its transaction count.  --expect-refused: the run must be refused, as
--pooler transaction --identity session is (the session settings stay on
whichever server connection served them): it passes when a call of the job
failed with 55000 (the job then stops; missing is -1, not measured) and
the target holds no row twice, and fails when the job completes.

Usage: test/job [--records N] [--failures N] [--seed N] [--skip-build]
                [--pooler none|session|transaction] [--pool-size N]
                [--identity transaction|session] [--expect-refused]
Environment (same meaning): JOB_RECORDS (200000), JOB_FAILURES (24),
JOB_SEED (random; printed), JOB_SKIP_BUILD=1 (use the installed extension),
JOB_TAMPER=1 (delete one target row before verifying: must report missing=1
and fail), JOB_CKPT_IDS=mixed|continue|counter (mixed), JOB_BUCKETS=1|4
(chosen by the seed), JOB_TIMEOUT (480 s for the job phase), JOB_VERBOSE=1
(a line per checkpoint into the job log), KEEP_TMP=1 (keep the temp dir),
JOB_FENCE=1 (diagnostic, not the default: before restart_job(), wait until the
server sessions of the failed attempt have ended, i.e. assume an orchestrator
that fences them; separates that case from everything else), JOB_POOLER
(none), JOB_POOL_SIZE (2), JOB_IDENTITY (transaction), JOB_EXPECT_REFUSED=1.

The choices (failure kinds, points, actions, delays, id policies, batch
sizes and methods) come from the seed; the interleaving with the server does
not, so a rerun with the same seed makes the same choices, not the same
timing.  On a failed check, duplicated or missing records are listed as runs
per subtask with the transactions that wrote and loaded them (columns
write_xid, a default evaluated in the writing session, and load_xid, set by
a trigger in the committer) and the failure whose in-flight batch or replay
they match.

As root it does what test/demo does: installs missing packages, builds and
installs the extension from a copy of the repo, runs the cluster as the OS
user postgres in a temp dir (unix socket only) and removes everything at
exit, also on Ctrl-C.  On failure the logs are copied to a kept directory.
"""
import argparse
import hashlib
import io
import json
import os
import random
import signal
import socket
import sys
import threading
import time
import traceback

# the harness first: it installs psycopg2 when it is missing
from harness import (ROOT, SINK_DIAGNOSIS, Cluster, Pooler, RunLog, close_quietly, describe,
                     interrupt_on_signals, keep_logs, stage_files, write_diagnosis)

import psycopg2
import psycopg2.extras

CLUSTER = "job"
SINK = "job_sink"
TARGET = "job_target"
JOB_ID = "job-1"
SUBTASKS = 4
FAULT_POINTS = ["writer_after_receive", "writer_after_ack", "backend_after_handoff",
                "barrier_after_first_writer", "committer_before_prepare",
                "committer_after_prepare", "committer_after_commit_prepared"]
COMMITTER_POINTS = ["committer_before_prepare", "committer_after_prepare",
                    "committer_after_commit_prepared"]
FAULT_ACTIONS = ["error", "fatal", "panic", "kill"]
PACE = 2.0  # seconds per phase (the mean time between failures is about 2-3 s)
# statement timeouts of the job's connections by role (Job.open)
ROLE_TIMEOUT_MS = {"subtask": 20000, "committer": 6000, "restart": 180000}

RUN = RunLog()
log = RUN.log
note = RUN.note


class Abort(Exception):
    """The test cannot go on (hang, stale restore, ...)."""


# ----------------------------------------------------------------------------
# Database helpers
# ----------------------------------------------------------------------------

def abort_conn(conn):
    """Drop a connection abruptly, from any thread: shut its socket down."""
    try:
        fd = conn.fileno()
    except Exception:
        return
    try:
        s = socket.socket(fileno=os.dup(fd))
        try:
            s.shutdown(socket.SHUT_RDWR)
        finally:
            s.close()
    except OSError:
        pass


# ----------------------------------------------------------------------------
# The source
# ----------------------------------------------------------------------------

def payload(i):
    """payload is record i's payload: 'r<i>:<md5(i)>'."""
    return "r%d:%s" % (i, hashlib.md5(str(i).encode()).hexdigest())


class Source:
    """Records 1..N; subtask s reads i = first(s) + 4k in order, k = position."""

    def __init__(self, n):
        """__init__ computes each subtask's first record and how many records it reads."""
        self.n = n
        self.first = [4 if s == 0 else s for s in range(SUBTASKS)]
        self.length = [((n - f) // 4 + 1) if n >= f else 0 for f in self.first]

    def record(self, s, k):
        """record is the id of subtask s's record at position k."""
        return self.first[s] + 4 * k


# ----------------------------------------------------------------------------
# One attempt of the job (from a restore until the next failure)
# ----------------------------------------------------------------------------

class Stopped(Exception):
    """A thread of an attempt stops because the attempt failed or completed."""

    pass


class Attempt:
    """One attempt of the job, from a restore until the next failure: 4 subtask threads and the
    checkpoint coordinator, their connections, the barrier in progress and the acks."""

    def __init__(self, job, aid, restored_id, positions, policy, epoch):
        """__init__ records the attempt's number, the checkpoint it restored from with its
        positions, the checkpoint id policy and the fence epoch restart_job() gave it."""
        self.job = job
        self.aid = aid
        self.epoch = epoch
        self.restored_id = restored_id
        self.start_positions = list(positions)
        self.positions = list(positions)  # live, for reporting
        self.policy = policy
        self.cond = threading.Condition()
        self.failed = None  # (who, message)
        self.completed = False
        self.done = threading.Event()
        self.conns = set()
        self.barrier = None
        self.acks = {}
        self.threads = []
        self.last_triggered = restored_id
        self.last_completed = restored_id
        self.last_committed = None
        self.started = time.monotonic()

    # connections -----------------------------------------------------------
    def connect(self, who, role):
        """connect opens a connection named job-a<N>-<who> for role (subtask, committer: see
        Job.open), refused (Stopped) once the attempt is over; fail() aborts the connections it
        keeps.  With --identity session it names the job's identity in the session (SET
        commit_user, writer_id for a subtask <who> = s<N>, fence_epoch), as docs/sinks.md's
        direct connections do."""
        conn = self.job.open(role, "job-a%d-%s" % (self.aid, who))
        with self.cond:
            if self.failed is not None or self.completed:
                close_quietly(conn)
                raise Stopped()
            self.conns.add(conn)
        if self.job.cfg.identity == "session":
            with conn.cursor() as cur:
                cur.execute("SET paimon_sink.commit_user = %s", (JOB_ID,))
                if who.startswith("s"):
                    cur.execute("SET paimon_sink.writer_id = %s", (int(who[1:]),))
                cur.execute("SET paimon_sink.fence_epoch = %s", (str(self.epoch),))
        return conn

    def release(self, conn):
        """release closes a connection of the attempt and forgets it."""
        with self.cond:
            self.conns.discard(conn)
        close_quietly(conn)

    def stopping(self):
        """stopping tells whether the attempt failed or completed."""
        return self.failed is not None or self.completed

    def fail(self, who, msg):
        """fail ends the attempt as failed (once): wakes every thread and shuts down every
        connection's socket, as a killed job would; False when it had ended already."""
        with self.cond:
            if self.failed is not None or self.completed:
                return False
            self.failed = (who, msg, time.monotonic())
            self.cond.notify_all()
            conns = list(self.conns)
        for c in conns:
            abort_conn(c)
        self.done.set()
        return True

    def complete(self):
        """complete ends the attempt as finished, unless it failed first."""
        with self.cond:
            if self.failed is not None:
                return False
            self.completed = True
            self.cond.notify_all()
        self.done.set()
        return True

    def join(self, timeout=15):
        """join waits (timeout in seconds in all) for the attempt's threads, closes its connections
        and returns the names of the threads still running."""
        stuck = []
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
            if t.is_alive():
                stuck.append(t.name)
        for c in list(self.conns):
            if self.failed is not None:
                abort_conn(c)
            close_quietly(c)
        return stuck

    def start(self):
        """start starts the subtask threads and the coordinator."""
        for s in range(SUBTASKS):
            t = threading.Thread(target=self.run_thread, args=("s%d" % s, self.subtask, s),
                                 name="a%d-s%d" % (self.aid, s), daemon=True)
            self.threads.append(t)
        t = threading.Thread(target=self.run_thread, args=("committer", self.coordinator, None),
                             name="a%d-coordinator" % self.aid, daemon=True)
        self.threads.append(t)
        for t in self.threads:
            t.start()

    def run_thread(self, who, fn, arg):
        """run_thread runs one of the attempt's threads; an error in it fails the attempt (noted in
        the job log unless the attempt was stopping anyway)."""
        try:
            fn(arg) if arg is not None else fn()
        except Stopped:
            pass
        except Exception as e:
            if not self.stopping():
                note("%s: %s" % (who, "".join(traceback.format_exception_only(type(e), e)).strip()))
                if getattr(e, "pgcode", None) == "55000":
                    # the server refused the job's identity (a write, a prepare, a commit)
                    with self.job.lock:
                        self.job.refusals.append("attempt %d %s: %s" % (self.aid, who, describe(e)))
            self.fail(who, describe(e))

    # barrier ---------------------------------------------------------------
    def ack(self, s, n, pos):
        """ack records that subtask s prepared checkpoint n at position pos; the chaos agent may
        kill the job here, after the first subtask of a barrier."""
        with self.cond:
            if self.stopping():
                raise Stopped()
            if self.barrier == n:
                self.acks[s] = pos
                self.cond.notify_all()
                if len(self.acks) == 1 and self.job.take_kill_at("barrier") is not None:
                    note("checkpoint %d prepared by subtask %d only: the job is killed" % (n, s))
                    self.fail("chaos", "job killed mid-barrier: checkpoint %d prepared by subtask %d only" % (n, s))
                    raise Stopped()

    # a subtask -------------------------------------------------------------
    def subtask(self, s):
        """subtask is writer subtask s: from its restored position it writes its records in paced
        batches and, at a batch boundary after a barrier, calls prepare_commit and acknowledges
        the checkpoint."""
        job = self.job
        src = job.source
        rng = random.Random("%d-%d-s%d" % (job.seed, self.aid, s))
        # session pooling: a client connection per transaction (a pool smaller than the
        # subtasks serves them only so); otherwise one for the attempt
        per_txn = job.cfg.pooler == "session"
        conn = None
        sent = 0  # rows written since the last prepare: its expected_rows
        pos = self.start_positions[s]
        end = src.length[s]
        acked = None
        t_start = time.monotonic()
        while True:
            if self.stopping():
                raise Stopped()
            n = self.barrier
            if n is not None and n != acked:
                # the source position goes into the checkpoint: no store of the job's own;
                # expected_rows: what this subtask sent since its last prepare (a prepare that
                # seals another count is refused, nothing prepared); fence_epoch: this
                # attempt's (with --identity session the session's)
                conn = conn or self.connect("s%d" % s, "subtask")
                with conn.cursor() as cur:
                    cur.execute("SELECT count(*), coalesce(sum(row_count), 0) "
                                "FROM paimon_sink.prepare_commit(%s, %s, %s, %s, %s::jsonb, "
                                "fence_epoch => %s, expected_rows => %s)",
                                (SINK, JOB_ID, n, s, json.dumps({"pos-%d" % s: pos}),
                                 self.epoch if job.cfg.identity == "transaction" else None, sent))
                    cur.fetchall()
                sent = 0
                if per_txn:
                    self.release(conn)
                    conn = None
                self.ack(s, n, pos)
                acked = n
                continue
            if pos >= end:
                with self.cond:
                    self.cond.wait_for(lambda: self.stopping() or (self.barrier is not None and self.barrier != acked),
                                       timeout=0.2)
                continue
            gate = job.gate(s)
            if pos >= gate:
                # beyond this phase's share of the source: trickle
                wait = 0.25
            else:
                # paced: about one phase's share every PACE seconds
                wait = job.pace_wait(s, pos - self.start_positions[s], time.monotonic() - t_start)
            if wait > 0:
                with self.cond:
                    self.cond.wait_for(lambda: self.stopping() or (self.barrier is not None and self.barrier != acked),
                                       timeout=wait)
                if self.stopping() or (self.barrier is not None and self.barrier != acked):
                    continue
            if pos >= gate:
                b = rng.randint(1, 10)
            else:
                b = min(rng.randint(50, 200), gate - pos)
            b = min(b, end - pos)
            conn = conn or self.connect("s%d" % s, "subtask")
            with conn.cursor() as cur:
                advanced = self.write_batch(cur, rng, s, pos, b)
            if per_txn:
                self.release(conn)
                conn = None
            if advanced:
                pos += b
                sent += b
                self.positions[s] = pos
                job.records_written += b

    def begin(self, cur, s):
        """begin opens subtask s's transaction block; with --identity transaction its first
        statement names the job's identity: write_as(sink, job, s, the attempt's epoch)."""
        cur.execute("BEGIN")
        if self.job.cfg.identity == "transaction":
            cur.execute("SELECT paimon_sink.write_as(%s, %s, %s, %s)", (SINK, JOB_ID, s, self.epoch))

    def write_batch(self, cur, rng, s, pos, b):
        """Write records pos..pos+b-1 of subtask s in one transaction; False
        when the transaction was rolled back on purpose.  With --identity
        transaction every one is a transaction block opened by begin (its
        identity first); with --identity session the single statements run
        in autocommit under the session's settings."""
        src = self.job.source
        ids = [src.record(s, k) for k in range(pos, pos + b)]
        rows = [(i, i % 4, payload(i)) for i in ids]
        cols = "INSERT INTO %s (id, subtask, payload) " % SINK
        method = rng.choices(["values", "copy", "series", "multi", "savepoint", "rollback"],
                             weights=[30, 25, 20, 12, 8, 5])[0]
        self.job.methods[method] = self.job.methods.get(method, 0) + 1
        block = self.job.cfg.identity == "transaction"
        if method in ("values", "copy", "series") and block:
            self.begin(cur, s)
        if method == "values":
            psycopg2.extras.execute_values(cur, cols + "VALUES %s", rows, page_size=len(rows) + 1)
        elif method == "copy":
            buf = io.StringIO("".join("%d\t%d\t%s\n" % r for r in rows))
            cur.copy_expert("COPY %s (id, subtask, payload) FROM STDIN" % SINK, buf)
        elif method == "series":
            cur.execute(cols + "SELECT g, (g %% 4)::int, 'r' || g || ':' || md5(g::text) "
                        "FROM generate_series(%s::bigint, %s::bigint, 4) g", (ids[0], ids[-1]))
        elif method == "multi":
            self.begin(cur, s)
            cut = sorted(rng.sample(range(1, b), min(2, b - 1))) if b > 1 else []
            parts = [rows[a:z] for a, z in zip([0] + cut, cut + [b])]
            for part in parts:
                psycopg2.extras.execute_values(cur, cols + "VALUES %s", part, page_size=len(part) + 1)
            cur.execute("COMMIT")
        elif method == "savepoint":
            half = b // 2
            self.begin(cur, s)
            if half:
                psycopg2.extras.execute_values(cur, cols + "VALUES %s", rows[:half], page_size=half + 1)
            cur.execute("SAVEPOINT sp")
            psycopg2.extras.execute_values(cur, cols + "VALUES %s", rows[half:], page_size=b + 1)
            cur.execute("ROLLBACK TO SAVEPOINT sp")
            psycopg2.extras.execute_values(cur, cols + "VALUES %s", rows[half:], page_size=b + 1)
            cur.execute("COMMIT")
        else:  # rollback: the rows must never appear; the source re-reads them
            self.begin(cur, s)
            psycopg2.extras.execute_values(cur, cols + "VALUES %s", rows, page_size=b + 1)
            cur.execute("ROLLBACK")
            return False
        if method in ("values", "copy", "series") and block:
            cur.execute("COMMIT")
        return True

    # the checkpoint coordinator and single committer ----------------------------
    def next_checkpoint_id(self):
        """next_checkpoint_id is the next checkpoint to trigger: after a restore either M+1 (policy
        continue) or beyond every id used so far (policy counter)."""
        job = self.job
        if self.last_triggered == self.restored_id and self.policy == "counter":
            n = job.ckpt_counter + 1
        else:
            n = self.last_triggered + 1
        job.ckpt_counter = max(job.ckpt_counter, n)
        return n

    def coordinator(self):
        """coordinator is the checkpoint coordinator and single committer: it triggers a checkpoint
        every 200-500 ms, waits for every subtask's ack, then calls commit(), which commits the
        subtasks' positions with the rows; the final checkpoint completes the attempt."""
        job = self.job
        rng = random.Random("%d-%d-coordinator" % (job.seed, self.aid))
        conn = self.connect("committer", "committer")
        cur = conn.cursor()
        while True:
            interval = rng.uniform(0.2, 0.5)
            with self.cond:
                self.cond.wait_for(self.stopping, timeout=interval)
                if self.stopping():
                    raise Stopped()
                n = self.next_checkpoint_id()
                self.last_triggered = n
                self.barrier = n
                self.acks = {}
                t_trigger = time.monotonic()
                self.cond.notify_all()
                ok = self.cond.wait_for(lambda: self.stopping() or len(self.acks) == SUBTASKS, timeout=30)
                if self.stopping():
                    raise Stopped()
                if not ok:
                    raise Exception("checkpoint %d not complete within 30 s (acks from %s)"
                                    % (n, sorted(self.acks)))
                positions = [self.acks[s] for s in range(SUBTASKS)]
                if job.take_kill_at("complete") is not None:
                    self.fail("chaos", "job killed before commit(%d) (all subtasks prepared)" % n)
                    raise Stopped()
                self.barrier = None
                self.last_completed = n
                job.checkpoints_completed += 1
                job.last_progress = time.monotonic()
            t_prepared = time.monotonic()
            lost = job.take_kill_at("commit")
            if lost is not None:
                note("commit(%d): the job will be killed %.0f ms after sending it" % (n, lost * 1000))
                threading.Timer(lost, self.fail, args=("chaos", "commit reply lost: job killed during commit(%d)" % n)).start()
            cur.execute("SELECT count(*) FILTER (WHERE newly_committed), coalesce(sum(row_count) "
                        "FILTER (WHERE newly_committed), 0) FROM paimon_sink.commit(%s, %s, %s, fence_epoch => %s)",
                        (SINK, JOB_ID, n, self.epoch if job.cfg.identity == "transaction" else None))
            made, rows = cur.fetchone()
            t_done = time.monotonic()
            self.last_committed = n
            job.commits += 1
            job.commit_ms.append((t_done - t_prepared) * 1000)
            if job.verbose:
                note("checkpoint %d: positions %s, barrier %.0f ms, commit %.0f ms, %d snapshot(s), %d rows"
                     % (n, positions, (t_prepared - t_trigger) * 1000, (t_done - t_prepared) * 1000, made, rows))
            if not job.chaos_on and all(positions[s] >= job.source.length[s] for s in range(SUBTASKS)):
                job.final_checkpoint = n
                self.complete()
                raise Stopped()


# ----------------------------------------------------------------------------
# The job: attempts, failovers, the chaos agent
# ----------------------------------------------------------------------------

class Job:
    """The job: its source, attempts and failovers, the chaos agent and the
    counters the report prints."""

    def __init__(self, cfg, h, db):
        """__init__ sets the job up from the configuration."""
        self.cfg = cfg
        self.h = h
        self.db = db
        self.seed = cfg.seed
        self.verbose = cfg.verbose
        self.source = Source(cfg.records)
        self.lock = threading.Lock()
        self.failovers = 0
        self.failure_log = []
        self.pending_cause = None
        self.chaos_on = cfg.failures > 0
        self.chaos_stop = threading.Event()
        self.ckpt_counter = 0
        self.kill_at = None  # (moment, arg): see take_kill_at
        self.attempt = None
        self.aid = 0
        self.rng = random.Random(cfg.seed)
        self.policy_rng = random.Random("%d-policy" % cfg.seed)
        self.records_written = 0
        self.checkpoints_completed = 0
        self.commits = 0
        self.commit_ms = []
        self.methods = {}
        self.final_checkpoint = None
        self.last_progress = time.monotonic()
        self.chaos_actions = []
        self.no_effect = 0
        self.recover_totals = [0, 0, 0]
        self.replayed = 0
        self.zombies_seen = 0
        self.anomalies = []
        self.last_zombies = []
        self.refusals = []  # 55000 errors of the job's calls
        self.epoch = None
        self.pooler = None  # a harness Pooler with --pooler session|transaction

    def open(self, role, app):
        """open opens a connection named app for role: subtask (statement timeout 20 s),
        committer (6 s, so that a hanging commit fails the attempt) or restart (180 s).  Direct,
        or through the pooler as the role of that name (job_<role>), whose ALTER ROLE ... SET
        statement_timeout gives the timeout (a pooler passes no startup options)."""
        if self.pooler is not None:
            return self.pooler.server(user="job_" + role).connect(app)
        return self.db.connect(app, statement_timeout_ms=ROLE_TIMEOUT_MS[role])

    def gate(self, s):
        """gate is how far subtask s may write before the next failure: an equal share of its
        records per phase between failures (everything when there is no chaos)."""
        if not self.chaos_on:
            return self.source.length[s]
        f = self.cfg.failures
        return self.source.length[s] * (min(self.failovers, f) + 1) // (f + 1)

    def pace_wait(self, s, written, elapsed):
        """Seconds to wait before the next batch so that a subtask writes about
        one phase's share of its records (length / (failures + 1)) per PACE
        seconds: writing goes on at a steady rate between failures."""
        if not self.chaos_on:
            return 0
        rate = self.source.length[s] / (self.cfg.failures + 1) / PACE
        ahead = written - 100 - rate * elapsed
        return ahead / rate if ahead > 0 else 0

    def take_kill_at(self, moment):
        """A job-side failure the chaos agent asked for at a moment of the
        checkpoint protocol: 'barrier' (after the first subtask prepared),
        'complete' (all prepared, before commit is sent), 'commit' (the
        value: seconds after sending commit)."""
        with self.lock:
            if self.kill_at is None or self.kill_at[0] != moment:
                return None
            k, self.kill_at = self.kill_at, None
            return k[1]

    def policy(self):
        """policy is the checkpoint id policy of the next attempt: the one configured, or
        continue/counter drawn from the seed (mixed)."""
        if self.cfg.ckpt_ids in ("continue", "counter"):
            return self.cfg.ckpt_ids
        return self.policy_rng.choice(["continue", "counter"])

    # ----- attempts -------------------------------------------------------------
    def start_attempt(self, restored_id, positions, policy):
        """start_attempt starts a new attempt from restored_id at positions, in the fence epoch
        of the last restart_job()."""
        self.aid += 1
        a = Attempt(self, self.aid, restored_id, positions, policy, self.epoch)
        self.attempt = a
        a.start()
        return a

    def restore(self, failed):
        """Restart the job after the failed attempt with one call, restart_job(): it waits for the
        server's workers, restores the job to its last committed checkpoint M and returns M with
        its properties, the positions to replay from; then start an attempt there.  The server
        may still be coming back from a crash: a refused connection is tried again."""
        t0 = time.monotonic()
        if self.cfg.fence:
            self.wait_old_sessions(30)
        zombies = self.old_sessions()
        if zombies:
            self.zombies_seen += 1
            note("sessions of earlier attempts still alive before restart_job(): %s" % zombies)
        self.last_zombies = zombies
        result, tries = self.restart_job()
        m, props = result[0], result[1] or {}
        positions = [int(props.get("pos-%d" % s, 0)) for s in range(SUBTASKS)]
        if m > 0 and len(props) != SUBTASKS:
            self.anomalies.append("checkpoint %d has properties %s, not one position per subtask" % (m, props))
            log("ANOMALY: checkpoint %d has properties %s" % (m, props))
        if failed.last_committed is not None and m < failed.last_committed:
            self.anomalies.append("restart_job() returned checkpoint %d below the committed %d"
                                  % (m, failed.last_committed))
            log("ANOMALY: restart_job() returned checkpoint %d below the committed %d" % (m, failed.last_committed))
        for k in range(3):
            self.recover_totals[k] += result[k + 2]
        policy = self.policy()
        self.start_attempt(m, positions, policy)
        return m, positions, (m,) + tuple(result[2:]), tries, policy, time.monotonic() - t0

    def restart_job(self):
        """restart_job calls restart_job(sink, job, 120000) (through the pooler with one) until the
        server answers and returns its row (checkpoint_id, properties, recommitted, discarded
        checkpoints, discarded files, fence_epoch) and the tries it took; the fence epoch
        becomes the next attempt's.  The server may still be coming back from a crash: a
        refused connection is tried again, 60 times at most."""
        tries = 0
        while True:
            tries += 1
            conn = None
            try:
                conn = self.open("restart", "job-a%d-restart" % (self.aid + 1))
                with conn.cursor() as cur:
                    cur.execute("SELECT checkpoint_id, properties, recommitted_checkpoints, "
                                "discarded_checkpoints, discarded_files, fence_epoch "
                                "FROM paimon_sink.restart_job(%s, %s, 120000)", (SINK, JOB_ID))
                    result = cur.fetchone()
                self.epoch = result[5]
                if self.pooler is not None:
                    self.pools_ready(30)
                return result, tries
            except Exception as e:
                d = describe(e)
                if getattr(e, "pgcode", None) == "22023":
                    raise Abort("restart_job(%s, %s) refused: %s" % (SINK, JOB_ID, d))
                note("restart_job() try %d failed: %s" % (tries, d))
                if tries >= 60:
                    raise Abort("restart_job() failed %d times, last: %s" % (tries, d))
                time.sleep(1)
            finally:
                close_quietly(conn)

    def pools_ready(self, seconds):
        """pools_ready waits (up to seconds) until the pooler's pools of the subtasks and the
        committer serve a query, as an orchestrator's health check would before it starts the
        attempt: after a server crash-restart PgBouncer refuses a pool's clients for its
        server_login_retry once a login failed, and an attempt started then fails at once,
        one restart after the other.  Raises Abort when they do not."""
        deadline = time.monotonic() + seconds
        for role in ("subtask", "committer"):
            while True:
                conn = None
                try:
                    conn = self.open(role, "job-ready")
                    with conn.cursor() as cur:
                        cur.execute("SELECT 1")
                    break
                except Exception as e:
                    if time.monotonic() > deadline:
                        raise Abort("the pooler's pool of job_%s did not serve within %d s: %s"
                                    % (role, seconds, describe(e)))
                    time.sleep(0.2)
                finally:
                    close_quietly(conn)

    def old_sessions(self):
        """old_sessions lists the server sessions of earlier attempts still alive ([] if the query
        fails)."""
        try:
            # through a pooler an idle server connection keeps the name of its last client
            return self.db.query("SELECT pid, application_name, state, left(query, 60) FROM pg_stat_activity "
                                 "WHERE application_name LIKE 'job-a%%' AND application_name NOT LIKE %s "
                                 "AND pid <> pg_backend_pid()" + (" AND state <> 'idle'" if self.pooler else ""),
                                 ("job-a%d-%%" % (self.aid + 1),),
                                 app="job-ctl", timeout_ms=5000)
        except Exception:
            return []

    def wait_old_sessions(self, seconds):
        """wait_old_sessions waits (up to seconds) until no session of an earlier attempt is left
        (JOB_FENCE)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.old_sessions():
                return
            time.sleep(0.05)

    # ----- chaos ----------------------------------------------------------------
    def chaos(self):
        """chaos is the chaos agent: at random moments it makes one failure of a kind drawn by
        weight (job kill, kill -9 of a backend, writer or committer, pg_terminate_backend, an
        injected fault, a failed, hanging or lost commit, a kill mid-barrier or before commit)
        until JOB_FAILURES happened."""
        admin = None
        rng = self.rng
        kinds = ["job_kill", "kill_client", "kill_writer", "kill_committer", "terminate",
                 "fault", "commit_fault", "commit_hang", "commit_lost", "barrier_kill", "store_kill"]
        weights = [12, 9, 8, 6, 5, 28, 10, 6, 7, 5, 4]
        tries = 0
        while not self.chaos_stop.is_set() and self.failovers < self.cfg.failures and tries < 6 * self.cfg.failures:
            # a random moment while the job runs
            start_failovers = self.failovers
            delay = rng.uniform(0.8, 3.0)
            kind = rng.choices(kinds, weights)[0]
            point = rng.choice(COMMITTER_POINTS if kind in ("commit_fault", "commit_hang") else FAULT_POINTS)
            action = "pause" if kind == "commit_hang" else rng.choice(FAULT_ACTIONS)
            pick = rng.random()
            lost_after = rng.uniform(0.0, 0.03)
            release_after = rng.uniform(0.3, 2.0)
            if self.chaos_stop.wait(delay):
                return
            if self.failovers != start_failovers:
                continue  # something else failed meanwhile: wait for the next run
            a = self.attempt
            if a.stopping():
                continue
            tries += 1
            cause = None
            try:
                # a fresh connection each time: the last one may have died in a crash
                close_quietly(admin)
                admin = None
                admin = self.db.connect("job-chaos", statement_timeout_ms=5000)
                cur = admin.cursor()
                if kind == "job_kill":
                    cause = "job kill (connections dropped, threads stopped)"
                    self.set_cause(cause, a)
                    a.fail("chaos", cause)
                elif kind in ("kill_client", "kill_writer", "kill_committer", "terminate"):
                    btype = {"kill_client": "client backend", "terminate": "client backend",
                             "kill_writer": "paimon_sink writer", "kill_committer": "paimon_sink committer"}[kind]
                    cur.execute("SELECT pid, application_name FROM pg_stat_activity WHERE backend_type = %s "
                                "AND pid <> pg_backend_pid() AND (%s <> 'client backend' OR "
                                "application_name LIKE 'job-a%%') ORDER BY pid", (btype, btype))
                    pids = cur.fetchall()
                    if not pids:
                        note("chaos: no %s to kill" % btype)
                        continue
                    pid, app = pids[int(pick * len(pids))]
                    who = "%s pid %d%s" % (btype, pid, (" (%s)" % app) if app else "")
                    if kind == "terminate":
                        cause = "pg_terminate_backend of %s" % who
                        self.set_cause(cause, a)
                        cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
                    else:
                        cause = "server crash: kill -9 of %s" % who
                        self.set_cause(cause, a)
                        os.kill(pid, signal.SIGKILL)
                elif kind == "commit_lost":
                    cause = "commit reply lost (job killed %.0f ms into commit)" % (lost_after * 1000)
                    self.set_cause(cause, a)
                    with self.lock:
                        self.kill_at = ("commit", lost_after)
                elif kind == "barrier_kill":
                    cause = "job kill mid-barrier (after the first subtask prepared)"
                    self.set_cause(cause, a)
                    with self.lock:
                        self.kill_at = ("barrier", 0)
                elif kind == "store_kill":
                    cause = "job kill after all subtasks prepared, before commit() was sent"
                    self.set_cause(cause, a)
                    with self.lock:
                        self.kill_at = ("complete", 0)
                else:
                    cause = "%s: inject_fault(%s, %s)" % ("commit hang" if kind == "commit_hang" else
                                                          "commit fault" if kind == "commit_fault" else "fault",
                                                          point, action)
                    self.set_cause(cause, a)
                    cur.execute("SELECT paimon_sink.inject_fault(%s, %s, 1)", (point, action))
                self.chaos_actions.append(kind)
                note("chaos: %s" % cause)
            except Exception as e:
                note("chaos: %s failed: %s" % (kind, describe(e)))
                close_quietly(admin)
                admin = None
                if cause is not None and kind != "terminate":
                    with self.lock:
                        if self.pending_cause is not None and self.pending_cause[0] == cause:
                            self.pending_cause = None
                tries -= 1
                continue
            # did it make the job fail?
            deadline = time.monotonic() + (12 if kind == "commit_hang" else 8)
            while time.monotonic() < deadline and self.failovers == start_failovers \
                    and not self.chaos_stop.is_set():
                time.sleep(0.05)
            if kind == "commit_hang" and not self.chaos_stop.is_set():
                # the commit timed out and the job failed over; its restart_job()
                # waits behind the paused committer: release it a bit later
                time.sleep(release_after)
                self.admin_quiet("SELECT paimon_sink.release_fault(%s)", (point,))
            if self.failovers == start_failovers and not self.chaos_stop.is_set():
                hits = self.admin_quiet("SELECT hits FROM paimon_sink.faults WHERE point = %s", (point,)) \
                    if kind in ("fault", "commit_fault", "commit_hang") else None
                self.admin_quiet("SELECT paimon_sink.clear_faults()")
                with self.lock:
                    still = self.pending_cause is not None and self.pending_cause[0] == cause
                    if still:
                        self.pending_cause = None
                    self.kill_at = None
                if still:
                    self.no_effect += 1
                    log("chaos: no failure from: %s%s" % (cause, (" (point hit %s time(s): absorbed by the sink)"
                                                                 % hits[0][0]) if hits and hits[0][0] else ""))
            # wait until the job runs again before the next one
            while not self.chaos_stop.is_set() and self.attempt is a and self.failovers != start_failovers:
                time.sleep(0.05)
            while not self.chaos_stop.is_set() and (self.attempt is a and a.stopping()):
                time.sleep(0.05)
        close_quietly(admin)
        if not self.chaos_stop.is_set() and self.failovers < self.cfg.failures:
            # gave up: let the job finish (it reports failures < wanted)
            log("chaos: giving up after %d actions, %d failures" % (tries, self.failovers))
            self.admin_quiet("SELECT paimon_sink.clear_faults()")
            self.chaos_on = False

    def set_cause(self, cause, a):
        """set_cause records what the chaos agent did, for the report of the failover it causes."""
        with self.lock:
            self.pending_cause = (cause, a.last_triggered, a.last_completed, time.monotonic())

    def admin_quiet(self, sql, args=None):
        """admin_quiet runs one statement of the chaos agent, tried 3 times; None if it failed."""
        for _ in range(3):
            try:
                return self.db.query(sql, args, app="job-chaos", timeout_ms=5000)
            except Exception:
                time.sleep(0.5)
        return None

    def stop_chaos(self, chaos_thread):
        """stop_chaos stops the chaos agent and clears every fault point once the server and the
        writers are back."""
        self.chaos_on = False
        self.chaos_stop.set()
        if chaos_thread is not None:
            chaos_thread.join(30)
        with self.lock:
            self.kill_at = None
        for _ in range(60):
            if self.db.wait_writers_ready(60, app="job-ready"):
                try:
                    self.db.query("SELECT paimon_sink.clear_faults()", app="job-chaos")
                    return
                except Exception:
                    pass
            time.sleep(0.5)
        raise Abort("could not clear the fault points")

    # ----- the run --------------------------------------------------------------
    def run(self, deadline):
        """run runs the job until its final checkpoint is committed: it starts the first attempt and
        the chaos agent, and after each failure reports it and restores; it aborts at the
        deadline or when no checkpoint completed for 90 s."""
        # a job's start is a restart from nothing: restart_job() makes the commit user a job's and
        # hands the first attempt its fence epoch
        result, _ = self.restart_job()
        if result[0] != 0:
            raise Abort("restart_job() of a new job returned checkpoint %s, not 0" % result[0])
        a = self.start_attempt(0, [0] * SUBTASKS, self.policy())
        log("job %s started: %d subtasks, %d records (%s per subtask), checkpoint ids %s, fence epoch %d, "
            "identity per %s, %s"
            % (JOB_ID, SUBTASKS, self.source.n, "/".join(map(str, self.source.length)), a.policy, a.epoch,
               self.cfg.identity, "direct connections" if self.pooler is None else
               "through PgBouncer (pool_mode %s, %d server connections per pool)"
               % (self.pooler.mode, self.pooler.pool_size)))
        chaos_thread = None
        if self.chaos_on:
            chaos_thread = threading.Thread(target=self.chaos, name="chaos", daemon=True)
            chaos_thread.start()
        while True:
            while not a.done.wait(0.5):
                now = time.monotonic()
                if now > deadline:
                    raise Abort("the job did not finish within %d s (hang?)" % self.cfg.timeout)
                if now - self.last_progress > 90 and now - a.started > 90:
                    raise Abort("no checkpoint completed for 90 s (hang?)")
            if a.completed:
                a.join()
                return
            # ---- a failover
            who, msg, t_fail = a.failed
            if self.cfg.expect_refused and self.refusals:
                # refused as it must be: the job stops (a connector fails the job here)
                a.join()
                return
            with self.lock:
                pc, self.pending_cause = self.pending_cause, None
                self.kill_at = None
            self.failovers += 1
            k = self.failovers
            stuck = a.join()
            if stuck:
                note("threads still busy after the failure: %s" % stuck)
            lost = sum(a.positions[s] - a.start_positions[s] for s in range(SUBTASKS))
            if pc is not None:
                cause = pc[0]
            else:
                cause = "SPONTANEOUS (no failure injected)"
                self.anomalies.append("failover %d without injected failure: %s: %s" % (k, who, msg))
            at = "at checkpoint %d (last completed %d, last committed %s)" % (
                a.last_triggered, a.last_completed, a.last_committed if a.last_committed is not None else "-")
            if self.chaos_on and self.failovers >= self.cfg.failures:
                self.stop_chaos(chaos_thread)
                chaos_thread = None
                note("failures done: chaos stopped, fault points cleared")
            m, positions, r, tries, policy, dt = self.restore(a)
            self.replayed += sum(a.positions[s] - positions[s] for s in range(SUBTASKS))
            rec = {"n": k, "cause": cause, "first_error": "%s: %s" % (who, msg), "at": a.last_triggered,
                   "completed": a.last_completed, "restored": m, "positions": list(positions),
                   "failed_positions": list(a.positions),
                   "recover": list(r), "policy": policy, "zombies": self.last_zombies,
                   "downtime": time.monotonic() - t_fail}
            self.failure_log.append(rec)
            log("failure %d: %s" % (k, cause))
            log("    %s; %d records written since the restore; first error: %s: %s"
                % (at, lost, who, msg[:150]))
            log("    restored from checkpoint %d (positions %s): restart_job -> committed up to %d, "
                "re-committed %d, discarded %d checkpoint(s) / %d file(s), fence epoch %d%s; next ids: %s; "
                "back after %.1f s"
                % (m, "/".join(map(str, positions)), r[0], r[1], r[2], r[3], r[4],
                   (", %d tries" % tries) if tries > 1 else "", policy, time.monotonic() - t_fail))
            for z in self.last_zombies:
                log("    session of a failed attempt still running when restart_job() was called: pid %d %s %s: %s"
                    % (z[0], z[1], z[2], " ".join(str(z[3]).split())))
            a = self.attempt


# ----------------------------------------------------------------------------
# Setup, verification, main
# ----------------------------------------------------------------------------

def parse_args():
    """parse_args reads the options and their JOB_* defaults; the seed and, when not given, the
    bucket count are drawn."""
    env = os.environ
    p = argparse.ArgumentParser(prog="job", description="paimon_sink stream job with failovers (exactly-once check)")
    p.add_argument("--records", type=int, default=int(env.get("JOB_RECORDS", "200000")))
    p.add_argument("--failures", type=int, default=int(env.get("JOB_FAILURES", "24")))
    p.add_argument("--seed", type=int, default=int(env["JOB_SEED"]) if env.get("JOB_SEED") else None)
    p.add_argument("--skip-build", action="store_true", default=env.get("JOB_SKIP_BUILD") == "1")
    p.add_argument("--tamper", action="store_true", default=env.get("JOB_TAMPER") == "1")
    p.add_argument("--ckpt-ids", choices=["mixed", "continue", "counter"], default=env.get("JOB_CKPT_IDS", "mixed"))
    p.add_argument("--buckets", type=int, choices=[1, 4], default=int(env["JOB_BUCKETS"]) if env.get("JOB_BUCKETS") else None)
    p.add_argument("--fence", action="store_true", default=env.get("JOB_FENCE") == "1")
    p.add_argument("--timeout", type=int, default=int(env.get("JOB_TIMEOUT", "480")))
    p.add_argument("--verbose", action="store_true", default=env.get("JOB_VERBOSE") == "1")
    p.add_argument("--pooler", choices=["none", "session", "transaction"], default=env.get("JOB_POOLER", "none"))
    p.add_argument("--pool-size", type=int, default=int(env.get("JOB_POOL_SIZE", "2")))
    p.add_argument("--identity", choices=["transaction", "session"], default=env.get("JOB_IDENTITY", "transaction"))
    p.add_argument("--expect-refused", action="store_true", default=env.get("JOB_EXPECT_REFUSED") == "1")
    cfg = p.parse_args()
    if cfg.seed is None:
        cfg.seed = random.SystemRandom().randrange(1, 1 << 31)
    if cfg.buckets is None:
        cfg.buckets = random.Random("%d-buckets" % cfg.seed).choice([1, 4])
    if cfg.records < SUBTASKS:
        p.error("--records must be at least %d" % SUBTASKS)
    return cfg


def setup(cfg, h):
    """setup installs what is missing, makes the temp dir and the job log,
    builds and installs the extension (unless --skip-build), starts the
    cluster and creates the target, its load trigger and the sink; it
    returns the Server to talk to."""
    h.sh("ps_ensure_packages")
    h.create_workdir()
    os.makedirs(os.path.join(h.work, "job"), exist_ok=True)
    RUN.open(os.path.join(h.work, "logs", "job.log"))
    if cfg.skip_build:
        log("build: skipped (JOB_SKIP_BUILD=1), using the installed extension")
    else:
        log("build: make COPT=-Werror && make install (in a copy of %s)" % ROOT)
        rc = h.build_install(os.path.join(h.work, "logs", "build.log"))
        if rc != 0:
            with open(os.path.join(h.work, "logs", "build.log")) as f:
                print("".join(f.readlines()[-40:]))
            raise Abort("build or make install failed")
    h.create("\n# ---- test/job ----\nmax_connections = 50\nrestart_after_crash = on\n"
             "log_min_messages = log\nlog_line_prefix = '%m [%p] %a '\n")
    h.start()
    db = h.server(default_app="job-ctl")
    log("cluster: running as OS user %s, socket %s port %d, log %s" % (db.user, h.sockdir, h.port, h.server_log))
    bucket_args = ", buckets => 4, bucket_key => '{id}'" if cfg.buckets == 4 else ""
    conn = db.connect("job-setup")
    with conn.cursor() as cur:
        cur.execute("CREATE EXTENSION paimon_sink")
        # no primary key: duplicates must be visible.  write_xid: the job
        # session's transaction (the foreign table's default); load_xid: the
        # committer's transaction (a trigger), for diagnosis.
        cur.execute("""
            CREATE TABLE %s (
                id bigint NOT NULL,
                subtask int NOT NULL,
                payload text NOT NULL,
                write_xid xid8 DEFAULT pg_current_xact_id(),
                load_xid xid8
            )""" % TARGET)
        cur.execute("""
            CREATE FUNCTION job_target_load() RETURNS trigger LANGUAGE plpgsql AS
            $$BEGIN NEW.load_xid := pg_current_xact_id(); RETURN NEW; END$$""")
        cur.execute("CREATE TRIGGER job_target_load BEFORE INSERT ON %s FOR EACH ROW "
                    "EXECUTE FUNCTION job_target_load()" % TARGET)
        cur.execute("SELECT * FROM paimon_sink.create_sink('%s', '%s'%s)" % (SINK, TARGET, bucket_args))
        if cfg.pooler != "none":
            # through a pooler the statement timeouts come from the roles (Job.open)
            for role, ms in sorted(ROLE_TIMEOUT_MS.items()):
                cur.execute("CREATE ROLE job_%s LOGIN SUPERUSER" % role)
                cur.execute("ALTER ROLE job_%s SET statement_timeout = %d" % (role, ms))
    conn.close()
    if not db.wait_writers_ready(60, app="job-ready"):
        raise Abort("the sink's writers did not start")
    log("sink %s on %s (no primary key), buckets %s; writers ready"
        % (SINK, TARGET, "4 by hash of id" if cfg.buckets == 4 else "1 (one per session)"))
    return db


def start_pooler(cfg, h):
    """start_pooler starts PgBouncer in front of the cluster (--pooler session|transaction,
    --pool-size server connections per pool, the job's roles as its users) in $PS_WORK/pooler
    and returns it."""
    p = Pooler(os.path.join(h.work, "pooler"), h.sockdir, h.port, cfg.pooler, cfg.pool_size,
               ["job_%s" % r for r in sorted(ROLE_TIMEOUT_MS)], os.path.join(h.work, "logs", "pgbouncer.log"))
    p.start()
    log("pooler: PgBouncer, pool_mode %s, default_pool_size %d, socket %s port %d, log %s"
        % (p.mode, p.pool_size, p.folder, p.port, p.log_path))
    return p


def pooler_report(job):
    """pooler_report logs what PgBouncer's pools of the job saw (SHOW POOLS: server connections
    now, the longest wait of a client) and its transactions (SHOW STATS); it returns the
    problems: a pool that held more server connections than its size."""
    problems = []
    try:
        for pool in job.pooler.pools():
            if not str(pool.get("user", "")).startswith("job_"):
                continue
            sv = sum(int(pool.get(k, 0)) for k in ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"))
            log("    pool %s/%s: %d server connection(s), clients active %s waiting %s, maxwait %s s"
                % (pool["database"], pool["user"], sv, pool["cl_active"], pool["cl_waiting"], pool["maxwait"]))
            if sv > job.pooler.pool_size:
                problems.append("pool %s holds %d server connections, above its size %d"
                                % (pool["user"], sv, job.pooler.pool_size))
        names, rows = job.pooler.query("SHOW STATS")
        for r in rows:
            st = dict(zip(names, r))
            if st["database"] == "postgres":
                log("    pooler: %s transactions, %s queries through PgBouncer"
                    % (st["total_xact_count"], st["total_query_count"]))
    except Exception as e:
        log("    pooler: SHOW POOLS/STATS failed: %s" % describe(e))
    return problems


def verify_refused(cfg, db, job, res):
    """verify_refused checks a run that must be refused (--expect-refused): a 55000 of the
    job's calls was seen (the job identity the session set did not reach the server intact),
    and the target holds no row twice; missing is not measured (the job stopped)."""
    rows, distinct = db.query("SELECT count(*), count(DISTINCT id) FROM %s" % TARGET)[0]
    res.update(duplicated=rows - distinct)
    log("verify: %d refusal(s) with 55000; target rows %d, duplicated %d"
        % (len(job.refusals), rows, rows - distinct))
    for r in job.refusals[:8]:
        log("    refused: %s" % r[:300])
    problems = []
    if not job.refusals:
        problems.append("the job was never refused (55000): its rows were taken as they came")
    if rows != distinct:
        problems.append("%d duplicate row(s)" % (rows - distinct))
    return problems


def verify(cfg, h, db, job, res):
    """verify checks the target against the source after the job (every record once, right payloads,
    snapshot rows, last committed checkpoint, nothing left behind), logs the figures, puts
    missing and duplicated into res and returns the problems found."""
    n = cfg.records
    if cfg.tamper:
        log("JOB_TAMPER=1: deleting one target row before verifying")
        db.query("DELETE FROM %s WHERE ctid = (SELECT ctid FROM %s ORDER BY id LIMIT 1)" % (TARGET, TARGET))
    q = db.query("""
        SELECT (SELECT count(*) FROM %(t)s),
               (SELECT count(DISTINCT id) FROM %(t)s),
               (SELECT count(*) FROM generate_series(1, %(n)s::bigint) g
                 WHERE NOT EXISTS (SELECT 1 FROM %(t)s t WHERE t.id = g)),
               (SELECT count(*) FROM %(t)s WHERE id < 1 OR id > %(n)s),
               (SELECT count(*) FROM %(t)s WHERE payload <> 'r' || id || ':' || md5(id::text)
                   OR subtask <> id %% 4),
               (SELECT count(*) FROM (SELECT id FROM %(t)s GROUP BY id HAVING count(*) > 1) d),
               (SELECT coalesce(sum(row_count), 0) FROM paimon_sink.snapshots
                 WHERE sink_name = '%(s)s' AND commit_user = '%(j)s'),
               (SELECT count(*) FROM paimon_sink.snapshots WHERE sink_name = '%(s)s' AND commit_user = '%(j)s'),
               (SELECT count(*) FROM (SELECT commit_identifier FROM paimon_sink.snapshots
                 WHERE sink_name = '%(s)s' GROUP BY commit_user, commit_identifier HAVING count(*) > 1) d),
               (SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%%'),
               (SELECT count(*) FROM paimon_sink.pending_checkpoints),
               paimon_sink.last_committed_checkpoint('%(s)s', '%(j)s'),
               (SELECT properties FROM paimon_sink.last_commit('%(s)s', '%(j)s'))
        """ % {"t": TARGET, "n": n, "s": SINK, "j": JOB_ID}, timeout_ms=300000)[0]
    rows, distinct, missing, phantom, bad, dup_ids, snap_rows, snaps, dup_snap, prepared, pending, lcc, props = q
    res.update(missing=missing, duplicated=rows - distinct)
    files = stage_files(h.datadir)
    for _ in range(50):
        if not files:
            break
        time.sleep(0.1)
        files = stage_files(h.datadir)
    ends = {"pos-%d" % s: job.source.length[s] for s in range(SUBTASKS)}
    log("verify: target rows %d, distinct ids %d, expected %d" % (rows, distinct, n))
    log("        missing %d, duplicated %d (%d ids more than once), outside 1..N %d, wrong payload %d"
        % (missing, rows - distinct, dup_ids, phantom, bad))
    log("        snapshots of %s: %d with %d rows in all (target holds %d); identifiers committed twice: %d"
        % (JOB_ID, snaps, snap_rows, rows, dup_snap))
    log("        last_committed_checkpoint %s, final checkpoint %s, its properties %s"
        % (lcc, job.final_checkpoint, json.dumps(props, sort_keys=True)))
    log("        left behind: prepared transactions %d, pending checkpoints %d, staged files %d"
        % (prepared, pending, len(files)))
    problems = []
    if missing:
        problems.append("%d record(s) missing" % missing)
    if rows != distinct:
        problems.append("%d duplicate row(s)" % (rows - distinct))
    if phantom or bad:
        problems.append("%d row(s) outside 1..N, %d with a wrong payload" % (phantom, bad))
    if snap_rows != rows:
        problems.append("snapshot row counts (%d) differ from the target (%d)" % (snap_rows, rows))
    if dup_snap:
        problems.append("%d identifier(s) committed twice" % dup_snap)
    if lcc != job.final_checkpoint:
        problems.append("last_committed_checkpoint %s is not the final checkpoint %s"
                        % (lcc, job.final_checkpoint))
    if props != ends:
        problems.append("the last commit's properties %s are not the source's ends %s"
                        % (json.dumps(props, sort_keys=True), json.dumps(ends, sort_keys=True)))
    if prepared or pending or files:
        problems.append("left behind: %d prepared transaction(s), %d pending checkpoint(s), %d staged file(s)"
                        % (prepared, pending, len(files)))
        for f in files[:10]:
            note("staged file left: %s (%d bytes)" % (f, os.path.getsize(f)))
    if missing or rows != distinct:
        details(db, job)
    return problems


def ranges(src, ids):
    """Group ids into runs of consecutive records of one subtask:
    [(subtask, first k, last k, first id, last id)]."""
    out = []
    for i in sorted(ids):
        s = i % 4
        k = (i - src.first[s]) // 4
        for r in out:
            if r[0] == s and r[2] + 1 == k:
                r[2] = k
                r[4] = i
                break
        else:
            out.append([s, k, k, i, i])
    return out


def details(db, job):
    """Which records are missing or doubled, by which transactions, and
    which failure they follow."""
    src = job.source
    try:
        dup = db.query("SELECT id, count(*), array_agg(DISTINCT write_xid::text), array_agg(DISTINCT load_xid::text) "
                       "FROM %s GROUP BY id HAVING count(*) > 1 ORDER BY id" % TARGET)
        miss = db.query("SELECT g FROM generate_series(1, %d::bigint) g WHERE NOT EXISTS "
                        "(SELECT 1 FROM %s t WHERE t.id = g) ORDER BY g LIMIT 100000" % (src.n, TARGET))
        for label, ids, extra in [("duplicated", [r[0] for r in dup], {r[0]: r for r in dup}),
                                  ("missing", [r[0] for r in miss], {})]:
            for s, k1, k2, i1, i2 in ranges(src, ids)[:20]:
                xids = ""
                if extra:
                    w = sorted({x for i in range(i1, i2 + 1, 4) if i in extra for x in extra[i][2]})
                    l = sorted({x for i in range(i1, i2 + 1, 4) if i in extra for x in extra[i][3]})
                    xids = "; written by transactions %s, loaded by %s" % (",".join(w), ",".join(l))
                log("        %s: subtask %d records %d..%d (ids %d..%d, %d rows)%s"
                    % (label, s, k1, k2, i1, i2, k2 - k1 + 1, xids))
                for f in job.failure_log:
                    # the batch a subtask had in flight starts at its position at the failure
                    if f["failed_positions"][s] == k1:
                        what = "the batch subtask %d had in flight at failure %d" % (s, f["n"])
                    elif f["positions"][s] == k1:
                        what = "the first records subtask %d replayed after failure %d" % (s, f["n"])
                    else:
                        continue
                    log("            = %s (%s; restored from %d)%s"
                        % (what, f["cause"], f["restored"],
                           "; sessions of the failed attempt alive at restart_job(): %s"
                           % ", ".join("%d %s (%s)" % (z[0], z[1], z[2]) for z in f["zombies"]) if f["zombies"] else ""))
    except Exception as e:
        log("        (details failed: %s)" % describe(e))


def diagnose(h, db):
    """diagnose writes the sessions, writers, faults, pending and in-doubt checkpoints and last
    snapshots into the temp dir's logs/diagnosis."""
    write_diagnosis(h.work, db, "job-diagnose", SINK_DIAGNOSIS)


def main():
    """main runs the job: setup, the job, the report and the checks; it always cleans up and prints
    the last line job: records=N failures=N missing=N duplicated=N; returns the exit status."""
    cfg = parse_args()
    h = Cluster(CLUSTER, "job", Abort, os.environ.get("PS_WORK") or "")
    res = {"records": cfg.records, "failures": -1, "missing": -1, "duplicated": -1}
    rc = 1
    db = None
    job = None
    interrupt_on_signals()
    try:
        log("=== paimon_sink stream job: seed %d, %d records, %d failures, checkpoint ids %s, buckets %d%s, "
            "pooler %s, identity per %s%s"
            % (cfg.seed, cfg.records, cfg.failures, cfg.ckpt_ids, cfg.buckets, ", fenced restarts" if cfg.fence else "",
               cfg.pooler, cfg.identity, ", must be refused" if cfg.expect_refused else ""))
        log("    rerun: JOB_SEED=%d JOB_RECORDS=%d JOB_FAILURES=%d%s%s%s test/job%s"
            % (cfg.seed, cfg.records, cfg.failures, " JOB_CKPT_IDS=" + cfg.ckpt_ids if cfg.ckpt_ids != "mixed" else "",
               " JOB_BUCKETS=%d" % cfg.buckets if os.environ.get("JOB_BUCKETS") else "",
               " JOB_FENCE=1" if cfg.fence else "",
               "".join(" --%s %s" % (k, v) for k, v in (("pooler", cfg.pooler), ("identity", cfg.identity))
                       if v != {"pooler": "none", "identity": "transaction"}[k])
               + (" --pool-size %d" % cfg.pool_size if cfg.pool_size != 2 else "")
               + (" --expect-refused" if cfg.expect_refused else "")))
        db = setup(cfg, h)
        job = Job(cfg, h, db)
        if cfg.pooler != "none":
            job.pooler = start_pooler(cfg, h)
        t_job = time.monotonic()
        try:
            job.run(time.monotonic() + cfg.timeout)
        finally:
            res["failures"] = job.failovers
        if job.chaos_on:
            job.stop_chaos(None)
        if cfg.expect_refused and job.refusals:
            log("job refused after %.1f s (%d failure(s) before)" % (time.monotonic() - t_job, job.failovers))
            problems = verify_refused(cfg, db, job, res)
            if job.pooler is not None:
                problems += pooler_report(job)
            if problems:
                log("FAIL: " + "; ".join(problems))
                keep_logs(h.work, [h.server_log], "paimon_sink-job-logs.")
            else:
                log("PASS: the job was refused (55000), not silently misattributed")
            return 0 if not problems else 1
        log("job finished after %.1f s: final checkpoint %d committed" % (time.monotonic() - t_job, job.final_checkpoint))
        cm = sorted(job.commit_ms)
        log("    %d failures (%s), %d chaos action(s) without effect; %d attempts"
            % (job.failovers, ", ".join("%s %d" % (k, job.chaos_actions.count(k)) for k in sorted(set(job.chaos_actions))),
               job.no_effect, job.aid))
        log("    %d checkpoints completed, %d commits (commit p50 %.0f ms, max %.0f ms); %d records written, %d replayed"
            % (job.checkpoints_completed, job.commits, cm[len(cm) // 2] if cm else 0, cm[-1] if cm else 0,
               job.records_written, job.replayed))
        log("    restart_job(): %d checkpoint(s) re-committed, %d discarded, %d file(s) discarded; "
            "restarts with sessions of a failed attempt still alive: %d"
            % (job.recover_totals[0], job.recover_totals[1], job.recover_totals[2], job.zombies_seen))
        log("    batches: %s" % ", ".join("%s %d" % kv for kv in sorted(job.methods.items())))
        if job.pooler is not None:
            problems = pooler_report(job)
        else:
            problems = []
        problems += verify(cfg, h, db, job, res)
        if cfg.expect_refused:
            problems.append("the job was never refused (55000): its rows were taken as they came")
        if job.failovers < cfg.failures:
            problems.append("only %d of %d failures happened" % (job.failovers, cfg.failures))
        if job.anomalies:
            log("anomalies (reported, not failing the run):")
            for a in job.anomalies:
                log("    " + a)
        if problems:
            log("FAIL: " + "; ".join(problems))
            diagnose(h, db)
            keep_logs(h.work, [h.server_log], "paimon_sink-job-logs.")
            rc = 1
        else:
            log("PASS: every record exactly once, nothing left behind")
            rc = 0
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Abort as e:
        log("FAIL: %s" % e)
        if db is not None:
            diagnose(h, db)
        keep_logs(h.work, [h.server_log], "paimon_sink-job-logs.")
        rc = 1
    except Exception:
        log("FAIL: unexpected error:\n" + traceback.format_exc())
        if db is not None:
            diagnose(h, db)
        keep_logs(h.work, [h.server_log], "paimon_sink-job-logs.")
        rc = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if job is not None and job.attempt is not None:
            job.chaos_stop.set()
            job.attempt.fail("exit", "exit")
        if job is not None and job.pooler is not None:
            job.pooler.stop()
        h.cleanup()
        print("job: records=%d failures=%d missing=%d duplicated=%d"
              % (res["records"], res["failures"], res["missing"], res["duplicated"]), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
