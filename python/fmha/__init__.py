"""FMHA from Python: run compiled attention bundles on PyTorch tensors.

The runtime is the project's C API (runtime/include/fmha/Runtime/
fmha_runtime.h) in libfmha_runtime.so, loaded with ctypes. No compiler is
needed where this runs: bundles come from ``fmha-compile``, here or on
another machine.

    import fmha
    kernel = fmha.Kernel("attn.fmha")           # one compiled signature
    o, lse = kernel.forward(q, k, v)            # q, k, v: CUDA tensors, BHSD

    o = fmha.attention(q, k, v, mask="b")       # finds or compiles the bundle
    o.sum().backward()                          # gradients through the bwd bundle

    dq, dk, dv = fmha.Kernel("attn-bwd.fmha").backward(q, k, v, o, lse, do)

Tensors are BHSD: q [B, Hq, Sq, D], k [B, Hk, Sk, D], v [B, Hk, Sk, Dv],
o [B, Hq, Sq, Dv] in the bundle's dtype, lse [B, Hq, Sq] float32 (DESIGN.md
section 1), in any strides with a contiguous last dim where the bundle
takes strided operands (BSHD memory and transposed views without a copy),
else contiguous. A cuda bundle runs on CUDA tensors of the
device the runtime binds to, on torch's current stream; a cpu bundle on CPU
tensors. fmha.attention is differentiable: when q, k or v requires grad,
the forward saves o and lse and loss.backward() runs the backward bundle of
the same signature (kind=bwd; `deterministic=True` picks the bit-identical
one; the default is the atomic one, default_deterministic()), with its
workspace allocated as a torch tensor on the current stream.

Environment: FMHA_RUNTIME_LIB (the library), FMHA_CACHE (bundle cache,
default ~/.cache/fmha; bundles this machine compiles go to a folder of it
named after the fmha-compile build, so that an upgrade recompiles),
FMHA_COMPILE (the fmha-compile binary, default from
PATH), FMHA_CHIP (the chip to compile for, default from the device),
FMHA_CUDA_LIBRARY and FMHA_CUDA_DEVICE (read by the runtime).

torch is imported only when a function needs it, so that the argument
checks, bundle names and the library loader work without it.
"""

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

__all__ = [
    "FmhaError",
    "Kernel",
    "attention",
    "bundle_name",
    "compile_bundle",
    "find_bundle",
    "load_library",
    "runtime_version",
]

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
_KIND_NAMES = {0: "fwd", 1: "bwd", 2: "merge"}
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


#
# Argument checks (duck-typed: anything with shape, dtype, device,
# is_contiguous() and data_ptr(), so that they run without torch)
#


def _dtype_name(t):
    return str(t.dtype)


def _device_name(t):
    dev = t.device
    kind = getattr(dev, "type", str(dev))
    index = getattr(dev, "index", None)
    return kind if index is None else "%s:%d" % (kind, index)


