# SPDX-License-Identifier: GPL-2.0
# esa-agent (user/agent, docs/agent.md): the job agent on the switch's box,
# and its tests (selftests/agent, suite 70-agent).  It links user/common
# (the registry) and the agent's messages (AGENTMSG_OBJ, mk/hosts.mk).

AGENT_DIR	:= user/agent
ESA_AGENT	:= $(OUTPUT)/esa-agent
AGENT_SRCS	:= $(addprefix $(AGENT_DIR)/,esa_agent.c config.c reload.c serve.c groups.c live.c \
						  state.c metrics.c)
AGENT_OBJS	:= $(AGENT_SRCS:$(AGENT_DIR)/%.c=$(OUTPUT)/obj/agent/%.o)
AGENT_UNIT	:= $(OUTPUT)/selftests/agent/agent_unit
# Its messages (user/common/agentmsg.c, sha256.c), which esa-ps links too
# (mk/hosts.mk): built without the switch's skeletons.
AGENTMSG_OBJ	:= $(OUTPUT)/obj/agent/agentmsg.o $(OUTPUT)/obj/agent/sha256.o
AGENTMSG_HDRS	:= user/common/agentmsg.h user/common/sha256.h user/common/words.h
# What the daemons share (user/common/daemon.c): signals, /metrics's end.
DAEMON_OBJ	:= $(OUTPUT)/obj/agent/daemon.o
DAEMON_HDRS	:= user/common/daemon.h user/common/prom.h include/esa_version.h

ALL_EXTRA	+= $(ESA_AGENT) $(AGENT_UNIT)
CLEAN_EXTRA	+= agent-clean

.PHONY: agent-clean

$(OUTPUT)/obj/agent $(OUTPUT)/selftests/agent:
	$(Q)mkdir -p $@

$(OUTPUT)/obj/agent/%.o: $(AGENT_DIR)/%.c $(AGENT_DIR)/agent.h $(HDRS) include/esa_hist.h \
		include/esa_version.h | $(OUTPUT)/obj/agent
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(AGENT_DIR) -c $< -o $@

$(AGENTMSG_OBJ): $(OUTPUT)/obj/agent/%.o: user/common/%.c $(AGENTMSG_HDRS) | $(OUTPUT)/obj/agent
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(DAEMON_OBJ): user/common/daemon.c $(DAEMON_HDRS) | $(OUTPUT)/obj/agent
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(ESA_AGENT): $(AGENT_OBJS) $(AGENTMSG_OBJ) $(DAEMON_OBJ) $(COMMON) | $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(AGENT_UNIT): selftests/agent/agent_unit.c selftests/tap.h $(AGENTMSG_OBJ) $(AGENTMSG_HDRS) \
		| $(OUTPUT)/selftests/agent
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $< $(AGENTMSG_OBJ) -o $@

agent-clean:
	$(Q)rm -rf $(OUTPUT)/obj/agent $(ESA_AGENT) $(OUTPUT)/selftests/agent
