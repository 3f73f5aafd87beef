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


def check_forward_args(info, q, k, v, o=None, lse=None, device_index=None, strided=(),
                       sinks=None):
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
    if sinks is not None:
        tensors.append(("sinks", sinks, 1, "[Hq]"))
    shapes = {}
    for name, t, rank, layout in tensors:
        shapes[name] = shape_of(name, t, rank, layout)
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
    if sinks is not None:
        expect("sinks", 0, "Hq", shapes["sinks"][0], hq)
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("lse", lse), ("sinks", sinks)):
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
