# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""A DistributedDataParallel communication hook that sums gradients in the
ESA switch.

    import esa.ddp
    model = torch.nn.parallel.DistributedDataParallel(net)
    esa.ddp.register(model)                  # the one line; run with torchrun

Without a worker, register() asks esa-agent on the switch's box for the job
(ESA_AGENT=HOST[:PORT] and ESA_KEY_FILE in the environment, or agent= and
key_file=): every rank checks in with its own address (the one of the route
to the agent, a free UDP port), the agent registers the job when all of the
world have, and answers each with the switch, the PS, the job id and its
settings; a thread beats for the rank while it trains, and the rank
releases the job at exit (state.close(), or atexit).  With a worker of
your own (esa.Worker, a job registered by hand), register(model, worker).

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
goes into a buffer of its own (one per bucket, kept from step to step), so
a bucket that falls back is still the rank's own gradient: the process
group sums it element by element, and a NaN or an infinity stays in its
element, as without the hook.  A bucket summed by the switch gets the
average in one pass over that buffer.

The fallback allreduces go through a process group of the hook's own,
made by register() (dist.new_group()): DDP issues collectives of its own on
its group from the autograd thread (with find_unused_parameters=True, the
map of used parameters at the end of backward), and the order of those and
the hook's, issued from the communication thread, may differ between ranks.

register() also gives a worker configured without `run` a run number the
ranks agree on through the process group: a new run of the same job id then
never meets what the PS kept of an earlier one (docs/library.md, "Runs").
"""
import atexit
import collections
import errno
import os
import queue
import secrets
import socket
import threading
import warnings

import torch
import torch.distributed as dist

from . import EsaError, Worker, error_bound as _f32_bound
from . import agent as _agent

__all__ = ["EsaHookState", "esa_hook", "register", "agree_run", "error_bound",
           "worker_from_agent", "SWITCH_DTYPES"]

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
    __slots__ = ("tensor", "index", "fut", "why", "send", "total", "req", "held")

    def __init__(self, tensor, index, why):
        self.tensor = tensor
        self.index = index
        self.fut = torch.futures.Future()
        self.why = why
        self.send = self.total = self.req = None
        self.held = []


class EsaHookState:
    """What the hook needs: the worker, the process group to fall back to
    (fallback_group: register() makes one of the hook's own; default the
    process group), and the communication thread.  Counters: buckets_switch
    (summed by the switch; buckets_converted of them float16 or bfloat16),
    buckets_fallback, in_flight_max (the most allreduces the worker had in
    flight at once: more than 1 means buckets overlapped)."""

    def __init__(self, worker, process_group=None, fallback_group=None):
        self.worker = worker
        self.process_group = process_group
        self.fallback_group = fallback_group if fallback_group is not None else process_group
        self.world_size = dist.get_world_size(process_group)
        self.lease = None           # the agent's job: its heartbeat and release
        self.run = worker.run
        self.buckets_switch = 0
        self.buckets_converted = 0
        self.buckets_fallback = 0
        self.in_flight_max = 0
        self._warned = set()
        self._bufs = {}             # (bucket index, role): a float32 buffer kept
        self._busy = set()          # the keys of _bufs an allreduce holds
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()

    def _buffer(self, item, role):
        """A float32 buffer the size of item's bucket, kept per bucket index
        from step to step: a new one each step would cost the kernel a
        zeroed page per 4 KB written (the allocator maps buffers this large
        afresh).  One still in use (the same index twice in flight: one
        state shared by two models) gives way to a new one."""
        key, numel = (item.index, role), item.tensor.numel()
        if key in self._busy:
            return torch.empty(numel, dtype=torch.float32)
        b = self._bufs.get(key)
        if b is None or b.numel() != numel:
            b = self._bufs[key] = torch.empty(numel, dtype=torch.float32)
        self._busy.add(key)
        item.held.append(key)
        return b

    def _release(self, item):
        """item's buffers back to the pool (the communication thread only)."""
        self._busy.difference_update(item.held)
        item.held = []

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
        """Stop the communication thread (after the last bucket); a job from
        the agent is released (it is deleted once every rank has)."""
        with self._lock:
            t, self._thread = self._thread, None
            lease, self.lease = self.lease, None
        if t:
            self._queue.put(None)
            t.join()
        if lease:
            lease.release()


def _start(state, item, in_flight):
    """Start item's allreduce through the switch."""
    t = item.tensor
    item.send = t
    if t.dtype != torch.float32:
        item.send = state._buffer(item, "send").copy_(t)
    item.total = state._buffer(item, "total")
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

    dist.all_reduce(t, group=state.fallback_group, async_op=True).get_future().then(done)


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
        state._release(item)
        return _group(state, item)
    state.buckets_switch += 1
    if item.tensor.dtype != torch.float32:
        state.buckets_converted += 1
        item.tensor.copy_(item.total.div_(state.world_size))
    else:
        # one pass: the average straight into the bucket
        torch.div(item.total, state.world_size, out=item.tensor)
    item.send = item.total = item.req = None
    state._release(item)
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
                    state._release(item)
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
                state._release(item)
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
    return state.submit(_Item(tensor, bucket.index(), _unsupported(tensor)))


