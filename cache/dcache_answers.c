/* SPDX-License-Identifier: MIT */
/*
 * dcache_answers.c - answers built from the final dentry (readlink, statx)
 * and realpath: what dcache_lookup() does not answer.
 *
 * Design
 * ======
 * Each call is a loop of attempts (drive_lookup), driven as dcache_lookup()
 * drives the walk: an attempt runs under rcu_read_lock() and either answers,
 * retries (WALK_RETRY), or reports the gap that dc_populate_rcu() then asks
 * the kernel about (WALK_MISS).  readlink and statx walk with DCACHE_Q_FIND_,
 * which hands back the final dentry and its d_seq instead of an answer;
 * realpath walks the components itself, as glibc does (below).
 *
 * Invariants relied on (dcache.c, "Locks and invariants")
 * ========================================================
 *  d_seq: whatever an attempt reads of a dentry (a symlink target, the
 *    attributes, the statx answer, the path that dc_d_path_rcu() rebuilds)
 *    is used only once the d_seq sampled with it is found unchanged.
 *  RCU: a symlink's target is immutable, and a statx answer is freed only
 *    after a grace period, so both stay readable until the attempt's
 *    read-side section ends.
 * This file owns no shared state and takes no lock of its own.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dcache_int.h"

/* One attempt of a lookup that answers more than dcache_lookup() does: under
 * rcu_read_lock(), returns what dc_walk_rcu() returns. */
typedef int (*attempt_fn)(const char *path, void *ctx, struct miss *m);

/*
 * Drive `attempt` as dcache_lookup() drives dc_walk_rcu(): retry, fill misses
 * through the ops, give up after MAX_WALK_ATTEMPTS, count one statistic.
 * Returns 0, a positive errno or DCACHE_PASS.
 */
static int drive_lookup(const char *path, attempt_fn attempt, void *ctx)
{
	int r = DCACHE_PASS;
	bool answered = false;
	uint64_t t0, fill_ns = 0;

	/* As dcache_lookup_len(): a program that only calls statx, readlink or
	 * realpath (coreutils' ls -l, cp) must still grow the table and free
	 * what it unhashes. */
	if (caa_unlikely(LOAD_RELAXED(dc_maint)))
		dc_maintenance();
	if (caa_unlikely(tls_idle_left) && dcache_idle_pass())
		return DCACHE_PASS; /* dcache_populate.c, "Idle spells" */
	if (!dc_ensure_table()) {
		dcache_stat_inc(DCACHE_STAT_PASS);
		return DCACHE_PASS;
	}
	tls_populated = false;
	rcu_read_lock();
	for (int i = 0; i < MAX_WALK_ATTEMPTS; i++) {
		struct miss m;

		MISS_INIT(m);
		r = attempt(path, ctx, &m);
		if (r == WALK_RETRY)
			continue;
		if (r != WALK_MISS) {
			answered = r >= 0;
			break;
		}
		if (m.kind != MISS_LISTED) /* a listed name's hashing asks nothing */
			tls_populated = true;
		t0 = now_fine();
		r = dc_populate_rcu(&m);
		if (r != 0)
			break; /* DCACHE_PASS, or a kernel answer that is not cached */
		fill_ns += now_fine() - t0;
		if (m.kind != MISS_LISTED)
			dcache_stat_inc(DCACHE_STAT_MISS);
	}
	rcu_read_unlock();
	if (fill_ns)
		dcache_stat_add(DCACHE_STAT_FILL_NS, fill_ns);
	if (!answered)
		r = DCACHE_PASS; /* includes running out of attempts */
	dcache_stat_inc(r == 0 ? DCACHE_STAT_HIT : r > 0 ? DCACHE_STAT_NEG_HIT : DCACHE_STAT_PASS);
	return r;
}

struct readlink_ctx {
	char *buf;
	size_t size;
	size_t len;
	size_t plen; /* strnlen(path, PATH_MAX), measured once */
};

static int readlink_attempt(const char *path, void *ctx, struct miss *m)
{
	struct readlink_ctx *c = ctx;
	struct dentry *res;
	size_t n;
	int r = dc_walk_rcu(path, c->plen, DCACHE_Q_FIND_, 0, NULL, m);

	if (r != 0)
		return r;
	res = m->d;
	if (res->type != D_LNK)
		return d_seq_retry(res, m->seq) ? WALK_RETRY : EINVAL;
	if (d_seq_retry(res, m->seq))
		return WALK_RETRY;
	/* The target is immutable and stays readable in this RCU section. */
	n = strlen(d_link(res));
	c->len = n < c->size ? n : c->size;
	memcpy(c->buf, d_link(res), c->len);
	return 0;
}

