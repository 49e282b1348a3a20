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

# esactl as an admin uses it on a box with esa.ko: the program picks the
# module's registry by itself, jobs go over netlink, events come out.
if [ -x "$bin/esactl" ]; then
	pin=/sys/fs/bpf/esactl-vm
	esactl() { "$bin/esactl" -d $pin "$@"; }
	ip link add ea0 type veth peer name eb0 && ip link set ea0 up && ip link set eb0 up
	t "esactl prog load: picks the kfunc variant with esa.ko loaded" \
		sh -c "'$bin/esactl' -d $pin prog load slots 64 values 32 &&
		       '$bin/esactl' -d $pin status | grep -q 'through: esa.ko'"
	t "esactl dev attach ea0" esactl dev attach ea0
	esactl -j monitor > /tmp/esactl-mon 2>&1 &
	mon=$!
	sleep 0.3
	t "esactl job add: registered in esa.ko over netlink" \
		sh -c "'$bin/esactl' -d $pin job add 3 ps 10.9.0.2:9000 \
		       workers 10.9.0.3:5000 10.9.0.4 max-prio 2 lease 300 &&
		       '$bin/esactl' -d $pin job show 3 | grep -q 'workers 2 max-prio 2 lease 300ms'"
	t "esactl job add again: one line, the module's reason" \
		sh -c "! '$bin/esactl' -d $pin job add 3 ps 10.9.0.2:9000 workers 10.9.0.3 2>/tmp/e;
		       [ \$(wc -l < /tmp/e) = 1 ] && grep -q 'job 3 exists' /tmp/e"
	t "esactl job add past max_jobs: refused with the program's limit" \
		sh -c "! '$bin/esactl' -d $pin job add 4000 ps 10.9.0.2:9000 workers 10.9.0.3 2>/tmp/e;
		       cat /tmp/e; grep -q 'job id 4000 out of range (0..255)' /tmp/e"
	t "esactl job set 3 max-prio 5" \
		sh -c "'$bin/esactl' -d $pin job set 3 max-prio 5 &&
		       '$bin/esactl' -d $pin job show 3 | grep -q 'max-prio 5'"
	sleep 1.5	# the lease of job 3 runs out
	t "esactl job delete 3" esactl job delete 3
	t "esactl stats show: the module's counters" \
		sh -c "'$bin/esactl' -d $pin stats show | grep -q 'esa.ko: adds 1 deletes 1 expiries 1'"
	sleep 0.3
	kill $mon 2>/dev/null
	t "esactl monitor: added, expired, deleted" \
		sh -c "cat /tmp/esactl-mon; grep -q '\"event\":\"added\"' /tmp/esactl-mon &&
		       grep -q '\"event\":\"expired\"' /tmp/esactl-mon &&
		       grep -q '\"event\":\"deleted\"' /tmp/esactl-mon"
	t "rmmod refused while the kfunc program is loaded" sh -c "! rmmod esa"
	t "esactl job add region auto: homes placed from esa.ko's job list" \
		sh -c "'$bin/esactl' -d $pin job add 5 ps 10.9.0.2:9000 workers 10.9.0.3 region auto 16 &&
		       '$bin/esactl' -d $pin job add 6 ps 10.9.0.2:9000 workers 10.9.0.3 region auto 16 &&
		       '$bin/esactl' -d $pin job show 6 | grep -q 'region 16+16' &&
		       '$bin/esactl' -d $pin job flush"
	t "esactl prog unload" esactl prog unload
	t "no program: esactl job add goes to esa.ko, refused with its extack" \
		sh -c "! '$bin/esactl' -d $pin job add 4000 ps 10.9.0.2:9000 workers 10.9.0.3 2>/tmp/e;
		       cat /tmp/e; [ \$(wc -l < /tmp/e) = 1 ] && grep -q 'esactl: add job 4000: ' /tmp/e"
	ip link del ea0
	unset -f esactl
fi

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
