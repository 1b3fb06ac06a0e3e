/* SPDX-License-Identifier: MIT */
/*
 * ldlink.h - a name that LD_PRELOAD can carry, for a library whose path has a
 * ':' or a ' ' (the launcher, preload/rcuwalk.c, and the test runner,
 * tests/preload_run.c).  Private to those two programs; not in the library.
 *
 * ld.so(8) splits LD_PRELOAD at every ':' and ' ', with no way to quote
 * either.  Such a library is named through a symbolic link instead:
 *
 *   /tmp/rcuwalk-links.<euid>/<dev>-<ino>  ->  DIR
 *
 * where DIR is the directory whose own name holds the entry's last ':' or
 * ' ' and <dev>-<ino> identifies DIR (st_dev, st_ino in hex).  The entry
 * "DIR/rest/librcuwalk.so" becomes "/tmp/rcuwalk-links.<euid>/<dev>-<ino>/
 * rest/librcuwalk.so": the file name, and a "$LIB" in rest, are kept.
 *
 * Invariants (what makes the link safe to hand to every process of a tree):
 *  - The link directory is a real directory (never followed if it is a
 *    symbolic link), owned by the effective uid, mode 0711: nobody else can
 *    add, replace or remove a link in it, and /tmp's sticky bit keeps anyone
 *    else from renaming the directory itself.  /tmp must be sticky or
 *    writable only by its owner, and owned by root or by us.
 *  - Mode 0711, not 0700, and /tmp rather than $XDG_RUNTIME_DIR (0700) or a
 *    private $TMPDIR: a child that changes uid (setpriv, su, a test's drop to
 *    nobody) must still resolve the name; the library itself must then be
 *    readable by it too, as without the link.
 *  - A link is replaced only by an atomic rename of a new one, so a process
 *    starting meanwhile sees the old link or the new one, never no link.
 *    Two launchers for the same DIR write the same link.
 *  - A link that can still serve is never removed: a launcher execs its
 *    command, and any process of the tree may exec again later and need
 *    the name.  One link per directory linked (dev/ino are unique among
 *    existing directories, and a link found pointing elsewhere is
 *    replaced).  Each launcher that makes or checks a link removes the
 *    links whose target is gone (a prefix removed) or is another directory
 *    than the one their name identifies: nothing can be loaded through
 *    them.  tmp cleaners or a reboot remove the rest, and the next launcher
 *    makes them again.
 */
#ifndef RCUWALK_LDLINK_H
#define RCUWALK_LDLINK_H

#include <stddef.h>

/* The directory that holds the links, below this one. */
#define LDLINK_BASE "/tmp"

/*
 * ldlink_entry - what to put into LD_PRELOAD for the library path `entry`
 * (absolute; may hold "$LIB" after its last ':' or ' ').
 * @make: 1: make the link directory and the link, or check and repair
 *        them; 0: only compute the name (for --version).
 * @out, @outsize: the result: `entry` itself when it has no ':' or ' '.
 * @err, @errsize: on failure, one sentence saying why (no trailing newline).
 *
 * Returns 0, or -1 on failure (the entry's file name itself has ':' or ' ',
 * DIR is missing, the link directory is not safe to use, a system call
 * failed).  May block (file system); touches no global state but errno.
 */
int ldlink_entry(const char *entry, int make, char *out, size_t outsize, char *err, size_t errsize);

#endif
