#!/usr/bin/python3
"""Driver of test/soak: setup, trials, checks.  Runs as the server's OS user.

Configuration from the environment (SOAK_*), see test/soak.  Writes after
each trial "trials crashes missing duplicated phantom in_doubt leftovers
failed wrong_keys" to SOAK_STATE (failover mode: crashes counts the
failovers).  Exit 0: all trials ok; 1: a check failed; 2: a trial could not
recover (the soak stopped early).
"""
import glob
import io
import os
import random
import re
import signal
import sys
import threading
import time
import traceback

import psycopg2

import harness
from harness import Node, Server, close_quietly, error_text

E = os.environ
HOST, PORT, USER = E["SOAK_HOST"], E["SOAK_PORT"], E["SOAK_USER"]
DATA, SERVER_LOG, STATE = E["SOAK_DATA"], E["SOAK_LOG"], E["SOAK_STATE"]
STOPFILE = E.get("SOAK_STOPFILE", "")
TRIALS = int(E["SOAK_TRIALS"])
SEED = int(E["SOAK_SEED"])
CLIENTS = int(E.get("SOAK_CLIENTS") or 4)
if not 1 <= CLIENTS <= 9:
    sys.exit("soak: SOAK_CLIENTS must be 1..9")
RECOVERY_TIMEOUT = float(E.get("SOAK_RECOVERY_TIMEOUT") or 60)
STOP_ON_FAIL = E.get("SOAK_STOP_ON_FAIL", "0") == "1"
VERBOSE = E.get("SOAK_VERBOSE", "0") == "1"
MODE = E.get("SOAK_MODE") or "append"
if MODE not in ("append", "upsert", "failover"):
    sys.exit(f"soak: unknown SOAK_MODE {MODE!r}")
UPSERT = MODE == "upsert"
# failover: the append sink on a primary with a streaming standby, which is
# promoted when the primary is killed (run_failover_trial)
FAILOVER = MODE == "failover"
# failover: PS_WORK (the standbys' folders go in its clusters/) and the
# folder of the first primary, the cluster the wrapper made
WORK = E.get("SOAK_WORK", "")
CLUSTER_DIR = E.get("SOAK_CLUSTER_DIR", "")
SYNC = E.get("SOAK_SYNC") or "alternate"
if SYNC not in ("alternate", "random", "sync", "async"):
    sys.exit(f"soak: SOAK_SYNC must be alternate, random, sync or async, not {SYNC!r}")
KEYS = int(E.get("SOAK_KEYS") or 50)  # upsert: keys per client and trial
if not 1 <= KEYS <= 10 ** 6:
    sys.exit("soak: SOAK_KEYS must be 1..1000000")
TAMPER = [t for t in (E.get("SOAK_TAMPER") or "").replace(" ", "").split(",") if t and t != "0"]
TAMPER = [("wrong_keys" if UPSERT else "missing") if t == "1" else t for t in TAMPER]
TAMPER_TRIAL = int(E.get("SOAK_TAMPER_TRIAL") or 1)
SINK = "soak_upsert" if UPSERT else "soak_sink"
LIB = E.get("SOAK_LIB", "")

ALL_POINTS = ["writer_after_receive", "writer_after_ack", "backend_after_handoff",
              "barrier_after_first_writer", "committer_before_prepare",
              "committer_after_prepare", "committer_after_commit_prepared"]
POINTS = [p for p in (E.get("SOAK_POINTS") or "").replace(" ", "").split(",") if p] or ALL_POINTS
ACTIONS = [a for a in (E.get("SOAK_ACTIONS") or "").replace(" ", "").split(",") if a]
for t in TAMPER:
    if t not in (("wrong_keys", "missing", "phantom", "in_doubt", "leftovers") if UPSERT else
                 ("missing", "duplicated", "phantom", "in_doubt", "leftovers")):
        sys.exit(f"soak: unknown SOAK_TAMPER kind {t!r} (mode {MODE})")
for p in POINTS:
    if p not in ALL_POINTS:
        sys.exit(f"soak: unknown fault point {p!r}")
for a in ACTIONS:
    if a not in (("kill", "immediate") if FAILOVER else ("error", "fatal", "panic", "kill", "pause")):
        sys.exit(f"soak: unknown {'failover ' if FAILOVER else 'fault '}action {a!r}")
if FAILOVER and (not WORK or not CLUSTER_DIR):
    sys.exit("soak: failover mode needs SOAK_WORK and SOAK_CLUSTER_DIR")
if FAILOVER and any(t not in ("missing", "duplicated", "phantom", "in_doubt") for t in TAMPER):
    sys.exit("soak: failover mode tampers with missing, duplicated, phantom, in_doubt only")

CRASH_LINE = "all server processes terminated; reinitializing"
ID_TRIAL = 10 ** 9      # id = trial * ID_TRIAL + client * ID_CLIENT + n
ID_CLIENT = 10 ** 8

sys.stdout.reconfigure(line_buffering=True)


class Stop(Exception):
    """The soak was told to stop (a signal, or the wrapper's stop file)."""


class Timeout(Exception):
    """A trial could not recover within SOAK_RECOVERY_TIMEOUT."""


def on_term(signum, frame):
    """on_term turns SIGTERM and SIGINT into Stop, so that the trial in
    progress ends through the same path as any other."""
    raise Stop(f"signal {signum}")


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)


def say(msg=""):
    """say prints one line of the soak's output at once."""
    print(msg, flush=True)


def check_stop():
    """check_stop raises Stop when the wrapper's stop file exists."""
    if STOPFILE and os.path.exists(STOPFILE):
        raise Stop("stop file")


# The server the trials run against, its data directory and its log: the
# primary of the moment in failover mode (use_node switches them).
SERVER = Server(HOST, PORT, USER, default_app="soak_control")


def use_node(node):
    """use_node makes node (a harness Node) the server that query, connect,
    the checks and the new sessions use (failover mode, after a promotion)."""
    global SERVER, DATA, SERVER_LOG
    SERVER = node.server(default_app="soak_control")
    DATA, SERVER_LOG = node.datadir, node.server_log


def query(sql, args=None, app=None, timeout_ms=30000):
    """query runs one statement on a fresh connection to the current server
    and returns all its rows (or None)."""
    return SERVER.query(sql, args, app=app, timeout_ms=timeout_ms)


def connect(app, statement_timeout_ms=30000):
    """connect opens an autocommit connection named app to the current
    server with that statement timeout (0: none)."""
    return SERVER.connect(app, statement_timeout_ms=statement_timeout_ms)


def short(e):
    """short is an error as one line: SQLSTATE and the first 150 characters."""
    return error_text(e, 150)


def retry(deadline, what, fn):
    """fn() until it succeeds; Timeout at the deadline (with the last error)."""
    last = None
    while True:
        check_stop()
        try:
            return fn()
        except psycopg2.Error as e:
            last = short(e)
        if time.monotonic() >= deadline:
            raise Timeout(f"{what}: not done within the timeout; last error: {last}")
        time.sleep(0.2)


def ready():
    """ready is True when the server accepts connections and the writers
    serve; otherwise it raises (for retry)."""
    if not SERVER.writers_ready(app="soak_control", timeout_ms=10000):
        raise psycopg2.OperationalError("writers not ready")
    return True


def wait_no_doubt(deadline):
    """wait_no_doubt gives the committer up to 5 s (within deadline) to
    finish our prepared transactions; the check after it counts those left."""
    doubt_deadline = min(deadline, time.monotonic() + 5)
    while True:
        r = retry(deadline, "in-doubt count", lambda: query(
            "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"))
        if r[0][0] == 0 or time.monotonic() >= doubt_deadline:
            return
        time.sleep(0.2)


def wait_ready(deadline):
    """wait_ready retries ready until the deadline (then Timeout)."""
    retry(deadline, "server accepting connections and writers ready", ready)


class ServerLog:
    """Reads what the server log gained since the last call."""

    def __init__(self, path):
        """__init__ remembers the log's path and its size now."""
        self.path = path
        self.offset = os.path.getsize(path) if os.path.exists(path) else 0

    def since(self, offset):
        """since returns the log's text from byte offset on."""
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")

    def size(self):
        """size is the log's size in bytes now."""
        return os.path.getsize(self.path)


def stage_files():
    """Staged files in the sinks' folders."""
    return harness.stage_files(DATA)


def other_files():
    """Other files there (e.g. *.stage.tmp a crash left; remove_orphan_files'
    business, reported but not failed)."""
    return sorted(f for f in glob.glob(os.path.join(DATA, "pg_paimon_sink", "*", "*", "*"))
                  if os.path.isfile(f) and not f.endswith(".stage"))


def lib_identity():
    """The installed library's identity: a make install meanwhile makes the
    server mix two builds (backends load the new file for SQL functions)."""
    return harness.lib_identity(LIB)


# --- load -----------------------------------------------------------------------

