#!/bin/bash
set -u
bin=$1; out=${2:-.dev/bb}
for cfg in full causal gqa; do
  for d in 64 128; do
    hq=$((2048 / d)); hk=$hq; mask=0
    [ $cfg = causal ] && mask=b
    [ $cfg = gqa ] && { mask=b; hk=$((hq / 4)); }
    $bin/fmha-compile --target=cuda --chip=sm_90a --dtype=bf16 --hq=$hq --hk=$hk -d $d --mask=$mask --bwd --vector-tiles --dq-atomics -o $out/q-$cfg-$d.fmha &
  done
  wait
done
