# SPDX-License-Identifier: GPL-2.0
# Namespace topology for the host-side tests and the demo (sourced, bash).
#
#   ns $P-sw: the switch, ESA attached in native mode on every port,
#             service address 10.255.0.1:7680, IPv4 forwarding on
#   ns $P-hI: host I (1..200), eth0 10.9.I.2/24, via switch port pI 10.9.I.1
#   ns $P-h250: the PS host, 10.9.250.2
#
# A host is linked straight to its port (veth), or through a "wire": ns
# $P-wI bridging the host's veth and the port's, where both directions of
# the link can be impaired (loss, duplication, reordering: impair.bpf.o on
# the bridge ports' egress, HTB for the reordering lane).  Every veth end
# that receives frames sent by XDP runs the XDP_PASS program (platform
# pitfall: a veth takes XDP frames only when its peer runs NAPI).
#
# Set B (build dir) and P (unique prefix) before calling topo_init.

topo_init() {
	SW=$P-sw
	PIN=/sys/fs/bpf/$P
	TOPO_HOSTS=""
	TOPO_PIDS=""
	mkdir -p /run/netns
}

esactl() { nsenter --net=/run/netns/$SW $B/esactl -d $PIN "$@"; }

# topo_switch: the switch namespace (no program yet).
topo_switch() {
	ip netns add $SW || return 1
	ip -n $SW link set lo up
	ip netns exec $SW sysctl -qw net.ipv4.ip_forward=1
	# no ICMP redirects or rate limits in the way of the test traffic
	ip netns exec $SW sysctl -qw net.ipv4.conf.all.send_redirects=0
	ip netns exec $SW sysctl -qw net.ipv4.icmp_ratelimit=0
}

# topo_host I [wire]: host I, linked straight or through a wire namespace.
topo_host() {
	local i=$1 wire=${2:-} h=$P-h$1
	ip netns add $h || return 1
	ip -n $h link set lo up
	if [ -z "$wire" ]; then
		ip link add p$i netns $SW type veth peer name eth0 netns $h || return 1
	else
		local w=$P-w$i
		ip netns add $w || return 1
		ip -n $w link set lo up
		ip link add p$i netns $SW type veth peer name tosw netns $w || return 1
		ip link add tohost netns $w type veth peer name eth0 netns $h || return 1
		ip -n $w link add br0 type bridge || return 1
		ip -n $w link set tosw master br0
		ip -n $w link set tohost master br0
		ip -n $w link set tosw up
		ip -n $w link set tohost up
		ip -n $w link set br0 up
		# the switch's XDP sends into tosw: it needs NAPI there
		ip -n $w link set dev tosw xdpdrv obj $B/esa_pass.bpf.o sec xdp || return 1
	fi
	ip -n $SW addr add 10.9.$i.1/24 dev p$i
	ip -n $SW link set p$i up
	ip -n $h addr add 10.9.$i.2/24 dev eth0
	ip -n $h link set eth0 up
	ip -n $h route add default via 10.9.$i.1
	if [ -z "$wire" ]; then
		ip -n $h link set dev eth0 xdpdrv obj $B/esa_pass.bpf.o sec xdp || return 1
	fi
	TOPO_HOSTS="$TOPO_HOSTS $i"
}

# topo_load ARGS...: load the program (esactl prog load ARGS) and attach it
# to every port made so far; resolve every host from the switch.
topo_load() {
	esactl prog load addr 10.255.0.1 "$@" || return 1
	local i
	for i in $TOPO_HOSTS; do
		esactl dev attach p$i || return 1
	done
	for i in $TOPO_HOSTS; do
		ip netns exec $SW ping -c1 -W1 -q 10.9.$i.2 >/dev/null || return 1
	done
}

topo_unload() {
	esactl prog unload >/dev/null 2>&1
	rm -rf "$PIN"
}

# topo_impair I SECTION: impair both directions of host I's wire with
# impair.bpf.o's section tc/SECTION (loss1 loss5 dupreorder mix).
topo_impair() {
	local w=$P-w$1 d
	for d in tosw tohost; do
		ip netns exec $w tc qdisc replace dev $d root handle 1: htb default 1 || return 1
		ip netns exec $w tc class replace dev $d parent 1: classid 1:1 htb rate 10gbit
		ip netns exec $w tc class replace dev $d parent 1: classid 1:2 htb rate 20mbit \
			ceil 20mbit
		ip netns exec $w tc qdisc replace dev $d clsact
		ip netns exec $w tc filter replace dev $d egress pref 1 handle 1 bpf da \
			obj $B/impair.bpf.o sec tc/$2 || return 1
	done
}

topo_unimpair() {
	local w=$P-w$1 d
	for d in tosw tohost; do
		ip netns exec $w tc qdisc del dev $d clsact 2>/dev/null
		ip netns exec $w tc qdisc del dev $d root 2>/dev/null
	done
	return 0
}

# topo_bg CMD...: run CMD in the background, remember its pid for cleanup.
topo_bg() {
	"$@" &
	TOPO_PIDS="$TOPO_PIDS $!"
}

topo_cleanup() {
	local p i
	for p in $TOPO_PIDS; do
		kill "$p" 2>/dev/null
	done
	for p in $TOPO_PIDS; do
		wait "$p" 2>/dev/null
	done
	TOPO_PIDS=""
	[ -n "${SW:-}" ] && [ -e /run/netns/$SW ] && topo_unload
	for i in $TOPO_HOSTS; do
		ip netns del $P-h$i 2>/dev/null
		ip netns del $P-w$i 2>/dev/null
	done
	[ -n "${SW:-}" ] && ip netns del $SW 2>/dev/null
	rm -rf "${PIN:-/nonexistent}"
	return 0
}

# The words of a job's registration, shared by esactl and esa-ps:
# topo_jobspec ID PS_HOST PORT MAXPRIO LEASE HOST...
topo_jobspec() {
	local id=$1 ps=$2 port=$3 prio=$4 lease=$5 i
	shift 5
	printf 'job %s ps 10.9.%s.2:9000 workers' "$id" "$ps"
	for i in "$@"; do printf ' 10.9.%s.2:%s' "$i" "$port"; done
	printf ' max-prio %s lease %s\n' "$prio" "$lease"
}

# The esa-jobs words of the same job: topo_jobrun ID PORT HOST... -- KEY=VALUE...
topo_jobrun() {
	local id=$1 port=$2 i
	shift 2
	local hosts=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do hosts+=("$1"); shift; done
	[ "${1:-}" = "--" ] && shift
	printf 'job %s %s' "$id" "$*"
	for i in "${hosts[@]}"; do
		printf ' worker netns=/run/netns/%s-h%s 10.9.%s.2:%s' "$P" "$i" "$i" "$port"
	done
	printf '\n'
}
