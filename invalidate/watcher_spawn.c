/* SPDX-License-Identifier: MIT */
/*
 * watcher_spawn.c - the launcher's side of a session (doc/session.md,
 * "Starting the watcher", "Hostile ground"): it makes what can refuse a
 * session (the ring's and the arena's memfds, allocated and sealed; the
 * session's directory, made last and locked), starts the watcher as a new
 * image of /proc/self/exe (inval_watcher_spawn), and joins a kept session
 * (inval_session_hold).  The watcher itself is watcher.c; what the two
 * share is watcher_int.h.  Runs in the launcher, single-threaded, before it
 * execs the command; nothing here runs in a process of the session.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcache.h"
#include "inval.h"
#include "ring.h"
#include "watcher_int.h"

/*
 * Where the session lives (doc/session.md, "Hostile ground")
 * ==========================================================
 * Memory: the ring and the arena are memfds (make_memfd), their whole size
 * allocated up front (fallocate) and sealed against shrinking and growing:
 * no page of them can fault later, whatever happens to /dev/shm (full, tiny,
 * filled by another user), and no file of a directory can be truncated under
 * a process that maps them.  Processes take them with pidfd_getfd (their fd
 * numbers are in RCUWALK_SESSION_FDS) or receive them over the socket, check
 * them (session.c, session_memfd_ok), map them and close them.  A fallocate
 * refused (ENOSPC, ENOMEM, EFBIG under RLIMIT_FSIZE): no arena (the session
 * works as in phase 1), or, for the ring, no session; said in one --log line.
 *
 * Names: the sockets alone are in a directory, session.XXXXXX, under a
 * directory of the user's own, <$XDG_RUNTIME_DIR or /tmp>/rcuwalk-<euid>:
 * made 0700 if absent, used only if it is a directory (O_NOFOLLOW) of ours,
 * mode 0700 (else no session, and a --log line saying so): nobody else
 * can put a name there, and nothing of anybody else's is ever scanned.
 */

/* w->note = the formatted line (truncated: it is for the --log). */
static void set_note(struct watcher *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_note(struct watcher *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->note, sizeof(w->note), fmt, ap);
	va_end(ap);
}

/* The base directory: <X>/rcuwalk-<euid>, X = $XDG_RUNTIME_DIR if it is a
 * directory of ours that nobody else may write, else /tmp.  0, or -errno
 * with w->note set. */
