/* SPDX-License-Identifier: MIT */
/*
 * cost.c - the kernel's cost of the build's cached answers, per filesystem
 * (cost.h), measured by the launcher after the command ended.
 *
 * Why measured here and so: a lookup's cost depends on the filesystem (a
 * FUSE or network mount asks its server when its dentries time out; a local
 * disk answers from the kernel's dcache) and on the name (its depth, whether
 * it exists), so one probe at start says little about a build's own names.
 * The processes know which names they answered but cannot time the kernel's
 * answer without making the call they saved; the launcher can, once, for a
 * sample, when the command is over.  Dentries are warmed first (one untimed
 * round), as the build's repeated lookups found them warm.  What this does
 * not see: a kernel whose dentries the build's own activity evicted, a FUSE
 * server slower under the build's load than idle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cost.h"
#include "stats.h"

#define NAMES_PER_FS 64    /* distinct names timed per filesystem, at most */
#define ROUNDS 51          /* timed rounds (one untimed before) */
#define MIN_ROUNDS 3       /* ... at least, if a filesystem takes long */
#define FS_BUDGET_NS 200000000ULL /* per filesystem, once MIN_ROUNDS are done */

int cost_read_samples(const char *path, struct cost_samples *cs, const char *forward)
{
	FILE *f = fopen(path, "re");
	FILE *fwd = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		return errno == ENOENT ? 0 : -1;
	if (forward && *forward)
		fwd = fopen(forward, "ae");
	while ((n = getline(&line, &cap, f)) > 0) {
		struct cost_sample s = { 0 };
		char *p;
		long pid;

		if (line[n - 1] != '\n') { /* torn: the writer died mid-line */
			cs->unreadable++;
			break;
		}
		line[n - 1] = '\0';
		p = strstr(line, " path=");
		if (strncmp(line, RCUWALK_SAMPLE_TAG " ", strlen(RCUWALK_SAMPLE_TAG " ")) != 0 ||
		    !p || p[6] != '/' ||
		    sscanf(line, RCUWALK_SAMPLE_TAG " pid=%ld weight=%llu ns=%llu follow=%d", &pid,
			   &s.weight, &s.ns, &s.follow) != 4 ||
		    s.weight == 0) {
			cs->unreadable++;
			continue;
		}
		if (fwd)
			fprintf(fwd, "%s\n", line);
		if (cs->n >= COST_MAX_SAMPLES)
			continue;
		if (!cs->s) {
			cs->s = calloc(COST_MAX_SAMPLES, sizeof(*cs->s));
			if (!cs->s)
				break;
		}
		s.path = strdup(p + 6);
		if (!s.path)
			break;
		cs->s[cs->n++] = s;
	}
	free(line);
	fclose(f);
	if (fwd)
		fclose(fwd);
	return 0;
}

void cost_free(struct cost_samples *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		free(cs->s[i].path);
	free(cs->s);
	memset(cs, 0, sizeof(*cs));
}

static unsigned long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ULL + (unsigned long long)t.tv_nsec;
}

static int raw_lookup(const char *path, int follow)
{
	struct stat st;

	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
}

/* st_dev of the name, else of the deepest existing directory on its way:
 * the filesystem that answers the last step of its lookup. */
static unsigned long long dev_of(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	char *slash;

	snprintf(buf, sizeof(buf), "%s", path);
	for (;;) {
		if (lstat(buf, &st) == 0)
			return (unsigned long long)st.st_dev;
		slash = strrchr(buf, '/');
		if (!slash)
			return 0;
		if (slash == buf) {
			if (!buf[1])
				return 0;
			buf[1] = '\0';
		} else {
			*slash = '\0';
		}
	}
}

