#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The end-to-end allreduce benchmark (`make bench-e2e`, as root): float32
# tensors allreduced among ranks, each rank a process in its own network
# namespace behind the switch box, by gloo and through the ESA switch, every
# sum checked (docs/evaluation.md, "End to end").
#
#   ns e2e$$-sw:    the switch box: ESA attached natively on every port,
#                   10.255.0.1:7680, IPv4 forwarding (gloo's TCP is routed)
#   ns e2e$$-hI:    rank I-1 (10.9.I.2); gloo and libesa use the same routes
#   ns e2e$$-h250:  esa-ps (10.9.250.2:9000)
#
# Configurations (-c), each run with every rank count (-r) and size (-m):
#   gloo        torch.distributed's gloo over the same namespaces and routes
#   udp-V       libesa over UDP sockets, V values per packet (the switch is
#               loaded with V; "max": the largest the links' MTU carries)
#   xdp-V       libesa over AF_XDP (io=xdp ifname=eth0 queue=0), esa-ps too
#   ps-V        no switch memory: policy switchml, the job registered
#               without a region (esa_e2e_job), every chunk summed by esa-ps
# A configuration this build lacks (libesa refuses io=xdp, the links cannot
# carry V) gets a row "not available: <reason>", never a number.
#
# Rank 0 of each configuration prints one JSON line per size (e2e_rank.py);
# e2e_report.py turns them into the table, the plot and the last line
#   e2e: ranks=4 mbytes=16 gloo_MBps=<x> esa_MBps=<y> ratio=<y/x>
# With -L RATE every host link is shaped to RATE by tbf, both directions,
# through a bridge namespace per host (XDP's redirects bypass the switch
# ports' qdiscs; AF_XDP's frames pass no qdisc in the host), or with -S ifb
# in each host (its egress, and an IFB for what it receives:
# topo_shape_host; UDP only, and more CPU per packet here).  Everything created
# is removed on exit, interrupted or not.
#
# With -Q N each switch port has N receive queues and its host N transmit
# queues, a rank on CPU c sending on queue c mod N (topo.sh's TOPO_QUEUES):
# one port's frames are switched on every CPU at once.  Straight links only.
#
# With -R ROUNDS the whole sweep runs ROUNDS times over, and each cell's
# number is its fastest round (every round's sums checked): the machine is
# shared, and rounds spread every configuration over its quiet and busy
# spells alike.
#
# usage: user/bench/e2e.sh [ -r RANKS ] [ -m SIZES ] [ -n REPS ] [ -c CONFIGS ]
#                          [ -L RATE ] [ -S ifb|wire ] [ -W WINDOW ]
#                          [ -E "KEY=VALUE ..." ] [ -M MTU ] [ -Q QUEUES ]
#                          [ -R ROUNDS ] [ -o DIR ] [ -p ] [ -T ] [ -q ]
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}

RANKS=2,4,8
SIZES=4,16,64
REPS=5,3,2
CONFIGS=gloo,udp-256,udp-max,xdp-256,xdp-max,ps-256,ps-max
ROUNDS=1
RATE=
SHAPE=wire
WINDOW=
LIBKV=
MTU=3500
QUEUES=1
OUT=$B/e2e
PERF=0
PERFARG=
STATS=0
STATS_WAS=
# E2E_INJECT=1: the last rank's last input is off by one in one element:
# every configuration's check must fail (45-jct's test of its checker)
INJECT=${E2E_INJECT:+--inject}
QUIET=0
TIMEOUT=${E2E_TIMEOUT:-900}
PY=/usr/bin/python3
# gloo would advertise the hostname's address (loopback): use eth0's.
# E2E_LIBESA=PATH: another build of libesa (a before/after comparison).
export GLOO_SOCKET_IFNAME=eth0 PYTHONPATH=user/python ESA_LIBESA=${E2E_LIBESA:-$B/libesa.so}

