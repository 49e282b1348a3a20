#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel.sh - a Debian 12 kernel to build esa.ko against and to boot in qemu.
#
# usage: selftests/vm/kernel.sh SERIES       SERIES: 6.1 or 6.12
#        selftests/vm/kernel.sh FLAVOUR      debug kernel, built: debug, kcsan
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
# A debug kernel builds for half an hour or more: it must not hold up the
# other series.
case ${1:-} in
debug|kcsan) exec 9>"$cache/.lock-$1" ;;
*) exec 9>"$cache/.lock" ;;
esac
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

# vmlinux (an ELF that keeps .BTF) from an x86 bzImage, as DKMS builds do.
extract_vmlinux() {
	"$top/kmod/extract-vmlinux.sh" "$1" "$2" || die "no vmlinux from $1"
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

# All of linux-source-6.12, for the debug kernels.
source612() {
	local d=$cache/linux-src-6.12 srcdeb
	srcdeb=$(deb linux-source-6.12)
	if [ ! -e "$d/.done" ] || [ "$(cat "$d/.done")" != "$srcdeb" ]; then
		log "extract linux-source-6.12 (all of it)"
		rm -rf "$d" && mkdir -p "$d"
		dpkg-deb --fsys-tarfile "$srcdeb" |
			tar -xO ./usr/src/linux-source-6.12.tar.xz |
			tar -xJ -C "$d" --strip-components=1
		echo "$srcdeb" > "$d/.done"
	fi
	echo "$d"
}

# Configure the debug kernel's build directory $2 from source $1 with
# fragment $3; $4 is the stamp of that config, $5 the flavour's name.
configure_debug() {
	local src=$1 o=$2 frag=$3 stamp=$4 flavour=$5 opt want
	rm -rf "$o" && mkdir -p "$o"
	make -s -C "$src" O="$o" x86_64_defconfig >&2
	"$src/scripts/kconfig/merge_config.sh" -m -O "$o" "$o/.config" \
		"$top/selftests/vm/debug.config" "$frag" >&2
	make -s -C "$src" O="$o" olddefconfig >&2
	# A fragment line the kernel's Kconfig dropped is a wrong config.
	while IFS= read -r opt; do
		case $opt in
		CONFIG_*=n) want="# ${opt%=n} is not set" ;;
		CONFIG_*) want=$opt ;;
		*) continue ;;
		esac
		grep -qx "$want" "$o/.config" || die "$flavour kernel: $opt did not stick"
	done < <(cat "$top/selftests/vm/debug.config" "$frag")
	echo "$stamp" > "$o/.config-stamp"
}

# A debug kernel of flavour $1 (debug: KASAN; kcsan: KCSAN), both with
# lockdep, atomic-sleep checks and debug objects (debug.config), built
# from linux-source-6.12 with x86_64_defconfig as the base.  Cached: it is
# built again only when the source or the config fragments change.
debug_kernel() {
	local flavour=$1 src o frag stamp kver
	src=$(source612)
	o=$cache/debug-6.12-$flavour
	case $flavour in
	debug) frag=$top/selftests/vm/kasan.config ;;
	kcsan) frag=$top/selftests/vm/kcsan.config ;;
	esac
	stamp="$(cat "$src/.done") $(cat "$top/selftests/vm/debug.config" "$frag" | md5sum | cut -d' ' -f1)"
	if [ ! -e "$o/.done" ] || [ "$(cat "$o/.done")" != "$stamp" ]; then
		log "build the $flavour kernel from $src in $o (30 to 45 minutes on 2 cores)"
		# A build stopped half way resumes where it was: configure
		# afresh only when the config it was started with differs.
		[ "$(cat "$o/.config-stamp" 2>/dev/null)" = "$stamp" ] ||
			configure_debug "$src" "$o" "$frag" "$stamp" "$flavour"
		nice make -s -j2 -C "$src" O="$o" bzImage modules >&2 ||
			die "$flavour kernel: build failed"
		rm -rf "$o/modroot"
		make -s -C "$src" O="$o" INSTALL_MOD_PATH="$o/modroot" modules_install >&2 ||
			die "$flavour kernel: modules_install failed"
		echo "$stamp" > "$o/.done"
	fi
	kver=$(make -s -C "$src" O="$o" kernelrelease)
	cat <<EOF
KVER=$kver
KDIR=$o
RESOLVE_BTFIDS=
VMLINUZ=$o/arch/x86/boot/bzImage
MODROOT=$o/modroot
EOF
}

case ${1:-} in
6.1)	meta=linux-headers-amd64 ; abi='6.1.0-*-amd64' ;;
6.12)	meta=linux-headers-6.12-amd64 ; abi='6.12.*-amd64' ;;
debug|kcsan) debug_kernel "$1"; exit 0 ;;
source)	source61; exit 0 ;;
ynl)	ynl612; exit 0 ;;
*)	die "usage: kernel.sh { 6.1 | 6.12 | debug | kcsan | source | ynl }" ;;
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
