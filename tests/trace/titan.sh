#!/bin/sh
# titan.sh STEPCAST: the accuracy guard of ex-situ prediction against
# torchtitan's bf16 H100 rows (tools/torchtitan_exsitu.sh; docs/TRACE.md,
# "Against torchtitan's measurements"): five rows traced on meta tensors
# and replayed; fails when the mean absolute error is above 8 % or one row
# is off by more than 16 % (measured: 7.2 %, worst 14.9 %, the compiled 70B
# row). Needs python3-torch (skipped, exit 77, without it).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "titan.sh: python3-torch not installed: skipped"
  exit 77
fi
exec "$here/tools/torchtitan_exsitu.sh" "$1" 8 16
