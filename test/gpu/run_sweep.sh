#!/bin/sh
# The GPU conformance sweep (sweep.py) over pre-compiled bundles.
#   test/gpu/run_sweep.sh BIN_DIR BUNDLE_DIR [sweep.py options]
set -eu
if [ $# -lt 2 ]; then
  echo "usage: $0 BIN_DIR BUNDLE_DIR [sweep.py options]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=$1 bundles=$2
shift 2
exec python3 "$here/sweep.py" --bin "$bin" --bundles "$bundles" "$@"
