/* SPDX-License-Identifier: MIT */
/*
 * rcuwalk_difftest.c - randomized differential tester of librcuwalk.so.
 *
 * From a seed, runs a random sequence of operations on a scratch tree with a
 * small alphabet of names (a, b, c, d), so that collisions, re-creations and
 * renames over existing entries are frequent:
 *
 *  - lookups through libc (interposed by the shim): stat, lstat, fstatat,
 *    the *64 and __xstat variants, access, faccessat, euidaccess, eaccess,
 *    open/open64/openat/openat64/__open_2/... with random flags; each one is
 *    compared at once with the same call made as a raw syscall(2) that the
 *    shim cannot see: return value, errno (also on success: it must be left
 *    alone), the struct stat fields of the contract (never st_atim), and for
 *    opens the object opened and its file status flags;
 *  - mutations (create, write, unlink, rename incl. directories, over existing
 *    targets and RENAME_EXCHANGE, mkdir, rmdir, symlink incl. loops and
 *    dangling ones, link, chmod, truncate, utimes, mkfifo, writes through
 *    long-lived fds) made by this process through libc, or in batches by a
 *    helper: a child making raw syscalls (cloned without the shim's fork
 *    wrapper), a fork()ed child using libc (and so the shim), or an exec'd
 *    copy of this program without LD_PRELOAD.  Each batch ends
 *    with waitpid(), the sync point of the coherence contract: every answer
 *    after it must be exact.  After every mutation the paths involved and
 *    their parent directories are looked up and compared as well.
 *  - bad pointers (--efault, per mille of lookups; default 100): after a
 *    lookup, one of stat, lstat, fstatat, stat64, fstatat64, __xstat,
 *    __lxstat, __fxstatat, statx, access, faccessat, open, openat, readlink,
 *    readlinkat, opendir or realpath gets, for its path or its output, an
 *    unmapped page, a PROT_NONE page, a read-only page (outputs), a path
 *    running into a PROT_NONE page without a NUL, an output too long for
 *    the bytes before one, a path or output ending exactly at a page's last
 *    byte (valid), or NULL.  The path is the one just looked up, so that the
 *    cache answers.  Compared with the raw syscall made with the same
 *    pointers (return value, errno, what it wrote; a read-only output and
 *    memory around the output must stay as they were); opendir with the
 *    kernel's openat (glibc's own opendir crashes on a bad name, the shim
 *    answers openat's EFAULT); realpath,
 *    which has no syscall, must fail with EFAULT where glibc's would have
 *    written (glibc crashes there), and give glibc's answer otherwise.
 *    Probes that would fault in a sanitizer's interceptor, before the shim
 *    sees them, are skipped and counted.  --efault 0 gives a seed's
 *    operations as they were before these probes;
 *  - chdir/fchdir (relative paths are then relative to another directory),
 *    and, when started as root, short stretches with euid nobody (real uid
 *    root: access() and faccessat(AT_EACCESS) then differ).
 *
 * When started as root (CI), the run gives the tree to nobody halfway (a few
 * entries stay root's), drops its privileges (setgroups, setgid, setuid to
 * 65534; the shim must then forget what it learned as root) and continues:
 * permission bits then matter (modes without search or read permission).
 * The run itself is a child of the main process, which never uses the shim's
 * cache (so that the run starts with an empty one).
 *
 * The tree lives at mkdtemp("/tmp/rcuwalk-fuzz-XXXXXX") + 96 levels of "z" +
 * "/t": the generated paths and symlink bodies contain few enough ".." that
 * no lookup can climb out to /tmp, which other processes change at any time
 * (the count: shallow_cap()).  "@" in a path stands for the tree's absolute
 * path.  Beside the tree, two symlinks no generated change can name, @/../L
 * and @/../M, give readlink probes a link that is always there.
 *
 * --depth N puts the tree N levels of "z" down instead.  A session's shared
 * path table (cache/dcache_spath.c) takes a name of at most 200 bytes whose
 * walk passes at most 12 directories; at 96 only relative names (walked from
 * the cwd) fit.  At N = 4 an absolute name passes 8 directories before its
 * first component (/, /tmp, the scratch directory, 4 "z", the tree), so
 * that names of up to five components fit.  Below 96 the generator keeps
 * ".." out of the paths it changes and of symlink bodies, and at most N + 1
 * in a lookup path (shallow_cap()): the same seed gives other operations
 * than at 96.  A log of such a run says "# depth N", which --replay and
 * --minimize obey.
 *
 * --look-helpers PERMILLE (default 0: none, and the operations of a seed as
 * before) adds lookup batches ("look"), each run by an exec'd copy of this
 * program WITH the shim (run_look_batch()): a fresh process of the session
 * asks names looked up just before, compares each answer with the raw
 * syscall itself and fails the run on a mismatch.  A third of the batches
 * are races ("race", run_race_batch()): a raw child changes names while this
 * process looks them up in new spellings, unchecked, so that walks offer
 * answers while changes are under way; once the child is reaped every
 * answer must be exact, here and in the helper.  With --expect-path-hits
 * the run fails unless the statistics records show lookups answered from
 * the shared path table (path_hits_shared), in the lookup helpers too;
 * with --expect-file-hits, unless a lookup helper took a regular file's
 * attributes from the session (files_shared: doc/session.md, "File
 * attributes"; run with RCUWALK_RACY_MS=0, else a file changed in the last
 * 2 s is never shared).
 * (Started as root, the helpers of the nobody half share nothing: their
 * records show no shared listing, name or path.)
 *
 * On a mismatch the program prints the seed, the operation index, both
 * answers and the last operations, writes the whole operation log to
 * /tmp/rcuwalk-difftest-<seed>-<index>-<pid>.log and exits 1.  The log replays with
 * --replay FILE; --minimize FILE shrinks it (delta debugging) to the
 * operations the mismatch needs.
 *
 * Usage: rcuwalk_difftest [--ops N] [--seed S] [--efault PERMILLE] [--no-shim] [-v]
 *                         [--depth N] [--look-helpers PERMILLE] [--expect-session]
 *                         [--expect-path-hits] [--expect-file-hits]
 *        rcuwalk_difftest --replay FILE | --minimize FILE
 * Exit: 0 pass, 1 mismatch (or no answer from the cache, or with
 * --expect-path-hits none from the shared path table, or with
 * --expect-file-hits no file's attributes in a helper), 2 setup error, 77
 * skip (shim not preloaded, or --expect-session without a session: the
 * launcher found no inotify instance).
 * Run under the shim: LD_PRELOAD=librcuwalk.so or `rcuwalk -- rcuwalk_difftest`.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

extern char **environ;

/* Fortified open entry points (declared by <bits/fcntl2.h> only under
 * _FORTIFY_SOURCE). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

#define NOBODY 65534
#define BARRIER_DEPTH 96
#define SENTINEL_ERRNO 4242
#define NSLOTS 4
#define RING 48
#define RECENT 32

/* ------------------------------------------------------------------------ */
/* Operations                                                               */

enum op_kind {
	/* lookups, compared with the raw syscall */
	L_STAT, L_LSTAT, L_FSTATAT, L_STAT64, L_LSTAT64, L_FSTATAT64,
	L_XSTAT, L_LXSTAT, L_FXSTATAT,
	L_ACCESS, L_FACCESSAT, L_EUIDACCESS, L_EACCESS,
	L_OPEN,       /* a: entry point, b: flags */
	L_EFAULT,     /* a bad pointer (--efault): a: entry point (EP_*), b: see BP_B() */
	/* mutations */
	M_EXCL,       /* open(O_CREAT|O_EXCL): compared too; b: mode */
	M_CREATE,     /* a: variant, b: mode */
	M_WRITE,      /* a: variant, b: bytes */
	M_UNLINK,     /* a: variant */
	M_RMDIR,      /* a: variant */
	M_MKDIR,      /* a: variant, b: mode */
	M_SYMLINK,    /* a: variant; p1: new name, p2: body */
	M_RENAME,     /* a: variant, b: renameat2 flags */
	M_LINK,       /* a: variant */
	M_CHMOD,      /* a: variant, b: mode */
	M_TRUNCATE,   /* b: length */
	M_UTIME,      /* a: variant, b: seconds */
	M_MKFIFO,
	/* long-lived fds (slot a) */
	F_OPEN,       /* b: flags */
	F_WRITE,      /* b: bytes */
	F_TRUNC,      /* b: length */
	F_CHMOD,      /* b: mode */
	F_CLOSE,
	/* process state */
	P_CHDIR,      /* a: chdir / fchdir */
	P_SETEUID,    /* a: uid */
	/* helpers: the next a ops run in a child; b: 0 raw syscalls, 1 libc */
	B_FORK,
	B_EXEC,       /* the next a ops run in an exec'd copy without the shim */
	P_AS_NOBODY,  /* the rest runs as nobody (when started as root) */
	B_LOOK,       /* the next a lookups run in an exec'd copy WITH the shim,
		       * each compared there (--look-helpers) */
	B_RACE,       /* of the next a ops, the changes run in a raw child while
		       * this process makes the lookups, then see run_race_batch() */
	NKINDS
};

static const char *const k_kind_names[NKINDS] = {
	[L_STAT] = "stat", [L_LSTAT] = "lstat", [L_FSTATAT] = "fstatat",
	[L_STAT64] = "stat64", [L_LSTAT64] = "lstat64", [L_FSTATAT64] = "fstatat64",
	[L_XSTAT] = "__xstat", [L_LXSTAT] = "__lxstat", [L_FXSTATAT] = "__fxstatat",
	[L_ACCESS] = "access", [L_FACCESSAT] = "faccessat", [L_EUIDACCESS] = "euidaccess",
	[L_EACCESS] = "eaccess", [L_OPEN] = "open", [L_EFAULT] = "efault",
	[M_EXCL] = "create-excl", [M_CREATE] = "create", [M_WRITE] = "write",
	[M_UNLINK] = "unlink", [M_RMDIR] = "rmdir", [M_MKDIR] = "mkdir",
	[M_SYMLINK] = "symlink", [M_RENAME] = "rename", [M_LINK] = "link",
	[M_CHMOD] = "chmod", [M_TRUNCATE] = "truncate", [M_UTIME] = "utime",
	[M_MKFIFO] = "mkfifo",
	[F_OPEN] = "fd-open", [F_WRITE] = "fd-write", [F_TRUNC] = "fd-truncate",
	[F_CHMOD] = "fd-chmod", [F_CLOSE] = "fd-close",
	[P_CHDIR] = "chdir", [P_SETEUID] = "seteuid",
	[B_FORK] = "fork", [B_EXEC] = "exec", [P_AS_NOBODY] = "as-nobody",
	[B_LOOK] = "look", [B_RACE] = "race",
};

/*
 * L_EFAULT: one interposed entry point called with one bad pointer, and the
 * same call made as the raw system call with the same pointers (the kernel
 * answers EFAULT, or what the lookup gives when it fails before a struct
 * would be written).  a: the entry point; b: BP_B(bad kind, output
 * argument?, variant, n).  The variant picks flags, mode or readlink's
 * bufsiz (probe_decode()); n the offset into a page or the bytes left
 * before a PROT_NONE page.  p1: the path, one just looked up (the cache
 * holds it).
 */
enum ep {
	EP_STAT, EP_LSTAT, EP_FSTATAT, EP_STAT64, EP_FSTATAT64, EP_XSTAT, EP_LXSTAT,
	EP_FXSTATAT, EP_STATX, EP_ACCESS, EP_FACCESSAT, EP_OPEN, EP_OPENAT, EP_READLINK,
	EP_READLINKAT, EP_OPENDIR, EP_REALPATH, NEPS
};

static const char *const k_ep_names[NEPS] = {
	[EP_STAT] = "stat", [EP_LSTAT] = "lstat", [EP_FSTATAT] = "fstatat",
	[EP_STAT64] = "stat64", [EP_FSTATAT64] = "fstatat64", [EP_XSTAT] = "__xstat",
	[EP_LXSTAT] = "__lxstat", [EP_FXSTATAT] = "__fxstatat", [EP_STATX] = "statx",
	[EP_ACCESS] = "access", [EP_FACCESSAT] = "faccessat", [EP_OPEN] = "open",
	[EP_OPENAT] = "openat", [EP_READLINK] = "readlink", [EP_READLINKAT] = "readlinkat",
	[EP_OPENDIR] = "opendir", [EP_REALPATH] = "realpath",
};

enum bad {
	BAD_UNMAPPED, /* a page just unmapped (mmap, then munmap) */
	BAD_NONE,     /* a PROT_NONE page */
	BAD_RDONLY,   /* a read-only page (outputs only) */
	BAD_CROSS,    /* n bytes before a PROT_NONE page: a path with no NUL
		       * there, an output that does not fit */
	BAD_END,      /* valid: a path whose NUL is the last byte of a page, an
		       * output that ends there, a PROT_NONE page next */
	BAD_NULL,
	NBADS
};

static const char *const k_bad_names[NBADS] = {
	[BAD_UNMAPPED] = "unmapped", [BAD_NONE] = "prot-none", [BAD_RDONLY] = "read-only",
	[BAD_CROSS] = "crossing", [BAD_END] = "page-end", [BAD_NULL] = "NULL",
};

#define BP_B(bad, out, var, n) ((bad) | (out) << 3 | (var) << 4 | (n) << 8)
#define BP_BAD(b) ((b) & 7)
#define BP_OUT(b) (((b) >> 3) & 1)
#define BP_VAR(b) (((b) >> 4) & 15)
#define BP_N(b) (((b) >> 8) & 4095)

/* Entry points with an output the caller passes (struct, buffer). */
static bool ep_has_out(int ep)
{
	return ep <= EP_STATX || ep == EP_READLINK || ep == EP_READLINKAT || ep == EP_REALPATH;
}

struct op {
	int kind, a, b;
	char *p1, *p2;
	int nsub;
	struct op *sub;
};

static void op_free(struct op *op)
{
	free(op->p1);
	free(op->p2);
	for (int i = 0; i < op->nsub; i++)
		op_free(&op->sub[i]);
	free(op->sub);
	memset(op, 0, sizeof(*op));
}

static bool is_lookup(int kind)
{
	return kind <= L_EFAULT;
}

/* ------------------------------------------------------------------------ */
/* Globals                                                                  */

static char g_scratch[PATH_MAX]; /* mkdtemp() result */
static char g_tree[PATH_MAX];    /* the tree: "@" */
static uint64_t g_seed = 1;
static long g_nops = 100000;
static unsigned g_efault_pm = 100; /* --efault: per mille of lookups followed by probes */
static int g_depth = BARRIER_DEPTH; /* --depth: levels of "z" above the tree */
static unsigned g_look_pm;       /* --look-helpers: per mille of main-stream ops */
static pid_t g_run_pid;          /* the run's process (run_trial), for the statistics */
static bool g_verbose;
static bool g_quiet;             /* minimizer trials: no output, no log file */
static bool g_started_root;
static long g_idx = -1;          /* index of the operation running */
static const char *g_phase = "main";
static unsigned long g_compared, g_mutations, g_batches;
static unsigned long g_efault, g_efault_skipped; /* bad-pointer probes compared, skipped */
static unsigned long g_look_batches, g_look_lookups; /* lookup helpers, their lookups */

