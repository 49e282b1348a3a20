/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A model of the jobs' workers and parameter server, for the randomized and
 * stress tests: what each rank sends (deterministic values), and what the
 * PS does with what the switch hands it.  The PS merge rule is the real
 * PS's own (esa_merge.h): a multi-rank partial counts only if it shares no
 * rank with the partials kept so far; single ranks fill in what they do
 * not cover; so no rank is ever counted twice, and resends (singles)
 * always complete a chunk in the end.
 */
#ifndef ESA_PSMODEL_H
#define ESA_PSMODEL_H

#include <pthread.h>
#include "testlib.h"
#include "esa_merge.h"

struct pm_job {
	__u16	id;
	int	w;		/* workers */
	__u8	max_prio;
	const char *ps;
	__u32	nchunks;
	__u32	oldest;		/* oldest chunk not done */
	__u32	cur[ESA_MAX_WORKERS];	/* next chunk each rank sends */
};

struct pm_chunk {
	bool	done;
	__u64	sent;		/* ranks that sent their original */
	struct esa_merge m;	/* the ranks the PS kept */
	__s64	msum[ESA_MAX_VALUES];
};

struct pm_stats {
	__u64	valid, bad, other, dups, resends, acks;
	__u64	switch_done, ps_done, ps_pieces, ps_ignored;
	__u64	errors;
};

struct pm {
	struct pm_job	*jobs;
	int		njobs;
	int		nvals;
	__u64		seed;
	struct pm_chunk	*chunks[16];
	struct pm_stats	st;
	pthread_mutex_t	lock;	/* the PS is one; workers may be many */
};

#define pm_err(pm, ...)							\
	do {								\
		if ((pm)->st.errors++ < 8) {				\
			fprintf(stderr, "# ");				\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
		}							\
	} while (0)

static inline int pm_init(struct pm *pm, struct pm_job *jobs, int njobs,
			  int nvals, __u64 seed)
{
	memset(pm, 0, sizeof(*pm));
	pm->jobs = jobs;
	pm->njobs = njobs;
	pm->nvals = nvals;
	pm->seed = seed;
	pthread_mutex_init(&pm->lock, NULL);
	for (int j = 0; j < njobs; j++) {
		jobs[j].oldest = 0;
		memset(jobs[j].cur, 0, sizeof(jobs[j].cur));
		pm->chunks[j] = calloc(jobs[j].nchunks, sizeof(struct pm_chunk));
		if (!pm->chunks[j])
			return -1;
	}
	return 0;
}

static inline void pm_free(struct pm *pm)
{
	for (int j = 0; j < pm->njobs; j++)
		free(pm->chunks[j]);
	pthread_mutex_destroy(&pm->lock);
}

/* What rank r of job j sends for chunk s: deterministic, small values. */
static inline __s32 pm_val(const struct pm *pm, int j, int r, __u32 s, int i)
{
	return t_val(pm->seed, j, r, s, i);
}

static inline __s64 pm_want(const struct pm *pm, int j, __u32 s, int i)
{
	__s64 sum = 0;

	for (int r = 0; r < pm->jobs[j].w; r++)
		sum += pm_val(pm, j, r, s, i);
	return sum;
}

/* Priority: a deterministic function of job and chunk, within the cap. */
static inline __u8 pm_prio(const struct pm *pm, int j, __u32 s)
{
	return (s * 5 + j * 3) % (pm->jobs[j].max_prio + 1);
}

static inline int pm_job_index(const struct pm *pm, __u16 id)
{
	for (int j = 0; j < pm->njobs; j++)
		if (pm->jobs[j].id == id)
			return j;
	return -1;
}

/* A finished sum reached the workers: it must be exact.  Under pm->lock. */
static inline void pm_complete(struct pm *pm, int j, __u32 s, const __s64 *sum,
			       bool by_switch)
{
	struct pm_chunk *c = &pm->chunks[j][s];

	for (int i = 0; i < pm->nvals; i++) {
		if (sum[i] != pm_want(pm, j, s, i)) {
			pm_err(pm, "job %u chunk %u value %d: got %lld want %lld (%s)",
			       pm->jobs[j].id, s, i, (long long)sum[i],
			       (long long)pm_want(pm, j, s, i),
			       by_switch ? "switch" : "PS");
			break;
		}
	}
	if (!c->done) {
		c->done = true;
		*(by_switch ? &pm->st.switch_done : &pm->st.ps_done) += 1;
	}
}

/* The PS receives a partial or a collision.  Under pm->lock. */
static inline void pm_ps_receive(struct pm *pm, const struct t_pkt *p)
{
	int j = pm_job_index(pm, p->job);
	__s64 sum[ESA_MAX_VALUES];
	struct pm_chunk *c;
	__u64 full;

	if (j < 0 || p->seq >= pm->jobs[j].nchunks) {
		pm_err(pm, "PS got a packet of unknown job %u chunk %u", p->job, p->seq);
		return;
	}
	c = &pm->chunks[j][p->seq];
	full = esa_full_mask(pm->jobs[j].w);
	pm->st.ps_pieces++;
	if (p->flags & ESA_F_OVERFLOW) {
		pm_err(pm, "overflow flagged on job %u chunk %u", p->job, p->seq);
		return;
	}
	if (c->done) {
		pm->st.ps_ignored++;
		return;
	}
	if (!p->bitmap || (p->bitmap & ~full)) {
		pm_err(pm, "PS got bitmap %llx for job %u", (unsigned long long)p->bitmap,
		       p->job);
		return;
	}
	if (p->type == ESA_T_PARTIAL && (p->bitmap & (p->bitmap - 1))) {
		if (esa_merge_add(&c->m, p->bitmap, true) != ESA_MERGE_KEPT) {
			pm->st.ps_ignored++;	/* overlaps a kept partial */
			return;
		}
		for (int i = 0; i < pm->nvals; i++)
			c->msum[i] += p->vals[i];
	} else {
		int r = __builtin_ctzll(p->bitmap);

		if (p->bitmap & (p->bitmap - 1)) {
			pm_err(pm, "collision with bitmap %llx",
			       (unsigned long long)p->bitmap);
			return;
		}
		for (int i = 0; i < pm->nvals; i++) {
			if (p->vals[i] != pm_val(pm, j, r, p->seq, i)) {
				pm_err(pm, "rank %d of job %u chunk %u altered on its way",
				       r, p->job, p->seq);
				return;
			}
		}
		esa_merge_add(&c->m, p->bitmap, false);	/* a duplicate: the same values */
	}
	if (!esa_merge_complete(&c->m, full))
		return;
	for (int i = 0; i < pm->nvals; i++) {
		sum[i] = c->msum[i];
		for (int r = 0; r < pm->jobs[j].w; r++)
			if (esa_merge_own(&c->m) & (1ULL << r))
				sum[i] += pm_val(pm, j, r, p->seq, i);
	}
	pm_complete(pm, j, p->seq, sum, false);
}

