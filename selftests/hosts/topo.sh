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
# the bridge ports' egress, HTB for the reordering lane).  A port may also
# lead to a "rack": ns $P-wI bridging the port's veth and several hosts
# $P-hI.K, 10.9.I.(K+1) (topo_rack).  Every veth end that receives frames
# sent by XDP runs the XDP_PASS program (platform pitfall: a veth takes XDP
# frames only when its peer runs NAPI).  TOPO_MODE=generic attaches the
# switch in generic (SKB) mode instead of native.  TOPO_NAPI=gro gives a
# host linked straight NAPI by GRO (ethtool) instead of the XDP_PASS
# program, leaving its XDP hook free (AF_XDP: libesa's, esa-ps's program).
#
# TOPO_QUEUES=N (default 1; at most the number of CPUs) gives a host linked
# straight N transmit queues and its switch port N receive queues
# (topo_queues): veth hands a frame to the peer's receive queue of the queue
# it was sent on, and that queue's NAPI runs on the sending CPU, so with XPS
# sending from CPU c on queue c mod N, a sender on CPU c reaches the switch
# on its port's queue c, and one port's frames are switched on every CPU at
# once.  The host keeps one receive queue: an AF_XDP socket (libesa's,
# esa-ps's) is bound to one queue, queue 0.
#
# Every veth and bridge has MTU $TOPO_MTU (3500): the largest single-buffer
# vector, 856 values, is a 3476-byte IP packet, and native XDP on veth takes
# a peer MTU of at most 3506 (one single-buffer frame: a page less headroom
# and skb_shared_info) unless the program takes multi-buffer frames.  With
# TOPO_MTU above 3500 (jumbo: 9000 carries 2232 values) the XDP_PASS
# program is esa_pass.bpf.o's xdp.frags one.
#
# Set B (build dir) and P (unique prefix) before calling topo_init.

topo_init() {
	SW=$P-sw
	TOPO_MTU=${TOPO_MTU:-3500}
	TOPO_PASS_SEC=xdp
	[ "$TOPO_MTU" -le 3500 ] || TOPO_PASS_SEC=xdp.frags
	PIN=/sys/fs/bpf/$P
	TOPO_HOSTS=""
	TOPO_NS=""
	TOPO_PIDS=""
	mkdir -p /run/netns
}

esactl() { nsenter --net=/run/netns/$SW $B/esactl -d $PIN "$@"; }

# topo_until SECONDS CMD...: CMD every 0.1 s until it succeeds, for at most
# SECONDS (then status 1).  A test waits for what its checks presume,
# bounded, instead of sleeping: the machine's speed decides nothing.
topo_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

# topo_max_values MTU: the largest vector a link of MTU bytes carries
# (ESA_IP_LEN: IPv4, UDP and ESA headers, 4 bytes a value), a multiple of
# 8, at most ESA_MAX_VALUES: 856 at 3500, 2232 at 9000.
topo_max_values() {
	local v=$((($1 - 20 - 8 - 24) / 4 / 8 * 8)) lib
	lib=$(sed -n 's/^#define ESA_MAX_VALUES[^0-9]*\([0-9]*\).*/\1/p' include/uapi/linux/esa.h)
	[ "$v" -le "$lib" ] || v=$lib
	echo "$v"
}

# topo_counter JOB NAME: the switch's counter NAME of job JOB, now.
topo_counter() { esactl -j stats show job $1 2>/dev/null | grep -o "\"$2\":[0-9]*" | cut -d: -f2; }

