#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# p2pnvme's dma-buf imports against exporters that behave as the GPU
# drivers do (issue 25): the bench's p2pgpu module exports ranges of the
# last ivshmem BAR (the switch profile's bar1, the iommu profile's bar0) as
# nvidia, amdgpu and xe would, p2pnvme reads into them and writes from
# them; the host checks the BAR's backing file and the image
# (tools/tests/p2pgpu-test.c says what each case asserts). Where the
# profile has a second ivshmem function (switch, swiotlb), p2pbar takes it
# and its exports are offered to the GPU's importers (the other direction).
# Under memory pressure the amdgpu and xe personalities' shrinker evicts a
# buffer again and again (no-wait and waiting passes in direct reclaim's
# context, drop_caches) while registered reads and writes go on through
# P2PNVME_IOC_SUBMIT and io_uring (p2pgpu-test's shrinker_stream()): on the
# debug kernel a lockdep report fails the run.
# The personalities behave as the drivers do where an outside reading
# (../shared/notes/gpu-reality.md) found them different: amdgpu and xe
# hand out VRAM in blocks of mixed sizes (one mapping entry each), nvidia
# in ranges split at the importer's maximum segment (5 and 64 MiB
# buffers, transfers across blocks, checked here block by block); xe
# refuses to map VRAM the CPU cannot see (-EOPNOTSUPP at map, which
# p2pnvme's log tells from a refusal at attach); xe's maps are
# interruptible (an ioctl starts over, an io_uring CQE never says
# -ERESTARTSYS); amdgpu's attach takes the reservation lock (p2pnvme never
# attaches under it: lockdep on the debug kernel, the test's timeout
# elsewhere); amdgpu's remove leaves VRAM where it is (p2pnvme refuses a
# buffer in the BAR of a function without a driver, -ENODEV). NVIDIA's
# coherent memory (GH200's HBM: a NUMA node with memory and no CPUs, which
# qemu/run.sh gives these boots, P_MEMNODE) is its own path,
# dmabuf-coherent, refused where P2P is required; a guest kernel without
# CONFIG_NUMA sees no such node, and that test SKIPs saying so.
# The test ends by unbinding p2pgpu's function mid-stream and binding it
# again. NVIDIA's remove waits until every dma-buf of the GPU is released
# (p2pgpu's nvidia personality for 15 s, then says it gave up): an nvidia
# buffer only p2pnvme's registration holds must not hold the unbind.
# Where the kernel's P2PDMA verdict refuses the GPU's function and the
# controller (p2pexpect=refused: rootports, acs), p2pnvme must refuse the
# BAR however the exporter mapped it: nvidia's transfers and
# registrations fail with EREMOTEIO, counted, nothing moved, and the log
# and the p2pnvme_path tracepoint name both functions; amdgpu and xe keep
# their buffers in host memory for p2pnvme (their attach asks the kernel),
# whose transfers go on as dmabuf-host.
# On the nomove flavour (p2pflavour=nomove on the command line, from the
# run: a 6.12 kernel without CONFIG_DMABUF_MOVE_NOTIFY, as stock 6.x
# kernels ship) the suite gpuexp_nomove runs instead: the dma-buf core pins
# a dynamic exporter's buffer at every map, so 6.12's amdgpu and xe put
# whatever p2pnvme maps in host memory (dmabuf-host, P2P required refused,
# a registration pins it), nvidia's static exports go P2P as anywhere, and
# p2pbar refuses every importer; p2pnvme says so once at load, and only
# there. The flavour comes from the run, not from the kernel, so that a
# kernel built with the option fails here.
. /tests/lib.sh
SUITE=gpuexp
[ "$p2pflavour" = nomove ] && SUITE=gpuexp_nomove
expect_suites guest.gpuexp_setup guest.$SUITE guest.gpuexp_after

NVME=$(find_pci 1b36 0010)
nbar=0
while find_pci 1af4 1110 $((nbar + 1)) >/dev/null; do nbar=$((nbar + 1)); done
GPU=$(find_pci 1af4 1110 $nbar)
BAR=bar$((nbar - 1))

suite_begin gpuexp_setup
check "p2pgpu loads" load p2pgpu
check "p2pgpu binds to ivshmem $GPU (the host's $BAR)" bind p2pgpu "$GPU"
check "/dev/p2pgpu exists" test -c /dev/p2pgpu
check "p2pbar loads (p2pnvme's symbols)" load p2pbar
check "p2pnvme loads" load p2pnvme
check "p2pnvme takes over $NVME" bind p2pnvme "$NVME"
# p2pnvme's word on a kernel whose dma-buf core pins at map, once at load
NOMOVE_NOTE="p2pnvme: this kernel has no CONFIG_DMABUF_MOVE_NOTIFY"
if [ "$p2pflavour" = nomove ]; then
	check_eq "p2pnvme said once at load that this kernel pins mapped dma-bufs (p2pflavour=nomove)" \
		"$(dmesg | grep -cF "$NOMOVE_NOTE")" 1
