# SPDX-License-Identifier: GPL-2.0
# The multi-rack benchmark (user/bench/multirack.sh, docs/evaluation.md,
# "Multi-rack"): bytes on the leaf-spine links per allreduce, flat against
# two levels, on the namespace testbed (root), then the simulator's average
# JCT of esa, atp and switchml on a multi-rack workload.  Its last line:
#   multirack: uplink_bytes_ratio=<flat/two-level> jct_speedup_vs_flat=<x>

.PHONY: bench-multirack
bench-multirack: all
	$(Q)OUTPUT=$(OUTPUT) user/bench/multirack.sh
