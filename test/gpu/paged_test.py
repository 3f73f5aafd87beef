#!/usr/bin/env python3
"""fmha.attention_with_kvcache on torch CUDA tensors (FlashAttention's
flash_attn_with_kvcache layout) against attention in float64 written out
here over the keys each batch's table row names (GQA by repeat, the mask
bottom-right, learned sinks as one more logit): decode rows and speculative
rows at page sizes 16, 64 and 256 with pages in a shuffled order, spare
pages of NaN and table entries past each length out of range; prefill rows
against a cache with a window and sinks in f16; and the refusal of inputs
that require grad.

  test/gpu/paged_test.py --make-bundles DIR [--bin BIN]   # here (LLVM)
  FMHA_RUNTIME_LIB=... FMHA_CHIP=sm_90a test/gpu/paged_test.py --bundles DIR   # on the GPU

Exit 1 on any failure.
"""

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import fmha  # noqa: E402
from checks import main  # noqa: E402

SIGNATURES = [dict(dtype="bf16", hq=32, hk=8, d=128, dv=128, mask="b", page_size=p)
              for p in (16, 64, 256)] + [
    dict(dtype="f16", hq=8, hk=2, d=64, dv=64, mask="b:127,0", sinks=True, page_size=32)]


def make_bundles(folder, bin_dir):
    compiler = os.path.join(bin_dir, "fmha-compile")
    for sig in SIGNATURES:
        sig = dict(sig, target="cuda", chip="sm_90a")
        path = os.path.join(folder, fmha.bundle_name(**sig))
        fmha.compile_bundle(path, compiler=compiler, **sig)
        print(path)


def ref(q, kc, vc, table, lengths, causal, window, sinks=None):
    """o (B, Sq, Hq, Dv) in float64, each batch over its cache's keys."""
    import torch
    b, sq, hq, _ = q.shape
    page, hk = kc.shape[1], kc.shape[2]
    o = torch.zeros(b, sq, hq, vc.shape[3], dtype=torch.float64, device=q.device)
    for n in range(b):
        sk = lengths[n]
        if sk == 0 and sinks is None:
            continue
        rows = [(table[n][j // page], j % page) for j in range(sk)]
        ks = torch.stack([kc[p, s] for p, s in rows]) if rows else kc.new_zeros(0, hk, kc.shape[3])
        vs = torch.stack([vc[p, s] for p, s in rows]) if rows else vc.new_zeros(0, hk, vc.shape[3])
        qs = q[n].double().transpose(0, 1)
        ks = ks.double().transpose(0, 1).repeat_interleave(hq // hk, 0)
        vs = vs.double().transpose(0, 1).repeat_interleave(hq // hk, 0)
        s = qs @ ks.transpose(1, 2) / math.sqrt(q.shape[3])
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
        o[n] = (p @ vs).transpose(0, 1)
    return o


def run(bundles):
    import torch
    torch.manual_seed(0)
    fails = 0

    def run(name, dtype, hq, hk, d, page, sq, lengths, causal=False, window=(-1, -1),
            sinks=False, spare=5):
        counts = [(n + page - 1) // page for n in lengths]
        pages = sum(counts) + spare
        order = torch.randperm(pages).tolist()
        max_pages = max(1, max(counts)) + 2
        table, at = [], 0
        for c in counts:
            table.append(order[at:at + c] + [2 ** 31 - 1] * (max_pages - c))
            at += c
        kc = torch.randn(pages, page, hk, d, device="cuda", dtype=dtype)
        vc = torch.randn(pages, page, hk, d, device="cuda", dtype=dtype)
        for p in order[at:]:  # spare pages: a read of one shows in o
            kc[p] = float("nan")
            vc[p] = float("nan")
        q = torch.randn(len(lengths), sq, hq, d, device="cuda", dtype=dtype)
        s = torch.randn(hq, device="cuda") * 2 if sinks else None
        bt = torch.tensor(table, dtype=torch.int32, device="cuda")
        sl = torch.tensor(lengths, dtype=torch.int32, device="cuda")
        o, lse = fmha.attention_with_kvcache(q, kc, vc, cache_seqlens=sl, block_table=bt,
                                             causal=causal, window_size=window, sinks=s,
                                             bundle_dir=bundles, return_softmax_lse=True)
        torch.cuda.synchronize()
        r = ref(q, kc, vc, table, lengths, causal, window, s)
        err = ((o.double() - r).norm() / r.norm()).item()
        ok = err < 2e-2 and tuple(o.shape) == (len(lengths), sq, hq, d) and \
            tuple(lse.shape) == (len(lengths), hq, sq)
        print("%s %s rel_err=%.3e %s" % ("PASS" if ok else "FAIL", name, err, tuple(o.shape)),
              flush=True)
        return 0 if ok else 1

    lengths = [513, 4000, 1, 77, 1000, 0, 64, 65]
    for page in (16, 64, 256):
        fails += run("decode-page%d" % page, torch.bfloat16, 32, 8, 128, page, 1, lengths,
                     causal=True)
        fails += run("speculative-page%d" % page, torch.bfloat16, 32, 8, 128, page, 4,
                     [n + 4 for n in lengths], causal=True)
    fails += run("prefill-window-sinks-f16", torch.float16, 8, 2, 64, 32, 300,
                 [700, 300, 1000], window=(127, 0), sinks=True)
    kc = torch.randn(4, 16, 8, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    q = torch.randn(1, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
    try:
        fmha.attention_with_kvcache(q, kc, kc, cache_seqlens=3,
                                    block_table=torch.zeros(1, 1, dtype=torch.int32,
                                                            device="cuda"),
                                    causal=True, bundle_dir=bundles)
        print("FAIL inputs that require grad were not refused")
        fails += 1
    except ValueError as e:
        print("PASS grad refused: %s" % e)
    print("failures: %d" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(__doc__, make_bundles, run))
