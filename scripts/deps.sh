#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Install the Debian 12 packages ESA needs, if any are missing.
#   scripts/deps.sh [ GROUP... ]   groups: build (default), test, vm, plot, torch, all
# build: compile everything (clang for BPF, libbpf, bpftool, libxdp for
#        libesa's and esa-ps's AF_XDP transport, ...) and install it (pip and
#        setuptools put the Python package in place, offline)
# test:  run the host tests (iproute2 namespaces, ping, python3 for JSON checks,
#        ethtool for GRO on hosts whose XDP hook AF_XDP takes; Prometheus's
#        parser and systemd-analyze for the install and metrics suites)
# vm:    boot Debian's kernels in qemu for esa.ko (the VM suite also does this)
# plot:  gnuplot for the benchmark's and simulator's plots
# torch: Debian's PyTorch, for the DDP example and test
set -eu
groups=${*:-build}
pkgs=""
for g in $groups; do
	case $g in
	build) pkgs="$pkgs make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev
		     pkg-config linux-libc-dev libxdp-dev python3-pip python3-setuptools" ;;
	test)  pkgs="$pkgs iproute2 iputils-ping python3 util-linux procps kmod
		     bash-completion man-db ethtool python3-prometheus-client systemd" ;;
	vm)    pkgs="$pkgs qemu-system-x86 busybox-static dwarves cpio kmod xz-utils zstd
		     bc flex bison libssl-dev" ;;
	plot)  pkgs="$pkgs gnuplot-nox" ;;
	torch) pkgs="$pkgs python3-torch python3-numpy" ;;
	all)   exec "$0" build test vm plot torch ;;
	*) echo "deps.sh: unknown group $g (build test vm plot torch all)" >&2; exit 2 ;;
	esac
done
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing:$missing (run as root to install)" >&2
	exit 1
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
