#!/bin/bash
# Counters on the NVIDIA H100 (device tool), results into $OUT. Carry `.device`
# (../shared/device/prepare.sh) and `.devbin` (stripped release builds: framescope,
# libframescope_vk.so, libframescope_gl.so, framescope-testapp, and the collectors example
# nvml_probe), then run:  source .device/setup.sh; bash tests/device/h100-counters.sh
set -u
B=$PWD/.devbin
R=$OUT/results.txt
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader > $OUT/driver.txt 2>&1
note() { echo "$*" | tee -a $R; }

# Per dump: the header's sources and unavailable list, how many frames carry each NVIDIA
# counter, and the mean/max of the interesting ones over the frames that carry them.
summarise() {
python3 - "$1" "$2" <<'PY' | tee -a $R
import json, sys
path, tag = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(path) if l.strip()]
h = lines[0]
frames = [l for l in lines if l.get("type") == "frame"]
print(f"[{tag}] frames={len(frames)} sources={h.get('counter_sources')} "
      f"unavailable={[u['source'] for u in h.get('unavailable', [])]}")
for name in ["gpu_util_pct", "gpu_clock_mhz", "gpu_sm_clock_mhz", "gpu_power_w", "gpu_temp_c",
             "vram_used_bytes", "proc_gpu_util_pct", "proc_vram_bytes", "gpu_energy_j",
             "gpm_graphics_util_pct", "gpm_sm_util_pct", "gpm_sm_occupancy_pct",
             "gpm_dram_bw_util_pct", "cpu_load_pct", "proc_rss_bytes"]:
    v = [f["counters"].get(name) for f in frames]
    v = [x for x in v if x is not None]
    if v:
        print(f"  {name:24} frames_with={len(v):5} mean={sum(v)/len(v):14.2f} max={max(v):14.2f}")
    else:
        print(f"  {name:24} frames_with=    0")
w = [f["counter_windows"].get("gpm") for f in frames if f["counter_windows"].get("gpm")]
if w:
    lens = sorted(x["end_ns"] - x["begin_ns"] for x in w)
    print(f"  gpm window ms: min={lens[0]/1e6:.1f} median={lens[len(lens)//2]/1e6:.1f} "
          f"distinct={len(set((x['begin_ns'], x['end_ns']) for x in w))}")
PY
}

# 1. The raw binding: both sources read 10 times, 120 ms apart.
timeout 60 $B/nvml_probe > $OUT/nvml_probe.txt 2>&1
note "nvml_probe rc=$? $(head -c 300 $OUT/nvml_probe.txt | tr '\n' ' ')"

# 2. Load: the headless test app at 10k draws per frame on the NVIDIA Vulkan driver.
d=/tmp/load.jsonl; rm -f $d
timeout 300 $B/framescope run --dump $d --config hud=0 -- \
  $B/framescope-testapp --headless --frame-boundary --draws 10000 --frames 3000 \
  --width 1920 --height 1080 > /tmp/load.txt 2>&1
note "testapp 10k draws: rc=$? $(grep -m1 testapp-result /tmp/load.txt | head -c 200)"
summarise $d "vulkan 10k draws"; cp $d $OUT/load.jsonl 2>/dev/null; gzip -f $OUT/load.jsonl

# 3. Near idle: one draw per frame, 20 ms of sleep after each.
d=/tmp/idle.jsonl; rm -f $d
timeout 300 $B/framescope run --dump $d --config hud=0 -- \
  $B/framescope-testapp --headless --frame-boundary --draws 1 --frames 150 --sleep-ms 20 > /tmp/idle.txt 2>&1
note "testapp idle (1 draw, 20 ms sleep per frame): rc=$?"
summarise $d "vulkan idle"

# 4. glxgears (GL through GLX on Xvfb, unthrottled: ~5000 fps) with the HUD's counter lines
#    in a screenshot taken seconds in, once the HUD has refreshed with counter values.
d=/tmp/gears.jsonl; rm -f $d
timeout -s INT 6 $B/framescope run --dump $d \
  --config "hud_counters=basic:gpm,screenshot=12000,screenshot_path=$OUT/gears-counters-%N.png" \
  -- $GLXGEARS > /tmp/gears.txt 2>&1
note "glxgears: rc=$? (124 = ended by timeout)"
summarise $d "gl glxgears"
d=/tmp/gears-none.jsonl; rm -f $d
timeout -s INT 6 $B/framescope run --dump $d \
  --config "hud_counters=none,screenshot=12000,screenshot_path=$OUT/gears-nocounters-%N.png" \
  -- $GLXGEARS > /tmp/gears2.txt 2>&1
note "glxgears hud_counters=none: rc=$?"
ls -la $OUT >> $R
