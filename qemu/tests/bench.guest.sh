#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The bench's own proof: the kernel's P2PDMA verdict for the booted
# topology (KUnit), and a real transfer by the kernel's nvme driver from
# the namespace into p2pmem of the ivshmem BAR, checked on the host.
. /tests/lib.sh
expect_suites guest.bench guest.bench_nvmet kunit.p2p_topology

IVSHMEM=$(find_pci 1af4 1110)
NVME=$(find_pci 1b36 0010)

suite_begin bench
diag "profile=$p2pprofile expect=$p2pexpect distance=$p2pdistance cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
check "ivshmem and nvme present" test -n "$IVSHMEM" -a -n "$NVME"
check "p2pbar loads" load p2pbar
check "p2pbar binds to ivshmem $IVSHMEM" bind p2pbar "$IVSHMEM"
check "kernel registered the BAR as p2pmem" [ -e "/sys/bus/pci/devices/$IVSHMEM/p2pmem/size" ]
check_eq "p2pmem published" "$(cat /sys/bus/pci/devices/$IVSHMEM/p2pmem/published 2>/dev/null)" 1
# the provider against every function of the machine
tail -n +2 /sys/kernel/debug/p2pbar/"$IVSHMEM"/verdicts | while read -r line; do
	diag "verdicts: $line"
done

# p2pctl check computes the verdict from sysfs and config space alone; with
# the provider bound it also asks the kernel (P2PBAR_IOC_VERDICT) and fails
# on any disagreement: the provider against every function, both ways.
n=0; bad=0
for f in /sys/bus/pci/devices/*; do
	f=${f##*/}
	[ "$f" = "$IVSHMEM" ] && continue
	for pair in "$IVSHMEM $f" "$f $IVSHMEM"; do
		# shellcheck disable=SC2086
		out=$(p2pctl check $pair -o json 2>&1) || { bad=$((bad + 1)); diag "check $pair: $out"; }
		case "$out" in *'"agrees":true'*) ;; *) bad=$((bad + 1)); diag "check $pair: $out" ;; esac
		n=$((n + 1))
	done
done
check_eq "p2pctl check agrees with the kernel on all $n pairs" "$bad" 0
out=$(p2pctl check "$IVSHMEM" "$NVME")
diag "$(echo "$out" | tr '\n' '|')"
check_eq "p2pctl check: the NVMe's verdict is $p2pexpect" \
	"$(echo "$out" | sed -n '1s/.*: \([a-z-]*\).*/\1/p')" "$p2pexpect"
has() { printf '%s\n' "$1" | grep -q -- "$2"; }
case "$p2pprofile" in
acs)	check "p2pctl check: the fix names pci=disable_acs_redir= and the port" \
		has "$out" "fix: boot with pci=disable_acs_redir=0000:00:04.0 " ;;
rootports|pxb)
	check "p2pctl check: the fix says to share a switch" has "$out" "fix: put both devices under one PCIe switch" ;;
esac
if [ "$p2pexpect" = refused ]; then
	check "p2pctl check: a refusal says what to change" has "$out" '^  fix: '
	check "p2pctl check: ... and names the host bridge" has "$out" "the host bridge .* is not in this kernel's P2PDMA allowlist"
fi
# nothing bound: the same verdict without the kernel's
echo "$IVSHMEM" > /sys/bus/pci/drivers/p2pbar/unbind
out2=$(p2pctl check "$IVSHMEM" "$NVME")
check_same "p2pctl check without a bound provider says the same" \
	"$(echo "$out2" | grep -v '^  \(kernel\|predicted\)')" "$(echo "$out" | grep -v '^  kernel')"
check "... and says it is a prediction" has "$out2" '^  predicted: no p2pbar provider is bound'
check_eq "... in JSON too (source: predicted)" \
	"$(p2pctl check "$IVSHMEM" "$NVME" -o json | sed -n 's/.*"source":"\([a-z]*\)".*/\1/p')" predicted
bind p2pbar "$IVSHMEM"

# p2pctl topo: the tree shows the provider, ACS redirect where it is set,
# and its matrix cell for the NVMe is the profile's verdict.
t=$(p2pctl topo)
echo "$t" | while read -r line; do diag "topo: $line"; done
check "p2pctl topo: the provider with its p2pmem and instance" \
	has "$t" "$IVSHMEM 1af4:1110 p2pbar \[p2pmem 64 MiB, p2pbar0\]"
