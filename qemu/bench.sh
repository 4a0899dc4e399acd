#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The bench's entry points (make demo, make check).
#
#   qemu/bench.sh demo       boot the switch topology, show verdicts and a P2P transfer
#   qemu/bench.sh check      compile matrix + every run of qemu/matrix; ends with
#                            "N passed, N failed"; exit status 0 only if nothing failed
#   qemu/bench.sh check SEL...   only the matrix lines named PROFILE.TEST[.FLAVOUR]
#                            (globs allowed, e.g. 'switch.client' '*.debug'), and
#                            the compile matrix (the build suite) if one is "build"
#   qemu/bench.sh kernels    fetch and build every kernel the bench uses
#   qemu/bench.sh checkpatch SRC   the build suite's checkpatch step alone
#
# Environment: P2P_CACHE (default ~/.cache/p2pdma-suite), P2P_MATRIX (a file
# in qemu/matrix format), P2P_JOBS (parallel boots, default 2).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

OUT=$P2P_TOP/out

kernels() {
	local s
	host_build_deps
	need_pkgs sparse gcc-multilib qemu-user
	"$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base >/dev/null
	"$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" nomove >/dev/null
	"$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" debug >/dev/null
	for s in $P2P_COMPILE_SERIES; do
		[ "$s" = "$P2P_RUNTIME_SERIES" ] || "$P2P_TOP/qemu/kernel.sh" prepare "$s" base >/dev/null
	done
	"$P2P_TOP/qemu/kernel.sh" prepare "$P2P_RUNTIME_SERIES" minimal >/dev/null
	"$P2P_TOP/qemu/kernel.sh" stock "$P2P_RUNTIME_SERIES" >/dev/null
	need_pkgs linux-headers-amd64 dkms
	# the packages' checks (qemu/package-check.sh)
	need_pkgs dpkg-dev debhelper dh-dkms pkgconf lintian rpm rpmlint
}

# A check needs about 1.5 GiB under out/ (passing runs give their images
# back, qemu/run.sh) and, cold, 9 GiB in the cache: say so before an hour's
# work ends in ENOSPC.
disk_room() {
	local out cache
	out=$(df -Pk "$OUT" | awk 'NR == 2 { print int($4 / 1048576) }')
	mkdir -p "$P2P_CACHE"
	cache=$(df -Pk "$P2P_CACHE" | awk 'NR == 2 { print int($4 / 1048576) }')
	say "disk: ${out} GiB free under $OUT, ${cache} GiB under $P2P_CACHE"
	if [ "$out" -lt 2 ]; then
		echo "bench: ${out} GiB free under $OUT, a check needs 2: free some space" >&2
		echo "0 passed, 1 failed"
		exit 1
	fi
}

# Debian's own headers package of this machine's release (no KUnit, no
# P2PDMA): the newest installed.
stock_headers() {
	ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1
}

