#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The demo (`make demo`, as root): jobs of workers summing float32 gradients
# through the ESA switch on one machine.
#
#   ns esad$$-sw: the switch, ESA attached natively on one port per host,
#                 service address 10.255.0.1:7680, a pool of POOL slots
#   ns esad$$-hI: one host per worker (10.9.I.2), and one for the PS
#
# Three jobs (by default) with different priorities and numbers of workers
# share a pool smaller than their windows, so their chunks meet in the
# switch and preempt one another.  Every job reduces real float32 tensors
# (gradient-like, several MB) for several iterations; every result is
# checked against the sum computed locally from all ranks' tensors.  At the
# end, a table per job: completion time, goodput, preemptions suffered and
# caused, collisions, PS fallbacks.  Everything created is removed on exit,
# interrupted or not.
#
# The workers use the fastest transport this build of libesa has: io=auto
# (AF_XDP where it can, else UDP) when libesa takes that setting, plain UDP
# sockets otherwise; the demo says which, and how many workers got AF_XDP.
# esa-ps likewise (--io auto).  Every host's link gets its NAPI by GRO, so
# that its XDP hook is free for the AF_XDP program (topo.sh, TOPO_NAPI).
# -v sets the vector length: by default the largest, 856 values (a
# 3476-byte IP packet; every link has MTU 3500, topo.sh).
#
# usage: scripts/demo.sh [ -j JOBS ] [ -w W1,W2,... ] [ -p POOL ] [ -n ELEMS ]
#                        [ -i ITERS ] [ -W WINDOW ] [ -P POLICY ] [ -s SWITCH_POLICY ]
#                        [ -v VALUES ]
# or the same through the environment: DEMO_JOBS DEMO_WORKERS DEMO_POOL
# DEMO_ELEMS DEMO_ITERS DEMO_WINDOW DEMO_PRIORITY DEMO_POLICY DEMO_VALUES;
# DEMO_LIB="key=value ..." adds libesa settings (docs/library.md) to every job.
set -u
cd "$(dirname "$0")/.."
B=${OUTPUT:-build}

JOBS=${DEMO_JOBS:-3}
WORKERS=${DEMO_WORKERS:-2,3,4}
POOL=${DEMO_POOL:-192}
ELEMS=${DEMO_ELEMS:-2M}
ITERS=${DEMO_ITERS:-5}
WINDOW=${DEMO_WINDOW:-128}
PRIORITY=${DEMO_PRIORITY:-static}
POLICY=${DEMO_POLICY:-esa}
VALUES=${DEMO_VALUES:-856}
LIBKV=${DEMO_LIB:-}

usage() {
	sed -n '2,/^set -u/p' "$0" | sed -n '/^# usage/,/DEMO_POLICY/p' | sed 's/^# \{0,1\}//'
	cat <<EOF
  -j JOBS     number of jobs ($JOBS)
  -w LIST     workers per job, cycled over the jobs ($WORKERS)
  -p POOL     switch aggregator slots ($POOL; the jobs' windows add up to more)
  -n ELEMS    float32 elements per tensor, k/M suffixes ($ELEMS: $((${ELEMS%M} * 4)) MB)
  -i ITERS    allreduces per job ($ITERS)
  -W WINDOW   chunks in flight per worker ($WINDOW)
  -P PRIO     priority policy of the workers: static, srsf or las ($PRIORITY)
  -s POLICY   the switch's slot policy: esa, atp or switchml ($POLICY)
  -v VALUES   values per packet, 8..856, a multiple of 8 ($VALUES)
Job k's registered priority is JOBS - k (job 1 the highest); with static
priorities every chunk carries it, with srsf or las it is the cap.
EOF
	exit "${1:-0}"
}
while getopts "j:w:p:n:i:W:P:s:v:h" o; do
	case $o in
	j) JOBS=$OPTARG ;;
	w) WORKERS=$OPTARG ;;
	p) POOL=$OPTARG ;;
	n) ELEMS=$OPTARG ;;
	i) ITERS=$OPTARG ;;
	W) WINDOW=$OPTARG ;;
	P) PRIORITY=$OPTARG ;;
	s) POLICY=$OPTARG ;;
	v) VALUES=$OPTARG ;;
	h) usage 0 ;;
	*) usage 2 ;;
	esac
done

