/* SPDX-License-Identifier: MIT */
/*
 * test_host_urcu.c - a host program that uses liburcu-bp and liburcu-cds
 * itself (linked against the system's shared libraries), run under the shim.
 *
 * The shim uses liburcu too: either the same shared liburcu-bp (then the
 * shim interposes liburcu's six fork hooks, see preload/shim.c before
 * fork()), or a hidden copy linked into it (RCUWALK_URCU_STATIC).  Either
 * way the host's liburcu calls must reach liburcu's objects, not the shim's
 * copy; the host's read-side sections, call_rcu callbacks and grace periods
 * must work beside the shim's; and a host that follows liburcu's fork
 * protocol (urcu_bp_call_rcu_before_fork(); urcu_bp_before_fork(); fork();
 * ..._after_fork_*()) must not hang: the shim's fork() used to take the same
 * mutexes a second time (shared liburcu-bp), and the process hung in
 * futex_wait with every signal blocked.
 *
 * The scenarios run in helper processes (this binary, fork+execve'd with
 * the shim), waited for at most 60 s and killed after: a hang is a failure,
 * not a hung test.
 *   --fork DIR      ROUNDS forks under liburcu's fork protocol, with a
 *                   reader thread and call_rcu callbacks running;
 *   --readers DIR   2 reader threads (read-side sections around stat() through
 *                   the shim) against a writer replacing hash-table nodes,
 *                   freed with call_rcu; then synchronize_rcu and
 *                   rcu_barrier.
 * Each compares every stat() with the raw syscall; exit status 0 = all
 * exact, 1 = a difference, 2 = a setup error.
 *
 * Run with librcuwalk.so preloaded (ctest sets LD_PRELOAD and
 * RCUWALK_TEST_SHIM); without RCUWALK_TEST_SHIM it exits 77 (skip).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <urcu-bp.h>
#include <urcu/rculfhash.h>

#include <cmocka.h>

#include "coh_helpers.h"

#define ROUNDS 30
#define KEYS 64


/* stat() of DIR/f and DIR/n through the shim, each against the raw syscall:
 * the number that differed. */
static int check_stats(const char *dir)
{
	char f[PLEN], n[PLEN], why[512];
	struct obs shim, raw;
	int bad = 0;

	join(f, dir, "f");
	join(n, dir, "n");
	for (int i = 0; i < 2; i++) {
		const char *p = i ? n : f;

		observe_shim(p, &shim);
		observe_raw(p, &raw);
		if (obs_diff(&shim, &raw, why, sizeof(why))) {
			fprintf(stderr, "%s: %s\n", p, why);
			bad++;
		}
	}
	return bad;
}

/* The host's own hash table and what its readers and writer share. */
struct item {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	unsigned long key;
};
static struct cds_lfht *g_ht;
static const char *g_dir;
static volatile int g_stop;
static int g_bad;
static unsigned long g_freed;

static int match(struct cds_lfht_node *node, const void *key)
{
	return caa_container_of(node, struct item, node)->key == *(const unsigned long *)key;
}

static void free_item(struct rcu_head *head)
{
	free(caa_container_of(head, struct item, rcu));
	__atomic_add_fetch(&g_freed, 1, __ATOMIC_RELAXED);
}

/* Replace key k by a new item, the old one freed after a grace period. */
static void replace_key(unsigned long k)
{
	struct item *it = calloc(1, sizeof(*it));
	struct cds_lfht_node *old;

	if (!it)
		abort();
	it->key = k;
	cds_lfht_node_init(&it->node);
	urcu_bp_read_lock();
	old = cds_lfht_add_replace(g_ht, k, match, &k, &it->node);
	urcu_bp_read_unlock();
	if (old)
		urcu_bp_call_rcu(&caa_container_of(old, struct item, node)->rcu, free_item);
}

/* Read-side sections with a stat() through the shim inside each. */
static void *reader(void *arg)
{
	struct cds_lfht_iter iter;
	unsigned long k = 0;

	(void)arg;
	while (!__atomic_load_n(&g_stop, __ATOMIC_RELAXED)) {
		int bad;

		urcu_bp_read_lock();
		cds_lfht_lookup(g_ht, k, match, &k, &iter);
		if (!cds_lfht_iter_get_node(&iter))
			__atomic_add_fetch(&g_bad, 1, __ATOMIC_RELAXED); /* every key is present */
		bad = check_stats(g_dir);
		urcu_bp_read_unlock();
		if (bad)
			__atomic_add_fetch(&g_bad, bad, __ATOMIC_RELAXED);
		k = (k + 1) % KEYS;
	}
	return NULL;
}

static int setup_table(const char *dir)
{
	g_dir = dir;
	g_ht = cds_lfht_new(KEYS, KEYS, 0, 0, NULL);
	if (!g_ht)
		return -1;
	for (unsigned long k = 0; k < KEYS; k++)
		replace_key(k);
	return 0;
}

