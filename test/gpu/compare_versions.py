#!/usr/bin/env python3
"""Same-run speed of two versions of FMHA: bench.py of an old tree (its
python/ and test/gpu/, its libfmha_runtime.so, its bundles) against this
tree's, interleaved round by round (old first in odd rounds, new first in
even ones), FMHA's systems only.

    python3 test/gpu/compare_versions.py --old-tree OLD --old-lib OLD/libfmha_runtime.so \\
        --old-bundles OLD-BUNDLES --new-bundles NEW-BUNDLES --out OUT [--bwd] [--rounds 3]

Writes OUT/compare[-bwd].csv (every run's TFLOP/s: the raw data),
OUT/compare[-bwd].md (per row and system the median of the rounds on each
side and new / old) and exits 1 when a row is below --min-ratio (0.97), or
when a run fails.
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_bench(tree, lib, bundles, out, bwd, extra):
    env = dict(os.environ, FMHA_RUNTIME_LIB=lib, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, os.path.join(tree, "test", "gpu", "bench.py"), "--bundles", bundles,
           "--out", out, "--systems", "fmha,fmha-det" if bwd else "fmha"] + extra
    if bwd:
        cmd.append("--bwd")
    print("compare_versions: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, env=env, check=True)
    rows = {}
    with open(os.path.join(out, "bench-bwd.csv" if bwd else "bench.csv")) as f:
        for r in csv.DictReader(f):
            key = (r["config"], r["hdim"], r["seqlen"])
            for name, value in r.items():
                if name.endswith("_tflops"):
                    try:
                        rows[key + (name[:-len("_tflops")],)] = float(value)
                    except ValueError:
                        rows[key + (name[:-len("_tflops")],)] = None
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old-tree", required=True, help="checkout of the old version")
    ap.add_argument("--old-lib", required=True, help="its libfmha_runtime.so")
    ap.add_argument("--old-bundles", required=True)
    ap.add_argument("--new-lib", default=os.path.join(ROOT, "build", "lib", "libfmha_runtime.so"))
    ap.add_argument("--new-bundles", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bwd", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-ratio", type=float, default=0.97)
    args, extra = ap.parse_known_args()
    os.makedirs(args.out, exist_ok=True)
    sides = {"old": (args.old_tree, args.old_lib, args.old_bundles),
             "new": (ROOT, args.new_lib, args.new_bundles)}
    runs = {"old": [], "new": []}
    for i in range(args.rounds):
        order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
        for side in order:
            tree, lib, bundles = sides[side]
            out = os.path.join(args.out, "%s-%d%s" % (side, i, "-bwd" if args.bwd else ""))
            runs[side].append(run_bench(tree, lib, bundles, out, args.bwd, extra))
    stem = "compare-bwd" if args.bwd else "compare"
    keys = sorted(set(runs["old"][0]) | set(runs["new"][0]),
                  key=lambda k: (k[3], k[0], int(k[1]), int(k[2])))
    worst = None
    with open(os.path.join(args.out, stem + ".csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "config", "hdim", "seqlen"] +
                   ["%s_%d" % (s, i) for s in ("old", "new") for i in range(args.rounds)] +
                   ["old_median", "new_median", "new_over_old"])
        lines = ["| system | config | hdim | seqlen | old TFLOP/s | new TFLOP/s | new / old |",
                 "|---|---|---|---|---|---|---|"]
        for key in keys:
            vals = {s: [r.get(key) for r in runs[s]] for s in ("old", "new")}
            med = {s: statistics.median(v) if all(x is not None for x in v) else None
                   for s, v in vals.items()}
            ratio = med["new"] / med["old"] if med["new"] and med["old"] else None
            if ratio is not None and (worst is None or ratio < worst):
                worst = ratio
            w.writerow([key[3], key[0], key[1], key[2]] +
                       ["%.2f" % x if x is not None else "n/a" for s in ("old", "new")
                        for x in vals[s]] +
                       ["%.2f" % med[s] if med[s] else "n/a" for s in ("old", "new")] +
                       ["%.3f" % ratio if ratio else "n/a"])
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                key[3], key[0], key[1], key[2],
                "%.1f" % med["old"] if med["old"] else "n/a",
                "%.1f" % med["new"] if med["new"] else "n/a",
                "%.3f" % ratio if ratio else "n/a"))
    lines.append("")
    lines.append("Medians of %d interleaved rounds; worst new / old: %s." %
                 (args.rounds, "%.3f" % worst if worst else "n/a"))
    with open(os.path.join(args.out, stem + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    sys.exit(0 if worst is not None and worst >= args.min_ratio else 1)


if __name__ == "__main__":
    main()
