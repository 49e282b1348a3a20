# SPDX-License-Identifier: GPL-2.0
# The JCT benchmark on the namespace testbed (user/bench, docs/evaluation.md):
# the same seeded workload as the simulator's, run under each policy on the
# XDP switch, reported beside the simulator on the same jobs.
#
#   make jct          the benchmark (root; about 5 minutes): the testbed preset's
#                     workload with homes of 32 and las priorities, 3 seeds x
#                     3 runs per policy,
#                     the simulator on the same jobs, tables, plots and the
#                     summary line; files in build/jct/
#   make jct-sweep    the same over a pool x load x window grid, with and
#                     without homes (root; about 25 minutes):
#                     build/jct/sweep/sweep.txt
#   make jct-tbf      the same with every host link (the PS's too) shaped to
#                     JCT_RATE (300mbit) by tbf, the simulator told so:
#                     build/jct-tbf/
#   make jct-net      the network-bound testbed (jct.sh -N, preset netbound:
#                     100 Mbit/s links, 1 ms of propagation, compute dilated
#                     to match): a shared PS without result copies, then a PS
#                     per job; seeds 1-3 (JCT_NET_ARGS), about 20 minutes;
#                     ends with jct-shared: and jct: lines; build/jct-net/
#   make jct-net-sweep  the network-bound testbed over 8 points around its
#                     headline (pool, load, window, priorities; PS per job;
#                     seeds 1,2, about 50 minutes; JCT_SWEEP_ARGS="-s 1":
#                     25): build/jct-net/sweep/sweep.txt
#   make jct-calib    the calibration microbenchmarks of the testbed preset
#                     (JCT_CALIB_ARGS=-N: of the network-bound one)
#   make jct-plots    redraw the plots of the last run
#   make bench-e2e    the end-to-end allreduce benchmark: gloo against ESA
#                     over UDP, AF_XDP and through the PS, 2/4/8 ranks,
#                     4/16/64 MB, every sum checked (root; user/bench/e2e.sh,
#                     E2E_ARGS passes options); build/e2e/
#   make bench-e2e-tbf  the same with every host link shaped by tbf
#                     (E2E_RATE, default 100mbit), windows of 32 chunks,
#                     4 and 16 MB (about 8 minutes); build/e2e-tbf/
#   make bench-ddp    a DDP training step (ddp_train.py's MLP, 18 MB of
#                     gradient) with gloo, then through the switch, 4 ranks
#                     at MTU 9000 and 2232 values, the ranks' parameters
#                     checked identical (root; user/bench/ddp_step.sh,
#                     DDP_ARGS passes options); build/ddp/
# JCT_ARGS passes options to user/bench/jct.sh (jct.sh -h), e.g.
# JCT_ARGS="-s 1,2 -r 1" for a shorter run; JCT_SWEEP_ARGS to jct-sweep.sh.
#
# mk/*.mk are read in alphabetical order: the simulator's objects and libesa
# are named by path here, their rules are in mk/sim.mk and mk/hosts.mk.

JCT_DIR		:= user/bench
JCT_OUT		:= $(OUTPUT)/jct
JCT_BIN		:= $(OUTPUT)/esa_jct
# By concern: the commands, the options; a run (its schedule and the
# switch, the workers, what it records); the report (the run files, the
# tables, the plot data) and the calibration.
JCT_SRCS	:= $(JCT_DIR)/esa_jct.c $(JCT_DIR)/jct_opts.c $(JCT_DIR)/jct_run.c \
		   $(JCT_DIR)/jct_worker.c $(JCT_DIR)/jct_record.c $(JCT_DIR)/jct_runfile.c \
		   $(JCT_DIR)/jct_report.c $(JCT_DIR)/jct_plots.c $(JCT_DIR)/jct_calib.c
JCT_DEPS	:= $(OUTPUT)/sim/libsim.a $(OUTPUT)/libesa.a
JCT_PLOTS	:= jct_cdf util_ts jct_validation
JCT_ARGS	?=
JCT_SWEEP_ARGS	?=
JCT_RATE	?= 300mbit
JCT_NET_ARGS	?= -s 1,2,3 -r 1
JCT_CALIB_ARGS	?=

