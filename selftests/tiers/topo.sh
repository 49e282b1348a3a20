# SPDX-License-Identifier: GPL-2.0
# Two-level topology in namespaces (sourced, bash), for suite 35-tiers and
# the multi-rack benchmark: a spine and L leaves, each an XDP switch in its
# own namespace, worker hosts under the leaves, a PS host on the spine.
# Each leaf-spine link runs through a wire namespace (a bridge), where it
# is shaped (tbf) and made lossy (impair.bpf.o): the switches' XDP
# redirects bypass the qdiscs of their own ports.
#
#   ns $P-hL.K  host K of leaf L: eth0 10.(10+L).K.2/24, via leaf port pK
#   ns $P-lL    leaf L: service address 10.254.L.1, port "uplink" 10.8.L.2
#   ns $P-wL    the wire: bridge of toleaf and tospine
#   ns $P-sp    the spine: service address 10.255.0.1, port uL 10.8.L.1 to
#               leaf L, p250 10.9.250.1 to the PS host
#   ns $P-h250  the PS host, 10.9.250.2
#
# TOPO_MODE=generic attaches the switches in generic (SKB) mode, and turns
# UDP segmentation offload off where a host's datagrams enter a switch port
# (native XDP does that itself: selftests/hosts/topo.sh, topo_wire_gso).
#
# Set B (build dir) and P (unique prefix) before calling tiers_init.

tiers_init() {
	TIERS_NS=""
	TIERS_SW=""
	TIERS_HOSTS=""
	TIERS_PASS=$B/esa_pass.bpf.o
	SPINE=10.255.0.1
	mkdir -p /run/netns
}

# sw NAME ARGS...: esactl in switch NAME's namespace (sp, l1, l2, ...).
sw() { local x=$1; shift; nsenter --net=/run/netns/$P-$x $B/esactl -d /sys/fs/bpf/$P-$x "$@"; }

tiers_netns() {
	ip netns add $1 || return 1
	TIERS_NS="$TIERS_NS $1"
	ip -n $1 link set lo up
}

tiers_router() {
	tiers_netns $P-$1 || return 1
	TIERS_SW="$TIERS_SW $1"
	ip netns exec $P-$1 sysctl -qw net.ipv4.ip_forward=1 \
		net.ipv4.conf.all.send_redirects=0 net.ipv4.icmp_ratelimit=0
}

# tiers_host L K: host K of leaf L, on leaf port pK.
tiers_host() {
	local l=$1 k=$2 h=$P-h$1.$2 net=10.$((10 + $1)).$2
	tiers_netns $h || return 1
	ip link add p$k netns $P-l$l type veth peer name eth0 netns $h || return 1
	ip -n $P-l$l addr add $net.1/24 dev p$k
	ip -n $P-l$l link set p$k up
	ip -n $h addr add $net.2/24 dev eth0
	ip -n $h link set eth0 up
	ip -n $h route add default via $net.1
	ip -n $h link set dev eth0 xdpdrv obj $TIERS_PASS sec xdp || return 1
	TIERS_HOSTS="$TIERS_HOSTS $l.$k"
}

# tiers_uplink L: leaf L's port "uplink" to spine port uL through wire wL.
tiers_uplink() {
	local l=$1 w=$P-w$1 d
	tiers_netns $w || return 1
	ip link add uplink netns $P-l$l type veth peer name toleaf netns $w || return 1
	ip link add u$l netns $P-sp type veth peer name tospine netns $w || return 1
	ip -n $w link add br0 type bridge || return 1
	for d in toleaf tospine; do
		ip -n $w link set $d master br0
		ip -n $w link set $d up
		# the switches' XDP sends into these: they need NAPI
		ip -n $w link set dev $d xdpdrv obj $TIERS_PASS sec xdp || return 1
	done
	ip -n $w link set br0 up
	ip -n $P-l$l addr add 10.8.$l.2/24 dev uplink
	ip -n $P-l$l link set uplink up
	ip -n $P-l$l route add default via 10.8.$l.1
	ip -n $P-sp addr add 10.8.$l.1/24 dev u$l
	ip -n $P-sp link set u$l up
	ip -n $P-sp route add 10.254.$l.0/24 via 10.8.$l.2
	ip -n $P-sp route add 10.$((10 + l)).0.0/16 via 10.8.$l.2
}

