/* SPDX-License-Identifier: MIT */
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
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <dirent.h>

#include "dcache.h"
#include "inval.h"
#include "preload.h"
#include "stats.h"

static int raw_lstat(const char *path, struct stat *st)
{
	return syscall(SYS_newfstatat, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

static long raw_readlink(const char *path, char *buf, size_t size)
{
	long n = syscall(SYS_readlinkat, AT_FDCWD, path, buf, size);

	return n >= 0 ? n : -errno;
}

static int raw_statx(const char *path, unsigned int mask, struct statx *out)
{
	return syscall(SYS_statx, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, mask, out) == 0 ? 0 : -errno;
}

static int raw_access(const char *path, int mode, int flags)
{
	return syscall(SYS_faccessat2, AT_FDCWD, path, mode, flags) == 0 ? 0 : -errno;
}

struct linux_dirent64_ {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Open directory `path` for listing (raw syscalls): the fd, or -errno;
 * -EOPNOTSUPP for a case-insensitive directory (ext4/f2fs/tmpfs casefold),
 * which answers names that are not in its listing. */
static int listdir_open(const char *path)
{
	unsigned int fl = 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path,
			      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (syscall(SYS_ioctl, fd, FS_IOC_GETFLAGS, &fl) == 0 && (fl & FS_CASEFOLD_FL)) {
		syscall(SYS_close, fd);
		return -EOPNOTSUPP;
	}
	return fd;
}

/* Read /proc/self/mountinfo whole into a malloc'd buffer (NUL-terminated);
 * NULL if it cannot be read completely. */
static char *read_mountinfo(void)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	long r;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		if (fd >= 0)
			syscall(SYS_close, fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		if (n + 1 >= cap) {
			char *b = cap < (16u << 20) ? realloc(buf, cap * 2) : NULL;

			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
		r = syscall(SYS_read, fd, buf + n, cap - 1 - n);
		if (r < 0) {
			free(buf);
			buf = NULL;
			break;
		}
		if (r == 0) {
			buf[n] = '\0';
			break;
		}
		n += (size_t)r;
	}
	syscall(SYS_close, fd);
	return buf;
}

/* mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134
 * backslash) undone in place. */
static void mountinfo_unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* Bumped by preload_mounts_changed() (any thread: mount changes, chroot and
 * namespace calls); fs_cacheable() forgets its table, and mountpoints_below()
 * its mount points, when they see a new value.  A device number freed by an unmount
 * may be given to another filesystem. */
static unsigned int mounts_gen, mounts_seen;

/*
 * The mount points of the table as last read, for the typed listings (a cc1
 * lists ~15 directories, the generated project's ~100: reading
 * /proc/self/mountinfo for each cost an open and two reads, and parsing its
 * text for each ~30% of the listing's time there).  Field 5 of every line,
 * unescaped, NUL-separated: parsed once per table read.  Valid while
 * mounts_gen is the value sampled before it was read: a mount change this
 * process knows of (its own mount calls, the mount-table poll of the reader,
 * of the sync points and of the timed drains) bumps mounts_gen, and the same
 * change empties the cache (clause 7), so a listing typed from it is never
 * staler than the rest of the cache.  The slot is taken by an atomic
 * exchange and put back by a compare-exchange: no lock (fork- and
 * signal-safe); a thread that finds it empty reads the table itself.
 */
struct mi_points {
	unsigned int gen;
	size_t len;    /* bytes of points[] */
	char points[]; /* the mount points, each NUL-terminated */
};
static struct mi_points *mi_slot;

/* The mount points of the table text mi (parsed in place), or NULL. */
static struct mi_points *mi_parse(char *mi, unsigned int gen)
{
	struct mi_points *c;
	char *line, *o = mi; /* points are written over the text, never past the line read */

	for (line = mi; *line;) {
		char *end = strchr(line, '\n'), *f = line;
		int field;

		if (end)
			*end = '\0';
		for (field = 1; field < 5 && f; field++) {
			f = strchr(f, ' ');
			if (f)
				f++;
		}
		if (f) {
			size_t l = strcspn(f, " ");

			f[l] = '\0';
			mountinfo_unescape(f);
			l = strlen(f);
			memmove(o, f, l + 1);
			o += l + 1;
		}
		line = end ? end + 1 : line + strlen(line);
	}
	c = malloc(sizeof(*c) + (size_t)(o - mi));
	if (!c)
		return NULL;
	c->gen = gen;
	c->len = (size_t)(o - mi);
	memcpy(c->points, mi, c->len);
	return c;
}

/* Which names of one directory are mount points (field 5 of mountinfo). */
struct mounts_below {
	char *names;  /* NUL-separated names of dir's entries that are mount points */
	size_t len;
};

/* Collect the entries of canonical directory `dir` that are mount points.
 * Returns 0, or -1 if the table could not be read (treat every name as one). */
static int mountpoints_below(const char *dir, struct mounts_below *out)
{
	size_t dlen = strlen(dir);
	unsigned int g = __atomic_load_n(&mounts_gen, __ATOMIC_ACQUIRE);
	struct mi_points *c = __atomic_exchange_n(&mi_slot, NULL, __ATOMIC_ACQ_REL), *none = NULL;
	int r = 0;

	out->names = NULL;
	out->len = 0;
	if (c && c->gen != g) {
		free(c);
		c = NULL;
	}
	if (!c) {
		char *mi = read_mountinfo();

		if (!mi)
			return -1;
		c = mi_parse(mi, g);
		free(mi);
		if (!c)
			return -1;
	}
	for (size_t off = 0; off < c->len; off += strlen(c->points + off) + 1) {
		const char *mp = c->points + off, *name = NULL;

		if (dlen == 1 && mp[0] == '/' && mp[1])
			name = mp + 1;
		else if (dlen > 1 && !strncmp(mp, dir, dlen) && mp[dlen] == '/' && mp[dlen + 1])
			name = mp + dlen + 1;
		if (name && !strchr(name, '/')) {
			size_t nl = strlen(name);

			/* The names below dir are fewer bytes than the points. */
			if (!out->names && !(out->names = malloc(c->len))) {
				r = -1;
				break;
			}
			memcpy(out->names + out->len, name, nl + 1);
			out->len += nl + 1;
		}
	}
	if (!__atomic_compare_exchange_n(&mi_slot, &none, c, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		free(c);
	return r;
}

static int is_listed_mount(const struct mounts_below *mb, const char *name)
{
	for (size_t off = 0; off < mb->len; off += strlen(mb->names + off) + 1)
		if (!strcmp(mb->names + off, name))
			return 1;
	return 0;
}

/* ops->kernel_listdir_typed (the untyped kernel_listdir op is not set: the
 * cache prefers this one): getdents64 on an O_DIRECTORY fd, raw syscalls
 * only, with each name's d_type where it is DT_DIR or DT_REG and the name is
 * not a mount point.  The mount table is
 * read after the listing: a mount that existed while getdents64 ran is
 * seen (a later one is "a mount over a cached name", doc/coherence.md, known limits). */
/* The session's shared listing of `shared`'s directory into a malloc'd
 * *ents (the raw listing's format: type byte, name, NUL): its length, with
 * *count names; negative if there is none (read the kernel's). */
static long shared_listing(const struct dcache_listing *shared, size_t max, char **ents,
			   size_t *count)
{
	size_t cap = 65536;
	char *b = malloc(cap);
	long n;

	if (!b)
		return -ENOMEM;
	n = inval_listing_get(shared, b, cap, max, count);
	if (n == -E2BIG && max < (16u << 20) / (NAME_MAX + 2) && cap < max * (NAME_MAX + 2)) {
		char *c = realloc(b, cap = max * (NAME_MAX + 2));

		if (c) {
			b = c;
			n = inval_listing_get(shared, b, cap, max, count);
		}
	}
	if (n < 0)
		free(b);
	else
		*ents = b;
	return n;
}

static long raw_listdir_typed(const char *path, const struct dcache_listing *shared, size_t max,
			      int (*add)(void *arg, const char *name, size_t len, unsigned char type),
			      void *arg)
{
	enum { BUF = 32768 };
	char *buf, *ents = NULL;
	size_t elen = 0, ecap = 0, scount;
	long n, count = 0, r = 0;
	struct mounts_below mb;
	int mounts_ok;
	int fd;

	/* A session's shared listing (doc/session.md, "Phase 2: shared
	 * entries"): the raw listing another process read, still valid; the
	 * mount check below is ours, made now, as after our own getdents64. */
	if (shared && (n = shared_listing(shared, max, &ents, &scount)) >= 0) {
		if (scount > max) {
			free(ents);
			return -E2BIG;
		}
		elen = (size_t)n;
		count = (long)scount;
		goto filter;
	}
	if (shared && shared->only_shared)
		return n; /* none shared (n < 0 here): the cache asked for no read */
	fd = listdir_open(path);
	if (fd < 0)
		return fd;
	buf = malloc(BUF);
	if (!buf) {
		syscall(SYS_close, fd);
		return -ENOMEM;
	}
	/* The listing is kept (type byte, name, NUL) until the mount table
	 * has been read. */
	while (r == 0 && (n = syscall(SYS_getdents64, fd, buf, BUF)) > 0) {
		for (long off = 0; off < n && r == 0;) {
			struct linux_dirent64_ *e = (struct linux_dirent64_ *)(buf + off);
			const char *nm = e->d_name;
			size_t l = strlen(nm);

			off += e->d_reclen;
			if (nm[0] == '.' && (!nm[1] || (nm[1] == '.' && !nm[2])))
				continue;
			if ((size_t)++count > max) {
				r = -E2BIG;
				break;
			}
			if (elen + l + 2 > ecap) {
				size_t cap = ecap ? ecap * 2 : 8192;
				char *b;

				while (cap < elen + l + 2)
					cap *= 2;
				b = realloc(ents, cap);
				if (!b) {
					r = -ENOMEM;
					break;
				}
				ents = b;
				ecap = cap;
			}
			ents[elen] = (char)e->d_type;
			memcpy(ents + elen + 1, nm, l + 1);
			elen += l + 2;
		}
	}
	if (r == 0 && n < 0)
		r = -errno;
	free(buf);
	syscall(SYS_close, fd);
	if (r == 0 && shared)
		inval_listing_put(shared, ents, elen, (size_t)count);
filter:
	if (r == 0) {
		mounts_ok = mountpoints_below(path, &mb) == 0;
		for (size_t off = 0; off < elen && r == 0;) {
			unsigned char t = (unsigned char)ents[off];
			const char *nm = ents + off + 1;
			size_t l = strlen(nm);

			off += l + 2;
			if ((t != DT_DIR && t != DT_REG) || !mounts_ok || is_listed_mount(&mb, nm))
				t = DT_UNKNOWN;
			r = add(arg, nm, l, t);
		}
		if (mounts_ok)
			free(mb.names);
	}
	free(ents);
	return r < 0 ? r : count;
}

/* Declared in preload.h. */
long preload_read_file_raw(const char *path, char *buf, size_t size)
{
	long n = 0, r;
	int fd;

	if (size == 0)
		return -1;
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (n < (long)size - 1 && (r = syscall(SYS_read, fd, buf + n, size - 1 - (size_t)n)) > 0)
		n += r;
	syscall(SYS_close, fd);
	buf[n] = '\0';
	return n;
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
static int ttl_enabled = 1;

/* A filesystem type's class (cache/dcache.h, DCACHE_FS_*), whatever
 * RCUWALK_TTL_MS says; 0 for a type not known here (mountinfo decides). */
static int fs_type_class(unsigned long type)
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
		return DCACHE_FS_LOCAL;
	case 0x65735546: /* fuse */
	case 0x6969:     /* nfs */
	case 0xFF534D42: /* cifs */
	case 0xFE534D42: /* smb2/3 */
	case 0x01021997: /* 9p */
	case 0x00c36400: /* ceph */
		return DCACHE_FS_TTL;
	default:
		return 0;
	}
}

/* What fs_cacheable() answers for a class: 1 cached, 2 cached with TTLs,
 * 0 passed through (a TTL filesystem with RCUWALK_TTL_MS=0 too). */
static int class_verdict(int cls)
{
	return cls == DCACHE_FS_LOCAL ? 1 : cls == DCACHE_FS_TTL && ttl_enabled ? 2 : 0;
}

static int fs_type_cacheable(unsigned long type)
{
	return class_verdict(fs_type_class(type));
}

/* Filesystems that others may change behind this kernel's back: cached with
 * TTLs (doc/coherence.md), or not at all when RCUWALK_TTL_MS=0. */
static int fs_name_ttl(const char *type)
{
	static const char *const ttl[] = { "fuse", "fuseblk", "nfs", "nfs4", "cifs", "smb3",
					   "9p", "ceph", "virtiofs", "afs" };

	for (size_t i = 0; i < sizeof(ttl) / sizeof(ttl[0]); i++)
		if (!strcmp(type, ttl[i]))
			return 1;
	return strncmp(type, "fuse.", 5) == 0; /* fuse.sshfs, fuse.bindfs, ... */
}

/*
 * The filesystem class of device `dev` by its type's name, from
 * /proc/self/mountinfo (statfs cannot tell devtmpfs from tmpfs: same f_type,
 * and devtmpfs sees every write to /dev/null as IN_MODIFY in /dev).
 * Returns a DCACHE_FS_* class, or 0 if not found (btrfs subvolumes report
 * anonymous devices).  Raw syscalls only: this runs in ops context.  The
 * fd lives only inside this call, like glibc's own transient fds: a host
 * thread that closes fds it does not own while other threads run can hit
 * it, as it can hit glibc's.  The long-lived inotify fd is guarded instead
 * (inval_fds.c).
 */
static int mountinfo_class(dev_t dev)
{
	static const char *const ok[] = { "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs",
					  "f2fs", "overlay", "zfs", "jfs", "reiserfs" };
	static char buf[1 << 16] DCACHE_COLD_BSS;
	char want[32];

	if (preload_read_file_raw("/proc/self/mountinfo", buf, sizeof(buf)) < 0)
		return 0;
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
				return DCACHE_FS_NONE;
			memcpy(type, sep + 3, len);
			type[len] = '\0';
			for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
				if (!strcmp(type, ok[i]))
					return DCACHE_FS_LOCAL;
			return fs_name_ttl(type) ? DCACHE_FS_TTL : DCACHE_FS_NONE;
		}
		line = end ? end + 1 : NULL;
	}
	return 0;
}

/* statx's answer as the kernel lays it out (include/uapi/linux/stat.h):
 * glibc's own struct statx has no stx_mnt_id where <linux/stat.h> is not
 * installed.  STATX_MNT_ID_UNIQUE (Linux 6.8): a mount ID the kernel never
 * gives to another mount; an older kernel leaves the bit out of mask. */
struct kstatx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, spare0;
	uint64_t ino, size, blocks, attributes_mask;
	uint64_t times[8];
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t mnt_id;
	uint64_t spare[13];
};
_Static_assert(offsetof(struct kstatx, mnt_id) == 144 && sizeof(struct kstatx) == 256,
	       "struct statx's layout");
#define KSTATX_MNT_ID_UNIQUE 0x4000u

/* Unique mount IDs: -1 not asked yet, 0 this kernel has none, 1 it has. */
static int unique_ids = -1;

/* The unique mount ID of what `path` (dirfd AT_FDCWD; or fd itself, path
 * "") names now, if its device is `dev`; else 0.  AT_STATX_DONT_SYNC: the
 * device and the mount are the kernel's own, no FUSE or NFS round trip. */
static uint64_t mount_id(int fd, const char *path, dev_t dev)
{
	int flags = AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | (*path ? 0 : AT_EMPTY_PATH);
	struct kstatx sx;

	if (!unique_ids)
		return 0;
	if (syscall(SYS_statx, fd, path, flags, STATX_TYPE | KSTATX_MNT_ID_UNIQUE, &sx) != 0) {
		if (errno == ENOSYS || errno == EPERM)
			unique_ids = 0; /* no statx here (old seccomp profiles) */
		return 0;
	}
	unique_ids = (sx.mask & KSTATX_MNT_ID_UNIQUE) != 0;
	return unique_ids && makedev(sx.dev_major, sx.dev_minor) == dev ? sx.mnt_id : 0;
}

/*
 * The class of device `dev` from statfs(2) of `path` (a DCACHE_FS_*), when
 * the type alone decides; 0 when mountinfo must: tmpfs (devtmpfs has the
 * same f_type), and every magic that fs_type_class() does not know.  The
 * object is opened with O_PATH and its st_dev checked, so a path that
 * changed since the caller's lstat cannot lend its filesystem's class to
 * `dev`; the fd holds that mount (so dev's superblock) until mountinfo has
 * answered too, and *id is its unique mount ID (0 if unknown): the class
 * found is that mount's.  -1 if the object cannot be asked (no such path,
 * or another device there now).
 *
 * Why not mountinfo first: reading /proc/self/mountinfo costs the kernel
 * about 50 us here (show_mountinfo), once per process and device, and every
 * process pays it at its first lookup ("/"); these four syscalls cost a few us.
 */
static int statfs_class(const char *path, dev_t dev, uint64_t *id)
{
	struct statfs sfs;
	struct stat st;
	int c = -1, fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	*id = 0;
	if (fd < 0)
		return -1;
	/* The device and the mount of the fd: statx where the kernel has unique
	 * mount IDs, else (or refused: old seccomp profiles) fstat. */
	if ((*id = mount_id(fd, "", dev)) != 0 ||
	    (syscall(SYS_fstat, fd, &st) == 0 && st.st_dev == dev)) {
		c = syscall(SYS_fstatfs, fd, &sfs) == 0 && (unsigned long)sfs.f_type != 0x01021994UL
			    ? fs_type_class((unsigned long)sfs.f_type)
			    : 0;
		/* An unknown magic may still be a TTL filesystem by name (afs, ...):
		 * mountinfo decides those, as before. */
		if (c == 0)
			c = mountinfo_class(dev);
	}
	syscall(SYS_close, fd);
	return c;
}

#define FS_TABLE 64
static struct {
	dev_t dev;
	int verdict;
} fs_table[FS_TABLE];
static int fs_used;

void preload_mounts_changed(void)
{
	__atomic_fetch_add(&mounts_gen, 1, __ATOMIC_RELEASE);
}

/*
 * ops->fs_cacheable: under the dcache writer mutex.  Per device, once per
 * mount table: this process's table; else, in a session, the class another
 * process found for the mount `path` is on (by unique mount ID, one statx:
 * inval_fs_class_get; doc/session.md, "Filesystem classes by mount"); else
 * the kernel's statfs or mountinfo, offered to the session in turn.  The
 * final statfs(path) fallback is not offered: nothing ties it to the mount.
 */
static int fs_cacheable(const char *path, dev_t dev)
{
	unsigned int g = __atomic_load_n(&mounts_gen, __ATOMIC_ACQUIRE);
	struct statfs sfs;
	uint64_t id = 0;
	int v, c;

	if (g != mounts_seen) {
		mounts_seen = g;
		fs_used = 0;
	}

	for (int i = 0; i < fs_used; i++)
		if (fs_table[i].dev == dev)
			return fs_table[i].verdict;
	if (inval_fs_classes_on() && (id = mount_id(AT_FDCWD, path, dev)) != 0 &&
	    (c = inval_fs_class_get(id)) != 0) {
		v = class_verdict(c);
	} else if ((c = statfs_class(path, dev, &id)) > 0) {
		v = class_verdict(c);
		if (id)
			inval_fs_class_put(id, c);
	} else if (c < 0 && (c = mountinfo_class(dev)) > 0) {
		v = class_verdict(c); /* by device alone: not offered */
	} else {
		v = syscall(SYS_statfs, path, &sfs) == 0 && fs_type_cacheable((unsigned long)sfs.f_type);
	}
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
	.kernel_statx = raw_statx,
	.kernel_access = raw_access,
	.kernel_getcwd = raw_getcwd,
	.fs_cacheable = fs_cacheable,
	.kernel_listdir_typed = raw_listdir_typed,
};

/* Canonicalise one directory with raw syscalls (the shim's own realpath is
 * not callable from its initialisation): the kernel's name of an O_PATH fd. */
static int canonical_dir(const char *dir, char *out, size_t size)
{
	char link[64];
	long n;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = syscall(SYS_readlinkat, AT_FDCWD, link, out, size - 1);
	syscall(SYS_close, fd);
	if (n <= 0 || out[0] != '/')
		return -1;
	out[n] = '\0';
	return 0;
}

/* Split "A:B:..." into canonical directories in buf; returns how many, or
 * -1 if the list cannot be honoured whole: more than DCACHE_MAX_EXCLUDES
 * directories, or one whose name is PATH_MAX long or more.  A directory that
 * does not exist (yet) is kept as written if absolute; a relative one that
 * does not exist from here names nothing here and is left out. */
/* noinline, as say_exclude_refused: their PATH_MAX buffers kept out of
 * preload_init()'s frame (clang inlined them: a 9 KiB frame, and a page of
 * stack a process that looks nothing up never touched otherwise). */
DCACHE_START_TEXT __attribute__((noinline)) static int parse_excludes(const char *spec, char **out,
								      char *buf, size_t size)
{
	unsigned int n = 0;
	size_t used = 0;

	while (*spec) {
		size_t len = strcspn(spec, ":");
		char dir[PATH_MAX];

		if (len >= sizeof(dir) ||
		    (len > 0 && (n == DCACHE_MAX_EXCLUDES || used + PATH_MAX > size)))
			return -1;
		if (len > 0) {
			memcpy(dir, spec, len);
			dir[len] = '\0';
			if (canonical_dir(dir, buf + used, PATH_MAX) == 0 || dir[0] == '/') {
				if (buf[used] != '/')
					strcpy(buf + used, dir);
				out[n++] = buf + used;
				used += strlen(buf + used) + 1;
			}
		}
		spec += len;
		if (*spec == ':')
			spec++;
	}
	return (int)n;
}

/*
 * Say, once per process and in a file a user can find, that RCUWALK_EXCLUDE
 * could not be honoured and nothing is cached (the library never writes to the
 * program's stderr).  The file is rcuwalk-config.log in the user's own
 * directory (preload_private_dir: $XDG_RUNTIME_DIR if ours, else
 * $TMPDIR/rcuwalk-<euid>, 0700), created 0600 with O_EXCL | O_NOFOLLOW or
 * reopened only as a regular file of ours (preload_open_append): never a
 * name another user could plant in /tmp.  Each process appends its one line
 * with one O_APPEND write, while the file is under 64 KiB, so a build of
 * thousands of processes cannot fill a disk.  Raw syscalls: this runs inside
 * preload_init.
 */
DCACHE_START_TEXT __attribute__((noinline)) static void say_exclude_refused(const char *spec)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], line[512];
	struct stat st;
	int fd, n;

	if (preload_private_dir(dir, sizeof(dir)) != 0)
		return;
	snprintf(path, sizeof(path), "%s/rcuwalk-config.log", dir);
	fd = preload_open_append(path, 1);
	if (fd < 0)
		return;
	n = snprintf(line, sizeof(line),
		     "rcuwalk[%ld]: RCUWALK_EXCLUDE=%.200s%s: more than %d directories, or one "
		     "name too long: nothing is cached, every call passes through\n",
		     (long)getpid(), spec, strlen(spec) > 200 ? "..." : "", DCACHE_MAX_EXCLUDES);
	if (syscall(SYS_fstat, fd, &st) == 0 && st.st_size < 65536 && n > 0)
		(void)syscall(SYS_write, fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	syscall(SYS_close, fd);
}

