# written by perf/report.py: op ticks and family bands of tolerance.tsv
xmax = 269.3
exact_y = 1e-09
none_y = 10
has_none = 0
top_y = 1
st_n0 = 211
st_n1 = 0
st_n2 = 0
st_n3 = 0
st_n4 = 0
set xtics ("out_prod" 5, "mul_mat" 19.5, "cross_entropy_loss" 33, "cross_entropy_loss_back" 44.5, "ssm_conv" 56.5, "ssm_conv_back" 66.5, "ssm_scan" 83.5, "ssm_scan_back" 104, "scale" 123, "neg" 132.5, "sqr" 142, "cont" 153, "sum" 164, "sum_rows" 175, "add" 187.5, "sub" 200, "mul" 211, "repeat" 222, "repeat_back" 233, "view_back" 244, "train_dense" 253.5, "train_xent" 257.5, "train_conv" 261.5, "train_scan" 266.5)
set ytics ("exact (0)" 1e-09, "1e-8" 1e-08, "1e-7" 1e-07, "1e-6" 1e-06, "1e-5" 1e-05, "1e-4" 0.0001, "1e-3" 0.001, "1e-2" 0.01, "1e-1" 0.1, "1" 1)
set object 1 rect from -0.8, graph 0 to 10.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 1 "out_prod" at 5, graph 1.025 center font ',11'
set object 2 rect from 14.2, graph 0 to 24.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 2 "mul_mat" at 19.5, graph 1.025 center font ',11'
set object 3 rect from 28.2, graph 0 to 49.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 3 "cross entropy" at 39, graph 1.025 center font ',11'
set object 4 rect from 53.2, graph 0 to 71.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 4 "ssm_conv" at 62.5, graph 1.025 center font ',11'
set object 5 rect from 75.2, graph 0 to 114.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 5 "ssm_scan" at 95, graph 1.025 center font ',11'
set object 6 rect from 118.2, graph 0 to 248.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 6 "glue ops" at 183.5, graph 1.025 center font ',11'
set object 7 rect from 252.2, graph 0 to 268.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 7 "train graphs" at 260.5, graph 1.025 center font ',11'
