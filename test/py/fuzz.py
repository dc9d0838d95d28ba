#!/usr/bin/python3
"""test/fuzz -- several sessions call every SQL function of paimon_sink with
edge arguments and write through every entry point, beside DDL on sinks,
targets and roles and now and then a kill, and after each round check
that no committed row was lost, doubled or invented, that nothing is left
in doubt, that no process died by a signal and that the sinks still work.

A run is rounds on one throwaway cluster (restart_after_crash = on), in a
database "fuzz".  Each round:

* Setup (as the superuser and two non-superuser sink owners): targets
  fz_ta (id primary key), fz_tb (no unique index: a row loaded twice
  shows) and fz_tu (primary key); append sinks fz_a (owner fz_owner, 2
  buckets) and fz_b (owner fz_owner2, 4 buckets on id), an upsert sink fz_u
  (fz_owner); a routing parent fz_router (owner fz_owner, LIST on part) with
  the sink's foreign table fz_a as its partition for part 1, an ordinary
  partition fz_router_plain for 0 and a default one; a writer role
  (fz_writer: INSERT on the foreign tables and the router) and a hostile
  role (fz_hostile: nothing).  A ledger table fz_ledger holds one row per
  row written, inserted by public.fz_record in the same transaction as the
  row: its unique id, the table the row must end in (a sink's target, or
  the ordinary partition), the sink and the commit user (the session's
  paimon_sink.commit_user, the sink's own when empty) it was written
  under, the transaction's start and the payload's md5.
* Load (--round-seconds, the last round shortened to --seconds): --sessions
  threads, each with a connection per role (superuser, fz_owner,
  fz_owner2, fz_writer, fz_hostile), in random order:
  - write transactions: INSERT of one row and of many, INSERT ... SELECT,
    COPY (text and csv), into a sink's foreign table and through the
    routing parent (both partitions), an UPDATE of the routing parent that
    moves rows from the ordinary partition into the sink's, 1-4
    statements, under a commit user and writer id of the session (the
    sink's own, jobs J1, J2, job-<n>, or settings the server refuses),
    naming the fence epoch of each (sink, commit user) as the catalog or
    restart_job() last showed it (now and then a stale one or none: a job's
    commit user refuses such writes, 55000, and a sink a job writes to
    refuses rows that name no commit user; a refused write rolls back its
    ledger rows with it) per transaction (write_as() on each sink, with the
    session's commit user, or the sink's own when it is empty, and writer
    id) or per session (paimon_sink.fence_epoch), ~15% rolled back,
    savepoints rolled back and released, payloads '', NULL, 10 kB,
    non-ASCII, ids unique for the run and the edge ids -1, 0, int32 and
    int64 limits once a round; rows the documentation says are refused when written (a NULL key, a bad row
    kind, ON CONFLICT through the foreign table and through the routing
    parent, with a committed id or a new one, a foreign table on the
    server paimon_sink that is no sink's) must be refused: one accepted is
    an invariant failure ("accepted");
  - calls of every SQL function of the extension (create_sink,
    drop_sink, create_sink_group, drop_sink_group, prepare_commit, commit,
    checkpoint, last_committed_checkpoint, last_commit, writer_status,
    commit_progress, checkpoint_schedule_status, in_doubt_status,
    fault_status, start_workers, recover, restart_job, end_input,
    remove_orphan_files, expire_snapshots, discard_missing_files,
    reject_failing_rows, library_version, inject_fault, release_fault,
    clear_faults, fdw_handler, fdw_validator, refuse_invalid_commit_user)
    and reads of every view, as a random role, half with plausible
    arguments (existing sinks and groups, the commit users written, the
    next checkpoint ids, the fence epochs) and half with edge values (NULL, '', 0, -1, -5,
    int32 and int64 limits, 10 kB, names of other roles' sinks, of dropped
    sinks, of groups, commit users of other jobs and other sinks, invalid
    commit users, jsonb that is no object, nested 500 deep or over 8 kB,
    bad modes, intervals and fault points), now and then inside a
    transaction block or a DO block that raises afterwards;
  - DDL: drop_sink and create_sink again, ALTER TABLE of a target (columns
    added: nullable, with a default, NOT NULL with a default, generated,
    identity; defaults, CHECK constraints that the rows meet, indexes,
    owner, storage parameters), DETACH and ATTACH of the sink partition,
    ALTER FOREIGN TABLE (rename, a column added), GRANT and REVOKE,
    ALTER ROLE (NOLOGIN, search_path, paimon_sink.commit_user), REASSIGN
    OWNED BY an owner TO the other (and DROP OWNED, DROP ROLE), the
    hostile role's PREPARE TRANSACTION under a paimon_sink: gid, and rarely
    DROP TABLE of a target;
  - a killer thread (unless --no-kills): in ~80% of the rounds one kill at
    a random moment, a SIGKILL to a backend of a session or to a worker of
    paimon_sink (committer, writer, loader, launcher), or pg_ctl stop -m
    immediate and a start.
* Recovery and drain (as the superuser, each call traced): the server and
  the writers back, faults cleared, the hostile role's prepared
  transactions rolled back, roles, grants and names repaired, groups
  dropped; then each sink whose target exists is drained with valid calls:
  commit() of its prepared checkpoints, checkpoint() for its own commit
  user, prepare_commit() and commit() of the next id for every other
  commit user with staged rows (the streams the WARNING of an empty
  prepare names), each naming its fence epoch.  A call that fails is an invariant failure ("drain").
* Checks (each failed check of a round is one invariant failure):
  - ledger: every ledger row in its table once with its payload (missing,
    doubled, phantom: a row of no ledger row, in the wrong table, or with
    another payload); a target row in paimon_sink.rejected_row is
    "rejected", not missing.  Exempt from "missing" only (never from doubled
    or phantom) are rows of a (sink, commit user) stream whose transaction
    began before an explicit discarding decision on it succeeded (or ended
    without an answer): recover() and restart_job() (a restore, which also
    fences the failed attempt), discard_missing_files() that forgot files,
    drop_sink(), and a prepare_commit() of an id from 1 up to the commit
    user's last committed one (the documented replay drop; an id at or below
    0 is not one), and rows whose table is gone (DROP TABLE);
  - in doubt: no prepared transaction with a paimon_sink: gid left 15 s
    after the drain;
  - probe: every sink with its target and foreign table takes a row under
    its own commit user (named: a sink a job writes to refuses rows that
    name none) and commits it (checkpoint()), the row then in the target;
  - the server log (and a sanitizer's log_path files named in
    PS_SERVER_ENV): a process that "was terminated by signal" other than
    one this program killed, a TRAP (failed Assert), "ERROR:
    AddressSanitizer", "runtime error:" count as worker crashes.
* Teardown: groups and sinks dropped (force), tables dropped, the ledger
  emptied; when a sink cannot be dropped, DROP EXTENSION ... CASCADE and
  CREATE EXTENSION again.

For each failure (the first three of each kind, and every loss of rows
from a sink whose drain did not fail) the run's log (logs/fuzz.log, kept
with the server log when the run fails) gets a reproduction: the seed and
round, and the calls of each session that named the sink or stream
concerned (for a crash, the calls on the backend that died and those in
flight when it happened, the committer's requests that lost their answer
first), as runnable SQL with the role, commit user and outcome.  A failed
run prints them at its end too (the first 400 lines), with each harness
error's traceback, or a failed ledger call's error and statements: a
suite's output is what test/check shows.  The server logs LOG, WARNING
and ERROR lines (a deadlock's cycle among them).

--scenario NAME (repeatable; "all" for each; "list" lists them) runs
instead of random sessions one directed sequence per round, with the same
checks, so that each known fault is shown found in seconds:
  prepare-zero          rows under commit user J, prepare_commit(s, 'J', 0)
  prepare-negative      rows under J, prepare_commit(s, 'J', -5)
  on-conflict-router    a committed id again through the routing parent
                        with ON CONFLICT DO NOTHING
  reassign-drop-role    the owner of a sink with a prepared checkpoint
                        reassigned, dropped owned, dropped
  add-column-not-null   ALTER TABLE target ADD COLUMN c text NOT NULL
                        DEFAULT 'x', then writes
  null-arguments        every function of the schema (from the catalog)
                        with each argument NULL in turn, and all NULL, as
                        the superuser and as a sink owner
  prepare-max           the sink's own commit user prepared at
                        9223372036854775807 (not by end_input), more rows,
                        then checkpoint()
  end-input-race        a transaction writing under commit user E commits
                        after end_input(s, 'E') ran in another session
  ledger-deadlock       a transaction writing through the routing parent
                        is chosen as a deadlock's victim in its ledger
                        call (another session holds the parent's other
                        partitions and waits for the parent, as REASSIGN
                        OWNED may): a refused write, no ledger failure
  target-changes        rows of the edge ids (-1, 0, int32 and int64
                        limits) staged into each sink, then every change
                        the fuzz makes to a target, on each, then
                        checkpoint(): staged rows must still load

Output: a line per round, a summary of the distinct failures, and as the
last line
    fuzz: rounds=N calls=N worker_crashes=N invariant_failures=N
(calls: statements and transactions the sessions ran).  Exit 0 only when
worker_crashes and invariant_failures are both 0; 1 otherwise; 2 when the
run could not go on (setup, a hang, a server that does not come back).

Usage: test/fuzz [--seconds N] [--seed N] [--sessions N] [--round-seconds N]
                 [--scenario NAME ...] [--no-kills] [--skip-build]
Environment: FUZZ_SECONDS (60), FUZZ_SEED (random; printed), FUZZ_SESSIONS
(4), FUZZ_ROUND_SECONDS (20), FUZZ_SKIP_BUILD=1, FUZZ_TAMPER=KIND (missing,
doubled, phantom, in_doubt or crash: before the checks of the first round,
delete a row of the ordinary partition, copy a target row, add one, prepare a transaction with a
paimon_sink: gid as the superuser, or write a crash line into the server
log; the run must report it and fail), PS_SERVER_ENV (VAR=value words
given to the server's start, e.g. a sanitizer runtime to preload: see
test/lib/cluster.sh), PS_PGBIN, KEEP_TMP=1.

As root it builds and installs the extension from a copy of the repo into
the PostgreSQL of PS_PGBIN (unless --skip-build); as another user (test/check
runs it as postgres) it uses what is installed.
"""
import argparse
import collections
import glob
import hashlib
import io
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

# the harness first: it installs psycopg2 when it is missing
from harness import (SINK_DIAGNOSIS, Cluster, RunLog, Server, close_quietly, describe, interrupt_on_signals,
                     keep_logs, pg_user, write_diagnosis)

import psycopg2
import psycopg2.extensions

DB = "fuzz"
SUPER = pg_user()
OWNER, OWNER2, WRITER, HOSTILE = "fz_owner", "fz_owner2", "fz_writer", "fz_hostile"
ROLES = [SUPER, OWNER, OWNER2, WRITER, HOSTILE]
OWNERS = [OWNER, OWNER2]
# the targets whose rows the ledger checks, and the ordinary partition
LEDGERED_TARGETS = ("fz_ta", "fz_tb", "fz_tu")
CHECKED_TABLES = LEDGERED_TARGETS + ("fz_router_plain",)
TABLES = CHECKED_TABLES + ("fz_scratch", "fz_router", "fz_router_other")
ID_ROUND = 10 ** 9      # id = round * ID_ROUND + session * ID_SESSION + n
ID_SESSION = 10 ** 7
PROBE_SESSION = 99
I32_MAX = 2 ** 31 - 1
I64_MAX, I64_MIN = 2 ** 63 - 1, -2 ** 63
EDGE_IDS = [-1, 0, I32_MAX, I32_MAX + 1, I64_MAX, I64_MIN]
CREATE_SINK_SIG = "text, regclass, text, integer, text[], interval, text, boolean, text, boolean, boolean, boolean"
FAULT_POINTS = ["writer_after_receive", "writer_after_ack", "writer_before_wal", "backend_after_handoff",
                "barrier_after_first_writer", "committer_before_prepare", "committer_between_group_members",
                "committer_after_prepare", "committer_after_removal_records", "committer_after_commit_prepared",
                "committer_maintenance"]
VIEWS = ["sinks", "snapshots", "pending_checkpoints", "commit_stats", "commit_progress", "in_doubt", "writers",
         "faults", "checkpoint_schedule", "rejects", "sink_groups"]
SCENARIOS = ["prepare-zero", "prepare-negative", "on-conflict-router", "reassign-drop-role",
             "add-column-not-null", "null-arguments", "prepare-max", "end-input-race", "ledger-deadlock",
             "target-changes"]
INF = float("inf")
CRASH_RE = re.compile(r"\(PID (\d+)\) was terminated by signal (\d+)")
SANITIZER_RE = re.compile(r"ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer")
EPOCH_RE = re.compile(r"\{(\d+\.\d+)\}")
STREAM_RE = re.compile(r'commit user "([^"]*)" writer id (\d+): (\d+) rows')

RUN = RunLog()
log = RUN.log
note = RUN.note


class Abort(Exception):
    """The run cannot go on (setup, a hang, a server that does not come back)."""


class Retry(Exception):
    """A check phase lost the server (a crash-restart under it): wait for it
    and run the phase again."""


class NotConnected(Exception):
    """A call that never ran: its connection could not be opened (a restart
    in progress, a role dropped or without LOGIN)."""
    pgcode = None


# ----------------------------------------------------------------------------
# Values that stay short in statements and traces
# ----------------------------------------------------------------------------

def sql_quote(s):
    """sql_quote writes a string as an SQL literal (standard_conforming_strings)."""
    return "'" + s.replace("'", "''") + "'"


class Big:
    """Big is a long text value (unit repeated n times) that the statement
    builds with repeat(), so that statements and traces stay short."""

    def __init__(self, unit, n):
        """__init__ records the unit and the count."""
        self.unit, self.n = unit, n

    def value(self):
        """value is the text itself."""
        return self.unit * self.n

    def __repr__(self):
        """__repr__ is the SQL that builds it."""
        return "repeat(%s, %d)" % (sql_quote(self.unit), self.n)


class Expr(str):
    """Expr is SQL written into the statement as it is (an expression that
    builds a value, such as a large jsonb)."""


psycopg2.extensions.register_adapter(Big, lambda b: psycopg2.extensions.AsIs(repr(b)))
psycopg2.extensions.register_adapter(Expr, lambda e: psycopg2.extensions.AsIs(str(e)))
# the int64 (int32) minimum as an argument: written bare, -9223372036854775808::bigint
# is -(9223372036854775808::bigint), out of range before the call
I64_MIN_ARG = Expr("(-9223372036854775808)")
I32_MIN_ARG = Expr("(-2147483648)")


def plain(v):
    """plain is the Python value of a generated argument (Big expanded)."""
    return v.value() if isinstance(v, Big) else v


def md5_of(payload):
    """md5_of is the ledger's digest of a payload: md5 of its UTF-8 bytes, or
    'null' for NULL (as the comparison computes it in SQL)."""
    if payload is None:
        return "null"
    return hashlib.md5(plain(payload).encode("utf-8")).hexdigest()


def unknown_outcome(e):
    """unknown_outcome tells whether a failed call may still have taken
    effect: the connection was lost (or the server shut down) before the
    answer, or the wait for the committer was cut (57014: "the request stays
    queued or finishes")."""
    code = getattr(e, "pgcode", None)
    if code is None:
        # no SQLSTATE: the answer never came (every error of the server has one)
        return not isinstance(e, NotConnected)
    return code == "57014" or code.startswith("08") or code in ("57P01", "57P02", "57P03")


# ----------------------------------------------------------------------------
# What every session shares
# ----------------------------------------------------------------------------

class Call:
    """Call is one traced statement or transaction of a session: when, by
    whom, its SQL, the sinks and commit users it names, and its outcome."""

    def __init__(self, session, role, kind, touched=(), cus=()):
        """__init__ starts the record now."""
        self.t0 = time.time()
        self.t1 = None
        self.session, self.role, self.kind = session, role, kind
        self.touched = set(x for x in touched if isinstance(x, str))
        self.cus = set(x for x in cus if isinstance(x, str))
        self.sql = []
        self.outcome = "running"
        self.cu_setting = None
        self.pid = None

    def add(self, text):
        """add appends a statement's text (cut to 600 characters)."""
        self.sql.append(text if len(text) <= 600 else text[:600] + "...[%d chars]" % len(text))

    def end(self, outcome):
        """end records the outcome ("ok", "ERROR <SQLSTATE> <message>", "lost ...")."""
        self.t1 = time.time()
        self.outcome = outcome

    def line(self, t0):
        """line is the record as one line of a reproduction (seconds since t0)."""
        cu = " commit_user=%r" % self.cu_setting if self.cu_setting is not None else ""
        return "[%7.2fs +%.2fs] %s as %s (pid %s)%s: %s  -> %s" % (
            self.t0 - t0, (self.t1 or time.time()) - self.t0, self.session, self.role, self.pid, cu,
            "; ".join(self.sql), self.outcome)


