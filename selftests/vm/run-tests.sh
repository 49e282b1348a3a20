#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# run-tests.sh: the tests of esa.ko on the kernel this runs on: load the
# module, run the kselftests, check the kernel log, print flat TAP and a
# summary line; exit status: the number of failures (at most 100).  /init of the test VM runs it
# (selftests/vm/vmtest.sh), and so can virtme-ng or any disposable machine
# (it unloads and loads esa.ko; docs/kmod.md).  As root, with:
#   ESA_KO            the module to test (default kmod/esa.ko)
#   ESA_KO_NOBTF      optional: one built without BTF, which must not load
#   ESA_KFUNC_OBJECT  the XDP program's kfunc variant (build/esa_kfunc.bpf.o)
#   ESA_TEST_BIN      where esa_*_test are (default build/vm/bin)
export ESA_KO=${ESA_KO:-kmod/esa.ko}
export ESA_KFUNC_OBJECT=${ESA_KFUNC_OBJECT:-build/esa_kfunc.bpf.o}
bin=${ESA_TEST_BIN:-build/vm/bin}

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

# kselftest NAME: one result per test of a kselftest_harness binary, and
# a failure if it dies without reporting them all.
kselftest() {
	total=0 seen=0 log=/tmp/esa-$1.$$
	"$bin/$1" > "$log" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		1..*)
			total=${line#1..} ;;
		"ok "*"# SKIP"*)
			seen=$((seen + 1))
			name=${line#ok * }
			result skip "$1 ${name%% # SKIP*}" "${line##*# SKIP }" ;;
		"ok "*)
			seen=$((seen + 1))
			result ok "$1 ${line#ok * }" ;;
		"not ok "*)
			seen=$((seen + 1))
			result fail "$1 ${line#not ok * }" ;;
		"#"*)
			echo "$line" ;;
		*)
			echo "# $line" ;;
		esac
	done < "$log"
	rm -f "$log"
	if [ "$seen" = 0 ] || [ "$seen" != "$total" ] ||
	   { [ "$rc" != 0 ] && [ "$rc" != 4 ]; }; then
		result fail "$1 exited with status $rc after $seen of $total tests"
	fi
}

echo "TAP version 13"
echo "# kernel $(uname -r), $(nproc) CPUs"
since=$(dmesg | wc -l)
modprobe veth 2>/dev/null
if [ -e /sys/module/esa ]; then
	t "esa.ko was not loaded before the tests" false
else
	t "insmod esa.ko" insmod "$ESA_KO"
fi
t "module BTF in /sys/kernel/btf/esa" test -s /sys/kernel/btf/esa
kselftest esa_nl_test
kselftest esa_kfunc_test
kselftest esa_unload_test
t "esa_kfunc_bench: both variants aggregate a stream (timings informative)" \
	"$bin/esa_kfunc_bench" ${ESA_BENCH_PACKETS:-20000}

# A warning, BUG, oops or lockup during the run fails it.
bad='WARNING:|BUG:|Oops|general protection|Call Trace|kernel BUG|UBSAN|KASAN'
bad="$bad|refcount_t:|list_(add|del) corruption|circular locking|sleeping function"
bad="$bad|suspicious RCU|rcu_.*stall|hung_task|Kernel panic"
if dmesg | tail -n +$((since + 1)) | grep -qE "$bad"; then
	result fail "kernel log free of warnings, BUGs and oopses"
	dmesg | tail -n +$((since + 1)) | sed 's/^/# dmesg: /'
else
	result ok "kernel log free of warnings, BUGs and oopses"
	dmesg | tail -n +$((since + 1)) | grep -i 'esa' | sed 's/^/# dmesg: /'
fi

echo "1..$n"
echo "# $pass passed, $fail failed, $skip skipped"
echo "ESA_VM_RESULT pass=$pass fail=$fail skip=$skip"
[ "$fail" -le 100 ] && exit "$fail"
exit 100
