#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# End to end in network namespaces: real UDP from real sockets through the
# XDP switch, attached in native mode on every port.
#
#   ns $P-h1 10.9.1.2 --veth-- p1 10.9.1.1 \                 (job 1: h1 h2 h3)
#   ns $P-h2 10.9.2.2 --veth-- p2 10.9.2.1  |                (job 2: h4 h5 h6)
#   ...                                     +- ns $P-sw [ESA XDP on p1..p7]
#   ns $P-h6 10.9.6.2 --veth-- p6 10.9.6.1  |  service address 10.255.0.1:7680
#   ns $P-h7 10.9.7.2 --veth-- p7 10.9.7.1 /                 (the PS of both jobs)
#
# Every worker sends its chunks to 10.255.0.1 and must receive every sum of
# its own job exactly once and exactly; the PS must receive its copy of each.
# Prints TAP.  usage: e2e.sh [ CHUNKS ] [ VALUES ]
# E2E_MODE=generic attaches the switch in generic mode; TOPO_MTU sets every
# link's MTU (jumbo: 9000 and 2232 values, multi-buffer XDP frames).
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}
N=${1:-4000}
V=${2:-256}
MODE=${E2E_MODE:-native}
P=esae$$
. selftests/hosts/topo.sh	# the namespaces, esactl(); its own prog load below
topo_init
. selftests/esa/tap.sh


[ -n "${KEEP:-}" ] || trap topo_cleanup EXIT
trap 'exit 1' INT TERM

echo "TAP version 13"
for f in esactl esa_pass.bpf.o selftests/esa_send; do
	[ -e $B/$f ] || tap_skip_all "$B/$f missing (run make)"
done
[ "$(id -u)" = 0 ] || tap_skip_all "needs root"

setup() {
	topo_switch || return 1
	for i in 1 2 3 4 5 6 7; do topo_host $i || return 1; done
}
check "topology: switch with 7 ports, 7 hosts" setup

# Ageing off (stale 0): the workers start one after another (slower on a
# loaded machine), and a partial waiting longer than the ageing limit for
# a late peer would go to this PS, which takes sums only.
check "esactl prog load" esactl prog load slots 2048 values $V addr 10.255.0.1 stale 0
# p3 the way a user attaches a pinned program with iproute2; it delivers
# results once registered with esactl.
ipr() { nsenter --net=/run/netns/$SW ip "$@"; }
if [ $MODE = native ]; then
	xdp=xdpdrv fan=devmap pin=xdp
else
	xdp=xdpgeneric fan=tc pin=xdp-generic
fi
# more values than one single-buffer frame: native ports fan out their
# multi-buffer sums by tc too
[ $MODE = generic ] || [ $V -le 856 ] || fan=devmap+tc
check "ip link set dev p3 $xdp pinned $PIN/$pin" ipr link set dev p3 $xdp pinned $PIN/$pin
attach_all() { for i in 1 2 3 4 5 6 7; do esactl dev attach p$i mode $MODE || return 1; done; }
check "esactl dev attach mode $MODE on every port (p3: registers it)" attach_all
inmode() { [ "$(esactl -j dev show | grep -o "\"xdp\":\"$MODE\",\"fanout\":\"$fan\"" | wc -l)" = 7 ]; }
check "$MODE mode on all 7 ports, fan-out $fan" inmode
resolve() { for i in 1 2 3 4 5 6 7; do ip netns exec $SW ping -c1 -W1 -q 10.9.$i.2 >/dev/null || return 1; done; }
check "hosts reachable through the switch (XDP passes other traffic)" resolve

# Each job on its own home of 64 slots (twice its window): this PS only
# takes result copies and merges nothing, so no chunk may collide.  With the
# hash placement two jobs whose progress drifts apart can meet in the pool.
check "job 1: 3 workers" esactl job add 1 ps 10.9.7.2:9000 workers 10.9.1.2:6001 10.9.2.2:6001 10.9.3.2:6001 region auto 64
check "job 2: 3 workers" esactl job add 2 ps 10.9.7.2:9000 workers 10.9.4.2:6002 10.9.5.2:6002 10.9.6.2:6002 max-prio 3 region auto 64
homes() { esactl -j job show | grep -o '"region":{[^}]*}' | tr -dc '0-9,\n' | tr '\n' ' '; }
check "region auto: the two homes apart (0+64, 64+64)" [ "$(homes)" = "0,64 64,64 " ]

log=$(mktemp -d)
ip netns exec $P-h7 $B/selftests/esa_send ps -b 10.9.7.2:9000 -n $N -v $V -t 5000 1:3 2:3 >$log/ps 2>&1 &
psp=$!
# the workers start once the PS's socket is bound (10 s at most)
ps_bound() { ip netns exec $P-h7 ss -Hlun "sport = :9000" | grep -q .; }
topo_until 10 ps_bound || echo "# the PS's socket is not bound after 10 s"
# The workers resend after 5 s, not 200 ms: they start one after another
# (slower on a loaded machine), and a resend before a late peer's first
# packet flushes the partial to this PS, which takes sums only.
pids=()
for i in 1 2 3 4 5 6; do
	job=$(( (i - 1) / 3 + 1 )) rank=$(( (i - 1) % 3 ))
	ip netns exec $P-h$i $B/selftests/esa_send worker -j $job -r $rank -w 3 \
		-d 10.255.0.1 -b 10.9.$i.2:600$job -n $N -v $V -W 32 -p $job -t 5000 >$log/w$i 2>&1 &
	pids+=($!)
done
for i in 1 2 3 4 5 6; do
	wait ${pids[$((i - 1))]}
	rc=$?
	sed 's/^/# /' $log/w$i
	check "worker h$i: $N exact sums of its job, each once, no foreign results" [ $rc = 0 ]
done
wait $psp
rc=$?
sed 's/^/# /' $log/ps
check "PS: a copy of every sum of both jobs" [ $rc = 0 ]
rm -rf "$log"

stats=$(esactl -j stats show)
counter() { echo "$stats" | grep -o "\"total\":{[^}]*}" | grep -o "\"$1\":[0-9]*" | cut -d: -f2; }
echo "# switch: completed $(counter completed) result_tx $(counter result_tx) ps_copy_tx $(counter ps_copy_tx) collisions $(counter collisions)"
check "switch completed all $((2 * N)) chunks" [ "$(counter completed)" = $((2 * N)) ]
check "switch sent 3 result copies per chunk to workers" [ "$(counter result_tx)" = $((6 * N)) ]
no_drops() {
	local d
	for d in truncated version type count header job rank prio spoof ip noroute; do
		[ "$(counter drop_$d)" = 0 ] || { echo "# drop_$d: $(counter drop_$d)"; return 1; }
	done
}
check "no drops" no_drops
check "every sum fanned out by the switch, none through the PS" [ "$(counter fanout_miss)" = 0 ]
check "bpftool shows the jobs map with its types" \
	sh -c "bpftool map dump pinned $PIN/jobs | grep -q '\"nworkers\": 3'"
check "esactl prog unload detaches every port" esactl prog unload
gone() { for i in 1 2 3 4 5 6 7; do ip -n $SW link show p$i | grep -q xdp && return 1; done; return 0; }
check "no XDP program left on the ports" gone

tap_end
