#!/usr/bin/env python3
"""Forward attention benchmark on the GPU: FMHA (through the fmha Python
module) against PyTorch SDPA with the flash and the cuDNN backends and
against FlexAttention, on the same inputs.

    python3 test/gpu/bench.py --bundles gpu-bundles --out bench-out

Problems (cases.py): bf16, 16k tokens per batch (B = 16384 // seqlen),
hidden 2048 (Hq = 2048 // hdim), hdim 64 and 128, seqlen 1k, 4k, 16k, and
the configurations full, causal, GQA 4:1 causal (Hk = Hq / 4) and a 4096
window with 4 sink tokens (mask b:4095,0,4).

Each system's output is checked before it is timed: against a float32
reference on a slice (batch 0, the first and last query heads) and, on the
whole tensor, against FMHA's output (max |difference| reported). A system
whose output is off (or NaN) is reported as wrong and not timed. Times are
the median of many runs after warm-up (triton.testing.do_bench,
return_mode="median", which also clears the L2 cache between runs; CUDA
events without triton). FLOPs = 4 * B * Hq * visible_pairs * D, counting
only the (i, j) pairs the mask leaves visible (causal: about half).

Writes OUT/bench.md, OUT/bench.csv, OUT/bench.json and, when matplotlib is
there, OUT/bench.png (TFLOP/s against seqlen, one line per system, one panel
per configuration and hdim). A system that does not support a case prints
n/a with the reason.

--bwd times the backward instead (OUT/bench-bwd.*): FMHA's backward bundles,
atomic dQ ("fmha") and deterministic ("fmha-det"), on the o and lse of
FMHA's forward, against SDPA flash and cuDNN, whose backward is
torch.autograd.grad(o, (q, k, v), dO) of F.scaled_dot_product_attention
under the sdpa_kernel context (only the backward is timed; the forward
graph is kept). Configurations full, causal and GQA 4:1 causal (cases.py,
BWD_BENCH_CONFIGS). Every system's dq, dk, dv are checked before timing
against a float32 reference of batch 0 and the query heads of the first and
last kv heads (relative error ||x - ref|| / ||ref|| per tensor, --bwd-tol;
NaN fails) and against FMHA's. FLOPs = 2.5x the forward's. The table has
fmha / sdpa-flash, fmha / sdpa-cudnn and the deterministic cost (fmha-det
time / fmha time).
"""

import argparse
import csv
import json
import math
import os
import statistics
import sys
import time
import traceback

import cases
import fmha

SYSTEMS = ["fmha", "sdpa-flash", "sdpa-cudnn", "flex"]
BWD_SYSTEMS = ["fmha", "fmha-det", "sdpa-flash", "sdpa-cudnn"]
ALL_SYSTEMS = SYSTEMS + ["fmha-det"]


class NotSupported(Exception):
    """A system that does not run a case: the message is the reason."""


