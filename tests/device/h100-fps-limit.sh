#!/bin/bash
# fps_limit on the H100: glxgears through GLX (NVIDIA's GL, Xvfb), limited to 60 and 144 fps,
# 6 s each; mean rate and frame-time percentiles from the dump after the first second. Carry
# `.device` (../shared/device/prepare.sh) and `.devfs/framescope.tar.xz` (cargo xtask package).
# Run as root from the project's root:  bash tests/device/h100-fps-limit.sh
set -u
OUT=${OUT:-/tmp/fps-out}; mkdir -p "$OUT"
exec > >(tee "$OUT/h100-fps-limit.txt") 2>&1
source .device/setup.sh
P=/tmp/fspkg; mkdir -p $P
tar -C $P -xJf .devfs/framescope.tar.xz
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
FS=$P/usr/bin/framescope
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for limit in 60 144; do
  timeout 60 $FS run --dump /tmp/fps-$limit.jsonl --config fps_limit=$limit -- timeout -s INT 7 $GLXGEARS -geometry 1000x700 > /tmp/fps-$limit.log 2>&1
  python3 - /tmp/fps-$limit.jsonl $limit <<'PY'
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]) if '"type":"frame"' in l]
t0 = fr[0]["t_ns"]
ft = [f["cpu_frame_ns"] / 1e6 for f in fr if f["t_ns"] - t0 > 1e9 and f.get("cpu_frame_ns")]
ft.sort(); n = len(ft); period = 1000 / float(sys.argv[2])
mean = sum(ft) / n
p = lambda q: ft[min(n - 1, int(q * n))]
print(f"fps_limit={sys.argv[2]}: {n} frames after 1 s, mean {1000/mean:.2f} fps, period {period:.3f} ms, "
      f"p50 {p(0.5):.3f} ms, p99 {p(0.99):.3f} ms (p99 - period {p(0.99)-period:+.3f} ms), max {ft[-1]:.3f} ms")
PY
done