def check_forward_args(info, q, k, v, o=None, lse=None, device_index=None, strided=()):
    """Checks tensors against a kernel's signature (`info`: a dict with
    target, dtype, hq, hk, d, dv). Returns (B, Sq, Sk). Raises ValueError
    naming the tensor, what was expected and what it got. Tensors named in
    `strided` (the bundle takes them in any strides, Kernel.strided) may be
    views with a contiguous last dim; the others must be contiguous."""
    want_dtype = _TORCH_DTYPES[info["dtype"]]
    want_device = "cpu" if info["target"] == "cpu" else "cuda"

    def shape_of(name, t, rank, layout):
        try:
            shape = tuple(int(x) for x in t.shape)
        except (AttributeError, TypeError):
            raise ValueError("%s: expected a tensor, got %s" % (name, type(t).__name__))
        if len(shape) != rank:
            raise ValueError("%s: expected a %d-d %s tensor, got shape %s"
                             % (name, rank, layout, shape))
        return shape

    tensors = [("q", q, 4, "BHSD [B, Hq, Sq, D]"), ("k", k, 4, "BHSD [B, Hk, Sk, D]"),
               ("v", v, 4, "BHSD [B, Hk, Sk, Dv]")]
    if o is not None:
        tensors.append(("o", o, 4, "BHSD [B, Hq, Sq, Dv]"))
    if lse is not None:
        tensors.append(("lse", lse, 3, "[B, Hq, Sq]"))
    shapes = {}
    for name, t, rank, layout in tensors:
        shapes[name] = shape_of(name, t, rank, layout)
        dt = _dtype_name(t)
        expected = "torch.float32" if name == "lse" else want_dtype
        if dt != expected:
            raise ValueError("%s: expected dtype %s%s, got %s"
                             % (name, expected,
                                "" if name == "lse" else " (the bundle's %s)" % info["dtype"],
                                dt))
        kind = getattr(t.device, "type", str(t.device))
        if kind != want_device:
            raise ValueError("%s is on %s; a %s bundle runs on %s tensors"
                             % (name, _device_name(t), info["target"], want_device))
        if want_device == "cuda" and device_index is not None:
            index = getattr(t.device, "index", None)
            if index is not None and index != device_index:
                raise ValueError(
                    "%s is on %s but the FMHA runtime runs on cuda:%d (set "
                    "FMHA_CUDA_DEVICE before the first cuda bundle is loaded)"
                    % (name, _device_name(t), device_index))
        if name in strided:
            if not _rows_contiguous(t):
                raise ValueError("%s: expected a contiguous last dim (stride 1), got "
                                 "strides %s" % (name, tuple(t.stride())))
        elif not t.is_contiguous():
            raise ValueError("%s: expected a contiguous BHSD tensor (call "
                             ".contiguous(), or use a bundle compiled with "
                             "--strides=any)" % name)
    b, hq, sq, d = shapes["q"]
    _, hk, sk, _ = shapes["k"]

    def expect(name, dim, what, got, want):
        if got != want:
            raise ValueError("%s: %s (dim %d) is %d, expected %d" % (name, what, dim, got, want))

    expect("q", 1, "Hq", hq, info["hq"])
    expect("q", 3, "D", d, info["d"])
    expect("k", 0, "B", shapes["k"][0], b)
    expect("k", 1, "Hk", hk, info["hk"])
    expect("k", 3, "D", shapes["k"][3], info["d"])
    expect("v", 0, "B", shapes["v"][0], b)
    expect("v", 1, "Hk", shapes["v"][1], hk)
    expect("v", 2, "Sk", shapes["v"][2], sk)
    expect("v", 3, "Dv", shapes["v"][3], info["dv"])
    if o is not None:
        for dim, (what, want) in enumerate((("B", b), ("Hq", hq), ("Sq", sq), ("Dv", info["dv"]))):
            expect("o", dim, what, shapes["o"][dim], want)
    if lse is not None:
        for dim, (what, want) in enumerate((("B", b), ("Hq", hq), ("Sq", sq))):
            expect("lse", dim, what, shapes["lse"][dim], want)
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse)):
        if t is not None and _device_name(t) != _device_name(q):
            raise ValueError("%s is on %s, q on %s" % (name, _device_name(t), _device_name(q)))
    return b, sq, sk


def _rows_contiguous(t):
    """Whether `t`'s last dim is contiguous (stride 1, or of size 1)."""
    return int(t.shape[-1]) <= 1 or int(t.stride()[-1]) == 1


def _strided_arg(t, strided):
    """A launch's tensor argument: the address, with the strides when the
    bundle takes the operand strided."""
    if strided:
        return (t.data_ptr(), tuple(int(x) for x in t.stride()))
    return t.data_ptr()


#
# Kernels
#


