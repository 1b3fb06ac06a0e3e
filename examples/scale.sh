#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scale.sh: a monorepo-sized tree stat()ed from many processes of one
# session, every answer compared with the kernel's (issue 25, item 4).
#
#   examples/scale.sh [-d DIRS] [-f FILES_PER_DIR] [-p PROCS] [-n LOOKUPS_PER_PROC]
#                     [-b BUILD_DIR] [-t TREE_BASE] [-j JOBS] [-m] [-M]
#                     [-w CHANGES_PER_S] [-e EVERY] [-B BOUND_MS] [-L OPTS] [-q]
#
#   -d DIRS       leaf directories (default 100000: 100 packages x 100
#                 modules x 10 leaves, 110,100 directories in all)
#   -f FILES      files per leaf (default 10: 1,000,000 names)
#   -p PROCS      checking processes, one session (default 8)
#   -n LOOKUPS    stat() calls per process (default 200000)
#   -b BUILD_DIR  where rcuwalk and rcuwalk_scale are built (default build)
#   -t TREE_BASE  where the tree is kept between runs (default /var/tmp)
#   -j JOBS       processes at a time (default 2: this VM has 2 CPUs)
#   -m            a second session with a writer changing names meanwhile
#   -M            only that second session (no static run)
#   -w RATE       the writer's changes a second (default 1000)
#   -e EVERY      the writer changes names in every EVERY-th leaf (default 50)
#   -B BOUND_MS   the staleness a changed name may show (default 100: the
#                 coherence contract's bound in a session, clause 4)
#   -L OPTS       more launcher options (e.g. "--no-session", "--max-mb=256")
#   -q            exactness only: no census, one summary line per session
#
# The tree (examples/bench/scale_check.c, `gen`): TREE_BASE/rcuwalk-scale-UID-
# dDIRS-fFILES/pkgT/modM/subS/fileJJ.c, made once (C, *at() calls) and kept:
# a later run of the same shape reuses it.  A fresh tree is left 3 s before
# use, so that no file is younger than the shim's --racy-ms.
#
# Each session: `rcuwalk --warmup=0 -- bash -c '...'` runs PROCS processes
# of `rcuwalk_scale check`, JOBS at a time (xargs -P), each with its own
# seed: LOOKUPS stat()s of names drawn half present, half absent, 80% in the
# first fifth of the leaves; each answer compared with a raw
# syscall(SYS_newfstatat) made right after.  Then `rcuwalk_scale arena`
# prints the session arena's census (dcache_arena_census) before the
# session ends.  With -m the second session runs beside `rcuwalk_scale
# write` (outside the session, raw syscalls): it creates, removes and
# renames names in every EVERY-th leaf, logging each change's time; a
# differing answer there passes only if that name changed within BOUND_MS
# (doc/coherence.md, clause 4).  The writer puts the tree back at its end.
#
# Then (static session only) the same checkers, each alone under `rcuwalk
# --disable` (no cache: libc's calls, the kernel's first look at each name),
# and each process's wall time against its no-cache run: the baseline (run
# once before the session too, uncounted, so that both find the kernel's
# caches warm).  A checker's raw_ns is not one (the kernel's second look,
# right after the shim's).
#
# Figures: the sum of the checkers' RCUWALK_STATS records (hits, negative
# hits, shared path answers, pass-throughs by reason), the checkers' own
# lines (mismatches, ns per call through the shim and raw, peak RSS, the
# arena pages each touched) and the arena's census after each process and
# at the end: bytes taken of its 64 MiB, takes refused for want of room,
# resets (the arena given back whole once full: a new epoch),
# entries by kind (bytes each, how many still valid, how many too deep in
# their bucket's chain for a reader to look at), the shared path table's
# slots, answers, evictions and chains.  Exit 1 if any answer was wrong.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dirs=100000 files=10 procs=8 lookups=200000 bdir=$root/build base=/var/tmp jobs=2
mut=0 static=1 rate=1000 every=50 bound=100 quiet=0 lopts=()
usage() { sed -n '2,28p' "$0" >&2; exit 2; }
while getopts "d:f:p:n:b:t:j:mMw:e:B:L:q" o; do
  case $o in
    d) dirs=$OPTARG;; f) files=$OPTARG;; p) procs=$OPTARG;; n) lookups=$OPTARG;;
    b) bdir=$(cd "$OPTARG" && pwd);; t) base=$(cd "$OPTARG" && pwd);; j) jobs=$OPTARG;;
    m) mut=1;; M) mut=1 static=0;; w) rate=$OPTARG;; e) every=$OPTARG;; B) bound=$OPTARG;;
    L) read -r -a lopts <<<"$OPTARG";; q) quiet=1;;
    *) usage;;
  esac
