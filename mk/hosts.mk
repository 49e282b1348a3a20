# SPDX-License-Identifier: GPL-2.0
# The hosts: the worker library libesa (user/lib, docs/library.md), the
# parameter server esa-ps (user/ps, docs/ps.md), the job driver esa-jobs
# (user/jobs) that the demo and the tests run, their tests (selftests/hosts)
# and the demo.
#
#   make demo        the demo: scripts/demo.sh (root; installs what it needs)
#   make bench-lib   libesa's send, receive, timer and conversion paths against
#                    raw sendmmsg/GSO/recvmmsg and memcpy floors, whole
#                    allreduces on loopback and over veth (UDP and AF_XDP),
#                    at 256 and 856 values (docs/library.md, Performance)
# Options of the demo: DEMO_ARGS="-j 3 -w 2,3,4 -p 192 -n 2M -i 5" (scripts/demo.sh -h),
# or the DEMO_* variables the script reads.

LIB_DIR		:= user/lib
PS_DIR		:= user/ps
JOBS_DIR	:= user/jobs
HOSTS_TEST_DIR	:= selftests/hosts
LIB_OUT		:= $(OUTPUT)/lib
# AF_XDP, files by concern (xsk_int.h says which owns what): the socket,
# frames and UMEM, the steering program, next hops, sending and receiving.
XSK_SRCS	:= $(LIB_DIR)/xsk.c $(LIB_DIR)/xsk_umem.c $(LIB_DIR)/xsk_prog.c \
		   $(LIB_DIR)/xsk_neigh.c $(LIB_DIR)/xsk_rxtx.c
XSK_OBJS	:= $(patsubst $(LIB_DIR)/%.c,$(LIB_OUT)/%.o,$(XSK_SRCS))
# The engine by concern (esa_int.h says which file owns what), top down:
# a worker's life, requests and the pump, silence, results, the window's
# entries, sending; then the transport (opening it, UDP, AF_XDP, the link
# delay); the counters in Prometheus's format (metrics.c).
LIB_SRCS	:= $(LIB_DIR)/config.c $(LIB_DIR)/errors.c $(LIB_DIR)/worker.c \
		   $(LIB_DIR)/request.c $(LIB_DIR)/diag.c $(LIB_DIR)/recv.c \
		   $(LIB_DIR)/chunk.c $(LIB_DIR)/send.c $(LIB_DIR)/quant.c \
		   $(LIB_DIR)/io.c $(LIB_DIR)/udp.c $(LIB_DIR)/io_xsk.c $(LIB_DIR)/delay.c \
		   $(XSK_SRCS) $(LIB_DIR)/metrics.c
LIB_OBJS	:= $(patsubst $(LIB_DIR)/%.c,$(LIB_OUT)/%.o,$(LIB_SRCS))
LIB_HDRS	:= $(LIB_DIR)/esa.h $(LIB_DIR)/esa_int.h $(LIB_DIR)/xsk.h $(LIB_DIR)/xsk_int.h \
		   include/uapi/linux/esa.h include/esa_prio.h include/esa_hist.h user/common/prom.h \
		   include/esa_policy.h include/esa_wire.h include/esa_names.h user/common/words.h \
		   include/esa_cc.h user/common/delayline.h
LIBESA_A	:= $(OUTPUT)/libesa.a
# libesa's version is its API's (ESA_LIB_VERSION in esa_int.h, esa_version()):
# the soname carries the major, the file the whole version, as Debian's
# libraries do; libesa.so is the link for -lesa.
LIBESA_VER	:= $(shell sed -n 's/^\#define ESA_LIB_VERSION[[:space:]]*\([0-9]*\).*/\1/p' \
		     $(LIB_DIR)/esa_int.h)
LIBESA_MAJOR	:= $(shell echo $$(( $(LIBESA_VER) / 10000 )))
LIBESA_VERSION	:= $(LIBESA_MAJOR).$(shell echo $$(( $(LIBESA_VER) / 100 % 100 ))).$(shell \
		     echo $$(( $(LIBESA_VER) % 100 )))
