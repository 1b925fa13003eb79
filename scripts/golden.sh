#!/usr/bin/env bash
# Prints a digest of the simulator's deterministic outputs: one line per configuration (every
# scheme, sizes-only and with data, two device presets, degraded by a slow member) and one for
# `eval --tiny`'s JSON runs. A refactor that must not change behaviour leaves every line the same:
#   scripts/golden.sh > before.txt; (change); scripts/golden.sh > after.txt; diff before.txt after.txt
# FR_BIN picks the binary (default: a fresh release build).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${FR_BIN:-}" ]]; then
    cargo build --release -q -p fusionraid
    FR_BIN=target/release/fusionraid
fi
digest() { sha256sum | cut -c1-16; }
schemes=(fusionraid fusion-nd 4-raid5 raid50 lograid toleraid nvraid 4-raidm sitout sandook fusionraid+)
for s in "${schemes[@]}"; do
    printf '%-12s sizes    %s\n' "$s" "$("$FR_BIN" sim --scheme "$s" --disks 13 --width 6 --workload tpcc,vd --duration 1s --json --seed 3 | digest)"
    printf '%-12s data     %s\n' "$s" "$("$FR_BIN" sim --scheme "$s" --disks 7 --width 5 --level raid6 --workload ycsb-a --volume-size 256MiB --duration 500ms --data --json --seed 4 | digest)"
    printf '%-12s consumer %s\n' "$s" "$("$FR_BIN" sim --scheme "$s" --disks 8 --device consumer --workload exchange --duration 1s --slow 2=5 --json --seed 5 | digest)"
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$FR_BIN" eval --tiny --jobs 2 --out "$out" >/dev/null 2>&1
printf '%-12s %s\n' "eval-tiny" "$(cd "$out" && find . -name '*.json' ! -name timings.json | sort | xargs cat | digest)"
