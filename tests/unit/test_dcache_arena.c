/* SPDX-License-Identifier: MIT */
/*
 * test_dcache_arena.c - the session's shared listings (cache/dcache_arena.c):
 * a listing answers while its watch's generation holds, a stale or corrupt
 * one never does, a full arena refuses without harm, and concurrent writers,
 * readers, an invalidator and writers killed at random points never make a
 * reader see a listing that is not the current one of its directory.  And
 * the filesystem classes kept by mount (A8).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "dcache.h"
#include "arena_stress.h"

#define SMALL ((size_t)1 << 20) /* an arena that fills quickly */

/* A listing of `n` names "<prefix><i>" (type DT_REG = 8) into buf; its
 * length. */
static size_t make_listing(char *buf, size_t cap, const char *prefix, unsigned int n)
{
	size_t len = 0;

	for (unsigned int i = 0; i < n; i++) {
		int w = snprintf(buf + len + 1, cap - len - 1, "%s%u", prefix, i);

		assert_true(w > 0 && (size_t)w + 2 < cap - len);
		buf[len] = 8;
		len += (size_t)w + 2;
	}
	return len;
}

static void test_dcache_arena_listing_put_is_read_back_whole(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	char in[4096], out[4096];
	size_t len = make_listing(in, sizeof(in), "name", 50), count = 0;

	(void)state;
	assert_int_equal(dcache_arena_get(a, 7, out, sizeof(out), &count), -ENOENT);
	assert_int_equal(dcache_arena_put(a, 7, dcache_arena_gen(a, 7), in, len, 50), 0);
	assert_int_equal(dcache_arena_get(a, 7, out, sizeof(out), &count), (long)len);
	assert_int_equal(count, 50);
	assert_memory_equal(in, out, len);
	/* Another watch number has none. */
	assert_int_equal(dcache_arena_get(a, 8, out, sizeof(out), &count), -ENOENT);
	/* A buffer too small: -E2BIG, not a cut listing. */
	assert_int_equal(dcache_arena_get(a, 7, out, len - 1, &count), -E2BIG);
	/* More names than asked for (dcache_arena_get_max): -E2BIG, and not
	 * a byte of the names copied; as many as asked: the listing. */
	memset(out, 0x5a, sizeof(out));
	assert_int_equal(dcache_arena_get_max(a, 7, out, sizeof(out), 49, &count), -E2BIG);
	for (size_t i = 0; i < sizeof(out); i++)
		assert_int_equal((unsigned char)out[i], 0x5a);
	assert_int_equal(dcache_arena_get_max(a, 7, out, sizeof(out), 50, &count), (long)len);
	assert_int_equal(count, 50);
	/* An empty directory is a listing too. */
	assert_int_equal(dcache_arena_put(a, 9, dcache_arena_gen(a, 9), NULL, 0, 0), 0);
	assert_int_equal(dcache_arena_get(a, 9, out, sizeof(out), &count), 0);
	assert_int_equal(count, 0);
	munmap(a, DCACHE_ARENA_SIZE);
}

static void test_dcache_arena_listing_gone_once_its_watch_changes(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	char in[4096], out[4096];
	size_t len = make_listing(in, sizeof(in), "f", 10), count;
	uint64_t g = dcache_arena_gen(a, 3);

	(void)state;
	assert_int_equal(dcache_arena_put(a, 3, g, in, len, 10), 0);
	assert_int_equal(dcache_arena_put(a, 4, dcache_arena_gen(a, 4), in, len, 10), 0);
	dcache_arena_invalidate(a, 3);
	assert_int_equal(dcache_arena_get(a, 3, out, sizeof(out), &count), -ENOENT);
	assert_int_equal(dcache_arena_get(a, 4, out, sizeof(out), &count), (long)len);
	/* Read before the change, offered after it: refused. */
	assert_int_equal(dcache_arena_put(a, 3, g, in, len, 10), -ESTALE);
	assert_int_equal(dcache_arena_get(a, 3, out, sizeof(out), &count), -ENOENT);
	/* A new listing under the new generation answers, the newest first. */
	len = make_listing(in, sizeof(in), "g", 3);
	assert_int_equal(dcache_arena_put(a, 3, dcache_arena_gen(a, 3), in, len, 3), 0);
	assert_int_equal(dcache_arena_get(a, 3, out, sizeof(out), &count), (long)len);
	assert_int_equal(count, 3);
	assert_memory_equal(in, out, len);
	/* Lost events: every listing goes. */
	dcache_arena_invalidate(a, -1);
	assert_int_equal(dcache_arena_get(a, 3, out, sizeof(out), &count), -ENOENT);
	assert_int_equal(dcache_arena_get(a, 4, out, sizeof(out), &count), -ENOENT);
	munmap(a, DCACHE_ARENA_SIZE);
}

