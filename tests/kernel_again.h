/* SPDX-License-Identifier: MIT */
/*
 * kernel_again.h - asking the kernel again after a mismatch, for the tests
 * that compare answers with the kernel's (test_dcache, test_differential,
 * test_names, walk_fuzz).
 *
 * The kernel's answer to a lookup is not always a function of the tree: a
 * lookup that follows more than about 21 symbolic links can fail with a
 * spurious ELOOP while a mount or umount happens anywhere on the machine, in
 * any mount namespace (mount_lock is global).  The RCU walk sees mount_lock
 * move and the lookup is made again as a ref-walk; by the figures, links the
 * first attempt followed still count towards the 40 allowed.  Measured on
 * Linux 6.18 with faccessat("k1/../file"), k1 N links from a directory,
 * during a tmpfs mount/umount loop in a private namespace: no ELOOP for
 * N = 20 or 21, 0.08% for 22, 8-11% for 25..39, none without the loop.
 * Another test run's test_mounts, test_safety, test_fuse_ttl or
 * test_launcher is such a mount; a private mount namespace does not help.
 *
 * So a comparison that finds a mismatch asks again, up to KERNEL_ASK_AGAIN
 * times: a real mismatch persists, a transient kernel answer does not.  The
 * kernel is asked again; the shim (or the cache) is asked again only when its
 * own answer was ELOOP, which may be the kernel's transient answer passed on
 * (open() always asks the kernel).  A cached ELOOP that is wrong persists
 * and is still reported; a wrong ELOOP of a first, uncached lookup only
 * would go unseen here (test_dcache's ELOOP tests pin the cache's own link
 * counting).  Each answer taken back is printed, so a run shows how often.
 */
#ifndef RCUWALK_KERNEL_AGAIN_H
#define RCUWALK_KERNEL_AGAIN_H

#include <stdbool.h>

#define KERNEL_ASK_AGAIN 10

/*
 * KERNEL_AGAIN(same, shim_eloop, ask_shim, ask_kernel) - after a mismatch:
 * up to KERNEL_ASK_AGAIN times, ask_shim (only if shim_eloop was true at the
 * start) then ask_kernel, until `same` holds.  Evaluates to true if it came
 * to hold (the mismatch was transient), false if it persisted.  ask_shim and
 * ask_kernel are statements that refill the answers `same` compares.
 */
#define KERNEL_AGAIN(same, shim_eloop, ask_shim, ask_kernel)                        \
	({                                                                          \
		bool again_shim_ = (shim_eloop), again_same_ = false;               \
		for (int again_ = 0; !again_same_ && again_ < KERNEL_ASK_AGAIN; again_++) { \
			if (again_shim_) {                                          \
				ask_shim;                                           \
			}                                                           \
			ask_kernel;                                                 \
			again_same_ = (same);                                       \
		}                                                                   \
		again_same_;                                                        \
	})

#endif
