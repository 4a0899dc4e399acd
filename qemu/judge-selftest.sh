#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The judge judged: crafted runs fed to the real tail of qemu/run.sh
# (qemu/judge.sh: ktap.py extract, hostcheck.py, ktap.py judge), to
# hostcheck.py's byte checks, to ktap.py count and summary and to bench.sh's
# checkpatch step. Each fixture of ../shared/notes/bench-honesty.md (F1-F13
# and the known issue) must FAIL; a well-formed run must pass, and for
# every run judged, the cases counted must be the case lines printed.
# Host only, seconds. Prints one KTAP document, a case per fixture.
#
#   qemu/judge-selftest.sh KUNIT_PY
set -uo pipefail
kunit_py=${1:?kunit.py of a kernel tree}
top=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT; [ -z "${KEEP:-}" ] || echo "# fixtures in $T" >&2
n=0
lines=()
res() {	# res ok|"not ok" DESCRIPTION (no '#': KTAP reads a directive there)
	n=$((n + 1))
	case "$2" in *'#'*) set -- "not ok" "a case named with a '#': ${2//#/ }" ;; esac
	lines+=("    $1 $n $2")
}
# must_fail DESCRIPTION COMMAND...: the judge must say no
must_fail() { if "${@:2}" >"$T/last.out" 2>&1; then res "not ok" "$1"; sed 's/^/    # /' "$T/last.out" | tail -n 5 >> "$T/diag"; else res ok "$1"; fi; }
must_pass() { if "${@:2}" >"$T/last.out" 2>&1; then res ok "$1"; else res "not ok" "$1"; sed 's/^/    # /' "$T/last.out" | tail -n 8 >> "$T/diag"; fi; }

