#!/usr/bin/env bash
# The bundles a refactor is proven byte-identical on: forward (mma.sync,
# wgmma, MFMA, WMMA, CPU; masks, GQA, softcap, f16/bf16/f32), backward
# (atomic, deterministic), merge, accumulate, the staged forward
# (--vector-tiles), for cuda, hip and cpu.
#   scripts/bundle-set.sh BIN_DIR OUT_DIR     # writes OUT_DIR/<name>.fmha
#   cmp -s A/x.fmha B/x.fmha for each name (or: diff -r A B)
set -euo pipefail
bin=${1:?usage: bundle-set.sh BIN_DIR OUT_DIR}; out=${2:?usage: bundle-set.sh BIN_DIR OUT_DIR}
mkdir -p "$out"
fails=0
mk() {
  local name=$1; shift
  if ! "$bin/fmha-compile" "$@" -o "$out/$name.fmha" >"$out/$name.log" 2>&1; then
    echo "bundle-set: $name failed: $(tail -1 "$out/$name.log")"; fails=$((fails + 1))
  fi
  rm -f "$out/$name.log"
}
common="--hq 8 --hk 2"
for chip in sm_90a sm_80; do
  mk fwd-$chip-bf16-d128-b --target=cuda --chip=$chip --dtype=bf16 $common -d 128 --mask=b
  mk fwd-$chip-f16-d64-win --target=cuda --chip=$chip --dtype=f16 $common -d 64 --mask=b:40,0,4 --softcap=30
  mk bwd-$chip-bf16-d64-t --target=cuda --chip=$chip --dtype=bf16 $common -d 64 --mask=t --bwd
  mk bwdd-$chip-f16-d128-b --target=cuda --chip=$chip --dtype=f16 $common -d 128 --mask=b --bwd --deterministic
done
mk fwd-sm_90a-mmasync-d64 --target=cuda --chip=sm_90a --dtype=bf16 $common -d 64 --mask=0 --mma=mma.sync
mk fwd-sm_90a-idx64 --target=cuda --chip=sm_90a --dtype=bf16 $common -d 64 --mask=t --index-bits=64
mk merge-cuda --target=cuda --chip=sm_90a --dtype=bf16 --hq 8 --dv 64 --merge
mk acc-cuda --target=cuda --chip=sm_90a --dtype=bf16 --accumulate
for chip in gfx942 gfx90a gfx1100 gfx1200; do
  mk fwd-$chip-bf16-d64-b --target=hip --chip=$chip --dtype=bf16 $common -d 64 --mask=b
  mk bwd-$chip-f16-d64-t --target=hip --chip=$chip --dtype=f16 $common -d 64 --mask=t --bwd
done
mk merge-hip --target=hip --chip=gfx942 --dtype=f16 --hq 8 --dv 64 --merge
mk fwd-cpu-f32-d32 --target=cpu --dtype=f32 --hq 4 --hk 2 -d 32 --mask=b:40,0,2
mk fwd-cpu-bf16-d64-sc --target=cpu --dtype=bf16 --hq 4 --hk 4 -d 64 --mask=b:16,8 --softcap=30
mk fwd-cpu-tensors --target=cpu --dtype=f16 --hq 4 --hk 2 -d 64 --mask=t --from-tensors
mk fwd-cpu-vt --target=cpu --dtype=f32 --hq 4 --hk 2 -d 32 --mask=b:40,0,2 --from-tensors --vector-tiles --block-m 16 --block-n 16
mk bwd-cpu-f32 --target=cpu --dtype=f32 --hq 4 --hk 2 -d 32 --mask=b --bwd
mk bwdd-cpu-f32 --target=cpu --dtype=f32 --hq 4 --hk 2 -d 32 --mask=b --bwd --deterministic
mk merge-cpu --target=cpu --dtype=f32 --hq 4 --dv 32 --merge
mk acc-cpu --target=cpu --dtype=f32 --accumulate
mk fwd-sm_90a-vt --target=cuda --chip=sm_90a --dtype=bf16 --hq 8 --hk 2 -d 64 --mask=b:40,0,4 --from-tensors --vector-tiles --block-m 64 --block-n 64
echo "bundle-set: $(ls "$out"/*.fmha | wc -l) bundles in $out, $fails failed"
[ "$fails" -eq 0 ]