usage() {
	sed -n '/^# usage/,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	cat <<EOF
  -r RANKS    rank counts, comma separated ($RANKS)
  -m SIZES    tensor sizes in MB (2^20 bytes) ($SIZES)
  -n REPS     timed allreduces per size, one per size ($REPS)
  -c CONFIGS  configurations ($CONFIGS)
  -L RATE     shape every host link to RATE with tbf (tc's units: 1gbit, 500mbit)
  -S HOW      how: wire (a bridge namespace per host, the default; what the
              xdp configurations need) or ifb (in each host)
  -W WINDOW   libesa's window (its default if unset)
  -E SETTINGS more libesa settings for every ESA configuration, e.g.
              "timeout_ms=50 rcvbuf=8388608" (docs/library.md)
  -M MTU      every link's MTU ($MTU; 856 values need 3476, more are jumbo:
              multi-buffer XDP frames, 2232 values at 9000)
  -Q QUEUES   receive queues a switch port has, transmit queues its host
              has ($QUEUES; at most the CPUs; straight links only)
  -R ROUNDS   run the sweep ROUNDS times, each cell's fastest round counts ($ROUNDS)
  -o DIR      where results, logs, the table and the plot go ($OUT)
  -p          profile: perf record -a -g over each timed region, into
              DIR/perf/perf-RANKS-CONFIG-MB-rROUND.data, and CPU by stage
              (e2e_stages.py) of each into DIR/stages.txt
  -T          time the switch's programs (kernel.bpf_stats_enabled, set
              for the run and restored: two clock reads a packet more in
              the switch): a column and the line e2e-hosts, CPU per GB
              without them, what a switch box of its own takes off the hosts
  -q          no progress lines
EOF
	exit "${1:-0}"
}
while getopts "r:m:n:c:L:S:W:E:M:Q:R:o:pTqh" o; do
	case $o in
	r) RANKS=$OPTARG ;;
	m) SIZES=$OPTARG ;;
	n) REPS=$OPTARG ;;
	c) CONFIGS=$OPTARG ;;
	L) RATE=$OPTARG ;;
	S) SHAPE=$OPTARG ;;
	W) WINDOW=$OPTARG ;;
	E) LIBKV=$OPTARG ;;
	M) MTU=$OPTARG ;;
	Q) QUEUES=$OPTARG ;;
	R) ROUNDS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	p) PERF=1 ;;
	T) STATS=1 ;;
	q) QUIET=1 ;;
	h) usage 0 ;;
	*) usage 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 0 ] || usage 2

die() { echo "e2e: $*" >&2; exit 1; }
say() { [ $QUIET = 1 ] || echo "e2e: $*" >&2; }
[ "$(id -u)" = 0 ] || die "run as root (namespaces, XDP): sudo make bench-e2e"
for f in esactl esa-ps esa_e2e_job esa_pass.bpf.o libesa.so; do
	[ -e $B/$f ] || die "$B/$f missing: run 'make bench-e2e' (it builds everything)"
done
$PY -c 'import torch' 2>/dev/null ||
	die "Debian's python3-torch is missing (scripts/deps.sh torch)"
numlist() {	# numlist OPTION VALUE: positive integers, comma separated
	case $2 in ''|,*|*,|*,,*|*[!0-9,]*) die "$1: numbers like 2,4,8, not \"$2\"" ;; esac
	local v
	for v in ${2//,/ }; do [ "$v" -ge 1 ] || die "$1: positive numbers, not \"$2\""; done
}
numlist -r "$RANKS"
numlist -m "$SIZES"
numlist -n "$REPS"
[ "$(tr -cd , <<<"$SIZES")" = "$(tr -cd , <<<"$REPS")" ] || die "-n: one count per size (-m $SIZES)"
for r in ${RANKS//,/ }; do [ "$r" -le 64 ] || die "-r: at most 64 ranks"; done
case $ROUNDS in ''|*[!0-9]*|0) die "-R: a number of rounds, 1 or more" ;; esac
case $MTU in ''|*[!0-9]*) die "-M: an MTU in bytes" ;; esac
[ "$MTU" -ge 1280 ] && [ "$MTU" -le 9000 ] || die "-M: 1280 to 9000"
case $QUEUES in ''|*[!0-9]*|0) die "-Q: a number of queues, 1 or more" ;; esac
[ "$QUEUES" -le "$(nproc)" ] || die "-Q: at most $(nproc) queues (a veth has one a CPU)"
[ -z "$WINDOW" ] || case $WINDOW in *[!0-9]*) die "-W: a number of chunks" ;; esac
for kv in $LIBKV; do [[ $kv =~ ^[a-z_]+=[^=]+$ ]] || die "-E: KEY=VALUE words, not \"$kv\""; done
[ -z "$RATE" ] || [[ $RATE =~ ^[0-9.]+[kmg]?(bit|bps)$ ]] || die "-L: a rate like 1gbit, not \"$RATE\""
case $SHAPE in ifb|wire) ;; *) die "-S: ifb or wire, not \"$SHAPE\"" ;; esac
[ "$QUEUES" = 1 ] || [ -z "$RATE" ] || [ "$SHAPE" = ifb ] ||
	die "-Q: straight links only, not with -L and -S wire"

