"""What the GPU-machine test scripts share: pass/fail lines, and the
--make-bundles (here) / --bundles (there) command line."""

import argparse
import os
import sys


class Checks:
    """Prints `ok` / `FAIL` lines and remembers the failures."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, what):
        print("%s  %s" % ("ok  " if ok else "FAIL", what))
        if not ok:
            self.failures.append(what)

    def summary(self):
        print("%d failure(s)" % len(self.failures))
        return 1 if self.failures else 0


def main(doc, make_bundles, run):
    """`--make-bundles DIR [--bin BIN]` calls make_bundles(DIR, BIN) (where
    LLVM is); `--bundles DIR` calls run(DIR) (on the GPU machine)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--make-bundles", metavar="DIR")
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--bundles", metavar="DIR")
    args = ap.parse_args()
    if args.make_bundles:
        make_bundles(args.make_bundles, args.bin)
        return 0
    if not args.bundles:
        ap.error("give --make-bundles DIR or --bundles DIR")
    return run(os.path.abspath(args.bundles))


if __name__ == "__main__":
    sys.exit("checks.py is a module of the GPU test scripts")
