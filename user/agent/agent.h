/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa-agent, the job agent on the switch's box (docs/agent.md): ranks ask
 * it for a job, it registers the job when every rank has asked, tells
 * esa-ps, and deletes the job when its ranks release it or vanish.
 *
 *   esa_agent.c  the daemon: options, the sockets, signals, systemd
 *   config.c     the configuration file: where, and the policy
 *   reload.c     SIGHUP: the configuration read again
 *   serve.c      one request: size, network, mac, time, nonce, then its type
 *   groups.c     the jobs: ranks joining, the policy, registration
 *   live.c       the live jobs: beats, releases, esa-ps's polls, ends
 *   state.c      the state file, written atomically, read at start
 *   metrics.c    the counters: text, JSON, Prometheus
 */
#ifndef ESA_AGENT_H
#define ESA_AGENT_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>
#include <linux/esa.h>
#include "agentmsg.h"

#define AGENT_MAX_ALLOW	32
#define AGENT_MAX_ENTRIES 256	/* jobs and groups still joining */

struct agent_cfg {
	char		path[PATH_MAX];		/* the file itself */
	struct sockaddr_in listen;
	char		key_path[PATH_MAX];
	char		state_path[PATH_MAX];
	char		pin_dir[PATH_MAX];
	struct sockaddr_in sw;			/* what ranks are told; 0: the program's */
	struct sockaddr_in ps;			/* the jobs' PS */
	uint32_t	values;			/* 0: the program's */
	uint32_t	id_lo, id_hi;		/* the ids it assigns */
	bool		have_ids;
	uint32_t	max_prio;
	uint32_t	slots;			/* a job's home, at most; 0: none */
	uint32_t	max_workers;
	uint32_t	max_jobs;
	struct {
		uint32_t net, mask;		/* network order */
	} allow[AGENT_MAX_ALLOW];
	int		nallow;
	uint32_t	lease_ms, window, beat_ms, dead_ms, join_ms, replay_ms;
	char		metrics[32];		/* /metrics at IP:PORT; "": none */
};

/* Why a request was refused: the reply's reason, and a counter each. */
enum agent_refusal {
	AR_OVERSIZED,	/* longer than ESA_AMSG_MAX */
	AR_MALFORMED,	/* not the protocol, or a field missing or wrong */
	AR_NETWORK,	/* from an address no "allow" takes */
	AR_BAD_MAC,	/* not signed with the key */
	AR_STALE,	/* ts outside the replay window, or before the agent started */
	AR_REPLAY,	/* a nonce seen before */
	AR_BUSY,	/* no room to remember its nonce */
	AR_POLICY,	/* a job id, priority, home, world the policy does not allow */
	AR_WORLD,	/* a world size or rank not the group's */
	AR_ADDRESS,	/* an address not the sender's, or another rank's */
	AR_MISMATCH,	/* options not those of the group's first rank */
	AR_FULL,	/* max-jobs reached, or no id left */
	AR_UNKNOWN_JOB,	/* no such job (gone, or never) */
	AR_REGISTER,	/* the switch refused the job */
	__AR_MAX,
};

extern const char *const agent_refusal_names[__AR_MAX];

enum agent_req {
	AQ_JOIN, AQ_BEAT, AQ_RELEASE, AQ_PS_POLL, AQ_PS_JOB, __AQ_MAX,
};

extern const char *const agent_req_names[__AQ_MAX];

/* What a request was answered. */
enum agent_answer { AA_OK, AA_WAIT, AA_REFUSED, __AA_MAX };

extern const char *const agent_answer_names[__AA_MAX];

/* esa_hist.h's buckets of the time from a group's first join to its
 * registration: up to 2^26 us (67 s, past join-timeout's default), then one open. */
#define AGENT_JOIN_BUCKETS 28

struct agent_counters {
	uint64_t	requests, by_type[__AQ_MAX], answers[__AA_MAX], refused[__AR_MAX];
	uint64_t	registered, released, timed_out, gone;
	uint64_t	expired_groups, failed_groups, dropped_groups;
	uint64_t	reloads, reload_failures;
	uint64_t	join_hist[AGENT_JOIN_BUCKETS], join_ns_sum;
};

enum agent_state {
	AE_FREE,
	AE_JOINING,	/* ranks checking in */
	AE_FAILED,	/* the switch refused it: every rank is told */
	AE_LIVE,	/* registered */
};

struct agent_rank {
	struct sockaddr_in addr;
	uint64_t	seen_ms;	/* monotonic: its last join or beat */
	bool		joined, released;
};

