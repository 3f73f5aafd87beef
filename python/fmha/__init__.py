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

Where torch (2.4 or newer) is installed, importing fmha registers the
torch.library ops fmha::attention and fmha::attention_backward (fmha/_ops.py),
which torch.compile traces; the argument checks, bundle names and the
library loader work without torch.
"""

# The package is split by concern: _capi (the C API), _checks (argument
# checks), _kernel (fmha.Kernel), _bundles (names, cache, compile), _attention
# (fmha.attention and its autograd), _ops (its torch.library ops). Every name
# is re-exported here.
from ._capi import (  # noqa: F401
    API_VERSION,
    TARGET_CPU,
    TARGET_CUDA,
    TARGET_HIP,
    FmhaError,
    backend_description,
    get_num_threads,
    load_library,
    runtime_version,
    set_num_threads,
)
from ._checks import check_forward_args  # noqa: F401
from ._kernel import Kernel  # noqa: F401
from ._bundles import (  # noqa: F401
    bundle_name,
    cache_dir,
    compile_args,
    compile_bundle,
    compiler_id,
    find_bundle,
)
from ._attention import (  # noqa: F401
    attention,
    attention_varlen,
    attention_with_kvcache,
    default_deterministic,
    flash_attn_func,
    flash_attn_varlen_func,
    flash_attn_with_kvcache,
)

__all__ = [
    "FmhaError",
    "Kernel",
    "attention",
    "attention_varlen",
    "attention_with_kvcache",
    "bundle_name",
    "compile_bundle",
    "find_bundle",
    "flash_attn_func",
    "flash_attn_varlen_func",
    "flash_attn_with_kvcache",
    "get_num_threads",
    "load_library",
    "runtime_version",
    "set_num_threads",
]
