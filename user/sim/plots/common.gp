# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared settings of the esa_sim plots.  Every script takes the sweep's
# output directory: gnuplot -e "dir='build/sim'" user/sim/plots/NAME.gp
if (!exists("dir")) dir = "build/sim"
load dir.'/grid_meta.gp'
set terminal pngcairo size 1000,600 noenhanced font ",11"
set grid
set key noautotitle
policies = "esa atp switchml"
