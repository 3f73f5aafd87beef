#!/usr/bin/env python3
"""Same-run speed of the merge and accumulate kernels of several builds.

    elementwise_bench.py --fmha-run BIN --set old=DIR --set new=DIR --out CSV

Each DIR holds the bundles of one build, named as fmha-compile's --merge and
--accumulate bundles of make_bundles' sets: merge-<dtype>-h<H>-dv<Dv>.fmha and
acc-<dtype>.fmha. Every bundle is validated first (fmha-run --validate against
the float64 merge or sums; exit 1 on a FAIL); then each problem is timed with
`fmha-run --bench --iters 200` in `--rounds` interleaved rounds (set after set within a
round), and the CSV has one row per problem and set: the median over rounds of
the per-run medians, the bytes moved and GB/s, and the ratio to the first set.
"""

import argparse
import csv
import re
import statistics
import subprocess
import sys
from pathlib import Path

# (dtype, H, Dv, B, S) of the merges; (dtype, n) of the accumulates.
MERGES = [
    ("bf16", 32, 128, 1, 8192),
    ("bf16", 8, 64, 2, 4096),
    ("f16", 8, 128, 1, 512),
]
ACCS = [("bf16", 1 << 20), ("bf16", 1 << 25), ("f32", 1 << 25)]
# Validated on smaller problems of the same bundles (a float64 reference on
# the host): uneven sizes, a partial last workgroup.
CHECKS = {"merge": ["-b", "2", "--sq", "333"], "acc": ["-n", "100003"]}

SIZE = {"f32": 4, "f16": 2, "bf16": 2}


def problems():
    for dt, h, dv, b, s in MERGES:
        rows = b * h * s
        moved = 3 * rows * dv * SIZE[dt] + 3 * rows * 4
        yield (f"merge {dt} B={b} H={h} S={s} Dv={dv}",
               f"merge-{dt}-h{h}-dv{dv}.fmha", ["-b", str(b), "--sq", str(s)],
               moved)
    for dt, n in ACCS:
        yield (f"acc {dt} n={n}", f"acc-{dt}.fmha", ["-n", str(n)],
               n * (SIZE[dt] + 8))


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n"
                 f"{out.stdout}{out.stderr}")
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fmha-run", required=True)
    ap.add_argument("--set", action="append", required=True,
                    help="NAME=DIR of one build's bundles")
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=200)
    args = ap.parse_args()
    sets = [tuple(s.split("=", 1)) for s in args.set]

    for name, bundle, extra, _ in problems():
        for set_name, d in sets:
            path = Path(d) / bundle
            if not path.exists():
                sys.exit(f"{path}: missing")
            out = run([args.fmha_run, str(path), "--validate"] +
                      CHECKS[bundle.split("-")[0]])
            if "PASS" not in out:
                sys.exit(f"{set_name} {name}: validation failed\n{out}")
    print("all bundles validated", flush=True)

    times = {}
    for r in range(args.rounds):
        for name, bundle, extra, _ in problems():
            for set_name, d in sets:
                out = run([args.fmha_run, str(Path(d) / bundle), "--bench",
                           "--iters", str(args.iters), "--warmup", "5"] + extra)
                m = re.search(r"median_ms=([0-9.]+)", out)
                times.setdefault((name, set_name), []).append(float(m.group(1)))
                print(f"round {r} {name} {set_name} {m.group(1)} ms",
                      flush=True)

    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["problem", "set", "median_ms", "runs_ms", "bytes", "GB/s",
                    f"vs_{sets[0][0]}"])
        for name, _, _, moved in problems():
            base = statistics.median(times[(name, sets[0][0])])
            for set_name, _ in sets:
                runs = times[(name, set_name)]
                ms = statistics.median(runs)
                w.writerow([name, set_name, f"{ms:.4f}",
                            " ".join(f"{t:.4f}" for t in runs), moved,
                            f"{moved / ms / 1e6:.1f}", f"{base / ms:.3f}"])
                print(f"{name:40s} {set_name:6s} {ms:8.4f} ms "
                      f"{moved / ms / 1e6:8.1f} GB/s {base / ms:6.3f}x")


if __name__ == "__main__":
    main()
