#!/usr/bin/env python3
"""Strided operands end to end without a GPU: fmha-compile's cuda bundles
(forward, backward atomic and deterministic; the launch manifest derived
from the lowered IR, operands `strided align 16`) with their binary swapped
for a fake-driver module that reads the strided kernel ABI
(test/unit/FakeGpu.cpp, operands=strided: a descriptor of each tensor's
rank, its offset and strides), run by fmha-run in BSHD memory (--layout
bshd: strides passed through the generic launch) and BHSD, --validate
against the float64 reference; and the runtime's refusals of strides the
kernels cannot take.

Usage: strided_fake_test.py BIN_DIR FAKE_CUDA_LIB
"""

import math
import os
import subprocess
import sys
import tempfile


def read_bundle(path):
    data = open(path, "rb").read()
    head_end = data.index(b"\n\n")
    header = data[:head_end].decode()
    rest = data[head_end + 2:]
    man_end = rest.index(b"\n\n")
    manifest = rest[:man_end].decode()
    return header, manifest


def fake_module(header, manifest):
    """The fake module of a bundle's signature, its launch taken from the
    manifest (every kernel shares block and shared memory)."""
    keys = dict(line.split("=", 1) for line in header.splitlines()[1:] if "=" in line)
    block = shared = None
    for line in manifest.splitlines():
        words = line.split()
        if words and words[0] == "block":
            block = int(words[1])
        if words and words[0] == "shared":
            shared = int(words[1])
    scale = float(keys["scale"]) or 1 / math.sqrt(int(keys["d"]))
    lines = ["FAKE-CUDA-MODULE", "kernel=" + keys["kernel"], "dtype=" + keys["dtype"],
             "hq=" + keys["hq"], "hk=" + keys["hk"], "d=" + keys["d"], "dv=" + keys["dv"],
             "mask=" + keys["mask"], "scale=%.9g" % scale, "softcap=" + keys["softcap"],
             "block_m=" + keys["block_m"], "block_n=" + keys["block_n"], "kind=" + keys["kind"]]
    if keys["kind"] == "bwd":
        lines.append("deterministic=" + keys.get("deterministic", "0"))
    lines += ["block_threads=%d" % block, "shared_bytes=%d" % shared, "operands=strided", ""]
    return "\n".join(lines).encode() + b"\0"


def write_fake(src, dst):
    header, manifest = read_bundle(src)
    binary = fake_module(header, manifest)
    lines = [l for l in header.splitlines() if not l.startswith(("binary_size=", "binary_format="))]
    lines += ["binary_format=cubin", "binary_size=%d" % len(binary)]
    with open(dst, "wb") as f:
        f.write(("\n".join(lines) + "\n\n" + manifest + "\n\n").encode() + binary)


def main():
    bin_dir, fake = sys.argv[1], sys.argv[2]
    compiler = os.path.join(bin_dir, "fmha-compile")
    runner = os.path.join(bin_dir, "fmha-run")
    env = dict(os.environ, FMHA_CUDA_LIBRARY=fake, FMHA_FAKE_CUDA="device")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sigs = [("fwd", ["--chip=sm_90a", "--dtype=bf16", "--hq=8", "--hk=2", "-d", "64", "--mask=b:20,0,2"]),
                ("bwd", ["--chip=sm_80", "--dtype=f16", "--hq=4", "--hk=2", "-d", "32", "--mask=t", "--bwd"]),
                # The builder's deterministic kernels (the fake module knows
                # their names; sm_90a's default deterministic backward is the
                # staged one).
                ("det", ["--chip=sm_90a", "--dtype=bf16", "--hq=4", "--hk=4", "-d", "64", "--bwd",
                         "--deterministic", "--mma=wgmma"])]
        for name, args in sigs:
            real = os.path.join(tmp, name + ".fmha")
            subprocess.run([compiler, "--target=cuda"] + args + ["-o", real], check=True)
            header, manifest = read_bundle(real)
            if "operand q in" not in manifest or " strided align 16" not in manifest:
                failures.append("%s: the manifest does not take q strided:\n%s" % (name, manifest))
            fake_path = os.path.join(tmp, name + "-fake.fmha")
            write_fake(real, fake_path)
            for layout in ("bshd", "bhsd"):
                argv = [runner, fake_path, "-b", "2", "--sq", "37", "--sk", "45", "--validate",
                        "--layout", layout]
                r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True)
                if r.returncode != 0 or "\nPASS" not in "\n" + r.stdout:
                    failures.append("%s: exit %d\n%s" % (" ".join(argv), r.returncode, r.stdout))
                else:
                    print("ok %s --layout %s" % (name, layout))
        # A contiguous bundle refuses BSHD strides, naming the operand.
        contig = os.path.join(tmp, "contig.fmha")
        subprocess.run([compiler, "--target=cuda", "--chip=sm_90a", "--dtype=bf16", "--hq=8",
                        "--hk=2", "-d", "64", "--strides=contiguous", "-o", contig], check=True)
        fake_contig = os.path.join(tmp, "contig-fake.fmha")
        write_fake(contig, fake_contig)
        r = subprocess.run([runner, fake_contig, "-b", "1", "--sq", "8", "--sk", "8", "--layout",
                            "bshd"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        want = ("operand q is not contiguous (stride 1 is 64, expected 512); this bundle's "
                "kernels take contiguous q; nothing was launched")
        if r.returncode != 2 or want not in r.stdout:
            failures.append("contiguous bundle with --layout bshd: exit %d\n%s"
                            % (r.returncode, r.stdout))
        else:
            print("ok contiguous bundle refuses strides")
    for f in failures:
        print("FAIL " + f)
    print("strided_fake_test: %s" % ("FAILED" if failures else "all passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
