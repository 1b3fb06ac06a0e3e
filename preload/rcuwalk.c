/* SPDX-License-Identifier: MIT */
/*
 * rcuwalk - the launcher: `rcuwalk [options] [--] command [args...]` runs
 * command with librcuwalk.so in LD_PRELOAD.
 *
 * What it guarantees (tests/launcher/test_launcher.c checks each):
 *  - LD_PRELOAD keeps what was there, and the library is not added twice
 *    (nested launchers).  It is appended last: a sanitizer runtime that must
 *    come first stays first, and other interposers (fakeroot, ...) stay in
 *    front of it, so that they see the cache as libc.
 *  - The library is found relative to the launcher: next to it (build tree:
 *    build/preload/) or in the install's library directory (../lib...).
 *    When it sits in <prefix>/<$LIB>/, where $LIB is the dynamic loader's
 *    own expansion (verified at configure time), LD_PRELOAD names it
 *    <prefix>/$LIB/librcuwalk.so: a 32-bit child then loads the 32-bit stub
 *    installed next to it instead of printing an ld.so error.
 *  - A library path with ':' or ' ' (a checkout in "My Projects/") goes
 *    into LD_PRELOAD through a symbolic link in /tmp/rcuwalk-links.<euid>/
 *    (ldlink.h), made or checked before the command runs and left in place
 *    for the processes it starts later; links whose directory is gone are
 *    removed then.
 *  - Without --stats the launcher execs the command: same pid, same
 *    signals, same exit status.  With --stats it forks, waits, prints one
 *    summary, then exits with the command's status or dies by its signal.
 *  - It writes nothing to stdout/stderr except what was asked (--help,
 *    --version, --stats without FILE, --report) and errors that stop the
 *    command from running at all (bad option, library missing, command not
 *    found), like env(1).  Diagnostics go to --log=FILE only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/prctl.h>
#include <x86intrin.h>
#endif

#include "cost.h"
#include "inval.h"
#include "ldlink.h"
#include "preload.h"
#include "stats.h"

#define LIBNAME "librcuwalk.so"
#ifndef RCUWALK_VERSION
#define RCUWALK_VERSION "unknown"
#endif
#ifndef RCUWALK_BUG_URL /* set at configure time (CMakeLists.txt) */
#define RCUWALK_BUG_URL "the project's issue tracker"
#endif
#ifndef RCUWALK_REL_LIBDIR
#define RCUWALK_REL_LIBDIR "../lib"
#endif
#ifndef RCUWALK_LD_LIB
#define RCUWALK_LD_LIB ""
#endif
#ifndef RCUWALK_MULTIARCH
#define RCUWALK_MULTIARCH ""
#endif

#define EXIT_LAUNCHER 125 /* the launcher's own failure, as env(1), timeout(1) */

static FILE *log_fp;

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	va_list ap;

	if (!log_fp)
		return;
	fprintf(log_fp, "rcuwalk[%ld]: ", (long)getpid());
	va_start(ap, fmt);
	vfprintf(log_fp, fmt, ap);
	va_end(ap);
	fputc('\n', log_fp);
	fflush(log_fp);
}

/* An error that stops the command from running: stderr (like env(1)) and log. */
static void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("rcuwalk: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (log_fp) {
		va_start(ap, fmt);
		fprintf(log_fp, "rcuwalk[%ld]: error: ", (long)getpid());
		vfprintf(log_fp, fmt, ap);
		fputc('\n', log_fp);
		va_end(ap);
		fflush(log_fp);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rcuwalk [options] [--] command [args...]\n"
		"       rcuwalk --report=FILE\n"
		"Runs command with librcuwalk.so preloaded: path lookups (stat, access,\n"
		"failed open, ...) are answered from an in-process RCU-walk dentry cache kept\n"
		"coherent with inotify.  Nothing is printed to the command's stdout/stderr\n"
		"unless asked.\n"
		"\n"
		"Options that set the library's environment variable named:\n"
		"  --disable        preload the library but pass every call through\n"
		"                   (RCUWALK_DISABLE=1)\n"
		"  --max-mb=N       cache memory cap per process in MiB (RCUWALK_MAX_MB=N;\n"
		"                   default 64)\n"
		"  --complete=N     list a directory after N absent names in it (RCUWALK_COMPLETE;\n"
		"                   default 2, 0 = never)\n"
		"  --complete-max=N never list a directory of more than N names\n"
		"                   (RCUWALK_COMPLETE_MAX; default 10000)\n"
		"  --racy-ms=N      no attributes kept for files changed less than N ms ago\n"
		"                   (RCUWALK_RACY_MS; default 2000, 0 = off)\n"
		"  --no-negative    never cache absent names (RCUWALK_NO_NEGATIVE=1)\n"
		"  --scratch-full   watch /tmp and other sticky directories writable by all\n"
		"                   in full: their files' attributes cached (RCUWALK_SCRATCH_FULL=1)\n"
		"  --exclude=DIR[:DIR...]  pass through below these directories, at most 16\n"
		"                   (RCUWALK_EXCLUDE; relative ones made absolute from here)\n"
		"  --ttl-ms=N       NFS/FUSE/CIFS/9p names live N ms (RCUWALK_TTL_MS; default\n"
		"                   1000, 0 = pass through)\n"
		"  --neg-ttl-ms=N   absent names there live N ms (RCUWALK_NEG_TTL_MS;\n"
		"                   default: the TTL; 0 = the kernel's answer every time)\n"
		"  --strict         before each cached answer, apply pending inotify events\n"
		"                   and mount changes first: one poll() per lookup\n"
		"                   (RCUWALK_STRICT=1)\n"
		"  --watch-budget=N at most N inotify watches per process (RCUWALK_WATCH_BUDGET;\n"
		"                   default a quarter of the user's inotify watch limit,\n"
		"                   0 = kernel's limit)\n"
		"  --warmup=N|Tus   each process's first N lookups, or its first lookups\n"
		"                   until they took T microseconds (Tms: milliseconds),\n"
		"                   pass through and start nothing (RCUWALK_WARMUP;\n"
		"                   default 1ms; 0: cache from the first lookup);\n"
		"                   a fork() child's too, its cache emptied by the fork;\n"
		"                   each fork() meanwhile adds its own time to T\n"
		"  --dir-rent=N     a directory is watched at the (N+1)-th lookup of a name\n"
		"                   in it; its first N pass through (RCUWALK_DIR_RENT;\n"
		"                   default 4, 0: at the first; not on NFS/FUSE); doubled,\n"
		"                   up to 256 times, in a process whose purchases earn little\n"
		"  --stats[=FILE]   after the command ends, print one summary of every process\n"
		"                   of its tree that ran the shim, to stderr or to FILE\n"
		"                   (per-process records via RCUWALK_STATS; if RCUWALK_STATS\n"
		"                   is already set, the records are also appended there)\n"
		"  --verify[=FILE]  also ask the kernel every question answered from the cache,\n"
		"                   give the program the kernel's answer, and log differences to\n"
		"                   FILE, else to the --log file, else to\n"
		"                   $TMPDIR/rcuwalk-verify.PID.log (RCUWALK_VERIFY=1,\n"
		"                   RCUWALK_VERIFY_LOG=FILE).  Slow by design\n"
		"Other options:\n"
		"  --session        the default: one inotify instance for the whole command\n"
		"                   tree, read by a watcher process for every process, and\n"
		"                   what one process learns shared with the others\n"
		"                   (RCUWALK_SESSION=DIR, RCUWALK_SESSION_FDS; ends with the\n"
		"                   command, or is a kept one: --keep)\n"
		"  --no-session     each process its own cache and inotify instance\n"
		"  --keep[=SECONDS] the watcher outlives the command by SECONDS (default 300):\n"
		"                   a later rcuwalk command of this user, mount and user\n"
		"                   namespace and root reuses it, warm\n"
		"  --log=FILE       append the launcher's diagnostics to FILE\n"
		"  --report=FILE    print the summary of a RCUWALK_STATS=FILE records file\n"
		"  -h, --help       this text\n"
		"  -V, --version    version and the library the launcher would preload\n"
		"\n"
		"Exit status: the command's; if it was killed by a signal, rcuwalk dies by the\n"
		"same signal.  125: rcuwalk failed; 126: command not executable; 127: not found.\n"
		"See rcuwalk(1).\n");
}

