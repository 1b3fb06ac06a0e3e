/* SPDX-License-Identifier: MIT */
/*
 * learn.c - what the processes of one program looked up, kept for the
 * session (the learned warm-up: preload/warm_learn.c decides with it).
 *
 * A configure script runs hundreds of processes whose lookups are slow
 * enough to spend the warm-up's time budget and too few to repay the cache's
 * start: GNU hello's ./configure started 219 caches, each after 100-700
 * lookups, for 231 ms of start and fills against 40 ms of lookups answered
 * (doc/benchmarks-by-stop.md, "Stop 45").  Whether a process will make many
 * more lookups is best told by what earlier processes of the same program
 * made, which only the session sees.
 *
 * The store: the file RING_LEARN in the session's directory (0700, the
 * user's own: session.c's checks), LEARN_SLOTS slots of 32 bytes, slot
 * key % LEARN_SLOTS, created by the first process that records (O_CREAT,
 * 0600) and removed with the directory (watcher.c).  A slot holds the key's
 * tag (its upper half, never 0), how many processes recorded (n, saturating),
 * a running average of their lookups and one of whether their caches paid
 * richly (rich, 0 to 256: see inval.h), each record moving them a quarter of
 * the way.
 *
 * Invariants
 * ==========
 *  L1 Raw system calls only (open, pread, pwrite, close): the callers are a
 *     wrapper's warm-up path, possibly in a signal handler, and a destructor.
 *     errno is the caller's again on return.
 *  L2 No lock: a read racing a write may see a torn slot, two writers may
 *     lose one record.  What is read decides only whether a process passes
 *     more of its lookups through before its cache starts, never an answer;
 *     the caller bounds how many (warm_learn.c), so a wrong or scribbled
 *     slot costs time, never exactness.
 *  L3 Without a session, or where the file cannot be opened or read whole
 *     (another user's credentials, a full disk, a file cut short), nothing
 *     is known: inval_learn_get() answers -1 and the caller starts as
 *     without it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dcache.h"
#include "inval.h"
#include "ring.h"
#include "session.h"

#define LEARN_SLOTS 256u
#define LEARN_N_MAX 1000000u
#define LEARN_RICH_ONE 256u

struct learn_slot {
	uint32_t tag; /* key >> 32, 0 replaced by 1; 0 = empty */
	uint32_t n;
	uint64_t looked;
	uint32_t rich; /* 0..LEARN_RICH_ONE: how many recent caches paid richly */
	uint32_t pad;
	uint64_t pad2;
};

static uint32_t learn_tag(uint64_t key)
{
	uint32_t t = (uint32_t)(key >> 32);

	return t ? t : 1;
}

/* The store's fd, opened with flags, or -1. */
static int learn_open(int flags)
{
	const char *dir = session_dir_path();
	char path[PATH_MAX];
	size_t n;

	if (!dir || (n = strlen(dir)) + sizeof("/" RING_LEARN) > sizeof(path))
		return -1;
	memcpy(path, dir, n);
	memcpy(path + n, "/" RING_LEARN, sizeof("/" RING_LEARN));
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
}

static int learn_read(int fd, uint64_t key, struct learn_slot *s)
{
	off_t at = (off_t)((key % LEARN_SLOTS) * sizeof(*s));

	return syscall(SYS_pread64, fd, s, sizeof(*s), at) == (long)sizeof(*s) ? 0 : -1;
}

int inval_learn_get(uint64_t key, uint64_t *looked, uint32_t *n, uint32_t *rich)
{
	int saved = errno, fd, r = -1;
	struct learn_slot s;

	if (!session_wanted() || (fd = learn_open(O_RDONLY)) < 0) {
		errno = saved;
		return -1;
	}
	if (learn_read(fd, key, &s) == 0 && s.tag == learn_tag(key)) {
		*looked = s.looked;
		*n = s.n;
		*rich = s.rich > LEARN_RICH_ONE ? LEARN_RICH_ONE : s.rich;
		r = 0;
	}
	syscall(SYS_close, fd);
	errno = saved;
	return r;
}

void inval_learn_put(uint64_t key, uint64_t looked, int rich)
{
	int saved = errno, fd;
	struct learn_slot s;

	if (!session_wanted() || (fd = learn_open(O_RDWR | O_CREAT)) < 0) {
		errno = saved;
		return;
	}
	if (learn_read(fd, key, &s) != 0 || s.tag != learn_tag(key) || !s.n) {
		memset(&s, 0, sizeof(s));
		s.tag = learn_tag(key);
		s.n = 1;
		s.looked = looked;
		s.rich = rich > 0 ? LEARN_RICH_ONE : 0;
	} else {
		/* a quarter of the way: 2 earlier records weigh 9/16 */
		s.looked = looked >= s.looked ? s.looked + (looked - s.looked) / 4
					       : s.looked - (s.looked - looked) / 4;
		if (s.rich > LEARN_RICH_ONE)
			s.rich = LEARN_RICH_ONE; /* scribbled */
		if (rich >= 0)
			s.rich = (s.rich * 3 + (rich ? LEARN_RICH_ONE : 0)) / 4;
		s.n += s.n < LEARN_N_MAX;
	}
	syscall(SYS_pwrite64, fd, &s, sizeof(s), (off_t)((key % LEARN_SLOTS) * sizeof(s)));
	syscall(SYS_close, fd);
	errno = saved;
}
