/* SPDX-License-Identifier: MIT */
/*
 * inval_int.h - PRIVATE to invalidate/: what inval.c shares with
 * inval_shared.c (the session's shared entries as the cache's ops).  Never
 * included outside invalidate/; nothing here is part of the library's
 * interface (hidden, like everything not interposed).  The state's rules
 * (which mutex guards what) are at the top of inval.c.
 */
#ifndef RCUWALK_INVAL_INT_H
#define RCUWALK_INVAL_INT_H

#include <stdatomic.h>

#include "dcache.h"

#pragma GCC visibility push(hidden)

/* The current instance's fd (-1: none) and generation (bumped whenever an
 * instance is given up).  inval.c. */
extern atomic_int inotify_fd;
extern atomic_uint inst_gen;
/* No shared entry used or offered after this is set (a mount change our
 * own poll saw first, a credential change), for the rest of the image. */
extern atomic_int listing_off;
/* The ring's mount count whose change this process has applied. */
extern atomic_uint ring_mounts_applied;
/* Statistics: shared entries taken from the session's arena. */
extern atomic_ulong st_listings_shared, st_watches_shared, st_names_shared, st_searches_shared;

/* The session's watch numbers this process added (inval.c, "A session's
 * records about watches this process never added"). */
#define SESSION_WD_BITS (1u << 20) /* 128 KiB, allocated at the first session watch */
void session_wd_add(int wd);
int session_wd_foreign(int wd);
int session_wd_ours(int wd);

/* FIONREAD on instance (fd, gen) into *n (1 if unknown), under fd_mutex
 * (takes it).  0 if the instance is no longer ours. */
int queued_locked(int fd, unsigned int gen, int *n);

/* Fill the session's shared-entry ops (inval_shared.c). */
void inval_shared_fill_ops(struct dcache_ops *ops);

#pragma GCC visibility pop

#endif /* RCUWALK_INVAL_INT_H */