/* RCUWALK_WARMUP's default: a time, in microseconds (see preload_init).
 * The rent-or-buy rule's price: what starting the cache costs a process,
 * measured by its own records (`--stats`: start_ns + fill_ns per start,
 * ~0.4 ms in a configure script's compiles, ~1.4 ms in a GLib TU's), not
 * the ~0.3 ms of 84c74ff's estimate (doc/benchmarks.md, "Stop 31"). */
#define PRELOAD_WARMUP_DEFAULT_US 1000

/* RCUWALK_DIR_RENT's default: the lookups of names in a directory that pass
 * through before this process watches it (cache/dcache_populate.c,
 * "Directory rent"), about what buying it costs in raw lookups: a watch, an
 * lstat or two, a listing (open, two getdents, close).  8 did no better at
 * scale, 16 cost the demo build 2% (doc/benchmarks-by-stop.md, "Stop 43"). */
#define PRELOAD_DIR_RENT_DEFAULT 4

/* Set by preload_init(); read by every wrapper (shim.c).  On the start-up
 * data page: every process writes them. */
int preload_enabled DCACHE_START_DATA;
unsigned long preload_warmup DCACHE_START_DATA;
unsigned long long preload_warmup_ns DCACHE_START_DATA;
int preload_dir_rent_given DCACHE_START_DATA;
uint64_t preload_tsc_mult DCACHE_START_DATA;
int preload_attrs_faked DCACHE_START_DATA;
int preload_strict DCACHE_START_DATA;