static int cmp_ull(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

/* By device, then name, then follow. */
static int cmp_sample(const void *a, const void *b)
{
	const struct cost_sample *x = a, *y = b;
	int c;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	c = strcmp(x->path, y->path);
	return c ? c : x->follow - y->follow;
}

/* The median cost of a clock_gettime pair: taken off every timing. */
static unsigned long long clock_cost_ns(void)
{
	unsigned long long v[501];

	for (int i = 0; i < 501; i++) {
		unsigned long long a = now_ns();

		v[i] = now_ns() - a;
	}
	qsort(v, 501, sizeof(v[0]), cmp_ull);
	return v[250];
}

/* Mount point and type of device `dev` from /proc/self/mountinfo: of its
 * mounts, the one whose mount point is the longest prefix of `path`. */
static void describe_fs(unsigned long long dev, const char *path, struct cost_fs *fs)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	long best = -1, pre;
	int found = 0;

	fs->major = major((dev_t)dev);
	fs->minor = minor((dev_t)dev);
	snprintf(fs->fstype, sizeof(fs->fstype), "?");
	snprintf(fs->mountpoint, sizeof(fs->mountpoint), "?");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		unsigned int ma, mi;
		char mp[256], type[32], *sep;
		size_t j = 0;

		if (sscanf(line, "%*d %*d %u:%u %*s %255s", &ma, &mi, mp) != 3 || ma != fs->major ||
		    mi != fs->minor)
			continue;
		sep = strstr(line, " - ");
		if (!sep || sscanf(sep + 3, "%31s", type) != 1)
			continue;
		/* \040 and friends: octal escapes of the mount point */
		for (size_t i = 0; mp[i]; i++) {
			if (mp[i] == '\\' && mp[i + 1] >= '0' && mp[i + 1] <= '7' && mp[i + 2] &&
			    mp[i + 3]) {
				mp[j++] = (char)(((mp[i + 1] - '0') << 6) | ((mp[i + 2] - '0') << 3) |
						 (mp[i + 3] - '0'));
				i += 3;
			} else {
				mp[j++] = mp[i];
			}
		}
		mp[j] = '\0';
		j = strlen(mp);
		/* a prefix of path at a component boundary: its length, else -1 */
		pre = strncmp(path, mp, j) == 0 && (j == 1 || path[j] == '/' || !path[j]) ? (long)j : -1;
		if (!found || pre > best) {
			best = pre;
			found = 1;
			snprintf(fs->fstype, sizeof(fs->fstype), "%s", type);
			snprintf(fs->mountpoint, sizeof(fs->mountpoint), "%s", mp);
		}
	}
	free(line);
	fclose(f);
}

/* Time the distinct names of s[0..n) (one device, sorted by name): up to
 * NAMES_PER_FS of them, spread evenly.  Fills raw_ns and names. */
static void time_names(const struct cost_sample *s, size_t n, unsigned long long clock_ns,
		       struct cost_fs *fs)
{
	static size_t pick[NAMES_PER_FS];
	static unsigned long long t[NAMES_PER_FS][ROUNDS];
	size_t distinct = 0, k = 0, npick;
	unsigned long long start;
	int rounds = 0;
	double sum = 0;

	for (size_t i = 0; i < n; i++)
		distinct += i == 0 || cmp_sample(&s[i - 1], &s[i]) != 0;
	npick = distinct < NAMES_PER_FS ? distinct : NAMES_PER_FS;
	/* The (j * distinct / npick)-th distinct name, j = 0..npick-1. */
	for (size_t i = 0, d = 0; i < n && k < npick; i++) {
		if (i > 0 && cmp_sample(&s[i - 1], &s[i]) == 0)
			continue;
		if (d == k * distinct / npick)
			pick[k++] = i;
		d++;
	}
	npick = k;
	for (size_t j = 0; j < npick; j++) /* warm, untimed */
		(void)raw_lookup(s[pick[j]].path, s[pick[j]].follow);
	start = now_ns();
	while (rounds < ROUNDS && (rounds < MIN_ROUNDS || now_ns() - start < FS_BUDGET_NS)) {
		for (size_t j = 0; j < npick; j++) {
			unsigned long long a = now_ns();

			(void)raw_lookup(s[pick[j]].path, s[pick[j]].follow);
			t[j][rounds] = now_ns() - a;
		}
		rounds++;
	}
	for (size_t j = 0; j < npick; j++) {
		unsigned long long med;

		qsort(t[j], (size_t)rounds, sizeof(t[j][0]), cmp_ull);
		med = t[j][rounds / 2];
		sum += med > clock_ns ? (double)(med - clock_ns) : 0;
	}
	fs->names = (unsigned int)npick;
	fs->raw_ns = npick ? sum / (double)npick : 0;
}

