#!/usr/bin/env bash
# A driver upgrade in CI: the default conformance tier on the installed
# lavapipe and on bookworm-backports' (fetched, not installed:
# ci/fetch-mesa-backports.sh), then `vkgrad compare` of the two runs. A
# driver-dependent break (a case that fails, moves to the CPU or drifts on
# one driver only) fails CI. Compile time and lavapipe's GPU times are
# printed, not judged: the newer compiler is known to be slower (the
# reports/lavapipe-25.0.7/ comparison) and a shared 2-core machine's times
# are noise.
#
# usage: ci/driver-upgrade.sh [BUILD_DIR [CONFORM-OPTION...]]
#   BUILD_DIR defaults to build; the files go to BUILD_DIR/driver-upgrade/;
#   CONFORM-OPTIONs narrow both runs (--include 'ssm_conv*', --full).
# Exit: compare's (0 no regression, 1 a regression, 2 bad input), 1 when
# either driver cannot be found or both runs report the same driver.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
[ $# -gt 0 ] && shift
vkgrad="$build/conformance/vkgrad"
out="$build/driver-upgrade"
mkdir -p "$out"

old_icd="$(ls /usr/share/vulkan/icd.d/lvp_icd.*.json 2>/dev/null | head -n 1 || true)"
[ -n "$old_icd" ] || { echo "driver-upgrade: no installed lavapipe manifest" >&2; exit 1; }
new_icd="$(bash ci/fetch-mesa-backports.sh --cache "$out/mesa-backports")"

# private, empty shader caches: both drivers start cold, as on a fresh machine.
# The two runs go side by side: a kernel's compilation is one thread, and it
# is most of a cold run's time (compile time is judged on CPU time, which the
# other run does not inflate).
for tag in old new; do
    icd="$old_icd"
    [ "$tag" = new ] && icd="$new_icd"
    rm -rf "$out/shader-cache-$tag"
    "$vkgrad" devices --icd "$icd" > "$out/devices-$tag.txt"
    MESA_SHADER_CACHE_DIR="$out/shader-cache-$tag" "$vkgrad" conform --icd "$icd" --device 0 \
        --time-reps 0 --quiet --json "$out/$tag.jsonl" "$@" &
done
wait || true

driver() { sed -n 's/^  driver *//p' "$1" | head -n 1; }
if [ "$(driver "$out/devices-old.txt")" = "$(driver "$out/devices-new.txt")" ]; then
    echo "driver-upgrade: both runs used $(driver "$out/devices-old.txt"): not an upgrade" >&2
    exit 1
fi
echo "driver-upgrade: $(driver "$out/devices-old.txt") -> $(driver "$out/devices-new.txt")"
"$vkgrad" compare "$out/old.jsonl" "$out/new.jsonl" --compile-time-note | tee "$out/compare.txt"
