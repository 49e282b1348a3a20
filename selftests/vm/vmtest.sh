#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# vmtest.sh - esa.ko, its netlink API and the XDP program's kfunc variant,
# tested inside Debian 12's own kernels booted in qemu with software
# emulation (TCG): neither KVM nor module loading on the host is needed.
#
# usage: selftests/vm/vmtest.sh [-b] [-i] [SERIES...]
#   SERIES: 6.1, 6.12 (Debian 12's kernels, default), debug (6.12 built
#       from Debian's linux-source with lockdep, KASAN, kmemleak,
#       atomic-sleep and debug-object checks), kcsan (the same with KCSAN
#       instead of KASAN and kmemleak); the debug kernels are built once
#       (30 to 45 minutes each on 2 cores) and cached, see kernel.sh
#   -b  build only: esa.ko for each kernel (build/vm/KVER/esa.ko), the
#       tests and the initramfs
#   -i  first install the Debian packages that are missing (apt-get)
# Prints TAP on stdout: a line per test of each guest, named after its
# series ("ok 12 - 6.12 esa_nl_test nl.events"), then "N passed, N failed,
# N skipped".  Console logs are in build/vm/KVER/console.log.  Exit status:
# 0 all passed, 1 something failed, 4 a requirement is missing (skipped).
# ESA_VM_TIMEOUT bounds a boot (seconds, default 300, 3600 for the debug
# kernels); V=1 shows consoles.  ESA_VM_KMOD_SRC=DIR builds the module
# from DIR's Kbuild, kmod/ and include/uapi/linux/esa.h instead (today's
# tests against another module, an older one say; no DKMS build then).
# ESA_VM_KFUNC_OBJECT=FILE puts another kfunc variant of the data plane
# in the guest than build/esa_kfunc.bpf.o (selftests/vm/mutants.sh).
# ESA_STRESS_SECONDS is passed to the guest (esa_kmod_stress).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=build/vm
cache=${ESA_VM_CACHE:-$top/vm}
tmo=${ESA_VM_TIMEOUT:-300}
ynl=
triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)

build_only=0 install=0
while getopts bih o; do
	case $o in
	b) build_only=1 ;;
	i) install=1 ;;
	*) sed -n '2,/^set /{/^#/s/^# \?//p}' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
series=${*:-6.1 6.12}

n=0 pass=0 fail=0 skip=0
tap() { # tap ok|fail|skip NAME [REASON]
	n=$((n + 1))
	case $1 in
	ok)	pass=$((pass + 1)); echo "ok $n - $2" ;;
	skip)	skip=$((skip + 1)); echo "ok $n - $2 # SKIP $3" ;;
	*)	fail=$((fail + 1)); echo "not ok $n - $2" ;;
	esac
}
note() { echo "# $*"; }
finish() {
	echo "1..$n"
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ] || exit 1
	[ "$pass" != 0 ] || exit 4
	exit 0
}

# ------------------------------------------------------------------ #
# Requirements: command or file, and the Debian package that has it.   #
# ------------------------------------------------------------------ #
need=(
	qemu-system-x86_64:qemu-system-x86 busybox:busybox-static
	pahole:dwarves cpio:cpio depmod:kmod clang:clang bpftool:bpftool
	gcc:gcc make:make xz:xz-utils zstd:zstd ip:iproute2 readelf:binutils
	flock:util-linux apt-get:apt dpkg-deb:dpkg dash:dash
	"/usr/lib/$triplet/libbpf.a:libbpf-dev"
	"/usr/lib/$triplet/libelf.a:libelf-dev"
	"/usr/lib/$triplet/libz.a:zlib1g-dev"
	perl:perl /usr/lib/python3/dist-packages/yaml:python3-yaml
	/usr/lib/python3/dist-packages/jsonschema:python3-jsonschema
	/usr/bin/python3.11:python3.11 dkms:dkms
)
case " $* " in
*" debug "*|*" kcsan "*)
	need+=(bison:bison flex:flex bc:bc /usr/include/openssl/ssl.h:libssl-dev
	       /usr/include/libelf.h:libelf-dev) ;;
