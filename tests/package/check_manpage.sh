#!/bin/sh
# tests/package/check_manpage.sh LCVMM MANPAGE
# The manual page must match the binary: every option that `lcvmm --help`
# prints is in the page (roff built from docs/man/lcvmm.1.scd), and every
# option the page documents is in `--help`.
set -eu
lcvmm=$1
man=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$lcvmm" --help >"$tmp/help" || { echo "manpage: $lcvmm --help failed"; exit 1; }
# roff escapes hyphens and marks fonts: read the page as plain words.
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(.[a-z]//g' "$man" >"$tmp/page"
grep -q '^\.TH "*lcvmm"* "*1"*' "$tmp/page" || { echo "manpage: no .TH lcvmm 1 header"; exit 1; }

# Options: --long-name, and -x when it starts an option line of --help.
opts() {
    grep -oE '(^|[^a-zA-Z0-9-])--[a-z][a-z0-9-]+' "$1" | sed 's/^[^-]*//' | sort -u
}
opts "$tmp/help" >"$tmp/help.opts"
sed -n 's/^  \(-[a-zA-Z]\),.*/\1/p' "$tmp/help" | sort -u >"$tmp/help.short"
[ -s "$tmp/help.opts" ] || { echo "manpage: no options found in --help"; exit 1; }

# The OPTIONS section's entry lines (those that start with an option).
sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$tmp/page" | grep -E '^-' >"$tmp/entries" || true
opts "$tmp/entries" >"$tmp/page.opts"
grep -oE '^-[a-zA-Z]' "$tmp/entries" | sort -u >"$tmp/page.short"

fail=0
for o in $(cat "$tmp/help.opts" "$tmp/help.short"); do
    grep -qx -- "$o" "$tmp/page.opts" "$tmp/page.short" ||
        { echo "manpage: $o is in --help but has no entry in OPTIONS"; fail=1; }
done
for o in $(cat "$tmp/page.opts" "$tmp/page.short"); do
    grep -qx -- "$o" "$tmp/help.opts" "$tmp/help.short" ||
        { echo "manpage: $o has an entry in OPTIONS but is not in --help"; fail=1; }
done
[ "$fail" = 0 ] || exit 1
echo "manpage: the $(wc -l <"$tmp/help.opts") long and $(wc -l <"$tmp/help.short") short options of --help are the page's OPTIONS"
