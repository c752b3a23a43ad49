# perf/report/speedup.gp — CPU backend time over GPU time per shape (log scale):
# whole-graph wall clock and kernel (timestamp) time; > 1 means the GPU is
# faster (data: DIR/data/speedup.tsv).
data = dir.'/data/speedup.tsv'
stats data using 1 nooutput
n = STATS_records
# y range: every point and the line at 1, with a margin.
stats data using 3 nooutput
lo = STATS_min; hi = STATS_max
stats data using 4 nooutput
lo = STATS_min < lo ? STATS_min : lo; hi = STATS_max > hi ? STATS_max : hi
lo = lo < 1 ? lo : 1; hi = hi > 1 ? hi : 1
W = 200 + 45 * n
W = W < 1000 ? 1000 : W
H = 800
load rdir.'/common.gp'
set title sprintf("Speedup of the GPU over the CPU backend per shape\n%s", device) font ',14'
set logscale y
set yrange [lo / 3 : hi * 3]
set format y '%g'
set ylabel 'CPU ms / GPU ms  (log; > 1: GPU faster)'
set xlabel ''
set xrange [-0.7:n - 0.3]
set xtics rotate by -60 left font ',9' scale 0
set bmargin 26
set key outside top center horizontal
plot data using 0:3:xtic(2) with points pt 7 ps 1.5 lc rgb '#1f77b4' title 'whole graph (wall clock)', \
     '' using 0:4 with points pt 5 ps 1.3 lc rgb '#2ca02c' title 'kernel (GPU timestamps)', \
     '' using 0:5 with points pt 2 ps 1.5 lc rgb '#9467bd' title 'OpenBLAS sgemm / kernel (OUT_PROD)', \
     1 with lines dt 2 lw 2 lc rgb '#444444' title 'equal'
