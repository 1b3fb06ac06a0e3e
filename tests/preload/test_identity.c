/* SPDX-License-Identifier: MIT */
/*
 * test_identity.c - the identity the cache trusts (doc/coherence.md,
 * "Identity"): a process whose credentials the kernel reads in more ways
 * than the cache keys gets the kernel's answers.
 *
 *  - A user namespace that maps the user to itself (`unshare -U
 *    --map-user=U --map-group=G`, what bubblewrap and rootless containers
 *    do) sees other owners (65534 for the unmapped ones): it must not
 *    attach to a session of the initial namespace, nor a plain process to
 *    one of its own, whichever comes first in one kept session.
 *  - A non-root process with ambient CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH:
 *    access() checks with the real ids and no capabilities
 *    (access_override_creds), stat and open with the effective ones.
 *
 * Each case runs this binary's probe (`--probe TOP`) as a second user made
 * here (useradd, removed at the end), through the launcher, with a session
 * and with --no-session.  The probe makes every stat, lstat, access,
 * faccessat (plain, AT_EACCESS, AT_SYMLINK_NOFOLLOW), euidaccess and open of
 * a tree of root's, the user's and a group's through libc (the shim) and
 * again as a raw system call (euidaccess: libc.so.6's own, which the shim
 * does not see inside), three times over, and fails on any difference.
 * The launcher, the shim and this binary run from copies in a 0755
 * directory: the user may not be able to reach the build tree.
 *
 * Needs root, useradd/userdel, setpriv and unshare (util-linux >= 2.38 for
 * --map-user); without them it skips, saying why.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define KEEP "--keep=3"

static char g_bin[PLEN];       /* g_scratch/bin: copies of launcher, shim, this binary */
static char g_launcher[PLEN], g_shim[PLEN], g_self[PLEN];
static char g_preload[4 * PLEN]; /* LD_PRELOAD with the copy in place of the shim */
static char g_user[32];
static uid_t g_uid;
static gid_t g_gid;
static int g_have_user;
static const char *g_skip; /* why the group cannot run, or NULL */
static int g_case;         /* numbers each test's XDG_RUNTIME_DIR */

/* ------------------------------------------------------------------------ */
/* The probe: libc (the shim) against raw system calls                      */

/* Instances this process image made itself (the shim's call resolves to
 * this exported definition, ENABLE_EXPORTS): 0 after its lookups means it
 * used the session's. */
static int n_init_ok;

__attribute__((visibility("default"))) int inotify_init1(int flags);
int inotify_init1(int flags)
{
	int fd = (int)syscall(SYS_inotify_init1, flags);

	if (fd >= 0)
		__atomic_fetch_add(&n_init_ok, 1, __ATOMIC_RELAXED);
	return fd;
}

static char *g_paths[128];
static int g_npaths;

static void add(const char *top, const char *rel)
{
	char p[PLEN];

	if (!rel)
		xfmt(p, sizeof(p), "%s", top);
	else if (rel[0] == '/')
		xfmt(p, sizeof(p), "%s", rel);
	else
		xfmt(p, sizeof(p), "%s/%s", top, rel);
	if (g_npaths < (int)(sizeof(g_paths) / sizeof(g_paths[0])))
		g_paths[g_npaths++] = strdup(p);
}

static void probe_paths(const char *top)
{
	static const char *const rel[] = {
		"priv", "priv/f", "priv/nope", "priv/sub", "priv/sub/g", "priv/sub/nope",
		"priv/sub/", "priv/f/", "pub", "pub/h", "pub/x", "pub/ro", "pub/nope", "pub/lnk",
		"pub/dlnk", "pub/dlnk/f", "pub/dlnk/nope", "pub/h/", "mine", "mine/a", "mine/d",
		"mine/d/b", "mine/d/nope", "grp", "grp/gf", "grp/nope", "/", "/usr", "/usr/bin",
		"/usr/bin/env", "/etc", "/etc/shadow", "/root", "/root/nope", "/root/.",
		"/proc/self/ns/user", NULL,
	};

	add(top, NULL);
	for (int i = 0; rel[i]; i++)
		add(top, rel[i]);
}

