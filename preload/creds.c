/* SPDX-License-Identifier: MIT */
/*
 * creds.c - whether the cache may answer access(2) for this process: the
 * credentials access() checks with, against those the cache learned with
 * (doc/coherence.md, "Identity").
 *
 * Design
 * ======
 * access() and faccessat() without AT_EACCESS check with the credentials
 * that access_override_creds() (fs/open.c) makes from the process's own:
 *   fsuid := real uid, fsgid := real gid;
 *   unless SECBIT_NO_SETUID_FIXUP: effective capabilities cleared for a
 *   real uid that is not root in the process's user namespace, and
 *   effective := permitted for one that is.
 * Nothing else differs (groups, user namespace, LSM label).  The cache
 * learned what it knows with the process's own credentials (fs ids,
 * effective capabilities), by stat and open: that a directory may be
 * searched (D_SEARCHED; the session's ENT_SEARCH, keyed by those very
 * credentials), and so the names and negative entries found behind it.  It
 * answers access() only where the override changes nothing, which is the
 * kernel's own test for skipping it (access_need_override_creds), mirrored:
 *
 *   real uid == fsuid and real gid == fsgid, and
 *   SECBIT_NO_SETUID_FIXUP set, or real uid 0 with effective == permitted,
 *   or a real uid other than 0 with no effective capability.
 *
 * So a non-root process with ambient CAP_DAC_READ_SEARCH (systemd's
 * AmbientCapabilities= with User=, `setpriv --ambient-caps`), whose stat
 * sees into root's 0700 directory where its access() does not, passes
 * through; plain root and a plain user do not.  The ids are compared as the
 * process's user namespace shows them, where every unmapped id reads as the
 * overflow id: outside the initial namespace, a uid or gid that reads so
 * passes through (two different unmapped ids would compare equal).
 * AT_EACCESS checks with the process's own credentials, as stat does: no
 * condition.
 *
 * Decided at the first access() of a credential epoch (the wrappers of the
 * setuid family, setgroups, setfs[ug]id, capset and prctl(PR_SET_SECUREBITS)
 * bump preload_cred_epoch), with raw syscalls.  A change made by a raw
 * syscall is not seen, as the rest of the cache does not see it (README,
 * limits).
 *
 * State: access_state, below: the epoch and its answer in one word, so
 * that no thread reads one epoch's answer with another's number; any thread
 * may compute it (each computes the same answer for one epoch).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "shim.h"

/* The inode number of the initial user namespace's nsfs file
 * (include/linux/proc_ns.h: PROC_USER_INIT_INO, fixed since Linux 3.8). */
#define USER_NS_INIT_INO 0xEFFFFFFDu

/* (preload_cred_epoch + 1) << 1 | answer; 0: never computed. */
static uint64_t access_state;

/* A number from a /proc/sys file, or -1.  Raw syscalls. */
static long read_number(const char *path)
{
	char buf[32];
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	long n;

	if (fd < 0)
		return -1;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/* Whether ids uid and gid, as this namespace shows them, are mapped ones
 * (then equal numbers are equal ids). */
static int ids_mapped(long uid, long gid)
{
	struct stat st;

	if (syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/ns/user", &st, 0) != 0)
		return 0;
	if (st.st_ino == USER_NS_INIT_INO)
		return 1; /* every id is mapped in the initial namespace */
	return uid != read_number("/proc/sys/kernel/overflowuid") &&
	       gid != read_number("/proc/sys/kernel/overflowgid");
}

static int compute_access_same(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct caps[2];
	long uid = syscall(SYS_getuid), gid = syscall(SYS_getgid);
	long fsuid = syscall(SYS_setfsuid, -1), fsgid = syscall(SYS_setfsgid, -1); /* -1 sets nothing */
	long bits = syscall(SYS_prctl, PR_GET_SECUREBITS, 0L, 0L, 0L, 0L);
	uint64_t eff, perm;

	if (uid < 0 || gid < 0 || fsuid < 0 || fsgid < 0 || bits < 0 ||
	    syscall(SYS_capget, &hdr, caps) != 0)
		return 0; /* cannot tell: the kernel answers */
	if (uid != fsuid || gid != fsgid)
		return 0;
	if (!(bits & SECBIT_NO_SETUID_FIXUP)) {
		eff = caps[0].effective | (uint64_t)caps[1].effective << 32;
		perm = caps[0].permitted | (uint64_t)caps[1].permitted << 32;
		if (uid == 0 ? eff != perm : eff != 0)
			return 0;
	}
	return ids_mapped(uid, gid);
}

int preload_access_as_lookup(void)
{
	uint64_t e = (uint64_t)__atomic_load_n(&preload_cred_epoch, __ATOMIC_ACQUIRE) + 1;
	uint64_t s = __atomic_load_n(&access_state, __ATOMIC_RELAXED);
	int saved, r;

	if (__builtin_expect(s >> 1 == e, 1))
		return (int)(s & 1);
	saved = errno;
	r = compute_access_same();
	errno = saved;
	__atomic_store_n(&access_state, e << 1 | (uint64_t)r, __ATOMIC_RELAXED);
	return r;
}
