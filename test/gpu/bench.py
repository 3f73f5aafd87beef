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
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        sys.exit("bench: no CUDA device visible to torch")
    systems = [s for s in args.systems.split(",") if s]
    for s in systems:
        if s not in SYSTEMS:
            sys.exit("bench: unknown system %r (of %s)" % (s, SYSTEMS))
    configs = [c for c in args.configs.split(",") if c]
    hdims = [int(x) for x in args.hdims.split(",") if x]
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

    for config in configs:
        mask, group = cases.BENCH_CONFIGS[config]
        spec = cases.parse_mask(mask)
        for hdim in hdims:
            for seqlen in seqlens:
                elapsed = time.time() - t_start
                b = cases.BENCH_TOKENS // seqlen
                hq = cases.BENCH_HIDDEN // hdim
                hk = hq // group
                row = {"config": config, "mask": mask, "hdim": hdim, "seqlen": seqlen,
                       "batch": b, "hq": hq, "hk": hk, "results": {}, "notes": []}
                rows.append(row)
                if elapsed > args.budget_s + 90:
                    for s in systems:
                        row["results"][s] = {"status": "n/a", "reason": "time budget"}
                    continue
                flops = 4.0 * b * hq * cases.visible_pairs(mask, seqlen, seqlen) * hdim
                row["tflop"] = flops / 1e12
                torch.manual_seed(seqlen * 131 + hdim)
                dev = torch.device("cuda")
                q = torch.randn(b, hq, seqlen, hdim, device=dev, dtype=torch.bfloat16)
                k = torch.randn(b, hk, seqlen, hdim, device=dev, dtype=torch.bfloat16)
                v = torch.randn(b, hk, seqlen, hdim, device=dev, dtype=torch.bfloat16)
                scale = 1.0 / math.sqrt(hdim)
                causal = spec is not None and spec[1] is None and spec[2] == 0 and spec[3] == 0
                gqa = hk != hq
                heads = sorted({0, hq - 1})
                ref = reference_slice(torch, q, k, v, spec, heads, scale)

                mask_mod = flex_mask_mod(spec)

                def run_fmha():
                    sig = cases.bench_signature(config, hdim)
                    name = fmha.bundle_name(**sig)
                    entry = manifest.get(name)
                    if entry is None:
                        raise NotSupported("no bundle %s (run make_bundles)" % name)
                    if entry.get("error"):
                        raise NotSupported("did not compile: " + entry["error"])
                    path = os.path.join(args.bundles, name)
                    if path not in kernels:
                        kernels[path] = fmha.Kernel(path)
                    kernel = kernels[path]
                    o = torch.empty(b, hq, seqlen, hdim, device=dev, dtype=torch.bfloat16)
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
                fmha_out = None
                for s in systems:
                    res = row["results"][s] = {"status": "n/a"}
                    try:
                        fn, ctx, note = makers[s]()
                        res["note"] = note
                        with (ctx() if ctx else _Null()):
                            out = fn()
                            torch.cuda.synchronize()
                            if torch.isnan(out).any():
                                raise WrongOutput("NaN in the output")
                            err = (out[0, heads].float() - ref).abs().max().item()
                            res["ref_err"] = err
                            if fmha_out is not None:
                                res["diff_vs_fmha"] = (out.float() - fmha_out.float()).abs().max().item()
                            if not err <= args.tol:
                                raise WrongOutput("max |o - ref| = %.3g > %.3g" % (err, args.tol))
                            if s == "fmha":
                                fmha_out = out.clone()
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
                print_row(row, systems)
                del q, k, v, ref, fmha_out
                torch.cuda.empty_cache()

    write_outputs(args.out, rows, systems, timer_name, props.name, torch.__version__)
    print("bench: %.0f s; wrote %s" % (time.time() - t_start,
                                        ", ".join(sorted(os.listdir(args.out)))))
    return 0


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
    j = torch.arange(s, device=q.device)
    for n, h in enumerate(heads):
        kh = h // (hq // hk)
        kf, vf = k[0, kh].float(), v[0, kh].float()
        for start in range(0, s, chunk):
            i = torch.arange(start, min(s, start + chunk), device=q.device)
            scores = (q[0, h, start:start + len(i)].float() @ kf.T) * scale
            if spec is not None:
                _, left, right, sink = spec
                ok = torch.ones(len(i), s, dtype=torch.bool, device=q.device)
                if left is not None:
                    ok &= (i[:, None] - j[None, :]) <= left
                if right is not None:
                    ok &= (j[None, :] - i[:, None]) <= right
                if sink:
                    ok |= j[None, :] < sink
                scores = scores.masked_fill(~ok, float("-inf"))
            p = torch.softmax(scores, dim=-1).nan_to_num(0.0)
            out[n, start:start + len(i)] = p @ vf
    return out