# The "build" suite: the modules compile warning-free (W=1) against every
# kernel series, sparse-clean against the runtime kernel, checkpatch-clean,
# and the tools build with -Werror.
build_suite() {
	local run=$OUT/runs/build s k n=0 results=() src ksrc rc m32
	rm -rf "$run"; mkdir -p "$run/ktap"
	: > "$run/serial.log"
	# A step that builds in tools/ or in a booted kernel's out/modules/
	# directory holds the lock under which qemu/run.sh builds them for the
	# boots running beside the build suite (check, below).
	locked() { flock "$OUT/.build.lock" "$@"; }
	t() {	# t DESCRIPTION COMMAND...
		local t0=$SECONDS
		n=$((n + 1))
		if "${@:2}" >>"$run/build.log" 2>&1; then results+=("    ok $n $1")
		else results+=("    not ok $n $1"); say "FAILED: $1 (see $run/build.log)"; fi
		echo "$((SECONDS - t0)) $n $1" >> "$run/steps"
	}
	for s in $P2P_COMPILE_SERIES; do
		if [ "$s" = "$P2P_RUNTIME_SERIES" ]; then
			k=$("$P2P_TOP/qemu/kernel.sh" build "$s" base)
		else
			k=$("$P2P_TOP/qemu/kernel.sh" prepare "$s" base)
		fi
		say "build: modules against $(basename "$k") (W=1)"
		t "modules build without warnings against $s (W=1)" locked "$P2P_TOP/qemu/modules.sh" "$k" W=1
		if [ "$s" = "$P2P_RUNTIME_SERIES" ]; then
			rm -rf "$OUT/modules/sparse"
			t "sparse (C=1) is clean against $s" env P2P_MODDIR=sparse "$P2P_TOP/qemu/modules.sh" "$k" C=1
			src=$("$P2P_TOP/qemu/kernel.sh" source "$s")
		fi
	done
	# as users build it: a lean kernel, distribution headers, no headers at all
	k=$("$P2P_TOP/qemu/kernel.sh" prepare "$P2P_RUNTIME_SERIES" minimal)
	say "build: modules against $(basename "$k") (no KUnit, dma-buf, debugfs, tracing)"
	rm -rf "$OUT/modules/minimal"
	t "modules build without KUnit, dma-buf, debugfs and tracing ($P2P_RUNTIME_SERIES, W=1)" \
		env P2P_MODDIR=minimal "$P2P_TOP/qemu/modules.sh" "$k" W=1
	t "... and use no dma-buf symbol there" \
		"$P2P_TOP/qemu/install-check.sh" nosyms "$OUT/modules/minimal" ' U (dma_buf|dma_fence|dma_resv)_'
	k=$(stock_headers)
	say "build: against Debian's stock headers $(basename "$k")"
	t "Debian's stock headers ($(basename "$k")): make modules refuses them at once; make builds the tools, then fails naming CONFIG_PCI_P2PDMA and the fix" \
		"$P2P_TOP/qemu/install-check.sh" refuses "$k" CONFIG_PCI_P2PDMA
	rm -rf "$OUT/modules/stock"
	t "modules compile against them without KUnit (P2P_COMPILE_ONLY=1, W=1)" \
		env P2P_MODDIR=stock "$P2P_TOP/qemu/modules.sh" "$k" P2P_COMPILE_ONLY=1 W=1
	t "dkms skips them (BUILD_EXCLUSIVE_CONFIG=CONFIG_PCI_P2PDMA), it does not fail" \
		"$P2P_TOP/qemu/install-check.sh" dkms-skips "$k"
	k=$("$P2P_TOP/qemu/kernel.sh" stock "$P2P_RUNTIME_SERIES")
	say "build: against Debian's stock $P2P_RUNTIME_SERIES configuration ($(cat "$k/.prepared"))"
	t "Debian's stock $P2P_RUNTIME_SERIES configuration ($(cat "$k/.prepared")): make modules refuses it at once; make builds the tools, then fails naming CONFIG_PCI_P2PDMA and the fix" \
		"$P2P_TOP/qemu/install-check.sh" refuses "$k" CONFIG_PCI_P2PDMA
	rm -rf "$OUT/modules/stock-$P2P_RUNTIME_SERIES"
	t "modules compile against it without KUnit (P2P_COMPILE_ONLY=1, W=1)" \
		env P2P_MODDIR="stock-$P2P_RUNTIME_SERIES" "$P2P_TOP/qemu/modules.sh" "$k" P2P_COMPILE_ONLY=1 W=1
	t "no kernel build tree (KDIR= missing, or the running kernel's headers): make builds the tools, then fails naming the headers package" \
		"$P2P_TOP/qemu/install-check.sh" nokdir
	t "the running kernel without CONFIG_PCI_P2PDMA (a made-up /proc and /boot): make says so first, builds the tools, fails naming it last; make modules stops at once; make tools looks at no kernel" \
		"$P2P_TOP/qemu/install-check.sh" running
	t "make, KDIR unset, the running kernel with P2PDMA and its headers ($P2P_RUNTIME_SERIES base): the readiness line, then the modules and the tools" \
		"$P2P_TOP/qemu/install-check.sh" builds "$("$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base)"
	t "make install DESTDIR= lays out modules, depmod, p2pctl, man page, examples; uninstall removes them" \
		"$P2P_TOP/qemu/install-check.sh" layout "$("$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base)"
	t "make against a kernel older than 6.1 (a tree saying 5.14, RHEL 9's) stops naming what to use; dkms skips it" \
		"$P2P_TOP/qemu/install-check.sh" old-kernel
	t "make install KEY= CERT= signs the modules (throwaway key, sign-file of $(basename "$(stock_headers)"))" \
		"$P2P_TOP/qemu/install-check.sh" sign "$(stock_headers)"
	t "make install refuses a second copy of the modules beside DKMS's" \
		"$P2P_TOP/qemu/install-check.sh" dkms-copy "$("$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base)"
	say "build: the Debian packages and the RPM spec"
	t "dpkg-buildpackage -us -uc -b: p2pdma-dkms and p2pdma-tools at VERSION's version, each with its files" \
		"$P2P_TOP/qemu/package-check.sh" debs
	t "lintian --pedantic -I -E finds nothing in them" "$P2P_TOP/qemu/package-check.sh" lintian
	t "make dist, rpmbuild -ta: p2pdma-dkms and p2pdma-tools RPMs; rpmlint: 0 errors, 0 warnings; make dist from the tarball makes it again" \
		"$P2P_TOP/qemu/package-check.sh" rpm
	t "rpm -i in a scratch root (this machine's rpm): the %post adds the suite to DKMS, which builds it for $P2P_RUNTIME_SERIES; rpm -e leaves nothing" \
		"$P2P_TOP/qemu/package-check.sh" rpm-install "$("$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base)"
	t "dpkg -i in a scratch root: DKMS builds the modules for $P2P_RUNTIME_SERIES, skips a kernel without P2PDMA; purge leaves nothing" \
		"$P2P_TOP/qemu/package-check.sh" dkms-deb "$("$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base)"
	t "make install, make dkms, make install in a scratch root: DKMS's copy replaces make install's, which is then refused" \
		"$P2P_TOP/qemu/package-check.sh" two-copies "$("$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base)"
	# make kernel-deb (scripts/kernel-deb.sh): packaged from a copy of the
	# base kernel's objects (no kernel build: a relink and the packaging),
	# the other checks configure only
	k=$("$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base)
	ksrc=$("$P2P_TOP/qemu/kernel.sh" source "$P2P_RUNTIME_SERIES")
	say "build: make kernel-deb, seeded from $(basename "$k")"
	t "make kernel-deb from the $P2P_RUNTIME_SERIES base kernel's objects (--seed): linux-image and linux-headers packages, -p2pdma; in a scratch root: vmlinuz, System.map with P2PDMA, config, modules, the headers' .config; the suite's modules build against those headers" \
		"$P2P_TOP/qemu/kernel-deb-check.sh" seeded "$k"
	t "make kernel-deb --config-only on Debian's stock $P2P_RUNTIME_SERIES configuration: P2PDMA and what it needs on, Debian's signing files and debug info off, nothing else of Debian's lost" \
		"$P2P_TOP/qemu/kernel-deb-check.sh" stock "$ksrc" "$("$P2P_TOP/qemu/kernel.sh" stock "$P2P_RUNTIME_SERIES")/.config"
	t "make kernel-deb on a 32-bit configuration: refused before building, naming CONFIG_MEMORY_HOTPLUG's unmet CONFIG_64BIT" \
		"$P2P_TOP/qemu/kernel-deb-check.sh" no-p2pdma "$ksrc" "$k/.config"
	t "make kernel-deb and Secure Boot (a stand-in mokutil): off; on without a key, refused saying what to do; on with one, enrolled or not; --unsigned; --sign signs a PE image in a package (sbverify)" \
		"$P2P_TOP/qemu/kernel-deb-check.sh" secure-boot "$ksrc" "$k/.config"
	t "without liburing the tools that need it are skipped in one line naming the package" \
		"$P2P_TOP/qemu/package-check.sh" no-uring
	t "checkpatch --strict is clean" checkpatch "$src"
	t "p2pnvme's calls only go down (scripts/layers.py)" python3 "$P2P_TOP/scripts/layers.py"
	t "kernel-doc is clean" kerneldoc "$src"
	t "tools build with -Werror" locked make -s -C "$P2P_TOP/tools"
	t "uapi-layout runs on x86_64 and reports a KTAP case per check (build.uapi_layout_x86_64)" \
		python3 "$P2P_TOP/qemu/ktap.py" run "$run/ktap/uapi-layout-x86_64.ktap" "$P2P_TOP/tools/build/uapi-layout"
	# i386 natively where this machine's kernel runs 32-bit programs, else
	# under qemu-user's qemu-i386 (a kernel without IA32 emulation says
	# "Exec format error", exit 126 from the shell)
	m32=("$P2P_TOP/tools/build/uapi-layout-m32")
	rc=0
	locked make -s -C "$P2P_TOP/tools" build/uapi-layout-m32 >>"$run/build.log" 2>&1 &&
		{ "${m32[@]}" >/dev/null 2>&1 || rc=$?; }
	[ $rc -ne 126 ] || m32=(qemu-i386 "${m32[@]}")
	t "uapi-layout runs on i386 (${m32[0]##*/}) and reports a KTAP case per check (build.uapi_layout_i386)" \
		python3 "$P2P_TOP/qemu/ktap.py" run "$run/ktap/uapi-layout-i386.ktap" "${m32[@]}"
	t "p2pctl: --help exits 0, usage errors and bad numbers exit 2 saying why" \
		"$P2P_TOP/tools/tests/p2pctl-cli.sh" "$P2P_TOP/tools/build/p2pctl"
	t "README and the man page name only what the tree has (scripts/doc-check.sh)" \
		"$P2P_TOP/scripts/doc-check.sh" "$P2P_TOP/tools/build/p2pctl"
	t "scripts/doc-check.sh --selftest: each fixture naming what the tree lacks fails where it says" \
		"$P2P_TOP/scripts/doc-check.sh" --selftest "$P2P_TOP/tools/build/p2pctl"
	t "p2pctl list, topo, check on a made-up machine: nvidia-smi's legend beside the kernel's verdict" \
		"$P2P_TOP/tools/tests/p2pctl-topo.sh" "$P2P_TOP/tools/build/p2pctl"
	t "p2pctl-errlog (nvme-error-log against a made-up controller) reports a KTAP case per check (build.p2pctl_errlog)" \
		sh -c "flock '$OUT/.build.lock' make -s -C '$P2P_TOP/tools' build/p2pctl-errlog &&
		       python3 '$P2P_TOP/qemu/ktap.py' run '$run/ktap/p2pctl-errlog.ktap' '$P2P_TOP/tools/build/p2pctl-errlog'"
	t "the test programs' harness: a hanging test killed at its timeout and counted failed by kunit.py" \
		sh -c "flock '$OUT/.build.lock' make -s -C '$P2P_TOP/tools' build/harness-selftest && '$P2P_TOP/tools/tests/harness-selftest.sh' \
		'$P2P_TOP/tools/build/harness-selftest' \
		'$("$P2P_TOP/qemu/kernel.sh" source "$P2P_RUNTIME_SERIES")/tools/testing/kunit/kunit.py'"
	t "the judge: every fixture of a failing run fails, a good run passes (build.judge_selftest)" \
		python3 "$P2P_TOP/qemu/ktap.py" run "$run/ktap/judge-selftest.ktap" "$P2P_TOP/qemu/judge-selftest.sh" \
		"$("$P2P_TOP/qemu/kernel.sh" source "$P2P_RUNTIME_SERIES")/tools/testing/kunit/kunit.py"
	t "the insn plugin (qemu/plugins/insn.c) on a stand-in for QEMU's plugin API: its counts the same with prof=on, each window's profile exact; scripts/insn-prof.py names a profile and refuses a broken one (qemu/plugins/insn-selftest.sh)" \
		sh -c 'so=$("$1/qemu/extools.sh" plugin) && "$1/qemu/plugins/insn-selftest.sh" "$(dirname "$so")"' sh "$P2P_TOP"
	t "the file benchmark's tables and scripts/cpu-insn.py's file rows on made-up boots: ratios against nvme-pci's O_DIRECT, the filesystem's mapping as a difference, the targets judged, placeholders (7) against the real pages (1) and the bounce (4) by files.rst's rule, fio's rows (3f) and (2f) from their P2P-FIO lines, a missing row or a failed fio run refused (scripts/file-bench.py --selftest)" \
		python3 "$P2P_TOP/scripts/file-bench.py" --selftest
	# A GPU-class importer: 7.2's virtio-gpu imports foreign dma-bufs, but
	# QEMU's blob resources need /dev/udmabuf on the host, and the bench's
	# kernels carry no DRM driver: a limit, said as such (Documentation/dmabuf.rst).
	n=$((n + 1))
	if [ -e /dev/udmabuf ]; then
		why="not built: the bench's kernels have no DRM virtio-gpu driver"
	else
		why="this host has no /dev/udmabuf, which QEMU's virtio-gpu blob resources need"
	fi
	results+=("    ok $n virtio-gpu (blob=true) imports p2pbar's dma-buf # SKIP $why")
	{
		echo "KTAP version 1"; echo "1..1"
		echo "    KTAP version 1"; echo "    # Subtest: build"; echo "    1..$n"
		printf '%s\n' "${results[@]}"
		if printf '%s\n' "${results[@]}" | grep -q 'not ok'; then echo "not ok 1 build"; else echo "ok 1 build"; fi
	} > "$run/ktap/build.ktap"
	echo fail > "$run/status"
	python3 "$P2P_TOP/qemu/ktap.py" judge \
		"$("$P2P_TOP/qemu/kernel.sh" source "$P2P_RUNTIME_SERIES")/tools/testing/kunit/kunit.py" \
		"$run" > "$run/judge.log" && echo pass > "$run/status"
	say "build: $(cat "$run/status"), $(cat "$run/summary")"
	say "build: slowest steps: $(sort -rn "$run/steps" | head -n 5 | awk '{printf "%s %ss, ", $2, $1}' | sed 's/, $//') (the rest in $run/steps)"
}