[ "$p2pprofile" = acs ] && check "p2pctl topo: ACS redirect on the slot's root port" \
	has "$t" "0000:00:04.0 1b36:000c pcieport \[ACS redirect\]"
# (each function's NUMA node, link and IOMMU group follow in parentheses)
[ "$p2pprofile" = nested ] && check "p2pctl topo: the NVMe under the inner switch's port" \
	has "$t" "^|     |     +- 0000:04:00.0 104c:8233 pcieport\( (.*)\)\{0,1\}$" &&
	check "p2pctl topo: ... two switch levels down" \
		has "$t" "^|     |     |  \`- $NVME 1b36:0010 nvme\( (.*)\)\{0,1\}$"
check "p2pctl topo: the NVMe's link as sysfs has it" \
	has "$t" " $NVME 1b36:0010 .*[(, ]$(sed 's/ PCIe//; s/ //g' /sys/bus/pci/devices/$NVME/current_link_speed) x$(cat /sys/bus/pci/devices/$NVME/current_link_width)"
case "$p2pexpect" in direct) cell="D $p2pdistance" ;; host-bridge) cell="H $p2pdistance" ;; *) cell="-" ;; esac
got=$(echo "$t" | awk -v p="$IVSHMEM" -v c="$NVME" '
	/^verdicts/ { getline; pos = index($0, c); next }
	pos && $1 == p { v = substr($0, pos, 13); sub(/ +$/, "", v); print v; exit }')
lvl=${got%% *} rest=${got#* }
check_eq "p2pctl topo: the matrix says $cell for the NVMe" "${rest% \*}" "$cell"
# beside the kernel's verdict, nvidia-smi topo -m's legend for the path;
# '*' (and why, below the legend) where the two differ
case "$p2pprofile" in
switch|multifunction|acs|iommu-switch) want=PIX ;; nested) want=PXB ;; pxb) want=NODE ;; *) want=PHB ;;
esac
check_eq "p2pctl topo: nvidia-smi's legend for the path is $want" "$lvl" "$want"
case "$lvl:$p2pexpect" in PIX:direct|PXB:direct|PHB:host-bridge|NODE:host-bridge) star=no ;; *) star=yes ;; esac
case "$got" in *' *') got_star=yes ;; *) got_star=no ;; esac
check_eq "p2pctl topo: '*' where the legend and the kernel differ: $star" "$got_star" "$star"
[ "$star" = yes ] && check "p2pctl topo: ... and why, below the legend" \
	has "$t" "^  $IVSHMEM -> $NVME: $lvl, but $p2pexpect: "
check "p2pctl topo: the legend is nvidia-smi's" has "$t" '^  PIX  = Connection traversing at most a single PCIe bridge$'
# every command's -o json is one object python parses (on the host)
jsoncheck topo host_bridges,functions,verdicts topo
jsoncheck list devices list
jsoncheck check provider,client,verdict,distance,reason,fix,source,kernel check "$IVSHMEM" "$NVME"
jsoncheck info device,pci,bar,size,bus_addr info
jsoncheck verdict client,verdict,distance verdict "$NVME"
jsoncheck doctor p2p,running_kernel,missing,checks doctor
# p2pctl doctor on this profile: the bench kernel has P2PDMA (its
# /proc/kallsyms says so; p2pbar is loaded and bound), so the first line says yes
out=$(p2pctl doctor 2>&1)
rc=$?
diag "doctor: $(echo "$out" | head -n 1)"
check_eq "p2pctl doctor exits 0: this kernel has P2PDMA" "$rc" 0
check "p2pctl doctor's first line: P2PDMA: yes" has "$(echo "$out" | head -n 1)" '^P2PDMA: yes'
check "p2pctl doctor: p2pbar loaded" has "$out" '^p2pbar  *ok '
j=$(p2pctl topo -o json)
check "p2pctl topo -o json: the NVMe's cell, with the legend" \
	has "$j" "{\"provider\":\"$IVSHMEM\",\"client\":\"$NVME\",\"verdict\":\"$p2pexpect\",\"distance\":$p2pdistance,\"topology\":\"$lvl\",\"differs\":$([ $star = yes ] && echo true || echo false)"
# lspci's short form names the same functions
short() { echo "${1#0000:}"; }
check_same "p2pctl check in lspci's short form says the same" \
	"$(p2pctl check "$(short "$IVSHMEM")" "$(short "$NVME")")" "$(p2pctl check "$IVSHMEM" "$NVME")"

