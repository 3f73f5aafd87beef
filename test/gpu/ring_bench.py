#!/usr/bin/env python3
"""Ring attention on 2 GPUs: FMHA's ring (fmha-ring --target cuda, NCCL)
against one GPU running the same forward bundle on the whole sequence, and
the peer: the ring algorithm the project started from, run with PyTorch's
flash kernels (torch.distributed over NCCL, SDPA flash per step, logaddexp
merge, contiguous placement), with its own one-GPU baseline, in the same run.

On the development machine (LLVM, no GPU), compile the bundles:

    python3 test/gpu/ring_bench.py --make-bundles ring-bundles

On the 2-GPU machine (build-rt/bin carried with the bundles):

    python3 test/gpu/ring_bench.py --bundles ring-bundles --bin build-rt/bin \
        --out ring-out

Problems: bf16, hdim 128, 16 heads (Hq = Hk), batch 1, total sequence 32k
and 128k, full and causal (FMHA's ring uses zigzag placement for causal).

Everything is validated before it is timed: FMHA's forward and backward
bundles against the float64 reference at S = 2048 and the merge bundle
against the float64 merge (fmha-run --validate); FMHA's ring
against the same bundles run on the whole sequence on one GPU (fmha-ring
--check single: o and lse); the peer's ring against SDPA flash on the whole
sequence on one GPU. Any failure ends the script with a non-zero status.

Figures: the median time of one forward (ms) of each system on one GPU and
on the 2-GPU ring, the speedup, the time per ring step, and the fraction of
communication hidden: 1 - (ring - kernels alone) / shifts alone, each
measured by fmha-ring --bench (events; the slowest rank). Writes OUT/ring.md
and OUT/ring.json.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HQ, D = 16, 128
SEQS = (32768, 131072)
NCCL_DEFAULT = ("/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/"
                "lib/libnccl.so.2")
BUNDLES = {"fwd.fmha": ["--mask=0"], "fwdc.fmha": ["--mask=t"],
           "merge.fmha": ["--merge"], "bwd.fmha": ["--bwd", "--mask=0"],
           "bwdc.fmha": ["--bwd", "--mask=t"], "acc.fmha": ["--accumulate"]}


def die(message):
    print(f"ring_bench: error: {message}", file=sys.stderr)
    sys.exit(1)


def run(cmd, env=None, timeout=1800):
    print("+ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        die(f"{cmd[0]}: {e}")
    out = p.stdout + p.stderr
    print(out, end="", flush=True)
    if p.returncode != 0:
        die(f"{os.path.basename(cmd[0])} exited with {p.returncode}")
    return out


def make_bundles(out, compiler, chip):
    os.makedirs(out, exist_ok=True)
    for name, extra in BUNDLES.items():
        if "--merge" in extra:
            args = ["--merge", f"--hq={HQ}", f"--dv={D}"]
        elif "--accumulate" in extra:
            args = ["--accumulate"]
        else:
            args = [f"--hq={HQ}", f"--hk={HQ}", f"-d={D}"] + extra
        run([compiler, "--target=cuda", f"--chip={chip}", "--dtype=bf16"]
            + args + ["-o", os.path.join(out, name)])
    print(f"ring_bench: bundles in {out}; carry it with build-rt/bin")


# --- The peer: ring attention with PyTorch's flash kernels ---------------

def peer_worker(rank, world, seq, causal, iters, init_file, queue):
    import torch
    import torch.distributed as dist
    try:
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=f"file://{init_file}",
                                rank=rank, world_size=world)
        dev = torch.device("cuda", rank)
        g = torch.Generator(device="cpu").manual_seed(1234)
        shape = (1, HQ, seq, D)
        q, k, v = (torch.randn(shape, generator=g).to(dev, torch.bfloat16)
                   for _ in range(3))
        chunk = seq // world
        sl = slice(rank * chunk, (rank + 1) * chunk)
        ql, kl, vl = (t[:, :, sl].contiguous() for t in (q, k, v))
        flash = torch.ops.aten._scaled_dot_product_flash_attention

        def ring():
            nxt, prv = (rank + 1) % world, (rank - 1) % world
            o = torch.zeros(1, HQ, chunk, D, device=dev, dtype=torch.float32)
            lse = torch.full((1, HQ, chunk), float("-inf"), device=dev)
            kc, vc = kl, vl
            for s in range(world):
                src = (rank - s) % world
                reqs = []
                if s + 1 < world:
                    kn, vn = torch.empty_like(kc), torch.empty_like(vc)
                    ops = [dist.P2POp(dist.isend, kc, nxt),
                           dist.P2POp(dist.isend, vc, nxt),
                           dist.P2POp(dist.irecv, kn, prv),
                           dist.P2POp(dist.irecv, vn, prv)]
                    reqs = dist.batch_isend_irecv(ops)
                if not causal or src <= rank:
                    r = flash(ql, kc, vc, 0.0, causal and src == rank, False)
                    po, pl = r[0].float(), r[1]
                    new = torch.logaddexp(lse, pl)
                    o = (o * torch.exp(lse - new).unsqueeze(-1)
                         + po * torch.exp(pl - new).unsqueeze(-1))
                    lse = new
                for req in reqs:
                    req.wait()
                if s + 1 < world:
                    kc, vc = kn, vn
            return o.to(torch.bfloat16), lse

        def timed(fn):
            for _ in range(2):
                fn()
            torch.cuda.synchronize()
            dist.barrier()
            times = []
            for _ in range(iters):
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                torch.cuda.synchronize()
                dist.barrier()
                times.append(a.elapsed_time(b))
            times.sort()
            t = torch.tensor([times[len(times) // 2]], device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            return t.item()

        # Validate the ring against one GPU on the whole sequence.
        o, lse = ring()
        os_ = [torch.empty_like(o) for _ in range(world)]
        ls_ = [torch.empty_like(lse) for _ in range(world)]
        dist.all_gather(os_, o)
        dist.all_gather(ls_, lse)
        result = {}
        ok = torch.tensor([1], device=dev)
        if rank == 0:
            ref = flash(q, k, v, 0.0, causal, False)
            ro, rl = ref[0].float(), ref[1]
            go, gl = torch.cat(os_, 2).float(), torch.cat(ls_, 2)
            rel = ((go - ro).norm() / ro.norm()).item()
            lerr = (gl - rl).abs().max().item()
            result["peer_rel_err"], result["peer_lse_err"] = rel, lerr
            if not (rel <= 1e-2 and lerr <= 2e-2):
                ok[0] = 0
            del ref, ro, rl, go, gl
        dist.broadcast(ok, 0)
        if ok.item() != 1:
            raise RuntimeError(f"peer ring does not match one GPU: {result}")
        result["peer_ring_ms"] = timed(ring)
        if rank == 0:
            # One GPU, the whole sequence (rank 1 idles at the barrier).
            single = lambda: flash(q, k, v, 0.0, causal, False)
            for _ in range(2):
                single()
            torch.cuda.synchronize()
            times = []
            for _ in range(iters):
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record()
                single()
                b.record()
                torch.cuda.synchronize()
                times.append(a.elapsed_time(b))
            times.sort()
            result["peer_single_ms"] = times[len(times) // 2]
        dist.barrier()
        if rank == 0:
            queue.put(("ok", result))
        dist.destroy_process_group()
    except Exception as e:  # reported by the parent, non-zero exit
        queue.put(("error", f"rank {rank}: {type(e).__name__}: {e}"))


def run_peer(seq, causal, iters):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "init")
        procs = [ctx.Process(target=peer_worker,
                             args=(r, 2, seq, causal, iters, init, queue))
                 for r in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=3600)
        messages = []
        while not queue.empty():
            messages.append(queue.get())
    errors = [m for kind, m in messages if kind == "error"]
    if errors or any(p.exitcode != 0 for p in procs):
        die("the PyTorch peer failed: " + "; ".join(errors or ["a worker died"]))
    results = [m for kind, m in messages if kind == "ok"]
    if not results:
        die("the PyTorch peer reported nothing")
    return results[0]


# --- FMHA ------------------------------------------------------------------

def parse(pattern, text, what):
    m = re.search(pattern, text)
    if not m:
        die(f"no {what} in the output above")
    return m


def run_fmha_backward(args, seq, causal, env):
    """The backward ring, checked against the backward bundle on the whole
    sequence on one GPU (dq, dk, dv), then its time against one GPU."""
    b = args.bundles
    bwd = os.path.join(b, "bwdc.fmha" if causal else "bwd.fmha")
    fwd = os.path.join(b, "fwdc.fmha" if causal else "fwd.fmha")
    one = dict(env, FMHA_CUDA_DEVICE="0")
    # o and lse from the forward bundle on the GPU (fmha-run would otherwise
    # compute them with the float64 reference on the host, minutes at 32k).
    with tempfile.TemporaryDirectory() as tmp:
        run([os.path.join(args.bin, "fmha-run"), fwd, "-b", "1", "--sq",
             str(seq), "--sk", str(seq), "--save", tmp], env=one)
        import numpy as np
        rng = np.random.default_rng(seq)
        np.save(os.path.join(tmp, "do.npy"),
                rng.standard_normal((1, HQ, seq, D),
                                    dtype=np.float32))
        out = run([os.path.join(args.bin, "fmha-run"), bwd, "--load", tmp,
                   "--bench", "--iters", str(args.iters), "--warmup", "2"],
                  env=one)
    single_ms = float(parse(r"median_ms=([0-9.]+)", out, "median_ms").group(1))
    ring = [args.mpirun, "-np", "2", "--allow-run-as-root", "-x",
            "FMHA_NCCL_LIBRARY", "-x", "LD_LIBRARY_PATH",
            os.path.join(args.bin, "fmha-ring"), "--target", "cuda",
            "--fwd", os.path.join(b, "fwd.fmha"),
            "--merge", os.path.join(b, "merge.fmha"),
            "--bwd", os.path.join(b, "bwd.fmha"),
            "--acc", os.path.join(b, "acc.fmha"), "--seq", str(seq),
            "--check", "single", "--bench", "1"]
    if causal:
        ring += ["--causal", "--zigzag",
                 "--fwd-causal", os.path.join(b, "fwdc.fmha"),
                 "--bwd-causal", os.path.join(b, "bwdc.fmha")]
    out = run(ring, env=env)
    if not re.search(r"^PASS", out, re.M):
        die("fmha-ring --bwd did not PASS")
    ring_ms = float(parse(r"bench: backward ring ([0-9.]+) ms", out,
                          "backward time").group(1))
    return {"fmha_bwd_single_ms": single_ms, "fmha_bwd_ring_ms": ring_ms,
            "fmha_bwd_speedup": single_ms / ring_ms}


def run_fmha(args, seq, causal, env):
    b = args.bundles
    fwd = os.path.join(b, "fwd.fmha")
    single_bundle = os.path.join(b, "fwdc.fmha" if causal else "fwd.fmha")
    single_env = dict(env, FMHA_CUDA_DEVICE="0")
    out = run([os.path.join(args.bin, "fmha-run"), single_bundle, "-b", "1",
               "--sq", str(seq), "--sk", str(seq), "--bench", "--iters",
               str(args.iters), "--warmup", "2"], env=single_env)
    single_ms = float(parse(r"median_ms=([0-9.]+)", out, "median_ms").group(1))
    mpirun = [args.mpirun, "-np", "2", "--allow-run-as-root", "-x",
              "FMHA_NCCL_LIBRARY", "-x", "LD_LIBRARY_PATH"]
    ring = mpirun + [os.path.join(args.bin, "fmha-ring"), "--target", "cuda",
                     "--fwd", fwd, "--merge", os.path.join(b, "merge.fmha"),
                     "--seq", str(seq), "--check", "single", "--bench",
                     str(args.iters)]
    if causal:
        ring += ["--causal", "--zigzag", "--fwd-causal",
                 os.path.join(b, "fwdc.fmha")]
    out = run(ring, env=env)
    if not re.search(r"^PASS", out, re.M):
        die("fmha-ring did not PASS")
    m = parse(r"bench: ring ([0-9.]+) ms, kernels alone ([0-9.]+) ms, "
              r"shifts alone ([0-9.]+) ms, communication hidden ([0-9.]+)",
              out, "bench line")
    steps = [float(x) for x in
             parse(r"bench: step ms((?: [0-9.]+)+)", out, "step times")
             .group(1).split()]
    return {"fmha_single_ms": single_ms, "fmha_ring_ms": float(m.group(1)),
            "fmha_kernels_ms": float(m.group(2)),
            "fmha_shifts_ms": float(m.group(3)),
            "fmha_hidden": float(m.group(4)), "fmha_step_ms": steps}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make-bundles", metavar="DIR")
    ap.add_argument("--compiler", default="build/bin/fmha-compile")
    ap.add_argument("--chip", default="sm_90a")
    ap.add_argument("--bundles", default="ring-bundles")
    ap.add_argument("--bin", default="build-rt/bin")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--nccl", default=NCCL_DEFAULT)
    ap.add_argument("--seqs", default=",".join(map(str, SEQS)))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out", default="ring-out")
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument("--masks", default="full,causal",
                    help="comma list of full, causal")
    ap.add_argument("--bwd-seqs", default="32768",
                    help="sizes whose backward ring is checked and timed "
                         "(comma list; empty: none)")
    args = ap.parse_args()
    masks = args.masks.split(",")
    if any(m not in ("full", "causal") for m in masks):
        ap.error(f"--masks takes full and/or causal, not '{args.masks}'")
    if args.make_bundles:
        make_bundles(args.make_bundles, args.compiler, args.chip)
        return 0
    for name in list(BUNDLES):
        if not os.path.isfile(os.path.join(args.bundles, name)):
            die(f"missing bundle {args.bundles}/{name} (make them with "
                "--make-bundles on the development machine)")
    for tool in ("fmha-run", "fmha-ring"):
        if not os.access(os.path.join(args.bin, tool), os.X_OK):
            die(f"no {args.bin}/{tool}")
    if not shutil.which(args.mpirun):
        die(f"no {args.mpirun} on PATH")
    if not os.path.isfile(args.nccl):
        die(f"no NCCL library at {args.nccl} (--nccl)")
    seqs = [int(s) for s in args.seqs.split(",")]
    env = dict(os.environ, FMHA_NCCL_LIBRARY=args.nccl,
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.setdefault("LD_LIBRARY_PATH", "")
    # FMHA's bundle against the float64 reference, before any timing.
    for name in ("fwd.fmha", "fwdc.fmha", "bwd.fmha", "bwdc.fmha"):
        out = run([os.path.join(args.bin, "fmha-run"),
                   os.path.join(args.bundles, name), "-b", "1", "--sq", "2048",
                   "--sk", "2048", "--validate"],
                  env=dict(env, FMHA_CUDA_DEVICE="0"))
        if not re.search(r"^PASS", out, re.M):
            die(f"{name} does not PASS against the reference")
    # The GPU merge kernel against the float64 merge (empty partials too).
    out = run([os.path.join(args.bin, "fmha-run"),
               os.path.join(args.bundles, "merge.fmha"), "-b", "2", "--sq",
               "3001", "--validate"], env=dict(env, FMHA_CUDA_DEVICE="0"))
    if not re.search(r"^PASS", out, re.M):
        die("merge.fmha does not PASS against the reference")
    # The GPU accumulate kernel (the backward ring's f32 sums) against the
    # float64 sums, aligned and misaligned.
    out = run([os.path.join(args.bin, "fmha-run"),
               os.path.join(args.bundles, "acc.fmha"), "-n", "1000003",
               "--validate"], env=dict(env, FMHA_CUDA_DEVICE="0"))
    if not re.search(r"^PASS", out, re.M):
        die("acc.fmha does not PASS against the reference")
    rows = []
    for seq in seqs:
        for causal in [m == "causal" for m in masks]:
            row = {"seq": seq, "mask": "causal" if causal else "full"}
            row.update(run_fmha(args, seq, causal, env))
            if str(seq) in args.bwd_seqs.split(","):
                row.update(run_fmha_backward(args, seq, causal, env))
            if not args.skip_peer:
                row.update(run_peer(seq, causal, args.iters))
            row["fmha_speedup"] = row["fmha_single_ms"] / row["fmha_ring_ms"]
            if "peer_ring_ms" in row:
                row["peer_speedup"] = (row["peer_single_ms"]
                                       / row["peer_ring_ms"])
            rows.append(row)
            print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "ring.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["| S | mask | FMHA 1 GPU ms | FMHA ring ms | speedup | step ms | "
             "comm hidden | peer 1 GPU ms | peer ring ms | peer speedup |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        peer = [f"{r[k]:.2f}" if k in r else "-" for k in
                ("peer_single_ms", "peer_ring_ms", "peer_speedup")]
        lines.append(
            f"| {r['seq']} | {r['mask']} | {r['fmha_single_ms']:.2f} | "
            f"{r['fmha_ring_ms']:.2f} | {r['fmha_speedup']:.2f} | "
            f"{' / '.join(f'{x:.2f}' for x in r['fmha_step_ms'])} | "
            f"{r['fmha_hidden']:.2f} | " + " | ".join(peer) + " |")
    bwd = [r for r in rows if "fmha_bwd_ring_ms" in r]
    if bwd:
        lines += ["", "| S | mask | FMHA backward 1 GPU ms | ring ms | "
                  "speedup |", "|---|---|---|---|---|"]
        for r in bwd:
            lines.append(f"| {r['seq']} | {r['mask']} | "
                         f"{r['fmha_bwd_single_ms']:.2f} | "
                         f"{r['fmha_bwd_ring_ms']:.2f} | "
                         f"{r['fmha_bwd_speedup']:.2f} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "ring.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