class Kernel:
    """One loaded bundle. `forward` runs it on tensors; `forward_ptrs` on raw
    pointers (device addresses for cuda bundles)."""

    def __init__(self, bundle_path):
        self._lib = load_library()
        self._handle = None
        self.path = os.fspath(bundle_path)
        _bind_torch_device()
        handle = ctypes.c_void_p()
        _check(self._lib.fmhaKernelLoadFile(self.path.encode(), ctypes.byref(handle)))
        self._handle = handle
        raw = _KernelInfo()
        _check(self._lib.fmhaKernelGetInfo(handle, ctypes.byref(raw)))
        device = ctypes.c_int(-1)
        _check(self._lib.fmhaKernelGetDevice(handle, ctypes.byref(device)))
        self.device_index = device.value
        self.info = {
            "target": _TARGET_NAMES.get(raw.target, str(raw.target)),
            "kind": _KIND_NAMES.get(raw.kind, str(raw.kind)),
            "deterministic": bool(raw.deterministic),
            "dtype": _DTYPE_NAMES.get(raw.dtype, str(raw.dtype)),
            "hq": raw.hq, "hk": raw.hk, "d": raw.d, "dv": raw.dv,
            "block_m": raw.block_m, "block_n": raw.block_n,
            "block_threads": raw.block_threads, "shared_bytes": raw.shared_bytes,
            "scale": raw.effective_scale, "softcap": raw.softcap,
            "mask": raw.mask.decode(), "kernel": raw.kernel.decode(),
            "chip": raw.chip.decode(), "abi": raw.abi.decode(),
            "binary_format": raw.binary_format.decode(),
            "bundle_version": raw.bundle_version, "num_kernels": raw.num_kernels,
        }

    @property
    def strided(self):
        """The operands the bundle takes in any strides (the manifest's
        `strided`), with the byte alignment each needs of its address and
        strides (`align`, 0: the element's): {name: align}."""
        found = self.__dict__.get("_strided")
        if found is None:
            found = {}
            for line in self.manifest.splitlines():
                words = line.split()
                if len(words) > 1 and words[0] == "operand" and "strided" in words:
                    align = 0
                    if "align" in words:
                        align = int(words[words.index("align") + 1])
                    found[words[1]] = align
            self.__dict__["_strided"] = found
        return found

    def takes_view(self, name, t):
        """Whether tensor `t` can be passed as operand `name` without a copy:
        the bundle takes it strided, its last dim is contiguous, and its
        address and other strides meet the operand's alignment."""
        if name not in self.strided or not _rows_contiguous(t):
            return False
        align = self.strided[name]
        if not align:
            return True
        size = t.element_size()
        if t.data_ptr() % align:
            return False
        return all(int(n) <= 1 or (int(st) * size) % align == 0
                   for n, st in zip(t.shape[:-1], t.stride()[:-1]))

    @property
    def manifest(self):
        """The bundle's launch manifest, as text (fmha/Runtime/Manifest.h)."""
        text = ctypes.c_char_p()
        _check(self._lib.fmhaKernelGetManifest(self._handle, ctypes.byref(text)))
        return text.value.decode()

    def launch(self, sizes, tensors, workspace=0, workspace_bytes=0, stream=0):
        """The generic launch: `sizes` and `tensors` map the manifest's names
        to ints and to addresses (device pointers for a GPU bundle, host ones
        for cpu; a 0 address leaves an optional operand out). Queued on
        `stream` (a CUstream int) without waiting, unless an optional operand
        is left out. `workspace` 0: the kernel object's own."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        args, n = _launch_args(sizes, tensors)
        _check(self._lib.fmhaKernelLaunch(
            self._handle, args, n, workspace or None,
            workspace_bytes if workspace else 0, stream or None))

    def workspace_bytes(self, sizes):
        """Bytes of workspace a launch with these sizes needs."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        args, n = _launch_args(sizes, {})
        out = ctypes.c_size_t()
        _check(self._lib.fmhaKernelWorkspaceBytes(self._handle, args, n, ctypes.byref(out)))
        return out.value

    def __getattr__(self, name):
        info = self.__dict__.get("info")
        if info is not None and name in info:
            return info[name]
        raise AttributeError(name)

    def __repr__(self):
        i = self.info
        return ("fmha.Kernel(%r: %s %s %s hq=%d hk=%d d=%d dv=%d mask=%s%s)"
                % (self.path, i["kind"], i["target"], i["dtype"], i["hq"], i["hk"], i["d"],
                   i["dv"], i["mask"], " deterministic" if i["deterministic"] else ""))

    def close(self):
        if self._handle is not None:
            self._lib.fmhaKernelDestroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _problem(self, b, sq, sk):
        i = self.info
        return _Problem(b, i["hq"], i["hk"], sq, sk, i["d"], i["dv"])

    def check_problem(self, b, sq, sk):
        """Raises FmhaError when (b, sq, sk) is not a problem this kernel
        runs."""
        _check(self._lib.fmhaKernelCheckProblem(self._handle, ctypes.byref(self._problem(b, sq, sk))))

    def forward_ptrs(self, b, sq, sk, q, k, v, o, lse, stream=0):
        """Launches on raw addresses (ints): device pointers for a cuda
        bundle, host pointers for a cpu bundle; `stream` a CUstream (int).
        lse may be 0: scratch, and the call waits for the kernel."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        if self.info["kind"] != "fwd":
            raise FmhaError(3, "bundle '%s' is a %s kernel (kind=%s), not a forward one"
                            % (self.path, self.info["kind"], self.info["kind"]))
        self.check_problem(b, sq, sk)
        self.launch({"b": b, "sq": sq, "sk": sk},
                    {"q": q, "k": k, "v": v, "o": o, "lse": lse}, stream=stream)

    def forward(self, q, k, v, o=None, lse=None, stream=None):
        """o, lse = kernel.forward(q, k, v): attention on BHSD tensors of the
        bundle's dtype (contiguous, or any views with a contiguous last dim
        where the bundle takes strides, Kernel.strided) (CUDA tensors for a cuda bundle, on
        torch's current stream unless `stream` (a CUstream int) is given).
        o and lse are allocated when not given. Returns (o, lse)."""
        device_index = self.device_index if self.info["target"] == "cuda" else None
        b, sq, sk = check_forward_args(self.info, q, k, v, o, lse, device_index,
                                       self.strided)
        if o is None or lse is None:
            torch = _torch()
            if o is None:
                o = torch.empty((b, self.info["hq"], sq, self.info["dv"]), dtype=q.dtype, device=q.device)
            if lse is None:
                lse = torch.empty((b, self.info["hq"], sq), dtype=torch.float32, device=q.device)
        if stream is None:
            stream = _current_stream(q) if self.info["target"] == "cuda" else 0
        st = self.strided
        self.forward_ptrs(b, sq, sk, _strided_arg(q, "q" in st), _strided_arg(k, "k" in st),
                          _strided_arg(v, "v" in st), _strided_arg(o, "o" in st),
                          _strided_arg(lse, "lse" in st), stream)
        return o, lse

    def backward_workspace_bytes(self, b, sq, sk):
        """Bytes of device workspace a backward of (b, sq, sk) needs (0 for
        a cpu bundle): fmhaKernelBackwardWorkspaceBytes."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        out = ctypes.c_size_t()
        _check(self._lib.fmhaKernelBackwardWorkspaceBytes(
            self._handle, ctypes.byref(self._problem(b, sq, sk)), ctypes.byref(out)))
        return out.value

    def backward_ptrs(self, b, sq, sk, q, k, v, o, lse, do, dq, dk, dv, workspace=0,
                      workspace_bytes=0, stream=0):
        """Launches a backward bundle on raw addresses (ints), on `stream`
        (a CUstream int), without waiting. `workspace` 0: the kernel
        object's own (Runtime.h, BackwardArgs)."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        if self.info["kind"] != "bwd":
            raise FmhaError(3, "bundle '%s' is a %s kernel (kind=%s), not a backward one"
                            % (self.path, self.info["kind"], self.info["kind"]))
        self.check_problem(b, sq, sk)
        tensors = {"q": q, "k": k, "v": v, "o": o, "lse": lse, "dO": do, "dq": dq,
                   "dk": dk, "dv": dv}
        for name, ptr in tensors.items():
            if not (ptr[0] if isinstance(ptr, tuple) else ptr):
                raise FmhaError(1, "null pointer for %s" % name)
        self.launch({"b": b, "sq": sq, "sk": sk}, tensors, workspace, workspace_bytes,
                    stream)

    def backward(self, q, k, v, o, lse, do, dq=None, dk=None, dv=None, workspace=None,
                 stream=None):
        """dq, dk, dv = kernel.backward(q, k, v, o, lse, do) for a kind=bwd
        bundle: o and lse are the forward's, do the gradient of o (shaped
        and typed like o); all contiguous. dq, dk, dv (shaped like q, k, v)
        are allocated when not given. A cuda bundle runs on torch's current
        stream (or `stream`, a CUstream int) with `workspace`, a uint8 tensor
        of at least backward_workspace_bytes(B, Sq, Sk) bytes, allocated on
        that stream when not given. Returns (dq, dk, dv)."""
        if self.info["kind"] != "bwd":
            raise ValueError("%s is a %s bundle; backward needs a kind=bwd one"
                             % (self.path, self.info["kind"]))
        cuda = self.info["target"] == "cuda"
        device_index = self.device_index if cuda else None
        st = self.strided
        b, sq, sk = check_forward_args(self.info, q, k, v, o, lse, device_index, st)
        _check_like("do", do, "o", o, "dO" in st)
        for name, t, like_name, like in (("dq", dq, "q", q), ("dk", dk, "k", k),
                                         ("dv", dv, "v", v)):
            if t is not None:
                _check_like(name, t, like_name, like, name in st)
        if dq is None or dk is None or dv is None:
            # empty_like keeps a dense view's strides (preserve_format): the
            # gradients come back in the layout of q, k, v.
            torch = _torch()
            dq = torch.empty_like(q) if dq is None else dq
            dk = torch.empty_like(k) if dk is None else dk
            dv = torch.empty_like(v) if dv is None else dv
            for name, t in (("dq", dq), ("dk", dk), ("dv", dv)):
                if name not in st and not t.is_contiguous():
                    raise ValueError("%s: this bundle writes contiguous tensors only" % name)
        if stream is None:
            stream = _current_stream(q) if cuda else 0
        need = self.backward_workspace_bytes(b, sq, sk)
        if workspace is None and need:
            # On the current stream: torch's allocator keeps it until the
            # launches on that stream are done.
            workspace = _torch().empty(need, dtype=_torch().uint8, device=q.device)
        ws_ptr, ws_bytes = 0, 0
        if workspace is not None and need:
            if _dtype_name(workspace) != "torch.uint8":
                raise ValueError("workspace: expected a torch.uint8 tensor, got %s"
                                 % _dtype_name(workspace))
            ws_ptr = workspace.data_ptr()
            ws_bytes = 1
            for n in workspace.shape:
                ws_bytes *= int(n)
        a = {name: _strided_arg(t, name in st) for name, t in
             (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse), ("dO", do), ("dq", dq),
              ("dk", dk), ("dv", dv))}
        self.backward_ptrs(b, sq, sk, a["q"], a["k"], a["v"], a["o"], a["lse"], a["dO"],
                           a["dq"], a["dk"], a["dv"], ws_ptr, ws_bytes, stream)
        return dq, dk, dv


def _check_like(name, t, like_name, like, strided=False):
    """Raises ValueError unless `t` has the shape, dtype and device of
    `like` and is contiguous (`strided`: its last dim is)."""
    shape = tuple(int(x) for x in t.shape)
    want = tuple(int(x) for x in like.shape)
    if shape != want:
        raise ValueError("%s: expected the shape of %s %s, got %s" % (name, like_name, want, shape))
    if _dtype_name(t) != _dtype_name(like):
        raise ValueError("%s: expected dtype %s (as %s), got %s"
                         % (name, _dtype_name(like), like_name, _dtype_name(t)))
    if _device_name(t) != _device_name(like):
        raise ValueError("%s is on %s, %s on %s" % (name, _device_name(t), like_name,
                                                     _device_name(like)))
    if strided:
        if not _rows_contiguous(t):
            raise ValueError("%s: expected a contiguous last dim (stride 1), got strides %s"
                             % (name, tuple(t.stride())))
    elif not t.is_contiguous():
        raise ValueError("%s: expected a contiguous tensor" % name)


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("this needs PyTorch (%s)" % e)
    return torch


def _current_stream(t):
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    return torch.cuda.current_stream(t.device).cuda_stream


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


#
# Bundles by signature
#


def _mask_token(mask):
    mask = str(mask).strip()
    if mask in ("none", ""):
        mask = "0"
    if not re.fullmatch(r"[0-9a-z:,\-]+", mask):
        raise ValueError("mask %r is not a mask spec (0, t, b, t:L,R[,S], "
                         "b:L,R[,S], xt:W, xb:W)" % mask)
    return mask.replace(":", "_").replace(",", "_").replace("-", "m")


def _number_token(x):
    return ("%.9g" % float(x)).replace("-", "m").replace("+", "")


def _check_kind(kind, deterministic):
    if kind not in ("fwd", "bwd"):
        raise ValueError("kind %r is not fwd or bwd" % (kind,))
    if deterministic and kind != "bwd":
        raise ValueError("deterministic applies to kind='bwd' bundles only")


def bundle_name(target, chip, dtype, hq, hk, d, dv=None, mask="0", scale=None,
                softcap=None, block_m=None, block_n=None, kind="fwd", deterministic=False):
    """The file name of a bundle for a signature, e.g.
    'fwd-cuda-sm_90a-bf16-hq16-hk4-d128-dv128-mask_b.fmha', or for a
    backward 'bwd-...-mask_b.fmha' ('bwd-...-det.fmha' when deterministic).
    Shared by fmha.attention's cache and test/gpu/make_bundles.py."""
    dv = d if dv is None else dv
    _check_kind(kind, deterministic)
    if dtype not in _TORCH_DTYPES:
        raise ValueError("dtype %r is not one of f32, f16, bf16" % (dtype,))
    if not re.fullmatch(r"[A-Za-z0-9_.]*", chip or ""):
        raise ValueError("chip %r has characters other than [A-Za-z0-9_.]" % (chip,))
    parts = [kind, target, chip or "host", dtype, "hq%d" % hq, "hk%d" % hk,
             "d%d" % d, "dv%d" % dv, "mask_" + _mask_token(mask)]
    if scale:
        parts.append("scale" + _number_token(scale))
    if softcap:
        parts.append("softcap" + _number_token(softcap))
    if block_m:
        parts.append("bm%d" % block_m)
    if block_n:
        parts.append("bn%d" % block_n)
    if deterministic:
        parts.append("det")
    return "-".join(parts) + ".fmha"


