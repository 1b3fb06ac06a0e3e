/* SPDX-License-Identifier: MIT */
/*
 * test_stats_costs.c - what `rcuwalk --stats` says a build's lookups would
 * have cost the kernel, per filesystem, and what the shim spent
 * (preload/cost.c, doc/statistics.md "The summary's last lines").
 *
 * The launcher runs this program in a helper mode (--lookups DIR... N) that
 * looks up absent names in each DIR N times, then sleeps 0.2 s.  The tests
 * read the summary back:
 *  - on the local disk: wall_ms covers the sleep, an `fs` line names the
 *    filesystem with a raw lookup cost > 0 and most of the answers, and
 *    kernel_ms, shim_ms and the verdict are there;
 *  - through a bindfs (FUSE) mount of a scratch directory and in that
 *    directory itself: two `fs` lines, and a raw lookup costs more on the
 *    FUSE one (its negative lookups go to the daemon).  Needs root, bindfs,
 *    /dev/fuse and a private mount namespace; skipped, saying so, without.
 * Not preloaded itself; RCUWALK_LAUNCHER names the launcher.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char g_dir[64], g_self[512];

/* --lookups DIR... N: N rounds over 40 absent names in each DIR. */
static int lookups_main(int argc, char **argv)
{
	int n = atoi(argv[argc - 1]);
	struct stat st;
	char p[512];

	for (int r = 0; r < n; r++)
		for (int d = 2; d < argc - 1; d++)
			for (int k = 0; k < 40; k++) {
				snprintf(p, sizeof(p), "%s/absent-%d.h", argv[d], k);
				if (stat(p, &st) == 0)
					return 2;
			}
	usleep(200 * 1000);
	return 0;
}

