#!/bin/bash -eu
# tests/fuzz/oss-fuzz/build.sh: build the five fuzz targets the way OSS-Fuzz
# and ClusterFuzzLite do (their build.sh convention), unchanged from the
# sources CI replays (tests/fuzz/fuzz_*.c):
#
#   $CC $CXX $CFLAGS $CXXFLAGS  compilers and the sanitizer/coverage flags
#   $LIB_FUZZING_ENGINE         the engine to link (-fsanitize=fuzzer, or
#                               an AFL++/honggfuzz driver library)
#   $OUT                        where the targets, their dictionaries
#                               (NAME.dict), options (NAME.options) and seed
#                               corpora (NAME_seed_corpus.zip) go
#   $SRC, $WORK                 sources of dependencies, scratch space
#
# On the services .clusterfuzzlite/Dockerfile clones Zydis (with Zycore)
# and xxHash into $SRC, which this script builds statically with the same
# flags, so they are instrumented too. Without them (a Debian machine)
# it links Debian's libxxhash.a and libZydis.so, copied into $OUT/lib
# with an $ORIGIN rpath so $OUT runs as one self-contained folder.
#
# By hand on Debian 12 (what the README shows):
#   CC=clang CXX=clang++ CFLAGS="-O1 -g -fsanitize=address,undefined,fuzzer-no-link" \
#   CXXFLAGS="$CFLAGS" LIB_FUZZING_ENGINE=-fsanitize=fuzzer \
#   OUT=build/oss-fuzz/out WORK=build/oss-fuzz/work tests/fuzz/oss-fuzz/build.sh
here=$(cd "$(dirname "$0")" && pwd)
src=${LC_SRC:-$(cd "$here/../../.." && pwd)}
: "${CC:?}" "${CFLAGS:?}" "${LIB_FUZZING_ENGINE:?}" "${OUT:?}"
CXX=${CXX:-clang++}
CXXFLAGS=${CXXFLAGS:-$CFLAGS}
SRC=${SRC:-/nonexistent}
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$OUT" "$WORK"
OUT=$(cd "$OUT" && pwd)
WORK=$(cd "$WORK" && pwd)
deps=$WORK/deps
mkdir -p "$deps"

# ---- dependencies built from source when the image provides them ------------
if [ -f "$SRC/zydis/CMakeLists.txt" ]; then
    cmake -S "$SRC/zydis" -B "$WORK/zydis-build" -G Ninja \
        -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="$CFLAGS" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$deps" \
        -DZYDIS_BUILD_SHARED_LIB=OFF -DZYDIS_BUILD_TOOLS=OFF \
        -DZYDIS_BUILD_EXAMPLES=OFF -DZYDIS_BUILD_DOXYGEN=OFF \
        -DZYDIS_BUILD_TESTS=OFF >"$WORK/zydis.log"
    cmake --build "$WORK/zydis-build" >>"$WORK/zydis.log"
    cmake --install "$WORK/zydis-build" >>"$WORK/zydis.log"
fi
if [ -f "$SRC/xxhash/xxhash.h" ]; then
    make -C "$SRC/xxhash" CC="$CC" CFLAGS="$CFLAGS" PREFIX="$deps" \
        libxxhash.a libxxhash.pc >"$WORK/xxhash.log"
    make -C "$SRC/xxhash" PREFIX="$deps" install_libxxhash.a \
        install_libxxhash.pc install_libxxhash.includes >>"$WORK/xxhash.log"
fi
export PKG_CONFIG_PATH="$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export CMAKE_PREFIX_PATH="$deps"

# ---- the library and the NIC models, static, with the engine's flags ----------
# The project's own -Dfuzz option is not used: the services' $CFLAGS already
# carry the coverage and sanitizer flags, and the engine is linked below.
build=$WORK/build
if [ ! -f "$build/build.ninja" ]; then
    # (meson takes CFLAGS and LDFLAGS from the environment at setup)
    CC="$CC" CFLAGS="$CFLAGS -I$deps/include" LDFLAGS="${LDFLAGS:-} -L$deps/lib" \
    meson setup "$build" "$src" -Dbuildtype=plain -Dtests=false \
        -Dexamples=true -Dunicorn=disabled -Ddocs=disabled -Dman=disabled \
        -Db_lundef=false >"$WORK/meson-setup.log" ||
        { cat "$WORK/meson-setup.log"; exit 1; }
fi
ninja -C "$build" libcluster/libcluster.a \
    examples/vmm/devices/libvmm_devices.a >"$WORK/ninja.log" ||
    { tail -30 "$WORK/ninja.log"; exit 1; }

# Zydis and xxHash: the instrumented static builds above, else the system's.
dep_libs=()
rpath=()
if [ -f "$deps/lib/libZydis.a" ]; then
    dep_libs+=("$deps/lib/libZydis.a")
    [ -f "$deps/lib/libZycore.a" ] && dep_libs+=("$deps/lib/libZycore.a")
