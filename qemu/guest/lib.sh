# SPDX-License-Identifier: GPL-2.0
# Helpers for guest test scripts: KTAP output and device lookup.
# A guest test is a sequence of suites; each suite prints one KTAP document
# between <<<KTAP-BEGIN guest.NAME>>> and <<<KTAP-END>>> markers, which the
# host runner collects and feeds to the kernel's kunit.py parser.
#
# What the host holds a test to (qemu/hostcheck.py):
#  - expect_suites: every suite the test will print (its own, its test
#    programs' and its KUnit modules'), one P2P-EXPECT line; a suite that
#    never comes fails.
#  - every host check (hostcheck, and the test programs' hostcheck() of
#    tools/lib/ktap.c) is one line of $P2P_HOSTCHECKS; /init prints how many
#    (P2P-HOSTCHECKS), so that a check the host never recorded fails.
#  - known kernel warnings: known_warning_begin/end in the kernel log,
#    around the commands that provoke them.
# Names of this file's own variables start with _ and the function's name
# (or an abbreviation of it), so that no helper clobbers another's or a
# test's; _suite, _n and _failed belong to suite_begin, _tap and suite_end.

# The test programs' timeouts (tools/lib/harness.h) on the debug kernel,
# 5-15x slower under TCG
if [ -e /sys/kernel/debug/kmemleak ]; then export P2P_TIMEOUT_SCALE=10; fi

_suite=
_n=0
_failed=0
_any_failed=0
# one line per host check sent (tools/lib/ktap.c appends to the same file)
export P2P_HOSTCHECKS="${P2P_HOSTCHECKS:-/tmp/p2p.hostchecks}"

# expect_suites NAME...: the suites this test prints, as the KTAP-BEGIN
# markers name them: guest.SUITE for suite_begin SUITE and for the test
# programs' suites, kunit.SUITE for a KUnit suite (the name in its struct
# kunit_suite, not the module's). The host fails each that has no block.
expect_suites() {
	echo "P2P-EXPECT $*"
}

suite_begin() {
	_suite=$1
	_n=0
	_failed=0
	read -r _sb_t0 _ < /proc/uptime
	: > "/tmp/ktap.$_suite"
}

# _tap ok|"not ok" DESCRIPTION [# SKIP reason]: a case line of the open
# suite. A failing line never carries a SKIP directive (kunit.py would count
# it skipped): "# SKIP" becomes "# FAIL". A result outside any suite
# (before the first suite_begin or after a suite_end) has no block to go in:
# a failure there is a block of its own, guest.outside_suite.
_tap() {
	_tap_what=$2
	if [ "$1" != ok ]; then
		_any_failed=1
		case "$_tap_what" in
		*'# SKIP'*) _tap_what=$(printf '%s\n' "$_tap_what" | sed 's/# SKIP/# FAIL/g') ;;
		esac
	fi
	if [ -z "$_suite" ]; then
		echo "[outside a suite] $1 $_tap_what"
		[ "$1" = ok ] && return 0
		echo "<<<KTAP-BEGIN guest.outside_suite>>>"
		printf 'KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: outside_suite\n'
		printf '    1..1\n    not ok 1 %s\nnot ok 1 outside_suite\n' "$_tap_what"
		echo "<<<KTAP-END>>>"
		return 0
	fi
	_n=$((_n + 1))
	echo "    $1 $_n $_tap_what" >> "/tmp/ktap.$_suite"
	echo "[$_suite] $1 $_n $_tap_what"
	if [ "$1" != ok ]; then _failed=1; fi
}
pass() { _tap ok "$1"; }
fail() { _tap "not ok" "$1"; }
skip() { _tap ok "$1 # SKIP $2"; }
diag() {
	if [ -n "$_suite" ]; then
		echo "    # $*" >> "/tmp/ktap.$_suite"
		echo "[$_suite] # $*"
	else
		echo "[outside a suite] # $*"
	fi
}
# clock_mark WHEN: the clocksource now, for the benchmark scripts
# (scripts/bench-lib.sh), which check it did not change during the run
clock_mark() {
	echo "P2P-CLOCK $1 $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
}

