#!/bin/bash
# The frame timeline on the NVIDIA H100/H200 (device tool), results into $OUT: what the NVIDIA
# Vulkan driver offers for display times and hitch attribution (vulkaninfo), the CPU and GPU
# timeline fields of the headless test app (frame boundaries: no swapchain there) with a
# pipeline created every 20 frames, and glxgears through NVIDIA's GLX on Xvfb: its CPU side,
# its `glFinish`-free waits, and which display-time source framescope finds for it.
# Carry `.device` and `.devbin` (stripped release builds: framescope, framescope-testapp,
# libframescope_vk.so, libframescope_gl.so; see tests/device/h100-costs.sh for making them),
# then run:  source .device/setup.sh; bash tests/device/h100-timeline.sh
set -u
B=$PWD/.devbin
R=$OUT/timeline.txt
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
note() { echo "$*" | tee -a $R; }
date -u | tee -a $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $R

# 1. Extensions of the display-time sources and of hitch attribution, as the driver lists them.
vulkaninfo > /tmp/vi.txt 2>&1
for e in VK_KHR_present_id VK_KHR_present_id2 VK_KHR_present_wait VK_KHR_present_wait2 \
         VK_EXT_present_timing VK_GOOGLE_display_timing VK_EXT_pipeline_creation_feedback \
         VK_KHR_calibrated_timestamps VK_EXT_calibrated_timestamps VK_KHR_swapchain; do
  note "vulkaninfo $e: $(grep -c "^\s*$e\b" /tmp/vi.txt) line(s)"
done
grep -m1 "apiVersion" /tmp/vi.txt | tee -a $R

# 2. The headless test app: CPU start, busy/wait, GPU latency/wait, pipeline creation
#    feedback, stutters, with and without the validation layer.
for val in 0 1; do
  d=/tmp/tl-$val.jsonl; rm -f $d
  env $([ $val = 1 ] && echo VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation) \
    timeout 300 $B/framescope run --dump $d -- \
    $B/framescope-testapp --headless --frame-boundary --scene regions --frames 200 \
    --width 1920 --height 1080 --pipeline-every 20 > /tmp/tl-$val.txt 2>&1
  note "testapp validation=$val rc=$? validation_msgs=$(grep -cE 'Validation (Error|Warning)|VUID-' /tmp/tl-$val.txt)"
  python3 - $d <<'PY' | tee -a $R
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]) if '"type":"frame"' in l]
sm = [json.loads(l) for l in open(sys.argv[1]) if '"type":"summary"' in l]
def med(k, fs=fr):
    v = sorted(f[k] for f in fs if isinstance(f.get(k), (int, float)))
    return (v[len(v)//2], len(v)) if v else (None, 0)
print(f"  frames {len(fr)}; display {sorted(set(f.get('display') for f in fr))} "
      f"reason {sorted(set(str(f.get('display_none_reason')) for f in fr))}")
for k in ["cpu_busy_ns", "cpu_wait_ns", "gpu_latency_ns", "gpu_wait_ns", "gpu_busy_ns"]:
    m, n = med(k)
    print(f"  {k}: median {m} over {n} frames")
pf = [f for f in fr if f.get("creation_by_kind", {}).get("pipeline", {}).get("calls")]
print(f"  frames creating pipelines: {[f['frame'] for f in pf][:12]}")
for f in pf[:3]:
    c = f["creation_by_kind"]["pipeline"]
    print(f"    frame {f['frame']}: calls {c.get('calls')} ns {c.get('ns')} feedback {c.get('pipeline_feedback')} "
          f"driver_ns {c.get('pipeline_driver_ns')} cache_hits {c.get('pipeline_cache_hits')} stutter {f.get('stutter')}")
if sm:
    t = sm[-1].get("timeline", {})
    print(f"  summary timeline: stutters {t.get('stutters')} explained {t.get('stutters_explained')} causes {t.get('stutter_causes')}")
PY
done

# 3. glxgears through NVIDIA's GLX on Xvfb: the display-time source framescope finds (X11
#    Present, if NVIDIA's GLX presents through it on Xvfb), the CPU side of its frames.
d=/tmp/gears.jsonl; rm -f $d
timeout 60 $B/framescope run --dump $d -- timeout -s INT 5 $GLXGEARS > /tmp/gears.txt 2>&1
note "glxgears: rc=$? $(grep -m2 -i 'present\|display' /tmp/gears.txt | tr '\n' ' ')"
python3 - $d <<'PY' | tee -a $R
import json, sys
fr = [json.loads(l) for l in open(sys.argv[1]) if '"type":"frame"' in l]
from collections import Counter
print(f"  frames {len(fr)}; display {Counter(f.get('display') for f in fr)}; "
      f"source {Counter(f.get('display_source') for f in fr)}; reason {Counter(f.get('display_none_reason') for f in fr)}")
for k in ["cpu_busy_ns", "present_call_ns", "display_latency_ns", "displayed_time_ns"]:
    v = sorted(f[k] for f in fr if isinstance(f.get(k), int))
    print(f"  {k}: median {v[len(v)//2] if v else None} over {len(v)} frames")
PY
cp /tmp/tl-0.jsonl $OUT/ 2>/dev/null; cp /tmp/gears.txt $OUT/ 2>/dev/null
