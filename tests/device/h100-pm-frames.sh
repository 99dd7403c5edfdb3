#!/bin/bash
# PM counters per frame and per pass on the H100, and what the sampler costs. Carry `.device`
# (../shared/device/prepare.sh: Xvfb and GLX for glxgears) and `.devfs`:
#   .devfs/bin.tar.xz    stripped release framescope, libframescope_vk.so, libframescope_gl.so,
#                        framescope-testapp (cargo build --release; strip; tar -cJf)
#   .devfs/cupti.tar.xz  libcupti.so.12 and the nvperf libraries of the nvidia-cuda-cupti-cu12
#                        12.8.90 wheel (pip download; unzip; nvidia/cuda_cupti/lib)
# Run as root from the project's root:  bash tests/device/h100-pm-frames.sh
# Writes its report and the HUD screenshot to $OUT (or /tmp/pm-out). STEPS="1 3" runs only
# those steps (default: all).
set -u
OUT=${OUT:-/tmp/pm-out}; mkdir -p "$OUT"
exec > >(tee "$OUT/h100-pm-frames.txt") 2>&1
source .device/setup.sh
B=/tmp/fsb; mkdir -p $B/cupti
tar -C $B -xJf .devfs/bin.tar.xz; tar -C $B/cupti -xJf .devfs/cupti.tar.xz
export FRAMESCOPE_CUPTI_DIR=$B/cupti XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
A=tests/device/h100_pm_frames.py
FS=$B/framescope
APP="$B/framescope-testapp --headless --frame-boundary --width 1920 --height 1080"
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

STEPS=${STEPS:-"1 1b 2 3 4 5 6 7 8"}
want() { [[ " $STEPS " == *" $1 "* ]]; }
step() { echo; echo "== $*"; }

if want 1; then
step "1. load: the test app, 10 000 draws a frame, with framescope run --pm"
timeout 120 $FS run --pm --dump /tmp/load.jsonl -- $APP --frames 20000 --draws 10000 > /tmp/load.log 2>&1
echo "rc=$?"; grep -i sampler /tmp/load.log | head -3
python3 $A load /tmp/load.jsonl
fi

if want 1b; then
step "1b. load with frames that tile the GPU's time: the passes scene with 40 draws a pass (GPU-bound, frames of several ms)"
timeout 120 $FS run --pm --dump /tmp/tiled.jsonl -- $APP --frames 1000 --scene passes --draws 40 > /tmp/tiled.log 2>&1
echo "rc=$?"; python3 $A load /tmp/tiled.jsonl
fi

if want 2; then
step "2. idle: the test app, 1 draw and 20 ms of sleep a frame"
timeout 60 $FS run --pm --dump /tmp/idle.jsonl -- $APP --frames 150 --draws 1 --sleep-ms 20 > /tmp/idle.log 2>&1
echo "rc=$?"; python3 $A idle /tmp/idle.jsonl
fi

if want 3; then
step "3. passes: a pixel-heavy pass (2000 full-screen triangles) and a vertex-only one (2000 x 30 000 vertices)"
timeout 120 $FS run --pm --dump /tmp/passes.jsonl --config samples=label -- $APP --frames 120 --scene passes --draws 2000 > /tmp/passes.log 2>&1
echo "rc=$?"; python3 $A passes /tmp/passes.jsonl
fi

if want 4; then
step "4. glxgears through GLX on Xvfb"
timeout 60 $FS run --pm --dump /tmp/gears.jsonl -- timeout -s INT 6 $GLXGEARS -geometry 1000x700 > /tmp/gears.log 2>&1
echo "rc=$?"; python3 $A gl /tmp/gears.jsonl
fi

if want 5; then
step "5. HUD with the pm rows in glxgears (screenshot of frame 3000)"
timeout 60 $FS run --pm --config "hud_counters=pm:basic,screenshot=3000,screenshot_path=$OUT/pm-hud.png" -- timeout -s INT 6 $GLXGEARS -geometry 1000x700 > /tmp/hud.log 2>&1
echo "rc=$?"; ls -la $OUT/*.png 2>&1
fi

if want 6; then
step "6. the app's fps without and with a sampler (framescope run with and without --pm, alternating)"
for i in 1 2 3; do
  for pm in off on; do
    flag=""; [ $pm = on ] && flag="--pm"
    timeout 120 $FS run $flag --dump /tmp/fps-$pm-$i.jsonl -- $APP --frames 10000 --draws 10000 > /dev/null 2>&1
  done
done
echo "sampler off:"; python3 $A fps /tmp/fps-off-*.jsonl
echo "sampler on:"; python3 $A fps /tmp/fps-on-*.jsonl
fi

if want 7; then
step "7. glxgears fps without and with a sampler (bare glxgears, alternating)"
for i in 1 2; do
  for pm in off on; do
    sp=""
    if [ $pm = on ]; then $FS gpu-sampler > /tmp/sampler-g.log 2>&1 & sp=$!; sleep 3; fi
    timeout -s INT 11 $GLXGEARS 2>/dev/null | tail -1 | sed "s/^/$pm: /"
    [ -n "$sp" ] && { kill -TERM $sp; wait $sp; }
  done
done
fi

if want 8; then
step "8. the sampler's own cost beside the loaded test app (about 10 s each)"
for cfg in "1000 20" "1000 100" "100 20" "100 100"; do
  set -- $cfg
  $FS gpu-sampler --interval-us $1 --decode-ms $2 > /tmp/sampler-$1-$2.log 2>&1 &
  sp=$!; sleep 3
  t0=$(date +%s.%N); c0=$(awk '{print $14+$15}' /proc/$sp/stat)
  timeout 120 $FS run --dump /tmp/cost-$1-$2.jsonl -- $APP --frames 25000 --draws 10000 > /dev/null 2>&1
  t1=$(date +%s.%N); c1=$(awk '{print $14+$15}' /proc/$sp/stat)
  tck=$(getconf CLK_TCK)
  rss=$(awk '/VmRSS/ {print $2, $3}' /proc/$sp/status)
  gpu=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | grep "^$sp," | cut -d, -f2)
  echo "interval $1 us, decode every $2 ms: sampler CPU $(python3 -c "print(f'{($c1-$c0)/$tck/($t1-$t0)*100:.2f} % of one core over {$t1-$t0:.1f} s')"), RSS $rss, GPU memory${gpu:- (not listed)}"
  python3 $A load /tmp/cost-$1-$2.jsonl
  kill -TERM $sp; wait $sp; echo "sampler rc=$?"; tail -1 /tmp/sampler-$1-$2.log
done
fi

step "left behind"
echo "samplers: $(pgrep -fc 'framescope gpu-sampler')"; ls $XDG_RUNTIME_DIR/framescope 2>/dev/null
kill $XVFB_PID 2>/dev/null
exit 0