/* Resolved at startup: the shim's (or libc's) old stat entry points. */
static int (*p_xstat)(int, const char *, struct stat *);
static int (*p_lxstat)(int, const char *, struct stat *);
static int (*p_fxstatat)(int, int, const char *, struct stat *, int);
/* glibc's own euidaccess: not a system call but an emulation on top of stat
 * (it ignores bogus mode bits, and root may search a directory only if some
 * x bit is set), so it is the reference for euidaccess/eaccess. */
static int (*p_libc_euidaccess)(const char *, int);

static char g_ring[RING][512]; /* the last operations, as text */
static unsigned long g_ringn;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void resolve_libc(void);
static void parent_of(const char *p, char *buf, size_t n);
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "rcuwalk_difftest: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static char *xstrdup(const char *s)
{
	char *r = s ? strdup(s) : NULL;

	if (s && !r)
		die("out of memory");
	return r;
}

/* ------------------------------------------------------------------------ */
/* Text form of operations (the log)                                        */

static void put_path(FILE *f, const char *p)
{
	if (!p)
		fputs("-", f);
	else if (!*p)
		fputs("''", f);
	else
		fputs(p, f);
}

static void op_write(FILE *f, const struct op *op, const char *indent)
{
	fprintf(f, "%s%s %d %d ", indent, k_kind_names[op->kind], op->a, op->b);
	put_path(f, op->p1);
	fputc(' ', f);
	put_path(f, op->p2);
	fputc('\n', f);
	for (int i = 0; i < op->nsub; i++)
		op_write(f, &op->sub[i], "  ");
}

static char *op_line(const struct op *op, char *buf, size_t n)
{
	FILE *f = fmemopen(buf, n, "w");

	if (!f) {
		snprintf(buf, n, "?");
		return buf;
	}
	op_write(f, op, "");
	fclose(f);
	buf[n - 1] = '\0';
	/* one line per op in the ring: batches keep their header only */
	char *nl = strchr(buf, '\n');
	if (nl && op->nsub)
		snprintf(nl, n - (size_t)(nl - buf), " (+%d ops)", op->nsub);
	else if (nl)
		*nl = '\0';
	return buf;
}

static char *get_path(const char *tok)
{
	if (!strcmp(tok, "-"))
		return NULL;
	if (!strcmp(tok, "''"))
		return xstrdup("");
	return xstrdup(tok);
}

/* Parse one line (without indentation) into *op.  Returns false if malformed. */
static bool op_parse(char *line, struct op *op)
{
	char *save = NULL, *tok[5];
	int n = 0;

	memset(op, 0, sizeof(*op));
	for (char *t = strtok_r(line, " \t\n", &save); t && n < 5; t = strtok_r(NULL, " \t\n", &save))
		tok[n++] = t;
	if (n != 5)
		return false;
	op->kind = -1;
	for (int k = 0; k < NKINDS; k++)
		if (!strcmp(tok[0], k_kind_names[k]))
			op->kind = k;
	if (op->kind < 0)
		return false;
	op->a = atoi(tok[1]);
	op->b = atoi(tok[2]);
	op->p1 = get_path(tok[3]);
	op->p2 = get_path(tok[4]);
	return true;
}

/* ------------------------------------------------------------------------ */
/* The generator: deterministic from the seed, independent of the results.  */

/*
 * The bad-pointer probes (L_EFAULT) come from a stream of their own (es),
 * inserted after main-stream lookups: with --efault 0 a seed gives the same
 * operations as before the probes existed, and with any share the same
 * main-stream operations, probes between them.
 */
struct gen {
	uint64_t s;
	uint64_t es;    /* the probes' stream */
	long i;         /* ops generated, probes included: the op index */
	long nmain;     /* main-stream ops generated */
	long nobody_at; /* main-stream index of the as-nobody marker, -1 if none */
	unsigned efault_pm; /* per mille of lookups followed by probes */
	int npending;   /* probes generated, not yet handed out */
	struct op pending[2];
	char *last_link; /* the last symlink the main stream made (readlink probes) */
	bool euid_nobody;
	bool root;      /* the phase runs with uid 0 */
	/* A shallow tree (--depth below BARRIER_DEPTH): -1 (the default
	 * depth: no cap), else the most ".." a lookup path may hold; mutation
	 * paths and symlink bodies then hold none (see shallow_cap()). */
	int dotdot_cap;
	unsigned look_pm; /* --look-helpers: per mille of main-stream ops */
	char *recent[RECENT]; /* lookup paths generated lately (look batches) */
	unsigned long nrecent;
	bool look_again; /* the next main-stream op is a second look batch */
};

static uint64_t mix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd64(struct gen *g)
{
	return mix64(&g->s);
}

static unsigned rnd(struct gen *g, unsigned n)
{
	return (unsigned)(rnd64(g) % n);
}

/* From the probes' stream. */
static unsigned erand(struct gen *g, unsigned n)
{
	return (unsigned)(mix64(&g->es) % n);
}

/* Index into weights[] chosen with probability proportional to its weight. */
static int pick(struct gen *g, const unsigned *w, int n)
{
	unsigned total = 0, r;

	for (int i = 0; i < n; i++)
		total += w[i];
	r = rnd(g, total);
	for (int i = 0; i < n; i++) {
		if (r < w[i])
			return i;
		r -= w[i];
	}
	return n - 1;
}
#define PICK(g, w) pick((g), (w), (int)(sizeof(w) / sizeof((w)[0])))

static const char *gen_name(struct gen *g)
{
	static const unsigned w[] = { 35, 27, 22, 16 };
	static const char *const names[] = { "a", "b", "c", "d" };

	return names[PICK(g, w)];
}

static char g_long256[257], g_long255[256];

static void app(char *buf, size_t n, const char *s)
{
	size_t l = strlen(buf);

	snprintf(buf + l, n - l, "%s", s);
}

/* A path to look up: anything goes, including "", ".", "..", "//", long
 * components and trailing slashes.  At most seven "..": six components and
 * a trailing "/.." (g->dotdot_cap lowers that in a shallow tree). */
static char *gen_lookup_path(struct gen *g)
{
	static const unsigned wn[] = { 22, 30, 24, 13, 8, 3 };
	static const char *const special[] = { "@", ".", "@/.", "./", "..", "@/..", "@/", "" };
	char buf[4096] = "";
	unsigned r = rnd(g, 1000);
	int ncomp, dots = 0;

	if (r < 16)
		return xstrdup(special[rnd(g, 8)]); /* one ".." at most */
	if (rnd(g, 100) < 40)
		app(buf, sizeof(buf), "@");
	else if (rnd(g, 12) == 0)
		app(buf, sizeof(buf), ".");
	ncomp = PICK(g, wn) + 1;
	for (int i = 0; i < ncomp; i++) {
		unsigned c = rnd(g, 1000);

		if (*buf)
			app(buf, sizeof(buf), rnd(g, 40) ? "/" : "//");
		if (c < 800)
			app(buf, sizeof(buf), gen_name(g));
		else if (c < 870)
			app(buf, sizeof(buf), ".");
		else if (c < 960) {
			/* a ".." over the cap is a "." (no draw of its own:
			 * within the cap, the same path as uncapped) */
			bool over = g->dotdot_cap >= 0 && dots >= g->dotdot_cap;

			app(buf, sizeof(buf), over ? "." : "..");
			dots += !over;
		} else if (c < 985)
			app(buf, sizeof(buf), "e");
		else if (c < 993)
			app(buf, sizeof(buf), g_long255);
		else
			app(buf, sizeof(buf), g_long256);
	}
	r = rnd(g, 100);
	if (r < 8)
		app(buf, sizeof(buf), "/");
	else if (r < 10)
		app(buf, sizeof(buf), "/.");
	else if (r < 11)
		app(buf, sizeof(buf), g->dotdot_cap >= 0 && dots >= g->dotdot_cap ? "/." : "/..");
	else if (r < 12)
		app(buf, sizeof(buf), "//");
	return xstrdup(buf);
}

/* A path to change: starts with a name (never ".", ".." or the tree itself),
 * one to four components; in a shallow tree never "..". */
static char *gen_mut_path(struct gen *g)
{
	static const unsigned wn[] = { 30, 35, 22, 13 };
	char buf[4096] = "";
	int ncomp = PICK(g, wn) + 1;

	if (rnd(g, 100) < 35)
		app(buf, sizeof(buf), "@/");
	for (int i = 0; i < ncomp; i++) {
		unsigned c = rnd(g, 1000);

		if (i)
			app(buf, sizeof(buf), "/");
		if (i == 0 || c < 940)
			app(buf, sizeof(buf), c < 995 || i == 0 ? gen_name(g) : g_long255);
		else if (c < 970 || g->dotdot_cap >= 0) /* shallow: never ".." */
			app(buf, sizeof(buf), ".");
		else
			app(buf, sizeof(buf), "..");
	}
	if (rnd(g, 100) < 4)
		app(buf, sizeof(buf), "/");
	return xstrdup(buf);
}

/* A symlink body: relative or absolute into the tree, at most two "..",
 * loops and dangling targets come by themselves.  In a shallow tree no
 * "..": the body ".." becomes "@" (the tree), a ".." component a name. */
static char *gen_link_body(struct gen *g)
{
	char buf[4096] = "";
	unsigned r = rnd(g, 100);
	int ncomp, dots = 0;

	if (r < 2)
		return xstrdup("/proc/self/cwd");
	if (r < 3)
		return xstrdup("");
	if (r < 5)
		return xstrdup(".");
	if (r < 7) /* shallow: the tree itself, never above it */
		return xstrdup(g->dotdot_cap >= 0 ? "@" : "..");
	if (rnd(g, 100) < 15)
		app(buf, sizeof(buf), "@");
	ncomp = (int)rnd(g, 3) + 1;
	for (int i = 0; i < ncomp; i++) {
		unsigned c = rnd(g, 100);

		if (*buf)
			app(buf, sizeof(buf), "/");
		if (c < 75 || (c >= 80 && (dots >= 2 || g->dotdot_cap >= 0))) {
			app(buf, sizeof(buf), gen_name(g));
		} else if (c < 80) {
			app(buf, sizeof(buf), ".");
		} else {
			app(buf, sizeof(buf), "..");
			dots++;
		}
	}
	if (rnd(g, 100) < 8)
		app(buf, sizeof(buf), "/");
	return xstrdup(buf);
}

static int gen_mode(struct gen *g)
{
	/* 01777: a scratch directory (sticky, writable by all), which the
	 * shim watches for names only (doc/design.md, "Scratch directories");
	 * 01755: sticky, not one. */
	static const unsigned w[] = { 30, 10, 15, 5, 8, 6, 6, 5, 5, 5, 5, 8, 3 };
	static const int modes[] = { 0755, 0700, 0644, 0600, 0000, 0500, 0300, 0111, 0711, 0444, 0777,
				     01777, 01755 };

	return modes[PICK(g, w)];
}

static int gen_size(struct gen *g)
{
	static const int sizes[] = { 0, 1, 17, 512, 4096, 5000, 9000 };

	return sizes[rnd(g, 7)];
}

static const int k_open_extra[] = {
	0, O_NOFOLLOW, O_DIRECTORY, O_NOFOLLOW | O_DIRECTORY, O_PATH, O_PATH | O_NOFOLLOW,
	O_PATH | O_DIRECTORY, O_PATH | O_NOFOLLOW | O_DIRECTORY, O_NOATIME, O_TRUNC,
};

static void gen_lookup(struct gen *g, struct op *op)
{
	static const unsigned w[] = { 16, 12, 8, 3, 3, 3, 2, 2, 2, 10, 10, 2, 2, 25 };

	op->kind = PICK(g, w); /* L_STAT .. L_OPEN in order */
	op->p1 = gen_lookup_path(g);
	switch (op->kind) {
	case L_FSTATAT:
	case L_FSTATAT64:
	case L_FXSTATAT: {
		unsigned r = rnd(g, 100);

		op->b = r < 45 ? 0 : r < 90 ? AT_SYMLINK_NOFOLLOW : r < 95 ? AT_NO_AUTOMOUNT
			: r < 98 ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH;
		break;
	}
	case L_ACCESS:
	case L_EUIDACCESS:
	case L_EACCESS:
		op->a = rnd(g, 100) < 2 ? 8 : (int)rnd(g, 8);
		break;
	case L_FACCESSAT: {
		static const int fl[] = { 0, AT_EACCESS, AT_SYMLINK_NOFOLLOW, AT_EACCESS | AT_SYMLINK_NOFOLLOW };

		op->a = rnd(g, 100) < 2 ? 8 : (int)rnd(g, 8);
		op->b = fl[rnd(g, 4)];
		break;
	}
	case L_OPEN: {
		static const unsigned wf[] = { 30, 12, 12, 5, 12, 8, 6, 3, 2, 2 };

		op->a = rnd(g, 100) < 40 ? 0 : (int)rnd(g, 8);
		op->b = k_open_extra[PICK(g, wf)] | (rnd(g, 2) ? O_CLOEXEC : 0);
		break;
	}
	default:
		break;
	}
}

/* A mutation; helper batches exclude create-excl (compared) and link (a
 * hard link made by another process is a documented limit). */
static void gen_mutation(struct gen *g, struct op *op, bool helper)
{
	static const unsigned w[] = { 5, 13, 12, 11, 6, 14, 12, 14, 3, 9, 4, 3, 1 };
	int k;

	do
		k = M_EXCL + PICK(g, w);
	while (helper && (k == M_EXCL || k == M_LINK));
	op->kind = k;
	op->p1 = gen_mut_path(g);
	switch (k) {
	case M_EXCL:
		op->b = gen_mode(g);
		break;
	case M_CREATE:
		op->a = (int)rnd(g, 5);
		op->b = rnd(g, 100) < 70 ? 0644 : gen_mode(g);
		break;
	case M_WRITE:
		op->a = (int)rnd(g, 5);
		op->b = gen_size(g);
		break;
	case M_UNLINK:
	case M_RMDIR:
		op->a = (int)rnd(g, 3);
		break;
	case M_MKDIR:
		op->a = (int)rnd(g, 2);
		op->b = rnd(g, 100) < 65 ? 0755 : gen_mode(g);
		break;
	case M_SYMLINK:
		op->a = (int)rnd(g, 2);
		op->p2 = gen_link_body(g);
		break;
	case M_RENAME: {
		unsigned r = rnd(g, 100);

		op->p2 = gen_mut_path(g);
		op->a = (int)rnd(g, 3);
		op->b = r < 60 ? 0 : r < 75 ? RENAME_NOREPLACE : RENAME_EXCHANGE;
		if (op->b)
			op->a = 2;
		break;
	}
	case M_LINK:
		op->a = (int)rnd(g, 3);
		op->p2 = gen_mut_path(g);
		break;
	case M_CHMOD:
		op->a = (int)rnd(g, 2);
		op->b = gen_mode(g);
		if (rnd(g, 50) == 0) { /* the tree itself, or the cwd */
			free(op->p1);
			op->p1 = xstrdup(rnd(g, 2) ? "@" : ".");
		}
		break;
	case M_TRUNCATE:
		op->b = gen_size(g);
		break;
	case M_UTIME:
		op->a = (int)rnd(g, 5);
		op->b = 1000000000 + (int)rnd(g, 1000);
		break;
	default:
		break;
	}
}

