#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh - rcuwalk in one command: build an include-heavy C project with and
# without the shim, compare wall times, path syscalls and the objects.
#
# Usage: ./examples/demo.sh          (from anywhere; works from a clean clone)
# Environment:
#   DEMO_RUNS=N   timed builds per variant after the warm-up (default 5)
#   DEMO_JOBS=N   make -jN (default 2)
#   DEMO_KEEP=1   keep the temporary directory (printed at the end)
#
# Steps: (a) build rcuwalk if build/preload/librcuwalk.so is missing,
# (b) generate the project (examples/gen-include-project.sh) in a temp dir,
# (c) time `make -jN` without and with `build/preload/rcuwalk --`, alternating,
#     in pairs (one build each way); print each pair's ratio (shim / no shim),
#     their median and range, the load average before and after, and a
#     verdict by this rule, where "most" is at least 4 of 5 pairs (80%,
#     rounded up, of DEMO_RUNS):
#       faster  the median ratio is below 0.97 and most pairs are below 1.0
#       slower  the median ratio is above 1.03 and most pairs are above 1.0
#       within noise: the pairs disagree   neither 80% of pairs one way
#       within noise: about even           the pairs agree, the median within 3%
#     A ratio of the medians would hide disagreeing pairs: under load it said
#     0.912 ("9% faster") while 4 of 5 pairs were slower.
# (d) count path syscalls of one build of each with strace -f -c (if present),
# (e) check that the objects are byte-identical, (f) sum RCUWALK_STATS.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

runs=${DEMO_RUNS:-5}
jobs=${DEMO_JOBS:-2}
so=$root/build/preload/librcuwalk.so
launcher=$root/build/preload/rcuwalk
packages=(cmake gcc make pkg-config liburcu-dev libinotifytools0-dev libcmocka-dev)
trace='openat,?open,newfstatat,?stat,?lstat,?access,faccessat,faccessat2,?readlink,statx'

say() { printf '\n== %s\n' "$*"; }
die() {
	printf 'demo.sh: %s\n' "$*" >&2
	exit 1
}

[[ $runs =~ ^[1-9][0-9]*$ ]] || die "DEMO_RUNS must be a positive integer"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "DEMO_JOBS must be a positive integer"