/*
 * The environment the constructor reads: one pass over environ that gives,
 * for each name below, getenv()'s answer (the value of its first NAME=
 * entry; NULL if none).  A getenv() per name made 21 passes (~6,000
 * instructions with 40 variables, plus getenv's lazy binding) in every
 * process, most of which look nothing up.  The names lie on the start-up
 * data page (DCACHE_START_RODATA) and the scan in .text.startup: no page of
 * .rodata is touched for them.  docs_consistency.sh reads the RCUWALK_
 * names from this table (`] = "RCUWALK_...`).
 */
enum {
	ENV_DISABLE, ENV_EXCLUDE, ENV_STATS, ENV_VERIFY, ENV_VERIFY_LOG, ENV_TEST_CORRUPT,
	ENV_MAX_MB, ENV_COMPLETE, ENV_COMPLETE_MAX, ENV_RACY_MS, ENV_TTL_MS, ENV_NEG_TTL_MS,
	ENV_NO_NEGATIVE, ENV_SCRATCH_FULL, ENV_STRICT, ENV_WATCH_BUDGET, ENV_WARMUP,
	ENV_NAME_INDEX, ENV_SESSION, ENV_SESSION_FDS, ENV_TSC_KHZ, ENV_DIR_RENT,
	ENV_RCUWALK_N, /* the RCUWALK_ names: those above */
	ENV_LD_PRELOAD = ENV_RCUWALK_N, ENV_FAKEROOTKEY, ENV_PSEUDO_PREFIX,
	ENV_N
};
static const char env_names[ENV_N][24] DCACHE_START_RODATA = {
	[ENV_DISABLE] = "RCUWALK_DISABLE",
	[ENV_EXCLUDE] = "RCUWALK_EXCLUDE",
	[ENV_STATS] = "RCUWALK_STATS",
	[ENV_VERIFY] = "RCUWALK_VERIFY",
	[ENV_VERIFY_LOG] = "RCUWALK_VERIFY_LOG",
	[ENV_TEST_CORRUPT] = "RCUWALK_TEST_CORRUPT",
	[ENV_MAX_MB] = "RCUWALK_MAX_MB",
	[ENV_COMPLETE] = "RCUWALK_COMPLETE",
	[ENV_COMPLETE_MAX] = "RCUWALK_COMPLETE_MAX",
	[ENV_RACY_MS] = "RCUWALK_RACY_MS",
	[ENV_TTL_MS] = "RCUWALK_TTL_MS",
	[ENV_NEG_TTL_MS] = "RCUWALK_NEG_TTL_MS",
	[ENV_NO_NEGATIVE] = "RCUWALK_NO_NEGATIVE",
	[ENV_SCRATCH_FULL] = "RCUWALK_SCRATCH_FULL",
	[ENV_STRICT] = "RCUWALK_STRICT",
	[ENV_WATCH_BUDGET] = "RCUWALK_WATCH_BUDGET",
	[ENV_WARMUP] = "RCUWALK_WARMUP",
	[ENV_NAME_INDEX] = "RCUWALK_NAME_INDEX",
	[ENV_SESSION] = "RCUWALK_SESSION",
	[ENV_SESSION_FDS] = "RCUWALK_SESSION_FDS",
	[ENV_TSC_KHZ] = "RCUWALK_TSC_KHZ",
	[ENV_DIR_RENT] = "RCUWALK_DIR_RENT",
	[ENV_LD_PRELOAD] = "LD_PRELOAD",
	[ENV_FAKEROOTKEY] = "FAKEROOTKEY",
	[ENV_PSEUDO_PREFIX] = "PSEUDO_PREFIX",
};
/* The first letters of the names above, as bits from 'F'. */
#define ENV_FIRST_LETTERS                                                            \
	((1u << ('F' - 'F')) | (1u << ('L' - 'F')) | (1u << ('P' - 'F')) | (1u << ('R' - 'F')))
