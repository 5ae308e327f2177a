#!/usr/bin/env bash
# embed.sh: an installed prefix works on its own. Installs a build directory
# with `cmake --install` into a temporary prefix (or takes an installed prefix
# as it is), checks what it holds (libstepcast.a, the public headers, the CLI,
# stepcast(1), stepcast.pc), builds examples/embed.c against it with nothing
# but `pkg-config --cflags --libs --static stepcast` (no -I or -L into the
# source or build tree), and runs it on the built-in default and on
# examples/llama3-8b-quick.yaml: exit 0, a step time, the same step time as the
# installed CLI prints; a bad --set exits 2.
#   embed.sh BUILD_DIR|PREFIX
# Environment: CMAKE (default cmake), CC (default cc), SC_EMBED_CFLAGS (extra
# compile/link flags, e.g. the sanitizers the library was built with).
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR|PREFIX" >&2
  exit 2
fi
arg=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
cmake=${CMAKE:-cmake}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# 1. The prefix: a fresh install of the build directory, or the one given.
if [ -f "$arg/cmake_install.cmake" ]; then
  prefix=$tmp/prefix
  if ! "$cmake" --install "$arg" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
    cat "$tmp/install.log"
    echo "FAIL: cmake --install $arg --prefix $prefix"
    exit 1
  fi
else
  prefix=$arg
fi

# 2. What the prefix holds (lib/ or GNUInstallDirs' lib/<multiarch>/).
pc=$(find "$prefix" -path '*/pkgconfig/stepcast.pc' | head -n 1)
[ -n "$pc" ] || { echo "FAIL: no lib*/pkgconfig/stepcast.pc under $prefix"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
[ -f "$libdir/libstepcast.a" ] || bad "no $libdir/libstepcast.a"
for h in "$src"/include/stepcast/*.h; do
  cmp -s "$h" "$prefix/include/stepcast/$(basename "$h")" ||
    bad "include/stepcast/$(basename "$h") missing or differs from the source's"
done
cli=$prefix/bin/stepcast
[ -x "$cli" ] || bad "no executable $cli"
page=$prefix/share/man/man1/stepcast.1
if [ ! -s "$page" ]; then
  bad "no $page"
elif command -v man >/dev/null 2>&1; then
  MANPAGER=cat MANWIDTH=80 man -l "$page" >"$tmp/man.txt" 2>"$tmp/man.err" || bad "man -l $page exited $?"
  grep -q 'stepcast run' "$tmp/man.txt" || bad "man -l $page does not show 'stepcast run'"
else
  grep -q '^\.TH STEPCAST 1' "$page" || bad "$page has no .TH STEPCAST 1"
fi

# 3. stepcast.pc: this prefix's paths, the header's version, flags into the
#    prefix only.
PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
pkg-config --exists --print-errors stepcast || { echo "FAIL: pkg-config stepcast"; exit 1; }
[ "$(cd "$(pkg-config --variable=prefix stepcast)" && pwd)" = "$prefix" ] ||
  bad "stepcast.pc prefix=$(pkg-config --variable=prefix stepcast), installed in $prefix"
hv=$(sed -n 's/^#define SC_VERSION "\(.*\)"/\1/p' "$prefix/include/stepcast/stepcast.h")
[ "$(pkg-config --modversion stepcast)" = "$hv" ] ||
  bad "stepcast.pc version $(pkg-config --modversion stepcast), header $hv"
flags=$(pkg-config --cflags --libs --static stepcast) || { echo "FAIL: pkg-config --static"; exit 1; }
echo "pkg-config --cflags --libs --static stepcast: $flags"
for w in $flags; do
  case $w in -I* | -L*) ;; *) continue ;; esac
  d=${w#-?}
  case $d/ in
    "$prefix"/*) ;;
    "$src"/* | "$arg"/*) bad "$w points into the source or build tree" ;;
  esac
done

# 4. Build the example from a copy outside the source tree, as a user would.
cp "$src/examples/embed.c" "$tmp/embed.c"
# shellcheck disable=SC2086 # flags are words
if ! (cd "$tmp" && "$cc" -std=c11 -Wall -Wextra -Werror -pedantic ${SC_EMBED_CFLAGS:-} embed.c \
        $flags -o embed) >"$tmp/cc.log" 2>&1; then
  cat "$tmp/cc.log"
  echo "FAIL: $cc embed.c \$(pkg-config --cflags --libs --static stepcast)"
  exit 1
fi

# 5. Run it: default and a YAML config, each against the installed CLI.
step_of() { sed -n 's/^ *step time *\([0-9][0-9.]*\) s\( .*\)\{0,1\}$/\1/p' "$1"; }
run_case() { # name, then the arguments for embed and `stepcast run`
  local name=$1
  shift
  (cd "$tmp" && ./embed "$@") >"$tmp/$name.out" 2>"$tmp/$name.err"
  local rc=$?
  [ "$rc" -eq 0 ] || { bad "embed $* exited $rc: $(cat "$tmp/$name.err")"; return; }
  [ -s "$tmp/$name.err" ] && bad "embed $* wrote to stderr: $(cat "$tmp/$name.err")"
  local got
  got=$(step_of "$tmp/$name.out")
  [ -n "$got" ] || { bad "embed $* printed no step time:"; cat "$tmp/$name.out"; return; }
  grep -q "^libstepcast $hv" "$tmp/$name.out" || bad "embed $* does not print sc_version() $hv"
  if [ -x "$cli" ]; then
    "$cli" run "$@" >"$tmp/$name.cli" 2>&1 || bad "installed stepcast run $* exited $?"
    local want
    want=$(step_of "$tmp/$name.cli")
    [ "$got" = "$want" ] || bad "embed $*: step time $got s, installed stepcast run: $want s"
  fi
  echo "ok: embed ${*:-(built-in default)} -> step time $got s"
}
run_case default
run_case quick "$src/examples/llama3-8b-quick.yaml"
run_case quick-set "$src/examples/llama3-8b-quick.yaml" --set parallel.tp=2

# 6. Errors: the message and the exit code sc_exit_code gives (2: invalid input).
(cd "$tmp" && ./embed --set parallel.tp=7) >/dev/null 2>"$tmp/bad.err"
rc=$?
[ "$rc" -eq 2 ] || bad "embed --set parallel.tp=7 exited $rc, want 2"
grep -q 'parallel' "$tmp/bad.err" || bad "embed --set parallel.tp=7: no message: $(cat "$tmp/bad.err")"

[ "$fail" -eq 0 ] && echo "install.embed: ok ($prefix)"
exit "$fail"
