// SPDX-License-Identifier: GPL-2.0
/*
 * esa-ps's jobs of the file and the command line (ps_daemon.h), and again
 * on SIGHUP.  A job whose words are the same keeps everything, its results,
 * its unfinished chunks and its counters; one whose words changed starts
 * anew; one no longer there is forgotten; a new one is served.  Options
 * stay as they are (a change of theirs takes a restart), and a file that
 * does not parse changes nothing.  systemd hears RELOADING=1, then READY=1.
 * The agent's jobs are the agent's (ps_agent.c): a reload leaves them.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "ps_daemon.h"
#include "sd_notify.h"

uint64_t reloads, reload_failures;

/* Close the sockets of PS addresses no job has any more (not under
 * AF_XDP, whose program was given them all). */
static void socks_unused(struct ps *ps, const struct opts *o)
{
	for (int k = nsocks - 1; k >= 0 && !xs; k--) {
		bool used = false;

		for (int i = 0; i < o->nserve && !used; i++)
			used = sock_of(&o->serve[i]) == k;	/* the agent's jobs' */
		for (int i = 0; i < ps_njobs(ps) && !used; i++)
			used = sock_of(&ps_job(ps, i)->ps) == k;
		if (used)
			continue;
		if (socks[k].n)
			flush_sock(ps, &socks[k]);
		close(socks[k].fd);
		memmove(socks + k, socks + k + 1, (nsocks - k - 1) * sizeof(*socks));
		nsocks--;
	}
}

void say_job(const char *what, const struct ps_job_cfg *c)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &c->ps.sin_addr, ip, sizeof(ip));
	fprintf(stderr, "%s: job %u %s: ps %s:%u, %d worker%s\n", prog, c->id, what, ip,
		ntohs(c->ps.sin_port), c->nworkers, c->nworkers > 1 ? "s" : "");
}

/* The reload's new jobs and options, checked before anything changes. */
static void reload_check(const struct opts *o, const struct opts *no,
			 const struct ps_job_cfg *jobs, int n)
{
	if (memcmp(&o->ps, &no->ps, sizeof(o->ps)) || o->io != no->io ||
	    o->queue != no->queue || strcmp(o->ifname, no->ifname) ||
	    o->delay_us != no->delay_us ||
	    strcmp(o->metrics ? o->metrics : "", no->metrics ? no->metrics : ""))
		die("the options changed (switch, values, cache, pending, window, io, "
		    "ifname, queue, sums, link-delay-us, metrics): they take a restart");
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < i; k++)
			if (jobs[k].id == jobs[i].id)
				die("job %u given twice", jobs[i].id);
		if (xs && sock_of(&jobs[i].ps) < 0)
			die("job %u: a new PS address under AF_XDP takes a restart", jobs[i].id);
	}
	for (int i = 0; i < n; i++)
		sock_for(&jobs[i].ps);
}

/* The jobs of the file and the command line again: their number, or -1
 * (said, counted) when they do not parse or take a restart. */
static int reload_read(struct ps *ps, const struct opts *o, int argc, char **argv,
		       struct ps_job_cfg *jobs)
{
	struct opts no = { 0 };
	jmp_buf jb;
	int n;

	if (setjmp(jb)) {
		soft_die = NULL;
		reload_failures++;
		fprintf(stderr, "%s: reload: %s; nothing changed\n", prog, soft_err);
		esa_sd_notify("READY=1\nSTATUS=reload failed: %s; serving %d jobs", soft_err,
			      ps_njobs(ps));
		return -1;
	}
	soft_die = &jb;
	n = parse_args(argc, argv, &no, jobs);
	reload_check(o, &no, jobs, n);
	soft_die = NULL;
	return n;
}

/* The jobs of the file and the command line (not the agent's): a bit per id. */
static uint8_t given[65536 / 8];

static bool job_given(uint16_t id)
{
	return given[id / 8] & (1 << id % 8);
}

void set_given(const struct ps_job_cfg *jobs, int n)
{
	memset(given, 0, sizeof(given));
	for (int i = 0; i < n; i++)
		given[jobs[i].id / 8] |= 1 << jobs[i].id % 8;
}

/* SIGHUP: the jobs of -c FILE and of the command line, read again. */
void reload(struct ps *ps, const struct opts *o, int argc, char **argv)
{
	static struct ps_job_cfg jobs[256];
	int n, kept = 0, added = 0, dropped = 0;
	char err[256];

	esa_sd_reloading();
	n = reload_read(ps, o, argc, argv, jobs);
	if (n < 0)
		return;
	for (int i = ps_njobs(ps) - 1; i >= 0; i--) {
		const struct ps_job_cfg *c = ps_job(ps, i);
		int k = 0;

		if (!job_given(c->id))
			continue;	/* esa-agent's: the agent says when it goes */
		while (k < n && jobs[k].id != c->id)
			k++;
		if (k < n && !memcmp(c, &jobs[k], sizeof(*c))) {
			kept++;
			continue;
		}
		if (o->verbose)
			say_job(k < n ? "changed: starts anew" : "gone", c);
		ps_del_job(ps, c->id);
		dropped++;
	}
	for (int k = 0; k < n; k++) {
		bool have = false;

		for (int i = 0; i < ps_njobs(ps) && !have; i++)
			have = ps_job(ps, i)->id == jobs[k].id;
		if (have)
			continue;
		if (ps_add_job(ps, &jobs[k], err, sizeof(err))) {
			fprintf(stderr, "%s: reload: %s\n", prog, err);
			continue;
		}
		if (o->verbose)
			say_job("served", &jobs[k]);
		added++;
	}
	set_given(jobs, n);
	socks_unused(ps, o);
	reloads++;
	fprintf(stderr, "%s: reload: %d job%s kept, %d added, %d dropped\n", prog, kept,
		kept == 1 ? "" : "s", added, dropped);
	esa_sd_notify("READY=1\nSTATUS=serving %d jobs on %d addresses", ps_njobs(ps), nsocks);
}
