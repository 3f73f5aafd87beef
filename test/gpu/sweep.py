#!/usr/bin/env python3
"""GPU conformance sweep: fmha-run --validate on every (signature, size) of
cases.py, forward and backward, plus --save/--load round trips, on
pre-compiled cuda bundles.

    test/gpu/sweep.py --bin BUILD/bin --bundles gpu-bundles [--jobs 16]

The bundles come from make_bundles.py (manifest.json). Every failure is
printed with its command and fmha-run's verdict; the last line is the
summary. Exit status 1 when anything failed (a case, a round trip, a
signature that did not compile or is missing), 0 otherwise. Needs python3
and fmha-run only (no torch). Backward bundles (bwd-*.fmha) validate dq, dk,
dv against the float64 reference; deterministic ones (*-det.fmha) also run
twice and must agree bit for bit (fmha-run does both). `--filter bwd-` runs
the backward only, `--filter fwd-` the forward only.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import cases
import fmha


def load_manifest(folder):
    path = os.path.join(folder, "manifest.json")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except OSError as e:
        sys.exit("sweep: cannot read %s (%s); run test/gpu/make_bundles.sh first" % (path, e))
    return {e["file"]: e for e in manifest["bundles"]}


def verdict(output):
    """fmha-run's last meaningful line: PASS/FAIL or the error."""
    lines = [l for l in output.splitlines() if l.strip()]
    for l in reversed(lines):
        if l.startswith(("PASS", "FAIL", "fmha-run: error")):
            return l
    return lines[-1] if lines else "(no output)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="folder with fmha-run")
    ap.add_argument("--bundles", required=True, help="folder from make_bundles")
    ap.add_argument("--jobs", type=int, default=min(16, os.cpu_count() or 4))
    ap.add_argument("--filter", default="", help="only bundles whose name contains this")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per fmha-run")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case")
    ap.add_argument("--layout", default="bhsd", choices=("bhsd", "bshd"),
                    help="memory order of the tensors (fmha-run --layout; bshd "
                         "passes BSHD memory as strides)")
    args = ap.parse_args()

    runner = os.path.join(args.bin, "fmha-run")
    if not os.access(runner, os.X_OK):
        sys.exit("sweep: no executable %s" % runner)
    manifest = load_manifest(args.bundles)

    failures = []
    jobs = []  # (label, [argv...]) for fmha-run --validate
    problems = {}  # signature name -> problem with its bundle, if any
    trip_cases = cases.ROUND_TRIP + cases.BWD_ROUND_TRIP
    for sig in (cases.sweep_signatures() + cases.bwd_sweep_signatures() +
                [s for s, _ in trip_cases]):
        name = fmha.bundle_name(**sig)
        entry = manifest.get(name)
        if entry is None:
            problems[name] = "missing from manifest.json (run make_bundles)"
        elif entry.get("error"):
            problems[name] = "did not compile: " + entry["error"]
        elif not os.path.exists(os.path.join(args.bundles, name)):
            problems[name] = "file missing"
    for name, why in sorted(problems.items()):
        if args.filter in name:
            failures.append("%s: %s" % (name, why))
            print("FAIL %s: %s" % (name, why), flush=True)

    for n, (sig, (b, sq, sk)) in enumerate(cases.sweep_cases() + cases.bwd_sweep_cases()):
        name = fmha.bundle_name(**sig)
        if name in problems or args.filter not in name:
            continue
        path = os.path.join(args.bundles, name)
        jobs.append(("%s B=%d Sq=%d Sk=%d" % (name, b, sq, sk),
                     [runner, path, "-b", str(b), "--sq", str(sq), "--sk", str(sk),
                      "--seed", str(n), "--validate", "--layout", args.layout]))
    for sig, (b, sq, sk) in cases.stress_cases():
        name = fmha.bundle_name(**sig)
        if name in problems or args.filter not in name:
            continue
        jobs.append(("%s B=%d Sq=%d Sk=%d stress" % (name, b, sq, sk),
                     [runner, os.path.join(args.bundles, name), "-b", str(b),
                      "--sq", str(sq), "--sk", str(sk), "--inputs", "stress",
                      "--validate", "--layout", args.layout]))

    def run(job):
        label, argv = job
        t0 = time.time()
        try:
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=args.timeout)
            out, rc = r.stdout, r.returncode
        except subprocess.TimeoutExpired:
            out, rc = "timed out after %.0f s" % args.timeout, -1
        return label, argv, rc, out, time.time() - t0

    t_start = time.time()
    passed = 0
    print("sweep: %d cases on %d jobs" % (len(jobs), args.jobs), flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for label, argv, rc, out, secs in pool.map(run, jobs):
            ok = rc == 0 and "\nPASS" in "\n" + out
            if ok:
                passed += 1
                if args.verbose:
                    print("PASS %s (%.1f s): %s" % (label, secs, verdict(out)))
            else:
                msg = "%s: exit %d: %s\n    %s" % (label, rc, verdict(out), " ".join(argv))
                failures.append(msg)
                print("FAIL " + msg, flush=True)

    # --save then --load: the reloaded inputs give the same outputs, bit for bit.
    trips = 0
    tmp = tempfile.mkdtemp(prefix="fmha-sweep-")
    try:
        for i, (sig, (b, sq, sk)) in enumerate(trip_cases):
            name = fmha.bundle_name(**sig)
            if name in problems or args.filter not in name:
                continue
            trips += 1
            path = os.path.join(args.bundles, name)
            d1, d2 = os.path.join(tmp, "%d-a" % i), os.path.join(tmp, "%d-b" % i)
            steps = [[runner, path, "-b", str(b), "--sq", str(sq), "--sk", str(sk),
                      "--seed", "77", "--validate", "--save", d1],
                     [runner, path, "--load", d1, "--validate", "--save", d2]]
            label = "round trip %s B=%d Sq=%d Sk=%d" % (name, b, sq, sk)
            bad = None
            for argv in steps:
                _, _, rc, out, _ = run((label, argv))
                if rc != 0 or "\nPASS" not in "\n" + out:
                    bad = "exit %d: %s\n    %s" % (rc, verdict(out), " ".join(argv))
                    break
            # The saved inputs, and the outputs a second run must repeat
            # (an atomic backward's dq may differ in its last bits).
            files = ["q.npy", "k.npy", "v.npy", "o.npy", "lse.npy"]
            if sig.get("kind") == "bwd":
                files += ["do.npy", "dk.npy", "dv.npy"]
                if sig.get("deterministic"):
                    files.append("dq.npy")
            if bad is None:
                for f in files:
                    with open(os.path.join(d1, f), "rb") as x, open(os.path.join(d2, f), "rb") as y:
                        if x.read() != y.read():
                            bad = "%s differs between the saved run and the reloaded run" % f
                            break
            if bad:
                failures.append("%s: %s" % (label, bad))
                print("FAIL %s: %s" % (label, bad), flush=True)
            elif args.verbose:
                print("PASS " + label)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    failed_cases = len(jobs) - passed
    print("sweep: %d cases, %d passed, %d failed; %d round trips; %d signatures not "
          "runnable; %.0f s" % (len(jobs), passed, failed_cases, trips,
                                len([p for p in problems if args.filter in p]),
                                time.time() - t_start))
    if failures:
        print("sweep: FAILED (%d)" % len(failures))
        return 1
    print("sweep: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