esac
missing=()
for x in "${need[@]}"; do
	what=${x%:*} pkg=${x##*:}
	case $what in
	/*) [ -e "$what" ] ;;
	busybox) [ -x /bin/busybox ] && ! readelf -l /bin/busybox | grep -q INTERP ;; # static
	*) command -v "$what" >/dev/null ;;
	esac || missing+=("$pkg")
done
if [ ${#missing[@]} != 0 ] && [ $install = 1 ]; then
	note "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update -qq && apt-get install -y -qq --no-install-recommends \
		"${missing[@]}"; } >&2 || { tap fail "install ${missing[*]}"; finish; }
	missing=()
fi
if [ ${#missing[@]} != 0 ]; then
	echo "1..0 # SKIP missing Debian packages: ${missing[*]} (run with -i)"
	exit 4
fi
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (apt-get download, depmod)"; exit 4; }

# ------------------------------------------------------------------ #
# Build                                                                #
# ------------------------------------------------------------------ #
t0=$(date +%s)
mkdir -p "$out"
if ! make -s -j2 vm-bins > "$out/bins.log" 2>&1; then
	tap fail "build the tests (make vm-bins)"
	sed 's/^/# /' "$out/bins.log" | tail -30
	finish
fi

# Checks on the host: style, and the spec against schema and header.
check() { # check NAME MAKE-TARGET
	if make -s "$2" > "$out/$2.log" 2>&1; then
		tap ok "$1"
	else
		tap fail "$1"
		sed 's/^/# /' "$out/$2.log" | tail -20
	fi
}
check "kmod/ is checkpatch.pl --strict clean" kmod-checkpatch
check "bpf/ is checkpatch.pl --strict clean (but for libbpf's const volatile, kfunc externs, index macros)" bpf-checkpatch
check "kmod/esa.yaml is a valid netlink spec, matches the UAPI header, and kmod/genl.[ch] are what ynl-gen-c makes of it" kmod-spec-check
# DKMS may take vmlinux from a kernel image, which extract-vmlinux.sh reads
# as an x86 bzImage only: dkms.conf must keep DKMS to x86_64.
if grep -q '^BUILD_EXCLUSIVE_ARCH="x86_64"$' dkms.conf &&
   grep -q 'x86 kernel image' kmod/extract-vmlinux.sh; then
	tap ok "dkms.conf builds only for x86_64, the one arch kmod/extract-vmlinux.sh reads"
else
	tap fail "dkms.conf builds only for x86_64, the one arch kmod/extract-vmlinux.sh reads"
fi

# Copy ELF file $1 to $r$2 with the shared libraries it needs.
copy_elf() {
	local lib
	mkdir -p "$r$(dirname "$2")"
	cp -L "$1" "$r$2"
	for lib in $(ldd "$1" | grep -o '/[^ ]*'); do
		[ -e "$r$lib" ] && continue
		mkdir -p "$r$(dirname "$lib")"
		cp -L "$lib" "$r$lib"
	done
}

# Module $1 (path in modules.dep) and its dependencies, first ones first.
add_module() {
	local m=$1 dep base
	for dep in $(sed -n "s|^$m: *||p" "$mdir/modules.dep"); do
		add_module "$dep"
	done
	base=$(basename "$m")
	base=${base%.xz}
	base=${base%.zst}
	grep -qx "$base" "$r/lib/modules/order" && return
	case $m in
	*.xz) xz -dc "$mdir/$m" ;;
	*.zst) zstd -qdc "$mdir/$m" ;;
	*) cat "$mdir/$m" ;;
	esac > "$r/lib/modules/$base"
	echo "$base" >> "$r/lib/modules/order"
}

# Debian's python3 with what the kernel's ynl CLI needs, the CLI (6.12's)
# and the spec: the VM drives esa.ko with them (run-tests.sh).
add_python() {
	local f
	[ -n "$ynl" ] || return 0
	copy_elf /usr/bin/python3.11 /usr/bin/python3
	for f in $(/usr/bin/python3 selftests/vm/pyfiles.py "$ynl/tools/net/ynl" kmod/esa.yaml); do
		case $f in
		*/) mkdir -p "$r$f" && cp -a "$f." "$r$f" ;;
		*.so) copy_elf "$f" "$f" ;;
		*) mkdir -p "$r$(dirname "$f")" && cp "$f" "$r$f" ;;
		esac
	done
	find "$r/usr/lib" -name __pycache__ -prune -exec rm -rf {} +
	mkdir -p "$r/esa/ynl"
	cp -r "$ynl/tools/net/ynl/cli.py" "$ynl/tools/net/ynl/lib" "$r/esa/ynl/"
	cp kmod/esa.yaml "$r/esa/"
}

