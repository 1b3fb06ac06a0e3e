/* SPDX-License-Identifier: MIT */
/*
 * staleness.c - how long an unrelated writer's change takes to become
 * visible through the shim (coherence clause "unrelated writers"), and what
 * strict mode (RCUWALK_STRICT=1) costs per cached stat().
 *
 * Run it under the shim:
 *     build/preload/rcuwalk -- build/examples/rcuwalk_staleness [--markdown]
 *     LD_PRELOAD=$PWD/build/preload/librcuwalk.so build/examples/rcuwalk_staleness
 * It refuses to run (exit 2) when librcuwalk.so is not mapped in it, or when
 * RCUWALK_DISABLE is set.
 *
 * Processes:
 *   driver  - this invocation.  Starts the two measuring processes, sends
 *             them commands over pipes, collects and prints the results.
 *   server  - re-executions of this binary (--server), under the shim, one
 *             with RCUWALK_STRICT unset ("default") and one with
 *             RCUWALK_STRICT=1 ("strict"), both with RCUWALK_RACY_MS=0 (the
 *             racy-timestamp rule would keep no attributes of the files the
 *             writer has just made, so every stat() of them would go to the
 *             kernel and there would be no cached answer to go stale) and
 *             RCUWALK_STATS=<file of their own>.  Each works in its own
 *             directory, so that one's writer wakes no inotify thread of the
 *             other.
 *   writer  - a re-execution of this binary (--writer) with librcuwalk.so
 *             removed from LD_PRELOAD (it checks that it is not mapped),
 *             forked by a server.  The server never waits for it between
 *             changes: it is an unrelated process, and no wait()-family sync
 *             point applies.  It makes each change with one raw syscall.
 *
 * One change (--changes N, default 1000; the ops cycle through --ops, default
 * create,chmod,rename,unlink on the names w/f and w/g):
 *   1. the server stat()s the names the change affects 3 times each through
 *      the shim and checks that they show the state before the change: the
 *      answers are now cached (positive or negative);
 *   2. it sets a "go" word in a shared memfd mapping (futex wake);
 *   3. the writer makes the change (mknodat S_IFREG, fchmodat, renameat or
 *      unlinkat), reads CLOCK_MONOTONIC right after the syscall returned and
 *      publishes that time in the mapping;
 *   4. the server, which spins on the mapping, then stat()s the names in a
 *      tight loop until the answers show the new state, and reads
 *      CLOCK_MONOTONIC after the stat() that showed it.
 *   delay = (4)'s time - (3)'s time: an upper bound of how long the cache
 *   was stale, which includes the poller's own scheduling (a poller that is
 *   descheduled for a while, or sleeps on the cache mutex while the inotify
 *   thread applies the event, sees the change late).  stale = the time at
 *   which the last stat() that still showed the old state began - (3)'s
 *   time (0 when none did): a lower bound.  The change became visible
 *   between the two.  "At first poll": the first stat() after the server
 *   saw (3)'s time already showed the new state.  A change not visible
 *   within --deadline-ms (default 2000) is "never seen": the run fails
 *   (exit 1) and the server stops there.
 *
 * That the stale answers came from the cache: every stat() that showed the
 * old state after the change had returned can only be a cached answer (the
 * kernel already answers the new state), and so are the 2nd and 3rd stat()
 * of each name in step 1.  The server counts these "expected hits" (plus
 * the timed calls of the cost phase); after it exits, the driver reads its
 * RCUWALK_STATS record (pid=...) and requires hits + neg_hits >= expected
 * hits, else the run fails.
 *
 * Strict-mode cost (--reps K, default 11, of --calls M, default 200000):
 * per repetition each server times M raw syscall(SYS_newfstatat) calls and M
 * stat() calls through the shim of one cached file, <scratch>/<mode>/c/file;
 * the two servers alternate which goes first.  Printed: the median ns/call
 * over the repetitions, and the ratios.  A shim without RCUWALK_STRICT gives
 * strict figures equal to the default ones.
 *
 * Options: --changes N, --ops LIST, --deadline-ms MS, --reps K, --calls M,
 *          --dir DIR (where the scratch directory is made; default $TMPDIR
 *          or /tmp), --markdown (print the results as markdown tables),
 *          --trace FILE (one line per change: mode, number, op, the writer's
 *          CLOCK_MONOTONIC time, delay and stale in ns, stale answers seen;
 *          to line up with `perf record -k CLOCK_MONOTONIC -e 'sched:*'`,
 *          whose output must not go to a directory the servers watch, such
 *          as /tmp: its writes would wake their inotify threads).
 * Exit: 0 ok; 1 a change never seen, a cache check or a process failed;
 *       2 usage, or not run under the shim.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PRIME 3               /* stat()s per name before each change */
#define MAX_OPS 16
#define GO_QUIT UINT32_MAX
#define MODE_A 0644
#define MODE_B 0600

enum op { OP_CREATE, OP_CHMOD, OP_RENAME, OP_UNLINK, OP_NR };
static const char *const op_names[OP_NR] = { "create", "chmod", "rename", "unlink" };

/* The mapping shared by a server and its writer (a memfd). */
struct shared {
	_Atomic uint32_t go;   /* server: change number to make (1-based), or GO_QUIT */
	_Atomic uint32_t done; /* writer: last change made */
	int64_t t_mut_ns;      /* writer: CLOCK_MONOTONIC right after the syscall */
	int err;               /* writer: errno of a failed change, else 0 */
};

