#!/usr/bin/env bash
# perf/report/check_report.sh DIR — check that a report directory is complete: each
# chart as SVG and PNG, index.html and the raw results, all non-empty, and
# that the PNGs are PNGs and the SVGs SVGs. pipelines.csv (the driver's
# pipeline statistics) is checked where present: its header and at least one
# row, which may be the one saying the driver offers none; stages.csv (each
# op's time per dispatch) the same way, header and rows; the train_<model>.csv
# of vkgrad train the same way, and then the loss chart. Reports made before
# either existed pass without them. Exit 1 naming the first problem.
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: perf/report/check_report.sh DIR" >&2
  exit 2
fi
dir="$1"
[ -d "$dir" ] || { echo "check_report: $dir is not a directory" >&2; exit 1; }
status=0
for f in placement.svg placement.png tolerance.svg tolerance.png speedup.svg speedup.png \
         roofline.svg roofline.png index.html perf.csv conform.jsonl demo.txt; do
  if [ ! -s "$dir/$f" ]; then
    echo "check_report: $dir/$f is missing or empty" >&2
    status=1
    continue
  fi
  case "$f" in
    *.png) head -c 8 "$dir/$f" | od -An -tx1 | tr -d ' \n' | grep -q '^89504e470d0a1a0a$' ||
             { echo "check_report: $dir/$f is not a PNG" >&2; status=1; } ;;
    *.svg) grep -q '<svg' "$dir/$f" || { echo "check_report: $dir/$f is not an SVG" >&2; status=1; } ;;
    perf.csv) [ "$(wc -l < "$dir/$f")" -ge 2 ] || { echo "check_report: $dir/$f has no rows" >&2; status=1; } ;;
  esac
done
# An optional CSV: where present, its header and at least one row.
check_csv() { # file, header, what
  [ -e "$dir/$1" ] || return 0
  if [ "$(head -n 1 "$dir/$1")" != "$2" ]; then
    echo "check_report: $dir/$1 does not start with the $3 header" >&2
    status=1
  elif [ "$(wc -l < "$dir/$1")" -lt 2 ]; then
    echo "check_report: $dir/$1 has no rows" >&2
    status=1
  fi
}
check_csv pipelines.csv "device,kernel,spec,executable,statistic,value" pipeline-statistics
check_csv stages.csv "device,device_slug,op,variant,shape,node,dispatch,kernel,gpu_ms,node_ms,reps,note" stages
# vkgrad train's loss curves: where a run left a CSV, its header, rows and the chart
for m in llama mamba1 mamba2; do
  check_csv "train_$m.csv" "step,train_loss,val_loss,tokens_per_s,seconds" "vkgrad train"
done
if ls "$dir"/train_*.csv > /dev/null 2>&1; then
  for f in train_loss.svg train_loss.png; do
    [ -s "$dir/$f" ] || { echo "check_report: $dir/$f is missing or empty" >&2; status=1; }
  done
  grep -q "train_loss.png" "$dir/index.html" 2>/dev/null ||
    { echo "check_report: $dir/index.html does not show train_loss.png" >&2; status=1; }
fi
for chart in placement tolerance speedup roofline; do
  grep -q "$chart.png" "$dir/index.html" 2>/dev/null ||
    { echo "check_report: $dir/index.html does not show $chart.png" >&2; status=1; }
done
[ $status -eq 0 ] && echo "check_report: $dir complete"
exit $status