checkpatch() {
	local files out
	# the kernel's C: not tools/, but tools/testing/ (the bench's kernel modules)
	files=$(cd "$P2P_TOP" && { git ls-files '*.c' '*.h' 2>/dev/null | grep -v -E '^tools/';
		git ls-files 'tools/testing/*.[ch]' 2>/dev/null; } || true)
	[ -n "$files" ] || files=$(cd "$P2P_TOP" && find drivers include kunit -name '*.[ch]' ! -path '*/generated/*')
	# the whole report first: grep -q behind a pipe would end tee with
	# SIGPIPE at the first finding, and pipefail turn that into a pass
	[ -f "$1/scripts/checkpatch.pl" ] || { echo "checkpatch: no $1/scripts/checkpatch.pl" >&2; return 1; }
	# not --terse: that prints no totals; each file's total line says it
	# was read, and clean (a checkpatch that never ran says nothing)
	out=$(cd "$P2P_TOP" && perl "$1/scripts/checkpatch.pl" --strict --no-tree --show-types \
		--summary-file -f $files 2>&1) || true
	grep -E '^(ERROR|WARNING|CHECK):|^#[0-9]+: FILE:| total: ' <<< "$out" >&2
	[ "$(grep -c ' total: 0 errors, 0 warnings, 0 checks, ' <<< "$out")" -eq "$(wc -w <<< "$files")" ]
}