static void test_dcache_arena_watch_of_a_name_valid_until_its_directory_changes(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	char in[64], out[64];
	size_t len = make_listing(in, sizeof(in), "n", 2), count;
	uint64_t dev, ino;
	int child;

	(void)state;
	assert_int_equal(dcache_arena_get_watch(a, 5, "sub", 3, &child, &dev, &ino), -ENOENT);
	assert_int_equal(dcache_arena_put_watch(a, 5, dcache_arena_gen(a, 5), "sub", 3, 42, 7, 99), 0);
	assert_int_equal(dcache_arena_get_watch(a, 5, "sub", 3, &child, &dev, &ino), 0);
	assert_int_equal(child, 42);
	assert_int_equal(dev, 7);
	assert_int_equal(ino, 99);
	/* Another name, another directory, a prefix: none. */
	assert_int_equal(dcache_arena_get_watch(a, 5, "su", 2, &child, &dev, &ino), -ENOENT);
	assert_int_equal(dcache_arena_get_watch(a, 5, "subx", 4, &child, &dev, &ino), -ENOENT);
	assert_int_equal(dcache_arena_get_watch(a, 6, "sub", 3, &child, &dev, &ino), -ENOENT);
	/* The kinds never answer for each other. */
	assert_int_equal(dcache_arena_get(a, 5, out, sizeof(out), &count), -ENOENT);
	assert_int_equal(dcache_arena_put(a, 8, dcache_arena_gen(a, 8), in, len, 2), 0);
	assert_int_equal(dcache_arena_get_watch(a, 8, "n0", 2, &child, &dev, &ino), -ENOENT);
	/* Names that no directory entry has are refused. */
	assert_int_equal(dcache_arena_put_watch(a, 5, dcache_arena_gen(a, 5), "a/b", 3, 1, 1, 1),
			 -EINVAL);
	assert_int_equal(dcache_arena_put_watch(a, 5, dcache_arena_gen(a, 5), "", 0, 1, 1, 1), -EINVAL);
	assert_int_equal(dcache_arena_put_watch(a, 5, dcache_arena_gen(a, 5), "x", 1, -1, 1, 1),
			 -EINVAL);
	/* An event on the parent (a rename, a removal): gone; learned before
	 * it, offered after it: refused. */
	dcache_arena_invalidate(a, 5);
	assert_int_equal(dcache_arena_get_watch(a, 5, "sub", 3, &child, &dev, &ino), -ENOENT);
	assert_int_equal(dcache_arena_put_watch(a, 5, dcache_arena_gen(a, 5) - 1, "sub", 3, 42, 7, 99),
			 -ESTALE);
	/* A mount change: every entry, and the count it is done for. */
	assert_int_equal(dcache_arena_put_watch(a, 5, dcache_arena_gen(a, 5), "sub", 3, 43, 7, 98), 0);
	assert_int_equal(dcache_arena_get_watch(a, 5, "sub", 3, &child, &dev, &ino), 0);
	assert_int_equal(child, 43);
	dcache_arena_mounts_changed(a, 3);
	assert_int_equal(dcache_arena_mounts_done(a), 3);
	assert_int_equal(dcache_arena_get_watch(a, 5, "sub", 3, &child, &dev, &ino), -ENOENT);
	munmap(a, DCACHE_ARENA_SIZE);
}

