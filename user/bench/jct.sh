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
#   ns esaj$$-h250: esa-ps for every job (10.9.250.2:9000; -s: atp's acks),
#                  or with a PS per job (--ps-hosts 0) esaj$$-h201.. (one each)
#
# For each seed and repetition, each policy in turn (the order rotates so
# that no policy always runs first): load the switch, start a fresh esa-ps,
# `esa_jct run` (jobs registered at their arrival times, workers as threads
# in their hosts' namespaces, every sum checked), stop esa-ps, unload.  Then
# `esa_jct report`: tables, the simulator on the same workloads, the
# validation, plot data; gnuplot draws DIR/*.png.  With -C, the calibration
# microbenchmarks instead (`esa_jct calib`: the testbed preset's numbers).
# Everything created is removed on exit, interrupted or not.
#
# With -L RATE every host's link (the PS's too) is shaped to RATE by tbf in
# both directions, through a bridge namespace per host (topo_shape), or with
# -M ifb in the host (its egress, and an IFB for what it receives:
# topo_shape_host; measured at 1.9x the bridge's CPU per packet here,
# docs/evaluation.md), and the simulator is told (--link-gbps and
# --ps-link-gbps, unless given).
#
# -N: the network-bound testbed (preset netbound, docs/evaluation.md): every
# rank on a host and link of its own, links at 100 Mbit/s with 1 ms of
# emulated propagation each way (libesa's link_delay_us, esa-ps
# --link-delay-us), compute dilated to match, one esa-ps per job on its own
# host and link (-- --ps-hosts 1: one for all jobs).  UDP only.
#
# With -I xdp the workers (esa_jct's libesa) and esa-ps run on AF_XDP, each
# host's eth0 queue 0 (unshaped hosts get their NAPI by GRO, leaving eth0's
# XDP hook free; shaped ones go through their wire namespace anyway).
#
# usage: user/bench/jct.sh [ -s SEEDS ] [ -r REPS ] [ -o DIR ] [ -P POLICIES ]
#                          [ -L RATE ] [ -M ifb|wire ] [ -N ] [ -I IO ] [ -n ]
#                          [ -C ] [ -q ] [ -- esa_jct workload options ]
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}

SEEDS=1,2,3
REPS=3
OUT=$B/jct
QUIET=0
POLICIES=esa,atp,switchml
REPORT=1
CALIB=0
RATE=
SHAPE=wire
NETBOUND=0
IO=udp
JCT_MAX_OTHERS=${JCT_MAX_OTHERS:-10}
JCT_RETRIES=${JCT_RETRIES:-3}
# The benchmark's workload: esa_jct's and esa_sim's options, after the
# testbed preset (docs/evaluation.md explains the choices), with homes as
# `esactl job add ... region auto 32` places them (what the demo and the
# docs recommend) and least-attained-service priorities; `-- --preset
# testbed` runs the paper's hash placement with static priorities.
# Arguments after -- replace these.
DEFAULT_ARGS=(--preset testbed --home 32 --prio las)

usage() {
	sed -n '/^# usage/,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	cat <<EOF
  -s SEEDS   workload seeds, comma separated ($SEEDS)
  -r REPS    repetitions of each seed and policy ($REPS)
  -o DIR     where the runs, the report and the plots go ($OUT)
  -P LIST    policies to run ($POLICIES); the report needs all three
  -L RATE    shape every host link to RATE (tc's units: 300mbit, 1gbit)
  -M HOW     how: wire (a bridge namespace per host, the default) or ifb (in
             each host: 1.9x wire's CPU per packet on this kind of machine)
  -N         network-bound: preset netbound, links at 100mbit (or -L), 1 ms
             of emulated propagation, every rank its own link, a PS per job
  -I IO      the workers' and esa-ps's transport: udp, xdp or auto ($IO)
  -n         runs only: no report, no plots
  -C         calibration: the microbenchmarks of the testbed preset, into
             DIR/calib (workload options are ignored)
  -q         no per-run progress lines
Default workload options: ${DEFAULT_ARGS[*]}
A run during which other processes took more than JCT_MAX_OTHERS% ($JCT_MAX_OTHERS) of
the machine is repeated up to JCT_RETRIES ($JCT_RETRIES) times.
EOF
	exit "${1:-0}"
}
while getopts "s:r:o:P:L:M:NI:nCqh" o; do
	case $o in
	s) SEEDS=$OPTARG ;;
	r) REPS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	P) POLICIES=$OPTARG ;;
	L) RATE=$OPTARG ;;
	M) SHAPE=$OPTARG ;;
	N) NETBOUND=1 ;;
	I) IO=$OPTARG ;;
	n) REPORT=0 ;;
	C) CALIB=1 ;;
	q) QUIET=1 ;;
	h) usage 0 ;;
	*) usage 2 ;;
	esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ $NETBOUND = 1 ]; then
	DEFAULT_ARGS=(--preset netbound --prio las)
	# the preset's link rate is 100mbit's as calibrated (tbf passes a
	# little more): the simulator is told another rate only with -L
	[ -n "$RATE" ] || { RATE=100mbit; PRESET_RATE=1; }
	[ "$IO" = udp ] || { echo "jct: -N: io udp only (the link delay is held in the UDP transport)" >&2; exit 1; }
