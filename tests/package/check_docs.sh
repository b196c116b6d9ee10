#!/bin/sh
# tests/package/check_docs.sh DOXYGEN DOXYFILE
# Build the API reference and fail on any Doxygen warning: an undocumented
# public symbol in include/cluster/, a broken reference, a bad command.
# (The Doxyfile also says WARN_AS_ERROR = FAIL_ON_WARNINGS; this script
# prints the warnings and checks the output exists, so an older Doxygen
# that ignores that setting still fails here.)
set -eu
doxygen=$1
doxyfile=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT

status=0
"$doxygen" "$doxyfile" >/dev/null 2>"$log" || status=$?
if [ -s "$log" ]; then
    cat "$log"
    echo "api-docs: $(wc -l <"$log") warning line(s) from Doxygen"
    exit 1
fi
[ "$status" = 0 ] || { echo "api-docs: doxygen exited $status"; exit 1; }
out=$(sed -n 's/^OUTPUT_DIRECTORY *= *//p' "$doxyfile")
[ -f "$out/html/index.html" ] || { echo "api-docs: no $out/html/index.html"; exit 1; }
for f in engine.h cpu.h exit.h ops.h stats.h; do
    ls "$out/html/" | grep -q "$(echo "$f" | sed 's/\./_8/')" ||
        { echo "api-docs: no page for $f"; exit 1; }
done
echo "api-docs: $out/html/index.html, no warnings"