# check DESCRIPTION COMMAND...: pass when the command succeeds
check() {
	_check_what=$1; shift
	if "$@"; then pass "$_check_what"; else fail "$_check_what"; fi
}
# check_eq DESCRIPTION GOT WANT
check_eq() {
	if [ "$2" = "$3" ]; then pass "$1"; else diag "$1: got '$2', want '$3'"; fail "$1"; fi
}
# check_same DESCRIPTION GOT WANT: check_eq of two values read from the
# system, which must not be empty (two reads that both failed are not equal)
check_same() {
	if [ -z "$3" ]; then
		diag "$1: got '$2', want '$3': nothing to compare with"; fail "$1"
	else
		check_eq "$@"
	fi
}
# fails_with TEXT COMMAND...: COMMAND fails and says TEXT on stderr (a
# refusal for the reason meant, not for any other: say `sh -c "echo 0 >
# FILE"` and "Invalid argument" for a sysfs store's EINVAL)
fails_with() {
	_fw_want=$1; shift
	_fw_err=$("$@" 2>&1 >/dev/null)
	_fw_rc=$?
	case "$_fw_err" in
	*"$_fw_want"*) [ $_fw_rc -ne 0 ] && return 0 ;;
	esac
	diag "$*: exit $_fw_rc, '$_fw_err' (want a failure saying '$_fw_want')"
	return 1
}
# param_refused MODULE NAME=VALUE: insmod refuses the parameter value
# (EINVAL), the kernel says which parameter, and the module is not loaded
param_refused() {
	_pr_log="$1: \`${2#*=}' invalid for parameter \`${2%%=*}'"
	_pr_n0=$(dmesg | grep -cF "$_pr_log")
	_pr_err=$(insmod "/lib/modules/$1.ko" "$2" 2>&1)
	_pr_rc=$?
	_pr_n1=$(dmesg | grep -cF "$_pr_log")
	case "$_pr_err" in
	*"Invalid argument"*)
		[ $_pr_rc -ne 0 ] && [ "$_pr_n1" -gt "$_pr_n0" ] &&
			! grep -q "^$1 " /proc/modules && return 0 ;;
	esac
	diag "insmod $1 $2: exit $_pr_rc, '$_pr_err'; the log said '$_pr_log' $((_pr_n1 - _pr_n0)) times"
	return 1
}

suite_end() {
	read -r _se_t1 _ < /proc/uptime
	diag "$_suite took $(awk -v a="$_sb_t0" -v b="$_se_t1" 'BEGIN { printf "%.1f", b - a }') s"
	echo "<<<KTAP-BEGIN guest.$_suite>>>"
	echo "KTAP version 1"
	echo "1..1"
	echo "    KTAP version 1"
	echo "    # Subtest: $_suite"
	echo "    1..$_n"
	cat "/tmp/ktap.$_suite"
	if [ $_failed -eq 0 ]; then echo "ok 1 $_suite"; else echo "not ok 1 $_suite"; fi
	echo "<<<KTAP-END>>>"
	_suite=
	return $_failed
}

# The synchronous line to the host (qemu/hostd.py) on the second serial
# port: one command line out, one reply line back.
_hostline=
if [ -c /dev/ttyS1 ]; then
	stty -F /dev/ttyS1 raw -echo 115200 2>/dev/null
	exec 7<>/dev/ttyS1
	_hostline=1
