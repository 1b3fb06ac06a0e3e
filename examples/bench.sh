#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench.sh - rerun every rcuwalk benchmark in one command and regenerate
# examples/results/ (results.md, the figures as '|'-separated data, two PNG plots).
#
# Usage: ./examples/bench.sh [--quick] [--no-session] [--jobs N] [--out DIR] [--build-dir DIR] [--no-fuse]
#   --quick      smoke run: few calls and runs, small projects (a minute or two);
#                its figures are not meant to be quoted
#   --jobs N     make -jN for the build benchmarks (default: nproc)
#   --no-session the shim's runs without a session (`rcuwalk --no-session --`:
#                each process its own cache; doc/session.md); results then go
#                to examples/results-no-session unless --out says otherwise.
#                (`--session`, the default since 2026-12-04, is accepted.)
#   --out DIR    where results go (default examples/results)
#   --build-dir  where rcuwalk is built, Release (default build-bench)
#   --no-fuse    skip the FUSE (bindfs) builds
# A full run takes about 15 minutes on a 2-vCPU VM.  Run it as root on Debian:
# it installs what it lacks (apt-get), and mounts bindfs (FUSE) under /tmp,
# unmounted at exit.  Without root, the parts whose tools are missing are skipped.
#
# Steps:
#  1. build rcuwalk (Release, library, launcher and the two benchmark programs);
#  2. microbenchmark (rcuwalk_bench under LD_PRELOAD): ns per call through the
#     shim vs the raw syscall, thread scaling vs a pure-compute loop, bytes
#     per cached dentry from the allocator;
#  3. process start-up: `true` and `gcc --version`, with and without the shim
#     (rcuwalk_spawn_bench: posix_spawn, alternating blocks);
#  4. build benchmarks, `make -jN` without and with `rcuwalk --`, alternating
#     (none/shim, shim/none, ...), on local disk and on a bindfs mount of the
#     same tree: a generated include-heavy project (examples/gen-include-project.sh)
#     and a project of TUs using GLib/GIO (`pkg-config --cflags gio-2.0`); path
#     syscalls of one build each way (strace -f -c); outputs compared byte for byte;
#  5. results.md with every goal of the performance issue, and the plots
#     (gnuplot; skipped with a message if it cannot be installed).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

quick=0
jobs=$(nproc)
out=$root/examples/results
bdir=$root/build-bench
use_fuse=1
session=1
out_set=0
cmdline="./examples/bench.sh $*"

