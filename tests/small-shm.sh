#!/bin/sh
# SPDX-License-Identifier: MIT
# small-shm.sh LAUNCHER GEN - a session never faults on memory it does not
# own (issue 23, item 1; doc/session.md, "Hostile ground").  In a private
# mount namespace whose /dev/shm is a tmpfs of 8 KiB, of 128 KiB, and of
# 128 KiB filled up, `rcuwalk -- make -j2` of a 20-TU generated project
# (GEN: examples/gen-include-project.sh DIR 20) succeeds, in a session, with
# objects byte-identical to a build without rcuwalk.  When the ring and the
# arena were sparse files in /dev/shm, every such build died ("internal
# compiler error: Bus error").  Needs root (unshare -m): skips (77) without.
set -eu
launcher=$1
gen=$2
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
	echo "small-shm: needs root and unshare -m: skipped"
	exit 77
fi
for c in make cc cmp; do
	command -v $c >/dev/null || { echo "small-shm: no $c: skipped"; exit 77; }
done
tmp=$(mktemp -d /tmp/rcuwalk-small-shm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$gen" "$tmp/p" 20 >/dev/null
make -s -C "$tmp/p" -j2 >/dev/null
mkdir "$tmp/ref"
cp "$tmp/p"/obj/*.o "$tmp/ref/"
fail=0
for shm in 8k 128k full; do
	make -s -C "$tmp/p" clean >/dev/null
	log=$tmp/log.$shm
	size=$shm
	[ "$shm" = full ] && size=128k
	rc=0
	# /dev/shm replaced in this namespace only; "full": filled before the
	# session starts.
	unshare -m --propagation private sh -c '
		mount -t tmpfs -o size='"$size"',mode=1777 tmpfs /dev/shm || exit 90
		if [ '"$shm"' = full ]; then
			dd if=/dev/zero of=/dev/shm/fill bs=4k 2>/dev/null || true
		fi
		exec "$1" --log="$2" -- make -s -C "$3" -j2
	' sh "$launcher" "$log" "$tmp/p" >"$tmp/out.$shm" 2>&1 || rc=$?
	if [ $rc != 0 ]; then
		echo "small-shm: /dev/shm $shm: make exited $rc:"
		tail -5 "$tmp/out.$shm"
		fail=1
		continue
	fi
	ok=1
	if ! grep -q 'RCUWALK_SESSION=/' "$log"; then
		echo "small-shm: /dev/shm $shm: no session started:"
		cat "$log"
		ok=0
	fi
	for o in "$tmp/ref"/*.o; do
		if ! cmp -s "$o" "$tmp/p/obj/$(basename "$o")"; then
			echo "small-shm: /dev/shm $shm: $(basename "$o") differs (or is missing)"
			ok=0
		fi
	done
	if [ $ok = 1 ]; then
		echo "small-shm: /dev/shm $shm: built in a session, $(ls "$tmp/ref" | wc -l) objects identical"
	else
		fail=1
	fi
done
[ $fail = 0 ] || { echo "small-shm: FAIL"; exit 1; }
echo "small-shm: 3 passed, 0 failed"
