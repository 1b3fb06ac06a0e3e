/* SPDX-License-Identifier: MIT */
/*
 * cpu_lock.h - one lock for every test run on this machine, about its CPUs.
 *
 * CI's step 6 runs two checkouts' suites at once (.ci/run).  One test takes
 * a CPU away from everything on the machine: test_session's starved watcher
 * (a SCHED_FIFO loop on one CPU, up to 950 ms of every second under the
 * kernel's RT throttling).  A thread of the other run woken on that CPU
 * waits behind the loop, and a test of that run that asserts a bound under
 * a second fails for a reason that is not its own (CI, stop 45: "stall
 * kill: stale for 755.778 ms", "stall starve: stale for 903.550 ms", both
 * runs' test_session at the same moment).
 *
 * Invariant: the test that runs a SCHED_FIFO loop holds this lock
 * exclusively from before the loop starts until after it is reaped; a test
 * that asserts a latency bound under 1 s holds it shared from before its
 * measured window opens until after it closes.  ctest's RESOURCE_LOCK
 * reaches one ctest run only; this is a file lock (flock), so it reaches
 * every run on the machine, whatever its build directory or user.  The
 * name is fixed on purpose; a file another user made is opened read-only
 * (flock needs no write access).  Raw system calls: the tests run under
 * the shim, and the lock's name is nothing they look up.
 */
#ifndef RCUWALK_CPU_LOCK_H
#define RCUWALK_CPU_LOCK_H

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CPU_LOCK_PATH "/tmp/rcuwalk-tests-cpu.lock"
#define CPU_LOCK_WAIT_S 60

/* Takes the machine's CPU lock, LOCK_SH or LOCK_EX, waiting for it at most
 * CPU_LOCK_WAIT_S (then goes on without it: a test must not hang on a lock
 * somebody left held).  Returns the fd to give cpu_unlock(), or -1. */
static inline int cpu_lock(int how)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	long fd = syscall(SYS_openat, AT_FDCWD, CPU_LOCK_PATH,
			  O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);

	if (fd < 0 && errno == EACCES)
		fd = syscall(SYS_openat, AT_FDCWD, CPU_LOCK_PATH,
			     O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	(void)fchmod((int)fd, 0666); /* made by us under a umask: let others open it */
	for (int i = 0; i < CPU_LOCK_WAIT_S * 100; i++) {
		if (flock((int)fd, how | LOCK_NB) == 0)
			return (int)fd;
		if (errno != EWOULDBLOCK && errno != EINTR)
			break;
		nanosleep(&pause, NULL);
	}
	syscall(SYS_close, fd);
	return -1;
}

/* Gives back what cpu_lock() returned (-1: nothing). */
static inline void cpu_unlock(int fd)
{
	if (fd >= 0)
		syscall(SYS_close, fd);
}

#endif
