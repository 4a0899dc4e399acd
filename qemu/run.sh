#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot one topology profile and run one guest test in it.
#
#   qemu/run.sh [--flavour base|debug|nomove] [--series S] [--timeout SEC] [--quiet] PROFILE TEST
#
# Builds (or reuses) the test kernel (series 6.12 unless --series), the suite's modules and tools
# for it, an initramfs, fresh disk images and a BAR backing file, boots
# q35 under TCG, then runs the host checks. Everything lands in
# out/runs/PROFILE.TEST.FLAVOUR/: serial.log, ktap/*.ktap, the images and
# a status file that says "fail" until the run has been judged a pass.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../scripts/bench-lib.sh"

flavour=base
series=$P2P_RUNTIME_SERIES
timeout=
quiet=
while [ $# -gt 0 ]; do
	case "$1" in
	--flavour) flavour=$2; shift 2 ;;
	--series) series=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--quiet) quiet=1; shift ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
profile=${1:?profile}
test=${2:?test}
[ -f "$P2P_TOP/qemu/profiles/$profile.sh" ] || die "no profile $profile (see qemu/profiles/)"
# TEST may be A+B+...: those guest tests one after the other in one boot
for t in ${test//+/ }; do
	[ -x "$P2P_TOP/qemu/tests/$t.guest.sh" ] || die "no guest test $t (see qemu/tests/)"
done
# The insn test, the CPU-per-I/O regression check, is a measurement: it
# boots alone, with QEMU's instruction-counting plugin, without the nvme
# trace and on the TSC, as scripts/cpu-insn.sh --record boots it for the
# figure it is held to (qemu/insn-baseline); qemu/hostcheck.py judges it.
insn=${P2P_INSN:-0}
insn_prof=${P2P_INSN_PROF:-0}
[ "$insn_prof" = 0 ] || insn=1
nvme_trace=${P2P_NVME_TRACE:-1}
if [[ "+$test+" == *+insn+* ]]; then
	[ "$test" = insn ] || die "the insn test is a measurement: it boots alone, not in $test"
	insn=1 nvme_trace=0
fi

OUT=$P2P_TOP/out
tag=$flavour
[ "$series" = "$P2P_RUNTIME_SERIES" ] || tag=$flavour-$series
RUN=$OUT/runs/$profile.$test.$tag
rm -rf "$RUN"
mkdir -p "$RUN/ktap"
touch "$OUT/.build.lock"
echo fail > "$RUN/status"
trap 'echo "run.sh: failed at line $LINENO: $BASH_COMMAND" | tee -a "$RUN/serial.log" >&2' ERR

bench_run_deps
kdir=$("$P2P_TOP/qemu/kernel.sh" build "$series" "$flavour")
# Parallel runs share the module and tool builds: one builder at a time.
initrd=$RUN/initramfs.cpio
# The dkms test boots the modules DKMS built (qemu/dkms.sh), not the bench's.
builder=modules.sh
[ "$test" = dkms ] && builder=dkms.sh
# Within one make check the tree does not change (bench.sh sets
# P2P_INITRD_DIR): each kernel's modules and initramfs are made once, by its
# first boot, and the others copy them (a no-op module build and a new
# initramfs cost 7 s a boot here, serialized under the lock).
shared=${P2P_INITRD_DIR:+$P2P_INITRD_DIR/$(basename "$kdir")-${builder%.sh}.cpio}
flock "$OUT/.build.lock" sh -c 'if [ -n "$5" ] && [ -s "$5" ]; then cp "$5" "$3"; exit 0; fi
	make -s -C "$1/tools" >/dev/null &&
	mods=$("$1/qemu/$4" "$2") && "$1/qemu/initramfs.sh" "$3" "$mods" &&
	{ [ -z "$5" ] || cp "$3" "$5"; }' \
	sh "$P2P_TOP" "$kdir" "$initrd" "$builder" "$shared"

# Fresh images: patterned namespaces, a zeroed BAR backing file.
mkdir -p "$OUT/images"
for img in nvme0 nvme1; do
	flock "$OUT/.build.lock" sh -c '[ -s "$1" ] || python3 "$2" "$1" $((64 << 20)) "$3"' \
		sh "$OUT/images/$img.pattern" "$P2P_TOP/qemu/mkimage.py" "$img"
	cp "$OUT/images/$img.pattern" "$RUN/$img.img"
done

nvme_dev() {	# nvme_dev ID BUS [extra device properties]
	echo "-drive file=$RUN/$1.img,if=none,id=drv-$1,format=raw,cache=writethrough"
	echo "-device nvme,drive=drv-$1,serial=$1,id=$1,bus=$2${3:+,$3}"
}
pcie_switch() {	# pcie_switch N: root port rp0 -> x3130 up0 -> downstream ports dn0..dnN-1
	local i
	echo "-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,slot=1,addr=0x4"
	echo "-device x3130-upstream,id=up0,bus=rp0"
	for ((i = 0; i < $1; i++)); do
		echo "-device xio3130-downstream,id=dn$i,bus=up0,chassis=$((i + 2)),slot=$i"
	done
}
bar_dev() {	# bar_dev ID BUS [extra]: ivshmem-plain, 64 MiB RAM the host can read
	truncate -s 64M "$RUN/$1.mem"
	echo "-object memory-backend-file,id=mem-$1,size=64M,mem-path=$RUN/$1.mem,share=on"
	echo "-device ivshmem-plain,memdev=mem-$1,id=$1,bus=$2${3:+,$3}"
}
P_APPEND= P_LIMIT= P_DISTANCE=-2 P_MEMNODE=
. "$P2P_TOP/qemu/profiles/$profile.sh"

append="console=ttyS0 loglevel=3 log_buf_len=16M panic=-1 oops=panic kunit.enable=1 kunit.autorun=1 p2ptest=$test p2pprofile=$profile"
append+=" p2pexpect=$P_EXPECT p2pdistance=$P_DISTANCE${P_LIMIT:+ p2plimit=$P_LIMIT} $P_APPEND"
# the kernel the run asked for (qemu/configs): a test that depends on its
# options holds the kernel to it (gpuexp on nomove), rather than learning
# them from the kernel it got
append+=" p2pflavour=$flavour"
# the failnth test's probe sweep: every K-th fault site (1: all of them)
append+="${P2P_FAILNTH_STEP:+ p2pfailnth_step=$P2P_FAILNTH_STEP}"
append+="${P2P_EXTRA_APPEND:+ $P2P_EXTRA_APPEND}"
# P2P_INSN=1, and the insn test: QEMU loads the instruction-counting TCG
# plugin (qemu/plugins/insn.c, built by qemu/extools.sh plugin, which
# bench_run_deps builds beforehand), which writes the guest's instruction
# counts at each marker the guest executes to $RUN/insn.log; the guest
# gets p2pinsn=1, on which the benchmark tests mark their measured windows
# (scripts/cpu-insn.sh). QEMU keeps MTTCG and real time (no -icount), so
# polled I/O still lets the controllers run. Without the plugin the run
# fails here, said in its serial.log. P2P_INSN_PROF=1: the plugin's
# profile mode too (prof=on: each window's blocks in $RUN/insn-prof.N),
# the guest printing its module symbols before the windows (p2pinsnprof=1)
# and the booted kernel's System.map beside them, which scripts/insn-prof.py
# names the blocks with (scripts/cpu-insn.sh --profile).
plugin=()
if [ "$insn" = 1 ]; then
	so=$("$P2P_TOP/qemu/extools.sh" plugin) || {
		echo "run.sh: QEMU's insn plugin could not be built (qemu/extools.sh plugin)" |
			tee -a "$RUN/serial.log" >&2
		exit 1
	}
	plugin=(-plugin "file=$so,out=$RUN/insn.log")
	append+=" p2pinsn=1"
	if [ "$insn_prof" != 0 ]; then
		plugin=(-plugin "file=$so,out=$RUN/insn.log,prof=on")
		append+=" p2pinsnprof=1"
		cp "$kdir/System.map" "$RUN/System.map"
	fi
fi
# the insn test's clocksource: the TSC, trusted, as the benchmarks' default
# (scripts/bench-lib.sh: the watchdog may move a TCG guest to HPET)
[ "$test" != insn ] || append+=" $(bench_clock_append tsc)"
mem=1G
[ "$flavour" = debug ] && mem=${P2P_DEBUG_MEM:-1536M}
# A NUMA node with memory and no CPUs, P_MEMNODE (M or G) of the guest's
# memory, which stays the size it is: what a GH200's or GB200's HBM is to
# the kernel, for p2pgpu's nvidia coherent exports (the gpuexp test, whose
# boots have 256M unless their profile says otherwise; the other boots keep
# one node). The guest sees it only with CONFIG_NUMA (qemu/configs).
[[ "+$test+" == *+gpuexp+* ]] && P_MEMNODE=${P_MEMNODE:-256M}
mib() {	# mib SIZE: a size with QEMU's M or G suffix, in MiB
	case "$1" in
	*G) echo $((${1%G} * 1024)) ;;
	*M) echo "${1%M}" ;;
	*) die "memory size $1: give it in M or G" ;;
	esac
}
memory=(-m "$mem")
if [ -n "$P_MEMNODE" ]; then
	node1=$(mib "$P_MEMNODE")
	node0=$(($(mib "$mem") - node1))
	[ "$node0" -ge 512 ] || die "P_MEMNODE=$P_MEMNODE leaves the CPUs' node $node0 MiB of $mem"
	memory+=(-object "memory-backend-ram,id=ram-node0,size=${node0}M"
		-numa "node,nodeid=0,cpus=0-1,memdev=ram-node0"
		-object "memory-backend-ram,id=ram-node1,size=${node1}M"
		-numa "node,nodeid=1,memdev=ram-node1")
