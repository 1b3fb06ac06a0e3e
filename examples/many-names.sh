#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# many-names.sh: ns per lookup when many distinct names are each looked up a
# few times, raw and through the shim.
#
#   examples/many-names.sh [-n ROUNDS] [-b BUILD_DIR]
#
#   -n ROUNDS     rounds (default 7)
#   -b BUILD_DIR  where rcuwalk and rcuwalk_many are built (default build)
#
# Why: a compiler does not ask one hot path a million times.  It searches its
# -I directories for every header it includes: many distinct names, most of
# them absent, each asked a few times (once per translation unit).  A
# benchmark that stat()s one path in a loop measures the best case of a
# cache; this one measures the lookups a build makes.
#
# The tree (a temporary directory under /tmp, removed at the end): 24 include
# directories /tmp/rcwm.XXXXXX/inc/d00 .. d23 and 600 headers h000.h ..
# h599.h, header hN in directory d(N mod 24) only.  The list is every header
# in every directory, header by header, as a compiler's search asks them:
# 24 x 600 = 14,400 absolute paths of 5 components, 600 present, 13,800
# absent.  The script waits 3 s after making the tree, so that no file is
# younger than the shim's --racy-ms (2000 ms; a younger file's attributes
# are not cached).  Every rcuwalk_many run checks that each pass gives each
# name the answer of its first pass; the script checks that 600 are present.
#
# Each round runs five modes, in an order rotated per round:
#   raw     rcuwalk_many -r -p 3 LIST: raw newfstatat syscalls, which no shim
#           intercepts (the floor); the median of passes 2 and 3
#   shim    rcuwalk --warmup=0 -- rcuwalk_many -p 5 LIST: pass 1 (cold: the
#           cache fills) and the median of passes 2..5 (hits)
#   second  rcuwalk --warmup=0 -- sh -c 'rcuwalk_many -p 1 LIST >/dev/null;
#           rcuwalk_many -p 3 LIST': the session's second process; its pass 1
#           (a first lookup of names the session already knows) and the
#           median of its passes 2 and 3
#   third   the same with two processes before it: the third's pass 1 (a
#           file's attributes are shared from the third process on: the
#           first offers its name, the second watches it; doc/session.md,
#           "File attributes")
#   nosess  rcuwalk --warmup=0 --no-session -- rcuwalk_many -p 5 LIST: a
#           per-process cache; pass 1 and the median of passes 2..5
# Per figure: the median and min-max over rounds of ns/lookup; ratios are per
# round, then median and min-max.  One untimed run of each mode comes first.
# A later process's pass 1 begins with the lookup that starts its cache
# (rcuwalk_many times each pass's first lookup alone): the script prints it
# and the floor it sets for pass 1 / hit, (that lookup + 14,399 hits) /
# 14,400 hits, per round, beside the ratio measured (issue 25's goal: 1.2x).
# Then one run of the shim mode under `rcuwalk --stats` says how many of its
# lookups were answered from the cache.  Local disk only.  The environment's
# RCUWALK_* variables are dropped, but RCUWALK_SHARED_FILES (=0: no file's
# attributes shared) and RCUWALK_DIR_RENT (=0: no directory rented), for
# comparisons.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=7 bdir=$root/build
while getopts "n:b:" o; do
  case $o in
    n) rounds=$OPTARG;; b) bdir=$(cd "$OPTARG" && pwd);; *) sed -n '2,52p' "$0"; exit 2;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { sed -n '2,52p' "$0"; exit 2; }
