#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Compile probes for kernel API differences, in the style of the OpenZFS and
# NVIDIA conftests: each probe is a tiny translation unit built against
# $KDIR; the ones that compile become HAVE_* macros in the output header.
# No LINUX_VERSION_CODE checks anywhere in the suite's .c files.
#
#   scripts/conftest.sh <kdir> <output-header>
set -eu
kdir=$1
out=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/p2p-conftest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

probe() {	# probe <NAME> <includes> <body>
	printf '%s\n#include <linux/module.h>\nMODULE_LICENSE("GPL");\nvoid conftest_%s(void);\nvoid conftest_%s(void)\n{\n%s\n}\n' \
		"$2" "$1" "$1" "$3" > "$tmp/$1.c"
	echo "obj-m += $1.o" >> "$tmp/Kbuild"
}

: > "$tmp/Kbuild"
probe HAVE_CLASS_CREATE_NAME_ONLY '#include <linux/device.h>' \
	'struct class *c = class_create("x"); (void)c;'
probe HAVE_VM_FLAGS_SET '#include <linux/mm.h>' \
	'struct vm_area_struct *v = NULL; vm_flags_set(v, VM_DONTEXPAND);'
probe HAVE_PAGE_PGMAP '#include <linux/mm.h>
#include <linux/memremap.h>' \
	'struct page *p = NULL; struct dev_pagemap *m = page_pgmap(p); (void)m;'
probe HAVE_PGMAP_FOLIO_FREE '#include <linux/memremap.h>' \
	'struct dev_pagemap_ops o = { .folio_free = NULL }; (void)o;'
probe HAVE_FOLL_PCI_P2PDMA '#include <linux/mm.h>' \
	'int f = FOLL_PCI_P2PDMA; (void)f;'
# 7.x: get_dev_pagemap() takes the page frame alone (no pgmap to reuse)
probe HAVE_GET_DEV_PAGEMAP_PFN '#include <linux/memremap.h>' \
	'struct dev_pagemap *m = get_dev_pagemap(0); (void)m;'

probe HAVE_DMA_BUF_INVALIDATE_MAPPINGS '#include <linux/dma-buf.h>' \
	'dma_buf_invalidate_mappings(NULL);'

# 7.x: a signalled fence is detached from its ops (no module reference needed)
probe HAVE_DMA_FENCE_DRIVER_NAME '#include <linux/dma-fence.h>' \
	'const char __rcu *n = dma_fence_driver_name(NULL); (void)n;'

# 7.x: page-less dma-buf mappings of MMIO (what vfio's exporter uses)
probe HAVE_DMA_BUF_PHYS_VEC_TO_SGT '#include <linux/dma-buf-mapping.h>' \
	'struct sg_table *t = dma_buf_phys_vec_to_sgt(NULL, NULL, NULL, 0, 0, DMA_TO_DEVICE); (void)t;'

# 6.2+: dma_buf_vmap() runs with the reservation lock held
probe HAVE_DMA_BUF_VMAP_UNLOCKED '#include <linux/dma-buf.h>' \
	'int r = dma_buf_vmap_unlocked(NULL, NULL); (void)r;'

# 6.11+: the device's own "no syncs" answer (CONFIG_DMA_NEED_SYNC), which
# CONFIG_DMA_API_DEBUG overrides in dma_need_sync(); 7.x: an accessor
probe HAVE_DEV_DMA_SKIP_SYNC '#include <linux/device.h>' \
	'struct device *d = NULL; bool b = d->dma_skip_sync; (void)b;'
probe HAVE_DEV_DMA_SKIP_SYNC_FN '#include <linux/device.h>' \
	'bool b = dev_dma_skip_sync(NULL); (void)b;'

# 6.8+: KUnit test devices (the dma-buf tests' non-PCI importer)
probe HAVE_KUNIT_DEVICE_REGISTER '#include <kunit/device.h>' \
	'struct device *d = kunit_device_register(NULL, "x"); (void)d;'

# 6.10+: user memory for KUnit tests (the ioctl argument convention's)
probe HAVE_KUNIT_VM_MMAP '#include <kunit/test.h>' \
	'unsigned long a = kunit_vm_mmap(NULL, NULL, 0, 0, 0, 0, 0); (void)a;'

# io_uring passthrough (.uring_cmd): 6.6+ <linux/io_uring/cmd.h> with a
# 4-argument io_uring_cmd_done(); 7.x splits off io_uring_cmd_done32() and
# reads the command with io_uring_sqe128_cmd()
probe HAVE_IO_URING_CMD_DONE4 '#include <linux/io_uring/cmd.h>' \
	'io_uring_cmd_done(NULL, 0, 0, 0);'
probe HAVE_IO_URING_CMD_DONE32 '#include <linux/io_uring/cmd.h>' \
	'io_uring_cmd_done32(NULL, 0, 0, 0);'
probe HAVE_IO_URING_CMD_FROM_TW '#include <linux/io_uring/cmd.h>' \
	'struct io_tw_req t = {}; struct io_uring_cmd *c = io_uring_cmd_from_tw(t); (void)c;'
# 7.x: the ring a command came from, as a handle
probe HAVE_IO_URING_CMD_CTX_HANDLE '#include <linux/io_uring/cmd.h>' \
	'void *h = io_uring_cmd_ctx_handle(NULL); (void)h;'
