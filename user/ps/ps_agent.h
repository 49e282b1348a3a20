/* SPDX-License-Identifier: GPL-2.0 */
/*
 * esa-ps's jobs from esa-agent (ps_agent.c, docs/agent.md): the PS polls
 * the agent for the jobs of its addresses and adds and deletes them.
 */
#ifndef ESA_PS_AGENT_H
#define ESA_PS_AGENT_H

#include <stdint.h>
#include <netinet/in.h>
#include "agentmsg.h"

struct ps;
struct ps_agent;

/* The agent at agent, with the key of key_file, for the PS addresses ps[]. */
struct ps_agent *ps_agent_new(const struct sockaddr_in *agent, const char *key_file,
			      const struct sockaddr_in *ps, int nps, char *why, size_t len);
void ps_agent_free(struct ps_agent *pa);
/* Its socket, for poll(): ps_agent_step() reads what came. */
int ps_agent_fd(const struct ps_agent *pa);
/* Replies read (jobs added, ended ones deleted), and a poll when due. */
void ps_agent_step(struct ps_agent *pa, struct ps *ps, uint64_t now_ns);

#endif /* ESA_PS_AGENT_H */
