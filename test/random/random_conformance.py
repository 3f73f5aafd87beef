#!/usr/bin/env python3
"""Randomized conformance: random attention problems compiled with fmha-compile
and checked by `fmha-run --validate` against the float64 reference.

A run is a function of its seed (--seed; printed first, drawn from the clock
when absent). The seed gives a pool of signatures (dtype; Hq, Hk with every
GQA ratio; D, Dv in 32/64/128, sometimes Dv != D; every mask kind with random
windows and sinks; scale; softcap; tile sizes) and, for problem i, one of
them with a random B, Sq and Sk (1 to 4096, decode rows, tile multiples and
their neighbours), bounded in work so that each run stays fast. On the cpu
and cuda targets about a third of the signatures are backward kernels
(--bwd, half of them --deterministic), a fifth take learned sink logits
(--sinks; the backward's dsinks checked too), and on the cpu a sixth take
head dims 80, 96, 192/128 or 256; on the cpu and cuda a fifth of the
forward ones are variable-length batches (--varlen: the problem's Sq and Sk split into B
random lengths, some 0, some rows past the last offset) and a fifth read a paged K/V cache
(--page-size: B cache lengths up to Sk, pages and table entries no length reaches, with
--varlen chunked prefill); backward kernels are checked for dq, dk,
dv and, on small
problems, by finite differences (fmha-run --grad-check). One forward
problem in five (by its data seed) runs on `fmha-run --inputs stress`.
Bundles are cached by signature (--cache DIR keeps them across runs).

Every failure prints the fmha-compile and fmha-run commands that reproduce
it, and the command that replays that one problem through this driver
(--seed S --only I).

  random_conformance.py --bin build/bin --count 2000 [--seed S]     # CPU
  random_conformance.py --bin build/bin --target cuda --count 2000 \\
      --make-bundles OUT                  # where LLVM is: bundles + OUT/problems.json
  random_conformance.py --bin build/bin --run-bundles OUT   # on the GPU machine

Exit status: 0 when every problem passes, 1 when one fails, 2 on usage errors.
"""

import argparse
import concurrent.futures
import hashlib
import json
import math
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time

SIZE_MAX = 4096
# Work bound: B * Hq * Sq * Sk * (D + Dv) multiply-adds (the float64
# reference does the same count on one core).
DEFAULT_WORK = 3.0e8
CUDA_CHIP = "sm_90a"
# Backward problems (cpu target): this share of the signatures, with this
# much more work per (i, j) pair (reference and kernel), and the
# finite-difference check (fmha-run --grad-check) below this much work.
BWD_SHARE = 0.3
BWD_WORK_FACTOR = 3
GRAD_CHECK_WORK = 2.0e6
RUN_TIMEOUT_S = 600


def log_uniform(rng, lo, hi):
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi + 0.999)))))


def random_bound(rng):
    """A window side: unbounded, 0, small, or up to a few thousand."""
    r = rng.random()
    if r < 0.25:
        return -1
    if r < 0.35:
        return 0
    if r < 0.45:
        return rng.randint(1, 3)
    return log_uniform(rng, 1, SIZE_MAX)


def random_mask(rng):
    kind = rng.choice(["none", "t", "b", "window", "window", "sink", "sink",
                       "x", "x"])
    if kind == "none":
        return rng.choice(["0", "none"])
    if kind in ("t", "b"):
        return kind
    anchor = rng.choice("tb")
    if kind == "x":
        w = rng.choice([-1, 1, 2, rng.randint(1, 64),
                        log_uniform(rng, 1, SIZE_MAX)])
        return f"x{anchor}:{w}"
    left, right = random_bound(rng), random_bound(rng)
    if kind == "window":
        return f"{anchor}:{left},{right}"
    sink = rng.choice([0, 1, rng.randint(1, 8), rng.randint(1, 64),
                       log_uniform(rng, 1, SIZE_MAX)])
    return f"{anchor}:{left},{right},{sink}"


