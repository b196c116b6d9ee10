#!/bin/sh
# SPDX-License-Identifier: MIT
# lc-diff --engine --code FILE on code nobody here wrote, each FILE in the
# modes given: skipped (exit 77, with the reason) when FILE is not there.
#   code_diff.sh LC_DIFF COUNT SEED FILE:MODE[,MODE...] ...
set -u
lcdiff=$1 count=$2 seed=$3
shift 3
ran=0
for spec in "$@"; do
    file=${spec%%:*}
    modes=${spec#*:}
    if [ ! -r "$file" ]; then
        echo "skip: $file is not there (Debian packages seabios, ipxe-qemu)"
        continue
    fi
    for mode in $(echo "$modes" | tr ',' ' '); do
        "$lcdiff" --engine --code "$file" --mode "$mode" --count "$count" \
            --seed "$seed" || exit 1
        ran=$((ran + 1))
    done
done
[ "$ran" -gt 0 ] || exit 77
