/* SPDX-License-Identifier: MIT */
/*
 * test_table_growth.c - the hash table grows (and queued frees run) whichever
 * entry point a program uses.  The table starts at 64 buckets and grows at
 * the next lookup once it holds more dentries than buckets
 * (dc_maintenance(), cache/dcache.c "Threads we do not start").  Until
 * 2026-12-04 only dcache_lookup() ran that: a program that only called statx,
 * readlink or realpath (coreutils' ls -l, cp) kept 64 buckets for any number
 * of names.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcache.h"
#include "inval.h"
#include "raw_ops.h"

#define NAMES 1000

static char g_dir[64];

static struct dcache_ops g_ops = {
	RAW_KERNEL_OPS,
	.kernel_statx = raw_statx,
	.fs_cacheable = raw_fs_local,
};

static void name(char *buf, size_t size, int i)
{
	snprintf(buf, size, "%s/f%04d", g_dir, i);
}

/* statx and readlink only: every name twice (a miss, then a hit). */
static void test_statx_and_readlink_alone_grow_the_table(void **state)
{
	char p[128], buf[16];
	struct statx sx;
	size_t len;

	(void)state;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < NAMES; i++) {
			name(p, sizeof p, i);
			assert_int_equal(dcache_statx(p, 0, STATX_BASIC_STATS, &sx), 0);
			assert_int_equal(sx.stx_size, 0);
			/* A regular file: readlink's EINVAL. */
			assert_int_equal(dcache_readlink(p, buf, sizeof buf, &len), EINVAL);
		}
	}
	print_message("%zu dentries, %zu buckets\n", dcache_count(), dcache_table_buckets());
	assert_true(dcache_count() > NAMES);
	/* Before the fix: 64. */
	assert_true(dcache_table_buckets() >= dcache_count());
}

static int setup(void **state)
{
	char p[128];

	(void)state;
	snprintf(g_dir, sizeof g_dir, "/tmp/rcuwalk-grow-XXXXXX");
	if (!mkdtemp(g_dir))
		return -1;
	for (int i = 0; i < NAMES; i++) {
		int fd;

		name(p, sizeof p, i);
		fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			return -1;
		syscall(SYS_close, fd);
	}
	dcache_set_completion(0, 0); /* every name looked up on its own */
	dcache_set_policy(0, 0, NULL, 0); /* attributes of new files kept */
	inval_fill_ops(&g_ops);
	return dcache_init(&g_ops, 0);
}

static int teardown(void **state)
{
	(void)state;
	inval_shutdown();
	raw_rm_tree(g_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statx_and_readlink_alone_grow_the_table),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