/* The attributes compared: identity, type, mode and owners (times and link
 * counts of system directories may change while the probe runs). */
static int stat_differs(const char *call, const char *p, int src, int serr, const struct stat *s,
			int krc, int kerr, const struct stat *k)
{
	if (src != krc || serr != kerr) {
		fprintf(stderr, "differ: %s(%s): shim rc=%d errno=%s, kernel rc=%d errno=%s\n", call,
			p, src, ename(serr), krc, ename(kerr));
		return 1;
	}
	if (src == 0 && (s->st_dev != k->st_dev || s->st_ino != k->st_ino ||
			 s->st_mode != k->st_mode || s->st_uid != k->st_uid ||
			 s->st_gid != k->st_gid)) {
		fprintf(stderr,
			"differ: %s(%s): shim ino=%llu mode=0%o uid=%u gid=%u, kernel ino=%llu "
			"mode=0%o uid=%u gid=%u\n",
			call, p, (unsigned long long)s->st_ino, s->st_mode, s->st_uid, s->st_gid,
			(unsigned long long)k->st_ino, k->st_mode, k->st_uid, k->st_gid);
		return 1;
	}
	return 0;
}

static int rc_differs(const char *call, const char *p, int mode, int src, int serr, int krc,
		      int kerr)
{
	if (src == krc && serr == kerr)
		return 0;
	fprintf(stderr, "differ: %s(%s, %d): shim rc=%d errno=%s, kernel rc=%d errno=%s\n", call,
		p, mode, src, ename(serr), krc, ename(kerr));
	return 1;
}

static int probe_stat(const char *p, int follow)
{
	struct stat s, k;
	int src, serr, krc, kerr;

	memset(&s, 0, sizeof(s));
	memset(&k, 0, sizeof(k));
	errno = 0;
	src = follow ? stat(p, &s) : lstat(p, &s);
	serr = src ? errno : 0;
	errno = 0;
	krc = (int)syscall(SYS_newfstatat, AT_FDCWD, p, &k, follow ? 0 : AT_SYMLINK_NOFOLLOW);
	kerr = krc ? errno : 0;
	return stat_differs(follow ? "stat" : "lstat", p, src, serr, &s, krc, kerr, &k);
}

static int probe_access(const char *p, int mode)
{
	static const int flags[] = { 0, AT_EACCESS, AT_SYMLINK_NOFOLLOW,
				     AT_EACCESS | AT_SYMLINK_NOFOLLOW };
	int src, serr, krc, kerr, n = 0;

	errno = 0;
	src = access(p, mode);
	serr = src ? errno : 0;
	errno = 0;
	krc = (int)syscall(SYS_faccessat, AT_FDCWD, p, mode);
	kerr = krc ? errno : 0;
	n += rc_differs("access", p, mode, src, serr, krc, kerr);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		char call[64];

		errno = 0;
		src = faccessat(AT_FDCWD, p, mode, flags[i]);
		serr = src ? errno : 0;
		errno = 0;
		krc = (int)syscall(SYS_faccessat2, AT_FDCWD, p, mode, flags[i]);
		kerr = krc ? errno : 0;
		xfmt(call, sizeof(call), "faccessat[flags=%#x]", (unsigned)flags[i]);
		n += rc_differs(call, p, mode, src, serr, krc, kerr);
	}
	return n;
}

/* glibc's own euidaccess (libc.so.6's definition, not the shim's): it
 * calls stat and access inside libc, which the shim does not see. */
static int (*libc_euidaccess)(const char *, int);

static int probe_euidaccess(const char *p, int mode)
{
	int src, serr, krc, kerr;

	if (!libc_euidaccess)
		return 0;
	errno = 0;
	src = euidaccess(p, mode);
	serr = src ? errno : 0;
	errno = 0;
	krc = libc_euidaccess(p, mode);
	kerr = krc ? errno : 0;
	return rc_differs("euidaccess", p, mode, src, serr, krc, kerr);
}

