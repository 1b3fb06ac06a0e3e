/* SPDX-License-Identifier: MIT */
/*
 * test_dcache_arena_reset.c - a full arena gives its entry space back
 * (cache/dcache_arena.c, A2, A7): after a reset it takes entries again, no
 * entry of an older epoch answers, a writer that took space before a reset
 * and writes it after never makes a reader see its bytes or a scribbled
 * entry, the shared path table ends with the first reset (S6), and
 * concurrent writers, readers and resets only ever answer current
 * listings.  The watcher's part (dcache_arena_wants_reset, then
 * dcache_arena_reset) is played by the test.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dcache.h"
#include "dcache_arena_int.h"
#include "arena_stress.h"

#define SMALL ((size_t)1 << 20) /* about 440 KiB of entry space */
#define NWD 97
#define NONE UINT64_MAX

/* A listing of n names "<tag>w<wd>r<r>n<i>" (d_type 8); its length. */
static size_t stamped(char *buf, size_t cap, const char *tag, int wd, uint64_t r, unsigned int n)
{
	size_t len = 0;

	for (unsigned int i = 0; i < n; i++) {
		int w = snprintf(buf + len + 1, cap - len - 1, "%sw%dr%llun%u", tag, wd,
				 (unsigned long long)r, i);

		assert_true(w > 0 && (size_t)w + 2 < cap - len);
		buf[len] = 8;
		len += (size_t)w + 2;
	}
	return len;
}

static uint64_t bump_of(void *a)
{
	return __atomic_load_n(&((struct arena_hdr *)a)->bump, __ATOMIC_RELAXED);
}

/* Round after round of listings and names for NWD watches, in an arena that
 * fills every few hundred rounds: each -ENOSPC is answered as the watcher
 * does (dcache_arena_wants_reset, then a reset), the put is then taken, and
 * every read answers exactly the newest entry put since the reset and the
 * last invalidation of its watch, or nothing at all. */
static void test_dcache_arena_full_arena_keeps_taking_after_a_reset_and_reads_stay_exact(void **state)
{
	void *a = map_arena(SMALL);
	static char in[8192], out[8192], want[NWD][8192];
	size_t wantlen[NWD];
	uint64_t last[NWD], lastname[NWD], resets = 0;

	(void)state;
	for (int i = 0; i < NWD; i++)
		last[i] = lastname[i] = NONE;
	for (uint64_t r = 0; r < 20000; r++) {
		int wd = (int)(r % NWD);
		unsigned int n = 1 + (unsigned int)(r % 23);
		size_t len = stamped(in, sizeof(in), "", wd, r, n);
		char f[16];
		int rc;

		snprintf(f, sizeof(f), "f%d", wd);
		for (int kind = 0; kind < 2; kind++) {
			if (kind == 0)
				rc = dcache_arena_put(a, wd, dcache_arena_gen(a, wd), in, len, n);
			else if (r % 3 == 0)
				rc = dcache_arena_put_name(a, wd, dcache_arena_gen(a, wd), f, strlen(f),
							   DT_REG, r, (uint64_t)wd, NULL, 0);
			else
				break;
			if (rc == -ENOSPC) {
				/* The watcher's part: asked, it resets. */
				assert_true(dcache_arena_wants_reset(a));
				assert_int_equal(dcache_arena_refused(a), resets + 1);
				dcache_arena_reset(a);
				resets++;
				assert_int_equal(dcache_arena_resets(a), resets);
				assert_false(dcache_arena_wants_reset(a));
				for (int i = 0; i < NWD; i++) {
					size_t count, tl;
					unsigned int type;
					uint64_t dev, ino;
					char fi[16];

					snprintf(fi, sizeof(fi), "f%d", i);
					assert_int_equal(dcache_arena_get(a, i, out, sizeof(out), &count),
							 -ENOENT);
					assert_int_equal(dcache_arena_get_name(a, i, fi, strlen(fi), &type,
									       &dev, &ino, NULL, 0, &tl),
							 -ENOENT);
					last[i] = lastname[i] = NONE;
				}
				kind = -1; /* both again, in the new epoch */
				continue;
			}
			assert_int_equal(rc, 0);
			if (kind == 0) {
				last[wd] = r;
				memcpy(want[wd], in, len);
				wantlen[wd] = len;
			} else {
				lastname[wd] = r;
			}
		}
		if (r % 101 == 0) {
			int v = (int)((r / 101) % NWD);

			dcache_arena_invalidate(a, v);
			last[v] = lastname[v] = NONE;
		}
		for (int i = (int)(r % 8); i < NWD; i += 8) {
			size_t count;
			long got = dcache_arena_get(a, i, out, sizeof(out), &count);
			unsigned int type;
			uint64_t dev, ino;
			size_t tl;
			char fi[16];

			if (last[i] == NONE) {
				assert_int_equal(got, -ENOENT);
			} else {
				assert_int_equal(got, (long)wantlen[i]);
				assert_memory_equal(out, want[i], wantlen[i]);
			}
			snprintf(fi, sizeof(fi), "f%d", i);
			rc = dcache_arena_get_name(a, i, fi, strlen(fi), &type, &dev, &ino, NULL, 0, &tl);
			if (lastname[i] == NONE) {
				assert_int_equal(rc, -ENOENT);
			} else {
				assert_int_equal(rc, 0);
				assert_int_equal(type, DT_REG);
				assert_int_equal(dev, lastname[i]);
				assert_int_equal(ino, (uint64_t)i);
			}
		}
	}
	print_message("resets: %llu, refused takes: %llu\n", (unsigned long long)resets,
		      (unsigned long long)dcache_arena_refused(a));
	assert_true(resets >= 3);
	munmap(a, SMALL);
}

