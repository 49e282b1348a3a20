# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A DistributedDataParallel communication hook that sums gradients in the
ESA switch.

    import esa, esa.ddp
    worker = esa.Worker(switch=..., job=..., rank=rank, workers=world,
                        local=..., ps=...)
    model = torch.nn.parallel.DistributedDataParallel(net)
    esa.ddp.register(model, worker)          # the one line

Each gradient bucket DDP hands the hook is allreduced through the switch
and divided by the world size, as DDP's own allreduce does.  The hook does
not wait: it hands the bucket to the state's communication thread and
returns a future, so the rest of the backward pass computes while the
switch sums, and every bucket of an iteration is in flight at once (libesa
streams them in order through one window).  DDP waits for the futures at
the end of backward.

float32 buckets go to the switch as they are; float16 and bfloat16 buckets
are converted to float32 on the host (in the communication thread), summed,
averaged and rounded back once (error_bound() gives the bound).  What the
switch cannot carry (another dtype, a GPU or non-contiguous bucket, a
bucket with NaN or infinity) goes to the process group's own allreduce
instead, with a warning the first time.  Every rank makes the same choice
for the same bucket, and the communication thread issues those allreduces
in bucket order, so the ranks' collectives stay in step.  The switch's sum
goes into a buffer of its own, so a bucket that falls back is still the
rank's own gradient: the process group sums it element by element, and a
NaN or an infinity stays in its element, as without the hook.

register() also gives a worker configured without `run` a run number the
ranks agree on through the process group: a new run of the same job id then
never meets what the PS kept of an earlier one (docs/library.md, "Runs").
"""
import collections
import errno
import queue
import secrets
import threading
import warnings

import torch
import torch.distributed as dist

from . import EsaError, error_bound as _f32_bound

__all__ = ["EsaHookState", "esa_hook", "register", "agree_run", "error_bound",
           "SWITCH_DTYPES"]

# dtypes the hook sends through the switch; the others fall back
SWITCH_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Rounding of a float32 average to the bucket's dtype: half an ulp
# (relative) and half the smallest subnormal (absolute).
_ROUND = {torch.float32: (0.0, 0.0), torch.float16: (2.0 ** -11, 2.0 ** -25),
          torch.bfloat16: (2.0 ** -8, 2.0 ** -134)}
# How long the communication thread waits for the oldest allreduce before
# it looks for new buckets again.
_POLL_MS = 1


def error_bound(dtype, block_absmax, exact_sum, world):
    """Bound of |the hook's average - exact_sum / world| for an element of a
    bucket of `dtype` whose scale block's largest magnitude over all ranks
    is block_absmax (libesa's float32 bound B, docs/library.md, then the
    division and the rounding to dtype):

        (B + (u + 2^-23) (|exact_sum| + B)) / world + s + 2^-149

    u and s: half an ulp and half the smallest subnormal of dtype (float16
    2^-11 and 2^-25, bfloat16 2^-8 and 2^-134, float32 0 and 0)."""
    if dtype not in _ROUND:
        raise TypeError("esa.ddp: no switch path for dtype %s" % dtype)
    u, s = _ROUND[dtype]
    b = _f32_bound(block_absmax, exact_sum, world)
    return (b + (u + 2.0 ** -23) * (abs(exact_sum) + b)) / world + s + 2.0 ** -149


class _Item:
    """One bucket, in DDP's order: through the switch, or the group's."""
    __slots__ = ("tensor", "fut", "why", "send", "total", "req")

    def __init__(self, tensor, why):
        self.tensor = tensor
        self.fut = torch.futures.Future()
        self.why = why
        self.send = self.total = self.req = None


class EsaHookState:
    """What the hook needs: the worker, the process group to fall back to,
    and the communication thread.  Counters: buckets_switch (summed by the
    switch; buckets_converted of them float16 or bfloat16),
    buckets_fallback, in_flight_max (the most allreduces the worker had in
    flight at once: more than 1 means buckets overlapped)."""

    def __init__(self, worker, process_group=None):
        self.worker = worker
        self.process_group = process_group
        self.world_size = dist.get_world_size(process_group)
        self.run = worker.run
        self.buckets_switch = 0
        self.buckets_converted = 0
        self.buckets_fallback = 0
        self.in_flight_max = 0
        self._warned = set()
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()

    def _warn(self, why):
        if why not in self._warned:
            self._warned.add(why)
            warnings.warn("esa.ddp: %s: using the process group's allreduce" % why,
                          RuntimeWarning, stacklevel=4)

    def submit(self, item):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=_comm_main, args=(self,),
                                                name="esa.ddp", daemon=True)
                self._thread.start()
        self._queue.put(item)
        return item.fut

    def close(self):
        """Stop the communication thread (after the last bucket)."""
        with self._lock:
            t, self._thread = self._thread, None
        if t:
            self._queue.put(None)
            t.join()


def _start(state, item, in_flight):
    """Start item's allreduce through the switch."""
    t = item.tensor
    item.send = t if t.dtype == torch.float32 else t.to(torch.float32)
    item.total = torch.empty(t.numel(), dtype=torch.float32)
    item.req = state.worker.allreduce_start(item.send, out=item.total)
    state.in_flight_max = max(state.in_flight_max, in_flight + 1)


