#!/bin/sh
# Fetches Debian's cloud kernel and busybox-static once, caches them under
# $BUILD/linux (never committed), and builds a small initramfs whose /init
# prints a marker, mounts /proc and powers off. Prints the cache folder.
# Exit 0: ready; 3: cannot download here (the caller skips with the reason).
set -eu
BUILD=${1:-build}
OUT="$BUILD/linux"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
if [ ! -s "$OUT/vmlinuz" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cd "$tmp"
	if ! apt-get download linux-image-cloud-amd64 >apt.log 2>&1; then
		echo "apt-get download linux-image-cloud-amd64 failed: $(tail -1 apt.log)" >&2
		exit 3
	fi
	dep=$(dpkg-deb -f linux-image-cloud-amd64_*.deb Depends | tr ',' '\n' | grep -o 'linux-image-[0-9][^ ]*' | head -1)
	if [ -z "$dep" ] || ! apt-get download "$dep" >apt.log 2>&1; then
		echo "apt-get download $dep failed: $(tail -1 apt.log)" >&2
		exit 3
	fi
	dpkg-deb -x "$dep"_*.deb x
	cp x/boot/vmlinuz-* "$OUT/vmlinuz.tmp" && mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
	echo "$dep" >"$OUT/kernel-package"
	cd - >/dev/null
fi
if [ ! -s "$OUT/busybox" ]; then
	tmp2=$(mktemp -d)
	( cd "$tmp2" && apt-get download busybox-static >apt.log 2>&1 && dpkg-deb -x busybox-static_*.deb x ) || {
		echo "apt-get download busybox-static failed" >&2; rm -rf "$tmp2"; exit 3; }
	cp "$tmp2/x/bin/busybox" "$OUT/busybox"
	rm -rf "$tmp2"
fi
if [ ! -s "$OUT/initrd.img" ] || [ "$HERE/mkinitramfs.py" -nt "$OUT/initrd.img" ]; then
	python3 "$HERE/mkinitramfs.py" "$OUT/busybox" "$OUT/initrd.img"
fi
echo "$OUT"
