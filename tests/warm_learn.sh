#!/bin/sh
# SPDX-License-Identifier: MIT
# warm_learn.sh LAUNCHER - the learned warm-up (preload/warm_learn.c): in a
# session, once two processes of a program have recorded that they made few
# lookups, the next ones keep passing theirs through past the warm-up's time
# instead of starting a cache; a process of the same program that makes many
# more starts its cache after 2 x the program's average + 256 lookups at the
# latest; a count (--warmup=N) and --no-session learn nothing.  And the
# rent: once a program's caches have paid richly, its next processes buy
# each directory at once, unless --dir-rent was given.  And a scribbled
# store changes no answer.
#
# The program: coreutils' stat, one statx per name, 300 names (20 present)
# four times, then 3,000; --warmup=4us, so that the warm-up's time is spent
# within a few lookups.  Each process's record (RCUWALK_STATS) says whether
# its cache started (start_ns) and how many of its lookups passed in the
# warm-up.  Against a library without the learned warm-up, the third and
# fourth small runs start their caches and the test fails.
set -eu
launcher=$1
# ctest gives every test RCUWALK_WARMUP=0 and RCUWALK_DIR_RENT=0: each run
# below says what it wants (a --dir-rent given is the user's own, W5).
unset RCUWALK_WARMUP RCUWALK_DIR_RENT
command -v stat >/dev/null 2>&1 || { echo "warm_learn.sh: no stat(1)"; exit 77; }
tmp=$(mktemp -d /tmp/rcuwalk-learn.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/d"
i=0
while [ $i -lt 3000 ]; do
	[ $i -lt 20 ] && : >"$tmp/d/f$i"
	echo "$tmp/d/f$i"
	i=$((i + 1))
done >"$tmp/big"
head -n 300 "$tmp/big" >"$tmp/small"
sleep 2.2 # older than --racy-ms: their attributes are cached
fail=0

# run NAME OPTIONS...: the five stat runs under `LAUNCHER OPTIONS --`; prints
# "start_ns pass_warmup lookups" of each stat process's record, in order.
run() {
	name=$1
	shift
	rm -f "$tmp/rec.$name"
	RCUWALK_STATS="$tmp/rec.$name" LC_ALL=C "$launcher" "$@" -- sh -c '
		for i in 1 2 3 4; do stat -- $(cat "$1/small") >/dev/null 2>&1 || :; done
		stat -- $(cat "$1/big") >/dev/null 2>&1 || :' sh "$tmp"
	awk '{
		s = p = l = -1
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "start_ns") s = kv[2] + 0
			else if (kv[1] == "pass_warmup") p = kv[2] + 0
			else if (kv[1] == "lookups") l = kv[2] + 0
		}
		if (l >= 290) print s, p, l
	}' "$tmp/rec.$name"
}

# check NAME WANT OPTIONS...: WANT is five words, S (the cache started) or
# W (every lookup passed in the warm-up) or B (the big run started after
# 300 to 1,200 passed).
check() {
	name=$1 want=$2
	shift 2
	got=$(run "$name" "$@" | awk '{
		if ($1 > 0 && NR == 5) w = ($2 <= 1200 && $2 >= 300) ? "B" : "S"
		else if ($1 > 0) w = "S"
		else w = ($2 == $3) ? "W" : "?"
		printf "%s%s", (NR > 1 ? " " : ""), w
	}')
	echo "$name: $got (want $want)"
	[ "$got" = "$want" ] || fail=1
}

check session "S S W W B" --warmup=4us
check count "S S S S S" --warmup=4
check nosession "S S S S S" --no-session --warmup=4us

# The rent (W5): stat on the 3,000 names four times, each run's cache
# answering ~3,000 lookups for a few misses and 4 rented ones: from the third
# run on, its program's caches have paid richly and it buys the directory at
# its first lookup (pass_rent 0); with --dir-rent=4 given, every run rents.
# rent NAME WANT OPTIONS...: WANT is four words, R (pass_rent > 0) or 0.
rent() {
	name=$1 want=$2
	shift 2
	rm -f "$tmp/rec.$name"
	RCUWALK_STATS="$tmp/rec.$name" LC_ALL=C "$launcher" "$@" -- sh -c '
		for i in 1 2 3 4; do stat -- $(cat "$1/big") >/dev/null 2>&1 || :; done' sh "$tmp"
	got=$(awk '{
		r = l = -1
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "pass_rent") r = kv[2] + 0
			else if (kv[1] == "lookups") l = kv[2] + 0
		}
		if (l >= 2900) printf "%s%s", (n++ ? " " : ""), (r > 0 ? "R" : r == 0 ? "0" : "?")
	}' "$tmp/rec.$name")
	echo "$name: $got (want $want)"
	[ "$got" = "$want" ] || fail=1
}
rent rent "R R 0 0" --warmup=4us
rent rentgiven "R R R R" --warmup=4us --dir-rent=4

# A scribbled store (learn.c, L2): random bytes in place of the file, and
# then a directory in its place, after two runs.  Every later run must give
# stat(1)'s own output, the same as without the shim, and end.
LC_ALL=C stat -c '%n %s %F' -- $(cat "$tmp/big") >"$tmp/want" 2>&1 || :
RCUWALK_STATS="$tmp/rec.scribble" LC_ALL=C "$launcher" --warmup=4us -- sh -c '
	for i in 1 2; do stat -- $(cat "$1/small") >/dev/null 2>&1 || :; done
	head -c 8192 /dev/urandom >"$RCUWALK_SESSION/learn"
	stat -c "%n %s %F" -- $(cat "$1/big") >"$1/got1" 2>&1 || :
	rm -f "$RCUWALK_SESSION/learn"; mkdir "$RCUWALK_SESSION/learn"
	stat -c "%n %s %F" -- $(cat "$1/big") >"$1/got2" 2>&1 || :
	rmdir "$RCUWALK_SESSION/learn"' sh "$tmp"
for g in got1 got2; do
	if cmp -s "$tmp/want" "$tmp/$g"; then
		echo "scribbled store ($g): stat's output as without the shim"
	else
		echo "scribbled store ($g): stat's output differs" && fail=1
	fi
done
exit $fail
