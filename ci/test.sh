#!/usr/bin/env bash
# ci/test.sh — the test command: installs what is missing, configures with
# --werror, builds and runs the tests.
#
#   ci/test.sh            build/, every test but the slow suite
#                         (meson test -C build --no-suite slow): minutes
#   ci/test.sh --slow     build/, the slow suite alone (meson test -C build --suite slow):
#                         every alternative Vulkan path against the reference
#   ci/test.sh --asan     build-asan/, the default tests under ASan + UBSan
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-normal}
dir=build
opts=(--werror)
select=(--no-suite slow)
case "$mode" in
  normal) ;;
  --slow) select=(--suite slow) ;;
  --asan)
    dir=build-asan
    opts+=(-Db_sanitize=address,undefined -Db_lundef=false)
    # Leaks inside the Vulkan driver and loader are theirs, suppressed by library
    # name; leak detection stays on for vkgrad's own code.
    export LSAN_OPTIONS="suppressions=$PWD/ci/lsan.supp:print_suppressions=0"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    ;;
  *)
    echo "usage: ci/test.sh [--slow|--asan]" >&2
    exit 2
    ;;
esac
bash ci/install-deps.sh
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "${opts[@]}"
fi
meson compile -C "$dir"
meson test -C "$dir" "${select[@]}" --print-errorlogs
