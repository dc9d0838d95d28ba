"""harness -- what paimon_sink's Python test programs share.

test/py/job.py, test/py/bench.py, test/py/cdc.py and test/py/fuzz.py (run
as the invoking user, root or not) and test/py/soak.py and
test/py/demo_ckpt.py (run as the server's OS user inside a cluster their
bash wrapper made) import it from beside them; the
wrappers of the last two copy this folder into their temp dir, so that the
OS user postgres can read it wherever the checkout is.  It holds:

* Cluster: one throwaway cluster of test/lib/cluster.sh, driven through bash
  (the shell functions stay the one definition of temp dir, build, initdb,
  start and cleanup, which test/check and test/demo use too);
* Server: connections as the cluster's OS user over its unix socket, one
  statement on a fresh connection, the "writers ready" check;
* Node: one server that a program drives itself with pg_ctl, laid out as
  test/lib/cluster.sh lays a cluster out, for the soak's failover mode (a
  streaming standby made with pg_basebackup, promoted when its primary is
  killed);
* Pooler: PgBouncer (Debian's package) in front of a cluster, in session
  or transaction pooling with a small pool, as the cluster's OS user on a
  unix socket in the temp dir (test/job --pooler), with PooledServer, a
  Server that reaches the cluster through it;
* RunLog: a job program's log (lines with the seconds since its start, on
  stdout and into a log file; details only into the file), and keep_logs,
  which keeps a failed run's logs and the server log past the cleanup;
* the sanitizer runs (PS_SANITIZE=1, see test/lib/cluster.sh): the
  environment of a server that runs the SANITIZE=1 build (sanitizer_env,
  which server_env adds for Node.start; Cluster.start's cluster.sh does it
  itself) and the reports it wrote (sanitizer_reports);
* the small helpers the programs wrote each for themselves: a one-line
  error text, closing a connection quietly, nearest-rank percentiles, the
  installed library's identity, the staged files left in a data directory.

It runs under the system python3 (/usr/bin/python3, with python3-psycopg2):
the wrappers take care of that, as a pyenv python3 first in PATH lacks it;
importing it installs the packages first when psycopg2 is missing (root).
"""
import glob
import math
import os
import pwd
import re
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

# The repository root, when this file is the checkout's test/py/harness.py
# (job.py and bench.py); meaningless in a copy (soak.py, demo_ckpt.py).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER_SH = os.path.join(ROOT, "test", "lib", "cluster.sh")


def import_psycopg2():
    """import_psycopg2 imports and returns psycopg2; when the system python3
    lacks it, it first installs the Debian packages (as root) through
    test/lib/cluster.sh's ps_ensure_packages, which otherwise says what to
    install and fails: programs import this module before psycopg2."""
    try:
        import psycopg2
    except ImportError:
        rc = subprocess.run(["bash", "-c", 'source "$1" && ps_ensure_packages', "harness", CLUSTER_SH]).returncode
        if rc != 0:
            sys.exit(1)
        import psycopg2
    return psycopg2


psycopg2 = import_psycopg2()
# PostgreSQL's binaries: PS_PGBIN as test/lib/cluster.sh reads it.
PGBIN = os.environ.get("PS_PGBIN") or "/usr/lib/postgresql/15/bin"

# "server accepting connections and every writer of this database ready"
WRITERS_READY_SQL = ("SELECT count(*) FILTER (WHERE ready) = "
                     "current_setting('paimon_sink.writers_per_database')::int "
                     "AND count(*) FILTER (WHERE NOT ready) = 0 FROM paimon_sink.writers")


def server_env(cdir=None):
    """server_env returns the environment to start a server with: this
    process's, plus the VAR=value words of PS_SERVER_ENV (blank-separated,
    as test/lib/cluster.sh's ps_server_env reads them), such as a sanitizer
    runtime the caller preloads into the postmaster; a word that is not
    VAR=value raises ValueError.  With PS_SANITIZE=1 and no LD_PRELOAD in
    PS_SERVER_ENV, also sanitizer_env's, reports into sanitizer_logdir(cdir)
    (the server's folder), as ps_cluster_start does."""
    env = dict(os.environ)
    words = (os.environ.get("PS_SERVER_ENV") or "").split()
    for word in words:
        if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word):
            raise ValueError('PS_SERVER_ENV: "%s" is not VAR=value' % word)
        k, v = word.split("=", 1)
        env[k] = v
    if os.environ.get("PS_SANITIZE") == "1" and not any(w.startswith("LD_PRELOAD=") for w in words):
        env.update(sanitizer_env(sanitizer_logdir(cdir or os.getcwd())))
    return env