done
for v in "$dirs" "$files" "$procs" "$lookups" "$jobs" "$rate" "$every"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || usage
done
shim=$bdir/preload/rcuwalk scale=$bdir/examples/rcuwalk_scale
[ -x "$shim" ] || { echo "scale.sh: build rcuwalk first ($shim)" >&2; exit 2; }
[ -x "$scale" ] || { echo "scale.sh: build rcuwalk_scale first ($scale)" >&2; exit 2; }

tree=$base/rcuwalk-scale-$(id -u)-d$dirs-f$files
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rcuwalk-scale.XXXXXX")
writer=
cleanup() {
  if [ -n "$writer" ]; then kill -TERM "$writer" 2>/dev/null || true; wait "$writer" || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
# Neither the generator nor the writer runs under the shim.
noshim=(env -u LD_PRELOAD -u RCUWALK_SESSION -u RCUWALK_SESSION_FDS -u RCUWALK_STATS)

say() { [ "$quiet" = 1 ] || echo "$@"; }
say "date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown); $(nproc) CPUs"
say "command: examples/scale.sh $*"
t0=$(date +%s.%N)
gline=$("${noshim[@]}" "$scale" gen -r "$tree" -d "$dirs" -f "$files")
t1=$(date +%s.%N)
say "$gline (with the shape check: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
case $gline in *": made,"*) sleep 3;; esac

