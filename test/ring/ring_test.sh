#!/usr/bin/env bash
# The ring tests of ctest (test/ring/CMakeLists.txt).
#   ring_test.sh BIN MPIEXEC check NP DTYPE HQ HK D [fmha-ring flags...]
#     compiles the bundles the flags need with BIN/fmha-compile, runs
#     fmha-ring on NP ranks and expects PASS (exit 0) on every rank.
#   ring_test.sh BIN MPIEXEC errors
#     every bad input ends in one "fmha-ring: error:" line and exit 2.
# CI runs as root: mpirun needs --allow-run-as-root (and the two OMPI_
# variables); --oversubscribe lets 4 ranks share 2 cores.
set -euo pipefail
bin=$1 mpiexec=$2 mode=$3
shift 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
mpirun=("$mpiexec" --oversubscribe --allow-run-as-root)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

compile() { # DTYPE HQ HK D
  "$bin/fmha-compile" --dtype "$1" --hq "$2" --hk "$3" -d "$4" -o "$dir/fwd.fmha"
  "$bin/fmha-compile" --dtype "$1" --hq "$2" --hk "$3" -d "$4" --mask t -o "$dir/fwdc.fmha"
  "$bin/fmha-compile" --dtype "$1" --hq "$2" --hk "$3" -d "$4" --bwd -o "$dir/bwd.fmha"
  "$bin/fmha-compile" --dtype "$1" --hq "$2" --hk "$3" -d "$4" --bwd --mask t -o "$dir/bwdc.fmha"
  "$bin/fmha-compile" --dtype "$1" --merge --hq "$2" --dv "$4" -o "$dir/merge.fmha"
  "$bin/fmha-compile" --dtype "$1" --accumulate -o "$dir/acc.fmha"
}
bundles() {
  echo --fwd "$dir/fwd.fmha" --fwd-causal "$dir/fwdc.fmha" --merge "$dir/merge.fmha" \
    --bwd "$dir/bwd.fmha" --bwd-causal "$dir/bwdc.fmha" --acc "$dir/acc.fmha"
}

if [ "$mode" = check ]; then
  np=$1
  compile "$2" "$3" "$4" "$5"
  shift 5
  # shellcheck disable=SC2046
  out=$("${mpirun[@]}" -np "$np" "$bin/fmha-ring" $(bundles) "$@" 2>&1) || {
    echo "$out"; echo "ring_test: fmha-ring failed (exit $?)"; exit 1; }
  echo "$out"
  grep -q '^PASS' <<<"$out" || { echo "ring_test: no PASS"; exit 1; }
  [ "$(grep -c '^rank [0-9]*: chunks' <<<"$out")" -eq "$np" ] ||
    { echo "ring_test: not every rank reported"; exit 1; }
  exit 0
fi

