/* SPDX-License-Identifier: MIT */
/*
 * ldlink.c - names that LD_PRELOAD can carry (see ldlink.h for the link
 * directory's invariants).
 *
 * Every step works relative to a directory fd: the link directory is opened
 * once with O_NOFOLLOW, checked with fstat(), and the link is read, made and
 * renamed inside that fd, so a name swapped under us between the check and
 * the use changes nothing we act on.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ldlink.h"

#define LDLINK_MODE 0711

static int fail(char *err, size_t errsize, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errsize, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsize, fmt, ap);
	va_end(ap);
	return -1;
}

/* The link directory, opened and checked (see ldlink.h); made if missing.
 * Returns its fd, or -1 with err set. */
static int open_link_dir(const char *leaf, char *err, size_t errsize)
{
	uid_t me = geteuid();
	struct stat st;
	int base, fd;

	base = open(LDLINK_BASE, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base < 0)
		return fail(err, errsize, "%s: %s", LDLINK_BASE, strerror(errno));
	if (fstat(base, &st) != 0 || (st.st_uid != 0 && st.st_uid != me) ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		close(base);
		return fail(err, errsize, "%s is writable by others without the sticky bit, or owned by another user: no link made there",
			    LDLINK_BASE);
	}
	if (mkdirat(base, leaf, LDLINK_MODE) != 0 && errno != EEXIST) {
		fail(err, errsize, "%s/%s: %s", LDLINK_BASE, leaf, strerror(errno));
		close(base);
		return -1;
	}
	fd = openat(base, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(base);
	if (fd < 0)
		return fail(err, errsize, "%s/%s: %s (not a directory of ours?)", LDLINK_BASE, leaf,
			    strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != me) {
		close(fd);
		return fail(err, errsize, "%s/%s is owned by uid %ld, not by uid %ld: not used",
			    LDLINK_BASE, leaf, (long)st.st_uid, (long)me);
	}
	/* Ours: a umask may have narrowed it, or someone made it wider. */
	if ((st.st_mode & 07777) != LDLINK_MODE && fchmod(fd, LDLINK_MODE) != 0) {
		fail(err, errsize, "chmod %s/%s: %s", LDLINK_BASE, leaf, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Make dirfd/name a symbolic link to target, unless it already is one. */
static int make_link(int dirfd, const char *name, const char *target, char *err, size_t errsize)
{
	char now[4096], tmp[96];
	ssize_t n = readlinkat(dirfd, name, now, sizeof(now));

	if (n >= 0 && (size_t)n == strlen(target) && !memcmp(now, target, (size_t)n))
		return 0;
	/* A new link under a name of this process, renamed over the old one. */
	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	unlinkat(dirfd, tmp, 0);
	if (symlinkat(target, dirfd, tmp) != 0)
		return fail(err, errsize, "symlink %s: %s", tmp, strerror(errno));
	if (renameat(dirfd, tmp, dirfd, name) != 0) {
		int e = errno;

		unlinkat(dirfd, tmp, 0);
		return fail(err, errsize, "rename %s to %s: %s", tmp, name, strerror(e));
	}
	return 0;
}

/* Remove the links of dirfd that can no longer name what they were made
 * for: the target is gone (a prefix removed) or is another directory now
 * (its dev/ino are not those of the link's name).  Nothing can be loaded
 * through such a link; a launcher for the directory, wherever it is now,
 * makes its link again.  Best effort: errors leave a link in place. */
static void prune_links(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		unsigned long long dev, ino;
		char target[4096], end;
		struct stat st;
		ssize_t n;

		if (e->d_name[0] == '.' ||
		    sscanf(e->d_name, "%llx-%llx%c", &dev, &ino, &end) != 2)
			continue;
		n = readlinkat(dirfd, e->d_name, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (stat(target, &st) == 0 ? (unsigned long long)st.st_dev != dev ||
						     (unsigned long long)st.st_ino != ino
					   : errno == ENOENT || errno == ENOTDIR)
			unlinkat(dirfd, e->d_name, 0);
	}
	closedir(d);
}

int ldlink_entry(const char *entry, int make, char *out, size_t outsize, char *err, size_t errsize)
{
	const char *last = NULL, *rest;
	char target[4096], leaf[64], name[64];
	struct stat st;
	int fd, r, n;

	for (const char *p = entry; *p; p++)
		if (*p == ':' || *p == ' ')
			last = p;
	if (!last) {
		if ((size_t)snprintf(out, outsize, "%s", entry) >= outsize)
			return fail(err, errsize, "%s: path too long", entry);
		return 0;
	}
	rest = strchr(last, '/');
	if (entry[0] != '/' || !rest)
		return fail(err, errsize, "%s: %s", entry,
			    entry[0] != '/' ? "not an absolute path"
					    : "a file name with ':' or ' ' cannot go into LD_PRELOAD");
	if ((size_t)(rest - entry) >= sizeof(target))
		return fail(err, errsize, "%s: path too long", entry);
	memcpy(target, entry, (size_t)(rest - entry));
	target[rest - entry] = '\0';
	if (stat(target, &st) != 0)
		return fail(err, errsize, "%s: %s", target, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(err, errsize, "%s: not a directory", target);
	snprintf(leaf, sizeof(leaf), "rcuwalk-links.%ld", (long)geteuid());
	snprintf(name, sizeof(name), "%llx-%llx", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	n = snprintf(out, outsize, "%s/%s/%s%s", LDLINK_BASE, leaf, name, rest);
	if (n < 0 || (size_t)n >= outsize)
		return fail(err, errsize, "%s: path too long", entry);
	if (!make)
		return 0;
	fd = open_link_dir(leaf, err, errsize);
	if (fd < 0)
		return -1;
	r = make_link(fd, name, target, err, errsize);
	if (r == 0)
		prune_links(fd);
	close(fd);
	return r;
}
