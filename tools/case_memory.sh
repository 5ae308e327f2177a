#!/bin/sh
# case_memory.sh BUILD_DIR CASES.csv... [--set SECTION.KEY=VALUE]... [--stages]:
# the memory estimate of every case row as `stepcast validate` configures it
# (tools/case_memory.c, built against BUILD_DIR installed into a temporary
# prefix, through pkg-config as examples/embed.c is). docs/MEMORY.md's
# torchtitan table:
#   tools/case_memory.sh build validation/cases/torchtitan_h100.csv
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR CASES.csv... [--set K=V]... [--stages]" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CMAKE:-cmake} --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; exit 1; }
pc=$(find "$tmp/prefix" -path '*/pkgconfig/stepcast.pc' | head -n 1)
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
# shellcheck disable=SC2046 # pkg-config's flags are words
${CC:-cc} -O1 -o "$tmp/case_memory" "$here/tools/case_memory.c" \
  $(pkg-config --cflags --libs --static stepcast)
cd "$here"
"$tmp/case_memory" "$@"
