# shellcheck shell=bash
# test/lib/cluster.sh -- shared helpers for test/check, test/demo, test/soak
# and (through bash, from test/py/harness.py) test/job and test/bench.
#
# Source it from a bash script (set -euo pipefail is fine):
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"
#   ps_install_trap                 # stop servers + remove temp dir on exit
#   ps_ensure_packages              # apt-get install what is missing (root)
#   ps_workdir_create               # $PS_WORK: temp dir owned by postgres
#   ps_copy_tree "$PS_REPO_ROOT" "$PS_WORK/src"
#   ps_build_install "$PS_WORK/src" # make COPT=-Werror && make install
#   ps_cluster_start demo           # initdb (once) + start, unix socket only
#                                   # (PS_SERVER_ENV: extra environment for it)
#   ps_cluster_psql demo -c 'select 1'
#   ps_cluster_stop demo            # fast stop (cleanup uses immediate)
#   ps_copy_py                      # test/py/*.py into $PS_WORK/py
#
# Everything PostgreSQL-side runs as the unprivileged OS user "postgres"
# when we are root (the server refuses to run as root), with a clean
# environment.  Settings: KEEP_TMP=1 keeps the temp dir after the run;
# PS_SANITIZE=1 starts every cluster (ps_cluster_start) with the sanitizer
# runtime preloaded (see "Sanitizer builds" below).

if [[ -n ${PS_CLUSTER_SH_LOADED:-} ]]; then
	return 0
fi
PS_CLUSTER_SH_LOADED=1

PS_PGBIN=${PS_PGBIN:-/usr/lib/postgresql/15/bin}
PS_PG_CONFIG=${PS_PG_CONFIG:-$PS_PGBIN/pg_config}
PS_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PS_CONF_FILE=$PS_REPO_ROOT/test/paimon_sink.conf
PS_PATH="$PS_PGBIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# ps_pg_major PG_CONFIG -- print the major version (15, 17, ...) of the
# PostgreSQL of PG_CONFIG: what its --version says, or before it is
# installed what Debian's path says (/usr/lib/postgresql/MAJOR/bin/...);
# 15 when neither does.
ps_pg_major() {
	local v
	if v=$("$1" --version 2>/dev/null) && [[ $v =~ ^PostgreSQL\ ([0-9]+) ]]; then
		printf '%s\n' "${BASH_REMATCH[1]}"
	elif [[ $1 =~ /postgresql/([0-9]+)/bin/[^/]+$ ]]; then
		printf '%s\n' "${BASH_REMATCH[1]}"
	else
		echo 15
	fi
}

# ps_packages MAJOR [SET] -- print, one a line, the Debian packages the
# tests of PostgreSQL MAJOR need.  SET core: building, and the layering,
# regress, isolation and TAP suites (the roots of test/check's version
# matrix); all (the default): besides, the host's other suites and tools
# (clang-format, wal2json for test/cdc, clang 14 and its sanitizer runtime
# for bookworm's PostgreSQL 15, sqlsmith, debootstrap for the matrix's
# roots).
ps_packages() {
	local major=$1
	printf '%s\n' "postgresql-$major" "postgresql-server-dev-$major" uuid-dev \
		libipc-run-perl perl make gcc python3 python3-psycopg2 git pgbouncer \
		prometheus-postgres-exporter
	[[ ${2:-all} == core ]] && return 0
	printf '%s\n' postgresql-contrib clang-format "postgresql-$major-wal2json" \
		clang-14 libclang-rt-14-dev sqlsmith debootstrap
}

# PS_PG_MAJOR: the major of the PostgreSQL under test; PS_PACKAGE_SET: which
# of ps_packages' sets ps_ensure_packages installs.
PS_PG_MAJOR=${PS_PG_MAJOR:-$(ps_pg_major "$PS_PG_CONFIG")}
mapfile -t PS_PACKAGES < <(ps_packages "$PS_PG_MAJOR" "${PS_PACKAGE_SET:-all}")
# The system PostgreSQL's library folder, where Debian's packages (wal2json)
# put their plugins.
PS_SYSTEM_PKGLIBDIR=/usr/lib/postgresql/$PS_PG_MAJOR/lib

if [[ $EUID -eq 0 ]]; then
	PS_PG_USER=${PS_PG_USER:-postgres}
else
	PS_PG_USER=$(id -un)
fi

PS_WORK=${PS_WORK:-}
PS_CLEANED=0
PS_APT_UPDATED=0

export PATH="$PS_PATH:$PATH"

ps_log() { printf '[paimon_sink] %s\n' "$*" >&2; }
ps_die() {
	ps_log "ERROR: $*"
	exit 1
}
ps_is_root() { [[ $EUID -eq 0 ]]; }

# --------------------------------------------------------------------------
# Packages, copy, build
# --------------------------------------------------------------------------

