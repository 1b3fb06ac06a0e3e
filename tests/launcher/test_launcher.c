/* SPDX-License-Identifier: MIT */
/*
 * test_launcher.c - the launcher `rcuwalk`, its build-wide statistics and
 * its installed layout, tested from outside: every check runs the launcher
 * as a user would and looks at exit status, signals, the environment the
 * command sees, the files written and the bytes printed.
 *
 * Not preloaded itself.  ctest passes:
 *   RCUWALK_LAUNCHER   build/preload/rcuwalk
 *   RCUWALK_TEST_SHIM  build/preload/librcuwalk.so
 *   RCUWALK_BUILD_DIR  the build tree (for cmake --install)
 *   RCUWALK_CMAKE      cmake;  RCUWALK_MAKE: make
 *   RCUWALK_LD_LIB     what ld.so expands $LIB to ("" if unknown)
 *   RCUWALK_STUB32     the 32-bit stub ("" if not built)
 *
 * The binary is also the probe the generated Makefile runs:
 *   --probe DIR NAME   stat/access/open of known present and absent names in
 *                      DIR (PROBE_LOOKUPS calls), writes its pid to
 *                      DIR/pids/NAME, prints "built NAME" on stdout
 *   --lookups-exec N   N absent-name stat() calls, then exec of itself with
 *                      --lookups-_exit N
 *   --lookups-_exit N  N absent-name stat() calls, then _exit(0)
 *   --index-lookups DIR N  N stat() calls of 7 absent names in DIR, then exit(0)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include <cmocka.h>

extern char **environ;

#define PLEN 1024
#define OUTMAX (1 << 20)
#define PROBES 20
#define PROBE_FILES 10
#define PROBE_INC_DIRS 4
/* per probe: PROBE_FILES stat + PROBE_FILES access of present names,
 * PROBE_FILES * PROBE_INC_DIRS stat of absent ones, PROBE_FILES failed opens */
#define PROBE_PRESENT (2 * PROBE_FILES)
#define PROBE_ABSENT (PROBE_FILES * PROBE_INC_DIRS + PROBE_FILES)

static char g_scratch[PLEN];
static const char *g_launcher, *g_shim;

/* ------------------------------------------------------------------------ */
/* Helpers */

static const char *env_or_skip(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		print_message("%s is not set: skipping\n", name);
		skip();
	}
	return v;
}

static void sp(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sp(char *out, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, PLEN, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && n < PLEN);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = calloc(1, OUTMAX + 1);
	size_t n = 0;

	assert_non_null(buf);
	if (f) {
		n = fread(buf, 1, OUTMAX, f);
		fclose(f);
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

struct run {
	int status;
	char *out, *err; /* NUL-terminated, owned */
	size_t out_len, err_len;
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

/* Run argv with environ plus `env` (NAME=VALUE overrides, "NAME" alone
 * removes NAME); stdout/stderr captured.  `ready_fd_out`: if not NULL, the
 * child's stdout is a pipe returned here (the caller reads and waits). */
static pid_t spawn(char *const argv[], const char *const env[], const char *out_path,
		   const char *err_path)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0)
			_exit(120);
		dup2(o, 1);
		dup2(e, 2);
		close(o);
		close(e);
		/* whatever ctest's caller ignored (a background job ignores
		 * SIGINT), the commands here start with default dispositions */
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		for (size_t i = 0; env && env[i]; i++) {
			const char *eq = strchr(env[i], '=');

			if (eq) {
				char name[256];

				snprintf(name, sizeof(name), "%.*s", (int)(eq - env[i]), env[i]);
				setenv(name, eq + 1, 1);
			} else {
				unsetenv(env[i]);
			}
		}
		execvp(argv[0], argv);
		_exit(121);
	}
	return pid;
}

static void run(char *const argv[], const char *const env[], struct run *r)
{
	char o[PLEN], e[PLEN];
	pid_t pid;

	sp(o, "%s/run.out", g_scratch);
	sp(e, "%s/run.err", g_scratch);
	pid = spawn(argv, env, o, e);
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
	r->out = slurp(o, &r->out_len);
	r->err = slurp(e, &r->err_len);
	unlink(o);
	unlink(e);
}

/* The value of NAME in an `env` listing. */
static const char *env_value(const char *listing, const char *name, char *buf, size_t size)
{
	size_t n = strlen(name);

	for (const char *l = listing; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);

		if (len > n && !strncmp(l, name, n) && l[n] == '=') {
			snprintf(buf, size, "%.*s", (int)(len - n - 1), l + n + 1);
			return buf;
		}
		l = nl ? nl + 1 : NULL;
	}
	return NULL;
}

static int count_substr(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* ------------------------------------------------------------------------ */
/* Records and summaries */

#define FIELDS(X)                                                                          \
	X(hits) X(neg_hits) X(misses) X(passthrough) X(invalidations) X(saved) X(lookups)   \
	X(pass_open) X(pass_cache) X(pass_dirfd) X(pass_form) X(pass_write) X(pass_early)   \
	X(watches) X(watch_fail) X(events) X(overflows) X(mismatches) X(pass_watch_limit) X(pass_fs) X(pass_attr) X(pass_racy) \
	X(pass_warmup) X(listings_shared) X(watches_shared) X(names_shared) X(files_shared) X(searches_shared) \
	X(paths_shared) X(path_hits_shared) X(fs_shared) X(fill_ns) X(start_ns) X(index_hits)   \
	X(prefix_hits) X(pass_rent)
enum {
#define X(n) I_##n,
	FIELDS(X)
#undef X
	NFIELDS
};
static const char *const fnames[] = {
#define X(n) #n,
	FIELDS(X)
#undef X
};

struct rec {
	long pid;
	unsigned long long v[NFIELDS];
	char end[8];
};

/* Parse a records file independently of the launcher; returns the count. */
static int read_recs(const char *path, struct rec *out, int max)
{
	size_t len;
	char *buf = slurp(path, &len), *save = NULL;
	int n = 0;

	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		struct rec r = { 0 };
		char *p;

		if (strncmp(l, "rcuwalk-stats v1 pid=", 21) != 0)
			fail_msg("not a record: %s", l);
		r.pid = strtol(l + 21, NULL, 10);
		for (int i = 0; i < NFIELDS; i++) {
			char key[32];

			snprintf(key, sizeof(key), " %s=", fnames[i]);
			p = strstr(l, key);
			if (!p)
				fail_msg("record without %s: %s", fnames[i], l);
			r.v[i] = strtoull(p + strlen(key), NULL, 10);
		}
		p = strstr(l, " end=");
		assert_non_null(p);
		snprintf(r.end, sizeof(r.end), "%s", p + 5);
		if (n < max)
			out[n] = r;
		n++;
	}
	free(buf);
	return n;
}

/* The number on the summary line that starts with `key`. */
static long long summary_value(const char *summary, const char *key)
{
	size_t n = strlen(key);

	for (const char *l = summary; l && *l;) {
		const char *s = l + strspn(l, " ");

		if (!strncmp(s, key, n) && s[n] == ' ')
			return strtoll(s + n, NULL, 10);
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	fail_msg("summary has no line '%s':\n%s", key, summary);
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Probe modes (run under the shim by the generated Makefile / tests) */

static int probe_main(const char *dir, const char *name)
{
	char p[PLEN];
	struct stat st;
	FILE *f;

	for (int i = 0; i < PROBE_FILES; i++) {
		snprintf(p, sizeof(p), "%s/src/f%d.h", dir, i);
		if (stat(p, &st) != 0 || access(p, R_OK) != 0)
			return 2;
		for (int j = 0; j < PROBE_INC_DIRS; j++) {
			snprintf(p, sizeof(p), "%s/inc%d/f%d.h", dir, j, i);
			if (stat(p, &st) == 0 || errno != ENOENT)
				return 3;
		}
		snprintf(p, sizeof(p), "%s/inc0/missing%d.h", dir, i);
		if (open(p, O_RDONLY) >= 0 || errno != ENOENT)
			return 4;
	}
	snprintf(p, sizeof(p), "%s/pids/%s", dir, name);
	f = fopen(p, "we");
	if (!f)
		return 5;
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) != 0)
		return 6;
	printf("built %s\n", name);
	return 0;
}

static void absent_lookups(int n)
{
	struct stat st;
	char p[64];

	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/rcuwalk-test-absent-%d", i % 7);
		(void)stat(p, &st);
	}
}

/* ------------------------------------------------------------------------ */
/* Launcher: exit status and signals */

static void test_launcher_exit_status_passes_through(void **state)
{
	char *argv[] = { (char *)g_launcher, "--", "sh", "-c", "exit 7", NULL };
	struct run r;

	(void)state;
	run(argv, NULL, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 7);
	run_free(&r);
}

static void test_launcher_stats_mode_exit_status_passes_through(void **state)
{
	char sum[PLEN], opt[PLEN + 16];
	struct run r;

	(void)state;
	sp(sum, "%s/summary", g_scratch);
	snprintf(opt, sizeof(opt), "--stats=%s", sum);
	char *argv[] = { (char *)g_launcher, opt, "--", "sh", "-c", "exit 7", NULL };
	run(argv, NULL, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 7);
	run_free(&r);
}

static void check_dies_by(const char *mode_opt, const char *script, int sig)
{
	char *argv[] = { (char *)g_launcher, (char *)mode_opt, "--", "sh", "-c", (char *)script, NULL };
	char *argv_exec[] = { (char *)g_launcher, "--", "sh", "-c", (char *)script, NULL };
	struct run r;

	run(mode_opt ? argv : argv_exec, NULL, &r);
	if (!WIFSIGNALED(r.status))
		print_message("status %#x, stderr: %s\n", r.status, r.err);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), sig);
	run_free(&r);
}

static void test_launcher_child_killed_by_sigterm_kills_launcher_by_sigterm(void **state)
{
	(void)state;
	check_dies_by(NULL, "kill -TERM $$", SIGTERM);
}

static void test_launcher_stats_mode_child_killed_by_sigterm_kills_launcher_by_sigterm(void **state)
{
	char opt[PLEN + 16];

	(void)state;
	snprintf(opt, sizeof(opt), "--stats=%s/summary", g_scratch);
	check_dies_by(opt, "kill -TERM $$", SIGTERM);
}

static void test_launcher_stats_mode_child_killed_by_sigint_kills_launcher_by_sigint(void **state)
{
	char opt[PLEN + 16];

	(void)state;
	snprintf(opt, sizeof(opt), "--stats=%s/summary", g_scratch);
	check_dies_by(opt, "trap - INT; kill -INT $$", SIGINT);
}

/* kill(launcher, SIGTERM), as a CI timeout does: the command gets it and the
 * launcher then dies by it. */
static void test_launcher_stats_mode_forwards_sigterm_to_command(void **state)
{
	char opt[PLEN + 16], ready[PLEN], o[PLEN], e[PLEN], *got;
	int status;
	pid_t pid;

	(void)state;
	snprintf(opt, sizeof(opt), "--stats=%s/summary", g_scratch);
	sp(ready, "%s/ready", g_scratch);
	sp(o, "%s/fwd.out", g_scratch);
	sp(e, "%s/fwd.err", g_scratch);
	unlink(ready);
	char script[3 * PLEN + 64];
	snprintf(script, sizeof(script), "echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 30", ready,
		 ready, ready);
	char *argv[] = { (char *)g_launcher, opt, "--", "sh", "-c", script, NULL };
	pid = spawn(argv, NULL, o, e);
	for (int i = 0; i < 1000 && access(ready, F_OK) != 0; i++)
		usleep(10000);
	assert_int_equal(access(ready, F_OK), 0);
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	got = slurp(ready, NULL);
	/* the command (sleep, same pid as the sh) is gone too */
	assert_int_equal(kill((pid_t)strtol(got, NULL, 10), 0), -1);
	free(got);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGTERM);
}