int dcache_readlink(const char *path, char *buf, size_t size, size_t *len)
{
	struct readlink_ctx c = { buf, size, 0, strnlen(path, PATH_MAX) };
	int r;

	if (c.plen >= PATH_MAX || !*path || !size) {
		r = !size ? DCACHE_PASS : *path ? ENAMETOOLONG : ENOENT; /* getname() */
		dcache_stat_inc(r > 0 ? DCACHE_STAT_NEG_HIT : DCACHE_STAT_PASS);
		return r;
	}
	r = drive_lookup(path, readlink_attempt, &c);
	if (r == 0)
		*len = c.len;
	return r;
}

struct statx_ctx {
	unsigned int qflags; /* DCACHE_Q_FOLLOW or 0 */
	unsigned int mask;
	struct statx *out;
	size_t plen; /* strnlen(path, PATH_MAX), measured once */
};

static int statx_attempt(const char *path, void *ctx, struct miss *m)
{
	struct statx_ctx *c = ctx;
	struct dentry *res;
	struct dcache_sx *x, **slot;
	unsigned int f;
	uint64_t now = 0;
	int r = dc_walk_rcu(path, c->plen, c->qflags | DCACHE_Q_FIND_, 0, NULL, m);

	if (r != 0)
		return r;
	res = m->d;
	f = d_flags(res);
	if (f & (D_NOCACHE | D_NOATTR)) {
		NOTE_PASS_WHY(res);
		return DCACHE_PASS;
	}
	if ((f & D_TTL) && ttl_passed(LOAD_RELAXED(res->expires), &now)) {
		if (d_seq_retry(res, m->seq))
			return WALK_RETRY;
		m->kind = MISS_EXPIRED; /* the name, its attributes and statx answer */
		return WALK_MISS;
	}
	if (!(f & D_ATTR)) {
		if (d_seq_retry(res, m->seq))
			return WALK_RETRY;
		m->kind = MISS_ATTR;
		return WALK_MISS;
	}
	slot = d_sx_slot(res);
	x = slot ? LOAD_ACQUIRE(*slot) : NULL;
	if (!x || x->mask != c->mask) {
		if (d_seq_retry(res, m->seq))
			return WALK_RETRY;
		m->kind = MISS_STATX;
		m->mask = c->mask;
		return WALK_MISS;
	}
	*c->out = x->stx;
	return d_seq_retry(res, m->seq) ? WALK_RETRY : 0;
}

int dcache_statx(const char *path, int follow, unsigned int mask, struct statx *out)
{
	struct statx tmp;
	struct statx_ctx c = { follow ? DCACHE_Q_FOLLOW : 0, mask, &tmp, strnlen(path, PATH_MAX) };
	int r;

	if (c.plen >= PATH_MAX || !*path) {
		r = *path ? ENAMETOOLONG : ENOENT; /* getname() */
		dcache_stat_inc(DCACHE_STAT_NEG_HIT);
		return r;
	}
	r = drive_lookup(path, statx_attempt, &c);
	if (r == 0)
		*out = tmp;
	return r;
}

/*
 * realpath: glibc 2.36's algorithm (stdlib/canonicalize.c) over dentries.
 * glibc keeps the resolved prefix as a string ("rname") and, for every
 * ordinary component, calls readlink(rname/component): a symlink's target is
 * spliced in front of the rest of the name; EINVAL (not a symlink) accepts
 * the component, unless the rest of the name starts with "/" alone, "/." or
 * "/..", where it first checks faccessat(rname/component/, F_OK); any other
 * error ends the call with that errno and rname (up to the component) copied
 * to a caller's buffer.  "." is skipped and ".." drops the last component of
 * rname, textually: no permission is checked there.
 *
 * Here rname is a dentry (cur), whose chain is the same symlink-free path.
 * readlink(rname/name) needs search permission on cur's chain: the walk's
 * D_SEARCHED on cur, its ancestors having been passed on the way down (or
 * when the cwd was resolved).  cur may be a non-directory (a file accepted by
 * readlink's EINVAL): the next ordinary component then fails with ENOTDIR.
 */
