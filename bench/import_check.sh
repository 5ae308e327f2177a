#!/usr/bin/env bash
# import_check.sh OLD_STEPCAST NEW_STEPCAST: checks that an importer change
# leaves every import result as it was. Runs `import kineto` and `import cpu`
# on every JSON trace in tests/ and validation/ (plain, gzip, zstd, the bad
# inputs too) and `calibrate --interference` on the Kineto samples with both
# binaries, and compares exit codes, messages (temporary paths and the
# timing line masked) and the .scw bytes. Run from the source root. Prints
# the differences; exit 0 when there are none.
set -u
old=$1 new=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
digest() { sed -e "s|$tmp|TMP|g" -e 's/^read .*;/read;/' "$1" | cksum; }
run_all() { # STEPCAST OUT
  local bin=$1 out=$2 f fmt rc d
  : >"$out"
  for f in $(find tests validation -name '*.json' -o -name '*.json.gz' -o -name '*.json.zst' | sort); do
    for fmt in kineto cpu; do
      rm -f "$tmp/o.scw"
      "$bin" import $fmt "$f" -o "$tmp/o.scw" >"$tmp/so" 2>"$tmp/se"
      rc=$?
      d=none
      [ -f "$tmp/o.scw" ] && d=$(cksum <"$tmp/o.scw")
      echo "$fmt $f rc=$rc scw=$d out=$(digest "$tmp/so") err=$(digest "$tmp/se")" >>"$out"
    done
  done
  for f in validation/traces/hta/*.json.gz tests/fuzz/corpus-kineto/*; do
    "$bin" calibrate --interference "$f" >"$tmp/so" 2>"$tmp/se"
    echo "interf $f rc=$? out=$(digest "$tmp/so") err=$(digest "$tmp/se")" >>"$out"
  done
}
run_all "$old" "$tmp/old.txt"
run_all "$new" "$tmp/new.txt"
echo "$(wc -l <"$tmp/new.txt") runs compared"
diff "$tmp/old.txt" "$tmp/new.txt" && echo "identical"