fi
# hostd COMMAND...: COMMAND's reply. A "check" is counted (P2P-HOSTCHECKS)
# whether the host answers or not; use hostcheck for checks.
hostd() {
	[ "$1" = check ] && printf 'check %s\n' "$2" >> "$P2P_HOSTCHECKS"
	echo "$*" >&7
	read -r _hostd_reply <&7
	echo "$_hostd_reply"
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
# the result is recorded on the host side, the reply shown here. Without
# the host's line, or with a reply that is no verdict ("ok ..." or
# "not ok ..."), the check fails here: the host never judged it.
hostcheck() {
	_hc_what=$(printf '%s' "$*" | cut -c 1-160)
	if [ -z "$_hostline" ]; then
		printf 'check %s\n' "$1" >> "$P2P_HOSTCHECKS"
		fail "host check: $_hc_what (no host line: /dev/ttyS1 is not a char device)"
		return 1
	fi
	_hc_reply=$(hostd check "$@")
	case "$_hc_reply" in
	ok | "ok "* | "not ok" | "not ok "*) diag "host: $_hc_reply" ;;
	*) fail "host check: $_hc_what (reply '$_hc_reply')"; return 1 ;;
	esac
}

# jsoncheck NAME KEYS P2PCTL-ARGS...: the host parses what p2pctl ARGS -o json
# prints (python's json): one object, with the keys KEYS (a,b,c or -).
jsoncheck() {
	_jc_name=$1 _jc_keys=$2; shift 2
	hostcheck json "$_jc_name" "$_jc_keys" "$(p2pctl "$@" -o json 2>/dev/null | base64 | tr -d '\n')"
}

# known_warning_begin FUNCTION MAX MESSAGE REASON .. known_warning_end
# FUNCTION: a kernel warning the commands between provoke on purpose, in
# the kernel log beside the warnings (the log is dumped at the end of the
# boot): at most MAX "WARNING: ... at FILE:LINE FUNCTION+0x..." whose
# message (the line(s) just before, or the WARNING line) has MESSAGE, "-"
# for a bare WARN_ON. The host excuses those, and only those, with REASON.
known_warning_begin() {
	_kw_bad=
	[ $# -eq 4 ] && [ -n "$1" ] && [ -n "$3" ] || _kw_bad=1
	case "$2" in '' | *[!0-9]*) _kw_bad=1 ;; esac
	case "$3" in *'|'*) _kw_bad=1 ;; esac
	if [ -n "$_kw_bad" ]; then
		fail "known_warning_begin $*: FUNCTION MAX MESSAGE REASON (MAX a number, no | in MESSAGE)"
		return 1
	fi
	echo "P2P-KNOWN-WARNING-BEGIN $1 $2 | $3 | $4" > /dev/kmsg
}
known_warning_end() {
	echo "P2P-KNOWN-WARNING-END $1" > /dev/kmsg
}

# held p2pctl ARGS...: run a p2pctl transfer with --hold in the background.
# p2pbar zeroes p2pmem when it is freed, so the host must look at the bytes
# while p2pctl still holds them: $held_out is p2pctl's output once it has
# printed it; released returns p2pctl's exit status and lets it free.
held() {
	rm -f /tmp/held.fifo /tmp/held.out
	mkfifo /tmp/held.fifo
	_held_prog=$1; shift
	$_held_prog --hold "$@" </tmp/held.fifo >/tmp/held.out 2>/tmp/held.err &
	_held_pid=$!
	exec 8>/tmp/held.fifo
	_held_i=0
	while ! grep -q . /tmp/held.out && kill -0 $_held_pid 2>/dev/null && [ $_held_i -lt 6000 ]; do
		sleep 0.05; _held_i=$((_held_i + 1))
	done
	held_out=$(cat /tmp/held.out)
}
released() {
	exec 8>&-
	wait $_held_pid
}

# find_pci VENDOR DEVICE [N]: the Nth (default 1st) function with that ID
# e2fsprogs' mke2fs: Debian's busybox-static runs its own applets before
# any PATH lookup (SH_STANDALONE), and its mke2fs has neither -t nor ext4
mke2fs() {
	/usr/sbin/mke2fs "$@"
}

find_pci() {
	_fp_i=0
	for _fp_d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$_fp_d/vendor")" = "0x$1" ] && [ "$(cat "$_fp_d/device")" = "0x$2" ]; then
			_fp_i=$((_fp_i + 1))
			if [ "$_fp_i" = "${3:-1}" ]; then basename "$_fp_d"; return 0; fi
		fi
	done
	return 1
}

