/* SPDX-License-Identifier: MIT */
/*
 * test_dcache_spath.c - the session's shared path table (cache/dcache_spath.c)
 * on an arena in anonymous shared memory: an answer holds exactly while the
 * generations of the directories its walk passed are unchanged, only for its
 * whole key, through table growth, against writers killed mid-put, and
 * against a table scribbled over (wrong answers at worst, never a fault);
 * and the arena's census (dcache_arena_census), which reports it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dcache.h"
#include "arena_stress.h"

static const struct dcache_spath_key K = { .start = 1, .flags = 1, .cred = 42 };

/* Put (k, path) = err found by a walk that looked the first n components
 * of path up, component i in the directory watched as wd[i], with their
 * generations now; the first put of an arena makes the table and is
 * refused (-ENOSPC), so this puts again when needed. */
static int put(void *a, const struct dcache_spath_key *k, const char *path, int err,
	       const int *wd, unsigned int n)
{
	struct dcache_spath_fill f = { .key = *k, .path = path, .len = strlen(path), .err = err };
	uint64_t sgen[DCACHE_SPATH_DIRS], ngen[DCACHE_SPATH_DIRS];
	const char *p = path;
	int r;

	f.h = dcache_spath_hash(k, path, f.len);
	f.n = n;
	for (unsigned int i = 0; i < n && i < DCACHE_SPATH_DIRS; i++) {
		size_t l;

		while (*p == '/')
			p++;
		l = strcspn(p, "/");
		f.wd[i] = wd[i];
		f.nidx[i] = dcache_spath_name_slot(wd[i], p, l);
		p += l;
	}
	for (int tries = 0; tries < 2; tries++) {
		if (dcache_spath_gens(a, f.wd, f.nidx, n > DCACHE_SPATH_DIRS ? 0 : n, sgen, ngen) != 0)
			memset(sgen, 0, sizeof(sgen)), memset(ngen, 0, sizeof(ngen));
		r = dcache_spath_put(a, &f, sgen, ngen);
		if (r != -ENOSPC)
			break;
	}
	return r;
}

/* An event naming `name` in directory wd (IN_CREATE), or about wd itself. */
static void created(void *a, int wd, const char *name)
{
	dcache_spath_event(a, wd, IN_CREATE, name, strlen(name));
}

static void changed_itself(void *a, int wd)
{
	dcache_spath_event(a, wd, IN_ATTRIB, "", 0);
}

static int find(void *a, const struct dcache_spath_key *k, const char *path)
{
	size_t len = strlen(path);

	return dcache_spath_find(a, k, path, len, dcache_spath_hash(k, path, len));
}

static void test_dcache_spath_answer_holds_until_a_component_on_the_way_changes(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	const int wd[3] = { 1, 5, 9 };

	(void)state;
	assert_int_equal(find(a, &K, "/src/inc/x.h"), 0);
	assert_int_equal(put(a, &K, "/src/inc/x.h", ENOENT, wd, 3), 0);
	assert_int_equal(put(a, &K, "/src/f.c/y", ENOTDIR, wd, 2), 0);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), ENOENT);
	assert_int_equal(find(a, &K, "/src/f.c/y"), ENOTDIR);
	/* Other names of the directories on the way: nothing moves. */
	created(a, 9, "y.h");
	created(a, 1, "tmp0");
	changed_itself(a, 6);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), ENOENT);
	assert_int_equal(find(a, &K, "/src/f.c/y"), ENOTDIR);
	/* The name itself made: only its answer goes. */
	created(a, 9, "x.h");
	assert_int_equal(find(a, &K, "/src/inc/x.h"), 0);
	assert_int_equal(find(a, &K, "/src/f.c/y"), ENOTDIR);
	/* f.c replaced (a rename over it, a removal): its ENOTDIR goes. */
	dcache_spath_event(a, 5, IN_MOVED_TO, "f.c", 3);
	assert_int_equal(find(a, &K, "/src/f.c/y"), 0);
	/* Offered again after the change: it answers again; a directory on
	 * the way changed itself (its mode: search permission): it goes. */
	assert_int_equal(put(a, &K, "/src/inc/x.h", ENOENT, wd, 3), 0);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), ENOENT);
	changed_itself(a, 5);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), 0);
	/* An ancestor's name on the way moved (inc renamed away). */
	assert_int_equal(put(a, &K, "/src/inc/x.h", ENOENT, wd, 3), 0);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), ENOENT);
	dcache_spath_event(a, 5, IN_MOVED_FROM | IN_ISDIR, "inc", 3);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), 0);
	/* A subdirectory's mode seen on its parent's watch (a scratch
	 * directory's own watch does not report it). */
	assert_int_equal(put(a, &K, "/src/inc/x.h", ENOENT, wd, 3), 0);
	dcache_spath_event(a, 1, IN_ATTRIB, "src", 3); /* a file's attributes: nothing */
	assert_int_equal(find(a, &K, "/src/inc/x.h"), ENOENT);
	dcache_spath_event(a, 1, IN_ATTRIB | IN_ISDIR, "src", 3);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), 0);
	/* Events lost: every generation moves. */
	assert_int_equal(put(a, &K, "/src/inc/x.h", ENOENT, wd, 3), 0);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), ENOENT);
	dcache_arena_invalidate(a, -1);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), 0);
	munmap(a, DCACHE_ARENA_SIZE);
}

