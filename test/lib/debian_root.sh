# shellcheck shell=bash
# test/lib/debian_root.sh -- Debian roots for the tests that need another
# Debian release than the host's: the CI matrix runs the suites on the
# PostgreSQL major a release ships (trixie: 17, sid: 18), and the package
# test installs the built package into a clean root of the host's release.
#
#   source test/lib/debian_root.sh
#   root=$(ps_debian_root trixie postgresql-17 postgresql-server-dev-17)
#   ps_debian_root_session "$root" "$dir" 'cd /build && make'
#                                     # in a throwaway overlay of the root
#   ps_debian_root_mount "$root"      # /proc, /dev, /dev/pts, /dev/shm
#   ps_debian_root_run "$root" 'cd /build && make'
#   ps_debian_root_umount "$root"     # also done by ps_debian_root_umount_all
#
# A root is made with debootstrap (--variant=minbase, from deb.debian.org)
# the first time, kept in $PS_ROOT_CACHE (/var/cache/paimon_sink/roots by
# default, outside any clone, so that the runs of one machine share it)
# and brought up to date at each use: the packages asked for are installed
# when missing, and the package lists refreshed when older than a day.  A
# new machine makes its roots afresh (about a minute each, plus the
# packages).  No server's main cluster is made in a root, and no service
# is started by a package's installation (policy-rc.d).  Root only: it
# calls debootstrap, chroot, unshare and mount.  Callers of one machine are
# serialized per root with flock, so two runs never build one root at once:
# one that only reads a root (ps_debian_root finding nothing to install,
# ps_debian_root_session) holds the lock shared, one that changes it holds
# it alone.
#
# ps_debian_root_session runs a command in a throwaway view of a root (an
# overlay, in a mount namespace of its own): the cached root is never
# written, each run starts from the clean root, runs at once on one root do
# not meet, and nothing stays mounted when the command ends.  test/check's
# version matrix runs that way.  ps_debian_root_mount and _run are for a
# caller that wants the cached root itself.

if [[ -n ${PS_DEBIAN_ROOT_SH_LOADED:-} ]]; then
	return 0
fi
PS_DEBIAN_ROOT_SH_LOADED=1

