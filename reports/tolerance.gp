# reports/tolerance.gp — bound usage (max |got - ref| / tolerance) of every
# conformance case, log scale: below 1 passes; the line at 1 is the bound
# (data: DIR/data/tolerance.tsv from `vkgrad conform --json`).
data = dir.'/data/tolerance.tsv'
stats data using 1 nooutput
n = STATS_records
W = 1200
H = 600
load rdir.'/common.gp'
set title sprintf("Tolerance: bound usage per conformance case\n%s", device) font ',14'
set logscale y
set yrange [1e-6:*]
set format y '%.0e'
set xlabel sprintf('conformance case (index over %d case-backend records, in run order; exact results drawn at 1e-6)', n)
set ylabel 'max |got - ref| / tolerance  (log; <= 1 passes)'
set key outside top center horizontal
plot data using 1:(column(3) == 0 ? $2 : 1/0) with points pt 7 ps 0.7 lc rgb '#1f77b4' title 'Pass', \
     '' using 1:(column(3) == 1 ? $2 : 1/0) with points pt 9 ps 1.0 lc rgb '#ff7f0e' title 'QualityWarning', \
     '' using 1:(column(3) >= 2 ? $2 : 1/0) with points pt 5 ps 1.0 lc rgb '#d62728' title 'Fail/other', \
     1 with lines dt 2 lw 2 lc rgb '#444444' title 'bound = 1'