static void test_dcache_spath_answers_only_its_whole_key(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	const int wd[2] = { 1, 5 };
	struct dcache_spath_key k = K;

	(void)state;
	assert_int_equal(put(a, &K, "/src/inc/x.h", ENOENT, wd, 2), 0);
	assert_int_equal(put(a, &K, "/src/x", ENOENT, wd, 1), 0);
	k.cred = 43; /* other credentials: search permission may differ */
	assert_int_equal(find(a, &k, "/src/inc/x.h"), 0);
	k = K;
	k.start = 2; /* another start (a relative name from another cwd) */
	assert_int_equal(find(a, &k, "/src/inc/x.h"), 0);
	k = K;
	k.flags = 0; /* lstat is not stat */
	assert_int_equal(find(a, &k, "/src/inc/x.h"), 0);
	/* Other names: the prefix, the last component, a trailing slash. */
	assert_int_equal(find(a, &K, "/srd/inc/x.h"), 0);
	assert_int_equal(find(a, &K, "/src/inc/y.h"), 0);
	assert_int_equal(find(a, &K, "/src/inc/x.h/"), 0);
	assert_int_equal(find(a, &K, "/src/inc/x."), 0);
	assert_int_equal(find(a, &K, "/src/inc/x.h"), ENOENT);
	assert_int_equal(find(a, &K, "/src/x"), ENOENT);
	/* What the table cannot hold is refused, not cut. */
	{
		char longtail[80];

		memset(longtail, 'a', sizeof(longtail) - 1);
		longtail[0] = '/';
		longtail[sizeof(longtail) - 1] = '\0';
		assert_int_equal(put(a, &K, longtail, ENOENT, wd, 1), -EINVAL);
		assert_int_equal(put(a, &K, "/src/z", EACCES, wd, 1), -EINVAL);
		assert_int_equal(put(a, &K, "/src/z", ENOENT, wd, 0), -EINVAL);
		{
			int many[DCACHE_SPATH_DIRS + 1] = { 0 };

			assert_int_equal(put(a, &K, "/src/z", ENOENT, many, DCACHE_SPATH_DIRS + 1),
					 -EINVAL);
		}
	}
	munmap(a, DCACHE_ARENA_SIZE);
}

/* More names than the first table holds: it grows instead of refusing, and
 * the names offered again after the growth are answered. */