usage() {
	sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--jobs) jobs=${2:?}; shift ;;
	--out) out=${2:?}; out_set=1; shift ;;
	--session) session=1 ;;
	--no-session) session=0 ;;
	--build-dir) bdir=${2:?}; shift ;;
	--no-fuse) use_fuse=0 ;;
	-h | --help) usage 0 ;;
	*) usage ;;
	esac
	shift
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || usage
if ((!session && !out_set)); then out=$root/examples/results-no-session; fi
launch_opts=(); ((session)) || launch_opts=(--no-session)
case $out in /*) ;; *) out=$PWD/$out ;; esac
case $bdir in /*) ;; *) bdir=$PWD/$bdir ;; esac

if ((quick)); then
	micro_args=(-n 5000 -k 3 -m 500 -N 20000 -M 2000)
	runs=1 gen_tus=20 fuse_tus=4 glib_tus=4 spawn_n=100 spawn_b=4
else
	micro_args=(-n 100000 -k 9 -m 5000 -N 1000000 -M 20000)
	runs=5 gen_tus=200 fuse_tus=24 glib_tus=24 spawn_n=1000 spawn_b=20
fi
idirs=40 headers=1000

say() { printf '\n== %s\n' "$*"; }
die() {
	printf 'bench.sh: %s\n' "$*" >&2
	exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }

# ------------------------------------------------------------- packages
installed() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q 'install ok installed'; }
apt_updated=0
# ensure PKG...: install what is missing (as root); returns 1 if still missing.
ensure() {
	local missing=() p
	have dpkg-query || return 0
	for p in "$@"; do installed "$p" || missing+=("$p"); done
	((${#missing[@]} == 0)) && return 0
	if ((EUID != 0)); then
		echo "not root: cannot install ${missing[*]}"
		return 1
	fi
	echo "installing ${missing[*]}"
	if ((!apt_updated)); then
		apt-get update -qq || true
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
		>/dev/null || return 1
}

# ------------------------------------------------------------- 1. build
say "1. building rcuwalk (Release) in ${bdir#"$root"/}"
ensure cmake make gcc pkg-config liburcu-dev libinotifytools0-dev || die "build dependencies missing"
cmake -S "$root" -B "$bdir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build "$bdir" -j"$(nproc)" --target rcuwalk_preload rcuwalk_launcher rcuwalk_bench \
	rcuwalk_spawn_bench >/dev/null
so=$bdir/preload/librcuwalk.so
launcher=$bdir/preload/rcuwalk
bench=$bdir/examples/rcuwalk_bench
spawn=$bdir/examples/rcuwalk_spawn_bench
for f in "$so" "$launcher" "$bench" "$spawn"; do [[ -x $f || -f $f ]] || die "$f was not built"; done
echo "built $so"

mkdir -p "$out"
tmp=$(mktemp -d /tmp/rcuwalk-bench-XXXXXX)
mounts=()
cleanup() {
	local m
	for m in "${mounts[@]}"; do
		umount "$m" 2>/dev/null || fusermount -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log=$out/bench.log
exec > >(tee "$log") 2>&1
start_s=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?'),"\
" mode $( ((quick)) && echo quick || echo full), make -j$jobs, scratch $tmp"

# ------------------------------------------------------------- 2. micro
say "2. microbenchmark: $bench ${micro_args[*]} (LD_PRELOAD=librcuwalk.so)"
# RCUWALK_WARMUP=0: per-call costs of the cache itself, its first lookups included.
(cd "$tmp" && LD_PRELOAD=$so RCUWALK_WARMUP=0 "$bench" "${micro_args[@]}" -c "$out/micro.csv")

# ------------------------------------------------------------- 3. start-up
say "3. process start-up, $spawn_n runs each way in $spawn_b alternating blocks"
: >"$out/spawn.csv"
# In a session the benchmark runs inside one (its own process under the shim
# both ways); the children it starts with the shim attach to it.
spawn_in=(); ((session)) && spawn_in=("$launcher" --)
"${spawn_in[@]}" "$spawn" -s "$so" -n "$spawn_n" -b "$spawn_b" -c "$out/spawn.csv" -l true -- true
"${spawn_in[@]}" "$spawn" -s "$so" -n "$spawn_n" -b "$spawn_b" -c "$out/spawn.csv" -l "gcc --version" -- gcc --version

# ------------------------------------------------------------- 4. builds
# A project of TUs using GLib and GIO (examples/gen-glib-project.sh).
gen_glib_project() {
	"$root/examples/gen-glib-project.sh" "$1" "$2"
}

# launch_words VARIANT: sets `launch` to the words put before a command run
# that way: none, or the launcher (shim).
launch_words() {
	launch=()
	if [[ $1 == shim ]]; then launch=("$launcher" "${launch_opts[@]}" --); fi
}

# one_build DIR VARIANT: clean (untimed), then one timed `make -jN`; prints seconds.
one_build() {
	local dir=$1 variant=$2 t0 t1 launch
	launch_words "$variant"
	make -s -C "$dir" clean >/dev/null
	t0=$(date +%s.%N)
	(cd "$dir" && "${launch[@]}" make -s -j"$jobs" >/dev/null) || die "make ($variant) failed in $dir"
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

save_outputs() { # DIR DEST
	rm -rf "$2"
	mkdir -p "$2"
	cp "$1"/obj/*.o "$1/app" "$2/"
}

# compare A B: prints "N/N" identical files; returns 1 if any differs.
compare() {
	local f same=0 total=0
	for f in "$1"/*; do
		total=$((total + 1))
		if cmp -s "$f" "$2/${f##*/}"; then same=$((same + 1)); else echo "DIFFERS: ${f##*/}" >&2; fi
	done
	echo "$same/$total"
	((same == total))
}

