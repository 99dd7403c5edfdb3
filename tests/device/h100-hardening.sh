#!/bin/bash
# Hardening checks on the NVIDIA H100 (device tool), results into $OUT. Carry `.device`
# (../shared/device/prepare.sh, plus the vulkan-validationlayers .deb in .device/gl) and
# `.devbin` (release builds: framescope, libframescope_vk.so, libframescope_gl.so,
# framescope-testapp, gdpa_probe), then run:  source .device/setup.sh; bash tests/device/h100-hardening.sh
set -u
B=$PWD/.devbin
R=$OUT/results.txt
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/driver.txt 2>&1
note() { echo "$*" | tee -a $R; }
vmsgs() { grep -cE "Validation (Error|Warning)|VUID-|UNASSIGNED-" "$1"; }
frames() { grep -c '"type":"frame"' "$1" 2>/dev/null; }
summ() { grep -c '"type":"summary"' "$1" 2>/dev/null; }

# 1. vulkaninfo calls vkGetPhysicalDeviceFeatures2KHR: framescope directly on the driver.
timeout 120 $B/framescope run -- vulkaninfo --summary > $OUT/vulkaninfo.txt 2>&1
note "vulkaninfo --summary, no validation: rc=$? deviceName: $(grep -m1 deviceName $OUT/vulkaninfo.txt)"

# 2. Headless test app through run's implicit manifest, with and without validation.
for val in 0 1; do
  for extra in "" "--push-first" "--burst 150"; do
    d=/tmp/d-$val-${extra// /_}.jsonl; rm -f $d
    env $([ $val = 1 ] && echo VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation) \
      FRAMESCOPE_REPORT_ALLOCS=60 timeout 300 $B/framescope run --dump $d --config samples=draw,log=debug -- \
      $B/framescope-testapp --headless --frame-boundary --scene regions --frames 200 \
      --width 1920 --height 1080 $extra > /tmp/out.txt 2>&1
    rc=$?
    note "testapp validation=$val ${extra:-plain}: rc=$rc validation_msgs=$(vmsgs /tmp/out.txt) frames=$(frames $d) summary=$(summ $d) $(grep -m1 -o 'allocations[^"]*' /tmp/out.txt) layers_above=$(grep -o '"layers_above":\[[^]]*\]' $d | head -1) $(grep -m1 -o 'lavapipe[^"]*' /tmp/out.txt)"
  done
done

# 3. A GL app on the NVIDIA GL driver: legacy draws counted, GPU time named a span, HUD, dump.
d=/tmp/gears.jsonl; rm -f $d
timeout -s INT 6 $B/framescope run --dump $d --config screenshot=100,screenshot_path=$OUT/gears-%N.png -- $GLXGEARS > /tmp/gears.txt 2>&1
note "glxgears (GL on NVIDIA): rc=$? frames=$(frames $d) gpu_time=$(grep -o '"gpu_time":"[a-z]*"' $d | head -1) draws_in_frame_50=$(sed -n 52p $d | grep -o '"draws":[0-9]*') call_list=$(sed -n 52p $d | grep -o '"draw_call_list":[0-9]*')"

# 4. MangoHud (carried) with a GL app: framescope's HUD moves clear of it only on Vulkan;
#    here only check both run together.
d=/tmp/gears-mh.jsonl; rm -f $d
MANGOHUD=1 LD_PRELOAD=$MANGOHUD_GL_PRELOAD timeout -s INT 5 $B/framescope run --dump $d -- $GLXGEARS > /tmp/gmh.txt 2>&1
note "glxgears + MangoHud GL: rc=$? frames=$(frames $d)"
cp /tmp/out.txt $OUT/last-testapp.txt
