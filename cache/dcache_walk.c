/* SPDX-License-Identifier: MIT */
/*
 * dcache_walk.c - the RCU-walk: a path resolved from the cache alone, and the
 * lookup loop around it (dcache_lookup).
 *
 * Design
 * ======
 * Lookups follow Nick Piggin's RCU-walk (fs/namei.c): inside an urcu-bp
 * read-side section, component by component, taking no lock and writing
 * nothing shared, validating each dentry with its d_seq hand over hand.  When
 * the walk finds a gap (unknown name, unknown attributes, unknown permission)
 * it returns a "miss" and the slow path asks the kernel about exactly that gap
 * (one lstat of a canonical path), inserts the answer under the writer mutex,
 * and restarts the walk.  Anything the cache cannot answer exactly - an
 * error other than ENOENT/ENOTDIR, a filesystem without inotify coverage, a
 * directory that could not be watched, a path too long to rebuild - makes the
 * walk return DCACHE_PASS and the caller makes the real syscall: the kernel's
 * own answer is always exact.
 *
 * dcache_lookup_len() is that loop (dc_walk_rcu(), then dc_populate_rcu() of
 * dcache_populate.c for a miss, at most MAX_WALK_ATTEMPTS times); a name the
 * path index holds (dcache_pidx.c) resolves in one step.
 *
 * Invariants relied on (dcache.c, "Locks and invariants")
 * ====================
 *  d_seq, hand over hand: a dentry is used only if its d_seq, sampled before
 *    (d_seq_begin), is unchanged after (d_seq_retry), and a child is trusted
 *    only once its parent's d_seq has been checked again; a change is
 *    WALK_RETRY.
 *  RCU: whatever the walk reaches stays allocated until the read-side section
 *    its caller holds ends.
 *  The path index: dc_tree_gen is sampled before the root or the cwd is read
 *    (dcache_pidx.c, "Why an entry is exact"); an ENOENT from a complete
 *    listing is indexed against the directory's d_seq sampled before
 *    D_COMPLETE was read and checked after the lookups that failed (the
 *    table's and the listing's), so a name hashed into it or its
 *    completeness (and listing) lost since shows.
 * The walk writes nothing shared but a dentry's CLOCK bit (set only when
 * clear) and path-index slots (lock-free; its first fill maps the index); it
 * never takes dcache_mutex.
 */
#define _GNU_SOURCE
#define URCU_INLINE_SMALL_FUNCTIONS
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dcache_int.h"

struct frame {
	const char *p; /* rest of an outer path, resumed when the nested body ends */
};

/*
 * The shared path table (dcache_spath.c) in the walk
 * ==================================================
 * In a session, a walk that the path index did not answer first asks the
 * shared table for the whole name: one hash, one or two slots, two
 * generations per component; a hit is the answer (ENOENT or ENOTDIR).
 * Otherwise the walk notes every component it looks up, its directory's
 * watch number and the name (sp_note), and a negative answer it reaches is
 * offered (sp_offer ->
 * ops->spath_put) with the ring position sampled before the walk: the
 * ticket there refuses it if an event about one of those directories was
 * applied since that sample or is still unapplied (inval_shared.c,
 * spath_put), so the generations it samples never vouch for a change this
 * walk did not see.  A walk through a directory without a watch of the
 * session or a TTL directory, through a names-only (scratch) directory not
 * entered from its parent on a full watch (sp_note), or with more than
 * DCACHE_SPATH_DIRS components, offers nothing.
 * A find needs no check against this process's own tree: an entry is
 * exact for the whole session while its generations hold (dcache_spath.c),
 * and this process's sync points (coherence clauses 1-2) wait for the
 * watcher to publish, so to have bumped for, every event queued before.
 * The find is made only while the arena's mount count is the ring's (a
 * mount change counted whose bump of every generation is not done yet).
 */
struct dc_spath_use dc_spath;

DCACHE_FORK_TEXT void dcache_spath_use(void *mem, uint64_t cred, const uint32_t *mounts)
{
	if (mem && mounts) {
		STORE_RELAXED(dc_spath.cred, cred);
		STORE_RELAXED(dc_spath.mounts, mounts);
		STORE_RELEASE(dc_spath.arena, mem);
	} else {
		STORE_RELEASE(dc_spath.arena, NULL);
	}
}

/*
 * A name the shared table answers never reaches this thread's own path
 * index, whose hits cost less (no chain, no generations): a thread that
 * fills the index (pidx_worth_filling) walks on after a hit, so that the
 * walk fills it, and takes the table's answer where its own cache misses
 * (struct miss, sp_answer).  A thread whose cache cannot answer such walks
 * (a session's new process, before its directories are complete) stops
 * trying: sp_budget, per thread, goes down by one for a walk that missed and
 * up by four for one that answered (at most 256); none is tried at 0.
 */
static __thread int sp_budget __attribute__((tls_model("initial-exec"))) = 64;

static inline bool sp_walk_on(void)
{
	return sp_budget > 0;
}

