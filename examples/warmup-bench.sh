#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# warmup-bench.sh - what the warm-up (RCUWALK_WARMUP, default 1ms) buys
# short processes: each workload without rcuwalk, with `rcuwalk --warmup=0 --`
# (the cache from the first lookup) and with `rcuwalk --` (the default),
# variants alternating round by round; prints medians and their ratios to
# the run without rcuwalk.
#
# Usage: examples/warmup-bench.sh [-n ROUNDS] [-l LAUNCHER] [--no-session] [-c SRCDIR [-a ARGS]] [-m DIR]
#   -n ROUNDS   rounds (default 5)
#   -l PATH     the rcuwalk launcher (default build/preload/rcuwalk)
#   --no-session  the rcuwalk runs without a session (`rcuwalk --no-session`;
#               a session is the launcher's default)
#   -c SRCDIR   also SRCDIR's ./configure, in a fresh copy per run (made
#               before the clock starts; SRCDIR is never modified); a run
#               that fails stops the script
#   -a ARGS     configure's arguments (one string, split on blanks)
#   -m DIR      also `make -s -j2` in DIR after `make clean` (not timed)
# Workloads always run: 100 x `gcc --version` and 500 x /bin/true, each
# from one bash.  Figures in doc/benchmarks.md ("The warm-up by time").
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=5 LAUNCHER=build/preload/rcuwalk SESSION=() SRC="" MK="" CONF_ARGS=""
while (($#)); do
  case $1 in
    -n) ROUNDS=$2; shift 2;;
    -l) LAUNCHER=$2; shift 2;;
    --no-session) SESSION=(--no-session); shift;;
    -c) SRC=$(cd "$2" && pwd); shift 2;;
    -a) CONF_ARGS=$2; shift 2;;
    -m) MK=$(cd "$2" && pwd); shift 2;;
    *) echo "usage: $0 [-n ROUNDS] [-l LAUNCHER] [--no-session] [-c SRCDIR [-a ARGS]] [-m DIR]" >&2; exit 2;;
  esac
done
LAUNCHER=$(cd "$(dirname "$LAUNCHER")" && pwd)/$(basename "$LAUNCHER")
[ -x "$LAUNCHER" ] || { echo "no launcher at $LAUNCHER (build first: ./tests/run.sh --build-only)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rcuwalk-warmup.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

workloads=(gcc true)
[ -n "$SRC" ] && workloads+=(configure)
[ -n "$MK" ] && workloads+=(make)
variants=(none cold default)

# One timed run: prints milliseconds.
run() { # workload variant
  local pre=() s e
  case $2 in
    cold) pre=("$LAUNCHER" "${SESSION[@]}" --warmup=0 --);;
    default) pre=("$LAUNCHER" "${SESSION[@]}" --);;
  esac
  case $1 in
    configure) rm -rf "$WORK/src"; cp -a "$SRC" "$WORK/src"; cd "$WORK/src";;
    make) make -C "$MK" clean >/dev/null 2>&1; cd "$MK";;
    *) cd "$WORK";;
  esac
  s=$(date +%s%N)
  case $1 in
    gcc) "${pre[@]}" bash -c 'for i in $(seq 100); do gcc --version; done' >/dev/null;;
    true) "${pre[@]}" bash -c 'for i in $(seq 500); do /bin/true; done';;
    # shellcheck disable=SC2086
    configure) "${pre[@]}" ./configure $CONF_ARGS >"$WORK/configure.log" 2>&1 ||
      { echo "$2: ./configure failed, see $WORK/configure.log" >&2; trap - EXIT; exit 1; };;
    make) "${pre[@]}" make -s -j2 >/dev/null || { echo "$2: make failed" >&2; exit 1; };;
  esac
  e=$(date +%s%N)
  cd - >/dev/null
  echo $(((e - s) / 1000000))
}

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A T
for ((r = 0; r < ROUNDS; r++)); do
  for w in "${workloads[@]}"; do
    for v in "${variants[@]}"; do
      T[$w.$v]+="$(run "$w" "$v") "
    done
  done
done
printf '%-10s %-28s %9s %7s   %s\n' workload variant "median ms" ratio runs
for w in "${workloads[@]}"; do
  base=$(echo "${T[$w.none]}" | median)
  for v in "${variants[@]}"; do
    m=$(echo "${T[$w.$v]}" | median)
    case $v in
      none) name="without rcuwalk";;
      cold) name="rcuwalk ${SESSION[*]} --warmup=0";;
      default) name="rcuwalk ${SESSION[*]} (default)";;
    esac
    printf '%-10s %-28s %9d %7.3f   %s\n' "$w" "$name" "$m" "$(echo "$m / $base" | bc -l)" "${T[$w.$v]}"
  done
done