#define RP_NAME_MAX (2 * PATH_MAX) /* name with symlink targets spliced in */

struct realpath_ctx {
	char *buf;       /* result or glibc's partial rname */
	size_t size;
	int einval;      /* a readlink of glibc's failed with EINVAL */
	char name[RP_NAME_MAX];
};

/* glibc's suffix_requires_dir_check(): does the rest `end` of the name make
 * glibc check that the component before it is a directory? */
static bool rp_suffix_needs_dir(const char *end)
{
	while (*end == '/') {
		do
			end++;
		while (*end == '/');
		switch (*end++) {
		default:
			return false;
		case '\0':
			return true;
		case '.':
			break;
		}
		if (!*end || (*end == '.' && (!end[1] || end[1] == '/')))
			return true;
	}
	return false;
}

/* buf = path of d, plus "/" and name[0..len) if name.  Under rcu_read_lock().
 * Returns 0, or DCACHE_PASS if it does not fit in PATH_MAX (the kernel would
 * have said ENAMETOOLONG), or WALK_RETRY. */
static int rp_path(const struct dentry *d, const char *name, size_t len, char *buf, size_t size)
{
	long n = dc_d_path_rcu(d, buf, size < PATH_MAX ? size : PATH_MAX);

	if (n == -EAGAIN)
		return WALK_RETRY;
	if (n < 0)
		return DCACHE_PASS;
	if (!name)
		return 0;
	if ((size_t)n + 1 + len >= PATH_MAX || (size_t)n + 1 + len >= size)
		return DCACHE_PASS;
	if (n > 1)
		buf[n++] = '/';
	memcpy(buf + n, name, len);
	buf[(size_t)n + len] = '\0';
	return 0;
}

