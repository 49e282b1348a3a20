# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ESA's speedup in average JCT against load, one line per pool size.
if (!exists("dir")) dir = "build/sim"
load 'user/sim/plots/common.gp'
set output dir.'/speedup_load.png'
set multiplot layout 1,2 title "baseline average JCT / esa average JCT against offered load (one line per pool size)"
set logscale x 2
set xlabel "offered load (mean concurrent jobs if each ran alone)"
set ylabel "speedup of esa"
set key top left
n = words(pools)
set title "vs atp"
plot for [i=0:n-1] dir.'/grid_load.dat' index i using 1:5 with linespoints lw 2 title 'pool '.word(pools, i+1), \
     1 with lines dt 2 lc rgb "black" notitle
set title "vs switchml"
plot for [i=0:n-1] dir.'/grid_load.dat' index i using 1:6 with linespoints lw 2 title 'pool '.word(pools, i+1), \
     1 with lines dt 2 lc rgb "black" notitle
unset multiplot