# bench_builds NAME DIR FS TUS [warm]: $runs alternating runs each way.
bench_builds() {
	local name=$1 dir=$2 fs=$3 tus=$4 warm=${5:-} i t v order ident
	if [[ -n $warm ]]; then
		t=$(one_build "$dir" none)
		echo "$name $fs: warm-up build $t s"
	fi
	for ((i = 1; i <= runs; i++)); do
		if ((i % 2)); then order=(none shim); else order=(shim none); fi
		for v in "${order[@]}"; do
			t=$(one_build "$dir" "$v")
			echo "build|$name|$fs|$tus|$i|$v|$t" >>"$out/build.csv"
			printf '%-10s %-5s run %d  %-5s %8s s\n' "$name" "$fs" "$i" "$v" "$t"
			if ((i == runs)); then save_outputs "$dir" "$tmp/out-$name-$fs-$v"; fi
		done
	done
	ident=$(compare "$tmp/out-$name-$fs-none" "$tmp/out-$name-$fs-shim") || true
	echo "identical|$name|$fs|$ident" >>"$out/build.csv"
	echo "$name $fs: outputs of the last runs without and with the shim: $ident byte-identical"
}

trace_set='openat,?open,newfstatat,?stat,?lstat,?access,faccessat,faccessat2,?readlink,readlinkat,statx,getdents64,inotify_add_watch'
# strace_builds NAME DIR: path syscalls of one build each way.
strace_builds() {
	local name=$1 dir=$2 v launch
	for v in none shim; do
		launch_words "$v"
		make -s -C "$dir" clean >/dev/null
		(cd "$dir" && strace -f -c -o "$out/strace-$name-$v.txt" -e trace="$trace_set" \
			"${launch[@]}" make -s -j"$jobs" >/dev/null)
	done
	awk -v name="$name" '
		FNR == 1 { f++ }
		$1 ~ /^[0-9.]+$/ && NF >= 5 { n[f, $NF] = $4; if ($NF != "total") seen[$NF] = 1 }
		END {
			for (s in seen) printf "syscalls|%s|%s|%d|%d\n", name, s, n[1, s], n[2, s]
			printf "syscalls|%s|total|%d|%d\n", name, n[1, "total"], n[2, "total"]
		}' "$out/strace-$name-none.txt" "$out/strace-$name-shim.txt" | sort >>"$out/build.csv"
	grep "^syscalls|$name|" "$out/build.csv" | awk -F'|' '{ printf "  %-18s %10d %10d\n", $3, $4, $5 }'
}

say "4. build benchmarks (make -j$jobs; $runs alternating runs each way)"
: >"$out/build.csv"
have_strace=0
if ensure strace && have strace && strace -f -c -o /dev/null true >/dev/null 2>&1; then have_strace=1; fi
fuse_ok=0
if ((use_fuse)); then
	if ensure bindfs && have bindfs && [[ -c /dev/fuse ]]; then
		mkdir -p "$tmp/probe" "$tmp/probe-mnt"
		if bindfs "$tmp/probe" "$tmp/probe-mnt" 2>/dev/null; then
			mounts+=("$tmp/probe-mnt")
			fuse_ok=1
		else
			echo "bindfs cannot mount here (no FUSE?): FUSE builds skipped"
		fi
	else
		echo "bindfs or /dev/fuse missing: FUSE builds skipped"
	fi
fi
# mount_fuse SRC: bindfs SRC on $tmp/fuse-<name>; prints the mount point.
mount_fuse() {
	local m=$tmp/fuse-${1##*/}
	mkdir -p "$m"
	bindfs "$1" "$m" || die "bindfs $1 $m failed"
	mounts+=("$m")
	echo "$m"
}

# bench_project NAME DISK_DIR DISK_TUS DIR TUS WHAT: the builds of project
# NAME: DISK_DIR (DISK_TUS TUs) on disk, warm; then, of DIR (TUS TUs, WHAT in
# the message), the path syscalls of one build (strace) and the builds through
# FUSE.
bench_project() {
	local name=$1 m
	bench_builds "$name" "$2" disk "$3" warm
	if ((have_strace)); then
		echo "path syscalls of one build of $6 on disk (strace -f -c): no shim, shim"
		strace_builds "$name" "$4"
	fi
	if ((fuse_ok)); then
		m=$(mount_fuse "$4")
		mounts+=("$m") # mount_fuse ran in a subshell
		bench_builds "$name" "$m" fuse "$5"
	fi
}

# 4a. generated include-heavy project
echo "generating: $gen_tus TUs (disk) and $fuse_tus TUs (FUSE, same headers), $idirs -I dirs, $headers headers"
"$root/examples/gen-include-project.sh" "$tmp/gen" "$gen_tus" "$idirs" "$headers" >/dev/null
"$root/examples/gen-include-project.sh" "$tmp/genf" "$fuse_tus" "$idirs" "$headers" >/dev/null
bench_project generated "$tmp/gen" "$gen_tus" "$tmp/genf" "$fuse_tus" "the $fuse_tus-TU project"

# 4b. GLib/GIO project
if ensure libglib2.0-dev && pkg-config --exists gio-2.0; then
	gen_glib_project "$tmp/glib" "$glib_tus"
	bench_project glib "$tmp/glib" "$glib_tus" "$tmp/glib" "$glib_tus" "the GLib project"
else
	echo "libglib2.0-dev is missing: GLib build skipped"
fi

# ------------------------------------------------------------- 5. results
say "5. results in ${out#"$root"/}"
elapsed=$(($(date +%s) - start_s))
export LC_ALL=C
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
machine="$(nproc) vCPUs ($cpu), $mem RAM, $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), kernel $(uname -r), $(gcc --version | head -n 1)"
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet HEAD -- . ':!examples/results' 2>/dev/null || echo ' (+ local changes)')"

