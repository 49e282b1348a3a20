#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Train a small CNN with DistributedDataParallel, gradients summed by the
ESA switch (--comm esa) or by gloo (--comm gloo).

One process per rank; run_ddp.sh starts them, each in its own network
namespace behind the switch.  The data is generated here from the seed:
16x16 images of four shapes (horizontal bar, vertical bar, diagonal, ring)
at random places, with noise.  Prints the loss of every step; rank 0 writes
the losses and the final test accuracy to --out (JSON).

--width N trains an MLP with two hidden layers N wide instead (N = 2048:
18 MB of float32 gradient).
--time-steps K times the step: after --warmup steps, K steps between two
barriers; then every rank's parameters are compared with every other's
(they must be identical: every rank applies the same sum), and rank 0
prints one JSON line: seconds per step, gradient bytes, the machine's idle
share over the timed region (make bench-ddp, user/bench/ddp_step.sh).
"""
import argparse
import datetime
import json
import math
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def shapes(n, seed):
    """n noisy 16x16 images of four shapes, and their labels."""
    g = torch.Generator().manual_seed(seed)
    x = torch.zeros(n, 1, 16, 16)
    y = torch.randint(0, 4, (n,), generator=g)
    pos = torch.randint(3, 13, (n, 2), generator=g)
    yy, xx = torch.meshgrid(torch.arange(16), torch.arange(16), indexing="ij")
    for i in range(n):
        r, c = int(pos[i, 0]), int(pos[i, 1])
        if y[i] == 0:
            x[i, 0, r, max(c - 3, 0):c + 4] = 1
        elif y[i] == 1:
            x[i, 0, max(r - 3, 0):r + 4, c] = 1
        elif y[i] == 2:
            for k in range(-3, 4):
                if 0 <= r + k < 16 and 0 <= c + k < 16:
                    x[i, 0, r + k, c + k] = 1
        else:
            d = ((yy - r) ** 2 + (xx - c) ** 2).float().sqrt()
            x[i, 0] = ((d > 1.5) & (d < 2.8)).float()
    x += 0.3 * torch.randn(x.shape, generator=g)
    return x, y


def checked_hook(state, bucket):
    """esa.ddp's hook, checked against gloo: every element of the bucket's
    average must be within esa.ddp.error_bound() of the exact average (here
    gloo's float32 sum of the same gradients / world, whose own rounding is
    added to the tolerance).  The references are asynchronous gloo
    allreduces issued here; the check runs when the switch's sum is in, so
    the buckets still overlap."""
    import esa.ddp

    x = bucket.buffer()
    ref = x.to(torch.float32)           # a copy for float16/bfloat16 too
    if ref.data_ptr() == x.data_ptr():
        ref = ref.clone()
    w_ref = dist.all_reduce(ref, async_op=True)
    absmax = x.abs().max().to(torch.float32).reshape(1)
    w_max = dist.all_reduce(absmax, op=dist.ReduceOp.MAX, async_op=True)
    dtype = x.dtype

    def check(fut):
        got = fut.value()
        w_ref.wait()
        w_max.wait()
        m, n = absmax.item(), state.world_size
        # Any block's largest magnitude is at most the bucket's: a valid bound.
        tol = torch.tensor([esa.ddp.error_bound(dtype, m, float(v), n)
                            for v in ref.tolist()], dtype=torch.float64)
        tol += n * m * 2.0 ** -24
        err = (got.double() - ref.double() / n).abs()
        ratio = (err / tol).max().item()
        state.worst = max(getattr(state, "worst", 0.0), ratio)
        state.step_worst = max(getattr(state, "step_worst", 0.0), ratio)
        state.step_buckets = getattr(state, "step_buckets", 0) + 1
        if ratio > 1:
            i = int((err / tol).argmax())
            raise RuntimeError("%s element %d: switch %r, gloo %r, error %g over the "
                               "bound %g" % (dtype, i, got[i].item() * n, ref[i].item(),
                                             err[i].item(), tol[i].item()))
        return got

    return esa.ddp.esa_hook(state, bucket).then(check)


class Net(nn.Module):
    """With half=True, fc's parameters are kept in float16 (computed in
    float32): DDP then hands the hook a float16 bucket beside the float32
    one (a bucket holds one dtype).  Not bfloat16: torch 1.13's gloo has
    none, and DDP broadcasts the model through it when it wraps it
    (torch_hook_test.py sends bfloat16 buckets through the hook)."""

    def __init__(self, half=False):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 32)
        self.out = nn.Linear(32, 4)
        if half:
            self.fc.to(torch.float16)

    @staticmethod
    def lin(layer, x):
        return F.linear(x, layer.weight.float(), layer.bias.float())

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.lin(self.out, F.relu(self.lin(self.fc, x.flatten(1))))


class Mlp(nn.Module):
    """--width N: two hidden layers N wide on the flattened images,
    (256 + N + 4) N + 2N + 4 parameters: 4.7 million at N = 2048, 18 MB
    of float32 gradient for about 0.9 GFLOP a step at a batch of 32."""

    def __init__(self, width):
        super().__init__()
        self.h1 = nn.Linear(16 * 16, width)
        self.h2 = nn.Linear(width, width)
        self.out = nn.Linear(width, 4)

    def forward(self, x):
        return self.out(F.relu(self.h2(F.relu(self.h1(x.flatten(1))))))


def train(model, state, rank, world, steps, batch=32, lr=0.05, seed=1, check=False):
    """steps of SGD on this rank's share of the shapes, each step's loss
    printed: (losses, checks, test accuracy, test images, seconds).  With
    check, checks holds each step's buckets checked against gloo and the
    largest error / bound (checked_hook's)."""
    x, y = shapes(4096 + 1024, seed)
    xtr, ytr = x[:4096][rank::world], y[:4096][rank::world]
    xte, yte = x[4096:], y[4096:]
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses, checks, t0 = [], [], time.time()
    per_epoch = len(xtr) // batch
    for step in range(steps):
        i = (step % per_epoch) * batch
        opt.zero_grad()
        loss = F.cross_entropy(model(xtr[i:i + batch]), ytr[i:i + batch])
        loss.backward()
        if check:
            checks.append((getattr(state, "step_buckets", 0),
                           getattr(state, "step_worst", 0.0)))
            state.step_buckets, state.step_worst = 0, 0.0
        opt.step()
        losses.append(loss.item())
        print("rank %d step %d loss %.6f" % (rank, step, loss.item()), flush=True)
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    return losses, checks, acc, len(yte), time.time() - t0


# Tensors that live as long as the process.  torch 1.13's gloo drops a
# finished work's tensors on its own thread, after the caller's wait() has
# returned: a tensor whose Python object went first is then freed there,
# under the GIL, and ProcessGroupGloo's destructor joins that thread while
# holding the GIL (a rank hung at exit so, once in 60-torch).
_KEEP = []


def param_spread(model):
    """The largest difference of any parameter between two ranks (gloo's
    MAX of the parameters and of their negation: max - min), and where."""
    with torch.no_grad():
        hi = torch.cat([p.detach().to(torch.float64).flatten()
                        for p in model.parameters()])
        lo = -hi
        _KEEP.extend((hi, lo))
        dist.all_reduce(hi, op=dist.ReduceOp.MAX)
        dist.all_reduce(lo, op=dist.ReduceOp.MAX)
        d = hi + lo
        i = int(d.argmax())
        return d[i].item(), i


def timed(model, state, a):
    """--time-steps: a.warmup steps, then a.time_steps steps between two
    barriers, timed on rank 0 with the machine's /proc/stat around them
    (e2e_rank.proc_stat(), make bench-e2e's); then the parameters compared
    across the ranks.  Returns the exit status; rank 0 prints the JSON."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "bench"))
    from e2e_rank import proc_stat

    x, y = shapes(4096, a.seed)
    xtr, ytr = x[a.rank::a.world], y[a.rank::a.world]
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    per_epoch = len(xtr) // a.batch
    losses = []

    def steps(first, count):
        for step in range(first, first + count):
            i = (step % per_epoch) * a.batch
            opt.zero_grad()
            loss = F.cross_entropy(model(xtr[i:i + a.batch]), ytr[i:i + a.batch])
            loss.backward()
            opt.step()
            losses.append(loss.item())

    steps(0, a.warmup)
    dist.barrier()
    m0 = proc_stat()
    steps(a.warmup, a.time_steps)
    dist.barrier()
    m1 = proc_stat()
    wall = m1["wall"] - m0["wall"]
    if a.skew_params and a.rank == a.world - 1:
        with torch.no_grad():
            next(model.parameters()).view(-1)[0] += 2.0 ** -20
    spread, where = param_spread(model)
    finite = all(math.isfinite(v) for v in losses)
    if not spread == 0.0:               # NaN too
        print("rank %d: FAILED: the ranks' parameters differ after %d steps: by %g "
              "at element %d" % (a.rank, len(losses), spread, where),
              file=sys.stderr, flush=True)
    if not finite:
        print("rank %d: FAILED: a loss is not finite" % a.rank, file=sys.stderr, flush=True)
    if a.rank == 0:
        res = {"comm": a.comm, "ranks": a.world, "width": a.width,
               "values": a.values if state else None,
               "io": state.worker.io if state else None,
               "grad_bytes": sum(p.numel() * p.element_size()
                                 for p in model.parameters() if p.requires_grad),
               "warmup": a.warmup, "steps": a.time_steps, "seconds": wall,
               "s_per_step": wall / a.time_steps,
               "idle": (m1["idle"] - m0["idle"]) / (wall * os.cpu_count()),
               "checked": a.check_bound,
               "bound_worst": getattr(state, "worst", 0.0) if a.check_bound and state else None,
               "param_max_diff": spread,
               "params_identical": spread == 0.0, "losses_finite": finite,
               "hook": {k: getattr(state, k) for k in
                        ("buckets_switch", "buckets_converted", "buckets_fallback",
                         "in_flight_max")} if state else None}
        print(json.dumps(res), flush=True)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(res, f)
    if state:
        state.close()
    dist.destroy_process_group()
    return 0 if spread == 0.0 and finite else 1


def bench(a, worker, reps=10):
    """Seconds per allreduce of a.bench floats, gloo and the switch."""
    t = torch.randn(a.bench)
    res = {}
    for name in ("gloo", "esa"):
        if name == "esa" and not worker:
            continue
        dist.barrier()
        t0 = time.time()
        for _ in range(reps):
            if name == "gloo":
                dist.all_reduce(t)
            else:
                worker.allreduce(t)
        dist.barrier()
        res[name] = (time.time() - t0) / reps
        if a.rank == 0:
            print("allreduce of %d floats (%.1f MB), %d ranks: %s %.1f ms, %.0f MB/s"
                  % (a.bench, a.bench * 4e-6, a.world, name, res[name] * 1e3,
                     a.bench * 4e-6 / res[name]), flush=True)
    if a.rank == 0 and a.out:
        with open(a.out, "w") as f:
            json.dump({"floats": a.bench, "ranks": a.world, "seconds": res}, f)
    dist.destroy_process_group()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--master", required=True, help="rank 0's ADDR:PORT for gloo")
    ap.add_argument("--comm", choices=("esa", "gloo"), default="esa")
    ap.add_argument("--switch", help="the switch's ADDR (--comm esa)")
    ap.add_argument("--job", type=int, default=1)
    ap.add_argument("--local", help="this rank's registered ADDR:PORT (--comm esa)")
    ap.add_argument("--ps", help="the job's PS, ADDR:PORT as registered (--comm esa)")
    ap.add_argument("--values", type=int, default=256)
    ap.add_argument("--esa", action="append", default=[], metavar="KEY=VALUE",
                    help="--comm esa: more libesa settings, e.g. io=xdp ifname=eth0 "
                         "(docs/library.md)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="rank 0: losses and accuracy as JSON")
    ap.add_argument("--bench", type=int, metavar="FLOATS",
                    help="instead of training: time allreduces of FLOATS float32 "
                         "values with gloo and (--comm esa) the switch")
    ap.add_argument("--check-bound", action="store_true",
                    help="--comm esa: check every bucket against gloo's sum")
    ap.add_argument("--half", action="store_true",
                    help="keep a layer's parameters in float16 (a float16 bucket)")
    ap.add_argument("--bucket-kb", type=float,
                    help="DDP's bucket size, first bucket too, in KB (smaller: more "
                         "buckets)")
    ap.add_argument("--width", type=int, metavar="N",
                    help="train an MLP with two hidden layers N wide instead of the CNN "
                         "(2048: 18 MB of gradient)")
    ap.add_argument("--time-steps", type=int, metavar="K",
                    help="time K steps after --warmup ones; rank 0 prints one JSON line "
                         "(seconds per step, gradient bytes); the ranks' parameters must "
                         "be identical at the end")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before "
                    "--time-steps' (3)")
    ap.add_argument("--skew-params", action="store_true",
                    help="--time-steps' check of its check: the last rank moves a "
                         "parameter before the comparison, which must then fail")
    a = ap.parse_args()
    if a.width is not None and not 1 <= a.width <= 65536:
        ap.error("--width: 1 to 65536")
    if a.width is not None and a.half:
        ap.error("--half: the CNN's option, not --width's")
    if a.time_steps is not None and (a.time_steps < 1 or a.warmup < 0):
        ap.error("--time-steps: 1 or more, --warmup: 0 or more")
    if a.time_steps is not None and a.bench:
        ap.error("--time-steps or --bench, not both")

    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    addr, port = a.master.rsplit(":", 1)
    dist.init_process_group("gloo", init_method="tcp://%s:%s" % (addr, port),
                            rank=a.rank, world_size=a.world,
                            timeout=datetime.timedelta(seconds=120))
    ddp_args = {}
    if a.bucket_kb is not None:
        ddp_args["bucket_cap_mb"] = a.bucket_kb / 1024
        # DDP's first bucket is 1 MB whatever the cap (torch 1.13): this
        # model's 38 KB would be one bucket
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(a.bucket_kb * 1024)
    net = Mlp(a.width) if a.width else Net(a.half)
    model = nn.parallel.DistributedDataParallel(net, **ddp_args)
    state = None
    if a.comm == "esa":
        import esa
        import esa.ddp
        more = {}
        for kv in a.esa:
            if "=" not in kv:
                ap.error("--esa %r: KEY=VALUE expected" % kv)
            k, v = kv.split("=", 1)
            more[k] = v
        worker = esa.Worker(switch=a.switch, job=a.job, rank=a.rank,
                            workers=a.world, local=a.local, ps=a.ps,
                            values=a.values, **more)
        print("rank %d: esa io %s" % (a.rank, worker.io), flush=True)
        if a.check_bound:
            worker.set_run(esa.ddp.agree_run())
            state = esa.ddp.EsaHookState(worker)
            model.register_comm_hook(state, checked_hook)
        else:
            state = esa.ddp.register(model, worker)
        print("rank %d: esa run %d" % (a.rank, state.run), flush=True)

    if a.bench:
        return bench(a, state.worker if state else None)
    if a.time_steps:
        return timed(model, state, a)

    losses, checks, acc, ntest, secs = train(model, state, a.rank, a.world, a.steps, a.batch,
                                             a.lr, a.seed, a.check_bound)
    print("rank %d accuracy %.4f (%d test images) in %.1f s" % (a.rank, acc, ntest, secs),
          flush=True)
    if state:
        print("rank %d buckets through the switch %d (float16/bfloat16 %d), fallbacks %d, "
              "in flight at once %d; %s" %
              (a.rank, state.buckets_switch, state.buckets_converted,
               state.buckets_fallback, state.in_flight_max, state.worker.stats()),
              flush=True)
        if a.check_bound:
            print("rank %d every bucket within the quantization bound: largest "
                  "error %.3g of the bound" % (a.rank, state.worst), flush=True)
    if state:
        state.close()
    if a.rank == 0 and a.out:
        with open(a.out, "w") as f:
            json.dump({"comm": a.comm, "losses": losses, "accuracy": acc,
                       "bucket_checks": checks,
                       "hook": {k: getattr(state, k) for k in
                                ("buckets_switch", "buckets_converted",
                                 "buckets_fallback", "in_flight_max")} if state else None,
                       "params": sum(p.numel() for p in model.parameters()),
                       "test_images": ntest}, f)
    dist.destroy_process_group()
    return 0 if all(math.isfinite(v) for v in losses) else 1


if __name__ == "__main__":
    sys.exit(main())
