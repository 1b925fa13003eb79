#!/usr/bin/env bash
# What the metrics endpoint costs `serve` (docs/BENCHMARKS.md, "Metrics"): the CPU time
# the serve process spends per 4 KiB request, with `--metrics` off and on, side by side.
#
# Two servers run at once on identical pools of mem: members: OFF (no endpoint) and ON
# (`--metrics`, scraped every SCRAPE seconds by curl for the whole run, as Prometheus would,
# more often than its default of 15 s). fio (nbd engine, 4 KiB random writes then reads,
# QD16) loads one server at a time, rotating the order, ROUNDS times; each job's
# CPU (user + system from /proc/PID/stat, scrapes included) is divided by its requests.
# With BASE_BIN=path a third server runs that build (e.g. the commit before the metrics),
# to show what the always-on recording (histograms, state watch) costs as well.
#
# Usage: scripts/bench-metrics.sh [RUNTIME_SECONDS]   (default 10; needs fio, curl, jq)
# Environment: FR_BIN (default: this tree's release build), BASE_BIN, ROUNDS (default 6),
# SCRAPE (seconds between scrapes, default 1).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME="${1:-10}"
ROUNDS="${ROUNDS:-6}"
SCRAPE="${SCRAPE:-1}"
for t in fio curl jq; do
  command -v "$t" >/dev/null || { echo "bench-metrics: $t is required" >&2; exit 1; }
done
if [ -z "${FR_BIN:-}" ]; then
  cargo build --release -q -p fusionraid
  FR_BIN="$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)/release/fusionraid"
fi
WORK="$(mktemp -d /tmp/fusionraid-bench-metrics.XXXXXX)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

PORT=$((20000 + RANDOM % 20000))
declare -A PID SOCK
start() { # name bin extra...
  local name=$1 bin=$2; shift 2
  mkdir -p "$WORK/$name"
  cat >"$WORK/$name/pool.toml" <<TOML
name = "$name"
members = [$(for _ in 1 2 3 4 5 6 7; do printf '"mem:384M,populate",'; done)]
[[volume]]
name = "vol0"
level = "raid5"
width = 4
size = "512M"
TOML
  "$bin" serve "$WORK/$name/pool.toml" --unix "$WORK/$name/nbd.sock" \
    --status "$WORK/$name/status.sock" "$@" >"$WORK/$name/out" 2>"$WORK/$name/err" &
  PID[$name]=$!
  PIDS+=($!)
  SOCK[$name]="$WORK/$name/nbd.sock"
  for _ in $(seq 1 600); do grep -q '^ready' "$WORK/$name/out" && return 0; sleep 0.1; done
  echo "bench-metrics: $name did not start" >&2; cat "$WORK/$name/err" >&2; exit 1
}
start off "$FR_BIN"
start on "$FR_BIN" --metrics "127.0.0.1:$PORT"
SERVERS=(off on)
if [ -n "${BASE_BIN:-}" ]; then start base "$BASE_BIN"; SERVERS+=(base); fi
( while sleep "$SCRAPE"; do curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics" || true; done ) &
PIDS+=($!)

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
# CPU microseconds per request of server NAME over one fio job, and its IOPS.
job() { # name rw
  local name=$1 c0 c1 out n iops
  c0=$(ticks "${PID[$name]}")
  out=$(fio --name=j --ioengine=nbd --uri="nbd+unix:///vol0?socket=${SOCK[$name]}" --rw="$2" \
    --bs=4k --iodepth=16 --size=512M --time_based --runtime="$RUNTIME" --output-format=json \
    2>/dev/null | sed -n '/^{/,$p')
  c1=$(ticks "${PID[$name]}")
  n=$(jq -r '.jobs[0].read.total_ios + .jobs[0].write.total_ios' <<<"$out")
  iops=$(jq -r '.jobs[0].read.iops + .jobs[0].write.iops' <<<"$out")
  awk -v c=$((c1 - c0)) -v t=$TICK_US -v n="$n" -v i="$iops" 'BEGIN { printf "%.2f %.0f\n", c * t / n, i }'
}

echo "fusionraid: $("$FR_BIN" --version)  runtime ${RUNTIME}s x ${ROUNDS} rounds, scrape every ${SCRAPE}s"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r)"
# One scrape's CPU, on the idle server: 200 scrapes back to back.
c0=$(ticks "${PID[on]}")
for _ in $(seq 1 200); do curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics"; done
c1=$(ticks "${PID[on]}")
echo "one scrape (idle, $(curl -s "http://127.0.0.1:$PORT/metrics" | wc -c) bytes): $(awk -v c=$((c1 - c0)) -v t=$TICK_US 'BEGIN { printf "%.0f", c * t / 200 }') us of serve CPU"
for rw in randwrite randread; do
  declare -A SUM=()
  for r in $(seq 1 "$ROUNDS"); do
    # Rotate the order so each server takes each position equally often (ROUNDS a multiple
    # of the server count) and drift in the machine's other load spreads evenly.
    n=${#SERVERS[@]}
    order=()
    for i in $(seq 0 $((n - 1))); do order+=("${SERVERS[$(((i + r) % n))]}"); done
    line="$rw round $r:"
    for s in "${order[@]}"; do
      read -r us iops < <(job "$s" "$rw")
      SUM[$s]="${SUM[$s]:-} $us"
      line+="  $s ${us} us/req (${iops} IOPS)"
    done
    echo "$line"
  done
  for s in "${SERVERS[@]}"; do
    # shellcheck disable=SC2086
    echo "$rw $s median: $(printf '%s\n' ${SUM[$s]} | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}') us/req"
  done
  unset SUM
done
