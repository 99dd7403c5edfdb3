#!/bin/bash
# PM counters live in an app's dump on the H100: `framescope gpu-sampler` beside the headless
# test app under framescope (10 000 draws a frame, then idle), and the frames' `pm_*` counters
# against GPM's graphics activity over the same frames. Carry `.devpm` as for
# h100-pm-probe.sh, plus `framescope` and `libframescope_vk.so` (stripped release builds); run
# as root:  bash tests/device/h100-pm-live.sh
set -u
for f in .devpm/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/cupti && tar -C /tmp/cupti -xJf .devpm/cupti.tar.xz
export FRAMESCOPE_CUPTI_DIR=/tmp/cupti XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
.devpm/framescope gpu-sampler --device 0 &
sampler=$!
sleep 3
for mode in load idle; do
  extra="--draws 10000 --width 1920 --height 1080"
  [ $mode = idle ] && extra="--draws 1 --sleep-ms 5"
  rm -f /tmp/pm-$mode.jsonl
  .devpm/framescope run --dump /tmp/pm-$mode.jsonl --config hud_counters=pm -- \
    .devpm/framescope-testapp --headless --frame-boundary --frames 3000 $extra > /tmp/app-$mode.log 2>&1
  echo "== $mode: rc=$? $(grep -c '"type":"frame"' /tmp/pm-$mode.jsonl) frames"
  python3 - /tmp/pm-$mode.jsonl <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
h = lines[0]
print("catalogue pm:", [c["name"] for c in h.get("counters", []) if c["name"].startswith("pm_")])
print("unavailable:", [u for u in h.get("unavailable", []) if u["source"] in ("pm", "gpm")])
fr = [l for l in lines if l.get("type") == "frame"]
t0 = fr[0]["t_ns"]
late = [f for f in fr if f["t_ns"] - t0 > 1e9]
def vals(name):
    return [f["counters"][name] for f in late if f.get("counters", {}).get(name) is not None]
for n in ("pm_graphics_active_pct", "pm_sm_active_pct", "pm_ps_warps_pct", "pm_dram_bw_pct", "gpm_graphics_util_pct"):
    v = vals(n)
    share = len(v) / max(len(late), 1)
    print(f"{n:26s} frames after 1 s with a value {len(v)}/{len(late)} ({share:.1%}), mean {sum(v)/max(len(v),1):.3f}")
PY
done
kill -TERM $sampler; wait $sampler; echo "sampler rc=$?"
ls -la $XDG_RUNTIME_DIR/framescope 2>/dev/null
exit 0
