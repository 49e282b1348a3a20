# SPDX-License-Identifier: GPL-2.0
# The testbed sweep (jct-sweep.sh writes DIR/sweep.dat): esa's speedup over
# atp and over switchml at every point, the testbed's as bars and the
# simulator's on the same jobs as points; 1 is a tie, 1.35 the paper's goal.
# gnuplot -e "dir='build/jct/sweep'" user/bench/plots/jct_sweep.gp
if (!exists("dir")) dir = "build/jct/sweep"
set terminal pngcairo size 1100,880 noenhanced font ",10"
set output dir.'/jct_sweep.png'
stats dir.'/sweep.dat' using 1 nooutput
n = STATS_records
set grid ytics
set key top right horizontal opaque
set style fill solid 0.6 border -1
set boxwidth 0.6
set xrange [-0.7:n - 0.3]
set lmargin 10
set rmargin 3
lbl(p, l, w, h) = sprintf("pool %d load %d w %d %s", p, l, w, h == 0 ? "hash" : sprintf("home %d", h))
set multiplot title "JCT benchmark on the namespace testbed: esa's speedup at every sweep point"
set origin 0, 0.58
set size 1, 0.38
set title "against atp"
set ylabel "baseline JCT / esa JCT"
set yrange [0.8:2]
set xtics format ""
set bmargin 1
plot dir.'/sweep.dat' using 0:5 with boxes lc rgb "#d62728" title "testbed", \
     '' using 0:7 with points pt 7 ps 1.2 lc rgb "black" title "simulator", \
     1 with lines lc rgb "black" notitle, \
     1.35 with lines dt 2 lc rgb "gray40" title "1.35"
set origin 0, 0
set size 1, 0.58
set title "against switchml"
set yrange [0.8:1.5]
set bmargin 13
set xtics rotate by 60 right format "%g"
plot dir.'/sweep.dat' using 0:6:xtic(lbl($1, $2, $3, $4)) with boxes lc rgb "#2ca02c" title "testbed", \
     '' using 0:8 with points pt 7 ps 1.2 lc rgb "black" title "simulator", \
     1 with lines lc rgb "black" notitle, \
     1.35 with lines dt 2 lc rgb "gray40" title "1.35"
unset multiplot
