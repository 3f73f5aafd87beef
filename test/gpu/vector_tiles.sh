#!/bin/bash
# The staged forward on the GPU (fmha-compile --from-tensors --vector-tiles:
# the static tiles as vectors in mma.sync's register layouts, a workgroup of
# block-m / 16 warps per q tile, the tiles distributed to the lanes by
# fmha-distribute-tiles) against the float64 reference. Here (with LLVM and
# a CUDA toolkit): vector_tiles.sh --make DIR writes the bundles into DIR/vt;
# on the GPU machine: vector_tiles.sh DIR validates them (DIR/bin/fmha-run,
# DIR/lib/libfmha_runtime.so). DIR/vtb holds the staged backward's bundles
# (--bwd --vector-tiles, deterministic and with --dq-atomics), validated and
# grad-checked the same way.
set -u
if [ "${1:-}" = "--make" ]; then
  dir=${2:?usage: vector_tiles.sh --make DIR [BIN]}; bin=${3:-build/bin}
  mkdir -p "$dir/vt"
  mk() { name=$1; shift; "$bin/fmha-compile" --target=cuda --from-tensors --vector-tiles "$@" -o "$dir/vt/$name.fmha" || echo "FAIL make $name"; }
  mk f16_d32_t35 --chip=sm_90a --dtype=f16 --mask=t:3,5 --hq=4 --hk=4 -d 32 --block-m 16 --block-n 16 &
  mk bf16_d64_sink_softcap --chip=sm_90a --dtype=bf16 --mask=b:40,0,4 --softcap=30 --hq=8 --hk=2 -d 64 --block-m 64 --block-n 64 &
  mk f16_d32_window_gqa4 --chip=sm_90a --dtype=f16 --mask=xb:128 --hq=4 --hk=1 -d 32 --block-m 32 --block-n 32 &
  mk bf16_d128_causal --chip=sm_90a --dtype=bf16 --mask=b --hq=16 --hk=4 -d 128 --block-m 64 --block-n 64 &
  wait
  # Q through workgroup memory (fmha-stage-q), 32 rows a warp; the sinks
  # and the window (two kv loops) read it too.
  mk bf16_d128_causal_qs --chip=sm_90a --dtype=bf16 --mask=b --hq=16 --hk=4 -d 128 --block-m 128 --block-n 64 --q-in-shared &
  mk f16_d64_sink_window_qs --chip=sm_90a --dtype=f16 --mask=b:100,0,4 --softcap=20 --hq=6 --hk=3 -d 64 --block-m 64 --block-n 32 --q-in-shared &
  wait
  # The staged backward (--bwd --vector-tiles: Dsum, dK/dV with the
  # transposed products, dQ; block-m = block-n): sm_90a's default
  # (warpgroup products, the A operands in workgroup memory; mma.sync at
  # D 32), and mma.sync with and without --q-in-shared.
  mkdir -p "$dir/vtb"
  mb() { name=$1; shift; "$bin/fmha-compile" --target=cuda --chip=sm_90a --bwd --vector-tiles "$@" -o "$dir/vtb/$name.fmha" || echo "FAIL make $name"; }
  mb bf16_d64_gqa4_t --dtype=bf16 --mask=t --hq=8 --hk=2 -d 64 &
  mb f16_d64_full --dtype=f16 --mask=0 --hq=4 --hk=4 -d 64 &
  wait
  mb bf16_d128_gqa4_b --dtype=bf16 --mask=b --hq=8 --hk=2 -d 128 &
  mb f16_d64_sink_window_softcap --dtype=f16 --mask=b:40,0,4 --softcap=30 --hq=4 --hk=2 -d 64 &
  wait
  mb bf16_d32_mqa_b --dtype=bf16 --mask=b --hq=4 --hk=1 -d 32 &
  mb f16_d80_gqa2_t --dtype=f16 --mask=t --hq=4 --hk=2 -d 80 &
  wait
  mb mma_bf16_d64_gqa4_t --dtype=bf16 --mask=t --hq=8 --hk=2 -d 64 --mma=mma.sync &
  mb mma_f16_d64_sink_window_softcap --dtype=f16 --mask=b:40,0,4 --softcap=30 --hq=4 --hk=2 -d 64 --mma=mma.sync &
  wait
  mb mmaqs_bf16_d128_gqa4_b --dtype=bf16 --mask=b --hq=8 --hk=2 -d 128 --mma=mma.sync --q-in-shared &
  mb mma_f16_d80_gqa2_t --dtype=f16 --mask=t --hq=4 --hk=2 -d 80 --mma=mma.sync &
  wait
  # dQ added atomically by the dK/dV kernel (--dq-atomics: an f32
  # workspace, then a kernel that rounds it into dq).
  mb dq_bf16_d64_gqa4_t --dtype=bf16 --mask=t --hq=8 --hk=2 -d 64 --dq-atomics &
  mb dq_f16_d64_full --dtype=f16 --mask=0 --hq=4 --hk=4 -d 64 --dq-atomics &
  wait
  mb dq_bf16_d128_gqa4_b --dtype=bf16 --mask=b --hq=8 --hk=2 -d 128 --dq-atomics &
  mb dq_f16_d64_sink_window_softcap --dtype=f16 --mask=b:40,0,4 --softcap=30 --hq=4 --hk=2 -d 64 --dq-atomics &
  wait
  mb dq_bf16_d32_mqa_b --dtype=bf16 --mask=b --hq=4 --hk=1 -d 32 --dq-atomics &
  mb dq_f16_d80_gqa2_t --dtype=f16 --mask=t --hq=4 --hk=2 -d 80 --dq-atomics &
  wait
  # 128-key dK/dV tiles: the two warpgroups split the dQ part's columns;
  # --bulk-add: the dQ part added by cp.reduce.async.bulk.
  mb dq_n128_bf16_d128_gqa4_b --dtype=bf16 --mask=b --hq=8 --hk=2 -d 128 --block-m 64 --block-n 128 --dq-atomics &
  mb dq_n128_f16_d128_full --dtype=f16 --mask=0 --hq=4 --hk=4 -d 128 --block-m 64 --block-n 128 --dq-atomics --bulk-add &
  wait
  mb dq_bulk_bf16_d64_gqa4_t --dtype=bf16 --mask=t --hq=8 --hk=2 -d 64 --dq-atomics --bulk-add &
  mb dq_bulk_f16_d64_sink_window_softcap --dtype=f16 --mask=b:40,0,4 --softcap=30 --hq=4 --hk=2 -d 64 --dq-atomics --bulk-add &
  wait
  mb dq_mma_bf16_d64_gqa4_t --dtype=bf16 --mask=t --hq=8 --hk=2 -d 64 --mma=mma.sync --dq-atomics &
  mb dq_mmaqs_bf16_d128_gqa4_b --dtype=bf16 --mask=b --hq=8 --hk=2 -d 128 --mma=mma.sync --q-in-shared --dq-atomics &
  wait
  # A head dim the builder's backward does not take: fmha-compile --bwd
  # builds the staged one by itself.
  "$bin/fmha-compile" --target=cuda --chip=sm_90a --bwd --dtype=bf16 --mask=b:40,0,4 --hq=8 --hk=2 -d 96 -o "$dir/vtb/default_bf16_d96_sink_window.fmha" || echo "FAIL make default_bf16_d96"
  exit 0
fi
here=$(cd "${1:?usage: vector_tiles.sh DIR | --make DIR [BIN]}" && pwd)
export LD_LIBRARY_PATH=$here/lib
fails=0
for b in "$here"/vt/*.fmha "$here"/vtb/*.fmha; do
  [ -f "$b" ] || continue
  for s in "2 77 130" "1 1 200" "1 200 333" "1 130 65" "3 64 64"; do
    set -- $s
    out=$("$here/bin/fmha-run" "$b" -b $1 --sq $2 --sk $3 --seed $2 --validate 2>&1 | tail -1)
    echo "$(basename "$b") b=$1 sq=$2 sk=$3: $out"
    case $out in PASS*) ;; *) fails=$((fails + 1)) ;; esac
  done
  case $b in */vtb/*)
    out=$("$here/bin/fmha-run" "$b" -b 1 --sq 40 --sk 70 --grad-check 2>&1 | tail -1)
    echo "$(basename "$b") grad-check 1 40 70: $out"
    case $out in "grad-check PASS"*) ;; *) fails=$((fails + 1)) ;; esac ;;
  esac
done
echo "vector tiles on the GPU: $fails failures"
[ $fails -eq 0 ]