die() { echo "demo: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (namespaces, XDP): sudo make demo"
for f in esactl esa-ps esa-jobs esa_pass.bpf.o libesa.so; do
	[ -e $B/$f ] || die "$B/$f missing: run 'make demo' (it builds everything)"
done
case $JOBS in ''|*[!0-9]*) die "-j: a number of jobs" ;; esac
[ "$JOBS" -ge 1 ] && [ "$JOBS" -le 16 ] || die "-j: 1 to 16 jobs"
case $PRIORITY in static|srsf|las) ;; *) die "-P: static, srsf or las" ;; esac
case $POLICY in esa|atp|switchml) ;; *) die "-s: esa, atp or switchml" ;; esac
case $VALUES in ''|*[!0-9]*) die "-v: a number of values" ;; esac
[ "$VALUES" -ge 8 ] && [ "$VALUES" -le 856 ] && [ $((VALUES % 8)) = 0 ] ||
	die "-v: 8 to 856 values, a multiple of 8"
# The fastest transport libesa has: io=auto if it takes it (AF_XDP where
# it can), else its UDP sockets.
IO="UDP sockets"
PSIO=
if python3 -c 'import sys; sys.path.insert(0, "user/python"); import esa
sys.exit(0 if esa.accepts("io", "auto") and esa.accepts("ifname", "eth0") else 1)' \
	2>/dev/null; then
	LIBKV="io=auto ifname=eth0 $LIBKV"
	IO="io=auto (AF_XDP where it can, else UDP)"
	PSIO="--io auto --ifname eth0"
fi

