/* SPDX-License-Identifier: MIT */
/*
 * test_observed.c - what the shim does to the filesystem, seen from outside.
 *
 * A libinotifytools observer (the user's named library, used here in a host
 * program that also has the shim preloaded: the two inotify instances must
 * coexist) watches a scratch tree recursively while this process looks it up
 * through the shim.  Lookups must never change anything: no create, delete,
 * move, attribute or content event.  The shim's mutator wrappers must make
 * exactly the change asked for, once.  A control mutation proves the
 * observer sees what it should (otherwise "no event" would prove nothing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>
#include <inotifytools/inotifytools.h>

#define CHANGES (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_MODIFY | \
		 IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF)

static char g_dir[64];

static const char *P(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *P(const char *fmt, ...)
{
	static char bufs[4][PATH_MAX];
	static int k;
	char *b = bufs[k++ % 4];
	int n = snprintf(b, PATH_MAX, "%s/", g_dir);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b + n, PATH_MAX - (size_t)n, fmt, ap);
	va_end(ap);
	return b;
}

static void raw_file(const char *path)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			      0644);

	assert_true(fd >= 0);
	assert_int_equal(syscall(SYS_write, fd, "x", 1), 1);
	syscall(SYS_close, fd);
}

/* Count change events (mask & CHANGES) until the queue stays quiet for a
 * second (libinotifytools' timeouts are whole seconds; 0 blocks); print each. */
static int drain_changes(void)
{
	struct inotify_event *ev;
	int n = 0;

	while ((ev = inotifytools_next_event(1)) != NULL) {
		if (ev->mask & CHANGES) {
			print_message("event %s on %s%s\n", inotifytools_event_to_str((int)ev->mask),
				      inotifytools_filename_from_wd(ev->wd), ev->len ? ev->name : "");
			n++;
		}
	}
	return n;
}

static int rm_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	return (int)syscall(SYS_unlinkat, AT_FDCWD, p, type == FTW_DP ? AT_REMOVEDIR : 0) * 0;
}

static int setup(void **state)
{
	strcpy(g_dir, "/tmp/rcuwalk-obs-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	syscall(SYS_mkdirat, AT_FDCWD, P("d"), 0755);
	syscall(SYS_mkdirat, AT_FDCWD, P("d/sub"), 0755);
	raw_file(P("d/f"));
	raw_file(P("d/sub/g"));
	syscall(SYS_symlinkat, "d/sub", AT_FDCWD, P("l"));
	syscall(SYS_symlinkat, "nowhere", AT_FDCWD, P("dangling"));
	syscall(SYS_symlinkat, "loop", AT_FDCWD, P("loop"));
	if (!inotifytools_initialize() ||
	    !inotifytools_watch_recursively(g_dir, IN_ALL_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	inotifytools_cleanup();
	nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static void test_observed_lookups_never_change_the_tree(void **state)
{
	static const char *const rel[] = {
		"d", "d/", "d/f", "d/f/", "d/f/x", "d/sub/g", "l", "l/", "l/g", "l/../f",
		"dangling", "dangling/", "loop", "loop/x", "none", "none/x", "d/none", "d/./sub/../f",
	};
	struct stat st;

	(void)drain_changes();
	for (int round = 0; round < 3; round++) { /* cold, then cached */
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			const char *p = P("%s", rel[i]);
			int fd;
			FILE *f;

			(void)stat(p, &st);
			(void)lstat(p, &st);
			(void)access(p, F_OK);
			(void)access(p, R_OK | W_OK);
			(void)fstatat(AT_FDCWD, p, &st, AT_SYMLINK_NOFOLLOW);
			fd = open(p, O_RDONLY | O_CLOEXEC);
			if (fd >= 0)
				close(fd);
			fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				close(fd);
			f = fopen(p, "r");
			if (f)
				fclose(f);
		}
	}
	assert_int_equal(drain_changes(), 0);
}

static void test_observed_control_mutation_is_seen(void **state)
{
	int fd = (int)syscall(SYS_openat, AT_FDCWD, P("d/f"), O_WRONLY | O_APPEND | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(syscall(SYS_write, fd, "y", 1), 1);
	syscall(SYS_close, fd);
	assert_true(drain_changes() >= 1);
}

static void test_observed_unlink_through_shim_deletes_exactly_once(void **state)
{
	struct stat st;

	raw_file(P("d/victim"));
	(void)drain_changes();
	assert_int_equal(stat(P("d/victim"), &st), 0); /* cached */
	assert_int_equal(unlink(P("d/victim")), 0);
	assert_int_equal(stat(P("d/victim"), &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(unlink(P("d/victim")), -1); /* the kernel's ENOENT, no second delete */
	assert_int_equal(errno, ENOENT);
	assert_int_equal(drain_changes(), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_observed_lookups_never_change_the_tree),
		cmocka_unit_test(test_observed_control_mutation_is_seen),
		cmocka_unit_test(test_observed_unlink_through_shim_deletes_exactly_once),
	};

	return cmocka_run_group_tests_name("observed", tests, setup, teardown);
}
