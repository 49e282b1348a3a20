#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The DDP step benchmark (`make bench-ddp`, as root): the time of one
# training step of user/python/examples/ddp_train.py's MLP (--width 2048:
# 18 MB of float32 gradient) with DistributedDataParallel, its gradient
# buckets allreduced by gloo and then through the ESA switch by esa.ddp's
# hook, with the same ranks, MTU, model, data and seed (docs/evaluation.md,
# "DDP step at MTU 9000").  Each run is run_ddp.sh's testbed: a rank per
# network namespace behind the switch, esa-ps on its own host, every link
# at MTU -M; gloo's TCP is routed by the same switch box.
#
# Each rank runs --warmup steps, then -k steps between two barriers, timed
# on rank 0 with the machine's idle share over them (/proc/stat, as make
# bench-e2e reports it); then every rank's parameters are compared with
# every other's through gloo and must be identical (every rank applies the
# same sum): a run whose ranks disagree, or whose loss is not finite,
# fails the benchmark and gives no number.  With -R ROUNDS gloo and ESA
# alternate ROUNDS times and each reports its fastest round.  The last line:
#
#   ddp-step: ranks=4 mtu=9000 grad_mbytes=18.0 gloo_s=<s> esa_s=<s> ratio=<gloo/esa> \
#             gloo_idle=<%> esa_idle=<%>
#
# (s: seconds per step; ratio above 1: ESA's step is the shorter).
#
# usage: user/bench/ddp_step.sh [ -n RANKS ] [ -M MTU ] [ -w WIDTH ] [ -v VALUES|max ]
#                               [ -k STEPS ] [ -W WARMUP ] [ -I udp|xdp|auto ]
#                               [ -R ROUNDS ] [ -x "MORE ddp_train.py OPTIONS" ] [ -o DIR ]
set -u
cd "$(dirname "$0")/../.."
B=${OUTPUT:-build}
RANKS=4 MTU=9000 WIDTH=2048 VALUES=max STEPS=20 WARMUP=3 IO=udp ROUNDS=1 MORE= OUT=$B/ddp
TIMEOUT=${DDP_TIMEOUT:-900}

usage() {
	sed -n '/^# usage/,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	cat <<EOF
  -n RANKS    ranks ($RANKS)
  -M MTU      every link's MTU ($MTU)
  -w WIDTH    the MLP's hidden layers ($WIDTH: 18 MB of gradient)
  -v VALUES   values per packet ($VALUES: the largest the MTU carries)
  -k STEPS    timed steps ($STEPS), after -W WARMUP untimed ones ($WARMUP)
  -I IO       libesa's and esa-ps's transport ($IO; xdp: at most 856 values)
  -R ROUNDS   gloo then ESA, ROUNDS times; each its fastest round ($ROUNDS)
  -x OPTIONS  more ddp_train.py options for both, e.g. "--batch 8"
  -o DIR      where the runs' logs and JSON go ($OUT)
EOF
	exit "${1:-0}"
}
while getopts "n:M:w:v:k:W:I:R:x:o:h" o; do
	case $o in
	n) RANKS=$OPTARG ;;
	M) MTU=$OPTARG ;;
	w) WIDTH=$OPTARG ;;
	v) VALUES=$OPTARG ;;
	k) STEPS=$OPTARG ;;
	W) WARMUP=$OPTARG ;;
	I) IO=$OPTARG ;;
	R) ROUNDS=$OPTARG ;;
	x) MORE=$OPTARG ;;
	o) OUT=$OPTARG ;;
	h) usage 0 ;;
	*) usage 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 0 ] || usage 2

die() { echo "ddp-step: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (namespaces, XDP): sudo make bench-ddp"
for o in "-n:$RANKS" "-w:$WIDTH" "-k:$STEPS" "-R:$ROUNDS"; do
	case ${o#*:} in ''|*[!0-9]*|0) die "${o%%:*}: a number, 1 or more, not \"${o#*:}\"" ;; esac
done
case $WARMUP in ''|*[!0-9]*) die "-W: a number of steps" ;; esac
# run_ddp.sh checks the rest (-M, -v against it, -I) and says why
mkdir -p "$OUT/log" || die "cannot create $OUT"
rm -f "$OUT"/*.json "$OUT"/log/*

# A run's timeout is its process group's leader: stopped, it stops the
# run's ranks and run_ddp.sh, which removes its namespaces.
RUNPID=
stop() {
	trap '' INT TERM
	[ -n "$RUNPID" ] && kill -TERM "$RUNPID" 2>/dev/null && wait "$RUNPID"
}
trap stop EXIT
trap 'echo "ddp-step: interrupted" >&2; exit 130' INT TERM

# one COMM ROUND: a run of run_ddp.sh, rank 0's JSON in $OUT/COMM-ROUND.json
one() {
	local log=$OUT/log/$1-$2.txt rc
	echo "ddp-step: $1, round $2: $RANKS ranks, MTU $MTU, width $WIDTH, $WARMUP + $STEPS steps" >&2
	timeout "$TIMEOUT" user/python/examples/run_ddp.sh -n "$RANKS" -c "$1" -M "$MTU" \
		-v "$VALUES" -I "$IO" -o "$OUT/$1-$2.json" \
		-x "--width $WIDTH --time-steps $STEPS --warmup $WARMUP $MORE" >"$log" 2>&1 &
	RUNPID=$!
	wait $RUNPID
	rc=$?
	RUNPID=
	if [ $rc != 0 ]; then
		grep -v ' loss \|^\[switch\]' "$log" | tail -15 >&2
		die "$1, round $2 FAILED (log: $log)"
	fi
}

t0=$(date +%s)
for ((r = 1; r <= ROUNDS; r++)); do
	one gloo $r
	one esa $r
done
echo "ddp-step: runs took $(($(date +%s) - t0)) s" >&2
/usr/bin/python3 - "$OUT" "$ROUNDS" "$MTU" <<'PY'
import json, sys
out, rounds, mtu = sys.argv[1], int(sys.argv[2]), sys.argv[3]
best = {}
for comm in ("gloo", "esa"):
    runs = [json.load(open("%s/%s-%d.json" % (out, comm, r))) for r in range(1, rounds + 1)]
    for r, j in enumerate(runs, 1):
        hook = j["hook"] or {}
        print("ddp-step: %-4s round %d: %.4f s/step over %d steps, machine idle %.0f%%, "
              "parameters identical on %d ranks%s" % (
                  comm, r, j["s_per_step"], j["steps"], 100 * j["idle"], j["ranks"],
                  ", %s values over %s, %d buckets through the switch, %d fallbacks" % (
                      j["values"], j["io"], hook["buckets_switch"], hook["buckets_fallback"])
                  if hook else ""))
        if not j["params_identical"] or not j["losses_finite"]:
            sys.exit("ddp-step: %s round %d: the run's check failed" % (comm, r))
    best[comm] = min(runs, key=lambda j: j["s_per_step"])
g, e = best["gloo"], best["esa"]
print("ddp-step: ranks=%d mtu=%s grad_mbytes=%.1f gloo_s=%.4f esa_s=%.4f ratio=%.2f "
      "gloo_idle=%.0f%% esa_idle=%.0f%%" % (
          g["ranks"], mtu, g["grad_bytes"] / 2 ** 20, g["s_per_step"], e["s_per_step"],
          g["s_per_step"] / e["s_per_step"], 100 * g["idle"], 100 * e["idle"]))
PY