fi
# KASAN + lockdep under TCG run a test 10-20 times slower
[ -n "$timeout" ] || { [ "$flavour" = debug ] && timeout=1800 || timeout=600; }
# QEMU's nvme trace, the host's view of the controllers: data DMA addresses,
# commands fetched and completed, I/O SQs created and deleted, CC.EN
# set and cleared (qemu/hostcheck.py reads it). P2P_NVME_TRACE=0 boots
# without it, for the benchmarks, which check no DMA: its three lines an
# I/O cost either driver alike, but under TCG they took about a third of
# the IOPS and made the two drivers' ratios noisier (Documentation/bench.rst).
trace=(-trace "events=$RUN/trace-events,file=$RUN/nvme-dma.log")
printf '%s\n' pci_nvme_map_addr pci_nvme_io_cmd pci_nvme_admin_cmd pci_nvme_enqueue_req_completion pci_nvme_setfeat \
	pci_nvme_create_sq pci_nvme_del_sq pci_nvme_mmio_stopped pci_nvme_mmio_start_success \
	> "$RUN/trace-events"
[ "$nvme_trace" != 0 ] || trace=()
cmd=(qemu-system-x86_64 -machine q35 -accel tcg -cpu "$P_CPU" -smp 2 "${memory[@]}"
	-nodefaults -display none -no-reboot
	-serial "file:$RUN/serial.log"
	-serial "unix:$RUN/hostd.sock,server=on,wait=off"
	-qmp "unix:$RUN/qmp.sock,server=on,wait=off"
	"${trace[@]}" "${plugin[@]}"
	-kernel "$kdir/arch/x86/boot/bzImage" -initrd "$initrd" -append "$append"
	"${P_DEVICES[@]}")
