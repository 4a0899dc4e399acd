#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lint fixture (qemu/lint-tests.sh --selftest): a test program that prints
# its own KTAP, its exit status ignored
. /tests/lib.sh
expect_suites guest.provider_unplug
p2pbar-test --unplug /dev/p2pbar0 "$(find_pci 1af4 1110)"
exit $_any_failed