static void self_path(char *out);

/* Run in a session: print "COMM|CMDLINE" (NULs as '|') of the process
 * whose command line names $RCUWALK_SESSION, or "none". */
static int find_watcher_main(void)
{
	const char *dir = getenv("RCUWALK_SESSION");
	DIR *proc = opendir("/proc");
	struct dirent *e;

	if (!dir || !proc)
		return 2;
	while ((e = readdir(proc))) {
		char p[PLEN], comm[64] = "", cmd[PLEN];
		ssize_t n;
		int fd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9' || atol(e->d_name) == getpid())
			continue;
		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		fd = open(p, O_RDONLY);
		n = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = '|';
		cmd[n] = '\0';
		if (!strstr(cmd, dir))
			continue;
		snprintf(p, sizeof(p), "/proc/%s/comm", e->d_name);
		fd = open(p, O_RDONLY);
		n = fd >= 0 ? read(fd, comm, sizeof(comm) - 1) : -1;
		if (fd >= 0)
			close(fd);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		printf("%s|%s\n", comm, cmd);
		closedir(proc);
		return 0;
	}
	closedir(proc);
	printf("none\n");
	return 0;
}

static void test_launcher_command_not_found_exits_127(void **state)
{
	char *argv[] = { (char *)g_launcher, "--", "rcuwalk-no-such-command-xyz", NULL };
	struct run r;

	(void)state;
	run(argv, NULL, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 127);
	run_free(&r);
}

static void test_launcher_unknown_option_exits_125(void **state)
{
	char *argv[] = { (char *)g_launcher, "--frobnicate", "--", "true", NULL };
	struct run r;

	(void)state;
	run(argv, NULL, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 125);
	assert_non_null(strstr(r.err, "unknown option"));
	run_free(&r);
}

/* ps shows the session's watcher as "rcuwalk-watcher <session dir>" (comm
 * and command line), not as the launcher's command line, whose command may
 * have ended while the watcher is kept.  Short and long launcher command
 * lines: the name fits the launcher's argv area, or runs on past it. */
static void test_launcher_watcher_names_itself_with_its_session(void **state)
{
	char self[PLEN], want[PLEN + 64], log[PLEN], logopt[PLEN + 16], pad[600], *text;
	char *shortv[] = { (char *)g_launcher, "--", self, "--find-watcher", NULL };
	char *longv[] = { (char *)g_launcher, logopt, "--", self, "--find-watcher", pad, NULL };
	char **argvs[] = { shortv, longv };
	struct run r;

	(void)state;
	self_path(self);
	sp(log, "%s/watcher-name.log", g_scratch);
	sp(logopt, "--log=%s", log);
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (size_t i = 0; i < 2; i++) {
		char dir[PLEN];

		run(argvs[i], NULL, &r);
		if (r.status == 512) { /* no RCUWALK_SESSION: no watcher could start */
			text = slurp(log, NULL);
			print_message("no session here: skipping (%s)\n", text);
			free(text);
			run_free(&r);
			skip();
		}
		assert_int_equal(r.status, 0);
		assert_true(sscanf(r.out, "rcuwalk-watcher|rcuwalk-watcher %1000[^|\n]", dir) == 1);
		snprintf(want, sizeof(want), "rcuwalk-watcher|rcuwalk-watcher %s|\n", dir);
		assert_string_equal(r.out, want);
		assert_true(dir[0] == '/');
		run_free(&r);
	}
	unlink(log);
}

/* `rcuwalk` with no command: one line of usage on stderr, status 125. */
static void test_launcher_without_a_command_prints_one_line_and_exits_125(void **state)
{
	char *alone[] = { (char *)g_launcher, NULL };
	char *opts[] = { (char *)g_launcher, "--stats", "--", NULL };
	char **argvs[] = { alone, opts };
	struct run r;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		run(argvs[i], NULL, &r);
		assert_true(WIFEXITED(r.status));
		assert_int_equal(WEXITSTATUS(r.status), 125);
		assert_int_equal(r.out_len, 0);
		assert_int_equal(count_substr(r.err, "\n"), 1);
		assert_non_null(strstr(r.err, "usage: rcuwalk"));
		run_free(&r);
	}
}

static void test_launcher_help_and_version_go_to_stdout(void **state)
{
	char *help[] = { (char *)g_launcher, "--help", NULL };
	char *version[] = { (char *)g_launcher, "--version", NULL };
	struct run r;

	(void)state;
	run(help, NULL, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "usage: rcuwalk"));
	assert_non_null(strstr(r.out, "--max-mb"));
	assert_int_equal(r.err_len, 0);
	run_free(&r);
	run(version, NULL, &r);
	assert_int_equal(r.status, 0);
	assert_true(!strncmp(r.out, "rcuwalk ", 8));
	assert_non_null(strstr(r.out, g_shim));
	/* where to report problems (RCUWALK_BUG_URL, set at configure time) */
	assert_non_null(strstr(r.out, "\nreport problems to: "));
	assert_int_equal(r.err_len, 0);
	run_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Launcher: the environment the command sees */

/* What the launcher puts into LD_PRELOAD for the build's library: its path,
 * or, from a checkout whose path has ':' or ' ', the link the launcher names
 * in --version (checked to lead to the library; the link tests below check
 * the rest). */
static const char *shim_entry(void)
{
	static char entry[PLEN];
	char got[PATH_MAX], want[PATH_MAX];
	const char *l;
	struct run r;

	if (!strpbrk(g_shim, ": "))
		return g_shim;
	char *version[] = { (char *)g_launcher, "--version", NULL };
	run(version, NULL, &r);
	assert_int_equal(r.status, 0);
	l = strstr(r.out, "LD_PRELOAD entry: ");
	assert_non_null(l);
	snprintf(entry, sizeof(entry), "%.*s", (int)strcspn(l + 18, "\n"), l + 18);
	run_free(&r);
	assert_non_null(realpath(entry, got));
	assert_non_null(realpath(g_shim, want));
	assert_string_equal(got, want);
	return entry;
}

static void test_launcher_sets_ld_preload_to_the_library(void **state)
{
	char *argv[] = { (char *)g_launcher, "--", "env", NULL };
	const char *env[] = { "LD_PRELOAD", NULL };
	char v[PLEN];
	struct run r;

	(void)state;
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(env_value(r.out, "LD_PRELOAD", v, sizeof(v)));
	assert_string_equal(v, shim_entry());
	run_free(&r);
}

static void test_launcher_keeps_ld_preload_and_appends_library(void **state)
{
	char *argv[] = { (char *)g_launcher, "--", "env", NULL };
	char want[PLEN], v[PLEN];
	struct run r;

	(void)state;
	/* a real library, so that ld.so prints nothing */
	const char *env[] = { "LD_PRELOAD=libm.so.6", NULL };
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(env_value(r.out, "LD_PRELOAD", v, sizeof(v)));
	sp(want, "libm.so.6:%s", shim_entry());
	assert_string_equal(v, want);
	assert_int_equal(r.err_len, 0);
	run_free(&r);
}

static void test_launcher_nested_does_not_duplicate_library(void **state)
{
	char *argv[] = { (char *)g_launcher, "--", (char *)g_launcher, "--", "env", NULL };
	const char *env[] = { "LD_PRELOAD", NULL };
	char v[PLEN];
	struct run r;

	(void)state;
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(env_value(r.out, "LD_PRELOAD", v, sizeof(v)));
	assert_string_equal(v, shim_entry());
	assert_int_equal(count_substr(v, "librcuwalk.so"), 1);
	run_free(&r);
}

/* A sanitizer runtime must be the first object of the process: the launcher
 * leaves it first.  (Its name only: the sanitizer need not be installed, and
 * what ld.so prints about a missing one is not looked at.) */
static void test_launcher_sanitizer_runtime_stays_first(void **state)
{
	char *argv[] = { (char *)g_launcher, "--", "env", NULL };
	const char *env[] = { "LD_PRELOAD=/nonexistent/libasan.so.8 libm.so.6", NULL };
	char v[PLEN], want[PLEN];
	struct run r;

	(void)state;
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(env_value(r.out, "LD_PRELOAD", v, sizeof(v)));
	sp(want, "/nonexistent/libasan.so.8 libm.so.6:%s", shim_entry());
	assert_string_equal(v, want);
	run_free(&r);
}

static void test_launcher_options_set_their_environment_variables(void **state)
{
	char *argv[] = { (char *)g_launcher, "--disable", "--max-mb=12", "--", "env", NULL };
	char *argv2[] = { (char *)g_launcher, "--max-mb", "7", "env", NULL };
	const char *env[] = { "RCUWALK_DISABLE", "RCUWALK_MAX_MB", NULL };
	char v[PLEN];
	struct run r;

	(void)state;
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(env_value(r.out, "RCUWALK_DISABLE", v, sizeof(v)));
	assert_string_equal(v, "1");
	assert_non_null(env_value(r.out, "RCUWALK_MAX_MB", v, sizeof(v)));
	assert_string_equal(v, "12");
	run_free(&r);
	run(argv2, env, &r);
	assert_int_equal(r.status, 0);
	assert_null(env_value(r.out, "RCUWALK_DISABLE", v, sizeof(v)));
	assert_non_null(env_value(r.out, "RCUWALK_MAX_MB", v, sizeof(v)));
	assert_string_equal(v, "7");
	run_free(&r);
}

/* A session is the default (one watcher for the tree: RCUWALK_SESSION names
 * its directory); --no-session opts out, and refuses --keep, which keeps a
 * session.  Where no watcher can start the command runs without one, so the
 * default is checked only when the launcher's log says it started or held
 * one. */
static void test_launcher_session_is_the_default_and_no_session_opts_out(void **state)
{
	char log[PLEN], logopt[PLEN + 16], v[PLEN], *text;
	char *argv1[] = { (char *)g_launcher, logopt, "--", "env", NULL };
	char *argv2[] = { (char *)g_launcher, "--no-session", "--", "env", NULL };
	char *argv3[] = { (char *)g_launcher, "--no-session", "--keep=5", "--", "true", NULL };
	const char *env[] = { "RCUWALK_SESSION", NULL };
	struct run r;

	(void)state;
	sp(log, "%s/session.log", g_scratch);
	sp(logopt, "--log=%s", log);
	run(argv1, env, &r);
	assert_int_equal(r.status, 0);
	text = slurp(log, NULL);
	assert_non_null(text);
	if (strstr(text, "RCUWALK_SESSION=")) {
		assert_non_null(env_value(r.out, "RCUWALK_SESSION", v, sizeof(v)));
		assert_true(v[0] == '/');
	} else {
		assert_non_null(strstr(text, "no watcher"));
	}
	free(text);
	run_free(&r);
	run(argv2, env, &r);
	assert_int_equal(r.status, 0);
	assert_null(env_value(r.out, "RCUWALK_SESSION", v, sizeof(v)));
	run_free(&r);
	run(argv3, NULL, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 125);
	run_free(&r);
	unlink(log);
}

/* The TSC's rate in kHz, measured here over ~20 ms against CLOCK_MONOTONIC;
 * 0 where there is no invariant TSC (the launcher then sets nothing). */
static double tsc_khz_here(void)
{
#if defined(__x86_64__)
	unsigned int a, b, c, d;
	struct timespec t0, t1;
	unsigned long long c0, c1;
	double ns;

	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	c0 = __rdtsc();
	do
		clock_gettime(CLOCK_MONOTONIC, &t1);
	while ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec) < 20e6);
	c1 = __rdtsc();
	ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	return (double)(c1 - c0) / ns * 1e6;
