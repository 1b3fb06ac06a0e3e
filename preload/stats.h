/* SPDX-License-Identifier: MIT */
/*
 * stats.h - per-process statistics records of librcuwalk.so, and the record
 * format that the launcher (rcuwalk --stats) sums.
 *
 * With RCUWALK_STATS=FILE each process that ran the shim appends records to
 * FILE, each ONE write(2) of RCUWALK_RECORD_LEN bytes with O_APPEND (no
 * lock; a record never interleaves with another):
 *
 *   rcuwalk-stats v1 pid=<10 digits> hits=<20 digits> ... end=<4 letters>\n
 *
 * Every number is zero-padded to a fixed width, so every record has the
 * same length.  The first seven fields are the original v1 line; the others
 * were appended, so v1 readers (sscanf of the first seven) still work.  The
 * fields, in order (RCUWALK_RECORD_FIELDS):
 *
 *   hits          lookups answered from the cache with success
 *   neg_hits      lookups answered from the cache with an error
 *   misses        kernel questions asked to fill the cache
 *   passthrough   lookups answered by the real call (= the pass_* sum)
 *   invalidations dentries killed or attribute sets dropped
 *   saved         hits + neg_hits: path syscalls avoided
 *   lookups       hits + neg_hits + passthrough: lookup calls seen
 *   pass_open     open() the cache did not answer: the name exists (a
 *                 successful open needs the kernel's fd) or the cache declined
 *   pass_cache    other lookups the cache declined: filesystem not cached
 *                 (/proc, /sys...), directory not watched (permissions) or
 *                 excluded, hard-linked file, name > NAME_MAX,
 *                 errors other than ENOENT/ENOTDIR, a race with an event
 *   pass_dirfd    relative to a real directory fd
 *   pass_form     flags or arguments the cache does not model (AT_EMPTY_PATH,
 *                 access() with real != effective ids, bad pointers, ...)
 *   pass_write    open for writing or creating
 *   pass_early    before the shim was initialised (the shim's own calls from
 *                 inside it, e.g. liburcu reading /sys, are not counted)
 *   watches       inotify watches held at the end
 *   watch_fail    inotify_add_watch failures (inotify limits, permissions)
 *   events        inotify events read
 *   overflows     inotify queue overflows (the cache was emptied)
 *   mismatches    verify mode (RCUWALK_VERIFY=1): cached answers that differed
 *                 from the kernel's (each one a line in the verify log)
 *   pass_watch_limit  lookups passed through because a directory on the way
 *                 got no inotify watch: the watch budget
 *                 (RCUWALK_WATCH_BUDGET) or the kernel's limits
 *                 (max_user_watches, max_user_instances).  One of the pass_*
 *                 reasons (passthrough is their sum); appended last.
 *   pass_fs       lookups passed through because the filesystem is not cached
 *                 (proc, sysfs, devtmpfs, unknown types), the directory is
 *                 excluded (RCUWALK_EXCLUDE) or could not be watched
 *                 (permissions).  One of the pass_* reasons.
 *   pass_attr     stat-type lookups of files whose attributes are never kept
 *                 (st_nlink > 1, FIFOs, sockets, devices).  A pass_* reason.
 *   pass_racy     stat-type lookups of files whose mtime/ctime is younger than
 *                 RCUWALK_RACY_MS: the kernel's answer, not kept.  A pass_*
 *                 reason.  pass_cache is what is left (races with events,
 *                 kernel errors such as EACCES, names > NAME_MAX).
 *   pass_warmup   lookups passed through during the warm-up: the first
 *                 RCUWALK_WARMUP lookups of a process image, which start
 *                 nothing (no table, no inotify instance).  A pass_*
 *                 reason, counted by the wrappers.
 *   listings_shared  directory listings taken from the session's shared
 *                 listings instead of the kernel (doc/session.md, phase 2)
 *   watches_shared  directory watches taken from the session's shared
 *                 entries instead of an inotify_add_watch (phase 2)
 *   names_shared  what a name is (absent, a directory, a file, a symlink),
 *                 taken from the session's shared entries instead of an
 *                 lstat (phase 2)
 *   files_shared  a regular file's attributes, taken from the session's
 *                 shared entries instead of an lstat (ENT_FILE)
 *   searches_shared  directories this process's credentials may search,
 *                 taken from the session's shared entries instead of an
 *                 lstat of a name in them (phase 2)
 *   paths_shared  negative answers (ENOENT, ENOTDIR) of whole names that
 *                 this process offered to the session's shared path table
 *   path_hits_shared  lookups answered from the session's shared path
 *                 table (a name another process found absent), without a
 *                 walk of this process's own; counted in neg_hits too
 *   fs_shared     filesystem classes (local, TTL, not cached) this process
 *                 took from the session by unique mount ID instead of
 *                 asking the kernel (statfs, mountinfo)
 *   fill_ns       ns spent filling the cache on misses (the kernel calls
 *                 the cache made for itself, and their bookkeeping),
 *                 measured around each (DCACHE_STAT_FILL_NS)
 *   start_ns      ns spent starting the cache (start_cache(): loading
 *                 liburcu), measured
 *   index_hits    walks the path index resolved in one step, from the
 *                 whole name to its final dentry (dcache_stats); counted in
 *                 hits/neg_hits too
 *   prefix_hits   walks begun at the index entry of their name's directory
 *                 prefix (dcache_walk.c, "Prefix")
 *   pass_rent     lookups passed through because the directory of the name
 *                 was not watched yet, within its first RCUWALK_DIR_RENT
 *                 lookups (cache/dcache_populate.c, "Directory rent").  A
 *                 pass_* reason of the cache's own; appended last
 *
 * end= says which end of the process image wrote it:
 *   dtor  exit() or return from main (the library destructor)
 *   exit  _exit()/_Exit() called through the shim
 *   exec  an exec*() call, before it is made (only if something was
 *         counted since the last record); if the exec fails, later
 *         records count from there
 * Each record counts what happened since the previous record of the same
 * process image, so a tree's totals are the plain sum of its records.
 * Not covered: death by a signal, raw exit_group/execve syscalls, glibc's
 * internal exec in posix_spawn children (they run no lookups).
 *
 * Samples.  With each record, a process appends to FILE.samples (one
 * write(2), O_APPEND) the names it sampled among the lookups the cache
 * answered since its previous record, at most RCUWALK_SAMPLES, one line
 * each (variable length; a name with a newline is never sampled):
 *
 *   rcuwalk-sample v1 pid=<10 digits> weight=<20> ns=<20> follow=<0|1> path=<absolute path>\n
 *
 * weight: how many lookups that reached the cache each sample of this
 * record stands for (a systematic sample: every weight-th such lookup of a
 * thread, the interval doubled whenever the slots fill); ns: that lookup's
 * own time in the shim (CLOCK_MONOTONIC around the cache's answer, the
 * clock's cost included); follow: 0 for an lstat-type lookup.  The
 * launcher (rcuwalk --stats) times a raw stat/lstat of these names on each
 * filesystem after the command ended (preload/cost.c).  Records stay
 * exactly as above: a reader of records never sees a sample line.
 */
