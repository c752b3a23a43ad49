# perf/report/common.gp — shared by the chart scripts. The caller (perf/report/plot.sh)
# sets rdir (this folder) and
# sets: dir (report directory), tname (svg | pngcairo | png), out (file),
# device (title text). Each chart sets W and H, then loads this to open the
# terminal.
if (tname eq 'svg') {
    set terminal svg size W,H dynamic noenhanced font 'Sans,12' background rgb 'white'
} else {
    if (tname eq 'pngcairo') {
        set terminal pngcairo size W,H noenhanced font 'Sans,11' background rgb 'white'
    } else {
        set terminal png size W,H noenhanced background rgb 'white'
    }
}
set output out
set datafile separator "\t"
set datafile missing "NaN"
set border lw 1
set grid lc rgb '#dddddd'