class World:
    """World is what the sessions, the killer and the driver share during a
    round: the sinks and commit users as the catalog last showed them, the
    discarding decisions, the kills, what was accepted although it must be
    refused, and the edge ids left; every method takes the lock."""

    def __init__(self):
        """__init__ starts empty."""
        self.lock = threading.Lock()
        self.t0 = time.time()
        self.new_round(0)

    def new_round(self, n):
        """new_round forgets the last round's state."""
        with self.lock:
            self.round = n
            self.sinks = {}         # name -> dict (the catalog's row)
            self.names_seen = set()
            self.groups = []
            self.states = {}        # (sink_id, commit user) -> (last prepared, last committed)
            self.epochs = {}        # (sink_id, commit user) -> fence epoch
            self.decisions = []     # (kind, sink ids, commit user or None for all, cut time, call)
            self.kills = []         # (time, kind, pid, what)
            self.accepted = []      # (what, Call)
            self.accepted_ids = set()
            self.edge_ids = list(EDGE_IDS)
            self.committed_ids = []  # a sample of ids committed this round (for ON CONFLICT)
            self.harness_errors = []   # (summary, detail)

    def set_catalog(self, sinks, groups, states, epochs):
        """set_catalog records the catalog as the driver read it."""
        with self.lock:
            self.sinks = sinks
            self.names_seen.update(sinks)
            self.groups = groups
            self.states = states
            self.epochs = epochs

    def epoch(self, sink_id, cu):
        """epoch returns the stream's fence epoch as last seen (0 when unknown)."""
        with self.lock:
            return self.epochs.get((sink_id, cu), 0)

    def set_epoch(self, sink_ids, cu, epoch):
        """set_epoch records the fence epoch restart_job() returned for the streams."""
        with self.lock:
            for sid in sink_ids:
                self.epochs[(sid, cu)] = epoch

    def snapshot(self):
        """snapshot returns (sinks, names seen, groups, states) as they are now."""
        with self.lock:
            return dict(self.sinks), set(self.names_seen), list(self.groups), dict(self.states)

    def decide(self, kind, sink_ids, cu, cut, call):
        """decide records a discarding decision on the streams (sink_ids,
        cu; None: every commit user) whose effect reaches transactions begun
        before cut."""
        with self.lock:
            self.decisions.append((kind, frozenset(sink_ids), cu, cut, call))

    def kill(self, kind, pid, what):
        """kill records a kill the fuzz made."""
        with self.lock:
            self.kills.append((time.time(), kind, pid, what))

    def accept(self, what, call, ids=()):
        """accept records a write the sink took although it must refuse it
        (and the ids it wrote: their rows are its consequence, not counted
        again as phantom or doubled)."""
        with self.lock:
            self.accepted.append((what, call))
            self.accepted_ids.update(ids)

    def harness_error(self, summary, detail=""):
        """harness_error records a failure of the fuzz itself: summary, one
        line for the round's report, and detail (a traceback, the error's
        full text, the statements), printed when the run fails."""
        with self.lock:
            self.harness_errors.append((summary, detail))

    def claim_edge_id(self, rng):
        """claim_edge_id hands out one of this round's edge ids not used yet, or None."""
        with self.lock:
            if not self.edge_ids:
                return None
            return self.edge_ids.pop(rng.randrange(len(self.edge_ids)))

    def committed(self, pairs):
        """committed remembers a few (id, target) of a committed transaction
        (kept to 2000)."""
        with self.lock:
            self.committed_ids.extend(pairs[:2])
            del self.committed_ids[:-2000]

    def committed_id(self, rng, target):
        """committed_id returns an id committed into target this round, or None."""
        with self.lock:
            ids = [i for i, t in self.committed_ids if t == target]
            return rng.choice(ids) if ids else None


# ----------------------------------------------------------------------------
# A session: random writes, calls and DDL as random roles
# ----------------------------------------------------------------------------

