"""Argument checks of tensors against a kernel's signature (duck-typed:
anything with shape, dtype, device, stride(), is_contiguous() and
data_ptr(), so that they run without torch)."""


from ._capi import _TORCH_DTYPES

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


def _shape_of(name, t, rank, layout):
    """`t`'s shape, which must have `rank` dims (`layout` names them in
    the message)."""
    try:
        shape = tuple(int(x) for x in t.shape)
    except (AttributeError, TypeError):
        raise ValueError("%s: expected a tensor, got %s" % (name, type(t).__name__))
    if len(shape) != rank:
        raise ValueError("%s: expected a %d-d %s tensor, got shape %s"
                         % (name, rank, layout, shape))
    return shape


def check_forward_args(info, q, k, v, o=None, lse=None, device_index=None, strided=(),
                       sinks=None, paged=False):
    """Checks tensors against a kernel's signature (`info`: a dict with
    target, dtype, hq, hk, d, dv). Returns (B, Sq, Sk). With `paged`, k and
    v are a cache's pages [pages, Hk, P, D] (Sk: P). Raises ValueError
    naming the tensor, what was expected and what it got. Tensors named in
    `strided` (the bundle takes them in any strides, Kernel.strided) may be
    views with a contiguous last dim; the others must be contiguous."""
    want_dtype = _TORCH_DTYPES[info["dtype"]]
    want_device = "cpu" if info["target"] == "cpu" else "cuda"

    tensors = [("q", q, 4, "BHSD [B, Hq, Sq, D]"), ("k", k, 4, "BHSD [B, Hk, Sk, D]"),
               ("v", v, 4, "BHSD [B, Hk, Sk, Dv]")]
    if o is not None:
        tensors.append(("o", o, 4, "BHSD [B, Hq, Sq, Dv]"))
    if lse is not None:
        tensors.append(("lse", lse, 3, "[B, Hq, Sq]"))
    if sinks is not None:
        tensors.append(("sinks", sinks, 1, "[Hq]"))
    shapes = {}
    for name, t, rank, layout in tensors:
        shapes[name] = _shape_of(name, t, rank, layout)
        dt = _dtype_name(t)
        f32 = name in ("lse", "sinks")
        expected = "torch.float32" if f32 else want_dtype
        if dt != expected:
            raise ValueError("%s: expected dtype %s%s, got %s"
                             % (name, expected,
                                "" if f32 else " (the bundle's %s)" % info["dtype"], dt))
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
    if not paged:
        expect("k", 0, "B", shapes["k"][0], b)
    expect("k", 1, "Hk", hk, info["hk"])
    expect("k", 3, "D", shapes["k"][3], info["d"])
    if paged:  # a cache of pages [pages, Hk, P, D]
        expect("v", 0, "pages", shapes["v"][0], shapes["k"][0])
    else:
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
    if sinks is not None:
        expect("sinks", 0, "Hq", shapes["sinks"][0], hq)
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse), ("sinks", sinks)):
        if t is not None and _device_name(t) != _device_name(q):
            raise ValueError("%s is on %s, q on %s" % (name, _device_name(t), _device_name(q)))
    return b, sq, sk


def check_varlen_args(info, q, k, v, cu_seqlens_q, cu_seqlens_k, o=None, lse=None,
                      device_index=None, strided=(), sinks=None):
    """Checks the tensors of a variable-length batch (FlashAttention's
    layout: q (total_q, Hq, D), k and v (total_k, Hk, D / Dv), o (total_q,
    Hq, Dv), lse (Hq, total_q) float32, cu_seqlens_q and cu_seqlens_k int32
    (B + 1,)) against a varlen=1 kernel's signature `info`. Returns (B,
    total_q, total_k). q, k, v and o must be views the bundle takes (their
    BHSD views [1, H, total, D] are strided: `strided` names q, k, v, o),
    lse and the offsets contiguous. Raises ValueError as
    check_forward_args."""
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        if t is None:
            continue
        _shape_of(name, t, 3, "(total, H, D)")
        if name not in strided:
            raise ValueError("%s: a variable-length batch's tensors are views [1, H, total, "
                             "D] of (total, H, D) memory; the bundle must take strided "
                             "operands (fmha-compile --strides=any, the default)" % name)
    b = None
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        shape = _shape_of(name, t, 1, "(B + 1,) int32")
        if _dtype_name(t) != "torch.int32":
            raise ValueError("%s: expected dtype torch.int32, got %s" % (name, _dtype_name(t)))
        if shape[0] < 1:
            raise ValueError("%s: expected B + 1 >= 1 offsets, got none" % name)
        if b is not None and shape[0] - 1 != b:
            raise ValueError("cu_seqlens_k: %d offsets, cu_seqlens_q %d: B + 1 each"
                             % (shape[0], b + 1))
        b = shape[0] - 1
        if not t.is_contiguous():
            raise ValueError("%s: expected a contiguous tensor" % name)
    if lse is not None:
        _shape_of("lse", lse, 2, "(Hq, total_q)")

    def bhsd(t):
        return None if t is None else _BhsdView(t)

    total_q, total_k = int(q.shape[0]), int(k.shape[0])
    check_forward_args(info, bhsd(q), bhsd(k), bhsd(v), bhsd(o),
                       None if lse is None else _BhsdView(lse, lse=True), device_index,
                       strided, sinks)
    for name, t in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if _device_name(t) != _device_name(q):
            raise ValueError("%s is on %s, q on %s" % (name, _device_name(t), _device_name(q)))
    return b, total_q, total_k


