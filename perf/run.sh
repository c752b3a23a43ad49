#!/usr/bin/env bash
# perf/run.sh — one command from a fresh machine to reports/<device-slug>/:
# installs what is missing (ci/install-deps.sh), builds if needed, then per
# Vulkan device (lavapipe when there is no GPU) runs the demo, the
# conformance suite, the perf sweep and a short training run per model
# (vkgrad train), and renders the charts and index.html (perf/report/plot.sh).
#
#   perf/run.sh [--quick|--full] [--no-build] [--no-plots] [--build-dir DIR] [--out DIR]
#
#   (default)     the full sweep on GPUs; the quick one on CPU devices (lavapipe),
#                 where the full sweep's largest shapes take hours; it says so
#   --quick       small shapes on every device (CI)
#   --full        the full sweep on every device, CPU devices included
#   (the demo runs with --profile: demo.txt ends with where each graph spends its time)
#   --no-build    use an existing build; install nothing (a machine without
#                 glslang, gnuplot or -dev packages)
#   --no-plots    write the raw results only (perf.csv, pipelines.csv, stages.csv,
#                 conform.jsonl, *.txt); finish elsewhere with perf/report/plot.sh reports/<slug>
#   --build-dir   build directory (default: build-release, a release build;
#                 the tests use build/ with --werror)
#   --out         where the <slug> folders go (default: reports)
# Full runs on a GPU run the demo and the sweep once untimed, each in a
# process of its own just before the timed one (which then skips its own
# compile pass), so that the timed runs get the driver's cached build of
# every kernel: the procedure of the committed H200 report. The commands'
# built-in pass (vkgrad demo/perf without --no-compile-pass) does the same
# from inside one command.
# Where reports/<slug>/baseline.jsonl is committed for a device, the
# conformance run re-times against it (conform --baseline: cases that read
# slower than the baseline run again at the end, the fastest time kept) and
# compare.txt says what changed since that baseline.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
size=auto build=1 plots=1 bdir=build-release out=reports
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) size=quick ;;
    --full) size=full ;;
    --no-build) build=0 ;;
    --no-plots) plots=0 ;;
    --build-dir) bdir="${2:?--build-dir needs a directory}"; shift ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
cd "$root"
step() { printf '\n==> %s\n' "$*" >&2; }

if [ $build -eq 1 ]; then
  if [ -x ci/install-deps.sh ] || [ -f ci/install-deps.sh ]; then
    step "checking dependencies (ci/install-deps.sh)"
    bash ci/install-deps.sh
  fi
  if [ ! -f "$bdir/build.ninja" ]; then
    step "configuring $bdir"
    meson setup "$bdir" --buildtype=release
  fi
  step "building $bdir"
  meson compile -C "$bdir"
fi
vkgrad="$bdir/conformance/vkgrad"
[ -x "$vkgrad" ] || { echo "run.sh: $vkgrad not found: build first or drop --no-build" >&2; exit 1; }