#else
	return 0;
#endif
}

/* The launcher measures the TSC's rate over its own run and passes it on
 * (preload/rcuwalk.c, "The TSC's rate": the shim's warm-up counts by it),
 * with or without a session, replacing a value it inherited: within 2% of
 * this test's own measure (it measures over 0.2 ms or more, to ~0.1%).
 * Without an invariant TSC it sets none. */
static void test_launcher_passes_on_the_tsc_rate_it_measured(void **state)
{
	char v[64];
	char *argv1[] = { (char *)g_launcher, "--", "env", NULL };
	char *argv2[] = { (char *)g_launcher, "--no-session", "--", "env", NULL };
	const char *env[] = { "RCUWALK_TSC_KHZ=123", NULL };
	double here = tsc_khz_here();
	struct run r;

	(void)state;
	for (int k = 0; k < 2; k++) {
		run(k ? argv2 : argv1, env, &r);
		assert_int_equal(r.status, 0);
		if (here > 0) {
			double got;

			assert_non_null(env_value(r.out, "RCUWALK_TSC_KHZ", v, sizeof(v)));
			got = strtod(v, NULL);
			print_message("TSC rate: the launcher's %s kHz, this test's %.0f kHz\n", v, here);
			assert_true(got > here * 0.98 && got < here * 1.02);
		} else {
			assert_true(!env_value(r.out, "RCUWALK_TSC_KHZ", v, sizeof(v)) ||
				    strcmp(v, "123") == 0);
		}
		run_free(&r);
	}
}

/* --dir-rent=N (cache/dcache_populate.c, "Directory rent"): in a session,
 * processes rent the directories on their way, N lookups each at most (the
 * launcher passes the option on: the ctest environment's RCUWALK_DIR_RENT=0
 * is overridden), so at least two records count pass_rent >= 3 (two shells
 * test 30 names each, a third searches PATH); then the cache answers (hits).
 * Every answer is the kernel's: each shell prints which of its 30 names
 * exist, as the tree says.  --dir-rent=0: nothing rented. */
static void test_launcher_dir_rent_passes_a_directorys_first_lookups_through(void **state)
{
	char d[PLEN], f[PLEN], sum[PLEN], opt[PLEN + 16], script[4 * PLEN + 32], want[64] = "";
	char recf[PLEN], recenv[PLEN + 16];
	char *argv[] = { (char *)g_launcher, opt, "--warmup=0", NULL, "--", "sh", "-c", script, NULL };
	const char *env[] = { recenv, NULL };
	struct rec recs[16];
	char *text;
	struct run r;

	(void)state;
	sp(d, "%s/rent", g_scratch);
	assert_int_equal(mkdir(d, 0755), 0);
	for (int i = 0; i < 5; i += 2) {
		sp(f, "%s/n%d", d, i);
		close(open(f, O_CREAT | O_WRONLY, 0644));
	}
	for (int i = 0; i < 30; i++)
		strcat(want, i % 5 % 2 == 0 ? "1" : "0");
	sp(f, "%s/rent.sh", g_scratch);
	{
		FILE *sh = fopen(f, "w");

		assert_non_null(sh);
		fputs("for i in $(seq 0 29); do [ -e \"$1/n$((i % 5))\" ] && printf 1 || printf 0; done; echo\n",
		      sh);
		fclose(sh);
	}
	snprintf(script, sizeof(script), "sh '%s' '%s'; sh '%s' '%s'", f, d, f, d);
	for (int k = 0; k < 2; k++) {
		long long rent, hits;

		int n, renters = 0;

		sp(sum, "%s/rent.summary", g_scratch);
		snprintf(opt, sizeof(opt), "--stats=%s", sum);
		sp(recf, "%s/rent.records", g_scratch);
		snprintf(recenv, sizeof(recenv), "RCUWALK_STATS=%s", recf);
		argv[3] = k ? "--dir-rent=0" : "--dir-rent=3";
		run(argv, env, &r);
		assert_int_equal(r.status, 0);
		print_message("--dir-rent=%d: %s", k ? 0 : 3, r.out);
		assert_int_equal(strncmp(r.out, want, 30), 0);
		assert_int_equal(r.out[30], '\n');
		assert_int_equal(strncmp(r.out + 31, want, 30), 0);
		text = slurp(sum, NULL);
		rent = summary_value(text, "pass_rent");
		hits = summary_value(text, "hits") + summary_value(text, "neg_hits");
		n = read_recs(recf, recs, 16);
		for (int i = 0; i < n && i < 16; i++)
			renters += recs[i].v[I_pass_rent] >= 3;
		print_message("pass_rent %lld (%d of %d records at least 3), hits + neg_hits %lld\n",
			      rent, renters, n, hits);
		if (k)
			assert_int_equal(rent, 0);
		else
			assert_true(renters >= 2); /* both rent.sh shells, at least */
		assert_true(hits > 0);
		free(text);
		unlink(sum);
		unlink(recf);
		run_free(&r);
	}
}

/* Whether directory `d` holds an entry whose name starts with `prefix`. */
static int has_entry(const char *d, const char *prefix)
{
	DIR *dir = opendir(d);
	struct dirent *e;
	int found = 0;

	if (!dir)
		return 0;
	while (!found && (e = readdir(dir)))
		found = !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(dir);
	return found;
}

/* A session whose memory cannot be allocated (issue 23, items 1 and 8):
 * under RLIMIT_FSIZE (prlimit; the memfds' sizes count) of 4 MB the ring
 * (17.8 MiB) is refused: no session, the command runs, one --log line says
 * why, and no directory is left behind; of 24 MB the arena (32 MiB) is
 * refused: a session without it (RCUWALK_SESSION_FDS names no arena), said
 * in the --log.  Never a fault. */
static void test_launcher_session_memory_refused_is_a_log_line_not_a_fault(void **state)
{
	char log[PLEN], logopt[PLEN + 16], xdg[PLEN], xenv[PLEN + 32], base[PLEN], v[PLEN], *text;
	char *argv1[] = { "prlimit", "--fsize=4000000", "--", (char *)g_launcher, logopt, "--", "env", NULL };
	char *argv2[] = { "prlimit", "--fsize=24000000", "--", (char *)g_launcher, logopt, "--", "env", NULL };
	const char *env[] = { "RCUWALK_SESSION", "RCUWALK_SESSION_FDS", xenv, NULL };
	struct run r;

	(void)state;
	if (access("/usr/bin/prlimit", X_OK) != 0 && access("/bin/prlimit", X_OK) != 0)
		skip();
	sp(log, "%s/mem.log", g_scratch);
	sp(logopt, "--log=%s", log);
	sp(xdg, "%s/xdg-mem", g_scratch);
	assert_int_equal(mkdir(xdg, 0700), 0);
	sp(xenv, "XDG_RUNTIME_DIR=%s", xdg);
	sp(base, "%s/rcuwalk-%u", xdg, (unsigned)geteuid());
	run(argv1, env, &r);
	assert_int_equal(r.status, 0);
	assert_null(env_value(r.out, "RCUWALK_SESSION", v, sizeof(v)));
	text = slurp(log, NULL);
	assert_non_null(text);
	if (!strstr(text, "no watcher (rcuwalk-ring"))
		print_message("log: %s\n", text);
	assert_non_null(strstr(text, "no watcher (rcuwalk-ring"));
	assert_non_null(strstr(text, "File too large"));
	free(text);
	run_free(&r);
	assert_false(has_entry(base, "session."));
	unlink(log);
	run(argv2, env, &r);
	assert_int_equal(r.status, 0);
	text = slurp(log, NULL);
	assert_non_null(text);
	/* The ring fits under 24 MB, the arena does not: a session, said to
	 * be without its arena. */
	if (!strstr(text, "--session: rcuwalk-arena"))
		print_message("log: %s\n", text);
	assert_non_null(strstr(text, "--session: rcuwalk-arena"));
	assert_non_null(env_value(r.out, "RCUWALK_SESSION_FDS", v, sizeof(v)));
	assert_non_null(strstr(v, ":-1"));
	free(text);
	run_free(&r);
	unlink(log);
}

/* The session's sockets go under <$XDG_RUNTIME_DIR>/rcuwalk-<euid>/, which
 * must be a directory of ours, 0700, not a symlink (issue 23, item 4):
 * otherwise no session (the command runs with per-process caches) and a
 * --log line that says why; nothing is made in it. */
static void test_launcher_session_refused_where_its_directory_is_not_ours(void **state)
{
	char log[PLEN], logopt[PLEN + 16], xdg[PLEN], xenv[PLEN + 32], base[PLEN], other[PLEN];
	char v[PLEN], *text;
	char *argv[] = { (char *)g_launcher, logopt, "--", "env", NULL };
	const char *env[] = { "RCUWALK_SESSION", "RCUWALK_SESSION_FDS", xenv, NULL };
	struct run r;

	(void)state;
	sp(log, "%s/base.log", g_scratch);
	sp(logopt, "--log=%s", log);
	sp(xdg, "%s/xdg-base", g_scratch);
	assert_int_equal(mkdir(xdg, 0700), 0);
	sp(xenv, "XDG_RUNTIME_DIR=%s", xdg);
	sp(base, "%s/rcuwalk-%u", xdg, (unsigned)geteuid());
	sp(other, "%s/elsewhere", xdg);
	for (int k = 0; k < 2; k++) {
		if (k == 0) { /* ours, but 0755 */
			assert_int_equal(mkdir(base, 0700), 0);
			assert_int_equal(chmod(base, 0755), 0);
		} else { /* a symlink to a 0700 directory */
			assert_int_equal(rmdir(base), 0);
			assert_int_equal(mkdir(other, 0700), 0);
			assert_int_equal(symlink(other, base), 0);
		}
		run(argv, env, &r);
		assert_int_equal(r.status, 0);
		assert_null(env_value(r.out, "RCUWALK_SESSION", v, sizeof(v)));
		text = slurp(log, NULL);
		assert_non_null(text);
		if (!strstr(text, "refused"))
			print_message("log: %s\n", text);
		assert_non_null(strstr(text, "no watcher"));
		assert_non_null(strstr(text, base));
		assert_non_null(strstr(text, "refused"));
		free(text);
		run_free(&r);
		assert_false(has_entry(k ? other : base, "session."));
		unlink(log);
	}
}

/* --warmup takes a number of lookups or a time (preload/config.c). */
static void test_launcher_warmup_takes_a_count_or_a_time(void **state)
{
	static const char *const ok[] = { "300us", "2ms", "0", "64" };
	const char *env[] = { "RCUWALK_WARMUP", NULL };
	char opt[64], v[PLEN];
	struct run r;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char *argv[] = { (char *)g_launcher, opt, "--", "env", NULL };

		snprintf(opt, sizeof(opt), "--warmup=%s", ok[i]);
		run(argv, env, &r);
		assert_int_equal(r.status, 0);
		assert_non_null(env_value(r.out, "RCUWALK_WARMUP", v, sizeof(v)));
		assert_string_equal(v, ok[i]);
		run_free(&r);
	}
}

