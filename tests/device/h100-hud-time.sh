#!/bin/bash
# The HUD's time on the app's thread (target: ≤ 5 µs a frame) on NVIDIA's GL driver through GLX
# on the carried Xvfb: the GL test app under the GL shim (LD_PRELOAD, as `framescope run` sets
# it), which times its own HUD path and logs it at exit (FRAMESCOPE_REPORT_HUD_TIME, core's
# hud_time). The GPU machine has no Vulkan swapchain, so the Vulkan HUD is not measured here.
# Carry `.device` (../shared/device/prepare.sh) and `.devbin` (stripped release builds:
# libframescope_gl.so, framescope-glapp), then run:
#   source .device/setup.sh; bash tests/device/h100-hud-time.sh
set -u
B=$PWD/.devbin
R=$OUT/results.txt
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
echo "date: $(date -u +%FT%TZ) gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee $R
# The opaque HUD (the default: one blit), the translucent one (a textured quad), and no HUD
# (the timer's own floor).
for cfg in hud=1 hud=1,hud_alpha=0.6 hud=0; do
  for run in 1 2 3; do
    LD_PRELOAD=$B/libframescope_gl.so FRAMESCOPE_CONFIG=$cfg FRAMESCOPE_REPORT_HUD_TIME=300 \
      timeout 120 $B/framescope-glapp --frames 3000 --width 1280 --height 720 > /tmp/o.txt 2>&1
    rc=$?
    echo "$cfg run $run: rc=$rc $(grep -m1 -o 'HUD time on.*' /tmp/o.txt) parts: $(grep -m1 -o 'by part.*' /tmp/o.txt) renderer=$(grep -m1 -o '"renderer":"[^"]*"' /tmp/o.txt)" | tee -a $R
  done
done