#ifndef RCUWALK_STATS_H
#define RCUWALK_STATS_H

#include <stddef.h>
#include <stdint.h>

#define RCUWALK_RECORD_TAG "rcuwalk-stats v1"

#define RCUWALK_RECORD_FIELDS(X)                                                  \
	X(hits) X(neg_hits) X(misses) X(passthrough) X(invalidations) X(saved)     \
	X(lookups) X(pass_open) X(pass_cache) X(pass_dirfd) X(pass_form)          \
	X(pass_write) X(pass_early) X(watches) X(watch_fail) X(events) X(overflows) \
	X(mismatches) X(pass_watch_limit) X(pass_fs) X(pass_attr) X(pass_racy)    \
	X(pass_warmup) X(listings_shared) X(watches_shared) X(names_shared)    \
	X(files_shared) X(searches_shared) X(paths_shared) X(path_hits_shared) X(fs_shared) X(fill_ns) \
	X(start_ns) X(index_hits) X(prefix_hits) X(pass_rent)

#define RCUWALK_RECORD_PID_DIGITS 10
#define RCUWALK_RECORD_NUM_DIGITS 20
#define RCUWALK_RECORD_END_LEN 4

#define RCUWALK_FIELD_LEN_(name) (sizeof(" " #name "=") - 1 + RCUWALK_RECORD_NUM_DIGITS) +
/* Length of every record, newline included. */
#define RCUWALK_RECORD_LEN                                                         \
	(sizeof(RCUWALK_RECORD_TAG " pid=") - 1 + RCUWALK_RECORD_PID_DIGITS +      \
	 RCUWALK_RECORD_FIELDS(RCUWALK_FIELD_LEN_) sizeof(" end=") - 1 + RCUWALK_RECORD_END_LEN + 1)