/* The options for the policy variables (preload/config.c). */
static void test_launcher_policy_options_set_their_environment_variables(void **state)
{
	static const char *const want[][2] = {
		{ "RCUWALK_COMPLETE", "0" },	 { "RCUWALK_COMPLETE_MAX", "5" },
		{ "RCUWALK_RACY_MS", "0" },	 { "RCUWALK_NO_NEGATIVE", "1" },
		{ "RCUWALK_TTL_MS", "250" },	 { "RCUWALK_NEG_TTL_MS", "0" },
		{ "RCUWALK_STRICT", "1" },	 { "RCUWALK_WATCH_BUDGET", "3" },
		{ "RCUWALK_WARMUP", "5" },	 { "RCUWALK_SCRATCH_FULL", "1" },
	};
	char *argv[] = { (char *)g_launcher, "--complete=0", "--complete-max", "5", "--racy-ms=0",
			 "--no-negative", "--exclude=gen:/abs/dir", "--ttl-ms=250", "--neg-ttl-ms=0",
			 "--strict", "--watch-budget", "3", "--warmup=5", "--scratch-full", "--", "env",
			 NULL };
	const char *env[] = { "RCUWALK_COMPLETE", "RCUWALK_COMPLETE_MAX", "RCUWALK_RACY_MS",
			      "RCUWALK_NO_NEGATIVE", "RCUWALK_EXCLUDE", "RCUWALK_TTL_MS",
			      "RCUWALK_NEG_TTL_MS", "RCUWALK_STRICT", "RCUWALK_WATCH_BUDGET",
			      "RCUWALK_WARMUP", "RCUWALK_SCRATCH_FULL", NULL };
	char v[PLEN], cwd[PLEN], excl[2 * PLEN];
	struct run r;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (!env_value(r.out, want[i][0], v, sizeof(v)))
			fail_msg("%s not set", want[i][0]);
		assert_string_equal(v, want[i][1]);
	}
	/* relative directories are made absolute: every process reads it from
	 * its own working directory */
	assert_non_null(env_value(r.out, "RCUWALK_EXCLUDE", v, sizeof(v)));
	snprintf(excl, sizeof(excl), "%s/gen:/abs/dir", cwd);
	assert_string_equal(v, excl);
	run_free(&r);
}

/* --verify[=FILE]: RCUWALK_VERIFY=1, and the log is FILE (made absolute),
 * else the --log file, else the library's own default (no variable). */
static void test_launcher_verify_sets_verify_and_its_log_file(void **state)
{
	char log[PLEN], logopt[PLEN + 16], v[PLEN], cwd[PLEN], want[2 * PLEN];
	char *argv1[] = { (char *)g_launcher, "--verify=rel.log", "--", "env", NULL };
	char *argv2[] = { (char *)g_launcher, logopt, "--verify", "--", "env", NULL };
	char *argv3[] = { (char *)g_launcher, "--verify", "--", "env", NULL };
	const char *env[] = { "RCUWALK_VERIFY", "RCUWALK_VERIFY_LOG", NULL };
	struct run r;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	sp(log, "%s/verify-launcher.log", g_scratch);
	snprintf(logopt, sizeof(logopt), "--log=%s", log);
	run(argv1, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(env_value(r.out, "RCUWALK_VERIFY", v, sizeof(v)));
	assert_string_equal(v, "1");
	assert_non_null(env_value(r.out, "RCUWALK_VERIFY_LOG", v, sizeof(v)));
	snprintf(want, sizeof(want), "%s/rel.log", cwd);
	assert_string_equal(v, want);
	run_free(&r);
	run(argv2, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(env_value(r.out, "RCUWALK_VERIFY_LOG", v, sizeof(v)));
	assert_string_equal(v, log);
	run_free(&r);
	run(argv3, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(env_value(r.out, "RCUWALK_VERIFY", v, sizeof(v)));
	assert_null(env_value(r.out, "RCUWALK_VERIFY_LOG", v, sizeof(v)));
	run_free(&r);
	unlink(log);
}

static void test_launcher_bad_option_values_exit_125(void **state)
{
	static const char *const bad[] = { "--max-mb=lots", "--max-mb=0",   "--complete=-1",
					   "--racy-ms=1x",  "--ttl-ms=",    "--no-negative=1",
					   "--exclude=",    "--disable=yes", "--strict=1",
					   "--watch-budget=-3", "--watch-budget=many",
					   "--warmup=-1", "--warmup=x", "--warmup=3s",
					   "--warmup=us", "--warmup=5usx" };
	struct run r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { (char *)g_launcher, (char *)bad[i], "--", "true", NULL };

		run(argv, NULL, &r);
		if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 125)
			fail_msg("%s: status %#x", bad[i], r.status);
		assert_true(r.err_len > 0);
		run_free(&r);
	}
}

/* "D1:...:Dn" of n directories in the scratch directory (made). */
static void exclude_list(char *out, size_t size, int n)
{
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		char d[PLEN];

		sp(d, "%s/excl%d", g_scratch, i);
		if (mkdir(d, 0755) != 0)
			assert_int_equal(errno, EEXIST);
		len += (size_t)snprintf(out + len, size - len, "%s%s", i ? ":" : "", d);
		assert_true(len < size);
	}
}

/* The library keeps 16 excluded directories (DCACHE_MAX_EXCLUDES): a 17th
 * given to the launcher is an error naming the limit, not a directory
 * silently cached. */
static void test_launcher_exclude_past_its_limit_exits_125(void **state)
{
	char list[16 * 1024], opt[16 * 1024 + 16];
	char *argv[] = { (char *)g_launcher, opt, "--", "true", NULL };
	struct run r;

	(void)state;
	exclude_list(list, sizeof(list), 16);
	snprintf(opt, sizeof(opt), "--exclude=%s", list);
	run(argv, NULL, &r);
	assert_int_equal(r.status, 0);
	run_free(&r);
	exclude_list(list, sizeof(list), 17);
	snprintf(opt, sizeof(opt), "--exclude=%s", list);
	run(argv, NULL, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 125);
	if (!strstr(r.err, "limit is 16"))
		fail_msg("no limit named: %s", r.err);
	run_free(&r);
}

/* RCUWALK_EXCLUDE read without the launcher (plain LD_PRELOAD): a list the
 * library cannot honour whole makes it cache nothing, and say so once per
 * process in the user's own directory ($TMPDIR/rcuwalk-<euid>/rcuwalk-config.log
 * without XDG_RUNTIME_DIR); 16 directories are kept
 * and the cache answers. */
static void test_preload_exclude_past_its_limit_caches_nothing_and_says_so(void **state)
{
	char list[16 * 1024], excl[16 * 1024 + 32], self[PLEN], records[PLEN],
		stats_env[PLEN + 32], tmpdir[PLEN], tmp_env[PLEN + 16], log[PLEN], n[16];
	char linkdir[64] = "", shim[PLEN];
	char *argv[] = { self, "--lookups-_exit", n, NULL };
	const char *env[] = { excl, stats_env, tmp_env, "LD_PRELOAD", NULL };
	struct rec recs[4];
	struct run r;
	char *txt;

	(void)state;
	self_path(self);
	snprintf(n, sizeof(n), "%d", 200);
	sp(records, "%s/excl-records", g_scratch);
	snprintf(stats_env, sizeof(stats_env), "RCUWALK_STATS=%s", records);
	sp(tmpdir, "%s/excl-tmp", g_scratch);
	assert_int_equal(mkdir(tmpdir, 0700), 0);
	snprintf(tmp_env, sizeof(tmp_env), "TMPDIR=%s", tmpdir);
	sp(log, "%s/rcuwalk-%ld/rcuwalk-config.log", tmpdir, (long)geteuid());
	/* ld.so splits LD_PRELOAD at spaces and colons: a checkout below a
	 * path with one (CI's second clone) preloads through a link. */
	if (strpbrk(g_shim, " :")) {
		assert_non_null(mkdtemp(strcpy(linkdir, "/tmp/rcuwalk-test-shim.XXXXXX")));
		sp(shim, "%s/librcuwalk.so", linkdir);
		assert_int_equal(symlink(g_shim, shim), 0);
	} else {
		sp(shim, "%s", g_shim);
	}
	for (int k = 16; k <= 17; k++) {
		char pre[PLEN + 16];

		exclude_list(list, sizeof(list), k);
		snprintf(excl, sizeof(excl), "RCUWALK_EXCLUDE=%s", list);
		snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", shim);
		env[3] = pre;
		unlink(records);
		run(argv, env, &r);
		assert_int_equal(r.status, 0);
		assert_int_equal(r.err_len, 0);
		run_free(&r);
		if (k == 16) {
			assert_int_equal(read_recs(records, recs, 4), 1);
			assert_true(recs[0].v[I_neg_hits] > 0);
			assert_int_equal(access(log, F_OK), -1);
		} else {
			if (read_recs(records, recs, 4) == 1)
				assert_int_equal(recs[0].v[I_hits] + recs[0].v[I_neg_hits], 0);
			txt = slurp(log, NULL);
			assert_int_equal(count_substr(txt, "RCUWALK_EXCLUDE="), 1);
			assert_non_null(strstr(txt, "nothing is cached"));
			free(txt);
		}
	}
	assert_int_equal(unlink(log), 0);
	unlink(records);
	{
		char own[PLEN];

		sp(own, "%s/rcuwalk-%ld", tmpdir, (long)geteuid());
		rmdir(own);
	}
	rmdir(tmpdir);
	if (linkdir[0]) {
		unlink(shim);
		rmdir(linkdir);
	}
}

/* RCUWALK_NAME_INDEX=1 gives whole names path-index entries of their own:
 * repeated names resolve in one step (index_hits).  By default only their
 * directory prefixes have entries: no index_hits, prefix_hits instead. */
static void test_preload_name_index_env_turns_whole_name_entries_on(void **state)
{
	char self[PLEN], dir[PLEN], records[PLEN], stats_env[PLEN + 16];
	char *argv[] = { (char *)g_launcher, "--no-session", "--warmup=0", "--", self,
			 "--index-lookups", dir, "700", NULL };
	const char *env[] = { stats_env, "RCUWALK_NAME_INDEX", NULL };
	struct rec recs[4];
	struct run r;

	(void)state;
	self_path(self);
	sp(dir, "%s/name-index", g_scratch);
	assert_int_equal(mkdir(dir, 0755), 0);
	sp(records, "%s/name-index-records", g_scratch);
	snprintf(stats_env, sizeof(stats_env), "RCUWALK_STATS=%s", records);
	for (int on = 0; on <= 1; on++) {
		env[1] = on ? "RCUWALK_NAME_INDEX=1" : "RCUWALK_NAME_INDEX";
		unlink(records);
		run(argv, env, &r);
		assert_int_equal(r.status, 0);
		run_free(&r);
		assert_int_equal(read_recs(records, recs, 4), 1);
		print_message("RCUWALK_NAME_INDEX %s: index_hits %llu, prefix_hits %llu, neg_hits %llu\n",
			      on ? "=1" : "unset", recs[0].v[I_index_hits], recs[0].v[I_prefix_hits],
			      recs[0].v[I_neg_hits]);
		assert_true(recs[0].v[I_neg_hits] >= 600);
		if (on) {
			assert_true(recs[0].v[I_index_hits] >= 500);
		} else {
			assert_int_equal(recs[0].v[I_index_hits], 0);
			assert_true(recs[0].v[I_prefix_hits] >= 500);
		}
	}
	unlink(records);
}

/* Without --stats nothing but the command's own output; --log gets the
 * diagnostics. */
static void test_launcher_prints_only_the_commands_output_and_logs_to_log_file(void **state)
{
	char log[PLEN], opt[PLEN + 16], *logtext;
	struct run r;

	(void)state;
	sp(log, "%s/launcher.log", g_scratch);
	unlink(log);
	snprintf(opt, sizeof(opt), "--log=%s", log);
	char *argv[] = { (char *)g_launcher, opt, "--", "sh", "-c",
			 "echo out; echo err >&2; test -e /rcuwalk-absent; ls / >/dev/null", NULL };
	run(argv, NULL, &r);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "out\n");
	assert_string_equal(r.err, "err\n");
	logtext = slurp(log, NULL);
	assert_non_null(strstr(logtext, "LD_PRELOAD="));
	assert_non_null(strstr(logtext, "exec sh"));
	free(logtext);
	run_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Installed layouts */

