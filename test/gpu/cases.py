"""The signatures and problems of the GPU conformance sweep and benchmark.

Shared by make_bundles.py (which compiles every signature here, on a machine
with LLVM), sweep.py and bench.py (which run them on the GPU machine). A
signature is a dict of fmha.bundle_name's arguments; its bundle file is
fmha.bundle_name(**signature) in the bundle directory, listed in the
directory's manifest.json.
"""

import itertools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if os.path.join(ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "python"))

CHIP = "sm_90a"  # the H200

# --- The conformance sweep -------------------------------------------------

# Every mask family (DESIGN.md section 1): none, causal top-left and
# bottom-right, one- and two-sided windows of both anchors, windows with sink
# tokens, the xt/xb shorthands (odd, even, causal).
SWEEP_MASKS = ["0", "t", "b", "t:32,0", "b:64,0", "t:17,9", "b:0,40",
               "b:100,0,4", "t:33,0,5", "b:16,16,3", "xt:31", "xb:40", "xb:-1"]

# (Hq, Hk): 1:1, 2:1, 8:1 GQA and MQA.
SWEEP_HEADS = [(4, 4), (4, 2), (16, 2), (4, 1)]

SWEEP_TYPES = [("f16", 64), ("bf16", 64), ("f16", 128), ("bf16", 128)]

# (B, Sq, Sk): one element, decode (Sq = 1), tile multiples and not, Sq < Sk
# and Sq > Sk, several q tiles and a remainder.
SWEEP_SIZES = [(1, 1, 1), (2, 1, 257), (1, 64, 64), (2, 100, 100), (1, 77, 300),
               (1, 300, 77), (3, 129, 129), (1, 400, 700)]


def sweep_signatures():
    """Each mask with each (dtype, D); the head layout rotates so that every
    (dtype, D) meets every head layout across the masks. Plus a scale and a
    softcap signature."""
    sigs = []
    for m, mask in enumerate(SWEEP_MASKS):
        for t, (dtype, d) in enumerate(SWEEP_TYPES):
            hq, hk = SWEEP_HEADS[(m + t) % len(SWEEP_HEADS)]
            sigs.append(dict(target="cuda", chip=CHIP, dtype=dtype, hq=hq, hk=hk,
                             d=d, dv=d, mask=mask))
    sigs.append(dict(target="cuda", chip=CHIP, dtype="bf16", hq=8, hk=2, d=128, dv=128,
                     mask="b", softcap=30.0))
    sigs.append(dict(target="cuda", chip=CHIP, dtype="f16", hq=4, hk=4, d=64, dv=64,
                     mask="t", scale=0.3))
    # The head dims whose tiles are padded to a power of two (the staged
    # kernels), each under a rotation of the masks and head layouts.
    for n, (d, dv) in enumerate(PADDED_HDIMS):
        for m, mask in enumerate(PADDED_MASKS):
            hq, hk = SWEEP_HEADS[(n + m) % len(SWEEP_HEADS)]
            sigs.append(dict(target="cuda", chip=CHIP, dtype=("bf16", "f16")[(n + m) % 2],
                             hq=hq, hk=hk, d=d, dv=dv, mask=mask))
    return sigs


# (D, Dv) of Phi, Llama-2-era models and DeepSeek's prefill, and two more
# multiples of 16 (48 pads to 64, 112 to 128, 160 to 256).
PADDED_HDIMS = [(80, 80), (96, 96), (192, 128), (48, 112), (160, 160)]
PADDED_MASKS = ["0", "b", "t:17,9", "b:100,0,4", "xb:40"]


def sweep_cases():
    """(signature, (B, Sq, Sk)) pairs. Every size for every signature."""
    return [(sig, size) for sig, size in itertools.product(sweep_signatures(), SWEEP_SIZES)]


