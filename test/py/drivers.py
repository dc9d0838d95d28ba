#!/usr/bin/python3
"""test/drivers -- what the drivers a connector uses do against paimon_sink.

Checks, on one throwaway cluster, the driver facts that docs/connectors.md
states (it quotes this program's output):

* psycopg2 and psycopg 3 open a transaction block implicitly (their default,
  non-autocommit connection): prepare_commit() on it is refused with 25001;
  on an autocommit connection, with the write in a transaction of its own
  (psycopg2: autocommit off for the write; psycopg 3: `with
  conn.transaction()`) that names the job with write_as(), the rows are
  prepared (expected_rows matching) and committed;
* psycopg 3: prepare_commit() inside `with conn.transaction()` is refused
  with 25001 too (the block is for writes only);
* pgJDBC (test/java/XaProbe.java, compiled here with javac): one-phase XA
  (start, write_as, INSERT, end, commit(xid, onePhase = true)) commits and
  the rows are staged, prepared and committed; two-phase XA's prepare(xid)
  fails with XAException errorCode XAER_RMFAIL whose cause has SQLSTATE
  0A000, and nothing of that branch is staged; a job function on a
  connection with setAutoCommit(false) gets 25001, with
  setAutoCommit(true) it runs.

The job's identity is the one restart_job() hands out: commit user
"drivers-job", its fence epoch.  Each check prints what the driver reported,
verbatim (exception class, SQLSTATE, first line of the message), and ok or
FAILED.  The last line is always
    drivers: checks=N failed=N
(-1: not measured).  Exit 0 only when every check passed.

Not in test/check (it needs a JDK): the wrapper test/drivers installs
default-jdk-headless, libpostgresql-jdbc-java and python3-psycopg when they
are missing (root).  Environment: DRIVERS_SKIP_BUILD=1 uses the installed
extension; KEEP_TMP=1 keeps the temp dir.  The server listens on its unix
socket and, for pgJDBC (which has no unix sockets), on 127.0.0.1.
"""
import os
import subprocess
import sys

import harness

psycopg2 = harness.psycopg2
try:
    import psycopg
except ImportError:
    psycopg = None

ROOT = harness.ROOT
SINK = "events_sink"
JOB = "drivers-job"
JDBC_JAR = "/usr/share/java/postgresql.jar"


class Fail(Exception):
    """Fail ends the run: the harness could not go on."""


class Checks:
    """Checks counts the checks and prints each with its verdict."""

    def __init__(self):
        """__init__ starts with no checks."""
        self.total = 0
        self.failed = 0

    def check(self, name, passed, seen):
        """check records the check name, which passed or not, and prints
        seen, what the driver reported."""
        self.total += 1
        if not passed:
            self.failed += 1
        print("drivers: %-28s %s  %s" % (name, "ok" if passed else "FAILED", seen), flush=True)


def first_line(text):
    """first_line returns the first line of text, stripped."""
    return str(text).strip().splitlines()[0] if str(text).strip() else ""


def pg_error(e):
    """pg_error describes a psycopg2 or psycopg 3 error: class, SQLSTATE and
    the first line of its message."""
    state = getattr(e, "pgcode", None) or getattr(e, "sqlstate", None)
    return "%s.%s sqlstate=%s %r" % (type(e).__module__, type(e).__name__, state, first_line(e))


def prepare_sql():
    """prepare_sql is the prepare_commit call of one writer id with its
    expected rows (arguments: checkpoint id, writer id, epoch, rows)."""
    return ("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.prepare_commit("
            "'%s', '%s', %%s, writer_id => %%s, fence_epoch => %%s, expected_rows => %%s)" % (SINK, JOB))


COMMIT_SQL = "SELECT * FROM paimon_sink.commit('%s', '%s', %%s, fence_epoch => %%s)" % (SINK, JOB)
WRITE_AS_SQL = "SELECT paimon_sink.write_as('%s', '%s', %%s, %%s)" % (SINK, JOB)
INSERT_SQL = "INSERT INTO %s (id, payload) SELECT g, 'py' FROM generate_series(%%s::bigint, %%s::bigint) g" % SINK