static void gen_fd_op(struct gen *g, struct op *op, bool helper)
{
	static const unsigned w[] = { 30, 35, 10, 10, 15 };
	static const int fl[] = { O_WRONLY | O_APPEND, O_RDWR, O_WRONLY | O_CREAT, O_WRONLY | O_TRUNC };

	op->kind = helper ? F_WRITE + (int)rnd(g, 3) : F_OPEN + PICK(g, w);
	op->a = (int)rnd(g, NSLOTS);
	switch (op->kind) {
	case F_OPEN:
		op->p1 = gen_mut_path(g);
		op->b = fl[rnd(g, 4)];
		break;
	case F_WRITE:
	case F_TRUNC:
		op->b = gen_size(g);
		break;
	case F_CHMOD:
		op->b = gen_mode(g);
		break;
	default:
		break;
	}
}

static void gen_batch(struct gen *g, struct op *op, bool exec)
{
	op->kind = exec ? B_EXEC : B_FORK;
	op->a = op->nsub = (int)rnd(g, 4) + 1;
	op->b = exec ? 0 : rnd(g, 100) < 88 ? 0 : 1;
	op->sub = calloc((size_t)op->nsub, sizeof(*op->sub));
	if (!op->sub)
		die("out of memory");
	for (int i = 0; i < op->nsub; i++) {
		if (!exec && rnd(g, 100) < 15)
			gen_fd_op(g, &op->sub[i], true);
		else
			gen_mutation(g, &op->sub[i], true);
	}
}

/* A path looked up lately (look batches, --look-helpers). */
static void recent_add(struct gen *g, const char *path)
{
	char **slot = &g->recent[g->nrecent++ % RECENT];

	free(*slot);
	*slot = xstrdup(path);
}

/* A path looked up lately: one of the last 8 more often than not. */
static char *recent_pick(struct gen *g)
{
	unsigned long n = g->nrecent < RECENT ? g->nrecent : RECENT;
	unsigned k = rnd(g, 100) < 60 && n > 8 ? 8 : (unsigned)n;

	return xstrdup(g->recent[(g->nrecent - 1 - rnd(g, k)) % RECENT]);
}

/* Lookups for a lookup helper: most of them names looked up lately (by this
 * process or a helper), which the shared path table may hold, the others
 * new.  Half the batches are followed at once by a second one, which asks
 * mostly the first one's names: nothing changes between them, so the
 * second helper finds the absent ones in the shared path table. */
static void gen_look_batch(struct gen *g, struct op *op)
{
	op->kind = B_LOOK;
	op->a = op->nsub = (int)rnd(g, 8) + 1;
	op->sub = calloc((size_t)op->nsub, sizeof(*op->sub));
	if (!op->sub)
		die("out of memory");
	for (int i = 0; i < op->nsub; i++) {
		struct op *l = &op->sub[i];

		gen_lookup(g, l);
		if (g->nrecent && rnd(g, 100) < 60) {
			free(l->p1);
			l->p1 = recent_pick(g);
		}
		recent_add(g, l->p1);
	}
	g->look_again = !g->look_again && rnd(g, 2);
}

/* Changes for a raw child, and lookups of the names they change for this
 * process to make meanwhile (run_race_batch()). */
static void gen_race_batch(struct gen *g, struct op *op)
{
	int nmut = (int)rnd(g, 3) + 1, n = 0;

	op->kind = B_RACE;
	op->sub = calloc((size_t)nmut * 3, sizeof(*op->sub));
	if (!op->sub)
		die("out of memory");
	for (int i = 0; i < nmut; i++) {
		struct op *m = &op->sub[n++];
		const char *paths[2];

		gen_mutation(g, m, true);
		paths[0] = m->p1;
		paths[1] = m->kind == M_RENAME ? m->p2 : NULL;
		for (int k = 0; k < 2 && paths[k]; k++) {
			struct op *l = &op->sub[n++];
			char par[4096];

			gen_lookup(g, l);
			parent_of(paths[k], par, sizeof(par));
			free(l->p1);
			l->p1 = xstrdup(rnd(g, 4) ? paths[k] : par);
			recent_add(g, l->p1);
		}
	}
	op->a = op->nsub = n;
}

/* A bad-pointer probe of path (the lookup just generated). */
static void gen_efault(struct gen *g, const char *path, struct op *op)
{
	static const int in_bads[] = { BAD_UNMAPPED, BAD_NONE, BAD_CROSS, BAD_END, BAD_NULL };
	int ep = (int)erand(g, NEPS), out = ep_has_out(ep) && erand(g, 2);
	int bad = out ? (int)erand(g, NBADS) : in_bads[erand(g, 5)];

	memset(op, 0, sizeof(*op));
	op->kind = L_EFAULT;
	op->a = ep;
	op->b = BP_B(bad, out, (int)erand(g, 16), (int)erand(g, 4096));
	if (ep == EP_READLINK || ep == EP_READLINKAT) {
		unsigned r = erand(g, 3);

		if (r == 1 && g->last_link)
			path = g->last_link;
		else if (r == 2)
			path = erand(g, 2) ? "@/../L" : "@/../M"; /* make_scratch() */
	}
	op->p1 = xstrdup(path);
}

static void gen_main_op(struct gen *g, struct op *op)
{
	unsigned r;

	memset(op, 0, sizeof(*op));
	if (g->nmain++ == g->nobody_at) {
		op->kind = P_AS_NOBODY;
		g->root = false;
		g->euid_nobody = false;
		return;
	}
	if (g->euid_nobody && rnd(g, 100) < 8) {
		op->kind = P_SETEUID;
		op->a = 0;
		g->euid_nobody = false;
		return;
	}
	/* Not with euid nobody: with a real uid of root, the exec'd helper
	 * may be AT_SECURE and then ld.so would not preload the shim. */
	if (g->look_pm && !g->euid_nobody && (g->look_again || rnd(g, 1000) < g->look_pm)) {
		if (!g->look_again && rnd(g, 3) == 0)
			gen_race_batch(g, op);
		else
			gen_look_batch(g, op);
		return;
	}
	r = rnd(g, 1000);
	if (r < 620) {
		gen_lookup(g, op);
	} else if (r < 820) {
		gen_mutation(g, op, false);
	} else if (r < 880) {
		gen_batch(g, op, false);
	} else if (r < 890) {
		gen_batch(g, op, true);
	} else if (r < 935) {
		gen_fd_op(g, op, false);
	} else if (r < 965) {
		static const unsigned wn[] = { 30, 40, 30 };
		char buf[64] = "";
		int n = PICK(g, wn);

		op->kind = P_CHDIR;
		op->a = (int)rnd(g, 2);
		app(buf, sizeof(buf), rnd(g, 2) ? "@" : ".");
		for (int i = 0; i < n; i++) {
			app(buf, sizeof(buf), "/");
			app(buf, sizeof(buf), rnd(g, 8) ? gen_name(g) : "..");
		}
		op->p1 = xstrdup(buf);
	} else if (r < 975 && g->root && !g->euid_nobody) {
		op->kind = P_SETEUID;
		op->a = NOBODY;
		g->euid_nobody = true;
	} else {
		gen_lookup(g, op);
	}
}

/* The next operation: a probe pending, or one of the main stream (then,
 * after a lookup, one or two probes of its path with the share asked). */
static void gen_op(struct gen *g, struct op *op)
{
	g->i++;
	if (g->npending > 0) {
		*op = g->pending[0];
		g->pending[0] = g->pending[1];
		g->npending--;
		return;
	}
	gen_main_op(g, op);
	/* With look batches, a fifth of the lookups ask a name looked up
	 * lately, which a helper may have found absent (and offered). */
	if (g->look_pm && op->kind <= L_OPEN) {
		if (g->nrecent && rnd(g, 100) < 20) {
			free(op->p1);
			op->p1 = recent_pick(g);
		}
		recent_add(g, op->p1);
	}
	/* a name in the tree itself: likely made, and still there a while */
	if (op->kind == M_SYMLINK && !strchr(op->p1 + (op->p1[0] == '@' ? 2 : 0), '/')) {
		free(g->last_link);
		g->last_link = xstrdup(op->p1);
	}
	if (op->kind <= L_OPEN && g->efault_pm && erand(g, 1000) < g->efault_pm) {
		int n = erand(g, 4) ? 1 : 2;

		for (int k = 0; k < n; k++)
			gen_efault(g, op->p1, &g->pending[g->npending++]);
	}
}

static void gen_release(struct gen *g)
{
	while (g->npending > 0)
		op_free(&g->pending[--g->npending]);
	free(g->last_link);
	g->last_link = NULL;
	for (int i = 0; i < RECENT; i++) {
		free(g->recent[i]);
		g->recent[i] = NULL;
	}
}

/*
 * The most ".." a generated lookup path may hold in a tree `depth` levels of
 * "z" below the scratch directory, or -1: no cap.
 *
 * Why 96 levels by default: a lookup climbs by the ".." of its path (seven
 * at most, gen_lookup_path()) and of the symlink bodies it follows (two
 * each, at most 40 of them: the kernel's MAXSYMLINKS), 87 levels at most
 * from where it starts, the cwd or the tree (cwd_in_tree()), and 97 levels
 * lie between the tree and /tmp.  (A mutation may reach above the tree too,
 * by the same means, and move the cwd there; the margin is wide enough for
 * that to stay theory.)
 *
 * Below that depth (--depth N) nothing climbs through symlinks: mutation
 * paths and symlink bodies hold no ".." (the generator), so every entry is
 * made in the tree, every symlink leads to the tree or below its own
 * directory, and the cwd never leaves the tree; a lookup then stands at
 * most as many levels above the tree as its path holds "..", which the cap
 * keeps within the N + 1 levels up to the scratch directory (made by
 * mkdtemp, changed by nobody else).  From N = 6 on, the cap never bites.
 */
static int shallow_cap(int depth)
{
	return depth >= BARRIER_DEPTH ? -1 : depth + 1;
}

static void gen_init(struct gen *g, uint64_t seed, long nops, bool root, unsigned efault_pm)
{
	memset(g, 0, sizeof(*g));
	g->s = seed * 0x2545f4914f6cdd1dULL + 0x1234567;
	g->es = seed * 0x9e3779b97f4a7c15ULL + 0x7654321;
	g->root = root;
	g->nobody_at = root ? nops / 2 : -1;
	g->efault_pm = efault_pm;
	g->dotdot_cap = shallow_cap(g_depth);
	g->look_pm = g_look_pm;
}

/* ------------------------------------------------------------------------ */
/* Sources of operations: the generator or a parsed log                     */

struct src {
	bool from_list;
	struct gen g;
	long n;          /* generator: ops to make */
	struct op *list; /* parsed log */
	long nlist, pos;
};

static bool src_next(struct src *s, struct op *op)
{
	if (!s->from_list) {
		if (s->g.nmain >= s->n && s->g.npending == 0)
			return false;
		gen_op(&s->g, op);
		return true;
	}
	if (s->pos >= s->nlist)
		return false;
	*op = s->list[s->pos++]; /* shallow: the list owns the memory */
	return true;
}

static void src_release(struct src *s, struct op *op)
{
	if (!s->from_list)
		op_free(op);
}

static struct op *load_log(const char *file, long *n)
{
	FILE *f = fopen(file, "r");
	char *line = NULL;
	size_t cap = 0, ncap = 0;
	struct op *ops = NULL, *batch = NULL;
	int want = 0;

	if (!f)
		die("%s: %s", file, strerror(errno));
	*n = 0;
	while (getline(&line, &cap, f) > 0) {
		char *l = line;
		struct op op;

		/* "# depth N": the log of a run in a shallow tree (write_log) */
		if (sscanf(l, "# depth %d", &g_depth) == 1 && (g_depth < 1 || g_depth > 200))
			die("%s: depth %d", file, g_depth);
		if (*l == '#' || *l == '\n')
			continue;
		while (*l == ' ')
			l++;
		if (!op_parse(l, &op))
			die("%s: malformed line: %s", file, line);
		if (want > 0) {
			batch->sub[batch->nsub++] = op;
			want--;
			continue;
		}
		if ((size_t)*n == ncap) {
			ncap = ncap ? 2 * ncap : 1024;
			ops = realloc(ops, ncap * sizeof(*ops));
			if (!ops)
				die("out of memory");
		}
		ops[*n] = op;
		if (op.kind == B_FORK || op.kind == B_EXEC || op.kind == B_LOOK || op.kind == B_RACE) {
			batch = &ops[*n];
			want = op.a;
			batch->sub = calloc((size_t)(want ? want : 1), sizeof(*batch->sub));
			batch->nsub = 0;
		}
		(*n)++;
	}
	free(line);
	fclose(f);
	return ops;
}

/* ------------------------------------------------------------------------ */
/* Paths                                                                    */

/* "@" at the start stands for the tree's absolute path. */
static const char *expand(const char *p, char *buf, size_t n)
{
	if (!p || p[0] != '@')
		return p;
	if ((size_t)snprintf(buf, n, "%s%s", g_tree, p + 1) >= n)
		die("path too long: %s", p);
	return buf;
}

/* Textual parent of p (as given, "@"-relative or cwd-relative). */
static void parent_of(const char *p, char *buf, size_t n)
{
	size_t len = strlen(p);
	char *s;

	snprintf(buf, n, "%s", p);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	s = strrchr(buf, '/');
	if (!s)
		snprintf(buf, n, ".");
	else if (s == buf)
		buf[1] = '\0';
	else
		*s = '\0';
}

/* ------------------------------------------------------------------------ */
/* Answers and their comparison                                             */

struct ans {
	long ret;
	int err;
	bool has_st;
	struct stat st;
	int fl; /* open: F_GETFL of the fd */
};

