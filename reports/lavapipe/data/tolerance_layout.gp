# written by perf/report.py: op ticks and family bands of tolerance.tsv
xmax = 270.3
exact_y = 1e-09
none_y = 10
has_none = 0
top_y = 1
st_n0 = 212
st_n1 = 0
st_n2 = 0
st_n3 = 0
st_n4 = 0
set xtics ("out_prod" 5, "mul_mat" 19.5, "cross_entropy_loss" 33, "cross_entropy_loss_back" 44.5, "ssm_conv" 56.5, "ssm_conv_back" 66.5, "ssm_scan" 83.5, "ssm_scan_back" 104.5, "scale" 124, "neg" 133.5, "sqr" 143, "cont" 154, "sum" 165, "sum_rows" 176, "add" 188.5, "sub" 201, "mul" 212, "repeat" 223, "repeat_back" 234, "view_back" 245, "train_dense" 254.5, "train_xent" 258.5, "train_conv" 262.5, "train_scan" 267.5)
set ytics ("exact (0)" 1e-09, "1e-8" 1e-08, "1e-7" 1e-07, "1e-6" 1e-06, "1e-5" 1e-05, "1e-4" 0.0001, "1e-3" 0.001, "1e-2" 0.01, "1e-1" 0.1, "1" 1)
set object 1 rect from -0.8, graph 0 to 10.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 1 "out_prod" at 5, graph 1.025 center font ',11'
set object 2 rect from 14.2, graph 0 to 24.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 2 "mul_mat" at 19.5, graph 1.025 center font ',11'
set object 3 rect from 28.2, graph 0 to 49.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 3 "cross entropy" at 39, graph 1.025 center font ',11'
set object 4 rect from 53.2, graph 0 to 71.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 4 "ssm_conv" at 62.5, graph 1.025 center font ',11'
set object 5 rect from 75.2, graph 0 to 115.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 5 "ssm_scan" at 95.5, graph 1.025 center font ',11'
set object 6 rect from 119.2, graph 0 to 249.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 6 "glue ops" at 184.5, graph 1.025 center font ',11'
set object 7 rect from 253.2, graph 0 to 269.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 7 "train graphs" at 261.5, graph 1.025 center font ',11'