else
    zydis_so=$("$CC" -print-file-name=libZydis.so)
    [ -f "$zydis_so" ] || zydis_so=$(ls /usr/lib/*/libZydis.so 2>/dev/null | head -n1)
    [ -f "$zydis_so" ] || { echo "build.sh: no Zydis (clone it into \$SRC/zydis)" >&2; exit 1; }
    mkdir -p "$OUT/lib"
    # the library under its soname, and what it needs beyond libc (Zycore,
    # when the distribution builds it as a library of its own)
    soname=$(objdump -p "$zydis_so" | awk '/SONAME/ {print $2}')
    cp -L "$zydis_so" "$OUT/lib/$soname"
    for lib in $(ldd "$zydis_so" | awk '/libZycore/ {print $3}'); do
        cp -L "$lib" "$OUT/lib/"
    done
    dep_libs+=("$OUT/lib/$soname")
    rpath=(-Wl,-rpath,'$ORIGIN/lib')
fi
if [ -f "$deps/lib/libxxhash.a" ]; then
    dep_libs+=("$deps/lib/libxxhash.a")
elif xx=$("$CC" -print-file-name=libxxhash.a) && [ -f "$xx" ]; then
    dep_libs+=("$xx")
elif [ -f /usr/lib/x86_64-linux-gnu/libxxhash.a ]; then
    dep_libs+=(/usr/lib/x86_64-linux-gnu/libxxhash.a)
else
    dep_libs+=(-lxxhash)
fi

# ---- the targets ----------------------------------------------------------------
inc=(-I"$src/include" -I"$src/tests/fuzz" -I"$deps/include")
[ -d "$src/tests/common" ] && inc+=(-I"$src/tests/common")
nic_inc=(-I"$src/examples/vmm/devices" -I"$src/examples/vmm"
         -I"$src/examples/include" -I"$src/examples/vmm/backends")
lib=$build/libcluster/libcluster.a
devlib=$build/examples/vmm/devices/libvmm_devices.a

target() {   # target NAME EXTRA-LIBS...
    name=$1; shift
    "$CC" $CFLAGS -std=c11 -D_GNU_SOURCE "${inc[@]}" "${nic_inc[@]}" \
        -c "$src/tests/fuzz/$name.c" -o "$WORK/$name.o"
    "$CXX" $CXXFLAGS "$WORK/$name.o" -o "$OUT/$name" $LIB_FUZZING_ENGINE \
        "$@" "${rpath[@]}" -lpthread
}
target fuzz_decode "$lib" "${dep_libs[@]}"
target fuzz_runtime "$lib" "${dep_libs[@]}"
target fuzz_engine "$lib" "${dep_libs[@]}"
target fuzz_nic "$devlib"
target fuzz_platform "$devlib"

# ---- dictionaries, options and seed corpora -----------------------------------------
# (tests/fuzz/dict/TARGET.dict, tests/fuzz/corpus/TARGET/: the ones
# scripts/fuzz.sh uses and keeps minimized; the flags of
# tests/fuzz/libfuzzer.options, which it passes too)
targets="fuzz_decode fuzz_runtime fuzz_engine fuzz_nic fuzz_platform"
for t in $targets; do
    cp -L "$src/tests/fuzz/dict/$t.dict" "$OUT/$t.dict"
    { printf '[libfuzzer]\ndict = %s.dict\n' "$t"
      grep -E '^[a-z_]+ = [^ ]+$' "$src/tests/fuzz/libfuzzer.options" ||
          [ $? = 1 ]            # no flag is no error; no file is
    } >"$OUT/$t.options"
done
# Seeds: the committed regression inputs of each target (tests/fuzz/regress/:
# a file or folder named after the target, "engine-..." for fuzz_engine)
# and its committed corpus, tests/fuzz/corpus/TARGET/.
for t in $targets; do
    short=${t#fuzz_}
    seeds=$WORK/seeds/$t
    rm -rf "$seeds"; mkdir -p "$seeds"
    if [ -d "$src/tests/fuzz/regress" ]; then
        find "$src/tests/fuzz/regress" -type f \
            \( -path "*/regress/$short/*" -o -path "*/regress/$t/*" \
               -o -name "$short-*" -o -name "$t-*" \) -exec cp {} "$seeds/" \;
    fi
    [ -d "$src/tests/fuzz/corpus/$t" ] && cp "$src/tests/fuzz/corpus/$t"/* "$seeds/" 2>/dev/null || true
    rm -f "$OUT/${t}_seed_corpus.zip"
    if [ -n "$(ls -A "$seeds")" ]; then
        (cd "$seeds" && zip -q -j "$OUT/${t}_seed_corpus.zip" ./*)
    fi
    echo "build.sh: $OUT/$t ($(ls "$seeds" | wc -l) seed inputs)"
done
