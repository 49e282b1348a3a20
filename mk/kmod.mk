# SPDX-License-Identifier: GPL-2.0
# esa.ko, the kfunc variant of the XDP program, the netlink client library
# and the VM tests (docs/kmod.md).
#
#   make kmod [KVER=V] [KDIR=DIR]  esa.ko for kernel V (default: the
#                         running one) from its build tree: kmod/esa.ko,
#                         with BTF (kmod/build.sh; see also dkms.conf)
#   make kmod-dkms-src    the module's sources for DKMS into
#                         $(DESTDIR)/usr/src/esa-VERSION (docs/kmod.md)
#   make kmod-debian      esa.ko for Debian 12's 6.1 and 6.12 kernels:
#                         build/vm/KVER/esa.ko (downloads into vm/)
#   make vmtest           boot those kernels in qemu (no KVM needed) and
#                         run the module, netlink, kfunc, XDP and stress
#                         tests (installs the Debian packages it
#                         needs); VM_SERIES="6.12" for one, V=1 for
#                         the consoles
#   make vmtest-debug     the same on debug kernels built from Debian's
#                         linux-source-6.12 (lockdep, KASAN, kmemleak,
#                         atomic sleep; and KCSAN), built once and cached
#                         (30 to 45 minutes each the first time, then
#                         about 17 minutes a run): the check before a release
#   make kmod-checkpatch  the kernel's checkpatch.pl on kmod/ (downloads)
#   make bpf-checkpatch   the same on bpf/, but for what BPF needs
#   make kmod-genl        kmod/genl.[ch], the netlink policies and ops, from
#                         kmod/esa.yaml with 6.12's ynl-gen-c (downloads)
#   make kmod-spec-check  kmod/esa.yaml against the kernel's netlink spec
#                         schema and the UAPI header, and kmod/genl.[ch]
#                         against what ynl-gen-c makes of it (downloads;
#                         needs python3-yaml and python3-jsonschema)
#   make vm-clean         drop the download cache vm/
# The first two need root only for nothing; kmod-debian and vmtest need
# Debian's archive (apt-get download), which is why `all` builds neither.

KVER		?= $(shell uname -r)
KDIR		?= /lib/modules/$(KVER)/build
VM_SERIES	?= 6.1 6.12
VM_BIN		:= $(OUTPUT)/vm/bin
VM_TESTS	:= $(VM_BIN)/esa_nl_test $(VM_BIN)/esa_kfunc_test \
		   $(VM_BIN)/esa_unload_test $(VM_BIN)/esa_kmod_stress
# $(sort): once, whether or not COMMON has the netlink client already.
VM_LIBS		:= $(sort $(NL_OBJS) $(COMMON))

ALL_EXTRA	+= $(OUTPUT)/esa_kfunc.bpf.o $(NL_OBJS)
CLEAN_EXTRA	+= kmod-clean

.PHONY: kmod-dkms-src kmod kmod-clean kmod-debian kmod-checkpatch bpf-checkpatch kmod-spec-check vmtest \
	vmtest-debug vm-bins vm-clean kmod-genl

kmod:
	$(Q)kmod/build.sh $(KDIR) $(KVER)

KMOD_VERSION	:= $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
KMOD_SRC_DIR	:= $(DESTDIR)/usr/src/esa-$(KMOD_VERSION)

