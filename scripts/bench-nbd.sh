#!/usr/bin/env bash
# NBD-level benchmarks of the real server (docs/BENCHMARKS.md, "NBD server"):
#
#  A. fusionraid with mem: members vs `nbdkit memory`, same fio jobs (nbd engine) over Unix
#     sockets: 4 KiB random read QD16, 4 KiB random write QD16, 64 KiB sequential read and
#     write QD16. Prints IOPS ratios and the median latency fusionraid adds. The members are
#     populated up front (`mem:1G,populate`): nbdkit's pages are all allocated by its fill,
#     while fusionraid's replicated area and spare stripes would otherwise take their first
#     page faults during the timed jobs.
#  B. fusionraid with io_uring file: members vs fio (io_uring, O_DIRECT) on the same files:
#     the engine's overhead on real storage.
#
# Usage: scripts/bench-nbd.sh [RUNTIME_SECONDS]   (default 15; needs fio, nbdkit, jq)
# Environment: BENCH_DIR (scratch, default a temp dir under /var/tmp: part B needs a disk,
# not tmpfs), KEEP=1 keeps it, FR_BIN=path benches that fusionraid binary instead of
# building this tree's (to compare two builds side by side), PARTS=A or B runs one part,
# ONLY=REGEX runs the part A jobs whose name (randread, randwrite, read, write) matches,
# LEVEL and WIDTH set part A's volume (default raid5, 5), POOL_EXTRA=TOML is appended to
# part A's pool file, after the volume table: "spare_fraction = 0.25" sets its spare share (e.g. "[metadata]\njournal = false" to
# measure what durability costs), POOL_TOP=TOML goes before the volume table ("row_us = 0"), REPEAT=N runs each part A job N times per server,
# alternating which server goes first, and prints the median of the N ratios (on a shared
# machine a single pair can be off by 2x either way).
#
# Besides IOPS and median latency, part A prints each server's CPU time per request
# (user + system, from /proc/PID/stat around the job): on a shared machine the rates move
# with other load, the CPU a request costs much less.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME="${1:-15}"
for t in fio nbdkit jq; do
  command -v "$t" >/dev/null || { echo "bench-nbd: $t is required" >&2; exit 1; }
done

if [ -n "${FR_BIN:-}" ]; then
  BIN="$FR_BIN"
else
  cargo build --release -q -p fusionraid
  BIN="$(cargo metadata --format-version 1 --no-deps | jq -r .target_directory)/release/fusionraid"
fi
PARTS="${PARTS:-AB}"
REPEAT="${REPEAT:-1}"
[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || { echo "bench-nbd: REPEAT must be a positive integer" >&2; exit 1; }
WORK="${BENCH_DIR:-$(mktemp -d /var/tmp/fusionraid-bench.XXXXXX)}"
mkdir -p "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

wait_sock() { for _ in $(seq 1 300); do [ -S "$1" ] && return 0; sleep 0.1; done; echo "no socket $1" >&2; exit 1; }

VOL=1G
# fio over NBD; prints "iops p50_us ios" for the job's direction.
fio_nbd() { # uri name rw bs dir
  fio --name="$2" --ioengine=nbd --uri="$1" --rw="$3" --bs="$4" --iodepth=16 \
      --size="$VOL" --time_based --runtime="$RUNTIME" --output-format=json 2>/dev/null \
    | sed -n '/^{/,$p' \
    | jq -r --arg d "$5" '.jobs[0][$d] | "\(.iops) \(.clat_ns.percentile["50.000000"] / 1000) \(.total_ios)"'
}
# CPU time (user + system) of a process, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
# fio_nbd, plus the CPU microseconds server PID spent per request: "iops p50_us cpu_us".
fio_cpu() { # pid uri name rw bs dir
  local pid=$1 c0 c1; shift
  c0=$(ticks "$pid")
  read -r i l n < <(fio_nbd "$@")
  c1=$(ticks "$pid")
  echo "$i $l $(awk -v c=$((c1 - c0)) -v t=$TICK_US -v n="$n" 'BEGIN { printf "%.1f", c * t / n }')"
}
fill() { # uri: write the whole volume once so reads hit stored data
  fio --name=fill --ioengine=nbd --uri="$1" --rw=write --bs=1M --iodepth=8 --size="$VOL" \
      --output-format=terse >/dev/null 2>&1
}

JOBS=("randread 4k read" "randwrite 4k write" "read 64k read" "write 64k write")

if [[ "$PARTS" == *A* ]]; then
echo "== A. fusionraid (mem: members) vs nbdkit memory, Unix sockets, ${RUNTIME}s per job"
mkdir -p "$WORK/a"
cat > "$WORK/a/pool.toml" <<EOF
name = "bench"
members = ["mem:1G,populate", "mem:1G,populate", "mem:1G,populate", "mem:1G,populate",
           "mem:1G,populate", "mem:1G,populate", "mem:1G,populate"]
${POOL_TOP:-}
[[volume]]
name = "vol"
level = "${LEVEL:-raid5}"
width = ${WIDTH:-5}
size = "$VOL"
EOF
printf "%b\n" "${POOL_EXTRA:-}" >> "$WORK/a/pool.toml"
"$BIN" serve "$WORK/a/pool.toml" --unix "$WORK/a/fr.sock" --status "$WORK/a/st.sock" >/dev/null 2>"$WORK/a/serve.err" &
FR_PID=$!
PIDS+=($FR_PID)
nbdkit -f -U "$WORK/a/kit.sock" memory "$VOL" &
KIT_PID=$!
PIDS+=($KIT_PID)
wait_sock "$WORK/a/fr.sock"; wait_sock "$WORK/a/kit.sock"
FR="nbd+unix:///vol?socket=$WORK/a/fr.sock"
KIT="nbd+unix:///?socket=$WORK/a/kit.sock"
fill "$FR"; fill "$KIT"
printf "%-12s %12s %12s %8s %12s %12s %10s %11s %11s\n" job fr_iops kit_iops ratio fr_p50_us \
  kit_p50_us added_us fr_cpu_us kit_cpu_us
for j in "${JOBS[@]}"; do
  set -- $j
  [[ "$1" =~ ^(${ONLY:-.*})$ ]] || continue
  ratios=()
  for ((r = 0; r < REPEAT; r++)); do
    # Alternate which server goes first, so a load that builds up or fades over the run
    # does not favour one of them.
    if ((r % 2 == 0)); then
      read -r fi fl fc < <(fio_cpu "$FR_PID" "$FR" "fr-$1" "$1" "$2" "$3")
      read -r ki kl kc < <(fio_cpu "$KIT_PID" "$KIT" "kit-$1" "$1" "$2" "$3")
    else
      read -r ki kl kc < <(fio_cpu "$KIT_PID" "$KIT" "kit-$1" "$1" "$2" "$3")
      read -r fi fl fc < <(fio_cpu "$FR_PID" "$FR" "fr-$1" "$1" "$2" "$3")
    fi
    ratios+=("$(awk -v a="$fi" -v b="$ki" 'BEGIN { printf "%.3f", a / b }')")
    awk -v j="$1/$2" -v fi="$fi" -v ki="$ki" -v fl="$fl" -v kl="$kl" -v fc="$fc" -v kc="$kc" 'BEGIN {
      printf "%-12s %12.0f %12.0f %8.2f %12.1f %12.1f %10.1f %11.1f %11.1f\n", j, fi, ki, fi/ki, fl, kl, fl-kl, fc, kc }'
  done
  if ((REPEAT > 1)); then
    printf "%s\n" "${ratios[@]}" | sort -n | awk -v j="$1/$2" '{ v[NR] = $1 }
      END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
            printf "%-12s median ratio %.2f over %d pairs (min %.2f, max %.2f)\n", j, m, NR, v[1], v[NR] }'
  fi
