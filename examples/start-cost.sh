#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# start-cost.sh: what loading the shim costs a process, beside an empty
# preloaded library, counted and timed (issue 25, item 2).
#
#   examples/start-cost.sh [-n ROUNDS] [-s SPAWNS] LIB...
#
#   LIB        librcuwalk.so builds to compare (e.g. build/preload/librcuwalk.so
#              and an older build's); each is given as LD_PRELOAD
#   -n ROUNDS  rounds of the loops below (default 9)
#   -s SPAWNS  posix_spawn()s per program for the page faults (default 200)
#
# Per process, for /bin/true (looks nothing up) and `gcc --version` (~40
# lookups, all in the warm-up): page faults (mean ru_minflt of SPAWNS
# posix_spawns, the libraries alternating), instructions (valgrind
# --tool=callgrind, whole process, with RCUWALK_WARMUP=100000ms: valgrind's
# slowness would end the warm-up by time; skipped without valgrind) and symbol
# look-ups (LD_DEBUG=statistics, "final number of relocations"), for nothing
# preloaded, an empty .so (built here) and each LIB.
# Then `bash -c 'for i in $(seq 500); do /bin/true; done'` and the same with
# 100 x `gcc --version`, each way per round, order rotated: per-round ratios
# to nothing preloaded, of wall time and of CPU time (the children's user +
# system, getrusage): median (quartiles).  CPU ratios resolve what wall
# ratios cannot on a loaded machine (another job's CPU use lengthens the
# wall time of whichever run it meets).  RCUWALK_WARMUP is left unset (the
# default warm-up), no session (LD_PRELOAD, not the launcher).  Needs
# python3 and gcc.
set -euo pipefail
rounds=9 spawns=200
while getopts "n:s:" o; do
  case $o in
    n) rounds=$OPTARG;; s) spawns=$OPTARG;; *) sed -n '2,27p' "$0"; exit 2;;
  esac
done
shift $((OPTIND - 1))
[[ $# -ge 1 && $rounds =~ ^[1-9][0-9]*$ && $spawns =~ ^[1-9][0-9]*$ ]] || { sed -n '2,27p' "$0"; exit 2; }
libs=()
for l in "$@"; do
  [ -f "$l" ] || { echo "start-cost.sh: no library $l" >&2; exit 2; }
  libs+=("$(cd "$(dirname "$l")" && pwd)/$(basename "$l")")
done
for t in gcc python3 bash; do
  command -v "$t" >/dev/null || { echo "start-cost.sh: needs $t" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'void rcuwalk_start_cost_empty(void){}' | gcc -shared -fPIC -x c - -o "$tmp/empty.so"

python3 - "$rounds" "$spawns" "$tmp/empty.so" "${libs[@]}" <<'PY'
import os, re, resource, shutil, subprocess, sys, time
rounds, spawns, empty = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
libs = sys.argv[4:]
base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("RCUWALK_")}
ways = [("none", None), ("empty", empty)] + [(f"lib{i + 1}", l) for i, l in enumerate(libs)]
def env(lib):
    return dict(base, LD_PRELOAD=lib) if lib else dict(base)
gcc = shutil.which("gcc")
progs = [("/bin/true", ["/bin/true"]), ("gcc --version", [gcc, "--version"])]
print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
      f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}")
for i, l in enumerate(libs):
    print(f"lib{i + 1}: {l}")
print()

def faults(argv):
    tot = {w: 0 for w, _ in ways}
    null = os.open(os.devnull, os.O_WRONLY)
    for _ in range(spawns):
        for w, lib in ways:
            pid = os.posix_spawn(argv[0], argv, env(lib), file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
            _, st, ru = os.wait4(pid, 0)
            if st:
                sys.exit(f"start-cost.sh: {argv} failed with {w}")
            tot[w] += ru.ru_minflt
    os.close(null)
    return {w: tot[w] / spawns for w in tot}

def instructions(argv, lib):
    if not shutil.which("valgrind"):
        return None
    # The warm-up held for the whole run: under valgrind, ~50 times slower,
    # gcc's lookups would spend the default 1 ms and start the cache.
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + argv,
                       env=dict(env(lib), RCUWALK_WARMUP="100000ms"), capture_output=True, text=True)
    m = re.search(r"Collected : (\d+)", r.stderr)
    return int(m.group(1)) if m else None

def lookups(argv, lib):
    r = subprocess.run(argv, env=dict(env(lib), LD_DEBUG="statistics"), capture_output=True, text=True)
    m = re.findall(r"final number of relocations:\s*(\d+)", r.stderr)
    return int(m[0]) if m else None

print("| process | preloaded | page faults | instructions | symbol look-ups |")
print("|---|---|---:|---:|---:|")
for name, argv in progs:
    f = faults(argv)
    for w, lib in ways:
        ins = instructions(argv, lib)
        lk = lookups(argv, lib)
        print(f"| {name} | {w} | {f[w]:.2f} | {ins if ins is not None else '-':,} | {lk if lk is not None else '-'} |"
              if ins is not None else f"| {name} | {w} | {f[w]:.2f} | - | {lk} |")
print()

loop = "for i in $(seq %d); do %s; done"
loops = [("500 x /bin/true", ["bash", "-c", loop % (500, "/bin/true")]),
         ("100 x gcc --version", ["bash", "-c", loop % (100, "gcc --version >/dev/null")])]
def run(argv, lib):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(argv, env=env(lib), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    t = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return t, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
def q(v):
    v = sorted(v); n = len(v)
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    return f"{med:.3f}x ({v[n // 4]:.3f}-{v[(3 * n) // 4]:.3f})"
print(f"{rounds} rounds, order rotated; ratio to none per round: median (quartiles)")
print()
print("| loop | preloaded | wall | CPU (user + system) |")
print("|---|---|---:|---:|")
for name, argv in loops:
    for w, lib in ways:
        run(argv, lib)  # untimed: page cache
    W = {w: [] for w, _ in ways}; C = {w: [] for w, _ in ways}
    for r in range(rounds):
        order = ways[r % len(ways):] + ways[:r % len(ways)]
        for w, lib in order:
            t, c = run(argv, lib)
            W[w].append(t); C[w].append(c)
    print(f"| {name} | none | {sorted(W['none'])[rounds // 2]:.3f} s | {sorted(C['none'])[rounds // 2]:.3f} s |")
    for w, _ in ways[1:]:
        print(f"| {name} | {w} | {q([a / b for a, b in zip(W[w], W['none'])])} | "
              f"{q([a / b for a, b in zip(C[w], C['none'])])} |")
print()
print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")
PY
