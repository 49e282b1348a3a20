# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""ESA in-network aggregation from Python: libesa through ctypes.

    import esa
    w = esa.Worker(switch="10.255.0.1", job=7, rank=0, workers=4,
                   local="10.9.1.2:6007")
    w.allreduce(tensor)          # in place: a contiguous CPU float32/int32
                                 # torch tensor or numpy array

No compiled extension: the package loads libesa.so, found through
$ESA_LIBESA, next to this package, in the source tree's build/, or on the
system's library path.  See docs/torch.md and esa.ddp for DDP.
"""
import ctypes
import ctypes.util
import errno
import os

__all__ = ["Worker", "EsaError", "error_bound", "library"]

_INT32, _FLOAT32 = 0, 1


class EsaError(OSError):
    """A libesa call failed; errno and the library's reason."""


def _find_library():
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.environ.get("ESA_LIBESA"),
        os.path.join(here, "libesa.so"),
        os.path.join(here, "..", "..", "..", "build", "libesa.so"),
        ctypes.util.find_library("esa"),
    ]
    for c in candidates:
        if c and (os.path.sep not in c or os.path.exists(c)):
            try:
                return ctypes.CDLL(c, use_errno=True)
            except OSError:
                continue
    raise ImportError("libesa.so not found: build it (make) or set ESA_LIBESA")


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
        "esa_worker_set_run": (c.c_int, [c.c_void_p, c.c_uint32]),
        "esa_allreduce": (c.c_int, [c.c_void_p, c.c_int, c.c_void_p,
                                    c.c_void_p, c.c_size_t]),
        "esa_worker_stat": (c.c_int64, [c.c_void_p, c.c_char_p]),
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

_STATS = ("ops", "elems", "chunks", "tx_packets", "tx_resends", "rx_packets",
          "rx_results", "rx_from_ps", "rx_duplicates", "rx_stale",
          "rx_invalid", "overflows", "redos", "scale_chunks", "fetch_rx",
          "fetch_answered", "send_again", "rtt_us_sum", "rtt_samples")


def error_bound(block_absmax, exact_sum, nworkers, headroom=-1):
    """libesa's bound of |float32 allreduce result - exact sum| (docs/library.md)."""
    return library.esa_f32_error_bound(block_absmax, exact_sum, nworkers,
                                       headroom)


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
    job, rank, workers, local, values, window, timeout_ms, priority, prio,
    prio_max, netns, ... given as keyword arguments, and/or a config file.
    """

    def __init__(self, config_file=None, **settings):
        self._w = None
        self.run = 0
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
            err = ctypes.create_string_buffer(256)
            self._w = library.esa_worker_open(cfg, err, len(err))
            if not self._w:
                e = ctypes.get_errno() or errno.EINVAL
                raise EsaError(e, "esa: " + err.value.decode(errors="replace"))
        finally:
            library.esa_config_free(cfg)
        self.workers = int(settings.get("workers", 0))

    @staticmethod
    def _check_cfg(cfg, rc):
        if rc:
            raise EsaError(-rc, "esa: " + library.esa_config_error(cfg).decode(
                errors="replace"))

    def allreduce(self, buf):
        """Replace buf's elements by their sum over every rank of the job."""
        if not self._w:
            raise ValueError("esa: worker closed")
        ptr, n, dtype = _buffer(buf)
        rc = library.esa_allreduce(self._w, dtype, ptr, ptr, n)
        if rc:
            why = library.esa_worker_error(self._w).decode(errors="replace")
            raise EsaError(-rc, "esa: allreduce: %s" % (
                why or library.esa_strerror(rc).decode()))
        return buf

    def set_run(self, run):
        """Set the run number (libesa's `run`) before the first allreduce."""
        if not self._w:
            raise ValueError("esa: worker closed")
        rc = library.esa_worker_set_run(self._w, run)
        if rc:
            raise EsaError(-rc, "esa: set_run: %s" % (
                "an allreduce has started" if rc == -errno.EBUSY else
                library.esa_strerror(rc).decode()))
        self.run = run

    def stats(self):
        """The worker's counters (libesa's struct esa_stats) as a dict."""
        return {k: library.esa_worker_stat(self._w, k.encode()) for k in _STATS}

    def close(self):
        if self._w:
            library.esa_worker_close(self._w)
            self._w = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