# 6.5+: a command's answer handed to its task with a lazy wake (else
# io_uring_cmd_complete_in_task())
probe HAVE_IO_URING_CMD_DO_IN_TASK_LAZY '#include <linux/io_uring/cmd.h>' \
	'io_uring_cmd_do_in_task_lazy(NULL, NULL);'
# 7.x: io_uring_cmd_import_fixed() takes the issue flags
probe HAVE_IO_URING_CMD_IMPORT_FIXED_FLAGS '#include <linux/io_uring/cmd.h>' \
	'struct iov_iter i; int r = io_uring_cmd_import_fixed(0, 0, 0, &i, NULL, 0); (void)r;'
probe HAVE_IO_URING_SQE128_CMD '#include <linux/io_uring/cmd.h>' \
	'struct io_uring_cmd *c = NULL; const u64 *p = io_uring_sqe128_cmd(c->sqe, u64); (void)p;'

# 6.7+: shrinkers are allocated by the core (shrinker_alloc()), not
# embedded and registered (register_shrinker(), gone in 6.7)
probe HAVE_SHRINKER_ALLOC '#include <linux/shrinker.h>' \
	'struct shrinker *s = shrinker_alloc(0, "x"); shrinker_register(s); shrinker_free(s);'

# 6.7+: a reference on a file that may be in its last fput
probe HAVE_GET_FILE_ACTIVE '#include <linux/fs.h>' \
	'struct file *f = NULL; f = get_file_active(&f); (void)f;'

probe HAVE_PCIM_REQUEST_REGION '#include <linux/pci.h>' \
	'int r = pcim_request_region(NULL, 0, "x"); (void)r;'

probe HAVE_PCIM_IOMAP_REGION '#include <linux/pci.h>' \
	'void __iomem *p = pcim_iomap_region(NULL, 0, "x"); (void)p;'

# p2pnvme's disk (drivers/p2pnvme/disk.c). 6.11+: queue features in the
# limits (BLK_FEAT_*), 6.1's queue flags before; 6.9+: blk_mq_alloc_disk()
# takes the limits, 6.1 has two arguments and blk_queue_*() setters; 7.x:
# blk_rq_map_sg() without the queue; 6.2+: the whole tag set quiesced at
# once; 6.14 dropped BLK_MQ_F_SHOULD_MERGE (merging is the default)
probe HAVE_BLK_FEAT_PCI_P2PDMA '#include <linux/blkdev.h>' \
	'blk_features_t f = BLK_FEAT_PCI_P2PDMA; (void)f;'
probe HAVE_BLK_MQ_ALLOC_DISK_LIMITS '#include <linux/blk-mq.h>' \
	'struct queue_limits l = {}; struct gendisk *d = blk_mq_alloc_disk(NULL, &l, NULL); (void)d;'
probe HAVE_BLK_RQ_MAP_SG_NO_QUEUE '#include <linux/blk-mq.h>' \
	'int n = blk_rq_map_sg(NULL, NULL); (void)n;'
probe HAVE_BLK_MQ_QUIESCE_TAGSET '#include <linux/blk-mq.h>' \
	'blk_mq_quiesce_tagset(NULL);'
probe HAVE_BLK_MQ_F_SHOULD_MERGE '#include <linux/blk-mq.h>' \
	'unsigned int f = BLK_MQ_F_SHOULD_MERGE; (void)f;'

# p2pnvme's file command (drivers/p2pnvme/file.c). 7.x: struct file_kattr
# for vfs_fileattr_get() (struct fileattr before); 7.x: the direct read's
# own offset alignment in statx (xfs); 6.6+ (and later 6.1.y):
# kiocb_start_write(), the freeze protection of an asynchronous write
probe HAVE_FILE_KATTR '#include <linux/fs.h>
#include <linux/fileattr.h>' \
	'struct file_kattr fa = {}; int r = vfs_fileattr_get(NULL, &fa); (void)r;'
probe HAVE_KSTAT_DIO_READ_OFFSET_ALIGN '#include <linux/stat.h>' \
	'struct kstat st = {}; u32 a = st.dio_read_offset_align; (void)a;'
probe HAVE_KIOCB_START_WRITE '#include <linux/fs.h>' \
	'kiocb_start_write(NULL);'

objs=$(sed -n 's/^obj-m += //p' "$tmp/Kbuild")
# -k: a probe that does not compile is an answer, not an error.
make -k -s -j"$(nproc)" -C "$kdir" M="$tmp" KBUILD_MODPOST_WARN=1 $objs >"$tmp/log" 2>&1 || true

mkdir -p "$(dirname "$out")"
# kept for whoever wonders why a probe said no
cp "$tmp/log" "$(dirname "$out")/conftest.log"
{
	echo "/* SPDX-License-Identifier: GPL-2.0 */"
	echo "/* Generated by scripts/conftest.sh against $(cat "$kdir/include/config/kernel.release" 2>/dev/null || echo "$kdir"). Do not edit. */"
	echo "#ifndef P2P_COMPAT_AUTOCONF_H"
	echo "#define P2P_COMPAT_AUTOCONF_H"
	for o in $objs; do
		n=${o%.o}
		if [ -s "$tmp/$o" ]; then echo "#define $n 1"; else echo "/* #undef $n */"; fi
	done
	echo "#endif"
} > "$out.tmp"
mv "$out.tmp" "$out"