void dc_sp_walk_done(bool answered)
{
	if (answered)
		sp_budget = sp_budget > 252 ? 256 : sp_budget + 4;
	else if (sp_budget > 0)
		sp_budget--;
}

/*
 * Absent prefixes.  A header search asks for "inc03/pkg2/h.h" in every -I
 * directory, most of which have no "pkg2": the walk finds "pkg2" absent
 * (not in inc03's complete listing, or a negative dentry) at the component
 * that ends the name's directory prefix, at depth 0.  It then fills the
 * prefix entry "inc03/pkg2" with that answer: PIDX_ABSENT and the complete
 * directory, or the negative dentry, with its d_seq, as a name's own
 * absent entry (dcache_pidx.c, "Why an entry is exact").  A later name under
 * that prefix ("inc03/pkg2/g.h") is ENOENT from the entry: the kernel says
 * ENOENT for a missing component before the last whatever follows it (a
 * name ending in '/', "." or ".." is walked whole, never by its prefix).
 * The answer depends on no query flag: components before the last are
 * always followed.
 */
static inline bool pfx_ends(const char *pfx_last, int depth, const char *end, const char *pfx_end)
{
	return pfx_last && depth == 0 && end == pfx_end;
}

struct sp_walk {
	bool on; /* this walk may offer its negative answer */
	struct dcache_spath_fill f;
};

/* The session's watch number of directory d, if its answers may be shared
 * (watched, not TTL), else -1; *names_only: a scratch directory's watch.
 * Under rcu_read_lock(). */
static inline int sp_wd(const struct dentry *d, bool *names_only)
{
	const struct dir_state *ds;

	if (d->type != D_DIR || (d_flags(d) & D_TTL) || !(ds = LOAD_ACQUIRE(d->dir)))
		return -1;
	*names_only = __atomic_load_n(&ds->names_only, __ATOMIC_RELAXED);
	return __atomic_load_n(&ds->wd, __ATOMIC_RELAXED);
}

/* At a walk's start: the shared table's answer for (start, qkey, path), or
 * 0; then sp->on says whether the walk may offer one. */
static inline int sp_probe(struct sp_walk *sp, const struct dentry *start, const char *path,
			   size_t len, unsigned int qkey)
{
	void *a = LOAD_ACQUIRE(dc_spath.arena);
	bool names_only = false;
	int wd, r;

	sp->on = false;
	if (!a || len == 0 || len > DCACHE_SPATH_NAME || (wd = sp_wd(start, &names_only)) < 0 ||
	    names_only ||
	    dcache_arena_mounts_done(a) != LOAD_ACQUIRE(*LOAD_RELAXED(dc_spath.mounts)))
		return 0;
	sp->f.key.start = wd;
	sp->f.key.flags = qkey;
	sp->f.key.cred = LOAD_RELAXED(dc_spath.cred);
	sp->f.h = dcache_spath_hash(&sp->f.key, path, len);
	r = dcache_spath_find(a, &sp->f.key, path, len, sp->f.h);
	if (r)
		return r;
	if (dc_ops->spath_put && dc_ops->spath_pos) {
		sp->f.pos = dc_ops->spath_pos();
		sp->f.path = path;
		sp->f.len = len;
		sp->f.n = 0;
		sp->on = true;
	}
	return 0;
}

/* The walk looks name (len bytes) up in directory cur, or steps through it
 * ("." or ".."): what it finds depends on that name's binding there and on
 * cur's own state (dcache_spath.c, the path generations).  A scratch
 * directory's watch reports no change of its own mode, its parent's does:
 * it is used only right after a look-up of it in its parent, on a full
 * watch. */
static inline void sp_note(struct sp_walk *sp, const struct dentry *cur, const char *name,
			   size_t len)
{
	bool names_only = false, pn = true;
	int wd = sp_wd(cur, &names_only);
	unsigned int n = sp->f.n;

	if (wd >= 0 && names_only &&
	    (!n || sp_wd(LOAD_ACQUIRE(cur->parent), &pn) != sp->f.wd[n - 1] || pn))
		wd = -1;
	if (wd < 0 || n == DCACHE_SPATH_DIRS) {
		sp->on = false;
		return;
	}
	sp->f.wd[n] = wd;
	sp->f.nidx[n] = dcache_spath_name_slot(wd, name, len);
	sp->f.n = n + 1;
}

static inline int sp_offer(struct sp_walk *sp, int err)
{
	if (sp->on && sp->f.n) {
		sp->f.err = err;
		dc_ops->spath_put(&sp->f);
	}
	return err;
}

/* "Prefix" (dc_walk_rcu): the length of a name's directory prefix, its
 * trailing slashes left out, with *lc where its last component begins; 0 if
 * there is none to look up (no '/' but a leading one, or a last component
 * "." or "..").  The caller has checked that the name does not end in '/'. */
