#!/usr/bin/env bash
# A fio v2 iolog of N sequential writes of BS bytes from offset 0, for the simulator:
#   scripts/seq-iolog.sh 8192 65536 > seq.iolog
#   fusionraid sim --disks 8 --width 5 --trace seq.iolog --format fio --qd 16 --gather 1ms
# (docs/BENCHMARKS.md, "Sequential writes").
set -euo pipefail
N="${1:-8192}"
BS="${2:-65536}"
[[ "$N" =~ ^[1-9][0-9]*$ && "$BS" =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: $0 [WRITES] [BYTES]" >&2
  exit 2
}
echo "fio version 2 iolog"
echo "/dev/seq add"
echo "/dev/seq open"
awk -v n="$N" -v bs="$BS" 'BEGIN { for (i = 0; i < n; i++) printf "/dev/seq write %d %d\n", i * bs, bs }'
echo "/dev/seq close"