static void test_launcher_finds_library_installed_to_temporary_prefix(void **state)
{
	const char *cmake = env_or_skip("RCUWALK_CMAKE");
	const char *build = env_or_skip("RCUWALK_BUILD_DIR");
	char prefix[PLEN], bin[PLEN], lib[PLEN], records[PLEN], v[PLEN], path[PLEN];
	struct rec recs[8];
	struct run r;

	(void)state;
	sp(prefix, "%s/prefix", g_scratch);
	char *inst[] = { (char *)cmake, "--install", (char *)build, "--prefix", prefix, NULL };
	run(inst, NULL, &r);
	if (r.status != 0)
		print_message("cmake --install: %s%s\n", r.out, r.err);
	assert_int_equal(r.status, 0);
	run_free(&r);

	sp(bin, "%s/bin/rcuwalk", prefix);
	sp(lib, "%s/lib/librcuwalk.so", prefix);
	assert_int_equal(access(bin, X_OK), 0);
	assert_int_equal(access(lib, R_OK), 0);
	/* what else the install puts there */
	sp(path, "%s/lib/pkgconfig/rcuwalk.pc", prefix);
	assert_int_equal(access(path, R_OK), 0);
	sp(path, "%s/share/doc/rcuwalk/README.md", prefix);
	assert_int_equal(access(path, R_OK), 0);
	sp(path, "%s/share/man/man1/rcuwalk.1", prefix);
	char gz[PLEN];
	sp(gz, "%s.gz", path);
	assert_true(access(path, R_OK) == 0 || access(gz, R_OK) == 0);

	/* the installed launcher preloads the installed library, which runs */
	sp(records, "%s/prefix-records", g_scratch);
	unlink(records);
	char stats_env[PLEN + 32];
	snprintf(stats_env, sizeof(stats_env), "RCUWALK_STATS=%s", records);
	const char *env[] = { "LD_PRELOAD", stats_env, NULL };
	char *argv[] = { bin, "--", "env", NULL };
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	assert_non_null(env_value(r.out, "LD_PRELOAD", v, sizeof(v)));
	assert_string_equal(v, lib);
	assert_true(read_recs(records, recs, 8) >= 1);
	run_free(&r);

	/* pkg-config tells where the library is */
	char pcdir[PLEN + 32];
	snprintf(pcdir, sizeof(pcdir), "PKG_CONFIG_PATH=%s/lib/pkgconfig", prefix);
	const char *pcenv[] = { pcdir, NULL };
	char *pc[] = { "pkg-config", "--variable=preloadlib", "rcuwalk", NULL };
	run(pc, pcenv, &r);
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 121) {
		run_free(&r);
		return; /* no pkg-config on this machine */
	}
	assert_int_equal(r.status, 0);
	sp(v, "%s\n", lib);
	assert_string_equal(r.out, v);
	run_free(&r);
}

/* Copy `from` to `to` as install(1) does: a new file renamed over the old
 * one.  Writing into the old one fails with ETXTBSY while a process still
 * runs it: the session watcher of a launcher copied there by the previous
 * test, which outlives its command by its teardown (CI's step 6, two suites
 * at once, failed test_launcher_32bit_child_prints_no_loader_error so). */
static int copy_file(const char *from, const char *to, mode_t mode)
{
	char buf[65536], tmp[PLEN + 8];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	snprintf(tmp, sizeof(tmp), "%s.new", to);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	if (close(out) != 0)
		return -1;
	return rename(tmp, to);
}

static void mkdirs(const char *path)
{
	char p[PLEN];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static int files_left;

static int count_file(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)p;
	(void)st;
	(void)ftw;
	files_left += type == FTW_F || type == FTW_SL;
	return 0;
}

/* `cmake --build BUILD --target uninstall` removes every file that
 * `cmake --install BUILD` wrote (build/install_manifest.txt). */
static void test_launcher_uninstall_target_removes_what_install_wrote(void **state)
{
	const char *cmake = env_or_skip("RCUWALK_CMAKE");
	const char *build = env_or_skip("RCUWALK_BUILD_DIR");
	char prefix[PLEN], path[PLEN];
	char *inst[] = { (char *)cmake, "--install", (char *)build, "--prefix", prefix, NULL };
	char *uninst[] = { (char *)cmake, "--build", (char *)build, "--target", "uninstall", NULL };
	struct run r;

	(void)state;
	sp(prefix, "%s/uninstall-prefix", g_scratch);
	run(inst, NULL, &r);
	assert_int_equal(r.status, 0);
	run_free(&r);
	sp(path, "%s/bin/rcuwalk", prefix);
	assert_int_equal(access(path, X_OK), 0);
	run(uninst, NULL, &r);
	if (r.status != 0)
		print_message("uninstall: %s%s\n", r.out, r.err);
	assert_int_equal(r.status, 0);
	run_free(&r);
	files_left = 0;
	assert_int_equal(nftw(prefix, count_file, 16, FTW_PHYS), 0);
	assert_int_equal(files_left, 0);
	sp(path, "%s/share/doc/rcuwalk", prefix);
	assert_int_equal(access(path, F_OK), -1);
}

/* The Debian package's layout: <prefix>/bin/rcuwalk and
 * <prefix>/<$LIB>/librcuwalk.so: LD_PRELOAD names <prefix>/$LIB/, which the
 * loader expands back, and the library runs. */
static void make_ld_lib_prefix(char *prefix, const char *name, const char *ld_lib)
{
	char d[PLEN], f[PLEN];

	sp(prefix, "%s/%s", g_scratch, name);
	sp(d, "%s/bin", prefix);
	mkdirs(d);
	sp(f, "%s/rcuwalk", d);
	assert_int_equal(copy_file(g_launcher, f, 0755), 0);
	sp(d, "%s/%s", prefix, ld_lib);
	mkdirs(d);
	sp(f, "%s/librcuwalk.so", d);
	assert_int_equal(copy_file(g_shim, f, 0644), 0);
}

static void test_launcher_uses_dollar_lib_when_library_is_in_loaders_lib_dir(void **state)
{
	const char *ld_lib = env_or_skip("RCUWALK_LD_LIB");
	char prefix[PLEN], bin[PLEN], v[PLEN], want[PLEN], records[PLEN], stats_env[PLEN + 32];
	struct rec recs[8];
	struct run r;

	(void)state;
	make_ld_lib_prefix(prefix, "ldlib-prefix", ld_lib);
	sp(bin, "%s/bin/rcuwalk", prefix);
	sp(records, "%s/ldlib-records", g_scratch);
	unlink(records);
	snprintf(stats_env, sizeof(stats_env), "RCUWALK_STATS=%s", records);
	const char *env[] = { "LD_PRELOAD", stats_env, NULL };
	char *argv[] = { bin, "--", "env", NULL };
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	assert_non_null(env_value(r.out, "LD_PRELOAD", v, sizeof(v)));
	sp(want, "%s/$LIB/librcuwalk.so", prefix);
	assert_string_equal(v, want);
	/* the loader found it: env ran the shim and wrote its record */
	assert_true(read_recs(records, recs, 8) >= 1);
	run_free(&r);
}

/* A 32-bit program started under the launcher prints no ld.so error: $LIB
 * leads its loader to the 32-bit stub. */
static void test_launcher_32bit_child_prints_no_loader_error(void **state)
{
	const char *ld_lib = env_or_skip("RCUWALK_LD_LIB");
	const char *stub = env_or_skip("RCUWALK_STUB32");
	char prefix[PLEN], bin[PLEN], d[PLEN], f[PLEN];
	struct run r;

	(void)state;
	if (access("/lib32/ld-linux.so.2", X_OK) != 0 || access("/lib32/libc.so.6", R_OK) != 0) {
		print_message("no 32-bit libc (libc6-i386): skipping\n");
		skip();
	}
	/* libc6-i386 can be installed on a kernel built without IA32 emulation,
	 * where every 32-bit exec fails with ENOEXEC: the shell that spawn()
	 * falls back to then exits 2.  Run the program once without the
	 * launcher to tell that apart from a loader error under the launcher. */
	char *argv0[] = { "/lib32/ld-linux.so.2", "/lib32/libc.so.6", NULL };
	const char *env0[] = { "LD_PRELOAD", NULL };
	run(argv0, env0, &r);
	int runs32 = r.status == 0 && strstr(r.out, "GNU C Library") != NULL;
	run_free(&r);
	if (!runs32) {
		print_message("this kernel cannot run 32-bit programs: skipping\n");
		skip();
	}
	make_ld_lib_prefix(prefix, "ldlib-prefix", ld_lib);
	sp(d, "%s/lib32", prefix);
	mkdirs(d);
	sp(f, "%s/librcuwalk.so", d);
	assert_int_equal(copy_file(stub, f, 0644), 0);
	sp(bin, "%s/bin/rcuwalk", prefix);
	/* the 32-bit libc.so.6 is a program: it prints its version */
	char *argv[] = { bin, "--", "/lib32/ld-linux.so.2", "/lib32/libc.so.6", NULL };
	const char *env[] = { "LD_PRELOAD", NULL };
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "GNU C Library"));
	assert_string_equal(r.err, "");
	run_free(&r);

	/* control: without the stub, the same run does print an ld.so error */
	unlink(f);
	run(argv, env, &r);
	assert_non_null(strstr(r.err, "ld.so"));
	run_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Library paths that LD_PRELOAD cannot carry (':' or ' ': preload/ldlink.h) */

/* A launcher and library copied to g_scratch/<dir>/ (dir may hold ' ' or
 * ':'); the library is found next to the launcher.  bin and lib: their
 * paths. */
static void copy_pair(const char *dir, char *bin, char *lib)
{
	char d[PLEN];

	sp(d, "%s/%s", g_scratch, dir);
	mkdirs(d);
	sp(bin, "%s/rcuwalk", d);
	sp(lib, "%s/librcuwalk.so", d);
	assert_int_equal(copy_file(g_launcher, bin, 0755), 0);
	assert_int_equal(copy_file(g_shim, lib, 0644), 0);
}

/* Run `bin -- env` without LD_PRELOAD: the command must see an LD_PRELOAD
 * entry without ':' or ' ' that resolves to `lib`, in a link directory of
 * ours (mode 0711, not a symbolic link), and the shim must have run in it.
 * The entry goes to `entry`. */
static void check_preloaded_through_link(const char *bin, const char *lib, char *entry)
{
	char records[PLEN], stats_env[PLEN + 32], got[PATH_MAX], want[PATH_MAX], dir[PLEN];
	struct rec recs[8];
	struct stat st;
	struct run r;

	sp(records, "%s/link-records", g_scratch);
	unlink(records);
	snprintf(stats_env, sizeof(stats_env), "RCUWALK_STATS=%s", records);
	const char *env[] = { "LD_PRELOAD", stats_env, NULL };
	char *argv[] = { (char *)bin, "--", "env", NULL };
	run(argv, env, &r);
	if (r.status != 0 || r.err_len)
		print_message("status %#x, stderr: %s\n", r.status, r.err);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0); /* no ld.so error */
	assert_non_null(env_value(r.out, "LD_PRELOAD", entry, PLEN));
	run_free(&r);
	print_message("%s preloaded as %s\n", lib, entry);
	assert_null(strpbrk(entry, ": "));
	/* "$LIB" as the loader expands it */
	const char *dl = strstr(entry, "/$LIB/");
	char expanded[PLEN];
	if (dl)
		sp(expanded, "%.*s/%s%s", (int)(dl - entry), entry, env_or_skip("RCUWALK_LD_LIB"), dl + 5);
	else
		sp(expanded, "%s", entry);
	assert_non_null(realpath(expanded, got));
	assert_non_null(realpath(lib, want));
	assert_string_equal(got, want);
	/* the shim ran in env */
	assert_true(read_recs(records, recs, 8) >= 1);
	/* /tmp/rcuwalk-links.<euid>/<dev>-<ino>/librcuwalk.so */
	sp(dir, "/tmp/rcuwalk-links.%ld/", (long)geteuid());
	assert_true(!strncmp(entry, dir, strlen(dir)));
	dir[strlen(dir) - 1] = '\0';
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_mode & 07777, 0711);
}

