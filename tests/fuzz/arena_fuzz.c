/* SPDX-License-Identifier: MIT */
/*
 * arena_fuzz.c - libFuzzer target: the session's shared listings
 * (cache/dcache_arena.c) read back from an arena that another process of the
 * same user has scribbled over (doc/session.md, "Phase 2: shared listings",
 * invariant A4).  Whatever the bytes, dcache_arena_get() must stay inside
 * the arena and the caller's buffer (AddressSanitizer checks every access:
 * the arena is a malloc'd block of exactly its size) and return either no
 * listing or a well-formed one of the count it says.
 *
 * Input: a sequence of records, each
 *   byte 0   what: 0-2 publish a listing, 3 a watch entry or a
 *            directory's attributes (two bytes follow), 4-5 bump a generation,
 *            6-7 overwrite arena bytes
 *   byte 1   a watch number (0-255)
 *   then     for a publish: a length byte and that many bytes of names
 *            (taken as they are: the arena itself must refuse nothing here
 *            that a reader could not parse); for an overwrite: a 3-byte
 *            offset into the bucket heads and entries (past the header and
 *            the generations), a length byte and that many bytes
 * After every record, every watch number 0-255 is read back, and the shared
 * path table (dcache_spath.c) is asked for 64 names: ENOENT, ENOTDIR or
 * nothing.  Record kind 3 with its second byte's top bit set offers such a
 * name (through one to three components, the last in the record's watch);
 * kind 4-5 also moves the path generations (a name's, or the watch's own),
 * or with bit 5 of its first byte set resets the arena instead (a new
 * epoch: A2, A7).  After every record, an arena that asks for a reset
 * (a take refused for room) gets one, as the watcher's thread does it.
 *
 * Build: CC=clang cmake -DRCUWALK_FUZZ=ON; run: rcuwalk_arena_fuzz [flags] [corpus].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dcache.h"

#define SIZE ((size_t)1 << 20)
/* Where the generations end and the heads begin (dcache_arena.c's layout:
 * a 128-byte header, 65536 generations of 8 bytes). */
#define HEADS_AT (128 + 65536 * 8)

static void check_listing(const char *buf, long n, size_t count)
{
	size_t off = 0, k = 0;

	while (off < (size_t)n) {
		size_t l = strnlen(buf + off + 1, (size_t)n - off - 1);

		if (l == 0 || l > NAME_MAX || l == (size_t)n - off - 1 || memchr(buf + off + 1, '/', l))
			abort(); /* a malformed name answered */
		off += l + 2;
		k++;
	}
	if (k != count)
		abort(); /* a count that disagrees with the names */
}