static inline size_t pfx_split(const char *path, size_t plen, size_t *lc)
{
	const char *sl = memrchr(path, '/', plen);
	size_t k = sl ? (size_t)(sl - path) + 1 : 0;

	*lc = k;
	while (k && path[k - 1] == '/')
		k--;
	if (k && path[*lc] == '.' && (*lc + 1 == plen || (path[*lc + 1] == '.' && *lc + 2 == plen)))
		return 0;
	return k;
}

/* "Absent prefixes" (dc_walk_rcu): the prefix entry pd, as of ps, says the
 * prefix's last component is absent, so is every name under it: ENOENT,
 * or WALK_RETRY if pd moved. */
static inline int pfx_absent(struct dentry *pd, unsigned int ps)
{
	if (d_seq_retry(pd, ps))
		return WALK_RETRY;
	if (!LOAD_RELAXED(pd->referenced))
		STORE_RELAXED(pd->referenced, 1);
	dcache_stat_inc(DCACHE_STAT_PREFIX);
	return ENOENT;
}

/*
 * One RCU-walk attempt.  Under rcu_read_lock().  known_len: strlen(path) if
 * the caller has it, else SIZE_MAX.  Returns 0 / errno (answer),
 * DCACHE_PASS, WALK_RETRY (a dentry changed under us) or WALK_MISS (*m says
 * what the kernel must be asked).
 */
int dc_walk_rcu(const char *path, size_t known_len, unsigned int qflags, int amode,
		    struct stat *st, struct miss *m)
{
	struct frame stack[MAX_SYMLINKS + 1];
	int depth = 0, links = 0;
	bool follow = qflags & DCACHE_Q_FOLLOW;
	/* The path index's key bits: the flags as asked, before a trailing slash. */
	const unsigned int qkey = qflags & (DCACHE_Q_FOLLOW | DCACHE_Q_DIRECTORY);
	bool want_dir = qflags & DCACHE_Q_DIRECTORY;
	/* A plain stat/lstat: a miss at its final object can be answered by
	 * the kernel's reply that fills it (struct miss.answer). */
	const bool plain_stat = (qflags & DCACHE_Q_STAT) &&
				!(qflags & (DCACHE_Q_ACCESS | DCACHE_Q_EACCESS | DCACHE_Q_NEGONLY |
					    DCACHE_Q_FIND_));
	/* Sampled before the root or the cwd is read: see the path index. */
	uint64_t gen = LOAD_ACQUIRE(dc_tree_gen);
	struct dentry *root = LOAD_ACQUIRE(dc_root);
	struct dentry *cur, *res, *start;
	unsigned int cur_seq, res_seq;
	const char *p = path;
	uint64_t now = 0, ph = 0;
	size_t plen = PIDX_NAME_MAX;
	struct pidx_map *pidx;
	bool index = false; /* this walk may fill an index slot */
	/* Prefix: the original name's last component (NULL: no prefix entry
	 * to fill), the prefix's length and hash. */
	const char *pfx_last = NULL;
	bool pfx_try = false; /* the name is indexable: its prefix may be looked for */
	size_t pfx_len = 0;
	uint64_t pfx_h = 0;
	struct sp_walk sp; /* sp.on: set below, before any goto resolved */

	sp.on = false;
	if (d_flags(root) & D_NOCACHE) {
		NOTE_PASS_WHY(root);
		return DCACHE_PASS;
	}
	if (*p == '/') {
		cur = root;
	} else {
		struct cwd_ref *c = LOAD_ACQUIRE(dc_cwd);

		if (!c) {
			m->kind = MISS_CWD;
			return WALK_MISS;
		}
		cur = c->d;
	}
	cur_seq = d_seq_begin(cur);
	if (d_flags(cur) & D_DEAD)
		return WALK_RETRY;
	if (d_expired(cur, &now)) {
		m->kind = MISS_EXPIRED; /* the cwd's name on a TTL filesystem */
		m->d = cur;
		return WALK_MISS;
	}
	start = cur;
	/* The index is mapped by the first fill: a thread that will not fill
	 * and finds none mapped does not even hash the name. */
	pidx = LOAD_ACQUIRE(dc_pidx);
	if ((pidx || pidx_worth_filling()) && !(d_flags(cur) & D_TTL) &&
	    (plen = known_len != SIZE_MAX ? known_len : strnlen(path, PIDX_NAME_MAX)) <
		    PIDX_NAME_MAX) {
		unsigned int slot_flags;
		bool first;

		pfx_try = true;
		if (!dc_pidx_names)
			goto prefix_only; /* no name has an entry: its prefix may */
		ph = pidx_hash(start, qkey, path, plen);
		/* A name's own entry is filled at its second walk (dc_pidx_twice),
		 * so one whose seen bit was clear has none: its first walk reads
		 * no set (a cold line of 128 KiB in a young process: ~40% of the
		 * walk's time in a cc1) and only marks it seen (in any thread: the
		 * bits are hints).  Skipping a probe is always safe: the walk
		 * answers exactly.  A hit pays one read of the seen table. */
		first = pidx && dc_pidx_twice && !tls_populated && !pidx_seen(pidx, ph);
		res = pidx && !first
			      ? pidx_find(pidx, start, qkey, path, plen, ph, gen, &res_seq, &slot_flags)
			      : NULL;
		if (res && d_seq_begin(res) == res_seq) {
			if (!LOAD_RELAXED(res->referenced))
				STORE_RELAXED(res->referenced, 1);
			dcache_stat_inc(DCACHE_STAT_INDEX);
			/* Absent: res is its negative dentry, or the complete
			 * directory whose listing lacks it (unchanged since:
			 * still complete, nothing hashed in it since). */
			if (res->type == D_NEG || (slot_flags & PIDX_ABSENT)) {
				if (d_seq_retry(res, res_seq))
					return WALK_RETRY;
				return ENOENT;
			}
			want_dir = slot_flags & PIDX_WANT_DIR;
			goto resolved;
		}
		/* No entry, or res changed since (attributes): walk, and refill. */
		index = !tls_populated && pidx_worth_filling() &&
			(!dc_pidx_twice || (pidx && !first));
	}
prefix_only:
	sp.on = false;
	if (LOAD_RELAXED(dc_spath.arena)) {
		size_t splen = known_len != SIZE_MAX ? known_len : strnlen(path, DCACHE_SPATH_NAME + 1);
		int r = sp_probe(&sp, start, path, splen, qkey);

		if (r) {
			if (d_seq_retry(start, cur_seq))
				return WALK_RETRY;
			if (!index || !sp_walk_on()) {
				dcache_stat_inc(DCACHE_STAT_SPATH);
				return r;
			}
			m->sp_answer = r; /* walk on: fill the index (sp_walk_on) */
		}
	}

