# SPDX-License-Identifier: GPL-2.0
# Helpers for guest test scripts: KTAP output and device lookup.
# A guest test is a sequence of suites; each suite prints one KTAP document
# between <<<KTAP-BEGIN guest.NAME>>> and <<<KTAP-END>>> markers, which the
# host runner collects and feeds to the kernel's kunit.py parser.

# The test programs' timeouts (tools/lib/harness.h) on the debug kernel,
# 5-15x slower under TCG
if [ -e /sys/kernel/debug/kmemleak ]; then export P2P_TIMEOUT_SCALE=10; fi

_suite=
_n=0
_failed=0
_any_failed=0

suite_begin() {
	_suite=$1
	_n=0
	_failed=0
	read -r _t0 _ < /proc/uptime
	: > "/tmp/ktap.$_suite"
}

# tap ok|"not ok" DESCRIPTION [# SKIP reason]
_tap() {
	_n=$((_n + 1))
	echo "    $1 $_n $2" >> "/tmp/ktap.$_suite"
	echo "[$_suite] $1 $_n $2"
	if [ "$1" != ok ]; then _failed=1; _any_failed=1; fi
}
pass() { _tap ok "$1"; }
fail() { _tap "not ok" "$1"; }
skip() { _tap ok "$1 # SKIP $2"; }
diag() { echo "    # $*" >> "/tmp/ktap.$_suite"; echo "[$_suite] # $*"; }
# clock_mark WHEN: the clocksource now, for the benchmark scripts
# (scripts/bench-lib.sh), which check it did not change during the run
clock_mark() {
	echo "P2P-CLOCK $1 $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
}

# check DESCRIPTION COMMAND...: pass when the command succeeds
check() {
	_d=$1; shift
	if "$@"; then pass "$_d"; else fail "$_d"; fi
}
# check_eq DESCRIPTION GOT WANT
check_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else diag "$1: got '$2', want '$3'"; fail "$1"; fi
}

suite_end() {
	read -r _t1 _ < /proc/uptime
	diag "$_suite took $(awk -v a="$_t0" -v b="$_t1" 'BEGIN { printf "%.1f", b - a }') s"
	echo "<<<KTAP-BEGIN guest.$_suite>>>"
	echo "KTAP version 1"
	echo "1..1"
	echo "    KTAP version 1"
	echo "    # Subtest: $_suite"
	echo "    1..$_n"
	cat "/tmp/ktap.$_suite"
	if [ $_failed -eq 0 ]; then echo "ok 1 $_suite"; else echo "not ok 1 $_suite"; fi
	echo "<<<KTAP-END>>>"
	return $_failed
}

# The synchronous line to the host (qemu/hostd.py) on the second serial
# port: one command line out, one reply line back.
if [ -c /dev/ttyS1 ]; then
	stty -F /dev/ttyS1 raw -echo 115200 2>/dev/null
	exec 7<>/dev/ttyS1
fi
hostd() {
	echo "$*" >&7
	read -r _reply <&7
	echo "$_reply"
}
# The benchmarks' CPU time. busy: all guest CPUs' busy time so far in
# USER_HZ ticks (/proc/stat: user, nice, system, irq, softirq, steal).
# host_cpu: QEMU's host CPU time so far in ns, "VCPU QEMU MAIN" (qemu/hostd.py
# cputime), or "null" when the host cannot say. host_delta BEFORE AFTER:
# the host_cpu span as JSON, {"vcpu_ns":N,"qemu_ns":N,"main_ns":N} or null.
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
host_cpu() {
	set -- $(hostd cputime)
	if [ "$1" = ok ] && [ $# = 4 ]; then echo "$2 $3 $4"; else echo null; fi
}
host_delta() {
	case "$1 $2" in
	*null*) echo null; return ;;
	esac
	set -- $1 $2
	echo "{\"vcpu_ns\":$(($4 - $1)),\"qemu_ns\":$(($5 - $2)),\"main_ns\":$(($6 - $3))}"
}
# hostcheck KIND ...: the host checks bytes now (see qemu/hostcheck.py);
# the result is recorded on the host side, the reply shown here.
hostcheck() { diag "host: $(hostd check "$@")"; }

# jsoncheck NAME KEYS P2PCTL-ARGS...: the host parses what p2pctl ARGS -o json
# prints (python's json): one object, with the keys KEYS (a,b,c or -).
jsoncheck() {
	_n=$1 _k=$2; shift 2
	hostcheck json "$_n" "$_k" "$(p2pctl "$@" -o json 2>/dev/null | base64 | tr -d '\n')"
}

