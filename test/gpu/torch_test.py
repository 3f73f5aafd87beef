#!/usr/bin/env python3
"""fmha with PyTorch on the GPU machine: the torch.library ops, torch.compile,
flash_attn_func, and BSHD / transposed inputs without copies.

Here (LLVM, no GPU) compile the bundles it needs:

    test/gpu/torch_test.py --make-bundles DIR --bin build/bin

There (torch >= 2.4 with CUDA, the runtime library, no LLVM):

    FMHA_RUNTIME_LIB=.../libfmha_runtime.so test/gpu/torch_test.py --bundles DIR

Checks, each against an independent reference (torch's float32 math on the
same inputs): torch.library.opcheck of fmha::attention (schema, fake kernel,
autograd registration, AOT dispatch) for BHSD and BSHD views; forward and
backward values; torch.compile(fullgraph=True) of a small Llama-style block
(projections, GQA, causal attention) equal to eager, outputs and gradients;
flash_attn_func with bottom-right causal and a window; the profiler's CUDA
kernels for BSHD and transposed inputs (only FMHA's own, no copy); and BSHD
against contiguous BHSD speed (medians of interleaved runs, printed with
the ratio; the check asks >= 0.97), and the host's time per call of each.
Exit 1 on any failure.
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import fmha  # noqa: E402
from checks import Checks, main  # noqa: E402

CHIP = "sm_90a"
# (hq, hk, d, mask, kinds)
SIGNATURES = [
    (4, 2, 64, "t", ("fwd", "bwd")),
    (4, 2, 64, "b", ("fwd", "bwd")),
    (4, 2, 64, "b:16,0", ("fwd",)),
    (8, 2, 64, "t", ("fwd", "bwd")),
    (16, 16, 128, "t", ("fwd",)),
    (16, 16, 128, "0", ("fwd",)),
]


def signature(hq, hk, d, mask, kind="fwd"):
    sig = dict(target="cuda", chip=CHIP, dtype="bf16", hq=hq, hk=hk, d=d, dv=d, mask=mask)
    if kind == "bwd":
        sig.update(kind="bwd", deterministic=False)
    return sig


def make_bundles(out, bin_dir):
    os.makedirs(out, exist_ok=True)
    compiler = os.path.join(bin_dir, "fmha-compile")
    for hq, hk, d, mask, kinds in SIGNATURES:
        for kind in kinds:
            sig = signature(hq, hk, d, mask, kind)
            path = os.path.join(out, fmha.bundle_name(**sig))
            fmha.compile_bundle(path, compiler=compiler, **sig)
            print("compiled", os.path.basename(path))


check = Checks()


def reference(q, k, v, mask, sq, sk):
    """float32 attention of BHSD q, k, v (GQA by repeating k, v) under a
    CK-style mask: 't' top-left causal, 'b' bottom-right, 'b:L,R' window."""
    import torch
    hq, hk = q.shape[1], k.shape[1]
    k = k.float().repeat_interleave(hq // hk, dim=1)
    v = v.float().repeat_interleave(hq // hk, dim=1)
    s = q.float() @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    i = torch.arange(sq, device=q.device)[:, None]
    j = torch.arange(sk, device=q.device)[None, :]
    off = 0 if mask == "t" else sk - sq
    if mask == "0":
        visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
    else:
        left, right = -1, 0
        if ":" in mask:
            left, right = (int(x) for x in mask.split(":")[1].split(","))
        visible = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
        if left >= 0:
            visible &= j >= i + off - left
        if right >= 0:
            visible &= j <= i + off + right
    s = s.masked_fill(~visible, float("-inf"))
    return torch.softmax(s, dim=-1).nan_to_num(0.0) @ v


def close(a, b, tol):
    err = (a.float() - b.float()).abs().max().item()
    scale = b.float().abs().max().item()
    return err <= tol * max(scale, 1.0), err


def run(bundles):
    import torch
    check(fmha._ops.available, "fmha::attention is registered (torch %s)" % torch.__version__)
    dev = "cuda"
    torch.manual_seed(0)
    bf = torch.bfloat16

    # opcheck: BHSD contiguous, and BSHD memory passed as BHSD views.
    b, hq, hk, sq, sk, d = 2, 4, 2, 96, 96, 64
    q = torch.randn(b, hq, sq, d, device=dev, dtype=bf, requires_grad=True)
    k = torch.randn(b, hk, sk, d, device=dev, dtype=bf, requires_grad=True)
    v = torch.randn(b, hk, sk, d, device=dev, dtype=bf, requires_grad=True)
    args = (q, k, v, "t", None, None, False, bundles, None, None, False)
    try:
        torch.library.opcheck(torch.ops.fmha.attention.default, args)
        check(True, "opcheck fmha::attention, BHSD")
    except Exception as e:  # noqa: BLE001
        check(False, "opcheck fmha::attention, BHSD: %s" % e)
    qs = torch.randn(b, sq, hq, d, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    ks = torch.randn(b, sk, hk, d, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    vs = torch.randn(b, sk, hk, d, device=dev, dtype=bf).transpose(1, 2).requires_grad_()
    try:
        torch.library.opcheck(torch.ops.fmha.attention.default,
                              (qs, ks, vs, "t", None, None, True, bundles, None, None, False))
        check(True, "opcheck fmha::attention, BSHD views")
    except Exception as e:  # noqa: BLE001
        check(False, "opcheck fmha::attention, BSHD views: %s" % e)

    # Values, forward and backward, against float32 math.
    o = fmha.attention(q, k, v, mask="t", bundle_dir=bundles)
    qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
    ref = reference(qr, kr, vr, "t", sq, sk)
    ok, err = close(o, ref, 2e-2)
    check(ok, "forward through the op: max err %.3g" % err)
    do = torch.randn_like(o)
    o.backward(do)
    ref.backward(do.float())
    for name, g, gr in (("dq", q.grad, qr.grad), ("dk", k.grad, kr.grad), ("dv", v.grad, vr.grad)):
        ok, err = close(g, gr, 3e-2)
        check(ok, "backward through the op, %s: max err %.3g" % (name, err))

    # torch.compile(fullgraph=True) of a Llama-style block against eager.
    hq, hk, dm = 8, 2, 512
    wqkv = torch.randn(dm, (hq + 2 * hk) * 64, device=dev, dtype=bf) / dm ** 0.5
    wo = torch.randn(hq * 64, dm, device=dev, dtype=bf) / dm ** 0.5

    def block(x):
        bb, s, _ = x.shape
        qkv = x @ wqkv
        qq, kk, vv = qkv.split([hq * 64, hk * 64, hk * 64], dim=-1)
        # transformers' views: [B, S, H, D] -> [B, H, S, D], no copy.
        qq = qq.view(bb, s, hq, 64).transpose(1, 2)
        kk = kk.view(bb, s, hk, 64).transpose(1, 2)
        vv = vv.view(bb, s, hk, 64).transpose(1, 2)
        att = fmha.attention(qq, kk, vv, mask="t", bundle_dir=bundles)
        return x + att.transpose(1, 2).reshape(bb, s, hq * 64) @ wo

    x = torch.randn(2, 128, dm, device=dev, dtype=bf, requires_grad=True)
    xc = x.detach().clone().requires_grad_()
    try:
        compiled = torch.compile(block, fullgraph=True)
        yc = compiled(xc)
        ye = block(x)
        ok, err = close(yc, ye, 1e-2)
        check(ok, "torch.compile(fullgraph=True) block = eager: max err %.3g" % err)
        g = torch.randn_like(ye)
        ye.backward(g)
        yc.backward(g)
        ok, err = close(xc.grad, x.grad, 2e-2)
        check(ok, "torch.compile(fullgraph=True) block gradient = eager: max err %.3g" % err)
    except Exception as e:  # noqa: BLE001
        check(False, "torch.compile(fullgraph=True) block: %s: %s" % (type(e).__name__, e))

    # flash_attn_func: BSHD, bottom-right causal (Sq != Sk) and a window.
    for causal, window, mask in ((True, (-1, -1), "b"), (False, (16, 0), "b:16,0")):
        qf = torch.randn(2, 64, 4, 64, device=dev, dtype=bf)
        kf = torch.randn(2, 160, 2, 64, device=dev, dtype=bf)
        vf = torch.randn(2, 160, 2, 64, device=dev, dtype=bf)
        of = fmha.flash_attn_func(qf, kf, vf, causal=causal, window_size=window,
                                  bundle_dir=bundles)
        ref = reference(qf.transpose(1, 2), kf.transpose(1, 2), vf.transpose(1, 2), mask,
                        64, 160).transpose(1, 2)
        ok, err = close(of, ref, 2e-2)
        check(ok and tuple(of.shape) == (2, 64, 4, 64),
              "flash_attn_func causal=%s window=%s: max err %.3g" % (causal, window, err))

    # No copies: the CUDA kernels of BSHD and transposed-view calls.
    from torch.profiler import ProfilerActivity, profile
    b, h, s, d = 2, 16, 4096, 128
    x_bshd = [torch.randn(b, s, h, d, device=dev, dtype=bf) for _ in range(3)]
    packed = torch.randn(b, s, 3, h, d, device=dev, dtype=bf)
    views = [packed[:, :, i].transpose(1, 2) for i in range(3)]
    for what, call in (
            ("layout='bshd'", lambda: fmha.attention(*x_bshd, mask="t", layout="bshd",
                                                     bundle_dir=bundles)),
            ("packed QKV, transposed views", lambda: fmha.attention(*views, mask="t",
                                                                    bundle_dir=bundles))):
        call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call()
            torch.cuda.synchronize()
        names = sorted({e.name for e in prof.events()
                        if getattr(e, "device_type", None) is not None
                        and "CUDA" in str(e.device_type)})
        others = [n for n in names if not n.startswith("fmha")]
        check(bool(names) and not others,
              "%s: CUDA kernels %s" % (what, names))

    # Speed: BSHD memory against contiguous BHSD, same problem.
    def median_ms(call, iters=10, batch=10):
        """ms per call: events around `batch` calls back to back (the queue
        stays full: the kernels' time, not the host's per-call overhead,
        which a single call between two events would add), median of
        `iters`."""
        call()
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(batch):
                call()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / batch)
        return statistics.median(times)

    for mask in ("t", "0"):
        x_bhsd = [t.transpose(1, 2).contiguous() for t in x_bshd]
        rounds = {"bhsd": [], "bshd": []}
        for _ in range(5):
            rounds["bhsd"].append(median_ms(lambda: fmha.attention(*x_bhsd, mask=mask,
                                                                   bundle_dir=bundles)))
            rounds["bshd"].append(median_ms(lambda: fmha.attention(*x_bshd, mask=mask,
                                                                   layout="bshd",
                                                                   bundle_dir=bundles)))
        m = {key: statistics.median(v) for key, v in rounds.items()}
        import time
        for key, args, layout in (("bhsd", x_bhsd, "bhsd"), ("bshd", x_bshd, "bshd")):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(100):
                fmha.attention(*args, mask=mask, layout=layout, bundle_dir=bundles)
            host = (time.perf_counter() - t0) / 100 * 1e6
            torch.cuda.synchronize()
            print("      host time per call, %s: %.0f us" % (key, host))
        ratio = m["bhsd"] / m["bshd"]
        check(ratio >= 0.97, "speed mask=%s B=%d H=%d S=%d D=%d: BHSD %.3f ms, BSHD %.3f ms, "
              "BSHD speed %.3fx BHSD's" % (mask, b, h, s, d, m["bhsd"], m["bshd"], ratio))

    return check.summary()


if __name__ == "__main__":
    sys.exit(main(__doc__, make_bundles, run))
