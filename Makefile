# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree build of the P2PDMA suite and the entry points of its bench.
#
#   make [KDIR=<kernel build dir>] [W=1] [C=1]   build every module (and the tools)
#   make install [DESTDIR=] [PREFIX=/usr/local]  modules into updates/, signed if a key
#                [KEY= CERT=]                    is found, depmod, tools, man page,
#                                                example udev/modprobe files
#   make uninstall [DESTDIR=] [PREFIX=]          remove what install put there
#   make dkms                                    register, build and install with DKMS
#   make dist                                    p2pdma-suite-<version>.tar.gz (rpmbuild -ta)
#   make demo                                    boot the emulated server, show a P2P transfer
#   make check [T=PROFILE.TEST[.FLAVOUR] ...]    every test (or just those boots;
#                                                T=build: the compile matrix)
#   make clean
#
# KDIR defaults to the running kernel's build tree. The kernel must be 6.1 or
# later and have CONFIG_PCI_P2PDMA (and so CONFIG_ZONE_DEVICE); P2P_COMPILE_ONLY=1
# builds against one without P2PDMA, for compile coverage only (the modules
# cannot work).

KDIR ?= /lib/modules/$(shell uname -r)/build
PWD := $(CURDIR)
VERSION := $(shell cat $(CURDIR)/VERSION)
KCONFIG := $(KDIR)/.config
# the release as uname -r says it (distributions' kernel.release can differ)
KRELEASE = $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
		$(KDIR)/include/generated/utsrelease.h 2>/dev/null)
PREFIX ?= /usr/local
DESTDIR ?=
MODDIR = /lib/modules/$(KRELEASE)/updates/p2pdma
# the kernel's version (6.1 is 0x060100): older ones are refused
KVERSION_CODE = $(shell sed -n 's/^\#define LINUX_VERSION_CODE \([0-9]*\)$$/\1/p' \
		$(KDIR)/include/generated/uapi/linux/version.h 2>/dev/null)
P2P_KUNIT ?= 1

kconfig = $(shell grep -s '^$(1)=[ym]' $(KCONFIG))

# Kconfig symbols an in-tree build would set (see Kconfig). The KUnit test
# modules only where the kernel has KUnit (and, for the live exporter
# tests, dma-buf), and not for install (P2P_KUNIT=0).
SUITE_CONFIG := CONFIG_P2PBAR=m CONFIG_P2PNVME=m
ifneq ($(call kconfig,CONFIG_KUNIT),)
KUNIT_CONFIG := CONFIG_P2PBAR_KUNIT_TEST=m CONFIG_P2PNVME_KUNIT_TEST=m \
		CONFIG_P2P_TOPOLOGY_KUNIT_TEST=m
ifneq ($(call kconfig,CONFIG_DMA_SHARED_BUFFER),)
KUNIT_CONFIG += CONFIG_P2PBAR_LIVE_KUNIT_TEST=m CONFIG_P2PBAR_DMABUF_KUNIT_TEST=m
endif
endif
# The bench's GPU-like dma-buf exporter (tools/testing/p2pgpu), with the
# test modules only: never installed.
ifneq ($(call kconfig,CONFIG_DMA_SHARED_BUFFER),)
BENCH_CONFIG := CONFIG_P2PGPU_BENCH=m
endif
# A modules_prepare-only tree has no Module.symvers: let modpost warn.
ifeq ($(wildcard $(KDIR)/Module.symvers),)
SUITE_CONFIG += KBUILD_MODPOST_WARN=1
endif

COMPAT_H := include/generated/compat_autoconf.h
COMPAT_STAMP := include/generated/.kdir

all: modules tools

# Before anything compiles: a kernel tree that can build modules, and the
# options the suite needs. One message each, naming what to do.
prereq:
	@test -f $(KDIR)/Makefile || { \
	  echo "error: no kernel build tree at $(KDIR)."; \
	  echo "  Install the headers of the kernel you build for (Debian/Ubuntu: apt install linux-headers-$$(uname -r);"; \
	  echo "  RHEL/Fedora: dnf install kernel-devel-$$(uname -r); openSUSE: zypper install kernel-default-devel)"; \
	  echo "  or point KDIR= at a configured kernel tree."; exit 1; } >&2
	@test -f $(KCONFIG) -a -f $(KDIR)/include/generated/autoconf.h || { \
	  echo "error: $(KDIR) is not a configured, prepared kernel tree (no .config or autoconf.h)."; \
	  echo "  Run 'make olddefconfig modules_prepare' in it, or install the distribution's headers package."; \
	  exit 1; } >&2
	@code=$(or $(KVERSION_CODE),0); [ $$code -eq 0 ] || [ $$code -ge $$((0x060100)) ] || { \
	  echo "error: this kernel ($(KRELEASE), $$((code >> 16)).$$((code >> 8 & 255))) is older than 6.1, the oldest the suite supports."; \
	  echo "  Use a 6.1 or later kernel with CONFIG_PCI_P2PDMA (RHEL 9's 5.14 is not supported: RHEL 10 and"; \
	  echo "  Ubuntu 24.04 ship newer ones), or the bench's (qemu/configs/base.config). README.md, \"Kernels\"."; \
	  exit 1; } >&2
