/*
 * preload.h - rcuwalk's shim: the only module that knows glibc's entry points.
 *
 * preload/ defines the exported libc-named wrappers (shim.c), fills the
 * cache's ops with raw syscalls and the inotify ops (preload_init), and holds
 * the launcher (rcuwalk.c).  Nothing here is exported but the libc names.
 */
#ifndef RCUWALK_PRELOAD_H
#define RCUWALK_PRELOAD_H

#include <stddef.h>

/* Read the configuration (RCUWALK_DISABLE, RCUWALK_MAX_MB, RCUWALK_STATS) and
 * wire cache/ and invalidate/ together.  Called once from the constructor;
 * calls that arrive before it pass through. */
void preload_init(void);

/* Mounts may have changed (mount, umount, a namespace, chroot): forget the
 * filesystem verdicts cached per device number.  Any thread; one atomic. */
void preload_mounts_changed(void);

/* Append this process's counter line to $RCUWALK_STATS (one O_APPEND write).
 * Called from the destructor. */
void preload_write_stats(void);

#endif
