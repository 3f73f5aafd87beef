#!/usr/bin/env python3
"""Replays a pipeline stage by stage through its textual IR.

    replay_stages.py FMHA_OPT INPUT PIPELINE

Runs PIPELINE (a registered pipeline with options, as --PIPELINE takes it)
on INPUT in one fmha-opt, then, for every pass of the pipeline in turn (the
passes nested on gpu.module one by one), the passes before it in one fmha-opt
and the rest, from the IR the first printed, in a fresh one; each replay must
give the same output (the binaries included; the compile times the
binaries' properties record aside). Exit 1 naming the first stage
whose replay differs.
"""

import re
import subprocess
import sys


def run(cmd, stdin=None):
    out = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])}... failed:\n{out.stderr}")
    return out.stdout


def same(a, b):
    """Equal up to the compile times gpu-module-to-binary records."""
    strip = lambda t: re.sub(r"\w+TimeInMs = \d+ : i64, ", "", t)
    return strip(a) == strip(b)


def split(text):
    """The comma-separated entries of `text` at nesting depth 0."""
    entries, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            entries.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        entries.append(cur.strip())
    return entries


def main():
    opt, path, pipeline = sys.argv[1:4]
    source = open(path).read()
    # --dump-pass-pipeline writes the pipeline to stderr.
    out = subprocess.run([opt, path, f"--{pipeline}", "--dump-pass-pipeline",
                          "-o", "/dev/null"], capture_output=True, text=True)
    text = " ".join(out.stderr.split("\n", 1)[1].split())
    if not text.startswith("builtin.module(") or not text.endswith(")"):
        sys.exit(f"unexpected pipeline dump: {text[:200]}")
    passes = []
    for entry in split(text[len("builtin.module("):-1]):
        if entry.startswith("gpu.module("):
            passes += [f"gpu.module({p})"
                       for p in split(entry[len("gpu.module("):-1])]
        else:
            passes.append(entry)
    whole = run([opt, f"--{pipeline}"], source)
    for k in range(1, len(passes)):
        head = run([opt, f"--pass-pipeline=builtin.module({','.join(passes[:k])})"],
                   source)
        tail = run([opt, f"--pass-pipeline=builtin.module({','.join(passes[k:])})"],
                   head)
        if not same(tail, whole):
            sys.exit(f"replay from stage {k} (before {passes[k][:80]}) "
                     "differs from the whole pipeline")
    print(f"{len(passes)} passes, {len(passes) - 1} replays: same output")


if __name__ == "__main__":
    main()
