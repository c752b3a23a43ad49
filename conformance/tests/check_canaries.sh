#!/usr/bin/env bash
# conformance/tests/check_canaries.sh — every driver canary (canary_* cases,
# conformance/harness/canary.h) passes on this machine's driver, or says
# which limit keeps it off the device, and fails when its pitfall is
# simulated: VKGRAD_TESTING=canary_break=NAME for the kernel canaries,
# VKG_FAULT ftz / jitter / otherbits for the op canaries.
#
#   check_canaries.sh VKGRAD      (exit 77, a skip, without a Vulkan device)
set -uo pipefail
vkgrad=${1:?usage: check_canaries.sh VKGRAD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$vkgrad" devices 2>/dev/null | grep -q '^Vulkan0\|Vulkan0'; then
  [ "${VKGRAD_REQUIRE_VULKAN:-0}" = 1 ] && { echo "FAIL  no Vulkan device (VKGRAD_REQUIRE_VULKAN=1)"; exit 1; }
  echo "SKIP  no Vulkan device"; exit 77
fi
fails=0
run=(conform --device 0 --quiet --time-reps 0 --reruns 0)
# status of CASE in a results file
status_of() { python3 -c "
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get('case') == sys.argv[2]: print(r['status'], '|', r.get('message', '')); break
" "$1" "$2"; }

# 1. Healthy: every canary passes, or is NotSupported naming a limit.
"$vkgrad" "${run[@]}" --include 'canary_*' --json "$tmp/ok.jsonl"
[ $? = 0 ] && echo "ok    every canary passes on this driver" || { echo "FAIL  a canary fails on this driver"; fails=$((fails + 1)); }
"$vkgrad" conform --list --include 'canary_*' >"$tmp/cases"
while read -r c; do
  s=$(status_of "$tmp/ok.jsonl" "$c")
  case "$s" in
    "Pass |"*) echo "ok    $c: $s" ;;
    "NotSupported | "?*) echo "ok    $c skipped with its reason: ${s#NotSupported | }" ;;
    *) echo "FAIL  $c: '$s'"; fails=$((fails + 1)) ;;
  esac
done <"$tmp/cases"

# 2. Each pitfall simulated: its canary fails (and says what came back).
sim() { # label, case, env assignment
  local label=$1 case=$2
  shift 2
  env "$@" "$vkgrad" "${run[@]}" --case "$case" --json "$tmp/sim.jsonl"
  local rc=$? s
  s=$(status_of "$tmp/sim.jsonl" "$case")
  if [ "$rc" = 1 ] && [ "${s%% *}" = Fail ]; then echo "ok    $label: $case fails: ${s#Fail | }"
  else echo "FAIL  $label: $case gave exit $rc, '$s'"; fails=$((fails + 1)); fi
}
sim "loops cut below the kernels' budget" canary_loop.trips=70000 VKGRAD_TESTING=canary_break=loop
sim "the last workgroup of a maximal dispatch dropped" canary_workgroup_count VKGRAD_TESTING=canary_break=groups
sim "a binding one word short of maxStorageBufferRange" canary_binding_range.below=0 VKGRAD_TESTING=canary_break=range
sim "a binding of an odd byte count, one word short" canary_binding_range.below=3 VKGRAD_TESTING=canary_break=range
sim "a binding offset cut to its low bits" canary_offset64.log2=20 VKGRAD_TESTING=canary_break=offset64
sim "a subgroup reduction missing a lane" canary_subgroup VKGRAD_TESTING=canary_break=subgroup
for op in out_prod cross_entropy_loss_back ssm_conv_back ssm_scan_back_mamba2 ssm_scan_back_mamba1; do
  sim "denormals flushed to zero" "canary_denormal.$op" "VKG_FAULT=ftz:canary_denormal.*"
  sim "an order-dependent sum" "canary_determinism.$op.runs=4" "VKG_FAULT=jitter:canary_determinism.*"
done
# a second process computing other bits: a failure, not a flake, with reruns on
env VKG_FAULT='otherbits:canary_determinism.*' "$vkgrad" conform --device 0 --quiet --time-reps 0 \
  --case canary_determinism.ssm_conv_back.runs=4 --json "$tmp/sim.jsonl"
rc=$?
s=$(status_of "$tmp/sim.jsonl" canary_determinism.ssm_conv_back.runs=4)
if [ "$rc" = 1 ] && [ "${s%% *}" = Fail ] && grep -q '"flaky":false' "$tmp/sim.jsonl"; then
  echo "ok    a build that differs by process: fails, not a flake: ${s#Fail | }"
else echo "FAIL  otherbits: exit $rc, '$s'"; fails=$((fails + 1)); fi
# the offset canary at a size that fits: passes when healthy
"$vkgrad" "${run[@]}" --case canary_offset64.log2=20 >/dev/null &&
  echo "ok    canary_offset64.log2=20 passes when healthy" || { echo "FAIL  canary_offset64.log2=20"; fails=$((fails + 1)); }

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
