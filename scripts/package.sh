#!/bin/sh
# Build the Debian packages and check them as a user would get them:
#
#   scripts/package.sh [OUTDIR]      # default build/package; about 5 minutes
#
# 1. installs the build dependencies (debian/control) and the tools
#    (dpkg-dev, debhelper, lintian, fakeroot, man-db) when missing;
# 2. copies the source tree (without build/) to OUTDIR/src and runs
#    `dpkg-buildpackage -us -uc -b` there (the .deb files land in OUTDIR),
#    with DEB_BUILD_OPTIONS=nocheck unless LC_PACKAGE_CHECK=1 (the unit and
#    fuzz suites then run inside the build) and with dpkg-gensymbols
#    failing on any symbol added or missing against debian/libcluster0.symbols;
# 3. runs lintian on the .changes and on the source package (.dsc, built
#    with an orig tarball of the tree) and fails on any error (E:);
# 4. checks that apt could install the four packages on this system
#    (apt-get --simulate), extracts them into a scratch root OUTDIR/root,
#    checks the files each must ship, renders lcvmm(1) with man, builds
#    examples/embed with the compiler flags of the installed libcluster.pc,
#    links it against the installed shared library and, with /dev/kvm,
#    runs it and the installed lcvmm on an installed guest image.
# Not part of scripts/test.sh (slow); the README's "Debian package"
# section says how to install the result.
set -eu
cd "$(dirname "$0")/.."
src=$(pwd)
out=${1:-build/package}
mkdir -p "$out"
out=$(cd "$out" && pwd)

say() { printf 'package.sh: %s\n' "$*"; }
fail() { printf 'package.sh: FAIL: %s\n' "$*" >&2; exit 1; }

# ---- 1. tools and build dependencies ---------------------------------------
. scripts/deps.sh
lc_ensure_deps dpkg-dev debhelper lintian fakeroot man-db || exit 1
if ! dpkg-checkbuilddeps debian/control 2>"$out/builddeps.txt"; then
    need=$(sed -n 's/.*Unmet build dependencies: //p' "$out/builddeps.txt" |
           sed 's/([^)]*)//g; s/<[^>]*>//g; s/|[^ ]*//g')
    say "installing build dependencies: $need"
    # shellcheck disable=SC2086
    lc_ensure_deps $need || exit 1
fi

