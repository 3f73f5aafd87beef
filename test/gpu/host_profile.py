#!/usr/bin/env python3
"""Host time per fmha.attention call, BHSD against BSHD (GPU machine):
host microseconds per call (no sync), CUDA-event milliseconds per call
(medians of 10 runs of 10 calls, 5 rounds, with the BSHD/BHSD speed), and
cProfile of 300 calls of each. Bundles come from the cache or FMHA_COMPILE
(the static compiler compiles them there):
    FMHA_COMPILE=fmha-compile-static FMHA_RUNTIME_LIB=.../libfmha_runtime.so \
      PYTHONPATH=python python3 test/gpu/host_profile.py
"""
import cProfile, pstats, io, time, os, sys
import torch, fmha
torch.manual_seed(0)
B, H, S, D = 2, 16, 4096, 128
def make(layout):
    if layout == "bhsd":
        return [torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    return [torch.randn(B, S, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
ts = {l: make(l) for l in ("bhsd", "bshd")}
for l in ts:  # compile + warm
    fmha.attention(*ts[l], mask="b", layout=l)
torch.cuda.synchronize()
def host_us(l, n=300):
    q, k, v = ts[l]
    torch.cuda.synchronize()
    s = time.perf_counter()
    for _ in range(n):
        fmha.attention(q, k, v, mask="b", layout=l)
    e = time.perf_counter()
    torch.cuda.synchronize()
    return (e - s) / n * 1e6
for rnd in range(3):
    print("round", rnd, {l: round(host_us(l), 1) for l in ("bhsd", "bshd")})
def gpu_ms(l, calls=10, reps=10):
    q, k, v = ts[l]
    out = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fmha.attention(q, k, v, mask="b", layout=l)
        b.record(); torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / calls)
    out.sort(); return out[len(out) // 2]
for rnd in range(5):
    r = {l: gpu_ms(l) for l in ("bhsd", "bshd")}
    print("gpu round", rnd, {l: round(x, 4) for l, x in r.items()}, "bshd/bhsd speed %.3f" % (r["bhsd"] / r["bshd"]))
for l in ("bhsd", "bshd"):
    q, k, v = ts[l]
    pr = cProfile.Profile(); pr.enable()
    for _ in range(300):
        fmha.attention(q, k, v, mask="b", layout=l)
    pr.disable(); torch.cuda.synchronize()
    st = io.StringIO(); pstats.Stats(pr, stream=st).sort_stats("tottime").print_stats(12)
    print("== profile", l); print(st.getvalue()[:3500])
