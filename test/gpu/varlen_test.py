#!/usr/bin/env python3
"""fmha.attention_varlen on torch CUDA tensors (FlashAttention's varlen
layout) against per-sequence attention in float64 written out here (GQA by
repeat, the mask bottom-right and local to each sequence, learned sinks as
one more logit): causal GQA at D 128 with empty and one-row sequences,
packed QKV, a window with sinks in f16, decode rows against 0..4000 keys,
and the refusal of inputs that require grad.

  test/gpu/varlen_test.py --make-bundles DIR [--bin BIN]   # here (LLVM)
  FMHA_RUNTIME_LIB=... FMHA_CHIP=sm_90a test/gpu/varlen_test.py --bundles DIR   # on the GPU

Exit 1 on any failure.
"""

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import fmha  # noqa: E402
from checks import main  # noqa: E402

SIGNATURES = [
    dict(dtype="bf16", hq=16, hk=4, d=128, dv=128, mask="b"),
    dict(dtype="bf16", hq=8, hk=8, d=64, dv=64, mask="0"),
    dict(dtype="f16", hq=8, hk=2, d=64, dv=64, mask="b:127,0", sinks=True),
]


def make_bundles(folder, bin_dir):
    compiler = os.path.join(bin_dir, "fmha-compile")
    for sig in SIGNATURES:
        sig = dict(sig, target="cuda", chip="sm_90a", varlen=True)
        path = os.path.join(folder, fmha.bundle_name(**sig))
        fmha.compile_bundle(path, compiler=compiler, **sig)
        print(path)


def ref(q, k, v, cu_q, cu_k, causal, window, sinks=None):
    """o (total_q, Hq, Dv) in float64, each sequence on its own."""
    import torch
    o = torch.zeros(q.shape[0], q.shape[1], v.shape[2], dtype=torch.float64, device=q.device)
    hq, hk = q.shape[1], k.shape[1]
    for n in range(len(cu_q) - 1):
        a, a1 = cu_q[n], cu_q[n + 1]
        c, c1 = cu_k[n], cu_k[n + 1]
        sq, sk = a1 - a, c1 - c
        if sq == 0 or sk == 0:  # no key: o = 0
            continue
        qs = q[a:a1].double().transpose(0, 1)
        ks = k[c:c1].double().transpose(0, 1).repeat_interleave(hq // hk, 0)
        vs = v[c:c1].double().transpose(0, 1).repeat_interleave(hq // hk, 0)
        s = qs @ ks.transpose(1, 2) / math.sqrt(q.shape[2])
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        vis = torch.ones(sq, sk, dtype=torch.bool, device=q.device)
        off = sk - sq
        if causal or window[1] >= 0:
            vis &= j <= i + off + (0 if causal else window[1])
        if window[0] >= 0:
            vis &= j >= i + off - window[0]
        s = s.masked_fill(~vis, -math.inf)
        if sinks is not None:
            s = torch.cat([s, sinks.double()[:, None, None].expand(hq, sq, 1)], 2)
            vs = torch.cat([vs, vs.new_zeros(hq, 1, vs.shape[2])], 1)
        m = s.amax(-1, keepdim=True).clamp(min=-1e30)
        p = torch.exp(s - m)
        p = torch.nan_to_num(p / p.sum(-1, keepdim=True).clamp(min=1e-300))
        o[a:a1] = (p @ vs).transpose(0, 1)
    return o


def run(bundles):
    import torch
    torch.manual_seed(0)
    fails = 0

    def run(name, dtype, hq, hk, d, lq, lk, causal=False, window=(-1, -1), sinks=False,
            packed=False):
        cu_q, cu_k = [0], [0]
        for x in lq:
            cu_q.append(cu_q[-1] + x)
        for x in lk:
            cu_k.append(cu_k[-1] + x)
        if packed:
            qkv = torch.randn(cu_q[-1], 3, hq, d, device="cuda", dtype=dtype)
            q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        else:
            q = torch.randn(cu_q[-1], hq, d, device="cuda", dtype=dtype)
            k = torch.randn(cu_k[-1], hk, d, device="cuda", dtype=dtype)
            v = torch.randn(cu_k[-1], hk, d, device="cuda", dtype=dtype)
        s = torch.randn(hq, device="cuda") * 2 if sinks else None
        cq = torch.tensor(cu_q, dtype=torch.int32, device="cuda")
        ck = torch.tensor(cu_k, dtype=torch.int32, device="cuda")
        o, lse = fmha.attention_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=causal,
                                       window_size=window, sinks=s, bundle_dir=bundles,
                                       return_lse=True)
        torch.cuda.synchronize()
        r = ref(q, k, v, cu_q, cu_k, causal, window, s)
        err = ((o.double() - r).norm() / r.norm()).item()
        ok = err < 2e-2 and tuple(o.shape) == (cu_q[-1], hq, d) and \
            tuple(lse.shape) == (hq, cu_q[-1])
        print("%s %s rel_err=%.3e %s" % ("PASS" if ok else "FAIL", name, err, tuple(o.shape)),
              flush=True)
        return 0 if ok else 1

    fails += run("gqa-causal-d128", torch.bfloat16, 16, 4, 128, [973, 3, 0, 1, 700, 129],
                 [973, 3, 5, 1, 700, 300], causal=True)
    fails += run("full-d64-packed", torch.bfloat16, 8, 8, 64, [100, 257, 1, 64],
                 [100, 257, 1, 64], packed=True)
    fails += run("window-sinks-f16", torch.float16, 8, 2, 64, [500, 1, 1, 33],
                 [700, 4000, 0, 33], window=(127, 0), sinks=True)
    fails += run("decode-d128", torch.bfloat16, 16, 4, 128, [1] * 8,
                 [513, 4000, 1, 77, 1000, 0, 64, 65], causal=True)
    q = torch.randn(5, 16, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    cu = torch.tensor([0, 5], dtype=torch.int32, device="cuda")
    try:
        fmha.attention_varlen(q, q[:, :4], q[:, :4], cu, cu, 5, 5, causal=True,
                              bundle_dir=bundles)
        print("FAIL inputs that require grad were not refused")
        fails += 1
    except ValueError as e:
        print("PASS grad refused: %s" % e)
    print("failures: %d" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(__doc__, make_bundles, run))
