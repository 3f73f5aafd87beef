#!/usr/bin/env bash
# Builds fmha-compile-static, the compiler for a machine with glibc and a GPU
# driver only (the GPU machine has no LLVM), strips it and compresses it:
#   ${BUILD_DIR:-build}/bin/fmha-compile-static     (stripped)
#   ${BUILD_DIR:-build}/bin/fmha-compile-static.xz  (what travels)
# On the GPU machine: xz -d fmha-compile-static.xz, then put it on PATH as
# fmha-compile or point FMHA_COMPILE at it (the Python package finds it); it
# writes cubins where a CUDA toolkit's ptxas is, PTX for the driver to finish
# elsewhere. Fails when the binary needs a shared library beyond glibc's or
# the compressed file is over 64 MiB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
if [ ! -f "$build/build.ninja" ]; then
  CMAKE_ARGS="${CMAKE_ARGS:-} -DFMHA_STATIC_COMPILER=ON" BUILD_DIR="$build" \
    JOBS="$jobs" bash "$root/scripts/build.sh"
else
  cmake -S "$root" -B "$build" -DFMHA_STATIC_COMPILER=ON > /dev/null
fi
ninja -C "$build" -j "$jobs" fmha-compile-static
bin=$build/bin/fmha-compile-static
strip "$bin"
# glibc's libraries and the loader only.
extra=$(ldd "$bin" | awk '{print $1}' | grep -v -E \
  '^(linux-vdso\.so|/lib64/ld-linux-x86-64\.so|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so)' || true)
if [ -n "$extra" ]; then
  echo "build-static-compiler: $bin needs shared libraries beyond glibc's:" >&2
  echo "$extra" >&2
  exit 1
fi
xz -T"$jobs" -9 -f -k "$bin"
size=$(stat -c %s "$bin.xz")
limit=$((64 * 1024 * 1024))
if [ "$size" -gt "$limit" ]; then
  echo "build-static-compiler: $bin.xz is $size bytes, over 64 MiB" >&2
  exit 1
fi
echo "fmha-compile-static: $(stat -c %s "$bin") bytes stripped, $size bytes as $bin.xz"