def cache_dir():
    return os.environ.get("FMHA_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "fmha")


def _compiler():
    env = os.environ.get("FMHA_COMPILE")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise FileNotFoundError("FMHA_COMPILE=%s is not an executable file" % env)
        return env
    path = shutil.which("fmha-compile")
    if not path:
        raise FileNotFoundError(
            "fmha-compile not found (set FMHA_COMPILE or put it on PATH)")
    return path


def compile_args(target, chip, dtype, hq, hk, d, dv=None, mask="0", scale=None,
                 softcap=None, block_m=None, block_n=None, kind="fwd", deterministic=False):
    """The fmha-compile arguments (without -o) for a signature."""
    dv = d if dv is None else dv
    _check_kind(kind, deterministic)
    args = ["--target=%s" % target]
    if chip:
        args.append("--chip=%s" % chip)
    args += ["--dtype=%s" % dtype, "--hq=%d" % hq, "--hk=%d" % hk, "-d=%d" % d,
             "--dv=%d" % dv, "--mask=%s" % mask]
    if scale:
        args.append("--scale=%.9g" % scale)
    if softcap:
        args.append("--softcap=%.9g" % softcap)
    if block_m:
        args.append("--block-m=%d" % block_m)
    if block_n:
        args.append("--block-n=%d" % block_n)
    if kind == "bwd":
        args.append("--bwd")
    if deterministic:
        args.append("--deterministic")
    return args


def compile_bundle(path, compiler=None, **signature):
    """Runs fmha-compile for `signature` (bundle_name's arguments) and writes
    the bundle to `path` atomically. Raises RuntimeError with the compiler's
    message on failure."""
    compiler = compiler or _compiler()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".fmha-", suffix=".tmp", dir=folder)
    os.close(fd)
    cmd = [compiler] + compile_args(**signature) + ["-o", tmp]
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s failed (exit %d): %s"
                               % (" ".join(cmd), r.returncode, (r.stderr or r.stdout).strip()))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