def agree_run(process_group=None):
    """A run number, new for each run, that every rank of the group gets:
    each draws one and the largest wins."""
    t = torch.tensor([secrets.randbits(31) + 1], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=process_group)
    return int(t.item())


class _Lease:
    """A job from the agent, for one rank: its beats, and its release."""

    def __init__(self, client, group, rank, job):
        self.client, self.group, self.rank, self.job = client, group, rank, job
        self.beats = _agent.Heartbeat(client, group, rank, job)
        self._done = False

    def release(self):
        if self._done:
            return
        self._done = True
        self.beats.stop()
        try:
            self.client.release(self.group, self.rank, self.job["job"])
        except _agent.AgentError as e:
            warnings.warn("esa.ddp: releasing job %d: %s (the agent deletes it once its "
                          "ranks are silent)" % (self.job["job"], e), RuntimeWarning)
        self.client.close()


def _free_port(ip):
    """A UDP port free on ip now (the worker binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((ip, 0))
        return s.getsockname()[1]


def _env_int(name):
    v = os.environ.get(name)
    return int(v) if v else None


def worker_from_agent(process_group=None, agent=None, key_file=None, timeout=None,
                      **settings):
    """An esa.Worker for this rank of the process group, its job from
    esa-agent: (worker, lease).  agent ("HOST[:PORT]") and key_file default
    to $ESA_AGENT and $ESA_KEY_FILE; $ESA_JOB, $ESA_MAX_PRIO and $ESA_SLOTS
    ask for a job id, a priority and a home the agent's policy allows.
    settings are more libesa settings (io="xdp", priority="srsf", ...).
    Collective: every rank of the group calls it."""
    agent = agent or os.environ.get("ESA_AGENT")
    key_file = key_file or os.environ.get("ESA_KEY_FILE")
    if not agent or not key_file:
        raise ValueError("esa.ddp: no worker given and no agent: set ESA_AGENT=HOST[:PORT] "
                         "and ESA_KEY_FILE=FILE (or pass a worker)")
    world, rank = dist.get_world_size(process_group), dist.get_rank(process_group)
    group = [secrets.token_hex(16) if rank == 0 else None]
    src = dist.get_global_rank(process_group, 0) if process_group is not None else 0
    dist.broadcast_object_list(group, src=src, group=process_group)
    client = _agent.Client(agent, key_file)
    ip = client.local_ip()          # the route to the agent: to the switch's box
    local = "%s:%d" % (ip, _free_port(ip))
    job = client.join(group[0], world, rank, local,
                      job=_env_int("ESA_JOB"), max_prio=_env_int("ESA_MAX_PRIO"),
                      slots=_env_int("ESA_SLOTS"),
                      timeout=timeout or float(os.environ.get("ESA_AGENT_TIMEOUT", 120)))
    if job["workers"] != world:
        raise ValueError("esa.ddp: the agent's job %d has %d workers, the world %d"
                         % (job["job"], job["workers"], world))
    cfg = dict(switch=job["switch"], job=job["job"], rank=rank, workers=world, local=local,
               ps=job["ps"], values=job["values"], prio_max=job["max-prio"])
    if "window" in job:
        cfg["window"] = job["window"]
    cfg.update(settings)
    lease = _Lease(client, group[0], rank, job)
    try:
        worker = Worker(**cfg)
    except Exception:
        lease.release()
        raise
    return worker, lease


def register(model, worker=None, process_group=None, agent=None, key_file=None, hook=None,
             **settings):
    """Make DDP model allreduce its gradients through the switch: with the
    worker given, or with one for a job esa-agent registers
    (worker_from_agent(); settings go to it).  The worker's job must have
    as many workers as the process group has ranks.  hook: a hook of yours
    in esa_hook's place (one that calls it, say).  Returns the state."""
    world = dist.get_world_size(process_group)
    lease = None
    if worker is None:
        worker, lease = worker_from_agent(process_group, agent, key_file, **settings)
    elif worker.workers != world:
        raise ValueError("esa.ddp: the worker's job has %d workers, the process group %d "
                         "ranks" % (worker.workers, world))
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
    ranks = None if process_group is None else dist.get_process_group_ranks(process_group)
    state = EsaHookState(worker, process_group, dist.new_group(ranks=ranks))
    state.lease = lease
    model.register_comm_hook(state, hook or esa_hook)
    if lease:
        atexit.register(state.close)
    return state
