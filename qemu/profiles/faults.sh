# SPDX-License-Identifier: GPL-2.0
# The switch with faulty storage behind the NVMe controllers: nvme0's image
# fails reads of LBA 65536 (blkdebug, EIO), nvme1's image is throttled to
# 64 KiB/s so that a large command outlives a short io_timeout_ms; nvme2
# and nvme3 have namespaces with 8 bytes of metadata per LBA (separate and
# extended LBAs), which p2pnvme must refuse; nvme4 reports an MDTS of 60
# (2^60 pages: more than a shift can hold).
P_DESC="switch; nvme0 with a read error at LBA 65536 (blkdebug), nvme1 throttled to 64 KiB/s, nvme2/3 with metadata"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=4
cat > "$RUN/blkdebug.cfg" <<EOC
[inject-error]
event = "read_aio"
errno = "5"
sector = "65536"
EOC
truncate -s 16M "$RUN/meta2.img" "$RUN/meta3.img" "$RUN/mdts4.img"
P_DEVICES=(
	$(pcie_switch 6)
	-blockdev "driver=file,node-name=f-nvme0,filename=$RUN/nvme0.img"
	-blockdev "driver=blkdebug,node-name=d-nvme0,config=$RUN/blkdebug.cfg,image=f-nvme0"
	-blockdev driver=raw,node-name=r-nvme0,file=d-nvme0
	-device nvme,drive=r-nvme0,serial=nvme0,id=nvme0,bus=dn0
	$(bar_dev bar0 dn1)
	-object throttle-group,id=tg0,x-bps-total=65536
	-blockdev "driver=file,node-name=f-nvme1,filename=$RUN/nvme1.img"
	-blockdev driver=raw,node-name=r-nvme1,file=f-nvme1
	-blockdev driver=throttle,node-name=t-nvme1,throttle-group=tg0,file=r-nvme1
	-device nvme,drive=t-nvme1,serial=nvme1,id=nvme1,bus=dn2
	-drive "file=$RUN/meta2.img,if=none,id=drv-meta2,format=raw"
	-device nvme,serial=nvme2,id=nvme2,bus=dn3
	-device nvme-ns,drive=drv-meta2,bus=nvme2,nsid=1,ms=8
	-drive "file=$RUN/meta3.img,if=none,id=drv-meta3,format=raw"
	-device nvme,serial=nvme3,id=nvme3,bus=dn4
	-device nvme-ns,drive=drv-meta3,bus=nvme3,nsid=1,ms=8,mset=1
	-drive "file=$RUN/mdts4.img,if=none,id=drv-mdts4,format=raw"
	-device nvme,drive=drv-mdts4,serial=nvme4,id=nvme4,bus=dn5,mdts=60
)
