# perf/report/train_loss.gp — the loss curves of `vkgrad train` (perf/run.sh's
# short run per model): training loss per step (lines) and validation loss
# (points) of each train_<model>.csv in dir, against the uniform guess ln 128.
# Set by plot.sh as for the other charts (common.gp), plus models: the model
# names with a CSV, space-separated.
W = 900; H = 480
load rdir.'/common.gp'
set datafile separator ","
set title 'vkgrad train on '.device.': character-level loss (nats), fortunes corpus'
set xlabel 'step'
set ylabel 'cross-entropy (nats)'
set key top right
set yrange [0:*]
set arrow 1 from graph 0, first log(128) to graph 1, first log(128) nohead dt 2 lc rgb '#888888'
set label 1 'uniform guess, ln 128' at graph 0.3, first log(128) offset 0,0.8 tc rgb '#666666'
colors = '#1f77b4 #d62728 #2ca02c'
plot for [i=1:words(models)] dir.'/train_'.word(models, i).'.csv' \
         using 1:2 every ::2 with lines lw 1.2 lc rgb word(colors, i) \
         title word(models, i).' train', \
     for [i=1:words(models)] dir.'/train_'.word(models, i).'.csv' \
         using 1:3 with linespoints pt 7 ps 0.7 lc rgb word(colors, i) \
         title word(models, i).' validation'
