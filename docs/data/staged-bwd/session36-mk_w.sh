#!/bin/bash
# w bundles: staged atomic dQ (register order, --bulk-add) with
# 128-key dK/dV tiles whose two warpgroups split the dQ part's columns
# (session 36; D 128: the split needs 64-column blocks of K)
set -u
bin=${1:-build/bin}; out=${2:-.dev/bb}; kind=${3:-w}
for cfg in full causal gqa; do
  d=128; hq=$((2048 / d)); hk=$hq; mask=0
  [ $cfg = causal ] && mask=b
  [ $cfg = gqa ] && { mask=b; hk=$((hq / 4)); }
  $bin/fmha-compile --target=cuda --chip=sm_90a --dtype=bf16 --hq=$hq --hk=$hk -d $d --mask=$mask --bwd --vector-tiles --dq-atomics --block-m 64 --block-n 128 --bulk-add -o $out/$kind-$cfg-$d.fmha &
done
wait
