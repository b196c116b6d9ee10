# scripts/deps.sh: sourced by demo.sh and test.sh.
# Installs the Debian 12 packages the build needs, running apt-get update
# first only when something is missing.
LC_PACKAGES="gcc g++ make pkgconf meson ninja-build python3 \
libzydis-dev libxxhash-dev libunicorn-dev check iproute2 doxygen scdoc \
seabios ipxe-qemu dnsmasq-base"

lc_ensure_deps() {
    missing=""
    for p in $LC_PACKAGES "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "libcluster: missing Debian packages:$missing" >&2
        echo "libcluster: run as root, or: apt-get install$missing" >&2
        return 1
    fi
    echo "libcluster: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null || { echo "libcluster: apt-get update failed" >&2; return 1; }
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing >/dev/null ||
        { echo "libcluster: apt-get install$missing failed" >&2; return 1; }
}

# lc_setup DIR [meson options...]: configure DIR once, reconfigure after.
lc_setup() {
    dir=$1; shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "$@" >"$dir.setup.log" 2>&1
    else
        mkdir -p "$(dirname "$dir")"
        meson setup "$dir" "$@" >"$dir.setup.log" 2>&1
    fi || { cat "$dir.setup.log" >&2; echo "libcluster: meson setup $dir failed" >&2; return 1; }
}