ifneq ($(P2P_COMPILE_ONLY),1)
	@test -n "$(call kconfig,CONFIG_ZONE_DEVICE)" || { \
	  echo "error: this kernel ($(KRELEASE)) lacks CONFIG_ZONE_DEVICE, which CONFIG_PCI_P2PDMA needs."; \
	  echo "  Use a kernel that has both, such as Ubuntu 24.04's, or the bench's test kernel"; \
	  echo "  (qemu/configs/base.config). README.md, \"Kernels\"."; \
	  exit 1; } >&2
	@test -n "$(call kconfig,CONFIG_PCI_P2PDMA)" || { \
	  echo "error: this kernel ($(KRELEASE)) lacks CONFIG_PCI_P2PDMA: p2pbar could not register p2pmem."; \
	  echo "  Use a kernel that has it, such as Ubuntu 24.04's, or the bench's test kernel"; \
	  echo "  (qemu/configs/base.config); Debian 12/13 stock kernels have CONFIG_ZONE_DEVICE but not it."; \
	  echo "  (P2P_COMPILE_ONLY=1 compiles anyway, for build coverage: such modules cannot work.)"; \
	  exit 1; } >&2
else
	@echo "  NOTE     P2P_COMPILE_ONLY=1: not checking CONFIG_PCI_P2PDMA; the modules are for compile coverage"
endif

