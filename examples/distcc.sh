#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# distcc.sh - a distcc build over loopback with rcuwalk on both sides, as
# README's "Builds that span hosts" tells a user to run it:
#   worker:  rcuwalk --keep -- distccd --daemon --no-detach ...   (one session
#            for every compile job the daemon is sent)
#   client:  rcuwalk -- make -jN CC="distcc gcc"                  (the local
#            preprocessing and the make tree in a session of their own)
# It builds a generated project twice through the daemon, then once through
# the same daemon started without rcuwalk, and checks:
#   - the objects of every build are byte-identical to the plain one;
#   - the daemon's jobs of both builds ran in ONE session (one watcher for the
#     daemon's whole life), and the second build's jobs took facts that the
#     first build's jobs had put in it (the daemon's stats records,
#     RCUWALK_STATS: names_shared/watches_shared > 0 in the second build).
# Usage: ./examples/distcc.sh            (needs distcc: apt-get install distcc)
# Environment: DISTCC_TUS (default 20), DISTCC_JOBS (default 4), KEEP=1 keeps
#              the temporary directory, DAEMON_OPTS the daemon's rcuwalk options
#              (default --warmup=0: a job makes ~80 lookups, fewer than the
#              default warm-up lets through, so with the default the jobs run in
#              the session uncached and share nothing; here they share, to show
#              it).  Exit 77 (skip) without distccd.
# As root the daemon runs as Debian's `distccd` user (distccd itself would
# switch to it after the session started, and a process whose credentials
# changed does not attach: doc/session.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
launcher=${RCUWALK:-$root/build/preload/rcuwalk}
tus=${DISTCC_TUS:-20}
jobs=${DISTCC_JOBS:-4}

die() { echo "distcc.sh: $*" >&2; exit 1; }
command -v distccd >/dev/null || { echo "distcc.sh: distccd not found (apt-get install distcc): skipped"; exit 77; }
[ -x "$launcher" ] || die "no launcher at $launcher: build first (./tests/run.sh --build-only)"

