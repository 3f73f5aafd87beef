#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then configures, builds and
# runs a separate project against the installed FMHA package.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/lib/cmake/fmha/FMHAConfig.cmake"
test -f "$work/prefix/include/fmha/InitAllFmha.h"
test -f "$work/prefix/include/fmha/Dialect/FmhaOps.h.inc"
test -x "$work/prefix/bin/fmha-opt"
cmake -G Ninja -S "$src/consumer" -B "$work/build" \
  -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
ninja -C "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# The ROCDL pipeline links the ROCm device libraries found under ROCM_PATH.
ROCM_PATH=${ROCM_PATH:-$build/rocm} "$work/build/fmha-consumer"