# Plot data.
awk -F'|' '$1 == "case" { printf "%s|%s|%s|%s|%s|%s|%s\n", $2, $3, $4, $5, $6, $7, $8 }' \
	"$out/micro.csv" >"$tmp/micro.dat"
awk -F'|' '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	$1 == "build" { k = $2 "|" $3; if (!(k in tus)) order[++nk] = k; tus[k] = $4; c = ++cnt[k, $6]; v[k, $6, c] = $7 }
	END {
		for (i = 1; i <= nk; i++) {
			k = order[i]; split(k, p, "|")
			label = (p[1] == "glib" ? "GLib/GIO" : "generated") ", " (p[2] == "fuse" ? "FUSE" : "disk") ", " tus[k] " TUs"
			line = label
			for (w = 1; w <= 2; w++) {
				var = w == 1 ? "none" : "shim"; n = cnt[k, var]
				lo = hi = v[k, var, 1]
				for (j = 1; j <= n; j++) { x[j] = v[k, var, j]; if (x[j] < lo) lo = x[j]; if (x[j] > hi) hi = x[j] }
				line = line "|" med(x, n) "|" lo "|" hi
			}
			print line
		}
	}' "$out/build.csv" >"$tmp/build.dat"

plots=0
if ensure gnuplot-nox && have gnuplot; then
	cp "$tmp/micro.dat" "$out/micro.dat"
	cp "$tmp/build.dat" "$out/build.dat"
	if (cd "$out" && gnuplot) <<'EOF'
set terminal pngcairo size 1100,620 font "sans,10"
set datafile separator '|'
set style data histogram
set style histogram errorbars gap 1.5 lw 1
set style fill solid 0.85 border -1
set grid ytics
set key top left
set xtics rotate by -35 scale 0 font ",9" nomirror
set bmargin 10
set rmargin 12

set output 'micro.png'
set title "ns per call: raw syscall (glibc's realpath) vs through rcuwalk (median, min-max bars)"
set logscale y
set ylabel 'ns per call (log scale)'
plot 'micro.dat' using 2:3:4:xtic(1) title 'raw syscall' lc rgb '#888888', \
     '' using 5:6:7 title 'through the shim' lc rgb '#2a7ab9'

set output 'build.png'
set title "make wall time without and with rcuwalk (median, min-max bars)"
unset logscale y
set yrange [0:*]
set ylabel 'seconds'
set xtics rotate by 0 font ",10"
set bmargin 4
plot 'build.dat' using 2:3:4:xtic(1) title 'no shim' lc rgb '#888888', \
     '' using 5:6:7 title 'rcuwalk --' lc rgb '#2a7ab9'
EOF
	then
		plots=1
		echo "plots: $out/micro.png $out/build.png"
	else
		echo "gnuplot failed: plots not made"
	fi
else
	echo "gnuplot is not installed and could not be installed: plots skipped"
fi

