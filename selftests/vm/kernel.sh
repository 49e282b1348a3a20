#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel.sh - a Debian 12 kernel to build esa.ko against and to boot in qemu.
#
# usage: selftests/vm/kernel.sh SERIES       SERIES: 6.1 or 6.12
#        selftests/vm/kernel.sh source       parts of linux-source-6.1
#        selftests/vm/kernel.sh ynl          netlink specs and ynl, 6.12's
#
# Fetches (apt-get download: nothing is installed) the image, headers and
# kbuild of the version the series' metapackage points at now, extracts them
# into the cache (ESA_VM_CACHE, default vm/ at the top of the tree) and
# prints shell assignments: KVER KDIR RESOLVE_BTFIDS VMLINUZ MODROOT.
# Debian's 6.1 headers lack vmlinux and resolve_btfids, without which a
# module gets no BTF (and no kfuncs): this supplies vmlinux, extracted from
# the image, and resolve_btfids, built from linux-source-6.1.  Reruns reuse
# the cache; a new ABI of a series replaces the old one's files.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${ESA_VM_CACHE:-$top/vm}
mkdir -p "$cache/debs"
exec 9>"$cache/.lock"
flock 9

log() { echo "kernel.sh: $*" >&2; }
die() { log "$*"; exit 1; }

lists_ready=0
apt_ready() {
	[ $lists_ready = 1 ] && return
	if ! apt-cache show linux-headers-amd64 >/dev/null 2>&1; then
		log "apt-get update"
		apt-get update -qq >&2 || die "apt-get update failed"
	fi
	lists_ready=1
}

# The .deb of package $1 (candidate version) in the cache; downloads it.
deb() {
	local ver f
	apt_ready
	ver=$(apt-cache policy "$1" | sed -n 's/^ *Candidate: //p')
	[ -n "$ver" ] && [ "$ver" != "(none)" ] || die "no package $1"
	f=$(ls "$cache/debs/$1_${ver//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
	if [ -z "$f" ]; then
		log "download $1 $ver"
		(cd "$cache/debs" && apt-get download -qq "$1=$ver" 2>/dev/null) ||
			die "apt-get download $1 failed"
		f=$(ls "$cache/debs/$1_${ver//:/%3a}_"*.deb | head -1)
	fi
	echo "$f"
}

depends() {
	apt-cache depends "$1" | sed -n 's/^ *Depends: //p'
}

# vmlinux (an ELF that keeps .BTF) from an x86 bzImage, through the boot
# protocol's payload_offset and payload_length fields.
extract_vmlinux() {
	local img=$1 out=$2 setup off len start magic dec
	setup=$(od -An -tu1 -j 0x1f1 -N1 "$img" | tr -d ' ')
	[ "$setup" = 0 ] && setup=4
	off=$(od -An -tu4 -j 0x248 -N4 "$img" | tr -d ' ')
	len=$(od -An -tu4 -j 0x24c -N4 "$img" | tr -d ' ')
	start=$(( (setup + 1) * 512 + off ))
	magic=$(od -An -tx1 -j "$start" -N4 "$img" | tr -d ' ')
	case $magic in
	fd377a58) dec="xz -dcq" ;;
	28b52ffd) dec="zstd -dcq" ;;
	1f8b*) dec="gzip -dc" ;;
	*) die "$img: unknown payload compression ($magic)" ;;
	esac
	# The decompressor complains about the size trailer; check the result.
	tail -c +$((start + 1)) "$img" | head -c "$len" | $dec > "$out.tmp" 2>/dev/null || true
	readelf -S "$out.tmp" 2>/dev/null | grep ' \.BTF ' >/dev/null ||
		die "no vmlinux with .BTF in $img"
	mv "$out.tmp" "$out"
}

# linux-source-6.1, only what resolve_btfids (and checkpatch.pl) needs.
source61() {
	local d=$cache/src-6.1 srcdeb
	srcdeb=$(deb linux-source-6.1)
	if [ ! -e "$d/.done" ] || [ "$(cat "$d/.done")" != "$srcdeb" ]; then
		log "extract linux-source-6.1"
		rm -rf "$d" && mkdir -p "$d"
		dpkg-deb --fsys-tarfile "$srcdeb" |
			tar -xO ./usr/src/linux-source-6.1.tar.xz |
			tar -xJ -C "$d" --strip-components=1 --wildcards \
				'linux-source-6.1/tools/bpf/resolve_btfids/*' \
				'linux-source-6.1/tools/lib/*' \
				'linux-source-6.1/tools/include/*' \
				'linux-source-6.1/tools/scripts/*' \
				'linux-source-6.1/tools/build/*' \
				'linux-source-6.1/tools/arch/x86/*' \
				'linux-source-6.1/include/uapi/*' \
				'linux-source-6.1/arch/x86/include/uapi/*' \
				'linux-source-6.1/scripts/*'
		echo "$srcdeb" > "$d/.done"
	fi
	echo "$d"
}

