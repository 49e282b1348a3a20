#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One job of 3 workers (each in its own host namespace, straight veth links,
# NAPI by GRO so that AF_XDP can take the XDP hook) and its PS, through the
# XDP switch: goodput inside the allreduce (esa-jobs' comm_s, generation and
# checking left out) per transport, runs interleaved so that the machine's
# drifts hit all alike.  Timings are printed, never judged.  Root.
#
#   selftests/hosts/bench_io.sh [VALUES [ELEMS [ITERS [IO...]]]]
#   e.g. selftests/hosts/bench_io.sh 856 8M 3 udp xdp udp xdp
# Environment: EXTRA="timeout_us=1000 ..." adds libesa settings; JOBS=PATH
# runs another esa-jobs build (OLD=1: one without io=).
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}
P=esab$$
V=${1:-856} N=${2:-8M} IT=${3:-3}
shift $(($# < 3 ? $# : 3))
IOS=${*:-udp xdp udp xdp udp xdp}
[ "$(id -u)" = 0 ] || { echo "bench_io: needs root" >&2; exit 1; }
. selftests/hosts/topo.sh
topo_init
trap 'topo_cleanup' EXIT
topo_switch || exit 1
for i in 1 2 3; do TOPO_NAPI=gro topo_host $i || exit 1; done
TOPO_NAPI=gro topo_host 250 || exit 1
topo_load slots 4096 values $V || exit 1
J=$(topo_jobspec 1 250 6001 3 0 1 2 3)
esactl job add ${J#job } || exit 1
for io in $IOS; do
	ip netns exec $P-h250 $B/esa-ps -q -s 10.255.0.1 --values $V --io $io $J >/dev/null \
		2>/tmp/$P.ps.err &
	ps=$!
	TOPO_PIDS="$TOPO_PIDS $ps"
	sleep 0.5
	R=$(topo_jobrun 1 6001 1 2 3 -- values=$V $([ -n "${OLD:-}" ] || echo io=$io) \
		dtype=i32 ${EXTRA:-})
	# shellcheck disable=SC2086
	${JOBS:-$B/esa-jobs} -j -s 10.255.0.1 -n $N -i $IT --linger 0 $R >/tmp/$P.json \
		2>/tmp/$P.err
	kill $ps
	wait $ps 2>/dev/null
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))["jobs"][0]
print("%s values %s: %s, %.3f s in allreduce, %.2f Gbit/s, %d packets, %d resends, %d from the PS, io_xdp %s, xdp_drops %s, rtt %.0f us" % (sys.argv[2], sys.argv[3], "ok" if d["ok"] else "FAILED " + d["error"], d["comm_s"], d["goodput_gbps"], d["tx_packets"], d["tx_resends"], d["rx_from_ps"], d.get("io_xdp", "-"), d.get("xdp_drops", "-"), d["rtt_us"]))' \
		/tmp/$P.json $io $V
done
rm -f /tmp/$P.json /tmp/$P.err /tmp/$P.ps.err
