#!/bin/sh
# titan.sh STEPCAST: the accuracy guard of ex-situ prediction against
# torchtitan's bf16 H100 rows (tools/torchtitan_exsitu.sh; docs/TRACE.md,
# "Against torchtitan's measurements"): seven bf16 rows traced on meta
# tensors and replayed (--compile where torch.compile ran); fails when the
# mean absolute error is above 6.5 % or one row is off by more than 10.5 %
# (measured 2026-12-04: 6.2 %, worst +10.0 %, the eager 8B FSDP 8 row; 5.5 %
# and +9.2 % before elementwise operators with broadcast operands were
# priced at their measured rate, which took the DDP rows' held-out MAPE from
# 8.3 to 7.7 %: docs/TRACE.md, "Against torchtitan's measurements"). Needs
# python3-torch (skipped, exit 77, without it).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "titan.sh: python3-torch not installed: skipped"
  exit 77
fi
exec "$here/tools/torchtitan_exsitu.sh" "$1" 6.5 10.5
