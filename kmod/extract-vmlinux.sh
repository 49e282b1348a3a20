#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# extract-vmlinux.sh BZIMAGE OUT: the vmlinux (an ELF that keeps .BTF)
# inside an x86 kernel image, through the boot protocol's payload_offset
# and payload_length fields.  kmod/build.sh uses it to give a kernel that
# is not running (a DKMS build after a kernel upgrade) the vmlinux that
# module BTF needs; selftests/vm/kernel.sh for the test VM's kernels.
set -eu

img=${1:?usage: extract-vmlinux.sh BZIMAGE OUT}
out=${2:?usage: extract-vmlinux.sh BZIMAGE OUT}
die() { echo "extract-vmlinux: $*" >&2; exit 1; }

[ -r "$img" ] || die "cannot read $img"
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
	{ rm -f "$out.tmp"; die "no vmlinux with .BTF in $img"; }
mv "$out.tmp" "$out"