def first_line(e):
    text = str(e).strip().splitlines()
    return (type(e).__name__ + ": " + (text[0] if text else "")).strip()[:160]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundles", required=True, help="folder from make_bundles (manifest.json)")
    ap.add_argument("--out", default="bench-out", help="folder for the table and plot")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of %s" % SYSTEMS)
    ap.add_argument("--configs", default=",".join(cases.BENCH_CONFIGS))
    ap.add_argument("--hdims", default=",".join(map(str, cases.BENCH_HDIMS)))
    ap.add_argument("--seqlens", default=",".join(map(str, cases.BENCH_SEQLENS)))
    ap.add_argument("--warmup-ms", type=float, default=25)
    ap.add_argument("--rep-ms", type=float, default=150)
    ap.add_argument("--tol", type=float, default=3e-2,
                    help="max |o - float32 reference| allowed before a system counts as wrong")
    ap.add_argument("--budget-s", type=float, default=420,
                    help="after this many seconds FlexAttention (slow to compile) is skipped, "
                         "and after 90 s more every remaining case")
    ap.add_argument("--bwd", action="store_true",
                    help="time the backward (systems %s)" % BWD_SYSTEMS)
    ap.add_argument("--bwd-tol", type=float, default=3e-2,
                    help="max relative error of dq, dk, dv against the float32 reference")
    args = ap.parse_args()
    known = BWD_SYSTEMS if args.bwd else SYSTEMS
    if args.bwd:
        if args.systems == ",".join(SYSTEMS):
            args.systems = ",".join(BWD_SYSTEMS)
        if args.configs == ",".join(cases.BENCH_CONFIGS):
            args.configs = ",".join(cases.BWD_BENCH_CONFIGS)

    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        sys.exit("bench: no CUDA device visible to torch")
    systems = [s for s in args.systems.split(",") if s]
    for s in systems:
        if s not in known:
            sys.exit("bench: unknown system %r (of %s)" % (s, known))
    configs = [c for c in args.configs.split(",") if c]
    for c in configs:
        if c not in cases.BENCH_CONFIGS:
            sys.exit("bench: unknown config %r (of %s)" % (c, list(cases.BENCH_CONFIGS)))
    # A head dim D, or D-Dv (DeepSeek's 192-128): q and k take D, v and o Dv.
    try:
        hdims = [tuple(int(y) for y in x.split("-")) for x in args.hdims.split(",") if x]
        if any(len(h) not in (1, 2) for h in hdims):
            raise ValueError
        hdims = [(h[0], h[-1]) for h in hdims]
    except ValueError:
        sys.exit("bench: --hdims takes D or D-Dv, comma-separated, not %r" % args.hdims)
    if args.bwd and any(d != dv for d, dv in hdims):
        sys.exit("bench: --bwd takes D = Dv")
    seqlens = [int(x) for x in args.seqlens.split(",") if x]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.bundles, "manifest.json")) as f:
        manifest = {e["file"]: e for e in json.load(f)["bundles"]}

    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        SDPBackend = sdpa_kernel = None
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        import torch._dynamo
        for knob in ("cache_size_limit", "recompile_limit"):
            if hasattr(torch._dynamo.config, knob):
                setattr(torch._dynamo.config, knob, 256)
        flex_compiled = torch.compile(flex_attention, dynamic=False)
    except Exception as e:  # no FlexAttention in this torch
        flex_compiled, flex_error = None, first_line(e)
    try:
        from triton.testing import do_bench
        timer_name = "triton.testing.do_bench(return_mode='median')"
    except ImportError:
        do_bench = None
        timer_name = "CUDA events, median"

    def time_ms(fn):
        if do_bench is not None:
            return float(do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median"))
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        times = []
        deadline = time.time() + args.rep_ms / 1e3
        while len(times) < 5 or (time.time() < deadline and len(times) < 1000):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times)

    props = torch.cuda.get_device_properties(0)
    print("bench: %s, torch %s, %s; fmha runtime %s (%s)"
          % (props.name, torch.__version__, timer_name, fmha.runtime_version(),
             fmha.backend_description("cuda")), flush=True)

    kernels = {}
    rows = []
    t_start = time.time()

    def kernel_for(sig):
        """The loaded bundle of `sig`, or NotSupported saying why not."""
        name = fmha.bundle_name(**sig)
        entry = manifest.get(name)
        if entry is None:
            raise NotSupported("no bundle %s (run make_bundles)" % name)
        if entry.get("error"):
            raise NotSupported("%s did not compile: %s" % (name, entry["error"]))
        path = os.path.join(args.bundles, name)
        if path not in kernels:
            kernels[path] = fmha.Kernel(path)
        return kernels[path]

    if args.bwd:
        rows = bench_backward(args, torch, F, systems, configs, [d for d, _ in hdims],
                              seqlens, time_ms,
                              kernel_for, sdpa_kernel, SDPBackend)
        write_outputs(args.out, rows, systems, timer_name, props.name, torch.__version__,
                      backward=True)
        print("bench: %.0f s; wrote %s" % (time.time() - t_start,
                                            ", ".join(sorted(os.listdir(args.out)))))
        return report_failures(rows, systems)

    for config in configs:
        mask, group = cases.BENCH_CONFIGS[config]
        spec = cases.parse_mask(mask)
        for hdim, dv in hdims:
            for seqlen in seqlens:
                elapsed = time.time() - t_start
                b = cases.BENCH_TOKENS // seqlen
                hq = cases.BENCH_HIDDEN // hdim
                hk = hq // group
                label = hdim if dv == hdim else "%d-%d" % (hdim, dv)
                row = {"config": config, "mask": mask, "hdim": label, "seqlen": seqlen,
                       "batch": b, "hq": hq, "hk": hk, "results": {}, "notes": []}
                rows.append(row)
                if elapsed > args.budget_s + 90:
                    for s in systems:
                        row["results"][s] = {"status": "n/a", "reason": "time budget"}
                    continue
                # 2 flops a multiply-add: D for the scores, Dv for P V.
                flops = 2.0 * b * hq * cases.visible_pairs(mask, seqlen, seqlen) * (hdim + dv)
                row["tflop"] = flops / 1e12
                torch.manual_seed(seqlen * 131 + hdim + (dv - hdim) * 7)
                dev = torch.device("cuda")
                q = torch.randn(b, hq, seqlen, hdim, device=dev, dtype=torch.bfloat16)
                k = torch.randn(b, hk, seqlen, hdim, device=dev, dtype=torch.bfloat16)
                v = torch.randn(b, hk, seqlen, dv, device=dev, dtype=torch.bfloat16)
                scale = 1.0 / math.sqrt(hdim)
                causal = spec is not None and spec[1] is None and spec[2] == 0 and spec[3] == 0
                gqa = hk != hq
                heads = sorted({0, hq - 1})
                ref = reference_slice(torch, q, k, v, spec, heads, scale)

                mask_mod = flex_mask_mod(spec)

                def run_fmha():
                    kernel = kernel_for(cases.bench_signature(config, hdim, dv))
                    o = torch.empty(b, hq, seqlen, dv, device=dev, dtype=torch.bfloat16)
                    lse = torch.empty(b, hq, seqlen, device=dev, dtype=torch.float32)
                    return (lambda: kernel.forward(q, k, v, o, lse)[0]), None, ""

                def run_sdpa(backend_name):
                    if sdpa_kernel is None:
                        raise NotSupported("torch.nn.attention.sdpa_kernel is missing")
                    backend = getattr(SDPBackend, backend_name)
                    note = ""
                    if spec is not None and not causal:
                        if backend_name == "FLASH_ATTENTION":
                            raise NotSupported("the flash backend takes is_causal only: no "
                                               "window, no sinks, no attn_mask")
                        # cuDNN: an explicit boolean mask (True = attend).
                        i = torch.arange(seqlen, device=dev)
                        allowed = mask_mod(None, None, i[:, None], i[None, :])
                        kwargs = dict(attn_mask=allowed)
                        note = "explicit [S,S] bool attn_mask"
                    else:
                        kwargs = dict(is_causal=causal)
                    kk, vv = k, v
                    if gqa:
                        try:
                            with sdpa_kernel(backend):
                                F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kwargs)
                            kwargs["enable_gqa"] = True
                            note = (note + "; " if note else "") + "GQA via enable_gqa"
                        except Exception:
                            kk = k.repeat_interleave(group, dim=1)
                            vv = v.repeat_interleave(group, dim=1)
                            note = ((note + "; " if note else "") +
                                    "GQA via repeat_interleave (outside the timed call)")

                    def fn():
                        return F.scaled_dot_product_attention(q, kk, vv, **kwargs)
                    return fn, lambda: sdpa_kernel(backend), note

                def run_flex():
                    if flex_compiled is None:
                        raise NotSupported("FlexAttention unavailable: " + flex_error)
                    if time.time() - t_start > args.budget_s:
                        raise NotSupported("time budget (FlexAttention compiles per shape)")
                    block_mask = None
                    if spec is not None:
                        block_mask = create_block_mask(mask_mod, None, None, seqlen, seqlen,
                                                       device=dev)
                    kw = dict(block_mask=block_mask)
                    if gqa:
                        kw["enable_gqa"] = True
                    return (lambda: flex_compiled(q, k, v, **kw)), None, \
                        ("GQA via enable_gqa" if gqa else "")

                makers = {"fmha": run_fmha, "sdpa-flash": lambda: run_sdpa("FLASH_ATTENTION"),
                          "sdpa-cudnn": lambda: run_sdpa("CUDNN_ATTENTION"), "flex": run_flex}
                fmha_out = {}

                def check(s, res, out):
                    torch.cuda.synchronize()
                    if torch.isnan(out).any():
                        raise WrongOutput("NaN in the output")
                    err = (out[0, heads].float() - ref).abs().max().item()
                    res["ref_err"] = err
                    if fmha_out:
                        res["diff_vs_fmha"] = (out.float() - fmha_out["o"].float()).abs().max().item()
                    if not err <= args.tol:
                        raise WrongOutput("max |o - ref| = %.3g > %.3g" % (err, args.tol))
                    if s == "fmha":
                        fmha_out["o"] = out.clone()

                for s in systems:
                    row["results"][s] = run_system(s, makers[s], check, time_ms, flops)
                print_row(row, systems)
                del q, k, v, ref, fmha_out
                torch.cuda.empty_cache()

    write_outputs(args.out, rows, systems, timer_name, props.name, torch.__version__)
    print("bench: %.0f s; wrote %s" % (time.time() - t_start,
                                        ", ".join(sorted(os.listdir(args.out)))))
    return report_failures(rows, systems)


