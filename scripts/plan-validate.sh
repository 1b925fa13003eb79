#!/usr/bin/env bash
# Validates `fusionraid plan` against the simulator (docs/EVALUATION.md, "Over-provisioning
# planner"): for each spare share, sustained 4 KiB random overwrites of a 1 GiB RAID5 4+1
# volume on 8 aged members of 4 GiB, offered well above what the pool sustains, and the
# planner's prediction for the same pool. Prints one line per share: measured and predicted
# IOPS (arrivals 25-40 s), device pages written and read per user page and flash bytes per
# user byte (the difference between a 40 s and a 25 s run of the same seed: the steady state),
# and the errors (predicted / measured - 1).
#   scripts/plan-validate.sh [DEVICE] [SHARES...]      (default: dc 0 0.1 0.25 0.5)
# FR_BIN picks the binary (default: a fresh release build). About a minute of CPU per share.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${FR_BIN:-}" ]]; then
    cargo build --release -q -p fusionraid
    FR_BIN=target/release/fusionraid
fi
device=${1:-dc}
shift || true
shares=("${@:-0 0.1 0.25 0.5}")
read -r -a shares <<<"${shares[*]}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

members=$(for _ in 1 2 3 4 5 6 7 8; do printf '"emu:%s:mem:4G", ' "$device"; done)
cat >"$work/pool.toml" <<EOF
# What the simulator runs: 1 MiB reserved per member, the mapping in memory.
members = [${members%, }]
data_offset = "1M"
[metadata]
journal = false
[[volume]]
name = "v"
level = "raid5"
width = 5
size = "1G"
EOF
list=$(IFS=,; echo "${shares[*]}")
"$FR_BIN" plan "$work/pool.toml" --shares "$list" --json >"$work/plan.json"

sim() { # SHARE DURATION WARMUP
    "$FR_BIN" sim --device "$device" --disks 8 --capacity 4GiB --width 5 --volume-size 1GiB \
        --volume-spare "$1" --synthetic iops=80k,read=0,bs=4k,footprint=1GiB,name=rw \
        --duration "$2" --warmup "$3" --json
}
printf '%-6s %9s %9s %7s | %7s %7s %7s | %7s %7s | %7s %7s\n' spare "IOPS sim" "IOPS plan" err \
    "wr sim" "wr plan" err "rd sim" "rd plan" "fl sim" "fl plan"
i=0
for s in "${shares[@]}"; do
    sim "$s" 40s 25s >"$work/long.json"
    sim "$s" 25s 10s >"$work/short.json"
    jq -n -r --slurpfile l "$work/long.json" --slurpfile s "$work/short.json" \
        --slurpfile p "$work/plan.json" --argjson i "$i" --arg share "$s" '
        def w(r): r.write_amplification;
        def rd(r): [r.disks[].bytes_read] | add;
        ($l[0]) as $L | ($s[0]) as $S | ($p[0].volumes[0].points[$i]) as $P
        | (w($L).user_bytes - w($S).user_bytes) as $du
        | (((w($L).device_fg_bytes + w($L).device_bg_bytes)
            - (w($S).device_fg_bytes + w($S).device_bg_bytes)) / $du) as $wr
        | ((rd($L) - rd($S)) / $du) as $rd
        | ((w($L).flash_bytes - w($S).flash_bytes) / $du) as $fl
        | $L.latency.workloads[0].iops as $iops
        | "\($share) \($iops | floor) \($P.iops | floor) \(($P.iops / $iops - 1) * 100 | round)% | \($wr * 100 | round / 100) \($P.written * 100 | round / 100) \(($P.written / $wr - 1) * 100 | round)% | \($rd * 100 | round / 100) \($P.read * 100 | round / 100) | \($fl * 100 | round / 100) \($P.written * $P.flash_wa * 100 | round / 100)"' |
        awk '{printf "%-6s %9s %9s %7s | %7s %7s %7s | %7s %7s | %7s %7s\n", $1,$2,$3,$4,$6,$7,$8,$10,$11,$13,$14}'
    i=$((i + 1))
done