tmp=$(mktemp -d /tmp/rcuwalk-distcc.XXXXXX)
chmod 0755 "$tmp"
daemon_pid=
cleanup() {
	[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	[ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

as_daemon=()
if [ "$(id -u)" -eq 0 ]; then
	id distccd >/dev/null 2>&1 || die "no distccd user (Debian's distcc package makes it)"
	as_daemon=(setpriv --reuid=distccd --regid="$(id -g distccd)" --clear-groups)
fi
# The daemon's user must reach the launcher and its library: a checkout in
# root's 0700 home is out of its reach, so it gets copies beside each other
# (the launcher finds the library next to itself).
daemon_launcher=$launcher
if [ ${#as_daemon[@]} -gt 0 ]; then
	lib=$("$launcher" --version | sed -n 's/^library: //p')
	[ -f "$lib" ] || die "the launcher names no library: $("$launcher" --version)"
	mkdir -p "$tmp/bin"
	cp "$launcher" "$tmp/bin/rcuwalk"
	cp "$lib" "$tmp/bin/librcuwalk.so"
	chmod 0755 "$tmp/bin" "$tmp/bin/rcuwalk" "$tmp/bin/librcuwalk.so"
	daemon_launcher=$tmp/bin/rcuwalk
fi
port=$((20000 + RANDOM % 20000))
"$root"/examples/gen-include-project.sh "$tmp/proj" "$tus" >/dev/null
mkdir -p "$tmp/d" && chmod 0777 "$tmp/d"
: >"$tmp/d/rec" && chmod 0666 "$tmp/d/rec"

# start_daemon WRAP...: distccd on a port of its own (127.0.0.1:$port; a
# new one each time: the previous daemon's workers may still accept on
# theirs for a moment after it was stopped), its records in $tmp/d/rec.
start_daemon() {
	port=$((port + 1))
	env -i PATH=/usr/bin:/bin HOME=/ TMPDIR="$tmp/d" RCUWALK_STATS="$tmp/d/rec" \
		"${as_daemon[@]}" "$@" distccd --daemon --no-detach --listen 127.0.0.1 \
		--port "$port" --allow 127.0.0.1 --jobs "$jobs" --log-file "$tmp/d/log" &
	daemon_pid=$!
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
		sleep 0.05
	done
	die "distccd did not listen on $port: $(cat "$tmp/d/log" 2>/dev/null)"
}
stop_daemon() {
	kill "$daemon_pid"
	wait "$daemon_pid" 2>/dev/null || true
	daemon_pid=
}
# build NAME WRAP...: one clean build through the daemon, objects to $tmp/NAME.
build() {
	local name=$1
	shift
	make -s -C "$tmp/proj" clean >/dev/null 2>&1 || true
	DISTCC_HOSTS="127.0.0.1:$port/$jobs" DISTCC_FALLBACK=0 DISTCC_SKIP_LOCAL_RETRY=1 \
		"$@" make -s -j"$jobs" -C "$tmp/proj" CC="distcc gcc" >/dev/null
	mkdir -p "$tmp/$name"
	cp "$tmp"/proj/obj/*.o "$tmp/$name/"
}
# records_since N: the summary of the daemon's records after line N.
records_since() {
	tail -n +"$(($1 + 1))" "$tmp/d/rec" >"$tmp/d/rec.part"
	"$launcher" --report="$tmp/d/rec.part"
}
field() { awk -v f="$1" '$1 == f { print $2 }'; }

echo "== plain: distccd and make without rcuwalk"
start_daemon
build plain
stop_daemon
: >"$tmp/d/rec"

echo "== distccd under 'rcuwalk --keep=30 --', two builds under 'rcuwalk --'"
start_daemon "$daemon_launcher" --keep=30 ${DAEMON_OPTS---warmup=0} --
session_of() { tr '\0' '\n' <"/proc/$daemon_pid/environ" | sed -n 's/^RCUWALK_SESSION=//p'; }
# The daemon's environment once the launcher has exec'd distccd in it.
for _ in $(seq 100); do
	session_before=$(session_of)
	[ -n "$session_before" ] && break
	sleep 0.05
done
build one "$launcher" --
n1=$(wc -l <"$tmp/d/rec")
build two "$launcher" --
session_after=$(session_of)
[ -d "$session_after" ] || session_after="$session_after (gone)"
stop_daemon

echo "== the daemon's jobs, first build"
s1=$(head -n "$n1" "$tmp/d/rec" >"$tmp/d/rec.1" && "$launcher" --report="$tmp/d/rec.1")
echo "$s1" | grep -E '^(rcuwalk summary|lookups|hits|neg_hits|names_shared|watches_shared) '
echo "== the daemon's jobs, second build"
s2=$(records_since "$n1")
echo "$s2" | grep -E '^(rcuwalk summary|lookups|hits|neg_hits|names_shared|watches_shared) '

fail=0
for v in one two; do
	if cmp -s <(cd "$tmp/plain" && sha256sum ./*.o) <(cd "$tmp/$v" && sha256sum ./*.o); then
		echo "objects of build '$v': byte-identical to the plain build ($(ls "$tmp/$v" | wc -l) files)"
	else
		echo "objects of build '$v' DIFFER from the plain build"
		fail=1
	fi
done
echo "daemon's session: '$session_before' before the first build, '$session_after' after the second"
if [ -z "$session_before" ] || [ "$session_before" != "$session_after" ]; then
	echo "the daemon's jobs did not run in one session"
	fail=1
fi
shared=$(($(echo "$s2" | field names_shared) + $(echo "$s2" | field watches_shared)))
if [ "$shared" -gt 0 ]; then
	echo "second build's jobs took $shared facts from the session the first build's jobs filled"
else
	echo "second build's jobs took nothing from the session"
	fail=1
fi
[ "$fail" = 0 ] && echo "distcc.sh: PASS" || { echo "distcc.sh: FAIL"; exit 1; }
