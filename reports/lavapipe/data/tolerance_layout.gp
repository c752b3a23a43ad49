# written by perf/report.py: op ticks and family bands of tolerance.tsv
xmax = 274.3
exact_y = 1e-09
none_y = 10
has_none = 0
top_y = 1
st_n0 = 216
st_n1 = 0
st_n2 = 0
st_n3 = 0
st_n4 = 0
set xtics ("out_prod" 5, "mul_mat" 19.5, "cross_entropy_loss" 33, "cross_entropy_loss_back" 45.5, "ssm_conv" 58.5, "ssm_conv_back" 69.5, "ssm_scan" 87.5, "ssm_scan_back" 108.5, "scale" 128, "neg" 137.5, "sqr" 147, "cont" 158, "sum" 169, "sum_rows" 180, "add" 192.5, "sub" 205, "mul" 216, "repeat" 227, "repeat_back" 238, "view_back" 249, "train_dense" 258.5, "train_xent" 262.5, "train_conv" 266.5, "train_scan" 271.5)
set ytics ("exact (0)" 1e-09, "1e-8" 1e-08, "1e-7" 1e-07, "1e-6" 1e-06, "1e-5" 1e-05, "1e-4" 0.0001, "1e-3" 0.001, "1e-2" 0.01, "1e-1" 0.1, "1" 1)
set object 1 rect from -0.8, graph 0 to 10.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 1 "out_prod" at 5, graph 1.025 center font ',11'
set object 2 rect from 14.2, graph 0 to 24.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 2 "mul_mat" at 19.5, graph 1.025 center font ',11'
set object 3 rect from 28.2, graph 0 to 51.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 3 "cross entropy" at 40, graph 1.025 center font ',11'
set object 4 rect from 55.2, graph 0 to 75.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 4 "ssm_conv" at 65.5, graph 1.025 center font ',11'
set object 5 rect from 79.2, graph 0 to 119.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 5 "ssm_scan" at 99.5, graph 1.025 center font ',11'
set object 6 rect from 123.2, graph 0 to 253.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 6 "glue ops" at 188.5, graph 1.025 center font ',11'
set object 7 rect from 257.2, graph 0 to 273.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 7 "train graphs" at 265.5, graph 1.025 center font ',11'
