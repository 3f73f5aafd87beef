"""From a signature to the kernel that runs it, and the tensors it takes:
what fmha.attention and its torch.library ops (_ops) share."""

import threading

from ._capi import _BUNDLE_DTYPES
from ._checks import _dtype_name
from ._kernel import Kernel, _torch
from ._bundles import _chip_for, find_bundle

_kernels = {}
_kernels_lock = threading.Lock()


def _kernel_for(path):
    with _kernels_lock:
        k = _kernels.get(path)
        if k is None:
            k = _kernels[path] = Kernel(path)
        return k


_found = {}


def _find(signature, bundle_dir):
    """find_bundle, remembered per (signature, bundle_dir) once found in a
    given bundle_dir (the cache's folder depends on the fmha-compile build,
    which find_bundle checks each time)."""
    if bundle_dir is None:
        return find_bundle(signature, None)
    key = (tuple(sorted(signature.items())), bundle_dir)
    path = _found.get(key)
    if path is None:
        path = _found[key] = find_bundle(signature, bundle_dir)
    return path


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


def _views(kernel, named):
    """The tensors of (name, tensor) pairs as `kernel` takes them: views
    where it takes their strides (Kernel.takes_view), copies otherwise."""
    return [t if t.is_contiguous() or kernel.takes_view(n, t) else t.contiguous()
            for n, t in named]


def _signature(q, k, v, mask, scale, softcap, block_m, block_n, sinks=False,
               varlen=False, page_size=0):
    """The forward signature of BHSD q, k, v (bundle_name's arguments);
    `sinks`: with learned sink logits; `varlen`: a variable-length batch;
    `page_size`: k and v a paged cache of pages of that many keys."""
    dtype = _BUNDLE_DTYPES.get(_dtype_name(q))
    if dtype is None:
        raise ValueError("q: dtype %s is not supported (float16, bfloat16, float32)"
                         % _dtype_name(q))
    target = "cpu" if getattr(q.device, "type", "cpu") == "cpu" else "cuda"
    return dict(target=target, chip=_chip_for(q), dtype=dtype, hq=int(q.shape[1]),
                hk=int(k.shape[1]), d=int(q.shape[3]), dv=int(v.shape[3]), mask=mask,
                scale=scale, softcap=softcap, block_m=block_m, block_n=block_n,
                **({"sinks": True} if sinks else {}),
                **({"varlen": True} if varlen else {}),
                **({"page_size": page_size} if page_size else {}))