fi
if [ $# -gt 0 ]; then ARGS=("$@"); else ARGS=("${DEFAULT_ARGS[@]}"); fi
# -N with workload options of its own: the netbound preset first
[ $NETBOUND = 1 ] && [[ " ${ARGS[*]} " != *" --preset "* ]] && ARGS=(--preset netbound "${ARGS[@]}")

die() { echo "jct: $*" >&2; exit 1; }
say() { [ $QUIET = 1 ] || echo "jct: $*" >&2; }
[ "$(id -u)" = 0 ] || die "run as root (namespaces, XDP): sudo make jct"
for f in esactl esa-ps esa_jct esa_pass.bpf.o; do
	[ -e $B/$f ] || die "$B/$f missing: run 'make jct' (it builds everything)"
done
case $SEEDS in ''|*[!0-9,]*) die "-s: seeds like 1,2,3" ;; esac
case $REPS in ''|*[!0-9]*) die "-r: a number of repetitions" ;; esac
[ "$REPS" -ge 1 ] || die "-r: at least 1"
IFS=, read -r -a POLS <<<"$POLICIES"
for pol in "${POLS[@]}"; do
	case $pol in esa|atp|switchml) ;; *) die "-P: esa, atp, switchml" ;; esac
done
case $IO in udp|xdp|auto) ;; *) die "-I: udp, xdp or auto, not \"$IO\"" ;; esac
case $SHAPE in ifb|wire) ;; *) die "-M: ifb or wire, not \"$SHAPE\"" ;; esac
[ "$SHAPE" = ifb ] && [ -n "$RATE" ] && [ "$IO" != udp ] &&
	die "-L with -M ifb: io udp only (AF_XDP's frames pass no qdisc in the host; -M wire)"
IFS=, read -r -a SL <<<"$SEEDS"
if [ -n "$RATE" ]; then
	[[ $RATE =~ ^([0-9]+(\.[0-9]+)?)(k|m|g)?bit$ ]] || die "-L: a rate like 300mbit or 1gbit, not \"$RATE\""
	GBPS=$(awk -v v="${BASH_REMATCH[1]}" -v u="${BASH_REMATCH[3]}" \
		'BEGIN { printf "%g", v * (u == "g" ? 1 : u == "m" ? 1e-3 : u == "k" ? 1e-6 : 1e-9) }')
	if [ -z "${PRESET_RATE:-}" ]; then
		[[ " ${ARGS[*]} " == *" --link-gbps "* ]] || ARGS+=(--link-gbps "$GBPS")
		[[ " ${ARGS[*]} " == *" --ps-link-gbps "* ]] || ARGS+=(--ps-link-gbps "$GBPS")
	fi
	[ $CALIB = 0 ] || [ $NETBOUND = 1 ] ||
		die "-L: not with -C (the calibration measures the hosts unshaped; -C -N the network-bound testbed)"
fi

# The calibration microbenchmarks (docs/evaluation.md, "Calibration"): one
# job, or four at once, of a VGG-16-sized gradient with no compute and no
# stragglers, on a pool large enough for no contention.
CAL_BASE=(--preset testbed --models vgg16 --compute-scale 0 --straggle 0 --pool 4096 --iters 30)
# -N: the same on the network-bound testbed, windows of 32 on no home (the
# pool is large: nothing is contended), fewer iterations (a link's rate)
[ $NETBOUND = 1 ] && CAL_BASE=(--preset netbound --models vgg16 --compute-scale 0 --straggle 0
			      --pool 4096 --home 0 --window 32 --iters 8)
declare -A CAL=(
	[rtt]="esa --jobs 1 --workers 2 --window 1"
	[w2]="esa --jobs 1 --workers 2"
	[w4]="esa --jobs 1 --workers 4"
	[conc]="switchml --jobs 4 --rate 1000 --workers 2 --switchml-regions 4"
	[ps]="switchml --jobs 1 --workers 4 --noslot"
)
CAL_ORDER="rtt w2 w4 conc ps"

# The testbed's settings (pool, values, ageing, hosts) for the arguments.
if [ $CALIB = 1 ]; then
	ENV=$($B/esa_jct env "${CAL_BASE[@]}") || die "bad calibration options"
