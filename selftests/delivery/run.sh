#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Delivery and trust on live frames (suite 25-delivery): real libesa
# workers (esa-jobs) and esa-ps behind the XDP switch in namespaces, in
# native and in generic (SKB) mode, with several workers of a job behind
# one port (a "rack": a bridge with hosts), jobs of 1 and 64 workers, and
# two hostile hosts forging every packet the trust model refuses while the
# jobs run (docs/protocol.md, "Trust").
#
#   h1 ---------------------------- p1 \
#   rack 2 (bridge): h2.1 h2.2 h2.3  \  |
#                    h2.4 (rogue) --- p2 |
#   h3 ---------------------------- p3  +- ns $P-sw [ESA on every port,
#   rack 4: h4.1 .. h4.4 ---------- p4  |   rp_filter on: what the
#   h5 (rogue) -------------------- p5  |   operator adds, docs]
#   h250 (esa-ps) ----------------- p250/
#
#   job 1: h1, h2.1, h2.2 (their MACs given at registration), float32,
#          running until the attack has ended (esa-jobs --stop-file)
#   job 2: h2.3, h3, int32            job 3: h3 alone (one worker)
#   job 4: 64 workers, 16 on each of h4.1 .. h4.4, int32
#
# Per mode (native and generic) and policy (esa, atp): every sum
# exact; every worker got each result the switch completed exactly once
# (result copies = completions x workers, one per member, none dropped)
# and most of its results from the switch;
# every forgery dropped and counted where the trust model says: the switch
# (drop_place, drop_ack), the kernel's reverse-path filter, the PS, the
# workers.  Then, per mode, a PS the switch has no next hop for: the sum
# reaches it through the kernel stack, is refused, and the resend makes it
# good.  Then generic mode's fan-out against another XDP program's
# metadata (fanout_meta.sh).  First, one chunk's copies raw on the wire in
# each mode, checksums and all (fanout_one.sh).  Prints TAP.  KEEP=1 keeps the logs.
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}
P=esad$$
. selftests/esa/tap.sh

echo "TAP version 13"
for f in esactl esa-jobs esa-ps esa_pass.bpf.o meta_forge.bpf.o; do
	[ -e $B/$f ] || tap_skip_all "$B/$f missing (run make)"
done
[ "$(id -u)" = 0 ] || tap_skip_all "needs root"

