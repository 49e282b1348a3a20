#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# mutants.sh [NAME...]: put each bug that issue 12 found (and a few that
# later work could bring) back into a copy of today's module or data plane,
# one at a time, boot it in the test VM (vmtest.sh with ESA_VM_KMOD_SRC, or
# ESA_VM_KFUNC_OBJECT) and say whether the tests meant to catch that bug
# fail.  A test that passes on its mutant cannot see its bug.  Takes about
# two minutes a mutant and kernel (the debug kernel's, about 17); prints
# one line a mutant and ends with "N caught, N missed".  The same cache and
# environment as vmtest.sh.  Not run by the suite: run it when tests change.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=build/vm/mutants
mkdir -p "$out"

# name  series  tests that must fail (a regex on TAP names)  description
mutants=(
	"null		6.1 6.12	verifier_refuses_bad_arguments|kernel log	kfuncs without KF_TRUSTED_ARGS or NULL checks"
	"unaccounted	6.12	container_memory|namespace_teardown|registry_allocated	GFP_KERNEL instead of the caller's memory cgroup"
	"eager		6.12	registry_allocated_on_first_use	registry allocated with every namespace"
	"nochanged	6.12	set_prio|nl.events|esactl monitor	no event for a priority change"
	"noconsistent	6.12	dump_interrupted_by_a_change	dumps without NLM_F_DUMP_INTR"
	"noexpiry	6.12	dump_interrupted_by_an_expiry	an expiry not a change for a dump"
	"dumpattrs	6.12	dump_takes_no_attributes	a dump's attributes ignored"
	"nobind		6.12	program_serves_one_namespace|programs_sharing_maps	a program serving every namespace"
	"bindbss	6.12	programs_sharing_maps	the binding in the program's memory, not with the slot maps"
	"nofloor	6.12	out_of_range_values|lease 99|lease of 50 ms	no lease floor"
	"usedgen	6.12	admission_racing_a_delete|esa_kmod_stress	used_gen written outside the job's lock"
	"onelevel	6.12	two_levels|leaf_sends|spine_admits|a leaf of two|a spine of two|spine's job-add	two levels not checked by the kfunc"
	"dkms		6.1	DKMS builds	DKMS needing the running kernel's vmlinux"
	"sleep		debug	kernel log	an allocation that may sleep under the job's spinlock (only a debug kernel sees it)"
)

# mutate NAME DIR: the bug, into the copy in DIR (fails if the code moved).
mutate() {
	local d=$2
	case $1 in
	null)
		sed -i 's/, KF_TRUSTED_ARGS)/)/' "$d/kmod/kfunc.c"
		sed -i '/if (unlikely(!\(ji\|out\|b\)))/{N;d}' "$d/kmod/kfunc.c" ;;
	unaccounted)
		sed -i 's/^#define ESA_GFP.*/#define ESA_GFP GFP_KERNEL/' "$d/kmod/registry.c" ;;
	eager)
		sed -i 's/^\tatomic_set(\&en->dump_seq, 1);/&\n\tmutex_lock(\&en->lock);\n\tesa_reg_get(en);\n\tmutex_unlock(\&en->lock);/' "$d/kmod/registry.c" ;;
	nochanged)
		sed -i '/esa_notify_job(en, j, ESA_CMD_JOB_CHANGED, GFP_ATOMIC);/d' "$d/kmod/registry.c" ;;
	noconsistent)
		sed -i '/genl_dump_check_consistent(cb, hdr);/d' "$d/kmod/netlink.c" ;;
	noexpiry)
		sed -i '/^\tesa_changed(j->en);$/d' "$d/kmod/registry.c" ;;
	dumpattrs)
		sed -i 's/if (nlmsg_attrlen(cb->nlh, GENL_HDRLEN)) {/if (0) {/' "$d/kmod/netlink.c" ;;
	nobind)
		sed -i 's/if (likely(cookie == net->net_cookie))/if (1)/' "$d/kmod/kfunc.c" ;;
	nofloor)
		sed -i 's/if (\*lease_ms \&\& \*lease_ms < ESA_LEASE_MS_MIN) {/if (0) {/' "$d/kmod/netlink_jobs.c" ;;
	usedgen)
		# The old fast path: a packet marks its generation used itself.
		python3 - "$d/kmod/registry.h" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("""		     esa_lease_over(j->lease_ms, last, now) ||
		     READ_ONCE(j->used_gen) != *gen))
		return esa_job_slow(j, now, gen);
	if ((s64)(now - last) > ESA_STAMP_NS)
		WRITE_ONCE(j->last_active_ns, now);
	return 0;""", """		     esa_lease_over(j->lease_ms, last, now)))
		return esa_job_slow(j, now, gen);
	if ((s64)(now - last) > ESA_STAMP_NS)
		WRITE_ONCE(j->last_active_ns, now);
	if (READ_ONCE(j->used_gen) != *gen)
		WRITE_ONCE(j->used_gen, *gen);
	return 0;""")
