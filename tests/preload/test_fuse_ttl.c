/* SPDX-License-Identifier: MIT */
/*
 * test_fuse_ttl.c - the coherence contract on a TTL filesystem (FUSE).
 *
 * A bindfs mount of a scratch directory, inside a private mount namespace
 * (unshare(CLONE_NEWNS) as root), is a real FUSE filesystem.  Through the
 * mount the shim caches with TTLs (RCUWALK_TTL_MS, set small by ctest):
 * - a change made behind the kernel's back (in the source directory, which
 *   the FUSE daemon serves without any event on the mount) is visible within
 *   the TTL;
 * - a change made through the mount by a child is visible right after
 *   waitpid (inotify events still apply there);
 * - repeated lookups are answered from the cache (stats), and answers equal
 *   the kernel's once nothing changes.
 * Skips (exit 77, saying why) where bindfs, /dev/fuse or mount namespaces
 * are unavailable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static char g_top[64], g_src[128], g_mnt[128];
static unsigned long g_ttl_ms;

static const char *S(const char *name)
{
	static char b[2][256];
	static int k;
	char *p = b[k++ & 1];

	snprintf(p, sizeof(b[0]), "%s/%s", g_src, name);
	return p;
}

static const char *M(const char *name)
{
	static char b[2][256];
	static int k;
	char *p = b[k++ & 1];

	snprintf(p, sizeof(b[0]), "%s/%s", g_mnt, name);
	return p;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Raw-syscall answer of stat(path): 0 or errno. */
static int kernel_stat(const char *path, struct stat *st)
{
	return syscall(SYS_newfstatat, AT_FDCWD, path, st, 0) == 0 ? 0 : errno;
}

static int shim_stat(const char *path, struct stat *st)
{
	return stat(path, st) == 0 ? 0 : errno;
}

static void raw_create(const char *path)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	syscall(SYS_close, fd);
}

/* Poll stat(path) through the shim until it returns `want`; ms taken, or -1
 * after deadline_ms. */
static double wait_for(const char *path, int want, double deadline_ms)
{
	double t0 = now_ms();
	struct stat st;

	while (now_ms() - t0 < deadline_ms) {
		if (shim_stat(path, &st) == want)
			return now_ms() - t0;
		usleep(200);
	}
	return -1;
}

static int rm_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	syscall(SYS_unlinkat, AT_FDCWD, p, type == FTW_DP ? AT_REMOVEDIR : 0);
	return 0;
}

static int skip_test(const char *why)
{
	fprintf(stderr, "test_fuse_ttl: SKIPPED: %s\n", why);
	return 77;
}

static void test_fuse_ttl_change_behind_the_kernel_is_visible_within_ttl(void **state)
{
	struct stat st;
	double ms;

	assert_int_equal(shim_stat(M("late"), &st), ENOENT);
	assert_int_equal(shim_stat(M("late"), &st), ENOENT); /* cached (negative TTL) */
	raw_create(S("late")); /* in the source: no event on the mount */
	ms = wait_for(M("late"), 0, g_ttl_ms + 3000.0);
	print_message("behind-the-kernel create visible through the FUSE mount after %.1f ms "
		      "(TTL %lu ms)\n", ms, g_ttl_ms);
	assert_true(ms >= 0);
	syscall(SYS_unlinkat, AT_FDCWD, S("late"), 0);
	ms = wait_for(M("late"), ENOENT, g_ttl_ms + 3000.0);
	print_message("behind-the-kernel unlink visible after %.1f ms\n", ms);
	assert_true(ms >= 0);
}

