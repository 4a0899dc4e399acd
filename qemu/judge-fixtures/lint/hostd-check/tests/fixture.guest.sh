#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lint fixture (qemu/lint-tests.sh --selftest): a host check whose reply
# nobody looks at
. /tests/lib.sh
expect_suites guest.fixture
suite_begin fixture
hostd check dma-mark >/dev/null
check "Flush" p2pctl nvme-flush /dev/p2pnvme0
hostcheck dma-none
suite_end; exit $_any_failed