static void test_dcache_arena_directory_attributes_valid_until_its_watch_changes(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	struct stat in, out;
	char names[64];
	size_t count;

	(void)state;
	assert_int_equal(stat("/", &in), 0);
	assert_int_equal(dcache_arena_get_attr(a, 9, &out), -ENOENT);
	assert_int_equal(dcache_arena_put_attr(a, 9, dcache_arena_gen(a, 9), &in), 0);
	assert_int_equal(dcache_arena_get_attr(a, 9, &out), 0);
	assert_memory_equal(&in, &out, sizeof(in));
	/* Not a listing, not another watch's. */
	assert_int_equal(dcache_arena_get(a, 9, names, sizeof(names), &count), -ENOENT);
	assert_int_equal(dcache_arena_get_attr(a, 10, &out), -ENOENT);
	/* Only directories. */
	in.st_mode = S_IFREG | 0644;
	assert_int_equal(dcache_arena_put_attr(a, 11, dcache_arena_gen(a, 11), &in), -EINVAL);
	/* An event on its own watch: gone. */
	dcache_arena_invalidate(a, 9);
	assert_int_equal(dcache_arena_get_attr(a, 9, &out), -ENOENT);
	munmap(a, DCACHE_ARENA_SIZE);
}

static void test_dcache_arena_search_answer_only_for_its_credentials_until_its_watch_changes(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	struct stat out;

	(void)state;
	assert_int_equal(dcache_arena_get_search(a, 9, 77), -ENOENT);
	assert_int_equal(dcache_arena_put_search(a, 9, dcache_arena_gen(a, 9), 77), 0);
	assert_int_equal(dcache_arena_get_search(a, 9, 77), 0);
	/* Other credentials, another directory, another kind: nothing. */
	assert_int_equal(dcache_arena_get_search(a, 9, 78), -ENOENT);
	assert_int_equal(dcache_arena_get_search(a, 10, 77), -ENOENT);
	assert_int_equal(dcache_arena_get_attr(a, 9, &out), -ENOENT);
	/* No key, no answer. */
	assert_int_equal(dcache_arena_put_search(a, 11, dcache_arena_gen(a, 11), 0), -EINVAL);
	assert_int_equal(dcache_arena_get_search(a, 11, 0), -ENOENT);
	/* Two credentials, each its own answer. */
	assert_int_equal(dcache_arena_put_search(a, 9, dcache_arena_gen(a, 9), 78), 0);
	assert_int_equal(dcache_arena_get_search(a, 9, 77), 0);
	assert_int_equal(dcache_arena_get_search(a, 9, 78), 0);
	/* An event on its own watch (a chmod is one): gone for both; asked
	 * before it, offered after: refused. */
	dcache_arena_invalidate(a, 9);
	assert_int_equal(dcache_arena_get_search(a, 9, 77), -ENOENT);
	assert_int_equal(dcache_arena_get_search(a, 9, 78), -ENOENT);
	assert_int_equal(dcache_arena_put_search(a, 9, dcache_arena_gen(a, 9) - 1, 77), -ESTALE);
	munmap(a, DCACHE_ARENA_SIZE);
}

static void test_dcache_arena_full_refuses_and_keeps_what_it_has(void **state)
{
	void *a = map_arena(SMALL);
	static char in[65536], out[65536];
	size_t len = make_listing(in, sizeof(in), "a-long-header-name-", 2000), count;
	int wd, r = 0;

	(void)state;
	for (wd = 0; wd < 1000; wd++) {
		r = dcache_arena_put(a, wd, dcache_arena_gen(a, wd), in, len, 2000);
		if (r != 0)
			break;
	}
	assert_int_equal(r, -ENOSPC);
	assert_true(wd > 0 && wd < 1000);
	assert_true(dcache_arena_refused(a) >= 1);
	/* Still refused, and nothing written (a refused take moves nothing:
	 * a smaller entry may still fit in what is left, A6). */
	assert_int_equal(dcache_arena_put(a, 5000, dcache_arena_gen(a, 5000), in, len, 2000), -ENOSPC);
	for (int i = 0; i < wd; i++) {
		assert_int_equal(dcache_arena_get(a, i, out, sizeof(out), &count), (long)len);
		assert_memory_equal(in, out, len);
	}
	assert_int_equal(dcache_arena_get(a, wd, out, sizeof(out), &count), -ENOENT);
	munmap(a, SMALL);
}

/* A6: no entry is taken past the limit the watcher has backed with memory
 * (here: the pages past it are PROT_NONE, so a take or a read there would
 * fault); a refused take asks for room (wants moves); once the limit is
 * raised, the same put fits, and everything below reads back. */
