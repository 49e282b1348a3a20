#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The JCT benchmark (`make jct`, as root): the simulator's seeded workload run
# under each slot policy on the namespace testbed, then reported beside the
# simulator on the same jobs (docs/evaluation.md).
#
#   ns esaj$$-sw:  the switch, ESA attached natively on one port per host,
#                  10.255.0.1:7680, reloaded with each policy
#   ns esaj$$-hI:  worker hosts 1..HOSTS (10.9.I.2); rank r of job j runs on
#                  host 1 + (3j + r) mod HOSTS, port 20000 + j
#   ns esaj$$-h250: esa-ps for every job (10.9.250.2:9000; -s: atp's acks)
#
# For each seed and repetition, each policy in turn (the order rotates so
# that no policy always runs first): load the switch, start a fresh esa-ps,
# `esa_jct run` (jobs registered at their arrival times, workers as threads
# in their hosts' namespaces, every sum checked), stop esa-ps, unload.  Then
# `esa_jct report`: tables, the simulator on the same workloads, the
# validation, plot data; gnuplot draws build/jct/*.png.  Everything created
# is removed on exit, interrupted or not.
#
# usage: user/bench/jct.sh [ -s SEEDS ] [ -r REPS ] [ -o DIR ] [ -P POLICIES ]
#                          [ -n ] [ -q ] [ -- esa_jct workload options ]
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}

SEEDS=1,2,3
REPS=1
OUT=$B/jct
QUIET=0
POLICIES=esa,atp,switchml
REPORT=1
# The benchmark's workload (esa_jct and esa_sim options; docs/evaluation.md
# explains the choices).  Arguments after -- replace these.
DEFAULT_ARGS=(--preset testbed)

usage() {
	sed -n '/^# usage/,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	cat <<EOF
  -s SEEDS   workload seeds, comma separated ($SEEDS)
  -r REPS    repetitions of each seed and policy ($REPS)
  -o DIR     where the runs, the report and the plots go ($OUT)
  -P LIST    policies to run ($POLICIES); the report needs all three
  -n         runs only: no report, no plots (calibration runs)
  -q         no per-run progress lines
Default workload options: ${DEFAULT_ARGS[*]}
EOF
	exit "${1:-0}"
}
while getopts "s:r:o:P:nqh" o; do
	case $o in
	s) SEEDS=$OPTARG ;;
	r) REPS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	P) POLICIES=$OPTARG ;;
	n) REPORT=0 ;;
	q) QUIET=1 ;;
	h) usage 0 ;;
	*) usage 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ $# -gt 0 ]; then ARGS=("$@"); else ARGS=("${DEFAULT_ARGS[@]}"); fi

die() { echo "jct: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (namespaces, XDP): sudo make jct"
for f in esactl esa-ps esa_jct esa_pass.bpf.o; do
	[ -e $B/$f ] || die "$B/$f missing: run 'make jct' (it builds everything)"
done
case $SEEDS in ''|*[!0-9,]*) die "-s: seeds like 1,2,3" ;; esac
case $REPS in ''|*[!0-9]*) die "-r: a number of repetitions" ;; esac
[ "$REPS" -ge 1 ] || die "-r: at least 1"

# The testbed's settings for this workload (pool, values, ageing, hosts).
ENV=$($B/esa_jct env "${ARGS[@]}") || die "bad workload options: ${ARGS[*]}"
eval "$ENV"