fail=0
# session NAME SEED0 WITH_WRITER
session() {
  local name=$1 s0=$2 w=$3 out=$tmp/$1.out stats=$tmp/$1.stats rc ta tb
  local -a chk=("$scale" check -r "$tree" -d "$dirs" -f "$files" -n "$lookups")
  [ "$quiet" = 1 ] || chk+=(-A)
  : >"$stats"
  if [ "$w" = 1 ]; then
    chk+=(-m "$tmp/changes" -M "$every" -B "$bound")
    "${noshim[@]}" "$scale" write -r "$tree" -d "$dirs" -f "$files" -m "$tmp/changes" -M "$every" \
      -w "$rate" -s "$s0" >"$tmp/$name.writer" &
    writer=$!
    for _ in $(seq 200); do [ -e "$tmp/changes" ] && break; sleep 0.05; done
    [ -e "$tmp/changes" ] || { echo "scale.sh: the writer made no $tmp/changes" >&2; exit 2; }
  fi
  ta=$(date +%s.%N)
  set +e
  # Paths as arguments, never in the command string (a checkout below a
  # path with a space: CI's second clone).
  RCUWALK_STATS=$stats "$shim" --warmup=0 ${lopts[@]+"${lopts[@]}"} -- bash -c \
    's0=$1 n=$2 jobs=$3 scale=$4; shift 4
     seq "$s0" $((s0 + n - 1)) | xargs -P "$jobs" -I{} "$@" -s {}; x=$?
     "$scale" arena || true; exit $x' bash "$s0" "$procs" "$jobs" "$scale" "${chk[@]}" \
    >"$out" 2>"$tmp/$name.err"
  rc=$?
  set -e
  tb=$(date +%s.%N)
  if [ "$w" = 1 ]; then
    kill -TERM "$writer"; wait "$writer" || true; writer=
  fi
  if [ "$rc" != 0 ] || grep -q MISMATCH "$tmp/$name.err"; then
    fail=1
    echo "scale.sh: session '$name' failed (exit $rc):" >&2
    head -n 40 "$tmp/$name.err" >&2
  elif [ -s "$tmp/$name.err" ] && [ "$quiet" = 0 ]; then
    echo "  (stderr of '$name':)"; head -n 20 "$tmp/$name.err"
  fi
  awk -v name="$name" -v wall="$(awk -v a="$ta" -v b="$tb" 'BEGIN { print b - a }')" \
      -v procs="$procs" -v jobs="$jobs" -v quiet="$quiet" \
      -v writer="$([ "$w" = 1 ] && cat "$tmp/$name.writer" || true)" '
    function kv(line, key,    m) {
      if (match(line, " " key "=[^ ]*")) return substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2)
      return ""
    }
    function pct(a, b) { return b ? sprintf("%.1f%%", 100 * a / b) : "-" }
    function per(a, b) { return b ? sprintf("%.0f", a / b) : "-" }
    function mib(b) { return sprintf("%.1f MiB", b / 1048576) }
    FNR == 1 { file++ }
    file == 1 && /^rcuwalk-scale / {
      np++; pid[kv($0, "pid") + 0] = 1
      look += kv($0, "lookups"); bad += kv($0, "mismatches"); stale += kv($0, "stale_ok")
      s1 += kv($0, "stale_1ms"); s10 += kv($0, "stale_10ms")
      again += kv($0, "kernel_again"); pres += kv($0, "present")
      if (kv($0, "stale_max_us") + 0 > smax) smax = kv($0, "stale_max_us") + 0
      procline[np] = sprintf("    seed %s: shim %s ns, raw %s ns, %s ms, peak RSS %.1f MiB (arena pages %.1f MiB)",
        kv($0, "seed"), kv($0, "shim_ns"), kv($0, "raw_ns"), kv($0, "wall_ms"),
        kv($0, "maxrss_kb") / 1024, kv($0, "arena_rss_kb") / 1024)
    }
    file == 1 && /^arena after=/ && / refused=/ {
      growth = growth sprintf("    after seed %s: %s of %s taken, %s refused, %d resets\n",
        substr($2, 7), mib(kv($0, "bump")), mib(kv($0, "limit")), kv($0, "refused"), kv($0, "resets"))
    }
    file == 1 && /^arena end / {
      if ($0 ~ / refused=/) { asize = kv($0, "size"); alim = kv($0, "limit"); abump = kv($0, "bump"); aref = kv($0, "refused"); ares = kv($0, "resets"); along = kv($0, "longest_chain") }
      else if ($0 ~ / kind=/) { k = kv($0, "kind"); kn[k] = kv($0, "n"); kl[k] = kv($0, "live"); kb[k] = kv($0, "bytes"); kd[k] = kv($0, "deep"); kinds = kinds " " k }
      else if ($0 ~ / spath /) { sslots = kv($0, "slots"); sused = kv($0, "used"); svalid = kv($0, "valid"); sev = kv($0, "evicted"); sch = kv($0, "chains"); schb = kv($0, "chain_bytes"); stb = kv($0, "table_bytes"); sgb = kv($0, "gens_bytes") }
    }
    file == 2 && /^rcuwalk-stats / {
      p = kv($0, "pid") + 0
      n = split($0, f, " ")
      for (i = 3; i <= n; i++) {
        split(f[i], x, "="); if (x[2] ~ /^[0-9]+$/) { all[x[1]] += x[2]; if (p in pid) c[x[1]] += x[2] }
      }
    }
    END {
      printf "session %s: %d processes (%d at a time), %d lookups each: %.1f s wall\n", name, procs, jobs, np ? look / np : 0, wall
      printf "  answers compared: %d (%s present), mismatches %d", look, pct(pres, look), bad
      if (writer != "") printf ", stale within the bound %d (%d of them over 1 ms after the change, %d over 10 ms, the longest %.1f us)", stale, s1, s10, smax
      printf ", taken back by the kernel %d\n", again
      if (writer != "") printf "  %s\n", writer
      if (quiet == 1) exit
      printf "  checkers (stats records): lookups %d; from the cache %s (hits %d, neg_hits %d); shared path table %s (path_hits_shared %d); passthrough %s\n",
        c["lookups"], pct(c["hits"] + c["neg_hits"], c["lookups"]), c["hits"], c["neg_hits"],
        pct(c["path_hits_shared"], c["lookups"]), c["path_hits_shared"], pct(c["passthrough"], c["lookups"])
      printf "    pass-through reasons:"
      for (k in c) if (k ~ /^pass_/ && c[k] > 0) printf " %s %d", k, c[k]
      printf "\n    misses %d, invalidations %d, watches %d, watch_fail %d, events %d, overflows %d\n", c["misses"], c["invalidations"], c["watches"], c["watch_fail"], c["events"], c["overflows"]
      printf "    taken from the session: listings %d, watches %d, names %d, searches %d; paths offered %d\n", c["listings_shared"], c["watches_shared"], c["names_shared"], c["searches_shared"], c["paths_shared"]
      printf "  every process of the session (records %d lookups, %d from the cache)\n", all["lookups"], all["hits"] + all["neg_hits"]
      for (i = 1; i <= np; i++) print procline[i]
      if (asize == "") { print "  arena: not read"; exit }
      printf "  arena: %s taken of %s backed (%s mapped), %d takes refused, %d resets (a new epoch), longest bucket chain %d entries\n", mib(abump), mib(alim), mib(asize), aref, ares, along
      printf "%s", growth
      ne = 0; nb = 0
      split(substr(kinds, 2), ks, " ")
      for (i = 1; i in ks; i++) {
        k = ks[i]; ne += kn[k]; nb += kb[k]
        printf "    %-8s %8d entries, %8d valid, %s, %s B each, %d past a reader'"'"'s %d-entry look\n", k, kn[k], kl[k], mib(kb[k]), per(kb[k], kn[k]), kd[k], 64
      }
      printf "    path table: %d slots (%s), %d answers (%d valid), %d evicted since it last grew; %d chains (%s); generations %s\n",
        sslots, mib(stb), sused, svalid, sev, sch, mib(schb), mib(sgb)
      printf "    per path answer: a 64 B slot + %s B of chain (shared by a directory'"'"'s names); at this table'"'"'s occupancy (%s) %s B, with the generations %s B\n",
        per(schb, sused), pct(sused, sslots), per(stb + schb, sused), per(stb + schb + sgb, sused)
      printf "    unaccounted (older path tables, lost races, the header): %s\n", mib(abump - nb - stb - schb - sgb)
    }' "$out" "$stats"
}