static void test_dcache_arena_takes_nothing_past_its_limit(void **state)
{
	void *a = map_arena(SMALL);
	static char in[65536], out[65536];
	size_t len = make_listing(in, sizeof(in), "a-long-header-name-", 2000), count;
	uint64_t lim;
	uint32_t w0;
	int wd, r = 0;

	(void)state;
	dcache_arena_set_limit(a, 0); /* the header only */
	lim = dcache_arena_limit(a) + 256 * 1024;
	lim = (lim + 4095) & ~(uint64_t)4095;
	dcache_arena_set_limit(a, lim);
	assert_int_equal(dcache_arena_limit(a), lim);
	assert_int_equal(mprotect((char *)a + lim, SMALL - lim, PROT_NONE), 0);
	w0 = dcache_arena_wants(a);
	for (wd = 0; wd < 1000; wd++) {
		r = dcache_arena_put(a, wd, dcache_arena_gen(a, wd), in, len, 2000);
		if (r != 0)
			break;
	}
	assert_int_equal(r, -ENOSPC);
	assert_true(wd > 0 && wd < 1000);
	assert_true(dcache_arena_room(a) < len);
	assert_true(dcache_arena_wants(a) != w0); /* room asked for */
	for (int i = 0; i < wd; i++)
		assert_int_equal(dcache_arena_get(a, i, out, sizeof(out), &count), (long)len);
	/* The watcher allocates the next chunk, then raises the limit. */
	assert_int_equal(mprotect((char *)a + lim, SMALL - lim, PROT_READ | PROT_WRITE), 0);
	dcache_arena_set_limit(a, SMALL);
	assert_int_equal(dcache_arena_put(a, wd, dcache_arena_gen(a, wd), in, len, 2000), 0);
	assert_int_equal(dcache_arena_get(a, wd, out, sizeof(out), &count), (long)len);
	assert_memory_equal(in, out, len);
	munmap(a, SMALL);
}

/* The arena's layout, as dcache_arena.c has it, to corrupt it on purpose. */
struct ent_hdr {
	uint32_t next, kind;
	int32_t wd, child;
	uint64_t gen, check, dev, ino;
	uint32_t count, len;
};

/* The bucket head that leads to wd's newest entry: found by publishing one
 * and looking for its offset among the heads. */
static uint32_t *head_of(void *a, size_t size, int wd, uint32_t *off)
{
	char in[64];
	size_t len = make_listing(in, sizeof(in), "x", 1);
	uint32_t *w = a;

	assert_int_equal(dcache_arena_put(a, wd, dcache_arena_gen(a, wd), in, len, 1), 0);
	for (size_t i = 0; i < size / 4; i++) {
		struct ent_hdr *e;

		if (!w[i] || (uint64_t)w[i] * 8 >= size || (uint64_t)w[i] * 8 < 4096)
			continue;
		e = (struct ent_hdr *)((char *)a + (uint64_t)w[i] * 8);
		if ((char *)&w[i] < (char *)e && e->wd == wd && e->len == len &&
		    !memcmp((char *)(e + 1), in, len)) {
			*off = w[i];
			return &w[i];
		}
	}
	fail_msg("no bucket head leads to watch %d", wd);
	return NULL;
}

/* A9: a regular file's attributes answer while its directory's watch and
 * its own both saw no event; never past the session's file watch numbers,
 * never for a file of more than one link, and not after a scribble. */
