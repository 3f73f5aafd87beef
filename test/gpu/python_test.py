#!/usr/bin/env python3
"""The fmha Python module on real PyTorch CUDA tensors (GPU machine only).

    FMHA_RUNTIME_LIB=build/lib/libfmha_runtime.so \\
      python3 test/gpu/python_test.py --bundles build/gpu-bundles

fmha.attention (bundle lookup by signature, the chip from the device, o and
lse allocated, BHSD and BSHD layouts, a non-default stream) and
fmha.Kernel.forward, compared with SDPA; the ValueErrors of bad tensors.
Gradients: loss.backward() through fmha.attention (the backward bundles of
the benchmark: GQA 4:1 causal and full attention, atomic and deterministic)
against torch's float32 autograd on the same inputs, relative error
||g - ref|| / ||ref|| per tensor (NaN fails); the deterministic bundle twice,
bit for bit. Prints one line per check; exit 1 on any failure.
"""

import argparse
import sys

import cases  # noqa: F401  (puts python/ on sys.path)
import fmha

failures = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what), flush=True)
    if not cond:
        failures.append(what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundles", required=True)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    dev = torch.device("cuda")
    b, s, hq, hk, d = 2, 1000, 16, 4, 128  # the gqa4-causal bench bundle
    q = torch.randn(b, hq, s, d, device=dev, dtype=torch.bfloat16)
    k = torch.randn(b, hk, s, d, device=dev, dtype=torch.bfloat16)
    v = torch.randn(b, hk, s, d, device=dev, dtype=torch.bfloat16)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    o, lse = fmha.attention(q, k, v, mask="b", bundle_dir=args.bundles, return_lse=True)
    torch.cuda.synchronize()
    err = (o.float() - ref.float()).abs().max().item()
    check(err < 2e-2, "attention bhsd vs SDPA: max |diff| %.2e" % err)
    check(tuple(lse.shape) == (b, hq, s) and lse.dtype == torch.float32, "lse shape and dtype")
    # lse of row i, head h against float32 scores.
    h, i = 5, 700
    sc = (q[1, h, i].float() @ k[1, h // 4, :i + 1].float().T) / d ** 0.5
    want = torch.logsumexp(sc, 0).item()
    check(abs(lse[1, h, i].item() - want) < 1e-2 * (1 + abs(want)),
          "lse[1,5,700] %.5f vs %.5f" % (lse[1, h, i].item(), want))

    o2 = fmha.attention(q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous(),
                        v.transpose(1, 2).contiguous(), mask="b", layout="bshd",
                        bundle_dir=args.bundles)
    check(tuple(o2.shape) == (b, s, hq, d), "bshd output shape %s" % (tuple(o2.shape),))
    check(torch.equal(o2.transpose(1, 2), o), "bshd equals bhsd bit for bit")
    check(o2.is_contiguous(), "bshd output in BSHD memory")

    # Strided operands without copies: BSHD memory, packed QKV. The peak
    # memory of the call is o and lse, not a copy of the inputs.
    qs, ks, vs = (t.transpose(1, 2).contiguous() for t in (q, k, v))
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    o4 = fmha.attention(qs, ks, vs, mask="b", layout="bshd", bundle_dir=args.bundles)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    limit = o.numel() * 2 + b * hq * s * 4 + (1 << 20)
    check(extra <= limit, "bshd call allocates %d bytes (o and lse: <= %d; a copy of q "
          "alone is %d)" % (extra, limit, q.numel() * 2))
    check(torch.equal(o4, o2), "bshd again: same bits")
    packed = torch.cat([qs, ks, vs], dim=2)  # [B, S, Hq + 2 Hk, D]
    pq, pk, pv = packed[:, :, :hq], packed[:, :, hq:hq + hk], packed[:, :, hq + hk:]
    check(not pq.is_contiguous() and pk.data_ptr() != packed.data_ptr(), "packed views")
    o5 = fmha.attention(pq, pk, pv, mask="b", layout="bshd", bundle_dir=args.bundles)
    check(torch.equal(o5, o2), "packed QKV views equal bhsd bit for bit")
    # transformers' form: BHSD views of [B, S, H, D] projections.
    o6 = fmha.attention(qs.transpose(1, 2), ks.transpose(1, 2), vs.transpose(1, 2), mask="b",
                        bundle_dir=args.bundles)
    check(torch.equal(o6, o), "transposed BHSD views equal contiguous bit for bit")

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        o3 = fmha.attention(q, k, v, mask="b", bundle_dir=args.bundles)
    stream.synchronize()
    check(torch.equal(o3, o), "on a side stream: same result")

    path = fmha.find_bundle(dict(target="cuda", chip="sm_90a", dtype="bf16", hq=hq, hk=hk, d=d,
                                 dv=d, mask="b"), args.bundles, compile_missing=False)
    kernel = fmha.Kernel(path)
    check(kernel.device_index == torch.cuda.current_device(), "kernel on torch's device")
    out = torch.full_like(o, float("nan"))
    lse_out = torch.empty_like(lse)
    kernel.forward(q, k, v, out, lse_out)
    torch.cuda.synchronize()
    check(torch.equal(out, o) and torch.equal(lse_out, lse), "Kernel.forward into given o, lse")

    def error_of(fn):
        try:
            fn()
        except ValueError as e:
            return str(e)
        return None

    check(error_of(lambda: kernel.forward(q.half(), k, v)) ==
          "q: expected dtype torch.bfloat16 (the bundle's bf16), got torch.float16", "dtype error")
    check(kernel.strided.get("q") == 16 and "lse" in kernel.strided,
          "the bundle takes strided operands: %s" % (kernel.strided,))
    check((error_of(lambda: kernel.forward(q.transpose(2, 3), k, v)) or "").startswith(
        "q: expected a contiguous last dim (stride 1), got strides"), "head-dim stride error")
    view_o, _ = kernel.forward(qs.transpose(1, 2), k, v)
    torch.cuda.synchronize()
    check(torch.equal(view_o, o), "Kernel.forward on a BSHD view: same bits")
    check(error_of(lambda: kernel.forward(q.cpu(), k, v)) ==
          "q is on cpu; a cuda bundle runs on cuda tensors", "device error")
    check(error_of(lambda: kernel.forward(q, k[:, :2].contiguous(), v)) ==
          "k: Hk (dim 1) is 2, expected 4", "head count error")
    try:
        fmha.attention(q, k, v, mask="t:5,0", bundle_dir=args.bundles)
        check(False, "a missing bundle without fmha-compile raises")
    except FileNotFoundError as e:
        check("cannot be compiled here" in str(e), "missing bundle: %s" % str(e)[:100])

    check_sinks(torch, args.bundles)
    check_gradients(torch, args.bundles)
    if failures:
        print("python_test: %d FAILED" % len(failures))
        return 1
    print("python_test: all passed")
    return 0


def reference_attention(torch, q, k, v, causal_bottom_right):
    """float32 attention with autograd, K/V heads repeated for GQA; mask b
    (j <= i + Sk - Sq) or none."""
    group = q.shape[1] // k.shape[1]
    kr, vr = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = (q @ kr.transpose(-1, -2)) / q.shape[-1] ** 0.5
    if causal_bottom_right:
        sq, sk = q.shape[2], k.shape[2]
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        scores = scores.masked_fill(j > i + (sk - sq), float("-inf"))
    p = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return p @ vr


def check_sinks(torch, bundles):
    """fmha.attention(sinks=) (gpt-oss's learned sink logits; the bundle
    fwd-...-sinks.fmha, fmha-compile --sinks) against float32 attention with
    the sink as one more logit column of no value; rows past Sk under b see
    no key: o = 0, lse = sinks[h]. The same call on BSHD memory gives the
    same bits; a sinks tensor of the wrong shape is refused."""
    dev = torch.device("cuda")
    b, hq, hk, sq, sk, d = 2, 16, 4, 300, 200, 128
    q = torch.randn(b, hq, sq, d, device=dev, dtype=torch.bfloat16)
    k = torch.randn(b, hk, sk, d, device=dev, dtype=torch.bfloat16)
    v = torch.randn(b, hk, sk, d, device=dev, dtype=torch.bfloat16)
    sinks = 2 * torch.randn(hq, device=dev, dtype=torch.float32)
    o, lse = fmha.attention(q, k, v, mask="b", bundle_dir=bundles, sinks=sinks,
                            return_lse=True)
    kr, vr = (t.float().repeat_interleave(hq // hk, dim=1) for t in (k, v))
    scores = (q.float() @ kr.transpose(-1, -2)) / d ** 0.5
    i = torch.arange(sq, device=dev)[:, None]
    j = torch.arange(sk, device=dev)[None, :]
    scores = scores.masked_fill(j > i + (sk - sq), float("-inf"))
    sink_col = sinks.view(1, hq, 1, 1).expand(b, hq, sq, 1)
    full = torch.cat([scores, sink_col], dim=-1)
    ref_lse = torch.logsumexp(full, dim=-1)
    ref_o = torch.softmax(full, dim=-1)[..., :sk] @ vr
    err = (o.float() - ref_o).abs().max().item()
    lse_err = (lse - ref_lse).abs().max().item()
    check(err < 2e-2 and lse_err < 2e-2,
          "attention(sinks=) vs float32: max |o diff| %.2e, |lse diff| %.2e" % (err, lse_err))
    lse0 = (lse[:, :, 0] - sinks.view(1, hq)).abs().max().item()
    check(lse0 <= 1e-5 * (1 + sinks.abs().max().item()) and o[:, :, 0].abs().max().item() == 0,
          "a row with no visible key: o = 0, lse = sinks[h] (|diff| %.2e)" % lse0)
    o2 = fmha.attention(q.transpose(1, 2).contiguous(), k.transpose(1, 2).contiguous(),
                        v.transpose(1, 2).contiguous(), mask="b", layout="bshd",
                        bundle_dir=bundles, sinks=sinks)
    check(torch.equal(o2.transpose(1, 2), o), "attention(sinks=) on BSHD memory: same bits")
    try:
        fmha.attention(q, k, v, mask="b", bundle_dir=bundles, sinks=sinks[:4])
        check(False, "sinks of the wrong shape raise")
    except ValueError as e:
        check(str(e) == "sinks: Hq (dim 0) is 4, expected 16", "sinks shape error: %s" % e)

    # Gradients through loss.backward(): dq, dk, dv and dsinks (the backward
    # bundle bwd-...-sinks.fmha) against float32 autograd of the same sink
    # column; BSHD memory too.
    for layout in ("bhsd", "bshd"):
        leaves = [t.detach().clone().requires_grad_() for t in (q, k, v, sinks)]
        ql, kl, vl, sl = leaves
        if layout == "bshd":
            args = [t.transpose(1, 2).contiguous().detach().requires_grad_()
                    for t in (ql, kl, vl)]
            o = fmha.attention(*args, mask="b", layout="bshd", bundle_dir=bundles,
                               sinks=sl).transpose(1, 2)
            grads_of = args + [sl]
        else:
            o = fmha.attention(ql, kl, vl, mask="b", bundle_dir=bundles, sinks=sl)
            grads_of = leaves
        do = torch.randn_like(o)
        (o.float() * do.float()).sum().backward()
        got = [g.grad.float() for g in grads_of]
        if layout == "bshd":
            got = [t.transpose(1, 2) for t in got[:3]] + got[3:]
        ref = [t.detach().float().requires_grad_() for t in (q, k, v, sinks)]
        kr, vr = (t.repeat_interleave(hq // hk, dim=1) for t in ref[1:3])
        sc = (ref[0] @ kr.transpose(-1, -2)) / d ** 0.5
        sc = sc.masked_fill(j > i + (sk - sq), float("-inf"))
        full = torch.cat([sc, ref[3].view(1, hq, 1, 1).expand(b, hq, sq, 1)], dim=-1)
        ref_o = torch.softmax(full, dim=-1)[..., :sk] @ vr
        (ref_o * do.float()).sum().backward()
        for name, g, r in zip(("dq", "dk", "dv", "dsinks"), got, ref):
            rel = (g - r.grad).abs().max().item() / max(r.grad.abs().max().item(), 1e-6)
            # dsinks sums rowsum(dO o) over every row of a head: o in bf16
            # moves it by more than the other gradients.
            check(rel < (5e-2 if name == "dsinks" else 2e-2),
                  "attention(sinks=) %s, %s: %s rel err %.2e (vs float32 autograd)"
                  % (layout, "GQA 4:1 causal", name, rel))


def check_gradients(torch, bundles):
    cases_ = [  # (label, B, Hq, Hk, Sq, Sk, D, mask, deterministic, layout)
        ("GQA 4:1 causal, Sq != Sk", 2, 16, 4, 300, 517, 128, "b", False, "bhsd"),
        ("GQA 4:1 causal, deterministic", 1, 16, 4, 257, 257, 128, "b", True, "bhsd"),
        ("full, MHA, bshd", 1, 32, 32, 130, 200, 64, "0", False, "bshd"),
        ("full, MHA, deterministic", 2, 32, 32, 64, 190, 64, "0", True, "bhsd"),
        # Leaves in BSHD memory: strided operands and gradients, no copies.
        ("GQA 4:1 causal, BSHD memory", 2, 16, 4, 300, 517, 128, "b", False, "bshd-mem"),
        ("GQA 4:1 causal, BSHD memory, deterministic", 1, 16, 4, 257, 300, 128, "b", True,
         "bshd-mem"),
    ]
    dev = torch.device("cuda")
    for label, b, hq, hk, sq, sk, d, mask, det, layout in cases_:
        torch.manual_seed(sq * 7 + sk)
        q = torch.randn(b, hq, sq, d, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b, hk, sk, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn(b, hk, sk, d, device=dev, dtype=torch.bfloat16)
        w = torch.randn(b, hq, sq, d, device=dev, dtype=torch.bfloat16)  # loss = sum(o * w)

        def fmha_grads():
            if layout == "bshd-mem":
                leaves = [t.transpose(1, 2).contiguous().requires_grad_() for t in (q, k, v)]
                o = fmha.attention(*leaves, mask=mask, layout="bshd", bundle_dir=bundles,
                                   deterministic=det).transpose(1, 2)
                (o.float() * w.float()).sum().backward()
                torch.cuda.synchronize()
                check(all(t.grad.is_contiguous() for t in leaves),
                      "BSHD memory: the gradients come back in BSHD memory")
                return o.detach(), [t.grad.transpose(1, 2) for t in leaves]
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            if layout == "bshd":
                args = [t.transpose(1, 2) for t in leaves]
                o = fmha.attention(*args, mask=mask, layout="bshd", bundle_dir=bundles,
                                   deterministic=det).transpose(1, 2)
            else:
                o = fmha.attention(*leaves, mask=mask, bundle_dir=bundles, deterministic=det)
            (o.float() * w.float()).sum().backward()
            torch.cuda.synchronize()
            return o.detach(), [t.grad for t in leaves]

        try:
            o, grads = fmha_grads()
        except Exception as e:
            check(False, "%s: loss.backward() through fmha.attention: %s: %s"
                  % (label, type(e).__name__, str(e)[:300]))
            continue
        ref_leaves = [t.float().requires_grad_() for t in (q, k, v)]
        ref_o = reference_attention(torch, *ref_leaves, causal_bottom_right=mask == "b")
        (ref_o * w.float()).sum().backward()
        o_err = ((o.float() - ref_o.detach()).norm() / ref_o.detach().norm()).item()
        check(o_err < 1e-2, "%s: o rel err %.2e" % (label, o_err))
        for name, g, r in zip(("dq", "dk", "dv"), grads, ref_leaves):
            ok = g is not None and tuple(g.shape) == tuple(r.shape) and bool(torch.isfinite(g).all())
            err = ((g.float() - r.grad).norm() / r.grad.norm()).item() if ok else float("nan")
            check(ok and err < 2e-2, "%s: %s %s rel err %.2e (vs float32 autograd)"
                  % (label, name, tuple(r.shape), err))
        if det:
            _, again = fmha_grads()
            check(all(torch.equal(x, y) for x, y in zip(grads, again)),
                  "%s: a second backward gives the same bits" % label)


if __name__ == "__main__":
    sys.exit(main())