static int probe_open(const char *p, int flags)
{
	struct stat s, k;
	int sfd, kfd, serr, kerr, n;

	errno = 0;
	sfd = open(p, flags | O_CLOEXEC);
	serr = sfd < 0 ? errno : 0;
	errno = 0;
	kfd = (int)syscall(SYS_openat, AT_FDCWD, p, flags | O_CLOEXEC);
	kerr = kfd < 0 ? errno : 0;
	n = rc_differs(flags & O_DIRECTORY ? "open[O_DIRECTORY]" : "open", p, 0, sfd < 0 ? -1 : 0,
		       serr, kfd < 0 ? -1 : 0, kerr);
	if (!n && sfd >= 0 && kfd >= 0 && syscall(SYS_fstat, sfd, &s) == 0 &&
	    syscall(SYS_fstat, kfd, &k) == 0 && (s.st_dev != k.st_dev || s.st_ino != k.st_ino)) {
		fprintf(stderr, "differ: open(%s): opened another object\n", p);
		n = 1;
	}
	if (sfd >= 0)
		syscall(SYS_close, sfd);
	if (kfd >= 0)
		syscall(SYS_close, kfd);
	return n;
}

/* Three passes over the paths: every stat, then every access, then every
 * open; the differences on stderr. */
static void probe_passes(long *total_out, long *bad_out)
{
	static const int modes[] = { F_OK, R_OK, W_OK, X_OK, R_OK | X_OK, R_OK | W_OK };
	long total = 0, bad = 0;

	for (int pass = 0; pass < 3; pass++) {
		for (int i = 0; i < g_npaths; i++, total += 2)
			bad += probe_stat(g_paths[i], 1) + probe_stat(g_paths[i], 0);
		for (int i = 0; i < g_npaths; i++)
			for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++, total += 6)
				bad += probe_access(g_paths[i], modes[m]) +
				       probe_euidaccess(g_paths[i], modes[m]);
		for (int i = 0; i < g_npaths; i++, total += 2)
			bad += probe_open(g_paths[i], O_RDONLY) +
			       probe_open(g_paths[i], O_RDONLY | O_DIRECTORY);
		if (bad > 60)
			break;
	}
	*total_out += total;
	*bad_out += bad;
}

/* `--probe TOP LABEL`: every answer of three passes; exit 0 if all equal
 * the kernel's, else 1 (the differences on stderr, the first 60).  With
 * IDENT_CLEAR_SECUREBITS in the environment, three more passes after
 * prctl(PR_SET_SECUREBITS, 0) (through the shim's wrapper). */
static int probe_main(const char *top, const char *label)
{
	long total = 0, bad = 0;

	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);

	libc_euidaccess = libc ? (int (*)(const char *, int))dlsym(libc, "euidaccess") : NULL;
	if (!libc_euidaccess)
		fprintf(stderr, "probe %s: no libc euidaccess to compare with\n", label);
	probe_paths(top);
	probe_passes(&total, &bad);
	if (getenv("IDENT_CLEAR_SECUREBITS")) {
		if (prctl(PR_SET_SECUREBITS, 0UL, 0UL, 0UL, 0UL) != 0) {
			fprintf(stderr, "probe %s: PR_SET_SECUREBITS: %s\n", label, ename(errno));
			return 2;
		}
		probe_passes(&total, &bad);
	}
	fprintf(stderr, "probe %s (uid %u, euid %u, %s): %ld of %ld answers differ\n", label,
		(unsigned)getuid(), (unsigned)geteuid(),
		!getenv("RCUWALK_SESSION") ? "no session"
		: __atomic_load_n(&n_init_ok, __ATOMIC_RELAXED) ? "own instance in a session"
								: "attached",
		bad, total);
	fprintf(stderr, "probe %s session=%s\n", label,
		getenv("RCUWALK_SESSION") ? getenv("RCUWALK_SESSION") : "");
	return bad ? 1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Setup: a user, a tree, copies of the programs                            */

