# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# One factor at a time around the base point: jobs, priority policy,
# window and host latency.
if (!exists("dir")) dir = "build/sim"
load 'user/sim/plots/common.gp'
set terminal pngcairo size 1100,800 noenhanced font ",11"
set output dir.'/speedup_dims.png'
set multiplot layout 2,2 title "speedup of esa around the base point (".base.")"
set ylabel "baseline avg JCT / esa avg JCT"
set key top left
set title "number of jobs"
set xlabel "jobs"
plot dir.'/sweep_jobs.dat' using 1:5 with linespoints lw 2 title "vs atp", \
     '' using 1:6 with linespoints lw 2 title "vs switchml", 1 with lines dt 2 lc rgb "black" notitle
set title "packet priority"
set xlabel "priority policy"
set xrange [-0.5:*]
set offsets 0, 0.5, 0, 0
plot dir.'/sweep_prio.dat' using 0:5:xtic(1) with linespoints lw 2 title "vs atp", \
     '' using 0:6 with linespoints lw 2 title "vs switchml", 1 with lines dt 2 lc rgb "black" notitle
set offsets 0, 0, 0, 0
set xrange [*:*]
set title "window per worker"
set xlabel "window (chunks)"
set logscale x 2
plot dir.'/sweep_window.dat' using 1:5 with linespoints lw 2 title "vs atp", \
     '' using 1:6 with linespoints lw 2 title "vs switchml", 1 with lines dt 2 lc rgb "black" notitle
set title "host-switch latency"
set xlabel "one-way latency (us)"
plot dir.'/sweep_prop.dat' using 1:5 with linespoints lw 2 title "vs atp", \
     '' using 1:6 with linespoints lw 2 title "vs switchml", 1 with lines dt 2 lc rgb "black" notitle
unset multiplot