def pg_user():
    """pg_user returns the cluster's OS user and superuser, as
    test/lib/cluster.sh decides it: postgres (or PS_PG_USER) for root,
    otherwise the invoking user."""
    if os.geteuid() == 0:
        return os.environ.get("PS_PG_USER") or "postgres"
    return pwd.getpwuid(os.geteuid()).pw_name


def error_text(e, width):
    """error_text gives a database error (or any exception) as one line:
    its SQLSTATE ("-" when it has none) and its message with white space
    folded, a failed connection's socket path left out, cut to width."""
    msg = " ".join(str(e).split())
    msg = re.sub(r'connection to server on socket "[^"]*" failed: ', "connect: ", msg)
    code = getattr(e, "pgcode", None) or "-"
    return f"{code} {msg[:width]}"


def describe(e):
    """describe gives a database error (or any exception) for a log line:
    its SQLSTATE, if any, and its message's first line."""
    code = getattr(e, "pgcode", None)
    msg = str(e).strip().split("\n")[0] if str(e).strip() else type(e).__name__
    return ("%s %s" % (code, msg)) if code else msg


class RunLog:
    """RunLog is a job program's log: log prints a line with the seconds
    since the start and appends it to the log file (once open), note
    appends a detail to the file only; both may be called from any
    thread."""

    def __init__(self):
        """__init__ starts the clock; the file is opened later (open), once
        the temp dir exists."""
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.file = None

    def open(self, path):
        """open appends to the log file at path from now on."""
        self.file = open(path, "a")

    def log(self, msg):
        """log prints msg with the seconds since the start and appends it to the file."""
        line = "[%6.1fs] %s" % (time.monotonic() - self.t0, msg)
        with self.lock:
            print(line, flush=True)
            if self.file is not None:
                self.file.write(line + "\n")
                self.file.flush()

    def note(self, msg):
        """note appends msg, on one line, to the file only (details)."""
        msg = " ".join(str(msg).split())
        with self.lock:
            if self.file is not None:
                self.file.write("[%6.1fs]   %s\n" % (time.monotonic() - self.t0, msg))
                self.file.flush()


def keep_logs(work, server_logs, prefix):
    """keep_logs copies a failed run's logs ($work/logs/*) and the server
    logs (paths) to a new directory /tmp/<prefix>XXXXXX, which the cleanup
    does not remove, prints the first server log's last 40 lines and the
    diagnosis file (logs/diagnosis) if there is one, and names the
    directory."""
    if not work or not os.path.isdir(work):
        return
    # /tmp itself: under test/check TMPDIR is inside the temp dir the cleanup removes
    keep = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    for f in glob.glob(os.path.join(work, "logs", "*")):
        if os.path.isfile(f):
            shutil.copy2(f, keep)
    for i, f in enumerate(server_logs):
        if os.path.isfile(f):
            shutil.copy2(f, os.path.join(keep, "server.log" if i == 0 else "server-%d.log" % i))
    os.chmod(keep, 0o755)
    sl = os.path.join(keep, "server.log")
    if os.path.isfile(sl):
        with open(sl, errors="replace") as f:
            lines = f.readlines()
        print("----- server.log (last 40 lines)")
        print("".join(lines[-40:]), end="")
    diag = os.path.join(keep, "diagnosis")
    if os.path.isfile(diag):
        print("----- diagnosis")
        with open(diag) as f:
            print(f.read(), end="")
    print("----- logs kept in %s" % keep)


