/* SPDX-License-Identifier: MIT */
/*
 * dcache_urcu.c - liburcu loaded at the first lookup, not with the shim.
 *
 * Why: every process of a build loads librcuwalk.so, and most configure
 * processes, `true`, `gcc --version` look up few names or none.  Loading
 * liburcu-bp and liburcu-cds with the shim (DT_NEEDED) cost each of them
 * two more shared objects, 70-90 us of a 630 us posix_spawn+exit of
 * /bin/true on the 2-vCPU VM (doc/benchmarks.md, "Loading the shim").
 *
 * How: the shim is linked without liburcu.  cache/ and invalidate/ call
 * liburcu's functions, never its inline read-side code (they are built with
 * URCU_INLINE_SMALL_FUNCTIONS, not _LGPL_SOURCE: dcache_int.h), so the only
 * liburcu names they use are the functions below and the flavor object.
 * This file defines each of them (hidden: the version script exports none)
 * as a forward to the real one, found with dlopen (RTLD_GLOBAL, as a
 * DT_NEEDED library would be: the shim's fork hooks find liburcu's with
 * dlsym(RTLD_NEXT)) and dlsym, both by their full names where that is
 * safe (open_bp, open_cds_beside).  A host that already loaded liburcu-bp
 * gets its own copy back, shared as before.
 *
 * Built into the shims only (librcuwalk.so and the tests' faulty one: the
 * object library rcuwalk_cache_urcu), never into rcuwalk_cache, which the
 * unit tests link with liburcu's shared libraries.  With liburcu linked
 * into the shim (RCUWALK_URCU_STATIC, no RCUWALK_URCU_LAZY) it holds only
 * the trivial dcache_urcu_* of that case.
 *
 * Invariants:
 *  - dcache_urcu_load() runs before the cache is first used (preload/shim.c,
 *    cache_usable(): PRELOAD_LOAD), with in_shim raised (the loader's own
 *    opens pass through); it fails without side effects if liburcu cannot
 *    be loaded, and the shim then passes everything through (PRELOAD_OFF).
 *  - Nothing RCU-protected exists before the load: the table, dentries and
 *    call_rcu threads are made by cache/ after it.  A forward called before
 *    (a fork or chdir hook that reaches cache/ during the warm-up) loads
 *    first, through the loader preload/ set (dcache_urcu_set_loader: it
 *    raises in_shim), so a read-side section never begins unregistered.
 *  - The pointers are written once, under load_mutex, before `loaded` is
 *    set (release); a forward reads `loaded` (acquire) before them.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcache.h"
#include "dcache_int.h"
#undef call_rcu /* dcache_int.h's redirection for cache/; here the forwards are liburcu's names */

#ifndef RCUWALK_URCU_LAZY
/* liburcu linked into the shim (RCUWALK_URCU_STATIC): nothing to load. */
int dcache_urcu_load(void) { return 1; }
int dcache_urcu_loaded(void) { return 1; }
int dcache_urcu_fork_prepare(void) { return 1; }
void dcache_urcu_fork_parent(void) {}
void dcache_urcu_fork_child(void) {}
DCACHE_START_TEXT void dcache_urcu_set_loader(int (*load)(void)) { (void)load; }
#else

/* For the layout of liburcu-bp's reader only (rd_learn_layout): nothing of
 * its inline side is called. */
#include <urcu/static/urcu-bp.h>

#ifndef RCUWALK_URCU_BP_SONAME
#define RCUWALK_URCU_BP_SONAME "liburcu-bp.so.8"
#endif
#ifndef RCUWALK_URCU_CDS_SONAME
#define RCUWALK_URCU_CDS_SONAME "liburcu-cds.so.8"
#endif

/* The flavor cache/ hands to cds_lfht_new(): only its address is used, and
 * _cds_lfht_new() below replaces it with liburcu-bp's own. */
const struct rcu_flavor_struct urcu_bp_flavor;

static struct {
	__typeof__(urcu_bp_read_lock) *read_lock;
	__typeof__(urcu_bp_read_unlock) *read_unlock;
	__typeof__(urcu_bp_read_ongoing) *read_ongoing;
	__typeof__(urcu_bp_synchronize_rcu) *synchronize_rcu;
	__typeof__(urcu_bp_barrier) *barrier;
	__typeof__(urcu_bp_call_rcu) *call_rcu;
	__typeof__(urcu_bp_create_call_rcu_data) *create_call_rcu_data;
	__typeof__(urcu_bp_call_rcu_data_free) *call_rcu_data_free;
	__typeof__(urcu_bp_get_cpu_call_rcu_data) *get_cpu_call_rcu_data;
	__typeof__(urcu_bp_get_default_call_rcu_data) *get_default_call_rcu_data;
	__typeof__(urcu_bp_set_cpu_call_rcu_data) *set_cpu_call_rcu_data;
	const struct rcu_flavor_struct *flavor;
	__typeof__(_cds_lfht_new) *lfht_new;
	__typeof__(cds_lfht_add) *lfht_add;
	__typeof__(cds_lfht_del) *lfht_del;
	__typeof__(cds_lfht_destroy) *lfht_destroy;
	__typeof__(cds_lfht_lookup) *lfht_lookup;
	__typeof__(cds_lfht_resize) *lfht_resize;
} u;

