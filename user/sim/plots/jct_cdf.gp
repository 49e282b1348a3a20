# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# CDF of job completion times per policy at the sweep's base point.
if (!exists("dir")) dir = "build/sim"
load 'user/sim/plots/common.gp'
set output dir.'/jct_cdf.png'
set title "JCT CDF per allocation policy (".base.")"
set xlabel "job completion time (ms)"
set ylabel "fraction of jobs"
set key bottom right
set yrange [0:1]
plot for [i=0:2] dir.'/jct_cdf.dat' index i using 1:2 with steps lw 2 title word(policies, i+1)
