#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# /init of the test VM (selftests/vm/vmtest.sh): mount what the tests need,
# load the modules of lib/modules/order, run run-tests.sh (TAP on the
# console) and end qemu with its exit status (qexit).
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ip link set lo up
for m in $(cat /lib/modules/order); do
	insmod "/lib/modules/$m" || echo "# insmod $m failed"
done
echo "# up $(cut -d' ' -f1 /proc/uptime)s"
[ -r /esa/env ] && . /esa/env
if [ -e /esa/ynl/cli.py ]; then
	export ESA_YNL=/esa/ynl/cli.py ESA_YNL_SPEC=/esa/esa.yaml
fi
ESA_KO=/esa/esa.ko ESA_KO_NOBTF=/esa/nobtf/esa.ko ESA_TEST_BIN=/esa \
ESA_KFUNC_OBJECT=/esa/esa_kfunc.bpf.o /esa/run-tests.sh
/bin/qexit $?
poweroff -f
