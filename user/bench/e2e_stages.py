#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Per-stage CPU of a `perf record -a` profile (e2e.sh -p).

usage: e2e_stages.py PERF.data [RANK_PIDS PS_PID]

Each sample of the benchmark's own processes is put in one stage by its
symbol: ours are the ranks and esa-ps (their pids: RANK_PIDS comma
separated, PS_PID 0 for none; by default read from PERF.pids, which
e2e_rank.py writes; without either, by name), the softirq threads and the
idle task (whose softirq work is the switch's and the veths').  Samples of
other processes -- the machine is shared, and may run processes of the same
names -- are "other processes".  Softirq work that interrupted another
process is counted there too: a lower bound of ours.

Stages: the switch's XDP program (with devmap, egress, its spin lock),
AF_XDP's socket, veth and NAPI, IP/UDP/TCP receive and send, socket calls
with their copies and skb allocation, page faults, poll/wakeups/scheduling
(a VM's timer-based sampling also lands on the points where interrupts are
re-enabled: context switch ends, spin unlocks, bottom-half enables),
libesa, torch/python/gloo, and esa-ps as a whole.  A heuristic by name,
for where the time goes, not an exact account.
"""
import collections
import os
import re
import subprocess
import sys

RULES = [
    ("AF_XDP socket (copy to UMEM, rings)", r"xsk_|__xsk|\bxp_"),
    ("switch XDP program + devmap/egress", r"bpf_prog_|dev_map|xdp_do|bpf_xdp|xdp_|bpf_spin"),
    ("veth, NAPI, GRO", r"veth_|napi|gro|eth_type_trans|net_rx_action|__netif_receive|"
     r"netif_receive|process_backlog|skb_pp_cow|page_pool"),
    ("IP/UDP/TCP receive", r"ip_rcv|ip_list_rcv|ip_sublist|ip_route_input|"
     r"udp_(queue|unicast|rcv|err)|__udp4_lib|udp4_|ip_local_deliver|fib_|tcp_v4_rcv|"
     r"tcp_rcv|tcp_data|tcp_ack|tcp_queue|ip_forward|ip_route|__udp_enqueue|"
     r"sock_def_readable|tcp_v4_do_rcv"),
    ("IP/UDP/TCP send", r"udp_sendmsg|udp_send_skb|ip_make_skb|__ip_append|ip_append|"
     r"ip_finish|ip_output|__dev_queue_xmit|dev_hard_start|ip_send_skb|__ip_make_skb|"
     r"ip_local_out|tcp_sendmsg|tcp_write_xmit|__tcp_transmit|tcp_push|ip_queue_xmit|"
     r"neigh_|sch_direct|validate_xmit|skb_segment|tcp_gso"),
    ("socket syscalls, copies, skb alloc/free", r"sendmmsg|recvmmsg|sys_sendmsg|sys_recvmsg|"
     r"___sys|__sys_|copy_msghdr|copy_iovec|_copy_to_iter|_copy_from_iter|copy_user|"
     r"udp_recvmsg|skb_copy|check_object_size|import_iovec|copy_from_user|copy_to_user|"
     r"__skb_datagram|kmem_cache|kfree|__alloc_skb|skb_release|consume_skb|"
     r"sock_alloc_send|alloc_skb|skb_free|__kmalloc|page_frag|skb_defer|napi_consume|"
     r"skb_attempt|__slab|slab_|tcp_recvmsg|memcpy|memmove|rep_movs"),
    ("poll, wakeups, scheduling", r"poll|schedule|finish_task_switch|local_bh_enable|"
     r"raw_spin|irqrestore|try_to_wake|__wake_up|enqueue_task|dequeue|pick_next|"
     r"update_curr|select_task|ttwu|switch_mm|__switch_to|futex|hrtimer|tick|sched_|"
     r"psi_|ep_"),
    ("page faults (first touch of memory)", r"page_fault|do_anonymous_page|handle_mm_fault|"
     r"clear_page|get_page_from_freelist|charge_memcg|memcg|folio|pte_|lock_vma|mas_walk|"
     r"rmqueue|alloc_pages|lruvec|vma_"),
    ("syscall entry/exit", r"entry_SYSCALL|syscall_|do_syscall|__x64_sys|exit_to_user"),
]
RULES = [(name, re.compile(rx)) for name, rx in RULES]
KERNEL_OURS = ("ksoftirqd/", "swapper")
OTHER = "(other processes)"


def samples(path):
    """(comm, pid, sym, dso) of each sample's leaf frame."""
    p = subprocess.run(["perf", "script", "-i", path, "-F", "comm,pid,tid,ip,sym,dso"],
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit("e2e_stages: perf script %s: %s" % (path, p.stderr.strip()[-200:]))
    head = None
    for line in p.stdout.splitlines():
        if not line.strip():
            head = None
        elif not line[0].isspace():
            m = re.match(r"(.*\S)\s+(\d+)/(\d+)\s*$", line)
            head = (m[1], int(m[2])) if m else None
        elif head:
            m = re.match(r"\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$", line)
            if m:
                yield head[0], head[1], m[1], m[2]
            head = None     # the leaf frame only


def stage(comm, pid, sym, dso, pids, ps_pid):
    if pids is not None and pid not in pids and not comm.startswith(KERNEL_OURS):
        return OTHER
    if pids is None and not comm.startswith(("python3", "esa-ps", "gloo", "pt_main")
                                            + KERNEL_OURS):
        return OTHER
    if pid == ps_pid or (pids is None and comm.startswith("esa-ps")):
        return "esa-ps (all)"
    if "libesa" in dso:
        return "libesa user space"
    if "kernel" not in dso:
        return "torch/python/gloo user space"
    for name, rx in RULES:
        if rx.search(sym):
            return name
    return "kernel, other"


def main():
    if len(sys.argv) not in (2, 4):
        sys.exit("usage: e2e_stages.py PERF.data [RANK_PIDS PS_PID]")
    path = sys.argv[1]
    pidfile = path[:-len(".data")] + ".pids" if path.endswith(".data") else ""
    if len(sys.argv) == 4:
        words = sys.argv[2:]
    elif pidfile and os.path.exists(pidfile):
        words = open(pidfile).read().split()
    else:
        words = []
    if words and (len(words) != 2 or not re.fullmatch(r"\d+(,\d+)*", words[0]) or
                  not words[1].isdigit()):
        sys.exit("e2e_stages: pids: RANK_PIDS (comma separated) and PS_PID (0: none), not %r"
                 % " ".join(words))
    pids = {int(x) for x in words[0].split(",")} if words else None
    ps_pid = int(words[1]) if words and int(words[1]) else None
    if pids is not None and ps_pid:
        pids.add(ps_pid)
    st = collections.Counter()
    for comm, pid, sym, dso in samples(path):
        st[stage(comm, pid, sym, dso, pids, ps_pid)] += 1
    total = sum(st.values())
    ours = total - st[OTHER]
    if not ours:
        sys.exit("e2e_stages: no sample of ours in %s" % path)
    print("of our CPU (ranks, esa-ps, softirq; %d of %d samples, the rest other processes):"
          % (ours, total))
    for k, v in st.most_common():
        if k != OTHER:
            print("%6.1f%%  %s" % (100.0 * v / ours, k))
    print("total %d samples, %.1f%% ours" % (total, 100.0 * ours / total))


if __name__ == "__main__":
    main()