kmod-dkms-src:
	$(Q)install -d $(KMOD_SRC_DIR)/kmod $(KMOD_SRC_DIR)/include/uapi/linux
	$(Q)install -m 644 Kbuild dkms.conf $(KMOD_SRC_DIR)/
	$(Q)install -m 644 kmod/*.c kmod/*.h kmod/Makefile kmod/esa.yaml $(KMOD_SRC_DIR)/kmod/
	$(Q)install -m 755 kmod/build.sh kmod/extract-vmlinux.sh $(KMOD_SRC_DIR)/kmod/
	$(Q)install -m 644 include/uapi/linux/esa.h $(KMOD_SRC_DIR)/include/uapi/linux/
	$(call msg,INSTALL,$(KMOD_SRC_DIR))

kmod-clean:
	$(Q)rm -f kmod/*.o kmod/*.ko kmod/*.mod kmod/*.mod.c kmod/.*.cmd \
		kmod/modules.order Module.symvers modules.order .*.cmd \
		.module-common.o

# The data plane reading jobs through esa.ko.
$(OUTPUT)/esa_kfunc.bpf.o: bpf/esa.bpf.c bpf/esa_kfunc.bpf.h bpf/esa_kfuncs.h $(HDRS) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DESA_KFUNC -c $< -o $@

$(VM_BIN):
	$(Q)mkdir -p $@

# The kfuncs called directly, and programs that pass them what they must
# not get (selftests/kmod/esa_kf_probe.bpf.c).
$(OUTPUT)/esa_kf_probe.bpf.o: selftests/kmod/esa_kf_probe.bpf.c selftests/kmod/esa_kf_probe.h \
		bpf/esa_kfuncs.h $(HDRS) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Iselftests/kmod -Ibpf -c $< -o $@

# Static: the VM's initramfs has no libraries.
$(VM_BIN)/%: selftests/kmod/%.c selftests/kmod/kmod_test.h selftests/esa/testlib.h \
		selftests/kmod/esa_kf_probe.h $(OUTPUT)/esa_kf_probe.skel.h \
		$(VM_LIBS) $(HDRS) selftests/kselftest/kselftest_harness.h | $(VM_BIN)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-sign-compare -Iselftests/esa -Iselftests/kmod \
		-Iselftests/kselftest -static $< $(VM_LIBS) $(LDLIBS) -o $@

# The structure-aware fuzzer, on the kfunc variant with jobs in esa.ko.
$(VM_BIN)/esa_fuzz: selftests/esa/esa_fuzz.c selftests/esa/testlib.h $(VM_LIBS) $(HDRS) \
		selftests/kselftest/kselftest_harness.h | $(VM_BIN)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-sign-compare -Iselftests/esa -Iselftests/kselftest \
		-static $< $(VM_LIBS) $(LDLIBS) -o $@

$(VM_BIN)/esa_kfunc_bench: selftests/kmod/esa_kfunc_bench.c selftests/esa/testlib.h \
		selftests/esa/benchlib.h $(OUTPUT)/esa_bench.skel.h $(VM_LIBS) $(HDRS) | $(VM_BIN)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -Iselftests/esa -Ibpf -static $< $(VM_LIBS) $(LDLIBS) -o $@

# esactl itself, against esa.ko in the guest (run-tests.sh).
$(VM_BIN)/esactl: $(ESACTL_SRCS) user/esactl/esactl.h $(VM_LIBS) $(HDRS) | $(VM_BIN)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -static $(ESACTL_SRCS) $(VM_LIBS) $(LDLIBS) -o $@

$(VM_BIN)/qexit: selftests/vm/qexit.c | $(VM_BIN)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -static $< -o $@

vm-bins: $(VM_TESTS) $(VM_BIN)/esa_fuzz $(VM_BIN)/esa_kfunc_bench $(VM_BIN)/esactl $(VM_BIN)/qexit \
	$(OUTPUT)/esa_kfunc.bpf.o

# Both install the Debian packages they need (-i), as make demo and make
# check do.
kmod-debian:
	$(Q)selftests/vm/vmtest.sh -b -i $(VM_SERIES)

vmtest:
	$(Q)selftests/vm/vmtest.sh -i $(VM_SERIES)

# The stress runs a minute there: the checkers slow the kernel down a lot.
vmtest-debug:
	$(Q)scripts/deps.sh build test vm
	$(Q)ESA_STRESS_SECONDS=$${ESA_STRESS_SECONDS:-60} selftests/vm/vmtest.sh -i debug kcsan

kmod-checkpatch:
	$(Q)src=$$(selftests/vm/kernel.sh source) && \
		$$src/scripts/checkpatch.pl --no-tree --strict --terse -f kmod/*.[ch]

# bpf/ in the kernel's style too, but for what BPF programs need: libbpf's
# `const volatile` read-only config, 64-bit nanoseconds compared as such
# (not jiffies), extern kfunc prototypes, and loop macros over an index.
bpf-checkpatch:
	$(Q)src=$$(selftests/vm/kernel.sh source) && \
		$$src/scripts/checkpatch.pl --no-tree --strict --terse \
		--ignore VOLATILE,JIFFIES_COMPARISON,AVOID_EXTERNS,MACRO_ARG_REUSE -f bpf/*.[ch]

kmod-genl:
	$(Q)src=$$(selftests/vm/kernel.sh ynl) && selftests/kmod/ynl-gen.sh $$src kmod
	$(Q)rm -rf kmod/check

# The schema is looked up next to the spec's directory: check a copy there.
# Then the generated policies and ops must be what the spec gives.
kmod-spec-check:
	$(Q)src=$$(selftests/vm/kernel.sh ynl) && \
		cp kmod/esa.yaml $$src/Documentation/netlink/specs/esa.yaml && \
		PYTHONPATH=$$src/tools/net/ynl /usr/bin/python3 selftests/kmod/spec_check.py \
			$$src/Documentation/netlink/specs/esa.yaml include/uapi && \
		tmp=$$(mktemp -d) && selftests/kmod/ynl-gen.sh $$src $$tmp && \
		{ diff -u kmod/genl.h $$tmp/genl.h && diff -u kmod/genl.c $$tmp/genl.c; \
		  rc=$$?; rm -rf $$tmp; [ $$rc = 0 ] || \
		  { echo "kmod/genl.[ch] differ from kmod/esa.yaml: make kmod-genl"; exit 1; }; } && \
		echo "kmod/genl.[ch] are what ynl-gen-c makes of kmod/esa.yaml"

vm-clean:
	$(call msg,CLEAN,vm)
	$(Q)rm -rf vm