_compiler_ids = {}
_compiler_ids_lock = threading.Lock()


def compiler_id(path):
    """A short hash of the fmha-compile binary at `path` (its bytes): the
    cache folder of the bundles that build compiles (another build, other
    defaults or kernels, compiles its own)."""
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    with _compiler_ids_lock:
        found = _compiler_ids.get(key)
        if found is None:
            h = hashlib.sha1()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            found = _compiler_ids[key] = "fmha-compile-" + h.hexdigest()[:16]
        return found


def find_bundle(signature, bundle_dir=None, compile_missing=True):
    """The path of the bundle for `signature` (bundle_name's arguments): in
    `bundle_dir` if given; else in the cache (FMHA_CACHE, ~/.cache/fmha): in
    its folder of the fmha-compile found here (compiler_id), or, with none
    found, in the cache itself (bundles carried from a machine with LLVM).
    When it is missing and compile_missing, fmha-compile makes it there."""
    compiler, missing = None, None
    try:
        compiler = _compiler()
    except FileNotFoundError as e:
        missing = e
    folder = bundle_dir
    if not folder:
        folder = cache_dir()
        if compiler:
            folder = os.path.join(folder, compiler_id(compiler))
    path = os.path.join(folder, bundle_name(**signature))
    if os.path.exists(path):
        return path
    if not compile_missing:
        raise FileNotFoundError("no bundle %s" % path)
    if missing is not None:
        e = missing
        raise FileNotFoundError(
            "no bundle %s, and it cannot be compiled here: %s. Compile it "
            "where LLVM is: fmha-compile %s -o %s"
            % (path, e, " ".join(compile_args(**signature)), os.path.basename(path)))
    return compile_bundle(path, compiler=compiler, **signature)