# Live KUnit: the kernel's and the provider's verdicts for this profile.
check "p2p_topology_kunit runs" load p2p_topology_kunit "expect=$p2pexpect distance=$p2pdistance"
check "kunit.p2p_topology: its results in debugfs" kunit_ran p2p_topology

# Data path: the kernel's nvme driver reads 64 KiB at 1 MiB into p2pmem
# from the kernel's own sysfs allocator (O_DIRECT, FOLL_PCI_P2PDMA).
BLK=$(nvme_blk "$NVME")
check "nvme namespace present ($BLK)" [ -b "$BLK" ]
out=$(p2pctl --json dma-read "$BLK" 0x100000 65536 --sysfs "$(short "$IVSHMEM")" 2>&1)
rc=$?
diag "dma-read: rc=$rc $out"
if [ "$p2pexpect" = refused ]; then
	check_eq "O_DIRECT read into p2pmem is refused with EREMOTEIO" "$rc" 121
	hostcheck absent 65536 nvme0@0x100000 bar0
else
	check_eq "O_DIRECT read into p2pmem succeeds" "$rc" 0
	off=$(echo "$out" | sed -n 's/.*"bar_offset":\([0-9]*\).*/\1/p')
	check "dma-read says where in the BAR the bytes went (bar_offset $off)" test -n "$off"
	hostcheck equal 65536 "bar0@$off" nvme0@0x100000 "limit=${p2plimit:-none}"
fi
suite_end

# NVMe-oF: nvmet's namespace attribute p2pmem names the provider; enabling
# the namespace runs the kernel's own check (pci_p2pdma_distance() between
# the provider and the NVMe behind the namespace). The transports that would
# stage data there (RDMA, with a NIC that reaches the BAR) need hardware.
# Whether nvmet is there is the kernel's configuration (the debug kernel
# has it), not whether its configfs directory shows up.
suite_begin bench_nvmet
CFG=/sys/kernel/config
if ! kconfig CONFIG_NVME_TARGET; then
	skip "nvmet takes the p2pbar provider for a namespace" \
		"no CONFIG_NVME_TARGET in this kernel (the debug kernel has it)"
else
	grep -q " $CFG configfs" /proc/mounts || mount -t configfs configfs $CFG
	check "nvmet's configfs directory ($CFG/nvmet)" test -d $CFG/nvmet
	S=$CFG/nvmet/subsystems/p2pbench NS=$CFG/nvmet/subsystems/p2pbench/namespaces/1
	check "nvmet: a subsystem and a namespace on $BLK" \
		sh -c "mkdir $S && mkdir $NS && echo -n $BLK > $NS/device_path"
	check "nvmet: p2pmem refuses a function without p2pmem ($NVME): ENODEV" \
		fails_with "No such device" sh -c "echo $NVME > $NS/p2pmem"
	check "nvmet: p2pmem takes the p2pbar provider $IVSHMEM" sh -c "echo $IVSHMEM > $NS/p2pmem"
	check_eq "nvmet: p2pmem names it" "$(cat $NS/p2pmem)" "$IVSHMEM"
	if [ "$p2pexpect" = refused ]; then
		check "nvmet: the namespace is refused (the topology refuses P2P): EINVAL" \
			fails_with "Invalid argument" sh -c "echo 1 > $NS/enable"
	else
		check "nvmet: the namespace enables with the provider's p2pmem" \
			sh -c "echo 1 > $NS/enable"
		check_eq "nvmet: enabled" "$(cat $NS/enable)" 1
	fi
	# the provider goes while nvmet names it: nvmet holds only the function
	t0=$(date +%s)
	echo "$IVSHMEM" > /sys/bus/pci/drivers/p2pbar/unbind
	check "nvmet: unbinding p2pbar under the namespace returns ($(($(date +%s) - t0)) s)" \
		[ $(($(date +%s) - t0)) -lt 5 ]
	check "nvmet: the namespace disables" sh -c "echo 0 > $NS/enable"
	check "nvmet: p2pmem refuses the function without its provider: ENODEV" \
		fails_with "No such device" sh -c "echo $IVSHMEM > $NS/p2pmem"
	check "nvmet: namespace and subsystem go" sh -c "rmdir $NS && rmdir $S"
	check "p2pbar binds $IVSHMEM again" bind p2pbar "$IVSHMEM"
fi
suite_end; exit $_any_failed
