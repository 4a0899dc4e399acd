/* SPDX-License-Identifier: GPL-2.0 */
/* KTAP case lines of the errno tables in tools/tests (one binary each). */
#ifndef P2P_TESTS_KTAP_H
#define P2P_TESTS_KTAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif /* P2P_TESTS_KTAP_H */