static const char *errname(int e)
{
	static char buf[32];
	const char *n = e == SENTINEL_ERRNO ? "(untouched)" : strerrorname_np(e);

	if (n)
		return n;
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

static void fmt_ans(const struct ans *a, char *buf, size_t n)
{
	int k = snprintf(buf, n, "ret=%ld errno=%s", a->ret, errname(a->err));

	if (a->has_st && k > 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k,
			 " dev=%lu ino=%lu mode=0%o nlink=%lu uid=%u gid=%u rdev=%lu size=%ld "
			 "blksize=%ld blocks=%ld mtime=%ld.%09ld ctime=%ld.%09ld fl=0%o",
			 (unsigned long)a->st.st_dev, (unsigned long)a->st.st_ino, a->st.st_mode,
			 (unsigned long)a->st.st_nlink, a->st.st_uid, a->st.st_gid,
			 (unsigned long)a->st.st_rdev, (long)a->st.st_size, (long)a->st.st_blksize,
			 (long)a->st.st_blocks, (long)a->st.st_mtim.tv_sec, a->st.st_mtim.tv_nsec,
			 (long)a->st.st_ctim.tv_sec, a->st.st_ctim.tv_nsec, a->fl);
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

static bool ans_equal(const struct ans *a, const struct ans *b, bool is_open)
{
	if (is_open ? (a->ret >= 0) != (b->ret >= 0) : a->ret != b->ret)
		return false;
	if (a->err != b->err || a->has_st != b->has_st)
		return false;
	if (!a->has_st)
		return true;
	if (is_open) /* the object opened, not its times (O_TRUNC moves them) */
		return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino &&
		       a->st.st_mode == b->st.st_mode && a->st.st_uid == b->st.st_uid &&
		       a->st.st_gid == b->st.st_gid && a->fl == b->fl;
	return st_equal(&a->st, &b->st);
}

static void write_log(long upto, const struct src *s, char *file, size_t n);

static const struct src *g_src; /* for the log on a mismatch */

/* Report a mismatch (both answers as text) and exit 1. */
static void mismatch_text(const char *call, const char *path, const char *ctx, const char *a,
			  const char *b)
{
	char file[PATH_MAX] = "";

	if (g_quiet)
		exit(1);
	fprintf(stderr,
		"\nMISMATCH seed=%" PRIu64 " op=%ld phase=%s uid=%d euid=%d\n"
		"  call:    %s(\"%s\")%s%s\n  shim:    %s\n  without: %s\n",
		g_seed, g_idx, g_phase, (int)getuid(), (int)geteuid(), call, path, ctx ? "  " : "",
		ctx ? ctx : "", a, b);
	fprintf(stderr, "  tree @ = %s\n  last operations:\n", g_tree);
	for (unsigned long i = g_ringn > RING ? g_ringn - RING : 0; i < g_ringn; i++)
		fprintf(stderr, "    #%lu %s\n", i, g_ring[i % RING]);
	if (g_src) {
		write_log(g_idx, g_src, file, sizeof(file));
		if (*file)
			fprintf(stderr, "  log: %s (replay: rcuwalk_difftest --replay %s;"
				" shrink: --minimize %s)\n", file, file, file);
	}
	exit(1);
}

static void mismatch(const char *call, const char *path, const char *ctx, const struct ans *shim,
		     const struct ans *raw)
{
	char a[768], b[768];

	fmt_ans(shim, a, sizeof(a));
	fmt_ans(raw, b, sizeof(b));
	mismatch_text(call, path, ctx, a, b);
}

static void begin(struct ans *a, unsigned char fill)
{
	memset(a, 0, sizeof(*a));
	memset(&a->st, fill, sizeof(a->st));
	errno = SENTINEL_ERRNO;
}

static void end_stat(struct ans *a, long r)
{
	a->err = errno;
	a->ret = r;
	a->has_st = r == 0;
	if (!a->has_st)
		memset(&a->st, 0, sizeof(a->st));
}

/* ------------------------------------------------------------------------ */
/* Lookups                                                                  */

static long raw_fstatat(const char *p, struct stat *st, int flags)
{
	return syscall(SYS_newfstatat, AT_FDCWD, p, st, flags);
}

static void cmp_stat(int kind, const char *p, int flags, const char *ctx)
{
	struct ans s, k;
	char call[64];
	int fl = flags;
	long r;

	switch (kind) {
	case L_STAT: fl = 0; break;
	case L_LSTAT: fl = AT_SYMLINK_NOFOLLOW; break;
	case L_STAT64: fl = 0; break;
	case L_LSTAT64: fl = AT_SYMLINK_NOFOLLOW; break;
	case L_XSTAT: fl = 0; break;
	case L_LXSTAT: fl = AT_SYMLINK_NOFOLLOW; break;
	default: break;
	}
	begin(&s, 0xa5);
	switch (kind) {
	case L_STAT: r = stat(p, &s.st); break;
	case L_LSTAT: r = lstat(p, &s.st); break;
	case L_FSTATAT: r = fstatat(AT_FDCWD, p, &s.st, fl); break;
	case L_STAT64: r = stat64(p, (struct stat64 *)&s.st); break;
	case L_LSTAT64: r = lstat64(p, (struct stat64 *)&s.st); break;
	case L_FSTATAT64: r = fstatat64(AT_FDCWD, p, (struct stat64 *)&s.st, fl); break;
	case L_XSTAT: r = p_xstat ? p_xstat(1, p, &s.st) : stat(p, &s.st); break;
	case L_LXSTAT: r = p_lxstat ? p_lxstat(1, p, &s.st) : lstat(p, &s.st); break;
	case L_FXSTATAT:
		r = p_fxstatat ? p_fxstatat(1, AT_FDCWD, p, &s.st, fl) : fstatat(AT_FDCWD, p, &s.st, fl);
		break;
	default: abort();
	}
	end_stat(&s, r);
	begin(&k, 0x5a);
	r = raw_fstatat(p, &k.st, fl);
	end_stat(&k, r);
	g_compared++;
	if (!ans_equal(&s, &k, false)) {
		snprintf(call, sizeof(call), "%s[flags=0x%x]", k_kind_names[kind], fl);
		mismatch(call, p, ctx, &s, &k);
	}
}

static void cmp_access(int kind, const char *p, int mode, int flags, const char *ctx)
{
	struct ans s, k;
	char call[64];
	long r;

	if (kind == L_EUIDACCESS || kind == L_EACCESS)
		flags = AT_EACCESS;
	else if (kind == L_ACCESS)
		flags = 0;
	begin(&s, 0);
	switch (kind) {
	case L_ACCESS: r = access(p, mode); break;
	case L_FACCESSAT: r = faccessat(AT_FDCWD, p, mode, flags); break;
	case L_EUIDACCESS: r = euidaccess(p, mode); break;
	case L_EACCESS: r = eaccess(p, mode); break;
	default: abort();
	}
	s.err = errno;
	s.ret = r;
	begin(&k, 0);
	if ((kind == L_EUIDACCESS || kind == L_EACCESS) && p_libc_euidaccess)
		r = p_libc_euidaccess(p, mode);
	else
		r = syscall(SYS_faccessat2, AT_FDCWD, p, mode, flags);
	k.err = errno;
	k.ret = r;
	g_compared++;
	if (!ans_equal(&s, &k, false)) {
		snprintf(call, sizeof(call), "%s[mode=%d flags=0x%x]", k_kind_names[kind], mode, flags);
		mismatch(call, p, ctx, &s, &k);
	}
}

static void fd_ans(struct ans *a, long fd)
{
	a->err = errno;
	a->ret = fd;
	if (fd >= 0) {
		a->has_st = syscall(SYS_fstat, (int)fd, &a->st) == 0;
		a->fl = fcntl((int)fd, F_GETFL);
		close((int)fd);
	}
}

static void cmp_open(int variant, const char *p, int flags, const char *ctx)
{
	static const char *const names[] = { "open", "open64", "openat", "openat64", "__open_2",
					     "__open64_2", "__openat_2", "__openat64_2" };
	struct ans s, k;
	char call[96];
	long fd;

	if (!(flags & O_PATH))
		flags |= O_NONBLOCK; /* FIFOs */
	begin(&s, 0);
	switch (variant) {
	case 0: fd = open(p, flags); break;
	case 1: fd = open64(p, flags); break;
	case 2: fd = openat(AT_FDCWD, p, flags); break;
	case 3: fd = openat64(AT_FDCWD, p, flags); break;
	case 4: fd = __open_2(p, flags); break;
	case 5: fd = __open64_2(p, flags); break;
	case 6: fd = __openat_2(AT_FDCWD, p, flags); break;
	default: fd = __openat64_2(AT_FDCWD, p, flags); break;
	}
	fd_ans(&s, fd);
	begin(&k, 0);
	fd = syscall(SYS_openat, AT_FDCWD, p, flags, 0);
	fd_ans(&k, fd);
	g_compared++;
	if (!ans_equal(&s, &k, true)) {
		snprintf(call, sizeof(call), "%s[flags=0%o]", names[variant & 7], flags);
		mismatch(call, p, ctx, &s, &k);
	}
}

/* ------------------------------------------------------------------------ */
/* Bad pointers (L_EFAULT)                                                  */

/*
 * The pages the probes point into, made once per run (bp_setup()):
 *   [0] read-write, the "tail": paths and outputs that end at its last byte
 *       or run past it;
 *   [1] PROT_NONE;
 *   [2] read-only, filled with RO_FILL: it must stay so;
 *   [3] PROT_NONE.
 * An unmapped page is made for each probe that needs one (mmap, munmap) and
 * checked after both calls to be unmapped still: if something mapped it
 * meanwhile (a thread of the shim), the probe proves nothing and is skipped.
 *
 * The call through libc and the reference run under catch_fault(): a
 * SIGSEGV or SIGBUS in them becomes part of the answer (glibc's opendir
 * reads the path itself; the shim must fault there exactly as glibc does).
 */
#define TAIL_FILL 0xa5
#define RO_FILL 0x5c
static char *g_bp;
static size_t g_pg;
static unsigned char g_tail_before[65536]; /* the tail page before a call */

/* Who defines an entry point as the program binds it. */
enum { OWN_OTHER, OWN_SHIM, OWN_LIBC };
static int g_owner[NEPS];

static char *(*p_libc_realpath)(const char *, char *);

static sigjmp_buf g_catch_env;
static volatile sig_atomic_t g_catching;

/* SIGSEGV and SIGBUS: a probe's call faulted, back to probe_caught(). */
static void catch_fault(int sig)
{
	struct sigaction dfl;

	if (g_catching) {
		g_catching = 0;
		siglongjmp(g_catch_env, sig);
	}
	/* Not a probe's: as without this handler (the fault recurs and kills). */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
}

static void bp_setup(void)
{
	struct sigaction sa;

	if (g_bp)
		return;
	g_pg = (size_t)sysconf(_SC_PAGESIZE);
	if (g_pg > sizeof(g_tail_before) || g_pg < PATH_MAX)
		die("page size %zu", g_pg);
	g_bp = mmap(NULL, 4 * g_pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g_bp == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(g_bp + 2 * g_pg, RO_FILL, g_pg);
	if (mprotect(g_bp + g_pg, g_pg, PROT_NONE) != 0 ||
	    mprotect(g_bp + 2 * g_pg, g_pg, PROT_READ) != 0 ||
	    mprotect(g_bp + 3 * g_pg, g_pg, PROT_NONE) != 0)
		die("mprotect: %s", strerror(errno));
	/* Through the shim's sigaction(): it keeps the program's handler and
	 * chains to it the faults that are not its own. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = catch_fault;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGBUS, &sa, NULL) != 0)
		die("sigaction: %s", strerror(errno));
}

struct probe {
	int ep, bad, out, n;
	int flags, mode;      /* from the variant */
	size_t bufsiz;        /* readlink */
	const char *path;     /* the path, expanded, in ordinary memory */
	size_t osz;           /* the output's size: what the call may write */
	/* the arguments passed */
	const char *pp;
	void *ob;
	size_t room;          /* readable bytes at ob */
	char *hole;           /* BAD_UNMAPPED: the page */
	size_t lo, hi;        /* the tail bytes the call may change */
};

/* An answer: struct ans, plus what bad pointers add. */
struct pans {
	struct ans a;
	int sig;        /* the call faulted: the signal caught */
	bool touched;   /* it failed, yet changed its (valid) output */
	bool stray;     /* it changed memory outside its output */
	bool has_txt;   /* readlink, realpath: the bytes written or returned */
	size_t ntxt;
	char txt[PATH_MAX + 1];
};

static union {
	struct stat st;
	struct statx stx;
	char c[PATH_MAX + 1];
} g_obuf;

/* The probe an L_EFAULT op describes (any a and b make one: logs may be
 * written by hand). */
static void probe_decode(const struct op *op, const char *path, struct probe *pr)
{
	static const int open_extra[] = { O_NONBLOCK, O_DIRECTORY | O_NONBLOCK, O_NOFOLLOW | O_NONBLOCK,
					  O_PATH };
	static const size_t rl_size[] = { 1, 2, 7, 17, 64, 255, 1024, PATH_MAX };
	int var = BP_VAR(op->b);

	memset(pr, 0, sizeof(*pr));
	pr->ep = op->a >= 0 && op->a < NEPS ? op->a : EP_STAT;
	pr->bad = BP_BAD(op->b) < NBADS ? BP_BAD(op->b) : BAD_END;
	pr->out = BP_OUT(op->b) && ep_has_out(pr->ep);
	if (!pr->out && pr->bad == BAD_RDONLY)
		pr->bad = BAD_END; /* a read-only path is a valid one */
	pr->n = BP_N(op->b);
	pr->path = path ? path : "";
	switch (pr->ep) {
	case EP_LSTAT:
	case EP_LXSTAT:
		pr->flags = AT_SYMLINK_NOFOLLOW;
		break;
	case EP_FSTATAT:
	case EP_FSTATAT64:
	case EP_FXSTATAT:
	case EP_STATX:
		pr->flags = var & 1 ? AT_SYMLINK_NOFOLLOW : 0;
		break;
	case EP_ACCESS:
		pr->mode = var & 7;
		break;
	case EP_FACCESSAT:
		pr->mode = var & 7;
		pr->flags = var & 8 ? AT_EACCESS : 0;
		break;
	case EP_OPEN:
	case EP_OPENAT:
		pr->flags = O_RDONLY | O_CLOEXEC | open_extra[var & 3];
		break;
	case EP_READLINK:
	case EP_READLINKAT:
		pr->bufsiz = rl_size[var & 7];
		break;
	default:
		break;
	}
	pr->osz = pr->ep == EP_STATX ? sizeof(struct statx)
		  : pr->ep <= EP_FXSTATAT ? sizeof(struct stat)
		  : pr->bufsiz ? pr->bufsiz : PATH_MAX;
}

/*
 * RCUWALK_SANITIZE=address builds the shim with UBSan too, which aborts on
 * the NULL path or buffer the shim hands on to glibc on purpose (glibc
 * declares them nonnull; the kernel's EFAULT is the answer): no NULL probes
 * there.
 */
#if defined(__SANITIZE_ADDRESS__)
#define NULL_PROBES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NULL_PROBES 0
#endif
#endif
#ifndef NULL_PROBES
#define NULL_PROBES 1
#endif

/* Whether the probe can run here.  A sanitizer's interceptor in front of
 * the shim reads the path itself (strlen): an unreadable path faults there,
 * before the shim.  realpath's EFAULT is the shim's promise (glibc's
 * realpath crashes on a bad pointer). */
static bool probe_runs(const struct probe *pr)
{
	int own = g_owner[pr->ep];

	if (pr->bad == BAD_END)
		return true;
	if (pr->bad == BAD_NULL && !NULL_PROBES && !(pr->ep == EP_REALPATH && pr->out))
		return false;
	if (pr->ep == EP_REALPATH) {
		if (pr->out && pr->bad == BAD_NULL)
			return true; /* valid: realpath mallocs */
		return own == OWN_SHIM || (!pr->out && pr->bad == BAD_NULL && own == OWN_LIBC);
	}
	return pr->out || own != OWN_OTHER;
}

/* Lay out the bad argument for one call: the tail page refilled, the path's
 * bytes written there if it goes there; pr->pp, pr->ob, room, lo, hi set. */
static bool probe_place(struct probe *pr)
{
	char *tail = g_bp, *guard = g_bp + g_pg, *ro = g_bp + 2 * g_pg;
	size_t len = strlen(pr->path), k;

	memset(tail, TAIL_FILL, g_pg);
	pr->pp = pr->path;
	pr->ob = &g_obuf;
	pr->room = sizeof(g_obuf);
	pr->lo = pr->hi = 0;
	if (!pr->out) {
		switch (pr->bad) {
		case BAD_UNMAPPED:
			pr->pp = pr->hole + (size_t)pr->n % g_pg;
			break;
		case BAD_NONE:
			pr->pp = guard + (size_t)pr->n % g_pg;
			break;
		case BAD_CROSS: /* k bytes of the path, no NUL */
			k = 1 + (size_t)pr->n % 24;
			for (size_t i = 0; i < k; i++)
				tail[g_pg - k + i] = len ? pr->path[i % len] : 'x';
			pr->pp = tail + g_pg - k;
			break;
		case BAD_END:
			if (len + 1 > g_pg)
				return false;
			memcpy(tail + g_pg - len - 1, pr->path, len + 1);
			pr->pp = tail + g_pg - len - 1;
			break;
		default:
			pr->pp = NULL;
			break;
		}
		memset(&g_obuf, TAIL_FILL, sizeof(g_obuf));
		return true;
	}
	pr->room = 0;
	switch (pr->bad) {
	case BAD_UNMAPPED:
		pr->ob = pr->hole + (size_t)pr->n % 64;
		break;
	case BAD_NONE:
		pr->ob = guard + (size_t)pr->n % 64;
		break;
	case BAD_RDONLY:
		pr->ob = ro + (size_t)pr->n % (g_pg - (pr->osz < g_pg ? pr->osz : g_pg) + 1);
		break;
	case BAD_CROSS: /* k bytes left before the guard page */
		k = pr->osz > 1 ? 1 + (size_t)pr->n % (pr->osz - 1) : 1;
		pr->ob = tail + g_pg - k;
		pr->room = k;
		pr->lo = g_pg - k;
		pr->hi = g_pg;
		break;
	case BAD_END:
		if (pr->osz > g_pg)
			return false;
		pr->ob = tail + g_pg - pr->osz;
		pr->room = pr->osz;
		pr->lo = g_pg - pr->osz;
		pr->hi = g_pg;
		break;
	default:
		pr->ob = NULL;
		break;
	}
	return true;
}

/* The call, through libc (the shim) or as the reference: the raw system
 * call, glibc's own opendir or realpath. */
static void probe_call(const struct probe *pr, bool ref, struct pans *r)
{
	const char *p = pr->pp;
	void *ob = pr->ob;
	int fl = pr->flags;
	long ret = -1;

	errno = SENTINEL_ERRNO;
	switch (pr->ep) {
	case EP_STAT:
	case EP_LSTAT:
	case EP_FSTATAT:
	case EP_STAT64:
	case EP_FSTATAT64:
	case EP_XSTAT:
	case EP_LXSTAT:
	case EP_FXSTATAT:
		if (ref)
			ret = raw_fstatat(p, ob, fl);
		else if (pr->ep == EP_STAT)
			ret = stat(p, ob);
		else if (pr->ep == EP_LSTAT)
			ret = lstat(p, ob);
		else if (pr->ep == EP_FSTATAT)
			ret = fstatat(AT_FDCWD, p, ob, fl);
		else if (pr->ep == EP_STAT64)
			ret = stat64(p, ob);
		else if (pr->ep == EP_FSTATAT64)
			ret = fstatat64(AT_FDCWD, p, ob, fl);
		else if (pr->ep == EP_XSTAT)
			ret = p_xstat ? p_xstat(1, p, ob) : stat(p, ob);
		else if (pr->ep == EP_LXSTAT)
			ret = p_lxstat ? p_lxstat(1, p, ob) : lstat(p, ob);
		else
			ret = p_fxstatat ? p_fxstatat(1, AT_FDCWD, p, ob, fl) : fstatat(AT_FDCWD, p, ob, fl);
		break;
	case EP_STATX:
		ret = ref ? syscall(SYS_statx, AT_FDCWD, p, fl, STATX_BASIC_STATS, ob)
			  : statx(AT_FDCWD, p, fl, STATX_BASIC_STATS, ob);
		break;
	case EP_ACCESS:
		ret = ref ? syscall(SYS_faccessat2, AT_FDCWD, p, pr->mode, 0) : access(p, pr->mode);
		break;
	case EP_FACCESSAT:
		ret = ref ? syscall(SYS_faccessat2, AT_FDCWD, p, pr->mode, fl)
			  : faccessat(AT_FDCWD, p, pr->mode, fl);
		break;
	case EP_OPEN:
	case EP_OPENAT:
		ret = ref ? syscall(SYS_openat, AT_FDCWD, p, fl, 0)
		      : pr->ep == EP_OPEN ? open(p, fl) : openat(AT_FDCWD, p, fl);
		fd_ans(&r->a, ret);
		return;
	case EP_READLINK:
	case EP_READLINKAT:
		ret = ref ? syscall(SYS_readlinkat, AT_FDCWD, p, ob, pr->bufsiz)
		      : pr->ep == EP_READLINK ? readlink(p, ob, pr->bufsiz)
					      : readlinkat(AT_FDCWD, p, ob, pr->bufsiz);
		break;
	case EP_OPENDIR: {
		DIR *d;

		if (ref) {
			/* The kernel's openat with glibc's opendir flags: the shim
			 * answers EFAULT for a name glibc would crash on. */
			ret = syscall(SYS_openat, AT_FDCWD, p,
				      O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_LARGEFILE | O_CLOEXEC);
			r->a.err = ret < 0 ? errno : SENTINEL_ERRNO;
			r->a.ret = ret < 0 ? -1 : 0;
			if (ret >= 0) {
				r->a.has_st = syscall(SYS_fstat, (int)ret, &r->a.st) == 0;
				r->a.fl = fcntl((int)ret, F_GETFL);
				syscall(SYS_close, (int)ret);
			}
			return;
		}
		d = opendir(p);
		r->a.err = errno;
		r->a.ret = d ? 0 : -1;
		if (d) {
			r->a.has_st = syscall(SYS_fstat, dirfd(d), &r->a.st) == 0;
			r->a.fl = fcntl(dirfd(d), F_GETFL);
			closedir(d);
		}
		return;
	}
	case EP_REALPATH: {
		char *res = ref ? p_libc_realpath(p, ob) : realpath(p, ob);

		r->a.err = errno;
		r->a.ret = res ? 0 : -1;
		if (res) {
			size_t max = res == ob ? pr->room : sizeof(r->txt) - 1;

			r->ntxt = strnlen(res, max);
			memcpy(r->txt, res, r->ntxt);
			r->has_txt = true;
			if (res != ob)
				free(res);
		}
		return;
	}
	default:
		abort();
	}
	r->a.err = errno;
	r->a.ret = ret;
}

/* The call under catch_fault(), then what it wrote. */
static void probe_caught(struct probe *pr, bool ref, struct pans *r)
{
	const unsigned char *t = (const unsigned char *)g_bp;
	int sig;

	memset(r, 0, sizeof(*r));
	memcpy(g_tail_before, g_bp, g_pg);
	sig = sigsetjmp(g_catch_env, 1);
	if (sig == 0) {
		g_catching = 1;
		probe_call(pr, ref, r);
		g_catching = 0;
	} else {
		memset(&r->a, 0, sizeof(r->a));
		r->a.ret = -1;
		r->sig = sig;
		return;
	}
	/* the tail page outside [lo, hi), and the read-only page */
	for (size_t i = 0; i < g_pg && !r->stray; i++)
		r->stray = (i < pr->lo || i >= pr->hi) && t[i] != g_tail_before[i];
	if (pr->out && pr->bad == BAD_RDONLY)
		for (size_t i = 0; i < g_pg && !r->stray; i++)
			r->stray = (unsigned char)g_bp[2 * g_pg + i] != RO_FILL;
	if (pr->ep == EP_OPEN || pr->ep == EP_OPENAT || pr->ep == EP_OPENDIR || pr->ep == EP_REALPATH)
		return;
	if (r->a.ret < 0) { /* a failure writes nothing (the kernel's) */
		if (pr->room >= pr->osz && pr->ob)
			for (size_t i = 0; i < pr->osz && !r->touched; i++)
				r->touched = ((unsigned char *)pr->ob)[i] != TAIL_FILL;
		return;
	}
	if (pr->ep == EP_READLINK || pr->ep == EP_READLINKAT) {
		r->ntxt = (size_t)r->a.ret < pr->room ? (size_t)r->a.ret : pr->room;
		memcpy(r->txt, pr->ob, r->ntxt);
		r->has_txt = true;
	} else if (pr->room >= pr->osz && pr->ep == EP_STATX) {
		const struct statx *x = pr->ob;

		r->a.has_st = true;
		r->a.st.st_dev = makedev(x->stx_dev_major, x->stx_dev_minor);
		r->a.st.st_ino = x->stx_ino;
		r->a.st.st_mode = x->stx_mode;
		r->a.st.st_nlink = x->stx_nlink;
		r->a.st.st_uid = x->stx_uid;
		r->a.st.st_gid = x->stx_gid;
		r->a.st.st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor);
		r->a.st.st_size = (off_t)x->stx_size;
		r->a.st.st_blksize = x->stx_blksize;
		r->a.st.st_blocks = (blkcnt_t)x->stx_blocks;
		r->a.st.st_mtim.tv_sec = x->stx_mtime.tv_sec;
		r->a.st.st_mtim.tv_nsec = x->stx_mtime.tv_nsec;
		r->a.st.st_ctim.tv_sec = x->stx_ctime.tv_sec;
		r->a.st.st_ctim.tv_nsec = x->stx_ctime.tv_nsec;
		r->a.fl = (int)x->stx_mask;
	} else if (pr->room >= pr->osz) {
		r->a.has_st = true;
		memcpy(&r->a.st, pr->ob, sizeof(r->a.st));
	}
}

static bool pans_equal(const struct pans *a, const struct pans *b, bool is_open)
{
	return a->sig == b->sig && a->touched == b->touched && a->stray == b->stray &&
	       ans_equal(&a->a, &b->a, is_open) && a->has_txt == b->has_txt &&
	       a->ntxt == b->ntxt && memcmp(a->txt, b->txt, a->ntxt) == 0;
}

static void fmt_pans(const struct pans *a, char *buf, size_t n)
{
	size_t k;

	if (a->sig) {
		snprintf(buf, n, "killed by %s", strsignal(a->sig));
		return;
	}
	fmt_ans(&a->a, buf, n);
	k = strlen(buf);
	if (a->touched && k < n)
		k += (size_t)snprintf(buf + k, n - k, " (failed, yet wrote its output)");
	if (a->stray && k < n)
		k += (size_t)snprintf(buf + k, n - k, " (wrote outside its output)");
	if (a->has_txt && k < n)
		snprintf(buf + k, n - k, " text=\"%.*s\"", (int)a->ntxt, a->txt);
}

/* Is the hole still unmapped (nothing mapped it while the probe ran)? */
static bool hole_unmapped(char *hole)
{
	void *p = mmap(hole, g_pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED)
		return false;
	munmap(p, g_pg);
	return p == hole;
}

/* realpath: the shim's answer for an unreadable path or an unwritable
 * resolved buffer is EFAULT where glibc would have written (it crashes);
 * otherwise glibc's own answer (pre: glibc with a good buffer). */
static void realpath_expect(struct probe *pr, struct pans *k)
{
	static char good[PATH_MAX + 1];
	struct pans pre;
	bool wrote;

	memset(good, TAIL_FILL, sizeof(good));
	memset(&pre, 0, sizeof(pre));
	errno = SENTINEL_ERRNO;
	{
		char *res = p_libc_realpath(pr->bad == BAD_NULL && !pr->out ? NULL : pr->path,
					    pr->bad == BAD_NULL && pr->out ? NULL : good);

		pre.a.err = errno;
		pre.a.ret = res ? 0 : -1;
		if (res) {
			pre.ntxt = strlen(res);
			memcpy(pre.txt, res, pre.ntxt);
			pre.has_txt = true;
			if (res != good)
				free(res);
		}
	}
	wrote = pre.a.ret == 0 || (unsigned char)good[0] != TAIL_FILL;
	/* the page-end buffer fits what glibc writes exactly */
	pr->osz = wrote ? strnlen(good, sizeof(good) - 1) + 1 : 1;
	*k = pre;
	if ((!pr->out && (pr->bad == BAD_UNMAPPED || pr->bad == BAD_NONE || pr->bad == BAD_CROSS)) ||
	    (pr->out && pr->bad != BAD_END && pr->bad != BAD_NULL && wrote)) {
		memset(k, 0, sizeof(*k));
		k->a.ret = -1;
		k->a.err = EFAULT;
	}
}

static void run_efault(const struct op *op, const char *ctx)
{
	char buf[PATH_MAX + 512], call[128], a[PATH_MAX + 1024], b[PATH_MAX + 1024];
	struct probe pr;
	struct pans s, k;
	bool is_open;

	bp_setup();
	probe_decode(op, expand(op->p1, buf, sizeof(buf)), &pr);
	if (!probe_runs(&pr)) {
		g_efault_skipped++;
		return;
	}
	if (pr.ep == EP_REALPATH)
		realpath_expect(&pr, &k);
	if (pr.bad == BAD_UNMAPPED) {
		pr.hole = mmap(NULL, g_pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (pr.hole == MAP_FAILED)
			die("mmap: %s", strerror(errno));
		munmap(pr.hole, g_pg);
	}
	if (!probe_place(&pr)) {
		g_efault_skipped++;
		return;
	}
	probe_caught(&pr, false, &s);
	if (pr.ep != EP_REALPATH) {
		probe_place(&pr);
		probe_caught(&pr, true, &k);
	}
	if (pr.hole && !hole_unmapped(pr.hole)) {
		g_efault_skipped++;
		return;
	}
	g_efault++;
	g_compared++;
	is_open = pr.ep == EP_OPEN || pr.ep == EP_OPENAT || pr.ep == EP_OPENDIR;
	if (!pans_equal(&s, &k, is_open)) {
		if (!ctx)
			ctx = pr.ep == EP_REALPATH ? "(bad pointer; expected: glibc's realpath, or EFAULT"
						     " where it would write)"
			      : pr.ep == EP_OPENDIR ? "(bad pointer; expected: openat's answer)"
						    : "(bad pointer; expected: the raw syscall, same pointers)";
		snprintf(call, sizeof(call), "%s[%s %s, n=%d, flags=0x%x mode=%d bufsiz=%zu]",
			 k_ep_names[pr.ep], pr.out ? "output" : "path", k_bad_names[pr.bad], pr.n,
			 pr.flags, pr.mode, pr.bufsiz);
		fmt_pans(&s, a, sizeof(a));
		fmt_pans(&k, b, sizeof(b));
		mismatch_text(call, pr.path, ctx, a, b);
	}
}

static void run_lookup(const struct op *op, const char *ctx)
{
	char buf[PATH_MAX + 512];
	const char *p = expand(op->p1, buf, sizeof(buf));

	switch (op->kind) {
	case L_ACCESS:
	case L_FACCESSAT:
	case L_EUIDACCESS:
	case L_EACCESS:
		cmp_access(op->kind, p, op->a, op->b, ctx);
		break;
	case L_OPEN:
		cmp_open(op->a, p, op->b, ctx);
		break;
	case L_EFAULT:
		run_efault(op, ctx);
		break;
	default:
		cmp_stat(op->kind, p, op->b, ctx);
		break;
	}
}

/* After a change: the paths it involved and their parents must be exact. */
static void check_after(const char *path)
{
	char par[PATH_MAX + 512], buf[PATH_MAX + 512];
	const char *p;

	if (!path)
		return;
	p = expand(path, buf, sizeof(buf));
	cmp_stat(L_LSTAT, p, 0, "(check after a change)");
	cmp_stat(L_STAT, p, 0, "(check after a change)");
	cmp_access(L_FACCESSAT, p, R_OK | X_OK, AT_EACCESS, "(check after a change)");
	parent_of(path, par, sizeof(par));
	p = expand(par, buf, sizeof(buf));
	cmp_stat(L_LSTAT, p, 0, "(check of the parent after a change)");
	cmp_open(2, p, O_RDONLY | O_DIRECTORY, "(check of the parent after a change)");
}

/* ------------------------------------------------------------------------ */
/* Mutations                                                                */

enum backend { BK_LIBC, BK_RAW };

static char g_data[9000];
static int g_slot_fd[NSLOTS] = { -1, -1, -1, -1 };
static char *g_slot_path[NSLOTS];

static bool resolves_to_fifo(const char *p)
{
	struct stat st;

	return raw_fstatat(p, &st, 0) == 0 && S_ISFIFO(st.st_mode);
}

static void raw_close(long fd)
{
	if (fd >= 0)
		syscall(SYS_close, (int)fd);
}

static void do_create(const char *p, int variant, int mode, enum backend bk)
{
	static const int fl[] = { O_CREAT | O_WRONLY | O_TRUNC, O_CREAT | O_WRONLY | O_TRUNC,
				  O_CREAT | O_RDWR, O_CREAT | O_WRONLY | O_TRUNC, O_CREAT | O_WRONLY | O_APPEND };
	int f = fl[variant % 5];

	if (bk == BK_RAW) {
		raw_close(syscall(SYS_openat, AT_FDCWD, p, f | O_NONBLOCK | O_CLOEXEC, mode));
		return;
	}
	switch (variant % 5) {
	case 0:
		if (!resolves_to_fifo(p)) {
			int fd = creat(p, (mode_t)mode);

			if (fd >= 0)
				close(fd);
		}
		break;
	case 3:
		if (!resolves_to_fifo(p)) {
			FILE *fp = fopen(p, "we");

			if (fp) {
				fputs("created by fopen\n", fp);
				fclose(fp);
			}
		}
		break;
	case 4: {
		int fd = openat(AT_FDCWD, p, f | O_NONBLOCK | O_CLOEXEC, mode);

		if (fd >= 0)
			close(fd);
		break;
	}
	default: {
		int fd = open(p, f | O_NONBLOCK | O_CLOEXEC, mode);

		if (fd >= 0)
			close(fd);
		break;
	}
	}
}

static void do_write(const char *p, int variant, int n, enum backend bk)
{
	int fd;

	if (bk == BK_RAW) {
		long rfd = syscall(SYS_openat, AT_FDCWD, p, O_RDWR | O_NONBLOCK | O_CLOEXEC, 0);

		if (rfd >= 0) {
			if (variant & 1)
				(void)!syscall(SYS_pwrite64, (int)rfd, g_data, (size_t)n, (off_t)variant * 100);
			else
				(void)!syscall(SYS_write, (int)rfd, g_data, (size_t)n);
		}
		raw_close(rfd);
		return;
	}
	switch (variant % 5) {
	case 0:
		fd = open(p, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			(void)!write(fd, g_data, (size_t)n);
			close(fd);
		}
		break;
	case 1:
		fd = open(p, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			(void)!pwrite(fd, g_data, (size_t)n, 333);
			close(fd);
		}
		break;
	case 2: {
		struct iovec iov[2] = { { g_data, (size_t)n / 2 }, { g_data, (size_t)n - (size_t)n / 2 } };

		fd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			(void)!writev(fd, iov, 2);
			close(fd);
		}
		break;
	}
	case 3:
	case 4:
		if (!resolves_to_fifo(p)) {
			FILE *fp = fopen(p, variant % 5 == 3 ? "ae" : "r+e");

			if (fp) {
				if (variant % 5 == 4)
					fseek(fp, 7, SEEK_SET);
				fwrite(g_data, 1, (size_t)n, fp);
				if (variant % 5 == 4)
					fflush(fp);
				fclose(fp);
			}
		}
		break;
	}
}

static void do_utime(const char *p, int variant, int secs, enum backend bk)
{
	struct timespec ts[2] = { { secs, 1000 * variant }, { secs + 7, 123456789 } };
	int flags = variant == 2 ? AT_SYMLINK_NOFOLLOW : 0;

	if (bk == BK_RAW) {
		syscall(SYS_utimensat, AT_FDCWD, p, variant == 1 || variant >= 3 ? NULL : ts, flags);
		return;
	}
	switch (variant) {
	case 0:
	case 2:
		utimensat(AT_FDCWD, p, ts, flags);
		break;
	case 1:
		utimensat(AT_FDCWD, p, NULL, 0);
		break;
	case 3:
		utimes(p, NULL);
		break;
	default:
		utime(p, NULL);
		break;
	}
}

/* Run one mutation (not a lookup, not a batch) with backend bk. */
static void run_mutation(const struct op *op, enum backend bk)
{
	char b1[PATH_MAX + 512], b2[PATH_MAX + 512];
	const char *p1 = expand(op->p1, b1, sizeof(b1));
	const char *p2 = expand(op->p2, b2, sizeof(b2));
	bool raw = bk == BK_RAW;
	int slot = op->a >= 0 && op->a < NSLOTS ? op->a : 0;
	int fd = g_slot_fd[slot];

	g_mutations++;
	switch (op->kind) {
	case M_CREATE:
		do_create(p1, op->a, op->b, bk);
		break;
	case M_WRITE:
		do_write(p1, op->a, op->b, bk);
		break;
	case M_UNLINK:
		if (raw)
			syscall(SYS_unlinkat, AT_FDCWD, p1, 0);
		else if (op->a == 0)
			unlink(p1);
		else if (op->a == 1)
			unlinkat(AT_FDCWD, p1, 0);
		else
			remove(p1);
		break;
	case M_RMDIR:
		if (raw)
			syscall(SYS_unlinkat, AT_FDCWD, p1, AT_REMOVEDIR);
		else if (op->a == 0)
			rmdir(p1);
		else if (op->a == 1)
			unlinkat(AT_FDCWD, p1, AT_REMOVEDIR);
		else
			remove(p1);
		break;
	case M_MKDIR:
		if (raw)
			syscall(SYS_mkdirat, AT_FDCWD, p1, op->b);
		else if (op->a == 0)
			mkdir(p1, (mode_t)op->b);
		else
			mkdirat(AT_FDCWD, p1, (mode_t)op->b);
		break;
	case M_SYMLINK:
		if (raw)
			syscall(SYS_symlinkat, p2, AT_FDCWD, p1);
		else if (op->a == 0)
			symlink(p2, p1);
		else
			symlinkat(p2, AT_FDCWD, p1);
		break;
	case M_RENAME:
		if (raw)
			syscall(SYS_renameat2, AT_FDCWD, p1, AT_FDCWD, p2, op->b);
		else if (op->a == 0 && !op->b)
			rename(p1, p2);
		else if (op->a == 1 && !op->b)
			renameat(AT_FDCWD, p1, AT_FDCWD, p2);
		else
			renameat2(AT_FDCWD, p1, AT_FDCWD, p2, (unsigned)op->b);
		break;
	case M_LINK:
		if (raw)
			syscall(SYS_linkat, AT_FDCWD, p1, AT_FDCWD, p2, 0);
		else if (op->a == 0)
			link(p1, p2);
		else
			linkat(AT_FDCWD, p1, AT_FDCWD, p2, op->a == 2 ? AT_SYMLINK_FOLLOW : 0);
		break;
	case M_CHMOD:
		if (raw)
			syscall(SYS_fchmodat, AT_FDCWD, p1, op->b);
		else if (op->a == 0)
			chmod(p1, (mode_t)op->b);
		else
			fchmodat(AT_FDCWD, p1, (mode_t)op->b, 0);
		break;
	case M_TRUNCATE:
		if (raw)
			syscall(SYS_truncate, p1, (off_t)op->b);
		else
			truncate(p1, op->b);
		break;
	case M_UTIME:
		do_utime(p1, op->a, op->b, bk);
		break;
	case M_MKFIFO:
		if (raw)
			syscall(SYS_mknodat, AT_FDCWD, p1, S_IFIFO | 0644, 0);
		else
			mkfifo(p1, 0644);
		break;
	case F_OPEN:
		if (fd >= 0)
			close(fd);
		g_slot_fd[slot] = open(p1, op->b | O_NONBLOCK | O_CLOEXEC, 0644);
		free(g_slot_path[slot]);
		g_slot_path[slot] = xstrdup(op->p1);
		break;
	case F_WRITE:
		if (fd < 0)
			break;
		if (raw)
			(void)!syscall(SYS_write, fd, g_data, (size_t)op->b);
		else
			(void)!write(fd, g_data, (size_t)op->b);
		break;
	case F_TRUNC:
		if (fd < 0)
			break;
		if (raw)
			syscall(SYS_ftruncate, fd, (off_t)op->b);
		else
			(void)!ftruncate(fd, op->b);
		break;
	case F_CHMOD:
		if (fd < 0)
			break;
		if (raw)
			syscall(SYS_fchmod, fd, op->b);
		else
			fchmod(fd, (mode_t)op->b);
		break;
	case F_CLOSE:
		if (fd >= 0)
			close(fd);
		g_slot_fd[slot] = -1;
		break;
	default:
		break;
	}
}

/* The paths an operation changed, for check_after(). */
static void check_op_paths(const struct op *op)
{
	switch (op->kind) {
	case M_SYMLINK:
		check_after(op->p1);
		break;
	case M_RENAME:
	case M_LINK:
		check_after(op->p1);
		check_after(op->p2);
		break;
	case F_OPEN:
	case F_WRITE:
	case F_TRUNC:
	case F_CHMOD:
	case F_CLOSE:
		check_after(g_slot_path[op->a >= 0 && op->a < NSLOTS ? op->a : 0]);
		break;
	default:
		check_after(op->p1);
		break;
	}
}

/* open(O_CREAT|O_EXCL) through libc, then the same raw: the second must fail
 * with EEXIST if the first created the file, or as the first did. */
static void run_excl(const struct op *op)
{
	char b1[PATH_MAX + 512];
	const char *p = expand(op->p1, b1, sizeof(b1));
	int flags = O_CREAT | O_EXCL | O_WRONLY | O_NONBLOCK | O_CLOEXEC;
	struct ans s, k;

	begin(&s, 0);
	s.ret = open(p, flags, op->b);
	s.err = errno;
	if (s.ret >= 0)
		close((int)s.ret);
	begin(&k, 0);
	k.ret = syscall(SYS_openat, AT_FDCWD, p, flags, op->b);
	k.err = errno;
	if (k.ret >= 0)
		raw_close(k.ret);
	g_compared++;
	if (s.ret >= 0 ? !(k.ret == -1 && k.err == EEXIST) : !(k.ret == -1 && k.err == s.err)) {
		mismatch("open(O_CREAT|O_EXCL) then the raw syscall", p,
			 "(the raw call must fail with EEXIST after a creation, or as the libc call did)",
			 &s, &k);
	}
	g_mutations++;
}

/* ------------------------------------------------------------------------ */
/* Helpers: batches run in a child                                          */

static char **g_argv0;

/* One operation of a batch as an exec'd helper's argument: its log line. */
static char *op_arg(const struct op *op)
{
	char line[8192];
	FILE *f = fmemopen(line, sizeof(line), "w");

	if (!f)
		die("fmemopen");
	op_write(f, op, "");
	fclose(f);
	line[sizeof(line) - 1] = '\0';
	line[strcspn(line, "\n")] = '\0';
	return xstrdup(line);
}

static void run_exec_batch(const struct op *op)
{
	char **args = calloc((size_t)op->nsub + 5, sizeof(char *));
	char **env;
	size_t ne = 0, k = 0;
	pid_t pid;
	int status;

	for (char **e = environ; *e; e++)
		ne++;
	env = calloc(ne + 1, sizeof(char *));
	if (!args || !env)
		die("out of memory");
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "RCUWALK_", 8) != 0)
			env[k++] = *e;
	args[0] = g_argv0[0];
	args[1] = (char *)"--helper";
	args[2] = g_tree;
	for (int i = 0; i < op->nsub; i++)
		args[3 + i] = op_arg(&op->sub[i]);
	/* posix_spawn: not the shim's fork() (see raw_fork()) */
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, env) != 0)
		die("posix_spawn: %s", strerror(errno));
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("exec helper failed (status 0x%x)", status);
	for (int i = 0; i < op->nsub; i++)
		free(args[3 + i]);
	free(args);
	free(env);
}