# errors: each case is "expected message" then the fmha-ring arguments.
compile f32 4 2 16
fails=0
expect_error() { # NP MESSAGE ARGS...
  local np=$1 want=$2
  shift 2
  local out rc=0
  out=$("${mpirun[@]}" -np "$np" "$bin/fmha-ring" "$@" 2>&1) || rc=$?
  if [ "$rc" -ne 2 ] || ! grep -qF "fmha-ring: error: $want" <<<"$out"; then
    echo "FAILED: exit $rc, wanted 2 and 'fmha-ring: error: $want' for: $*"
    echo "$out" | head -20
    fails=$((fails + 1))
  else
    echo "ok: $want"
  fi
}
F=(--fwd "$dir/fwd.fmha" --merge "$dir/merge.fmha")
expect_error 2 "--seq is required" "${F[@]}"
expect_error 2 "--fwd is required" --merge "$dir/merge.fmha" --seq 8
expect_error 2 "unknown option '--bogus'" "${F[@]}" --seq 8 --bogus
expect_error 2 "option '--seq' needs a value" "${F[@]}" --seq
expect_error 2 "--seq expects an integer >= 1, got 'x'" "${F[@]}" --seq x
expect_error 2 "--seq 10 is not a multiple of the 4 chunks of 2 ranks (zigzag: 2 a rank)" "${F[@]}" --seq 10 --zigzag
expect_error 2 "--causal needs --fwd-causal" "${F[@]}" --seq 8 --causal
expect_error 2 "--causal with --bwd needs --bwd-causal" "${F[@]}" --fwd-causal "$dir/fwdc.fmha" --bwd "$dir/bwd.fmha" --acc "$dir/acc.fmha" --seq 8 --causal
expect_error 2 "--bwd needs --acc (an accumulate bundle: fmha-compile --accumulate)" "${F[@]}" --bwd "$dir/bwd.fmha" --seq 8
expect_error 2 "--acc needs --bwd" "${F[@]}" --acc "$dir/acc.fmha" --seq 8
expect_error 2 "ring: the accumulate bundle '$dir/merge.fmha' has kind=merge, expected acc" "${F[@]}" --bwd "$dir/bwd.fmha" --acc "$dir/merge.fmha" --seq 8
"$bin/fmha-compile" --dtype bf16 --accumulate -o "$dir/acc16.fmha"
expect_error 2 "ring: the accumulate bundle '$dir/acc16.fmha' has dtype bf16" "${F[@]}" --bwd "$dir/bwd.fmha" --acc "$dir/acc16.fmha" --seq 8
expect_error 2 "bundle '$dir/missing.fmha'" --fwd "$dir/missing.fmha" --merge "$dir/merge.fmha" --seq 8
expect_error 2 "ring: the merge bundle '$dir/fwd.fmha' has kind=fwd, expected merge" --fwd "$dir/fwd.fmha" --merge "$dir/fwd.fmha" --seq 8
expect_error 2 "ring: the forward bundle '$dir/fwdc.fmha' has mask t, expected 0" --fwd "$dir/fwdc.fmha" --merge "$dir/merge.fmha" --seq 8
expect_error 2 "ring: the causal forward bundle '$dir/fwd.fmha' has mask 0, expected a causal mask" "${F[@]}" --fwd-causal "$dir/fwd.fmha" --seq 8 --causal
"$bin/fmha-compile" --merge --hq 2 --dv 16 -o "$dir/merge2.fmha"
expect_error 2 "ring: the merge bundle '$dir/merge2.fmha' has hq=2" --fwd "$dir/fwd.fmha" --merge "$dir/merge2.fmha" --seq 8
"$bin/fmha-compile" --dtype bf16 --hq 4 --hk 2 -d 16 --bwd -o "$dir/bwd16.fmha"
expect_error 2 "ring: the backward bundle '$dir/bwd16.fmha' has dtype bf16" "${F[@]}" --bwd "$dir/bwd16.fmha" --acc "$dir/acc.fmha" --seq 8
# --target cuda: bad options, and NCCL missing or not NCCL (this machine has
# no GPU: the library check comes first, on every rank, exit 2).
expect_error 2 "--target expects cpu or cuda, got 'gpu'" "${F[@]}" --seq 8 --target gpu
expect_error 2 "--bench needs --target cuda" "${F[@]}" --seq 8 --bench 3
expect_error 2 "--check single needs --target cuda" "${F[@]}" --seq 8 --check single
expect_error 2 "--check expects reference, single or none, got 'x'" "${F[@]}" --seq 8 --check x
FMHA_NCCL_LIBRARY=$dir/no-nccl.so expect_error 2 "NCCL not found: dlopen $dir/no-nccl.so failed: " "${F[@]}" --seq 8 --target cuda
FMHA_NCCL_LIBRARY=libc.so.6 expect_error 2 "NCCL 'libc.so.6' lacks ncclGetUniqueId" "${F[@]}" --seq 8 --target cuda
printf 'garbage' > "$dir/bad.fmha"
expect_error 2 "bundle '$dir/bad.fmha'" --fwd "$dir/bad.fmha" --merge "$dir/merge.fmha" --seq 8
[ "$fails" -eq 0 ] || { echo "ring_test: $fails error cases failed"; exit 1; }
echo "ring_test: every error case exits 2 with its message"
