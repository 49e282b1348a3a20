# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""ESA in-network aggregation from Python: libesa through ctypes.

    import esa
    w = esa.Worker(switch="10.255.0.1", job=7, rank=0, workers=4,
                   local="10.9.1.2:6007", ps="10.9.250.2:9000")
    w.allreduce(tensor)          # in place: a contiguous CPU float32/int32
                                 # torch tensor or numpy array
    w.allreduce(tensor, out=s)   # or into another buffer of the same kind
    r = w.allreduce_start(t)     # non-blocking: several may be in flight,
    r.wait()                     # streaming in order through one window

    esa.write_metrics(path, [w])  # the workers' counters for Prometheus

No compiled extension: the package loads libesa through ctypes, the file
$ESA_LIBESA names if set; else, run from the source tree (user/python), the
one `make` built there (build/libesa.so.2: the library of the same source);
else the installed one by its soname, libesa.so.2, as the dynamic linker
finds it (LD_LIBRARY_PATH, ld.so.conf).  See docs/torch.md and esa.ddp for
DDP, docs/metrics.md for the metrics.
"""
import ctypes
import errno
import os
import tempfile
import threading

__all__ = ["Worker", "Request", "EsaError", "error_bound", "accepts", "library",
           "library_path", "metrics", "write_metrics"]

# The release (include/esa_version.h says the same: the install suite
# checks), and the libesa API this package speaks: its major is the soname.
__version__ = "1.1.0"
_LIBESA_MAJOR, _LIBESA_MIN = 2, 20200

_INT32, _FLOAT32 = 0, 1


class EsaError(OSError):
    """A libesa call failed; errno and the library's reason."""


def _source_tree_library():
    """build/libesa.so.2 when this package is user/python/esa of a source
    tree (its Makefile and libesa's header beside), else None."""
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    if not (os.path.exists(os.path.join(top, "Makefile")) and
            os.path.exists(os.path.join(top, "user", "lib", "esa.h"))):
        return None
    lib = os.path.join(top, os.environ.get("OUTPUT", "build"),
                       "libesa.so.%d" % _LIBESA_MAJOR)
    return lib if os.path.exists(lib) else None