static pthread_mutex_t load_mutex = PTHREAD_MUTEX_INITIALIZER;
/* 0 not yet, 1 loaded, -1 failed (for good).  Read by fork() during the
 * warm-up: on the start-up data page (DCACHE_START_DATA, dcache.h). */
static int loaded DCACHE_START_DATA;
/* need()'s way to load: preload/'s dcache_urcu_load() with in_shim raised and
 * errno kept; set once by preload_init(), before the cache can run. */
static int (*loader)(void) DCACHE_START_DATA;

DCACHE_START_TEXT void dcache_urcu_set_loader(int (*load)(void))
{
	loader = load;
}

#define SYM(h, field, name)                                         \
	do {                                                        \
		*(void **)&u.field = dlsym((h), (name));            \
		ok = ok && u.field != NULL;                         \
	} while (0)

/* The lookup's inline read side (dcache_int.h, dc_read_lock): where
 * liburcu-bp's thread-local `urcu_bp_reader` lies in each thread's block of
 * the library's TLS (module number, offset), found once at the load;
 * __tls_get_addr() then gives a thread its own slot, once (the library itself
 * asks it at every read_lock).  Set before `loaded` is released. */
typedef struct {
	unsigned long ti_module;
	unsigned long ti_offset;
} rd_tls_index;
extern void *__tls_get_addr(rd_tls_index *ti);
static rd_tls_index rd_ti;

static void **rd_slot(void)
{
	return __tls_get_addr(&rd_ti);
}

static void rd_learn_layout(void *bp)
{
	size_t modid = 0;
	void *block = NULL, *reader, *gp, *mb;

	_Static_assert(offsetof(struct urcu_bp_reader, ctr) == 0, "urcu_bp_reader.ctr first");
	_Static_assert(DC_RD_NEST_MASK == URCU_BP_GP_CTR_NEST_MASK, "liburcu-bp's nest mask");
	_Static_assert(DC_RD_GP_COUNT == URCU_BP_GP_COUNT, "liburcu-bp's nest count");
#ifdef __SANITIZE_THREAD__
	(void)bp; (void)modid; (void)block; (void)reader; (void)gp; (void)mb;
	return; /* ThreadSanitizer cannot follow the fences: the library's functions */
#endif
	reader = dlsym(bp, "urcu_bp_reader"); /* this thread's: allocates its block */
	gp = dlsym(bp, "urcu_bp_gp");
	mb = dlsym(bp, "urcu_bp_has_sys_membarrier");
	if (!reader || !gp || !mb || dlinfo(bp, RTLD_DI_TLS_MODID, &modid) || !modid ||
	    dlinfo(bp, RTLD_DI_TLS_DATA, &block) || !block || (char *)reader < (char *)block)
		return; /* dc_rd.slot stays NULL: the library's functions */
	rd_ti.ti_module = modid;
	rd_ti.ti_offset = (unsigned long)((char *)reader - (char *)block);
	if (rd_slot() != reader)
		return;
	dc_rd.gp_ctr = &((struct urcu_bp_gp *)gp)->ctr;
	dc_rd.membarrier = mb;
	dc_rd.slot = rd_slot;
}

/*
 * liburcu-cds opened from liburcu-bp's directory, by its full name: dlopen()
 * of a bare soname reads /etc/ld.so.cache again (open, fstat, mmap, close,
 * munmap: five syscalls of each process's start), while a full name is
 * opened directly.  Only where the soname's search would look nowhere else
 * first: LD_LIBRARY_PATH unset or empty (bp was then found through
 * ld.so.cache or the default directories, where both libraries are
 * installed together).  Anything else, or a failure, takes the soname's
 * search, as before.  A cds the host has loaded already is found by its
 * file identity either way (the loader compares st_dev and st_ino).
 */
/* Whether a soname's search would look in LD_LIBRARY_PATH first: then only
 * the search finds what the user asked for. */
static bool library_path_set(void)
{
	const char *lp = getenv("LD_LIBRARY_PATH");

	return lp && *lp;
}

