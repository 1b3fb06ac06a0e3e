/* SPDX-License-Identifier: MIT */
/*
 * test_session_env.c - what a process checks before it attaches, with no
 * session running (invalidate/session.c):
 *  - RCUWALK_SESSION_FDS read by hand at start (session_parse_fds) as
 *    sscanf("%u:%d:%d") read it before: the same three numbers, or none,
 *    for the launcher's own form and for every odd one (signs, white space,
 *    overflow, missing or extra parts), and for random strings over the
 *    characters that matter;
 *  - the fds it takes for the ring and the arena (session_memfd_ok): a
 *    sealed memfd of ours of the size asked, and nothing else, in
 *    particular no file of a filesystem (tmpfs included), which another
 *    process could truncate under the mapping (SIGBUS).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "session.h"

/* The reference: what the constructor did with sscanf. */
static int by_sscanf(const char *s, unsigned int *pid, int *rfd, int *afd)
{
	unsigned int p;
	int r, a;

	if (sscanf(s, "%u:%d:%d", &p, &r, &a) != 3)
		return 0;
	*pid = p;
	*rfd = r;
	*afd = a;
	return 1;
}

static void same(const char *s)
{
	unsigned int p1 = 11, p2 = 11;
	int r1 = 22, r2 = 22, a1 = 33, a2 = 33;
	int n1 = by_sscanf(s, &p1, &r1, &a1), n2 = session_parse_fds(s, &p2, &r2, &a2);

	if (n1 != n2 || p1 != p2 || r1 != r2 || a1 != a2)
		fail_msg("\"%s\": sscanf %d (%u %d %d), by hand %d (%u %d %d)", s, n1, p1, r1, a1, n2,
			 p2, r2, a2);
}

static void test_session_fds_read_as_sscanf_read_them(void **state)
{
	static const char *const cases[] = {
		"24617:7:8", "1:0:-1", "0:0:0", "4294967295:2147483647:-2147483648",
		"4294967296:2147483648:-2147483649", "99999999999999999999:1:2",
		"18446744073709551615:1:1", "18446744073709551616:1:1", "-1:3:4", "+5:+6:-7",
		"-18446744073709551615:1:1", "-18446744073709551616:1:1",
		"9223372036854775807:9223372036854775807:-9223372036854775808",
		"1:9223372036854775808:-9223372036854775809", " 12:\t3:\n4", "12 :3:4", "12: 3 :4",
		"12:3:4 trailing", "12:3:4:5", "12:3", "12:3:", "12::4", ":3:4", "", " ", "x:1:2",
		"1:x:2", "1:2:x", "1:2:-", "1:2:+", "-:1:2", "0x10:1:2", "010:011:-012", "1;2;3",
		"\v\f\r 7:8:9", "1:2:3\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		same(cases[i]);
}

static void test_session_fds_random_strings_read_as_sscanf_read_them(void **state)
{
	static const char alphabet[] = "0123456789::--++  \t9x";
	char s[40];
	unsigned int seed = 12345;

	(void)state;
	for (int i = 0; i < 200000; i++) {
		int n = (int)(rand_r(&seed) % (sizeof(s) - 1));

		for (int j = 0; j < n; j++)
			s[j] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
		s[n] = '\0';
		same(s);
	}
}

/* A memfd of `size` bytes, sealed with `seals` (0: none). */
static int memfd_of(size_t size, int seals)
{
	int fd = memfd_create("rcuwalk-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	if (seals)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

static void test_session_memfd_ok_takes_only_a_sealed_memfd_of_ours_of_that_size(void **state)
{
	const int both = F_SEAL_SHRINK | F_SEAL_GROW;
	const size_t size = 1 << 16;
	uid_t me = geteuid();
	int fd;

	(void)state;
	fd = memfd_of(size, both);
	assert_int_equal(session_memfd_ok(fd, size, me), 1);
	assert_int_equal(session_memfd_ok(fd, size + 4096, me), 0); /* another size */
	assert_int_equal(session_memfd_ok(fd, size, me + 1), 0);    /* another owner */
	close(fd);
	fd = memfd_of(size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	assert_int_equal(session_memfd_ok(fd, size, me), 1); /* as the watcher seals */
	close(fd);
	/* Not sealed, or only half: it could be cut short under a mapping. */
	fd = memfd_of(size, 0);
	assert_int_equal(session_memfd_ok(fd, size, me), 0);
	close(fd);
	fd = memfd_of(size, F_SEAL_GROW);
	assert_int_equal(session_memfd_ok(fd, size, me), 0);
	close(fd);
	fd = memfd_of(size, F_SEAL_SHRINK);
	assert_int_equal(session_memfd_ok(fd, size, me), 0);
	close(fd);
	assert_int_equal(session_memfd_ok(-1, size, me), 0);
}

/* The check reads no name: it relies on the kernel letting only a file made
 * by memfd_create(MFD_ALLOW_SEALING) take seals.  A file of a filesystem,
 * tmpfs included (created sealed with F_SEAL_SEAL), refuses them, and is
 * refused. */
static void test_session_memfd_ok_refuses_files_that_cannot_take_seals(void **state)
{
	const char *dirs[] = { "/dev/shm", getenv("RCUWALK_TEST_TMPDIR"), "/tmp" };
	const size_t size = 1 << 16;
	int tried = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[4096];
		int fd;

		if (!dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s/rcuwalk-memfd-ok.XXXXXX", dirs[i]);
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			continue; /* no such directory here */
		unlink(path);
		tried++;
		assert_int_equal(ftruncate(fd, (off_t)size), 0);
		errno = 0;
		assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), -1);
		assert_true(errno == EPERM || errno == EINVAL);
		assert_int_equal(session_memfd_ok(fd, size, geteuid()), 0);
		close(fd);
	}
	assert_true(tried > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_fds_read_as_sscanf_read_them),
		cmocka_unit_test(test_session_fds_random_strings_read_as_sscanf_read_them),
		cmocka_unit_test(test_session_memfd_ok_takes_only_a_sealed_memfd_of_ours_of_that_size),
		cmocka_unit_test(test_session_memfd_ok_refuses_files_that_cannot_take_seals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