$(COMPAT_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(abspath $(KDIR)) $(KRELEASE)' | cmp -s - $@ || echo '$(abspath $(KDIR)) $(KRELEASE)' > $@

$(COMPAT_H): $(COMPAT_STAMP) scripts/conftest.sh
	@echo "  CONFTEST $(KDIR)"
	@scripts/conftest.sh $(KDIR) $@

modules: prereq $(COMPAT_H)
	$(MAKE) -C $(KDIR) M=$(PWD) $(SUITE_CONFIG) $(if $(filter 1,$(P2P_KUNIT)),$(KUNIT_CONFIG) $(BENCH_CONFIG)) modules

tools:
	$(MAKE) -C tools

# Modules into /lib/modules/<release>/updates/p2pdma (found before in-tree
# ones), depmod; p2pctl, its man page; udev, modprobe.d, modules-load.d files as examples
# only (docs/examples): they change permissions and options, so the
# administrator activates them (Documentation/quickstart.rst).
EXAMPLES = $(PREFIX)/share/doc/p2pdma-suite/examples
INSTALLED = $(MODDIR)/p2pbar.ko $(MODDIR)/p2pnvme.ko $(PREFIX)/bin/p2pctl \
	    $(PREFIX)/share/man/man8/p2pctl.8 $(EXAMPLES)/70-p2pdma.rules \
	    $(EXAMPLES)/p2pdma.conf $(EXAMPLES)/71-p2pbar-bind.rules $(EXAMPLES)/p2pdma-modules.conf

install: P2P_KUNIT = 0
install: no-dkms-copy modules tools
	install -d $(DESTDIR)$(MODDIR)
	install -m 0644 drivers/p2pbar/p2pbar.ko drivers/p2pnvme/p2pnvme.ko $(DESTDIR)$(MODDIR)/
	@scripts/sign-modules.sh $(KDIR) '$(KEY)' '$(CERT)' $(DESTDIR)$(MODDIR)/p2pbar.ko \
		$(DESTDIR)$(MODDIR)/p2pnvme.ko
	install -D -m 0755 tools/build/p2pctl $(DESTDIR)$(PREFIX)/bin/p2pctl
	install -D -m 0644 Documentation/man/p2pctl.8 $(DESTDIR)$(PREFIX)/share/man/man8/p2pctl.8
	install -D -m 0644 packaging/udev/70-p2pdma.rules $(DESTDIR)$(EXAMPLES)/70-p2pdma.rules
	install -D -m 0644 packaging/udev/71-p2pbar-bind.rules $(DESTDIR)$(EXAMPLES)/71-p2pbar-bind.rules
	install -D -m 0644 packaging/modprobe.d/p2pdma.conf $(DESTDIR)$(EXAMPLES)/p2pdma.conf
	install -D -m 0644 packaging/modules-load.d/p2pdma-modules.conf $(DESTDIR)$(EXAMPLES)/p2pdma-modules.conf
	depmod $(if $(DESTDIR),-b $(DESTDIR)) -a $(KRELEASE) 2>/dev/null || \
	  echo "  NOTE     depmod -a $(KRELEASE) failed: run it before modprobe"

# One copy of the modules per kernel: DKMS's (updates/dkms) or make
# install's (updates/p2pdma), never both (which one modprobe loads would
# depend on depmod's order). make install refuses while DKMS has them;
# make dkms removes make install's once DKMS has built its own, before
# dkms install (whose version check would keep make install's otherwise).
DKMS_COPY = $(wildcard $(DESTDIR)/lib/modules/$(KRELEASE)/updates/dkms/p2pbar.ko*)
no-dkms-copy:
	@test -z "$(DKMS_COPY)" || { \
	  echo "error: DKMS has installed the suite for $(KRELEASE) ($(firstword $(DKMS_COPY)));"; \
	  echo "  with a second copy, depmod's order would choose which loads. Keep DKMS's, or remove it first:"; \
	  echo "  dkms remove p2pdma-suite/$(VERSION) --all (or remove the p2pdma-dkms package)."; \
	  exit 1; } >&2

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(MODDIR) $(DESTDIR)$(EXAMPLES) $(DESTDIR)$(PREFIX)/share/doc/p2pdma-suite 2>/dev/null
	depmod $(if $(DESTDIR),-b $(DESTDIR)) -a $(KRELEASE) 2>/dev/null || true

# DKMS: the sources to /usr/src/p2pdma-suite-<version>, then add, build and
# install for KDIR's kernel (the running one by default).
DKMS_SRC = $(DESTDIR)/usr/src/p2pdma-suite-$(VERSION)
dkms-source:
	rm -rf $(DKMS_SRC)
	mkdir -p $(DKMS_SRC)
	tar -C $(CURDIR) -cf - --exclude='include/generated' --exclude='*.o' --exclude='*.ko' \
	    --exclude='*.cmd' --exclude='*.mod' --exclude='*.mod.c' --exclude='modules.order' \
	    --exclude='Module.symvers' VERSION Makefile Kbuild Kconfig scripts/conftest.sh include common drivers kunit | \
	  tar -C $(DKMS_SRC) -xf -
	test -f $(DKMS_SRC)/drivers/p2pbar/main.c
	sed 's/@VERSION@/$(VERSION)/' packaging/dkms.conf.in > $(DKMS_SRC)/dkms.conf

dkms: dkms-source
	dkms add -m p2pdma-suite -v $(VERSION)
	dkms build -m p2pdma-suite -v $(VERSION) -k $(KRELEASE) --kernelsourcedir $(KDIR)
	@if [ -e $(DESTDIR)$(MODDIR)/p2pbar.ko ] || [ -e $(DESTDIR)$(MODDIR)/p2pnvme.ko ]; then \
	  rm -f $(DESTDIR)$(MODDIR)/p2pbar.ko $(DESTDIR)$(MODDIR)/p2pnvme.ko; rmdir $(DESTDIR)$(MODDIR) 2>/dev/null || true; \
	  echo "  NOTE     removed make install's modules for $(KRELEASE): DKMS's are the ones now"; fi
	dkms install -m p2pdma-suite -v $(VERSION) -k $(KRELEASE)

# A release tarball with the RPM spec inside (rpmbuild -ta takes it as is):
# the files git tracks or would (not ignored), under p2pdma-suite-<version>/.
# Outside a git checkout of its own (an unpacked release tarball, wherever
# it lies), the tree as it is, less what its .gitignore files name (rsync).
DIST = out/dist/p2pdma-suite-$(VERSION)
dist:
	rm -rf out/dist
	mkdir -p $(DIST)
	set -e; cd $(CURDIR); \
	if [ "$$(git rev-parse --show-prefix 2>/dev/null || echo none)" = "" ]; then \
	  git ls-files -co --exclude-standard | grep -v '^out/' | tar -cf - -T - | tar -C $(DIST) -xf -; \
	else \
	  rsync -rl --exclude /.git --exclude /out --filter ':- .gitignore' ./ $(DIST)/; \
	fi
	sed 's/@VERSION@/$(VERSION)/' packaging/rpm/p2pdma-suite.spec.in > $(DIST)/p2pdma-suite.spec
	tar -C out/dist --owner=0 --group=0 -czf $(DIST).tar.gz p2pdma-suite-$(VERSION)
	rm -rf $(DIST)
	@echo "  DIST     $(DIST).tar.gz"

clean:
	$(MAKE) -C $(KDIR) M=$(PWD) clean 2>/dev/null || true
	rm -rf include/generated tools/build

demo:
	qemu/bench.sh demo

check:
	qemu/bench.sh check $(foreach t,$(T),'$(t)')

.PHONY: all prereq modules tools install no-dkms-copy uninstall dkms-source dkms dist clean demo check FORCE