printf '%q ' "${cmd[@]}" > "$RUN/qemu.cmd"

[ -n "$quiet" ] || say "boot: $profile ($P_DESC), test $test, $series $flavour kernel"
start=$(date +%s)
# A guest prints its first console line within seconds; one that printed
# nothing at all after P2P_SILENT_SECS never started (QEMU or firmware
# stuck before the kernel, seen once under load): that boot is tried again,
# once, and the run says so (retried). A kernel that hangs after its first
# line is not retried: the timeout judges it.
# A base kernel's first line comes within 10 s here, the debug kernel's
# within 60 s, each on a loaded host.
silent=${P2P_SILENT_SECS:-60}
[ "$flavour" != debug ] || silent=${P2P_SILENT_SECS:-150}
for attempt in 1 2; do
	: > "$RUN/serial.log"
	set +e
	timeout --foreground "$timeout" "${cmd[@]}" >"$RUN/qemu.log" 2>&1 &
	qpid=$!
	python3 "$P2P_TOP/qemu/hostd.py" "$RUN" 2>>"$RUN/hostd.log" &
	hpid=$!
	( sleep "$silent"; [ -s "$RUN/serial.log" ] || { echo silent > "$RUN/silent"
		timeout 20 python3 "$P2P_TOP/qemu/hostd.py" --diag "$RUN" > "$RUN/silent.$attempt.diag" 2>&1
		cp "$RUN/qemu.log" "$RUN/silent.$attempt.qemu.log"; kill $qpid; } ) \
		2>/dev/null &
	wpid=$!
	qrc=0
	wait $qpid || qrc=$?
	kill $wpid $hpid 2>/dev/null || true
	wait $wpid $hpid 2>/dev/null || true
	set -e
	if [ -e "$RUN/silent" ] && [ "$attempt" = 1 ]; then
		rm -f "$RUN/silent"
		echo "no console output in ${silent}s: booted again" > "$RUN/retried"
		say "$profile.$test.$tag: no console output in ${silent}s, booting again"
		continue
	fi
	break
