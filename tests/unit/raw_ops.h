/* SPDX-License-Identifier: MIT */
/*
 * raw_ops.h - dcache_ops kernel callbacks for the unit tests and the fuzzer:
 * raw system calls, as preload/config.c makes them (which these programs do
 * not link).  Each returns 0 / a count, or -errno.  And raw_rm_tree(), which
 * removes a scratch tree.
 */
#ifndef RCUWALK_TESTS_RAW_OPS_H
#define RCUWALK_TESTS_RAW_OPS_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

struct statx;

static inline int raw_lstat(const char *path, struct stat *st)
{
	return syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static inline long raw_readlink(const char *path, char *buf, size_t size)
{
	long n = syscall(SYS_readlinkat, AT_FDCWD, path, buf, size);

	return n >= 0 ? n : -errno;
}

static inline int raw_statx(const char *path, unsigned int mask, struct statx *out)
{
	return syscall(SYS_statx, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, mask, out) == 0 ? 0 : -errno;
}

static inline int raw_access(const char *path, int mode, int flags)
{
	return syscall(SYS_faccessat2, AT_FDCWD, path, mode, flags) == 0 ? 0 : -errno;
}

static inline int raw_getcwd(char *buf, size_t size)
{
	return syscall(SYS_getcwd, buf, size) > 0 ? 0 : -errno;
}

/* Every filesystem is local and cacheable (the tests' scratch trees). */
static inline int raw_fs_local(const char *path, dev_t dev)
{
	(void)path;
	(void)dev;
	return 1;
}

/* The kernel ops every user of this header gives struct dcache_ops, as
 * designated initialisers; each adds what it chooses (kernel_statx, the
 * listings, fs_cacheable). */
#define RAW_KERNEL_OPS                                                       \
	.kernel_lstat = raw_lstat, .kernel_readlink = raw_readlink,         \
	.kernel_access = raw_access, .kernel_getcwd = raw_getcwd

static inline int raw_rm_entry(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	syscall(SYS_unlinkat, AT_FDCWD, p, type == FTW_DP ? AT_REMOVEDIR : 0);
	return 0;
}

/* Remove dir and everything below it (raw unlinkat: no cache in the way). */
static inline void raw_rm_tree(const char *dir)
{
	nftw(dir, raw_rm_entry, 64, FTW_DEPTH | FTW_PHYS);
}

#endif /* RCUWALK_TESTS_RAW_OPS_H */