mkinitramfs() {
	local a m
	r=$d/initramfs
	mdir=$MODROOT/lib/modules/$KVER
	rm -rf "$r"
	mkdir -p "$r"/{bin,sbin,dev,proc,sys,tmp,etc,esa,lib/modules}
	cp /bin/busybox "$r/bin/"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -s busybox "$r/bin/$a"
	done
	# testlib.h sets up its topology with iproute2's ip, through
	# system(3): /bin/sh must be a shell that runs it, not busybox's own
	# applet (Debian's busybox prefers its applets).
	rm -f "$r/bin/ip" "$r/bin/sh"
	copy_elf "$(command -v ip)" /bin/ip
	copy_elf "$(readlink -f /bin/sh)" /bin/sh
	: > "$r/lib/modules/order"
	# veth, and clsact and cls_bpf for generic mode's fan-out (tc):
	# modules of Debian's kernels, built into the debug kernels.  The
	# guest cannot load them on demand (no modprobe data): all at boot.
	for a in drivers/net/veth net/sched/sch_ingress net/sched/cls_bpf; do
		if m=$(grep -o "^kernel/$a\\.ko[.a-z]*" "$mdir/modules.dep"); then
			add_module "$m"
		elif ! grep -q "$a\\.ko" "$mdir/modules.builtin"; then
			echo "$KVER has no $a.ko" >&2
			return 1
		fi
	done
	mkdir -p "$r/esa/nobtf"
	cp "$d/esa.ko" "${ESA_VM_KFUNC_OBJECT:-build/esa_kfunc.bpf.o}" "$out"/bin/esa_*_test \
		"$out/bin/esa_kmod_stress" "$out/bin/esa_kfunc_bench" "$out/bin/esa_fuzz" \
		"$out/bin/esactl" selftests/delivery/fanout_one.sh \
		selftests/delivery/fanout_probe.py selftests/pylib/esa_wire.py "$r/esa/"
	# the wire format (esa_wire.py): the UAPI header, where it looks from /esa
	mkdir -p "$r/include/uapi/linux"
	cp include/uapi/linux/esa.h "$r/include/uapi/linux/"
	# fanout_one.sh turns GRO on at the ranks' veth (native XDP into a
	# veth needs the peer's NAPI).
	copy_elf "$(command -v ethtool)" /sbin/ethtool
	add_python || return 1
	cp "$d/nobtf/esa.ko" "$r/esa/nobtf/"
	cp "$out/bin/qexit" "$r/bin/"
	# What the guest takes from the host's environment.
	: > "$r/esa/env"
	[ -z "${ESA_STRESS_SECONDS:-}" ] ||
		echo "export ESA_STRESS_SECONDS=$ESA_STRESS_SECONDS" >> "$r/esa/env"
	cp selftests/vm/init.sh "$r/init"
	cp selftests/vm/run-tests.sh "$r/esa/"
	chmod +x "$r/init" "$r/esa/run-tests.sh"
	(cd "$r" && find . | cpio -o -H newc --quiet) > "$d/initramfs.cpio"
}

