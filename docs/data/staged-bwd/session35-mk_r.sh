#!/bin/bash
# r bundles: staged atomic dQ with the register-order workspace (session 35)
set -u
bin=${1:-build/bin}; out=${2:-.dev/bb}; kind=${3:-r}
for cfg in full causal gqa; do
  for d in 64 128; do
    hq=$((2048 / d)); hk=$hq; mask=0
    [ $cfg = causal ] && mask=b
    [ $cfg = gqa ] && { mask=b; hk=$((hq / 4)); }
    $bin/fmha-compile --target=cuda --chip=sm_90a --dtype=bf16 --hq=$hq --hk=$hk -d $d --mask=$mask --bwd --vector-tiles --dq-atomics -o $out/$kind-$cfg-$d.fmha &
  done
  wait
done
