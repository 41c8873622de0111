#!/bin/sh
# Fetches Debian's cloud kernel (with its virtio-blk modules) and
# busybox-static once, caches them under $BUILD/linux (never committed), and
# builds a small initramfs (mkinitramfs.py says what its /init does). Prints
# the cache folder.
# Exit 0: ready; 3: cannot download here (the caller skips with the reason).
set -eu
BUILD=${1:-build}
OUT="$BUILD/linux"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
# virtio-blk and its transport are modules in Debian's cloud kernel
# in load order (each one's .modinfo "depends" comes before it)
MODS="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk"
if [ ! -s "$OUT/vmlinuz" ] || [ ! -s "$OUT/modules/virtio_blk.ko" ]; then
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
	mkdir -p "$OUT/modules"
	for m in $MODS; do
		f=$(find x/lib/modules -name "$m.ko*" | head -1)
		[ -n "$f" ] || { echo "module $m not in $dep" >&2; exit 3; }
		case "$f" in
		*.ko.xz) xz -dc "$f" >"$OUT/modules/$m.ko" ;;
		*.ko.zst) zstd -qdc "$f" >"$OUT/modules/$m.ko" ;;
		*) cp "$f" "$OUT/modules/$m.ko" ;;
		esac
	done
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
if [ ! -s "$OUT/initrd.img" ] || [ "$HERE/mkinitramfs.py" -nt "$OUT/initrd.img" ] ||
   [ "$OUT/modules/virtio_blk.ko" -nt "$OUT/initrd.img" ]; then
	python3 "$HERE/mkinitramfs.py" "$OUT/busybox" "$OUT/initrd.img" "$OUT/modules" $MODS
fi
echo "$OUT"
