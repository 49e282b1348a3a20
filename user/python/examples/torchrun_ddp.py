#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A DDP training script run by torchrun, its gradients summed by the ESA
switch: a plain DDP script plus one line, esa.ddp.register(model).

    export ESA_AGENT=10.255.0.1 ESA_KEY_FILE=/etc/esa/agent.key
    torchrun --nnodes 3 --nproc_per_node 1 --node_rank R \\
        --master_addr 10.9.1.2 --master_port 29500 torchrun_ddp.py

on every host (R = 0, 1, 2).  Each rank asks esa-agent on the switch's box
for the job; the agent registers it once every rank has asked, and esa-ps
learns it from the agent: nothing is registered by hand.  The model and
data are ddp_train.py's (a small CNN, shapes generated from the seed).
run_torchrun.sh runs it in network namespaces.  --check-bound checks every
bucket against gloo's sum of the same gradients (ddp_train.checked_hook).
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_train import Net, train, checked_hook      # noqa: E402 -- the model, data, check
import esa.ddp                                      # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bucket-kb", type=float, help="DDP's bucket size, in KB")
    ap.add_argument("--check-bound", action="store_true",
                    help="check every bucket against gloo's sum")
    ap.add_argument("--out", help="rank 0: losses and accuracy as JSON")
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    dist.init_process_group("gloo")             # torchrun's RANK, WORLD_SIZE, MASTER_ADDR
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp_args = {}
    if a.bucket_kb is not None:
        ddp_args["bucket_cap_mb"] = a.bucket_kb / 1024
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(a.bucket_kb * 1024)
    model = nn.parallel.DistributedDataParallel(Net(), **ddp_args)

    state = esa.ddp.register(model, hook=checked_hook if a.check_bound else None)  # the line

    job = state.lease.job
    print("rank %d: job %d from esa-agent, switch %s, PS %s, io %s" %
          (rank, job["job"], job["switch"], job["ps"], state.worker.io), flush=True)
    losses, checks, acc, ntest, secs = train(model, state, rank, world, a.steps, a.batch, a.lr,
                                             a.seed, a.check_bound)
    print("rank %d accuracy %.4f (%d test images) in %.1f s" % (rank, acc, ntest, secs),
          flush=True)
    print("rank %d buckets through the switch %d, fallbacks %d, beats %d" %
          (rank, state.buckets_switch, state.buckets_fallback, state.lease.beats.beats),
          flush=True)
    if a.check_bound:
        print("rank %d every bucket within the quantization bound: largest error %.3g of "
              "the bound (%d steps checked)" % (rank, getattr(state, "worst", 0.0),
                                                sum(1 for nb, _ in checks if nb)), flush=True)
    state.close()                               # the job released (atexit does it too)
    if rank == 0 and a.out:
        with open(a.out, "w") as f:
            json.dump({"losses": losses, "accuracy": acc, "bucket_checks": checks,
                       "job": job["job"]}, f)
    dist.destroy_process_group()
    return 0 if all(math.isfinite(v) for v in losses) else 1


if __name__ == "__main__":
    sys.exit(main())
