// SPDX-License-Identifier: GPL-2.0
/*
 * harness-selftest: the test programs' harness (tools/lib/harness.h) on
 * tests that pass, fail, skip, crash, return early, hang and print more
 * cases than they plan, for tools/tests/harness-selftest.sh in make
 * check's build suite (host only, never in the guest). The hanging test must be killed at its 1 s timeout
 * and counted failed; every planned case must be reported.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static int ncases = 2;	/* a plan from main(): evaluated when the suite starts */

FIXTURE(pipe) {
	int fd[2];
};

FIXTURE_SETUP(pipe)
{
	if (pipe(self->fd))
		kt_fail("pipe");
	printf("    # setup\n");
}

FIXTURE_TEARDOWN(pipe)
{
	close(self->fd[0]);
	close(self->fd[1]);
	printf("    # teardown\n");
}

TEST_F(selftest, pipe, passes, ncases, 5)
{
	tap(write(self->fd[1], "x", 1) == 1, "a write into the fixture's pipe");
	tap(1, "a second case");
}

TEST_F(selftest, pipe, fails_a_case, 2, 5)
{
	tap(1, "a case that passes");
	tap(0, "a case that fails");
}

TEST_F(selftest, pipe, skips, 3, 5)
{
	tap(1, "a case before the skip");
	kt_skip("nothing to test here");
}

TEST(selftest, crashes, 2, 5)
{
	tap(1, "a case before the crash");
	raise(SIGSEGV);
}

TEST(selftest, returns_early, 3, 5)
{
	tap(1, "one case of three");
}

/* left running: killed at its timeout with its process group */
TEST_F(selftest, pipe, hangs, 2, 1)
{
	char c;

	tap(1, "a case before the hang");
	if (!fork())
		pause();
	if (read(self->fd[0], &c, 1) < 0)	/* nothing is ever written */
		tap(0, "read");
}

TEST(selftest, after_the_hang, 1, 5)
{
	tap(1, "the suite goes on after a timeout");
}

/* a case beyond the plan is a diagnostic: the suite's plan holds */
TEST(selftest, beyond_its_plan, 1, 5)
{
	tap(1, "the planned case");
	tap(1, "one case too many");
}

int main(void)
{
	return kt_run("selftest");
}
