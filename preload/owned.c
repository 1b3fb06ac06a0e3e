/* SPDX-License-Identifier: MIT */
/*
 * owned.c - files that the shim and the launcher write in directories that
 * other users may write (issue 23): the verify log, stats records,
 * --stats=FILE.  Linked into both (preload/CMakeLists.txt); raw syscalls
 * only, so that a record can be written from a signal handler.
 *
 * A name in a sticky, world-writable directory (/tmp) may have been made by
 * another user: a symlink to a file of ours (or, for root, anyone's), or a
 * regular file that we would then append to (root ignores its mode).  The
 * kernel's fs.protected_symlinks / fs.protected_regular refuse both, where
 * they are on; these rules hold where they are off:
 *  - a name we chose (the verify log's default) lives in a directory of our
 *    own (preload_private_dir) and is created O_EXCL | O_NOFOLLOW, 0600;
 *  - a name the user gave (RCUWALK_STATS, RCUWALK_VERIFY_LOG, --stats=FILE)
 *    is the user's choice, symlinks included, except what those sysctls
 *    refuse: in a sticky world-writable directory, a symlink owned by
 *    neither us nor the directory's owner is not followed, and an existing
 *    file owned by neither is not written (-EPERM).  New files are 0600.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stats.h"

static int lstat_raw(const char *p, struct stat *st)
{
	return syscall(SYS_newfstatat, AT_FDCWD, p, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

/* Whether uid `u` is foreign to a sticky world-writable `dir` (the parent of
 * path): neither us nor the directory's owner.  0 if the directory is not
 * such a directory or cannot be read. */
static int foreign_in_sticky_parent(const char *path, uid_t u)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat d;
	size_t n;

	if (!slash) {
		dir[0] = '.';
		n = 1;
	} else {
		n = slash == path ? 1 : (size_t)(slash - path);
		if (n >= sizeof(dir))
			return 1; /* cannot tell: refuse */
		memcpy(dir, path, n);
	}
	dir[n] = '\0';
	if (syscall(SYS_newfstatat, AT_FDCWD, dir, &d, 0) != 0)
		return 0;
	return (d.st_mode & S_ISVTX) && (d.st_mode & S_IWOTH) &&
	       u != (uid_t)syscall(SYS_geteuid) && u != d.st_uid;
}

int preload_private_dir(char *out, size_t size)
{
	const char *x = getenv("XDG_RUNTIME_DIR"), *t = getenv("TMPDIR");
	uid_t me = (uid_t)syscall(SYS_geteuid);
	struct stat st;
	int n;

	if (x && x[0] == '/' && strlen(x) < size && lstat_raw(x, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == me && !(st.st_mode & 077)) {
		strcpy(out, x);
		return 0;
	}
	if (!t || t[0] != '/')
		t = "/tmp";
	n = snprintf(out, size, "%s/rcuwalk-%u", t, (unsigned)me);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	if (syscall(SYS_mkdirat, AT_FDCWD, out, 0700) != 0 && errno != EEXIST)
		return -errno;
	if (lstat_raw(out, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != me || (st.st_mode & 07777) != 0700)
		return -EPERM; /* made by another user, or loosened: not ours */
	return 0;
}

int preload_open_append(const char *path, int ours)
{
	struct stat st;
	int fd, fl = O_WRONLY | O_APPEND | O_CLOEXEC;

	if (ours) {
		fd = (int)syscall(SYS_openat, AT_FDCWD, path, fl | O_CREAT | O_EXCL | O_NOFOLLOW,
				  0600);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd : -errno;
		/* Ours from an earlier line: still ours? */
		fd = (int)syscall(SYS_openat, AT_FDCWD, path, fl | O_NOFOLLOW);
		if (fd < 0)
			return -errno;
		if (syscall(SYS_fstat, fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != (uid_t)syscall(SYS_geteuid)) {
			syscall(SYS_close, fd);
			return -EPERM;
		}
		return fd;
	}
	if (lstat_raw(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		if (foreign_in_sticky_parent(path, st.st_uid))
			return -EPERM;
	} else {
		fl |= O_NOFOLLOW; /* none now: none planted between */
	}
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, fl | O_CREAT, 0600);
	if (fd < 0)
		return -errno;
	if (syscall(SYS_fstat, fd, &st) != 0 ||
	    (S_ISREG(st.st_mode) && foreign_in_sticky_parent(path, st.st_uid))) {
		syscall(SYS_close, fd);
		return -EPERM;
	}
	return fd;
}