static void check_library_path_goes_in_through_a_link(const char *dir)
{
	char bin[PLEN], lib[PLEN], entry[PLEN], again[PLEN], line[PLEN + 32];
	struct run r;

	copy_pair(dir, bin, lib);
	check_preloaded_through_link(bin, lib, entry);
	/* the next launcher uses the same link */
	check_preloaded_through_link(bin, lib, again);
	assert_string_equal(entry, again);
	/* --version names it */
	char *version[] = { bin, "--version", NULL };
	run(version, NULL, &r);
	assert_int_equal(r.status, 0);
	snprintf(line, sizeof(line), "LD_PRELOAD entry: %s\n", entry);
	assert_non_null(strstr(r.out, line));
	run_free(&r);
}

static void test_launcher_library_path_with_space_goes_in_through_a_link(void **state)
{
	(void)state;
	check_library_path_goes_in_through_a_link("two with space/bin");
}

static void test_launcher_library_path_with_colon_goes_in_through_a_link(void **state)
{
	(void)state;
	check_library_path_goes_in_through_a_link("a:b/bin");
}

/* <prefix>/$LIB/librcuwalk.so below a directory with a ' ': the link leads
 * to the prefix, and "$LIB" stays for the loader to expand. */
static void test_launcher_dollar_lib_entry_below_a_space_keeps_dollar_lib(void **state)
{
	const char *ld_lib = env_or_skip("RCUWALK_LD_LIB");
	char prefix[PLEN], bin[PLEN], lib[PLEN], entry[PLEN], tail[PLEN];

	(void)state;
	make_ld_lib_prefix(prefix, "ldlib prefix", ld_lib);
	sp(bin, "%s/bin/rcuwalk", prefix);
	sp(lib, "%s/%s/librcuwalk.so", prefix, ld_lib);
	check_preloaded_through_link(bin, lib, entry);
	sp(tail, "/$LIB/librcuwalk.so");
	assert_true(strlen(entry) > strlen(tail));
	assert_string_equal(entry + strlen(entry) - strlen(tail), tail);
}

/* The link is named after the directory's dev/ino: moved, the directory
 * keeps its name, and the link is made to follow it (atomically replaced). */
/* A link whose directory is gone (the prefix was removed) is removed by the
 * next launcher that makes a link: it would dangle in /tmp otherwise. */
static void test_launcher_link_to_a_removed_directory_is_cleaned_up(void **state)
{
	char bin[PLEN], lib[PLEN], entry[PLEN], other[PLEN], gone[PLEN], link[PLEN];
	char *rm[] = { "rm", "-rf", gone, NULL };
	struct stat st;
	struct run r;

	(void)state;
	copy_pair("removed prefix/bin", bin, lib);
	check_preloaded_through_link(bin, lib, entry);
	/* the link itself: /tmp/rcuwalk-links.<euid>/<dev>-<ino> */
	sp(link, "/tmp/rcuwalk-links.%ld/", (long)geteuid());
	assert_true(!strncmp(entry, link, strlen(link)));
	snprintf(link, sizeof(link), "%.*s", (int)(strchr(entry + strlen(link), '/') - entry), entry);
	assert_int_equal(lstat(link, &st), 0);
	sp(gone, "%s/removed prefix", g_scratch);
	run(rm, NULL, &r);
	assert_int_equal(r.status, 0);
	run_free(&r);
	copy_pair("another prefix/bin", bin, lib);
	check_preloaded_through_link(bin, lib, other);
	/* Gone, or (the new directory reusing the removed one's inode number,
	 * hence the link's name) replaced by a link that leads somewhere.  A
	 * link to a directory outside this run's scratch is another run's (CI
	 * runs two suites at once, and /tmp's inode numbers are reused between
	 * them): its directory may be gone too, until that run's next launcher
	 * cleans it up; this run owns nothing there to check. */
	if (lstat(link, &st) == 0) {
		char to[PLEN];
		ssize_t n = readlink(link, to, sizeof(to) - 1);

		assert_true(n > 0);
		to[n] = '\0';
		if (strstr(to, "removed prefix") && strstr(to, g_scratch))
			fail_msg("%s still leads to the removed %s", link, to);
		if (strstr(to, g_scratch))
			assert_int_equal(stat(link, &st), 0);
	} else {
		assert_int_equal(errno, ENOENT);
	}
}

static void test_launcher_link_follows_its_directory_when_moved(void **state)
{
	char bin[PLEN], lib[PLEN], from[PLEN], to[PLEN], entry[PLEN], moved[PLEN];

	(void)state;
	copy_pair("moving dir/bin", bin, lib);
	check_preloaded_through_link(bin, lib, entry);
	sp(from, "%s/moving dir", g_scratch);
	sp(to, "%s/moved dir", g_scratch);
	assert_int_equal(rename(from, to), 0);
	sp(bin, "%s/bin/rcuwalk", to);
	sp(lib, "%s/bin/librcuwalk.so", to);
	check_preloaded_through_link(bin, lib, moved);
	assert_string_equal(entry, moved);
}

/* The link directory is used only if it is a real directory of ours in a
 * sticky /tmp: another user's directory, a symbolic link (not followed) or a
 * /tmp anyone can rename things in stop the launcher (125, saying why); our
 * own directory with a wider mode is narrowed to 0711 and used.  Each case
 * runs in a private mount namespace on a tmpfs /tmp of its own (root only):
 * the real /tmp/rcuwalk-links.<uid> is in use by other launchers. */
static void test_launcher_link_dir_not_ours_or_a_symlink_is_not_used(void **state)
{
	static const char script[] =
		"set -u\n"
		"exec 3<\"$1\" 4<\"$2\"\n"
		"mount -t tmpfs -o mode=1777 rcuwalk-test /tmp || exit 77\n"
		"mkdir '/tmp/with space'\n"
		"cat <&3 >'/tmp/with space/rcuwalk' && cat <&4 >'/tmp/with space/librcuwalk.so' &&\n"
		"  chmod 755 '/tmp/with space/rcuwalk' || exit 1\n"
		"d=/tmp/rcuwalk-links.$(id -u)\n"
		"try() { # try STATUS TEXT WHAT: the launcher's exit status and stderr\n"
		"  '/tmp/with space/rcuwalk' -- true 2>/tmp/err; st=$?\n"
		"  if [ \"$st\" != \"$1\" ] || { [ -n \"$2\" ] && ! grep -q -- \"$2\" /tmp/err; } ||\n"
		"     { [ -z \"$2\" ] && [ -s /tmp/err ]; }; then\n"
		"    echo \"$3: status $st (want $1), stderr: $(cat /tmp/err)\"; exit 1\n"
		"  fi\n"
		"  echo \"$3: status $st: $(cat /tmp/err)\"\n"
		"}\n"
		"mkdir \"$d\" && chown 65534 \"$d\" || exit 1\n"
		"try 125 'owned by uid 65534' \"another user's directory\"\n"
		"rmdir \"$d\" && mkdir /tmp/elsewhere && ln -s elsewhere \"$d\" || exit 1\n"
		"try 125 'not a directory of ours' 'a symbolic link to a directory'\n"
		"[ -z \"$(ls -A /tmp/elsewhere)\" ] || { echo 'made something through the link'; exit 1; }\n"
		"rm \"$d\" && mkdir -m 0777 \"$d\" || exit 1\n"
		"try 0 '' 'our own directory, mode 0777'\n"
		"[ \"$(stat -c %a \"$d\")\" = 711 ] || { echo \"mode $(stat -c %a \"$d\")\"; exit 1; }\n"
		"chmod 0777 /tmp || exit 1\n"
		"try 125 'sticky' '/tmp writable by all, not sticky'\n"
		"chmod 1777 /tmp\n";
	char *probe[] = { "unshare", "-m", "--propagation", "private", "true", NULL };
	char *argv[] = { "unshare", "-m", "--propagation", "private", "sh", "-c", (char *)script,
			 "sh", (char *)g_launcher, (char *)g_shim, NULL };
	struct run r;

	(void)state;
	if (geteuid() != 0) {
		print_message("not root: no private mount namespace to test in: skipping\n");
		skip();
	}
	run(probe, NULL, &r);
	if (r.status != 0) {
		print_message("unshare -m failed (%s): skipping\n", r.err);
		run_free(&r);
		skip();
	}
	run_free(&r);
	run(argv, NULL, &r);
	print_message("%s%s", r.out, r.err);
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 77) {
		run_free(&r);
		print_message("no tmpfs mount in the namespace: skipping\n");
		skip();
	}
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/* --keep where the links' directory (<XDG_RUNTIME_DIR>/rcuwalk-keep.<euid>)
 * was made first by another user (or is not 0700): the launcher says the
 * session is not kept (it was silent), and the command still runs. */
static void test_launcher_keep_says_so_when_the_links_directory_is_not_ours(void **state)
{
	char xdg[PLEN], kd[PLEN], xdgenv[PLEN + 32];
	char *argv[] = { (char *)g_launcher, "--keep=1", "--", "true", NULL };
	const char *env[] = { xdgenv, NULL };
	struct run r;

	(void)state;
	sp(xdg, "%s/xdg-keep", g_scratch);
	assert_int_equal(mkdir(xdg, 0700), 0);
	sp(kd, "%s/rcuwalk-keep.%u", xdg, (unsigned)geteuid());
	assert_int_equal(mkdir(kd, 0755), 0);
	if (geteuid() == 0)
		assert_int_equal(chown(kd, 65534, 65534), 0);
	snprintf(xdgenv, sizeof(xdgenv), "XDG_RUNTIME_DIR=%s", xdg);
	run(argv, env, &r);
	print_message("stderr: %s", r.err);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "not kept"));
	run_free(&r);
	rmdir(kd);
	rmdir(xdg);
}

/* ------------------------------------------------------------------------ */
/* Build-wide statistics */

/* DIR/src/f*.h, DIR/inc0..3/ (empty), DIR/pids/, DIR/Makefile with PROBES
 * probe targets and one shell recipe. */
