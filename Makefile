# SPDX-License-Identifier: GPL-2.0
# ESA on Linux: `make` builds the BPF objects, skeletons and user tools into
# build/.  `make V=1` shows the commands.  See README.md for the targets.

OUTPUT	?= build
CLANG	?= clang
BPFTOOL	?= bpftool
CC	?= gcc
ARCH	:= $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
TRIPLET	:= $(shell $(CC) -dumpmachine)

INCLUDES := -Iinclude -Iinclude/uapi -Iuser/common -I$(OUTPUT)
CFLAGS	?= -O2 -g
CFLAGS	+= -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	   -D_GNU_SOURCE $(INCLUDES)
BPF_CFLAGS := -O2 -g -Wall -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
	   -I/usr/include/$(TRIPLET) -Ibpf $(INCLUDES)
LDLIBS	:= -lbpf -lelf -lz -lpthread -lm

ifeq ($(V),1)
	Q =
	msg =
else
	Q = @
	msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_OBJS := $(OUTPUT)/esa.bpf.o $(OUTPUT)/esa_bench.bpf.o $(OUTPUT)/esa_pass.bpf.o \
	    $(OUTPUT)/esa_deliver_bench.bpf.o
SKELS	 := $(OUTPUT)/esa.skel.h $(OUTPUT)/esa_kfunc.skel.h $(OUTPUT)/esa_bench.skel.h \
	    $(OUTPUT)/esa_deliver_bench.skel.h
# esa.ko's netlink client (esa_nl_int.h says which file owns what).
NL_OBJS	 := $(OUTPUT)/common/esa_nl.o $(OUTPUT)/common/esa_nl_jobs.o \
	    $(OUTPUT)/common/esa_nl_events.o
COMMON	 := $(OUTPUT)/common/loader.o $(OUTPUT)/common/jobs.o $(OUTPUT)/common/ports.o \
	    $(OUTPUT)/common/deliver.o $(OUTPUT)/common/route.o \
	    $(OUTPUT)/common/util.o $(OUTPUT)/common/print.o $(OUTPUT)/common/names.o \
	    $(NL_OBJS) $(OUTPUT)/common/registry.o $(OUTPUT)/common/jobdesc.o
