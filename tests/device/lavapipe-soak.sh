#!/bin/bash
# vkcube on lavapipe on the GPU machine's 16 cores, under framescope (samples=draw,hud=1, a
# dump, as the heap-corruption report) and bare, side by side for SOAK_S seconds. Many cores
# and several apps at once give lavapipe's queue and rasterizer threads far more interleavings
# than the 2-core CI machine, where 2.0 million frames never crashed. Carry `.device`
# (../shared/device/prepare.sh; to fit 64 MiB, MangoHud's three .debs moved out) with lavapipe
# from Debian 12's mesa-vulkan-drivers 22.3.6, the version of the report:
#   apt-get download mesa-vulkan-drivers && dpkg -x mesa-vulkan-drivers_*.deb x &&
#   mkdir -p .device/lvp && xz -9 -c x/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so > .device/lvp/libvulkan_lvp.so.xz
# and `.devbin` (stripped release framescope and libframescope_vk.so), then run:
#   source .device/setup.sh; [MALLOC_CHECKS=1] [FS_SLOTS=N BARE_SLOTS=M] bash tests/device/lavapipe-soak.sh
set -u
B=$PWD/.devbin
S=${SOAK_S:-480}
FS_SLOTS=${FS_SLOTS:-4}
BARE_SLOTS=${BARE_SLOTS:-2}
R=$OUT/results.txt
export XDG_RUNTIME_DIR=/tmp/fs-rt HOME=/tmp/fs-home
mkdir -p -m700 $XDG_RUNTIME_DIR; mkdir -p $HOME
L=/tmp/lvp; mkdir -p $L
xz -dc .device/lvp/libvulkan_lvp.so.xz > $L/libvulkan_lvp.so
printf '{"file_format_version":"1.0.0","ICD":{"library_path":"%s","api_version":"1.1.230"}}\n' \
  $L/libvulkan_lvp.so > $L/lvp_icd.json
export VK_DRIVER_FILES=$L/lvp_icd.json
note() { echo "$*" | tee -a $R; }
note "date: $(date -u +%FT%TZ) cores: $(nproc) glibc: $(ldd --version | head -1)"
note "driver: $(vulkaninfo --summary 2>&1 | grep -m1 -E 'driverInfo' | tr -s ' ')"
note "gdb: $(command -v gdb || echo none) core_pattern: $(cat /proc/sys/kernel/core_pattern)"
# MALLOC_CHECKS=1: glibc's malloc checks in every app (chunk headers checked on each call, freed
# memory overwritten), so a write into freed memory is caught sooner and more often.
if [ "${MALLOC_CHECKS:-0}" = 1 ]; then
  export LD_PRELOAD=$(ls /lib/x86_64-linux-gnu/libc_malloc_debug.so.0 /usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0 2>/dev/null | head -1)
  export GLIBC_TUNABLES=glibc.malloc.check=3:glibc.malloc.perturb=165
  note "malloc checks: LD_PRELOAD=$LD_PRELOAD GLIBC_TUNABLES=$GLIBC_TUNABLES"
fi

# One slot: the same app again and again until the deadline; every run's exit status noted.
# Under framescope a run is one long vkcube (frames counted from its dump); bare, vkcube
# runs 50 000 frames at a time (counted by completed runs: a lower bound).
slot() {
  local name=$1 mode=$2 end=$((SECONDS + S)) n=0 rc left
  while [ $((left = end - SECONDS)) -gt 5 ]; do
    n=$((n + 1))
    local log=/tmp/$name-$n.log d=/tmp/$name-$n.jsonl
    if [ "$mode" = fs ]; then
      timeout -s INT $left $B/framescope run --dump $d --config samples=draw,hud=1 -- \
        vkcube --c 100000000 > $log 2>&1
      rc=$?
      echo "$name run=$n rc=$rc frames=$(grep -c '"type":"frame"' $d 2>/dev/null)" >> /tmp/$name.runs
      rm -f $d
    else
      timeout -s INT $left vkcube --c 50000 > $log 2>&1
      rc=$?
      echo "$name run=$n rc=$rc frames=$([ $rc = 0 ] && echo 50000 || echo partial)" >> /tmp/$name.runs
    fi
    case $rc in 0|124|130) ;; *) cp $log $OUT/crash-$name-$n.log ;; esac
  done
}
for i in $(seq 1 $FS_SLOTS); do slot fs$i fs & done
for i in $(seq 1 $BARE_SLOTS); do slot bare$i bare & done
sleep 30; note "load after 30 s: $(cut -d' ' -f1-3 /proc/loadavg)"
wait
cat /tmp/*.runs | tee -a $R
note "framescope frames: $(cat /tmp/fs*.runs | grep -o 'frames=[0-9]*' | cut -d= -f2 | awk "{s+=\$1} END {print s+0}")"
note "bare frames (completed runs): $(cat /tmp/bare*.runs | grep -c 'rc=0') x 50000"
note "abnormal exits: $(cat /tmp/*.runs | grep -vcE 'rc=(0|124|130) ')"
