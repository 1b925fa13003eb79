#!/usr/bin/env bash
# RocksDB on ext4 on a fusionraid volume (paper §5.5; docs/BENCHMARKS.md, "RocksDB"):
# YCSB-A- and YCSB-B-like runs of db_bench on FusionRAID, RAID50, the combined system and
# FusionRAID without conversion, on the same emulated SSDs, repeated, with the spread.
#
#   db_bench -> ext4 (loop mount) -> nbdfuse file -> NBD (Unix socket) -> fusionraid serve
#            -> 8 x emu:PRESET:mem:3G (an SSD model's latency and internal stalls imposed
#               in real time, data in memory)
#
# Usage (root: loop mount and FUSE; non-interactive):
#   scripts/rocksdb-bench.sh [SECONDS_PER_WORKLOAD]
# Environment (defaults: the documented run, about 35 minutes):
#   DUR=60         seconds of each measured workload (the argument wins)
#   NUM=2000000    keys (400-byte values); each run first writes NUM random keys unsynced
#                  (fillrandom), so every configuration starts from the same database size
#   REPS=3         repetitions; each runs every configuration once, in a rotated order
#   CONFIGS="fusionraid raid50 fusionraid+ fusionraid-noconv"
#                  fusionraid+: steering (weights, segregation, congestion) and discard of
#                  freed stripes; fusionraid-noconv: `[conversion] enabled = false`
#   WORKLOADS="a b"  a: 50% reads (YCSB-A-like), b: 95% reads (YCSB-B-like)
#   SKEW=1         power-law key popularity (db_bench mixgraph's key_dist_a/b, the
#                  parameters of RocksDB's published mixgraph example); 0: uniform keys
#   PRESET="dc,aged"  the emu: preset and options of every member
#   THREADS=4      db_bench threads
#   OUT=DIR        keep every run's db_bench output, status and the results there
#   KEEP=1         keep the scratch directory
# A short smoke run (CI on demand, FUSIONRAID_ROCKSDB=1 scripts/test.sh):
#   REPS=1 DUR=10 NUM=200000 scripts/rocksdb-bench.sh
# Needs db_bench (apt-get install rocksdb-tools), nbdfuse, fusermount3, mkfs.ext4, jq.
# Exits non-zero if any run produced no read or no write latencies.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR="${1:-${DUR:-60}}"
NUM="${NUM:-2000000}"
REPS="${REPS:-3}"
CONFIGS="${CONFIGS:-fusionraid raid50 fusionraid+ fusionraid-noconv}"
WORKLOADS="${WORKLOADS:-a b}"
SKEW="${SKEW:-1}"
PRESET="${PRESET:-dc,aged}"
THREADS="${THREADS:-4}"
for t in db_bench nbdfuse fusermount3 mkfs.ext4 jq; do
  command -v "$t" >/dev/null || { echo "rocksdb-bench: $t is required" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "rocksdb-bench: needs root (loop mount)" >&2; exit 1; }

nice -n 10 cargo build --release -q -p fusionraid
BIN="$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)/release/fusionraid"
WORK="$(mktemp -d /var/tmp/fusionraid-rocksdb.XXXXXX)"
OUT="${OUT:-$WORK/out}"
mkdir -p "$OUT"
RESULTS="$OUT/results.txt"
STATUS="$OUT/status.txt"
: >"$RESULTS"
: >"$STATUS"
SERVE_PID=""; FUSE_PID=""; MNT=""; FUSE_DIR=""
teardown() {
  [ -n "$MNT" ] && umount "$MNT" 2>/dev/null || true
  MNT=""
  [ -n "$FUSE_DIR" ] && fusermount3 -u "$FUSE_DIR" 2>/dev/null || true
  FUSE_DIR=""
  [ -n "$FUSE_PID" ] && { kill "$FUSE_PID" 2>/dev/null || true; wait "$FUSE_PID" 2>/dev/null || true; }
  FUSE_PID=""
  [ -n "$SERVE_PID" ] && { kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; }
  SERVE_PID=""
}
cleanup() {
  teardown
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK/run"
  [ "${KEEP:-0}" = 1 ] || [ "$OUT" != "$WORK/out" ] || rm -rf "$WORK"
  rmdir "$WORK" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# The scheme `serve` runs for a configuration.
scheme_of() {
  case "$1" in
    fusionraid+ | fusionraid-noconv) echo fusionraid ;;
    *) echo "$1" ;;
  esac
}

