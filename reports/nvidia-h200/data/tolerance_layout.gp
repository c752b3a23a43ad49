# written by perf/report/report.py: op ticks and family bands of tolerance.tsv
xmax = 277.3
exact_y = 1e-09
none_y = 10
has_none = 0
top_y = 1
st_n0 = 219
st_n1 = 0
st_n2 = 0
st_n3 = 0
st_n4 = 0
set xtics ("out_prod" 5, "mul_mat" 19.5, "cross_entropy_loss" 33, "cross_entropy_loss_back" 45.5, "ssm_conv" 58.5, "ssm_conv_back" 70, "ssm_scan" 88.5, "ssm_scan_back" 110.5, "scale" 131, "neg" 140.5, "sqr" 150, "cont" 161, "sum" 172, "sum_rows" 183, "add" 195.5, "sub" 208, "mul" 219, "repeat" 230, "repeat_back" 241, "view_back" 252, "train_dense" 261.5, "train_xent" 265.5, "train_conv" 269.5, "train_scan" 274.5)
set ytics ("exact (0)" 1e-09, "1e-8" 1e-08, "1e-7" 1e-07, "1e-6" 1e-06, "1e-5" 1e-05, "1e-4" 0.0001, "1e-3" 0.001, "1e-2" 0.01, "1e-1" 0.1, "1" 1)
set object 1 rect from -0.8, graph 0 to 10.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 1 "out_prod" at 5, graph 1.025 center font ',11'
set object 2 rect from 14.2, graph 0 to 24.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 2 "mul_mat" at 19.5, graph 1.025 center font ',11'
set object 3 rect from 28.2, graph 0 to 51.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 3 "cross entropy" at 40, graph 1.025 center font ',11'
set object 4 rect from 55.2, graph 0 to 76.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 4 "ssm_conv" at 66, graph 1.025 center font ',11'
set object 5 rect from 80.2, graph 0 to 122.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 5 "ssm_scan" at 101.5, graph 1.025 center font ',11'
set object 6 rect from 126.2, graph 0 to 256.8, graph 1 behind fc rgb '#fbf7ee' fs solid 1.0 noborder
set label 6 "glue ops" at 191.5, graph 1.025 center font ',11'
set object 7 rect from 260.2, graph 0 to 276.8, graph 1 behind fc rgb '#eef3fa' fs solid 1.0 noborder
set label 7 "train graphs" at 268.5, graph 1.025 center font ',11'
