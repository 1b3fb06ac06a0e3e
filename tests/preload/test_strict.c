/* SPDX-License-Identifier: MIT */
/*
 * test_strict.c - coherence clause 5, strict mode (RCUWALK_STRICT=1): a
 * change that an unrelated process has finished before a lookup starts is
 * seen by that lookup, without waiting for that process.
 *
 * An unrelated process (a "flipper": this binary, fork+exec'd with the shim
 * disabled, never waited for) creates, appends to and unlinks a file with raw
 * syscalls, one change per command, and acknowledges each over a pipe after
 * the change's syscall has returned.  The test process (a --loop child run
 * with the shim and RCUWALK_STATS) primes its cache with the file's state,
 * asks for a change, reads the acknowledgement and stats at once through the
 * shim; the answer must equal the raw syscall's.  With strict mode: 0 stale
 * answers in ROUNDS rounds.  Without it the answer may be stale for the
 * inotify thread's delay: counted and printed, not asserted (only that every
 * stale answer became exact within 1 s).
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "coh_helpers.h"

#define ROUNDS 1000


/* --flipper DIR CMDFD ACKFD: apply each command byte to DIR/f (c: create,
 * a: append, u: unlink), then acknowledge it.  Raw syscalls only. */
static int flipper_main(char **argv)
{
	char f[PLEN], op;
	int cmd = atoi(argv[3]), ack = atoi(argv[4]);
	size_t n = 1;

	join(f, argv[2], "f");
	while (syscall(SYS_read, cmd, &op, 1) == 1) {
		char r = 0;

		n = n % 97 + 1;
		if (op == 'c')
			r = raw_write_file(f, n, 0) ? 'E' : 0;
		else if (op == 'a')
			r = raw_write_file(f, n, 1) ? 'E' : 0;
		else if (op == 'u')
			r = syscall(SYS_unlinkat, AT_FDCWD, f, 0) ? 'E' : 0;
		if (syscall(SYS_write, ack, &r, 1) != 1)
			return 1;
	}
	return 0;
}

/* --loop DIR RESULT: ROUNDS rounds against a flipper; writes
 * "rounds=N stale=N late=N" to RESULT (late: stale answers that were not
 * exact after 1 s either). */
static int loop_main(char **argv)
{
	const char *dir = argv[2], *result = argv[3];
	static const char ops[] = { 'c', 'a', 'a', 'u' };
	const char *fl_args[5];
	char f[PLEN], fx[PLEN], cs[16], as[16], out[128];
	const char *paths[] = { f, fx };
	const char *off[] = { "RCUWALK_DISABLE=1", NULL };
	char **env = env_with(off);
	int c[2], a[2], rounds = 0, stale = 0, late = 0;
	pid_t pid;

	join(f, dir, "f");
	join(fx, dir, "f/x");
	if (pipe2(c, O_CLOEXEC) || pipe2(a, O_CLOEXEC))
		return 2;
	snprintf(cs, sizeof(cs), "%d", c[0]);
	snprintf(as, sizeof(as), "%d", a[1]);
	fl_args[0] = "--flipper";
	fl_args[1] = dir;
	fl_args[2] = cs;
	fl_args[3] = as;
	fl_args[4] = NULL;
	pid = spawn_self("test_strict", fl_args, env, c[0], a[1]);
	if (pid < 0)
		return 3;
	close(c[0]);
	close(a[1]);
	for (int i = 0; i < ROUNDS; i++) {
		char op = ops[i % 4], r;
		struct obs got[2], exp[2];
		char why[512];
		int bad = 0;

		/* prime: the second stat of each path is answered by the cache */
		for (int k = 0; k < 2; k++)
			for (size_t j = 0; j < 2; j++)
				observe_shim(paths[j], &got[j]);
		if (syscall(SYS_write, c[1], &op, 1) != 1 || syscall(SYS_read, a[0], &r, 1) != 1 ||
		    r != 0)
			break;
		/* the flipper's syscall has returned; it is not waited for */
		for (size_t j = 0; j < 2; j++)
			observe_shim(paths[j], &got[j]);
		for (size_t j = 0; j < 2; j++) {
			observe_raw(paths[j], &exp[j]);
			if (obs_diff(&got[j], &exp[j], why, sizeof(why))) {
				if (!bad && stale < 3)
					fprintf(stderr, "round %d (%c): %s: %s\n", i, op, paths[j], why);
				bad = 1;
			}
		}
		if (bad) {
			stale++;
			late += !obs_poll_exact(paths, 2, exp, mono_now() + 1.0);
		}
		rounds++;
	}
	close(c[1]);
	close(a[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	free(env);
	snprintf(out, sizeof(out), "rounds=%d stale=%d late=%d\n", rounds, stale, late);
	return write_result(result, out) == 0 ? 0 : 4;
}

struct loop_result {
	int rounds, stale, late;
	long long hits, neg_hits;
};

/* Run a --loop child with RCUWALK_STRICT=strict; its results and stats. */
static void run_loop(const char *name, const char *strict, struct loop_result *res)
{
	char dir[PLEN], result[PLEN], stats[PLEN], se[PLEN + 16], buf[128] = "";
	const char *extra[] = { strict, se, "RCUWALK_RACY_MS=0", NULL };
	const char *args[] = { "--loop", dir, result, NULL };

	assert_int_equal(helper_paths(name, dir, result, stats, se, sizeof(se)), 0);
	assert_int_equal(spawn_self_wait("test_strict", args, env_with(extra), 120), 0);
	assert_true(read_result(result, buf, sizeof(buf)) > 0);
	assert_int_equal(sscanf(buf, "rounds=%d stale=%d late=%d", &res->rounds, &res->stale,
				&res->late),
			 3);
	res->hits = stats_field(stats, "hits");
	res->neg_hits = stats_field(stats, "neg_hits");
	print_message("%s: %d rounds, %d stale answers right after the change, %d not exact "
		      "within 1 s; cache hits %lld, negative hits %lld\n",
		      strict, res->rounds, res->stale, res->late, res->hits, res->neg_hits);
}

static void test_strict_sees_unrelated_process_change_at_once(void **state)
{
	struct loop_result r;

	(void)state;
	run_loop("strict", "RCUWALK_STRICT=1", &r);
	assert_int_equal(r.rounds, ROUNDS);
	assert_int_equal(r.stale, 0);
	/* the answers came from the cache: each round's priming hits it */
	assert_true(r.hits + r.neg_hits >= ROUNDS);
}

/* Without strict mode the same sequence may see the old answer for the
 * inotify thread's delay (clause 4): not asserted, only printed; every
 * answer must still become exact within 1 s. */
static void test_strict_off_answers_become_exact_within_1s(void **state)
{
	struct loop_result r;

	(void)state;
	run_loop("nonstrict", "RCUWALK_STRICT=0", &r);
	assert_int_equal(r.rounds, ROUNDS);
	assert_int_equal(r.late, 0);
	assert_true(r.hits + r.neg_hits >= ROUNDS);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "--flipper"))
		return flipper_main(argv);
	if (argc == 4 && !strcmp(argv[1], "--loop"))
		return loop_main(argv);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strict_sees_unrelated_process_change_at_once),
		cmocka_unit_test(test_strict_off_answers_become_exact_within_1s),
	};
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
