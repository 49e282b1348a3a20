#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Train ddp_train.py with N processes, each in its own network namespace
# behind an ESA switch, gradients summed by the switch (comm esa) or by gloo
# (comm gloo, through the same namespaces and the switch box's routing):
#
#   ns $P-h1 10.8.1.2 --veth-- p1 \
#   ...                             +- ns $P-sw [ESA XDP on p1..pN+1], 10.255.0.1:7680
#   ns $P-hN 10.8.N.2 --veth-- pN   |
#   ns $P-ps 10.8.0.2 --veth-- p0  /  (esa-ps, the job's parameter server)
#
# usage: run_ddp.sh [ -n RANKS ] [ -c esa|gloo ] [ -s STEPS ] [ -o OUT.json ] [ -b ] [ -k ]
#                   [ -B FLOATS ]
#   -b: check every bucket's sum against gloo's (ddp_train.py --check-bound)
#   -B: no training: time allreduces of FLOATS values, gloo and the switch
#   -k: keep the namespaces (for a look at 'esactl stats show' afterwards)
# Needs root, `make` done, and Debian's python3-torch.
set -u
cd "$(dirname "$0")/../../.."
B=build
N=3 COMM=esa STEPS=300 OUT= KEEP= CHECK=
while getopts "n:c:s:o:bkB:" o; do
	case $o in
	n) N=$OPTARG ;;
	c) COMM=$OPTARG ;;
	s) STEPS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	b) CHECK=--check-bound ;;
	B) CHECK="--bench $OPTARG" ;;
	k) KEEP=1 ;;
	*) echo "usage: run_ddp.sh [-n RANKS] [-c esa|gloo] [-s STEPS] [-o OUT.json] [-b] [-k]" >&2
	   exit 2 ;;
	esac
done
P=esad$$
SW=$P-sw
PIN=/sys/fs/bpf/$P
JOB=1
esactl() { nsenter --net=/run/netns/$SW $B/esactl -d $PIN "$@"; }
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "$KEEP" ] && { echo "kept: namespaces $P-*, pins $PIN" >&2; return; }
	esactl prog unload >/dev/null 2>&1
	for i in $(seq 0 "$N"); do ip netns del $P-h$i 2>/dev/null; done
	ip netns del $SW 2>/dev/null
	rm -rf "$PIN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for f in esactl esa_pass.bpf.o esa-ps libesa.so; do
	[ -e $B/$f ] || { echo "run_ddp.sh: $B/$f missing: run make" >&2; exit 1; }
done
[ "$N" -ge 1 ] && [ "$N" -le 60 ] || { echo "run_ddp.sh: 1 to 60 ranks" >&2; exit 2; }

set -e
ip netns add $SW
ip -n $SW link set lo up
ip netns exec $SW sysctl -qw net.ipv4.ip_forward=1
# h0 is the PS's host; h1..hN the ranks'
for i in $(seq 0 "$N"); do
	ip netns add $P-h$i
	ip -n $P-h$i link set lo up
	ip link add p$i netns $SW type veth peer name eth0 netns $P-h$i
	ip -n $SW addr add 10.8.$i.1/24 dev p$i
	ip -n $SW link set p$i up
	ip -n $P-h$i addr add 10.8.$i.2/24 dev eth0
	ip -n $P-h$i link set eth0 up
	ip -n $P-h$i route add default via 10.8.$i.1
	ip -n $P-h$i link set dev eth0 xdpdrv obj $B/esa_pass.bpf.o sec xdp
done
esactl prog load values 256 slots 1024 addr 10.255.0.1 >/dev/null
workers=""
for i in $(seq 0 "$N"); do
	esactl dev attach p$i
	ip netns exec $SW ping -c1 -W1 -q 10.8.$i.2 >/dev/null
	[ "$i" = 0 ] || workers="$workers 10.8.$i.2:6000"
done
esactl job add $JOB ps 10.8.0.2:9000 workers $workers
set +e

ip netns exec $P-h0 $B/esa-ps -q -s 10.255.0.1 job $JOB ps 10.8.0.2:9000 workers $workers \
	>/tmp/$P-ps.log 2>&1 &
pids+=($!)
# gloo would advertise the hostname's address (loopback): use eth0's
export PYTHONPATH=user/python ESA_LIBESA=$B/libesa.so GLOO_SOCKET_IFNAME=eth0
rc=0
ranks=()
for r in $(seq 0 $((N - 1))); do
	h=$((r + 1))
	(
		set -o pipefail
		ip netns exec $P-h$h /usr/bin/python3 user/python/examples/ddp_train.py \
			--rank $r --world "$N" --master 10.8.1.2:29500 --comm "$COMM" \
			--switch 10.255.0.1 --job $JOB --local 10.8.$h.2:6000 --steps "$STEPS" \
			${OUT:+--out "$OUT"} $CHECK 2>&1 | sed "s/^/[rank $r] /"
	) &
	ranks+=($!)
done
for p in "${ranks[@]}"; do wait "$p" >/dev/null || rc=1; done
if [ "$COMM" = esa ]; then
	esactl stats show job $JOB | sed 's/^/[switch] /'
	sed 's/^/[esa-ps] /' /tmp/$P-ps.log
fi
rm -f /tmp/$P-ps.log
exit $rc
