#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench-multirack: what two levels save on the leaf-spine links, on the
# namespace testbed (selftests/tiers/topo.sh) and in the simulator.
#
# Testbed: two leaves with 4 ranks of one job each (2 hosts of 2 workers),
# their links to the spine shaped to MULTIRACK_RATE.  The same job runs
#   flat       one ESA box, the spine, reached through the leaves, which
#              only route: every worker's packets and results cross a link;
#   two-level  ESA at each leaf and at the spine: one sum per leaf goes up,
#              one result per leaf comes down;
# in the same run, and the bytes on both directions of both links are
# counted (tx of the wire's bridge ports) per allreduce, with the time of
# an allreduce (esa-jobs' job time / iterations).  Then the simulator's
# multi-rack comparison (make bench-multirack-sim: average JCT of esa, atp
# and switchml, flat and two-level).  The last line:
#   multirack: uplink_bytes_ratio=<flat/two-level, testbed> jct_speedup_vs_flat=<simulator, esa>
# Needs root.  MULTIRACK_ITERS, MULTIRACK_ELEMS, MULTIRACK_RATE, MULTIRACK_WORKER
# (libesa settings of the workers), MULTIRACK_SIM_ARGS.
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}
P=esamr$$
ITERS=${MULTIRACK_ITERS:-8}
ELEMS=${MULTIRACK_ELEMS:-256K}
RATE=${MULTIRACK_RATE:-200mbit}
# a window whose bytes fit the shaped link's queue: no timeouts from queueing
WORKER=${MULTIRACK_WORKER:-window=32 timeout_ms=50}
PS=10.9.250.2:9000
die() { echo "multirack: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (namespaces)"
for f in esactl esa-jobs esa-ps esa_pass.bpf.o esa_sim; do
	[ -e $B/$f ] || die "$B/$f missing (run make)"
done
. selftests/tiers/topo.sh
tiers_init
LOG=$(mktemp -d)
cleanup() { [ -n "${PSPID:-}" ] && kill $PSPID 2>/dev/null; tiers_cleanup; rm -rf "$LOG"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

tiers_setup 2 1.1 1.2 2.1 2.2 || die "topology"
tiers_shape 1 $RATE && tiers_shape 2 $RATE || die "shaping the links"

# The job: ranks 0-3 under leaf 1, 4-7 under leaf 2, two per host.
ADDRS=() LEAF=() HOST=()
for x in 1.1 1.2 2.1 2.2; do
	for port in 6001 6011; do
		ADDRS+=("10.$((10 + ${x%.*})).${x#*.}.2:$port")
		LEAF+=(${x%.*})
		HOST+=($x)
	done
done

# register MODE: the job at the boxes of MODE (flat: the spine alone).
register() {
	local l i w
	if [ $1 = flat ]; then
		sw sp job add 1 ps $PS workers "${ADDRS[@]}"
		return
	fi
	for l in 1 2; do
		w=()
		for i in "${!ADDRS[@]}"; do
			[ ${LEAF[$i]} = $l ] && w+=("${ADDRS[$i]}") || w+=(-)
		done
		sw l$l job add 1 ps $PS workers "${w[@]}" upstream $SPINE || return 1
	done
	sw sp job add 1 ps $PS leaves 10.254.1.1=0-3 10.254.2.1=4-7
}

# run MODE: the job through MODE; prints "BYTES_PER_ALLREDUCE MS_PER_ALLREDUCE".
run() {
	local mode=$1 i words=() b0 b1 sw
	tiers_load sp addr $SPINE slots 256 values 256 || return 1
	for i in 1 2; do
		if [ $mode = flat ]; then
			tiers_load l$i - || return 1
		else
			tiers_load l$i addr 10.254.$i.1 slots 256 values 256 || return 1
		fi
	done
	tiers_resolve && register $mode || return 1
	ip netns exec $P-h250 $B/esa-ps -q -s $SPINE -s 10.254.1.1 -s 10.254.2.1 \
		job 1 ps $PS workers "${ADDRS[@]}" >/dev/null 2>$LOG/$mode.ps.err &
	PSPID=$!
	sleep 0.3
	for i in "${!ADDRS[@]}"; do
		sw=$SPINE
		[ $mode = flat ] || sw=10.254.${LEAF[$i]}.1
		words+=(worker netns=/run/netns/$P-h${HOST[$i]} switch=$sw "${ADDRS[$i]}")
	done
	b0=$(tiers_uplink_bytes)
	timeout 600 $B/esa-jobs -j -s $SPINE -n $ELEMS -i $ITERS --linger 300 \
		job 1 ps=$PS dtype=i32 $WORKER "${words[@]}" >$LOG/$mode.json 2>$LOG/$mode.err ||
		{ sed 's/^/# /' $LOG/$mode.err >&2; return 1; }
	b1=$(tiers_uplink_bytes)
	for i in sp l1 l2; do sw $i -j stats show >$LOG/$mode.$i.json 2>/dev/null; done
	python3 - $LOG/$mode >&2 <<'PY'
import json, os, sys
def tot(f):
    if not os.path.exists(f) or not os.path.getsize(f):
        return {}
    return json.loads(open(f).read().strip().splitlines()[-1])["total"]
sp, l1, l2 = (tot(sys.argv[1] + "." + x + ".json") for x in ("sp", "l1", "l2"))
w = json.loads(open(sys.argv[1] + ".json").read().strip().splitlines()[-1])["jobs"][0]
g = lambda d, k: d.get(k, 0)
print("# %s: spine completed %d, collisions %d; leaves up %d, to the PS %d; "
      "workers: %d results from the switches, %d from the PS, %d resends"
      % (os.path.basename(sys.argv[1]), g(sp, "completed"), g(sp, "collisions"),
         g(l1, "up_tx") + g(l2, "up_tx"), g(l1, "ps_tx") + g(l2, "ps_tx") + g(sp, "ps_tx"),
         w["rx_results"] - w["rx_from_ps"], w["rx_from_ps"], w["tx_resends"]))
PY
	kill $PSPID 2>/dev/null
	wait $PSPID 2>/dev/null
	PSPID=
	python3 -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["jobs"][0]
assert d["ok"], d["error"]
it = int(sys.argv[3])
print(int(sys.argv[2]) / it, 1000 * d["jct_s"] / it)' \
		$LOG/$mode.json $((b1 - b0)) $ITERS
}

echo "testbed: one job of 8 ranks, 4 under each of 2 leaves, $ITERS allreduces of $ELEMS int32, links at $RATE, workers' $WORKER"
read -r fb fms < <(run flat) || die "the flat run failed"
read -r tb tms < <(run two-level) || die "the two-level run failed"
printf '%-10s %14s %12s\n' mode uplink_B/ar ms/ar
printf '%-10s %14.0f %12.1f\n' flat "$fb" "$fms" two-level "$tb" "$tms"
ratio=$(python3 -c "print('%.2f' % ($fb / $tb))")
speed=$(python3 -c "print('%.2f' % ($fms / $tms))")
echo "testbed: uplink_bytes_per_allreduce flat=${fb%.*} two_level=${tb%.*} ratio=$ratio allreduce_ms flat=$fms two_level=$tms speedup=$speed"

echo
echo "simulator:"
$B/esa_sim --multirack ${MULTIRACK_SIM_ARGS:-} >$LOG/sim.txt ||
	{ cat $LOG/sim.txt; die "the simulator's multi-rack comparison failed"; }
cat $LOG/sim.txt
sim=$(grep '^multirack-sim: uplink_bytes_ratio=' $LOG/sim.txt) ||
	die "the simulator printed no multirack-sim line"
jct=$(echo "$sim" | sed -n 's/.*jct_speedup_vs_flat=\([0-9.]*\).*/\1/p')
echo "multirack: uplink_bytes_ratio=$ratio jct_speedup_vs_flat=$jct"