def run_system(name, make, check, time_ms, flops):
    """One system on one row: make() gives (fn, context or None, note);
    check(name, result, fn()) raises WrongOutput when the output is off;
    then fn is timed. Returns the result: status ok (ms, tflops), wrong or
    n/a, with the reason."""
    res = {"status": "n/a"}
    try:
        fn, ctx, note = make()
        res["note"] = note
        with (ctx() if ctx else _Null()):
            check(name, res, fn())
            ms = time_ms(fn)
        res.update(status="ok", ms=ms, tflops=flops / (ms * 1e-3) / 1e12)
    except NotSupported as e:
        res["reason"] = str(e)
    except WrongOutput as e:
        res.update(status="wrong", reason=str(e))
    except Exception as e:
        res["reason"] = first_line(e)
        if os.environ.get("FMHA_BENCH_TRACEBACK"):
            traceback.print_exc()
    return res


def report_failures(rows, systems):
    """Exit status: 1 when FMHA's output was wrong or FMHA failed to run in
    any case (n/a for a missing bundle counts too), else 0. Peers that are
    n/a do not count; a peer that is WRONG is reported but does not fail."""
    bad = []
    for r in rows:
        for s in systems:
            res = r["results"].get(s, {})
            if s.startswith("fmha") and res.get("status") != "ok" and \
                    res.get("reason") != "time budget":
                bad.append("%s %s d=%s S=%d: %s" % (s, r["config"], r["hdim"], r["seqlen"],
                                                    res.get("reason", res.get("status"))))
    for line in bad:
        print("bench: FAIL " + line)
    if bad:
        print("bench: %d FMHA case(s) failed or did not run" % len(bad))
        return 1
    return 0