static const char lib_fakeroot[] DCACHE_START_RODATA = "libfakeroot";
static const char lib_pseudo[] DCACHE_START_RODATA = "libpseudo";

/* e's value if e is "NAME=value", from name's byte `from` on (the bytes
 * before are known to agree); else NULL. */
DCACHE_START_TEXT static const char *env_value(const char *e, const char *name, size_t from)
{
	size_t i = from;

	for (; name[i]; i++)
		if (e[i] != name[i])
			return NULL;
	return e[i] == '=' ? e + i + 1 : NULL;
}

DCACHE_START_TEXT static void read_env(const char *val[ENV_N])
{
	char **ep = environ;

	for (int i = 0; i < ENV_N; i++)
		val[i] = NULL;
	for (; ep && *ep; ep++) {
		const char *e = *ep, *v;
		size_t from = 0;
		int i, end;

		/* The first letter tested as a bit in a mask, not by a switch
		 * (clang made one of the tests below a jump table in .rodata:
		 * a page fault of its own). */
		unsigned int c = (unsigned char)e[0] - 'F';

		if (c > 'R' - 'F' || !((1u << c) & ENV_FIRST_LETTERS))
			continue;
		if (e[0] == 'R') {
			/* "RCUWALK_", every such name's head, compared once */
			while (from < 8 && e[from] == env_names[0][from])
				from++;
			if (from < 8)
				continue;
			i = 0;
			end = ENV_RCUWALK_N;
		} else {
			i = ENV_RCUWALK_N; /* LD_PRELOAD, FAKEROOTKEY, PSEUDO_PREFIX */
			end = ENV_N;
		}
		for (; i < end; i++)
			if ((v = env_value(e, env_names[i], from))) {
				if (!val[i])
					val[i] = v; /* the first one, as getenv() */
				break;
			}
	}
}