P=esaj$$
. selftests/hosts/topo.sh
mkdir -p "$OUT" || die "cannot create $OUT"
rm -f "$OUT"/run-*.txt "$OUT"/ps-*.json "$OUT"/*.png "$OUT"/*.dat
cleanup() {
	trap - EXIT INT TERM
	topo_cleanup
}
topo_init
trap cleanup EXIT
trap 'echo; echo "jct: interrupted" >&2; exit 130' INT TERM

t_start=$(date +%s)
topo_switch || die "cannot create the switch namespace"
for ((h = 1; h <= JCT_HOSTS; h++)); do
	topo_host $h || die "cannot create host $h"
done
topo_host 250 || die "cannot create the PS host"
[ $QUIET = 1 ] || echo "jct: testbed: switch, $JCT_HOSTS worker hosts, PS host; pool $JCT_POOL slots" >&2

IFS=, read -r -a POLS <<<"$POLICIES"
np=${#POLS[@]}
for pol in "${POLS[@]}"; do
	case $pol in esa|atp|switchml) ;; *) die "-P: esa, atp, switchml" ;; esac
done
IFS=, read -r -a SL <<<"$SEEDS"
nruns=$((${#SL[@]} * REPS * np))
k=0
rot=0
rc=0
for seed in "${SL[@]}"; do
	$B/esa_jct ps-jobs "${ARGS[@]}" --seed "$seed" >"$OUT/ps-jobs-s$seed.conf" ||
		die "esa_jct ps-jobs failed"
	for ((rep = 1; rep <= REPS; rep++)); do
		for ((i = 0; i < np; i++)); do
			pol=${POLS[$(((i + rot) % np))]}
			k=$((k + 1))
			run=$OUT/run-$pol-s$seed-r$rep.txt
			topo_load slots "$JCT_POOL" values "$JCT_NVALS" stale "$JCT_STALE" \
				policy "$pol" || die "cannot load the switch ($pol)"
			ip netns exec $P-h250 $B/esa-ps -j -s 10.255.0.1 -c "$OUT/ps-jobs-s$seed.conf" \
				>"$OUT/ps-$pol-s$seed-r$rep.json" 2>"$OUT/ps.err" &
			pspid=$!
			TOPO_PIDS="$TOPO_PIDS $pspid"
			for t in $(seq 50); do grep -q serving "$OUT/ps.err" && break; sleep 0.1; done
			grep -q serving "$OUT/ps.err" || { cat "$OUT/ps.err" >&2; die "esa-ps did not start"; }
			t0=$(date +%s.%N)
			$B/esa_jct run "${ARGS[@]}" --seed "$seed" --policy "$pol" --rep "$rep" \
				--pin "$PIN" --prefix "$P" --out "$run"
			r=$?
			t1=$(date +%s.%N)
			kill -TERM $pspid 2>/dev/null
			wait $pspid 2>/dev/null
			topo_unload
			if [ $r != 0 ]; then
				rc=1
				echo "jct: run $k/$nruns (seed $seed, rep $rep, $pol) FAILED" >&2
				continue
			fi
			[ $QUIET = 1 ] || awk -v k=$k -v n=$nruns -v s="$seed" -v rp=$rep -v p=$pol \
				-v t0="$t0" -v t1="$t1" '
				$1 == "job" { sum += $11; nj++ }
				$1 == "util" { u = $0 }
				END { printf "jct: run %d/%d: seed %s rep %s %-8s avg JCT %7.1f ms  (%s, %.0f s)\n",
				      k, n, s, rp, p, 1000 * sum / nj, u, t1 - t0 }' "$run" >&2
		done
		rot=$((rot + 1))
	done
done
[ $QUIET = 1 ] || echo "jct: testbed runs took $(($(date +%s) - t_start)) s" >&2
[ $REPORT = 1 ] || exit $rc

$B/esa_jct report "${ARGS[@]}" --dir "$OUT" --seeds "$SEEDS" --reps "$REPS" >"$OUT/report.txt"
rrc=$?
[ $rrc = 0 ] || rc=1
if command -v gnuplot >/dev/null; then
	for p in jct_cdf util_ts jct_validation; do
		gnuplot -e "dir='$OUT'" user/bench/plots/$p.gp >&2 || echo "jct: plot $p failed" >&2
	done
	[ $QUIET = 1 ] || echo "jct: plots in $OUT: jct_cdf.png util_ts.png jct_validation.png" >&2
else
	echo "jct: gnuplot missing (scripts/deps.sh plot): no plots" >&2
fi
cat "$OUT/report.txt"
exit $rc
