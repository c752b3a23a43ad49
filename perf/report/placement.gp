# perf/report/placement.gp — where the backward node of each benchmarked shape
# ran: green = a Vulkan device, red = the CPU fallback, with the reason the
# device gave (data: DIR/data/placement.tsv from perf/report/report.py).
data = dir.'/data/placement.tsv'
stats data using 1 nooutput
n = STATS_records
W = 1400
H = 130 + 26 * n
load rdir.'/common.gp'
set title sprintf("Placement of the backward node per op and shape\n%s", device) font ',14'
set xrange [0:10]
set yrange [-0.8:n - 0.2]
unset xtics
set xlabel 'green: ran on the GPU; red: fell back to the CPU (text: the device''s reason)'
set ylabel ''
set ytics scale 0 font ',10'
set grid noxtics ytics
set lmargin 62
set key top right opaque box
plot data using (0.25):1:ytic(3) with points ps 0 notitle, \
     '' using (0.25):1:(column(2) == 1 ? 0x2ca02c : 0xd62728) with points pt 5 ps 2 lc rgb variable notitle, \
     '' using (0.5):1:4 with labels left font ',10' notitle, \
     keyentry with points pt 5 ps 2 lc rgb '#2ca02c' title 'GPU (Vulkan)', \
     keyentry with points pt 5 ps 2 lc rgb '#d62728' title 'CPU fallback'