static void *open_cds_beside(void *bp)
{
	struct link_map *lm = NULL;
	char path[512];
	const char *slash;
	int n;

	if (library_path_set() || dlinfo(bp, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name ||
	    lm->l_name[0] != '/' || !(slash = strrchr(lm->l_name, '/')))
		return NULL;
	n = snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - lm->l_name), lm->l_name,
		     RCUWALK_URCU_CDS_SONAME);
	if (n <= 0 || (size_t)n >= sizeof(path))
		return NULL;
	return dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}

/*
 * liburcu-bp by its full name as well, from the directory the build found
 * it in (RCUWALK_URCU_DIR): a bare soname makes the loader read
 * /etc/ld.so.cache (open, fstat, mmap, close, munmap) in every process that
 * starts a cache: on the 2-vCPU VM, whose page tables the hypervisor
 * shadows, both libraries loaded in 412-478 us by full names against
 * 507-647 us (doc/benchmarks-by-stop.md, "Stop 46").  A liburcu-bp the process has loaded
 * already is taken by the name it was loaded under (dl_iterate_phdr: no
 * search), so a host's own copy is still the one shared, and one loaded
 * under any other name sends us to the soname's search.  Only where
 * LD_LIBRARY_PATH is unset or empty, as for cds; anything else, or a
 * failure, takes the soname's search, as before.
 */
#ifdef RCUWALK_URCU_DIR
struct bp_loaded {
	bool other;     /* an object named liburcu-bp* under another name */
	char path[512]; /* one named by its full name ending in "/" soname */
};

/* dl_iterate_phdr's callback: what of liburcu-bp the process has loaded. */
static int find_loaded_bp(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bp_loaded *b = arg;
	const char *n = info->dlpi_name, *slash = n ? strrchr(n, '/') : NULL;

	(void)size;
	if (!slash || strncmp(slash + 1, "liburcu-bp", 10) != 0)
		return 0;
	if (n[0] != '/' || strcmp(slash + 1, RCUWALK_URCU_BP_SONAME) != 0 ||
	    strlen(n) >= sizeof(b->path)) {
		b->other = true;
		return 1;
	}
	memcpy(b->path, n, strlen(n) + 1);
	return 1;
}
#endif

static void *open_bp(void)
{
#ifdef RCUWALK_URCU_DIR
	struct bp_loaded b = { false, "" };
	void *h = NULL;

	/* A copy loaded under another name (a versioned file name, another
	 * soname) goes to the soname's search, which finds a loaded object
	 * by its soname: exactly as before. */
	dl_iterate_phdr(find_loaded_bp, &b);
	if (b.path[0])
		h = dlopen(b.path, RTLD_NOW | RTLD_GLOBAL);
	else if (!b.other && !library_path_set())
		h = dlopen(RCUWALK_URCU_DIR "/" RCUWALK_URCU_BP_SONAME, RTLD_NOW | RTLD_GLOBAL);
	if (h)
		return h;
#endif
	return dlopen(RCUWALK_URCU_BP_SONAME, RTLD_NOW | RTLD_GLOBAL);
}

int dcache_urcu_load(void)
{
	int r = __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
	void *bp, *cds;
	int ok = 1;

	if (r)
		return r > 0;
	pthread_mutex_lock(&load_mutex);
	r = loaded;
	if (!r) {
		bp = open_bp();
		cds = bp ? open_cds_beside(bp) : NULL;
		if (bp && !cds)
			cds = dlopen(RCUWALK_URCU_CDS_SONAME, RTLD_NOW | RTLD_GLOBAL);
		ok = cds != NULL;
		if (ok) {
			SYM(bp, read_lock, "urcu_bp_read_lock");
			SYM(bp, read_unlock, "urcu_bp_read_unlock");
			SYM(bp, read_ongoing, "urcu_bp_read_ongoing");
			SYM(bp, synchronize_rcu, "urcu_bp_synchronize_rcu");
			SYM(bp, barrier, "urcu_bp_barrier");
			SYM(bp, call_rcu, "urcu_bp_call_rcu");
			SYM(bp, create_call_rcu_data, "urcu_bp_create_call_rcu_data");
			SYM(bp, call_rcu_data_free, "urcu_bp_call_rcu_data_free");
			SYM(bp, get_cpu_call_rcu_data, "urcu_bp_get_cpu_call_rcu_data");
			SYM(bp, get_default_call_rcu_data, "urcu_bp_get_default_call_rcu_data");
			SYM(bp, set_cpu_call_rcu_data, "urcu_bp_set_cpu_call_rcu_data");
			SYM(bp, flavor, "urcu_bp_flavor");
			SYM(cds, lfht_new, "_cds_lfht_new");
			SYM(cds, lfht_add, "cds_lfht_add");
			SYM(cds, lfht_del, "cds_lfht_del");
			SYM(cds, lfht_destroy, "cds_lfht_destroy");
			SYM(cds, lfht_lookup, "cds_lfht_lookup");
			SYM(cds, lfht_resize, "cds_lfht_resize");
			if (ok)
				rd_learn_layout(bp);
		}
		r = ok ? 1 : -1;
		__atomic_store_n(&loaded, r, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&load_mutex);
	return r > 0;
}

int dcache_urcu_loaded(void)
{
	return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE) > 0;
}

