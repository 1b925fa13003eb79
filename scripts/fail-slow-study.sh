#!/usr/bin/env bash
# Every scheme on the paper's main mix (TPC-C, YCSB-A, TensorFlow, VirtualDesktop; 29 aged
# `dc` members) with no, one and two fail-slow members (docs/EVALUATION.md, "Fail-slow
# members"). Prints one markdown row per scheme and case: P50, P99 and P99.9 over all
# requests, the slowest workload's P99, and the detector's spikes per SSD-minute.
# The standard study (8 s, 5x/2s/2s, seeds 1 and 2) is the eval experiment
# `fusionraid eval --only failslow`, which makes the same runs; this script is for what the
# experiment does not vary: another SPEC, DUR, SEEDS or list of SCHEMES.
#   scripts/fail-slow-study.sh                 # defaults below
#   SPEC=5x/2s/2s DUR=8s SEEDS="1 2" JOBS=2 scripts/fail-slow-study.sh
# FR_BIN picks the binary (default: a fresh release build).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${FR_BIN:-}" ]]; then
    cargo build --release -q -p fusionraid
    FR_BIN=target/release/fusionraid
fi
SPEC=${SPEC:-5x/2s/2s}
DUR=${DUR:-8s}
WARM=${WARM:-800ms}
SEEDS=${SEEDS:-1}
JOBS=${JOBS:-2}
SCHEMES=${SCHEMES:-"4-raid5 raid50 lograid toleraid sitout 4-raidm sandook fusion-nd fusionraid fusionraid+"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# One member, then two in different 7-member groups of the baselines (disks 3 and 10).
jobs_list=()
for s in $SCHEMES; do
    for c in none one two; do
        for seed in $SEEDS; do
            jobs_list+=("$s $c $seed")
        done
    done
done
printf '%s\n' "${jobs_list[@]}" | xargs -P "$JOBS" -L 1 bash -c '
    s=$0; c=$1; seed=$2
    case $c in none) fs=();; one) fs=(--fail-slow "3='"$SPEC"'");; two) fs=(--fail-slow "3+10='"$SPEC"'");; esac
    "'"$FR_BIN"'" sim --scheme "$s" --duration '"$DUR"' --warmup '"$WARM"' --seed "$seed" "${fs[@]}" --json > "'"$out"'/$s.$c.$seed.json"
'
echo "| scheme | fail-slow | P50 | P99 | P99.9 | worst workload P99 | spikes/SSD-min |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
for s in $SCHEMES; do
    for c in none one two; do
        python3 - "$out" "$s" "$c" $SEEDS <<'EOF'
import json, sys
out, s, c, *seeds = sys.argv[1:]
rs = [json.load(open(f"{out}/{s}.{c}.{seed}.json")) for seed in seeds]
mean = lambda xs: sum(xs) / len(xs)
a = [r["latency"]["all"]["all"] for r in rs]
ms = lambda us: f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} us"
worst = mean([max(w["latency"]["all"]["p99_us"] for w in r["latency"]["workloads"]) for r in rs])
sp = mean([r["spikes"]["per_device_minute"] for r in rs])
print(f"| {s} | {c} | {ms(mean([x['p50_us'] for x in a]))} | {ms(mean([x['p99_us'] for x in a]))} | "
      f"{ms(mean([x['p999_us'] for x in a]))} | {ms(worst)} | {sp:.1f} |")
EOF
    done
done