# results.md
{
	echo "# rcuwalk benchmark results"
	echo
	echo "Generated by \`examples/bench.sh\`; do not edit by hand."
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
	echo "| machine | $machine |"
	echo "| load average | $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (other work on the machine shows here: the ratios are measured in the same run, alternating) |"
	echo "| rcuwalk | commit $commit, Release build |"
	echo "| command | \`$cmdline\` ($( ((quick)) && echo 'quick mode: smoke figures, not for quoting' || echo 'full mode'), ${elapsed} s) |"
	echo "| builds | \`make -j$jobs\`, $runs alternating run(s) each way, \`$(realpath --relative-to="$root" "$launcher") ${launch_opts[*]}${launch_opts[*]:+ }-- make\` vs \`make\`; FUSE = \`bindfs\` of the same tree (default options) |"
	echo
	awk -F'|' -v plots="$plots" -v gen_tus="$gen_tus" -v fuse_tus="$fuse_tus" '
		function med(a, n,   i, j, t) {
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		function ok(c) { return c < 0 ? "(no goal)" : c ? "**met**" : "**missed**" }
		function goal(g, target, reached, met) { goals[++ng] = "| " g " | " target " | " reached " | " ok(met) " |" }
		$1 == "case" { nc++; cn[nc] = $2; rm[nc] = $3; rlo[nc] = $4; rhi[nc] = $5; lm[nc] = $6; llo[nc] = $7; lhi[nc] = $8; byname[$2] = nc }
		$1 == "threads" { nt++; tn[nt] = $2; hm[nt] = $3; hlo[nt] = $4; hhi[nt] = $5; cm[nt] = $6; clo[nt] = $7; chi[nt] = $8 }
		$1 == "memory" { mem_n = $2; mem_b = $3; mem_a = $4; mem_per = $5 }
		$1 == "spawn" { ns++; sl[ns] = $2; sn[ns] = $3; snlo[ns] = $4; snhi[ns] = $5; ss[ns] = $6; sslo[ns] = $7; sshi[ns] = $8 }
		$1 == "build" {
			k = $2 "|" $3; if (!(k in btus)) border[++nb] = k; btus[k] = $4
			c = ++bcnt[k, $6]; bv[k, $6, c] = $7; brun[k, $5, $6] = $7; bruns[k] = $5
		}
		$1 == "identical" { ident[$2 "|" $3] = $4 }
		$1 == "syscalls" { if (!($2 in sysseen)) sysorder[++nsys] = $2; sysseen[$2] = 1; sc[$2, $3, 1] = $4; sc[$2, $3, 2] = $5; if ($3 != "total") scn[$2, ++scc[$2]] = $3 }
		END {
			# ---- micro
			print "## Per call (`rcuwalk_bench`, median over rounds of ns/call, same run)"
			print ""
			print "| case | raw ns | shim ns | shim/raw | raw min-max | shim min-max |"
			print "|---|---:|---:|---:|---:|---:|"
			for (i = 1; i <= nc; i++)
				printf "| %s | %.1f | %.1f | **%.3f** | %.0f-%.0f | %.0f-%.0f |\n", cn[i], rm[i], lm[i], lm[i] / rm[i], rlo[i], rhi[i], llo[i], lhi[i]
			print ""
			print "raw = `syscall(SYS_newfstatat, ...)` etc., which nothing interposes; for realpath, glibc'"'"'s own realpath (one `readlink` per component). The 10-component `realpath` row is the hit path of a long name."
			print ""
			if (plots) { print "![ns per call](micro.png)"; print "" }
			# ---- threads
			if (nt) {
				print "## Thread scaling (stat hits of one 5-component name vs a pure-compute loop, same rounds)"
				print ""
				print "| threads | hit Mops/s (min-max) | compute Mops/s (min-max) | hit scaling | compute scaling | hit/compute |"
				print "|---:|---:|---:|---:|---:|---:|"
				for (i = 1; i <= nt; i++)
					printf "| %d | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.3f | %.3f | **%.3f** |\n", tn[i], hm[i], hlo[i], hhi[i], cm[i], clo[i], chi[i], hm[i] / hm[1], cm[i] / cm[1], (hm[i] / hm[1]) / (cm[i] / cm[1])
				print ""
			}
			if (mem_n) {
				printf "**Memory:** %d files stat()ed once each: heap in use (mallinfo2, all arenas) %d -> %d bytes, **%.1f bytes per cached dentry** with its attributes (7-byte names; liburcu'"'"'s hash-table growth in the 0.5 s after is included when the inserts make the table grow: the earlier first-lookup case may have sized it already).\n\n", mem_n, mem_b, mem_a, mem_per
			}
			# ---- spawn
			if (ns) {
				print "## Process start-up (`rcuwalk_spawn_bench`: posix_spawn + waitpid, LD_PRELOAD in the child only, alternating blocks)"
				print ""
				print "| command | no shim us/run (min-max) | shim us/run (min-max) | shim/none |"
				print "|---|---:|---:|---:|"
				for (i = 1; i <= ns; i++)
					printf "| `%s` | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | **%.3f** |\n", sl[i], sn[i], snlo[i], snhi[i], ss[i], sslo[i], sshi[i], ss[i] / sn[i]
				print ""
			}
			# ---- builds
			if (nb) {
				print "## Builds (`make` wall time, seconds; median of alternating runs)"
				print ""
				print "| project | fs | TUs | runs | no shim (min-max) | shim (min-max) | ratio of the medians | shim/none per run pair: median (min-max) | outputs identical |"
				print "|---|---|---:|---:|---:|---:|---:|---:|---|"
				for (i = 1; i <= nb; i++) {
					k = border[i]; split(k, p, "|")
					n1 = bcnt[k, "none"]; n2 = bcnt[k, "shim"]
					lo1 = hi1 = bv[k, "none", 1]; lo2 = hi2 = bv[k, "shim", 1]
					for (j = 1; j <= n1; j++) { a[j] = bv[k, "none", j]; if (a[j] < lo1) lo1 = a[j]; if (a[j] > hi1) hi1 = a[j] }
					for (j = 1; j <= n2; j++) { b[j] = bv[k, "shim", j]; if (b[j] < lo2) lo2 = b[j]; if (b[j] > hi2) hi2 = b[j] }
					m1 = med(a, n1); m2 = med(b, n2)
					rlo2 = 1e9; rhi2 = 0
					for (r = 1; r <= bruns[k]; r++) { q = brun[k, r, "shim"] / brun[k, r, "none"]; pq[r] = q; if (q < rlo2) rlo2 = q; if (q > rhi2) rhi2 = q }
					ratio[k] = med(pq, bruns[k]); worst[k] = rhi2
					printf "| %s | %s | %d | %d | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.3f | **%.3f** (%.3f-%.3f) | %s |\n", p[1] == "glib" ? "GLib/GIO" : "generated", p[2] == "fuse" ? "FUSE (bindfs)" : "local disk", btus[k], bruns[k], m1, lo1, hi1, m2, lo2, hi2, m2 / m1, ratio[k], rlo2, rhi2, ident[k]
				}
				print ""
				print "A run pair is one build without and one with the shim, back to back (the order alternates). The goals below use the median of the pair ratios: on a shared machine whose load drifts over minutes, it compares builds made under the same load."
				print ""
				print "generated: `examples/gen-include-project.sh DIR TUS 40 1000` (40 -I dirs, 1000 headers, 8 in 10 found only in the last 4 -I dirs, 12 system headers per TU); the FUSE runs build a " fuse_tus "-TU project of the same generator and headers (a full " gen_tus "-TU build on bindfs takes minutes). GLib/GIO: TUs including glib.h, glib-object.h, gio/gio.h and project headers, with six project -I dirs before `pkg-config --cflags gio-2.0` (only the project tree is on FUSE: GLib'"'"'s headers are read from /usr/include on disk)."
				print ""
				if (plots) { print "![build wall time](build.png)"; print "" }
			}
			if (nsys) {
				print "## Path syscalls of one build (`strace -f -c`, on disk)"
				print ""
				for (i = 1; i <= nsys; i++) {
					s = sysorder[i]
					printf "**%s** (%s):\n\n", s == "glib" ? "GLib/GIO" : "generated", s == "glib" ? "the GLib project above" : fuse_tus " TUs"
					print "| syscall | no shim | shim |"
					print "|---|---:|---:|"
					for (j = 1; j <= scc[s]; j++) printf "| %s | %d | %d |\n", scn[s, j], sc[s, scn[s, j], 1], sc[s, scn[s, j], 2]
					t1 = sc[s, "total", 1]; t2 = sc[s, "total", 2]
					printf "| **total** | %d | %d (%+.1f%%) |\n\n", t1, t2, t1 ? 100 * (t2 - t1) / t1 : 0
					removed[s] = t1 ? sprintf("%d of %d removed (%.1f%%)", t1 - t2, t1, 100 * (t1 - t2) / t1) : "n/a"
				}
				print "The totals include the shim'"'"'s own `getdents64` (complete directories) and `inotify_add_watch` calls."
				print ""
			}
			# ---- goals
			hitcases = "stat hit, 2 components;stat hit, 5 components;stat hit, 10 components;lstat hit (symlink, 5 comp);access(F_OK) hit (5 comp);realpath, 5 components;realpath, 10 components"
			n = split(hitcases, hc, ";"); worst_hit = 0; wname = ""; list = ""
			for (i = 1; i <= n; i++) if (hc[i] in byname) {
				j = byname[hc[i]]; q = lm[j] / rm[j]; list = list (list == "" ? "" : ", ") sprintf("%s %.3f", hc[i], q)
				if (q > worst_hit) { worst_hit = q; wname = hc[i] }
			}
			if (wname != "") goal("hit (stat 2/5/10 comp, lstat, access, realpath)", "<= 0.10x raw", list, worst_hit <= 0.10)
			n = split("open absent leaf (neg hit);open under missing dir", hc, ";"); worst_neg = 0; list = ""
			for (i = 1; i <= n; i++) if (hc[i] in byname) {
				j = byname[hc[i]]; q = lm[j] / rm[j]; list = list (list == "" ? "" : ", ") sprintf("%s %.3f", hc[i], q)
				if (q > worst_neg) worst_neg = q
			}
			if (list != "") goal("negative hit", "<= 0.10x raw", list, worst_neg <= 0.10)
			for (i = 1; i <= nc; i++) if (cn[i] ~ /^first lookup/) goal("miss (first lookup)", "<= 1.3x raw", sprintf("%.3f", lm[i] / rm[i]), lm[i] / rm[i] <= 1.3)
			if (nt >= 2) {
				q = (hm[2] / hm[1]) / (cm[2] / cm[1])
				goal("2-thread hit scaling / compute scaling", ">= 0.95", sprintf("%.3f (hit %.3fx, compute %.3fx)", q, hm[2] / hm[1], cm[2] / cm[1]), q >= 0.95)
			}
			if (mem_n) goal("bytes per cached dentry (allocator)", "<= 256", sprintf("%.1f", mem_per), mem_per <= 256)
			for (i = 1; i <= ns; i++) goal("start-up `" sl[i] "`", "<= 1.05x", sprintf("%.3f", ss[i] / sn[i]), ss[i] / sn[i] <= 1.05)
			for (i = 1; i <= nb; i++) {
				k = border[i]; split(k, p, "|"); pn = p[1] == "glib" ? "GLib/GIO" : "generated"
				if (p[2] == "fuse") goal("FUSE build, " pn, "<= 0.33x", sprintf("%.3f", ratio[k]), ratio[k] <= 0.33)
				else {
					goal("local-disk build, " pn, "<= 0.97x", sprintf("%.3f", ratio[k]), ratio[k] <= 0.97)
					goal("local-disk build, " pn ", never slower", "<= 1.02x (median pair; worst pair shown)", sprintf("%.3f (worst pair %.3f)", ratio[k], worst[k]), ratio[k] <= 1.02)
				}
			}
			for (i = 1; i <= nsys; i++) goal("path syscalls removed, " (sysorder[i] == "glib" ? "GLib/GIO" : "generated"), "(reported)", removed[sysorder[i]], -1)
			for (i = 1; i <= nb; i++) {
				k = border[i]; if (!(k in ident)) continue
				split(k, p, "|"); split(ident[k], q2, "/")
				goal("outputs byte-identical, " (p[1] == "glib" ? "GLib/GIO" : "generated") ", " (p[2] == "fuse" ? "FUSE" : "disk"), "all", ident[k], q2[1] == q2[2] && q2[2] > 0)
			}
			print "## Goals of the performance issue"
			print ""
			print "| goal | target | reached | |"
			print "|---|---|---|---|"
			for (i = 1; i <= ng; i++) print goals[i]
			print ""
		}' "$out/micro.csv" "$out/spawn.csv" "$out/build.csv" >"$tmp/body.md"
	# Goals first, then the detail.
	awk '/^## Goals/ { on = 1 } on' "$tmp/body.md"
	awk '/^## Goals/ { exit } { print }' "$tmp/body.md"
	echo "Raw figures: \`micro.csv\`, \`spawn.csv\`, \`build.csv\`, \`strace-*.txt\`, and the full log \`bench.log\`, beside this file."
} >"$out/results.md"
echo "wrote $out/results.md (${elapsed} s)"
