#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fanout_one.sh ESACTL PROBE MODE: one chunk of a job through the switch in
# MODE (native or generic), seen raw on the wire; for the kernels users run
# (the VM suite boots Debian's 6.1 and 6.12; also runs on the host).  In the
# current network namespace, which it leaves as it found it:
#
#   hb1 ~ ea1 [switch port]    rank 0 (02:e5:00:00:01:02, 10.9.1.2:5000)
#                              rank 1 (02:e5:00:00:01:03, 10.9.1.3:5001)
#   hb2 ~ ea2 [switch port]    the PS (10.9.2.2:9000, neighbour 02:e5:..:02:02)
#
# Both ranks are behind one port, as in a rack.  fanout_probe.py sends the
# ranks' DATA out of hb1 and listens on hb1 and hb2: each rank must get one
# copy of the sum addressed to its own MAC, address and port, and the PS
# one to its own, each with a right IP and UDP checksum.  Prints TAP lines
# (no plan); exit status 1 on a failure.
set -u
esactl=$1 probe=$2 mode=$3
pin=/sys/fs/bpf/esa-fanout-$$
fail=0
t() {	# t NAME CMD...
	d=$1
	shift
	if "$@"; then echo "ok - $d"; else echo "not ok - $d"; fail=1; fi
}
e() { "$esactl" -d $pin "$@"; }
cleanup() {
	# With esa.ko the job lives in the module, not in the program's maps.
	e job delete 3 >/dev/null 2>&1
	e prog unload >/dev/null 2>&1
	ip link del ea1 2>/dev/null
	ip link del ea2 2>/dev/null
	echo "$fwd" > /proc/sys/net/ipv4/ip_forward
	rm -rf $pin
}
trap cleanup EXIT

R0=02:e5:00:00:01:02 R1=02:e5:00:00:01:03 PSMAC=02:e5:00:00:02:02
fwd=$(cat /proc/sys/net/ipv4/ip_forward)
echo 1 > /proc/sys/net/ipv4/ip_forward	# the box routes (README)
ip link add ea1 type veth peer name hb1 && ip link add ea2 type veth peer name hb2 &&
for d in ea1 hb1 ea2 hb2; do ip link set $d up || exit 1; done
ip addr add 10.9.1.1/24 dev ea1 && ip addr add 10.9.2.1/24 dev ea2 &&
ip neigh replace 10.9.2.2 lladdr $PSMAC nud permanent dev ea2 || exit 1
# native XDP on a veth sends into its peer only when the peer runs NAPI
[ "$mode" = native ] && { ip link set dev hb1 gro on 2>/dev/null ||
	ethtool -K hb1 gro on >/dev/null 2>&1; ethtool -K hb2 gro on >/dev/null 2>&1; }

t "$mode fan-out: switch loaded, ea1 and ea2 attached" sh -c "
	'$esactl' -d $pin prog load slots 64 values 32 addr 10.255.0.1 &&
	'$esactl' -d $pin dev attach ea1 mode $mode &&
	'$esactl' -d $pin dev attach ea2 mode $mode &&
	'$esactl' -d $pin job add 3 ps 10.9.2.2:9000 \
		workers 10.9.1.2:5000@ea1/$R0 10.9.1.3:5001@ea1/$R1" || exit 1
dmac=$(ip -o link show ea1 | sed -n "s/.*link\/ether \([0-9a-f:]*\).*/\1/p")
out=$(/usr/bin/python3 "$probe" send=hb1 listen=hb1,hb2 dmac=$dmac sw=10.255.0.1 \
	job=3 seq=5 values=32 wait=1.5 rank0=$R0/10.9.1.2:5000 rank1=$R1/10.9.1.3:5001)
echo "# $mode: $out"
# copies IFACE: "DMAC DST:PORT sum ip" per copy the interface received
copies() {
	/usr/bin/python3 -c 'import json, sys
for c in json.loads(sys.argv[1])[sys.argv[2]]:
    print(c["dmac"], "%s:%d" % (c["dst"], c["dport"]), c["src"],
          "sum" if c["sum_ok"] else "badsum", "csum" if c["ip_csum_ok"] else "badcsum",
          "udpcsum" if c["udp_csum_ok"] else "badudpcsum")' "$out" "$1" | sort
}
want1=$(printf '%s\n' "$R0 10.9.1.2:5000 10.255.0.1 sum csum udpcsum" \
	"$R1 10.9.1.3:5001 10.255.0.1 sum csum udpcsum" | sort)
want2="$PSMAC 10.9.2.2:9000 10.255.0.1 sum csum udpcsum"
t "$mode fan-out: the two ranks behind ea1 each got one copy, addressed to its own MAC, address and port, from the switch, its IP and UDP checksums right" \
	[ "$(copies hb1)" = "$want1" ]
t "$mode fan-out: the PS behind ea2 got one copy, addressed to it, its checksums right" [ "$(copies hb2)" = "$want2" ]
t "$mode fan-out: the switch counted 2 result copies and 1 to the PS, none dropped" sh -c "
	'$esactl' -d $pin -j stats show job 3 | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(not (j[\"result_tx\"] == 2 and j[\"ps_copy_tx\"] == 1 and
              j[\"copy_drop\"] == 0 and j[\"copy_txerr\"] == 0))'"
exit $fail
