/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Rule 8, parsing and validation: malformed, spoofed and unknown packets
 * are dropped and counted (exactly one drop counter and rx move), never
 * aggregated; odd IP on the ESA port is dropped too; traffic that is not
 * the switch's passes to the stack byte for byte.
 */

/* Rank 1 of job A sends chunk 140, edited so: dropped, counted once. */
#define BAD(name_, what_, row, ctr_, prio_, flags_, ...)		\
	{ .name = name_, .what = what_, .steps = {			\
		{ PKT(JA, 1, SEQ(140), prio_, flags_),			\
		  .edit = { __VA_ARGS__ }, .verdict = XDP_DROP,		\
		  .ctr = { C(row, ctr_, 1) }, .only = true,		\
		  .slot = { SLOT(JA, SEQ(140)), STATE(FREE), NRANKS(0) } } } }

/* Rank 0 of job A's chunk 160, edited so: not the switch's. */
#define OTHER(name_, what_, ...)					\
	{ .name = name_, .what = what_, .steps = {			\
		{ PKT(JA, 0, SEQ(160), 0, 0), .edit = { __VA_ARGS__ },	\
		  .verdict = XDP_PASS, .out = SAME,			\
		  .ctr = { C(JA, RX, 0), C(G_GLOBAL, RX, 0) } } } }

static const struct g_case g_parse[] = {
	BAD("header_cut_short", "header cut short", G_GLOBAL, DROP_TRUNC, 0, 0,
	    ED(LEN, T_HDRS + ESA_HDR_LEN - 1)),
	BAD("values_cut_short", "values cut short", JA, DROP_TRUNC, 0, 0,
	    ED(CUT, 4)),
	BAD("version_1", "the last version", G_GLOBAL, DROP_VERSION, 0, 0,
	    ED(VERSION, ESA_VERSION - 1)),
	BAD("unregistered_job", "unregistered job", 9, DROP_JOB, 0, 0,
	    ED(JOB, 9), ED(SPORT, T_WORKER_PORT + 9)),
	BAD("job_past_max_jobs", "job id past max_jobs", G_GLOBAL, DROP_JOB, 0, 0,
	    ED(JOB, 16)),
	BAD("rank_past_the_job", "rank past the job", JA, DROP_RANK, 0, 0,
	    ED(RANK, 3), ED(BITMAP, 8), ED(SADDR_WORKER, 3)),
	BAD("priority_above_max", "priority above max", JA, DROP_PRIO, 8, 0),
	BAD("another_ranks_address", "another rank's address", JA, DROP_SPOOF, 0, 0,
	    ED(SADDR_WORKER, 0)),
	BAD("wrong_source_port", "wrong source port", JA, DROP_SPOOF, 0, 0,
	    ED(SPORT_INC, 1)),
	BAD("count_not_the_deployments", "count not the deployment's", JA,
	    DROP_COUNT, 0, 0, ED(COUNT, NV - 8)),
	BAD("udp_length_wrong", "UDP length wrong", JA, DROP_COUNT, 0, 0,
	    ED(ULEN, 4)),
	BAD("bitmap_not_its_rank", "bitmap not 1 << rank", JA, DROP_HEADER, 0, 0,
	    ED(BITMAP, 3)),
	BAD("unknown_flag", "unknown flag", JA, DROP_HEADER, 0, 0x80),
	BAD("reserved_byte_set", "reserved byte set", JA, DROP_HEADER, 0, 0,
	    ED(RESV, 1)),
	BAD("reason_set_by_a_worker", "reason set by a worker", JA, DROP_HEADER,
	    0, 0, ED(REASON, ESA_R_TOMB)),
	BAD("result_sent_to_the_switch", "result sent to the switch", JA,
	    DROP_TYPE, 0, 0, ED(TYPE, ESA_T_RESULT)),
	BAD("ack_without_policy_atp", "ack without policy atp", JA, DROP_TYPE,
	    0, 0, ED(TYPE, ESA_T_ACK)),
	BAD("partial_sent_to_the_switch", "partial sent to the switch", JA,
	    DROP_TYPE, 0, 0, ED(TYPE, ESA_T_PARTIAL)),
	{ .name = "odd_ip_on_esa_port_dropped",
	  .what = "IP options and fragments on the ESA port are dropped too",
	  .steps = {
		{ PKT(JA, 0, SEQ(150), 0, 0), .edit = { ED(FRAG, 0) },
		  .verdict = XDP_DROP },
		{ PKT(JA, 0, SEQ(150), 0, 0), .edit = { ED(IPOPT, 0) },
		  .verdict = XDP_DROP,
		  .ctr = { C(G_GLOBAL, DROP_IP, 2), C(JA, CLAIMED, 0) } },
	} },
	/* non-ESA traffic passes to the stack, byte for byte; so does UDP
	 * to the ESA port that the box forwards (loaded without addr, the
	 * switch takes only what is addressed to the box itself) */
	OTHER("arp_passes", "ARP passes untouched", ED(ETHTYPE, ETH_P_ARP)),
	OTHER("ipv6_passes", "IPv6 passes untouched", ED(ETHTYPE, ETH_P_IPV6)),
	OTHER("tcp_passes", "TCP passes untouched", ED(PROTO, IPPROTO_TCP)),
	OTHER("other_port_passes", "UDP to another port passes untouched",
	      ED(DPORT_FLIP, 0)),
	OTHER("transit_passes", "UDP to the ESA port the box forwards passes",
	      ED(TRANSIT, 0)),
	OTHER("transit_fragment_passes",
	      "a first fragment the box forwards passes", ED(TRANSIT, 1)),
};