# Problems run with `fmha-run --inputs stress` (row maxima that rise, fall
# or jump along the keys, by kv head: the online softmax's lazy rescaling),
# long enough for many kv tiles: each D = 128 and D = 64 signature of
# sweep_signatures() without a window, at one size with Sq != Sk.
STRESS_SIZE = (1, 700, 2100)


def stress_cases():
    return [(sig, STRESS_SIZE) for sig in sweep_signatures()
            if sig["mask"] in ("0", "t", "b")]


# Problems that also do a --save/--load round trip.
ROUND_TRIP = [(dict(target="cuda", chip=CHIP, dtype="bf16", hq=16, hk=2, d=128, dv=128,
                    mask="b:100,0,4"), (2, 150, 333)),
              (dict(target="cuda", chip=CHIP, dtype="f16", hq=4, hk=1, d=64, dv=64,
                    mask="t"), (1, 1, 64))]

# --- The backward sweep ----------------------------------------------------

# Masks of the backward (DESIGN.md section 1): none, causal top-left and
# bottom-right, windows with sink tokens, a two-sided window.
BWD_MASKS = ["0", "t", "b", "b:100,0,4", "t:33,0,5", "t:17,9"]

# (Hq, Hk): 1:1, 4:1 and 8:1 GQA, MQA (dK/dV summed over the group).
BWD_HEADS = [(4, 4), (8, 2), (16, 2), (4, 1)]

# (B, Sq, Sk): one element, decode rows, tile multiples and sizes off the
# tile grid, Sq < Sk and Sq > Sk.
BWD_SIZES = [(1, 1, 1), (2, 1, 130), (1, 64, 64), (2, 100, 100), (1, 77, 300), (1, 300, 77),
             (1, 200, 513)]


def bwd_signature(dtype, hq, hk, d, mask, deterministic, **extra):
    sig = dict(target="cuda", chip=CHIP, dtype=dtype, hq=hq, hk=hk, d=d, dv=d, mask=mask,
               kind="bwd", deterministic=deterministic)
    sig.update(extra)
    return sig


def bwd_sweep_signatures():
    """Each mask with each (dtype, D), atomic and deterministic; the head
    layout rotates so that every (dtype, D) meets every head layout across
    the masks. Plus one softcap signature."""
    sigs = []
    for m, mask in enumerate(BWD_MASKS):
        for t, (dtype, d) in enumerate(SWEEP_TYPES):
            hq, hk = BWD_HEADS[(m + t) % len(BWD_HEADS)]
            for det in (False, True):
                sigs.append(bwd_signature(dtype, hq, hk, d, mask, det))
    sigs.append(bwd_signature("bf16", 8, 2, 128, "b", False, softcap=30.0))
    # On sm_90a the defaults at D = 64 and 128 take the warpgroup dkdv
    # kernel; explicit tiles keep the mma.sync one (its split step at
    # 64 x 64 and 128 x 128).
    for dtype, hq, hk, d, mask, det, block in (
            ("bf16", 8, 2, 128, "t", False, 128), ("f16", 4, 4, 64, "b:100,0,4", False, 64),
            ("bf16", 4, 1, 64, "xb:50", True, 128), ("f16", 4, 2, 128, "0", True, 128)):
        sigs.append(bwd_signature(dtype, hq, hk, d, mask, det, block_m=block, block_n=block))
    return sigs


def bwd_sweep_cases():
    """(signature, (B, Sq, Sk)) pairs of the backward sweep."""
    return [(sig, size) for sig, size in itertools.product(bwd_sweep_signatures(), BWD_SIZES)]


# Backward problems that also do a --save/--load round trip (the
# deterministic one compares dq, dk, dv bit for bit, the atomic one dk, dv).
BWD_ROUND_TRIP = [(bwd_signature("bf16", 16, 2, 128, "b:100,0,4", True), (2, 150, 333)),
                  (bwd_signature("f16", 8, 2, 64, "t", False), (1, 130, 130))]

# --- The benchmark ---------------------------------------------------------

