/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Results and fan-out: a completed sum goes to the job's devmap, one copy
 * per member that egress addresses to it (and one to the PS unless
 * ps-copy is off); a copy is for its registration's members only.  The
 * roads to a PS: resolved and cached for a TTL, through the stack without
 * a next hop, dropped and counted without a route or above the MTU.
 * Policy atp holds a completed slot until the PS's ack; a sum the PS
 * finished goes to the workers.
 */

/* Job A's fan-out: its three ranks and its PS. */
static void fanout_of_a(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_fanout f;

	ASSERT_EQ(0, esa_fanout_read(&self->e, JA, &f));
	EXPECT_EQ(W + 1, f.n);
}

/* A port whose ifindex is sw0's + 4096, a host 10.0.2.2 behind it. */
static void alias_port(struct __test_metadata *_metadata, struct g_env *self)
{
	self->alias = self->n.sw0 + 4096;
	ASSERT_EQ(0, t_sh("set -e; exec >/dev/null 2>&1\n"
			  "ip link add swa index %d type veth peer name ha\n"
			  "ip link set swa up; ip link set ha up\n"
			  "ip addr add 10.0.2.1/24 dev swa\n"
			  "ip neigh add 10.0.2.2 lladdr 02:00:00:00:02:02 nud permanent dev swa\n",
			  self->alias));
	ASSERT_EQ(0, t_port_register(&self->e, self->alias));
}

static const __u8 ps_a_moved_mac[6] = { 0x02, 0, 0, 0, 0x01, 0x22 };
#define PS_A_MOVED	"ip neigh replace " T_PS_A " lladdr 02:00:00:00:01:22 " \
			"nud permanent dev sw1"

/* Job A's route to its PS, as the switch cached it. */
static void route_read(struct __test_metadata *_metadata, struct g_env *self,
		       struct esa_route *rt)
{
	__u32 key = ESA_ROUTE(JA, ESA_ROUTE_PS);

	ASSERT_EQ(0, bpf_map_lookup_elem(self->e.routes_fd, &key, rt));
}

static void route_write(struct __test_metadata *_metadata, struct g_env *self,
			struct esa_route *rt)
{
	__u32 key = ESA_ROUTE(JA, ESA_ROUTE_PS);

	ASSERT_EQ(0, bpf_map_update_elem(self->e.routes_fd, &key, rt, BPF_EXIST));
}

static void route_cached(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_route rt;

	route_read(_metadata, self, &rt);
	EXPECT_NE(0, rt.stamp_ns);
	EXPECT_LE(rt.stamp_ns, esa_now_ns());
	EXPECT_EQ(self->n.sw1, (int)rt.ifindex);
	EXPECT_EQ(t_ip(T_PS_A), rt.ps_ip);
	EXPECT_EQ(t_ip(T_SW_IP), rt.src);
	EXPECT_EQ(0, memcmp(rt.dmac, t_ps_a_mac, 6));
}

/* The cache's stamp ahead of now: fresh, however slow the machine. */
static void route_fresh(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_route rt;

	route_read(_metadata, self, &rt);
	rt.stamp_ns = esa_now_ns() + 3600 * 1000000000ULL;
	route_write(_metadata, self, &rt);
}

/* ... a TTL and a millisecond behind: run out. */
static void route_run_out(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_route rt;

	route_read(_metadata, self, &rt);
	self->stamp = esa_now_ns() - ESA_ROUTE_TTL_NS - 1000000;
	rt.stamp_ns = self->stamp;
	route_write(_metadata, self, &rt);
}

static void route_renewed(struct __test_metadata *_metadata, struct g_env *self)
{
	struct esa_route rt;

	route_read(_metadata, self, &rt);
	EXPECT_LT(self->stamp, rt.stamp_ns);
	EXPECT_EQ(0, memcmp(rt.dmac, ps_a_moved_mac, 6));
}

/* Ranks 0-2 of job j send chunk s; the last completes it. */
#define ALL(j, s, pr, v, ...)						\
	{ PKT(j, 0, SEQ(s), pr, 0), .verdict = XDP_DROP },		\
	{ PKT(j, 1, SEQ(s), pr, 0), .verdict = XDP_DROP },		\
	{ PKT(j, 2, SEQ(s), pr, 0), .verdict = v, __VA_ARGS__ }