def _chip_for(t):
    env = os.environ.get("FMHA_CHIP")
    if env:
        return env
    kind = getattr(t.device, "type", "cpu")
    if kind != "cuda":
        return ""
    major, minor = _torch().cuda.get_device_capability(t.device)
    # Hopper's wgmma/TMA need the arch-specific target.
    return "sm_%d%d%s" % (major, minor, "a" if (major, minor) == (9, 0) else "")


_kernels = {}
_kernels_lock = threading.Lock()


def _kernel_for(path):
    with _kernels_lock:
        k = _kernels.get(path)
        if k is None:
            k = _kernels[path] = Kernel(path)
        return k


_autograd_function = None


def _attention_function():
    """The torch.autograd.Function of fmha.attention (made on first use, so
    that this module imports without torch)."""
    global _autograd_function
    if _autograd_function is None:
        torch = _torch()

        class AttentionFunction(torch.autograd.Function):
            """o, lse = forward bundle(q, k, v); the backward bundle gives
            dq, dk, dv from q, k, v, o, lse and dO. lse has no gradient."""

            @staticmethod
            def forward(ctx, q, k, v, fwd, bwd, bshd):
                o = _output(fwd, q, v, bshd)
                o, lse = fwd.forward(q, k, v, o)
                ctx.save_for_backward(q, k, v, o, lse)
                ctx.bwd = bwd
                ctx.mark_non_differentiable(lse)
                return o, lse

            @staticmethod
            def backward(ctx, do, _dlse):
                q, k, v, o, lse = ctx.saved_tensors
                do = torch.zeros_like(o) if do is None else do
                # Views where the backward bundle takes them (it may be an
                # older, contiguous one), copies otherwise.
                bwd = ctx.bwd
                q, k, v, o, lse, do = (t if t.is_contiguous() or bwd.takes_view(n, t)
                                       else t.contiguous()
                                       for n, t in (("q", q), ("k", k), ("v", v), ("o", o),
                                                    ("lse", lse), ("dO", do)))
                dq, dk, dv = bwd.backward(q, k, v, o, lse, do)
                return dq, dk, dv, None, None, None

        _autograd_function = AttentionFunction
    return _autograd_function


