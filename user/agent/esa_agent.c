// SPDX-License-Identifier: GPL-2.0
/*
 * esa-agent - the job agent on the ESA switch's box (docs/agent.md).
 *
 *   esa-agent [ -c CONFIG ] [ --metrics IP:PORT ] [ -j ] [ -i SECONDS ] [ -q ] [ -v ]
 *   esa-agent --new-key FILE
 *
 * Training ranks ask it for a job over UDP (one request per rank, signed
 * with the key shared with them); when every rank of a group has asked it
 * registers the job through the switch's registry (the program's maps or
 * esa.ko), esa-ps learns the job from it, and it deletes the job when the
 * ranks release it or go silent.  Its jobs outlive it: a restarted agent
 * reads them from its state file.  SIGUSR1 prints the counters; SIGHUP
 * reads the configuration again (reload.c); SIGINT and SIGTERM print them
 * and exit, leaving the jobs registered.  Under systemd it says when it is
 * ready (sd_notify.h); --metrics serves its counters to Prometheus
 * (httpd.h, metrics.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "agent.h"
#include "daemon.h"
#include "esa_version.h"
#include "httpd.h"
#include "sd_notify.h"

static struct agent the_agent;
static struct esa_httpd httpd = { .lfd = -1 };

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	agent_vlog(fmt, ap);
	va_end(ap);
	exit(1);
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: esa-agent [ OPTIONS ]\n"
		"       esa-agent --new-key FILE\n"
		"  -c, --config FILE      the configuration (/etc/esa/agent.conf): listen,\n"
		"                         key, state, pin, switch, ps, jobs LO-HI, allow,\n"
		"                         max-prio, slots, max-workers, max-jobs, lease,\n"
		"                         window, heartbeat, dead-after, join-timeout,\n"
		"                         replay-window, metrics (esa-agent(8))\n"
		"      --check            read the configuration and the key, then exit\n"
		"      --metrics IP:PORT  serve the counters to Prometheus: GET /metrics\n"
		"      --new-key FILE     write a new random key to FILE (mode 600)\n"
		"  -i, --stats-interval S print the counters every S seconds\n"
		"  -j, --json             counters as JSON\n"
		"  -q, --quiet            no startup line\n"
		"  -v, --verbose          a line for every request\n"
		"  -V, --version          the version\n"
		"SIGUSR1 prints the counters; SIGHUP reads the configuration again (the\n"
		"policy and timers; jobs live keep theirs); SIGINT/SIGTERM print them and\n"
		"exit, leaving the jobs registered (the state file keeps them).\n");
	exit(rc);
}

static void new_key(const char *path)
{
	uint8_t k[32];
	char hex[65];
	int fd;

	if (getrandom(k, sizeof(k), 0) != sizeof(k))
		die("getrandom: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(k); i++)
		sprintf(hex + 2 * i, "%02x", k[i]);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	if (dprintf(fd, "%s\n", hex) < 0 || close(fd))
		die("%s: %s", path, strerror(errno));
	exit(0);
}

struct opts {
	const char	*config;
	int		interval;
	bool		json, quiet, check;
};

static void parse_args(int argc, char **argv, struct opts *o, struct agent *a)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'C' },
		{ "metrics", required_argument, NULL, 'M' },
		{ "new-key", required_argument, NULL, 'K' },
		{ "stats-interval", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct sockaddr_in sin;
	char *end;
	int opt;

	o->config = "/etc/esa/agent.conf";
	while ((opt = getopt_long(argc, argv, "c:i:jqvVh", lo, NULL)) != -1) {
		switch (opt) {
		case 'c': o->config = optarg; break;
		case 'C': o->check = true; break;
		case 'M':
			if (strlen(optarg) >= sizeof(a->cfg.metrics) ||
			    esa_parse_sin(optarg, ESA_ADDR_NEED_PORT | ESA_ADDR_ANY, 0, &sin))
				die("metrics \"%s\" is not IP:PORT", optarg);
			a->metrics_opt = optarg;
			break;
		case 'K': new_key(optarg); break;
		case 'i':
			o->interval = strtol(optarg, &end, 10);
			if (*end || o->interval < 1 || o->interval > 86400)
				die("stats-interval \"%s\" is not a number in 1..86400", optarg);
			break;
		case 'j': o->json = true; break;
		case 'q': o->quiet = true; break;
		case 'v': a->verbose = true; break;
		case 'V': esa_print_version("esa-agent"); exit(0);
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind < argc)
		die("unknown argument \"%s\" (try esa-agent --help)", argv[optind]);
}

static int open_socket(const struct agent_cfg *c)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	char at[24];

	int on = 1;

	if (fd < 0)
		die("socket: %s", strerror(errno));
	/* answers from the address asked (listen 0.0.0.0: the one of the request) */
	setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on));
	if (bind(fd, (const struct sockaddr *)&c->listen, sizeof(c->listen)))
		die("cannot listen on %s: %s", agent_fmt_sin(&c->listen, at), strerror(errno));
	return fd;
}

