#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The switch on every core (suite 31-queues): hosts 1 and 2 linked straight
# to switch ports with two receive queues each (topo.sh's TOPO_QUEUES=2),
# each host sending from CPU 0 on queue 0 and from CPU 1 on queue 1.  Two
# jobs of two ranks (hosts 1 and 2), each worker its own process pinned to a
# CPU: job 1's rank 0 on CPU 0 and rank 1 on CPU 1, job 2's the other way
# round.  So each port receives on both queues, each queue's NAPI runs the
# switch on its own CPU, and each job's slots are reached from both CPUs.
# Checks: every allreduce right (esa-jobs checks int32 sums exactly), every
# packet the workers sent reached the switch, nothing dropped anywhere, the
# program ran on both receive queues of both ports (veth's per-queue XDP
# counters), and each job's packets were switched on both CPUs (the
# switch's per-CPU counters).  Prints TAP.  KEEP=1 keeps the logs.
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}
P=esaq$$
. selftests/esa/tap.sh	# ok, nok, check, tap_skip_all, tap_end
[ "$(id -u)" = 0 ] || tap_skip_all "needs root"
[ "$(nproc)" -ge 2 ] || tap_skip_all "needs two CPUs, has $(nproc)"
command -v bpftool >/dev/null || tap_skip_all "no bpftool"
for f in esactl esa-ps esa-jobs esa_pass.bpf.o; do
	[ -e $B/$f ] || tap_skip_all "$B/$f missing (run make)"
done
command -v ethtool >/dev/null || tap_skip_all "no ethtool"

. selftests/hosts/topo.sh
VALUES=256
LOG=$(mktemp -d /tmp/$P.XXXX)
cleanup() {
	topo_cleanup
	if [ -z "${KEEP:-}" ]; then rm -rf "$LOG"; else echo "# logs in $LOG"; fi
}
topo_init
trap cleanup EXIT
trap 'exit 1' INT TERM

json() {
	$TOPO_PY -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(eval(sys.argv[2]))' "$@" 2>/dev/null
}

setup() {
	topo_switch || return 1
	TOPO_QUEUES=2 topo_host 1 || return 1
	TOPO_QUEUES=2 topo_host 2 || return 1
	TOPO_NAPI=gro topo_host 250 || return 1
	topo_load slots 4096 values $VALUES || return 1
	J1=$(topo_jobspec 1 250 6001 3 2000 1 2)
	J2=$(topo_jobspec 2 250 6002 3 2000 1 2)
	esactl job add ${J1#job } && esactl job add ${J2#job } || return 1
	topo_start_ps 250 $LOG/ps.json $LOG/ps.err $LOG/ps.hung -- -j -s 10.255.0.1 \
		--values $VALUES --io udp $J1 $J2
}
if ! setup; then
	nok "topology: ports p1 and p2 with two receive queues, hosts sending by CPU, a PS"
	echo "1..$n"
	exit 1
fi
ok "topology: ports p1 and p2 with two receive queues, hosts sending by CPU, a PS"

# rxq DEV K: packets the XDP program saw on the switch port DEV's queue K.
rxq() {
	ip netns exec $SW ethtool -S $1 | awk -v k="rx_queue_$2_xdp_packets:" '$1 == k { print $2 }'
}
rxq_start() { for d in p1 p2; do for k in 0 1; do echo "$d $k $(rxq $d $k)"; done; done; }
rxq_start >$LOG/rxq.before

# worker JOB RANK CPU: one worker in its own process, pinned to CPU
WPIDS=""
worker() {
	taskset -c $3 $B/esa-jobs -j -s 10.255.0.1 --values $VALUES -n 256k -i 4 \
		--only $1:$2 --linger 0 \
		$(topo_jobrun $1 600$1 1 2 -- dtype=i32) \
		>$LOG/w$1.$2.json 2>$LOG/w$1.$2.err &
	TOPO_PIDS="$TOPO_PIDS $!"
	WPIDS="$WPIDS $!"
}
run() {
	local rc=0 p
	worker 1 0 0; worker 1 1 1; worker 2 0 1; worker 2 1 0
	for p in $WPIDS; do wait $p || rc=1; done
	return $rc
}
run
rc=$?
[ $rc = 0 ] || tail -n 3 $LOG/w*.err | sed 's/^/# /'
all_ok() {
	local f
	for f in $LOG/w1.0.json $LOG/w1.1.json $LOG/w2.0.json $LOG/w2.1.json; do
		[ "$(json $f 'all(x["ok"] for x in d["jobs"])')" = True ] || return 1
	done
}
check "every allreduce of both jobs right on every worker (int32 exact)" all_ok

esactl -j stats show >$LOG/sw.json
sent=0
for f in $LOG/w*.json; do
	sent=$((sent + $(json $f 'sum(x["tx_packets"] for x in d["jobs"])')))
done
got=$(json $LOG/sw.json 'sum(x["rx"] - x["ps_sums"] for x in d["jobs"])')
done_sw=$(json $LOG/sw.json 'd["total"]["completed"]')
drops=$(json $LOG/sw.json 'sum(v for k, v in d["total"].items() if k.startswith("drop_"))')
echo "# workers sent $sent packets, the switch received $got, completed $done_sw chunks"
check "nothing lost on the way in (the switch got all $sent packets)" [ "$sent" = "$got" ]
check "the switch completed chunks and dropped nothing ($drops drops)" \
	[ "${done_sw:-0}" -gt 0 -a "${drops:-x}" = 0 ]

rxq_start >$LOG/rxq.after
used() {	# used DEV K: queue K of DEV ran the program during the jobs
	local b a
	b=$(awk -v d=$1 -v k=$2 '$1 == d && $2 == k { print $3 }' $LOG/rxq.before)
	a=$(awk -v d=$1 -v k=$2 '$1 == d && $2 == k { print $3 }' $LOG/rxq.after)
	echo "# $1 queue $2: $((a - b)) frames through XDP"
	[ $((a - b)) -gt 0 ]
}
for d in p1 p2; do
	check "port $d: XDP ran on receive queue 0" used $d 0
	check "port $d: XDP ran on receive queue 1" used $d 1
done
# rx_on JOB CPU: the switch's rx counter (esa_counters' first) of JOB on CPU
rx_on() {
	bpftool -j map lookup pinned $PIN/counters key $1 0 0 0 | $TOPO_PY -c '
import json, sys
v = [x for x in json.load(sys.stdin)["values"] if x["cpu"] == int(sys.argv[1])][0]["value"]
print(int.from_bytes(bytes(int(b, 16) for b in v[:8]), "little"))' $2
}
both_cpus() {
	local c0 c1
	c0=$(rx_on $1 0) c1=$(rx_on $1 1)
	echo "# job $1: $c0 packets switched on CPU 0, $c1 on CPU 1"
	[ "${c0:-0}" -gt 0 -a "${c1:-0}" -gt 0 ]
}
check "job 1's packets switched on both CPUs" both_cpus 1
check "job 2's packets switched on both CPUs" both_cpus 2
tap_end
