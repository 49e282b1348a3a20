#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Per-stage CPU of a `perf record -a` profile (e2e.sh -p): each sample of
the benchmark's own processes (the ranks, esa-ps, softirq threads, idle's
softirq) is put in one stage by its symbol, the rest under "other
processes".  usage: e2e_stages.py PERF.data

Stages: the switch's XDP program (with devmap, egress, its spin lock),
veth and NAPI, IP/UDP/TCP receive and send, socket calls with their copies
and skb allocation, poll/wakeups/scheduling (a VM's timer-based sampling
also lands on the points where interrupts are re-enabled: context switch
ends, spin unlocks, bottom-half enables), libesa, torch/python/gloo, and
esa-ps as a whole.  A heuristic by name, for where the time goes, not an
exact account.
"""
import re, subprocess, sys, collections
if len(sys.argv) != 2:
    sys.exit("usage: e2e_stages.py PERF.data")
f = sys.argv[1]
out = subprocess.run(["perf", "report", "-i", f, "--no-children", "-g", "none", "--sort", "comm,dso,sym",
                      "--stdio", "--percent-limit", "0"], capture_output=True, text=True).stdout
ours = ("python3", "esa-ps", "ksoftirqd/0", "ksoftirqd/1", "swapper", "gloo", "pt_main_thread")
st = collections.Counter(); tot = collections.Counter()
rules = [
 ("AF_XDP socket (copy to UMEM, rings)", r"xsk_|__xsk|\bxp_"),
 ("switch XDP program + devmap/egress", r"bpf_prog_|dev_map|xdp_do|bpf_xdp|xdp_|bpf_spin"),
 ("veth, NAPI, GRO", r"veth_|napi|gro|eth_type_trans|net_rx_action|__netif_receive|netif_receive|process_backlog|skb_pp_cow|page_pool"),
 ("IP/UDP/TCP receive", r"ip_rcv|ip_list_rcv|ip_sublist|ip_route_input|udp_(queue|unicast|rcv|err)|__udp4_lib|udp4_|ip_local_deliver|fib_|tcp_v4_rcv|tcp_rcv|tcp_data|tcp_ack|tcp_queue|ip_forward|ip_route|__udp_enqueue|sock_def_readable|tcp_v4_do_rcv"),
 ("IP/UDP/TCP send", r"udp_sendmsg|udp_send_skb|ip_make_skb|__ip_append|ip_append|ip_finish|ip_output|__dev_queue_xmit|dev_hard_start|ip_send_skb|__ip_make_skb|ip_local_out|tcp_sendmsg|tcp_write_xmit|__tcp_transmit|tcp_push|ip_queue_xmit|neigh_|sch_direct|validate_xmit|skb_segment|tcp_gso"),
 ("socket syscalls, copies, skb alloc/free", r"sendmmsg|recvmmsg|sys_sendmsg|sys_recvmsg|___sys|__sys_|copy_msghdr|copy_iovec|_copy_to_iter|_copy_from_iter|copy_user|udp_recvmsg|skb_copy|check_object_size|import_iovec|copy_from_user|copy_to_user|__skb_datagram|kmem_cache|kfree|__alloc_skb|skb_release|consume_skb|sock_alloc_send|alloc_skb|skb_free|__kmalloc|page_frag|skb_defer|napi_consume|skb_attempt|__slab|slab_|tcp_recvmsg|memcpy|memmove|rep_movs"),
 ("poll, wakeups, scheduling", r"poll|schedule|finish_task_switch|local_bh_enable|raw_spin|irqrestore|try_to_wake|__wake_up|enqueue_task|dequeue|pick_next|update_curr|select_task|ttwu|switch_mm|__switch_to|futex|hrtimer|tick|sched_|psi_|ep_"),
 ("page faults (first touch of memory)", r"page_fault|do_anonymous_page|handle_mm_fault|clear_page|get_page_from_freelist|charge_memcg|memcg|folio|pte_|lock_vma|mas_walk|rmqueue|alloc_pages|lruvec|vma_"),
 ("syscall entry/exit", r"entry_SYSCALL|syscall_|do_syscall|__x64_sys|exit_to_user"),
]
for line in out.splitlines():
    m = re.match(r"\s+([\d.]+)%\s+(\S+)\s+(\S+)\s+\[[.k]\]\s+(\S+)", line)
    if not m: continue
    pct, comm, dso, sym = float(m[1]), m[2], m[3], m[4]
    tot[comm] += pct
    if not any(comm.startswith(o) for o in ours): 
        st["(other processes)"] += pct; continue
    if comm.startswith("esa-ps"):
        st["esa-ps (all)"] += pct; continue
    if "libesa" in dso:
        st["libesa user space"] += pct
        continue
    for name, rx in rules:
        if re.search(rx, sym):
            st[name] += pct; break
    else:
        st["torch/python/gloo user space" if "[.]" in line else "kernel, other"] += pct
T = sum(st.values())
O = T - st["(other processes)"]
print("of our CPU (ranks, esa-ps, softirq, idle excluded):")
for k, v in st.most_common():
    if k != "(other processes)": print("%6.1f%%  %s" % (100 * v / O, k))
for k, v in st.most_common(): print("%6.1f%%  %s" % (v, k))
print("total %.1f%%" % T)
print("by comm:", ", ".join("%s %.1f" % kv for kv in tot.most_common(8)))