# What DKMS's AUTOINSTALL does after a Debian 6.1 kernel upgrade: build
# esa.ko (dkms.conf, kmod/build.sh) for the new kernel while another one
# runs (here: the host's), from its headers as Debian ships them (no
# vmlinux) and its image in the boot directory.  Only the install step,
# which needs /lib/modules/KVER on this machine, is left out.
dkms_build() {
	local t=$top/$d/dkms hdr=linux-headers-$KVER log=$d/dkms.log ko
	rm -rf "$t"
	mkdir -p "$t/root/usr/src" "$t/boot" "$t/tree"
	make -s kmod-dkms-src DESTDIR="$t/dest" > "$log" 2>&1 &&
	cp -a "$MODROOT/usr/src/$hdr" "$t/root/usr/src/" &&
	rm -f "$t/root/usr/src/$hdr/vmlinux" &&
	ln -s "$MODROOT/usr/lib" "$t/root/usr/lib" &&
	ln -s "$VMLINUZ" "$t/boot/vmlinuz-$KVER" &&
	dkms add -m esa -v "$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)" \
		--sourcetree "$t/dest/usr/src" --dkmstree "$t/tree" >> "$log" 2>&1 &&
	RESOLVE_BTFIDS=$RESOLVE_BTFIDS ESA_BOOT_DIR=$t/boot \
		dkms build -m esa -v "$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)" \
		-k "$KVER" --kernelsourcedir "$t/root/usr/src/$hdr" \
		--sourcetree "$t/dest/usr/src" --dkmstree "$t/tree" >> "$log" 2>&1
	ko=$(find "$t/tree" -name esa.ko | head -1)
	if [ -z "$ko" ] || ! readelf -S "$ko" | grep ' \.BTF ' >/dev/null ||
	   ! grep -q "$KVER is not running: vmlinux from" "$log" "$t"/tree/esa/*/"$KVER"/*/log/make.log; then
		tap fail "$s: DKMS builds esa.ko with BTF for $KVER while $(uname -r) runs"
		sed 's/^/# /' "$log" | tail -30
		return 1
	fi
	cp "$ko" "$d/esa.ko"
	tap ok "$s: DKMS builds esa.ko with BTF for $KVER while $(uname -r) runs (the VM boots it)"
}