def random_signature(rng, target):
    if target == "cuda":
        dtype = rng.choice(["f16", "bf16"])
    else:
        dtype = rng.choice(["f32", "f32", "f16", "bf16"])
    hk = rng.choice([1, 1, 2, 3, 4, 5, 8])
    ratio = rng.choice([1, 1, 2, 3, 4, 5, 6, 7, 8, 16])
    hq = hk * ratio
    d = rng.choice([32, 64, 128])
    dv = d if rng.random() < 0.7 else rng.choice([32, 64, 128])
    sig = dict(target=target, dtype=dtype, hq=hq, hk=hk, d=d, dv=dv,
               mask=random_mask(rng))
    if rng.random() < 0.3:
        sig["scale"] = float("%.6g" % rng.uniform(0.01, 1.0))
    if rng.random() < 0.3:
        sig["softcap"] = float("%.6g" % rng.choice(
            [rng.uniform(0.5, 5.0), rng.uniform(5.0, 60.0)]))
    if target == "cuda":
        # Half the signatures take fmha-compile's tuned tiles.
        if rng.random() < 0.5:
            sig["warp_rows"] = rng.choice([16, 32])
            sig["block_m"] = sig["warp_rows"] * rng.choice([1, 2, 4])
            sig["block_n"] = rng.choice([16, 32, 64, 128])
    else:
        sig["block_m"] = rng.choice([64, 64, 32, 16, 128, 1, 7, 48])
        sig["block_n"] = rng.choice([64, 64, 32, 16, 128, 1, 5, 80])
    return sig


def random_size(rng):
    r = rng.random()
    if r < 0.1:
        return 1
    if r < 0.25:
        return rng.choice([63, 64, 65, 127, 128, 129, 255, 256, 257])
    if r < 0.5:
        return log_uniform(rng, 256, SIZE_MAX)
    return log_uniform(rng, 1, SIZE_MAX)


