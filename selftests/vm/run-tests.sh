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
#   ESA_YNL           optional: the kernel's ynl CLI (tools/net/ynl/cli.py)
#                     and ESA_YNL_SPEC, kmod/esa.yaml, to drive esa.ko with
#   ESA_STRESS_SECONDS  how long esa_kmod_stress runs (default 8)
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
	echo "# $(cut -d' ' -f1 /proc/uptime)s: $1"
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
# On a debug kernel: lockdep must be on when the tests begin, or it cannot
# see them.  A report before esa.ko was loaded (the kernel's own, at boot)
# turns it off; say so, with the report, so that the runner can boot again.
if [ -r /proc/lockdep_stats ] && ! grep -Eq 'debug_locks: +1' /proc/lockdep_stats; then
	result fail "lockdep on before the tests (debug_locks 1)"
	dmesg | awk '/BUG:|WARNING:|=====/ { n = 60 } n-- > 0' | head -80 | sed 's/^/# boot: /'
	echo "ESA_VM_BOOT_REPORT lockdep was turned off before the tests"
fi
modprobe veth 2>/dev/null
if [ -e /sys/module/esa ]; then
	t "esa.ko was not loaded before the tests" false
else
	t "insmod esa.ko" insmod "$ESA_KO"
fi
t "module BTF in /sys/kernel/btf/esa" test -s /sys/kernel/btf/esa
kselftest esa_nl_test
kselftest esa_kfunc_test
# A debug kernel (KASAN, lockdep, all under TCG) runs each packet many times
# slower: it sends a tenth, the same seeds (each case at least what its
# checks need, esa_fuzz.c), within the harness's 1200 s a case.
fuzz_n=20000
[ -r /proc/lockdep_stats ] && fuzz_n=2000
t "esa_fuzz: the structure-aware fuzzer on the kfunc variant, jobs in esa.ko ($fuzz_n packets a case)" \
	"$bin/esa_fuzz" -n "$fuzz_n" -o "$ESA_KFUNC_OBJECT"

