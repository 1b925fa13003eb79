#!/usr/bin/env bash
# RocksDB on ext4 on a fusionraid volume (docs/BENCHMARKS.md, "RocksDB"): FusionRAID vs the
# RAID50 scheme on the same emulated SSDs, tail latency of db_bench's operations.
#
#   db_bench -> ext4 (loop mount) -> nbdfuse file -> NBD (Unix socket) -> fusionraid serve
#            -> 8 x emu:consumer:mem (the consumer SSD model: buffer-flush and GC stalls
#               imposed in real time, data in memory)
#
# Usage (root: loop mount and FUSE): scripts/rocksdb-bench.sh [SECONDS_PER_BENCHMARK]
# Environment: SCHEMES (default "fusionraid raid50"), PRESET (the emu: preset and options,
# default consumer; e.g. "dc,aged" for aged datacenter drives),
# THREADS (default 4), KEEP=1 keeps the scratch directory. Needs db_bench
# (apt-get install rocksdb-tools), nbdfuse, fusermount3, mkfs.ext4.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR="${1:-60}"
SCHEMES="${SCHEMES:-fusionraid raid50}"
PRESET="${PRESET:-consumer}"
THREADS="${THREADS:-4}"
for t in db_bench nbdfuse fusermount3 mkfs.ext4 jq; do
  command -v "$t" >/dev/null || { echo "rocksdb-bench: $t is required" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "rocksdb-bench: needs root (loop mount)" >&2; exit 1; }

cargo build --release -q -p fusionraid
BIN="$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)/release/fusionraid"
WORK="$(mktemp -d /var/tmp/fusionraid-rocksdb.XXXXXX)"
SERVE_PID=""; FUSE_PID=""; MNT=""; FUSE_DIR=""
cleanup() {
  [ -n "$MNT" ] && umount "$MNT" 2>/dev/null || true
  [ -n "$FUSE_DIR" ] && fusermount3 -u "$FUSE_DIR" 2>/dev/null || true
  [ -n "$FUSE_PID" ] && kill "$FUSE_PID" 2>/dev/null || true
  [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

# "bench op p50 p99 p99.9 ops_per_sec" lines from db_bench --histogram output.
parse() {
  awk '
    /^[a-zA-Z]+ +: +[0-9.]+ micros\/op/ { bench=$1; ops=$5 }
    /^Microseconds per / { op=$3; sub(":", "", op) }
    /^Percentiles:/ { printf "%s %s %s %s %s %s\n", bench, op, $3, $7, $9, ops }
  ' "$1"
}

run_scheme() {
  local scheme="$1" d="$WORK/$1"
  mkdir -p "$d/fuse" "$d/mnt"
  local members=""
  for i in 0 1 2 3 4 5 6 7; do members="$members\"emu:$PRESET:mem:3G\", "; done
  cat > "$d/pool.toml" <<EOF
name = "rocksdb"
members = [${members%, }]
layout = "mols"
[detector]
preset = "$(case "$PRESET" in dc*) echo dc ;; *) echo consumer ;; esac)"
[[volume]]
name = "db"
level = "raid5"
width = 4
size = "6G"
allow_unaligned = true
EOF
  "$BIN" serve "$d/pool.toml" --scheme "$scheme" --unix "$d/nbd.sock" --status "$d/status.sock" \
    >"$d/serve.out" 2>"$d/serve.err" &
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
  # Synchronous WAL writes and direct I/O for reads, flushes and compactions, so every
  # operation's latency includes the storage below.
  db_bench --db="$d/mnt/db" --benchmarks=fillrandom,readrandomwriterandom \
    --num=2000000 --value_size=400 --compression_type=none --threads="$THREADS" \
    --duration="$DUR" --histogram=1 --sync=1 --use_direct_reads=1 \
    --use_direct_io_for_flush_and_compaction=1 --cache_size=8388608 \
    >"$d/db_bench.out" 2>&1
  "$BIN" status --socket "$d/status.sock" >"$d/status.txt" || true
  umount "$d/mnt"; MNT=""
  fusermount3 -u "$d/fuse"; FUSE_DIR=""
  wait "$FUSE_PID" 2>/dev/null || true; FUSE_PID=""
  kill "$SERVE_PID"; wait "$SERVE_PID" 2>/dev/null || true; SERVE_PID=""
  parse "$d/db_bench.out" | sed "s/^/$scheme /"
}

echo "db_bench ${DUR}s per benchmark, $THREADS threads, 8 x emu:$PRESET:mem, RAID5 3+1 (microseconds)"
printf "%-11s %-22s %-6s %10s %10s %10s %10s\n" scheme benchmark op P50 P99 P99.9 ops/s
for s in $SCHEMES; do
  run_scheme "$s" | while read -r sch b op p50 p99 p999 ops; do
    printf "%-11s %-22s %-6s %10s %10s %10s %10s\n" "$sch" "$b" "$op" "$p50" "$p99" "$p999" "$ops"
  done
  grep -E "^(steering|background|latency|  +(write|flush) )" "$WORK/$s/status.txt" | sed "s/^/  $s: /" || true
  # Member lines: "emu:..  STATE SPIKES ...", then a note "emulated P: N stalls (F flush, G gc), X ms".
  awk -v s="$s" '
    $1 ~ /^emu:/ { spikes += $3 }
    /emulated .* stalls/ { stalls += $3; gsub(/[(,]/, " "); flush += $5; gc += $7; ms += $9 }
    END { printf "  %s: emulated SSD stalls %d (%d flush, %d gc), %.0f ms in all; detector spikes %d\n",
                 s, stalls, flush, gc, ms, spikes }' "$WORK/$s/status.txt"
done
echo "machine: $(nproc) CPUs, kernel $(uname -r), $(db_bench --version 2>&1 | head -1)"