static void test_dcache_arena_file_attributes_valid_until_its_directory_or_its_own_watch_changes(
	void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	struct stat in = { .st_mode = S_IFREG | 0644, .st_nlink = 1, .st_dev = 3, .st_ino = 77,
			   .st_size = 12345 },
		    out;
	unsigned int type;
	uint64_t dev, ino;
	size_t tl;
	char tg[8];
	int child;

	(void)state;
	/* No file watch numbers given (the watcher's RCUWALK_SHARED_FILES=0). */
	assert_int_equal(dcache_arena_file_watches_on(a), 0);
	assert_int_equal(dcache_arena_put_file(a, 9, dcache_arena_gen(a, 9), "f.h", 3, 40,
					       dcache_arena_gen(a, 40), &in),
			 -ERANGE);
	dcache_arena_set_file_wds(a, 100);
	assert_int_equal(dcache_arena_file_watches_on(a), 1);
	assert_int_equal(dcache_arena_get_file(a, 9, "f.h", 3, &out), -ENOENT);
	assert_int_equal(dcache_arena_put_file(a, 9, dcache_arena_gen(a, 9), "f.h", 3, 40,
					       dcache_arena_gen(a, 40), &in),
			 0);
	assert_int_equal(dcache_arena_get_file(a, 9, "f.h", 3, &out), 0);
	assert_memory_equal(&in, &out, sizeof(in));
	/* Only that name of that directory; no other kind's answer. */
	assert_int_equal(dcache_arena_get_file(a, 9, "f.hh", 4, &out), -ENOENT);
	assert_int_equal(dcache_arena_get_file(a, 10, "f.h", 3, &out), -ENOENT);
	assert_int_equal(dcache_arena_get_watch(a, 9, "f.h", 3, &child, &dev, &ino), -ENOENT);
	assert_int_equal(dcache_arena_get_name(a, 9, "f.h", 3, &type, &dev, &ino, tg, sizeof(tg), &tl),
			 -ENOENT);
	assert_int_equal(dcache_arena_get_attr(a, 40, &out), -ENOENT);
	/* An event on the file's own watch (a write through another name, a
	 * new hard link made anywhere): gone. */
	dcache_arena_invalidate(a, 40);
	assert_int_equal(dcache_arena_get_file(a, 9, "f.h", 3, &out), -ENOENT);
	/* Offered again; then an event on the directory (the name replaced). */
	assert_int_equal(dcache_arena_put_file(a, 9, dcache_arena_gen(a, 9), "f.h", 3, 40,
					       dcache_arena_gen(a, 40), &in),
			 0);
	assert_int_equal(dcache_arena_get_file(a, 9, "f.h", 3, &out), 0);
	dcache_arena_invalidate(a, 9);
	assert_int_equal(dcache_arena_get_file(a, 9, "f.h", 3, &out), -ENOENT);
	/* Stale generations are refused at the put. */
	assert_int_equal(dcache_arena_put_file(a, 9, dcache_arena_gen(a, 9), "f.h", 3, 40,
					       dcache_arena_gen(a, 40) - 1, &in),
			 -ESTALE);
	/* Not a regular file, or more than one link: never offered. */
	in.st_nlink = 2;
	assert_int_equal(dcache_arena_put_file(a, 9, dcache_arena_gen(a, 9), "g", 1, 41,
					       dcache_arena_gen(a, 41), &in),
			 -EINVAL);
	in.st_nlink = 1;
	in.st_mode = S_IFDIR | 0755;
	assert_int_equal(dcache_arena_put_file(a, 9, dcache_arena_gen(a, 9), "g", 1, 41,
					       dcache_arena_gen(a, 41), &in),
			 -EINVAL);
	in.st_mode = S_IFREG | 0644;
	/* A scribbled byte of the attributes fails the entry's check (A7). */
	in.st_size = 424242; /* these bytes are in this entry only */
	assert_int_equal(dcache_arena_put_file(a, 9, dcache_arena_gen(a, 9), "h", 1, 42,
					       dcache_arena_gen(a, 42), &in),
			 0);
	assert_int_equal(dcache_arena_get_file(a, 9, "h", 1, &out), 0);
	{
		char *p = memmem(a, DCACHE_ARENA_SIZE, &in, sizeof(in));

		assert_non_null(p);
		p[offsetof(struct stat, st_size)] ^= 1;
		assert_int_equal(dcache_arena_get_file(a, 9, "h", 1, &out), -ENOENT);
	}
	/* A watch number at the limit ends file watches for the session. */
	assert_int_equal(dcache_arena_put_file(a, 9, dcache_arena_gen(a, 9), "k", 1, 100,
					       dcache_arena_gen(a, 100), &in),
			 -ERANGE);
	assert_int_equal(dcache_arena_file_watches_on(a), 0);
	assert_int_equal(dcache_arena_file_watch_ok(a, 43), 0);
	munmap(a, DCACHE_ARENA_SIZE);
}