/*
 * A child for raw-syscall helpers, made with the clone system call itself:
 * the shim's fork() runs liburcu's fork hooks, which pause liburcu's worker
 * threads and cost about 15 ms per fork once the cache is running (see the
 * report of issue 5).  The child makes raw system calls only, so it needs
 * none of the state those hooks protect.
 */
static pid_t raw_fork(void)
{
	return (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
}

static void run_batch(const struct op *op)
{
	g_batches++;
	if (op->kind == B_EXEC) {
		run_exec_batch(op);
	} else {
		pid_t pid = op->b ? fork() : raw_fork();
		int status;

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			for (int i = 0; i < op->nsub; i++)
				run_mutation(&op->sub[i], op->b ? BK_LIBC : BK_RAW);
			syscall(SYS_exit_group, 0); /* no stdio flush, no stats line */
		}
		if (waitpid(pid, &status, 0) != pid)
			die("waitpid: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			die("fork helper failed (status 0x%x)", status);
	}
	/* waitpid() returned: the sync point.  Everything must be exact now. */
	for (int i = 0; i < op->nsub; i++)
		check_op_paths(&op->sub[i]);
}

/*
 * A batch of lookups in an exec'd copy of this program WITH the shim, the
 * environment as it is (LD_PRELOAD, the session, RCUWALK_STATS): a fresh
 * process, whose cache holds nothing of this one's, so that it answers
 * from what the session shares, its shared path table included (names this
 * process or an earlier helper found absent), and offers what it finds
 * absent to this process and later helpers.  It compares each lookup with
 * the raw syscall itself, reports a mismatch there and exits 1: then this
 * run reports one too (and writes the log).  Spawned and reaped as the
 * other exec'd helpers: nothing changes meanwhile.
 */
static void run_look_batch(const struct op *op)
{
	char **args = calloc((size_t)op->nsub + 6, sizeof(char *));
	char seed[32], idx[32];
	pid_t pid;
	int status;

	if (!args)
		die("out of memory");
	snprintf(seed, sizeof(seed), "%" PRIu64, g_seed);
	snprintf(idx, sizeof(idx), "%ld", g_idx);
	args[0] = g_argv0[0];
	args[1] = (char *)"--look-helper";
	args[2] = g_tree;
	args[3] = seed;
	args[4] = idx;
	for (int i = 0; i < op->nsub; i++)
		args[5 + i] = op_arg(&op->sub[i]);
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0)
		die("posix_spawn: %s", strerror(errno));
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	for (int i = 0; i < op->nsub; i++)
		free(args[5 + i]);
	free(args);
	g_look_batches++;
	g_look_lookups += (unsigned long)op->nsub;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
		mismatch_text("lookup batch", "(the helper's, above)",
			      "(in a lookup helper: an exec'd copy with the shim)",
			      "see the helper's report above", "see the helper's report above");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("lookup helper failed (status 0x%x)", status);
}