def random_shape(rng, sig, work):
    b = rng.choice([1, 1, 1, 2, 3, 4])
    sq, sk = random_size(rng), random_size(rng)
    if rng.random() < 0.15:
        sk = sq
    per_pair = sig["hq"] * (sig["d"] + sig["dv"])
    if sig.get("bwd"):
        per_pair *= BWD_WORK_FACTOR
    while b * sq * sk * per_pair > work:
        if b > 1:
            b -= 1
        elif sq >= sk:
            sq = max(1, sq * 3 // 4)
        else:
            sk = max(1, sk * 3 // 4)
    return b, sq, sk


def add_backward(seed, index, sig):
    """Makes a cpu or cuda signature a backward one, from its own stream (so
    that the pool and the problems of a seed are the same with or without
    it). cuda backward kernels take block-m = block-n and 16 rows a warp:
    the forward's tile choice is replaced by the default or a square one."""
    if sig["target"] not in ("cpu", "cuda"):
        return sig
    rng = random.Random(f"fmha-random-bwd:{seed}:{index}")
    if rng.random() < BWD_SHARE:
        sig = dict(sig, bwd=True)
        if rng.random() < 0.5:
            sig["deterministic"] = True
        if sig["target"] == "cuda":
            for key in ("warp_rows", "block_m", "block_n"):
                sig.pop(key, None)
            if rng.random() < 0.3:
                sig["block_m"] = sig["block_n"] = rng.choice([32, 128])
    return sig


def add_q_in_shared(seed, index, sig):
    """Gives some cuda forward signatures with explicit tiles the Q tile in
    workgroup memory (fmha-compile's default at D = 128 takes it only with
    its own tiles), from its own stream like add_backward."""
    if sig["target"] != "cuda" or sig.get("bwd") or "block_n" not in sig:
        return sig
    rng = random.Random(f"fmha-random-qs:{seed}:{index}")
    if rng.random() < 0.4:
        sig = dict(sig, q_in_shared=True)
    return sig


def add_wgmma(seed, index, sig):
    """Gives some cuda forward signatures with explicit tiles and D = Dv in
    {64, 128} the warpgroup kernel with its own random tiles (without tile
    options fmha-compile picks it on sm_90a anyway), from its own stream
    like add_backward. Tiles that overflow workgroup memory are left out."""
    if (sig["target"] != "cuda" or sig.get("bwd") or "block_n" not in sig
            or sig.get("q_in_shared") or sig["d"] != sig["dv"]
            or sig["d"] not in (64, 128)):
        return sig
    rng = random.Random(f"fmha-random-wg:{seed}:{index}")
    if rng.random() < 0.5:
        sig = dict(sig, mma="wgmma", block_m=rng.choice([64, 128, 192, 256]),
                   block_n=rng.choice([16, 32, 64, 128]))
        sig.pop("warp_rows", None)
        # Three K/V stages, the Q tile and 1024 bytes of alignment slack
        # within sm_90a's 227 KB.
        while (12 * sig["block_n"] + 2 * sig["block_m"]) * sig["d"] + 1024 \
                > 227 * 1024:
            sig["block_n"] //= 2
    return sig


def add_index_bits(seed, index, sig):
    """Gives a quarter of the cuda signatures 64-bit kernel indices
    (fmha-compile's cuda default is 32), from its own stream like
    add_backward, so that both lowerings meet random problems."""
    if sig["target"] != "cuda":
        return sig
    rng = random.Random(f"fmha-random-ib:{seed}:{index}")
    if rng.random() < 0.25:
        sig = dict(sig, index_bits=64)
    return sig


def add_model_features(seed, index, sig):
    """Learned sink logits (fmha-compile --sinks) on a fifth of the
    signatures, forward and backward, and on the cpu target head dims beyond
    32/64/128 ((80, 80), (96, 96), (192, 128), (256, 256)) on a sixth, from
    their own stream like add_backward. A cuda forward with sinks is the
    staged kernel, which tile options would leave out: it takes
    fmha-compile's tiles."""
    rng = random.Random(f"fmha-random-model:{seed}:{index}")
    if rng.random() < 0.2:
        sig = dict(sig, sinks=True)
        if sig["target"] == "cuda" and not sig.get("bwd"):
            for key in ("warp_rows", "block_m", "block_n", "q_in_shared", "mma"):
                sig.pop(key, None)
    if sig["target"] == "cpu" and rng.random() < 0.15:
        d, dv = rng.choice([(80, 80), (96, 96), (192, 128), (256, 256)])
        sig = dict(sig, d=d, dv=dv)
    return sig


def add_serving(seed, index, sig):
    """Variable-length batches (fmha-compile --varlen) on a fifth of the cpu
    and cuda forward signatures, from their own stream like add_backward. A
    cuda one is the staged kernel, which tile options would leave out: it
    takes fmha-compile's tiles."""
    if sig["target"] not in ("cpu", "cuda") or sig.get("bwd"):
        return sig
    rng = random.Random(f"fmha-random-serving:{seed}:{index}")
    if rng.random() < 0.2:
        sig = dict(sig, varlen=True)
        if sig["target"] == "cuda":
            for key in ("warp_rows", "block_m", "block_n", "q_in_shared",
                        "mma"):
                sig.pop(key, None)
    # A paged cache (fmha-compile --page-size) on a fifth, from a stream of
    # its own (the draws above stay those of earlier runs): with --varlen,
    # chunked prefill. Its block-n is fmha-compile's (a divisor of the page).
    paged = random.Random(f"fmha-random-paged:{seed}:{index}")
    if paged.random() < 0.2:
        sizes = [16, 32, 64, 128, 256]
        if sig["target"] == "cpu":
            sizes += [1, 5, 48]
        sig = dict(sig, page_size=paged.choice(sizes))
        for key in ("block_n",) if sig["target"] == "cpu" else (
                "warp_rows", "block_m", "block_n", "q_in_shared", "mma"):
            sig.pop(key, None)
    return sig


def paged_lengths(shape, data_seed, count):
    """`count` cache lengths of a paged problem of longest Sk (some 0, one
    the longest), and extra pages and table entries past what they fill
    (which no kernel may read) one time in three."""
    b, sq, sk = shape
    rng = random.Random(f"fmha-random-paged-lengths:{data_seed}")
    lengths = [rng.choice([0, 1, sk, rng.randint(0, sk)]) for _ in range(count)]
    lengths[rng.randrange(count)] = sk
    spare = rng.random() < 1 / 3
    return lengths, (rng.randint(1, 9) if spare else 0), (
        rng.randint(1, 3) if spare else 0)


def varlen_lengths(shape, data_seed):
    """B lengths of queries and of keys for a variable-length problem of
    totals Sq and Sk: random cuts (empty sequences included), and one time
    in five a few rows past the last offset, which must stay untouched."""
    b, sq, sk = shape
    rng = random.Random(f"fmha-random-varlen:{data_seed}")

    def split(total):
        used = total - (rng.randint(1, max(1, total // 4))
                        if total > 1 and rng.random() < 0.2 else 0)
        cuts = sorted(rng.randint(0, used) for _ in range(b - 1))
        bounds = [0] + cuts + [used]
        return [bounds[i + 1] - bounds[i] for i in range(b)]

    return split(sq), split(sk)


def signature_key(sig):
    return json.dumps(sig, sort_keys=True)


def bundle_name(sig):
    return hashlib.sha1(signature_key(sig).encode()).hexdigest()[:16] + ".fmha"


def compile_args(sig):
    args = [f"--target={sig['target']}", f"--dtype={sig['dtype']}",
            f"--hq={sig['hq']}", f"--hk={sig['hk']}", f"-d={sig['d']}",
            f"--dv={sig['dv']}", f"--mask={sig['mask']}"]
    for key, flag in (("block_m", "--block-m"), ("block_n", "--block-n"),
                      ("warp_rows", "--warp-rows")):
        if key in sig:
            args.append(f"{flag}={sig[key]}")
    if sig.get("q_in_shared"):
        args.append("--q-in-shared")
    if "mma" in sig:
        args.append(f"--mma={sig['mma']}")
    if "index_bits" in sig:
        args.append(f"--index-bits={sig['index_bits']}")
    if sig["target"] == "cuda":
        args.append(f"--chip={CUDA_CHIP}")
    if sig.get("bwd"):
        args.append("--bwd")
    if sig.get("deterministic"):
        args.append("--deterministic")
    if sig.get("sinks"):
        args.append("--sinks")
    if sig.get("varlen"):
        args.append("--varlen")
    if "page_size" in sig:
        args.append(f"--page-size={sig['page_size']}")
    if "scale" in sig:
        args.append(f"--scale={sig['scale']!r}")
    if "softcap" in sig:
        args.append(f"--softcap={sig['softcap']!r}")
    return args


def default_signatures(count):
    return max(1, (count * 2 + 4) // 5)


def make_problems(seed, count, target, work, signatures):
    """[(index, signature, (b, sq, sk), data seed)] for problems 0..count-1."""
    pool_rng = random.Random(f"fmha-random-pool:{seed}")
    pool = [random_signature(pool_rng, target) for _ in range(signatures)]
    pool = [add_backward(seed, j, sig) for j, sig in enumerate(pool)]
    pool = [add_q_in_shared(seed, j, sig) for j, sig in enumerate(pool)]
    pool = [add_wgmma(seed, j, sig) for j, sig in enumerate(pool)]
    pool = [add_index_bits(seed, j, sig) for j, sig in enumerate(pool)]
    pool = [add_model_features(seed, j, sig) for j, sig in enumerate(pool)]
    pool = [add_serving(seed, j, sig) for j, sig in enumerate(pool)]
    problems = []
    for i in range(count):
        rng = random.Random(f"fmha-random-problem:{seed}:{i}")
        sig = pool[rng.randrange(len(pool))]
        shape = random_shape(rng, sig, work)
        problems.append((i, sig, shape, rng.randrange(1 << 32)))
    return problems


def run_command(cmd, timeout=RUN_TIMEOUT_S):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s"


class BundleCache:
    """Compiles each signature once (threads wait for the first compile)."""

    def __init__(self, fmha_compile, folder):
        self.fmha_compile = fmha_compile
        self.folder = folder
        self.lock = threading.Lock()
        self.pending = {}
        self.compiled = 0

    def get(self, sig):
        path = os.path.join(self.folder, bundle_name(sig))
        with self.lock:
            event = self.pending.get(path)
            first = event is None
            if first:
                event = self.pending[path] = [threading.Event(), None]
        if not first:
            event[0].wait()
            return path, event[1]
        error = None
        if not os.path.exists(path):
            cmd = [self.fmha_compile, *compile_args(sig), "-o", path + ".tmp"]
            rc, text = run_command(cmd)
            if rc == 0:
                os.replace(path + ".tmp", path)
                with self.lock:
                    self.compiled += 1
            else:
                error = f"fmha-compile exit {rc}:\n{text.strip()}"
        event[1] = error
        event[0].set()
        return path, error


def run_args(bundle, shape, data_seed, sig=None):
    b, sq, sk = shape
    args = [bundle, "-b", str(b), "--sq", str(sq), "--sk", str(sk),
            "--seed", str(data_seed), "--validate"]
    if sig and sig.get("varlen"):
        lq, lk = varlen_lengths(shape, data_seed)
        args[1:3] = ["--seqlens-q", ",".join(map(str, lq)), "--seqlens-k",
                     ",".join(map(str, lk))]
    if sig and "page_size" in sig:
        # The cache lengths replace Sk (--seqlens-k's count is B's).
        count = b
        lengths, pages, entries = paged_lengths(shape, data_seed, count)
        at = args.index("--sk")
        del args[at:at + 2]
        if "--seqlens-k" in args:
            at = args.index("--seqlens-k")
            del args[at:at + 2]
        else:
            at = args.index("-b")
            del args[at:at + 2]
        args += ["--seqlens-k", ",".join(map(str, lengths))]
        if pages:
            page = sig["page_size"]
            filled = sum((n + page - 1) // page for n in lengths)
            longest = max(1, max((n + page - 1) // page for n in lengths))
            args += ["--pages", str(max(filled, 1) + pages), "--max-pages",
                     str(longest + entries)]
    # One forward problem in five draws stress inputs (row maxima that rise,
    # fall or jump along the keys: the online softmax's rescaling), chosen
    # by the data seed so that the problems of a seed stay the same; not a
    # paged cache (fmha-run draws its pages normal).
    if (sig and not sig.get("bwd") and data_seed % 5 == 0 and
            "page_size" not in sig):
        args += ["--inputs", "stress"]
    if sig and sig.get("bwd") and (b * sq * sk * sig["hq"] *
                                   (sig["d"] + sig["dv"]) <= GRAD_CHECK_WORK):
        args.append("--grad-check")
    return args


def describe(sig, shape):
    b, sq, sk = shape
    extra = "".join(f" {k}={sig[k]}" for k in ("scale", "softcap") if k in sig)
    if "block_m" in sig:
        extra += f" block={sig['block_m']}x{sig.get('block_n', 'page')}"
    if "warp_rows" in sig:
        extra += f" warp_rows={sig['warp_rows']}"
    if sig.get("q_in_shared"):
        extra += " q_in_shared"
    if "mma" in sig:
        extra += f" mma={sig['mma']}"
    if "index_bits" in sig:
        extra += f" index_bits={sig['index_bits']}"
    if sig.get("bwd"):
        extra += " bwd" + (" deterministic" if sig.get("deterministic")
                           else "")
    if sig.get("sinks"):
        extra += " sinks"
    if sig.get("varlen"):
        extra += " varlen"
    if "page_size" in sig:
        extra += f" page_size={sig['page_size']}"
    return (f"{sig['dtype']} Hq={sig['hq']} Hk={sig['hk']} D={sig['d']} "
            f"Dv={sig['dv']} mask={sig['mask']}{extra} B={b} Sq={sq} Sk={sk}")


def check_result(rc, text):
    """(passed, rel_err or None): the worst over o (forward) or dq, dk, dv
    (backward; a gradient whose reference is all 0 has no rel_err: fmha-run
    judges it against the magnitudes of its terms)."""
    errs = [0.0 if zero else float(r) for a, r, zero in re.findall(
        r"max_abs_err=([0-9.eE+-]+|-?nan|inf) rel_err=([0-9.eE+-]+|-?nan|inf)"
        r"( \(reference is all 0\))?", text)]
    rel = max(errs) if errs else None
    return rc == 0 and "PASS" in text and "FAIL" not in text, rel


class Report:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.worst = {}
        self.done = 0
        self.lock = threading.Lock()

    def add(self, index, sig, shape, passed, rel, lines):
        with self.lock:
            self.done += 1
            if rel is not None and rel == rel:
                key = sig["dtype"]
                if rel > self.worst.get(key, (0.0, None))[0]:
                    self.worst[key] = (rel, index)
            if not passed:
                self.failures.append(index)
                print("\n".join(lines), flush=True)
            elif self.args.verbose:
                print(f"ok {index}: {describe(sig, shape)} rel_err={rel}",
                      flush=True)
            if self.args.progress and self.done % self.args.progress == 0:
                print(f"... {self.done} problems, {len(self.failures)} "
                      f"failures", flush=True)


def replay_command(args, index):
    cmd = [sys.executable, os.path.abspath(__file__), "--seed", str(args.seed),
           "--count", str(args.count), "--only", str(index), "--target",
           args.target, "--max-work", "%g" % args.max_work,
           "--signatures", str(args.signatures)]
    if args.run_bundles:
        cmd += ["--run-bundles", args.run_bundles]
    cmd += ["--bin", args.bin]
    return " ".join(shlex.quote(c) for c in cmd)


def failure_lines(args, index, sig, shape, compile_cmd, run_cmd, text):
    lines = [f"FAIL problem {index} (seed {args.seed}): {describe(sig, shape)}"]
    if compile_cmd:
        lines.append("  compile: " + " ".join(shlex.quote(c)
                                              for c in compile_cmd))
    if run_cmd:
        lines.append("  run:     " + " ".join(shlex.quote(c) for c in run_cmd))
    lines.append("  replay:  " + replay_command(args, index))
    lines += ["  | " + l for l in text.strip().splitlines()[-12:]]
    return lines


def run_local(args, problems):
    """Compile (cached) and run every problem on this machine."""
    tool = lambda name: os.path.join(args.bin, name)
    report = Report(args)
    tmp = None
    if args.cache:
        os.makedirs(args.cache, exist_ok=True)
        folder = args.cache
    else:
        tmp = tempfile.TemporaryDirectory(prefix="fmha-random-")
        folder = tmp.name
    cache = BundleCache(tool("fmha-compile"), folder)

    def one(problem):
        index, sig, shape, data_seed = problem
        bundle, error = cache.get(sig)
        compile_cmd = [tool("fmha-compile"), *compile_args(sig), "-o",
                       "BUNDLE"]
        if error:
            report.add(index, sig, shape, False, None, failure_lines(
                args, index, sig, shape, compile_cmd, None, error))
            return
        cmd = [tool("fmha-run"), *run_args(bundle, shape, data_seed, sig)]
        rc, text = run_command(cmd)
        passed, rel = check_result(rc, text)
        shown = [tool("fmha-run"), *run_args("BUNDLE", shape, data_seed, sig)]
        report.add(index, sig, shape, passed, rel, failure_lines(
            args, index, sig, shape, compile_cmd, shown, text)
            if not passed else [])

    try:
        run_pool(args, one, problems)
    finally:
        if tmp:
            tmp.cleanup()
    return report, cache.compiled


def run_pool(args, fn, items):
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for f in [pool.submit(fn, item) for item in items]:
            f.result()


def make_bundles(args, problems):
    """cuda: compile every signature into OUT and write OUT/problems.json."""
    out = args.make_bundles
    os.makedirs(out, exist_ok=True)
    cache = BundleCache(os.path.join(args.bin, "fmha-compile"), out)
    errors = []

    def one(problem):
        index, sig, shape, data_seed = problem
        _, error = cache.get(sig)
        if error:
            errors.append((index, sig, error))

    run_pool(args, one, problems)
    listing = []
    for index, sig, shape, data_seed in problems:
        listing.append(dict(index=index, signature=sig, bundle=bundle_name(sig),
                            shape=list(shape), data_seed=data_seed,
                            compile=compile_args(sig)))
    with open(os.path.join(out, "problems.json"), "w") as f:
        json.dump(dict(seed=args.seed, count=args.count, target=args.target,
                       max_work=args.max_work, signatures=args.signatures,
                       problems=listing), f, indent=1)
    for index, sig, error in errors:
        print(f"COMPILE FAIL problem {index}: {describe(sig, (0, 0, 0))}\n"
              f"  {error}")
    print(f"random conformance: {len(set(bundle_name(p[1]) for p in problems))}"
          f" bundles for {len(problems)} problems in {out} (seed {args.seed});"
          f" {len(errors)} compile failures")
    return 1 if errors else 0


def run_bundles(args, only):
    """cuda: run OUT/problems.json's problems with the bundles beside it."""
    folder = args.run_bundles
    with open(os.path.join(folder, "problems.json")) as f:
        listing = json.load(f)
    args.seed, args.count = listing["seed"], listing["count"]
    args.target, args.max_work = listing["target"], listing["max_work"]
    args.signatures = listing["signatures"]
    items = [p for p in listing["problems"] if only is None or p["index"] == only]
    report = Report(args)
    run_path = os.path.join(args.bin, "fmha-run")

    def one(p):
        sig, shape = p["signature"], tuple(p["shape"])
        bundle = os.path.join(folder, p["bundle"])
        cmd = [run_path, *run_args(bundle, shape, p["data_seed"], sig)]
        rc, text = run_command(cmd)
        passed, rel = check_result(rc, text)
        compile_cmd = ["fmha-compile", *p["compile"], "-o", p["bundle"]]
        report.add(p["index"], sig, shape, passed, rel, failure_lines(
            args, p["index"], sig, shape, compile_cmd, cmd, text)
            if not passed else [])

    run_pool(args, one, items)
    return report, 0, len(items)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True,
                        help="folder with fmha-compile and fmha-run")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int,
                        help="seed of the run (default: from the clock)")
    parser.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--only", type=int, metavar="I",
                        help="run problem I of the seed's run only")
    parser.add_argument("--max-work", type=float, default=DEFAULT_WORK,
                        help="bound on B*Hq*Sq*Sk*(D+Dv) (default %g)"
                        % DEFAULT_WORK)
    parser.add_argument("--signatures", type=int, metavar="K",
                        help="size of the signature pool the problems draw "
                        "from (default: 2/5 of --count)")
    parser.add_argument("--cache", metavar="DIR",
                        help="keep compiled bundles here (default: a "
                        "temporary folder)")
    parser.add_argument("--make-bundles", metavar="OUT",
                        help="compile the bundles and write OUT/problems.json "
                        "instead of running (for --target cuda)")
    parser.add_argument("--run-bundles", metavar="DIR",
                        help="run DIR/problems.json with the bundles in DIR "
                        "(fmha-run only; no fmha-compile needed)")
    parser.add_argument("--progress", type=int, default=0, metavar="N",
                        help="print a line every N problems")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.make_bundles and args.run_bundles:
        parser.error("--make-bundles and --run-bundles exclude each other")
    if args.target == "cuda" and not (args.make_bundles or args.run_bundles):
        parser.error("--target cuda needs --make-bundles OUT (here) or "
                     "--run-bundles DIR (on the GPU machine)")
    start = time.time()
    if args.run_bundles:
        report, compiled, total = run_bundles(args, args.only)
    else:
        if args.seed is None:
            args.seed = int(time.time() * 1000) % (1 << 31)
        print(f"random conformance: seed {args.seed}, {args.count} problems, "
              f"target {args.target}", flush=True)
        if args.signatures is None:
            args.signatures = default_signatures(args.count)
        problems = make_problems(args.seed, args.count, args.target,
                                 args.max_work, args.signatures)
        if args.only is not None:
            if not 0 <= args.only < args.count:
                parser.error("--only must be in 0..COUNT-1")
            problems = [problems[args.only]]
        if args.make_bundles:
            return make_bundles(args, problems)
        report, compiled = run_local(args, problems)
        total = len(problems)
    worst = ", ".join(f"{k} {v[0]:.2e} (problem {v[1]})"
                      for k, v in sorted(report.worst.items()))
    print(f"random conformance: seed {args.seed}, target {args.target}: "
          f"{total} problems, {len(report.failures)} failures"
          f"{', %d bundles compiled' % compiled if compiled else ''}, "
          f"{time.time() - start:.0f} s; worst rel_err: {worst or '-'}")
    if report.failures:
        print("failed problems: " + " ".join(map(str, sorted(report.failures))))
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
