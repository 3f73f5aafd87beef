#!/bin/bash
# bench bundles: kinds a (builder atomic), s (staged det), q (staged atomic dQ), f (forward)
set -u
bin=${1:-build/bin}; out=${2:-.dev/bb}
mkdir -p $out
for cfg in full causal gqa; do
  for d in 64 128; do
    hq=$((2048 / d)); hk=$hq; mask=0
    [ $cfg = causal ] && mask=b
    [ $cfg = gqa ] && { mask=b; hk=$((hq / 4)); }
    common="--target=cuda --chip=sm_90a --dtype=bf16 --hq=$hq --hk=$hk -d $d --mask=$mask"
    $bin/fmha-compile $common -o $out/f-$cfg-$d.fmha &
    $bin/fmha-compile $common --bwd -o $out/a-$cfg-$d.fmha &
    wait
    $bin/fmha-compile $common --bwd --vector-tiles -o $out/s-$cfg-$d.fmha &
    $bin/fmha-compile $common --bwd --vector-tiles --dq-atomics -o $out/q-$cfg-$d.fmha &
    wait
  done
done
ls $out | wc -l
