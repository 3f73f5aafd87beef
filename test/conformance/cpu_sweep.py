#!/usr/bin/env python3
"""CPU conformance sweep: fmha-compile + fmha-run --validate over the problem
space of DESIGN.md section 1 (every mask kind, windows and sinks, GQA 1:1,
2:1, 8:1 and MQA, Sq != Sk both ways, sizes that are not tile multiples,
a paged K/V cache of 16- and 32-key pages (the static and vector tiles over
several pages), Sq = 1 decoding, D/Dv in {32, 64, 128} with Dv != D and 80,
96, 192/128,
48/112 (padded to powers of two by the static tiles), rows with no visible
key, softcap, scale, f32/f16/bf16). Every run is checked by fmha-run against
the float64 reference; this script fails if any run fails or if an f32 run's
relative error is not far under 1e-5.

With --bwd the same for the backward kernels (fmha-compile --bwd): dq, dk, dv
against the float64 reference over every mask, GQA ratios 1, 2, 4, 8 and MQA,
atomic and deterministic modes (fmha-run reruns a deterministic bundle and
requires identical bits), softcap and scale, f16/bf16, and on the small
problems a finite-difference check of the gradients (fmha-run --grad-check).

With --static-tiles the forward sweep compiles every bundle from tensors with
the GPU's static tiles (fmha-compile --from-tensors --static-tiles: q, k and v
tiles padded at the edges of Sq and Sk, the element mask on kv tiles past
Sk), so that the tiled form the GPU pipeline lowers runs against the
reference on the host; with --bwd the backward's static tiles on values (dQ
recomputed per q tile, no atomics). With --vector-tiles (forward or
backward) the same with those tiles as
vectors and the tile ops as generic vector ops (fmha-vectorize-tiles: what
the GPU pipeline distributes to lanes); the host unrolls each tile's
products in full, so the sweep's 64 x 64 and 128 x 64 tiles become 16 x 16
and 16 x 32 (compile time grows with the tile's area)."""

import argparse
import concurrent.futures
import itertools
import os
import re
import subprocess
import sys
import tempfile

MASKS = ["0", "t", "b", "t:16,0", "b:40,0", "t:3,5", "b:0,7", "t:-1,0,4",
         "b:64,0,4", "t:10,10,70", "xt:33", "xb:128", "xt:-1", "b:0,0",
         "t:0,0", "b:-1,3,1"]
SHAPES = [(1, 1, 1), (1, 1, 200), (2, 77, 77), (1, 130, 65), (1, 65, 130),
          (1, 100, 37), (1, 64, 64), (2, 200, 333), (1, 1, 129)]
HEADS = [(4, 4), (4, 2), (8, 1), (3, 1)]
DIMS = [(32, 32), (64, 64), (128, 128), (64, 32), (32, 128)]
F32_BAR = 1e-6  # "far under 1e-5"
# The tiles of the --vector-tiles sweep in place of the large ones; the
# backward's (five products a tile pair) at most 16 x 16.
VECTOR_BLOCKS = {(64, 64): (16, 16), (128, 64): (16, 32)}
VECTOR_BWD_BLOCKS = {(64, 64): (16, 16), (32, 32): (16, 16), (32, 16): (16, 16),
                     (16, 32): (16, 16), (8, 32): (8, 16), (32, 8): (16, 8)}


def signatures():
    """(dtype, hq, hk, d, dv, mask, extra flags, block) -> shapes to run."""
    out = []
    for mask in MASKS:
        out.append((("f32", 4, 2, 64, 64, mask, (), (64, 64)), SHAPES))
    for (hq, hk), (d, dv) in itertools.product(HEADS, DIMS):
        for mask in ("0", "b:40,0,4"):
            out.append((("f32", hq, hk, d, dv, mask, (), (64, 64)),
                        SHAPES[::2]))
    for dtype in ("f16", "bf16"):
        for mask in ("0", "t", "b:64,0,4", "xb:128"):
            out.append(((dtype, 8, 2, 64, 64, mask, (), (64, 64)), SHAPES))
    extras = [("--softcap=5",), ("--scale=0.3",), ("--softcap=30", "--scale=0.05")]
    for extra in extras:
        for mask in ("0", "b:40,0,4"):
            out.append((("f32", 4, 1, 64, 32, mask, extra, (64, 64)), SHAPES))
    for block in ((16, 32), (32, 16), (128, 64)):
        for mask in ("t", "b:40,0,4", "t:3,5"):
            out.append((("f32", 4, 2, 32, 32, mask, (), block), SHAPES))
    # A paged K/V cache (--page-size; fmha-run draws each batch's pages in
    # a random order, spare slots NaN): the static and vector tiles span
    # several pages (block-n a multiple of P), the memref tiles lie within
    # one (block-n cut to P, check_signature).
    for page, mask in itertools.product((16, 32), ("0", "b", "b:40,0,4",
                                                   "t:3,5")):
        out.append((("f32" if page == 16 else "f16", 4, 2, 32, 32, mask,
                     (f"--page-size={page}",), (128, 64)), SHAPES))
    # Head dims that are not powers of two: the static and vector tiles pad
    # them to the next one (the GPU's layouts), the products stopping at D.
    for n, (d, dv) in enumerate(PADDED_DIMS):
        for mask in ("0", "b:40,0,4", "t:3,5"):
            out.append((("f32", *HEADS[n % len(HEADS)], d, dv, mask, (),
                         (64, 64)), SHAPES[::2]))
    return out


