#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# path-bound.sh: the most any cache of path lookups could save a command.
#
#   examples/path-bound.sh [-n RUNS] [-p PREP] [-r ROUNDS] [-j JOBS] -- CMD [ARGS...]
#
# Runs CMD RUNS times (default 7; PREP, a shell command, before each run and
# before the trace, e.g. "make clean") for its median wall and CPU time; then
# once under `strace -f -xx` for its path lookups: every stat-family call,
# readlink, access and statx by name, and every openat that failed (an open
# that succeeds needs the kernel whatever caches it).  rcuwalk_replay then makes
# those same calls again as raw syscalls, in CMD's working directory, and times
# them (median of ROUNDS rounds, default 21; dentries warm, as in a build).
# What they take is all a cache can remove: without the shim's own costs, CMD
# can get no faster than (CPU - lookups) / CPU.  Calls relative to a directory
# fd other than AT_FDCWD are counted, not replayed.  With -j JOBS (> 1) the
# lookups are also cut into JOBS consecutive shares replayed by JOBS processes
# at once, as the jobs of `make -jJOBS` could make them, timed by the slowest
# share: on FUSE, where each lookup is a round trip to one daemon, lookups
# made at once slow each other down (two bindfs replays at once took 4x as
# long each as one alone, 2026-12-05).  A make -jJOBS saves between
# (its wall - the shares at once) and (its wall - the serial time / JOBS):
# the jobs' lookups all at the same time, or never.  Needs strace and python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runs=7 prep=true rounds=21 jobs=1
while getopts "n:p:r:j:" o; do
  case $o in n) runs=$OPTARG;; p) prep=$OPTARG;; r) rounds=$OPTARG;; j) jobs=$OPTARG;; *) exit 2;; esac
