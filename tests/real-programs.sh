#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/real-programs.sh - real programs give byte-identical results with and
# without librcuwalk.so (issue 5, part 5).
#
#   tests/real-programs.sh /path/to/librcuwalk.so
#
# Every check runs the same command twice, first without the shim and then
# with LD_PRELOAD=librcuwalk.so, at the same paths, and compares stdout,
# stderr, the exit status and the files produced, byte for byte:
#   gcc -c / g++ -c of several TUs (objects and -MMD dependency files), make
#   building a small project (a second run does nothing, a run after `touch` of
#   a header rebuilds exactly its dependents), python3 importing 30 stdlib
#   modules and a script that writes, re-reads, stats and re-imports files,
#   git init/add/commit/status/diff/log, find, ls -lR (full-iso times: mtimes,
#   never atimes), tar c of a tree, cp -a, rm -r.  Listings that show times run
#   both ways over the same tree, so mtimes and ctimes are compared as well.
# As root, the listing tools also run as nobody (setpriv) over a tree with
# unreadable and unsearchable directories, so their error messages count.
# The shim is preloaded from a copy in the scratch directory (0755 below a
# 0755 directory in /tmp): nobody can read it wherever the checkout is (a
# 0700 home), and its path has no ' ' or ':' that LD_PRELOAD would split.
# Exit: 0 all identical, 1 a difference (shown as a diff), 77 no shim given.
set -uo pipefail
export LC_ALL=C TZ=UTC

SHIM=${1:-${RCUWALK_TEST_SHIM:-}}
if [ -z "$SHIM" ] || [ ! -f "$SHIM" ]; then
  echo "real-programs.sh: usage: $0 /path/to/librcuwalk.so" >&2
  exit 77
fi
unset LD_PRELOAD RCUWALK_DISABLE RCUWALK_STATS

