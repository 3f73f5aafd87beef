#!/usr/bin/env bash
# Sets up (if needed), builds, and runs every test: unit tests (GoogleTest),
# the lit suite (IR, diagnostics, tools) and the CPU conformance sweep.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure -j "${JOBS:-$(nproc)}"