PS_ROOT_CACHE=${PS_ROOT_CACHE:-/var/cache/paimon_sink/roots}
PS_DEBIAN_MIRROR=${PS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# which Debian release ships which PostgreSQL major (ps_debian_root_suite)
PS_DEBIAN_ROOT_SUITES=${PS_DEBIAN_ROOT_SUITES:-15=bookworm 17=trixie 18=sid}
PS_DEBIAN_ROOTS_MOUNTED=()

# ps_debian_root_log MESSAGE -- a line on stderr, named for this file.
ps_debian_root_log() { printf '[debian_root] %s\n' "$*" >&2; }

# ps_debian_root_suite MAJOR -- print the Debian release that ships
# PostgreSQL MAJOR (PS_DEBIAN_ROOT_SUITES, "MAJOR=SUITE ..."); fails (exit
# status 1, the reason on stderr) for a major none ships (16: no release
# reachable here does).
ps_debian_root_suite() {
	local pair
	for pair in $PS_DEBIAN_ROOT_SUITES; do
		if [[ ${pair%%=*} == "$1" ]]; then
			printf '%s\n' "${pair#*=}"
			return 0
		fi
	done
	ps_debian_root_log "no Debian release of PS_DEBIAN_ROOT_SUITES ($PS_DEBIAN_ROOT_SUITES) ships PostgreSQL $1"
	return 1
}

# ps_debian_root_apt ROOT COMMAND... -- run the package tool COMMAND in
# ROOT as root, in a mount namespace of its own with ps_debian_root_mount's
# mounts (some maintainer scripts need /proc: sid's systemd-tmpfiles), gone
# when it ends, and with a clean environment (the caller's, a TMPDIR of the
# host's say, would reach the maintainer scripts: postgresql-common's
# mktemp fails on it).
ps_debian_root_apt() {
	# shellcheck disable=SC2016  # expanded by the inner shell
	unshare --mount --propagation private -- bash -c '
		source "$1" || exit 1
		ps_debian_root_mount "$2" || exit 1
		exec chroot "$2" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive "${@:3}"
	' debian_root "${BASH_SOURCE[0]}" "$@"
}

# ps_debian_root_missing ROOT PACKAGE... -- print the PACKAGEs that are not
# installed in ROOT, one a line.
ps_debian_root_missing() {
	local root=$1 pkg
	shift
	for pkg in "$@"; do
		# shellcheck disable=SC2016  # dpkg-query's own format, not the shell's
		chroot "$root" dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null |
			grep -q '^install ok installed$' || printf '%s\n' "$pkg"
	done
}

# ps_debian_root SUITE PACKAGE... -- print the path of a cached root of
# Debian SUITE with PACKAGEs installed; fails (exit status 1, the reason on
# stderr) when debootstrap or apt-get fails.  A root that has them all is
# only looked at, under its lock held shared.
ps_debian_root() {
	local suite=$1
	shift
	local root=$PS_ROOT_CACHE/$suite
	local lock=$PS_ROOT_CACHE/$suite.lock
	local missing=()

	mkdir -p "$PS_ROOT_CACHE"
	if (
		flock -s 9
		[[ -f $root/.paimon_sink-root && -z $(ps_debian_root_missing "$root" "$@") ]]
	) 9>"$lock"; then
		printf '%s\n' "$root"
		return 0
	fi
	(
		flock 9
		if [[ ! -f $root/.paimon_sink-root ]]; then
			command -v debootstrap >/dev/null ||
				DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null ||
				exit 1
			rm -rf "$root"
			ps_debian_root_log "making a $suite root in $root (debootstrap)"
			# (debootstrap runs the packages' scripts in the root with its environment)
			if ! env -u TMPDIR debootstrap --variant=minbase "$suite" "$root" "$PS_DEBIAN_MIRROR" \
				>"$PS_ROOT_CACHE/$suite.debootstrap.log" 2>&1; then
				ps_debian_root_log "debootstrap $suite failed; see $PS_ROOT_CACHE/$suite.debootstrap.log"
				exit 1
			fi
			# packages' postinst scripts start no service, and make no main cluster
			printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
			chmod +x "$root/usr/sbin/policy-rc.d"
			mkdir -p "$root/etc/postgresql-common/createcluster.d"
			echo "create_main_cluster = false" \
				>"$root/etc/postgresql-common/createcluster.d/paimon_sink.conf"
			touch "$root/.paimon_sink-root"
		fi
		# A suite's Release file says until when it is valid (sid's a week
		# after it was cut); a mirror or proxy that serves a frozen copy of the
		# suite outlives that, and apt-get update then
		# refuses the suite.  The signatures are still checked.
		if [[ ! -f $root/etc/apt/apt.conf.d/99paimon_sink ]]; then
			echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99paimon_sink"
		fi
		mapfile -t missing < <(ps_debian_root_missing "$root" "$@")
		if ((${#missing[@]} > 0)); then
			if [[ -z $(find "$root/var/lib/apt/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null) ]]; then
				ps_debian_root_apt "$root" apt-get update -q >/dev/null || exit 1
			fi
			ps_debian_root_log "installing in the $suite root: ${missing[*]}"
			# an installation that failed half-way is finished first
			{
				ps_debian_root_apt "$root" dpkg --configure -a &&
					ps_debian_root_apt "$root" apt-get install -y -q --no-install-recommends "${missing[@]}"
			} >"$PS_ROOT_CACHE/$suite.apt.log" 2>&1 || {
				ps_debian_root_log "apt-get install in the $suite root failed; see $PS_ROOT_CACHE/$suite.apt.log"
				exit 1
			}
		fi
	) 9>"$lock" || return 1
	printf '%s\n' "$root"
}

# ps_debian_root_mount ROOT -- mount what servers and tests need in ROOT:
# /proc, the host's /dev (bound), /dev/pts, and a /dev/shm of its own
# (dynamic shared memory).  Undone by ps_debian_root_umount.
ps_debian_root_mount() {
	local root=$1
	mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
	mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"
	mountpoint -q "$root/dev/pts" || mount -t devpts devpts "$root/dev/pts" -o newinstance,ptmxmode=0666 2>/dev/null ||
		mount --bind /dev/pts "$root/dev/pts"
	mountpoint -q "$root/dev/shm" || mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
	PS_DEBIAN_ROOTS_MOUNTED+=("$root")
}

# ps_debian_root_umount ROOT -- undo ps_debian_root_mount (lazily, so that
# a process still exiting does not keep the mounts).
ps_debian_root_umount() {
	local root=$1 m
	for m in dev/shm dev/pts dev proc; do
		mountpoint -q "$root/$m" && umount -l "$root/$m"
	done
	return 0
}

# ps_debian_root_umount_all -- undo every ps_debian_root_mount of this shell
# (for an EXIT trap).
ps_debian_root_umount_all() {
	local root
	for root in "${PS_DEBIAN_ROOTS_MOUNTED[@]}"; do
		ps_debian_root_umount "$root"
	done
	PS_DEBIAN_ROOTS_MOUNTED=()
}

# ps_debian_root_run ROOT COMMAND -- run the bash COMMAND inside ROOT as
# root, with a clean environment (PATH, LANG=C.UTF-8, and the variables
# named in $PS_DEBIAN_ROOT_ENV, e.g. "SUITES KEEP_TMP", passed through).
ps_debian_root_run() {
	local root=$1 command=$2 name
	local env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root)
	for name in ${PS_DEBIAN_ROOT_ENV:-}; do
		[[ -n ${!name+x} ]] && env+=("$name=${!name}")
	done
	chroot "$root" env -i "${env[@]}" bash -c "$command"
}

# ps_debian_root_session ROOT DIR COMMAND -- run the bash COMMAND inside a
# throwaway view of ROOT (a root of ps_debian_root) as ps_debian_root_run
# does (PS_DEBIAN_ROOT_ENV passes variables through), and return its exit
# status.  The view is an overlay mounted at DIR/merged: ROOT below,
# read-only, and DIR/upper above, which takes COMMAND's writes and whose
# files put there before the call are in the view (DIR/upper/build is
# /build).  It and ps_debian_root_mount's mounts are made in a mount
# namespace of their own (unshare), so they are this session's alone and go
# when its last process ends, however it ends: ROOT is never written, two
# sessions on one root do not meet, each starts from the clean root, and
# removing DIR afterwards removes everything.  ROOT's lock is held shared
# meanwhile (ps_debian_root waits to install in it).  Without overlayfs,
# DIR/merged is a copy of ROOT (cp -a: slower) with DIR/upper copied over.
ps_debian_root_session() {
	local root=$1 dir=$2 command=$3 name
	local -a pass=()
	for name in ${PS_DEBIAN_ROOT_ENV:-}; do
		[[ -n ${!name+x} ]] && pass+=("$name=${!name}")
	done
	mkdir -p "$dir/upper" "$dir/work" "$dir/merged"
	(
		flock -s 9
		# shellcheck disable=SC2016  # expanded by the inner shell
		unshare --mount --propagation private -- env "${pass[@]}" \
			PS_DEBIAN_ROOT_ENV="${PS_DEBIAN_ROOT_ENV:-}" bash -c '
			source "$1" || exit 1
			root=$2 dir=$3
			if ! err=$(mount -t overlay overlay -o "lowerdir=$root,upperdir=$dir/upper,workdir=$dir/work" \
				"$dir/merged" 2>&1); then
				ps_debian_root_log "no overlay on $dir/merged ($err): copying $root there"
				cp -a "$root/." "$dir/merged/" && cp -a "$dir/upper/." "$dir/merged/" || exit 1
			fi
			ps_debian_root_mount "$dir/merged" || exit 1
			ps_debian_root_run "$dir/merged" "$4"
		' debian_root "${BASH_SOURCE[0]}" "$root" "$dir" "$command"
	) 9>"$root.lock"
}
