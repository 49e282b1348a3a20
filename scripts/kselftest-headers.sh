#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Put the kernel's kselftest_harness.h and kselftest.h into DIR (default
# build/kselftest), taken from Debian's linux-source-6.1 package: they ship
# nowhere else in Debian.  The package is downloaded (not installed) once and
# cached in build/debs.
set -eu
dir=${1:-build/kselftest}
[ -s "$dir/kselftest_harness.h" ] && [ -s "$dir/kselftest.h" ] && exit 0
cache=${ESA_DEB_CACHE:-build/debs}
mkdir -p "$dir" "$cache"
deb=$(ls "$cache"/linux-source-6.1_*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
	(cd "$cache" && apt-get download -qq linux-source-6.1 2>/dev/null) ||
		{ echo "cannot download linux-source-6.1 (apt-get update?)" >&2; exit 1; }
	deb=$(ls "$cache"/linux-source-6.1_*.deb | head -1)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz |
	tar -xJ -C "$tmp" --wildcards \
		'linux-source-6.1/tools/testing/selftests/kselftest_harness.h' \
		'linux-source-6.1/tools/testing/selftests/kselftest.h'
cp "$tmp"/linux-source-6.1/tools/testing/selftests/kselftest*.h "$dir/"
