// SPDX-License-Identifier: GPL-2.0
/* The test programs' harness (see harness.h). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define KT_EXIT_FAIL 1
#define KT_EXIT_SKIP 4		/* kselftest's KSFT_SKIP */

/* what a test's child tells the harness, in memory shared with it */
struct kt_shared {
	int counts[4];		/* ktap.c's: see ktap_shared in ktap.h */
	int setup_done;
	char why[256];		/* kt_skip()'s or kt_fail()'s reason */
};

static struct kt_test *tests;
static struct kt_shared *shared;
static struct kt_test *current;	/* in the child: its test */
static void *current_self;
static volatile sig_atomic_t timed_out;
static volatile pid_t running;

/* a test's case lines reach the console even if it is killed mid-line */
__attribute__((constructor)) static void kt_line_buffered(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}

void kt_register(struct kt_test *t)
{
	struct kt_test **p = &tests;

	while (*p && (*p)->line < t->line)
		p = &(*p)->next;
	t->next = *p;
	*p = t;
}

/* the reason is in shared->why */
static __attribute__((noreturn)) void kt_end(int code)
{
	if (shared->setup_done && current->teardown) {
		shared->setup_done = 0;		/* once, also if it ends in kt_fail() */
		current->teardown(current_self);
	}
	fflush(stdout);
	_exit(code);
}

void kt_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(shared->why, sizeof(shared->why), fmt, ap);
	va_end(ap);
	kt_end(KT_EXIT_SKIP);
}

void kt_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(shared->why, sizeof(shared->why), fmt, ap);
	va_end(ap);
	kt_end(KT_EXIT_FAIL);
}

static void kt_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
	if (running > 0)
		kill(-running, SIGKILL);
}

static int kt_timeout(const struct kt_test *t)
{
	const char *s = getenv("P2P_TIMEOUT_SCALE");
	double scale = s ? atof(s) : 1;

	return (int)(t->timeout * (scale > 0 ? scale : 1) + 0.5) ?: 1;
}

static __attribute__((noreturn)) void kt_child(struct kt_test *t)
{
	setpgid(0, 0);
	ktap_shared = shared->counts;
	current = t;
	current_self = t->size ? calloc(1, t->size) : NULL;
	if (t->size && !current_self)
		kt_fail("no memory for the fixture");
	if (t->setup)
		t->setup(current_self);
	shared->setup_done = 1;
	t->fn(current_self);
	shared->setup_done = 0;
	if (t->teardown)
		t->teardown(current_self);
	fflush(stdout);
	_exit(0);
}

/* One test in a child of its own; returns 1 if it failed. */
static int kt_one(struct kt_test *t)
{
	struct sigaction sa = { .sa_handler = kt_alarm }, old;
	int plan = t->plan(), first = ktap_n, failed = ktap_failed, tmo = kt_timeout(t);
	int st = 0, n, bad, skip = 0;
	char why[300] = "";
	pid_t pid;

	memset(shared, 0, sizeof(*shared));
	shared->counts[0] = ktap_n;
	shared->counts[1] = ktap_failed;
	shared->counts[2] = ktap_n + plan;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		snprintf(why, sizeof(why), "fork: %s", strerror(errno));
		st = -1;
	} else if (!pid) {
		kt_child(t);
	} else {
		setpgid(pid, pid);
		timed_out = 0;
		running = pid;
		sigaction(SIGALRM, &sa, &old);
		alarm(tmo);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		alarm(0);
		running = 0;
		sigaction(SIGALRM, &old, NULL);
		/* whatever the test started and left behind goes with it */
		kill(-pid, SIGKILL);
	}
	ktap_n = shared->counts[0];
	ktap_failed = shared->counts[1];
	shared->why[sizeof(shared->why) - 1] = 0;
	if (st == -1)
		;
	else if (timed_out)
		snprintf(why, sizeof(why), "timeout: killed after %d s", tmo);
	else if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else if (WEXITSTATUS(st) == KT_EXIT_SKIP)
		skip = snprintf(why, sizeof(why), "%s", shared->why[0] ? shared->why : "skipped");
	else if (WEXITSTATUS(st) && shared->why[0])
		snprintf(why, sizeof(why), "%s", shared->why);
	else if (WEXITSTATUS(st))
		snprintf(why, sizeof(why), "exit status %d", WEXITSTATUS(st));
	else if (ktap_n < first + plan)
		snprintf(why, sizeof(why), "it returned after %d of its %d cases", ktap_n - first,
			 plan);
	if (shared->counts[3])
		snprintf(why, sizeof(why), "%d cases beyond its plan of %d", shared->counts[3], plan);
	/* the planned cases it never printed, so that the suite's plan holds */
	for (n = ktap_n; n < first + plan; n++) {
		if (skip) {
			printf("    ok %d %s.%s: not run # SKIP %s\n", n + 1, t->fixture, t->name, why);
			continue;
		}
		printf("    not ok %d %s.%s: not reached (%s)\n", n + 1, t->fixture, t->name, why);
		ktap_failed++;
	}
	ktap_n = n > ktap_n ? n : ktap_n;
	bad = (why[0] && !skip) || ktap_failed != failed;
	ktap_n++;
	ktap_failed += bad;
	if (why[0] && !skip)
		printf("    # %s.%s: %s\n", t->fixture, t->name, why);
	printf("    %s %d %s.%s%s%s\n", bad ? "not ok" : "ok", ktap_n, t->fixture, t->name,
	       skip && !bad ? " # SKIP " : "", skip && !bad ? why : "");
	fflush(stdout);
	return bad;
}

int kt_run(const char *suite)
{
	return kt_run_as(suite, suite);
}

int kt_run_as(const char *suite, const char *name)
{
	struct kt_test *t;
	int plan = 0, bad = 0;

	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		      -1, 0);
	if (shared == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (t = tests; t; t = t->next)
		if (!strcmp(t->suite, suite))
			plan += t->plan() + 1;
	ktap_n = 0;
	ktap_failed = 0;
	printf("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: %s\n    1..%d\n", name,
	       plan);
	for (t = tests; t; t = t->next)
		if (!strcmp(t->suite, suite))
			bad |= kt_one(t);
	if (ktap_n != plan) {
		printf("    # ran %d cases, planned %d\n", ktap_n, plan);
		bad = 1;
	}
	printf("%s 1 %s\n", bad || ktap_failed ? "not ok" : "ok", name);
	fflush(stdout);
	munmap(shared, sizeof(*shared));
	shared = NULL;
	return bad || ktap_failed;
}