done
secs=$(( $(date +%s) - start ))
echo "$secs" > "$RUN/seconds"
if [ $qrc -eq 124 ]; then
	echo "P2P-TIMEOUT after ${timeout}s" >> "$RUN/serial.log"
elif [ $qrc -gt 128 ] && [ $qrc -lt 160 ]; then
	# timeout(1) passes on the signal that ended QEMU: an emulator crash,
	# said as such (the guest's last lines are above it)
	echo "P2P-QEMU-DIED of SIG$(kill -l $((qrc - 128))) after ${secs}s" >> "$RUN/serial.log"
fi

trap - ERR
# Judged once, here (qemu/judge.sh): the kernel's own KTAP parser and
# qemu/ktap.py's own count of the lines printed; a suite whose cases never
# ran, a parser error, a plan that does not match, a "not ok" anywhere or
# QEMU's own failure fails the run, each with its reason in $RUN/reasons.
kunit_py=$("$P2P_TOP/qemu/kernel.sh" source "$P2P_RUNTIME_SERIES")/tools/testing/kunit/kunit.py
"$P2P_TOP/qemu/judge.sh" "$RUN" "$qrc" "$kunit_py" || true
# A passing run keeps what a reader needs (logs, KTAP, host results) and
# gives its disk back: the namespace images, the BAR backing file, the
# initramfs copy and the DMA trace are ~230 MB a run, 12 GB over a full check
# (a CI machine ran out of space at its 44th run). A failing run keeps them
# as evidence; P2P_KEEP=1 keeps them always.
if [ "$(cat "$RUN/status")" = pass ] && [ -z "${P2P_KEEP:-}" ]; then
	rm -f "$RUN"/*.img "$RUN"/*.mem "$RUN/initramfs.cpio" "$RUN/nvme-dma.log"
fi
[ -n "$quiet" ] || say "done: $profile.$test.$tag in ${secs}s: $(cat "$RUN/status"), $(cat "$RUN/summary" 2>/dev/null) (qemu exit $qrc, log $RUN/serial.log)"
[ "$(cat "$RUN/status")" = pass ]