static void test_dcache_spath_table_grows_instead_of_refusing(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	const int wd[4] = { 1, 2, 3, 4 };
	unsigned int slots0, slots1, n = 100000, found = 0;
	uint64_t evicted;
	char p[64];

	(void)state;
	assert_int_equal(put(a, &K, "/a/b/c/first", ENOENT, wd, 4), 0);
	dcache_spath_counts(a, &evicted, &slots0);
	assert_true(slots0 > 0);
	for (int pass = 0; pass < 2; pass++)
		for (unsigned int i = 0; i < n; i++) {
			snprintf(p, sizeof(p), "/a/b/c/h%u.h", i);
			(void)put(a, &K, p, ENOENT, wd, 4);
		}
	dcache_spath_counts(a, &evicted, &slots1);
	print_message("slots: %u at first, %u after %u names\n", slots0, slots1, n);
	assert_true(slots1 > slots0);
	for (unsigned int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "/a/b/c/h%u.h", i);
		found += find(a, &K, p) == ENOENT;
	}
	print_message("answered after growth: %u of %u\n", found, n);
	assert_true(found > n / 2);
	/* Exact still: the directory itself changed, and none answers. */
	changed_itself(a, 4);
	for (unsigned int i = 0; i < n; i += 97) {
		snprintf(p, sizeof(p), "/a/b/c/h%u.h", i);
		assert_int_equal(find(a, &K, p), 0);
	}
	munmap(a, DCACHE_ARENA_SIZE);
}

/* Writers killed at any instruction: readers see whole entries only (or
 * none), each for the generations it was put with. */
static void test_dcache_spath_writers_killed_anywhere_leave_nothing_half_done(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	const int wd[3] = { 1, 2, 3 };
	unsigned long got = 0, *progress = shared_counter();
	char p[64];

	(void)state;
	srand((unsigned int)time(NULL));
	for (int k = 0; k < 100; k++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			for (unsigned int i = 0;; i = (i + 1) % 3000) {
				/* ENOENT under even names, ENOTDIR under odd. */
				snprintf(p, sizeof(p), "/w/x/n%u", i);
				(void)put(a, &K, p, i % 2 ? ENOTDIR : ENOENT, wd, 1 + i % 3);
				__atomic_add_fetch(progress, 1, __ATOMIC_RELAXED);
			}
		}
		kill_writer_midway(pid, progress);
		if (k % 10 == 0)
			changed_itself(a, 1 + k % 3);
		for (unsigned int i = 0; i < 3000; i += 7) {
			int r;

			snprintf(p, sizeof(p), "/w/x/n%u", i);
			r = find(a, &K, p);
			if (r == 0)
				continue;
			got++;
			if (r != (i % 2 ? ENOTDIR : ENOENT))
				fail_msg("%s: %d after a writer was killed", p, r);
		}
	}
	print_message("answers read after kills: %lu\n", got);
	assert_true(got > 0);
	munmap(progress, 4096);
	munmap(a, DCACHE_ARENA_SIZE);
}

/* Any byte of the table or its chains overwritten: no fault, no overrun;
 * answers are ENOENT, ENOTDIR or none (a same-user writer can make them
 * wrong, as it could ptrace the session's processes). */
static void test_dcache_spath_scribbled_table_never_faults(void **state)
{
	size_t size = (size_t)8 << 20;
	void *a = map_arena(size);
	const int wd[2] = { 1, 2 };
	uint64_t evicted;
	unsigned int slots;
	char p[64];

	(void)state;
	for (unsigned int i = 0; i < 2000; i++) {
		snprintf(p, sizeof(p), "/s/d/n%u", i);
		(void)put(a, &K, p, ENOENT, wd, 2);
	}
	dcache_spath_counts(a, &evicted, &slots);
	assert_true(slots > 0);
	srand(7);
	for (int round = 0; round < 200; round++) {
		/* Scribble over the whole arena but its first page (its size,
		 * limit and table word: checked at attach, written by the watcher
		 * or a CAS only). */
		for (int k = 0; k < 2000; k++) {
			size_t off = 4096 + (size_t)rand() % (size - 4096);
			((unsigned char *)a)[off] = (unsigned char)rand();
		}
		for (unsigned int i = 0; i < 2000; i += 3) {
			int r;

			snprintf(p, sizeof(p), "/s/d/n%u", i);
			r = find(a, &K, p);
			assert_true(r == 0 || r == ENOENT || r == ENOTDIR);
			(void)put(a, &K, p, ENOENT, wd, 2);
		}
	}
	munmap(a, size);
}

