# written by perf/report.py: op ticks and family bands of tolerance.tsv
xmax = 272.3
exact_y = 1e-09
none_y = 10
has_none = 0
top_y = 1
st_n0 = 214
st_n1 = 0
st_n2 = 0
st_n3 = 0
st_n4 = 0
set xtics ("out_prod" 5, "mul_mat" 19.5, "cross_entropy_loss" 33, "cross_entropy_loss_back" 45.5, "ssm_conv" 58.5, "ssm_conv_back" 68.5, "ssm_scan" 85.5, "ssm_scan_back" 106.5, "scale" 126, "neg" 135.5, "sqr" 145, "cont" 156, "sum" 167, "sum_rows" 178, "add" 190.5, "sub" 203, "mul" 214, "repeat" 225, "repeat_back" 236, "view_back" 247, "train_dense" 256.5, "train_xent" 260.5, "train_conv" 264.5, "train_scan" 269.5)
set ytics ("exact (0)" 1e-09, "1e-8" 1e-08, "1e-7" 1e-07, "1e-6" 1e-06, "1e-5" 1e-05, "1e-4" 0.0001, "1e-3" 0.001, "1e-2" 0.01, "1e-1" 0.1, "1" 1)
set object 1 rect from -0.8, graph 0 to 10.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 1 "out_prod" at 5, graph 1.025 center font ',11'
set object 2 rect from 14.2, graph 0 to 24.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 2 "mul_mat" at 19.5, graph 1.025 center font ',11'
set object 3 rect from 28.2, graph 0 to 51.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 3 "cross entropy" at 40, graph 1.025 center font ',11'
set object 4 rect from 55.2, graph 0 to 73.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 4 "ssm_conv" at 64.5, graph 1.025 center font ',11'
set object 5 rect from 77.2, graph 0 to 117.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 5 "ssm_scan" at 97.5, graph 1.025 center font ',11'
set object 6 rect from 121.2, graph 0 to 251.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 6 "glue ops" at 186.5, graph 1.025 center font ',11'
set object 7 rect from 255.2, graph 0 to 271.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 7 "train graphs" at 263.5, graph 1.025 center font ',11'
