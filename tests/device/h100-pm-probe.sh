#!/bin/bash
# CUPTI PM sampling through framescope's own binding (collectors::nvidia::pm) on the H100: the
# chip, the `graphics` set validated in one pass, samples and gaps at 1 kHz, and the metrics'
# means on an idle GPU and while the headless test app renders 10 000 draws a frame.
# Carry `.devpm` made on your machine:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#     --platform manylinux_2_17_x86_64 nvidia-cuda-cupti-cu12==12.8.90 -d /tmp/cupti
#   mkdir -p .devpm/gl && cp .device/gl/*.deb .devpm/gl/   (../shared/device/prepare.sh)
#   (cd /tmp/cupti && unzip -o *.whl 'nvidia/cuda_cupti/lib/*' && tar -C nvidia/cuda_cupti/lib -cJf - .) > .devpm/cupti.tar.xz
#   cargo build --release -p framescope-collectors --example pm_probe -p framescope-testapp
#   cp target/release/examples/pm_probe target/release/framescope-testapp .devpm/ && strip .devpm/pm_probe .devpm/framescope-testapp
# then run:  bash tests/device/h100-pm-probe.sh   (as root: PM sampling is admin-only by default)
set -u
for f in .devpm/gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/cupti && tar -C /tmp/cupti -xJf .devpm/cupti.tar.xz
export FRAMESCOPE_CUPTI_DIR=/tmp/cupti
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== idle"
.devpm/pm_probe 2 graphics
echo "== under load: framescope-testapp --headless --draws 10000"
.devpm/framescope-testapp --headless --frames 40000 --draws 10000 --width 1920 --height 1080 > /tmp/app.log 2>&1 &
app=$!
sleep 2
.devpm/pm_probe 3 graphics
kill $app 2>/dev/null; wait $app 2>/dev/null
tail -2 /tmp/app.log
echo "== a set of two passes"
.devpm/pm_probe 1 "gr__cycles_active.avg,sm__warps_active_shader_vs_realtime.avg.pct_of_peak_sustained_elapsed,sm__warps_active_shader_ps_realtime.avg.pct_of_peak_sustained_elapsed,sm__warps_active_shader_cs_realtime.avg.pct_of_peak_sustained_elapsed,sm__warps_active_shader_gs_realtime.avg.pct_of_peak_sustained_elapsed,sm__warps_active_shader_tcs_realtime.avg.pct_of_peak_sustained_elapsed,sm__warps_active_shader_tes_realtime.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed"
exit 0