/* Every kind of entry of the old epoch stops answering at a reset, its
 * watch's generation unchanged; also reached through the heads as they
 * were (a reader that loaded a head before the reset, or a writer whose
 * publishing CAS lands after it). */
static void test_dcache_arena_old_epoch_entries_are_never_returned(void **state)
{
	void *a = map_arena(SMALL);
	struct arena_hdr *h = a;
	static uint32_t heads[ARENA_BUCKETS];
	struct stat st = { .st_mode = S_IFDIR | 0755, .st_ino = 7, .st_dev = 3 }, st2;
	char in[256], out[256];
	size_t len = stamped(in, sizeof(in), "old", 3, 0, 4), count, tl;
	unsigned int type;
	uint64_t dev, ino;
	int child;

	(void)state;
	assert_int_equal(dcache_arena_put(a, 3, dcache_arena_gen(a, 3), in, len, 4), 0);
	assert_int_equal(dcache_arena_put_watch(a, 3, dcache_arena_gen(a, 3), "inc", 3, 9, 1, 2), 0);
	assert_int_equal(dcache_arena_put_name(a, 3, dcache_arena_gen(a, 3), "a.h", 3, DT_LNK, 1, 2,
					       "b.h", 3),
			 0);
	assert_int_equal(dcache_arena_put_attr(a, 3, dcache_arena_gen(a, 3), &st), 0);
	assert_int_equal(dcache_arena_put_search(a, 3, dcache_arena_gen(a, 3), 42), 0);
	assert_int_equal(dcache_arena_get(a, 3, out, sizeof(out), &count), (long)len);
	assert_int_equal(dcache_arena_get_search(a, 3, 42), 0);
	memcpy(heads, h->heads, sizeof(heads));

	dcache_arena_reset(a);
	for (int pass = 0; pass < 2; pass++) {
		char tgt[16];

		assert_int_equal(dcache_arena_get(a, 3, out, sizeof(out), &count), -ENOENT);
		assert_int_equal(dcache_arena_get_watch(a, 3, "inc", 3, &child, &dev, &ino), -ENOENT);
		assert_int_equal(dcache_arena_get_name(a, 3, "a.h", 3, &type, &dev, &ino, tgt,
						       sizeof(tgt), &tl),
				 -ENOENT);
		assert_int_equal(dcache_arena_get_attr(a, 3, &st2), -ENOENT);
		assert_int_equal(dcache_arena_get_search(a, 3, 42), -ENOENT);
		/* The second pass: the old heads, leading to the old bytes. */
		memcpy(h->heads, heads, sizeof(heads));
	}
	/* The new epoch answers what it is given, in the same bytes. */
	len = stamped(in, sizeof(in), "new", 3, 1, 2);
	assert_int_equal(dcache_arena_put(a, 3, dcache_arena_gen(a, 3), in, len, 2), 0);
	assert_int_equal(dcache_arena_get(a, 3, out, sizeof(out), &count), (long)len);
	assert_memory_equal(in, out, len);
	assert_int_equal(count, 2);
	munmap(a, SMALL);
}

