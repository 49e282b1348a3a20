# SPDX-License-Identifier: GPL-2.0
# The end-to-end benchmark: MB/s per rank against the tensor's size, one
# panel per rank count, one line per configuration (gloo thick and black).
# gnuplot -e "dir='build/e2e'; labels='gloo udp-256 ...'; ranks='2 4 8'" e2e.gp
# (user/bench/e2e_report.py writes dir/e2e.dat: a block per rank count and
# configuration, in that order.)
if (!exists("dir")) dir = "build/e2e"
set terminal pngcairo size 1200,450 noenhanced font ",10"
set output dir.'/e2e.png'
set grid
set logscale x 2
set xlabel "tensor (MB)"
set ylabel "MB/s per rank"
set yrange [0:*]
set offsets 0, 0, graph 0.3, 0
set key top right
colors = "#000000 #1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2"
nl = words(labels)
nr = words(ranks)
set multiplot layout 1, nr title "allreduce of float32 tensors: gloo and ESA on the namespace testbed"
do for [k = 1:nr] {
	set title word(ranks, k)." ranks"
	plot for [i = 1:nl] dir.'/e2e.dat' index (k - 1) * nl + i - 1 using 1:2 \
		with linespoints lw (i == 1 ? 3 : 1.5) pt 7 lc rgb word(colors, (i - 1) % 8 + 1) \
		title word(labels, i)
}
unset multiplot