def fmt_cell(res):
    if res.get("status") == "ok":
        return "%.1f" % res["tflops"]
    if res.get("status") == "wrong":
        return "WRONG"
    return "n/a"


def print_row(row, systems):
    cells = ["%-16s d=%-3d S=%-5d B=%-2d Hq=%-2d Hk=%-2d" % (row["config"], row["hdim"], row["seqlen"],
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
        if "diff_vs_fmha" in res:
            extra.append("max|o-fmha| %.2e" % res["diff_vs_fmha"])
        if res.get("note"):
            extra.append(res["note"])
        if res.get("reason"):
            extra.append(res["reason"])
        print("      %-11s %s" % (s, "; ".join(extra)), flush=True)


def ratio(row):
    a, b = row["results"].get("fmha", {}), row["results"].get("sdpa-flash", {})
    if a.get("status") == "ok" and b.get("status") == "ok":
        return a["tflops"] / b["tflops"]
    return None


def write_outputs(out, rows, systems, timer_name, device, torch_version):
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump({"device": device, "torch": torch_version, "timer": timer_name, "rows": rows},
                  f, indent=1)
    with open(os.path.join(out, "bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "mask", "hdim", "seqlen", "batch", "hq", "hk", "tflop"] +
                   ["%s_tflops" % s for s in systems] + ["%s_ms" % s for s in systems] +
                   ["fmha_over_sdpa_flash"] + ["%s_note" % s for s in systems])
        for r in rows:
            res = r["results"]
            rat = ratio(r)
            w.writerow([r["config"], r["mask"], r["hdim"], r["seqlen"], r["batch"], r["hq"], r["hk"],
                        "%.4f" % r.get("tflop", 0)] +
                       ["%.2f" % res[s]["tflops"] if res[s].get("status") == "ok" else res[s]["status"]
                        for s in systems] +
                       ["%.4f" % res[s]["ms"] if res[s].get("status") == "ok" else "" for s in systems] +
                       ["%.3f" % rat if rat else ""] +
                       ["; ".join(x for x in (res[s].get("note"), res[s].get("reason")) if x)
                        for s in systems])
    lines = ["# Forward attention, %s" % device, "",
             "bf16, %d tokens per batch, hidden %d; TFLOP/s = 4*B*Hq*visible_pairs*D / time "
             "(%s; torch %s). `WRONG`: output off the float32 reference, not timed."
             % (cases.BENCH_TOKENS, cases.BENCH_HIDDEN, timer_name, torch_version), "",
             "| config | hdim | seqlen | B | Hq | Hk | " + " | ".join(systems) +
             " | fmha / sdpa-flash | notes |",
             "|" + "---|" * (8 + len(systems))]
    for r in rows:
        res = r["results"]
        rat = ratio(r)
        notes = []
        for s in systems:
            why = "; ".join(x for x in (res[s].get("note"), res[s].get("reason")) if x)
            if why:
                notes.append("%s: %s" % (s, why))
        lines.append("| %s | %d | %d | %d | %d | %d | %s | %s | %s |" % (
            r["config"], r["hdim"], r["seqlen"], r["batch"], r["hq"], r["hk"],
            " | ".join(fmt_cell(res[s]) for s in systems),
            "%.2f" % rat if rat else "-", "<br>".join(notes).replace("|", "\\|")))
    with open(os.path.join(out, "bench.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
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
                        color="C%d" % SYSTEMS.index(s))
        ax.set_xscale("log", base=2)
        ax.set_title("%s, hdim %d" % (config, hdim))
        ax.set_xlabel("seqlen")
        ax.set_ylabel("TFLOP/s")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for n in range(len(panels), nrows * cols):
        axes[n // cols][n % cols].axis("off")
    fig.suptitle("Forward attention, bf16, %s" % device)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench.png"), dpi=110)


if __name__ == "__main__":
    sys.exit(main())
