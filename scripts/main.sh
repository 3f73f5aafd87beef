#!/usr/bin/env bash
# The main job, from a fresh machine: install, build, then compile an example
# attention with fmha-opt (showing the tiled form with its mask-derived loop
# bounds), compile it into a host kernel and run it against the reference.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
bin=$build/bin
example=$root/examples/attention.mlir

echo "== The example: causal bottom-right window of 256 keys + 4 sink tokens, GQA 8:2"
cat "$example"
echo
echo "== fmha-opt --fmha-tile-attention --canonicalize (the flash-attention loop nest)"
"$bin/fmha-opt" "$example" --fmha-tile-attention="block-m=64 block-n=64" --canonicalize --cse
echo
echo "== fmha-opt --fmha-to-cpu-pipeline: lowered to the LLVM dialect ($(\
  "$bin/fmha-opt" "$example" --fmha-to-cpu-pipeline | grep -c 'llvm\.') llvm ops)"
echo
echo "== fmha-compile + fmha-run: the same problem compiled for the host and checked"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/fmha-compile" --target=cpu --dtype=f32 --hq=8 --hk=2 -d 64 --mask=b:256,0,4 -o "$tmp/attn.fmha"
"$bin/fmha-run" "$tmp/attn.fmha" -b 1 --sq 300 --sk 700 --show-mask
"$bin/fmha-run" "$tmp/attn.fmha" -b 2 --sq 300 --sk 700 --validate --bench --iters 5
echo
echo "== The backward kernel of the same problem: dq, dk, dv against the float64 reference"
"$bin/fmha-compile" --target=cpu --dtype=f32 --hq=8 --hk=2 -d 64 --mask=b:256,0,4 --bwd -o "$tmp/attn-bwd.fmha"
"$bin/fmha-run" "$tmp/attn-bwd.fmha" -b 1 --sq 300 --sk 700 --validate
