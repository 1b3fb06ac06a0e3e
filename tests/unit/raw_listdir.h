/* SPDX-License-Identifier: MIT */
/*
 * raw_listdir.h - a dcache_ops.kernel_listdir for the unit tests: getdents64
 * through raw syscalls (the shim's own op lives in preload/config.c, which
 * the unit tests do not link).
 */
#ifndef RCUWALK_TESTS_RAW_LISTDIR_H
#define RCUWALK_TESTS_RAW_LISTDIR_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline long raw_listdir(const char *path, size_t max,
			       int (*add)(void *arg, const char *name, size_t len), void *arg)
{
	static __thread char buf[16384];
	long n, count = 0, r = 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (r == 0 && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n && r == 0;) {
			/* struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen,
			 * u8 d_type, char d_name[] */
			const char *nm = buf + off + 19;
			unsigned short reclen;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
				continue;
			r = (size_t)++count > max ? -E2BIG : add(arg, nm, strlen(nm));
		}
	}
	syscall(SYS_close, fd);
	return r < 0 ? r : count;
}

/* The same with getdents64's d_type for DT_DIR and DT_REG (the unit tests'
 * scratch trees hold no mount points; the shim's op checks the mount table). */
static inline long raw_listdir_typed(const char *path, size_t max,
				     int (*add)(void *arg, const char *name, size_t len,
						unsigned char type),
				     void *arg)
{
	static __thread char buf[16384];
	long n, count = 0, r = 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (r == 0 && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n && r == 0;) {
			const char *nm = buf + off + 19;
			unsigned char type = (unsigned char)buf[off + 18];
			unsigned short reclen;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
				continue;
			if (type != 4 /* DT_DIR */ && type != 8 /* DT_REG */)
				type = 0; /* DT_UNKNOWN */
			r = (size_t)++count > max ? -E2BIG : add(arg, nm, strlen(nm), type);
		}
	}
	syscall(SYS_close, fd);
	return r < 0 ? r : count;
}

#endif
