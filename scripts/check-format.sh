#!/usr/bin/env bash
# Checks that every C and C++ source of the project is as clang-format-22
# (the LLVM release the project builds with, .clang-format) writes it.
# Prints each file that is not and the command that fixes it; exits 1 then.
# Comment tables that reflow would garble sit in `clang-format off` regions.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
format=${CLANG_FORMAT:-clang-format-22}
if ! command -v "$format" >/dev/null; then
  echo "check-format: $format not found (scripts/setup.sh installs it)" >&2
  exit 1
fi
cd "$root"
bad=()
while IFS= read -r -d '' f; do
  "$format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(find dialect passes lowering support runtime tools fuzz test python \
  -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.c' \) -print0 | sort -z)
if [ ${#bad[@]} -ne 0 ]; then
  echo "check-format: ${#bad[@]} file(s) differ from $format's layout:"
  printf '  %s\n' "${bad[@]}"
  echo "fix with: $format -i ${bad[*]}"
  exit 1
fi
echo "check-format: every source is formatted"
