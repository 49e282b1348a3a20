# SPDX-License-Identifier: GPL-2.0
# CDF of job completion times per policy on the testbed (solid), pooled over
# every run, and the simulator on the same workloads (dashed).
if (!exists("dir")) dir = "build/jct"
load 'user/bench/plots/common.gp'
set output dir.'/jct_cdf.png'
set title "JCT CDF on the namespace testbed (".base.")"
set xlabel "job completion time (ms)"
set ylabel "fraction of jobs"
set key bottom right
set yrange [0:1]
plot for [i=0:2] dir.'/jct_cdf.dat' index i using 1:2 with steps lw 2.5 lc rgb word(colors, i+1) \
	title word(policies, i+1).' (testbed)', \
     for [i=0:2] dir.'/jct_cdf.dat' index i+3 using 1:2 with steps lw 1.5 dt 2 lc rgb word(colors, i+1) \
	title word(policies, i+1).' (simulator)'
