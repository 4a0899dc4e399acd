#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lint fixture (qemu/lint-tests.sh --selftest): a check in a pipeline's
# subshell; its line goes into the suite, its count does not
. /tests/lib.sh
expect_suites guest.fixture
suite_begin fixture
dmesg | grep p2pnvme | while read -r l; do
	check "a log line: $l" test -n "$l"
done
suite_end; exit $_any_failed
