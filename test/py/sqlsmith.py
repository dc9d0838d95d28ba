#!/usr/bin/python3
"""test/sqlsmith -- random SQL (sqlsmith) against sinks of every mode, as
the non-superuser who owns them; no query may bring the server down.

sqlsmith (Debian's package) generates random queries from what the catalog
shows: every relation, function and operator it can see.  This program makes
a throwaway cluster with a database "smith" in which

* the role smith_owner (LOGIN, no superuser) was granted what docs/security.md
  says an operator needs: EXECUTE on the extension's functions (create_sink
  is revoked from PUBLIC; the fault and worker functions refuse it
  themselves), CREATE on schema public; its search_path is public,
  paimon_sink;
* smith_owner owns tables and, on them, sinks of every mode: append
  (ev_sink, 2 buckets), upsert (up_sink; up_partial_sink with partial
  updates), overwrite (ow_sink), overwrite with dynamic partition overwrite
  (owp_sink, on a list-partitioned table), and the sink group grp of two
  append sinks (g1_sink, g2_sink); each has committed rows, a pending
  (prepared, not committed) checkpoint of the commit user smith-job and rows
  staged after it;
* the schemas smith1..smithN (--copies) hold wrappers of the extension's
  functions (but drop_sink, drop_sink_group and the FDW's): SQL functions,
  SECURITY INVOKER, of the same name and arguments, that call it and return
  count(*) of a set or a record as text: sqlsmith calls only functions
  returning one value, and picks among thousands of PostgreSQL's, so each
  has many copies; and NAME_any(), without arguments, which draws each
  argument at each call from live values (sink names, commit users,
  pending checkpoint ids), near misses, NULL and the type's edges.  So
  sqlsmith reaches prepare_commit, commit, checkpoint, restart_job,
  recover, ... from any place of a query.

sqlsmith (1.4) runs each query in BEGIN ... ROLLBACK: its writes into the
sinks are rolled back (the session side of a write, then its abort), and
the functions that refuse a transaction block (prepare_commit, commit,
checkpoint, recover, restart_job, ...) get only as far as their argument
checks and that refusal (25001); test/fuzz calls them outside one.

Then it runs sqlsmith connected as smith_owner (--exclude-catalog: the
relations it draws from are the extension's views and tables and
smith_owner's, the functions every function of the cluster) in rounds of
--round-queries queries, each with its own seed (--seed + round), until
--queries queries ran or --seconds passed.  Before each round it puts back
what the last one took away (a dropped sink or group, rows) and refreshes the
pending checkpoints.

It counts
  crashes     server processes that ended by a signal, and crash restarts
              ("terminated by signal", "terminated by exception", "all
              server processes terminated; reinitializing" in the server
              log), and a server that is down;
  internal    errors with SQLSTATE XX000 (internal_error) or a "cache
              lookup failed" message raised by the extension's code (the
              LOCATION of the error, log_error_verbosity = verbose, names a
              function of src/*.c or src/*/*.c), and such errors and PANICs of any
              process other than a session (the extension's workers);
  sanitizer   with PS_SANITIZE=1 (see test/lib/cluster.sh), the sanitizer
              reports of the server;
and writes logs/sqlsmith-errors.txt: every distinct (SQLSTATE, message
pattern) of the errors raised by the extension's code with counts and one
query, then every XX000 and "cache lookup failed" of any code (PostgreSQL's
own appear when sqlsmith calls its functions with odd arguments: listed, not
counted).  It prints the distinct SQLSTATEs of the extension's errors.

The last line is always
    sqlsmith: queries=N seconds=S crashes=N internal=N sanitizer=N
Exit 0 only when crashes, internal and sanitizer are 0 and at least one
query ran.

Usage: test/sqlsmith [--queries N] [--seconds S] [--round-queries N]
                     [--copies N] [--seed N] [--skip-build] [--sanitize]
Environment (same meaning): SMITH_QUERIES (10000), SMITH_SECONDS (120),
SMITH_ROUND_QUERIES (2000), SMITH_COPIES (40), SMITH_SEED (random;
printed), SMITH_SKIP_BUILD=1,
PS_SANITIZE=1 (the server runs the installed SANITIZE=1 build with the
sanitizer runtime preloaded), KEEP_TMP=1.

As root it builds and installs the extension from a copy of the repo into
the PostgreSQL of PS_PGBIN (unless --skip-build), or with --sanitize builds
it with SANITIZE=1 into a copy of that PostgreSQL in its temp dir (never
replacing the installed build) and runs the server with the sanitizer
runtime preloaded; as another user (test/check runs it as postgres) it uses
what is installed.
"""
import argparse
import collections
import csv
import glob
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback

# the harness first: it installs psycopg2 when it is missing
from harness import (ROOT, Cluster, RunLog, Server, describe, interrupt_on_signals, keep_logs,
                     sanitizer_reports)

import psycopg2

DB = "smith"
ROLE = "smith_owner"
JOB = "smith-job"
SINKS = ["ev_sink", "up_sink", "up_partial_sink", "ow_sink", "owp_sink", "g1_sink", "g2_sink"]
GROUP = "grp"

RUN = RunLog()
log = RUN.log


class Abort(Exception):
    """Abort ends the run with a message (the cluster cannot go on)."""


# as the superuser, once: the extension, the role, its grants, the wrappers' schema
SETUP_SUPERUSER = """
CREATE EXTENSION paimon_sink;
CREATE ROLE smith_owner LOGIN;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA paimon_sink TO smith_owner;
GRANT CREATE ON SCHEMA public TO smith_owner;
ALTER ROLE smith_owner SET search_path = public, paimon_sink;
"""

# the extension's functions that get wrappers: those sqlsmith cannot call
# itself (it calls only functions returning one value) and the others but
# the drops (which would leave nothing to call the rest on) and the FDW's
# own; a wrapper returns count(*) of a set, a record as text, a value as is
WRAPPED_SQL = """
SELECT p.proname, p.pronargs, p.proretset, p.prorettype = 'record'::regtype, format_type(p.prorettype, NULL),
       ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) WITH ORDINALITY u(t, i) ORDER BY i),
       coalesce(p.proargnames[1:p.pronargs], '{}')
  FROM pg_proc p
 WHERE p.pronamespace = 'paimon_sink'::regnamespace
   AND p.proname NOT IN ('drop_sink', 'drop_sink_group', 'fdw_handler', 'fdw_validator')
   AND p.prorettype <> 'trigger'::regtype
 ORDER BY 1
"""


def pick(*exprs):
    """pick is an SQL expression that evaluates to one of exprs, at random
    at each evaluation."""
    return "(CASE (random() * %d)::int %s END)" % (len(exprs) - 1, " ".join(
        "WHEN %d THEN %s" % (i, e) for i, e in enumerate(exprs)))


# what an argument of the random wrappers takes, by its name, else its type:
# live values (sink names, commit users, pending checkpoint ids), their
# near misses, NULL and the edges of the type
LIVE_SINK = "(SELECT sink_name FROM paimon_sink.sinks ORDER BY random() LIMIT 1)"
LIVE_USER = "(SELECT default_commit_user FROM paimon_sink.sinks ORDER BY random() LIMIT 1)"
LIVE_CKPT = "(SELECT checkpoint_id FROM paimon_sink.pending_checkpoints ORDER BY random() LIMIT 1)"
ARG_POOLS = {
    "sink_name": pick(LIVE_SINK, LIVE_SINK, LIVE_SINK, "'grp'", "'no_such_sink'", "''", "NULL",
                      "repeat('s', 10000)", "'ev'", "'pg_class'", "'EV_SINK'"),
    "group_name": pick("'grp'", "'grp2'", "''", "NULL", "repeat('g', 200)", LIVE_SINK),
    "commit_user": pick("'smith-job'", "'smith-job'", LIVE_USER, LIVE_USER, "NULL", "''", "'other-job'",
                        "repeat('u', 10000)", "'paimon_sink:1:2'", "'smith-job '"),
    "checkpoint_id": pick(LIVE_CKPT, LIVE_CKPT, "0", "-1", "1", "2", "100", "9223372036854775807",
                          "-9223372036854775808", "NULL"),
    "restored_checkpoint_id": pick(LIVE_CKPT, "0", "-1", "1", "9223372036854775807", "NULL"),
    "mode": pick("'restore'", "'discard'", "'append'", "'upsert'", "'overwrite'", "''", "NULL", "'RESTORE'"),
    "on_error": pick("'stop'", "'reject'", "''", "NULL"),
    "target": pick("to_regclass('ev')", "to_regclass('up')", "to_regclass('ow')", "to_regclass('owp')",
                   "to_regclass('owp_eu')", "to_regclass('ev_sink')", "'pg_class'::regclass", "'12345'::oid::regclass",
                   "NULL"),
    "sinks": pick("ARRAY['g1_sink', 'g2_sink']", "ARRAY['ev_sink']", "ARRAY[]::text[]", "ARRAY[NULL]::text[]",
                  "ARRAY['ev_sink', 'ev_sink']", "ARRAY['ow_sink']", "NULL", "ARRAY[%s]" % LIVE_SINK),
    "text": pick("''", "NULL", "'x'", "repeat('t', 10000)", LIVE_SINK, "'smith-job'", "'committer_before_prepare'",
                 "'error'", "'panic'"),
    "bigint": pick("0", "-1", "1", "2", "9223372036854775807", "-9223372036854775808", "NULL", LIVE_CKPT),
    "integer": pick("0", "-1", "1", "2", "3", "2147483647", "-2147483648", "NULL", "30000"),
    "jsonb": pick("NULL", "'{}'::jsonb", "'[]'::jsonb", "'null'::jsonb", "'{\"p\": 1}'::jsonb",
                  "jsonb_build_object('big', repeat('j', 10000))", "'\"s\"'::jsonb"),
    "interval": pick("NULL", "'0'::interval", "'-1 day'::interval", "'1 ms'::interval", "'1000 years'::interval",
                     "'1 day'::interval"),
    "boolean": pick("NULL", "true", "false"),
    "text[]": pick("NULL", "ARRAY[]::text[]", "ARRAY['id']", "ARRAY['no_such_column']", "ARRAY[NULL]::text[]",
                   "ARRAY['id', 'id']", "ARRAY['region']"),
}