def write_diagnosis(work, server, app, sections):
    """write_diagnosis writes, for a failed run, each (title, SQL) of
    sections with the rows the server returns into $work/logs/diagnosis
    (a query that fails says so there); it never raises."""
    path = os.path.join(work, "logs", "diagnosis")
    try:
        with open(path, "w") as f:
            for title, sql in sections:
                f.write("---- %s\n" % title)
                try:
                    for r in server.query(sql, app=app, timeout_ms=10000) or []:
                        f.write(" | ".join(str(x) for x in r) + "\n")
                except Exception as e:
                    f.write("(failed: %s)\n" % describe(e))
    except Exception:
        pass


# The sections of write_diagnosis that every paimon_sink job program wants.
SINK_DIAGNOSIS = [
    ("sessions", "SELECT pid, datname, backend_type, application_name, state, wait_event_type || ':' || "
                 "wait_event, now() - query_start, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) "
                 "FROM pg_stat_activity ORDER BY backend_type, pid"),
    ("writers", "SELECT * FROM paimon_sink.writers"),
    ("faults", "SELECT * FROM paimon_sink.faults"),
    ("pending", "SELECT * FROM paimon_sink.pending_checkpoints"),
    ("in doubt", "SELECT * FROM paimon_sink.in_doubt"),
    ("commit users", "SELECT * FROM paimon_sink.commit_user_state"),
    ("last snapshots", "SELECT * FROM paimon_sink.snapshots ORDER BY snapshot_id DESC LIMIT 10")]


def close_quietly(conn):
    """close_quietly closes a connection (None is fine) whatever state it is
    in: after a crash-restart closing may fail too, and nothing is to be
    learnt from that."""
    if conn is None:
        return
    try:
        conn.close()
    except Exception:
        pass


class ControlQueries:
    """ControlQueries gives a benchmark runner q and q1 on its control
    connection (self.ctl, an autocommit psycopg2 connection)."""

    def q(self, sql, args=None):
        """q runs a statement on the control connection and returns its rows (or None)."""
        with self.ctl.cursor() as cur:
            cur.execute(sql, args)
            return cur.fetchall() if cur.description else None

    def q1(self, sql, args=None):
        """q1 returns the first column of q's first row."""
        return self.q(sql, args)[0][0]


def finish_run(runner, cluster, failed, fallback, log, t0):
    """finish_run ends a benchmark program's run, also after a failure: it
    closes the runner's control connection (runner.ctl), removes the
    cluster, lets the runner report (runner.report(failed) returns its last
    line) and prints that line, or fallback when the report failed; returns
    1 when the report failed, else 0."""
    close_quietly(runner.ctl)
    cluster.cleanup()
    last, rc = None, 0
    try:
        last = runner.report(failed)
    except Exception:
        log("report failed:\n" + traceback.format_exc())
        rc = 1
    log("total: %.1f s" % (time.monotonic() - t0))
    print(last or fallback, flush=True)
    return rc


def interrupt_on_signals():
    """interrupt_on_signals makes SIGTERM and SIGHUP raise KeyboardInterrupt
    as Ctrl-C does, so that a program stopped by timeout(1) or a closed
    terminal still runs its cleanup (stops the cluster, removes the temp
    dir) and prints its last line."""

    def on_signal(signum, frame):
        """on_signal raises KeyboardInterrupt in the main thread."""
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)


def percentile(values, q):
    """percentile returns the nearest-rank q-th percentile of a non-empty
    list of numbers (q = 100: the largest)."""
    v = sorted(values)
    return v[max(1, math.ceil(q / 100.0 * len(v))) - 1]