static const struct dcache_spath_key spk = { .start = 1, .flags = 1, .cred = 9 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *a = aligned_alloc(64, SIZE);
	static char buf[65536];
	size_t i = 0;

	if (!a)
		abort();
	memset(a, 0, SIZE);
	if (dcache_arena_format(a, SIZE) != 0)
		abort();
	dcache_arena_set_file_wds(a, 200); /* file watches 0..199 (A9) */
	while (i + 2 <= size) {
		unsigned int what = data[i] & 7;
		int wd = data[i + 1];

		i += 2;
		if (what == 3 && i + 1 < size) {
			/* a watch entry for a name of the listing's form, a
			 * search answer, or a directory's attributes */
			struct stat st = { .st_mode = S_IFDIR | 0755, .st_ino = data[i] };

			if (data[i + 1] & 0x80) {
				static const int wds[3] = { 1, 2, 0 };
				struct dcache_spath_fill f = { .key = spk };
				uint64_t sg[3], ng[3];
				char p[64];
				const char *c[3] = { "s", "d0", "n0" };

				f.len = (size_t)snprintf(p, sizeof(p), "/s/d%u/n%u", data[i] % 5,
							 data[i + 1] & 63);
				f.path = p;
				f.h = dcache_spath_hash(&spk, p, f.len);
				f.err = (data[i] & 8) ? ENOTDIR : ENOENT;
				f.n = 1 + data[i] % 3;
				for (unsigned int k = 0; k < f.n; k++) {
					f.wd[k] = k == 2 ? wd : wds[k];
					f.nidx[k] = dcache_spath_name_slot(f.wd[k], c[k], strlen(c[k]));
				}
				if (dcache_spath_gens(a, f.wd, f.nidx, f.n, sg, ng) != 0)
					memset(sg, 0, sizeof(sg)), memset(ng, 0, sizeof(ng));
				(void)dcache_spath_put(a, &f, sg, ng);
			} else if ((data[i] & 5) == 5) {
				/* a regular file's attributes, its own watch
				 * numbered by the next byte */
				struct stat fst = { .st_mode = S_IFREG | 0644, .st_nlink = 1,
						    .st_dev = 1, .st_ino = data[i] };
				int fwd = data[i + 1];

				(void)dcache_arena_put_file(a, wd, dcache_arena_gen(a, wd), "x0", 2, fwd,
							    dcache_arena_gen(a, fwd), &fst);
			} else if (data[i] & 1)
				(void)dcache_arena_put_watch(a, wd, dcache_arena_gen(a, wd), "x0", 2,
							     data[i + 1], 1, 2);
			else if (data[i] & 2)
				(void)dcache_arena_put_search(a, wd, dcache_arena_gen(a, wd),
							      1 + data[i + 1] % 3);
			else
				(void)dcache_arena_put_attr(a, wd, dcache_arena_gen(a, wd), &st);
			i += 2;
		} else if (what < 3 && i < size) {
			size_t len = data[i++];

			if (len > size - i)
				len = size - i;
			(void)dcache_arena_put(a, wd, dcache_arena_gen(a, wd), (const char *)data + i,
					       len, len / 3);
			i += len;
		} else if (what < 6 && (data[i - 2] & 32)) {
			dcache_arena_reset(a);
		} else if (what < 6) {
			dcache_arena_invalidate(a, (data[i - 2] & 8) ? -1 : wd);
			dcache_spath_event(a, wd, (data[i - 2] & 16) ? 0x100 /* IN_CREATE */ : 0,
					   "n0", (data[i - 2] & 16) ? 2 : 0);
		} else if (i + 4 <= size) {
			size_t at = HEADS_AT + (((size_t)data[i] << 16 | (size_t)data[i + 1] << 8 |
						 data[i + 2]) %
						(SIZE - HEADS_AT));
			size_t len = data[i + 3];

			i += 4;
			if (len > size - i)
				len = size - i;
			if (len > SIZE - at)
				len = SIZE - at;
			memcpy(a + at, data + i, len);
			i += len;
		} else {
			break;
		}
		if (dcache_arena_wants_reset(a))
			dcache_arena_reset(a);
		for (int w = 0; w < 256; w++) {
			size_t count = 0;
			long n = dcache_arena_get(a, w, buf, sizeof(buf), &count);
			struct stat st;
			uint64_t dev, ino;
			int child;

			if (n >= 0)
				check_listing(buf, n, count);
			else if (n != -ENOENT && n != -E2BIG)
				abort();
			if (dcache_arena_get_attr(a, w, &st) == 0 && !S_ISDIR(st.st_mode))
				abort(); /* only a directory's attributes are answered */
			if (dcache_arena_get_watch(a, w, "x0", 2, &child, &dev, &ino) == 0 && child < 0)
				abort();
			if (dcache_arena_get_file(a, w, "x0", 2, &st) == 0 &&
			    (!S_ISREG(st.st_mode) || st.st_nlink != 1))
				abort(); /* only a regular file of one link */
			for (uint64_t cred = 0; cred < 4; cred++) {
				int r = dcache_arena_get_search(a, w, cred);

				if ((r != 0 && r != -ENOENT) || (cred == 0 && r == 0))
					abort(); /* key 0 is never answered */
			}
		}
		for (unsigned int k = 0; k < 64; k++) {
			char p[64];
			size_t l = (size_t)snprintf(p, sizeof(p), "/s/d%u/n%u", k % 5, k);
			int r = dcache_spath_find(a, &spk, p, l, dcache_spath_hash(&spk, p, l));

			if (r != 0 && r != ENOENT && r != ENOTDIR)
				abort(); /* only a negative answer, or none */
		}
	}
	{
		struct dcache_arena_census c; /* the report's walk: stays inside too */

		dcache_arena_census(a, &c);
		if (c.sp_used > c.sp_slots || c.sp_valid > c.sp_used ||
		    c.listing.live > c.listing.n || c.listing.deep > c.listing.n)
			abort();
	}
	free(a);
	return 0;
}