DCACHE_FORK_TEXT int dcache_urcu_fork_prepare(void)
{
	pthread_mutex_lock(&load_mutex);
	return loaded > 0;
}

DCACHE_FORK_TEXT void dcache_urcu_fork_parent(void)
{
	pthread_mutex_unlock(&load_mutex);
}

DCACHE_FORK_TEXT void dcache_urcu_fork_child(void)
{
	pthread_mutex_init(&load_mutex, NULL); /* held by the parent's fork() */
}

/* Load before the first forward; a failure here means cache/ ran although
 * the load failed (a bug): say so and stop rather than run without RCU. */
static inline void need(void)
{
	static const char msg[] = "librcuwalk: liburcu (" RCUWALK_URCU_BP_SONAME ", "
				  RCUWALK_URCU_CDS_SONAME ") could not be loaded\n";

	if (__builtin_expect(__atomic_load_n(&loaded, __ATOMIC_ACQUIRE) > 0, 1))
		return;
	if (!(loader ? loader() : dcache_urcu_load())) { /* loader: in_shim raised, errno kept */
		(void)!write(2, msg, sizeof(msg) - 1);
		abort();
	}
}

void urcu_bp_read_lock(void)
{
	need();
	u.read_lock();
}

void urcu_bp_read_unlock(void)
{
	need();
	u.read_unlock();
}

int urcu_bp_read_ongoing(void)
{
	need();
	return u.read_ongoing();
}

void urcu_bp_synchronize_rcu(void)
{
	need();
	u.synchronize_rcu();
}

void urcu_bp_barrier(void)
{
	need();
	u.barrier();
}

void urcu_bp_call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head))
{
	need();
	u.call_rcu(head, func);
}

struct call_rcu_data *urcu_bp_create_call_rcu_data(unsigned long flags, int cpu_affinity)
{
	need();
	return u.create_call_rcu_data(flags, cpu_affinity);
}

void urcu_bp_call_rcu_data_free(struct call_rcu_data *crdp)
{
	need();
	u.call_rcu_data_free(crdp);
}

struct call_rcu_data *urcu_bp_get_cpu_call_rcu_data(int cpu)
{
	need();
	return u.get_cpu_call_rcu_data(cpu);
}

struct call_rcu_data *urcu_bp_get_default_call_rcu_data(void)
{
	need();
	return u.get_default_call_rcu_data();
}

int urcu_bp_set_cpu_call_rcu_data(int cpu, struct call_rcu_data *crdp)
{
	need();
	return u.set_cpu_call_rcu_data(cpu, crdp);
}

struct cds_lfht *_cds_lfht_new(unsigned long init_size, unsigned long min_nr_alloc_buckets,
			       unsigned long max_nr_buckets, int flags,
			       const struct cds_lfht_mm_type *mm,
			       const struct rcu_flavor_struct *flavor, pthread_attr_t *attr)
{
	need();
	if (flavor == &urcu_bp_flavor)
		flavor = u.flavor;
	return u.lfht_new(init_size, min_nr_alloc_buckets, max_nr_buckets, flags, mm, flavor,
			  attr);
}

void cds_lfht_add(struct cds_lfht *ht, unsigned long hash, struct cds_lfht_node *node)
{
	need();
	u.lfht_add(ht, hash, node);
}

int cds_lfht_del(struct cds_lfht *ht, struct cds_lfht_node *node)
{
	need();
	return u.lfht_del(ht, node);
}

int cds_lfht_destroy(struct cds_lfht *ht, pthread_attr_t **attr)
{
	need();
	return u.lfht_destroy(ht, attr);
}

void cds_lfht_lookup(struct cds_lfht *ht, unsigned long hash, cds_lfht_match_fct match,
		     const void *key, struct cds_lfht_iter *iter)
{
	need();
	u.lfht_lookup(ht, hash, match, key, iter);
}

void cds_lfht_resize(struct cds_lfht *ht, unsigned long new_size)
{
	need();
	u.lfht_resize(ht, new_size);
}

#endif /* RCUWALK_URCU_LAZY */