class Session(threading.Thread):
    """A client session of a trial: a thread that repeats step() on its
    connection until stopped, counting and keeping the errors (a fault or a
    crash-restart) and connecting again after one."""

    app = "soak_session"
    autocommit = True

    def __init__(self, name, stop, rng):
        """__init__ sets up the thread and the counters every session has;
        the session keeps to the server current now (a failover's sessions
        never follow the promotion)."""
        super().__init__(daemon=True, name=name)
        self.stop, self.rng = stop, rng
        self.server = SERVER
        self.failed = 0
        self.errors = {}
        self.pid = None
        self.busy_since = None

    def step(self, conn):
        """step is one unit of the session's work (a transaction, a call)."""
        raise NotImplementedError

    def pause(self, failed):
        """pause waits between steps (failed: the step just failed)."""

    def finish(self, conn):
        """finish closes the last connection when the session stops."""
        close_quietly(conn)

    def run(self):
        """run is the thread: connect when there is no connection, step,
        and on any error count it, drop the connection and go on."""
        conn = None
        while not self.stop.is_set():
            failed = False
            try:
                if conn is None:
                    conn = self.server.connect(self.app, statement_timeout_ms=0)
                    conn.autocommit = self.autocommit
                    self.pid = conn.get_backend_pid()
                self.step(conn)
            except Exception as e:  # psycopg2.Error mostly; anything while reconnecting
                failed = True
                self.busy_since = None
                self.failed += 1
                m = short(e)
                self.errors[m] = self.errors.get(m, 0) + 1
                close_quietly(conn)
                conn = None
                self.pid = None
            self.pause(failed)
        if conn is not None:
            self.finish(conn)


class Loader(Session):
    """One client: transactions into the sink and the ledger until stopped."""

    autocommit = False

    def __init__(self, trial, client, stop, rng):
        """__init__ sets the client's first id (unique for the whole run)."""
        super().__init__(f"loader-{client}", stop, rng)
        self.app = f"soak_load_{client}"
        self.trial, self.client = trial, client
        self.next = trial * ID_TRIAL + client * ID_CLIENT + 1
        self.committed = self.rolled_back = self.aborted = 0
        self.tx_ids = []  # ids the open transaction keeps (append mode)
        self.acked = []   # ids of the transactions whose COMMIT returned

    def body(self, cur):
        """One transaction's writes; True when it must roll back (aborted)."""
        self.write(cur, self.take(self.rng.randint(1, 8)))
        if self.rng.random() < 0.1:
            cur.execute("SAVEPOINT s")
            kept = len(self.tx_ids)
            self.write(cur, self.take(self.rng.randint(1, 4)))
            cur.execute("ROLLBACK TO SAVEPOINT s")
            del self.tx_ids[kept:]
            if self.rng.random() < 0.5:
                self.write(cur, self.take(self.rng.randint(1, 4)))
        return False

    def take(self, n):
        """take returns the client's next n ids."""
        first = self.next
        self.next += n
        return list(range(first, first + n))

    def write(self, cur, ids):
        """ids into the sink (one of four shapes) and into the ledger."""
        t, c = self.trial, self.client
        shape = self.rng.randrange(4)
        if shape == 0:
            cur.execute("INSERT INTO soak_sink (id, client, trial, payload) "
                        "SELECT g, %s, %s, 'p' || g FROM generate_series(%s::bigint, %s::bigint) g",
                        (c, t, ids[0], ids[-1]))
        elif shape == 1:
            cur.execute("INSERT INTO soak_sink (id, client, trial, payload) VALUES "
                        + ", ".join(["(%s, %s, %s, %s)"] * len(ids)),
                        [v for i in ids for v in (i, c, t, f"p{i}")])
        elif shape == 2:
            for i in ids:
                cur.execute("INSERT INTO soak_sink (id, client, trial, payload) VALUES (%s, %s, %s, %s)",
                            (i, c, t, f"p{i}"))
        else:
            data = "".join(f"{i}\t{c}\t{t}\tp{i}\n" for i in ids)
            cur.copy_expert("COPY soak_sink (id, client, trial, payload) FROM STDIN", io.StringIO(data))
        cur.execute("INSERT INTO ledger (id, client, trial) "
                    "SELECT unnest(%s::bigint[]), %s, %s", (ids, c, t))
        self.tx_ids.extend(ids)

    def step(self, conn):
        """step is one transaction: its writes, then ROLLBACK when it was
        aborted or (10%) on purpose, COMMIT otherwise."""
        self.busy_since = time.monotonic()
        self.tx_ids = []
        with conn.cursor() as cur:
            aborted = self.body(cur)
        if aborted:
            conn.rollback()
            self.aborted += 1
        elif self.rng.random() < 0.1:
            conn.rollback()
            self.rolled_back += 1
        else:
            conn.commit()
            self.committed += 1
            self.acked.extend(self.tx_ids)
        self.busy_since = None

    def pause(self, failed):
        """pause waits 0.1 s after a failed transaction, not otherwise."""
        if failed:
            self.stop.wait(0.1)

    def finish(self, conn):
        """finish rolls back what is open and closes the connection."""
        try:
            conn.rollback()
            conn.close()
        except Exception:
            pass


class UpsertLoader(Loader):
    """One client of the upsert soak: changes of its own KEYS keys (ids
    trial*1e9 + client*1e8 + 1..KEYS; no other session writes them, as a
    keyBy does) into the sink, and the state they imply into ledger_u and
    every change into history_u, in the same transaction."""

    COLS = "id, v, trial, client, version, _row_kind"
    BAD_KINDS = ["+X", "", "D", "+D", "-I", " +I"]

    def __init__(self, trial, client, stop, rng):
        """__init__ sets the client's keys and their version counters."""
        super().__init__(trial, client, stop, rng)
        self.base = trial * ID_TRIAL + client * ID_CLIENT
        self.ver = [0] * (KEYS + 1)  # per key: the last version drawn
        self.kinds = {}               # row kinds written (committed or not)
        self.rejected = 0             # invalid rows refused as they should be
        self.accepted = []            # invalid rows the sink took (a bug)

    def changes(self, n):
        """n draws of changes on random own keys, as tuples (id, v, trial,
        client, version, row kind, version drawn): upserts (+I, +U, NULL),
        key-only deletes (-D), an upsert and the -D of its whole row (which
        retracts just that version), -U of a version never written followed
        by +U, lone -U of a version never written (both retract nothing)."""
        rng, t, c = self.rng, self.trial, self.client
        out = []
        for _ in range(n):
            k = rng.randint(1, KEYS)
            i = self.base + k
            r = rng.random()
            self.ver[k] += 1
            ver = self.ver[k]
            if r < 0.6:
                out.append((i, f"v{i}.{ver}", t, c, ver, rng.choice(["+I", "+U", None]), ver))
            elif r < 0.7:
                out.append((i, None, None, None, None, "-D", ver))
            elif r < 0.8:
                # an upsert and its retraction: the key keeps what it had
                out.append((i, f"undone {i}.{ver}", t, c, ver, "+U", ver))
                out.append((i, f"undone {i}.{ver}", t, c, ver, "-D", ver))
            elif r < 0.9:
                # a retraction of a version never written, before an update: retracts nothing
                out.append((i, f"retracted {i}.{ver}", t, c, ver, "-U", ver))
                self.ver[k] += 1
                ver = self.ver[k]
                out.append((i, f"v{i}.{ver}", t, c, ver, "+U", ver))
            else:
                # a lone retraction of a version never written, sometimes a key's last change
                out.append((i, f"retracted {i}.{ver}", t, c, ver, "-U", ver))
        return out

    def write(self, cur, changes):
        """changes into the sink (one of four shapes), the state they leave
        into ledger_u, and each of them into history_u."""
        rows = [ch[:6] for ch in changes]
        for ch in changes:
            self.kinds[ch[5]] = self.kinds.get(ch[5], 0) + 1
        shape = self.rng.randrange(4)
        if shape == 0:
            cur.execute(f"INSERT INTO {SINK} ({self.COLS}) "
                        "SELECT id, v, trial, client, version, kind FROM unnest(%s::bigint[], %s::text[], "
                        "%s::int[], %s::int[], %s::bigint[], %s::text[]) WITH ORDINALITY "
                        "AS u(id, v, trial, client, version, kind, ord) ORDER BY ord",
                        [list(col) for col in zip(*rows)])
        elif shape == 1:
            cur.execute(f"INSERT INTO {SINK} ({self.COLS}) VALUES "
                        + ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(rows)),
                        [v for r in rows for v in r])
        elif shape == 2:
            for r in rows:
                if r[5] == "-D" and r[1] is None:
                    cur.execute(f"INSERT INTO {SINK} (id, _row_kind) VALUES (%s, '-D')", (r[0],))
                else:
                    cur.execute(f"INSERT INTO {SINK} ({self.COLS}) VALUES (%s, %s, %s, %s, %s, %s)", r)
        else:
            data = "".join("\t".join("\\N" if v is None else str(v) for v in r) + "\n" for r in rows)
            cur.copy_expert(f"COPY {SINK} ({self.COLS}) FROM STDIN", io.StringIO(data))
        state = {}
        before = {}  # per key: its state before the latest upsert (None: untouched)
        for i, v, _t, _c, _version, kind, ver in changes:
            if kind == "-D" and v is not None:
                # retracts the upsert just before it: the key is as it was
                if before.get(i) is None:
                    state.pop(i, None)
                else:
                    state[i] = before[i]
            elif kind == "-D":
                state[i] = (None, ver, True)
            elif kind != "-U":
                before[i] = state.get(i)
                state[i] = (v, ver, False)
        if state:
            ids = list(state)
            cur.execute("INSERT INTO ledger_u (id, v, version, trial, client, deleted) "
                        "SELECT id, v, version, %s, %s, deleted FROM unnest(%s::bigint[], %s::text[], "
                        "%s::bigint[], %s::bool[]) AS u(id, v, version, deleted) "
                        "ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v, version = EXCLUDED.version, "
                        "trial = EXCLUDED.trial, client = EXCLUDED.client, deleted = EXCLUDED.deleted, "
                        "xid = pg_current_xact_id()",
                        (self.trial, self.client, ids, [state[i][0] for i in ids],
                         [state[i][1] for i in ids], [state[i][2] for i in ids]))
        cur.execute("INSERT INTO history_u (id, version, kind) "
                    "SELECT * FROM unnest(%s::bigint[], %s::bigint[], %s::text[])",
                    ([ch[0] for ch in changes], [ch[6] for ch in changes], [ch[5] for ch in changes]))

    def bad_row(self, cur):
        """One invalid row (a row kind not in +I +U -U -D NULL, or a NULL key):
        must fail at once with 22023 / 23502."""
        rng = self.rng
        k = rng.randint(1, KEYS)
        if rng.random() < 0.6:
            row, want = (self.base + k, "bad", self.trial, self.client, 0, rng.choice(self.BAD_KINDS)), "22023"
        else:
            row, want = (None, "bad", self.trial, self.client, 0, rng.choice(["+I", "+U", None, "-D"])), "23502"
        try:
            cur.execute(f"INSERT INTO {SINK} ({self.COLS}) VALUES (%s, %s, %s, %s, %s, %s)", row)
        except psycopg2.Error as e:
            if e.pgcode != want:
                raise
            self.rejected += 1
            return
        self.accepted.append(f"id={row[0]} _row_kind={row[5]!r} (expected {want})")

    def body(self, cur):
        """body is one transaction's changes: 1-8 draws, sometimes some in a rolled-back savepoint,
        ~4% an invalid row; True when the transaction must roll back."""
        rng = self.rng
        self.write(cur, self.changes(rng.randint(1, 8)))
        if rng.random() < 0.1:
            cur.execute("SAVEPOINT s")
            self.write(cur, self.changes(rng.randint(1, 4)))
            cur.execute("ROLLBACK TO SAVEPOINT s")
            if rng.random() < 0.5:
                self.write(cur, self.changes(rng.randint(1, 4)))
        if rng.random() < 0.04:
            # an invalid row: at top level the transaction is then aborted and
            # rolled back; in a savepoint, rolling back to it goes on
            if rng.random() < 0.5:
                self.bad_row(cur)
                return True
            cur.execute("SAVEPOINT b")
            self.bad_row(cur)
            cur.execute("ROLLBACK TO SAVEPOINT b")
            if rng.random() < 0.5:
                self.write(cur, self.changes(rng.randint(1, 4)))
        return False


