# written by perf/report.py: op ticks and family bands of tolerance.tsv
xmax = 275.3
exact_y = 1e-09
none_y = 10
has_none = 0
top_y = 1
st_n0 = 217
st_n1 = 0
st_n2 = 0
st_n3 = 0
st_n4 = 0
set xtics ("out_prod" 5, "mul_mat" 19.5, "cross_entropy_loss" 33, "cross_entropy_loss_back" 45.5, "ssm_conv" 58.5, "ssm_conv_back" 70, "ssm_scan" 88.5, "ssm_scan_back" 109.5, "scale" 129, "neg" 138.5, "sqr" 148, "cont" 159, "sum" 170, "sum_rows" 181, "add" 193.5, "sub" 206, "mul" 217, "repeat" 228, "repeat_back" 239, "view_back" 250, "train_dense" 259.5, "train_xent" 263.5, "train_conv" 267.5, "train_scan" 272.5)
set ytics ("exact (0)" 1e-09, "1e-8" 1e-08, "1e-7" 1e-07, "1e-6" 1e-06, "1e-5" 1e-05, "1e-4" 0.0001, "1e-3" 0.001, "1e-2" 0.01, "1e-1" 0.1, "1" 1)
set object 1 rect from -0.8, graph 0 to 10.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 1 "out_prod" at 5, graph 1.025 center font ',11'
set object 2 rect from 14.2, graph 0 to 24.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 2 "mul_mat" at 19.5, graph 1.025 center font ',11'
set object 3 rect from 28.2, graph 0 to 51.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 3 "cross entropy" at 40, graph 1.025 center font ',11'
set object 4 rect from 55.2, graph 0 to 76.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 4 "ssm_conv" at 66, graph 1.025 center font ',11'
set object 5 rect from 80.2, graph 0 to 120.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 5 "ssm_scan" at 100.5, graph 1.025 center font ',11'
set object 6 rect from 124.2, graph 0 to 254.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 6 "glue ops" at 189.5, graph 1.025 center font ',11'
set object 7 rect from 258.2, graph 0 to 274.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 7 "train graphs" at 266.5, graph 1.025 center font ',11'
