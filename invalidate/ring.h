/* SPDX-License-Identifier: MIT */
/*
 * ring.h - the session's event ring (doc/session.md, phase 1).  Private to
 * invalidate/: the layout that watcher.c writes and session.c reads.
 *
 * One memfd (watcher_spawn.c, make_memfd: allocated whole, sealed against
 * shrinking and growing; no file in any directory), mapped shared: a
 * header, then RING_RECORDS fixed-size records.
 * One writer (the watcher); readers map it read-only and never write, so a
 * reader killed at any instruction leaves nothing half-done.
 *  magic  0 (the launcher made the memfd zero-filled) until the watcher has
 *         filled the header, armed its death notice and made its socket;
 *         then stored (release), last, and FUTEX_WAKEd on its low half.
 *         The command runs meanwhile: a process that maps the ring before
 *         waits on that word, boundedly (session.c, wait_published).
 *  tail   records appended so far (64 bit, never wraps); record i lives in
 *         recs[i % RING_RECORDS].  The watcher fills a record, then publishes
 *         it with a release store of tail.
 *  state  the causality word (doc/session.md, "Causality"), also the futex
 *         that waiters sleep on: odd while the watcher is inside a read cycle
 *         (the design's `busy` is state & 1), bumped (seq_cst) before the
 *         cycle's first read() and again after its records are published;
 *         FUTEX_WAKE after the second bump.  A cycle reads at least the
 *         bytes queued when it began (FIONREAD after the first bump), so
 *         every event queued before it began, and no more than it must:
 *         an event source that keeps pace with its reads cannot hold it
 *         open (watcher.c, read_cycle).
 *  ifd    the instance's fd number in the watcher, once its death notice
 *         (alive) is armed; -1 before, or without one.  A process whose
 *         credentials let it (pidfd_getfd: same user, Yama, seccomp) takes
 *         the fd from there instead of asking the answering thread
 *         (session.c, take_fd): no round trip to another thread.
 *  consumed  bytes read from the instance by finished read cycles: stored
 *         (release) after the cycle's generation bumps and records are
 *         published, before state goes even.  A process that asked FIONREAD
 *         (n bytes queued) between two equal even readings of state (c =
 *         consumed between them) knows that every event queued then has been
 *         published once consumed >= c + n (inval_shared.c, listing_caught_up).
 *  poke   a futex word nobody writes (0): after each read cycle the watcher
 *         lets a burst gather for up to RING_BATCH_NS in FUTEX_WAIT on it (the
 *         kernel merges identical unread events: one writer appending to a
 *         log in /tmp queued ~100k IN_MODIFY a second, read one by one); a
 *         process at a sync point FUTEX_WAKEs it (no write needed) to have
 *         its cycle now.  A poke that comes just before the wait is lost: the
 *         process pokes again after each of its waits (1 ms).
 *  exited 1 once the watcher has left for good (a watcher killed by a signal
 *         never sets it: readers also look at its pid).
 *  alive  the watcher's death notice: a robust futex word.  The watcher's
 *         main thread stores its tid | FUTEX_WAITERS in it and registers
 *         robust_next as the one entry of its robust list (set_robust_list),
 *         so that when it dies, however (SIGKILL included), the kernel sets
 *         FUTEX_OWNER_DIED in the word and wakes one waiter.  Readers sleep on
 *         state and alive at once (futex_waitv); the one woken wakes the
 *         others (FUTEX_WAKE on alive) and each gives the session up before
 *         its next answer (inval_reader.c, reader_session).
 *  dir_dev, dir_ino  the session's directory: a process that took the
 *         ring with pidfd_getfd (RCUWALK_SESSION_FDS) checks that it is the
 *         one of the directory it opened (RCUWALK_SESSION), and so of the
 *         socket it may ask later.  Set before magic.
 *  mounts bumped (release) by the watcher whenever its /proc/self/mountinfo
 *         says the mount table changed (the session's mount namespace: an
 *         attach checks it), then FUTEX_WAKE on state (state itself does not
 *         move: that would pass for a read cycle).  Processes compare it at
 *         their timed drains instead of polling a mountinfo fd of their own;
 *         their sync points still poll their own (causality: the watcher may
 *         not have seen a child's mount yet).
 * A reader copies record i, then (acquire fence) reloads tail: if the writer
 * may have reached slot i again (tail - i >= RING_RECORDS) the copy may be
 * torn, and events were lost anyway: IN_Q_OVERFLOW.
 */
#ifndef RCUWALK_RING_H
#define RCUWALK_RING_H

#include <limits.h>
#include <stdint.h>

#define RING_MAGIC 0x31474e49525752ULL /* "RWRING1" */
#define RING_VERSION 6u /* 5: userns_dev, userns_ino; 6: memfds, dir_dev, dir_ino */
#define RING_RECORDS 65536u /* > 4x the kernel's default max_queued_events */
/* 250 us, not the per-process reader's 2 ms (inval_reader.c, READER_BATCH_NS): a
 * session's processes do not read the instance, so clause 4's delay is this
 * pause.  With 2 ms, examples/staleness.sh measured p50 2036 / p99 2190 us
 * in a session (a foreign change nearly always lands in a pause); with
 * 250 us, 303 / 562 us; a 20-TU make -j2 took the same time (0.929x against
 * 0.933x, 9 alternating runs). */
#define RING_BATCH_NS 250000L
#define RING_SOCKET "sock"
#define RING_HOLD "hold" /* --keep: launchers holding the session (watcher.c) */
#define RING_LEARN "learn" /* what programs looked up (learn.c) */

struct ring_rec {
	int32_t wd;
	uint32_t mask, cookie, len; /* len: of name, 0 if none */
	char name[NAME_MAX + 1];
};

struct ring_hdr {
	uint64_t magic;
	uint32_t version, nrec;
	uint32_t uid, pid;            /* the watcher's euid and pid */
	int32_t ifd;                  /* see above */
	uint32_t answers;             /* fds sent by the answering thread (tests) */
	uint64_t mntns_dev, mntns_ino; /* stat of /proc/self/ns/mnt */
	uint64_t root_dev, root_ino;   /* stat of "/" */
	uint64_t userns_dev, userns_ino; /* stat of /proc/self/ns/user (session.c) */
	uint64_t dir_dev, dir_ino;     /* the session's directory (RCUWALK_SESSION) */
	_Alignas(64) uint32_t state;  /* futex; see above */
	uint32_t exited;
	uint64_t tail;
	uint32_t mounts;              /* see above */
	uint64_t consumed;            /* see above */
	_Alignas(64) uint32_t alive;  /* robust futex; see above */
	uint32_t alive_pad;
	uint64_t robust_next;         /* the watcher's robust list entry (its next) */
	_Alignas(64) uint32_t poke;   /* futex; see above */
	_Alignas(64) struct ring_rec recs[];
};

#define RING_SIZE (sizeof(struct ring_hdr) + (uint64_t)RING_RECORDS * sizeof(struct ring_rec))

/* Fences of the ring's protocol.  ThreadSanitizer does not model fences
 * (GCC rejects them under -Werror with -fsanitize=thread): its build, which
 * runs no session test, gets a compiler barrier only (enough on x86-64,
 * where neither loads nor stores are reordered with their own kind). */
#if defined(__SANITIZE_THREAD__)
#define RING_FENCE(order) __atomic_signal_fence(__ATOMIC_SEQ_CST)
#else
#define RING_FENCE(order) __atomic_thread_fence(order)
#endif

#endif /* RCUWALK_RING_H */