WORK=$(mktemp -d /tmp/rcuwalk-real-XXXXXX)
chmod 755 "$WORK"
cleanup() { chmod -R u+rwx "$WORK" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
mkdir "$WORK/lib"
install -m 0755 "$SHIM" "$WORK/lib/librcuwalk.so"
SHIM=$WORK/lib/librcuwalk.so
STATS=$WORK/stats
OUT=$WORK/out
mkdir -p "$OUT"
failures=0
checks=0
PY=$(command -v /usr/bin/python3 || command -v python3 || true)

# run MODE NAME CMD...: run CMD (in the current directory) without the shim
# (MODE plain) or with it (MODE shim); keeps stdout, stderr and the status.
run() {
  local mode=$1 name=$2
  shift 2
  if [ "$mode" = shim ]; then
    LD_PRELOAD=$SHIM RCUWALK_STATS=$STATS "$@" >"$OUT/$name.$mode.out" 2>"$OUT/$name.$mode.err"
  else
    "$@" >"$OUT/$name.$mode.out" 2>"$OUT/$name.$mode.err"
  fi
  echo $? >"$OUT/$name.$mode.rc"
}

# same NAME FILE_PLAIN FILE_SHIM: two files must be identical.
same() {
  local name=$1 a=$2 b=$3
  checks=$((checks + 1))
  if ! cmp -s "$a" "$b"; then
    echo "DIFFERENT: $name ($a vs $b)"
    if file -b "$a" 2>/dev/null | grep -q text || [ ! -s "$a" ] || [ ! -s "$b" ]; then
      diff -u "$a" "$b" | head -60
    else
      cmp "$a" "$b" | head -5
    fi
    failures=$((failures + 1))
  fi
}

# compare NAME: the outputs of `run plain NAME` and `run shim NAME`.
compare() {
  local name=$1 s
  for s in out err rc; do
    same "$name ($s)" "$OUT/$name.plain.$s" "$OUT/$name.shim.$s"
  done
}

# both NAME CMD...: run CMD both ways here and compare (for commands that do
# not change anything, so the second run sees what the first saw).
both() {
  local name=$1
  shift
  run plain "$name" "$@"
  run shim "$name" "$@"
  compare "$name"
}

# expect NAME STRING FILE: FILE (an output of the plain run) must contain STRING.
expect() {
  checks=$((checks + 1))
  if ! grep -qF -- "$2" "$3"; then
    echo "UNEXPECTED: $1: \"$2\" not in $3:"
    head -20 "$3"
    failures=$((failures + 1))
  fi
}

section() { echo "== $* ($SECONDS s)"; }

# ---------------------------------------------------------------------------
# A source tree: headers spread over several -I directories (most includes
# miss in the first directories: negative lookups), C and C++ TUs.
make_sources() {
  local d=$1 i
  mkdir -p "$d/inc1" "$d/inc2" "$d/inc3/sub" "$d/empty" "$d/src"
  for i in 1 2 3 4 5 6; do
    printf '#pragma once\n#define H%s_VALUE %s\nstatic inline int h%s(int x) { return x * %s; }\n' \
      "$i" "$i" "$i" "$i" >"$d/inc$(( (i % 3) + 1 ))/h$i.h"
  done
  printf '#pragma once\n#include "h1.h"\n#include <stddef.h>\nstruct util { int a; size_t n; };\n' >"$d/inc3/sub/util.h"
  for i in 1 2 3 4; do
    cat >"$d/src/c$i.c" <<EOF
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include "h$i.h"
#include "h$(( i + 1 )).h"
#include "sub/util.h"
#if __has_include("nosuch$i.h")
#error nosuch$i.h must not exist
#endif
int c$i(const char *p) { struct stat st; struct util u = { h$i(H${i}_VALUE), strlen(p) };
  return stat(p, &st) == 0 ? u.a + (int)u.n : -errno; }
EOF
  done
  for i in 1 2 3; do
    cat >"$d/src/x$i.cc" <<EOF
#include <iostream>
#include <vector>
#include <map>
#include <string>
#include <algorithm>
#include <memory>
#include <sstream>
#include "h$i.h"
#include "sub/util.h"
int x$i(int n) { std::vector<int> v(n); std::map<std::string, int> m; std::ostringstream o;
  for (int k = 0; k < n; k++) { v[k] = h$i(k); m[std::to_string(k)] = k; }
  std::sort(v.begin(), v.end()); o << v.size() << m.size(); return (int)o.str().size(); }
EOF
  done
}

check_compilers() {
  section "gcc -c and g++ -c"
  local d=$WORK/cc mode f
  make_sources "$d"
  cd "$d" || return
  local flags=(-O1 -Iempty -Inosuch -Iinc1 -Iinc2 -Iinc3 -MMD -MT obj)
  for mode in plain shim; do
    mkdir -p "obj-$mode"
    for f in src/c1.c src/c2.c src/c3.c src/c4.c; do
      run "$mode" "gcc-$(basename "$f")" gcc "${flags[@]}" -c "$f" -o "obj-$mode/$(basename "$f").o" \
        -MF "obj-$mode/$(basename "$f").d"
    done
    if command -v g++ >/dev/null; then
      for f in src/x1.cc src/x2.cc src/x3.cc; do
        run "$mode" "g++-$(basename "$f")" g++ "${flags[@]}" -c "$f" -o "obj-$mode/$(basename "$f").o" \
          -MF "obj-$mode/$(basename "$f").d"
      done
    fi
  done
  for f in obj-plain/*; do
    same "object/deps $(basename "$f")" "$f" "obj-shim/$(basename "$f")"
  done
  for f in "$OUT"/gcc-*.plain.rc "$OUT"/g++-*.plain.rc; do
    [ -e "$f" ] || continue
    f=$(basename "$f" .plain.rc)
    compare "$f"
    expect "$f exit status" 0 "$OUT/$f.plain.rc"
  done
  cd "$WORK" || exit 1
}

# ---------------------------------------------------------------------------
make_project() {
  local d=$1 i
  make_sources "$d"
  cat >"$d/Makefile" <<'EOF'
CFLAGS = -O1 -Iempty -Iinc1 -Iinc2 -Iinc3
OBJS = obj/c1.o obj/c2.o obj/c3.o obj/c4.o obj/main.o
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
obj/%.o: src/%.c | obj
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
obj:
	mkdir -p obj
-include $(OBJS:.o=.d)
EOF
  cat >"$d/src/main.c" <<'EOF'
int c1(const char *), c2(const char *), c3(const char *), c4(const char *);
int main(int argc, char **argv) { return (c1(argv[0]) + c2(".") + c3("nosuch") + c4("/")) > 0 ? 0 : 1; }
EOF
}

check_make() {
  section "make: build, nothing to do, rebuild after touch"
  local mode d=$WORK/mk
  for mode in plain shim; do
    rm -rf "$d"
    make_project "$d"
    cd "$d" || return
    run "$mode" make-build make -j1
    cp prog "$OUT/prog.$mode" 2>/dev/null
    run "$mode" make-again make -j1
    sleep 0.01
    touch inc3/sub/util.h
    run "$mode" make-touch-util make -j1
    touch inc3/h2.h
    run "$mode" make-touch-h2 make -j1
    run "$mode" make-last make -j1
    cd "$WORK" || exit 1
  done
  for n in make-build make-again make-touch-util make-touch-h2 make-last; do
    compare "$n"
  done
  same "make: linked program" "$OUT/prog.plain" "$OUT/prog.shim"
  expect "make: second run does nothing" "make: 'prog' is up to date." "$OUT/make-again.plain.out"
  # util.h is included by c1..c4, not main; h2.h by c1 and c2 (x2.cc is not built).
  for n in c1 c2 c3 c4; do
    expect "make: touch util.h rebuilds $n" "-c src/$n.c -o obj/$n.o" "$OUT/make-touch-util.plain.out"
  done
  checks=$((checks + 1))
  if grep -q "main.c" "$OUT/make-touch-util.plain.out" ||
    [ "$(grep -c -- ' -c src/' "$OUT/make-touch-h2.plain.out")" != 2 ] ||
    ! grep -q -- "-c src/c1.c" "$OUT/make-touch-h2.plain.out" ||
    ! grep -q -- "-c src/c2.c" "$OUT/make-touch-h2.plain.out"; then
    echo "UNEXPECTED: make rebuilt other than exactly the dependents:"
    cat "$OUT/make-touch-util.plain.out" "$OUT/make-touch-h2.plain.out"
    failures=$((failures + 1))
  fi
  expect "make: nothing left to do" "make: 'prog' is up to date." "$OUT/make-last.plain.out"
}

# ---------------------------------------------------------------------------
check_python() {
  section "python3: 30 stdlib imports, files written, re-read, re-imported"
  if [ -z "$PY" ]; then
    echo "(no python3: skipped)"
    return
  fi
  local d=$WORK/py mode
  cat >"$WORK/imports.py" <<'EOF'
import importlib, sys
names = ["os", "re", "json", "collections", "itertools", "functools", "pathlib", "subprocess",
         "shutil", "tempfile", "argparse", "logging", "datetime", "decimal", "fractions",
         "hashlib", "base64", "csv", "sqlite3", "email.message", "http.client", "urllib.parse",
         "xml.etree.ElementTree", "zipfile", "tarfile", "textwrap", "typing", "dataclasses",
         "statistics", "unittest", "asyncio", "difflib", "pickle", "struct", "uuid"]
for n in names:
    m = importlib.import_module(n)
    print(n, getattr(m, "__file__", "(built-in)"))
for n in ["nosuch_module_rcuwalk", "os.nosuch", "json.nosuch"]:
    try:
        importlib.import_module(n)
        print(n, "imported?!")
    except ImportError as e:
        print(n, type(e).__name__, e)
print(len(sys.modules) > 100)
EOF
  cat >"$WORK/files.py" <<'EOF'
import importlib, os, stat, sys, time
d = sys.argv[1]
os.makedirs(os.path.join(d, "pkg", "sub"))
p = os.path.join(d, "pkg", "data.txt")
print("exists before", os.path.exists(p), os.path.isfile(p), os.access(p, os.F_OK))
with open(p, "w") as f:
    f.write("x" * 100)
st1 = os.stat(p)
print("after write", os.path.exists(p), st1.st_size, stat.filemode(st1.st_mode), st1.st_nlink)
with open(p, "a") as f:
    f.write("y" * 23)
st2 = os.stat(p)
print("after append", st2.st_size, st2.st_mtime_ns >= st1.st_mtime_ns, open(p).read().count("y"))
os.chmod(p, 0o600)
print("after chmod", oct(os.stat(p).st_mode), os.access(p, os.X_OK))
os.rename(p, p + ".old")
print("after rename", os.path.exists(p), os.path.exists(p + ".old"), os.stat(p + ".old").st_size)
os.symlink("data.txt.old", p)
print("symlink", os.path.islink(p), os.stat(p).st_size, os.lstat(p).st_size, os.readlink(p))
os.unlink(p + ".old")
print("dangling", os.path.exists(p), os.path.lexists(p))
os.unlink(p)
print("gone", os.path.lexists(p), sorted(os.listdir(os.path.join(d, "pkg"))))
# a module, imported, changed (same size, later mtime), reloaded: the new one
sys.path.insert(0, d)
m = os.path.join(d, "pkg", "__init__.py")
with open(m, "w") as f:
    f.write("VALUE = 1\n")
import pkg
print("import", pkg.VALUE)
time.sleep(0.02)
with open(m, "w") as f:
    f.write("VALUE = 2\n")
st = os.stat(m)
os.utime(m, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
importlib.invalidate_caches()
importlib.reload(pkg)
print("reload", pkg.VALUE)
for root, dirs, files in os.walk(d):
    dirs.sort()
    print(os.path.relpath(root, d), sorted(files))
EOF
  unset PYTHONDONTWRITEBYTECODE PYTHONPATH PYTHONHOME
  run plain py-imports "$PY" "$WORK/imports.py"
  run shim py-imports "$PY" "$WORK/imports.py"
  compare py-imports
  for mode in plain shim; do
    rm -rf "$d"
    mkdir -p "$d"
    run "$mode" py-files "$PY" "$WORK/files.py" "$d"
  done
  compare py-files
  expect "python: reload sees the new module" "reload 2" "$OUT/py-files.plain.out"
}

# ---------------------------------------------------------------------------
check_git() {
  section "git init/add/commit/status/diff/log"
  if ! command -v git >/dev/null; then
    echo "(no git: skipped)"
    return
  fi
  local d=$WORK/repo mode
  cat >"$WORK/git.sh" <<'EOF'
set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.org GIT_COMMITTER_NAME=a
export GIT_COMMITTER_EMAIL=a@example.org GIT_AUTHOR_DATE="2026-01-01T00:00:00Z"
export GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" GIT_CONFIG_NOSYSTEM=1 HOME=$1/home
mkdir -p "$1/home" "$1/w" && cd "$1/w"
git init -q -b main .
mkdir -p src doc && for i in 1 2 3 4 5; do echo "line $i" > src/f$i.c; done
echo doc > doc/readme; ln -s src/f1.c link; echo '*.o' > .gitignore; touch src/ignored.o
git add -A && git commit -q -m first && git status --porcelain=v1 --branch
echo change >> src/f2.c; rm src/f3.c; echo new > src/f6.c; chmod +x src/f4.c
git status --porcelain=v1 --untracked-files=all; git diff --stat
git add -A && git commit -q -m second && git status --porcelain=v1
git log --oneline --stat; git ls-files -s; git rev-parse HEAD
echo again >> src/f1.c; git stash -q; git status --porcelain=v1; git stash pop -q; git diff
git checkout -q -b other && git rm -q src/f6.c && git commit -q -m third && git checkout -q main
git status --porcelain=v1; ls src; git fsck --no-progress 2>&1 | sort
EOF
  for mode in plain shim; do
    rm -rf "$d"
    mkdir -p "$d"
    run "$mode" git bash "$WORK/git.sh" "$d"
  done
  compare git
  expect "git: ran to the end" "f5.c" "$OUT/git.plain.out"
}

# ---------------------------------------------------------------------------
# A tree for the listing tools: files of several sizes and modes, hard links,
# symlinks (relative, absolute, dangling, a loop, to a directory), a FIFO,
# empty and deep directories, an unreadable and an unsearchable directory.
make_tree() {
  local t=$1 i
  mkdir -p "$t/a/b/c/d/e" "$t/empty" "$t/ro" "$t/noread/in" "$t/nosearch/in" "$t/dir with space"
  for i in 1 2 3 4 5 6 7 8; do head -c $((i * 1000)) /dev/zero >"$t/a/f$i"; done
  echo leaf >"$t/a/b/c/d/e/leaf"
  echo x >"$t/dir with space/file name"
  ln "$t/a/f1" "$t/a/hard1"
  ln -s f2 "$t/a/l_rel"
  ln -s "$t/a/f3" "$t/a/l_abs"
  ln -s nosuch "$t/a/l_dang"
  ln -s l_loop "$t/a/l_loop"
  ln -s b/c "$t/a/l_dir"
  ln -s ../.. "$t/a/b/l_up"
  mkfifo "$t/a/fifo"
  echo secret >"$t/noread/in/file"
  echo secret >"$t/nosearch/in/file"
  chmod 640 "$t/a/f4"
  chmod 755 "$t/a/f5"
  chmod 444 "$t/ro"
  chmod 311 "$t/noread"
  chmod 644 "$t/nosearch"
  touch -d "2001-02-03 04:05:06.123456789" "$t/a/f6"
}

check_listings() {
  section "find, ls -lR, tar c, cp -a, rm -r"
  local t=$WORK/tree mode
  make_tree "$t"
  cd "$WORK" || exit 1
  local findfmt='%p %y %m %n %u %g %s %T@ %C@ %l\n'
  both find-printf find tree -printf "$findfmt"
  both find-L find -L tree -printf "$findfmt"
  both find-tests find tree -type f -newer tree/a/f6 -perm -u+r -name 'f*' -print
  both ls-lR ls -lR --time-style=full-iso tree
  both ls-lRL ls -lRL --time-style=full-iso tree
  both ls-lRc ls -lRc --time-style=full-iso tree
  both ls-dirs ls -ld --time-style=full-iso tree/a/ tree/a/l_dir/ tree/a/l_dir tree/a/f1/ tree/nosuch \
    tree/a/l_dang tree/a/l_loop/ tree/noread/in tree/nosearch/in/file
  both stat-many stat -c '%n %F %a %h %s %Y %Z %N' tree/a/f1 tree/a/l_rel tree/a/l_dang tree/a/fifo \
    tree/a/b/l_up tree/a/b/l_up/a/f2 tree/nosuch tree/a/f1/x tree/a/l_loop
  both stat-L stat -L -c '%n %F %a %h %s %Y %Z' tree/a/l_rel tree/a/l_abs tree/a/l_dir tree/a/l_dang
  both test-ops bash -c 'for p in tree/a/f1 tree/a/f5 tree/a/l_dang tree/a/fifo tree/ro tree/noread \
    tree/nosearch/in tree/a/l_dir/ tree/a/f1/; do echo "$p" $(test -e "$p"; echo $?) $(test -f "$p"; echo $?) \
    $(test -d "$p"; echo $?) $(test -L "$p"; echo $?) $(test -r "$p"; echo $?) $(test -w "$p"; echo $?) \
    $(test -x "$p"; echo $?) $(test -p "$p"; echo $?) $(test -s "$p"; echo $?); done'
  run plain tar tar cf "$WORK/tree.plain.tar" tree
  run shim tar tar cf "$WORK/tree.shim.tar" tree
  compare tar
  same "tar: archive bytes" "$WORK/tree.plain.tar" "$WORK/tree.shim.tar"
  both tar-list tar tvf "$WORK/tree.plain.tar"
  for mode in plain shim; do
    rm -rf "$WORK/copy"
    run "$mode" cp-a cp -a tree "$WORK/copy"
    (cd "$WORK/copy" && find . -printf '%p %y %m %n %u %g %s %T@ %l\n' | sort) >"$OUT/cp-a-result.$mode"
    (cd "$WORK/copy" && ls -lR --time-style=full-iso .) >"$OUT/cp-a-ls.$mode" 2>&1
    chmod -R u+rwx "$WORK/copy"
    run "$mode" rm-r rm -rv "$WORK/copy"
    checks=$((checks + 1))
    if [ -e "$WORK/copy" ]; then
      echo "UNEXPECTED: rm -r ($mode) left $WORK/copy"
      failures=$((failures + 1))
    fi
  done
  compare cp-a
  same "cp -a: the copy" "$OUT/cp-a-result.plain" "$OUT/cp-a-result.shim"
  same "cp -a: ls -lR of the copy" "$OUT/cp-a-ls.plain" "$OUT/cp-a-ls.shim"
  compare rm-r
  expect "rm -r: removed" "removed directory" "$OUT/rm-r.plain.out"
  local nob=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "(not root, or no setpriv: the runs as nobody are skipped)"
  elif ! "${nob[@]}" test -r "$SHIM" -a -x "$WORK"; then
    echo "(nobody cannot read $SHIM: the runs as nobody are skipped)"
  else
    section "find, ls -lR, stat, cp -a as nobody (permission errors)"
    chmod 755 "$WORK"
    both nobody-find "${nob[@]}" find tree -printf "$findfmt"
    both nobody-ls-lR "${nob[@]}" ls -lR --time-style=full-iso tree
    both nobody-stat "${nob[@]}" stat -c '%n %a %s %Y' tree/noread tree/noread/in tree/noread/in/file \
      tree/nosearch tree/nosearch/in tree/nosearch/in/file tree/ro tree/a/f4
    both nobody-test "${nob[@]}" bash -c 'for p in tree/noread/in/file tree/nosearch/in tree/ro \
      tree/a/f4 tree/a/f5; do echo "$p" $(test -e "$p"; echo $?) $(test -r "$p"; echo $?) \
      $(test -w "$p"; echo $?) $(test -x "$p"; echo $?); done'
    mkdir -p "$WORK/nobody" && chown 65534:65534 "$WORK/nobody"
    for mode in plain shim; do
      rm -rf "$WORK/nobody/copy"
      if [ "$mode" = shim ]; then
        LD_PRELOAD=$SHIM RCUWALK_STATS=$STATS "${nob[@]}" cp -a tree "$WORK/nobody/copy" \
          >"$OUT/nobody-cp.$mode.out" 2>"$OUT/nobody-cp.$mode.err"
      else
        "${nob[@]}" cp -a tree "$WORK/nobody/copy" >"$OUT/nobody-cp.$mode.out" 2>"$OUT/nobody-cp.$mode.err"
      fi
      echo $? >"$OUT/nobody-cp.$mode.rc"
      (cd "$WORK/nobody/copy" && find . -printf '%p %y %m %n %s %T@ %l\n' | sort) >"$OUT/nobody-cp-result.$mode"
      rm -rf "$WORK/nobody/copy"
    done
    compare nobody-cp
    same "cp -a as nobody: the copy" "$OUT/nobody-cp-result.plain" "$OUT/nobody-cp-result.shim"
  fi
}

check_compilers
check_make
check_python
check_git
check_listings

saved=0
if [ -f "$STATS" ]; then
  saved=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^saved=/) s += substr($i, 7)} END {print s + 0}' "$STATS")
fi
procs=$(wc -l <"$STATS" 2>/dev/null || echo 0)
echo "real-programs: $checks comparisons, $failures different; shim: $procs stats records, $saved lookups answered from the cache"
if [ "$saved" -eq 0 ]; then
  echo "real-programs: the shim answered nothing from its cache: was it loaded?"
  exit 1
fi
[ "$failures" -eq 0 ]
