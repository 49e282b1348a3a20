/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The /metrics endpoint of esa-ps and esa-agent: a small HTTP/1.0
 * responder driven by the daemon's own poll loop, single-threaded and
 * never blocking it.  GET (or HEAD) /metrics gets the Prometheus text the
 * caller writes; anything else a 404 or 405; every response closes its
 * connection.  A few connections at a time, each given 2 s to send its
 * request and take the answer; more are closed at once and counted, as
 * are requests it cannot read.  Header-only, like words.h: esa-ps links no
 * object of user/common.
 */
#ifndef ESA_HTTPD_H
#define ESA_HTTPD_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "words.h"

#define ESA_HTTPD_CONNS		8
#define ESA_HTTPD_TIMEOUT_NS	2000000000ULL

struct esa_httpd_conn {
	int	fd;		/* -1: free */
	uint64_t deadline;	/* CLOCK_MONOTONIC ns */
	size_t	in;		/* request bytes read */
	char	req[2048];
	char	*out;		/* the response, once the request is read */
	size_t	outlen, outoff;
};

struct esa_httpd {
	int	lfd;		/* listening socket, -1: none */
	struct sockaddr_in addr;
	struct esa_httpd_conn c[ESA_HTTPD_CONNS];
	uint64_t served;	/* responses to GET /metrics */
	uint64_t errors;	/* connections closed without one: refused
				 * (too many), bad or slow requests, 404, 405 */
};

/* Listen on "IP:PORT"; 0, or -1 with a reason in err. */
static inline int esa_httpd_open(struct esa_httpd *h, const char *addr, char *err, size_t len)
{
	int one = 1;

	memset(h, 0, sizeof(*h));
	h->lfd = -1;
	for (int i = 0; i < ESA_HTTPD_CONNS; i++)
		h->c[i].fd = -1;
	if (esa_parse_sin(addr, ESA_ADDR_NEED_PORT | ESA_ADDR_ANY, 0, &h->addr))
		return snprintf(err, len, "metrics \"%s\" is not IP:PORT", addr), -1;
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->lfd < 0)
		return snprintf(err, len, "metrics: socket: %s", strerror(errno)), -1;
	setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(h->lfd, (struct sockaddr *)&h->addr, sizeof(h->addr)) || listen(h->lfd, 16)) {
		snprintf(err, len, "metrics: cannot listen on %s: %s", addr, strerror(errno));
		close(h->lfd);
		h->lfd = -1;
		return -1;
	}
	return 0;
}

