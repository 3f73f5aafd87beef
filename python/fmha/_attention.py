"""fmha.attention: the bundle of a signature found or compiled, autograd
through the backward bundle."""

import sys

from ._capi import _target_value
from ._kernel import _torch
from ._checks import _Transposed
from ._lookup import _find, _kernel_for, _output, _signature, _views
from . import _ops

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
            def forward(ctx, q, k, v, sinks, fwd, bwd, bshd):
                o = _output(fwd, q, v, bshd)
                o, lse = fwd.forward(q, k, v, o, sinks=sinks)
                ctx.save_for_backward(q, k, v, o, lse, sinks)
                ctx.bwd = bwd
                ctx.mark_non_differentiable(lse)
                return o, lse

            @staticmethod
            def backward(ctx, do, _dlse):
                q, k, v, o, lse, sinks = ctx.saved_tensors
                do = torch.zeros_like(o) if do is None else do
                # Views where the backward bundle takes them (it may be an
                # older, contiguous one), copies otherwise.
                bwd = ctx.bwd
                q, k, v, o, lse, do = _views(bwd, (("q", q), ("k", k), ("v", v), ("o", o),
                                                   ("lse", lse), ("dO", do)))
                if sinks is None:
                    dq, dk, dv = bwd.backward(q, k, v, o, lse, do)
                    return dq, dk, dv, None, None, None, None
                # Learned sinks: their gradient too (fmha.sinks_grad).
                dq, dk, dv, dsinks = bwd.backward(q, k, v, o, lse, do, sinks=sinks)
                return dq, dk, dv, dsinks, None, None, None

        _autograd_function = AttentionFunction
    return _autograd_function


