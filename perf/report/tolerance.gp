# perf/report/tolerance.gp — worst bound usage (max |got - ref| / tolerance over
# a case's gradients) of every conformance case, log scale: at most 1 passes,
# the dashed line is the bound. Cases are grouped by op and ops by family
# (shaded bands), so a point can be traced to its op; colour is the status,
# the shape says whether the bound allows few roundings (short chain, where
# a correct kernel may use nearly all of it) or many (where it should not).
# data: DIR/data/tolerance.tsv and the op ticks, bands and y rows that
# perf/report/report.py derived from the same records in DIR/data/tolerance_layout.gp.
data = dir.'/data/tolerance.tsv'
stats data using 1 nooutput
n = STATS_records
W = 1400
H = 780
load rdir.'/common.gp'
load dir.'/data/tolerance_layout.gp'
# Title, device and the reading guide as screen labels: a multi-line
# `set title` would be pushed down onto the guide by the top margin.
set label 101 "Tolerance: worst error as a fraction of its bound, per conformance case, grouped by op" \
    at screen 0.5, screen 0.975 center font ',14'
set label 102 device at screen 0.5, screen 0.945 center font ',12'
set label 100 "usage = max |got - ref| / bound, with bound = c * gamma(K) * sum|terms| + floor and K = the roundings in the chain; <= 1 passes.\nShort chains (K < 16, triangles) may legitimately reach 0.9-1: a correctly rounded single op (K = 1) can use its whole one-rounding bound.\nLong chains (K >= 16, dots) have a worst-case bound for K roundings; correct kernels stay far below 1 there." \
    at screen 0.5, screen 0.895 center font ',10' tc rgb '#333333'
set tmargin 10
set bmargin 13
set lmargin 14
set rmargin 6
set logscale y
set yrange [exact_y / 2.5 : (has_none ? none_y * 2.5 : top_y * 3)]
set xrange [-1 : xmax]
set xtics rotate by 90 right font ',10' scale 0 nomirror
set grid noxtics ytics
set xlabel sprintf('conformance cases grouped by op (%d case-backend records; a point is the worst gradient of one case)', n)
set ylabel 'bound usage  (log; <= 1 passes)'
set key outside bottom center horizontal maxrows 1 width 1 font ',10'
# Points: colour = status, shape = chain length (pt 8 open triangle: short,
# pt 7 dot: long; column 4 of the data). The key is drawn from keyentry
# lines, one per status present (st_n* come from tolerance_layout.gp), so
# the key names each colour and shape once and gives the count.
ptk(c) = column(c) > 0.5 ? 8 : 7
psk(c) = column(c) > 0.5 ? 1.1 : 0.8
sw(c, name) = c ? sprintf('%s (%d)', name, c) : ''
plot data using 1:(column(3) == 0 ? $2 : 1/0):(psk(4)):(ptk(4)) with points ps variable pt variable lc rgb '#1f77b4' notitle, \
     '' using 1:(column(3) == 1 ? $2 : 1/0):(psk(4)):(ptk(4)) with points ps variable pt variable lc rgb '#ff7f0e' notitle, \
     '' using 1:(column(3) == 2 ? $2 : 1/0):(psk(4)):(ptk(4)) with points ps variable pt variable lc rgb '#d62728' notitle, \
     '' using 1:(column(3) == 3 ? $2 : 1/0):(psk(4)):(ptk(4)) with points ps variable pt variable lc rgb '#7f7f7f' notitle, \
     '' using 1:(column(3) >= 4 ? $2 : 1/0):(psk(4)):(ptk(4)) with points ps variable pt variable lc rgb '#9467bd' notitle, \
     keyentry with boxes fs solid 1.0 lc rgb '#1f77b4' title sw(st_n0, 'Pass'), \
     keyentry with boxes fs solid 1.0 lc rgb '#ff7f0e' title sw(st_n1, 'QualityWarning'), \
     keyentry with boxes fs solid 1.0 lc rgb '#d62728' title sw(st_n2, 'Fail'), \
     keyentry with boxes fs solid 1.0 lc rgb '#7f7f7f' title sw(st_n3, 'NotSupported'), \
     keyentry with boxes fs solid 1.0 lc rgb '#9467bd' title sw(st_n4, 'Crash/Timeout/DeviceLost'), \
     keyentry with points pt 8 ps 1.1 lc rgb '#333333' title 'K < 16 (short chain)', \
     keyentry with points pt 7 ps 0.8 lc rgb '#333333' title 'K >= 16 (long chain)', \
     1 with lines dt 2 lw 2 lc rgb '#444444' title 'bound = 1'
