#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The host side's tests (suite 30-hosts): libesa's, its AF_XDP transport's
# and the PS's unit tests, esa-jobs' own checks on loopback (threads sharing
# a job's settings, a worker that cannot open, a bad address), then real
# jobs through the XDP switch in network namespaces:
#
#   ns $P-hI (I = 1..9) --wire $P-wI (bridge, impairable)-- p$I \
#                                                               +- ns $P-sw [ESA]
#   ns $P-h250 (esa-ps) ------------------------------------ p250 /
#
#   job 1: 3 workers (h1-h3), float32, priority srsf
#   job 2: 2 workers (h4-h5), int32, static priority 1
#   job 3: 4 workers (h6-h9), float32, priority las
#
# Scenarios: clean links; 1% loss, 5% loss, duplication and reordering on
# every worker link (both directions); job 2 run again under its id with the
# same PS (a new run number); forged packets to the PS (trust); a route to
# the switch narrower than the packets (refused at open); a worker
# killed mid-job (its peer's error names it); the PS, then the switch, dead
# (the workers' errors name them); the PS killed and restarted mid-run over
# links with loss, duplication and reordering at once (impair.bpf.c's
# "mix"); over AF_XDP only, esa-ps with a dead worker host on its own link
# (xdp-neigh: its other jobs must not wait for the dead host's ARP).  Every
# result is checked by esa-jobs (int32 exact, float32 within libesa's
# documented bound).  Prints TAP.
# Environment: HOSTS_QUICK=1 runs the unit tests only; HOSTS_SCENARIOS="loss1
# killed ..." runs only those scenarios (clean loss1 loss5 dupreorder nocopy rerun
# trust mtu killed dead restart, and each again over AF_XDP: xdp-clean ...
# xdp-restart, then xdp-neigh); KEEP=1 keeps the logs.
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}
P=esah$$
. selftests/esa/tap.sh	# ok, nok, check, tap_skip_all, tap_end

echo "TAP version 13"

# ---------------------------------------------------------------- unit tests
for t in lib_test ps_test xsk_test jobdesc_test; do
	if [ ! -x $B/selftests/hosts/$t ]; then
		nok "$t built (run make)"
		continue
	fi
	out=$($B/selftests/hosts/$t 2>/tmp/$P.$t.err)
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "$t: ${line#ok * - }" ;;
		"not ok "*) nok "$t: ${line#not ok * - }" ;;
		esac
	done <<<"$out"
	if [ $rc != 0 ]; then
		sed 's/^/# /' /tmp/$P.$t.err | head -20
		grep -q "^not ok" <<<"$out" || nok "$t exited with status $rc"
	fi
	rm -f /tmp/$P.$t.err
done
# The receive buffer a worker gets without CAP_NET_ADMIN: less than asked,
# and said (lib_test's rcvbuf test, as nobody).
rcvbuf_unprivileged() {
	local out

	out=$(LIBTEST=rcvbuf setpriv --reuid=65534 --regid=65534 --clear-groups \
		$B/selftests/hosts/lib_test 2>&1)
	echo "$out" | grep '^ok 1 - as non-root' | sed 's/^ok 1 - /# /'
	grep -q '^ok 1 - as non-root' <<<"$out" && ! grep -q '^not ok' <<<"$out"
}
# io=xdp without CAP_BPF and CAP_NET_ADMIN: one line saying so; io=auto:
# UDP, and the warning says why (lib_test's xdp_refused test, as nobody).
xdp_unprivileged() {
	local out

	out=$(LIBTEST=xdp_refused setpriv --reuid=65534 --regid=65534 --clear-groups \
		$B/selftests/hosts/lib_test 2>&1)
	echo "$out" | grep '^ok 1 - ' | sed 's/^ok 1 - /# /'
	[ "$(grep -c '^ok' <<<"$out")" = 3 ] && ! grep -q '^not ok' <<<"$out"
}
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ -x $B/selftests/hosts/lib_test ]; then
	check "lib_test as an unprivileged user: the receive buffer granted is reported, the shortfall warned" \
		rcvbuf_unprivileged
	check "lib_test as an unprivileged user: io=xdp refused in one line naming the capabilities, io=auto falls back to UDP saying why" \
		xdp_unprivileged
fi