# The pool file of a configuration: same members, geometry and space for all; only policies
# differ (fusionraid+ as in docs/EVALUATION.md, "The combined system", minus what `serve`
# can not do on these members: no HDD write logs without HDD members, hedging off as there).
pool_file() {
  local config="$1" members="" i
  for i in 0 1 2 3 4 5 6 7; do members="$members\"emu:$PRESET:mem:3G\", "; done
  local trim=false conv=true steer=""
  case "$config" in
    fusionraid+)
      trim=true
      steer=$'[steer]\nenabled = true\nmechanisms = ["weights", "segregation", "congestion"]'
      ;;
    fusionraid-noconv) conv=false ;;
  esac
  cat <<EOF
name = "rocksdb"
members = [${members%, }]
layout = "mols"
trim = $trim
[detector]
preset = "$(case "$PRESET" in dc*) echo dc ;; *) echo consumer ;; esac)"
[conversion]
enabled = $conv
$steer
[[volume]]
name = "db"
level = "raid5"
width = 4
size = "6G"
allow_unaligned = true
EOF
}

# Starts serve, nbdfuse, mkfs and the mount for a configuration in directory $1.
setup() {
  local config="$1" d="$2"
  mkdir -p "$d/fuse" "$d/mnt"
  pool_file "$config" >"$d/pool.toml"
  "$BIN" serve "$d/pool.toml" --scheme "$(scheme_of "$config")" --unix "$d/nbd.sock" \
    --status "$d/status.sock" >"$d/serve.out" 2>"$d/serve.err" &
  SERVE_PID=$!
  for _ in $(seq 1 300); do [ -S "$d/status.sock" ] && break; sleep 0.1; done
  [ -S "$d/status.sock" ] || { cat "$d/serve.err" >&2; exit 1; }
  FUSE_DIR="$d/fuse"
  nbdfuse "$d/fuse/disk" "nbd+unix:///db?socket=$d/nbd.sock" &
  FUSE_PID=$!
  for _ in $(seq 1 300); do [ -f "$d/fuse/disk" ] && break; sleep 0.1; done
  mkfs.ext4 -q -F -E nodiscard "$d/fuse/disk"
  mount -o loop "$d/fuse/disk" "$d/mnt"
  MNT="$d/mnt"
}

# db_bench options every phase shares: direct I/O for reads, flushes and compactions, so
# an operation's latency includes the storage below; a small block cache; no compression.
common_opts() {
  echo --db="$1/mnt/db" --num="$NUM" --value_size=400 --compression_type=none \
    --histogram=1 --use_direct_reads=1 \
    --use_direct_io_for_flush_and_compaction=1 --cache_size=8388608
}

# The measured phase: mixgraph with only gets and puts (readrandomwriterandom has uniform
# keys only), fixed 400-byte values, every put waiting for its WAL fsync.
workload_opts() {
  local reads; case "$1" in a) reads=50 ;; b) reads=95 ;; *) echo "bad workload $1" >&2; exit 1 ;; esac
  local skew="--key_dist_a=0 --key_dist_b=0"
  [ "$SKEW" = 1 ] && skew="--key_dist_a=0.002312 --key_dist_b=0.3467"
  echo --benchmarks=mixgraph --use_existing_db=1 --threads="$THREADS" --duration="$DUR" --sync=1 \
    --mix_get_ratio="$(printf 0.%02d "$reads")" --mix_put_ratio="$(printf 0.%02d $((100 - reads)))" --mix_seek_ratio=0 \
    --value_theta=400 --value_k=0 --value_sigma=0 "$skew"
}