def check_paged_args(info, page_size, q, k_cache, v_cache, block_table, cache_seqlens, o=None,
                     lse=None, device_index=None, strided=(), sinks=None):
    """Checks the tensors of a paged-cache forward (FlashAttention's
    flash_attn_with_kvcache layout: q and o (B, Sq, Hq, D / Dv), k_cache and
    v_cache (pages, P, Hk, D / Dv), block_table int32 (B, max_pages),
    cache_seqlens int32 (B,), lse (B, Hq, Sq) float32) against a kernel of
    page size `page_size`. Returns (B, Sq, pages, max_pages). q, o and the
    caches are taken as their BHSD views (strided: the bundle must take them
    so); the table, the lengths and lse contiguous. Raises ValueError as
    check_forward_args."""
    for name, t, layout in (("q", q, "(B, Sq, Hq, D)"), ("k_cache", k_cache, "(pages, P, Hk, D)"),
                            ("v_cache", v_cache, "(pages, P, Hk, Dv)"),
                            ("out", o, "(B, Sq, Hq, Dv)")):
        if t is None:
            continue
        _shape_of(name, t, 4, layout)
        operand = {"k_cache": "k", "v_cache": "v", "out": "o"}.get(name, name)
        if operand not in strided:
            raise ValueError("%s: a paged forward takes the BHSD views of %s memory; the "
                             "bundle must take strided operands (fmha-compile --strides=any, "
                             "the default)" % (name, layout))
    b = int(q.shape[0])
    pages, max_pages = _check_cache(page_size, q, k_cache, block_table, cache_seqlens, b, "q's")

    def bhsd(t):
        return None if t is None else _Transposed(t)

    _, sq, _ = check_forward_args(info, bhsd(q), bhsd(k_cache), bhsd(v_cache), bhsd(o), lse,
                                  device_index, strided, sinks, paged=True)
    return b, sq, pages, max_pages


def check_chunked_args(info, page_size, q, k_cache, v_cache, cu_seqlens_q, block_table,
                       seqlens_k, o=None, lse=None, device_index=None, strided=(), sinks=None):
    """Checks the tensors of chunked prefill (variable-length queries
    against a paged cache: q and o (total_q, Hq, D / Dv), lse (Hq, total_q),
    cu_seqlens_q int32 (N + 1,), the caches, block_table (N, max_pages) and
    seqlens_k (N,) as check_paged_args). Returns (N, total_q, pages,
    max_pages)."""
    for name, t in (("q", q), ("out", o)):
        if t is None:
            continue
        _shape_of(name, t, 3, "(total, H, D)")
        if {"out": "o"}.get(name, name) not in strided:
            raise ValueError("%s: a variable-length batch's tensors are views [1, H, total, "
                             "D] of (total, H, D) memory; the bundle must take strided "
                             "operands (fmha-compile --strides=any, the default)" % name)
    _shape_of("k_cache", k_cache, 4, "(pages, P, Hk, D)")
    shape = _shape_of("cu_seqlens_q", cu_seqlens_q, 1, "(N + 1,) int32")
    if _dtype_name(cu_seqlens_q) != "torch.int32":
        raise ValueError("cu_seqlens_q: expected dtype torch.int32, got %s"
                         % _dtype_name(cu_seqlens_q))
    if shape[0] < 1 or not cu_seqlens_q.is_contiguous():
        raise ValueError("cu_seqlens_q: expected N + 1 >= 1 offsets, contiguous")
    if _device_name(cu_seqlens_q) != _device_name(q):
        raise ValueError("cu_seqlens_q is on %s, q on %s"
                         % (_device_name(cu_seqlens_q), _device_name(q)))
    n = shape[0] - 1
    pages, max_pages = _check_cache(page_size, q, k_cache, block_table, seqlens_k, n,
                                    "cu_seqlens_q's N")
    if lse is not None:
        _shape_of("lse", lse, 2, "(Hq, total_q)")
    check_forward_args(info, _BhsdView(q), _Transposed(k_cache), _Transposed(v_cache),
                       None if o is None else _BhsdView(o),
                       None if lse is None else _BhsdView(lse, lse=True), device_index,
                       strided, sinks, paged=True)
    return n, int(q.shape[0]), pages, max_pages