build_kernel() {
	local s=$1 env
	env=$(selftests/vm/kernel.sh "$s" 2> "$out/kernel-$s.log") || {
		tap fail "$s: fetch and prepare the kernel"
		sed 's/^/# /' "$out/kernel-$s.log" | tail -20
		return 1
	}
	eval "$env"
	case $s in debug|kcsan) d=$out/$s ;; *) d=$out/$KVER ;; esac
	rm -rf "$d/mod"
	mkdir -p "$d/mod/kmod" "$d/mod/include/uapi/linux"
	ksrc=${ESA_VM_KMOD_SRC:-.}
	cp "$ksrc/Kbuild" "$d/mod/"
	cp "$ksrc"/kmod/*.[ch] "$ksrc/kmod/Makefile" "$d/mod/kmod/"
	cp "$ksrc/include/uapi/linux/esa.h" "$d/mod/include/uapi/linux/"
	if ! make -s -j2 -C "$KDIR" M="$top/$d/mod" \
		${RESOLVE_BTFIDS:+RESOLVE_BTFIDS=$RESOLVE_BTFIDS} modules \
		> "$d/build.log" 2>&1 ||
	   grep -q 'Skipping BTF' "$d/build.log" ||
	   ! readelf -S "$d/mod/kmod/esa.ko" | grep ' \.BTF ' >/dev/null; then
		tap fail "$s: build esa.ko for $KVER with BTF"
		sed 's/^/# /' "$d/build.log" | tail -30
		return 1
	fi
	cp "$d/mod/kmod/esa.ko" "$d/esa.ko"
	# 6.1: the module the VM boots is the one DKMS builds after an upgrade.
	if [ "$s" = 6.1 ] && [ -z "${ESA_VM_KMOD_SRC:-}" ]; then
		dkms_build || return 1
	fi
	# And one without BTF (linked again without it), which must refuse to load.
	mkdir -p "$d/nobtf"
	rm -f "$d/mod/kmod/esa.ko"
	if ! make -s -j2 -C "$KDIR" M="$top/$d/mod" CONFIG_DEBUG_INFO_BTF_MODULES= \
		modules > "$d/nobtf.log" 2>&1 ||
	   readelf -S "$d/mod/kmod/esa.ko" | grep ' \.BTF ' >/dev/null; then
		tap fail "$s: build esa.ko for $KVER without BTF"
		sed 's/^/# /' "$d/nobtf.log" | tail -30
		return 1
	fi
	cp "$d/mod/kmod/esa.ko" "$d/nobtf/esa.ko"
	if ! mkinitramfs; then
		tap fail "$s: initramfs for $KVER"
		return 1
	fi
	tap ok "$s: esa.ko for $KVER with BTF, initramfs"
}

# ------------------------------------------------------------------ #
# Boot                                                                 #
# ------------------------------------------------------------------ #
# One qemu run of the guest: its console in $log, qemu's status in $rc.
qemu_run() {
	timeout --foreground -k 5 "$tmo" qemu-system-x86_64 \
		-accel tcg -cpu max -smp 2 -m 1G \
		-nodefaults -no-reboot -display none -serial stdio \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$VMLINUZ" -initrd "$d/initramfs.cpio" \
		-append "console=ttyS0 panic=-1 quiet loglevel=1" \
		< /dev/null 2>&1 | tr -d '\r' > "$log"
	rc=${PIPESTATUS[0]}
}

boot() {
	local s=$1 log=$d/console.log t rc line res want tmo=$tmo
	case $s in debug|kcsan) tmo=${ESA_VM_TIMEOUT:-3600} ;; esac
	t=$(date +%s.%N)
	qemu_run
	# A debug kernel that reported something of its own while booting,
	# before esa.ko, had lockdep off for the tests: once more (the
	# first console is kept).
	# A stock kernel that oopsed under emulation before /init ran (seen
	# once in CI: 6.12 in ttwu_queue_wakelist from an initcall, never
	# here in 12 boots) ran nothing of ours: once more, the console kept.
	if ! grep -q '^TAP version' "$log" &&
	   grep -Eq 'BUG:|Oops|general protection|Kernel panic' "$log"; then
		cp "$log" "$d/console-1.log"
		note "$s: the kernel failed before /init ($(grep -m1 -Eo '(BUG|Oops|general protection|Kernel panic)[^[]*' "$log")): booting again, first console in $d/console-1.log"
		qemu_run
	fi
	if grep -q '^ESA_VM_BOOT_REPORT' "$log"; then
		cp "$log" "$d/console-1.log"
		note "$s: the kernel reported at boot, before the tests ($(grep -m1 -o 'BUG: [^+]*' "$log" || echo "see $d/console-1.log")): lockdep was off; booting again"
		qemu_run
	fi
	t=$(echo "$(date +%s.%N) - $t" | bc)
	[ "${V:-0}" = 1 ] && sed 's/^/# | /' "$log"
	note "$s: $KVER booted and tested in ${t%.*}.$(echo "$t" | cut -d. -f2 | cut -c1)s (qemu status $rc)"
	while IFS= read -r line; do
		case $line in
		"ok "*"# SKIP"*)
			res=${line#ok * - }
			tap skip "$s ${res%% # SKIP*}" "${line##*# SKIP }" ;;
		"ok "*) tap ok "$s ${line#ok * - }" ;;
		"not ok "*) tap fail "$s ${line#not ok * - }" ;;
		*) [ "${V:-0}" = 1 ] || echo "$line" ;;
		esac
	done < <(grep -E '^(not )?ok [0-9]+ - |^# ' "$log")
	res=$(sed -n 's/^ESA_VM_RESULT .*fail=\([0-9]*\).*/\1/p' "$log")
	if [ -z "$res" ]; then
		[ "$rc" = 124 ] && why="timed out after ${tmo}s" || why="no result (qemu status $rc)"
		tap fail "$s: the VM ran to the end ($why)"
		tail -40 "$log" | sed 's/^/# | /'
		return
	fi
	[ "$res" -le 100 ] || res=100
	want=$((res * 2 + 1))
	if [ "$rc" != "$want" ]; then
		tap fail "$s: qemu exit status $rc, expected $want"
	fi
}

# The kernel's ynl CLI (6.12's sources) for the VM: from the archive that
# gives the kernels, so not having it is a failure, not a skip.
if ! ynl=$(selftests/vm/kernel.sh ynl 2> "$out/ynl.log"); then
	tap fail "the kernel's ynl CLI for the VM (selftests/vm/kernel.sh ynl)"
	sed 's/^/# /' "$out/ynl.log" | tail -5
	ynl=
fi

for s in $series; do
	case $s in 6.1|6.12|debug|kcsan) ;; *) tap fail "unknown series $s"; continue ;; esac
	build_kernel "$s" || continue
	[ $build_only = 1 ] && continue
	boot "$s"
done
note "total $(( $(date +%s) - t0 ))s"
finish
