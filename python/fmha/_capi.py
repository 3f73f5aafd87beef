"""The C API of libfmha_runtime.so through ctypes: status codes and the
values of fmha_runtime.h, the structures, the library loader."""

import ctypes
import os
import sys
import threading

# Status codes, targets, dtypes: the values of fmha_runtime.h.
_STATUS_NAMES = {
    0: "FMHA_SUCCESS",
    1: "FMHA_ERROR_INVALID_ARGUMENT",
    2: "FMHA_ERROR_BAD_BUNDLE",
    3: "FMHA_ERROR_PROBLEM_MISMATCH",
    4: "FMHA_ERROR_BACKEND_UNAVAILABLE",
    5: "FMHA_ERROR_LOAD_FAILED",
    6: "FMHA_ERROR_LAUNCH_FAILED",
    7: "FMHA_ERROR_OUT_OF_MEMORY",
    8: "FMHA_ERROR_IO",
}
TARGET_CPU, TARGET_CUDA, TARGET_HIP = 0, 1, 2
_TARGET_NAMES = {TARGET_CPU: "cpu", TARGET_CUDA: "cuda", TARGET_HIP: "hip"}
_DTYPE_NAMES = {0: "f32", 1: "f16", 2: "bf16"}
_KIND_NAMES = {0: "fwd", 1: "bwd", 2: "merge", 3: "acc"}
# Bundle dtype -> the torch dtype's str().
_TORCH_DTYPES = {"f32": "torch.float32", "f16": "torch.float16",
                 "bf16": "torch.bfloat16"}
_BUNDLE_DTYPES = {v: k for k, v in _TORCH_DTYPES.items()}


class FmhaError(RuntimeError):
    """A failed runtime call: `status` is the FMHA_ERROR_* name, the message
    the runtime's one-line explanation."""

    def __init__(self, status, message):
        self.status = _STATUS_NAMES.get(status, "FMHA_ERROR_%d" % status)
        self.code = status
        super().__init__("%s: %s" % (self.status, message))


class _Problem(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in ("b", "hq", "hk", "sq", "sk", "d", "dv")]


class _KernelInfo(ctypes.Structure):
    _fields_ = [
        ("target", ctypes.c_int),
        ("kind", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("hq", ctypes.c_int64),
        ("hk", ctypes.c_int64),
        ("d", ctypes.c_int64),
        ("dv", ctypes.c_int64),
        ("block_m", ctypes.c_int64),
        ("block_n", ctypes.c_int64),
        ("scale", ctypes.c_float),
        ("effective_scale", ctypes.c_float),
        ("softcap", ctypes.c_float),
        ("mask", ctypes.c_char_p),
        ("kernel", ctypes.c_char_p),
        ("chip", ctypes.c_char_p),
        ("block_threads", ctypes.c_int64),
        ("shared_bytes", ctypes.c_int64),
        ("abi", ctypes.c_char_p),
        ("binary_format", ctypes.c_char_p),
        ("deterministic", ctypes.c_int),
        ("bundle_version", ctypes.c_int),
        ("num_kernels", ctypes.c_int),
    ]


# fmha_runtime.h: the interface version these bindings are written for, and
# the kinds of a named launch argument (fmhaArg).
API_VERSION = 2
_ARG_SIZE, _ARG_TENSOR = 0, 1


class _Arg(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int),
        ("data", ctypes.c_void_p),
        ("value", ctypes.c_int64),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("num_strides", ctypes.c_int64),
    ]


def _launch_args(sizes, tensors):
    """The fmhaArg array of named sizes (ints) and tensors: an address, or
    (address, strides in elements) for a strided operand."""
    items = [(n, _ARG_SIZE, None, int(v), None) for n, v in sizes.items()]
    for n, t in tensors.items():
        ptr, strides = t if isinstance(t, tuple) else (t, None)
        if ptr:
            items.append((n, _ARG_TENSOR, int(ptr), 0, strides))
    args = (_Arg * max(len(items), 1))()
    for a, (name, kind, data, value, strides) in zip(args, items):
        a.name, a.kind, a.data, a.value = name.encode(), kind, data, value
        if strides is not None:
            # The structure keeps the array alive (ctypes' _objects).
            a.strides = (ctypes.c_int64 * len(strides))(*[int(x) for x in strides])
            a.num_strides = len(strides)
    return args, len(items)


#
# The library
#

_lib = None
_lib_lock = threading.Lock()
_LIB_NAME = "libfmha_runtime.so"