IFS=, read -r -a CFGS <<<"$CONFIGS"
for c in "${CFGS[@]}"; do
	case $c in
	gloo) ;;
	udp-max|xdp-max|ps-max) ;;
	udp-[0-9]*|xdp-[0-9]*|ps-[0-9]*) [[ ${c#*-} =~ ^[0-9]+$ ]] ||
		die "-c: \"$c\": TRANSPORT-VALUES" ;;
	*) die "-c: \"$c\": gloo, udp-V, xdp-V or ps-V (V a number of values or max)" ;;
	esac
done
MAXR=0
for r in ${RANKS//,/ }; do [ "$r" -gt $MAXR ] && MAXR=$r; done

P=e2e$$
JOB=1
. selftests/hosts/topo.sh
# The largest vector the links carry (topo_max_values: the headers, 4 bytes
# a value, a multiple of 8, at most ESA_MAX_VALUES).
VMAX=$(topo_max_values "$MTU")
LIBMAX=$(topo_max_values 65535)
mkdir -p "$OUT/log" || die "cannot create $OUT"
rm -f "$OUT"/results.jsonl "$OUT"/log/*
SWPID=
RANKPIDS=
cleanup() {
	trap - EXIT INT TERM
	[ -n "$SWPID" ] && kill "$SWPID" 2>/dev/null
	local p
	for p in $RANKPIDS; do kill "$p" 2>/dev/null; done
	[ -n "$STATS_WAS" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
	topo_cleanup
}
# before topo_init: it picks the XDP_PASS program's section by the MTU
TOPO_MTU=$MTU
topo_init
trap cleanup EXIT
trap 'echo; echo "e2e: interrupted" >&2; exit 130' INT TERM
if [ $PERF = 1 ]; then
	command -v perf >/dev/null || die "-p: perf is missing (apt install linux-perf)"
	mkdir -p "$OUT/perf" || die "cannot create $OUT/perf"
	PERFARG="--perf $OUT/perf"
fi
if [ $STATS = 1 ]; then
	STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null) &&
		sysctl -qw kernel.bpf_stats_enabled=1 ||
		die "-T: cannot enable kernel.bpf_stats_enabled"
fi

t_start=$(date +%s)
topo_switch || die "cannot create the switch namespace"
# Straight links get their NAPI by GRO, not by an XDP_PASS program on eth0:
# the hook stays free for libesa's and esa-ps's AF_XDP programs (topo.sh).
# Links shaped through a wire namespace leave eth0 free anyway.
WIRE=
[ -n "$RATE" ] && [ "$SHAPE" = wire ] && WIRE=wire
for h in $(seq 1 $MAXR) 250; do
	TOPO_QUEUES=$QUEUES TOPO_NAPI=gro topo_host $h $WIRE || die "cannot create host $h"
	if [ -n "$RATE" ] && [ -n "$WIRE" ]; then
		topo_shape $h "$RATE" || die "cannot shape host $h's link to $RATE"
	elif [ -n "$RATE" ]; then
		topo_shape_host $h "$RATE" || die "cannot shape host $h's link to $RATE"
	fi
done
# a process in the switch's namespace: its ports' counters for rank 0
ip netns exec $SW sleep infinity &
SWPID=$!
say "testbed: a switch, $MAXR rank hosts and a PS host, MTU $MTU${RATE:+, links shaped to $RATE ($SHAPE)}"

LOADED=
# switch_load VALUES POLICY: (re)load the switch unless it runs that already
switch_load() {
	[ "$LOADED" = "$1/$2" ] && return 0
	[ -n "$LOADED" ] && topo_unload
	LOADED=
	# a host's AF_XDP program outlives its process by a moment (the
	# bpf_link goes when the kernel frees it), and topo_load's ethtool
	# meets it: try again, from a clean switch each time
	local t
	for t in 1 2 3; do
		topo_load values "$1" slots 4096 policy "$2" >"$OUT/log/load.txt" 2>&1 && break
		topo_unload
		[ $t = 3 ] && return 1
		sleep 1
	done
	LOADED="$1/$2"
}

# switch_progs: the ids of the switch's pinned programs, comma separated
# (for -T: the ranks' `ip netns exec` has a /sys without bpffs)
switch_progs() {
	local p ids=
	for p in xdp xdp-generic egress tc; do
		[ -e "$PIN/$p" ] || continue
		ids+=${ids:+,}$(bpftool -j prog show pinned "$PIN/$p" |
			$PY -c 'import json, sys; print(json.load(sys.stdin)["id"])')
	done
	echo "$ids"
}

# The words of the job: ranks on hosts 1..W, port 6000; its PS on h250.
workers_of() {
	local i
	for ((i = 1; i <= $1; i++)); do printf '10.9.%d.2:6000 ' $i; done
}

# start_ps W LABEL VALUES TRANSPORT: esa-ps for the job on the PS host, on
# the configuration's transport (topo_start_ps): its pid in the caller's
# pspid, or why it did not start in the caller's why (one_config's locals).
start_ps() {
	topo_start_ps 250 "$OUT/log/ps-$1-$2.json" "$OUT/log/ps-$1-$2.err" \
		"$OUT/log/ps-hung.txt" -- -j --values "$3" -s 10.255.0.1 \
		$([ "$4" = xdp ] && echo --io xdp --ifname eth0) job $JOB \
		ps 10.9.250.2:9000 workers $(workers_of "$1") || { why=$TOPO_PSWHY; return 1; }
	pspid=$TOPO_PSPID
}

# unavailable W LABEL WHY: a row for every size, no numbers
unavailable() {
	local m
	for m in ${SIZES//,/ }; do
		printf '{"label": "%s", "ranks": %d, "mib": %d, "round": %d, "available": false, "why": "%s"}\n' \
			"$2" "$1" "$m" "$ROUND" "${3//\"/\'}" >>"$OUT/results.jsonl"
	done
	say "$1 ranks, $2: not available: $3"
}

# one_config W CONFIG: run W ranks of CONFIG over every size
one_config() {
	local w=$1 cfg=$2 tr=${2%%-*} v=${2#*-} pol=esa pspid= why= r rc=0 log esa=() comm=esa
	local label=$cfg
	[ "$v" = max ] && v=$VMAX
	[ "$tr" = gloo ] && { v=256; comm=gloo; }
	[ "$tr" = gloo ] || label="$tr-$v"
	if [ "$tr" = xdp ] && [ -n "$RATE" ] && [ -z "$WIRE" ]; then
		unavailable "$w" "$label" "AF_XDP's frames pass no qdisc in the host: shape with -S wire"
		return 0
	fi
	if [ "$v" -gt "$VMAX" ] || [ "$v" -lt 8 ] || [ $((v % 8)) != 0 ]; then
		unavailable "$w" "$label" "$v values need a multiple of 8 within 8..$VMAX (MTU $MTU, ESA_MAX_VALUES $LIBMAX)"
		return 0
	fi
	[ "$tr" = ps ] && pol=switchml
	switch_load "$v" $pol || { unavailable "$w" "$label" "the switch does not load: $(tail -1 "$OUT/log/load.txt")"; return 0; }
	if [ "$tr" != gloo ]; then
		esactl job delete $JOB >/dev/null 2>&1
		if [ "$tr" = ps ]; then
			nsenter --net=/run/netns/$SW $B/esa_e2e_job "$PIN" $JOB 10.9.250.2:9000 \
				$(workers_of "$w") || die "cannot register the PS-only job"
		else
			esactl job add $JOB ps 10.9.250.2:9000 workers $(workers_of "$w") ||
				die "cannot register the job"
		fi
		start_ps "$w" "$label" "$v" "$tr" || { unavailable "$w" "$label" "$why"; return 0; }
		esa=(--esa values=$v ${WINDOW:+--esa window=$WINDOW})
		for kv in $LIBKV; do esa+=(--esa "$kv"); done
		[ "$tr" = xdp ] && esa+=(--esa io=xdp --esa ifname=eth0 --esa queue=0)
	fi
	say "$w ranks, $label: sizes $SIZES MB"
	local pids=() t0
	t0=$(date +%s)
	for ((r = 0; r < w; r++)); do
		log=$OUT/log/rank$r-$w-$label.txt
		ip netns exec $P-h$((r + 1)) timeout "$TIMEOUT" $PY user/bench/e2e_rank.py \
			--rank $r --world "$w" --master 10.9.1.2:29500 --comm $comm \
			--label "$label" --sizes "$SIZES" --reps "$REPS" --switch 10.255.0.1 \
			--job $JOB --local 10.9.$((r + 1)).2:6000 --ps 10.9.250.2:9000 --round $ROUND \
			"${esa[@]}" $PERFARG $INJECT --ps-pid "${pspid:-0}" --sw-pid "$SWPID" \
			$([ $STATS = 1 ] && [ "$tr" != gloo ] && echo --sw-progs "$(switch_progs)") \
			>"$log" 2>&1 &
		pids+=($!)
	done
	RANKPIDS="${pids[*]}"
	# the first rank to fail stops the others (they would wait for it)
	local done left=("${pids[@]}")
	while [ ${#left[@]} -gt 0 ]; do
		wait -n -p done "${left[@]}"
		r=$?
		[ -n "${done:-}" ] || break
		local keep=()
		for p in "${left[@]}"; do [ "$p" = "$done" ] || keep+=("$p"); done
		left=("${keep[@]}")
		if [ $r != 0 ] && [ $rc = 0 ]; then
			rc=1
			for p in "${left[@]}"; do kill "$p" 2>/dev/null; done
		fi
	done
	RANKPIDS=
	grep -h '^{' "$OUT/log/rank0-$w-$label.txt" >>"$OUT/results.jsonl"
	if [ -n "$pspid" ]; then
		esactl -j stats show job $JOB >"$OUT/log/switch-$w-$label.json" 2>&1
		kill -TERM "$pspid" 2>/dev/null
		wait "$pspid" 2>/dev/null
	fi
	if [ $rc != 0 ]; then
		echo "e2e: $w ranks, $label FAILED:" >&2
		tail -n 5 "$OUT"/log/rank*-"$w-$label".txt >&2
	fi
	say "$w ranks, $label: $(($(date +%s) - t0)) s"
	return $rc
}

rc=0
for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
	[ "$ROUNDS" = 1 ] || say "round $ROUND of $ROUNDS"
	for w in ${RANKS//,/ }; do
		for c in "${CFGS[@]}"; do
			one_config "$w" "$c" || rc=1
		done
	done
done
[ -n "$LOADED" ] && topo_unload
LOADED=
say "runs took $(($(date +%s) - t_start)) s"
if [ $PERF = 1 ]; then
	for f in "$OUT"/perf/perf-*.data; do
		[ -e "$f" ] || continue
		echo "e2e: where the CPU went, $(basename "$f" .data):"
		$PY user/bench/e2e_stages.py "$f" | sed -n '/^of our/,/^total/p' | sed '/^total/d;s/^/   /'
	done >"$OUT/stages.txt"
	cat "$OUT/stages.txt"
fi
$PY user/bench/e2e_report.py --dir "$OUT" ${RATE:+--rate "$RATE"} --mtu "$MTU" \
	--rounds "$ROUNDS" || rc=1
exit $rc
