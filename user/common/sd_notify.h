/* SPDX-License-Identifier: GPL-2.0 */
/*
 * systemd's notification protocol (sd_notify(3)) for esa-ps and esa-agent:
 * one datagram of "KEY=VALUE" lines to the unix socket $NOTIFY_SOCKET, a
 * path or, after '@', an abstract name.  The protocol is stable and a few
 * lines long, so no libsystemd: a daemon run without systemd (no
 * NOTIFY_SOCKET) does nothing and needs nothing.  Header-only, like words.h.
 */
#ifndef ESA_SD_NOTIFY_H
#define ESA_SD_NOTIFY_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

/* Send the formatted state: 1 sent, 0 no NOTIFY_SOCKET, or -errno. */
static inline int esa_sd_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int esa_sd_notify(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[512];
	socklen_t salen;
	va_list ap;
	int fd, rc;

	if (!path || !*path)
		return 0;
	if ((path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return -EAFNOSUPPORT;
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = 0;		/* abstract */
	salen = offsetof(struct sockaddr_un, sun_path) + strlen(path);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	rc = rc < 0 ? -errno : 1;
	close(fd);
	return rc;
}

/* RELOADING=1 with the CLOCK_MONOTONIC time systemd 253's notify-reload
 * wants (older ones ignore it); READY=1 follows when the reload is done. */
static inline int esa_sd_reloading(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return esa_sd_notify("RELOADING=1\nMONOTONIC_USEC=%llu",
			     (unsigned long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

#endif /* ESA_SD_NOTIFY_H */
