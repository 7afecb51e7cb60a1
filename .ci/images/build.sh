#!/usr/bin/env bash
# Build a minimal container image from local binaries, with no registry: a rootfs holding each
# binary (in /usr/local/bin) and the shared libraries ldd lists for it, imported as one layer.
#
#   .ci/images/build.sh TAG BINARY [BINARY...]
#
# Static binaries need no libraries. PATH is set so the image's command can name a binary
# without its path (`redis-server --port 6379`), as with the official images.
set -euo pipefail
if [ "$#" -lt 2 ]; then
  echo "usage: $0 TAG BINARY [BINARY...]" >&2
  exit 2
fi
tag="$1"
shift
rootfs="$(mktemp -d)"
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs/usr/local/bin" "$rootfs/tmp" "$rootfs/data" "$rootfs/etc"
chmod 1777 "$rootfs/tmp"
echo "root:x:0:0:root:/root:/bin/false" >"$rootfs/etc/passwd"
echo "root:x:0:" >"$rootfs/etc/group"
for binary in "$@"; do
  [ -x "$binary" ] || { echo "not an executable: $binary" >&2; exit 1; }
  cp -L "$binary" "$rootfs/usr/local/bin/"
  # Every shared library (and the loader) the binary needs, at the same path inside.
  ldd "$binary" 2>/dev/null | grep -oE '/[^ ]+' | while read -r lib; do
    [ -e "$lib" ] || continue
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done || true
done
tar -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'WORKDIR /data' \
  - "$tag" >/dev/null
echo "built $tag from $*"