# ---- 2. build ---------------------------------------------------------------
rm -rf "$out/src" "$out/root" "$out"/*.deb "$out"/*.ddeb "$out"/*.changes \
       "$out"/*.buildinfo
mkdir -p "$out/src"
if [ -d .git ] || [ -f .git ]; then
    # the working tree as it is (committed or not), without ignored files
    git ls-files -z --cached --others --exclude-standard |
        tar --null -T - -cf - | tar -xf - -C "$out/src"
else
    tar --exclude=./build -cf - . | tar -xf - -C "$out/src"
fi
# The source package too (3.0 (quilt): an orig tarball of the tree without
# debian/), for lintian's source checks.
ver=$(dpkg-parsechangelog -l debian/changelog -S Version)
upver=${ver%-*}
rm -f "$out"/libcluster_*.orig.tar.xz "$out"/libcluster_*.dsc "$out"/libcluster_*.debian.tar.xz
tar -C "$out" --transform "s,^src,libcluster-$upver," --exclude=src/debian \
    -cJf "$out/libcluster_$upver.orig.tar.xz" src
(cd "$out/src" && dpkg-source -b . >"$out/source.log" 2>&1) ||
    { cat "$out/source.log"; fail "dpkg-source -b failed"; }
opts=${DEB_BUILD_OPTIONS:-}
[ "${LC_PACKAGE_CHECK:-0}" = 1 ] || opts="${opts:+$opts }nocheck"
say "dpkg-buildpackage -us -uc -b in $out/src (DEB_BUILD_OPTIONS=$opts)"
t0=$(date +%s)
if ! (cd "$out/src" && DEB_BUILD_OPTIONS="$opts" DPKG_GENSYMBOLS_CHECK_LEVEL=2 \
        dpkg-buildpackage -us -uc -b >"$out/build.log" 2>&1); then
    tail -40 "$out/build.log"
    fail "dpkg-buildpackage failed (log: $out/build.log)"
fi
say "built in $(( $(date +%s) - t0 )) s: $(cd "$out" && ls ./*.deb | tr '\n' ' ')"
changes=$(ls "$out"/libcluster_*.changes)

# ---- 3. lintian ---------------------------------------------------------------
lintian --info --display-info "$changes" "$out/libcluster_$ver.dsc" \
    >"$out/lintian.txt" 2>&1 || true
errors=$(grep -c '^E:' "$out/lintian.txt" || true)
warnings=$(grep -c '^W:' "$out/lintian.txt" || true)
say "lintian: $errors error(s), $warnings warning(s) (all tags: $out/lintian.txt)"
grep -E '^(E|W):' "$out/lintian.txt" || true
[ "$errors" = 0 ] || fail "lintian reported errors"

# ---- 4. install into a scratch root and use it ----------------------------------
debs=$(ls "$out"/libcluster0_*.deb "$out"/libcluster-dev_*.deb "$out"/lcvmm_*.deb \
          "$out"/libcluster-doc_*.deb)
apt-get install --simulate -q $debs >"$out/apt-simulate.txt" 2>&1 ||
    { cat "$out/apt-simulate.txt"; fail "apt-get could not install the packages here"; }
say "apt-get --simulate install: dependencies resolve"
root=$out/root
for d in $debs; do dpkg-deb -x "$d" "$root"; done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for f in usr/lib/$ma/libcluster.so.0 usr/lib/$ma/libcluster.so usr/lib/$ma/libcluster.a \
         usr/lib/$ma/pkgconfig/libcluster.pc usr/include/cluster/cluster.h \
         usr/include/cluster/kvm.h usr/bin/lcvmm usr/share/man/man1/lcvmm.1.gz \
         usr/lib/lcvmm/guest-pcnet.bin usr/lib/lcvmm/guest-e1000.bin \
         usr/lib/lcvmm/guest-bios16.bin usr/lib/lcvmm/guest-pae.bin \
         usr/share/doc/libcluster0/copyright \
         usr/share/doc/libcluster-doc/html/index.html; do
    [ -e "$root/$f" ] || fail "/$f is not in the packages"
done
# the reference documents the public API, not only its overview page
grep -rlq lc_vcpu_handle_exit "$root/usr/share/doc/libcluster-doc/html" ||
    fail "libcluster-doc's HTML does not document lc_vcpu_handle_exit"
soname=$(objdump -p "$root/usr/lib/$ma/libcluster.so.0" | awk '/SONAME/ {print $2}')
[ "$soname" = libcluster.so.0 ] || fail "soname is '$soname'"
say "files in place; soname $soname"

man -l "$root/usr/share/man/man1/lcvmm.1.gz" 2>/dev/null | col -b >"$out/lcvmm.1.txt"
grep -q -- '--no-cluster' "$out/lcvmm.1.txt" || fail "man -l lcvmm.1.gz does not render"
say "man lcvmm renders ($(wc -l <"$out/lcvmm.1.txt") lines)"

export PKG_CONFIG_PATH="$root/usr/lib/$ma/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$root"
cflags=$(pkg-config --cflags libcluster)
libs=$(pkg-config --libs libcluster)
[ "$(pkg-config --modversion libcluster)" = "$(dpkg-parsechangelog -l debian/changelog -S Version | sed 's/-[^-]*$//')" ] ||
    fail "libcluster.pc version does not match debian/changelog"
# shellcheck disable=SC2086
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $cflags -o "$out/embed" "$src/examples/embed/embed.c" \
    $libs -Wl,-rpath-link,"$root/usr/lib/$ma" ||
    fail "examples/embed does not build against the installed package"
# the embed binary must take libcluster from the package, not from a build tree
LD_LIBRARY_PATH="$root/usr/lib/$ma" ldd "$out/embed" | grep -q "$root/usr/lib/$ma/libcluster.so.0" ||
    fail "embed is not linked against the installed libcluster.so.0"
say "examples/embed built with pkg-config --cflags --libs libcluster ($cflags $libs)"
# shellcheck disable=SC2086
cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror $cflags -o "$out/embed-static" \
    "$src/examples/embed/embed.c" "$root/usr/lib/$ma/libcluster.a" \
    $(pkg-config --libs --static libcluster | sed 's/-lcluster//') ||
    fail "examples/embed does not link against the installed static library"
say "examples/embed links statically against libcluster.a"

if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
    LD_LIBRARY_PATH="$root/usr/lib/$ma" "$out/embed" >"$out/embed.txt" 2>&1 ||
        { cat "$out/embed.txt"; fail "the installed embed example failed"; }
    say "embed ran on KVM: $(grep -m1 -i exits "$out/embed.txt" || head -n1 "$out/embed.txt")"
    LD_LIBRARY_PATH="$root/usr/lib/$ma" "$root/usr/bin/lcvmm" -q --stats none \
        -k "$root/usr/lib/lcvmm/guest-pcnet.bin" -p "n=20 cpl=3 irq=0" --timeout 60 \
        >"$out/lcvmm.txt" 2>&1 || { cat "$out/lcvmm.txt"; fail "the installed lcvmm failed on guest-pcnet.bin"; }
    say "installed lcvmm ran the installed guest-pcnet.bin: $(grep -m1 'guest=' "$out/lcvmm.txt")"
else
    say "no usable /dev/kvm: embed and lcvmm built, not run"
fi
say "OK"