def arg_expr(name, typ):
    """arg_expr is the SQL expression that a random wrapper passes for an
    argument of that name and type."""
    if name in ARG_POOLS and (typ == "text" or name in ("target", "sinks", "checkpoint_id",
                                                       "restored_checkpoint_id")):
        return ARG_POOLS[name]
    return "(%s)::%s" % (ARG_POOLS.get(typ, "NULL"), typ)


# as smith_owner, once: the targets
TABLES_SQL = """
CREATE TABLE ev (id bigserial PRIMARY KEY, k int, payload text, amount numeric(10,2),
                 ts timestamptz DEFAULT now(), flag boolean, doc jsonb, tags text[], raw bytea);
CREATE TABLE up (id int PRIMARY KEY, v text, n bigint, doc jsonb);
CREATE TABLE up_partial (id int PRIMARY KEY, a text, b int, c date);
CREATE TABLE ow (id int, region text, v text);
CREATE TABLE owp (id int, region text NOT NULL, v text) PARTITION BY LIST (region);
CREATE TABLE owp_eu PARTITION OF owp FOR VALUES IN ('eu');
CREATE TABLE owp_us PARTITION OF owp FOR VALUES IN ('us');
CREATE TABLE owp_other PARTITION OF owp DEFAULT;
CREATE TABLE g1 (id bigint PRIMARY KEY, v text);
CREATE TABLE g2 (id bigint PRIMARY KEY, g1_id bigint, v text);
"""

# sink name -> create_sink call (as smith_owner)
SINK_DDL = {
    "ev_sink": "SELECT * FROM paimon_sink.create_sink('ev_sink', 'ev', buckets => 2)",
    "up_sink": "SELECT * FROM paimon_sink.create_sink('up_sink', 'up', mode => 'upsert', buckets => 2)",
    "up_partial_sink": "SELECT * FROM paimon_sink.create_sink('up_partial_sink', 'up_partial', mode => 'upsert', "
                       "partial_update => true)",
    "ow_sink": "SELECT * FROM paimon_sink.create_sink('ow_sink', 'ow', mode => 'overwrite')",
    "owp_sink": "SELECT * FROM paimon_sink.create_sink('owp_sink', 'owp', mode => 'overwrite', "
                "dynamic_partition_overwrite => true)",
    "g1_sink": "SELECT * FROM paimon_sink.create_sink('g1_sink', 'g1')",
    "g2_sink": "SELECT * FROM paimon_sink.create_sink('g2_sink', 'g2')",
}