ps_missing_packages() {
	local p st
	command -v dpkg-query >/dev/null 2>&1 || ps_die "dpkg-query not found: this harness expects Debian 12"
	for p in "${PS_PACKAGES[@]}"; do
		st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[[ $st == installed ]] || printf '%s\n' "$p"
	done
}

# ps_apt_failed LOG WHAT -- the tail of the package manager's log, then die
ps_apt_failed() {
	tail -n 30 "$1" >&2
	ps_die "$2 failed (whole output in $1)"
}

# ps_no_main_cluster PACKAGE... -- when the PostgreSQL server packages are
# among those about to be installed, tell Debian's postgresql-common not to
# create (and start, on a systemd machine) a 15/main cluster on port 5432:
# the tests run their own clusters and need none.  Only before a first
# install: a machine whose packages are installed keeps its settings.
ps_no_main_cluster() {
	local p conf=/etc/postgresql-common/createcluster.conf
	for p in "$@"; do
		[[ $p == "postgresql-$PS_PG_MAJOR" || $p == postgresql-common ]] || continue
		mkdir -p "${conf%/*}"
		if [[ -f $conf ]] && grep -qE '^[#[:space:]]*create_main_cluster' "$conf"; then
			sed -i -E 's/^[#[:space:]]*create_main_cluster.*/create_main_cluster = false/' "$conf"
		else
			echo 'create_main_cluster = false' >>"$conf"
		fi
		ps_log "$conf: create_main_cluster = false (no $PS_PG_MAJOR/main cluster on port 5432)"
		return 0
	done
}

