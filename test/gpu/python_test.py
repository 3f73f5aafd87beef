#!/usr/bin/env python3
"""The fmha Python module on real PyTorch CUDA tensors (GPU machine only).

    FMHA_RUNTIME_LIB=build/lib/libfmha_runtime.so \\
      python3 test/gpu/python_test.py --bundles build/gpu-bundles

fmha.attention (bundle lookup by signature, the chip from the device, o and
lse allocated, BHSD and BSHD layouts, a non-default stream) and
fmha.Kernel.forward, compared with SDPA; the ValueErrors of bad tensors.
Prints one line per check; exit 1 on any failure.
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
    check(error_of(lambda: kernel.forward(q.transpose(2, 3), k, v)) is not None and
          "expected a contiguous" in error_of(lambda: kernel.forward(
              q.transpose(1, 2).contiguous().transpose(1, 2), k, v)), "contiguity error")
    check(error_of(lambda: kernel.forward(q.cpu(), k, v)) ==
          "q is on cpu; a cuda bundle runs on cuda tensors", "device error")
    check(error_of(lambda: kernel.forward(q, k[:, :2].contiguous(), v)) ==
          "k: Hk (dim 1) is 2, expected 4", "head count error")
    try:
        fmha.attention(q, k, v, mask="t:5,0", bundle_dir=args.bundles)
        check(False, "a missing bundle without fmha-compile raises")
    except FileNotFoundError as e:
        check("cannot be compiled here" in str(e), "missing bundle: %s" % str(e)[:100])
    if failures:
        print("python_test: %d FAILED" % len(failures))
        return 1
    print("python_test: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