done
shift $((OPTIND - 1))
[[ $runs =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ && $jobs =~ ^[1-9][0-9]*$ ]] || { sed -n '2,23p' "$0"; exit 2; }
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { sed -n '2,23p' "$0"; exit 2; }
replay=${RCUWALK_REPLAY:-$here/../build/examples/rcuwalk_replay}
[ -x "$replay" ] || { echo "path-bound.sh: build rcuwalk_replay first ($replay)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$runs" "$prep" "$tmp" "$replay" "$rounds" "$jobs" "$@" <<'PY'
import os, re, resource, subprocess, sys, time
runs, prep, tmp, replay, rounds = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
jobs, cmd = int(sys.argv[6]), sys.argv[7:]
def median(v):
    v = sorted(v); return v[len(v) // 2]
wall, cpu = [], []
for _ in range(runs):
    subprocess.run(prep, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.monotonic()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1 = time.monotonic(); r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall.append(t1 - t0)
    cpu.append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
subprocess.run(prep, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
trace = os.path.join(tmp, "trace")
calls = "openat,newfstatat,stat,lstat,access,faccessat,faccessat2,readlink,readlinkat,statx"
subprocess.run(["strace", "-f", "-qq", "-xx", "-o", trace, "-e", "trace=" + calls] + cmd,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
modes = {"F_OK": 0, "R_OK": 4, "W_OK": 2, "X_OK": 1}
def flagval(s, table):
    v = 0
    for part in s.split("|"):
        part = part.strip()
        if part in table: v |= table[part]
        elif re.fullmatch(r"0x[0-9a-f]+|\d+", part): v |= int(part, 0)
    return v
atf = {"AT_SYMLINK_NOFOLLOW": 0x100, "AT_EACCESS": 0x200, "AT_NO_AUTOMOUNT": 0x800,
       "AT_STATX_SYNC_AS_STAT": 0, "AT_EMPTY_PATH": 0x1000}
of = {"O_RDONLY": 0, "O_NOCTTY": 0o400, "O_NONBLOCK": 0o4000, "O_DIRECTORY": 0o200000,
      "O_NOFOLLOW": 0o400000, "O_CLOEXEC": 0o2000000, "O_LARGEFILE": 0, "O_PATH": 0o10000000}
recs, skipped, kinds = [], 0, {}
s_re = r'"((?:\\x[0-9a-f]{2})*)"'
def lines(path):
    # A call another process interrupted is split in two: join them.
    pend = {}
    for line in open(path):
        m = re.match(r"(\d+)\s+(.*)", line.rstrip("\n"))
        if not m: continue
        pid, rest = m.group(1), m.group(2)
        r = re.match(r"<\.\.\. \w+ resumed>(.*)", rest)
        if r:
            if pid in pend: yield pid + " " + pend.pop(pid) + r.group(1)
        elif rest.endswith("<unfinished ...>"):
            pend[pid] = rest[: -len("<unfinished ...>")].rstrip()
        else:
            yield line
for line in lines(trace):
    m = re.match(r"\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)", line)
    if not m: continue
    name, args, ret = m.group(1), m.group(2), int(m.group(3))
    pm = re.search(s_re, args)
    if not pm: continue
    path = pm.group(1).replace("\\x", "")
    rest = args[pm.end():].split(", ")
    first = args[:pm.start()]
    if not path and "AT_EMPTY_PATH" in args: continue  # fstat of an fd
    if first and not first.startswith("AT_FDCWD"): skipped += 1; continue
    if name == "openat":
        if ret >= 0: continue
        fl = flagval(rest[1] if len(rest) > 1 else "O_RDONLY", of)
        if any(x in args for x in ("O_CREAT", "O_WRONLY", "O_RDWR", "O_TRUNC")): continue
        recs.append(("o", fl, path))
    elif name in ("newfstatat", "stat", "lstat"):
        fl = flagval(rest[-1], atf) if name == "newfstatat" else (0x100 if name == "lstat" else 0)
        if fl & 0x1000: continue
        recs.append(("s", fl, path))
    elif name in ("readlink", "readlinkat"):
        recs.append(("r", 0, path))
    elif name in ("access", "faccessat", "faccessat2"):
        mode = flagval(rest[1] if len(rest) > 1 else "F_OK", modes)
        fl = flagval(rest[2], atf) if name == "faccessat2" and len(rest) > 2 else 0
        recs.append(("a", (mode << 16) | fl, path))
    elif name == "statx":
        recs.append(("x", flagval(rest[1] if len(rest) > 1 else "0", atf), path))
    else: continue
    kinds[name] = kinds.get(name, 0) + 1
def write(name, rs):
    rf = os.path.join(tmp, name)
    with open(rf, "w") as f:
        for op, fl, p in rs: f.write(f"{op} {fl} {p or '2e'}\n")
    return rf
out = subprocess.run([replay, write("recs", recs), rounds], capture_output=True, text=True,
                     check=True).stdout.split()
n, ns = int(out[0]), int(out[1])
if jobs > 1:
    # one share per job: consecutive lookups, as one job makes them
    files = [write(f"recs{j}", recs[len(recs) * j // jobs: len(recs) * (j + 1) // jobs])
             for j in range(jobs)]
    procs = [subprocess.Popen([replay, f, rounds], stdout=subprocess.PIPE, text=True)
             for f in files]
    outs = [p.communicate()[0].split() for p in procs]
    if any(p.returncode != 0 for p in procs):
        sys.exit("path-bound.sh: rcuwalk_replay failed")
    ns_j = max(int(o[1]) for o in outs)
w, c, t = median(wall), median(cpu), ns / 1e9
print(f"command: {' '.join(cmd)}")
print(f"runs: {runs}; wall median {w*1000:.1f} ms, CPU (user+sys) median {c*1000:.1f} ms")
print(f"removable path lookups: {n} ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}); "
      f"relative to another fd, not replayed: {skipped}")
print(f"their time as raw syscalls: {t*1000:.2f} ms ({ns/max(n,1):.0f} ns each), "
      f"{100*t/c:.1f}% of the CPU time")
if jobs > 1:
    tj = ns_j / 1e9
    print(f"the same in {jobs} shares at once: {tj*1000:.2f} ms (the slowest share)")
print(f"best possible ratio with a free cache: CPU {(c-t)/c:.3f}, wall {(w-t)/w:.3f} if serial")
if jobs > 1:
    print(f"with {jobs} jobs: wall {(w-tj)/w:.3f} (lookups at once) to {(w-t/jobs)/w:.3f} (apart)")
PY