/* dcache_arena_census (a report: examples/bench/scale_check.c) counts each
 * kind of entry and the path table's answers, and which of them still hold. */
static void test_dcache_arena_census_counts_entries_and_path_answers(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	struct dcache_arena_census c;
	struct stat st = { .st_mode = S_IFDIR | 0755, .st_ino = 7 };
	const int wd[2] = { 1, 5 };

	(void)state;
	dcache_arena_census(a, &c);
	assert_int_equal(c.size, DCACHE_ARENA_SIZE);
	assert_true(c.bump > 0 && c.bump <= c.limit);
	assert_int_equal(c.listing.n + c.watch.n + c.name.n + c.attr.n + c.search.n, 0);
	assert_int_equal(c.sp_slots, 0);
	assert_int_equal(dcache_arena_put(a, 5, dcache_arena_gen(a, 5), "\x08x.c", 5, 1), 0);
	assert_int_equal(dcache_arena_put_name(a, 5, dcache_arena_gen(a, 5), "y.h", 3, DT_UNKNOWN,
					       0, 0, NULL, 0), 0);
	assert_int_equal(dcache_arena_put_attr(a, 5, dcache_arena_gen(a, 5), &st), 0);
	assert_int_equal(dcache_arena_put_search(a, 5, dcache_arena_gen(a, 5), 42), 0);
	assert_int_equal(dcache_arena_put_watch(a, 1, dcache_arena_gen(a, 1), "inc", 3, 5, 1, 7), 0);
	assert_int_equal(put(a, &K, "/inc/a.h", ENOENT, wd, 2), 0);
	assert_int_equal(put(a, &K, "/inc/b.h", ENOENT, wd, 2), 0);
	dcache_arena_census(a, &c);
	assert_int_equal(c.listing.n, 1);
	assert_int_equal(c.listing.live, 1);
	assert_int_equal(c.listing.bytes, 64); /* a 56-byte header and 5 bytes, rounded to 8 */
	assert_int_equal(c.name.n, 1);
	assert_int_equal(c.attr.n, 1);
	assert_int_equal(c.search.n, 1);
	assert_int_equal(c.watch.n, 1);
	assert_int_equal(c.listing.deep + c.name.deep + c.attr.deep + c.search.deep + c.watch.deep, 0);
	assert_true(c.longest >= 1);
	assert_true(c.sp_slots > 0);
	assert_int_equal(c.sp_table_bytes, 64 * c.sp_slots);
	assert_true(c.sp_gens_bytes > 0);
	assert_int_equal(c.sp_used, 2);
	assert_int_equal(c.sp_valid, 2);
	assert_int_equal(c.sp_chains, 1); /* one directory's names share it */
	assert_true(c.sp_chain_bytes > 0 && c.sp_chain_bytes % 8 == 0);
	/* Directory 5 changed: its entries and the answers through it go. */
	dcache_arena_invalidate(a, 5);
	changed_itself(a, 5);
	dcache_arena_census(a, &c);
	assert_int_equal(c.listing.n, 1);
	assert_int_equal(c.listing.live + c.name.live + c.attr.live + c.search.live, 0);
	assert_int_equal(c.watch.live, 1);
	assert_int_equal(c.sp_used, 2);
	assert_int_equal(c.sp_valid, 0);
	munmap(a, DCACHE_ARENA_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dcache_spath_answer_holds_until_a_component_on_the_way_changes),
		cmocka_unit_test(test_dcache_spath_answers_only_its_whole_key),
		cmocka_unit_test(test_dcache_spath_table_grows_instead_of_refusing),
		cmocka_unit_test(test_dcache_spath_writers_killed_anywhere_leave_nothing_half_done),
		cmocka_unit_test(test_dcache_spath_scribbled_table_never_faults),
		cmocka_unit_test(test_dcache_arena_census_counts_entries_and_path_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