/* A variable "set": non-empty and not "0". */
DCACHE_START_TEXT static int env_on(const char *s)
{
	return s && *s && !(s[0] == '0' && !s[1]);
}

/* strstr(hay, needle) != NULL. */
DCACHE_START_TEXT static int has(const char *hay, const char *needle)
{
	for (; *hay; hay++) {
		size_t i = 0;

		while (needle[i] && hay[i] == needle[i])
			i++;
		if (!needle[i])
			return 1;
	}
	return !*needle;
}

/* fakeroot and pseudo fake ownership and modes in the process (and their
 * daemon), not in the kernel, and tell inotify nothing about it. */
DCACHE_START_TEXT static int attrs_faked_here(const char *const env[ENV_N])
{
	const char *p = env[ENV_LD_PRELOAD];

	return env[ENV_FAKEROOTKEY] || env[ENV_PSEUDO_PREFIX] ||
	       (p && (has(p, lib_fakeroot) || has(p, lib_pseudo)));
}

/* RCUWALK_TSC_KHZ's value as preload_tsc_mult (preload.h): ns per tick
 * times 2^32, from the rate in kHz, which must be digits only, within
 * PRELOAD_TSC_KHZ_MIN..MAX; else 0.  By hand: strtoul's page of libc would
 * be a fault of its own in every process the launcher starts.  x86-64 only. */
