#!/bin/bash
# One device call for what session 36 could not run (carry .dev): the bulk
# add (t, --bulk-add) and the 128-key dK/dV tiles (w) validated, the dq_
# vector_tiles bundles validated and grad-checked, then S 16k medians of
# a (builder atomic), r (register-order atomics, --dq-atomics), t and w.
# Here first:
#   bash docs/data/staged-bwd/session34-mk_bench.sh build/bin .dev/bb   (a, f)
#   bash docs/data/staged-bwd/session35-mk_r.sh build/bin .dev/bb r
#   bash docs/data/staged-bwd/session35-mk_r.sh build/bin .dev/bb t
#   bash docs/data/staged-bwd/session36-mk_w.sh build/bin .dev/bb w
#   test/gpu/vector_tiles.sh --make .dev/vtd build/bin  (keep vtb/dq_*)
#   cp build/bin/fmha-run .dev/bin/ .dev/vtd/bin/; cp build/lib/libfmha_runtime.so .dev/lib/ .dev/vtd/lib/
set -u
rounds=${1:-2}
export LD_LIBRARY_PATH=$PWD/.dev/lib
nvidia-smi --query-gpu=name --format=csv,noheader
for k in t w; do for cfg in full causal gqa; do for d in 64 128; do
  [ -f .dev/bb/$k-$cfg-$d.fmha ] || continue
  echo "$k-$cfg-$d: $(.dev/bin/fmha-run .dev/bb/$k-$cfg-$d.fmha -b 2 --sq 300 --sk 300 --validate 2>&1 | tail -1)"
done; done; done
test/gpu/vector_tiles.sh .dev/vtd > $OUT/vt.log 2>&1; echo "vector_tiles rc=$?"
grep -v PASS $OUT/vt.log | head -20; grep -c PASS $OUT/vt.log
for r in $(seq 1 $rounds); do
  for d in 128 64; do for cfg in full causal gqa; do
    for k in a r t w; do
      [ -f .dev/bb/$k-$cfg-$d.fmha ] || continue
      ms=$(.dev/bin/fmha-run .dev/bb/$k-$cfg-$d.fmha -b 1 --sq 16384 --sk 16384 --fwd .dev/bb/f-$cfg-$d.fmha --bench --iters 10 --warmup 2 2>&1 | grep -o "median_ms=[0-9.]*" | cut -d= -f2)
      echo "$r,$cfg,$d,16384,$k,${ms:-nan}" | tee -a $OUT/bench.csv
    done
  done; done
done
