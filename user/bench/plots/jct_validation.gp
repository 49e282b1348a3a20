# SPDX-License-Identifier: GPL-2.0
# Validation: every job's JCT in the simulator against the testbed, per
# policy, on log axes, with the report's tolerances (esa 0.20, atp 0.35 in
# |log(sim/testbed)|; switchml's 0.30 lies between).
if (!exists("dir")) dir = "build/jct"
load 'user/bench/plots/common.gp'
set output dir.'/jct_validation.png'
set title "simulator vs testbed, per job (".base.")"
set xlabel "testbed JCT (ms)"
set ylabel "simulated JCT (ms)"
set logscale xy
stats dir.'/jobs.dat' using 1 nooutput
lo = STATS_min / 1.6
hi = STATS_max * 1.6
stats dir.'/jobs.dat' using 2 nooutput
lo = (STATS_min / 1.6 < lo) ? STATS_min / 1.6 : lo
hi = (STATS_max * 1.6 > hi) ? STATS_max * 1.6 : hi
set xrange [lo:hi]
set yrange [lo:hi]
set size square
set key top left
plot x with lines lc rgb "black" title "equal", \
     x*exp(0.20) with lines dt 2 lc rgb "gray40" title "x exp(+-0.20)", \
     x*exp(-0.20) with lines dt 2 lc rgb "gray40", \
     x*exp(0.35) with lines dt 3 lc rgb "gray60" title "x exp(+-0.35)", \
     x*exp(-0.35) with lines dt 3 lc rgb "gray60", \
     for [i=0:2] dir.'/jobs.dat' index i using 1:2 with points pt 7 ps 0.9 lc rgb word(colors, i+1) \
	title word(policies, i+1)