	/*
	 * Prefix.  A name the index lacks (its first walk in this process, or
	 * not filled) starts from the entry of its directory prefix: "/a/b/c/h.h"
	 * walks "h.h" from the directory "/a/b/c" led to, as the walk that
	 * filled that entry found it when it reached the component at depth 0
	 * (after the symlinks it followed, counted on).  The entry is exact
	 * under the same rules as any (dcache_pidx.c, "Why an entry is
	 * exact"): every change that can make the prefix lead elsewhere bumps
	 * dc_tree_gen, and the directory's own state is checked through its
	 * d_seq, as the loop checks cur's.  What the component itself needs
	 * (search permission in the directory, its lookup) the loop does.  Not
	 * with the shared path table on: its offer notes every component walked
	 * (sp_note).  Names ending in '/', ".", ".." are walked whole.
	 */
	if (pfx_try && !sp.on && !LOAD_RELAXED(dc_spath.arena) && path[plen - 1] != '/') {
		size_t lc, k = pfx_split(path, plen, &lc);

		if (k) {
			struct dentry *pd = NULL;
			unsigned int ps = 0, pfl = 0;

			/* The fast path's read of the entry (m->hint), taken
			 * under the same dc_tree_gen from the same start: what
			 * this walk would read (an entry valid as of gen, or
			 * none), exactly as current. */
			const struct pfx_hint *hint = m->hint;

			if (hint && hint->k == k && hint->gen == gen && hint->start == start) {
				pfx_h = hint->h;
				pd = hint->pd;
				ps = hint->ps;
				pfl = hint->pfl;
			} else {
				pfx_h = pidx_hash(start, PIDX_KEY_PREFIX, path, k);
				if (pidx)
					pd = pidx_find(pidx, start, PIDX_KEY_PREFIX, path, k, pfx_h,
						       gen, &ps, &pfl);
			}
			if (pd && d_seq_begin(pd) == ps && !(pfl & PIDX_ABSENT) &&
			    LOAD_RELAXED(pd->type) == D_DIR) {
				dcache_stat_inc(DCACHE_STAT_PREFIX);
				cur = pd;
				cur_seq = ps;
				links = (int)(pfl >> PIDX_LINKS_SHIFT);
				p = path + lc;
			} else if (pd && d_seq_begin(pd) == ps &&
				   ((pfl & PIDX_ABSENT) || LOAD_RELAXED(pd->type) == D_NEG)) {
				/* The prefix's last component is absent (Absent
				 * prefixes, below): so is every name under it. */
				return pfx_absent(pd, ps);
			} else if (pidx_worth_filling()) {
				pfx_last = path + lc;
				pfx_len = k;
			}
		}
	}