DCACHE_START_TEXT static uint64_t tsc_mult(const char *s)
{
#if defined(__x86_64__)
	uint64_t khz = 0;

	if (!s || !*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || khz > PRELOAD_TSC_KHZ_MAX)
			return 0;
		khz = khz * 10 + (uint64_t)(*s - '0');
	}
	if (khz < PRELOAD_TSC_KHZ_MIN || khz > PRELOAD_TSC_KHZ_MAX)
		return 0;
	return (1000000ULL << 32) / khz;
#else
	(void)s;
	return 0;
#endif
}

DCACHE_START_TEXT void preload_init(void)
{
	const char *env[ENV_N], *s;
	size_t max_bytes = 0;
	unsigned int probes = 2, max_entries = 10000, nexclude = 0, rent = PRELOAD_DIR_RENT_DEFAULT;
	long long racy_ns = 2000000000LL;
	unsigned long warmup = 0;
	unsigned long long warmup_ns = PRELOAD_WARMUP_DEFAULT_US * 1000ULL;
	unsigned long ttl_ms = 1000, neg_ttl_ms;
	int no_negative, scratch;
	int nexcl = 0;
	char *excludes[DCACHE_MAX_EXCLUDES];
	static char excl_buf[DCACHE_MAX_EXCLUDES * PATH_MAX] DCACHE_COLD_BSS;

	read_env(env);
	if (env_on(env[ENV_DISABLE]))
		return;
	inval_session_env(env[ENV_SESSION], env[ENV_SESSION_FDS]);
	/* RCUWALK_EXCLUDE=DIR[:DIR...]: what lies below DIR passes through (at
	 * most DCACHE_MAX_EXCLUDES directories).  An exclusion the cache cannot
	 * honour whole is a correctness escape hatch left open: then nothing is
	 * cached (the launcher refuses such a list with status 125 instead). */
	s = env[ENV_EXCLUDE];
	if (s && *s) {
		nexcl = parse_excludes(s, excludes, excl_buf, sizeof(excl_buf));
		if (nexcl < 0) {
			say_exclude_refused(s);
			return;
		}
		nexclude = (unsigned int)nexcl;
	}
	preload_attrs_faked = attrs_faked_here(env);
	preload_stats_init(env[ENV_STATS]);
	/* RCUWALK_VERIFY=1: every cached answer is checked against the kernel's
	 * (verify.c); RCUWALK_VERIFY_LOG=FILE: where mismatches are logged. */
	preload_verify_init(env[ENV_VERIFY], env[ENV_VERIFY_LOG], env[ENV_TEST_CORRUPT]);
	s = env[ENV_MAX_MB];
	if (s && *s) {
		unsigned long mb = strtoul(s, NULL, 10);

		if (mb > 0 && mb < (1UL << 20))
			max_bytes = mb << 20;
	}
	/* Complete directories: RCUWALK_COMPLETE=N lists a directory after N
	 * absent names (default 2, 0 = never); RCUWALK_COMPLETE_MAX=N entries
	 * at most (default 10000). */
	s = env[ENV_COMPLETE];
	if (s && *s)
		probes = (unsigned int)strtoul(s, NULL, 10);
	s = env[ENV_COMPLETE_MAX];
	if (s && *s)
		max_entries = (unsigned int)strtoul(s, NULL, 10);
	/* RCUWALK_DIR_RENT=N: a directory is watched at the (N+1)-th lookup of
	 * a name in it; the first N pass through (cache/dcache_populate.c,
	 * "Directory rent"; 0 = at the first).  At most 65535. */
	s = env[ENV_DIR_RENT];
	if (s && *s >= '0' && *s <= '9') {
		unsigned long n = strtoul(s, NULL, 10);

		rent = n > 65535 ? 65535 : (unsigned int)n;
		preload_dir_rent_given = 1;
	}
	/* RCUWALK_RACY_MS: attributes of files changed this recently are not
	 * kept (default 2000, 0 = off).  RCUWALK_NO_NEGATIVE=1: absent names are
	 * never cached. */
	s = env[ENV_RACY_MS];
	if (s && *s)
		racy_ns = (long long)strtoul(s, NULL, 10) * 1000000LL;
	/* RCUWALK_TTL_MS: names and attributes on NFS/FUSE/CIFS/9p live this
	 * long (default 1000; 0 = those filesystems pass through);
	 * RCUWALK_NEG_TTL_MS: absent names there (default = the TTL; 0 = kernel
	 * parity with libfuse's negative_timeout=0). */
	s = env[ENV_TTL_MS];
	if (s && *s)
		ttl_ms = strtoul(s, NULL, 10);
	neg_ttl_ms = ttl_ms;
	s = env[ENV_NEG_TTL_MS];
	if (s && *s)
		neg_ttl_ms = strtoul(s, NULL, 10);
	ttl_enabled = ttl_ms > 0;
	no_negative = env_on(env[ENV_NO_NEGATIVE]);
	/* RCUWALK_SCRATCH_FULL=1: sticky directories writable by all (/tmp)
	 * are watched in full like any other (dcache_set_scratch). */
	scratch = !env_on(env[ENV_SCRATCH_FULL]);
	/* RCUWALK_STRICT=1: before every cached answer, one poll() asks
	 * whether inotify events or a mount table change are pending, and
	 * applies them first.  RCUWALK_WATCH_BUDGET=N: at most N directory
	 * watches (default a quarter of the user's watch limit here:
	 * invalidate/watch_limit.h; 0 = only the kernel's limit). */
	preload_strict = env_on(env[ENV_STRICT]);
	s = env[ENV_WATCH_BUDGET];
	if (s && *s >= '0' && *s <= '9')
		inval_set_watch_budget((long)strtoul(s, NULL, 10));
	/* The warm-up (preload.h): a process image's first lookups pass
	 * through and start nothing.  RCUWALK_WARMUP=N: its first N lookups;
	 * =Tus (or =Tms): until their real calls have taken T in all, the
	 * default being PRELOAD_WARMUP_DEFAULT_US; 0: the cache from the
	 * first lookup.  Why a time: starting the cache costs a process a
	 * fixed ~0.3 ms (liburcu loaded, the session attached or an inotify
	 * instance made, the first watches; `gcc --version` in a session:
	 * 1.57 ms against 1.24 ms without it), which a few dozen lookups on
	 * a local disk (~1 us each) never earn back, and most processes of a
	 * configure script or a build (drivers, `as`, sed) make no more.  Like
	 * renting until the rent paid equals the price: lookups pass through
	 * until they have cost about what starting the cache costs, then the
	 * cache starts.  cc1 (thousands of lookups) starts it after ~300 of
	 * them; on FUSE or NFS, where one failed lookup takes 20-50 us, after
	 * the first few.  A process then pays at most twice what the better
	 * of the two choices would have cost it. */
	s = env[ENV_WARMUP];
	if (s && *s >= '0' && *s <= '9') {
		char *e;
		unsigned long long n = strtoull(s, &e, 10);

		if (!strcmp(e, "us") || !strcmp(e, "ms")) {
			warmup = 0;
			warmup_ns = n * (e[0] == 'u' ? 1000ULL : 1000000ULL);
		} else if (!*e) {
			warmup = (unsigned long)n;
			warmup_ns = 0;
		}
	}
	dcache_urcu_set_loader(preload_load_urcu);
	inval_set_mounts_hook(preload_mounts_changed);
	/* No reader thread for a process's first 100 ms: most processes of a
	 * build (compiler driver, cc1, as) exit before, and a thread costs them
	 * ~45 us to create plus ~100-300 us at exit, when the parent's wait()
	 * waits for every thread to be scheduled and die (measured with a
	 * one-stat program: exit to reaped 532 us median, 2.6 ms p90, against
	 * 247 us without our threads).  inval_sync() applies other processes'
	 * events itself meanwhile, once per clock tick. */
	inval_set_reader_delay(100);
	inval_fill_ops(&ops);
	ops.sole_thread = preload_sole_thread;
	dcache_init(&ops, max_bytes);
	if (dcache_set_policy(racy_ns, no_negative, (const char *const *)excludes, nexclude) != 0)
		return; /* an exclusion we could not honour: stay pass-through */
	dcache_set_completion(probes, max_entries);
	dcache_set_dir_rent(rent);
	dcache_set_scratch(scratch);
	/* RCUWALK_NAME_INDEX=1: whole names get path-index entries of their
	 * own, at their second walk.  Off by default: directory prefixes only
	 * (dcache_set_index_names; doc/benchmarks.md, "Stop 32"). */
	dcache_set_index_names(env_on(env[ENV_NAME_INDEX]));
	dcache_set_ttl((uint64_t)ttl_ms * 1000000ULL, (uint64_t)neg_ttl_ms * 1000000ULL);
	preload_warmup = warmup;
	preload_warmup_ns = warmup_ns;
	/* The SIGSEGV/SIGBUS handler that makes a bad pointer the kernel's
	 * EFAULT (fault.c), before any wrapper reads the program's memory. */
	preload_fault_init();
	/* RCUWALK_TSC_KHZ (set by the launcher: rcuwalk.c, "The TSC's rate"):
	 * the warm-up times its real calls by the TSC at that rate, not by
	 * CLOCK_MONOTONIC (shim.h, preload_warm_ns1), so that a process that
	 * reads no clock of its own touches no page of the vDSO (two page
	 * faults: 26-50 us a process on this project's VM).  Only with the
	 * fault handler in place (a thread may turn the TSC off: fault.c,
	 * preload_rdtsc_guarded), and before the warm-up can time anything
	 * (preload_enabled, below). */
	if (__atomic_load_n(&preload_uaccess_ready, __ATOMIC_ACQUIRE))
		preload_tsc_mult = tsc_mult(env[ENV_TSC_KHZ]);
	__atomic_store_n(&preload_enabled, warmup || warmup_ns ? PRELOAD_WARMUP : PRELOAD_LOAD,
			 __ATOMIC_RELEASE);
}