LIBESA_SONAME	:= libesa.so.$(LIBESA_MAJOR)
LIBESA_REAL	:= $(OUTPUT)/libesa.so.$(LIBESA_VERSION)
LIBESA_SO	:= $(OUTPUT)/libesa.so
# -fno-math-errno lets lrintf() become one vector instruction.
LIB_CFLAGS	:= -fPIC -fno-math-errno -I$(LIB_DIR) -I$(OUTPUT)
# AF_XDP (xsk.c) loads libxdp and libbpf when first used (dlopen): programs
# linking libesa need only -lm.
LIB_LIBS	:= -lm
XSK_PROG	:= $(OUTPUT)/esa_xsk.bpf.o
XSK_OBJH	:= $(OUTPUT)/esa_xsk_obj.h
PS_HDRS		:= $(PS_DIR)/ps.h $(PS_DIR)/ps_int.h include/uapi/linux/esa.h include/esa_wire.h \
		   include/esa_merge.h include/esa_hist.h include/esa_version.h include/esa_cc.h \
		   user/common/words.h user/common/jobdesc.h user/common/place.h \
		   include/esa_maps.h user/common/prom.h user/common/httpd.h \
		   user/common/sd_notify.h user/common/delayline.h user/common/daemon.h
# The one job-description parser of user/common, built here for esa-ps
# without the switch's skeletons (esactl's copy is in COMMON).
JOBDESC_OBJ	:= $(LIB_OUT)/jobdesc.o
# The PS by concern (ps_int.h says which file owns what): the rules, the
# counters, the jobs, sending, what a job keeps; Prometheus's format.
PS_CORE_OBJ	:= $(addprefix $(LIB_OUT)/,ps_core.o ps_stats.o ps_jobs.o ps_send.o ps_store.o \
		   ps_metrics.o)
PS_OBJ		:= $(PS_CORE_OBJ) $(JOBDESC_OBJ)
ESA_PS		:= $(OUTPUT)/esa-ps
ESA_JOBS	:= $(OUTPUT)/esa-jobs
# esa-jobs by concern (jobs.h says which file owns what): main, the report,
# a worker's thread, the tensors and their checks, the options and jobs.
JOBS_SRCS	:= $(addprefix $(JOBS_DIR)/,esa_jobs.c jobs_report.c jobs_worker.c jobs_tensor.c \
		   jobs_args.c)
HOSTS_TESTS	:= $(OUTPUT)/selftests/hosts/lib_test $(OUTPUT)/selftests/hosts/ps_test \
		   $(OUTPUT)/selftests/hosts/xsk_test $(OUTPUT)/selftests/hosts/jobdesc_test
HOSTS_BENCH	:= $(OUTPUT)/selftests/hosts/lib_bench
IMPAIR_OBJ	:= $(OUTPUT)/impair.bpf.o

ALL_EXTRA	+= $(LIBESA_A) $(LIBESA_SO) $(ESA_PS) $(ESA_JOBS) $(HOSTS_TESTS) \
		   $(HOSTS_BENCH) $(IMPAIR_OBJ)
CLEAN_EXTRA	+= hosts-clean

.PHONY: demo bench-lib hosts-clean

$(LIB_OUT) $(OUTPUT)/selftests/hosts:
	$(Q)mkdir -p $@