/* The copy egress makes on the port for member k of the job. */
#define COPY_TO(j, p, k)	{ EGRESS(j, p), .verdict = XDP_PASS, .member = (k) + 1 }
#define COPY_AT(j, p, ip, ...)						\
	{ EGRESS(j, p), .verdict = XDP_PASS,				\
	  .hdr = HDR(H_DADDR, .daddr = ip), __VA_ARGS__ }
#define NO_COPY(j, p, ...)	{ EGRESS(j, p), .verdict = XDP_DROP, __VA_ARGS__ }

/* PS A's copy: its address, port and MAC, from sw1, a valid IP header. */
#define PS_A_COPY	HDR(H_DADDR | H_DPORT | H_DMAC | H_SMAC1 | H_CSUM,	\
			    .daddr = T_PS_A, .dport = T_PS_PORT, .dmac = t_ps_a_mac)

/* A PS's ack (or sum) of job A's chunk 210, from where (and as) told. */
#define ACK(p, v, ...)							\
	{ PKT(JA, 0, SEQ(210), 1, 0), .vals = V_SUM, .port = P_##p,	\
	  .verdict = v, __VA_ARGS__ }

static const struct g_case g_results[] = {
	{ .name = "egress_addresses_every_member",
	  .what = "one copy per member, through the job's devmap: on each port "
		  "the copies come in member order, and egress addresses each "
		  "to its member (job A's ranks behind sw0, its PS behind sw1)",
	  .steps = {
		{ CALL(fanout_of_a) },
		ALL(JA, 170, 0, XDP_REDIRECT),
		COPY_TO(JA, SW0, 0),
		COPY_TO(JA, SW0, 1),
		COPY_TO(JA, SW0, 2),
		/* a fourth copy on sw0 has no member: dropped and counted */
		NO_COPY(JA, SW0, .ctr = { C(JA, COPY_DROP, 1) }),
		{ EGRESS(JA, SW1), .verdict = XDP_PASS, .hdr = PS_A_COPY },
		NO_COPY(JA, SW1, .ctr = { C(JA, RESULT_TX, W), C(JA, PS_COPY_TX, 1) }),
		/* the next result (another broadcast) starts afresh */
		ALL(JA, 171, 0, XDP_REDIRECT),
		COPY_AT(JA, SW0, "w0"),
	} },
	{ .name = "egress_copies_of_an_old_registration_dropped",
	  .what = "a copy addresses itself to the members of the registration "
		  "whose sum it carries: the job registered again (other hosts) "
		  "between the ingress and the port's flush, its copies of the "
		  "old sum are dropped and counted",
	  .steps = {
		ALL(JA, 173, 0, XDP_REDIRECT),
		{ DEL(JA), .clear = true },
		{ ADD(JA, .how = HOW_REGISTRY, .edit = { JE(RANKS_MOVED, 3) }) },
		NO_COPY(JA, SW0, .ctr = { C(JA, COPY_DROP, 1), C(JA, RESULT_TX, 0) }),
	} },
	{ .name = "egress_ports_keep_their_own_count",
	  .what = "egress keeps, per CPU and port, which copy of a broadcast "
		  "comes next: two ports whose ifindexes are 4096 apart keep "
		  "theirs apart (job 6's ranks behind sw0, its PS behind the other)",
	  .steps = {
		{ CALL(alias_port) },
		{ ADD(6, .ps = "10.0.2.2") },
		ALL(6, 174, 0, XDP_REDIRECT),
		COPY_AT(6, SW0, "w0"),
		COPY_AT(6, ALIAS, "10.0.2.2"),
		COPY_AT(6, SW0, "w1"),
		COPY_AT(6, SW0, "w2", .ctr = { C(6, COPY_DROP, 0) }),
	} },
	{ .name = "egress_workers_and_ps_share_a_port",
	  .what = "a job's workers and its PS behind one port each get their copy",
	  .steps = {
		{ ADD(6, .ps = T_PS_W) },
		ALL(6, 3, 0, XDP_REDIRECT),
		COPY_AT(6, SW0, "w0"),
		COPY_AT(6, SW0, "w1"),
		COPY_AT(6, SW0, "w2"),
		{ EGRESS(6, SW0), .verdict = XDP_PASS,
		  .hdr = HDR(H_DADDR | H_DMAC, .daddr = T_PS_W, .dmac = t_ps_w_mac) },
		NO_COPY(6, SW0),
		NO_COPY(6, SW1),
	} },
	{ .name = "unicast_passes_egress_untouched",
	  .what = "a unicast frame (here to a PS) goes through the port devmap "
		  "with its egress program, untouched by it",
	  .steps = {
		{ PKT(JA, 0, SEQ(172), 0, ESA_F_RESEND), .verdict = XDP_REDIRECT },
		{ EGRESS(JA, SW1), .verdict = XDP_PASS, .out = SAME },
	} },
	{ .name = "unresolved_and_unreachable_ps",
	  .what = "without a resolved next hop the PS is reached through the "
		  "kernel stack; a completion whose PS copy cannot be made goes "
		  "whole to the PS; without a route the registration is refused, "
		  "and a job registered behind esactl's back has its packets "
		  "dropped and counted",
	  .steps = {
		{ ADD(4, .ps = T_PS_NONEIGH) },
		/* the stack forwards it */
		{ PKT(4, 0, SEQ(190), 0, ESA_F_RESEND), .verdict = XDP_PASS,
		  .hdr = HDR(H_DADDR | H_SADDR, .daddr = T_PS_NONEIGH, .saddr = "w0"),
		  .ctr = { C(4, PS_STACK, 1) } },
		ALL(4, 191, 0, XDP_PASS,
		    .hdr = HDR(H_TYPE | H_REASON | H_BITMAP, .type = ESA_T_PARTIAL,
			       .reason = ESA_R_DELIVER, .bitmap = 0x7),
		    .ctr = { C(4, FANOUT_MISS, 1) }),
		{ ADD(5, .ps = T_PS_UNREACH, .rc = G_FAILS, .err = "no route") },
		{ ADD(5, .ps = T_PS_UNREACH, .how = HOW_RAW) },
		{ PKT(5, 0, SEQ(192), 0, ESA_F_RESEND), .verdict = XDP_DROP,
		  .ctr = { C(5, DROP_NOROUTE, 1) } },
	} },
	{ .name = "packets_above_the_mtu_are_counted",
	  .what = "a route or port whose MTU fell below the packets' size since "
		  "registration: what the kernel would not send is counted "
		  "drop_mtu, never drop_noroute, never silently (to the PS: the "
		  "FIB says it needs fragmenting; the copies of a sum: each "
		  "member behind a port too small counts)",
	  .steps = {
		{ SH("ip route add " T_PS_A "/32 dev sw1 mtu lock 100") },
		{ PKT(JA, 0, SEQ(230), 0, ESA_F_RESEND), .verdict = XDP_DROP,
		  .ctr = { C(JA, DROP_MTU, 1), C(JA, DROP_NOROUTE, 0) } },
		{ SH("ip route del " T_PS_A "/32") },
		/* job B's three ranks are behind sw0, its PS behind sw1 */
		{ SH("ip link set sw0 mtu 150") },
		ALL(JB, 231, 0, XDP_REDIRECT,
		    .ctr = { C(JB, COMPLETED, 1), C(JB, DROP_MTU, W) }),
		{ SH("ip link set sw0 mtu 1500") },
		ALL(JB, 232, 0, XDP_REDIRECT, .ctr = { C(JB, DROP_MTU, W) }),
	} },
	{ .name = "ps_route_cached_for_its_ttl",
	  .what = "the route to a PS is the FIB's answer, cached for "
		  "ESA_ROUTE_TTL_NS: a next hop that changes within it is not "
		  "seen, after it is",
	  .steps = {
		{ PKT(JA, 0, SEQ(220), 0, ESA_F_RESEND), .verdict = XDP_REDIRECT },
		{ CALL(route_cached) },
		/* PS A's next hop moves: within the TTL the cache still rules */
		{ SH(PS_A_MOVED) },
		{ CALL(route_fresh) },
		{ PKT(JA, 1, SEQ(220), 0, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO_PS(A, COLLISION, ESA_R_RESEND, ESA_F_RESEND, JA, 1,
			       SEQ(220), 0, 2) },
		/* run out: looked up again, the new next hop seen and cached */
		{ CALL(route_run_out) },
		{ PKT(JA, 2, SEQ(220), 0, ESA_F_RESEND), .verdict = XDP_REDIRECT,
		  .out = TO(T_PS_A, ps_a_moved_mac, COLLISION, ESA_R_RESEND,
			    ESA_F_RESEND, JA, 2, SEQ(220), 0, 4) },
		{ CALL(route_renewed),
		  .ctr = { C(JA, PS_TX, 3), C(JA, RESEND_FWD, 3) } },
	} },
	{ .name = "completion_without_fanout_goes_whole_to_ps",
	  .what = "a job without a fan-out table for its registration "
		  "(registered behind esactl's back): its sums go whole to its "
		  "PS, which delivers them",
	  .steps = {
		{ ADD(9, .how = HOW_RAW) },
		ALL(9, 200, 1, XDP_REDIRECT,
		    .out = TO_PS(A, PARTIAL, ESA_R_DELIVER, 0, 9, ESA_RANK_NONE,
				 SEQ(200), 1, 0x7),
		    /* bound by packets */
		    .ctr = { C(9, FANOUT_MISS, 1), C(9, LEARN, W) }),
	} },
	{ .name = "no_ps_copy_sends_results_to_workers_only",
	  .what = "ps-copy off: a completed sum goes to the workers only",
	  .no_copy = true,
	  .steps = {
		ALL(JA, 240, 1, XDP_REDIRECT,
		    .hdr = HDR(H_TYPE | H_RESV, .type = ESA_T_RESULT,
			       .resv = ESA_RESV_NO_PS)),
		NO_COPY(JA, SW1, .ctr = { C(JA, PS_COPY_TX, 0) }),
		{ EGRESS(JA, SW0), .verdict = XDP_PASS,
		  .ctr = { C(JA, COMPLETED, 1) } },
	} },
	{ .name = "udp_csum_off_sends_results_without_one",
	  .what = "udp-csum off: results as before, UDP checksum 0 in the "
		  "broadcast and in every copy",
	  .no_udp_csum = true,
	  .steps = {
		ALL(JA, 250, 1, XDP_REDIRECT),
		COPY_TO(JA, SW0, 0),
		COPY_TO(JA, SW0, 1),
		COPY_TO(JA, SW0, 2),
	} },
	{ .name = "ps_sum_goes_to_the_workers",
	  .what = "a sum the PS finished (ESA_T_SUM) goes to the job's workers "
		  "as their result, with the PS's reason, never back to the PS; "
		  "only from the PS (its address, port, the port and MAC the "
		  "switch reaches it by), never with reason HOLD",
	  .steps = {
		/* a resend with nothing in the switch: to the PS, whose
		 * route is now known */
		{ PKT(JA, 0, SEQ(230), 1, ESA_F_RESEND), .verdict = XDP_REDIRECT },
		/* from a worker: dropped, nothing sent */
		{ PKT(JA, 0, SEQ(230), 1, 0), .vals = V_SUM,
		  .edit = { ED(SUM, 0), ED(REASON, ESA_R_PREEMPT) },
		  .verdict = XDP_DROP, .ctr = { C(JA, DROP_ACK, 1) } },
		/* the PS's, but HOLD is atp's alone */
		{ PKT(JA, 0, SEQ(230), 1, 0), .vals = V_SUM, .port = P_SW1,
		  .edit = { ED(SUM, 0), ED(FROM_PS_A, 0), ED(REASON, ESA_R_HOLD) },
		  .verdict = XDP_DROP, .ctr = { C(JA, DROP_HEADER, 1) } },
		{ PKT(JA, 0, SEQ(230), 1, 0), .vals = V_SUM, .port = P_SW1,
		  .edit = { ED(SUM, 0), ED(FROM_PS_A, 0), ED(REASON, ESA_R_PREEMPT) },
		  .verdict = XDP_REDIRECT,
		  .hdr = HDR(H_TYPE | H_REASON | H_RESV, .type = ESA_T_RESULT,
			     .reason = ESA_R_PREEMPT, .resv = ESA_RESV_NO_PS),
		  .ctr = { C(JA, PS_SUM, 1) } },
		/* no copy for the PS, one addressed to each worker */
		NO_COPY(JA, SW1, .ctr = { C(JA, PS_COPY_TX, 0) }),
		{ EGRESS(JA, SW0), .verdict = XDP_PASS,
		  .hdr = HDR(H_TYPE | H_REASON | H_VALS, .type = ESA_T_RESULT,
			     .reason = ESA_R_PREEMPT, .vals = V_SUM) },
	} },
	{ .name = "atp_holds_slot_until_ps_ack",
	  .what = "policy atp: a completed slot is held until the PS's ack "
		  "passes back; acks from anyone but the PS, from the PS's "
		  "address on another port or MAC, with a reason, or a second "
		  "time are dropped and counted",
	  .policy = ESA_POLICY_ATP,
	  .steps = {
		ALL(JA, 210, 1, XDP_REDIRECT,
		    .hdr = HDR(H_TYPE | H_REASON, .type = ESA_T_RESULT,
			       .reason = ESA_R_HOLD),
		    .slot = { SLOT(JA, SEQ(210)), STATE(HELD) }),
		/* held: even a higher priority collides (no preemption) */
		{ PKT(JB, 0, SLOT_OF(JA, 210), 7, 0), .verdict = XDP_REDIRECT,
		  .ctr = { C(JB, COLLISION, 1) } },
		/* an ack from anyone but the PS sends nothing on */
		ACK(SW0, XDP_DROP, .edit = { ED(ACK, 0) }),
		/* ... nor the PS's address from another port than the PS's */
		ACK(SW0, XDP_DROP,
		    .edit = { ED(ACK, 0), ED(SADDR_PS_A, 0), ED(SPORT, T_PS_PORT) },
		    .ctr = { C(JA, DROP_ACK, 2) }),
		/* ... nor from the PS's port with another MAC than the PS's */
		ACK(SW1, XDP_DROP,
		    .edit = { ED(ACK, 0), ED(SADDR_PS_A, 0), ED(SPORT, T_PS_PORT),
			      ED(DMAC_SW1, 0) },
		    .ctr = { C(JA, DROP_ACK, 3) }),
		/* ... nor one with a reason */
		ACK(SW1, XDP_DROP,
		    .edit = { ED(ACK, 0), ED(FROM_PS_A, 0), ED(REASON, ESA_R_HOLD) },
		    .ctr = { C(JA, DROP_HEADER, 1) }),
		/* the PS's ack frees the slot and goes to the members */
		ACK(SW1, XDP_REDIRECT, .edit = { ED(ACK, 0), ED(FROM_PS_A, 0) },
		    .hdr = HDR(H_TYPE | H_RESV, .type = ESA_T_RESULT,
			       .resv = ESA_RESV_NO_PS)),
		NO_COPY(JA, SW1, .ctr = { C(JA, PS_COPY_TX, 0) }),
		{ EGRESS(JA, SW0), .verdict = XDP_PASS,
		  .hdr = HDR(H_RESV, .resv = 0),
		  .slot = { SLOT(JA, SEQ(210)), STATE(FREE) },
		  .ctr = { C(JA, HELD, 1), C(JA, ACK, 1) } },
		/* a second ack of the same sum matches no held slot: never a
		 * second result to the workers */
		ACK(SW1, XDP_DROP, .edit = { ED(ACK, 0), ED(FROM_PS_A, 0) },
		    .ctr = { C(JA, ACK_STALE, 1), C(JA, DROP_ACK, 3), C(JA, ACK, 1) }),
	} },
};