def _output(kernel, q, v, bshd):
    """The o a forward writes: [B, Hq, Sq, Dv] of q's dtype and device, in
    BSHD memory when `bshd` and the bundle takes o strided (then
    o.transpose(1, 2) is contiguous), else contiguous; None lets the
    kernel allocate it."""
    if not bshd or "o" not in kernel.strided:
        return None
    b, hq, sq = (int(x) for x in q.shape[:3])
    return _torch().empty((b, sq, hq, int(v.shape[3])), dtype=q.dtype,
                          device=q.device).transpose(1, 2)


def _needs_grad(*tensors):
    if not any(getattr(t, "requires_grad", False) for t in tensors):
        return False
    torch = sys.modules.get("torch")
    return torch is None or torch.is_grad_enabled()


def default_deterministic(target):
    """The backward mode attention() picks when deterministic=None: the one
    measured faster on the target. Atomic everywhere: on the H200 the
    deterministic backward takes 1.21-1.46x the atomic one's time since the
    warpgroup dkdv kernel (docs/PERFORMANCE.md, "Backward wgmma"; session 12's
    same-run bench.py --bwd: atomic 192.8-439.2 TFLOP/s, deterministic
    168.0-301.8 on the 18 rows, docs/data/manifest-step1/compare-bwd.csv);
    cpu and hip measured no faster deterministic. deterministic=True still
    gives bit-identical gradients."""
    _target_value(target)  # raises on an unknown target
    return False