/* ---------------------------------------------------------------------- */
/* Finding the library */

struct lib {
	char path[PATH_MAX];  /* absolute, canonical */
	char entry[PATH_MAX]; /* what goes into LD_PRELOAD */
};

static int readable_file(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, R_OK) == 0;
}

/* Is `path` == <prefix>/<RCUWALK_LD_LIB>/librcuwalk.so?  Then LD_PRELOAD gets
 * <prefix>/$LIB/librcuwalk.so. */
static void dollar_lib_entry(struct lib *l)
{
	const char *ldlib = RCUWALK_LD_LIB;
	size_t plen = strlen(l->path), tail = strlen(ldlib) + strlen("/" LIBNAME) + 1;
	char want[PATH_MAX];

	snprintf(l->entry, sizeof(l->entry), "%s", l->path);
	if (!*ldlib || plen <= tail)
		return;
	snprintf(want, sizeof(want), "/%s/" LIBNAME, ldlib);
	if (strcmp(l->path + plen - strlen(want), want) != 0)
		return;
	snprintf(l->entry, sizeof(l->entry), "%.*s/$LIB/" LIBNAME,
		 (int)(plen - strlen(want)), l->path);
}

static int find_library(struct lib *l)
{
	const char *rel[] = { "", RCUWALK_REL_LIBDIR "/", "../lib/", "../lib64/",
			      "../lib/" RCUWALK_MULTIARCH "/" };
	char self[PATH_MAX], cand[PATH_MAX * 2];
	char *slash;

	if (!realpath("/proc/self/exe", self))
		return -1;
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	slash[1] = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s%s" LIBNAME, self, rel[i]);
		if (readable_file(cand) && realpath(cand, l->path)) {
			dollar_lib_entry(l);
			return 0;
		}
	}
	return -1;
}

/* ---------------------------------------------------------------------- */
/* LD_PRELOAD */

/* Entries are separated by ':' or ' ' (ld.so(8)). */
static int has_our_library(const char *val)
{
	const char *p = val;

	while (*p) {
		size_t n = strcspn(p, ": ");
		const char *base = p;

		for (const char *q = p; q < p + n; q++)
			if (*q == '/')
				base = q + 1;
		if ((size_t)(p + n - base) == strlen(LIBNAME) && !strncmp(base, LIBNAME, strlen(LIBNAME)))
			return 1;
		p += n;
		p += strspn(p, ": ");
	}
	return 0;
}

static int set_ld_preload(const struct lib *l)
{
	const char *old = getenv("LD_PRELOAD");
	char entry[PATH_MAX], why[PATH_MAX + 128];
	char *val;
	int r;

	if (old && has_our_library(old)) {
		logmsg("LD_PRELOAD already has %s: kept as is: %s", LIBNAME, old);
		return 0;
	}
	if (ldlink_entry(l->entry, 1, entry, sizeof(entry), why, sizeof(why)) != 0) {
		fatal("%s: cannot go into LD_PRELOAD: %s", l->path, why);
		return -1;
	}
	if (strcmp(entry, l->entry))
		logmsg("%s has ':' or ' ': preloaded as %s", l->entry, entry);
	if (old && old[strspn(old, ": ")]) {
		if (asprintf(&val, "%s:%s", old, entry) < 0)
			val = NULL;
	} else {
		val = strdup(entry);
	}
	r = val ? setenv("LD_PRELOAD", val, 1) : -1;
	if (r != 0)
		fatal("setting LD_PRELOAD: %s", strerror(errno));
	else
		logmsg("LD_PRELOAD=%s", val);
	free(val);
	return r;
}

/* ---------------------------------------------------------------------- */
/* Statistics */

enum { F_IDX_BASE_ = -1,
#define RCUWALK_IDX_(name) F_##name,
	RCUWALK_RECORD_FIELDS(RCUWALK_IDX_)
#undef RCUWALK_IDX_
	F_N_ };

static const char *const field_names[] = {
#define RCUWALK_NAME_(name) #name,
	RCUWALK_RECORD_FIELDS(RCUWALK_NAME_)
#undef RCUWALK_NAME_
};

struct summary {
	unsigned long long v[F_N_];
	unsigned long records, dtor, exit, exec, other_end, unreadable;
};