/* Run the launcher with --stats=OUT over this program's --lookups mode. */
static void run_lookups(const char *out, const char *dir1, const char *dir2, const char *n)
{
	const char *launcher = getenv("RCUWALK_LAUNCHER");
	char opt[256];
	pid_t pid;
	int status;

	assert_non_null(launcher);
	snprintf(opt, sizeof(opt), "--stats=%s", out);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("RCUWALK_WARMUP", "0", 1);
		if (dir2)
			execl(launcher, launcher, opt, "--", g_self, "--lookups", dir1, dir2, n,
			      (char *)NULL);
		else
			execl(launcher, launcher, opt, "--", g_self, "--lookups", dir1, n,
			      (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static char *slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The value of the first line that starts with `key` and a space (-1: none). */
static double value_of(const char *sum, const char *key)
{
	size_t n = strlen(key);

	for (const char *l = sum; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, n) && l[n] == ' ')
			return strtod(l + n, NULL);
	return -1;
}

struct fs_line {
	unsigned long long answers;
	char type[32];
	double raw_ns;
};

/* The summary's `fs` lines. */
static int fs_lines(const char *sum, struct fs_line *out, int max)
{
	int n = 0;

	for (const char *l = sum; l && *l && n < max;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *raw;

		if (strncmp(l, "fs ", 3))
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].answers = strtoull(l + 3, NULL, 10);
		/* "fs   N  P.P%  TYPE on MNT (maj:min): raw lookup X ns, ..." */
		raw = strchr(l, '%');
		if (raw)
			sscanf(raw + 1, " %31s", out[n].type);
		raw = strstr(l, "raw lookup ");
		out[n].raw_ns = raw && raw < strchr(l, '\n') ? strtod(raw + 11, NULL) : -1;
		n++;
	}
	return n;
}

static void test_stats_costs_summary_says_wall_time_per_fs_cost_and_verdict(void **state)
{
	char out[128], *sum;
	struct fs_line fs[8];
	int n;
	double answers;

	(void)state;
	snprintf(out, sizeof(out), "%s/summary", g_dir);
	run_lookups(out, g_dir, NULL, "50");
	sum = slurp(out);
	print_message("%s", strstr(sum, "wall_ms") ? strstr(sum, "wall_ms") : sum);
	assert_true(value_of(sum, "wall_ms") >= 200); /* the helper's sleep */
	assert_true(value_of(sum, "cpu_ms") >= 0);
	answers = value_of(sum, "hits") + value_of(sum, "neg_hits");
	assert_true(answers >= 40 * 45); /* 40 x 50 lookups, most from the cache */
	n = fs_lines(sum, fs, 8);
	assert_true(n >= 1);
	/* the scratch directory's filesystem has the answers and a cost */
	assert_true((double)fs[0].answers >= answers * 0.9);
	assert_true(fs[0].raw_ns > 0);
	assert_true(fs[0].raw_ns < 1e6); /* a local lookup: well under a millisecond */
	assert_true(value_of(sum, "kernel_ms") > 0);
	assert_true(value_of(sum, "shim_ms") > 0);
	assert_non_null(strstr(sum, "\nverdict "));
	assert_non_null(strstr(sum, "lookups the kernel was spared: ~"));
}

static int skip_fuse(const char *why)
{
	print_message("SKIP test_stats_costs_fuse: %s\n", why);
	return 1;
}

static void test_stats_costs_fuse_lookup_costs_more_than_local_disk(void **state)
{
	char src[128], mnt[128], out[128], cmd[512], *sum;
	struct fs_line fs[8];
	int n, ifuse = -1, ilocal = -1;

	(void)state;
	snprintf(src, sizeof(src), "%s/src", g_dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", g_dir);
	if (geteuid() != 0 ? skip_fuse("needs root to mount bindfs") :
	    access("/usr/bin/bindfs", X_OK) != 0 ? skip_fuse("bindfs is not installed") :
	    access("/dev/fuse", R_OK | W_OK) != 0 ? skip_fuse("/dev/fuse is not available") :
	    unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ?
						   skip_fuse("no private mount namespace") :
						   0)
		skip();
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(mkdir(mnt, 0755), 0);
	snprintf(cmd, sizeof(cmd), "bindfs %s %s", src, mnt);
	if (system(cmd) != 0) {
		skip_fuse("bindfs could not mount");
		skip();
	}
	snprintf(out, sizeof(out), "%s/summary-fuse", g_dir);
	run_lookups(out, mnt, src, "50");
	umount2(mnt, MNT_DETACH);
	sum = slurp(out);
	print_message("%s", strstr(sum, "wall_ms") ? strstr(sum, "wall_ms") : sum);
	n = fs_lines(sum, fs, 8);
	for (int i = 0; i < n; i++) {
		if (!strncmp(fs[i].type, "fuse", 4) && ifuse < 0)
			ifuse = i;
		else if (strncmp(fs[i].type, "fuse", 4) && ilocal < 0)
			ilocal = i;
	}
	assert_true(ifuse >= 0);
	assert_true(ilocal >= 0);
	assert_true(fs[ifuse].answers > 0);
	assert_true(fs[ilocal].answers > 0);
	assert_true(fs[ifuse].raw_ns > 0);
	assert_true(fs[ilocal].raw_ns > 0);
	if (!(fs[ifuse].raw_ns > fs[ilocal].raw_ns))
		fail_msg("raw lookup on FUSE %.0f ns, on the local disk %.0f ns", fs[ifuse].raw_ns,
			 fs[ilocal].raw_ns);
}

static int rm_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "%s/mnt", g_dir);
	umount2(cmd, MNT_DETACH); /* if a failed check left it mounted */
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	return system(cmd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_costs_summary_says_wall_time_per_fs_cost_and_verdict),
		cmocka_unit_test(test_stats_costs_fuse_lookup_costs_more_than_local_disk),
	};
	int r;

	if (argc >= 4 && !strcmp(argv[1], "--lookups"))
		return lookups_main(argc, argv);
	if (!getenv("RCUWALK_LAUNCHER")) {
		printf("RCUWALK_LAUNCHER is not set: skipping\n");
		return 77;
	}
	{
		ssize_t k = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);

		if (k <= 0)
			return 1;
		g_self[k] = '\0';
	}
	/* Not under /tmp's sticky, watched-by-everyone directory directly. */
	strcpy(g_dir, "/tmp/rcuwalk-costs-XXXXXX");
	if (!mkdtemp(g_dir))
		return 1;
	r = cmocka_run_group_tests(tests, NULL, NULL);
	(void)!rm_tree();
	return r;
}