$(LIB_OUT)/%.o: $(LIB_DIR)/%.c $(LIB_HDRS) | $(LIB_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

# The program libesa attaches for AF_XDP, built into the library.
$(XSK_PROG): $(LIB_DIR)/esa_xsk.bpf.c $(LIB_DIR)/xsk_maps.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -I$(LIB_DIR) -c $< -o $@

$(XSK_OBJH): $(XSK_PROG)
	$(call msg,GEN,$@)
	$(Q){ echo 'static const unsigned char esa_xsk_obj[] = {'; \
	     od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '};'; } > $@

$(LIB_OUT)/xsk_prog.o: $(XSK_OBJH) $(LIB_DIR)/xsk_maps.h

$(LIBESA_A): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# Only the API of esa.h is exported, with the symbol versions of libesa.map.
$(LIBESA_REAL): $(LIB_OBJS) $(LIB_DIR)/libesa.map
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-soname,$(LIBESA_SONAME) -Wl,--version-script=$(LIB_DIR)/libesa.map \
		-Wl,-z,defs -Wl,-z,relro -Wl,-z,now $(LIB_OBJS) $(LIB_LIBS) -o $@

# The soname's link (what ld.so and ctypes.CDLL("libesa.so.2") open) and the
# link for -lesa, in the build tree as where it is installed.
$(LIBESA_SO): $(LIBESA_REAL)
	$(Q)ln -sf $(notdir $(LIBESA_REAL)) $(OUTPUT)/$(LIBESA_SONAME)
	$(Q)ln -sf $(LIBESA_SONAME) $@

$(PS_CORE_OBJ): $(LIB_OUT)/%.o: $(PS_DIR)/%.c $(PS_HDRS) | $(LIB_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(PS_DIR) -c $< -o $@

$(JOBDESC_OBJ): user/common/jobdesc.c $(PS_HDRS) include/esa_policy.h | $(LIB_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# esa-ps learns jobs from esa-agent (ps_agent.c) through the agent's
# messages (AGENTMSG_OBJ, mk/agent.mk).
$(LIB_OUT)/ps_agent.o: $(PS_DIR)/ps_agent.c $(PS_DIR)/ps_agent.h $(PS_HDRS) $(AGENTMSG_HDRS) | $(LIB_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(PS_DIR) -c $< -o $@

# The daemon by concern (ps_daemon.h says which file owns what): main and
# the loop, reload, the transport, AF_XDP, the sockets, the delay line, the
# options.
PSD_SRCS	:= $(addprefix $(PS_DIR)/,esa_ps.c ps_reload.c ps_io.c ps_xdp.c ps_sock.c \
		   ps_delay.c ps_opts.c)
PSD_OBJS	:= $(PSD_SRCS:$(PS_DIR)/%.c=$(LIB_OUT)/psd_%.o)

$(PSD_OBJS): $(LIB_OUT)/psd_%.o: $(PS_DIR)/%.c $(PS_HDRS) $(PS_DIR)/ps_daemon.h \
		$(PS_DIR)/ps_agent.h $(AGENTMSG_HDRS) $(LIB_DIR)/xsk.h | $(LIB_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(PS_DIR) -I$(LIB_DIR) -c $< -o $@

$(ESA_PS): $(PSD_OBJS) $(PS_OBJ) $(LIB_OUT)/ps_agent.o $(AGENTMSG_OBJ) $(DAEMON_OBJ) $(XSK_OBJS) \
		| $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -lpthread -o $@

$(ESA_JOBS): $(JOBS_SRCS) $(JOBS_DIR)/jobs.h user/common/daemon.h $(LIBESA_A) $(LIB_HDRS) \
		| $(OUTPUT)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -I$(LIB_DIR) $(JOBS_SRCS) $(LIBESA_A) $(LIB_LIBS) -lpthread -o $@

$(OUTPUT)/selftests/hosts/lib_test: $(HOSTS_TEST_DIR)/lib_test.c $(HOSTS_TEST_DIR)/simswitch.h selftests/tap.h \
		$(LIBESA_A) $(LIB_HDRS) | $(OUTPUT)/selftests/hosts
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -I$(LIB_DIR) -I$(HOSTS_TEST_DIR) $< $(LIBESA_A) $(LIB_LIBS) -lpthread -o $@

# AF_XDP's files through xsk.h (libesa.a holds them).
$(OUTPUT)/selftests/hosts/xsk_test: $(HOSTS_TEST_DIR)/xsk_test.c $(HOSTS_TEST_DIR)/simswitch.h \
		selftests/tap.h $(LIBESA_A) $(LIB_HDRS) | $(OUTPUT)/selftests/hosts
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -I$(LIB_DIR) -I$(HOSTS_TEST_DIR) $< $(LIBESA_A) $(LIB_LIBS) -lpthread -o $@

$(OUTPUT)/selftests/hosts/ps_test: $(HOSTS_TEST_DIR)/ps_test.c selftests/tap.h $(PS_OBJ) $(PS_HDRS) \
		| $(OUTPUT)/selftests/hosts
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -I$(PS_DIR) $< $(PS_OBJ) -o $@

$(OUTPUT)/selftests/hosts/jobdesc_test: $(HOSTS_TEST_DIR)/jobdesc_test.c selftests/tap.h $(JOBDESC_OBJ) \
		$(PS_HDRS) | $(OUTPUT)/selftests/hosts
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) $< $(JOBDESC_OBJ) -o $@

$(HOSTS_BENCH): $(HOSTS_TEST_DIR)/lib_bench.c $(LIBESA_A) $(LIB_HDRS) | $(OUTPUT)/selftests/hosts
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(CFLAGS) -I$(LIB_DIR) $< $(LIBESA_A) $(LIB_LIBS) -lpthread -o $@

# Loss, duplication and reordering for the reliability tests: tc BPF, since
# the host kernel has no sch_netem (see impair.bpf.c).
$(IMPAIR_OBJ): $(HOSTS_TEST_DIR)/impair.bpf.c | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

bench-lib: $(HOSTS_BENCH)
	$(Q)$(HOSTS_BENCH)

demo:
	$(Q)scripts/deps.sh build test
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh $(DEMO_ARGS)

hosts-clean:
	$(Q)rm -rf $(LIB_OUT) $(LIBESA_A) $(OUTPUT)/libesa.so* $(ESA_PS) $(ESA_JOBS) $(XSK_PROG) $(XSK_OBJH) \
		$(OUTPUT)/selftests/hosts $(IMPAIR_OBJ)
