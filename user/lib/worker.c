// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: the worker engine.
 *
 * A worker streams its allreduces as one sequence of positions (the chunks
 * of each request, in the order the requests were started) through a window
 * of `window` positions: position p may be in flight only while every
 * position before p - window has its result.  Each position is a scale
 * chunk (float32 block exponents), or a data chunk, and a data chunk whose
 * result came back flagged overflow is redone in place with one or two
 * more packets.  Sequence numbers are a deterministic function of the
 * requests (every rank computes the same), and so is every priority.
 *
 * Each position has an entry in a ring of 2 x window entries.  The results
 * of the latest chunks are kept (4 x window, by sequence number) to answer
 * the PS's FETCH: when a sum completed in the switch and both the PS's copy
 * and one rank's copy were lost, the others' copies are the only ones left.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "esa_int.h"
#include "esa_policy.h"

#define NSEC_PER_MSEC	1000000ULL

uint64_t esa_now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int esa_version(void)
{
	return ESA_LIB_VERSION;
}

const char *esa_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0:
		return "success";
	case EOVERFLOW:
		return "a sum does not fit the output type";
	case ERANGE:
		return "a rank had a NaN or infinity in its input";
	case ETIMEDOUT:
		return "no result came back in time (give_up_ms)";
	case EPIPE:
		return "the worker failed earlier; its ranks are out of step";
	case EPROTO:
		return "a peer broke the protocol (mismatched allreduce calls?)";
	default:
		return strerror(err);
	}
}

static int wfail(struct esa_worker *w, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int wfail(struct esa_worker *w, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->err, sizeof(w->err), fmt, ap);
	va_end(ap);
	return err;
}

const char *esa_worker_error(const esa_worker *w)
{
	return w ? w->err : "no worker";
}

static uint64_t rnd(struct esa_worker *w)
{
	/* splitmix64 */
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ */
/* Opening                                                             */
/* ------------------------------------------------------------------ */

static void set_buf(int fd, int force, int plain, int bytes)
{
	if (setsockopt(fd, SOL_SOCKET, force, &bytes, sizeof(bytes)))
		setsockopt(fd, SOL_SOCKET, plain, &bytes, sizeof(bytes));
}

static int open_socket(const struct esa_config *c, char *err, size_t len)
{
	int cur = -1, tgt = -1, fd = -1, e = 0;

	if (c->netns[0]) {
		cur = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (cur < 0) {
			e = errno;
			snprintf(err, len, "cannot open this thread's netns: %s", strerror(e));
			goto out;
		}
		tgt = open(c->netns, O_RDONLY | O_CLOEXEC);
		if (tgt < 0) {
			e = errno;
			snprintf(err, len, "cannot open netns %s: %s", c->netns, strerror(e));
			goto out;
		}
		if (setns(tgt, CLONE_NEWNET)) {
			e = errno;
			snprintf(err, len, "cannot enter netns %s: %s", c->netns, strerror(e));
			goto out;
		}
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, len, "socket: %s", strerror(e));
	} else {
		set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, c->rcvbuf);
		set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, 1 << 20);
		if (bind(fd, (const struct sockaddr *)&c->local, sizeof(c->local))) {
			char ip[INET_ADDRSTRLEN];

			e = errno;
			inet_ntop(AF_INET, &c->local.sin_addr, ip, sizeof(ip));
			snprintf(err, len, "cannot bind %s:%u%s%s: %s", ip,
				 ntohs(c->local.sin_port), c->netns[0] ? " in " : "",
				 c->netns, strerror(e));
			close(fd);
			fd = -1;
		}
	}
	if (cur >= 0 && tgt >= 0 && setns(cur, CLONE_NEWNET)) {
		/* The thread would stay in the other namespace: never. */
		perror("libesa: cannot return to the caller's netns");
		abort();
	}
out:
	if (cur >= 0)
		close(cur);
	if (tgt >= 0)
		close(tgt);
	if (fd < 0)
		errno = e ? e : EINVAL;
	return fd;
}

/*
 * A run's sequence numbers start at a hash of its number, so that a new run
 * of a job id does not meet the results and pieces the PS keeps of an
 * earlier run by sequence number (docs/library.md, "Runs").  The switch's
 * hash of job ids; it keeps 0 at 0.
 */
uint32_t esa_run_base(uint32_t run)
{
	return esa_hash32(run);
}

int esa_worker_set_run(esa_worker *w, uint32_t run)
{
	if (!w)
		return -EINVAL;
	if (w->attained || w->ops)
		return -EBUSY;
	w->cfg.run = run;
	w->next_base = esa_run_base(run);
	return 0;
}

