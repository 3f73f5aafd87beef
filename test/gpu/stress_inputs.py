#!/usr/bin/env python3
"""Inputs that move the online softmax's running max a lot, for
`fmha-run BUNDLE --load DIR --validate` (float32 BHSD .npy files q, k, v).

The forward kernels rescale O only when a row's max grows by more than a
slack (lazy rescaling, docs/PERFORMANCE.md); standard normal inputs almost
never do that after the first kv tile. Per head h (mod 4):
  0: scores grow along the keys (the max moves every few tiles, by more
     than the slack);
  1: scores fall along the keys (the max is set by the first tile);
  2: large random scores (q and k with standard deviation 3: jumps both
     ways);
  3: standard normal.

    python3 stress_inputs.py OUT --heads 4 --seq 2048 -d 128
"""

import argparse
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("-d", type=int, default=128)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    if args.heads < 1 or args.seq < 1 or args.d < 1:
        ap.error("--heads, --seq and -d must be positive")
    rng = np.random.default_rng(args.seed)
    h, s, d = args.heads, args.seq, args.d
    q = rng.standard_normal((1, h, s, d)).astype(np.float32)
    k = rng.standard_normal((1, h, s, d)).astype(np.float32)
    v = rng.standard_normal((1, h, s, d)).astype(np.float32)
    # Scores q.k / sqrt(d) * log2(e) change by about `rise` per key along a
    # shared direction u: about 3 per tile of 32 keys, so the max moves past
    # the slack every third tile and stays stale in between.
    u = np.ones(d, dtype=np.float32) / np.sqrt(d)
    rise = 0.008 * np.sqrt(d) / 1.4427
    ramp = rise * np.arange(s, dtype=np.float32) / np.sqrt(d)
    for head in range(h):
        kind = head % 4
        if kind in (0, 1):
            q[0, head] = 0.3 * q[0, head] + np.sqrt(d) * u
            r = ramp if kind == 0 else ramp[::-1]
            k[0, head] = 0.3 * k[0, head] + np.outer(r, u) * np.sqrt(d)
        elif kind == 2:
            q[0, head] *= 3.0
            k[0, head] *= 3.0
    os.makedirs(args.out, exist_ok=True)
    for name, x in (("q", q), ("k", k), ("v", v)):
        np.save(os.path.join(args.out, name + ".npy"), x)
    print(f"stress_inputs: {args.out}: q, k, v [1, {h}, {s}, {d}]")


if __name__ == "__main__":
    main()