static void test_fuse_ttl_child_change_through_mount_visible_after_waitpid(void **state)
{
	struct stat st, k;
	int stale = 0;

	for (int i = 0; i < 50; i++) {
		char name[32];
		pid_t pid;
		int status;

		snprintf(name, sizeof(name), "child%d", i);
		assert_int_equal(shim_stat(M(name), &st), ENOENT); /* cached */
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int fd = (int)syscall(SYS_openat, AT_FDCWD, M(name),
					      O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

			syscall(SYS_write, fd, "xyz", 3);
			syscall(SYS_close, fd);
			_exit(fd < 0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(status, 0);
		if (shim_stat(M(name), &st) != 0 || kernel_stat(M(name), &k) != 0 ||
		    st.st_size != k.st_size)
			stale++;
	}
	assert_int_equal(stale, 0);
}

static void test_fuse_ttl_repeated_lookups_come_from_cache_and_are_exact(void **state)
{
	char stats[256], line[1024];
	struct stat st, k;
	FILE *f;
	unsigned long hits = 0, neg = 0;


	raw_create(S("f"));
	syscall(SYS_mkdirat, AT_FDCWD, S("d"), 0755);
	usleep((useconds_t)(g_ttl_ms + 50) * 1000); /* nothing cached from before */
	for (int i = 0; i < 20; i++) {
		assert_int_equal(shim_stat(M("f"), &st), kernel_stat(M("f"), &k));
		assert_int_equal(st.st_ino, k.st_ino);
		assert_int_equal(shim_stat(M("d/none"), &st), ENOENT);
		assert_int_equal(shim_stat(M("f/x"), &st), ENOTDIR);
	}
	/* A fresh process (this binary, exec'd with --lookups) looks each
	 * name up 10 times; the shim appends its counters to RCUWALK_STATS. */
	snprintf(stats, sizeof(stats), "%s/stats", g_top);
	setenv("RCUWALK_STATS", stats, 1);
	{
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			execl("/proc/self/exe", "test_fuse_ttl", "--lookups", M("f"), M("d/none"),
			      (char *)NULL);
			_exit(127);
		}
		waitpid(pid, &status, 0);
		assert_int_equal(status, 0);
	}
	unsetenv("RCUWALK_STATS");
	f = fopen(stats, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long h, n;

		if (sscanf(strstr(line, "hits=") ? strstr(line, "hits=") : "", "hits=%lu neg_hits=%lu",
			   &h, &n) == 2) {
			hits += h;
			neg += n;
		}
	}
	if (f)
		fclose(f);
	print_message("stats after 10 lookups of each name in a fresh process: hits=%lu "
		      "neg_hits=%lu\n", hits, neg);
	assert_true(hits + neg > 0);
}

/* --mount-in-complete TOP MNT SRC (a fresh process): TOP holds the FUSE
 * mount point MNT.  TOP is made complete first, so that MNT is named by its
 * listing, whose d_type is the covered directory's: the shim must still find
 * the FUSE filesystem behind it (and its TTLs), not take TOP's for it.
 * Exit 0 if a name created behind the kernel's back shows within the TTL. */
static int mount_in_complete_main(const char *top, const char *mnt, const char *src)
{
	char p[512], q[512];
	struct stat st;
	double t0;

	for (int i = 0; i < 8; i++) { /* absent names in TOP: it gets listed */
		snprintf(p, sizeof(p), "%s/absent-%d", top, i);
		if (shim_stat(p, &st) != ENOENT)
			return 2;
	}
	snprintf(p, sizeof(p), "%s/late-in-complete", mnt);
	snprintf(q, sizeof(q), "%s/late-in-complete", src);
	if (shim_stat(p, &st) != ENOENT || shim_stat(p, &st) != ENOENT)
		return 3;
	if (syscall(SYS_openat, AT_FDCWD, q, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) < 0)
		return 4; /* in the source: no event on the mount */
	t0 = now_ms();
	while (now_ms() - t0 < g_ttl_ms + 3000.0) {
		if (shim_stat(p, &st) == 0)
			return 0;
		usleep(200);
	}
	return 1; /* cached as if the mount point were TOP's own directory */
}

static void test_fuse_ttl_mount_point_named_by_a_complete_listing_keeps_ttl(void **state)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		char ttl[32];

		snprintf(ttl, sizeof(ttl), "%lu", g_ttl_ms);
		execl("/proc/self/exe", "test_fuse_ttl", "--mount-in-complete", g_top, g_mnt, g_src,
		      ttl, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int setup(void **state)
{
	const char *ttl = getenv("RCUWALK_TTL_MS");
	char cmd[512];

	if (!getenv("RCUWALK_TEST_SHIM"))
		return skip_test("not running under librcuwalk.so");
	if (geteuid() != 0)
		return skip_test("needs root to mount (bindfs) in a private mount namespace");
	if (access("/usr/bin/bindfs", X_OK) != 0)
		return skip_test("bindfs is not installed (apt-get install bindfs)");
	if (access("/dev/fuse", R_OK | W_OK) != 0)
		return skip_test("/dev/fuse is not available");
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return skip_test("no private mount namespace (unshare -m refused)");
	g_ttl_ms = ttl && *ttl ? strtoul(ttl, NULL, 10) : 1000;
	strcpy(g_top, "/tmp/rcuwalk-fuse-XXXXXX");
	if (!mkdtemp(g_top))
		return -1;
	snprintf(g_src, sizeof(g_src), "%s/src", g_top);
	snprintf(g_mnt, sizeof(g_mnt), "%s/mnt", g_top);
	if (syscall(SYS_mkdirat, AT_FDCWD, g_src, 0755) || syscall(SYS_mkdirat, AT_FDCWD, g_mnt, 0755))
		return -1;
	snprintf(cmd, sizeof(cmd), "RCUWALK_DISABLE=1 bindfs %s %s", g_src, g_mnt);
	if (system(cmd) != 0)
		return skip_test("bindfs could not mount");
	return 0;
}

static int teardown(void **state)
{
	umount2(g_mnt, MNT_DETACH);
	nftw(g_top, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuse_ttl_change_behind_the_kernel_is_visible_within_ttl),
		cmocka_unit_test(test_fuse_ttl_child_change_through_mount_visible_after_waitpid),
		cmocka_unit_test(test_fuse_ttl_repeated_lookups_come_from_cache_and_are_exact),
		cmocka_unit_test(test_fuse_ttl_mount_point_named_by_a_complete_listing_keeps_ttl),
	};
	int r;

	if (argc == 4 && strcmp(argv[1], "--lookups") == 0) {
		struct stat st;

		for (int i = 0; i < 10; i++) {
			if (stat(argv[2], &st) != 0 || stat(argv[3], &st) == 0)
				return 1;
		}
		return 0;
	}
	if (argc == 6 && strcmp(argv[1], "--mount-in-complete") == 0) {
		g_ttl_ms = strtoul(argv[5], NULL, 10);
		return mount_in_complete_main(argv[2], argv[3], argv[4]);
	}
	r = setup(NULL);

	if (r != 0)
		return r;
	r = cmocka_run_group_tests_name("fuse_ttl", tests, NULL, NULL);
	teardown(NULL);
	return r;
}