. selftests/hosts/topo.sh
topo_init
LOG=$(mktemp -d)
cleanup() { topo_cleanup; [ -n "${KEEP:-}" ] && echo "# logs in $LOG" || rm -rf "$LOG"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

PS=10.9.250.2:9000
mac_of() { ip -n $1 link show ${2:-eth0} | awk '/link\/ether/ { print $2 }'; }

setup() {
	topo_switch || return 1
	ip netns exec $SW sysctl -qw net.ipv4.conf.all.rp_filter=1 \
		net.ipv4.conf.default.rp_filter=1 || return 1
	topo_host 1 && topo_rack 2 4 && topo_host 3 && topo_rack 4 4 &&
		topo_host 5 && topo_host 250
}
check "topology: 6 ports, two racks behind two of them, rogues on a rack and on a port" setup

# The registration words (esactl and esa-ps take the same).
J1="job 1 ps $PS workers 10.9.1.2:6001 10.9.2.2:6001@p2/$(mac_of $P-h2.1) 10.9.2.3:6001@p2/$(mac_of $P-h2.2) max-prio 3"
J2="job 2 ps $PS workers 10.9.2.4:6002 10.9.3.2:6002 max-prio 3"
J3="job 3 ps $PS workers 10.9.3.2:6003 max-prio 3"
J4="job 4 ps $PS workers"
for k in 1 2 3 4; do for q in $(seq 0 15); do J4="$J4 10.9.4.$((k + 1)):$((7100 + q))"; done; done
J4="$J4 max-prio 3 region auto 64"

# What esa-ps takes of them (it needs no ports of the switch).
ps_words() { echo "$1" | sed 's/@[^ ]*//g'; }

# esa-jobs' words: the workers in their namespaces.  Jobs 1, 2 and 4 resend
# after 1 s (libesa's default is 10 ms): whether a result reaches a worker
# from the switch, which the checks below count, must not depend on how
# fast a loaded machine moves the switch's copies (generic mode's tc
# clones, policy atp's round trip to the PS) against the resend timer.
T="timeout_ms=1000 timeout_max_ms=1000"
W1="job 1 ps=$PS dtype=f32 prio=1 prio_max=3 iters=100000 $T worker netns=/run/netns/$P-h1 10.9.1.2:6001 worker netns=/run/netns/$P-h2.1 10.9.2.2:6001 worker netns=/run/netns/$P-h2.2 10.9.2.3:6001"
W2="job 2 ps=$PS dtype=i32 prio=2 prio_max=3 $T worker netns=/run/netns/$P-h2.3 10.9.2.4:6002 worker netns=/run/netns/$P-h3 10.9.3.2:6002"
W3="job 3 ps=$PS dtype=f32 prio=1 prio_max=3 worker netns=/run/netns/$P-h3 10.9.3.2:6003"
W4="job 4 ps=$PS dtype=i32 prio=3 prio_max=3 window=4 elems=16384 $T"
for k in 1 2 3 4; do for q in $(seq 0 15); do
	W4="$W4 worker netns=/run/netns/$P-h4.$k 10.9.4.$((k + 1)):$((7100 + q))"
done; done

# json FILE EXPR: a python expression over the last JSON document in FILE.
json() {
	$TOPO_PY -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
def job(j): return [x for x in d["jobs"] if x["job"] == j][0]
print(eval(sys.argv[2]))' "$@" 2>/dev/null
}
swc() { json $LOG/$M.sw.json "job($1)['$2']"; }	# swc JOB COUNTER
rpf() { ip netns exec $SW nstat -az TcpExtIPReversePathFilter | awk '/IPReverse/ { print $2 }'; }

# forge NS KEY=VALUE...: a hostile host's frames (forge.py); the number
# sent goes to $LOG/$M.forge.*.
forge() {
	local ns=$1 f
	shift
	f=$(mktemp $LOG/$M.forge.XXXXXX)
	ip netns exec $P-$ns $TOPO_PY selftests/delivery/forge.py eth0 gap=0.0002 "$@" >$f
}

# Every forgery of the trust model, from the rogue behind p5 and the one on
# rack 2, all at once while the jobs run.  Each sends N frames of each kind.
# It begins once every job is at work (the switch sent results of each:
# every worker of each, job 1's among them, is open and sending), and the
# jobs run until it has ended ($LOG/$M.forged: esa-jobs --stop-file).
N=200
all_at_work() {
	local j
	for j in 1 2 3 4; do [ "$(topo_counter $j result_tx)" -gt 0 ] 2>/dev/null || return 1; done
}
attack() {
	local p5 p2 h21 h22 sw=10.255.0.1
	p5=$(mac_of $SW p5) p2=$(mac_of $SW p2)
	h21=$(mac_of $P-h2.1) h22=$(mac_of $P-h2.2)
	# (not all at work in 120 s: no attack, and the jobs stop; checks fail)
	topo_until 120 all_at_work || { echo 0 >$LOG/$M.forged; return 1; }
	touch $LOG/$M.attack
	# To the hosts, one kind after the other (their sockets are busy):
	# 1. to job 1's rank 0: a result from the rogue, and FETCHes (a
	#    reflector would answer them to the rogue); 2. to the PS: a whole
	#    partial of job 2 from the rogue's address, one spoofing the
	#    switch's address (reverse-path filtered), and an unrequested FETCH
	#    answer as rank 1 of job 2
	{
		forge h5 dmac=$p5 src=10.9.5.2 dst=10.9.1.2 dport=6001 type=result job=1 bitmap=7 n=$N gap=0.001
		forge h5 dmac=$p5 src=10.9.5.2 sport=9000 dst=10.9.1.2 dport=6001 type=fetch job=1 n=$N gap=0.001
		forge h5 dmac=$p5 src=10.9.5.2 dst=10.9.250.2 dport=9000 type=partial job=2 bitmap=3 reason=1 n=$N gap=0.001
		forge h5 dmac=$p5 src=$sw dst=10.9.250.2 dport=9000 type=partial job=2 bitmap=3 reason=1 n=$N gap=0.001
		forge h5 dmac=$p5 src=10.9.5.2 sport=6002 dst=10.9.250.2 dport=9000 type=result job=2 rank=1 bitmap=3 n=$N gap=0.001
	} &
	# 3. From the rack, meanwhile: to its neighbours straight over the
	#    bridge, a result to job 1's rank 1 and FETCHes to its rank 2; to
	#    the PS, spoofing its neighbour h2.3 (job 2's rank 0; the
	#    reverse-path filter lets that through: it is on the same port), a
	#    partial and an unrequested FETCH answer
	{
		forge h2.4 dmac=$h21 src=10.9.2.5 dst=10.9.2.2 dport=6001 type=result job=1 bitmap=7 n=$N gap=0.001
		forge h2.4 dmac=$h22 src=10.9.2.5 sport=9000 dst=10.9.2.3 dport=6001 type=fetch job=1 n=$N gap=0.001
		forge h2.4 dmac=$p2 src=10.9.2.4 sport=6002 dst=10.9.250.2 dport=9000 type=partial job=2 bitmap=3 reason=1 n=$N gap=0.001
		forge h2.4 dmac=$p2 src=10.9.2.4 sport=6002 dst=10.9.250.2 dport=9000 type=result job=2 rank=0 bitmap=3 n=$N gap=0.001
	} &
	# To the switch, all at once: 4. DATA as job 1's ranks, rank 0 from
	# another port, rank 1 from its own rack with another MAC, and rank 0
	# of job 4 likewise; 5. ACKs of job 2 (policy atp frees a held sum for
	# them), from the rogue's own address and from the PS's address on
	# the wrong port
	forge h5 dmac=$p5 src=10.9.1.2 sport=6001 dst=$sw type=data job=1 rank=0 n=$N &
	forge h2.4 dmac=$p2 src=10.9.2.2 sport=6001 dst=$sw type=data job=1 rank=1 n=$N &
	forge h2.4 dmac=$p2 src=10.9.4.2 sport=7100 dst=$sw type=data job=4 rank=0 n=$N &
	forge h5 dmac=$p5 src=10.9.5.2 sport=9000 dst=$sw type=ack job=2 bitmap=3 n=$N &
	forge h2.4 dmac=$p2 src=10.9.250.2 sport=9000 dst=$sw type=ack job=2 bitmap=3 n=$N &
	wait
	cat $LOG/$M.forge.* | awk '{ s += $1 } END { print s }' >$LOG/$M.count
	mv $LOG/$M.count $LOG/$M.forged
}

# mode MODE POLICY: the jobs, under attack, through the switch in MODE.
mode() {
	local rc rpf0
	M=$1-$2
	TOPO_MODE=$1
	topo_unload
	topo_load slots 512 values 256 policy $2 || { nok "$M: switch loaded"; return; }
	for j in "$J1" "$J2" "$J3" "$J4"; do
		esactl job add ${j#job } || { nok "$M: job added: $j"; return; }
	done
	check "$M: every port attached in $1 mode" \
		[ "$(esactl -j dev show | grep -o "\"xdp\":\"$1\"" | wc -l)" = 6 ]
	ip netns exec $P-h250 $B/esa-ps -j -s 10.255.0.1 $(ps_words "$J1 $J2 $J3 $J4") \
		>$LOG/$M.ps.json 2>$LOG/$M.ps.err &
	local pspid=$!
	TOPO_PIDS="$TOPO_PIDS $pspid"
	topo_until 30 grep -q serving $LOG/$M.ps.err || nok "$M: PS serving"
	rpf0=$(rpf)
	attack &
	local apid=$!
	# every job at least its first iteration, then 4, or fewer once the
	# attack has ended; job 1 until then
	timeout 300 $B/esa-jobs -j -s 10.255.0.1 -n 1M -i 4 --linger 500 --stop-file $LOG/$M.forged \
		$W1 $W2 $W3 $W4 >$LOG/$M.run.json 2>$LOG/$M.run.err
	rc=$?
	wait $apid
	esactl -j stats show >$LOG/$M.sw.json
	kill -TERM $pspid 2>/dev/null
	wait $pspid 2>/dev/null
	[ $rc = 0 ] || sed 's/^/# /' $LOG/$M.run.err | head -10
	json $LOG/$M.run.json '"\n".join("job %d: %s in %.2fs, %d results from the switch, %d from the PS, %d duplicates" % (x["job"], "ok" if x["ok"] else "FAILED " + x["error"], x["jct_s"], x["rx_results"] - x["rx_from_ps"], x["rx_from_ps"], x["rx_duplicates"]) for x in d["jobs"])' | sed 's/^/# /'
	check "$M: every allreduce of the 4 jobs right, under attack" \
		[ "$(json $LOG/$M.run.json 'all(x["ok"] for x in d["jobs"])')" = True ]
	delivery_checks
	trust_checks "$rpf0" $2
	ran_while() { [ -e "$1" ] && [ -e "$2" ] && [ "$2" -ot "$3" ]; }
	check "$M: the attack ($(cat $LOG/$M.forged 2>/dev/null) frames) ran while the jobs did (it began once all were at work, and ended before job 1 did: $(json $LOG/$M.run.json 'job(1)["iters"]') iterations)" \
		ran_while $LOG/$M.attack $LOG/$M.forged $LOG/$M.run.json
}

# Each sum the switch sends out goes once to each member: every worker gets
# it once, and the PS once unless the sum came from it (policy atp's acks).
delivery_checks() {
	local j w c a s
	local tx e p
	for j in 1:3 2:2 3:1 4:64; do
		w=${j#*:} j=${j%:*}
		c=$(swc $j completed) a=$(swc $j acks)
		# the PS's sums go to the workers through the switch too (ps_sums)
		s=$(swc $j ps_sums)
		# a copy a full port queue refused, a worker's or the PS's,
		# is counted too (copy_txerr)
		tx=$(swc $j result_tx) e=$(swc $j copy_txerr) p=$(swc $j ps_copy_tx)
		check "$M: job $j ($w workers): $((c + a)) sums sent out by the switch and $s of the PS's, each once to each worker ($tx) and $c to the PS ($p), $e refused by a full port queue" \
			[ $((c + a)) -gt 0 -a $((tx + p + e)) = $(((c + a + s) * w + c)) -a \
			  $p -le $c -a $tx -le $(((c + a + s) * w)) ]
	done
	# ... and reached them: most of the results the workers used came
	# from the switch, not from the PS's answers to their resends (a
	# fan-out that misaddresses its copies shows here, not above).
	for j in 1:3 2:2 4:64; do
		w=${j#*:} j=${j%:*}
		a=$(json $LOG/$M.run.json "job($j)['rx_results']")
		c=$(json $LOG/$M.run.json "job($j)['rx_results'] - job($j)['rx_from_ps']")
		check "$M: job $j ($w workers): most results reached the workers from the switch ($c of $a)" \
			[ "${c:-0}" -gt 0 -a $((2 * ${c:-0})) -gt "${a:-0}" ]
	done
	check "$M: no copy dropped, no sum sent the PS's way for want of a fan-out" \
		[ "$(json $LOG/$M.sw.json 'd["total"]["copy_drop"] + d["total"]["fanout_miss"]')" = 0 ]
}

trust_checks() {
	local drop
	check "$M: forged data from another port and from a rack neighbour dropped at the switch, none summed ($(swc 1 drop_place) + $(swc 4 drop_place) of $((3 * N)))" \
		[ "$(swc 1 drop_place)" = $((2 * N)) -a "$(swc 4 drop_place)" = $N ]
	if [ "$2" = atp ]; then
		drop=$(swc 2 drop_ack)
	else
		drop=$(swc 2 drop_type)	# no ACKs under policy esa
	fi
	check "$M: forged ACKs dropped at the switch ($drop of $((2 * N))), no result sent for them" \
		[ "$drop" = $((2 * N)) ]
	check "$M: the switch's spoofed address from a port: dropped by the reverse-path filter ($(( $(rpf) - $1 )))" \
		[ $(( $(rpf) - $1 )) -ge $N ]
	drop=$(json $LOG/$M.ps.json 'job(2)["drop_source"] + job(2)["drop_unasked"]')
	check "$M: forged partials and unrequested FETCH answers, from another port and from a rank's own rack, dropped at the PS ($drop of $((4 * N)))" \
		[ "$drop" = $((4 * N)) ]
	drop=$(json $LOG/$M.run.json 'job(1)["rx_untrusted"] + job(1)["fetch_refused"]')
	check "$M: forged results and FETCHes, from another port and from a rack neighbour, refused by the workers ($drop of $((4 * N))), none answered" \
		[ "$drop" = $((4 * N)) -a "$(json $LOG/$M.run.json 'job(1)["fetch_answered"]')" = 0 ]
}

# unresolved MODE: the switch has no neighbour entry for the PS.  A sum's
# copy for the PS cannot be addressed, so the sum goes whole to the PS by
# XDP_PASS, with the worker's source, and the kernel forwards it, resolving
# the next hop on the way (ps_stack); the PS refuses it (not from the
# switch: drop_source); the worker's resend then finds the next hop and the
# chunk completes, from the switch's address.  docs/protocol.md, Delivery.
ps_resolved() { ip -n $SW neigh show 10.9.250.2 dev p250 | grep -q lladdr; }
unresolved() {
	local pspid rc stack
	M=$1-unresolved
	TOPO_MODE=$1
	topo_unload
	topo_load slots 64 values 256 policy esa || { nok "$M: switch loaded"; return; }
	esactl job add 5 ps $PS workers 10.9.1.2:6005 max-prio 3 ||
		{ nok "$M: job added"; return; }
	ip netns exec $P-h250 $B/esa-ps -j -s 10.255.0.1 job 5 ps $PS workers 10.9.1.2:6005 \
		>$LOG/$M.ps.json 2>$LOG/$M.ps.err &
	pspid=$!
	TOPO_PIDS="$TOPO_PIDS $pspid"
	topo_until 30 grep -q serving $LOG/$M.ps.err || nok "$M: PS serving"
	# topo_load resolved every host: forget the PS, on both sides
	ip -n $SW neigh flush dev p250
	ip -n $P-h250 neigh flush dev eth0
	check "$M: the switch has no next hop for the PS" \
		[ -z "$(ip -n $SW neigh show 10.9.250.2 dev p250 | grep -v FAILED)" ]
	timeout 60 $B/esa-jobs -j -s 10.255.0.1 -n 256 -i 1 --linger 300 \
		job 5 ps=$PS dtype=i32 timeout_ms=100 \
		worker netns=/run/netns/$P-h1 10.9.1.2:6005 >$LOG/$M.run.json 2>$LOG/$M.run.err
	rc=$?
	esactl -j stats show >$LOG/$M.sw.json
	kill -TERM $pspid 2>/dev/null
	wait $pspid 2>/dev/null
	[ $rc = 0 ] || sed 's/^/# /' $LOG/$M.run.err | head -5
	stack=$(swc 5 ps_stack)
	check "$M: the sum went to the PS through the kernel stack ($stack, fanout_miss $(swc 5 fanout_miss))" \
		[ "${stack:-0}" -ge 1 ]
	check "$M: the PS refused what came through the stack, not from the switch ($(json $LOG/$M.ps.json 'job(5)["drop_source"]') of $stack)" \
		[ "$(json $LOG/$M.ps.json 'job(5)["drop_source"]')" = "$stack" ]
	check "$M: the next hop resolved on the way" ps_resolved
	check "$M: the worker's resend made it good: the allreduce right ($(json $LOG/$M.run.json 'job(5)["tx_resends"]') resends)" \
		[ "$(json $LOG/$M.run.json 'job(5)["ok"] and job(5)["tx_resends"] >= 1')" = True ]
}

# meta: generic mode's fan-out takes only the sums its own XDP program
# passed up, not metadata another program on the port left with the
# switch's magic (fanout_meta.sh, in a namespace of its own).
meta() {
	local ns=$P-meta line
	ip netns add $ns || { nok "meta: namespace"; return; }
	ip netns exec $ns sh -c "ip link set lo up
		selftests/delivery/fanout_meta.sh $PWD/$B/esactl $PWD/$B/meta_forge.bpf.o" \
		>$LOG/meta.tap 2>&1
	ip netns del $ns
	grep -q '^ok - ' $LOG/meta.tap || nok "meta: fanout_meta.sh ran"
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "meta: ${line#ok - }" ;;
		"not ok - "*) nok "meta: ${line#not ok - }" ;;
		esac
	done <$LOG/meta.tap
}

# wire MODE: one chunk's result copies as they are on the wire, raw
# (fanout_one.sh, the VM suite's check, in a namespace of its own): each
# addressed to its member, the sum exact, the IP and UDP checksums right
# (a UDP checksum of 0 would keep the hosts' GRO from coalescing results).
wire() {
	local ns=$P-wire-$1 line
	ip netns add $ns || { nok "wire $1: namespace"; return; }
	ip netns exec $ns sh -c "ip link set lo up
		selftests/delivery/fanout_one.sh $PWD/$B/esactl \
			$PWD/selftests/delivery/fanout_probe.py $1" >$LOG/wire-$1.tap 2>&1
	ip netns del $ns
	grep -q '^ok - ' $LOG/wire-$1.tap || nok "wire $1: fanout_one.sh ran"
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "wire: ${line#ok - }" ;;
		"not ok - "*) nok "wire: ${line#not ok - }"
			grep '^# ' $LOG/wire-$1.tap ;;
		esac
	done <$LOG/wire-$1.tap
}

wire native
wire generic
mode native esa
mode native atp
mode generic esa
mode generic atp
unresolved native
unresolved generic
meta

tap_end
