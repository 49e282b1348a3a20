# SPDX-License-Identifier: GPL-2.0
# Validation: every job's JCT in the simulator against the testbed, per
# policy, on log axes; the band is the per-job tolerance of the report.
if (!exists("dir")) dir = "build/jct"
load 'user/bench/plots/common.gp'
set output dir.'/jct_validation.png'
set title "simulator vs testbed, per job (".base.")"
set xlabel "testbed JCT (ms)"
set ylabel "simulated JCT (ms)"
set logscale xy
set key top left
if (!exists("tol")) tol = 0.35
plot x with lines lc rgb "black" title "equal", \
     x*exp(tol) with lines dt 2 lc rgb "gray50" title sprintf("x exp(+-%.2f)", tol), \
     x*exp(-tol) with lines dt 2 lc rgb "gray50", \
     for [i=0:2] dir.'/jobs.dat' index i using 1:2 with points pt 7 ps 0.9 lc rgb word(colors, i+1) \
	title word(policies, i+1)
