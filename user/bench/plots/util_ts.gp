# SPDX-License-Identifier: GPL-2.0
# Slot utilisation over time on the testbed, one panel per policy (the first
# seed's first run, sampled from the slots map every few ms): slots
# aggregating, held for the PS's ack (atp), and unavailable to other jobs
# (occupied: aggregating, held, or reserved in a switchml region).
if (!exists("dir")) dir = "build/jct"
load 'user/bench/plots/common.gp'
set terminal pngcairo size 800,700 noenhanced font ",10"
set output dir.'/util_ts.png'
set multiplot layout 3,1 title "slot utilisation over time on the testbed (".base.")"
set ylabel "share of the pool"
set yrange [0:1.05]
set key top right
do for [i=0:2] {
	set title word(policies, i+1)
	if (i == 2) { set xlabel "time (s)" }
	plot dir.'/util_ts.dat' index i using 1:4 with lines lw 2 lc rgb "gray50" title "occupied", \
	     '' index i using 1:2 with lines lw 2 lc rgb "blue" title "aggregating", \
	     '' index i using 1:3 with lines lw 1 lc rgb "red" title "held (ack)"
}
unset multiplot