/* A group of ranks joining, then the job it became. */
struct agent_entry {
	enum agent_state state;
	char		group[ESA_AMSG_NONCE_LEN + 1];
	uint32_t	world, njoined;
	uint32_t	want_job, want_prio, want_slots;	/* ~0u: not asked */
	uint64_t	since_ms;	/* monotonic: created, or failed */
	uint64_t	first_ns;	/* monotonic: its first rank's join */
	struct agent_rank rank[ESA_MAX_WORKERS];
	/* registered */
	uint32_t	id;
	uint64_t	serial;		/* new for every registration */
	struct sockaddr_in ps, sw;	/* its PS; the switch the ranks talk to */
	uint32_t	values;		/* the switch's vector length */
	uint32_t	window, beat_ms, dead_ms;	/* what its ranks are told */
	bool		ps_ok;		/* esa-ps said it serves it */
	bool		end_said;	/* "cannot delete it yet" logged */
	char		desc[2048];	/* the job's words (jobdesc.h) */
	char		why[ESA_AMSG_MAX / 16];	/* AE_FAILED: why */
};

struct agent {
	struct agent_cfg cfg;
	struct esa_akey	key;
	struct agent_counters c;
	struct agent_entry e[AGENT_MAX_ENTRIES];
	uint64_t	next_serial;
	uint64_t	start_ms;	/* wall clock: requests sent before are stale */
	const char	*metrics_opt;	/* --metrics, over the file's */
	bool		verbose;
	int		log_budget;	/* refusals logged this second */
	uint64_t	log_sec;
	uint64_t	log_dropped;
};

/* config.c */
void agent_cfg_default(struct agent_cfg *c);
int agent_cfg_load(struct agent_cfg *c, const char *path, char *why, size_t len);
/* The defaults, the file, then what the command line sets over it. */
int agent_cfg_read(const struct agent *a, struct agent_cfg *c, const char *path, char *why,
		   size_t len);
bool agent_allowed(const struct agent_cfg *c, uint32_t ip);

/* reload.c: SIGHUP.  0, or -1 when nothing changed (why says why; logged, counted). */
int agent_reload(struct agent *a, char *why, size_t len);

/* serve.c */
/* One datagram from src: reply holds the answer (always one). */
void agent_handle(struct agent *a, const void *buf, size_t len, const struct sockaddr_in *src,
		  struct esa_amsg *reply);
/* Refusal what, counted, with its reason line; logged. */
void agent_refuse(struct agent *a, struct esa_amsg *reply, int what,
		  const struct sockaddr_in *src, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* The start of a reply that is not a refusal: ok or wait, with the nonce. */
void agent_reply(struct esa_amsg *reply, const char *type);
void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void agent_vlog(const char *fmt, va_list ap);
uint64_t agent_mono_ms(void);
uint64_t agent_mono_ns(void);
const char *agent_fmt_sin(const struct sockaddr_in *s, char *buf);	/* >= 24 bytes */

/* groups.c: the policy of a job; 0, or -1 with the reason in why. */
int agent_policy(const struct agent_cfg *c, uint32_t world, uint32_t job, uint32_t prio,
		 uint32_t slots, char *why, size_t len);
/* What the ranks of e, whose home is home slots, are told: its window
 * and timers, which a reload does not change. */
void agent_told(const struct agent_cfg *c, struct agent_entry *e, uint32_t home);
/* The request types; each fills reply (ok, wait or refused). */
void agent_join(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		struct esa_amsg *reply);
void agent_beat(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		struct esa_amsg *reply, bool release);
void agent_ps_poll(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		   struct esa_amsg *reply);
void agent_ps_job(struct agent *a, const struct esa_amsg *m, const struct sockaddr_in *src,
		  struct esa_amsg *reply);
/* Time passes: groups that never completed, jobs whose ranks are gone. */
void agent_tick(struct agent *a);
int agent_live(const struct agent *a);
int agent_joining(const struct agent *a);
/* live.c: is ip a rank or the PS of a live job? */
bool agent_known_addr(const struct agent *a, uint32_t ip);

/* state.c */
int agent_state_save(struct agent *a);
/* The jobs of the state file still on the switch, live again. */
int agent_state_load(struct agent *a, char *why, size_t len);

/* metrics.c */
void agent_print_stats(const struct agent *a, bool json);
/* GET /metrics: the Prometheus text of a (struct agent *), scrapes
 * (served, errors) of the responder's; 0 or -EIO. */
int agent_write_prom(FILE *f, const struct agent *a, uint64_t scrapes, uint64_t scrape_errors);

#endif /* ESA_AGENT_H */
