/* SPDX-License-Identifier: GPL-2.0 */
/* KTAP case lines of the errno tables in tools/tests (one binary each). */
#ifndef P2P_TESTS_KTAP_H
#define P2P_TESTS_KTAP_H

#include <stdio.h>
#include <string.h>

static int n, failed;

/* Case @what passed if @ok; @want and @got are errno values (0: success). */
static void result(int ok, const char *what, int want, int got)
{
	n++;
	failed += !ok;
	printf("    %s %d %s -> %s (got %s)\n", ok ? "ok" : "not ok", n, what, strerror(want),
	       strerror(got));
}

#endif /* P2P_TESTS_KTAP_H */