# The interpreter itself, found once: a version manager's shim on PATH
# costs seconds a call on a loaded machine.
TOPO_PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || TOPO_PY=python3

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
		ip link add p$i mtu $TOPO_MTU netns $SW type veth \
			peer name eth0 mtu $TOPO_MTU netns $h || return 1
		[ "${TOPO_QUEUES:-1}" = 1 ] || topo_queues $i $TOPO_QUEUES || return 1
	else
		local w=$P-w$i
		ip netns add $w || return 1
		ip -n $w link set lo up
		ip link add p$i mtu $TOPO_MTU netns $SW type veth \
			peer name tosw mtu $TOPO_MTU netns $w || return 1
		ip link add tohost mtu $TOPO_MTU netns $w type veth \
			peer name eth0 mtu $TOPO_MTU netns $h || return 1
		ip -n $w link add br0 mtu $TOPO_MTU type bridge || return 1
		ip -n $w link set tosw master br0
		ip -n $w link set tohost master br0
		ip -n $w link set tosw up
		ip -n $w link set tohost up
		ip -n $w link set br0 up
		# the switch's XDP sends into tosw: it needs NAPI there
		ip -n $w link set dev tosw xdpdrv obj $B/esa_pass.bpf.o sec $TOPO_PASS_SEC || return 1
	fi
	ip -n $SW addr add 10.9.$i.1/24 dev p$i
	ip -n $SW link set p$i up
	ip -n $h addr add 10.9.$i.2/24 dev eth0
	ip -n $h link set eth0 up
	ip -n $h route add default via 10.9.$i.1
	if [ -z "$wire" ] && [ "${TOPO_NAPI:-xdp}" = gro ]; then
		ip netns exec $h ethtool -K eth0 gro on >/dev/null || return 1
	elif [ -z "$wire" ]; then
		ip -n $h link set dev eth0 xdpdrv obj $B/esa_pass.bpf.o sec $TOPO_PASS_SEC || return 1
	fi
	TOPO_HOSTS="$TOPO_HOSTS $i"
}

# topo_queues I N: N receive queues on port pI, N transmit queues on host
# I's eth0, which sends from CPU c on queue c mod N (XPS).  A veth has as
# many queues as CPUs, one of each in use unless told (ethtool -L).
topo_queues() {
	local h=$P-h$1 q=$2 k c mask ncpu
	ncpu=$(nproc)
	ip netns exec $SW ethtool -L p$1 rx $q tx 1 || return 1
	ip netns exec $h ethtool -L eth0 rx 1 tx $q || return 1
	for k in $(seq 0 $((q - 1))); do
		mask=0
		for c in $(seq $k $q $((ncpu - 1))); do mask=$((mask | 1 << c)); done
		ip netns exec $h sh -c "printf %x $mask > /sys/class/net/eth0/queues/tx-$k/xps_cpus" ||
			return 1
	done
}

# topo_rack I N: port pI leads to a rack, a bridge (ns $P-wI) with N hosts
# $P-hI.K (K = 1..N) at 10.9.I.(K+1), each with its own MAC, default route
# via the port.
topo_rack() {
	local i=$1 n=$2 w=$P-w$1 k h
	ip netns add $w || return 1
	TOPO_NS="$TOPO_NS $w"
	ip -n $w link set lo up
	ip link add p$i mtu $TOPO_MTU netns $SW type veth \
		peer name tosw mtu $TOPO_MTU netns $w || return 1
	ip -n $w link add br0 mtu $TOPO_MTU type bridge || return 1
	ip -n $w link set tosw master br0
	ip -n $w link set tosw up
	ip -n $w link set br0 up
	ip -n $w link set dev tosw xdpdrv obj $B/esa_pass.bpf.o sec $TOPO_PASS_SEC || return 1
	for k in $(seq 1 $n); do
		h=$P-h$i.$k
		ip netns add $h || return 1
		TOPO_NS="$TOPO_NS $h"
		ip -n $h link set lo up
		ip link add eth0 mtu $TOPO_MTU netns $h \
			address 02:09:00:00:$(printf %02x $i):$(printf %02x $k) \
			type veth peer name h$k mtu $TOPO_MTU netns $w || return 1
		ip -n $w link set h$k master br0
		ip -n $w link set h$k up
		ip -n $h addr add 10.9.$i.$((k + 1))/24 dev eth0
		ip -n $h link set eth0 up
		ip -n $h route add default via 10.9.$i.1
	done
	ip -n $SW addr add 10.9.$i.1/24 dev p$i
	ip -n $SW link set p$i up
	TOPO_HOSTS="$TOPO_HOSTS $i"
}

# topo_wire_gso I on|off: UDP segmentation offload on the far end of port
# pI's veth.  A veth pair hands a GSO datagram (libesa sends bursts with
# UDP_SEGMENT) across whole, where a real link carries it segmented: native
# XDP on the port turns the peer's offload off by itself, generic mode does
# not, so in generic mode the test wire does it (docs/design.md).
topo_wire_gso() {
	if [ -e /run/netns/$P-w$1 ]; then
		ip netns exec $P-w$1 ethtool -K tosw tx-udp-segmentation $2 >/dev/null
	else
		ip netns exec $P-h$1 ethtool -K eth0 tx-udp-segmentation $2 >/dev/null
	fi
}