/* -v: a line for a request and its answer, their first lines' words. */
static void log_request(const struct sockaddr_in *src, const uint8_t *buf, size_t n,
			const struct esa_amsg *reply)
{
	char from[24], req[64], ans[160];
	size_t k;

	for (k = 0; k < n && k < sizeof(req) - 1; k++)
		req[k] = buf[k] == '\n' ? ' ' : buf[k] >= 0x20 && buf[k] < 0x7f ? buf[k] : '?';
	req[k] = 0;
	for (k = 0; k < reply->len && k < sizeof(ans) - 1; k++)
		ans[k] = reply->buf[k] == '\n' ? ' ' : reply->buf[k];
	ans[k] = 0;
	agent_log("%s: %s -> %s", agent_fmt_sin(src, from), req, ans + 12);
}

/*
 * The datagram's destination address (IP_PKTINFO), for the answer's
 * source: a rank takes answers only from the address it asked.
 */
static void answer_from(struct msghdr *mh, struct in_pktinfo *to)
{
	struct cmsghdr *c;

	memset(to, 0, sizeof(*to));
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO)
			to->ipi_spec_dst = ((struct in_pktinfo *)CMSG_DATA(c))->ipi_addr;
}

/* Every datagram waiting: each answered, from the address it was sent to. */
static void serve_socket(struct agent *a, int fd)
{
	static uint8_t buf[65536];
	static struct esa_amsg reply;
	char cbuf[CMSG_SPACE(sizeof(struct in_pktinfo))];
	struct sockaddr_in src;
	struct in_pktinfo pi;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *c;
	ssize_t n;

	for (;;) {
		iov = (struct iovec){ buf, sizeof(buf) };
		mh = (struct msghdr){ .msg_name = &src, .msg_namelen = sizeof(src), .msg_iov = &iov,
				      .msg_iovlen = 1, .msg_control = cbuf,
				      .msg_controllen = sizeof(cbuf) };
		n = recvmsg(fd, &mh, MSG_TRUNC);
		if (n < 0)
			return;
		answer_from(&mh, &pi);
		agent_handle(a, buf, n, &src, &reply);
		if (a->verbose)
			log_request(&src, buf, n, &reply);
		iov = (struct iovec){ reply.buf, reply.len };
		mh.msg_iov = &iov;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		sendmsg(fd, &mh, 0);
	}
}

/* What systemd shows: where the agent listens, its ids, its jobs now. */
static void status(const struct agent *a, char *buf, size_t len)
{
	char at[24];
	int live = agent_live(a), joining = agent_joining(a);

	snprintf(buf, len, "listening on %s, job ids %u-%u, %d job%s live, %d group%s joining",
		 agent_fmt_sin(&a->cfg.listen, at), a->cfg.id_lo, a->cfg.id_hi, live,
		 live == 1 ? "" : "s", joining, joining == 1 ? "" : "s");
}

