#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The test programs' harness (tools/lib/harness.h) on its own tests
# (tools/tests/harness-selftest.c): every planned case reported, a hanging
# test killed at its timeout and counted failed, the suite going on after
# it, crashes, early returns, skips and cases beyond a plan said as such; with the kernel's
# kunit.py, counted as the bench counts a guest's KTAP (qemu/ktap.py).
#
#   tools/tests/harness-selftest.sh [HARNESS-SELFTEST [KUNIT.PY]]
B=${1:-$(dirname "$0")/../build/harness-selftest}
top=$(cd "$(dirname "$0")/../.." && pwd)
hc=$(mktemp)
t0=$(date +%s)
out=$(P2P_HOSTCHECKS=$hc "$B" 7>&-)
rc=$?
secs=$(( $(date +%s) - t0 ))
nhc=$(wc -l < "$hc")
rm -f "$hc"
fail() { printf '%s\n' "$out"; echo "FAIL: $*"; exit 1; }
has() { printf '%s\n' "$out" | grep -qx -- "$1" || fail "no line '$1'"; }
[ $rc = 1 ] || fail "exit status $rc, want 1"
[ $secs -le 4 ] || fail "took $secs s: the hanging test was not killed at its 1 s timeout"
has '    1..33'
has '    ok 1 a write into the fixture'"'"'s pipe'
has '    ok 3 pipe.passes'
has '    not ok 6 pipe.fails_a_case'
has '    ok 8 pipe.skips: not run # SKIP nothing to test here'
has '    ok 10 pipe.skips # SKIP nothing to test here'
has '    not ok 12 global.crashes: not reached (killed by signal 11 (Segmentation fault))'
has '    not ok 13 global.crashes'
has '    not ok 16 global.returns_early: not reached (it returned after 1 of its 3 cases)'
has '    not ok 19 pipe.hangs: not reached (timeout: killed after 1 s)'
has '    not ok 20 pipe.hangs'
has '    ok 21 the suite goes on after a timeout'
has '    ok 22 global.after_the_hang'
has '    # beyond the plan: ok one case too many'
has '    not ok 24 global.beyond_its_plan'
has '    not ok 25 a failing case # FAIL that must count failed'
has '    not ok 26 a failing result # FAIL that must count failed -> Success (got Input/output error)'
has '    not ok 27 global.fails_saying_skip'
has '    not ok 28 host check sent: equal 4096 bar0@0 nvme0@0 (write on the host'"'"'s line: Bad file descriptor)'
has '    not ok 29 global.hostcheck_without_the_line'
has '    # host: ok host sees it'
has '    ok 30 a reply "ok ..." is a verdict'
has '    # host: not ok host sees no such thing'
has '    ok 31 a reply "not ok ..." is a verdict'
has '    not ok 32 host check sent: equal 3 bar0@0 nvme0@0 (no verdict in the reply '"'"'garbage'"'"')'
has '    not ok 33 global.hostcheck_replies'
has 'not ok 1 selftest'
printf '%s\n' "$out" | grep -q '^ *not ok [0-9]* .*# SKIP' && fail "a failing line says # SKIP"
[ "$nhc" = 4 ] || fail "$nhc host checks counted in P2P_HOSTCHECKS, want 4"
[ "$(printf '%s\n' "$out" | grep -c '# teardown')" = 3 ] || fail "teardown ran not 3 times"
if [ -n "$2" ]; then
	d=$(mktemp -d)
	mkdir "$d/ktap"
	printf '%s\n' "$out" > "$d/ktap/guest.selftest.ktap"
	python3 "$top/qemu/ktap.py" merge "$d/run.ktap" "$d"
	sum=$(python3 "$top/qemu/ktap.py" count "$2" "$d/run.ktap" | tail -1)
	rm -rf "$d"
	[ "$sum" = "13 passed, 17 failed, 3 skipped" ] || fail "kunit.py counts '$sum'"
fi
echo "harness: $secs s, the hang killed at its timeout and counted failed: all cases pass"
