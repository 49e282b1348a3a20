# SPDX-License-Identifier: GPL-2.0
# Validation: every job's JCT in the simulator against the testbed, per
# policy, on log axes, with the report's tolerances (esa 0.25, atp 0.65 in
# |log(sim/testbed)|; switchml's 0.45 lies between).
if (!exists("dir")) dir = "build/jct"
load 'user/bench/plots/common.gp'
set output dir.'/jct_validation.png'
set title "simulator vs testbed, per job (".base.")"
set xlabel "testbed JCT (ms)"
set ylabel "simulated JCT (ms)"
set logscale xy
set key top left
plot x with lines lc rgb "black" title "equal", \
     x*exp(0.25) with lines dt 2 lc rgb "gray40" title "x exp(+-0.25)", \
     x*exp(-0.25) with lines dt 2 lc rgb "gray40", \
     x*exp(0.65) with lines dt 3 lc rgb "gray60" title "x exp(+-0.65)", \
     x*exp(-0.65) with lines dt 3 lc rgb "gray60", \
     for [i=0:2] dir.'/jobs.dat' index i using 1:2 with points pt 7 ps 0.9 lc rgb word(colors, i+1) \
	title word(policies, i+1)
