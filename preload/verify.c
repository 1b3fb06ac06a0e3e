/* SPDX-License-Identifier: MIT */
/*
 * verify.c - verify mode (RCUWALK_VERIFY=1, `rcuwalk --verify`): every answer
 * the shim serves from its cache is also asked of the kernel with the raw
 * system call (glibc's own realpath for realpath), the two are compared, and
 * the kernel's answer is what the program gets.  A difference is a mismatch:
 * one line in the verify log, and one more in the stats record's
 * `mismatches` field.  Slow by design (every cached answer costs the system
 * call it was meant to save, plus the cache's own work).
 *
 * What is compared: the return value, errno (on success: that it is left
 * alone), and for stat the fields of the coherence contract (never st_atim),
 * for statx the whole struct but stx_atime, for readlink the bytes, for
 * realpath the resolved name.  A failed open or opendir that the cache
 * answered is made for real instead (an O_RDONLY open can block on a FIFO or
 * touch a device: no second open is made), and its result compared.
 *
 * The log: RCUWALK_VERIFY_LOG=FILE (made absolute at start; a foreign
 * symlink or file in a sticky directory refused: stats.c,
 * preload_open_append), else rcuwalk-verify.<pid>.log, 0600, O_EXCL, in a
 * directory of the user's own ($XDG_RUNTIME_DIR if ours and 0700, else
 * <$TMPDIR or /tmp>/rcuwalk-<euid>, 0700: preload_private_dir; none that
 * passes the checks: no log, the mismatch still counted), created only at
 * the first mismatch (no file: no mismatch).  Each line is one
 * O_APPEND write(2), so the processes of a tree may share one file:
 *
 *   rcuwalk-verify pid=<pid> call=<call> path="<path>" cache: <answer> kernel: <answer>
 *
 * with <answer> "ret=0 dev=... ino=... mode=... nlink=... uid=... gid=...
 * rdev=... size=... blksize=... blocks=... mtime=S.N ctime=S.N" for stat,
 * "ret=-1 errno=ENOENT" for an error, and so on.  Bytes outside printable
 * ASCII, '"' and '\' in a path or link are written as \xNN.
 * Raw syscalls only; nothing is ever written to stdout or stderr.
 *
 * Test builds (RCUWALK_FAULT_INJECTION, tests/CMakeLists.txt: the library
 * librcuwalk-faulty.so, never installed) also honour RCUWALK_TEST_CORRUPT=
 * KIND[,KIND...], which corrupts the cache's answers before anything else
 * sees them: size (stat/statx st_size of hits + 1), errno (a cached ENOENT
 * becomes ENOTDIR and back), access (a cached access() success becomes
 * EACCES), link (readlink/realpath: the first byte of the answer changed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dcache.h" /* DCACHE_COLD_BSS */
#include "preload.h"
#include "stats.h"

int preload_verify DCACHE_START_DATA; /* read by every lookup wrapper */
static char verify_log[PATH_MAX] DCACHE_COLD_BSS;
static uint64_t mismatches;

uint64_t preload_verify_mismatches(void)
{
	return __atomic_load_n(&mismatches, __ATOMIC_RELAXED);
}

void preload_verify_fork_child(void)
{
	__atomic_store_n(&mismatches, 0, __ATOMIC_RELAXED);
}

#ifdef RCUWALK_FAULT_INJECTION
static unsigned int corrupt_kinds;
#endif

DCACHE_START_TEXT void preload_verify_init(const char *s, const char *log, const char *corrupt)
{
#ifdef RCUWALK_FAULT_INJECTION
	{
		const char *c = corrupt;

		if (c) {
			corrupt_kinds |= strstr(c, "size") ? PRELOAD_CORRUPT_SIZE : 0;
			corrupt_kinds |= strstr(c, "errno") ? PRELOAD_CORRUPT_ERRNO : 0;
			corrupt_kinds |= strstr(c, "access") ? PRELOAD_CORRUPT_ACCESS : 0;
			corrupt_kinds |= strstr(c, "link") ? PRELOAD_CORRUPT_LINK : 0;
		}
	}
#else
	(void)corrupt;
#endif
	if (!(s && *s && strcmp(s, "0") != 0))
		return; /* preload_verify stays 0: its page is not written */
	preload_verify = 1;
	if (!log || !*log)
		return;
	if (log[0] == '/') {
		if (strlen(log) < sizeof(verify_log))
			strcpy(verify_log, log);
	} else {
		char cwd[PATH_MAX];

		size_t c, l = strlen(log);

		if (syscall(SYS_getcwd, cwd, sizeof(cwd)) > 0 && cwd[0] == '/' &&
		    (c = strlen(cwd)) + 1 + l < sizeof(verify_log)) {
			memcpy(verify_log, cwd, c);
			verify_log[c] = '/';
			memcpy(verify_log + c + 1, log, l + 1);
		}
	}
}

unsigned int preload_test_corrupt(void)
{
#ifdef RCUWALK_FAULT_INJECTION
	return corrupt_kinds;
#else
	return 0;
#endif
}

/* ---------------------------------------------------------------------- */
/* Formatting, by hand into a caller's buffer (no stdio locks, no malloc). */

struct out {
	char *p, *end;
};

static void put(struct out *o, const char *s)
{
	while (*s && o->p < o->end)
		*o->p++ = *s++;
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->p, (size_t)(o->end - o->p), fmt, ap);
	va_end(ap);
	if (n > 0)
		o->p += (size_t)n < (size_t)(o->end - o->p) ? (size_t)n : (size_t)(o->end - o->p);
}