/* Run argv (a NULL-terminated list), its output into `out` (or discarded);
 * its wait status, or -1. */
static int run(char *const argv[], char *out, size_t n)
{
	int p[2], st;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	if (out)
		read_to_eof(p[0], out, n);
	else {
		char sink[4096];

		while (read(p[0], sink, sizeof(sink)) > 0)
			;
	}
	close(p[0]);
	st = pid > 0 ? wait_bounded(pid, 120) : -1;
	return st;
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t k;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((k = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)k) != k)
			k = -1;
	close(in);
	close(out);
	return k < 0 ? -1 : chmod(to, 0755);
}

static int mk(const char *rel, mode_t mode, uid_t u, gid_t g, int dir)
{
	char p[PLEN];
	int fd;

	xfmt(p, sizeof(p), "%s/%s", g_scratch, rel);
	if (dir) {
		if (mkdir(p, 0700) != 0)
			return -1;
	} else {
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, "x\n", 2) != 2)
			return -1;
		close(fd);
	}
	return chown(p, u, g) == 0 && chmod(p, mode) == 0 ? 0 : -1;
}

static int make_tree(void)
{
	char p[PLEN];

	if (chmod(g_scratch, 0755) != 0)
		return -1;
	if (mk("priv", 0700, 0, 0, 1) || mk("priv/f", 0644, 0, 0, 0) ||
	    mk("priv/sub", 0755, 0, 0, 1) || mk("priv/sub/g", 0644, 0, 0, 0) ||
	    mk("pub", 0755, 0, 0, 1) || mk("pub/h", 0644, 0, 0, 0) ||
	    mk("pub/x", 0755, 0, 0, 0) || mk("pub/ro", 0400, 0, 0, 0) ||
	    mk("mine", 0755, g_uid, g_gid, 1) || mk("mine/a", 0600, g_uid, g_gid, 0) ||
	    mk("mine/d", 0700, g_uid, g_gid, 1) || mk("mine/d/b", 0644, g_uid, g_gid, 0) ||
	    mk("grp", 0750, 0, g_gid, 1) || mk("grp/gf", 0640, 0, g_gid, 0) ||
	    mk("bin", 0755, 0, 0, 1))
		return -1;
	xfmt(p, sizeof(p), "%s/pub/lnk", g_scratch);
	if (symlink("../priv/f", p) != 0)
		return -1;
	xfmt(p, sizeof(p), "%s/pub/dlnk", g_scratch);
	return symlink("../priv", p);
}

/* LD_PRELOAD as ctest set it (a sanitizer's runtime first, maybe), the
 * shim's entry replaced by its copy. */
static void make_preload(const char *shim)
{
	const char *lp = getenv("LD_PRELOAD");
	char *dup = strdup(lp ? lp : ""), *save = NULL;
	size_t len = 0;

	g_preload[0] = '\0';
	for (char *t = strtok_r(dup, ": ", &save); t; t = strtok_r(NULL, ": ", &save)) {
		const char *e = strcmp(t, shim) == 0 ? g_shim : t;
		int k = snprintf(g_preload + len, sizeof(g_preload) - len, "%s%s", len ? ":" : "", e);

		if (k > 0 && (size_t)k < sizeof(g_preload) - len)
			len += (size_t)k;
	}
	free(dup);
	if (!strstr(g_preload, g_shim))
		snprintf(g_preload + len, sizeof(g_preload) - len, "%s%s", len ? ":" : "", g_shim);
}

static int add_user(void)
{
	char out[4096];
	struct passwd *pw;

	xfmt(g_user, sizeof(g_user), "rwident%d", (int)getpid() % 100000);
	for (int t = 0; t < 20; t++) { /* another useradd may hold /etc/passwd's lock */
		char *argv[] = { (char *)"useradd", (char *)"-M", (char *)"-U", (char *)"-s",
				 (char *)"/usr/sbin/nologin", g_user, NULL };
		int st = run(argv, out, sizeof(out));

		if (st == 0)
			break;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
			return -1;
		usleep(250000);
	}
	pw = getpwnam(g_user);
	if (!pw)
		return -1;
	g_uid = pw->pw_uid;
	g_gid = pw->pw_gid;
	g_have_user = 1;
	return 0;
}