suite() {	# suite NAME [RESULT...]: a guest suite's block as lib.sh prints it
	local name=$1 i=0
	shift
	echo "<<<KTAP-BEGIN guest.$name>>>"
	echo "KTAP version 1"; echo "1..1"
	echo "    KTAP version 1"; echo "    # Subtest: $name"; echo "    1..$#"
	for r in "$@"; do i=$((i + 1)); echo "    ${r/ N / $i }"; done
	if printf '%s\n' "$@" | grep -q '^not ok'; then echo "not ok 1 $name"; else echo "ok 1 $name"; fi
	echo "<<<KTAP-END>>>"
}
dmesg_block() {	# dmesg_block [LINE...]: the kernel log dump at the end of a boot
	echo "<<<DMESG-BEGIN>>>"
	echo "[    0.000000] Linux version 6.12.117 (fixture)"
	for l in "$@"; do echo "[    1.000000] $l"; done
	echo "<<<DMESG-END>>>"
}
tail_lines() { echo "P2P-HOSTCHECKS ${1:-0}"; echo "P2P-EXIT 0"; }
mkrun() {	# mkrun NAME < serial.log: a run dir as QEMU leaves it
	rm -rf "$T/runs/$1"
	mkdir -p "$T/runs/$1"
	cat > "$T/runs/$1/serial.log"
	: > "$T/runs/$1/hostd.log"
}
judge() { "$top/qemu/judge.sh" "$T/runs/$1" "${2:-0}" "$kunit_py"; }
# the cases a run's documents print, counted by grep alone: the leaf result
# lines (not the line that closes a suite) = passed + failed + skipped
lines_match() {
	local d=$T/runs/$1 leaves sum
	leaves=$(cat "$d"/ktap/*.ktap | grep -cE '^    (ok|not ok) [0-9]+')
	sum=$(awk '{ print $1 + $3 + $5 }' "$d/summary")
	[ "$leaves" -gt 0 ] && [ "$leaves" = "$sum" ] || { echo "case lines $leaves, summary $(cat "$d/summary")"; return 1; }
}
host_has() { grep -qE "$2" "$T/runs/$1/ktap/host.ktap"; }

good() {	# a well-formed boot's serial.log, with extra log lines $@
	echo "P2P-BOOTED 6.12.117"
	echo "P2P-EXPECT guest.demo"
	suite demo "ok N a" "ok N b # SKIP not here"
	dmesg_block "$@"
	tail_lines
}

# --- the positive control: a good run passes, every case counted ---
good | mkrun good.demo.base
must_pass "a well-formed run is judged pass" judge good.demo.base
must_pass "... its summary counts every case line it printed" lines_match good.demo.base
must_pass "... and its status says pass" grep -qx pass "$T/runs/good.demo.base/status"

# --- the known issue: a suite whose numbering restarts (jsoncheck's _n) ---
{
	echo "P2P-EXPECT guest.bench"
	echo "<<<KTAP-BEGIN guest.bench>>>"
	printf '%s\n' "KTAP version 1" "1..1" "    KTAP version 1" "    # Subtest: bench" "    1..4" \
		"    ok 1 a" "    ok 2 b" "    ok 1 json" "    not ok 2 c" "not ok 1 bench"
	echo "<<<KTAP-END>>>"
	dmesg_block; tail_lines
} | mkrun known.bench.base
must_fail "known issue: a suite whose numbering restarts fails its run" judge known.bench.base
must_pass "... saying why: kunit.py's error on the restarted numbering" \
	grep -q 'Expected test number 3 but found 1' "$T/runs/known.bench.base/reasons"

# --- a kernel panic during a bench boot (no P2P-EXIT, QEMU exits 0) ---
{
	echo "P2P-EXPECT guest.demo"
	suite demo "ok N a"
	echo "[   12.0] Kernel panic - not syncing: Fatal exception"
} | mkrun panic.bench.base
must_fail "a kernel panic after the suites, QEMU exit 0, fails the run" judge panic.bench.base

# --- F1: runs judged one by one; the verdict sums them ---
{
	echo "P2P-EXPECT guest.crash"
	echo "<<<KTAP-BEGIN guest.crash>>>"
	printf '%s\n' "KTAP version 1" "1..1" "    KTAP version 1" "    # Subtest: crash" "    1..2" \
		"    ok 1 a" "    ok 1 b" "    ok 2 c" "ok 1 crash"
	echo "<<<KTAP-END>>>"
	dmesg_block; tail_lines
} | mkrun a.bench.base
judge a.bench.base >/dev/null
{
	echo "P2P-EXPECT guest.fails"
	suite fails "not ok N the only case"
	dmesg_block; tail_lines
} | mkrun z.fails.base
judge z.fails.base >/dev/null
must_fail "F1: a crashed suite's run is failed on its own" grep -qx pass "$T/runs/a.bench.base/status"
must_fail "F1: summary over {crashed suite, later run with not ok} fails" \
	python3 "$top/qemu/ktap.py" summary "$T" good.demo.base a.bench.base z.fails.base
must_pass "F1: ... and counts the later run's failure" sh -c \
	"python3 '$top/qemu/ktap.py' summary '$T' good.demo.base z.fails.base | grep -q 'FAILED: z.fails.base: not ok'"

# --- F2: QEMU's death after P2P-EXIT 0; a status of fail ---
{ good; echo "P2P-QEMU-DIED of SIGSEGV after 75s"; } | mkrun died.aer.base
judge died.aer.base 139 >/dev/null
must_pass "F2: P2P-EXIT 0 then P2P-QEMU-DIED: not ok 1 guest test script completed" \
	host_has died.aer.base '^    not ok 1 guest test script completed'
must_fail "F2: ... and the run fails" grep -qx pass "$T/runs/died.aer.base/status"
good | mkrun status.aer.base
judge status.aer.base >/dev/null
echo fail > "$T/runs/status.aer.base/status"
must_fail "F2: summary fails a run whose status is fail, all its KTAP ok" \
	python3 "$top/qemu/ktap.py" summary "$T" status.aer.base
must_fail "F2: a QEMU exit status other than 0 fails the run" judge good.demo.base 1

# --- F3: a matrix line run.sh refuses leaves no run dir ---
must_fail "F3: run.sh refuses a test that does not exist" "$top/qemu/run.sh" switch nosuchtest
must_fail "F3: ... and summary fails the selected run with no dir" \
	python3 "$top/qemu/ktap.py" summary "$T" good.demo.base switch.nosuchtest.base
must_fail "F3: summary with no run selected fails" python3 "$top/qemu/ktap.py" summary "$T"

# --- F4: a stale results JSON and a kunit.py that does not run ---
printf '%s\n' "KTAP version 1" "1..1" "    KTAP version 1" "    # Subtest: s" "    1..1" "    not ok 1 x" \
	"not ok 1 s" > "$T/stale.ktap"
echo '{"name": "x", "sub_groups": [], "test_cases": [{"name": "a", "status": "PASS"}]}' > "$T/stale.json"
must_fail "F4: count with a stale JSON and no kunit.py fails" \
	python3 "$top/qemu/ktap.py" count "$T/nonexistent/kunit.py" "$T/stale.ktap" --json "$T/stale.json"
printf '%s\n' "KTAP version 1" "1..1" "    KTAP version 1" "    # Subtest: s" "    1..1" "    ok 1 x" \
	"ok 1 s" > "$T/fine.ktap"
must_fail "F4: ... a whole, passing document too, when kunit.py does not run" \
	python3 "$top/qemu/ktap.py" count "$T/nonexistent/kunit.py" "$T/fine.ktap" --json "$T/stale.json"

# --- F5: known warnings by function, message, window and count ---
warn() {	# warn FUNCTION MESSAGE: a kernel WARN's lines as printk leaves them
	echo "------------[ cut here ]------------"
	echo "$2"
	echo "WARNING: CPU: 1 PID: 312 at kernel/dma/debug.c:570 $1+0x2d0/0x3a0"
	echo "Call Trace:"
}
cacheline="DMA-API: p2pbar 0000:03:00.0: cacheline tracking EEXIST, overlapping mappings aren't supported"
unmap="DMA-API: p2pnvme 0000:02:00.0: device driver frees DMA memory with different size"
declare_w="P2P-KNOWN-WARNING-BEGIN add_dma_entry 1 | cacheline tracking EEXIST | two attachments map one MMIO range"
end_w="P2P-KNOWN-WARNING-END add_dma_entry"
known_run() {	# known_run NAME DMA-API-ERRORS DMESG-LINE...
	local name=$1 errs=$2
	shift 2
	{
		echo "P2P-EXPECT guest.demo"
		suite demo "ok N a"
		mapfile -t dl < <(printf '%s\n' "$@")
		dmesg_block "${dl[@]}"
		echo "P2P-DMA-API-ERRORS $errs"
		tail_lines
	} | mkrun "$name"
}
mapfile -t W1 < <(warn add_dma_entry "$cacheline")
mapfile -t W2 < <(warn check_unmap "$unmap")
known_run k1.gpuexp.debug 1 "$declare_w" "${W1[@]}" "$end_w"
must_pass "F5: the declared warning, in its window, once: the run passes (SKIP)" judge k1.gpuexp.debug
must_pass "F5: ... said as a SKIP with its reason" host_has k1.gpuexp.debug 'ok [0-9]+ kernel log has no WARNING # SKIP known'
known_run k2.gpuexp.debug 2 "$declare_w" "${W1[@]}" "${W2[@]}" "$end_w"
must_fail "F5: a check_unmap warning inside the declared window fails" judge k2.gpuexp.debug
known_run k3.gpuexp.debug 2 "$declare_w" "${W1[@]}" "$end_w"
must_fail "F5: the excused warning with P2P-DMA-API-ERRORS 2 fails (an error went unprinted)" judge k3.gpuexp.debug
known_run k4.gpuexp.debug 1 "$declare_w" "$end_w" "${W1[@]}"
must_fail "F5: the declared warning after its window's end fails" judge k4.gpuexp.debug
known_run k5.gpuexp.debug 2 "$declare_w" "${W1[@]}" "${W1[@]}" "$end_w"
must_fail "F5: the declared warning more often than declared fails" judge k5.gpuexp.debug
{
	echo "P2P-EXPECT guest.demo"; suite demo "ok N a"; dmesg_block; tail_lines
} | mkrun k6.gpuexp.debug
must_fail "F5: a debug boot without P2P-DMA-API-ERRORS fails" judge k6.gpuexp.debug

# --- F6: the manifest ---
{
	echo "P2P-EXPECT guest.demo guest.provider kunit.p2pbar_live"
	suite demo "ok N a"; dmesg_block; tail_lines
} | mkrun m1.provider.base
must_fail "F6: a declared suite that never printed (a test program not found) fails" judge m1.provider.base
{
	echo "P2P-EXPECT guest.demo"
	suite demo "ok N a"; suite other "ok N b"; dmesg_block; tail_lines
} | mkrun m2.provider.base
must_fail "F6: a suite printed but never declared fails" judge m2.provider.base
{ suite demo "ok N a"; dmesg_block; tail_lines; } | mkrun m3.provider.base
must_fail "F6: a guest that declared nothing fails" judge m3.provider.base

# --- F7: host checks that never reached the host ---
good | sed 's/^P2P-HOSTCHECKS 0/P2P-HOSTCHECKS 3/' | mkrun h1.bench.base
printf 'check equal 4 bar0@0 nvme0@0 -> ok\ncheck dma-mark -> ok marked\n' > "$T/runs/h1.bench.base/hostd.log"
must_fail "F7: P2P-HOSTCHECKS 3 with 2 checks received fails" judge h1.bench.base
good | grep -v '^P2P-HOSTCHECKS' | mkrun h2.bench.base
must_fail "F7: a guest that did not count its host checks fails" judge h2.bench.base

# --- F8: a suite printed twice ---
{
	echo "P2P-EXPECT guest.demo"
	suite demo "not ok N a"; suite demo "ok N a"; dmesg_block; tail_lines
} | mkrun dup.provider.base
must_fail "F8: a failing suite printed again, passing, still fails" judge dup.provider.base
must_pass "F8: ... both copies are kept (the second as NAME, hash, 2)" test -s "$T/runs/dup.provider.base/ktap/guest.demo#2.ktap"

# --- F9, F10: hostcheck's byte and trace checks ---
hc() {	# hc RUN WORDS...: the status hostd would record
	python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from hostcheck import do_check
st, d, n = do_check(sys.argv[2], sys.argv[3:]); print(st, d, n); sys.exit(0 if st == "ok" and "# SKIP" not in (d or "") else 1)' \
		"$top/qemu" "$@"
}
hc_skip() { { hc "$@" || true; } | grep -q '^ok .*# SKIP'; }
R=$T/runs/bytes
mkdir -p "$R" "$T/images"
head -c 1048576 /dev/urandom > "$R/nvme0.img"
cp "$R/nvme0.img" "$T/images/nvme0.pattern"
head -c 65536 /dev/urandom > "$R/bar0.mem"
truncate -s 65536 "$R/zero.mem"
must_fail "F9: equal with limit= over a BAR of other bytes fails" hc "$R" equal 4096 bar0@0 nvme0@0 limit=x
must_pass "F9: equal with limit= over an untouched (zero) BAR is the limitation's SKIP" hc_skip "$R" equal 4096 zero@0 nvme0@0 limit=x
cp "$R/nvme0.img" "$R/same.img"
must_fail "F9: equal with limit= over equal bytes fails (the limit is gone)" hc "$R" equal 4096 same@0 nvme0@0 limit=x
must_pass "F9: equal without limit over equal bytes passes" hc "$R" equal 4096 same@0 nvme0@0
must_fail "F10: pristine past the end of the image fails" hc "$R" pristine 4096 nvme0@0x40000000
must_fail "F10: pristine of 0 bytes fails" hc "$R" pristine 0 nvme0@0
must_fail "F10: equal of 0 bytes fails" hc "$R" equal 0 nvme0@0 same@0
must_fail "F10: fill of 0 bytes fails" hc "$R" fill 0 zero@0 0
must_pass "F10: pristine of an untouched image passes" hc "$R" pristine 4096 nvme0@4096
echo 0 > "$R/dma.mark"
must_fail "F10: dma-none without a trace file fails" hc "$R" dma-none
must_fail "F10: io-none without a trace file fails" hc "$R" io-none
echo "some other event" > "$R/nvme-dma.log"
must_fail "F10: dma-mark on a trace with no nvme event fails" hc "$R" dma-mark
echo "pci_nvme_admin_cmd cid 1 sqid 0 opc 0x6 opname 'NVME_ADM_CMD_IDENTIFY'" > "$R/nvme-dma.log"
hc "$R" dma-mark >/dev/null
mv "$R/nvme-dma.log" "$R/old.log"
cp "$R/old.log" "$R/nvme-dma.log"
must_fail "F10: dma-none on a trace replaced since the mark fails" hc "$R" dma-none
hc "$R" dma-mark >/dev/null
must_pass "F10: dma-none on a live trace with no DMA since the mark passes" hc "$R" dma-none
must_pass "F10: dma-notin with no DMA since the mark passes" hc "$R" dma-notin 0x10000 0x80000000
echo "pci_nvme_map_addr addr 0x7fffff00 len 4096" >> "$R/nvme-dma.log"
must_fail "F10: dma-notin, a mapping that overlaps the range's start, fails" hc "$R" dma-notin 0x10000 0x80000000
hc "$R" dma-mark >/dev/null
echo "pci_nvme_map_addr addr 0x80010000 len 4096" >> "$R/nvme-dma.log"
must_pass "F10: dma-notin, a mapping just past the range, passes" hc "$R" dma-notin 0x10000 0x80000000
must_fail "F10: dma-notin of 0 bytes fails" hc "$R" dma-notin 0 0x80000000
rm -f "$R/dma.mark"
must_fail "F7: a check with no mark answers not ok (hostd does not die)" hc "$R" dma-in 4096 0x1000

# --- F11: checkpatch that cannot run ---
must_fail "F11: bench.sh's checkpatch step fails without checkpatch.pl" "$top/qemu/bench.sh" checkpatch "$T/nonexistent"

# --- F12: not ok ... # SKIP ---
printf '%s\n' "KTAP version 1" "1..1" "    KTAP version 1" "    # Subtest: s" "    1..2" "    ok 1 a" \
	"    not ok 2 x # SKIP y" "not ok 1 s" > "$T/f12.ktap"
must_pass "F12: a failing line with a SKIP directive is counted failed" sh -c \
	"python3 '$top/qemu/ktap.py' count '$kunit_py' '$T/f12.ktap' | tail -n 1 | grep -qx '1 passed, 1 failed, 0 skipped'"

# --- F13: the kernel log's other reports ---
for l in "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:" \
	"rcu: INFO: rcu_preempt self-detected stall on CPU" \
	"INFO: task kworker/0:1:42 blocked for more than 20 seconds." \
	"watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [p2pnvme-test:99]" \
	"UBSAN: shift-out-of-bounds in drivers/p2pnvme/io.c:123:4" \
	"kernel BUG at drivers/p2pbar/main.c:42!"; do
	good "$l" | mkrun splat.bench.base
	# (no '#' in a case's name: KTAP reads a directive there)
	must_fail "F13: '$(printf '%.40s' "${l//#/ }")...' in the kernel log fails the run" judge splat.bench.base
done

# --- plans: a suite's plan and its results ---
{
	echo "P2P-EXPECT guest.demo"
	echo "<<<KTAP-BEGIN guest.demo>>>"
	printf '%s\n' "KTAP version 1" "1..1" "    KTAP version 1" "    # Subtest: demo" "    1..3" \
		"    ok 1 a" "    ok 2 b" "ok 1 demo"
	echo "<<<KTAP-END>>>"
	dmesg_block; tail_lines
} | mkrun plan.demo.base
must_fail "a plan of 3 with 2 results fails" judge plan.demo.base
{
	echo "P2P-EXPECT guest.demo"
	echo "<<<KTAP-BEGIN guest.demo>>>"
	printf '%s\n' "KTAP version 1" "1..1" "    KTAP version 1" "    # Subtest: demo" "    1..nvme-info:missing" \
		"    ok 1 a" "    ok 2 b" "ok 1 demo"
	echo "<<<KTAP-END>>>"
	dmesg_block; tail_lines
} | mkrun noplan.demo.base
must_fail "a suite with no plan (1..nvme-info:missing) fails" judge noplan.demo.base
{
	echo "P2P-EXPECT kunit.param"
	echo "<<<KTAP-BEGIN kunit.param>>>"
	printf '%s\n' "KTAP version 1" "1..1" "    KTAP version 1" "    # Subtest: param" "    1..2" \
		"        KTAP version 1" "        # Subtest: cases" "        ok 1 p1" "        ok 2 p2" \
		"    ok 1 cases" "    ok 2 plain" "ok 1 param"
	echo "<<<KTAP-END>>>"
	dmesg_block; tail_lines
} | mkrun param.kunit.base
must_pass "KUnit's parameterised cases (no plan of their own) pass" judge param.kunit.base
must_pass "... counted case by case (3 cases + the host suite's)" sh -c \
	"python3 '$top/qemu/ktap.py' count '$kunit_py' '$T/runs/param.kunit.base/ktap/kunit.param.ktap' | tail -n 1 | grep -qx '3 passed, 0 failed, 0 skipped'"

# --- the insn test's regression check (hostcheck.py, scripts/insnlog.py) ---
# insn_run NAME ENGINE URING NG [CAL_EXTRA]: a run of the insn test, its
# rows (1000 reads each) costing ENGINE, URING and NG instructions a read
# (engine-uring-reg, nvme-pci-uring, nvme-pci-ng), its two calibrations
# counted CAL_EXTRA (default 8) over their loops' 2,000,000
insn_run() {
	local name=$1 cal=${5:-8} u=0 k=0 w=1 r
	{
		echo "P2P-BOOTED 6.12.117"
		echo "P2P-EXPECT guest.insn"
		suite insn "ok N rows"
		echo 'P2P-INSN-CAL {"bench":"mark","loops":1000000,"user_insns":2000000,"mark":1}'
		for r in "engine-uring-reg dmabuf" "nvme-pci-uring p2p" "nvme-pci-ng p2p"; do
			w=$((w + 1))
			echo "P2P-BENCH {\"bench\":\"${r% *}\",\"size\":4096,\"qd\":32,\"path\":\"${r#* }\",\"ops\":1000,\"mark\":$w}"
		done
		echo 'P2P-INSN-CAL {"bench":"mark","loops":1000000,"user_insns":2000000,"mark":5}'
		dmesg_block; tail_lines
	} | mkrun "$name"
	mark() { echo "mark $1 vcpu 0 host_ns $1 vclock_ns $1 kernel $k,0 user $u,0"; }
	{
		echo "insn format 1 api 1 target x86_64 vcpus 2 vclock yes"
		mark 2; u=$((u + 2000000 + cal)); mark 3
		# windows 2-4, the rows: a tenth of their instructions the user's
		w=1
		for r in "$2" "$3" "$4"; do
			w=$((w + 1))
			mark $((2 * w)); k=$((k + r * 900)); u=$((u + r * 100)); mark $((2 * w + 1))
		done
		mark 10; u=$((u + 2000000 + cal)); mark 11
		echo "exit host_ns 99 lost 0 kernel $k,0 user $u,0"
	} > "$T/runs/$name/insn.log"
}
printf '%s\n' "# fixture" "i1.insn.base 2000.0 date=fixture" "i2.insn.base 2000.0" "i3.insn.base 2000.0" \
	"i4.insn.base 2000.0" "i6.insn.base none" > "$T/insn-baseline"
export P2P_INSN_BASELINE=$T/insn-baseline
insn_run i1.insn.base 2150 4000 3500
must_pass "insn: 7.5% over the recorded figure, below nvme-pci, calibrations exact: the run passes" judge i1.insn.base
must_pass "... its cases naming the figures (insns_per_io=2150.0 recorded=2000.0 nvme_pci=3500.0)" sh -c \
	"grep -q '^    ok [0-9]* insn: .*insns_per_io=2150.0 recorded=2000.0 limit=2200.0' '$T/runs/i1.insn.base/ktap/host.ktap' &&
	 grep -q '^    ok [0-9]* insn: .*insns_per_io=2150.0 nvme_pci=3500.0 ratio=0.614' '$T/runs/i1.insn.base/ktap/host.ktap' &&
	 grep -q '^    ok [0-9]* insn: the plugin counted.*counted_extra=+8,+8 lost_blocks=0' '$T/runs/i1.insn.base/ktap/host.ktap'"
insn_run i2.insn.base 2250 4000 3500
must_fail "insn: 12.5% over the recorded figure fails" judge i2.insn.base
insn_run i3.insn.base 2100 4000 2050
must_fail "insn: above nvme-pci's cheaper row in the same boot fails" judge i3.insn.base
insn_run i4.insn.base 2000 4000 3500 -3
must_fail "insn: a calibration counted 3 instructions short fails" judge i4.insn.base
insn_run i5.insn.base 2000 4000 3500
must_fail "insn: a run with no line in the baseline fails" judge i5.insn.base
insn_run i6.insn.base 2000 4000 3500
must_fail "insn: a run whose line says none (not recorded yet) fails" judge i6.insn.base
must_pass "... saying so: recorded=none" grep -q 'not ok: host: insn: .*recorded=none' "$T/runs/i6.insn.base/reasons"
insn_run i1.insn.base 2150 4000 3500
rm "$T/runs/i1.insn.base/insn.log"
must_fail "insn: a run without the plugin's counts fails" judge i1.insn.base
insn_run i1.insn.base 2150 4000 3500
sed -i '/"mark":2}/d' "$T/runs/i1.insn.base/serial.log"
must_fail "insn: a run without the engine's row fails" judge i1.insn.base
unset P2P_INSN_BASELINE

# --- the lint over qemu/ for checks that cannot fail ---
if [ -x "$top/qemu/lint-tests.sh" ]; then
	must_pass "qemu/lint-tests.sh finds no check that cannot fail in qemu/" "$top/qemu/lint-tests.sh"
	must_pass "qemu/lint-tests.sh --selftest: each of its fixtures fails the lint" "$top/qemu/lint-tests.sh" --selftest
fi

echo "KTAP version 1"
echo "1..1"
echo "    KTAP version 1"
echo "    # Subtest: judge_selftest"
echo "    1..$n"
printf '%s\n' "${lines[@]}"
[ -s "$T/diag" ] && cat "$T/diag"
if printf '%s\n' "${lines[@]}" | grep -q '^    not ok'; then echo "not ok 1 judge_selftest"; exit 1; fi
echo "ok 1 judge_selftest"
