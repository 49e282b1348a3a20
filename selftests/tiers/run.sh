#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two levels on live frames (suite 35-tiers): three leaves and a spine, each
# an XDP switch in its own namespace, real libesa workers (esa-jobs) in
# namespaces of their own under the leaves, esa-ps behind the spine.  Each
# leaf-spine link runs through a wire namespace (a bridge) that shapes it
# (tbf) and, per scenario, loses packets (impair.bpf.o) or goes down
# mid-run.  docs/design.md, "Two levels".
#
#   h1.1 h1.2 -- p1 p2 [leaf 1, 10.254.1.1] uplink -- w1 (tbf, loss) -- u1 \
#   h2.1 h2.2 -- p1 p2 [leaf 2, 10.254.2.1] uplink -- w2 (tbf, loss) -- u2  [spine] p250 -- h250
#   h3.1      -- p1    [leaf 3, 10.254.3.1] uplink -- w3 (tbf, loss) -- u3 /  10.255.0.1  (esa-ps)
#
#   job 1: 6 ranks, two under each leaf (int32)
#   job 2: 4 ranks, interleaved: leaf 2 has ranks 0 and 2, leaf 1 rank 1,
#          leaf 3 rank 3 (a leaf of one rank) (float32)
#   job 3: 3 ranks, all under leaf 1: it never touches the spine (int32)
#
# Windows of 32 chunks against 64 slots a leaf and 32 at the spine: both
# levels contend (job 2 preempts job 1 at the spine); policy switchml gets a
# window's region per job at each box instead.  Per scenario (clean, 1% and
# 5% loss on every leaf-spine link, leaf 2's link down for 1.5 s mid-run,
# policies atp and switchml with 1% loss, and clean with the switches in
# generic mode): every sum exact at every rank, each result taken once by
# each worker (a duplicate only where a resend asked again), every result
# the switch chain sent taken (without loss, most results came that way,
# not from the PS); the counters of each level tell the story: leaves send
# sums up and each result from the spine once to each of their ranks, the
# spine sends each result once to each leaf and once to the PS, the PS
# finishes what the network lost.  Then a leaf without a next hop to its
# spine (unresolved_up).  Then make bench-multirack, small: it
# runs, and ends with its line.  Prints TAP.  KEEP=1 keeps the logs.
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}
P=esat$$
. selftests/esa/tap.sh	# ok, nok, check, tap_skip_all, tap_end

echo "TAP version 13"
for f in esactl esa-jobs esa-ps esa_pass.bpf.o impair.bpf.o; do
	[ -e $B/$f ] || tap_skip_all "$B/$f missing (run make)"
done
[ "$(id -u)" = 0 ] || tap_skip_all "needs root"

. selftests/tiers/topo.sh
. selftests/hosts/topo.sh	# topo_until, TOPO_PY
tiers_init
LOG=$(mktemp -d)
PIDS=""
PS=10.9.250.2:9000