	for (;;) {
		const char *name, *next;
		size_t len;
		bool last;
		unsigned int complete;
		unsigned long h;
		const struct dir_state *ds;
		bool maybe;
		struct dentry *d;
		unsigned int s;

		p = skip_slashes(p);
		if (!*p) {
			if (depth == 0) {
				/* Only "/" (or the cwd, impossible: "" is rejected) ends here. */
				res = cur;
				res_seq = cur_seq;
				break;
			}
			p = stack[--depth].p;
			continue;
		}
		name = p;
		next = comp_end(p);
		len = (size_t)(next - p);
		p = next;
		last = depth == 0 && !*skip_slashes(p);
		if (last && *p == '/')
			want_dir = follow = true; /* trailing slash: directory, followed */
		if (name == pfx_last) {
			/* The original name's last component, at depth 0: cur is
			 * where its prefix leads (Prefix, above). */
			pfx_last = NULL;
			if (!(d_flags(cur) & D_TTL) && !d_seq_retry(cur, cur_seq))
				dc_pidx_fill(start, PIDX_KEY_PREFIX, path, pfx_len, pfx_h, gen, cur,
					     cur_seq, (unsigned int)links << PIDX_LINKS_SHIFT);
		}

		/* May we look anything up in cur?  (may_lookup: exec permission) */
		if (!(d_flags(cur) & D_SEARCHED)) {
			bool dots = name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'));

			if (d_seq_retry(cur, cur_seq))
				return WALK_RETRY;
			/* An unknown name: the kernel's lstat of it answers both
			 * questions (success or ENOENT proves the search right;
			 * EACCES passes through), saving the "dir/." probe. */
			if (!dots && len <= NAME_MAX && !(d_flags(cur) & D_NOCACHE) &&
			    !dc_d_lookup_rcu(LOAD_ACQUIRE(dc_table), cur, name, len)) {
				m->kind = MISS_CHILD;
				m->d = cur;
				m->name = name;
				m->len = len;
				m->answer = last && plain_stat;
				m->want_dir = want_dir;
				m->follow = follow;
				return WALK_MISS;
			}
			m->kind = MISS_SEARCH;
			m->d = cur;
			return WALK_MISS;
		}

		if (sp.on)
			sp_note(&sp, cur, name, len); /* its search permission, name's binding */
		if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'))) {
			d = len == 1 ? cur : cur->parent;
			s = d_seq_begin(d);
			if (d_seq_retry(cur, cur_seq) || (d_flags(d) & D_DEAD))
				return WALK_RETRY;
			if (last) {
				res = d;
				res_seq = s;
				break;
			}
			cur = d;
			cur_seq = s;
			continue;
		}
		if (len > NAME_MAX)
			return DCACHE_PASS; /* filesystem-specific ENAMETOOLONG: the kernel's call */
		if (d_flags(cur) & D_NOCACHE) {
			NOTE_PASS_WHY(cur);
			return DCACHE_PASS;
		}

		/* D_COMPLETE is sampled (acquire) BEFORE the lookup: the listing's
		 * entries were hashed before it was set (release), so a lookup
		 * made after seeing it finds every name the listing had.  It is
		 * cleared with a d_seq bump before any entry goes: see
		 * dc_uncomplete_locked(). */
		complete = LOAD_ACQUIRE(cur->flags) & D_COMPLETE;
		if (complete && (d_flags(cur) & D_TTL) &&
		    ttl_passed(LOAD_RELAXED(LOAD_ACQUIRE(cur->dir)->complete_until), &now))
			complete = 0; /* the listing is too old: ask about this name */
		/* A name the directory's bloom lacks is not in the table (struct
		 * dir_state.bloom): no table lookup. */
		h = name_hash(cur, name, len);
		ds = cur->type == D_DIR ? LOAD_ACQUIRE(cur->dir) : NULL;
		maybe = !ds || dir_bloom_maybe(ds, h);
		d = maybe ? dc_d_lookup_hash_rcu(LOAD_ACQUIRE(dc_table), cur, name, len, h) : NULL;
		if (!d) {
			/* A complete directory's listed names are in its bloom
			 * too (complete_dir_rcu). */
			if (complete && maybe && ds && listed_rcu(ds, h, name, len)) {
				/* An open of it (NEGONLY) needs the kernel
				 * whatever it is, as for D_UNK below: passed
				 * without a dentry.  A compiler opens each header
				 * it finds once; hashing it cost a fill and ~200
				 * bytes of heap (a page fault every ~20 headers:
				 * ~37 a later cc1 of the generated project), for
				 * a hit nobody asked.  A later stat hashes it. */
				if (last && (qflags & DCACHE_Q_NEGONLY))
					return d_seq_retry(cur, cur_seq) ? WALK_RETRY : DCACHE_PASS;
				return miss_listed(m, cur, cur_seq, name, len);
			}
			if (d_seq_retry(cur, cur_seq))
				return WALK_RETRY;
			if (complete) {
				/* Not in the complete listing: indexed as absent,
				 * while cur's d_seq is cur_seq (not on a TTL
				 * filesystem, where the listing expires). */
				if (index && !(d_flags(cur) & D_TTL))
					dc_pidx_fill(start, qkey, path, plen, ph, gen, cur, cur_seq,
						     PIDX_ABSENT);
				if (pfx_ends(pfx_last, depth, name + len, path + pfx_len) &&
				    !(d_flags(cur) & D_TTL))
					dc_pidx_fill(start, PIDX_KEY_PREFIX, path, pfx_len, pfx_h, gen,
						     cur, cur_seq, PIDX_ABSENT);
				return sp_offer(&sp, ENOENT);
			}
			m->kind = MISS_CHILD;
			m->d = cur;
			m->name = name;
			m->len = len;
			m->answer = last && plain_stat;
			m->want_dir = want_dir;
			m->follow = follow;
			return WALK_MISS;
		}
		s = d_seq_begin(d);
		if (d_seq_retry(cur, cur_seq) || (d_flags(d) & D_DEAD))
			return WALK_RETRY;
		if (d_flags(d) & D_TTL) {
			index = false; /* a name that expires: never indexed */
			pfx_last = NULL;
		}
		if (d_expired(d, &now)) {
			m->kind = MISS_EXPIRED; /* forget it, then ask again */
			m->d = d;
			return WALK_MISS;
		}
		if (!LOAD_RELAXED(d->referenced))
			STORE_RELAXED(d->referenced, 1);
		if (d->type == D_UNK) {
			/* Known to exist, nothing more: ask the kernel.  An open of
			 * it (NEGONLY) needs the kernel anyway, whatever it is. */
			if (d_seq_retry(d, s))
				return WALK_RETRY;
			if (last && (qflags & DCACHE_Q_NEGONLY))
				return DCACHE_PASS;
			m->kind = MISS_CHILD;
			m->d = cur;
			m->name = name;
			m->len = len;
			m->answer = last && plain_stat;
			m->want_dir = want_dir;
			m->follow = follow;
			return WALK_MISS;
		}