# tiers_shape L RATE [SECTION]: leaf L's link shaped to RATE (tc units) each
# way, and lossy with impair.bpf.o's tc/SECTION (loss1, loss5) if given.
tiers_shape() {
	local w=$P-w$1 d
	for d in toleaf tospine; do
		ip netns exec $w tc qdisc replace dev $d root tbf rate $2 burst 64kb \
			latency 20ms || return 1
		ip netns exec $w tc qdisc del dev $d clsact 2>/dev/null
		[ -n "${3:-}" ] || continue
		ip netns exec $w tc qdisc add dev $d clsact || return 1
		ip netns exec $w tc filter add dev $d egress pref 1 handle 1 bpf da \
			obj $B/impair.bpf.o sec tc/$3 || return 1
	done
}

# tiers_setup L HOST...: the spine, leaves 1..L (service address on lo),
# the hosts ("L.K"), the PS host.
tiers_setup() {
	local nl=$1 l x
	shift
	tiers_router sp || return 1
	ip -n $P-sp addr add $SPINE/32 dev lo
	for l in $(seq 1 $nl); do
		tiers_router l$l || return 1
		ip -n $P-l$l addr add 10.254.$l.1/32 dev lo || return 1
		tiers_uplink $l || return 1
	done
	for x in "$@"; do
		tiers_host ${x%.*} ${x#*.} || return 1
	done
	tiers_netns $P-h250 || return 1
	ip link add p250 netns $P-sp type veth peer name eth0 netns $P-h250 || return 1
	ip -n $P-sp addr add 10.9.250.1/24 dev p250
	ip -n $P-sp link set p250 up
	ip -n $P-h250 addr add 10.9.250.2/24 dev eth0
	ip -n $P-h250 link set eth0 up
	ip -n $P-h250 route add default via 10.9.250.1
	ip -n $P-h250 link set dev eth0 xdpdrv obj $TIERS_PASS sec xdp
}

# tiers_ports NAME: the ports of switch NAME (sp, lL).
tiers_ports() {
	local x
	if [ $1 = sp ]; then
		for x in $TIERS_SW; do [ $x = sp ] || echo u${x#l}; done
		echo p250
		return
	fi
	echo uplink
	for x in $TIERS_HOSTS; do [ l${x%.*} = $1 ] && echo p${x#*.}; done
}

# tiers_load NAME ARGS...: (re)load switch NAME with esactl prog load ARGS
# and attach it to its ports; "tiers_load NAME -" only unloads it.
tiers_load() {
	local x=$1 d
	shift
	sw $x prog unload >/dev/null 2>&1
	[ "$1" = - ] && return 0
	sw $x prog load "$@" || return 1
	for d in $(tiers_ports $x); do
		sw $x dev attach $d ${TOPO_MODE:+mode $TOPO_MODE} || return 1
	done
	tiers_gso
}

# tiers_gso: segmentation offload of the hosts' links off in generic mode.
tiers_gso() {
	local x g=on
	[ "${TOPO_MODE:-}" = generic ] && g=off
	for x in $TIERS_HOSTS 250; do
		ip netns exec $P-h$x ethtool -K eth0 tx-udp-segmentation $g >/dev/null 2>&1
	done
	return 0
}

# tiers_resolve: every next hop resolved (the XDP programs resolve none).
tiers_resolve() {
	local x l
	for x in $TIERS_SW; do
		[ $x = sp ] && continue
		l=${x#l}
		ip netns exec $P-$x ping -c1 -W1 -q 10.8.$l.1 >/dev/null || return 1
		ip netns exec $P-sp ping -c1 -W1 -q 10.8.$l.2 >/dev/null || return 1
	done
	for x in $TIERS_HOSTS; do
		ip netns exec $P-l${x%.*} ping -c1 -W1 -q 10.$((10 + ${x%.*})).${x#*.}.2 \
			>/dev/null || return 1
	done
	ip netns exec $P-sp ping -c1 -W1 -q 10.9.250.2 >/dev/null
}

# tiers_uplink_bytes: bytes sent over every leaf-spine link, both ways.
tiers_uplink_bytes() {
	local x t=0 b
	for x in $TIERS_SW; do
		[ $x = sp ] && continue
		for d in toleaf tospine; do
			b=$(ip -n $P-w${x#l} -s -j link show $d | python3 -c \
				'import json, sys; print(json.load(sys.stdin)[0]["stats64"]["tx"]["bytes"])')
			t=$((t + b))
		done
	done
	echo $t
}

tiers_cleanup() {
	local x
	for x in $TIERS_SW; do
		[ -e /run/netns/$P-$x ] && sw $x prog unload >/dev/null 2>&1
		rm -rf /sys/fs/bpf/$P-$x
	done
	for x in $TIERS_NS; do ip netns del $x 2>/dev/null; done
	TIERS_NS=""
	TIERS_SW=""
	return 0
}