/* A lookup whose answer is not compared (a race is on). */
static void lookup_unchecked(const struct op *op)
{
	char buf[PATH_MAX + 512];
	const char *p = expand(op->p1, buf, sizeof(buf));
	struct stat st;
	int fd;

	switch (op->kind) {
	case L_LSTAT:
	case L_LSTAT64:
	case L_LXSTAT:
		(void)!lstat(p, &st);
		break;
	case L_FSTATAT:
	case L_FSTATAT64:
	case L_FXSTATAT:
		(void)!fstatat(AT_FDCWD, p, &st, op->b);
		break;
	case L_ACCESS:
		(void)!access(p, op->a);
		break;
	case L_FACCESSAT:
		(void)!faccessat(AT_FDCWD, p, op->a, op->b);
		break;
	case L_EUIDACCESS:
	case L_EACCESS:
		(void)!euidaccess(p, op->a);
		break;
	case L_OPEN:
		fd = open(p, op->b | (op->b & O_PATH ? 0 : O_NONBLOCK));
		if (fd >= 0)
			close(fd);
		break;
	default:
		(void)!stat(p, &st);
		break;
	}
}

#define SPELLINGS 48

/* Spelling k of lookup op: its path with k more "." components at the
 * start ("@/./a", "././a"), the same name to the kernel but another key to
 * the path index and to the shared path table. */
