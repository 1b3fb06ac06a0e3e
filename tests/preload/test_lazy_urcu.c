/* SPDX-License-Identifier: MIT */
/*
 * test_lazy_urcu.c - the shim loads liburcu at a process's first lookup that
 * uses the cache, not with itself (cache/dcache_urcu.c): a process that
 * looks nothing up, forks, changes directory or stays within its warm-up
 * never maps liburcu-bp; the first lookup after that maps it and is
 * answered exactly, from the cache from then on.
 *
 * Each check runs in a fresh process image (this binary as its own helper,
 * the shim preloaded), which reads /proc/self/maps with raw syscalls (no
 * lookup through the shim) and prints what it saw.  Helpers, by argv[1]:
 *   --idle          prints "urcu=<0|1>" having looked nothing up;
 *   --fork-chdir    forks (the child exits), waits, chdir("/"): "urcu=..";
 *   --lookups N F   N stat(F) through the shim, then "urcu=.. same=.."
 *                   (same: every answer equal to the raw syscall's).
 * Skipped (77) where the shim links liburcu itself (RCUWALK_URCU_STATIC):
 * there is nothing to load.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"

/* Whether this process maps liburcu-bp (raw syscalls only). */
static int urcu_mapped(void)
{
	static char buf[1 << 16];
	size_t n;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read_to_eof(fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	buf[n] = '\0';
	return strstr(buf, "liburcu-bp") != NULL;
}

/* Whether the shim's image names liburcu-bp's soname (to dlopen it). */
static int shim_names_urcu(void)
{
	const char *shim = getenv("RCUWALK_TEST_SHIM");
	static char img[4 << 20];
	size_t n;
	int fd;

	if (!shim || (fd = open(shim, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read_to_eof(fd, img, sizeof(img));
	close(fd);
	return memmem(img, n, "liburcu-bp.so", 13) != NULL;
}

/* The loaded objects named liburcu-bp.so*: how many, and the last one's
 * name as the loader took it (a full name given to dlopen, or the one its
 * search found). */
struct bp_seen {
	int n;
	char name[200];
};

static int see_bp(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bp_seen *b = arg;
	const char *n = info->dlpi_name, *slash = n ? strrchr(n, '/') : NULL;

	(void)size;
	if (slash && !strncmp(slash + 1, "liburcu-bp.so", 13)) {
		b->n++;
		xfmt(b->name, sizeof(b->name), "%s", n);
	}
	return 0;
}

static int helper(int argc, char **argv)
{
	const char *mode = argv[1];
	char out[400];
	int same = 1;

#ifdef RCUWALK_URCU_DIR
	if (!strcmp(mode, "--host-copy") && argc == 4) {
		/* A host's own liburcu-bp: a copy of the system's file under
		 * its versioned name in a directory of its own, dlopen()ed by
		 * that name before any lookup. */
		static char img[4 << 20];
		char dir[PLEN], copy[PLEN];
		int in = (int)syscall(SYS_openat, AT_FDCWD, RCUWALK_URCU_DIR "/" RCUWALK_URCU_BP_SONAME,
				      O_RDONLY | O_CLOEXEC), cfd;
		size_t n = in >= 0 ? read_to_eof(in, img, sizeof(img)) : 0;

		/* Raw system calls: no lookup through the shim before the
		 * copy is loaded (ctest's RCUWALK_WARMUP=0 would start the
		 * cache, and load liburcu, at the first). */
		xfmt(dir, sizeof(dir), "/tmp/rcuwalk-host-copy.%d", (int)getpid());
		if (in < 0 || n == 0 || n == sizeof(img) || syscall(SYS_mkdir, dir, 0700) != 0)
			return 2;
		syscall(SYS_close, in);
		xfmt(copy, sizeof(copy), "%s/%s.0.0", dir, RCUWALK_URCU_BP_SONAME);
		cfd = (int)syscall(SYS_openat, AT_FDCWD, copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				   0755);
		int ok = cfd >= 0 && syscall(SYS_write, cfd, img, n) == (long)n &&
			 syscall(SYS_close, cfd) == 0 && dlopen(copy, RTLD_NOW | RTLD_GLOBAL);

		syscall(SYS_unlinkat, AT_FDCWD, copy, 0); /* the mapping stays */
		syscall(SYS_unlinkat, AT_FDCWD, dir, AT_REMOVEDIR);
		if (!ok)
			return 2;
		mode = "--lookups";
	}
#endif
	if (!strcmp(mode, "--fork-chdir")) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p < 0 || waitpid(p, NULL, 0) != p || chdir("/") != 0)
			return 2;
	} else if (!strcmp(mode, "--lookups") && argc == 4) {
		for (int i = 0, n = atoi(argv[2]); i < n; i++) {
			struct stat a, b;
			int ra, rb, ea, eb;

			memset(&a, 0, sizeof(a));
			memset(&b, 0, sizeof(b));
			errno = 0;
			ra = stat(argv[3], &a);
			ea = errno;
			rb = (int)raw_stat(argv[3], &b, 0);
			eb = rb ? errno : 0;
			if (ra != rb || (ra && ea != eb) ||
			    (!ra && (a.st_ino != b.st_ino || a.st_mode != b.st_mode ||
				     a.st_size != b.st_size || a.st_mtim.tv_nsec != b.st_mtim.tv_nsec)))
				same = 0;
		}
	} else if (strcmp(mode, "--idle") != 0) {
		return 2;
	}
	struct bp_seen bp = { 0, "-" };

	dl_iterate_phdr(see_bp, &bp);
	xfmt(out, sizeof(out), "urcu=%d same=%d bp=%d %s\n", urcu_mapped(), same, bp.n, bp.name);
	raw_puts(1, out);
	return 0;
}

/* Run this binary as helper `args` with `extra` in its environment; its
 * output in out. */
static void run(const char *const *args, const char *const *extra, char *out, size_t n)
{
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *argv[8];
		size_t i;

		dup2(p[1], 1);
		argv[0] = "test_lazy_urcu";
		for (i = 0; args[i] && i < 6; i++)
			argv[i + 1] = (char *)args[i];
		argv[i + 1] = NULL;
		execve("/proc/self/exe", argv, env_with(extra));
		_exit(127);
	}
	close(p[1]);
	read_to_eof(p[0], out, n);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	print_message("%s %s: %s", args[0], args[1] ? args[1] : "", out);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static const char *const no_extra[] = { NULL };

static void test_process_that_looks_nothing_up_never_maps_liburcu(void **state)
{
	static const char *const args[] = { "--idle", NULL };
	char out[400] = "";

	run(args, no_extra, out, sizeof(out));
	assert_non_null(strstr(out, "urcu=0"));
}

static void test_fork_and_chdir_without_lookups_never_map_liburcu(void **state)
{
	static const char *const args[] = { "--fork-chdir", NULL };
	char out[400] = "";

	run(args, no_extra, out, sizeof(out));
	assert_non_null(strstr(out, "urcu=0"));
}

static void test_first_lookup_maps_liburcu_and_answers_exactly(void **state)
{
	static const char *const args[] = { "--lookups", "20", "/etc/passwd", NULL };
	char out[400] = "";

	run(args, no_extra, out, sizeof(out));
	assert_non_null(strstr(out, "urcu=1"));
	assert_non_null(strstr(out, "same=1"));
}

static void test_lookups_within_warmup_never_map_liburcu(void **state)
{
	static const char *const four[] = { "--lookups", "4", "/etc/passwd", NULL };
	static const char *const six[] = { "--lookups", "6", "/etc/passwd", NULL };
	static const char *const warm[] = { "RCUWALK_WARMUP=5", NULL };
	char out[400] = "";

	run(four, warm, out, sizeof(out));
	assert_non_null(strstr(out, "urcu=0"));
	assert_non_null(strstr(out, "same=1"));
	run(six, warm, out, sizeof(out));
	assert_non_null(strstr(out, "urcu=1"));
	assert_non_null(strstr(out, "same=1"));
}

#ifdef RCUWALK_URCU_DIR
static const char *const lookups20[] = { "--lookups", "20", "/etc/passwd", NULL };
static const char *const no_library_path[] = { "LD_LIBRARY_PATH=", NULL };

/* Run helper `args` with `extra` and expect `want` in what it printed. */
static void run_expecting(const char *const *args, const char *const *extra, const char *want)
{
	char out[400] = "";

	run(args, extra, out, sizeof(out));
	if (!strstr(out, want))
		fail_msg("want \"%s\" in: %s", want, out);
}
#endif

/* liburcu-bp is opened by the full name the build found it under
 * (RCUWALK_URCU_DIR, cache/dcache_urcu.c: open_bp), not by a search through
 * /etc/ld.so.cache, where LD_LIBRARY_PATH is empty; with one set, by the
 * soname's search.  Either way once, and every answer exact. */
static void test_first_lookup_opens_liburcu_by_the_full_name_the_build_found(void **state)
{
	(void)state;
#ifndef RCUWALK_URCU_DIR
	skip();
#else
	static const char *const set[] = { "LD_LIBRARY_PATH=/nonexistent-rcuwalk-test", NULL };

	run_expecting(lookups20, no_library_path,
		      "urcu=1 same=1 bp=1 " RCUWALK_URCU_DIR "/liburcu-bp.so");
	run_expecting(lookups20, set, "urcu=1 same=1 bp=1 /");
#endif
}

/* A host that loaded its own liburcu-bp (another file, under its versioned
 * name) shares it with the shim: the shim's open_bp() sees a liburcu-bp
 * under a name that is not the build's and takes the soname's search,
 * which finds the loaded copy by its soname; by the build's full name it
 * would have loaded a second copy (bp=2). */
static void test_host_copy_of_liburcu_under_another_name_is_the_one_shared(void **state)
{
	(void)state;
#ifndef RCUWALK_URCU_DIR
	skip();
#else
	static const char *const args[] = { "--host-copy", "20", "/etc/passwd", NULL };

	run_expecting(args, no_library_path, "urcu=1 same=1 bp=1 /tmp/rcuwalk-host-copy.");
#endif
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_process_that_looks_nothing_up_never_maps_liburcu),
		cmocka_unit_test(test_fork_and_chdir_without_lookups_never_map_liburcu),
		cmocka_unit_test(test_first_lookup_maps_liburcu_and_answers_exactly),
		cmocka_unit_test(test_lookups_within_warmup_never_map_liburcu),
		cmocka_unit_test(test_first_lookup_opens_liburcu_by_the_full_name_the_build_found),
		cmocka_unit_test(test_host_copy_of_liburcu_under_another_name_is_the_one_shared),
	};
	if (argc >= 2 && argv[1][0] == '-' && argv[1][1] == '-')
		return helper(argc, argv);
	if (shim_disabled())
		return 77;
	/* A shim built with liburcu inside (RCUWALK_URCU_STATIC) loads none. */
	if (urcu_mapped() == 1 || !shim_names_urcu()) {
		print_message("liburcu-bp mapped before any lookup, or not named by the shim "
			      "(RCUWALK_URCU_STATIC): nothing is loaded later\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