# bind DRIVER BDF: bind with driver_override, unbinding the current driver
bind() {
	_bind_dev=/sys/bus/pci/devices/$2
	[ -e "$_bind_dev/driver" ] && echo "$2" > "$_bind_dev/driver/unbind"
	echo "$1" > "$_bind_dev/driver_override"
	echo "$2" > /sys/bus/pci/drivers_probe
	[ "$(basename "$(readlink "$_bind_dev/driver")")" = "$1" ]
}

# nvme_blk BDF: /dev/nvmeXn1 of an NVMe controller bound to the nvme driver
nvme_blk() {
	for _nb_n in /sys/bus/pci/devices/$1/nvme/nvme*/nvme*n1; do
		[ -e "$_nb_n" ] && { echo "/dev/${_nb_n##*/}"; return 0; }
	done
	return 1
}

# p2pnvme_vectors BDF: "IRQ:CPUS" of each of p2pnvme's vectors of BDF
p2pnvme_vectors() {
	for _pv_irq in $(awk -v d="p2pnvme:$1:" 'index($0, d) { sub(":", "", $1); print $1 }' /proc/interrupts); do
		echo "$_pv_irq:$(cat /proc/irq/$_pv_irq/smp_affinity_list)"
	done
}
# cpu1_queue BDF: the I/O queue of BDF whose vector is CPU 1's alone (as
# p2pnvme names it in /proc/interrupts, qN), or nothing
cpu1_queue() {
	for _cq_v in $(p2pnvme_vectors "$1"); do
		[ "${_cq_v#*:}" = 1 ] &&
			grep "^ *${_cq_v%%:*}:" /proc/interrupts | sed -n 's/.*:q\([0-9]*\).*/\1/p'
	done | tail -n 1
}

load() { insmod "/lib/modules/$1.ko" ${2:+$2}; }

# wait_blk DEV [TENTHS]: wait up to TENTHS tenths of a second (default 50)
# for the block device DEV (p2pnvme's disk comes a moment after the bind);
# 0 once it is there
wait_blk() {
	_wb_i=0
	while [ ! -b "$1" ] && [ $_wb_i -lt "${2:-50}" ]; do sleep 0.1; _wb_i=$((_wb_i + 1)); done
	[ -b "$1" ]
}

# Filesystems on the bench's namespaces (disk, files, filecmd, filebench).
# has_fs FS: the kernel has FS
has_fs() { grep -qw "$1" /proc/filesystems; }
# mkfs_4k FS DEV DIR [OPTION...]: a fresh ext4 or xfs of 4 KiB blocks on
# DEV, OPTIONs added (mke2fs's or mkfs.xfs's); DIR, where it will be
# mounted: xfsprogs 6.1's mkfs.xfs refuses filesystems under 300 MB unless
# fstests' variables are set (validate_supported()); the kernel mounts them
# down to 16 MiB AGs, and the bench's namespaces are 64 MiB (qemu/run.sh)
mkfs_4k() {
	_m4_fs=$1 _m4_dev=$2 _m4_dir=$3
	shift 3
	case $_m4_fs in
	ext4) mke2fs -q -t ext4 -b 4096 "$@" -F "$_m4_dev" ;;
	xfs) TEST_DIR=$_m4_dir TEST_DEV=$_m4_dev QA_CHECK_FS=1 \
		mkfs.xfs -q -f -b size=4096 "$@" "$_m4_dev" ;;
	*) echo "mkfs_4k: $_m4_fs: ext4 or xfs" >&2; return 1 ;;
	esac
}
# read_sha FILE: its sha256 read by O_DIRECT (nothing from the page cache)
read_sha() {
	dd if="$1" bs=1M iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1
}

# kunit_ran SUITE: the KUnit suite ran (at its module's load: kunit.autorun)
# and its case lines are in debugfs, for dump_kunit; after each load of a
# KUnit module, for each of its suites
kunit_ran() {
	grep -Eq '^ +(not )?ok [0-9]+ ' "/sys/kernel/debug/kunit/$1/results" 2>/dev/null
}

