// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps - the parameter server of ESA jobs: one daemon for many jobs.
 *
 *   esa-ps [ OPTIONS ] [ job ID ps IP:PORT workers IP:PORT... ]...
 *
 * Jobs are given with the words of `esactl job add`, read by the one job
 * parser (user/common/jobdesc.c: max-prio, lease, region, upstream and
 * places are accepted and ignored, they are the switch's), on the command
 * line or in a file (-c), or learnt from esa-agent (--agent, ps_agent.c).
 * The PS binds every distinct PS address of its jobs, finishes what the
 * switch hands it (docs/protocol.md, "The PS") and
 * counts everything it drops.  It takes the switch's packets only from the
 * switch's address and port, and a worker's RESULT only when it answers a
 * FETCH sent to that worker, from its registered address and port.  SIGUSR1
 * prints the counters; SIGINT/SIGTERM print them and exit; SIGHUP reads the
 * jobs again (reload()).  Under systemd it says when it is ready
 * (sd_notify.h); --metrics serves its counters to Prometheus (httpd.h,
 * ps_metrics.c).  The daemon's files are listed in ps_daemon.h.  docs/ps.md,
 * esa-ps(8).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "ps_daemon.h"
#include "ps_agent.h"
#include "xsk.h"
#include "httpd.h"
#include "prom.h"
#include "sd_notify.h"

/* esa-ps's own lines beside the PS's counters (ps_metrics.c). */
static struct esa_httpd httpd = { .lfd = -1 };

static int write_metrics(FILE *f, void *arg)
{
	ps_print_prom(arg, f);
	/* the scrapes: this one too */
	esa_prom_daemon(f, "ps", prog, reloads, reload_failures, httpd.served + 1, httpd.errors);
	return ferror(f) ? -EIO : 0;
}

static void serve(struct ps *ps, const struct opts *o, int argc, char **argv,
		  struct ps_agent *pa)
{
	struct pollfd pfd[MAX_SOCKS + 3 + ESA_HTTPD_CONNS];
	uint64_t next_stats = 0;

	if (o->interval)
		next_stats = now_ns() + o->interval * 1000000000ULL;
	while (!esa_want.exit) {
		/* rebuilt each turn: a reload changes the sockets, connections come and go */
		int n = 0, xi, hi, rc;

		for (int k = 0; k < nsocks; k++)
			pfd[n++] = (struct pollfd){ .fd = socks[k].fd, .events = POLLIN };
		xi = n;
		if (xs)
			pfd[n++] = (struct pollfd){ .fd = esa_xsk_fd(xs), .events = POLLIN };
		if (pa)
			pfd[n++] = (struct pollfd){ .fd = ps_agent_fd(pa), .events = POLLIN };
		hi = n;
		n += esa_httpd_pollfds(&httpd, pfd + n);
		rc = poll(pfd, n, poll_ms());
		if (rc < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		for (int k = 0; rc > 0 && k < nsocks; k++)
			if (pfd[k].revents & POLLIN)
				sock_rx(ps, k);
		if (rc > 0 && xs && (pfd[xi].revents & POLLIN))
			xs_rx(ps);
		dl_flush(ps);
		if (xs)
			esa_xsk_tx_kick(xs);	/* what the device pushed back */
		if (pa)
			ps_agent_step(pa, ps, now_ns());
		esa_httpd_step(&httpd, pfd + hi, n - hi, now_ns(), write_metrics, ps);
		if (esa_want.reload) {
			esa_want.reload = 0;
			reload(ps, o, argc, argv);
		}
		if (esa_want.stats) {
			esa_want.stats = 0;
			ps_print_stats(ps, stdout, o->json);
		}
		if (o->interval && now_ns() >= next_stats) {
			next_stats += o->interval * 1000000000ULL;
			ps_print_stats(ps, stdout, o->json);
		}
	}
}

int main(int argc, char **argv)
{
	struct ps_agent *pa = NULL;
	struct ps_job_cfg jobs[256];
	struct opts o = { 0 };
	char err[256], io[200] = "udp";
	struct ps *ps;
	int njobs = parse_args(argc, argv, &o, jobs);

	ps = ps_new(&o.ps, tx, NULL);
	if (!ps)
		die("out of memory");
	io_init(ps);
	set_given(jobs, njobs);
	for (int i = 0; i < njobs; i++) {
		if (ps_add_job(ps, &jobs[i], err, sizeof(err)))
			die("%s", err);
		sock_for(&jobs[i].ps);
		if (o.verbose)
			say_job("served", &jobs[i]);
	}
	for (int i = 0; i < o.nserve; i++)
		sock_for(&o.serve[i]);
	if (o.agent.sin_port) {
		pa = ps_agent_new(&o.agent, o.key_file, o.serve, o.nserve, err, sizeof(err));
		if (!pa)
			die("%s", err);
	}
	if (o.delay_us && o.io != IO_UDP)
		die("link-delay-us needs --io udp (AF_XDP's frames are not held)");
	if (o.delay_us)
		io_delay(o.delay_us * 1000ULL);
	if (o.io != IO_UDP) {
		char why[160];

		xs_open(&o, why, sizeof(why));
		snprintf(io, sizeof(io), xs ? "%s" : "udp (auto: AF_XDP cannot open: %s)", why);
	}
	if (o.metrics && esa_httpd_open(&httpd, o.metrics, err, sizeof(err)))
		die("%s", err);
	esa_daemon_signals();
	rx_init();
	if (!o.quiet)
		fprintf(stderr, "%s: serving %d job%s on %d address%s, %d values, cache %u, "
			"pending %u per job, io %s%s%.0d%s%s%s%s\n", prog, njobs,
			njobs == 1 ? "" : "s", nsocks, nsocks > 1 ? "es" : "", o.ps.nvals,
			o.ps.cache, o.ps.pending, io, o.delay_us ? ", link delay " : "",
			o.delay_us, o.delay_us ? " us" : "", o.metrics ? ", metrics on " : "",
			o.metrics ? o.metrics : "", pa ? ", jobs from esa-agent" : "");
	esa_sd_notify("READY=1\nSTATUS=serving %d jobs on %d addresses, io %s", njobs, nsocks, io);
	serve(ps, &o, argc, argv, pa);
	esa_sd_notify("STOPPING=1");
	ps_print_stats(ps, stdout, o.json);
	esa_httpd_close(&httpd);
	ps_agent_free(pa);
	esa_xsk_close(xs);
	ps_free(ps);
	return 0;
}