else
	check_eq "p2pnvme said nothing of CONFIG_DMABUF_MOVE_NOTIFY (p2pflavour=$p2pflavour: the option is on)" \
		"$(dmesg | grep -cF "$NOMOVE_NOTE")" 0
fi
PROV=
if [ "$nbar" -ge 2 ]; then
	PROV=$(find_pci 1af4 1110 1)
	check "p2pbar binds to ivshmem $PROV (its exports, imported by the GPU)" bind p2pbar "$PROV"
fi
# where NVIDIA's coherent memory would be (nvidia_coherent SKIPs without it)
if [ -e /sys/devices/system/node/has_cpu ]; then
	diag "NUMA nodes: with CPUs $(cat /sys/devices/system/node/has_cpu), with memory $(cat /sys/devices/system/node/has_memory)"
else
	diag "NUMA nodes: none listed (the kernel has no CONFIG_NUMA)"
fi
suite_end

# the p2pnvme_path tracepoint names the function whose BAR a dma-buf is:
# only the transfers that name one are recorded (the ring buffer would
# drop the early ones of a whole run otherwise)
T=/sys/kernel/tracing
[ -e $T/trace ] || mount -t tracefs nodev $T 2>/dev/null
[ -e $T/trace ] || T=/sys/kernel/debug/tracing
E=$T/events/p2pnvme/p2pnvme_path
if [ -e $E/enable ]; then
	echo 'owner != "-"' > $E/filter
	echo 1 > $E/enable
	: > $T/trace
fi
# NVIDIA maps its BAR with dma_map_resource(..., DMA_BIDIRECTIONAL, 0)
# (nv_dma_map_mmio()), once per attachment: two importers' mappings of one
# nvidia buffer (p2pnvme's beside the static importer's, a registration's
# beside a transfer's own) overlap, and the debug kernel's DMA-API
# debugging, whose cacheline tracking is meant for host memory, warns:
# add_dma_entry()'s "cacheline tracking EEXIST, overlapping mappings aren't
# supported", once per such mapping now that /init has DMA-API debugging
# report every error (p2pgpu-test's nvidia static importer and its
# owner_and_require(): 2; amdgpu and xe map with DMA_ATTR_SKIP_CPU_SYNC).
# Any other DMA-API error still fails the run.
known_warning_begin add_dma_entry 4 "cacheline tracking EEXIST" \
	"DMA-API debugging's cacheline tracking warns when two attachments map one NVIDIA-style MMIO range with attrs 0 (nv_dma_map_mmio()); no host memory overlaps"
echo "<<<KTAP-BEGIN guest.$SUITE>>>"
p2pgpu-test /dev/p2pgpu /dev/p2pnvme0 "$BAR" ${PROV:+/dev/p2pbar0} || _any_failed=1
echo "<<<KTAP-END>>>"
known_warning_end add_dma_entry
if [ -e $E/enable ]; then
	echo 0 > $E/enable
	echo 0 > $E/filter
	grep 'p2pnvme_path:' $T/trace > /tmp/owners
fi

# what a transfer refused for the kernel's P2PDMA verdict says
UNREACH="path refused (P2PDMA verdict refuses the owner) owner $GPU"
suite_begin gpuexp_after
if [ -e /tmp/owners ] && [ "$p2pexpect" = refused ]; then
	diag "p2pnvme_path with an owner: $(wc -l < /tmp/owners) transfers, e.g. $(head -n 1 /tmp/owners | sed 's/.*p2pnvme_path: //')"
	check "p2pnvme_path: transfers refused for the P2PDMA verdict name $GPU" \
		grep -qF "$UNREACH" /tmp/owners
	check_eq "p2pnvme_path: P2P refused, none went into the GPU's BAR, the refused ones name only $GPU" \
		"$(grep -vF "$UNREACH" /tmp/owners | head -n 2)" ""
elif [ -e /tmp/owners ]; then
	diag "p2pnvme_path with an owner: $(wc -l < /tmp/owners) transfers, e.g. $(head -n 1 /tmp/owners | sed 's/.*p2pnvme_path: //')"
	check "p2pnvme_path: transfers into the GPU's BAR name $GPU" grep -q "path dmabuf (.*) owner $GPU\$" /tmp/owners
	check_eq "p2pnvme_path: only dmabuf-p2p transfers name an owner, and only $GPU" \
		"$(grep -v "path dmabuf (.*) owner $GPU\$" /tmp/owners | head -n 2)" ""
elif [ -d $T/events ]; then
	# the kernel traces events, and p2pnvme always has its tracepoints
	fail "p2pnvme_path names the owner: no tracefs event p2pnvme/p2pnvme_path ($E)"
