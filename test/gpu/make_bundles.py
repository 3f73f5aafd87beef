#!/usr/bin/env python3
"""Compiles every cuda bundle the GPU sweep and benchmark need.

Runs where LLVM is (the GPU machine has none):

    test/gpu/make_bundles.py --bin build/bin --out gpu-bundles [--jobs N]

writes OUT/<fmha.bundle_name(signature)> for each signature of cases.py and
OUT/manifest.json, the index sweep.py and bench.py read:

    {"chip": "sm_90a", "bundles": [{"file": NAME, "signature": {...},
      "uses": ["sweep", "bench", ...], "error": null | "message"}, ...]}

A signature fmha-compile rejects is listed with its error (the sweep then
reports it as a failure) and makes the exit status 1.
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
    uses = []
    if any(fmha.bundle_name(**s) == key for s in cases.sweep_signatures()):
        uses.append("sweep")
    if any(fmha.bundle_name(**s) == key for s, _ in cases.ROUND_TRIP):
        uses.append("round-trip")
    if any(fmha.bundle_name(**s) == key for s in cases.bench_signatures()):
        uses.append("bench")
    return uses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="folder with fmha-compile")
    ap.add_argument("--out", required=True, help="bundle folder to write")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--force", action="store_true", help="recompile existing bundles")
    args = ap.parse_args()

    compiler = os.path.join(args.bin, "fmha-compile")
    if not os.access(compiler, os.X_OK):
        sys.exit("make_bundles: no executable %s" % compiler)
    os.makedirs(args.out, exist_ok=True)
    sigs = cases.all_signatures()
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

    entries = []
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for sig, (name, error, secs) in zip(sigs, pool.map(build, sigs)):
            entries.append({"file": name, "signature": sig, "uses": uses_of(sig),
                            "error": error})
            if error:
                failed += 1
                print("FAILED %s: %s" % (name, error), flush=True)
            else:
                print("ok     %s (%.1f s)" % (name, secs), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"chip": cases.CHIP, "bundles": entries}, f, indent=1)
    print("make_bundles: %d compiled, %d failed; manifest %s"
          % (len(entries) - failed, failed, os.path.join(args.out, "manifest.json")))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
