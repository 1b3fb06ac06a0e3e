#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# configure-bench.sh - time a project's ./configure without rcuwalk, with
# `rcuwalk --no-session --` and with `rcuwalk --` (a session), alternating, and print the
# medians and ratios.
#
# Usage: examples/configure-bench.sh [-n RUNS] [-l LAUNCHER] SRCDIR [CONFIGURE ARGS...]
#   SRCDIR    a source tree with a ./configure script (never modified: each run
#             configures a fresh copy of it, made before the clock starts)
#   -n RUNS   runs per mode (default 3)
#   -l PATH   the rcuwalk launcher (default build/preload/rcuwalk)
# Each run has 600 s; one that takes longer counts as a failure (exit 1).
# Figures quoted in doc/benchmarks.md came from this script.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=3
launcher=$root/build/preload/rcuwalk
while getopts n:l: o; do
	case $o in
	n) runs=$OPTARG ;;
	l) launcher=$OPTARG ;;
	*) sed -n '2,12p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
(($# >= 1)) || { sed -n '2,12p' "$0" >&2; exit 2; }
src=$(cd "$1" && pwd)
shift
[[ -x $src/configure ]] || { echo "configure-bench: no executable $src/configure" >&2; exit 2; }
[[ -x $launcher ]] || { echo "configure-bench: no launcher $launcher (build first)" >&2; exit 2; }
work=$(mktemp -d /var/tmp/rcuwalk-configure.XXXXXX)
trap 'rm -rf "$work"' EXIT
declare -A times
modes=(none shim session)
for ((i = 1; i <= runs; i++)); do
	for m in "${modes[@]}"; do
		rm -rf "$work/tree"
		cp -a "$src" "$work/tree"
		case $m in
		none) pre=() ;;
		shim) pre=("$launcher" --no-session --) ;;
		session) pre=("$launcher" --) ;;
		esac
		t0=$(date +%s%N)
		if ! (cd "$work/tree" && timeout 600 "${pre[@]}" ./configure "$@" >"$work/$m.log" 2>&1); then
			echo "configure-bench: run $i ($m) failed; its log:" >&2
			tail -20 "$work/$m.log" >&2
			exit 1
		fi
		t1=$(date +%s%N)
		times[$m]+=" $(((t1 - t0) / 1000000))"
		printf 'run %d %-8s %6d ms\n' "$i" "$m" $(((t1 - t0) / 1000000))
	done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(median "${times[none]}")
for m in "${modes[@]}"; do
	med=$(median "${times[$m]}")
	awk -v m="$m" -v med="$med" -v base="$base" -v all="${times[$m]}" \
		'BEGIN {printf "%-8s median %6d ms  %.2fx   (runs:%s)\n", m, med, med / base, all}'
done
