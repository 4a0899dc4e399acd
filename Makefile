# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree build of the P2PDMA suite and the entry points of its bench.
#
#   make [KDIR=<kernel build dir>] [W=1] [C=1]   the tools, then every module; KDIR unset, a
#                                                line first on whether the running kernel can
#                                                load them. When they cannot be built, the tools
#                                                are, and make ends with why not (exit status 2)
#   make modules | make tools                    the modules alone (stop at what is missing),
#                                                the tools alone (whatever the kernel)
#   make install [DESTDIR=] [PREFIX=/usr/local]  modules into updates/, signed if a key
#                [KEY= CERT=]                    is found, depmod, tools, man page,
#                                                example udev/modprobe files
#   make uninstall [DESTDIR=] [PREFIX=]          remove what install put there
#   make dkms                                    register, build and install with DKMS
#   make dist                                    p2pdma-suite-<version>.tar.gz (rpmbuild -ta)
#   make kernel-deb [KERNEL_DEB_ARGS='...']      Debian packages (linux-image, linux-headers) of
#                                                the running kernel's series and configuration
#                                                with P2PDMA, in out/kernel-deb; the arguments:
#                                                scripts/kernel-deb.sh --help
#   make demo                                    boot the emulated server, show a P2P transfer
#   make check [T=PROFILE.TEST[.FLAVOUR] ...]    every test (or just those boots;
#                                                T=build: the compile matrix)
#   make clean
#
# KDIR defaults to the running kernel's build tree (its headers package). The
# kernel must be 6.1 or later and have CONFIG_PCI_P2PDMA (and so
# CONFIG_ZONE_DEVICE). KDIR unset, the running kernel's own word decides first
# (/proc/config.gz, else /boot/config-<release>, else /proc/kallsyms), then its
# headers' configuration; KDIR given, that tree's (.config, else
# include/config/auto.conf). P2P_COMPILE_ONLY=1 builds against
# a kernel without P2PDMA, for compile coverage only (the modules cannot
# work). Each refusal and its fix: Documentation/troubleshooting.rst,
# "Building"; a Debian kernel with P2PDMA: Documentation/quickstart.rst.

# For the tests only (qemu/install-check.sh): P2P_ROOT, a made-up / whose
# proc, boot and lib/modules stand for the running kernel's, and
# P2P_RELEASE, for uname -r.
P2P_ROOT ?=
ifeq ($(origin P2P_RELEASE),undefined)
P2P_RELEASE := $(shell uname -r)
endif
ifeq ($(origin KDIR),undefined)
RUNNING := 1
endif
KDIR ?= $(P2P_ROOT)/lib/modules/$(P2P_RELEASE)/build
PWD := $(CURDIR)
VERSION := $(shell cat $(CURDIR)/VERSION)
# The tree's configuration: .config, else include/config/auto.conf, the same
# CONFIG_ lines (kbuild reads that one; the headers packages of 6.12's and
# later's bindeb-pkg have no .config). Neither: prereq refuses the tree.
KCONFIG = $(firstword $(wildcard $(KDIR)/.config $(KDIR)/include/config/auto.conf))
# what kbuild needs of a prepared tree to build modules, and which is missing
KPREPARED := include/config/auto.conf include/generated/autoconf.h
KUNPREPARED = $(filter-out $(patsubst $(KDIR)/%,%,$(wildcard $(addprefix $(KDIR)/,$(KPREPARED)))),$(KPREPARED))
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

# Nothing below reads the kernel tree before a goal needs it: make tools
# never looks at the kernel.
kconfig = $(if $(KCONFIG),$(shell grep -s '^$(1)=[ym]' $(KCONFIG)))

# Kconfig symbols an in-tree build would set (see Kconfig). The KUnit test
# modules only where the kernel has KUnit (and, for the live exporter
# tests, dma-buf), and not for install (P2P_KUNIT=0). A modules_prepare-only
# tree has no Module.symvers: let modpost warn.
SUITE_CONFIG = CONFIG_P2PBAR=m CONFIG_P2PNVME=m $(if $(wildcard $(KDIR)/Module.symvers),,KBUILD_MODPOST_WARN=1)
KUNIT_CONFIG = $(if $(call kconfig,CONFIG_KUNIT),CONFIG_P2PBAR_KUNIT_TEST=m CONFIG_P2PNVME_KUNIT_TEST=m \
		CONFIG_P2P_TOPOLOGY_KUNIT_TEST=m $(if $(call kconfig,CONFIG_DMA_SHARED_BUFFER),$(DMABUF_KUNIT)))
DMABUF_KUNIT := CONFIG_P2PBAR_LIVE_KUNIT_TEST=m CONFIG_P2PBAR_DMABUF_KUNIT_TEST=m
# The bench's GPU-like dma-buf exporter (tools/testing/p2pgpu), with the
# test modules only: never installed.
BENCH_CONFIG = $(if $(call kconfig,CONFIG_DMA_SHARED_BUFFER),CONFIG_P2PGPU_BENCH=m)