class Checkpointer(Session):
    """checkpoint() every 100-300 ms until stopped; with sql_checkpoints, a
    PostgreSQL CHECKPOINT after that share of the calls (failover mode: the
    standby then makes restartpoints while staged files change)."""

    app = "soak_checkpoint_loop"

    def __init__(self, stop, rng, sql_checkpoints=0.0):
        """__init__ sets the checkpoint counters and the share of calls
        followed by a CHECKPOINT."""
        super().__init__("checkpointer", stop, rng)
        self.calls = self.ok = self.snapshots = self.rows = self.sql_checkpoints = 0
        self.sql_share = sql_checkpoints

    def step(self, conn):
        """step is one checkpoint() call, its snapshots and rows counted, and
        sometimes a CHECKPOINT."""
        self.calls += 1
        self.busy_since = time.monotonic()
        with conn.cursor() as cur:
            cur.execute("SELECT count(*), coalesce(sum(row_count), 0) "
                        "FROM paimon_sink.checkpoint(%s)", (SINK,))
            n, rows = cur.fetchone()
            if self.sql_share and self.rng.random() < self.sql_share:
                cur.execute("CHECKPOINT")
                self.sql_checkpoints += 1
        self.busy_since = None
        self.ok += 1
        self.snapshots += n
        self.rows += rows

    def pause(self, failed):
        """pause waits 100-300 ms after every call."""
        self.stop.wait(self.rng.uniform(0.1, 0.3))


# --- diagnosis ---------------------------------------------------------------------

def diagnose(log, trial_offset, other_logs=()):
    """diagnose prints, after a failed trial, the sessions, writers, pending and in-doubt
    checkpoints, faults and sink state, the staged file count and the trial's server log without
    its commit lines; other_logs are more (title, ServerLog, offset) to show so (failover mode: the
    killed primary's)."""
    say("  --- diagnosis")
    for title, sql in [
        ("sessions", "SELECT pid, backend_type, application_name, state, "
                     "coalesce(wait_event_type || ':' || wait_event, '') AS wait, "
                     "round(extract(epoch FROM now() - query_start)::numeric, 1) AS secs, "
                     "left(regexp_replace(coalesce(query, ''), '\\s+', ' ', 'g'), 70) AS query "
                     "FROM pg_stat_activity WHERE pid <> pg_backend_pid() ORDER BY backend_type, pid"),
        ("writers", "SELECT * FROM paimon_sink.writers"),
        ("pending checkpoints", "SELECT * FROM paimon_sink.pending_checkpoints"),
        ("in doubt", "SELECT gid, prepared, database FROM pg_prepared_xacts"),
        ("faults", "SELECT * FROM paimon_sink.faults WHERE action <> 'none' OR paused_pid IS NOT NULL"),
        ("sink", "SELECT sink_name, last_prepared_checkpoint, last_committed_checkpoint, last_snapshot_id "
                 "FROM paimon_sink.sinks"),
    ]:
        try:
            rows = query(sql, timeout_ms=10000)
            say(f"  {title}: {len(rows)} row(s)")
            for r in rows:
                say("    " + " | ".join("" if v is None else str(v) for v in r))
        except Exception as e:
            say(f"  {title}: {short(e)}")
    say(f"  staged files: {len(stage_files())}")
    say_log_tail("server log of this trial", log, trial_offset, 40)
    for title, other, offset in other_logs:
        say_log_tail(title, other, offset, 25)


def say_log_tail(title, log_file, offset, last):
    """say_log_tail prints the last lines of a server log since offset, without
    the commit lines (every checkpoint writes one)."""
    try:
        lines = log_file.since(offset).splitlines()
    except OSError:
        lines = []
    interesting = [l for l in lines if not re.search(r"paimon_sink committed snapshot", l)]
    say(f"  {title}: {len(lines)} line(s), without commit lines (last {last}):")
    for l in interesting[-last:]:
        say("    " + l)


# --- comparison ----------------------------------------------------------------------

COMPARE_SQL = """
SELECT (SELECT count(*) FROM ledger),
       (SELECT count(*) FROM target),
       (SELECT count(*) FROM ledger l WHERE NOT EXISTS (SELECT 1 FROM target t WHERE t.id = l.id)),
       (SELECT count(id) - count(DISTINCT id) FROM target),
       (SELECT count(*) FROM target t WHERE NOT EXISTS (SELECT 1 FROM ledger l WHERE l.id = t.id)),
       (SELECT count(*) FROM target t JOIN ledger l USING (id)
            WHERE t.payload IS DISTINCT FROM 'p' || t.id OR t.client IS DISTINCT FROM l.client
               OR t.trial IS DISTINCT FROM l.trial),
       (SELECT coalesce(sum(row_count), 0) FROM paimon_sink.snapshots
            WHERE sink_name = %(sink)s AND snapshot_id > %(mark)s),
       (SELECT coalesce(max(snapshot_id), 0) FROM paimon_sink.snapshots WHERE sink_name = %(sink)s),
       (SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%%'),
       (SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE sink_name = %(sink)s)
"""

SAMPLES_SQL = {
    "missing": "SELECT l.id, l.client, l.trial, l.xid FROM ledger l "
               "WHERE NOT EXISTS (SELECT 1 FROM target t WHERE t.id = l.id) ORDER BY l.id",
    "duplicated": "SELECT id, count(*), min(client), min(trial), NULL FROM target GROUP BY id "
                  "HAVING count(*) > 1 ORDER BY id",
    "phantom": "SELECT t.id, t.client, t.trial, t.payload FROM target t "
               "WHERE NOT EXISTS (SELECT 1 FROM ledger l WHERE l.id = t.id) ORDER BY t.id",
    "corrupt": "SELECT t.id, t.client, t.trial, t.payload FROM target t JOIN ledger l USING (id) "
               "WHERE t.payload IS DISTINCT FROM 'p' || t.id OR t.client IS DISTINCT FROM l.client "
               "OR t.trial IS DISTINCT FROM l.trial ORDER BY t.id",
}

# upsert: a key is wrong when its target row is not the state the ledger says
# the committed changes left (present with v, version, trial, client, or
# deleted / never written = absent)
WRONG_KEYS_WHERE = """
    CASE WHEN l.id IS NULL OR l.deleted THEN t.id IS NOT NULL
         ELSE t.id IS NULL OR (t.v, t.version, t.trial, t.client)
                              IS DISTINCT FROM (l.v, l.version, l.trial, l.client) END
"""