ps_ensure_packages() {
	local -a missing
	mapfile -t missing < <(ps_missing_packages)
	((${#missing[@]} == 0)) && return 0
	if ! ps_is_root; then
		ps_die "missing Debian packages: ${missing[*]} -- run as root, or: sudo apt-get install -y --no-install-recommends ${missing[*]}"
	fi
	# the package manager's hundreds of lines go to a log, named on failure
	local log
	log=$(mktemp "${TMPDIR:-/tmp}/paimon_sink-apt.XXXXXX.log")
	ps_log "installing missing packages (about a minute; output in $log): ${missing[*]}"
	ps_no_main_cluster "${missing[@]}"
	if ((PS_APT_UPDATED == 0)); then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$log" 2>&1 ||
			ps_apt_failed "$log" "apt-get update"
		PS_APT_UPDATED=1
	fi
	# --force-confold and UCF_FORCE_CONFFOLD (postgresql-common installs it with
	# ucf): keep createcluster.conf as ps_no_main_cluster wrote it
	DEBIAN_FRONTEND=noninteractive UCF_FORCE_CONFFOLD=1 apt-get install -y -qq --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
		"${missing[@]}" >>"$log" 2>&1 || ps_apt_failed "$log" "apt-get install"
	rm -f "$log"
	# the exporter's package starts its service on a systemd machine; the
	# tests start their own (TAP 071), so the one this install started goes
	if [[ " ${missing[*]} " == *" prometheus-postgres-exporter "* && -d /run/systemd/system ]]; then
		systemctl disable --now prometheus-postgres-exporter >/dev/null 2>&1 &&
			ps_log "stopped and disabled the prometheus-postgres-exporter service its package started"
	fi
	mapfile -t missing < <(ps_missing_packages)
	((${#missing[@]} == 0)) || ps_die "packages still missing after apt-get install: ${missing[*]}"
}

# ps_ensure_wal2json -- make the wal2json output plugin (test/cdc's logical
# decoding) loadable by the PostgreSQL of PS_PG_CONFIG.  Debian's
# postgresql-15-wal2json installs it into the system PostgreSQL only; when
# PS_PGBIN points at another copy of PostgreSQL 15, root copies the system's
# wal2json.so into that copy's library folder (as make install puts
# paimon_sink.so there).  Otherwise it fails, saying what to do.
ps_ensure_wal2json() {
	local libdir
	libdir=$("$PS_PG_CONFIG" --pkglibdir) || ps_die "$PS_PG_CONFIG --pkglibdir failed"
	[[ -f $libdir/wal2json.so ]] && return 0
	if [[ ! -f $PS_SYSTEM_PKGLIBDIR/wal2json.so ]]; then
		ps_die "wal2json.so is in neither $libdir nor $PS_SYSTEM_PKGLIBDIR: install postgresql-$PS_PG_MAJOR-wal2json"
	fi
	if ! ps_is_root && [[ ! -w $libdir ]]; then
		ps_die "wal2json.so is not in $libdir (the PostgreSQL of PS_PGBIN), which $(id -un) cannot write: as root, cp $PS_SYSTEM_PKGLIBDIR/wal2json.so $libdir/ (test/check does)"
	fi
	ps_log "copying $PS_SYSTEM_PKGLIBDIR/wal2json.so into $libdir (the PostgreSQL of PS_PGBIN)"
	cp "$PS_SYSTEM_PKGLIBDIR/wal2json.so" "$libdir/wal2json.so"
}

# ps_copy_tree SRC DST -- copy a source tree without .git and test artifacts.
ps_copy_tree() {
	local src=$1 dst=$2
	mkdir -p "$dst"
	tar -C "$src" -cf - \
		--exclude=.git \
		--exclude=./results --exclude=./regression.diffs --exclude=./regression.out \
		--exclude='./tmp_check*' --exclude=./output_iso --exclude=./log \
		. | tar -C "$dst" -xf -
}

# ps_build_install DIR -- clean build with -Werror (override with PS_COPT),
# then make install (needs root, or a writable PostgreSQL install dir).
ps_build_install() {
	local dir=$1 copt=${PS_COPT--Werror}
	local -a mk=(make -C "$dir" --no-print-directory PG_CONFIG="$PS_PG_CONFIG")
	[[ -x $PS_PG_CONFIG ]] || ps_die "$PS_PG_CONFIG not found (install postgresql-server-dev-$PS_PG_MAJOR)"
	if ! ps_is_root; then
		local libdir extdir
		libdir=$("$PS_PG_CONFIG" --pkglibdir)
		extdir=$("$PS_PG_CONFIG" --sharedir)/extension
		if [[ ! -w $libdir || ! -w $extdir ]]; then
			ps_die "not root and $libdir or $extdir is not writable: cannot 'make install' (run as root)"
		fi
	fi
	# Explicit "|| return": must not depend on the caller's errexit state.
	"${mk[@]}" clean >/dev/null || return 1
	"${mk[@]}" -j"$(nproc 2>/dev/null || echo 2)" COPT="$copt" || return 1
	"${mk[@]}" COPT="$copt" install || return 1
}

# ps_use_pgbin BINDIR -- from now on use the PostgreSQL whose binaries are
# in BINDIR (PS_PGBIN, PS_PG_CONFIG, PS_PATH and PATH), e.g. a copy that
# ps_pg_copy made.
ps_use_pgbin() {
	PS_PGBIN=$1
	PS_PG_CONFIG=$PS_PGBIN/pg_config
	PS_PATH="$PS_PGBIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	export PATH="$PS_PATH:$PATH"
}

# ps_pg_copy DEST -- a relocatable copy of the PostgreSQL of PS_PG_CONFIG
# (its bindir, pkglibdir and sharedir at their absolute paths below DEST),
# without any paimon_sink files; prints the copy's bindir.  PostgreSQL finds
# its lib and share dirs relative to its binaries, so the copy runs from
# there, and "make install DESTDIR=DEST" of an extension built against
# PS_PG_CONFIG installs into it.
ps_pg_copy() {
	local dest=$1 bindir pkglibdir sharedir dir got
	[[ -x $PS_PG_CONFIG ]] || ps_die "$PS_PG_CONFIG not found (install postgresql-server-dev-$PS_PG_MAJOR)"
	bindir=$("$PS_PG_CONFIG" --bindir)
	pkglibdir=$("$PS_PG_CONFIG" --pkglibdir)
	sharedir=$("$PS_PG_CONFIG" --sharedir)
	mkdir -p "$dest"
	# Physical path: the copied pg_config reports paths with symlinks resolved.
	dest=$(cd -- "$dest" && pwd -P)
	for dir in "$bindir" "$pkglibdir" "$sharedir"; do
		mkdir -p "$dest$dir"
		cp -a "$dir/." "$dest$dir/"
	done
	# The PostgreSQL copied may have a version of paimon_sink installed.
	rm -rf "$dest$pkglibdir"/paimon_sink* "$dest$pkglibdir"/bitcode/paimon_sink* \
		"$dest$sharedir"/extension/paimon_sink*
	chmod -R a+rX "$dest"
	got=$("$dest$bindir/pg_config" --pkglibdir)
	[[ $got == "$dest$pkglibdir" ]] ||
		ps_die "the copied PostgreSQL is not relocatable: $dest$bindir/pg_config --pkglibdir prints $got, not $dest$pkglibdir"
	printf '%s\n' "$dest$bindir"
}

# --------------------------------------------------------------------------
# Sanitizer builds
#
# "make SANITIZE=1" builds the library with AddressSanitizer and
# UndefinedBehaviorSanitizer (clang's, whose one runtime libclang_rt.asan
# has both; see the Makefile for why not gcc's).  PostgreSQL's own binary is
# not instrumented, so a server runs such a library only with the runtime
# preloaded into the postmaster (LD_PRELOAD; every backend and worker is a
# fork of it and inherits it), with the options ps_sanitizer_env prints.
# Each report is a file sanitizer.PID in a log folder; ps_sanitizer_reports
# prints them and fails.
#
# PS_SANITIZE=1: ps_cluster_start starts clusters that way, reports into
# PS_SANITIZER_LOGDIR if set (test/check sets it), else the cluster's folder
# (clusters/NAME/sanitizer).  The PostgreSQL of PS_PGBIN must have a
# SANITIZE=1 build installed: ps_sanitize_install makes one in its own copy
# of PostgreSQL, never replacing the build other runs use.  A program that
# starts servers itself passes the lines of "ps_sanitizer_env DIR" into the
# environment of pg_ctl (test/py/harness.py: server_env, which Node.start
# uses).  The same environment as one PS_SERVER_ENV (see ps_server_env),
# for a program that takes that, such as test/fuzz:
#   PS_SERVER_ENV="$(ps_sanitizer_env DIR | paste -sd ' ')" test/fuzz ...
#
# What it finds: reads and writes out of bounds of stack and global objects
# and of malloc'd memory, use after free of malloc'd memory, wild pointers
# (a SEGV becomes a report with its stack), and undefined behaviour (null,
# misaligned or out-of-bounds pointers, shifts, bad bool and enum values,
# ...) in our code.  Not a palloc'd chunk overrun inside a memory context's
# block: PostgreSQL's allocator takes blocks from malloc and carves them.
# --------------------------------------------------------------------------

# ps_sanitize_install DIR DEST -- build the source tree DIR (a copy: it is
# cleaned) with SANITIZE=1 (COPT as ps_build_install) and install it into
# a copy of the PostgreSQL of PS_PG_CONFIG made under DEST (ps_pg_copy);
# prints the copy's bindir (for ps_use_pgbin or PS_PGBIN), build output on
# stderr.
ps_sanitize_install() {
	local dir=$1 dest=$2 copt=${PS_COPT--Werror} bindir
	local -a mk=(make -C "$dir" --no-print-directory PG_CONFIG="$PS_PG_CONFIG" SANITIZE=1)
	bindir=$(ps_pg_copy "$dest") || return 1
	{
		"${mk[@]}" clean >/dev/null &&
			"${mk[@]}" -j"$(nproc 2>/dev/null || echo 2)" COPT="$copt" &&
			"${mk[@]}" COPT="$copt" install DESTDIR="$(cd -- "$dest" && pwd -P)"
	} >&2 || return 1
	chmod -R a+rX "$dest"
	printf '%s\n' "$bindir"
}

# ps_sanitizer_runtimes -- print what a server running the installed
# paimon_sink.so of PS_PG_CONFIG (a SANITIZE=1 build) must preload, in
# order: the sanitizer runtime it is linked with (it must come first in the
# process), then paimon_sink_sanitizer_init.so (installed with it; see
# test/lib/sanitizer_init.c).  Fails when the library is no SANITIZE=1
# build.
ps_sanitizer_runtimes() {
	local libdir lib rt init
	libdir=$("$PS_PG_CONFIG" --pkglibdir)
	lib=$libdir/paimon_sink.so
	init=$libdir/paimon_sink_sanitizer_init.so
	[[ -f $lib ]] || {
		ps_log "ERROR: $lib is not installed"
		return 1
	}
	rt=$(ldd "$lib" | awk '$1 ~ /^libclang_rt\.asan/ && $3 ~ /^\// { print $3 }')
	if [[ -z $rt || ! -f $init ]]; then
		ps_log "ERROR: $lib is not a SANITIZE=1 build (it links no libclang_rt.asan, or $init is missing): make SANITIZE=1 && make SANITIZE=1 install, or use ps_sanitize_install"
		return 1
	fi
	printf '%s\n' "$rt" "$init"
}

# ps_sanitizer_env LOGDIR -- print, one VAR=value a line, the environment
# of a postmaster that runs the SANITIZE=1 build of PS_PG_CONFIG, its
# reports going to files LOGDIR/sanitizer.PID (LOGDIR is created, writable
# by the server's OS user).  The options:
#   detect_leaks=0       PostgreSQL frees by memory context and process exit
#   abort_on_error=1     an ASan report ends the process with SIGABRT, which
#                        the postmaster treats as a crash (as the SIGSEGV
#                        it replaces), not as an exit code 1 it would ignore
#   handle_abort=0       a PANIC's abort() is PostgreSQL's, not a report
#   allocator_may_return_null=1   a huge malloc fails as it would without
#                        ASan (PostgreSQL says "out of memory"), no report
#   quarantine_size_mb=64  freed memory held back to catch use after free,
#                        per process: the default 256 MB times dozens of
#                        backends and workers is too much for a test box
#   detect_stack_use_after_return=0  (fake stacks per process: memory)
#   UBSan: print_stacktrace=1, halt_on_error=0 (report and go on: the run
#   fails on the report; one fault does not hide the next)
# PostgreSQL's signal handlers stay its own: the runtime takes only SIGSEGV,
# SIGBUS and SIGFPE (a report with the stack), and PostgreSQL sets SIGFPE's
# after it.  ASan reserves its shadow memory (1/8 of the address space)
# without committing it and never poisons shared memory, so shared_buffers
# and huge pages need nothing; fork() keeps the runtime's state in each child.
ps_sanitizer_env() {
	local dir=$1 runtimes sym='' f
	runtimes=$(ps_sanitizer_runtimes) || return 1
	mkdir -p "$dir"
	chmod 1777 "$dir"
	for f in /usr/lib/llvm-*/bin/llvm-symbolizer; do
		[[ -x $f ]] && sym=":external_symbolizer_path=$f"
	done
	printf 'LD_PRELOAD=%s\n' "$(paste -sd : <<<"$runtimes")"
	printf 'ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_abort=0:allocator_may_return_null=1:quarantine_size_mb=64:detect_stack_use_after_return=0:log_path=%s/sanitizer%s\n' "$dir" "$sym"
	printf 'UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=0:report_error_type=1:log_path=%s/sanitizer%s\n' "$dir" "$sym"
}

# ps_sanitizer_reports DIR... -- print every sanitizer report in the
# folders DIR (files sanitizer.PID, as ps_sanitizer_env names them) and in
# the server logs below them (*.log, postmaster.log: a report a process
# wrote to stderr), each with its file's name; fails (1) if there is any,
# succeeds quietly if there is none.
ps_sanitizer_reports() {
	local d f n=0 re='^==[0-9]+==ERROR: [A-Za-z]+Sanitizer|: runtime error: |^SUMMARY: [A-Za-z]+Sanitizer'
	for d in "$@"; do
		[[ -d $d ]] || continue
		while IFS= read -r -d '' f; do
			n=$((n + 1))
			echo "----- sanitizer report $f"
			cat "$f"
		done < <(find "$d" -type f -name 'sanitizer.*' -print0 | sort -z)
		while IFS= read -r -d '' f; do
			if grep -qE "$re" "$f"; then
				n=$((n + 1))
				echo "----- sanitizer report in $f"
				grep -E -A 30 "$re" "$f" | head -n 200
			fi
		done < <(find "$d" -type f \( -name '*.log' -o -name 'postmaster.log' \) -print0 | sort -z)
	done
	if ((n > 0)); then
		echo "sanitizer: $n report(s)"
		return 1
	fi
	return 0
}

# ps_sanitizer_logdir NAME -- where the sanitizer reports of cluster NAME
# go: PS_SANITIZER_LOGDIR, or the cluster's folder's sanitizer/.
ps_sanitizer_logdir() {
	printf '%s\n' "${PS_SANITIZER_LOGDIR:-$(_ps_cdir "${1:-main}")/sanitizer}"
}

# ps_releases -- print "VERSION COMMIT MAJORS" for each released version listed in
# test/releases, in file order (comments and blank lines dropped).  Fails,
# naming the line, on a malformed or duplicate entry.
ps_releases() {
	local file=$PS_REPO_ROOT/test/releases
	[[ -r $file ]] || {
		ps_log "ERROR: $file not found"
		return 1
	}
	awk -v file="$file" '
	{ sub(/#.*/, ""); sub(/^[ \t]+/, ""); sub(/[ \t]+$/, "") }
	$0 == "" { next }
	NF != 3 || $1 !~ /^[0-9A-Za-z._-]+$/ || $2 !~ /^[0-9a-f]+$/ || length($2) != 40 ||
	$3 !~ /^[0-9]+(,[0-9]+)*$/ {
		printf "[paimon_sink] ERROR: %s:%d: expected \"VERSION COMMIT MAJORS\" (a full 40-hex commit; majors such as 15,17)\n", file, NR > "/dev/stderr"
		bad = 1; next
	}
	$1 in seen {
		printf "[paimon_sink] ERROR: %s:%d: version %s is listed twice\n", file, NR, $1 > "/dev/stderr"
		bad = 1; next
	}
	{ seen[$1] = 1; print $1, $2, $3 }
	END { exit bad }' "$file"
}

# --------------------------------------------------------------------------
# Temp dir and running things as the postgres user
# --------------------------------------------------------------------------

# ps_workdir_create -- create $PS_WORK once (idempotent), owned by the
# postgres user, with tmp/ (TMPDIR for children) and logs/.
ps_workdir_create() {
	if [[ -n $PS_WORK && -d $PS_WORK ]]; then
		return 0
	fi
	PS_WORK=$(mktemp -d "${TMPDIR:-/tmp}/paimon_sink.XXXXXX")
	PS_CLEANED=0
	mkdir -p "$PS_WORK/tmp" "$PS_WORK/logs" "$PS_WORK/clusters"
	chmod 755 "$PS_WORK"
	ps_chown_work
}

ps_chown_work() {
	if ps_is_root && [[ -n $PS_WORK && -d $PS_WORK ]]; then
		chown -R "$PS_PG_USER": "$PS_WORK"
	fi
}

# ps_run_timed COMMAND [ARGS...] -- run an external command; if
# PS_CMD_TIMEOUT is set (seconds) run it under timeout(1), and record the
# timeout pid in $PS_WORK/run/ so ps_cleanup can stop it (timeout forwards
# the signal to its whole process group) if we are interrupted meanwhile.
ps_run_timed() {
	if [[ -z ${PS_CMD_TIMEOUT:-} || -z $PS_WORK || ! -d $PS_WORK ]]; then
		"$@"
		return
	fi
	local pid rc=0
	mkdir -p "$PS_WORK/run"
	timeout -k 20 "$PS_CMD_TIMEOUT" "$@" <&0 &
	pid=$!
	echo "$pid" >"$PS_WORK/run/$pid.pid"
	wait "$pid" || rc=$?
	rm -f "$PS_WORK/run/$pid.pid"
	return "$rc"
}

# ps_as_pg_in DIR [VAR=value ...] COMMAND [ARGS...]
# Run COMMAND in DIR as the postgres user with a clean environment
# (under timeout(1) if PS_CMD_TIMEOUT is set, see ps_run_timed).
ps_as_pg_in() {
	local dir=$1
	shift
	local -a envv
	envv=(env -i -C "$dir" PATH="$PS_PATH" HOME="${PS_WORK:-/tmp}" USER="$PS_PG_USER"
		LOGNAME="$PS_PG_USER" LANG=C.UTF-8 TMPDIR="${PS_WORK:-/tmp}/tmp"
		PS_WORK="${PS_WORK:-}" KEEP_TMP="${KEEP_TMP:-}"
		PS_SANITIZE="${PS_SANITIZE:-}" PS_SANITIZER_LOGDIR="${PS_SANITIZER_LOGDIR:-}")
	if ps_is_root; then
		ps_run_timed runuser -u "$PS_PG_USER" -- "${envv[@]}" "$@"
	else
		ps_run_timed "${envv[@]}" "$@"
	fi
}

# ps_as_pg [VAR=value ...] COMMAND [ARGS...] -- same, in $PS_WORK.
ps_as_pg() { ps_as_pg_in "${PS_WORK:-/tmp}" "$@"; }

# ps_full_fs_mount -- for the full-disk test (test/t/029_full_disk.pl):
# as root, mount a 4 MB tmpfs at $PS_WORK/fullfs owned by the postgres
# user, who cannot mount one, and set PS_FULL_FS to it; otherwise set
# PS_FULL_FS_WHY to the reason, which the test prints.  ps_cleanup
# unmounts it.
# shellcheck disable=SC2034  # PS_FULL_FS_WHY: read by test/check
ps_full_fs_mount() {
	PS_FULL_FS=
	PS_FULL_FS_WHY=
	if ! ps_is_root; then
		PS_FULL_FS_WHY="test/check runs as $(id -un), not root, and cannot mount a tmpfs"
		return 0
	fi
	local dir=$PS_WORK/fullfs out
	mkdir -p "$dir"
	if out=$(mount -t tmpfs -o "size=4m,mode=0700,uid=$(id -u "$PS_PG_USER"),gid=$(id -g "$PS_PG_USER")" \
		paimon_sink_full "$dir" 2>&1); then
		PS_FULL_FS=$dir
	else
		PS_FULL_FS_WHY="mount -t tmpfs failed: $out"
	fi
}

# ps_full_fs_umount -- unmount ps_full_fs_mount's tmpfs, if mounted.
ps_full_fs_umount() {
	if [[ -n ${PS_FULL_FS:-} ]] && mountpoint -q "$PS_FULL_FS"; then
		umount "$PS_FULL_FS" 2>/dev/null || umount -l "$PS_FULL_FS"
	fi
}

# ps_copy_py -- copy the Python test programs and their harness (test/py/*.py)
# into $PS_WORK/py, where the postgres user can read them (a checkout under
# /root, say, it cannot); test/demo and test/soak run them from there.
ps_copy_py() {
	ps_workdir_create
	mkdir -p "$PS_WORK/py"
	cp "$PS_REPO_ROOT"/test/py/*.py "$PS_WORK/py/"
	chmod -R a+rX "$PS_WORK/py"
	ps_chown_work
}

# --------------------------------------------------------------------------
# Throwaway clusters:  $PS_WORK/clusters/NAME/{data,sock,port,server.log}
# --------------------------------------------------------------------------

_ps_cdir() { printf '%s/clusters/%s' "$PS_WORK" "${1:-main}"; }

# Ports some process is listening on (TCP, v4 and v6), as decimal numbers.
_ps_listening_ports() {
	local f
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r $f ]] || continue
		awk 'NR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' "$f"
	done | while read -r hex; do printf '%d\n' "0x$hex"; done
}

_ps_free_port() {
	local used port i
	used=" $(_ps_listening_ports | tr '\n' ' ') "
	for ((i = 0; i < 200; i++)); do
		port=$((20000 + RANDOM % 30000))
		[[ $used == *" $port "* ]] && continue
		compgen -G "$PS_WORK/clusters/*/sock/.s.PGSQL.$port" >/dev/null && continue
		printf '%s\n' "$port"
		return 0
	done
	ps_die "could not find a free port"
}

ps_cluster_port() { cat "$(_ps_cdir "$1")/port"; }
ps_cluster_sockdir() { printf '%s/sock' "$(_ps_cdir "$1")"; }
ps_cluster_datadir() { printf '%s/data' "$(_ps_cdir "$1")"; }

# ps_cluster_env NAME -- print PGHOST/PGPORT/PGUSER lines for eval.
ps_cluster_env() {
	printf 'export PGHOST=%q PGPORT=%q PGUSER=%q PGDATABASE=postgres\n' \
		"$(ps_cluster_sockdir "$1")" "$(ps_cluster_port "$1")" "$PS_PG_USER"
}

# ps_cluster_create NAME [initdb args...] -- initdb once (idempotent).
ps_cluster_create() {
	local name=${1:-main}
	shift || true
	ps_workdir_create
	local cdir port
	cdir=$(_ps_cdir "$name")
	if [[ -f $cdir/data/PG_VERSION ]]; then
		return 0
	fi
	mkdir -p "$cdir/sock"
	ps_chown_work
	port=$(_ps_free_port)
	ps_as_pg initdb -D "$cdir/data" -U "$PS_PG_USER" -A trust --no-sync \
		--encoding=UTF8 --locale=C.UTF-8 --no-instructions "$@" >"$cdir/initdb.log" 2>&1 ||
		{
			tail -n 30 "$cdir/initdb.log" >&2
			ps_die "initdb failed for cluster $name"
		}
	{
		echo
		echo "# ---- test/paimon_sink.conf ----"
		cat "$PS_CONF_FILE"
		echo
		echo "# ---- test/lib/cluster.sh ----"
		echo "port = $port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$cdir/sock'"
	} >>"$cdir/data/postgresql.conf"
	echo "$port" >"$cdir/port"
	ps_chown_work
}

ps_cluster_running() {
	local data
	data=$(ps_cluster_datadir "${1:-main}")
	[[ -f $data/PG_VERSION ]] || return 1
	ps_as_pg pg_ctl status -D "$data" >/dev/null 2>&1
}

# ps_server_env -- the words of PS_SERVER_ENV, one per line: extra
# environment (VAR=value, separated by blanks; a value holds no blank) that
# ps_cluster_start gives pg_ctl start and so the postmaster and every
# process it starts, such as a sanitizer runtime preloaded by the caller:
#   PS_SERVER_ENV="$(ps_sanitizer_env DIR | paste -sd ' ')"
# Fails, naming it, on a word that is not VAR=value.
ps_server_env() {
	local w
	local -a words=()
	read -ra words <<<"${PS_SERVER_ENV:-}"
	for w in "${words[@]}"; do
		[[ $w =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || ps_die "PS_SERVER_ENV: \"$w\" is not VAR=value"
		printf '%s\n' "$w"
	done
}

# ps_cluster_start NAME -- create if needed and start (idempotent), with
# PS_SERVER_ENV's environment (see ps_server_env); with PS_SANITIZE=1 and no
# LD_PRELOAD in PS_SERVER_ENV, with the sanitizer runtime preloaded
# (ps_sanitizer_env, reports into ps_sanitizer_logdir NAME).
ps_cluster_start() {
	local name=${1:-main} cdir senv
	local -a server_env=()
	ps_cluster_create "$name"
	ps_cluster_running "$name" && return 0
	cdir=$(_ps_cdir "$name")
	senv=$(ps_server_env) || return 1
	if [[ ${PS_SANITIZE:-} == 1 && $senv != *LD_PRELOAD=* ]]; then
		senv+=$'\n'$(ps_sanitizer_env "$(ps_sanitizer_logdir "$name")") ||
			ps_die "PS_SANITIZE=1: no sanitizer environment for cluster $name"
	fi
	[[ -n ${senv//$'\n'/} ]] && mapfile -t server_env < <(grep . <<<"$senv")
	if ! ps_as_pg "${server_env[@]}" pg_ctl start -D "$cdir/data" -l "$cdir/server.log" -w -t 60 >/dev/null; then
		tail -n 40 "$cdir/server.log" >&2 || true
		ps_die "could not start cluster $name"
	fi
}

# ps_cluster_psql NAME [psql args...] -- psql as postgres against NAME.
# stdin is passed through, so heredocs work.
ps_cluster_psql() {
	local name=${1:-main}
	shift || true
	ps_as_pg psql -X -q -v ON_ERROR_STOP=1 -h "$(ps_cluster_sockdir "$name")" \
		-p "$(ps_cluster_port "$name")" -U "$PS_PG_USER" -d postgres "$@"
}

# ps_cluster_stop NAME [MODE] -- stop if running (default mode fast).
ps_cluster_stop() {
	local name=${1:-main} mode=${2:-fast}
	ps_cluster_running "$name" || return 0
	ps_as_pg pg_ctl stop -D "$(ps_cluster_datadir "$name")" -m "$mode" -w -t 60 >/dev/null
}

# --------------------------------------------------------------------------
# Cleanup
# --------------------------------------------------------------------------

# Is PID a live postgres postmaster (guards against pid reuse)?
_ps_is_postgres_pid() {
	local pid=$1 exe
	kill -0 "$pid" 2>/dev/null || return 1
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
	[[ $exe == */postgres || $exe == */postmaster ]]
}

# ps_stop_all [DIR] -- immediate-stop every postmaster whose data dir is
# under DIR (default $PS_WORK): pg_regress temp instances, TAP nodes,
# our own clusters.  Falls back to SIGKILL of the recorded postmaster pid.
ps_stop_all() {
	local root=${1:-$PS_WORK} pidfile data pid i
	[[ -n $root && -d $root ]] || return 0
	while IFS= read -r -d '' pidfile; do
		data=${pidfile%/postmaster.pid}
		pid=$(head -n 1 "$pidfile" 2>/dev/null || true)
		[[ $pid =~ ^[0-9]+$ ]] || continue
		_ps_is_postgres_pid "$pid" || continue
		PS_CMD_TIMEOUT=30 ps_as_pg pg_ctl stop -D "$data" -m immediate -w -t 20 >/dev/null 2>&1 || true
		for ((i = 0; i < 20; i++)); do
			_ps_is_postgres_pid "$pid" || break
			sleep 0.25
		done
		if _ps_is_postgres_pid "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done < <(find "$root" -name postmaster.pid -type f -print0 2>/dev/null)
}

# ps_stop_commands -- TERM (then KILL) the timeout(1) processes that
# ps_run_timed recorded and that are still running.
ps_stop_commands() {
	local f pid i exe
	local -a live=()
	[[ -n $PS_WORK && -d $PS_WORK/run ]] || return 0
	for f in "$PS_WORK"/run/*.pid; do
		[[ -f $f ]] || continue
		pid=$(cat "$f" 2>/dev/null || true)
		rm -f "$f"
		[[ $pid =~ ^[0-9]+$ ]] || continue
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
		[[ $exe == */timeout ]] || continue
		kill -TERM "$pid" 2>/dev/null && live+=("$pid")
	done
	((${#live[@]} > 0)) || return 0
	for ((i = 0; i < 40; i++)); do
		for pid in "${live[@]}"; do
			kill -0 "$pid" 2>/dev/null && break
			pid=
		done
		[[ -z $pid ]] && return 0
		sleep 0.25
	done
	for pid in "${live[@]}"; do
		kill -KILL "$pid" 2>/dev/null || true
	done
}

# ps_stop_poolers [DIR] -- stop every PgBouncer whose pidfile (pgbouncer.pid,
# as test/py/harness.py's Pooler and test/perl/PaimonSinkPooler.pm write it)
# is under DIR (default $PS_WORK): SIGTERM (its immediate shutdown), then
# SIGKILL after 5 s.  The programs stop their poolers themselves; this is
# for one that was killed before it could.
ps_stop_poolers() {
	local root=${1:-$PS_WORK} pidfile pid exe i
	[[ -n $root && -d $root ]] || return 0
	while IFS= read -r -d '' pidfile; do
		pid=$(head -n 1 "$pidfile" 2>/dev/null || true)
		[[ $pid =~ ^[0-9]+$ ]] || continue
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null || true)
		[[ $exe == */pgbouncer ]] || continue
		kill -TERM "$pid" 2>/dev/null || continue
		for ((i = 0; i < 20; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.25
		done
		kill -KILL "$pid" 2>/dev/null || true
	done < <(find "$root" -name pgbouncer.pid -type f -print0 2>/dev/null)
}

# ps_cleanup -- stop commands, poolers and servers, remove $PS_WORK unless
# KEEP_TMP=1.  Idempotent.
ps_cleanup() {
	((PS_CLEANED == 0)) || return 0
	PS_CLEANED=1
	[[ -n $PS_WORK && -d $PS_WORK ]] || return 0
	ps_stop_commands
	ps_stop_poolers "$PS_WORK"
	ps_stop_all "$PS_WORK"
	ps_full_fs_umount
	if [[ ${KEEP_TMP:-0} == 1 ]]; then
		ps_log "KEEP_TMP=1: keeping $PS_WORK"
	else
		rm -rf -- "$PS_WORK"
	fi
}

# ps_install_trap -- cleanup on exit, turn INT/TERM into an exit.
ps_install_trap() {
	trap 'ps_cleanup' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}
