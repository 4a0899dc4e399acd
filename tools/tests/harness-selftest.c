// SPDX-License-Identifier: GPL-2.0
/*
 * harness-selftest: the test programs' harness (tools/lib/harness.h) on
 * tests that pass, fail, skip, crash, return early, hang and print more
 * cases than they plan, for tools/tests/harness-selftest.sh in make
 * check's build suite (host only, never in the guest). The hanging test must be killed at its 1 s timeout
 * and counted failed; every planned case must be reported. A failing case
 * that says "# SKIP" must still count failed, and a host check (ktap.h)
 * the host never judged must fail: without the host's line (fd 7), or
 * with a reply that is no verdict.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
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

/* a SKIP directive on a failing line would make kunit.py count it skipped */
TEST(selftest, fails_saying_skip, 2, 5)
{
	tap(0, "a failing case # SKIP that must count failed");
	result(0, "a failing result # SKIP that must count failed", 0, EIO);
}

/* no host line: the check is a failing case, and it is counted */
TEST(selftest, hostcheck_without_the_line, 1, 5)
{
	close(7);
	hostcheck("equal 4096 bar0@0 nvme0@0");
}

/* the host's replies, canned: two verdicts, then one that is none */
TEST(selftest, hostcheck_replies, 3, 5)
{
	static const char replies[] = "ok host sees it\nnot ok host sees no such thing\ngarbage\n";
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || dup2(sv[0], 7) != 7 ||
	    write(sv[1], replies, strlen(replies)) != (ssize_t)strlen(replies))
		kt_fail("socketpair");
	tap(!hostcheck("equal 1 bar0@0 nvme0@0"), "a reply \"ok ...\" is a verdict");
	tap(!hostcheck("equal 2 bar0@0 nvme0@0"), "a reply \"not ok ...\" is a verdict");
	hostcheck("equal 3 bar0@0 nvme0@0");
}

int main(void)
{
	return kt_run("selftest");
}