# esactl as an admin uses it on a box with esa.ko: the program picks the
# module's registry by itself, jobs go over netlink, events come out.
if [ -x "$bin/esactl" ]; then
	pin=/sys/fs/bpf/esactl-vm
	esactl() { "$bin/esactl" -d $pin "$@"; }
	# The job's workers and PS are reached through ea0 (esactl checks
	# that every member is behind an attached port).
	ip link add ea0 type veth peer name eb0 && ip link set ea0 up && ip link set eb0 up
	# native XDP sends into a veth only when its peer runs NAPI (GRO on
	# it): esactl dev attach refuses ea0 otherwise (6.3 and later)
	ethtool -K eb0 gro on >/dev/null 2>&1
	ip addr add 10.9.0.1/24 dev ea0
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
	t "esactl job add lease 99: refused, the lease floor" \
		sh -c "! '$bin/esactl' -d $pin job add 9 ps 10.9.0.2:9000 workers 10.9.0.3 lease 99 2>/tmp/e;
		       cat /tmp/e; [ \"\$(cat /tmp/e)\" = 'esactl: a lease is 0 (none) or 100 to 3600000 ms, not 99' ]"
	sleep 1.5	# the lease of job 3 runs out
	t "esactl job delete 3" esactl job delete 3
	t "esactl stats show: the module's counters" \
		sh -c "'$bin/esactl' -d $pin stats show | grep -q 'esa.ko: adds 1 deletes 1 expiries 1'"
	sleep 0.3
	kill $mon 2>/dev/null
	t "esactl monitor: added first, changed and expired, deleted last" \
		sh -c "cat /tmp/esactl-mon; grep -o '\"event\":\"[a-z]*\"' /tmp/esactl-mon > /tmp/ev;
		       [ \"\$(head -1 /tmp/ev)\" = '\"event\":\"added\"' ] &&
		       [ \"\$(tail -1 /tmp/ev)\" = '\"event\":\"deleted\"' ] &&
		       [ \$(wc -l < /tmp/ev) = 4 ] &&
		       grep -q changed /tmp/ev && grep -q expired /tmp/ev"
	t "rmmod refused with EAGAIN while the kfunc program is loaded" \
		sh -c "rmmod esa 2>/tmp/e && exit 1; cat /tmp/e;
		       grep -q 'Resource temporarily unavailable' /tmp/e && [ -e /sys/module/esa ]"
	t "esactl job add region auto: homes placed from esa.ko's job list" \
		sh -c "'$bin/esactl' -d $pin job add 5 ps 10.9.0.2:9000 workers 10.9.0.3 region auto 16 &&
		       '$bin/esactl' -d $pin job add 6 ps 10.9.0.2:9000 workers 10.9.0.3 region auto 16 &&
		       '$bin/esactl' -d $pin job show 6 | grep -q 'region 16+16' &&
		       '$bin/esactl' -d $pin job flush"
	# Two levels in esa.ko: a leaf (a rank elsewhere, its spine), a spine.
	t "esactl job add: a leaf of two levels, registered in esa.ko" \
		sh -c "'$bin/esactl' -d $pin job add 10 ps 10.9.0.2:9000 workers 10.9.0.3:5000 - \
		       upstream 10.9.0.5 &&
		       '$bin/esactl' -d $pin job show 10 > /tmp/o; cat /tmp/o
		       grep -q 'workers 2 .*upstream 10.9.0.5:7680' /tmp/o &&
		       grep -q 'rank 0 10.9.0.3:5000' /tmp/o && ! grep -q 'rank 1' /tmp/o &&
		       '$bin/esactl' -d $pin job delete 10"
	t "esactl job add: a spine of two leaves, registered in esa.ko" \
		sh -c "'$bin/esactl' -d $pin job add 11 ps 10.9.0.2:9000 leaves 10.9.0.6=0-1 10.9.0.7=2-3 &&
		       '$bin/esactl' -d $pin job show 11 > /tmp/o; cat /tmp/o
		       grep -q 'workers 4 ' /tmp/o &&
		       grep -q 'rank 0 10.9.0.6:7680 leaf of ranks 0-1' /tmp/o &&
		       grep -q 'rank 2 10.9.0.7:7680 leaf of ranks 2-3' /tmp/o &&
		       '$bin/esactl' -d $pin job delete 11"
	t "esactl job add: overlapping leaves, refused with one line" \
		sh -c "! '$bin/esactl' -d $pin job add 12 ps 10.9.0.2:9000 leaves 10.9.0.6=0-1 10.9.0.7=1-3 2>/tmp/e;
		       cat /tmp/e; [ \$(wc -l < /tmp/e) = 1 ] && grep -q 'overlap' /tmp/e"
	t "esactl prog unload" esactl prog unload
	t "no program: esactl job add goes to esa.ko, refused with its extack" \
		sh -c "! '$bin/esactl' -d $pin job add 4000 ps 10.9.0.2:9000 workers 10.9.0.3 2>/tmp/e;
		       cat /tmp/e; [ \"\$(cat /tmp/e)\" = \"esactl: add job 4000: job id not below the module's max_jobs\" ]"
	ip link del ea0
	unset -f esactl
fi

# The fan-out on this kernel: one chunk of a job, two ranks behind one
# port and a PS, seen raw on the wire; native (devmap) and generic (tc).
if [ -x "$bin/esactl" ] && [ -x /usr/bin/python3 ] && [ -r "$bin/fanout_one.sh" ]; then
	for mode in native generic; do
		echo "# $(cut -d' ' -f1 /proc/uptime)s: fan-out, $mode"
		sh "$bin/fanout_one.sh" "$bin/esactl" "$bin/fanout_probe.py" $mode > /tmp/fan 2>&1
		rc=$? seen=0
		while IFS= read -r line; do
			case $line in
			"ok - "*) seen=$((seen + 1)); result ok "${line#ok - }" ;;
			"not ok - "*) seen=$((seen + 1)); result fail "${line#not ok - }" ;;
			*) echo "# $line" ;;
			esac
		done < /tmp/fan
		[ "$rc" = 0 ] && [ "$seen" = 4 ] ||
			result fail "fanout_one.sh $mode: 4 checks and status 0 (saw $seen, status $rc)"
	done
elif [ -n "${ESA_YNL:-}" ]; then
	t "fan-out: esactl, python3 and fanout_one.sh in the guest" false
else
	result skip "fan-out on this kernel (fanout_one.sh)" "no python3 in the guest"
fi

# The kernel's own netlink tool, on the spec: add, get, dump, monitor.
echo "# $(cut -d' ' -f1 /proc/uptime)s: ynl"
if [ -n "${ESA_YNL:-}" ] && ! [ -x /usr/bin/python3 ]; then
	t "ynl: the kernel's netlink CLI given (ESA_YNL), and python3 to run it" false
elif [ -n "${ESA_YNL:-}" ]; then
	cat > /tmp/ynl <<EOF
#!/bin/sh
PYTHONPATH=/usr/lib/python3/dist-packages exec /usr/bin/python3 -s "$ESA_YNL" \\
	--spec "$ESA_YNL_SPEC" --no-schema --output-json "\$@"
EOF
	chmod +x /tmp/ynl
	# 10.9.0.3, 10.9.0.4, 10.9.0.2 as integers; ports big-endian by the spec.
	t "ynl: job-add from kmod/esa.yaml" /tmp/ynl --do job-add --json \
		'{"id": 5, "workers": [{"ipv4": 168361987, "port": 5000}, {"ipv4": 168361988}],
		  "ps": {"ipv4": 168361986, "port": 9000}, "max-prio": 2, "lease-ms": 1000}'
	t "ynl: job-get decodes the job" sh -c '
		/tmp/ynl --do job-get --json "{\"id\": 5}" > /tmp/y; cat /tmp/y
		grep -q "\"workers\": \[{\"ipv4\": \"10.9.0.3\", \"port\": 5000}, {\"ipv4\": \"10.9.0.4\", \"port\": 0}\]" /tmp/y &&
		grep -q "\"ps\": {\"ipv4\": \"10.9.0.2\", \"port\": 9000}" /tmp/y &&
		grep -q "\"max-prio\": 2" /tmp/y && grep -q "\"reg\": [0-9]" /tmp/y'
	t "ynl: job-get dump lists it" sh -c '
		/tmp/ynl --dump job-get > /tmp/y; cat /tmp/y; grep -q "\"id\": 5" /tmp/y'
	# 6.12's CLI cannot --do while subscribed when an event comes before
	# the answer: a monitor of its own, sets until it has heard them.
	t "ynl: monitor (subscribe events) sees job-changed" sh -c '
		/tmp/ynl --subscribe events --sleep 12 > /tmp/y 2>&1 &
		mon=$!
		while kill -0 $mon 2>/dev/null; do
			/tmp/ynl --do job-set --json "{\"id\": 5, \"max-prio\": 7}" > /dev/null || exit 1
			sleep 1
		done
		wait $mon; cat /tmp/y
		grep -q "\"name\": \"job-changed\"" /tmp/y && grep -q "\"max-prio\": 7" /tmp/y'
	t "ynl: job-add of a lease of 50 ms: the module's extack" sh -c '
		/tmp/ynl --do job-add --json "{\"id\": 6, \"workers\": [{\"ipv4\": 168361987}],
		     \"ps\": {\"ipv4\": 168361986, \"port\": 9000}, \"lease-ms\": 50}" > /tmp/y
		cat /tmp/y; grep -q "lease shorter than 100 ms (0: never)" /tmp/y'
	t "ynl: job-del" /tmp/ynl --do job-del --json '{"id": 5}'
	# Two levels: a spine of two leaves (ranks 0-1 and 2-3).
	t "ynl: a spine's job-add with leaves; job-get has their ranks and the mask" sh -c '
		/tmp/ynl --do job-add --json "{\"id\": 8, \"ps\": {\"ipv4\": 168361986, \"port\": 9000},
		     \"leaves\": [{\"ipv4\": 168361987, \"port\": 7680, \"ranks\": 3},
				  {\"ipv4\": 168361988, \"ranks\": 12}]}" || exit 1
		/tmp/ynl --do job-get --json "{\"id\": 8}" > /tmp/y; cat /tmp/y
		grep -q "\"leaves\": \[{\"ipv4\": \"10.9.0.3\", \"port\": 7680, \"ranks\": 3}, {\"ipv4\": \"10.9.0.4\", \"port\": 0, \"ranks\": 12}\]" /tmp/y &&
		grep -q "\"mask\": 15" /tmp/y && grep -q "\"ranks\": 4" /tmp/y &&
		/tmp/ynl --do job-del --json "{\"id\": 8}"'
else
	result skip "ynl: the kernel's netlink CLI on kmod/esa.yaml" "ESA_YNL not given"
fi

kselftest esa_kmod_stress
kselftest esa_unload_test
t "esa_kfunc_bench: both variants aggregate a stream (timings informative)" \
	"$bin/esa_kfunc_bench" ${ESA_BENCH_PACKETS:-20000}

echo "# $(cut -d' ' -f1 /proc/uptime)s: end of the tests"
# Leaks, where the kernel has kmemleak (the debug kernel): scan twice, as
# its documentation advises, and report what is left.
if [ -w /sys/kernel/debug/kmemleak ] ||
   { mount -t debugfs none /sys/kernel/debug 2>/dev/null && [ -w /sys/kernel/debug/kmemleak ]; }; then
	sleep 1
	echo scan > /sys/kernel/debug/kmemleak
	sleep 5
	echo scan > /sys/kernel/debug/kmemleak
	if grep -q . /sys/kernel/debug/kmemleak; then
		result fail "kmemleak: no leaks"
		sed 's/^/# kmemleak: /' /sys/kernel/debug/kmemleak | head -100
	else
		result ok "kmemleak: no leaks"
	fi
fi

# A warning, BUG, oops or lockup during the run fails it.  KCSAN reports a
# data race only where it involves esa.ko (the rest of the kernel has its
# own, benign or known).
bad='WARNING:|BUG:|Oops|general protection|Call Trace|kernel BUG|UBSAN|KASAN'
bad="$bad|refcount_t:|list_(add|del) corruption|circular locking|sleeping function"
bad="$bad|suspicious RCU|rcu_.*stall|hung_task|Kernel panic|ODEBUG|possible recursive locking"
bad="$bad|inconsistent lock state|lock held when returning|bad unlock balance"
dmesg | tail -n +$((since + 1)) > /tmp/dmesg
# A KCSAN report runs from its BUG: line to its closing line of ='s.
awk '/BUG: KCSAN:/ { r = 1; buf = "" }
     r { buf = buf $0 "\n"; if ($0 ~ /==========$/) { if (buf ~ /\[esa\]/) printf "%s", buf; r = 0 }; next }
     { print }' /tmp/dmesg > /tmp/dmesg.ours
kcsan=$(grep -c 'BUG: KCSAN:' /tmp/dmesg)
if grep -qE "$bad" /tmp/dmesg.ours; then
	result fail "kernel log free of warnings, BUGs and oopses"
	sed 's/^/# dmesg: /' /tmp/dmesg.ours
else
	result ok "kernel log free of warnings, BUGs and oopses"
	grep -i 'esa' /tmp/dmesg.ours | sed 's/^/# dmesg: /'
fi
[ "$kcsan" = 0 ] || echo "# KCSAN reported $kcsan data races, none in esa.ko"

# On a debug kernel: the checkers were on, and lockdep stayed on (it turns
# itself off after its first report, wherever that was).
dmesg | grep -E 'KernelAddressSanitizer initialized|kmemleak: Kernel memory leak detector|kcsan: |Lock dependency validator' |
	sed 's/^/# checker: /'
if [ -r /proc/lockdep_stats ]; then
	if grep -Eq 'debug_locks: +1' /proc/lockdep_stats; then
		result ok "lockdep on to the end (debug_locks 1)"
	else
		result fail "lockdep on to the end (debug_locks 1)"
		dmesg | sed 's/^/# dmesg: /' | head -200
	fi
fi

echo "1..$n"
echo "# $pass passed, $fail failed, $skip skipped"
echo "ESA_VM_RESULT pass=$pass fail=$fail skip=$skip"
[ "$fail" -le 100 ] && exit "$fail"
exit 100