static void del_user(void)
{
	for (int t = 0; g_have_user && t < 20; t++) {
		char *argv[] = { (char *)"userdel", g_user, NULL };

		if (run(argv, NULL, 0) == 0 || !getpwnam(g_user))
			break;
		usleep(250000);
	}
	g_have_user = 0;
}

static int group_setup(void **state)
{
	const char *l = getenv("RCUWALK_LAUNCHER"), *s = getenv("RCUWALK_TEST_SHIM");
	char out[4096];

	if (scratch_setup(state) != 0)
		return -1;
	if (geteuid() != 0) {
		g_skip = "not root (needs useradd and setpriv)";
		return 0;
	}
	{
		char *argv[] = { (char *)"unshare", (char *)"-U", (char *)"--map-user=0",
				 (char *)"--map-group=0", (char *)"true", NULL };
		char *argv2[] = { (char *)"setpriv", (char *)"--help", NULL };

		if (run(argv, out, sizeof(out)) != 0) {
			g_skip = "unshare -U --map-user fails here (no user namespaces, or util-linux "
				 "< 2.38)";
			return 0;
		}
		if (run(argv2, out, sizeof(out)) != 0 || !strstr(out, "--ambient-caps")) {
			g_skip = "no setpriv with --ambient-caps";
			return 0;
		}
	}
	if (add_user() != 0) {
		g_skip = "useradd failed";
		return 0;
	}
	xfmt(g_bin, sizeof(g_bin), "%s/bin", g_scratch);
	xfmt(g_launcher, sizeof(g_launcher), "%s/rcuwalk", g_bin);
	xfmt(g_shim, sizeof(g_shim), "%s/librcuwalk.so", g_bin);
	xfmt(g_self, sizeof(g_self), "%s/test_identity", g_bin);
	if (make_tree() != 0 || copy_file(l, g_launcher) != 0 || copy_file(s, g_shim) != 0 ||
	    copy_file("/proc/self/exe", g_self) != 0)
		return -1;
	make_preload(s);
	return 0;
}

static int group_teardown(void **state)
{
	del_user();
	return scratch_teardown(state);
}

/* ------------------------------------------------------------------------ */
/* Running the probe as the user                                            */


/* A fresh XDG_RUNTIME_DIR of the user's: where its sessions and the links
 * of its kept ones live, one per test (no test joins another's). */
static void new_xdg(char *xdg, size_t n)
{
	xfmt(xdg, n, "%s/xdg%d", g_scratch, ++g_case);
	assert_int_equal(mkdir(xdg, 0700), 0);
	assert_int_equal(chown(xdg, g_uid, g_gid), 0);
}

/* PLAIN_IN: a plain process in session `opt` (a directory), no launcher.
 * AMBIENT_SECBITS: ambient capabilities with SECBIT_NO_SETUID_FIXUP (and
 * CAP_SETPCAP), cleared by the probe half-way. */
enum how { PLAIN, AMBIENT, USERNS, USERNS_LAUNCHER, PLAIN_IN, AMBIENT_SECBITS };

/* The probe as the user, `how`, under the launcher with `opt` (--keep=3 or
 * --no-session); asserts that every answer equals the kernel's.  Returns
 * what it printed (until the next call). */