cleanup() {
	local x
	for x in $PIDS; do kill $x 2>/dev/null; done
	for x in $PIDS; do wait $x 2>/dev/null; done
	tiers_cleanup
	[ -n "${KEEP:-}" ] && echo "# logs in $LOG" || rm -rf "$LOG"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

check "topology: a spine, three leaves behind shaped links, five worker hosts, a PS" \
	tiers_setup 3 1.1 1.2 2.1 2.2 3.1

# shape L [SECTION]: leaf L's link at 400 Mbit/s each way, maybe lossy.
shape() { tiers_shape $1 400mbit ${2:-}; }

# load POLICY: the spine (32 slots) and the leaves (64 slots each); for
# switchml's static regions, a window (32) for each job at each box.
load() {
	local l sp=32 lf=64
	[ $1 = switchml ] && sp=64 lf=96
	tiers_load sp addr $SPINE slots $sp values 256 policy $1 || return 1
	for l in 1 2 3; do
		tiers_load l$l addr 10.254.$l.1 slots $lf values 256 policy $1 || return 1
	done
	tiers_resolve
}

# region: switchml's words of a job's registration (esactl places it).
region() { [ $POLICY = switchml ] && echo region auto 32; }

# Each rank's address: job J rank R lives on host H at port 60J(R).
a() { echo 10.$((10 + ${1%.*})).${1#*.}.2:$2; }
# job 1: ranks 0-1 leaf 1, 2-3 leaf 2, 4-5 leaf 3 (h3.1 twice)
J1=("$(a 1.1 6001)" "$(a 1.2 6001)" "$(a 2.1 6001)" "$(a 2.2 6001)" "$(a 3.1 6001)" "$(a 3.1 6011)")
J1L=(1 1 2 2 3 3)
# job 2: leaf 2 ranks 0 and 2, leaf 1 rank 1, leaf 3 rank 3
J2=("$(a 2.1 6002)" "$(a 1.1 6002)" "$(a 2.2 6002)" "$(a 3.1 6002)")
J2L=(2 1 2 3)
# job 3: all under leaf 1
J3=("$(a 1.1 6003)" "$(a 1.2 6003)" "$(a 1.1 6013)")

# leaf_words L ID ADDRS LEAVES: the job at leaf L ("-" for ranks elsewhere).
leaf_words() {
	local l=$1 id=$2 i
	local -n addrs=$3 leaves=$4
	printf 'job %s ps %s workers' $id $PS
	for i in "${!addrs[@]}"; do
		[ "${leaves[$i]}" = $l ] && printf ' %s' "${addrs[$i]}" || printf ' -'
	done
	printf ' upstream %s max-prio 3 %s\n' $SPINE "$(region)"
}

register() {
	local l
	for l in 1 2 3; do
		sw l$l job add $(leaf_words $l 1 J1 J1L | cut -d' ' -f2-) || return 1
		sw l$l job add $(leaf_words $l 2 J2 J2L | cut -d' ' -f2-) || return 1
	done
	sw l1 job add 3 ps $PS workers "${J3[@]}" max-prio 3 $(region) || return 1
	sw sp job add 1 ps $PS leaves 10.254.1.1=0-1 10.254.2.1=2-3 10.254.3.1=4-5 \
		max-prio 3 $(region) || return 1
	sw sp job add 2 ps $PS leaves 10.254.2.1=0,2 10.254.1.1=1 10.254.3.1=3 \
		max-prio 3 $(region)
}

# esa-jobs' words for job ID of ADDRS under LEAVES (each worker to its leaf).
run_words() {
	local id=$1 extra=$2 i
	local -n addrs=$3 leaves=$4
	printf 'job %s ps=%s %s' $id $PS "$extra"
	for i in "${!addrs[@]}"; do
		printf ' worker netns=/run/netns/%s-h%s switch=10.254.%s.1 %s' $P \
			"$(host_of ${addrs[$i]})" ${leaves[$i]} ${addrs[$i]}
	done
}
host_of() { local ip=${1%:*}; ip=${ip#10.}; echo "$((${ip%%.*} - 10)).$(echo $ip | cut -d. -f2)"; }

J3L=(1 1 1)

json() {
	$TOPO_PY -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
def job(j): return [x for x in d["jobs"] if x["job"] == j][0]
print(eval(sys.argv[2]))' "$@" 2>/dev/null
}
# c SWITCH JOB COUNTER: a counter of this scenario's switch.
c() { json $LOG/$S.$1.json "job($2)['$3']"; }

# Leaf 2's uplink down for 1.5 s once jobs 1 and 2 are at work across it
# (results came down to leaf 2), then up; the jobs run (--stop-file) until
# the PS has merged sums, what the link lost.
at_work() { [ "$(json_now l2 'job(1)["down_rx"] * job(2)["down_rx"]')" -gt 0 ] 2>/dev/null; }
json_now() { sw $1 -j stats show >$LOG/$S.now.json && json $LOG/$S.now.json "$2"; }
ps_merged() {	# ps_merged PSPID: the PS merged sums of jobs 1 and 2 (SIGUSR1)
	local lines
	lines=$(wc -l <$LOG/$S.ps.json)
	kill -USR1 $1 && topo_until 10 lines_over $LOG/$S.ps.json $lines &&
		[ "$(json $LOG/$S.ps.json 'job(1)["done_merged"] + job(2)["done_merged"]')" -gt 0 ] 2>/dev/null
}
lines_over() { [ "$(wc -l <$1)" -gt $2 ]; }
linkdown() {	# linkdown PSPID STOPFILE
	topo_until 60 at_work
	ip -n $P-w2 link set toleaf down
	sleep 1.5	# how long it is down (no check depends on it)
	ip -n $P-w2 link set toleaf up
	topo_until 60 ps_merged $1
	touch $2
}

# scenario NAME POLICY LOSS [down]: the three jobs through both levels.
scenario() {
	local rc x down=${4:-} pspid downpid iters="-i 6" stop=$LOG/$1.stop
	S=$1 POLICY=$2
	for x in 1 2 3; do shape $x $3 || { nok "$S: links shaped"; return; }; done
	load $2 || { nok "$S: switches loaded ($2)"; return; }
	register || { nok "$S: jobs registered at the leaves and the spine"; return; }
	ip netns exec $P-h250 $B/esa-ps -j -s $SPINE -s 10.254.1.1 -s 10.254.2.1 -s 10.254.3.1 \
		job 1 ps $PS workers "${J1[@]}" job 2 ps $PS workers "${J2[@]}" \
		job 3 ps $PS workers "${J3[@]}" >$LOG/$S.ps.json 2>$LOG/$S.ps.err &
	pspid=$!
	PIDS="$PIDS $pspid"
	topo_until 30 grep -q serving $LOG/$S.ps.err || nok "$S: PS serving"
	downpid=
	rm -f $stop
	if [ -n "$down" ]; then
		iters="-i 100000 --stop-file $stop"
		linkdown $pspid $stop &
		downpid=$!
	fi
	# shellcheck disable=SC2086
	timeout 300 $B/esa-jobs -j -s $SPINE -n 256K $iters --linger 500 \
		$(run_words 1 "dtype=i32 prio=1 prio_max=3 window=32" J1 J1L) \
		$(run_words 2 "dtype=f32 prio=3 prio_max=3 window=32" J2 J2L) \
		$(run_words 3 "dtype=i32 prio=2 prio_max=3 window=32" J3 J3L) \
		>$LOG/$S.run.json 2>$LOG/$S.run.err
	rc=$?
	[ -n "$downpid" ] && wait $downpid
	for x in sp l1 l2 l3; do sw $x -j stats show >$LOG/$S.$x.json; done
	kill -TERM $pspid 2>/dev/null
	wait $pspid 2>/dev/null
	[ $rc = 0 ] || sed 's/^/# /' $LOG/$S.run.err | head -10
	json $LOG/$S.run.json '"\n".join("job %d: %s in %.2fs, %d results from the switches, %d from the PS, %d duplicates" % (x["job"], "ok" if x["ok"] else "FAILED " + x["error"], x["jct_s"], x["rx_results"] - x["rx_from_ps"], x["rx_from_ps"], x["rx_duplicates"]) for x in d["jobs"])' | sed 's/^/# /'
	for x in 1 2; do
		echo "# job $x: spine completed $(c sp $x completed) preempted $(c sp $x preempt_caused)" \
		     "collisions $(c sp $x collisions) aged $(c sp $x aged);" \
		     "leaves up $(( $(c l1 $x up_tx) + $(c l2 $x up_tx) + $(c l3 $x up_tx) ))" \
		     "down $(( $(c l1 $x down_rx) + $(c l2 $x down_rx) + $(c l3 $x down_rx) ))" \
		     "to the PS $(( $(c l1 $x ps_tx) + $(c l2 $x ps_tx) + $(c l3 $x ps_tx) + $(c sp $x ps_tx) ))"
	done
	check "$S: every allreduce of the 3 jobs right at every rank" \
		[ "$(json $LOG/$S.run.json 'all(x["ok"] for x in d["jobs"])')" = True ]
	worker_checks "$3$down"
	level_checks "$3$down"
}

# What the workers saw.  Each packet a worker sent got exactly one result
# (a second copy only where a resend asked for one: the PS answers a
# resend whatever the switches sent).  Every result copy the leaves sent
# their ranks (the host links lose nothing) was taken, or was a duplicate
# of the PS's answer; without loss most results came that way (over all
# jobs: job 1, preempted at the spine by design, gets many from the PS).
worker_checks() {
	local x l v tx got dup bad=0 msg= all=0 rx
	check "$S: each packet of every worker got one result, duplicates within resends ($(json $LOG/$S.run.json '", ".join("job %d %d of %d, %d dup of %d resends" % (x["job"], x["rx_results"], x["tx_packets"] - x["tx_resends"], x["rx_duplicates"], x["tx_resends"]) for x in d["jobs"])'))" \
		[ "$(json $LOG/$S.run.json 'all(x["rx_results"] == x["tx_packets"] - x["tx_resends"] and x["rx_duplicates"] <= x["tx_resends"] for x in d["jobs"])')" = True ]
	for x in 1 2 3; do
		tx=0
		for l in 1 2 3; do
			v=$(c l$l $x result_tx)
			tx=$((tx + ${v:-0}))
		done
		got=$(json $LOG/$S.run.json "job($x)['rx_results'] - job($x)['rx_from_ps']")
		dup=$(json $LOG/$S.run.json "job($x)['rx_duplicates']")
		msg="$msg job $x $got of $tx;"
		[ "${got:-0}" -gt 0 -a "${got:-0}" -le $tx -a $((got + dup)) -ge $tx ] || bad=1
		all=$((all + got))
	done
	rx=$(json $LOG/$S.run.json 'sum(x["rx_results"] for x in d["jobs"])')
	[ -n "$1" ] || [ $((2 * all)) -gt $rx ] || bad=1
	check "$S: the workers took every result the switch chain sent them ($all of their $rx results${1:+; lossy or failing links: the PS answers many resends}):$msg" \
		[ $bad = 0 ]
}

# What each level did.  Every result a leaf gets from the spine goes once
# to each of its ranks of the job; every result the spine completes goes
# once to each leaf and once to the PS.
level_checks() {
	local x l r tx want
	for x in 1:3 2:3; do
		l=${x#*:} x=${x%:*}
		check "$S: job $x: the spine completed sums ($(c sp $x completed) + $(c sp $x acks) acked) and sent each once to each of its $l leaves ($(c sp $x result_tx)) and the PS ($(c sp $x ps_copy_tx))" \
			[ $(( $(c sp $x completed) + $(c sp $x acks) )) -gt 0 -a \
			  "$(c sp $x result_tx)" = $(( ($(c sp $x completed) + $(c sp $x acks)) * l )) -a \
			  "$(c sp $x ps_copy_tx)" = "$(c sp $x completed)" ]
	done
	tx=0 want=0
	for l in 1 2 3; do
		for x in 1:2 2:$([ $l = 2 ] && echo 2 || echo 1); do
			r=${x#*:} x=${x%:*}
			tx=$((tx + $(c l$l $x result_tx)))
			want=$((want + $(c l$l $x down_rx) * r))
		done
	done
	check "$S: the leaves sent each result from the spine once to each of their ranks ($tx)" \
		[ $tx = $want -a $tx -gt 0 ]
	check "$S: job 3 stayed in leaf 1 (completed $(c l1 3 completed), never up), the spine never saw it" \
		[ "$(c l1 3 up_tx)" = 0 -a $(( $(c l1 3 completed) + $(c l1 3 acks) )) -gt 0 -a \
		  "$(json $LOG/$S.sp.json 'len([x for x in d["jobs"] if x["job"] == 3])')" = 0 ]
	check "$S: no copy dropped, nothing refused by a switch on the way" \
		[ "$(json $LOG/$S.sp.json 'sum(v for k, v in d["total"].items() if k.startswith("drop_") or k in ("copy_drop", "fanout_miss"))')" = 0 -a \
		  "$(for l in 1 2 3; do json $LOG/$S.l$l.json 'sum(v for k, v in d["total"].items() if k.startswith("drop_") and k != "drop_noroute" or k in ("copy_drop", "fanout_miss"))'; done | sort -u)" = 0 ]
	case $1 in
	"") ;;
	*down)
		check "$S: leaf 2's link down 1.5 s: the PS finished what it lost ($(json $LOG/$S.ps.json 'job(1)["done_merged"] + job(2)["done_merged"]') sums merged)" \
			[ "$(json $LOG/$S.ps.json 'job(1)["done_merged"] + job(2)["done_merged"]')" -gt 0 ] ;;
	*)
		check "$S: the PS finished sums the lossy links broke ($(json $LOG/$S.ps.json 'job(1)["done_merged"] + job(2)["done_merged"]'))" \
			[ "$(json $LOG/$S.ps.json 'job(1)["done_merged"] + job(2)["done_merged"]')" -gt 0 ] ;;
	esac
}

# unresolved_up: leaf 1 has no neighbour entry for its next hop to the
# spine.  A sum of leaf 1's ranks cannot go up by the fast path: it goes
# through the kernel stack with the worker's source (ps_stack), which
# forwards it, resolving the next hop on the way; the spine refuses it
# (not from the leaf: drop_spoof); the workers' resends make it good
# through the PS, and the next sums go up from the leaf's address.  With
# the leaf's own address as its source the stack drops it as a martian and
# never resolves the next hop.  The same rule as a PS's packets (suite
# 25-delivery, "unresolved"); docs/protocol.md, "Two levels".
up_resolved() { ip -n $P-l1 neigh show 10.8.1.1 dev uplink | grep -q lladdr; }
unresolved_up() {
	local rc x pspid stack spoof
	S=unresolved-up POLICY=esa
	for x in 1 2 3; do shape $x || { nok "$S: links shaped"; return; }; done
	load esa || { nok "$S: switches loaded"; return; }
	register || { nok "$S: jobs registered"; return; }
	ip netns exec $P-h250 $B/esa-ps -j -s $SPINE -s 10.254.1.1 -s 10.254.2.1 -s 10.254.3.1 \
		job 1 ps $PS workers "${J1[@]}" >$LOG/$S.ps.json 2>$LOG/$S.ps.err &
	pspid=$!
	PIDS="$PIDS $pspid"
	sleep 0.3
	# tiers_resolve resolved every next hop: forget leaf 1's to the spine
	ip -n $P-l1 neigh flush dev uplink
	check "$S: leaf 1 has no next hop for the spine" \
		[ -z "$(ip -n $P-l1 neigh show 10.8.1.1 dev uplink | grep -v FAILED)" ]
	timeout 120 $B/esa-jobs -j -s $SPINE -n 16K -i 2 --linger 300 \
		$(run_words 1 "dtype=i32 prio=1 prio_max=3 window=8 timeout_ms=100" J1 J1L) \
		>$LOG/$S.run.json 2>$LOG/$S.run.err
	rc=$?
	for x in sp l1; do sw $x -j stats show >$LOG/$S.$x.json; done
	kill -TERM $pspid 2>/dev/null
	wait $pspid 2>/dev/null
	[ $rc = 0 ] || sed 's/^/# /' $LOG/$S.run.err | head -5
	stack=$(c l1 1 ps_stack) spoof=$(c sp 1 drop_spoof)
	check "$S: leaf 1's sums went up through the kernel stack ($stack)" \
		[ "${stack:-0}" -ge 1 ]
	check "$S: the spine refused what came through the stack, not from the leaf ($spoof of $stack)" \
		[ "${spoof:-0}" -ge 1 -a "${spoof:-0}" -le "${stack:-0}" ]
	check "$S: leaf 1's next hop to the spine resolved on the way" up_resolved
	check "$S: the sums came right at every rank, then up from the leaf's address (leaf 1 up_tx $(c l1 1 up_tx), spine completed $(c sp 1 completed))" \
		[ "$(json $LOG/$S.run.json 'all(x["ok"] for x in d["jobs"])')" = True -a \
		  "$(c sp 1 completed)" -gt 0 ]
}

scenario clean esa ""
unresolved_up
scenario loss1 esa loss1
scenario loss5 esa loss5
scenario linkdown esa "" down
scenario atp-loss1 atp loss1
scenario switchml-loss1 switchml loss1
# generic (SKB) mode: the switches' results fan out through tc (esa_tc_fan)
TOPO_MODE=generic
scenario generic esa ""
TOPO_MODE=

# make bench-multirack, small: it runs end to end, its sums are right (it
# fails otherwise), two levels put fewer bytes on the leaf-spine links
# than flat, and it ends with its line.  Its times are not judged.
multirack() {
	local out=$LOG/multirack.txt line fb tb
	OUTPUT=$B MULTIRACK_ITERS=2 MULTIRACK_ELEMS=64K \
		MULTIRACK_SIM_ARGS="--jobs 8 --load 4 --scale 0.001 --iters 2-3 --pool 256 --window 32" \
		timeout 600 user/bench/multirack.sh >$out 2>&1
	check "bench-multirack ran, every allreduce right flat and on two levels" [ $? = 0 ]
	sed -n 's/^testbed: /# /p' $out
	fb=$(sed -n 's/^testbed: .* flat=\([0-9]*\) two_level=\([0-9]*\) .*/\1/p' $out)
	tb=$(sed -n 's/^testbed: .* flat=\([0-9]*\) two_level=\([0-9]*\) .*/\2/p' $out)
	check "bench-multirack: two levels put fewer bytes on the leaf-spine links (${tb:-?} against ${fb:-?} a run)" \
		[ -n "$fb" -a -n "$tb" ] && [ "$tb" -gt 0 -a "$tb" -lt "$fb" ]
	line=$(tail -n 1 $out)
	check "bench-multirack ends with its line: $line" \
		grep -Eqx 'multirack: uplink_bytes_ratio=[0-9.]+ jct_speedup_vs_flat=[0-9.]+' <<<"$line"
}
multirack

tap_end