def _check_cache(page_size, q, k_cache, block_table, seqlens_k, b, what):
    """The page size of k_cache (pages, P, Hk, D) and the int32 table (b,
    max_pages) and lengths (b,) on q's device; returns (pages, max_pages)."""
    pages, p = (int(x) for x in k_cache.shape[:2])
    if p != page_size:
        raise ValueError("k_cache: page size (dim 1) is %d, the bundle's is %d" % (p, page_size))
    for name, t, rank, layout in (("block_table", block_table, 2, "(B, max_pages) int32"),
                                  ("cache_seqlens", seqlens_k, 1, "(B,) int32")):
        shape = _shape_of(name, t, rank, layout)
        if _dtype_name(t) != "torch.int32":
            raise ValueError("%s: expected dtype torch.int32, got %s" % (name, _dtype_name(t)))
        if shape[0] != b:
            raise ValueError("%s: B (dim 0) is %d, expected %d (%s)" % (name, shape[0], b, what))
        if not t.is_contiguous():
            raise ValueError("%s: expected a contiguous tensor" % name)
        if _device_name(t) != _device_name(q):
            raise ValueError("%s is on %s, q on %s" % (name, _device_name(t), _device_name(q)))
    if int(block_table.shape[1]) < 1:
        raise ValueError("block_table: expected max_pages >= 1 entries a row, got 0")
    return pages, int(block_table.shape[1])


class _View:
    """Another shape and strides of tensor `t`'s memory, for the checks and
    the launch: its shape, strides, dtype, device and address."""

    def __init__(self, t, shape, strides):
        self._t = t
        self.shape, self._strides = tuple(shape), tuple(strides)
        self.dtype = t.dtype
        self.device = t.device

    def stride(self):
        return self._strides

    def is_contiguous(self):
        n = 1
        for size, stride in reversed(list(zip(self.shape, self._strides))):
            if size > 1 and stride != n:
                return False
            n *= size
        return True

    def data_ptr(self):
        return self._t.data_ptr()


class _BhsdView(_View):
    """The BHSD view [1, H, total, D] of a (total, H, D) tensor (or [1, H,
    total] of an lse (H, total))."""

    def __init__(self, t, lse=False):
        if lse:
            h, n = (int(x) for x in t.shape)
            sh, sn = (int(x) for x in t.stride())
            super().__init__(t, (1, h, n), (h * sh, sh, sn))
        else:
            n, h, d = (int(x) for x in t.shape)
            sn, sh, sd = (int(x) for x in t.stride())
            super().__init__(t, (1, h, n, d), (n * sn, sh, sn, sd))


class _Transposed(_View):
    """A 4-d tensor with dims 1 and 2 swapped: BSHD memory as BHSD, a
    (pages, P, Hk, D) cache as [pages, Hk, P, D]."""

    def __init__(self, t):
        s = tuple(int(x) for x in t.shape)
        st = tuple(int(x) for x in t.stride())
        super().__init__(t, (s[0], s[2], s[1], s[3]), (st[0], st[2], st[1], st[3]))


def _rows_contiguous(t):
    """Whether `t`'s last dim is contiguous (stride 1, or of size 1)."""
    return int(t.shape[-1]) <= 1 or int(t.stride()[-1]) == 1


def _strided_arg(t, strided):
    """A launch's tensor argument: the address, with the strides when the
    bundle takes the operand strided."""
    if strided:
        return (t.data_ptr(), tuple(int(x) for x in t.stride()))
    return t.data_ptr()



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
