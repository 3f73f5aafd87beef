#!/usr/bin/env python3
"""The GPU scripts (test/gpu) on a machine without a GPU: make_bundles.py
with a stand-in fmha-compile that writes bundles for the fake CUDA driver
(test/unit/FakeCuda.cpp), forward and backward, then sweep.py over a few of
them through fmha-run and the fake driver, and a byte-compile of bench.py
and python_test.py (which need torch).

Usage: gpu_scripts_test.py BIN_DIR FAKE_CUDA_LIB
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GPU = os.path.join(ROOT, "test", "gpu")
sys.path.insert(0, GPU)
import cases  # noqa: E402

# The signatures make_bundles.py compiles: forward (one of them, softcap,
# refused by the stand-in) and backward.
N_FWD = len(cases.all_signatures(("fwd",)))
N_ALL = len(cases.all_signatures())
N_BWD = N_ALL - N_FWD
N_BWD_KIND = len(cases.all_signatures(("bwd",)))  # --kinds bwd

# Writes a bundle whose binary is a fake-driver module (forward, or with
# --bwd [--deterministic] a gpu-bwd-v1 backward); rejects --softcap the way
# fmha-compile rejects what it does not support, and with FAKE_NO_BWD=1
# every --bwd the way a build without the backward lowering does.
FAKE_COMPILER = textwrap.dedent("""\
    #!%(python)s
    import math, os, sys
    opts = {}
    args = sys.argv[1:]
    out = args[args.index("-o") + 1]
    for a in args:
        if a.startswith("-") and "=" in a:
            k, v = a.lstrip("-").split("=", 1)
            opts[k] = v
    bwd = "--bwd" in args
    det = "1" if "--deterministic" in args else "0"
    if bwd and os.environ.get("FAKE_NO_BWD"):
        sys.stderr.write("fmha-compile: error: fmha.attention_bwd has no nvvm lowering in "
                         "this build\\n")
        sys.exit(2)
    if "softcap" in opts:
        sys.stderr.write("fmha-compile: error: no softcap in this stand-in\\n")
        sys.exit(2)
    d = int(opts["d"]); dv = int(opts.get("dv", d))
    scale = float(opts.get("scale", 0)) or 1 / math.sqrt(d)
    kernel = "fmha_bwd" if bwd else "fmha_fwd"
    kind = ("bwd\\ndeterministic=" + det) if bwd else "fwd"
    module = ("FAKE-CUDA-MODULE\\nkernel=%%s\\ndtype=%%s\\nhq=%%s\\nhk=%%s\\nd=%%d\\n"
              "dv=%%d\\nmask=%%s\\nscale=%%.9g\\nsoftcap=0\\nblock_m=64\\nblock_n=64\\n"
              "block_threads=128\\nshared_bytes=0\\nkind=%%s\\n"
              %% (kernel, opts["dtype"], opts["hq"], opts["hk"], d, dv, opts["mask"], scale, kind))
    header = ("FMHA-BUNDLE 1\\ntarget=cuda\\nchip=%%s\\nkind=%%s\\ndtype=%%s\\nhq=%%s\\n"
              "hk=%%s\\nd=%%d\\ndv=%%d\\nmask=%%s\\nscale=%%s\\nsoftcap=0\\nblock_m=64\\n"
              "block_n=64\\nblock_threads=128\\nshared_bytes=0\\nkernel=%%s\\n"
              "abi=%%s\\nbinary_format=ptx\\nbinary_size=%%d\\n\\n"
              %% (opts["chip"], kind, opts["dtype"], opts["hq"], opts["hk"], d, dv, opts["mask"],
                 opts.get("scale", "0"), kernel, "gpu-bwd-v1" if bwd else "gpu-flat-v1",
                 len(module)))
    open(out, "w").write(header + module)
    """)


def run(argv, env=None):
    full = dict(os.environ)
    full.update(env or {})
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=full)
    return r.returncode, r.stdout


def expect(cond, what, output=""):
    if not cond:
        print("FAILED: %s\n%s" % (what, output))
        sys.exit(1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bin_dir, fake_cuda = sys.argv[1], sys.argv[2]
    for script in ("bench.py", "python_test.py", "torch_test.py",
                   "transformers_test.py",  # syntax only: they need torch
                   "elementwise_bench.py"):  # or real kernels' timings
        path = os.path.join(GPU, script)
        with open(path) as f:
            compile(f.read(), path, "exec")
    # The torch and transformers tests' bundles, made here by the real
    # fmha-compile: every signature compiles, and each is where
    # fmha.bundle_name says the GPU machine will look.
    for script, count in (("torch_test.py", 9), ("transformers_test.py", 6)):
        with tempfile.TemporaryDirectory() as out:
            rc, text = run([sys.executable, os.path.join(GPU, script), "--make-bundles", out,
                            "--bin", bin_dir])
            made = sorted(f for f in os.listdir(out) if f.endswith(".fmha"))
            if rc != 0 or len(made) != count:
                sys.exit("%s --make-bundles: exit %d, %d bundles (expected %d):\n%s"
                         % (script, rc, len(made), count, text))
        rc, text = run([sys.executable, os.path.join(GPU, script)])
        if rc != 2 or "give --make-bundles DIR or --bundles DIR" not in text:
            sys.exit("%s without arguments: exit %d:\n%s" % (script, rc, text))
    with tempfile.TemporaryDirectory() as tmp:
        fake_bin = os.path.join(tmp, "bin")
        os.makedirs(fake_bin)
        compiler = os.path.join(fake_bin, "fmha-compile")
        with open(compiler, "w") as f:
            f.write(FAKE_COMPILER % {"python": sys.executable})
        os.chmod(compiler, 0o755)
        bundles = os.path.join(tmp, "bundles")

        make = [os.path.join(GPU, "make_bundles.sh"), fake_bin, bundles, "--jobs", "4"]
        # A build without the backward lowering: every bwd signature fails,
        # counted apart, with the compiler's message.
        rc, out = run(make, {"FAKE_NO_BWD": "1"})
        expect(rc == 1, "make_bundles exits 1 when backward bundles fail", out)
        expect("FAILED bwd-cuda-sm_90a-f16-hq4-hk4-d64-dv64-mask_0-det.fmha: " in out and
               "has no nvvm lowering in this build" in out, "the bwd failure is named", out)
        expect("make_bundles: %d compiled, %d failed (1 forward, %d backward)"
               % (N_FWD - 1, N_BWD + 1, N_BWD) in out,
               "the summary counts forward and backward failures apart", out)
        # The backward again once the lowering is there (--kinds bwd keeps
        # the forward entries).
        rc, out = run(make + ["--kinds", "bwd"])
        expect(rc == 1, "make_bundles exits 1 when a signature fails", out)
        expect("FAILED bwd-cuda-sm_90a-bf16-hq8-hk2-d128-dv128-mask_b-softcap30.fmha: "
               in out and "no softcap in this stand-in" in out, "the failure is named", out)
        expect("make_bundles: %d compiled, 1 failed (0 forward, 1 backward)" % (N_BWD_KIND - 1)
               in out,
               "the bwd summary", out)
        with open(os.path.join(bundles, "manifest.json")) as f:
            manifest = json.load(f)
        entries = manifest["bundles"]
        expect(manifest["chip"] == "sm_90a" and len(entries) == N_ALL, "every signature", out)
        expect(len({e["file"] for e in entries}) == N_ALL, "each once in the manifest", out)
        expect(sum(1 for e in entries if e["error"]) == 2, "two errors in the manifest", out)
        expect(sum(1 for e in entries if e["file"].startswith("bwd-")) == N_BWD,
               "every backward bundle", out)
        uses = {e["file"]: e["uses"] for e in entries}
        expect(uses["fwd-cuda-sm_90a-bf16-hq16-hk2-d128-dv128-mask_b_100_0_4.fmha"] ==
               ["sweep", "round-trip"], "uses", json.dumps(uses, indent=1))
        expect(uses["fwd-cuda-sm_90a-bf16-hq32-hk8-d64-dv64-mask_b.fmha"] == ["bench", "bwd-bench"],
               "uses", json.dumps(uses, indent=1))
        expect(uses["fwd-cuda-sm_90a-bf16-hq16-hk4-d128-dv128-mask_b.fmha"] ==
               ["bench", "bwd-bench"], "uses", json.dumps(uses, indent=1))
        expect(uses["bwd-cuda-sm_90a-bf16-hq16-hk2-d128-dv128-mask_b_100_0_4-det.fmha"] ==
               ["bwd-sweep", "bwd-round-trip"], "uses", json.dumps(uses, indent=1))
        expect(uses["bwd-cuda-sm_90a-bf16-hq32-hk8-d64-dv64-mask_b.fmha"] == ["bwd-bench"],
               "uses", json.dumps(uses, indent=1))

        env = {"FMHA_CUDA_LIBRARY": fake_cuda, "FMHA_FAKE_CUDA": "device"}
        sweep = [os.path.join(GPU, "run_sweep.sh"), bin_dir, bundles, "--jobs", "2"]
        # One sweep signature (8 sizes) and the round trip with the same prefix.
        rc, out = run(sweep + ["--filter", "f16-hq4-hk1-d64-dv64-mask_t"], env)
        expect(rc == 0, "the sweep passes over the fake driver", out)
        expect("sweep: 8 cases, 8 passed, 0 failed; 1 round trips; 0 signatures not runnable"
               in out and out.rstrip().endswith("sweep: all passed"), "the summary", out)
        # A signature with a stress case: its 8 sizes, then Sq=700 Sk=2100 on
        # fmha-run --inputs stress.
        rc, out = run(sweep + ["--filter", "fwd-cuda-sm_90a-f16-hq4-hk4-d64-dv64-mask_0.", "-v"],
                      env)
        expect(rc == 0 and "sweep: 9 cases, 9 passed, 0 failed" in out and
               "mask_0.fmha B=1 Sq=700 Sk=2100 stress" in out, "the stress case", out)
        # A signature that did not compile is a failure.
        rc, out = run(sweep + ["--filter", "fwd-cuda-sm_90a-bf16-hq8-hk2-d128-dv128-mask_b-soft"], env)
        expect(rc == 1, "a missing bundle fails the sweep", out)
        expect("mask_b-softcap30.fmha: did not compile: " in out and
               "1 signatures not runnable" in out, "the compile failure is reported", out)
        # A wrong kernel is caught: corrupt one bundle's module (its mask).
        victim = os.path.join(bundles, "fwd-cuda-sm_90a-f16-hq4-hk1-d64-dv64-mask_t_32_0.fmha")
        with open(victim) as f:
            text = f.read()
        at = text.index("FAKE-CUDA-MODULE")
        with open(victim, "w") as f:
            f.write(text[:at] + text[at:].replace("\nmask=t:32,0\n", "\nmask=t:31,0\n"))
        rc, out = run(sweep + ["--filter", "f16-hq4-hk1-d64-dv64-mask_t_32"], env)
        expect(rc == 1 and "FAIL fwd-cuda-sm_90a-f16-hq4-hk1-d64-dv64-mask_t_32_0.fmha B=1 "
               "Sq=64 Sk=64: exit 1: FAIL: " in out, "a wrong result fails the case", out)
        # The backward: one atomic signature (7 sizes) and its round trip,
        # one deterministic signature (each case run twice, bit for bit).
        bwd = "bwd-cuda-sm_90a-f16-hq8-hk2-d64-dv64-mask_t"
        rc, out = run(sweep + ["--filter", bwd + "."], env)
        expect(rc == 0, "the backward sweep passes over the fake driver", out)
        expect("sweep: 7 cases, 7 passed, 0 failed; 1 round trips; 0 signatures not runnable"
               in out, "the backward summary", out)
        rc, out = run(sweep + ["--filter", bwd + "-det", "-v"], env)
        expect(rc == 0 and "sweep: 7 cases, 7 passed" in out, "deterministic backward", out)
        rc, out = run(sweep + ["--filter", "bwd-cuda-sm_90a-bf16-hq8-hk2-d128-dv128-mask_b-soft"],
                      env)
        expect(rc == 1 and "1 signatures not runnable" in out and "did not compile: " in out,
               "a backward that did not compile fails the sweep", out)
        # A wrong dq is caught.
        victim = os.path.join(bundles, bwd + "-det.fmha")
        with open(victim) as f:
            text = f.read()
        with open(victim, "w") as f:
            # The module is the file's end: append, and grow binary_size.
            size = int(text.split("\nbinary_size=")[1].split("\n")[0])
            f.write(text.replace("\nbinary_size=%d\n" % size,
                                 "\nbinary_size=%d\n" % (size + 13)) + "flaw=perturb\n")
        rc, out = run(sweep + ["--filter", bwd + "-det"], env)
        expect(rc == 1 and "FAIL %s-det.fmha B=1 Sq=64 Sk=64: exit 1: FAIL: dq error" % bwd
               in out, "a wrong backward fails the case", out)
        # No driver: every case fails with the driver's message.
        rc, out = run(sweep + ["--filter", "f16-hq4-hk1-d64-dv64-mask_t."],
                      {"FMHA_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"})
        expect(rc == 1 and "CUDA driver not found" in out, "no driver", out)
        # ring_bench.py: a bad --masks is a usage error (exit 2) before it
        # looks for bundles, binaries, mpirun or NCCL.
        rc, out = run([sys.executable, os.path.join(GPU, "ring_bench.py"), "--masks",
                       "full,diagonal", "--bundles", "/nonexistent"])
        expect(rc == 2 and "error: --masks takes full and/or causal, not 'full,diagonal'"
               in out, "ring_bench rejects a bad --masks", out)
    print("gpu scripts: ok")


if __name__ == "__main__":
    main()
