# written by perf/report.py: op ticks and family bands of tolerance.tsv
xmax = 276.3
exact_y = 1e-09
none_y = 10
has_none = 0
top_y = 1
st_n0 = 218
st_n1 = 0
st_n2 = 0
st_n3 = 0
st_n4 = 0
set xtics ("out_prod" 5, "mul_mat" 19.5, "cross_entropy_loss" 33, "cross_entropy_loss_back" 45.5, "ssm_conv" 58.5, "ssm_conv_back" 70, "ssm_scan" 88.5, "ssm_scan_back" 110, "scale" 130, "neg" 139.5, "sqr" 149, "cont" 160, "sum" 171, "sum_rows" 182, "add" 194.5, "sub" 207, "mul" 218, "repeat" 229, "repeat_back" 240, "view_back" 251, "train_dense" 260.5, "train_xent" 264.5, "train_conv" 268.5, "train_scan" 273.5)
set ytics ("exact (0)" 1e-09, "1e-8" 1e-08, "1e-7" 1e-07, "1e-6" 1e-06, "1e-5" 1e-05, "1e-4" 0.0001, "1e-3" 0.001, "1e-2" 0.01, "1e-1" 0.1, "1" 1)
set object 1 rect from -0.8, graph 0 to 10.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 1 "out_prod" at 5, graph 1.025 center font ',11'
set object 2 rect from 14.2, graph 0 to 24.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 2 "mul_mat" at 19.5, graph 1.025 center font ',11'
set object 3 rect from 28.2, graph 0 to 51.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 3 "cross entropy" at 40, graph 1.025 center font ',11'
set object 4 rect from 55.2, graph 0 to 76.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 4 "ssm_conv" at 66, graph 1.025 center font ',11'
set object 5 rect from 80.2, graph 0 to 121.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 5 "ssm_scan" at 101, graph 1.025 center font ',11'
set object 6 rect from 125.2, graph 0 to 255.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 6 "glue ops" at 190.5, graph 1.025 center font ',11'
set object 7 rect from 259.2, graph 0 to 275.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 7 "train graphs" at 267.5, graph 1.025 center font ',11'