COMPARE_UPSERT_SQL = """
SELECT (SELECT count(*) FROM ledger_u WHERE NOT deleted),
       (SELECT count(*) FROM ledger_u WHERE deleted),
       (SELECT count(*) FROM target_u),
       (SELECT count(*) FROM ledger_u l FULL JOIN target_u t ON t.id = l.id WHERE """ + WRONG_KEYS_WHERE + """),
       (SELECT count(*) FROM history_u),
       (SELECT coalesce(sum(row_count), 0) FROM paimon_sink.snapshots
            WHERE sink_name = %(sink)s AND snapshot_id > %(mark)s),
       (SELECT count(*) FROM paimon_sink.snapshots WHERE sink_name = %(sink)s AND snapshot_id > %(mark)s),
       (SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%%'),
       (SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE sink_name = %(sink)s)
"""

WRONG_KEYS_SQL = ("SELECT coalesce(l.id, t.id) AS id, "
                  "CASE WHEN l.id IS NULL THEN 'never written' WHEN l.deleted THEN 'deleted (version ' "
                  "|| l.version || ')' ELSE 'v=' || l.v || ' version=' || l.version || ' client=' || l.client "
                  "|| ' trial=' || l.trial END, "
                  "CASE WHEN t.id IS NULL THEN 'absent' ELSE 'v=' || t.v || ' version=' || t.version "
                  "|| ' client=' || t.client || ' trial=' || t.trial END, "
                  "l.xid FROM ledger_u l FULL JOIN target_u t ON t.id = l.id WHERE " + WRONG_KEYS_WHERE
                  + " ORDER BY 1")


def evidence_upsert(trial):
    """Keep the wrong keys (table evidence); show a few, with the last
    committed changes of each (history_u, in commit order)."""
    conn = connect("soak_evidence", 60000)
    try:
        with conn.cursor() as cur:
            cur.execute("INSERT INTO evidence (trial, kind, id) SELECT %s, 'wrong_key', id FROM ("
                        + WRONG_KEYS_SQL + ") s", (trial,))
            cur.execute(WRONG_KEYS_SQL + " LIMIT 10")
            rows = cur.fetchall()
            say(f"  wrong_keys: first {len(rows)} key(s) (id = trial*1e9 + client*1e8 + key): "
                "ledger | target | ledger xid; then the key's last committed changes "
                "(version kind xid, oldest first)")
            for r in rows:
                say(f"    {r[0]}: {r[1]} | {r[2]} | {'-' if r[3] is None else r[3]}")
                cur.execute("SELECT version, coalesce(kind, 'NULL'), xid FROM (SELECT * FROM history_u "
                            "WHERE id = %s ORDER BY seq DESC LIMIT 6) h ORDER BY seq", (r[0],))
                say("      " + (", ".join(f"{v} {k} {x}" for v, k, x in cur.fetchall()) or "(no change)"))
    finally:
        conn.close()


def evidence(trial, kinds):
    """Keep the ids of the failed checks (table evidence) and show a few."""
    conn = connect("soak_evidence", 60000)
    try:
        with conn.cursor() as cur:
            for kind in kinds:
                sql = SAMPLES_SQL[kind]
                cur.execute(f"INSERT INTO evidence (trial, kind, id) SELECT %s, %s, id FROM ({sql}) s",
                            (trial, kind))
                cur.execute(sql + " LIMIT 10")
                rows = cur.fetchall()
                say(f"  {kind}: first {len(rows)} id(s) (id = trial*1e9 + client*1e8 + n; columns: "
                    + {"missing": "id client trial ledger-xid",
                       "duplicated": "id copies client trial -",
                       "phantom": "id client trial payload",
                       "corrupt": "id client trial payload"}[kind] + ")")
                for r in rows:
                    say("    " + " ".join("-" if v is None else str(v) for v in r))
    finally:
        conn.close()


def tamper_apply(kinds, dboid, sink_id):
    """tamper_apply spoils the trial's result on purpose for each SOAK_TAMPER kind (a self-test of
    the checks) and returns what tamper_undo must undo afterwards."""
    undo = []
    conn = connect("soak_tamper")
    with conn.cursor() as cur:
        for kind in kinds:
            if UPSERT and kind == "wrong_keys":
                cur.execute("UPDATE target_u SET version = version + 1000000 "
                            "WHERE id = (SELECT min(id) FROM target_u) RETURNING id")
                say(f"  SOAK_TAMPER: changed the version of target_u row {cur.fetchone()}")
            elif UPSERT and kind == "missing":
                cur.execute("DELETE FROM target_u WHERE id = (SELECT max(id) FROM target_u) RETURNING id")
                say(f"  SOAK_TAMPER: deleted target_u row {cur.fetchone()}")
            elif UPSERT and kind == "phantom":
                i = TAMPER_TRIAL * ID_TRIAL + ID_TRIAL - 1
                cur.execute("INSERT INTO target_u (id, v, trial, client, version) "
                            "VALUES (%s, %s, %s, 0, 1) RETURNING id", (i, f"v{i}.1", TAMPER_TRIAL))
                say(f"  SOAK_TAMPER: added phantom target_u row {cur.fetchone()}")
            elif kind == "missing":
                cur.execute("DELETE FROM target WHERE ctid = (SELECT ctid FROM target ORDER BY id LIMIT 1) "
                            "RETURNING id")
                say(f"  SOAK_TAMPER: deleted target row {cur.fetchone()}")
            elif kind == "duplicated":
                cur.execute("INSERT INTO target SELECT * FROM target ORDER BY id DESC LIMIT 1 RETURNING id")
                say(f"  SOAK_TAMPER: duplicated target row {cur.fetchone()}")
            elif kind == "phantom":
                cur.execute("INSERT INTO target (id, client, trial, payload) "
                            "VALUES (%s, 0, %s, 'p' || %s) RETURNING id",
                            (TAMPER_TRIAL * ID_TRIAL + ID_TRIAL - 1, TAMPER_TRIAL,
                             TAMPER_TRIAL * ID_TRIAL + ID_TRIAL - 1))
                say(f"  SOAK_TAMPER: added phantom target row {cur.fetchone()}")
            elif kind == "in_doubt":
                tconn = connect("soak_tamper_2pc")
                tconn.autocommit = False
                with tconn.cursor() as tcur:
                    tcur.execute("INSERT INTO evidence (trial, kind, id) VALUES (%s, 'tamper', 0)",
                                 (TAMPER_TRIAL,))
                    tcur.execute("PREPARE TRANSACTION 'paimon_sink:0:0:0:soak-tamper'")
                tconn.close()
                undo.append(("sql", "ROLLBACK PREPARED 'paimon_sink:0:0:0:soak-tamper'"))
                say("  SOAK_TAMPER: prepared transaction 'paimon_sink:0:0:0:soak-tamper'")
            elif kind == "leftovers":
                d = os.path.join(DATA, "pg_paimon_sink", str(dboid), str(sink_id))
                os.makedirs(d, exist_ok=True)
                f = os.path.join(d, "00000000-0000-4000-8000-00000000dead.stage")
                with open(f, "w") as fh:
                    fh.write("soak tamper\n")
                undo.append(("file", f))
                say(f"  SOAK_TAMPER: created {f}")
    conn.close()
    return undo


def tamper_undo(undo):
    """tamper_undo undoes what tamper_apply left (a prepared transaction, a staged file)."""
    for kind, what in undo:
        try:
            if kind == "sql":
                query(what)
            else:
                os.unlink(what)
        except Exception as e:
            say(f"  SOAK_TAMPER: undo {what}: {short(e)}")


# --- one trial --------------------------------------------------------------------------

class Totals:
    """The sums over the trials run, written to SOAK_STATE after each trial for the wrapper's last
    line."""

    def __init__(self):
        """__init__ starts every sum at zero."""
        self.trials = self.crashes = self.missing = self.duplicated = self.phantom = 0
        self.wrong_keys = self.deleted = self.changes = self.rejected = self.aborted = 0
        self.kinds = {}
        self.in_doubt = self.leftovers = self.failed = 0
        self.rows = self.committed = self.rolled_back = self.tx_failed = 0
        self.snapshots = self.ckpt_calls = self.ckpt_failed = 0
        self.fired = {}
        self.seen_leftovers = set()
        self.seen_others = set()
        self.unexpected = []
        self.lost_acked = 0

    def write_state(self):
        """write_state replaces SOAK_STATE atomically with the sums the wrapper reads."""
        tmp = STATE + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{self.trials} {self.crashes} {self.missing} {self.duplicated} {self.phantom} "
                    f"{self.in_doubt} {self.leftovers} {self.failed} {self.wrong_keys}\n")
        os.replace(tmp, STATE)


def trial_params(rng):
    """trial_params draws a trial's fault point, action, delay before arming it and the window of
    load after."""
    point = rng.choice(POINTS)
    if ACTIONS:
        action = rng.choice(ACTIONS)
    else:
        action = "pause" if rng.random() < 0.15 else rng.choice(["error", "fatal", "panic", "kill"])
    return point, action, round(rng.uniform(0, 2), 2), round(rng.uniform(1, 3), 2)