/* --fork DIR: liburcu's fork protocol, ROUNDS times, beside a reader thread
 * and pending call_rcu callbacks. */
static int fork_main(char **argv)
{
	pthread_t th;

	if (setup_table(argv[2]) != 0 || pthread_create(&th, NULL, reader, NULL) != 0)
		return 2;
	for (int r = 0; r < ROUNDS; r++) {
		pid_t pid;
		int status;

		replace_key((unsigned long)r % KEYS); /* a callback in flight */
		urcu_bp_call_rcu_before_fork();
		urcu_bp_before_fork();
		pid = fork();
		if (pid == 0) {
			urcu_bp_after_fork_child();
			urcu_bp_call_rcu_after_fork_child();
			/* the child's urcu-bp and the shim's cache both work */
			replace_key(1);
			urcu_bp_synchronize_rcu();
			_exit(check_stats(argv[2]) ? 1 : 0);
		}
		urcu_bp_after_fork_parent();
		urcu_bp_call_rcu_after_fork_parent();
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			g_bad++;
	}
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	urcu_bp_synchronize_rcu();
	urcu_bp_barrier();
	return g_bad ? 1 : 0;
}

/* --readers DIR: 2 readers against a writer for 300 ms. */
static int readers_main(char **argv)
{
	pthread_t th[2];
	double end;

	if (setup_table(argv[2]) != 0)
		return 2;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, reader, NULL) != 0)
			return 2;
	end = mono_now() + 0.3;
	for (unsigned long n = 0; mono_now() < end; n++) {
		replace_key(n % KEYS);
		if (n % 64 == 0)
			urcu_bp_synchronize_rcu();
	}
	__atomic_store_n(&g_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	urcu_bp_synchronize_rcu();
	urcu_bp_barrier();
	if (__atomic_load_n(&g_freed, __ATOMIC_RELAXED) == 0)
		g_bad++; /* no callback ever ran */
	return g_bad ? 1 : 0;
}

/* Run `mode` in a helper (fresh process, the shim from its first lookup). */
static int run_helper(const char *mode, const char *name)
{
	char dir[PLEN], f[PLEN];
	const char *extra[] = { "RCUWALK_WARMUP=0", "RCUWALK_RACY_MS=0", NULL };
	const char *args[] = { mode, dir, NULL };
	char **env;
	pid_t pid;
	int status;

	join(dir, g_scratch, name);
	assert_int_equal(raw_mkdir(dir), 0);
	join(f, dir, "f");
	assert_int_equal(raw_write_file(f, 5, 0), 0);
	env = env_with(extra);
	pid = spawn_self("test_host_urcu", args, env, -1, -1);
	free(env);
	assert_true(pid > 0);
	status = wait_bounded(pid, 60);
	if (status == -1)
		fail_msg("%s: no exit within 60 s (hung: killed)", mode);
	return status;
}

/* The host's liburcu calls reach liburcu's shared objects, not the shim
 * (its fork hooks excepted, which the shim may interpose and pass on). */
static void test_host_urcu_calls_bind_to_liburcu_not_to_the_shim(void **state)
{
	static const struct {
		const char *name, *lib;
		void *addr;
	} calls[] = {
		{ "urcu_bp_synchronize_rcu", "liburcu-bp", (void *)urcu_bp_synchronize_rcu },
		{ "urcu_bp_call_rcu", "liburcu-bp", (void *)urcu_bp_call_rcu },
		{ "urcu_bp_register_thread", "liburcu-bp", (void *)urcu_bp_register_thread },
		{ "urcu_bp_read_lock", "liburcu-bp", (void *)urcu_bp_read_lock },
		{ "_cds_lfht_new", "liburcu-cds", (void *)_cds_lfht_new },
		{ "cds_lfht_add_replace", "liburcu-cds", (void *)cds_lfht_add_replace },
	};
	Dl_info info;

	(void)state;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		assert_true(dladdr(calls[i].addr, &info) != 0);
		print_message("%s -> %s\n", calls[i].name, info.dli_fname);
		if (!strstr(info.dli_fname, calls[i].lib))
			fail_msg("%s is bound to %s, not to %s", calls[i].name, info.dli_fname,
				 calls[i].lib);
	}
}

static void test_host_urcu_fork_protocol_does_not_hang(void **state)
{
	int status;

	(void)state;
	status = run_helper("--fork", "fork");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_host_urcu_readers_and_writer_beside_the_shim(void **state)
{
	int status;

	(void)state;
	status = run_helper("--readers", "readers");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--fork"))
		return fork_main(argv);
	if (argc == 3 && !strcmp(argv[1], "--readers"))
		return readers_main(argv);
	if (!getenv("RCUWALK_TEST_SHIM"))
		return 77;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_urcu_calls_bind_to_liburcu_not_to_the_shim),
		cmocka_unit_test(test_host_urcu_fork_protocol_does_not_hang),
		cmocka_unit_test(test_host_urcu_readers_and_writer_beside_the_shim),
	};
	return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