static int user_base(struct watcher *w, char *base, size_t size)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int fd, n;

	if (!(x && x[0] == '/' && strlen(x) + 64 < size && stat(x, &st) == 0 &&
	      S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022)))
		x = "/tmp";
	n = snprintf(base, size, "%s/rcuwalk-%u", x, (unsigned)geteuid());
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	if (mkdir(base, 0700) != 0 && errno != EEXIST) {
		n = -errno;
		set_note(w, "mkdir %s: %s", base, strerror(-n));
		return n;
	}
	fd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0700) {
		if (fd >= 0)
			set_note(w, "%s is owned by uid %u, mode %04o, not ours 0700: refused", base,
				 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		else
			set_note(w, "%s: %s (not our directory): refused",
				 base, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EPERM;
	}
	close(fd);
	return 0;
}

/* fd moved to 3 or above (close-on-exec), if the launcher was started with
 * 0, 1 or 2 closed: the watcher makes those /dev/null, and keeps the
 * launcher's memfds and directory at their numbers.  -1 if it cannot be. */
static int above_std(int fd)
{
	int h;

	if (fd < 0 || fd > 2)
		return fd;
	h = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return h;
}

/* The session's directory, made last (after the memory: a session that
 * cannot start leaves nothing), locked for the watcher's life.  0 or
 * -errno (w->note set). */
static int make_dir(struct watcher *w)
{
	char base[PATH_MAX];
	struct stat st;
	int r;

	if ((r = user_base(w, base, sizeof(base) - 32)) != 0)
		return r;
	for (int tries = 0; tries < 3; tries++) {
		if (snprintf(w->dir, sizeof(w->dir), "%s/session.XXXXXX", base) >= (int)sizeof(w->dir))
			return -ENAMETOOLONG;
		if (!mkdtemp(w->dir)) {
			r = -errno;
			set_note(w, "mkdtemp in %s: %s", base, strerror(-r));
			w->dir[0] = '\0';
			return r;
		}
		w->dfd = above_std(open(w->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
		if (w->dfd < 0)
			continue;
		/* A reaper that found it before the lock may have removed it
		 * (nlink 0): make another. */
		if (flock(w->dfd, LOCK_EX) == 0 && fstat(w->dfd, &st) == 0 && st.st_nlink > 0)
			return 0;
		close(w->dfd);
		w->dfd = -1;
		rmdir(w->dir);
	}
	w->dir[0] = '\0';
	set_note(w, "cannot make a directory in %s", base);
	return -EAGAIN;
}

/* A memfd of `size` bytes, its first `alloc` bytes allocated now (the
 * rest in chunks as it fills: ring_room, grow_main; an access touches
 * only allocated pages, so none can fault), sealed against shrinking and
 * growing: the fd or -errno (w->note set to what failed). */
static int make_memfd(struct watcher *w, const char *name, uint64_t size, uint64_t alloc)
{
	int fd = above_std(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING)), r;

	if (fd < 0) {
		r = -errno;
		set_note(w, "memfd_create: %s", strerror(-r));
		return r;
	}
	if (ftruncate(fd, (off_t)size) != 0)
		r = -1;
	else
		do
			r = fallocate(fd, 0, 0, (off_t)alloc);
		while (r != 0 && errno == EINTR);
	if (r != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		r = -errno;
		set_note(w, "%s (%llu KiB, %llu allocated now) not made: %s", name,
			 (unsigned long long)(size >> 10), (unsigned long long)(alloc >> 10),
			 strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

/* The ring's memfd, made by the launcher before the fork (its number goes
 * into RCUWALK_SESSION_FDS; the watcher inherits it).  0 or -errno. */
static int make_ring_fd(struct watcher *w)
{
	int fd = make_memfd(w, "rcuwalk-ring", RING_SIZE, RING_FIRST);

	if (fd < 0)
		return fd;
	w->rfd = fd;
	return 0;
}

/* The shared entries' memfd (ring.h, RING_ARENA), made like the ring's by
 * the launcher.  Without it (w->note says why) the session works as in
 * phase 1. */
static void make_arena_fd(struct watcher *w)
{
	int fd = make_memfd(w, "rcuwalk-arena", DCACHE_ARENA_SIZE, ARENA_FIRST);

	if (fd >= 0)
		w->afd = fd;
}

/*
 * Starting the watcher's image (inval_watcher_spawn)
 * ==================================================
 * The watcher must be nobody's child (the command never reaps it, a
 * shell's `wait` never waits for it), so a middle process starts it and
 * exits.  Both are started as posix_spawn() starts a child: clone() with
 * CLONE_VM | CLONE_VFORK on a stack of their own, the parent suspended until
 * the child has exec'd or exited.  No page table is copied and none of the
 * launcher's pages becomes copy-on-write: two fork()s did both, and on a VM
 * whose page-table updates are expensive they were most of what a session
 * added to `rcuwalk -- true` (doc/session.md, "Starting the watcher").  The
 * watcher is a fresh image of this very program (/proc/self/exe, the
 * INVAL_WATCHER_ARG mode of the launcher's main: inval_watcher_image),
 * without LD_PRELOAD and RCUWALK_SESSION*, with the memfds and the
 * directory at the numbers the launcher had.
 *
 * Between clone() and execve() the children share the launcher's memory,
 * its TLS included, while it is suspended: they call nothing but raw system
 * calls and clone(), write nothing but their spawn_args, and run with every
 * signal blocked (a handler of the launcher's would run on their stack).
 */
struct spawn_args {
	char **argv, **envp;
	int fds[4];       /* made inheritable in the watcher's child only */
	sigset_t mask;    /* the launcher's, restored before the execve */
	pid_t wpid;       /* the middle's answer: the watcher's pid, or -errno */
	int exec_err;     /* the watcher's child: errno of a failed execve */
};

static char spawn_stack[2][16384] __attribute__((aligned(64)));

/* Not instrumented: a sanitizer's runtime keeps per-thread state in the TLS
 * these children share with the suspended launcher. */
#define SPAWN_CHILD __attribute__((noinline, no_sanitize("address"), no_sanitize("thread"), \
				   no_sanitize("undefined")))

SPAWN_CHILD static int watcher_child(void *arg)
{
	struct spawn_args *a = arg;
	long nul = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);

	/* 0-2 /dev/null from the start: the image never holds the command's
	 * output open (a pipeline's reader waits for its EOF), and whatever
	 * the loader says (/proc/self/exe is ld.so for `ld.so rcuwalk ...`)
	 * reaches no terminal. */
	for (int i = 0; i < 3 && nul >= 0; i++)
		if (nul != i)
			syscall(SYS_dup2, nul, i);
	if (nul > 2)
		syscall(SYS_close, nul);
	for (int i = 0; i < 4; i++)
		if (a->fds[i] >= 0)
			syscall(SYS_fcntl, a->fds[i], F_SETFD, 0);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &a->mask, NULL, _NSIG / 8);
	syscall(SYS_execve, "/proc/self/exe", a->argv, a->envp);
	a->exec_err = errno ? errno : ENOEXEC;
	syscall(SYS_exit, 127);
	return 127;
}

SPAWN_CHILD static int middle_child(void *arg)
{
	struct spawn_args *a = arg;
	int w = clone(watcher_child, spawn_stack[1] + sizeof(spawn_stack[1]),
		      CLONE_VM | CLONE_VFORK | SIGCHLD, a);

	a->wpid = w > 0 ? w : -(errno ? errno : EAGAIN);
	syscall(SYS_exit, 0);
	return 0;
}

/* The launcher's copies of what it made for the watcher (-1: not made). */
static void close_made(const struct watcher *w)
{
	const int fds[4] = { w->dfd, w->rfd, w->afd, w->pidfd };

	for (int i = 0; i < 4; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * The launcher's part: what can refuse a session is made here, before the
 * command starts, so that a refusal is said (id->note) and the command runs
 * without RCUWALK_SESSION: the memory (both memfds, allocated and sealed),
 * then the directory (made last: a session that cannot start leaves no
 * name), locked.  Then the watcher's image is started (above), and the
 * launcher returns once the middle process has exited, without waiting for
 * the watcher's set-up (an inotify instance, the ring's and the arena's
 * headers, the socket, a thread): processes that attach meanwhile wait for
 * the ring's magic (session.c, wait_published).  The launcher closes its
 * copies of the memfds and of the directory's fd (the lock stays with the
 * watcher's: one open file description).
 */
int inval_watcher_spawn(struct inval_session_id *id, unsigned int keep_s)
{
	static struct watcher w;
	static struct spawn_args a;
	char nums[5][24], *argv[9];
	char **envp = NULL;
	struct sigaction xfsz;
	sigset_t all;
	pid_t mid;
	size_t ne = 0, k = 0;
	int status, r;

	id->dir[0] = id->fds[0] = id->note[0] = '\0';
	w = (struct watcher){ .ifd = -1, .lfd = -1, .pidfd = -1, .hfd = -1, .mfd = -1,
			      .dfd = -1, .rfd = -1, .afd = -1 };
	/* RLIMIT_FSIZE counts the memfds' sizes: past it, EFBIG, not a
	 * SIGXFSZ that kills the launcher. */
	sigaction(SIGXFSZ, &(struct sigaction){ .sa_handler = SIG_IGN }, &xfsz);
	r = make_ring_fd(&w);
	if (r == 0 && getenv("RCUWALK_NO_ARENA"))
		set_note(&w, "no arena (RCUWALK_NO_ARENA)");
	else if (r == 0)
		make_arena_fd(&w); /* without it (w.note says why): phase 1 */
	sigaction(SIGXFSZ, &xfsz, NULL);
	if (r != 0 || (r = make_dir(&w)) != 0)
		goto refused;
	/* The watcher's environment: the launcher's, without the library
	 * and the session's names (the watcher is not a process of it). */
	for (char **e = environ; e && *e; e++)
		ne++;
	envp = calloc(ne + 1, sizeof(*envp));
	if (!envp) {
		r = -ENOMEM;
		goto refused;
	}
	for (char **e = environ; e && *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "RCUWALK_SESSION=", 16) &&
		    strncmp(*e, "RCUWALK_SESSION_FDS=", 20))
			envp[k++] = *e;
	/* The command's pid as a pidfd, not a number that could be another
	 * process's by the time the watcher looks (the command may be short). */
	w.pidfd = above_std((int)syscall(SYS_pidfd_open, getpid(), 0));
	if (w.pidfd < 0) {
		r = -errno;
		set_note(&w, "pidfd_open: %s", strerror(errno));
		goto refused;
	}
	snprintf(nums[0], sizeof(nums[0]), "%d", w.pidfd);
	snprintf(nums[1], sizeof(nums[1]), "%u", keep_s);
	snprintf(nums[2], sizeof(nums[2]), "%d", w.dfd);
	snprintf(nums[3], sizeof(nums[3]), "%d", w.rfd);
	snprintf(nums[4], sizeof(nums[4]), "%d", w.afd);
	argv[0] = "rcuwalk-watcher";
	argv[1] = INVAL_WATCHER_ARG;
	for (int i = 0; i < 5; i++)
		argv[2 + i] = nums[i];
	argv[7] = w.dir;
	argv[8] = NULL;
	a = (struct spawn_args){ .argv = argv, .envp = envp, .fds = { w.dfd, w.rfd, w.afd, w.pidfd },
				 .wpid = -EAGAIN };
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &a.mask);
	mid = clone(middle_child, spawn_stack[0] + sizeof(spawn_stack[0]),
		    CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	r = mid < 0 ? -errno : 0;
	pthread_sigmask(SIG_SETMASK, &a.mask, NULL);
	if (mid > 0)
		while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
			;
	free(envp);
	envp = NULL;
	if (r == 0 && (a.wpid < 0 || a.exec_err)) {
		r = a.wpid < 0 ? a.wpid : -a.exec_err;
		if (a.wpid > 0) /* its child, exited: reparented to init, reaped there */
			set_note(&w, "exec of the watcher: %s", strerror(a.exec_err));
	}
	if (r != 0) { /* no watcher: the names and the memory go */
		if (!w.note[0])
			set_note(&w, "starting the watcher: %s", strerror(-r));
		goto refused;
	}
	snprintf(id->dir, sizeof(id->dir), "%s", w.dir);
	snprintf(id->fds, sizeof(id->fds), "%u:%d:%d", (unsigned)a.wpid, w.rfd, w.afd);
	snprintf(id->note, sizeof(id->note), "%s", w.note);
	close_made(&w);
	return 0;
refused:
	free(envp);
	snprintf(id->note, sizeof(id->note), "%s", w.note[0] ? w.note : strerror(-r));
	if (w.dir[0])
		rmdir(w.dir);
	close_made(&w);
	return r ? r : -EAGAIN;
}

int inval_session_hold(struct inval_session_id *id, unsigned int keep_s)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { 1, 0 };
	char link[PATH_MAX], t[PATH_MAX], k[64];
	uint32_t want = keep_s;
	struct stat st;
	ssize_t n;
	int dfd, s, r;

	id->dir[0] = id->fds[0] = id->note[0] = '\0';
	if ((r = inval_keep_link_path(link, sizeof(link))) != 0)
		return r;
	n = readlink(link, t, sizeof(t) - 1);
	if (n <= 0)
		return -ENOENT;
	t[n] = '\0';
	if (t[0] != '/' || (size_t)n >= sizeof(id->dir))
		return -EINVAL;
	/* The directory as an attach checks it (session.c): ours, 0700, no
	 * symlink; the socket reached through that very directory. */
	dfd = open(t, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		close(dfd);
		return -EPERM;
	}
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/" RING_HOLD, dfd);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0) {
		r = -errno;
		close(dfd);
		return r;
	}
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	r = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    send(s, &want, sizeof(want), MSG_NOSIGNAL) == (ssize_t)sizeof(want) &&
		    (n = recv(s, k, sizeof(k) - 1, 0)) >= 1 && k[0] == 'K' ? 0 : -ESRCH;
	close(s);
	close(dfd);
	if (r == 0) { /* "K" and the watcher's "PID:RFD:AFD" */
		k[n] = '\0';
		snprintf(id->fds, sizeof(id->fds), "%s", k + 1);
	}
	if (r == 0)
		snprintf(id->dir, sizeof(id->dir), "%s", t);
	return r;
}