def run_trial(n, params, log, totals, dboid, sink_id):
    """run_trial runs trial n: load and checkpoints, one fault armed, then recovery, the comparison
    and its line of output; it adds to totals and returns whether the trial was ok (Timeout when
    it could not recover)."""
    point, action, delay, window = params
    trial_offset = log.size()
    rng = random.Random(SEED * 1000003 + n)
    stop = threading.Event()
    loaders = [(UpsertLoader if UPSERT else Loader)(n, c, stop, random.Random(rng.random()))
               for c in range(1, CLIENTS + 1)]
    ckpt = Checkpointer(stop, random.Random(rng.random()))
    notes, reasons = [], []
    aborted = False
    mark = retry(time.monotonic() + RECOVERY_TIMEOUT, "snapshot mark", lambda: query(
        "SELECT coalesce(max(snapshot_id), 0) FROM paimon_sink.snapshots WHERE sink_name = %s",
        (SINK,))[0][0])
    for t in loaders + [ckpt]:
        t.start()
    try:
        # load, then arm the fault after the delay, keep the load for the window
        t0 = time.monotonic()
        while time.monotonic() < t0 + delay:
            check_stop()
            time.sleep(0.05)
        retry(time.monotonic() + RECOVERY_TIMEOUT, "inject_fault()",
              lambda: query("SELECT paimon_sink.inject_fault(%s, %s, 1)", (point, action)))
        armed = time.monotonic()
        released_at = None
        paused_seen = None
        while time.monotonic() < armed + window:
            check_stop()
            if action == "pause" and released_at is None:
                try:
                    if paused_seen is None:
                        r = query("SELECT paused_pid FROM paimon_sink.faults WHERE point = %s",
                                  (point,), timeout_ms=5000)
                        if r and r[0][0] is not None:
                            paused_seen = time.monotonic()
                            hold = rng.uniform(0.2, 1.5)
                    elif time.monotonic() >= paused_seen + hold:
                        query("SELECT paimon_sink.release_fault(%s)", (point,))
                        released_at = time.monotonic()
                except psycopg2.Error:
                    pass
            time.sleep(0.1)

        # stop the load: faults off first (releases a pause), then join
        stop.set()
        deadline = time.monotonic() + RECOVERY_TIMEOUT
        retry(deadline, "clear_faults()", lambda: query("SELECT paimon_sink.clear_faults()"))
        for t in loaders + [ckpt]:
            t.join(max(0.0, deadline - time.monotonic()))
        stuck = [t for t in loaders + [ckpt] if t.is_alive()]
        if stuck:
            reasons.append("hang: " + ", ".join(
                f"{t.name} (pid {t.pid}, busy {time.monotonic() - t.busy_since:.0f}s)"
                if t.busy_since else t.name for t in stuck)
                + f" did not finish within {RECOVERY_TIMEOUT:.0f}s of the stop")
            diagnose(log, trial_offset)
            for t in stuck:
                if t.pid:
                    try:
                        query("SELECT pg_terminate_backend(%s)", (t.pid,))
                    except psycopg2.Error:
                        pass
            raise Timeout(reasons[-1])

        # recover: ready, checkpoint until empty, in-doubt resolved; redo if
        # the server crash-restarted meanwhile (a fault that fired late)
        deadline = time.monotonic() + RECOVERY_TIMEOUT
        final_calls = 0
        for attempt in range(1, 6):
            crashes_before = log.since(trial_offset).count(CRASH_LINE)
            wait_ready(deadline)

            def final_checkpoint():
                """final_checkpoint calls checkpoint() until it returns no row (Timeout at the
                deadline)."""
                nonlocal final_calls
                while True:
                    final_calls += 1
                    r = query("SELECT count(*) FROM paimon_sink.checkpoint(%s)", (SINK,), timeout_ms=60000)
                    if r[0][0] == 0:
                        return
                    if time.monotonic() >= deadline:
                        raise Timeout("the final checkpoint() never came back empty")

            def checked_final():
                """checked_final is final_checkpoint, waiting for the server and writers after an
                error before it goes to retry."""
                try:
                    return final_checkpoint()
                except psycopg2.Error:
                    try:
                        wait_ready(deadline)
                    except Timeout:
                        pass
                    raise

            retry(deadline, "final checkpoint() returning no row", checked_final)
            wait_no_doubt(deadline)
            undo = []
            if n == TAMPER_TRIAL and TAMPER:
                undo = tamper_apply(TAMPER, dboid, sink_id)
            try:
                res = retry(deadline, "comparison", lambda: query(
                    COMPARE_UPSERT_SQL if UPSERT else COMPARE_SQL, {"sink": SINK, "mark": mark},
                    timeout_ms=120000))[0]
                # a committed checkpoint's files are unlinked once their
                # removal is durable, just after the call answered: give the
                # committer a moment before a file counts as left over
                leftovers_files = stage_files()
                for _ in range(100):
                    if not [f for f in leftovers_files if f not in totals.seen_leftovers]:
                        break
                    time.sleep(0.1)
                    leftovers_files = stage_files()
                others = other_files()
            finally:
                tamper_undo(undo)
            if log.since(trial_offset).count(CRASH_LINE) == crashes_before:
                break
            notes.append(f"crash-restart during the recovery (attempt {attempt}), redone")
        else:
            raise Timeout("the server kept crash-restarting during the recovery")

        if UPSERT:
            (ledger_rows, deleted_keys, target_rows, wrong_keys, changes, snap_sum, snap_count,
             in_doubt, pending) = res
            missing = dup_ids = dup = phantom = corrupt = 0
        else:
            (ledger_rows, target_rows, missing, dup_ids, phantom, corrupt, snap_sum, _snap_max,
             in_doubt, pending) = res
            dup = dup_ids
        # a file is counted in the first trial that finds it (it stays)
        new_leftovers = [f for f in leftovers_files if f not in totals.seen_leftovers]
        totals.seen_leftovers.update(new_leftovers)
        leftovers = len(new_leftovers)
        text = log.since(trial_offset)
        crashes = text.count(CRASH_LINE)
        fired = "yes" if re.search(r"fault injected at %s\b" % re.escape(point), text) else "no"
        for m in re.findall(r"\(PID \d+\) was terminated by signal (\d+)", text):
            if not (m == "9" and action == "kill" or m == "6" and action == "panic"):
                notes.append(f"a server process died of signal {m}")
        if crashes and (action not in ("panic", "kill") or fired == "no"):
            notes.append(f"UNEXPECTED crash-restart (action {action}, fired {fired})")
            totals.unexpected.append(n)
        if fired == "yes" and action in ("panic", "kill") and not crashes:
            notes.append(f"fault {action} fired but no crash-restart was logged")

        if missing:
            reasons.append(f"missing={missing}")
        if dup:
            reasons.append(f"duplicated={dup}")
        if UPSERT:
            if wrong_keys:
                reasons.append(f"wrong_keys={wrong_keys} (target rows not the state the committed "
                               "changes left)")
            accepted = [a for t in loaders for a in t.accepted]
            if accepted:
                reasons.append(f"{len(accepted)} invalid row(s) accepted by the sink: "
                               + "; ".join(accepted[:3]) + ("; ..." if len(accepted) > 3 else ""))
        elif snap_sum != target_rows:
            reasons.append(f"the snapshot log says {snap_sum} rows were loaded in this trial, "
                           f"the target has {target_rows}")
        if phantom:
            reasons.append(f"phantom={phantom}")
        if corrupt:
            reasons.append(f"corrupt={corrupt} (target rows of committed ids not as written; "
                           "counted as phantom)")
            phantom += corrupt
        if in_doubt:
            reasons.append(f"in_doubt={in_doubt}")
        if new_leftovers:
            reasons.append(f"leftovers={leftovers}: "
                           + ", ".join(os.path.relpath(f, DATA) for f in new_leftovers[:4])
                           + (", ..." if len(new_leftovers) > 4 else ""))
        quiet_notes = []
        if len(leftovers_files) > len(new_leftovers):
            quiet_notes.append(f"{len(leftovers_files) - len(new_leftovers)} leftover staged file(s) "
                               "of earlier trials still there")
        new_others = [f for f in others if f not in totals.seen_others]
        totals.seen_others.update(new_others)
        if new_others:
            quiet_notes.append(f"{len(new_others)} new non-staged file(s) in the sink folder (not failed): "
                               + ", ".join(os.path.relpath(f, DATA) for f in new_others[:4])
                               + (", ..." if len(new_others) > 4 else "")
                               + f"; {len(others)} there in all")
        if pending:
            reasons.append(f"pending={pending} prepared checkpoint(s) not committed")
            leftovers += pending
        ok = not reasons
        if UPSERT:
            say(f"trial {n}: point={point} action={action} delay={delay:.2f}s window={window:.2f}s "
                f"fired={fired} rows={ledger_rows} deleted={deleted_keys} crashed={'yes' if crashes else 'no'} "
                f"wrong_keys={wrong_keys} in_doubt={in_doubt} leftovers={leftovers} {'ok' if ok else 'FAIL'}")
        else:
            say(f"trial {n}: point={point} action={action} delay={delay:.2f}s window={window:.2f}s "
                f"fired={fired} rows={ledger_rows} crashed={'yes' if crashes else 'no'} missing={missing} "
                f"duplicated={dup} phantom={phantom} in_doubt={in_doubt} leftovers={leftovers} "
                f"{'ok' if ok else 'FAIL'}")
        committed = sum(t.committed for t in loaders)
        rolled = sum(t.rolled_back for t in loaders)
        txfail = sum(t.failed for t in loaders)
        for note in quiet_notes:
            say(f"  note: {note}")
        if VERBOSE or not ok or notes:
            for note in notes:
                say(f"  note: {note}")
            say(f"  load: {committed} tx committed, {rolled} rolled back on purpose, {txfail} failed; "
                f"checkpoint loop: {ckpt.calls} calls, {ckpt.snapshots} snapshots, {ckpt.failed} failed; "
                f"final: {final_calls} call(s); target {target_rows} rows, snapshot rows {snap_sum}")
            if UPSERT:
                kinds = {}
                for t in loaders:
                    for k, v in t.kinds.items():
                        kinds[k] = kinds.get(k, 0) + v
                say(f"  upsert: {changes} committed changes on {ledger_rows + deleted_keys} keys; row kinds "
                    "written: " + " ".join(f"{'NULL' if k is None else k}={v}" for k, v in
                                           sorted(kinds.items(), key=lambda kv: str(kv[0])))
                    + f"; {sum(t.rejected for t in loaders)} invalid rows refused, "
                    f"{sum(t.aborted for t in loaders)} tx aborted by them; "
                    f"{snap_count} snapshot(s) in this trial")
            errs = {}
            for t in loaders + [ckpt]:
                for m, k in t.errors.items():
                    errs[m] = errs.get(m, 0) + k
            for m, k in sorted(errs.items(), key=lambda kv: -kv[1])[:8]:
                say(f"  client error {k:4d} x {m}")
        if not ok:
            say("  FAIL: " + "; ".join(reasons))
            kinds = [k for k, v in (("missing", missing), ("duplicated", dup_ids), ("phantom", phantom - corrupt),
                                    ("corrupt", corrupt)) if v]
            try:
                if UPSERT:
                    if wrong_keys:
                        evidence_upsert(n)
                else:
                    evidence(n, kinds)
            except Exception as e:
                say(f"  evidence: {short(e)}")
            diagnose(log, trial_offset)

        totals.trials += 1
        totals.crashes += crashes
        totals.missing += missing
        totals.duplicated += dup
        totals.phantom += phantom
        totals.in_doubt += in_doubt
        totals.leftovers += leftovers
        totals.failed += 0 if ok else 1
        totals.rows += ledger_rows
        if UPSERT:
            totals.wrong_keys += wrong_keys
            totals.deleted += deleted_keys
            totals.changes += changes
            totals.rejected += sum(t.rejected for t in loaders)
            totals.aborted += sum(t.aborted for t in loaders)
            for t in loaders:
                for k, v in t.kinds.items():
                    totals.kinds[k] = totals.kinds.get(k, 0) + v
        totals.committed += committed
        totals.rolled_back += rolled
        totals.tx_failed += txfail
        totals.snapshots += ckpt.snapshots
        totals.ckpt_calls += ckpt.calls
        totals.ckpt_failed += ckpt.failed
        key = f"{point}/{action}"
        f = totals.fired.setdefault(key, [0, 0])
        f[0] += 1
        f[1] += 1 if fired == "yes" else 0
        totals.write_state()

        # next trial starts empty; a late row of this one would be a phantom there
        retry(time.monotonic() + RECOVERY_TIMEOUT, "truncate",
              lambda: query("TRUNCATE target_u, ledger_u, history_u" if UPSERT else "TRUNCATE target, ledger"))
        return ok
    except Timeout as e:
        aborted = True
        text = log.since(trial_offset)
        fired = "yes" if re.search(r"fault injected at %s\b" % re.escape(point), text) else "no"
        crashes = text.count(CRASH_LINE)
        if UPSERT:
            say(f"trial {n}: point={point} action={action} delay={delay:.2f}s window={window:.2f}s "
                f"fired={fired} rows=? deleted=? crashed={'yes' if crashes else 'no'} wrong_keys=? "
                f"in_doubt=? leftovers=? FAIL")
        else:
            say(f"trial {n}: point={point} action={action} delay={delay:.2f}s window={window:.2f}s "
                f"fired={fired} rows=? crashed={'yes' if crashes else 'no'} missing=? duplicated=? phantom=? "
                f"in_doubt=? leftovers=? FAIL")
        say(f"  FAIL: could not recover: {e}")
        if not any(r.startswith("hang") for r in reasons):
            diagnose(log, trial_offset)
        totals.trials += 1
        totals.failed += 1
        totals.crashes += crashes
        totals.write_state()
        raise
    finally:
        stop.set()
        if not aborted:
            for t in loaders + [ckpt]:
                t.join(1)


