/*
 * config.c - configuration, the kernel ops handed to cache/, statistics.
 *
 * The kernel ops use raw syscall(2): they must never re-enter the shim, and
 * they need no symbol resolution (so they work before the constructor and
 * inside dlsym).
 *
 * Locks: fs_table is written only from ops context (under the dcache writer
 * mutex), so it needs no lock of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dcache.h"
#include "inval.h"
#include "preload.h"

static int raw_lstat(const char *path, struct stat *st)
{
	return syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static long raw_readlink(const char *path, char *buf, size_t size)
{
	long n = syscall(SYS_readlinkat, AT_FDCWD, path, buf, size);

	return n >= 0 ? n : -errno;
}

static int raw_access(const char *path, int mode, int flags)
{
	return syscall(SYS_faccessat2, AT_FDCWD, path, mode, flags) == 0 ? 0 : -errno;
}

static int raw_getcwd(char *buf, size_t size)
{
	return syscall(SYS_getcwd, buf, size) > 0 ? 0 : -errno;
}

/*
 * Filesystems whose every change passes through this kernel's VFS and so
 * produces inotify events here.  Everything else (NFS, CIFS, FUSE, 9p, proc,
 * sysfs, cgroup, devpts, ...) is passed through, never cached.
 */
static int fs_type_cacheable(unsigned long type)
{
	switch (type) {
	case 0xEF53:     /* ext2/3/4 */
	case 0x58465342: /* xfs */
	case 0x9123683E: /* btrfs */
	case 0x01021994: /* tmpfs */
	case 0xF2F52010: /* f2fs */
	case 0x794c7630: /* overlayfs */
	case 0x2FC12FC1: /* zfs */
	case 0x3153464a: /* jfs */
	case 0x52654973: /* reiserfs */
		return 1;
	default:
		return 0;
	}
}

/*
 * The filesystem type of device `dev` by name, from /proc/self/mountinfo
 * (statfs cannot tell devtmpfs from tmpfs: same f_type, and devtmpfs sees
 * every write to /dev/null as IN_MODIFY in /dev).  Returns 1 cacheable,
 * 0 not, -1 not found (btrfs subvolumes report anonymous devices).
 * Raw syscalls only: this runs in ops context.  The fd lives only inside
 * this call, like glibc's own transient fds: a host thread that closes fds
 * it does not own while other threads run can hit it, as it can hit glibc's.
 * The long-lived inotify fd is guarded instead (inval.c).
 */
static int mountinfo_verdict(dev_t dev)
{
	static const char *const ok[] = { "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs",
					  "f2fs", "overlay", "zfs", "jfs", "reiserfs" };
	static char buf[1 << 16];
	char want[32];
	long n = 0, r;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (n < (long)sizeof(buf) - 1 &&
	       (r = syscall(SYS_read, fd, buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	syscall(SYS_close, fd);
	buf[n] = '\0';
	snprintf(want, sizeof(want), " %u:%u ", major(dev), minor(dev));
	for (char *line = buf; line && *line;) {
		char *end = strchr(line, '\n'), *hit, *sep;

		if (end)
			*end = '\0';
		hit = strstr(line, want);
		sep = strstr(line, " - ");
		/* field 3 is major:minor: it comes right after "ID PARENT" */
		if (hit && sep && hit < sep) {
			char type[32];
			size_t len = strcspn(sep + 3, " ");

			if (len >= sizeof(type))
				return 0;
			memcpy(type, sep + 3, len);
			type[len] = '\0';
			for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
				if (!strcmp(type, ok[i]))
					return 1;
			return 0;
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

#define FS_TABLE 64
static struct {
	dev_t dev;
	int verdict;
} fs_table[FS_TABLE];
static int fs_used;
/* Bumped by preload_mounts_changed() (any thread); fs_cacheable() forgets
 * the table when it sees a new value.  A device number freed by an unmount
 * may be given to another filesystem. */
static unsigned int mounts_gen, mounts_seen;

void preload_mounts_changed(void)
{
	__atomic_fetch_add(&mounts_gen, 1, __ATOMIC_RELEASE);
}

/* ops->fs_cacheable: under the dcache writer mutex. */
static int fs_cacheable(const char *path, dev_t dev)
{
	unsigned int g = __atomic_load_n(&mounts_gen, __ATOMIC_ACQUIRE);
	struct statfs sfs;
	int v;

	if (g != mounts_seen) {
		mounts_seen = g;
		fs_used = 0;
	}

	for (int i = 0; i < fs_used; i++)
		if (fs_table[i].dev == dev)
			return fs_table[i].verdict;
	v = mountinfo_verdict(dev);
	if (v < 0)
		v = syscall(SYS_statfs, path, &sfs) == 0 && fs_type_cacheable((unsigned long)sfs.f_type);
	if (fs_used < FS_TABLE) {
		fs_table[fs_used].dev = dev;
		fs_table[fs_used].verdict = v;
		fs_used++;
	}
	return v;
}

static struct dcache_ops ops = {
	.kernel_lstat = raw_lstat,
	.kernel_readlink = raw_readlink,
	.kernel_access = raw_access,
	.kernel_getcwd = raw_getcwd,
	.fs_cacheable = fs_cacheable,
};

static char stats_path[PATH_MAX];

/* Set by preload_init(); read by every wrapper (shim.c). */
int preload_enabled;
int preload_attrs_faked;

/* fakeroot and pseudo fake ownership and modes in the process (and their
 * daemon), not in the kernel, and tell inotify nothing about it. */
static int attrs_faked_here(void)
{
	const char *p = getenv("LD_PRELOAD");

	return getenv("FAKEROOTKEY") || getenv("PSEUDO_PREFIX") ||
	       (p && (strstr(p, "libfakeroot") || strstr(p, "libpseudo")));
}

void preload_init(void)
{
	const char *s = getenv("RCUWALK_DISABLE");
	size_t max_bytes = 0;

	if (s && *s && strcmp(s, "0") != 0)
		return;
	preload_attrs_faked = attrs_faked_here();
	s = getenv("RCUWALK_STATS");
	if (s && *s && strlen(s) < sizeof(stats_path))
		strcpy(stats_path, s);
	s = getenv("RCUWALK_MAX_MB");
	if (s && *s) {
		unsigned long mb = strtoul(s, NULL, 10);

		if (mb > 0 && mb < (1UL << 20))
			max_bytes = mb << 20;
	}
	inval_fill_ops(&ops);
	dcache_init(&ops, max_bytes);
	__atomic_store_n(&preload_enabled, 1, __ATOMIC_RELEASE);
}

void preload_write_stats(void)
{
	struct dcache_stats s;
	char line[256];
	int fd, n;

	if (!stats_path[0])
		return;
	dcache_stats_sum(&s);
	n = snprintf(line, sizeof(line),
		     "rcuwalk-stats v1 pid=%ld hits=%llu neg_hits=%llu misses=%llu "
		     "passthrough=%llu invalidations=%llu saved=%llu\n",
		     (long)getpid(), (unsigned long long)s.hits, (unsigned long long)s.neg_hits,
		     (unsigned long long)s.misses, (unsigned long long)s.passthrough,
		     (unsigned long long)s.invalidations,
		     (unsigned long long)(s.hits + s.neg_hits));
	fd = (int)syscall(SYS_openat, AT_FDCWD, stats_path,
			  O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (n > 0)
		(void)!syscall(SYS_write, fd, line, (size_t)n);
	syscall(SYS_close, fd);
}
