/* SPDX-License-Identifier: MIT */
/*
 * watcher_int.h - what the watcher's two files share (private to
 * invalidate/'s rcuwalk_watcher library): the watcher's state, and the
 * sizes its memfds are allocated by.  watcher_spawn.c is the launcher's side
 * (it makes what can refuse a session and starts the watcher's image);
 * watcher.c is the watcher's (the instance, the ring, the loop).  A struct
 * watcher is the launcher's (inval_watcher_spawn) or the watcher image's
 * (inval_watcher_image), never shared between processes or threads but the
 * watcher's own (its threads' fields: watcher.c, at each thread).
 */
#ifndef RCUWALK_WATCHER_INT_H
#define RCUWALK_WATCHER_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

struct ring_hdr;

#define MAX_HOLDERS 64

struct watcher {
	char dir[PATH_MAX];
	int ifd, lfd, pidfd;
	int dfd;      /* the directory, flock()ed for the watcher's life (reap_dead_sessions) */
	int rfd, afd; /* the ring's and the arena's memfds (make_memfd); -1: none */
	uint64_t ring_alloc; /* bytes of the ring allocated so far (ring_room) */
	char note[160]; /* what went wrong or was left out, for the launcher's --log */
	int mfd; /* /proc/self/mountinfo, polled for POLLPRI (ring.h, mounts) */
	struct ring_hdr *ring;
	void *arena; /* shared entries (cache/dcache_arena.c); NULL: none */
	/* --keep (watcher.c, "Keeping a session"): the hold socket, the launchers
	 * holding the session (pidfds), how long it outlives the last one,
	 * and the link that finds it ("" if none was published). */
	int hfd;
	int holders[MAX_HOLDERS], nholders;
	long long keep_ns;
	char link[PATH_MAX];
};

/*
 * How much is allocated up front, and then at a time.  All of it at once
 * (17.8 MiB of ring, 32 MiB of arena) made `rcuwalk -- true` 8.7 ms
 * against 2.5 ms (hyperfine, 40 runs): zeroing 50 MiB of pages.  With
 * these, 2.96-3.18 ms against 2.55-2.74 ms (doc/session.md).  The ring
 * grows ahead of the watcher's writes (it alone writes it, and readers read
 * only published records); the arena ahead of the processes' takes
 * (dcache_arena.c, A6).
 */
#define RING_FIRST ((uint64_t)64 << 10)
#define RING_CHUNK ((uint64_t)1 << 20)
#define ARENA_FIRST ((uint64_t)640 << 10) /* the header (576 KiB) and a little */
#define ARENA_CHUNK ((uint64_t)2 << 20)

/* The private directory of the kept sessions' links, made if absent (0700,
 * ours, no symlink), and the link's name in it for this mount namespace,
 * root and user namespace, into out.  0 or -errno.  Any thread. */
int inval_keep_link_path(char *out, size_t size);

#endif
