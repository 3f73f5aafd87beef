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
test -x "$work/prefix/bin/fmha-run"
test -f "$work/prefix/include/fmha/Runtime/fmha_runtime.h"
test -f "$work/prefix/lib/libfmha_runtime.so"
test -f "$work/prefix/lib/libFMHARuntime.a"
test -f "$work/prefix/lib/python3/site-packages/fmha/__init__.py"
cmake -G Ninja -S "$src/consumer" -B "$work/build" \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
ninja -C "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
# The ROCDL pipeline links the ROCm device libraries found under ROCM_PATH.
ROCM_PATH=${ROCM_PATH:-$build/rocm} "$work/build/fmha-consumer"

# The runtime side: a bundle from the installed fmha-compile, run by the
# installed fmha-run, a C program, a C++ program (BSHD strides) and the
# installed Python package (no torch: Kernel.forward_ptrs on host memory).
"$work/prefix/bin/fmha-compile" --target=cpu --dtype=f32 --hq=4 --hk=2 -d 16 -o "$work/attn.fmha"
"$work/prefix/bin/fmha-run" "$work/attn.fmha" -b 2 --sq 9 --sk 6 --layout bshd --validate
"$work/build/fmha-runtime-c" "$work/attn.fmha"
"$work/build/fmha-runtime-cpp" "$work/attn.fmha"
# (A sanitizer build's library needs the ASan runtime preloaded into the
# uninstrumented interpreter: FMHA_ASAN_PRELOAD, set by the test.)
python_env=(env -u FMHA_RUNTIME_LIB PYTHONPATH="$work/prefix/lib/python3/site-packages")
if [ -n "${FMHA_ASAN_PRELOAD:-}" ]; then
  python_env+=(LD_PRELOAD="$FMHA_ASAN_PRELOAD" ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1)
fi
"${python_env[@]}" python3 - "$work/attn.fmha" <<'PY'
import array, math, os, sys
import fmha
k = fmha.Kernel(sys.argv[1])
lib = fmha.load_library()._name
want = os.path.join(os.path.dirname(fmha.__file__), "libfmha_runtime.so")
assert lib == want, (lib, want)  # the installed package's own library
b, sq, sk, hq, hk, d = 1, 3, 4, k.hq, k.hk, k.d
q = array.array("f", [math.sin(i) for i in range(b * hq * sq * d)])
kk = array.array("f", [math.cos(i) for i in range(b * hk * sk * d)])
v = array.array("f", [math.sin(0.5 * i) for i in range(b * hk * sk * d)])
o = array.array("f", [float("nan")] * (b * hq * sq * d))
ptr = lambda a: a.buffer_info()[0]
k.forward_ptrs(b, sq, sk, ptr(q), ptr(kk), ptr(v), ptr(o), 0)
worst = 0.0
for h in range(hq):
    g = h // (hq // hk)
    for i in range(sq):
        s = [k.scale * sum(q[(h * sq + i) * d + c] * kk[(g * sk + j) * d + c] for c in range(d))
             for j in range(sk)]
        m = max(s)
        p = [math.exp(x - m) for x in s]
        for c in range(d):
            want = sum(p[j] * v[(g * sk + j) * d + c] for j in range(sk)) / sum(p)
            worst = max(worst, abs(o[(h * sq + i) * d + c] - want))
print("installed python: max |o - reference| = %.3g" % worst)
sys.exit(0 if worst <= 1e-5 else 1)
PY
