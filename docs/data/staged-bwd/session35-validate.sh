#!/bin/bash
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
nvidia-smi --query-gpu=name --format=csv,noheader
for k in r t; do for cfg in full causal gqa; do for d in 64 128; do
  echo "$k-$cfg-$d: $(.dev/bin/fmha-run .dev/bb/$k-$cfg-$d.fmha -b 2 --sq 300 --sk 300 --validate 2>&1 | tail -1)"
done; done; done
test/gpu/vector_tiles.sh .dev/vtd2 > $OUT/vt.log 2>&1; echo "vector_tiles rc=$?"; grep -v PASS $OUT/vt.log | head -20
for k in q r t; do echo "$k: $(.dev/bin/fmha-run .dev/bb/$k-full-128.fmha -b 1 --sq 16384 --sk 16384 --fwd .dev/bb/f-full-128.fmha --bench --iters 10 --warmup 2 2>&1 | grep -o 'median_ms=[0-9.]*')"; done
