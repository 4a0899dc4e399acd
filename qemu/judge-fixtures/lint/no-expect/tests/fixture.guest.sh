#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lint fixture (qemu/lint-tests.sh --selftest): no expect_suites line, so
# the host cannot tell a suite that never printed
. /tests/lib.sh
suite_begin fixture
check "p2pbar loads" load p2pbar
suite_end; exit $_any_failed