class Session(threading.Thread):
    """Session is one client of the fuzz: a thread with a connection per
    role (autocommit; transactions by BEGIN and COMMIT) that runs random
    actions until stopped and traces every statement it runs."""

    def __init__(self, fz, idx, seed, stop):
        """__init__ seeds the session's choices from the run's seed, the round
        and its index, and its ids from the round and index."""
        super().__init__(daemon=True, name="s%d" % idx)
        self.fz, self.world, self.idx, self.stop = fz, fz.world, idx, stop
        self.round = self.world.round
        self.rng = random.Random("%d-%d-%d" % (seed, self.round, idx))
        self.conns = {}
        self.trace = []
        self.current = None
        self.next_id = self.round * ID_ROUND + idx * ID_SESSION + 1
        self.counts = collections.Counter()
        self.job_cu = "job-%d" % idx
        self.stream_set = set()   # roles whose connection has had its stream SET

    # ---- connections and the one way to run SQL --------------------------------
    def conn(self, role):
        """conn returns the session's autocommit connection as role, opening it
        when there is none."""
        c = self.conns.get(role)
        if c is None or c.closed:
            srv = Server(self.fz.h.sockdir, self.fz.h.port, user=role, dbname=DB, connect_timeout=5,
                         app_prefix="fuzz-%s-" % self.name)
            c = srv.connect(role, statement_timeout_ms=30000)
            self.conns[role] = c
        return c

    def drop(self, role):
        """drop closes role's connection (after an error that may have left it broken)."""
        close_quietly(self.conns.pop(role, None))
        self.stream_set.discard(role)

    def begin(self, role, kind, touched=(), cus=()):
        """begin starts a traced record (the call in flight, for a crash's
        attribution)."""
        rec = Call(self.name, role, kind, touched, cus)
        self.current = rec
        return rec

    def finish(self, rec, outcome):
        """finish ends a traced record and keeps it."""
        rec.end(outcome)
        self.current = None
        self.trace.append(rec)
        self.counts[rec.kind] += 1

    def execute(self, cur, rec, stmt, args=None, copy_data=None):
        """execute runs one statement on cur, its text (and the size of COPY
        data) added to rec; returns the rows when it returns any."""
        text = cur.mogrify(stmt, args).decode("utf-8", "replace") if args is not None else stmt
        if rec.pid is None:
            rec.pid = cur.connection.get_backend_pid()
        rec.add(text + (" <COPY data: %d rows, %d bytes>" % (copy_data.count("\n"), len(copy_data))
                        if copy_data is not None else ""))
        if copy_data is not None:
            cur.copy_expert(text, io.StringIO(copy_data))
            return None
        cur.execute(text)
        return cur.fetchall() if cur.description else None

    def connected(self, role, rec, stmt, args):
        """connected returns role's connection, or None after finishing rec
        as a call that never ran."""
        try:
            return self.conn(role)
        except psycopg2.Error as e:
            rec.add(stmt if args is None else "%s  %% %r" % (stmt, args))
            self.finish(rec, "not connected: " + describe(e))
            self.stop.wait(0.2)    # a restart, a role dropped: no storm of attempts
            return None

    def sql(self, role, stmt, args=None, kind="call", touched=(), cus=()):
        """sql runs one statement as role, traced; returns (True, rows) or
        (False, the error; NotConnected when it never ran).  A broken
        connection is dropped."""
        rec = self.begin(role, kind, touched, cus)
        conn = self.connected(role, rec, stmt, args)
        if conn is None:
            return False, NotConnected()
        try:
            with conn.cursor() as cur:
                rows = self.execute(cur, rec, stmt, args)
            self.finish(rec, "ok" + (" (%d rows)" % len(rows) if rows is not None else ""))
            return True, rows
        except psycopg2.Error as e:
            if not rec.sql:
                rec.add(stmt if args is None else "%s  %% %r" % (stmt, args))
            self.finish(rec, ("lost: " if unknown_outcome(e) else "ERROR ") + describe(e))
            if unknown_outcome(e) or getattr(e, "pgcode", None) is None:
                self.drop(role)
            return False, e

    # ---- the loop -------------------------------------------------------------------
    def run(self):
        """run picks actions until the round stops; a Python error is a
        harness error, recorded and the session goes on."""
        actions = [(self.write_txn, 45), (self.call_random, 40), (self.ddl_random, 7), (self.read_view, 5),
                   (self.hostile_prepare, 1)]
        fns, weights = zip(*actions)
        while not self.stop.is_set():
            fn = self.rng.choices(fns, weights)[0]
            try:
                fn()
            except (psycopg2.Error, OSError) as e:
                # connecting failed (a restart in progress): wait a little
                self.counts["connect_failed"] += 1
                note("%s: %s" % (self.name, describe(e)))
                for role in list(self.conns):
                    self.drop(role)
                self.stop.wait(0.3)
            except Exception:
                tb = traceback.format_exc()
                self.world.harness_error("%s: %s" % (self.name, tb.strip().splitlines()[-1]), tb)
                self.stop.wait(0.3)
        for role in list(self.conns):
            self.drop(role)

    def pick_role(self, weights=None):
        """pick_role draws the role of an action."""
        return self.rng.choices(ROLES, weights or [25, 30, 20, 10, 15])[0]

    # ---- arguments ------------------------------------------------------------------
    def sinks(self):
        """sinks returns the sinks the catalog last showed (name -> row)."""
        return self.world.snapshot()[0]

    def arg_sink(self, valid):
        """arg_sink draws a sink_name: an existing sink or group, or an edge
        value (NULL, empty, 10 kB, a dropped sink's name, a near miss, a
        catalog table, an id as text)."""
        sinks, seen, groups, _ = self.world.snapshot()
        live = sorted(sinks)
        if valid and live:
            return self.rng.choice(live + groups)
        dropped = sorted(seen - set(sinks))
        pool = [None, "", Big("x", 10000), "pg_class", "FZ_A", "fz_a ", "fz_a'--", "\u00fc" * 40, "x" * 64,
                "fz_ta", "fz_router"] + dropped + groups + live
        if sinks:
            pool.append(str(self.rng.choice(list(sinks.values()))["sink_id"]))
        return self.rng.choice(pool)

    def arg_cu(self, valid, sink=None):
        """arg_cu draws a commit user: NULL (the sink's own), a job's, the
        sink's own UUID or another sink's, or an invalid one."""
        sinks = self.sinks()
        owns = [s["default_commit_user"] for s in sinks.values()]
        pool = [None, "J1", "J2", self.job_cu, "job-%d" % self.rng.randrange(8)]
        if sink in sinks:
            pool.append(sinks[sink]["default_commit_user"])
        if valid:
            return self.rng.choice(pool + owns[:2])
        return self.rng.choice(pool + owns + ["", "bad user", "x" * 64, "x" * 65, Big("J", 10000), "J1'",
                                              "\u00e9t\u00e9", "J1;", ":", "-", "..", "J1 "])

    def marks(self, sink, cu):
        """marks returns (last prepared, last committed) of the stream as the
        catalog last showed it, (0, 0) when unknown."""
        sinks, _, _, states = self.world.snapshot()
        s = sinks.get(sink)
        if s is None:
            return 0, 0
        return states.get((s["sink_id"], cu if cu is not None else s["default_commit_user"]), (0, 0))

    def arg_ckpt(self, valid, sink=None, cu=None):
        """arg_ckpt draws a checkpoint id: the stream's next or current ids, or
        an edge value (0, -1, -5, int32 and int64 limits, NULL, one below the
        last committed)."""
        lp, lc = self.marks(sink, cu)
        nxt = max(lp, lc) + 1
        if valid:
            return self.rng.choice([nxt, nxt, lp, lc + 1, nxt + self.rng.randrange(1, 5)])
        return self.rng.choice([0, -1, -5, 1, 2, I32_MAX, I32_MAX + 1, I64_MAX, I64_MIN_ARG, None, lc, lc - 1, nxt])

    def epoch_of(self, sink, cu):
        """epoch_of returns the fence epoch of the stream (sink name, commit
        user; None: the sink's own) as last seen, 0 when unknown."""
        s = self.sinks().get(sink)
        if s is None:
            return 0
        return self.world.epoch(s["sink_id"], cu if cu is not None else s["default_commit_user"])

    def arg_epoch(self, valid, sink=None, cu=None):
        """arg_epoch draws a fence_epoch: the stream's as last seen (or NULL:
        the session's), or an edge value (a stale one, one never handed out,
        -1, int64 limits)."""
        e = self.epoch_of(sink, cu)
        if valid:
            return self.rng.choice([e, e, e, None])
        return self.rng.choice([None, e, e - 1, e + 1, 0, -1, I64_MAX, I64_MIN_ARG])

    def arg_writer(self, valid):
        """arg_writer draws a writer id."""
        if valid:
            return self.rng.choice([None, 0, 1, 2, 3])
        return self.rng.choice([None, 0, 3, -1, I32_MAX, I32_MIN_ARG, 1024])

    def arg_props(self, valid):
        """arg_props draws checkpoint properties (jsonb): NULL, objects, or
        odd shapes (not objects, nested 500 deep, over 8 kB, empty keys)."""
        ok = [None, '{}', '{"pos-%d": %d}' % (self.idx, self.rng.randrange(10 ** 6)), '{"a": {"b": [1, 2]}}']
        if valid:
            return self.rng.choice(ok)
        return self.rng.choice(ok + ['[]', '1', '"s"', 'null', 'true', '{"": null}', '[' * 500 + ']' * 500,
                                    '{"a":' * 300 + '1' + '}' * 300,
                                    Expr("(SELECT jsonb_object_agg('k' || g, repeat('v', 20)) "
                                         "FROM generate_series(1, 500) g)"),
                                    '{"pos-0": %d}' % self.rng.randrange(3), '{"\\u0000x": 1}'])

    def arg_int(self):
        """arg_int draws an integer edge value."""
        return self.rng.choice([None, 0, -1, 1, 2, 100, 1024, 1025, I32_MAX, I32_MIN_ARG])

    def arg_interval(self):
        """arg_interval draws an interval (as text)."""
        return self.rng.choice([None, "0", "-1 s", "1 microsecond", "1 ms", "100 years", "1 day",
                                "-178000000 years", "00:00:00.5"])

    def arg_bool(self):
        """arg_bool draws a boolean or NULL."""
        return self.rng.choice([None, True, False])

    def arg_text(self, valid_values):
        """arg_text draws one of valid_values or an edge text."""
        return self.rng.choice(list(valid_values) + [None, "", Big("x", 10000), "APPEND", " append", "x" * 64])

    def arg_target(self, mode):
        """arg_target draws a target for create_sink: ours, a scratch table,
        a catalog table, the routing parent or its partition, a foreign table,
        NULL; an overwrite sink only on the scratch table (it empties its
        target: rows the ledger checks would go)."""
        if mode == "overwrite" or not isinstance(mode, str) or mode.strip().lower() not in ("append", "upsert"):
            return self.rng.choice(["public.fz_scratch", None])
        return self.rng.choice(["public.fz_ta", "public.fz_tb", "public.fz_tu", "public.fz_scratch", "pg_class",
                                "public.fz_router", "public.fz_a", None, "public.fz_ledger_x"])

    # ---- the streams a decision names ------------------------------------------------
    def resolve(self, role, name):
        """resolve returns {sink id: its own commit user} of the sinks name
        stands for now (a sink, or a group's members); {} when none."""
        if not isinstance(name, str):
            return {}
        q = ("SELECT sink_id, default_commit_user FROM paimon_sink.sink_definition WHERE sink_name = %s "
             "UNION SELECT d.sink_id, d.default_commit_user FROM paimon_sink.sink_group g "
             "JOIN paimon_sink.sink_group_member m USING (group_id) "
             "JOIN paimon_sink.sink_definition d ON d.sink_id = m.sink_id WHERE g.group_name = %s")
        for r in (role, SUPER):
            try:
                with self.conn(r).cursor() as cur:
                    cur.execute(q, (name, name))
                    return dict(cur.fetchall())
            except psycopg2.Error:
                self.drop(r)
        sinks = self.sinks()
        return {sinks[name]["sink_id"]: sinks[name]["default_commit_user"]} if name in sinks else {}

    def discarding(self, kind, role, stmt, args, sink, cu, all_users=False, when=None, wrap=False):
        """discarding runs a call (wrap: as wrapped runs it) that may discard
        staged rows of the streams it names; when it succeeds (or when
        when(ok, result) says so) or its outcome is unknown, records the
        decision: rows of those streams written by transactions begun before
        it returned (unknown: before the round ends) are exempt from
        "missing"."""
        before = self.resolve(role, sink)
        run = self.wrapped if wrap else self.sql
        ok, res = run(role, stmt, args, touched=(sink,), cus=(cu,))
        rec = self.trace[-1]
        decided = (when(ok, res) if when else ok)
        # a restore that fails in its discard (an injected fault at a writer's
        # barrier) has fenced the attempt already: its rows may be gone
        restore_fault = (not ok and kind in ("recover", "restart_job")
                         and getattr(res, "pgcode", None) == "XX000")
        if decided or (not ok and (unknown_outcome(res) or restore_fault)):
            ids = dict(before)
            ids.update(self.resolve(role, sink))
            cut = rec.t1 if decided else INF
            for sid, own in ids.items():
                users = None if all_users else (cu if isinstance(cu, str) and cu else own)
                self.world.decide(kind, [sid], users, cut, rec)
        return ok, res

    # ---- function calls -------------------------------------------------------------
    def call_random(self):
        """call_random calls one SQL function of the extension as a random
        role with drawn arguments; sometimes inside a transaction block or a
        DO block that raises afterwards."""
        fn = self.rng.choices(list(CALLS), [w for w, _ in CALLS.values()])[0]
        valid = self.rng.random() < 0.5
        role = self.pick_role()
        CALLS[fn][1](self, role, valid)

    def wrapped(self, role, stmt, args, touched=(), cus=()):
        """wrapped runs stmt as a call: as it is (85%), inside BEGIN ... ROLLBACK
        (10%: functions that commit must refuse, 25001) or inside a DO block
        that raises after it (5%: what they did is not undone)."""
        r = self.rng.random()
        if r < 0.85:
            return self.sql(role, stmt, args, touched=touched, cus=cus)
        rec = self.begin(role, "call", touched, cus)
        conn = self.connected(role, rec, stmt, args)
        if conn is None:
            return False, NotConnected()
        try:
            with conn.cursor() as cur:
                text = cur.mogrify(stmt, args).decode("utf-8", "replace")
                if r < 0.95:
                    self.execute(cur, rec, "BEGIN")
                    try:
                        self.execute(cur, rec, text)
                    finally:
                        self.execute(cur, rec, "ROLLBACK")
                else:
                    body = "BEGIN PERFORM count(*) FROM (%s) q; RAISE EXCEPTION 'fuzz: undo'; END" % text
                    self.execute(cur, rec, "DO %s" % sql_quote(body))
            self.finish(rec, "ok")
            return True, None
        except psycopg2.Error as e:
            self.finish(rec, ("lost: " if unknown_outcome(e) else "ERROR ") + describe(e))
            self.drop(role)
            return False, e

    def c_create_sink(self, role, valid):
        """create_sink with drawn options (a new name, a taken one, edges)."""
        mode = self.rng.choice(["append", "upsert", "append"]) if valid else \
            self.arg_text(["append", "upsert", "overwrite"])
        name = self.rng.choice(["fz_n%d" % self.rng.randrange(6), "fz_a", "fz_b"]) if valid \
            else self.arg_sink(False)
        target = self.arg_target(mode)
        args = [name, target, mode,
                self.rng.choice([1, 2, 4]) if valid else self.arg_int(),
                self.rng.choice([None, "{id}"]) if valid else self.rng.choice(
                    [None, "{}", "{id}", "{part}", "{nope}", "{NULL}", "{id,id}", "{payload}"]),
                None if valid else self.arg_interval(),
                "_row_kind" if valid else self.rng.choice(["_row_kind", "id", "", None, "k" * 63, "k" * 64]),
                False if valid else self.arg_bool(),
                "stop" if valid else self.arg_text(["stop", "reject"]),
                None if valid else self.arg_bool(),
                False if valid else self.arg_bool(),
                False if valid else (self.arg_bool() if mode == "overwrite" else False)]
        n = self.rng.randint(2, 12)
        stmt = "SELECT * FROM paimon_sink.create_sink(%s)" % ", ".join(
            ["%s::text", "%s::regclass", "%s::text", "%s::integer", "%s::text[]", "%s::interval", "%s::text",
             "%s::boolean", "%s::text", "%s::boolean", "%s::boolean", "%s::boolean"][:n])
        ok, _ = self.sql(role, stmt, args[:n], touched=(name,))
        if ok and target in ("public.fz_ta", "public.fz_tb", "public.fz_tu"):
            self.sql(SUPER, "SELECT public.fz_repair()", kind="ddl")

    def c_drop_sink(self, role, valid):
        """drop_sink, force or not: a discarding decision when it succeeds."""
        sink = self.arg_sink(valid)
        force = self.rng.choice([False, False, True]) if valid else self.arg_bool()
        args = (sink,) if self.rng.random() < 0.3 else (sink, force)
        stmt = "SELECT paimon_sink.drop_sink(%s)" % ", ".join(["%s::text", "%s::boolean"][:len(args)])
        self.discarding("drop_sink", role, stmt, args, sink, None, all_users=True)

    def c_create_sink_group(self, role, valid):
        """create_sink_group of existing sinks, or edge names and arrays."""
        sinks = sorted(self.sinks())
        name = self.rng.choice(["fz_g", "fz_g2"]) if valid else self.arg_sink(False)
        if valid and sinks:
            members = self.rng.sample(sinks, min(len(sinks), self.rng.randint(1, 3)))
        else:
            members = self.rng.choice([None, [], [None], ["fz_a", "fz_a"], ["fz_b", "fz_u"], ["nope"],
                                       ["x" * 10000], sinks, ["fz_g"]])
        self.sql(role, "SELECT paimon_sink.create_sink_group(%s::text, %s::text[])", (name, members),
                 touched=[name] + [m for m in (members or []) if isinstance(m, str)])

    def c_drop_sink_group(self, role, valid):
        """drop_sink_group."""
        groups = self.world.snapshot()[2]
        name = self.rng.choice(groups) if valid and groups else self.arg_sink(False)
        self.sql(role, "SELECT paimon_sink.drop_sink_group(%s::text)", (name,), touched=(name,))

    def c_prepare_commit(self, role, valid):
        """prepare_commit with drawn sink, commit user, id, writer id and
        properties; a refusal of an id from 1 up to the last committed one is
        the documented replay drop (a decision), one at or below 0 is not."""
        sink = self.arg_sink(valid)
        cu = self.arg_cu(valid, sink)
        ckpt = self.arg_ckpt(valid, sink, cu)
        expected = None if valid else self.rng.choice([None, 0, 1, -1, 3, I64_MAX])
        args = [sink, cu, ckpt, self.arg_writer(valid), self.arg_props(valid), self.arg_epoch(valid, sink, cu),
                expected]
        n = self.rng.choice([3, 5, 6, 6, 6, 7])
        stmt = "SELECT * FROM paimon_sink.prepare_commit(%s)" % ", ".join(
            ["%s::text", "%s::text", "%s::bigint", "%s::integer", "%s::jsonb", "%s::bigint", "%s::bigint"][:n])

        def replay(ok, res):
            """replay: the refusal that drops the rows staged for a committed id."""
            return (not ok and type(ckpt) is int and ckpt >= 1 and getattr(res, "pgcode", None) == "22023"
                    and "not above the last committed" in str(res))
        self.discarding("replay", role, stmt, args[:n], sink, cu, when=replay, wrap=self.rng.random() < 0.5)

    def c_commit(self, role, valid):
        """commit up to a drawn id."""
        sink = self.arg_sink(valid)
        cu = self.arg_cu(valid, sink)
        ckpt = self.marks(sink, cu)[0] if valid else self.arg_ckpt(False, sink, cu)
        self.wrapped(role, "SELECT * FROM paimon_sink.commit(%s::text, %s::text, %s::bigint, %s::bigint)",
                     (sink, cu, ckpt, self.arg_epoch(valid, sink, cu)), touched=(sink,), cus=(cu,))

    def c_checkpoint(self, role, valid):
        """checkpoint of a drawn sink (often: the sessions' rows commit by it)."""
        sink = self.arg_sink(valid or self.rng.random() < 0.5)
        self.wrapped(role, "SELECT * FROM paimon_sink.checkpoint(%s::text)", (sink,), touched=(sink,))

    def c_last(self, role, valid):
        """last_committed_checkpoint or last_commit."""
        sink = self.arg_sink(valid)
        cu = self.arg_cu(valid, sink)
        fn = self.rng.choice(["SELECT paimon_sink.last_committed_checkpoint(%s::text, %s::text)",
                              "SELECT * FROM paimon_sink.last_commit(%s::text, %s::text)"])
        self.sql(role, fn, (sink, cu), touched=(sink,), cus=(cu,))

    def c_status(self, role, valid):
        """the status functions without arguments, and library_version."""
        fn = self.rng.choice(["writer_status", "commit_progress", "checkpoint_schedule_status",
                              "in_doubt_status", "fault_status", "library_version", "start_workers"])
        self.sql(role, "SELECT * FROM paimon_sink.%s()" % fn)

    def c_recover(self, role, valid):
        """recover to a drawn checkpoint: a discarding decision."""
        sink = self.arg_sink(valid)
        cu = self.arg_cu(valid, sink)
        lp, lc = self.marks(sink, cu)
        ckpt = self.rng.choice([lc, lp, lc + 1]) if valid else self.arg_ckpt(False, sink, cu)
        mode = self.rng.choice(["restore", "restore", "restore_and_fail"]) if valid else \
            self.arg_text(["restore", "restore_and_fail"])
        args = (sink, cu, ckpt) if self.rng.random() < 0.4 else (sink, cu, ckpt, mode)
        stmt = "SELECT * FROM paimon_sink.recover(%s)" % ", ".join(
            ["%s::text", "%s::text", "%s::bigint", "%s::text"][:len(args)])
        self.discarding("recover", role, stmt, args, sink, cu,
                        when=lambda ok, res: ok or getattr(res, "pgcode", None) == "55000"
                        and mode == "restore_and_fail")

    def c_restart_job(self, role, valid):
        """restart_job: a discarding decision (it restores as recover does);
        the fence epoch it returns is the one the stream's writes and calls
        name from then on."""
        sink = self.arg_sink(valid)
        cu = self.arg_cu(valid, sink)
        lp, lc = self.marks(sink, cu)
        args = [sink, cu,
                self.rng.choice([1000, 5000]) if valid else self.rng.choice([0, -1, 1, I32_MAX, None, 100]),
                self.rng.choice([None, lc, lp]) if valid else self.arg_ckpt(False, sink, cu)]
        n = self.rng.randint(2, 4)
        stmt = "SELECT * FROM paimon_sink.restart_job(%s)" % ", ".join(
            ["%s::text", "%s::text", "%s::integer", "%s::bigint"][:n])
        ok, rows = self.discarding("restart_job", role, stmt, args[:n], sink, cu)
        if ok and rows and isinstance(cu, str):
            self.world.set_epoch(self.resolve(role, sink), cu, rows[0][-1])

    def c_end_input(self, role, valid):
        """end_input of a drawn stream."""
        sink = self.arg_sink(valid)
        cu = self.arg_cu(valid, sink)
        self.wrapped(role, "SELECT * FROM paimon_sink.end_input(%s::text, %s::text, %s::bigint)",
                     (sink, cu, self.arg_epoch(valid, sink, cu)), touched=(sink,), cus=(cu,))

    def c_maintenance(self, role, valid):
        """remove_orphan_files and expire_snapshots with drawn ages and counts."""
        sink = self.arg_sink(valid)
        if self.rng.random() < 0.5:
            args = (sink, self.rng.choice(["1 day", "0", "1 s"]) if valid else self.arg_interval(),
                    self.arg_bool() if not valid else self.rng.choice([True, False]))
            self.wrapped(role, "SELECT * FROM paimon_sink.remove_orphan_files(%s::text, %s::interval, %s::boolean)",
                         args, touched=(sink,))
        else:
            args = (sink, self.rng.choice([1, 10, 100]) if valid else self.arg_int(),
                    self.rng.choice(["0", "1 hour"]) if valid else self.arg_interval())
            self.sql(role, "SELECT paimon_sink.expire_snapshots(%s::text, %s::integer, %s::interval)", args,
                     touched=(sink,))

    def c_discard_missing(self, role, valid):
        """discard_missing_files: a discarding decision."""
        sink = self.arg_sink(valid)
        cu = self.arg_cu(valid, sink)
        args = (sink,) if self.rng.random() < 0.4 else (sink, cu)
        stmt = "SELECT * FROM paimon_sink.discard_missing_files(%s)" % ", ".join(["%s::text", "%s::text"][:len(args)])
        # a decision only when it forgot files: with none missing it changes nothing
        self.discarding("discard_missing_files", role, stmt, args, sink, cu if len(args) > 1 else None,
                        when=lambda ok, res: ok and bool(res))

    def c_reject_failing(self, role, valid):
        """reject_failing_rows of a drawn checkpoint."""
        sink = self.arg_sink(valid)
        cu = self.arg_cu(valid, sink)
        ckpt = self.marks(sink, cu)[0] if valid else self.arg_ckpt(False, sink, cu)
        self.wrapped(role, "SELECT * FROM paimon_sink.reject_failing_rows(%s::text, %s::bigint, %s::text)",
                     (sink, ckpt, cu), touched=(sink,), cus=(cu,))

    def c_faults(self, role, valid):
        """inject_fault, release_fault, clear_faults: edge arguments; the
        superuser arms only error, fatal and pause (a panic or kill would be
        a crash the fuzz made but did not count as its kill)."""
        which = self.rng.choice(["inject", "inject", "release", "clear"])
        if which == "clear":
            self.sql(role, "SELECT paimon_sink.clear_faults()")
            return
        point = self.rng.choice(FAULT_POINTS) if valid else self.rng.choice(
            FAULT_POINTS + [None, "", "nope", Big("p", 10000)])
        if which == "release":
            self.sql(role, "SELECT paimon_sink.release_fault(%s::text)", (point,))
            return
        action = self.rng.choice(["error", "error", "fatal", "pause"])
        if role != SUPER:
            action = self.rng.choice(["error", "panic", "kill", "pause", "bogus", None])
        elif not valid:
            action = self.rng.choice(["error", "bogus", "", None, "ERROR"])
        times = self.rng.choice([1, 1, 2]) if valid else self.rng.choice([0, -1, -2, I32_MAX, None, 1])
        if role == SUPER and times in (-1, I32_MAX) and action in ("error", "fatal", "pause"):
            times = 1   # every hit for the rest of the round would stop every commit
        self.sql(role, "SELECT paimon_sink.inject_fault(%s::text, %s::text, %s::integer)", (point, action, times))

    def c_fdw(self, role, valid):
        """the FDW's handler and validator, and the trigger function, called
        directly."""
        which = self.rng.choice(["validator", "validator", "handler", "trigger"])
        if which == "handler":
            self.sql(role, "SELECT paimon_sink.fdw_handler()")
        elif which == "trigger":
            self.sql(role, "SELECT paimon_sink.refuse_invalid_commit_user()")
        else:
            opts = self.rng.choice([None, [], ["sink_id=1"], ["sink_id=x"], ["sink_id"], ["=1"], [None],
                                    ["sink_id=%d" % I64_MAX], ["a=b", "a=c"], ["x" * 10000 + "=1"]])
            ctx = self.rng.choice([0, 1, 1255, 1259, 2328, 1213, 3118, -1, None])
            self.sql(role, "SELECT paimon_sink.fdw_validator(%s::text[], %s::oid)", (opts, ctx))

    # ---- views ------------------------------------------------------------------------
    def read_view(self):
        """read_view reads a view of the extension as a random role."""
        self.sql(self.pick_role(), "SELECT count(*) FROM paimon_sink.%s" % self.rng.choice(VIEWS), kind="view")

    # ---- writes -----------------------------------------------------------------------
    def take_ids(self, n):
        """take_ids returns n new ids of the session (an edge id first, now
        and then)."""
        ids = []
        if self.rng.random() < 0.03:
            e = self.world.claim_edge_id(self.rng)
            if e is not None:
                ids.append(e)
        while len(ids) < n:
            ids.append(self.next_id)
            self.next_id += 1
        return ids

    def payload(self):
        """payload draws a row's payload."""
        return self.rng.choice(["p", "", None, Big("x", 10000), "\u00fcml\u00e4ut \u2603", "tab\there",
                                "line\nbreak", "back\\slash", "q'uote", "p%d" % self.rng.randrange(10 ** 6)])

    def write_targets(self):
        """write_targets returns the sinks a ledgered write may go to: a
        foreign table that exists, a target the ledger checks, append or
        upsert."""
        return [s for s in self.sinks().values() if s["ft"] and s["target"] in LEDGERED_TARGETS
                and s["mode"] in ("append", "upsert")]

    def set_stream(self, cur, rec, sinks):
        """set_stream sets the session's commit user, writer id and fence
        epoch on its connection (a session-level SET: kept for later
        transactions; the epoch that of the commit user on one of sinks, as
        last seen, now and then none or a stale one), now and then a value
        the server must refuse; returns the commit user set."""
        cu = self.rng.choice(["", "", "", "J1", "J2", self.job_cu, "job-%d" % self.rng.randrange(8)]
                             + (["bad user", "x" * 65] if self.rng.random() < 0.05 else []))
        wid = self.rng.choice([0, 0, 1, 2, 3] + ([-1, I32_MAX] if self.rng.random() < 0.05 else []))
        epoch = ""
        if cu:
            e = self.epoch_of(self.rng.choice(sinks)["name"], cu)
            epoch = self.rng.choice([str(e)] * 6 + ["", str(max(e - 1, 0))]
                                    + (["-1", "x"] if self.rng.random() < 0.05 else []))
        self.execute(cur, rec, "SET paimon_sink.commit_user = %s" % sql_quote(cu))
        self.execute(cur, rec, "SET paimon_sink.writer_id = %d" % wid)
        self.execute(cur, rec, "SET paimon_sink.fence_epoch = %s" % sql_quote(epoch))
        return cu

    def name_identity(self, cur, rec, sinks, cu, wid):
        """name_identity names, for the rest of the transaction, the
        identity of the writes into each of sinks (write_as()): the session's
        commit user and writer id, so that the ledger's commit user is the
        same whichever names it, and the stream's fence epoch as last seen;
        with no commit user set, the sink's own and its epoch as the catalog
        has them at the call (a sink of that name made again since the
        snapshot has another own commit user); now and then a stale epoch.
        A refused write_as() leaves the session's settings to name it."""
        for sink in sinks:
            stale = self.rng.random() < 0.05
            if cu:
                e = self.epoch_of(sink["name"], cu)
                stmt, args = "SELECT paimon_sink.write_as(%s, %s, %s, %s)", (
                    sink["name"], cu, wid, max(e - 1, 0) if stale else e)
            else:
                stmt, args = ("SELECT paimon_sink.write_as(d.sink_name, d.default_commit_user, %s, "
                              "greatest(coalesce((SELECT u.fence_epoch FROM paimon_sink.commit_user_state u "
                              "WHERE u.sink_id = d.sink_id AND u.commit_user = d.default_commit_user), 0) - %s, 0)) "
                              "FROM paimon_sink.sink_definition d WHERE d.sink_name = %s",
                              (wid, 1 if stale else 0, sink["name"]))
            self.execute(cur, rec, "SAVEPOINT w")
            try:
                self.execute(cur, rec, stmt, args)
            except psycopg2.Error as err:
                rec.add("-- refused: %s" % describe(err))
                self.execute(cur, rec, "ROLLBACK TO SAVEPOINT w")
            self.execute(cur, rec, "RELEASE SAVEPOINT w")

    def statement(self, cur, rec, sink, ids):
        """statement writes ids into sink (a catalog row) or through the
        routing parent, by one of the entry points, and records them in the
        ledger in the same transaction; returns whether they went into the
        sink's foreign table itself."""
        upsert = sink["mode"] == "upsert"
        ft = sink["ft"]
        shape = self.rng.choice(["values1", "valuesN", "select", "copy", "csv", "router", "router_copy",
                                 "router_select", "router_move"])
        part = 1
        rel = ft
        if shape.startswith("router"):
            rel = "fz_router"
            part = 0 if shape == "router_move" else self.rng.choice([1, 1, 0])
            upsert = False
        cols = "id, part, payload" + (", %s" % psycopg2.extensions.quote_ident(sink["rkc"], cur) if upsert else "")
        kinds = [self.rng.choice(["+I", None, "+U"]) for _ in ids]
        payloads = [self.payload() for _ in ids]
        target = "public.%s" % psycopg2.extensions.quote_ident(rel, cur)
        if shape in ("values1", "router", "router_move"):
            for i, p, k in zip(ids, payloads, kinds):
                self.execute(cur, rec, "INSERT INTO %s (%s) VALUES (%%s, %%s, %%s%s)" % (
                    target, cols, ", %s" if upsert else ""), [i, part, p] + ([k] if upsert else []))
        elif shape == "valuesN":
            row = "(%s, %s, %s" + (", %s)" if upsert else ")")
            args = []
            for i, p, k in zip(ids, payloads, kinds):
                args += [i, part, p] + ([k] if upsert else [])
            self.execute(cur, rec, "INSERT INTO %s (%s) VALUES %s" % (target, cols, ", ".join([row] * len(ids))),
                         args)
        elif shape in ("select", "router_select"):
            p = payloads[0]
            payloads = [p] * len(ids)
            self.execute(cur, rec, "INSERT INTO %s (%s) SELECT g, %%s, %%s%s FROM unnest(%%s::bigint[]) g" % (
                target, cols, ", '+I'" if upsert else ""), (part, p, ids))
        else:
            csv = shape == "csv"
            lines = []
            for i, p, k in zip(ids, payloads, kinds):
                vals = [str(i), str(part), plain(p)] + ([k] if upsert else [])
                lines.append(",".join(csv_field(v) for v in vals) if csv
                             else "\t".join(copy_field(v) for v in vals))
            self.execute(cur, rec, "COPY %s (%s) FROM STDIN%s" % (target, cols, " (FORMAT csv)" if csv else ""),
                         copy_data="\n".join(lines) + "\n")
        self.execute(cur, rec, "SELECT public.fz_record(%s::bigint[], %s::regclass, %s, %s, %s::text[], %s)",
                     (ids, target, part, self.idx, [md5_of(p) for p in payloads], self.round))
        if shape == "router_move":
            # an UPDATE that moves the rows into the partition of part 1 (the
            # sink's foreign table: BeginForeignInsert), the ordinary partition
            # pruned; the ledger follows them
            self.execute(cur, rec, "UPDATE public.fz_router SET part = 1 WHERE part = 0 AND id = ANY(%s::bigint[])",
                         (ids,))
            self.execute(cur, rec, "SELECT public.fz_record(%s::bigint[], %s::regclass, 1, %s, %s::text[], %s)",
                         (ids, target, self.idx, [md5_of(p) for p in payloads], self.round))
        return rel == ft

    def invalid_row(self, cur, rec, sinks):
        """invalid_row writes, in a savepoint, a row the documentation says is
        refused when written (a NULL key into a sink whose target's key is NOT
        NULL, a bad row kind into an upsert sink, ON CONFLICT into a foreign
        table or through the routing parent, with a committed id or a new
        one); one that is taken is recorded as accepted."""
        sink = self.rng.choice(sinks)
        ft = "public.%s" % psycopg2.extensions.quote_ident(sink["ft"], cur)

        def an_id(target):
            """an_id is an id committed into target this round (a conflict at
            the load: 60%), else a new one."""
            cid = self.world.committed_id(self.rng, target)
            return cid if cid is not None and self.rng.random() < 0.6 else self.take_ids(1)[0]
        choices = [("ON CONFLICT into the foreign table",
                    "INSERT INTO %s (id, part, payload) VALUES (%%s, 1, 'oc') ON CONFLICT DO NOTHING" % ft,
                    (an_id(sink["target"]),))]
        # the routing parent's partition for part 1, when it is a sink's foreign table
        part1 = self.execute(cur, rec, "SELECT d.sink_name, t.relname FROM pg_catalog.pg_inherits i "
                                       "JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid "
                                       "JOIN paimon_sink.sink_definition d ON d.foreign_table = c.oid "
                                       "LEFT JOIN pg_catalog.pg_class t ON t.oid = d.target_table "
                                       "WHERE i.inhparent = 'public.fz_router'::regclass "
                                       "AND pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'FOR VALUES IN (1)'")
        if part1:
            choices.append(("ON CONFLICT through the routing parent into the partition of sink %s" % part1[0][0],
                            "INSERT INTO public.fz_router (id, part, payload) VALUES (%s, 1, 'oc') "
                            "ON CONFLICT DO NOTHING", (an_id(part1[0][1]),)))
        # the sink as it is now (the cache may be a moment old: a sink of that
        # name dropped and made again on another target, in another mode)
        now = self.execute(cur, rec, "SELECT d.mode, a.attnotnull FROM paimon_sink.sink_definition d "
                                     "JOIN pg_catalog.pg_attribute a ON a.attrelid = d.target_table "
                                     "AND a.attname = 'id' WHERE d.foreign_table = %s::regclass", (ft,))
        mode, notnull = now[0] if now else (None, False)
        if notnull:
            choices.append(("a NULL key into a sink whose target's key is NOT NULL",
                            "INSERT INTO %s (id, part, payload) VALUES (NULL, 1, 'null key')" % ft, None))
        if mode == "upsert" and sink["mode"] == "upsert":
            rkc = psycopg2.extensions.quote_ident(sink["rkc"], cur)
            choices.append(("a bad row kind into an upsert sink",
                            "INSERT INTO %s (id, part, payload, %s) VALUES (%%s, 1, 'bad kind', %%s)" % (ft, rkc),
                            (self.take_ids(1)[0], self.rng.choice(["+X", "", "D", " +I", "-I"]))))
        what, stmt, args = self.rng.choice(choices)
        self.execute(cur, rec, "SAVEPOINT bad")
        try:
            self.execute(cur, rec, stmt, args)
        except psycopg2.Error as e:
            rec.add("-- refused: %s" % describe(e))
            self.execute(cur, rec, "ROLLBACK TO SAVEPOINT bad")
            return
        # a DETACH meanwhile sends part 1 to the default partition, a plain
        # table that takes ON CONFLICT: taken only when fz_a is still attached
        if "routing parent" in what and not self.execute(
                cur, rec, "SELECT 1 FROM pg_catalog.pg_inherits WHERE inhparent = 'public.fz_router'::regclass "
                          "AND inhrelid = pg_catalog.to_regclass('public.fz_a')"):
            rec.add("-- taken by the default partition: fz_a was detached meanwhile")
            self.execute(cur, rec, "ROLLBACK TO SAVEPOINT bad")
            return
        rec.add("-- ACCEPTED: %s" % what)
        if "routing parent" not in what:
            what += " (sink %s)" % sink["name"]
        self.world.accept(what, rec, [a for a in (args or []) if isinstance(a, int)])
        self.execute(cur, rec, "RELEASE SAVEPOINT bad")

    def write_txn(self):
        """write_txn runs one write transaction: a stream set now and then,
        1-4 statements of random entry points into random sinks (each with
        its ledger rows), savepoints rolled back or released, an invalid
        row now and then, then COMMIT (85%) or ROLLBACK."""
        sinks = self.write_targets()
        if not sinks:
            self.stop.wait(0.05)
            return
        role = self.pick_role([15, 30, 20, 30, 5])
        rec = self.begin(role, "write")
        conn = self.connected(role, rec, "BEGIN", None)
        if conn is None:
            self.stop.wait(0.1)
            return
        try:
            with conn.cursor() as cur:
                if self.rng.random() < 0.2 or role not in self.stream_set:
                    self.stream_set.add(role)
                    self.set_stream(cur, rec, sinks)
                rec.cu_setting = self.execute(cur, rec, "SHOW paimon_sink.commit_user")[0][0]
                wid = int(self.execute(cur, rec, "SHOW paimon_sink.writer_id")[0][0])
                self.execute(cur, rec, "BEGIN")
                if self.rng.random() < 0.5:
                    self.name_identity(cur, rec, sinks, rec.cu_setting, wid)
                written = []
                for _ in range(self.rng.randint(1, 4)):
                    r = self.rng.random()
                    sink = self.rng.choice(sinks)
                    rec.touched.add(sink["name"])
                    if r < 0.1:
                        self.execute(cur, rec, "SAVEPOINT a")
                        self.statement(cur, rec, sink, self.take_ids(self.rng.randint(1, 4)))
                        self.execute(cur, rec, "ROLLBACK TO SAVEPOINT a")
                    elif r < 0.2:
                        self.execute(cur, rec, "SAVEPOINT b")
                        ids = self.take_ids(self.rng.randint(1, 4))
                        if self.statement(cur, rec, sink, ids):
                            written += [(i, sink["target"]) for i in ids]
                        self.execute(cur, rec, "RELEASE SAVEPOINT b")
                    elif r < 0.25:
                        self.invalid_row(cur, rec, sinks)
                    else:
                        ids = self.take_ids(self.rng.choice([1, 1, 2, 5, 20, 100]))
                        if self.statement(cur, rec, sink, ids):
                            written += [(i, sink["target"]) for i in ids]
                if self.rng.random() < 0.15:
                    self.execute(cur, rec, "ROLLBACK")
                    self.finish(rec, "rolled back on purpose")
                else:
                    self.execute(cur, rec, "COMMIT")
                    self.world.committed(written)
                    self.finish(rec, "committed (%d ids)" % len(written))
        except psycopg2.Error as e:
            self.finish(rec, ("lost: " if unknown_outcome(e) else "ERROR ") + describe(e))
            self.check_ledger_error(rec, e)
            try:
                conn.rollback()
                with conn.cursor() as cur:
                    cur.execute("ROLLBACK")
            except Exception:
                self.drop(role)

    def check_ledger_error(self, rec, e):
        """check_ledger_error records a harness error when the error e that
        ended the write transaction rec is the ledger's own (the fuzz is
        broken then, not the sink): the statement that failed is the ledger
        call, and not because the server chose the transaction to end (a
        deadlock's victim, a serialization failure: SQLSTATE class 40; a
        lock or statement timeout, a cancel: 55P03, 57014; a lost
        connection).  Such a transaction rolls back with its ledger rows, as
        any refused write does, and the ledger stays exact.  The error's
        text does not tell: a deadlock's DETAIL names the statement of each
        process in the cycle, another session's ledger call among them."""
        code = getattr(e, "pgcode", None)
        if code is None or code.startswith("40") or code in ("55P03", "57014"):
            return
        if rec.sql and rec.sql[-1].startswith("SELECT public.fz_record("):
            self.world.harness_error("%s: the ledger failed: %s" % (self.name, describe(e)),
                                     "the error: %s\nthe transaction: %s" % (str(e).strip(), rec.line(self.world.t0)))

    # ---- DDL -----------------------------------------------------------------------
    def ddl_random(self):
        """ddl_random changes sinks, targets, the routing parent or roles."""
        fn = self.rng.choices(list(DDL), [w for w, _ in DDL.values()])[0]
        DDL[fn][1](self)

    def ddl(self, role, stmt, touched=()):
        """ddl runs one DDL statement as role, traced as DDL."""
        return self.sql(role, stmt, kind="ddl", touched=touched)

    def d_recreate_sink(self):
        """drop_sink (force or not) of one of the round's sinks and, most of
        the time, its create_sink again by an owner."""
        sinks = self.sinks()
        base = {"fz_a": ("public.fz_ta", OWNER, "buckets => 2"), "fz_b": ("public.fz_tb", OWNER2, "buckets => 4, "
                "bucket_key => '{id}'"), "fz_u": ("public.fz_tu", OWNER, "mode => 'upsert', buckets => 2")}
        name = self.rng.choice(sorted(base))
        target, owner, opts = base[name]
        if name in sinks:
            role = self.rng.choice([owner, SUPER, OWNER2 if owner == OWNER else OWNER])
            self.discarding("drop_sink", role, "SELECT paimon_sink.drop_sink(%s, %s)",
                            (name, self.rng.random() < 0.4), name, None, all_users=True)
        if self.rng.random() < 0.8:
            ok, _ = self.ddl(owner, "SELECT * FROM paimon_sink.create_sink(%s, %s, %s)"
                             % (sql_quote(name), sql_quote(target), opts), touched=(name,))
            if ok:
                self.ddl(SUPER, "SELECT public.fz_repair()")

    def d_alter_target(self):
        """ALTER TABLE of a target the ledger checks, as its owner (the
        superuser): changes a sink must live with."""
        t = "public." + self.rng.choice(LEDGERED_TARGETS)
        c = "c%d_%d" % (self.idx, self.rng.randrange(100))
        stmt = self.rng.choice(target_changes(t, c, self.rng.choice([OWNER2, SUPER])))
        self.ddl(SUPER, stmt, touched=[s["name"] for s in self.sinks().values()
                                       if "public." + (s["target"] or "") == t])

    def d_undo_target(self):
        """drops a column, constraint or index the fuzz added to a target."""
        # (only a column no sink carries: dropping one a sink stages is issue 6's,
        # "the target changes while rows wait", not a change a sink lives with)
        ok, rows = self.sql(SUPER, "SELECT c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON "
                                   "c.oid = a.attrelid WHERE c.relname = ANY(%s) AND a.attname ~ '^c[0-9]' "
                                   "AND NOT a.attisdropped AND NOT EXISTS (SELECT 1 FROM "
                                   "paimon_sink.sink_definition d WHERE a.attname = ANY(d.column_names))",
                            (list(LEDGERED_TARGETS),), kind="ddl")
        if ok and rows:
            t, c = self.rng.choice(rows)
            # checked again under the table's lock: a create_sink meanwhile may carry it now
            self.ddl(SUPER, "DO $$BEGIN LOCK TABLE public.%s IN ACCESS EXCLUSIVE MODE; IF NOT EXISTS (SELECT 1 "
                            "FROM paimon_sink.sink_definition d WHERE '%s' = ANY(d.column_names)) THEN "
                            "ALTER TABLE public.%s DROP COLUMN %s; END IF; END$$" % (t, c, t, c))
        ok, rows = self.sql(SUPER, "SELECT conrelid::regclass::text, conname FROM pg_constraint WHERE "
                                   "conname ~ '^c[0-9]' AND connamespace = 'public'::regnamespace", kind="ddl")
        if ok and rows:
            t, c = self.rng.choice(rows)
            self.ddl(SUPER, "ALTER TABLE %s DROP CONSTRAINT %s" % (t, c))

    def d_partition(self):
        """DETACH or ATTACH the sink's foreign table fz_a of the routing parent."""
        if self.rng.random() < 0.5:
            self.ddl(OWNER, "ALTER TABLE public.fz_router DETACH PARTITION public.fz_a", touched=("fz_a",))
        else:
            self.ddl(OWNER, "ALTER TABLE public.fz_router ATTACH PARTITION public.fz_a FOR VALUES IN (1)",
                     touched=("fz_a",))

    def d_foreign_table(self):
        """ALTER FOREIGN TABLE of a sink's (rename and back, a column added),
        GRANT or REVOKE INSERT on it, and rarely DROP FOREIGN TABLE."""
        sinks = [s for s in self.sinks().values() if s["ft"]]
        if not sinks:
            return
        s = self.rng.choice(sinks)
        ft = "public.%s" % s["ft"]
        r = self.rng.random()
        if r < 0.3:
            new = s["ft"] + "_r" if not s["ft"].endswith("_r") else s["ft"][:-2]
            self.ddl(self.rng.choice([SUPER, OWNER, OWNER2]), "ALTER FOREIGN TABLE %s RENAME TO %s" % (ft, new),
                     touched=(s["name"],))
        elif r < 0.45:
            self.ddl(self.rng.choice([SUPER, OWNER]), "ALTER FOREIGN TABLE %s ADD COLUMN zz int" % ft,
                     touched=(s["name"],))
        elif r < 0.9:
            verb = self.rng.choice(["GRANT INSERT ON %s TO %s", "REVOKE INSERT ON %s FROM %s"])
            self.ddl(self.rng.choice([SUPER, OWNER, OWNER2]), verb % (ft, self.rng.choice([WRITER, HOSTILE, OWNER2])),
                     touched=(s["name"],))
        else:
            self.ddl(self.rng.choice([SUPER, OWNER]), "DROP FOREIGN TABLE %s" % ft, touched=(s["name"],))

    def d_roles(self):
        """ALTER ROLE, REVOKE of a target right, REASSIGN OWNED (and DROP OWNED,
        DROP ROLE, the role made again by fz_repair) of an owner or of the
        other roles."""
        r = self.rng.random()
        victim = self.rng.choice([OWNER, OWNER2, OWNER, WRITER, HOSTILE])
        if r < 0.15:
            self.ddl(SUPER, "ALTER ROLE %s NOLOGIN" % victim)
        elif r < 0.25:
            self.ddl(SUPER, "ALTER ROLE %s SET %s" % (victim, self.rng.choice(
                ["search_path = fz_evil, public", "paimon_sink.commit_user = 'J1'", "paimon_sink.writer_id = 3"])))
        elif r < 0.4:
            self.ddl(SUPER, "REVOKE INSERT ON public.%s FROM %s" % (self.rng.choice(LEDGERED_TARGETS), victim))
        elif r < 0.55:
            self.ddl(SUPER, "SELECT public.fz_repair()")
        else:
            other = OWNER2 if victim == OWNER else OWNER
            touched = [s["name"] for s in self.sinks().values() if s["owner"] == victim]
            ok, _ = self.ddl(SUPER, "REASSIGN OWNED BY %s TO %s" % (victim, other), touched=touched)
            if ok and self.rng.random() < 0.7:
                ok, _ = self.ddl(SUPER, "DROP OWNED BY %s" % victim, touched=touched)
                if ok:
                    self.ddl(SUPER, "DROP ROLE %s" % victim, touched=touched)
            self.ddl(SUPER, "SELECT public.fz_repair()")

    def d_drop_target(self):
        """DROP TABLE of a target (CASCADE: its sinks' foreign tables go), rare;
        its rows are then unverifiable, and the next round starts anew."""
        t = self.rng.choice(LEDGERED_TARGETS)
        self.ddl(SUPER, "DROP TABLE public.%s CASCADE" % t,
                 touched=[s["name"] for s in self.sinks().values() if s["target"] == t])

    def d_rogue_table(self):
        """a foreign table on the server paimon_sink that no create_sink made
        (naming another role's sink by its sink_id, or none): a write into it
        must be refused."""
        sinks = self.sinks()
        if not sinks:
            return
        s = self.rng.choice(list(sinks.values()))
        name = "fz_rogue_%d_%d" % (self.idx, self.rng.randrange(1000))
        opts = self.rng.choice([" OPTIONS (sink_id %s)" % sql_quote(str(s["sink_id"])), ""])
        role = self.rng.choice([OWNER2, OWNER, SUPER])
        ok, _ = self.ddl(role, "CREATE FOREIGN TABLE public.%s (id bigint, part int, payload text) SERVER paimon_sink%s"
                         % (name, opts), touched=(s["name"],))
        if not ok:
            return
        rec = self.begin(role, "write", touched=(s["name"],))
        try:
            with self.conn(role).cursor() as cur:
                self.execute(cur, rec, "INSERT INTO public.%s VALUES (%d, 1, 'rogue')" % (name, self.take_ids(1)[0]))
            self.world.accept("a write into foreign table %s, which is no sink's (%s)" % (name, opts.strip() or
                                                                                         "no options"), rec)
            self.finish(rec, "ACCEPTED")
        except psycopg2.Error as e:
            self.finish(rec, "ERROR " + describe(e))
        self.ddl(role, "DROP FOREIGN TABLE public.%s" % name)

    def hostile_prepare(self):
        """the hostile role prepares an empty transaction under a gid of the
        committer's form (a sink's next checkpoint), as any role may; the
        repair before the drain rolls it back."""
        sinks = self.sinks()
        if not sinks:
            return
        s = self.rng.choice(list(sinks.values()))
        ckpt = self.marks(s["name"], None)[1] + 1
        gid = "paimon_sink:%s:%d:%d:%s" % (self.fz.dboid, s["sink_id"], ckpt, s["default_commit_user"])
        if self.rng.random() < 0.5:
            gid += "~" + "%016x" % self.rng.randrange(1 << 64)   # the committer's form
        rec = self.begin(HOSTILE, "hostile", touched=(s["name"],))
        try:
            with self.conn(HOSTILE).cursor() as cur:
                ok = self.execute(cur, rec, "SELECT count(*) FROM pg_prepared_xacts WHERE owner = current_user")
                if ok[0][0] >= 2:
                    self.finish(rec, "skipped (2 prepared already)")
                    return
                self.execute(cur, rec, "BEGIN")
                self.execute(cur, rec, "PREPARE TRANSACTION %s" % sql_quote(gid))
            self.finish(rec, "ok")
        except psycopg2.Error as e:
            self.finish(rec, "ERROR " + describe(e))
            self.drop(HOSTILE)


