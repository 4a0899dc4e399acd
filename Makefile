# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree build of the P2PDMA suite and the entry points of its bench.
#
#   make [KDIR=<kernel build dir>] [W=1] [C=1]   build every module
#   make demo                                    boot the emulated server, show a P2P transfer
#   make check                                   every test: compile matrix, KUnit, live, host checks
#   make clean
#
# KDIR defaults to the running kernel's build tree.

KDIR ?= /lib/modules/$(shell uname -r)/build
PWD := $(CURDIR)

# Kconfig symbols an in-tree build would set (see Kconfig).
SUITE_CONFIG := CONFIG_P2PBAR=m CONFIG_P2PNVME=m
ifneq ($(shell grep -s '^CONFIG_KUNIT=y' $(KDIR)/.config),)
SUITE_CONFIG += CONFIG_P2PBAR_KUNIT_TEST=m CONFIG_P2PBAR_LIVE_KUNIT_TEST=m CONFIG_P2PNVME_KUNIT_TEST=m \
		CONFIG_P2P_TOPOLOGY_KUNIT_TEST=m
endif
# A modules_prepare-only tree has no Module.symvers: let modpost warn.
ifeq ($(wildcard $(KDIR)/Module.symvers),)
SUITE_CONFIG += KBUILD_MODPOST_WARN=1
endif

COMPAT_H := include/generated/compat_autoconf.h
COMPAT_STAMP := include/generated/.kdir

all: modules

$(COMPAT_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(abspath $(KDIR)) $(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)' | cmp -s - $@ || \
		echo '$(abspath $(KDIR)) $(shell cat $(KDIR)/include/config/kernel.release 2>/dev/null)' > $@

$(COMPAT_H): $(COMPAT_STAMP) scripts/conftest.sh
	@echo "  CONFTEST $(KDIR)"
	@scripts/conftest.sh $(KDIR) $@

modules: $(COMPAT_H)
	$(MAKE) -C $(KDIR) M=$(PWD) $(SUITE_CONFIG) modules

clean:
	$(MAKE) -C $(KDIR) M=$(PWD) clean 2>/dev/null || true
	rm -rf include/generated tools/build

demo:
	qemu/bench.sh demo

check:
	qemu/bench.sh check

.PHONY: all modules clean demo check FORCE
