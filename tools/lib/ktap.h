/* SPDX-License-Identifier: GPL-2.0 */
/* KTAP case lines of the test programs in tools/tests (one binary each). */
#ifndef P2P_TESTS_KTAP_H
#define P2P_TESTS_KTAP_H

/*
 * The counts of the one test binary that includes this: defined once, in
 * ktap.c. ktap_n is the number of the last case line, ktap_failed how many
 * were "not ok".
 */
extern int ktap_n, ktap_failed;

__attribute__((format(printf, 2, 3))) void tap(int ok, const char *fmt, ...);
void result(int ok, const char *what, int want, int got);
__attribute__((format(printf, 1, 2))) int hostcheck(const char *fmt, ...);

#endif /* P2P_TESTS_KTAP_H */