def target_changes(t, c, owner):
    """target_changes lists the statements the fuzz may run on a target t
    the ledger checks (c names a new column, constraint or index; owner
    the table's new owner): changes a sink must live with, so that the
    rows it staged before one still load when their checkpoint commits.
    Each row the fuzz writes must meet each change: its ids run from the
    int64 minimum to the maximum, so a generated column of id may not
    overflow for them (id * 2 did: a row staged before the column came
    then fails its checkpoint, which on_error 'stop' keeps refusing)."""
    return [
        "ALTER TABLE %s ADD COLUMN %s text" % (t, c),
        "ALTER TABLE %s ADD COLUMN %s int DEFAULT 7" % (t, c),
        "ALTER TABLE %s ADD COLUMN %s text NOT NULL DEFAULT 'x'" % (t, c),
        "ALTER TABLE %s ADD COLUMN %s bigint GENERATED ALWAYS AS (id / 2) STORED" % (t, c),
        "ALTER TABLE %s ADD COLUMN %s bigint GENERATED BY DEFAULT AS IDENTITY" % (t, c),
        "ALTER TABLE %s ALTER COLUMN payload SET DEFAULT 'd'" % t,
        "ALTER TABLE %s ALTER COLUMN payload DROP DEFAULT" % t,
        "ALTER TABLE %s ADD CONSTRAINT %s CHECK (id <> -42)" % (t, c),
        "ALTER TABLE %s ADD CONSTRAINT %s CHECK (part IS NULL OR part >= 0) NOT VALID" % (t, c),
        "CREATE INDEX %s ON %s (payload)" % (c, t),
        "CREATE INDEX %s ON %s (part, id)" % (c, t),
        "ALTER TABLE %s SET (fillfactor = 50)" % t,
        "ALTER TABLE %s OWNER TO %s" % (t, owner),
        "ALTER TABLE %s OWNER TO %s" % (t, SUPER),
    ]


