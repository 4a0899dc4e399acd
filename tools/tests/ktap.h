/* SPDX-License-Identifier: GPL-2.0 */
/* KTAP case lines of the errno tables in tools/tests (one binary each). */
#ifndef P2P_TESTS_KTAP_H
#define P2P_TESTS_KTAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n, failed;

/* KTAP case line: ok/not ok N, the description printf-style. */
static __attribute__((unused, format(printf, 2, 3))) void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	n++;
	failed += !ok;
	printf("    %s %d ", ok ? "ok" : "not ok", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* The number in a sysfs file, -1 if it cannot be read. */
static __attribute__((unused)) long read_num(const char *path)
{
	char buf[64] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtol(buf, NULL, 0);
}

/* Case @what passed if @ok; @want and @got are errno values (0: success). */
static __attribute__((unused)) void result(int ok, const char *what, int want, int got)
{
	n++;
	failed += !ok;
	printf("    %s %d %s -> %s (got %s)\n", ok ? "ok" : "not ok", n, what, strerror(want),
	       strerror(got));
}

/*
 * Ask the host to check bytes now (qemu/hostcheck.py), over the bench's
 * synchronous line that the guest's test shell keeps open as fd 7; the
 * host records the result, the reply is shown as a diagnostic. Returns 0 if
 * the line is there.
 */
static __attribute__((unused, format(printf, 1, 2))) int hostcheck(const char *fmt, ...)
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

#endif /* P2P_TESTS_KTAP_H */
