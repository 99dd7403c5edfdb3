#!/bin/bash
# `framescope run --pm` on the H100: the sampler starts with the app, the app's frames carry
# the pm_* counters, and no sampler is left once the app has exited. Carry `.devpm` as for
# h100-pm-live.sh; run as root:  bash tests/device/h100-pm-run.sh
set -u
for f in .devpm/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/cupti && tar -C /tmp/cupti -xJf .devpm/cupti.tar.xz
export FRAMESCOPE_CUPTI_DIR=/tmp/cupti XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
rm -f /tmp/pm-run.jsonl
.devpm/framescope run --pm --dump /tmp/pm-run.jsonl -- \
  .devpm/framescope-testapp --headless --frame-boundary --frames 4000 --draws 10000 --width 1920 --height 1080 > /tmp/app.log 2>&1
echo "app rc=$?"; grep -i "sampler" /tmp/app.log
sleep 1
echo "samplers left: $(pgrep -fc 'framescope gpu-sampler')"
ls $XDG_RUNTIME_DIR/framescope/ 2>/dev/null | grep -c '^pm-' | sed 's/^/rings left: /'
python3 - /tmp/pm-run.jsonl <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
fr = [l for l in lines if l.get("type") == "frame"]
t0 = fr[0]["t_ns"]
late = [f for f in fr if f["t_ns"] - t0 > 1.5e9]
for n in ("pm_graphics_active_pct", "gpm_graphics_util_pct"):
    v = [f["counters"][n] for f in late if f.get("counters", {}).get(n) is not None]
    print(f"{n:24s} {len(v)}/{len(late)} frames after 1.5 s, mean {sum(v)/max(len(v),1):.2f}")
print("unavailable:", [u for u in lines[0].get("unavailable", []) if u["source"] == "pm"])
PY
exit 0