# Every header, for the rules of mk/*.mk that have no dependency files.
# The rules here get each object's own headers from the compiler instead
# (DEPFLAGS, the .d files below).
HDRS	 := include/uapi/linux/esa.h include/esa_policy.h include/esa_maps.h include/esa_switch.h \
	    include/esa_wire.h include/esa_names.h include/esa_merge.h include/esa_prio.h \
	    $(wildcard user/common/*.h bpf/*.h)
TOOLS	 := $(OUTPUT)/esactl
TESTS	 := $(OUTPUT)/selftests/esa_golden $(OUTPUT)/selftests/esa_fuzz \
	    $(OUTPUT)/selftests/esa_stress $(OUTPUT)/selftests/esa_send \
	    $(OUTPUT)/selftests/esa_policy_test $(OUTPUT)/selftests/esa_tiers \
	    $(OUTPUT)/selftests/esa_race_test $(OUTPUT)/selftests/esa_jumbo
BENCH	 := $(OUTPUT)/esa_bench $(OUTPUT)/esa_deliver_bench
# BPF objects of the tests (suite 25-delivery)
TEST_BPF := $(OUTPUT)/meta_forge.bpf.o

.PHONY: all clean test check bench deps demo
all: $(BPF_OBJS) $(SKELS) $(TOOLS) $(TESTS) $(BENCH) $(TEST_BPF)

# A recipe that fails leaves no target behind: a skeleton bpftool could
# not finish, say, is not taken for a header next time.
.DELETE_ON_ERROR:

# Each target's headers, as the compiler found them (in T.d for target T):
# a header that changes rebuilds exactly the targets that include it.
DEPFLAGS = -MMD -MP -MF $@.d -MT $@

# Subsystems (kernel module, simulator, ...) add their rules in mk/*.mk and
# hook into `all` and `clean` through ALL_EXTRA and CLEAN_EXTRA, into
# `install` and `uninstall` (mk/install.mk) through INSTALL_EXTRA_FILES
# (SOURCE:DEST:MODE each, DEST with the install directories' variables).
ALL_EXTRA :=
CLEAN_EXTRA :=
INSTALL_EXTRA_FILES :=
-include $(wildcard mk/*.mk)
all: $(ALL_EXTRA)

deps:
	$(Q)scripts/deps.sh build test plot

# What the README's commands run on a fresh Debian 12 machine (as root):
# make demo (mk/hosts.mk) and make check.
check:
	$(Q)scripts/deps.sh build test plot torch
	$(Q)$(MAKE) --no-print-directory all
	$(Q)selftests/run.sh

$(OUTPUT) $(OUTPUT)/common $(OUTPUT)/selftests $(OUTPUT)/obj/esactl:
	$(Q)mkdir -p $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/%.bpf.o: selftests/delivery/%.bpf.c | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@
# Kept: make would delete a skeleton it made on the way (esa_kf_probe's)
# and build every program that includes it again next time.
.SECONDARY: $(OUTPUT)/esa_kf_probe.skel.h

# The skeletons are generated headers: made before the first compile, when
# no .d file names them yet.
$(OUTPUT)/common/%.o: user/common/%.c $(OUTPUT)/esa.skel.h \
		$(OUTPUT)/esa_kfunc.skel.h | $(OUTPUT)/common
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

ESACTL_SRCS := $(addprefix user/esactl/,esactl.c prog.c dev.c job.c stats.c pool.c \
	       monitor.c status.c)
ESACTL_OBJS := $(ESACTL_SRCS:user/esactl/%.c=$(OUTPUT)/obj/esactl/%.o)
$(OUTPUT)/obj/esactl/%.o: user/esactl/%.c $(OUTPUT)/esa.skel.h | $(OUTPUT)/obj/esactl
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUTPUT)/esactl: $(ESACTL_OBJS) $(COMMON) | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(OUTPUT)/esa_deliver_bench: selftests/esa/esa_deliver_bench.c \
		$(OUTPUT)/esa_deliver_bench.skel.h $(OUTPUT)/esa_bench.skel.h $(COMMON) | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -Iselftests/esa -Ibpf $< $(COMMON) $(LDLIBS) -o $@

$(OUTPUT)/esa_bench: selftests/esa/esa_bench.c $(OUTPUT)/esa_bench.skel.h $(COMMON) | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -Iselftests/esa -Ibpf $< $(COMMON) $(LDLIBS) -o $@

# The kernel's kselftest harness, vendored (selftests/kselftest/README).
KSFT	:= selftests/kselftest/kselftest_harness.h

$(OUTPUT)/selftests/%: selftests/esa/%.c $(COMMON) $(KSFT) | $(OUTPUT)/selftests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(DEPFLAGS) -Wno-sign-compare -Iselftests/esa -Iselftests/kselftest \
		$< $(COMMON) $(LDLIBS) -o $@

# A target without its .d file (built before there were any, or whose
# build failed) is built again: nothing says what it depends on.
DEP_TARGETS := $(BPF_OBJS) $(COMMON) $(ESACTL_OBJS) $(TESTS) $(BENCH) $(TEST_BPF)
-include $(DEP_TARGETS:%=%.d)
$(foreach t,$(DEP_TARGETS),$(if $(wildcard $(t).d),,$(eval $(t): FORCE)))
.PHONY: FORCE
FORCE:

test: all
	$(Q)selftests/run.sh

# make install and make uninstall: mk/install.mk.

bench: all
	$(Q)$(OUTPUT)/esa_bench
	$(Q)$(OUTPUT)/esa_deliver_bench

clean: $(CLEAN_EXTRA)
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
