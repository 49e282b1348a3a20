#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# ynl-gen.sh LINUX OUT: generate esa.ko's netlink policies and operations
# table (genl.c, genl.h in directory OUT) from kmod/esa.yaml with the
# kernel's own generator, LINUX/tools/net/ynl/ynl-gen-c.py (LINUX: a tree
# with Documentation/netlink and tools/net/ynl, 6.12's from
# selftests/vm/kernel.sh ynl).  Then generates the spec's UAPI header and
# user-space library code too, into OUT/check/, only to show that the
# generator accepts the spec in every mode.
#
# make kmod-genl writes kmod/genl.[ch] with it; make kmod-spec-check
# generates into a temporary directory and fails if kmod/ differs.
set -eu

linux=${1:?usage: ynl-gen.sh LINUX OUT}
out=${2:?usage: ynl-gen.sh LINUX OUT}
top=$(cd "$(dirname "$0")/../.." && pwd)
gen="/usr/bin/python3 $linux/tools/net/ynl/ynl-gen-c.py"

# The generator names the spec by its path from the nearest directory with
# a MAINTAINERS file, and reads the schema next to the spec's directory:
# give it a tree where that is kmod/esa.yaml.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/kmod" "$out/check"
: > "$tree/MAINTAINERS"
cp "$top/kmod/esa.yaml" "$tree/kmod/"
cp "$linux/Documentation/netlink/genetlink-legacy.yaml" "$tree/"
spec=$tree/kmod/esa.yaml

$gen --mode kernel --header --spec "$spec" -o "$tree/kmod/genl.h"
$gen --mode kernel --source --spec "$spec" -o "$tree/kmod/genl.c"
cp "$tree/kmod/genl.h" "$tree/kmod/genl.c" "$out/"
$gen --mode uapi --header --spec "$spec" -o "$out/check/esa-uapi.h"
$gen --mode user --header --spec "$spec" -o "$out/check/esa-user.h"
$gen --mode user --source --spec "$spec" -o "$out/check/esa-user.c"