def bench_backward(args, torch, F, systems, configs, hdims, seqlens, time_ms, kernel_for,
                   sdpa_kernel, SDPBackend):
    """The --bwd rows: each system's dq, dk, dv checked, then its backward
    timed."""
    rows = []
    t_start = time.time()
    dev = torch.device("cuda")
    for config in configs:
        mask, group = cases.BENCH_CONFIGS[config]
        spec = cases.parse_mask(mask)
        causal = spec is not None and spec[1] is None and spec[2] == 0 and spec[3] == 0
        for hdim in hdims:
            for seqlen in seqlens:
                b = cases.BENCH_TOKENS // seqlen
                hq = cases.BENCH_HIDDEN // hdim
                hk = hq // group
                row = {"config": config, "mask": mask, "hdim": hdim, "seqlen": seqlen,
                       "batch": b, "hq": hq, "hk": hk, "results": {}, "notes": []}
                rows.append(row)
                if time.time() - t_start > args.budget_s + 90:
                    for s in systems:
                        row["results"][s] = {"status": "n/a", "reason": "time budget"}
                    print_row(row, systems)
                    continue
                flops = 2.5 * 4.0 * b * hq * cases.visible_pairs(mask, seqlen, seqlen) * hdim
                row["tflop"] = flops / 1e12
                torch.manual_seed(seqlen * 131 + hdim + 7)
                shape_q, shape_k = (b, hq, seqlen, hdim), (b, hk, seqlen, hdim)
                q = torch.randn(shape_q, device=dev, dtype=torch.bfloat16)
                k = torch.randn(shape_k, device=dev, dtype=torch.bfloat16)
                v = torch.randn(shape_k, device=dev, dtype=torch.bfloat16)
                do = torch.randn(shape_q, device=dev, dtype=torch.bfloat16)
                scale = 1.0 / math.sqrt(hdim)
                kv_heads = sorted({0, hk - 1})
                heads = [h for kh in kv_heads for h in range(kh * group, (kh + 1) * group)]
                ref = reference_grads_slice(torch, q, k, v, do, spec, kv_heads, group, scale)

                fwd_state = {}

                def fmha_forward():
                    """o, lse of FMHA's forward (computed once per row)."""
                    if "o" not in fwd_state:
                        kernel = kernel_for(cases.bench_signature(config, hdim))
                        o, lse = kernel.forward(q, k, v)
                        torch.cuda.synchronize()
                        fwd_state["o"], fwd_state["lse"] = o, lse
                    return fwd_state["o"], fwd_state["lse"]

                def run_fmha(deterministic):
                    bwd = kernel_for(cases.bwd_bench_signature(config, hdim, deterministic))
                    o, lse = fmha_forward()
                    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
                    ws = torch.empty(bwd.backward_workspace_bytes(b, seqlen, seqlen),
                                     dtype=torch.uint8, device=dev)

                    def fn():
                        return bwd.backward(q, k, v, o, lse, do, dq, dk, dv, workspace=ws)
                    note = "deterministic dQ" if deterministic else "atomic dQ"
                    return fn, None, note

                def run_sdpa(backend_name):
                    if sdpa_kernel is None:
                        raise NotSupported("torch.nn.attention.sdpa_kernel is missing")
                    backend = getattr(SDPBackend, backend_name)
                    if spec is not None and not causal:
                        raise NotSupported("a mask other than causal is not benchmarked here")
                    qq, kk, vv = (t.detach().clone().requires_grad_() for t in (q, k, v))
                    kwargs = dict(is_causal=causal)
                    note = ""
                    with sdpa_kernel(backend):
                        if group > 1:
                            try:
                                out = F.scaled_dot_product_attention(qq, kk, vv, enable_gqa=True,
                                                                     **kwargs)
                                torch.autograd.grad(out, (qq, kk, vv), do)
                                kwargs["enable_gqa"] = True
                                note = "GQA via enable_gqa"
                            except Exception:
                                note = "GQA via repeat_interleave (its backward is timed too)"

                        def forward():
                            k2, v2 = kk, vv
                            if group > 1 and "enable_gqa" not in kwargs:
                                k2 = kk.repeat_interleave(group, dim=1)
                                v2 = vv.repeat_interleave(group, dim=1)
                            return F.scaled_dot_product_attention(qq, k2, v2, **kwargs)
                        out = forward()

                    def fn():
                        return torch.autograd.grad(out, (qq, kk, vv), do, retain_graph=True)
                    return fn, lambda: sdpa_kernel(backend), note

                makers = {"fmha": lambda: run_fmha(False), "fmha-det": lambda: run_fmha(True),
                          "sdpa-flash": lambda: run_sdpa("FLASH_ATTENTION"),
                          "sdpa-cudnn": lambda: run_sdpa("CUDNN_ATTENTION")}
                fmha_grads = []

                def check(s, res, grads):
                    torch.cuda.synchronize()
                    errs = {}
                    for name, g, want, sel in zip(("dq", "dk", "dv"), grads, ref,
                                                  (heads, kv_heads, kv_heads)):
                        if torch.isnan(g).any():
                            raise WrongOutput("NaN in " + name)
                        got = g[0, sel].float()
                        errs[name] = ((got - want).norm() / want.norm().clamp_min(1e-30)).item()
                    res["grad_err"] = errs
                    if fmha_grads:
                        res["diff_vs_fmha"] = max((g.float() - f.float()).abs().max().item()
                                                  for g, f in zip(grads, fmha_grads))
                    worst = max(errs, key=errs.get)
                    if not errs[worst] <= args.bwd_tol:
                        raise WrongOutput("%s relative error %.3g > %.3g"
                                          % (worst, errs[worst], args.bwd_tol))
                    if s == "fmha":
                        fmha_grads.extend(g.clone() for g in grads)

                for s in systems:
                    row["results"][s] = run_system(s, makers[s], check, time_ms, flops)
                print_row(row, systems)
                del q, k, v, do, ref, fmha_grads, fwd_state
                torch.cuda.empty_cache()
    return rows