def _find_library():
    soname = "libesa.so.%d" % _LIBESA_MAJOR
    tried = []
    for c in (os.environ.get("ESA_LIBESA"), _source_tree_library(), soname):
        if not c:
            continue
        try:
            lib = ctypes.CDLL(c, use_errno=True)
        except OSError as e:
            if c == os.environ.get("ESA_LIBESA"):
                raise ImportError("ESA_LIBESA=%s: %s" % (c, e)) from None
            tried.append(str(e))
            continue
        version = lib.esa_version()
        if version // 10000 != _LIBESA_MAJOR or version < _LIBESA_MIN:
            raise ImportError("%s is libesa %d.%d.%d: this package needs %d.%d or later "
                              "of %d.x" % (c, version // 10000, version // 100 % 100,
                                           version % 100, _LIBESA_MAJOR,
                                           _LIBESA_MIN // 100 % 100, _LIBESA_MAJOR))
        return lib
    raise ImportError("libesa not found (%s): install it (make install), build it "
                      "(make), or set ESA_LIBESA" % "; ".join(tried or [soname]))


def _loaded_path():
    """The file the dynamic linker loaded for libesa (/proc/self/maps)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith("libesa.so"):
                    return path
    except OSError:
        pass
    return None


def _bind(lib):
    c = ctypes
    sig = {
        "esa_version": (c.c_int, []),
        "esa_config_new": (c.c_void_p, []),
        "esa_config_free": (None, [c.c_void_p]),
        "esa_config_set": (c.c_int, [c.c_void_p, c.c_char_p, c.c_char_p]),
        "esa_config_load": (c.c_int, [c.c_void_p, c.c_char_p]),
        "esa_config_error": (c.c_char_p, [c.c_void_p]),
        "esa_config_get": (c.c_int, [c.c_void_p, c.c_char_p, c.c_char_p,
                                     c.c_size_t]),
        "esa_worker_open": (c.c_void_p, [c.c_void_p, c.c_char_p, c.c_size_t]),
        "esa_worker_close": (None, [c.c_void_p]),
        "esa_worker_error": (c.c_char_p, [c.c_void_p]),
        "esa_worker_warning": (c.c_char_p, [c.c_void_p]),
        "esa_worker_io": (c.c_char_p, [c.c_void_p]),
        "esa_worker_set_run": (c.c_int, [c.c_void_p, c.c_uint32]),
        "esa_allreduce": (c.c_int, [c.c_void_p, c.c_int, c.c_void_p,
                                    c.c_void_p, c.c_size_t]),
        "esa_allreduce_start": (c.c_void_p, [c.c_void_p, c.c_int, c.c_void_p,
                                             c.c_void_p, c.c_size_t]),
        "esa_test": (c.c_int, [c.c_void_p, c.POINTER(c.c_int)]),
        "esa_wait": (c.c_int, [c.c_void_p, c.c_int]),
        "esa_request_free": (None, [c.c_void_p]),
        "esa_progress": (c.c_int, [c.c_void_p, c.c_int]),
        "esa_worker_stat": (c.c_int64, [c.c_void_p, c.c_char_p]),
        "esa_worker_stats": (c.c_int, [c.c_void_p, c.c_void_p, c.c_size_t]),
        "esa_worker_metrics": (c.c_int, [c.POINTER(c.c_void_p), c.c_int,
                                         c.c_char_p, c.c_size_t]),
        "esa_f32_error_bound": (c.c_double, [c.c_double, c.c_double,
                                             c.c_int, c.c_int]),
        "esa_strerror": (c.c_char_p, [c.c_int]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


library = _bind(_find_library())
# the file loaded, e.g. /usr/lib/x86_64-linux-gnu/libesa.so.2.2.0
library_path = _loaded_path()

# struct esa_stats (esa.h), in its order: esa_worker_stats() fills it
_STATS = ("ops", "elems", "chunks", "tx_packets", "tx_resends", "rx_packets",
          "rx_results", "rx_from_ps", "rx_duplicates", "rx_stale",
          "rx_invalid", "overflows", "redos", "scale_chunks", "fetch_rx",
          "fetch_answered", "send_again", "rtt_us_sum", "rtt_samples",
          "rx_untrusted", "fetch_refused", "icmp_errors", "ps_probes", "rcvbuf",
          "io_xdp", "xdp_zerocopy", "xdp_drops", "udp_gro", "rx_coalesced",
          "waits", "resends_deferred", "rx_contention", "cc_decreases", "cwnd")
RTT_BUCKETS = 24        # ESA_RTT_BUCKETS: rtt_hist[i], at most 2^i us


class _Stats(ctypes.Structure):
    _fields_ = [(k, ctypes.c_uint64) for k in _STATS] + [
        ("rtt_hist", ctypes.c_uint64 * RTT_BUCKETS)]


def metrics(workers):
    """The workers' counters in Prometheus's text format (libesa's
    esa_worker_metrics(): esa_worker_*_total{job,rank}, the round trips as
    esa_worker_chunk_rtt_seconds), as a str."""
    ws = [w._w for w in workers]
    if not all(ws):
        raise ValueError("esa: worker closed")
    locks = [w._lock for w in workers]
    for lk in locks:
        lk.acquire()
    try:
        arr = (ctypes.c_void_p * len(ws))(*ws)
        n = library.esa_worker_metrics(arr, len(ws), None, 0)
        if n < 0:
            raise EsaError(-n, "esa: metrics: " + library.esa_strerror(n).decode())
        buf = ctypes.create_string_buffer(n + 1)
        library.esa_worker_metrics(arr, len(ws), buf, n + 1)
    finally:
        for lk in locks:
            lk.release()
    return buf.value.decode()


def write_metrics(path, workers):
    """metrics(workers) into path, atomically (a temporary file beside it,
    renamed): for the node exporter's textfile collector."""
    text = metrics(workers)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def error_bound(block_absmax, exact_sum, nworkers, headroom=-1):
    """libesa's bound of |float32 allreduce result - exact sum| (docs/library.md)."""
    return library.esa_f32_error_bound(block_absmax, exact_sum, nworkers,
                                       headroom)


def accepts(key, value):
    """Does this libesa take the setting key = value?  (How a caller finds
    whether a build has, say, io=xdp, without opening a worker.)"""
    cfg = library.esa_config_new()
    if not cfg:
        raise MemoryError("esa_config_new")
    try:
        return library.esa_config_set(cfg, str(key).encode(), str(value).encode()) == 0
    finally:
        library.esa_config_free(cfg)


def _buffer(buf):
    """(pointer, element count, dtype) of a contiguous CPU buffer."""
    if hasattr(buf, "data_ptr"):                       # torch.Tensor
        if buf.device.type != "cpu" or not buf.is_contiguous():
            raise ValueError("esa: a contiguous CPU tensor is needed")
        name = str(buf.dtype)
        ptr, n = buf.data_ptr(), buf.numel()
    else:                                              # numpy.ndarray
        if not buf.flags["C_CONTIGUOUS"] or not buf.flags["WRITEABLE"]:
            raise ValueError("esa: a contiguous, writable array is needed")
        name = str(buf.dtype)
        ptr, n = buf.ctypes.data, buf.size
    if name in ("torch.float32", "float32"):
        return ptr, n, _FLOAT32
    if name in ("torch.int32", "int32"):
        return ptr, n, _INT32
    raise TypeError("esa: float32 or int32 only, not %s" % name)


class Worker:
    """One rank of one job: a libesa worker context and its socket.

    Settings are libesa's configuration keys (docs/library.md): switch,
    job, rank, workers, local, ps (required: the job's PS, IP:PORT),
    values, window, timeout_ms, priority, prio, prio_max, netns, ... given
    as keyword arguments, and/or a config file.  `warning` says what the
    worker could not get as configured (e.g. a smaller receive buffer).
    """

    def __init__(self, config_file=None, **settings):
        self._w = None
        self.run = 0
        # one thread at a time drives a libesa worker (esa.h): every call
        # on it takes this lock, so a communication thread may drive it
        self._lock = threading.RLock()
        self._reqs = set()
        cfg = library.esa_config_new()
        if not cfg:
            raise MemoryError("esa_config_new")
        try:
            if config_file:
                self._check_cfg(cfg, library.esa_config_load(
                    cfg, os.fsencode(config_file)))
            for key, value in settings.items():
                if value is None:
                    continue
                self._check_cfg(cfg, library.esa_config_set(
                    cfg, key.encode(), str(value).encode()))
            run = ctypes.create_string_buffer(16)
            library.esa_config_get(cfg, b"run", run, len(run))
            self.run = int(run.value or 0)     # 0: none chosen (esa.ddp)
            library.esa_config_get(cfg, b"workers", run, len(run))
            # the job's ranks, from the settings or the file (esa.ddp checks them)
            self.workers = int(run.value or 0)
            err = ctypes.create_string_buffer(256)
            self._w = library.esa_worker_open(cfg, err, len(err))
            if not self._w:
                e = ctypes.get_errno() or errno.EINVAL
                raise EsaError(e, "esa: " + err.value.decode(errors="replace"))
        finally:
            library.esa_config_free(cfg)
        self.warning = library.esa_worker_warning(self._w).decode(
            errors="replace")
        # the transport it runs on: "udp ...", or "xdp IFNAME queue Q ..."
        self.io = library.esa_worker_io(self._w).decode(errors="replace")

    @staticmethod
    def _check_cfg(cfg, rc):
        if rc:
            raise EsaError(-rc, "esa: " + library.esa_config_error(cfg).decode(
                errors="replace"))

    def _args(self, buf, out):
        if not self._w:
            raise ValueError("esa: worker closed")
        ptr, n, dtype = _buffer(buf)
        optr = ptr
        if out is not None:
            optr, on, odtype = _buffer(out)
            if (on, odtype) != (n, dtype):
                raise ValueError("esa: out must have buf's dtype and size")
        return ptr, optr, n, dtype

    def _raise(self, rc, what):
        why = library.esa_worker_error(self._w).decode(errors="replace")
        raise EsaError(-rc, "esa: %s: %s" % (what, why or library.esa_strerror(rc).decode()))

    def allreduce(self, buf, out=None):
        """The sum over every rank of the job of buf's elements: into buf,
        or into out (of buf's dtype and size; buf is then left as it was).
        Returns where the sum is."""
        with self._lock:
            ptr, optr, n, dtype = self._args(buf, out)
            rc = library.esa_allreduce(self._w, dtype, ptr, optr, n)
            if rc:
                self._raise(rc, "allreduce")
        return buf if out is None else out

    def allreduce_start(self, buf, out=None):
        """Start the same allreduce without waiting: a Request.  Several may
        be in flight; they stream in the order started, through one window.
        buf and out must stay untouched until the request is done."""
        with self._lock:
            ptr, optr, n, dtype = self._args(buf, out)
            r = library.esa_allreduce_start(self._w, dtype, ptr, optr, n)
            if not r:
                e = ctypes.get_errno() or errno.EINVAL
                self._raise(-e, "allreduce_start")
            req = Request(self, r, buf if out is None else out, buf)
            self._reqs.add(req)
            return req

    def progress(self, timeout_ms=0):
        """Drive every request for at most timeout_ms: the number still running."""
        with self._lock:
            if not self._w:
                raise ValueError("esa: worker closed")
            rc = library.esa_progress(self._w, int(timeout_ms))
            if rc < 0:
                self._raise(rc, "progress")
            return rc

    def set_run(self, run):
        """Set the run number (libesa's `run`) before the first allreduce."""
        if not self._w:
            raise ValueError("esa: worker closed")
        with self._lock:
            rc = library.esa_worker_set_run(self._w, run)
        if rc:
            raise EsaError(-rc, "esa: set_run: %s" % (
                "an allreduce has started" if rc == -errno.EBUSY else
                library.esa_strerror(rc).decode()))
        self.run = run

    def _stats(self):
        st = _Stats()
        with self._lock:
            if not self._w:
                raise ValueError("esa: worker closed")
            library.esa_worker_stats(self._w, ctypes.byref(st), ctypes.sizeof(st))
        return st

    def stats(self):
        """The worker's counters (libesa's struct esa_stats) as a dict."""
        st = self._stats()
        return {k: getattr(st, k) for k in _STATS}

    def rtt_hist(self):
        """The round-trip histogram (esa_stats.rtt_hist): bucket i counts the
        chunks answered in at most 2^i microseconds, the last every longer
        one; it adds up to stats()["rtt_samples"]."""
        return list(self._stats().rtt_hist)

    def close(self):
        """Close the worker; requests still running are abandoned."""
        with self._lock:
            for r in list(self._reqs):
                r._free()
            if self._w:
                library.esa_worker_close(self._w)
                self._w = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if hasattr(self, "_lock"):
            self.close()


class Request:
    """An allreduce in flight (Worker.allreduce_start): test() or wait().

    Done, it has freed libesa's request; its result is where the sum went
    (`result`).  An error of the allreduce is raised by test() and wait()
    as EsaError (ERANGE: NaN or infinity in some rank's block, whose
    elements are NaN; the worker goes on)."""

    def __init__(self, worker, handle, result, source):
        self.worker = worker
        self.result = result
        self._src = source          # kept alive until done
        self._r = handle
        self.status = None

    def _free(self):
        if self._r:
            library.esa_request_free(self._r)
            self._r = None
            self.worker._reqs.discard(self)

    def _done(self, status):
        self.status = status
        self._free()
        self._src = None
        if status:
            self.worker._raise(status, "allreduce")
        return True

    def test(self):
        """True when done (raises its error), False while running."""
        if self.status is not None:
            return self._done(self.status) if self.status else True
        with self.worker._lock:
            st = ctypes.c_int(0)
            rc = library.esa_test(self._r, ctypes.byref(st))
            if rc < 0:
                self._done(rc)
            return self._done(st.value) if rc == 1 else False

    def wait(self, timeout_ms=-1):
        """Block until done (True; raises its error) or timeout_ms passes
        (False); -1: no limit."""
        if self.status is not None:
            return self.test()
        with self.worker._lock:
            rc = library.esa_wait(self._r, int(timeout_ms))
            if rc == -errno.EAGAIN:
                return False
            return self._done(rc)
