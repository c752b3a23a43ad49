# perf/report/roofline.gp — achieved GFLOP/s against arithmetic intensity
# (FLOPs / minimum bytes), under the device's own roofline: min(measured FMA
# peak, intensity x measured copy bandwidth) (data: DIR/data/roofline.tsv,
# roof.tsv).
data = dir.'/data/roofline.tsv'
roof = dir.'/data/roof.tsv'
stats roof using 1 nooutput
pbw = STATS_max
stats roof using 2 nooutput
pfl = STATS_max
W = 1200
H = 800
load rdir.'/common.gp'
set title sprintf("Roofline: achieved vs measured peak\n%s\ncopy %.1f GB/s, fp32 FMA %.1f GFLOP/s (built-in probes)", device, pbw, pfl) font ',14'
set logscale xy
set format x '%g'
set format y '%g'
set xlabel 'arithmetic intensity (FLOP / byte, minimum traffic)'
set ylabel 'achieved GFLOP/s (GPU timestamps)'
set xrange [0.01:10000]
set key bottom right opaque box
set samples 400
roofline(x) = (x * pbw < pfl) ? x * pbw : pfl
plot roofline(x) with lines lw 2 lc rgb '#444444' title 'measured roof', \
     data using 1:(column(3) == 0 ? $2 : 1/0) with points pt 7 ps 1.4 lc rgb '#1f77b4' title 'OUT_PROD', \
     '' using 1:(column(3) == 1 ? $2 : 1/0) with points pt 5 ps 1.4 lc rgb '#ff7f0e' title 'CROSS_ENTROPY_LOSS_BACK', \
     '' using 1:(column(3) == 2 ? $2 : 1/0) with points pt 9 ps 1.6 lc rgb '#2ca02c' title 'SSM_CONV_BACK', \
     '' using 1:(column(3) == 3 ? $2 : 1/0) with points pt 13 ps 1.6 lc rgb '#d62728' title 'SSM_SCAN_BACK', \
     '' using 1:(column(3) == 4 ? $2 : 1/0) with points pt 11 ps 1.4 lc rgb '#9467bd' title 'training ops (norms, softmax, RoPE, optimizer steps, ...)'
