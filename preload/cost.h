/* SPDX-License-Identifier: MIT */
/*
 * cost.h - what the build's cached answers would have cost the kernel, per
 * filesystem, measured by the launcher (rcuwalk --stats, --report) after
 * the command ended.  Private to the launcher (preload/rcuwalk.c); not in
 * the library.
 *
 * The processes sample names among the lookups their cache answered
 * (stats.h, "Samples": FILE.samples beside the records).  The launcher
 * reads them, finds each name's filesystem (st_dev of the name, or of the
 * deepest directory on its way that exists), and on each filesystem times
 * raw stat/lstat calls of its sampled names, as the build would have made
 * them: dentries warm (one untimed round first), a median per name over a
 * few rounds, then the mean over names.  The answers the cache gave are
 * shared out among filesystems by the samples' weights.
 */
#ifndef RCUWALK_COST_H
#define RCUWALK_COST_H

#include <stddef.h>
#include <stdint.h>

#define COST_MAX_SAMPLES 8192 /* read at most this many sample lines */
#define COST_MAX_FS 4         /* filesystems shown; the rest summed as one */

struct cost_sample {
	unsigned long long weight, ns;
	int follow;
	unsigned long long dev; /* st_dev, filled by cost_measure() */
	char *path;
};

struct cost_samples {
	struct cost_sample *s;
	size_t n, unreadable;
};

/* One filesystem's share: `weight` of the samples' weights (of `total`
 * for all), `names` distinct names timed, `raw_ns` the mean of their
 * median raw lookup (0: none could be timed), `answer_ns` the median time
 * the shim took for the sampled answers there that filled nothing (0:
 * none), `timed_answers` how many those were.  major/minor, fstype and
 * mountpoint from /proc/self/mountinfo ("?" if not found); `other` = 1 for
 * the line that sums the filesystems past COST_MAX_FS. */
struct cost_fs {
	unsigned long long weight;
	unsigned int major, minor, names, timed_answers;
	int other;
	double raw_ns, answer_ns;
	char fstype[32];
	char mountpoint[256];
};

/* Append the sample lines of `path` (rcuwalk-sample v1) to *cs; each good
 * line is also appended to `forward` if not NULL.  A missing file is no
 * samples.  0, or -1 with errno. */
int cost_read_samples(const char *path, struct cost_samples *cs, const char *forward);

/* Time the samples' names per filesystem; at most COST_MAX_FS + 1 entries
 * into out, heaviest first (the last one possibly `other`).  Returns how
 * many; *total gets the sum of all weights.  Takes about 0.2 s at most per
 * filesystem (longer only if 3 rounds of its names take longer). */
int cost_measure(struct cost_samples *cs, struct cost_fs *out, unsigned long long *total);

void cost_free(struct cost_samples *cs);

#endif