static void put_bytes(struct out *o, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len && o->p + 4 < o->end; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
			*o->p++ = '\\';
			*o->p++ = 'x';
			*o->p++ = hex[c >> 4];
			*o->p++ = hex[c & 15];
		} else {
			*o->p++ = (char)c;
		}
	}
}

static void put_err(struct out *o, int ret, int err)
{
	const char *name = strerrorname_np(err);

	if (name)
		putf(o, "ret=%d errno=%s", ret, name);
	else
		putf(o, "ret=%d errno=%d", ret, err);
}

void preload_fmt_ret(char *buf, size_t size, long ret, int err)
{
	struct out o = { buf, buf + size - 1 };

	if (ret < 0)
		put_err(&o, (int)ret, err);
	else
		putf(&o, "ret=%ld", ret);
	*o.p = '\0';
}

void preload_fmt_stat(char *buf, size_t size, int ret, int err, const struct stat *st)
{
	struct out o = { buf, buf + size - 1 };

	if (ret != 0) {
		put_err(&o, ret, err);
	} else {
		putf(&o,
		     "ret=0 dev=%llu ino=%llu mode=0%o nlink=%llu uid=%u gid=%u rdev=%llu size=%lld "
		     "blksize=%ld blocks=%lld mtime=%lld.%09ld ctime=%lld.%09ld",
		     (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
		     (unsigned int)st->st_mode, (unsigned long long)st->st_nlink, st->st_uid,
		     st->st_gid, (unsigned long long)st->st_rdev, (long long)st->st_size,
		     (long)st->st_blksize, (long long)st->st_blocks, (long long)st->st_mtim.tv_sec,
		     st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
	}
	*o.p = '\0';
}

void preload_fmt_statx(char *buf, size_t size, int ret, int err, const struct statx *sx)
{
	struct out o = { buf, buf + size - 1 };

	if (ret != 0) {
		put_err(&o, ret, err);
	} else {
		putf(&o,
		     "ret=0 mask=0x%x dev=%u:%u ino=%llu mode=0%o nlink=%u uid=%u gid=%u size=%llu "
		     "blocks=%llu attributes=0x%llx mtime=%lld.%09u ctime=%lld.%09u btime=%lld.%09u",
		     sx->stx_mask, sx->stx_dev_major, sx->stx_dev_minor,
		     (unsigned long long)sx->stx_ino, (unsigned int)sx->stx_mode, sx->stx_nlink,
		     sx->stx_uid, sx->stx_gid, (unsigned long long)sx->stx_size,
		     (unsigned long long)sx->stx_blocks, (unsigned long long)sx->stx_attributes,
		     (long long)sx->stx_mtime.tv_sec, sx->stx_mtime.tv_nsec,
		     (long long)sx->stx_ctime.tv_sec, sx->stx_ctime.tv_nsec,
		     (long long)sx->stx_btime.tv_sec, sx->stx_btime.tv_nsec);
	}
	*o.p = '\0';
}

void preload_fmt_name(char *buf, size_t size, long ret, int err, const char *s, size_t len)
{
	struct out o = { buf, buf + size - 1 };

	if (ret < 0) {
		put_err(&o, (int)ret, err);
	} else {
		putf(&o, "ret=%ld \"", ret);
		put_bytes(&o, s, len);
		put(&o, "\"");
	}
	*o.p = '\0';
}

/* ---------------------------------------------------------------------- */

int preload_stat_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_nlink == b->st_nlink && a->st_uid == b->st_uid && a->st_gid == b->st_gid &&
	       a->st_rdev == b->st_rdev && a->st_size == b->st_size &&
	       a->st_blksize == b->st_blksize && a->st_blocks == b->st_blocks &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int preload_statx_same(const struct statx *a, const struct statx *b)
{
	struct statx x = *a, y = *b;

	memset(&x.stx_atime, 0, sizeof(x.stx_atime));
	memset(&y.stx_atime, 0, sizeof(y.stx_atime));
	return memcmp(&x, &y, sizeof(x)) == 0;
}

void preload_verify_mismatch(const char *call, const char *path, const char *cached,
			     const char *kernel)
{
	char line[8192], def[PATH_MAX];
	const char *file = verify_log;
	struct out o = { line, line + sizeof(line) - 2 };
	int saved = errno, fd, ours = 0;

	__atomic_fetch_add(&mismatches, 1, __ATOMIC_RELAXED);
	if (!file[0]) {
		size_t n;

		/* A directory of our own: nobody else can plant the name. */
		if (preload_private_dir(def, sizeof(def) - 48) != 0) {
			errno = saved;
			return; /* counted in `mismatches`; nowhere safe to log */
		}
		n = strlen(def);
		snprintf(def + n, sizeof(def) - n, "/rcuwalk-verify.%ld.log",
			 (long)syscall(SYS_getpid));
		file = def;
		ours = 1;
	}
	putf(&o, "rcuwalk-verify pid=%ld call=%s path=\"", (long)syscall(SYS_getpid), call);
	if (path)
		put_bytes(&o, path, strnlen(path, PATH_MAX));
	put(&o, "\" cache: ");
	put(&o, cached);
	put(&o, " kernel: ");
	put(&o, kernel);
	*o.p++ = '\n';
	fd = preload_open_append(file, ours);
	if (fd >= 0) {
		(void)!syscall(SYS_write, fd, line, (size_t)(o.p - line));
		syscall(SYS_close, fd);
	}
	errno = saved;
}