def _group(state, item):
    """item through the process group's allreduce (in bucket order)."""
    state._warn(item.why)
    state.buckets_fallback += 1
    t, fut = item.tensor, item.fut

    def done(f):
        try:
            f.value()
            fut.set_result(t.div_(state.world_size))
        except Exception as e:          # noqa: BLE001 -- DDP raises it
            fut.set_exception(e)

    dist.all_reduce(t, group=state.process_group, async_op=True).get_future().then(done)


def _finish(state, item, err):
    """item's allreduce is done (err: its EsaError): the average into the
    bucket, or the group's allreduce."""
    if err is not None:
        # NaN or infinity in a bucket: every rank got -ERANGE for it, and
        # the bucket is untouched (the sum went to item.total).
        if err.errno != errno.ERANGE:
            raise err
        item.why = "NaN or infinity in a gradient"
        item.send = item.total = item.req = None
        return _group(state, item)
    state.buckets_switch += 1
    if item.tensor.dtype != torch.float32:
        state.buckets_converted += 1
    item.tensor.copy_(item.total.div_(state.world_size))
    item.send = item.total = item.req = None
    item.fut.set_result(item.tensor)


def _take(state, pending, block, started):
    """New buckets from the hook: start each through the switch at once.
    Returns (started, stop)."""
    stop = False
    try:
        while True:
            item = state._queue.get(block=block)
            if item is None:
                return started, True
            block = False
            if item.why is None:
                try:
                    _start(state, item, started)
                except Exception as e:  # noqa: BLE001 -- DDP raises it
                    item.fut.set_exception(e)
                    continue
                started += 1
            pending.append(item)
    except queue.Empty:
        pass
    return started, stop


def _settle(state, pending):
    """Finish the buckets at the head of the line that are done, in order;
    wait for the oldest at most _POLL_MS.  Returns how many finished."""
    n = 0
    while pending:
        head = pending[0]
        err = None
        if head.req is not None:
            try:
                if not head.req.wait(_POLL_MS):
                    break
            except EsaError as e:
                err = e
        pending.popleft()
        try:
            if head.req is not None:
                n += 1
                _finish(state, head, err)
            else:
                _group(state, head)
        except Exception as e:          # noqa: BLE001 -- re-raised
            head.fut.set_exception(e)
            raise
    return n


def _comm_main(state):
    """The communication thread: start every bucket as it comes, finish
    them in order (each bucket's group allreduce only after every earlier
    bucket's outcome, the same on every rank)."""
    pending = collections.deque()
    started = 0             # allreduces started and not finished
    stop = False
    while not stop or pending:
        if not stop:
            started, stop = _take(state, pending, not pending, started)
        try:
            started -= _settle(state, pending)
        except Exception as e:          # noqa: BLE001 -- every waiting bucket gets it
            for item in pending:
                if not item.fut.done():
                    item.fut.set_exception(e)
            pending.clear()
            started = 0


def _unsupported(tensor):
    if tensor.dtype not in SWITCH_DTYPES:
        return "dtype %s" % tensor.dtype
    if tensor.device.type != "cpu" or not tensor.is_contiguous():
        return "a %s%s bucket" % ("" if tensor.is_contiguous() else "non-contiguous ",
                                  tensor.device.type)
    return None


def esa_hook(state, bucket):
    """DDP comm hook: a future of the bucket's average over all ranks,
    through the switch."""
    tensor = bucket.buffer()
    return state.submit(_Item(tensor, _unsupported(tensor)))


def agree_run(process_group=None):
    """A run number, new for each run, that every rank of the group gets:
    each draws one and the largest wins."""
    t = torch.tensor([secrets.randbits(31) + 1], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=process_group)
    return int(t.item())


def register(model, worker, process_group=None):
    """Make DDP model allreduce its gradients through the switch."""
    if worker.warning:
        warnings.warn("esa.ddp: %s" % worker.warning, RuntimeWarning, stacklevel=2)
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