static void test_dcache_arena_corrupt_entries_answer_nothing_and_never_fault(void **state)
{
	void *a = map_arena(SMALL);
	char out[4096];
	size_t count;
	uint32_t off = 0, *head = head_of(a, SMALL, 11, &off);
	struct ent_hdr *e = (struct ent_hdr *)((char *)a + (uint64_t)off * 8);
	char *names = (char *)(e + 1);

	(void)state;
	/* The listing is one name, "x0": type byte, 'x', '0', NUL. */
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), 4);
	/* A name without its NUL. */
	names[3] = 'y';
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	names[3] = '\0';
	/* A name with a '/', an empty name. */
	names[1] = '/';
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	names[1] = '\0';
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	names[1] = 'x';
	/* A count that disagrees with the names. */
	e->count = 2;
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	e->count = 1;
	/* A length past the end of the arena. */
	e->len = UINT32_MAX;
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	e->len = 4;
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), 4);
	/* A chain that loops on itself: bounded. */
	e->wd = 12;
	e->next = off;
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	/* Heads and links out of bounds or into the header. */
	*head = (uint32_t)(SMALL / 8);
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	*head = 1;
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	*head = (uint32_t)(SMALL / 8) - 1; /* the entry's header would pass the end */
	assert_int_equal(dcache_arena_get(a, 11, out, sizeof(out), &count), -ENOENT);
	/* A header from elsewhere is refused at attach. */
	memset(a, 0x5a, 64);
	assert_int_equal(dcache_arena_check(a, SMALL), -EPROTO);
	munmap(a, SMALL);
}

/*
 * Writers publish listings whose every name says which watch and which
 * generation they were read under ("w<wd>g<gen>n<i>"); an invalidator bumps
 * generations; readers check that every listing they get is one of their
 * watch's, read under a generation current at some point of the get
 * (between the generation before and after it).
 */
#define WDS 8
#define ROUNDS 2000000 /* puts per writer */

static void *invalidator_main(void *arg)
{
	struct stress *s = arg;

	for (unsigned int r = 0; !__atomic_load_n(&s->stop, __ATOMIC_RELAXED); r++) {
		dcache_arena_invalidate(s->a, (int)(r % WDS));
		if (r % 64 == 0)
			sched_yield();
	}
	return NULL;
}

static void test_dcache_arena_concurrent_readers_see_only_current_listings(void **state)
{
	struct stress s = { .a = map_arena(DCACHE_ARENA_SIZE), .wds = WDS, .names = 7, .rounds = ROUNDS };
	pthread_t w[2], r[2], inv;

	(void)state;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_create(&w[i], NULL, writer_main, &s), 0);
		assert_int_equal(pthread_create(&r[i], NULL, reader_main, &s), 0);
	}
	assert_int_equal(pthread_create(&inv, NULL, invalidator_main, &s), 0);
	nanosleep(&(struct timespec){ 0, 300000000L }, NULL);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++) {
		pthread_join(w[i], NULL);
		pthread_join(r[i], NULL);
	}
	pthread_join(inv, NULL);
	print_message("listings read: %lu, wrong: %lu\n", s.got, s.bad);
	assert_true(s.got > 0);
	assert_int_equal(s.bad, 0);
	munmap(s.a, DCACHE_ARENA_SIZE);
}

/* Writers in child processes, SIGKILLed at random points of their puts: no
 * listing any reader gets afterwards is half-written or another watch's. */
static void test_dcache_arena_writers_killed_anywhere_leave_nothing_half_done(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	struct stress s = { .a = a, .wds = WDS, .names = 7, .rounds = ROUNDS,
			    .progress = shared_counter() };
	unsigned long got = 0;

	(void)state;
	srand((unsigned int)time(NULL));
	for (int k = 0; k < 200; k++) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0) {
			for (;;)
				writer_main(&s);
		}
		kill_writer_midway(pid, s.progress);
		if (k % 4 == 0)
			dcache_arena_invalidate(a, k % WDS);
		for (int wd = 0; wd < WDS; wd++) {
			char buf[2048];
			size_t count;
			uint64_t g = dcache_arena_gen(a, wd);
			long n = dcache_arena_get(a, wd, buf, sizeof(buf), &count);

			if (n < 0)
				continue;
			got++;
			if (!listing_ok(buf, (size_t)n, count, wd, g, g))
				fail_msg("watch %d: a wrong listing after a writer was killed", wd);
		}
	}
	print_message("listings read after kills: %lu\n", got);
	assert_true(got > 0);
	munmap(s.progress, 4096);
	munmap(a, DCACHE_ARENA_SIZE);
}

/* Filesystem classes by unique mount ID (A8): the first class put for an
 * ID stays, through an invalidation of everything and a reset of the entry
 * space (a mount's ID is never reused, its type never changes); a full
 * neighbourhood refuses, and a refused ID answers nothing, never another
 * ID's class. */
