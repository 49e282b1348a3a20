#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""gloo's allreduce on buffers it has seen before and on new ones.

One rank of WORLD on loopback (run one per rank, e.g. for r in 0 1 2 3; do
user/bench/gloo_reuse.py --rank $r & done; wait): ten allreduces of
FLOATS float32 values on one buffer, on ten new ones, on ten new ones
refilled just before, and on the same ten again.  Rank 0 prints ms per
allreduce for each.  docs/evaluation.md ("gloo's first use of a buffer")
shows why make bench-e2e allreduces every buffer once before timing it.
"""
import argparse
import time

import torch
import torch.distributed as dist


def timed(name, bufs, rank, refill=None):
    dist.barrier()
    t0 = time.perf_counter()
    for i, b in enumerate(bufs):
        if refill is not None:
            b.copy_(refill[i])
        dist.all_reduce(b)
    dist.barrier()
    if rank == 0:
        print("gloo-reuse: %-30s %6.1f ms" % (name, 1e3 * (time.perf_counter() - t0) / len(bufs)),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--floats", type=int, default=4456448, help="17.8 MB by default")
    ap.add_argument("--port", type=int, default=29533)
    a = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % a.port,
                            rank=a.rank, world_size=a.world)
    one = torch.randn(a.floats)
    timed("one buffer, ten times", [one] * 10, a.rank)
    timed("ten new buffers", [torch.randn(a.floats) for _ in range(10)], a.rank)
    bufs = [torch.randn(a.floats) for _ in range(10)]
    src = [torch.randn(a.floats) for _ in range(10)]
    timed("ten new buffers, refilled", bufs, a.rank, src)
    timed("the same ten again, refilled", bufs, a.rank, src)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