static inline void esa_httpd_drop(struct esa_httpd_conn *c)
{
	close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* The poll entries: the listening socket, then each connection; their count. */
static inline int esa_httpd_pollfds(const struct esa_httpd *h, struct pollfd *pfd)
{
	int n = 0;

	if (h->lfd < 0)
		return 0;
	pfd[n++] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
	for (int i = 0; i < ESA_HTTPD_CONNS; i++)
		if (h->c[i].fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = h->c[i].fd,
						    .events = h->c[i].out ? POLLOUT : POLLIN };
	return n;
}

/*
 * The response to a whole request: status line, headers, and for
 * GET /metrics the body fn writes (0 or -errno); NULL if out of memory.
 */
static inline char *esa_httpd_answer(struct esa_httpd *h, const char *req, size_t *len,
				     int (*fn)(FILE *f, void *arg), void *arg)
{
	const char *status = "200 OK", *type = "text/plain; version=0.0.4; charset=utf-8";
	bool get = !strncmp(req, "GET ", 4), head = !strncmp(req, "HEAD ", 5);
	const char *path = req + (get ? 4 : 5);
	char *body = NULL, *out = NULL;
	size_t blen = 0, plen = strcspn(path, " ?\r\n");
	FILE *f;

	f = open_memstream(&body, &blen);
	if (!f)
		return NULL;
	if (!get && !head)
		status = "405 Method Not Allowed", fputs("GET /metrics\n", f);
	else if (plen != 8 || strncmp(path, "/metrics", 8))
		status = "404 Not Found", fputs("see /metrics\n", f);
	else if (fn(f, arg))
		status = "500 Internal Server Error";
	if (fclose(f))
		return NULL;
	if (status[0] == '2')
		h->served++;
	else
		h->errors++;
	f = open_memstream(&out, len);
	if (f) {
		fprintf(f, "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			"Connection: close\r\n\r\n", status, type, blen);
		if (!head)
			fwrite(body, 1, blen, f);
		if (fclose(f))
			out = NULL;
	}
	free(body);
	return out;
}

/* Read what came; answer once the request's headers are whole. */
static inline void esa_httpd_read(struct esa_httpd *h, struct esa_httpd_conn *c,
				  int (*fn)(FILE *f, void *arg), void *arg)
{
	ssize_t n = recv(c->fd, c->req + c->in, sizeof(c->req) - 1 - c->in, MSG_DONTWAIT);

	if (n <= 0) {
		if (!n || (errno != EAGAIN && errno != EINTR)) {
			h->errors++;
			esa_httpd_drop(c);
		}
		return;
	}
	c->in += n;
	c->req[c->in] = 0;
	if (!strstr(c->req, "\r\n\r\n") && !strstr(c->req, "\n\n")) {
		if (c->in == sizeof(c->req) - 1) {	/* headers too long */
			h->errors++;
			esa_httpd_drop(c);
		}
		return;
	}
	c->out = esa_httpd_answer(h, c->req, &c->outlen, fn, arg);
	if (!c->out)
		esa_httpd_drop(c);
}

/* Send what is left of the answer; close when it is all sent. */
static inline void esa_httpd_write(struct esa_httpd *h, struct esa_httpd_conn *c)
{
	ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff,
			 MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		h->errors++;
		esa_httpd_drop(c);
		return;
	}
	c->outoff += n;
	if (c->outoff == c->outlen)
		esa_httpd_drop(c);
}

static inline void esa_httpd_accept(struct esa_httpd *h, uint64_t now)
{
	int fd;

	while ((fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct esa_httpd_conn *c = NULL;

		for (int i = 0; i < ESA_HTTPD_CONNS && !c; i++)
			if (h->c[i].fd < 0)
				c = &h->c[i];
		if (!c) {
			h->errors++;		/* busy: closed at once */
			close(fd);
			continue;
		}
		c->fd = fd;
		c->deadline = now + ESA_HTTPD_TIMEOUT_NS;
	}
}

/*
 * One turn of the daemon's loop: pfd and n as esa_httpd_pollfds() filled
 * them and poll() returned them (n = 0: nothing polled, only timeouts);
 * now in CLOCK_MONOTONIC ns.
 */
static inline void esa_httpd_step(struct esa_httpd *h, const struct pollfd *pfd, int n,
				  uint64_t now, int (*fn)(FILE *f, void *arg), void *arg)
{
	for (int k = 1; k < n; k++) {
		for (int i = 0; i < ESA_HTTPD_CONNS; i++) {
			struct esa_httpd_conn *c = &h->c[i];

			if (c->fd != pfd[k].fd || !pfd[k].revents)
				continue;
			if (c->out)
				esa_httpd_write(h, c);
			else
				esa_httpd_read(h, c, fn, arg);
		}
	}
	for (int i = 0; i < ESA_HTTPD_CONNS; i++) {
		if (h->c[i].fd >= 0 && now > h->c[i].deadline) {
			h->errors++;
			esa_httpd_drop(&h->c[i]);
		}
	}
	if (n && (pfd[0].revents & POLLIN))
		esa_httpd_accept(h, now);
}

static inline void esa_httpd_close(struct esa_httpd *h)
{
	for (int i = 0; i < ESA_HTTPD_CONNS; i++)
		if (h->c[i].fd >= 0)
			esa_httpd_drop(&h->c[i]);
	if (h->lfd >= 0)
		close(h->lfd);
	h->lfd = -1;
}

#endif /* ESA_HTTPD_H */
