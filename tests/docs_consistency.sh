#!/bin/sh
# SPDX-License-Identifier: MIT
# docs_consistency.sh LAUNCHER SOURCE_DIR - the three texts that describe the
# launcher's options, and the four that name the --stats fields, agree.
#
# Options: `rcuwalk --help` (preload/rcuwalk.c, the source), the man page's
# OPTIONS (doc/rcuwalk.1) and README's option table.  For each long option
# each text gives: the option's name, the RCUWALK_* variables its paragraph
# (or table row) names, and its default: the first word after "default" or
# "default:" that does not follow "By" or "the" ("By default such ...",
# "(the default)"), backticks and trailing ".,;)" dropped.  The three lists
# must be equal.  The man page's ENVIRONMENT names exactly the variables the
# code reads (getenv("RCUWALK_..." in preload/ and invalidate/, and the
# start-up table's `[ENV_...] = "RCUWALK_..."` in preload/config.c, but the
# fault-injection RCUWALK_TEST_*) and every variable --help names is among them.
#
# --stats fields: the record's fields are RCUWALK_RECORD_FIELDS
# (preload/stats.h).  The summary that `rcuwalk --stats -- true` prints names
# them plus net_saved and the launcher's own lines (wall_ms, cpu_ms, fs, kernel_ms,
# shim_ms, verdict; fs once per filesystem, so names are compared as a set); the same names appear in
# README's sample summary (whose first line is worded as the real one's) and as the man page's STATISTICS entries; the
# record format in the man page and doc/statistics.md's table name the
# record's fields (and end).
#
# Plain sh and awk: CI's image need not have python3.
set -u
launcher=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rcuwalk-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# same WANT GOT WHAT: fail, with the difference, unless the two lists agree.
same() {
	cmp -s "$1" "$2" && return 0
	echo "FAIL: $3"
	diff "$1" "$2"
	fail=1
}