static const char *probe_as_user(enum how how, const char *opt, const char *xdg, const char *label)
{
	static char out[65536];
	char uidarg[32], gidarg[32], mu[32], mg[32], env_x[PLEN], env_p[5 * PLEN], env_s[PLEN];
	const char *argv[40];
	int n = 0, st;

	xfmt(uidarg, sizeof(uidarg), "--reuid=%u", (unsigned)g_uid);
	xfmt(gidarg, sizeof(gidarg), "--regid=%u", (unsigned)g_gid);
	xfmt(mu, sizeof(mu), "--map-user=%u", (unsigned)g_uid);
	xfmt(mg, sizeof(mg), "--map-group=%u", (unsigned)g_gid);
	xfmt(env_x, sizeof(env_x), "XDG_RUNTIME_DIR=%s", xdg);
	xfmt(env_p, sizeof(env_p), "LD_PRELOAD=%s", g_preload);
	xfmt(env_s, sizeof(env_s), "RCUWALK_SESSION=%s", how == PLAIN_IN ? opt : "");
	argv[n++] = "env";
	if (how == PLAIN_IN) {
		argv[n++] = env_s;
	} else {
		argv[n++] = "-u";
		argv[n++] = "RCUWALK_SESSION";
	}
	argv[n++] = env_x;
	argv[n++] = env_p;
	argv[n++] = "RCUWALK_RACY_MS=0";
	if (how == AMBIENT_SECBITS)
		argv[n++] = "IDENT_CLEAR_SECUREBITS=1";
	argv[n++] = "setpriv";
	argv[n++] = uidarg;
	argv[n++] = gidarg;
	argv[n++] = "--clear-groups";
	if (how == AMBIENT) {
		argv[n++] = "--inh-caps=+dac_override,+dac_read_search";
		argv[n++] = "--ambient-caps=+dac_override,+dac_read_search";
	} else if (how == AMBIENT_SECBITS) {
		argv[n++] = "--inh-caps=+dac_override,+dac_read_search,+setpcap";
		argv[n++] = "--ambient-caps=+dac_override,+dac_read_search,+setpcap";
		argv[n++] = "--securebits=+no_setuid_fixup";
	} else {
		argv[n++] = "--inh-caps=-all";
	}
	argv[n++] = "--";
	if (how == USERNS_LAUNCHER) { /* the launcher itself in the namespace */
		argv[n++] = "unshare";
		argv[n++] = "-U";
		argv[n++] = mu;
		argv[n++] = mg;
		argv[n++] = "--";
	}
	if (how != PLAIN_IN) {
		argv[n++] = g_launcher;
		argv[n++] = opt;
		argv[n++] = "--";
	}
	if (how == USERNS) { /* the command in the namespace, the launcher not */
		argv[n++] = "unshare";
		argv[n++] = "-U";
		argv[n++] = mu;
		argv[n++] = mg;
		argv[n++] = "--";
	}
	argv[n++] = g_self;
	argv[n++] = "--probe";
	argv[n++] = g_scratch;
	argv[n++] = label;
	argv[n] = NULL;
	st = run((char *const *)argv, out, sizeof(out));
	if (st != 0)
		fprintf(stderr, "%s: exit status %#x\n%s", label, (unsigned)st, out);
	assert_int_equal(st, 0);
	fputs(out, stderr);
	/* The launcher outside the namespace, the command in it: the session
	 * is not the command's (ring.h, userns_ino). */
	if (how == USERNS && strcmp(opt, "--no-session") != 0)
		assert_null(strstr(out, "attached"));
	return out;
}

/* The session directory a probe's output names, into dir. */
static void session_of(const char *out, char *dir, size_t n)
{
	const char *p = strstr(out, "session=/");

	assert_non_null(p);
	p += strlen("session=");
	xfmt(dir, n, "%.*s", (int)strcspn(p, "\n"), p);
}

#define NEED_GROUP()                                   \
	do {                                           \
		if (g_skip) {                          \
			print_message("skipped: %s\n", g_skip); \
			skip();                        \
		}                                      \
	} while (0)

/* ------------------------------------------------------------------------ */
/* Tests                                                                    */

/* unshare -U --map-user=U after a plain process of U, in one kept session:
 * the namespaced process sees 65534 as root's directories' owner, where
 * the plain one's shared attributes said 0. */
static void test_identity_userns_after_plain_same_as_kernel(void **state)
{
	char xdg[PLEN];

	(void)state;
	NEED_GROUP();
	new_xdg(xdg, sizeof(xdg));
	probe_as_user(PLAIN, KEEP, xdg, "plain");
	probe_as_user(USERNS, KEEP, xdg, "userns command");
	probe_as_user(USERNS_LAUNCHER, KEEP, xdg, "userns launcher");
	probe_as_user(PLAIN, KEEP, xdg, "plain again");
}