# Fails unless the reads' share of the operations db_bench ran is the workload's, within
# 3 points (mixgraph's get and put ratios are easy to get wrong).
check_mix() {
  local want; case "$1" in a) want=50 ;; b) want=95 ;; esac
  awk -v want="$want" -v f="$2" '
    /^Microseconds per / { op = $3 }
    /^Count:/ { n[op] += $2 }
    END { got = 100 * n["read:"] / (n["read:"] + n["write:"])
          if (got < want - 3 || got > want + 3) {
            printf "rocksdb-bench: %s ran %.1f%% reads, not %d%%\n", f, got, want > "/dev/stderr"; exit 1 } }
  ' "$2"
}

# "op p50 p99 p99.9 ops_per_sec" lines from db_bench --histogram output.
parse() {
  awk '
    /^[a-zA-Z]+ +: +[0-9.]+ micros\/op/ { ops=$5 }
    /^Microseconds per / { op=$3; sub(":", "", op) }
    /^Percentiles:/ { printf "%s %s %s %s %s\n", op, $3, $7, $9, ops }
  ' "$1"
}

# One configuration in one repetition: a fresh volume, the fill, then every workload.
run_one() {
  local rep="$1" config="$2" d="$WORK/run/$2"
  rm -rf "$d"
  setup "$config" "$d"
  # shellcheck disable=SC2046
  db_bench $(common_opts "$d") --benchmarks=fillrandom --threads=1 --sync=0 \
    --disable_wal=1 >"$OUT/$rep-$config-fill.out" 2>&1
  local w
  for w in $WORKLOADS; do
    # shellcheck disable=SC2046
    db_bench $(common_opts "$d") $(workload_opts "$w") >"$OUT/$rep-$config-$w.out" 2>&1
    parse "$OUT/$rep-$config-$w.out" | sed "s/^/$rep $config $w /" >>"$RESULTS"
    for op in read write; do
      grep -q "^$rep $config $w $op " "$RESULTS" ||
        { echo "rocksdb-bench: no $op latencies in $OUT/$rep-$config-$w.out" >&2; exit 1; }
    done
    check_mix "$w" "$OUT/$rep-$config-$w.out"
  done
  "$BIN" status --socket "$d/status.sock" >"$OUT/$rep-$config-status.txt" || true
  status_line "$OUT/$rep-$config-status.txt" | sed "s/^/$rep $config /" >>"$STATUS"
  teardown
  rm -rf "$d"
}

# "stalls stalled_ms spikes conversions write_amplification redirected_writes write_p99
# write_p99.9" from the array's status after a run: the emulated SSDs' internal stalls, the
# detector's spikes, what the engine did about them, and the volume's own write tail (us,
# over the whole run, fill included).
status_line() {
  awk '
    function after(word,   i) { for (i = 1; i < NF; i++) if ($i == word) return $(i + 1); return 0 }
    $1 ~ /^emu:/ { spikes += $5 }
    /emulated .* stalls/ { stalls += $3; ms += $(NF - 5) }
    /^steering:/ { redirected = $2 }
    /^background:/ { conv = $2; wa = $NF }
    /^ +write p50/ { w99 = after("p99"); w999 = after("p99.9") }
    END { printf "%d %.0f %d %d %s %d %d %d\n", stalls, ms, spikes, conv, wa == "" ? 0 : wa,
                 redirected, w99, w999 }
  ' "$1"
}