static void spell(const struct op *op, int k, struct op *out)
{
	char buf[PATH_MAX + 64];
	const char *p = op->p1 ? op->p1 : "";
	bool tree = p[0] == '@';
	size_t n = 0;

	*out = *op;
	out->sub = NULL;
	out->nsub = 0;
	out->p2 = NULL;
	if (tree)
		buf[n++] = '@';
	for (int i = 0; i < k && *p; i++) {
		memcpy(buf + n, tree ? "/." : "./", 2);
		n += 2;
	}
	snprintf(buf + n, sizeof(buf) - n, "%s", tree ? p + 1 : p);
	out->p1 = xstrdup(buf);
}

/*
 * A race (look batches, --look-helpers): a raw child (raw_fork()) makes the
 * batch's changes, 100 us apart, while this process makes the batch's
 * lookups (of the names changed and their parents) over and over, each
 * round in another spelling (spell()): a spelling not looked up before is
 * walked, not answered by the path index, and a walk that finds a name
 * absent offers it to the shared path table, perhaps from a dentry that an
 * event already published (its generations bumped) has not reached yet in
 * this process.  The ticket (invalidate/inval_shared.c, spath_put) must
 * refuse such an offer.  The answers are not compared while the child
 * runs (nothing is exact before the waitpid).  Then, the child reaped, the
 * changes are checked as after a batch, and every spelling used is looked
 * up and compared here and in a lookup helper: a fresh process, which an
 * entry that slipped through would answer wrongly.
 */
static void run_race_batch(const struct op *op)
{
	struct op look = { .kind = B_LOOK };
	struct op *sp = calloc((size_t)op->nsub * SPELLINGS, sizeof(*sp));
	pid_t pid;
	int status = 0, nlook = 0, round = 0, nspell;
	bool reaped = false;

	if (!sp)
		die("out of memory");
	for (int i = 0; i < op->nsub; i++)
		for (int k = 0; k < SPELLINGS && is_lookup(op->sub[i].kind); k++)
			spell(&op->sub[i], k, &sp[i * SPELLINGS + k]);
	pid = raw_fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		for (int i = 0; i < op->nsub; i++) {
			struct timespec ts = { 0, 100000 };

			if (is_lookup(op->sub[i].kind))
				continue;
			syscall(SYS_nanosleep, &ts, NULL);
			run_mutation(&op->sub[i], BK_RAW);
		}
		syscall(SYS_exit_group, 0);
	}
	g_batches++;
	for (; round < SPELLINGS && !reaped; round++) {
		for (int i = 0; i < op->nsub; i++)
			if (is_lookup(op->sub[i].kind))
				lookup_unchecked(&sp[i * SPELLINGS + round]);
		reaped = waitpid(pid, &status, WNOHANG) == pid;
	}
	if (!reaped && waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("race helper failed (status 0x%x)", status);
	/* reaped: the sync point.  Everything must be exact now. */
	for (int i = 0; i < op->nsub; i++)
		if (!is_lookup(op->sub[i].kind))
			check_op_paths(&op->sub[i]);
	nspell = round < SPELLINGS ? round : SPELLINGS;
	look.sub = calloc((size_t)op->nsub * SPELLINGS, sizeof(*look.sub));
	if (!look.sub)
		die("out of memory");
	for (int i = 0; i < op->nsub; i++) {
		for (int k = 0; k < nspell && is_lookup(op->sub[i].kind); k++) {
			run_lookup(&sp[i * SPELLINGS + k], "(after a race)");
			look.sub[nlook++] = sp[i * SPELLINGS + k]; /* shallow: sp owns the paths */
		}
	}
	look.a = look.nsub = nlook;
	if (nlook)
		run_look_batch(&look);
	free(look.sub);
	for (int i = 0; i < op->nsub * SPELLINGS; i++)
		free(sp[i].p1);
	free(sp);
}

/* --look-helper TREE SEED INDEX LINE...: the exec'd lookup helper (with
 * the shim): each line a lookup, compared as in the run. */
static int look_helper_main(int argc, char **argv)
{
	snprintf(g_tree, sizeof(g_tree), "%s", argv[2]);
	g_seed = strtoull(argv[3], NULL, 10);
	g_idx = strtol(argv[4], NULL, 10);
	g_phase = "lookup helper";
	resolve_libc();
	for (int i = 5; i < argc; i++) {
		char line[512];
		struct op op;

		if (!op_parse(argv[i], &op) || !is_lookup(op.kind) || op.kind == L_EFAULT)
			return 3;
		snprintf(g_ring[g_ringn++ % RING], sizeof(g_ring[0]), "%s", op_line(&op, line, sizeof(line)));
		run_lookup(&op, "(in a lookup helper: an exec'd copy with the shim)");
		op_free(&op);
	}
	exit(0);
}

/* --helper TREE LINE...: the exec'd helper (no shim) */
static int helper_main(int argc, char **argv)
{
	snprintf(g_tree, sizeof(g_tree), "%s", argv[2]);
	for (int i = 3; i < argc; i++) {
		struct op op;

		if (!op_parse(argv[i], &op))
			return 3;
		run_mutation(&op, BK_LIBC);
		op_free(&op);
	}
	_exit(0); /* started with ruid != euid, a sanitizer's exit hooks cannot ptrace it */
}

/* ------------------------------------------------------------------------ */
/* Process state                                                            */

static bool cwd_in_tree(void)
{
	char cwd[PATH_MAX];
	size_t n = strlen(g_tree);

	if (syscall(SYS_getcwd, cwd, sizeof(cwd)) <= 0)
		return true; /* removed: stays where it is */
	return strncmp(cwd, g_tree, n) == 0 && (cwd[n] == '\0' || cwd[n] == '/');
}

static void run_chdir(const struct op *op)
{
	char b1[PATH_MAX + 512];
	const char *p = expand(op->p1, b1, sizeof(b1));

	if (op->a == 0) {
		(void)!chdir(p);
	} else {
		int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0) {
			(void)!fchdir(fd);
			close(fd);
		}
	}
	if (!cwd_in_tree())
		(void)!chdir(g_tree);
}

/* Give the tree to nobody (a path-hash-chosen sixth stays root's), open the
 * way to it, and drop every privilege. */
static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ULL;
	}
	return h;
}

static int chown_cb(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	bool keep_root = strcmp(path, g_tree) != 0 && path_hash(path + strlen(g_tree)) % 6 == 0;
	uid_t id = keep_root ? 0 : NOBODY;

	(void)st;
	(void)type;
	(void)ftw;
	syscall(SYS_fchownat, AT_FDCWD, path, id, id, AT_SYMLINK_NOFOLLOW);
	return 0;
}

static void become_nobody(void)
{
	char p[PATH_MAX];
	size_t n;

	nftw(g_tree, chown_cb, 16, FTW_PHYS);
	/* the way down to the tree: 0755, root's */
	snprintf(p, sizeof(p), "%s", g_tree);
	n = strlen(g_scratch);
	while (strlen(p) > n) {
		*strrchr(p, '/') = '\0';
		syscall(SYS_fchmodat, AT_FDCWD, p, 0755);
	}
	if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
		die("dropping privileges: %s", strerror(errno));
	if (getuid() != NOBODY || geteuid() != NOBODY)
		die("still privileged");
	prctl(PR_SET_DUMPABLE, 1); /* for a sanitizer's exit hooks */
	(void)!chdir(g_tree);
}

/* ------------------------------------------------------------------------ */
/* The run                                                                  */

static void run_one(const struct op *op)
{
	char line[512];

	snprintf(g_ring[g_ringn % RING], sizeof(g_ring[0]), "%s", op_line(op, line, sizeof(line)));
	g_ringn++;
	if (g_verbose)
		fprintf(stderr, "#%ld %s\n", g_idx, line);
	if (is_lookup(op->kind)) {
		run_lookup(op, NULL);
		return;
	}
	switch (op->kind) {
	case M_EXCL:
		run_excl(op);
		check_after(op->p1);
		break;
	case B_FORK:
	case B_EXEC:
		run_batch(op);
		break;
	case B_LOOK:
		run_look_batch(op);
		break;
	case B_RACE:
		run_race_batch(op);
		break;
	case P_CHDIR:
		run_chdir(op);
		break;
	case P_SETEUID:
		if (g_started_root && getuid() == 0) {
			(void)!seteuid((uid_t)op->a);
			prctl(PR_SET_DUMPABLE, 1);
		}
		break;
	case P_AS_NOBODY:
		break; /* handled by run_ops */
	default:
		run_mutation(op, BK_LIBC);
		check_op_paths(op);
		break;
	}
}

static void print_phase(void)
{
	printf("phase %s: %lu comparisons (%lu with bad pointers, %lu such probes skipped), "
	       "%lu mutations, %lu helper batches\n",
	       g_phase, g_compared, g_efault, g_efault_skipped, g_mutations, g_batches);
	if (g_look_batches)
		printf("phase %s: %lu lookup helpers compared %lu lookups\n", g_phase,
		       g_look_batches, g_look_lookups);
}

/* Runs the operations in this process (forking the nobody phase when asked).
 * Returns the exit code. */
static int run_ops(struct src *s)
{
	struct op op;

	g_src = s;
	g_phase = getuid() == 0 ? "root" : "user";
	while (src_next(s, &op)) {
		g_idx = s->from_list ? s->pos - 1 : s->g.i - 1;
		if (op.kind == P_AS_NOBODY && g_started_root && getuid() == 0) {
			/* In this very process: the shim must forget everything
			 * it learned as root (setuid empties the cache). */
			if (geteuid() != 0)
				(void)!seteuid(0);
			if (!g_quiet)
				print_phase();
			become_nobody();
			g_phase = "nobody";
			g_compared = g_mutations = g_batches = g_efault = g_efault_skipped = 0;
			g_look_batches = g_look_lookups = 0;
			snprintf(g_ring[g_ringn++ % RING], sizeof(g_ring[0]), "as-nobody 0 0 - -");
			src_release(s, &op);
			continue;
		}
		run_one(&op);
		src_release(s, &op);
	}
	if (!g_quiet)
		print_phase();
	return 0;
}

/* The log of operations 0..upto of source s. */
static void write_log(long upto, const struct src *s, char *file, size_t n)
{
	FILE *f;

	snprintf(file, n, "/tmp/rcuwalk-difftest-%" PRIu64 "-%ld-%ld.log", g_seed, upto, (long)getpid());
	f = fopen(file, "w");
	if (!f) {
		*file = '\0';
		return;
	}
	fprintf(f, "# rcuwalk_difftest log: seed %" PRIu64 ", operations 0..%ld; \"@\" = the tree\n",
		g_seed, upto);
	if (g_depth != BARRIER_DEPTH)
		fprintf(f, "# depth %d\n", g_depth);
	if (!s->from_list) {
		struct gen g = s->g;
		struct op op;

		gen_init(&g, g_seed, g_nops, g_started_root, g_efault_pm);
		for (long i = 0; i <= upto; i++) {
			gen_op(&g, &op);
			op_write(f, &op, "");
			op_free(&op);
		}
		gen_release(&g);
	} else {
		for (long i = 0; i <= upto && i < s->nlist; i++)
			op_write(f, &s->list[i], "");
	}
	fclose(f);
}

/* ------------------------------------------------------------------------ */
/* Scratch tree                                                             */

static void make_scratch(void)
{
	char p[PATH_MAX];

	snprintf(g_scratch, sizeof(g_scratch), "/tmp/rcuwalk-fuzz-XXXXXX");
	if (!mkdtemp(g_scratch))
		die("mkdtemp: %s", strerror(errno));
	if (syscall(SYS_fchmodat, AT_FDCWD, g_scratch, 0755) != 0)
		die("chmod %s: %s", g_scratch, strerror(errno));
	snprintf(p, sizeof(p), "%s", g_scratch);
	for (int i = 0; i < g_depth; i++) {
		strcat(p, "/z");
		if (syscall(SYS_mkdirat, AT_FDCWD, p, 0755) != 0)
			die("mkdir %s: %s", p, strerror(errno));
	}
	/* beside the tree, out of the generated mutations' reach: two links
	 * that stay (readlink probes), a short body and a long one */
	strcat(p, "/L");
	if (syscall(SYS_symlinkat, "t/a", AT_FDCWD, p) != 0)
		die("symlink %s: %s", p, strerror(errno));
	strcpy(p + strlen(p) - 1, "M");
	{
		char body[512] = "t";

		for (int i = 0; i < 120; i++)
			strcat(body, "/.");
		strcat(body, "/b/../c");
		if (syscall(SYS_symlinkat, body, AT_FDCWD, p) != 0)
			die("symlink %s: %s", p, strerror(errno));
	}
	strcpy(p + strlen(p) - 1, "t");
	if (syscall(SYS_mkdirat, AT_FDCWD, p, 0755) != 0)
		die("mkdir %s: %s", p, strerror(errno));
	snprintf(g_tree, sizeof(g_tree), "%s", p);
}

/* rm -rf with raw syscalls, making directories writable and searchable first. */
static void remove_tree(int dirfd, const char *name)
{
	int fd;
	char buf[8192];
	long n;

	syscall(SYS_fchmodat, dirfd, name, 0700);
	fd = (int)syscall(SYS_openat, dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
			for (long off = 0; off < n;) {
				struct dirent64 *de = (struct dirent64 *)(buf + off);

				off += de->d_reclen;
				if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
					continue;
				if (de->d_type == DT_DIR)
					remove_tree(fd, de->d_name);
				else
					syscall(SYS_unlinkat, fd, de->d_name, 0);
			}
		}
		syscall(SYS_close, fd);
	}
	syscall(SYS_unlinkat, dirfd, name, AT_REMOVEDIR);
}

static void cleanup_scratch(void)
{
	if (g_scratch[0])
		remove_tree(AT_FDCWD, g_scratch);
	g_scratch[0] = '\0';
}