		if (d->type == D_NEG) {
			/* A missing name answers itself and every path below it. */
			if (d_seq_retry(d, s))
				return WALK_RETRY;
			if (index)
				dc_pidx_fill(start, qkey, path, plen, ph, gen, d, s, 0);
			if (pfx_ends(pfx_last, depth, name + len, path + pfx_len))
				dc_pidx_fill(start, PIDX_KEY_PREFIX, path, pfx_len, pfx_h, gen, d, s,
					     0);
			return sp_offer(&sp, ENOENT);
		}
		if (d->type == D_LNK && (!last || follow)) {
			const char *body = d_link(d);

			if (++links > MAX_SYMLINKS)
				return ELOOP;
			/* More follows in this frame: come back to it.  Otherwise
			 * the body replaces the frame (a trailing symlink, or the
			 * last component of a nested body); a trailing slash in a
			 * trailing symlink's body then asks for a directory. */
			if (!last && *skip_slashes(p))
				stack[depth++].p = p;
			if (*body == '/') {
				cur = root;
				cur_seq = d_seq_begin(cur);
			}
			if (d_seq_retry(d, s))
				return WALK_RETRY;
			p = body;
			continue;
		}
		if (last) {
			res = d;
			res_seq = s;
			break;
		}
		if (d->type != D_DIR) {
			if (d_seq_retry(d, s))
				return WALK_RETRY;
			return sp_offer(&sp, ENOTDIR);
		}
		cur = d;
		cur_seq = s;
	}

	if (index && !d_seq_retry(res, res_seq))
		dc_pidx_fill(start, qkey, path, plen, ph, gen, res, res_seq,
			     want_dir ? PIDX_WANT_DIR : 0);
resolved:
	/* res is the final object, valid as of res_seq. */
	if (want_dir && res->type != D_DIR) {
		if (d_seq_retry(res, res_seq))
			return WALK_RETRY;
		return sp_offer(&sp, ENOTDIR);
	}
	if (qflags & DCACHE_Q_FIND_) {
		/* The caller answers from res (valid under its RCU section) and
		 * checks res_seq after reading it. */
		m->d = res;
		m->seq = res_seq;
		return 0;
	}
	if (qflags & DCACHE_Q_NEGONLY)
		return DCACHE_PASS; /* success needs the kernel (an fd) */
	if (qflags & (DCACHE_Q_ACCESS | DCACHE_Q_EACCESS)) {
		unsigned int bit = (unsigned int)amode + ((qflags & DCACHE_Q_EACCESS) ? 8 : 0);

		if (amode != 0 && !(LOAD_RELAXED(res->access_ok) & (1u << bit))) {
			if (d_flags(res) & (D_NOCACHE | D_NOATTR)) {
				NOTE_PASS_WHY(res);
				return DCACHE_PASS;
			}
			if (d_seq_retry(res, res_seq))
				return WALK_RETRY;
			if (d_flags(res) & D_LISTED) {
				/* Hard-linked or not?  Its lstat replaces the entry. */
				m->kind = MISS_CHILD;
				m->d = res->parent;
				m->name = res->name;
				m->len = res->namelen;
				m->relist = true;
				return WALK_MISS;
			}
			m->kind = MISS_ACCESS;
			m->d = res;
			m->amode = (int)bit;
			return WALK_MISS;
		}
	}
	if (qflags & DCACHE_Q_STAT) {
		unsigned int f = LOAD_ACQUIRE(res->flags); /* D_ATTR: see struct dentry */

		if (f & (D_NOCACHE | D_NOATTR)) {
			NOTE_PASS_WHY(res);
			return DCACHE_PASS;
		}
		/* A name reached through "." or ".." was not checked for expiry. */
		if ((f & D_TTL) && ttl_passed(LOAD_RELAXED(res->expires), &now)) {
			if (d_seq_retry(res, res_seq))
				return WALK_RETRY;
			m->kind = MISS_EXPIRED;
			m->d = res;
			return WALK_MISS;
		}
		if (!(f & D_ATTR)) {
			if (d_seq_retry(res, res_seq))
				return WALK_RETRY;
			m->kind = MISS_ATTR;
			m->d = res;
			m->answer = plain_stat;
			return WALK_MISS;
		}
		attr_unpack(st, res); /* checked by the d_seq_retry() below */
	}
	if (d_seq_retry(res, res_seq))
		return WALK_RETRY;
	return 0;
}