def reference_grads_slice(torch, q, k, v, do, spec, kv_heads, group, scale, chunk=2048):
    """float32 dq, dk, dv of batch 0 for the kv heads `kv_heads` and their
    query heads (kv head kh: query heads kh*group .. (kh+1)*group - 1), Sq ==
    Sk, mask `spec` (cases.parse_mask). Returns (dq [len(kv_heads)*group, S,
    D], dk [len(kv_heads), S, D], dv [len(kv_heads), S, Dv]), chunked over
    query rows: lse first, then P, dP = dO v^T, Dsum = rowsum(dO * o),
    dS = P (dP - Dsum)."""
    s = q.shape[2]
    dqs, dks, dvs = [], [], []
    for kh in kv_heads:
        kf, vf = k[0, kh].float(), v[0, kh].float()
        dk = torch.zeros_like(kf)
        dv = torch.zeros_like(vf)
        for h in range(kh * group, (kh + 1) * group):
            qh, doh = q[0, h].float(), do[0, h].float()
            dq = torch.empty_like(qh)
            for start in range(0, s, chunk):
                n = min(chunk, s - start)
                sc = masked_scores(torch, qh[start:start + n], kf, scale, spec, start)
                lse = torch.logsumexp(sc, dim=-1, keepdim=True)
                p = torch.exp(sc - lse).nan_to_num(0.0)
                o = p @ vf
                dsum = (doh[start:start + n] * o).sum(-1, keepdim=True)
                ds = p * (doh[start:start + n] @ vf.T - dsum)
                dq[start:start + n] = scale * (ds @ kf)
                dk += scale * (ds.T @ qh[start:start + n])
                dv += p.T @ doh[start:start + n]
            dqs.append(dq)
        dks.append(dk)
        dvs.append(dv)
    return torch.stack(dqs), torch.stack(dks), torch.stack(dvs)