else
	skip "p2pnvme_path names the owner" "no tracefs events on this kernel"
fi
dmesg | grep -E 'p2pgpu|nvidia:|p2pbar .*dma-buf|registered dma-buf|P2PDMA verdict|peer-to-peer DMA|refused by its exporter|CPU-coherent' |
	sed 's/^\[[^]]*\] //' | tail -n 80 | while read -r l; do diag "$l"; done
# p2pbar refuses a static importer on every kernel, first, with its own
# line; on the nomove flavour it refuses every dynamic importer too (no
# revocation of a mapping the core pins), so none is ever revoked:
# gpuexp_nomove tries three (p2pnvme's per-I/O read, its registration,
# p2pgpu's amdgpu-style import), each refused with the kernel's reason
NOMOVE_REFUSED="p2pbar $PROV: dma-buf import refused: this kernel pins importers' mappings (no CONFIG_DMABUF_MOVE_NOTIFY)"
if [ -n "$PROV" ]; then
	check "p2pbar said why it refused the static importer" \
		sh -c "dmesg | grep -q 'dma-buf import by $GPU refused: a static importer'"
fi
if [ -n "$PROV" ] && [ "$SUITE" = gpuexp_nomove ]; then
	check_eq "p2pbar refused each of the 3 dynamic importers, saying this kernel pins their mappings" \
		"$(dmesg | grep -cF "$NOMOVE_REFUSED")" 3
	check_eq "p2pbar let no dynamic importer in: none was told of a revocation" \
		"$(dmesg | grep -c 'import: the exporter invalidated our mapping')" 0
elif [ -n "$PROV" ]; then
	check "the dynamic importer was told of the revocation" \
		sh -c "dmesg | grep -q 'import: the exporter invalidated our mapping (1)'"
	check_eq "p2pbar refused no dynamic importer for a kernel that pins (p2pflavour=$p2pflavour)" \
		"$(dmesg | grep -cF "$NOMOVE_REFUSED")" 0
fi
# the log line of a refusal for the kernel's P2PDMA verdict, naming both functions
VERDICT="refuses peer-to-peer DMA between $GPU and $NVME"
if [ "$p2pexpect" = refused ]; then
	check "p2pnvme said why it refused the GPU's BAR, naming $GPU and $NVME" \
		sh -c "dmesg | grep -qF '$VERDICT'"
elif [ "$SUITE" = gpuexp_nomove ]; then
	check "p2pnvme refused no dma-buf for the P2PDMA verdict (P2P $p2pexpect)" \
		sh -c "! dmesg | grep -qF 'refuses peer-to-peer DMA between'"
else
	check "p2pnvme refused no dma-buf for the P2PDMA verdict (P2P $p2pexpect)" \
		sh -c "! dmesg | grep -qF 'refuses peer-to-peer DMA between'"
	check "p2pnvme said it revoked the nvidia buffer's registration at the unbind" \
		sh -c "dmesg | grep -q 'registered dma-buf in the BAR of $GPU: its driver is unbound and the exporter cannot revoke'"
	check "p2pnvme said it revoked the amdgpu buffer left in VRAM once the unbind was over" \
		sh -c "dmesg | grep -q 'registered dma-buf in the BAR of $GPU: its driver is unbound and the exporter did not move or revoke'"
fi
if [ "$SUITE" = gpuexp ]; then
	check "p2pgpu moved buffers out of VRAM at the unbind (xe's remove; amdgpu only with P2PGPU_EXPORT_F_EVICT_AT_UNBIND)" \
		sh -c "dmesg | grep -q 'VRAM -> GTT, host pages (device unbound)'"
	check "p2pgpu left an amdgpu buffer in VRAM at the unbind, nobody told (amdgpu_pci_remove() evicts nothing)" \
		sh -c "dmesg | grep -q 'amdgpu buffer [0-9]*: left in VRAM at unbind, importers not told'"
else
	check "p2pgpu: 6.12's amdgpu and xe pinned what p2pnvme mapped in host memory" \
		sh -c "dmesg | grep -q 'VRAM -> GTT, host pages (pin'"
fi
# NVIDIA's remove waits for every dma-buf of the GPU (p2pgpu's for 15 s at most)
check "no unbind of p2pgpu's function was held by a dma-buf p2pnvme kept (nvidia's remove never gave up)" \
	sh -c "! dmesg | grep -q 'nvidia: remove gave up waiting for'"
check "p2pnvme lets go of $NVME" sh -c "echo $NVME > /sys/bus/pci/drivers/p2pnvme/unbind"
check "p2pgpu unbinds" sh -c "echo $GPU > /sys/bus/pci/drivers/p2pgpu/unbind"
check "p2pgpu unloads: every buffer released" rmmod p2pgpu
check "nvme-pci takes the controller back" bind nvme "$NVME"
suite_end
exit $_any_failed
