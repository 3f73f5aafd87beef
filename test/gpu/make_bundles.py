#!/usr/bin/env python3
"""Compiles every cuda bundle the GPU sweep and benchmark need.

Runs where LLVM is (the GPU machine has none):

    test/gpu/make_bundles.py --bin build/bin --out gpu-bundles [--jobs N]

writes OUT/<fmha.bundle_name(signature)> for each signature of cases.py and
OUT/manifest.json, the index sweep.py and bench.py read:

    {"chip": "sm_90a", "bundles": [{"file": NAME, "signature": {...},
      "uses": ["sweep", "bench", ...], "error": null | "message"}, ...]}

A signature fmha-compile rejects is listed with its error (the sweep then
reports it as a failure) and makes the exit status 1; the summary counts the
failures of forward and backward bundles apart. `--kinds fwd` (or bwd)
compiles only those (a manifest already there keeps the other kind's
entries).
"""

import argparse
import concurrent.futures
import json
import os
import sys
import time

import cases
import fmha


def uses_of(sig):
    key = fmha.bundle_name(**sig)
    groups = [("sweep", cases.sweep_signatures()),
              ("round-trip", [s for s, _ in cases.ROUND_TRIP]),
              ("bench", cases.bench_signatures()),
              ("bwd-sweep", cases.bwd_sweep_signatures()),
              ("bwd-round-trip", [s for s, _ in cases.BWD_ROUND_TRIP]),
              ("bwd-bench", cases.bwd_bench_signatures() +
               [cases.bench_signature(c, d) for c in cases.BWD_BENCH_CONFIGS
                for d in cases.BENCH_HDIMS])]
    return [use for use, sigs in groups if any(fmha.bundle_name(**s) == key for s in sigs)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="folder with fmha-compile")
    ap.add_argument("--out", required=True, help="bundle folder to write")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--force", action="store_true", help="recompile existing bundles")
    ap.add_argument("--kinds", default="fwd,bwd", help="fwd, bwd or fwd,bwd (default)")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if not kinds or any(k not in ("fwd", "bwd") for k in kinds):
        sys.exit("make_bundles: --kinds takes fwd, bwd or fwd,bwd, not %r" % args.kinds)

    compiler = os.path.join(args.bin, "fmha-compile")
    if not os.access(compiler, os.X_OK):
        sys.exit("make_bundles: no executable %s" % compiler)
    os.makedirs(args.out, exist_ok=True)
    sigs = cases.all_signatures(kinds)
    print("make_bundles: %d signatures -> %s (%d jobs)" % (len(sigs), args.out, args.jobs),
          flush=True)

    def build(sig):
        name = fmha.bundle_name(**sig)
        path = os.path.join(args.out, name)
        if os.path.exists(path) and not args.force:
            return name, None, 0.0
        t0 = time.time()
        try:
            fmha.compile_bundle(path, compiler=compiler, **sig)
            return name, None, time.time() - t0
        except Exception as e:  # the compiler's message, one line
            return name, " ".join(str(e).split()), time.time() - t0

    # With one kind, the old manifest's other entries stay.
    manifest_path = os.path.join(args.out, "manifest.json")
    kept = []
    if os.path.exists(manifest_path) and len(kinds) < 2:
        names = {fmha.bundle_name(**sig) for sig in sigs}
        try:
            with open(manifest_path) as f:
                kept = [e for e in json.load(f)["bundles"] if e["file"] not in names]
        except (OSError, ValueError, KeyError) as e:
            print("make_bundles: ignoring the old manifest (%s)" % e)
    entries = []
    failed = {"fwd": 0, "bwd": 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for sig, (name, error, secs) in zip(sigs, pool.map(build, sigs)):
            entries.append({"file": name, "signature": sig, "uses": uses_of(sig),
                            "error": error})
            if error:
                failed[sig.get("kind", "fwd")] += 1
                print("FAILED %s: %s" % (name, error), flush=True)
            else:
                print("ok     %s (%.1f s)" % (name, secs), flush=True)
    with open(manifest_path, "w") as f:
        json.dump({"chip": cases.CHIP, "bundles": kept + entries}, f, indent=1)
    total = sum(failed.values())
    print("make_bundles: %d compiled, %d failed (%d forward, %d backward); manifest %s"
          % (len(entries) - total, total, failed["fwd"], failed["bwd"], manifest_path))
    if failed["bwd"]:
        print("make_bundles: backward bundles that did not compile are reported as failures "
              "by sweep.py and as n/a by bench.py --bwd")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
