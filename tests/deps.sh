#!/bin/sh
# Install the Debian packages named on the command line that are missing.
# As root this runs apt-get; otherwise it prints the one command to run.
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "vmm: missing packages:$missing; run: sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "vmm: installing$missing" >&2
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$missing; } >/dev/null 2>&1 || {
	echo "vmm: could not install$missing; run: apt-get update && apt-get install -y$missing" >&2
	exit 1
}