def copy_field(v):
    """copy_field writes a value for COPY's text format."""
    if v is None:
        return "\\N"
    return v.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def csv_field(v):
    """csv_field writes a value for COPY's csv format (NULL unquoted empty)."""
    if v is None:
        return ""
    return '"' + v.replace('"', '""') + '"'


# function name -> (weight, the Session method that calls it)
CALLS = collections.OrderedDict([
    ("create_sink", (3, Session.c_create_sink)), ("drop_sink", (1, Session.c_drop_sink)),
    ("create_sink_group", (2, Session.c_create_sink_group)), ("drop_sink_group", (1, Session.c_drop_sink_group)),
    ("prepare_commit", (12, Session.c_prepare_commit)), ("commit", (8, Session.c_commit)),
    ("checkpoint", (12, Session.c_checkpoint)), ("last", (3, Session.c_last)), ("status", (3, Session.c_status)),
    ("recover", (2, Session.c_recover)), ("restart_job", (2, Session.c_restart_job)),
    ("end_input", (1, Session.c_end_input)), ("maintenance", (2, Session.c_maintenance)),
    ("discard_missing_files", (1, Session.c_discard_missing)), ("reject_failing_rows", (1, Session.c_reject_failing)),
    ("faults", (1, Session.c_faults)), ("fdw", (1, Session.c_fdw))])
# DDL name -> (weight, the Session method)
DDL = collections.OrderedDict([
    ("recreate_sink", (1.5, Session.d_recreate_sink)), ("alter_target", (5, Session.d_alter_target)),
    ("undo_target", (2, Session.d_undo_target)), ("partition", (2, Session.d_partition)),
    ("foreign_table", (2, Session.d_foreign_table)), ("roles", (3, Session.d_roles)),
    ("drop_target", (0.005, Session.d_drop_target)), ("rogue_table", (1, Session.d_rogue_table))])


# ----------------------------------------------------------------------------
# Directed scenarios: the known faults, one sequence each
# ----------------------------------------------------------------------------

class Scenario(Session):
    """Scenario runs one directed sequence instead of random actions, with
    the session's tracing and ledger."""

    def __init__(self, fz, name, seed, stop):
        """__init__ names the sequence."""
        super().__init__(fz, 1, seed, stop)
        self.scenario = name
        self.done = threading.Event()

    def write(self, role, sink, n, cu="", router=False, ids=None):
        """write commits n ledgered rows (or those of ids) into sink (or
        through the routing parent) under commit user cu, as role; returns
        the ids."""
        rec = self.begin(role, "write", touched=(sink,))
        ids = list(ids) if ids is not None else self.take_ids(n)
        n = len(ids)
        try:
            with self.conn(role).cursor() as cur:
                self.execute(cur, rec, "SET paimon_sink.commit_user = %s" % sql_quote(cu))
                rec.cu_setting = cu
                self.execute(cur, rec, "BEGIN")
                target = "public.fz_router" if router else "public." + sink
                self.execute(cur, rec, "INSERT INTO %s (id, part, payload) "
                                       "SELECT g, 1, 'p' FROM unnest(%%s::bigint[]) g" % target, (ids,))
                self.execute(cur, rec, "SELECT public.fz_record(%s::bigint[], %s::regclass, 1, %s, %s::text[], %s)",
                             (ids, target, self.idx, [md5_of("p")] * n, self.round))
                self.execute(cur, rec, "COMMIT")
            self.finish(rec, "committed (%d ids)" % n)
        except psycopg2.Error as e:
            self.finish(rec, "ERROR " + describe(e))
            self.drop(role)
            self.check_ledger_error(rec, e)
        return ids

    def run(self):
        """run runs the scenario's steps, then waits for the round to end."""
        try:
            getattr(self, "s_" + self.scenario.replace("-", "_"))()
        except Exception:
            tb = traceback.format_exc()
            self.world.harness_error("%s: %s" % (self.name, tb.strip().splitlines()[-1]), tb)
        self.done.set()
        self.stop.wait()
        for role in list(self.conns):
            self.drop(role)

    def s_prepare_zero(self):
        """rows staged under J, then prepare_commit(s, 'J', 0)."""
        self.write(OWNER, "fz_a", 3, cu="J")
        self.sql(OWNER, "SELECT * FROM paimon_sink.prepare_commit('fz_a', 'J', 0)", touched=("fz_a",), cus=("J",))

    def s_prepare_negative(self):
        """rows staged under J, then prepare_commit(s, 'J', -5)."""
        self.write(OWNER, "fz_a", 3, cu="J")
        self.sql(OWNER, "SELECT * FROM paimon_sink.prepare_commit('fz_a', 'J', -5)", touched=("fz_a",), cus=("J",))

    def s_on_conflict_router(self):
        """rows committed through the routing parent, then one of them again
        with ON CONFLICT DO NOTHING through it."""
        ids = self.write(OWNER, "fz_a", 2, router=True)
        self.sql(OWNER, "SELECT * FROM paimon_sink.checkpoint('fz_a')", touched=("fz_a",))
        rec = self.begin(OWNER, "write", touched=("fz_a",))
        try:
            with self.conn(OWNER).cursor() as cur:
                self.execute(cur, rec, "INSERT INTO public.fz_router (id, part, payload) VALUES (%s, 1, 'p') "
                                       "ON CONFLICT DO NOTHING", (ids[0],))
            self.world.accept("ON CONFLICT through the routing parent (sink fz_a)", rec)
            self.finish(rec, "ACCEPTED")
        except psycopg2.Error as e:
            self.finish(rec, "ERROR " + describe(e))

    def s_reassign_drop_role(self):
        """the owner's rows prepared in a checkpoint, then REASSIGN OWNED, DROP
        OWNED and DROP ROLE of the owner."""
        self.write(OWNER, "fz_a", 2)
        self.sql(OWNER, "SELECT * FROM paimon_sink.prepare_commit('fz_a', NULL, 1)", touched=("fz_a",))
        for stmt in ("REASSIGN OWNED BY %s TO %s" % (OWNER, OWNER2), "DROP OWNED BY %s" % OWNER,
                     "DROP ROLE %s" % OWNER):
            self.ddl(SUPER, stmt, touched=("fz_a", "fz_u"))

    def s_add_column_not_null(self):
        """a NOT NULL column with a default added to the target, then writes."""
        self.ddl(SUPER, "ALTER TABLE public.fz_ta ADD COLUMN c text NOT NULL DEFAULT 'x'", touched=("fz_a",))
        self.write(OWNER, "fz_a", 2)

    def s_prepare_max(self):
        """the sink's own commit user prepared at 9223372036854775807 by a plain
        prepare_commit (not end_input), more rows, then checkpoint()."""
        self.write(OWNER, "fz_a", 2)
        self.sql(OWNER, "SELECT * FROM paimon_sink.checkpoint('fz_a')", touched=("fz_a",))
        self.write(OWNER, "fz_a", 2)
        self.sql(OWNER, "SELECT * FROM paimon_sink.prepare_commit('fz_a', NULL, 9223372036854775807)",
                 touched=("fz_a",))
        self.write(OWNER, "fz_a", 2)
        self.sql(OWNER, "SELECT * FROM paimon_sink.checkpoint('fz_a')", touched=("fz_a",))

    def s_end_input_race(self):
        """a transaction writes under commit user E, end_input(s, 'E') runs in
        another session, then the transaction commits."""
        rec = self.begin(OWNER, "write", touched=("fz_a",), cus=("E",))
        ids = self.take_ids(2)
        conn = self.connected(OWNER, rec, "BEGIN", None)
        other = self.fz.h.server(default_app="fuzz-s1-other")
        other = Server(other.host, other.port, user=OWNER, dbname=DB, app_prefix="fuzz-s1-")
        try:
            with conn.cursor() as cur:
                self.execute(cur, rec, "SET paimon_sink.commit_user = 'E'")
                rec.cu_setting = "E"
                self.execute(cur, rec, "BEGIN")
                self.execute(cur, rec, "INSERT INTO public.fz_a (id, part, payload) "
                                       "SELECT g, 1, 'p' FROM unnest(%s::bigint[]) g", (ids,))
                self.execute(cur, rec, "SELECT public.fz_record(%s::bigint[], 'public.fz_a'::regclass, 1, %s, "
                                       "%s::text[], %s)", (ids, self.idx, [md5_of("p")] * len(ids), self.round))
                rec.add("-- meanwhile, another session: SELECT * FROM paimon_sink.end_input('fz_a', 'E') -> %s"
                        % len(other.query("SELECT * FROM paimon_sink.end_input('fz_a', 'E')")))
                self.execute(cur, rec, "COMMIT")
            self.finish(rec, "committed (%d ids)" % len(ids))
        except psycopg2.Error as e:
            self.finish(rec, "ERROR " + describe(e))
            self.drop(OWNER)

    def s_ledger_deadlock(self):
        """a transaction writes rows of part 1 through the routing parent (so
        holds the parent and the sink's partition fz_a); another session
        (the superuser) locks the parent's other partitions and waits for
        the parent, as REASSIGN OWNED of the parent's owner or an ATTACH
        PARTITION (which locks the partition, then the default one) may;
        past that session's deadlock check the transaction's ledger call
        (fz_record, whose pg_get_expr() of each partition's bound locks the
        partition) waits for it, closes the cycle and, waiting last, is the
        deadlock's victim.  The transaction rolls back with its ledger rows:
        a refused write, not a failure of the ledger."""
        rec = self.begin(OWNER, "write", touched=("fz_a",))
        ids = self.take_ids(2)
        conn = self.connected(OWNER, rec, "BEGIN", None)
        if conn is None:
            return
        locker = Server(self.fz.h.sockdir, self.fz.h.port, dbname=DB).connect("fuzz-s1-locker")
        waiting = threading.Event()

        def lock():
            """lock holds the ordinary and default partitions, then waits for the parent."""
            try:
                with locker.cursor() as cur:
                    cur.execute("BEGIN")
                    cur.execute("LOCK TABLE public.fz_router_plain, public.fz_router_other IN ACCESS EXCLUSIVE MODE")
                    waiting.set()
                    cur.execute("LOCK TABLE public.fz_router IN ACCESS EXCLUSIVE MODE")
                    cur.execute("ROLLBACK")
            except psycopg2.Error as e:
                note("%s: the locking session: %s" % (self.name, describe(e)))
            finally:
                waiting.set()
        t = threading.Thread(target=lock, daemon=True)
        try:
            with conn.cursor() as cur:
                self.execute(cur, rec, "SET paimon_sink.commit_user = ''")
                rec.cu_setting = ""
                self.execute(cur, rec, "BEGIN")
                self.execute(cur, rec, "INSERT INTO public.fz_router (id, part, payload) "
                                       "SELECT g, 1, 'p' FROM unnest(%s::bigint[]) g", (ids,))
                t.start()
                waiting.wait(30)
                # the other session waits for the parent now; its deadlock
                # check (deadlock_timeout, 1 s) passes before ours begins
                pid = locker.get_backend_pid()
                deadline = time.monotonic() + 30
                while not self.fz.ctl.query("SELECT 1 FROM pg_catalog.pg_locks WHERE pid = %s AND NOT granted",
                                            (pid,)) and time.monotonic() < deadline:
                    time.sleep(0.1)
                time.sleep(1.5)
                rec.add("-- meanwhile, another session (the superuser): BEGIN; LOCK TABLE public.fz_router_plain, "
                        "public.fz_router_other IN ACCESS EXCLUSIVE MODE; LOCK TABLE public.fz_router IN ACCESS "
                        "EXCLUSIVE MODE (waits for this transaction)")
                self.execute(cur, rec, "SELECT public.fz_record(%s::bigint[], 'public.fz_router'::regclass, 1, %s, "
                                       "%s::text[], %s)", (ids, self.idx, [md5_of("p")] * len(ids), self.round))
                self.execute(cur, rec, "COMMIT")
            self.finish(rec, "committed (%d ids)" % len(ids))
        except psycopg2.Error as e:
            self.finish(rec, "ERROR " + describe(e))
            self.drop(OWNER)
            self.check_ledger_error(rec, e)
        t.join(60)
        close_quietly(locker)
        # the scenario shows something only when the cycle closed where it means to
        if not (rec.outcome.startswith("ERROR 40P01") and rec.sql[-1].startswith("SELECT public.fz_record(")):
            self.world.harness_error("%s: ledger-deadlock: the write was not the deadlock's victim in its ledger "
                                     "call" % self.name, rec.line(self.world.t0))

    def s_target_changes(self):
        """rows of the edge ids staged into each sink under its own commit
        user, then each change target_changes lists run on each target the
        ledger checks, then checkpoint() of each sink: the rows must load
        (a change that one of them fails would stop its sink, on_error
        'stop', and the drain would fail)."""
        edges = [("fz_a", OWNER, [I64_MAX, -1]), ("fz_b", OWNER2, [I64_MIN, 0]),
                 ("fz_u", OWNER, [I32_MAX, I32_MAX + 1])]
        for sink, role, ids in edges:
            self.write(role, sink, 0, ids=ids)
        for t in LEDGERED_TARGETS:
            for i in range(len(target_changes(t, "c", OWNER2))):
                self.ddl(SUPER, target_changes("public." + t, "c9_%s_%d" % (t, i), OWNER2)[i],
                         touched=[sink for sink, _, _ in edges])
        for sink, role, _ in edges:
            self.sql(SUPER, "SELECT * FROM paimon_sink.checkpoint(%s)", (sink,), touched=(sink,))

    # a valid value of each argument, by its name (else by its type), for the sweep
    SWEEP_BY_NAME = {"sink_name": "fz_b", "group_name": "fz_g", "commit_user": "J1", "checkpoint_id": 1,
                     "restored_checkpoint_id": 1, "writer_id": 0, "timeout_ms": 1000, "mode": "restore",
                     "point": "committer_maintenance", "action": "error", "times": 1, "retain_last": 100,
                     "target": "public.fz_scratch", "sinks": ["fz_b"], "on_error": "stop",
                     "row_kind_column": "_row_kind"}
    SWEEP_BY_TYPE = {"text": "x", "bigint": 1, "integer": 1, "boolean": False, "interval": "1 day",
                     "regclass": "public.fz_scratch", "text[]": ["x"], "jsonb": "{}", "oid": 0}

    def s_null_arguments(self):
        """every function of the schema paimon_sink (read from the catalog, so
        that a new one is covered too) called as the superuser and as a sink
        owner with each of its arguments NULL in turn, the others valid, and
        with every argument NULL; a crash or a lost row is the finding."""
        self.write(OWNER2, "fz_b", 3, cu="J1")
        ok, fns = self.sql(SUPER, "SELECT p.proname, coalesce(p.proargnames[1:p.pronargs], '{}'), "
                                  "ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t) "
                                  "FROM pg_proc p WHERE p.pronamespace = 'paimon_sink'::regnamespace "
                                  "AND p.prorettype <> 'trigger'::regtype AND p.pronargs > 0 ORDER BY 1",
                           kind="sweep")
        for name, argnames, types in (fns if ok else []):
            argnames = list(argnames) + [""] * (len(types) - len(argnames))
            valid = [self.SWEEP_BY_NAME.get(a, self.SWEEP_BY_TYPE.get(t)) for a, t in zip(argnames, types)]
            if name == "create_sink":
                valid[0] = "fz_sweep"
            stmt = "SELECT * FROM paimon_sink.%s(%s)" % (name, ", ".join("%%s::%s" % t for t in types))
            variants = [valid[:i] + [None] + valid[i + 1:] for i in range(len(types))] + [[None] * len(types)]
            for args in variants:
                for role in (SUPER, OWNER2):
                    if name in ("drop_sink", "drop_sink_group") and args[0] is not None:
                        continue     # the sweep keeps its sink
                    ok, res = self.sql(role, stmt, args, touched=("fz_b",), cus=("J1",))
                    if not ok and unknown_outcome(res):
                        self.fz.wait_ready()     # a crash: the next call needs the server back


