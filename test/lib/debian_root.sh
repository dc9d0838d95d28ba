# shellcheck shell=bash
# test/lib/debian_root.sh -- Debian roots for the tests that need another
# Debian release than the host's: the CI matrix runs the suites on the
# PostgreSQL major a release ships (trixie: 17, sid: 18), and the package
# test installs the built package into a clean root of the host's release.
#
#   source test/lib/debian_root.sh
#   root=$(ps_debian_root trixie postgresql-17 postgresql-server-dev-17)
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
# calls debootstrap, chroot and mount.  Callers of one machine are
# serialized per root with flock, so two runs never build one root at once.

if [[ -n ${PS_DEBIAN_ROOT_SH_LOADED:-} ]]; then
	return 0
fi
PS_DEBIAN_ROOT_SH_LOADED=1

PS_ROOT_CACHE=${PS_ROOT_CACHE:-/var/cache/paimon_sink/roots}
PS_DEBIAN_MIRROR=${PS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PS_DEBIAN_ROOTS_MOUNTED=()

# ps_debian_root_log MESSAGE -- a line on stderr, named for this file.
ps_debian_root_log() { printf '[debian_root] %s\n' "$*" >&2; }

# ps_debian_root SUITE PACKAGE... -- print the path of a cached root of
# Debian SUITE with PACKAGEs installed; fails (exit status 1, the reason on
# stderr) when debootstrap or apt-get fails.
ps_debian_root() {
	local suite=$1
	shift
	local root=$PS_ROOT_CACHE/$suite
	local lock=$PS_ROOT_CACHE/$suite.lock
	local missing=() pkg

	mkdir -p "$PS_ROOT_CACHE"
	(
		flock 9
		if [[ ! -f $root/.paimon_sink-root ]]; then
			command -v debootstrap >/dev/null ||
				DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null ||
				exit 1
			rm -rf "$root"
			ps_debian_root_log "making a $suite root in $root (debootstrap)"
			if ! debootstrap --variant=minbase "$suite" "$root" "$PS_DEBIAN_MIRROR" \
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
		for pkg in "$@"; do
			# shellcheck disable=SC2016  # dpkg-query's own format, not the shell's
			chroot "$root" dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null |
				grep -q '^install ok installed$' || missing+=("$pkg")
		done
		if ((${#missing[@]} > 0)); then
			# postinst scripts (postgresql-common's systemd-tmpfiles) need /proc
			if ! mountpoint -q "$root/proc"; then
				mount -t proc proc "$root/proc"
				trap 'umount -l "$root/proc" 2>/dev/null' EXIT
			fi
			if [[ -z $(find "$root/var/lib/apt/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null) ]]; then
				chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || exit 1
			fi
			ps_debian_root_log "installing in the $suite root: ${missing[*]}"
			chroot "$root" env DEBIAN_FRONTEND=noninteractive \
				apt-get install -y -q --no-install-recommends "${missing[@]}" \
				>"$PS_ROOT_CACHE/$suite.apt.log" 2>&1 || {
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