_mask_mods = {}


def flex_mask_mod(spec):
    """The mask (Sq == Sk, so both anchors agree) as a FlexAttention mask_mod
    with its numbers written into its code: every mask gets a code object of
    its own. (One function with the numbers in default arguments or a
    closure let torch.compile reuse the causal mask's compiled kernel for
    the window-with-sinks mask of the same shape.)"""
    if spec is None:
        return None
    if spec not in _mask_mods:
        _, left, right, sink = spec
        terms = []
        if left is not None:
            terms.append("(q_idx - kv_idx <= %d)" % left)
        if right is not None:
            terms.append("(kv_idx - q_idx <= %d)" % right)
        expr = " & ".join(terms) or "(q_idx >= 0) & (kv_idx >= 0)"
        if sink:
            expr = "(%s) | (kv_idx < %d)" % (expr, sink)
        name = "<fmha mask %s>" % (spec,)
        namespace = {}
        exec(compile("def mask_mod(b, h, q_idx, kv_idx):\n    return %s\n" % expr, name, "exec"),
             namespace)
        _mask_mods[spec] = namespace["mask_mod"]
    return _mask_mods[spec]


class WrongOutput(Exception):
    pass


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def reference_slice(torch, q, k, v, spec, heads, scale, chunk=4096):
    """float32 attention of batch 0 for the query heads `heads`, with the
    mask `spec` (cases.parse_mask) and Sq == Sk; rows without a visible key
    give 0. Chunked over query rows."""
    hq, hk = q.shape[1], k.shape[1]
    s = q.shape[2]
    out = torch.empty(len(heads), s, v.shape[3], device=q.device, dtype=torch.float32)
    for n, h in enumerate(heads):
        kh = h // (hq // hk)
        kf, vf = k[0, kh].float(), v[0, kh].float()
        for start in range(0, s, chunk):
            rows = q[0, h, start:start + chunk].float()
            scores = masked_scores(torch, rows, kf, scale, spec, start)
            p = torch.softmax(scores, dim=-1).nan_to_num(0.0)
            out[n, start:start + len(rows)] = p @ vf
    return out