/*
 * The absent-name fast path (walk_absent_fast), tried before a walk.
 * Most lookups of a build are a header's name asked of each -I directory,
 * most of them absent: of a generated TU's cc1's 30,272 walks, 53% ended at
 * an absent prefix entry and 42% began at their directory's entry, most of
 * those ending at its bloom (doc/benchmarks-by-stop.md, "Stop 34").  Those
 * two endings are taken here, without a walk's set-up (its frame, the
 * struct miss, the symlink stack, the shared table's note), by exactly the
 * checks dc_walk_rcu() makes on them, in its order:
 *  - the start: the root not D_NOCACHE; the cwd for a relative name; the
 *    start neither D_DEAD nor D_TTL (d_seq sampled first, as the walk does);
 *    dc_tree_gen sampled before either is read (dcache_pidx.c, "Why an
 *    entry is exact");
 *  - "Prefix": the name has a '/' with something before it, does not end in
 *    '/', its last component is not "." or ".."; the prefix entry current
 *    (pidx_find, then its dentry's d_seq as the entry recorded it);
 *  - "Absent prefixes": PIDX_ABSENT or a negative dentry: ENOENT (d_seq
 *    checked again, the CLOCK bit set);
 *  - a directory: the loop's checks of its last component there (D_SEARCHED,
 *    not D_NOCACHE nor D_TTL, length <= NAME_MAX, D_COMPLETE sampled with
 *    acquire before the bloom and the table are read), no child of that
 *    name, then the directory's d_seq unchanged: ENOENT.
 * Anything else - no entry, a child found, a check failing, a d_seq that
 * moved - returns WALK_MISS and the walk decides, from the start, but for
 * the prefix's probe: what this one read of it is in *hint (hint->k set),
 * which the walk's first attempt uses instead of reading the entry again
 * (dc_walk_rcu, "Prefix").  So this answers only ENOENT, only where the walk
 * would have.  Not with name entries on (dc_pidx_names: the walk probes the
 * name's own entry first and fills it) nor with the shared path table (the
 * walk offers its answers).  Under rcu_read_lock(); writes nothing shared
 * but the CLOCK bit.
 */
static inline int walk_absent_fast(const char *path, size_t plen, struct pfx_hint *hint)
{
	uint64_t gen = LOAD_ACQUIRE(dc_tree_gen), ph;
	struct dentry *root = LOAD_ACQUIRE(dc_root), *start, *pd;
	struct pidx_map *pidx = LOAD_ACQUIRE(dc_pidx);
	const struct dir_state *ds;
	unsigned int ps = 0, pfl = 0, complete;
	const char *name;
	size_t k, lc, len;
	unsigned long h;

	if (!pidx || dc_pidx_names || LOAD_RELAXED(dc_spath.arena) || plen >= PIDX_NAME_MAX ||
	    path[plen - 1] == '/' || (d_flags(root) & D_NOCACHE))
		return WALK_MISS;
	if (*path == '/') {
		start = root;
	} else {
		struct cwd_ref *c = LOAD_ACQUIRE(dc_cwd);

		if (!c)
			return WALK_MISS;
		start = c->d;
	}
	(void)d_seq_begin(start);
	if (d_flags(start) & (D_DEAD | D_TTL))
		return WALK_MISS;
	k = pfx_split(path, plen, &lc);
	if (!k)
		return WALK_MISS;
	name = path + lc;
	len = plen - lc;
	ph = pidx_hash(start, PIDX_KEY_PREFIX, path, k);
	pd = pidx_find(pidx, start, PIDX_KEY_PREFIX, path, k, ph, gen, &ps, &pfl);
	if (!pd || d_seq_begin(pd) != ps)
		goto walk;
	if ((pfl & PIDX_ABSENT) || LOAD_RELAXED(pd->type) == D_NEG) {
		if (pfx_absent(pd, ps) == ENOENT)
			return ENOENT;
		goto walk; /* pd moved */
	}
	if (LOAD_RELAXED(pd->type) != D_DIR || !(d_flags(pd) & D_SEARCHED) || len > NAME_MAX ||
	    (d_flags(pd) & (D_NOCACHE | D_TTL)))
		goto walk;
	complete = LOAD_ACQUIRE(pd->flags) & D_COMPLETE;
	if (!complete)
		goto walk;
	h = name_hash(pd, name, len);
	ds = LOAD_ACQUIRE(pd->dir);
	if (!ds || (dir_bloom_maybe(ds, h) &&
		    (dc_d_lookup_hash_rcu(LOAD_ACQUIRE(dc_table), pd, name, len, h) ||
		     listed_rcu(ds, h, name, len))))
		goto walk;
	if (d_seq_retry(pd, ps))
		goto walk;
	dcache_stat_inc(DCACHE_STAT_PREFIX);
	return ENOENT;
walk:
	/* The walk decides; what was read of the prefix's entry is its. */
	hint->gen = gen;
	hint->start = start;
	hint->k = k;
	hint->h = ph;
	hint->pd = pd;
	hint->ps = ps;
	hint->pfl = pfl;
	return WALK_MISS;
}