static void make_tree(char *dir, const char *self)
{
	char p[PLEN], mk[16384];
	size_t off = 0;

	sp(dir, "%s/tree", g_scratch);
	sp(p, "%s/src", dir);
	mkdirs(p);
	for (int i = 0; i < PROBE_FILES; i++) {
		sp(p, "%s/src/f%d.h", dir, i);
		write_file(p, "/* header */\n");
	}
	for (int j = 0; j < PROBE_INC_DIRS; j++) {
		sp(p, "%s/inc%d", dir, j);
		mkdirs(p);
	}
	sp(p, "%s/pids", dir);
	mkdirs(p);
	off += (size_t)snprintf(mk + off, sizeof(mk) - off, "all:");
	for (int i = 0; i < PROBES; i++)
		off += (size_t)snprintf(mk + off, sizeof(mk) - off, " t%02d", i);
	off += (size_t)snprintf(mk + off, sizeof(mk) - off, " shell\n");
	/* the probe's path quoted: a checkout's path may have a ' ' */
	off += (size_t)snprintf(mk + off, sizeof(mk) - off,
				"t%%:\n\t@'%s' --probe %s $@\n"
				"shell:\n\t@test -e %s/inc0/absent || echo shell-ok\n"
				".PHONY: all shell\n",
				self, dir, dir);
	assert_true(off < sizeof(mk));
	sp(p, "%s/Makefile", dir);
	write_file(p, mk);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The build's stdout, lines sorted (make -j4 interleaves them). */
static void expect_build_output(const char *out)
{
	char *copy = strdup(out), *save = NULL, *lines[PROBES + 8];
	int n = 0;

	assert_non_null(copy);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		assert_true(n < PROBES + 8);
		lines[n++] = l;
	}
	qsort(lines, (size_t)n, sizeof(lines[0]), cmp_str);
	assert_int_equal(n, PROBES + 1);
	for (int i = 0; i < PROBES; i++) {
		char want[32];

		snprintf(want, sizeof(want), "built t%02d", i);
		assert_string_equal(lines[i], want);
	}
	assert_string_equal(lines[PROBES], "shell-ok");
	free(copy);
}

static void self_path(char *out)
{
	ssize_t n = readlink("/proc/self/exe", out, PLEN - 1);

	assert_true(n > 0);
	out[n] = '\0';
}

/*
 * `rcuwalk --stats=FILE -- make -j4` over a tree of PROBES probe processes,
 * a shell and make itself, with RCUWALK_STATS set outside: the launcher
 * appends every record there too.  The summary's totals equal the sum of
 * those records (parsed here independently), every probe wrote exactly one
 * record at its exit with at least its own lookups (each answered or declined
 * by the cache), and the build printed
 * what it prints without the launcher.
 */
static void test_stats_make_tree_summary_equals_sum_of_process_records(void **state)
{
	const char *makeprog = getenv("RCUWALK_MAKE") ? getenv("RCUWALK_MAKE") : "make";
	char self[PLEN], dir[PLEN], sum[PLEN], outer[PLEN], opt[PLEN + 16], outer_env[PLEN + 32];
	static struct rec recs[4096];
	unsigned long long total[NFIELDS] = { 0 };
	unsigned long long hits_total = 0;
	char *summary;
	int n, procs = 0;
	struct run r;

	(void)state;
	self_path(self);
	make_tree(dir, self);
	sp(sum, "%s/make-summary", g_scratch);
	sp(outer, "%s/make-records", g_scratch);
	unlink(outer);
	snprintf(opt, sizeof(opt), "--stats=%s", sum);
	snprintf(outer_env, sizeof(outer_env), "RCUWALK_STATS=%s", outer);
	const char *env[] = { outer_env, "LD_PRELOAD", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", NULL };
	char *argv[] = { (char *)g_launcher, opt, "--", (char *)makeprog, "-s", "-j4", "-C", dir,
			 "--no-print-directory", NULL };
	run(argv, env, &r);
	if (r.status != 0)
		print_message("make: status %#x\nstdout:\n%s\nstderr:\n%s\n", r.status, r.out, r.err);
	assert_int_equal(r.status, 0);
	/* nothing but the build's own output */
	expect_build_output(r.out);
	assert_string_equal(r.err, "");
	run_free(&r);

	n = read_recs(outer, recs, 4096);
	assert_true(n >= PROBES + 2); /* the probes, the shell, make */
	assert_true(n <= 4096);
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < NFIELDS; k++)
			total[k] += recs[i].v[k];
		if (!strcmp(recs[i].end, "dtor") || !strcmp(recs[i].end, "exit"))
			procs++;
		/* each record is consistent in itself */
		assert_int_equal(recs[i].v[I_saved], recs[i].v[I_hits] + recs[i].v[I_neg_hits]);
		assert_int_equal(recs[i].v[I_lookups],
				 recs[i].v[I_saved] + recs[i].v[I_passthrough]);
		assert_int_equal(recs[i].v[I_passthrough],
				 recs[i].v[I_pass_open] + recs[i].v[I_pass_cache] +
					 recs[i].v[I_pass_dirfd] + recs[i].v[I_pass_form] +
					 recs[i].v[I_pass_write] + recs[i].v[I_pass_early] +
					 recs[i].v[I_pass_watch_limit] + recs[i].v[I_pass_fs] +
					 recs[i].v[I_pass_attr] + recs[i].v[I_pass_racy] +
					 recs[i].v[I_pass_warmup] + recs[i].v[I_pass_rent]);
	}
	summary = slurp(sum, NULL);
	fprintf(stderr, "%d records; the launcher's summary:\n%s", n, summary);
	for (int k = 0; k < NFIELDS; k++) {
		long long got = summary_value(summary, fnames[k]);

		if ((unsigned long long)got != total[k])
			fail_msg("summary %s = %lld, records sum to %llu", fnames[k], got, total[k]);
	}
	{
		char head[128];

		snprintf(head, sizeof(head), "rcuwalk summary: %d processes ended (", procs);
		assert_true(!strncmp(summary, head, strlen(head)));
		snprintf(head, sizeof(head), "), %d records (", n);
		assert_non_null(strstr(summary, head));
	}
	assert_int_equal(summary_value(summary, "net_saved"),
			 (long long)total[I_saved] - (long long)total[I_misses] -
				 (long long)total[I_watches]);
	/* the launcher's own lines (test_stats_costs checks their values) */
	assert_true(summary_value(summary, "wall_ms") > 0);
	assert_true(summary_value(summary, "kernel_ms") >= 0);

	/* every probe: one exit record, with its own lookups in it */
	for (int i = 0; i < PROBES; i++) {
		char p[PLEN], *txt;
		long pid;
		int found = 0;

		sp(p, "%s/pids/t%02d", dir, i);
		txt = slurp(p, NULL);
		pid = strtol(txt, NULL, 10);
		free(txt);
		assert_true(pid > 0);
		for (int k = 0; k < n; k++) {
			if (recs[k].pid != pid)
				continue;
			found++;
			/* its own calls, absolute paths: answered by the cache or
			 * declined by it (a race with an event in a watched
			 * directory: other processes append to files in /tmp) */
			unsigned long long declined = recs[k].v[I_pass_cache] + recs[k].v[I_pass_attr] +
						      recs[k].v[I_pass_racy];

			if (recs[k].v[I_saved] + declined < PROBE_PRESENT + PROBE_ABSENT) {
				fprintf(stderr, "probe t%02d (pid %ld):", i, pid);
				for (int f = 0; f < NFIELDS; f++)
					fprintf(stderr, " %s=%llu", fnames[f], recs[k].v[f]);
				fprintf(stderr, "\n");
			}
			assert_string_equal(recs[k].end, "dtor");
			assert_true(recs[k].v[I_lookups] >= PROBE_PRESENT + PROBE_ABSENT);
			assert_true(recs[k].v[I_saved] + declined >= PROBE_PRESENT + PROBE_ABSENT);
			assert_true(recs[k].v[I_neg_hits] > 0);
			hits_total += recs[k].v[I_hits];
		}
		assert_int_equal(found, 1);
	}
	assert_true(hits_total >= (unsigned long long)PROBES * PROBE_PRESENT / 2);
	free(summary);
}

