#!/bin/sh
# tests/install/check_install.sh BUILD_DIR SOURCE_DIR
# Install into a scratch DESTDIR, then compile, link and run a small
# external program against the installed headers, library and pkg-config
# file, as an embedding VMM would.
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

DESTDIR="$tmp/root" meson install -C "$build" --no-rebuild --quiet >"$tmp/install.log" 2>&1 || {
    cat "$tmp/install.log"; echo "meson install failed"; exit 1; }

pc=$(find "$tmp/root" -name libcluster.pc | head -n1)
[ -n "$pc" ] || { echo "no libcluster.pc installed"; exit 1; }
for h in cluster.h cpu.h decode.h engine.h error.h exit.h ops.h stats.h; do
    find "$tmp/root" -path "*/include/cluster/$h" | grep -q . ||
        { echo "header $h not installed"; exit 1; }
done

export PKG_CONFIG_PATH="$(dirname "$pc")"
export PKG_CONFIG_SYSROOT_DIR="$tmp/root"
cflags=$(pkg-config --cflags libcluster)
libs=$(pkg-config --libs libcluster)
so=$(find "$tmp/root" -name 'libcluster.so' | head -n1)
[ -n "$so" ] || { echo "libcluster.so not installed"; exit 1; }
find "$tmp/root" -name 'libcluster.a' | grep -q . ||
    { echo "libcluster.a not installed"; exit 1; }

cc ${CFLAGS_EXTRA:-} $cflags -Wall -Wextra -Werror -o "$tmp/embed" \
    "$src/tests/install/embed_min.c" $libs
LD_LIBRARY_PATH="$(dirname "$so")" "$tmp/embed"