def _compiling():
    torch = sys.modules.get("torch")
    compiler = getattr(torch, "compiler", None)
    return bool(compiler is not None and hasattr(compiler, "is_compiling")
                and compiler.is_compiling())


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
              return_lse=False, deterministic=None, sinks=None):
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
    then.

    sinks: learned sink logits (gpt-oss's s_aux), a float32 tensor [Hq] on
    q's device: sinks[h] joins the softmax denominator of every row of
    query head h and carries no value (DESIGN.md section 1; a row that sees
    no key gets o = 0 and lse = sinks[h]). The bundle is built with them
    (fmha-compile --sinks). Differentiable in sinks too: loss.backward()
    gives sinks.grad (the backward bundle of the same signature, with
    fmha.sinks_grad's kernels). torch.compile does not trace a call with
    sinks yet (ValueError)."""
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
    signature = _signature(q, k, v, mask, scale, softcap, block_m, block_n,
                           sinks=sinks is not None)
    target = signature["target"]
    if sinks is not None:
        if _compiling():
            raise ValueError("sinks: torch.compile does not trace fmha.attention with "
                             "learned sink logits yet")
    if _ops.available and out is None and lse is None and _compiling():
        # The torch.library ops (fmha/_ops.py): what torch.compile traces.
        # Eager calls take the path below: the op's dispatch costs about
        # 0.1 ms a call on the H200's host (torch 2.11).
        if deterministic is None:
            deterministic = default_deterministic(target)
        o, l = _torch().ops.fmha.attention(
            q, k, v, str(mask), None if scale is None else float(scale),
            None if softcap is None else float(softcap), bshd,
            None if bundle_dir is None else str(bundle_dir),
            None if block_m is None else int(block_m),
            None if block_n is None else int(block_n), bool(deterministic))
        if bshd:
            o = o.transpose(1, 2)
        return (o, l) if return_lse else o
    kernel = _kernel_for(_find(signature, bundle_dir))
    q, k, v = _views(kernel, (("q", q), ("k", k), ("v", v)))
    if _needs_grad(q, k, v, sinks):
        if out is not None or lse is not None:
            raise ValueError("out= and lse= are not taken when q, k, v or sinks requires "
                             "grad")
        if deterministic is None:
            deterministic = default_deterministic(target)
        bwd = _kernel_for(_find(dict(signature, kind="bwd", deterministic=bool(deterministic)),
                                bundle_dir))
        o, l = _attention_function().apply(q, k, v, sinks, kernel, bwd, bshd)
    else:
        if out is None:
            out = _output(kernel, q, v, bshd)
        o, l = kernel.forward(q, k, v, out, lse, sinks=sinks)
    if bshd:
        o = o.transpose(1, 2)
    return (o, l) if return_lse else o


def _flash_mask(causal, window_size):
    """The mask spec of FlashAttention's (causal, window_size): bottom-right
    aligned, -1 unbounded."""
    try:
        left, right = (int(x) for x in window_size)
    except (TypeError, ValueError):
        raise ValueError("flash_attn_func: window_size must be a pair of ints, got %r"
                         % (window_size,)) from None
    if causal:
        right = 0
    if left < 0 and right < 0:
        return "0"
    if left < 0 and right == 0:
        return "b"
    return "b:%d,%d" % (max(left, -1), max(right, -1))


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                    deterministic=False, return_attn_probs=False, bundle_dir=None):
    """FlashAttention's flash_attn_func on its layout: q (B, Sq, Hq, D), k and
    v (B, Sk, Hk, D / Dv), any strides with a contiguous head dim (no copy);
    returns o (B, Sq, Hq, Dv). As FlashAttention: causal and windows are
    aligned to the bottom-right corner when Sq != Sk (mask 'b'),
    window_size=(left, right) with -1 unbounded, softcap=0.0 none,
    softmax_scale None for 1/sqrt(D), deterministic picks the bit-identical
    backward. Not taken (ValueError): dropout_p > 0, alibi_slopes,
    return_attn_probs. Where FlashAttention gives a row with no visible key
    lse = +inf, FMHA gives -inf (DESIGN.md section 1); o is 0 either way."""
    if dropout_p:
        raise ValueError("flash_attn_func: dropout_p=%r is not supported (0.0 only)" % (dropout_p,))
    if alibi_slopes is not None:
        raise ValueError("flash_attn_func: alibi_slopes is not supported")
    if return_attn_probs:
        raise ValueError("flash_attn_func: return_attn_probs is not supported")
    mask = _flash_mask(causal, window_size)
    return attention(q, k, v, mask=mask, scale=softmax_scale,
                     softcap=softcap if softcap else None, layout="bshd",
                     bundle_dir=bundle_dir, deterministic=bool(deterministic))


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None,
                     max_seqlen_k=None, dropout_p=0.0, softmax_scale=None, causal=False,
                     window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                     deterministic=False, return_attn_probs=False, mask=None, sinks=None,
                     bundle_dir=None, block_m=None, block_n=None, out=None, lse=None,
                     return_lse=False, block_table=None, seqused_k=None):
    """Attention over a variable-length batch with FlashAttention's
    flash_attn_varlen_func conventions (DESIGN.md section 1): q (total_q,
    Hq, D), k and v (total_k, Hk, D / Dv), any strides with a contiguous
    head dim; cu_seqlens_q and cu_seqlens_k int32 (B + 1,), nondecreasing
    from 0, on q's device: sequence b owns rows [cu_q[b], cu_q[b + 1]) and
    keys [cu_k[b], cu_k[b + 1]), the mask local to it (causal and windows
    bottom-right aligned, as FlashAttention; or `mask`, a spec string, in
    their place). max_seqlen_q and max_seqlen_k are taken for
    FlashAttention's signature and not needed: the kernel's grid covers every
    sequence's tiles. Returns o (total_q, Hq, Dv), and lse (Hq, total_q) too
    when return_lse; `out` and `lse` (allocated when not given) may be
    given, and their rows past cu_seqlens_q[B] are left as they are. `sinks`: learned sink logits (float32 [Hq]). The bundle
    (fmha-compile --varlen) is found or compiled as fmha.attention's. The
    forward only: a call whose inputs require grad raises ValueError (the
    variable-length backward is not built yet), as do dropout_p > 0,
    alibi_slopes and return_attn_probs.

    With `block_table` (int32 (B, max_pages)), chunked prefill as
    FlashAttention's paged varlen call: k and v are a paged cache (pages, P,
    Hk, D), sequence b's keys the first seqused_k[b] (int32 (B,)) of its
    table row, or cu_seqlens_k[b + 1] - cu_seqlens_k[b] of them when
    seqused_k is not given; through a --varlen --page-size P bundle."""
    if dropout_p:
        raise ValueError("attention_varlen: dropout_p=%r is not supported (0.0 only)"
                         % (dropout_p,))
    if alibi_slopes is not None:
        raise ValueError("attention_varlen: alibi_slopes is not supported")
    if return_attn_probs:
        raise ValueError("attention_varlen: return_attn_probs is not supported")
    if _needs_grad(q, k, v, sinks):
        raise ValueError("attention_varlen: the backward of variable-length batches is not "
                         "built yet; call it under torch.no_grad() or on tensors that "
                         "require no grad")
    if mask is None:
        mask = _flash_mask(causal, window_size)
    elif causal or tuple(window_size) != (-1, -1):
        raise ValueError("attention_varlen: give mask= or causal/window_size, not both")
    if block_table is not None:
        return _chunked_prefill(q, k, v, cu_seqlens_q, cu_seqlens_k, block_table, seqused_k,
                                mask, softmax_scale, softcap, sinks, bundle_dir, block_m,
                                block_n, out, lse, return_lse)
    if seqused_k is not None:
        raise ValueError("attention_varlen: seqused_k applies to a paged cache (block_table)")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if len(tuple(t.shape)) != 3:
            raise ValueError("%s: expected a 3-d (total, H, D) tensor, got shape %s"
                             % (name, tuple(t.shape)))
    # The signature of the BHSD views [1, H, total, D] (heads at dim 1).
    signature = _signature(_HeadsView(q), _HeadsView(k), _HeadsView(v), mask,
                           softmax_scale, softcap if softcap else None, block_m, block_n,
                           sinks=sinks is not None, varlen=True)
    kernel = _kernel_for(_find(signature, bundle_dir))
    o, lse = kernel.forward_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, o=out, lse=lse,
                                   sinks=sinks)
    return (o, lse) if return_lse else o


# FlashAttention's name, for code written against flash_attn.
flash_attn_varlen_func = attention_varlen


def _chunked_prefill(q, k_cache, v_cache, cu_seqlens_q, cu_seqlens_k, block_table, seqused_k,
                     mask, softmax_scale, softcap, sinks, bundle_dir, block_m, block_n, out,
                     lse, return_lse):
    """attention_varlen with a block table: variable-length queries against
    a paged cache (fmha-compile --varlen --page-size P)."""
    if len(tuple(q.shape)) != 3:
        raise ValueError("q: expected a 3-d (total, H, D) tensor, got shape %s"
                         % (tuple(q.shape),))
    for name, t in (("k", k_cache), ("v", v_cache)):
        if len(tuple(t.shape)) != 4:
            raise ValueError("%s: with block_table, a paged cache (pages, P, Hk, D), got "
                             "shape %s" % (name, tuple(t.shape)))
    if seqused_k is None:
        if cu_seqlens_k is None:
            raise ValueError("attention_varlen: with block_table, give seqused_k or "
                             "cu_seqlens_k (each sequence's cache length)")
        seqused_k = (cu_seqlens_k[1:] - cu_seqlens_k[:-1]).contiguous()
    signature = _signature(_HeadsView(q), _Transposed(k_cache), _Transposed(v_cache), mask,
                           softmax_scale, softcap if softcap else None, block_m, block_n,
                           sinks=sinks is not None, varlen=True,
                           page_size=int(k_cache.shape[1]))
    kernel = _kernel_for(_find(signature, bundle_dir))
    o, lse = kernel.forward_chunked(q, k_cache, v_cache, cu_seqlens_q, block_table, seqused_k,
                                    o=out, lse=lse, sinks=sinks)
    return (o, lse) if return_lse else o


def attention_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None,
                           rotary_sin=None, cache_seqlens=None, cache_batch_idx=None,
                           cache_leftpad=None, block_table=None, softmax_scale=None,
                           causal=False, window_size=(-1, -1), softcap=0.0,
                           rotary_interleaved=True, alibi_slopes=None, num_splits=0,
                           return_softmax_lse=False, mask=None, sinks=None, bundle_dir=None,
                           block_m=None, block_n=None, out=None, lse=None):
    """Attention of new queries against a paged K/V cache with FlashAttention's
    flash_attn_with_kvcache conventions (DESIGN.md section 1, paged K/V): q
    (B, Sq, Hq, D); k_cache and v_cache (pages, P, Hk, D / Dv); block_table
    int32 (B, max_pages): batch b's key j is k_cache[block_table[b, j // P],
    j % P]; cache_seqlens int32 (B,) (or an int for every batch): batch b's
    keys, the mask's Sk (causal and windows bottom-right aligned: the
    queries are the cache's last rows, as FlashAttention; or `mask`, a spec
    string, in their place); table entries past ceil(len / P) are never
    read. Any strides with a contiguous head dim. The bundle (fmha-compile
    --page-size P) is found or compiled as fmha.attention's. Returns out (B,
    Sq, Hq, Dv), and softmax_lse (B, Hq, Sq) too when return_softmax_lse;
    `out` and `lse` may be given. `sinks`: learned sink logits (float32
    [Hq]). Not taken (ValueError): new keys k, v (write them into the cache
    first), rotary embeddings, cache_batch_idx, cache_leftpad, alibi_slopes,
    a contiguous cache without block_table, inputs that require grad (the
    forward only); num_splits is accepted and ignored (one kernel, no
    split yet)."""
    for name, given in (("k", k is not None), ("v", v is not None),
                        ("rotary_cos", rotary_cos is not None),
                        ("rotary_sin", rotary_sin is not None),
                        ("cache_batch_idx", cache_batch_idx is not None),
                        ("cache_leftpad", cache_leftpad is not None),
                        ("alibi_slopes", alibi_slopes is not None)):
        if given:
            raise ValueError("attention_with_kvcache: %s is not supported%s" % (
                name, " (write new keys and values into the cache's pages first)"
                if name in ("k", "v") else ""))
    if block_table is None:
        raise ValueError("attention_with_kvcache: a cache without block_table is not "
                         "supported; give the paged cache's block_table (B, max_pages)")
    if cache_seqlens is None:
        raise ValueError("attention_with_kvcache: give cache_seqlens (int32 (B,) or an int)")
    if _needs_grad(q, k_cache, v_cache, sinks):
        raise ValueError("attention_with_kvcache: the forward only; call it under "
                         "torch.no_grad() or on tensors that require no grad")
    if mask is None:
        mask = _flash_mask(causal, window_size)
    elif causal or tuple(window_size) != (-1, -1):
        raise ValueError("attention_with_kvcache: give mask= or causal/window_size, not both")
    if isinstance(cache_seqlens, int):
        torch = _torch()
        cache_seqlens = torch.full((int(q.shape[0]),), cache_seqlens, dtype=torch.int32,
                                   device=q.device)
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if len(tuple(t.shape)) != 4:
            raise ValueError("%s: expected a 4-d tensor (%s), got shape %s" % (
                name, "B, Sq, Hq, D" if name == "q" else "pages, P, Hk, D", tuple(t.shape)))
    page_size = int(k_cache.shape[1])
    signature = _signature(_Transposed(q), _Transposed(k_cache), _Transposed(v_cache), mask,
                           softmax_scale, softcap if softcap else None, block_m, block_n,
                           sinks=sinks is not None, page_size=page_size)
    kernel = _kernel_for(_find(signature, bundle_dir))
    o, lse = kernel.forward_paged(q, k_cache, v_cache, block_table, cache_seqlens, o=out,
                                  lse=lse, sinks=sinks)
    return (o, lse) if return_softmax_lse else o


# FlashAttention's name, for code written against flash_attn.
flash_attn_with_kvcache = attention_with_kvcache


class _HeadsView:
    """What _signature reads of a (total, H, D) tensor, as BHSD [1, H,
    total, D]."""

    def __init__(self, t):
        n, h, d = (int(x) for x in t.shape)
        self.shape = (1, h, n, d)
        self.dtype = t.dtype
        self.device = t.device
