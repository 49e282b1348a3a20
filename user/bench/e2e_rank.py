#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""One rank of the end-to-end allreduce benchmark (user/bench/e2e.sh).

Every rank allreduces float32 tensors of each size, either with gloo
(torch.distributed) or through the ESA switch (esa.Worker, libesa through
ctypes), and checks every sum.  Per size: an untimed warm-up allreduce on every
buffer (a training loop's buckets have been allreduced before; gloo pays
2-3x on a buffer's first), then REPS allreduces back to back between two
barriers, each of its own input into its own output, timed; then every
output is compared with its expected sum.  Inputs are small integers (rank r's element i is
base(i) + (r + 1) step(i), both varying with the repetition), so both
gloo's and the switch's sums are exact and the check is equality: a
missing or doubled rank, a chunk in the wrong place or another
repetition's sum shows in almost every element.  Generation and checking
are outside the timed region.

Rank 0 measures the machine around the timed region (/proc/stat, the PS's,
every rank's and every other process's CPU time, the switch ports' packet
counters read through a process in the switch's namespace, with --sw-progs
the switch programs' run time) and prints one JSON line per size.
A transport or setting the build does not have (libesa refuses a key) is
reported as {"available": false, "why": ...} by rank 0, never timed.
"""
import argparse
import datetime
import json
import os
import resource
import signal
import subprocess
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def pattern(n, rank, world, rep):
    """Rank `rank`'s input of repetition `rep`, and the expected sum."""
    i = torch.arange(n, dtype=torch.int64)
    base = (i * 7 + rep * 3) % 61 - 30
    step = (i * 13 + rep * 5) % 5 - 2
    x = (base + (rank + 1) * step).to(torch.float32)
    want = (world * base + step * (world * (world + 1) // 2)).to(torch.float32)
    return x, want


PF_KTHREAD = 0x00200000


def exec_s(pid):
    """A process's CPU time in seconds, to the nanosecond (its threads'
    sum_exec_runtime, /proc/PID/schedstat), or None if it is gone."""
    try:
        with open("/proc/%s/schedstat" % pid) as f:
            return int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def others_cpu(ours):
    """{pid: CPU seconds} of every process but ours and the kernel's
    threads.  The kernel's threads (ksoftirqd, kworkers) do our packets'
    work on an otherwise idle machine; they count as ours."""
    t = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in ours:
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
        except OSError:
            continue            # gone meanwhile
        if int(s[s.rindex(")") + 2:].split()[6]) & PF_KTHREAD:
            continue
        e = exec_s(d)
        if e is not None:
            t[int(d)] = e
    return t


def switch_prog_s(ids):
    """Seconds the switch's programs ran (kernel.bpf_stats_enabled: e2e.sh
    -T), or 0.  By id: `ip netns exec` gives us a /sys without bpffs."""
    ns = 0
    for i in ids.split(",") if ids else ():
        r = subprocess.run(["bpftool", "-j", "prog", "show", "id", i],
                           capture_output=True, text=True)
        if r.returncode == 0:
            ns += json.loads(r.stdout).get("run_time_ns", 0)
    return ns / 1e9


def machine(a, ours, start):
    """The machine's busy and idle time, other processes', the PS's, the
    switch ports' packets and its programs' run time.  /proc/stat is read
    last at the start and first at the end: rank 0's own reading of the
    rest falls outside the window."""
    m = {}
    if not start:
        m.update(proc_stat())
    m["others"] = others_cpu(ours)
    m["sw_prog"] = switch_prog_s(a.sw_progs)
    m["ps"] = (exec_s(a.ps_pid) or 0.0) if a.ps_pid else 0.0
    m["sw_rx"] = m["sw_tx"] = 0
    if a.sw_pid:
        # /proc/PID/net/dev is the namespace of PID: the switch's ports
        with open("/proc/%d/net/dev" % a.sw_pid) as f:
            for line in f.readlines()[2:]:
                name, rest = line.split(":", 1)
                c = rest.split()
                if name.strip().startswith("p"):
                    m["sw_rx"] += int(c[1])
                    m["sw_tx"] += int(c[9])
    if start:
        m.update(proc_stat())
    return m


def proc_stat():
    """The wall clock and the machine's idle time (s).  Idle is measured
    (NO_HZ keeps it to the microsecond, /proc/stat rounds it to 10 ms);
    busy is the rest.  Not /proc/stat's user, system and softirq: those
    are tick samples, and without CONFIG_IRQ_TIME_ACCOUNTING a tick in
    softirq is in the stime of the task it interrupted too."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    hz = os.sysconf("SC_CLK_TCK")
    return {"wall": time.perf_counter(), "idle": (v[3] + v[4]) / hz, "steal": v[7] / hz,
            "softirq": v[6] / hz}


def delta(m0, m1):
    """m1 - m0, and busy: the CPUs' time but idle.  Other processes: their
    time in the window (one that started in it, all its time; one that
    ended in it is missed)."""
    d = {k: m1[k] - m0[k] for k in m0 if k != "others"}
    d["busy"] = d["wall"] * (os.cpu_count() or 1) - d["idle"]
    d["others"] = sum(t - m0["others"].get(p, 0.0) for p, t in m1["others"].items())
    return d


def perf_start(a, mib):
    """Rank 0 with --perf: `perf record -a`, started disabled; perf_on()
    enables it at the timed region's start (not perf's own start-up, nor
    the wait for the other ranks)."""
    if a.rank or not a.perf:
        return None
    out = os.path.join(a.perf, "perf-%d-%s-%d-r%d.data" % (a.world, a.label, mib, a.round))
    ctl_r, ctl_w = os.pipe()
    ack_r, ack_w = os.pipe()
    p = subprocess.Popen(["perf", "record", "-a", "-g", "-F", "1999", "-D", "-1",
                          "--control", "fd:%d,%d" % (ctl_r, ack_w), "-o", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         pass_fds=(ctl_r, ack_w))
    os.close(ctl_r)
    os.close(ack_w)
    p.ctl, p.ack, p.out = ctl_w, ack_r, out
    time.sleep(1)       # perf has opened its events before the region
    return p


def perf_ctl(p, cmd):
    """Tell perf to enable or disable its events, and wait for its ack."""
    if p:
        os.write(p.ctl, (cmd + "\n").encode())
        os.read(p.ack, 16)


def perf_stop(p):
    if p:
        p.send_signal(signal.SIGINT)
        p.wait()
        os.close(p.ctl)
        os.close(p.ack)


def self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Gloo:
    name = "gloo"
    io = "tcp"

    def __init__(self, a):
        pass

    def reduce(self, x, y):
        y.copy_(x)
        return self

    def run(self, x, y):
        dist.all_reduce(y)

    def stats(self):
        return {}


class Esa:
    name = "esa"

    def __init__(self, a):
        import esa
        import esa.ddp
        kv = dict(switch=a.switch, job=a.job, rank=a.rank, workers=a.world,
                  local=a.local, ps=a.ps, give_up_ms=10000)
        for s in a.esa:
            if "=" not in s:
                raise ValueError("--esa %r: KEY=VALUE expected" % s)
            k, v = s.split("=", 1)
            kv[k] = v
        self.w = esa.Worker(**kv)
        self.io = self.w.io
        self.w.set_run(esa.ddp.agree_run())
        # A probe of four chunks: a vector length or transport the build
        # takes in its settings but cannot carry fails here (give_up_ms),
        # and the row says so instead of timing out every size.
        v = int(kv.get("values", 256))
        probe = torch.full((4 * v,), float(a.rank + 1))
        try:
            self.w.allreduce(probe)
        except esa.EsaError as e:
            raise RuntimeError("a probe allreduce of 4 chunks of %d values failed: %s"
                               % (v, e)) from None
        want = float(a.world * (a.world + 1) // 2)
        if not bool((probe == want).all()):
            raise RuntimeError("a probe allreduce of 4 chunks of %d values: wrong sum" % v)

    def reduce(self, x, y):
        # Touch the output before the timed region, as gloo's copy does:
        # else the first write of every page faults inside it (a training
        # loop reuses its buckets, which are long faulted in).
        y.zero_()
        return self

    def run(self, x, y):
        self.w.allreduce(x, out=y)

    def stats(self):
        return self.w.stats()


def open_comm(a):
    """The transport, or None and why not (agreed by every rank)."""
    why = ""
    comm = None
    try:
        comm = (Gloo if a.comm == "gloo" else Esa)(a)
    except Exception as e:           # noqa: BLE001 -- reported, not hidden
        why = "rank %d: %s" % (a.rank, e)
    whys = [None] * a.world
    dist.all_gather_object(whys, why)
    whys = [w for w in whys if w]
    return (None, whys[0]) if whys else (comm, "")


def one_size(a, comm, mib, reps):
    n = mib * (1 << 20) // 4
    data = [pattern(n, a.rank, a.world, k) for k in range(reps + 1)]
    if a.inject and a.rank == a.world - 1:
        data[-1][0][n // 3] += 1        # a wrong input the check must catch
    out = [torch.empty(n) for _ in range(reps + 1)]
    # Making the inputs takes seconds with 8 ranks on two cores, and unequal
    # ones: a rank that starts the warm-up before the last has its inputs
    # would wait for it, past libesa's give-up (10 s) at 16 MB.
    dist.barrier()
    # The warm-up: every buffer allreduced once before it is timed, as a
    # training loop's buckets are after its first step.  gloo's first
    # allreduce on a buffer costs it 2-3x its later ones (4 ranks, 17.8 MB
    # on loopback: 196 ms, then 34-62), a cost no step after the first pays.
    for k in range(reps + 1):
        comm.reduce(data[k][0], out[k]).run(data[k][0], out[k])
    for k in range(1, reps + 1):
        comm.reduce(data[k][0], out[k])
    prof = perf_start(a, mib)
    pids = [None] * a.world
    dist.all_gather_object(pids, os.getpid())
    ours = set(pids) | {a.ps_pid}
    dist.barrier()
    m0 = machine(a, ours, True) if a.rank == 0 else None
    perf_ctl(prof, "enable")
    s0 = comm.stats()
    c0 = self_cpu()
    t0 = time.perf_counter()
    for k in range(1, reps + 1):
        comm.run(data[k][0], out[k])
    t1 = time.perf_counter()
    c1 = self_cpu()
    dist.barrier()
    perf_ctl(prof, "disable")
    m1 = machine(a, ours, False) if a.rank == 0 else None
    s1 = comm.stats()
    perf_stop(prof)
    bad = []
    for k in range(reps + 1):
        if not torch.equal(out[k], data[k][1]):
            d = (out[k] != data[k][1]).nonzero()
            i = int(d[0])
            bad.append("rep %d: %d of %d elements wrong, first [%d] %r, want %r"
                       % (k, d.numel(), n, i, out[k][i].item(), data[k][1][i].item()))
    mine = {"rank": a.rank, "seconds": t1 - t0, "cpu": c1 - c0, "bad": bad,
            "pid": os.getpid()}
    every = [None] * a.world
    dist.all_gather_object(every, mine)
    if a.rank:
        return True
    if prof:
        # whose samples are ours: the ranks and esa-ps (the machine may run
        # other processes of the same names)
        with open(prof.out[:-len(".data")] + ".pids", "w") as f:
            f.write("%s %d\n" % (",".join(str(e["pid"]) for e in every), a.ps_pid))
    ok = not any(e["bad"] for e in every)
    rec = {"label": a.label, "comm": comm.name, "ranks": a.world, "mib": mib,
           "round": a.round,
           "reps": reps, "available": True, "ok": ok, "io": comm.io,
           "seconds": max(e["seconds"] for e in every),
           "rank_seconds": [e["seconds"] for e in every],
           "cpu_ranks": sum(e["cpu"] for e in every),
           "machine": delta(m0, m1),
           "errors": ["rank %d %s" % (e["rank"], b) for e in every for b in e["bad"]],
           "stats": {k: s1[k] - s0[k] for k in s1 if k not in ("rcvbuf", "udp_gro")},
           "udp_gro": s1.get("udp_gro", 0)}
    print(json.dumps(rec), flush=True)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--master", required=True, help="rank 0's ADDR:PORT for gloo")
    ap.add_argument("--comm", choices=("gloo", "esa"), required=True)
    ap.add_argument("--label", required=True, help="the configuration's name")
    ap.add_argument("--sizes", default="4,16,64", help="MiB per tensor, comma separated")
    ap.add_argument("--reps", default="5,3,2", help="timed allreduces per size")
    ap.add_argument("--switch")
    ap.add_argument("--job", type=int, default=1)
    ap.add_argument("--local")
    ap.add_argument("--ps")
    ap.add_argument("--esa", action="append", default=[], metavar="KEY=VALUE",
                    help="more libesa settings (values, window, io, ...)")
    ap.add_argument("--perf", metavar="DIR",
                    help="rank 0: perf record -a -g of each timed region into DIR")
    ap.add_argument("--inject", action="store_true",
                    help="the last rank adds 1 to one element of its last input "
                         "(a test of the check: that sum is then wrong)")
    ap.add_argument("--round", type=int, default=1, help="e2e.sh -R: which round")
    ap.add_argument("--ps-pid", type=int, default=0)
    ap.add_argument("--sw-pid", type=int, default=0,
                    help="a process in the switch's namespace (its ports' counters)")
    ap.add_argument("--sw-progs", help="the switch's program ids, comma separated: "
                    "their run time (kernel.bpf_stats_enabled)")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    reps = [int(s) for s in a.reps.split(",")]
    if len(reps) != len(sizes) or min(sizes + reps) < 1:
        ap.error("--sizes and --reps: as many positive numbers")

    torch.set_num_threads(1)
    addr, port = a.master.rsplit(":", 1)
    dist.init_process_group("gloo", init_method="tcp://%s:%s" % (addr, port),
                            rank=a.rank, world_size=a.world,
                            timeout=datetime.timedelta(seconds=600))
    comm, why = open_comm(a)
    if comm is None:
        if a.rank == 0:
            for mib in sizes:
                print(json.dumps({"label": a.label, "comm": a.comm, "ranks": a.world,
                                  "mib": mib, "round": a.round, "available": False,
                                  "why": why}), flush=True)
        dist.destroy_process_group()
        return 0
    ok = all([one_size(a, comm, mib, r) for mib, r in zip(sizes, reps)])
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