/* Parse one record line (without its newline).  Returns 0 if it is one. */
static int parse_record(const char *line, unsigned long long v[F_N_], char end[8])
{
	static const int v1[] = { F_hits, F_neg_hits, F_misses, F_passthrough, F_invalidations,
				  F_saved };
	char buf[RCUWALK_RECORD_LEN + 1], *save = NULL, *tok;
	int seen[F_N_] = { 0 };
	int pid_seen = 0;

	if (strncmp(line, RCUWALK_RECORD_TAG " ", strlen(RCUWALK_RECORD_TAG " ")) != 0 ||
	    strlen(line) >= sizeof(buf))
		return -1;
	strcpy(buf, line + strlen(RCUWALK_RECORD_TAG " "));
	memset(v, 0, sizeof(unsigned long long) * F_N_);
	end[0] = '\0';
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '='), *e;
		unsigned long long n;

		if (!eq)
			return -1;
		*eq = '\0';
		if (!strcmp(tok, "end")) {
			snprintf(end, 8, "%s", eq + 1);
			continue;
		}
		errno = 0;
		n = strtoull(eq + 1, &e, 10);
		if (errno || e == eq + 1 || *e)
			return -1;
		if (!strcmp(tok, "pid")) {
			pid_seen = 1;
			continue;
		}
		for (int i = 0; i < F_N_; i++)
			if (!strcmp(tok, field_names[i])) {
				v[i] = n;
				seen[i] = 1;
			}
	}
	if (!pid_seen)
		return -1;
	for (size_t i = 0; i < sizeof(v1) / sizeof(v1[0]); i++)
		if (!seen[v1[i]])
			return -1;
	if (!seen[F_lookups]) /* a line from an older shim: derive what it implies */
		v[F_lookups] = v[F_hits] + v[F_neg_hits] + v[F_passthrough];
	if (!seen[F_pass_cache] && !seen[F_pass_open])
		v[F_pass_cache] = v[F_passthrough];
	return 0;
}

/* Sum the records in `path`; append each good one to `forward` if set. */
static int read_records(const char *path, struct summary *s, const char *forward)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int fwd = -1;

	memset(s, 0, sizeof(*s));
	if (!f)
		return errno == ENOENT ? 0 : -1;
	if (forward && *forward) {
		fwd = open(forward, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fwd < 0)
			logmsg("cannot append records to RCUWALK_STATS=%s: %s", forward,
			       strerror(errno));
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		unsigned long long v[F_N_];
		char end[8];

		if (line[n - 1] != '\n') { /* torn: the writer died mid-record */
			s->unreadable++;
			break;
		}
		line[n - 1] = '\0';
		if (parse_record(line, v, end) != 0) {
			s->unreadable++;
			logmsg("unreadable record: %.80s", line);
			continue;
		}
		for (int i = 0; i < F_N_; i++)
			s->v[i] += v[i];
		s->records++;
		if (!strcmp(end, "dtor") || !end[0])
			s->dtor++;
		else if (!strcmp(end, "exit"))
			s->exit++;
		else if (!strcmp(end, "exec"))
			s->exec++;
		else
			s->other_end++;
		if (fwd >= 0) {
			line[n - 1] = '\n';
			if (write(fwd, line, (size_t)n) != n)
				logmsg("short write to RCUWALK_STATS=%s", forward);
		}
	}
	free(line);
	fclose(f);
	if (fwd >= 0)
		close(fwd);
	return 0;
}

static void pct(char *buf, size_t size, unsigned long long part, unsigned long long whole)
{
	if (whole)
		snprintf(buf, size, "%5.1f%%", 100.0 * (double)part / (double)whole);
	else
		snprintf(buf, size, "%6s", "");
}

/* What the launcher knows of the run: its times (--stats; not --report)
 * and the per-filesystem costs measured from the samples (cost.h). */
struct run_info {
	int timed;                /* wall_ns and cpu_ns are known */
	unsigned long long wall_ns, cpu_ns;
	struct cost_fs fs[COST_MAX_FS + 1];
	int nfs;
	unsigned long long weight; /* of all samples */
	size_t samples;
};

static void print_costs(FILE *f, const struct summary *s, const struct run_info *run)
{
	unsigned long long answers = s->v[F_hits] + s->v[F_neg_hits];
	double kernel_ns = 0, answer_ns = 0, measured_share = 0, shim_ms, kernel_ms, net_ms;
	char p[16];

	if (run->timed) {
		fprintf(f, "%-15s %14.0f %6s  %s\n", "wall_ms", (double)run->wall_ns / 1e6, "",
			"the command's wall time, from its start to its end");
		fprintf(f, "%-15s %14.0f %6s  %s\n", "cpu_ms", (double)run->cpu_ns / 1e6, "",
			"CPU time of the command's processes (user + system, those waited for)");
	} else {
		fprintf(f, "%-15s %14s %6s  %s\n", "wall_ms", "-", "", "not known to --report");
		fprintf(f, "%-15s %14s %6s  %s\n", "cpu_ms", "-", "", "not known to --report");
	}
	if (!run->nfs)
		fprintf(f, "%-15s %14d %6s  %s\n", "fs", 0, "",
			"no cached answer was sampled: kernel time not measured");
	for (int i = 0; i < run->nfs; i++) {
		const struct cost_fs *fs = &run->fs[i];
		double share = (double)fs->weight / (double)run->weight;
		unsigned long long n = (unsigned long long)((double)answers * share + 0.5);
		char where[320], raw[48], ans[48];

		if (fs->other)
			snprintf(where, sizeof(where), "other filesystems (%s)", fs->mountpoint);
		else
			snprintf(where, sizeof(where), "%s on %s (%u:%u)", fs->fstype, fs->mountpoint,
				 fs->major, fs->minor);
		if (fs->names)
			snprintf(raw, sizeof(raw), "raw lookup %.0f ns", fs->raw_ns);
		else
			snprintf(raw, sizeof(raw), "raw lookup not measured");
		if (fs->timed_answers)
			snprintf(ans, sizeof(ans), "cached answer %.0f ns", fs->answer_ns);
		else
			snprintf(ans, sizeof(ans), "cached answer not timed");
		pct(p, sizeof(p), n, answers);
		fprintf(f, "%-15s %14llu %6s  %s: %s, %s (%u names timed at the end, %u answers timed)\n",
			"fs", n, p, where, raw, ans, fs->names, fs->timed_answers);
		if (fs->names)
			measured_share += share;
		kernel_ns += (double)n * fs->raw_ns;
		answer_ns += (double)n * fs->answer_ns;
	}
	kernel_ms = kernel_ns / 1e6;
	shim_ms = answer_ns / 1e6 + (double)s->v[F_fill_ns] / 1e6 + (double)s->v[F_start_ns] / 1e6;
	net_ms = kernel_ms - shim_ms;
	fprintf(f, "%-15s %14.3f %6s  %s\n", "kernel_ms", kernel_ms, "",
		"kernel time the cached answers spared: answers x raw lookup, per filesystem");
	fprintf(f, "%-15s %14.3f %6s  answers %.1f + fills %.1f + start-up %.1f ms (not counted: loading the library, wrapping pass-through calls, events, the watcher)\n",
		"shim_ms", shim_ms, "", answer_ns / 1e6, (double)s->v[F_fill_ns] / 1e6,
		(double)s->v[F_start_ns] / 1e6);
	if (!run->nfs || measured_share == 0) {
		fprintf(f, "%-15s %14s %6s  %s\n", "verdict", "-", "",
			"no cached answer was sampled: nothing measured to judge by");
		return;
	}
	{
		char ran[128] = "";

		if (run->timed && run->wall_ns)
			snprintf(ran, sizeof(ran), " (%.0f%% of the %.0f ms wall, %.0f ms CPU)",
				 kernel_ms * 1e8 / (double)run->wall_ns, (double)run->wall_ns / 1e6,
				 (double)run->cpu_ns / 1e6);
		fprintf(f, "%-15s %14.1f %6s  lookups the kernel was spared: ~%.1f ms summed over the processes%s; "
			   "the shim spent ~%.1f ms: net ~%.1f ms. Not the wall-clock effect (parallel jobs overlap): "
			   "time a run without rcuwalk for that\n",
			"verdict", net_ms, "", kernel_ms, ran, shim_ms, net_ms);
	}
}