def attention(q, k, v, mask="0", scale=None, softcap=None, layout="bhsd",
              bundle_dir=None, block_m=None, block_n=None, out=None, lse=None,
              return_lse=False, deterministic=None):
    """Attention of q, k, v (DESIGN.md section 1) through a compiled bundle.

    layout 'bhsd': q [B, Hq, Sq, D], k/v [B, Hk, Sk, D/Dv]; 'bshd': q
    [B, Sq, Hq, D], k/v [B, Sk, Hk, D/Dv]. Any strides with a contiguous
    head dim (BSHD memory, transposed views such as transformers'
    view(...).transpose(1, 2), packed QKV) run without a copy where the
    bundle takes strided operands (fmha-compile's default, --strides=any;
    Kernel.takes_view); otherwise they are copied. mask is
    a spec string (0, t, b, t:L,R[,S], b:L,R[,S], xt:W, xb:W). The bundle is
    looked up by signature in bundle_dir or the cache and compiled when
    missing (needs fmha-compile). Returns o in q's layout, and lse
    [B, Hq, Sq] too when return_lse.

    Differentiable: when q, k or v requires grad (and grad mode is on), the
    backward bundle of the same signature is looked up (or compiled) too,
    and loss.backward() runs it (`deterministic` picks the bit-identical
    one; None, the default, picks the mode measured faster on the target,
    default_deterministic(): atomic, which takes 0.68-0.83 of the
    deterministic mode's time on the H200); out= and lse= are not taken
    then."""
    if layout not in ("bhsd", "bshd"):
        raise ValueError("layout must be 'bhsd' or 'bshd', got %r" % (layout,))
    bshd = layout == "bshd"
    if bshd:
        # BHSD views of the BSHD memory.
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if out is not None:
            raise ValueError("out= needs layout='bhsd'")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if len(tuple(t.shape)) != 4:
            raise ValueError("%s: expected a 4-d tensor, got shape %s" % (name, tuple(t.shape)))
    dtype = _BUNDLE_DTYPES.get(_dtype_name(q))
    if dtype is None:
        raise ValueError("q: dtype %s is not supported (float16, bfloat16, float32)" % _dtype_name(q))
    target = "cpu" if getattr(q.device, "type", "cpu") == "cpu" else "cuda"
    signature = dict(target=target, chip=_chip_for(q), dtype=dtype,
                     hq=int(q.shape[1]), hk=int(k.shape[1]), d=int(q.shape[3]),
                     dv=int(v.shape[3]), mask=mask, scale=scale, softcap=softcap,
                     block_m=block_m, block_n=block_n)
    kernel = _kernel_for(find_bundle(signature, bundle_dir))
    q, k, v = (t if t.is_contiguous() or kernel.takes_view(n, t) else t.contiguous()
               for n, t in (("q", q), ("k", k), ("v", v)))
    if _needs_grad(q, k, v):
        if out is not None or lse is not None:
            raise ValueError("out= and lse= are not taken when q, k or v requires grad")
        if deterministic is None:
            deterministic = default_deterministic(target)
        bwd = _kernel_for(find_bundle(dict(signature, kind="bwd", deterministic=bool(deterministic)),
                                      bundle_dir))
        o, l = _attention_function().apply(q, k, v, kernel, bwd, bshd)
    else:
        if out is None:
            out = _output(kernel, q, v, bshd)
        o, l = kernel.forward(q, k, v, out, lse)
    if bshd:
        o = o.transpose(1, 2)
    return (o, l) if return_lse else o