/*
 * Send rank r's packet for chunk s of job j through the switch and route
 * what comes out: a result to the workers, anything else to the PS (which,
 * under policy atp, acks held sums back through the switch).
 */
static inline int pm_send(struct pm *pm, struct esa *e, const struct t_net *n,
			  int j, int r, __u32 s, bool resend)
{
	__s32 v[ESA_MAX_VALUES], out[ESA_MAX_VALUES];
	struct t_pkt p, o;
	struct t_run res;
	__s64 sum[ESA_MAX_VALUES];
	int rc = 0;

	for (int i = 0; i < pm->nvals; i++)
		v[i] = pm_val(pm, j, r, s, i);
	p = t_data(n, pm->jobs[j].id, r, s, pm_prio(pm, j, s), v, pm->nvals);
	if (resend)
		p.flags = ESA_F_RESEND;
	if (t_send(e, &p, n->sw0, &res))
		return -1;
	pthread_mutex_lock(&pm->lock);
	pm->st.valid++;
	if (res.verdict == XDP_DROP)
		goto out;
	if (t_parse(res.pkt, res.len, &o, out, ESA_MAX_VALUES)) {
		pm_err(pm, "unparsable output, verdict %d", res.verdict);
		goto out;
	}
	if (res.verdict == XDP_REDIRECT && o.type == ESA_T_RESULT &&
	    o.reason == ESA_R_HOLD) {
		o.type = ESA_T_ACK;
		o.reason = 0;
		t_reply_macs(&o);	/* from the PS, where the sum went */
		o.saddr = o.daddr;
		o.sport = T_PS_PORT;
		o.daddr = t_ip(T_SW_IP);
		o.dport = ESA_DEFAULT_PORT;
		pm->st.acks++;
		pthread_mutex_unlock(&pm->lock);
		rc = t_send(e, &o, n->sw1, &res);
		pthread_mutex_lock(&pm->lock);
		if (rc || t_parse(res.pkt, res.len, &o, out, ESA_MAX_VALUES) ||
		    res.verdict != XDP_REDIRECT || o.type != ESA_T_RESULT) {
			pm_err(pm, "ack of job %u chunk %u: verdict %d", o.job, o.seq,
			       res.verdict);
			goto out;
		}
	}
	if (res.verdict == XDP_REDIRECT && o.type == ESA_T_RESULT) {
		if (o.flags & ESA_F_OVERFLOW)
			pm_err(pm, "result of job %u chunk %u flagged overflow", o.job, o.seq);
		for (int i = 0; i < pm->nvals; i++)
			sum[i] = out[i];
		if (pm_job_index(pm, o.job) < 0 ||
		    o.seq >= pm->jobs[pm_job_index(pm, o.job)].nchunks)
			pm_err(pm, "result of unknown job %u chunk %u", o.job, o.seq);
		else
			pm_complete(pm, pm_job_index(pm, o.job), o.seq, sum, true);
	} else if ((res.verdict == XDP_REDIRECT || res.verdict == XDP_PASS) &&
		   (o.type == ESA_T_PARTIAL || o.type == ESA_T_COLLISION)) {
		pm_ps_receive(pm, &o);
	} else {
		pm_err(pm, "job %u rank %d chunk %u: verdict %d type %u",
		       pm->jobs[j].id, r, s, res.verdict, o.type);
	}
out:
	pthread_mutex_unlock(&pm->lock);
	return rc;
}

/* Workers that lack a result resend until they have it.  0: all done. */
static inline int pm_drain(struct pm *pm, struct esa *e, const struct t_net *n)
{
	for (int j = 0; j < pm->njobs; j++)
		for (__u32 s = 0; s < pm->jobs[j].nchunks; s++)
			for (int r = 0; r < pm->jobs[j].w; r++)
				if (!(pm->chunks[j][s].sent & (1ULL << r))) {
					pm->chunks[j][s].sent |= 1ULL << r;
					if (pm_send(pm, e, n, j, r, s, false))
						return -1;
				}
	for (int round = 0; round < 50; round++) {
		int left = 0;

		for (int j = 0; j < pm->njobs; j++) {
			for (__u32 s = 0; s < pm->jobs[j].nchunks; s++) {
				if (pm->chunks[j][s].done)
					continue;
				left++;
				for (int r = 0; r < pm->jobs[j].w && !pm->chunks[j][s].done; r++) {
					pm->st.resends++;
					if (pm_send(pm, e, n, j, r, s, true))
						return -1;
				}
			}
		}
		if (!left)
			return 0;
	}
	return 1;
}

#endif /* ESA_PSMODEL_H */
