#!/bin/sh
# Compiles the cuda bundles of the GPU sweep and benchmark (cases.py) with
# BIN_DIR/fmha-compile into OUT_DIR, with OUT_DIR/manifest.json as index.
# Run it where LLVM is; carry OUT_DIR to the GPU machine.
#   test/gpu/make_bundles.sh build/bin gpu-bundles
set -eu
if [ $# -lt 2 ]; then
  echo "usage: $0 BIN_DIR OUT_DIR [make_bundles.py options]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=$1 out=$2
shift 2
exec python3 "$here/make_bundles.py" --bin "$bin" --out "$out" "$@"
