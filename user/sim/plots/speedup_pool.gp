# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ESA's speedup in average JCT against pool size, one line per load.
if (!exists("dir")) dir = "build/sim"
load 'user/sim/plots/common.gp'
set output dir.'/speedup_pool.png'
set multiplot layout 1,2 title "baseline average JCT / esa average JCT against pool size (one line per offered load)"
set logscale x 2
set xlabel "pool size (slots of 256 int32)"
set ylabel "speedup of esa"
set key top right
n = words(loads)
set title "vs atp"
plot for [i=0:n-1] dir.'/grid_pool.dat' index i using 1:5 with linespoints lw 2 title 'load '.word(loads, i+1), \
     1 with lines dt 2 lc rgb "black" notitle
set title "vs switchml"
plot for [i=0:n-1] dir.'/grid_pool.dat' index i using 1:6 with linespoints lw 2 title 'load '.word(loads, i+1), \
     1 with lines dt 2 lc rgb "black" notitle
unset multiplot