static void print_summary(FILE *f, const struct summary *s, const struct run_info *run)
{
	const unsigned long long *v = s->v;
	long long net = (long long)v[F_saved] - (long long)v[F_misses] - (long long)v[F_watches];
	unsigned long procs;
	char p[16];

	/* Values end in one column, whatever the name's length. */
#define LINE(key, val, pc, text)                                                        \
	fprintf(f, "%-15s %*llu %6s  %s\n", key,                                        \
		strlen(key) > 15 ? 14 - (int)(strlen(key) - 15) : 14, (unsigned long long)(val), \
		pc, text)
	/* What each count counts: processes that ended with a record (an
	 * exec'd process writes one before its exec and one at its end, and
	 * counts once), and the records read. */
	procs = s->dtor + s->exit + s->other_end;
	fprintf(f, "rcuwalk summary: %lu process%s ended (%lu by exit(), %lu by _exit()), "
		   "%lu record%s (%lu written before an exec), %lu unreadable\n",
		procs, procs == 1 ? "" : "es", s->dtor, s->exit, s->records,
		s->records == 1 ? "" : "s", s->exec, s->unreadable);
	LINE("lookups", v[F_lookups], "", "path lookups through the shim");
	pct(p, sizeof(p), v[F_hits], v[F_lookups]);
	LINE("hits", v[F_hits], p, "answered from the cache: success");
	pct(p, sizeof(p), v[F_neg_hits], v[F_lookups]);
	LINE("neg_hits", v[F_neg_hits], p, "answered from the cache: error (ENOENT, ENOTDIR...)");
	pct(p, sizeof(p), v[F_passthrough], v[F_lookups]);
	LINE("passthrough", v[F_passthrough], p, "answered by the real call, because:");
	LINE("  pass_open", v[F_pass_open], "", "open() of an existing name (needs the kernel's fd)");
	LINE("  pass_fs", v[F_pass_fs], "", "filesystem not cached (/proc, /sys...), dir excluded or not watchable");
	LINE("  pass_attr", v[F_pass_attr], "", "attributes never kept: hard-linked file, FIFO, device");
	LINE("  pass_racy", v[F_pass_racy], "", "mtime/ctime younger than --racy-ms: kernel's answer, not kept");
	LINE("  pass_cache", v[F_pass_cache], "",
	     "cache declined otherwise: race with an event, kernel error (EACCES...), long name");
	LINE("  pass_dirfd", v[F_pass_dirfd], "", "relative to a real directory fd");
	LINE("  pass_form", v[F_pass_form], "", "flags/arguments not modelled (AT_EMPTY_PATH, ...)");
	LINE("  pass_write", v[F_pass_write], "", "open for writing or creating");
	LINE("  pass_early", v[F_pass_early], "", "before the shim's initialisation");
	LINE("  pass_warmup", v[F_pass_warmup], "", "a process's lookups in its warm-up (cache not started)");
	LINE("  pass_watch_limit", v[F_pass_watch_limit], "",
	     "below a directory left unwatched: watch budget or inotify limits");
	LINE("  pass_rent", v[F_pass_rent], "",
	     "a directory's first lookups before it is worth a watch; idle spells (--dir-rent)");
	LINE("misses", v[F_misses], "", "kernel asked to fill the cache (one lstat/access each)");
	LINE("invalidations", v[F_invalidations], "", "cached entries dropped on change events");
	LINE("watches", v[F_watches], "", "inotify watches held at exit (one inotify_add_watch each)");
	LINE("watch_fail", v[F_watch_fail], "", "inotify_add_watch failures (limits, permissions)");
	LINE("events", v[F_events], "", "inotify events read");
	LINE("overflows", v[F_overflows], "", "inotify queue overflows (cache emptied)");
	LINE("listings_shared", v[F_listings_shared], "",
	     "--session: directory listings read from the shared listings, not the kernel");
	LINE("watches_shared", v[F_watches_shared], "",
	     "--session: directory watches taken from the shared entries (no inotify_add_watch)");
	LINE("names_shared", v[F_names_shared], "",
	     "--session: what a name is, taken from the shared entries (no lstat)");
	LINE("files_shared", v[F_files_shared], "",
	     "--session: a regular file's attributes, from the shared entries (no lstat)");
	LINE("searches_shared", v[F_searches_shared], "",
	     "--session: search permission on a directory, from the shared entries (no lstat)");
	LINE("paths_shared", v[F_paths_shared], "",
	     "--session: absent names offered to the shared path table");
	LINE("path_hits_shared", v[F_path_hits_shared], "",
	     "--session: lookups answered from the shared path table (no walk)");
	LINE("fs_shared", v[F_fs_shared], "",
	     "--session: filesystem types taken from the session by mount (no statfs)");
	LINE("mismatches", v[F_mismatches], "", "--verify: cached answers that differed from the kernel's (see the verify log)");
	LINE("saved", v[F_saved], "", "syscalls avoided (hits + neg_hits)");
	fprintf(f, "%-15s %14lld %6s  %s\n", "net_saved", net, "", "saved - misses - watches");
	LINE("fill_ns", v[F_fill_ns], "", "time the shim spent filling the cache on misses (measured)");
	LINE("start_ns", v[F_start_ns], "", "time the shim spent starting its cache (measured)");
	LINE("index_hits", v[F_index_hits], "", "walks the path index resolved whole (RCUWALK_NAME_INDEX=1)");
	LINE("prefix_hits", v[F_prefix_hits], "", "walks begun at their directory's path-index entry");
	print_costs(f, s, run);
#undef LINE
}