# topo_load ARGS...: load the program (esactl prog load ARGS) and attach it
# to every port made so far (TOPO_MODE=generic: in generic mode); resolve
# every host from the switch.
topo_load() {
	esactl prog load addr 10.255.0.1 "$@" || return 1
	local i gso=on
	[ "${TOPO_MODE:-}" = generic ] && gso=off
	for i in $TOPO_HOSTS; do
		topo_wire_gso $i $gso || return 1
		esactl dev attach p$i ${TOPO_MODE:+mode $TOPO_MODE} || return 1
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

# topo_shape I RATE: shape both directions of host I's wire to RATE (tc's
# units, e.g. 300mbit) with tbf, a queue of 50 ms.  On the wire, not on the
# switch's port: the switch's XDP redirects bypass that port's qdisc.
topo_shape() {
	local w=$P-w$1 d
	for d in tosw tohost; do
		ip netns exec $w tc qdisc replace dev $d root tbf rate "$2" burst 64kb \
			latency 50ms || return 1
	done
}

# topo_shape_host I RATE [BURST [LIMIT]]: shape host I's own link, straight
# to its port (no wire namespace), both directions, with tbf in the host:
# on eth0's egress for host -> switch, and for switch -> host on an IFB
# device that eth0's ingress redirects everything to (the switch's XDP
# redirects bypass its port's qdisc, so the host shapes what it receives, as
# the port's egress queue would).  Less kernel work than a bridge per host
# (docs/evaluation.md measures both).  UDP only: an AF_XDP socket's frames
# pass neither qdisc (its XDP hook runs before tc ingress, its TX goes
# straight to the driver); use a wire (topo_shape) for AF_XDP.  BURST
# (bytes) defaults to two frames of the link's MTU, LIMIT to a queue of
# 20 ms at RATE.
topo_shape_host() {
	local h=$P-h$1 rate=$2 burst=${3:-$((2 * TOPO_MTU + 100))} lim=${4:-20ms}
	ip -n $h link add ifb0 mtu $TOPO_MTU type ifb 2>/dev/null ||
		ip -n $h link show ifb0 >/dev/null || return 1
	ip -n $h link set ifb0 up || return 1
	# overhead 24: Ethernet's preamble, FCS and gap, as on a wire
	tc -n $h qdisc replace dev eth0 root tbf rate "$rate" burst "$burst" \
		latency "$lim" overhead 24 || return 1
	tc -n $h qdisc replace dev ifb0 root tbf rate "$rate" burst "$burst" \
		latency "$lim" overhead 24 || return 1
	tc -n $h qdisc replace dev eth0 handle ffff: ingress || return 1
	tc -n $h filter replace dev eth0 parent ffff: pref 1 protocol all \
		u32 match u32 0 0 action mirred egress redirect dev ifb0
}

topo_unshape_host() {
	local h=$P-h$1
	tc -n $h qdisc del dev eth0 ingress 2>/dev/null
	tc -n $h qdisc del dev eth0 root 2>/dev/null
	ip -n $h link del ifb0 2>/dev/null
	return 0
}

topo_unimpair() {
	local w=$P-w$1 d
	for d in tosw tohost; do
		ip netns exec $w tc qdisc del dev $d clsact 2>/dev/null
		ip netns exec $w tc qdisc del dev $d root 2>/dev/null
	done
	return 0
}

# topo_agent DIR [CONFIG LINES...]: esa-agent in the switch namespace
# (docs/agent.md), listening on 10.255.0.1:7681, the switch's service
# address, which it adds to the switch's lo for that.  Its key is DIR/key
# (made here if missing), its configuration DIR/agent.conf (these lines, and
# the ones given), its state DIR/agent.state; counters (JSON) go to
# DIR/agent.out, its log to DIR/agent.log.  TOPO_AGENT: its pid.
topo_agent() {
	local d=$1
	shift
	ip -n $SW addr replace 10.255.0.1/32 dev lo || return 1
	[ -e "$d/key" ] || $B/esa-agent --new-key "$d/key" || return 1
	{
		echo "listen 10.255.0.1:7681"
		echo "key $d/key"
		echo "state $d/agent.state"
		echo "pin $PIN"
		printf '%s\n' "$@"
	} > "$d/agent.conf"
	topo_agent_start "$d"
}

# topo_agent_start DIR: the agent of topo_agent DIR (again), once it listens.
topo_agent_start() {
	local t n
	n=$(grep -c listening "$1/agent.log" 2>/dev/null)
	nsenter --net=/run/netns/$SW $B/esa-agent -c "$1/agent.conf" -j >>"$1/agent.out" \
		2>>"$1/agent.log" &
	TOPO_AGENT=$!
	TOPO_PIDS="$TOPO_PIDS $!"
	for t in $(seq 100); do
		[ "$(grep -c listening "$1/agent.log")" -gt "${n:-0}" ] && return 0
		kill -0 $TOPO_AGENT 2>/dev/null || break
		sleep 0.1
	done
	echo "esa-agent did not start: $(tail -3 "$1/agent.log")" >&2
	return 1
}

# topo_bg CMD...: run CMD in the background, remember its pid for cleanup.
topo_bg() {
	"$@" &
	TOPO_PIDS="$TOPO_PIDS $!"
}

# topo_stop PID [LOG]: SIGTERM, and SIGKILL if PID still runs 10 s later
# (its kernel stack appended to LOG first): a process stuck in the kernel
# (opening AF_XDP once hung on a shared machine) must not hold a run up.
topo_stop() {
	local t
	kill -TERM "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
	for t in $(seq 100); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		{ echo "pid $1 ($(cat /proc/$1/comm)) did not end 10 s after SIGTERM, in:"
		  cat /proc/$1/stack; } >> "${2:-/dev/stderr}" 2>&1
		kill -KILL "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
	return 0
}

# topo_start_ps HOST OUT ERR HUNG -- ESA-PS ARGS...: esa-ps in host HOST's
# namespace, its stdout to OUT, stderr to ERR; waits until it serves.  One
# silent for 20 s is killed, its kernel stack appended to HUNG, and started
# again (twice at most: on a shared machine, opening AF_XDP once hung); one
# that exits is tried again too.  0 with its pid in TOPO_PSPID (and in
# TOPO_PIDS, for the cleanup), or 1 with why in TOPO_PSWHY.
topo_start_ps() {
	local h=$1 out=$2 err=$3 hung=$4 try t pid
	shift 4
	[ "${1:-}" = "--" ] && shift
	for try in 1 2 3; do
		ip netns exec $P-h$h $B/esa-ps "$@" >"$out" 2>"$err" &
		pid=$!
		for t in $(seq 200); do
			if grep -qs serving "$err"; then
				TOPO_PSPID=$pid
				TOPO_PIDS="$TOPO_PIDS $pid"
				return 0
			fi
			kill -0 $pid 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 $pid 2>/dev/null; then
			TOPO_PSWHY="silent for 20 s"
			{ echo "try $try: $TOPO_PSWHY, in"; cat /proc/$pid/stack; } >>"$hung" 2>&1
			kill -KILL $pid
			wait $pid 2>/dev/null
		else
			wait $pid
			TOPO_PSWHY="exited with status $?: $(tail -n 1 "$err")"
		fi
		echo "esa-ps on host $h did not start ($TOPO_PSWHY), try $try of 3" >&2
	done
	TOPO_PSWHY="esa-ps did not start in 3 tries ($TOPO_PSWHY)"
	return 1
}

topo_cleanup() {
	local p i
	for p in $TOPO_PIDS; do
		kill "$p" 2>/dev/null
	done
	for p in $TOPO_PIDS; do
		topo_stop "$p"
	done
	TOPO_PIDS=""
	[ -n "${SW:-}" ] && [ -e /run/netns/$SW ] && topo_unload
	for i in $TOPO_HOSTS; do
		ip netns del $P-h$i 2>/dev/null
		ip netns del $P-w$i 2>/dev/null
	done
	for i in $TOPO_NS; do
		ip netns del $i 2>/dev/null
	done
	TOPO_NS=""
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
# Its PS is on host $TOPO_PS (250) at port 9000, as topo_jobspec registers it.
topo_jobrun() {
	local id=$1 port=$2 i
	shift 2
	local hosts=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do hosts+=("$1"); shift; done
	[ "${1:-}" = "--" ] && shift
	printf 'job %s ps=10.9.%s.2:9000 %s' "$id" "${TOPO_PS:-250}" "$*"
	for i in "${hosts[@]}"; do
		printf ' worker netns=/run/netns/%s-h%s 10.9.%s.2:%s' "$P" "$i" "$i" "$port"
	done
	printf '\n'
}