# --- failover mode ---------------------------------------------------------------

# A standby's settings beyond its primary's postgresql.conf, which
# pg_basebackup copies (primary_conninfo comes with -R).
STANDBY_CONF = "hot_standby = on\n"


class Failover:
    """The state of a failover soak between trials: the primary of the
    moment (a harness Node), the database oid and the sink id on it."""

    def __init__(self, primary, dboid, sink_id):
        """__init__ records the first primary and what setup made on it."""
        self.primary = primary
        self.standby = None  # the trial's standby, once it is made
        self.dboid, self.sink_id = dboid, sink_id

    def show_logs(self, lines=30):
        """show_logs prints the tails of the primary's and the standby's server logs (a trial that
        could not go on: a node that would not start, promote or stream)."""
        for node in (self.primary, self.standby):
            if node is None or not os.path.exists(node.server_log):
                continue
            with open(node.server_log, errors="replace") as f:
                tail = f.readlines()[-lines:]
            say(f"  --- server log of {node.name} (last {len(tail)} lines)")
            for line in tail:
                say("    " + line.rstrip("\n"))


def failover_params(rng, sync):
    """failover_params draws a failover trial's moment: whether the standby's base backup is taken
    under load (30%: staged files are written, sealed and removed while it copies them), the action
    that ends the primary (kill: SIGKILL to the postmaster and its processes; immediate: pg_ctl stop
    -m immediate), a fault point to pause at first (None 40% of the time), the load before the pause
    is armed (or before the action), and the longest wait for the point to be reached."""
    backup_under_load = rng.random() < 0.3
    action = rng.choice(ACTIONS or ["kill", "immediate"])
    point = rng.choice(POINTS) if rng.random() < 0.6 else None
    return (sync, backup_under_load, point, action, round(rng.uniform(0.5, 2.5), 2),
            round(rng.uniform(0.5, 2.0), 2))


def wait_replication(primary_server, name, sync, deadline):
    """wait_replication waits until the primary streams to standby name as a synchronous standby
    (sync True), an asynchronous one (False) or either (None); Timeout at the deadline."""
    want = {True: "sync", False: "async", None: "any"}[sync]

    def check():
        """check raises until pg_stat_replication shows the standby streaming as wanted."""
        r = primary_server.query("SELECT state, sync_state FROM pg_stat_replication WHERE application_name = %s",
                                 (name,), timeout_ms=5000)
        if not r or r[0][0] != "streaming" or sync is not None and r[0][1] != want:
            raise psycopg2.OperationalError(f"standby {name}: {r[0] if r else 'not connected'}, want streaming/{want}")
        return True
    retry(deadline, f"standby {name} streaming ({want})", check)


def set_sync(server, sync, deadline):
    """set_sync makes the node's commits wait for any standby's flush (sync: synchronous_standby_names
    '*') or for none (ALTER SYSTEM, then a reload)."""
    sql = "ALTER SYSTEM SET synchronous_standby_names = '*'" if sync else \
        "ALTER SYSTEM RESET synchronous_standby_names"
    retry(deadline, "synchronous_standby_names", lambda: server.query(sql))
    retry(deadline, "pg_reload_conf()", lambda: server.query("SELECT pg_reload_conf()"))


def final_checkpoint_failover(deadline):
    """final_checkpoint_failover calls checkpoint() on the promoted node until it returns no row;
    returns (calls, error): error is None when it did, else why not (a server error three times,
    e.g. a staged file missing, or the deadline); connection errors are retried."""
    calls, errors, last = 0, [], None
    while True:
        check_stop()
        calls += 1
        try:
            r = query("SELECT count(*) FROM paimon_sink.checkpoint(%s)", (SINK,), timeout_ms=60000)
            if r[0][0] == 0:
                return calls, None
            last = "it kept committing snapshots"
        except psycopg2.Error as e:
            last = short(e)
            if e.pgcode:
                errors.append(last)
                if len(errors) >= 3:
                    return calls, f"{len(errors)} errors, the last: {last}"
        if time.monotonic() >= deadline:
            return calls, f"not empty within the timeout; last: {last}"
        time.sleep(0.3)


def reset_sink(state):
    """reset_sink leaves the promoted node clean for the next trial after one that was not: our
    in-doubt transactions rolled back, the sink dropped (force: its prepared checkpoints and staged
    files go) and created again."""
    deadline = time.monotonic() + RECOVERY_TIMEOUT
    for (gid,) in retry(deadline, "in-doubt list", lambda: query(
            "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%' AND database = current_database()")):
        try:
            query("ROLLBACK PREPARED %s", (gid,))
        except psycopg2.Error as e:
            say(f"  reset: ROLLBACK PREPARED {gid}: {short(e)}")
    retry(deadline, "drop_sink()", lambda: query("SELECT paimon_sink.drop_sink(%s, true)", (SINK,)))
    retry(deadline, "create_sink()", lambda: query(APPEND_SINK, (SINK,)))
    state.sink_id = query("SELECT sink_id FROM paimon_sink.sink_definition WHERE sink_name = %s", (SINK,))[0][0]
    wait_ready(deadline)
    say(f"  reset: sink {SINK} dropped and created again (sink id {state.sink_id}) for the next trial")


