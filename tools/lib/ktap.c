// SPDX-License-Identifier: GPL-2.0
/* KTAP case lines of the test programs in tools/tests (see ktap.h). */
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

/* KTAP case line: ok/not ok N, the description printf-style. */
void tap(int ok, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
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
	if (over_plan(ok, line))
		return;
	ktap_n++;
	ktap_failed += !ok;
	printf("    %s %d %s\n", ok ? "ok" : "not ok", ktap_n, line);
	fflush(stdout);
	counted();
}

/*
 * Ask the host to check bytes now (qemu/hostcheck.py), over the bench's
 * synchronous line that the guest's test shell keeps open as fd 7; the
 * host records the result, the reply is shown as a diagnostic. Returns 0 if
 * the line is there.
 */
int hostcheck(const char *fmt, ...)
{
	char cmd[512], reply[512];
	size_t len = 0;
	va_list ap;
	int m;

	m = snprintf(cmd, sizeof(cmd), "check ");
	va_start(ap, fmt);
	m += vsnprintf(cmd + m, sizeof(cmd) - m - 1, fmt, ap);
	va_end(ap);
	strcat(cmd, "\n");
	if (write(7, cmd, strlen(cmd)) < 0)
		return -1;
	while (len < sizeof(reply) - 1 && read(7, reply + len, 1) == 1 && reply[len] != '\n')
		len++;
	reply[len] = 0;
	printf("    # host: %s\n", reply);
	return 0;
}