else
	ENV=$($B/esa_jct env "${ARGS[@]}") || die "bad workload options: ${ARGS[*]}"
fi
eval "$ENV"

P=esaj$$
. selftests/hosts/topo.sh
mkdir -p "$OUT" || die "cannot create $OUT"
cleanup() {
	trap - EXIT INT TERM
	topo_cleanup
}
topo_init
trap cleanup EXIT
trap 'echo; echo "jct: interrupted" >&2; exit 130' INT TERM

t_start=$(date +%s)
topo_switch || die "cannot create the switch namespace"
# NAPI by GRO on straight links: eth0's XDP hook stays free for AF_XDP (-I)
read -r -a PSH <<<"$JCT_PSHOSTS"
WIRE=
[ -n "$RATE" ] && [ "$SHAPE" = wire ] && WIRE=wire
for h in $(seq 1 "$JCT_HOSTS") "${PSH[@]}"; do
	TOPO_NAPI=gro topo_host $h $WIRE || die "cannot create host $h"
done
# shape_host H: host H's link to RATE, both ways; what tc says of it
shape_host() {
	local d
	if [ -n "$WIRE" ]; then
		topo_shape $1 "$RATE" || return 1
		for d in tosw tohost; do
			echo "h$1 $d $(ip netns exec $P-w$1 tc qdisc show dev $d root)"
		done
	else
		topo_shape_host $1 "$RATE" || return 1
		for d in eth0 ifb0; do
			echo "h$1 $d $(tc -n $P-h$1 qdisc show dev $d root)"
		done
	fi
}
if [ -n "$RATE" ]; then
	for h in $(seq 1 "$JCT_HOSTS") "${PSH[@]}"; do
		shape_host $h || die "cannot shape host $h's link to $RATE"
	done >"$OUT/shaping.txt"
fi
say "testbed: a switch, $JCT_HOSTS worker hosts and ${#PSH[@]} PS host(s)${RATE:+, every link shaped to $RATE ($SHAPE)}$([ "${JCT_DELAY:-0}" != 0 ] && echo ", $JCT_DELAY us of propagation each way")"

# one_run POLICY SEED REP DIR LABEL ARGS...: one run on a fresh switch and
# PS; a run during which other processes took more than JCT_MAX_OTHERS % of
# the machine is repeated (at most JCT_RETRIES more times): it measured them.
# start_ps DIR OUT: an esa-ps on every PS host for the jobs of
# DIR/ps-jobs.conf whose PS it is, counters in OUT (one JSON line each);
# their pids in pspids (topo_start_ps: one silent for 20 s is killed, its
# kernel stack logged in DIR/ps-hung.txt, and started again).
start_ps() {
	local h conf
	pspids=()
	for h in "${PSH[@]}"; do
		conf=$1/ps-jobs-h$h.conf
		awk -v ps="10.9.$h.2:" '$1 == "values" || index($0, " ps " ps)' \
			"$1/ps-jobs.conf" >"$conf"
		# a run of fewer jobs than PS hosts (the calibration's): no PS
		grep -q " ps 10.9.$h.2:" "$conf" || continue
		topo_start_ps $h "$2.h$h" "$1/ps-h$h.err" "$1/ps-hung.txt" -- \
			-j -s 10.255.0.1 --io $IO --ifname eth0 --sums $JCT_PSSUMS \
			${JCT_DELAY:+--link-delay-us $JCT_DELAY} -c "$conf" ||
			{ echo "jct: $TOPO_PSWHY" >&2; return 1; }
		pspids+=($TOPO_PSPID)
	done
}

# stop_ps OUT: every esa-ps of the run, their counters into OUT (one file)
stop_ps() {
	local pid h
	for pid in "${pspids[@]}"; do
		topo_stop $pid "$DIR_HUNG"
	done
	for h in "${PSH[@]}"; do
		cat "$1.h$h" 2>/dev/null
		rm -f "$1.h$h"
	done >"$1"
}

one_run() {
	local try others
	for ((try = 0; ; try++)); do
		one_try "$@" || return 1
		others=$(sed -n 's/^cpu .* others=\([0-9.]*\).*/\1/p' "$4/run-$1-s$2-r$3.txt")
		awk -v o="${others:-0}" -v m="$JCT_MAX_OTHERS" 'BEGIN { exit !(100 * o > m) }' ||
			return 0
		if [ $try -ge "$JCT_RETRIES" ]; then
			echo "jct: $5: other processes took $(awk -v o="$others" \
				'BEGIN { printf "%.0f", 100 * o }')% of the machine in every try; kept" >&2
			return 0
		fi
		say "$5: other processes took $(awk -v o="$others" 'BEGIN { printf "%.0f", 100 * o }')%" \
			"of the machine: again in 10 s"
		sleep 10
	done
}