open(p, 'w').write(s)
EOF
		grep -q 'WRITE_ONCE(j->used_gen, \*gen)' "$d/kmod/registry.h" ;;
	sleep)
		sed -i 's/esa_notify_job(en, j, ESA_CMD_JOB_CHANGED, GFP_ATOMIC);/esa_notify_job(en, j, ESA_CMD_JOB_CHANGED, GFP_KERNEL);/' \
			"$d/kmod/registry.c" ;;
	onelevel)
		# Admission as before two levels: no leaf's ranks, no upstream.
		sed -i 's/^\tret = esa_kf_member(j, rank, (u8)(key >> 40), bitmap, saddr,$/\tret = esa_kf_member(j, rank, ESA_F_LEAF * !!j->set[rank], cpu_to_be64(j->set[rank]), saddr,/' \
			"$d/kmod/kfunc.c"
		sed -i 's/^\tji->up = j->up;$/\tji->mask = 0;/' "$d/kmod/kfunc.c" ;;
	bindbss)
		# The data plane's binding in its own .bss (the code before).
		python3 - "$d/bpf/esa_kfunc.bpf.h" <<'EOF2'
import re, sys
p = sys.argv[1]
s = open(p).read()
s = re.sub(r"struct \{\n\t__uint\(type, BPF_MAP_TYPE_ARRAY\);\n\t__uint\(max_entries, 1\);\n"
           r"\t__type\(key, __u32\);\n\t__type\(value, struct esa_kf_bind\);\n\} esa_kf_ns SEC\(\"\.maps\"\);",
           "struct esa_kf_bind esa_kf_ns;", s)
s = s.replace("""	__u32 k = 0;
	struct esa_kf_bind *b = bpf_map_lookup_elem(&esa_kf_ns, &k);

	return b ? bpf_esa_bind(ctx, b) : -1;""", "	return bpf_esa_bind(ctx, &esa_kf_ns);")
open(p, 'w').write(s)
EOF2
		grep -q '^struct esa_kf_bind esa_kf_ns;' "$d/bpf/esa_kfunc.bpf.h" ;;
	dkms)
		sed -i 's/^elif \[ -r "\$image" \]; then/elif false; then/' "$d/kmod/build.sh" ;;
	esac
}

# The kfunc variant of the data plane from the sources in $1 (bindbss).
bpf_object() {
	local d=$1
	clang -O2 -g -Wall -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 \
		-I/usr/include/"$(gcc -dumpmachine)" -I"$d/bpf" -I"$d/include" \
		-I"$d/include/uapi" -Iuser/common -Ibuild -DESA_KFUNC \
		-c "$d/bpf/esa.bpf.c" -o "$d/esa_kfunc.bpf.o"
}

# The DKMS build uses the tree's kmod/build.sh: the mutant's is put there
# for the run, and the tree's back however the run ends.
restore_build_sh() {
	if [ -e "$out/build.sh.orig" ]; then
		cp "$out/build.sh.orig" kmod/build.sh && rm -f "$out/build.sh.orig"
	fi
}
trap restore_build_sh EXIT
trap 'exit 130' INT TERM HUP

caught=0 missed=0
for m in "${mutants[@]}"; do
	IFS=$'\t' read -r name series want what <<< "$(echo "$m" | tr -s '\t')"
	[ $# = 0 ] || [[ " $* " == *" $name "* ]] || continue
	d=$top/$out/$name
	rm -rf "$d" && mkdir -p "$d"
	cp -a Kbuild kmod include bpf "$d/"
	before=$(cat "$d"/kmod/*.[ch] "$d/kmod/build.sh" "$d"/bpf/*.h | md5sum)
	mutate "$name" "$d"
	if [ "$(cat "$d"/kmod/*.[ch] "$d/kmod/build.sh" "$d"/bpf/*.h | md5sum)" = "$before" ]; then
		echo "mutant $name: could not be made (the code moved): fix mutants.sh"
		missed=$((missed + 1))
		continue
	fi
	for s in $series; do
		log=$out/$name-$s.log
		if [ "$name" = dkms ]; then
			cp kmod/build.sh "$out/build.sh.orig"
			cp "$d/kmod/build.sh" kmod/build.sh
			selftests/vm/vmtest.sh -b "$s" > "$log" 2>&1
			restore_build_sh
		elif [ "$name" = bindbss ]; then
			# The module is today's; the data plane is the mutant.
			bpf_object "$d" > "$log" 2>&1 &&
			ESA_VM_KFUNC_OBJECT=$d/esa_kfunc.bpf.o \
				selftests/vm/vmtest.sh "$s" >> "$log" 2>&1
		else
			ESA_VM_KMOD_SRC=$d selftests/vm/vmtest.sh "$s" > "$log" 2>&1
		fi
		failed=$(grep -E '^not ok' "$log" | grep -E "$want" | sed 's/^not ok [0-9]* - //' | head -5 |
			 tr '\n' ';')
		if [ -n "$failed" ]; then
			caught=$((caught + 1))
			echo "mutant $name ($what), $s: caught by: $failed"
		else
			missed=$((missed + 1))
			echo "mutant $name ($what), $s: MISSED (no failure matching /$want/; $log)"
		fi
	done
done
echo "$caught caught, $missed missed"
