# SPDX-License-Identifier: GPL-2.0
# TAP for the shell tests (sourced, bash): selftests/run.sh reads "ok N - ...",
# "not ok N - ..." and "ok N - ... # SKIP why" of every suite.
#
#   ok DESC, nok DESC        one result
#   check DESC CMD...        one result from CMD's exit status
#   tap_skip_all WHY         nothing here can run: the plan 1..0, exit 4
#   tap_end                  the plan; fails when any result did

n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
tap_skip_all() { echo "1..0 # SKIP $*"; exit 4; }
tap_end() { echo "1..$n"; [ $fail = 0 ]; }
