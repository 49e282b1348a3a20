# SPDX-License-Identifier: GPL-2.0
# The discrete-event simulator (user/sim, docs/simulator.md) and its tests.
# gcc and libm only: it builds without clang, libbpf or a kernel.
#
#   make sim          the default comparison of esa, atp and switchml
#   make sim-sweep    the pool x load grid and one-factor sweeps, with plots
#   make sim-plots    redraw the plots of the last sweep
# SIM_ARGS and SIM_SWEEP_ARGS pass options to esa_sim (see esa_sim --help).

SIM_DIR		:= user/sim
SIM_OUT		:= $(OUTPUT)/sim
# The engine by concern (docs/simulator.md, sim_int.h), and the front ends'
# common parts.
SIM_PARTS	:= sim_engine sim_event sim_rack sim_net sim_acct sim_switch sim_ps sim_worker \
		   sim_probe workload params
SIM_OBJS	:= $(SIM_PARTS:%=$(SIM_OUT)/obj/%.o)
# esa_sim, sim_test and esa_jct (mk/jct.mk) link the engine from this archive.
SIM_LIB		:= $(SIM_OUT)/libsim.a
SIM_BIN		:= $(OUTPUT)/esa_sim
SIM_TEST	:= $(OUTPUT)/selftests/sim_test
SIM_PLOTS	:= jct_cdf speedup_pool speedup_load util_ts speedup_dims
SIM_ARGS	?=
# The base point of the one-factor sweeps: a contended pool (16 slots per
# concurrent job of offered load); the grid covers the uncontended side.
SIM_SWEEP_ARGS	?= --pool 512 --load 32 --jobs 60

ALL_EXTRA	+= $(SIM_BIN) $(SIM_TEST)
CLEAN_EXTRA	+= sim-clean

$(SIM_OUT)/obj:
	$(Q)mkdir -p $@

# Each object's headers come from the compiler (-MMD -MP): a change to
# include/esa_switch.h, esa_policy.h, esa_maps.h or the UAPI rebuilds
# exactly the objects that include it.  An object without its .d file (an
# older build's) is rebuilt: it cannot say what it depends on.
# esa_sim's own files: the command line, the comparison, the sweep, racks.
SIM_FRONT	:= esa_sim compare sweep multirack
SIM_FRONT_OBJS	:= $(SIM_FRONT:%=$(SIM_OUT)/obj/%.o)
SIM_DEPS	:= $(SIM_OBJS:.o=.d) $(SIM_FRONT_OBJS:.o=.d) $(SIM_OUT)/obj/sim_test.d
$(SIM_OUT)/obj/%.o: $(SIM_DIR)/%.c $(SIM_OUT)/obj/%.d | $(SIM_OUT)/obj
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(SIM_DIR) -MMD -MP -c $< -o $@

$(SIM_DEPS): ;
.PRECIOUS: $(SIM_DEPS)
-include $(SIM_DEPS)

$(SIM_LIB): $(SIM_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(SIM_OUT)/obj/sim_test.o: selftests/sim/sim_test.c $(SIM_OUT)/obj/sim_test.d | $(SIM_OUT)/obj
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(SIM_DIR) -MMD -MP -c $< -o $@

$(SIM_BIN): $(SIM_FRONT_OBJS) $(SIM_LIB)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -lm -o $@

$(SIM_TEST): $(SIM_OUT)/obj/sim_test.o $(SIM_LIB)
	$(Q)mkdir -p $(@D)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -lm -o $@

.PHONY: sim sim-sweep sim-plots sim-clean
sim: $(SIM_BIN)
	$(Q)mkdir -p $(SIM_OUT)
	$(Q)$(SIM_BIN) $(SIM_ARGS) | tee $(SIM_OUT)/compare.txt

sim-sweep: $(SIM_BIN)
	$(Q)mkdir -p $(SIM_OUT)
	$(Q)$(SIM_BIN) --sweep --out $(SIM_OUT) $(SIM_SWEEP_ARGS) | tee $(SIM_OUT)/sweep.txt
	$(Q)$(MAKE) --no-print-directory sim-plots

sim-plots:
	$(Q)command -v gnuplot >/dev/null || \
		{ echo "sim-plots: gnuplot missing (apt-get install gnuplot-nox)"; exit 1; }
	$(Q)for p in $(SIM_PLOTS); do \
		printf '  %-8s %s\n' PLOT $(SIM_OUT)/$$p.png; \
		gnuplot -e "dir='$(SIM_OUT)'" $(SIM_DIR)/plots/$$p.gp || exit 1; \
	done

sim-clean:
	$(call msg,CLEAN,$(SIM_OUT))
	$(Q)rm -rf $(SIM_OUT) $(SIM_BIN) $(SIM_TEST)