/* Run a whole source once in a fresh tree, in a child; returns its exit code. */
static int run_trial(struct src *s)
{
	pid_t pid;
	int status;

	make_scratch();
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		if (g_quiet) {
			int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

			if (null >= 0)
				dup2(null, 2);
		}
		if (chdir(g_tree) != 0)
			die("chdir %s: %s", g_tree, strerror(errno));
		exit(run_ops(s));
	}
	g_run_pid = pid;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	cleanup_scratch();
	if (WIFSIGNALED(status)) {
		if (!g_quiet)
			fprintf(stderr, "rcuwalk_difftest: run killed by signal %d\n", WTERMSIG(status));
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

/* ------------------------------------------------------------------------ */
/* Minimizer: delta debugging over top-level operations                    */

static int try_list(struct op *ops, long n, const bool *keep)
{
	struct op *sub = malloc((size_t)(n ? n : 1) * sizeof(*sub));
	struct src s = { .from_list = true };
	long m = 0;
	int rc;

	if (!sub)
		die("out of memory");
	for (long i = 0; i < n; i++)
		if (keep[i])
			sub[m++] = ops[i];
	s.list = sub;
	s.nlist = m;
	rc = run_trial(&s);
	free(sub);
	return rc;
}

static int minimize_main(const char *file)
{
	long n, kept;
	struct op *ops = load_log(file, &n);
	bool *keep = malloc((size_t)(n ? n : 1)), *trial = malloc((size_t)(n ? n : 1));
	char out[PATH_MAX];
	FILE *f;
	unsigned long trials = 0;

	if (!keep || !trial)
		die("out of memory");
	memset(keep, 1, (size_t)n);
	g_quiet = true;
	if (try_list(ops, n, keep) != 1)
		die("%s: the log does not reproduce a mismatch", file);
	kept = n;
	for (long chunk = n / 2 > 0 ? n / 2 : 1;; chunk = chunk > 1 ? chunk / 2 : 0) {
		bool progress = true;

		while (progress) {
			progress = false;
			/* walk the kept ops (the last one, the failing lookup, stays) */
			for (long start = 0; start < n - 1;) {
				long removed = 0, i;

				memcpy(trial, keep, (size_t)n);
				for (i = start; i < n - 1 && removed < chunk; i++) {
					if (trial[i]) {
						trial[i] = false;
						removed++;
					}
				}
				if (!removed)
					break;
				trials++;
				if (try_list(ops, n, trial) == 1) {
					memcpy(keep, trial, (size_t)n);
					kept -= removed;
					progress = true;
					fprintf(stderr, "minimize: %ld operations left (%lu trials)\n", kept, trials);
				}
				start = i;
			}
		}
		if (chunk == 1)
			break;
	}
	/* then the operations inside the helper batches, one by one */
	for (long i = 0; i < n; i++) {
		struct op *b = &ops[i];

		if (!keep[i] || (b->kind != B_FORK && b->kind != B_EXEC && b->kind != B_LOOK &&
				 b->kind != B_RACE))
			continue;
		for (int j = 0; j < b->nsub && b->nsub > 1;) {
			struct op gone = b->sub[j];

			memmove(&b->sub[j], &b->sub[j + 1], (size_t)(b->nsub - j - 1) * sizeof(*b->sub));
			b->nsub--;
			b->a--;
			trials++;
			if (try_list(ops, n, keep) == 1) {
				fprintf(stderr, "minimize: one operation less in batch %ld (%lu trials)\n", i, trials);
				continue;
			}
			memmove(&b->sub[j + 1], &b->sub[j], (size_t)(b->nsub - j) * sizeof(*b->sub));
			b->sub[j] = gone;
			b->nsub++;
			b->a++;
			j++;
		}
	}
	snprintf(out, sizeof(out), "%s.min", file);
	f = fopen(out, "w");
	if (!f)
		die("%s: %s", out, strerror(errno));
	fprintf(f, "# minimized from %s: %ld of %ld operations\n", file, kept, n);
	if (g_depth != BARRIER_DEPTH)
		fprintf(f, "# depth %d\n", g_depth);
	for (long i = 0; i < n; i++)
		if (keep[i])
			op_write(f, &ops[i], "");
	fclose(f);
	printf("minimized to %ld operations: %s\n", kept, out);
	f = fopen(out, "r");
	if (f) {
		char line[1024];

		while (fgets(line, sizeof(line), f))
			fputs(line, stdout);
		fclose(f);
	}
	g_quiet = false;
	/* run it once more, loudly */
	{
		struct src s = { .from_list = true, .list = NULL };
		long m = 0;
		struct op *sub = malloc((size_t)kept * sizeof(*sub));

		for (long i = 0; i < n; i++)
			if (keep[i])
				sub[m++] = ops[i];
		s.list = sub;
		s.nlist = m;
		run_trial(&s);
		free(sub);
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Statistics from RCUWALK_STATS                                            */

struct totals {
	unsigned long long hits, neg_hits, misses, pass, inval;
	unsigned long long paths_shared, path_hits, path_hits_helpers; /* the shared path table */
	unsigned long long files_shared, files_shared_helpers; /* files' shared attributes */
	int lines;
};

/* Field `name` of a record, 0 if it has none. */
static unsigned long long stats_field(const char *line, const char *name)
{
	const char *p = strstr(line, name);

	return p ? strtoull(p + strlen(name), NULL, 10) : 0;
}

static void read_stats(const char *file, long from, struct totals *t)
{
	FILE *f = fopen(file, "r");
	char line[4096];

	memset(t, 0, sizeof(*t));
	if (!f)
		return;
	fseek(f, from, SEEK_SET);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long h, nh, m, p, iv, sv;
		long pid;

		if (sscanf(line,
			   "rcuwalk-stats v1 pid=%ld hits=%llu neg_hits=%llu misses=%llu passthrough=%llu "
			   "invalidations=%llu saved=%llu",
			   &pid, &h, &nh, &m, &p, &iv, &sv) == 7) {
			t->hits += h;
			t->neg_hits += nh;
			t->misses += m;
			t->pass += p;
			t->inval += iv;
			t->lines++;
			t->paths_shared += stats_field(line, " paths_shared=");
			t->path_hits += stats_field(line, " path_hits_shared=");
			t->files_shared += stats_field(line, " files_shared=");
			if (pid != g_run_pid) { /* lookup helpers (--look-helpers) */
				t->path_hits_helpers += stats_field(line, " path_hits_shared=");
				t->files_shared_helpers += stats_field(line, " files_shared=");
			}
		}
	}
	fclose(f);
}

static int find_shim(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	return info->dlpi_name && strstr(info->dlpi_name, "librcuwalk") != NULL;
}

/* Whether librcuwalk.so is loaded (in sanitizer builds the sanitizer's
 * interceptors come first and call it). */
static bool shim_loaded(void)
{
	return dl_iterate_phdr(find_shim, NULL) != 0;
}

/* Who defines `name` as the program binds it: the shim, libc, or another
 * object in front of them (a sanitizer's interceptor). */
static int owner_of(const char *name)
{
	void *fn = dlsym(RTLD_DEFAULT, name);
	Dl_info di;

	if (!fn || !dladdr(fn, &di) || !di.dli_fname)
		return OWN_OTHER;
	if (strstr(di.dli_fname, "librcuwalk"))
		return OWN_SHIM;
	if (strstr(di.dli_fname, "libc.so"))
		return OWN_LIBC;
	return OWN_OTHER;
}

/* The entry points looked up at startup (p_xstat, ..., p_libc_realpath). */
static void resolve_libc(void)
{
	void *libc;

	p_xstat = (int (*)(int, const char *, struct stat *))dlsym(RTLD_DEFAULT, "__xstat");
	p_lxstat = (int (*)(int, const char *, struct stat *))dlsym(RTLD_DEFAULT, "__lxstat");
	p_fxstatat = (int (*)(int, int, const char *, struct stat *, int))dlsym(RTLD_DEFAULT, "__fxstatat");
	libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (libc) {
		p_libc_euidaccess = (int (*)(const char *, int))dlsym(libc, "euidaccess");
		/* the current version (the oldest one wants a buffer) */
		p_libc_realpath = (char *(*)(const char *, char *))dlvsym(libc, "realpath", "GLIBC_2.3");
	}
	if (!p_libc_euidaccess || !p_libc_realpath)
		die("glibc's euidaccess or realpath not found");
}

static void usage(void)
{
	fprintf(stderr, "usage: rcuwalk_difftest [--ops N] [--seed S] [--efault PERMILLE] [--no-shim]\n"
			"                        [--depth N] [--look-helpers PERMILLE]\n"
			"                        [--expect-session] [--expect-path-hits]\n"
			"                        [--expect-file-hits] [-v]\n"
			"       rcuwalk_difftest --replay FILE | --minimize FILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *replay = NULL, *minimize = NULL, *stats;
	bool no_shim = false, expect_session = false, expect_path_hits = false,
	     expect_file_hits = false;
	struct src s = { 0 };
	struct totals t;
	long stats_from = 0;
	struct stat sst;
	int rc;

	g_argv0 = argv;
	if (argc >= 3 && !strcmp(argv[1], "--helper"))
		return helper_main(argc, argv);
	if (argc >= 5 && !strcmp(argv[1], "--look-helper"))
		return look_helper_main(argc, argv);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ops") && i + 1 < argc)
			g_nops = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--efault") && i + 1 < argc)
			g_efault_pm = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			g_seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--replay") && i + 1 < argc)
			replay = argv[++i];
		else if (!strcmp(argv[i], "--minimize") && i + 1 < argc)
			minimize = argv[++i];
		else if (!strcmp(argv[i], "--no-shim"))
			no_shim = true;
		else if (!strcmp(argv[i], "--depth") && i + 1 < argc)
			g_depth = (int)strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--look-helpers") && i + 1 < argc)
			g_look_pm = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--expect-session"))
			expect_session = true;
		else if (!strcmp(argv[i], "--expect-path-hits"))
			expect_path_hits = true;
		else if (!strcmp(argv[i], "--expect-file-hits"))
			expect_file_hits = true;
		else if (!strcmp(argv[i], "-v"))
			g_verbose = true;
		else
			usage();
	}
	if (g_depth < 1 || g_depth > 200 || g_look_pm > 1000)
		usage();
	if (!no_shim && !shim_loaded()) {
		fprintf(stderr, "rcuwalk_difftest: librcuwalk.so is not preloaded (--no-shim runs without it)\n");
		return 77;
	}
	/* Run by `rcuwalk --session --`: the launcher could start no watcher
	 * (the user's inotify instances are all in use) only when nothing
	 * can be tested here, which is a skip, not a pass. */
	if (expect_session && !getenv("RCUWALK_SESSION")) {
		fprintf(stderr, "rcuwalk_difftest: --expect-session, but no RCUWALK_SESSION (no watcher)\n");
		return 77;
	}
	/* The statistics prove that the shim answered from its cache: they are
	 * written at exit by each process, so the file must be known at start. */
	stats = getenv("RCUWALK_STATS");
	if (!no_shim && !stats && !getenv("RCUWALK_DIFFTEST_REEXEC")) {
		char tmpl[] = "/tmp/rcuwalk-difftest-stats-XXXXXX";
		char samples[sizeof(tmpl) + sizeof(".samples")];
		int fd = mkstemp(tmpl);

		if (fd < 0)
			die("mkstemp: %s", strerror(errno));
		fchmod(fd, 0666); /* the nobody phase appends to it */
		close(fd);
		/* Run in a child, and the file removed once it has exited:
		 * its own record, written by the shim's destructor after
		 * main() returns, would make the file anew. */
		pid_t pid = fork();

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			setenv("RCUWALK_STATS", tmpl, 1);
			setenv("RCUWALK_DIFFTEST_REEXEC", tmpl, 1);
			execv("/proc/self/exe", argv);
			die("re-exec: %s", strerror(errno));
		}
		int wst;

		while (waitpid(pid, &wst, 0) < 0)
			if (errno != EINTR)
				die("waitpid: %s", strerror(errno));
		unlink(tmpl);
		/* and the shim's timing samples beside it (preload/stats.c) */
		snprintf(samples, sizeof(samples), "%s.samples", tmpl);
		unlink(samples);
		return WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
	}
	/* Raw: this process forks the runs and must not start the shim's cache
	 * (a child forked from a process whose cache is running inherits a
	 * liburcu resize worker that spins: liburcu 0.13 copies its futex at -1). */
	if (stats && syscall(SYS_newfstatat, AT_FDCWD, stats, &sst, 0) == 0)
		stats_from = sst.st_size;

	umask(0);
	g_started_root = getuid() == 0 && geteuid() == 0;
	memset(g_data, 'x', sizeof(g_data));
	memset(g_long256, 'x', 256);
	memset(g_long255, 'y', 255);
	resolve_libc();
	for (int e = 0; e < NEPS; e++)
		g_owner[e] = owner_of(k_ep_names[e]);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (minimize)
		return minimize_main(minimize);
	if (replay) {
		s.from_list = true;
		s.list = load_log(replay, &s.nlist);
		printf("rcuwalk_difftest: replaying %ld operations from %s\n", s.nlist, replay);
	} else {
		gen_init(&s.g, g_seed, g_nops, g_started_root, g_efault_pm);
		s.n = g_nops;
		printf("rcuwalk_difftest: seed %" PRIu64 ", %ld operations%s\n", g_seed, g_nops,
		       g_started_root ? " (second half as nobody)" : "");
	}
	rc = run_trial(&s);
	if (!no_shim && stats) {
		read_stats(stats, stats_from, &t);
		printf("shim statistics (%d processes): hits=%llu neg_hits=%llu misses=%llu "
		       "passthrough=%llu invalidations=%llu\n",
		       t.lines, t.hits, t.neg_hits, t.misses, t.pass, t.inval);
		printf("shared path table: paths_shared=%llu path_hits_shared=%llu "
		       "(%llu in lookup helpers)\n", t.paths_shared, t.path_hits, t.path_hits_helpers);
		printf("files' shared attributes: files_shared=%llu (%llu in lookup helpers)\n",
		       t.files_shared, t.files_shared_helpers);
		/* A run whose cache answered next to nothing compares the
		 * kernel with itself: at least 2% of the lookups from the cache
		 * (stop 44: an idle spell that never ended left 6 answers of
		 * 316,000, which "nothing" did not catch). */
		if (rc == 0 && (t.hits + t.neg_hits) * 50 < t.hits + t.neg_hits + t.pass) {
			fprintf(stderr, "rcuwalk_difftest: the shim answered %llu of %llu lookups from "
					"its cache, under 2%%\n", t.hits + t.neg_hits,
				t.hits + t.neg_hits + t.pass);
			rc = 1;
		}
		/* else the run proves nothing about the shared path table */
		if (rc == 0 && expect_path_hits && (t.path_hits == 0 || t.path_hits_helpers == 0)) {
			fprintf(stderr, "rcuwalk_difftest: --expect-path-hits, but %s answered from the "
				"shared path table\n", t.path_hits ? "no lookup helper's lookup was" : "no lookup was");
			rc = 1;
		}
		if (rc == 0 && expect_file_hits && t.files_shared_helpers == 0) {
			fprintf(stderr, "rcuwalk_difftest: --expect-file-hits, but no lookup helper took a "
				"file's attributes from the session\n");
			rc = 1;
		}
	}
	printf("rcuwalk_difftest: %s\n", rc == 0 ? "PASS" : "FAIL");
	return rc;
}