one_try() {
	local pol=$1 seed=$2 rep=$3 dir=$4 label=$5 pspids r t0 t1 run
	shift 5
	run=$dir/run-$pol-s$seed-r$rep.txt
	eval "$($B/esa_jct env "$@")"
	$B/esa_jct ps-jobs "$@" --seed "$seed" >"$dir/ps-jobs.conf" || die "esa_jct ps-jobs failed"
	# an AF_XDP program (-I xdp) outlives its process by a moment: again
	for t in 1 2 3; do
		topo_load slots "$JCT_POOL" values "$JCT_NVALS" stale "$JCT_STALE" policy "$pol" \
			ps-copy "$JCT_PSCOPY" && break
		topo_unload
		[ $t = 3 ] && die "cannot load the switch ($pol)"
		sleep 1
	done
	DIR_HUNG=$dir/ps-hung.txt
	start_ps "$dir" "$dir/ps-$pol-s$seed-r$rep.json" || die "esa-ps did not start in 3 tries"
	t0=$(date +%s.%N)
	# in the switch's namespace: registration resolves the workers' ports
	nsenter --net=/run/netns/$SW $B/esa_jct run "$@" --seed "$seed" \
		--policy "$pol" --rep "$rep" --io $IO \
		--pin "$PIN" --prefix "$P" --ps-pid "$(IFS=,; echo "${pspids[*]}")" --out "$run"
	r=$?
	t1=$(date +%s.%N)
	stop_ps "$dir/ps-$pol-s$seed-r$rep.json"
	topo_unload
	if [ $r != 0 ]; then
		echo "jct: $label (seed $seed, rep $rep, $pol) FAILED" >&2
		return 1
	fi
	[ $QUIET = 1 ] || awk -v l="$label" -v s="$seed" -v rp=$rep -v p=$pol \
		-v t0="$t0" -v t1="$t1" '
		$1 == "job" { sum += $11; nj++ }
		$1 == "util" { u = $2 " " $3 " " $4 }
		$1 == "cpu" { c = $7 " " $10 }
		END { printf "jct: %s: seed %s rep %s %-8s avg JCT %7.1f ms  %s %s (%.0f s)\n",
		      l, s, rp, p, 1000 * sum / nj, u, c, t1 - t0 }' "$run" >&2
	return 0
}

rc=0
if [ $CALIB = 1 ]; then
	for name in $CAL_ORDER; do
		read -r pol rest <<<"${CAL[$name]}"
		mkdir -p "$OUT/calib/$name"
		rm -f "$OUT/calib/$name"/run-*.txt
		for seed in "${SL[@]}"; do
			# shellcheck disable=SC2086
			one_run "$pol" "$seed" 1 "$OUT/calib/$name" "calib $name" \
				"${CAL_BASE[@]}" $rest || rc=1
		done
	done
	say "calibration runs took $(($(date +%s) - t_start)) s"
	$B/esa_jct calib $([ $NETBOUND = 1 ] && echo --preset netbound) --dir "$OUT/calib" \
		--seeds "$SEEDS" || rc=1
	exit $rc
fi

rm -f "$OUT"/run-*.txt "$OUT"/ps-*.json "$OUT"/*.png "$OUT"/*.dat
np=${#POLS[@]}
nruns=$((${#SL[@]} * REPS * np))
k=0
rot=0
for seed in "${SL[@]}"; do
	for ((rep = 1; rep <= REPS; rep++)); do
		for ((i = 0; i < np; i++)); do
			pol=${POLS[$(((i + rot) % np))]}
			k=$((k + 1))
			one_run "$pol" "$seed" "$rep" "$OUT" "run $k/$nruns" "${ARGS[@]}" || rc=1
		done
		rot=$((rot + 1))
	done
done
say "testbed runs took $(($(date +%s) - t_start)) s"
[ $REPORT = 1 ] || exit $rc

$B/esa_jct report "${ARGS[@]}" --dir "$OUT" --seeds "$SEEDS" --reps "$REPS" >"$OUT/report.txt"
[ $? = 0 ] || rc=1
if command -v gnuplot >/dev/null; then
	for p in jct_cdf util_ts jct_validation; do
		gnuplot -e "dir='$OUT'" user/bench/plots/$p.gp >&2 || echo "jct: plot $p failed" >&2
	done
	say "plots: $OUT/jct_cdf.png $OUT/util_ts.png $OUT/jct_validation.png"
else
	echo "jct: gnuplot missing (scripts/deps.sh plot): no plots" >&2
fi
cat "$OUT/report.txt"
exit $rc