# linux-source-6.12's netlink spec schemas and ynl library.
ynl612() {
	local d=$cache/src-6.12 srcdeb
	srcdeb=$(deb linux-source-6.12)
	if [ ! -e "$d/.done" ] || [ "$(cat "$d/.done")" != "$srcdeb" ]; then
		log "extract linux-source-6.12 (netlink specs)"
		rm -rf "$d" && mkdir -p "$d"
		dpkg-deb --fsys-tarfile "$srcdeb" |
			tar -xO ./usr/src/linux-source-6.12.tar.xz |
			tar -xJ -C "$d" --strip-components=1 --wildcards \
				'linux-source-6.12/Documentation/netlink/*' \
				'linux-source-6.12/tools/net/ynl/*'
		echo "$srcdeb" > "$d/.done"
	fi
	echo "$d"
}

resolve_btfids61() {
	local src out=$cache/tools-6.1
	src=$(source61)
	if [ ! -x "$out/resolve_btfids" ] || [ "$src/.done" -nt "$out/resolve_btfids" ]; then
		log "build resolve_btfids"
		rm -rf "$out" && mkdir -p "$out"
		make -s -j2 -C "$src/tools/bpf/resolve_btfids" O="$out" >&2 ||
			die "resolve_btfids build failed"
	fi
	echo "$out/resolve_btfids"
}

case ${1:-} in
6.1)	meta=linux-headers-amd64 ; abi='6.1.0-*-amd64' ;;
6.12)	meta=linux-headers-6.12-amd64 ; abi='6.12.*-amd64' ;;
source)	source61; exit 0 ;;
ynl)	ynl612; exit 0 ;;
*)	die "usage: kernel.sh { 6.1 | 6.12 | source | ynl }" ;;
esac

apt_ready
hdr=$(depends "$meta" | grep -m1 '^linux-headers-') || die "cannot resolve $meta"
kver=${hdr#linux-headers-}
mapfile -t extra < <(depends "$hdr" | grep -E '^linux-(headers-.*-common|kbuild-)')
[ ${#extra[@]} = 2 ] || die "cannot resolve the dependencies of $hdr"
pkgs=("linux-image-$kver-unsigned" "$hdr" "${extra[@]}")

# A new ABI of this series replaces the previous one.
for old in "$cache/"$abi; do
	[ -d "$old" ] && [ "$(basename "$old")" != "$kver" ] || continue
	log "remove $(basename "$old") (superseded by $kver)"
	rm -rf "$old"
	rm -f "$cache/debs/"*"$(basename "$old")"*
done

dir=$cache/$kver
root=$dir/root
kdir=$root/usr/src/linux-headers-$kver
if [ ! -e "$dir/.done" ]; then
	rm -rf "$dir" && mkdir -p "$dir"
	for p in "${pkgs[@]}"; do
		f=$(deb "$p")
		log "extract $p"
		dpkg-deb -x "$f" "$root"
	done
	# The headers include their common half by absolute path.
	sed -i "s|^include /usr/src/|include $root/usr/src/|" "$kdir/Makefile"
	depmod -b "$root" "$kver"
	touch "$dir/.done"
fi

rbtf=
if [ ! -e "$kdir/vmlinux" ]; then
	[ -s "$dir/vmlinux" ] || { log "extract vmlinux"; extract_vmlinux "$root/boot/vmlinuz-$kver" "$dir/vmlinux"; }
	ln -sfn "$dir/vmlinux" "$kdir/vmlinux"
fi
if [ ! -x "$kdir/tools/bpf/resolve_btfids/resolve_btfids" ]; then
	[ "$1" = 6.1 ] || die "$kver has no resolve_btfids"
	rbtf=$(resolve_btfids61)
fi

cat <<EOF
KVER=$kver
KDIR=$kdir
RESOLVE_BTFIDS=$rbtf
VMLINUZ=$root/boot/vmlinuz-$kver
MODROOT=$root
EOF