static volatile uint64_t sink;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("rcuwalk_staleness: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* out = a/b, or die if it does not fit. */
static void join(char *out, size_t n, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + 1 + lb >= n)
		die("path too long: %s/%s", a, b);
	memcpy(out, a, la);
	out[la] = '/';
	memcpy(out + la + 1, b, lb + 1);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long parse_long(const char *opt, const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min) {
		fprintf(stderr, "rcuwalk_staleness: %s: bad value '%s' (want an integer >= %ld)\n",
			opt, s, min);
		exit(2);
	}
	return v;
}

/* Parse "create,chmod,..." into ops[]; check that the cycle is applicable
 * from "no file" (and back: it must end where it starts). */
static int parse_ops(const char *s, enum op *ops)
{
	char buf[256], *save = NULL, *tok;
	int n = 0, f = 0, g = 0;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		for (k = 0; k < OP_NR && strcmp(tok, op_names[k]); k++)
			;
		if (k == OP_NR || n == MAX_OPS)
			return -1;
		ops[n++] = (enum op)k;
	}
	for (int i = 0; i < n; i++) {
		switch (ops[i]) {
		case OP_CREATE: if (f || g) return -1; f = 1; break;
		case OP_CHMOD:  if (!f) return -1; break;
		case OP_RENAME: if (!f || g) return -1; f = 0; g = 1; break;
		case OP_UNLINK: if (!f && !g) return -1; f = g = 0; break;
		default: return -1;
		}
	}
	return n > 0 && !f && !g ? n : -1;
}

static int shim_mapped(void)
{
	char line[4096];
	int found = 0;
	FILE *m = fopen("/proc/self/maps", "r");

	if (!m)
		return 0;
	while (fgets(line, sizeof(line), m))
		if (strstr(line, "/librcuwalk"))
			found = 1;
	fclose(m);
	return found;
}

/* environ with `unset` removed and the `set` entries ("NAME=value") added;
 * strip_shim: librcuwalk entries removed from LD_PRELOAD.  Free the array
 * and *owned (the new LD_PRELOAD entry, or NULL). */
static char **make_env(const char *const *set, const char *const *unset, int strip_shim,
		       char **owned)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 8, sizeof(*env));
	if (!env)
		die("out of memory");
	*owned = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *e = environ[i];
		int drop = 0;

		for (const char *const *u = unset; *u; u++) {
			size_t l = strlen(*u);

			if (!strncmp(e, *u, l) && e[l] == '=')
				drop = 1;
		}
		for (const char *const *s = set; *s; s++) {
			size_t l = strcspn(*s, "=") + 1;

			if (!strncmp(e, *s, l))
				drop = 1;
		}
		if (strip_shim && !strncmp(e, "LD_PRELOAD=", 11)) {
			/* keep the other entries (a sanitizer runtime...) */
			char *out = malloc(strlen(e) + 1), *save = NULL, *tok, *copy = strdup(e + 11);
			size_t ol = 11;

			if (!out || !copy)
				die("out of memory");
			memcpy(out, "LD_PRELOAD=", 11);
			for (tok = strtok_r(copy, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
				if (strstr(tok, "librcuwalk"))
					continue;
				if (ol > 11)
					out[ol++] = ':';
				strcpy(out + ol, tok);
				ol += strlen(tok);
			}
			out[ol] = 0;
			free(copy);
			if (ol > 11)
				env[k++] = *owned = out;
			else
				free(out);
			continue;
		}
		if (!drop)
			env[k++] = (char *)e;
	}
	for (const char *const *s = set; *s; s++)
		env[k++] = (char *)*s;
	env[k] = NULL;
	return env;
}

/* In a child about to exec: die with the parent (a failed server must not
 * leave a writer blocked forever, nor a failed driver its servers). */
static void die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
}

static int futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return (int)syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/* ======================================================================== */
/* Writer: not under the shim; raw syscalls only on the scratch directory.  */