# ----------------------------------------------------------------------------
# The killer
# ----------------------------------------------------------------------------

class Killer(threading.Thread):
    """Killer makes at most one kill in a round (in ~80% of them), at a
    random moment: SIGKILL to a session's backend or to a worker of
    paimon_sink, or an immediate stop and a start."""

    def __init__(self, fz, rng, stop, seconds):
        """__init__ draws whether and when."""
        super().__init__(daemon=True, name="killer")
        self.fz, self.rng, self.stop = fz, rng, stop
        self.at = rng.uniform(0.2, 0.8) * seconds if rng.random() < 0.8 else None
        self.kind = rng.choices(["backend", "worker", "immediate"], [40, 35, 25])[0]
        self.error = None

    def run(self):
        """run waits for the moment and kills."""
        if self.at is None or self.stop.wait(self.at):
            return
        try:
            self.kill()
        except Exception as e:
            self.error = "the kill (%s) failed: %s" % (self.kind, describe(e))

    def kill(self):
        """kill makes the drawn kill and records it in the world."""
        fz = self.fz
        if self.kind == "immediate":
            fz.world.kill("immediate", None, "pg_ctl stop -m immediate")
            log("  kill: pg_ctl stop -m immediate, then start")
            fz.h.sh("ps_cluster_stop", fz.cluster, "immediate")
            fz.start_server()
            return
        if self.kind == "backend":
            q = ("SELECT pid, application_name FROM pg_stat_activity WHERE datname = %s "
                 "AND application_name LIKE 'fuzz-s%%' AND pid <> pg_backend_pid()")
        else:
            q = ("SELECT pid, backend_type FROM pg_stat_activity WHERE backend_type LIKE 'paimon_sink%%' "
                 "AND (datname = %s OR datname IS NULL)")
        try:
            rows = fz.ctl.query(q, (DB,), timeout_ms=5000)
        except psycopg2.Error as e:
            log("  kill: none (%s: the server is not serving)" % describe(e))
            return
        if not rows:
            return
        pid, what = self.rng.choice(rows)
        fz.world.kill(self.kind, pid, what)
        log("  kill: SIGKILL to pid %d (%s)" % (pid, what))
        os.kill(pid, signal.SIGKILL)


# ----------------------------------------------------------------------------
# The driver
# ----------------------------------------------------------------------------

SETUP_DB_SQL = """
CREATE EXTENSION IF NOT EXISTS paimon_sink;
CREATE TABLE IF NOT EXISTS public.fz_ledger (
    id bigint PRIMARY KEY, round int NOT NULL, sess int NOT NULL, dest oid NOT NULL, sink_id int,
    commit_user text, writer_id int, tx_start float8 NOT NULL, md5 text NOT NULL);
GRANT SELECT, INSERT, UPDATE ON public.fz_ledger TO PUBLIC;
CREATE OR REPLACE FUNCTION public.fz_record(ids bigint[], rel regclass, part int, sess int, md5s text[], rnd int)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r oid := rel;
    s record;
BEGIN
    -- a routing parent: the partition that takes part (else its default)
    IF (SELECT relkind FROM pg_class WHERE oid = rel) = 'p' THEN
        SELECT c.oid INTO r FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = rel AND pg_get_expr(c.relpartbound, c.oid) = format('FOR VALUES IN (%s)', part);
        IF r IS NULL THEN
            SELECT c.oid INTO r FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = rel AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT';
        END IF;
    END IF;
    SELECT d.sink_id, d.target_table::oid AS target, d.default_commit_user INTO s
      FROM paimon_sink.sink_definition d WHERE d.foreign_table::oid = r;
    INSERT INTO public.fz_ledger
    SELECT u.id, rnd, sess, CASE WHEN s.sink_id IS NULL THEN r ELSE s.target END, s.sink_id,
           CASE WHEN s.sink_id IS NULL THEN NULL
                ELSE coalesce(nullif(current_setting('paimon_sink.commit_user'), ''), s.default_commit_user) END,
           current_setting('paimon_sink.writer_id')::int, extract(epoch FROM now()), u.md5
      FROM unnest(ids, md5s) AS u(id, md5)
    -- a row moved by an UPDATE of the routing parent: where it is now
    ON CONFLICT (id) DO UPDATE SET dest = excluded.dest, sink_id = excluded.sink_id,
        commit_user = excluded.commit_user, writer_id = excluded.writer_id;
END
$$;
GRANT EXECUTE ON FUNCTION public.fz_record(bigint[], regclass, int, int, text[], int) TO PUBLIC;
CREATE OR REPLACE FUNCTION public.fz_repair() RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r text;
    t text;
    f record;
BEGIN
    FOREACH r IN ARRAY ARRAY['fz_owner', 'fz_owner2', 'fz_writer', 'fz_hostile'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I LOGIN', r);
        END IF;
        EXECUTE format('ALTER ROLE %I LOGIN', r);
        EXECUTE format('ALTER ROLE %I RESET ALL', r);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['fz_ta', 'fz_tb', 'fz_tu'] LOOP
        IF to_regclass('public.' || t) IS NULL AND to_regclass('public.' || t || '_r') IS NOT NULL THEN
            EXECUTE format('ALTER TABLE public.%I RENAME TO %I', t || '_r', t);
        END IF;
    END LOOP;
    -- foreign tables renamed by the fuzz get their names back
    FOR f IN SELECT c.relname FROM paimon_sink.sink_definition d JOIN pg_class c ON c.oid = d.foreign_table
              WHERE c.relname LIKE '%\\_r' AND to_regclass('public.' || left(c.relname, -2)) IS NULL LOOP
        EXECUTE format('ALTER FOREIGN TABLE public.%I RENAME TO %I', f.relname, left(f.relname, -2));
    END LOOP;
    FOREACH r IN ARRAY ARRAY['fz_owner', 'fz_owner2'] LOOP
        EXECUTE format('GRANT CREATE ON SCHEMA public TO %I', r);
        EXECUTE format('GRANT EXECUTE ON FUNCTION paimon_sink.create_sink(%s) TO %I', '""" + CREATE_SINK_SIG + """', r);
        FOREACH t IN ARRAY ARRAY['fz_ta', 'fz_tb', 'fz_tu', 'fz_scratch', 'fz_router_other'] LOOP
            IF to_regclass('public.' || t) IS NOT NULL THEN
                EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON public.%I TO %I', t, r);
            END IF;
        END LOOP;
    END LOOP;
    FOR f IN SELECT c.oid::regclass AS ft FROM paimon_sink.sink_definition d JOIN pg_class c ON c.oid = d.foreign_table
    LOOP
        EXECUTE format('GRANT INSERT ON %s TO fz_owner, fz_owner2, fz_writer', f.ft);
    END LOOP;
    IF to_regclass('public.fz_router') IS NOT NULL THEN
        GRANT INSERT ON public.fz_router TO fz_owner, fz_owner2, fz_writer;
    END IF;
END
$$;
SELECT public.fz_repair();
"""

ROUND_SQL_SUPER = """
CREATE TABLE public.fz_ta (id bigint PRIMARY KEY, part int, payload text);
CREATE TABLE public.fz_tb (id bigint, part int, payload text);
CREATE INDEX fz_tb_id ON public.fz_tb (id);
CREATE TABLE public.fz_tu (id bigint PRIMARY KEY, part int, payload text);
CREATE TABLE public.fz_scratch (id bigint, part int, payload text);
SELECT public.fz_repair();
"""
ROUND_SQL_OWNER = """
SELECT * FROM paimon_sink.create_sink('fz_a', 'public.fz_ta', buckets => 2);
SELECT * FROM paimon_sink.create_sink('fz_u', 'public.fz_tu', mode => 'upsert', buckets => 2);
CREATE TABLE public.fz_router (id bigint, part int, payload text) PARTITION BY LIST (part);
CREATE TABLE public.fz_router_plain PARTITION OF public.fz_router FOR VALUES IN (0);
CREATE TABLE public.fz_router_other PARTITION OF public.fz_router DEFAULT;
ALTER TABLE public.fz_router ATTACH PARTITION public.fz_a FOR VALUES IN (1);
"""
ROUND_SQL_OWNER2 = "SELECT * FROM paimon_sink.create_sink('fz_b', 'public.fz_tb', buckets => 4, bucket_key => '{id}');"

CATALOG_SQL = """
SELECT d.sink_id, d.sink_name, f.relname, t.relname, d.mode, d.row_kind_column, d.default_commit_user,
       s.owner_role::oid, r.rolname
  FROM paimon_sink.sink_definition d
  JOIN paimon_sink.sinks s ON s.sink_id = d.sink_id
  LEFT JOIN pg_class f ON f.oid = d.foreign_table
  LEFT JOIN pg_class t ON t.oid = d.target_table
  LEFT JOIN pg_roles r ON r.oid = s.owner_role
"""


class Failure:
    """Failure is one failed check of a round: its kind, its subject (the
    sink or stream), a detail line and the signature that tells distinct
    faults apart in the summary."""

    def __init__(self, rnd, kind, subject, detail, sinks=(), cus=(), t=None):
        """__init__ records it."""
        self.round, self.kind, self.subject, self.detail = rnd, kind, subject, detail
        self.sinks, self.cus, self.t = set(sinks), set(cus), t

    def signature(self):
        """signature groups failures of one kind of cause: the kind and the
        detail with numbers, sink, table and commit user names taken out."""
        d = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "U", self.detail)
        d = re.sub(r"\b(fz|c)\w*|\bJ\d\b|\bjob-\d+|\d+", "X", d)
        d = re.sub(r"\(streams: [^)]*\)", "", d)
        if self.kind in ("missing", "doubled", "phantom"):
            d = re.sub(r"e\.g\. ids .*", "", d)
        return "%s: %s" % (self.kind, d[:200])