/* The namespaced process first (its launcher too), then a plain one: the
 * plain one must not be served 65534. */
static void test_identity_userns_before_plain_same_as_kernel(void **state)
{
	char xdg[PLEN], dir[PLEN];

	(void)state;
	NEED_GROUP();
	new_xdg(xdg, sizeof(xdg));
	probe_as_user(USERNS_LAUNCHER, KEEP, xdg, "userns launcher");
	probe_as_user(USERNS, KEEP, xdg, "userns command");
	probe_as_user(PLAIN, KEEP, xdg, "plain");
	/* A plain process told the namespaced session's directory (a launcher
	 * outside the namespace does not find its link: keep_link_path). */
	session_of(probe_as_user(USERNS_LAUNCHER, KEEP, xdg, "userns launcher again"), dir,
		   sizeof(dir));
	assert_null(strstr(probe_as_user(PLAIN_IN, dir, xdg, "plain in its session"), "attached"));
}

static void test_identity_userns_no_session_same_as_kernel(void **state)
{
	char xdg[PLEN];

	(void)state;
	NEED_GROUP();
	new_xdg(xdg, sizeof(xdg));
	probe_as_user(USERNS, "--no-session", xdg, "userns");
	probe_as_user(USERNS_LAUNCHER, "--no-session", xdg, "userns launcher");
}

/* Ambient CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, uid U: stat and open
 * see into root's 0700 directory, access() does not. */
static void test_identity_ambient_caps_access_same_as_kernel_no_session(void **state)
{
	char xdg[PLEN];

	(void)state;
	NEED_GROUP();
	new_xdg(xdg, sizeof(xdg));
	probe_as_user(AMBIENT, "--no-session", xdg, "ambient");
}

/* The same in one kept session, after and before a plain process of U. */
static void test_identity_ambient_caps_access_same_as_kernel_in_kept_session(void **state)
{
	char xdg[PLEN];

	(void)state;
	NEED_GROUP();
	new_xdg(xdg, sizeof(xdg));
	probe_as_user(PLAIN, KEEP, xdg, "plain");
	probe_as_user(AMBIENT, KEEP, xdg, "ambient");
	probe_as_user(PLAIN, KEEP, xdg, "plain again");
	probe_as_user(AMBIENT, KEEP, xdg, "ambient again");
}

/* SECBIT_NO_SETUID_FIXUP: access() keeps the effective capabilities, the
 * cache may answer; the process clears it with prctl(PR_SET_SECUREBITS):
 * from then on access() drops them, and so must the cache's answers. */
static void test_identity_securebits_cleared_midrun_access_same_as_kernel(void **state)
{
	char xdg[PLEN];

	(void)state;
	NEED_GROUP();
	new_xdg(xdg, sizeof(xdg));
	probe_as_user(AMBIENT_SECBITS, "--no-session", xdg, "securebits cleared");
	probe_as_user(AMBIENT_SECBITS, KEEP, xdg, "securebits cleared, session");
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity_userns_after_plain_same_as_kernel),
		cmocka_unit_test(test_identity_userns_before_plain_same_as_kernel),
		cmocka_unit_test(test_identity_userns_no_session_same_as_kernel),
		cmocka_unit_test(test_identity_ambient_caps_access_same_as_kernel_no_session),
		cmocka_unit_test(test_identity_ambient_caps_access_same_as_kernel_in_kept_session),
		cmocka_unit_test(test_identity_securebits_cleared_midrun_access_same_as_kernel),
	};

	if (argc == 4 && !strcmp(argv[1], "--probe"))
		return probe_main(argv[2], argv[3]);
	if (!getenv("RCUWALK_TEST_SHIM") || !getenv("RCUWALK_LAUNCHER")) {
		fprintf(stderr, "test_identity: needs the shim and RCUWALK_LAUNCHER; skipped\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