def run_failover_trial(n, params, totals, state):
    """run_failover_trial runs failover trial n: a fresh standby of the primary, synchronous or not,
    load and checkpoints on the primary, the primary killed at a random moment (after a fault point
    paused, for some), the standby promoted, its writers and a checkpoint until empty awaited, then
    target against ledger on it; the old primary is discarded and the promoted node is the next
    trial's primary.  Prints the trial's line, adds to totals, returns whether it was ok (Timeout when
    it could not recover)."""
    sync, backup_under_load, point, action, delay, window = params
    primary = state.primary
    rng = random.Random(SEED * 1000003 + n)
    deadline = time.monotonic() + RECOVERY_TIMEOUT
    reasons, notes = [], []
    old_log = ServerLog(primary.server_log)
    mark = retry(deadline, "snapshot mark", lambda: query(
        "SELECT coalesce(max(snapshot_id), 0) FROM paimon_sink.snapshots WHERE sink_name = %s", (SINK,))[0][0])
    stop = threading.Event()
    loaders = [Loader(n, c, stop, random.Random(rng.random())) for c in range(1, CLIENTS + 1)]
    ckpt = Checkpointer(stop, random.Random(rng.random()), sql_checkpoints=0.3)

    def start_load():
        """start_load starts the load and checkpoint sessions on the primary."""
        for t in loaders + [ckpt]:
            t.start()

    fired = "-"
    try:
        # a standby of the primary (its base backup taken under load, for some), streaming as
        # this trial wants
        t_setup = time.monotonic()
        if backup_under_load:
            start_load()
            stop.wait(rng.uniform(0.2, 0.8))
        state.standby = None
        standby = Node.create_standby(primary, os.path.join(WORK, "clusters", f"soak_{n}"), STANDBY_CONF)
        state.standby = standby
        standby.start()
        new_log = ServerLog(standby.server_log)
        pserver = primary.server(default_app="soak_control")
        wait_replication(pserver, standby.name, None, deadline)
        set_sync(pserver, sync, deadline)
        wait_replication(pserver, standby.name, sync, deadline)
        setup_s = time.monotonic() - t_setup
        if not backup_under_load:
            start_load()
        t0 = time.monotonic()
        while time.monotonic() < t0 + delay:
            check_stop()
            time.sleep(0.05)
        if point:
            fired = "no"
            retry(deadline, "inject_fault()",
                  lambda: query("SELECT paimon_sink.inject_fault(%s, 'pause', 1)", (point,)))
            armed = time.monotonic()
            while time.monotonic() < armed + window:
                check_stop()
                r = query("SELECT paused_pid FROM paimon_sink.faults WHERE point = %s", (point,), timeout_ms=5000)
                if r and r[0][0] is not None:
                    fired = "yes"
                    break
                time.sleep(0.05)
        # the primary goes, under load
        if action == "kill":
            primary.kill9()
        else:
            primary.stop("immediate")
        killed = time.monotonic()
    finally:
        stop.set()
    for t in loaders + [ckpt]:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in loaders + [ckpt] if t.is_alive()]
    if stuck:
        raise Timeout(f"hang: {', '.join(stuck)} did not end after the primary went")

    # the standby takes over
    standby.promote()
    promoted_s = time.monotonic() - killed
    use_node(standby)
    set_sync(SERVER, False, deadline)
    wait_ready(deadline)
    ready_s = time.monotonic() - killed
    final_calls, final_error = final_checkpoint_failover(min(deadline, time.monotonic() + 20))
    if final_error:
        reasons.append(f"final checkpoint(): {final_error}")
    wait_no_doubt(deadline)
    undo = []
    if n == TAMPER_TRIAL and TAMPER:
        undo = tamper_apply(TAMPER, state.dboid, state.sink_id)
    try:
        res = retry(deadline, "comparison", lambda: query(COMPARE_SQL, {"sink": SINK, "mark": mark},
                                                          timeout_ms=120000))[0]
        ours = retry(deadline, "in_doubt view", lambda: query(
            "SELECT count(*) FILTER (WHERE ours), count(*) FROM paimon_sink.in_doubt"))[0]
        acked = [i for t in loaders for i in t.acked]
        lost = retry(deadline, "acknowledged commits", lambda: query(
            "SELECT count(*) FROM unnest(%s::bigint[]) a(id) WHERE NOT EXISTS "
            "(SELECT 1 FROM ledger l WHERE l.id = a.id)", (acked,)))[0][0]
        leftovers_files = [os.path.relpath(f, DATA) for f in stage_files()]
    finally:
        tamper_undo(undo)
    (ledger_rows, target_rows, missing, dup, phantom, corrupt, snap_sum, _snap_max, in_doubt, pending) = res
    in_doubt = max(in_doubt, ours[1])

    if missing:
        reasons.append(f"missing={missing}")
    if dup:
        reasons.append(f"duplicated={dup}")
    if phantom:
        reasons.append(f"phantom={phantom}")
    if corrupt:
        reasons.append(f"corrupt={corrupt} (target rows of committed ids not as written; counted as phantom)")
        phantom += corrupt
    if snap_sum != target_rows:
        reasons.append(f"the snapshot log says {snap_sum} rows were loaded in this trial, the target has "
                       f"{target_rows}")
    if in_doubt:
        reasons.append(f"in_doubt={in_doubt} ({ours[0]} of them ours by the in_doubt view)")
    if pending:
        reasons.append(f"pending={pending} prepared checkpoint(s) not committed")
    if leftovers_files:
        reasons.append(f"leftovers={len(leftovers_files)}: " + ", ".join(leftovers_files[:4])
                       + (", ..." if len(leftovers_files) > 4 else ""))
    if lost and sync:
        reasons.append(f"{lost} acknowledged commit(s) not on the synchronous standby: the setup is not "
                       "synchronous")
    ok = not reasons
    say(f"trial {n}: sync={'sync' if sync else 'async'} backup={'under-load' if backup_under_load else 'idle'} "
        f"action={action} point={point or '-'} "
        f"delay={delay:.2f}s fired={fired} rows={ledger_rows} lost_acked={lost} missing={missing} "
        f"duplicated={dup} phantom={phantom} in_doubt={in_doubt} leftovers={len(leftovers_files)} "
        f"{'ok' if ok else 'FAIL'}")
    if VERBOSE or not ok:
        committed = sum(t.committed for t in loaders)
        say(f"  load: {committed} tx committed ({len(acked)} rows acknowledged), "
            f"{sum(t.rolled_back for t in loaders)} rolled back on purpose, {sum(t.failed for t in loaders)} "
            f"failed; checkpoint loop: {ckpt.calls} calls, {ckpt.snapshots} snapshots, {ckpt.sql_checkpoints} "
            f"CHECKPOINTs, {ckpt.failed} failed; final: {final_calls} call(s); target {target_rows} rows, "
            f"snapshot rows {snap_sum}")
        say(f"  timing: standby ready {setup_s:.1f}s; promoted {promoted_s:.1f}s and writers ready "
            f"{ready_s:.1f}s after the primary went")
    for note in notes:
        say(f"  note: {note}")
    if not ok:
        say("  FAIL: " + "; ".join(reasons))
        kinds = [k for k, v in (("missing", missing), ("duplicated", dup), ("phantom", phantom - corrupt),
                                ("corrupt", corrupt)) if v]
        try:
            evidence(n, kinds)
        except Exception as e:
            say(f"  evidence: {short(e)}")
        diagnose(new_log, new_log.offset, [(f"log of the old primary {primary.name} in this trial", old_log,
                                            old_log.offset)])

    totals.trials += 1
    totals.crashes += 1
    totals.missing += missing
    totals.duplicated += dup
    totals.phantom += phantom
    totals.in_doubt += in_doubt
    totals.leftovers += len(leftovers_files) + pending
    totals.failed += 0 if ok else 1
    totals.rows += ledger_rows
    totals.committed += sum(t.committed for t in loaders)
    totals.rolled_back += sum(t.rolled_back for t in loaders)
    totals.tx_failed += sum(t.failed for t in loaders)
    totals.snapshots += ckpt.snapshots
    totals.ckpt_calls += ckpt.calls
    totals.ckpt_failed += ckpt.failed
    totals.lost_acked += lost
    key = f"{'sync' if sync else 'async'}/{'under-load' if backup_under_load else 'idle'}/{point or '-'}/{action}"
    f = totals.fired.setdefault(key, [0, 0])
    f[0] += 1
    f[1] += 1 if fired == "yes" else 0
    totals.write_state()

    # the old primary goes for good; the promoted node is the next primary
    primary.discard()
    state.primary, state.standby = standby, None
    if final_error or in_doubt or pending or leftovers_files:
        reset_sink(state)
    retry(time.monotonic() + RECOVERY_TIMEOUT, "truncate", lambda: query("TRUNCATE target, ledger"))
    return ok


