#!/usr/bin/env bash
# ci/fuzz.sh — build the libFuzzer targets (conformance/fuzz/) with clang,
# ASan and UBSan, and run each for a fixed time from its seed corpus.
#
#   ci/fuzz.sh [SECONDS]     per target (default 15); build in build-fuzz/
#
# A crash, a sanitizer report or a leak fails the run; the input that caused
# it is left in build-fuzz/fuzz-out/ for a test to be made of it.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}
command -v clang >/dev/null || { echo "fuzz.sh: clang is missing (ci/install-deps.sh installs it)" >&2; exit 1; }
if [ ! -f build-fuzz/build.ninja ]; then
  # the readers need no GPU: the library is built without its Vulkan backend
  CC=clang meson setup build-fuzz -Dfuzz=true -Dvulkan=disabled -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
fi
targets=$(cd conformance/fuzz && ls fuzz_*.c | grep -v fuzz_input | sed 's/\.c$//')
# shellcheck disable=SC2086
meson compile -C build-fuzz $targets >build-fuzz/compile.log 2>&1 ||
  { tail -30 build-fuzz/compile.log >&2; echo "fuzz.sh: build failed" >&2; exit 1; }
export LSAN_OPTIONS="suppressions=$PWD/ci/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
out=build-fuzz/fuzz-out
rm -rf "$out"
mkdir -p "$out"
total=0
for src in conformance/fuzz/fuzz_*.c; do
  t=$(basename "$src" .c)
  [ "$t" = fuzz_input ] && continue
  corpus="$out/$t.corpus"
  cp -r "conformance/fuzz/corpus/$t" "$corpus"
  log="$out/$t.log"
  if ! "build-fuzz/conformance/fuzz/$t" -max_total_time="$secs" -max_len=65536 \
      -artifact_prefix="$out/$t-" "$corpus" >"$log" 2>&1; then
    echo "fuzz.sh: $t failed (input in $out/):" >&2
    tail -40 "$log" >&2
    exit 1
  fi
  runs=$(grep -o 'Done [0-9]* runs' "$log" | awk '{print $2}')
  total=$((total + ${runs:-0}))
  echo "fuzz.sh: $t: ${runs:-?} executions in ${secs} s, no finding"
done
echo "fuzz.sh: $total executions in all"