def library_path(name="paimon_sink.so"):
    """library_path returns where PostgreSQL's pg_config (of PGBIN) says the
    installed library name (paimon_sink.so unless told) is, or None if
    pg_config cannot tell."""
    try:
        lib = subprocess.run([os.path.join(PGBIN, "pg_config"), "--pkglibdir"], stdout=subprocess.PIPE,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return os.path.join(lib, name)


def lib_identity(path):
    """lib_identity returns the identity of the installed library at path
    (device, inode, mtime, size), or None: a make install during a run
    replaces the file under the running server, whose new backends then
    load the new build, which a program reports."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
    except (OSError, TypeError):
        return None


def stage_files(datadir):
    """stage_files lists the staged files in the sinks' folders of a data
    directory ($PGDATA/pg_paimon_sink/DB/SINK/*.stage), sorted."""
    return sorted(glob.glob(os.path.join(datadir, "pg_paimon_sink", "*", "*", "*.stage")))


def sanitizer_env(logdir):
    """sanitizer_env returns, as a dict to add to the environment of
    pg_ctl start, what a server running the SANITIZE=1 build of PS_PGBIN's
    PostgreSQL needs (test/lib/cluster.sh's ps_sanitizer_env: the runtimes
    preloaded, their options), its reports going to files in logdir; it
    raises RuntimeError when the installed library is no SANITIZE=1 build.
    Clusters started through Cluster.start get it by themselves when
    PS_SANITIZE=1; a program that starts a server itself passes it."""
    r = subprocess.run(["bash", "-c", 'set -euo pipefail; source "$1"; ps_sanitizer_env "$2"', "sanitizer-env",
                        CLUSTER_SH, logdir], stdout=subprocess.PIPE, text=True)
    env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    if r.returncode != 0 or "LD_PRELOAD" not in env:
        raise RuntimeError("no sanitizer environment (is a SANITIZE=1 build installed? see above)")
    return env


def sanitizer_logdir(cdir):
    """sanitizer_logdir returns where the sanitizer reports of the server
    whose folder is cdir go under PS_SANITIZE=1: PS_SANITIZER_LOGDIR, or
    cdir/sanitizer (test/lib/cluster.sh's ps_sanitizer_logdir)."""
    return os.environ.get("PS_SANITIZER_LOGDIR") or os.path.join(cdir, "sanitizer")


def sanitizer_reports(*folders):
    """sanitizer_reports returns the sanitizer report files (sanitizer.PID)
    of the servers whose folders (or ClusterFolders) are given, sorted: a
    run under PS_SANITIZE=1 fails when there is any."""
    out = []
    for folder in folders:
        d = sanitizer_logdir(folder if isinstance(folder, str) else folder.cdir)
        out += glob.glob(os.path.join(d, "sanitizer.*"))
    return sorted(set(out))


class Server:
    """Server connects to one running cluster as its OS user (trust over
    the unix socket in host), to database postgres unless told otherwise."""

    def __init__(self, host, port, user=None, connect_timeout=5, app_prefix="", default_app="control",
                 dbname="postgres"):
        """__init__ records where the server listens and how to connect:
        connect_timeout in seconds, app_prefix put before every
        application_name, default_app the name of query's connections."""
        self.dbname = dbname
        self.host = host
        self.port = int(port)
        self.user = user or pg_user()
        self.connect_timeout = connect_timeout
        self.app_prefix = app_prefix
        self.default_app = default_app

    def connect(self, app, autocommit=True, statement_timeout_ms=None):
        """connect opens a connection named app (after the prefix), in
        autocommit unless told otherwise, with statement_timeout set for the
        session when statement_timeout_ms is given (0: none)."""
        kw = {}
        if statement_timeout_ms is not None:
            kw["options"] = "-c statement_timeout=%d" % int(statement_timeout_ms)
        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user, dbname=self.dbname,
                                connect_timeout=self.connect_timeout,
                                application_name=self.app_prefix + app, **kw)
        conn.autocommit = autocommit
        return conn

    def query(self, sql, args=None, app=None, timeout_ms=30000):
        """query runs one statement on a fresh autocommit connection (named
        app, or default_app) and returns all its rows (None for a statement
        without a result); the connection is closed whatever happens."""
        conn = self.connect(app or self.default_app, statement_timeout_ms=timeout_ms)
        try:
            with conn.cursor() as cur:
                cur.execute(sql, args)
                return cur.fetchall() if cur.description is not None else None
        finally:
            conn.close()

    def writers_ready(self, app="ready", timeout_ms=5000):
        """writers_ready tells whether the server accepts connections and
        every writer of the database serves (after a crash-restart the
        launcher starts them anew); it raises the connection's error."""
        rows = self.query(WRITERS_READY_SQL, app=app, timeout_ms=timeout_ms)
        return bool(rows and rows[0][0])

    def wait_writers_ready(self, seconds, app="ready"):
        """wait_writers_ready polls writers_ready every 0.1 s for up to
        seconds and tells whether they became ready."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if self.writers_ready(app):
                    return True
            except Exception:
                pass
            time.sleep(0.1)
        return False


class ClusterFolder:
    """ClusterFolder is what a cluster's folder holds, as test/lib/cluster.sh
    lays it out: data/, sock/, port and server.log under self.cdir (which
    the subclass provides), and a Server connecting to it."""

    @property
    def datadir(self):
        """datadir is the data directory."""
        return os.path.join(self.cdir, "data")

    @property
    def sockdir(self):
        """sockdir is the folder of the unix socket (the host)."""
        return os.path.join(self.cdir, "sock")

    @property
    def port(self):
        """port is the server's port, from the folder's port file."""
        with open(os.path.join(self.cdir, "port")) as f:
            return int(f.read().strip())

    @property
    def server_log(self):
        """server_log is the path of the server log."""
        return os.path.join(self.cdir, "server.log")

    def server(self, **kw):
        """server returns a Server for this cluster (keyword arguments as
        Server's)."""
        return Server(self.sockdir, self.port, pg_user(), **kw)


class Cluster(ClusterFolder):
    """Cluster is one throwaway cluster of test/lib/cluster.sh, whose shell
    functions it calls through bash with this program's PS_WORK: the temp
    dir ($PS_WORK), packages, the build, initdb, start and the cleanup that
    stops every server below the temp dir."""

    def __init__(self, name, label, fail, work=""):
        """__init__ names the cluster (its folder under $PS_WORK/clusters),
        the program (label, for messages) and the exception class raised
        when the harness cannot go on; work is an existing PS_WORK to adopt."""
        self.name = name
        self.label = label
        self.fail = fail
        self.work = work
        self.cleaned = False

    def sh(self, *args, capture=False, stdout=None, stderr=None, check=True):
        """sh runs a shell function of test/lib/cluster.sh (or any command
        after sourcing it) with this PS_WORK; capture returns its stdout,
        otherwise its exit status (check raises on a non-zero one)."""
        env = dict(os.environ)
        env["PS_WORK"] = self.work
        cmd = ["bash", "-c", 'set -euo pipefail; source "$1"; shift; "$@"', self.label + "-sh",
               CLUSTER_SH] + list(args)
        if capture:
            return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=stderr, check=check,
                                  text=True).stdout
        return subprocess.run(cmd, env=env, stdout=stdout, stderr=stderr, check=check).returncode

    def create_workdir(self):
        """create_workdir makes $PS_WORK (owned by the cluster's OS user,
        with logs/ and tmp/) and remembers it."""
        self.work = self.sh("eval", 'ps_workdir_create; printf %s "$PS_WORK"', capture=True).strip()
        if not self.work or not os.path.isdir(self.work):
            raise self.fail("could not create the temp dir")

    def build_install(self, log_path, stderr_too=False):
        """build_install copies the repository into $PS_WORK/src, builds and
        installs it there (make COPT=-Werror, make install) with its output
        (and its errors too if stderr_too) in log_path, and returns the exit
        status."""
        with open(log_path, "w") as f:
            self.sh("ps_copy_tree", ROOT, os.path.join(self.work, "src"))
            return self.sh("ps_build_install", os.path.join(self.work, "src"), stdout=f,
                           stderr=f if stderr_too else None, check=False)

    @property
    def cdir(self):
        """cdir is the cluster's folder: data/, sock/, port, server.log."""
        return os.path.join(self.work, "clusters", self.name)

    def create(self, conf):
        """create runs initdb (ps_cluster_create) and appends conf, this
        program's settings, to its postgresql.conf."""
        self.sh("ps_cluster_create", self.name)
        with open(os.path.join(self.datadir, "postgresql.conf"), "a") as f:
            f.write(conf)

    def start(self):
        """start starts the cluster (ps_cluster_start, which gives the server
        PS_SERVER_ENV's environment) and waits until it accepts connections."""
        self.sh("ps_cluster_start", self.name)

    def cleanup(self):
        """cleanup stops every server below $PS_WORK and removes it (unless
        KEEP_TMP=1), once; a second Ctrl-C during it leaves the temp dir,
        named on stderr."""
        if self.cleaned or not self.work:
            return
        self.cleaned = True
        try:
            self.sh("ps_cleanup", check=False)
        except BaseException as e:  # a second Ctrl-C
            print("%s: cleanup interrupted (%s); temp dir %s" % (self.label, e, self.work), file=sys.stderr)


def listening_ports():
    """listening_ports returns the TCP ports some process listens on (v4 and
    v6), as test/lib/cluster.sh's _ps_listening_ports reads them."""
    ports = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if len(fields) > 3 and fields[3] == "0A":
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


def process_state(pid):
    """process_state returns the state letter of process pid (R, S, Z, ...)
    from /proc, or None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def child_pids(pid):
    """child_pids returns the pids of the live processes whose parent is pid
    (a postmaster's backends and workers)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(pid) and fields[0] != "Z":
            out.append(int(d))
    return out


class Node(ClusterFolder):
    """Node is one server that a program drives itself, as the cluster's OS
    user, with PostgreSQL's pg_ctl, pg_basebackup and the like (of PGBIN):
    its folder cdir holds data/, sock/, port and server.log, as
    test/lib/cluster.sh lays a cluster out, so that the shell's cleanup
    (ps_stop_all: every postmaster below $PS_WORK) and its log keeping
    (clusters/*/server.log) cover it too.  Unix socket only."""

    def __init__(self, cdir, name=None):
        """__init__ names the node's folder (an existing cluster's, or one
        create_standby fills) and its name in messages (the folder's)."""
        self.cdir = cdir
        self.name = name or os.path.basename(cdir)

    def run(self, prog, *args, timeout=120, env=None):
        """run runs PostgreSQL's program prog (of PGBIN) with args (and env
        for its environment, when given) and returns its output (stdout and
        stderr); a failure raises RuntimeError with the output."""
        cmd = [os.path.join(PGBIN, prog)] + [str(a) for a in args]
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=timeout, env=env)
        except subprocess.TimeoutExpired as e:
            raise RuntimeError("%s: timed out after %ds: %s" % (" ".join(cmd), timeout, e.output or ""))
        if r.returncode != 0:
            raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stdout.strip()))
        return r.stdout

    def start(self, timeout=60):
        """start starts the node (pg_ctl start -w) with its log in server_log,
        and server_env(cdir)'s environment (PS_SERVER_ENV's; under
        PS_SANITIZE=1 the sanitizer runtime preloaded)."""
        self.run("pg_ctl", "start", "-D", self.datadir, "-l", self.server_log, "-w", "-t", timeout,
                 timeout=timeout + 30, env=server_env(self.cdir))

    def stop(self, mode="fast", timeout=60):
        """stop stops the node with pg_ctl stop -m mode (fast, immediate, ...)
        and waits until it is down."""
        self.run("pg_ctl", "stop", "-D", self.datadir, "-m", mode, "-w", "-t", timeout, timeout=timeout + 30)

    def promote(self, timeout=60):
        """promote ends the standby's recovery (pg_ctl promote -w): it then
        accepts writes."""
        self.run("pg_ctl", "promote", "-D", self.datadir, "-w", "-t", timeout, timeout=timeout + 30)

    def postmaster_pid(self):
        """postmaster_pid returns the pid in postmaster.pid when that process
        is alive, otherwise None."""
        try:
            with open(os.path.join(self.datadir, "postmaster.pid")) as f:
                pid = int(f.readline().strip())
        except (OSError, ValueError):
            return None
        return pid if process_state(pid) not in (None, "Z") else None

    def kill9(self, timeout=30):
        """kill9 ends the node as a machine loss would: SIGKILL to the
        postmaster and, at once, to every process it started (collected
        first), then waits until they are gone; returns how many processes
        were killed (0: the node was not running)."""
        pm = self.postmaster_pid()
        if pm is None:
            return 0
        pids = [pm] + child_pids(pm)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while any(process_state(p) not in (None, "Z") for p in pids):
            if time.monotonic() >= deadline:
                raise RuntimeError("%s: processes %s still alive %ds after SIGKILL" % (self.name, pids, timeout))
            time.sleep(0.05)
        return len(pids)

    def discard(self):
        """discard kills the node if it still runs and removes its data
        directory; its folder keeps server.log (for the evidence)."""
        self.kill9()
        shutil.rmtree(self.datadir, ignore_errors=True)

    @classmethod
    def create_standby(cls, primary, cdir, conf="", timeout=120):
        """create_standby makes a streaming standby of the running primary (a
        Node) in folder cdir: pg_basebackup -R (a fast checkpoint, WAL
        streamed, no fsync: a throwaway copy) as application_name the
        folder's name, its own port and socket dir, then conf; it returns the
        Node, not started."""
        node = cls(cdir)
        os.makedirs(node.sockdir, exist_ok=True)
        used = listening_ports() | {primary.port}
        port = next(p for p in (random.randint(20000, 49999) for _ in range(200)) if p not in used)
        with open(os.path.join(cdir, "port"), "w") as f:
            f.write("%d\n" % port)
        node.run("pg_basebackup", "-h", primary.sockdir, "-p", primary.port, "-U", pg_user(),
                 "-D", node.datadir, "-R", "-X", "stream", "-c", "fast", "--no-sync",
                 "-d", "application_name=%s" % node.name, timeout=timeout)
        with open(os.path.join(node.datadir, "postgresql.conf"), "a") as f:
            f.write("\n# ---- harness.py Node.create_standby ----\n"
                    "port = %d\nunix_socket_directories = '%s'\ncluster_name = '%s'\n%s"
                    % (port, node.sockdir, node.name, conf))
        return node


