#!/bin/sh
# The --mma=wgmma forward (sm_90a) against the float64 reference and against
# the default mma.sync kernel.
#
#   test/gpu/wgmma_check.sh --make FMHA_COMPILE BUNDLE_DIR   (development machine)
#   test/gpu/wgmma_check.sh BIN_DIR BUNDLE_DIR               (GPU machine)
#
# --make compiles the bundles below with the given fmha-compile. The run mode
# calls BIN_DIR/fmha-run: --validate on three sizes per wgmma bundle (one
# PASS/FAIL line each), then --bench --iters 20 at Sq = Sk = 16384, B = 1,
# default and wgmma bundle of each D 64/128 x full/causal (TFLOP/s and the
# wgmma / default ratio per line). Exit 1 on any FAIL.
set -eu
usage() {
  echo "usage: $0 --make FMHA_COMPILE BUNDLE_DIR | $0 BIN_DIR BUNDLE_DIR" >&2
  exit 2
}

# name and fmha-compile options (--target=cuda --chip=sm_90a added).
validated="\
wg-bf16-d128-none --mma=wgmma --dtype=bf16 --hq=16 --hk=16 -d 128
wg-bf16-d64-none --mma=wgmma --dtype=bf16 --hq=16 --hk=16 -d 64
wg-f16-d64-causal --mma=wgmma --dtype=f16 --hq=8 --hk=8 -d 64 --mask=b
wg-bf16-d128-causal --mma=wgmma --dtype=bf16 --hq=16 --hk=16 -d 128 --mask=b
wg-f16-d128-gqa-winsink --mma=wgmma --dtype=f16 --hq=8 --hk=2 -d 128 --mask=b:256,0,4
wg-bf16-d64-mqa-softcap --mma=wgmma --dtype=bf16 --hq=4 --hk=1 -d 64 --mask=t:100,20 --softcap=30
wg-f16-d64-xb-gqa --mma=wgmma --dtype=f16 --hq=4 --hk=2 -d 64 --mask=xb:300
wg-bf16-d64-bm64 --mma=wgmma --dtype=bf16 --hq=4 --hk=4 -d 64 --block-m=64
wg-bf16-d64-bm256 --mma=wgmma --dtype=bf16 --hq=4 --hk=4 -d 64 --block-m=256"
# Benchmark pairs: default (mma.sync) and wgmma, bf16, Hq = Hk = 16.
benched="\
def-d64-none --mma=mma.sync --dtype=bf16 --hq=16 --hk=16 -d 64
def-d64-causal --mma=mma.sync --dtype=bf16 --hq=16 --hk=16 -d 64 --mask=b
def-d128-none --mma=mma.sync --dtype=bf16 --hq=16 --hk=16 -d 128
def-d128-causal --mma=mma.sync --dtype=bf16 --hq=16 --hk=16 -d 128 --mask=b
wg-d64-none --mma=wgmma --dtype=bf16 --hq=16 --hk=16 -d 64
wg-d64-causal --mma=wgmma --dtype=bf16 --hq=16 --hk=16 -d 64 --mask=b
wg-d128-none --mma=wgmma --dtype=bf16 --hq=16 --hk=16 -d 128
wg-d128-causal --mma=wgmma --dtype=bf16 --hq=16 --hk=16 -d 128 --mask=b"

if [ "${1:-}" = --make ]; then
  [ $# -eq 3 ] || usage
  compile=$2 out=$3
  mkdir -p "$out"
  printf '%s\n%s\n' "$validated" "$benched" | while read -r name options; do
    # shellcheck disable=SC2086 # options are words
    "$compile" --target=cuda --chip=sm_90a $options -o "$out/$name.fmha"
    echo "made $out/$name.fmha"
  done
  exit 0
fi

[ $# -eq 2 ] || usage
bin=$1 bundles=$2
log=$(mktemp) fails=$(mktemp)
trap 'rm -f "$log" "$fails"' EXIT

echo "$validated" | while read -r name _; do
  for size in "-b 2 --sq 333 --sk 517" "-b 2 --sq 517 --sk 333" \
              "-b 1 --sq 2048 --sk 2048"; do
    # shellcheck disable=SC2086 # size is words
    if "$bin/fmha-run" "$bundles/$name.fmha" $size --validate >"$log" 2>&1; then
      echo "PASS $name $size: $(grep -E 'rel_err' "$log" | head -1)"
    else
      echo "FAIL $name $size: $(tail -3 "$log" | tr '\n' ' ')"
      echo x >>"$fails"
    fi
  done
done

tflops() {
  "$bin/fmha-run" "$bundles/$1.fmha" -b 1 --sq 16384 --sk 16384 --bench \
    --iters 20 >"$log" 2>&1 || { echo "FAIL"; return; }
  sed -n 's/.*TFLOP\/s=\([0-9.]*\).*/\1/p' "$log" | head -1
}
for config in d64-none d64-causal d128-none d128-causal; do
  def=$(tflops "def-$config") wg=$(tflops "wg-$config")
  if [ "$def" = FAIL ] || [ "$wg" = FAIL ]; then
    echo "FAIL bench $config: default $def, wgmma $wg"
    echo x >>"$fails"
    continue
  fi
  ratio=$(awk "BEGIN { printf \"%.2f\", $wg / $def }")
  echo "BENCH $config 16384x16384 bf16: default $def TFLOP/s, wgmma $wg TFLOP/s, wgmma/default ${ratio}x"
done

failed=$(wc -l <"$fails")
if [ "$failed" -ne 0 ]; then
  echo "wgmma_check: $failed FAIL"
  exit 1
fi
echo "wgmma_check: all PASS"
