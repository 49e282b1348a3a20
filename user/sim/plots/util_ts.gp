# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Slot utilisation over time at the sweep's base point, one panel per policy:
# slots aggregating (busy), held for an ack (atp) and unavailable to other
# jobs (occupied: busy, held or reserved in a switchml region).
if (!exists("dir")) dir = "build/sim"
load 'user/sim/plots/common.gp'
set terminal pngcairo size 1000,900 noenhanced font ",11"
set output dir.'/util_ts.png'
set multiplot layout 3,1 title "slot utilisation over time (".base.")"
set ylabel "share of the pool"
set yrange [0:1.05]
set key top right
do for [i=0:2] {
	set title word(policies, i+1)
	if (i == 2) { set xlabel "time (ms)" }
	plot dir.'/util_ts.dat' index i using 1:4 with lines lw 2 lc rgb "gray50" title "occupied", \
	     '' index i using 1:2 with lines lw 2 lc rgb "blue" title "aggregating", \
	     '' index i using 1:3 with lines lw 1 lc rgb "red" title "held (ack)"
}
unset multiplot
