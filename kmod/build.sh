#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# build.sh KDIR [KVER]: build esa.ko (kmod/esa.ko) against the kernel build
# tree KDIR, of kernel KVER (default: the running one), with module BTF.
# Used by `make kmod` and by DKMS (dkms.conf).
#
# XDP programs can call esa.ko's kfuncs only if the module has BTF, and
# Kbuild generates it only with KDIR/vmlinux and resolve_btfids.  Debian
# 12's 6.12 headers have both.  Its 6.1 headers have neither; then this
# puts a vmlinux in a private copy of KDIR: for the running kernel, its own
# BTF (/sys/kernel/btf/vmlinux, which serves as well as vmlinux); for
# another (DKMS after a kernel upgrade: the new kernel is installed, the
# old one runs), the vmlinux inside its image, $ESA_BOOT_DIR/vmlinuz-KVER
# (default /boot).  resolve_btfids comes from $RESOLVE_BTFIDS, from PATH,
# or is built from $ESA_SRC_DIR/linux-source-X.Y.tar.xz (default /usr/src:
# apt install linux-source-6.1).
set -eu

kdir=${1:?usage: build.sh KDIR [KVER]}
kver=${2:-$(uname -r)}
top=$(cd "$(dirname "$0")/.." && pwd)
work=$top/build/kdir-$kver
die() { echo "esa build: $*" >&2; exit 1; }

[ -e "$kdir/Makefile" ] || die "no kernel build tree at $kdir"

# A copy of the (small) headers tree, its relative links made absolute.
copy_kdir() {
	rm -rf "$work"
	mkdir -p "$(dirname "$work")"
	cp -a "$kdir" "$work"
	for l in "$work"/* "$work"/.[!.]*; do
		[ -L "$l" ] || continue
		ln -sfn "$(readlink -f "$kdir/$(basename "$l")")" "$l"
	done
}

image=${ESA_BOOT_DIR:-/boot}/vmlinuz-$kver
if [ -e "$kdir/vmlinux" ]; then
	build=$kdir
elif [ "$kver" = "$(uname -r)" ] && [ -r /sys/kernel/btf/vmlinux ]; then
	copy_kdir
	ln -sfn /sys/kernel/btf/vmlinux "$work/vmlinux"
	build=$work
elif [ -r "$image" ]; then
	echo "esa build: $kver is not running: vmlinux from $image" >&2
	copy_kdir
	"$top/kmod/extract-vmlinux.sh" "$image" "$work/vmlinux" ||
		die "no vmlinux with BTF in $image"
	build=$work
else
	die "$kdir has no vmlinux, needed for module BTF, and there is no $image to take it from"
fi

rbtf=${RESOLVE_BTFIDS:-}
if [ -z "$rbtf" ] && [ -x "$kdir/tools/bpf/resolve_btfids/resolve_btfids" ]; then
	rbtf=$kdir/tools/bpf/resolve_btfids/resolve_btfids
fi
[ -n "$rbtf" ] || rbtf=$(command -v resolve_btfids || true)
if [ -z "$rbtf" ]; then
	series=$(echo "$kver" | cut -d. -f1-2)
	tarball=${ESA_SRC_DIR:-/usr/src}/linux-source-$series.tar.xz
	out=$top/build/resolve_btfids-$series
	[ -r "$tarball" ] ||
		die "no resolve_btfids: install linux-source-$series, or set RESOLVE_BTFIDS"
	if [ ! -x "$out/resolve_btfids" ]; then
		echo "esa build: building resolve_btfids from $tarball" >&2
		rm -rf "$out" && mkdir -p "$out/src"
		# Patterns from the tarball's top: with a leading '*', one that
		# another covers matches nothing, and tar fails.
		top_dir=linux-source-$series
		tar -xJf "$tarball" -C "$out/src" --strip-components=1 \
			--wildcards "$top_dir/tools/*" "$top_dir/include/uapi/*" \
			"$top_dir/arch/x86/include/uapi/*" "$top_dir/scripts/*"
		make -s -C "$out/src/tools/bpf/resolve_btfids" O="$out" >&2
	fi
	rbtf=$out/resolve_btfids
fi

make -C "$build" M="$top" RESOLVE_BTFIDS="$rbtf" modules
readelf -S "$top/kmod/esa.ko" | grep -q ' \.BTF ' ||
	die "kmod/esa.ko has no BTF section"