# flavour: the kernel's flavour (qemu/configs): debug has kmemleak
flavour() {
	if [ -e /sys/kernel/debug/kmemleak ]; then echo debug; else echo base; fi
}
# kconfig CONFIG_X: the kernel has CONFIG_X (=y or =m): from
# /proc/config.gz where the kernel has it, else from its flavour's
# fragment (qemu/configs/debug.config) for the options listed here
kconfig() {
	if [ -r /proc/config.gz ]; then
		zcat /proc/config.gz | grep -Eq "^$1=(y|m)\$"
		return
	fi
	case "$1" in
	CONFIG_NVME_TARGET) [ "$(flavour)" = debug ]; return ;;
	esac
	echo "kconfig: $1 is not known without /proc/config.gz" >&2
	return 2
}

# Instruction counts: in a boot with QEMU's insn plugin (qemu/plugins/insn.c;
# P2P_INSN=1 of qemu/run.sh, or the insn test), where the guest has
# p2pinsn=1, each measured run is a window of its own, N, whose number its
# result line carries ("mark":N; scripts/insnlog.py reads both); a test's
# first and last windows are the counting's calibration (insn_cal).
# Without p2pinsn=1 nothing is marked. _insn_n: the last window's number.
# With p2pinsnprof=1 too (the plugin's profile mode, P2P_INSN_PROF=1 of
# qemu/run.sh), each window is preceded by what scripts/insn-prof.py needs
# to name its kernel code (insn_syms).
_insn_n=0
# insn_syms N: in a profile boot, before window N, the modules' load
# addresses (/proc/modules) and text symbols, and the kernel's _text
# (/proc/kallsyms), as a P2P-KSYMS block valid from window N on; printed
# again only when a module was loaded, unloaded or moved since the last
# one. Outside the window: nothing of it is counted.
_insn_mods=-
insn_syms() {
	[ "${p2pinsnprof:-0}" = 1 ] || return 0
	_is_m=$(awk '{ print $1, $6 }' /proc/modules)
	[ "$_is_m" != "$_insn_mods" ] || return 0
	_insn_mods=$_is_m
	echo "P2P-KSYMS-BEGIN $1"
	sed 's/^/M /' /proc/modules
	grep -E '^[0-9a-f]+ [tTwW] ([^ ]+	\[|_text$)' /proc/kallsyms | sed 's/^/S /'
	echo "P2P-KSYMS-END"
}
# insn_cal: the next window around a loop of a known user instruction count
# (p2pbench mark N LOOPS), its line P2P-INSN-CAL, against which the host
# checks the plugin's count
insn_cal() {
	[ "${p2pinsn:-0}" = 1 ] || return 0
	_insn_n=$((_insn_n + 1))
	insn_syms $_insn_n
	_insn_cal=$(p2pbench mark $_insn_n 1000000)
	check_eq "p2pbench mark $_insn_n 1000000 (instruction counting's calibration)" "$?" 0
	echo "P2P-INSN-CAL $_insn_cal"
}
# insn_win: the next window's number in insn_w, or null without p2pinsn=1
insn_win() {
	insn_w=null
	if [ "${p2pinsn:-0}" = 1 ]; then _insn_n=$((_insn_n + 1)); insn_w=$_insn_n; insn_syms $_insn_n; fi
}
# bench_run ARGS...: one measured run of p2pbench ARGS, in a window of its
# own (insn_win); its JSON as a P2P-BENCH line, its exit status a case
bench_run() {
	insn_win
	_br_w=$insn_w
	[ "$_br_w" != null ] || _br_w=
	_br_out=$(P2PBENCH_MARK=$_br_w p2pbench "$@")
	_br_rc=$?
	echo "P2P-BENCH $_br_out"
	check_eq "p2pbench $*" "$_br_rc" 0
}