def masked_scores(torch, rows, kf, scale, spec, start):
    """scale * rows @ kf^T for the query rows start.. (float32), -inf where
    the mask `spec` (cases.parse_mask; Sq == Sk) hides a key."""
    scores = (rows @ kf.T) * scale
    if spec is None:
        return scores
    _, left, right, sink = spec
    i = torch.arange(start, start + rows.shape[0], device=rows.device)
    j = torch.arange(kf.shape[0], device=rows.device)
    ok = torch.ones(scores.shape, dtype=torch.bool, device=rows.device)
    if left is not None:
        ok &= (i[:, None] - j[None, :]) <= left
    if right is not None:
        ok &= (j[None, :] - i[:, None]) <= right
    if sink:
        ok |= j[None, :] < sink
    return scores.masked_fill(~ok, float("-inf"))


def fmt_cell(res):
    if res.get("status") == "ok":
        return "%.1f" % res["tflops"]
    if res.get("status") == "wrong":
        return "WRONG"
    return "n/a"


def print_row(row, systems):
    cells = ["%-16s d=%-3s S=%-5d B=%-2d Hq=%-2d Hk=%-2d" % (row["config"], row["hdim"], row["seqlen"],
                                                          row["batch"], row["hq"], row["hk"])]
    for s in systems:
        cells.append("%s %s" % (s, fmt_cell(row["results"][s])))
    print("  ".join(cells), flush=True)
    for s in systems:
        res = row["results"][s]
        extra = []
        if res.get("status") == "ok":
            extra.append("%.3f ms" % res["ms"])
        if "ref_err" in res:
            extra.append("max|o-ref| %.2e" % res["ref_err"])
        if "grad_err" in res:
            extra.append("rel err vs ref " + " ".join(
                "%s %.1e" % (n, e) for n, e in res["grad_err"].items()))
        if "diff_vs_fmha" in res:
            extra.append("max|diff vs fmha| %.2e" % res["diff_vs_fmha"])
        if res.get("note"):
            extra.append(res["note"])
        if res.get("reason"):
            extra.append(res["reason"])
        print("      %-11s %s" % (s, "; ".join(extra)), flush=True)


def ratio(row, a="fmha", b="sdpa-flash"):
    """TFLOP/s of `a` over `b` (time of b over time of a), or None."""
    ra, rb = row["results"].get(a, {}), row["results"].get(b, {})
    if ra.get("status") == "ok" and rb.get("status") == "ok":
        return ra["tflops"] / rb["tflops"]
    return None


def ratio_columns(systems, backward):
    """(header, a, b) of the ratio columns: a's TFLOP/s over b's (b's time
    over a's)."""
    cols = []
    peers = ["sdpa-flash", "sdpa-cudnn"] if backward else ["sdpa-flash"]
    for peer in peers:
        if "fmha" in systems and peer in systems:
            cols.append(("fmha / %s" % peer, "fmha", peer))
    if backward and "fmha" in systems and "fmha-det" in systems:
        cols.append(("det cost (fmha-det ms / fmha ms)", "fmha", "fmha-det"))
    return cols