PADDED_DIMS = [(80, 80), (96, 96), (192, 128), (48, 112)]


BWD_SHAPES = [(1, 1, 1), (1, 1, 70), (2, 37, 37), (1, 70, 33), (1, 33, 70),
              (1, 64, 64), (2, 90, 111)]
BWD_F32_BAR = 4e-6
GRAD_CHECK_MAX_PAIRS = 40 * 40  # finite differences on problems this small


def bwd_signatures():
    out = []
    for mask in MASKS:
        for det in ((), ("--deterministic",)):
            out.append((("f32", 4, 2, 32, 32, mask, ("--bwd",) + det,
                         (16, 16)), BWD_SHAPES))
    for hq, hk in ((4, 4), (4, 2), (8, 2), (8, 1), (3, 1)):
        for mask in ("0", "b:40,0,4"):
            for det in ((), ("--deterministic",)):
                out.append((("f32", hq, hk, 64, 32, mask, ("--bwd",) + det,
                             (32, 16)), BWD_SHAPES[::2]))
    for dtype in ("f16", "bf16"):
        for mask in ("0", "t", "b:64,0,4"):
            out.append(((dtype, 8, 2, 64, 64, mask, ("--bwd",), (32, 32)),
                        BWD_SHAPES))
    for extra in (("--softcap=5",), ("--scale=0.3",),
                  ("--softcap=30", "--scale=0.05")):
        for mask in ("0", "b:40,0,4"):
            for det in ((), ("--deterministic",)):
                out.append((("f32", 4, 1, 32, 64, mask,
                             ("--bwd",) + extra + det, (16, 32)), BWD_SHAPES))
    for block in ((8, 32), (32, 8), (64, 64)):
        for mask in ("t", "b:40,0,4", "t:3,5"):
            out.append((("f32", 4, 2, 32, 32, mask, ("--bwd",), block),
                        BWD_SHAPES))
    # Head dims that are not powers of two (the static tiles pad them).
    for n, (d, dv) in enumerate(PADDED_DIMS):
        for mask in ("0", "b:40,0,4"):
            out.append((("f32", *HEADS[n % len(HEADS)], d, dv, mask,
                         ("--bwd",), (32, 16)), BWD_SHAPES[::2]))
    return out


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def check_signature(args, tmp, index, sig, shapes):
    dtype, hq, hk, d, dv, mask, extra, (bm, bn) = sig
    if args.vector_tiles:
        blocks = VECTOR_BWD_BLOCKS if "--bwd" in extra else VECTOR_BLOCKS
        bm, bn = blocks.get((bm, bn), (bm, bn))
    page = next((int(e.split("=")[1]) for e in extra
                 if e.startswith("--page-size=")), 0)
    if page and not (args.static_tiles or args.vector_tiles):
        while page % bn:  # memref tiles lie within a page
            bn //= 2
    bundle = os.path.join(tmp, f"s{index}.fmha")
    compile_cmd = [os.path.join(args.bin, "fmha-compile"), "--target=cpu",
                   f"--dtype={dtype}", f"--hq={hq}", f"--hk={hk}", "-d", str(d),
                   f"--dv={dv}", f"--mask={mask}", f"--block-m={bm}",
                   f"--block-n={bn}", "-o", bundle, *extra]
    if args.static_tiles:
        compile_cmd += ["--from-tensors", "--static-tiles"]
    if args.vector_tiles:
        compile_cmd += ["--from-tensors", "--vector-tiles"]
    if args.defer_pv:
        compile_cmd += ["--defer-pv"]
    if args.sinks:
        compile_cmd += ["--sinks"]
    rc, text = run(compile_cmd)
    if rc != 0:
        return [f"COMPILE FAIL {' '.join(compile_cmd)}\n{text}"], 0, 0.0
    failures, worst = [], 0.0
    backward = "--bwd" in extra
    bar = BWD_F32_BAR if backward else F32_BAR
    for seed, (b, sq, sk) in enumerate(shapes):
        cmd = [os.path.join(args.bin, "fmha-run"), bundle, "-b", str(b),
               "--sq", str(sq), "--sk", str(sk), "--seed", str(seed),
               "--validate"]
        if backward and sq * sk <= GRAD_CHECK_MAX_PAIRS:
            cmd.append("--grad-check")
        rc, text = run(cmd)
        # The forward prints one rel_err, the backward one per gradient.
        # A gradient whose reference is all 0 has no rel_err: fmha-run judges it
        # against the magnitudes of its terms.
        rels = [0.0 if zero else float(r) for a, r, zero in re.findall(
            r"max_abs_err=([0-9.eE+-]+|nan|inf) rel_err=([0-9.eE+-]+|nan|inf)"
            r"( \(reference is all 0\))?", text)]
        m = len(rels) == ((4 if args.sinks else 3) if backward else 1)
        # dsinks sums terms of both signs over every row of a head: its
        # rel_err (against its largest value) grows with that cancellation;
        # fmha-run judges it against the magnitude of its terms, and the
        # finite differences check it; the f32 bar takes dq, dk and dv.
        rel = max(rels[:3]) if m else float("nan")
        if dtype == "f32":
            worst = max(worst, rel) if rel == rel else float("inf")
        if backward and "--grad-check" in cmd and "grad-check PASS" not in text:
            m = False
        bad = rc != 0 or not m or (dtype == "f32" and not rel <= bar)
        if bad:
            failures.append(f"FAIL [{' '.join(compile_cmd)}] {' '.join(cmd[2:])}"
                            f"\n{text}")
    return failures, len(shapes), worst


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="folder with fmha-compile and fmha-run")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--bwd", action="store_true",
                        help="sweep the backward kernels instead")
    parser.add_argument("--static-tiles", action="store_true",
                        help="bundles with the GPU's static tiles (forward "
                             "or, with --bwd, backward)")
    parser.add_argument("--defer-pv", action="store_true",
                        help="with --vector-tiles: each kv tile's P V "
                             "product one iteration late (fmha-defer-pv)")
    parser.add_argument("--vector-tiles", action="store_true",
                        help="bundles with the static tiles as vectors "
                             "(forward or, with --bwd, backward)")
    parser.add_argument("--sinks", action="store_true",
                        help="bundles with learned sink logits "
                             "(fmha-run draws them and validates against "
                             "the reference with them; with --bwd dsinks "
                             "too, and against finite differences)")
    parser.add_argument("--every", type=int, default=1, metavar="N",
                        help="check every Nth signature only (the sanitizer "
                             "build's runs: the code paths, for memory "
                             "errors, at a third of the time)")
    args = parser.parse_args()
    if args.every < 1:
        parser.error("--every takes a positive count")
    if args.defer_pv and not args.vector_tiles:
        parser.error("--defer-pv needs --vector-tiles")
    if (args.static_tiles or args.vector_tiles) and args.bwd and args.sinks:
        parser.error("--sinks with --bwd takes memrefs (fmha.sinks_grad); "
                     "drop --static-tiles and --vector-tiles")
    sigs = bwd_signatures() if args.bwd else signatures()
    sigs = sigs[::args.every]
    failures, runs, worst = [], 0, 0.0
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(check_signature, args, tmp, i, sig, shapes)
                   for i, (sig, shapes) in enumerate(sigs)]
        for f in futures:
            fails, n, w = f.result()
            failures += fails
            runs += n
            worst = max(worst, w)
    for f in failures:
        print(f)
    kind = ("vector-tile " if args.vector_tiles
            else "static-tile " if args.static_tiles else "")
    if args.bwd:
        kind += "backward "
    if args.sinks:
        kind += "learned-sinks "
    print(f"cpu {kind}sweep: {len(sigs)} bundles, {runs} problems, "
          f"{len(failures)} failures, worst f32 rel_err {worst:.3e}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
