/* SPDX-License-Identifier: MIT */
/*
 * shim_process.c - the wrappers of librcuwalk.so that change files, guard
 * the shim's own fds, and follow the process: chdir, credentials,
 * namespaces, reaping a child, fork (the lookup wrappers are in shim.c;
 * what both use is in shim.h).
 *
 * Invariants:
 *  - A mutating wrapper makes the real call, then notes the change
 *    (note_change): the kernel queued the event inside the syscall, and the
 *    next lookup of any thread drains the queue first, so the process sees
 *    its own change as soon as the call has returned.  Reaping a child
 *    (wait*, system, pclose) is noted the same way.
 *  - The shim's own fds are hidden: a call naming one answers as for a
 *    closed fd; dup2/dup3 onto one first make invalidate/ give it up
 *    (inval.h); an allocation they are in the way of gives them all back
 *    ("The shim's own fds" below).
 *  - chdir/credential/namespace changes only bump an epoch
 *    (async-signal-safe); the next lookup acts on it.
 *  - fork() takes liburcu's, invalidate/'s and cache/'s locks in that order
 *    (see fork() below), except during the warm-up, when nothing of the
 *    cache exists (preload_warm_forks).
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <urcu-bp.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#if __GLIBC_PREREQ(2, 32)
#include <sys/single_threaded.h>
#endif
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>
#include <linux/fs.h>
#include <linux/fsverity.h>
#include <linux/nsfs.h>
#include <sys/vfs.h>

#include "dcache.h"
#include "inval.h"
#include "preload.h"
#include "shim.h"
#include "stats.h"

/* ---------------------------------------------------------------------- */
/* Mutators: the real call, then note the change (errno untouched). */

#define MUTATOR(ret, name, params, ...)          \
	REAL_DECL(name);                          \
	EXPORT ret name params                    \
	{                                         \
		ret r_ = CALL_REAL(name, __VA_ARGS__); \
		note_change();                    \
		return r_;                        \
	}

/* H: an fd argument as the kernel would see it without the shim's fds. */
#define H(fd) preload_hide_fd(fd)
MUTATOR(int, unlink, (const char *p), p)
MUTATOR(int, unlinkat, (int fd, const char *p, int fl), H(fd), p, fl)
MUTATOR(int, rename, (const char *a, const char *b), a, b)
MUTATOR(int, renameat, (int fa, const char *a, int fb, const char *b), H(fa), a, H(fb), b)
MUTATOR(int, renameat2, (int fa, const char *a, int fb, const char *b, unsigned int fl), H(fa), a, H(fb), b, fl)
MUTATOR(int, mkdir, (const char *p, mode_t m), p, m)
MUTATOR(int, mkdirat, (int fd, const char *p, mode_t m), H(fd), p, m)
MUTATOR(int, rmdir, (const char *p), p)
MUTATOR(int, symlink, (const char *t, const char *p), t, p)
MUTATOR(int, symlinkat, (const char *t, int fd, const char *p), t, H(fd), p)
/* A new name for an inode changes st_nlink/st_ctime of its other names, but
 * the event reaches only the new name's directory: after a successful link,
 * ask the kernel which inode the new name is and forget every cached name of
 * it.  (Another process linking into a directory this process does not watch
 * is a documented limit of the contract.) */
