#!/usr/bin/env bash
# Installs every system package the build and the tests need (Debian 12).
# Safe to run more than once: it installs only what is missing.
set -euo pipefail

packages=(
  cmake ninja-build python3 libgtest-dev
  python3-venv python3-setuptools python3-wheel  # pip install ./python (test)
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  libclang-rt-22-dev  # ASan/UBSan runtimes and libFuzzer (sanitizer build)
  clang-format-22  # scripts/check-format.sh (test: format)
  libzstd-dev zlib1g-dev  # static archives for scripts/build-static-compiler.sh
  rocm-device-libs
  libamdhip64-5
  openmpi-bin libopenmpi-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