# sink name -> an INSERT of a few rows into it; @N@ becomes the round's first key
SINK_ROWS = {
    "ev_sink": "INSERT INTO ev_sink (k, payload, amount, flag, doc, tags, raw) SELECT g, 'p' || g, g / 3.0, "
               "g % 2 = 0, jsonb_build_object('g', g), ARRAY['t' || g], '\\x00ff'::bytea "
               "FROM generate_series(@N@, @N@ + 9) g",
    "up_sink": "INSERT INTO up_sink (id, v, n, doc, _row_kind) SELECT g % 50, 'v' || g, g, '{}', "
               "CASE WHEN g % 7 = 0 THEN '-D' ELSE '+I' END FROM generate_series(@N@, @N@ + 9) g",
    "up_partial_sink": "INSERT INTO up_partial_sink (id, a, b, c) SELECT g % 50, "
                       "CASE WHEN g % 2 = 0 THEN 'a' END, g, current_date FROM generate_series(@N@, @N@ + 9) g",
    "ow_sink": "INSERT INTO ow_sink SELECT g, 'r' || g % 3, 'v' || g FROM generate_series(@N@, @N@ + 9) g",
    "owp_sink": "INSERT INTO owp_sink SELECT g, (ARRAY['eu', 'us', 'ap'])[1 + g % 3], 'v' || g "
                "FROM generate_series(@N@, @N@ + 9) g",
    "g1_sink": "INSERT INTO g1_sink SELECT g, 'v' || g FROM generate_series(@N@, @N@ + 9) g",
    "g2_sink": "INSERT INTO g2_sink SELECT g, g, 'v' || g FROM generate_series(@N@, @N@ + 9) g",
}

# crash lines of the server log (the postmaster's own messages)
CRASH_RE = re.compile(r"terminated by signal|terminated by exception|"
                      r"all server processes terminated; reinitializing")

# the fields of a csvlog line (PostgreSQL 15)
CSV_FIELDS = ["log_time", "user_name", "database_name", "process_id", "connection_from", "session_id",
              "session_line_num", "command_tag", "session_start_time", "virtual_transaction_id",
              "transaction_id", "error_severity", "sql_state_code", "message", "detail", "hint",
              "internal_query", "internal_query_pos", "context", "query", "query_pos", "location",
              "application_name", "backend_type", "leader_pid", "query_id"]


def our_functions():
    """our_functions returns the set of (function, file) pairs defined in
    the extension's src/*.c and src/*/*.c (a function's name begins its
    line, as PostgreSQL's style puts it), and the set of those files' names
    (without their folder); the LOCATION of an error raised by our code
    names one of them."""
    funcs, files = set(), set()
    for path in (glob.glob(os.path.join(ROOT, "src", "*.c"))
                 + glob.glob(os.path.join(ROOT, "src", "*", "*.c"))):
        base = os.path.basename(path)
        files.add(base)
        with open(path, errors="replace") as f:
            for line in f:
                m = re.match(r"^([A-Za-z_]\w*)\(", line)
                if m:
                    funcs.add((m.group(1), base))
    return funcs, files


def pattern(msg):
    """pattern folds what varies in an error message (quoted names, numbers)
    so that errors of one kind count together."""
    msg = re.sub(r'"[^"]*"', '"…"', msg)
    return re.sub(r"\b\d+\b", "N", msg)[:160]


def parse_args():
    """parse_args reads the options and their SMITH_* defaults."""
    env = os.environ
    p = argparse.ArgumentParser(prog="sqlsmith", description="sqlsmith against paimon_sink's sinks")
    p.add_argument("--queries", type=int, default=int(env.get("SMITH_QUERIES", "10000")))
    p.add_argument("--seconds", type=float, default=float(env.get("SMITH_SECONDS", "120")))
    p.add_argument("--round-queries", type=int, default=int(env.get("SMITH_ROUND_QUERIES", "2000")))
    p.add_argument("--copies", type=int, default=int(env.get("SMITH_COPIES", "40")),
                   help="wrappers of each function (schemas smith1..smithN): more calls of ours")
    p.add_argument("--seed", type=int, default=int(env["SMITH_SEED"]) if env.get("SMITH_SEED") else None)
    p.add_argument("--skip-build", action="store_true", default=env.get("SMITH_SKIP_BUILD") == "1")
    p.add_argument("--sanitize", action="store_true",
                   help="(as root) build with SANITIZE=1 into a copy of PostgreSQL and run under the sanitizers")
    cfg = p.parse_args()
    if cfg.seed is None:
        cfg.seed = random.SystemRandom().randrange(1, 1 << 30)
    if cfg.queries <= 0 or cfg.round_queries <= 0 or cfg.seconds <= 0:
        p.error("--queries, --round-queries and --seconds must be positive")
    return cfg


