/* SPDX-License-Identifier: MIT */
/*
 * watch_limit.h - PRIVATE to invalidate/: the user's inotify watch limit as
 * it applies to the calling process, for the shares taken of it (a process's
 * watch budget, inval.c; a session's file watch numbers, watcher.c).
 *
 * The kernel charges a watch to its user at every level of the user
 * namespace hierarchy (ucounts, Linux 5.11+) and refuses it (ENOSPC) where
 * any level's limit is reached.  Two levels can be read:
 *   /proc/sys/fs/inotify/max_user_watches  the initial namespace's limit,
 *                                          whichever namespace reads it;
 *   /proc/sys/user/max_inotify_watches     the reader's own namespace's
 *                                          (INT_MAX unless set: a sandbox,
 *                                          a container runtime lowers it).
 * A quarter of the first alone is a share of nothing in a namespace whose
 * own limit is lower: every watch the user's other programs there need
 * could be taken.  So the smaller of the two.  Namespaces between the
 * initial one and ours are not visible; their limits still apply (ENOSPC,
 * which every caller takes as "no watch": the kernel answers).
 *
 * Raw system calls only: the shim calls this with its interposed names live.
 */
#ifndef RCUWALK_WATCH_LIMIT_H
#define RCUWALK_WATCH_LIMIT_H

#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A positive number read from the sysctl file `path`, or 0. */
static inline unsigned long inval_read_sysctl_ulong(const char *path)
{
	char buf[32];
	long n = 0;
	long f = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);

	if (f < 0)
		return 0;
	n = syscall(SYS_read, (int)f, buf, sizeof(buf) - 1);
	syscall(SYS_close, (int)f);
	buf[n > 0 ? n : 0] = '\0';
	n = strtol(buf, NULL, 10);
	return n > 0 ? (unsigned long)n : 0;
}

/* The user's watch limit here: the smaller of the initial namespace's and
 * this user namespace's, 0 where neither can be read (no /proc).  Any
 * thread, no lock; a few system calls, so callers keep the result. */
static inline unsigned long inval_watch_limit(void)
{
	unsigned long init = inval_read_sysctl_ulong("/proc/sys/fs/inotify/max_user_watches");
	unsigned long own = inval_read_sysctl_ulong("/proc/sys/user/max_inotify_watches");

	if (!init || (own && own < init))
		return own;
	return init;
}

#endif