mapfile -t devices < <("$vkgrad" perf --list-devices)
if [ ${#devices[@]} -eq 0 ]; then
  echo "run.sh: no Vulkan device (not even lavapipe: install mesa-vulkan-drivers); CPU only" >&2
  devices=("-1	cpu	CPU")
fi
# Which Vulkan device indices are CPU devices (`type CPU` in vkgrad devices).
cpu_devices=" $("$vkgrad" devices 2>/dev/null | awk '
  /^Vulkan[0-9]+:/ { idx = substr($1, 7, length($1) - 7) }
  $1 == "type" && $2 == "CPU" { printf "%s ", idx }')"
conform_args=()


status=0
for line in "${devices[@]}"; do
  IFS=$'\t' read -r idx slug desc <<<"$line"
  dir="$out/$slug"
  mkdir -p "$dir"
  printf '%s\t%s\t%s\n' "$idx" "$slug" "$desc" > "$dir/device.txt"
  dev_arg=(); conf_dev=(--device cpu)
  [ "$idx" -ge 0 ] && { dev_arg=(--device "$idx"); conf_dev=(--device "$idx"); }
  quick=0
  case "$size" in
    quick) quick=1 ;;
    auto) if [ "$idx" -lt 0 ] || [[ "$cpu_devices" == *" $idx "* ]]; then
            quick=1
            echo "run.sh: $slug is a CPU device: the quick sweep (small shapes, 3 reps)." \
                 "Skipped: the full sweep's GPU-sized shapes (up to OUT_PROD 4096³ and" \
                 "4096-token scans), hours on a CPU device; perf/run.sh --full runs them." >&2
          fi ;;
  esac
  perf_args=(--no-compile-pass) demo_args=(--profile --no-compile-pass)
  [ $quick -eq 1 ] && { perf_args+=(--quick); demo_args+=(--reps 3); }
  step "$desc -> $dir ($([ $quick -eq 1 ] && echo quick || echo full) sweep)"
  "$vkgrad" devices > "$dir/devices.txt" 2>&1 || true

  warm=0
  [ $quick -eq 0 ] && [ "$idx" -ge 0 ] && warm=1
  if [ $warm -eq 1 ]; then
    step "compiling the demo's kernels on $slug (one untimed run)"
    "$vkgrad" demo "${dev_arg[@]}" --reps 1 --no-compile-pass > /dev/null 2>&1 || true
  fi
  step "demo on $slug"
  if "$vkgrad" demo "${dev_arg[@]}" "${demo_args[@]}" 2>&1 | tee "$dir/demo.txt"; then :; else
    echo "run.sh: the demo did not end in OK on $slug" >&2; status=1
  fi

  step "conformance on $slug"
  rm -f "$dir/conform.jsonl" "$dir/compare.txt"
  base=(); bfile="reports/$slug/baseline.jsonl"
  [ -f "$bfile" ] && base=(--baseline "$bfile")
  if "$vkgrad" conform "${conf_dev[@]}" "${conform_args[@]}" "${base[@]}" \
       --json "$dir/conform.jsonl" --junit "$dir/conform.junit.xml" > "$dir/conform.txt" 2>&1; then :; else
    echo "run.sh: conformance reported failures on $slug (see $dir/conform.txt)" >&2; status=1
  fi
  tail -n 15 "$dir/conform.txt" >&2
  if [ ${#base[@]} -gt 0 ] && [ -f "$dir/conform.jsonl" ]; then
    # what changed since the committed baseline (exit 1 = a regression: said, not fatal)
    "$vkgrad" compare --quiet "$bfile" "$dir/conform.jsonl" > "$dir/compare.txt" 2>&1 || true
    tail -n 1 "$dir/compare.txt" >&2
  fi

  if [ $warm -eq 1 ]; then
    step "compiling the sweep's kernels on $slug (one untimed run)"
    "$vkgrad" perf "${dev_arg[@]}" --no-cpu --reps 1 --no-compile-pass --csv /dev/null \
      > /dev/null 2>&1 || true
  fi
  step "perf sweep on $slug"
  "$vkgrad" perf "${dev_arg[@]}" "${perf_args[@]}" --csv "$dir/perf.csv" \
    --pipeline-stats "$dir/pipelines.csv" --stages "$dir/stages.csv" || status=1

  # a short training run per model (vkgrad train): loss curves and step times;
  # tiny and 20 steps on CPU devices and in quick runs, small and 300 steps otherwise
  tsize=small tsteps=300 tval=8
  [ $quick -eq 1 ] && { tsize=tiny tsteps=20 tval=2; }
  tdev=(--device cpu)
  [ "$idx" -ge 0 ] && tdev=(--device "$idx")
  for model in llama mamba1 mamba2; do
    step "training $model ($tsize, $tsteps steps) on $slug"
    if "$vkgrad" train --model "$model" --size "$tsize" --steps "$tsteps" --val-batches "$tval" \
         "${tdev[@]}" --csv "$dir/train_$model.csv" > "$dir/train_$model.txt" 2>&1; then :; else
      echo "run.sh: training $model failed on $slug (see $dir/train_$model.txt)" >&2; status=1
    fi
    grep -E '^(placement|done|step time|step split)' "$dir/train_$model.txt" >&2 || true
  done

  if [ $plots -eq 1 ]; then
    step "charts for $slug"
    bash perf/report/plot.sh "$dir"
  fi
done
step "done (status $status)"
exit $status
