#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Train ddp_train.py with N processes, each in its own network namespace
# behind an ESA switch, gradients summed by the switch (comm esa) or by gloo
# (comm gloo, through the same namespaces and the switch box's routing):
#
#   ns $P-h1   10.9.1.2   --veth-- p1   \
#   ...                                    +- ns $P-sw [ESA XDP on every port], 10.255.0.1:7680
#   ns $P-hN   10.9.N.2   --veth-- pN     |
#   ns $P-h250 10.9.250.2 --veth-- p250  /  (esa-ps, the job's parameter server)
#
# (the topology of selftests/hosts/topo.sh, which the demo and tests share)
#
# usage: run_ddp.sh [ -n RANKS ] [ -c esa|gloo ] [ -s STEPS ] [ -o OUT.json ] [ -b ] [ -k ]
#                   [ -B FLOATS ] [ -x "MORE ddp_train.py OPTIONS" ]
#   -b: check every bucket's sum against gloo's (ddp_train.py --check-bound)
#   -B: no training: time allreduces of FLOATS values, gloo and the switch
#   -x: e.g. "--half --bucket-kb 8" (a float16 bucket, smaller buckets)
#   -k: keep the namespaces (for a look at 'esactl stats show' afterwards)
# Needs root, `make` done, and Debian's python3-torch.
set -u
cd "$(dirname "$0")/../../.."
B=build
N=3 COMM=esa STEPS=300 OUT= KEEP= CHECK= MORE=
while getopts "n:c:s:o:bkB:x:" o; do
	case $o in
	n) N=$OPTARG ;;
	c) COMM=$OPTARG ;;
	s) STEPS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	b) CHECK=--check-bound ;;
	B) CHECK="--bench $OPTARG" ;;
	k) KEEP=1 ;;
	x) MORE=$OPTARG ;;
	*) echo "usage: run_ddp.sh [-n RANKS] [-c esa|gloo] [-s STEPS] [-o OUT.json] [-b] [-k]" \
		"[-B FLOATS] [-x OPTIONS]" >&2
	   exit 2 ;;
	esac
done
P=esat$$
JOB=1
. selftests/hosts/topo.sh
topo_init
cleanup() {
	if [ -n "$KEEP" ]; then
		for p in $TOPO_PIDS; do kill "$p" 2>/dev/null; done
		echo "kept: namespaces $P-*, pins $PIN" >&2
		return
	fi
	topo_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for f in esactl esa_pass.bpf.o esa-ps libesa.so; do
	[ -e $B/$f ] || { echo "run_ddp.sh: $B/$f missing: run make" >&2; exit 1; }
done
[ "$N" -ge 1 ] && [ "$N" -le 60 ] || { echo "run_ddp.sh: 1 to 60 ranks" >&2; exit 2; }

die() { echo "run_ddp.sh: $*" >&2; exit 1; }
# h250 is the PS's host; h1..hN the ranks'
topo_switch || die "cannot make the switch namespace"
for i in 250 $(seq 1 "$N"); do
	topo_host $i || die "cannot make host $i"
done
topo_load values 256 slots 1024 >/dev/null || die "cannot load the switch"
workers=""
for i in $(seq 1 "$N"); do workers="$workers 10.9.$i.2:6000"; done
esactl job add $JOB ps 10.9.250.2:9000 workers $workers || die "cannot add the job"

topo_bg ip netns exec $P-h250 $B/esa-ps -q -s 10.255.0.1 job $JOB ps 10.9.250.2:9000 \
	workers $workers >/tmp/$P-ps.log 2>&1
# gloo would advertise the hostname's address (loopback): use eth0's
export PYTHONPATH=user/python ESA_LIBESA=$B/libesa.so GLOO_SOCKET_IFNAME=eth0
rc=0
ranks=()
for r in $(seq 0 $((N - 1))); do
	h=$((r + 1))
	(
		set -o pipefail
		ip netns exec $P-h$h /usr/bin/python3 user/python/examples/ddp_train.py \
			--rank $r --world "$N" --master 10.9.1.2:29500 --comm "$COMM" \
			--switch 10.255.0.1 --job $JOB --local 10.9.$h.2:6000 --ps 10.9.250.2:9000 \
			--steps "$STEPS" \
			${OUT:+--out "$OUT"} $CHECK $MORE 2>&1 | sed -u "s/^/[rank $r] /"
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
