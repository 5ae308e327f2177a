#!/bin/sh
# ddp.sh STEPCAST: accuracy guard of the ex-situ DDP path against the
# measured PyTorch DDP step times (tools/validate_ddp.sh; figures in
# docs/VALIDATION.md). Fails when the held-out (multi-GPU) MAPE, the
# 1-GPU MAPE or the worst row regress past the bounds below.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
out=$("$here/tools/validate_ddp.sh" "$1")
echo "$out" | tail -n 12
echo "$out" | awk '
/^1-GPU rows/ { one = $5 + 0 }
/^multi-GPU rows/ { held = $6 + 0; worst = $11 + 0 }
END {
  bad = 0
  if (one > MAX_ONE) { print "1-GPU MAPE " one " % > " MAX_ONE; bad = 1 }
  if (held > MAX_HELD) { print "held-out MAPE " held " % > " MAX_HELD; bad = 1 }
  if (worst > MAX_WORST) { print "worst row " worst " % > " MAX_WORST; bad = 1 }
  exit bad
}' MAX_ONE=6 MAX_HELD=8.5 MAX_WORST=35