# bench_pair SUITE [disk]: a benchmark's set-up (fiobench, cpuprof, insn;
# with disk: benchmark, filebench): the suite begun, p2pbar on the ivshmem
# BAR, p2pnvme on the first NVMe controller (with disk: loaded with disk=1,
# its disk /dev/p2pnvme0n1 there), nvme-pci keeping the identical second
# one; sets IVSHMEM, NVME0, NVME1, BLK1 and NG1 (nvme-pci's block and ng
# devices of NVME1).
bench_pair() {
	IVSHMEM=$(find_pci 1af4 1110)
	NVME0=$(find_pci 1b36 0010)
	NVME1=$(find_pci 1b36 0010 2)
	BLK1=$(nvme_blk "$NVME1")
	NG1=$(echo "$BLK1" | sed 's|/dev/nvme|/dev/ng|')
	suite_begin "$1"
	check "p2pbar loads" load p2pbar
	check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
	if [ "${2:-}" = disk ]; then
		check "p2pnvme loads with disk=1" load p2pnvme disk=1
		check "p2pnvme takes nvme0 $NVME0" bind p2pnvme "$NVME0"
		wait_blk /dev/p2pnvme0n1
		check "p2pnvme's disk /dev/p2pnvme0n1" test -b /dev/p2pnvme0n1
		check "nvme-pci keeps nvme1 ($BLK1)" test -b "$BLK1"
	else
		check "p2pnvme loads" load p2pnvme
		check "p2pnvme takes nvme0 $NVME0" bind p2pnvme "$NVME0"
		check "nvme-pci keeps nvme1 ($NG1)" test -c "$NG1"
	fi
}

# bench_unload NVME: a benchmark's end: p2pnvme lets go of NVME and
# unloads. io_uring lets go of the ring's files, and so of the module, in
# its ring exit work, after p2pbench is gone: up to 10 s for that, not for
# a leak.
bench_unload() {
	check "p2pnvme lets go of $1" sh -c "echo $1 > /sys/bus/pci/drivers/p2pnvme/unbind"
	_bu_t=0
	while [ "$(cat /sys/module/p2pnvme/refcnt)" != 0 ] && [ $_bu_t -lt 50 ]; do
		sleep 0.2
		_bu_t=$((_bu_t + 1))
	done
	diag "p2pnvme's module references: $(cat /sys/module/p2pnvme/refcnt) after $((_bu_t * 200)) ms"
	check "p2pnvme unloads after" rmmod p2pnvme
}

# bench_polled NVME_P2PNVME NVME_PCI: a benchmark's polled half. p2pnvme
# again with poll=1 on the first (no I/O interrupts), nvme-pci probed again
# on the second with two poll queues; sets BLK1 and NG1 to its devices.
bench_polled() {
	echo "$1" > /sys/bus/pci/drivers/p2pnvme/unbind
	check "p2pnvme again with poll=1" sh -c "rmmod p2pnvme && insmod /lib/modules/p2pnvme.ko poll=1"
	check "p2pnvme takes $1 again" bind p2pnvme "$1"
	echo 2 > /sys/module/nvme/parameters/poll_queues
	check "nvme-pci probes nvme1 again with poll queues" bind nvme "$2"
	for _bp_i in $(seq 50); do BLK1=$(nvme_blk "$2") && break; sleep 0.1; done
	NG1=$(echo "$BLK1" | sed 's|/dev/nvme|/dev/ng|')
}

# Print the KTAP of every KUnit suite not printed yet. Call it before
# unloading a test module: its results leave debugfs with it. A suite is
# printed once per load of its module: a module loaded again makes a new
# debugfs directory (a new inode number), printed again (the host keeps a
# second block of a name as NAME#2).
dump_kunit() {
	for _dk_r in /sys/kernel/debug/kunit/*/results; do
		[ -e "$_dk_r" ] || continue
		_dk_d=${_dk_r%/results}
		_dk_s=${_dk_d##*/}
		_dk_key="$_dk_s $(stat -c %i "$_dk_d" 2>/dev/null)"
		grep -qxF "$_dk_key" /tmp/kunit.dumped 2>/dev/null && continue
		echo "$_dk_key" >> /tmp/kunit.dumped
		echo "<<<KTAP-BEGIN kunit.$_dk_s>>>"
		cat "$_dk_r"
		echo "<<<KTAP-END>>>"
	done
}
