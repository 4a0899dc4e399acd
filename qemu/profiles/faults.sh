# SPDX-License-Identifier: GPL-2.0
# The switch with faulty storage behind the NVMe controllers: nvme0's image
# fails reads of LBA 65536 (blkdebug, EIO), nvme1's image is throttled to
# 64 KiB/s so that a large command outlives a short io_timeout_ms.
P_DESC="switch; nvme0 with a read error at LBA 65536 (blkdebug), nvme1 throttled to 64 KiB/s"
P_CPU=max
P_EXPECT=direct
P_DISTANCE=4
cat > "$RUN/blkdebug.cfg" <<EOC
[inject-error]
event = "read_aio"
errno = "5"
sector = "65536"
EOC
P_DEVICES=(
	$(pcie_switch 3)
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
)