def write_outputs(out, rows, systems, timer_name, device, torch_version, backward=False):
    stem = "bench-bwd" if backward else "bench"
    cols = ratio_columns(systems, backward)
    with open(os.path.join(out, stem + ".json"), "w") as f:
        json.dump({"device": device, "torch": torch_version, "timer": timer_name,
                   "backward": backward, "rows": rows}, f, indent=1)
    with open(os.path.join(out, stem + ".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "mask", "hdim", "seqlen", "batch", "hq", "hk", "tflop"] +
                   ["%s_tflops" % s for s in systems] + ["%s_ms" % s for s in systems] +
                   ["%s_over_%s" % (a, b) for _, a, b in cols] +
                   ["%s_note" % s for s in systems])
        for r in rows:
            res = r["results"]
            rats = [ratio(r, a, b) for _, a, b in cols]
            w.writerow([r["config"], r["mask"], r["hdim"], r["seqlen"], r["batch"], r["hq"], r["hk"],
                        "%.4f" % r.get("tflop", 0)] +
                       ["%.2f" % res[s]["tflops"] if res[s].get("status") == "ok" else res[s]["status"]
                        for s in systems] +
                       ["%.4f" % res[s]["ms"] if res[s].get("status") == "ok" else "" for s in systems] +
                       ["%.3f" % x if x else "" for x in rats] +
                       ["; ".join(x for x in (res[s].get("note"), res[s].get("reason")) if x)
                        for s in systems])
    if backward:
        title = "Backward attention"
        what = ("TFLOP/s = 2.5 * 4*B*Hq*visible_pairs*D / time of the backward alone; `WRONG`: "
                "dq, dk or dv off the float32 reference, not timed")
    else:
        title = "Forward attention"
        what = ("TFLOP/s = 2*B*Hq*visible_pairs*(D + Dv) / time; `WRONG`: output off the float32 "
                "reference, not timed")
    lines = ["# %s, %s" % (title, device), "",
             "bf16, %d tokens per batch, hidden %d; %s (%s; torch %s)."
             % (cases.BENCH_TOKENS, cases.BENCH_HIDDEN, what, timer_name, torch_version), "",
             "| config | hdim | seqlen | B | Hq | Hk | " + " | ".join(systems) +
             "".join(" | %s" % h for h, _, _ in cols) + " | notes |",
             "|" + "---|" * (7 + len(systems) + len(cols))]
    for r in rows:
        res = r["results"]
        rats = [ratio(r, a, b) for _, a, b in cols]
        notes = []
        for s in systems:
            why = "; ".join(x for x in (res[s].get("note"), res[s].get("reason")) if x)
            if why:
                notes.append("%s: %s" % (s, why))
        lines.append("| %s | %s | %d | %d | %d | %d | %s |%s %s |" % (
            r["config"], r["hdim"], r["seqlen"], r["batch"], r["hq"], r["hk"],
            " | ".join(fmt_cell(res[s]) for s in systems),
            "".join(" %s |" % ("%.2f" % x if x else "-") for x in rats),
            "<br>".join(notes).replace("|", "\\|")))
    with open(os.path.join(out, stem + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[4:]))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        print("bench: no plot (%s)" % first_line(e))
        return
    panels = []
    for r in rows:
        key = (r["config"], r["hdim"])
        if key not in panels:
            panels.append(key)
    cols = min(4, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows), squeeze=False)
    for n, (config, hdim) in enumerate(panels):
        ax = axes[n // cols][n % cols]
        sub = [r for r in rows if (r["config"], r["hdim"]) == (config, hdim)]
        for s in systems:
            pts = [(r["seqlen"], r["results"][s]["tflops"]) for r in sub
                   if r["results"][s].get("status") == "ok"]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s,
                        color="C%d" % ALL_SYSTEMS.index(s))
        ax.set_xscale("log", base=2)
        ax.set_title("%s, hdim %s" % (config, hdim))
        ax.set_xlabel("seqlen")
        ax.set_ylabel("TFLOP/s")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for n in range(len(panels), nrows * cols):
        axes[n // cols][n % cols].axis("off")
    fig.suptitle("%s, bf16, %s" % (title, device))
    fig.tight_layout()
    fig.savefig(os.path.join(out, stem + ".png"), dpi=110)


if __name__ == "__main__":
    sys.exit(main())
