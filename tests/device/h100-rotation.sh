#!/bin/bash
# Rotation on the H100: per-pass pipeline statistics taken on one frame in 32 (the default)
# against every frame on the known-answer regions scene, and driver counters
# (VK_KHR_performance_query) through the test double on NVIDIA's driver (which has no such
# counters of its own). Carry `.device` (../shared/device/prepare.sh) and `.devfs/bin.tar.xz`
# (stripped release framescope, libframescope_vk.so, framescope-testapp and
# libframescope_perf_double.so: cargo build --release; strip; tar -cJf).
# Run as root from the project's root:  bash tests/device/h100-rotation.sh
# Writes its report to $OUT (or /tmp/rot-out).
set -u
OUT=${OUT:-/tmp/rot-out}; mkdir -p "$OUT"
exec > >(tee "$OUT/h100-rotation.txt") 2>&1
source .device/setup.sh
B=/tmp/fsb; mkdir -p $B
tar -C $B -xJf .devfs/bin.tar.xz
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
A=tests/device/h100_rotation.py
FS=$B/framescope
APP="$B/framescope-testapp --headless --frame-boundary --width 1920 --height 1080 --scene regions"
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

echo; echo "== 1. per-pass statistics: one frame in 32 against every frame (samples=label names the passes)"
for every in 32 1; do
  timeout 120 $FS run --dump /tmp/stats-$every.jsonl --config samples=label,sample_stats_every=$every -- $APP --frames 640 > /tmp/stats-$every.log 2>&1
  echo "sample_stats_every=$every rc=$?"
done
python3 $A stats /tmp/stats-32.jsonl /tmp/stats-1.jsonl

echo; echo "== 2. driver counters through the test double on NVIDIA's driver (validation layer below framescope when installed)"
mkdir -p /tmp/dbl
cat > /tmp/dbl/perf_double.json <<JSON
{"file_format_version": "1.2.0", "layer": {"name": "VK_LAYER_FRAMESCOPE_perf_double", "type": "GLOBAL",
 "library_path": "$B/libframescope_perf_double.so", "api_version": "1.3.0", "implementation_version": "1",
 "description": "framescope test double"}}
JSON
VK_LAYER_PATH=/tmp/dbl VK_INSTANCE_LAYERS=VK_LAYER_FRAMESCOPE_perf_double \
  timeout 120 $FS run --dump /tmp/dbl.jsonl --config samples=label,driver_counters=1 -- $APP --frames 200 > /tmp/dbl.log 2>&1
echo "rc=$?"; grep -i "framescope:" /tmp/dbl.log | head -5
python3 $A driver /tmp/dbl.jsonl
