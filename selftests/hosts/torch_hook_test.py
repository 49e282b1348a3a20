#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""esa.ddp's hook on its own, two ranks on loopback (suite 60-torch).

A summing switch in this process (UDP, the protocol's DATA in, RESULT out
from its own address; a silent PS socket beside it) and two rank processes
that call esa.ddp.esa_hook on buckets of their own, with gloo on loopback
for the fallback and for the reference:

  - a finite bucket: through the switch, the average within libesa's bound
    of gloo's;
  - a bucket with an infinity in one element on rank 0, and one with a NaN:
    the hook falls back to gloo, and gets exactly what gloo gets from the
    ranks' own gradients: inf (NaN) in that element only, every other
    element gloo's average.  (Before: the fallback summed a bucket the
    switch had already summed, world size times too large, and the whole
    2048-value block of the infinity was NaN.)
  - a float16 and a bfloat16 bucket: through the switch (converted on the
    host), every element within esa.ddp.error_bound() of the exact average;
  - overlap: three buckets handed to the hook back to back, on a job whose
    results the switch holds for 200 ms: the hook returns at once and all
    three allreduces are in flight together (the state's in_flight_max),
    each sum right.  (Before: the hook returned only when the switch's sum
    was in, one bucket at a time.)

Prints TAP.  Needs Debian's python3-torch, libesa.so built (make).
"""
import argparse
import datetime
import heapq
import os
import socket
import subprocess
import sys
import threading
import time

NV = 256
WORLD = 2
SLOW_JOB, SLOW_S = 4, 0.2     # the switch holds this job's results 200 ms
HERE = os.path.dirname(os.path.abspath(__file__))


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "pylib"))
import esa_wire  # noqa: E402  (the wire format, from the UAPI header)
HDR, VERSION = esa_wire.HDR, esa_wire.VERSION
DATA, RESULT = esa_wire.TYPES["data"], esa_wire.TYPES["result"]
RESEND, OVERFLOW = esa_wire.FLAGS["resend"], esa_wire.FLAGS["overflow"]


class Switch(threading.Thread):
    """Sums every chunk over WORLD ranks in 64 bits, sends the sum to each."""

    def __init__(self, port):
        super().__init__(daemon=True)
        import numpy
        self.np = numpy
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", port))
        self.sock.settimeout(0.2)
        self.chunks = {}
        self.due = []           # (when, n, result, to): results to send
        self.n = 0
        self.stop = False

    def result(self, job, seq, flags, vals):
        return HDR.pack(VERSION, RESULT, flags, 0, job, 0xffff, (1 << WORLD) - 1, seq, NV,
                        0, 0) + vals

    def send_due(self):
        now = time.monotonic()
        while self.due and self.due[0][0] <= now:
            _, _, res, to = heapq.heappop(self.due)
            self.sock.sendto(res, to)

    def run(self):
        np = self.np
        while not self.stop:
            self.send_due()
            wait = 0.2 if not self.due else max(0.0, self.due[0][0] - time.monotonic())
            self.sock.settimeout(min(0.2, wait) or 0.001)
            try:
                buf, src = self.sock.recvfrom(2048)
            except socket.timeout:
                continue
            if len(buf) != HDR.size + 4 * NV:
                continue
            (ver, typ, flags, prio, job, rank, bitmap, seq, count, reason,
             resv) = HDR.unpack_from(buf)
            if typ != DATA or rank >= WORLD:
                continue
            c = self.chunks.setdefault((job, seq), {"ranks": {}, "res": None})
            if c["res"] is not None:
                if flags & RESEND and c["sent"] <= time.monotonic():
                    self.sock.sendto(c["res"], src)
                continue
            c["ranks"][rank] = (src, np.frombuffer(buf, "<i4", NV, HDR.size))
            if len(c["ranks"]) < WORLD:
                continue
            s = sum(v.astype(np.int64) for _, v in c["ranks"].values())
            ovf = bool((s > 2**31 - 1).any() or (s < -2**31).any())
            c["res"] = self.result(job, seq, OVERFLOW if ovf else 0,
                                   s.astype("<i4").tobytes())
            c["sent"] = time.monotonic() + (SLOW_S if job == SLOW_JOB else 0)
            for to, _ in c["ranks"].values():
                self.n += 1
                heapq.heappush(self.due, (c["sent"], self.n, c["res"], to))


class Bucket:
    """What esa_hook uses of DDP's GradBucket.  Every bucket here has index
    0: the hook keeps a sum buffer per index, and buckets in flight together
    with one index (overlap()) must each get their own."""

    def __init__(self, t, index=0):
        self.t = t
        self.i = index

    def buffer(self):
        return self.t

    def index(self):
        return self.i


def fup(a, esa, torch, dist):
    """DDP with find_unused_parameters=True (it allreduces the map of used
    parameters on its group at the end of backward, from the autograd
    thread) and a NaN in one bucket of rank 0 (the hook falls back to an
    allreduce from its communication thread).  The two are forced into
    opposite orders on the two ranks: rank 0's hook holds backward until its
    fallback is issued; rank 1's fallback waits until its used-map allreduce
    is issued (an autograd callback queued before DDP's own).  On DDP's
    group the two collectives then pair with each other; on the hook's own
    group (register()) they cannot."""
    import esa.ddp
    import torch.nn as nn
    class Net(nn.Sequential):
        def __init__(self):
            super().__init__(nn.Linear(64, 64), nn.Linear(64, 64))
            self.unused = nn.Linear(8, 8)   # a parameter never in forward

        def forward(self, x):
            return self[1](self[0](x))

    torch.manual_seed(11)
    net = Net()
    ref_net = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
    ref_net.load_state_dict({k: v for k, v in net.state_dict().items()
                             if not k.startswith("unused")})
    model = torch.nn.parallel.DistributedDataParallel(net, find_unused_parameters=True,
                                                      bucket_cap_mb=0.01)
    wf = esa.Worker(switch="127.0.0.1:%d" % a.switch, ps="127.0.0.1:%d" % (a.switch + 1),
                    local="127.0.0.1:%d" % (a.switch + 6 + a.rank), job=5, rank=a.rank,
                    workers=WORLD, give_up_ms=20000)
    fallback_issued, used_map_issued = threading.Event(), threading.Event()
    real_all_reduce = dist.all_reduce
    nan_seen, queued = [], []

    def all_reduce(*args, **kw):            # the hook's fallback, from its thread
        if threading.current_thread().name == "esa.ddp" and a.rank == 1:
            used_map_issued.wait(30)
        work = real_all_reduce(*args, **kw)
        if threading.current_thread().name == "esa.ddp":
            fallback_issued.set()
        return work
    esa.ddp.dist.all_reduce = all_reduce

    def hook(state, bucket):
        if a.rank == 1 and not queued:       # runs before DDP's finalize callback
            queued.append(1)
            torch.autograd.Variable._execution_engine.queue_callback(used_map_issued.set)
        fut = esa.ddp.esa_hook(state, bucket)
        if a.rank == 0 and (nan_seen or bucket.buffer().isnan().any()):
            nan_seen.append(1)
            fallback_issued.wait(30)        # DDP's used-map allreduce after our fallback
        return fut

    state = esa.ddp.register(model, wf, hook=hook)
    x = torch.randn(16, 64) + a.rank
    w0 = net[0].weight
    if a.rank == 0:
        w0.register_hook(lambda g: g.index_put((torch.tensor([3]), torch.tensor([5])),
                                               torch.tensor(float("nan"))))
    err = None
    try:
        model(x).pow(2).sum().backward()
    except Exception as e:                  # noqa: BLE001 -- reported below
        err = e
    esa.ddp.dist.all_reduce = real_all_reduce
    # The reference: the same gradients without DDP, summed by gloo now.
    ref_net(x).pow(2).sum().backward()
    good = err is None
    for p, q in zip(list(net.parameters())[:4], ref_net.parameters()):
        g = q.grad.clone()
        if a.rank == 0 and q is ref_net[0].weight:
            g[3, 5] = float("nan")
        dist.all_reduce(g)
        g /= WORLD
        got = p.grad
        if got is None or not torch.allclose(got, g, rtol=1e-3, atol=1e-3, equal_nan=True):
            good = False
    print("%s fup fallback %d, switch %d, %s" % (
        "ok" if good and state.buckets_fallback >= 1 else "bad", state.buckets_fallback,
        state.buckets_switch, "error %r" % err if err else "every gradient gloo's average"))
    state.close()
    wf.close()


def world_check(a, esa, torch):
    """register() with a worker whose job has 3 workers, in a world of 2."""
    import esa.ddp
    w3 = esa.Worker(switch="127.0.0.1:%d" % a.switch, ps="127.0.0.1:%d" % (a.switch + 1),
                    local="127.0.0.1:%d" % (a.switch + 8 + a.rank), job=6, rank=a.rank,
                    workers=3)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 4))
    try:
        esa.ddp.register(model, w3)
        print("bad world register() took a job of 3 workers in a world of 2")
    except ValueError as e:
        print("%s world %s" % ("ok" if "3 workers" in str(e) else "bad", e))
    w3.close()


def rank_main(a):
    import math
    import torch
    import torch.distributed as dist
    sys.path.insert(0, os.path.join(HERE, "..", "..", "user", "python"))
    import esa
    import esa.ddp

    torch.manual_seed(7 + a.rank)
    # a bound on any collective: mismatched ones (fup) fail rather than hang
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.gloo,
                            rank=a.rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=60))
    w = esa.Worker(switch="127.0.0.1:%d" % a.switch, ps="127.0.0.1:%d" % (a.switch + 1),
                   local="127.0.0.1:%d" % (a.switch + 2 + a.rank), job=3, rank=a.rank,
                   workers=WORLD, give_up_ms=20000)
    w.set_run(esa.ddp.agree_run())
    state = esa.ddp.EsaHookState(w)
    out = []

    def case(name, poison):
        x = torch.randn(5000) * 1e-2
        if poison is not None and a.rank == 0:
            x[100] = poison
        ref = x.clone()
        dist.all_reduce(ref)		# what plain DDP would apply
        ref /= WORLD
        each = [torch.empty_like(x) for _ in range(WORLD)]
        dist.all_gather(each, x)
        exact = torch.stack(each).double().sum(0)	# exact for 2 floats
        m = max(float(e.abs().max()) for e in each)
        got = esa.ddp.esa_hook(state, Bucket(x)).wait()
        out.append((name, poison, got, ref if poison is not None else exact / WORLD, m))

    def exact_avg(x):
        each = [torch.empty(x.numel()) for _ in range(WORLD)]
        dist.all_gather(each, x.float())        # float16/bfloat16 -> float32: exact
        m = max(float(e.abs().max()) for e in each)
        return torch.stack(each).double().sum(0), m

    def within(name, dtype, got, exact, m):
        tol = torch.tensor([esa.ddp.error_bound(dtype, m, float(v), WORLD)
                            for v in exact.tolist()], dtype=torch.float64)
        err = (got.double() - exact / WORLD).abs()
        return bool((err <= tol).all()), (err / tol).max().item()

    def half(name, dtype):
        x = (torch.randn(5000) * 1e-2).to(dtype)
        exact, m = exact_avg(x)
        got = esa.ddp.esa_hook(state, Bucket(x)).wait()
        good, worst = within(name, dtype, got, exact, m)
        print("%s %s dtype %s, worst %.3f of the bound" % (
            "ok" if good and got.dtype == dtype and got.data_ptr() == x.data_ptr() else "bad",
            name, got.dtype, worst))

    def overlap():
        w2 = esa.Worker(switch="127.0.0.1:%d" % a.switch, ps="127.0.0.1:%d" % (a.switch + 1),
                        local="127.0.0.1:%d" % (a.switch + 4 + a.rank), job=SLOW_JOB,
                        rank=a.rank, workers=WORLD, give_up_ms=20000, timeout_ms=1000,
                        timeout_max_ms=2000)
        w2.set_run(esa.ddp.agree_run())
        st = esa.ddp.EsaHookState(w2)
        xs = [torch.randn(3000) * 1e-2 for _ in range(3)]
        refs = [exact_avg(x) for x in xs]
        t0 = time.monotonic()
        futs = [esa.ddp.esa_hook(st, Bucket(x)) for x in xs]
        t_ret = time.monotonic() - t0
        got = [f.wait() for f in futs]
        t_all = time.monotonic() - t0
        good = all(within("overlap", torch.float32, g, e, m)[0] for g, (e, m) in zip(got, refs))
        print("%s overlap in_flight_max %d of 3 buckets, sums %s, hook returned in %.1f ms, "
              "all done in %.0f ms" % ("ok" if good and st.in_flight_max == 3 else "bad",
                                       st.in_flight_max, "right" if good else "WRONG",
                                       1e3 * t_ret, 1e3 * t_all))
        st.close()
        w2.close()

    case("finite", None)
    case("inf", math.inf)
    case("nan", math.nan)
    half("float16", torch.float16)
    half("bfloat16", torch.bfloat16)
    for name, poison, got, ref, m in out:
        if poison is None:
            # the switch's sum within libesa's bound of the exact sum; the
            # division by 2 is exact
            tol = torch.tensor([esa.error_bound(m, float(v) * WORLD, WORLD) / WORLD
                                for v in ref.tolist()], dtype=torch.float64)
            err = (got.double() - ref).abs()
            print("%s %s worst %.3f of the bound" % (
                "ok" if bool((err <= tol).all()) else "bad", name,
                (err / tol).max().item()))
            continue
        same = torch.equal(got[:100], ref[:100]) and torch.equal(got[101:], ref[101:])
        hit = math.isinf(got[100].item()) if poison == math.inf else \
            math.isnan(got[100].item())
        wrong = int(((got != ref) & ~(got.isnan() & ref.isnan())).sum())
        print("%s %s element 100 %r, the others gloo's average exactly (%d differ)"
              % ("ok" if same and hit else "bad", name, got[100].item(), wrong))
    print("buckets switch %d converted %d fallback %d" % (
        state.buckets_switch, state.buckets_converted, state.buckets_fallback))
    state.close()
    overlap()
    fup(a, esa, torch, dist)
    world_check(a, esa, torch)
    w.close()
    dist.destroy_process_group()
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int)
    ap.add_argument("--switch", type=int)
    ap.add_argument("--gloo", type=int)
    a = ap.parse_args()
    if a.rank is not None:
        return rank_main(a)
    base = 30000 + os.getpid() % 20000
    sw = Switch(base)
    sw.start()
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(r), "--switch",
                               str(base), "--gloo", str(base + 10)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(WORLD)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=150)[0])
        except subprocess.TimeoutExpired:
            p.kill()
            outs.append(p.communicate()[0] + "\n(timed out)")
    sw.stop = True
    sw.join()
    print("TAP version 13")
    n = fail = 0
    checks = [("finite", "a finite bucket: through the switch, within the quantization "
                         "bound of the exact average"),
              ("inf", "an infinity in one element of rank 0's bucket: the fallback gets "
                      "gloo's answer, inf in that element, every other element exact"),
              ("nan", "a NaN in one element: NaN there only, every other element exact"),
              ("float16", "a float16 bucket: through the switch, within esa.ddp.error_bound() "
                          "of the exact average, in the bucket's own dtype and memory"),
              ("bfloat16", "a bfloat16 bucket: the same"),
              ("overlap", "three buckets back to back, results held 200 ms by the switch: "
                          "the hook returns futures at once, all three in flight together, "
                          "every sum within the bound"),
              ("fup", "find_unused_parameters=True and a NaN bucket, DDP's used-map "
                      "allreduce and the hook's fallback forced into opposite orders on "
                      "the two ranks: the fallback on the hook's own group, every "
                      "gradient gloo's average (NaN in its element)"),
              ("world", "register() refuses a worker whose job's workers are not the "
                        "world size")]
    for name, what in checks:
        n += 1
        lines = [ln for o in outs for ln in o.splitlines() if ln.split()[1:2] == [name]]
        good = len(lines) == WORLD and all(ln.startswith("ok ") for ln in lines)
        fail += not good
        print("%sok %d - hook: %s (%s)" % ("" if good else "not ", n, what,
                                            "; ".join(lines) or "no answer"))
    n += 1
    good = all("buckets switch 3 converted 2 fallback 2" in o for o in outs)
    fail += not good
    print("%sok %d - hook: three buckets through the switch (two converted), two through "
          "gloo, on both ranks" % ("" if good else "not ", n))
    if fail:
        for r, o in enumerate(outs):
            for ln in o.splitlines()[-15:]:
                print("# rank %d: %s" % (r, ln))
    print("1..%d" % n)
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
