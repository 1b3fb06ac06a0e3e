/* SPDX-License-Identifier: MIT */
/*
 * walk_fuzz.c - libFuzzer target: arbitrary bytes as a path and flags for
 * dcache_lookup(), compared with the raw system call (issue 5, part 2).
 *
 * Input: byte 0 chooses the question and the state, byte 1 the access mode,
 * the rest (up to the first NUL) is the path:
 *   byte0 & 3      0 stat, 1 access, 2 access with AT_EACCESS, 3 open (negative answers)
 *   byte0 & 4      do not follow a final symlink (lstat, AT_SYMLINK_NOFOLLOW, O_NOFOLLOW)
 *   byte0 & 8      open: O_DIRECTORY
 *   byte0 >> 4 & 3 the working directory (four fixed ones; chdir + dcache_cwd_changed)
 *   byte0 & 0x40   empty the cache first (dcache_invalidate_all)
 *   byte0 & 0x80   ask twice (the second answer comes from what the first learned)
 *   byte1 & 7      access(2) mode; byte1 & 8: byte1 itself (bogus bits: must pass)
 * The cache may answer DCACHE_PASS; any other answer must equal the kernel's:
 * return value and errno, and for stat every field of the contract but atime.
 * A mismatch prints both answers and aborts (libFuzzer saves the input).
 *
 * The lookups run over a fixed tree in a private tmpfs that becomes the root
 * of the process (mount namespace + chroot), so that absolute paths, ".." at
 * "/" and symlinks to "/" stay inside it and nothing else changes it.  /usr
 * is bound read-only inside (a large real tree; the symbolizer lives there)
 * and /proc is mounted (a filesystem the cache must pass through).  The
 * directories of the path arguments (corpus, -dict=, -artifact_prefix=...)
 * are bound at the same absolute paths, relative ones made absolute first.
 * Started as root, the lookups run with uid/gid nobody (saved ids root, so
 * libFuzzer still writes its files as root): permission bits matter.
 * RCUWALK_FUZZ_UID=0 keeps root.  Without root, a user namespace maps the
 * caller to root; if neither works the target exits 77 (skip).
 *
 * Build: CC=clang cmake -DRCUWALK_FUZZ=ON; run: rcuwalk_walk_fuzz [libFuzzer flags] [corpus dirs].
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "dcache.h"
#include "inval.h"
#include "../kernel_again.h"
#include "../unit/raw_ops.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOBODY 65534
#define MAX_INPUT_PATH (PATH_MAX + 256)

/* ------------------------------------------------------------------------ */
/* Kernel ops: raw system calls, as preload/config.c                         */

static int op_fs_cacheable(const char *path, dev_t dev)
{
	struct statfs sfs;

	(void)dev;
	if (syscall(SYS_statfs, path, &sfs) != 0)
		return 0;
	switch ((unsigned long)sfs.f_type) {
	case 0xEF53:     /* ext2/3/4 */
	case 0x58465342: /* xfs */
	case 0x9123683E: /* btrfs */
	case 0x01021994: /* tmpfs */
		return 1;
	default:
		return 0;
	}
}

static struct dcache_ops g_ops = {
	RAW_KERNEL_OPS,
	.fs_cacheable = op_fs_cacheable,
};

/* ------------------------------------------------------------------------ */
/* Setup                                                                     */

static void fail(const char *what)
{
	fprintf(stderr, "walk_fuzz: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void skip(const char *what)
{
	fprintf(stderr, "walk_fuzz: cannot isolate the tree (%s: %s); skipping\n", what, strerror(errno));
	exit(77);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		fail(path);
	close(fd);
}

static void mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *s = buf + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(buf, mode);
			*s = '/';
		}
	}
	mkdir(buf, mode);
}

static char g_root[64];
static bool g_as_nobody;
static gid_t g_groups[256];
static int g_ngroups;

/* Bind directory `dir` (absolute) at the same path below the new root. */
static void bind_dir(const char *dir, bool ro)
{
	char dst[PATH_MAX + 64];
	struct stat st;

	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return;
	snprintf(dst, sizeof(dst), "%s%s", g_root, dir);
	mkdir_p(dst, 0755);
	if (mount(dir, dst, NULL, MS_BIND | MS_REC, NULL) != 0)
		fail("bind mount");
	if (ro && mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC, NULL) != 0)
		fail("read-only remount");
}

/* An argument naming a file or directory libFuzzer will use: make it absolute
 * and bind its directory (the directory itself for corpus dirs). */