# ------------------------------------------------------------------ options
# Each extractor prints "name|VAR,VAR|default" per long option, sorted.
# The paragraph's text is given to describe(): names, variables, default.
cat >"$tmp/describe.awk" <<'EOF'
function describe(head, text,    n, w, i, j, v, names, vars, def, m, s, tok, seen) {
	names = ""; vars = ""; def = ""
	s = head
	while (match(s, /--[a-z][a-z-]*/)) {
		tok = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
		sub(/-$/, "", tok)
		if (!(tok in seen)) { seen[tok] = 1; names = names " " tok }
	}
	delete seen
	s = text
	m = 0
	while (match(s, /RCUWALK_[A-Z_]*[A-Z]/)) {
		tok = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
		if (!(tok in seen)) { seen[tok] = 1; v[++m] = tok }
	}
	# sort the variables (insertion sort: a handful)
	for (i = 2; i <= m; i++) {
		tok = v[i]
		for (j = i - 1; j >= 1 && v[j] > tok; j--) v[j + 1] = v[j]
		v[j + 1] = tok
	}
	for (i = 1; i <= m; i++) vars = vars (i > 1 ? "," : "") v[i]
	gsub(/`/, "", text)
	n = split(text, w, /[ \t]+/)
	for (i = 1; i < n; i++) {
		if (w[i] ~ /^\(?default:?$/ && w[i - 1] != "By" && w[i - 1] != "by" &&
		    w[i - 1] != "the" && w[i - 1] != "(the") {
			def = w[i + 1]
			sub(/[.,;):]+$/, "", def)
			break
		}
	}
	n = split(names, w, " ")
	for (i = 1; i <= n; i++) printf "%s|%s|%s\n", w[i], vars, def
}
EOF

# with_describe PROGRAM FILE...: awk with describe() (mawk has no -e).
with_describe() {
	prog=$1
	shift
	{ cat "$tmp/describe.awk"; printf '%s\n' "$prog"; } >"$tmp/prog.awk"
	awk -f "$tmp/prog.awk" "$@"
}

# --help: an option's paragraph is its line ("  --name...  text") and the
# more deeply indented lines after it.
"$launcher" --help >"$tmp/help.txt" || { echo "FAIL: $launcher --help"; exit 1; }
with_describe '
	function flush() { if (head != "") describe(head, text); head = "" }
	/^  -/ {
		flush()
		line = substr($0, 3)
		i = match(line, /  +/)
		head = i ? substr(line, 1, i - 1) : line
		text = line
		next
	}
	/^   / && head != "" { text = text " " $0; next }
	{ flush() }
	END { flush() }' "$tmp/help.txt" | sort >"$tmp/opt-help"

# The man page: troff escapes and macros stripped; OPTIONS's entries are
# ".TP", a head line, then text up to the next .TP or .SH.
man_plain() {
	sed -e 's/\\f[BIRPC]//g; s/\\f(CR//g; s/\\-/-/g; s/\\e/\\/g; s/"//g' \
	    -e 's/^\.\(B\|I\|BI\|BR\|RB\|IR\|RI\|IB\) //' "$1"
}
man_plain "$src/doc/rcuwalk.1" >"$tmp/man.txt"
with_describe '
	function flush() { if (head != "") describe(head, text); head = "" }
	/^\.SH/ { flush(); sect = $0; next }
	sect != ".SH OPTIONS" { next }
	/^\.TP/ { flush(); want = 1; next }
	want { head = $0; text = ""; want = 0; next }
	/^\.(PP|IP)/ { next }
	head != "" { text = text " " $0 }
	END { flush() }' "$tmp/man.txt" | sort >"$tmp/opt-man"

# README: the rows of the table under "### Launcher options"; the first
# cell names the options, the whole row is their text.
with_describe '
	/^### Launcher options/ { on = 1; next }
	on && /^#/ { on = 0 }
	on && /^\| `-/ { split($0, c, "|"); describe(c[2], $0) }' "$src/README.md" |
	sort >"$tmp/opt-readme"

for t in man readme; do
	same "$tmp/opt-help" "$tmp/opt-$t" "options differ between --help (<) and $t (>): name|variables|default"
done
n=$(wc -l <"$tmp/opt-help")
[ "$n" -ge 20 ] || { echo "FAIL: only $n options found in --help"; fail=1; }

# ENVIRONMENT: what the code reads, and all --help names.
cat "$src"/preload/*.c "$src"/invalidate/*.c | grep -o '\(getenv(\|\] = \)"RCUWALK_[A-Z_]*"' |
	sed 's/^[^"]*"//; s/"//' | grep -v '^RCUWALK_TEST_' | sort -u >"$tmp/env-code"
awk '/^\.SH/ { on = ($0 == ".SH ENVIRONMENT"); next } on' "$tmp/man.txt" |
	grep -o 'RCUWALK_[A-Z_]*[A-Z]' | sort -u >"$tmp/env-man"
grep -o 'RCUWALK_[A-Z_]*[A-Z]' "$tmp/help.txt" | sort -u >"$tmp/env-help"
same "$tmp/env-code" "$tmp/env-man" "variables read by the code (<) and the man page's ENVIRONMENT (>)"
if [ -n "$(comm -23 "$tmp/env-help" "$tmp/env-man")" ]; then
	echo "FAIL: --help names variables the man page's ENVIRONMENT lacks:"
	comm -23 "$tmp/env-help" "$tmp/env-man"
	fail=1
fi

# ------------------------------------------------------------------ --stats
sed -n '/^#define RCUWALK_RECORD_FIELDS/,/^$/p' "$src/preload/stats.h" |
	grep -o 'X([a-z_]*)' | sed 's/X(//; s/)//' | sort >"$tmp/fields"
[ "$(wc -l <"$tmp/fields")" -ge 20 ] || { echo "FAIL: RCUWALK_RECORD_FIELDS not found"; fail=1; }
{ cat "$tmp/fields"; printf '%s\n' net_saved wall_ms cpu_ms fs kernel_ms shim_ms verdict; } |
	sort >"$tmp/summary-want"

# The summary, as printed: every line after the first starts with a name.
summary_names() { awk 'NR > 1 && NF { print $1 }' | sort -u; }
"$launcher" --stats="$tmp/summary.txt" -- true || { echo "FAIL: rcuwalk --stats -- true"; fail=1; }
summary_names <"$tmp/summary.txt" >"$tmp/summary-real"
sed -n '/^rcuwalk summary:/,/^```/p' "$src/README.md" | grep -v '^```' | summary_names \
	>"$tmp/summary-readme"
awk '/^\.SH/ { on = ($0 == ".SH STATISTICS"); next }
	on && /^\.TP/ { getline; gsub(/,/, " "); for (i = 1; i <= NF; i++) print $i }' \
	"$tmp/man.txt" | sort -u >"$tmp/summary-man"
awk '/^\.SH/ { on = ($0 == ".SH STATISTICS"); next }
	on && /^rcuwalk-stats v1/ { rec = 1 } rec && /^\.ft/ { rec = 0 }
	rec' "$tmp/man.txt" | grep -o '[a-z_]*=' | tr -d = | grep -v -x -e pid -e end |
	sort >"$tmp/record-man"
sed -n '/^| field | counts |/,/^$/p' "$src/doc/statistics.md" | awk -F'|' 'NR > 2 { print $2 }' |
	grep -o '`[a-z_]*`' | tr -d '`' | grep -v -x end | sort >"$tmp/record-statsmd"
for t in real readme man; do
	same "$tmp/summary-want" "$tmp/summary-$t" \
		"summary names: the record's fields + net_saved and the launcher's lines (<), $t (>)"
done
# The first line: README's sample is worded as the real one.
head_re='^rcuwalk summary: [0-9][0-9]* process(es)? ended \([0-9][0-9]* by exit\(\), [0-9][0-9]* by _exit\(\)\), [0-9][0-9]* records? \([0-9][0-9]* written before an exec\), [0-9][0-9]* unreadable$'
for f in "$tmp/summary.txt" "$src/README.md"; do
	if ! grep -Eq "$head_re" "$f"; then
		echo "FAIL: no summary line worded as preload/rcuwalk.c prints it in $f:"
		grep '^rcuwalk summary' "$f"
		fail=1
	fi
done
for t in man statsmd; do
	same "$tmp/fields" "$tmp/record-$t" "record fields: RCUWALK_RECORD_FIELDS (<), $t (>)"
done

[ $fail = 0 ] && echo "docs agree: $n option names, $(wc -l <"$tmp/fields") record fields"
exit $fail
