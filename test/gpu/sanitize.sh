#!/bin/bash
# compute-sanitizer memcheck, racecheck and synccheck on one bundle of each
# kernel kind (issue 21): the forward (builder's mma.sync and warpgroup
# kernels, the staged mma.sync and warpgroup kernels), the backward (the
# builder's atomic and deterministic, the staged mma.sync and warpgroup
# ones), the merge and the
# accumulate. Here (with LLVM and a CUDA toolkit):
# sanitize.sh --make DIR [BIN] writes the bundles into DIR/san; on the GPU
# machine: sanitize.sh DIR runs each under each tool (DIR/bin/fmha-run) with
# --validate, and fails unless every tool reports no error and every
# validation passes.
set -u
if [ "${1:-}" = "--make" ]; then
  dir=${2:?usage: sanitize.sh --make DIR [BIN]}; bin=${3:-build/bin}
  mkdir -p "$dir/san"
  mk() { name=$1; shift; "$bin/fmha-compile" --target=cuda --chip=sm_90a "$@" -o "$dir/san/$name.fmha" || echo "FAIL make $name"; }
  sig="--dtype=bf16 --hq=8 --hk=2 -d 64 --mask=b:40,0,4 --softcap=30"
  mk fwd-builder-mma $sig --mma=mma.sync &
  mk fwd-builder-wgmma $sig --mma=wgmma &
  wait
  mk fwd-staged-mma $sig --vector-tiles &
  mk fwd-staged-wgmma --dtype=bf16 --hq=8 --hk=2 -d 128 --mask=b --vector-tiles --mma=wgmma &
  wait
  mk bwd-builder-atomic $sig --bwd &
  mk bwd-builder-deterministic $sig --bwd --deterministic &
  wait
  mk bwd-staged-mma $sig --bwd --vector-tiles --mma=mma.sync &
  mk bwd-staged-wgmma $sig --bwd --vector-tiles &
  mk merge --dtype=bf16 --hq=8 --dv=64 --merge &
  mk acc --dtype=bf16 --accumulate &
  wait
  exit 0
fi
here=$(cd "${1:?usage: sanitize.sh DIR | --make DIR [BIN]}" && pwd)
export LD_LIBRARY_PATH=$here/lib
fails=0
for b in "$here"/san/*.fmha; do
  case $(basename "$b") in
    merge.fmha) args="-b 2 --sq 100" ;;
    acc.fmha) args="-n 1001" ;;
    *) args="-b 1 --sq 130 --sk 200" ;;
  esac
  for tool in memcheck racecheck synccheck; do
    out=$(compute-sanitizer --tool $tool --error-exitcode 3 "$here/bin/fmha-run" "$b" $args --validate 2>&1)
    rc=$?
    summary=$(echo "$out" | grep "SUMMARY" | tail -1)
    echo "$(basename "$b") $tool: rc $rc, $(echo "$out" | grep -E "^(PASS|FAIL)" | tail -1); $summary"
    case $summary in
      *"SUMMARY: 0 errors"* | *"SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"*) ;;
      *) fails=$((fails + 1)) ;;
    esac
    [ $rc -eq 0 ] || fails=$((fails + 1))
  done
done
echo "sanitizers: $fails failures"
[ $fails -eq 0 ]