# ---------------------------------------------------- esa-jobs on loopback
# Its worker threads share each job's settings: 60 workers and 40 settings,
# opened and closed 30 times, once crashed in about 1 run of 4.
jobs_threads() {
	local args="job 1 iters=0 ps=127.0.0.1:9" k r i base=$((20000 + $$ % 30000))

	for k in 1 2 3 4 5 6 7 8; do
		args="$args window=8 priority=las prio_max=3 quantum=64 timeout_ms=50"
	done
	for r in $(seq 1 60); do args="$args worker 127.0.0.1:$((base + r))"; done
	for i in $(seq 1 30); do
		$B/esa-jobs -q -s 127.0.0.1 -n 16 --linger 0 $args >/dev/null 2>&1 || return 1
	done
}
# A worker that cannot open (an address not here): its job fails, with the
# reason, and its peer gives up instead of serving it forever.
jobs_open_fails() {
	local err rc

	err=$(timeout 30 $B/esa-jobs -q -s 127.0.0.1 -n 16 -i 1 --linger 0 job 1 ps=127.0.0.1:9 \
		give_up_ms=1000 worker 192.0.2.1:5000 worker 127.0.0.1:$((50000 + $$ % 10000)) 2>&1)
	rc=$?
	[ $rc = 1 ] && grep -q "rank 0: cannot bind 192.0.2.1:5000" <<<"$err"
}
jobs_bad_local() {
	local err

	err=$($B/esa-jobs -s 127.0.0.1 job 1 ps=127.0.0.1:9 worker 127.0.0.1:0 2>&1)
	[ $? = 2 ] && [ "$err" = 'esa-jobs: job 1 worker 0: local "127.0.0.1:0" is not IP:PORT' ]
}
jobs_no_ps() {
	local err

	err=$($B/esa-jobs -s 127.0.0.1 job 1 worker 127.0.0.1:5000 2>&1)
	[ $? = 2 ] && [ "$err" = "esa-jobs: job 1: no ps=IP:PORT (the job's PS: workers take results only from the switch and it)" ]
}
jobs_big_window() {
	local err

	err=$($B/esa-jobs -s 127.0.0.1 job 1 ps=127.0.0.1:9 window=513 worker 127.0.0.1:5000 2>&1)
	[ $? = 2 ] && [ "$err" = "esa-jobs: job 1: window 513: more chunks in flight than the switch's tombstone ring holds (at most 512)" ]
}
ps_no_port() {
	local err

	err=$($B/esa-ps -s 127.0.0.1 job 1 ps 127.0.0.1:9000 workers 127.0.0.1:5000 127.0.0.2 2>&1)
	[ $? = 1 ] && [ "$err" = 'esa-ps: job 1: worker 1 "127.0.0.2" is not IP:PORT (the PS sends it results and FETCHes)' ]
}
ps_bad_io() {
	local err

	err=$($B/esa-ps -s 127.0.0.1 --io afxdp job 1 ps 127.0.0.1:9000 workers 127.0.0.1:5000 2>&1)
	[ $? = 1 ] && [ "$err" = 'esa-ps: io "afxdp": not udp, xdp or auto' ] || return 1
	err=$($B/esa-ps -s 127.0.0.1 --io xdp --ifname nosuch0 job 1 ps 127.0.0.1:9000 \
		workers 127.0.0.1:5000 2>&1)
	[ $? = 1 ] && [ "$err" = 'esa-ps: io xdp: no interface nosuch0 here' ]
}
ps_pending() {
	local err

	err=$($B/esa-ps -s 127.0.0.1 --pending 200 -w 128 job 1 ps 127.0.0.1:9000 \
		workers 127.0.0.1:5000 2>&1)
	[ $? = 1 ] && [ "$err" = "esa-ps: pending 200 holds the unfinished chunks of windows up to 100 only, the workers' can be 128" ]
}
# 0.0.0.0 where an address to send to (or, over AF_XDP, from) is needed:
# one line naming the setting (each ended in a 60 s timeout).
jobs_wildcards() {
	local err sw="the switch's service address (esactl prog load addr)"

	err=$(timeout 10 $B/esa-jobs -s 0.0.0.0 job 1 ps=127.0.0.1:9 worker 127.0.0.1:5000 2>&1)
	[ $? = 2 ] && [ "$err" = "esa-jobs: switch \"0.0.0.0\": 0.0.0.0 is no address to send to; give $sw" ] || return 1
	err=$(timeout 10 $B/esa-jobs -s 127.0.0.1 job 1 ps=0.0.0.0:9 worker 127.0.0.1:5000 2>&1)
	[ $? = 2 ] && [ "$err" = "esa-jobs: job 1: ps \"0.0.0.0:9\": 0.0.0.0 is no address to send to; give the job's PS as registered at the switch" ] || return 1
	err=$(timeout 30 $B/esa-jobs -q -s 127.0.0.1 --linger 0 job 1 ps=127.0.0.1:9 io=xdp \
		worker 0.0.0.0:5000 2>&1)
	[ $? = 1 ] && [ "$err" = "esa-jobs: job 1 rank 0: local 0.0.0.0:5000 with io=xdp: AF_XDP sends from the address given, and the switch takes only the rank's registered one; give it" ]
}
ps_wildcard() {
	local err

	err=$(timeout 10 $B/esa-ps -s 0.0.0.0 job 1 ps 127.0.0.1:9000 workers 127.0.0.1:5000 2>&1)
	[ $? = 1 ] && [ "$err" = "esa-ps: switch \"0.0.0.0\": 0.0.0.0 is no address packets come from; give the switch's service address (esactl prog load addr)" ]
}
jobs_stop_only() {
	local err

	err=$($B/esa-jobs -s 127.0.0.1 --only 1:0 --stop-file /nonexistent job 1 ps=127.0.0.1:9 \
		worker 127.0.0.1:5000 2>&1)
	[ $? = 2 ] && [ "$err" = "esa-jobs: --stop-file stops a job where all its workers run: not with --only (its peers elsewhere would not stop at the same iteration)" ]
}
jobs_too_many() {
	local err

	# shellcheck disable=SC2046
	err=$($B/esa-jobs -s 127.0.0.1 job 1 $(printf 'window=8 %.0s' $(seq 65)) \
		worker 127.0.0.1:5000 2>&1)
	[ $? = 2 ] && [ "$err" = 'esa-jobs: job 1: at most 64 settings' ]
}
if [ -x $B/esa-jobs ]; then
	check "esa-jobs: 60 worker threads sharing a job's 40 settings, 30 runs, none crashed" \
		jobs_threads
	check "esa-jobs: a worker that cannot open fails its job with the reason; its peer stops waiting" \
		jobs_open_fails
	check "esa-jobs: a bad worker address: one line, status 2, before any thread starts" \
		jobs_bad_local
	check "esa-jobs: 65 settings for a job: one line, status 2" jobs_too_many
	check "esa-jobs: a job without its PS (ps=): one line, status 2" jobs_no_ps
	check "esa-jobs: a window beyond the switch's tombstone ring: one line, status 2" \
		jobs_big_window
	check "esa-jobs: 0.0.0.0 as the switch, the PS, or (io=xdp) a worker's address: one line naming it" \
		jobs_wildcards
	check "esa-jobs: --stop-file with --only: one line, status 2" jobs_stop_only
fi
if [ -x $B/esa-ps ]; then
	check "esa-ps: a worker without a port: one line naming it, status 1" ps_no_port
	check "esa-ps: --pending below two windows (-w): one line, status 1" ps_pending
	check "esa-ps: a bad --io, an --ifname not there for --io xdp: one line, status 1" ps_bad_io
	check "esa-ps: --switch 0.0.0.0: one line naming it, status 1" ps_wildcard
fi

if [ -n "${HOSTS_QUICK:-}" ]; then
	echo "1..$n"
	[ $fail = 0 ]
	exit
fi
skip_rest() {
	n=$((n + 1))
	echo "ok $n - namespace scenarios # SKIP $*"
	echo "1..$n"
	[ $fail = 0 ]
	exit
}
[ "$(id -u)" = 0 ] || skip_rest "needs root"
for f in esactl esa-ps esa-jobs esa_pass.bpf.o impair.bpf.o; do
	[ -e $B/$f ] || skip_rest "$B/$f missing (run make)"
done

