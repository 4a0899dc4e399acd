#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lint fixture (qemu/lint-tests.sh --selftest): a helper clobbers the
# suite's result counter (lib.sh's jsoncheck once did)
. /tests/lib.sh
expect_suites guest.fixture
myjson() {
	_n=$1 _k=$2; shift 2
	hostcheck json "$_n" "$_k" "$(p2pctl "$@" -o json | base64 | tr -d '\n')"
}
suite_begin fixture
myjson topo host_bridges topo
suite_end; exit $_any_failed
