#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fork-cost.sh: what a fork() costs a process that has looked names up, with
# and without the shim.
#
#   examples/fork-cost.sh [-n ROUNDS] [-f FORKS] [-b BUILD_DIR]
#
#   -n ROUNDS     rounds (default 5)
#   -f FORKS      forks per run (default 1000)
#   -b BUILD_DIR  where rcuwalk and rcuwalk_fork_cost are built (default build)
#
# A configure script is one shell forking thousands of times; what the shim
# adds to each fork (page tables of its mappings copied, pages written after
# fork() that it write-protected, a thread's TLB shootdowns) is paid on every
# one.  rcuwalk_fork_cost looks up 200 names, then forks FORKS children that
# _exit(0) at once (examples/bench/fork_cost.c).  Modes, in an order rotated
# per round:
#   none     as is
#   empty    LD_PRELOAD of an empty .so built here (what any library costs)
#   warmup   rcuwalk --warmup=1000000000 --: the shim loaded, its cache never
#            started (every lookup in the warm-up)
#   shim     rcuwalk --warmup=0 --: the cache started at the first lookup
# Prints per mode the median over rounds of the runs' medians (fork() in the
# parent; fork's return to waitpid's: the child's run and exit) and of the
# page faults per fork, parent and child.  Timings on a small VM vary by
# +-20 us between runs: compare the modes of one invocation only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=5 forks=1000 bdir=$root/build
while getopts "n:f:b:" o; do
  case $o in
    n) rounds=$OPTARG;; f) forks=$OPTARG;; b) bdir=$(cd "$OPTARG" && pwd);; *) sed -n '2,27p' "$0"; exit 2;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $forks =~ ^[1-9][0-9]*$ ]] || { sed -n '2,27p' "$0"; exit 2; }
shim=$bdir/preload/rcuwalk fc=$bdir/examples/rcuwalk_fork_cost
[ -x "$shim" ] || { echo "fork-cost.sh: build rcuwalk first ($shim)" >&2; exit 2; }
[ -x "$fc" ] || { echo "fork-cost.sh: build rcuwalk_fork_cost first ($fc)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/rcuwalk-forkcost.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo 'void rcuwalk_fork_cost_empty(void){}' | "${CC:-cc}" -shared -fPIC -x c - -o "$tmp/empty.so"
env -u LD_PRELOAD python3 - "$rounds" "$forks" "$shim" "$fc" "$tmp/empty.so" <<'PY'
import os, re, subprocess, sys, time
rounds, forks, shim, fc, empty = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
env = {k: v for k, v in os.environ.items() if not k.startswith("RCUWALK_") and k != "LD_PRELOAD"}
modes = {"none": [fc, "-n", forks],
         "empty": ["env", "LD_PRELOAD=" + empty, fc, "-n", forks],
         "warmup": [shim, "--warmup=1000000000", "--", fc, "-n", forks],
         "shim": [shim, "--warmup=0", "--", fc, "-n", forks]}
pat = re.compile(r"fork ([0-9.]+) us, wait ([0-9.]+) us, parent ([0-9.]+) faults, child ([0-9.]+) faults")
names = list(modes)
got = {m: [] for m in names}
print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {rounds} rounds of {forks} forks")
for r in range(rounds):
    for m in names[r % 4:] + names[:r % 4]:
        out = subprocess.run(modes[m], env=env, capture_output=True, text=True)
        x = pat.search(out.stdout)
        if out.returncode or not x:
            sys.exit(f"fork-cost.sh: {m} failed ({out.returncode}): {out.stdout}{out.stderr}")
        got[m].append([float(v) for v in x.groups()])
def med(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
print("\n| mode | fork (us) | fork's return to waitpid (us) | faults/fork, parent | faults/fork, child |")
print("|---|---:|---:|---:|---:|")
for m in names:
    c = list(zip(*got[m]))
    print(f"| {m} | {med(c[0]):.1f} ({min(c[0]):.1f}-{max(c[0]):.1f}) | {med(c[1]):.1f} "
          f"({min(c[1]):.1f}-{max(c[1]):.1f}) | {med(c[2]):.2f} | {med(c[3]):.2f} |")
PY
