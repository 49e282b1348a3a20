#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The JCT benchmark over a grid (`make jct-sweep`, as root): user/bench/jct.sh
# at every point (pool, load, window) around the testbed preset, then one
# table of the testbed's and the simulator's speedups of esa side by side,
# with the validation verdict of each point (docs/evaluation.md), and a plot
# of both (DIR/jct_sweep.png).  Each point keeps its runs, report and plots
# in DIR/pPOOL-lLOAD-wWINDOW[-hHOME][-PRIO]/.  The last column is esa's
# speedup over the better of atp and switchml, testbed | simulator.
#
# usage: user/bench/jct-sweep.sh [ -s SEEDS ] [ -r REPS ] [ -o DIR ] [ -p POINTS ] [ -N ] [ -R ]
#   POINTS: space-separated POOL:LOAD:WINDOW[:HOME[:PRIO]] (HOME: esa_sim's
#   --home; PRIO: --prio, the preset's otherwise)
#   -N: the network-bound testbed (jct.sh -N, preset netbound); its points
#   -R: no runs: the table and the plot again from the points' reports in DIR
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}

SEEDS=1,2
REPS=1
RUNS=1
OUT=$B/jct/sweep
POINTS="16:2:32 16:4:32 16:8:32 64:2:32 64:4:32 64:8:32 256:2:32 256:4:32 256:8:32 16:4:8 64:4:8
64:2:32:32 64:4:32:32 64:8:32:32 256:4:32:32 256:8:32:32 16:4:8:8 16:8:8:8 64:4:8:8 64:8:8:8
256:8:8:8"

NETBOUND=0
NB_POINTS="16:4:32:16 8:4:32:8 32:4:32:32 16:2:32:16 16:6:32:16 16:4:16:16 16:4:32:16:static
16:4:32:16:srsf"
while getopts "s:r:o:p:NRh" o; do
	case $o in
	N) NETBOUND=1 ;;
	s) SEEDS=$OPTARG ;;
	r) REPS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	p) POINTS=$OPTARG PGIVEN=1 ;;
	R) RUNS= ;;
	h) sed -n '/^# usage/,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	   echo "  defaults: -s $SEEDS -r $REPS -o $OUT -p \"$POINTS\""; exit 0 ;;
	*) exit 2 ;;
	esac
done

PRESET=testbed
JCTN=
if [ $NETBOUND = 1 ]; then
	PRESET=netbound
	JCTN=-N
	[ -n "${PGIVEN:-}" ] || POINTS=$NB_POINTS
	[ "$OUT" = "$B/jct/sweep" ] && OUT=$B/jct-net/sweep
fi
mkdir -p "$OUT" || exit 1
t0=$(date +%s)
rc=0
point_file() {	# point_file POOL LOAD WINDOW HOME [PRIO]: the point's report
	echo "$OUT/p$1-l$2-w$3$( [ "$4" = 0 ] || echo "-h$4")${5:+-$5}.txt"
}
for pt in ${RUNS:+$POINTS}; do
	IFS=: read -r pool load win home prio <<<"$pt"
	home=${home:-0}
	d=$(point_file $pool $load $win $home $prio)
	d=${d%.txt}
	echo "jct-sweep: pool $pool, load $load, window $win, home $home${prio:+, prio $prio}" \
		"(seeds $SEEDS, $REPS run(s) each)" >&2
	user/bench/jct.sh $JCTN -q -s "$SEEDS" -r "$REPS" -o "$d" -- --preset $PRESET \
		--pool "$pool" --load "$load" --window "$win" --home "$home" ${prio:+--prio $prio} \
		>"$d.txt" 2>"$d.err" || rc=1
	grep '^jct:' "$d.txt" | sed 's/^/  testbed /' >&2
	grep '^sim-jct:' "$d.txt" | sed 's/^sim-jct:/  sim     jct:/' >&2
done

# One table: testbed and simulator side by side, and gnuplot data.  KV:
# the value of key k in a report's "jct: esa=... speedup_vs_atp=..." line.
KV='function kv(s, k,   a, i, n) { n = split(s, a, /[ =]/)
	for (i = 1; i < n; i++) if (a[i] == k) return a[i + 1]; return "nan" }
	function better(s,   a, w) { a = kv(s, "speedup_vs_atp"); w = kv(s, "speedup_vs_switchml")
	return a + 0 < w + 0 ? a : w }'
for pt in $POINTS; do
	IFS=: read -r pool load win home prio <<<"$pt"
	f=$(point_file $pool $load $win ${home:-0} $prio)
	grep -q '^jct:' "$f" 2>/dev/null || { echo "jct-sweep: $f: no report" >&2; rc=1; }
done
{
	printf '%-5s %-5s %-6s %-4s | %-28s | %-28s | %-26s | %s\n' pool load window home \
		"testbed esa/atp/swml (ms)" "sim esa/atp/swml (ms)" \
		"speedup atp,swml: tb | sim" "validation; prio; vs better: tb | sim"
	for pt in $POINTS; do
		IFS=: read -r pool load win home prio <<<"$pt"
		home=${home:-0}
		f=$(point_file $pool $load $win $home $prio)
		awk -v pool=$pool -v load=$load -v win=$win -v home=$home -v prio=${prio:--} "$KV"'
		/^jct:/ { t = $0 } /^sim-jct:/ { m = $0 } /^validation:/ { v = $2 }
		/^machine/ { o = $0; sub(/.*at most /, "", o); sub(/\)/, "", o) }
		END { printf "%-5s %-5s %-6s %-4s | %8.0f %8.0f %8.0f    | %8.0f %8.0f %8.0f    " \
			"| %5.2f %5.2f | %5.2f %5.2f | %s (others <= %s) %s %5.2f | %5.2f\n",
			pool, load, win, home, 1000 * kv(t, "esa"), 1000 * kv(t, "atp"), 1000 * kv(t, "switchml"),
			1000 * kv(m, "esa"), 1000 * kv(m, "atp"), 1000 * kv(m, "switchml"),
			kv(t, "speedup_vs_atp"), kv(t, "speedup_vs_switchml"),
			kv(m, "speedup_vs_atp"), kv(m, "speedup_vs_switchml"), v, o, prio,
			better(t), better(m) }' "$f"
	done
} | tee "$OUT/sweep.txt"
{
	echo "# pool load window home tb_vs_atp tb_vs_switchml sim_vs_atp sim_vs_switchml"
	for pt in $POINTS; do
		IFS=: read -r pool load win home prio <<<"$pt"
		home=${home:-0}
		awk -v pool=$pool -v load=$load -v win=$win -v home=$home "$KV"'
		/^jct:/ { t = $0 } /^sim-jct:/ { m = $0 }
		END { print pool, load, win, home, kv(t, "speedup_vs_atp"), kv(t, "speedup_vs_switchml"),
			kv(m, "speedup_vs_atp"), kv(m, "speedup_vs_switchml") }' \
			"$(point_file $pool $load $win $home $prio)"
	done
} >"$OUT/sweep.dat"
if command -v gnuplot >/dev/null; then
	gnuplot -e "dir='$OUT'" user/bench/plots/jct_sweep.gp || rc=1
else
	echo "jct-sweep: gnuplot missing (scripts/deps.sh plot): no plot" >&2
fi
echo "jct-sweep: $(($(date +%s) - t0)) s; table in $OUT/sweep.txt, plot $OUT/jct_sweep.png" >&2
exit $rc