BENCH_TOKENS = 16384  # per batch: batch = BENCH_TOKENS // seqlen
BENCH_HIDDEN = 2048   # Hq = BENCH_HIDDEN // hdim
BENCH_HDIMS = [64, 128]
BENCH_SEQLENS = [1024, 4096, 16384]
# name -> (mask spec, Hq/Hk)
BENCH_CONFIGS = {
    "full": ("0", 1),
    "causal": ("b", 1),
    "gqa4-causal": ("b", 4),
    "window4096-sink4": ("b:4095,0,4", 1),
}


def bench_signature(config, hdim, dv=None):
    mask, group = BENCH_CONFIGS[config]
    hq = BENCH_HIDDEN // hdim
    return dict(target="cuda", chip=CHIP, dtype="bf16", hq=hq, hk=hq // group, d=hdim,
                dv=dv or hdim, mask=mask)


def bench_signatures():
    return [bench_signature(c, d) for c in BENCH_CONFIGS for d in BENCH_HDIMS]


# The backward benchmark (bench.py --bwd): full, causal and GQA 4:1 causal.
BWD_BENCH_CONFIGS = ["full", "causal", "gqa4-causal"]


def bwd_bench_signature(config, hdim, deterministic):
    return dict(bench_signature(config, hdim), kind="bwd", deterministic=deterministic)


def bwd_bench_signatures():
    return [bwd_bench_signature(c, d, det) for c in BWD_BENCH_CONFIGS for d in BENCH_HDIMS
            for det in (False, True)]


def all_signatures(kinds=("fwd", "bwd")):
    """Every signature to compile, once each; `kinds` selects fwd and/or bwd
    (the forward bundles of the backward benchmark count as bwd's too)."""
    sigs = []
    if "fwd" in kinds:
        sigs += sweep_signatures() + [s for s, _ in ROUND_TRIP] + bench_signatures()
    if "bwd" in kinds:
        sigs += (bwd_sweep_signatures() + [s for s, _ in BWD_ROUND_TRIP] +
                 bwd_bench_signatures() +
                 [bench_signature(c, d) for c in BWD_BENCH_CONFIGS for d in BENCH_HDIMS])
    import fmha
    seen, out = set(), []
    for sig in sigs:
        key = fmha.bundle_name(**sig)
        if key not in seen:
            seen.add(key)
            out.append(sig)
    return out


# --- Masks in Python (for FLOP counts and the benchmark's mask_mods) -------


def parse_mask(spec):
    """(anchor, left, right, sink) of a spec; left/right None = unbounded;
    None for no mask. DESIGN.md section 1."""
    spec = spec.strip()
    if spec in ("0", "none"):
        return None
    if spec in ("t", "b"):
        return (spec, None, 0, 0)
    kind, _, args = spec.partition(":")
    nums = [int(x) for x in args.split(",")]
    if kind in ("xt", "xb"):
        w = nums[0]
        if w < 0:
            return (kind[1], None, 0, 0)
        left = w // 2
        return (kind[1], left, w - 1 - left, 0)
    left, right = nums[0], nums[1]
    sink = nums[2] if len(nums) > 2 else 0
    return (kind, None if left < 0 else left, None if right < 0 else right, sink)


def visible_pairs(spec, sq, sk):
    """Number of visible (i, j) pairs of one (batch, head), row by row."""
    m = parse_mask(spec)
    if m is None:
        return sq * sk
    anchor, left, right, sink = m
    off = sk - sq if anchor == "b" else 0
    sink = min(sink, sk)
    total = 0
    for i in range(sq):
        lo = 0 if left is None else max(0, i + off - left)
        hi = sk - 1 if right is None else min(sk - 1, i + off + right)
        window = hi - lo + 1 if hi >= lo else 0
        overlap_hi = min(hi, sink - 1)
        overlap = overlap_hi - lo + 1 if overlap_hi >= lo else 0
        total += window + sink - overlap
    return total
