#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ for a set time each.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (default: 60 s, every target)
#
# Targets: mask-spec bundle npy run-options compile-options fmha-ir.
# BUILD_DIR (default build-fuzz) is configured with -DFMHA_ENABLE_FUZZERS=ON
# and built when it has no build.ninja yet. FUZZ_JOBS targets run at a time
# (default: the number of cores). New inputs go into fuzz/corpus/<target>/
# unless FUZZ_READONLY_CORPUS=1 (CI), which keeps them in a scratch folder.
# fuzz/<target>.dict, where present, is the target's dictionary.
# Crashes are written to $FUZZ_OUT/<target>/ (default BUILD_DIR/fuzz-out); the
# script then fails and prints how to replay each one. A crash, once fixed,
# goes into fuzz/regressions/<target>/, which ctest replays.
# FUZZ_MERGE=1 instead minimizes each target's corpus in place (-merge=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
seconds=${1:-60}
shift || true
all=(mask-spec bundle npy run-options compile-options fmha-ir)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
jobs=${FUZZ_JOBS:-$(nproc)}
out=${FUZZ_OUT:-$build/fuzz-out}

if [ ! -f "$build/build.ninja" ]; then
  BUILD_DIR=$build CMAKE_ARGS="-DFMHA_ENABLE_FUZZERS=ON ${CMAKE_ARGS:-}" \
    "$root/scripts/build.sh"
else
  ninja -C "$build" -j "${JOBS:-$(nproc)}" $(printf 'fuzz-%s ' "${targets[@]}")
fi

# The MLIR fuzzer's per-input time covers a CPU pipeline run under ASan.
max_len() { [ "$1" = fmha-ir ] && echo 8192 || echo 4096; }
timeout_s() { [ "$1" = fmha-ir ] && echo 60 || echo 10; }

if [ "${FUZZ_MERGE:-0}" = 1 ]; then
  for t in "${targets[@]}"; do
    corpus=$root/fuzz/corpus/$t
    tmp=$(mktemp -d)
    "$build/bin/fuzz-$t" -merge=1 -max_len="$(max_len "$t")" \
      -timeout="$(timeout_s "$t")" "$tmp" "$corpus" > "$tmp.log" 2>&1 ||
      { echo "fuzz: merging $t failed:"; tail -20 "$tmp.log"; exit 1; }
    # Seeds stay by name; found inputs are replaced by the minimized set.
    find "$corpus" -type f ! -name 'seed-*' -delete
    cp "$tmp"/* "$corpus"/ 2>/dev/null || true
    # Drop copies of the seeds that -merge gave SHA-1 names.
    for s in "$corpus"/seed-*; do
      h=$(sha1sum "$s" | cut -d' ' -f1)
      rm -f "$corpus/$h"
    done
    rm -rf "$tmp" "$tmp.log"
    echo "fuzz: $t corpus: $(ls "$corpus" | wc -l) files, $(du -sk --apparent-size "$corpus" | cut -f1) KiB"
  done
  exit 0
fi

run_one() {
  local t=$1 corpus=$root/fuzz/corpus/$t dirs=()
  mkdir -p "$out/$t"
  if [ "${FUZZ_READONLY_CORPUS:-0}" = 1 ]; then
    mkdir -p "$out/$t/new-corpus"
    dirs=("$out/$t/new-corpus" "$corpus")
  else
    dirs=("$corpus")
  fi
  local dict=()
  [ -f "$root/fuzz/$t.dict" ] && dict=(-dict="$root/fuzz/$t.dict")
  "$build/bin/fuzz-$t" -max_total_time="$seconds" -print_final_stats=1 \
    -max_len="$(max_len "$t")" -timeout="$(timeout_s "$t")" \
    -rss_limit_mb=4096 -artifact_prefix="$out/$t/" "${dict[@]}" \
    "${dirs[@]}" > "$out/$t.log" 2>&1
}

mkdir -p "$out"
rm -f "$out"/*.log
declare -A pid
running=0
for t in "${targets[@]}"; do
  [ -x "$build/bin/fuzz-$t" ] || { echo "fuzz: no target fuzz-$t in $build"; exit 2; }
  rm -f "$out/$t"/crash-* "$out/$t"/timeout-* "$out/$t"/leak-* "$out/$t"/oom-*
  run_one "$t" &
  pid[$t]=$!
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

status=0
printf '%-16s %12s %9s %7s %8s %7s  %s\n' target execs exec/s cov features corpus result
for t in "${targets[@]}"; do
  log=$out/$t.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
  found=$(ls "$out/$t" 2>/dev/null | grep -E '^(crash|timeout|leak|oom|slow-unit)-' || true)
  result=ok
  if [ -n "$found" ]; then
    result="FOUND: $(echo $found)"
    status=1
  elif ! grep -q 'Done [0-9]* runs' "$log"; then
    result="FAILED (see $log)"
    status=1
  fi
  printf '%-16s %12s %9s %7s %8s %7s  %s\n' "$t" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
if [ "$status" != 0 ]; then
  echo "fuzz: findings above; logs in $out/<target>.log. Replay one with:"
  echo "  $build/bin/fuzz-<target> $out/<target>/crash-<sha1>"
fi
exit "$status"