static int realpath_attempt(const char *path, void *ctx, struct miss *m)
{
	struct realpath_ctx *c = ctx;
	struct dentry *root = LOAD_ACQUIRE(dc_root);
	struct dentry *cur;
	unsigned int cur_seq;
	const char *p = path;
	int links = 0, r;
	unsigned int complete;
	uint64_t now = 0;

	c->einval = 0;
	if (d_flags(root) & D_NOCACHE) {
		NOTE_PASS_WHY(root);
		return DCACHE_PASS;
	}
	if (*p == '/') {
		cur = root;
	} else {
		struct cwd_ref *cw = LOAD_ACQUIRE(dc_cwd);

		if (!cw) {
			m->kind = MISS_CWD;
			return WALK_MISS;
		}
		cur = cw->d;
	}
	cur_seq = d_seq_begin(cur);
	if (d_flags(cur) & D_DEAD)
		return WALK_RETRY;

	for (;;) {
		const char *name, *end;
		struct dentry *d;
		unsigned int s;
		size_t len;

		p = skip_slashes(p);
		if (!*p)
			break;
		name = p;
		end = comp_end(p);
		len = (size_t)(end - p);
		p = end;
		if (len == 1 && name[0] == '.')
			continue;
		if (len == 2 && name[0] == '.' && name[1] == '.') {
			if (cur == root)
				continue;
			d = cur->parent;
			s = d_seq_begin(d);
			if (d_seq_retry(cur, cur_seq) || (d_flags(d) & D_DEAD))
				return WALK_RETRY;
			cur = d;
			cur_seq = s;
			continue;
		}
		/* readlink(rname/name) */
		if (cur->type != D_DIR) {
			r = rp_path(cur, name, len, c->buf, c->size);
			if (r == 0)
				r = ENOTDIR;
			return d_seq_retry(cur, cur_seq) ? WALK_RETRY : r;
		}
		if (!(d_flags(cur) & D_SEARCHED)) {
			if (d_seq_retry(cur, cur_seq))
				return WALK_RETRY;
			/* As in dc_walk_rcu(): the lstat of an unknown name proves
			 * the search permission too (or passes EACCES through). */
			if (len <= NAME_MAX && !(d_flags(cur) & D_NOCACHE) &&
			    !dc_d_lookup_rcu(LOAD_ACQUIRE(dc_table), cur, name, len)) {
				m->kind = MISS_CHILD;
				m->d = cur;
				m->name = name;
				m->len = len;
				return WALK_MISS;
			}
			m->kind = MISS_SEARCH;
			m->d = cur;
			return WALK_MISS;
		}
		if (len > NAME_MAX || (d_flags(cur) & D_NOCACHE)) {
			if (len <= NAME_MAX)
				NOTE_PASS_WHY(cur);
			return DCACHE_PASS;
		}
		/* Sampled before the lookup: see dc_walk_rcu(). */
		complete = LOAD_ACQUIRE(cur->flags) & D_COMPLETE;
		if (complete && (d_flags(cur) & D_TTL) &&
		    ttl_passed(LOAD_RELAXED(LOAD_ACQUIRE(cur->dir)->complete_until), &now))
			complete = 0;
		d = dc_d_lookup_rcu(LOAD_ACQUIRE(dc_table), cur, name, len);
		if (!d && complete &&
		    listed_rcu(LOAD_ACQUIRE(cur->dir), name_hash(cur, name, len), name, len))
			return miss_listed(m, cur, cur_seq, name, len);
		if (!d) {
			if (d_seq_retry(cur, cur_seq))
				return WALK_RETRY;
			if (complete) {
				/* readlink: ENOENT, as for a negative dentry */
				r = rp_path(cur, name, len, c->buf, c->size);
				return d_seq_retry(cur, cur_seq) ? WALK_RETRY : r == 0 ? ENOENT : r;
			}
			m->kind = MISS_CHILD;
			m->d = cur;
			m->name = name;
			m->len = len;
			return WALK_MISS;
		}
		s = d_seq_begin(d);
		if (d_seq_retry(cur, cur_seq) || (d_flags(d) & D_DEAD))
			return WALK_RETRY;
		if (d_expired(d, &now)) {
			m->kind = MISS_EXPIRED;
			m->d = d;
			return WALK_MISS;
		}
		if (d->type == D_UNK) {
			if (d_seq_retry(d, s))
				return WALK_RETRY;
			m->kind = MISS_CHILD; /* exists; what it is, the kernel says */
			m->d = cur;
			m->name = name;
			m->len = len;
			return WALK_MISS;
		}
		if (!LOAD_RELAXED(d->referenced))
			STORE_RELAXED(d->referenced, 1);

		if (d->type == D_NEG) {
			/* readlink: ENOENT (and so would the directory check) */
			r = rp_path(d, NULL, 0, c->buf, c->size);
			return d_seq_retry(d, s) ? WALK_RETRY : r == 0 ? ENOENT : r;
		}
		if (d->type == D_LNK) {
			size_t n = strlen(d_link(d)), rest = strlen(p);

			if (++links > MAX_SYMLINKS) {
				r = rp_path(d, NULL, 0, c->buf, c->size);
				return d_seq_retry(d, s) ? WALK_RETRY : r == 0 ? ELOOP : r;
			}
			if (n + rest + 1 > sizeof(c->name))
				return DCACHE_PASS;
			/* name = target + rest; the rest may lie in c->name already */
			memmove(c->name + n, p, rest + 1);
			memcpy(c->name, d_link(d), n);
			if (d_seq_retry(d, s))
				return WALK_RETRY;
			p = c->name;
			if (*p == '/') {
				cur = root;
				cur_seq = d_seq_begin(cur);
			}
			continue;
		}
		/* Not a symlink: readlink said EINVAL. */
		c->einval = 1;
		if (rp_suffix_needs_dir(p) && d->type != D_DIR) {
			r = rp_path(d, NULL, 0, c->buf, c->size);
			return d_seq_retry(d, s) ? WALK_RETRY : r == 0 ? ENOTDIR : r;
		}
		cur = d;
		cur_seq = s;
	}
	r = rp_path(cur, NULL, 0, c->buf, c->size);
	if (d_seq_retry(cur, cur_seq))
		return WALK_RETRY;
	return r;
}

int dcache_realpath(const char *path, char *buf, size_t size, int *einval)
{
	struct realpath_ctx c;
	int r;

	/* glibc's realpath puts no limit on the length of the name itself. */
	*einval = 0;
	if (!*path || strnlen(path, PATH_MAX) >= PATH_MAX || size < PATH_MAX) {
		r = *path ? DCACHE_PASS : ENOENT;
		if (size)
			buf[0] = '\0';
		dcache_stat_inc(r > 0 ? DCACHE_STAT_NEG_HIT : DCACHE_STAT_PASS);
		return r;
	}
	c.buf = buf;
	c.size = size;
	c.einval = 0;
	r = drive_lookup(path, realpath_attempt, &c);
	*einval = c.einval;
	return r;
}