class Fuzz:
    """Fuzz is the run: the cluster, the rounds, their checks and the
    totals."""

    def __init__(self, cfg):
        """__init__ prepares the cluster object and the counters."""
        self.cfg = cfg
        self.cluster = "fuzz"
        self.h = Cluster(self.cluster, "fuzz", Abort)
        self.world = World()
        self.rng = random.Random(cfg.seed)
        self.rounds = 0
        self.calls = 0
        self.worker_crashes = 0
        self.invariant_failures = 0
        self.fuzz_kills = collections.Counter()
        self.failures = []
        self.harness_errors = 0
        self.reproduced = collections.Counter()
        self.probes = 0
        self.log_offsets = {}
        self.ctl = None
        self.dboid = None
        self.traces = []
        self.scenario_found = collections.OrderedDict()
        self.details = []      # lines print_details prints when the run fails

    def detail(self, head, lines):
        """detail keeps, for print_details, a failure's head line and its
        detail lines (the first 40 failures' only)."""
        if sum(1 for d in self.details if d.startswith("---- ")) < 40:
            self.details.append("---- " + head)
            self.details += ["    " + line for line in lines]

    def print_details(self, max_lines=400, width=1500):
        """print_details prints, for a failed run, what the round lines only
        sum up (test/check shows a suite's output, not the logs the run
        kept): each harness error's traceback or error and statements, and
        each reproduction, at most max_lines lines of at most width
        characters."""
        if not self.details:
            return
        print("----- details of the failures (logs/fuzz.log has them all)")
        for line in self.details[:max_lines]:
            print(line if len(line) <= width else line[:width] + "...[%d chars]" % len(line))
        if len(self.details) > max_lines:
            print("    ...[%d more lines in logs/fuzz.log]" % (len(self.details) - max_lines))

    # ---- the server ------------------------------------------------------------------
    def setup(self):
        """setup installs what is missing, builds (as root), makes the
        cluster and the database."""
        h, cfg = self.h, self.cfg
        h.sh("ps_ensure_packages")
        h.create_workdir()
        RUN.open(os.path.join(h.work, "logs", "fuzz.log"))
        if cfg.skip_build or os.geteuid() != 0:
            log("build: skipped (%s), using the installed extension"
                % ("--skip-build" if cfg.skip_build else "not root"))
        else:
            log("build: make COPT=-Werror && make install")
            if h.build_install(os.path.join(h.work, "logs", "build.log")) != 0:
                raise Abort("build or make install failed (see logs/build.log)")
        # log_min_messages = warning, not log: the server log ranks LOG above
        # ERROR, so "log" would leave every WARNING and ERROR out (a
        # deadlock's cycle, a refused call's DETAIL), keeping LOG and FATAL
        h.create("\n# ---- test/fuzz ----\nmax_connections = 150\nmax_prepared_transactions = 20\n"
                 "restart_after_crash = on\nlog_min_messages = warning\n"
                 "log_line_prefix = '%m [%p] {%n} %u@%d %a: '\n"
                 "paimon_sink.committer_timeout = '15s'\npaimon_sink.handoff_timeout = '10s'\n"
                 "paimon_sink.log_commit_min_duration = -1\n")
        env = os.environ.get("PS_SERVER_ENV", "")
        if env:
            log("server environment (PS_SERVER_ENV): %s" % env)
        self.start_server()
        self.ctl = h.server(default_app="fuzz-ctl")
        self.ctl.query("CREATE DATABASE %s" % DB)
        self.ctl = Server(h.sockdir, h.port, dbname=DB, default_app="fuzz-ctl")
        self.init_db()
        log("cluster: socket %s port %d, database %s (oid %s)" % (h.sockdir, h.port, DB, self.dboid))

    def start_server(self):
        """start_server starts the cluster (with PS_SERVER_ENV) and waits
        until it accepts connections; Abort when it does not start."""
        try:
            self.h.start()
        except subprocess.CalledProcessError:
            raise Abort("the server did not start (its log's tail and the reason are above)")

    def init_db(self):
        """init_db makes the extension, the ledger, its functions and the roles."""
        self.ctl.query(SETUP_DB_SQL)
        self.dboid = self.ctl.query("SELECT oid FROM pg_database WHERE datname = %s", (DB,))[0][0]
        if not self.ctl.wait_writers_ready(60):
            raise Abort("the writers of database %s did not start" % DB)

    def as_role(self, role, sql):
        """as_role runs sql as role on a fresh connection of its own."""
        Server(self.h.sockdir, self.h.port, user=role, dbname=DB, default_app="fuzz-setup").query(sql)

    def wait_ready(self, seconds=90):
        """wait_ready waits until the server accepts connections and the
        writers of the database serve (after a kill); Abort when not."""
        if not self.ctl.wait_writers_ready(seconds, app="fuzz-ready"):
            raise Abort("the server or its writers did not come back within %d s" % seconds)

    def release_pauses(self, paused):
        """release_pauses releases a fault point that has held a process for
        more than 1-2 s (a pause the superuser armed: its release is the
        fuzz's to make, as test/soak does); paused maps point to when it was
        first seen paused."""
        now = time.monotonic()
        for point, pid in self.ctl.query("SELECT point, paused_pid FROM paimon_sink.faults "
                                         "WHERE paused_pid IS NOT NULL", timeout_ms=5000):
            first = paused.setdefault((point, pid), now)
            if now - first > self.rng.uniform(1, 2):
                log("  release_fault(%s): pid %d paused there %.1f s" % (point, pid, now - first))
                self.ctl.query("SELECT paimon_sink.release_fault(%s)", (point,), timeout_ms=5000)

    def refresh(self):
        """refresh reads the sinks, groups and commit users' marks into the world."""
        sinks = {}
        for (sid, name, ft, target, mode, rkc, own, owner_oid, owner) in self.ctl.query(CATALOG_SQL, timeout_ms=5000):
            sinks[name] = dict(sink_id=sid, name=name, ft=ft, target=target, mode=mode, rkc=rkc,
                               default_commit_user=own, owner=owner or str(owner_oid))
        groups = [r[0] for r in self.ctl.query("SELECT group_name FROM paimon_sink.sink_group", timeout_ms=5000)]
        rows = self.ctl.query("SELECT sink_id, commit_user, last_prepared_checkpoint, last_committed_checkpoint, "
                              "fence_epoch FROM paimon_sink.commit_user_state", timeout_ms=5000)
        states = {(r[0], r[1]): (r[2], r[3]) for r in rows}
        epochs = {(r[0], r[1]): r[4] for r in rows}
        self.world.set_catalog(sinks, groups, states, epochs)

    def log_paths(self):
        """log_paths lists the logs to scan for crashes: the server log and
        the files a sanitizer writes where PS_SERVER_ENV's *SAN_OPTIONS give
        a log_path."""
        paths = [self.h.server_log]
        for m in re.finditer(r"SAN_OPTIONS=\S*?log_path=([^:\s]+)", os.environ.get("PS_SERVER_ENV", "")):
            paths += sorted(glob.glob(m.group(1) + "*"))
        return paths

    def log_since(self):
        """log_since returns what the logs gained since the last call, as
        (path, text) pairs."""
        out = []
        for p in self.log_paths():
            try:
                size = os.path.getsize(p)
            except OSError:
                continue
            off = self.log_offsets.get(p, 0)
            if size < off:
                off = 0
            with open(p, "rb") as f:
                f.seek(off)
                out.append((p, f.read(size - off).decode("utf-8", "replace")))
            self.log_offsets[p] = size
        return out

    # ---- a round -----------------------------------------------------------------------
    def round_setup(self, n):
        """round_setup makes the round's targets, sinks and routing parent."""
        self.world.new_round(n)
        self.ctl.query(ROUND_SQL_SUPER)
        self.as_role(OWNER, ROUND_SQL_OWNER)
        self.as_role(OWNER2, ROUND_SQL_OWNER2)
        self.ctl.query("SELECT public.fz_repair()")
        self.refresh()

    def run_round(self, n, seconds, scenario=None):
        """run_round runs round n for seconds (or scenario), its checks and its
        teardown; returns the failures found."""
        self.log_since()
        self.round_setup(n)
        t_start = time.time()
        stop = threading.Event()
        if scenario:
            sessions = [Scenario(self, scenario, self.cfg.seed, stop)]
        else:
            sessions = [Session(self, i, self.cfg.seed, stop) for i in range(1, self.cfg.sessions + 1)]
        killer = Killer(self, random.Random("%d-%d-kill" % (self.cfg.seed, n)), stop, seconds) \
            if self.cfg.kills and not scenario else None
        for t in sessions + ([killer] if killer else []):
            t.start()
        deadline = time.monotonic() + seconds
        # a scenario runs to its end (at most 5 minutes), and at least seconds
        paused = {}
        while time.monotonic() < deadline or (scenario and not sessions[0].done.is_set()
                                              and time.monotonic() < deadline + 300):
            try:
                self.refresh()
                self.release_pauses(paused)
            except psycopg2.Error:
                pass
            time.sleep(0.5)
        stop.set()
        # faults off first: a process paused at a point the superuser armed
        # holds its session until released
        for _ in range(20):
            try:
                self.ctl.query("SELECT paimon_sink.clear_faults()", timeout_ms=5000)
                break
            except psycopg2.Error:
                time.sleep(0.5)
        failures = []
        hang = time.monotonic() + 90
        for t in sessions + ([killer] if killer else []):
            t.join(max(0.0, hang - time.monotonic()))
        stuck = [t.name for t in sessions if t.is_alive()]
        if killer is not None:
            if killer.is_alive():
                stuck.append("killer")
            if killer.error:
                raise Abort(killer.error)
        if stuck:
            for t in sessions:
                if t.is_alive() and t.current is not None:
                    log("  %s is stuck in: %s" % (t.name, t.current.line(self.world.t0)[:1000]))
            self.diagnose()
            raise Abort("round %d: %s did not stop within 90 s (a hang)" % (n, ", ".join(stuck)))
        for s in sessions:
            self.traces.append(s)
        self.calls += sum(len(s.trace) for s in sessions)
        self.wait_ready()
        drain_session = Session(self, 0, self.cfg.seed, stop)
        self.traces.append(drain_session)
        failures += self.phase("drain", n, lambda: self.repair_and_drain(n, drain_session))
        if self.cfg.tamper and n == 1:
            self.tamper()
        failures += self.phase("in doubt", n, lambda: self.check_in_doubt(n))
        failures += self.phase("ledger", n, lambda: self.check_ledger(n))
        failures += self.phase("probe", n, lambda: self.probe(n, drain_session))
        failures += self.check_accepted(n)
        crashes = self.check_logs(n, sessions)
        failures += crashes
        self.calls += len(drain_session.trace)
        errs = collections.OrderedDict()
        for summary, detail in self.world.harness_errors:
            errs.setdefault(summary, []).append(detail)
            note("%s: %s" % (summary, detail))
        for summary, details in errs.items():
            log("  HARNESS ERROR (%dx): %s" % (len(details), summary))
            self.detail("round %d, harness error (%dx): %s" % (n, len(details), summary), details[0].splitlines())
        self.harness_errors += len(self.world.harness_errors)
        kills = collections.Counter(k[1] for k in self.world.kills)
        self.fuzz_kills.update(kills)
        nc = sum(1 for f in crashes)
        ni = len(failures) - nc
        self.worker_crashes += nc
        self.invariant_failures += ni
        counts = collections.Counter()
        for s in sessions:
            counts.update(s.counts)
        log("round %d%s: %.0fs calls=%d writes=%d ddl=%d kills=%s crashes=%d invariant_failures=%d %s" % (
            n, " (%s)" % scenario if scenario else "", time.time() - t_start, sum(len(s.trace) for s in sessions),
            counts["write"], counts["ddl"], ",".join("%s:%d" % kv for kv in sorted(kills.items())) or "0", nc, ni,
            "ok" if not failures else "FAIL"))
        undrained = set().union(*(f.sinks for f in failures if f.kind == "drain"))
        for f in failures:
            log("  %s %s: %s" % ("CRASH" if f.kind == "crash" else "INVARIANT", f.kind, f.detail))
            # the first three of each kind of failure get their reproduction (a
            # long run repeats them by the hundred), and every loss of rows from
            # a sink whose drain did not fail (no commit failing for them all)
            self.reproduced[f.signature()] += 1
            if self.reproduced[f.signature()] <= 3 or f.kind == "missing" and not f.sinks & undrained:
                self.reproduction(f, sessions + [drain_session])
        self.failures += failures
        self.teardown(n)
        return failures

    def phase(self, what, n, fn, attempts=3):
        """phase runs a check phase (fn returns its failures); when it loses
        the server (a crash-restart under it: Retry, or a connection that
        fails) it waits for the server and runs it again, at most attempts
        times, then records that as a failure of its own."""
        for attempt in range(1, attempts + 1):
            try:
                return fn()
            except (Retry, psycopg2.OperationalError, psycopg2.InterfaceError) as e:
                log("  %s: lost the server (%s); waiting for it, then again" % (what, describe(e)))
                self.wait_ready()
        return [Failure(n, what, "-", "the %s lost the server %d times (a crash-restart each time: see the crashes)"
                        % (what, attempts))]

    # ---- recovery and drain -----------------------------------------------------------
    def repair_and_drain(self, n, d):
        """repair_and_drain clears faults, rolls back the hostile role's
        prepared transactions, repairs roles, grants and names, drops groups,
        then drains every sink whose target exists with valid calls (traced as
        session s0); each failed call is a "drain" failure."""
        failures = []
        d.sql(SUPER, "SELECT paimon_sink.clear_faults()", kind="repair")
        ok, rows = d.sql(SUPER, "SELECT gid FROM pg_prepared_xacts WHERE owner IS DISTINCT FROM current_user",
                         kind="repair")
        for (gid,) in (rows if ok else []):
            d.sql(SUPER, "ROLLBACK PREPARED %s" % sql_quote(gid), kind="repair")
        d.sql(SUPER, "SELECT public.fz_repair()", kind="repair")
        ok, rows = d.sql(SUPER, "SELECT group_name FROM paimon_sink.sink_group", kind="repair")
        for (g,) in (rows if ok else []):
            d.sql(SUPER, "SELECT paimon_sink.drop_sink_group(%s)", (g,), kind="repair")
        # a column the fuzz added to a foreign table goes again
        d.sql(SUPER, "DO $$DECLARE f record; BEGIN FOR f IN SELECT a.attrelid::regclass AS ft FROM pg_attribute a "
                     "JOIN paimon_sink.sink_definition d ON d.foreign_table = a.attrelid WHERE a.attname = 'zz' "
                     "AND NOT a.attisdropped LOOP EXECUTE format('ALTER FOREIGN TABLE %s DROP COLUMN zz', f.ft); "
                     "END LOOP; END$$", kind="repair")
        self.refresh()
        sinks = self.world.snapshot()[0]
        for s in sinks.values():
            if s["target"] is None:
                continue     # its target was dropped: its rows are unverifiable, its commits refused by design
            failures += self.drain_sink(n, d, s)
        return failures

    def drain_sink(self, n, d, s):
        """drain_sink commits everything a sink holds: its prepared
        checkpoints, its own commit user's rows (checkpoint() until no row)
        and, for every other stream with staged rows (named by the WARNING of
        an empty prepare of commit user fz.drain), the next checkpoint id;
        each prepare and commit names the stream's fence epoch (a job's
        commit user refuses one that does not)."""
        failures = []
        name = s["name"]

        def call(stmt, args, cu=None):
            """call runs one drain call; a failure is recorded once per stream."""
            ok, res = d.sql(SUPER, stmt, args, kind="drain", touched=(name,), cus=(cu,))
            if not ok and unknown_outcome(res):
                raise Retry(describe(res))
            if not ok:
                fn = re.search(r"paimon_sink\.(\w+)", stmt).group(1)
                if failures:
                    failures[0].cus.add(cu)     # one failure per sink, naming its streams
                else:
                    failures.append(Failure(n, "drain", name, "sink %s (owner %s): %s() failed: %s" % (
                        name, s["owner"], fn, describe(res)), sinks=(name,), cus=(cu,)))
            return ok, res

        epochs = {}

        def marks():
            """marks reads the sink's commit users' marks (and fence epochs) now."""
            ok, rows = d.sql(SUPER, "SELECT commit_user, last_prepared_checkpoint, last_committed_checkpoint, "
                                    "fence_epoch FROM paimon_sink.commit_user_state WHERE sink_id = %s",
                             (s["sink_id"],), kind="drain")
            epochs.update({r[0]: r[3] for r in rows} if ok else {})
            return {r[0]: (r[1], r[2]) for r in rows} if ok else {}
        m = marks()
        for cu, (lp, lc) in m.items():
            if lp > lc:
                call("SELECT * FROM paimon_sink.commit(%s, %s, %s, %s)", (name, cu, lp, epochs[cu]), cu)
        own_ended = marks().get(s["default_commit_user"], (0, 0))[1] >= I64_MAX   # (a commit just now may end it)
        for _ in range(0 if own_ended else 10):
            ok, rows = call("SELECT count(*) FROM paimon_sink.checkpoint(%s)", (name,), s["default_commit_user"])
            if not ok or rows[0][0] == 0:
                break
        done = set()
        for attempt in range(4):
            m = marks()
            lp, lc = m.get("fz.drain", (0, 0))
            k = max(lp, lc) + 1
            conn = d.conn(SUPER)
            del conn.notices[:]
            ok, _ = call("SELECT count(*) FROM paimon_sink.prepare_commit(%s, 'fz.drain', %s)", (name, k), "fz.drain")
            if not ok:
                break
            call("SELECT count(*) FROM paimon_sink.commit(%s, 'fz.drain', %s)", (name, k), "fz.drain")
            streams = set()
            for text in conn.notices:
                for cu, wid, rows in STREAM_RE.findall(text):
                    streams.add(cu)
            streams -= done
            if not streams:
                break
            for cu in sorted(streams):
                done.add(cu)
                lp, lc = marks().get(cu, (0, 0))
                if cu == s["default_commit_user"] and lc < I64_MAX:
                    call("SELECT count(*) FROM paimon_sink.checkpoint(%s)", (name,), cu)
                    continue
                if lc >= I64_MAX or lp >= I64_MAX:
                    failures.append(Failure(n, "drain", name, "sink %s: rows staged under commit user %s after its "
                                            "checkpoint id reached %d can never be committed" % (
                                                name, cu, I64_MAX), sinks=(name,), cus=(cu,)))
                    continue
                k = max(lp, lc) + 1
                e = epochs.get(cu)
                ok, _ = call("SELECT count(*) FROM paimon_sink.prepare_commit(%s, %s, %s, fence_epoch => %s)",
                             (name, cu, k, e), cu)
                if ok:
                    call("SELECT count(*) FROM paimon_sink.commit(%s, %s, %s, %s)", (name, cu, k, e), cu)
        if failures and len(failures[0].cus) > 1:
            failures[0].detail += " (streams: %s)" % ", ".join(sorted(failures[0].cus))
        return failures

    def check_in_doubt(self, n, seconds=15):
        """check_in_doubt waits up to seconds for prepared transactions with a
        paimon_sink: gid to be finished; those left are a failure."""
        deadline = time.monotonic() + seconds
        while True:
            rows = self.ctl.query("SELECT gid, owner, database FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'")
            if not rows or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        if not rows:
            return []
        return [Failure(n, "in_doubt", "-", "%d prepared transaction(s) with a paimon_sink: gid left %d s after the "
                        "drain: %s" % (len(rows), seconds, ", ".join("%s (owner %s, db %s)" % r for r in rows[:4])))]

    def tamper(self):
        """tamper breaks what the checks look at, once (FUZZ_TAMPER), to show
        that they fail: a target row deleted, copied or added, a prepared
        transaction with our gid, or a crash line in the server log."""
        for kind in self.cfg.tamper:
            log("  FUZZ_TAMPER=%s" % kind)
            if kind == "missing":
                # a row of the ordinary partition: no decision ever exempts it
                self.ctl.query("DELETE FROM public.fz_router_plain WHERE ctid = (SELECT min(ctid) "
                               "FROM public.fz_router_plain)")
            elif kind == "doubled":
                self.ctl.query("INSERT INTO public.fz_tb (id, part, payload) "
                               "SELECT id, part, payload FROM public.fz_tb LIMIT 1")
            elif kind == "phantom":
                self.ctl.query("INSERT INTO public.fz_tb (id, part, payload) VALUES (-777, 0, 'phantom')")
            elif kind == "in_doubt":
                c = self.ctl.connect("fuzz-tamper")
                c.autocommit = True
                with c.cursor() as cur:
                    cur.execute("BEGIN")
                    cur.execute("PREPARE TRANSACTION 'paimon_sink:tamper'")
                c.close()
            elif kind == "crash":
                with open(self.h.server_log, "a") as f:
                    f.write("%s [1] {%.3f} @ : LOG:  server process (PID 424242) was terminated by signal 11: "
                            "Segmentation fault (FUZZ_TAMPER)\n" % (time.strftime("%Y-%m-%d %H:%M:%S"), time.time()))

    def check_ledger(self, n):
        """check_ledger compares the ledger with the tables: missing (not
        exempt by a decision, not rejected), doubled, phantom (no ledger row,
        another table, another payload); one failure per stream and kind."""
        ledger = self.ctl.query("SELECT id, dest, sink_id, commit_user, tx_start, md5, sess FROM public.fz_ledger "
                                "WHERE round = %s", (n,), timeout_ms=120000)
        by_id = {r[0]: r for r in ledger}
        dests = set(r[1] for r in ledger)
        for t in CHECKED_TABLES:
            oid = self.ctl.query("SELECT to_regclass(%s)::oid", ("public." + t,))[0][0]
            if oid is not None:
                dests.add(oid)
        names = dict(self.ctl.query("SELECT sink_id, sink_name FROM paimon_sink.sink_definition"))
        rejected = set(r[0] for r in self.ctl.query(
            "SELECT (row_data->>'id')::bigint FROM paimon_sink.rejected_row WHERE row_data ? 'id'") if r[0] is not None)
        decisions = self.world.decisions
        found = {}
        gone = set()
        bad = collections.defaultdict(list)   # (kind, subject) -> ids
        # a partitioned table (a sink's target may be one) holds its rows in
        # its leaves: each leaf is read once, and a row of such a dest may be
        # in any of them
        leaves = {}
        for dest in sorted(dests):
            kind = self.ctl.query("SELECT relkind FROM pg_class WHERE oid = %s", (dest,))
            if not kind:
                gone.add(dest)
                continue
            leaves[dest] = {dest}
            if kind[0][0] == "p":
                leaves[dest] = set(r[0] for r in self.ctl.query(
                    "SELECT relid::oid FROM pg_partition_tree(%s::oid::regclass) WHERE isleaf", (dest,)))
        for leaf in sorted(set().union(*leaves.values()) if leaves else ()):
            rel = self.ctl.query("SELECT oid::regclass::text FROM pg_class WHERE oid = %s AND relkind = 'r'", (leaf,))
            if not rel:
                continue     # a foreign table (a sink's, as a partition): nothing to read
            rows = self.ctl.query("SELECT id, CASE WHEN payload IS NULL THEN 'null' ELSE md5(payload) END, count(*) "
                                  "FROM %s GROUP BY 1, 2" % rel[0][0], timeout_ms=120000)
            for rid, md5, cnt in rows:
                found.setdefault(rid, []).append((leaf, md5, cnt))
        accepted = self.world.accepted_ids
        consequence = 0
        relname = {}
        for dest in dests | set().union(*leaves.values()) if leaves else dests:
            r = self.ctl.query("SELECT relname FROM pg_class WHERE oid = %s", (dest,))
            relname[dest] = r[0][0] if r else "oid %d" % dest
        for rid, places in found.items():
            led = by_id.get(rid)
            total = sum(c for _, _, c in places)
            subject = self.stream_name(led, names, relname) if led else "?"
            if rid in accepted:
                consequence += 1      # a row of a write that must have been refused: counted as "accepted"
                continue
            if led is None:
                bad[("phantom", "no ledger row, in %s" % "/".join(sorted(relname[p[0]] for p in places)))].append(rid)
                continue
            if total > 1:
                bad[("doubled", "%s, in %s" % (subject, relname[led[1]]))].append(rid)
            for dest, md5, cnt in places:
                if dest not in leaves.get(led[1], {led[1]}):
                    bad[("phantom", "%s: written for %s, found in %s" % (subject, relname[led[1]],
                                                                       relname[dest]))].append(rid)
                elif md5 != led[5]:
                    bad[("phantom", "%s: another payload in %s" % (subject, relname[dest]))].append(rid)
        exempt = collections.Counter()
        unverifiable = 0
        for rid, led in by_id.items():
            if rid in found:
                continue
            if led[1] in gone:
                unverifiable += 1
                continue
            if rid in rejected:
                exempt["rejected"] += 1
                continue
            if rid in accepted:
                consequence += 1
                continue
            why = self.exemption(led, decisions)
            if why:
                exempt[why] += 1
                continue
            bad[("missing", self.stream_name(led, names, relname))].append(rid)
        log("  ledger: %d rows committed, %d found; exempt from missing: %s; unverifiable (table dropped): %d; "
            "ids of accepted invalid writes: %d" % (
                len(by_id), sum(1 for rid in by_id if rid in found),
                ", ".join("%s %d" % kv for kv in sorted(exempt.items())) or "none", unverifiable, consequence))
        failures = []
        for (kind, subject), ids in sorted(bad.items()):
            sinks, cus = set(), set()
            for rid in ids:
                led = by_id.get(rid)
                if led and led[2] is not None:
                    sinks.add(names.get(led[2], "sink id %d" % led[2]))
                    cus.add(led[3])
            failures.append(Failure(n, kind, subject, "%s: %d row(s) %s, e.g. ids %s" % (
                subject, len(ids), kind, ", ".join(str(i) for i in sorted(ids)[:5])), sinks=sinks, cus=cus))
        return failures

    @staticmethod
    def stream_name(led, names, relname=None):
        """stream_name names a ledger row's stream: sink (or table) and commit user."""
        if led[2] is None:
            return "table %s" % (relname or {}).get(led[1], "oid %d" % led[1])
        return "sink %s commit user %s" % (names.get(led[2], "id %d (dropped)" % led[2]), led[3])

    @staticmethod
    def exemption(led, decisions):
        """exemption names the decision that exempts a ledger row from
        "missing": one on its stream that returned after its transaction
        began (or whose outcome is unknown), else None."""
        _, _, sid, cu, tx_start, _, _ = led
        if sid is None:
            return None
        for kind, ids, users, cut, _ in decisions:
            if sid in ids and (users is None or users == cu) and tx_start < cut:
                return kind
        return None

    def probe(self, n, d):
        """probe writes a row into every sink whose target and foreign table
        exist and commits it with checkpoint(); a sink that refuses it, or
        whose checkpoint fails or does not bring it into the target, is a
        failure."""
        failures = []
        self.refresh()
        for s in sorted(self.world.snapshot()[0].values(), key=lambda s: s["name"]):
            if not s["ft"] or not s["target"] or s["mode"] not in ("append", "upsert") \
                    or s["target"] not in LEDGERED_TARGETS:
                continue
            self.probes += 1
            pid = n * ID_ROUND + PROBE_SESSION * ID_SESSION + self.probes
            rec = d.begin(SUPER, "probe", touched=(s["name"],))
            err = None
            states = self.world.snapshot()[3]
            # the sink's own commit user, named (a sink a job writes to refuses
            # rows that name none), unless end_input() ended it: then another
            own = s["default_commit_user"]
            cu = "fz.probe" if states.get((s["sink_id"], own), (0, 0))[1] >= I64_MAX else own
            try:
                with d.conn(SUPER).cursor() as cur:
                    d.execute(cur, rec, "SET paimon_sink.commit_user = %s" % sql_quote(cu))
                    d.execute(cur, rec, "RESET paimon_sink.writer_id")
                    d.execute(cur, rec, "RESET paimon_sink.fence_epoch")
                    d.execute(cur, rec, "BEGIN")
                    rk = (", " + psycopg2.extensions.quote_ident(s["rkc"], cur)) if s["mode"] == "upsert" else ""
                    d.execute(cur, rec, "INSERT INTO public.%s (id, part, payload%s) VALUES (%%s, 1, 'probe'%s)" % (
                        psycopg2.extensions.quote_ident(s["ft"], cur), rk, ", '+I'" if rk else ""), (pid,))
                    d.execute(cur, rec, "COMMIT")
                    for k in range(1, 4):
                        if cu != own:
                            lp, lc = states.get((s["sink_id"], cu), (0, 0))
                            d.execute(cur, rec, "SELECT count(*) FROM paimon_sink.prepare_commit(%s, %s, %s)",
                                      (s["name"], cu, max(lp, lc) + k))
                            d.execute(cur, rec, "SELECT count(*) FROM paimon_sink.commit(%s, %s, %s)",
                                      (s["name"], cu, max(lp, lc) + k))
                        else:
                            d.execute(cur, rec, "SELECT count(*) FROM paimon_sink.checkpoint(%s)", (s["name"],))
                        got = d.execute(cur, rec, "SELECT count(*) FROM public.%s WHERE id = %%s"
                                        % psycopg2.extensions.quote_ident(s["target"], cur), (pid,))[0][0]
                        if got:
                            break
                    if got != 1:
                        err = "the probe row is in the target %d times after checkpoint()" % got
                d.finish(rec, "ok" if err is None else err)
            except psycopg2.Error as e:
                err = describe(e)
                d.finish(rec, "ERROR " + err)
                d.drop(SUPER)
                if unknown_outcome(e):
                    raise Retry(err)
            if err:
                failures.append(Failure(n, "probe", s["name"], "sink %s (owner %s) does not take a row and commit "
                                        "it: %s" % (s["name"], s["owner"], err), sinks=(s["name"],)))
        return failures

    def check_accepted(self, n):
        """check_accepted turns each write the sink took although it must
        refuse it into a failure."""
        by_what = collections.OrderedDict()
        for what, rec in self.world.accepted:
            by_what.setdefault(what, []).append(rec)
        return [Failure(n, "accepted", what, "a write that must be refused was taken%s: %s" % (
            " (%d times)" % len(recs) if len(recs) > 1 else "", what), sinks=set().union(*(r.touched for r in recs)),
            t=recs[0].t0) for what, recs in by_what.items()]

    def check_logs(self, n, sessions):
        """check_logs scans what the logs gained in the round: a process
        terminated by a signal it was not killed with by the fuzz, a TRAP,
        a sanitizer's report; each is a crash (with the calls in flight)."""
        killed = {k[2] for k in self.world.kills if k[2] is not None}
        failures = []
        for path, text in self.log_since():
            lines = text.splitlines()
            for i, line in enumerate(lines):
                m = CRASH_RE.search(line)
                e = EPOCH_RE.search(line)
                t = float(e.group(1)) if e else None
                if m:
                    pid, sig = int(m.group(1)), int(m.group(2))
                    if pid in killed and sig == 9:
                        continue
                    detail = line.split("LOG:")[-1].strip()
                    nxt = lines[i + 1] if i + 1 < len(lines) else ""
                    if "Failed process was running:" in nxt:
                        detail += "; " + nxt.split("DETAIL:")[-1].strip()[:400]
                    f = Failure(n, "crash", detail[:80], detail, t=t)
                    f.pid = pid
                    failures.append(f)
                elif "TRAP:" in line or SANITIZER_RE.search(line):
                    failures.append(Failure(n, "crash", os.path.basename(path), line.strip()[:300], t=t))
        return failures

    # ---- reproductions ------------------------------------------------------------------
    def reproduction(self, f, sessions):
        """reproduction writes into the run's log the calls behind failure f:
        for a crash, the calls in flight at its time; otherwise each session's
        calls that named its sinks or commit users; with the seed and round."""
        t0 = self.world.t0
        lines = []
        if f.kind == "crash" and f.t is not None:
            pid = getattr(f, "pid", None)
            for s in sessions:
                on_pid = [c for c in s.trace if pid is not None and c.pid == pid]
                if on_pid:
                    lines.append("-- the last calls of session %s on the backend that died (pid %d)" % (s.name, pid))
                    lines += [c.line(t0) for c in on_pid[-10:]]
            flight = [c for s in sessions for c in s.trace if c.t0 <= f.t + 0.2 and (c.t1 or INF) >= f.t - 0.5]
            # the calls the committer serves that lost their answer: what it was serving
            served = re.compile(r"paimon_sink\.(prepare_commit|commit|checkpoint|recover|restart_job|end_input|"
                                r"remove_orphan_files|discard_missing_files|reject_failing_rows)\(")
            suspects = [c for c in flight if c.kind != "write" and c.outcome.startswith("lost")
                        and any(served.search(x) for x in c.sql)]
            if suspects and "committer" in f.detail:
                lines.append("-- calls to the committer that lost their answer at the crash")
                lines += [c.line(t0) for c in sorted(suspects, key=lambda c: c.t0)]
            lines.append("-- calls in flight")
            lines += [c.line(t0) for c in sorted(flight, key=lambda c: c.t0)]
            head = "calls at the crash (%.2fs)" % (f.t - t0)
        else:
            names = set(f.sinks)
            for s in sessions:
                mine = [c for c in s.trace if c.kind != "view" and (c.touched & names or c.cus & f.cus)]
                writes = [c for c in mine if c.kind == "write"]
                calls = [c for c in mine if c.kind != "write"]
                if mine:
                    lines.append("-- session %s: %d call(s) naming them, and %d write transaction(s) into them "
                                 "(the last 5 shown)" % (s.name, len(calls), len(writes)))
                    keep = set(id(c) for c in calls[-80:] + writes[-5:])
                    lines += [c.line(t0) for c in mine if id(c) in keep]
            head = "calls naming %s" % (", ".join(sorted(names)) or "-")
        note("---- reproduction of round %d, %s: %s (seed %d; rerun: test/fuzz --seed %d --sessions %d "
             "--round-seconds %d); %s:" % (f.round, f.kind, f.detail, self.cfg.seed, self.cfg.seed, self.cfg.sessions,
                                           self.cfg.round_seconds, head))
        for line in lines or ["(none traced)"]:
            note("    " + line)
        self.detail("reproduction of round %d, %s: %s; %s:" % (f.round, f.kind, f.detail, head),
                    lines or ["(none traced)"])
        if f.kind == "crash":
            for line in lines[:8]:
                log("    " + line[:300])

    # ---- teardown ----------------------------------------------------------------------
    def teardown(self, n):
        """teardown runs teardown_once, again after a crash-restart under it
        (three times at most); Abort when it cannot."""
        for attempt in range(3):
            try:
                return self.teardown_once()
            except (psycopg2.OperationalError, psycopg2.InterfaceError) as e:
                log("  teardown: lost the server (%s); waiting for it, then again" % describe(e))
                self.wait_ready()
            except psycopg2.Error as e:
                raise Abort("round %d: teardown failed: %s" % (n, describe(e)))
        raise Abort("round %d: teardown lost the server three times" % n)

    def teardown_once(self):
        """teardown_once drops the round's groups, sinks and tables and empties
        the ledger; a sink that cannot be dropped takes the extension with it
        (DROP EXTENSION CASCADE, CREATE EXTENSION)."""
        self.ctl.query("SELECT paimon_sink.clear_faults()")
        for (gid,) in self.ctl.query("SELECT gid FROM pg_prepared_xacts WHERE owner IS DISTINCT FROM "
                                     "current_user OR gid = 'paimon_sink:tamper'"):
            self.ctl.query("ROLLBACK PREPARED %s" % sql_quote(gid))
        for (g,) in self.ctl.query("SELECT group_name FROM paimon_sink.sink_group"):
            self.ctl.query("SELECT paimon_sink.drop_sink_group(%s)", (g,))
        left = []
        for attempt in range(3):
            left = []
            for (name,) in self.ctl.query("SELECT sink_name FROM paimon_sink.sink_definition"):
                try:
                    self.ctl.query("SELECT paimon_sink.drop_sink(%s, true)", (name,), timeout_ms=60000)
                except psycopg2.Error as e:
                    left.append("%s: %s" % (name, describe(e)))
            if not left:
                break
            time.sleep(2)
        if left:
            log("  teardown: sinks that drop_sink(force) cannot drop: %s; DROP EXTENSION paimon_sink CASCADE"
                % "; ".join(left))
            self.ctl.query("DROP EXTENSION paimon_sink CASCADE", timeout_ms=60000)
        self.ctl.query("DO $$DECLARE t record; BEGIN FOR t IN SELECT c.oid::regclass AS r FROM pg_class c "
                       "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') "
                       "AND c.relname LIKE 'fz\\_%' AND c.relname <> 'fz_ledger' AND NOT c.relispartition LOOP "
                       "EXECUTE format('DROP TABLE IF EXISTS %s CASCADE', t.r); END LOOP; END$$")
        self.ctl.query("DO $$DECLARE t record; BEGIN FOR t IN SELECT c.oid::regclass AS r FROM pg_class c "
                       "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'f' LOOP "
                       "EXECUTE format('DROP FOREIGN TABLE IF EXISTS %s CASCADE', t.r); END LOOP; END$$")
        self.ctl.query("DELETE FROM public.fz_ledger")
        self.init_db()

    def diagnose(self):
        """diagnose writes the sessions and the sink state into logs/diagnosis."""
        write_diagnosis(self.h.work, self.ctl, "fuzz-diagnose", SINK_DIAGNOSIS)

    # ---- the run -----------------------------------------------------------------------
    def run(self):
        """run runs the rounds (or the scenarios) and returns the exit status."""
        cfg = self.cfg
        self.setup()
        if cfg.scenario:
            for i, name in enumerate(cfg.scenario, 1):
                found = self.run_round(i, cfg.scenario_seconds, scenario=name)
                self.rounds += 1
                self.scenario_found[name] = found
        else:
            t_end = time.monotonic() + cfg.seconds
            n = 0
            while True:
                left = t_end - time.monotonic()
                if left < 3 and n > 0:
                    break
                n += 1
                self.run_round(n, max(3.0, min(cfg.round_seconds, left)))
                self.rounds += 1
        return self.report()

    def report(self):
        """report prints the summary of distinct failures (and of the
        scenarios); returns 0 when there was neither a crash nor an
        invariant failure, else 1."""
        if self.scenario_found:
            log("scenarios:")
            for name, found in self.scenario_found.items():
                log("  %-22s %s" % (name, "FOUND: " + "; ".join(sorted(set(f.kind for f in found)))
                                    if found else "not found (nothing failed)"))
        log("kills made by the fuzz: %s" % (", ".join("%s %d" % kv for kv in sorted(self.fuzz_kills.items()))
                                            or "none"))
        if self.failures:
            sigs = collections.OrderedDict()
            for f in self.failures:
                sigs.setdefault(f.signature(), []).append(f)
            log("distinct failures: %d" % len(sigs))
            for sig, fs in sigs.items():
                log("  %dx (rounds %s) %s" % (len(fs), ",".join(str(r) for r in sorted(set(f.round for f in fs))[:10]),
                                              fs[0].detail[:300]))
            log("reproductions: below and in logs/fuzz.log (kept); seed %d" % self.cfg.seed)
        if self.harness_errors:
            log("the fuzz itself failed %d time(s) (HARNESS ERROR above; their details below and in logs/fuzz.log)"
                % self.harness_errors)
            return 2
        return 0 if not self.worker_crashes and not self.invariant_failures else 1