#define RCUWALK_SAMPLE_TAG "rcuwalk-sample v1"
#define RCUWALK_SAMPLES 16         /* sampled names per record, at most */
#define RCUWALK_SAMPLE_PATH 1024   /* longer names are not sampled */
#define RCUWALK_SAMPLES_SUFFIX ".samples"

/* Why a lookup passed through, as the wrappers tell it (per-thread counts). */
enum preload_pass {
	PRELOAD_PASS_OPEN,  /* subset of the cache's passthrough: an open it declined */
	PRELOAD_PASS_DIRFD,
	PRELOAD_PASS_FORM,
	PRELOAD_PASS_WRITE,
	PRELOAD_PASS_EARLY,
	PRELOAD_PASS_WARMUP, /* the first RCUWALK_WARMUP lookups (preload.h) */
	PRELOAD_PASS_N_
};

/* Count one pass-through of kind `why` in this thread's block: no shared
 * write, no lock, async-signal-safe. */
void preload_count_pass(enum preload_pass why);

/* Sampling the cache's answers (FILE.samples, above).  Before a lookup
 * that reaches the cache: 1 if this one is to be sampled (then time it and
 * call preload_sample_answer() if the cache answered it), else 0.  One
 * thread-local increment; async-signal-safe. */
int preload_sample_due(void);
/* Keep `path` (len bytes; relative ones are made absolute with the raw
 * getcwd) as a sample that took `ns`, for a lookup that follows a final
 * symlink or not.  Skipped if another thread is adding one.  Async-signal-
 * safe: raw syscalls, atomics. */
void preload_sample_answer(const char *path, size_t len, int follow, uint64_t ns);
/* Add the time start_cache() took.  Any thread; one atomic add. */
void preload_count_start_ns(uint64_t ns);

/* Records go to `path` (absolute or not; NULL/"" = no records).  Called once
 * by preload_init(). */
void preload_stats_init(const char *path);

/* Resolve the exec family's real functions now, once (dlsym).  Called by
 * fork() in the parent, before the real fork: a child that execs then needs
 * no dlsym of its own (~6 page faults and the look-up, in every child of a
 * shell).  Not async-signal-safe (dlsym); fork() is not called from a
 * signal handler by a program that wants it to be safe either. */
void preload_stats_resolve_exec(void);

/* Append this image's record (counts since its previous record) with end=
 * `end` (4 letters).  Async-signal-safe; raw syscalls only; errno kept. */
void preload_write_record(const char *end);

/* The user's own directory for files the shim names itself:
 * $XDG_RUNTIME_DIR if it is ours and closed to others, else
 * <$TMPDIR or /tmp>/rcuwalk-<euid>, made 0700 if absent and refused (-EPERM)
 * unless a directory of ours, 0700, not a symlink.  Its path into out.
 * 0 or -errno.  Raw syscalls; async-signal-safe but for getenv. */
int preload_private_dir(char *out, size_t size);

/* Open `path` to append to (stats.c, "Files written in directories that
 * other users may write"): ours = 1 for a name the shim chose in
 * preload_private_dir() (O_EXCL | O_NOFOLLOW when new; else a regular file
 * of ours), 0 for a name the user gave (followed unless a foreign symlink
 * in a sticky world-writable directory; a foreign file there refused).
 * New files are 0600.  The fd (O_CLOEXEC) or -errno.  Raw syscalls only,
 * async-signal-safe. */
int preload_open_append(const char *path, int ours);

#endif
