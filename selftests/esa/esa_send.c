// SPDX-License-Identifier: GPL-2.0
/*
 * esa_send - workers and a result sink over real UDP sockets, for the
 * namespace test (e2e.sh).  Not the worker library: a minimal, strict
 * protocol peer that checks what the switch delivers.
 *
 *   esa_send worker -j JOB -r RANK -w WORKERS -d SWITCH[:PORT] -b IP:PORT
 *                   -n CHUNKS -v VALUES [ -W WINDOW ] [ -t MSEC ] [ -p PRIO ]
 *     sends its values of chunks 0..CHUNKS-1 (at most WINDOW unanswered)
 *     and checks that each result arrives exactly once, for its own job,
 *     with the exact sum of all ranks' values.
 *   esa_send ps -b IP:PORT -n CHUNKS -v VALUES [ -t MSEC ] JOB:WORKERS...
 *     receives the switch's copies of the results for the PS and checks
 *     them the same way, until all came or MSEC of silence.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "testlib.h"
#include "util.h"
#include "esa_wire.h"

#define SEED	1

/* The largest datagram, and room to see a longer one is not ours. */
#define BUFSZ	(ESA_HDR_LEN + 4 * ESA_MAX_VALUES + 64)

static __u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

static int open_socket(const struct esa_addr *a)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = a->ip,
				   .sin_port = a->port };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), big = 4 << 20;

	if (fd < 0 || bind(fd, (void *)&sin, sizeof(sin))) {
		perror("esa_send: socket");
		exit(1);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	return fd;
}

/* Check a received result; returns the chunk, or -1 with a message. */
static long check_result(const __u8 *buf, ssize_t len, int nvals, __u16 job,
			 int nworkers, bool ps)
{
	const struct esa_hdr *h = (const void *)buf;
	const __u8 *v = buf + ESA_HDR_LEN;
	__u32 seq;

	if (len != ESA_HDR_LEN + 4 * nvals || h->version != ESA_VERSION) {
		fprintf(stderr, "esa_send: bad result (%zd bytes)\n", len);
		return -1;
	}
	seq = ntohl(h->seq);
	if (ntohs(h->job) != job) {
		fprintf(stderr, "esa_send: got job %u's result, I am in job %u\n",
			ntohs(h->job), job);
		return -1;
	}
	/* The PS may also get a whole sum to deliver itself. */
	if (h->type != ESA_T_RESULT &&
	    !(ps && h->type == ESA_T_PARTIAL && h->reason == ESA_R_DELIVER)) {
		fprintf(stderr, "esa_send: job %u chunk %u: type %u reason %u\n", job,
			seq, h->type, h->reason);
		return -1;
	}
	if (be64toh(h->bitmap) != esa_full_mask(nworkers) || h->flags) {
		fprintf(stderr, "esa_send: job %u chunk %u: bitmap %llx flags %x\n", job,
			seq, (unsigned long long)be64toh(h->bitmap), h->flags);
		return -1;
	}
	for (int i = 0; i < nvals; i++) {
		__s64 want = 0;
		__s32 got = (__s32)(v[4 * i] | v[4 * i + 1] << 8 | v[4 * i + 2] << 16 |
				    (__u32)v[4 * i + 3] << 24);

		for (int r = 0; r < nworkers; r++)
			want += t_val(SEED, job, r, seq, i);
		if (got != want) {
			fprintf(stderr, "esa_send: job %u chunk %u value %d: %d, want %lld\n",
				job, seq, i, got, (long long)want);
			return -1;
		}
	}
	return seq;
}

static int worker(int job, int rank, int nworkers, struct esa_addr sw,
		  struct esa_addr me, __u32 nchunks, int nvals, __u32 window,
		  int timeout_ms, int prio)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = sw.ip,
				  .sin_port = sw.port ? sw.port : htons(ESA_DEFAULT_PORT) };
	__u8 *got = calloc(nchunks, 1), buf[BUFSZ];
	__u64 *sent_at = calloc(nchunks, sizeof(__u64));
	__u32 next = 0, low = 0, done = 0, resends = 0;
	int fd = open_socket(&me), errors = 0;

	if (!got || !sent_at)
		return 1;
	while (done < nchunks) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		__u64 t = now_ms();

		/* send what the window allows, and resend what timed out */
		while (next < nchunks && next < low + window) {
			sent_at[next] = 0;
			next++;
		}
		for (__u32 s = low; s < next; s++) {
			struct esa_hdr *h = (void *)buf;
			__u8 *v = buf + ESA_HDR_LEN;

			if (got[s] || (sent_at[s] && t - sent_at[s] < (__u64)timeout_ms))
				continue;
			esa_hdr_init(h, ESA_T_DATA, job, rank, 1ULL << rank, s, nvals);
			h->flags = sent_at[s] ? ESA_F_RESEND : 0;
			h->prio = prio;
			for (int i = 0; i < nvals; i++) {
				__u32 x = t_val(SEED, job, rank, s, i);

				v[4 * i] = x;
				v[4 * i + 1] = x >> 8;
				v[4 * i + 2] = x >> 16;
				v[4 * i + 3] = x >> 24;
			}
			if (sent_at[s] && ++resends > 1000) {
				fprintf(stderr, "esa_send: job %d rank %d: chunk %u never answered\n",
					job, rank, s);
				return 1;
			}
			if (sendto(fd, buf, ESA_HDR_LEN + 4 * nvals, 0, (void *)&to,
				   sizeof(to)) < 0) {
				perror("esa_send: sendto");
				return 1;
			}
			sent_at[s] = t ? t : 1;
		}
		if (poll(&pfd, 1, timeout_ms) < 0)
			return 1;
		while (1) {
			ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
			long s;

			if (n < 0)
				break;
			s = check_result(buf, n, nvals, job, nworkers, false);
			if (s < 0 || s >= nchunks) {
				errors++;
				continue;
			}
			if (got[s]++) {
				fprintf(stderr, "esa_send: job %d rank %d: chunk %ld twice\n",
					job, rank, s);
				errors++;
				continue;
			}
			done++;
			while (low < nchunks && got[low])
				low++;
		}
		if (errors)
			break;
	}
	printf("worker job %d rank %d: %u results, %u resends, %d errors\n", job, rank,
	       done, resends, errors);
	return errors ? 1 : 0;
}