def target_rows(server, first, n):
    """target_rows counts the target's rows with ids first .. first + n - 1."""
    return server.query("SELECT count(*) FROM events WHERE id BETWEEN %s AND %s", (first, first + n - 1))[0][0]


def check_psycopg2(checks, server, epoch):
    """check_psycopg2 checks psycopg2's implicit transaction block and the
    way around it (checkpoint 1, writer id 0, ids 1..3)."""
    conn = psycopg2.connect(host=server.host, port=server.port, user=server.user, dbname="postgres")
    try:
        try:
            with conn.cursor() as cur:
                cur.execute(prepare_sql(), (1, 0, epoch, 0))
            checks.check("psycopg2 default", False, "prepare_commit ran (autocommit=%s)" % conn.autocommit)
        except psycopg2.Error as e:
            checks.check("psycopg2 default", e.pgcode == "25001",
                         "psycopg2 %s autocommit=False: %s" % (psycopg2.__version__.split()[0], pg_error(e)))
        conn.rollback()
        conn.autocommit = False  # the write: a transaction of its own
        with conn.cursor() as cur:
            cur.execute(WRITE_AS_SQL, (0, epoch))
            cur.execute(INSERT_SQL, (1, 3))
        conn.commit()
        conn.autocommit = True  # the job functions
        with conn.cursor() as cur:
            cur.execute(prepare_sql(), (1, 0, epoch, 3))
            prepared = cur.fetchone()[0]
            cur.execute(COMMIT_SQL, (1, epoch))
        rows = target_rows(server, 1, 3)
        checks.check("psycopg2 autocommit", prepared == 3 and rows == 3,
                     "write_as + INSERT committed, prepared_rows=%s target_rows=%s sent=3" % (prepared, rows))
    finally:
        harness.close_quietly(conn)


def check_psycopg3(checks, server, epoch):
    """check_psycopg3 checks psycopg 3's implicit transaction block, the
    refusal inside conn.transaction() and the way that works (checkpoint 2,
    writer id 0, ids 11..13)."""
    if psycopg is None:
        checks.check("psycopg3", False, "module psycopg not importable (install python3-psycopg)")
        return
    conn = psycopg.connect(host=server.host, port=server.port, user=server.user, dbname="postgres")
    try:
        try:
            conn.execute(prepare_sql(), (2, 0, epoch, 0))
            checks.check("psycopg3 default", False, "prepare_commit ran (autocommit=%s)" % conn.autocommit)
        except psycopg.Error as e:
            checks.check("psycopg3 default", e.sqlstate == "25001",
                         "psycopg %s autocommit=False: %s" % (psycopg.__version__, pg_error(e)))
        conn.rollback()
        conn.autocommit = True
        try:
            with conn.transaction():
                conn.execute(prepare_sql(), (2, 0, epoch, 0))
            checks.check("psycopg3 in transaction()", False, "prepare_commit ran inside conn.transaction()")
        except psycopg.Error as e:
            checks.check("psycopg3 in transaction()", e.sqlstate == "25001", pg_error(e))
        with conn.transaction():  # the write only
            conn.execute(WRITE_AS_SQL, (0, epoch))
            conn.execute(INSERT_SQL, (11, 13))
        prepared = conn.execute(prepare_sql(), (2, 0, epoch, 3)).fetchone()[0]
        conn.execute(COMMIT_SQL, (2, epoch))
        rows = target_rows(server, 11, 3)
        checks.check("psycopg3 autocommit", prepared == 3 and rows == 3,
                     "autocommit=True, write in conn.transaction(): prepared_rows=%s target_rows=%s sent=3"
                     % (prepared, rows))
    finally:
        harness.close_quietly(conn)