class Smith:
    """Smith runs the cluster, the setup and sqlsmith's rounds, and reads
    the server log."""

    def __init__(self, cfg):
        """__init__ prepares the cluster object and the counters."""
        self.cfg = cfg
        self.h = Cluster("sqlsmith", "sqlsmith", Abort)
        self.queries = 0
        self.rounds = 0
        self.crash_lines = []
        self.log_pos = {}
        self.round_no = 0
        self.t0 = time.monotonic()
        self.smith_seconds = 0.0

    # ---- setup -----------------------------------------------------------
    def build(self):
        """build installs what is missing and, as root, builds and installs
        the extension (or, with --sanitize, a SANITIZE=1 build into a copy of
        PostgreSQL, which the cluster then uses with the runtime preloaded)."""
        h, cfg = self.h, self.cfg
        h.sh("ps_ensure_packages")
        h.create_workdir()
        RUN.open(os.path.join(h.work, "logs", "sqlsmith.log"))
        if shutil.which("sqlsmith") is None:
            raise Abort("sqlsmith not found: apt-get install sqlsmith (test/lib/cluster.sh's ps_ensure_packages "
                        "does, as root)")
        if cfg.sanitize:
            if os.geteuid() != 0:
                raise Abort("--sanitize builds and installs, which takes root; as another user install a "
                            "SANITIZE=1 build into PS_PGBIN's PostgreSQL and set PS_SANITIZE=1")
            log("build: make SANITIZE=1 into a copy of PostgreSQL (ps_sanitize_install)")
            src = os.path.join(h.work, "sanitize", "src")
            with open(os.path.join(h.work, "logs", "build.log"), "w") as f:
                h.sh("ps_copy_tree", ROOT, src)
                bindir = h.sh("ps_sanitize_install", src, os.path.join(h.work, "sanitize", "pg"),
                              capture=True, check=False, stderr=f).strip()
            if not bindir or not os.path.isdir(bindir):
                raise Abort("the SANITIZE=1 build failed (see logs/build.log)")
            os.environ["PS_PGBIN"] = bindir
            os.environ.pop("PS_PG_CONFIG", None)
            os.environ["PS_SANITIZE"] = "1"
        elif cfg.skip_build or os.geteuid() != 0:
            log("build: skipped (%s), using the installed extension"
                % ("--skip-build" if cfg.skip_build else "not root"))
        else:
            log("build: make COPT=-Werror && make install")
            if self.h.build_install(os.path.join(h.work, "logs", "build.log")) != 0:
                raise Abort("build or make install failed (see logs/build.log)")
        h.sh("ps_chown_work")

    def setup(self):
        """setup makes the cluster (csvlog with each error's LOCATION), the
        database, the role and its grants, the wrappers, the targets, and
        the sinks with their rows (refresh)."""
        h = self.h
        h.create("\n# ---- test/sqlsmith ----\nmax_connections = 40\nlogging_collector = on\n"
                 "log_destination = 'stderr,csvlog'\nlog_directory = 'log'\nlog_filename = 'postgresql'\n"
                 "log_rotation_age = 0\nlog_rotation_size = 0\nlog_error_verbosity = verbose\n"
                 "log_min_messages = warning\nlog_min_error_statement = error\ntrack_functions = 'all'\n")
        h.start()
        log("cluster: socket %s port %d%s" % (h.sockdir, h.port,
                                               ", sanitizers (PS_SANITIZE=1)" if self.sanitized() else ""))
        ctl = h.server(default_app="smith-ctl")
        ctl.query("CREATE DATABASE %s" % DB)
        self.su = Server(h.sockdir, h.port, dbname=DB, default_app="smith-ctl")
        self.owner = Server(h.sockdir, h.port, user=ROLE, dbname=DB, default_app="smith-setup")
        self.su.query(SETUP_SUPERUSER)
        self.owner.query(TABLES_SQL)
        for k in range(1, self.cfg.copies + 1):
            self.su.query("CREATE SCHEMA smith%d; GRANT USAGE ON SCHEMA smith%d TO %s" % (k, k, ROLE))
        wrapped = []
        for name, nargs, retset, retrecord, rettype, types, names in self.su.query(WRAPPED_SQL):
            def wrap(args):
                """wrap returns the body and result type of a wrapper that
                calls the function with args (SQL expressions)."""
                call = "paimon_sink.%s(%s)" % (name, ", ".join(args))
                if retset:
                    return "SELECT count(*) FROM " + call, "bigint"
                if retrecord:
                    return "SELECT %s::text" % call, "text"
                return "SELECT " + call, rettype

            # the wrapper with the function's arguments: sqlsmith picks a
            # function with arguments one time in three, among thousands
            # (PostgreSQL's): many copies of ours
            params = ", ".join("a%d %s" % (i + 1, t) for i, t in enumerate(types))
            body, ret = wrap(["$%d" % (i + 1) for i in range(nargs)])
            for k in range(1, (self.cfg.copies if nargs else 2) + 1):
                self.su.query("CREATE FUNCTION smith%d.%s(%s) RETURNS %s LANGUAGE sql AS $w$%s$w$"
                              % (k, name, params, ret, body))
            # NAME_any(): no arguments (sqlsmith picks one of those two
            # times in three, among a hundred), it draws each argument from
            # live values, near misses and edges (ARG_POOLS) at each call
            if nargs:
                body, ret = wrap([arg_expr(n, t) for n, t in zip(names or [""] * nargs, types)])
                try:
                    for k in range(1, 3):
                        self.su.query("CREATE FUNCTION smith%d.%s_any() RETURNS %s VOLATILE LANGUAGE sql "
                                      "AS $w$%s$w$" % (k, name, ret, body))
                except psycopg2.Error as e:
                    log("no %s_any(): %s" % (name, describe(e)))
            wrapped.append(name)
        for k in range(1, self.cfg.copies + 1):
            self.su.query("GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA smith%d TO %s" % (k, ROLE))
        log("wrappers in schemas smith1..smith%d: %s (and NAME_any() of those with arguments)"
            % (self.cfg.copies, ", ".join(wrapped)))
        if not self.su.wait_writers_ready(60):
            raise Abort("the writers of database %s did not start" % DB)
        self.refresh()
        log("sinks: %s; group %s of g1_sink and g2_sink"
            % (", ".join("%s (%s)" % r for r in self.su.query("SELECT sink_name, mode FROM paimon_sink.sinks "
                                                               "ORDER BY 1")), GROUP))

    def sanitized(self):
        """sanitized tells whether the cluster runs under the sanitizers."""
        return os.environ.get("PS_SANITIZE") == "1"

    def refresh(self):
        """refresh puts back, as smith_owner, what a round took away: a
        missing sink or the group is created again; then each sink gets
        rows that a checkpoint() commits, rows staged under the commit user
        smith-job that prepare_commit makes a pending checkpoint of, and
        rows staged after it.  A step that fails is logged and skipped (a
        round may leave a sink in a state that refuses it: that is its
        business, not the setup's)."""
        self.round_no += 1
        n = self.round_no * 1000
        conn = self.owner.connect("smith-refresh", statement_timeout_ms=60000)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT sink_name FROM paimon_sink.sinks")
                have = {r[0] for r in cur.fetchall()}
                cur.execute("SELECT group_name FROM paimon_sink.sink_groups")
                groups = {r[0] for r in cur.fetchall()}

                def step(what, sql, args=None):
                    """step runs one statement of the refresh, logging a failure."""
                    try:
                        cur.execute(sql, args)
                    except psycopg2.Error as e:
                        RUN.note("refresh: %s: %s" % (what, describe(e)))

                for sink in SINKS:
                    if sink not in have:
                        step("create " + sink, SINK_DDL[sink])
                if GROUP not in groups:
                    step("drop members' group", "SELECT paimon_sink.drop_sink_group(group_name) "
                         "FROM paimon_sink.sink_groups WHERE %s = ANY (sinks)", ("g1_sink",))
                    step("create group", "SELECT paimon_sink.create_sink_group(%s, ARRAY['g1_sink', 'g2_sink'])",
                         (GROUP,))
                step("reset commit user", "RESET paimon_sink.commit_user")
                for sink in SINKS:
                    step("rows " + sink, SINK_ROWS[sink].replace("@N@", str(n)))
                for sink in SINKS[:5]:
                    step("checkpoint " + sink, "SELECT * FROM paimon_sink.checkpoint(%s)", (sink,))
                step("commit user", "SET paimon_sink.commit_user = %s", (JOB,))
                for sink in SINKS:
                    step("job rows " + sink, SINK_ROWS[sink].replace("@N@", str(n + 100)))
                for target in SINKS[:5] + [GROUP]:
                    step("prepare " + target, "SELECT * FROM paimon_sink.prepare_commit(%s, %s, %s)",
                         (target, JOB, self.round_no))
                for sink in SINKS:
                    step("staged rows " + sink, SINK_ROWS[sink].replace("@N@", str(n + 200)))
        finally:
            conn.close()

    # ---- the rounds ------------------------------------------------------
    def run_round(self, queries, seconds):
        """run_round runs sqlsmith once for at most queries queries and
        seconds, connected as smith_owner, and returns the queries it ran
        (one progress character each: . e t S C)."""
        h = self.h
        seed = self.cfg.seed + self.rounds
        self.rounds += 1
        target = "host=%s port=%d dbname=%s user=%s application_name=sqlsmith" % (h.sockdir, h.port, DB, ROLE)
        cmd = ["sqlsmith", "--target=" + target, "--seed=%d" % seed, "--max-queries=%d" % queries,
               "--exclude-catalog", "--verbose"]
        errpath = os.path.join(h.work, "logs", "sqlsmith-round-%d.err" % self.rounds)
        t = time.monotonic()
        with open(errpath, "w") as err:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            try:
                rc = p.wait(timeout=max(seconds, 5))
            except subprocess.TimeoutExpired:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                rc = "stopped at the time bound"
        self.smith_seconds += time.monotonic() - t
        ran = 0
        with open(errpath, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if line and re.fullmatch(r"[.etSCx]+", line):
                    ran += len(line)
        log("round %d: seed %d, %d queries in %.1f s (sqlsmith exit %s)"
            % (self.rounds, seed, ran, time.monotonic() - t, rc))
        return ran

    def server_up(self):
        """server_up tells whether the server answers (waiting up to 60 s
        for a crash restart to end)."""
        return self.su.wait_writers_ready(60)

    def csv_rows(self):
        """csv_rows yields the rows of the server's csv logs as dicts."""
        for path in sorted(glob.glob(os.path.join(self.h.datadir, "log", "*.csv"))):
            with open(path, newline="", errors="replace") as f:
                for row in csv.reader(f):
                    yield dict(zip(CSV_FIELDS, row))

    def scan_crashes(self):
        """scan_crashes returns the server log's crash lines (csv and
        stderr logs, and the server.log of pg_ctl)."""
        lines = []
        for row in self.csv_rows():
            if row.get("error_severity") in ("LOG", "PANIC") and CRASH_RE.search(row.get("message", "")):
                lines.append("%s %s %s" % (row["log_time"], row["error_severity"], row["message"]))
            elif row.get("error_severity") == "PANIC":
                lines.append("%s PANIC %s" % (row["log_time"], row["message"]))
        return lines

    def analyse(self):
        """analyse reads the csv log: the errors of our code by SQLSTATE
        and message pattern, internal errors anywhere, our workers' own
        errors; writes logs/sqlsmith-errors.txt and returns (our SQLSTATE
        counter, the internal errors of ours, the lines for the file)."""
        funcs, files = our_functions()
        ours = collections.Counter()
        sample = {}
        internal_ours = []
        internal_other = collections.Counter()
        internal_other_sample = {}
        worker_errors = collections.Counter()
        worker_sample = {}
        for row in self.csv_rows():
            if row.get("error_severity") not in ("ERROR", "FATAL", "PANIC"):
                continue
            loc = row.get("location", "")
            m = re.match(r"^(\w+), ([\w.]+):\d+$", loc)
            func, fname = (m.group(1), m.group(2)) if m else ("", "")
            is_ours = (func, fname) in funcs or (not funcs and fname in files)
            code, msg = row.get("sql_state_code", ""), row.get("message", "")
            internal = code == "XX000" or "cache lookup failed" in msg
            session = row.get("backend_type") == "client backend"
            key = (code, pattern(msg))
            if not session:
                if row.get("application_name", "").startswith("smith"):
                    continue
                worker_errors[(row.get("backend_type"),) + key] += 1
                worker_sample.setdefault((row.get("backend_type"),) + key, row)
                if internal or row.get("error_severity") == "PANIC":
                    internal_ours.append(row)
                continue
            if is_ours:
                ours[key] += 1
                sample.setdefault(key, row)
                if internal:
                    internal_ours.append(row)
            elif internal:
                internal_other[key + (loc,)] += 1
                internal_other_sample.setdefault(key + (loc,), row)
        out = ["errors raised by paimon_sink's code in sessions (SQLSTATE, count, message pattern, "
               "location, one query):"]
        for key, cnt in sorted(ours.items(), key=lambda kv: (kv[0][0], -kv[1])):
            r = sample[key]
            out.append("  %s %6d  %s  [%s]\n      query: %s" % (key[0], cnt, key[1], r["location"],
                                                                 " ".join(r["query"].split())[:600]))
        out.append("internal errors (XX000, cache lookup failed) of paimon_sink's code: %d" % len(internal_ours))
        for r in internal_ours[:50]:
            out.append("  %s %s [%s]\n      context: %s\n      query: %s"
                       % (r["sql_state_code"], r["message"], r["location"], " ".join(r["context"].split()),
                          " ".join(r["query"].split())[:2000]))
        out.append("internal errors of PostgreSQL's code (listed, not counted: sqlsmith calls its functions "
                   "with odd arguments):")
        for key, cnt in internal_other.most_common():
            r = internal_other_sample[key]
            out.append("  %s %6d  %s  [%s]\n      query: %s" % (key[0], cnt, key[1], key[2],
                                                                 " ".join(r["query"].split())[:600]))
        out.append("errors of the extension's workers and other processes (not sessions):")
        for key, cnt in worker_errors.most_common():
            r = worker_sample[key]
            out.append("  %s %s %6d  %s  [%s]" % (key[0], key[1], cnt, key[2], r["location"]))
        with open(os.path.join(self.h.work, "logs", "sqlsmith-errors.txt"), "w") as f:
            f.write("\n".join(out) + "\n")
        codes = collections.Counter()
        for (code, _), cnt in ours.items():
            codes[code] += cnt
        return codes, internal_ours, worker_errors, out

    def coverage(self):
        """coverage returns, from pg_stat_user_functions (track_functions =
        all), how often each function of the extension and each wrapper
        was called, as "name=calls" strings (the statistics of a crashed
        server are lost with it)."""
        rows = self.su.query("SELECT schemaname || '.' || funcname, sum(calls) FROM pg_stat_user_functions "
                             "WHERE schemaname = 'paimon_sink' GROUP BY 1 ORDER BY 1")
        return ["%s=%d" % (name, calls) for name, calls in rows or []]

    def run(self):
        """run builds, sets up, runs the rounds and returns the results."""
        cfg = self.cfg
        self.build()
        self.setup()
        deadline = self.t0 + cfg.seconds
        while self.queries < cfg.queries:
            left = deadline - time.monotonic()
            if left <= 1:
                break
            n = min(cfg.round_queries, cfg.queries - self.queries)
            self.queries += self.run_round(n, left)
            if not self.server_up():
                raise Abort("the server does not answer after round %d" % self.rounds)
            if self.queries < cfg.queries and time.monotonic() < deadline - 1:
                self.refresh()
        return self.queries


def main():
    """main runs the rounds; it always cleans up and prints the last line
    sqlsmith: queries=N seconds=S crashes=N internal=N sanitizer=N."""
    cfg = parse_args()
    s = Smith(cfg)
    interrupt_on_signals()
    rc = 1
    res = {"crashes": -1, "internal": -1, "sanitizer": -1}
    try:
        log("=== paimon_sink sqlsmith: seed %d, up to %d queries in %.0f s, rounds of %d; rerun: SMITH_SEED=%d "
            "test/sqlsmith" % (cfg.seed, cfg.queries, cfg.seconds, cfg.round_queries, cfg.seed))
        s.run()
        crashes = s.scan_crashes()
        res["crashes"] = len(crashes)
        for line in crashes:
            log("CRASH: " + line)
        codes, internal, worker_errors, lines = s.analyse()
        res["internal"] = len(internal)
        log("SQLSTATEs raised by paimon_sink's code: %s"
            % (", ".join("%s=%d" % kv for kv in sorted(codes.items())) or "none"))
        for line in lines:
            if line.startswith("internal errors (XX000") or internal and line.startswith("  XX"):
                log(line)
        for key, cnt in worker_errors.most_common():
            log("worker error: %s %s %d× %s" % (key[0], key[1], cnt, key[2]))
        res["sanitizer"] = 0
        if s.sanitized():
            reports = sanitizer_reports(s.h)
            res["sanitizer"] = len(reports)
            for path in reports:
                log("sanitizer report %s:" % path)
                with open(path, errors="replace") as f:
                    print(f.read(), flush=True)
        try:
            log("calls: %s" % " ".join(s.coverage()))
        except psycopg2.Error as e:
            log("calls: unknown (%s)" % describe(e))
        log("details: logs/sqlsmith-errors.txt")
        problems = [k for k in ("crashes", "internal", "sanitizer") if res[k] != 0]
        if s.queries == 0:
            problems.append("no query ran")
        if problems:
            log("FAIL: " + ", ".join(problems))
        else:
            log("PASS: %d queries, no crash, no internal error of ours%s"
                % (s.queries, ", no sanitizer report" if s.sanitized() else ""))
            rc = 0
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Exception as e:
        log("FAIL: %s" % (e if isinstance(e, Abort) else traceback.format_exc()))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if rc != 0 and s.h.work:
            keep_logs(s.h.work, glob.glob(os.path.join(s.h.datadir, "log", "postgresql")) + [s.h.server_log],
                      "paimon_sink-sqlsmith-logs.")
        s.h.cleanup()
        print("sqlsmith: queries=%d seconds=%.0f crashes=%d internal=%d sanitizer=%d"
              % (s.queries, time.monotonic() - s.t0, res["crashes"], res["internal"], res["sanitizer"]),
              flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
