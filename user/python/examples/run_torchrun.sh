#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Train torchrun_ddp.py with torchrun on N hosts, each a network namespace
# behind an ESA switch, the job from esa-agent: nothing registered by hand.
#
#   ns $P-h1   10.9.1.2   torchrun --node_rank 0 (and gloo's master)  \
#   ...                                                                +- ns $P-sw: ESA XDP,
#   ns $P-hN   10.9.N.2   torchrun --node_rank N-1                     |  esa-agent on
#   ns $P-h250 10.9.250.2 esa-ps --agent 10.255.0.1                   /   10.255.0.1:7681
#
# Every host runs the same command, as on a real cluster:
#
#   ESA_AGENT=10.255.0.1 ESA_KEY_FILE=KEY torchrun --nnodes N --nproc_per_node 1 \
#       --node_rank I --master_addr 10.9.1.2 --master_port 29500 torchrun_ddp.py
#
# (Debian 12's torch 1.13 on Python 3.11 needs "--redirects 1 --tee 1" too:
# its default "0" fails to parse there; docs/torch.md.)
#
# usage: run_torchrun.sh [ -n HOSTS ] [ -s STEPS ] [ -o OUT.json ] [ -b ] [ -R ] [ -k ]
#                        [ -x "MORE torchrun_ddp.py OPTIONS" ]
#   -b: check every bucket's sum against gloo's (torchrun_ddp.py --check-bound)
#   -R: kill esa-agent (SIGKILL) once training runs, show the job still on the
#       switch, and start the agent again: training goes on, the job is still
#       released at the end
#   -k: keep the namespaces
# Needs root, `make` done (OUTPUT=DIR: its build directory), python3-torch.
set -u
cd "$(dirname "$0")/../../.."
B=${OUTPUT:-build}
N=3 STEPS=300 OUT= CHECK= RESTART= KEEP= MORE=
while getopts "n:s:o:bRkx:" o; do
	case $o in
	n) N=$OPTARG ;;
	s) STEPS=$OPTARG ;;
	o) OUT=$OPTARG ;;
	b) CHECK=--check-bound ;;
	R) RESTART=1 ;;
	k) KEEP=1 ;;
	x) MORE=$OPTARG ;;
	*) echo "usage: run_torchrun.sh [-n HOSTS] [-s STEPS] [-o OUT.json] [-b] [-R] [-k] [-x OPTIONS]" >&2
	   exit 2 ;;
	esac
done
[ "$N" -ge 1 ] && [ "$N" -le 60 ] 2>/dev/null || { echo "run_torchrun.sh: 1 to 60 hosts" >&2; exit 2; }
for f in esactl esa-agent esa-ps esa_pass.bpf.o libesa.so; do
	[ -e $B/$f ] || { echo "run_torchrun.sh: $B/$f missing: run make" >&2; exit 1; }
done
P=esar$$
T=$(mktemp -d)
. selftests/hosts/topo.sh
topo_init
cleanup() {
	if [ -n "$KEEP" ]; then
		for p in $TOPO_PIDS; do kill "$p" 2>/dev/null; done
		echo "kept: namespaces $P-*, pins $PIN, files $T" >&2
		return
	fi
	topo_cleanup
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "run_torchrun.sh: $*" >&2; exit 1; }
say() { echo "[run] $*"; }

topo_switch || die "cannot make the switch namespace"
for i in 250 $(seq 1 "$N"); do
	TOPO_NAPI=gro topo_host $i || die "cannot make host $i"
done
topo_load slots 1024 >/dev/null || die "cannot load the switch"
# The operator's part: the agent's policy, and esa-ps taking jobs from it.
topo_agent "$T" "ps 10.9.250.2:9000" "jobs 100-199" "allow 10.9.0.0/16" "max-prio 3" \
	"slots 64" "heartbeat 1000" "dead-after 10000" || die "cannot start esa-agent"
topo_bg ip netns exec $P-h250 $B/esa-ps -s 10.255.0.1 --agent 10.255.0.1 --key-file "$T/key" \
	--ps 10.9.250.2:9000 >"$T/ps.out" 2>"$T/ps.log"

# The users' part: the same torchrun on every host.
export PYTHONPATH=$PWD/user/python ESA_LIBESA=$PWD/$B/libesa.so GLOO_SOCKET_IFNAME=eth0
export ESA_AGENT=10.255.0.1 ESA_KEY_FILE=$T/key OMP_NUM_THREADS=1
nodes=()
for i in $(seq 1 "$N"); do
	(
		set -o pipefail
		ip netns exec $P-h$i /usr/bin/python3 -m torch.distributed.run --nnodes "$N" \
			--nproc_per_node 1 --node_rank $((i - 1)) --master_addr 10.9.1.2 \
			--master_port 29500 --redirects 1 --tee 1 --log_dir "$T/torch$i" \
			user/python/examples/torchrun_ddp.py --steps "$STEPS" ${OUT:+--out "$OUT"} \
			$CHECK $MORE 2>&1 | sed -u "s/^\[default0\]://; s/^/[host $i] /" | tee -a "$T/nodes.log"
	) &
	nodes+=($!)
done

if [ -n "$RESTART" ]; then
	# Once every rank trains (step 2 seen from each), the agent dies and
	# comes back: the job stays on the switch and in esa-ps meanwhile.
	for t in $(seq 3000); do
		[ "$(grep -c 'step 2 loss' "$T/nodes.log" 2>/dev/null)" -ge "$N" ] && break
		sleep 0.1
	done
	kill -KILL $TOPO_AGENT
	wait $TOPO_AGENT 2>/dev/null
	say "esa-agent killed (SIGKILL) at $(grep -c 'loss' "$T/nodes.log") steps; the switch's jobs meanwhile:"
	esactl job show | sed 's/^/[run] /'
	topo_agent_start "$T" || die "esa-agent did not start again"
	say "esa-agent started again: $(grep 'state: job' "$T/agent.log" | tail -1)"
fi

rc=0
for p in "${nodes[@]}"; do wait "$p" || rc=1; done
# The job ends when every rank has released it: the agent deletes it, and
# esa-ps drops it at its next poll.
for t in $(seq 100); do
	grep -q "deleted" "$T/agent.log" && grep -q "ended" "$T/ps.log" && break
	sleep 0.1
done
say "the switch's jobs at the end: $(esactl job show | grep -c '^job') (esactl job show)"
esactl stats show | sed 's/^/[switch] /'
kill -TERM $TOPO_AGENT 2>/dev/null
wait $TOPO_AGENT 2>/dev/null
sed 's/^/[esa-agent] /' "$T/agent.log"
sed 's/^/[esa-agent counters] /' "$T/agent.out"
sed 's/^/[esa-ps] /' "$T/ps.log"
exit $rc