# Per configuration, workload and op: the median over repetitions and the range (min-max).
summary() {
  awk '
    function sortv(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t } }
    function med(a, n) { return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
    { k = $2 " " $3 " " $4; if (!(k in n)) order[++keys] = k; n[k]++
      for (f = 5; f <= 8; f++) v[k, f, n[k]] = $f }
    END {
      for (i = 1; i <= keys; i++) {
        k = order[i]; line = k
        for (f = 5; f <= 8; f++) {
          for (j = 1; j <= n[k]; j++) a[j] = v[k, f, j]
          sortv(a, n[k])
          fmt = f == 5 ? " %.1f %.1f-%.1f" : " %.0f %.0f-%.0f"
          line = line sprintf(fmt, med(a, n[k]), a[1], a[n[k]])
        }
        print line
      }
    }' "$RESULTS" | sort -k2,2 -k3,3 -k1,1
}

# Tail ratios of the medians: RAID50 over FusionRAID, conversion on over off.
ratios() {
  awk '
    { m99[$1, $2, $3] = $6; m999[$1, $2, $3] = $8; seen[$2 " " $3] = 1 }
    END {
      for (k in seen) {
        split(k, kk, " "); w = kk[1]; op = kk[2]
        if ((("raid50", w, op) in m99) && (("fusionraid", w, op) in m99) && m99["fusionraid", w, op] > 0)
          printf "  %s %s: raid50 / fusionraid P99 %.2fx, P99.9 %.2fx\n", w, op,
            m99["raid50", w, op] / m99["fusionraid", w, op], m999["raid50", w, op] / m999["fusionraid", w, op]
        if ((("fusionraid-noconv", w, op) in m99) && (("fusionraid", w, op) in m99) && m99["fusionraid-noconv", w, op] > 0)
          printf "  %s %s: conversion on / off P99 %+.0f%%, P99.9 %+.0f%%\n", w, op,
            100 * (m99["fusionraid", w, op] / m99["fusionraid-noconv", w, op] - 1),
            100 * (m999["fusionraid", w, op] / m999["fusionraid-noconv", w, op] - 1)
      }
    }' | sort
}

main() {
  local configs=($CONFIGS) n rep i
  n=${#configs[@]}
  echo "db_bench: fill $NUM keys unsynced, then workloads [$WORKLOADS] ${DUR}s each (synced puts)," \
    "$THREADS threads, 400 B values, skew=$SKEW; 8 x emu:$PRESET:mem, RAID5 3+1, $REPS reps"
  for rep in $(seq 1 "$REPS"); do
    for i in $(seq 0 $((n - 1))); do
      local config="${configs[$(((i + rep - 1) % n))]}"
      echo "rep $rep: $config ($(date -u +%H:%M:%S))"
      run_one "$rep" "$config"
    done
  done
  echo
  echo "Median over $REPS reps (min-max), latencies in microseconds"
  printf "%-18s %-2s %-5s %22s %22s %24s %22s\n" config wl op P50 P99 P99.9 ops/s
  summary | while read -r c w op p50 r50 p99 r99 p999 r999 ops rops; do
    printf "%-18s %-2s %-5s %8s (%11s) %8s (%11s) %9s (%12s) %8s (%11s)\n" \
      "$c" "$w" "$op" "$p50" "$r50" "$p99" "$r99" "$p999" "$r999" "$ops" "$rops"
  done
  echo
  echo "Tail ratios (medians):"
  summary | ratios
  echo
  echo "Per run, summed over the members (mean over reps): emulated stalls, ms stalled," \
    "detector spikes; conversions, write amplification, writes redirected; the volume's" \
    "write P99 and P99.9 (us)"
  awk '{ k = $2; if (!(k in n)) o[++m] = k; n[k]++; for (f = 3; f <= 10; f++) s[k, f] += $f }
    END { for (i = 1; i <= m; i++) { k = o[i]; printf "  %-18s", k
      for (f = 3; f <= 10; f++) printf " %8.*f", f == 7 ? 2 : 0, s[k, f] / n[k]; print "" } }' "$STATUS"
  [ "$OUT" = "$WORK/out" ] && [ "${KEEP:-0}" != 1 ] || echo "raw results: $RESULTS"
  echo "machine: $(nproc) CPUs, kernel $(uname -r), $(db_bench --version 2>&1 | head -1)," \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
}

main
