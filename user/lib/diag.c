// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libesa: silence.  When no result comes back: half-way to giving up, a
 * probe of the PS (w->probed); at give_up_ms, the error line says who is
 * silent, from what the worker noted on the way (the ICMP errors udp.c
 * read, the PS's latest FETCH recv.c kept, the last packet from the switch
 * and from the PS).  Owns no state of its own but the probe's flag.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/errqueue.h>

#include "esa_int.h"

static const char *sin_str(const struct sockaddr_in *a, char *buf, size_t len)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}

/* "0,2,5": the ranks of a set, the first 8 of them. */
static const char *ranks_str(uint64_t set, char *buf, size_t len)
{
	int o = 0, n = 0;

	buf[0] = 0;
	for (int r = 0; r < 64 && o < (int)len; r++) {
		if (!(set & (1ULL << r)))
			continue;
		if (n++ == 8) {
			snprintf(buf + o, len - o, ",...");
			break;
		}
		o += snprintf(buf + o, len - o, "%s%d", n > 1 ? "," : "", r);
	}
	return buf;
}

static int fmt_icmp(char *buf, size_t len, const char *who, const struct sockaddr_in *a,
		    const struct esa_icmp *x)
{
	char addr[32], from[INET_ADDRSTRLEN];

	sin_str(a, addr, sizeof(addr));
	inet_ntop(AF_INET, &x->from, from, sizeof(from));
	return snprintf(buf, len, "the %s %s is unreachable: %s (%s%s, %u time%s)", who, addr,
			strerror(x->err), x->origin == SO_EE_ORIGIN_ICMP ? "ICMP from " : "",
			x->origin == SO_EE_ORIGIN_ICMP ? from : "local error", x->count,
			x->count > 1 ? "s" : "");
}

/* The oldest packet still waiting for its result, NULL if none was sent. */
static const struct esa_pkt *oldest_waiting(const struct esa_worker *w)
{
	for (uint64_t pos = w->low_pos; pos < w->next_pos; pos++) {
		const struct esa_entry *e = &w->ent[pos % w->nent];

		for (int k = 0; e->state == EN_RUN && k < e->npkt; k++)
			if (e->p[k].state == PK_SENT)
				return &e->p[k];
	}
	return NULL;
}

/*
 * Giving up: say who is silent.  ICMP errors name an unreachable switch or
 * PS; the PS's latest FETCH names the ranks a chunk waits for (it holds the
 * others' pieces); else which of the switch and the PS sent nothing since
 * the oldest chunk waiting went out.
 */
static void diagnose(struct esa_worker *w, uint64_t now)
{
	const struct esa_pkt *p = oldest_waiting(w);
	char sw[32], ps[32], held[48], lack[48];
	size_t len = sizeof(w->err);
	struct esa_entry *e;
	int o, k;

	sin_str(&w->cfg.sw, sw, sizeof(sw));
	sin_str(&w->cfg.ps, ps, sizeof(ps));
	o = snprintf(w->err, len, "no result for %d ms (job %d rank %d): ", w->cfg.give_up_ms,
		     w->cfg.job, w->cfg.rank);
	e = w->ps_ns ? esa_entry_of_seq(w, w->ps_seq, &k) : NULL;
	if (w->icmp_sw.count && w->icmp_sw.ns >= w->last_sw_ns)
		fmt_icmp(w->err + o, len - o, "switch", &w->cfg.sw, &w->icmp_sw);
	else if (e && k < e->npkt && e->p[k].state == PK_SENT && (w->full & ~w->ps_held))
		snprintf(w->err + o, len - o, "the PS %s holds chunk %u of rank(s) %s and lacks "
			 "rank(s) %s", ps, w->ps_seq, ranks_str(w->ps_held, held, sizeof(held)),
			 ranks_str(w->full & ~w->ps_held, lack, sizeof(lack)));
	else if (w->icmp_ps.count && w->icmp_ps.ns >= w->last_ps_ns)
		fmt_icmp(w->err + o, len - o, "PS", &w->cfg.ps, &w->icmp_ps);
	else if (!p)
		snprintf(w->err + o, len - o, "nothing could be sent (the socket stays full)");
	else if (w->last_sw_ns > p->first_ns)
		snprintf(w->err + o, len - o, "the switch %s answered until %llu ms ago but not "
			 "chunk %u; the PS %s sent nothing about it", sw,
			 (unsigned long long)((now - w->last_sw_ns) / NSEC_PER_MSEC), p->seq, ps);
	else
		snprintf(w->err + o, len - o, "nothing from the switch %s since chunk %u went "
			 "out %llu ms ago, nor from the PS %s; no ICMP error", sw, p->seq,
			 (unsigned long long)((now - p->first_ns) / NSEC_PER_MSEC), ps);
}

/*
 * Silence (no result): half-way to giving up, an empty datagram to the PS,
 * whose ICMP error would say that it is gone (a PS ignores it); at
 * give_up_ms, -ETIMEDOUT with the error line naming the silent peer (the
 * caller fails every request).
 */
int esa_silence(struct esa_worker *w, uint64_t now)
{
	uint64_t quiet = now - w->last_rx_ns, limit = (uint64_t)w->cfg.give_up_ms * NSEC_PER_MSEC;

	if (!w->probed && quiet > limit / 2) {
		w->probed = true;
		w->st.ps_probes++;
		esa_io_send_ps(w, "", 0, now);
	}
	if (quiet <= limit)
		return 0;
	esa_read_errq(w, w->udp.fd, now);
	if (w->udp.sfd >= 0)
		esa_read_errq(w, w->udp.sfd, now);
	diagnose(w, now);
	return -ETIMEDOUT;
}
