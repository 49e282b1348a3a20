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
#                   [ -B FLOATS ] [ -I udp|xdp|auto ] [ -v VALUES|max ] [ -M MTU ]
#                   [ -x "MORE ddp_train.py OPTIONS" ]
#   -b: check every bucket's sum against gloo's (ddp_train.py --check-bound)
#   -B: no training: time allreduces of FLOATS values, gloo and the switch
#   -x: e.g. "--half --bucket-kb 8" (a float16 bucket, smaller buckets),
#       "--width 2048 --time-steps 20" (time the steps of an MLP's 18 MB)
#   -I: libesa's and esa-ps's transport (udp): xdp is AF_XDP on eth0 queue 0
#       (every host's link gets its NAPI by GRO, so its XDP hook is free)
#   -v: values per packet (256), a multiple of 8, at most what the links'
#       MTU carries: 856 at 3500, 2232 at 9000 (jumbo); max: that many
#   -M: every link's MTU (3500; 1280 to 9000: above 3500, multi-buffer XDP
#       frames; AF_XDP's frames are one page, 856 values at most)
#   -k: keep the namespaces (for a look at 'esactl stats show' afterwards)
# Needs root, `make` done (OUTPUT=DIR: its build directory), and Debian's
# python3-torch.
set -u
cd "$(dirname "$0")/../../.."
B=${OUTPUT:-build}
N=3 COMM=esa STEPS=300 OUT= KEEP= CHECK= MORE= IO=udp VALUES=256 MTU=3500
while getopts "n:c:s:o:bkB:x:I:v:M:" o; do
	case $o in
	n) N=$OPTARG ;;
	c) COMM=$OPTARG ;;
	s) STEPS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	b) CHECK=--check-bound ;;
	B) CHECK="--bench $OPTARG" ;;
	k) KEEP=1 ;;
	x) MORE=$OPTARG ;;
	I) IO=$OPTARG ;;
	v) VALUES=$OPTARG ;;
	M) MTU=$OPTARG ;;
	*) echo "usage: run_ddp.sh [-n RANKS] [-c esa|gloo] [-s STEPS] [-o OUT.json] [-b] [-k]" \
		"[-B FLOATS] [-I udp|xdp|auto] [-v VALUES|max] [-M MTU] [-x OPTIONS]" >&2
	   exit 2 ;;
	esac
done
case $IO in udp|xdp|auto) ;; *) echo "run_ddp.sh: -I: udp, xdp or auto, not \"$IO\"" >&2; exit 2 ;; esac
case $MTU in ''|*[!0-9]*) echo "run_ddp.sh: -M: an MTU in bytes" >&2; exit 2 ;; esac
[ "$MTU" -ge 1280 ] && [ "$MTU" -le 9000 ] || { echo "run_ddp.sh: -M: 1280 to 9000" >&2; exit 2; }
P=esat$$
JOB=1
. selftests/hosts/topo.sh
VMAX=$(topo_max_values "$MTU")
[ "$VALUES" = max ] && VALUES=$VMAX
case $VALUES in ''|*[!0-9]*) echo "run_ddp.sh: -v: a number of values or max" >&2; exit 2 ;; esac
[ "$VALUES" -ge 8 ] && [ $((VALUES % 8)) = 0 ] ||
	{ echo "run_ddp.sh: -v: 8 or more values, a multiple of 8" >&2; exit 2; }
LIBMAX=$(topo_max_values 9000)
[ "$VALUES" -le "$LIBMAX" ] || { echo "run_ddp.sh: -v $VALUES: at most $LIBMAX values" >&2; exit 2; }
[ "$VALUES" -le "$VMAX" ] || { echo "run_ddp.sh: -v $VALUES: MTU $MTU carries at most $VMAX" \
	"values; $VALUES need -M $((VALUES * 4 + 52)) or more" >&2; exit 2; }
TOPO_MTU=$MTU
topo_init
cleanup() {
	# a timeout signals the script and then its process group: the second
	# signal must not cut the cleanup short
	trap '' INT TERM
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
# NAPI by GRO, not an XDP_PASS program: eth0's XDP hook stays free for AF_XDP
for i in 250 $(seq 1 "$N"); do
	TOPO_NAPI=gro topo_host $i || die "cannot make host $i"
done
topo_load values "$VALUES" slots 1024 >/dev/null || die "cannot load the switch"
workers=""
for i in $(seq 1 "$N"); do workers="$workers 10.9.$i.2:6000"; done
esactl job add $JOB ps 10.9.250.2:9000 workers $workers || die "cannot add the job"

XIO=()
[ "$IO" = udp ] || XIO=(--esa io=$IO --esa ifname=eth0 --esa queue=0)
topo_bg ip netns exec $P-h250 $B/esa-ps --values "$VALUES" -s 10.255.0.1 \
	--io $IO --ifname eth0 job $JOB ps 10.9.250.2:9000 workers $workers >/tmp/$P-ps.log 2>&1
for t in $(seq 30); do grep -qs serving /tmp/$P-ps.log && break; sleep 0.1; done
grep -qs serving /tmp/$P-ps.log || die "esa-ps did not start: $(cat /tmp/$P-ps.log)"
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
			--steps "$STEPS" --values "$VALUES" "${XIO[@]}" \
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