/* The samples beside `records` (stats.h, "Samples"): read, forwarded to
 * `outer`.samples if set, removed if `remove`, and timed (cost.h). */
static void measure_costs(const char *records, const char *outer, struct run_info *run)
{
	char path[PATH_MAX + 16], fwd[PATH_MAX + 16];
	struct cost_samples cs = { 0 };

	snprintf(path, sizeof(path), "%s%s", records, RCUWALK_SAMPLES_SUFFIX);
	if (outer)
		snprintf(fwd, sizeof(fwd), "%s%s", outer, RCUWALK_SAMPLES_SUFFIX);
	if (cost_read_samples(path, &cs, outer ? fwd : NULL) != 0)
		logmsg("cannot read samples %s: %s", path, strerror(errno));
	logmsg("%zu samples, %zu unreadable", cs.n, cs.unreadable);
	run->samples = cs.n;
	run->nfs = cost_measure(&cs, run->fs, &run->weight);
	for (int i = 0; i < run->nfs; i++)
		logmsg("fs %s on %s: weight %llu, %u names, raw %.0f ns, answer %.0f ns",
		       run->fs[i].fstype, run->fs[i].mountpoint, run->fs[i].weight, run->fs[i].names,
		       run->fs[i].raw_ns, run->fs[i].answer_ns);
	cost_free(&cs);
}

static int report(const char *path)
{
	struct summary s;

	static struct run_info run;

	if (read_records(path, &s, NULL) != 0) {
		fatal("%s: %s", path, strerror(errno));
		return EXIT_LAUNCHER;
	}
	measure_costs(path, NULL, &run);
	print_summary(stdout, &s, &run);
	return fflush(stdout) == 0 ? 0 : EXIT_LAUNCHER;
}

/* ---------------------------------------------------------------------- */
/* Running the command */

static volatile pid_t child_pid = -1;
static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2 };
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))
static struct sigaction entry_action[NFORWARDED];

/* A signal sent to the launcher by a process (kill(1), a CI timeout) goes on
 * to the command.  One the terminal sent to the whole foreground process
 * group (Ctrl-C: si_code SI_KERNEL) reached the command already. */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	(void)uc;
	if (child_pid > 0 && si->si_code <= 0 && si->si_pid != child_pid)
		kill(child_pid, sig);
	errno = saved;
}