/* The median time of the sampled answers s[0..n) that filled nothing. */
static void answer_cost(const struct cost_sample *s, size_t n, unsigned long long clock_ns,
			struct cost_fs *fs)
{
	unsigned long long *v = malloc(n * sizeof(*v) + 1);
	size_t m = 0;

	fs->answer_ns = 0;
	fs->timed_answers = 0;
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		if (s[i].ns)
			v[m++] = s[i].ns;
	if (m) {
		qsort(v, m, sizeof(v[0]), cmp_ull);
		fs->answer_ns = v[m / 2] > clock_ns ? (double)(v[m / 2] - clock_ns) : 0;
	}
	fs->timed_answers = (unsigned int)m;
	free(v);
}

int cost_measure(struct cost_samples *cs, struct cost_fs *out, unsigned long long *total)
{
	struct run {
		size_t first, n;
		unsigned long long weight;
	} *runs;
	size_t nruns = 0;
	unsigned long long clock_ns;
	int nout = 0;

	*total = 0;
	if (!cs->n)
		return 0;
	runs = calloc(cs->n, sizeof(*runs));
	if (!runs)
		return 0;
	for (size_t i = 0; i < cs->n; i++) {
		cs->s[i].dev = dev_of(cs->s[i].path);
		*total += cs->s[i].weight;
	}
	qsort(cs->s, cs->n, sizeof(cs->s[0]), cmp_sample);
	for (size_t i = 0; i < cs->n; i++) {
		if (i == 0 || cs->s[i].dev != cs->s[i - 1].dev)
			runs[nruns++] = (struct run){ i, 0, 0 };
		runs[nruns - 1].n++;
		runs[nruns - 1].weight += cs->s[i].weight;
	}
	/* Heaviest first (a handful of devices: insertion sort). */
	for (size_t i = 1; i < nruns; i++) {
		struct run r = runs[i];
		size_t j = i;

		for (; j > 0 && runs[j - 1].weight < r.weight; j--)
			runs[j] = runs[j - 1];
		runs[j] = r;
	}
	clock_ns = clock_cost_ns();
	for (size_t i = 0; i < nruns; i++) {
		const struct cost_sample *s = &cs->s[runs[i].first];
		struct cost_fs *fs = &out[nout];

		if (i == COST_MAX_FS && nruns > COST_MAX_FS + 1) {
			/* The rest as one line: weighted by each one's measure. */
			double raw = 0, ans = 0;
			unsigned long long w = 0;

			memset(fs, 0, sizeof(*fs));
			fs->other = 1;
			snprintf(fs->fstype, sizeof(fs->fstype), "other");
			snprintf(fs->mountpoint, sizeof(fs->mountpoint), "%zu more", nruns - i);
			for (size_t k = i; k < nruns; k++) {
				struct cost_fs one = { 0 };

				time_names(&cs->s[runs[k].first], runs[k].n, clock_ns, &one);
				answer_cost(&cs->s[runs[k].first], runs[k].n, clock_ns, &one);
				raw += one.raw_ns * (double)runs[k].weight;
				ans += one.answer_ns * (double)runs[k].weight;
				w += runs[k].weight;
				fs->names += one.names;
				fs->timed_answers += one.timed_answers;
			}
			fs->weight = w;
			fs->raw_ns = w ? raw / (double)w : 0;
			fs->answer_ns = w ? ans / (double)w : 0;
			nout++;
			break;
		}
		memset(fs, 0, sizeof(*fs));
		fs->weight = runs[i].weight;
		describe_fs(s->dev, s->path, fs);
		time_names(s, runs[i].n, clock_ns, fs);
		answer_cost(s, runs[i].n, clock_ns, fs);
		nout++;
	}
	free(runs);
	return nout;
}