done
"$BIN" status --socket "$WORK/a/st.sock" | grep -E "^(scheme|requests|steering|background|latency| )" || true
kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; PIDS=()
fi

if [[ "$PARTS" == *B* ]]; then
echo
echo "== B. fusionraid (io_uring file: members) vs fio io_uring O_DIRECT on the same files"
mkdir -p "$WORK/b"
MEMBERS=""
FILES=""
for i in 0 1 2 3 4 5 6; do
  MEMBERS="$MEMBERS\"file:d$i.img\", "
  FILES="$FILES$WORK/b/d$i.img:"
done
cat > "$WORK/b/pool.toml" <<EOF
name = "bench-files"
members = [${MEMBERS%, }]
member_size = "2G"
[[volume]]
name = "vol"
level = "${LEVEL:-raid5}"
width = ${WIDTH:-5}
size = "$VOL"
EOF
"$BIN" create "$WORK/b/pool.toml" >/dev/null
"$BIN" serve "$WORK/b/pool.toml" --unix "$WORK/b/fr.sock" --status "$WORK/b/st.sock" >/dev/null 2>"$WORK/b/serve.err" &
PIDS+=($!)
wait_sock "$WORK/b/fr.sock"
FR="nbd+unix:///vol?socket=$WORK/b/fr.sock"
fill "$FR"
direct() { # rw bs dir: fio straight on the member files, 1 MiB past the superblock area
  fio --name="direct-$1" --ioengine=io_uring --direct=1 --filename="${FILES%:}" \
      --offset=1M --size=1G --rw="$1" --bs="$2" --iodepth=16 --time_based \
      --runtime="$RUNTIME" --output-format=json 2>/dev/null \
    | jq -r --arg d "$3" '.jobs[0][$d] | "\(.iops) \(.clat_ns.percentile["50.000000"] / 1000)"'
}
declare -A FRB
for j in "randread 4k read" "randwrite 4k write"; do
  set -- $j
  FRB[$1]="$(fio_nbd "$FR" "fr-$1" "$1" "$2" "$3" | cut -d' ' -f1,2)"
done
"$BIN" status --socket "$WORK/b/st.sock" | grep -E "^(requests|steering|background|latency| )" || true
# The server must be gone before fio writes to its member files directly.
kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; PIDS=()
printf "%-12s %12s %12s %8s %12s %12s\n" job fr_iops direct_iops ratio fr_p50_us direct_p50_us
for j in "randread 4k read" "randwrite 4k write"; do
  set -- $j
  read -r fi fl <<<"${FRB[$1]}"
  read -r di dl < <(direct "$1" "$2" "$3")
  awk -v j="$1/$2" -v fi="$fi" -v di="$di" -v fl="$fl" -v dl="$dl" 'BEGIN {
    printf "%-12s %12.0f %12.0f %8.2f %12.1f %12.1f\n", j, fi, di, fi/di, fl, dl }'
done
fi
echo
echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r); fio $(fio --version), $(nbdkit --version | head -1)"