static void exec_command(char **argv)
{
	int e;

	execvp(argv[0], argv);
	e = errno;
	fatal("%s: %s", argv[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

/* Exit as the child did: its status, or death by its signal. */
static int pass_status(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit none = { 0, 0 };
		sigset_t set;

		logmsg("command killed by signal %d (%s): dying by it too", sig, strsignal(sig));
		fflush(NULL);
		setrlimit(RLIMIT_CORE, &none); /* the command dumped its core, if any */
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		return 128 + sig;
	}
	logmsg("command exited with status %d", WEXITSTATUS(status));
	return WIFEXITED(status) ? WEXITSTATUS(status) : EXIT_LAUNCHER;
}

static int run_with_stats(char **argv, const char *stats_file)
{
	const char *tmpdir = getenv("TMPDIR");
	char *outer = getenv("RCUWALK_STATS") ? strdup(getenv("RCUWALK_STATS")) : NULL;
	char records[PATH_MAX + 16], recdir[PATH_MAX];
	struct sigaction sa;
	sigset_t all, old;
	char samples[PATH_MAX + 32];
	struct summary s;
	static struct run_info run;
	struct timespec t0, t1;
	struct rusage ru;
	int fd, status = 0;
	pid_t pid;
	FILE *out;

	if (!tmpdir || tmpdir[0] != '/' || strlen(tmpdir) > PATH_MAX - 64)
		tmpdir = "/tmp";
	/* In a directory of its own: the processes of the build watch the
	 * directories they look names up in (often $TMPDIR), and a record
	 * appended there would wake every one of them.  Nobody looks up names
	 * in this one (records are written with raw syscalls). */
	snprintf(recdir, sizeof(recdir), "%s/rcuwalk-stats.XXXXXX", tmpdir);
	if (!mkdtemp(recdir)) {
		fatal("cannot create a directory in %s: %s", tmpdir, strerror(errno));
		return EXIT_LAUNCHER;
	}
	snprintf(records, sizeof(records), "%s/records", recdir);
	snprintf(samples, sizeof(samples), "%s%s", records, RCUWALK_SAMPLES_SUFFIX);
	fd = open(records, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || setenv("RCUWALK_STATS", records, 1) != 0) {
		fatal("records file %s: %s", records, strerror(errno));
		if (fd >= 0)
			unlink(records);
		rmdir(recdir);
		return EXIT_LAUNCHER;
	}
	close(fd);
	logmsg("records: %s%s%s", records, outer ? ", then appended to " : "", outer ? outer : "");

	/* A signal ignored on entry (nohup, a background job) stays ignored,
	 * for the launcher and for the command. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	for (size_t i = 0; i < NFORWARDED; i++) {
		sigaction(forwarded[i], NULL, &entry_action[i]);
		if (entry_action[i].sa_handler != SIG_IGN)
			sigaction(forwarded[i], &sa, NULL);
	}
	fflush(NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid == 0) {
		for (size_t i = 0; i < NFORWARDED; i++)
			sigaction(forwarded[i], &entry_action[i], NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		exec_command(argv);
	}
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		fatal("fork: %s", strerror(errno));
		unlink(records);
		rmdir(recdir);
		return EXIT_LAUNCHER;
	}
	child_pid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	logmsg("command running as pid %ld", (long)pid);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	run.timed = 1;
	run.wall_ns = (unsigned long long)(t1.tv_sec - t0.tv_sec) * 1000000000ULL +
		      (unsigned long long)t1.tv_nsec - (unsigned long long)t0.tv_nsec;
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		run.cpu_ns = ((unsigned long long)ru.ru_utime.tv_sec + (unsigned long long)ru.ru_stime.tv_sec) *
				     1000000000ULL +
			     ((unsigned long long)ru.ru_utime.tv_usec + (unsigned long long)ru.ru_stime.tv_usec) *
				     1000ULL;

	if (read_records(records, &s, outer) != 0)
		logmsg("cannot read records %s: %s", records, strerror(errno));
	measure_costs(records, outer, &run);
	unlink(records);
	unlink(samples);
	rmdir(recdir);
	free(outer);
	logmsg("%lu records, %lu unreadable", s.records, s.unreadable);
	if (stats_file) {
		/* Not a foreign symlink or file in a sticky directory (owned.c). */
		fd = preload_open_append(stats_file, 0);
		out = fd >= 0 && ftruncate(fd, 0) == 0 ? fdopen(fd, "we") : NULL;
		if (!out && fd >= 0)
			close(fd);
		if (fd < 0)
			errno = -fd;
		if (!out) {
			/* Asked-for output that cannot go where asked: say so. */
			fatal("--stats=%s: %s", stats_file, strerror(errno));
		} else {
			print_summary(out, &s, &run);
			if (fclose(out) != 0)
				fatal("--stats=%s: %s", stats_file, strerror(errno));
		}
	} else {
		print_summary(stderr, &s, &run);
	}
	return pass_status(status);
}

/* ---------------------------------------------------------------------- */

/* --keep: without a value, an edit-and-rebuild cycle's worth (doc/session.md,
 * "Keep"); at most a day. */
#define KEEP_DEFAULT_S 300
#define KEEP_MAX_S 86400

static int opt_value(const char *arg, const char *name, const char **val)
{
	size_t n = strlen(name);

	if (strncmp(arg, name, n) != 0)
		return 0;
	if (arg[n] == '=') {
		*val = arg + n + 1;
		return 1;
	}
	if (arg[n] == '\0') {
		*val = NULL;
		return 1;
	}
	return 0;
}

/* Options that set an environment variable of the library (preload/config.c). */
enum optkind { OPT_FLAG, OPT_NUM, OPT_POSITIVE, OPT_DIRS, OPT_NUM_OR_TIME };
static const struct envopt {
	const char *name, *env;
	enum optkind kind;
	unsigned long max;
} envopts[] = {
	{ "--disable", "RCUWALK_DISABLE", OPT_FLAG, 0 },
	{ "--max-mb", "RCUWALK_MAX_MB", OPT_POSITIVE, (1UL << 20) - 1 },
	{ "--complete", "RCUWALK_COMPLETE", OPT_NUM, UINT_MAX },
	{ "--complete-max", "RCUWALK_COMPLETE_MAX", OPT_NUM, UINT_MAX },
	{ "--racy-ms", "RCUWALK_RACY_MS", OPT_NUM, 1000UL * 1000 * 1000 },
	{ "--no-negative", "RCUWALK_NO_NEGATIVE", OPT_FLAG, 0 },
	{ "--scratch-full", "RCUWALK_SCRATCH_FULL", OPT_FLAG, 0 },
	{ "--exclude", "RCUWALK_EXCLUDE", OPT_DIRS, 0 },
	{ "--ttl-ms", "RCUWALK_TTL_MS", OPT_NUM, 1000UL * 1000 * 1000 },
	{ "--neg-ttl-ms", "RCUWALK_NEG_TTL_MS", OPT_NUM, 1000UL * 1000 * 1000 },
	{ "--strict", "RCUWALK_STRICT", OPT_FLAG, 0 },
	{ "--watch-budget", "RCUWALK_WATCH_BUDGET", OPT_NUM, INT_MAX },
	{ "--warmup", "RCUWALK_WARMUP", OPT_NUM_OR_TIME, INT_MAX },
	{ "--dir-rent", "RCUWALK_DIR_RENT", OPT_NUM, 65535 },
};
#define NENVOPTS (sizeof(envopts) / sizeof(envopts[0]))

/* "A:B" with relative directories made absolute from here: every process of
 * the tree reads RCUWALK_EXCLUDE from its own working directory. */
static char *absolute_dirs(const char *spec)
{
	char cwd[PATH_MAX], *out;
	size_t cap, len = 0;

	if (!getcwd(cwd, sizeof(cwd)))
		return strdup(spec);
	cap = strlen(spec) * 2 + 16 * (strlen(cwd) + 2) + 1;
	out = malloc(cap);
	if (!out)
		return NULL;
	out[0] = '\0';
	for (const char *p = spec; *p;) {
		size_t n = strcspn(p, ":");

		if (n > 0 && len + n + strlen(cwd) + 3 < cap)
			len += (size_t)snprintf(out + len, cap - len, "%s%s%s%.*s", len ? ":" : "",
						p[0] == '/' ? "" : cwd, p[0] == '/' ? "" : "/",
						(int)n, p);
		p += n;
		if (*p == ':')
			p++;
	}
	return out;
}

/* Parse envopts[k]'s value; NULL if bad (the error is printed). */
static const char *envopt_value(const struct envopt *o, const char *v)
{
	char *e;
	unsigned long n = 0;

	switch (o->kind) {
	case OPT_FLAG:
		return "1";
	case OPT_DIRS:
		if (!v || !*v || !v[strspn(v, ":")]) {
			fatal("%s needs DIR[:DIR...]", o->name);
			return NULL;
		}
		/* The library keeps DCACHE_MAX_EXCLUDES directories; a list it
		 * cannot keep whole would leave the escape hatch open. */
		for (const char *p = v; *p;) {
			size_t len = strcspn(p, ":");

			if (len >= PATH_MAX) {
				fatal("%s: a directory name of %zu bytes: the limit is PATH_MAX (%d)",
				      o->name, len, PATH_MAX);
				return NULL;
			}
			n += len > 0;
			p += len + (p[len] == ':');
		}
		if (n > DCACHE_MAX_EXCLUDES) {
			fatal("%s: %lu directories: the limit is %d", o->name, n,
			      DCACHE_MAX_EXCLUDES);
			return NULL;
		}
		return v;
	default:
		errno = 0;
		n = v && *v >= '0' && *v <= '9' ? strtoul(v, &e, 10) : 0;
		/* OPT_NUM_OR_TIME: N, or a time: Nus or Nms. */
		if (v && *v >= '0' && *v <= '9' && o->kind == OPT_NUM_OR_TIME &&
		    (!strcmp(e, "us") || !strcmp(e, "ms")))
			e += 2;
		if (!v || *v < '0' || *v > '9' || *e || errno || n > o->max ||
		    (o->kind == OPT_POSITIVE && n == 0)) {
			fatal("%s needs a number from %d to %lu%s", o->name,
			      o->kind == OPT_POSITIVE ? 1 : 0, o->max,
			      o->kind == OPT_NUM_OR_TIME ? ", or a time (Nus, Nms)" : "");
			return NULL;
		}
		return v;
	}
}

/* --session: a watcher for the whole tree (doc/session.md): a kept one of
 * this user, namespace and root if one is alive (held for this command and
 * keep_s seconds after), else a new one (kept keep_s seconds after the
 * command).  If none can start, the command runs as without --session
 * (said in the --log only). */
static void start_session(unsigned int keep_s)
{
	static struct inval_session_id id;
	int r;

	fflush(NULL);
	r = inval_session_hold(&id, keep_s);
	if (r == -EPERM && keep_s) {
		/* The links' directory (watcher.c, inval_keep_link_path) is not
		 * ours: another user made it first.  Said, not silent. */
		const char *x = getenv("XDG_RUNTIME_DIR");
		struct stat xs;

		if (!(x && x[0] == '/' && stat(x, &xs) == 0 && S_ISDIR(xs.st_mode) &&
		      xs.st_uid == geteuid()))
			x = "/tmp"; /* as keep_link_path() chooses */
		fprintf(stderr, "rcuwalk: --keep: %s/rcuwalk-keep.%u is not a 0700 directory of "
			"ours (made by another user?): this session is not kept\n",
			x, (unsigned)geteuid());
		logmsg("--keep: the links' directory is not ours: not kept");
	}
	if (r == 0) {
		logmsg("--session: kept session %s held", id.dir);
	} else {
		r = inval_watcher_spawn(&id, keep_s);
		if (r != 0) {
			logmsg("--session: no watcher (%s): one instance per process",
			       id.note[0] ? id.note : strerror(-r));
			return;
		}
		if (id.note[0])
			logmsg("--session: %s", id.note);
	}
	if (setenv("RCUWALK_SESSION", id.dir, 1) != 0 ||
	    (id.fds[0] ? setenv("RCUWALK_SESSION_FDS", id.fds, 1) : unsetenv("RCUWALK_SESSION_FDS")) != 0) {
		logmsg("setenv RCUWALK_SESSION: %s", strerror(errno));
		unsetenv("RCUWALK_SESSION");
		return;
	}
	logmsg("RCUWALK_SESSION=%s RCUWALK_SESSION_FDS=%s", id.dir, id.fds);
}

/*
 * The TSC's rate (RCUWALK_TSC_KHZ)
 * ================================
 * The shim's warm-up times the real calls of a process's first lookups
 * (preload/shim.h, preload_warm_ns1).  With CLOCK_MONOTONIC that is the
 * vDSO: two page faults in every process that reads no clock of its own
 * (gcc --version, sed, as: 26-50 us of a ~2 ms process on this project's
 * VM).  The TSC is one instruction and touches nothing, but its rate must
 * be known, and a process cannot learn it without a clock.  So the launcher
 * measures it once: a reading of both at its start and one before the exec,
 * each a TSC read on either side of clock_gettime (taken again if those two
 * are far apart: preempted), at least TSC_SPAN_NS apart (the second is
 * taken again until they are: the launcher's own work takes longer, ~0.3-1
 * ms on this project's VM); and passes it on to the whole tree in kHz,
 * replacing an inherited value.  Only where the TSC is invariant (CPUID
 * 0x80000007 EDX bit 8: one rate, whatever the core's frequency or sleep
 * state), and not where the launcher's TSC is turned off (prctl
 * PR_SET_TSC, inherited); elsewhere the variable is left as it was and the
 * warm-up reads CLOCK_MONOTONIC.  (A process of the tree that turns its
 * TSC off later falls back to it: preload/fault.c, preload_rdtsc_guarded.)
 * What the rate decides is a budget (how long lookups pass through before
 * a process starts its cache), not an answer: a rate off by a few percent,
 * or a TSC that jumps, moves when a cache starts, never what it says.
 */
#define TSC_SPAN_NS 50000LL /* 0.2-0.4% from a reading's ~100-200 ns of spread */
struct tsc_mark {
	uint64_t tsc;
	long long ns;
};

/* Whether this thread may read an invariant TSC (CPUID 0x80000007 EDX bit
 * 8), not turned off for it (an inherited PR_TSC_SIGSEGV: rdtsc would kill
 * the launcher).  Asked once, before the first mark. */
static int tsc_usable(void)
{
#if defined(__x86_64__)
	unsigned int a, b, c, d;
	int on = 0;

	return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)) &&
	       prctl(PR_GET_TSC, &on, 0, 0, 0) == 0 && on == PR_TSC_ENABLE;