APPEND_DDL = """
    CREATE EXTENSION paimon_sink;
    -- no primary key: a row delivered twice must show
    CREATE TABLE target (id bigint NOT NULL, client int NOT NULL, trial int NOT NULL, payload text);
    CREATE INDEX target_id ON target (id);
    CREATE TABLE ledger (id bigint PRIMARY KEY, client int NOT NULL, trial int NOT NULL,
                         xid xid8 DEFAULT pg_current_xact_id());
    CREATE TABLE evidence (trial int, kind text, id bigint);
"""
APPEND_SINK = "SELECT foreign_table FROM paimon_sink.create_sink(%s, 'target', buckets => 4, bucket_key => '{id}')"

UPSERT_DDL = """
    CREATE EXTENSION paimon_sink;
    -- NOT NULL beyond the key: a key-only -D must still be taken
    CREATE TABLE target_u (id bigint PRIMARY KEY, v text NOT NULL, trial int NOT NULL,
                           client int NOT NULL, version bigint NOT NULL);
    -- the state the committed changes leave, per key
    CREATE TABLE ledger_u (id bigint PRIMARY KEY, v text, version bigint NOT NULL, trial int NOT NULL,
                           client int NOT NULL, deleted bool NOT NULL,
                           xid xid8 DEFAULT pg_current_xact_id());
    -- every committed change, in commit order per key (one session writes a key)
    CREATE TABLE history_u (seq bigserial PRIMARY KEY, id bigint NOT NULL, version bigint NOT NULL,
                            kind text, xid xid8 DEFAULT pg_current_xact_id());
    CREATE INDEX history_u_id ON history_u (id);
    CREATE TABLE evidence (trial int, kind text, id bigint);
"""
UPSERT_SINK = "SELECT foreign_table FROM paimon_sink.create_sink(%s, 'target_u', mode => 'upsert', buckets => 4)"


def setup():
    """setup creates the extension, the mode's tables (append: target,
    ledger; upsert: target_u, ledger_u, history_u; both: evidence) and the
    sink, and returns the database oid and the sink id."""
    conn = connect("soak_setup", 60000)
    with conn.cursor() as cur:
        cur.execute(UPSERT_DDL if UPSERT else APPEND_DDL)
        cur.execute(UPSERT_SINK if UPSERT else APPEND_SINK, (SINK,))
        cur.execute("SELECT sink_id FROM paimon_sink.sink_definition WHERE sink_name = %s", (SINK,))
        sink_id = cur.fetchone()[0]
        cur.execute("SELECT oid FROM pg_database WHERE datname = current_database()")
        dboid = cur.fetchone()[0]
    conn.close()
    return dboid, sink_id


def main():
    """main sets up, runs the trials (stopping early on a failure to recover, or the first failure
    with SOAK_STOP_ON_FAIL), prints the totals and checks and returns the exit status."""
    started = time.monotonic()
    totals = Totals()
    totals.write_state()
    log = ServerLog(SERVER_LOG)
    deadline = time.monotonic() + RECOVERY_TIMEOUT
    retry(deadline, "connect", lambda: query("SELECT 1"))
    dboid, sink_id = setup()
    wait_ready(time.monotonic() + RECOVERY_TIMEOUT)
    if FAILOVER:
        say(f"=== setup: target (no primary key), ledger, sink {SINK} (4 buckets on id); writers ready")
        say(f"=== trials: a streaming standby per trial ({SYNC} sync/async), {CLIENTS} load clients, "
            "checkpoint() every 100-300 ms (30% followed by a CHECKPOINT); the primary ends by "
            f"{','.join(ACTIONS) if ACTIONS else 'kill,immediate'}, 60% of the time once a paused fault point "
            f"of {','.join(POINTS)} is reached; then the standby is promoted and checked")
    elif UPSERT:
        say(f"=== setup: target_u (primary key id), ledger_u, history_u, sink {SINK} (upsert, 4 buckets "
            "on the primary key); writers ready")
        say(f"=== trials: {CLIENTS} load clients, {KEYS} keys each, checkpoint() every 100-300 ms; "
            f"points {','.join(POINTS)}; "
            f"actions {','.join(ACTIONS) if ACTIONS else 'error,fatal,panic,kill (85%), pause (15%)'}")
    else:
        say(f"=== setup: target (no primary key), ledger, sink {SINK} (4 buckets on id); writers ready")
        say(f"=== trials: {CLIENTS} load clients, checkpoint() every 100-300 ms; points {','.join(POINTS)}; "
            f"actions {','.join(ACTIONS) if ACTIONS else 'error,fatal,panic,kill (85%), pause (15%)'}")
    rng = random.Random(SEED)
    rc = 0
    lib = lib_identity()
    lib_changed = None
    state = Failover(Node(CLUSTER_DIR), dboid, sink_id) if FAILOVER else None
    first_sync = rng.random() < 0.5
    try:
        for n in range(1, TRIALS + 1):
            try:
                if FAILOVER:
                    sync = {"sync": True, "async": False, "random": rng.random() < 0.5}.get(
                        SYNC, first_sync == (n % 2 == 1))
                    ok = run_failover_trial(n, failover_params(rng, sync), totals, state)
                else:
                    ok = run_trial(n, trial_params(rng), log, totals, dboid, sink_id)
            except (Timeout, RuntimeError) as e:
                # RuntimeError: a node of the failover mode would not start, stop or promote
                if not FAILOVER and not isinstance(e, Timeout):
                    raise
                if FAILOVER:
                    totals.trials += 1
                    totals.failed += 1
                    totals.write_state()
                    say(f"trial {n}: FAIL: could not recover: {e}")
                    state.show_logs()
                rc = 2
                break
            finally:
                if lib_changed is None and lib_identity() != lib:
                    lib_changed = n
                    say(f"  WARNING: {LIB} was replaced during trial {n} (a make install meanwhile?): "
                        "new backends may load the new build; later results may not be trustworthy")
            if not ok:
                rc = 1
                if STOP_ON_FAIL:
                    say("soak: SOAK_STOP_ON_FAIL=1: stopping after the failed trial")
                    break
    except Stop as e:
        say(f"soak: interrupted ({e}) during trial {totals.trials + 1}")
        rc = 130
    elapsed = time.monotonic() - started
    say("")
    if UPSERT:
        say(f"soak totals: {totals.trials} trial(s) in {elapsed:.0f}s, {totals.failed} failed; "
            f"{totals.rows} live and {totals.deleted} deleted ledger keys from {totals.changes} committed "
            f"changes, {totals.committed} tx committed, {totals.rolled_back} rolled back on purpose, "
            f"{totals.aborted} aborted by an invalid row, {totals.tx_failed} failed (faults); "
            f"checkpoint loop {totals.ckpt_calls} calls, {totals.snapshots} snapshots, {totals.ckpt_failed} failed")
        say("soak row kinds written: " + " ".join(
            f"{'NULL' if k is None else k}={v}" for k, v in sorted(totals.kinds.items(), key=lambda kv: str(kv[0])))
            + f"; invalid rows refused: {totals.rejected}")
    else:
        say(f"soak totals: {totals.trials} trial(s) in {elapsed:.0f}s, {totals.failed} failed; "
            f"{totals.rows} ledger rows, {totals.committed} tx committed, {totals.rolled_back} rolled back "
            f"on purpose, {totals.tx_failed} failed (faults); checkpoint loop {totals.ckpt_calls} calls, "
            f"{totals.snapshots} snapshots, {totals.ckpt_failed} failed")
    if FAILOVER:
        say(f"soak failovers: {totals.crashes}; acknowledged commits not on the promoted node (async "
            f"standbys may lag): {totals.lost_acked}")
        for key in sorted(totals.fired):
            say(f"  {key:50s} trials {totals.fired[key][0]:3d}  paused {totals.fired[key][1]:3d}")
    else:
        fired_n = sum(v[1] for v in totals.fired.values())
        say(f"soak faults: fired in {fired_n} of {totals.trials} trial(s); crash-restarts {totals.crashes}"
            + (f"; unexpected crash-restarts in trial(s) {totals.unexpected}" if totals.unexpected else ""))
        for key in sorted(totals.fired):
            say(f"  {key:45s} trials {totals.fired[key][0]:3d}  fired {totals.fired[key][1]:3d}")
    if totals.seen_others:
        say(f"soak: {len(totals.seen_others)} non-staged file(s) appeared in the sink folder: "
            + ", ".join(sorted(os.path.basename(f) for f in totals.seen_others)[:6]))
    if lib_changed is not None:
        say(f"soak: WARNING: {LIB} was replaced during trial {lib_changed}; results from there on "
            "may not be trustworthy")
    if UPSERT:
        say(f"soak checks: wrong_keys={totals.wrong_keys} in_doubt={totals.in_doubt} "
            f"leftovers={totals.leftovers} -> " + {0: "ok", 130: "interrupted"}.get(rc, "FAIL"))
    else:
        say(f"soak checks: missing={totals.missing} duplicated={totals.duplicated} phantom={totals.phantom} "
            f"in_doubt={totals.in_doubt} leftovers={totals.leftovers} -> "
            + {0: "ok", 130: "interrupted"}.get(rc, "FAIL"))
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Stop as e:
        say(f"soak: interrupted ({e})")
        sys.exit(130)
    except Timeout as e:
        say(f"soak: ERROR: {e}")
        sys.exit(2)
    except Exception:
        traceback.print_exc()
        sys.exit(3)