static int ps(struct esa_addr me, __u32 nchunks, int nvals, int timeout_ms,
	      int njobs, int *jobs, int *workers)
{
	__u8 buf[BUFSZ], *got[64];
	int fd = open_socket(&me), errors = 0;
	__u32 done = 0, delivered = 0;

	for (int j = 0; j < njobs; j++)
		got[j] = calloc(nchunks, 1);
	while (done < nchunks * njobs && !errors) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		long s;
		int j;

		if (poll(&pfd, 1, timeout_ms) <= 0)
			break;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < ESA_HDR_LEN)
			continue;
		for (j = 0; j < njobs; j++)
			if (jobs[j] == ntohs(((struct esa_hdr *)buf)->job))
				break;
		if (j == njobs) {
			fprintf(stderr, "esa_send: PS got job %u\n",
				ntohs(((struct esa_hdr *)buf)->job));
			errors++;
			break;
		}
		s = check_result(buf, n, nvals, jobs[j], workers[j], true);
		if (s < 0 || s >= nchunks || got[j][s]++) {
			errors++;
			break;
		}
		delivered += ((struct esa_hdr *)buf)->type == ESA_T_PARTIAL;
		done++;
	}
	printf("ps: %u result copies of %u (%u whole sums to deliver), %d errors\n",
	       done, nchunks * njobs, delivered, errors);
	return errors || done != nchunks * njobs;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: esa_send worker -j JOB -r RANK -w WORKERS -d SWITCH[:PORT] -b IP:PORT\n"
		"                       -n CHUNKS -v VALUES [-W WINDOW] [-t MSEC] [-p PRIO]\n"
		"       esa_send ps -b IP:PORT -n CHUNKS -v VALUES [-t MSEC] JOB:WORKERS...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int job = -1, rank = -1, nworkers = 0, nvals = 0, timeout = 200, prio = 0, opt;
	struct esa_addr sw = {}, me = {};
	__u32 nchunks = 0, window = 32;
	bool is_ps;

	if (argc < 2)
		usage();
	is_ps = !strcmp(argv[1], "ps");
	if (!is_ps && strcmp(argv[1], "worker"))
		usage();
	argc--, argv++;
	while ((opt = getopt(argc, argv, "j:r:w:d:b:n:v:W:t:p:")) != -1) {
		switch (opt) {
		case 'j': job = atoi(optarg); break;
		case 'r': rank = atoi(optarg); break;
		case 'w': nworkers = atoi(optarg); break;
		case 'd': if (parse_addr(optarg, &sw, false)) usage(); break;
		case 'b': if (parse_addr(optarg, &me, true)) usage(); break;
		case 'n': nchunks = strtoul(optarg, NULL, 0); break;
		case 'v': nvals = atoi(optarg); break;
		case 'W': window = strtoul(optarg, NULL, 0); break;
		case 't': timeout = atoi(optarg); break;
		case 'p': prio = atoi(optarg); break;
		default: usage();
		}
	}
	if (!nchunks || nvals < 8 || nvals > ESA_MAX_VALUES || !me.ip)
		usage();
	if (is_ps) {
		int jobs[64], workers[64], n = 0;

		for (; optind < argc && n < 64; optind++, n++)
			if (sscanf(argv[optind], "%d:%d", &jobs[n], &workers[n]) != 2)
				usage();
		if (!n)
			usage();
		return ps(me, nchunks, nvals, timeout, n, jobs, workers);
	}
	if (job < 0 || rank < 0 || nworkers < 1 || rank >= nworkers || !sw.ip || !window)
		usage();
	return worker(job, rank, nworkers, sw, me, nchunks, nvals, window, timeout, prio);
}
