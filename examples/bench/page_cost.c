/* SPDX-License-Identifier: MIT */
/*
 * rcuwalk_page_cost - what a page costs a process the first time it touches
 * it, on the machine at hand: the unit in which a process's start and its
 * first lookups are paid (issue 25: a later process's first pass, the
 * shared table's design).  On a VM whose page tables the hypervisor shadows
 * a first touch can cost tens of times a syscall; on bare metal well under a
 * microsecond.
 *
 *   rcuwalk_page_cost [-n PAGES] [-r ROUNDS]
 *
 * Per round, each way below on PAGES fresh pages (default 1,024), median and
 * min-max over ROUNDS (default 5), in us per page:
 *   private write       an anonymous private page written once (heap
 *                       memory: a dentry, a listing copy): a fault each
 *   populated write     the same after MADV_POPULATE_WRITE in 16-page calls
 *                       (the populate's own time is in the next column)
 *   again               a second write of the same pages (a TLB miss at most)
 *   shared read, seq    a page of a memfd another mapping already wrote,
 *                       read through a new MAP_SHARED mapping (a session's
 *                       arena in a later process), in order: the kernel
 *                       maps up to 16 pages a fault (fault-around)
 *   shared read, 1/16   the same, one page in every 16: a fault each
 *   populated shared    after MADV_POPULATE_READ of the whole mapping
 * Prints a markdown table.  Exits 2 on a bad argument, 1 if the kernel
 * refuses a mapping; a kernel without MADV_POPULATE_* (before 5.14) shows
 * "-" in those rows.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { W_PRIV, W_POP, W_AGAIN, W_SEQ, W_SPARSE, W_SPOP, W_N };
static const char *const way[W_N] = { "private write", "populated write", "again",
				      "shared read, seq", "shared read, 1/16", "populated shared" };

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* us per touched page: write (or read) one byte of every step-th page. */
static double touch(volatile char *p, size_t pages, size_t step, int wr)
{
	long long t0 = now_ns();
	unsigned int sum = 0;
	size_t n = 0;

	for (size_t i = 0; i < pages; i += step, n++) {
		if (wr)
			p[i * 4096] = 1;
		else
			sum += (unsigned char)p[i * 4096];
	}
	(void)sum;
	return (double)(now_ns() - t0) / 1e3 / (double)n;
}

static void *map_or_die(size_t len, int prot, int flags, int fd)
{
	void *p = mmap(NULL, len, prot, flags, fd, 0);

	if (p == MAP_FAILED) {
		perror("rcuwalk_page_cost: mmap");
		exit(1);
	}
	return p;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t pages = 1024;
	int rounds = 5, o, fd;
	double v[W_N][64], pop_w[64], pop_r[64];
	int have_pop = 1;

	while ((o = getopt(argc, argv, "n:r:")) != -1) {
		if (o == 'n' && (pages = strtoul(optarg, NULL, 10)) >= 16 && pages <= 1 << 20)
			continue;
		if (o == 'r' && (rounds = atoi(optarg)) >= 1 && rounds <= 64)
			continue;
		fprintf(stderr, "usage: rcuwalk_page_cost [-n PAGES (16..1048576)] [-r ROUNDS (1..64)]\n");
		return 2;
	}
	size_t len = pages * 4096;

	fd = memfd_create("rcuwalk_page_cost", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
		perror("rcuwalk_page_cost: memfd");
		return 1;
	}
	for (int r = 0; r < rounds; r++) {
		char *a = map_or_die(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
		char *b = map_or_die(len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
		char *w = map_or_die(len, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
		char *s1, *s2, *s3;
		long long t0;

		v[W_PRIV][r] = touch(a, pages, 1, 1);
		t0 = now_ns();
		for (size_t i = 0; i < pages && have_pop; i += 16)
			if (madvise(b + i * 4096, 16 * 4096, MADV_POPULATE_WRITE) != 0)
				have_pop = 0;
		pop_w[r] = (double)(now_ns() - t0) / 1e3 / (double)pages;
		v[W_POP][r] = touch(b, pages, 1, 1);
		v[W_AGAIN][r] = touch(b, pages, 1, 1);
		memset(w, (char)r, len); /* the other process's pages */
		s1 = map_or_die(len, PROT_READ, MAP_SHARED, fd);
		s2 = map_or_die(len, PROT_READ, MAP_SHARED, fd);
		s3 = map_or_die(len, PROT_READ, MAP_SHARED, fd);
		v[W_SEQ][r] = touch(s1, pages, 1, 0);
		v[W_SPARSE][r] = touch(s2, pages, 16, 0);
		t0 = now_ns();
		if (have_pop && madvise(s3, len, MADV_POPULATE_READ) != 0)
			have_pop = 0;
		pop_r[r] = (double)(now_ns() - t0) / 1e3 / (double)pages;
		v[W_SPOP][r] = touch(s3, pages, 1, 0);
		munmap(a, len);
		munmap(b, len);
		munmap(w, len);
		munmap(s1, len);
		munmap(s2, len);
		munmap(s3, len);
	}
	printf("%zu pages, %d rounds; us per page, median (min-max) over rounds\n\n", pages, rounds);
	printf("| way | first touch | the populate call |\n|---|---:|---:|\n");
	for (int k = 0; k < W_N; k++) {
		double *x = v[k], *p = k == W_POP ? pop_w : k == W_SPOP ? pop_r : NULL;

		if ((k == W_POP || k == W_SPOP) && !have_pop) {
			printf("| %s | - | - |\n", way[k]);
			continue;
		}
		qsort(x, (size_t)rounds, sizeof(*x), cmp);
		printf("| %s | %.2f (%.2f-%.2f) |", way[k], x[rounds / 2], x[0], x[rounds - 1]);
		if (p) {
			qsort(p, (size_t)rounds, sizeof(*p), cmp);
			printf(" %.2f (%.2f-%.2f) |\n", p[rounds / 2], p[0], p[rounds - 1]);
		} else {
			printf(" |\n");
		}
	}
	return 0;
}
