#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# /init of the test VM (busybox): load esa.ko, run the kselftests, check the
# kernel log, print flat TAP on the console and end qemu with the number of
# failures (selftests/vm/qexit.c).  Written by selftests/vm/vmtest.sh.
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t bpf bpf /sys/fs/bpf
ip link set lo up
cd /esa || exit 1
export ESA_KO=/esa/esa.ko ESA_KO_NOBTF=/esa/nobtf/esa.ko
export ESA_KFUNC_OBJECT=/esa/esa_kfunc.bpf.o

n=0 pass=0 fail=0 skip=0
result() { # result ok|fail|skip NAME [REASON]
	n=$((n + 1))
	case $1 in
	ok)	pass=$((pass + 1)); echo "ok $n - $2" ;;
	skip)	skip=$((skip + 1)); echo "ok $n - $2 # SKIP $3" ;;
	*)	fail=$((fail + 1)); echo "not ok $n - $2" ;;
	esac
}

# t NAME CMD...: one test from a command's exit status.
t() {
	name=$1
	shift
	if out=$("$@" 2>&1); then result ok "$name"; else result fail "$name"; fi
	[ -n "$out" ] && echo "$out" | sed 's/^/# /'
}

# kselftest BINARY: one result per test of a kselftest_harness binary, and
# a failure if it dies without reporting them all.
kselftest() {
	bin=$1 total=0 seen=0
	"./$bin" > "/tmp/$bin.out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		1..*)
			total=${line#1..} ;;
		"ok "*"# SKIP"*)
			seen=$((seen + 1))
			name=${line#ok * }
			result skip "$bin ${name%% # SKIP*}" "${line##*# SKIP }" ;;
		"ok "*)
			seen=$((seen + 1))
			result ok "$bin ${line#ok * }" ;;
		"not ok "*)
			seen=$((seen + 1))
			result fail "$bin ${line#not ok * }" ;;
		"#"*)
			echo "$line" ;;
		*)
			echo "# $line" ;;
		esac
	done < "/tmp/$bin.out"
	if [ "$seen" = 0 ] || [ "$seen" != "$total" ] ||
	   { [ "$rc" != 0 ] && [ "$rc" != 4 ]; }; then
		result fail "$bin exited with status $rc after $seen of $total tests"
	fi
}

echo "TAP version 13"
echo "# guest kernel $(uname -r), $(nproc) CPUs, up $(cut -d' ' -f1 /proc/uptime)s"
for m in $(cat /lib/modules/order 2>/dev/null); do
	insmod "/lib/modules/$m" || echo "# insmod $m failed"
done
t "insmod esa.ko" insmod /esa/esa.ko
t "module BTF in /sys/kernel/btf/esa" test -s /sys/kernel/btf/esa
kselftest esa_nl_test
kselftest esa_kfunc_test
kselftest esa_unload_test

# A warning, BUG, oops or lockup anywhere in the run fails it.
bad='WARNING:|BUG:|Oops|general protection|Call Trace|kernel BUG|UBSAN|KASAN'
bad="$bad|refcount_t:|list_(add|del) corruption|circular locking|sleeping function"
bad="$bad|suspicious RCU|rcu_.*stall|hung_task|Kernel panic"
if dmesg | grep -qE "$bad"; then
	result fail "kernel log free of warnings, BUGs and oopses"
	dmesg | sed 's/^/# dmesg: /'
else
	result ok "kernel log free of warnings, BUGs and oopses"
	dmesg | grep -i 'esa' | sed 's/^/# dmesg: /'
fi

echo "1..$n"
echo "# $pass passed, $fail failed, $skip skipped"
echo "ESA_VM_RESULT pass=$pass fail=$fail skip=$skip uptime=$(cut -d' ' -f1 /proc/uptime)"
/bin/qexit "$fail"
poweroff -f
