#!/bin/bash
# usage: bench.sh ROUNDS KINDS [CFGS]  -> CSV round,cfg,d,S,kind,ms on stdout
set -u
rounds=$1; kinds=$2; cfgs=${3:-"full causal gqa"}; dir=.dev/bb
export LD_LIBRARY_PATH=$PWD/.dev/lib
for r in $(seq 1 $rounds); do
  for cfg in $cfgs; do for d in 64 128; do for S in 1024 4096 16384; do
    B=$((16384 / S))
    for k in $kinds; do
      ms=$(.dev/bin/fmha-run $dir/$k-$cfg-$d.fmha -b $B --sq $S --sk $S --fwd $dir/f-$cfg-$d.fmha --bench --iters 10 --warmup 2 2>&1 | grep -o "median_ms=[0-9.]*" | cut -d= -f2)
      echo "$r,$cfg,$d,$S,$k,${ms:-nan}"
    done
  done; done; done
done
