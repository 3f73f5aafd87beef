"""fmha.Kernel: one loaded bundle, run on tensors or raw pointers through
the generic launch (fmhaKernelLaunch)."""

import ctypes
import os
import sys

from ._capi import (
    _bind_torch_device,
    FmhaError,
    _DTYPE_NAMES,
    _KIND_NAMES,
    _KernelInfo,
    _Problem,
    _TARGET_NAMES,
    _check,
    _launch_args,
    load_library,
)
from ._checks import (_BhsdView, _Transposed, _check_like, _dtype_name, _rows_contiguous,
                      _strided_arg, check_chunked_args, check_forward_args, check_paged_args,
                      check_varlen_args)

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
        strided = self.strided
        if name not in strided:
            return False
        align = strided[name]
        # The shape and strides' answer, once per (operand, shape, strides,
        # element size): a call then costs the address check alone (the
        # loop over torch's sizes took about 15 us a tensor on the H200's
        # host, a fifth of a BSHD call's host time).
        shape, stride, size = tuple(t.shape), t.stride(), t.element_size()
        key = (name, shape, stride, size)
        views = self.__dict__.setdefault("_views", {})
        fits = views.get(key)
        if fits is None:
            fits = _rows_contiguous(t) and (not align or all(
                n <= 1 or (st * size) % align == 0
                for n, st in zip(shape[:-1], stride[:-1])))
            if len(views) < 1024:
                views[key] = fits
        return fits and (not align or t.data_ptr() % align == 0)

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

    def _check_launch(self, kind, what, b, sq, sk):
        """Raises unless the kernel is open, of `kind`, and runs (b, sq, sk)."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        if self.info["kind"] != kind:
            raise FmhaError(3, "bundle '%s' is a %s kernel (kind=%s), not a %s one"
                            % (self.path, self.info["kind"], self.info["kind"], what))
        self.check_problem(b, sq, sk)

    @property
    def takes_sinks(self):
        """Whether the bundle takes learned sink logits (an operand sinks,
        float32 [Hq]: fmha-compile --sinks)."""
        found = self.__dict__.get("_takes_sinks")
        if found is None:
            found = self.__dict__["_takes_sinks"] = any(
                line.split()[:2] == ["operand", "sinks"] for line in self.manifest.splitlines())
        return found

    @property
    def takes_varlen(self):
        """Whether the bundle takes variable-length batches (operands
        cu_seqlens_q and cu_seqlens_k: fmha-compile --varlen)."""
        return any(line.split()[:2] == ["operand", "cu_seqlens_q"]
                   for line in self.manifest.splitlines())

    def forward_varlen(self, q, k, v, cu_seqlens_q, cu_seqlens_k, o=None, lse=None,
                       stream=None, sinks=None):
        """o, lse = kernel.forward_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k)
        for a varlen=1 bundle, on FlashAttention's varlen layout: q (total_q,
        Hq, D), k and v (total_k, Hk, D / Dv), any strides with a contiguous
        last dim; cu_seqlens_q and cu_seqlens_k int32 (B + 1,), nondecreasing
        from 0 (sequence b owns rows [cu[b], cu[b + 1]); a cpu bundle checks
        them, a cuda one reads them as given). o (total_q, Hq, Dv) and lse
        (Hq, total_q) float32 are allocated when not given; rows past
        cu_seqlens_q[B] are left as they are. Returns (o, lse)."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        if self.info["kind"] != "fwd" or not self.takes_varlen:
            raise ValueError("bundle '%s' is not a variable-length forward (fmha-compile "
                             "--varlen)" % self.path)
        self._check_sinks(sinks)
        device_index = self.device_index if self.info["target"] == "cuda" else None
        st = self.strided
        b, total_q, total_k = check_varlen_args(self.info, q, k, v, cu_seqlens_q, cu_seqlens_k,
                                                o, lse, device_index, st, sinks)
        o, lse, stream = self._outputs(q, o, (total_q, self.info["hq"], self.info["dv"]), lse,
                                       (self.info["hq"], total_q), stream)
        tensors = {name: _strided_arg(_BhsdView(t, lse=name == "lse"), name in st)
                   for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse))}
        tensors["cu_seqlens_q"] = _strided_arg(cu_seqlens_q, "cu_seqlens_q" in st)
        tensors["cu_seqlens_k"] = _strided_arg(cu_seqlens_k, "cu_seqlens_k" in st)
        if sinks is not None:
            tensors["sinks"] = _strided_arg(sinks, "sinks" in st)
        self.launch({"b": b, "sq": total_q, "sk": total_k}, tensors, stream=stream)
        return o, lse

    def _outputs(self, q, o, o_shape, lse, lse_shape, stream):
        """o (q's dtype and device) and lse (float32) of the given shapes
        where not given, and the stream: torch's current one of a cuda
        bundle unless given."""
        if o is None or lse is None:
            torch = _torch()
            if o is None:
                o = torch.empty(o_shape, dtype=q.dtype, device=q.device)
            if lse is None:
                lse = torch.empty(lse_shape, dtype=torch.float32, device=q.device)
        if stream is None:
            stream = _current_stream(q) if self.info["target"] == "cuda" else 0
        return o, lse, stream

    def _check_sinks(self, sinks):
        """Raises ValueError unless `sinks` is given exactly when the bundle
        takes learned sink logits."""
        if self.takes_sinks != (sinks is not None):
            raise ValueError(
                "sinks: bundle '%s' %s learned sink logits; %s" % (
                    self.path, "takes" if self.takes_sinks else "takes no",
                    "give sinks= (float32 [Hq])" if self.takes_sinks else "drop sinks="))

    @property
    def page_size(self):
        """The page size of a paged-cache bundle (fmha-compile --page-size:
        its k operand's pages [pages, Hk, P, D]), 0 for contiguous K/V."""
        for line in self.manifest.splitlines():
            words = line.split()
            if words[:2] == ["operand", "k"] and len(words) > 5 and words[4] == "pages":
                return int(words[6])
        return 0

    def forward_paged(self, q, k_cache, v_cache, block_table, cache_seqlens, o=None, lse=None,
                      stream=None, sinks=None):
        """o, lse = kernel.forward_paged(q, k_cache, v_cache, block_table,
        cache_seqlens) for a paged-cache bundle (fmha-compile --page-size P),
        on FlashAttention's flash_attn_with_kvcache layout: q (B, Sq, Hq, D),
        k_cache and v_cache (pages, P, Hk, D / Dv), any strides with a
        contiguous last dim; block_table int32 (B, max_pages): batch b's key j
        is k_cache[block_table[b, j // P], j % P]; cache_seqlens int32 (B,):
        its keys (the mask's Sk; entries past ceil(len / P) are never read;
        a cpu bundle checks the lengths and the entries they reach, a cuda
        one reads them as given). o (B, Sq, Hq, Dv) and lse (B, Hq, Sq)
        float32 are allocated when not given. Returns (o, lse)."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        page = self.page_size
        if self.info["kind"] != "fwd" or not page or self.takes_varlen:
            raise ValueError("bundle '%s' is not a paged-cache forward of fixed-length "
                             "queries (fmha-compile --page-size)" % self.path)
        self._check_sinks(sinks)
        device_index = self.device_index if self.info["target"] == "cuda" else None
        st = self.strided
        b, sq, pages, max_pages = check_paged_args(
            self.info, page, q, k_cache, v_cache, block_table, cache_seqlens, o, lse,
            device_index, st, sinks)
        o, lse, stream = self._outputs(q, o, (b, sq, self.info["hq"], self.info["dv"]), lse,
                                       (b, self.info["hq"], sq), stream)
        tensors = {name: _strided_arg(_Transposed(t), name in st)
                   for name, t in (("q", q), ("k", k_cache), ("v", v_cache), ("o", o))}
        for name, t in (("lse", lse), ("block_table", block_table),
                        ("seqlens_k", cache_seqlens), ("sinks", sinks)):
            if t is not None:
                tensors[name] = _strided_arg(t, name in st)
        self.launch({"b": b, "sq": sq, "pages": pages, "max_pages": max_pages}, tensors,
                    stream=stream)
        return o, lse

    def forward_chunked(self, q, k_cache, v_cache, cu_seqlens_q, block_table, seqlens_k,
                        o=None, lse=None, stream=None, sinks=None):
        """o, lse = kernel.forward_chunked(q, k_cache, v_cache, cu_seqlens_q,
        block_table, seqlens_k) for chunked prefill (fmha-compile --varlen
        --page-size P): sequence n's rows [cu_q[n], cu_q[n + 1]) of q
        (total_q, Hq, D) against the keys of table row n, seqlens_k[n] of
        them (the new rows the cache's last: bottom-right masks end at them).
        o (total_q, Hq, Dv) and lse (Hq, total_q) are allocated when not
        given; rows past cu_seqlens_q[N] are left as they are. Returns (o,
        lse)."""
        if self._handle is None:
            raise ValueError("the kernel is closed")
        page = self.page_size
        if self.info["kind"] != "fwd" or not page or not self.takes_varlen:
            raise ValueError("bundle '%s' is not a chunked-prefill forward (fmha-compile "
                             "--varlen --page-size)" % self.path)
        self._check_sinks(sinks)
        device_index = self.device_index if self.info["target"] == "cuda" else None
        st = self.strided
        n, total_q, pages, max_pages = check_chunked_args(
            self.info, page, q, k_cache, v_cache, cu_seqlens_q, block_table, seqlens_k, o, lse,
            device_index, st, sinks)
        o, lse, stream = self._outputs(q, o, (total_q, self.info["hq"], self.info["dv"]), lse,
                                       (self.info["hq"], total_q), stream)
        tensors = {"q": _strided_arg(_BhsdView(q), "q" in st),
                   "o": _strided_arg(_BhsdView(o), "o" in st),
                   "lse": _strided_arg(_BhsdView(lse, lse=True), "lse" in st),
                   "k": _strided_arg(_Transposed(k_cache), "k" in st),
                   "v": _strided_arg(_Transposed(v_cache), "v" in st)}
        for name, t in (("cu_seqlens_q", cu_seqlens_q), ("block_table", block_table),
                        ("seqlens_k", seqlens_k), ("sinks", sinks)):
            if t is not None:
                tensors[name] = _strided_arg(t, name in st)
        self.launch({"b": n, "sq": total_q, "pages": pages, "max_pages": max_pages}, tensors,
                    stream=stream)
        return o, lse

    def forward_ptrs(self, b, sq, sk, q, k, v, o, lse, stream=0, sinks=0):
        """Launches on raw addresses (ints): device pointers for a cuda
        bundle, host pointers for a cpu bundle; `stream` a CUstream (int).
        lse may be 0: scratch, and the call waits for the kernel. `sinks`:
        the learned sink logits of a bundle that takes them."""
        self._check_launch("fwd", "forward", b, sq, sk)
        tensors = {"q": q, "k": k, "v": v, "o": o, "lse": lse}
        if sinks:
            tensors["sinks"] = sinks
        self.launch({"b": b, "sq": sq, "sk": sk}, tensors, stream=stream)

    def forward(self, q, k, v, o=None, lse=None, stream=None, sinks=None):
        """o, lse = kernel.forward(q, k, v): attention on BHSD tensors of the
        bundle's dtype (contiguous, or any views with a contiguous last dim
        where the bundle takes strides, Kernel.strided) (CUDA tensors for a cuda bundle, on
        torch's current stream unless `stream` (a CUstream int) is given).
        o and lse are allocated when not given. `sinks`: the learned sink
        logits (float32 [Hq], contiguous) a bundle built with them takes
        (Kernel.takes_sinks), and only such a bundle. Returns (o, lse)."""
        device_index = self.device_index if self.info["target"] == "cuda" else None
        self._check_sinks(sinks)
        b, sq, sk = check_forward_args(self.info, q, k, v, o, lse, device_index,
                                       self.strided, sinks)
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
                          _strided_arg(lse, "lse" in st), stream,
                          0 if sinks is None else _strided_arg(sinks, "sinks" in st))
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
                      workspace_bytes=0, stream=0, sinks=0, dsinks=0):
        """Launches a backward bundle on raw addresses (ints), on `stream`
        (a CUstream int), without waiting. `workspace` 0: the kernel
        object's own (Runtime.h, BackwardArgs). `sinks` and `dsinks`: the
        learned sink logits and their gradient (float32 [Hq]) of a bundle
        that takes them."""
        self._check_launch("bwd", "backward", b, sq, sk)
        tensors = {"q": q, "k": k, "v": v, "o": o, "lse": lse, "dO": do, "dq": dq,
                   "dk": dk, "dv": dv}
        if self.takes_sinks:
            tensors.update(sinks=sinks, dsinks=dsinks)
        for name, ptr in tensors.items():
            if not (ptr[0] if isinstance(ptr, tuple) else ptr):
                raise FmhaError(1, "null pointer for %s" % name)
        self.launch({"b": b, "sq": sq, "sk": sk}, tensors, workspace, workspace_bytes,
                    stream)

    def backward(self, q, k, v, o, lse, do, dq=None, dk=None, dv=None, workspace=None,
                 stream=None, sinks=None, dsinks=None):
        """dq, dk, dv = kernel.backward(q, k, v, o, lse, do) for a kind=bwd
        bundle: o and lse are the forward's, do the gradient of o (shaped
        and typed like o); all contiguous. dq, dk, dv (shaped like q, k, v)
        are allocated when not given. A cuda bundle runs on torch's current
        stream (or `stream`, a CUstream int) with `workspace`, a uint8 tensor
        of at least backward_workspace_bytes(B, Sq, Sk) bytes, allocated on
        that stream when not given. Returns (dq, dk, dv). A bundle built
        with learned sink logits (Kernel.takes_sinks) takes the forward's
        `sinks` (float32 [Hq]) and returns (dq, dk, dv, dsinks), dsinks
        (float32 [Hq]) allocated when not given."""
        if self.info["kind"] != "bwd":
            raise ValueError("%s is a %s bundle; backward needs a kind=bwd one"
                             % (self.path, self.info["kind"]))
        self._check_sinks(sinks)
        if dsinks is not None and sinks is None:
            raise ValueError("dsinks= needs sinks=")
        cuda = self.info["target"] == "cuda"
        device_index = self.device_index if cuda else None
        st = self.strided
        b, sq, sk = check_forward_args(self.info, q, k, v, o, lse, device_index, st, sinks)
        if dsinks is not None:
            _check_like("dsinks", dsinks, "sinks", sinks, "dsinks" in st)
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
        if sinks is not None and dsinks is None:
            dsinks = _torch().empty_like(sinks)
        sink_ptrs = (0, 0) if sinks is None else (
            _strided_arg(sinks, "sinks" in st), _strided_arg(dsinks, "dsinks" in st))
        self.backward_ptrs(b, sq, sk, a["q"], a["k"], a["v"], a["o"], a["lse"], a["dO"],
                           a["dq"], a["dk"], a["dv"], ws_ptr, ws_bytes, stream, *sink_ptrs)
        if sinks is not None:
            return dq, dk, dv, dsinks
        return dq, dk, dv


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