shim=$bdir/preload/rcuwalk many=$bdir/examples/rcuwalk_many
[ -x "$shim" ] || { echo "many-names.sh: build rcuwalk first ($shim)" >&2; exit 2; }
[ -x "$many" ] || { echo "many-names.sh: build rcuwalk_many first ($many)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "many-names.sh: needs python3" >&2; exit 2; }

tmp=$(mktemp -d /tmp/rcwm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for d in $(seq -w 0 23); do mkdir "$tmp/inc/d$d" -p; done
for h in $(seq 0 599); do
  : >"$tmp/inc/d$(printf %02d $((h % 24)))/h$(printf %03d "$h").h"
done
for h in $(seq -w 0 599); do
  for d in $(seq -w 0 23); do echo "$tmp/inc/d$d/h$h.h"; done
done >"$tmp/list"
first=$(head -n 1 "$tmp/list") comps=${first//[^\/]/}
[ ${#comps} -eq 5 ] || { echo "many-names.sh: $first has ${#comps} components, not 5" >&2; exit 1; }
sleep 3

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit + local changes"
fi
python3 - "$rounds" "$shim" "$many" "$tmp/list" "$commit" "./examples/many-names.sh $*" <<'PY'
import os, re, subprocess, sys, time
rounds, shim, many, lst, commit, cmdline = sys.argv[1:7]
rounds = int(rounds)
base = dict(os.environ)
for v in [k for k in base if k == "LD_PRELOAD" or
          (k.startswith("RCUWALK_") and k not in ("RCUWALK_SHARED_FILES", "RCUWALK_DIR_RENT"))]:
    del base[v]
sh2 = f"'{many}' -p 1 '{lst}' >/dev/null; '{many}' -p 3 '{lst}'"
sh3 = f"'{many}' -p 1 '{lst}' >/dev/null; " + sh2
modes = {
    "raw": [many, "-r", "-p", "3", lst],
    "shim": [shim, "--warmup=0", "--", many, "-p", "5", lst],
    "second": [shim, "--warmup=0", "--", "sh", "-c", sh2],
    "third": [shim, "--warmup=0", "--", "sh", "-c", sh3],
    "nosess": [shim, "--warmup=0", "--no-session", "--", many, "-p", "5", lst],
}
line = re.compile(r"pass (\d+): (\d+) lookups, ([0-9.]+) ns/lookup, (\d+) present, (\d+) faults, "
                  r"first ([0-9.]+) us")
firsts = {}  # mode -> its last run's first lookup of pass 1, in us

def median(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

def run(m):
    r = subprocess.run(modes[m], env=base, capture_output=True, text=True)
    p = [line.fullmatch(l) for l in r.stdout.splitlines()]
    if r.returncode != 0 or not p or None in p or any(int(x.group(4)) != 600 for x in p):
        sys.exit(f"many-names.sh: {m} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    firsts[m] = float(p[0].group(6))
    return [float(x.group(3)) for x in p]

def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])

# figure: (mode, label, passes to take the median of (1-based))
figs = [("raw", "raw newfstatat, passes 2-3", [2, 3]),
        ("shim", "shim, same process: pass 1 (cold)", [1]),
        ("shim", "shim, same process: passes 2-5 (hits)", [2, 3, 4, 5]),
        ("second", "session's 2nd process: pass 1", [1]),
        ("second", "session's 2nd process: passes 2-3", [2, 3]),
        ("third", "session's 3rd process: pass 1", [1]),
        ("nosess", "--no-session: pass 1 (cold)", [1]),
        ("nosess", "--no-session: passes 2-5 (hits)", [2, 3, 4, 5])]
started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()); t0 = time.monotonic()
load0 = loadavg()
names = list(modes)
for m in names:
    run(m)
val = [[] for _ in figs]
start = {"second": [], "third": []}  # pass 1's first lookup, us, per round
for r in range(rounds):
    got = {}
    for m in names[r % len(names):] + names[:r % len(names)]:
        got[m] = run(m)
    for i, (m, _, ps) in enumerate(figs):
        val[i].append(median([got[m][p - 1] for p in ps]))
    for m in start:
        start[m].append(firsts[m])
    print(f"  round {r + 1}: " + ", ".join(f"{m} {' '.join(f'{x:.0f}' for x in got[m])}"
                                           for m in names), file=sys.stderr)
load1 = loadavg()
st = subprocess.run([shim, "--warmup=0", "--stats", "--", many, "-p", "5", lst],
                    env=base, capture_output=True, text=True)
cnt = {k: int(v) for k, v in re.findall(r"^(lookups|hits|neg_hits|passthrough|misses)\s+(\d+)",
                                        st.stderr, re.M)}

def rng(v, f="{:.1f}"):
    return f"{f.format(median(v))} ({f.format(min(v))}-{f.format(max(v))})"

def ratio(a, b):
    return rng([x / y for x, y in zip(val[a], val[b])], "{:.3f}x")
print(f"date: {started}; commit: {commit}; {os.cpu_count()} CPUs; took {time.monotonic() - t0:.0f} s")
print(f"command: {cmdline.strip()}")
print(f"load average (1, 5, 15 min) before: {load0}; after: {load1}")
print(f"14,400 names (600 present), {rounds} rounds, mode order rotated per round; "
      "median (min-max) over rounds")
print()
print("| figure | ns/lookup |")
print("|---|---:|")
for i, (_, label, _) in enumerate(figs):
    print(f"| {label} | {rng(val[i])} |")
print()
print("| ratio | per round |")
print("|---|---:|")
print(f"| shim hit / raw | {ratio(2, 0)} |")
print(f"| shim cold pass 1 / raw | {ratio(1, 0)} |")
print(f"| 2nd process pass 1 / same-process hit | {ratio(3, 2)} |")
print(f"| 2nd process pass 1 / raw | {ratio(3, 0)} |")
print(f"| 3rd process pass 1 / same-process hit | {ratio(5, 2)} |")
print(f"| --no-session hit / raw | {ratio(7, 0)} |")
print()
# The least a later process's pass 1 can cost while its first lookup starts
# the cache: that lookup as measured, every other name at the hit's cost.
n = 14400
print("A later process's first lookup starts its cache (liburcu loaded, the session attached, "
      "the first name filled); the floor of its pass 1 / hit is that lookup as measured plus "
      "every other name at the same-process hit's cost, per round:")
print()
print("| process | its first lookup (us) | pass 1 / hit | floor: (first + 14,399 hits) / 14,400 hits |")
print("|---|---:|---:|---:|")
for m, pi, label in (("second", 3, "2nd"), ("third", 5, "3rd")):
    fl = [(f * 1e3 + (n - 1) * h) / (n * h) for f, h in zip(start[m], val[2])]
    print(f"| {label} | {rng(start[m], '{:.0f}')} | {ratio(pi, 2)} | {rng(fl, '{:.3f}x')} |")
print()
if st.returncode != 0 or "lookups" not in cnt:
    print(f"rcuwalk --stats run failed ({st.returncode}):\n{st.stderr}")
else:
    c = cnt.get("hits", 0) + cnt.get("neg_hits", 0)
    print(f"rcuwalk --warmup=0 --stats -- rcuwalk_many -p 5 LIST: {cnt['lookups']} lookups, "
          f"{c} answered from the cache ({100 * c / cnt['lookups']:.1f}%: hits {cnt.get('hits', 0)}, "
          f"neg_hits {cnt.get('neg_hits', 0)}), passthrough {cnt.get('passthrough', 0)}, "
          f"misses {cnt.get('misses', 0)}")
PY
