#!/usr/bin/env bash
# Runs every test of the workspace. Installs the system tools the interop tests drive
# (fio, qemu-utils, libnbd-bin, nbdkit; xz-utils for a fixture; prometheus for promtool, tmux for
# `fusionraid top`) when they are missing, then runs the suite with
# those tools required, so a missing tool fails loudly instead of skipping.
# FUSIONRAID_ROCKSDB=1 (root) adds a short RocksDB-on-the-array run (rocksdb-tools, jq).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v fio >/dev/null || need+=(fio)
command -v qemu-img >/dev/null || need+=(qemu-utils)
command -v nbdinfo >/dev/null || need+=(libnbd-bin)
command -v nbdkit >/dev/null || need+=(nbdkit)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v xz >/dev/null || need+=(xz-utils)
command -v fusermount3 >/dev/null || command -v fusermount >/dev/null || need+=(fuse3)
command -v promtool >/dev/null || need+=(prometheus)
command -v tmux >/dev/null || need+=(tmux)
# On demand only (FUSIONRAID_ROCKSDB=1, root): a short RocksDB run on the array at the end.
if [ "${FUSIONRAID_ROCKSDB:-0}" = 1 ]; then
  command -v db_bench >/dev/null || need+=(rocksdb-tools)
  command -v jq >/dev/null || need+=(jq)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

export FUSIONRAID_REQUIRE_TOOLS=1
# Thousands of model-test seeds (each a full random scenario with faults).
export FUSIONRAID_SEEDS="${FUSIONRAID_SEEDS:-2000}"
export FUSIONRAID_CRASH_SEEDS="${FUSIONRAID_CRASH_SEEDS:-1000}"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# Modules depend in one direction (ARCHITECTURE.md, "Module direction").
for dir in core/src core/src/scheme/fusion core/src/scheme/baselines core/src/meta; do
    scripts/module-cycles.sh "$dir" > /dev/null
done
cargo test --workspace "$@"
# RocksDB on ext4 on the array (docs/BENCHMARKS.md): about 3 minutes of real-time emulation,
# so never in the default run; it fails if db_bench reports no read or write latencies or
# the wrong read share.
if [ "${FUSIONRAID_ROCKSDB:-0}" = 1 ]; then
  REPS=1 DUR=10 NUM=200000 scripts/rocksdb-bench.sh
fi