static void forget_linked_inode(int r, int newdirfd, const char *newpath)
{
	struct stat st;

	if (r != 0 || !preload_cache_usable())
		return;
	if (syscall(SYS_newfstatat, newdirfd, newpath, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return;
	preload_in_shim++;
	dcache_forget_inode(st.st_dev, st.st_ino);
	preload_in_shim--;
}
REAL_DECL(link);
EXPORT int link(const char *a, const char *b)
{
	int r = CALL_REAL(link, a, b), saved = errno;

	note_change();
	forget_linked_inode(r, AT_FDCWD, b);
	errno = saved;
	return r;
}
REAL_DECL(linkat);
EXPORT int linkat(int fa, const char *a, int fb, const char *b, int fl)
{
	int r = CALL_REAL(linkat, H(fa), a, H(fb), b, fl), saved = errno;

	note_change();
	forget_linked_inode(r, fb, b);
	errno = saved;
	return r;
}
MUTATOR(int, mknod, (const char *p, mode_t m, dev_t d), p, m, d)
MUTATOR(int, mknodat, (int fd, const char *p, mode_t m, dev_t d), H(fd), p, m, d)
MUTATOR(int, chmod, (const char *p, mode_t m), p, m)
MUTATOR(int, fchmodat, (int fd, const char *p, mode_t m, int fl), H(fd), p, m, fl)
MUTATOR(int, fchmod, (int fd, mode_t m), H(fd), m)
MUTATOR(int, chown, (const char *p, uid_t u, gid_t g), p, u, g)
MUTATOR(int, lchown, (const char *p, uid_t u, gid_t g), p, u, g)
MUTATOR(int, fchownat, (int fd, const char *p, uid_t u, gid_t g, int fl), H(fd), p, u, g, fl)
MUTATOR(int, fchown, (int fd, uid_t u, gid_t g), H(fd), u, g)
MUTATOR(int, truncate, (const char *p, off_t l), p, l)
MUTATOR(int, truncate64, (const char *p, off64_t l), p, l)
MUTATOR(int, ftruncate, (int fd, off_t l), H(fd), l)
MUTATOR(int, ftruncate64, (int fd, off64_t l), H(fd), l)
MUTATOR(int, utime, (const char *p, const struct utimbuf *t), p, t)
/* Extended attributes: the kernel changes st_ctime and sends IN_ATTRIB. */
MUTATOR(int, setxattr, (const char *p, const char *n, const void *v, size_t z, int f), p, n, v, z, f)
MUTATOR(int, lsetxattr, (const char *p, const char *n, const void *v, size_t z, int f), p, n, v, z, f)
MUTATOR(int, fsetxattr, (int fd, const char *n, const void *v, size_t z, int f), H(fd), n, v, z, f)
MUTATOR(int, removexattr, (const char *p, const char *n), p, n)
MUTATOR(int, lremovexattr, (const char *p, const char *n), p, n)
MUTATOR(int, fremovexattr, (int fd, const char *n), H(fd), n)
MUTATOR(int, utimes, (const char *p, const struct timeval t[2]), p, t)
MUTATOR(int, lutimes, (const char *p, const struct timeval t[2]), p, t)
MUTATOR(int, futimesat, (int fd, const char *p, const struct timeval t[2]), H(fd), p, t)
MUTATOR(int, utimensat, (int fd, const char *p, const struct timespec t[2], int fl), H(fd), p, t, fl)
MUTATOR(int, futimens, (int fd, const struct timespec t[2]), H(fd), t)
MUTATOR(int, fallocate, (int fd, int mode, off_t o, off_t l), H(fd), mode, o, l)
MUTATOR(int, fallocate64, (int fd, int mode, off64_t o, off64_t l), H(fd), mode, o, l)
MUTATOR(int, posix_fallocate, (int fd, off_t o, off_t l), H(fd), o, l)
MUTATOR(int, posix_fallocate64, (int fd, off64_t o, off64_t l), H(fd), o, l)
MUTATOR(int, remove, (const char *p), p)
MUTATOR(int, mkfifo, (const char *p, mode_t m), p, m)
MUTATOR(int, mkfifoat, (int fd, const char *p, mode_t m), H(fd), p, m)
MUTATOR(int, mkstemp, (char *t), t)
MUTATOR(int, mkstemp64, (char *t), t)
MUTATOR(int, mkostemp, (char *t, int fl), t, fl)
MUTATOR(int, mkostemp64, (char *t, int fl), t, fl)
MUTATOR(int, mkstemps, (char *t, int n), t, n)
MUTATOR(int, mkostemps, (char *t, int n, int fl), t, n, fl)
MUTATOR(char *, mkdtemp, (char *t), t)
MUTATOR(int, system, (const char *cmd), cmd)
MUTATOR(int, pclose, (FILE *f), f)

/*
 * Inode-flag and attribute ioctls.  FS_IOC_SETFLAGS (chattr), FS_IOC_FSSETXATTR
 * (xfs_io chattr, project ids), FS_IOC_SETVERSION, fscrypt's policy and
 * fs-verity's enable change stx_attributes and st_ctime with no inotify
 * event; reflinks and dedupe change the destination's blocks and times.  After
 * a successful one this process forgets every cached name of the inode (as
 * after link(): dcache_forget_inode) and notes the change, so its next lookup
 * is the kernel's (coherence contract, clause 1).  The same ioctl made by
 * another process is not seen (doc/coherence.md, known limits).
 */
static int changes_inode(unsigned long req)
{
	switch (req) {
	case FS_IOC_SETFLAGS:
	case FS_IOC32_SETFLAGS:
	case FS_IOC_FSSETXATTR:
	case FS_IOC_SETVERSION:
	case FS_IOC32_SETVERSION:
	case FS_IOC_SET_ENCRYPTION_POLICY:
	case FS_IOC_ENABLE_VERITY:
	case FICLONE:
	case FICLONERANGE:
	case FIDEDUPERANGE:
		return 1;
	}
	return 0;
}

static void forget_fd_inode(int fd)
{
	struct stat st;
	int saved = errno;

	note_change();
	inval_shared_forget(); /* other processes' shared answers, a directory's included */
	if (preload_cache_usable() && syscall(SYS_fstat, fd, &st) == 0) {
		preload_in_shim++;
		dcache_forget_inode(st.st_dev, st.st_ino);
		preload_in_shim--;
	}
	errno = saved;
}

/* glibc declares the request unsigned long and reads the third argument as a
 * pointer whether or not the caller passed one; so do we. */
REAL_DECL(ioctl);
EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;
	int r;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	r = CALL_REAL(ioctl, H(fd), req, arg);
	if (__builtin_expect(changes_inode(req), 0) && r >= 0)
		forget_fd_inode(fd);
	return r;
}

/*
 * The shim's own fds (invalidate/'s inotify, io_uring and mountinfo numbers,
 * inval_owns_fd) are left out of a listing of this process's fd table
 * through readdir: /proc/self/fd, /dev/fd, /proc/<pid>/fd,
 * /proc/<pid>/task/<tid>/fd and their fdinfo twins.  A program that lists
 * them (to close "everything", to look for leaks) sees only its own.  Raw
 * getdents64, scandir() and fts (glibc-internal readdir) still show them;
 * so do stat and readlink of /proc/self/fd/N.
 */

/* Is `dfd` this process's fd or fdinfo directory?  Asked only for a listing
 * that holds one of our numbers; errno kept. */
static int own_fd_dir(int dfd)
{
	char link[64], target[PATH_MAX];
	struct statfs sfs;
	long n, num[2] = { -1, -1 };
	int saved = errno, k = 0, ok = 0;
	char *end, *p;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", dfd);
	n = syscall(SYS_readlinkat, AT_FDCWD, link, target, sizeof(target) - 1);
	if (n <= 0 || syscall(SYS_fstatfs, dfd, &sfs) != 0 || sfs.f_type != 0x9fa0 /* PROC_SUPER_MAGIC */)
		goto out;
	target[n] = '\0';
	end = strrchr(target, '/');
	if (!end || (strcmp(end, "/fd") != 0 && strcmp(end, "/fdinfo") != 0))
		goto out;
	/* .../<pid>/fd, .../<pid>/task/<tid>/fd or .../<tid>/fd */
	while (k < 2 && end > target) {
		*end = '\0';
		p = strrchr(target, '/');
		if (!p)
			goto out;
		if (k == 1 && strcmp(p, "/task") == 0) {
			*p = '\0';
			p = strrchr(target, '/');
			if (!p)
				goto out;
			num[1] = strtol(p + 1, NULL, 10);
			break;
		}
		if (p[1] < '0' || p[1] > '9')
			break;
		num[k++] = strtol(p + 1, NULL, 10);
		end = p;
	}
	if (num[1] >= 0) {
		ok = num[1] == getpid();
	} else if (num[0] >= 0) {
		snprintf(link, sizeof(link), "/proc/self/task/%ld", num[0]);
		ok = num[0] == getpid() || syscall(SYS_faccessat, AT_FDCWD, link, F_OK) == 0;
	}
out:
	errno = saved;
	return ok;
}

/* An entry of ours in this process's fd directory? */
static int hidden_entry(DIR *d, const char *name)
{
	int fd = 0;

	for (const char *c = name; *c; c++) {
		if (*c < '0' || *c > '9' || fd > 10000000)
			return 0;
		fd = fd * 10 + (*c - '0');
	}
	return inval_owns_fd(fd) && own_fd_dir(dirfd(d));
}

#define DIGIT(c) ((unsigned char)((c) - '0') <= 9)
REAL_DECL(readdir);
REAL_DECL(readdir64);
EXPORT struct dirent *readdir(DIR *d)
{
	struct dirent *e;

	do
		e = CALL_REAL(readdir, d);
	while (e && __builtin_expect(DIGIT(e->d_name[0]), 0) && hidden_entry(d, e->d_name));
	return e;
}
EXPORT struct dirent64 *readdir64(DIR *d)
{
	struct dirent64 *e;

	do
		e = CALL_REAL(readdir64, d);
	while (e && __builtin_expect(DIGIT(e->d_name[0]), 0) && hidden_entry(d, e->d_name));
	return e;
}
REAL_DECL(readdir_r);
REAL_DECL(readdir64_r);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
EXPORT int readdir_r(DIR *d, struct dirent *entry, struct dirent **result)
{
	int r;

	do
		r = CALL_REAL(readdir_r, d, entry, result);
	while (r == 0 && *result && DIGIT((*result)->d_name[0]) && hidden_entry(d, (*result)->d_name));
	return r;
}
EXPORT int readdir64_r(DIR *d, struct dirent64 *entry, struct dirent64 **result)
{
	int r;

	do
		r = CALL_REAL(readdir64_r, d, entry, result);
	while (r == 0 && *result && DIGIT((*result)->d_name[0]) && hidden_entry(d, (*result)->d_name));
	return r;
}
#pragma GCC diagnostic pop

/* Writes through an fd this process opened for writing change a file's
 * size and mtime: note them (IN_MODIFY is queued inside write()).  In
 * DCACHE_FORK_TEXT: a shell's child for `x=$(echo a)` writes before it
 * exits (preload_resolve_for_children). */
#define FD_WRITER(ret, name, params, fdarg, ...) \
	REAL_DECL(name);                          \
	EXPORT DCACHE_FORK_TEXT ret name params   \
	{                                         \
		ret r_;                           \
		fd = H(fd);                       \
		r_ = CALL_REAL(name, __VA_ARGS__); \
		if (r_ > 0 && fd_writable(fdarg)) \
			note_change();            \
		return r_;                        \
	}

FD_WRITER(ssize_t, write, (int fd, const void *b, size_t n), fd, fd, b, n)
FD_WRITER(ssize_t, pwrite, (int fd, const void *b, size_t n, off_t o), fd, fd, b, n, o)
FD_WRITER(ssize_t, pwrite64, (int fd, const void *b, size_t n, off64_t o), fd, fd, b, n, o)
FD_WRITER(ssize_t, writev, (int fd, const struct iovec *v, int n), fd, fd, v, n)
FD_WRITER(ssize_t, pwritev, (int fd, const struct iovec *v, int n, off_t o), fd, fd, v, n, o)

/* stdio reaches the kernel through glibc-internal open/write/close: a stream
 * opened for writing notes a change when opened, flushed and closed (data
 * still in the stdio buffer has not reached the kernel, so the kernel's
 * answer is the cache's).  Writes that stdio flushes by itself when its
 * buffer fills are seen within the inotify thread's latency. */
static int stdio_mode_writes(const char *mode)
{
	/* by hand: strpbrk's page of libc was one more page fault */
	if (bad_ptr(mode))
		return 0;
	for (; *mode; mode++)
		if (*mode == 'w' || *mode == 'a' || *mode == '+')
			return 1;
	return 0;
}
/* `retry`: fopen may be made again after an EMFILE that the shim's fds
 * caused; freopen may not (its failure has closed the stream). */
#define STDIO_OPEN(name, params, retry, mode, ...)           \
	REAL_DECL(name);                                      \
	WARM_EXPORT FILE *name params                         \
	{                                                     \
		FILE *file_ = CALL_REAL(name, __VA_ARGS__);     \
		if (preload_fd_met_shim(file_ ? fileno(file_) : -1) && \
		    (retry || file_) &&                       \
		    preload_fds_in_the_way(file_ ? fileno(file_) : -1, 0)) \
			file_ = CALL_REAL(name, __VA_ARGS__); \
		if (stdio_mode_writes(mode)) {                \
			int saved_ = errno;                   \
			note_change();                        \
			if (file_)                            \
				fd_set_writable(fileno(file_), 1); \
			errno = saved_;                       \
		}                                             \
		return file_;                                 \
	}
/* fileno, bound at load (a GOT slot, not a lazy PLT one; x86's noplt): a
 * shell's fork() child flushes stdout before its exec (fflush below), and
 * each child bound fileno anew (ld.so's look-up through the program's and
 * every library's symbols, ~8 page faults), to throw it away at exec.  One
 * symbol look-up at load instead, in every process. */
#if defined(__has_attribute)
#if __has_attribute(noplt) /* GCC on x86; clang has no per-function noplt */
extern int fileno(FILE *f) __attribute__((noplt));
#endif
#endif

STDIO_OPEN(fopen, (const char *p, const char *m), 1, m, p, m)
STDIO_OPEN(fopen64, (const char *p, const char *m), 1, m, p, m)
STDIO_OPEN(freopen, (const char *p, const char *m, FILE *f), 0, m, p, m, f)
STDIO_OPEN(freopen64, (const char *p, const char *m, FILE *f), 0, m, p, m, f)

REAL_DECL(fflush);
WARM_EXPORT int fflush(FILE *f)
{
	int r = CALL_REAL(fflush, f);

	if (!f || fd_writable(fileno(f)))
		note_change();
	return r;
}
REAL_DECL(fclose);
WARM_EXPORT int fclose(FILE *f)
{
	int fd = f ? fileno(f) : -1, w = fd >= 0 && fd_writable(fd);
	int r = CALL_REAL(fclose, f);

	if (w) {
		note_change();
		fd_set_writable(fd, 0);
	}
	return r;
}

/*
 * The shim's own fds: invalidate/'s inotify, io_uring and mountinfo numbers
 * (inval.h, inval_hides_fd).  The program must see exactly the fds it
 * opened and reach exactly its own RLIMIT_NOFILE (doc/design.md, "The
 * shim's own fds"):
 *  - every wrapper that takes an fd passes it through preload_hide_fd():
 *    one of ours becomes -1, which the kernel answers as a closed number
 *    (fstat, fstatat/statx with AT_EMPTY_PATH or a relative path, fcntl,
 *    ioctl, lseek, write, the *at mutators, fchdir, dup's old fd); close()
 *    of one is EBADF and closes nothing; close_range() and closefrom()
 *    close the program's numbers around ours;
 *  - dup2/dup3 onto one of ours give the program that number: invalidate/
 *    gives the instance up first (inval_fd_closing), then the program's
 *    call does what the kernel does; a new instance starts later;
 *  - the calls that allocate the lowest free number (the open family,
 *    opendir, fopen, dup, fcntl F_DUPFD, pipe, socket, accept) go through
 *    PRELOAD_FD_ALLOC: an EMFILE or a number above one of ours gives all of
 *    ours back (inval_give_fds_back: no instance again in this process
 *    image, lookups pass through) and, for EMFILE, makes the call again.
 *    Our numbers sit at the top of the table (inval_fds.c, move_high), so that
 *    happens only when the program's table is full.
 * Not covered: raw syscalls, and calls the shim does not wrap (read,
 * poll, mmap, epoll_ctl, sendmsg's SCM_RIGHTS, eventfd, memfd_create...).
 */
int preload_fds_in_the_way(int r, int lo)
{
	int saved = errno, nowait = preload_in_shim != 0, again = 0;

	if (r < 0 ? saved != EMFILE : !inval_fd_below(lo, r))
		return 0;
	preload_in_shim++; /* the give-up's own calls pass through */
	if (inval_give_fds_back(nowait))
		again = r < 0;
	preload_in_shim--;
	errno = saved;
	return again;
}

/* dup2/dup3 onto one of ours: invalidate/ gives the number up first
 * (inval.h), then the host's call proceeds and does to the number exactly
 * what the kernel does.  From a signal handler that interrupted this thread
 * inside the shim nothing may wait (nowait). */
static void give_fd_up(int fd)
{
	int nowait = preload_in_shim != 0;

	preload_in_shim++; /* a handler that interrupts the give-up must not wait either */
	inval_fd_closing(fd, nowait);
	preload_in_shim--;
}

/* The program's fds in [lo, hi] are closed: forget which were writable. */
static void range_closing(unsigned int lo, unsigned int hi)
{
	for (unsigned int i = lo; i <= hi && i < FD_BITS; i++) {
		if (i % (8 * sizeof(unsigned long)) == 0 && hi - i >= 8 * sizeof(unsigned long) - 1) {
			__atomic_store_n(&FD_WORD(i), 0, __ATOMIC_RELAXED);
			i += 8 * sizeof(unsigned long) - 1;
			continue;
		}
		fd_set_writable((int)i, 0);
	}
}

static void fd_table_unshared(void);

/* dup2/dup3 close `fd2` only if the call can succeed: `fd` must be open
 * (a raw fcntl: ours hides the shim's numbers, and fd is already hidden). */
static inline int dup_would_close(int fd, int fd2)
{
	return fd != fd2 && inval_owns_fd(fd2) && syscall(SYS_fcntl, fd, F_GETFD) >= 0;
}

REAL_DECL(close);
/* close, dup, dup2, dup3 and fcntl: DCACHE_FORK_TEXT (cache/dcache.h): a
 * shell's child makes its redirections with them before its exec. */
EXPORT DCACHE_FORK_TEXT int close(int fd)
{
	if (inval_hides_fd(fd)) {
		errno = EBADF; /* glibc's close(-1) answer, without a syscall */
		return -1;
	}
	fd_set_writable(fd, 0);
	return CALL_REAL(close, fd);
}

#if __GLIBC_PREREQ(2, 34) /* close_range and closefrom appeared in 2.34 */
REAL_DECL(close_range);
REAL_DECL(closefrom);

/* close_range(lo, hi, flags) but over the shim's numbers, which stay: one
 * real call per run of the program's numbers.  0 or the first failure.
 * `last` (closefrom): the run above ours goes to the real closefrom. */
static int close_around_ours(unsigned int lo, unsigned int hi, int flags, int last)
{
	int fds[8], n = inval_own_fds(fds, 8), called = 0, r;
	unsigned int from = lo;

	for (int i = 0; i < n; i++) {
		unsigned int f = (unsigned int)fds[i];

		if (f < from || f > hi)
			continue;
		if (f > from) {
			r = CALL_REAL(close_range, from, f - 1, flags);
			if (r != 0)
				return r;
			called = 1;
		}
		from = f + 1;
	}
	if (last) {
		CALL_REAL_VOID(closefrom, (int)from);
		return 0;
	}
	if (from <= hi && from != 0)
		return CALL_REAL(close_range, from, hi, flags);
	/* Nothing of the program's in the range: the kernel would close
	 * nothing, but would unshare the table (fd ~0U is never open). */
	if (!called && (flags & (int)CLOSE_RANGE_UNSHARE))
		return CALL_REAL(close_range, ~0U, ~0U, flags);
	return 0;
}

EXPORT int close_range(unsigned int fd, unsigned int max_fd, int flags)
{
	int good = !(flags & ~(int)(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) && fd <= max_fd;

	if ((flags & (int)CLOSE_RANGE_UNSHARE) && good)
		fd_table_unshared();
	/* CLOSE_RANGE_CLOEXEC only marks (ours are close-on-exec already);
	 * bad arguments close nothing (the kernel's EINVAL). */
	if (!good || (flags & (int)CLOSE_RANGE_CLOEXEC) ||
	    !__builtin_expect(inval_fd_in_range(fd, max_fd) >= 0, 0))
		return CALL_REAL(close_range, fd, max_fd, flags);
	range_closing(fd, max_fd);
	return close_around_ours(fd, max_fd, flags, 0);
}

EXPORT void closefrom(int lowfd)
{
	if (lowfd >= 0) {
		range_closing((unsigned int)lowfd, ~0U);
		if (__builtin_expect(inval_fd_in_range((unsigned int)lowfd, ~0U) >= 0, 0)) {
			(void)close_around_ours((unsigned int)lowfd, ~0U, 0, 1);
			return;
		}
	}
	CALL_REAL_VOID(closefrom, lowfd);
}
#endif

REAL_DECL(dup);
EXPORT DCACHE_FORK_TEXT int dup(int fd)
{
	int r;

	fd = preload_hide_fd(fd);
	r = PRELOAD_FD_ALLOC(CALL_REAL(dup, fd), 0);
	if (r >= 0)
		fd_set_writable(r, fd_writable(fd));
	return r;
}
REAL_DECL(dup2);
EXPORT DCACHE_FORK_TEXT int dup2(int fd, int fd2)
{
	int r;

	fd = preload_hide_fd(fd); /* dup2(ours, ours) too: EBADF */
	if (__builtin_expect(dup_would_close(fd, fd2), 0))
		give_fd_up(fd2);
	r = CALL_REAL(dup2, fd, fd2);

	if (r >= 0 && r != fd)
		fd_set_writable(r, fd_writable(fd));
	return r;
}
REAL_DECL(dup3);
EXPORT DCACHE_FORK_TEXT int dup3(int fd, int fd2, int fl)
{
	int r;

	if (fd != fd2) /* dup3(x, x) is the kernel's EINVAL, open or not */
		fd = preload_hide_fd(fd);
	if (__builtin_expect(!(fl & ~O_CLOEXEC) && dup_would_close(fd, fd2), 0))
		give_fd_up(fd2);
	r = CALL_REAL(dup3, fd, fd2, fl);

	if (r >= 0)
		fd_set_writable(r, fd_writable(fd));
	return r;
}

/* fcntl reads its third argument as glibc does (one pointer-sized word,
 * whatever the command).  F_DUPFD answers the lowest free number >= arg. */
REAL_DECL(fcntl);
REAL_DECL(fcntl64);
#define FCNTL_WRAPPER(name)                                                              \
	EXPORT DCACHE_FORK_TEXT int name(int fd, int cmd, ...)                           \
	{                                                                                \
		va_list ap;                                                              \
		void *arg;                                                               \
                                                                                         \
		va_start(ap, cmd);                                                       \
		arg = va_arg(ap, void *);                                                \
		va_end(ap);                                                              \
		fd = preload_hide_fd(fd);                                                \
		if (__builtin_expect(cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC, 0))       \
			return PRELOAD_FD_ALLOC(CALL_REAL(name, fd, cmd, arg), (int)(intptr_t)arg); \
		return CALL_REAL(name, fd, cmd, arg);                                    \
	}
FCNTL_WRAPPER(fcntl)
FCNTL_WRAPPER(fcntl64)

/* fstat and lseek: glibc 2.33+ exports fstat; older binaries call
 * __fxstat (STAT_VER as in shim.c: the next definition answers others). */
int __fxstat(int ver, int fd, struct stat *buf);
int __fxstat64(int ver, int fd, struct stat64 *buf);
REAL_DECL(fstat);
REAL_DECL(fstat64);
REAL_DECL(__fxstat);
REAL_DECL(__fxstat64);
REAL_DECL(lseek);
REAL_DECL(lseek64);
WARM_EXPORT int fstat(int fd, struct stat *buf) { return CALL_REAL(fstat, H(fd), buf); }
WARM_EXPORT int fstat64(int fd, struct stat64 *buf) { return CALL_REAL(fstat64, H(fd), buf); }
WARM_EXPORT int __fxstat(int ver, int fd, struct stat *buf) { return CALL_REAL(__fxstat, ver, H(fd), buf); }
WARM_EXPORT int __fxstat64(int ver, int fd, struct stat64 *buf)
{
	return CALL_REAL(__fxstat64, ver, H(fd), buf);
}
WARM_EXPORT off_t lseek(int fd, off_t o, int whence) { return CALL_REAL(lseek, H(fd), o, whence); }
WARM_EXPORT off64_t lseek64(int fd, off64_t o, int whence) { return CALL_REAL(lseek64, H(fd), o, whence); }

/* Two new numbers: the pair is one allocation (EMFILE if either is
 * missing); a number above one of ours gives ours back. */
static int pair_met_shim(int r, const int *sv)
{
	if (r < 0)
		return preload_fd_met_shim(r) && preload_fds_in_the_way(r, 0);
	if (preload_fd_met_shim(sv[0]) || preload_fd_met_shim(sv[1]))
		(void)preload_fds_in_the_way(sv[0] > sv[1] ? sv[0] : sv[1], 0);
	return 0;
}
REAL_DECL(pipe);
REAL_DECL(pipe2);
REAL_DECL(socketpair);
WARM_EXPORT int pipe(int p[2])
{
	int r = CALL_REAL(pipe, p);

	return pair_met_shim(r, p) ? CALL_REAL(pipe, p) : r;
}
WARM_EXPORT int pipe2(int p[2], int fl)
{
	int r = CALL_REAL(pipe2, p, fl);

	return pair_met_shim(r, p) ? CALL_REAL(pipe2, p, fl) : r;
}
EXPORT int socketpair(int d, int t, int pr, int sv[2])
{
	int r = CALL_REAL(socketpair, d, t, pr, sv);

	return pair_met_shim(r, sv) ? CALL_REAL(socketpair, d, t, pr, sv) : r;
}
REAL_DECL(socket);
REAL_DECL(accept);
REAL_DECL(accept4);
EXPORT int socket(int d, int t, int pr) { return PRELOAD_FD_ALLOC(CALL_REAL(socket, d, t, pr), 0); }
EXPORT int accept(int fd, struct sockaddr *a, socklen_t *l)
{
	fd = H(fd);
	return PRELOAD_FD_ALLOC(CALL_REAL(accept, fd, a, l), 0);
}
EXPORT int accept4(int fd, struct sockaddr *a, socklen_t *l, int fl)
{
	fd = H(fd);
	return PRELOAD_FD_ALLOC(CALL_REAL(accept4, fd, a, l, fl), 0);
}

/* ---------------------------------------------------------------------- */
/* Process state */

REAL_DECL(chdir);
EXPORT int chdir(const char *p)
{
	int r = CALL_REAL(chdir, p);

	__atomic_fetch_add(&preload_cwd_epoch, 1, __ATOMIC_RELEASE);
	return r;
}
REAL_DECL(fchdir);
EXPORT int fchdir(int fd)
{
	int r = CALL_REAL(fchdir, H(fd));

	__atomic_fetch_add(&preload_cwd_epoch, 1, __ATOMIC_RELEASE);
	return r;
}

#define CRED(name, params, ...)                    \
	REAL_DECL(name);                            \
	EXPORT int name params                      \
	{                                           \
		int r_ = CALL_REAL(name, __VA_ARGS__); \
		__atomic_fetch_add(&preload_cred_epoch, 1, __ATOMIC_RELEASE); \
		return r_;                          \
	}
CRED(setuid, (uid_t u), u)
CRED(seteuid, (uid_t u), u)
CRED(setreuid, (uid_t a, uid_t b), a, b)
CRED(setresuid, (uid_t a, uid_t b, uid_t c), a, b, c)
CRED(setgid, (gid_t g), g)
CRED(setegid, (gid_t g), g)
CRED(setregid, (gid_t a, gid_t b), a, b)
CRED(setresgid, (gid_t a, gid_t b, gid_t c), a, b, c)
CRED(setgroups, (size_t n, const gid_t *l), n, l)
CRED(setfsuid, (uid_t u), u)
CRED(setfsgid, (gid_t g), g)
/* capset(2) has no glibc declaration (libcap's header has one). */
int capset(void *hdr, const void *data);
CRED(capset, (void *h, const void *d), h, d)

/* prctl(PR_SET_SECUREBITS): SECBIT_NO_SETUID_FIXUP decides with which
 * capabilities access() checks (creds.c); no other option changes what a
 * permission check of this process reads now (ambient capabilities, the
 * bounding set and PR_SET_KEEPCAPS act at a later execve or setuid).
 * Variadic: forwarded with the four further arguments glibc's own reads. */
REAL_DECL(prctl);
EXPORT int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;
	int r;

	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	r = CALL_REAL(prctl, option, a[0], a[1], a[2], a[3]);
	if (option == PR_SET_SECUREBITS)
		__atomic_fetch_add(&preload_cred_epoch, 1, __ATOMIC_RELEASE);
	return r;
}

/*
 * Root directory, mounts and namespaces.  After any of these "/" and what
 * lies below it may be other directories (or other ids own them): the next
 * lookup empties the cache, the root's watch included (dcache_reset).
 * pivot_root has no glibc declaration but libc.so.6 exports it: interposed
 * for callers that use it; util-linux's pivot_root(8) and most others make
 * the raw syscall, which no LD_PRELOAD shim sees.
 */
static void ns_changed(void)
{
	__atomic_fetch_add(&preload_ns_epoch, 1, __ATOMIC_RELEASE);
	__atomic_fetch_add(&preload_cred_epoch, 1, __ATOMIC_RELEASE);
	preload_mounts_changed();
}
#define NS_CHANGE(name, params, ...)                 \
	REAL_DECL(name);                              \
	EXPORT int name params                        \
	{                                             \
		int r_ = CALL_REAL(name, __VA_ARGS__); \
		int saved_ = errno;                   \
		ns_changed();                         \
		errno = saved_;                       \
		return r_;                            \
	}
int pivot_root(const char *new_root, const char *put_old);
NS_CHANGE(chroot, (const char *p), p)
NS_CHANGE(pivot_root, (const char *n, const char *o), n, o)
NS_CHANGE(mount, (const char *s, const char *t, const char *f, unsigned long fl, const void *d),
	  s, t, f, fl, d)
NS_CHANGE(umount, (const char *t), t)
NS_CHANGE(umount2, (const char *t, int fl), t, fl)
#if __GLIBC_PREREQ(2, 36) /* the new mount API's wrappers */
NS_CHANGE(move_mount, (int fa, const char *a, int fb, const char *b, unsigned int fl), fa, a, fb, b, fl)
NS_CHANGE(mount_setattr, (int fd, const char *p, unsigned int fl, struct mount_attr *a, size_t n),
	  fd, p, fl, a, n)
#endif

/* Threads of this process as the kernel counts them, or -1 (no /proc). */
static int count_threads(void)
{
	char buf[4096];
	const char *p;

	if (preload_read_file_raw("/proc/self/status", buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nThreads:");
	return p ? atoi(p + 9) : -1;
}

/* Whether every thread but the caller is the reader or one of the cache's
 * `cache_threads`.  Errs one way only: a thread starting or leaving is
 * counted by one side and not the other, and the answer is then 0. */
static int alone_besides(int cache_threads)
{
	int n = count_threads();

	return n > 0 && n == 1 + cache_threads + (inval_active() ? 1 : 0);
}

/* The cache asks only while it has no thread of its own (and holds the
 * mutex that dcache_threads() takes). */
int preload_sole_thread(void)
{
	return alone_besides(0);
}

/* Whether every thread but the caller is one of the shim's. */
static int alone_with_our_threads(void)
{
	return alone_besides(dcache_threads());
}

/*
 * unshare(CLONE_NEWUSER) and setns() into a user or mount namespace need a
 * single-threaded process (a mount namespace: nobody sharing our fs_struct).
 * Stop the reader thread (always), and if the program itself has no other
 * thread, tear the cache down with the liburcu threads it started, then let
 * the kernel decide.  Not possible in a fork() child of a process that had
 * used the cache: liburcu re-creates its call_rcu and hash-resize threads
 * there (its after-fork hooks), and those cannot be stopped.
 */
static void become_single_threaded(void)
{
	struct timespec step = { 0, 100 * 1000 };
	int n;

	inval_stop();
	n = count_threads();
	if (n <= 0 || n != 1 + dcache_threads())
		return; /* the program's own threads: the kernel refuses anyway */
	dcache_quiesce();
	for (int i = 0; i < 20000 && count_threads() > 1; i++)
		nanosleep(&step, NULL); /* a stopped thread is leaving */
}

/* Threads no longer share one fd table (or one cwd and root, or one mount
 * namespace): a process-wide cache and fd number would lie to some of them.
 * Unless the program has no other thread, give up for this process image. */
static void threads_diverge(void)
{
	if (!alone_with_our_threads()) {
		__atomic_store_n(&preload_enabled, 0, __ATOMIC_RELEASE);
		inval_disable();
	}
}

__attribute__((unused)) static void fd_table_unshared(void)
{
	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !preload_in_shim) {
		preload_in_shim++;
		threads_diverge();
		preload_in_shim--;
	}
}

REAL_DECL(unshare);
EXPORT int unshare(int flags)
{
	int r, saved;

	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !preload_in_shim) {
		preload_in_shim++;
		if (flags & CLONE_NEWUSER)
			become_single_threaded();
		else if (flags & (CLONE_FILES | CLONE_FS | CLONE_NEWNS))
			threads_diverge();
		preload_in_shim--;
	}
	r = CALL_REAL(unshare, flags);
	saved = errno;
	/* A new mount namespace: the instance's mountinfo fds still report
	 * the old one's changes.  Give the instance up; the next one opens
	 * them here (inval.c, "Mounts"). */
	if (r == 0 && (flags & CLONE_NEWNS) && !(flags & CLONE_NEWUSER) &&
	    __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !preload_in_shim) {
		preload_in_shim++;
		inval_stop();
		preload_in_shim--;
	}
	ns_changed();
	errno = saved;
	return r;
}

REAL_DECL(setns);
EXPORT int setns(int fd, int nstype)
{
	int r, saved;

	if (__atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !preload_in_shim) {
		int type = nstype;

		if (!type) { /* "any": ask the namespace fd what it is */
			type = ioctl(fd, NS_GET_NSTYPE);
			if (type <= 0)
				type = CLONE_NEWUSER;
		}
		preload_in_shim++;
		if (type & (CLONE_NEWUSER | CLONE_NEWNS))
			become_single_threaded();
		preload_in_shim--;
	}
	r = CALL_REAL(setns, fd, nstype);
	saved = errno;
	ns_changed();
	errno = saved;
	return r;
}

/* Reaping a child: its changes are in the inotify queue already, and
 * noting them is what a mutator does (the next lookup drains first). */
#define REAPER(ret, name, params, ...) MUTATOR(ret, name, params, __VA_ARGS__)
REAPER(pid_t, wait, (int *s), s)
REAPER(pid_t, waitpid, (pid_t p, int *s, int o), p, s, o)
REAPER(pid_t, wait3, (int *s, int o, struct rusage *ru), s, o, ru)
REAPER(pid_t, wait4, (pid_t p, int *s, int o, struct rusage *ru), p, s, o, ru)
REAPER(int, waitid, (idtype_t t, id_t i, siginfo_t *si, int o), t, i, si, o)

/*
 * liburcu's fork hooks, as fork() below calls them.  With liburcu linked into
 * the library (RCUWALK_URCU_STATIC) they are the shim's own copy's, hidden
 * from the host.  With the shared liburcu-bp (RCUWALK_URCU_SHARED) the shim
 * and a host that uses liburcu-bp itself share one urcu-bp, and liburcu's
 * protocol has the host call the same hooks around its fork(): the
 * urcu_bp_before_fork() pair locks urcu-bp's grace-period and registry
 * mutexes, the call_rcu pair call_rcu_mutex.  Our fork() taking them again in
 * that thread would wait forever on mutexes the thread holds (seen: a host
 * doing urcu_bp_before_fork(); fork() hung in futex_wait).  So the shim
 * interposes the six hooks: each passes the call on and notes, per thread,
 * whether the host now holds that pair of locks, and fork() takes only what
 * this thread does not hold; the host releases its pair after fork() returns.
 * The real hooks are resolved on first use (not at start: every process
 * would pay the lookups), like fork's own real symbol (CALL_REAL).
 */
enum { BP_BEFORE, BP_PARENT, BP_CHILD, CR_BEFORE, CR_PARENT, CR_CHILD, URCU_HOOKS_N };
#ifdef RCUWALK_URCU_SHARED
static const char *const urcu_hook_names[URCU_HOOKS_N] = {
	"urcu_bp_before_fork",		"urcu_bp_after_fork_parent",
	"urcu_bp_after_fork_child",	"urcu_bp_call_rcu_before_fork",
	"urcu_bp_call_rcu_after_fork_parent", "urcu_bp_call_rcu_after_fork_child",
};
static void (*urcu_hooks[URCU_HOOKS_N])(void);
/* 1 while this thread's host code holds the urcu-bp / call_rcu fork locks. */
static __thread int host_holds_bp __attribute__((tls_model("initial-exec")));
static __thread int host_holds_call_rcu __attribute__((tls_model("initial-exec")));

static void resolve_urcu_hooks(void)
{
	if (__atomic_load_n(&urcu_hooks[URCU_HOOKS_N - 1], __ATOMIC_ACQUIRE))
		return;
	preload_in_shim++; /* dlsym may allocate, and an allocator may stat */
	for (int i = 0; i < URCU_HOOKS_N; i++)
		__atomic_store_n(&urcu_hooks[i], (void (*)(void))dlsym(RTLD_NEXT, urcu_hook_names[i]),
				 __ATOMIC_RELEASE);
	preload_in_shim--;
}

static inline void urcu_hook(int i)
{
	void (*f)(void) = __atomic_load_n(&urcu_hooks[i], __ATOMIC_ACQUIRE);

	if (f)
		f();
}

#define HOST_URCU_HOOK(name, i, holds, now)     \
	EXPORT void name(void)                 \
	{                                      \
		resolve_urcu_hooks();          \
		urcu_hook(i);                  \
		holds = now;                   \
	}
HOST_URCU_HOOK(urcu_bp_before_fork, BP_BEFORE, host_holds_bp, 1)
HOST_URCU_HOOK(urcu_bp_after_fork_parent, BP_PARENT, host_holds_bp, 0)
HOST_URCU_HOOK(urcu_bp_after_fork_child, BP_CHILD, host_holds_bp, 0)
HOST_URCU_HOOK(urcu_bp_call_rcu_before_fork, CR_BEFORE, host_holds_call_rcu, 1)
HOST_URCU_HOOK(urcu_bp_call_rcu_after_fork_parent, CR_PARENT, host_holds_call_rcu, 0)
HOST_URCU_HOOK(urcu_bp_call_rcu_after_fork_child, CR_CHILD, host_holds_call_rcu, 0)
#else
static void (*const urcu_hooks[URCU_HOOKS_N])(void) = {
	urcu_bp_before_fork,	      urcu_bp_after_fork_parent,
	urcu_bp_after_fork_child,     urcu_bp_call_rcu_before_fork,
	urcu_bp_call_rcu_after_fork_parent, urcu_bp_call_rcu_after_fork_child,
};
enum { host_holds_bp = 0, host_holds_call_rcu = 0 };

static inline void resolve_urcu_hooks(void) {}

static inline void urcu_hook(int i) { urcu_hooks[i](); }
#endif

/*
 * fork(): the child must not inherit our mutexes locked by another thread,
 * nor read the parent's inotify instance.  Following liburcu's advice (and
 * LTTng-UST), the urcu-bp and call_rcu fork hooks are called from here rather
 * than from pthread_atfork handlers (those the host holds already excepted,
 * above).  Order: liburcu's hooks first (they wait for the call_rcu and
 * resize threads, which wait for grace periods, which wait for readers,
 * which may be waiting for dcache_mutex), then our read mutex and dcache
 * mutex, which no holder keeps while waiting on liburcu.
 */
/*
 * The real functions a fork() child calls between the fork and its exec
 * (a shell's redirections: open, dup2, close, fcntl; the stdio flush before
 * it; the write of a command substitution's child, `x=$(echo a)`, which its
 * parent never makes), resolved once in the parent, as the exec family is
 * (preload_stats_resolve_exec): a child resolved each it needed with dlsym
 * and threw the answer away at its exec, ~2,000 instructions and a few
 * page faults a name (the parent's call is made once; bash's child for
 * `cmd >/dev/null` made 4 of them: 17 page faults more than with an empty
 * library, 7 after this).  REAL_DECL's slots are on the start-up data page.
 */
static int child_calls_resolved DCACHE_START_DATA;

static void preload_resolve_for_children(void)
{
	if (__atomic_load_n(&child_calls_resolved, __ATOMIC_ACQUIRE))
		return;
	preload_resolve_openat();
	dcache_fork_bind();
	preload_real_sym(&real_close_p, real_close_n);
	preload_real_sym(&real_dup2_p, real_dup2_n);
	preload_real_sym(&real_fcntl_p, real_fcntl_n);
	preload_real_sym(&real_fflush_p, real_fflush_n);
	preload_real_sym(&real_write_p, real_write_n);
	__atomic_store_n(&child_calls_resolved, 1, __ATOMIC_RELEASE);
}

/* Whether this process has one thread: see fork(). */
static inline int single_threaded(void)
{
#if __GLIBC_PREREQ(2, 32)
	return __libc_single_threaded;
#else
	return 0;
#endif
}

REAL_DECL(fork);
EXPORT DCACHE_FORK_TEXT pid_t fork(void)
{
	int on = __atomic_load_n(&preload_enabled, __ATOMIC_ACQUIRE) && !preload_in_shim;
	int bp = !host_holds_bp, cr = !host_holds_call_rcu;
	pid_t pid;
	int saved, locks;

	/* The child's exec, if it makes one, finds its real function here;
	 * also with the shim off (RCUWALK_DISABLE, a give-up), whose wrappers
	 * still call the real functions through the same slots. */
	if (!preload_in_shim) {
		preload_in_shim++;
		preload_stats_resolve_exec();
		preload_resolve_for_children();
		preload_in_shim--;
	}
	if (!on)
		return CALL_REAL(fork);
	/* During the warm-up nothing of the cache exists (no fd, no table, no
	 * lock held: see preload_warm_forks): a plain fork().  The full path
	 * below costs a fork+exec ~16 page faults more (87.7 against 71.7:
	 * locks taken, the child's state reset), for nothing to protect.
	 * Unless liburcu was loaded meanwhile (unshare's or setns's quiesce
	 * reaches it): then its fork hooks are due. */
	if (__atomic_load_n(&preload_enabled, __ATOMIC_RELAXED) == PRELOAD_WARMUP &&
	    !dcache_urcu_loaded()) {
		/* The count's page is wiped in the child (shim.c, "fork
		 * gate"): after the fork neither process writes a page that
		 * fork() write-protected (no errno restored either: the
		 * atomics leave it alone).  Where it is not, the child resets
		 * the count. */
		int wiped = preload_fork_gate_wiped();

		__atomic_add_fetch(&preload_warm_forks, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&preload_enabled, __ATOMIC_SEQ_CST) == PRELOAD_WARMUP) {
			unsigned long long t0 = preload_warmup_ns ? preload_warm_ns1() : 0;

			pid = CALL_REAL(fork);
			if (pid == 0) {
				if (!wiped)
					__atomic_store_n(&preload_warm_forks, 0, __ATOMIC_RELAXED);
				return 0;
			}
			__atomic_sub_fetch(&preload_warm_forks, 1, __ATOMIC_SEQ_CST);
			/* shim.c, "fork debt": on the gate's page where it is
			 * wiped, and errno untouched (CLOCK_MONOTONIC does not
			 * fail). */
			if (pid > 0 && t0)
				preload_warm_fork_debt(t0);
			return pid;
		}
		__atomic_sub_fetch(&preload_warm_forks, 1, __ATOMIC_SEQ_CST);
	}
	/*
	 * A process of one thread (a shell) takes no lock and calls no liburcu
	 * hook around its fork: nobody else can hold a lock of ours (this
	 * thread is outside the shim: `on`), no liburcu thread exists, and
	 * liburcu-bp's registry holds this thread only, so the hooks would
	 * change nothing but the pages they write - each write after fork() a
	 * copy-on-write fault in the parent.  The child re-initialises every
	 * lock it inherits all the same (the *_fork_child functions).
	 * __libc_single_threaded is cleared by pthread_create() before the new
	 * thread exists and never set again in this process.
	 */
	locks = !single_threaded();
	if (!locks) {
		bp = cr = 0;
		inval_fork_note();
	} else if (!dcache_urcu_fork_prepare()) {
		/* Before liburcu is loaded (cache/dcache_urcu.c) the shim has
		 * no liburcu state to protect; the load waits for this fork. */
		bp = cr = 0;
	}
	if (bp || cr)
		resolve_urcu_hooks();
	preload_in_shim++;
	if (cr)
		urcu_hook(CR_BEFORE);
	if (bp)
		urcu_hook(BP_BEFORE);
	if (locks) {
		inval_fork_prepare();
		dcache_fork_prepare();
	}
	pid = CALL_REAL(fork);
	saved = errno;
	if (pid == 0) {
		if (bp)
			urcu_hook(BP_CHILD);
		if (cr)
			urcu_hook(CR_CHILD);
		inval_fork_child();
		dcache_fork_child();
		dcache_urcu_fork_child();
		preload_fork_child_rewarm();
	} else if (locks) {
		if (bp)
			urcu_hook(BP_PARENT);
		if (cr)
			urcu_hook(CR_PARENT);
		dcache_fork_parent();
		inval_fork_parent();
		dcache_urcu_fork_parent();
	}
	preload_in_shim--;
	errno = saved;
	return pid;
}

/* ---------------------------------------------------------------------- */

/* DCACHE_START_TEXT spelt out: GCC places constructors in .text.startup
 * by itself, clang does not. */
__attribute__((constructor)) DCACHE_START_TEXT static void shim_init(void)
{
	preload_init();
}

__attribute__((destructor)) DCACHE_START_TEXT static void shim_fini(void)
{
	preload_in_shim++;
	preload_warm_learn_exit();
	preload_write_stats();
}

/* The library's DT_FINI (-Wl,-fini=, preload/CMakeLists.txt) in place of
 * crtn's _fini, which does nothing either but lies in .fini at the end of
 * .text: the one page a process that looked nothing up faulted in at exit
 * for it alone.  The destructor above still runs from .fini_array. */
void preload_dt_fini(void);
DCACHE_START_TEXT void preload_dt_fini(void)
{
}
