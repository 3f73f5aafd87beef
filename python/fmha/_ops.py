"""torch.library ops: fmha::attention and fmha::attention_backward.

fmha.attention calls them while torch.compile traces it (eager calls skip
their dispatch, about 0.1 ms a call), so that it is in the graph (no graph
break, fullgraph=True works): the bundle lookup, compile and launch happen inside
the ops, which dynamo treats as opaque; the fake kernels give the output
shapes and strides from the arguments alone, and autograd is registered on
the forward op. Registered when fmha is imported and torch has
torch.library.custom_op (2.4 and newer); with an older torch (or none),
fmha.attention runs its torch.autograd.Function instead.

The outputs' memory is fixed by the arguments so that the fake kernels can
state it: o is BSHD memory when `bshd` (o.transpose(1, 2) contiguous), else
contiguous BHSD; lse is contiguous [B, Hq, Sq]; dq, dk, dv are
torch.empty_like(q, k, v). Where a bundle writes other memory (a bundle of
contiguous operands), the op copies into those.
"""

from typing import Optional, Tuple

from ._lookup import _find, _kernel_for, _output, _signature, _views

available = False


def _register():
    global available
    try:
        import torch
    except ImportError:
        return
    if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        return

    def o_like(q, v, bshd):
        b, hq, sq = q.shape[0], q.shape[1], q.shape[2]
        if bshd:
            return q.new_empty((b, sq, hq, v.shape[3])).transpose(1, 2)
        return q.new_empty((b, hq, sq, v.shape[3]))

    @torch.library.custom_op("fmha::attention", mutates_args=())
    def attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: str,
                     scale: Optional[float], softcap: Optional[float], bshd: bool,
                     bundle_dir: Optional[str], block_m: Optional[int],
                     block_n: Optional[int], deterministic: bool
                     ) -> Tuple[torch.Tensor, torch.Tensor]:
        """o, lse of BHSD views q, k, v (o in BSHD memory when bshd)."""
        sig = _signature(q, k, v, mask, scale, softcap, block_m, block_n)
        kernel = _kernel_for(_find(sig, bundle_dir))
        q, k, v = _views(kernel, (("q", q), ("k", k), ("v", v)))
        o = _output(kernel, q, v, bshd)
        o, lse = kernel.forward(q, k, v, o)
        want = o_like(q, v, bshd)
        if want.stride() != o.stride():
            want.copy_(o)
            o = want
        return o, lse

    @attention_op.register_fake
    def _(q, k, v, mask, scale, softcap, bshd, bundle_dir, block_m, block_n, deterministic):
        lse = q.new_empty((q.shape[0], q.shape[1], q.shape[2]), dtype=torch.float32)
        return o_like(q, v, bshd), lse

    @torch.library.custom_op("fmha::attention_backward", mutates_args=())
    def attention_backward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                              o: torch.Tensor, lse: torch.Tensor, do: torch.Tensor,
                              mask: str, scale: Optional[float], softcap: Optional[float],
                              bundle_dir: Optional[str], block_m: Optional[int],
                              block_n: Optional[int], deterministic: bool
                              ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """dq, dk, dv (torch.empty_like q, k, v)."""
        sig = _signature(q, k, v, mask, scale, softcap, block_m, block_n)
        bwd = _kernel_for(_find(dict(sig, kind="bwd", deterministic=deterministic),
                                bundle_dir))
        grads = bwd.backward(*_views(bwd, (("q", q), ("k", k), ("v", v), ("o", o),
                                          ("lse", lse), ("dO", do))))
        out = []
        for like, g in zip((q, k, v), grads):
            want = torch.empty_like(like)
            if want.stride() != g.stride():
                want.copy_(g)
                g = want
            out.append(g)
        return tuple(out)

    @attention_backward_op.register_fake
    def _(q, k, v, o, lse, do, mask, scale, softcap, bundle_dir, block_m, block_n,
          deterministic):
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)

    def setup_context(ctx, inputs, output):
        q, k, v, mask, scale, softcap, bshd, bundle_dir, block_m, block_n, det = inputs
        o, lse = output
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.args = (mask, scale, softcap, bundle_dir, block_m, block_n, det)
        ctx.mark_non_differentiable(lse)

    def backward(ctx, do, _dlse):
        q, k, v, o, lse = ctx.saved_tensors
        do = torch.zeros_like(o) if do is None else do
        dq, dk, dv = attention_backward_op(q, k, v, o, lse, do, *ctx.args)
        return dq, dk, dv, None, None, None, None, None, None, None, None

    attention_op.register_autograd(backward, setup_context=setup_context)
    available = True


_register()
