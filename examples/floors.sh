#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# floors.sh: the shim's ratios beside the floors, measured in the same run.
#
#   examples/floors.sh [-n PAIRS] [-w WORKLOADS] [-t TUS] [-g IDIRS,HEADERS] [-b BUILD_DIR]
#
#   -n PAIRS      rounds per workload (default 7)
#   -w WORKLOADS  comma-separated, of: gen (the generated project, make -j2),
#                 true (500 x /bin/true in one bash), gcc (100 x gcc --version
#                 in one bash); default gen,true,gcc
#   -t TUS        translation units of the generated project (default 20)
#   -g I,H        its -I dirs and headers (default 40,1000: bench.sh's shape)
#   -b BUILD_DIR  where rcuwalk is built (default build)
#
# Each round runs the workload three ways, in an order rotated per round:
# none (the command as is), empty (LD_PRELOAD of an empty .so built here with
# gcc: what any preloaded library costs to load and start) and shim
# (`BUILD_DIR/preload/rcuwalk -- CMD`, as a user runs it).  The generated
# project is cleaned (`make clean`, untimed) before every run.  Then, once per
# workload, examples/path-bound.sh -n 3 gives the floor for the path lookups:
# its "best possible ratio with a free cache" (CPU); for the generated project
# "shim - floor" is given against it and against it plus the empty library's
# start (empty/none - 1).  Ratios are per round
# (shim / none and empty / none of the same round): median and min-max.
# Everything runs on local disk (a temporary directory); FUSE and sshfs are
# not covered yet.  Needs gcc, make, strace and python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
pairs=7 workloads=gen,true,gcc tus=20 shape=40,1000 bdir=$root/build
while getopts "n:w:t:g:b:" o; do
  case $o in
    n) pairs=$OPTARG;; w) workloads=$OPTARG;; t) tus=$OPTARG;; g) shape=$OPTARG;;
    b) bdir=$(cd "$OPTARG" && pwd);; *) sed -n '2,25p' "$0"; exit 2;;
  esac
done
[[ $pairs =~ ^[1-9][0-9]*$ && $tus =~ ^[1-9][0-9]*$ && $shape =~ ^[1-9][0-9]*,[1-9][0-9]*$ ]] || { sed -n '2,25p' "$0"; exit 2; }
shim=$bdir/preload/rcuwalk
[ -x "$shim" ] || { echo "floors.sh: build rcuwalk first ($shim)" >&2; exit 2; }
[ -x "$bdir/examples/rcuwalk_replay" ] ||
  { echo "floors.sh: build rcuwalk_replay first ($bdir/examples)" >&2; exit 2; }
for t in gcc make strace python3; do
  command -v "$t" >/dev/null || { echo "floors.sh: needs $t" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'void rcuwalk_floor_empty(void){}' | gcc -shared -fPIC -x c - -o "$tmp/empty.so"

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit + local changes"
fi
case ",$workloads," in *,gen,*)
  "$here/gen-include-project.sh" "$tmp/gen" "$tus" "${shape%,*}" "${shape#*,}" >/dev/null ;;
esac

RCUWALK_REPLAY=$bdir/examples/rcuwalk_replay python3 - "$pairs" "$workloads" "$tus" \
  "$tmp" "$shim" "$here/path-bound.sh" "$commit" "./examples/floors.sh $*" "$shape" <<'PY'
import os, re, subprocess, sys, time
pairs, wls, tus, tmp, shim, pbound, commit, cmdline, shape = sys.argv[1:10]
pairs, tus = int(pairs), int(tus)
empty = os.path.join(tmp, "empty.so")
gen = os.path.join(tmp, "gen")
loop = "for i in $(seq %d); do %s; done"
table = {
    "gen": (f"generated, {tus} TUs ({shape.replace(',', ' -I dirs, ')} headers), make -j2", ["make", "-s", "-j2"], gen, "make -s clean"),
    "true": ("500 x /bin/true", ["bash", "-c", loop % (500, "/bin/true")], tmp, "true"),
    "gcc": ("100 x gcc --version", ["bash", "-c", loop % (100, "gcc --version >/dev/null")], tmp, "true"),
}
names = [w for w in wls.split(",") if w]
for w in names:
    if w not in table:
        sys.exit(f"floors.sh: unknown workload {w} (gen, true, gcc)")

def median(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])

def run(cmd, cwd, prep, env):
    subprocess.run(prep, shell=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"floors.sh: {' '.join(cmd)} failed ({r.returncode})")
    return t

base = dict(os.environ); base.pop("LD_PRELOAD", None)
env_empty = dict(base, LD_PRELOAD=empty)
ways = ["none", "empty", "shim"]
started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()); t_start = time.monotonic()
load0 = loadavg()
rows = []
for w in names:
    label, cmd, cwd, prep = table[w]
    times = {k: [] for k in ways}
    # one untimed run each way first: page cache, the compiler's files
    for k in ways:
        run(cmd if k != "shim" else [shim, "--"] + cmd, cwd, prep, env_empty if k == "empty" else base)
    for r in range(pairs):
        order = ways[r % 3:] + ways[:r % 3]
        for k in order:
            c = [shim, "--"] + cmd if k == "shim" else cmd
            times[k].append(run(c, cwd, prep, env_empty if k == "empty" else base))
        print(f"  {w} round {r + 1}: " + ", ".join(f"{k} {times[k][-1]:.3f} s" for k in ways),
              file=sys.stderr)
    pb = subprocess.run([pbound, "-n", "3", "-p", prep, "--"] + cmd, cwd=cwd, env=base,
                        capture_output=True, text=True)
    m = re.search(r"best possible ratio with a free cache: CPU ([0-9.]+), wall ([0-9.]+)", pb.stdout)
    if pb.returncode != 0 or not m:
        sys.exit(f"floors.sh: path-bound.sh failed:\n{pb.stdout}{pb.stderr}")
    lk = re.search(r"removable path lookups: (\d+)", pb.stdout)
    floor = float(m.group(1))
    er = [e / n for e, n in zip(times["empty"], times["none"])]
    sr = [s / n for s, n in zip(times["shim"], times["none"])]
    rows.append((w, label, median(times["none"]), er, sr, floor, int(lk.group(1)) if lk else 0))
load1 = loadavg()

def rng(v):
    return f"{median(v):.3f}x ({min(v):.3f}-{max(v):.3f})"
print(f"date: {started}; commit: {commit}; {os.cpu_count()} CPUs; took {time.monotonic() - t_start:.0f} s")
print(f"command: {cmdline.strip()}")
print(f"load average (1, 5, 15 min) before: {load0}; after: {load1}")
print(f"{pairs} rounds per workload, order none/empty/shim rotated per round; "
      "ratios per round, median (min-max)")
print()
print("| workload | none median (s) | empty/none | shim/none | path-bound floor | shim - floor |")
print("|---|---:|---:|---:|---:|---:|")
for w, label, nm, er, sr, floor, nlk in rows:
    s, e = median(sr), median(er)
    if w == "gen":
        # both floors apply: the lookups' (path-bound) and the start's (empty)
        gap = f"{s - floor:+.3f} (path-bound); {s - (floor + e - 1):+.3f} (path-bound + empty's start)"
    else:
        gap = f"{s - e:+.3f} (empty)"
    print(f"| {label} | {nm:.3f} | {rng(er)} | {rng(sr)} | {floor:.3f}x ({nlk:,} lookups) | {gap} |")
PY