def parse_probe(out):
    """parse_probe reads XaProbe's lines "name: key=value ..." into a dict
    name -> the rest of the line."""
    lines = {}
    for line in out.splitlines():
        name, _, rest = line.partition(": ")
        lines[name] = rest
    return lines


def check_pgjdbc(checks, cluster, epoch):
    """check_pgjdbc compiles and runs test/java/XaProbe.java against the
    cluster over 127.0.0.1 (checkpoints 3 to 5, writer id 1, ids 1001..)."""
    jdir = os.path.join(cluster.work, "java")
    os.makedirs(jdir, exist_ok=True)
    src = os.path.join(ROOT, "test", "java", "XaProbe.java")
    if not os.path.exists(JDBC_JAR):
        checks.check("pgjdbc", False, "%s missing (install libpostgresql-jdbc-java)" % JDBC_JAR)
        return
    r = subprocess.run(["javac", "-d", jdir, "-cp", JDBC_JAR, src], capture_output=True, text=True)
    if r.returncode != 0:
        checks.check("pgjdbc javac", False, first_line(r.stderr or r.stdout))
        return
    r = subprocess.run(["java", "-cp", JDBC_JAR + ":" + jdir, "XaProbe", "127.0.0.1", str(cluster.port), SINK,
                        JOB, str(epoch), "3", "1001"], capture_output=True, text=True, timeout=300)
    print(r.stdout, end="")
    if r.returncode != 0:
        checks.check("pgjdbc run", False, "exit %d: %s" % (r.returncode, first_line(r.stderr)))
        return
    p = parse_probe(r.stdout)
    one = p.get("one_phase", "")
    checks.check("pgjdbc one-phase XA", "committed=true prepared_rows=3 target_rows=3" in one, one)
    two = p.get("two_phase_prepare", "")
    checks.check("pgjdbc two-phase XA prepare",
                 "errorCode=-7 (XAER_RMFAIL)" in two and "sqlstate=0A000" in two, two)
    after = p.get("two_phase_after", "")
    checks.check("pgjdbc two-phase nothing staged", after == "prepared_rows=0 target_rows=0", after)
    off = p.get("autocommit_false", "")
    checks.check("pgjdbc autocommit false", "sqlstate=25001" in off, off)
    on = p.get("autocommit_true", "")
    checks.check("pgjdbc autocommit true", on == "exception=none", on)


def main():
    """main runs the checks on a throwaway cluster and prints the last line."""
    checks = Checks()
    cluster = harness.Cluster("drivers", "drivers", Fail)
    measured = False
    try:
        cluster.create_workdir()
        if os.environ.get("DRIVERS_SKIP_BUILD") != "1":
            log = os.path.join(cluster.work, "build.log")
            if cluster.build_install(log) != 0:
                raise Fail("build failed: see %s" % log)
        cluster.create("listen_addresses = '127.0.0.1'\n")
        cluster.start()
        server = cluster.server()
        server.query("CREATE EXTENSION paimon_sink")
        if not server.wait_writers_ready(60):
            raise Fail("the writers did not become ready")
        server.query("CREATE TABLE events (id bigint PRIMARY KEY, payload text)")
        server.query("SELECT * FROM paimon_sink.create_sink('%s', 'events')" % SINK)
        epoch = server.query("SELECT fence_epoch FROM paimon_sink.restart_job('%s', '%s')" % (SINK, JOB))[0][0]
        print("drivers: restart_job('%s', '%s') fence_epoch=%s" % (SINK, JOB, epoch), flush=True)
        check_psycopg2(checks, server, epoch)
        check_psycopg3(checks, server, epoch)
        check_pgjdbc(checks, cluster, epoch)
        measured = True
    except Exception as e:
        print("drivers: ERROR %s" % harness.describe(e), file=sys.stderr, flush=True)
    finally:
        cluster.cleanup()
    if measured:
        print("drivers: checks=%d failed=%d" % (checks.total, checks.failed))
    else:
        print("drivers: checks=-1 failed=-1")
    return 0 if measured and checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
