#!/usr/bin/env bash
# pip install of python/ into a fresh virtual environment, offline: the build
# compiles libfmha_runtime.so with CMake (the runtime alone, no LLVM) and
# puts it inside the package; the installed package, imported from another
# folder with no FMHA_RUNTIME_LIB, loads that library and runs a cpu bundle
# against a float64 attention computed here.
#   pip_install_test.sh PYTHON SOURCE_DIR FMHA_COMPILE
set -euo pipefail
py=$1 src=$2 compiler=$3
# The interpreter needs venv, setuptools and wheel (Debian: python3-venv,
# python3-setuptools, python3-wheel; scripts/setup.sh installs them); a
# pyenv or other interpreter without them gives way to the system's.
has() { "$1" -c "import ensurepip, setuptools, wheel" 2>/dev/null; }
if ! has "$py"; then
  if has /usr/bin/python3; then
    py=/usr/bin/python3
  else
    echo "pip_install_test: $py has no venv, setuptools or wheel" >&2
    exit 1
  fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m venv --system-site-packages "$tmp/venv"
# A FMHA_RUNTIME_LIB that is not a file: the install stops, naming it.
cp -r "$src/python" "$tmp/bad"
if (cd "$tmp" && FMHA_RUNTIME_LIB=/nonexistent/libfmha_runtime.so \
    "$tmp/venv/bin/python" -m pip install --no-build-isolation --no-deps --no-index \
    "$tmp/bad" > "$tmp/bad.log" 2>&1); then
  echo "pip_install_test: an install with a missing FMHA_RUNTIME_LIB succeeded" >&2
  exit 1
fi
grep -q "FMHA_RUNTIME_LIB=/nonexistent/libfmha_runtime.so is not a file" "$tmp/bad.log" ||
  { cat "$tmp/bad.log" >&2; exit 1; }
# A copy: the in-tree build leaves nothing in the source tree.
cp -r "$src/python" "$tmp/pkg"
rm -rf "$tmp/pkg/build" "$tmp/pkg"/*.egg-info
(cd "$tmp" && env -u FMHA_RUNTIME_LIB FMHA_SOURCE_DIR="$src" \
  "$tmp/venv/bin/python" -m pip install --quiet --no-build-isolation --no-deps \
  --no-index "$tmp/pkg")
"$compiler" --target=cpu --dtype=f32 --hq=2 --hk=1 -d 8 --mask=t -o "$tmp/a.fmha"
cd "$tmp"
env -u FMHA_RUNTIME_LIB -u PYTHONPATH "$tmp/venv/bin/python" - "$tmp/a.fmha" "$tmp/venv" <<'PY'
import ctypes, math, os, random, sys
import fmha
bundle, venv = sys.argv[1], sys.argv[2]
lib = fmha.load_library()
assert os.path.realpath(lib._name).startswith(os.path.realpath(venv)), lib._name
assert os.path.dirname(os.path.realpath(lib._name)) == os.path.dirname(os.path.realpath(fmha.__file__))
assert fmha.runtime_version() == "0.1.0", fmha.runtime_version()
k = fmha.Kernel(bundle)
b, hq, hk, s, d = 1, 2, 1, 5, 8
rnd = random.Random(1)
q = [rnd.uniform(-1, 1) for _ in range(b * hq * s * d)]
kk = [rnd.uniform(-1, 1) for _ in range(b * hk * s * d)]
v = [rnd.uniform(-1, 1) for _ in range(b * hk * s * d)]
arr = lambda xs: (ctypes.c_float * len(xs))(*xs)
qa, ka, va = arr(q), arr(kk), arr(v)
o = (ctypes.c_float * (b * hq * s * d))()
lse = (ctypes.c_float * (b * hq * s))()
addr = lambda a: ctypes.addressof(a)
k.forward_ptrs(b, s, s, addr(qa), addr(ka), addr(va), addr(o), addr(lse))
worst = 0.0
for h in range(hq):
    for i in range(s):
        sc = [sum(q[(h * s + i) * d + c] * kk[j * d + c] for c in range(d)) / math.sqrt(d)
              for j in range(i + 1)]
        m = max(sc)
        w = [math.exp(x - m) for x in sc]
        for c in range(d):
            ref = sum(w[j] * v[j * d + c] for j in range(i + 1)) / sum(w)
            worst = max(worst, abs(o[(h * s + i) * d + c] - ref))
assert worst < 1e-5, worst
print("pip-installed fmha: %s, max err %.2g" % (lib._name, worst))
PY
