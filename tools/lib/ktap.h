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
/*
 * In a test the harness runs (harness.h): memory it shares with the test's
 * child. [0] and [1] are ktap_n and ktap_failed, copied after each case line
 * so that the harness goes on counting after the child ends; [2] is the
 * number of the test's last planned case: a case beyond it is printed as a
 * diagnostic and counted in [3], so that the suite's plan holds.
 */
extern int *ktap_shared;

__attribute__((format(printf, 2, 3))) void tap(int ok, const char *fmt, ...);
void result(int ok, const char *what, int want, int got);
/* see ktap.c: a failing case when the host judged nothing; 0 on a verdict */
__attribute__((format(printf, 1, 2))) int hostcheck(const char *fmt, ...);

#endif /* P2P_TESTS_KTAP_H */