/*
 * A writer that took space before a reset and stores into it after (it was
 * stopped between its take and its stores, or its publishing CAS): its
 * bytes land over entries of the new epoch.  Simulated directly: its entry
 * is written for real in the old epoch and saved; after the reset the
 * space is filled again with new entries; then the saved bytes are stored
 * back, whole, as a header alone, as names alone, or shifted, and its
 * publish is replayed on its bucket's head.  Every read answers either
 * nothing or exactly what the new epoch put; the stale listing never; and
 * the new entries it covers are refused, not read scribbled.
 */
static void test_dcache_arena_entry_taken_before_a_reset_and_written_after_is_never_read(void **state)
{
	void *a = map_arena(SMALL);
	struct arena_hdr *h = a;
	static char in[4096], out[4096], want[NWD][4096], region[16384], saved[4096];
	size_t wantlen[NWD], n, slen;
	uint64_t o;
	uint32_t bucket = ARENA_BUCKETS, nwd = 0;
	int wd;

	(void)state;
	/* Some entries first, so that the stale one lies past the start. */
	for (wd = 10; wd < 20; wd++) {
		n = stamped(in, sizeof(in), "pre", wd, 0, 5);
		assert_int_equal(dcache_arena_put(a, wd, dcache_arena_gen(a, wd), in, n, 5), 0);
	}
	o = bump_of(a);
	slen = stamped(in, sizeof(in), "STALE", 1, 0, 12);
	assert_int_equal(dcache_arena_put(a, 1, dcache_arena_gen(a, 1), in, slen, 12), 0);
	n = bump_of(a) - o;
	assert_true(n <= sizeof(saved));
	memcpy(saved, (char *)a + o, n);
	for (uint32_t b = 0; b < ARENA_BUCKETS; b++)
		if (h->heads[b] == o / 8)
			bucket = b;
	assert_true(bucket < ARENA_BUCKETS);

	dcache_arena_reset(a);
	/* The new epoch: short listings of many watches, watch 1 among them,
	 * until the space is taken well past the stale entry. */
	for (wd = 0; bump_of(a) < o + n + 1024; wd++) {
		assert_true(wd < NWD);
		wantlen[wd] = stamped(want[wd], sizeof(want[wd]), "new", wd, 1, 1 + (unsigned int)wd % 3);
		assert_int_equal(dcache_arena_put(a, wd, dcache_arena_gen(a, wd), want[wd], wantlen[wd],
						  1 + (unsigned int)wd % 3),
				 0);
	}
	nwd = (uint32_t)wd;
	assert_true(o + n + 1024 - (o - 512) <= sizeof(region));
	memcpy(region, (char *)a + o - 512, sizeof(region));

	for (int variant = 0; variant < 9; variant++) {
		unsigned int refused = 0;
		size_t hdr = 56; /* struct arena_ent */

		memcpy((char *)a + o - 512, region, sizeof(region));
		switch (variant) {
		case 0: /* whole, where it was taken */
			memcpy((char *)a + o, saved, n);
			break;
		case 1: /* whole, and its publish replayed (an ABA on the head) */
			memcpy((char *)a + o, saved, n);
			h->heads[bucket] = (uint32_t)(o / 8);
			break;
		case 2: /* its header only */
			memcpy((char *)a + o, saved, hdr);
			h->heads[bucket] = (uint32_t)(o / 8);
			break;
		case 3: /* its names only */
			memcpy((char *)a + o + hdr, saved + hdr, n - hdr);
			break;
		default: /* whole, 8 to 40 bytes further (another stale take) */
			memcpy((char *)a + o + 8 * (size_t)(variant - 3), saved, n);
			h->heads[bucket] = (uint32_t)((o + 8 * (uint64_t)(variant - 3)) / 8);
			break;
		}
		for (uint32_t i = 0; i < nwd; i++) {
			size_t count;
			long got = dcache_arena_get(a, (int)i, out, sizeof(out), &count);

			if (got == -ENOENT) {
				refused++;
				continue;
			}
			assert_int_equal(got, (long)wantlen[i]);
			assert_memory_equal(out, want[i], wantlen[i]);
			assert_null(memmem(out, (size_t)got, "STALE", 5));
		}
		/* The stale bytes covered live entries of the new epoch. */
		assert_true(refused >= 1);
		h->heads[bucket] = 0;
	}
	munmap(a, SMALL);
}

/* S6: the shared path table lives in the entry space, read in place: the
 * first reset ends it for the session (finds answer nothing, puts are
 * refused), even once its bytes are reused. */
