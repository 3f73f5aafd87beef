#!/bin/bash
# r bundles: staged atomic dQ with the register-order workspace (session 35);
# kind t: the same with the bulk add (--bulk-add since session 36; before,
# the default of --dq-atomics on sm_90a)
set -u
bin=${1:-build/bin}; out=${2:-.dev/bb}; kind=${3:-r}
extra=""; [ "$kind" = t ] && extra="--bulk-add"
for cfg in full causal gqa; do
  for d in 64 128; do
    hq=$((2048 / d)); hk=$hq; mask=0
    [ $cfg = causal ] && mask=b
    [ $cfg = gqa ] && { mask=b; hk=$((hq / 4)); }
    $bin/fmha-compile --target=cuda --chip=sm_90a --dtype=bf16 --hq=$hq --hk=$hk -d $d --mask=$mask --bwd --vector-tiles --dq-atomics $extra -o $out/$kind-$cfg-$d.fmha &
  done
  wait
done