/* ---------------------------------------------------------------------- */
/* The lookup loop */

int dcache_lookup(const char *path, unsigned flags, int amode, struct stat *st)
{
	return dcache_lookup_len(path, strnlen(path, PATH_MAX), flags, amode, st);
}

int dcache_lookup_len(const char *path, size_t plen, unsigned flags, int amode, struct stat *st)
{
	struct stat tmp;
	int r = DCACHE_PASS;

	if (!st)
		st = &tmp;
	if (caa_unlikely(LOAD_RELAXED(dc_maint)))
		dc_maintenance();
	if (caa_unlikely(tls_idle_left) && dcache_idle_pass())
		return DCACHE_PASS; /* the kernel answers: dcache_populate.c, "Idle spells" */
	if ((unsigned)amode > 7)
		r = DCACHE_PASS; /* faccessat: EINVAL, before the path is even read */
	else if (plen >= PATH_MAX)
		r = ENAMETOOLONG; /* getname(): before anything else */
	else if (!*path)
		r = ENOENT;
	else if (!dc_ensure_table())
		r = DCACHE_PASS;
	else {
		bool kernel_answered = false;
		uint64_t t0, fill_ns = 0;

		tls_populated = false;
		dc_read_lock();
		struct pfx_hint hint;

		/* The fast path's ENOENT is the answer: no attempt then. */
		hint.k = 0;
		r = walk_absent_fast(path, plen, &hint);
		for (int i = r == ENOENT ? MAX_WALK_ATTEMPTS : 0; i < MAX_WALK_ATTEMPTS; i++) {
			struct miss m;

			MISS_INIT(m);
			if (i == 0 && hint.k)
				m.hint = &hint;
			r = dc_walk_rcu(path, plen, flags, amode, st, &m);
			if (r == WALK_RETRY)
				continue;
			if (m.sp_answer) {
				/* The shared table answered; the walk that went on to
				 * fill the index (sp_walk_on) answers if it can. */
				bool own = r != WALK_MISS && r != DCACHE_PASS;

				dc_sp_walk_done(own);
				if (!own) {
					dcache_stat_inc(DCACHE_STAT_SPATH);
					r = m.sp_answer;
				}
				break;
			}
			if (r != WALK_MISS)
				break;
			if (m.kind != MISS_LISTED) /* a listed name's hashing asks nothing */
				tls_populated = true;
			t0 = now_fine();
			r = dc_populate_rcu(&m);
			fill_ns += now_fine() - t0;
			if (r == POP_MISS_ANSWERED) {
				dcache_stat_inc(DCACHE_STAT_MISS);
				r = m.err;
				if (!r)
					*st = m.st;
				if (m.pass_why) {
					tls_pass_why = m.pass_why;
					kernel_answered = true;
				}
				break;
			}
			if (r == POP_ANSWERED) {
				*st = m.st;
				r = 0;
				kernel_answered = true;
				break;
			}
			if (r != 0) {
				kernel_answered = r > 0;
				break;
			}
			if (m.kind != MISS_LISTED)
				dcache_stat_inc(DCACHE_STAT_MISS);
			r = DCACHE_PASS; /* unless a later attempt answers */
		}
		if (r < 0)
			r = DCACHE_PASS;
		dc_read_unlock();
		/* The cache's fills, not a kernel answer the caller would have
		 * had to ask for anyway (a pass-through). */
		if (fill_ns && !kernel_answered)
			dcache_stat_add(DCACHE_STAT_FILL_NS, fill_ns);
		if (kernel_answered) {
			dcache_stat_inc(DCACHE_STAT_PASS);
			return r;
		}
	}
	dcache_stat_inc(r == 0 ? DCACHE_STAT_HIT : r > 0 ? DCACHE_STAT_NEG_HIT : DCACHE_STAT_PASS);
	return r;
}