static void test_dcache_arena_reset_ends_the_shared_path_table(void **state)
{
	void *a = map_arena(DCACHE_ARENA_SIZE / 4);
	const struct dcache_spath_key k = { .start = 1, .flags = 1, .cred = 42 };
	struct dcache_spath_fill f = { .key = k, .path = "/x.h", .len = 4, .err = ENOENT, .n = 1 };
	uint64_t sgen[1], ngen[1];
	char in[256];
	int r = -ENOSPC;

	(void)state;
	f.h = dcache_spath_hash(&k, f.path, f.len);
	f.wd[0] = 1;
	f.nidx[0] = dcache_spath_name_slot(1, "x.h", 3);
	for (int tries = 0; tries < 2 && r == -ENOSPC; tries++) {
		if (dcache_spath_gens(a, f.wd, f.nidx, 1, sgen, ngen) != 0)
			sgen[0] = ngen[0] = 0;
		r = dcache_spath_put(a, &f, sgen, ngen);
	}
	assert_int_equal(r, 0);
	assert_int_equal(dcache_spath_find(a, &k, f.path, f.len, f.h), ENOENT);
	assert_true(dcache_spath_on(a));

	dcache_arena_reset(a);
	assert_false(dcache_spath_on(a));
	assert_int_equal(dcache_spath_find(a, &k, f.path, f.len, f.h), 0);
	assert_int_equal(dcache_spath_gens(a, f.wd, f.nidx, 1, sgen, ngen), -ENOENT);
	assert_int_equal(dcache_spath_put(a, &f, sgen, ngen), -EPERM);
	/* Its bytes reused by entries: still nothing. */
	for (int wd = 0; wd < 4000; wd++) {
		size_t len = stamped(in, sizeof(in), "", wd, 0, 3);

		if (dcache_arena_put(a, wd, dcache_arena_gen(a, wd), in, len, 3) != 0)
			break;
	}
	assert_int_equal(dcache_spath_find(a, &k, f.path, f.len, f.h), 0);
	/* The watcher's events find no generations to bump. */
	dcache_spath_event(a, 1, 0x100 /* IN_CREATE */, "x.h", 3);
	dcache_arena_invalidate(a, -1);
	munmap(a, DCACHE_ARENA_SIZE / 4);
}

/*
 * Writers, readers, an invalidator and a thread playing the watcher (a
 * reset whenever a take was refused for want of room, and now and then
 * unasked) on a small arena: every listing a reader gets is one of its
 * watch's, read under a generation current during the get, whole.
 */
#define WDS 16

static void *watcher_main(void *arg)
{
	struct stress *s = arg;

	for (unsigned int r = 0; !__atomic_load_n(&s->stop, __ATOMIC_RELAXED); r++) {
		if (dcache_arena_wants_reset(s->a) || r % 4096 == 0) {
			dcache_arena_reset(s->a);
			s->resets++;
		}
		if (r % 16 == 0)
			dcache_arena_invalidate(s->a, (int)(r / 16 % WDS));
		sched_yield();
	}
	return NULL;
}

static void test_dcache_arena_concurrent_writers_readers_and_resets_answer_only_current_listings(
	void **state)
{
	struct stress s = { .a = map_arena(SMALL), .wds = WDS, .names = 40, .rounds = 60000 };
	pthread_t w[2], r, wt;

	(void)state;
	assert_int_equal(pthread_create(&r, NULL, reader_main, &s), 0);
	assert_int_equal(pthread_create(&wt, NULL, watcher_main, &s), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&w[i], NULL, writer_main, &s), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELAXED);
	pthread_join(r, NULL);
	pthread_join(wt, NULL);
	print_message("listings read: %lu, wrong: %lu, resets: %lu, refused takes: %llu\n", s.got,
		      s.bad, s.resets, (unsigned long long)dcache_arena_refused(s.a));
	assert_true(s.resets > 0);
	assert_int_equal(s.bad, 0);
	munmap(s.a, SMALL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dcache_arena_full_arena_keeps_taking_after_a_reset_and_reads_stay_exact),
		cmocka_unit_test(test_dcache_arena_old_epoch_entries_are_never_returned),
		cmocka_unit_test(test_dcache_arena_entry_taken_before_a_reset_and_written_after_is_never_read),
		cmocka_unit_test(test_dcache_arena_reset_ends_the_shared_path_table),
		cmocka_unit_test(
			test_dcache_arena_concurrent_writers_readers_and_resets_answer_only_current_listings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
