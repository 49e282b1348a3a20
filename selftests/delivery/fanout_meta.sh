#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fanout_meta.sh ESACTL FORGE: generic mode's tc fan-out (esa_tc_fan) acts
# only on the sums its own XDP program passed up.  Job 3 has a rank behind
# ea1; ea1's XDP program is then replaced by FORGE (meta_forge.bpf.o),
# which leaves on every UDP frame to port 9999 the switch's metadata
# layout, magic and all; the frames are RESULTs of job 3 from the switch's
# port, so only what the switch's program was loaded with (its cookie)
# tells them apart.  Those frames must go on to the stack untouched:
# no copy sent, dropped or counted, every one delivered to the socket they
# are for.  In the current network namespace, which it leaves as it found
# it.  Prints TAP lines (no plan); exit status 1 on a failure.
set -u
esactl=$1 forge=$2
pin=/sys/fs/bpf/esa-meta-$$
fail=0
t() {	# t NAME CMD...
	d=$1
	shift
	if "$@"; then echo "ok - $d"; else echo "not ok - $d"; fail=1; fi
}
e() { "$esactl" -d $pin "$@"; }
cleanup() {
	e job delete 3 >/dev/null 2>&1
	e prog unload >/dev/null 2>&1
	ip link del ea1 2>/dev/null
	ip link del ea2 2>/dev/null
	rm -rf $pin
}
trap cleanup EXIT

R0=02:e5:00:00:01:02 N=20
# the wire's version, from its one definition
ver=$(awk '$1 == "#define" && $2 == "ESA_VERSION" { print $3; exit }' \
	"$(dirname "$0")/../../include/uapi/linux/esa.h")
ip link add ea1 type veth peer name hb1 && ip link add ea2 type veth peer name hb2 &&
for d in ea1 hb1 ea2 hb2; do ip link set $d up || exit 1; done
ip addr add 10.9.1.1/24 dev ea1 && ip addr add 10.9.2.1/24 dev ea2 &&
ip neigh replace 10.9.2.2 lladdr 02:e5:00:00:02:02 nud permanent dev ea2 || exit 1
t "generic fan-out: switch loaded, ea1 and ea2 attached, job 3 registered" sh -c "
	'$esactl' -d $pin prog load slots 64 values 32 addr 10.255.0.1 &&
	'$esactl' -d $pin dev attach ea1 mode generic &&
	'$esactl' -d $pin dev attach ea2 mode generic &&
	'$esactl' -d $pin job add 3 ps 10.9.2.2:9000 workers 10.9.1.2:5000@ea1/$R0" || exit 1
t "another XDP program in place of the switch's on ea1, the fan-out's tc filter kept" sh -c "
	ip link set dev ea1 xdpgeneric off && ip link set dev ea1 xdpgeneric obj '$forge' sec xdp &&
	tc filter show dev ea1 ingress | grep -q 'handle 0xe5a'" || exit 1
dmac=$(ip -o link show ea1 | sed -n "s/.*link\/ether \([0-9a-f:]*\).*/\1/p")
got=$(/usr/bin/python3 - hb1 "$dmac" $N "$ver" <<'PY'
import socket, struct, sys
ifname, dmac, n = sys.argv[1], bytes.fromhex(sys.argv[2].replace(":", "")), int(sys.argv[3])
version = int(sys.argv[4])
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind(("10.9.1.1", 9999))
rx.settimeout(1.0)
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
tx.bind((ifname, 0))
# a RESULT of job 3 from the switch's port, as the switch's own would be
payload = struct.pack("!BBBBHHQIHBB", version, 2, 0, 0, 3, 0xffff, 1, 5, 32, 0, 0) + bytes(128)
udp = struct.pack("!HHHH", 7680, 9999, 8 + len(payload), 0) + payload
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xffff) + (s >> 16)
    return ~((s & 0xffff) + (s >> 16)) & 0xffff
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                 socket.inet_aton("10.9.1.2"), socket.inet_aton("10.9.1.1"))
ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
frame = dmac + bytes.fromhex("02e500000102") + b"\x08\x00" + ip + udp
for _ in range(n):
    tx.send(frame)
got = 0
try:
    while got < n:
        rx.recv(2048)
        got += 1
except socket.timeout:
    pass
print(got)
PY
)
t "the $N frames with forged metadata reached their socket ($got)" [ "$got" = $N ]
t "no copy made, dropped or counted for them" sh -c "
	'$esactl' -d $pin -j stats show job 3 | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(any(j[k] for k in (\"result_tx\", \"ps_copy_tx\", \"copy_drop\", \"copy_txerr\", \"drop_mtu\")))'"
exit $fail
