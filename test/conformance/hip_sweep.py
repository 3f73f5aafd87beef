#!/usr/bin/env python3
"""The GPU conformance sweep's signatures (test/gpu/cases.py) compiled for AMD
chips: `fmha-compile --target=hip` must turn every configuration a chip
supports into an hsaco bundle, and refuse the others with one clear `error:`
line and exit 2 (never a crash). No AMD GPU exists here, so the bundles are
not run; test/layouts checks the fragment layouts against AMD's tables and
the lit tests check the ISA.

Chips: CDNA2 (gfx90a), CDNA3 (gfx942, also with --mfma=32), CDNA4 (gfx950),
RDNA3 (gfx1100) and RDNA4 (gfx1200). Every chip must compile every
signature up to D = 128 (other multiples of 16 through the staged kernel,
its tiles padded to the next power of two) but RDNA3's with tiles of 128
columns (its WMMA holds each A/B element in two lanes, and such fragments do
not fit a wave32 lane's registers), which must be refused by name, as must
head dims above 128 on every chip."""

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "gpu"))
import cases  # noqa: E402

# (chip, extra flags, largest head dim it must compile)
CHIPS = [("gfx90a", (), 128), ("gfx942", (), 128), ("gfx942", ("--mfma=32",), 128),
         ("gfx950", (), 128), ("gfx1100", (), 64), ("gfx1200", (), 128)]


def columns(sig):
    """The columns of the kernel's widest tile: the larger head dim, padded
    to the next power of two."""
    d = max(sig["d"], sig["dv"])
    return 1 << (d - 1).bit_length()


def compile_args(sig, chip, extra):
    args = ["--target=hip", f"--chip={chip}", f"--dtype={sig['dtype']}",
            f"--hq={sig['hq']}", f"--hk={sig['hk']}", f"-d={sig['d']}",
            f"--dv={sig['dv']}", f"--mask={sig['mask']}", *extra]
    if "scale" in sig:
        args.append(f"--scale={sig['scale']}")
    if "softcap" in sig:
        args.append(f"--softcap={sig['softcap']}")
    return args


def check(tool, tmp, index, sig, chip, extra, max_dim):
    bundle = os.path.join(tmp, f"{chip}-{index}-{len(extra)}.fmha")
    cmd = [tool, *compile_args(sig, chip, extra), "-o", bundle]
    p = subprocess.run(cmd, capture_output=True, text=True)
    text = (p.stdout + p.stderr).strip()
    supported = columns(sig) <= max_dim
    where = " ".join(cmd)
    if supported:
        if p.returncode != 0:
            return f"FAIL (expected an hsaco bundle): {where}\n{text}"
        with open(bundle, "rb") as f:
            head = f.read(600)
        if b"binary_format=hsaco" not in head or b"target=hip" not in head:
            return f"FAIL (not an hsaco bundle): {where}"
        os.remove(bundle)
        return None
    lines = text.splitlines()
    if (p.returncode != 2 or not lines
            or not lines[0].startswith("fmha-compile: error: ")
            or "head dims" not in lines[0]):
        return (f"FAIL (expected exit 2 naming the head dims, got "
                f"{p.returncode}): {where}\n{text}")
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="folder with fmha-compile")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    tool = os.path.join(args.bin, "fmha-compile")
    sigs = cases.sweep_signatures()
    jobs = [(i, sig, chip, extra, max_dim) for chip, extra, max_dim in CHIPS
            for i, sig in enumerate(sigs)]
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda j: check(tool, tmp, *j), jobs))
    failures = [r for r in results if r]
    for f in failures:
        print(f)
    refused = sum(1 for i, sig, chip, extra, m in jobs
                  if columns(sig) > m)
    print(f"hip sweep: {len(sigs)} signatures x {len(CHIPS)} chip "
          f"configurations: {len(jobs) - refused} hsaco bundles expected, "
          f"{refused} refusals expected, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
