# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A DistributedDataParallel communication hook that sums gradients in the
ESA switch.

    import esa, esa.ddp
    worker = esa.Worker(switch=..., job=..., rank=rank, workers=world, local=...)
    model = torch.nn.parallel.DistributedDataParallel(net)
    esa.ddp.register(model, worker)          # the one line

Each gradient bucket DDP hands the hook is allreduced through the switch in
place and divided by the world size, as DDP's own allreduce does.  What the
switch cannot carry (a dtype other than float32, a GPU or non-contiguous
bucket, a bucket with NaN or infinity) goes to the process group's own
allreduce instead, with a warning the first time.  Every rank makes the same
choice for the same bucket, so the collectives stay in step.

register() also gives a worker configured without `run` a run number the
ranks agree on through the process group: a new run of the same job id then
never meets what the PS kept of an earlier one (docs/library.md, "Runs").
"""
import errno
import secrets
import warnings

import torch
import torch.distributed as dist

from . import EsaError

__all__ = ["EsaHookState", "esa_hook", "register", "agree_run"]


class EsaHookState:
    """What the hook needs: the worker, and the process group to fall back to."""

    def __init__(self, worker, process_group=None):
        self.worker = worker
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.run = worker.run
        self.buckets_switch = 0
        self.buckets_fallback = 0
        self._warned = set()

    def _warn(self, why):
        if why not in self._warned:
            self._warned.add(why)
            warnings.warn("esa.ddp: %s: using the process group's allreduce" % why,
                          RuntimeWarning, stacklevel=3)


def _fallback(state, tensor, why):
    state._warn(why)
    state.buckets_fallback += 1
    fut = dist.all_reduce(tensor, group=state.process_group,
                          async_op=True).get_future()
    return fut.then(lambda f: f.value()[0].div_(state.world_size))


def esa_hook(state, bucket):
    """DDP comm hook: the bucket's average over all ranks, through the switch."""
    tensor = bucket.buffer()
    if tensor.dtype != torch.float32:
        return _fallback(state, tensor, "dtype %s" % tensor.dtype)
    if tensor.device.type != "cpu" or not tensor.is_contiguous():
        return _fallback(state, tensor, "a %s bucket" % tensor.device.type)
    try:
        state.worker.allreduce(tensor)
    except EsaError as e:
        # NaN or infinity in a bucket: every rank got -ERANGE for it.
        if e.errno != errno.ERANGE:
            raise
        return _fallback(state, tensor, "NaN or infinity in a gradient")
    state.buckets_switch += 1
    tensor.div_(state.world_size)
    fut = torch.futures.Future()
    fut.set_result(tensor)
    return fut


def agree_run(process_group=None):
    """A run number, new for each run, that every rank of the group gets:
    each draws one and the largest wins."""
    t = torch.tensor([secrets.randbits(31) + 1], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=process_group)
    return int(t.item())


def register(model, worker, process_group=None):
    """Make DDP model allreduce its gradients through the switch."""
    if not worker.run:
        run = agree_run(process_group)
        try:
            worker.set_run(run)
        except EsaError as e:
            if e.errno != errno.EBUSY:
                raise
            warnings.warn("esa.ddp: the worker has reduced before register(): "
                          "it keeps sequence numbers from 0", RuntimeWarning,
                          stacklevel=2)
    state = EsaHookState(worker, process_group)
    model.register_comm_hook(state, esa_hook)
    return state