static int write_metrics(FILE *f, void *arg)
{
	return agent_write_prom(f, arg, httpd.served + 1, httpd.errors);	/* this one too */
}

/* SIGHUP: RELOADING=1, then READY=1 with the outcome. */
static void reload(struct agent *a)
{
	char why[600], st[160];
	int rc;

	esa_sd_reloading();
	rc = agent_reload(a, why, sizeof(why));
	status(a, st, sizeof(st));
	if (rc)
		esa_sd_notify("READY=1\nSTATUS=reload failed: %s; %s", why, st);
	else
		esa_sd_notify("READY=1\nSTATUS=%s", st);
}

static void serve(struct agent *a, int fd, const struct opts *o)
{
	struct pollfd p[1 + 1 + ESA_HTTPD_CONNS];
	uint64_t next_stats = agent_mono_ms() + o->interval * 1000ULL;
	int live = agent_live(a), joining = agent_joining(a);
	char st[160];

	while (!esa_want.exit) {
		/* rebuilt each turn: metrics connections come and go */
		int n = 1, rc;

		p[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
		n += esa_httpd_pollfds(&httpd, p + 1);
		rc = poll(p, n, 250);
		if (rc < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		if (rc > 0 && (p[0].revents & POLLIN))
			serve_socket(a, fd);
		esa_httpd_step(&httpd, p + 1, rc > 0 ? n - 1 : 0, agent_mono_ns(), write_metrics, a);
		agent_tick(a);
		if (esa_want.reload) {
			esa_want.reload = 0;
			reload(a);
		}
		if (agent_live(a) != live || agent_joining(a) != joining) {
			live = agent_live(a);
			joining = agent_joining(a);
			status(a, st, sizeof(st));
			esa_sd_notify("STATUS=%s", st);
		}
		if (esa_want.stats || (o->interval && agent_mono_ms() >= next_stats)) {
			esa_want.stats = 0;
			next_stats = agent_mono_ms() + o->interval * 1000ULL;
			agent_print_stats(a, o->json);
		}
	}
}

int main(int argc, char **argv)
{
	struct agent *a = &the_agent;
	struct opts o = { 0 };
	char why[512], at[sizeof(a->cfg.metrics)], ps[24];
	int fd, n;

	parse_args(argc, argv, &o, a);
	if (agent_cfg_read(a, &a->cfg, o.config, why, sizeof(why)))
		die("%s", why);
	if (esa_akey_load(a->cfg.key_path, &a->key, why, sizeof(why)))
		die("%s", why);
	if (o.check)
		return 0;
	a->start_ms = esa_amsg_now_ms();
	fd = open_socket(&a->cfg);
	memcpy(at, a->cfg.metrics, sizeof(at));
	if (at[0] && esa_httpd_open(&httpd, at, why, sizeof(why)))
		die("%s", why);
	n = agent_state_load(a, why, sizeof(why));
	if (n < 0)
		die("%s", why);
	if (agent_state_save(a))
		die("cannot write the state file %s", a->cfg.state_path);
	esa_daemon_signals();
	if (!o.quiet)
		agent_log("listening on %s, job ids %u-%u, PS %s, %d job%s from %s%s%s",
			  agent_fmt_sin(&a->cfg.listen, at), a->cfg.id_lo, a->cfg.id_hi,
			  agent_fmt_sin(&a->cfg.ps, ps), n, n == 1 ? "" : "s", a->cfg.state_path,
			  a->cfg.metrics[0] ? ", metrics on " : "", a->cfg.metrics);
	status(a, why, sizeof(why));
	esa_sd_notify("READY=1\nSTATUS=%s", why);
	serve(a, fd, &o);
	esa_sd_notify("STOPPING=1");
	agent_print_stats(a, o.json);
	esa_httpd_close(&httpd);
	close(fd);
	return 0;
}