static char *absolutize_and_bind(const char *arg, const char *prefix)
{
	char abs[PATH_MAX], cwd[PATH_MAX], dir[PATH_MAX], *out;
	const char *p = arg + strlen(prefix);
	struct stat st;

	if (!*p)
		return NULL;
	if (*p == '/')
		snprintf(abs, sizeof(abs), "%s", p);
	else if (getcwd(cwd, sizeof(cwd)))
		snprintf(abs, sizeof(abs), "%s/%s", cwd, p);
	else
		fail("getcwd");
	if (stat(abs, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(dir, sizeof(dir), "%s", abs);
	} else {
		/* a file, or an artifact prefix: its directory */
		snprintf(dir, sizeof(dir), "%s", abs);
		*strrchr(dir, '/') = '\0';
		if (!*dir)
			snprintf(dir, sizeof(dir), "/");
	}
	if (strcmp(dir, "/") != 0)
		bind_dir(dir, false);
	if (asprintf(&out, "%s%s", prefix, abs) < 0)
		fail("asprintf");
	return out;
}

static void make_tree(void)
{
	char p[PATH_MAX];
	char name255[256];

	/* "/" is the tmpfs: the tree's top level */
	mkdir("/a", 0755);
	{
		static const char *const dirs[] = { "/a/b", "/a/b/c", "/a/b/c/d", "/a/b/c/d/e", "/a/empty",
						     "/a/chain", "/d", "/d/sub", "/d/sub/deeper" };

		for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
			if (mkdir(dirs[i], 0755) != 0)
				fail(dirs[i]);
	}
	{
		static const char *const files[] = { "/a/f", "/a/b/c/d/e/leaf", "/d/file", "/a/hl1" };

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			int fd = open(files[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

			if (fd < 0 || write(fd, "data\n", 5) != 5)
				fail(files[i]);
			close(fd);
		}
	}
	if (link("/a/hl1", "/a/hl2") != 0)
		fail("link");
	{
		int fd = open("/a/x", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);

		if (fd < 0)
			fail("/a/x");
		close(fd);
	}
	if (mkfifo("/a/fifo", 0644) != 0)
		fail("mkfifo");
	/* permissions: no access, read without search, search without read,
	 * owned by nobody, group nobody */
	mkdir("/a/noperm", 0755);
	mkdir("/a/noperm/inner", 0755);
	close(open("/a/noperm/inner/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	mkdir("/a/nosearch", 0755);
	close(open("/a/nosearch/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	mkdir("/a/searchonly", 0755);
	close(open("/a/searchonly/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	close(open("/a/searchonly/pub", O_WRONLY | O_CREAT | O_CLOEXEC, 0666));
	mkdir("/a/mine", 0700);
	close(open("/a/mine/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0640));
	mkdir("/a/grp", 0750);
	close(open("/a/grp/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0460));
	/* (in a user namespace only our own id is mapped: no other owners) */
	if ((chown("/a/mine", NOBODY, NOBODY) != 0 || chown("/a/mine/file", NOBODY, 0) != 0 ||
	     chown("/a/grp", 0, NOBODY) != 0 || chown("/a/grp/file", 0, NOBODY) != 0) &&
	    errno != EINVAL)
		fail("chown");
	chmod("/a/noperm", 0000);
	chmod("/a/nosearch", 0644);
	chmod("/a/searchonly", 0711);
	chmod("/a/searchonly/pub", 0666);
	/* symlinks: up, self, absolute, to "/", dangling, loops, trailing slash */
	static const char *const links[][2] = {
		{ "..", "/a/l_up" }, { ".", "/a/l_self" }, { "f", "/a/l_f" }, { "f/", "/a/l_fslash" },
		{ "/a/b", "/a/l_abs" }, { "/", "/a/l_root" }, { "nosuch", "/a/l_dang" },
		{ "nosuch/x", "/a/l_dangdir" }, { "l_loop2", "/a/l_loop1" }, { "l_loop1", "/a/l_loop2" },
		{ "l_selfloop", "/a/l_selfloop" }, { "../..", "/a/l_dotdot" }, { "b/c/d/e", "/a/l_deep" },
		{ "b/c/d/e/..", "/a/l_deepup" }, { "noperm/inner", "/a/l_noperm" },
		{ "/proc/self", "/a/l_proc" }, { "/usr/include", "/a/l_usr" }, { "fifo", "/a/l_fifo" },
		{ "/a/l_up/l_up/a", "/a/l_upa" }, { "x/", "/a/l_xslash" }, { "hl2", "/a/l_hl" },
		{ "../a/l_deep/../../..", "/d/l_back" }, { "sub/deeper/../..", "/d/l_sub" },
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlink(links[i][0], links[i][1]) != 0)
			fail(links[i][1]);
	/* a chain of 42 symlinks: c0 needs 42 follows (ELOOP), c2 exactly 40 */
	for (int i = 0; i < 42; i++) {
		char target[32];

		if (i < 41)
			snprintf(target, sizeof(target), "c%d", i + 1);
		else
			snprintf(target, sizeof(target), "../f");
		snprintf(p, sizeof(p), "/a/chain/c%d", i);
		if (symlink(target, p) != 0)
			fail(p);
	}
	memset(name255, 'n', 255);
	name255[255] = '\0';
	snprintf(p, sizeof(p), "/a/%s", name255);
	if (mkdir(p, 0755) != 0)
		fail("255-character name");
}

static void isolate(int *argc, char ***argv)
{
	bool root = geteuid() == 0;
	uid_t uid = getuid();
	gid_t gid = getgid();
	char **nargv;
	const char *env = getenv("RCUWALK_FUZZ_UID");

	snprintf(g_root, sizeof(g_root), "/tmp/rcuwalk-walkfuzz-XXXXXX");
	if (!mkdtemp(g_root))
		fail("mkdtemp");
	/* The mount point stays in the real /tmp, out of reach after chroot: a
	 * child left in this mount namespace removes it when we are gone. */
	{
		int fds[2];
		pid_t pid;

		if (pipe(fds) != 0)
			fail("pipe");
		pid = fork();
		if (pid < 0)
			fail("fork");
		if (pid == 0) {
			char c;

			close(fds[1]);
			while (read(fds[0], &c, 1) != 0 && errno == EINTR)
				;
			rmdir(g_root);
			_exit(0);
		}
		close(fds[0]); /* fds[1] stays open (not close-on-exec) until we exit */
	}
	if (unshare(root ? CLONE_NEWNS : CLONE_NEWNS | CLONE_NEWUSER) != 0)
		skip("unshare");
	if (!root) {
		char map[64];
		int fd;

		fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			(void)!write(fd, "deny", 4);
			close(fd);
		}
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		write_file("/proc/self/uid_map", map);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		write_file("/proc/self/gid_map", map);
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		skip("make / private");
	if (mount("rcuwalk-fuzz", g_root, "tmpfs", 0, "mode=0755,size=64m") != 0)
		skip("mount tmpfs");

	/* the executable's directory, so that sanitizer reports symbolize */
	{
		char exe[PATH_MAX];
		ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		if (len > 0) {
			exe[len] = '\0';
			*strrchr(exe, '/') = '\0';
			if (*exe)
				bind_dir(exe, true);
		}
	}


	/* libFuzzer reads and writes its files after this: absolute paths, bound. */
	nargv = calloc((size_t)*argc + 1, sizeof(char *));
	if (!nargv)
		fail("calloc");
	for (int i = 0; i < *argc; i++) {
		static const char *const prefixes[] = { "-dict=", "-artifact_prefix=", "-exact_artifact_path=",
							 "-features_dir=" };
		char *a = (*argv)[i], *n = NULL;

		if (i > 0 && a[0] != '-') {
			n = absolutize_and_bind(a, "");
		} else {
			for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++)
				if (!strncmp(a, prefixes[k], strlen(prefixes[k])))
					n = absolutize_and_bind(a, prefixes[k]);
		}
		nargv[i] = n ? n : a;
	}
	*argv = nargv;

	bind_dir("/usr", true);
	{
		char p[PATH_MAX];
		static const char *const merged[] = { "bin", "lib", "lib64", "sbin" };

		for (size_t i = 0; i < sizeof(merged) / sizeof(merged[0]); i++) {
			char target[32];

			snprintf(p, sizeof(p), "%s/%s", g_root, merged[i]);
			snprintf(target, sizeof(target), "usr/%s", merged[i]);
			(void)!symlink(target, p);
		}
		snprintf(p, sizeof(p), "%s/proc", g_root);
		mkdir(p, 0555);
		if (mount("/proc", p, NULL, MS_BIND | MS_REC, NULL) != 0) /* a new procfs needs a pid namespace */
			fail("bind /proc");
		snprintf(p, sizeof(p), "%s/tmp", g_root);
		mkdir(p, 01777);
	}
	if (chroot(g_root) != 0 || chdir("/") != 0)
		fail("chroot");
	make_tree();

	g_as_nobody = root && !(env && !strcmp(env, "0"));
	if (g_as_nobody) {
		g_ngroups = getgroups(256, g_groups);
		if (g_ngroups < 0)
			g_ngroups = 0;
	}
}

/* Per-thread credentials (raw system calls: glibc would switch every
 * thread).  The saved ids stay root so that the switch can be undone. */
static void become(bool nobody)
{
	if (!g_as_nobody)
		return;
	if (nobody) {
		if (syscall(SYS_setgroups, 0, NULL) != 0 ||
		    syscall(SYS_setresgid, NOBODY, NOBODY, -1) != 0 ||
		    syscall(SYS_setresuid, NOBODY, NOBODY, -1) != 0)
			fail("switch to nobody");
	} else {
		if (syscall(SYS_setresuid, 0, 0, -1) != 0 || syscall(SYS_setresgid, 0, 0, -1) != 0 ||
		    syscall(SYS_setgroups, g_ngroups, g_groups) != 0)
			fail("switch back to root");
	}
}

static unsigned long g_lookups, g_answered, g_errors, g_again;

__attribute__((destructor)) static void summary(void)
{
	if (g_lookups)
		fprintf(stderr, "walk_fuzz: %lu lookups, %lu answered by the cache (%lu of them errors) "
			"and equal to the kernel's answer (%lu after asking again), %lu passed through\n",
			g_lookups, g_answered, g_errors, g_again, g_lookups - g_answered);
}

static const char *const k_cwds[4] = { "/", "/a", "/a/l_deep", "/d/sub" };
static int g_cwd = 0;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	isolate(argc, argv);
	inval_fill_ops(&g_ops);
	dcache_set_index(0); /* the path index from the first walk */
	dcache_init(&g_ops, 1 << 20); /* small cap: eviction is part of the walk */
	fprintf(stderr, "walk_fuzz: tree in a private tmpfs (%s outside), lookups as %s\n", g_root,
		g_as_nobody ? "nobody" : "root");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* One input                                                                 */

struct answer {
	int r; /* 0, or a positive errno */
	struct stat st;
	bool has_st;
};

static const char *kind_name(int kind)
{
	static const char *const n[] = { "stat", "access", "access(AT_EACCESS)", "open(negative)" };

	return n[kind & 3];
}

static void report(const char *path, int kind, unsigned flags, int amode, int pass, const struct answer *c,
		   const struct answer *k)
{
	fprintf(stderr, "\nwalk_fuzz MISMATCH (pass %d): %s flags=0x%x amode=%d cwd=%s path(%zu)=\"", pass,
		kind_name(kind), flags, amode, k_cwds[g_cwd], strlen(path));
	for (const char *s = path; *s; s++) {
		if (s - path == 160 && strlen(s) > 80) {
			fprintf(stderr, "...(%zu bytes)...", strlen(s) - 40);
			s += strlen(s) - 40;
		}
		if (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\')
			fputc(*s, stderr);
		else
			fprintf(stderr, "\\x%02x", (unsigned char)*s);
	}
	fprintf(stderr, "\"\n  cache:  %s", c->r ? strerrorname_np(c->r) : "0");
	if (c->has_st)
		fprintf(stderr, " ino=%lu mode=0%o nlink=%lu uid=%u size=%ld mtime=%ld.%09ld ctime=%ld.%09ld",
			(unsigned long)c->st.st_ino, c->st.st_mode, (unsigned long)c->st.st_nlink, c->st.st_uid,
			(long)c->st.st_size, (long)c->st.st_mtim.tv_sec, c->st.st_mtim.tv_nsec,
			(long)c->st.st_ctim.tv_sec, c->st.st_ctim.tv_nsec);
	fprintf(stderr, "\n  kernel: %s", k->r ? strerrorname_np(k->r) : "0");
	if (k->has_st)
		fprintf(stderr, " ino=%lu mode=0%o nlink=%lu uid=%u size=%ld mtime=%ld.%09ld ctime=%ld.%09ld",
			(unsigned long)k->st.st_ino, k->st.st_mode, (unsigned long)k->st.st_nlink, k->st.st_uid,
			(long)k->st.st_size, (long)k->st.st_mtim.tv_sec, k->st.st_mtim.tv_nsec,
			(long)k->st.st_ctim.tv_sec, k->st.st_ctim.tv_nsec);
	fprintf(stderr, "\n");
	abort();
}

static bool st_equal(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_nlink == b->st_nlink && a->st_uid == b->st_uid && a->st_gid == b->st_gid &&
	       a->st_rdev == b->st_rdev && a->st_size == b->st_size &&
	       a->st_blksize == b->st_blksize && a->st_blocks == b->st_blocks &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void kernel_answer(const char *path, int kind, bool nofollow, bool dir, int amode, struct answer *k)
{
	long r;

	memset(k, 0, sizeof(*k));
	switch (kind) {
	case 0:
		r = syscall(SYS_newfstatat, AT_FDCWD, path, &k->st, nofollow ? AT_SYMLINK_NOFOLLOW : 0);
		k->has_st = r == 0;
		break;
	case 1:
	case 2:
		r = syscall(SYS_faccessat2, AT_FDCWD, path, amode,
			    (nofollow ? AT_SYMLINK_NOFOLLOW : 0) | (kind == 2 ? AT_EACCESS : 0));
		break;
	default:
		r = syscall(SYS_openat, AT_FDCWD, path,
			    O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0) |
				    (dir ? O_DIRECTORY : 0));
		if (r >= 0) {
			syscall(SYS_close, (int)r);
			r = 0;
		}
		break;
	}
	k->r = r == 0 ? 0 : errno;
}

static bool same_answer(const struct answer *c, const struct answer *k)
{
	return c->r == k->r && c->has_st == k->has_st && (!c->has_st || st_equal(&c->st, &k->st));
}

/* The cache's answer again, after a mismatch (DCACHE_PASS stays a mismatch). */
static void cache_answer(const char *path, unsigned flags, int kind, int amode, struct answer *c)
{
	memset(c, 0, sizeof(*c));
	c->r = dcache_lookup(path, flags, kind == 1 || kind == 2 ? amode : 0, &c->st);
	c->has_st = c->r == 0 && kind == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[MAX_INPUT_PATH + 1];
	unsigned b0, b1, flags;
	int kind, amode, cwd;
	bool nofollow, dir;
	size_t n;

	if (size < 2)
		return 0;
	b0 = data[0];
	b1 = data[1];
	kind = (int)(b0 & 3);
	nofollow = b0 & 4;
	dir = (b0 & 8) && kind == 3;
	cwd = (int)((b0 >> 4) & 3);
	amode = (b1 & 8) ? (int)b1 : (int)(b1 & 7);
	n = size - 2 < MAX_INPUT_PATH ? size - 2 : MAX_INPUT_PATH;
	memcpy(path, data + 2, n);
	path[n] = '\0';

	switch (kind) {
	case 0:
		flags = DCACHE_Q_STAT;
		break;
	case 1:
		flags = DCACHE_Q_ACCESS;
		break;
	case 2:
		flags = DCACHE_Q_EACCESS;
		break;
	default:
		flags = DCACHE_Q_NEGONLY | (dir ? DCACHE_Q_DIRECTORY : 0);
		break;
	}
	if (!nofollow)
		flags |= DCACHE_Q_FOLLOW;

	become(true);
	if (cwd != g_cwd) {
		if (chdir(k_cwds[cwd]) != 0)
			fail("chdir");
		g_cwd = cwd;
		dcache_cwd_changed();
	}
	if (b0 & 0x40)
		dcache_invalidate_all();
	/* libFuzzer's own writes (corpus, artifacts) land in bound directories
	 * this cache may watch: apply their events, as the shim does after the
	 * process changed something. */
	inval_drain();
	for (int pass = 0; pass < ((b0 & 0x80) ? 2 : 1); pass++) {
		struct answer c, k;
		int r;

		memset(&c, 0, sizeof(c));
		r = dcache_lookup(path, flags, kind == 1 || kind == 2 ? amode : 0, &c.st);
		g_lookups++;
		if (r == DCACHE_PASS)
			continue;
		c.r = r;
		c.has_st = r == 0 && kind == 0;
		kernel_answer(path, kind, nofollow, dir, amode, &k);
		if (kind == 3 && r == 0)
			report(path, kind, flags, amode, pass, &c, &k); /* success must pass */
		/* A different answer is asked again before it counts (kernel_again.h). */
		if (!same_answer(&c, &k) &&
		    KERNEL_AGAIN(same_answer(&c, &k), c.r == ELOOP,
				 cache_answer(path, flags, kind, amode, &c),
				 kernel_answer(path, kind, nofollow, dir, amode, &k)))
			g_again++;
		if (!same_answer(&c, &k))
			report(path, kind, flags, amode, pass, &c, &k);
		g_answered++;
		g_errors += c.r != 0;
	}
	become(false);
	return 0;
}