def parse_args():
    """parse_args reads the options (and their FUZZ_* defaults)."""
    E = os.environ
    p = argparse.ArgumentParser(prog="test/fuzz", description="paimon_sink's fuzz: see test/py/fuzz.py.")
    p.add_argument("--seconds", type=float, default=float(E.get("FUZZ_SECONDS") or 60))
    p.add_argument("--seed", type=int, default=int(E["FUZZ_SEED"]) if E.get("FUZZ_SEED") else None)
    p.add_argument("--sessions", type=int, default=int(E.get("FUZZ_SESSIONS") or 4))
    p.add_argument("--round-seconds", type=float, default=float(E.get("FUZZ_ROUND_SECONDS") or 20))
    p.add_argument("--scenario", action="append", default=[],
                   help="a directed sequence (repeatable): %s, all, or list" % ", ".join(SCENARIOS))
    p.add_argument("--scenario-seconds", type=float, default=4, help=argparse.SUPPRESS)
    p.add_argument("--no-kills", dest="kills", action="store_false")
    p.add_argument("--skip-build", action="store_true", default=E.get("FUZZ_SKIP_BUILD") == "1")
    cfg = p.parse_args()
    if "list" in cfg.scenario:
        print("\n".join(SCENARIOS))
        sys.exit(0)
    if "all" in cfg.scenario:
        cfg.scenario = list(SCENARIOS)
    for s in cfg.scenario:
        if s not in SCENARIOS:
            p.error("unknown scenario %r (one of: %s, all, list)" % (s, ", ".join(SCENARIOS)))
    if not 1 <= cfg.sessions <= 16:
        p.error("--sessions must be 1..16")
    if cfg.seconds <= 0 or cfg.round_seconds <= 0:
        p.error("--seconds and --round-seconds must be positive")
    cfg.tamper = [t for t in (E.get("FUZZ_TAMPER") or "").replace(" ", "").split(",") if t]
    for t in cfg.tamper:
        if t not in ("missing", "doubled", "phantom", "in_doubt", "crash"):
            p.error("unknown FUZZ_TAMPER kind %r" % t)
    if cfg.seed is None:
        cfg.seed = random.SystemRandom().randrange(1, 1 << 31)
    return cfg


def main():
    """main runs the fuzz; it always cleans up and prints the last line
    fuzz: rounds=N calls=N worker_crashes=N invariant_failures=N."""
    cfg = parse_args()
    fz = Fuzz(cfg)
    interrupt_on_signals()
    rc = 2
    log("=== paimon_sink fuzz: seed %d, %s; rerun: test/fuzz --seed %d%s" % (
        cfg.seed, "scenarios %s" % ", ".join(cfg.scenario) if cfg.scenario else
        "%.0f s, %d sessions, rounds of %.0f s%s" % (cfg.seconds, cfg.sessions, cfg.round_seconds,
                                                    "" if cfg.kills else ", no kills"),
        cfg.seed, "".join(" --scenario " + s for s in cfg.scenario)))
    try:
        rc = fz.run()
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Abort as e:
        log("ABORT: %s" % e)
    except Exception:
        log("ABORT: %s" % traceback.format_exc())
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if rc != 0:
            fz.print_details()
        if rc != 0 and fz.h.work:
            if fz.ctl is not None:
                fz.diagnose()
            keep_logs(fz.h.work, [fz.h.server_log], "paimon_sink-fuzz-logs.")
        fz.h.cleanup()
        print("fuzz: rounds=%d calls=%d worker_crashes=%d invariant_failures=%d" % (
            fz.rounds, fz.calls, fz.worker_crashes, fz.invariant_failures), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