# PgBouncer, Debian's package (test/lib/cluster.sh's PS_PACKAGES has it)
PGBOUNCER = "/usr/sbin/pgbouncer"


class Pooler:
    """Pooler is PgBouncer in front of one cluster, as production reaches
    PostgreSQL: started as the cluster's OS user in its own folder (below
    $PS_WORK), listening on a unix socket there only, passing every database
    to the cluster's socket; pool_mode session or transaction, a small
    default_pool_size per (database, user) so that clients outnumber server
    connections; auth_type trust with an auth_file naming the users (the
    cluster's own trust on its socket does the rest).  A pooler passes no
    startup options (1.18 refuses them; here they are ignored): a client's
    statement_timeout comes from its role (ALTER ROLE ... SET), which
    survives session pooling's DISCARD ALL.  stop() ends it; Cluster.cleanup
    does too (ps_stop_poolers finds its pidfile), for a run killed first."""

    def __init__(self, folder, host, port, mode, pool_size=2, users=(), log_path=None):
        """__init__ records the folder to run in, the cluster's socket folder
        (host) and port, the pool mode (session, transaction), the server
        connections per pool, the users the clients log in as (besides the
        cluster's OS user, the admin console's) and PgBouncer's log file
        (folder/pgbouncer.log unless told)."""
        if mode not in ("session", "transaction"):
            raise ValueError("pool mode %r: session or transaction" % mode)
        self.folder = folder
        self.host = host
        self.server_port = int(port)
        self.mode = mode
        self.pool_size = pool_size
        self.users = [pg_user()] + [u for u in users if u != pg_user()]
        self.log_path = log_path or os.path.join(folder, "pgbouncer.log")
        self.port = None
        self.proc = None

    def config(self):
        """config returns pgbouncer.ini's text: the cluster's databases, the
        socket in folder, the pool mode and size, trust with the auth_file,
        the admin user, a login retry of 1 s (the default 15 s would refuse
        clients for that long after a crash-restart of the server), and a
        check of every server connection before it serves a client
        (server_check_delay 0: with the default 30 s a connection that a
        crash-restart ended goes to the next client, whose transaction fails
        at once, one job restart after the other)."""
        return ("[databases]\n* = host=%s port=%d\n\n[pgbouncer]\n"
                "listen_addr =\nlisten_port = %d\nunix_socket_dir = %s\n"
                "auth_type = trust\nauth_file = %s\nadmin_users = %s\n"
                "pool_mode = %s\ndefault_pool_size = %d\nmax_client_conn = 200\n"
                "server_login_retry = 1\nserver_check_delay = 0\nignore_startup_parameters = options\n"
                "logfile = %s\npidfile = %s\n"
                % (self.host, self.server_port, self.port, self.folder,
                   os.path.join(self.folder, "userlist.txt"), pg_user(), self.mode, self.pool_size,
                   self.log_path, os.path.join(self.folder, "pgbouncer.pid")))

    def start(self, timeout=30):
        """start writes the configuration and the auth_file, starts PgBouncer
        (as the cluster's OS user: -u when we are root) on a free port and
        waits (timeout in seconds) until its socket answers; RuntimeError
        with its log when it does not."""
        if not os.access(PGBOUNCER, os.X_OK):
            raise RuntimeError("%s not found (Debian's package pgbouncer: test/lib/cluster.sh's "
                               "ps_ensure_packages installs it as root)" % PGBOUNCER)
        os.makedirs(self.folder, exist_ok=True)
        used = listening_ports() | {self.server_port}
        self.port = next(p for p in (random.randint(20000, 49999) for _ in range(200))
                         if p not in used and not os.path.exists(os.path.join(self.folder, ".s.PGSQL.%d" % p)))
        with open(os.path.join(self.folder, "pgbouncer.ini"), "w") as f:
            f.write(self.config())
        with open(os.path.join(self.folder, "userlist.txt"), "w") as f:
            f.write("".join('"%s" ""\n' % u for u in self.users))
        cmd = [PGBOUNCER, os.path.join(self.folder, "pgbouncer.ini")]
        if os.geteuid() == 0:
            pw = pwd.getpwnam(pg_user())
            for root, dirs, files in os.walk(self.folder):
                for name in [root] + [os.path.join(root, x) for x in files]:
                    os.chown(name, pw.pw_uid, pw.pw_gid)
            cmd += ["-u", pg_user()]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.folder, "pgbouncer.stderr"), "w"))
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.query("SHOW VERSION")
                return
            except Exception as e:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("PgBouncer did not start (%s); its log: %s"
                                       % (describe(e), self.log_tail()))
            time.sleep(0.1)

    def log_tail(self, lines=20):
        """log_tail returns the last lines of PgBouncer's log and stderr."""
        out = []
        for path in (self.log_path, os.path.join(self.folder, "pgbouncer.stderr")):
            try:
                with open(path, errors="replace") as f:
                    out += f.readlines()[-lines:]
            except OSError:
                pass
        return "".join(out)

    def server(self, user=None, **kw):
        """server returns a Server that connects through the pooler as user
        (the cluster's OS user unless told); its statement_timeout_ms is not
        passed (see the class: the role's setting applies)."""
        return PooledServer(self.folder, self.port, user or pg_user(), **kw)

    def query(self, command):
        """query runs one command of PgBouncer's admin console (SHOW POOLS,
        SHOW STATS, ...) and returns (column names, rows)."""
        conn = psycopg2.connect(host=self.folder, port=self.port, user=pg_user(), dbname="pgbouncer",
                                connect_timeout=5)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(command)
                return [d[0] for d in cur.description or []], (cur.fetchall() if cur.description else [])
        finally:
            close_quietly(conn)

    def pools(self):
        """pools returns SHOW POOLS as a list of dicts (database, user,
        cl_active, cl_waiting, sv_active, sv_idle, sv_used, ... maxwait)."""
        names, rows = self.query("SHOW POOLS")
        return [dict(zip(names, r)) for r in rows]

    def stop(self, timeout=10):
        """stop ends PgBouncer (SIGTERM: its immediate shutdown; SIGKILL
        after timeout seconds); harmless when it is not running."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self.proc = None


class PooledServer(Server):
    """PooledServer is a Server reached through a Pooler: a pooler passes no
    startup options, so connect does not send statement_timeout (the role's
    ALTER ROLE ... SET statement_timeout gives it)."""

    def connect(self, app, autocommit=True, statement_timeout_ms=None):
        """connect opens a connection named app through the pooler, in
        autocommit unless told otherwise; statement_timeout_ms is not sent
        (see the class)."""
        conn = psycopg2.connect(host=self.host, port=self.port, user=self.user, dbname=self.dbname,
                                connect_timeout=self.connect_timeout,
                                application_name=self.app_prefix + app)
        conn.autocommit = autocommit
        return conn
