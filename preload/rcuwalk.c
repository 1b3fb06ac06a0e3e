/*
 * rcuwalk - launcher: `rcuwalk [--] cmd args...` runs cmd with librcuwalk.so
 * added to LD_PRELOAD (kept in front of what was there, not duplicated).
 * The library is looked up next to the launcher (build tree) and in
 * ../lib/ and ../lib/<multiarch>/ relative to it (installed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIBNAME "librcuwalk.so"

static int find_library(char *out, size_t size)
{
	static const char *const rel[] = { "", "../lib/", "../lib64/", "../lib/x86_64-linux-gnu/" };
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	slash[1] = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		if ((size_t)snprintf(out, size, "%s%s%s", self, rel[i], LIBNAME) >= size)
			continue;
		if (access(out, R_OK) == 0)
			return 0;
	}
	return -1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: rcuwalk [--] command [args...]\n"
		   "Runs command with librcuwalk.so preloaded (path lookups answered from an\n"
		   "in-process RCU-walk dentry cache).  Environment: RCUWALK_DISABLE=1,\n"
		   "RCUWALK_MAX_MB=N, RCUWALK_STATS=FILE.\n");
}

int main(int argc, char **argv)
{
	char lib[PATH_MAX];
	const char *old = getenv("LD_PRELOAD");
	char *val;
	int i = 1;

	if (i < argc && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	if (find_library(lib, sizeof(lib)) != 0) {
		fprintf(stderr, "rcuwalk: cannot find %s next to the launcher\n", LIBNAME);
		return 127;
	}
	if (old && *old && strstr(old, lib)) {
		val = strdup(old);
	} else if (old && *old) {
		if (asprintf(&val, "%s:%s", lib, old) < 0)
			val = NULL;
	} else {
		val = strdup(lib);
	}
	if (!val || setenv("LD_PRELOAD", val, 1) != 0) {
		perror("rcuwalk");
		return 127;
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "rcuwalk: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
