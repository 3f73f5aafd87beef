#!/usr/bin/env bash
# Configures and builds FMHA into ${BUILD_DIR:-build} with LLVM/MLIR 22.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR="$(llvm-config-22 --prefix)/lib/cmake/mlir" \
    ${CMAKE_ARGS:-}
fi
ninja -C "$build" -j "$jobs"
