#!/usr/bin/env bash
# perf/report/plot.sh DIR — render a report directory written by perf/run.sh:
# placement, tolerance, speedup and roofline charts (SVG and PNG, gnuplot)
# and index.html. Needs gnuplot and python3 only, so a report measured on a
# machine without them (run.sh --no-plots) can be finished on another.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rdir="$here"
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: perf/report/plot.sh DIR   (a reports/<device-slug> directory with perf.csv)" >&2
  exit 2
fi
dir="$(cd "$1" && pwd)"
for tool in gnuplot python3; do
  command -v "$tool" >/dev/null || { echo "plot.sh: $tool is missing (ci/install-deps.sh installs it)" >&2; exit 1; }
done
[ -s "$dir/perf.csv" ] || { echo "plot.sh: $dir/perf.csv is missing or empty" >&2; exit 1; }

device="$(cut -f3 "$dir/device.txt" 2>/dev/null || true)"
[ -n "$device" ] || device="$(basename "$dir")"
device="${device//\'/}"
png=png
gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo && png=pngcairo

python3 "$here/report.py" data "$dir"
for chart in placement tolerance speedup roofline; do
  for t in svg "$png"; do
    ext=$([ "$t" = svg ] && echo svg || echo png)
    echo "plot.sh: $chart.$ext"
    # An empty series (no Fail in the tolerance chart, say) is normal: drop
    # gnuplot's warning about it, keep everything else, fail on its status.
    gnuplot -e "dir='$dir'; rdir='$rdir'; tname='$t'; out='$dir/$chart.$ext'; device='$device'" \
      "$rdir/$chart.gp" 2> >(grep -v "Skipping data file with no valid points" >&2)
  done
done
# the loss curves of perf/run.sh's training runs, where there are some
models=""
for m in llama mamba1 mamba2; do [ -s "$dir/train_$m.csv" ] && models="$models $m"; done
if [ -n "$models" ]; then
  for t in svg "$png"; do
    ext=$([ "$t" = svg ] && echo svg || echo png)
    echo "plot.sh: train_loss.$ext"
    gnuplot -e "dir='$dir'; rdir='$rdir'; tname='$t'; out='$dir/train_loss.$ext'; device='$device'; models='${models# }'" \
      "$rdir/train_loss.gp" 2> >(grep -v "Skipping data file with no valid points" >&2)
  done
fi
python3 "$here/report.py" html "$dir"
echo "plot.sh: wrote $dir/index.html"
