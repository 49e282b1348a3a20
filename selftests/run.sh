#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run every test suite and print one summary line: "N passed, N failed, N skipped".
#
# A suite is an executable selftests/suites/NN-name (run in name order). It
# prints TAP: "ok N - ...", "not ok N - ...", "ok N - ... # SKIP reason".
# A suite that exits non-zero without printing "not ok" counts one failure.
# Environment: ESA_SUITES="pattern ..." runs only the suites whose names
# contain one of the patterns; V=1 shows every suite's full output.
set -u
cd "$(dirname "$0")/.."
pass=0 fail=0 skip=0
for s in selftests/suites/*; do
	[ -x "$s" ] || continue
	name=$(basename "$s")
	if [ -n "${ESA_SUITES:-}" ]; then
		keep=0
		for p in $ESA_SUITES; do case $name in *"$p"*) keep=1;; esac; done
		[ $keep = 1 ] || continue
	fi
	echo "# suite $name"
	log=$(mktemp)
	t0=$(date +%s)
	"$s" >"$log" 2>&1
	rc=$?
	p=$(grep -cE '^ok [0-9]+' "$log" | head -1)
	k=$(grep -cE '^ok [0-9]+.*# *SKIP' "$log" | head -1)
	f=$(grep -cE '^not ok [0-9]+' "$log" | head -1)
	p=$((p - k))
	# a suite that could run nothing (plan 1..0 # SKIP) counts one skip
	grep -qE '^1\.\.0 *# *SKIP' "$log" && k=$((k + 1))
	if [ "$rc" != 0 ] && [ "$rc" != 4 ] && [ "$f" = 0 ]; then
		f=1
		echo "not ok - $name exited with status $rc"
	fi
	if [ "${V:-0}" = 1 ] || [ "$f" != 0 ]; then
		sed 's/^/  /' "$log"
	else
		grep -E '^(not )?ok [0-9]+' "$log" | sed 's/^/  /'
	fi
	echo "# suite $name: $p passed, $f failed, $k skipped ($(( $(date +%s) - t0 ))s)"
	rm -f "$log"
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + k))
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
