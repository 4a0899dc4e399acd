// SPDX-License-Identifier: GPL-2.0
/* KTAP case lines of the test programs in tools/tests (see ktap.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktap.h"

int ktap_n, ktap_failed;
int *ktap_shared;

/* after a case line is out: the harness's copy of the counts */
static void counted(void)
{
	if (ktap_shared) {
		ktap_shared[0] = ktap_n;
		ktap_shared[1] = ktap_failed;
	}
}

/* beyond the running test's plan (see ktap_shared): 1, said as a diagnostic */
static int over_plan(int ok, const char *what)
{
	if (!ktap_shared || ktap_n < ktap_shared[2])
		return 0;
	ktap_shared[3]++;
	printf("    # beyond the plan: %s %s\n", ok ? "ok" : "not ok", what);
	fflush(stdout);
	return 1;
}

/*
 * A failing case line never carries a SKIP directive: kunit.py counts
 * "not ok N ... # SKIP" as skipped. "# SKIP" becomes "# FAIL" (as long).
 */
static void no_skip_if_failed(int ok, char *what)
{
	char *p = what;

	while (!ok && (p = strstr(p, "# SKIP")))
		memcpy(p + 2, "FAIL", 4);
}

/* KTAP case line: ok/not ok N, the description printf-style. */
void tap(int ok, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	no_skip_if_failed(ok, what);
	if (over_plan(ok, what))
		return;
	ktap_n++;
	ktap_failed += !ok;
	printf("    %s %d %s\n", ok ? "ok" : "not ok", ktap_n, what);
	fflush(stdout);
	counted();
}

/* Case @what passed if @ok; @want and @got are errno values (0: success). */
void result(int ok, const char *what, int want, int got)
{
	char line[512];

	snprintf(line, sizeof(line), "%s -> %s (got %s)", what, strerror(want), strerror(got));
	no_skip_if_failed(ok, line);
	if (over_plan(ok, line))
		return;
	ktap_n++;
	ktap_failed += !ok;
	printf("    %s %d %s\n", ok ? "ok" : "not ok", ktap_n, line);
	fflush(stdout);
	counted();
}

/*
 * Every host check sent is a line of $P2P_HOSTCHECKS (default
 * /tmp/p2p.hostchecks, as qemu/guest/lib.sh's), which the guest's /init
 * counts for the host (P2P-HOSTCHECKS): a check the host never recorded
 * fails the run there.
 */
static void count_hostcheck(const char *cmd)
{
	const char *path = getenv("P2P_HOSTCHECKS");
	int fd;

	fd = open(path && *path ? path : "/tmp/p2p.hostchecks",
		  O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, cmd, strlen(cmd)) < 0)
		perror("hostcheck: count");
	close(fd);
}

/*
 * Ask the host to check bytes now (qemu/hostcheck.py), over the bench's
 * synchronous line that the guest's test shell keeps open as fd 7; the
 * host records the result, the reply is shown as a diagnostic. Without the
 * line (the write or the read fails) or without a verdict in the reply
 * ("ok ..." or "not ok ..."), the host judged nothing: a failing case here.
 * Returns 0 if the host answered with a verdict.
 */
int hostcheck(const char *fmt, ...)
{
	char cmd[512], reply[512];
	const char *why = NULL;
	size_t len = 0;
	ssize_t r = 0;
	va_list ap;
	int m, err = 0;

	m = snprintf(cmd, sizeof(cmd), "check ");
	va_start(ap, fmt);
	vsnprintf(cmd + m, sizeof(cmd) - m - 1, fmt, ap);
	va_end(ap);
	cmd[strcspn(cmd, "\n")] = 0;
	strcat(cmd, "\n");
	count_hostcheck(cmd);
	r = write(7, cmd, strlen(cmd));
	if (r != (ssize_t)strlen(cmd)) {
		err = r < 0 ? errno : EIO;
		why = "write";
	} else {
		r = 0;
		while (len < sizeof(reply) - 1 && (r = read(7, reply + len, 1)) == 1 &&
		       reply[len] != '\n')
			len++;
		if (r < 0) {
			err = errno;
			why = "read";
		}
	}
	reply[len] = 0;
	cmd[strlen(cmd) - 1] = 0;
	if (why) {
		tap(0, "host check sent: %.200s (%s on the host's line: %s)", cmd + m, why,
		    strerror(err));
		return -1;
	}
	printf("    # host: %s\n", reply);
	fflush(stdout);
	if (strcmp(reply, "ok") && strncmp(reply, "ok ", 3) && strcmp(reply, "not ok") &&
	    strncmp(reply, "not ok ", 7)) {
		tap(0, "host check sent: %.200s (no verdict in the reply '%.100s')", cmd + m,
		    reply);
		return -1;
	}
	return 0;
}