# nocache SEED0 [warm]: the static session's checkers again, each alone
# under `rcuwalk --disable` (the library loaded, every call passed to libc:
# no cache), JOBS at a time: what the same first lookups cost without a
# cache.  A checker's raw_ns is the kernel's second look at each name (made
# right after the shim's, its dentries warm), so it is not the baseline;
# this run's shim_ns (libc's call, the kernel's first look) and wall are.
# Run once before the session, not counted ("warm": the kernel's dentries
# and directory blocks read in, as the session's own run leaves them for
# the counted one), and once after it, printed beside the session's with
# the wall ratio per seed.
nocache() {
  local s0=$1 out=$tmp/nocache.out
  seq "$s0" $((s0 + procs - 1)) | RCUWALK_STATS= xargs -P "$jobs" -I{} "$shim" --disable -- \
    "$scale" check -r "$tree" -d "$dirs" -f "$files" -n "$lookups" -s {} >"$out" 2>/dev/null || {
    echo "scale.sh: the no-cache run failed" >&2; fail=1; return; }
  [ "${2:-}" = warm ] && return
  awk -v quiet="$quiet" '
    function kv(line, key) {
      if (match(line, " " key "=[^ ]*")) return substr(line, RSTART + length(key) + 2, RLENGTH - length(key) - 2)
      return ""
    }
    FNR == 1 { file++ }
    /^rcuwalk-scale / && file == 1 { none[kv($0, "seed")] = kv($0, "wall_ms"); nns[kv($0, "seed")] = kv($0, "shim_ns") }
    /^rcuwalk-scale / && file == 2 { shim[kv($0, "seed")] = kv($0, "wall_ms"); sns[kv($0, "seed")] = kv($0, "shim_ns") }
    END {
      n = 0
      for (s in none) if (s in shim) { r[++n] = shim[s] / none[s]; line[n] = sprintf("    seed %s: %s ms (%s ns a stat), no cache %s ms (%s ns): %.2fx", s, shim[s], sns[s], none[s], nns[s], shim[s] / none[s]) }
      for (i = 2; i <= n; i++) { v = r[i]; l = line[i]; for (j = i - 1; j >= 1 && r[j] > v; j--) { r[j + 1] = r[j]; line[j + 1] = line[j] } r[j + 1] = v; line[j + 1] = l }
      if (!n) { print "  no cache: no seed to compare"; exit }
      printf "  against no cache (each checker alone under rcuwalk --disable): wall ratio per process %.2fx (median; %.2fx-%.2fx)\n", r[int((n + 1) / 2)], r[1], r[n]
      if (quiet != 1) for (i = 1; i <= n; i++) print line[i]
    }' "$out" "$tmp/static.out"
}

[ "$static" = 1 ] && nocache 1 warm && session static 1 0 && nocache 1
[ "$mut" = 1 ] && session mutating 101 1
exit "$fail"
