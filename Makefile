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
COMMON	 := $(OUTPUT)/common/loader.o $(OUTPUT)/common/jobs.o $(OUTPUT)/common/ports.o \
	    $(OUTPUT)/common/deliver.o $(OUTPUT)/common/route.o \
	    $(OUTPUT)/common/util.o $(OUTPUT)/common/print.o $(OUTPUT)/common/names.o \
	    $(OUTPUT)/common/esa_nl.o $(OUTPUT)/common/registry.o
HDRS	 := include/uapi/linux/esa.h include/esa_policy.h include/esa_maps.h include/esa_switch.h $(wildcard user/common/*.h bpf/*.h)
TOOLS	 := $(OUTPUT)/esactl
TESTS	 := $(OUTPUT)/selftests/esa_golden $(OUTPUT)/selftests/esa_fuzz \
	    $(OUTPUT)/selftests/esa_stress $(OUTPUT)/selftests/esa_send \
	    $(OUTPUT)/selftests/esa_policy_test $(OUTPUT)/selftests/esa_tiers \
	    $(OUTPUT)/selftests/esa_race_test
BENCH	 := $(OUTPUT)/esa_bench $(OUTPUT)/esa_deliver_bench

.PHONY: all clean test check bench deps demo install
all: $(BPF_OBJS) $(SKELS) $(TOOLS) $(TESTS) $(BENCH)

# Subsystems (kernel module, simulator, ...) add their rules in mk/*.mk and
# hook into `all` and `clean` through ALL_EXTRA and CLEAN_EXTRA.
ALL_EXTRA :=
CLEAN_EXTRA :=
INSTALL_EXTRA :=
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

$(OUTPUT) $(OUTPUT)/common $(OUTPUT)/selftests:
	$(Q)mkdir -p $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(HDRS) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/common/%.o: user/common/%.c $(HDRS) $(OUTPUT)/esa.skel.h $(OUTPUT)/esa_kfunc.skel.h | $(OUTPUT)/common
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

ESACTL_SRCS := $(addprefix user/esactl/,esactl.c prog.c dev.c job.c stats.c pool.c \
	       monitor.c status.c)
$(OUTPUT)/esactl: $(ESACTL_SRCS) user/esactl/esactl.h $(COMMON) $(HDRS) | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $(ESACTL_SRCS) $(COMMON) $(LDLIBS) -o $@

$(OUTPUT)/esa_deliver_bench: selftests/esa/esa_deliver_bench.c selftests/esa/testlib.h \
		selftests/esa/benchlib.h $(OUTPUT)/esa_deliver_bench.skel.h \
		$(OUTPUT)/esa_bench.skel.h $(COMMON) $(HDRS) | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -Iselftests/esa -Ibpf $< $(COMMON) $(LDLIBS) -o $@

$(OUTPUT)/esa_bench: selftests/esa/esa_bench.c selftests/esa/testlib.h selftests/esa/benchlib.h \
		$(OUTPUT)/esa_bench.skel.h $(COMMON) $(HDRS) | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -Iselftests/esa -Ibpf $< $(COMMON) $(LDLIBS) -o $@

# The kernel's kselftest harness, from Debian's linux-source package.
KSFT	:= $(OUTPUT)/kselftest/kselftest_harness.h
$(KSFT): scripts/kselftest-headers.sh
	$(call msg,GET,$@)
	$(Q)scripts/kselftest-headers.sh $(OUTPUT)/kselftest

$(OUTPUT)/selftests/%: selftests/esa/%.c selftests/esa/testlib.h $(COMMON) $(HDRS) $(KSFT) | $(OUTPUT)/selftests
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-sign-compare -Iselftests/esa -I$(OUTPUT)/kselftest $< $(COMMON) $(LDLIBS) -o $@

test: all
	$(Q)selftests/run.sh

# make install [PREFIX=/usr/local] [DESTDIR=]: esactl (its BPF programs built
# in), its man page and bash completion; subsystems add INSTALL_EXTRA.
PREFIX	?= /usr/local
install: all $(INSTALL_EXTRA)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -D -m 755 $(OUTPUT)/esactl $(DESTDIR)$(PREFIX)/sbin/esactl
	$(Q)install -D -m 644 user/esactl/esactl.8 $(DESTDIR)$(PREFIX)/share/man/man8/esactl.8
	$(Q)install -D -m 644 user/esactl/esactl.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/esactl
	$(Q)install -D -m 644 $(OUTPUT)/esa_pass.bpf.o $(DESTDIR)$(PREFIX)/lib/esa/esa_pass.bpf.o

bench: all
	$(Q)$(OUTPUT)/esa_bench
	$(Q)$(OUTPUT)/esa_deliver_bench

clean: $(CLEAN_EXTRA)
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