esa_worker *esa_worker_open(const esa_config *c, char *err, size_t errlen)
{
	char why[256] = "";
	struct esa_worker *w;
	size_t stride;
	int rc;

	if (!err || !errlen) {
		err = why;
		errlen = sizeof(why);
	}
	if (!c) {
		snprintf(err, errlen, "no config");
		errno = EINVAL;
		return NULL;
	}
	rc = esa_config_check(c, err, errlen);
	if (rc) {
		errno = -rc;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		goto nomem;
	w->cfg = *c;
	w->nvals = c->values;
	w->pktlen = ESA_HDR_LEN + 4 * (size_t)w->nvals;
	w->full = c->workers >= 64 ? ~0ULL : (1ULL << c->workers) - 1;
	w->window = c->window;
	w->nent = 2 * w->window;
	w->next_base = esa_run_base(c->run);
	stride = (w->pktlen + 63) & ~(size_t)63;
	w->ent = calloc(w->nent, sizeof(*w->ent));
	w->pktmem = aligned_alloc(64, stride * 2 * w->nent);
	w->scratchmem = calloc((size_t)w->nent * 2 * w->nvals, sizeof(int32_t));
	w->rbuf = aligned_alloc(64, ESA_BATCH * 2048);
	w->nrc = 4 * w->window;
	w->rc_seq = calloc(w->nrc, sizeof(*w->rc_seq));
	w->rc_flags = calloc(w->nrc, 1);
	w->rc_vals = calloc((size_t)w->nrc * w->nvals, sizeof(int32_t));
	w->fbuf = calloc(1, w->pktlen);
	if (!w->ent || !w->pktmem || !w->scratchmem || !w->rbuf || !w->rc_seq ||
	    !w->rc_flags || !w->rc_vals || !w->fbuf)
		goto nomem;
	memset(w->pktmem, 0, stride * 2 * w->nent);
	for (uint32_t i = 0; i < w->nent; i++) {
		w->ent[i].p[0].buf = w->pktmem + (2 * i) * stride;
		w->ent[i].p[1].buf = w->pktmem + (2 * i + 1) * stride;
		w->ent[i].scratch = w->scratchmem + (size_t)i * 2 * w->nvals;
		w->ent[i].pos = UINT64_MAX;
	}
	for (int i = 0; i < ESA_BATCH; i++) {
		w->riov[i].iov_base = w->rbuf + i * 2048;
		w->riov[i].iov_len = 2048;
		w->rmsg[i].msg_hdr.msg_iov = &w->riov[i];
		w->rmsg[i].msg_hdr.msg_iovlen = 1;
		w->rmsg[i].msg_hdr.msg_name = &w->rsrc[i];
		w->rmsg[i].msg_hdr.msg_namelen = sizeof(w->rsrc[i]);
		w->smsg[i].msg_hdr.msg_iov = &w->siov[i];
		w->smsg[i].msg_hdr.msg_iovlen = 1;
		w->smsg[i].msg_hdr.msg_name = &w->cfg.sw;
		w->smsg[i].msg_hdr.msg_namelen = sizeof(w->cfg.sw);
	}
	w->rng = esa_now_mono_ns() ^ ((uint64_t)c->job << 32) ^ ((uint64_t)c->rank << 16) ^
		 (uintptr_t)w;
	w->fd = open_socket(c, err, errlen);
	if (w->fd < 0) {
		int e = errno;

		esa_worker_close(w);
		errno = e;
		return NULL;
	}
	w->last_rx_ns = esa_now_mono_ns();
	w->rto_ms = c->timeout_ms;
	return w;
nomem:
	snprintf(err, errlen, "out of memory");
	esa_worker_close(w);
	errno = ENOMEM;
	return NULL;
}

static void op_free(struct esa_request *r)
{
	free(r->hist);
	free(r->scale_done);
	free(r->blk_E);
	free(r->blk_bad);
	free(r);
}

void esa_worker_close(esa_worker *w)
{
	struct esa_request *r, *n;

	if (!w)
		return;
	for (r = w->ops; r; r = n) {
		n = r->next;
		op_free(r);
	}
	if (w->fd > 0)
		close(w->fd);
	free(w->ent);
	free(w->pktmem);
	free(w->scratchmem);
	free(w->rbuf);
	free(w->rc_seq);
	free(w->rc_flags);
	free(w->rc_vals);
	free(w->fbuf);
	free(w);
}

/* ------------------------------------------------------------------ */
/* Priorities                                                          */
/* ------------------------------------------------------------------ */

uint8_t esa_prio_of(const struct esa_worker *w, const struct esa_request *r,
		    uint32_t p)
{
	const struct esa_config *c = &w->cfg;
	int pmax = c->prio_max < 0 ? c->prio : c->prio_max;

	switch (c->policy) {
	case ESA_PRIO_LAS:
		/* Service attained by the job so far: its positions before. */
		return esa_prio_level(r->attained0 + p, c->quantum, c->prio_steps, pmax);
	case ESA_PRIO_SRSF:
		if (c->total_chunks) {
			/* What the job has left, this chunk included (the
			 * simulator's total - seq); past its total: 0. */
			uint64_t a = r->attained0 + p;

			return esa_prio_level(c->total_chunks > a ? c->total_chunks - a : 0,
					      c->quantum, c->prio_steps, pmax);
		}
		/* What is left of this allreduce after this chunk. */
		return esa_prio_level(r->npos - p - 1, c->quantum, c->prio_steps, pmax);
	default:
		return c->prio;
	}
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */
/* ------------------------------------------------------------------ */

static bool busy(const struct esa_worker *w)
{
	for (struct esa_request *r = w->ops; r; r = r->next)
		if (!r->finished)
			return true;
	return false;
}

esa_request *esa_allreduce_start(esa_worker *w, int dtype, const void *in,
				 void *out, size_t n)
{
	struct esa_request *r;
	uint64_t npos, span;

	if (!w) {
		errno = EINVAL;
		return NULL;
	}
	if (w->broken) {
		/* w->err still says why */
		errno = EPIPE;
		return NULL;
	}
	if ((dtype != ESA_INT32 && dtype != ESA_FLOAT32) || (n && (!in || !out))) {
		wfail(w, -EINVAL, "bad dtype or buffer");
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto nomem;
	r->w = w;
	r->dtype = dtype;
	r->in = in;
	r->out = out;
	r->n = n;
	r->ndata = (n + w->nvals - 1) / w->nvals;
	if (dtype == ESA_FLOAT32 && r->ndata) {
		r->block = w->cfg.float_block;
		r->nblocks = (r->ndata + r->block - 1) / r->block;
		r->nscale = ((uint64_t)r->nblocks * ESA_HIST_INTS + w->nvals - 1) / w->nvals;
		r->safe_headroom = esa_ilog2_ceil(w->cfg.workers);
		r->headroom = w->cfg.float_headroom < 0 ? r->safe_headroom :
							    w->cfg.float_headroom;
		r->hist = calloc((size_t)r->nscale * w->nvals, sizeof(int32_t));
		r->scale_done = calloc(r->nscale, 1);
		r->blk_E = malloc(r->nblocks * sizeof(int16_t));
		r->blk_bad = calloc(r->nblocks, 1);
		if (!r->hist || !r->scale_done || !r->blk_E || !r->blk_bad) {
			op_free(r);
			goto nomem;
		}
		for (uint32_t b = 0; b < r->nblocks; b++)
			r->blk_E[b] = INT16_MIN;
	}
	npos = (uint64_t)r->nscale + r->ndata;
	span = npos + 2 * (uint64_t)r->ndata;
	if (span > (1u << 30)) {
		op_free(r);
		wfail(w, -EINVAL, "allreduce too large (%zu elements)", n);
		errno = EINVAL;
		return NULL;
	}
	r->npos = npos;
	r->span = span;
	r->base = w->next_base;
	w->next_base += span;
	r->pos0 = w->attained;
	r->attained0 = w->attained;
	w->attained += npos;
	r->t_start = esa_now_mono_ns();
	if (!busy(w))
		w->last_rx_ns = r->t_start;	/* the silence clock starts now */
	if (!npos)
		r->finished = true;
	if (w->ops_tail)
		w->ops_tail->next = r;
	else
		w->ops = r;
	w->ops_tail = r;
	if (!w->admit)
		w->admit = r;
	return r;
nomem:
	wfail(w, -ENOMEM, "out of memory");
	errno = ENOMEM;
	return NULL;
}

static void op_unlink(struct esa_worker *w, struct esa_request *r)
{
	struct esa_request **pp, *prev = NULL;

	for (pp = &w->ops; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			if (w->ops_tail == r)
				w->ops_tail = prev;
			break;
		}
	}
	if (w->admit == r)
		w->admit = r->next;
}

void esa_request_free(esa_request *r)
{
	struct esa_worker *w;

	if (!r)
		return;
	w = r->w;
	if (!r->finished || r->admitted < r->npos) {
		/* Abandoned: the peers will wait for chunks that never come. */
		for (uint64_t pos = w->low_pos; pos < w->next_pos; pos++) {
			struct esa_entry *e = &w->ent[pos % w->nent];

			if (e->op == r) {
				if (e->state == EN_WAIT)
					w->nwait--;
				e->state = EN_DONE;
				e->p[0].state = e->p[1].state = PK_IDLE;
			}
		}
		while (w->low_pos < w->next_pos &&
		       w->ent[w->low_pos % w->nent].state == EN_DONE)
			w->low_pos++;
		if (!w->broken) {
			w->broken = -EPIPE;
			wfail(w, -EPIPE, "an unfinished allreduce was abandoned");
		}
	}
	op_unlink(w, r);
	/* Finished entries may outlive r: forget it. */
	for (uint32_t i = 0; i < w->nent; i++)
		if (w->ent[i].op == r)
			w->ent[i].op = NULL;
	op_free(r);
}

double esa_request_progress(const esa_request *r)
{
	if (!r)
		return 0;
	if (r->finished || !r->npos)
		return 1;
	return (double)r->done / r->npos;
}

/* ------------------------------------------------------------------ */
/* Building packets                                                    */
/* ------------------------------------------------------------------ */

static int32_t *pkt_vals(struct esa_pkt *p)
{
	return (int32_t *)(p->buf + ESA_HDR_LEN);
}

static void pkt_init(struct esa_worker *w, struct esa_entry *e, int k, uint32_t seq,
		     uint8_t kind)
{
	struct esa_pkt *p = &e->p[k];
	struct esa_hdr *h = (struct esa_hdr *)p->buf;

	p->seq = seq;
	p->kind = kind;
	p->state = PK_READY;
	p->tries = 0;
	p->ovf = 0;
	p->rto_ms = w->rto_ms;
	p->first_ns = p->due_ns = 0;
	h->version = ESA_VERSION;
	h->type = ESA_T_DATA;
	h->flags = 0;
	h->prio = e->prio;
	h->job = htons(w->cfg.job);
	h->rank = htons(w->cfg.rank);
	h->bitmap = htobe64(1ULL << w->cfg.rank);
	h->seq = htonl(seq);
	h->count = htons(w->nvals);
	h->reason = 0;
	h->resv = 0;
}

static size_t chunk_len(const struct esa_worker *w, const struct esa_request *r,
			uint32_t idx)
{
	size_t off = (size_t)idx * w->nvals;

	return r->n - off < (size_t)w->nvals ? r->n - off : (size_t)w->nvals;
}

/* Largest biased exponent of this rank's values in block b. */
static unsigned block_maxexp(const struct esa_worker *w, const struct esa_request *r,
			     uint32_t b)
{
	size_t from = (size_t)b * r->block * w->nvals;
	size_t to = from + (size_t)r->block * w->nvals;

	if (to > r->n)
		to = r->n;
	return esa_q_maxexp((const float *)r->in + from, to - from);
}

/*
 * Scale chunk idx: a slice of the op's histogram stream, ESA_HIST_INTS ints
 * per block.  A rank puts one count in the bin of its largest exponent in
 * the block: byte (e % 4) of int (e / 4).  Summed over <= 64 ranks a byte
 * never carries, and the highest non-zero bin is the job's largest exponent.
 */
static void build_scale(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;
	uint64_t g0 = (uint64_t)e->idx * w->nvals, g1 = g0 + w->nvals;
	int32_t *v;

	pkt_init(w, e, 0, r->base + e->idx, CK_SCALE);
	v = pkt_vals(&e->p[0]);
	memset(v, 0, w->nvals * sizeof(*v));
	for (uint64_t b = g0 / ESA_HIST_INTS; b < r->nblocks && b * ESA_HIST_INTS < g1; b++) {
		unsigned ex = block_maxexp(w, r, b);
		uint64_t gi = b * ESA_HIST_INTS + ex / 4;

		if (gi >= g0 && gi < g1)
			v[gi - g0] = 1 << (8 * (ex % 4));
	}
	e->npkt = 1;
}

static void entry_done(struct esa_worker *w, struct esa_entry *e);

static void fill_nan(float *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NAN;
}

/* Turn an admitted entry into packets, if its inputs are known. */
static bool try_build(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;
	size_t off, len;
	uint32_t seq;

	if (e->is_scale) {
		build_scale(w, e);
	} else {
		off = (size_t)e->idx * w->nvals;
		len = chunk_len(w, r, e->idx);
		seq = r->base + r->nscale + e->idx;
		if (r->dtype == ESA_INT32) {
			pkt_init(w, e, 0, seq, CK_DATA);
			esa_q_i32((const int32_t *)r->in + off, len, pkt_vals(&e->p[0]), w->nvals);
		} else {
			uint32_t b = e->idx / r->block;

			if (r->blk_E[b] == INT16_MIN)
				return false;
			if (r->blk_bad[b]) {
				/* Every rank knows: nobody sends this block. */
				fill_nan((float *)r->out + off, len);
				e->npkt = 0;
				e->state = EN_RUN;
				w->nwait--;
				entry_done(w, e);
				return true;
			}
			pkt_init(w, e, 0, seq, CK_DATA);
			esa_q_f32((const float *)r->in + off, len, pkt_vals(&e->p[0]), w->nvals,
				  esa_q_shift(r->blk_E[b], r->headroom));
		}
		e->npkt = 1;
	}
	e->state = EN_RUN;
	w->nwait--;
	return true;
}

static void admit(struct esa_worker *w)
{
	while (w->admit && w->next_pos - w->low_pos < w->window) {
		struct esa_request *r = w->admit;
		struct esa_entry *e;
		uint32_t p;

		if (r->admitted == r->npos) {
			w->admit = r->next;
			continue;
		}
		p = r->admitted++;
		e = &w->ent[w->next_pos % w->nent];
		memset(&e->p[0].seq, 0, offsetof(struct esa_pkt, buf));
		memset(&e->p[1].seq, 0, offsetof(struct esa_pkt, buf));
		e->op = r;
		e->pos = w->next_pos++;
		e->is_scale = p < r->nscale;
		e->idx = e->is_scale ? p : p - r->nscale;
		e->npkt = 0;
		e->prio = esa_prio_of(w, r, p);
		e->state = EN_WAIT;
		w->nwait++;
		try_build(w, e);
	}
}

static void build_waiting(struct esa_worker *w)
{
	for (uint64_t pos = w->low_pos; pos < w->next_pos && w->nwait; pos++) {
		struct esa_entry *e = &w->ent[pos % w->nent];

		if (e->state == EN_WAIT)
			try_build(w, e);
	}
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static void op_error(struct esa_request *r, int err)
{
	if (!r->status)
		r->status = err;
}

static void entry_done(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;

	e->state = EN_DONE;
	w->st.chunks++;
	if (++r->done == r->npos) {
		r->finished = true;
		w->st.ops++;
		w->st.elems += r->n;
	}
	while (w->low_pos < w->next_pos && w->ent[w->low_pos % w->nent].state == EN_DONE)
		w->low_pos++;
}

/* The summed histograms of block b are all in: the block's E. */
static void block_known(struct esa_worker *w, struct esa_request *r, uint32_t b)
{
	const uint8_t *bins = (const uint8_t *)(r->hist + (size_t)b * ESA_HIST_INTS);
	unsigned count = 0;
	int top = -1;

	for (int bin = 0; bin < 4 * ESA_HIST_INTS; bin++) {
		if (bins[bin]) {
			count += bins[bin];
			top = bin;
		}
	}
	if (count != (unsigned)w->cfg.workers) {
		/* Every rank counts once per block: someone reduces something else. */
		op_error(r, -EPROTO);
		wfail(w, -EPROTO, "scale block %u of job %d has %u counts for %d ranks", b,
		      w->cfg.job, count, w->cfg.workers);
		r->blk_bad[b] = 1;
		top = 0;
	}
	if (top == ESA_EXP_NONFINITE) {
		r->blk_bad[b] = 1;
		op_error(r, -ERANGE);
	}
	r->blk_E[b] = esa_q_E(top < 0 ? 0 : top);
}

static void scale_result(struct esa_worker *w, struct esa_entry *e, const int32_t *v)
{
	struct esa_request *r = e->op;
	uint64_t g0 = (uint64_t)e->idx * w->nvals, g1 = g0 + w->nvals;

	memcpy(r->hist + g0, v, w->nvals * sizeof(*v));
	r->scale_done[e->idx] = 1;
	for (uint64_t b = g0 / ESA_HIST_INTS; b < r->nblocks && b * ESA_HIST_INTS < g1; b++) {
		uint64_t c0 = b * ESA_HIST_INTS / w->nvals;
		uint64_t c1 = (b * ESA_HIST_INTS + ESA_HIST_INTS - 1) / w->nvals;
		bool all = true;

		for (uint64_t c = c0; c <= c1; c++)
			all &= r->scale_done[c];
		if (all)
			block_known(w, r, b);
	}
}

static void start_redo(struct esa_worker *w, struct esa_entry *e)
{
	struct esa_request *r = e->op;
	size_t off = (size_t)e->idx * w->nvals, len = chunk_len(w, r, e->idx);
	uint32_t seq = r->base + r->npos + 2 * e->idx;

	w->st.redos++;
	if (r->dtype == ESA_INT32) {
		pkt_init(w, e, 0, seq, CK_REDO_HI);
		pkt_init(w, e, 1, seq + 1, CK_REDO_LO);
		esa_q_split((const int32_t *)r->in + off, len, pkt_vals(&e->p[0]),
			    pkt_vals(&e->p[1]), w->nvals);
		e->npkt = 2;
	} else {
		int h = r->headroom + 1 > r->safe_headroom ? r->headroom + 1 : r->safe_headroom;
		uint32_t b = e->idx / r->block;

		if (h > 30)
			h = 30;
		pkt_init(w, e, 0, seq, CK_REDO_F);
		esa_q_f32((const float *)r->in + off, len, pkt_vals(&e->p[0]), w->nvals,
			  esa_q_shift(r->blk_E[b], h));
		e->npkt = 1;
	}
}

static void chunk_result(struct esa_worker *w, struct esa_entry *e, int k, bool ovf,
			 const int32_t *v)
{
	struct esa_request *r = e->op;
	size_t off = (size_t)e->idx * w->nvals, len;
	struct esa_pkt *p = &e->p[k];
	uint32_t b;
	int h;

	if (p->kind == CK_SCALE) {
		static const int32_t zeros[ESA_MAX_VALUES];

		/* Counts cannot overflow: a flagged sum is no histogram, and
		 * its blocks fail their count check (-EPROTO). */
		scale_result(w, e, ovf ? zeros : v);
		entry_done(w, e);
		return;
	}
	len = chunk_len(w, r, e->idx);
	switch (p->kind) {
	case CK_DATA:
		if (ovf) {
			start_redo(w, e);
			return;
		}
		if (r->dtype == ESA_INT32) {
			esa_dq_i32(v, len, (int32_t *)r->out + off);
		} else {
			b = e->idx / r->block;
			esa_dq_f32(v, len, (float *)r->out + off,
				   esa_q_shift(r->blk_E[b], r->headroom));
		}
		break;
	case CK_REDO_HI:
	case CK_REDO_LO:
		memcpy(e->scratch + (p->kind == CK_REDO_LO) * w->nvals, v, len * 4);
		p->ovf = ovf;
		if (e->p[0].state != PK_DONE || e->p[1].state != PK_DONE)
			return;
		if (e->p[0].ovf || e->p[1].ovf) {
			/* Halves cannot overflow for <= 64 ranks: not our peers. */
			op_error(r, -EOVERFLOW);
			memset((int32_t *)r->out + off, 0, len * 4);
		} else if (esa_dq_join(e->scratch, e->scratch + w->nvals, len,
				       (int32_t *)r->out + off)) {
			op_error(r, -EOVERFLOW);	/* the true sum does not fit */
		}
		break;
	case CK_REDO_F:
		b = e->idx / r->block;
		h = r->headroom + 1 > r->safe_headroom ? r->headroom + 1 : r->safe_headroom;
		if (h > 30)
			h = 30;
		if (ovf) {
			op_error(r, -EOVERFLOW);
			fill_nan((float *)r->out + off, len);
		} else {
			esa_dq_f32(v, len, (float *)r->out + off, esa_q_shift(r->blk_E[b], h));
		}
		break;
	}
	entry_done(w, e);
}

/*
 * Round-trip estimate from chunks answered on their first send (Jacobson
 * and Karels, as TCP): the first timeout of a new chunk is srtt + 4 rttvar,
 * at least timeout_ms, at most timeout_max_ms.  A round trip includes the
 * wait for the slowest peer's packet, so the estimate follows the job.
 */
static void rtt_sample(struct esa_worker *w, uint64_t ns)
{
	int64_t us = ns / 1000, rto;

	w->st.rtt_us_sum += us;
	w->st.rtt_samples++;
	if (!w->srtt_us) {
		w->srtt_us = us;
		w->rttvar_us = us / 2;
	} else {
		int64_t d = us - w->srtt_us;

		w->srtt_us += d / 8;
		w->rttvar_us += ((d < 0 ? -d : d) - w->rttvar_us) / 4;
	}
	rto = (w->srtt_us + 4 * w->rttvar_us + 999) / 1000;
	if (rto < w->cfg.timeout_ms)
		rto = w->cfg.timeout_ms;
	if (rto > w->cfg.timeout_max_ms)
		rto = w->cfg.timeout_max_ms;
	w->rto_ms = rto;
}

static void keep_result(struct esa_worker *w, uint32_t seq, uint8_t flags,
			const int32_t *v)
{
	uint32_t i = seq % w->nrc;

	w->rc_seq[i] = seq;
	w->rc_flags[i] = ESA_RC_VALID | (flags & ESA_F_OVERFLOW);
	memcpy(w->rc_vals + (size_t)i * w->nvals, v, w->nvals * sizeof(*v));
}

/*
 * The PS asks for the result of a chunk (it lost the switch's copy and a
 * peer lacks it): send ours, if we still have it, to where it asked from.
 * With `ps` configured only that address may ask.
 */
static void answer_fetch(struct esa_worker *w, const struct esa_hdr *f,
			 const struct sockaddr_in *src)
{
	struct esa_hdr *h = (struct esa_hdr *)w->fbuf;
	uint32_t seq = ntohl(f->seq), i = seq % w->nrc;

	if (f->version != ESA_VERSION || ntohs(f->job) != w->cfg.job || f->bitmap ||
	    f->count || !src || src->sin_family != AF_INET ||
	    (w->cfg.have_ps && (src->sin_addr.s_addr != w->cfg.ps.sin_addr.s_addr ||
				src->sin_port != w->cfg.ps.sin_port))) {
		w->st.rx_invalid++;
		return;
	}
	w->st.fetch_rx++;
	if (!(w->rc_flags[i] & ESA_RC_VALID) || w->rc_seq[i] != seq)
		return;
	memset(h, 0, ESA_HDR_LEN);
	h->version = ESA_VERSION;
	h->type = ESA_T_RESULT;
	h->flags = w->rc_flags[i] & ESA_F_OVERFLOW;
	h->job = htons(w->cfg.job);
	h->rank = htons(w->cfg.rank);
	h->bitmap = htobe64(w->full);
	h->seq = htonl(seq);
	h->count = htons(w->nvals);
	memcpy(w->fbuf + ESA_HDR_LEN, w->rc_vals + (size_t)i * w->nvals, w->nvals * 4);
	if (sendto(w->fd, w->fbuf, w->pktlen, 0, (const struct sockaddr *)src,
		   sizeof(*src)) == (ssize_t)w->pktlen)
		w->st.fetch_answered++;
}

static struct esa_request *op_of_seq(struct esa_worker *w, uint32_t seq)
{
	for (struct esa_request *r = w->ops; r; r = r->next)
		if ((uint32_t)(seq - r->base) < r->span)
			return r;
	return NULL;
}

void esa_rx_packet(struct esa_worker *w, const uint8_t *buf, size_t len,
		   const struct sockaddr_in *src, uint64_t now)
{
	const struct esa_hdr *h = (const struct esa_hdr *)buf;
	struct esa_request *r;
	struct esa_entry *e;
	uint32_t seq, off, p;
	uint64_t pos;
	bool from_ps;
	int k;

	w->st.rx_packets++;
	if (len == ESA_HDR_LEN && h->type == ESA_T_FETCH) {
		answer_fetch(w, h, src);
		return;
	}
	if (len != w->pktlen || h->version != ESA_VERSION || h->type != ESA_T_RESULT ||
	    ntohs(h->job) != w->cfg.job || ntohs(h->count) != w->nvals ||
	    be64toh(h->bitmap) != w->full || (h->flags & ~ESA_F_MASK)) {
		w->st.rx_invalid++;
		return;
	}
	from_ps = src && src->sin_addr.s_addr != w->cfg.sw.sin_addr.s_addr;
	if (from_ps && w->cfg.have_ps &&
	    (src->sin_addr.s_addr != w->cfg.ps.sin_addr.s_addr ||
	     src->sin_port != w->cfg.ps.sin_port)) {
		w->st.rx_invalid++;
		return;
	}
	seq = ntohl(h->seq);
	r = op_of_seq(w, seq);
	if (!r) {
		w->st.rx_stale++;
		return;
	}
	off = seq - r->base;
	p = off < r->npos ? off : r->nscale + (off - r->npos) / 2;
	pos = r->pos0 + p;
	if (pos >= w->next_pos) {
		w->st.rx_stale++;	/* never sent: not a result of ours */
		return;
	}
	e = &w->ent[pos % w->nent];
	if (e->pos != pos || e->op != r) {
		w->st.rx_stale++;
		return;
	}
	for (k = 0; k < e->npkt; k++)
		if (e->p[k].seq == seq && e->p[k].state >= PK_SENT)
			break;
	if (k == e->npkt || e->p[k].state == PK_DONE) {
		w->st.rx_duplicates++;
		return;
	}
	e->p[k].state = PK_DONE;
	w->st.rx_results++;
	w->st.rx_from_ps += from_ps;
	if (e->p[k].tries == 1)
		rtt_sample(w, now - e->p[k].first_ns);
	if (h->flags & ESA_F_OVERFLOW)
		w->st.overflows++;
	if (e->p[k].kind == CK_SCALE)
		w->st.scale_chunks++;
	w->last_rx_ns = now;
	keep_result(w, seq, h->flags, (const int32_t *)(buf + ESA_HDR_LEN));
	chunk_result(w, e, k, h->flags & ESA_F_OVERFLOW,
		     (const int32_t *)(buf + ESA_HDR_LEN));
}

/* ------------------------------------------------------------------ */
/* Sending and receiving                                               */
/* ------------------------------------------------------------------ */

static bool send_error_transient(int e)
{
	return e == ENETUNREACH || e == EHOSTUNREACH || e == EHOSTDOWN ||
	       e == ECONNREFUSED || e == EPERM || e == ENETDOWN;
}

/* Send batch[0..n); mark what went.  Returns what went, or -errno (fatal). */
static int flush(struct esa_worker *w, int n, uint64_t now)
{
	uint64_t cap = (uint64_t)w->cfg.timeout_max_ms * NSEC_PER_MSEC;
	int sent = 0;

	/*
	 * Back off fully only when nothing comes back (a switch or PS down):
	 * while results arrive, a late chunk is a loss or a slow peer, and a
	 * long timeout would only stall the window.
	 */
	if (now - w->last_rx_ns < cap && 4ULL * w->rto_ms * NSEC_PER_MSEC < cap)
		cap = 4ULL * w->rto_ms * NSEC_PER_MSEC;

	while (sent < n) {
		int m = sendmmsg(w->fd, w->smsg + sent, n - sent, 0);

		if (m < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) {
				w->st.send_again++;
				w->send_blocked = true;
				break;
			}
			if (!send_error_transient(e))
				return -e;
			m = 1;	/* count it as sent and lost; the timer resends */
		}
		for (int i = sent; i < sent + m; i++) {
			struct esa_pkt *p = w->spkt[i];
			uint64_t rto = (uint64_t)p->rto_ms * NSEC_PER_MSEC;

			w->st.tx_packets++;
			if (p->state == PK_SENT) {
				w->st.tx_resends++;
				rto *= 2;
				if (rto > cap)
					rto = cap;
				p->rto_ms = rto / NSEC_PER_MSEC;
			} else {
				p->first_ns = now;
				p->state = PK_SENT;
			}
			p->tries++;
			/* a quarter of jitter, so that ranks do not resend in step */
			p->due_ns = now + rto + rnd(w) % (rto / 4 + 1);
			if (p->due_ns < w->next_due)
				w->next_due = p->due_ns;
		}
		sent += m;
	}
	return sent;
}

static void batch_add(struct esa_worker *w, int i, struct esa_pkt *p)
{
	w->siov[i].iov_base = p->buf;
	w->siov[i].iov_len = w->pktlen;
	w->spkt[i] = p;
}

/* Send new packets and resend late ones; w->next_due: the next deadline. */
static int send_pass(struct esa_worker *w, uint64_t now)
{
	int n = 0, rc;

	w->send_blocked = false;
	w->next_due = UINT64_MAX;
	for (uint64_t pos = w->low_pos; pos < w->next_pos; pos++) {
		struct esa_entry *e = &w->ent[pos % w->nent];

		if (e->state != EN_RUN)
			continue;
		for (int k = 0; k < e->npkt; k++) {
			struct esa_pkt *p = &e->p[k];

			if (p->state == PK_SENT && p->due_ns > now) {
				if (p->due_ns < w->next_due)
					w->next_due = p->due_ns;
				continue;
			}
			if (p->state != PK_READY && p->state != PK_SENT)
				continue;
			if (p->state == PK_SENT)
				p->buf[2] = ESA_F_RESEND;	/* same bytes, flagged */
			batch_add(w, n++, p);
			if (n == ESA_BATCH) {
				rc = flush(w, n, now);
				if (rc < 0)
					return rc;
				n = 0;
				if (w->send_blocked)
					return 0;
			}
		}
	}
	if (n) {
		rc = flush(w, n, now);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int recv_all(struct esa_worker *w, uint64_t now)
{
	int got = 0;

	for (;;) {
		int m;

		for (int i = 0; i < ESA_BATCH; i++)
			w->rmsg[i].msg_hdr.msg_namelen = sizeof(w->rsrc[i]);
		m = recvmmsg(w->fd, w->rmsg, ESA_BATCH, MSG_DONTWAIT, NULL);
		if (m < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return got;
			return -errno;
		}
		for (int i = 0; i < m; i++)
			esa_rx_packet(w, w->riov[i].iov_base, w->rmsg[i].msg_len, &w->rsrc[i],
				      now);
		got += m;
		if (m < ESA_BATCH)
			return got;
	}
}

static void fail_all(struct esa_worker *w, int err)
{
	for (struct esa_request *r = w->ops; r; r = r->next) {
		if (!r->finished) {
			op_error(r, err);
			r->finished = true;
		}
	}
	if (!w->broken)
		w->broken = err;
}

int esa_pump(struct esa_worker *w, int wait_ms)
{
	uint64_t now = esa_now_mono_ns(), next_due = UINT64_MAX, deadline;
	struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
	int rc, got;

	if (w->broken) {
		fail_all(w, w->broken);
		return w->broken;
	}
	admit(w);
	if (w->nwait)
		build_waiting(w);
	rc = send_pass(w, now);
	if (rc < 0)
		goto fatal;
	next_due = w->next_due;
	got = recv_all(w, now);
	if (got < 0) {
		rc = got;
		goto fatal;
	}
	if (got)
		return got;
	if (!busy(w))
		return 0;
	/* Silence: give up at last. */
	if (w->cfg.give_up_ms &&
	    now - w->last_rx_ns > (uint64_t)w->cfg.give_up_ms * NSEC_PER_MSEC) {
		wfail(w, -ETIMEDOUT, "no result for %d ms (job %d rank %d)",
		      w->cfg.give_up_ms, w->cfg.job, w->cfg.rank);
		fail_all(w, -ETIMEDOUT);
		return -ETIMEDOUT;
	}
	if (!wait_ms)
		return 0;
	if (w->cfg.give_up_ms) {
		deadline = w->last_rx_ns + (uint64_t)w->cfg.give_up_ms * NSEC_PER_MSEC + 1;
		if (deadline < next_due)
			next_due = deadline;
	}
	if (next_due == UINT64_MAX) {
		/* nothing to time: wait as asked */
	} else if (next_due > now) {
		uint64_t ms = (next_due - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC;

		if (wait_ms < 0 || ms < (uint64_t)wait_ms)
			wait_ms = ms;
	} else {
		wait_ms = 0;
	}
	if (w->send_blocked)
		pfd.events |= POLLOUT;
	if (wait_ms && poll(&pfd, 1, wait_ms) < 0 && errno != EINTR) {
		rc = -errno;
		goto fatal;
	}
	return 0;
fatal:
	wfail(w, rc, "socket: %s", strerror(-rc));
	fail_all(w, -EPIPE);
	return rc;
}

int esa_progress(esa_worker *w, int timeout_ms)
{
	uint64_t end = esa_now_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) *
					    NSEC_PER_MSEC;
	int left, rc;

	if (!w)
		return -EINVAL;
	do {
		uint64_t now = esa_now_mono_ns();
		int ms = now >= end ? 0 : (int)((end - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);

		rc = esa_pump(w, ms);
		if (rc < 0)
			return rc;
		left = 0;
		for (struct esa_request *r = w->ops; r; r = r->next)
			left += !r->finished;
	} while (left && timeout_ms > 0 && esa_now_mono_ns() < end);
	return left;
}

int esa_serve(esa_worker *w, int timeout_ms, int quiet_ms)
{
	uint64_t start = esa_now_mono_ns(), last = start, end, now;
	uint64_t answered = w ? w->st.fetch_answered : 0, before;

	if (!w)
		return -EINVAL;
	end = start + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * NSEC_PER_MSEC;
	while ((now = esa_now_mono_ns()) < end) {
		struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
		uint64_t stop = end;
		int rc;

		if (quiet_ms > 0 && last + (uint64_t)quiet_ms * NSEC_PER_MSEC < stop)
			stop = last + (uint64_t)quiet_ms * NSEC_PER_MSEC;
		if (now >= stop)
			break;
		rc = poll(&pfd, 1, (int)((stop - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC));
		if (rc < 0 && errno != EINTR)
			return -errno;
		before = w->st.rx_packets;
		rc = esa_pump(w, 0);
		if (rc < 0)
			return rc;
		if (w->st.rx_packets != before)
			last = esa_now_mono_ns();
	}
	return (int)(w->st.fetch_answered - answered);
}

int esa_test(esa_request *r, int *status)
{
	int rc;

	if (!r)
		return -EINVAL;
	if (!r->finished) {
		rc = esa_pump(r->w, 0);
		if (rc < 0 && !r->finished)
			return rc;
	}
	if (r->finished && status)
		*status = r->status;
	return r->finished;
}

int esa_wait(esa_request *r, int timeout_ms)
{
	uint64_t end = 0;
	int rc;

	if (!r)
		return -EINVAL;
	if (timeout_ms >= 0)
		end = esa_now_mono_ns() + (uint64_t)timeout_ms * NSEC_PER_MSEC;
	while (!r->finished) {
		int ms = -1;

		if (timeout_ms >= 0) {
			uint64_t now = esa_now_mono_ns();

			if (now >= end)
				return -EAGAIN;
			ms = (int)((end - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
		}
		rc = esa_pump(r->w, ms);
		if (rc < 0 && !r->finished)
			return rc;
	}
	return r->status;
}

int esa_allreduce(esa_worker *w, int dtype, const void *in, void *out, size_t n)
{
	esa_request *r = esa_allreduce_start(w, dtype, in, out, n);
	int rc;

	if (!r)
		return -errno;
	rc = esa_wait(r, -1);
	esa_request_free(r);
	return rc;
}

int esa_allreduce_i32(esa_worker *w, const int32_t *in, int32_t *out, size_t n)
{
	return esa_allreduce(w, ESA_INT32, in, out, n);
}

int esa_allreduce_f32(esa_worker *w, const float *in, float *out, size_t n)
{
	return esa_allreduce(w, ESA_FLOAT32, in, out, n);
}

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

int esa_worker_stats(const esa_worker *w, struct esa_stats *s, size_t size)
{
	if (!w || !s)
		return -EINVAL;
	memcpy(s, &w->st, size < sizeof(w->st) ? size : sizeof(w->st));
	return 0;
}

#define SF(f) { #f, offsetof(struct esa_stats, f) }
static const struct {
	const char *name;
	size_t off;
} stat_fields[] = {
	SF(ops), SF(elems), SF(chunks), SF(tx_packets), SF(tx_resends),
	SF(rx_packets), SF(rx_results), SF(rx_from_ps), SF(rx_duplicates), SF(rx_stale),
	SF(rx_invalid), SF(overflows), SF(redos), SF(scale_chunks), SF(fetch_rx),
	SF(fetch_answered), SF(send_again), SF(rtt_us_sum), SF(rtt_samples),
};

int64_t esa_worker_stat(const esa_worker *w, const char *name)
{
	if (!w || !name)
		return -1;
	for (size_t i = 0; i < sizeof(stat_fields) / sizeof(stat_fields[0]); i++)
		if (!strcmp(name, stat_fields[i].name))
			return *(const uint64_t *)((const char *)&w->st + stat_fields[i].off);
	return -1;
}