static void test_dcache_arena_fs_class_first_put_stays_and_outlives_resets(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE);
	const uint64_t base = (uint64_t)1 << 31; /* where Linux starts unique IDs */
	unsigned int put = 0, refused = 0;

	(void)state;
	assert_int_equal(dcache_arena_fs_class(a, base + 1), 0);
	assert_int_equal(dcache_arena_fs_class_put(a, base + 1, DCACHE_FS_LOCAL), 0);
	assert_int_equal(dcache_arena_fs_class(a, base + 1), DCACHE_FS_LOCAL);
	assert_int_equal(dcache_arena_fs_class_put(a, base + 1, DCACHE_FS_TTL), 0);
	assert_int_equal(dcache_arena_fs_class(a, base + 1), DCACHE_FS_LOCAL);
	assert_int_equal(dcache_arena_fs_class_put(a, base + 2, DCACHE_FS_TTL), 0);
	assert_int_equal(dcache_arena_fs_class(a, base + 2), DCACHE_FS_TTL);
	assert_int_equal(dcache_arena_fs_class(a, base + 1), DCACHE_FS_LOCAL);
	/* No ID, an ID that does not fit beside its class, no class. */
	assert_int_equal(dcache_arena_fs_class_put(a, 0, DCACHE_FS_LOCAL), -EINVAL);
	assert_int_equal(dcache_arena_fs_class_put(a, (uint64_t)1 << 62, DCACHE_FS_LOCAL), -EINVAL);
	assert_int_equal(dcache_arena_fs_class_put(a, base + 3, 0), -EINVAL);
	assert_int_equal(dcache_arena_fs_class_put(a, base + 3, DCACHE_FS_NONE + 1), -EINVAL);
	assert_int_equal(dcache_arena_fs_class(a, 0), 0);
	assert_int_equal(dcache_arena_fs_class(a, base + 3), 0);
	/* Lost events, mount changes, a reset: entries go, classes stay. */
	dcache_arena_invalidate(a, -1);
	dcache_arena_reset(a);
	assert_int_equal(dcache_arena_fs_class(a, base + 1), DCACHE_FS_LOCAL);
	assert_int_equal(dcache_arena_fs_class(a, base + 2), DCACHE_FS_TTL);
	/* Many mounts: some refused, none answered wrong. */
	for (uint64_t i = 10; i < 1010; i++) {
		int r = dcache_arena_fs_class_put(a, base + i, (int)(i % 3) + 1);

		assert_true(r == 0 || r == -ENOSPC);
		put += r == 0;
		refused += r == -ENOSPC;
	}
	for (uint64_t i = 10; i < 1010; i++) {
		int c = dcache_arena_fs_class(a, base + i);

		if (c != 0 && c != (int)(i % 3) + 1)
			fail_msg("mount %llu: class %d, put %d", (unsigned long long)(base + i), c,
				 (int)(i % 3) + 1);
	}
	print_message("1000 mounts: %u classes kept, %u refused\n", put, refused);
	assert_true(put > 0 && refused > 0);
	assert_int_equal(dcache_arena_fs_class(a, base + 1), DCACHE_FS_LOCAL);
	munmap(a, DCACHE_ARENA_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dcache_arena_listing_put_is_read_back_whole),
		cmocka_unit_test(test_dcache_arena_listing_gone_once_its_watch_changes),
		cmocka_unit_test(test_dcache_arena_watch_of_a_name_valid_until_its_directory_changes),
		cmocka_unit_test(test_dcache_arena_directory_attributes_valid_until_its_watch_changes),
		cmocka_unit_test(test_dcache_arena_search_answer_only_for_its_credentials_until_its_watch_changes),
		cmocka_unit_test(
			test_dcache_arena_file_attributes_valid_until_its_directory_or_its_own_watch_changes),
		cmocka_unit_test(test_dcache_arena_full_refuses_and_keeps_what_it_has),
		cmocka_unit_test(test_dcache_arena_takes_nothing_past_its_limit),
		cmocka_unit_test(test_dcache_arena_corrupt_entries_answer_nothing_and_never_fault),
		cmocka_unit_test(test_dcache_arena_concurrent_readers_see_only_current_listings),
		cmocka_unit_test(test_dcache_arena_writers_killed_anywhere_leave_nothing_half_done),
		cmocka_unit_test(test_dcache_arena_fs_class_first_put_stays_and_outlives_resets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