# ---------------------------------------------------------------- topology
. selftests/hosts/topo.sh
# The vector length of every scenario: the largest (856 values, a 3476-byte
# IP packet: topo.sh's links carry it), HOSTS_VALUES=N for another.
VALUES=${HOSTS_VALUES:-856}
# The transport of the workers and the PS: udp, then xdp for the second
# pass (AF_XDP; names "xdp-..."); PFX prefixes the scenarios' names.
IO=udp PFX=
# esa-jobs' words of a job (topo_jobrun's), at $VALUES values per packet
jobrun() { topo_jobrun "$@" values=$VALUES io=$IO; }
LOG=$(mktemp -d /tmp/$P.XXXX)
cleanup() {
	topo_cleanup
	if [ -z "${KEEP:-}" ]; then rm -rf "$LOG"; else echo "# logs in $LOG"; fi
}
topo_init
trap cleanup EXIT
trap 'exit 1' INT TERM

WORKERS="1 2 3 4 5 6 7 8 9"
setup() {
	topo_switch || return 1
	local i
	for i in $WORKERS; do topo_host $i wire || return 1; done
	# NAPI by GRO: the PS host's XDP hook is free for esa-ps's AF_XDP
	TOPO_NAPI=gro topo_host 250
}
check "topology: a switch, 9 worker hosts behind impairable wires, a PS host" setup

LEASE=2000
jobspecs() {
	J1=$(topo_jobspec 1 250 6001 3 $LEASE 1 2 3)
	J2=$(topo_jobspec 2 250 6002 3 $LEASE 4 5)
	J3=$(topo_jobspec 3 250 6003 3 $LEASE 6 7 8 9)
}
jobspecs
jobruns() {
	R1=$(jobrun 1 6001 1 2 3 -- priority=srsf prio_max=3 quantum=64)
	R2=$(jobrun 2 6002 4 5 -- dtype=i32 prio=1 prio_max=3)
	R3=$(jobrun 3 6003 6 7 8 9 -- priority=las prio_max=3 quantum=512)
}
jobruns

# start_switch SLOTS [esactl prog load words]: a fresh switch with the jobs
start_switch() {
	local slots=$1
	shift
	topo_unload
	topo_load slots $slots values $VALUES "$@" || return 1
	esactl job add ${J1#job } && esactl job add ${J2#job } && esactl job add ${J3#job }
}

PSPID=
# start_ps NAME: esa-ps on the PS host, counters (JSON) to $LOG/NAME.json at exit
start_ps() {
	ip netns exec $P-h250 $B/esa-ps -j -s 10.255.0.1 --values $VALUES --io $IO $J1 $J2 $J3 \
		>$LOG/$1.json 2>$LOG/$1.err &
	PSPID=$!
	TOPO_PIDS="$TOPO_PIDS $PSPID"
	topo_until 30 grep -q serving $LOG/$1.err
}
stop_ps() {
	kill -TERM $PSPID 2>/dev/null
	wait $PSPID 2>/dev/null
	PSPID=
}

# json FILE EXPR: evaluate a python expression over the JSON document d.
json() {
	$TOPO_PY -c 'import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
def job(j): return [x for x in d["jobs"] if x["job"] == j][0]
print(eval(sys.argv[2]))' "$@" 2>/dev/null
}

# ps_gro: esa-ps takes the switch's result copies coalesced (UDP_GRO), each
# on its own: 8 copies in one GSO send on loopback (gso_results.py), which
# reach its socket as one datagram of 8 with their size: 8 results, all
# counted coalesced, none dropped.  In a namespace of its own.
ps_gro_seen() {	# ps_gro_seen PID: the counters (SIGUSR1) show all 8
	kill -USR1 $1 2>/dev/null
	tail -n 1 $LOG/psgro.json | grep -q '"rx_result":8,'
}
ps_gro() {
	local ns=$P-gro pid rc=0
	ip netns add $ns || return 1
	ip -n $ns link set lo up
	ip netns exec $ns $B/esa-ps -j -s 127.0.0.1 --values 32 job 1 ps 127.0.0.1:9000 \
		workers 127.0.0.1:5000 127.0.0.1:5001 >$LOG/psgro.json 2>$LOG/psgro.err &
	pid=$!
	topo_until 30 grep -q serving $LOG/psgro.err &&
	ip netns exec $ns $TOPO_PY selftests/hosts/gso_results.py 127.0.0.1:7680 \
		127.0.0.1:9000 1 2 32 8 &&
	topo_until 30 ps_gro_seen $pid || rc=1
	kill -TERM $pid 2>/dev/null
	wait $pid 2>/dev/null
	ip netns del $ns
	[ $rc = 0 ] || return 1
	json $LOG/psgro.json '(job(1)["rx_result"] == 8 and d["nojob"]["rx_coalesced"] == 8 and
		sum(v for k, v in d["total"].items() if k.startswith("drop_")) == 0)' | grep -qx True
}
check "esa-ps: 8 result copies coalesced in one receive (UDP_GRO): each taken, counted coalesced" ps_gro
jobs_ok() { [ "$(json $1 'all(x["ok"] for x in d["jobs"])')" = True ]; }
# slots JOB: the slots stamped with the job, now.
slots() {
	esactl -j pool show | grep -o "{\"job\":$1,\"slots\":[0-9]*}" | tr -dc '0-9,' |
		cut -d, -f2 | grep . || echo 0
}
# above0 CMD...: CMD prints a number above 0 (above3: above 3).
above0() { [ "$("$@")" -gt 0 ] 2>/dev/null; }
above3() { [ "$("$@")" -gt 3 ] 2>/dev/null; }
# ps_now NAME EXPR: EXPR over the counters of the PS running as NAME, now
# (esa-ps prints them on SIGUSR1).
ps_now() {
	local lines
	lines=$(wc -l <$LOG/$1.json)
	kill -USR1 $PSPID 2>/dev/null || return 1
	topo_until 10 lines_over $LOG/$1.json $lines || return 1
	json $LOG/$1.json "$2"
}
lines_over() { [ "$(wc -l <$1)" -gt $2 ]; }
sw_stats() { esactl -j stats show >$LOG/$1.sw.json; }
summary() {	# summary NAME: the jobs' and the switch's numbers as TAP comments
	json $LOG/$1.run.json '"\n".join("job %d: %s in %.2fs (comm %.2fs), %d packets, %d resends, %d from the PS, %d duplicates, worst error %.2f of the bound" % (x["job"], "ok" if x["ok"] else "FAILED " + x["error"], x["jct_s"], x["comm_s"], x["tx_packets"], x["tx_resends"], x["rx_from_ps"], x["rx_duplicates"], x["worst_error_ratio"]) for x in d["jobs"])' | sed 's/^/# /'
	[ -e $LOG/$1.sw.json ] && json $LOG/$1.sw.json '"switch: completed %d preempted %d collisions %d tomb %d flushed %d resends to PS %d duplicates %d aged %d reclaimed %d" % tuple(d["total"][k] for k in ("completed","preempt_caused","collisions","tomb_fwd","resend_flush","resend_fwd","duplicates","aged","reclaimed"))' | sed 's/^/# /'
	[ -e $LOG/$1.ps.json ] && json $LOG/$1.ps.json '"PS: %d from the switch, %d merged, %d delivered, %d fetched, %d resends answered, %d FETCH sent, %d dropped" % (d["total"]["done_switch"], d["total"]["done_merged"], d["total"]["done_deliver"], d["total"]["done_fetched"], d["total"]["resend_answers"], d["total"]["fetch_tx"], sum(v for k, v in d["total"].items() if k.startswith("drop_")))' | sed 's/^/# /'
}