E2E_JOB		:= $(OUTPUT)/esa_e2e_job
E2E_ARGS	?=
E2E_RATE	?= 100mbit
DDP_ARGS	?=

ALL_EXTRA	+= $(JCT_BIN) $(E2E_JOB)
CLEAN_EXTRA	+= jct-clean

$(JCT_BIN): $(JCT_SRCS) $(JCT_DIR)/jct.h $(JCT_DIR)/jct_run.h $(JCT_DIR)/jct_report.h \
		$(JCT_DEPS) $(COMMON) $(HDRS) user/sim/sim.h user/lib/esa.h | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -Iuser/sim -Iuser/lib $(JCT_SRCS) $(JCT_DEPS) $(COMMON) \
		$(LDLIBS) -o $@

$(E2E_JOB): $(JCT_DIR)/e2e_job.c $(COMMON) $(HDRS) | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $< $(COMMON) $(LDLIBS) -o $@

.PHONY: bench-e2e bench-e2e-tbf bench-ddp
bench-e2e:
	$(Q)scripts/deps.sh build test plot torch
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/e2e.sh $(E2E_ARGS)

bench-e2e-tbf:
	$(Q)scripts/deps.sh build test plot torch
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/e2e.sh -L $(E2E_RATE) -W 32 -m 4,16 -n 3,2 \
		-c gloo,udp-256,udp-max,ps-256,ps-max \
		-o $(OUTPUT)/e2e-tbf $(E2E_ARGS)

bench-ddp:
	$(Q)scripts/deps.sh build test torch
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/ddp_step.sh -o $(OUTPUT)/ddp $(DDP_ARGS)

.PHONY: jct jct-tbf jct-net jct-net-sweep jct-sweep jct-calib jct-plots jct-clean
jct:
	$(Q)scripts/deps.sh build test plot
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/jct.sh $(JCT_ARGS)

jct-tbf:
	$(Q)scripts/deps.sh build test plot
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/jct.sh -L $(JCT_RATE) -o $(OUTPUT)/jct-tbf $(JCT_ARGS)

# The shared PS first (its summary line renamed jct-shared:), then a PS
# per job, whose jct: line ends the output.
jct-net:
	$(Q)scripts/deps.sh build test plot
	$(Q)$(MAKE) --no-print-directory all
	$(Q)mkdir -p $(OUTPUT)/jct-net/shared
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/jct.sh -N -o $(OUTPUT)/jct-net/shared \
		$(JCT_NET_ARGS) -- --preset netbound --prio las --ps-hosts 1 --ps-copy 0 \
		>$(OUTPUT)/jct-net/shared/out.txt; rc=$$?; \
		sed 's/^jct: /jct-shared: /' $(OUTPUT)/jct-net/shared/out.txt; exit $$rc
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/jct.sh -N -o $(OUTPUT)/jct-net $(JCT_NET_ARGS)

jct-net-sweep:
	$(Q)scripts/deps.sh build test plot
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/jct-sweep.sh -N $(JCT_SWEEP_ARGS)

jct-sweep:
	$(Q)scripts/deps.sh build test plot
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/jct-sweep.sh $(JCT_SWEEP_ARGS)

jct-calib:
	$(Q)scripts/deps.sh build test
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) $(JCT_DIR)/jct.sh -C -s 1,2,3,4,5 $(JCT_CALIB_ARGS)

jct-plots:
	$(Q)command -v gnuplot >/dev/null || \
		{ echo "jct-plots: gnuplot missing (scripts/deps.sh plot)"; exit 1; }
	$(Q)for p in $(JCT_PLOTS); do \
		printf '  %-8s %s\n' PLOT $(JCT_OUT)/$$p.png; \
		gnuplot -e "dir='$(JCT_OUT)'" $(JCT_DIR)/plots/$$p.gp || exit 1; \
	done

jct-clean:
	$(call msg,CLEAN,$(JCT_OUT))
	$(Q)rm -rf $(JCT_OUT) $(OUTPUT)/jct-tbf $(OUTPUT)/jct-net $(JCT_BIN) $(E2E_JOB) $(OUTPUT)/e2e \
		$(OUTPUT)/e2e-tbf $(OUTPUT)/ddp
