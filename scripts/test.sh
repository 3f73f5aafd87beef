#!/usr/bin/env bash
# Sets up (if needed), builds, and runs every test: unit tests (GoogleTest),
# the lit suite (IR, diagnostics, tools), the CPU conformance sweep and the
# random conformance run; then the same suite in the sanitizer build (ASan +
# UBSan) and a brief run of every fuzz target (scripts/test-sanitizers.sh).
# FMHA_SKIP_SANITIZERS=1 stops after the first suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure -j "${JOBS:-$(nproc)}"
if [ "${FMHA_SKIP_SANITIZERS:-0}" != 1 ]; then
  "$root/scripts/test-sanitizers.sh"
fi