static int writer_main(int argc, char **argv)
{
	struct shared *sh;
	enum op ops[MAX_OPS];
	int nops, memfd, dfd;
	long n;
	mode_t mode = MODE_A;

	if (argc != 6)
		die("writer: bad arguments");
	if (shim_mapped())
		die("writer: librcuwalk.so is mapped in the writer; it must not be");
	memfd = (int)parse_long("writer fd", argv[2], 0);
	nops = parse_ops(argv[4], ops);
	n = parse_long("writer changes", argv[5], 1);
	if (nops < 0)
		die("writer: bad ops");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (sh == MAP_FAILED)
		die("writer: mmap: %s", strerror(errno));
	dfd = (int)syscall(SYS_openat, AT_FDCWD, argv[3], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		die("writer: open %s: %s", argv[3], strerror(errno));
	for (uint32_t i = 1; i <= (uint32_t)n; i++) {
		uint32_t go;
		long r = 0;
		int64_t t;

		while ((go = atomic_load(&sh->go)) != i && go != GO_QUIT)
			futex(&sh->go, FUTEX_WAIT, go, NULL);
		if (go == GO_QUIT)
			break;
		switch (ops[(i - 1) % (uint32_t)nops]) {
		case OP_CREATE:
			mode = MODE_A;
			r = syscall(SYS_mknodat, dfd, "f", (mode_t)(S_IFREG | mode), 0);
			break;
		case OP_CHMOD:
			mode = mode == MODE_A ? MODE_B : MODE_A;
			r = syscall(SYS_fchmodat, dfd, "f", mode);
			break;
		case OP_RENAME:
			r = syscall(SYS_renameat, dfd, "f", dfd, "g");
			break;
		case OP_UNLINK:
			r = syscall(SYS_unlinkat, dfd, "f", 0);
			if (r < 0 && errno == ENOENT)
				r = syscall(SYS_unlinkat, dfd, "g", 0);
			break;
		default:
			break;
		}
		t = now_ns();
		sh->err = r < 0 ? errno : 0;
		sh->t_mut_ns = t;
		atomic_store(&sh->done, i);
		if (r < 0)
			break;
	}
	return 0;
}

/* ======================================================================== */
/* Server: under the shim.  Commands on stdin, one result line on stdout.   */

static char srv_dir[PATH_MAX];     /* <scratch>/<name> */
static unsigned long expected_hits; /* stat()s that can only be cache hits */

/* Answer of stat(path) through the shim, reduced to what a change alters. */
struct view {
	int exists; /* 1, or 0 for ENOENT */
	mode_t mode;
};

static void look(const char *path, struct view *v)
{
	struct stat st;

	if (stat(path, &st) == 0) {
		v->exists = 1;
		v->mode = st.st_mode & 07777;
		sink += (uint64_t)st.st_ino;
	} else if (errno == ENOENT) {
		v->exists = 0;
		v->mode = 0;
	} else {
		die("server: stat %s: %s", path, strerror(errno));
	}
}

/* One change as the server saw it (times in ns, CLOCK_MONOTONIC). */
struct change {
	enum op op;
	int64_t delay;  /* end of the first stat() that showed it - t_mut */
	int64_t stale;  /* start of the last stat() that did not - t_mut; 0 if none */
	long polls;     /* stat() rounds that did not show it */
	int64_t t_mut;  /* the writer's time right after its syscall returned */
};

/* The state of the names: f exists (mode), g exists. */
struct state {
	int f, g;
	mode_t fmode;
};

static int shows(const struct view *vf, const struct view *vg, const struct state *s, int want_g)
{
	if (vf->exists != s->f || (s->f && vf->mode != s->fmode))
		return 0;
	return !want_g || vg->exists == s->g;
}

/* "stale N DEADLINE_MS OPS": reply "stale done=D seen=S first=F abort=A"
 * then one line per seen change: "<op> <delay_ns> <stale_ns> <stale_polls> <t_mut_ns>". */
static void srv_stale(long n, long deadline_ms, const char *opstr)
{
	char wdir[PATH_MAX], pf[PATH_MAX], pg[PATH_MAX], fdstr[16], nstr[24];
	enum op ops[MAX_OPS];
	int nops = parse_ops(opstr, ops), memfd;
	struct shared *sh;
	struct state cur = { 0, 0, 0 };
	long seen = 0, first = 0, aborted = 0, i;
	int64_t deadline = (int64_t)deadline_ms * 1000000;
	char *line_ops;
	struct change *ch;
	pid_t w, me;
	int status;
	const char *const no_set[] = { NULL }, *const no_unset[] = { NULL };
	char **wenv, *wenv_owned;

	if (nops < 0)
		die("server: bad ops");
	join(wdir, sizeof(wdir), srv_dir, "w");
	join(pf, sizeof(pf), wdir, "f");
	join(pg, sizeof(pg), wdir, "g");
	if (syscall(SYS_mkdirat, AT_FDCWD, wdir, 0755) != 0 && errno != EEXIST)
		die("server: mkdir %s: %s", wdir, strerror(errno));
	syscall(SYS_unlinkat, AT_FDCWD, pf, 0);
	syscall(SYS_unlinkat, AT_FDCWD, pg, 0);

	memfd = (int)syscall(SYS_memfd_create, "rcuwalk-staleness", 0);
	if (memfd < 0 || ftruncate(memfd, sizeof(*sh)) != 0)
		die("server: memfd: %s", strerror(errno));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (sh == MAP_FAILED)
		die("server: mmap: %s", strerror(errno));
	memset(sh, 0, sizeof(*sh));
	ch = calloc((size_t)n, sizeof(*ch));
	if (!ch)
		die("out of memory");

	snprintf(fdstr, sizeof(fdstr), "%d", memfd);
	snprintf(nstr, sizeof(nstr), "%ld", n);
	line_ops = strdup(opstr);
	wenv = make_env(no_set, no_unset, 1, &wenv_owned);
	me = getpid();
	w = fork();
	if (w < 0)
		die("server: fork: %s", strerror(errno));
	if (w == 0) {
		char *wargv[] = { (char *)"rcuwalk_staleness", (char *)"--writer", fdstr, wdir,
				  line_ops, nstr, NULL };

		die_with_parent(me);
		execve("/proc/self/exe", wargv, wenv);
		_exit(127);
	}
	free(wenv);
	free(wenv_owned);

	for (i = 0; i < n; i++) {
		enum op op = ops[i % nops];
		struct state next = cur;
		struct view vf, vg;
		int want_g = op == OP_RENAME || (op == OP_UNLINK && cur.g);
		const char *pm = op == OP_UNLINK && cur.g ? pg : pf; /* the name polled alone */
		int64_t t0, t, t_mut, t_start, last_stale = -1;
		long polls = 0;

		switch (op) {
		case OP_CREATE: next.f = 1; next.fmode = MODE_A; break;
		case OP_CHMOD:  next.fmode = cur.fmode == MODE_A ? MODE_B : MODE_A; break;
		case OP_RENAME: next.f = 0; next.g = 1; next.fmode = 0; break;
		case OP_UNLINK: next.f = next.g = 0; next.fmode = 0; break;
		default: break;
		}
		/* 1. cache the state before the change */
		for (int k = 0; k < PRIME; k++) {
			look(pf, &vf);
			look(pg, &vg);
			if (!shows(&vf, &vg, &cur, 1))
				die("server: change %ld (%s): before it, stat shows f=%d/%o g=%d, expected f=%d/%o g=%d",
				    i + 1, op_names[op], vf.exists, (unsigned)vf.mode, vg.exists,
				    cur.f, (unsigned)cur.fmode, cur.g);
		}
		expected_hits += 2 * (PRIME - 1);
		/* 2. go */
		atomic_store(&sh->go, (uint32_t)(i + 1));
		futex(&sh->go, FUTEX_WAKE, 1, NULL);
		/* 3. wait for the writer's timestamp */
		t0 = now_ns();
		while (atomic_load(&sh->done) != (uint32_t)(i + 1)) {
			if (now_ns() - t0 > 10 * (int64_t)1000000000)
				die("server: writer did not make change %ld within 10 s", i + 1);
		}
		if (sh->err)
			die("server: writer: change %ld (%s): %s", i + 1, op_names[op], strerror(sh->err));
		t_mut = sh->t_mut_ns;
		/* 4. poll until the new state shows; t_start: when this poll
		 * began (the end of the previous one) */
		t_start = now_ns();
		for (;;) {
			if (want_g) {
				look(pf, &vf);
				look(pg, &vg);
			} else {
				look(pm, &vf);
				vg.exists = 0;
			}
			t = now_ns();
			if (want_g ? shows(&vf, &vg, &next, 1)
				   : (pm == pg ? !vf.exists
					       : vf.exists == next.f && (!next.f || vf.mode == next.fmode)))
				break;
			polls++;
			last_stale = t_start;
			t_start = t;
			if (t - t_mut > deadline)
				break;
		}
		if (t - t_mut > deadline) {
			aborted = 1;
			fprintf(stderr, "rcuwalk_staleness: change %ld (%s) not visible within %ld ms\n",
				i + 1, op_names[op], deadline_ms);
			break;
		}
		/* A stale answer after the change returned is a cached one.  With
		 * two names polled, a poll may show one name new and the other
		 * stale: count one expected hit per poll, not two. */
		expected_hits += (unsigned long)polls;
		ch[seen].op = op;
		ch[seen].delay = t - t_mut;
		ch[seen].stale = last_stale < 0 ? 0 : last_stale - t_mut;
		ch[seen].polls = polls;
		ch[seen].t_mut = t_mut;
		first += polls == 0;
		seen++;
		cur = next;
	}
	atomic_store(&sh->go, GO_QUIT);
	futex(&sh->go, FUTEX_WAKE, 1, NULL);
	if (waitpid(w, &status, 0) != w || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("server: writer failed (status 0x%x)", status);
	printf("stale done=%ld seen=%ld first=%ld abort=%ld\n", aborted ? i + 1 : n, seen, first,
	       aborted);
	for (long k = 0; k < seen; k++)
		printf("%s %lld %lld %ld %lld\n", op_names[ch[k].op], (long long)ch[k].delay,
		       (long long)ch[k].stale, ch[k].polls, (long long)ch[k].t_mut);
	fflush(stdout);
	syscall(SYS_unlinkat, AT_FDCWD, pf, 0);
	syscall(SYS_unlinkat, AT_FDCWD, pg, 0);
	munmap(sh, sizeof(*sh));
	close(memfd);
	free(ch);
	free(line_ops);
}

/* "cost M": reply "cost <raw ns/call> <shim ns/call>" for one repetition. */
static void srv_cost(long m)
{
	char d1[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int64_t t0, t1, t2;

	join(d1, sizeof(d1), srv_dir, "c");
	join(path, sizeof(path), d1, "file");
	if (syscall(SYS_mkdirat, AT_FDCWD, d1, 0755) != 0 && errno != EEXIST)
		die("server: mkdir %s: %s", d1, strerror(errno));
	if (syscall(SYS_mknodat, AT_FDCWD, path, (mode_t)(S_IFREG | 0644), 0) != 0 && errno != EEXIST)
		die("server: create %s: %s", path, strerror(errno));
	for (int k = 0; k < 1000; k++) /* warm up: the first is a miss */
		if (stat(path, &st) != 0)
			die("server: stat %s: %s", path, strerror(errno));
	t0 = now_ns();
	for (long k = 0; k < m; k++) {
		if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0)
			die("server: raw stat %s: %s", path, strerror(errno));
		sink += (uint64_t)st.st_ino;
	}
	t1 = now_ns();
	for (long k = 0; k < m; k++) {
		if (stat(path, &st) != 0)
			die("server: stat %s: %s", path, strerror(errno));
		sink += (uint64_t)st.st_ino;
	}
	t2 = now_ns();
	expected_hits += (unsigned long)m;
	printf("cost %.2f %.2f\n", (double)(t1 - t0) / (double)m, (double)(t2 - t1) / (double)m);
	fflush(stdout);
}

static int server_main(int argc, char **argv)
{
	char line[512];

	if (argc != 3)
		die("server: bad arguments");
	if (!shim_mapped())
		die("server: librcuwalk.so is not mapped");
	snprintf(srv_dir, sizeof(srv_dir), "%s", argv[2]);
	if (syscall(SYS_mkdirat, AT_FDCWD, srv_dir, 0755) != 0 && errno != EEXIST)
		die("server: mkdir %s: %s", srv_dir, strerror(errno));
	while (fgets(line, sizeof(line), stdin)) {
		long a, b;
		char ops[256];

		if (sscanf(line, "stale %ld %ld %255s", &a, &b, ops) == 3) {
			srv_stale(a, b, ops);
		} else if (sscanf(line, "cost %ld", &a) == 1) {
			srv_cost(a);
		} else if (!strncmp(line, "quit", 4)) {
			printf("bye pid=%d expected_hits=%lu\n", (int)getpid(), expected_hits);
			fflush(stdout);
			return 0; /* the shim's destructor writes the stats record */
		} else {
			die("server: unknown command: %s", line);
		}
	}
	return 1;
}

/* ======================================================================== */
/* Driver                                                                   */

static char g_scratch[PATH_MAX]; /* the driver's, for driver_cleanup() */
static pid_t g_server[2];        /* servers not yet reaped */

struct server {
	const char *name;
	int idx;
	pid_t pid;
	FILE *to, *from;
	char stats[PATH_MAX];
	/* results */
	long done, seen, first, aborted;
	struct change *ch; /* seen entries */
	long stale_polls;
	double raw[64], shim[64];
	int nrep;
	unsigned long expected_hits, saved, misses, lookups, passthrough;
	int have_record;
};

static void start_server(struct server *s, const char *scratch, int strict)
{
	int to[2], from[2];
	char dir[PATH_MAX];
	static char stats_env[2][PATH_MAX + 16];
	const char *set[5], *const unset[] = { "RCUWALK_STRICT", NULL };
	char **env, *env_owned;
	pid_t me;

	snprintf(dir, sizeof(dir), "%s/%s", scratch, s->name);
	snprintf(s->stats, sizeof(s->stats), "%s/stats/%s", scratch, s->name);
	snprintf(stats_env[strict], sizeof(stats_env[0]), "RCUWALK_STATS=%s", s->stats);
	set[0] = "RCUWALK_RACY_MS=0";
	set[1] = "RCUWALK_WARMUP=0"; /* the cache from the server's first lookup */
	set[2] = stats_env[strict];
	set[3] = strict ? "RCUWALK_STRICT=1" : NULL;
	set[4] = NULL;
	env = make_env(set, unset, 0, &env_owned);
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	me = getpid();
	s->pid = fork();
	if (s->pid < 0)
		die("fork: %s", strerror(errno));
	if (s->pid == 0) {
		char *argv[] = { (char *)"rcuwalk_staleness", (char *)"--server", dir, NULL };

		die_with_parent(me);
		dup2(to[0], 0);
		dup2(from[1], 1);
		execve("/proc/self/exe", argv, env);
		_exit(127);
	}
	g_server[s->idx] = s->pid;
	free(env);
	free(env_owned);
	close(to[0]);
	close(from[1]);
	s->to = fdopen(to[1], "w");
	s->from = fdopen(from[0], "r");
	if (!s->to || !s->from)
		die("fdopen: %s", strerror(errno));
}

static void send_cmd(struct server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void send_cmd(struct server *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(s->to, fmt, ap);
	va_end(ap);
	fflush(s->to);
}

static void get_line(struct server *s, char *buf, size_t n)
{
	if (!fgets(buf, (int)n, s->from))
		die("%s server: no answer (it failed: see above)", s->name);
}

static void run_stale(struct server *s, long n, long deadline_ms, const char *ops, FILE *trace)
{
	char line[256];

	send_cmd(s, "stale %ld %ld %s\n", n, deadline_ms, ops);
	get_line(s, line, sizeof(line));
	if (sscanf(line, "stale done=%ld seen=%ld first=%ld abort=%ld", &s->done, &s->seen,
		   &s->first, &s->aborted) != 4)
		die("%s server: bad answer: %s", s->name, line);
	s->ch = calloc((size_t)s->seen + 1, sizeof(*s->ch));
	if (!s->ch)
		die("out of memory");
	for (long k = 0; k < s->seen; k++) {
		char name[32];
		long long d, st, tm;
		long polls;
		int o;

		get_line(s, line, sizeof(line));
		if (sscanf(line, "%31s %lld %lld %ld %lld", name, &d, &st, &polls, &tm) != 5)
			die("%s server: bad answer: %s", s->name, line);
		if (trace)
			fprintf(trace, "%s %ld %s %lld %lld %lld %ld\n", s->name, k + 1, name, tm, d, st,
				polls);
		for (o = 0; o < OP_NR && strcmp(name, op_names[o]); o++)
			;
		s->ch[k].op = (enum op)o;
		s->ch[k].delay = d;
		s->ch[k].stale = st;
		s->ch[k].polls = polls;
		s->ch[k].t_mut = tm;
		s->stale_polls += polls;
	}
}

static void run_cost(struct server *s, long m)
{
	char line[256];

	send_cmd(s, "cost %ld\n", m);
	get_line(s, line, sizeof(line));
	if (sscanf(line, "cost %lf %lf", &s->raw[s->nrep], &s->shim[s->nrep]) != 2)
		die("%s server: bad answer: %s", s->name, line);
	s->nrep++;
}

/* The server's RCUWALK_STATS records: sum those of its pid. */
static void read_record(struct server *s)
{
	char rec[2048];
	FILE *f = fopen(s->stats, "r");

	if (!f)
		return;
	while (fgets(rec, sizeof(rec), f)) {
		const char *p = strstr(rec, "pid=");
		unsigned long long v;
		const char *q;

		if (strncmp(rec, "rcuwalk-stats v1 ", 17) || !p || atoi(p + 4) != s->pid)
			continue;
		s->have_record = 1;
#define FIELD(key, dst)                                                      \
	if ((q = strstr(rec, " " key "=")) && sscanf(q + strlen(key) + 2, "%llu", &v) == 1) \
		dst += v;
		FIELD("saved", s->saved)
		FIELD("misses", s->misses)
		FIELD("lookups", s->lookups)
		FIELD("passthrough", s->passthrough)
#undef FIELD
	}
	fclose(f);
}

static void stop_server(struct server *s)
{
	char line[256];
	int pid, status;

	send_cmd(s, "quit\n");
	get_line(s, line, sizeof(line));
	if (sscanf(line, "bye pid=%d expected_hits=%lu", &pid, &s->expected_hits) != 2)
		die("%s server: bad answer: %s", s->name, line);
	fclose(s->to);
	fclose(s->from);
	pid = (int)waitpid(s->pid, &status, 0);
	g_server[s->idx] = 0;
	if (pid != s->pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("%s server exited with status 0x%x", s->name, status);
	read_record(s);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double t[64];

	memcpy(t, v, sizeof(double) * (size_t)n);
	qsort(t, (size_t)n, sizeof(double), cmp_dbl);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

struct dist {
	long n, first;              /* changes; of which seen at the first poll */
	double p50, p99, max, mean; /* µs */
};

/* Nearest-rank percentiles over the changes of op k (-1: all) of their
 * delay (stale == 0) or of how long after the change a stale answer was
 * still served (stale == 1). */
static struct dist distribution(const struct server *s, int k, int stale)
{
	struct dist d = { 0, 0, 0, 0, 0, 0 };
	int64_t *v = malloc(sizeof(*v) * ((size_t)s->seen + 1));
	double sum = 0;

	if (!v)
		die("out of memory");
	for (long i = 0; i < s->seen; i++)
		if (k < 0 || (int)s->ch[i].op == k) {
			v[d.n] = stale ? s->ch[i].stale : s->ch[i].delay;
			sum += (double)v[d.n++];
			d.first += s->ch[i].polls == 0;
		}
	if (d.n) {
		qsort(v, (size_t)d.n, sizeof(*v), cmp_i64);
		d.p50 = (double)v[(d.n * 50 + 99) / 100 - 1] / 1e3;
		d.p99 = (double)v[(d.n * 99 + 99) / 100 - 1] / 1e3;
		d.max = (double)v[d.n - 1] / 1e3;
		d.mean = sum / (double)d.n / 1e3;
	}
	free(v);
	return d;
}

static const char *fs_name(const char *path)
{
	static char buf[32];
	struct statfs sf;

	if (statfs(path, &sf) != 0)
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53: return "ext4";
	case 0x01021994: return "tmpfs";
	case 0x58465342: return "xfs";
	case 0x9123683E: return "btrfs";
	case 0x794c7630: return "overlayfs";
	default:
		snprintf(buf, sizeof(buf), "0x%lx", (unsigned long)sf.f_type);
		return buf;
	}
}

/* Path components of DIR/x/c/file. */
static int components(const char *dir)
{
	int n = 3;

	for (const char *p = dir; *p; p++)
		if (*p != '/' && (p == dir || p[-1] == '/'))
			n++;
	return n;
}

/* The 1-minute load average, as text. */
static const char *loadavg(void)
{
	static char buf[32];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/loadavg", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return "?";
	buf[n] = 0;
	buf[strcspn(buf, " ")] = 0;
	return buf;
}

static void usage(FILE *f)
{
	fputs("usage: rcuwalk -- rcuwalk_staleness [--changes N] [--ops LIST] [--deadline-ms MS]\n"
	      "                                    [--reps K] [--calls M] [--dir DIR] [--markdown]\n"
	      "                                    [--trace FILE]\n"
	      "  LIST: comma-separated create,chmod,rename,unlink (a cycle from and back to no file;\n"
	      "        default create,chmod,rename,unlink)\n",
	      f);
}

static void rm_rf_scratch(const char *scratch)
{
	static const char *const sub[] = { "default/w/f", "default/w/g", "default/w",
					   "default/c/file", "default/c", "default",
					   "strict/w/f", "strict/w/g", "strict/w",
					   "strict/c/file", "strict/c", "strict",
					   "stats/default", "stats/strict",
					   /* the shim's timing samples beside each record */
					   "stats/default.samples", "stats/strict.samples", "stats", NULL };
	char p[PATH_MAX];

	for (int i = 0; sub[i]; i++) {
		join(p, sizeof(p), scratch, sub[i]);
		if (syscall(SYS_unlinkat, AT_FDCWD, p, 0) != 0)
			syscall(SYS_unlinkat, AT_FDCWD, p, AT_REMOVEDIR);
	}
	syscall(SYS_unlinkat, AT_FDCWD, scratch, AT_REMOVEDIR);
}

/* The driver's exit, also through die(): servers killed (their writers die
 * with them), scratch directory removed. */
static void driver_cleanup(void)
{
	for (int k = 0; k < 2; k++)
		if (g_server[k] > 0) {
			kill(g_server[k], SIGKILL);
			waitpid(g_server[k], NULL, 0);
		}
	if (g_scratch[0])
		rm_rf_scratch(g_scratch);
}

int main(int argc, char **argv)
{
	long changes = 1000, deadline_ms = 2000, reps = 11, calls = 200000;
	const char *ops = "create,chmod,rename,unlink", *base = getenv("TMPDIR");
	int markdown = 0, failed = 0;
	FILE *trace = NULL;
	enum op opv[MAX_OPS];
	char scratch[PATH_MAX], p[PATH_MAX];
	struct server srv[2] = { { .name = "default", .idx = 0 }, { .name = "strict", .idx = 1 } };
	struct utsname un;
	time_t now;
	char date[64];

	if (argc > 1 && !strcmp(argv[1], "--writer"))
		return writer_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--server"))
		return server_main(argc, argv);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--markdown")) {
			markdown = 1;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--changes"))
			changes = parse_long(a, v, 1);
		else if (!strcmp(a, "--deadline-ms"))
			deadline_ms = parse_long(a, v, 1);
		else if (!strcmp(a, "--reps"))
			reps = parse_long(a, v, 1);
		else if (!strcmp(a, "--calls"))
			calls = parse_long(a, v, 1);
		else if (!strcmp(a, "--ops"))
			ops = v;
		else if (!strcmp(a, "--dir"))
			base = v;
		else if (!strcmp(a, "--trace")) {
			trace = fopen(v, "w");
			if (!trace) {
				fprintf(stderr, "rcuwalk_staleness: --trace %s: %s\n", v, strerror(errno));
				return 2;
			}
		}
		else {
			usage(stderr);
			return 2;
		}
	}
	if (reps > 64) {
		fputs("rcuwalk_staleness: --reps: at most 64\n", stderr);
		return 2;
	}
	if (parse_ops(ops, opv) < 0) {
		fprintf(stderr, "rcuwalk_staleness: --ops %s: not a cycle of create,chmod,rename,unlink "
				"that starts and ends with no file\n", ops);
		return 2;
	}
	if (!shim_mapped()) {
		fputs("rcuwalk_staleness: librcuwalk.so is not preloaded in this process: run it as\n"
		      "  rcuwalk -- rcuwalk_staleness ...   or\n"
		      "  LD_PRELOAD=/path/to/librcuwalk.so rcuwalk_staleness ...\n", stderr);
		return 2;
	}
	if (getenv("RCUWALK_DISABLE") && *getenv("RCUWALK_DISABLE") &&
	    strcmp(getenv("RCUWALK_DISABLE"), "0")) {
		fputs("rcuwalk_staleness: RCUWALK_DISABLE is set: there is no cache to measure\n", stderr);
		return 2;
	}
	if (!base || !*base)
		base = "/tmp";
	if (strlen(base) > 1024) {
		fputs("rcuwalk_staleness: --dir: name too long\n", stderr);
		return 2;
	}
	snprintf(scratch, sizeof(scratch), "%s/rcuwalk-stale-XXXXXX", base);
	if (!mkdtemp(scratch))
		die("mkdtemp %s: %s", scratch, strerror(errno));
	strcpy(g_scratch, scratch);
	atexit(driver_cleanup);
	join(p, sizeof(p), scratch, "stats");
	if (mkdir(p, 0755) != 0)
		die("mkdir %s: %s", p, strerror(errno));

	signal(SIGPIPE, SIG_IGN);
	start_server(&srv[0], scratch, 0);
	start_server(&srv[1], scratch, 1);
	/* One after the other: a second poller would take the CPU the first
	 * one's inotify thread needs (2 cores here). */
	for (int k = 0; k < 2; k++)
		run_stale(&srv[k], changes, deadline_ms, ops, trace);
	if (trace)
		fclose(trace);
	for (long r = 0; r < reps; r++) {
		run_cost(&srv[r % 2], calls);
		run_cost(&srv[1 - r % 2], calls);
	}
	for (int k = 0; k < 2; k++)
		stop_server(&srv[k]);

	now = time(NULL);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	uname(&un);
	{
		double raw_all[128];
		int nr = 0;
		double med_raw, med[2];
		struct dist d[2], st[2];

		for (int k = 0; k < 2; k++) {
			for (int r = 0; r < srv[k].nrep; r++)
				raw_all[nr++] = srv[k].raw[r];
			med[k] = median(srv[k].shim, srv[k].nrep);
			d[k] = distribution(&srv[k], -1, 0);
			st[k] = distribution(&srv[k], -1, 1);
		}
		med_raw = median(raw_all, nr);

		if (markdown) {
			printf("%ld changes (%s) by an unrelated process in a directory on %s, polled "
			       "with stat() through the shim; %s, %ld CPUs, load %s, kernel %s.\n\n",
			       changes, ops, fs_name(scratch), date, sysconf(_SC_NPROCESSORS_ONLN),
			       loadavg(), un.release);
			printf("| mode | changes seen | at first poll | delay p50 µs | p99 µs | max µs "
			       "| mean µs | stale answer served until, p99 / max µs |\n");
			printf("|---|---|---|---|---|---|---|---|\n");
			for (int k = 0; k < 2; k++)
				printf("| %s | %ld / %ld | %ld | %.1f | %.1f | %.1f | %.1f | %.1f / %.1f |\n",
				       k ? "`RCUWALK_STRICT=1`" : "default", srv[k].seen, changes,
				       d[k].first, d[k].p50, d[k].p99, d[k].max, d[k].mean, st[k].p99,
				       st[k].max);
			printf("\nCost of a cached `stat()` (%d components), median of %ld reps × %ld calls:\n\n",
			       components(scratch), reps, calls);
			printf("| call | ns/call | vs raw |\n|---|---|---|\n");
			printf("| raw `syscall(SYS_newfstatat)` | %.1f | 1.000 |\n", med_raw);
			printf("| `stat()` through the shim | %.1f | %.3f |\n", med[0], med[0] / med_raw);
			printf("| `stat()` through the shim, `RCUWALK_STRICT=1` | %.1f | %.3f |\n", med[1],
			       med[1] / med_raw);
			printf("\nstrict / default = %.2f (%+.1f ns per hit)\n", med[1] / med[0],
			       med[1] - med[0]);
		} else {
			printf("rcuwalk_staleness: %ld changes (%s) in %s (%s), deadline %ld ms; %s, "
			       "load %s\n", changes, ops, scratch, fs_name(scratch), deadline_ms, date,
			       loadavg());
			printf("%-8s %-7s %5s %5s | %9s %9s %9s %9s | %9s %9s\n", "", "", "", "at 1st",
			       "delay:", "", "", "", "stale:", "");
			printf("%-8s %-7s %5s %5s | %9s %9s %9s %9s | %9s %9s\n", "mode", "op", "seen",
			       "poll", "p50 us", "p99 us", "max us", "mean us", "p99 us", "max us");
			for (int k = 0; k < 2; k++) {
				for (int o = -1; o < OP_NR; o++) {
					struct dist x = distribution(&srv[k], o, 0);
					struct dist y = distribution(&srv[k], o, 1);

					if (o >= 0 && !x.n)
						continue;
					printf("%-8s %-7s %5ld %5ld | %9.1f %9.1f %9.1f %9.1f | %9.1f %9.1f\n",
					       srv[k].name, o < 0 ? "all" : op_names[o], x.n, x.first,
					       x.p50, x.p99, x.max, x.mean, y.p99, y.max);
				}
			}
			printf("delay: from the writer's syscall's return to the end of the first stat() "
			       "that showed the change;\nstale: until the start of the last stat() that "
			       "did not (0 when none did); stale answers seen: %ld default, %ld strict\n",
			       srv[0].stale_polls, srv[1].stale_polls);
			printf("cost of a cached stat() (%d components; median of %ld reps x %ld calls):\n",
			       components(scratch), reps, calls);
			printf("  raw syscall %8.1f ns\n", med_raw);
			printf("  shim        %8.1f ns  (%.3f x raw)\n", med[0], med[0] / med_raw);
			printf("  shim strict %8.1f ns  (%.3f x raw; strict/default %.2f, %+.1f ns)\n",
			       med[1], med[1] / med_raw, med[1] / med[0], med[1] - med[0]);
		}
	}

	for (int k = 0; k < 2; k++) {
		struct server *s = &srv[k];

		if (s->aborted || s->seen != changes) {
			fprintf(stderr, "rcuwalk_staleness: %s: %ld of %ld changes seen (deadline %ld ms)\n",
				s->name, s->seen, changes, deadline_ms);
			failed = 1;
		}
		if (!s->have_record) {
			fprintf(stderr, "rcuwalk_staleness: %s: no stats record for pid %d in %s\n",
				s->name, (int)s->pid, s->stats);
			failed = 1;
		} else if (s->saved < s->expected_hits) {
			fprintf(stderr, "rcuwalk_staleness: %s: the shim answered %lu lookups from its cache, "
					"fewer than the %lu stat()s that can only be cache hits\n",
				s->name, s->saved, s->expected_hits);
			failed = 1;
		}
		if (!markdown || failed)
			fprintf(markdown ? stderr : stdout,
				"%s: cache check: %lu answered from the cache (hits+neg_hits) >= %lu expected "
				"hits: %s (lookups %lu, misses %lu, passthrough %lu)\n",
				s->name, s->saved, s->expected_hits,
				s->have_record && s->saved >= s->expected_hits ? "ok" : "FAILED", s->lookups,
				s->misses, s->passthrough);
		free(s->ch);
	}
	return failed; /* driver_cleanup() removes the scratch directory */
}