# ---------------------------------------------------------------- (a) build
ensure_packages() {
	if ! command -v dpkg-query >/dev/null 2>&1; then
		echo "dpkg-query not found: not checking packages (need: ${packages[*]})"
		return 0
	fi
	local missing=() p
	for p in "${packages[@]}"; do
		if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	((${#missing[@]} == 0)) && return 0
	if ((EUID == 0)); then
		echo "installing missing packages: ${missing[*]}"
		apt-get update
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
	else
		echo "missing packages: ${missing[*]}; install them with:" >&2
		echo "    sudo apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
}

if [[ ! -f $so ]]; then
	say "building rcuwalk ($so is missing)"
	ensure_packages
	if [[ -x tests/run.sh ]]; then
		./tests/run.sh --build-only
	elif [[ -f tests/run.sh ]]; then
		bash tests/run.sh --build-only
	else
		cmake -S . -B build
		cmake --build build -j2
	fi
	[[ -f $so ]] || die "build finished but $so does not exist"
fi

if [[ -x $launcher ]]; then
	shim_cmd=("$launcher" --)
	shim_desc="build/preload/rcuwalk --"
else
	shim_cmd=(env "LD_PRELOAD=$so${LD_PRELOAD:+:$LD_PRELOAD}")
	shim_desc="LD_PRELOAD=build/preload/librcuwalk.so (launcher missing)"
fi

# ---------------------------------------------------------------- (b) project
tmp=$(mktemp -d /tmp/rcuwalk-demo-XXXXXX)
cleanup() {
	if [[ ${DEMO_KEEP:-0} == 1 ]]; then
		echo "kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

proj=$tmp/proj
echo "host: $(nproc) CPUs, $(uname -sr), $(cc --version | head -n 1)"
say "generating the include-heavy project"
"$root/examples/gen-include-project.sh" "$proj"
nheaders=$(find "$proj" -name '*.h' | wc -l)
echo "$nheaders headers; each TU searches 24 -I dirs for its headers and for 12 system headers"

# ---------------------------------------------------------------- (c) timing
# build VARIANT [extra env...]: clean, then time one `make -jN`; prints seconds.
build() {
	local variant=$1 t0 t1
	shift
	make -s -C "$proj" clean >/dev/null
	t0=$(date +%s.%N)
	if [[ $variant == shim ]]; then
		(cd "$proj" && env "$@" "${shim_cmd[@]}" make -s -j"$jobs" >/dev/null) ||
			die "make with the shim failed"
	else
		(cd "$proj" && env "$@" make -s -j"$jobs" >/dev/null) ||
			die "make without the shim failed"
	fi
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

# save_objects VARIANT: copy the build outputs for the comparison in (e).
save_objects() {
	rm -rf "$tmp/out-$1"
	mkdir -p "$tmp/out-$1"
	cp "$proj"/obj/*.o "$proj/app" "$tmp/out-$1/"
}

median() {
	printf '%s\n' "$@" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }

stats_file=$tmp/rcuwalk-stats.txt
say "timing make -j$jobs: without the shim vs with $shim_desc"
load_before=$(loadavg)
t=$(build none)
echo "warm-up   no shim   ${t} s"
t=$(build shim "RCUWALK_STATS=$stats_file")
echo "warm-up   shim      ${t} s   (RCUWALK_STATS collected from this build)"
times_none=()
times_shim=()
ratios=()
for ((i = 1; i <= runs; i++)); do
	t=$(build none)
	times_none+=("$t")
	save_objects none
	t=$(build shim)
	times_shim+=("$t")
	save_objects shim
	ratios+=("$(awk -v a="${times_shim[-1]}" -v b="${times_none[-1]}" 'BEGIN { printf "%.3f", a / b }')")
	printf 'pair %d    no shim   %s s   shim   %s s   shim/no-shim %s\n' "$i" "${times_none[-1]}" \
		"${times_shim[-1]}" "${ratios[-1]}"
done
load_after=$(loadavg)
med_none=$(median "${times_none[@]}")
med_shim=$(median "${times_shim[@]}")
echo
printf 'median    no shim   %s s   shim   %s s\n' "$med_none" "$med_shim"
# The verdict (the rule is in this file's header).
printf '%s\n' "${ratios[@]}" | sort -g | awk -v before="$load_before" -v after="$load_after" '
	{ r[NR] = $1; if ($1 < 1.0) below++; if ($1 > 1.0) above++ }
	END {
		n = NR
		med = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
		most = int((4 * n + 4) / 5) # 80%, rounded up: 4 of 5
		printf "pairs     %d; shim/no-shim median %.3f, range %.3f-%.3f; %d below 1.0, %d above\n",
			n, med, r[1], r[n], below, above
		printf "load      %s before, %s after (1, 5, 15 min)\n", before, after
		if (med < 0.97 && below >= most)
			v = sprintf("faster (median %.3f < 0.97, %d of %d pairs below 1.0)", med, below, n)
		else if (med > 1.03 && above >= most)
			v = sprintf("slower (median %.3f > 1.03, %d of %d pairs above 1.0)", med, above, n)
		else if (below < most && above < most)
			v = sprintf("within noise: the pairs disagree (%d below 1.0, %d above; %d needed either way)",
				below, above, most)
		else
			v = sprintf("within noise: about even (median %.3f, within 3%%)", med)
		printf "verdict   %s\n", v
	}'

# ---------------------------------------------------------------- (d) strace
# strace_build VARIANT: one build under strace -f -c; the summary goes to a file.
strace_build() {
	local variant=$1 out=$tmp/strace-$1.txt
	make -s -C "$proj" clean >/dev/null
	if [[ $variant == shim ]]; then
		(cd "$proj" && strace -f -c -o "$out" -e trace="$trace" \
			"${shim_cmd[@]}" make -s -j"$jobs" >/dev/null)
	else
		(cd "$proj" && strace -f -c -o "$out" -e trace="$trace" make -s -j"$jobs" >/dev/null)
	fi
}

say "path syscalls of one build (strace -f -c -e trace=${trace//\?/})"
if ! command -v strace >/dev/null 2>&1; then
	echo "strace is not installed: skipped (apt-get install strace)"
elif ! strace -f -c -o /dev/null true >/dev/null 2>&1; then
	echo "strace cannot trace here (ptrace not permitted?): skipped"
elif strace_build none && strace_build shim; then
	awk '
		# rows: % time, seconds, usecs/call, calls, [errors], syscall
		FNR == 1 { f++ }
		$1 ~ /^[0-9.]+$/ && NF >= 5 {
			name = $NF; n[f, name] = $4
			if (name != "total") seen[name] = 1
		}
		END {
			printf "%-12s %12s %12s\n", "syscall", "no shim", "shim"
			for (s in seen) printf "%-12s %12d %12d\n", s, n[1, s], n[2, s] | "sort"
			close("sort")
			a = n[1, "total"]; b = n[2, "total"]
			printf "%-12s %12d %12d\n", "total", a, b
			if (a > 0 && b <= a) printf "reduction: %d fewer path syscalls with the shim (-%.1f%%)\n", a - b, 100 * (a - b) / a
			else if (a > 0) printf "no reduction: %d MORE path syscalls with the shim (+%.1f%%)\n", b - a, 100 * (b - a) / a
		}' "$tmp/strace-none.txt" "$tmp/strace-shim.txt"
else
	echo "a build under strace failed: skipped"
fi

# ---------------------------------------------------------------- (e) objects
say "comparing the outputs of the last no-shim and shim builds"
same=0
differ=0
for f in "$tmp"/out-none/*; do
	if cmp -s "$f" "$tmp/out-shim/${f##*/}"; then
		same=$((same + 1))
	else
		differ=$((differ + 1))
		echo "DIFFERS: ${f##*/}"
	fi
done
if ((differ == 0)); then
	echo "all $same files (objects and app) are byte-identical"
else
	echo "$differ of $((same + differ)) files differ"
fi

# ---------------------------------------------------------------- (f) stats
say "RCUWALK_STATS of the shim warm-up build, summed over all processes"
if [[ -s $stats_file ]]; then
	awk '
		$1 == "rcuwalk-stats" {
			records++
			if ($NF != "end=exec") procs++
			for (i = 3; i <= NF; i++) { split($i, kv, "="); sum[kv[1]] += kv[2] }
		}
		END {
			printf "records=%d processes_ended=%d hits=%d neg_hits=%d misses=%d passthrough=%d invalidations=%d saved=%d\n",
				records, procs, sum["hits"], sum["neg_hits"], sum["misses"], sum["passthrough"],
				sum["invalidations"], sum["saved"]
		}' "$stats_file"
else
	echo "no stats were written to $stats_file (shim not active?)"
fi

((differ == 0)) || exit 1
