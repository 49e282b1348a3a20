# SPDX-License-Identifier: GPL-2.0
# Shared settings of the JCT benchmark's plots (esa_jct report writes the data).
# gnuplot -e "dir='build/jct'" user/bench/plots/NAME.gp
if (!exists("dir")) dir = "build/jct"
load dir.'/meta.gp'
set terminal pngcairo size 900,560 noenhanced font ",11"
set grid
set key noautotitle
policies = "esa atp switchml"
colors = "#1f77b4 #d62728 #2ca02c"