# run_jobs NAME ELEMS ITERS [esa-jobs options]: the three jobs, JSON report
run_jobs() {
	local name=$1 elems=$2 iters=$3
	shift 3
	timeout 300 $B/esa-jobs -j -s 10.255.0.1 -n $elems -i $iters "$@" $R1 $R2 $R3 \
		>$LOG/$name.run.json 2>$LOG/$name.run.err
}

# Sum a job stat over the three jobs of a run's report.
run_sum() { json $LOG/$1.run.json "sum(x['$2'] for x in d['jobs'])"; }
# The nine workers and the PS of run NAME were on AF_XDP.
on_xdp() { [ "$(run_sum $1 io_xdp)" = 9 ] && grep -q 'io xdp eth0 queue 0' $LOG/$1.ps.err; }

# ------------------------------------------------------------ impaired links
# scenario NAME SECTION SLOTS [PROG WORDS]: the jobs through impaired (or
# clean) links, the switch loaded with esactl prog load's words too
scenario() {
	local name=$1 sec=$2 slots=$3 i rc
	shift 3
	start_switch $slots "$@" || { nok "$name: switch loaded"; return; }
	start_ps $name.ps || { nok "$name: PS started"; return; }
	if [ $sec != none ]; then
		for i in $WORKERS; do topo_impair $i $sec 2>/dev/null || { nok "$name: impair"; return; }; done
	fi
	run_jobs $name 512k 3
	rc=$?
	sw_stats $name
	stop_ps
	cp $LOG/$name.ps.json $LOG/$name.ps.json.bak 2>/dev/null
	for i in $WORKERS; do topo_unimpair $i; done
	summary $name
	[ $rc = 0 ] || sed 's/^/# /' $LOG/$name.run.err | head -10
	check "$name: every allreduce of 3 jobs right (int32 exact, float32 within the bound)" \
		jobs_ok $LOG/$name.run.json
	local sent got rx ps_drops
	sent=$(run_sum $name tx_packets)
	# the switch took the workers' DATA and the PS's sums (ps_sums)
	got=$(json $LOG/$name.sw.json 'sum(x["rx"] - x["ps_sums"] for x in d["jobs"])')
	ps_drops=$(json $LOG/$name.ps.json 'sum(v for k, v in d["total"].items() if k.startswith("drop_"))')
	echo "# workers sent $sent packets, the switch received $got"
	case $sec in
	none)
		check "$name: nothing lost on the way (the switch got all $sent packets)" \
			[ "$sent" = "$got" ] ;;
	loss*)
		check "$name: packets were lost on the way in ($((sent - got)) of $sent) and recovered by resends" \
			[ "$got" -lt "$sent" -a "$(run_sum $name tx_resends)" -gt 0 ] ;;
	dupreorder)
		check "$name: packets were duplicated on the way in ($((got - sent)) extra) and results arrived twice ($(run_sum $name rx_duplicates)), each used once" \
			[ "$got" -gt "$sent" -a "$(run_sum $name rx_duplicates)" -gt 0 ] ;;
	esac
	check "$name: the PS dropped nothing (malformed or foreign)" [ "${ps_drops:-x}" = 0 ]
	[ $IO = xdp ] && check "$name: every worker and the PS on AF_XDP (io_xdp $(run_sum $name io_xdp) of 9; PS: $(grep -o 'io xdp [a-z0-9]* queue [0-9]*' $LOG/$name.ps.err))" \
		on_xdp $name
	check "$name: the workers refused nothing: every result came from the switch's or the PS's address and port, every FETCH from the PS ($(run_sum $name rx_untrusted) and $(run_sum $name fetch_refused) refused)" \
		[ "$(run_sum $name rx_untrusted)" = 0 -a "$(run_sum $name fetch_refused)" = 0 ]
}

want() { [ -z "${HOSTS_SCENARIOS:-}" ] || [[ " $HOSTS_SCENARIOS " == *" $1 "* ]]; }
want clean && scenario clean none 4096
want loss1 && scenario loss1 loss1 256
want loss5 && scenario loss5 loss5 256
want dupreorder && scenario dupreorder dupreorder 256

# ------------------------------------------------------------- no copies
# ps-copy off: the switch sends the PS no result copies (a shared PS's link
# carries only fallbacks), so a worker whose result was lost is answered
# from its peers: its resend reaches the PS as DONE and draws a FETCH at
# once.  Through 5% loss every sum still right, and no copy sent.
nocopy() {
	local name=${PFX}nocopy copies fetched
	scenario $name loss5 256 ps-copy off
	copies=$(json $LOG/$name.sw.json 'sum(x["ps_copy_tx"] for x in d["jobs"])')
	fetched=$(json $LOG/$name.ps.json 'd["total"]["done_fetched"] + d["total"]["fetch_tx"]')
	check "$name: no result copy to the PS ($copies); lost results came from peers through FETCH ($fetched)" \
		[ "${copies:-x}" = 0 -a "${fetched:-0}" -gt 0 ]
}
want nocopy && nocopy