# held p2pctl ARGS...: run a p2pctl transfer with --hold in the background.
# p2pbar zeroes p2pmem when it is freed, so the host must look at the bytes
# while p2pctl still holds them: $held_out is p2pctl's output once it has
# printed it; released returns p2pctl's exit status and lets it free.
held() {
	rm -f /tmp/held.fifo /tmp/held.out
	mkfifo /tmp/held.fifo
	_p=$1; shift
	$_p --hold "$@" </tmp/held.fifo >/tmp/held.out 2>/tmp/held.err &
	_held_pid=$!
	exec 8>/tmp/held.fifo
	_i=0
	while ! grep -q . /tmp/held.out && kill -0 $_held_pid 2>/dev/null && [ $_i -lt 6000 ]; do
		sleep 0.05; _i=$((_i + 1))
	done
	held_out=$(cat /tmp/held.out)
}
released() {
	exec 8>&-
	wait $_held_pid
}

# find_pci VENDOR DEVICE [N]: the Nth (default 1st) function with that ID
find_pci() {
	_i=0
	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = "0x$1" ] && [ "$(cat "$d/device")" = "0x$2" ]; then
			_i=$((_i + 1))
			if [ "$_i" = "${3:-1}" ]; then basename "$d"; return 0; fi
		fi
	done
	return 1
}

# bind DRIVER BDF: bind with driver_override, unbinding the current driver
bind() {
	_dev=/sys/bus/pci/devices/$2
	[ -e "$_dev/driver" ] && echo "$2" > "$_dev/driver/unbind"
	echo "$1" > "$_dev/driver_override"
	echo "$2" > /sys/bus/pci/drivers_probe
	[ "$(basename "$(readlink "$_dev/driver")")" = "$1" ]
}

# nvme_blk BDF: /dev/nvmeXn1 of an NVMe controller bound to the nvme driver
nvme_blk() {
	for n in /sys/bus/pci/devices/$1/nvme/nvme*/nvme*n1; do
		[ -e "$n" ] && { echo "/dev/${n##*/}"; return 0; }
	done
	return 1
}

load() { insmod "/lib/modules/$1.ko" ${2:+$2}; }

# bench_pair SUITE: a benchmark's set-up (fiobench, cpuprof): the suite
# begun, p2pbar on the ivshmem BAR, p2pnvme on the first NVMe controller,
# nvme-pci keeping the identical second one; sets IVSHMEM, NVME0, NVME1,
# BLK1 and NG1 (nvme-pci's block and ng devices of NVME1).
bench_pair() {
	IVSHMEM=$(find_pci 1af4 1110)
	NVME0=$(find_pci 1b36 0010)
	NVME1=$(find_pci 1b36 0010 2)
	BLK1=$(nvme_blk "$NVME1")
	NG1=$(echo "$BLK1" | sed 's|/dev/nvme|/dev/ng|')
	suite_begin "$1"
	check "p2pbar binds to ivshmem" sh -c "insmod /lib/modules/p2pbar.ko; true"
	bind p2pbar "$IVSHMEM"
	check "p2pnvme takes nvme0" sh -c "insmod /lib/modules/p2pnvme.ko; true"
	bind p2pnvme "$NVME0"
	check "nvme-pci keeps nvme1 ($NG1)" test -c "$NG1"
}

# bench_polled NVME_P2PNVME NVME_PCI: a benchmark's polled half. p2pnvme
# again with poll=1 on the first (no I/O interrupts), nvme-pci probed again
# on the second with two poll queues; sets BLK1 and NG1 to its devices.
bench_polled() {
	echo "$1" > /sys/bus/pci/drivers/p2pnvme/unbind
	check "p2pnvme again with poll=1" sh -c "rmmod p2pnvme && insmod /lib/modules/p2pnvme.ko poll=1"
	bind p2pnvme "$1"
	echo 2 > /sys/module/nvme/parameters/poll_queues
	check "nvme-pci probes nvme1 again with poll queues" bind nvme "$2"
	for _i in $(seq 50); do BLK1=$(nvme_blk "$2") && break; sleep 0.1; done
	NG1=$(echo "$BLK1" | sed 's|/dev/nvme|/dev/ng|')
}

# Print the KTAP of every KUnit suite not printed yet. Call it before
# unloading a test module: its results leave debugfs with it.
dump_kunit() {
	for _r in /sys/kernel/debug/kunit/*/results; do
		[ -e "$_r" ] || continue
		_s=${_r%/results}; _s=${_s##*/}
		grep -qx "$_s" /tmp/kunit.dumped 2>/dev/null && continue
		echo "$_s" >> /tmp/kunit.dumped
		echo "<<<KTAP-BEGIN kunit.$_s>>>"
		cat "$_r"
		echo "<<<KTAP-END>>>"
	done
}