def _library_candidates():
    """Where libfmha_runtime.so is looked for, in order."""
    env = os.environ.get("FMHA_RUNTIME_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, _LIB_NAME)]
    # A source checkout: python/fmha/ next to build*/lib/.
    root = os.path.dirname(os.path.dirname(here))
    try:
        builds = sorted(d for d in os.listdir(root) if d.startswith("build"))
    except OSError:
        builds = []
    found += [os.path.join(root, d, "lib", _LIB_NAME) for d in builds]
    return found


def _declare(lib):
    c = ctypes
    vp, i = c.c_void_p, c.c_int
    sigs = {
        "fmhaGetLastError": (c.c_char_p, []),
        "fmhaStatusString": (c.c_char_p, [i]),
        "fmhaGetVersion": (c.c_char_p, []),
        "fmhaGetApiVersion": (i, []),
        "fmhaSetHostThreads": (i, [i]),
        "fmhaGetHostThreads": (i, []),
        "fmhaKernelGetManifest": (i, [vp, c.POINTER(c.c_char_p)]),
        "fmhaKernelLaunch": (i, [vp, c.POINTER(_Arg), c.c_size_t, vp, c.c_size_t, vp]),
        "fmhaKernelWorkspaceBytes": (i, [vp, c.POINTER(_Arg), c.c_size_t,
                                         c.POINTER(c.c_size_t)]),
        "fmhaKernelLoadFile": (i, [c.c_char_p, c.POINTER(vp)]),
        "fmhaKernelLoadBytes": (i, [c.c_void_p, c.c_size_t, c.POINTER(vp)]),
        "fmhaKernelGetInfo": (i, [vp, c.POINTER(_KernelInfo)]),
        "fmhaKernelCheckProblem": (i, [vp, c.POINTER(_Problem)]),
        "fmhaKernelRunForward": (i, [vp, c.POINTER(_Problem), vp, vp, vp, vp, vp, vp]),
        "fmhaKernelRunForwardDevice": (i, [vp, c.POINTER(_Problem), vp, vp, vp, vp, vp, vp]),
        "fmhaKernelBackwardWorkspaceBytes": (i, [vp, c.POINTER(_Problem),
                                                 c.POINTER(c.c_size_t)]),
        "fmhaKernelRunBackwardDeviceWorkspace": (i, [vp, c.POINTER(_Problem)] + [vp] * 10 +
                                                 [c.c_size_t, vp]),
        "fmhaKernelGetDevice": (i, [vp, c.POINTER(i)]),
        "fmhaBackendDescription": (i, [i, c.POINTER(c.c_char_p)]),
        "fmhaDeviceMalloc": (i, [i, c.c_size_t, c.POINTER(vp)]),
        "fmhaDeviceFree": (i, [i, vp]),
        "fmhaMemcpyHostToDevice": (i, [i, vp, vp, c.c_size_t]),
        "fmhaMemcpyDeviceToHost": (i, [i, vp, vp, c.c_size_t]),
        "fmhaDeviceSynchronize": (i, [i, vp]),
        "fmhaKernelDestroy": (None, [vp]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def load_library(path=None):
    """Loads (once) and returns the runtime library. `path`, else
    $FMHA_RUNTIME_LIB, else libfmha_runtime.so next to this package or in a
    build*/lib/ folder of the source checkout."""
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        candidates = [path] if path else _library_candidates()
        errors = []
        for cand in candidates:
            if not os.path.exists(cand):
                errors.append("%s: no such file" % cand)
                continue
            try:
                lib = ctypes.CDLL(cand)
                _declare(lib)
            except (OSError, AttributeError) as e:
                errors.append("%s: %s" % (cand, e))
                continue
            version = lib.fmhaGetApiVersion()
            if version != API_VERSION:
                errors.append("%s: C API version %d, these bindings need %d"
                              % (cand, version, API_VERSION))
                continue
            _lib = lib
            return lib
        raise OSError(
            "cannot load the FMHA runtime (%s); build it (target fmha_runtime) "
            "or set FMHA_RUNTIME_LIB to its path. Tried: %s"
            % (_LIB_NAME, "; ".join(errors) or "nothing"))


def _check(status):
    if status != 0:
        message = _lib.fmhaGetLastError().decode("utf-8", "replace")
        raise FmhaError(status, message)


def runtime_version():
    return load_library().fmhaGetVersion().decode()


def set_num_threads(threads):
    """Sets the threads that cpu bundles run their parallel loops on, for the
    process: 1 to 1024, or 0 for the default ($FMHA_NUM_THREADS, else every
    hardware thread)."""
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError("fmha.set_num_threads takes an int, not %s"
                        % type(threads).__name__)
    _check(load_library().fmhaSetHostThreads(threads))


def get_num_threads():
    """The threads cpu bundles run their parallel loops on now."""
    return load_library().fmhaGetHostThreads()


def backend_description(target="cuda"):
    """The runtime's description of a backend ("cuda: NVIDIA H200 (sm_90,
    device 0)"); raises FmhaError when it is unavailable."""
    lib = load_library()
    _bind_torch_device()
    out = ctypes.c_char_p()
    _check(lib.fmhaBackendDescription(_target_value(target), ctypes.byref(out)))
    return out.value.decode()


def _target_value(target):
    for value, name in _TARGET_NAMES.items():
        if target in (value, name):
            return value
    raise ValueError("unknown target %r (expected cpu, cuda or hip)" % (target,))


def _bind_torch_device():
    """Before the runtime's CUDA backend starts: bind it to torch's current
    device when torch has initialized CUDA and FMHA_CUDA_DEVICE is unset."""
    torch = sys.modules.get("torch")
    if torch is None or "FMHA_CUDA_DEVICE" in os.environ:
        return
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            os.environ["FMHA_CUDA_DEVICE"] = str(torch.cuda.current_device())
    except Exception:
        pass