# workers per job, cycling over the list
IFS=, read -r -a WL <<<"$WORKERS"
declare -a NW
total=0
for ((k = 1; k <= JOBS; k++)); do
	w=${WL[$(((k - 1) % ${#WL[@]}))]}
	case $w in ''|*[!0-9]*) die "-w: numbers of workers, like 2,3,4" ;; esac
	[ "$w" -ge 1 ] && [ "$w" -le 64 ] || die "-w: 1 to 64 workers per job"
	NW[$k]=$w
	total=$((total + w))
done
[ $total -le 200 ] || die "at most 200 workers in all ($total asked)"

P=esad$$
. selftests/hosts/topo.sh
LOG=$(mktemp -d /tmp/$P.XXXX)
cleanup() {
	trap - EXIT INT TERM
	echo "demo: cleaning up (namespaces $P-*, pins, processes)" >&2
	topo_cleanup
	rm -rf "$LOG"
}
topo_init
trap cleanup EXIT
trap 'echo; echo "demo: interrupted" >&2; exit 130' INT TERM

if [ -t 1 ]; then
	step() { printf '\033[1m== %s\033[0m\n' "$*"; }
else
	step() { echo "== $*"; }
fi

step "Topology: a switch namespace with $((total + 1)) ports (one per worker, one for the PS)"
topo_switch || die "cannot create the switch namespace"
h=0
declare -A HOSTS
for ((k = 1; k <= JOBS; k++)); do
	HOSTS[$k]=""
	for ((r = 0; r < NW[k]; r++)); do
		h=$((h + 1))
		TOPO_NAPI=gro topo_host $h || die "cannot create host $h"
		HOSTS[$k]="${HOSTS[$k]} $h"
	done
done
TOPO_NAPI=gro topo_host 250 || die "cannot create the PS host"

step "Switch: ESA program, policy $POLICY, $POOL slots of $VALUES values, attached to every port"
topo_load slots $POOL values $VALUES policy $POLICY || die "cannot load the switch"
esactl dev show | sed 's/^/   /'

step "Jobs: $JOBS, registered at the switch and at the PS"
declare -a SPEC RUN PRIO
for ((k = 1; k <= JOBS; k++)); do
	PRIO[$k]=$(( (JOBS - k) % 256 ))
	SPEC[$k]=$(topo_jobspec $k 250 $((6000 + k)) ${PRIO[$k]} 10000 ${HOSTS[$k]})
	if [ $POLICY = switchml ]; then	# static regions: the pool split evenly
		extra="region auto $((POOL / JOBS))"
	else				# a home of a window, shared where they meet
		extra="region auto $((WINDOW < POOL ? WINDOW : POOL))"
	fi
	esactl job add ${SPEC[$k]#job } $extra || die "cannot register job $k"
	RUN[$k]=$(topo_jobrun $k $((6000 + k)) ${HOSTS[$k]} -- window=$WINDOW \
		priority=$PRIORITY prio=$([ $PRIORITY = static ] && echo ${PRIO[$k]} || echo 0) \
		prio_max=${PRIO[$k]} $LIBKV)
	echo "   job $k: ${NW[$k]} workers on hosts${HOSTS[$k]}, max priority ${PRIO[$k]}, window $WINDOW"
done
echo "   workers' transport: $IO"
wsum=$((JOBS * WINDOW))
echo "   windows add up to $wsum chunks in flight over $POOL slots"

ip netns exec $P-h250 $B/esa-ps -j --values $VALUES -s 10.255.0.1 $PSIO ${SPEC[@]} >$LOG/ps.json 2>$LOG/ps.err &
PSPID=$!
TOPO_PIDS="$TOPO_PIDS $PSPID"
for t in $(seq 20); do grep -q serving $LOG/ps.err && break; sleep 0.1; done
grep -q serving $LOG/ps.err || { cat $LOG/ps.err; die "esa-ps did not start"; }
sed 's/^/   /' $LOG/ps.err

step "Running: every job reduces $ELEMS float32 per worker, $ITERS times, and checks every sum"
args=()
for ((k = 1; k <= JOBS; k++)); do args+=(${RUN[$k]}); done
$B/esa-jobs -p -j -s 10.255.0.1 --values $VALUES -n $ELEMS -i $ITERS -t f32 "${args[@]}" >$LOG/run.json &
RUNPID=$!	# its progress line and any error go straight to the terminal
TOPO_PIDS="$TOPO_PIDS $RUNPID"
wait $RUNPID
rc=$?
sleep 0.2
esactl -j stats show >$LOG/sw.json
kill -TERM $PSPID 2>/dev/null
wait $PSPID 2>/dev/null

step "Results"
python3 - "$LOG/run.json" "$LOG/sw.json" "$LOG/ps.json" "$POLICY" <<'EOF'
import json, sys
run = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
sw = json.load(open(sys.argv[2]))
try:
    ps = json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
except Exception:
    ps = {"jobs": []}
swj = {j["job"]: j for j in sw["jobs"]}
psj = {j["job"]: j for j in ps["jobs"]}
hdr = ("job", "workers", "JCT s", "goodput Gb/s", "preempt suffered", "preempt caused",
       "collisions", "PS fallbacks", "in switch", "results")
rows = []
for j in run["jobs"]:
    s = swj.get(j["job"], {})
    p = psj.get(j["job"], {})
    ps_done = p.get("done_merged", 0) + p.get("done_deliver", 0) + p.get("done_fetched", 0)
    done = s.get("completed", 0) + ps_done
    rows.append((str(j["job"]), str(j["workers"]), "%.2f" % j["jct_s"],
                 "%.3f" % j["goodput_gbps"], str(s.get("preempt_suffered", 0)),
                 str(s.get("preempt_caused", 0)), str(s.get("collisions", 0)),
                 str(ps_done),
                 "%.0f%%" % (100.0 * s.get("completed", 0) / done if done else 0),
                 ("exact" if j["dtype"] == "i32" else
                  "ok, error <= %.3f x bound" % j["worst_error_ratio"]) if j["ok"]
                 else "FAILED: " + j["error"]))
w = [max(len(hdr[i]), *(len(r[i]) for r in rows)) for i in range(len(hdr))]
print("  ".join(h.rjust(w[i]) if i < len(hdr) - 1 else h for i, h in enumerate(hdr)))
for r in rows:
    print("  ".join(c.rjust(w[i]) if i < len(r) - 1 else c for i, c in enumerate(r)))
print()
print("JCT: first allreduce to last result of the job's slowest worker (local "
      "checking included);")
print("goodput: tensor bits reduced per second of allreduce; preemptions and "
      "collisions: the switch's")
print("counters (esactl -j stats show); PS fallbacks: chunks the PS completed "
      "(esa-ps counters);")
print("in switch: share of chunks the switch completed itself.")
nx = sum(j.get("io_xdp", 0) for j in run["jobs"])
print("workers on AF_XDP: %d of %d (the rest on UDP sockets)"
      % (nx, sum(j["workers"] for j in run["jobs"])))
t = sw["total"]
print("switch totals: %d chunks completed in the switch, %d packets to the PS, "
      "%d preemptions, %d collisions, %d drops" %
      (t["completed"], t["ps_tx"], t["preempt_caused"], t["collisions"],
       sum(v for k, v in t.items() if k.startswith("drop_"))))
EOF
if [ $rc = 0 ]; then
	step "Every result of every job was right."
else
	step "Some results were wrong or missing (status $rc)."
fi
exit $rc