/* --stats without FILE: the summary is the only thing added, on stderr. */
static void test_stats_summary_on_stderr_is_the_only_addition(void **state)
{
	const char *makeprog = getenv("RCUWALK_MAKE") ? getenv("RCUWALK_MAKE") : "make";
	char self[PLEN], dir[PLEN];
	struct run r;

	(void)state;
	self_path(self);
	make_tree(dir, self);
	const char *env[] = { "RCUWALK_STATS", "LD_PRELOAD", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", NULL };
	char *argv[] = { (char *)g_launcher, "--stats", "--", (char *)makeprog, "-s", "-j4", "-C",
			 dir, "--no-print-directory", NULL };
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	expect_build_output(r.out);
	assert_true(!strncmp(r.err, "rcuwalk summary: ", 17));
	assert_int_equal(count_substr(r.err, "rcuwalk summary: "), 1);
	assert_true(summary_value(r.err, "lookups") >= PROBES * (PROBE_PRESENT + PROBE_ABSENT));
	/* every line of stderr is the summary's: header, one line per key
	 * (and net_saved), wall_ms, cpu_ms, one per filesystem, kernel_ms,
	 * shim_ms, verdict */
	assert_int_equal(count_substr(r.err, "\n"),
			 1 + NFIELDS + 1 + 2 + count_substr(r.err, "\nfs ") + 3);
	assert_true(count_substr(r.err, "\nfs ") >= 1);
	run_free(&r);
}

/* Lookups made before an exec and before _exit() are in the records: the
 * exec record carries the first image's, the exit record the second's. */
static void test_stats_counts_survive_exec_and__exit(void **state)
{
	char self[PLEN], records[PLEN], stats_env[PLEN + 32];
	struct rec recs[16];
	int n, execs = 0, exits = 0;
	struct run r;

	(void)state;
	self_path(self);
	sp(records, "%s/exec-records", g_scratch);
	unlink(records);
	snprintf(stats_env, sizeof(stats_env), "RCUWALK_STATS=%s", records);
	const char *env[] = { stats_env, "LD_PRELOAD", NULL };
	char *argv[] = { (char *)g_launcher, "--", self, "--lookups-exec", "50", NULL };
	run(argv, env, &r);
	assert_int_equal(r.status, 0);
	run_free(&r);
	n = read_recs(records, recs, 16);
	for (int i = 0; i < n && i < 16; i++) {
		print_message("record %d: pid %ld end=%s lookups=%llu neg_hits=%llu\n", i,
			      recs[i].pid, recs[i].end, recs[i].v[I_lookups], recs[i].v[I_neg_hits]);
		if (!strcmp(recs[i].end, "exec")) {
			execs++;
			assert_true(recs[i].v[I_lookups] >= 50);
			assert_true(recs[i].v[I_neg_hits] > 0);
		} else if (!strcmp(recs[i].end, "exit")) {
			exits++;
			assert_true(recs[i].v[I_lookups] >= 50);
			assert_true(recs[i].v[I_neg_hits] > 0);
		}
	}
	assert_int_equal(execs, 1);
	assert_int_equal(exits, 1);
	assert_int_equal(recs[0].pid, recs[1].pid);
}

/* --report=FILE sums a records file written by plain RCUWALK_STATS users,
 * including v1 lines from before the extra fields. */
/* The summary tells pass-throughs apart by reason: a pseudo filesystem
 * (pass_fs), hard-linked files (pass_attr), files younger than --racy-ms
 * (pass_racy); each a stat(1) of two such names. */
static void test_stats_pass_reasons_fs_attr_racy_counted_apart(void **state)
{
	char d[PLEN], fresh[PLEN], h1[PLEN], h2[PLEN], opt[PLEN + 16], sum[PLEN];
	struct run r;
	char *txt;

	(void)state;
	sp(d, "%s/reasons", g_scratch);
	assert_int_equal(mkdir(d, 0755), 0);
	sp(fresh, "%s/fresh", d);
	sp(h1, "%s/h1", d);
	sp(h2, "%s/h2", d);
	write_file(fresh, "x\n");
	write_file(h1, "y\n");
	assert_int_equal(link(h1, h2), 0);
	sp(sum, "%s/reasons.sum", g_scratch);
	snprintf(opt, sizeof(opt), "--stats=%s", sum);
	char *argv[] = { (char *)g_launcher, opt, "--racy-ms=600000", "--", "stat", "-c", "%s",
			 "/proc/self/status", "/sys/kernel", fresh, h1, fresh, h2, NULL };
	run(argv, NULL, &r);
	assert_int_equal(r.status, 0);
	run_free(&r);
	txt = slurp(sum, NULL);
	assert_true(summary_value(txt, "pass_fs") >= 2);
	assert_int_equal(summary_value(txt, "pass_attr"), 2);
	assert_int_equal(summary_value(txt, "pass_racy"), 2);
	free(txt);
}

static void test_stats_report_sums_a_records_file(void **state)
{
	char f[PLEN], opt[PLEN + 16];
	struct run r;

	(void)state;
	sp(f, "%s/report-records", g_scratch);
	write_file(f, "rcuwalk-stats v1 pid=11 hits=5 neg_hits=3 misses=2 passthrough=4 "
		      "invalidations=1 saved=8\n"
		      "rcuwalk-stats v1 pid=0000000012 hits=00000000000000000010 "
		      "neg_hits=00000000000000000001 misses=00000000000000000001 "
		      "passthrough=00000000000000000002 invalidations=00000000000000000000 "
		      "saved=00000000000000000011 lookups=00000000000000000013 "
		      "pass_open=00000000000000000001 pass_cache=00000000000000000000 "
		      "pass_dirfd=00000000000000000001 pass_form=00000000000000000000 "
		      "pass_write=00000000000000000000 pass_early=00000000000000000000 "
		      "watches=00000000000000000003 watch_fail=00000000000000000000 "
		      "events=00000000000000000000 overflows=00000000000000000000 end=exit\n"
		      "garbage line\n");
	snprintf(opt, sizeof(opt), "--report=%s", f);
	char *argv[] = { (char *)g_launcher, opt, NULL };
	run(argv, NULL, &r);
	assert_int_equal(r.status, 0);
	if (strncmp(r.out, "rcuwalk summary: 2 processes ended (1 by exit(), 1 by _exit()), "
			   "2 records (0 written before an exec), 1 unreadable\n", 115))
		fail_msg("summary line: %s", r.out);
	assert_int_equal(summary_value(r.out, "hits"), 15);
	assert_int_equal(summary_value(r.out, "neg_hits"), 4);
	assert_int_equal(summary_value(r.out, "lookups"), 12 + 13);
	assert_int_equal(summary_value(r.out, "passthrough"), 6);
	assert_int_equal(summary_value(r.out, "pass_cache"), 4);
	assert_int_equal(summary_value(r.out, "pass_open"), 1);
	assert_int_equal(summary_value(r.out, "saved"), 19);
	assert_int_equal(summary_value(r.out, "net_saved"), 19 - 3 - 3);
	run_free(&r);
}

/* ------------------------------------------------------------------------ */
/* The Debian package */

static void test_package_deb_declares_dependencies_and_runs_from_scratch_root(void **state)
{
	const char *cpack = env_or_skip("RCUWALK_CPACK");
	const char *build = env_or_skip("RCUWALK_BUILD_DIR");
	char cfg[PLEN], out[PLEN], deb[PLEN], root[PLEN], bin[PLEN], sum[PLEN], opt[PLEN + 16];
	struct run r;

	(void)state;
	if (access("/usr/bin/dpkg-deb", X_OK) != 0) {
		print_message("no dpkg-deb: skipping\n");
		skip();
	}
	sp(cfg, "%s/CPackConfig.cmake", build);
	sp(out, "%s/pkg", g_scratch);
	char *argv[] = { (char *)cpack, "-G", "DEB", "--config", cfg, "-B", out, NULL };
	run(argv, NULL, &r);
	if (r.status != 0)
		print_message("cpack: %s%s\n", r.out, r.err);
	assert_int_equal(r.status, 0);
	run_free(&r);

	char *find[] = { "sh", "-c", "ls \"$0\"/*.deb", out, NULL };
	run(find, NULL, &r);
	assert_int_equal(r.status, 0);
	snprintf(deb, sizeof(deb), "%s", r.out);
	deb[strcspn(deb, "\n")] = '\0';
	run_free(&r);

	char *dep[] = { "dpkg-deb", "-f", deb, "Depends", NULL };
	run(dep, NULL, &r);
	assert_int_equal(r.status, 0);
	print_message("Depends: %s", r.out);
	{
		/* liburcu8 unless liburcu is linked into the shim (RCUWALK_URCU_STATIC):
		 * then the shim names no liburcu object (DT_NEEDED) */
		size_t len = 0;
		char *shim = slurp(env_or_skip("RCUWALK_TEST_SHIM"), &len);

		if (memmem(shim, len, "liburcu-bp.so", 13))
			assert_non_null(strstr(r.out, "liburcu8"));
		else
			assert_null(strstr(r.out, "liburcu"));
		free(shim);
	}
	assert_non_null(strstr(r.out, "libc6"));
	run_free(&r);

	sp(root, "%s/root", g_scratch);
	char *x[] = { "dpkg-deb", "-x", deb, root, NULL };
	run(x, NULL, &r);
	assert_int_equal(r.status, 0);
	run_free(&r);

	sp(bin, "%s/usr/bin/rcuwalk", root);
	sp(sum, "%s/deb-summary", g_scratch);
	snprintf(opt, sizeof(opt), "--stats=%s", sum);
	const char *env[] = { "LD_PRELOAD", "RCUWALK_STATS", NULL };
	char *t[] = { bin, opt, "--", "true", NULL };
	run(t, env, &r);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "");
	run_free(&r);
	{
		char *s = slurp(sum, NULL);

		/* one process, said in the singular */
		if (strncmp(s, "rcuwalk summary: 1 process ended (1 by exit(), 0 by _exit()), ", 62))
			fail_msg("summary line: %s", s);
		free(s);
	}
}

/* ------------------------------------------------------------------------ */

static int rm_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(p);
	return 0;
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(g_scratch, sizeof(g_scratch), "/tmp/rcuwalk-XXXXXX");
	return mkdtemp(g_scratch) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	nftw(g_scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--probe"))
		return probe_main(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "--lookups-exec")) {
		absent_lookups(atoi(argv[2]));
		execl("/proc/self/exe", argv[0], "--lookups-_exit", argv[2], (char *)NULL);
		return 99;
	}
	if (argc >= 2 && !strcmp(argv[1], "--find-watcher"))
		return find_watcher_main();
	if (argc == 4 && !strcmp(argv[1], "--index-lookups")) {
		struct stat st;
		char p[PLEN];

		for (int i = 0; i < atoi(argv[3]); i++) {
			snprintf(p, sizeof(p), "%s/absent-%d", argv[2], i % 7);
			(void)stat(p, &st);
		}
		exit(0);
	}
	if (argc == 3 && !strcmp(argv[1], "--lookups-_exit")) {
		absent_lookups(atoi(argv[2]));
		_exit(0);
	}

	g_launcher = getenv("RCUWALK_LAUNCHER");
	g_shim = getenv("RCUWALK_TEST_SHIM");
	if (!g_launcher || !g_shim) {
		fprintf(stderr, "test_launcher: RCUWALK_LAUNCHER/RCUWALK_TEST_SHIM not set: skipping\n");
		return 77;
	}
	/* The test itself runs without the shim, whatever the caller had. */
	unsetenv("LD_PRELOAD");
	unsetenv("RCUWALK_STATS");
	unsetenv("RCUWALK_DISABLE");

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launcher_exit_status_passes_through),
		cmocka_unit_test(test_launcher_stats_mode_exit_status_passes_through),
		cmocka_unit_test(test_launcher_child_killed_by_sigterm_kills_launcher_by_sigterm),
		cmocka_unit_test(test_launcher_stats_mode_child_killed_by_sigterm_kills_launcher_by_sigterm),
		cmocka_unit_test(test_launcher_stats_mode_child_killed_by_sigint_kills_launcher_by_sigint),
		cmocka_unit_test(test_launcher_stats_mode_forwards_sigterm_to_command),
		cmocka_unit_test(test_launcher_command_not_found_exits_127),
		cmocka_unit_test(test_launcher_unknown_option_exits_125),
		cmocka_unit_test(test_launcher_help_and_version_go_to_stdout),
		cmocka_unit_test(test_launcher_without_a_command_prints_one_line_and_exits_125),
		cmocka_unit_test(test_launcher_watcher_names_itself_with_its_session),
		cmocka_unit_test(test_launcher_sets_ld_preload_to_the_library),
		cmocka_unit_test(test_launcher_keeps_ld_preload_and_appends_library),
		cmocka_unit_test(test_launcher_nested_does_not_duplicate_library),
		cmocka_unit_test(test_launcher_sanitizer_runtime_stays_first),
		cmocka_unit_test(test_launcher_options_set_their_environment_variables),
		cmocka_unit_test(test_launcher_policy_options_set_their_environment_variables),
		cmocka_unit_test(test_launcher_warmup_takes_a_count_or_a_time),
		cmocka_unit_test(test_launcher_session_is_the_default_and_no_session_opts_out),
		cmocka_unit_test(test_launcher_passes_on_the_tsc_rate_it_measured),
		cmocka_unit_test(test_launcher_dir_rent_passes_a_directorys_first_lookups_through),
		cmocka_unit_test(test_launcher_session_memory_refused_is_a_log_line_not_a_fault),
		cmocka_unit_test(test_launcher_session_refused_where_its_directory_is_not_ours),
		cmocka_unit_test(test_launcher_verify_sets_verify_and_its_log_file),
		cmocka_unit_test(test_launcher_bad_option_values_exit_125),
		cmocka_unit_test(test_launcher_exclude_past_its_limit_exits_125),
		cmocka_unit_test(test_preload_exclude_past_its_limit_caches_nothing_and_says_so),
		cmocka_unit_test(test_preload_name_index_env_turns_whole_name_entries_on),
		cmocka_unit_test(test_launcher_prints_only_the_commands_output_and_logs_to_log_file),
		cmocka_unit_test(test_launcher_finds_library_installed_to_temporary_prefix),
		cmocka_unit_test(test_launcher_uninstall_target_removes_what_install_wrote),
		cmocka_unit_test(test_launcher_uses_dollar_lib_when_library_is_in_loaders_lib_dir),
		cmocka_unit_test(test_launcher_32bit_child_prints_no_loader_error),
		cmocka_unit_test(test_launcher_library_path_with_space_goes_in_through_a_link),
		cmocka_unit_test(test_launcher_library_path_with_colon_goes_in_through_a_link),
		cmocka_unit_test(test_launcher_dollar_lib_entry_below_a_space_keeps_dollar_lib),
		cmocka_unit_test(test_launcher_link_follows_its_directory_when_moved),
		cmocka_unit_test(test_launcher_link_to_a_removed_directory_is_cleaned_up),
		cmocka_unit_test(test_launcher_link_dir_not_ours_or_a_symlink_is_not_used),
		cmocka_unit_test(test_stats_make_tree_summary_equals_sum_of_process_records),
		cmocka_unit_test(test_stats_summary_on_stderr_is_the_only_addition),
		cmocka_unit_test(test_stats_counts_survive_exec_and__exit),
		cmocka_unit_test(test_launcher_keep_says_so_when_the_links_directory_is_not_ours),
		cmocka_unit_test(test_stats_report_sums_a_records_file),
		cmocka_unit_test(test_stats_pass_reasons_fs_attr_racy_counted_apart),
		cmocka_unit_test(test_package_deb_declares_dependencies_and_runs_from_scratch_root),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