COMPAT_H := include/generated/compat_autoconf.h
COMPAT_STAMP := include/generated/.kdir

# The goals that build the modules, and so look at the kernel (make alone: all)
KGOALS := $(filter all modules prereq install,$(or $(MAKECMDGOALS),all))
# Debian 12's and 13's stock kernels lack CONFIG_PCI_P2PDMA: make
# kernel-deb, documented there (KDEB_SH: the same in echo's double quotes)
KDEB_DOC := Documentation/quickstart.rst, "A kernel with P2PDMA on Debian"
KDEB_SH := $(subst ",\",$(KDEB_DOC))
fix_debian_sh = \
	echo "  On Debian (12's and 13's stock kernels lack it), make kernel-deb rebuilds Debian's kernel"; \
	echo "  with it: $(KDEB_SH).";

# KDIR unset: first, one line on the running kernel, as it says itself.
# RUNNING_P2PDMA is "y FILE" or "n FILE", CONFIG_PCI_P2PDMA in the first
# source that can tell (a config.gz that is not gzip tells nothing, nor does
# a kallsyms without symbols), else "?".
ifneq ($(and $(RUNNING),$(KGOALS)),)
RUNNING_P2PDMA := $(shell proc=$(P2P_ROOT)/proc boot=$(P2P_ROOT)/boot/config-$(P2P_RELEASE) f=; \
	if zcat $$proc/config.gz >/dev/null 2>&1; then f=$$proc/config.gz; \
	elif [ -r $$boot ]; then f=$$boot; fi; \
	if [ -n "$$f" ]; then \
	  if zcat -f $$f | grep -q '^CONFIG_PCI_P2PDMA=y$$'; then echo y $$f; else echo n $$f; fi; \
	elif [ -r $$proc/kallsyms ]; then \
	  awk 'NF > 2 { n = 1 } $$3 == "pci_p2pdma_add_resource" { y = 1; exit } \
	       END { print (y ? "y" : n ? "n" : "?"), FILENAME }' $$proc/kallsyms; \
	else echo '?'; fi)
RUNNING_OLD := $(shell echo '$(P2P_RELEASE)' | awk -F. '$$1 < 6 || ($$1 == 6 && $$2 + 0 < 1) { print 1 }')
R_SAYS := $(word 1,$(RUNNING_P2PDMA))
R_FILE := $(word 2,$(RUNNING_P2PDMA))
ifneq ($(RUNNING_OLD),)
$(info p2pdma-suite: the running kernel $(P2P_RELEASE) is older than 6.1: the modules cannot load on it; boot a 6.1 or later kernel with CONFIG_PCI_P2PDMA (README.md, "Kernels"))
running_sh = { \
	echo "error: the running kernel $(P2P_RELEASE) is older than 6.1, the oldest the suite supports."; \
	echo "  Fix: boot a 6.1 or later kernel built with CONFIG_PCI_P2PDMA=y, install its headers, make again."; \
	echo "  README.md, \"Kernels\", lists the kernels tried."; \
	exit 1; } >&2;
else ifeq ($(R_SAYS),n)
$(info p2pdma-suite: the running kernel $(P2P_RELEASE) lacks CONFIG_PCI_P2PDMA ($(R_FILE)): the modules cannot load on it; boot a kernel built with it (on Debian: make kernel-deb, $(KDEB_DOC)))
ifneq ($(P2P_COMPILE_ONLY),1)
running_sh = { \
	echo "error: the running kernel $(P2P_RELEASE) lacks CONFIG_PCI_P2PDMA ($(R_FILE)): p2pbar could not register p2pmem."; \
	echo "  Fix: boot a kernel built with CONFIG_PCI_P2PDMA=y, install its headers (or give KDIR= its build"; \
	echo "  tree), make again."; \
	$(fix_debian_sh) \
	echo "  (P2P_COMPILE_ONLY=1 compiles anyway, for build coverage: such modules cannot work.)"; \
	exit 1; } >&2;
endif
else ifeq ($(R_SAYS),y)
$(info p2pdma-suite: the running kernel $(P2P_RELEASE) has CONFIG_PCI_P2PDMA ($(R_FILE)): the modules can load on it)
else
$(info p2pdma-suite: the running kernel $(P2P_RELEASE) does not say whether it has CONFIG_PCI_P2PDMA (no $(P2P_ROOT)/proc/config.gz, $(P2P_ROOT)/boot/config-$(P2P_RELEASE), or symbols in $(P2P_ROOT)/proc/kallsyms): its headers' configuration decides)
endif
endif

# Before anything compiles, as one shell command (prereq's, and make's
# choice): the running kernel (KDIR unset), a kernel tree that can build
# modules, its version, the options the suite needs. One message each,
# naming the fix; exit 1 at the first.
ifneq ($(RUNNING),)
nokdir_sh = \
	echo "error: no kernel build tree at $(KDIR): the running kernel's headers are not installed."; \
	echo "  Fix: install them (Debian/Ubuntu: apt install linux-headers-$(P2P_RELEASE); RHEL/Fedora: dnf install"; \
	echo "  kernel-devel-$(P2P_RELEASE); openSUSE: zypper install kernel-default-devel; a kernel made by"; \
	echo "  make kernel-deb: its linux-headers package, in out/kernel-deb), or give KDIR= a configured kernel tree.";
else
nokdir_sh = \
	echo "error: no kernel build tree at $(KDIR)."; \
	echo "  Fix: give KDIR= a configured kernel tree, or install the headers of the kernel you build for"; \
	echo "  (Debian/Ubuntu: apt install linux-headers-<release>; RHEL/Fedora: dnf install kernel-devel-<release>;"; \
	echo "  openSUSE: zypper install kernel-default-devel).";
endif
prereq_sh = $(running_sh) \
	test -f $(KDIR)/Makefile || { $(nokdir_sh) exit 1; } >&2; \
	test -n "$(KCONFIG)" || { \
	  echo "error: $(KDIR) is not a configured kernel tree: it has neither .config nor include/config/auto.conf."; \
	  echo "  Fix: run 'make olddefconfig modules_prepare' in it, or install the kernel's headers package again."; \
	  exit 1; } >&2; \
	test -z "$(KUNPREPARED)" || { \
	  echo "error: $(KDIR) is configured but not prepared: it has no $(KUNPREPARED)."; \
	  echo "  Fix: run 'make modules_prepare' in it, or install the kernel's headers package again."; \
	  exit 1; } >&2; \
	code=$(or $(KVERSION_CODE),0); [ $$code -eq 0 ] || [ $$code -ge $$((0x060100)) ] || { \
	  echo "error: this kernel ($(KRELEASE), $$((code >> 16)).$$((code >> 8 & 255))) is older than 6.1, the oldest the suite supports."; \
	  echo "  Fix: use a 6.1 or later kernel with CONFIG_PCI_P2PDMA (RHEL 9's and SLES 15's 5.14, Ubuntu 22.04's"; \
	  echo "  5.15 are older; RHEL 10 ships 6.12). README.md, \"Kernels\", lists the kernels tried."; \
	  exit 1; } >&2;
ifneq ($(P2P_COMPILE_ONLY),1)
prereq_sh += \
	test -n "$(call kconfig,CONFIG_ZONE_DEVICE)" || { \
	  echo "error: this kernel ($(KRELEASE)) lacks CONFIG_ZONE_DEVICE, which CONFIG_PCI_P2PDMA needs."; \
	  echo "  Fix: build against, and boot, a kernel built with both (CONFIG_ZONE_DEVICE=y, CONFIG_PCI_P2PDMA=y);"; \
	  echo "  on Debian: make kernel-deb ($(KDEB_SH))."; \
	  exit 1; } >&2; \
	test -n "$(call kconfig,CONFIG_PCI_P2PDMA)" || { \
	  echo "error: this kernel ($(KRELEASE)) lacks CONFIG_PCI_P2PDMA: p2pbar could not register p2pmem."; \
	  echo "  Fix: build against, and boot, a kernel built with CONFIG_PCI_P2PDMA=y."; \
	  $(fix_debian_sh) \
	  echo "  (P2P_COMPILE_ONLY=1 compiles anyway, for build coverage: such modules cannot work.)"; \
	  exit 1; } >&2;
endif

# make: the tools, and the modules when they can be built; when they cannot,
# the tools still, then why not, last (make fails). make modules stops at once.
ifneq ($(filter all,$(KGOALS)),)
MODULES_OK := $(shell ( $(prereq_sh) ) >/dev/null 2>&1 && echo 1)
endif
all: tools $(if $(MODULES_OK),modules,why-no-modules)

why-no-modules: tools
	@echo "p2pdma-suite: the tools are built (tools/build/), the modules are not:" >&2
	@$(prereq_sh)
	@echo "error: the modules' checks pass now: make again" >&2; exit 1

prereq:
	@$(prereq_sh)
ifeq ($(P2P_COMPILE_ONLY),1)
	@echo "  NOTE     P2P_COMPILE_ONLY=1: not checking CONFIG_PCI_P2PDMA; the modules are for compile coverage"
endif

$(COMPAT_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(abspath $(KDIR)) $(KRELEASE)' | cmp -s - $@ || echo '$(abspath $(KDIR)) $(KRELEASE)' > $@

# after prereq: no probe runs against a tree it refuses
$(COMPAT_H): $(COMPAT_STAMP) scripts/conftest.sh | prereq
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

# Debian's kernel with P2PDMA, packaged (Documentation/quickstart.rst, "A
# kernel with P2PDMA on Debian")
kernel-deb:
	scripts/kernel-deb.sh $(KERNEL_DEB_ARGS)

demo:
	qemu/bench.sh demo

check:
	qemu/bench.sh check $(foreach t,$(T),'$(t)')

.PHONY: all why-no-modules prereq modules tools install no-dkms-copy uninstall dkms-source dkms dist kernel-deb clean demo check FORCE
