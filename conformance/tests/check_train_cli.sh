#!/usr/bin/env bash
# conformance/tests/check_train_cli.sh — `vkgrad train` as CI runs it: each
# model at the tiny size, two steps with --require-gpu on the first Vulkan
# device (lavapipe in CI), every node on the device, the CSV complete; a
# forced fallback refused by --require-gpu with the op and the reason named;
# bad usage exit 2. No Vulkan device: skipped (exit 77), a failure where
# VKGRAD_REQUIRE_VULKAN=1.
#
#   check_train_cli.sh VKGRAD
set -uo pipefail
vkgrad=${1:?usage: check_train_cli.sh VKGRAD}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # label, expected exit status, command...
  local label=$1 want=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" = "$want" ]; then
    echo "ok    $label"
  else
    echo "FAIL  $label: exit $rc, expected $want"
    tail -n 8 "$tmp/err" "$tmp/out"
    fails=$((fails + 1))
  fi
}
expect() { # label, file, fixed string
  if grep -qF -- "$3" "$2"; then echo "ok    $1"; else
    echo "FAIL  $1: '$3' not in $2:"; tail -n 8 "$2"; fails=$((fails + 1)); fi
}

check "bad model is bad usage" 2 "$vkgrad" train --model gpt2
check "--require-gpu with --device cpu is bad usage" 2 \
  "$vkgrad" train --model llama --device cpu --require-gpu

if [ -z "$("$vkgrad" perf --list-devices 2>/dev/null)" ]; then
  if [ "${VKGRAD_REQUIRE_VULKAN:-}" = 1 ]; then
    echo "FAIL  no Vulkan device and VKGRAD_REQUIRE_VULKAN=1"; exit 1
  fi
  echo "no Vulkan device: the device checks are skipped"; exit 77
fi

for m in llama mamba1 mamba2; do
  check "$m tiny, 2 steps, --require-gpu" 0 "$vkgrad" train --model "$m" --size tiny \
    --steps 2 --val-batches 1 --profile-every 2 --require-gpu --device 0 --csv "$tmp/$m.csv"
  expect "$m: every node on the device" "$tmp/out" "0 on the CPU as a fallback; 1 split"
  expect "$m: the step split from GPU timestamps" "$tmp/out" "step split (GPU timestamps"
  expect "$m: the CSV header" "$tmp/$m.csv" "step,train_loss,val_loss,tokens_per_s,seconds"
  rows=$(wc -l < "$tmp/$m.csv")
  [ "$rows" = 4 ] && echo "ok    $m: the CSV has steps 0..2" ||
    { echo "FAIL  $m: the CSV has $rows lines, expected 4"; fails=$((fails + 1)); }
done

VKG_VULKAN_DISABLE=silu check "a fallback under --require-gpu exits 1" 1 \
  "$vkgrad" train --model llama --steps 1 --require-gpu --device 0
expect "the fallback's reason is named" "$tmp/out" "silu disabled by VKG_VULKAN_DISABLE"
expect "the refusal says how many nodes" "$tmp/err" "--require-gpu: 2 nodes fell back"

[ $fails -eq 0 ] && echo "check_train_cli: all passed" || echo "check_train_cli: $fails failed"
[ $fails -eq 0 ]