# ------------------------------------------------------------------ rerun
# A job id run again: job 2 registered anew at the switch, the same PS still
# holding what it kept of the earlier run, 5% loss so that the PS answers
# resends, and other tensors (--seed).  A new run number (libesa's run)
# starts the sequence numbers elsewhere: no stale result is taken.
rerun_job2() {	# rerun_job2 NAME SEED RUN
	timeout 120 $B/esa-jobs -j -s 10.255.0.1 -n 256k -i 3 --seed $2 \
		$(jobrun 2 6002 4 5 -- dtype=i32 prio=1 prio_max=3 run=$3) \
		>$LOG/$1.run.json 2>$LOG/$1.run.err
}
reregister2() { esactl job delete 2 && esactl job add ${J2#job }; }
rerun() {
	local name=${PFX}rerun i
	start_switch 256 || { nok "$name: switch loaded"; return; }
	start_ps $name.ps || { nok "$name: PS started"; return; }
	for i in 4 5; do
		topo_impair $i loss5 2>/dev/null || { nok "$name: impair"; stop_ps; return; }
	done
	rerun_job2 $name.1 1 101
	check "$name: job 2's first run (run 101) right" jobs_ok $LOG/$name.1.run.json
	reregister2 || nok "$name: job 2 registered again"
	rerun_job2 $name.2 2 102
	check "$name: job 2 again, same id, same PS, new run number (102) and tensors: every sum right, $(json $LOG/$name.2.run.json 'job(2)["rx_from_ps"]') results from the PS" \
		jobs_ok $LOG/$name.2.run.json
	[ $IO = xdp ] && check "$name: job 2's two workers and the PS on AF_XDP (io_xdp $(json $LOG/$name.2.run.json 'job(2)["io_xdp"]'))" \
		eval '[ "$(json $LOG/$name.2.run.json "job(2)[\"io_xdp\"]")" = 2 ] && grep -q "io xdp eth0 queue 0" $LOG/$name.ps.err'
	# What the run number prevents (shown, not tested: it depends on loss).
	reregister2
	rerun_job2 $name.3 3 102
	echo "# the same run number (102) once more, new tensors: $(json $LOG/$name.3.run.json \
		'"ok" if job(2)["ok"] else "FAILED: %s (the earlier run'"'"'s results taken)" % job(2)["error"]')"
	stop_ps
	for i in 4 5; do topo_unimpair $i; done
}
want rerun && rerun

# ------------------------------------------------------------------ trust
# Forged packets to the PS from job 1's rank 0's host (its registered
# address and port, and the switch's port): what only the switch sends, and
# a RESULT answering no FETCH.  All dropped and counted; nothing finished.
forge() {
	ip netns exec $P-h1 $TOPO_PY - $VALUES \
		"$(awk '$2 == "ESA_VERSION" { print $3 }' include/uapi/linux/esa.h)" <<'PY'
import socket, struct, sys
nv, ver = int(sys.argv[1]), int(sys.argv[2])
def pkt(t, rank, bitmap, seq, reason=0):
    return struct.pack("!BBBBHHQIHBB", ver, t, 0, 0, 1, rank, bitmap, seq, nv, reason,
                       0) + bytes(4 * nv)
ps = ("10.9.250.2", 9000)
me = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
me.bind(("10.9.1.2", 6001))            # job 1's rank 0, as registered
sw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sw.bind(("10.9.1.2", 7680))            # the switch's port, not its address
me.sendto(pkt(4, 0, 1, 5, 2), ps)      # COLLISION/COLLISION of rank 0
me.sendto(pkt(3, 0xffff, 3, 6, 1), ps) # PARTIAL/PREEMPT of ranks 0, 1
sw.sendto(pkt(2, 0xffff, 7, 7), ps)    # the switch's RESULT copy
me.sendto(pkt(2, 0, 7, 8), ps)         # rank 0's answer to no FETCH
PY
}
trust() {
	local name=${PFX}trust drops
	start_switch 256 || { nok "$name: switch loaded"; return; }
	start_ps $name.ps || { nok "$name: PS started"; return; }
	forge || nok "$name: forged packets sent"
	# until the PS has taken all four (10 s at most; the check says if not)
	topo_until 10 above3 ps_now $name.ps 'job(1)["rx"]'
	stop_ps
	drops=$(json $LOG/$name.ps.json '"%d %d %d %d" % (job(1)["drop_source"], job(1)["drop_unasked"], job(1)["rx"], sum(job(1)[k] for k in ("done_switch", "done_merged", "done_deliver", "done_fetched", "result_tx")))')
	echo "# PS, job 1: drop_source, drop_unasked, rx, done and sent: $drops"
	check "$name: forged COLLISION, PARTIAL and RESULT from a worker's host dropped (drop_source), its RESULT to no FETCH dropped (drop_unasked), nothing finished" \
		[ "$drops" = "3 1 4 0" ]
	[ $IO = xdp ] && check "$name: the PS took them on AF_XDP ($(grep -o 'io xdp [a-z0-9]* queue [0-9]*' $LOG/$name.ps.err))" \
		grep -q "io xdp eth0 queue 0" $LOG/$name.ps.err
	return 0
}
want trust && trust

# ------------------------------------------------------------------ MTU
# A route to the switch narrower than the packets (mtu 1500 on host 1's
# route, less for fewer values): the worker refuses to open, naming values
# and the MTU needed, where it sent IP fragments the switch drops.
mtu_refused() {	# mtu_refused STATUS NAME MTU
	local need=$((4 * VALUES + 52)) fit=$((($3 - 52) / 4 / 8 * 8))
	[ $1 = 1 ] && [ "$(cat $LOG/$2.err)" = "esa-jobs: job 1 rank 0: values $VALUES: $need-byte packets (values x 4 + 52), but the route to the switch 10.255.0.1 (eth0, mtu $3) has MTU $3: give it an MTU of $need or more, or values $fit or less" ]
}
mtu() {
	local name=${PFX}mtu rc m=1500
	[ $((4 * VALUES + 52)) -gt $m ] || m=$((4 * VALUES + 44))
	ip -n $P-h1 route add 10.255.0.1/32 via 10.9.1.1 mtu $m || { nok "$name: route"; return; }
	timeout 60 $B/esa-jobs -q -s 10.255.0.1 -n 64k -i 1 --linger 0 $(jobrun 1 6001 1 --) \
		>/dev/null 2>$LOG/$name.err
	rc=$?
	ip -n $P-h1 route del 10.255.0.1/32
	check "$name: $VALUES values through a route of mtu $m: the worker does not open, naming values and the MTU needed (status $rc: $(head -c 200 $LOG/$name.err))" \
		mtu_refused $rc $name $m
}
want mtu && mtu

# ------------------------------------------------------------ a worker dies
# Jobs 1 and 3 run throughout, until told to stop (esa-jobs --stop-file).
# A: once job 2 is at work, its rank 1 is killed; rank 0 gives up, and its
# resends flush its partials out of the switch on the way.  B: job 4 (on
# job 2's hosts) loses rank 1 once at work, then rank 0 once it holds slots
# of the switch, its window run ahead: the job is dead, its partials stay
# in the switch, and only its lease can free them; jobs 1 and 3 run until
# they are seen reclaimed.  Ageing is off (stale 0) and jobs 2 and 4 have
# the top priority, so that neither ageing nor preemption takes their
# slots.  Every step waits for what the next one presumes (at most a
# bound, then its check fails), never for a time.
slots_of() { json $1 'sum(x["slots"] for x in d["jobs"] if x["job"] == '$2')'; }
BGPID=
# Rank 0 gives up after 5 s: time for the PS's FETCH, which names the rank
# the chunk lacks, to reach it (1 s was short on a loaded machine: the PS
# lagged and the worker could only say that nothing came back).
job2() {	# job2 RANK: one worker of job 2 in its own process
	$B/esa-jobs -j -s 10.255.0.1 -n 256k -i 1000 --only 2:$1 --linger 0 \
		$(jobrun 2 6002 4 5 -- dtype=i32 prio=3 prio_max=3 give_up_ms=5000) \
		>$LOG/${PFX}killed.w2.$1.json 2>$LOG/${PFX}killed.w2.$1.err &
	BGPID=$!
	TOPO_PIDS="$TOPO_PIDS $BGPID"
}
# Job 4's lease (6 s) is longer than its workers' resend timeout (3 s): a
# worker waiting for a result sends nothing until its timer fires, so with
# the lease shorter (it was 0.5 s against 5 s) the live job went silent past
# its lease whenever a chunk waited, first of all while its second process
# was still opening (AF_XDP takes longer, more so on a loaded machine), and
# jobs 1 and 3 reclaimed its slots while it lived: it was seen holding none
# when killed.  After rank 1's death, rank 0's partials stay until its
# resend timer, 3 s, long enough to see them and kill it.
job4() {	# job4 RANK: one worker of job 4 in its own process
	$B/esa-jobs -j -s 10.255.0.1 -n 256k -i 1000 --only 4:$1 --linger 0 \
		$(jobrun 4 6004 4 5 -- dtype=i32 prio=3 prio_max=3 \
			timeout_ms=3000 timeout_max_ms=3000) \
		>$LOG/${PFX}killed.w4.$1.json 2>$LOG/${PFX}killed.w4.$1.err &
	BGPID=$!
	TOPO_PIDS="$TOPO_PIDS $BGPID"
}
no_xdp() { ! ip netns exec $P-h$1 ip -o link show dev eth0 | grep -q 'prog/xdp'; }
# the dead job's slots reclaimed: counted, and fewer left than it held
reclaimed4() { above0 topo_counter 4 reclaimed && [ "$(slots 4)" -lt "$1" ]; }
killed() {
	local name=${PFX}killed a0 a1 j4=() r rc rca main held recl J4 h alive=no
	local stop=$LOG/${PFX}killed.stop
	LEASE=500
	jobspecs
	J4=$(topo_jobspec 4 250 6004 3 6000 4 5)
	start_switch 256 stale 0 || { nok "$name: switch loaded"; return; }
	esactl job add ${J4#job } || { nok "$name: job 4 registered"; return; }
	J3="$J3 $J4"	# the PS serves job 4 too
	start_ps $name.ps || { nok "$name: PS started"; return; }
	jobspecs
	rm -f $stop
	timeout 300 $B/esa-jobs -j -s 10.255.0.1 -n 512k -i 100000 --stop-file $stop $R1 $R3 \
		>$LOG/$name.run.json 2>$LOG/$name.run.err &
	main=$!
	job2 0; a0=$BGPID
	job2 1; a1=$BGPID
	topo_until 60 above0 topo_counter 2 completed
	r=$?
	check "$name A: job 2 at work before its rank 1 is killed ($(topo_counter 2 completed) chunks completed)" \
		[ $r = 0 ]
	kill -9 $a1
	echo "# A: killed job 2's rank 1 mid-job"
	wait $a1 2>/dev/null
	wait $a0
	rca=$?
	gave_up() {
		[ $rca = 1 ] && grep -q "no result came back" $LOG/$name.w2.0.err &&
			grep -q "the PS 10.9.250.2:9000 holds chunk [0-9]* of rank(s) 0 and lacks rank(s) 1)" \
				$LOG/$name.w2.0.err
	}
	check "$name A: job 2's other worker gave up, naming rank 1 (status $rca: $(tail -1 $LOG/$name.w2.0.err))" \
		gave_up
	# at once: rank 0 resent until it gave up, so job 2's lease (0.5 s)
	# cannot have freed anything yet; only the resends' flushes did
	esactl -j pool show >$LOG/$name.poolA.json
	check "$name A: its resends flushed its partials: no slot left to job 2 ($(slots_of $LOG/$name.poolA.json 2))" \
		[ "$(slots_of $LOG/$name.poolA.json 2)" = 0 ]
	# B: job 2's AF_XDP programs on hosts 4 and 5 go with their sockets a
	# moment after its processes: job 4's workers attach there next.
	for h in 4 5; do topo_until 10 no_xdp $h; done
	job4 0; j4[0]=$BGPID
	job4 1; j4[1]=$BGPID
	topo_until 60 above0 topo_counter 4 completed
	r=$?
	check "$name B: job 4's two workers at work before its rank 1 is killed ($(topo_counter 4 completed) chunks completed)" \
		[ $r = 0 ]
	kill -9 ${j4[1]}
	# rank 0 runs its window ahead: those chunks wait for rank 1
	topo_until 10 above0 slots 4
	kill -9 ${j4[0]}
	wait ${j4[0]} ${j4[1]} 2>/dev/null
	esactl -j pool show >$LOG/$name.poolB.json
	held=$(slots_of $LOG/$name.poolB.json 4)
	echo "# B: killed job 4's rank 1, then rank 0 holding ${held:-0} slots"
	[ "${held:-0}" -gt 0 ] || tail -n 3 $LOG/$name.w4.0.err $LOG/$name.w4.1.err | sed 's/^/# /'
	# its lease runs out 6 s after its last packet; then jobs 1 and 3
	# reclaim its slots as they meet them (40 s at most)
	topo_until 40 reclaimed4 "${held:-0}"
	kill -0 $main 2>/dev/null && alive=yes
	touch $stop
	wait $main
	rc=$?
	sw_stats $name
	esactl -j pool show >$LOG/$name.poolC.json
	stop_ps
	summary $name
	[ $rc = 0 ] || sed 's/^/# /' $LOG/$name.run.err | head -10
	check "$name: jobs 1 and 3 ran until the reclamation was seen ($alive), then stopped after their iteration (stopped: $(json $LOG/$name.run.json '[x["stopped"] for x in d["jobs"]]'))" \
		[ $alive = yes -a "$(json $LOG/$name.run.json 'all(x["stopped"] for x in d["jobs"])')" = True ]
	check "$name: jobs 1 and 3 right to the end" jobs_ok $LOG/$name.run.json
	recl=$(json $LOG/$name.sw.json 'job(4)["reclaimed"]')
	echo "# slots stamped with job 4: ${held:-0} when it died, $(slots_of $LOG/$name.poolC.json 4) at the end; reclaimed ${recl:-0}, lease expiries $(json $LOG/$name.sw.json 'job(4)["expired"]')"
	check "$name B: the dead job held slots (${held:-0}); the others reclaimed them after its lease (${recl:-0}) and reused them" \
		[ "${held:-0}" -gt 0 -a "${recl:-0}" -gt 0 -a "$(slots_of $LOG/$name.poolC.json 4)" -lt "${held:-0}" ]
	LEASE=2000
	jobspecs
}
want killed && killed

# --------------------------------------------------- the PS, the switch dead
# A: no PS running, and no sum leaves the switch without its ack (policy
# atp); the workers' probe draws the PS's port unreachable.  B: no
# switch program: the switch's address has no route.  Each worker's error
# names the silent peer, from the ICMP error.
dead_run() {	# dead_run NAME: job 2 alone, giving up after 1.5 s
	timeout 60 $B/esa-jobs -j -s 10.255.0.1 -n 64k -i 1 --linger 0 \
		$(jobrun 2 6002 4 5 -- dtype=i32 give_up_ms=1500) \
		>$LOG/$1.run.json 2>$LOG/$1.run.err
}
dead() {
	local name=${PFX}dead rc
	start_switch 256 policy atp || { nok "$name: switch loaded"; return; }
	dead_run $name.A
	rc=$?
	echo "# A: $(grep -m1 'rank 0' $LOG/$name.A.run.err)"
	check "$name A: no PS running: both workers of job 2 fail naming it, from its ICMP error" \
		[ $rc = 1 -a "$(grep -c 'the PS 10.9.250.2:9000 is unreachable: Connection refused (ICMP from 10.9.250.2' $LOG/$name.A.run.err)" = 2 ]
	topo_unload
	dead_run $name.B
	rc=$?
	echo "# B: $(grep -m1 'rank 0' $LOG/$name.B.run.err)"
	check "$name B: no switch program: both workers fail naming the switch, from the ICMP error" \
		[ $rc = 1 -a "$(grep -c 'the switch 10.255.0.1:7680 is unreachable: Network is unreachable (ICMP from 10.9.[45].1' $LOG/$name.B.run.err)" = 2 ]
}
want dead && dead

# ------------------------------------------------------------ the PS restarts
# The jobs run until told to (--stop-file): the PS is killed once all
# three are at work, and they stop once its successor has served them.
all_at_work() { above0 topo_counter 1 completed && above0 topo_counter 2 completed && above0 topo_counter 3 completed; }
restart() {
	local name=${PFX}restart rc alive=no stop=$LOG/${PFX}restart.stop
	start_switch 256 || { nok "$name: switch loaded"; return; }
	start_ps $name.ps0 || { nok "$name: PS started"; return; }
	for i in $WORKERS; do topo_impair $i mix 2>/dev/null; done
	rm -f $stop
	run_jobs $name 512k 100000 --stop-file $stop &
	local main=$!
	topo_until 60 all_at_work && kill -0 $main 2>/dev/null && alive=yes
	kill -9 $PSPID
	wait $PSPID 2>/dev/null
	check "$name: the jobs were at work (chunks of each completed) and running when the PS was killed" \
		[ $alive = yes ]
	sleep 0.7	# how long the PS is away (no check depends on it)
	start_ps $name.ps || { nok "$name: PS restarted"; touch $stop; return; }
	# until the new PS finished chunks or answered resends (60 s at most)
	topo_until 60 above0 ps_now $name.ps 'd["total"]["done_merged"] + d["total"]["resend_answers"] + d["total"]["done_fetched"]'
	touch $stop
	wait $main
	rc=$?
	sw_stats $name
	stop_ps
	for i in $WORKERS; do topo_unimpair $i; done
	summary $name
	[ $rc = 0 ] || sed 's/^/# /' $LOG/$name.run.err | head -10
	check "$name: every allreduce right after the PS restart" jobs_ok $LOG/$name.run.json
	local work
	work=$(json $LOG/$name.ps.json 'd["total"]["done_merged"] + d["total"]["resend_answers"] + d["total"]["done_fetched"]')
	check "$name: the new PS finished and answered chunks from resends ($work)" \
		[ "${work:-0}" -gt 0 ]
}
want restart && restart

# ------------------------------------------------ a dead worker host (AF_XDP)
# esa-ps over AF_XDP on a link of its own: ns $P-na (10.66.0.1, pa) to a
# host, ns $P-nb (10.66.0.2): job 1's two workers live there; job 2's rank
# 0 is 10.66.0.99, on the PS's link, which nobody has: its next hop never
# resolves.  The switch's packets come from 10.66.0.1:7680 in the PS's own
# namespace (neigh_check, below): 8 chunks of job 2 delivered whole, then
# one of job 1; the PS sends each sum to every worker itself (--sums
# direct, as it answers resends and sends FETCHes: to the dead rank first
# for job 2).  The PS must not
# wait for the dead host: job 1's results must arrive before the kernel
# gives up resolving 10.66.0.99 (its neighbour entry FAILED, after 3 ARP
# requests 1 s apart), which is what esa-ps waited for, a second a packet.
# Then the link goes down while the PS sends: it goes on, and SIGTERM ends
# it.
neigh_check() {	# neigh_check PS_NS HOST_NS VALUES
	python3 - "$@" "$(awk '$2 == "ESA_VERSION" { print $3 }' include/uapi/linux/esa.h)" <<'PY'
import ctypes, os, select, socket, struct, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def enter(ns):
    fd = os.open("/run/netns/" + ns, os.O_RDONLY)
    if libc.setns(fd, 0x40000000):
        sys.exit("setns %s: %s" % (ns, os.strerror(ctypes.get_errno())))
    os.close(fd)
a, b, nv, ver = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def deliver(job, seq):  # PARTIAL/DELIVER of both ranks, from the switch
    return struct.pack("!BBBBHHQIHBB", ver, 3, 0, 0, job, 0xffff, 3, seq, nv, 7, 0) + \
        struct.pack("<%di" % nv, *([seq + 1] * nv))
def failed(msg):  # RTM_NEWNEIGH of 10.66.0.99 in state NUD_FAILED
    while len(msg) >= 28:
        ln, typ = struct.unpack_from("=IH", msg)
        state = struct.unpack_from("=H", msg, 24)[0]
        dst = msg.find(struct.pack("=HH", 8, 1) + socket.inet_aton("10.66.0.99"), 28, ln)
        if typ == 28 and state & 0x20 and dst >= 0:
            return True
        msg = msg[(ln + 3) & ~3:]
    return False
enter(b)
w = {}
for port in (5101, 5102, 5202):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("10.66.0.2", port))
    w[s] = port
enter(a)
nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
nl.bind((0, 4))                         # RTMGRP_NEIGH
sw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sw.bind(("10.66.0.1", 7680))
for seq in range(8):
    sw.sendto(deliver(2, seq), ("10.66.0.1", 9000))
sw.sendto(deliver(1, 0), ("10.66.0.1", 9000))
got = dict.fromkeys(w.values(), 0)
order = []
end = time.monotonic() + 20
while time.monotonic() < end and "FAILED" not in order:
    for s in select.select(list(w) + [nl], [], [], 0.1)[0]:
        if s is nl:
            if failed(nl.recv(65536)):
                order.append("FAILED")
        else:
            s.recv(65536)
            got[w[s]] += 1
            if got[5101] and got[5102] and "job 1" not in order:
                order.append("job 1")
print("# results to job 1's workers %d and %d, to job 2's live one %d; in order: %s" %
      (got[5101], got[5102], got[5202], ", ".join(order) or "nothing"))
# the link down while the PS sends: 300 more chunks of job 1
subprocess.run(["ip", "link", "set", "dev", "pa", "down"], check=True)
for seq in range(1, 301):
    sw.sendto(deliver(1, seq), ("10.66.0.1", 9000))
time.sleep(0.5)
sys.exit(0 if order == ["job 1", "FAILED"] and got[5202] == 8 else 1)
PY
}
neigh_stall() {
	local name=${PFX}neigh a=$P-na b=$P-nb pid rc t
	ip netns add $a && ip netns add $b || { nok "$name: namespaces"; return; }
	TOPO_NS="$TOPO_NS $a $b"
	ip link add pa netns $a type veth peer name pb netns $b &&
		ip -n $a addr add 10.66.0.1/24 dev pa && ip -n $b addr add 10.66.0.2/24 dev pb &&
		ip -n $a link set lo up && ip -n $a link set pa up && ip -n $b link set pb up ||
		{ nok "$name: link"; return; }
	ip netns exec $a $B/esa-ps -j -s 10.66.0.1 --values 32 --io xdp --ifname pa --sums direct \
		job 1 ps 10.66.0.1:9000 workers 10.66.0.2:5101 10.66.0.2:5102 \
		job 2 ps 10.66.0.1:9000 workers 10.66.0.99:5201 10.66.0.2:5202 \
		>$LOG/$name.ps.json 2>$LOG/$name.ps.err &
	pid=$!
	TOPO_PIDS="$TOPO_PIDS $pid"
	for t in $(seq 50); do grep -q serving $LOG/$name.ps.err && break; sleep 0.1; done
	neigh_check $a $b 32
	rc=$?
	check "$name: with one job's worker host dead on the PS's link, the other job's results came before the kernel gave up on it (no wait for ARP), the dead job's live worker got all 8" \
		[ $rc = 0 ]
	kill -TERM $pid
	for t in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	check "$name: the link down while it sent, the PS went on and SIGTERM ended it" \
		eval '! kill -0 $pid 2>/dev/null'
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	echo "# PS: $(json $LOG/$name.ps.json '"tx_udp %d tx_error %d result_tx %d" % (d["total"]["tx_udp"], d["total"]["tx_error"], d["total"]["result_tx"])')"
	check "$name: the dead host's results went by UDP, counted (tx_udp)" \
		[ "$(json $LOG/$name.ps.json 'd["total"]["tx_udp"] >= 8')" = True ]
	ip netns del $a
	ip netns del $b
}

# ------------------------------------------------------------------ AF_XDP
# The workers and the PS again on AF_XDP (io=xdp, esa-ps --io xdp): every
# scenario above: clean links, loss, duplication and reordering, a job id
# run again, forged packets to the PS, killed workers (their XDP
# programs go with them: bpf_links) and the dead job's slots reclaimed, a
# dead PS and switch named from ICMP errors that reach the UDP socket
# beside the AF_XDP one, the PS killed and restarted.  HOSTS_NO_XDP=1 skips.
if [ -z "${HOSTS_NO_XDP:-}" ]; then
	IO=xdp PFX=xdp-
	jobruns
	want xdp-clean && scenario xdp-clean none 4096
	want xdp-loss1 && scenario xdp-loss1 loss1 256
	want xdp-loss5 && scenario xdp-loss5 loss5 256
	want xdp-dupreorder && scenario xdp-dupreorder dupreorder 256
	want xdp-rerun && rerun
	want xdp-trust && trust
	want xdp-mtu && mtu
	want xdp-killed && killed
	want xdp-dead && dead
	want xdp-restart && restart
	want xdp-neigh && neigh_stall
	IO=udp PFX=
fi

tap_end