#else
	return 0;
#endif
}

/* Both clocks, read together (tsc_usable() said yes); 0 if every try was
 * preempted between its two TSC reads. */
static int tsc_mark(struct tsc_mark *m)
{
#if defined(__x86_64__)
	for (int tries = 0; tries < 4; tries++) {
		struct timespec t;
		uint64_t t0 = __rdtsc(), t1;

		clock_gettime(CLOCK_MONOTONIC, &t);
		t1 = __rdtsc();
		if (t1 > t0 && t1 - t0 < 20000) { /* < 10 us at 2 GHz: not preempted */
			m->tsc = t0 + (t1 - t0) / 2;
			m->ns = (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
			return 1;
		}
	}
#else
	(void)m;
#endif
	return 0;
}

/* RCUWALK_TSC_KHZ from the launcher's start (`at`, if measured) to now. */
static void tsc_export(const struct tsc_mark *at, int measured)
{
	struct tsc_mark now;
	char v[32];
	unsigned long long khz;

	if (!measured)
		return;
	do
		if (!tsc_mark(&now))
			return;
	while (now.ns - at->ns < TSC_SPAN_NS);
	if (now.tsc <= at->tsc)
		return;
	khz = (unsigned long long)((long double)(now.tsc - at->tsc) * 1000000.0L /
				   (long double)(now.ns - at->ns));
	if (khz < PRELOAD_TSC_KHZ_MIN || khz > PRELOAD_TSC_KHZ_MAX)
		return; /* the shim would refuse it */
	snprintf(v, sizeof(v), "%llu", khz);
	if (setenv("RCUWALK_TSC_KHZ", v, 1) == 0)
		logmsg("RCUWALK_TSC_KHZ=%s", v);
}

int main(int argc, char **argv)
{
	const char *stats_file = NULL, *log_file = NULL, *report_file = NULL, *v;
	const char *verify_file = NULL;
	const char *envval[NENVOPTS] = { 0 };
	int stats = 0, version = 0, verify = 0, session = 1, i; /* --no-session: 0 */
	unsigned long keep = 0;
	int keep_given = 0;
	struct lib lib;
	struct tsc_mark tsc_start;
	int tsc_at;

	/* The session's watcher: this program's image, started by the
	 * launcher (invalidate/watcher_spawn.c, inval_watcher_spawn). */
	if (argc > 1 && !strcmp(argv[1], INVAL_WATCHER_ARG))
		return inval_watcher_image(argc, argv);
	tsc_at = tsc_usable() && tsc_mark(&tsc_start);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t k;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		for (k = 0; k < NENVOPTS; k++)
			if (opt_value(a, envopts[k].name, &v))
				break;
		if (k < NENVOPTS) {
			if (envopts[k].kind == OPT_FLAG && v) {
				fatal("%s takes no value", envopts[k].name);
				return EXIT_LAUNCHER;
			}
			if (envopts[k].kind != OPT_FLAG && !v && i + 1 < argc)
				v = argv[++i];
			envval[k] = envopt_value(&envopts[k], v);
			if (!envval[k])
				return EXIT_LAUNCHER;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return fflush(stdout) == 0 ? 0 : EXIT_LAUNCHER;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			version = 1;
		} else if (!strcmp(a, "--session")) {
			session = 1;
		} else if (!strcmp(a, "--no-session")) {
			session = 0;
		} else if (opt_value(a, "--keep", &v)) {
			char *e;

			errno = 0;
			keep = v ? strtoul(v, &e, 10) : KEEP_DEFAULT_S;
			if (v && (!*v || *v < '0' || *v > '9' || *e || errno || keep > KEEP_MAX_S)) {
				fatal("--keep needs a number of seconds from 0 to %d", KEEP_MAX_S);
				return EXIT_LAUNCHER;
			}
			keep_given = 1;
		} else if (opt_value(a, "--stats", &v)) {
			stats = 1;
			stats_file = v && *v ? v : NULL;
		} else if (opt_value(a, "--verify", &v)) {
			verify = 1;
			verify_file = v && *v ? v : NULL;
		} else if (opt_value(a, "--log", &v)) {
			if (!v && i + 1 < argc)
				v = argv[++i];
			if (!v || !*v) {
				fatal("--log needs a file name");
				return EXIT_LAUNCHER;
			}
			log_file = v;
		} else if (opt_value(a, "--report", &v)) {
			if (!v && i + 1 < argc)
				v = argv[++i];
			if (!v || !*v) {
				fatal("--report needs a file name");
				return EXIT_LAUNCHER;
			}
			report_file = v;
		} else {
			fatal("unknown option %s (try --help)", a);
			return EXIT_LAUNCHER;
		}
	}
	if (log_file) {
		int fd = open(log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

		log_fp = fd >= 0 ? fdopen(fd, "a") : NULL;
		if (!log_fp) {
			fatal("--log=%s: %s", log_file, strerror(errno));
			return EXIT_LAUNCHER;
		}
		logmsg("rcuwalk %s started", RCUWALK_VERSION);
	}
	if (report_file)
		return report(report_file);
	if (find_library(&lib) != 0) {
		if (version) {
			printf("rcuwalk %s\nlibrary: not found\nreport problems to: %s\n",
			       RCUWALK_VERSION, RCUWALK_BUG_URL);
			return EXIT_LAUNCHER;
		}
		fatal("cannot find " LIBNAME " next to the launcher or in " RCUWALK_REL_LIBDIR "/");
		return EXIT_LAUNCHER;
	}
	logmsg("library %s (LD_PRELOAD entry %s)", lib.path, lib.entry);
	if (version) {
		char entry[PATH_MAX], why[PATH_MAX + 128];

		printf("rcuwalk %s\nlibrary: %s\nreport problems to: %s\n", RCUWALK_VERSION,
		       lib.path, RCUWALK_BUG_URL);
		if (ldlink_entry(lib.entry, 0, entry, sizeof(entry), why, sizeof(why)) != 0)
			printf("LD_PRELOAD entry: none: %s\n", why);
		else if (strcmp(entry, lib.path))
			printf("LD_PRELOAD entry: %s\n", entry);
		return fflush(stdout) == 0 ? 0 : EXIT_LAUNCHER;
	}
	if (i >= argc) { /* one line, not the whole --help */
		fputs("usage: rcuwalk [options] [--] command [args...]  (rcuwalk --help for more)\n",
		      stderr);
		return EXIT_LAUNCHER;
	}
	if (set_ld_preload(&lib) != 0)
		return EXIT_LAUNCHER;
	for (size_t k = 0; k < NENVOPTS; k++) {
		char *val;

		if (!envval[k])
			continue;
		val = envopts[k].kind == OPT_DIRS ? absolute_dirs(envval[k]) : strdup(envval[k]);
		if (!val || setenv(envopts[k].env, val, 1) != 0) {
			fatal("setenv %s: %s", envopts[k].env, strerror(errno));
			return EXIT_LAUNCHER;
		}
		logmsg("%s=%s", envopts[k].env, val);
		free(val);
	}
	if (verify) {
		/* The library logs to RCUWALK_VERIFY_LOG: --verify's FILE, else the
		 * --log file, else its own default.  Absolute: every process of
		 * the tree reads it from its own working directory. */
		const char *f = verify_file ? verify_file : log_file;
		char cwd[PATH_MAX], *abs = NULL;

		if (f && f[0] != '/' && getcwd(cwd, sizeof(cwd))) {
			abs = malloc(strlen(cwd) + strlen(f) + 2);
			if (abs)
				sprintf(abs, "%s/%s", cwd, f);
		} else if (f) {
			abs = strdup(f);
		}

		if (setenv("RCUWALK_VERIFY", "1", 1) != 0 || (f && (!abs || setenv("RCUWALK_VERIFY_LOG", abs, 1) != 0))) {
			fatal("setenv RCUWALK_VERIFY: %s", strerror(errno));
			return EXIT_LAUNCHER;
		}
		logmsg("RCUWALK_VERIFY=1%s%s", abs ? " RCUWALK_VERIFY_LOG=" : "", abs ? abs : "");
		free(abs);
	}
	if (keep_given && !session) {
		fatal("--keep keeps a session: not with --no-session");
		return EXIT_LAUNCHER;
	}
	if (session)
		start_session((unsigned int)keep);
	tsc_export(&tsc_start, tsc_at);
	if (stats)
		return run_with_stats(argv + i, stats_file);
	logmsg("exec %s", argv[i]);
	if (log_fp)
		fflush(log_fp);
	exec_command(argv + i);
	return 127;
}