kerneldoc() {
	local out
	out=$(cd "$P2P_TOP" && perl "$1/scripts/kernel-doc" -none -Wall drivers/*/*.c include/linux/*.h \
		include/uapi/linux/*.h tools/testing/*/*.[ch] 2>&1) || true
	printf '%s\n' "$out" >&2
	[ -z "$out" ]
}

# matrix lines selected by PROFILE.TEST[.FLAVOUR[-SERIES]] globs (all without)
run_matrix() {
	local matrix=${P2P_MATRIX:-$P2P_TOP/qemu/matrix} jobs=${P2P_JOBS:-2} runs=() line
	local p t f s name sel
	while read -r line; do
		line=${line%%#*}
		[ -n "${line// }" ] || continue
		if [ $# -gt 0 ]; then
			read -r p t f s <<< "$line"
			name=$p.$t.$f${s:+-$s}
			for sel in "$@"; do
				# shellcheck disable=SC2053
				[[ $name == $sel || $name == $sel.* || $name == $sel-* ]] && { runs+=("$line"); break; }
			done
		else
			runs+=("$line")
		fi
	done < "$matrix"
	[ ${#runs[@]} -gt 0 ] || die "no line of $matrix matches: $*"
	# the runs the verdict must find judged (summary), whatever run.sh does
	printf '%s\n' "${runs[@]}" | awk -v d="$P2P_RUNTIME_SERIES" \
		'{ print $1 "." $2 "." $3 (($4 != "" && $4 != d) ? "-" $4 : "") }' >> "$OUT/selected"
	# every kernel the matrix names (column 4: series, default the runtime one)
	printf '%s\n' "${runs[@]}" | awk -v d="$P2P_RUNTIME_SERIES" '{print ($4 ? $4 : d), $3}' | sort -u |
	while read -r s f; do
		"$P2P_TOP/qemu/kernel.sh" build "$s" "$f" >/dev/null
	done
	say "check: ${#runs[@]} boots, $jobs at a time"
	printf '%s\n' "${runs[@]}" | xargs -P "$jobs" -L 1 sh -c \
		's=${5:-$1}; t=$4; [ "$s" = "$1" ] || t=$4-$s
		 if "$0/qemu/run.sh" --quiet --flavour "$4" --series "$s" "$2" "$3"; then r=pass; else r=FAIL; fi
		 printf "[bench] %-16s %-8s %-12s %s (%ss)\n" "$2" "$3" "$t" "$r" "$(cat "$0/out/runs/$2.$3.$t/seconds" 2>/dev/null)" >&2' \
		"$P2P_TOP" "$P2P_RUNTIME_SERIES"
	say "slowest boots: $(for d in "$OUT"/runs/*/seconds; do echo "$(cat "$d") $(basename "$(dirname "$d")")"; done |
		sort -rn | head -n 5 | awk '{printf "%s %ss, ", $2, $1}' | sed 's/, $//')"
}

# The verdict: every run selected (the build suite and each matrix line) must
# have been judged a pass where it ran (qemu/ktap.py judge, in run.sh and
# build_suite); a run missing, unjudged or failed is counted failed with its
# reason. Their summary lines are summed, never parsed again as one document.
summary() {
	# shellcheck disable=SC2046
	python3 "$P2P_TOP/qemu/ktap.py" summary "$OUT" $(cat "$OUT/selected" 2>/dev/null)
}

demo() {
	local run=$OUT/runs/switch.bench.base
	kernels_demo() { host_build_deps; "$P2P_TOP/qemu/kernel.sh" build "$P2P_RUNTIME_SERIES" base >/dev/null; }
	kernels_demo
	"$P2P_TOP/qemu/run.sh" switch bench || true
	echo
	echo "Emulated server: $(. "$P2P_TOP/qemu/profiles/switch.sh" 2>/dev/null; echo "$P_DESC")"
	echo "  P2PDMA verdicts, ivshmem BAR (provider) -> each PCI function:"
	sed -n 's/^\[bench\] # verdicts: \([^ ]*\) \([^ ]*\) \([^ ]*\) \([^ ]*\) [^ ]* \(.*\)/    \1 [\2] \3, distance \4: \5/p' "$run/serial.log"
	sed -n 's/.*\[bench\] # dma-read: rc=0 {"bytes":\([0-9]*\),"bar_offset":\([0-9]*\).*/  nvme driver read \1 bytes from the namespace straight into the BAR (offset \2)/p' "$run/serial.log"
	grep -h 'host sees' "$run/ktap/host.ktap" | sed 's/^ *\(not \)\{0,1\}ok [0-9]* /  /; s/^/ /' | sed "s/^  */  /"
	grep -q '^pass' "$run/status" && echo "  result: P2P transfer verified from the host side" ||
		{ echo "  result: FAILED, see $run/serial.log"; return 1; }
}

cmd=${1:-check}
case "$cmd" in
kernels) kernels ;;
check)
	shift
	rm -rf "$OUT/runs" "$OUT/initrd" "$OUT/selected" "$OUT/results.ktap" "$OUT/results.json"
	mkdir -p "$OUT"
	disk_room
	# the boots of this check share each kernel's modules and initramfs
	export P2P_INITRD_DIR=$OUT/initrd
	mkdir -p "$P2P_INITRD_DIR"
	if [ $# -gt 0 ]; then
		# just these boots: no compile matrix, only the kernels they need;
		# "build" names the compile matrix (the build suite) alone
		sel=()
		for a in "$@"; do
			if [ "$a" = build ]; then echo build >> "$OUT/selected"; kernels; build_suite
			else sel+=("$a"); fi
		done
		if [ ${#sel[@]} -gt 0 ]; then
			bench_run_deps
			run_matrix "${sel[@]}" || true
		fi
	else
		echo build >> "$OUT/selected"
		kernels
		bench_run_deps	# once, before the boots and the build suite start
		# The build suite beside the boots: its steps (packaging, lints,
		# scratch-root installs) mostly keep one core busy, and the boots
		# fill the other (one check: 29 min of wall time, 39 of CPU).
		build_suite & bpid=$!
		run_matrix || true
		wait "$bpid" || true
	fi
	summary
	;;
demo) demo ;;
checkpatch) checkpatch "${2:?kernel source tree}" ;;
*) sed -n '3,16p' "$0" | sed 's/^# \?//'; exit 2 ;;
esac
